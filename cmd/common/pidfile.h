/* pidfile.h: pid files and the processes they name, shared by the
 * daemons (--pid-file) and tfctl (cluster up/down/restart). */
#ifndef TF_CMD_COMMON_PIDFILE_H
#define TF_CMD_COMMON_PIDFILE_H

#include <stdbool.h>
#include <sys/types.h>

#include "tf/status.h"

/* Whether pid is a running process (zombies count as gone). */
bool tf_pid_alive(pid_t pid);
/* Whether pid runs a program whose file name starts with prefix. */
bool tf_pid_runs(pid_t pid, const char *prefix);

/* Writes pid to path (temp file + rename); errors name the path. */
tf_code tf_pidfile_write(const char *path, pid_t pid, tf_status *st);
/* The pid in path, or 0 when absent or malformed. */
pid_t tf_pidfile_read(const char *path);

#endif
