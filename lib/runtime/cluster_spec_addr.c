/* cluster_spec_addr.c: validation of task addresses by transport. tcp and
 * tls+tcp take host:port, where host is an IPv4 dotted quad, a DNS
 * hostname (RFC 1123 labels) or an IPv6 address in brackets; ipc takes a
 * Unix socket path; inproc a name. A scheme ("tcp://") is refused with a
 * hint, since the spec's transport key supplies it. The endpoints of
 * valid addresses (names resolved, paths folded) find two tasks at one.
 * tls+tcp hosts must be names (certificates name them). */
#include "lib/runtime/cluster_spec_addr.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "lib/runtime/cluster_spec_resolve.h"

#define SOCKET_PATH_MAX 107 /* sizeof(sun_path) - 1 on Linux */

/* A length clipped for "%.*s" in messages. */
static int clip(size_t n) { return n < 80 ? (int)n : 80; }

bool tf__cluster_transport_known(const char *t) {
  return t != NULL && (strcmp(t, "tcp") == 0 || strcmp(t, "ipc") == 0 ||
                       strcmp(t, "inproc") == 0 || strcmp(t, "tls+tcp") == 0);
}

const char *tf__cluster_addr_expected(const char *transport) {
  if (strcmp(transport, "ipc") == 0) {
    return "a socket path";
  }
  if (strcmp(transport, "inproc") == 0) {
    return "an inproc name";
  }
  return "host:port";
}

/* A dotted quad of four decimal parts 0..255 without leading zeros. */
static bool ipv4_ok(const char *h, size_t n) {
  int parts = 0;
  size_t i = 0;
  while (i < n) {
    size_t start = i;
    int v = 0;
    while (i < n && isdigit((unsigned char)h[i]) && i - start < 3) {
      v = v * 10 + (h[i++] - '0');
    }
    if (i == start || v > 255 || (h[start] == '0' && i - start > 1)) {
      return false;
    }
    parts++;
    if (i < n && (h[i] != '.' || i + 1 == n)) {
      return false;
    }
    i += i < n;
  }
  return parts == 4;
}

/* RFC 1123 hostname: dot-separated labels of 1..63 letters, digits and
 * '-', not starting or ending with '-'; at most 253 characters. */
static bool hostname_ok(const char *h, size_t n) {
  if (n == 0 || n > 253) {
    return false;
  }
  size_t label = 0;
  for (size_t i = 0; i <= n; i++) {
    if (i == n || h[i] == '.') {
      if (label == 0 || label > 63 || h[i - 1] == '-') {
        return false;
      }
      label = 0;
    } else if (isalnum((unsigned char)h[i]) || (h[i] == '-' && label > 0)) {
      label++;
    } else {
      return false;
    }
  }
  return true;
}

static bool ipv6_ok(const char *h, size_t n) {
  char buf[64];
  unsigned char bin[16];
  if (n == 0 || n >= sizeof buf) {
    return false;
  }
  memcpy(buf, h, n);
  buf[n] = '\0';
  return inet_pton(AF_INET6, buf, bin) == 1;
}

/* Checks host (n bytes, brackets included for IPv6). */
static bool host_ok(const char *addr, const char *h, size_t n, char *why,
                    size_t wn) {
  if (n == 0) {
    snprintf(why, wn, "expected host:port, got '%.80s' (no host)", addr);
    return false;
  }
  if (h[0] == '[') {
    if (n < 2 || h[n - 1] != ']' || !ipv6_ok(h + 1, n - 2)) {
      snprintf(why, wn, "'%.*s' is not a valid IPv6 address in brackets "
               "(in '%.80s')", clip(n), h, addr);
      return false;
    }
    return true;
  }
  if (memchr(h, ':', n) != NULL) {
    snprintf(why, wn, "expected host:port, got '%.80s' (write an IPv6 host "
             "in brackets, as [::1]:7070)", addr);
    return false;
  }
  if (strspn(h, "0123456789.") >= n) {
    if (!ipv4_ok(h, n)) {
      snprintf(why, wn, "'%.*s' is not a valid IPv4 address (in '%.80s')",
               clip(n), h, addr);
      return false;
    }
    return true;
  }
  if (!hostname_ok(h, n)) {
    snprintf(why, wn, "'%.*s' is not a valid hostname (labels of letters, "
             "digits and '-', dot-separated) in '%.80s'",
             clip(n), h, addr);
    return false;
  }
  return true;
}

static bool host_port_ok(const char *addr, char *why, size_t wn) {
  const char *colon = strrchr(addr, ':');
  if (addr[0] == '[') {
    const char *close = strchr(addr, ']');
    colon = close != NULL && close[1] == ':' ? close + 1 : NULL;
  }
  if (colon == NULL) {
    snprintf(why, wn, "expected host:port, got '%.80s'", addr);
    return false;
  }
  const char *port = colon + 1;
  size_t digits = strspn(port, "0123456789");
  if (digits == 0 || port[digits] != '\0') {
    snprintf(why, wn, "expected host:port with a numeric port, got '%.80s'",
             addr);
    return false;
  }
  long v = digits > 9 ? 0 : strtol(port, NULL, 10);
  if (v < 1 || v > 65535) {
    snprintf(why, wn, "port %.20s is outside 1..65535 in '%.80s'", port,
             addr);
    return false;
  }
  return host_ok(addr, addr, (size_t)(colon - addr), why, wn);
}

bool tf__cluster_addr_check(const char *transport, const char *addr,
                            char *why, size_t n) {
  const char *expected = tf__cluster_addr_expected(transport);
  if (strstr(addr, "://") != NULL) {
    snprintf(why, n, "expected %s, got '%.80s' (leave out the scheme: the "
             "'transport' key supplies it)", expected, addr);
    return false;
  }
  bool ipc = strcmp(transport, "ipc") == 0;
  if (ipc || strcmp(transport, "inproc") == 0) {
    size_t len = strlen(addr);
    bool bad = len == 0;
    for (size_t i = 0; i < len; i++) {
      unsigned char c = (unsigned char)addr[i];
      bad |= c < 0x20 || c == 0x7f || (!ipc && c == ' ');
    }
    if (bad) {
      snprintf(why, n, "expected %s, got '%.80s'", expected, addr);
      return false;
    }
    if (ipc && len > SOCKET_PATH_MAX) {
      snprintf(why, n, "socket path is %zu bytes, more than the %d a Unix "
               "socket allows: '%.80s...'", len, SOCKET_PATH_MAX, addr);
      return false;
    }
    return true;
  }
  if (!host_port_ok(addr, why, n)) {
    return false;
  }
  if (strcmp(transport, "tls+tcp") == 0 &&
      (addr[0] == '[' || strspn(addr, "0123456789.") == (size_t)(strrchr(addr, ':') - addr))) {
    snprintf(why, n, "tls+tcp needs a DNS name as host, got '%.80s' (peers are "
             "checked against the names in their certificates, and mbedTLS "
             "2.28 does not match IP addresses)", addr);
    return false;
  }
  return true;
}

/* ---- endpoints ----------------------------------------------------------- */

char *tf__fold_path(const char *path) {
  bool absolute = path[0] == '/';
  char *copy = tf__xstrdup(path), *save = NULL;
  size_t len = strlen(path);
  const char **parts = tf__xcalloc(len + 1, sizeof *parts);
  int k = 0;
  for (char *p = strtok_r(copy, "/", &save); p != NULL; p = strtok_r(NULL, "/", &save)) {
    if (strcmp(p, ".") == 0) {
      continue;
    }
    if (strcmp(p, "..") != 0) {
      parts[k++] = p;
    } else if (k > 0 && strcmp(parts[k - 1], "..") != 0) {
      k--;
    } else if (!absolute) {
      parts[k++] = p; /* a relative path may climb above its start */
    }
  }
  char *out = tf__xcalloc(len + 2, 1);
  size_t w = 0;
  for (int i = 0; i < k; i++) {
    w += (size_t)snprintf(out + w, len + 2 - w, "%s%s", i > 0 || absolute ? "/" : "", parts[i]);
  }
  if (w == 0) {
    snprintf(out, len + 2, "%s", absolute ? "/" : ".");
  }
  free(parts);
  free(copy);
  return out;
}

/* The one-element list {text}. */
static char **single(char *text) {
  char **list = tf__xcalloc(2, sizeof *list);
  list[0] = text;
  return list;
}

/* Splits a valid host:port: host without brackets into h[0..hn), port. */
static void split_host_port(const char *addr, char *h, size_t hn, int *port) {
  const char *colon = strrchr(addr, ':');
  size_t len = (size_t)(colon - addr);
  const char *start = addr;
  if (addr[0] == '[') {
    start++;
    len -= 2;
  }
  snprintf(h, hn, "%.*s", (int)len, start);
  *port = atoi(colon + 1);
}

/* "127.0.0.1 port 7070" or "[::1] port 7070" for each numeric address. */
static char **with_port(char *const *ips, int port) {
  int n = 0;
  while (ips[n] != NULL) {
    n++;
  }
  char **list = tf__xcalloc((size_t)n + 1, sizeof *list);
  for (int i = 0; i < n; i++) {
    bool v6 = strchr(ips[i], ':') != NULL;
    list[i] = tf__xasprintf("%s%s%s port %d", v6 ? "[" : "", ips[i], v6 ? "]" : "", port);
  }
  return list;
}

/* tcp and tls+tcp: numeric hosts directly, names resolved together. */
static void tcp_endpoints(const char *const *addrs, int n, int64_t resolve_ms, char ***out) {
  char **hosts = tf__xcalloc((size_t)n + 1, sizeof *hosts);
  int *ports = tf__xcalloc((size_t)n + 1, sizeof *ports);
  const char **names = tf__xcalloc((size_t)n + 1, sizeof *names);
  int *name_of = tf__xcalloc((size_t)n + 1, sizeof *name_of);
  int n_names = 0;
  for (int i = 0; i < n; i++) {
    char h[256], ip[64];
    out[i] = NULL;
    split_host_port(addrs[i], h, sizeof h, &ports[i]);
    for (char *c = h; *c != '\0'; c++) {
      *c = (char)tolower((unsigned char)*c);
    }
    hosts[i] = tf__xstrdup(h);
    name_of[i] = -1;
    if (tf__resolve_numeric(h, ip, sizeof ip)) {
      out[i] = with_port((char *[]){ip, NULL}, ports[i]);
    }
  }
  for (int i = 0; i < n; i++) {
    bool shared = false; /* only an address with the same port can clash */
    for (int k = 0; k < n && !shared; k++) {
      shared = k != i && ports[k] == ports[i];
    }
    if (out[i] == NULL && shared) {
      name_of[i] = n_names;
      names[n_names++] = hosts[i];
    }
  }
  char ***resolved = tf__xcalloc((size_t)n_names + 1, sizeof *resolved);
  tf__resolve_names(names, n_names, resolve_ms, resolved);
  for (int i = 0; i < n; i++) {
    char **ips = name_of[i] >= 0 ? resolved[name_of[i]] : NULL;
    if (ips != NULL) {
      out[i] = with_port(ips, ports[i]);
    } else if (out[i] == NULL) {
      out[i] = single(tf__xasprintf("host '%s' port %d (not resolved)", hosts[i], ports[i]));
    }
  }
  for (int k = 0; k < n_names; k++) {
    tf__resolve_free(resolved[k]);
  }
  for (int i = 0; i < n; i++) {
    free(hosts[i]);
  }
  free(resolved);
  free(name_of);
  free(names);
  free(ports);
  free(hosts);
}

void tf__cluster_endpoints(const char *transport, const char *const *addrs,
                           int n, int64_t resolve_ms, char ***out) {
  if (strcmp(transport, "ipc") == 0 || strcmp(transport, "inproc") == 0) {
    bool ipc = transport[0] == 'i' && transport[1] == 'p';
    for (int i = 0; i < n; i++) {
      char *folded = ipc ? tf__fold_path(addrs[i]) : NULL;
      out[i] = single(ipc ? tf__xasprintf("socket '%s'", folded)
                          : tf__xasprintf("inproc name '%s'", addrs[i]));
      free(folded);
    }
    return;
  }
  tcp_endpoints(addrs, n, resolve_ms, out);
}

void tf__cluster_endpoints_free(char **list) {
  for (int i = 0; list != NULL && list[i] != NULL; i++) {
    free(list[i]);
  }
  free(list);
}

const char *tf__cluster_endpoints_shared(char *const *a, char *const *b) {
  for (int i = 0; a != NULL && a[i] != NULL; i++) {
    for (int j = 0; b != NULL && b[j] != NULL; j++) {
      if (strcmp(a[i], b[j]) == 0) {
        return a[i];
      }
    }
  }
  return NULL;
}
