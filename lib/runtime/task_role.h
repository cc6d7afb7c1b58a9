/* task_role.h: a daemon started without --job/--task takes its role from
 * the environment, and completes the cluster spec's addresses from it.
 *
 * TF_CONFIG (tf_config.h) set and not empty: its cluster gives every
 * job's addresses, replacing the spec file's jobs (TF_CONFIG wins, with a
 * log note when the file listed addresses; the file still gives the
 * transport, timeouts, limits, ...), and task.type/task.index the role.
 *
 * Else SLURM_PROCID set: one srun launched every task of the spec, rank r
 * taking the r-th task in the order the spec declares its jobs (master
 * first if declared first). SLURM_STEP_NUM_TASKS must equal the spec's
 * task count. Ranks are placed on nodes by Slurm's block distribution:
 * SLURM_STEP_NODELIST (hostlist.h) lists the nodes, SLURM_STEP_TASKS_PER_NODE
 * how many tasks each runs, ranks filling the first node, then the next.
 * Where the spec gives jobs as task counts, task k's address is its
 * node's name and slurm.base_port + k's local id on that node; every
 * process computes the same table. Where it gives addresses, they are
 * kept. SLURM_LOCALID and SLURMD_NODENAME must agree with the block
 * placement (srun -m cyclic or arbitrary is refused, naming the fix).
 *
 * Neither: FAILED_PRECONDITION "no --job/--task and no TF_CONFIG or
 * SLURM_PROCID in the environment". */
#ifndef TF_RUNTIME_TASK_ROLE_H
#define TF_RUNTIME_TASK_ROLE_H

#include "lib/runtime/cluster_spec.h"
#include "tf/status.h"

typedef struct tf_task_role {
  char job[64];
  int task;
  char how[400]; /* one log line: where the role and addresses came from */
} tf_task_role;

/* Decides this process's role from envp (a NULL-terminated array of
 * "NAME=value", e.g. environ) and replaces s's jobs with the addresses it
 * derives (tf_cluster_spec_set_jobs: s has addresses on success). Errors
 * name the variable and value at fault, e.g. "SLURM_STEP_NUM_TASKS=4 but
 * conf/slurm/cluster.yaml declares 3 tasks (master 1, ps 1, worker 1):
 * launch them with srun -n 3"; s is unchanged then. */
tf_code tf_task_role_from_env(tf_cluster_spec *s, char *const *envp,
                              tf_task_role *out, tf_status *st);

#endif
