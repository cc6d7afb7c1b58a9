/* notify.c: sd_notify through libsystemd when built with it, otherwise
 * one AF_UNIX datagram to $NOTIFY_SOCKET (notify.h). */
#include "cmd/common/notify.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>
#include <unistd.h>

#ifdef TF_HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

int tf_notify(const char *state) {
#ifdef TF_HAVE_SYSTEMD
  return sd_notify(0, state);
#else
  const char *path = getenv("NOTIFY_SOCKET");
  if (path == NULL || path[0] == '\0') {
    return 0;
  }
  struct sockaddr_un sa;
  memset(&sa, 0, sizeof sa);
  sa.sun_family = AF_UNIX;
  size_t n = strlen(path);
  if ((path[0] != '/' && path[0] != '@') || n >= sizeof sa.sun_path) {
    return -22; /* EINVAL */
  }
  memcpy(sa.sun_path, path, n);
  if (path[0] == '@') {
    sa.sun_path[0] = '\0';
  }
  socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n +
                              (path[0] == '@' ? 0 : 1));
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return -1;
  }
  ssize_t w = sendto(fd, state, strlen(state), MSG_NOSIGNAL,
                     (const struct sockaddr *)&sa, len);
  close(fd);
  return w < 0 ? -1 : 1;
#endif
}

uint64_t tf_notify_watchdog_usec(void) {
#ifdef TF_HAVE_SYSTEMD
  uint64_t usec = 0;
  return sd_watchdog_enabled(0, &usec) > 0 ? usec : 0;
#else
  const char *u = getenv("WATCHDOG_USEC");
  if (u == NULL || u[0] == '\0') {
    return 0;
  }
  const char *p = getenv("WATCHDOG_PID");
  if (p != NULL && p[0] != '\0' && strtol(p, NULL, 10) != (long)getpid()) {
    return 0;
  }
  char *end = NULL;
  unsigned long long v = strtoull(u, &end, 10);
  return (end == u || *end != '\0') ? 0 : (uint64_t)v;
#endif
}
