/* cancel.c: a step's cancellation: a reason and a list of callbacks.
 *
 * Callbacks run in the cancelling thread without the lock held; a
 * deregistration that races with them waits for them to finish, so the
 * object a callback uses can be freed safely afterwards. */
#include "lib/core/base/cancel.h"

#include <stdlib.h>
#include <string.h>

#include "lib/core/base/util.h"

enum { LIVE = 0, RUNNING = 1, DONE = 2 };

void tf_cancel_init(tf_cancel *c) {
  memset(c, 0, sizeof *c);
  atomic_init(&c->state, LIVE);
  pthread_mutex_init(&c->mu, NULL);
  pthread_cond_init(&c->cv, NULL);
  tf_status_init(&c->why);
  c->next_token = 1;
}

void tf_cancel_fini(tf_cancel *c) {
  pthread_mutex_destroy(&c->mu);
  pthread_cond_destroy(&c->cv);
  free(c->cbs);
  c->cbs = NULL;
}

uint64_t tf_cancel_register(tf_cancel *c, tf_cancel_fn fn, void *arg) {
  pthread_mutex_lock(&c->mu);
  if (c->state != LIVE) {
    pthread_mutex_unlock(&c->mu);
    return 0;
  }
  if (c->n_cbs == c->cap_cbs) {
    c->cap_cbs = c->cap_cbs ? c->cap_cbs * 2 : 8;
    c->cbs = tf__xrealloc(c->cbs, (size_t)c->cap_cbs * sizeof *c->cbs);
  }
  uint64_t token = c->next_token++;
  c->cbs[c->n_cbs++] = (tf_cancel_cb){token, fn, arg};
  pthread_mutex_unlock(&c->mu);
  return token;
}

bool tf_cancel_deregister(tf_cancel *c, uint64_t token) {
  if (token == 0) return false;
  pthread_mutex_lock(&c->mu);
  if (c->state == LIVE) {
    for (int i = 0; i < c->n_cbs; i++) {
      if (c->cbs[i].token == token) {
        c->cbs[i] = c->cbs[--c->n_cbs];
        pthread_mutex_unlock(&c->mu);
        return true;
      }
    }
    pthread_mutex_unlock(&c->mu);
    return true; /* never registered or already removed: will not run */
  }
  bool self = c->state == RUNNING && pthread_equal(c->cb_thread, pthread_self());
  while (!self && c->state == RUNNING) pthread_cond_wait(&c->cv, &c->mu);
  pthread_mutex_unlock(&c->mu);
  return false;
}

bool tf_cancel_start(tf_cancel *c, tf_code code, const char *msg) {
  TF_ASSERT(code != TF_OK);
  pthread_mutex_lock(&c->mu);
  if (c->state != LIVE) {
    pthread_mutex_unlock(&c->mu);
    return false;
  }
  c->state = RUNNING;
  c->cb_thread = pthread_self();
  tf_status_set(&c->why, code, "%s", msg ? msg : "");
  tf_cancel_cb *cbs = c->cbs;
  int n = c->n_cbs;
  c->cbs = NULL;
  c->n_cbs = c->cap_cbs = 0;
  pthread_mutex_unlock(&c->mu);
  for (int i = 0; i < n; i++) cbs[i].fn(cbs[i].arg);
  free(cbs);
  pthread_mutex_lock(&c->mu);
  c->state = DONE;
  pthread_cond_broadcast(&c->cv);
  pthread_mutex_unlock(&c->mu);
  return true;
}

bool tf_cancel_is_cancelled(tf_cancel *c) {
  return atomic_load_explicit(&c->state, memory_order_acquire) != LIVE;
}

tf_code tf_cancel_reason(tf_cancel *c, tf_status *st) {
  pthread_mutex_lock(&c->mu);
  tf_status why = c->state != LIVE ? c->why : (tf_status){TF_OK, ""};
  pthread_mutex_unlock(&c->mu);
  if (st != NULL) *st = why;
  return why.code;
}
