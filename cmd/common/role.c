/* role.c: tf_daemon_take_role (role.h): derives the role with
 * tf_task_role_from_env over environ and execs tfmaster for the master's
 * rank, so that one srun command line starts a whole cluster. */
#include "cmd/common/role.h"

#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/runtime/log.h"
#include "lib/runtime/task_role.h"

extern char **environ;

/* Runs the tfmaster beside this binary with argv; returns only on error. */
static int exec_master(char **argv, const char *how) {
  char self[PATH_MAX], path[PATH_MAX + 16];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) {
    tf_log(LOG_ERR, "%s: cannot find this program (/proc/self/exe: %s) to "
           "run the tfmaster beside it", how, strerror(errno));
    return TF_EXIT_CONFIG;
  }
  self[n] = '\0';
  snprintf(path, sizeof path, "%s/tfmaster", dirname(self));
  tf_log(LOG_NOTICE, "%s: this task is the master: exec %s", how, path);
  argv[0] = path;
  execv(path, argv);
  tf_log(LOG_ERR, "exec %s: %s", path, strerror(errno));
  return TF_EXIT_CONFIG;
}

int tf_daemon_take_role(tf_cluster_spec *spec, bool master, char **argv,
                        tf_daemon_args *a) {
  static char job[64];
  tf_status st;
  tf_status_init(&st);
  const char *tfc = getenv("TF_CONFIG");
  bool derive = master ? spec->counts || (tfc != NULL && tfc[0] != '\0')
                       : a->job == NULL;
  if (!derive) {
    if (tf_cluster_spec_check_addressed(spec, &st) != TF_OK) {
      tf_log(LOG_ERR, "config: %s", st.msg);
      return TF_EXIT_CONFIG;
    }
    return 0;
  }
  tf_task_role r;
  if (tf_task_role_from_env(spec, environ, &r, &st) != TF_OK) {
    tf_log(LOG_ERR, "role: %s", st.msg);
    return TF_EXIT_CONFIG;
  }
  bool is_master = strcmp(r.job, "master") == 0;
  if (master && !is_master) {
    tf_log(LOG_ERR, "%s; tfmaster serves only the master task: start "
           "tfworker --config FILE for every task", r.how);
    return TF_EXIT_CONFIG;
  }
  if (!master && is_master) {
    return exec_master(argv, r.how);
  }
  tf_log(LOG_NOTICE, "%s", r.how);
  a->role_from_env = true;
  if (!master) {
    snprintf(job, sizeof job, "%s", r.job);
    a->job = job;
    a->task = r.task;
    char name[160];
    snprintf(name, sizeof name, "tfworker /job:%s/task:%d", a->job, a->task);
    tf_log_set_name(name);
  }
  return 0;
}
