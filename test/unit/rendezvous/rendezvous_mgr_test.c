/* rendezvous_mgr_test.c: per-step rendezvous tables
 * (lib/rendezvous/rendezvous_mgr.h). Values meet their receivers in either
 * order and are handed over by reference (the same tensor, no copy); dead
 * values stay dead; a second send of a key is INTERNAL; abort, cancel,
 * cleanup, manager shutdown and the TTL sweep each end a waiting receive
 * with their reason; a cleaned-up step refuses late deliveries and new
 * uses; buffered bytes count what waits in the tables; sends to another
 * task's devices go to the remote hook (or fail without one); and 8
 * threads sending and receiving 1000 keys each all meet. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/core/base/util.h"
#include "lib/rendezvous/rendezvous_mgr.h"
#include "test/unit/testutil.h"

#define TASK "/job:worker/replica:0/task:1"
#define LOCAL TASK "/device:CPU:0"
#define OTHER "/job:ps/replica:0/task:0/device:CPU:0"
#define TTL_MS 1000
#define WAIT_NS (10LL * 1000000000)

static char *key(const char *dst, const char *name) {
  return tf_rdv_key_make(OTHER, 7, dst, name, 0, 0);
}

/* ---- recording callbacks ------------------------------------------------- */

typedef struct got {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int calls;
  tf_status st;
  tf_tensor *t;
  bool dead;
} got;

static void got_init(got *g) {
  memset(g, 0, sizeof *g);
  pthread_mutex_init(&g->mu, NULL);
  pthread_cond_init(&g->cv, NULL);
}

static void got_fini(got *g) {
  tf_tensor_unref(g->t);
  pthread_mutex_destroy(&g->mu);
  pthread_cond_destroy(&g->cv);
}

static void recv_cb(void *arg, const tf_status *st, tf_tensor *t, bool dead) {
  got *g = arg;
  pthread_mutex_lock(&g->mu);
  g->calls++;
  g->st = *st;
  g->t = t;
  g->dead = dead;
  pthread_cond_broadcast(&g->cv);
  pthread_mutex_unlock(&g->mu);
}

static void send_cb(void *arg, const tf_status *st) {
  recv_cb(arg, st, NULL, false);
}

/* Waits (10 s at most) until g was called; fails the test otherwise. */
static void got_wait(got *g) {
  int64_t end = tf__now_ns() + WAIT_NS;
  pthread_mutex_lock(&g->mu);
  while (g->calls == 0 && tf__now_ns() < end) {
    pthread_mutex_unlock(&g->mu);
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
    pthread_mutex_lock(&g->mu);
  }
  int calls = g->calls;
  pthread_mutex_unlock(&g->mu);
  ck_assert_msg(calls == 1, "callback ran %d times", calls);
}

static tf_tensor *scalar(float v) {
  double d = v;
  return tt_tensor(TF_FLOAT32, tf_shape_of(0), &d);
}

static tf_rendezvous *step_of(tf_rdv_mgr *m, uint64_t id) {
  tf_status st;
  tf_status_init(&st);
  tf_rendezvous *r = tf_rdv_mgr_step(m, id, &st);
  ck_assert_msg(r != NULL, "%s", st.msg);
  return r;
}

/* Sends and requires an immediate OK. */
static void send_ok(tf_rendezvous *r, const char *k, tf_tensor *t, bool dead) {
  got s;
  got_init(&s);
  r->send(r, k, t, dead, send_cb, &s);
  ck_assert_int_eq(s.calls, 1);
  ck_assert_msg(s.st.code == TF_OK, "%s", s.st.msg);
  got_fini(&s);
}

/* ---- tests ---------------------------------------------------------------- */

START_TEST(test_send_then_recv) {
  tf_rdv_mgr *m = tf_rdv_mgr_new(TASK, TTL_MS, NULL, NULL);
  tf_rendezvous *r = step_of(m, 1);
  char *k = key(LOCAL, "a:0");
  tf_tensor *t = scalar(3.5f);
  send_ok(r, k, t, false);
  ck_assert_int_eq(tf_rdv_mgr_buffered_bytes(m), 4);
  got g;
  got_init(&g);
  r->recv(r, k, NULL, recv_cb, &g);
  got_wait(&g);
  ck_assert_int_eq(g.st.code, TF_OK);
  ck_assert_ptr_eq(g.t, t); /* by reference */
  ck_assert(!g.dead);
  ck_assert_int_eq(tf_rdv_mgr_buffered_bytes(m), 0);
  tf_tensor_unref(t);
  got_fini(&g);
  free(k);
  tf_rdv_step_unref(r);
  ck_assert_int_eq(tf_rdv_mgr_live_steps(m), 1);
  tf_rdv_mgr_free(m);
}
END_TEST

START_TEST(test_recv_then_send) {
  tf_rdv_mgr *m = tf_rdv_mgr_new(TASK, TTL_MS, NULL, NULL);
  tf_rendezvous *r = step_of(m, 2);
  tf_cancel c;
  tf_cancel_init(&c);
  char *k = key(LOCAL, "b:0");
  got g;
  got_init(&g);
  r->recv(r, k, &c, recv_cb, &g);
  ck_assert_int_eq(g.calls, 0);
  tf_tensor *t = scalar(-1.0f);
  send_ok(r, k, t, false);
  got_wait(&g);
  ck_assert_int_eq(g.st.code, TF_OK);
  ck_assert_ptr_eq(g.t, t);
  ck_assert_float_eq(((float *)g.t->data)[0], -1.0f);
  ck_assert_int_eq(tf_rdv_mgr_buffered_bytes(m), 0);
  /* The registration is gone: cancelling now calls nothing. */
  tf_cancel_start(&c, TF_CANCELLED, "late");
  ck_assert_int_eq(g.calls, 1);
  tf_tensor_unref(t);
  got_fini(&g);
  tf_cancel_fini(&c);
  free(k);
  tf_rdv_step_unref(r);
  tf_rdv_mgr_free(m);
}
END_TEST

START_TEST(test_dead_values) {
  tf_rdv_mgr *m = tf_rdv_mgr_new(TASK, TTL_MS, NULL, NULL);
  tf_rendezvous *r = step_of(m, 3);
  char *k1 = key(LOCAL, "d1"), *k2 = key(LOCAL, "d2");
  send_ok(r, k1, NULL, true);
  ck_assert_int_eq(tf_rdv_mgr_buffered_bytes(m), 0);
  got g1, g2;
  got_init(&g1);
  got_init(&g2);
  r->recv(r, k1, NULL, recv_cb, &g1);
  r->recv(r, k2, NULL, recv_cb, &g2);
  tf_tensor *t = scalar(1.0f);
  send_ok(r, k2, t, true); /* dead wins over a tensor given by mistake */
  got_wait(&g1);
  got_wait(&g2);
  ck_assert(g1.dead && g2.dead);
  ck_assert_ptr_null(g1.t);
  ck_assert_ptr_null(g2.t);
  ck_assert_int_eq(g1.st.code, TF_OK);
  tf_tensor_unref(t);
  got_fini(&g1);
  got_fini(&g2);
  free(k1);
  free(k2);
  tf_rdv_step_unref(r);
  tf_rdv_mgr_free(m);
}
END_TEST

START_TEST(test_duplicate_send) {
  tf_rdv_mgr *m = tf_rdv_mgr_new(TASK, TTL_MS, NULL, NULL);
  tf_rendezvous *r = step_of(m, 4);
  char *k = key(LOCAL, "dup:0");
  tf_tensor *t = scalar(2.0f);
  send_ok(r, k, t, false);
  got s;
  got_init(&s);
  r->send(r, k, t, false, send_cb, &s);
  ck_assert_int_eq(s.calls, 1);
  ck_assert_int_eq(s.st.code, TF_INTERNAL);
  ck_assert_ptr_nonnull(strstr(s.st.msg, "duplicate send of key"));
  ck_assert_ptr_nonnull(strstr(s.st.msg, "dup:0"));
  tf_status st;
  tf_status_init(&st);
  ck_assert_int_eq(tf_rdv_mgr_deliver(m, 4, k, t, false, &st), TF_INTERNAL);
  /* A second receiver of one key is an error too. */
  char *k2 = key(LOCAL, "two");
  got a, b;
  got_init(&a);
  got_init(&b);
  r->recv(r, k2, NULL, recv_cb, &a);
  r->recv(r, k2, NULL, recv_cb, &b);
  got_wait(&b);
  ck_assert_int_eq(b.st.code, TF_INTERNAL);
  ck_assert_ptr_nonnull(strstr(b.st.msg, "duplicate recv"));
  ck_assert_int_eq(a.calls, 0);
  tf_rdv_mgr_abort(m, 4, &(tf_status){TF_ABORTED, "done"});
  got_wait(&a);
  tf_tensor_unref(t);
  got_fini(&s);
  got_fini(&a);
  got_fini(&b);
  free(k);
  free(k2);
  tf_rdv_step_unref(r);
  tf_rdv_mgr_free(m);
}
END_TEST

static void *abort_later(void *arg) {
  struct timespec ts = {0, 20000000};
  nanosleep(&ts, NULL);
  tf_status why;
  tf_status_set(&why, TF_UNAVAILABLE, "worker 3 went away");
  tf_rdv_mgr_abort(arg, 5, &why);
  return NULL;
}

START_TEST(test_abort_wakes_waiter) {
  tf_rdv_mgr *m = tf_rdv_mgr_new(TASK, TTL_MS, NULL, NULL);
  tf_rendezvous *r = step_of(m, 5);
  tf_cancel c;
  tf_cancel_init(&c);
  char *k = key(LOCAL, "w"), *k2 = key(LOCAL, "buffered");
  tf_tensor *t = scalar(5.0f);
  send_ok(r, k2, t, false);
  ck_assert_int_eq(tf_rdv_mgr_buffered_bytes(m), 4);
  got g;
  got_init(&g);
  r->recv(r, k, &c, recv_cb, &g);
  pthread_t th;
  pthread_create(&th, NULL, abort_later, m);
  got_wait(&g);
  pthread_join(th, NULL);
  ck_assert_int_eq(g.st.code, TF_UNAVAILABLE);
  ck_assert_str_eq(g.st.msg, "worker 3 went away");
  ck_assert_int_eq(tf_rdv_mgr_buffered_bytes(m), 0); /* dropped */
  /* Later sends, recvs and deliveries fail with the reason. */
  got s, g2;
  got_init(&s);
  got_init(&g2);
  r->send(r, k, t, false, send_cb, &s);
  ck_assert_int_eq(s.st.code, TF_UNAVAILABLE);
  r->recv(r, k2, &c, recv_cb, &g2);
  ck_assert_int_eq(g2.st.code, TF_UNAVAILABLE);
  tf_status st;
  tf_status_init(&st);
  ck_assert_int_eq(tf_rdv_mgr_deliver(m, 5, k, t, false, &st), TF_ABORTED);
  ck_assert_ptr_nonnull(strstr(st.msg, "worker 3 went away"));
  tf_tensor_unref(t);
  got_fini(&g);
  got_fini(&s);
  got_fini(&g2);
  tf_cancel_fini(&c);
  free(k);
  free(k2);
  tf_rdv_step_unref(r);
  tf_rdv_mgr_free(m);
}
END_TEST

START_TEST(test_cancel_ends_wait) {
  tf_rdv_mgr *m = tf_rdv_mgr_new(TASK, TTL_MS, NULL, NULL);
  tf_rendezvous *r = step_of(m, 6);
  tf_cancel c;
  tf_cancel_init(&c);
  char *k = key(LOCAL, "c");
  got g;
  got_init(&g);
  r->recv(r, k, &c, recv_cb, &g);
  ck_assert_int_eq(g.calls, 0);
  tf_cancel_start(&c, TF_DEADLINE_EXCEEDED, "too slow");
  got_wait(&g);
  ck_assert_int_eq(g.st.code, TF_DEADLINE_EXCEEDED);
  ck_assert_str_eq(g.st.msg, "too slow");
  /* The key is free again: a send is buffered, not handed to the waiter. */
  tf_tensor *t = scalar(1.0f);
  send_ok(r, k, t, false);
  ck_assert_int_eq(tf_rdv_mgr_buffered_bytes(m), 4);
  /* A recv on a cancelled step fails at once. */
  got g2;
  got_init(&g2);
  r->recv(r, k, &c, recv_cb, &g2);
  ck_assert_int_eq(g2.calls, 1);
  ck_assert_int_eq(g2.st.code, TF_DEADLINE_EXCEEDED);
  tf_tensor_unref(t);
  got_fini(&g);
  got_fini(&g2);
  tf_cancel_fini(&c);
  free(k);
  tf_rdv_step_unref(r);
  tf_rdv_mgr_free(m);
  ck_assert_int_eq(g.calls, 1);
}
END_TEST

START_TEST(test_cleanup_tombstones) {
  tf_rdv_mgr *m = tf_rdv_mgr_new(TASK, TTL_MS, NULL, NULL);
  tf_rendezvous *r = step_of(m, 7);
  char *k = key(LOCAL, "x");
  got g;
  got_init(&g);
  r->recv(r, k, NULL, recv_cb, &g);
  tf_rdv_mgr_cleanup(m, 7);
  got_wait(&g);
  ck_assert_int_eq(g.st.code, TF_CANCELLED);
  ck_assert_str_eq(g.st.msg, "step 7 cleaned up");
  ck_assert_int_eq(tf_rdv_mgr_live_steps(m), 0);
  tf_tensor *t = scalar(1.0f);
  tf_status st;
  tf_status_init(&st);
  ck_assert_int_eq(tf_rdv_mgr_deliver(m, 7, k, t, false, &st), TF_ABORTED);
  ck_assert_ptr_nonnull(strstr(st.msg, "step 7 was already cleaned up"));
  ck_assert_ptr_null(tf_rdv_mgr_step(m, 7, &st));
  ck_assert_int_eq(st.code, TF_ABORTED);
  ck_assert_int_eq(tf_rdv_mgr_live_steps(m), 0);
  /* Cleanup of a step never seen also refuses its late pushes. */
  tf_rdv_mgr_cleanup(m, 70);
  ck_assert_int_eq(tf_rdv_mgr_deliver(m, 70, k, t, false, &st), TF_ABORTED);
  /* The old table still works as an aborted one for its holder. */
  got s;
  got_init(&s);
  r->send(r, k, t, false, send_cb, &s);
  ck_assert_int_eq(s.st.code, TF_CANCELLED);
  tf_tensor_unref(t);
  got_fini(&g);
  got_fini(&s);
  free(k);
  tf_rdv_step_unref(r);
  tf_rdv_mgr_free(m);
}
END_TEST

START_TEST(test_ttl_sweep) {
  tf_rdv_mgr *m = tf_rdv_mgr_new(TASK, TTL_MS, NULL, NULL);
  int64_t t0 = tf__now_ns();
  tf_rendezvous *r = step_of(m, 8);
  char *k = key(LOCAL, "late");
  got g;
  got_init(&g);
  r->recv(r, k, NULL, recv_cb, &g);
  tf_status st;
  tf_status_init(&st);
  tf_tensor *t = scalar(1.0f);
  ck_assert_int_eq(tf_rdv_mgr_deliver(m, 9, k, t, false, &st), TF_OK);
  ck_assert_int_eq(tf_rdv_mgr_live_steps(m), 2);
  ck_assert_int_eq(tf_rdv_mgr_sweep(m, t0), 0);
  ck_assert_int_eq(tf_rdv_mgr_sweep(m, tf__now_ns() + 500LL * 1000000), 0);
  int64_t later = tf__now_ns() + (TTL_MS + 1) * 1000000LL;
  /* Step 9 (a push nobody ran for) is an orphan and expires; step 8 is
   * held by its RunGraph and a waiting _Recv, so it is a running step and
   * stays however long it waits (its deadline bounds it). */
  ck_assert_int_eq(tf_rdv_mgr_sweep(m, later), 1);
  ck_assert_int_eq(tf_rdv_mgr_live_steps(m), 1);
  ck_assert_int_eq(tf_rdv_mgr_sweep(m, later), 0);
  tf_rdv_mgr_cleanup(m, 8);
  got_wait(&g);
  ck_assert_int_eq(g.st.code, TF_CANCELLED);
  ck_assert_ptr_nonnull(strstr(g.st.msg, "step 8"));
  ck_assert_int_eq(tf_rdv_mgr_live_steps(m), 0);
  ck_assert_int_eq(tf_rdv_mgr_buffered_bytes(m), 0);
  /* Tombstones refuse pushes for one more TTL, then go. */
  ck_assert_int_eq(tf_rdv_mgr_deliver(m, 9, k, t, false, &st), TF_ABORTED);
  ck_assert_int_eq(tf_rdv_mgr_sweep(m, later + 2 * TTL_MS * 1000000LL), 0);
  tf_rendezvous *again = tf_rdv_mgr_step(m, 9, &st);
  ck_assert_msg(again != NULL, "%s", st.msg);
  tf_rdv_step_unref(again);
  tf_tensor_unref(t);
  got_fini(&g);
  free(k);
  tf_rdv_step_unref(r);
  tf_rdv_mgr_free(m);
}
END_TEST

START_TEST(test_buffered_bytes) {
  tf_rdv_mgr *m = tf_rdv_mgr_new(TASK, TTL_MS, NULL, NULL);
  tf_rendezvous *r = step_of(m, 10);
  tf_tensor *big = tt_rand(TF_FLOAT32, tf_shape_of(2, 2, 50), -1, 1);
  tf_tensor *small = tt_rand(TF_INT64, tf_shape_of(1, 3), 0, 9);
  char *k1 = key(LOCAL, "big"), *k2 = key(LOCAL, "small");
  send_ok(r, k1, big, false);
  tf_status st;
  tf_status_init(&st);
  ck_assert_int_eq(tf_rdv_mgr_deliver(m, 11, k2, small, false, &st), TF_OK);
  ck_assert_int_eq(tf_rdv_mgr_buffered_bytes(m), 400 + 24);
  got g;
  got_init(&g);
  r->recv(r, k1, NULL, recv_cb, &g);
  ck_assert_ptr_eq(g.t, big);
  ck_assert_int_eq(tf_rdv_mgr_buffered_bytes(m), 24);
  tf_rdv_mgr_cleanup(m, 11);
  ck_assert_int_eq(tf_rdv_mgr_buffered_bytes(m), 0);
  tf_tensor_unref(big);
  tf_tensor_unref(small);
  got_fini(&g);
  free(k1);
  free(k2);
  tf_rdv_step_unref(r);
  tf_rdv_mgr_free(m);
}
END_TEST

/* ---- remote sends ---------------------------------------------------------- */

typedef struct remote_log {
  int calls;
  uint64_t step;
  char key[256], dst[128];
  tf_tensor *t;
  bool dead;
} remote_log;

static void remote_fn(void *arg, uint64_t step_id, const char *key,
                      const tf_rdv_key *k, tf_tensor *t, bool is_dead,
                      tf_rdv_send_done done, void *done_arg) {
  remote_log *l = arg;
  l->calls++;
  l->step = step_id;
  snprintf(l->key, sizeof l->key, "%s", key);
  snprintf(l->dst, sizeof l->dst, "%s", k->dst_device);
  l->t = t;
  l->dead = is_dead;
  tf_status st = {TF_OK, ""};
  if (strstr(key, "fail") != NULL) tf_status_set(&st, TF_UNAVAILABLE, "peer down");
  done(done_arg, &st);
}

START_TEST(test_remote_hook) {
  remote_log l = {0};
  tf_rdv_mgr *m = tf_rdv_mgr_new(TASK, TTL_MS, remote_fn, &l);
  tf_rendezvous *r = step_of(m, 12);
  tf_tensor *t = scalar(4.0f);
  /* task:10 is another task even though "task:1" is its prefix. */
  const char *foreign[] = {OTHER, "/job:worker/replica:0/task:10/device:CPU:0",
                           "/job:worker/replica:0/task:1"};
  for (int i = 0; i < 3; i++) {
    char *k = key(foreign[i], "r:0");
    send_ok(r, k, t, false);
    ck_assert_int_eq(l.calls, i + 1);
    ck_assert_uint_eq(l.step, 12);
    ck_assert_str_eq(l.key, k);
    ck_assert_str_eq(l.dst, foreign[i]);
    ck_assert_ptr_eq(l.t, t);
    free(k);
  }
  char *kd = key(OTHER, "dead"), *kf = key(OTHER, "fail"), *kl = key(LOCAL, "l");
  send_ok(r, kd, t, true);
  ck_assert(l.dead);
  ck_assert_ptr_null(l.t);
  got s;
  got_init(&s);
  r->send(r, kf, t, false, send_cb, &s);
  ck_assert_int_eq(s.st.code, TF_UNAVAILABLE);
  send_ok(r, kl, t, false); /* local: not the hook */
  ck_assert_int_eq(l.calls, 5);
  ck_assert_int_eq(tf_rdv_mgr_buffered_bytes(m), 4);
  /* A delivery must be for this task. */
  tf_status st;
  tf_status_init(&st);
  ck_assert_int_eq(tf_rdv_mgr_deliver(m, 12, kd, t, false, &st), TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "not on this task"));
  ck_assert_int_eq(tf_rdv_mgr_deliver(m, 12, "nonsense", t, false, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "'nonsense'"));
  got_fini(&s);
  free(kd);
  free(kf);
  free(kl);
  tf_tensor_unref(t);
  tf_rdv_step_unref(r);
  tf_rdv_mgr_free(m);
}
END_TEST

START_TEST(test_no_remote_and_bad_keys) {
  tf_rdv_mgr *m = tf_rdv_mgr_new(TASK, TTL_MS, NULL, NULL);
  tf_rendezvous *r = step_of(m, 13);
  tf_tensor *t = scalar(4.0f);
  char *k = key(OTHER, "x");
  got s;
  got_init(&s);
  r->send(r, k, t, false, send_cb, &s);
  ck_assert_int_eq(s.st.code, TF_UNIMPLEMENTED);
  ck_assert_ptr_nonnull(strstr(s.st.msg, OTHER));
  s.calls = 0;
  r->send(r, "a;b", t, false, send_cb, &s);
  ck_assert_int_eq(s.calls, 1);
  ck_assert_int_eq(s.st.code, TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(s.st.msg, "'a;b'"));
  got_fini(&s);
  free(k);
  tf_tensor_unref(t);
  tf_rdv_step_unref(r);
  tf_rdv_mgr_free(m);
}
END_TEST

START_TEST(test_free_wakes_waiters) {
  tf_rdv_mgr *m = tf_rdv_mgr_new(TASK, TTL_MS, NULL, NULL);
  tf_rendezvous *r = step_of(m, 14);
  tf_cancel c;
  tf_cancel_init(&c);
  char *k = key(LOCAL, "f");
  got g;
  got_init(&g);
  r->recv(r, k, &c, recv_cb, &g);
  tf_rdv_mgr_free(m); /* r still holds the table (and the manager) */
  got_wait(&g);
  ck_assert_int_eq(g.st.code, TF_CANCELLED);
  ck_assert_str_eq(g.st.msg, "rendezvous manager shut down");
  got s;
  got_init(&s);
  r->send(r, k, NULL, true, send_cb, &s);
  ck_assert_int_eq(s.st.code, TF_CANCELLED);
  tf_rdv_step_unref(r);
  tf_cancel_fini(&c);
  got_fini(&g);
  got_fini(&s);
  free(k);
}
END_TEST

/* ---- concurrency --------------------------------------------------------------- */

#define N_THREADS 8
#define N_KEYS 1000

typedef struct worker_arg {
  tf_rendezvous *r;
  tf_cancel *cancel;
  int id;
  int bad;
  got *g;
} worker_arg;

/* Thread i sends keys "i/j" and receives keys "(i+1)%N/j", alternating,
 * so half the receives wait and half find a value. */
static void *worker(void *p) {
  worker_arg *a = p;
  int peer = (a->id + 1) % N_THREADS;
  for (int j = 0; j < N_KEYS; j++) {
    char name[32];
    snprintf(name, sizeof name, "%d/%d", a->id, j);
    char *k = key(LOCAL, name);
    tf_tensor *t = scalar((float)(a->id * N_KEYS + j));
    got s;
    got_init(&s);
    a->r->send(a->r, k, t, j % 7 == 0, send_cb, &s);
    if (s.calls != 1 || s.st.code != TF_OK) a->bad++;
    got_fini(&s);
    tf_tensor_unref(t);
    free(k);
    snprintf(name, sizeof name, "%d/%d", peer, j);
    k = key(LOCAL, name);
    a->r->recv(a->r, k, a->cancel, recv_cb, &a->g[j]);
    free(k);
  }
  return NULL;
}

START_TEST(test_threads) {
  tf_rdv_mgr *m = tf_rdv_mgr_new(TASK, 60000, NULL, NULL);
  tf_rendezvous *r = step_of(m, 15);
  tf_cancel c;
  tf_cancel_init(&c);
  pthread_t th[N_THREADS];
  worker_arg args[N_THREADS];
  for (int i = 0; i < N_THREADS; i++) {
    args[i] = (worker_arg){r, &c, i, 0, calloc(N_KEYS, sizeof(got))};
    for (int j = 0; j < N_KEYS; j++) got_init(&args[i].g[j]);
  }
  for (int i = 0; i < N_THREADS; i++) pthread_create(&th[i], NULL, worker, &args[i]);
  for (int i = 0; i < N_THREADS; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < N_THREADS; i++) {
    ck_assert_int_eq(args[i].bad, 0);
    int peer = (i + 1) % N_THREADS;
    for (int j = 0; j < N_KEYS; j++) {
      got *g = &args[i].g[j];
      got_wait(g);
      ck_assert_msg(g->st.code == TF_OK, "%d/%d: %s", peer, j, g->st.msg);
      ck_assert_int_eq(g->dead, j % 7 == 0);
      if (!g->dead) {
        ck_assert_float_eq(((float *)g->t->data)[0], (float)(peer * N_KEYS + j));
      }
      got_fini(g);
    }
    free(args[i].g);
  }
  ck_assert_int_eq(tf_rdv_mgr_buffered_bytes(m), 0);
  tf_cancel_fini(&c);
  tf_rdv_step_unref(r);
  tf_rdv_mgr_free(m);
}
END_TEST

/* Receivers racing a cancel: every receive ends exactly once, with the
 * value or with the cancel's reason. */
typedef struct race_arg {
  tf_rendezvous *r;
  tf_cancel *c;
  got *g;
  int n;
} race_arg;

static void *race_recv(void *p) {
  race_arg *a = p;
  for (int j = 0; j < a->n; j++) {
    char name[32];
    snprintf(name, sizeof name, "race/%d", j);
    char *k = key(LOCAL, name);
    a->r->recv(a->r, k, a->c, recv_cb, &a->g[j]);
    free(k);
  }
  return NULL;
}

START_TEST(test_cancel_race) {
  enum { N = 2000 };
  tf_rdv_mgr *m = tf_rdv_mgr_new(TASK, 60000, NULL, NULL);
  tf_rendezvous *r = step_of(m, 16);
  tf_cancel c;
  tf_cancel_init(&c);
  got *g = calloc(N, sizeof *g);
  for (int j = 0; j < N; j++) got_init(&g[j]);
  race_arg a = {r, &c, g, N};
  pthread_t th;
  pthread_create(&th, NULL, race_recv, &a);
  tf_tensor *t = scalar(1.0f);
  for (int j = 0; j < N; j++) {
    char name[32];
    snprintf(name, sizeof name, "race/%d", j);
    char *k = key(LOCAL, name);
    got s;
    got_init(&s);
    r->send(r, k, t, false, send_cb, &s);
    got_fini(&s);
    free(k);
    if (j == N / 2) tf_cancel_start(&c, TF_CANCELLED, "race");
  }
  pthread_join(th, NULL);
  int ok = 0, cancelled = 0;
  for (int j = 0; j < N; j++) {
    got_wait(&g[j]);
    if (g[j].st.code == TF_OK) {
      ok++;
      ck_assert_ptr_eq(g[j].t, t);
    } else {
      ck_assert_int_eq(g[j].st.code, TF_CANCELLED);
      ck_assert_str_eq(g[j].st.msg, "race");
      cancelled++;
    }
    got_fini(&g[j]);
  }
  ck_assert_int_eq(ok + cancelled, N);
  free(g);
  tf_tensor_unref(t);
  tf_cancel_fini(&c);
  tf_rdv_step_unref(r);
  tf_rdv_mgr_free(m);
}
END_TEST

/* forget ends the step like cleanup (the waiter gets CANCELLED, buffered
 * values are released) but leaves no tombstone: the id can be used again
 * and nothing stays behind. */
START_TEST(test_forget_leaves_nothing) {
  tf_rdv_mgr *m = tf_rdv_mgr_new(TASK, TTL_MS, NULL, NULL);
  tf_rendezvous *r = step_of(m, 5);
  char *ka = key(LOCAL, "a:0"), *kb = key(LOCAL, "b:0");
  tf_tensor *t = scalar(1.0f);
  send_ok(r, ka, t, false);
  got g;
  got_init(&g);
  r->recv(r, kb, NULL, recv_cb, &g);
  tf_rdv_mgr_forget(m, 5);
  got_wait(&g);
  ck_assert_int_eq(g.st.code, TF_CANCELLED);
  ck_assert_msg(strstr(g.st.msg, "step 5 ended") != NULL, "%s", g.st.msg);
  ck_assert_int_eq(tf_rdv_mgr_live_steps(m), 0);
  ck_assert_int_eq(tf_rdv_mgr_buffered_bytes(m), 0);
  tf_rdv_step_unref(r);
  tf_rdv_mgr_forget(m, 6); /* an unknown step: nothing to do */
  r = step_of(m, 5);       /* no tombstone refuses the id */
  send_ok(r, ka, t, false);
  tf_rdv_mgr_forget(m, 5);
  tf_rdv_step_unref(r);
  ck_assert_int_eq(tf_rdv_mgr_live_steps(m), 0);
  tf_tensor_unref(t);
  got_fini(&g);
  free(ka);
  free(kb);
  tf_rdv_mgr_free(m);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("rendezvous_mgr");
  TCase *tc = tcase_create("tables");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_send_then_recv);
  tcase_add_test(tc, test_recv_then_send);
  tcase_add_test(tc, test_dead_values);
  tcase_add_test(tc, test_duplicate_send);
  tcase_add_test(tc, test_abort_wakes_waiter);
  tcase_add_test(tc, test_cancel_ends_wait);
  tcase_add_test(tc, test_cleanup_tombstones);
  tcase_add_test(tc, test_ttl_sweep);
  tcase_add_test(tc, test_buffered_bytes);
  tcase_add_test(tc, test_remote_hook);
  tcase_add_test(tc, test_no_remote_and_bad_keys);
  tcase_add_test(tc, test_free_wakes_waiters);
  tcase_add_test(tc, test_threads);
  tcase_add_test(tc, test_cancel_race);
  tcase_add_test(tc, test_forget_leaves_nothing);
  suite_add_tcase(s, tc);
  return s;
}
