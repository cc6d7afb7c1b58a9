/* cluster_spec_resolve.c: host names of a cluster spec resolved with
 * getaddrinfo on up to RESOLVE_THREADS helper threads, all within one
 * deadline. The caller and the helpers share a batch that whoever lets go
 * of it last frees, so the caller can return at its deadline while a
 * lookup is still running (the helper then stops taking names). */
#include "lib/runtime/cluster_spec_resolve.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "lib/core/base/util.h"

#define RESOLVE_THREADS 8

typedef struct batch {
  pthread_mutex_t mu;
  pthread_cond_t cv; /* CLOCK_MONOTONIC; broadcast as names finish */
  int refs;          /* the caller and every running helper */
  int n, next, pending;
  bool abandoned;    /* the caller left: take no more names */
  char **names;      /* n distinct names */
  char ***addrs;     /* per name, once done: its list or NULL */
  bool *done;
} batch;

static void batch_unref(batch *b) {
  pthread_mutex_lock(&b->mu);
  bool last = --b->refs == 0;
  pthread_mutex_unlock(&b->mu);
  if (!last) {
    return;
  }
  for (int i = 0; i < b->n; i++) {
    free(b->names[i]);
    tf__resolve_free(b->addrs[i]);
  }
  free(b->names);
  free(b->addrs);
  free(b->done);
  pthread_cond_destroy(&b->cv);
  pthread_mutex_destroy(&b->mu);
  free(b);
}

void tf__resolve_free(char **addrs) {
  for (int i = 0; addrs != NULL && addrs[i] != NULL; i++) {
    free(addrs[i]);
  }
  free(addrs);
}

/* The numeric form of addr (an in_addr for AF_INET, an in6_addr for
 * AF_INET6) into buf; false for another family. IPv4-mapped IPv6
 * addresses are written as IPv4 (one socket would serve both). */
static bool numeric(int family, const void *addr, char *buf, socklen_t n) {
  if (family == AF_INET) {
    return inet_ntop(AF_INET, addr, buf, n) != NULL;
  }
  if (family != AF_INET6) {
    return false;
  }
  const struct in6_addr *v6 = addr;
  if (IN6_IS_ADDR_V4MAPPED(v6)) {
    return inet_ntop(AF_INET, &v6->s6_addr[12], buf, n) != NULL;
  }
  return inet_ntop(AF_INET6, v6, buf, n) != NULL;
}

/* The address inside sa (IPv4 or IPv6), else NULL. */
static const void *addr_of(const struct sockaddr *sa) {
  if (sa->sa_family == AF_INET) {
    return &((const struct sockaddr_in *)sa)->sin_addr;
  }
  if (sa->sa_family == AF_INET6) {
    return &((const struct sockaddr_in6 *)sa)->sin6_addr;
  }
  return NULL;
}

bool tf__resolve_numeric(const char *host, char *buf, size_t n) {
  struct in_addr v4;
  struct in6_addr v6;
  if (inet_pton(AF_INET, host, &v4) == 1) {
    return numeric(AF_INET, &v4, buf, (socklen_t)n);
  }
  if (inet_pton(AF_INET6, host, &v6) == 1) {
    return numeric(AF_INET6, &v6, buf, (socklen_t)n);
  }
  return false;
}

/* Every address of name, NULL-terminated and without repeats; NULL when
 * it does not resolve. */
static char **lookup(const char *name) {
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
  struct addrinfo *res = NULL;
  if (getaddrinfo(name, NULL, &hints, &res) != 0 || res == NULL) {
    return NULL;
  }
  int count = 0, k = 0;
  for (const struct addrinfo *p = res; p != NULL; p = p->ai_next) {
    count++;
  }
  char **list = tf__xcalloc((size_t)count + 1, sizeof *list);
  for (const struct addrinfo *p = res; p != NULL; p = p->ai_next) {
    char buf[INET6_ADDRSTRLEN];
    const void *a = addr_of(p->ai_addr);
    bool seen = a == NULL || !numeric(p->ai_family, a, buf, sizeof buf);
    for (int i = 0; i < k && !seen; i++) {
      seen = strcmp(list[i], buf) == 0;
    }
    if (!seen) {
      list[k++] = tf__xstrdup(buf);
    }
  }
  freeaddrinfo(res);
  if (k == 0) {
    free(list);
    return NULL;
  }
  return list;
}

static void *resolver_main(void *arg) {
  batch *b = arg;
  for (;;) {
    pthread_mutex_lock(&b->mu);
    int i = !b->abandoned && b->next < b->n ? b->next++ : -1;
    pthread_mutex_unlock(&b->mu);
    if (i < 0) {
      break;
    }
    char **addrs = lookup(b->names[i]);
    pthread_mutex_lock(&b->mu);
    b->addrs[i] = addrs;
    b->done[i] = true;
    b->pending--;
    pthread_cond_broadcast(&b->cv);
    pthread_mutex_unlock(&b->mu);
  }
  batch_unref(b);
  return NULL;
}

/* A batch of the distinct names among names[0..n); idx[i] gets the index
 * of names[i] in it. */
static batch *batch_new(const char *const *names, int n, int *idx) {
  batch *b = tf__xcalloc(1, sizeof *b);
  pthread_mutex_init(&b->mu, NULL);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&b->cv, &ca);
  pthread_condattr_destroy(&ca);
  b->names = tf__xcalloc((size_t)n + 1, sizeof *b->names);
  for (int i = 0; i < n; i++) {
    int k = 0;
    while (k < b->n && strcmp(b->names[k], names[i]) != 0) {
      k++;
    }
    if (k == b->n) {
      b->names[b->n++] = tf__xstrdup(names[i]);
    }
    idx[i] = k;
  }
  b->addrs = tf__xcalloc((size_t)b->n + 1, sizeof *b->addrs);
  b->done = tf__xcalloc((size_t)b->n + 1, sizeof *b->done);
  b->pending = b->n;
  b->refs = 1;
  return b;
}

/* Starts up to RESOLVE_THREADS detached helpers on b. */
static void start_helpers(batch *b) {
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  for (int t = 0; t < b->n && t < RESOLVE_THREADS; t++) {
    pthread_mutex_lock(&b->mu);
    b->refs++;
    pthread_mutex_unlock(&b->mu);
    pthread_t th;
    if (pthread_create(&th, &attr, resolver_main, b) != 0) {
      b->refs--; /* no helper holds the lock yet, none started */
      break;
    }
  }
  pthread_attr_destroy(&attr);
}

static char **copy_list(char *const *list) {
  int n = 0;
  while (list[n] != NULL) {
    n++;
  }
  char **out = tf__xcalloc((size_t)n + 1, sizeof *out);
  for (int i = 0; i < n; i++) {
    out[i] = tf__xstrdup(list[i]);
  }
  return out;
}

void tf__resolve_names(const char *const *names, int n, int64_t timeout_ms, char ***out) {
  for (int i = 0; i < n; i++) {
    out[i] = NULL;
  }
  if (n <= 0) {
    return;
  }
  int *idx = tf__xcalloc((size_t)n, sizeof *idx);
  batch *b = batch_new(names, n, idx);
  start_helpers(b);
  int64_t until_ns = tf__now_ns() + (timeout_ms > 0 ? timeout_ms : 0) * 1000000LL;
  struct timespec until = {(time_t)(until_ns / 1000000000LL), (long)(until_ns % 1000000000LL)};
  pthread_mutex_lock(&b->mu);
  while (b->pending > 0 && b->refs > 1 && tf__now_ns() < until_ns) {
    pthread_cond_timedwait(&b->cv, &b->mu, &until);
  }
  for (int i = 0; i < n; i++) {
    if (b->done[idx[i]] && b->addrs[idx[i]] != NULL) {
      out[i] = copy_list(b->addrs[idx[i]]);
    }
  }
  b->abandoned = true;
  pthread_mutex_unlock(&b->mu);
  batch_unref(b);
  free(idx);
}
