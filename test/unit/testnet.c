/* testnet.c: loopback ports for tests that start servers. */
#include "test/unit/testutil.h"

#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

enum { TT_PORTS_KEPT = 1024 };

static pthread_mutex_t ports_mu = PTHREAD_MUTEX_INITIALIZER;
static int ports_given[TT_PORTS_KEPT];
static int n_ports_given;

/* A port the kernel offers for bind(0) on loopback, or -1. */
static int kernel_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof sa;
  int port = -1;
  if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
      getsockname(fd, (struct sockaddr *)&sa, &len) == 0) {
    port = ntohs(sa.sin_port);
  }
  if (fd >= 0) {
    close(fd);
  }
  return port;
}

static bool given(int port) {
  int n = n_ports_given < TT_PORTS_KEPT ? n_ports_given : TT_PORTS_KEPT;
  for (int i = 0; i < n; i++) {
    if (ports_given[i] == port) {
      return true;
    }
  }
  return false;
}

int tt_free_port(void) {
  pthread_mutex_lock(&ports_mu);
  int port = -1;
  for (int tries = 0; tries < 256 && port < 0; tries++) {
    int p = kernel_port();
    if (p > 0 && !given(p)) {
      port = p;
    }
  }
  if (port > 0) {
    ports_given[n_ports_given++ % TT_PORTS_KEPT] = port;
  }
  pthread_mutex_unlock(&ports_mu);
  ck_assert_msg(port > 0, "no free loopback port: %s", strerror(errno));
  return port;
}
