/* ops_control_flow_test.c: the control-flow op specs (flags, attrs and
 * defaults), their shape functions on partially known shapes, the errors
 * they report, and the graph edits loops need: closing a cycle through
 * NextIteration (tf__node_set_back_edge), control edges added to finished
 * nodes (tf__node_add_control), and validation and import of such cycles. */
#include <string.h>

#include "lib/core/graph/graph_impl.h"
#include "lib/core/framework/op_registry.h"
#include "test/unit/testutil.h"

#define U TF_UNKNOWN_DIM
#define SHAPE(...)                                                             \
  tf_shape_make((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),    \
                (int64_t[]){__VA_ARGS__})
#define F32(s) ((tt_input){TF_FLOAT32, (s)})
#define BOOL(s) ((tt_input){TF_BOOL, (s)})

static void assert_shape_eq(tf_shape got, tf_shape want) {
  char a[64], b[64];
  ck_assert_msg(tf_shape_equal(&got, &want), "got %s, want %s",
                tf_shape_str(&got, a, sizeof a), tf_shape_str(&want, b, sizeof b));
}

/* Builds op on fresh placeholders expecting failure; returns the message. */
static const char *build_fail(const char *op, const tt_input *in, int n,
                              bool as_list, const tf_attr_kv *kv, int nkv) {
  static tf_status st;
  tf_graph *g = tf_graph_new();
  tf_node *nd = tt_build_node(g, op, "n", in, n, as_list, kv, nkv, &st);
  ck_assert_msg(nd == NULL, "%s unexpectedly built", op);
  ck_assert_int_eq(st.code, TF_INVALID_ARGUMENT);
  tf_graph_free(g);
  return st.msg;
}

#define ASSERT_HAS(msg, sub)                                                   \
  ck_assert_msg(strstr((msg), (sub)) != NULL, "'%s' lacks '%s'", (msg), (sub))

START_TEST(test_specs) {
  const char *names[] = {"Switch", "Merge", "Enter", "Exit", "NextIteration",
                         "LoopCond"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    const tf_op_def *op = tf_op_lookup(names[i]);
    ck_assert_msg(op != NULL, "%s not registered", names[i]);
    ck_assert(op->flags & TF_OP_CONTROL_FLOW);
    ck_assert(op->flags & TF_OP_NOT_DIFFERENTIABLE);
    ck_assert(!(op->flags & TF_OP_STATEFUL));
    ck_assert_str_eq(tf_op_family_of(op), "control_flow");
    bool back = strcmp(names[i], "NextIteration") == 0;
    ck_assert_int_eq(!!(op->flags & TF_OP_BACK_EDGE), back);
  }
  const tf_op_def *sw = tf_op_lookup("Switch");
  ck_assert_str_eq(sw->outputs[0].name, "output_false");
  ck_assert_str_eq(sw->outputs[1].name, "output_true");
  ck_assert_int_eq(sw->inputs[1].fixed_type, TF_BOOL);
  const tf_op_def *m = tf_op_lookup("Merge");
  ck_assert_int_eq(m->outputs[1].fixed_type, TF_INT32);
  const tf_attr_def *n = tf_op_find_attr(m, "N");
  ck_assert(n->has_min && n->min == 1);
  const tf_op_def *e = tf_op_lookup("Enter");
  const tf_attr_def *ic = tf_op_find_attr(e, "is_constant");
  const tf_attr_def *pi = tf_op_find_attr(e, "parallel_iterations");
  ck_assert(ic->has_default && !ic->default_value.u.b);
  ck_assert(pi->has_default && pi->default_value.u.i == 10);
  ck_assert(pi->has_min && pi->min == 1);
  ck_assert(!tf_op_find_attr(e, "frame_name")->has_default);
}
END_TEST

START_TEST(test_switch_shapes) {
  tt_input in[2] = {F32(SHAPE(2, U)), BOOL(tf_shape_scalar())};
  for (int port = 0; port < 2; port++) {
    tf_dtype dt;
    assert_shape_eq(tt_infer_shape("Switch", in, 2, false, NULL, 0, port, &dt),
                    SHAPE(2, U));
    ck_assert_int_eq(dt, TF_FLOAT32);
  }
  in[1] = BOOL(tf_shape_unknown());
  assert_shape_eq(tt_infer_shape("Switch", in, 2, false, NULL, 0, 1, NULL),
                  SHAPE(2, U));
  in[0] = F32(tf_shape_unknown());
  assert_shape_eq(tt_infer_shape("Switch", in, 2, false, NULL, 0, 0, NULL),
                  tf_shape_unknown());
  in[1] = BOOL(SHAPE(2));
  const char *msg = build_fail("Switch", in, 2, false, NULL, 0);
  ASSERT_HAS(msg, "pred must be a scalar, got shape [2]");
  ASSERT_HAS(msg, "'n' (Switch)");
  in[1] = (tt_input){TF_INT32, tf_shape_scalar()};
  msg = build_fail("Switch", in, 2, false, NULL, 0);
  ASSERT_HAS(msg, "input 1 ('pred'");
  ASSERT_HAS(msg, "expected bool");
}
END_TEST

static tf_shape merge_of(const tf_shape *s, int n) {
  tt_input in[4];
  for (int i = 0; i < n; i++) {
    in[i] = F32(s[i]);
  }
  tf_dtype dt;
  tf_shape idx = tt_infer_shape("Merge", in, n, true, NULL, 0, 1, &dt);
  assert_shape_eq(idx, tf_shape_scalar());
  ck_assert_int_eq(dt, TF_INT32);
  return tt_infer_shape("Merge", in, n, true, NULL, 0, 0, NULL);
}

START_TEST(test_merge_shapes) {
  tf_shape same[3] = {SHAPE(2, 3), SHAPE(2, 3), SHAPE(2, 3)};
  assert_shape_eq(merge_of(same, 3), SHAPE(2, 3));
  assert_shape_eq(merge_of(same, 1), SHAPE(2, 3));
  tf_shape dims[3] = {SHAPE(2, 3, 5), SHAPE(2, 4, 5), SHAPE(2, 3, 5)};
  assert_shape_eq(merge_of(dims, 3), SHAPE(2, U, 5));
  tf_shape unk_dim[2] = {SHAPE(U, 3), SHAPE(4, 3)};
  assert_shape_eq(merge_of(unk_dim, 2), SHAPE(U, 3));
  tf_shape ranks[2] = {SHAPE(2, 3), SHAPE(2, 3, 1)};
  assert_shape_eq(merge_of(ranks, 2), tf_shape_unknown());
  tf_shape unk[3] = {SHAPE(2, 3), tf_shape_unknown(), SHAPE(2, 3)};
  assert_shape_eq(merge_of(unk, 3), tf_shape_unknown());
  tf_shape scalars[2] = {tf_shape_scalar(), tf_shape_scalar()};
  assert_shape_eq(merge_of(scalars, 2), tf_shape_scalar());
  tt_input mixed[2] = {F32(SHAPE(2)), {TF_INT32, SHAPE(2)}};
  const char *msg = build_fail("Merge", mixed, 2, true, NULL, 0);
  ASSERT_HAS(msg, "input 1 ('inputs'");
  ASSERT_HAS(msg, "expected float32");
  msg = build_fail("Merge", mixed, 0, true, NULL, 0);
  ASSERT_HAS(msg, "attr 'N' = 0 must be >= 1");
}
END_TEST

START_TEST(test_enter_exit_next_shapes) {
  tt_input in[1] = {F32(SHAPE(U, 7))};
  tf_attr_kv kv[3] = {{"frame_name", tf_attr_string("f")},
                      {"parallel_iterations", tf_attr_int(1)},
                      {"is_constant", tf_attr_bool(true)}};
  const char *ops[] = {"Enter", "Exit", "NextIteration"};
  for (int i = 0; i < 3; i++) {
    tf_dtype dt;
    tf_shape s = tt_infer_shape(ops[i], in, 1, false, kv, i == 0 ? 3 : 0, 0, &dt);
    assert_shape_eq(s, SHAPE(U, 7));
    ck_assert_int_eq(dt, TF_FLOAT32);
  }
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_node *e = tt_build_node(g, "Enter", "e", in, 1, false, kv, 1, &st);
  ck_assert_msg(e != NULL, "%s", st.msg);
  bool b = true;
  int64_t par = 0;
  ck_assert_int_eq(tf_node_attr_get_bool(e, "is_constant", &b, &st), TF_OK);
  ck_assert_int_eq(tf_node_attr_get_int(e, "parallel_iterations", &par, &st), TF_OK);
  ck_assert(!b);
  ck_assert_int_eq(par, 10);
  tf_graph_free(g);
  const char *msg = build_fail("Enter", in, 1, false, NULL, 0);
  ASSERT_HAS(msg, "missing attr 'frame_name'");
  tf_attr_kv bad[2] = {{"frame_name", tf_attr_string("f")},
                       {"parallel_iterations", tf_attr_int(0)}};
  msg = build_fail("Enter", in, 1, false, bad, 2);
  ASSERT_HAS(msg, "attr 'parallel_iterations' = 0 must be >= 1");
  bad[0].value = tf_attr_string("");
  msg = build_fail("Enter", in, 1, false, bad, 1);
  ASSERT_HAS(msg, "frame_name' must not be empty");
}
END_TEST

START_TEST(test_loop_cond_shapes) {
  tt_input in[1] = {BOOL(tf_shape_scalar())};
  assert_shape_eq(tt_infer_shape("LoopCond", in, 1, false, NULL, 0, 0, NULL),
                  tf_shape_scalar());
  in[0] = BOOL(tf_shape_unknown());
  assert_shape_eq(tt_infer_shape("LoopCond", in, 1, false, NULL, 0, 0, NULL),
                  tf_shape_scalar());
  in[0] = BOOL(SHAPE(3));
  ASSERT_HAS(build_fail("LoopCond", in, 1, false, NULL, 0),
             "must be a scalar, got shape [3]");
  in[0] = F32(tf_shape_scalar());
  ASSERT_HAS(build_fail("LoopCond", in, 1, false, NULL, 0), "expected bool");
}
END_TEST

static tf_node *unary(tf_graph *g, const char *op, const char *name,
                      tf_output x) {
  tf_status st;
  tf_node_builder *b = tf_node_begin(g, op, name);
  tf_node_add_input(b, x);
  tf_node *n = tf_node_finish(b, &st);
  ck_assert_msg(n != NULL, "%s: %s", op, st.msg);
  return n;
}

/* x -> Enter -> Merge(enter, enter) -> Identity -> NextIteration; then the
 * Merge's input 1 becomes the NextIteration: a cycle validate accepts. */
START_TEST(test_back_edge) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_output x = {tt_placeholder(g, "x", TF_FLOAT32, SHAPE(2)), 0};
  tf_node_builder *b = tf_node_begin(g, "Enter", "enter");
  tf_node_add_input(b, x);
  tf_node_set_attr(b, "frame_name", tf_attr_string("loop"));
  tf_node *enter = tf_node_finish(b, &st);
  ck_assert_ptr_nonnull(enter);
  tf_output eo[2] = {{enter, 0}, {enter, 0}};
  b = tf_node_begin(g, "Merge", "merge");
  tf_node_add_input_list(b, eo, 2);
  tf_node *merge = tf_node_finish(b, &st);
  ck_assert_ptr_nonnull(merge);
  tf_node *id = unary(g, "Identity", "body", (tf_output){merge, 0});
  tf_node *next = unary(g, "NextIteration", "next", (tf_output){id, 0});
  tf_node *ph_i = tt_placeholder(g, "i", TF_INT32, SHAPE(2));
  tf_node *ni_i = unary(g, "NextIteration", "next_i", (tf_output){ph_i, 0});

  ck_assert_int_eq(tf__node_set_back_edge(merge, 1, (tf_output){id, 0}, &st),
                   TF_INVALID_ARGUMENT);
  ASSERT_HAS(st.msg, "'body' (Identity) cannot be the source of a back edge "
                     "into 'merge' (Merge)");
  ck_assert_int_eq(tf__node_set_back_edge(merge, 1, (tf_output){ni_i, 0}, &st),
                   TF_INVALID_ARGUMENT);
  ASSERT_HAS(st.msg, "'next_i:0' (int32) into input 1 of 'merge'");
  ASSERT_HAS(st.msg, "takes float32");
  ck_assert_int_eq(tf__node_set_back_edge(merge, 2, (tf_output){next, 0}, &st),
                   TF_INVALID_ARGUMENT);
  ASSERT_HAS(st.msg, "'merge' (Merge) has no data input 2");
  ck_assert_int_eq(tf__node_set_back_edge(merge, 1, (tf_output){next, 1}, &st),
                   TF_INVALID_ARGUMENT);
  ASSERT_HAS(st.msg, "asks for output 1 of 'next'");
  ck_assert(tf_node_input(merge, 1).node == enter);

  ck_assert_int_eq(tf__node_set_back_edge(merge, 1, (tf_output){next, 0}, &st), TF_OK);
  ck_assert(tf_node_input(merge, 1).node == next);
  ck_assert_int_eq(tf_graph_validate(g, &st), TF_OK);
  tf_node_def def;
  tf_node_to_def(merge, &def);
  ck_assert_int_eq(def.n_inputs, 2);
  ck_assert_str_eq(def.inputs[0], "enter");
  ck_assert_str_eq(def.inputs[1], "next");
  tf_node_def_fini(&def);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_add_control) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_node *p = tt_placeholder(g, "p", TF_FLOAT32, SHAPE(2));
  tf_node *q = tt_placeholder(g, "q", TF_FLOAT32, SHAPE(2));
  tf_node *c = tt_placeholder(g, "c", TF_FLOAT32, SHAPE(2));
  tf__node_add_control(c, p);
  tf__node_add_control(c, q);
  tf__node_add_control(c, p); /* already there: no duplicate */
  ck_assert_int_eq(tf_node_num_control_inputs(c), 2);
  ck_assert(tf_node_control_input(c, 0) == p);
  ck_assert(tf_node_control_input(c, 1) == q);
  tf_node_def def;
  tf_node_to_def(c, &def);
  ck_assert_int_eq(def.n_inputs, 2);
  ck_assert_str_eq(def.inputs[0], "^p");
  ck_assert_str_eq(def.inputs[1], "^q");
  tf_node_def_fini(&def);
  ck_assert_int_eq(tf_graph_validate(g, &st), TF_OK);
  /* A control edge that closes a cycle is caught by validation. */
  tf__node_add_control(p, c);
  ck_assert_int_eq(tf_graph_validate(g, &st), TF_INVALID_ARGUMENT);
  ASSERT_HAS(st.msg, "does not pass through a NextIteration node");
  tf_graph_free(g);
}
END_TEST

/* A loop written as defs: the Merge names the NextIteration defined after
 * it. Without the NextIteration the same cycle is refused. */
START_TEST(test_import_loop) {
  const char *enter_in[] = {"x"}, *merge_in[] = {"enter", "next"},
             *body_in[] = {"merge"}, *next_in[] = {"body"};
  tf_attr_kv enter_kv[2] = {{"frame_name", tf_attr_string("loop")},
                            {"T", tf_attr_type_v(TF_FLOAT32)}};
  tf_attr_kv t_kv[1] = {{"T", tf_attr_type_v(TF_FLOAT32)}};
  tf_node_def defs[4] = {
      {.name = "enter", .op = "Enter", .n_inputs = 1, .inputs = enter_in,
       .n_attrs = 2, .attrs = enter_kv},
      {.name = "merge", .op = "Merge", .n_inputs = 2, .inputs = merge_in,
       .n_attrs = 1, .attrs = t_kv},
      {.name = "body", .op = "Identity", .n_inputs = 1, .inputs = body_in,
       .n_attrs = 1, .attrs = t_kv},
      {.name = "next", .op = "NextIteration", .n_inputs = 1, .inputs = next_in,
       .n_attrs = 1, .attrs = t_kv},
  };
  tf_graph *g = tf_graph_new();
  tf_status st;
  tt_placeholder(g, "x", TF_FLOAT32, SHAPE(3));
  ck_assert_msg(tf_graph_import(g, defs, 4, &st) == TF_OK, "%s", st.msg);
  ck_assert_int_eq(tf_graph_validate(g, &st), TF_OK);
  tf_node *m = tf_graph_find(g, "merge");
  assert_shape_eq(*tf_node_output_shape(m, 0), tf_shape_unknown());
  tf_graph_free(g);

  defs[3].op = "Identity";
  g = tf_graph_new();
  tt_placeholder(g, "x", TF_FLOAT32, SHAPE(3));
  ck_assert_int_eq(tf_graph_import(g, defs, 4, &st), TF_INVALID_ARGUMENT);
  ASSERT_HAS(st.msg, "cycle");
  ck_assert_int_eq(tf_graph_num_nodes(g), 1);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("ops_control_flow");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_specs);
  tcase_add_test(tc, test_switch_shapes);
  tcase_add_test(tc, test_merge_shapes);
  tcase_add_test(tc, test_enter_exit_next_shapes);
  tcase_add_test(tc, test_loop_cond_shapes);
  tcase_add_test(tc, test_back_edge);
  tcase_add_test(tc, test_add_control);
  tcase_add_test(tc, test_import_loop);
  suite_add_tcase(s, tc);
  return s;
}
