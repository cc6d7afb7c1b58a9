/* cpu_training_test.c: the dense fused optimizer kernels through a
 * session. Each Apply* kernel (float32 and float64; Nesterov; Adagrad
 * without slot updates; Adam's bias correction through fed beta powers)
 * runs several steps on random data and is compared with a plain float64
 * recomputation of TensorFlow's update formula written here; one Adam run
 * is big enough for the intra-op pool. Errors: uninitialized slots named,
 * mismatched grad and slot shapes, non-scalar hyperparameters, the same
 * variable twice, all leaving the variables unchanged; a held value never
 * changes (copy-on-write); concurrent updates lose nothing, and two ops
 * locking the same pair of variables in opposite roles never deadlock. */
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "lib/core/framework/op_registry.h"
#include "test/unit/devices/cpu/cpu_training_testlib.h"

/* ---- dense kernels against the reference --------------------------------- */

/* Runs op for `steps` steps on a fresh rig of shape and dtype, comparing
 * every variable with the reference after each step. */
static void check_dense(const char *op, tf_dtype dt, tf_shape shape,
                        bool nesterov, bool update_slots, int steps) {
  tf_attr_kv attrs[2];
  int n_attrs = 0;
  const tf_op_def *d = tf_op_lookup(op);
  ck_assert_msg(d != NULL, "no op %s", op);
  if (tf_op_find_attr(d, "use_nesterov")) {
    attrs[n_attrs++] = (tf_attr_kv){"use_nesterov", tf_attr_bool(nesterov)};
  }
  if (tf_op_find_attr(d, "update_slots")) {
    attrs[n_attrs++] = (tf_attr_kv){"update_slots",
                                    tf_attr_bool(update_slots)};
  }
  tr_rig *r = tr_rig_new(op, dt, TF_INT32, attrs, n_attrs);
  tr_ref ref;
  tr_rig_init_random(r, shape, &ref);
  tr_hp hp = tr_hp_random(op, nesterov, update_slots);
  for (int t = 1; t <= steps; t++) {
    tr_hp_step(&hp, t);
    tf_tensor *g = tt_rand(dt, shape, -2, 2);
    tr_rig_step(r, &hp, g, NULL);
    tr_ref_dense(&ref, &hp, g);
    tr_rig_compare(r, &ref, dt == TF_FLOAT32 ? 2e-5 : 1e-12,
                   dt == TF_FLOAT32 ? 2e-5 : 1e-11);
    tf_tensor_unref(g);
  }
  tr_ref_fini(&ref);
  tr_rig_free(r);
}

static const char *const dense_ops[] = {
    "ApplyGradientDescent", "ApplyMomentum", "ApplyAdagrad",
    "ApplyAdadelta",        "ApplyRMSProp",  "ApplyAdam"};

START_TEST(test_dense_f32) {
  tt_rng_reseed(tt_seed() ^ 1);
  for (size_t i = 0; i < sizeof dense_ops / sizeof *dense_ops; i++) {
    check_dense(dense_ops[i], TF_FLOAT32, tf_shape_of(2, 7, 13), false, true,
                4);
  }
}
END_TEST

START_TEST(test_dense_f64) {
  tt_rng_reseed(tt_seed() ^ 2);
  for (size_t i = 0; i < sizeof dense_ops / sizeof *dense_ops; i++) {
    check_dense(dense_ops[i], TF_FLOAT64, tf_shape_of(1, 301), false, true,
                4);
  }
}
END_TEST

START_TEST(test_dense_variants) {
  tt_rng_reseed(tt_seed() ^ 3);
  check_dense("ApplyMomentum", TF_FLOAT32, tf_shape_of(1, 77), true, true, 4);
  check_dense("ApplyMomentum", TF_FLOAT64, tf_shape_of(2, 3, 5), true, true,
              3);
  check_dense("ApplyAdam", TF_FLOAT32, tf_shape_of(1, 515), true, true, 5);
  check_dense("ApplyAdam", TF_FLOAT64, tf_shape_of(1, 9), true, true, 3);
  check_dense("ApplyAdagrad", TF_FLOAT64, tf_shape_of(1, 40), false, false,
              3);
  /* scalars and empty variables */
  check_dense("ApplyRMSProp", TF_FLOAT64, tf_shape_scalar(), false, true, 2);
  check_dense("ApplyAdadelta", TF_FLOAT32, tf_shape_of(2, 0, 3), false, true,
              2);
}
END_TEST

/* Big enough to be split over the intra-op pool. */
START_TEST(test_dense_parallel) {
  tt_rng_reseed(tt_seed() ^ 4);
  check_dense("ApplyAdam", TF_FLOAT32, tf_shape_of(2, 300, 211), false, true,
              2);
  check_dense("ApplyMomentum", TF_FLOAT64, tf_shape_of(1, 70001), true, true,
              2);
}
END_TEST

/* ---- errors -------------------------------------------------------------- */

START_TEST(test_uninitialized) {
  tr_rig *r = tr_rig_new("ApplyAdam", TF_FLOAT32, TF_INT32, NULL, 0);
  tf_tensor *w = tt_rand(TF_FLOAT32, tf_shape_of(1, 4), -1, 1);
  tr_rig_assign(r, 0, w);
  tr_rig_assign(r, 2, w); /* m (input 1) stays uninitialized */
  tr_hp hp = tr_hp_random("ApplyAdam", false, true);
  tr_hp_step(&hp, 1);
  const char *msg = tr_rig_step_fail(r, &hp, w, NULL, TF_FAILED_PRECONDITION);
  ck_assert_msg(strstr(msg, "Attempting to use uninitialized value m") &&
                    strstr(msg, "apply"),
                "%s", msg);
  tr_rig_expect_value(r, 0, w);
  tr_rig_expect_value(r, 2, w);
  tf_tensor_unref(w);
  tr_rig_free(r);
}
END_TEST

START_TEST(test_shape_errors) {
  tr_rig *r = tr_rig_new("ApplyRMSProp", TF_FLOAT64, TF_INT32, NULL, 0);
  tf_tensor *w = tt_rand(TF_FLOAT64, tf_shape_of(2, 3, 4), -1, 1);
  tf_tensor *wt = tt_rand(TF_FLOAT64, tf_shape_of(2, 4, 3), -1, 1);
  tr_rig_assign(r, 0, w);
  tr_rig_assign(r, 1, w);
  tr_rig_assign(r, 2, wt);
  tr_hp hp = tr_hp_random("ApplyRMSProp", false, true);
  tr_hp_step(&hp, 1);
  const char *msg = tr_rig_step_fail(r, &hp, w, NULL, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "var (var) and mom (mom) do not have the same "
                            "shape [3,4] [4,3]"),
                "%s", msg);
  tr_rig_assign(r, 2, w);
  msg = tr_rig_step_fail(r, &hp, wt, NULL, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "var (var) and grad do not have the same shape "
                            "[3,4] [4,3]"),
                "%s", msg);
  hp.bad_scalar = "rho";
  msg = tr_rig_step_fail(r, &hp, w, NULL, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "rho is not a scalar: [2]"), "%s", msg);
  for (int k = 0; k < 3; k++) {
    tr_rig_expect_value(r, k, w);
  }
  tf_tensor_unref(w);
  tf_tensor_unref(wt);
  tr_rig_free(r);
}
END_TEST

START_TEST(test_same_variable_twice) {
  tf_graph *g = tf_graph_new();
  tf_node *v = tr_variable(g, "w", TF_FLOAT32);
  tf_output in[] = {{v, 0}, {v, 0}, {tt_placeholder(g, "lr", TF_FLOAT32,
                                                    tf_shape_scalar()), 0},
                    {tt_placeholder(g, "grad", TF_FLOAT32,
                                    tf_shape_unknown()), 0},
                    {tt_placeholder(g, "momentum", TF_FLOAT32,
                                    tf_shape_scalar()), 0}};
  tt_node(g, "ApplyMomentum", "apply", in, 5, NULL, 0);
  tf_session *s = tr_session(g);
  tf_tensor *w = tt_rand(TF_FLOAT32, tf_shape_of(1, 3), -1, 1);
  tr_assign(s, g, "w", w);
  tf_tensor *lr = tf_tensor_scalar_f32(0.1f), *mu = tf_tensor_scalar_f32(0.9f);
  const char *names[] = {"lr", "grad", "momentum"};
  tf_tensor *vals[] = {lr, w, mu};
  const char *msg = tr_run_fail(s, names, vals, 3, "apply",
                                TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "var and accum are the same variable w"), "%s",
                msg);
  tr_expect_var(s, "w", w);
  tf_tensor *t[] = {w, lr, mu};
  tt_free(t, 3);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

/* ---- copy-on-write and concurrency --------------------------------------- */

START_TEST(test_held_value_unchanged) {
  tr_rig *r = tr_rig_new("ApplyAdagrad", TF_FLOAT32, TF_INT32, NULL, 0);
  tr_ref ref;
  tr_rig_init_random(r, tf_shape_of(1, 50), &ref);
  tf_tensor *held = tr_rig_fetch(r, 0);
  tf_tensor *copy;
  tf_status st;
  ck_assert_int_eq(tf_tensor_copy(held, &copy, &st), TF_OK);
  tr_hp hp = tr_hp_random("ApplyAdagrad", false, true);
  tr_hp_step(&hp, 1);
  tf_tensor *g = tt_rand(TF_FLOAT32, tf_shape_of(1, 50), -1, 1);
  tr_rig_step(r, &hp, g, NULL);
  ck_assert(tf_tensor_equal(held, copy));
  tr_ref_dense(&ref, &hp, g);
  tr_rig_compare(r, &ref, 1e-6, 1e-6);
  tf_tensor *t[] = {held, copy, g};
  tt_free(t, 3);
  tr_ref_fini(&ref);
  tr_rig_free(r);
}
END_TEST

typedef struct hammer_arg {
  tf_session *s;
  const char *target;
  int steps;
  tf_code rc;
} hammer_arg;

static void *hammer(void *p) {
  hammer_arg *a = p;
  tf_run_options o = {.timeout_ms = 20000};
  tf_status st;
  a->rc = TF_OK;
  for (int i = 0; i < a->steps && a->rc == TF_OK; i++) {
    a->rc = tf_session_run(a->s, &o, NULL, NULL, 0, NULL, NULL, 0, &a->target,
                           1, NULL, &st);
  }
  return NULL;
}

/* 4 threads x 50 SGD steps of the same delta: exactly 200 subtractions;
 * meanwhile two Momentum ops lock (a, b) and (b, a) without deadlock. */
START_TEST(test_concurrent_updates) {
  tf_graph *g = tf_graph_new();
  tf_node *w = tr_variable(g, "w", TF_FLOAT64);
  tf_node *a = tr_variable(g, "a", TF_FLOAT64);
  tf_node *b = tr_variable(g, "b", TF_FLOAT64);
  tf_output lr = {tt_const(g, "lr", tf_tensor_scalar_f64(0.5)), 0};
  tf_output mu = {tt_const(g, "mu", tf_tensor_scalar_f64(0.25)), 0};
  double ones[64];
  for (int i = 0; i < 64; i++) {
    ones[i] = 1.0;
  }
  tf_output delta = {tt_const(g, "delta", tt_tensor(TF_FLOAT64,
                                                    tf_shape_of(1, 64), ones)),
                     0};
  tt_node(g, "ApplyGradientDescent", "sgd", (tf_output[]){{w, 0}, lr, delta},
          3, NULL, 0);
  tt_node(g, "ApplyMomentum", "ab", (tf_output[]){{a, 0}, {b, 0}, lr, delta,
                                                  mu}, 5, NULL, 0);
  tt_node(g, "ApplyMomentum", "ba", (tf_output[]){{b, 0}, {a, 0}, lr, delta,
                                                  mu}, 5, NULL, 0);
  tf_session_options so = {.inter_op_threads = 4};
  tf_status st;
  tf_session *s = tf_session_new(g, &so, &st);
  ck_assert_msg(s != NULL, "%s", st.msg);
  tf_tensor *z;
  ck_assert_int_eq(tf_tensor_new_zeros(TF_FLOAT64, &(tf_shape){1, {64}}, &z,
                                       &st), TF_OK);
  tr_assign(s, g, "w", z);
  tr_assign(s, g, "a", z);
  tr_assign(s, g, "b", z);
  pthread_t th[6];
  hammer_arg args[6];
  const char *targets[] = {"sgd", "sgd", "sgd", "sgd", "ab", "ba"};
  for (int i = 0; i < 6; i++) {
    args[i] = (hammer_arg){s, targets[i], 50, TF_OK};
    pthread_create(&th[i], NULL, hammer, &args[i]);
  }
  for (int i = 0; i < 6; i++) {
    pthread_join(th[i], NULL);
    ck_assert_int_eq(args[i].rc, TF_OK);
  }
  double want[64];
  for (int i = 0; i < 64; i++) {
    want[i] = 0;
    for (int k = 0; k < 200; k++) {
      want[i] -= 0.5;
    }
  }
  tf_tensor *wt = tt_tensor(TF_FLOAT64, tf_shape_of(1, 64), want);
  tr_expect_var(s, "w", wt);
  tf_tensor_unref(wt);
  tf_tensor_unref(z);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_training");
  TCase *c = tcase_create("core");
  tcase_set_timeout(c, 30);
  tcase_add_test(c, test_dense_f32);
  tcase_add_test(c, test_dense_f64);
  tcase_add_test(c, test_dense_variants);
  tcase_add_test(c, test_dense_parallel);
  tcase_add_test(c, test_uninitialized);
  tcase_add_test(c, test_shape_errors);
  tcase_add_test(c, test_same_variable_twice);
  tcase_add_test(c, test_held_value_unchanged);
  tcase_add_test(c, test_concurrent_updates);
  suite_add_tcase(s, c);
  return s;
}
