/* rpc_probe.c: why a client is not connected. NNG's dialer retries in the
 * background and keeps its errors to itself, so a call that times out
 * without ever reaching its peer would only say "no reply". For tcp://
 * URLs with a numeric host and for ipc:// paths, one connect attempt
 * (at most TF_RPC_PROBE_MS) names the reason: "Connection refused", "No
 * such file or directory", "no answer to connect within 100 ms". */
#include "lib/transport/rpc_probe.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define TF_RPC_PROBE_MS 100

/* One non-blocking connect to sa; "" when it connected, else the reason. */
static void probe_addr(const struct sockaddr *sa, socklen_t len, char *why, size_t n) {
  int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    snprintf(why, n, "socket: %s", strerror(errno));
    return;
  }
  int err = connect(fd, sa, len) == 0 ? 0 : errno;
  if (err == EINPROGRESS) {
    struct pollfd p = {.fd = fd, .events = POLLOUT};
    int r = poll(&p, 1, TF_RPC_PROBE_MS);
    socklen_t el = sizeof err;
    if (r == 0) {
      snprintf(why, n, "no answer to connect within %d ms", TF_RPC_PROBE_MS);
      close(fd);
      return;
    }
    err = r < 0 ? errno : 0;
    if (r > 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0) err = errno;
  }
  close(fd);
  if (err == 0) {
    why[0] = '\0';
  } else {
    snprintf(why, n, "%s", strerror(err));
  }
}

/* tcp://HOST:PORT with a numeric host (IPv4, or IPv6 in brackets). */
static bool probe_tcp(const char *hostport, char *why, size_t n) {
  char host[128];
  const char *colon = strrchr(hostport, ':');
  if (colon == NULL || colon == hostport) return false;
  size_t hl = (size_t)(colon - hostport);
  if (hostport[0] == '[' && hl >= 2 && hostport[hl - 1] == ']') {
    hostport++;
    hl -= 2;
  }
  if (hl >= sizeof host) return false;
  memcpy(host, hostport, hl);
  host[hl] = '\0';
  struct addrinfo hints = {.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV,
                           .ai_socktype = SOCK_STREAM};
  struct addrinfo *ai = NULL;
  if (getaddrinfo(host, colon + 1, &hints, &ai) != 0 || ai == NULL) return false;
  probe_addr(ai->ai_addr, ai->ai_addrlen, why, n);
  freeaddrinfo(ai);
  return true;
}

bool tf__rpc_probe(const char *url, char *why, size_t n) {
  why[0] = '\0';
  if (strncmp(url, "tcp://", 6) == 0) {
    return probe_tcp(url + 6, why, n);
  }
  if (strncmp(url, "ipc://", 6) == 0) {
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(url + 6) >= sizeof sa.sun_path) return false;
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", url + 6);
    probe_addr((const struct sockaddr *)&sa, sizeof sa, why, n);
    return true;
  }
  return false;
}
