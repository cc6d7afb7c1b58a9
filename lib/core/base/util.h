/* util.h: internal helpers shared by lib/: assertions for bugs, allocation
 * of metadata that aborts on OOM (tensor data never uses these: it returns
 * RESOURCE_EXHAUSTED), and small macros. Not part of the public API. */
#ifndef TF_CORE_UTIL_H
#define TF_CORE_UTIL_H

#include <stddef.h>
#include <pthread.h>
#include <stdint.h>

/* Prints "file:line: assertion `expr' failed" and aborts. Stays on in
 * release builds: it guards invariants, not user input. */
#define TF_ASSERT(expr)                                                        \
  do {                                                                         \
    if (!(expr)) tf__panic(__FILE__, __LINE__, "assertion `%s' failed", #expr); \
  } while (0)

#define TF_PANIC(...) tf__panic(__FILE__, __LINE__, __VA_ARGS__)

_Noreturn void tf__panic(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

void *tf__xmalloc(size_t n);
void *tf__xcalloc(size_t count, size_t size);
void *tf__xrealloc(void *p, size_t n);
char *tf__xstrdup(const char *s);
char *tf__xstrndup(const char *s, size_t n);
char *tf__xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define TF_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define TF_MIN(a, b) ((a) < (b) ? (a) : (b))
#define TF_MAX(a, b) ((a) > (b) ? (a) : (b))

/* Returns from the enclosing function when a tf_code expression is not OK. */
#define TF_TRY(expr)                                                           \
  do {                                                                         \
    tf_code tf__c = (expr);                                                    \
    if (tf__c != TF_OK) return tf__c;                                          \
  } while (0)

/* Monotonic clock in nanoseconds. */
int64_t tf__now_ns(void);
/* A random non-zero 64-bit value (getrandom; the clock if that fails), for
 * seeds, ids and incarnations. */
uint64_t tf__random_u64(void);
/* pthread_cond_timedwait for at most ms milliseconds from now (mu held);
 * callers loop on their condition and their own deadline. */
void tf__cond_wait_ms(pthread_cond_t *cv, pthread_mutex_t *mu, int64_t ms);

#endif
