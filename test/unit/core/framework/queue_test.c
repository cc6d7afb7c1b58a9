/* queue_test.c: the queue resource (lib/core/framework/queue.c) driven directly:
 * waiters served in FIFO order, EnqueueMany moving in as room appears,
 * DequeueMany never returning a partial batch (taken elements go back on
 * close and cancel), close semantics and messages, cancellation through a
 * tf_cancel (before and while waiting, racing with completions),
 * RandomShuffle against an independent replay of its Philox picks, and
 * input validation. The session-level behaviour is in
 * test/unit/devices/cpu/cpu_queue_test.c. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/core/base/philox.h"
#include "lib/core/framework/queue.h"
#include "test/unit/testutil.h"

/* One request's outcome; waitable from another thread. */
typedef struct rec {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int calls;
  tf_status st;
  tf_tensor *tuple[4];
} rec;

static void rec_init(rec *r) {
  memset(r, 0, sizeof *r);
  pthread_mutex_init(&r->mu, NULL);
  pthread_cond_init(&r->cv, NULL);
}

static void rec_fini(rec *r) {
  for (int j = 0; j < 4; j++) tf_tensor_unref(r->tuple[j]);
  pthread_mutex_destroy(&r->mu);
  pthread_cond_destroy(&r->cv);
}

static void on_done(void *arg, const tf_status *st, tf_tensor **tuple) {
  rec *r = arg;
  pthread_mutex_lock(&r->mu);
  r->calls++;
  r->st = *st;
  /* every queue dequeued from here has one component */
  if (tuple != NULL) r->tuple[0] = tuple[0];
  pthread_cond_broadcast(&r->cv);
  pthread_mutex_unlock(&r->mu);
}

/* Waits (at most 2 s) for r's callback; false on timeout. */
static bool rec_wait(rec *r) {
  struct timespec dl;
  clock_gettime(CLOCK_REALTIME, &dl);
  dl.tv_sec += 2;
  pthread_mutex_lock(&r->mu);
  int rc = 0;
  while (r->calls == 0 && rc == 0) rc = pthread_cond_timedwait(&r->cv, &r->mu, &dl);
  bool ok = r->calls > 0;
  pthread_mutex_unlock(&r->mu);
  return ok;
}

static const tf_dtype i32[1] = {TF_INT32};

static tf_queue *mkq(tf_queue_kind kind, int n, const tf_dtype *dt,
                     const tf_shape *shapes, int64_t cap) {
  tf_queue_config c = {.kind = kind, .n_components = n, .dtypes = dt,
                       .shapes = shapes, .capacity = cap};
  tf_status st;
  ck_assert_msg(tf_queue_config_check(&c, &st) == TF_OK, "%s", st.msg);
  return tf_queue_new("", "q", &c);
}

static void qfree(tf_queue *q) { tf_resource_unref(tf_queue_resource(q)); }

/* Enqueues the int32 scalar v; r records the outcome. */
static void enq(tf_queue *q, int32_t v, tf_cancel *c, rec *r) {
  tf_tensor *t = tf_tensor_scalar_i32(v);
  tf_status st;
  ck_assert_msg(tf_queue_enqueue(q, &t, 1, false, c, on_done, r, &st) == TF_OK,
                "%s", st.msg);
  tf_tensor_unref(t);
}

static void deq(tf_queue *q, int64_t n, tf_cancel *c, rec *r) {
  tf_status st;
  ck_assert_msg(tf_queue_dequeue(q, n, c, on_done, r, &st) == TF_OK, "%s", st.msg);
}

/* Enqueue that must finish at once. */
static void enq_now(tf_queue *q, int32_t v) {
  rec r;
  rec_init(&r);
  enq(q, v, NULL, &r);
  ck_assert_int_eq(r.calls, 1);
  ck_assert_msg(r.st.code == TF_OK, "%s", r.st.msg);
  rec_fini(&r);
}

/* Dequeue of one int32 that must finish at once; returns the value. */
static int32_t deq_now(tf_queue *q) {
  rec r;
  rec_init(&r);
  deq(q, -1, NULL, &r);
  ck_assert_int_eq(r.calls, 1);
  ck_assert_msg(r.st.code == TF_OK, "%s", r.st.msg);
  int32_t v = *(int32_t *)r.tuple[0]->data;
  rec_fini(&r);
  return v;
}

static int32_t at(const tf_tensor *t, int64_t i) { return ((const int32_t *)t->data)[i]; }

START_TEST(test_fifo_blocking_and_order) {
  tf_queue *q = mkq(TF_QUEUE_FIFO, 1, i32, NULL, 2);
  enq_now(q, 10);
  enq_now(q, 11);
  rec full;
  rec_init(&full);
  enq(q, 12, NULL, &full); /* waits: the queue is full */
  ck_assert_int_eq(full.calls, 0);
  ck_assert_int_eq(tf_queue_size(q), 2);
  ck_assert_int_eq(deq_now(q), 10); /* makes room: the enqueue finishes */
  ck_assert_int_eq(full.calls, 1);
  ck_assert_int_eq(full.st.code, TF_OK);
  ck_assert_int_eq(deq_now(q), 11);
  ck_assert_int_eq(deq_now(q), 12);
  /* dequeues wait in request order */
  rec a, b;
  rec_init(&a);
  rec_init(&b);
  deq(q, -1, NULL, &a);
  deq(q, -1, NULL, &b);
  ck_assert(a.calls == 0 && b.calls == 0);
  enq_now(q, 20);
  ck_assert(a.calls == 1 && b.calls == 0 && at(a.tuple[0], 0) == 20);
  enq_now(q, 21);
  ck_assert(b.calls == 1 && at(b.tuple[0], 0) == 21);
  ck_assert_int_eq(tf_queue_size(q), 0);
  rec_fini(&a);
  rec_fini(&b);
  rec_fini(&full);
  qfree(q);
}
END_TEST

/* EnqueueMany moves in element by element as room appears; DequeueMany
 * takes elements as they come but completes only with all n. */
START_TEST(test_many_progress) {
  tf_shape scalar = tf_shape_scalar();
  tf_queue *q = mkq(TF_QUEUE_FIFO, 1, i32, &scalar, 3);
  tf_tensor *five = tf_tensor_vec_i32(5, (int32_t[]){0, 1, 2, 3, 4});
  rec m, one, dm;
  rec_init(&m);
  rec_init(&one);
  rec_init(&dm);
  tf_status st;
  ck_assert_int_eq(tf_queue_enqueue(q, &five, 1, true, NULL, on_done, &m, &st), TF_OK);
  tf_tensor_unref(five);
  ck_assert_int_eq(m.calls, 0);
  ck_assert_int_eq(tf_queue_size(q), 3); /* rows 0..2 went in */
  enq(q, 99, NULL, &one);                /* waits behind the EnqueueMany */
  ck_assert_int_eq(one.calls, 0);
  deq(q, 4, NULL, &dm);
  ck_assert_int_eq(dm.calls, 1);
  ck_assert_msg(dm.st.code == TF_OK, "%s", dm.st.msg);
  tt_assert_shape(dm.tuple[0], 1, 4);
  for (int i = 0; i < 4; i++) ck_assert_int_eq(at(dm.tuple[0], i), i);
  ck_assert(m.calls == 1 && m.st.code == TF_OK);
  ck_assert(one.calls == 1 && one.st.code == TF_OK);
  ck_assert_int_eq(tf_queue_size(q), 2);
  ck_assert_int_eq(deq_now(q), 4);
  ck_assert_int_eq(deq_now(q), 99);
  /* a DequeueMany bigger than the capacity still completes */
  rec big;
  rec_init(&big);
  deq(q, 7, NULL, &big);
  for (int i = 0; i < 7; i++) {
    ck_assert_int_eq(big.calls, 0);
    enq_now(q, 100 + i);
  }
  ck_assert_int_eq(big.calls, 1);
  for (int i = 0; i < 7; i++) ck_assert_int_eq(at(big.tuple[0], i), 100 + i);
  /* DequeueMany(0) gives an empty batch at once */
  rec zero;
  rec_init(&zero);
  deq(q, 0, NULL, &zero);
  ck_assert(zero.calls == 1 && zero.st.code == TF_OK);
  tt_assert_shape(zero.tuple[0], 1, 0);
  rec_fini(&zero);
  rec_fini(&big);
  rec_fini(&m);
  rec_fini(&one);
  rec_fini(&dm);
  qfree(q);
}
END_TEST

START_TEST(test_close_semantics) {
  tf_shape scalar = tf_shape_scalar();
  tf_queue *q = mkq(TF_QUEUE_FIFO, 1, i32, &scalar, 1);
  enq_now(q, 1);
  rec pend, many;
  rec_init(&pend);
  rec_init(&many);
  enq(q, 2, NULL, &pend); /* waits for room */
  tf_queue_close(q, false);
  ck_assert(tf_queue_is_closed(q));
  ck_assert_int_eq(pend.calls, 0); /* pending enqueues go on */
  rec late;
  rec_init(&late);
  enq(q, 3, NULL, &late);
  ck_assert_int_eq(late.calls, 1);
  ck_assert_int_eq(late.st.code, TF_CANCELLED);
  ck_assert_str_eq(late.st.msg, "FIFOQueue 'q' is closed");
  /* DequeueMany(3): takes 1, then 2 arrives, then nothing more can come */
  deq(q, 3, NULL, &many);
  ck_assert_int_eq(pend.calls, 1);
  ck_assert_int_eq(pend.st.code, TF_OK);
  ck_assert_int_eq(many.calls, 1);
  ck_assert_int_eq(many.st.code, TF_OUT_OF_RANGE);
  ck_assert_str_eq(many.st.msg, "FIFOQueue 'q' is closed and has insufficient "
                   "elements (requested 3, current size 2)");
  ck_assert_ptr_null(many.tuple[0]);
  /* the taken elements went back, in order */
  ck_assert_int_eq(tf_queue_size(q), 2);
  ck_assert_int_eq(deq_now(q), 1);
  ck_assert_int_eq(deq_now(q), 2);
  rec end;
  rec_init(&end);
  deq(q, -1, NULL, &end);
  ck_assert(end.calls == 1 && end.st.code == TF_OUT_OF_RANGE);
  ck_assert_ptr_nonnull(strstr(end.st.msg, "(requested 1, current size 0)"));
  tf_queue_close(q, false); /* again: a no-op */
  rec_fini(&end);
  rec_fini(&late);
  rec_fini(&many);
  rec_fini(&pend);
  qfree(q);
  /* cancel_pending_enqueues fails the waiting enqueue */
  q = mkq(TF_QUEUE_FIFO, 1, i32, NULL, 1);
  enq_now(q, 1);
  rec_init(&pend);
  enq(q, 2, NULL, &pend);
  tf_queue_close(q, true);
  ck_assert(pend.calls == 1 && pend.st.code == TF_CANCELLED);
  ck_assert_ptr_nonnull(strstr(pend.st.msg, "FIFOQueue 'q' is closed"));
  ck_assert_int_eq(deq_now(q), 1);
  rec_fini(&pend);
  qfree(q);
}
END_TEST

START_TEST(test_cancellation) {
  tf_shape scalar = tf_shape_scalar();
  tf_queue *q = mkq(TF_QUEUE_FIFO, 1, i32, &scalar, 2);
  tf_cancel c;
  tf_cancel_init(&c);
  /* a partial DequeueMany is cancelled: its elements go back in order */
  enq_now(q, 1);
  enq_now(q, 2);
  rec m, after;
  rec_init(&m);
  rec_init(&after);
  deq(q, 3, &c, &m);
  ck_assert_int_eq(m.calls, 0);
  ck_assert_int_eq(tf_queue_size(q), 0);
  deq(q, -1, NULL, &after); /* waits behind it */
  ck_assert(tf_cancel_start(&c, TF_DEADLINE_EXCEEDED, "deadline passed"));
  ck_assert_int_eq(m.calls, 1);
  ck_assert_int_eq(m.st.code, TF_DEADLINE_EXCEEDED);
  ck_assert_str_eq(m.st.msg, "FIFOQueue 'q': dequeue cancelled: deadline passed");
  /* the restored elements reach the next waiter at once */
  ck_assert(after.calls == 1 && at(after.tuple[0], 0) == 1);
  ck_assert_int_eq(tf_queue_size(q), 1);
  /* registering on a cancelled step fails at once */
  rec late;
  rec_init(&late);
  enq_now(q, 3); /* full now */
  enq(q, 4, &c, &late);
  ck_assert(late.calls == 1 && late.st.code == TF_DEADLINE_EXCEEDED);
  ck_assert_ptr_nonnull(strstr(late.st.msg, "enqueue cancelled"));
  ck_assert_int_eq(tf_queue_size(q), 2);
  tf_cancel_fini(&c);
  /* completed normally: deregistered, a later cancel does nothing */
  tf_cancel c2;
  tf_cancel_init(&c2);
  rec ok;
  rec_init(&ok);
  deq(q, 3, &c2, &ok);
  ck_assert_int_eq(ok.calls, 0);
  ck_assert_int_eq(c2.n_cbs, 1); /* registered while waiting */
  enq_now(q, 5);
  ck_assert(ok.calls == 1 && ok.st.code == TF_OK);
  ck_assert_int_eq(c2.n_cbs, 0); /* deregistered on completion */
  tf_cancel_start(&c2, TF_CANCELLED, "late");
  ck_assert_int_eq(ok.calls, 1);
  int32_t want[3] = {2, 3, 5};
  for (int i = 0; i < 3; i++) ck_assert_int_eq(at(ok.tuple[0], i), want[i]);
  tf_cancel_fini(&c2);
  rec_fini(&ok);
  rec_fini(&late);
  rec_fini(&after);
  rec_fini(&m);
  qfree(q);
}
END_TEST

/* The order RandomShuffle must produce: TF's pick (one 32-bit Philox
 * sample modulo the size, the last element moved into the hole), replayed
 * here on a plain array. */
static void replay_shuffle(uint64_t seed, uint64_t seed2, int n, int32_t *out) {
  int32_t *v = malloc((size_t)n * sizeof *v);
  for (int i = 0; i < n; i++) v[i] = i;
  tf_philox g;
  tf_philox_single s;
  tf_philox_init(&g, seed, seed2);
  tf_philox_single_init(&s, &g);
  for (int k = 0, size = n; k < n; k++, size--) {
    uint32_t idx = tf_philox_single_next(&s) % (uint32_t)size;
    out[k] = v[idx];
    v[idx] = v[size - 1];
  }
  free(v);
}

static tf_queue *mkrs(int64_t seed, int64_t seed2, int64_t min_after, int64_t cap) {
  tf_queue_config c = {.kind = TF_QUEUE_RANDOM_SHUFFLE, .n_components = 1,
                       .dtypes = i32, .capacity = cap,
                       .min_after_dequeue = min_after, .seed = seed, .seed2 = seed2};
  tf_status st;
  ck_assert_msg(tf_queue_config_check(&c, &st) == TF_OK, "%s", st.msg);
  return tf_queue_new("", "rs", &c);
}

START_TEST(test_random_shuffle) {
  enum { N = 200 };
  int32_t want[N], got[N], other[N];
  replay_shuffle(42, 7, N, want);
  tf_queue *q = mkrs(42, 7, 0, -1);
  for (int i = 0; i < N; i++) enq_now(q, i);
  for (int i = 0; i < N; i++) got[i] = deq_now(q);
  qfree(q);
  ck_assert_mem_eq(got, want, sizeof got);
  /* a permutation, and not the identity */
  int seen[N] = {0}, fixed = 0;
  for (int i = 0; i < N; i++) {
    seen[got[i]]++;
    fixed += got[i] == i;
  }
  for (int i = 0; i < N; i++) ck_assert_int_eq(seen[i], 1);
  ck_assert_int_lt(fixed, N / 4);
  /* seed = seed2 = 0 draws a fresh seed per queue */
  tf_queue *a = mkrs(0, 0, 0, -1), *b = mkrs(0, 0, 0, -1);
  for (int i = 0; i < N; i++) {
    enq_now(a, i);
    enq_now(b, i);
  }
  for (int i = 0; i < N; i++) {
    got[i] = deq_now(a);
    other[i] = deq_now(b);
  }
  ck_assert(memcmp(got, other, sizeof got) != 0);
  qfree(a);
  qfree(b);
}
END_TEST

START_TEST(test_min_after_dequeue) {
  tf_queue *q = mkrs(3, 0, 2, 10);
  for (int i = 0; i < 3; i++) enq_now(q, i);
  int32_t first = deq_now(q); /* size 3 > 2: one may go */
  rec r;
  rec_init(&r);
  deq(q, -1, NULL, &r); /* size 2 <= min_after_dequeue: waits */
  ck_assert_int_eq(r.calls, 0);
  enq_now(q, 3);
  ck_assert_int_eq(r.calls, 1);
  ck_assert_int_eq(tf_queue_size(q), 2);
  /* once closed the rest drains */
  tf_queue_close(q, false);
  int32_t rest[2] = {deq_now(q), deq_now(q)};
  int sum = first + at(r.tuple[0], 0) + rest[0] + rest[1];
  ck_assert_int_eq(sum, 0 + 1 + 2 + 3);
  rec end;
  rec_init(&end);
  deq(q, -1, NULL, &end);
  ck_assert_int_eq(end.st.code, TF_OUT_OF_RANGE);
  ck_assert_ptr_nonnull(strstr(end.st.msg, "RandomShuffleQueue 'rs' is closed"));
  rec_fini(&end);
  rec_fini(&r);
  qfree(q);
}
END_TEST

START_TEST(test_validation) {
  tf_dtype two[2] = {TF_FLOAT32, TF_INT32};
  tf_shape shapes[2] = {tf_shape_of(1, 3), tf_shape_scalar()};
  tf_queue *q = mkq(TF_QUEUE_FIFO, 2, two, shapes, -1);
  tf_tensor *f3 = tt_rand(TF_FLOAT32, tf_shape_of(1, 3), -1, 1);
  tf_tensor *f4 = tt_rand(TF_FLOAT32, tf_shape_of(1, 4), -1, 1);
  tf_tensor *i0 = tf_tensor_scalar_i32(1);
  tf_tensor *f0 = tf_tensor_scalar_f32(1);
  tf_status st;
  rec r;
  rec_init(&r);
  tf_tensor *t[3] = {f3, f0};
  ck_assert_int_eq(tf_queue_enqueue(q, t, 2, false, NULL, on_done, &r, &st), TF_INVALID_ARGUMENT);
  ck_assert_str_eq(st.msg, "FIFOQueue 'q': component 1 has type float32, expected int32");
  t[1] = i0;
  ck_assert_int_eq(tf_queue_enqueue(q, t, 1, false, NULL, on_done, &r, &st), TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "expects 2 components, got 1 tensor"));
  t[0] = f4;
  ck_assert_int_eq(tf_queue_enqueue(q, t, 2, false, NULL, on_done, &r, &st), TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "component 0 has shape [4], expected [3]"));
  /* many: element shapes, rank >= 1, equal dim 0 */
  ck_assert_int_eq(tf_queue_enqueue(q, t, 2, true, NULL, on_done, &r, &st), TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "component 0 has element shape [], expected [3]"));
  tf_tensor *m0 = tt_rand(TF_FLOAT32, tf_shape_of(2, 2, 3), -1, 1);
  tf_tensor *m1 = tf_tensor_vec_i32(3, (int32_t[]){1, 2, 3});
  tf_tensor *mm[2] = {m0, i0};
  ck_assert_int_eq(tf_queue_enqueue(q, mm, 2, true, NULL, on_done, &r, &st), TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "component 1 must be at least 1-D"));
  mm[1] = m1;
  ck_assert_int_eq(tf_queue_enqueue(q, mm, 2, true, NULL, on_done, &r, &st), TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "component 1 has 3 elements along dim 0, "
                               "but component 0 has 2"));
  ck_assert_int_eq(r.calls, 0); /* an error return never calls back */
  ck_assert_int_eq(tf_queue_size(q), 0);
  rec_fini(&r);
  tf_tensor *all[] = {f3, f4, i0, f0, m0, m1};
  tt_free(all, 6);
  qfree(q);
}
END_TEST

START_TEST(test_config_and_sharing) {
  tf_dtype two[2] = {TF_FLOAT32, TF_INT32};
  tf_status st;
  /* DequeueMany needs shapes */
  tf_queue *free_shape = mkq(TF_QUEUE_FIFO, 1, i32, NULL, -1);
  ck_assert_int_eq(tf_queue_dequeue(free_shape, 2, NULL, on_done, NULL, &st), TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "requires the components to have specified shapes"));
  /* configs */
  tf_queue_config c = {.kind = TF_QUEUE_FIFO, .n_components = 1, .dtypes = i32,
                       .capacity = 0};
  ck_assert_int_eq(tf_queue_config_check(&c, &st), TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "capacity"));
  c.capacity = 4;
  c.min_after_dequeue = 4;
  ck_assert_int_eq(tf_queue_config_check(&c, &st), TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "min_after_dequeue 4"));
  c.min_after_dequeue = 0;
  tf_shape partial = tf_shape_of(1, -1);
  c.shapes = &partial;
  ck_assert_int_eq(tf_queue_config_check(&c, &st), TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "shapes[0] = [?] is not fully defined"));
  c.shapes = NULL;
  c.n_components = 0;
  ck_assert_int_eq(tf_queue_config_check(&c, &st), TF_INVALID_ARGUMENT);
  /* sharing needs the same types, shapes and capacity */
  c = (tf_queue_config){.kind = TF_QUEUE_FIFO, .n_components = 1, .dtypes = i32,
                        .capacity = -1};
  ck_assert_int_eq(tf_queue_matches(free_shape, &c, &st), TF_OK);
  c.capacity = 5;
  ck_assert_int_eq(tf_queue_matches(free_shape, &c, &st), TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "capacity -1"));
  c.capacity = -1;
  c.dtypes = &two[0];
  ck_assert_int_eq(tf_queue_matches(free_shape, &c, &st), TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "component 0 of type int32, but this op asks for float32"));
  ck_assert_ptr_eq(tf_queue_cast(tf_queue_resource(free_shape)), free_shape);
  ck_assert_ptr_null(tf_queue_cast(NULL));
  qfree(free_shape);
}
END_TEST

/* Strings are deep-copied when rows are split and stacked. */
START_TEST(test_strings_many) {
  tf_dtype s1[1] = {TF_STRING};
  tf_shape es = tf_shape_of(1, 2);
  tf_queue *q = mkq(TF_QUEUE_FIFO, 1, s1, &es, -1);
  tf_tensor *t;
  tf_status st;
  tf_shape sh = tf_shape_of(2, 3, 2);
  ck_assert_int_eq(tf_tensor_new(TF_STRING, &sh, &t, &st), TF_OK);
  const char *words[6] = {"a", "bb", "", "dddd", "e", "ffffff"};
  for (int i = 0; i < 6; i++) tf_tensor_set_string(t, i, words[i], strlen(words[i]), &st);
  rec r, d;
  rec_init(&r);
  rec_init(&d);
  ck_assert_int_eq(tf_queue_enqueue(q, &t, 1, true, NULL, on_done, &r, &st), TF_OK);
  tf_tensor_unref(t);
  ck_assert_int_eq(tf_queue_size(q), 3);
  deq(q, 3, NULL, &d);
  ck_assert(d.calls == 1 && d.st.code == TF_OK);
  tt_assert_shape(d.tuple[0], 2, 3, 2);
  for (int i = 0; i < 6; i++) {
    const tf_string *s = &tf_tensor_strings(d.tuple[0])[i];
    ck_assert_uint_eq(s->len, strlen(words[i]));
    ck_assert(s->len == 0 || memcmp(s->data, words[i], s->len) == 0);
  }
  rec_fini(&r);
  rec_fini(&d);
  qfree(q);
}
END_TEST

/* Producers, consumers and cancellations racing: every element is either
 * dequeued exactly once or still in the queue at the end. */
enum { RACE_PER_PRODUCER = 1000, RACE_PRODUCERS = 2, RACE_CONSUMERS = 4,
       RACE_TRIES = 400 };

typedef struct race {
  tf_queue *q;
  int id;
  int got[RACE_TRIES];
  int n_got;
  bool stuck;
} race;

static void *producer(void *arg) {
  race *r = arg;
  for (int i = 0; i < RACE_PER_PRODUCER; i++) enq_now(r->q, r->id * RACE_PER_PRODUCER + i);
  return NULL;
}

static void *consumer(void *arg) {
  race *r = arg;
  for (int k = 0; k < RACE_TRIES; k++) {
    tf_cancel c;
    tf_cancel_init(&c);
    rec d;
    rec_init(&d);
    deq(r->q, -1, &c, &d);
    if ((k + r->id) % 2 == 0) tf_cancel_start(&c, TF_CANCELLED, "stop");
    if (!rec_wait(&d)) {
      r->stuck = true; /* never freed: the test fails below */
      return NULL;
    }
    if (d.st.code == TF_OK) r->got[r->n_got++] = at(d.tuple[0], 0);
    tf_cancel_fini(&c);
    rec_fini(&d);
  }
  return NULL;
}

START_TEST(test_race_with_cancellation) {
  tf_queue *q = mkq(TF_QUEUE_FIFO, 1, i32, NULL, -1);
  race p[RACE_PRODUCERS], c[RACE_CONSUMERS];
  pthread_t tp[RACE_PRODUCERS], tc[RACE_CONSUMERS];
  for (int i = 0; i < RACE_CONSUMERS; i++) {
    c[i] = (race){.q = q, .id = i};
    pthread_create(&tc[i], NULL, consumer, &c[i]);
  }
  for (int i = 0; i < RACE_PRODUCERS; i++) {
    p[i] = (race){.q = q, .id = i};
    pthread_create(&tp[i], NULL, producer, &p[i]);
  }
  for (int i = 0; i < RACE_PRODUCERS; i++) pthread_join(tp[i], NULL);
  for (int i = 0; i < RACE_CONSUMERS; i++) pthread_join(tc[i], NULL);
  enum { TOTAL = RACE_PER_PRODUCER * RACE_PRODUCERS };
  int *seen = calloc(TOTAL, sizeof *seen);
  int last[RACE_PRODUCERS];
  for (int i = 0; i < RACE_CONSUMERS; i++) {
    ck_assert_msg(!c[i].stuck, "consumer %d waited 2 s for a completion", i);
    for (int j = 0; j < RACE_PRODUCERS; j++) last[j] = -1;
    for (int k = 0; k < c[i].n_got; k++) {
      int v = c[i].got[k];
      seen[v]++;
      /* FIFO: one producer's values reach a consumer in order */
      ck_assert_int_gt(v, last[v / RACE_PER_PRODUCER]);
      last[v / RACE_PER_PRODUCER] = v;
    }
  }
  while (tf_queue_size(q) > 0) seen[deq_now(q)]++;
  for (int v = 0; v < TOTAL; v++) ck_assert_msg(seen[v] == 1, "value %d seen %d times", v, seen[v]);
  free(seen);
  qfree(q);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("queue");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_fifo_blocking_and_order);
  tcase_add_test(tc, test_many_progress);
  tcase_add_test(tc, test_close_semantics);
  tcase_add_test(tc, test_cancellation);
  tcase_add_test(tc, test_random_shuffle);
  tcase_add_test(tc, test_min_after_dequeue);
  tcase_add_test(tc, test_validation);
  tcase_add_test(tc, test_config_and_sharing);
  tcase_add_test(tc, test_strings_many);
  tcase_add_test(tc, test_race_with_cancellation);
  suite_add_tcase(s, tc);
  return s;
}
