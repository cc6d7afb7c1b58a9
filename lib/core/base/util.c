/* util.c: panics, metadata allocation that aborts on OOM, the clock. */
#include "lib/core/base/util.h"

#include <stdarg.h>
#include <stdio.h>
#include <sys/random.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

_Noreturn void tf__panic(const char *file, int line, const char *fmt, ...) {
  va_list ap;
  fprintf(stderr, "<2>tf panic at %s:%d: ", file, line);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  fflush(stderr);
  abort();
}

void *tf__xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (p == NULL) TF_PANIC("out of memory allocating %zu bytes", n);
  return p;
}

void *tf__xcalloc(size_t count, size_t size) {
  void *p = calloc(count ? count : 1, size ? size : 1);
  if (p == NULL) TF_PANIC("out of memory allocating %zu x %zu bytes", count, size);
  return p;
}

void *tf__xrealloc(void *p, size_t n) {
  void *q = realloc(p, n ? n : 1);
  if (q == NULL) TF_PANIC("out of memory reallocating %zu bytes", n);
  return q;
}

char *tf__xstrdup(const char *s) { return tf__xstrndup(s, strlen(s)); }

char *tf__xstrndup(const char *s, size_t n) {
  char *p = tf__xmalloc(n + 1);
  memcpy(p, s, n);
  p[n] = '\0';
  return p;
}

char *tf__xasprintf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *out = NULL;
  int r = vasprintf(&out, fmt, ap);
  va_end(ap);
  if (r < 0) TF_PANIC("out of memory formatting a string");
  return out;
}

int64_t tf__now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

uint64_t tf__random_u64(void) {
  uint64_t v = 0;
  if (getrandom(&v, sizeof v, 0) != (ssize_t)sizeof v) {
    v = (uint64_t)tf__now_ns() * 0x9E3779B97F4A7C15ull;
  }
  return v ? v : 1;
}

void tf__cond_wait_ms(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t ms) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  int64_t ns = (int64_t)ts.tv_nsec + ms * 1000000;
  ts.tv_sec += (time_t)(ns / 1000000000);
  ts.tv_nsec = (long)(ns % 1000000000);
  pthread_cond_timedwait(cv, mu, &ts);
}
