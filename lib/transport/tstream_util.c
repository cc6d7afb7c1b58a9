/* tstream_util.c: helpers shared by the tensor stream's server and client:
 * URL checks, NNG durations and error codes, peer addresses. */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "lib/transport/tstream_util.h"

tf_code tf__tstream_check_url(const char *url, const char *verb,
                              tf_status *st) {
  if (url == NULL || url[0] == '\0') {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "tensor stream: cannot %s an empty URL", verb);
  }
  if (strncmp(url, "tcp://", 6) != 0 && strncmp(url, "tls+tcp://", 10) != 0) {
    return tf_status_set(st, TF_UNIMPLEMENTED,
                         "cannot %s %s: the tensor stream supports only "
                         "tcp:// and tls+tcp:// URLs", verb, url);
  }
  return TF_OK;
}

nng_duration tf__tstream_ms(int64_t ms) {
  if (ms < 1) {
    return 1;
  }
  return ms > INT32_MAX ? INT32_MAX : (nng_duration)ms;
}

tf_code tf__tstream_code(int rv) {
  switch (rv) {
    case NNG_ETIMEDOUT: return TF_DEADLINE_EXCEEDED;
    case NNG_ENOMEM: return TF_RESOURCE_EXHAUSTED;
    default: return TF_UNAVAILABLE;
  }
}

void tf__tstream_peer(nng_stream *s, char *peer, size_t peer_size, char *host,
                      size_t host_size) {
  nng_sockaddr sa;
  char h[INET6_ADDRSTRLEN] = "?";
  unsigned port = 0;
  bool v6 = false;
  if (nng_stream_get_addr(s, NNG_OPT_REMADDR, &sa) == 0) {
    if (sa.s_family == NNG_AF_INET) {
      inet_ntop(AF_INET, &sa.s_in.sa_addr, h, sizeof h);
      port = ntohs(sa.s_in.sa_port);
    } else if (sa.s_family == NNG_AF_INET6) {
      inet_ntop(AF_INET6, sa.s_in6.sa_addr, h, sizeof h);
      port = ntohs(sa.s_in6.sa_port);
      v6 = true;
    }
  }
  snprintf(host, host_size, "%s", h);
  snprintf(peer, peer_size, v6 ? "[%s]:%u" : "%s:%u", h, port);
}

void tf__tstream_url_with_port(const char *url, int port, char *out,
                               size_t size) {
  /* url is tcp:// or tls+tcp://host:port (checked): the host is what
   * lies between the scheme and the last ':'. */
  int scheme = strncmp(url, "tcp://", 6) == 0 ? 6 : 10;
  const char *host = url + scheme;
  const char *colon = strrchr(host, ':');
  int host_len = colon != NULL ? (int)(colon - host) : (int)strlen(host);
  snprintf(out, size, "%.*s%.*s:%d", scheme, url, host_len, host, port);
}
