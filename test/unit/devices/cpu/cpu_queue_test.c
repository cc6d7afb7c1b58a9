/* cpu_queue_test.c: the queue kernels through a session: FIFO order,
 * EnqueueMany/DequeueMany round trips, RandomShuffle permutations and
 * seeds, a Run blocked on a queue ended by its deadline, by a close from
 * another Run and by a container reset, a blocked enqueue released by a
 * dequeue, shared queues, and producers and consumers moving 10,000
 * elements. Tests that block run with 1 and with 4 inter-op threads. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/core/base/util.h"
#include "test/unit/testutil.h"
#include "tf/session.h"

static const int thread_counts[2] = {1, 4};

/* ---- graph helpers ------------------------------------------------------- */

typedef struct qspec {
  const char *op;            /* "FIFOQueue" or "RandomShuffleQueue" */
  int n;
  const tf_dtype *dtypes;
  const tf_shape *shapes;    /* NULL: none */
  int64_t capacity;
  const char *shared_name;   /* NULL: none */
  int64_t min_after, seed, seed2;
} qspec;

static tf_node *finish(tf_node_builder *b) {
  tf_status st;
  tf_node *n = tf_node_finish(b, &st);
  ck_assert_msg(n != NULL, "%s", st.msg);
  return n;
}

static tf_node *queue(tf_graph *g, const char *name, const qspec *q) {
  tf_node_builder *b = tf_node_begin(g, q->op, name);
  tf_node_set_attr(b, "component_types", tf_attr_type_list(q->dtypes, q->n));
  if (q->shapes) tf_node_set_attr(b, "shapes", tf_attr_shape_list(q->shapes, q->n));
  tf_node_set_attr(b, "capacity", tf_attr_int(q->capacity));
  if (q->shared_name) tf_node_set_attr(b, "shared_name", tf_attr_string(q->shared_name));
  if (strcmp(q->op, "RandomShuffleQueue") == 0) {
    tf_node_set_attr(b, "min_after_dequeue", tf_attr_int(q->min_after));
    tf_node_set_attr(b, "seed", tf_attr_int(q->seed));
    tf_node_set_attr(b, "seed2", tf_attr_int(q->seed2));
  }
  return finish(b);
}

/* op(handle, ins...) for the enqueue ops. */
static tf_node *enqueue(tf_graph *g, const char *op, const char *name,
                        tf_node *q, tf_node *const *ins, int n) {
  tf_node_builder *b = tf_node_begin(g, op, name);
  tf_node_add_input(b, (tf_output){q, 0});
  tf_output o[8];
  for (int i = 0; i < n; i++) o[i] = (tf_output){ins[i], 0};
  tf_node_add_input_list(b, o, n);
  return finish(b);
}

/* QueueDequeue (count NULL) or QueueDequeueMany(handle, count). */
static tf_node *dequeue(tf_graph *g, const char *name, tf_node *q,
                        const tf_dtype *types, int n, tf_node *count) {
  tf_node_builder *b = tf_node_begin(g, count ? "QueueDequeueMany" : "QueueDequeue", name);
  tf_node_add_input(b, (tf_output){q, 0});
  if (count) tf_node_add_input(b, (tf_output){count, 0});
  tf_node_set_attr(b, "component_types", tf_attr_type_list(types, n));
  return finish(b);
}

static tf_node *on_handle(tf_graph *g, const char *op, const char *name,
                          tf_node *q, bool cancel) {
  tf_node_builder *b = tf_node_begin(g, op, name);
  tf_node_add_input(b, (tf_output){q, 0});
  if (strcmp(op, "QueueClose") == 0) {
    tf_node_set_attr(b, "cancel_pending_enqueues", tf_attr_bool(cancel));
  }
  return finish(b);
}

static tf_node *cnst(tf_graph *g, const char *name, tf_tensor *t) {
  tf_node_builder *b = tf_node_begin(g, "Const", name);
  tf_node_set_attr(b, "value", tf_attr_tensor(t));
  tf_node_set_attr(b, "dtype", tf_attr_type_v(t->dtype));
  tf_node *n = finish(b);
  tf_tensor_unref(t);
  return n;
}

static tf_session *session(tf_graph *g, int threads) {
  tf_session_options o = {.inter_op_threads = threads};
  tf_status st;
  tf_session *s = tf_session_new(g, &o, &st);
  ck_assert_msg(s != NULL, "%s", st.msg);
  return s;
}

/* ---- running ------------------------------------------------------------- */

/* One Run: optional feed x, optional fetch, optional target; timeout in ms
 * (every Run here has a deadline). Returns the code; *out gets the fetch. */
static tf_code run(tf_session *s, const char *feed, tf_tensor *x,
                   const char *fetch, tf_tensor **out, const char *target,
                   int64_t timeout_ms, tf_status *st) {
  tf_run_options o = {.timeout_ms = timeout_ms};
  const char *fn[1] = {feed}, *on[1] = {fetch}, *tn[1] = {target};
  tf_tensor *fv[1] = {x};
  tf_tensor *dummy[1] = {NULL};
  return tf_session_run(s, &o, fn, fv, feed ? 1 : 0, on, out ? out : dummy,
                        fetch ? 1 : 0, tn, target ? 1 : 0, NULL, st);
}

static void run_ok(tf_session *s, const char *feed, tf_tensor *x,
                   const char *fetch, tf_tensor **out, const char *target) {
  tf_status st;
  ck_assert_msg(run(s, feed, x, fetch, out, target, 5000, &st) == TF_OK,
                "%s", st.msg);
}

static void enq_i32(tf_session *s, int32_t v) {
  tf_tensor *x = tf_tensor_scalar_i32(v);
  run_ok(s, "x", x, NULL, NULL, "enq");
  tf_tensor_unref(x);
}

static int32_t deq_i32(tf_session *s) {
  tf_tensor *t;
  run_ok(s, NULL, NULL, "deq", &t, NULL);
  int32_t v = *(int32_t *)t->data;
  tf_tensor_unref(t);
  return v;
}

static int32_t size_of(tf_session *s) {
  tf_tensor *t;
  run_ok(s, NULL, NULL, "size", &t, NULL);
  int32_t v = *(int32_t *)t->data;
  tf_tensor_unref(t);
  return v;
}

static const tf_dtype i32[1] = {TF_INT32};

/* A queue of int32 scalars "q" with x -> enq, deq, size, close. */
static tf_graph *int_queue_graph(const char *op, int64_t cap) {
  tf_graph *g = tf_graph_new();
  tf_shape scalar = tf_shape_scalar();
  qspec qs = {.op = op, .n = 1, .dtypes = i32, .shapes = &scalar, .capacity = cap};
  tf_node *q = queue(g, "q", &qs);
  tf_node *x = tt_placeholder(g, "x", TF_INT32, tf_shape_scalar());
  enqueue(g, "QueueEnqueue", "enq", q, &x, 1);
  dequeue(g, "deq", q, i32, 1, NULL);
  on_handle(g, "QueueSize", "size", q, false);
  on_handle(g, "QueueClose", "close", q, false);
  on_handle(g, "QueueClose", "close_cancel", q, true);
  return g;
}

/* A Run on another thread. */
typedef struct bg_run {
  tf_session *s;
  const char *feed, *fetch, *target;
  tf_tensor *x, *out;
  int64_t timeout_ms;
  tf_code code;
  tf_status st;
  _Atomic int finished;
  pthread_t th;
} bg_run;

static void *bg_main(void *arg) {
  bg_run *r = arg;
  r->code = run(r->s, r->feed, r->x, r->fetch, r->fetch ? &r->out : NULL,
                r->target, r->timeout_ms, &r->st);
  atomic_store(&r->finished, 1);
  return NULL;
}

static void bg_start(bg_run *r) { pthread_create(&r->th, NULL, bg_main, r); }

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* ---- tests ---------------------------------------------------------------- */

START_TEST(test_fifo_order) {
  tf_graph *g = int_queue_graph("FIFOQueue", -1);
  tf_session *s = session(g, thread_counts[_i]);
  enum { N = 300 };
  for (int i = 0; i < N; i++) enq_i32(s, i * 7 - 5);
  ck_assert_int_eq(size_of(s), N);
  for (int i = 0; i < N; i++) ck_assert_int_eq(deq_i32(s), i * 7 - 5);
  ck_assert_int_eq(size_of(s), 0);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

/* Two components, float [rows, 3] and int64 [rows], enqueued 7 rows at a
 * time and dequeued 4 and 3 at a time. */
START_TEST(test_enqueue_many_dequeue_many) {
  tf_graph *g = tf_graph_new();
  tf_dtype dt[2] = {TF_FLOAT32, TF_INT64};
  tf_shape sh[2] = {tf_shape_of(1, 3), tf_shape_scalar()};
  qspec qs = {.op = "FIFOQueue", .n = 2, .dtypes = dt, .shapes = sh, .capacity = 20};
  tf_node *q = queue(g, "q", &qs);
  tf_node *in[2] = {tt_placeholder(g, "a", TF_FLOAT32, tf_shape_of(2, -1, 3)),
                    tt_placeholder(g, "b", TF_INT64, tf_shape_of(1, -1))};
  enqueue(g, "QueueEnqueueMany", "enq", q, in, 2);
  dequeue(g, "deq4", q, dt, 2, cnst(g, "four", tf_tensor_scalar_i32(4)));
  dequeue(g, "deq3", q, dt, 2, cnst(g, "three", tf_tensor_scalar_i32(3)));
  ck_assert(tf_shape_equal(tf_node_output_shape(tf_graph_find(g, "deq4"), 0),
                           &(tf_shape){2, {4, 3}}));
  tf_session *s = session(g, 2);
  tf_tensor *a = tt_rand(TF_FLOAT32, tf_shape_of(2, 7, 3), -5, 5);
  tf_tensor *b = tt_rand(TF_INT64, tf_shape_of(1, 7), -1000, 1000);
  const char *fn[2] = {"a", "b"}, *tn[1] = {"enq"};
  tf_tensor *fv[2] = {a, b};
  tf_status st;
  tf_run_options o = {.timeout_ms = 5000};
  ck_assert_msg(tf_session_run(s, &o, fn, fv, 2, NULL, NULL, 0, tn, 1, NULL, &st) == TF_OK,
                "%s", st.msg);
  const char *on4[2] = {"deq4:0", "deq4:1"}, *on3[2] = {"deq3:0", "deq3:1"};
  tf_tensor *r4[2], *r3[2];
  ck_assert_msg(tf_session_run(s, &o, NULL, NULL, 0, on4, r4, 2, NULL, 0, NULL, &st) == TF_OK,
                "%s", st.msg);
  ck_assert_msg(tf_session_run(s, &o, NULL, NULL, 0, on3, r3, 2, NULL, 0, NULL, &st) == TF_OK,
                "%s", st.msg);
  tt_assert_shape(r4[0], 2, 4, 3);
  tt_assert_shape(r3[1], 1, 3);
  const float *af = a->data;
  const int64_t *bi = b->data;
  for (int row = 0; row < 7; row++) {
    tf_tensor **r = row < 4 ? r4 : r3;
    int k = row < 4 ? row : row - 4;
    for (int c = 0; c < 3; c++) {
      ck_assert(((float *)r[0]->data)[k * 3 + c] == af[row * 3 + c]);
    }
    ck_assert_int_eq(((int64_t *)r[1]->data)[k], bi[row]);
  }
  /* rows that disagree on dim 0 name the component */
  tf_tensor *b5 = tt_rand(TF_INT64, tf_shape_of(1, 5), 0, 9);
  fv[1] = b5;
  ck_assert_int_eq(tf_session_run(s, &o, fn, fv, 2, NULL, NULL, 0, tn, 1, NULL, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "component 1 has 5 elements along dim 0, "
                               "but component 0 has 7"));
  tf_tensor *all[] = {a, b, b5, r4[0], r4[1], r3[0], r3[1]};
  tt_free(all, 7);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

/* The sequence dequeued from a seeded RandomShuffleQueue holding 0..n-1. */
static void shuffled(int64_t seed, int n, int32_t *out) {
  tf_graph *g = tf_graph_new();
  tf_shape scalar = tf_shape_scalar();
  qspec qs = {.op = "RandomShuffleQueue", .n = 1, .dtypes = i32,
              .shapes = &scalar, .capacity = -1, .seed = seed, .seed2 = 0};
  tf_node *q = queue(g, "q", &qs);
  tf_node *x = tt_placeholder(g, "x", TF_INT32, tf_shape_of(1, -1));
  enqueue(g, "QueueEnqueueMany", "enq", q, &x, 1);
  dequeue(g, "deq", q, i32, 1, cnst(g, "n", tf_tensor_scalar_i32(n)));
  tf_session *s = session(g, 2);
  int32_t *v = malloc((size_t)n * sizeof *v);
  for (int i = 0; i < n; i++) v[i] = i;
  tf_tensor *in = tf_tensor_vec_i32(n, v);
  free(v);
  run_ok(s, "x", in, NULL, NULL, "enq");
  tf_tensor *t;
  run_ok(s, NULL, NULL, "deq", &t, NULL);
  memcpy(out, t->data, (size_t)n * sizeof *out);
  tf_tensor_unref(t);
  tf_tensor_unref(in);
  tf_session_free(s);
  tf_graph_free(g);
}

START_TEST(test_random_shuffle_permutation_and_seed) {
  enum { N = 100 };
  int32_t a[N], b[N], c[N];
  shuffled(1234, N, a);
  shuffled(1234, N, b);
  shuffled(99, N, c);
  ck_assert_mem_eq(a, b, sizeof a); /* deterministic for a seed */
  ck_assert(memcmp(a, c, sizeof a) != 0);
  int seen[N] = {0}, in_place = 0;
  for (int i = 0; i < N; i++) {
    ck_assert(a[i] >= 0 && a[i] < N);
    seen[a[i]]++;
    in_place += a[i] == i;
  }
  for (int i = 0; i < N; i++) ck_assert_int_eq(seen[i], 1);
  ck_assert_int_lt(in_place, N / 4); /* a shuffle, not the identity */
}
END_TEST

START_TEST(test_random_shuffle_min_after_dequeue) {
  tf_graph *g = tf_graph_new();
  tf_shape scalar = tf_shape_scalar();
  qspec qs = {.op = "RandomShuffleQueue", .n = 1, .dtypes = i32, .shapes = &scalar,
              .capacity = 50, .min_after = 5, .seed = 7, .seed2 = 3};
  tf_node *q = queue(g, "q", &qs);
  tf_node *x = tt_placeholder(g, "x", TF_INT32, tf_shape_scalar());
  enqueue(g, "QueueEnqueue", "enq", q, &x, 1);
  dequeue(g, "deq", q, i32, 1, NULL);
  on_handle(g, "QueueSize", "size", q, false);
  on_handle(g, "QueueClose", "close", q, false);
  tf_session *s = session(g, thread_counts[_i]);
  for (int i = 0; i < 8; i++) enq_i32(s, i);
  int seen[8] = {0};
  for (int i = 0; i < 3; i++) seen[deq_i32(s)]++;
  ck_assert_int_eq(size_of(s), 5);
  tf_status st;
  tf_tensor *t = NULL;
  ck_assert_int_eq(run(s, NULL, NULL, "deq", &t, NULL, 100, &st), TF_DEADLINE_EXCEEDED);
  ck_assert_int_eq(size_of(s), 5);
  run_ok(s, NULL, NULL, NULL, NULL, "close");
  for (int i = 0; i < 5; i++) seen[deq_i32(s)]++;
  for (int i = 0; i < 8; i++) ck_assert_int_eq(seen[i], 1);
  ck_assert_int_eq(run(s, NULL, NULL, "deq", &t, NULL, 1000, &st), TF_OUT_OF_RANGE);
  ck_assert_ptr_nonnull(strstr(st.msg, "RandomShuffleQueue 'q' is closed and has "
                               "insufficient elements (requested 1, current size 0)"));
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_deadline_then_next_run) {
  tf_graph *g = int_queue_graph("FIFOQueue", -1);
  tf_session *s = session(g, thread_counts[_i]);
  tf_status st;
  tf_tensor *t = NULL;
  int64_t t0 = tf__now_ns();
  ck_assert_int_eq(run(s, NULL, NULL, "deq", &t, NULL, 100, &st), TF_DEADLINE_EXCEEDED);
  int64_t ms = (tf__now_ns() - t0) / 1000000;
  ck_assert_ptr_null(t);
  ck_assert_msg(ms >= 90 && ms < 1000, "took %lld ms", (long long)ms);
  /* the dead step's waiter is gone: it does not swallow the next element */
  enq_i32(s, 41);
  ck_assert_int_eq(size_of(s), 1);
  ck_assert_int_eq(deq_i32(s), 41);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_close_wakes_blocked_dequeue) {
  tf_graph *g = int_queue_graph("FIFOQueue", -1);
  tf_session *s = session(g, thread_counts[_i]);
  bg_run r = {.s = s, .fetch = "deq", .timeout_ms = 5000};
  bg_start(&r);
  sleep_ms(50);
  ck_assert_int_eq(atomic_load(&r.finished), 0);
  run_ok(s, NULL, NULL, NULL, NULL, "close");
  pthread_join(r.th, NULL);
  ck_assert_int_eq(r.code, TF_OUT_OF_RANGE);
  ck_assert_ptr_nonnull(strstr(r.st.msg, "FIFOQueue 'q' is closed and has "
                               "insufficient elements (requested 1, current size 0)"));
  ck_assert_ptr_null(r.out);
  /* later enqueues fail */
  tf_status st;
  tf_tensor *x = tf_tensor_scalar_i32(1);
  ck_assert_int_eq(run(s, "x", x, NULL, NULL, "enq", 1000, &st), TF_CANCELLED);
  ck_assert_ptr_nonnull(strstr(st.msg, "FIFOQueue 'q' is closed"));
  tf_tensor_unref(x);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_blocked_enqueue_released_by_dequeue) {
  tf_graph *g = int_queue_graph("FIFOQueue", 2);
  tf_session *s = session(g, thread_counts[_i]);
  enq_i32(s, 1);
  enq_i32(s, 2);
  bg_run r = {.s = s, .feed = "x", .x = tf_tensor_scalar_i32(3), .target = "enq",
              .timeout_ms = 5000};
  bg_start(&r);
  sleep_ms(50);
  ck_assert_int_eq(atomic_load(&r.finished), 0);
  ck_assert_int_eq(size_of(s), 2);
  ck_assert_int_eq(deq_i32(s), 1);
  pthread_join(r.th, NULL);
  ck_assert_msg(r.code == TF_OK, "%s", r.st.msg);
  ck_assert_int_eq(deq_i32(s), 2);
  ck_assert_int_eq(deq_i32(s), 3);
  tf_tensor_unref(r.x);
  /* close with cancel_pending_enqueues fails a blocked enqueue */
  enq_i32(s, 4);
  enq_i32(s, 5);
  bg_run c = {.s = s, .feed = "x", .x = tf_tensor_scalar_i32(6), .target = "enq",
              .timeout_ms = 5000};
  bg_start(&c);
  sleep_ms(50);
  run_ok(s, NULL, NULL, NULL, NULL, "close_cancel");
  pthread_join(c.th, NULL);
  ck_assert_int_eq(c.code, TF_CANCELLED);
  ck_assert_ptr_nonnull(strstr(c.st.msg, "FIFOQueue 'q' is closed"));
  ck_assert_int_eq(deq_i32(s), 4);
  ck_assert_int_eq(deq_i32(s), 5);
  tf_tensor_unref(c.x);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_reset_ends_blocked_steps) {
  tf_graph *g = int_queue_graph("FIFOQueue", 1);
  tf_session *s = session(g, thread_counts[_i]);
  enq_i32(s, 1);
  bg_run e = {.s = s, .feed = "x", .x = tf_tensor_scalar_i32(2), .target = "enq",
              .timeout_ms = 5000};
  bg_start(&e);
  sleep_ms(30);
  ck_assert_int_eq(deq_i32(s), 1); /* releases e... */
  pthread_join(e.th, NULL);
  ck_assert_msg(e.code == TF_OK, "%s", e.st.msg);
  ck_assert_int_eq(deq_i32(s), 2);
  bg_run d = {.s = s, .fetch = "deq", .timeout_ms = 5000};
  bg_start(&d);
  sleep_ms(50);
  ck_assert_int_eq(atomic_load(&d.finished), 0);
  tf_status st;
  int64_t t0 = tf__now_ns();
  ck_assert_int_eq(tf_session_reset(s, NULL, 0, &st), TF_OK);
  pthread_join(d.th, NULL);
  ck_assert_int_lt((tf__now_ns() - t0) / 1000000, 1000);
  ck_assert_int_eq(d.code, TF_OUT_OF_RANGE);
  /* the next Run makes a fresh, open queue */
  enq_i32(s, 9);
  ck_assert_int_eq(size_of(s), 1);
  ck_assert_int_eq(deq_i32(s), 9);
  tf_tensor_unref(e.x);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

/* A Run blocked on a queue when the session closes ends with CANCELLED. */
START_TEST(test_session_close_ends_blocked_step) {
  tf_graph *g = int_queue_graph("FIFOQueue", -1);
  tf_session *s = session(g, thread_counts[_i]);
  bg_run d = {.s = s, .fetch = "deq", .timeout_ms = 5000};
  bg_start(&d);
  sleep_ms(50);
  tf_status st;
  ck_assert_int_eq(tf_session_close(s, &st), TF_OK);
  pthread_join(d.th, NULL);
  ck_assert(d.code == TF_CANCELLED || d.code == TF_OUT_OF_RANGE);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_shared_queue) {
  tf_graph *g = tf_graph_new();
  qspec a = {.op = "FIFOQueue", .n = 1, .dtypes = i32, .capacity = -1,
             .shared_name = "shared"};
  tf_node *q1 = queue(g, "q1", &a), *q2 = queue(g, "q2", &a);
  tf_dtype f32[1] = {TF_FLOAT32};
  qspec b = a;
  b.dtypes = f32;
  tf_node *q3 = queue(g, "q3", &b);
  tf_node *x = tt_placeholder(g, "x", TF_INT32, tf_shape_scalar());
  enqueue(g, "QueueEnqueue", "enq", q1, &x, 1);
  dequeue(g, "deq", q2, i32, 1, NULL);
  on_handle(g, "QueueSize", "size3", q3, false);
  tf_session *s = session(g, 2);
  enq_i32(s, 5);
  ck_assert_int_eq(deq_i32(s), 5); /* through the other node */
  tf_status st;
  tf_tensor *t = NULL;
  ck_assert_int_eq(run(s, NULL, NULL, "size3", &t, NULL, 1000, &st), TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "node 'q3' (FIFOQueue)"));
  ck_assert_ptr_nonnull(strstr(st.msg, "component 0 of type int32, but this op asks for float32"));
  /* a FIFOQueue and a RandomShuffleQueue cannot share a name */
  tf_graph *g2 = tf_graph_new();
  qspec c = a;
  c.op = "RandomShuffleQueue";
  on_handle(g2, "QueueSize", "s1", queue(g2, "q1", &a), false);
  on_handle(g2, "QueueSize", "s2", queue(g2, "q2", &c), false);
  tf_session *s2 = session(g2, 1);
  run_ok(s2, NULL, NULL, "s1", &t, NULL);
  tf_tensor_unref(t);
  ck_assert_int_eq(run(s2, NULL, NULL, "s2", &t, NULL, 1000, &st), TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "is a FIFOQueue, not a RandomShuffleQueue"));
  tf_session_free(s2);
  tf_graph_free(g2);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

/* Queue kernels outside a session say they need one. */
START_TEST(test_eager_needs_session) {
  tf_attr_kv attrs[] = {{"component_types", tf_attr_type_list(i32, 1)}};
  const char *msg = tt_run_fail("FIFOQueue", NULL, 0, attrs, 1, TF_FAILED_PRECONDITION);
  ck_assert_ptr_nonnull(strstr(msg, "needs a session"));
}
END_TEST

/* ---- producers and consumers ------------------------------------------- */

enum { PC_TOTAL = 10000, PC_PRODUCERS = 2, PC_BATCH = 50, PC_TAKE = 40 };

typedef struct pc_thread {
  tf_session *s;
  int id;
  int32_t *got;
  int n_got;
  tf_code last;
  tf_status st;
} pc_thread;

static void *pc_produce(void *arg) {
  pc_thread *p = arg;
  int per = PC_TOTAL / PC_PRODUCERS;
  int32_t v[PC_BATCH];
  for (int at = 0; at < per && p->last == TF_OK; at += PC_BATCH) {
    for (int k = 0; k < PC_BATCH; k++) v[k] = p->id * per + at + k;
    tf_tensor *x = tf_tensor_vec_i32(PC_BATCH, v);
    p->last = run(p->s, "x", x, NULL, NULL, "enq", 5000, &p->st);
    tf_tensor_unref(x);
  }
  return NULL;
}

static void *pc_consume(void *arg) {
  pc_thread *c = arg;
  for (;;) {
    tf_tensor *t = NULL;
    c->last = run(c->s, NULL, NULL, "deq", &t, NULL, 5000, &c->st);
    if (c->last != TF_OK) break;
    memcpy(c->got + c->n_got, t->data, PC_TAKE * sizeof(int32_t));
    c->n_got += PC_TAKE;
    tf_tensor_unref(t);
  }
  return NULL;
}

START_TEST(test_producers_consumers) {
  tf_graph *g = tf_graph_new();
  tf_shape scalar = tf_shape_scalar();
  qspec qs = {.op = "FIFOQueue", .n = 1, .dtypes = i32, .shapes = &scalar, .capacity = 64};
  tf_node *q = queue(g, "q", &qs);
  tf_node *x = tt_placeholder(g, "x", TF_INT32, tf_shape_of(1, -1));
  enqueue(g, "QueueEnqueueMany", "enq", q, &x, 1);
  dequeue(g, "deq", q, i32, 1, cnst(g, "n", tf_tensor_scalar_i32(PC_TAKE)));
  on_handle(g, "QueueClose", "close", q, false);
  tf_session *s = session(g, thread_counts[_i]);
  pc_thread p[PC_PRODUCERS], c[2];
  pthread_t tp[PC_PRODUCERS], tc[2];
  for (int i = 0; i < 2; i++) {
    c[i] = (pc_thread){.s = s, .id = i, .got = malloc(PC_TOTAL * sizeof(int32_t))};
    pthread_create(&tc[i], NULL, pc_consume, &c[i]);
  }
  for (int i = 0; i < PC_PRODUCERS; i++) {
    p[i] = (pc_thread){.s = s, .id = i};
    pthread_create(&tp[i], NULL, pc_produce, &p[i]);
  }
  for (int i = 0; i < PC_PRODUCERS; i++) pthread_join(tp[i], NULL);
  run_ok(s, NULL, NULL, NULL, NULL, "close");
  for (int i = 0; i < 2; i++) pthread_join(tc[i], NULL);
  int *seen = calloc(PC_TOTAL, sizeof *seen);
  for (int i = 0; i < PC_PRODUCERS; i++) ck_assert_msg(p[i].last == TF_OK, "%s", p[i].st.msg);
  for (int i = 0; i < 2; i++) {
    ck_assert_msg(c[i].last == TF_OUT_OF_RANGE, "consumer %d ended with %s", i, c[i].st.msg);
    int last[PC_PRODUCERS] = {-1, -1};
    for (int k = 0; k < c[i].n_got; k++) {
      int v = c[i].got[k], from = v / (PC_TOTAL / PC_PRODUCERS);
      ck_assert(v >= 0 && v < PC_TOTAL);
      seen[v]++;
      ck_assert_int_gt(v, last[from]); /* FIFO per producer */
      last[from] = v;
    }
    free(c[i].got);
  }
  for (int v = 0; v < PC_TOTAL; v++) ck_assert_msg(seen[v] == 1, "value %d seen %d times", v, seen[v]);
  free(seen);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_queue");
  TCase *tc = tcase_create("queue");
  tcase_set_timeout(tc, 20);
  tcase_add_loop_test(tc, test_fifo_order, 0, 2);
  tcase_add_test(tc, test_enqueue_many_dequeue_many);
  tcase_add_test(tc, test_random_shuffle_permutation_and_seed);
  tcase_add_loop_test(tc, test_random_shuffle_min_after_dequeue, 0, 2);
  tcase_add_loop_test(tc, test_deadline_then_next_run, 0, 2);
  tcase_add_loop_test(tc, test_close_wakes_blocked_dequeue, 0, 2);
  tcase_add_loop_test(tc, test_blocked_enqueue_released_by_dequeue, 0, 2);
  tcase_add_loop_test(tc, test_reset_ends_blocked_steps, 0, 2);
  tcase_add_loop_test(tc, test_session_close_ends_blocked_step, 0, 2);
  tcase_add_test(tc, test_shared_queue);
  tcase_add_test(tc, test_eager_needs_session);
  tcase_add_loop_test(tc, test_producers_consumers, 0, 2);
  suite_add_tcase(s, tc);
  return s;
}
