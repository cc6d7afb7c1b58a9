/* nng_close.c: nng_close with a deadline (nng_close.h). The closing
 * thread and the waiter share a small record; whichever finishes with it
 * last frees it, so a close that outlives the wait touches nothing of the
 * caller's. */
#include "lib/transport/nng_close.h"

#include <pthread.h>
#include <stdlib.h>

#include "lib/core/base/util.h"

typedef struct closing {
  nng_socket sock;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool done;
  int refs; /* the closer's and the waiter's, under mu */
} closing;

static void closing_put(closing *c) {
  pthread_mutex_lock(&c->mu);
  bool last = --c->refs == 0;
  pthread_mutex_unlock(&c->mu);
  if (last) {
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    free(c);
  }
}

static void *closer_main(void *arg) {
  closing *c = arg;
  nng_close(c->sock);
  pthread_mutex_lock(&c->mu);
  c->done = true;
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  closing_put(c);
  return NULL;
}

bool tf__nng_close_within(nng_socket sock, int64_t timeout_ms) {
  closing *c = tf__xcalloc(1, sizeof *c);
  c->sock = sock;
  c->refs = 2;
  pthread_mutex_init(&c->mu, NULL);
  pthread_cond_init(&c->cv, NULL);
  pthread_t th;
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  int rv = pthread_create(&th, &a, closer_main, c);
  pthread_attr_destroy(&a);
  if (rv != 0) { /* no thread: close here, without a deadline */
    c->refs = 1;
    nng_close(sock);
    closing_put(c);
    return true;
  }
  int64_t deadline = tf__now_ns() + timeout_ms * 1000000;
  pthread_mutex_lock(&c->mu);
  for (int64_t now = tf__now_ns(); !c->done && now < deadline; now = tf__now_ns()) {
    tf__cond_wait_ms(&c->cv, &c->mu, (deadline - now + 999999) / 1000000);
  }
  bool done = c->done;
  pthread_mutex_unlock(&c->mu);
  closing_put(c);
  return done;
}
