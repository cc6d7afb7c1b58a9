/* train_schedule_test.c: the learning-rate schedules against TF1's closed
 * forms (computed here in float64) at many global steps, fed as int64,
 * int32 or float: exponential and inverse-time decay with and without
 * staircase, polynomial decay with and without cycle (powers 1, 0.5, 2),
 * piecewise constant at, before and after its boundaries (int64 and
 * float x); bad arguments fail naming them and leave the graph unchanged.
 * clip_by_global_norm against a plain computation: dense and sparse
 * gradients (duplicate rows counted as given, indices kept), a norm below
 * the clip (unchanged), a zero norm, an infinite norm (all NaN), missing
 * gradients, and mixed dtypes rejected. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test/unit/testutil.h"
#include "tf/session.h"
#include "tf/train.h"

/* Evaluates out with the Placeholder "step" fed step (as dt). */
static double eval_at(tf_graph *g, tf_output out, tf_dtype dt, double step) {
  tf_status st;
  tf_session *s = tf_session_new(g, NULL, &st);
  ck_assert_msg(s != NULL, "%s", st.msg);
  const char *feed = "step";
  tf_tensor *v = tt_tensor(dt, tf_shape_scalar(), &step), *r = NULL;
  char name[256];
  snprintf(name, sizeof name, "%s:%d", tf_node_name(out.node), out.index);
  const char *fetch = name;
  tf_run_options o = {.timeout_ms = 20000};
  ck_assert_msg(tf_session_run(s, &o, &feed, &v, 1, &fetch, &r, 1, NULL, 0,
                               NULL, &st) == TF_OK,
                "%s", st.msg);
  ck_assert_int_eq(r->dtype, TF_FLOAT32);
  ck_assert_int_eq(r->shape.rank, 0);
  double x = tf_tensor_get_f64(r, 0);
  tf_tensor_unref(v);
  tf_tensor_unref(r);
  tf_session_free(s);
  return x;
}

static void expect_near(double got, double want, double step,
                        const char *what) {
  ck_assert_msg(fabs(got - want) <= 1e-7 + 2e-6 * fabs(want),
                "%s at step %g: got %.9g, want %.9g", what, step, got, want);
}

static const double steps[] = {0, 1, 7, 99, 100, 101, 250, 999, 1000, 4321};
#define N_STEPS (sizeof steps / sizeof *steps)

START_TEST(test_exponential_and_inverse_time) {
  for (int sc = 0; sc < 2; sc++) {
    tf_graph *g = tf_graph_new();
    tf_status st;
    tf_output step = {tt_placeholder(g, "step", TF_INT64, tf_shape_scalar()),
                      0};
    tf_output e, it;
    ck_assert_int_eq(tf_exponential_decay(g, 0.5, step, 100, 0.96, sc, &e,
                                          &st), TF_OK);
    ck_assert_int_eq(tf_inverse_time_decay(g, 0.1, step, 50, 0.5, sc, &it,
                                           &st), TF_OK);
    ck_assert_msg(strncmp(tf_node_name(e.node), "ExponentialDecay/", 17) ==
                      0, "%s", tf_node_name(e.node));
    for (size_t i = 0; i < N_STEPS; i++) {
      double s = steps[i];
      double pe = sc ? floor(s / 100) : s / 100;
      double pi = sc ? floor(s / 50) : s / 50;
      expect_near(eval_at(g, e, TF_INT64, s), 0.5 * pow(0.96, pe), s, "exp");
      expect_near(eval_at(g, it, TF_INT64, s), 0.1 / (1 + 0.5 * pi), s,
                  "inverse");
    }
    tf_graph_free(g);
  }
}
END_TEST

static double poly(double lr, double s, double ds, double end, double p,
                   bool cycle) {
  if (cycle) {
    ds *= s == 0 ? 1 : ceil(s / ds);
  } else {
    s = fmin(s, ds);
  }
  return (lr - end) * pow(1 - s / ds, p) + end;
}

START_TEST(test_polynomial) {
  const double powers[] = {1, 0.5, 2};
  for (int c = 0; c < 2; c++) {
    for (int k = 0; k < 3; k++) {
      tf_graph *g = tf_graph_new();
      tf_status st;
      tf_output step = {tt_placeholder(g, "step", TF_INT32,
                                       tf_shape_scalar()), 0};
      tf_output out;
      ck_assert_int_eq(tf_polynomial_decay(g, 0.1, step, 1000, 0.0001,
                                           powers[k], c, &out, &st), TF_OK);
      for (size_t i = 0; i < N_STEPS; i++) {
        double s = steps[i];
        expect_near(eval_at(g, out, TF_INT32, s),
                    poly(0.1, s, 1000, 0.0001, powers[k], c), s, "poly");
      }
      tf_graph_free(g);
    }
  }
}
END_TEST

START_TEST(test_piecewise) {
  const double bd[] = {100, 200, 1000};
  const double vals[] = {1.0, 0.5, 0.1, 0.01};
  tf_dtype dts[] = {TF_INT64, TF_FLOAT32};
  for (int d = 0; d < 2; d++) {
    tf_graph *g = tf_graph_new();
    tf_status st;
    tf_output x = {tt_placeholder(g, "step", dts[d], tf_shape_scalar()), 0};
    tf_output out;
    ck_assert_int_eq(tf_piecewise_constant(g, x, bd, 3, vals, &out, &st),
                     TF_OK);
    const double at[] = {0, 99, 100, 101, 199, 200, 201, 1000, 1001, 5000};
    const double want[] = {1, 1, 1, 0.5, 0.5, 0.5, 0.1, 0.1, 0.01, 0.01};
    for (int i = 0; i < 10; i++) {
      ck_assert_double_eq(eval_at(g, out, dts[d], at[i]), (float)want[i]);
    }
    if (dts[d] == TF_FLOAT32) {
      ck_assert_double_eq(eval_at(g, out, dts[d], 100.5), (float)0.5);
    }
    tf_graph_free(g);
  }
}
END_TEST

START_TEST(test_schedule_errors) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_output step = {tt_placeholder(g, "step", TF_INT64, tf_shape_scalar()), 0};
  tf_output vec = {tt_placeholder(g, "vec", TF_INT64, tf_shape_of(1, 2)), 0};
  tf_output str = {tt_placeholder(g, "str", TF_STRING, tf_shape_scalar()), 0};
  tf_output out = {(tf_node *)0x1, 0};
  int n0 = tf_graph_num_nodes(g);
  ck_assert_int_eq(tf_exponential_decay(g, 0.1, step, 0, 0.9, false, &out,
                                        &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "ExponentialDecay: decay_steps must be > 0"),
                "%s", st.msg);
  ck_assert_ptr_null(out.node);
  ck_assert_int_eq(tf_inverse_time_decay(g, 0.1, vec, 10, 0.9, false, &out,
                                         &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "global_step must be a scalar, got shape [2]"),
                "%s", st.msg);
  ck_assert_int_eq(tf_polynomial_decay(g, 0.1, str, 10, 0, 1, false, &out,
                                       &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "got string"), "%s", st.msg);
  const double bd[] = {10.5, 20}, bd2[] = {20, 10}, vals[] = {1, 2, 3};
  ck_assert_int_eq(tf_piecewise_constant(g, step, bd, 2, vals, &out, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "boundary 0 (10.5) is not an integer but x is "
                               "int64"),
                "%s", st.msg);
  ck_assert_int_eq(tf_piecewise_constant(g, step, bd2, 2, vals, &out, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "boundaries must increase"), "%s", st.msg);
  ck_assert_int_eq(tf_graph_num_nodes(g), n0);
  tf_graph_free(g);
}
END_TEST

/* ---- clip_by_global_norm ------------------------------------------------- */

static tf_tensor *run1(tf_graph *g, tf_output o) {
  tf_status st;
  tf_session *s = tf_session_new(g, NULL, &st);
  char name[256];
  snprintf(name, sizeof name, "%s:%d", tf_node_name(o.node), o.index);
  const char *fetch = name;
  tf_tensor *r = NULL;
  tf_run_options opt = {.timeout_ms = 20000};
  ck_assert_msg(tf_session_run(s, &opt, NULL, NULL, 0, &fetch, &r, 1, NULL, 0,
                               NULL, &st) == TF_OK,
                "%s", st.msg);
  tf_session_free(s);
  return r;
}

static double sumsq(const tf_tensor *t) {
  double s = 0;
  for (int64_t i = 0; i < t->n; i++) {
    double v = tf_tensor_get_f64(t, i);
    s += v * v;
  }
  return s;
}

/* A dense, a missing and a sparse gradient (duplicate rows), scaled by
 * `mag`; checks the clipped values and the norm. */
static void check_clip(tf_dtype dt, double mag, double clip) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_tensor *d = tt_rand(dt, tf_shape_of(2, 3, 4), -mag, mag);
  tf_tensor *rows = tt_rand(dt, tf_shape_of(2, 3, 2), -mag, mag);
  int64_t ix[] = {4, 1, 4};
  tf_tensor *idx = tt_tensor_i(TF_INT32, tf_shape_of(1, 3), ix);
  double norm = sqrt(sumsq(d) + sumsq(rows));
  tf_grad in[3] = {{.values = {tt_const(g, NULL, tf_tensor_ref(d)), 0}},
                   {{NULL, 0}},
                   {.values = {tt_const(g, NULL, tf_tensor_ref(rows)), 0},
                    .indices = {tt_const(g, NULL, tf_tensor_ref(idx)), 0},
                    .dense_shape = {tt_const(g, NULL, tf_tensor_vec_i32(
                                                     2, (int32_t[]){6, 2})),
                                    0}}};
  tf_grad out[3];
  tf_output gn;
  ck_assert_int_eq(tf_clip_by_global_norm(g, in, 3, clip, out, &gn, &st),
                   TF_OK);
  ck_assert_ptr_null(out[1].values.node);
  ck_assert(out[2].indices.node == in[2].indices.node &&
            out[2].dense_shape.node == in[2].dense_shape.node);
  tf_tensor *got_norm = run1(g, gn);
  ck_assert_double_eq_tol(tf_tensor_get_f64(got_norm, 0), norm,
                          1e-6 * norm + 1e-12);
  double scale = clip / fmax(norm, clip);
  tf_tensor *src[] = {d, rows};
  int which[] = {0, 2};
  for (int k = 0; k < 2; k++) {
    tf_tensor *got = run1(g, out[which[k]].values);
    double *w = malloc((size_t)src[k]->n * sizeof *w);
    for (int64_t i = 0; i < src[k]->n; i++) {
      w[i] = tf_tensor_get_f64(src[k], i) * scale;
    }
    tf_tensor *want = tt_tensor(dt, src[k]->shape, w);
    tt_assert_close(got, want, 1e-12, dt == TF_FLOAT32 ? 1e-6 : 1e-14);
    free(w);
    tf_tensor_unref(got);
    tf_tensor_unref(want);
  }
  tf_tensor *t[] = {d, rows, idx, got_norm};
  tt_free(t, 4);
  tf_graph_free(g);
}

START_TEST(test_clip) {
  tt_rng_reseed(tt_seed() ^ 31);
  check_clip(TF_FLOAT32, 3, 1.5);    /* clipped */
  check_clip(TF_FLOAT64, 0.01, 5);   /* below the clip: unchanged */
  check_clip(TF_FLOAT64, 10, 0.25);
  check_clip(TF_FLOAT32, 0, 1);      /* zero norm */
}
END_TEST

START_TEST(test_clip_inf_and_errors) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  double v[] = {1, INFINITY, 2};
  tf_grad in[2] = {{.values = {tt_const(g, NULL, tt_tensor(TF_FLOAT64,
                                                           tf_shape_of(1, 3),
                                                           v)), 0}},
                   {.values = {tt_const(g, NULL, tf_tensor_scalar_f64(3)), 0}}};
  tf_grad out[2];
  tf_output gn;
  ck_assert_int_eq(tf_clip_by_global_norm(g, in, 2, 1.0, out, &gn, &st),
                   TF_OK);
  for (int k = 0; k < 2; k++) {
    tf_tensor *r = run1(g, out[k].values);
    for (int64_t i = 0; i < r->n; i++) {
      ck_assert(isnan(tf_tensor_get_f64(r, i)));
    }
    tf_tensor_unref(r);
  }
  int n0 = tf_graph_num_nodes(g);
  tf_grad mixed[2] = {in[0], {.values = {tt_const(g, NULL,
                                                 tf_tensor_scalar_f32(1)), 0}}};
  n0++;
  ck_assert_int_eq(tf_clip_by_global_norm(g, mixed, 2, 1.0, out, &gn, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "gradient 1 is float32; all must be float32 "
                               "or all float64"),
                "%s", st.msg);
  ck_assert_int_eq(tf_clip_by_global_norm(g, in, 2, 0, out, &gn, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "clip_norm must be > 0"), "%s", st.msg);
  tf_grad none[1] = {{{NULL, 0}}};
  ck_assert_int_eq(tf_clip_by_global_norm(g, none, 1, 1, out, &gn, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "no gradient given"), "%s", st.msg);
  ck_assert_ptr_null(gn.node);
  ck_assert_int_eq(tf_graph_num_nodes(g), n0);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("train_schedule");
  TCase *c = tcase_create("core");
  tcase_set_timeout(c, 30);
  tcase_add_test(c, test_exponential_and_inverse_time);
  tcase_add_test(c, test_polynomial);
  tcase_add_test(c, test_piecewise);
  tcase_add_test(c, test_schedule_errors);
  tcase_add_test(c, test_clip);
  tcase_add_test(c, test_clip_inf_and_errors);
  suite_add_tcase(s, c);
  return s;
}
