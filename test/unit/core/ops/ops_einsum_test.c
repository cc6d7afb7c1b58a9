/* ops_einsum_test.c: graph-level checks of Einsum: TF's input and attr
 * names, the inferred output shape for explicit and implicit equations,
 * "..." broadcasting, repeated labels, unknown dims and ranks, and the
 * shape function's INVALID_ARGUMENT errors for malformed equations (bad
 * characters, wrong operand count, a label with two sizes, an output label
 * in no input, two ellipses, a rank that does not fit, "..." dims the
 * output drops), each naming the
 * equation and what is wrong. */
#include <string.h>

#include "lib/core/framework/op_registry.h"
#include "test/unit/testutil.h"

#define SHAPE(...)                                                             \
  tf_shape_make((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),    \
                (int64_t[]){__VA_ARGS__})
#define U TF_UNKNOWN_DIM

static void assert_shape_eq(tf_shape got, tf_shape want, const char *eq) {
  char a[128], b[128];
  ck_assert_msg(tf_shape_equal(&got, &want), "'%s': got %s want %s", eq,
                tf_shape_str(&got, a, sizeof a),
                tf_shape_str(&want, b, sizeof b));
}

/* The inferred shape of Einsum(eq) on float inputs of shapes s[0..n). */
static tf_shape infer(const char *eq, int n, tf_shape s0, tf_shape s1,
                      tf_dtype *dt) {
  tt_input in[2] = {{TF_FLOAT64, s0}, {TF_FLOAT64, s1}};
  tf_attr_kv kv = {"equation", tf_attr_string(eq)};
  return tt_infer_shape("Einsum", in, n, true, &kv, 1, 0, dt);
}

START_TEST(test_def) {
  const tf_op_def *op = tf_op_lookup("Einsum");
  ck_assert_ptr_nonnull(op);
  ck_assert_int_eq(op->n_inputs, 1);
  ck_assert_str_eq(op->inputs[0].name, "inputs");
  ck_assert_str_eq(op->inputs[0].number_attr, "N");
  ck_assert_str_eq(op->outputs[0].name, "output");
  const tf_attr_def *n = tf_op_find_attr(op, "N");
  ck_assert(n != NULL && n->has_min && n->min == 1);
  ck_assert_ptr_nonnull(tf_op_find_attr(op, "equation"));
  ck_assert_ptr_nonnull(tf_op_find_attr(op, "T"));
}
END_TEST

START_TEST(test_shapes) {
  tf_dtype dt = TF_DTYPE_INVALID;
  assert_shape_eq(infer("ij,jk->ik", 2, SHAPE(2, 3), SHAPE(3, 4), &dt),
                  SHAPE(2, 4), "ij,jk->ik");
  ck_assert_int_eq(dt, TF_FLOAT64);
  assert_shape_eq(infer("ij,jk", 2, SHAPE(2, 3), SHAPE(3, 4), NULL),
                  SHAPE(2, 4), "ij,jk");
  assert_shape_eq(infer("ba", 1, SHAPE(2, 3), SHAPE(), NULL), SHAPE(3, 2),
                  "ba");
  assert_shape_eq(infer("ii", 1, SHAPE(3, 3), SHAPE(), NULL), SHAPE(), "ii");
  assert_shape_eq(infer("ii->i", 1, SHAPE(3, 3), SHAPE(), NULL), SHAPE(3),
                  "ii->i");
  assert_shape_eq(infer("i->ii", 1, SHAPE(3), SHAPE(), NULL), SHAPE(3, 3),
                  "i->ii");
  assert_shape_eq(infer("i,j->ij", 2, SHAPE(3), SHAPE(5), NULL), SHAPE(3, 5),
                  "i,j->ij");
  assert_shape_eq(infer("bhqd,bhkd->bhqk", 2, SHAPE(2, 4, 5, 8),
                        SHAPE(2, 4, 7, 8), NULL),
                  SHAPE(2, 4, 5, 7), "bhqd,bhkd->bhqk");
  assert_shape_eq(infer("...ij,...jk->...ik", 2, SHAPE(6, 1, 2, 3),
                        SHAPE(5, 3, 4), NULL),
                  SHAPE(6, 5, 2, 4), "...ij,...jk->...ik");
  assert_shape_eq(infer("...ij,...jk", 2, SHAPE(6, 2, 3), SHAPE(3, 4), NULL),
                  SHAPE(6, 2, 4), "...ij,...jk");
  assert_shape_eq(infer("...ij,jk->ik", 2, SHAPE(2, 3), SHAPE(3, 4), NULL),
                  SHAPE(2, 4), "...ij,jk->ik");
  assert_shape_eq(infer("Ba,aB", 2, SHAPE(2, 3), SHAPE(3, 2), NULL), SHAPE(),
                  "Ba,aB");
  assert_shape_eq(infer("ab,cd", 2, SHAPE(2, 3), SHAPE(4, 5), NULL),
                  SHAPE(2, 3, 4, 5), "ab,cd");
}
END_TEST

static void expect_error(const char *eq, int n, tf_shape s0, tf_shape s1,
                         const char *needle);

START_TEST(test_unknown) {
  assert_shape_eq(infer("ij,jk->ik", 2, SHAPE(U, 3), SHAPE(U, 4), NULL),
                  SHAPE(U, 4), "ij,jk->ik");
  assert_shape_eq(infer("ij,jk->ik", 2, SHAPE(U, U), SHAPE(3, U), NULL),
                  SHAPE(U, U), "ij,jk->ik");
  /* An input of unknown rank: the other still gives the dims it names. */
  assert_shape_eq(infer("ij,jk->ik", 2, tf_shape_unknown(), SHAPE(3, 4),
                        NULL),
                  SHAPE(U, 4), "ij,jk->ik");
  assert_shape_eq(infer("ij,jk->ki", 2, SHAPE(2, 3), tf_shape_unknown(),
                        NULL),
                  SHAPE(U, 2), "ij,jk->ki");
  tf_shape r = infer("...ij,...jk->...ik", 2, tf_shape_unknown(),
                     SHAPE(3, 4), NULL);
  ck_assert_int_eq(r.rank, TF_UNKNOWN_RANK);
  expect_error("ijk,jk->i", 2, SHAPE(2, 3), tf_shape_unknown(),
               "need rank 3");
  /* An unknown "..." dim against 1 stays unknown; against 5 it is 5. */
  assert_shape_eq(infer("...i,...i->...", 2, SHAPE(U, 3), SHAPE(1, 3), NULL),
                  SHAPE(U), "...i,...i->...");
  assert_shape_eq(infer("...i,...i->...", 2, SHAPE(U, 3), SHAPE(5, 3), NULL),
                  SHAPE(5), "...i,...i->...");
}
END_TEST

/* Building Einsum(eq) on inputs of shapes s[0..n) fails with
 * INVALID_ARGUMENT naming the equation and containing needle. */
static void expect_error(const char *eq, int n, tf_shape s0, tf_shape s1,
                         const char *needle) {
  tt_input in[2] = {{TF_FLOAT32, s0}, {TF_FLOAT32, s1}};
  tf_attr_kv kv = {"equation", tf_attr_string(eq)};
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_status_init(&st);
  tf_node *node = tt_build_node(g, "Einsum", "e", in, n, true, &kv, 1, &st);
  ck_assert_msg(node == NULL, "'%s' built", eq);
  ck_assert_int_eq(st.code, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, needle) != NULL && strstr(st.msg, eq) != NULL,
                "'%s': message '%s' lacks '%s'", eq, st.msg, needle);
  tf_graph_free(g);
}

START_TEST(test_errors) {
  tf_shape m = SHAPE(2, 3), none = SHAPE();
  expect_error("ij,jk->i1", 2, m, SHAPE(3, 4), "invalid character '1'");
  expect_error("ij;jk", 2, m, SHAPE(3, 4), "invalid character ';'");
  expect_error("ij,jk->ik", 1, m, none, "more input terms");
  expect_error("ij->ji", 2, m, m, "1 input term for 2 inputs");
  expect_error("ij,jk->ik", 2, m, SHAPE(4, 5), "label 'j' has size 3 and 4");
  expect_error("ij->ik", 1, m, none, "output label 'k' appears in no input");
  expect_error("...i...j->ij", 1, m, none, "more than one ellipsis");
  expect_error("..ij->ij", 1, m, none, "'.' must come as an ellipsis");
  expect_error("ij->j->i", 1, m, none, "more than one '->'");
  expect_error("ijk->i", 1, m, none, "need rank 3");
  expect_error("...ijk->i", 1, m, none, "need rank at least 3");
  expect_error("...i,...i->...", 2, SHAPE(2, 3), SHAPE(4, 3),
               "ellipsis dims do not broadcast");
  expect_error("ij,jk,kl->il", 2, m, SHAPE(3, 4), "more input terms");
  expect_error("...j,...j->j", 2, SHAPE(4, 2, 3), SHAPE(3),
               "the output has no ellipsis '...' for the 2 broadcast dims");
  expect_error("abcdefghi->a", 1, m, none, "more than 8 labels");
}
END_TEST

/* Three inputs are a valid raw op (N >= 1) but not an equation Einsum
 * evaluates: the shape function says so. */
START_TEST(test_three_inputs) {
  tt_input in[3] = {{TF_FLOAT32, SHAPE(2)}, {TF_FLOAT32, SHAPE(2)},
                    {TF_FLOAT32, SHAPE(2)}};
  tf_attr_kv kv = {"equation", tf_attr_string("i,i,i->i")};
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_status_init(&st);
  ck_assert_ptr_null(
      tt_build_node(g, "Einsum", "e", in, 3, true, &kv, 1, &st));
  ck_assert_msg(strstr(st.msg, "Einsum takes 1 or 2 inputs, got 3") != NULL,
                "%s", st.msg);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("ops_einsum");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_def);
  tcase_add_test(tc, test_shapes);
  tcase_add_test(tc, test_unknown);
  tcase_add_test(tc, test_errors);
  tcase_add_test(tc, test_three_inputs);
  suite_add_tcase(s, tc);
  return s;
}
