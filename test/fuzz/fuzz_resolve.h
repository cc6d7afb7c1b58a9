/* fuzz_resolve.h: a hermetic getaddrinfo for the harnesses whose decoders
 * resolve host names (cluster_spec, task_role: two tasks at one endpoint
 * are refused, names resolved). The real resolver asks DNS, which makes a
 * run depend on the network and can stall for seconds (a dropped query
 * waits out the resolver's timeout), so a fuzz run would measure DNS. A
 * program's own definition takes the place of libc's (and of the
 * sanitizers' interceptor): here "localhost" (any case) is 127.0.0.1 and
 * ::1, "v4.test" is 127.0.0.1, a numeric host is itself, and every other
 * name is unknown (EAI_NONAME), every time. Include it in one file only. */
#ifndef TF_TEST_FUZZ_RESOLVE_H
#define TF_TEST_FUZZ_RESOLVE_H

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

/* Prepends one address of family to *res. */
static void fuzz_ai_add(int family, const void *addr, int socktype,
                        struct addrinfo **res) {
  struct addrinfo *ai = calloc(1, sizeof *ai);
  size_t len = family == AF_INET ? sizeof(struct sockaddr_in)
                                 : sizeof(struct sockaddr_in6);
  struct sockaddr_storage *ss = calloc(1, sizeof *ss);
  if (family == AF_INET) {
    struct sockaddr_in *in = (struct sockaddr_in *)ss;
    in->sin_family = AF_INET;
    memcpy(&in->sin_addr, addr, sizeof in->sin_addr);
  } else {
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
    in6->sin6_family = AF_INET6;
    memcpy(&in6->sin6_addr, addr, sizeof in6->sin6_addr);
  }
  ai->ai_family = family;
  ai->ai_socktype = socktype;
  ai->ai_addrlen = (socklen_t)len;
  ai->ai_addr = (struct sockaddr *)ss;
  ai->ai_next = *res;
  *res = ai;
}

int getaddrinfo(const char *node, const char *service,
                const struct addrinfo *hints, struct addrinfo **res) {
  (void)service;
  *res = NULL;
  int family = hints != NULL ? hints->ai_family : AF_UNSPEC;
  int socktype = hints != NULL ? hints->ai_socktype : 0;
  struct in_addr v4;
  struct in6_addr v6;
  bool local = node != NULL && strcasecmp(node, "localhost") == 0;
  bool four = local || (node != NULL && strcasecmp(node, "v4.test") == 0);
  if (node != NULL && inet_pton(AF_INET, node, &v4) == 1) {
    four = true;
  } else if (four) {
    inet_pton(AF_INET, "127.0.0.1", &v4);
  }
  bool six = node != NULL && !four && inet_pton(AF_INET6, node, &v6) == 1;
  if (local) {
    inet_pton(AF_INET6, "::1", &v6);
    six = true;
  }
  if (six && family != AF_INET) {
    fuzz_ai_add(AF_INET6, &v6, socktype, res);
  }
  if (four && family != AF_INET6) {
    fuzz_ai_add(AF_INET, &v4, socktype, res);
  }
  return *res != NULL ? 0 : EAI_NONAME;
}

void freeaddrinfo(struct addrinfo *ai) {
  while (ai != NULL) {
    struct addrinfo *next = ai->ai_next;
    free(ai->ai_addr);
    free(ai);
    ai = next;
  }
}

#endif
