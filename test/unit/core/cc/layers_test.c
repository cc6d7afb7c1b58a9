/* layers_test.c: the layers context (lib/core/cc/layers.c): variables and
 * their initializers (exact values for zeros/ones/constant, statistics for
 * Glorot uniform, He normal and truncated normal on large tensors), TF1
 * seeding and determinism, the init target, TF names, and the exact
 * parameter counts of the MLP and CNN; errors leave the graph
 * unchanged. Everything runs through tf_session_run. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test/unit/core/cc/layers_testlib.h"

/* Mean, standard deviation, min and max of a float tensor. */
typedef struct stats {
  double mean, sd, min, max;
} stats;

static stats stats_of(const tf_tensor *t) {
  stats s = {0, 0, INFINITY, -INFINITY};
  for (int64_t i = 0; i < t->n; i++) {
    double v = lt_at(t, i);
    s.mean += v;
    s.min = fmin(s.min, v);
    s.max = fmax(s.max, v);
  }
  s.mean /= (double)t->n;
  for (int64_t i = 0; i < t->n; i++) {
    double d = lt_at(t, i) - s.mean;
    s.sd += d * d;
  }
  s.sd = sqrt(s.sd / (double)(t->n - 1));
  return s;
}

/* The initial value of one variable of shape s and dtype dt from init, in
 * a fresh graph with context seed `seed`. */
static tf_tensor *init_value(tf_shape s, tf_dtype dt, tf_initializer init,
                             int64_t seed) {
  tf_graph *g = tf_graph_new();
  tf_layers *l = tf_layers_new(g, seed);
  tf_status st;
  tf_output v;
  LT_OK(tf_layers_variable(l, "v", s, dt, &init, true, &v, &st));
  tf_tensor *out;
  lt_run_once(g, l, NULL, NULL, 0, &v, &out, 1);
  tf_layers_free(l);
  tf_graph_free(g);
  return out;
}

/* Zeros, ones and a constant: exact, in every supported dtype; the
 * default (NULL) is zeros; a scalar variable works. */
START_TEST(test_init_constants) {
  const tf_dtype dts[] = {TF_FLOAT32, TF_FLOAT64, TF_INT32, TF_INT64};
  for (size_t d = 0; d < 4; d++) {
    tf_initializer inits[] = {tf_init_zeros(), tf_init_ones(),
                              tf_init_constant(-3.0)};
    const double want[] = {0, 1, -3};
    for (int k = 0; k < 3; k++) {
      tf_tensor *t = init_value(tf_shape_of(2, 3, 5), dts[d], inits[k], 1);
      ck_assert_int_eq(t->dtype, dts[d]);
      tt_assert_shape(t, 2, 3, 5);
      for (int64_t i = 0; i < t->n; i++) {
        ck_assert_double_eq(lt_at(t, i), want[k]);
      }
      tf_tensor_unref(t);
    }
  }
  tf_graph *g = tf_graph_new();
  tf_layers *l = tf_layers_new(g, 0);
  tf_status st;
  tf_output v;
  LT_OK(tf_layers_variable(l, "s", tf_shape_scalar(), TF_FLOAT32, NULL, false,
                           &v, &st));
  tf_tensor *out;
  lt_run_once(g, l, NULL, NULL, 0, &v, &out, 1);
  ck_assert_int_eq(out->shape.rank, 0);
  ck_assert_double_eq(lt_at(out, 0), 0);
  tf_tensor_unref(out);
  tf_layers_free(l);
  tf_graph_free(g);
}
END_TEST

/* Glorot uniform on a matrix and on a conv kernel: every value in
 * [-limit, limit) with limit = sqrt(6 / (fan_in + fan_out)) (fans of a
 * conv kernel include the receptive field), the extremes close to the
 * limit, mean ~0 and sd ~limit / sqrt(3) within 2% (N >= 200k: the sd
 * estimate's own error is ~0.2%). */
START_TEST(test_init_glorot) {
  const tf_shape shapes[] = {tf_shape_of(2, 400, 600),
                             tf_shape_of(4, 5, 5, 32, 64)};
  const double fan_sum[] = {400 + 600, 5 * 5 * 32 + 5 * 5 * 64};
  for (int k = 0; k < 2; k++) {
    for (int d = 0; d < 2; d++) {
      tf_dtype dt = d ? TF_FLOAT64 : TF_FLOAT32;
      tf_tensor *t = init_value(shapes[k], dt, tf_init_glorot_uniform(0), 42);
      double limit = sqrt(6.0 / fan_sum[k]);
      stats s = stats_of(t);
      ck_assert_msg(s.min >= -limit * (1 + 1e-6) && s.max < limit * (1 + 1e-6),
                    "values [%g, %g] outside +-%g", s.min, s.max, limit);
      ck_assert_msg(s.min < -0.99 * limit && s.max > 0.99 * limit,
                    "values [%g, %g] do not reach +-%g", s.min, s.max, limit);
      ck_assert_msg(fabs(s.mean) < 0.01 * limit, "mean %g", s.mean);
      double want_sd = limit / sqrt(3.0);
      ck_assert_msg(fabs(s.sd - want_sd) < 0.02 * want_sd, "sd %g, want %g",
                    s.sd, want_sd);
      tf_tensor_unref(t);
    }
  }
}
END_TEST

/* He normal: sd sqrt(2 / fan_in) within 2% after truncation (TF's
 * VarianceScaling correction), nothing beyond 2 sd of the underlying
 * normal, mean ~0; fan_in of a conv kernel is kh*kw*cin. */
START_TEST(test_init_he_normal) {
  const tf_shape shapes[] = {tf_shape_of(2, 512, 512),
                             tf_shape_of(4, 3, 3, 64, 128)};
  const double fan_in[] = {512, 3 * 3 * 64};
  for (int k = 0; k < 2; k++) {
    tf_tensor *t = init_value(shapes[k], TF_FLOAT32, tf_init_he_normal(0), 7);
    double want_sd = sqrt(2.0 / fan_in[k]);
    double bound = 2 * want_sd / 0.87962566103423978;
    stats s = stats_of(t);
    ck_assert_msg(fabs(s.sd - want_sd) < 0.02 * want_sd, "sd %g, want %g",
                  s.sd, want_sd);
    ck_assert_msg(fabs(s.mean) < 0.01 * want_sd, "mean %g", s.mean);
    ck_assert_msg(s.min >= -bound * (1 + 1e-6) && s.max <= bound * (1 + 1e-6),
                  "values [%g, %g] beyond 2 sd %g", s.min, s.max, bound);
    ck_assert_msg(s.max > 0.98 * bound, "max %g never near the bound %g", s.max,
                  bound);
    tf_tensor_unref(t);
  }
}
END_TEST

/* Truncated normal(mean 1, sd 0.5): every value within mean +- 2 sd, the
 * mean within 1% of sd, and the sd of a normal truncated at 2 sd
 * (0.8796 * sd) within 2%; float64 too. */
START_TEST(test_init_truncated_normal) {
  for (int d = 0; d < 2; d++) {
    tf_dtype dt = d ? TF_FLOAT64 : TF_FLOAT32;
    tf_tensor *t = init_value(tf_shape_of(1, 250000), dt,
                              tf_init_truncated_normal(1.0, 0.5, 0), 11);
    stats s = stats_of(t);
    ck_assert_msg(s.min >= 0.0 - 1e-6 && s.max <= 2.0 + 1e-6,
                  "values [%g, %g] outside mean +- 2 sd", s.min, s.max);
    ck_assert_msg(fabs(s.mean - 1.0) < 0.005, "mean %g", s.mean);
    double want_sd = 0.5 * 0.87962566103423978;
    ck_assert_msg(fabs(s.sd - want_sd) < 0.02 * want_sd, "sd %g, want %g",
                  s.sd, want_sd);
    tf_tensor_unref(t);
  }
}
END_TEST

/* Seeds: the same context seed gives the same values in a new graph; a
 * different context seed or op seed gives different ones; an explicit op
 * seed alone (context seed 0) is deterministic; no seed at all gives
 * fresh values per session; two random variables of one context differ
 * (distinct op seeds from the counter). */
START_TEST(test_seeds) {
  tf_shape s = tf_shape_of(2, 20, 30);
  tf_tensor *a = init_value(s, TF_FLOAT32, tf_init_glorot_uniform(0), 5);
  tf_tensor *b = init_value(s, TF_FLOAT32, tf_init_glorot_uniform(0), 5);
  tf_tensor *c = init_value(s, TF_FLOAT32, tf_init_glorot_uniform(0), 6);
  tf_tensor *d = init_value(s, TF_FLOAT32, tf_init_glorot_uniform(3), 5);
  ck_assert(tf_tensor_equal(a, b));
  ck_assert(!tf_tensor_equal(a, c));
  ck_assert(!tf_tensor_equal(a, d));
  tf_tensor *e = init_value(s, TF_FLOAT32, tf_init_he_normal(9), 0);
  tf_tensor *f = init_value(s, TF_FLOAT32, tf_init_he_normal(9), 0);
  ck_assert(tf_tensor_equal(e, f));
  tf_tensor *u1 = init_value(s, TF_FLOAT32, tf_init_he_normal(0), 0);
  tf_tensor *u2 = init_value(s, TF_FLOAT32, tf_init_he_normal(0), 0);
  ck_assert(!tf_tensor_equal(u1, u2));
  tf_tensor *all[] = {a, b, c, d, e, f, u1, u2};
  tt_free(all, 8);

  tf_graph *g = tf_graph_new();
  tf_layers *l = tf_layers_new(g, 5);
  tf_status st;
  tf_output v[2];
  tf_initializer gl = tf_init_glorot_uniform(0);
  LT_OK(tf_layers_variable(l, "v0", s, TF_FLOAT32, &gl, true, &v[0], &st));
  LT_OK(tf_layers_variable(l, "v1", s, TF_FLOAT32, &gl, true, &v[1], &st));
  tf_tensor *out[2];
  lt_run_once(g, l, NULL, NULL, 0, v, out, 2);
  ck_assert(!tf_tensor_equal(out[0], out[1]));
  tt_free(out, 2);
  tf_layers_free(l);
  tf_graph_free(g);
}
END_TEST

/* Names, records and the init target: the variable, its Initializer
 * scope and Assign; a non-trainable variable is listed but not counted;
 * tf_layers_trainable fills up to max and returns the full count; init
 * names are unique; before init a read fails naming the variable. */
START_TEST(test_variables_and_init) {
  tf_graph *g = tf_graph_new();
  tf_layers *l = tf_layers_new(g, 1);
  tf_status st;
  tf_output w, step, b;
  tf_graph_push_scope(g, "net");
  tf_initializer gl = tf_init_glorot_uniform(0);
  LT_OK(tf_layers_variable(l, "w", tf_shape_of(2, 3, 4), TF_FLOAT32, &gl, true,
                           &w, &st));
  LT_OK(tf_layers_variable(l, "global_step", tf_shape_scalar(), TF_INT64,
                           NULL, false, &step, &st));
  tf_graph_pop_scope(g);
  tf_initializer one = tf_init_ones();
  LT_OK(tf_layers_variable(l, "b", tf_shape_of(1, 4), TF_FLOAT32, &one, true,
                           &b, &st));
  ck_assert_str_eq(tf_node_name(w.node), "net/w");
  ck_assert_str_eq(tf_node_op(w.node), "VariableV2");
  ck_assert_ptr_nonnull(tf_graph_find(g, "net/w/Assign"));
  ck_assert_ptr_nonnull(tf_graph_find(g, "net/w/Initializer/RandomUniform"));
  ck_assert_int_eq(tf_layers_num_vars(l), 3);
  const tf_layer_var *r = tf_layers_var(l, 1);
  ck_assert_str_eq(r->name, "net/global_step");
  ck_assert(!r->trainable && r->dtype == TF_INT64 && r->shape.rank == 0);
  ck_assert_ptr_eq(tf_layers_var(l, 0)->assign, tf_graph_find(g, "net/w/Assign"));
  ck_assert_int_eq(tf_layers_num_params(l), 12 + 4);
  tf_output tv[1];
  ck_assert_int_eq(tf_layers_trainable(l, tv, 1), 2);
  ck_assert_ptr_eq(tv[0].node, w.node);
  ck_assert_int_eq(tf_layers_trainable(l, NULL, 0), 2);

  tf_session *s = tf_session_new(g, NULL, &st);
  const char *fn[] = {"b"};
  tf_tensor *out[3];
  ck_assert_int_eq(tf_session_run(s, NULL, NULL, NULL, 0, fn, out, 1, NULL, 0,
                                  NULL, &st), TF_FAILED_PRECONDITION);
  ck_assert_msg(strstr(st.msg, "b") != NULL, "%s", st.msg);
  tf_node *i1 = tf_layers_init_op(l, NULL, &st);
  tf_node *i2 = tf_layers_init_op(l, NULL, &st);
  ck_assert_str_eq(tf_node_name(i1), "init");
  ck_assert_str_eq(tf_node_name(i2), "init_1");
  ck_assert_int_eq(tf_node_num_control_inputs(i1), 3);
  const char *t[] = {"init_1"};
  LT_OK(tf_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, t, 1, NULL, &st));
  tf_output f[3] = {w, step, b};
  lt_run(s, NULL, NULL, 0, f, out, 3);
  tt_assert_shape(out[0], 2, 3, 4);
  ck_assert_int_eq(tf_tensor_get_i64(out[1], 0), 0);
  ck_assert_double_eq(lt_at(out[2], 3), 1.0);
  tt_free(out, 3);
  tf_session_free(s);
  tf_layers_free(l);
  tf_graph_free(g);
}
END_TEST

/* The MLP 784-256-128-10: 784*256+256 + 256*128+128 + 128*10+10 =
 * 235,146 parameters, TF names, shapes, the printed listing, and a forward
 * run giving [batch, 10]. */
START_TEST(test_mlp_params) {
  tf_graph *g = tf_graph_new();
  tf_layers *l = tf_layers_new(g, 1);
  tf_status st;
  tf_node *x = tt_placeholder(g, "x", TF_FLOAT32, tf_shape_of(2, -1, 784));
  tf_output h = {x, 0};
  const int64_t units[] = {256, 128, 10};
  for (int i = 0; i < 3; i++) {
    LT_OK(tf_layer_dense(l, h, units[i], i < 2 ? TF_ACT_RELU : TF_ACT_NONE,
                         true, NULL, NULL, NULL, &h, &st));
  }
  ck_assert_int_eq(tf_layers_num_params(l), 235146);
  ck_assert_int_eq(784 * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10, 235146);
  const char *names[] = {"dense/kernel", "dense/bias", "dense_1/kernel",
                         "dense_1/bias", "dense_2/kernel", "dense_2/bias"};
  const int64_t rows[] = {784, 256, 256, 128, 128, 10};
  ck_assert_int_eq(tf_layers_num_vars(l), 6);
  for (int i = 0; i < 6; i++) {
    const tf_layer_var *v = tf_layers_var(l, i);
    ck_assert_str_eq(v->name, names[i]);
    ck_assert_int_eq(v->shape.rank, i % 2 ? 1 : 2);
    ck_assert_int_eq(v->shape.dims[0], rows[i]);
  }
  ck_assert_str_eq(tf_node_name(h.node), "dense_2/BiasAdd");
  ck_assert_ptr_nonnull(tf_graph_find(g, "dense_1/Relu"));
  const tf_shape *hs = tf_node_output_shape(h.node, 0);
  ck_assert(hs->rank == 2 && hs->dims[0] == -1 && hs->dims[1] == 10);

  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  tf_layers_print_params(l, f);
  fclose(f);
  ck_assert_msg(strstr(text, "dense_1/kernel") && strstr(text, "[256,128]") &&
                strstr(text, "32768") &&
                strstr(text, "Total trainable parameters: 235146\n"),
                "%s", text);
  free(text);

  tf_tensor *in = tt_rand(TF_FLOAT32, tf_shape_of(2, 3, 784), 0, 1);
  const char *fn[] = {"x"};
  tf_tensor *out;
  lt_run_once(g, l, fn, &in, 1, &h, &out, 1);
  tt_assert_shape(out, 2, 3, 10);
  tf_tensor_unref(out);
  tf_tensor_unref(in);
  tf_layers_free(l);
  tf_graph_free(g);
}
END_TEST

/* The CNN (conv 5x5x32 SAME + ReLU, maxpool 2, conv 5x5x64 SAME +
 * ReLU, maxpool 2, dense hidden + ReLU, dense 10) on 28x28x1. With the
 * issue's dense 256: (5*5*1*32+32) + (5*5*32*64+64) + (7*7*64*256+256) +
 * (256*10+10) = 832 + 51,264 + 803,072 + 2,570 = 857,738. With TF's
 * tutorial dense 1024 it is 3,274,634. Shapes per layer; forward [2, 10]. */
static tf_output cnn(tf_graph *g, tf_layers *l, int64_t hidden) {
  tf_status st;
  tf_node *x = tt_placeholder(g, "x", TF_FLOAT32, tf_shape_of(4, -1, 28, 28, 1));
  tf_output h = {x, 0};
  LT_OK(tf_layer_conv2d(l, h, 32, 5, 5, 1, 1, "SAME", TF_ACT_RELU, true, NULL,
                        NULL, NULL, &h, &st));
  LT_OK(tf_layer_max_pool(l, h, 2, 2, 2, 2, "VALID", NULL, &h, &st));
  LT_OK(tf_layer_conv2d(l, h, 64, 5, 5, 1, 1, "SAME", TF_ACT_RELU, true, NULL,
                        NULL, NULL, &h, &st));
  LT_OK(tf_layer_max_pool(l, h, 2, 2, 2, 2, "VALID", NULL, &h, &st));
  const tf_shape *ps = tf_node_output_shape(h.node, h.index);
  ck_assert(ps->rank == 4 && ps->dims[1] == 7 && ps->dims[2] == 7 &&
            ps->dims[3] == 64);
  LT_OK(tf_layer_flatten(l, h, NULL, &h, &st));
  ck_assert_int_eq(tf_node_output_shape(h.node, h.index)->dims[1], 3136);
  LT_OK(tf_layer_dense(l, h, hidden, TF_ACT_RELU, true, NULL, NULL, NULL, &h,
                       &st));
  LT_OK(tf_layer_dense(l, h, 10, TF_ACT_NONE, true, NULL, NULL, NULL, &h, &st));
  return h;
}

START_TEST(test_cnn_params) {
  tf_graph *g = tf_graph_new();
  tf_layers *l = tf_layers_new(g, 1);
  tf_output y = cnn(g, l, 256);
  ck_assert_int_eq(832 + 51264 + 803072 + 2570, 857738);
  ck_assert_int_eq(tf_layers_num_params(l), 857738);
  const char *names[] = {"conv2d/kernel", "conv2d/bias", "conv2d_1/kernel",
                         "conv2d_1/bias", "dense/kernel", "dense/bias",
                         "dense_1/kernel", "dense_1/bias"};
  for (int i = 0; i < 8; i++) {
    ck_assert_str_eq(tf_layers_var(l, i)->name, names[i]);
  }
  const tf_shape *k = &tf_layers_var(l, 2)->shape;
  ck_assert(k->rank == 4 && k->dims[0] == 5 && k->dims[1] == 5 &&
            k->dims[2] == 32 && k->dims[3] == 64);
  ck_assert_ptr_nonnull(tf_graph_find(g, "max_pooling2d_1/MaxPool"));
  ck_assert_ptr_nonnull(tf_graph_find(g, "flatten/Reshape"));
  tf_tensor *in = tt_rand(TF_FLOAT32, tf_shape_of(4, 2, 28, 28, 1), 0, 1);
  const char *fn[] = {"x"};
  tf_tensor *out;
  lt_run_once(g, l, fn, &in, 1, &y, &out, 1);
  tt_assert_shape(out, 2, 2, 10);
  tf_tensor_unref(out);
  tf_tensor_unref(in);
  tf_layers_free(l);
  tf_graph_free(g);

  g = tf_graph_new();
  l = tf_layers_new(g, 1);
  cnn(g, l, 1024);
  ck_assert_int_eq(832 + 51264 + (3136 * 1024 + 1024) + 10250, 3274634);
  ck_assert_int_eq(tf_layers_num_params(l), 3274634);
  tf_layers_free(l);
  tf_graph_free(g);
}
END_TEST

/* Bad arguments give INVALID_ARGUMENT / ALREADY_EXISTS naming the problem
 * and add no node. */
START_TEST(test_variable_errors) {
  tf_graph *g = tf_graph_new();
  tf_layers *l = tf_layers_new(g, 1);
  tf_status st;
  tf_output v;
  ck_assert_ptr_null(tf_layers_init_op(l, NULL, &st));
  ck_assert_int_eq(st.code, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "no variables") != NULL, "%s", st.msg);
  LT_OK(tf_layers_variable(l, "v", tf_shape_of(1, 3), TF_FLOAT32, NULL, true,
                           &v, &st));
  int n = tf_graph_num_nodes(g);
  struct {
    const char *name;
    tf_shape shape;
    tf_dtype dt;
    tf_initializer init;
    tf_code code;
    const char *msg;
  } cases[] = {
      {"v", tf_shape_of(1, 3), TF_FLOAT32, tf_init_zeros(), TF_ALREADY_EXISTS,
       "already exists"},
      {"", tf_shape_of(1, 3), TF_FLOAT32, tf_init_zeros(), TF_INVALID_ARGUMENT,
       "empty name"},
      {"p", tf_shape_of(2, -1, 3), TF_FLOAT32, tf_init_zeros(),
       TF_INVALID_ARGUMENT, "fully defined"},
      {"q", tf_shape_of(1, 3), TF_INT32, tf_init_glorot_uniform(0),
       TF_INVALID_ARGUMENT, "int32"},
      {"r", tf_shape_of(1, 3), TF_FLOAT32,
       tf_init_truncated_normal(0, -1, 0), TF_INVALID_ARGUMENT, "stddev"},
      {"s", tf_shape_of(1, 3), TF_FLOAT32, {.kind = (tf_init_kind)99},
       TF_INVALID_ARGUMENT, "unknown initializer"},
      {"t", tf_shape_of(1, 3), TF_STRING, tf_init_zeros(), TF_INVALID_ARGUMENT,
       "string"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ck_assert_int_eq(tf_layers_variable(l, cases[i].name, cases[i].shape,
                                        cases[i].dt, &cases[i].init, true, &v,
                                        &st), cases[i].code);
    ck_assert_msg(strstr(st.msg, cases[i].msg) != NULL, "case %zu: %s", i,
                  st.msg);
    ck_assert_ptr_null(v.node);
  }
  ck_assert_int_eq(tf_graph_num_nodes(g), n);
  ck_assert_int_eq(tf_layers_num_vars(l), 1);
  tf_layers_free(l);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("layers");
  TCase *tc = tcase_create("layers");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_init_constants);
  tcase_add_test(tc, test_init_glorot);
  tcase_add_test(tc, test_init_he_normal);
  tcase_add_test(tc, test_init_truncated_normal);
  tcase_add_test(tc, test_seeds);
  tcase_add_test(tc, test_variables_and_init);
  tcase_add_test(tc, test_mlp_params);
  tcase_add_test(tc, test_cnn_params);
  tcase_add_test(tc, test_variable_errors);
  suite_add_tcase(s, tc);
  return s;
}
