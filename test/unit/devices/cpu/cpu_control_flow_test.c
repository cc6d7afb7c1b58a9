/* cpu_control_flow_test.c: the control-flow kernels, first called
 * directly (Switch sets only the taken output, Merge takes the first live
 * input, the rest forward their input without copying; errors name the
 * node), then through a session on graphs wired by hand: Switch/Merge
 * pairs over several dtypes, a fetch of the untaken side, and a counting
 * loop made of Enter/Merge/LoopCond/Switch/NextIteration/Exit nodes. */
#include <string.h>

#include "lib/core/graph/graph_impl.h"
#include "lib/core/framework/kernel.h"
#include "test/unit/testutil.h"

static tf_status st;

#define ASSERT_HAS(msg, sub)                                                   \
  ck_assert_msg(strstr((msg), (sub)) != NULL, "'%s' lacks '%s'", (msg), (sub))

static tf_node *mk(tf_graph *g, const char *op, const char *name,
                   const tf_output *in, int n, bool as_list) {
  tf_node_builder *b = tf_node_begin(g, op, name);
  if (as_list) {
    tf_node_add_input_list(b, in, n);
  } else {
    for (int i = 0; i < n; i++) {
      tf_node_add_input(b, in[i]);
    }
  }
  tf_node *nd = tf_node_finish(b, &st);
  ck_assert_msg(nd != NULL, "%s: %s", op, st.msg);
  return nd;
}

static tf_output out0(tf_node *n) { return (tf_output){n, 0}; }

static tf_output ph(tf_graph *g, const char *name, tf_dtype dt, tf_shape s) {
  return out0(tt_placeholder(g, name, dt, s));
}

/* Runs n's kernel directly on in[] (dead inputs as NULL). */
static tf_code call_kernel(tf_node *n, tf_tensor **in, tf_tensor **out) {
  const tf_kernel_def *k = tf_kernel_for_node(n, TF_DEVICE_CPU, &st);
  ck_assert_msg(k != NULL, "%s", st.msg);
  ck_assert(k->flags & TF_KERNEL_CHEAP);
  for (int i = 0; i < tf_node_num_outputs(n); i++) {
    out[i] = NULL;
  }
  tf_status_init(&st);
  tf_kernel_ctx ctx = {.node = n, .def = k, .device = tf_cpu_device(),
                       .n_inputs = tf_node_num_inputs(n), .inputs = in,
                       .n_outputs = tf_node_num_outputs(n), .outputs = out,
                       .status = &st};
  return k->compute(&ctx);
}

START_TEST(test_switch_kernel) {
  tf_graph *g = tf_graph_new();
  tf_output in[2] = {ph(g, "x", TF_FLOAT32, tf_shape_unknown()),
                     ph(g, "p", TF_BOOL, tf_shape_unknown())};
  tf_node *sw = mk(g, "Switch", "sw", in, 2, false);
  tf_tensor *x = tt_rand(TF_FLOAT32, tf_shape_of(2, 2, 3), -1, 1);
  for (int pred = 0; pred < 2; pred++) {
    tf_tensor *args[2] = {x, tf_tensor_scalar_bool(pred)};
    tf_tensor *out[2];
    ck_assert_int_eq(call_kernel(sw, args, out), TF_OK);
    ck_assert_ptr_eq(out[pred], x); /* forwarded, not copied */
    ck_assert_ptr_null(out[!pred]); /* dead */
    tt_free(out, 2);
    tf_tensor_unref(args[1]);
  }
  tf_tensor *args[2] = {x, tt_rand(TF_BOOL, tf_shape_of(1, 2), 0, 1)};
  tf_tensor *out[2];
  ck_assert_int_eq(call_kernel(sw, args, out), TF_INVALID_ARGUMENT);
  ASSERT_HAS(st.msg, "node 'sw' (Switch): pred must be a scalar bool, got "
                     "shape [2]");
  ck_assert(out[0] == NULL && out[1] == NULL);
  tf_tensor_unref(args[1]);
  tf_tensor_unref(x);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_merge_kernel) {
  tf_graph *g = tf_graph_new();
  tf_output in[3] = {ph(g, NULL, TF_INT64, tf_shape_unknown()),
                     ph(g, NULL, TF_INT64, tf_shape_unknown()),
                     ph(g, NULL, TF_INT64, tf_shape_unknown())};
  tf_node *m = mk(g, "Merge", "m", in, 3, true);
  tf_tensor *a = tf_tensor_scalar_i64(7), *b = tf_tensor_vec_i64(2, (int64_t[]){1, 2});
  struct {
    tf_tensor *in[3];
    tf_tensor *want;
    int index;
  } cases[] = {{{NULL, b, a}, b, 1}, {{a, b, NULL}, a, 0},
               {{NULL, NULL, a}, a, 2}, {{NULL, NULL, NULL}, NULL, -1}};
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    tf_tensor *out[2];
    ck_assert_int_eq(call_kernel(m, cases[c].in, out), TF_OK);
    ck_assert_ptr_eq(out[0], cases[c].want);
    if (cases[c].want == NULL) {
      ck_assert_ptr_null(out[1]); /* all inputs dead: Merge is dead */
      continue;
    }
    ck_assert_int_eq(out[1]->dtype, TF_INT32);
    ck_assert_int_eq(out[1]->shape.rank, 0);
    ck_assert_int_eq(*(int32_t *)out[1]->data, cases[c].index);
    tt_free(out, 2);
  }
  tf_tensor_unref(a);
  tf_tensor_unref(b);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_forward_kernels) {
  tf_graph *g = tf_graph_new();
  tf_output s = ph(g, NULL, TF_STRING, tf_shape_unknown());
  tf_output p = ph(g, NULL, TF_BOOL, tf_shape_unknown());
  tf_node_builder *b = tf_node_begin(g, "Enter", "enter");
  tf_node_add_input(b, s);
  tf_node_set_attr(b, "frame_name", tf_attr_string("f"));
  tf_node *nodes[4] = {tf_node_finish(b, &st), mk(g, "Exit", "exit", &s, 1, false),
                       mk(g, "NextIteration", "next", &s, 1, false),
                       mk(g, "LoopCond", "lc", &p, 1, false)};
  tf_tensor *str;
  ck_assert_int_eq(tf_tensor_new(TF_STRING, &(tf_shape){1, {2}}, &str, &st), TF_OK);
  ck_assert_int_eq(tf_tensor_set_string(str, 1, "abc", 3, &st), TF_OK);
  tf_tensor *t = tf_tensor_scalar_bool(true);
  for (int i = 0; i < 4; i++) {
    tf_tensor *in[1] = {i == 3 ? t : str}, *out[1];
    ck_assert_int_eq(call_kernel(nodes[i], in, out), TF_OK);
    ck_assert_ptr_eq(out[0], in[0]);
    tf_tensor_unref(out[0]);
  }
  tf_tensor *v = tt_rand(TF_BOOL, tf_shape_of(1, 3), 0, 1), *out[1];
  ck_assert_int_eq(call_kernel(nodes[3], &v, out), TF_INVALID_ARGUMENT);
  ASSERT_HAS(st.msg, "node 'lc' (LoopCond): the loop condition must be a "
                     "scalar bool, got shape [3]");
  ck_assert_ptr_null(out[0]);
  tf_tensor_unref(v);
  tf_tensor_unref(t);
  tf_tensor_unref(str);
  tf_graph_free(g);
}
END_TEST

/* ---- through a session --------------------------------------------------- */

static tf_code run(tf_session *s, const char *const *feeds, tf_tensor **fv,
                   int nf, const char *const *fetch, tf_tensor **out, int n) {
  tf_run_options o = {.timeout_ms = 20000};
  return tf_session_run(s, &o, feeds, fv, nf, fetch, out, n, NULL, 0, NULL, &st);
}

/* x -> Switch(x, p) -> Neg on the false side, Square on the true side ->
 * Merge. */
START_TEST(test_switch_merge_session) {
  tf_graph *g = tf_graph_new();
  tf_output in[2] = {ph(g, "x", TF_FLOAT32, tf_shape_of(1, 3)),
                     ph(g, "p", TF_BOOL, tf_shape_scalar())};
  tf_node *sw = mk(g, "Switch", "sw", in, 2, false);
  tf_output f = out0(mk(g, "Neg", "neg", &(tf_output){sw, 0}, 1, false));
  tf_output t = out0(mk(g, "Square", "sq", &(tf_output){sw, 1}, 1, false));
  mk(g, "Merge", "m", (tf_output[]){f, t}, 2, true);
  tf_session *s = tf_session_new(g, NULL, &st);
  ck_assert_msg(s != NULL, "%s", st.msg);
  float xv[3] = {1.5f, -2.0f, 3.0f};
  tf_tensor *x = tf_tensor_vec_f32(3, xv);
  const char *feeds[2] = {"x", "p"};
  const char *fetch[3] = {"m", "m:1", "sw:1"};
  for (int pred = 0; pred < 2; pred++) {
    tf_tensor *fv[2] = {x, tf_tensor_scalar_bool(pred)}, *out[3];
    ck_assert_msg(run(s, feeds, fv, 2, fetch, out, 2) == TF_OK, "%s", st.msg);
    for (int i = 0; i < 3; i++) {
      float want = pred ? xv[i] * xv[i] : -xv[i];
      ck_assert_float_eq(((float *)out[0]->data)[i], want);
    }
    ck_assert_int_eq(*(int32_t *)out[1]->data, pred);
    tt_free(out, 2);
    /* The untaken side cannot be fetched; the taken side can. */
    tf_code rc = run(s, feeds, fv, 2, fetch + 2, out, 1);
    if (pred) {
      ck_assert_msg(rc == TF_OK, "%s", st.msg);
      ck_assert(tf_tensor_equal(out[0], x));
      tf_tensor_unref(out[0]);
    } else {
      ck_assert_int_eq(rc, TF_INVALID_ARGUMENT);
      ck_assert_ptr_null(out[0]);
      ASSERT_HAS(st.msg, "sw");
    }
    tf_tensor_unref(fv[1]);
  }
  tf_tensor_unref(x);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

/* Switch and Merge on int64 and string tensors; a pred fed with the wrong
 * shape fails in the kernel, naming the node. */
START_TEST(test_any_dtype_session) {
  tf_graph *g = tf_graph_new();
  tf_output p = ph(g, "p", TF_BOOL, tf_shape_unknown());
  tf_output xi = ph(g, "xi", TF_INT64, tf_shape_unknown());
  tf_output xs = ph(g, "xs", TF_STRING, tf_shape_unknown());
  tf_node *si = mk(g, "Switch", "si", (tf_output[]){xi, p}, 2, false);
  tf_node *ss = mk(g, "Switch", "ss", (tf_output[]){xs, p}, 2, false);
  mk(g, "Merge", "mi", (tf_output[]){{si, 1}, {si, 0}}, 2, true);
  mk(g, "Merge", "ms", (tf_output[]){{ss, 0}, {ss, 1}}, 2, true);
  tf_session *s = tf_session_new(g, NULL, &st);
  ck_assert_msg(s != NULL, "%s", st.msg);
  tf_tensor *ti = tf_tensor_vec_i64(3, (int64_t[]){INT64_MIN, 0, INT64_MAX});
  tf_tensor *ts;
  ck_assert_int_eq(tf_tensor_new(TF_STRING, &(tf_shape){1, {2}}, &ts, &st), TF_OK);
  tf_tensor_set_string(ts, 0, "dead", 4, &st);
  tf_tensor_set_string(ts, 1, "live", 4, &st);
  const char *feeds[3] = {"p", "xi", "xs"};
  const char *fetch[4] = {"mi", "mi:1", "ms", "ms:1"};
  for (int pred = 0; pred < 2; pred++) {
    tf_tensor *fv[3] = {tf_tensor_scalar_bool(pred), ti, ts}, *out[4];
    ck_assert_msg(run(s, feeds, fv, 3, fetch, out, 4) == TF_OK, "%s", st.msg);
    ck_assert(tf_tensor_equal(out[0], ti));
    ck_assert_int_eq(*(int32_t *)out[1]->data, pred ? 0 : 1);
    ck_assert(tf_tensor_equal(out[2], ts));
    ck_assert_int_eq(*(int32_t *)out[3]->data, pred ? 1 : 0);
    tt_free(out, 4);
    tf_tensor_unref(fv[0]);
  }
  tf_tensor *fv[3] = {tt_rand(TF_BOOL, tf_shape_of(1, 2), 0, 1), ti, ts};
  tf_tensor *out[1] = {NULL};
  ck_assert_int_eq(run(s, feeds, fv, 3, fetch, out, 1), TF_INVALID_ARGUMENT);
  ASSERT_HAS(st.msg, "'si' (Switch): pred must be a scalar bool, got shape [2]");
  ck_assert_ptr_null(out[0]);
  tf_tensor_unref(fv[0]);
  tf_tensor_unref(ti);
  tf_tensor_unref(ts);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

static tf_node *enter(tf_graph *g, const char *name, tf_output x, bool is_const) {
  tf_node_builder *b = tf_node_begin(g, "Enter", name);
  tf_node_add_input(b, x);
  tf_node_set_attr(b, "frame_name", tf_attr_string("count"));
  tf_node_set_attr(b, "is_constant", tf_attr_bool(is_const));
  tf_node *n = tf_node_finish(b, &st);
  ck_assert_msg(n != NULL, "%s", st.msg);
  return n;
}

/* i = 0; while (i < n) i += 2;  wired by hand, n a loop invariant. */
START_TEST(test_hand_loop_session) {
  tf_graph *g = tf_graph_new();
  tf_output zero = ph(g, "zero", TF_INT32, tf_shape_scalar());
  tf_output lim = ph(g, "n", TF_INT32, tf_shape_scalar());
  tf_output two = ph(g, "two", TF_INT32, tf_shape_scalar());
  tf_node *ei = enter(g, "enter_i", zero, false);
  tf_node *en = enter(g, "enter_n", lim, true);
  tf_node *e2 = enter(g, "enter_2", two, true);
  tf_node *m = mk(g, "Merge", "merge", (tf_output[]){out0(ei), out0(ei)}, 2, true);
  tf_node *less = mk(g, "Less", "less", (tf_output[]){out0(m), out0(en)}, 2, false);
  tf_node *lc = mk(g, "LoopCond", "lc", (tf_output[]){out0(less)}, 1, false);
  tf_node *sw = mk(g, "Switch", "sw", (tf_output[]){out0(m), out0(lc)}, 2, false);
  tf_node *body = mk(g, "Add", "add", (tf_output[]){{sw, 1}, out0(e2)}, 2, false);
  tf_node *ni = mk(g, "NextIteration", "next", (tf_output[]){out0(body)}, 1, false);
  mk(g, "Exit", "exit", (tf_output[]){{sw, 0}}, 1, false);
  ck_assert_int_eq(tf__node_set_back_edge(m, 1, out0(ni), &st), TF_OK);
  ck_assert_int_eq(tf_graph_validate(g, &st), TF_OK);
  tf_session *s = tf_session_new(g, NULL, &st);
  ck_assert_msg(s != NULL, "%s", st.msg);
  const char *feeds[3] = {"zero", "n", "two"};
  const char *fetch[1] = {"exit"};
  int32_t lims[4] = {0, 1, 9, 1000};
  for (int c = 0; c < 4; c++) {
    tf_tensor *fv[3] = {tf_tensor_scalar_i32(0), tf_tensor_scalar_i32(lims[c]),
                        tf_tensor_scalar_i32(2)}, *out[1];
    ck_assert_msg(run(s, feeds, fv, 3, fetch, out, 1) == TF_OK, "%s", st.msg);
    int32_t want = 0;
    while (want < lims[c]) {
      want += 2;
    }
    ck_assert_int_eq(*(int32_t *)out[0]->data, want);
    tt_free(out, 1);
    tt_free(fv, 3);
  }
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_control_flow");
  TCase *tc = tcase_create("kernels");
  tcase_add_test(tc, test_switch_kernel);
  tcase_add_test(tc, test_merge_kernel);
  tcase_add_test(tc, test_forward_kernels);
  suite_add_tcase(s, tc);
  TCase *ts = tcase_create("session");
  tcase_add_test(ts, test_switch_merge_session);
  tcase_add_test(ts, test_any_dtype_session);
  tcase_add_test(ts, test_hand_loop_session);
  suite_add_tcase(s, ts);
  return s;
}
