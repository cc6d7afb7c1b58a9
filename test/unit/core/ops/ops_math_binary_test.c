/* ops_math_binary_test.c: shape inference and graph-validation errors of
 * the math_binary ops (broadcasting binaries, comparisons, logical ops,
 * Equal's incompatible_shape_error, Select, AddN, BiasAdd, ClipByValue) on
 * Placeholders of partially known shape: unknown dims and unknown ranks
 * refine or stay unknown, known conflicts fail naming the shapes; and the
 * division family's signatures against TensorFlow's (FloorDiv,
 * TruncateDiv, FloorMod, Mod, TruncateMod); TF 2's AddV2, RealDiv,
 * SquaredDifference, DivNoNan, Atan2, Xdivy, Xlogy and SelectV2. */
#include <string.h>

#include "lib/core/framework/op_registry.h"
#include "test/unit/testutil.h"

#define U TF_UNKNOWN_DIM
#define SHAPE(...)                                                             \
  tf_shape_make((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),    \
                (int64_t[]){__VA_ARGS__})
#define SCALAR tf_shape_scalar()
#define UNKNOWN tf_shape_unknown()

/* An input: a Placeholder of this dtype and shape. */
typedef tt_input arg;

/* Builds op "m" on Placeholders for args (AddN: one list) with an optional
 * attr; NULL on error with the message in *st. */
static tf_node *build(tf_graph *g, const char *op, const arg *args, int n,
                      const tf_attr_kv *attr, tf_status *st) {
  return tt_build_node(g, op, "m", args, n, !strcmp(op, "AddN"), attr,
                       attr != NULL ? 1 : 0, st);
}

static void expect_shape(const char *op, const arg *args, int n,
                         const tf_attr_kv *attr, tf_shape want,
                         tf_dtype want_dt) {
  tf_dtype got_dt;
  tf_shape got = tt_infer_shape(op, args, n, !strcmp(op, "AddN"), attr,
                                attr != NULL ? 1 : 0, 0, &got_dt);
  char a[128], b[128];
  ck_assert_msg(tf_shape_equal(&got, &want), "%s: inferred %s, want %s", op,
                tf_shape_str(&got, a, sizeof(a)), tf_shape_str(&want, b, sizeof(b)));
  ck_assert_int_eq(got_dt, want_dt);
}

/* Building fails with INVALID_ARGUMENT mentioning every needle. */
static void expect_error(const char *op, const arg *args, int n,
                         const tf_attr_kv *attr, const char *const *needles) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_node *node = build(g, op, args, n, attr, &st);
  ck_assert_msg(node == NULL, "%s: expected an error", op);
  ck_assert_msg(st.code == TF_INVALID_ARGUMENT, "%s: %s: %s", op,
                tf_code_name(st.code), st.msg);
  for (int i = 0; needles[i] != NULL; i++) {
    ck_assert_msg(strstr(st.msg, needles[i]) != NULL, "%s: '%s' not in: %s",
                  op, needles[i], st.msg);
  }
  tf_graph_free(g);
}

#define F(...) ((arg){TF_FLOAT32, SHAPE(__VA_ARGS__)})
#define FS ((arg){TF_FLOAT32, SCALAR})
#define FU ((arg){TF_FLOAT32, UNKNOWN})
#define B(...) ((arg){TF_BOOL, SHAPE(__VA_ARGS__)})
#define ARGS(...) ((arg[]){__VA_ARGS__}), (int)(sizeof((arg[]){__VA_ARGS__}) / sizeof(arg))

START_TEST(test_broadcast_ops) {
  const char *ops[] = {"Add", "Sub", "Mul", "Div", "FloorDiv", "TruncateDiv",
                       "FloorMod", "Mod", "TruncateMod", "Pow", "Maximum",
                       "Minimum", "Greater", "GreaterEqual", "Less",
                       "LessEqual", "Equal", "NotEqual"};
  for (int i = 0; i < 18; i++) {
    tf_dtype dt = i >= 12 ? TF_BOOL : TF_FLOAT32;
    expect_shape(ops[i], ARGS(F(2, U), F(3)), NULL, SHAPE(2, 3), dt);
    expect_shape(ops[i], ARGS(F(U, 1), F(1, 5)), NULL, SHAPE(U, 5), dt);
    expect_shape(ops[i], ARGS(F(4, 1, 3), F(2, 1)), NULL, SHAPE(4, 2, 3), dt);
    expect_shape(ops[i], ARGS(FS, F(0, 3)), NULL, SHAPE(0, 3), dt);
    expect_shape(ops[i], ARGS(FU, F(3)), NULL, UNKNOWN, dt);
    expect_error(ops[i], ARGS(F(2, 3), F(4)), NULL,
                 (const char *[]){"[2,3]", "[4]", NULL});
  }
  expect_shape("LogicalAnd", ARGS(B(2, U), B(1)), NULL, SHAPE(2, U), TF_BOOL);
  expect_shape("LogicalOr", ARGS(B(3), B(2, 1)), NULL, SHAPE(2, 3), TF_BOOL);
  expect_error("LogicalOr", ARGS(B(3), B(2)), NULL,
               (const char *[]){"[3]", "[2]", NULL});
  /* Other dtypes carry through; integers too. */
  expect_shape("Pow", ARGS(((arg){TF_INT64, SHAPE(2)}), ((arg){TF_INT64, SCALAR})),
               NULL, SHAPE(2), TF_INT64);
}
END_TEST

/* T's allowed types: no bool arithmetic, no float logic. */
START_TEST(test_dtype_constraints) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  ck_assert(build(g, "Add", ARGS(B(2), B(2)), NULL, &st) == NULL);
  ck_assert(build(g, "Less", ARGS(B(2), B(2)), NULL, &st) == NULL);
  ck_assert(build(g, "LogicalAnd", ARGS(F(2), F(2)), NULL, &st) == NULL);
  ck_assert(build(g, "Equal", ARGS(B(2), B(2)), NULL, &st) != NULL);
  ck_assert(build(g, "Add", ARGS(F(2), ((arg){TF_INT32, SHAPE(2)})), NULL,
                  &st) == NULL);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_equal_incompatible_ok) {
  tf_attr_kv off = {"incompatible_shape_error", tf_attr_bool(false)};
  for (int i = 0; i < 2; i++) {
    const char *op = i ? "NotEqual" : "Equal";
    expect_shape(op, ARGS(F(2, 3), F(4)), &off, SCALAR, TF_BOOL);
    expect_shape(op, ARGS(F(2, 3), F(3)), &off, SHAPE(2, 3), TF_BOOL);
    /* Not known yet whether they broadcast: not even the rank. */
    expect_shape(op, ARGS(F(2, U), F(3)), &off, UNKNOWN, TF_BOOL);
  }
}
END_TEST

START_TEST(test_select) {
  expect_shape("Select", ARGS(B(2, 3), F(U, 3), F(2, U)), NULL, SHAPE(2, 3),
               TF_FLOAT32);
  expect_shape("Select", ARGS(B(2), F(2, 3), F(2, 3)), NULL, SHAPE(2, 3),
               TF_FLOAT32);
  expect_shape("Select", ARGS(B(U), F(U, 3, 4), F(U, 3, 4)), NULL,
               SHAPE(U, 3, 4), TF_FLOAT32);
  expect_shape("Select", ARGS(B(3), F(U), F(U)), NULL, SHAPE(3), TF_FLOAT32);
  expect_shape("Select", ARGS(((arg){TF_BOOL, SCALAR}), F(4), F(4)), NULL,
               SHAPE(4), TF_FLOAT32);
  expect_shape("Select", ARGS(((arg){TF_BOOL, UNKNOWN}), F(4), FU), NULL,
               SHAPE(4), TF_FLOAT32);
  expect_shape("Select", ARGS(B(U, 3), FU, FU), NULL, SHAPE(U, 3), TF_FLOAT32);
  expect_error("Select", ARGS(B(4), F(2, 3), F(2, 3)), NULL,
               (const char *[]){"condition", "[4]", "[2,3]", NULL});
  expect_error("Select", ARGS(B(2, 2), F(2, 3), F(2, 3)), NULL,
               (const char *[]){"[2,2]", "[2,3]", NULL});
  expect_error("Select", ARGS(B(2), F(2), F(3)), NULL,
               (const char *[]){"same shape", "[2]", "[3]", NULL});
}
END_TEST

START_TEST(test_addn) {
  expect_shape("AddN", ARGS(F(U, 3), F(2, U), F(2, 3)), NULL, SHAPE(2, 3),
               TF_FLOAT32);
  expect_shape("AddN", ARGS(FU, F(U, 4)), NULL, SHAPE(U, 4), TF_FLOAT32);
  expect_shape("AddN", ARGS(FS), NULL, SCALAR, TF_FLOAT32);
  expect_error("AddN", ARGS(F(2), F(2), F(3)), NULL,
               (const char *[]){"input 2", "[3]", NULL});
  expect_error("AddN", ARGS(F(2), F(2, 1)), NULL,
               (const char *[]){"[2,1]", NULL});
  /* N is inferred from the list and recorded. */
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_node *n = build(g, "AddN", ARGS(F(2), F(2), F(2)), NULL, &st);
  ck_assert_msg(n != NULL, "%s", st.msg);
  int64_t N = 0;
  ck_assert(tf_node_attr_get_int(n, "N", &N, &st) == TF_OK);
  ck_assert_int_eq(N, 3);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_bias_add) {
  tf_attr_kv nchw = {"data_format", tf_attr_string("NCHW")};
  tf_attr_kv bad = {"data_format", tf_attr_string("NWHC")};
  expect_shape("BiasAdd", ARGS(F(U, U, 5), F(U)), NULL, SHAPE(U, U, 5),
               TF_FLOAT32);
  expect_shape("BiasAdd", ARGS(F(2, U), F(7)), NULL, SHAPE(2, 7), TF_FLOAT32);
  expect_shape("BiasAdd", ARGS(F(2, U, 4, 4), F(3)), &nchw, SHAPE(2, 3, 4, 4),
               TF_FLOAT32);
  expect_shape("BiasAdd", ARGS(FU, F(3)), NULL, UNKNOWN, TF_FLOAT32);
  expect_shape("BiasAdd", ARGS(F(2, 3), FU), NULL, SHAPE(2, 3), TF_FLOAT32);
  expect_error("BiasAdd", ARGS(F(3), F(3)), NULL,
               (const char *[]){"at least 2D", "[3]", NULL});
  expect_error("BiasAdd", ARGS(F(2, 3), F(1, 3)), NULL,
               (const char *[]){"vector", "[1,3]", NULL});
  expect_error("BiasAdd", ARGS(F(2, 3), F(4)), NULL,
               (const char *[]){"[4]", "[2,3]", NULL});
  expect_error("BiasAdd", ARGS(F(2, 3, 4), F(4)), &nchw,
               (const char *[]){"channel dim 1", "[4]", "[2,3,4]", NULL});
  expect_error("BiasAdd", ARGS(F(2, 3), F(3)), &nchw,
               (const char *[]){"at least 3D", NULL});
  expect_error("BiasAdd", ARGS(F(2, 3), F(3)), &bad, (const char *[]){NULL});
}
END_TEST

START_TEST(test_clip_by_value) {
  expect_shape("ClipByValue", ARGS(F(U, 3), FS, F(2, U)), NULL, SHAPE(2, 3),
               TF_FLOAT32);
  expect_shape("ClipByValue", ARGS(FU, F(2, 3), FS), NULL, SHAPE(2, 3),
               TF_FLOAT32);
  expect_shape("ClipByValue", ARGS(F(4), FU, FU), NULL, SHAPE(4), TF_FLOAT32);
  expect_error("ClipByValue", ARGS(F(2, 3), F(3), FS), NULL,
               (const char *[]){"clip_value_min", "[2,3]", "[3]", NULL});
  expect_error("ClipByValue", ARGS(F(2, 3), FS, F(2, 4)), NULL,
               (const char *[]){"clip_value_max", "[2,4]", NULL});
}
END_TEST

/* The division family has TensorFlow's signatures: inputs x, y, output z,
 * and T exactly TF's list (FloorDiv and TruncateDiv: TF's BINARY_MORE less
 * complex128, a dtype this system lacks; the audit counts a missing dtype
 * as a match, docs/ops.md). */
static void expect_t_list(const char *name, const tf_dtype *want, int n) {
  const tf_op_def *op = tf_op_lookup(name);
  ck_assert_msg(op != NULL, "%s not registered", name);
  ck_assert_int_eq(op->n_inputs, 2);
  ck_assert_str_eq(op->inputs[0].name, "x");
  ck_assert_str_eq(op->inputs[1].name, "y");
  ck_assert_int_eq(op->n_outputs, 1);
  ck_assert_str_eq(op->outputs[0].name, "z");
  ck_assert_int_eq(op->n_attrs, 1);
  const tf_attr_def *t = tf_op_find_attr(op, "T");
  ck_assert(t != NULL && !t->has_default);
  ck_assert_msg(t->n_allowed_types == n, "%s: %d types, want %d", name,
                t->n_allowed_types, n);
  for (int i = 0; i < n; i++) {
    bool found = false;
    for (int k = 0; k < t->n_allowed_types; k++) {
      found |= t->allowed_types[k] == want[i];
    }
    ck_assert_msg(found, "%s: T lacks %s", name, tf_dtype_name(want[i]));
  }
}

START_TEST(test_division_family_signatures) {
  const tf_dtype more[] = {TF_BFLOAT16, TF_FLOAT16, TF_FLOAT32, TF_FLOAT64,
                           TF_UINT8, TF_INT8, TF_UINT16, TF_INT16, TF_INT32,
                           TF_UINT32, TF_UINT64, TF_INT64, TF_COMPLEX64};
  const tf_dtype floor_mod[] = {TF_INT8, TF_INT16, TF_INT32, TF_INT64,
                                TF_UINT8, TF_UINT16, TF_UINT32, TF_UINT64,
                                TF_BFLOAT16, TF_FLOAT16, TF_FLOAT32,
                                TF_FLOAT64};
  const tf_dtype trunc_mod[] = {TF_INT32, TF_INT64, TF_BFLOAT16, TF_FLOAT16,
                                TF_FLOAT32, TF_FLOAT64};
  expect_t_list("FloorDiv", more, 13);
  expect_t_list("TruncateDiv", more, 13);
  expect_t_list("FloorMod", floor_mod, 12);
  expect_t_list("Mod", trunc_mod, 6);
  expect_t_list("TruncateMod", trunc_mod, 6);
  const char *exact[] = {"FloorMod", "Mod", "TruncateMod", "FloorDiv",
                         "TruncateDiv"};
  for (int i = 0; i < 5; i++) {
    ck_assert_ptr_null(tf_op_lookup(exact[i])->spec->deviation);
  }
  for (int i = 0; i < 3; i++) {
    ck_assert(!(tf_op_lookup(exact[i])->flags & TF_OP_NOT_DIFFERENTIABLE));
  }
  const char *divs[] = {"FloorDiv", "TruncateDiv"};
  for (int i = 0; i < 2; i++) {
    const tf_op_def *op = tf_op_lookup(divs[i]);
    /* TF's gradient of both is None. */
    ck_assert(op->flags & TF_OP_NOT_DIFFERENTIABLE);
  }
  /* Mod and TruncateMod refuse the narrow integers, FloorMod takes them. */
  tf_graph *g = tf_graph_new();
  tf_status st;
  arg i8[2] = {{TF_INT8, SHAPE(2)}, {TF_INT8, SHAPE(2)}};
  ck_assert(build(g, "Mod", i8, 2, NULL, &st) == NULL);
  ck_assert_msg(strstr(st.msg, "int8") != NULL, "%s", st.msg);
  ck_assert(build(g, "TruncateMod", i8, 2, NULL, &st) == NULL);
  ck_assert(build(g, "FloorMod", i8, 2, NULL, &st) != NULL);
  tf_graph_free(g);
}
END_TEST

/* Every op of the family is registered with a doc line and a CPU kernel
 * for float32 (LogicalAnd/Or: bool). */
START_TEST(test_registered) {
  const char *ops[] = {"Add", "Sub", "Mul", "Div", "FloorDiv", "TruncateDiv",
                       "FloorMod", "Mod", "TruncateMod", "Pow",
                       "Maximum", "Minimum", "Greater", "GreaterEqual", "Less",
                       "LessEqual", "Equal", "NotEqual", "LogicalAnd",
                       "LogicalOr", "Select", "AddN", "BiasAdd",
                       "ClipByValue"};
  for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
    const tf_op_def *op = tf_op_lookup(ops[i]);
    ck_assert_msg(op != NULL, "%s not registered", ops[i]);
    ck_assert_msg(op->doc != NULL && op->doc[0] != '\0', "%s: no doc", ops[i]);
    ck_assert_str_eq(tf_op_family_of(op), "math_binary");
  }
}
END_TEST

/* TF 2's binary ops: TensorFlow's input names and T lists (less
 * complex128), broadcasting shapes, and SelectV2's three-way broadcast. */
START_TEST(test_tf2_binary_ops) {
  const tf_dtype addv2[] = {TF_BFLOAT16, TF_FLOAT16, TF_FLOAT32, TF_FLOAT64,
                            TF_UINT8, TF_UINT16, TF_UINT32, TF_UINT64,
                            TF_INT8, TF_INT16, TF_INT32, TF_INT64,
                            TF_COMPLEX64};
  const tf_dtype real_div[] = {TF_BFLOAT16, TF_FLOAT16, TF_FLOAT32,
                               TF_FLOAT64, TF_UINT8, TF_INT8, TF_UINT16,
                               TF_INT16, TF_INT32, TF_UINT32, TF_UINT64,
                               TF_INT64, TF_COMPLEX64};
  const tf_dtype sqdiff[] = {TF_BFLOAT16, TF_FLOAT16, TF_FLOAT32, TF_FLOAT64,
                             TF_INT32, TF_INT64, TF_COMPLEX64};
  const tf_dtype div_no_nan[] = {TF_FLOAT16, TF_FLOAT32, TF_BFLOAT16,
                                 TF_FLOAT64, TF_COMPLEX64};
  const tf_dtype xops[] = {TF_FLOAT16, TF_FLOAT32, TF_FLOAT64, TF_COMPLEX64};
  expect_t_list("AddV2", addv2, 13);
  expect_t_list("RealDiv", real_div, 13);
  expect_t_list("SquaredDifference", sqdiff, 7);
  expect_t_list("DivNoNan", div_no_nan, 5);
  expect_t_list("Xdivy", xops, 4);
  expect_t_list("Xlogy", xops, 4);
  const tf_op_def *atan2 = tf_op_lookup("Atan2");
  ck_assert(atan2 != NULL && atan2->n_inputs == 2);
  ck_assert_str_eq(atan2->inputs[0].name, "y"); /* TF's order: (y, x) */
  ck_assert_str_eq(atan2->inputs[1].name, "x");
  ck_assert_int_eq(tf_op_find_attr(atan2, "T")->n_allowed_types, 4);
  const char *ops[] = {"AddV2", "RealDiv", "SquaredDifference", "DivNoNan",
                       "Atan2", "Xdivy", "Xlogy"};
  for (int i = 0; i < 7; i++) {
    expect_shape(ops[i], ARGS(F(2, U), F(3)), NULL, SHAPE(2, 3), TF_FLOAT32);
    expect_shape(ops[i], ARGS(F(U, 1), F(1, 5)), NULL, SHAPE(U, 5),
                 TF_FLOAT32);
    expect_shape(ops[i], ARGS(FS, F(0, 3)), NULL, SHAPE(0, 3), TF_FLOAT32);
    expect_shape(ops[i], ARGS(FU, F(3)), NULL, UNKNOWN, TF_FLOAT32);
    expect_error(ops[i], ARGS(F(2, 3), F(4)), NULL,
                 (const char *[]){"[2,3]", "[4]", NULL});
    ck_assert(!(tf_op_lookup(ops[i])->flags & TF_OP_NOT_DIFFERENTIABLE));
    ck_assert_ptr_null(tf_op_lookup(ops[i])->spec->deviation);
  }
  expect_shape("SelectV2", ARGS(B(3, 1), F(1, 5), FS), NULL, SHAPE(3, 5),
               TF_FLOAT32);
  expect_shape("SelectV2", ARGS(B(2, 1, 1), F(4, 1), F(1, 3)), NULL,
               SHAPE(2, 4, 3), TF_FLOAT32);
  expect_shape("SelectV2", ARGS(B(U, 1), F(U), F(1, 7)), NULL, SHAPE(U, 7),
               TF_FLOAT32);
  expect_shape("SelectV2", ARGS(B(2), FU, F(2)), NULL, UNKNOWN, TF_FLOAT32);
  expect_shape("SelectV2", ARGS(((arg){TF_BOOL, SCALAR}), F(0), FS), NULL,
               SHAPE(0), TF_FLOAT32);
  expect_error("SelectV2", ARGS(B(2), F(3), FS), NULL,
               (const char *[]){"condition", "[2]", "[3]", NULL});
  expect_error("SelectV2", ARGS(B(1), F(3), F(4)), NULL,
               (const char *[]){"t and e", "[3]", "[4]", NULL});
  expect_error("SelectV2", ARGS(F(3), F(3), F(3)), NULL,
               (const char *[]){"condition", NULL});
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("ops_math_binary");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_broadcast_ops);
  tcase_add_test(tc, test_dtype_constraints);
  tcase_add_test(tc, test_equal_incompatible_ok);
  tcase_add_test(tc, test_select);
  tcase_add_test(tc, test_addn);
  tcase_add_test(tc, test_bias_add);
  tcase_add_test(tc, test_clip_by_value);
  tcase_add_test(tc, test_division_family_signatures);
  tcase_add_test(tc, test_registered);
  tcase_add_test(tc, test_tf2_binary_ops);
  suite_add_tcase(s, tc);
  return s;
}
