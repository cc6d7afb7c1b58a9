/* ops_matrix_test.c: shape inference and graph-validation errors of the
 * matrix ops (MatMul, BatchMatMul/V2, MatrixInverse, MatrixDeterminant) on
 * Placeholders of partially known shape. */
#include <string.h>

#include "lib/core/framework/op_registry.h"
#include "test/unit/testutil.h"

#define U TF_UNKNOWN_DIM

/* SHAPE(2, 3) is [2, 3]: dims as int64_t (tf_shape_of reads int64_t
 * varargs, so plain int literals there would be undefined behaviour). */
#define SHAPE(...)                                                             \
  tf_shape_make((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),    \
                (int64_t[]){__VA_ARGS__})

/* The bool attrs attr1=v1, attr2=v2 (each skipped when NULL) in kv;
 * returns how many. */
static int bool_attrs(tf_attr_kv kv[2], const char *attr1, bool v1,
                      const char *attr2, bool v2) {
  int n = 0;
  if (attr1 != NULL) {
    kv[n++] = (tf_attr_kv){attr1, tf_attr_bool(v1)};
  }
  if (attr2 != NULL) {
    kv[n++] = (tf_attr_kv){attr2, tf_attr_bool(v2)};
  }
  return n;
}

/* Builds op "m" on placeholders of shapes sa (and sb unless NULL) with up
 * to two bool attrs; returns the node (NULL on error, message in *st). */
static tf_node *build(tf_graph *g, const char *op, tf_dtype dt, tf_shape sa,
                      const tf_shape *sb, const char *attr1, bool v1,
                      const char *attr2, bool v2, tf_status *st) {
  tt_input in[2] = {{dt, sa}, {dt, sb != NULL ? *sb : sa}};
  tf_attr_kv kv[2] = {{NULL}};
  int n_kv = bool_attrs(kv, attr1, v1, attr2, v2);
  return tt_build_node(g, op, "m", in, sb != NULL ? 2 : 1, false, kv, n_kv,
                       st);
}

/* Expects op to infer `want` for output 0. */
static void expect_shape(const char *op, tf_shape sa, const tf_shape *sb,
                         const char *a1, bool v1, const char *a2, bool v2,
                         tf_shape want) {
  tt_input in[2] = {{TF_FLOAT32, sa}, {TF_FLOAT32, sb != NULL ? *sb : sa}};
  tf_attr_kv kv[2] = {{NULL}};
  int n_kv = bool_attrs(kv, a1, v1, a2, v2);
  tf_dtype got_dt;
  tf_shape got = tt_infer_shape(op, in, sb != NULL ? 2 : 1, false, kv, n_kv, 0,
                                &got_dt);
  char got_s[128], want_s[128];
  ck_assert_msg(tf_shape_equal(&got, &want), "%s: inferred %s, want %s", op,
                tf_shape_str(&got, got_s, sizeof(got_s)),
                tf_shape_str(&want, want_s, sizeof(want_s)));
  ck_assert_int_eq(got_dt, TF_FLOAT32);
}

/* Expects graph construction to fail with INVALID_ARGUMENT whose message
 * holds each of the given substrings (NULL-terminated). */
static void expect_error(const char *op, tf_dtype dt, tf_shape sa,
                         const tf_shape *sb, const char *a1, bool v1,
                         const char *const *needles) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_node *n = build(g, op, dt, sa, sb, a1, v1, NULL, false, &st);
  ck_assert_msg(n == NULL, "%s: expected an error", op);
  ck_assert_int_eq(st.code, TF_INVALID_ARGUMENT);
  for (int i = 0; needles[i] != NULL; i++) {
    ck_assert_msg(strstr(st.msg, needles[i]) != NULL,
                  "%s: message '%s' lacks '%s'", op, st.msg, needles[i]);
  }
  tf_graph_free(g);
}

START_TEST(matmul_shapes) {
  tf_shape b = SHAPE(3, 5);
  expect_shape("MatMul", SHAPE(2, 3), &b, NULL, false, NULL, false,
               SHAPE(2, 5));
  b = SHAPE(5, 3);
  expect_shape("MatMul", SHAPE(3, 2), &b, "transpose_a", true,
               "transpose_b", true, SHAPE(2, 5));
  /* Unknown dims flow through; a known dim is kept. */
  b = SHAPE(U, U);
  expect_shape("MatMul", SHAPE(U, 4), &b, NULL, false, NULL, false,
               SHAPE(U, U));
  b = tf_shape_unknown();
  expect_shape("MatMul", SHAPE(7, 4), &b, NULL, false, NULL, false,
               SHAPE(7, U));
  b = SHAPE(6, 4);
  expect_shape("MatMul", tf_shape_unknown(), &b, "transpose_b", true, NULL,
               false, SHAPE(U, 6));
  /* Zero dims are legal. */
  b = SHAPE(0, 4);
  expect_shape("MatMul", SHAPE(3, 0), &b, NULL, false, NULL, false,
               SHAPE(3, 4));
}
END_TEST

START_TEST(matmul_errors) {
  tf_shape b = SHAPE(4, 5);
  expect_error("MatMul", TF_FLOAT32, SHAPE(2, 3), &b, NULL, false,
               (const char *[]){"size-incompatible", "[2,3]", "[4,5]", NULL});
  b = SHAPE(3, 5); /* fine untransposed; a^T is [3,2] */
  expect_error("MatMul", TF_FLOAT32, SHAPE(2, 3), &b, "transpose_a",
               true,
               (const char *[]){"[2,3]", "[3,5]", "transpose_a=true", NULL});
  b = SHAPE(3, 5);
  expect_error("MatMul", TF_FLOAT32, SHAPE(1, 2, 3), &b, NULL, false,
               (const char *[]){"rank 2", "rank 3", "[1,2,3]", NULL});
  b = SHAPE(3);
  expect_error("MatMul", TF_FLOAT32, SHAPE(2, 3), &b, NULL, false,
               (const char *[]){"rank 2", "'b'", NULL});
  /* Type constraint: bool is not a MatMul type. */
  b = SHAPE(3, 5);
  tf_graph *g = tf_graph_new();
  tf_status st;
  ck_assert(build(g, "MatMul", TF_BOOL, SHAPE(2, 3), &b, NULL, false,
                  NULL, false, &st) == NULL);
  ck_assert_int_eq(st.code, TF_INVALID_ARGUMENT);
  tf_graph_free(g);
}
END_TEST

START_TEST(batch_matmul_shapes) {
  const char *ops[] = {"BatchMatMul", "BatchMatMulV2"};
  for (int i = 0; i < 2; i++) {
    tf_shape y = SHAPE(5, 4, 6);
    expect_shape(ops[i], SHAPE(2, 1, 3, 4), &y, NULL, false, NULL,
                 false, SHAPE(2, 5, 3, 6));
    y = SHAPE(6, 4);
    expect_shape(ops[i], SHAPE(7, 4, 3), &y, "adj_x", true, "adj_y",
                 true, SHAPE(7, 3, 6));
    y = SHAPE(U, 4, U);
    expect_shape(ops[i], SHAPE(2, U, 4), &y, NULL, false, NULL,
                 false, SHAPE(2, U, U));
    y = tf_shape_unknown();
    expect_shape(ops[i], SHAPE(2, 3, 4), &y, NULL, false, NULL,
                 false, tf_shape_unknown());
    y = SHAPE(4, 5);
    expect_shape(ops[i], SHAPE(3, 4), &y, NULL, false, NULL, false,
                 SHAPE(3, 5));
  }
}
END_TEST

START_TEST(batch_matmul_errors) {
  tf_shape y = SHAPE(3, 4, 5);
  expect_error("BatchMatMul", TF_FLOAT32, SHAPE(2, 3, 4), &y, NULL,
               false,
               (const char *[]){"batch dimensions", "[2,3,4]", "[3,4,5]",
                                NULL});
  y = SHAPE(2, 5, 6);
  expect_error("BatchMatMulV2", TF_FLOAT64, SHAPE(2, 3, 4), &y,
               NULL, false,
               (const char *[]){"size-incompatible", "[2,3,4]", "[2,5,6]",
                                NULL});
  y = SHAPE(4, 5);
  expect_error("BatchMatMul", TF_FLOAT32, SHAPE(4), &y, NULL, false,
               (const char *[]){"at least rank 2", "'x'", NULL});
}
END_TEST

START_TEST(linalg_shapes) {
  expect_shape("MatrixInverse", SHAPE(2, 4, 4), NULL, NULL, false,
               NULL, false, SHAPE(2, 4, 4));
  expect_shape("MatrixInverse", SHAPE(2, U, 4), NULL, "adjoint",
               true, NULL, false, SHAPE(2, 4, 4));
  expect_shape("MatrixInverse", tf_shape_unknown(), NULL, NULL, false, NULL,
               false, tf_shape_unknown());
  expect_shape("MatrixDeterminant", SHAPE(2, 3, 5, 5), NULL, NULL,
               false, NULL, false, SHAPE(2, 3));
  expect_shape("MatrixDeterminant", SHAPE(U, U), NULL, NULL, false,
               NULL, false, tf_shape_scalar());
  expect_shape("MatrixDeterminant", SHAPE(U, 0, 0), NULL, NULL,
               false, NULL, false, SHAPE(U));
  expect_shape("MatrixDeterminant", tf_shape_unknown(), NULL, NULL, false,
               NULL, false, tf_shape_unknown());
}
END_TEST

START_TEST(linalg_errors) {
  expect_error("MatrixInverse", TF_FLOAT32, SHAPE(2, 3, 4), NULL,
               NULL, false, (const char *[]){"square", "[2,3,4]", NULL});
  expect_error("MatrixDeterminant", TF_FLOAT64, SHAPE(4), NULL, NULL,
               false, (const char *[]){"rank 2", "[4]", NULL});
  expect_error("MatrixDeterminant", TF_FLOAT32, SHAPE(2, 3), NULL,
               NULL, false, (const char *[]){"square", "[2,3]", NULL});
  /* int32 is not a MatrixInverse type. */
  tf_graph *g = tf_graph_new();
  tf_status st;
  ck_assert(build(g, "MatrixInverse", TF_INT32, SHAPE(2, 2), NULL,
                  NULL, false, NULL, false, &st) == NULL);
  ck_assert_int_eq(st.code, TF_INVALID_ARGUMENT);
  tf_graph_free(g);
}
END_TEST

START_TEST(ops_registered) {
  const char *names[] = {"MatMul", "BatchMatMul", "BatchMatMulV2",
                         "MatrixInverse", "MatrixDeterminant"};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    const tf_op_def *op = tf_op_lookup(names[i]);
    ck_assert_msg(op != NULL, "%s not registered", names[i]);
    ck_assert_str_eq(tf_op_family_of(op), "matrix");
    ck_assert(op->doc != NULL && op->doc[0] != '\0');
    ck_assert(op->shape_fn != NULL);
  }
}
END_TEST

/* TF's attrs: MatMul's grad_a/grad_b and BatchMatMulV2's grad_x/grad_y
 * hints default to false; BatchMatMul (v1) has none of them. */
START_TEST(gradient_hint_attrs) {
  const char *names[3] = {"MatMul", "BatchMatMul", "BatchMatMulV2"};
  const char *hints[4] = {"grad_a", "grad_b", "grad_x", "grad_y"};
  for (int i = 0; i < 3; i++) {
    const tf_op_def *op = tf_op_lookup(names[i]);
    for (int k = 0; k < 4; k++) {
      bool want = (i == 0 && k < 2) || (i == 2 && k >= 2);
      const tf_attr_def *a = tf_op_find_attr(op, hints[k]);
      ck_assert_msg((a != NULL) == want, "%s: attr %s %s", names[i],
                    hints[k], want ? "missing" : "unexpected");
      if (a != NULL) {
        ck_assert_int_eq(a->type, TF_ATTR_BOOL);
        ck_assert(a->has_default && !a->default_value.u.b);
      }
    }
  }
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("ops_matrix");
  TCase *tc = tcase_create("shapes");
  tcase_add_test(tc, matmul_shapes);
  tcase_add_test(tc, matmul_errors);
  tcase_add_test(tc, batch_matmul_shapes);
  tcase_add_test(tc, batch_matmul_errors);
  tcase_add_test(tc, linalg_shapes);
  tcase_add_test(tc, linalg_errors);
  tcase_add_test(tc, ops_registered);
  tcase_add_test(tc, gradient_hint_attrs);
  suite_add_tcase(s, tc);
  return s;
}
