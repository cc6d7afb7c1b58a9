/* layers_rnn_test.c: tf_layer_lstm (lib/core/cc/layers_rnn.c) against an
 * independent float64 recomputation of the LSTM recurrence (gates i f g o)
 * on seeded random inputs, weights and bias; its variables and their
 * shapes; a batch size known only at run time; its gradients (through the
 * while loop) with respect to the input, both kernels and the bias against
 * float64 central differences; bad inputs. */
#include <check.h>
#include <stdlib.h>

#include "lib/core/cc/layers_impl.h"
#include "test/unit/core/cc/layers_testlib.h"

/* Assigns a random value in [-0.5, 0.5) to the variable v (its init ran). */
static void assign_random(tf_graph *g, tf_session *s, const tf_layer_var *v) {
  tf_tensor *val = tt_rand(v->dtype, v->shape, -0.5, 0.5);
  tf_node *c = tt_const(g, NULL, val);
  tf_output in[2] = {v->var, {c, 0}};
  tf_node *a = tt_node(g, "Assign", NULL, in, 2, NULL, 0);
  const char *t[] = {tf_node_name(a)};
  tf_status st;
  ck_assert_msg(tf_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, t, 1, NULL, &st) ==
                TF_OK, "assign %s: %s", v->name, st.msg);
}

START_TEST(test_lstm_matches_float64_recurrence) {
  tt_rng_reseed(tt_seed() ^ 0x157u);
  const int64_t nb = 3, nt = 5, ni = 4, nh = 6;
  tf_graph *g = tf_graph_new();
  tf_layers *l = tf_layers_new(g, 7);
  tf_status st;
  /* Batch unknown in the graph: the zero state takes it at run time. */
  tf_node *x = tt_placeholder(g, "x", TF_FLOAT64, tf_shape_of(3, -1, nt, ni));
  tf_output h;
  LT_OK(tf_layer_lstm(l, (tf_output){x, 0}, nh, NULL, &h, &st));
  ck_assert_int_eq(tf_layers_num_vars(l), 3);
  const char *names[] = {"lstm/kernel", "lstm/recurrent_kernel", "lstm/bias"};
  tf_shape shapes[] = {tf_shape_of(2, ni, 4 * nh), tf_shape_of(2, nh, 4 * nh),
                       tf_shape_of(1, 4 * nh)};
  for (int i = 0; i < 3; i++) {
    const tf_layer_var *v = tf_layers_var(l, i);
    ck_assert_str_eq(v->name, names[i]);
    ck_assert(tf_shape_equal(&v->shape, &shapes[i]));
  }
  tf_session *s = lt_session(g, l);
  assign_random(g, s, tf_layers_var(l, 2)); /* the bias: zeros otherwise */
  tf_tensor *xv = tt_rand(TF_FLOAT64, tf_shape_of(3, nb, nt, ni), -1, 1);
  const char *feed[] = {"x"};
  tf_output fetch[4] = {h, tf_layers_var(l, 0)->var, tf_layers_var(l, 1)->var,
                        tf_layers_var(l, 2)->var};
  tf_tensor *out[4];
  lt_run(s, feed, &xv, 1, fetch, out, 4);
  tt_assert_shape(out[0], 2, nb, nh);
  double *want = malloc((size_t)(nb * nh) * sizeof *want);
  tt_lstm_ref(xv, out[1], out[2], out[3], nb, nt, ni, nh, want);
  tf_tensor *wt = tt_tensor(TF_FLOAT64, tf_shape_of(2, nb, nh), want);
  tt_assert_close(out[0], wt, 1e-12, 1e-12);
  free(want);
  tf_tensor_unref(wt);
  for (int i = 0; i < 4; i++) tf_tensor_unref(out[i]);
  tf_tensor_unref(xv);
  tf_session_free(s);
  tf_layers_free(l);
  tf_graph_free(g);
}
END_TEST

static tf_output lstm_build(tf_graph *g, const tf_output *in, int n_in, void *arg) {
  tf_layers *l = tf_layers_new(g, 1);
  tf_status st;
  tf_status_init(&st);
  tf_output h = tf__layers_lstm(l, in[0], 3, in[1], in[2], in[3], &st);
  ck_assert_msg(h.node != NULL, "%s", st.msg);
  tf_layers_free(l);
  return h;
}

/* d loss / d (x, kernel, recurrent_kernel, bias) through the loop and its
 * gradient loop, against central differences (|err| <= 1e-7 + 1e-6 |num|). */
START_TEST(test_lstm_gradients) {
  tt_rng_reseed(tt_seed() ^ 0x1571u);
  tf_tensor *in[4] = {tt_rand(TF_FLOAT64, tf_shape_of(3, 2, 4, 3), -1, 1),
                      tt_rand(TF_FLOAT64, tf_shape_of(2, 3, 12), -0.6, 0.6),
                      tt_rand(TF_FLOAT64, tf_shape_of(2, 3, 12), -0.6, 0.6),
                      tt_rand(TF_FLOAT64, tf_shape_of(1, 12), -0.3, 0.3)};
  tt_grad_check(lstm_build, NULL, in, 4, NULL, 1e-7, 1e-6);
  for (int i = 0; i < 4; i++) tf_tensor_unref(in[i]);
}
END_TEST

START_TEST(test_lstm_errors) {
  tf_graph *g = tf_graph_new();
  tf_layers *l = tf_layers_new(g, 1);
  tf_status st;
  tf_output h;
  tf_node *x2 = tt_placeholder(g, "x2", TF_FLOAT32, tf_shape_of(2, 4, 5));
  ck_assert_int_eq(tf_layer_lstm(l, (tf_output){x2, 0}, 8, NULL, &h, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "[batch, time, in]") != NULL, "%s", st.msg);
  tf_node *xu = tt_placeholder(g, "xu", TF_FLOAT32, tf_shape_of(3, 4, -1, 5));
  ck_assert_int_eq(tf_layer_lstm(l, (tf_output){xu, 0}, 8, NULL, &h, &st),
                   TF_INVALID_ARGUMENT);
  tf_node *x = tt_placeholder(g, "x", TF_FLOAT32, tf_shape_of(3, 4, 3, 5));
  ck_assert_int_eq(tf_layer_lstm(l, (tf_output){x, 0}, 0, NULL, &h, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "units") != NULL, "%s", st.msg);
  tf_node *xi = tt_placeholder(g, "xi", TF_INT32, tf_shape_of(3, 4, 3, 5));
  ck_assert_int_eq(tf_layer_lstm(l, (tf_output){xi, 0}, 8, NULL, &h, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_int_eq(tf_layers_num_vars(l), 0);
  tf_layers_free(l);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("layers_rnn");
  TCase *tc = tcase_create("lstm");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_lstm_matches_float64_recurrence);
  tcase_add_test(tc, test_lstm_gradients);
  tcase_add_test(tc, test_lstm_errors);
  suite_add_tcase(s, tc);
  return s;
}
