/* cpu_sendrecv_test.c: the _Send and _Recv kernels run by two executors
 * (two hand-partitioned graphs, one per "device") in two threads that
 * share one step rendezvous of a tf_rdv_mgr. A value computed on A
 * (Const, Add) arrives on B (Mul, _Retval), whichever side starts first;
 * the untaken branch of a Switch on A arrives dead on B and makes B's
 * consumer dead (its _Retval stays unset while a Merge passes the live
 * branch); a _Recv that never gets a value ends the step with
 * DEADLINE_EXCEEDED at the deadline (also when nobody waits for the step:
 * tf_executor_run_async), or with the abort's reason; without a
 * rendezvous both ops fail with FAILED_PRECONDITION; a dtype mismatch is
 * INVALID_ARGUMENT; and the key holds the attrs, frame and iteration. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/core/graph/graph_impl.h"
#include "lib/rendezvous/rendezvous_mgr.h"
#include "test/unit/core/exec/exec_testlib.h"

#define TASK_A "/job:worker/replica:0/task:0"
#define TASK_B "/job:worker/replica:0/task:1"
#define DEV_A TASK_A "/device:CPU:0"
#define DEV_B TASK_B "/device:CPU:0"
#define INC_A 0xabcdefLL

#define ASSERT_HAS(msg, sub)                                                   \
  ck_assert_msg(strstr((msg), (sub)) != NULL, "'%s' lacks '%s'", (msg), (sub))

/* ---- graph helpers ---------------------------------------------------------- */

static tf_node *send_node(tf_graph *g, const char *name, tf_output in,
                          const char *tensor) {
  tf_attr_kv a[] = {{"tensor_name", tf_attr_string(tensor)},
                    {"send_device", tf_attr_string(DEV_A)},
                    {"send_device_incarnation", tf_attr_int(INC_A)},
                    {"recv_device", tf_attr_string(DEV_B)}};
  return tt_node(g, "_Send", name, &in, 1, a, 4);
}

static tf_node *recv_node(tf_graph *g, const char *name, tf_dtype dt,
                          const char *tensor) {
  tf_attr_kv a[] = {{"tensor_type", tf_attr_type_v(dt)},
                    {"tensor_name", tf_attr_string(tensor)},
                    {"send_device", tf_attr_string(DEV_A)},
                    {"send_device_incarnation", tf_attr_int(INC_A)},
                    {"recv_device", tf_attr_string(DEV_B)}};
  return tt_node(g, "_Recv", name, NULL, 0, a, 5);
}

static tf_node *op2(tf_graph *g, const char *op, const char *name, tf_output a,
                    tf_output b) {
  return tt_node(g, op, name, (tf_output[]){a, b}, 2, NULL, 0);
}

static tf_node *merge2(tf_graph *g, const char *name, tf_output a, tf_output b) {
  tf_status st;
  tf_node_builder *nb = tf_node_begin(g, "Merge", name);
  tf_node_add_input_list(nb, (tf_output[]){a, b}, 2);
  tf_node *n = tf_node_finish(nb, &st);
  ck_assert_msg(n != NULL, "%s", st.msg);
  return n;
}

/* ---- running two sides ---------------------------------------------------- */

typedef struct side {
  tf_executor *e;
  step s;
  tf_status st;
  tf_code rc;
  int64_t deadline_ns;
  pthread_t th;
} side;

static void *run_side(void *p) {
  side *d = p;
  d->rc = tf_executor_run(d->e, &d->s.ctx, NULL, d->deadline_ns, &d->st);
  return NULL;
}

/* A step over rendezvous r (NULL: none) with n_rets retvals. */
static void side_init(side *d, tf_executor *e, tf_rendezvous *r, int n_rets,
                      int64_t deadline_ms) {
  memset(d, 0, sizeof *d);
  d->e = e;
  step_init(&d->s, 0, n_rets);
  d->s.ctx.rendezvous = r;
  d->deadline_ns = tf__now_ns() + deadline_ms * 1000000;
}

static void side_fini(side *d) {
  step_fini(&d->s);
  tf_executor_free(d->e);
}

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Runs both sides in their own threads; B first when b_first (its _Recv
 * then waits), with a pause between the starts. */
static void run_both(side *a, side *b, bool b_first) {
  side *first = b_first ? b : a, *second = b_first ? a : b;
  pthread_create(&first->th, NULL, run_side, first);
  sleep_ms(20);
  pthread_create(&second->th, NULL, run_side, second);
  pthread_join(first->th, NULL);
  pthread_join(second->th, NULL);
}

/* ---- tests ---------------------------------------------------------------- */

/* A: (2 + 3) -> _Send;  B: _Recv * 10 -> _Retval 0. */
START_TEST(test_value_crosses) {
  tf_workq *q = tf_workq_new(2, "test");
  for (int order = 0; order < 2; order++) {
    tf_graph *ga = tf_graph_new(), *gb = tf_graph_new();
    tf_node *c2 = tt_const(ga, "two", tf_tensor_scalar_f32(2));
    tf_node *c3 = tt_const(ga, "three", tf_tensor_scalar_f32(3));
    tf_node *add = op2(ga, "Add", "add", o0(c2), o0(c3));
    send_node(ga, "send", o0(add), "add:0");
    tf_node *rv = recv_node(gb, "recv", TF_FLOAT32, "add:0");
    tf_node *ten = tt_const(gb, "ten", tf_tensor_scalar_f32(10));
    tf_node *mul = op2(gb, "Mul", "mul", o0(rv), o0(ten));
    retval(gb, "ret", o0(mul), 0);
    tf_rdv_mgr *m = tf_rdv_mgr_new(TASK_B, 10000, NULL, NULL);
    tf_status st;
    tf_rendezvous *r = tf_rdv_mgr_step(m, 1, &st);
    side a, b;
    side_init(&a, executor(ga, NULL), r, 0, 10000);
    side_init(&b, executor(gb, order ? q : NULL), r, 1, 10000);
    run_both(&a, &b, order == 0);
    ck_assert_msg(a.rc == TF_OK, "A: %s", a.st.msg);
    ck_assert_msg(b.rc == TF_OK, "B: %s", b.st.msg);
    ck_assert_ptr_nonnull(b.s.rets[0]);
    ck_assert_float_eq(tf_tensor_get_f64(b.s.rets[0], 0), (2.0 + 3.0) * 10.0);
    ck_assert_int_eq(tf_rdv_mgr_buffered_bytes(m), 0);
    side_fini(&a);
    side_fini(&b);
    tf_rdv_step_unref(r);
    tf_rdv_mgr_free(m);
    tf_graph_free(ga);
    tf_graph_free(gb);
  }
  tf_workq_free(q);
}
END_TEST

/* A: Switch(x, false): output 1 (untaken) and output 0 (taken) are sent.
 * B: dead1 = Recv(1) * 2 is dead, so _Retval 1 stays unset; Merge(dead1,
 * Recv(0) * 3) passes the live side (value_index 1) into _Retval 0. */
START_TEST(test_dead_branch_crosses) {
  for (int pred = 0; pred < 2; pred++) {
    tf_graph *ga = tf_graph_new(), *gb = tf_graph_new();
    tf_node *x = tt_const(ga, "x", tf_tensor_scalar_f32(7));
    tf_node *p = tt_const(ga, "p", tf_tensor_scalar_bool(pred));
    tf_node *sw = op2(ga, "Switch", "sw", o0(x), o0(p));
    send_node(ga, "send_t", (tf_output){sw, 1}, "sw:1");
    send_node(ga, "send_f", (tf_output){sw, 0}, "sw:0");
    tf_node *rt = recv_node(gb, "recv_t", TF_FLOAT32, "sw:1");
    tf_node *rf = recv_node(gb, "recv_f", TF_FLOAT32, "sw:0");
    tf_node *two = tt_const(gb, "two", tf_tensor_scalar_f32(2));
    tf_node *three = tt_const(gb, "three", tf_tensor_scalar_f32(3));
    tf_node *mt = op2(gb, "Mul", "mul_t", o0(rt), o0(two));
    tf_node *mf = op2(gb, "Mul", "mul_f", o0(rf), o0(three));
    retval(gb, "ret_t", o0(mt), 1);
    retval(gb, "ret_f", o0(mf), 2);
    tf_node *mg = merge2(gb, "merge", o0(mt), o0(mf));
    retval(gb, "ret_merge", o0(mg), 0);
    retval(gb, "ret_index", (tf_output){mg, 1}, 3);
    tf_rdv_mgr *m = tf_rdv_mgr_new(TASK_B, 10000, NULL, NULL);
    tf_status st;
    tf_rendezvous *r = tf_rdv_mgr_step(m, 1, &st);
    side a, b;
    side_init(&a, executor(ga, NULL), r, 0, 10000);
    side_init(&b, executor(gb, NULL), r, 4, 10000);
    run_both(&a, &b, pred == 0);
    ck_assert_msg(a.rc == TF_OK, "A: %s", a.st.msg);
    ck_assert_msg(b.rc == TF_OK, "B: %s", b.st.msg);
    ck_assert_ptr_nonnull(b.s.rets[0]);
    ck_assert_ptr_nonnull(b.s.rets[3]);
    if (pred) {
      ck_assert_float_eq(tf_tensor_get_f64(b.s.rets[0], 0), 14);
      ck_assert_int_eq(tf_tensor_get_i64(b.s.rets[3], 0), 0);
      ck_assert_ptr_nonnull(b.s.rets[1]);
      ck_assert_ptr_null(b.s.rets[2]); /* dead */
    } else {
      ck_assert_float_eq(tf_tensor_get_f64(b.s.rets[0], 0), 21);
      ck_assert_int_eq(tf_tensor_get_i64(b.s.rets[3], 0), 1);
      ck_assert_ptr_null(b.s.rets[1]); /* dead */
      ck_assert_ptr_nonnull(b.s.rets[2]);
    }
    side_fini(&a);
    side_fini(&b);
    tf_rdv_step_unref(r);
    tf_rdv_mgr_free(m);
    tf_graph_free(ga);
    tf_graph_free(gb);
  }
}
END_TEST

static tf_graph *recv_only(tf_dtype dt) {
  tf_graph *g = tf_graph_new();
  tf_node *rv = recv_node(g, "lonely", dt, "never:0");
  retval(g, "ret", o0(rv), 0);
  return g;
}

START_TEST(test_recv_deadline) {
  tf_graph *g = recv_only(TF_FLOAT32);
  tf_rdv_mgr *m = tf_rdv_mgr_new(TASK_B, 10000, NULL, NULL);
  tf_status st;
  tf_rendezvous *r = tf_rdv_mgr_step(m, 1, &st);
  side b;
  side_init(&b, executor(g, NULL), r, 1, 150);
  int64_t t0 = tf__now_ns();
  run_side(&b);
  int64_t ms = (tf__now_ns() - t0) / 1000000;
  ck_assert_int_eq(b.rc, TF_DEADLINE_EXCEEDED);
  ck_assert_msg(ms >= 100 && ms < 5000, "took %lld ms", (long long)ms);
  ck_assert_ptr_null(b.s.rets[0]);
  side_fini(&b);
  tf_rdv_step_unref(r);
  tf_rdv_mgr_free(m);
  tf_graph_free(g);
}
END_TEST

/* The same with tf_executor_run_async: no thread waits for the step, so
 * only the step's deadline timer can wake the _Recv; done comes within
 * 100 ms of the deadline, naming the waiting _Recv. */
typedef struct recv_done {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool done;
  int64_t at_ns;
  tf_status st;
} recv_done;

static void on_recv_done(void *arg, const tf_status *st) {
  recv_done *d = arg;
  pthread_mutex_lock(&d->mu);
  d->st = *st;
  d->at_ns = tf__now_ns();
  d->done = true;
  pthread_cond_signal(&d->cv);
  pthread_mutex_unlock(&d->mu);
}

START_TEST(test_recv_deadline_async) {
  tf_graph *g = recv_only(TF_FLOAT32);
  tf_rdv_mgr *m = tf_rdv_mgr_new(TASK_B, 10000, NULL, NULL);
  tf_status st;
  tf_rendezvous *r = tf_rdv_mgr_step(m, 1, &st);
  tf_workq *q = tf_workq_new(2, "recv");
  for (int pooled = 0; pooled < 2; pooled++) {
    side b;
    side_init(&b, executor(g, pooled ? q : NULL), r, 1, 150);
    recv_done d = {.done = false};
    pthread_mutex_init(&d.mu, NULL);
    pthread_cond_init(&d.cv, NULL);
    int64_t t0 = b.deadline_ns - 150 * 1000000LL;
    tf_executor_run_async(b.e, &b.s.ctx, NULL, b.deadline_ns, on_recv_done, &d);
    pthread_mutex_lock(&d.mu);
    while (!d.done) pthread_cond_wait(&d.cv, &d.mu);
    pthread_mutex_unlock(&d.mu);
    int64_t ms = (d.at_ns - t0) / 1000000;
    ck_assert_int_eq(d.st.code, TF_DEADLINE_EXCEEDED);
    ck_assert_msg(ms >= 150 && ms <= 250, "took %lld ms", (long long)ms);
    ASSERT_HAS(d.st.msg, "the last to start was 'lonely' (_Recv)");
    ck_assert_ptr_null(b.s.rets[0]);
    pthread_mutex_destroy(&d.mu);
    pthread_cond_destroy(&d.cv);
    side_fini(&b);
  }
  tf_workq_free(q);
  tf_rdv_step_unref(r);
  tf_rdv_mgr_free(m);
  tf_graph_free(g);
}
END_TEST

typedef struct abort_arg {
  tf_rdv_mgr *m;
} abort_arg;

static void *abort_soon(void *p) {
  sleep_ms(50);
  tf_status why;
  tf_status_set(&why, TF_UNAVAILABLE, "task 0 of job worker went away");
  tf_rdv_mgr_abort(p, 1, &why);
  return NULL;
}

START_TEST(test_recv_abort) {
  tf_graph *g = recv_only(TF_FLOAT32);
  tf_rdv_mgr *m = tf_rdv_mgr_new(TASK_B, 10000, NULL, NULL);
  tf_status st;
  tf_rendezvous *r = tf_rdv_mgr_step(m, 1, &st);
  side b;
  side_init(&b, executor(g, NULL), r, 1, 10000);
  pthread_t th;
  pthread_create(&th, NULL, abort_soon, m);
  run_side(&b);
  pthread_join(th, NULL);
  ck_assert_int_eq(b.rc, TF_UNAVAILABLE);
  ASSERT_HAS(b.st.msg, "task 0 of job worker went away");
  ASSERT_HAS(b.st.msg, "'lonely'");
  ASSERT_HAS(b.st.msg, ";never:0;0:0");
  side_fini(&b);
  tf_rdv_step_unref(r);
  tf_rdv_mgr_free(m);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_no_rendezvous) {
  tf_graph *g = recv_only(TF_FLOAT32);
  side b;
  side_init(&b, executor(g, NULL), NULL, 1, 10000);
  run_side(&b);
  ck_assert_int_eq(b.rc, TF_FAILED_PRECONDITION);
  ASSERT_HAS(b.st.msg, "'lonely'");
  ASSERT_HAS(b.st.msg, "needs a rendezvous");
  side_fini(&b);
  tf_graph_free(g);
  g = tf_graph_new();
  send_node(g, "sender", o0(tt_const(g, "c", tf_tensor_scalar_f32(1))), "c:0");
  side a;
  side_init(&a, executor(g, NULL), NULL, 0, 10000);
  run_side(&a);
  ck_assert_int_eq(a.rc, TF_FAILED_PRECONDITION);
  ASSERT_HAS(a.st.msg, "'sender'");
  ASSERT_HAS(a.st.msg, "needs a rendezvous");
  side_fini(&a);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_dtype_mismatch) {
  tf_graph *g = recv_only(TF_INT32);
  tf_rdv_mgr *m = tf_rdv_mgr_new(TASK_B, 10000, NULL, NULL);
  tf_status st;
  tf_rendezvous *r = tf_rdv_mgr_step(m, 1, &st);
  char *k = tf_rdv_key_make(DEV_A, INC_A, DEV_B, "never:0", 0, 0);
  tf_tensor *t = tf_tensor_scalar_f32(1);
  ck_assert_int_eq(tf_rdv_mgr_deliver(m, 1, k, t, false, &st), TF_OK);
  side b;
  side_init(&b, executor(g, NULL), r, 1, 10000);
  run_side(&b);
  ck_assert_int_eq(b.rc, TF_INVALID_ARGUMENT);
  ASSERT_HAS(b.st.msg, "got a float32 tensor, expected int32");
  tf_tensor_unref(t);
  free(k);
  side_fini(&b);
  tf_rdv_step_unref(r);
  tf_rdv_mgr_free(m);
  tf_graph_free(g);
}
END_TEST

/* ---- keys, through a recording rendezvous ------------------------------------- */

typedef struct rec_rdv {
  tf_rendezvous base;
  pthread_mutex_t mu;
  int n;
  char keys[8][256];
  bool dead[8];
} rec_rdv;

static void rec_send(tf_rendezvous *r, const char *key, tf_tensor *t,
                     bool is_dead, tf_rdv_send_done done, void *arg) {
  rec_rdv *x = (rec_rdv *)r;
  pthread_mutex_lock(&x->mu);
  if (x->n < 8) {
    snprintf(x->keys[x->n], sizeof x->keys[0], "%s", key);
    x->dead[x->n++] = is_dead && t == NULL;
  }
  pthread_mutex_unlock(&x->mu);
  tf_status ok = {TF_OK, ""};
  done(arg, &ok);
}

/* Sends inside a loop frame 'L' (i = 0, 1, 2) use the frame's id and the
 * iteration; a dead _Send (untaken Switch side) still sends. */
START_TEST(test_keys_in_frames) {
  tf_graph *g = tf_graph_new();
  tf_node *zero = tt_const(g, "zero", tf_tensor_scalar_i64(0));
  tf_node *limit = tt_const(g, "limit", tf_tensor_scalar_i64(3));
  tf_node *one = tt_const(g, "one", tf_tensor_scalar_i64(1));
  tf_node *en = enter(g, "L_enter", o0(zero), "L", false);
  tf_node *lim = enter(g, "L_limit", o0(limit), "L", true);
  tf_node *one_e = enter(g, "L_one", o0(one), "L", true);
  tf_node *mg = merge2(g, "L_merge", o0(en), o0(en));
  tf_node *less = op2(g, "Less", NULL, o0(mg), o0(lim));
  tf_node *cond = tt_node(g, "LoopCond", NULL, (tf_output[]){o0(less)}, 1, NULL, 0);
  tf_node *sw = op2(g, "Switch", "L_switch", o0(mg), o0(cond));
  tf_node *body = op2(g, "Add", "body", (tf_output){sw, 1}, o0(one_e));
  send_node(g, "send_i", (tf_output){sw, 1}, "i:0");
  tf_node *next = tt_node(g, "NextIteration", NULL, (tf_output[]){o0(body)}, 1, NULL, 0);
  tf_status st;
  ck_assert_msg(tf__node_set_back_edge(mg, 1, o0(next), &st) == TF_OK, "%s", st.msg);
  tt_node(g, "Exit", NULL, (tf_output[]){(tf_output){sw, 0}}, 1, NULL, 0);
  rec_rdv x = {.base = {.send = rec_send}};
  pthread_mutex_init(&x.mu, NULL);
  side a;
  side_init(&a, executor(g, NULL), &x.base, 0, 10000);
  run_side(&a);
  ck_assert_msg(a.rc == TF_OK, "%s", a.st.msg);
  /* Iterations 0..2 send live values; iteration 3's send is dead. */
  ck_assert_int_eq(x.n, 4);
  char prefix[256];
  snprintf(prefix, sizeof prefix, "%s;0000000000abcdef;%s;i:0;", DEV_A, DEV_B);
  uint64_t frame = 0;
  for (int i = 0; i < 4; i++) {
    bool found = false;
    for (int j = 0; j < 4 && !found; j++) {
      tf_rdv_key k;
      ck_assert_int_eq(tf_rdv_key_parse(x.keys[j], &k, &st), TF_OK);
      ck_assert_msg(strncmp(x.keys[j], prefix, strlen(prefix)) == 0, "%s", x.keys[j]);
      ck_assert_uint_ne(k.frame_id, 0);
      if (frame == 0) frame = k.frame_id;
      ck_assert_uint_eq(k.frame_id, frame);
      if (k.iter == i) {
        found = true;
        ck_assert_int_eq(x.dead[j], i == 3);
      }
      tf_rdv_key_fini(&k);
    }
    ck_assert_msg(found, "no send for iteration %d", i);
  }
  pthread_mutex_destroy(&x.mu);
  side_fini(&a);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_sendrecv");
  TCase *tc = tcase_create("sendrecv");
  tcase_set_timeout(tc, 60);
  tcase_add_checked_fixture(tc, exec_setup, exec_teardown);
  tcase_add_test(tc, test_value_crosses);
  tcase_add_test(tc, test_dead_branch_crosses);
  tcase_add_test(tc, test_recv_deadline);
  tcase_add_test(tc, test_recv_deadline_async);
  tcase_add_test(tc, test_recv_abort);
  tcase_add_test(tc, test_no_rendezvous);
  tcase_add_test(tc, test_dtype_mismatch);
  tcase_add_test(tc, test_keys_in_frames);
  suite_add_tcase(s, tc);
  return s;
}
