/* pidfile.c: pid files written atomically (temp file + rename), read
 * strictly, and the /proc checks of the process a pid file names
 * (pidfile.h). */
#include "cmd/common/pidfile.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool tf_pid_alive(pid_t pid) {
  if (pid <= 0 || (kill(pid, 0) != 0 && errno != EPERM)) {
    return false;
  }
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
  FILE *f = fopen(path, "r");
  if (f == NULL) {
    return true;
  }
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  const char *rp = strrchr(buf, ')'); /* after "pid (comm)" */
  return !(rp != NULL && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X'));
}

bool tf_pid_runs(pid_t pid, const char *prefix) {
  char path[64], buf[PATH_MAX];
  snprintf(path, sizeof path, "/proc/%ld/cmdline", (long)pid);
  FILE *f = fopen(path, "r");
  if (f == NULL) {
    return false;
  }
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0'; /* argv[0] ends at the first NUL */
  const char *base = strrchr(buf, '/');
  base = base != NULL ? base + 1 : buf;
  return strncmp(base, prefix, strlen(prefix)) == 0;
}

tf_code tf_pidfile_write(const char *path, pid_t pid, tf_status *st) {
  char tmp[PATH_MAX];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  if (f == NULL) {
    return tf_status_set(st, TF_FAILED_PRECONDITION, "cannot write pid file %s: %s", tmp,
                         strerror(errno));
  }
  bool ok = fprintf(f, "%ld\n", (long)pid) > 0;
  ok = fclose(f) == 0 && ok;
  if (!ok || rename(tmp, path) != 0) {
    int e = errno;
    unlink(tmp);
    return tf_status_set(st, TF_FAILED_PRECONDITION, "cannot write pid file %s: %s", path,
                         strerror(e));
  }
  return TF_OK;
}

pid_t tf_pidfile_read(const char *path) {
  FILE *f = fopen(path, "r");
  if (f == NULL) {
    return 0;
  }
  char buf[32] = {0};
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  char *end = NULL;
  long v = strtol(buf, &end, 10);
  if (end == buf || (*end != '\0' && *end != '\n') || v <= 0 || v > INT_MAX) {
    return 0;
  }
  return (pid_t)v;
}
