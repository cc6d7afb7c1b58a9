/* ctl_procs.c: starting, watching and stopping local daemon processes
 * (fork + execvpe with the log file and environment prepared before the
 * fork, exec failures reported through a close-on-exec pipe), pid files
 * written atomically, and log tails for error reports. */
#include "lib/core/base/util.h"
#include "cmd/tfctl/ctl_procs.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

int64_t tf_ctl_now_ms(void) { return tf__now_ns() / 1000000; }

void tf_ctl_sleep_ms(int64_t ms) {
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

char *tf_ctl_find_program(const char *prog) {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n > 0) {
    self[n] = '\0';
    char *dir = dirname(self);
    size_t len = strlen(dir) + strlen(prog) + 2;
    char *path = malloc(len);
    snprintf(path, len, "%s/%s", dir, prog);
    if (access(path, X_OK) == 0) {
      return path;
    }
    free(path);
  }
  return strdup(prog);
}

tf_code tf_ctl_mkdirs(const char *dir, tf_status *st) {
  char buf[PATH_MAX];
  if (snprintf(buf, sizeof buf, "%s", dir) >= (int)sizeof buf) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "directory name too long: %s", dir);
  }
  for (char *p = buf + 1;; p++) {
    if (*p == '/' || *p == '\0') {
      char c = *p;
      *p = '\0';
      if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
        return tf_status_set(st, TF_FAILED_PRECONDITION, "cannot create directory %s: %s",
                             buf, strerror(errno));
      }
      *p = c;
      if (c == '\0') {
        break;
      }
    }
  }
  return TF_OK;
}

/* environ with extra "K=V" entries replacing same-named ones; the array
 * is malloc'd, the strings borrowed. */
static char **merged_env(const char *const *extra) {
  size_t n_env = 0, n_extra = 0;
  while (environ[n_env] != NULL) {
    n_env++;
  }
  while (extra != NULL && extra[n_extra] != NULL) {
    n_extra++;
  }
  char **out = calloc(n_env + n_extra + 1, sizeof *out);
  size_t k = 0;
  for (size_t i = 0; i < n_env; i++) {
    bool replaced = false;
    for (size_t j = 0; j < n_extra && !replaced; j++) {
      const char *eq = strchr(extra[j], '=');
      size_t kl = eq ? (size_t)(eq - extra[j]) + 1 : strlen(extra[j]);
      replaced = strncmp(environ[i], extra[j], kl) == 0;
    }
    if (!replaced) {
      out[k++] = environ[i];
    }
  }
  for (size_t j = 0; j < n_extra; j++) {
    out[k++] = (char *)extra[j];
  }
  return out;
}

/* The child after fork: only async-signal-safe calls. */
static void child(char *const argv[], const tf_ctl_spawn_opts *o, int log_fd,
                  int err_fd, pid_t parent, char **envp) {
  if (o->detach) {
    setsid();
  }
  if (o->die_with_parent) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) {
      _exit(127);
    }
  }
  int null_fd = open("/dev/null", O_RDONLY);
  if (null_fd >= 0) {
    dup2(null_fd, STDIN_FILENO);
  }
  if (log_fd >= 0) {
    dup2(log_fd, STDOUT_FILENO);
    dup2(log_fd, STDERR_FILENO);
  }
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  signal(SIGPIPE, SIG_DFL);
  execvpe(argv[0], argv, envp);
  int e = errno;
  ssize_t w = write(err_fd, &e, sizeof e);
  (void)w;
  _exit(127);
}

tf_code tf_ctl_spawn(char *const argv[], const tf_ctl_spawn_opts *o, pid_t *pid,
                     tf_status *st) {
  static const tf_ctl_spawn_opts none = {0};
  o = o != NULL ? o : &none;
  int log_fd = -1;
  if (o->log_path != NULL) {
    log_fd = open(o->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0) {
      return tf_status_set(st, TF_FAILED_PRECONDITION, "cannot open log file %s: %s",
                           o->log_path, strerror(errno));
    }
  }
  int p[2];
  if (pipe2(p, O_CLOEXEC) != 0) {
    int e = errno;
    if (log_fd >= 0) {
      close(log_fd);
    }
    return tf_status_set(st, TF_RESOURCE_EXHAUSTED, "pipe: %s", strerror(e));
  }
  char **envp = merged_env(o->env);
  pid_t parent = getpid();
  pid_t c = fork();
  if (c == 0) {
    child(argv, o, log_fd, p[1], parent, envp);
  }
  int fork_errno = errno;
  free(envp);
  close(p[1]);
  if (log_fd >= 0) {
    close(log_fd);
  }
  if (c < 0) {
    close(p[0]);
    return tf_status_set(st, TF_RESOURCE_EXHAUSTED, "fork: %s", strerror(fork_errno));
  }
  int e = 0;
  ssize_t r;
  while ((r = read(p[0], &e, sizeof e)) < 0 && errno == EINTR) {
  }
  close(p[0]);
  if (r == (ssize_t)sizeof e) {
    waitpid(c, NULL, 0);
    return tf_status_set(st, TF_FAILED_PRECONDITION, "cannot run %s: %s", argv[0],
                         strerror(e));
  }
  *pid = c;
  return TF_OK;
}

int tf_ctl_reap(pid_t pid) {
  int status = 0;
  pid_t r = waitpid(pid, &status, WNOHANG);
  return r == pid ? status : -1;
}

/* Waits up to ms for pid to end; *status gets the wait status of a
 * reaped child. Returns whether it ended. */
static bool wait_gone(pid_t pid, int64_t ms, int *status) {
  int64_t deadline = tf_ctl_now_ms() + ms;
  for (;;) {
    pid_t r = waitpid(pid, status, WNOHANG);
    if (r == pid) {
      return true;
    }
    if (r < 0 && errno == ECHILD && !tf_pid_alive(pid)) {
      *status = 0;
      return true;
    }
    if (tf_ctl_now_ms() >= deadline) {
      return false;
    }
    tf_ctl_sleep_ms(10);
  }
}

int tf_ctl_stop_pid(pid_t pid, int sig, int64_t grace_ms) {
  int status = 0;
  if (pid <= 0) {
    return -1;
  }
  kill(pid, sig);
  if (wait_gone(pid, grace_ms, &status)) {
    return status;
  }
  kill(pid, SIGKILL);
  return wait_gone(pid, 2000, &status) ? status : -1;
}

char *tf_ctl_file_tail(const char *path, int max_lines, const char *indent) {
  enum { MAX = 65536 };
  FILE *f = fopen(path, "r");
  if (f == NULL) {
    return strdup("");
  }
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  long start = size > MAX ? size - MAX : 0;
  fseek(f, start, SEEK_SET);
  char *buf = malloc(MAX + 1);
  size_t n = fread(buf, 1, MAX, f);
  fclose(f);
  buf[n] = '\0';
  while (n > 0 && buf[n - 1] == '\n') {
    buf[--n] = '\0';
  }
  const char *from = buf;
  int lines = 0;
  for (size_t i = n; i > 0; i--) {
    if (buf[i - 1] == '\n' && ++lines >= max_lines) {
      from = buf + i;
      break;
    }
  }
  size_t il = strlen(indent);
  char *out = malloc((strlen(from) + 1) * (il + 2) + 1);
  char *w = out;
  for (const char *p = from; *p != '\0';) {
    const char *nl = strchr(p, '\n');
    size_t len = nl ? (size_t)(nl - p) : strlen(p);
    memcpy(w, indent, il);
    memcpy(w + il, p, len);
    w += il + len;
    *w++ = '\n';
    p += len + (nl ? 1 : 0);
  }
  *w = '\0';
  free(buf);
  return out;
}
