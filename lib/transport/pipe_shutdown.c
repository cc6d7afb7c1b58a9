/* pipe_shutdown.c: ending NNG pipes through their TCP sockets
 * (pipe_shutdown.h says why). The pipes' addresses come from NNG; the
 * descriptors' from getsockname and getpeername over /proc/self/fd. */
#include "lib/transport/pipe_shutdown.h"

#include <dirent.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lib/core/base/util.h"

/* A TCP endpoint pair in one comparable form. */
typedef struct conn_addr {
  int family; /* AF_INET or AF_INET6 */
  uint8_t local[16], remote[16];
  uint16_t lport, rport;
} conn_addr;

static bool from_nng(const nng_sockaddr *sa, int *family, uint8_t *addr, uint16_t *port) {
  if (sa->s_family == NNG_AF_INET) {
    *family = AF_INET;
    memcpy(addr, &sa->s_in.sa_addr, 4);
    *port = sa->s_in.sa_port; /* network order, as the kernel's */
    return true;
  }
  if (sa->s_family == NNG_AF_INET6) {
    *family = AF_INET6;
    memcpy(addr, sa->s_in6.sa_addr, 16);
    *port = sa->s_in6.sa_port;
    return true;
  }
  return false;
}

static bool from_kernel(const struct sockaddr_storage *ss, int *family, uint8_t *addr,
                        uint16_t *port) {
  if (ss->ss_family == AF_INET) {
    const struct sockaddr_in *in = (const struct sockaddr_in *)ss;
    *family = AF_INET;
    memcpy(addr, &in->sin_addr, 4);
    *port = in->sin_port;
    return true;
  }
  if (ss->ss_family == AF_INET6) {
    const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)ss;
    *family = AF_INET6;
    memcpy(addr, &in6->sin6_addr, 16);
    *port = in6->sin6_port;
    return true;
  }
  return false;
}

/* The pipe's addresses; false when it has none of TCP's (or is gone). */
static bool pipe_addr(uint32_t id, conn_addr *out) {
  nng_pipe p = NNG_PIPE_INITIALIZER;
  p.id = id;
  nng_sockaddr loc, rem;
  int f2 = 0;
  memset(out, 0, sizeof *out);
  return nng_pipe_get_addr(p, NNG_OPT_LOCADDR, &loc) == 0 &&
         nng_pipe_get_addr(p, NNG_OPT_REMADDR, &rem) == 0 &&
         from_nng(&loc, &out->family, out->local, &out->lport) &&
         from_nng(&rem, &f2, out->remote, &out->rport) && f2 == out->family;
}

/* The descriptor's addresses; false unless it is a connected IP socket. */
static bool fd_addr(int fd, conn_addr *out) {
  struct sockaddr_storage a, b;
  socklen_t la = sizeof a, lb = sizeof b;
  int f2 = 0;
  memset(out, 0, sizeof *out);
  return getsockname(fd, (struct sockaddr *)&a, &la) == 0 &&
         getpeername(fd, (struct sockaddr *)&b, &lb) == 0 &&
         from_kernel(&a, &out->family, out->local, &out->lport) &&
         from_kernel(&b, &f2, out->remote, &out->rport) && f2 == out->family;
}

static bool same(const conn_addr *x, const conn_addr *y) {
  size_t n = x->family == AF_INET ? 4 : 16;
  return x->family == y->family && x->lport == y->lport && x->rport == y->rport &&
         memcmp(x->local, y->local, n) == 0 && memcmp(x->remote, y->remote, n) == 0;
}

int tf__pipes_shutdown(const uint32_t *ids, int n, bool *done) {
  conn_addr *want = tf__xcalloc((size_t)n + 1, sizeof *want);
  bool *tcp = tf__xcalloc((size_t)n + 1, sizeof *tcp);
  int left = 0, k = 0;
  for (int i = 0; i < n; i++) {
    done[i] = false;
    tcp[i] = pipe_addr(ids[i], &want[i]);
    left += tcp[i];
  }
  DIR *d = left > 0 ? opendir("/proc/self/fd") : NULL;
  for (struct dirent *e; d != NULL && left > 0 && (e = readdir(d)) != NULL;) {
    char *end = NULL;
    long fd = strtol(e->d_name, &end, 10);
    conn_addr have;
    if (end == e->d_name || *end != '\0' || fd == dirfd(d) || !fd_addr((int)fd, &have)) {
      continue;
    }
    for (int i = 0; i < n; i++) {
      conn_addr again;
      if (tcp[i] && !done[i] && same(&want[i], &have) && fd_addr((int)fd, &again) &&
          same(&want[i], &again) && shutdown((int)fd, SHUT_RDWR) == 0) {
        done[i] = true;
        left--;
        k++;
        break;
      }
    }
  }
  if (d != NULL) {
    closedir(d);
  }
  free(want);
  free(tcp);
  return k;
}
