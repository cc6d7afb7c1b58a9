/* Tests for node building and batch import: validation errors, type attr
 * inference, list arguments, defaults, shape inference hooks, colocation,
 * topological ids for defs out of order, and cycle detection (naming a
 * node on the cycle). Uses test-only ops registered here. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/graph/graph_impl.h"
#include "lib/core/framework/op_registry.h"
#include "test/unit/testutil.h"

static tf_code shape_tadd(tf_shape_ctx *ctx) { return tf_shape_fn_broadcast(ctx); }

static tf_code shape_tcat(tf_shape_ctx *ctx) {
  /* [sum of dim 0, rest of the first input] when known */
  int n = ctx->n_in - 1;
  tf_shape s = ctx->in[0];
  if (s.rank < 1) return TF_OK;
  int64_t total = 0;
  for (int i = 0; i < n; i++) {
    if (ctx->in[i].rank < 1 || ctx->in[i].dims[0] < 0) {
      total = -1;
      break;
    }
    total += ctx->in[i].dims[0];
  }
  s.dims[0] = total;
  ctx->out[0] = s;
  return TF_OK;
}

static tf_code shape_tuple(tf_shape_ctx *ctx) {
  for (int i = 0; i < ctx->n_out; i++) ctx->out[i] = ctx->in[i];
  return TF_OK;
}

static const tf_op_spec gb_ops[] = {
    {.name = "TestAdd", .inputs = {"x: T", "y: T"}, .outputs = {"z: T"},
     .attrs = {"T: {float32, int32}"}, .shape_fn = shape_tadd, .doc = "test"},
    {.name = "TestCat", .inputs = {"values: N * T", "axis: int32"},
     .outputs = {"out: T"}, .attrs = {"T: type", "N: int >= 2"},
     .shape_fn = shape_tcat, .doc = "test"},
    {.name = "TestSplit", .inputs = {"x: T"}, .outputs = {"parts: K * T", "n: int64"},
     .attrs = {"T: type", "K: int >= 1 = 3", "mode: {'a', 'b'} = 'a'",
               "scale: float = 1.5"}, .doc = "test"},
    {.name = "TestBackEdge", .inputs = {"data: T"}, .outputs = {"output: T"},
     .attrs = {"T: type"}, .shape_fn = tf_shape_fn_unchanged,
     .flags = TF_OP_BACK_EDGE, .doc = "test: a NextIteration-like op"},
    {.name = "TestMerge", .inputs = {"inputs: N * T"},
     .outputs = {"output: T", "value_index: int32"},
     .attrs = {"T: type", "N: int >= 1"}, .doc = "test"},
    {.name = "TestPoolAttrs", .inputs = {"x: float32"}, .outputs = {"y: float32"},
     .attrs = {"ksize: list(int) >= 2"}, .doc = "test"},
    /* type lists (queues) and ref edges (variables) */
    {.name = "TestTuple", .inputs = {"in: Tl"}, .outputs = {"out: Tl"},
     .attrs = {"Tl: list(type)"}, .shape_fn = shape_tuple, .doc = "test"},
    {.name = "TestEnqueue", .inputs = {"handle: Ref(string)", "components: Tcomponents"},
     .attrs = {"Tcomponents: list(type) >= 1"}, .doc = "test"},
    {.name = "TestDequeue", .inputs = {"handle: Ref(string)"},
     .outputs = {"components: component_types"},
     .attrs = {"component_types: list(type) >= 1"}, .doc = "test"},
    {.name = "TestQueue", .outputs = {"handle: Ref(string)"},
     .flags = TF_OP_SOURCE | TF_OP_STATEFUL, .doc = "test"},
    {.name = "TestVar", .outputs = {"ref: Ref(T)"}, .attrs = {"T: type"},
     .flags = TF_OP_SOURCE | TF_OP_STATEFUL, .doc = "test"},
    {.name = "TestAssign", .inputs = {"ref: Ref(T)", "value: T"},
     .outputs = {"output_ref: Ref(T)"}, .attrs = {"T: type"}, .doc = "test"},
};
TF_REGISTER_OPS("test", gb_ops)

static tf_node *add(tf_graph *g, const char *name, tf_node *x, tf_node *y,
                    tf_status *st) {
  tf_node_builder *b = tf_node_begin(g, "TestAdd", name);
  tf_node_add_input(b, (tf_output){x, 0});
  tf_node_add_input(b, (tf_output){y, 0});
  return tf_node_finish(b, st);
}

START_TEST(test_type_inference_and_shapes) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_node *x = tt_placeholder(g, "x", TF_FLOAT32, tf_shape_of(2, -1, 3));
  tf_node *y = tt_placeholder(g, "y", TF_FLOAT32, tf_shape_of(1, 3));
  tf_node *z = add(g, "z", x, y, &st);
  ck_assert_msg(z != NULL, "%s", st.msg);
  tf_dtype t;
  ck_assert_int_eq(tf_node_attr_get_type(z, "T", &t, &st), TF_OK);
  ck_assert_int_eq(t, TF_FLOAT32);
  ck_assert_int_eq(tf_node_output_type(z, 0), TF_FLOAT32);
  ck_assert(tf_shape_equal(tf_node_output_shape(z, 0), &(tf_shape){2, {-1, 3}}));
  ck_assert_int_eq(tf_node_num_inputs(z), 2);
  ck_assert_ptr_eq(tf_node_input(z, 1).node, y);
  ck_assert_int_eq(tf_node_id(z), 2);
  ck_assert_ptr_eq(tf_graph_find(g, "z"), z);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_dtype_mismatch_and_disallowed) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_node *x = tt_placeholder(g, "x", TF_FLOAT32, tf_shape_unknown());
  tf_node *i = tt_placeholder(g, "i", TF_INT32, tf_shape_unknown());
  tf_node *d = tt_placeholder(g, "d", TF_FLOAT64, tf_shape_unknown());
  ck_assert_ptr_null(add(g, "bad", x, i, &st));
  ck_assert_int_eq(st.code, TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "node 'bad' (TestAdd)"));
  ck_assert_ptr_nonnull(strstr(st.msg, "int32"));
  ck_assert_ptr_nonnull(strstr(st.msg, "float32"));
  ck_assert_ptr_null(add(g, "bad2", d, d, &st));
  ck_assert_ptr_nonnull(strstr(st.msg, "not an allowed type"));
  ck_assert_ptr_null(tf_graph_find(g, "bad"));
  ck_assert_int_eq(tf_graph_num_nodes(g), 3);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_arity_unknown_op_missing_attr) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_node *x = tt_placeholder(g, "x", TF_FLOAT32, tf_shape_unknown());
  tf_node_builder *b = tf_node_begin(g, "TestAdd", "one");
  tf_node_add_input(b, (tf_output){x, 0});
  ck_assert_ptr_null(tf_node_finish(b, &st));
  ck_assert_ptr_nonnull(strstr(st.msg, "expects 2 input arguments, got 1"));
  b = tf_node_begin(g, "Frobnicate", "f");
  ck_assert_ptr_null(tf_node_finish(b, &st));
  ck_assert_int_eq(st.code, TF_NOT_FOUND);
  ck_assert_ptr_nonnull(strstr(st.msg, "Frobnicate"));
  b = tf_node_begin(g, "Placeholder", "nodtype");
  ck_assert_ptr_null(tf_node_finish(b, &st));
  ck_assert_ptr_nonnull(strstr(st.msg, "missing attr 'dtype'"));
  b = tf_node_begin(g, "Placeholder", "wrongkind");
  tf_node_set_attr(b, "dtype", tf_attr_int(3));
  ck_assert_ptr_null(tf_node_finish(b, &st));
  ck_assert_ptr_nonnull(strstr(st.msg, "attr 'dtype' must be type, got int"));
  b = tf_node_begin(g, "Placeholder", "extra");
  tf_node_set_attr(b, "dtype", tf_attr_type_v(TF_FLOAT32));
  tf_node_set_attr(b, "bogus", tf_attr_int(3));
  ck_assert_ptr_null(tf_node_finish(b, &st));
  ck_assert_ptr_nonnull(strstr(st.msg, "unknown attr 'bogus'"));
  b = tf_node_begin(g, "TestAdd", "nullin");
  tf_node_add_input(b, (tf_output){NULL, 0});
  tf_node_add_input(b, (tf_output){x, 0});
  ck_assert_ptr_null(tf_node_finish(b, &st));
  ck_assert_ptr_nonnull(strstr(st.msg, "NULL"));
  tf_node_abandon(tf_node_begin(g, "TestAdd", "abandoned"));
  tf_node_abandon(NULL);
  ck_assert_int_eq(tf_graph_num_nodes(g), 1);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_lists_defaults_and_min) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_node *a = tt_placeholder(g, "a", TF_FLOAT32, tf_shape_of(2, 2, 5));
  tf_node *b2 = tt_placeholder(g, "b", TF_FLOAT32, tf_shape_of(2, 3, 5));
  tf_tensor *zero = tf_tensor_scalar_i32(0);
  tf_node_builder *b = tf_node_begin(g, "Const", "axis");
  tf_node_set_attr(b, "value", tf_attr_tensor(zero));
  tf_node_set_attr(b, "dtype", tf_attr_type_v(TF_INT32));
  tf_node *axis = tf_node_finish(b, &st);
  tf_tensor_unref(zero);
  ck_assert_ptr_nonnull(axis);
  tf_output vals[2] = {{a, 0}, {b2, 0}};
  b = tf_node_begin(g, "TestCat", "cat");
  tf_node_add_input_list(b, vals, 2);
  tf_node_add_input(b, (tf_output){axis, 0});
  tf_node *cat = tf_node_finish(b, &st);
  ck_assert_msg(cat != NULL, "%s", st.msg);
  int64_t n;
  ck_assert_int_eq(tf_node_attr_get_int(cat, "N", &n, &st), TF_OK);
  ck_assert_int_eq(n, 2);
  ck_assert(tf_shape_equal(tf_node_output_shape(cat, 0), &(tf_shape){2, {5, 5}}));
  int start, count;
  ck_assert(tf_node_input_range(cat, "axis", &start, &count));
  ck_assert(start == 2 && count == 1);
  ck_assert(!tf_node_input_range(cat, "nope", &start, &count));
  /* N >= 2 is enforced */
  b = tf_node_begin(g, "TestCat", "cat1");
  tf_node_add_input_list(b, vals, 1);
  tf_node_add_input(b, (tf_output){axis, 0});
  ck_assert_ptr_null(tf_node_finish(b, &st));
  ck_assert_ptr_nonnull(strstr(st.msg, "must be >= 2"));
  /* a list where one tensor is expected */
  b = tf_node_begin(g, "TestAdd", "addlist");
  tf_node_add_input_list(b, vals, 2);
  ck_assert_ptr_null(tf_node_finish(b, &st));
  /* output lists from a defaulted number attr, allowed strings */
  b = tf_node_begin(g, "TestSplit", "split");
  tf_node_add_input(b, (tf_output){a, 0});
  tf_node *sp = tf_node_finish(b, &st);
  ck_assert_msg(sp != NULL, "%s", st.msg);
  ck_assert_int_eq(tf_node_num_outputs(sp), 4);
  ck_assert_int_eq(tf_node_output_type(sp, 2), TF_FLOAT32);
  ck_assert_int_eq(tf_node_output_type(sp, 3), TF_INT64);
  ck_assert(tf_node_output_range(sp, "n", &start, &count) && start == 3 && count == 1);
  double scale;
  ck_assert_int_eq(tf_node_attr_get_float(sp, "scale", &scale, &st), TF_OK);
  ck_assert(scale == 1.5);
  b = tf_node_begin(g, "TestSplit", "split2");
  tf_node_add_input(b, (tf_output){a, 0});
  tf_node_set_attr(b, "mode", tf_attr_string("c"));
  ck_assert_ptr_null(tf_node_finish(b, &st));
  ck_assert_ptr_nonnull(strstr(st.msg, "'mode' = 'c'"));
  /* a list attr's minimum is on its length, not its elements */
  int64_t one[] = {-5}, two[] = {-5, 0};
  b = tf_node_begin(g, "TestPoolAttrs", "pool1");
  tf_node_add_input(b, (tf_output){a, 0});
  tf_node_set_attr(b, "ksize", tf_attr_int_list(one, 1));
  ck_assert_ptr_null(tf_node_finish(b, &st));
  ck_assert_ptr_nonnull(strstr(st.msg, "'ksize' has 1 elements, at least 2"));
  b = tf_node_begin(g, "TestPoolAttrs", "pool2");
  tf_node_add_input(b, (tf_output){a, 0});
  tf_node_set_attr(b, "ksize", tf_attr_int_list(two, 2));
  ck_assert_msg(tf_node_finish(b, &st) != NULL, "%s", st.msg);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_names_scopes_devices_colocation) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_node *x = tt_placeholder(g, "x", TF_FLOAT32, tf_shape_unknown());
  /* explicit duplicate */
  tf_node_builder *b = tf_node_begin(g, "Placeholder", "x");
  tf_node_set_attr(b, "dtype", tf_attr_type_v(TF_FLOAT32));
  ck_assert_ptr_null(tf_node_finish(b, &st));
  ck_assert_int_eq(st.code, TF_ALREADY_EXISTS);
  tf_node *a1 = add(g, NULL, x, x, &st);
  tf_node *a2 = add(g, NULL, x, x, &st);
  ck_assert_str_eq(tf_node_name(a1), "TestAdd");
  ck_assert_str_eq(tf_node_name(a2), "TestAdd_1");
  tf_graph_push_scope(g, "layer");
  tf_node *s1 = add(g, "w", x, x, &st);
  tf_node *s2 = add(g, NULL, x, x, &st);
  tf_graph_pop_scope(g);
  tf_graph_push_scope(g, "layer");
  tf_node *s3 = add(g, "w", x, x, &st);
  tf_graph_pop_scope(g);
  tf_graph_push_scope(g, "layer/");
  tf_node *s4 = add(g, "v", x, x, &st);
  tf_graph_pop_scope(g);
  ck_assert_str_eq(tf_node_name(s1), "layer/w");
  ck_assert_str_eq(tf_node_name(s2), "layer/TestAdd");
  ck_assert_str_eq(tf_node_name(s3), "layer_1/w");
  ck_assert_str_eq(tf_node_name(s4), "layer/v");
  char buf[64];
  ck_assert_str_eq(tf_graph_unique_name(g, "x", buf, sizeof buf), "x_1");
  b = tf_node_begin(g, "TestAdd", "placed");
  tf_node_add_input(b, (tf_output){x, 0});
  tf_node_add_input(b, (tf_output){x, 0});
  tf_node_set_device(b, "/job:ps/task:0");
  tf_node_colocate_with(b, s1);
  tf_node_add_control_input(b, a1);
  tf_node *pl = tf_node_finish(b, &st);
  ck_assert_msg(pl != NULL, "%s", st.msg);
  ck_assert_str_eq(tf_node_device(pl), "/job:ps/task:0");
  ck_assert_str_eq(tf_node_device(x), "");
  const tf_attr_value *cls = tf_node_attr(pl, "_class");
  ck_assert(cls && cls->is_list && cls->n == 1);
  ck_assert_str_eq(cls->u.strs[0], "loc:@layer/w");
  ck_assert_int_eq(tf_node_num_control_inputs(pl), 1);
  ck_assert_ptr_eq(tf_node_control_input(pl, 0), a1);
  tf_output o;
  ck_assert_int_eq(tf_graph_find_output(g, "layer/w:0", &o, &st), TF_OK);
  ck_assert_ptr_eq(o.node, s1);
  ck_assert_int_eq(tf_graph_find_output(g, "layer/w:1", &o, &st), TF_INVALID_ARGUMENT);
  ck_assert_int_eq(tf_graph_find_output(g, "nope", &o, &st), TF_NOT_FOUND);
  ck_assert_int_eq(tf_graph_find_output(g, "x:abc", &o, &st), TF_INVALID_ARGUMENT);
  tf_graph_free(g);
}
END_TEST

static const char *in_x[] = {"x", "x:0"};
static const char *in_cat[] = {"a", "b", "axis", "^x"};

START_TEST(test_import_roundtrip_defs) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_tensor *zero = tf_tensor_scalar_i32(0);
  /* out of order: consumers before producers */
  tf_attr_kv ph_attrs[] = {{"dtype", tf_attr_type_v(TF_FLOAT32)},
                           {"shape", tf_attr_shape(tf_shape_of(1, 4))}};
  tf_attr_kv c_attrs[] = {{"value", tf_attr_tensor(zero)},
                          {"dtype", tf_attr_type_v(TF_INT32)}};
  tf_node_def defs[] = {
      {.name = "cat", .op = "TestCat", .n_inputs = 4, .inputs = in_cat},
      {.name = "sum", .op = "TestAdd", .n_inputs = 2, .inputs = in_x, .device = "/cpu:0"},
      {.name = "a", .op = "TestAdd", .n_inputs = 2, .inputs = in_x},
      {.name = "b", .op = "Identity", .n_inputs = 1, .inputs = in_x},
      {.name = "axis", .op = "Const", .n_attrs = 2, .attrs = c_attrs},
      {.name = "x", .op = "Placeholder", .n_attrs = 2, .attrs = ph_attrs},
  };
  ck_assert_msg(tf_graph_import(g, defs, 6, &st) == TF_OK, "%s", st.msg);
  tf_tensor_unref(zero);
  ck_assert_int_eq(tf_graph_num_nodes(g), 6);
  /* ids are topological: producers first, ties to the earlier def (axis
   * and x are ready first; x readies sum, a and b, which beat cat) */
  const char *by_id[] = {"axis", "x", "sum", "a", "b", "cat"};
  for (int i = 0; i < 6; i++) {
    ck_assert_str_eq(tf_node_name(tf_graph_node(g, i)), by_id[i]);
  }
  tf_node *cat = tf_graph_find(g, "cat");
  ck_assert(tf_shape_equal(tf_node_output_shape(cat, 0), &(tf_shape){1, {8}}));
  ck_assert_int_eq(tf_node_num_control_inputs(cat), 1);
  ck_assert_str_eq(tf_node_device(tf_graph_find(g, "sum")), "/cpu:0");
  /* to_def gives back the same inputs */
  tf_node_def d;
  tf_node_to_def(cat, &d);
  ck_assert_int_eq(d.n_inputs, 4);
  ck_assert_str_eq(d.inputs[3], "^x");
  ck_assert_str_eq(d.inputs[0], "a");
  ck_assert_str_eq(d.op, "TestCat");
  ck_assert_int_eq(d.n_attrs, 2); /* N and T */
  tf_node_def_fini(&d);
  /* import those defs again into a second graph */
  tf_graph *g2 = tf_graph_new();
  tf_node_def all[6];
  for (int i = 0; i < 6; i++) tf_node_to_def(tf_graph_node(g, i), &all[i]);
  ck_assert_msg(tf_graph_import(g2, all, 6, &st) == TF_OK, "%s", st.msg);
  for (int i = 0; i < 6; i++) tf_node_def_fini(&all[i]);
  ck_assert_int_eq(tf_graph_validate(g2, &st), TF_OK);
  tf_graph_free(g2);
  tf_graph_free(g);
}
END_TEST

static const char *in_p[] = {"q"};
static const char *in_q[] = {"p"};
static const char *in_bad[] = {"p:7"};
static const char *in_missing[] = {"nowhere"};
static const char *in_ctl_first[] = {"^x", "x"};

START_TEST(test_import_errors_add_nothing) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_attr_kv ph_attrs[] = {{"dtype", tf_attr_type_v(TF_FLOAT32)}};
  tf_node_def cyc[] = {
      {.name = "x", .op = "Placeholder", .n_attrs = 1, .attrs = ph_attrs},
      {.name = "p", .op = "Identity", .n_inputs = 1, .inputs = in_p},
      {.name = "q", .op = "Identity", .n_inputs = 1, .inputs = in_q},
  };
  ck_assert_int_eq(tf_graph_import(g, cyc, 3, &st), TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "cycle"));
  ck_assert_int_eq(tf_graph_num_nodes(g), 0);
  /* the error names a node on the cycle, not t, which only follows it */
  tf_node_def behind[] = {
      {.name = "t", .op = "NoOp", .n_inputs = 1, .inputs = (const char *[]){"^q"}},
      cyc[0], cyc[1], cyc[2]};
  ck_assert_int_eq(tf_graph_import(g, behind, 4, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "node 'p' (Identity): is on a cycle that does "
                       "not pass through a NextIteration node"), "%s", st.msg);
  tf_node_def dup[] = {cyc[0], cyc[0]};
  ck_assert_int_eq(tf_graph_import(g, dup, 2, &st), TF_ALREADY_EXISTS);
  tf_node_def missing[] = {{.name = "m", .op = "Identity", .n_inputs = 1, .inputs = in_missing}};
  ck_assert_int_eq(tf_graph_import(g, missing, 1, &st), TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "nowhere"));
  tf_node_def badport[] = {cyc[0], {.name = "p", .op = "Identity", .n_inputs = 1, .inputs = (const char *[]){"x:7"}}};
  ck_assert_int_eq(tf_graph_import(g, badport, 2, &st), TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "output 7"));
  (void)in_bad;
  tf_node_def ctl[] = {cyc[0], {.name = "c", .op = "Identity", .n_inputs = 2, .inputs = in_ctl_first}};
  ck_assert_int_eq(tf_graph_import(g, ctl, 2, &st), TF_INVALID_ARGUMENT);
  tf_node_def unk[] = {{.name = "u", .op = "NotAnOp"}};
  ck_assert_int_eq(tf_graph_import(g, unk, 1, &st), TF_NOT_FOUND);
  tf_node_def noname[] = {{.name = "", .op = "NoOp"}};
  ck_assert_int_eq(tf_graph_import(g, noname, 1, &st), TF_INVALID_ARGUMENT);
  tf_node_def arity[] = {cyc[0], {.name = "a", .op = "TestAdd", .n_inputs = 1, .inputs = (const char *[]){"x"}}};
  ck_assert_int_eq(tf_graph_import(g, arity, 2, &st), TF_INVALID_ARGUMENT);
  ck_assert_int_eq(tf_graph_num_nodes(g), 0);
  /* success after failures; then a name clash with the existing graph */
  ck_assert_int_eq(tf_graph_import(g, cyc, 1, &st), TF_OK);
  ck_assert_int_eq(tf_graph_import(g, cyc, 1, &st), TF_ALREADY_EXISTS);
  ck_assert_int_eq(tf_graph_num_nodes(g), 1);
  tf_graph_free(g);
}
END_TEST

/* A loop: x -> merge -> body -> back edge -> merge. The back edge's source
 * comes later in the batch, so its dtype comes from its own attrs. */
START_TEST(test_import_loop_back_edge) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_attr_kv ph_attrs[] = {{"dtype", tf_attr_type_v(TF_FLOAT32)}};
  tf_attr_kv t_attrs[] = {{"T", tf_attr_type_v(TF_FLOAT32)}};
  tf_node_def defs[] = {
      {.name = "m", .op = "TestMerge", .n_inputs = 2, .inputs = (const char *[]){"x", "n"}},
      {.name = "body", .op = "Identity", .n_inputs = 1, .inputs = (const char *[]){"m"}},
      {.name = "n", .op = "TestBackEdge", .n_inputs = 1,
       .inputs = (const char *[]){"body"}, .n_attrs = 1, .attrs = t_attrs},
      {.name = "x", .op = "Placeholder", .n_attrs = 1, .attrs = ph_attrs},
  };
  ck_assert_msg(tf_graph_import(g, defs, 4, &st) == TF_OK, "%s", st.msg);
  ck_assert_int_eq(tf_graph_validate(g, &st), TF_OK);
  const char *by_id[] = {"x", "m", "body", "n"}; /* the back edge aside */
  for (int i = 0; i < 4; i++) {
    ck_assert_str_eq(tf_node_name(tf_graph_node(g, i)), by_id[i]);
  }
  tf_node *m = tf_graph_find(g, "m");
  ck_assert_str_eq(tf_node_name(tf_node_input(m, 1).node), "n");
  ck_assert_int_eq(tf_node_input_type(m, 1), TF_FLOAT32);
  /* the same loop through a plain op is a cycle */
  tf_graph *g2 = tf_graph_new();
  defs[2].op = "Identity";
  defs[2].n_attrs = 0;
  ck_assert_int_eq(tf_graph_import(g2, defs, 4, &st), TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "cycle"));
  /* a back-edge node without its type attr: a clear error, not a crash */
  defs[2].op = "TestBackEdge";
  ck_assert_int_eq(tf_graph_import(g2, defs, 4, &st), TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "back edge input 1 from 'n'"));
  ck_assert_int_eq(tf_graph_num_nodes(g2), 0);
  tf_graph_free(g2);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_large_chain_import) {
  /* 20k-node chain, defs in reverse order: import must stay linear-ish. */
  enum { N = 20000 };
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_node_def *defs = calloc(N, sizeof *defs);
  char **names = calloc(N, sizeof *names);
  const char **ins = calloc(N, sizeof *ins);
  tf_attr_kv ph_attrs[] = {{"dtype", tf_attr_type_v(TF_FLOAT32)}};
  for (int i = 0; i < N; i++) {
    names[i] = malloc(16);
    snprintf(names[i], 16, "n%d", i);
  }
  for (int i = 0; i < N; i++) {
    tf_node_def *d = &defs[N - 1 - i];
    d->name = names[i];
    if (i == 0) {
      d->op = "Placeholder";
      d->n_attrs = 1;
      d->attrs = ph_attrs;
    } else {
      d->op = "Identity";
      ins[i] = names[i - 1];
      d->n_inputs = 1;
      d->inputs = &ins[i];
    }
  }
  ck_assert_msg(tf_graph_import(g, defs, N, &st) == TF_OK, "%s", st.msg);
  ck_assert_int_eq(tf_graph_validate(g, &st), TF_OK);
  for (int i = 0; i < N; i++) free(names[i]);
  free(names);
  free(ins);
  free(defs);
  tf_graph_free(g);
}
END_TEST

/* A node built from inputs[0..n) as one list argument, optional attr. */
static tf_node *tuple_node(tf_graph *g, const char *op, const char *name,
                           tf_node *handle, const tf_output *in, int n,
                           const char *attr, const tf_dtype *types, int n_types,
                           tf_status *st) {
  tf_node_builder *b = tf_node_begin(g, op, name);
  if (handle != NULL) tf_node_add_input(b, (tf_output){handle, 0});
  tf_node_add_input_list(b, in, n);
  if (attr != NULL) tf_node_set_attr(b, attr, tf_attr_type_list(types, n_types));
  return tf_node_finish(b, st);
}

START_TEST(test_type_list_inference) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_node *f = tt_placeholder(g, "f", TF_FLOAT32, tf_shape_of(2, 2, 3));
  tf_node *i = tt_placeholder(g, "i", TF_INT32, tf_shape_of(0));
  tf_node *d = tt_placeholder(g, "d", TF_FLOAT64, tf_shape_unknown());
  tf_output in[3] = {{f, 0}, {i, 0}, {d, 0}};
  tf_node *t = tuple_node(g, "TestTuple", "t", NULL, in, 3, NULL, NULL, 0, &st);
  ck_assert_msg(t != NULL, "%s", st.msg);
  const tf_attr_value *tl = tf_node_attr(t, "Tl");
  ck_assert(tl && tl->type == TF_ATTR_TYPE && tl->is_list && tl->n == 3);
  ck_assert(tl->u.types[0] == TF_FLOAT32 && tl->u.types[1] == TF_INT32 &&
            tl->u.types[2] == TF_FLOAT64);
  ck_assert_int_eq(tf_node_num_outputs(t), 3);
  ck_assert_int_eq(tf_node_output_type(t, 1), TF_INT32);
  ck_assert_int_eq(tf_node_output_type(t, 2), TF_FLOAT64);
  ck_assert(tf_shape_equal(tf_node_output_shape(t, 0), &(tf_shape){2, {2, 3}}));
  int start, count;
  ck_assert(tf_node_input_range(t, "in", &start, &count) && start == 0 && count == 3);
  ck_assert(tf_node_output_range(t, "out", &start, &count) && start == 0 && count == 3);
  /* the same with the attr given explicitly and agreeing */
  tf_dtype ok[3] = {TF_FLOAT32, TF_INT32, TF_FLOAT64};
  ck_assert_ptr_nonnull(tuple_node(g, "TestTuple", "t2", NULL, in, 3, "Tl", ok, 3, &st));
  /* a single tensor added with add_input is a list of one */
  tf_node_builder *b = tf_node_begin(g, "TestTuple", "t1");
  tf_node_add_input(b, (tf_output){i, 0});
  tf_node *t1 = tf_node_finish(b, &st);
  ck_assert_msg(t1 != NULL, "%s", st.msg);
  ck_assert_int_eq(tf_node_num_outputs(t1), 1);
  ck_assert_int_eq(tf_node_output_type(t1, 0), TF_INT32);
  /* type-list outputs take their count and dtypes from the attr alone */
  tf_node *q = tf_node_finish(tf_node_begin(g, "TestQueue", "q"), &st);
  ck_assert_msg(q != NULL, "%s", st.msg);
  tf_dtype ct[4] = {TF_BOOL, TF_INT64, TF_STRING, TF_FLOAT32};
  b = tf_node_begin(g, "TestDequeue", "deq");
  tf_node_add_input(b, (tf_output){q, 0});
  tf_node_set_attr(b, "component_types", tf_attr_type_list(ct, 4));
  tf_node *deq = tf_node_finish(b, &st);
  ck_assert_msg(deq != NULL, "%s", st.msg);
  ck_assert_int_eq(tf_node_num_outputs(deq), 4);
  for (int k = 0; k < 4; k++) ck_assert_int_eq(tf_node_output_type(deq, k), ct[k]);
  /* missing output attr */
  b = tf_node_begin(g, "TestDequeue", "deq2");
  tf_node_add_input(b, (tf_output){q, 0});
  ck_assert_ptr_null(tf_node_finish(b, &st));
  ck_assert_ptr_nonnull(strstr(st.msg, "missing attr 'component_types'"));
  tf_graph_free(g);
}
END_TEST

START_TEST(test_type_list_mismatch_and_min) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_node *f = tt_placeholder(g, "f", TF_FLOAT32, tf_shape_unknown());
  tf_node *i = tt_placeholder(g, "i", TF_INT32, tf_shape_unknown());
  tf_output in[2] = {{f, 0}, {i, 0}};
  /* a dtype differs at position 1 */
  tf_dtype ff[2] = {TF_FLOAT32, TF_FLOAT32};
  ck_assert_ptr_null(tuple_node(g, "TestTuple", "bad", NULL, in, 2, "Tl", ff, 2, &st));
  ck_assert_int_eq(st.code, TF_INVALID_ARGUMENT);
  ck_assert_str_eq(st.msg, "node 'bad' (TestTuple): input list 'in' position 1 "
                   "(from 'i:0') has type int32, but attr Tl says float32");
  /* lengths differ: the first position past the shorter one */
  ck_assert_ptr_null(tuple_node(g, "TestTuple", "short", NULL, in, 2, "Tl", ff, 1, &st));
  ck_assert_ptr_nonnull(strstr(st.msg, "input list 'in' has 2 tensors but attr "
                               "Tl lists 1 type (first mismatch at position 1)"));
  tf_dtype fi3[3] = {TF_FLOAT32, TF_INT32, TF_INT32};
  ck_assert_ptr_null(tuple_node(g, "TestTuple", "long", NULL, in, 2, "Tl", fi3, 3, &st));
  ck_assert_ptr_nonnull(strstr(st.msg, "lists 3 types (first mismatch at position 2)"));
  /* the attr is not a list of types */
  tf_node_builder *b = tf_node_begin(g, "TestTuple", "kind");
  tf_node_add_input_list(b, in, 2);
  tf_node_set_attr(b, "Tl", tf_attr_type_v(TF_FLOAT32));
  ck_assert_ptr_null(tf_node_finish(b, &st));
  ck_assert_ptr_nonnull(strstr(st.msg, "attr 'Tl' (typing input list 'in') must "
                               "be list(type), got type"));
  /* an empty list: fine without a minimum, refused by ">= 1" */
  tf_node *e = tuple_node(g, "TestTuple", "empty", NULL, NULL, 0, NULL, NULL, 0, &st);
  ck_assert_msg(e != NULL, "%s", st.msg);
  ck_assert_int_eq(tf_node_num_outputs(e), 0);
  ck_assert_int_eq(tf_node_attr(e, "Tl")->n, 0);
  tf_node *q = tf_node_finish(tf_node_begin(g, "TestQueue", "q"), &st);
  ck_assert_ptr_null(tuple_node(g, "TestEnqueue", "enq0", q, NULL, 0, NULL, NULL, 0, &st));
  ck_assert_ptr_nonnull(strstr(st.msg, "attr 'Tcomponents' has 0 elements, at least 1"));
  ck_assert_ptr_null(tuple_node(g, "TestEnqueue", "enq0b", q, NULL, 0,
                                "Tcomponents", NULL, 0, &st));
  ck_assert_ptr_nonnull(strstr(st.msg, "at least 1 required"));
  tf_node *enq = tuple_node(g, "TestEnqueue", "enq", q, in, 2, NULL, NULL, 0, &st);
  ck_assert_msg(enq != NULL, "%s", st.msg);
  ck_assert_int_eq(tf_node_num_inputs(enq), 3);
  ck_assert_int_eq(tf_node_attr(enq, "Tcomponents")->u.types[1], TF_INT32);
  int start, count;
  ck_assert(tf_node_input_range(enq, "components", &start, &count));
  ck_assert(start == 1 && count == 2);
  ck_assert_int_eq(tf_graph_num_nodes(g), 5); /* f, i, empty, q, enq */
  tf_graph_free(g);
}
END_TEST

static tf_node *assign(tf_graph *g, const char *name, tf_output ref,
                       tf_output value, tf_status *st) {
  tf_node_builder *b = tf_node_begin(g, "TestAssign", name);
  tf_node_add_input(b, ref);
  tf_node_add_input(b, value);
  return tf_node_finish(b, st);
}

START_TEST(test_ref_edges) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_tensor *one = tf_tensor_scalar_f32(1);
  tf_node_builder *b = tf_node_begin(g, "Const", "c");
  tf_node_set_attr(b, "value", tf_attr_tensor(one));
  tf_node_set_attr(b, "dtype", tf_attr_type_v(TF_FLOAT32));
  tf_node *c = tf_node_finish(b, &st);
  tf_tensor_unref(one);
  b = tf_node_begin(g, "TestVar", "v");
  tf_node_set_attr(b, "T", tf_attr_type_v(TF_FLOAT32));
  tf_node *v = tf_node_finish(b, &st);
  ck_assert(c != NULL && v != NULL);
  tf_node *a = assign(g, "a", (tf_output){v, 0}, (tf_output){c, 0}, &st);
  ck_assert_msg(a != NULL, "%s", st.msg);
  /* a ref output feeds another ref input, and a plain input (a read) */
  tf_node *a2 = assign(g, "a2", (tf_output){a, 0}, (tf_output){v, 0}, &st);
  ck_assert_msg(a2 != NULL, "%s", st.msg);
  ck_assert_int_eq(tf_node_input_type(a2, 1), TF_FLOAT32);
  ck_assert(tf__node_output_is_ref(v, 0) && tf__node_output_is_ref(a, 0));
  ck_assert(!tf__node_output_is_ref(c, 0));
  ck_assert(!tf__node_output_is_ref(v, 1)); /* no such port */
  ck_assert(tf__node_input_is_ref(a, 0) && !tf__node_input_is_ref(a, 1));
  ck_assert(!tf__node_input_is_ref(a, 2) && !tf__node_input_is_ref(c, 0));
  /* a plain tensor where a reference is required */
  ck_assert_ptr_null(assign(g, "x", (tf_output){c, 0}, (tf_output){c, 0}, &st));
  ck_assert_int_eq(st.code, TF_INVALID_ARGUMENT);
  ck_assert_str_eq(st.msg, "node 'x' (TestAssign): input 0 ('ref') must be a "
                   "reference (e.g. a variable), but 'c:0' (Const) is not");
  /* a read of a ref (Identity) is a plain tensor again */
  b = tf_node_begin(g, "Identity", "read");
  tf_node_add_input(b, (tf_output){v, 0});
  tf_node *rd = tf_node_finish(b, &st);
  ck_assert_msg(rd != NULL, "%s", st.msg);
  ck_assert(!tf__node_output_is_ref(rd, 0));
  ck_assert_ptr_null(assign(g, "y", (tf_output){rd, 0}, (tf_output){c, 0}, &st));
  ck_assert_ptr_nonnull(strstr(st.msg, "but 'read:0' (Identity) is not"));
  /* a type-list op behind a Ref(string) handle */
  tf_node *q = tf_node_finish(tf_node_begin(g, "TestQueue", "q"), &st);
  tf_output comps[1] = {{c, 0}};
  ck_assert_ptr_nonnull(tuple_node(g, "TestEnqueue", "enq", q, comps, 1, NULL, NULL, 0, &st));
  tf_node *nm = tt_placeholder(g, "name", TF_STRING, tf_shape_scalar());
  ck_assert_ptr_null(tuple_node(g, "TestEnqueue", "enq2", nm, comps, 1, NULL, NULL, 0, &st));
  ck_assert_ptr_nonnull(strstr(st.msg, "input 0 ('handle') must be a reference "
                               "(e.g. a variable), but 'name:0' (Placeholder)"));
  tf_graph_free(g);
}
END_TEST

static const char *in_enq[] = {"q", "f", "i", "^f"};
static const char *in_assign_bad[] = {"c", "c"};
static const char *in_assign_ok[] = {"v", "c"};
static const char *in_deq[] = {"q"};

START_TEST(test_import_type_lists_and_refs) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_tensor *one = tf_tensor_scalar_f32(1);
  tf_attr_kv f_attrs[] = {{"dtype", tf_attr_type_v(TF_FLOAT32)}};
  tf_attr_kv i_attrs[] = {{"dtype", tf_attr_type_v(TF_INT32)}};
  tf_attr_kv c_attrs[] = {{"value", tf_attr_tensor(one)},
                          {"dtype", tf_attr_type_v(TF_FLOAT32)}};
  tf_attr_kv v_attrs[] = {{"T", tf_attr_type_v(TF_FLOAT32)}};
  tf_dtype ct[2] = {TF_FLOAT32, TF_INT32};
  tf_attr_kv deq_attrs[] = {{"component_types", tf_attr_type_list(ct, 2)}};
  tf_node_def defs[] = {
      {.name = "enq", .op = "TestEnqueue", .n_inputs = 4, .inputs = in_enq},
      {.name = "deq", .op = "TestDequeue", .n_inputs = 1, .inputs = in_deq,
       .n_attrs = 1, .attrs = deq_attrs},
      {.name = "assign", .op = "TestAssign", .n_inputs = 2, .inputs = in_assign_ok},
      {.name = "q", .op = "TestQueue"},
      {.name = "f", .op = "Placeholder", .n_attrs = 1, .attrs = f_attrs},
      {.name = "i", .op = "Placeholder", .n_attrs = 1, .attrs = i_attrs},
      {.name = "c", .op = "Const", .n_attrs = 2, .attrs = c_attrs},
      {.name = "v", .op = "TestVar", .n_attrs = 1, .attrs = v_attrs},
  };
  enum { N = 8 };
  ck_assert_msg(tf_graph_import(g, defs, N, &st) == TF_OK, "%s", st.msg);
  tf_node *enq = tf_graph_find(g, "enq");
  const tf_attr_value *tc = tf_node_attr(enq, "Tcomponents");
  ck_assert(tc && tc->n == 2 && tc->u.types[0] == TF_FLOAT32 && tc->u.types[1] == TF_INT32);
  ck_assert_int_eq(tf_node_num_control_inputs(enq), 1);
  tf_node *deq = tf_graph_find(g, "deq");
  ck_assert_int_eq(tf_node_num_outputs(deq), 2);
  ck_assert_int_eq(tf_node_output_type(deq, 1), TF_INT32);
  ck_assert(tf__node_input_is_ref(tf_graph_find(g, "assign"), 0));
  /* the defs written back import again, now with the attr explicit */
  tf_graph *g2 = tf_graph_new();
  tf_node_def all[N];
  for (int k = 0; k < N; k++) tf_node_to_def(tf_graph_node(g, k), &all[k]);
  ck_assert_msg(tf_graph_import(g2, all, N, &st) == TF_OK, "%s", st.msg);
  for (int k = 0; k < N; k++) tf_node_def_fini(&all[k]);
  ck_assert_int_eq(tf_graph_validate(g2, &st), TF_OK);
  tf_graph_free(g2);
  /* an explicit attr that disagrees with the inputs */
  tf_graph *g3 = tf_graph_new();
  tf_dtype wrong[2] = {TF_FLOAT32, TF_FLOAT64};
  tf_attr_kv enq_attrs[] = {{"Tcomponents", tf_attr_type_list(wrong, 2)}};
  defs[0].n_attrs = 1;
  defs[0].attrs = enq_attrs;
  ck_assert_int_eq(tf_graph_import(g3, defs, N, &st), TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "node 'enq' (TestEnqueue): input list "
                               "'components' position 1 (from 'i:0') has type "
                               "int32, but attr Tcomponents says float64"));
  /* an attr one element short leaves an input over */
  enq_attrs[0].value = tf_attr_type_list(ct, 1);
  ck_assert_int_eq(tf_graph_import(g3, defs, N, &st), TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "node 'enq'"));
  defs[0].n_attrs = 0;
  /* a Const where Assign needs a reference */
  defs[2].inputs = in_assign_bad;
  ck_assert_int_eq(tf_graph_import(g3, defs, N, &st), TF_INVALID_ARGUMENT);
  ck_assert_str_eq(st.msg, "node 'assign' (TestAssign): input 0 ('ref') must be "
                   "a reference (e.g. a variable), but 'c:0' (Const) is not");
  ck_assert_int_eq(tf_graph_num_nodes(g3), 0);
  tf_graph_free(g3);
  tf_tensor_unref(one);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("graph_build");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_type_inference_and_shapes);
  tcase_add_test(tc, test_dtype_mismatch_and_disallowed);
  tcase_add_test(tc, test_arity_unknown_op_missing_attr);
  tcase_add_test(tc, test_lists_defaults_and_min);
  tcase_add_test(tc, test_names_scopes_devices_colocation);
  tcase_add_test(tc, test_import_roundtrip_defs);
  tcase_add_test(tc, test_import_errors_add_nothing);
  tcase_add_test(tc, test_import_loop_back_edge);
  tcase_add_test(tc, test_large_chain_import);
  tcase_add_test(tc, test_type_list_inference);
  tcase_add_test(tc, test_type_list_mismatch_and_min);
  tcase_add_test(tc, test_ref_edges);
  tcase_add_test(tc, test_import_type_lists_and_refs);
  suite_add_tcase(s, tc);
  return s;
}
