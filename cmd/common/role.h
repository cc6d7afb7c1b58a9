/* role.h: a daemon's role from the environment (lib/runtime/task_role.h),
 * for tfworker started without --job/--task and for tfmaster with a spec
 * whose addresses come from Slurm or TF_CONFIG. One srun command starts
 * every task as `tfworker --config FILE`: the process whose derived role
 * is the master execs the tfmaster beside its own binary with the same
 * arguments (logged), and that tfmaster derives the same role again. */
#ifndef TF_CMD_COMMON_ROLE_H
#define TF_CMD_COMMON_ROLE_H

#include <stdbool.h>

#include "cmd/common/daemon.h"

/* Completes spec and a from the environment where needed:
 * - tfworker (master false) without --job/--task: derives the role and
 *   the addresses; a derived master role execs tfmaster (argv kept; on
 *   success this never returns); else sets a->job, a->task and the log
 *   name. With --job/--task, a spec of task counts is refused.
 * - tfmaster (master true): derives when the spec gives task counts or
 *   TF_CONFIG is set; a role other than the master is refused.
 * Returns 0 to go on, or TF_EXIT_CONFIG after logging one line. */
int tf_daemon_take_role(tf_cluster_spec *spec, bool master, char **argv,
                        tf_daemon_args *a);

#endif
