/* cpu_einsum_test.c: the CPU Einsum kernel against an independent float64
 * nested-loop einsum on seeded random inputs, plus integers, empty
 * tensors, broadcasting "..." dims and the kernel's shape errors.
 *
 * The reference takes an equation written out by hand without "..." (the
 * test spells the broadcast dims as extra letters) and loops over every
 * assignment of values to all labels, reading a size-1 operand dim at
 * index 0 (broadcasting) and adding each product into the output element
 * its output labels name (so repeated output labels fill a diagonal).
 * Tolerances: float64 |d| <= 1e-12 + 1e-12 |want| (sums of at most a few
 * hundred products of values in [-1, 1]; 1e-11 absolute for the batch of
 * 64 products of values in [-4, 4]); float32 1e-5 + 1e-5 |want| (float32
 * GEMM rounding over the same sums); integers exactly, and int32 products
 * wrap. The cases reach every path: operands used in place, transposed
 * by the GEMM, or packed; products written straight to the output or
 * permuted; walks and batches large enough to split over the pool. */
#include <stdio.h>
#include <string.h>

#include "lib/core/framework/kernel.h"
#include "test/unit/testutil.h"

#define SHAPE(...)                                                             \
  tf_shape_make((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),    \
                (int64_t[]){__VA_ARGS__})

/* Builds Einsum on Placeholders of unknown shape (only the kernel judges
 * shapes) and runs its kernel once. */
static tf_code run_einsum(const char *eq, tf_tensor **in, int n,
                          tf_tensor **out, tf_status *st) {
  tf_graph *g = tf_graph_new();
  tf_output o[2];
  for (int i = 0; i < n; i++) {
    o[i] = (tf_output){
        tt_placeholder(g, NULL, in[i]->dtype, tf_shape_unknown()), 0};
  }
  tf_node_builder *b = tf_node_begin(g, "Einsum", "op");
  tf_node_add_input_list(b, o, n);
  tf_node_set_attr(b, "equation", tf_attr_string(eq));
  tf_node *node = tf_node_finish(b, st);
  ck_assert_msg(node != NULL, "%s", st->msg);
  tf_code rc = tf_kernel_run_node(node, NULL, in, out, st);
  tf_graph_free(g);
  return rc;
}

static tf_tensor *einsum_ok(const char *eq, tf_tensor **in, int n) {
  tf_status st;
  tf_status_init(&st);
  tf_tensor *out = NULL;
  tf_code rc = run_einsum(eq, in, n, &out, &st);
  ck_assert_msg(rc == TF_OK, "Einsum '%s': %s", eq, st.msg);
  return out;
}

static double elem(const tf_tensor *t, int64_t i) {
  switch (t->dtype) {
  case TF_FLOAT32: return ((const float *)t->data)[i];
  case TF_FLOAT64: return ((const double *)t->data)[i];
  case TF_INT32: return ((const int32_t *)t->data)[i];
  default: return (double)((const int64_t *)t->data)[i];
  }
}

/* ---- the reference ------------------------------------------------------- */

/* Flat offset in a tensor of shape s whose axes carry letters sub, for the
 * label values val (indexed by letter); size-1 dims broadcast. */
static int64_t ref_offset(const tf_shape *s, const char *sub,
                          const int64_t *val) {
  int64_t off = 0;
  for (int a = 0; a < s->rank; a++) {
    int64_t v = s->dims[a] == 1 ? 0 : val[(unsigned char)sub[a]];
    off = off * s->dims[a] + v;
  }
  return off;
}

/* out (float64, shape out_shape) = einsum(eq) of in[0..n), eq explicit
 * ("ab,bc->ac") with no "...". */
static tf_tensor *ref_einsum(const char *eq, tf_tensor **in, int n,
                             tf_shape out_shape) {
  char sub[3][16] = {{0}};
  const char *arrow = strstr(eq, "->");
  const char *comma = strchr(eq, ',');
  size_t l0 = (size_t)((n == 2 ? comma : arrow) - eq);
  memcpy(sub[0], eq, l0);
  if (n == 2) {
    memcpy(sub[1], comma + 1, (size_t)(arrow - comma - 1));
  }
  snprintf(sub[2], sizeof sub[2], "%s", arrow + 2);
  int64_t size[128] = {0};
  bool empty = false;
  char letters[32];
  int nl = 0;
  for (int i = 0; i < n; i++) {
    for (int a = 0; sub[i][a]; a++) {
      unsigned char c = (unsigned char)sub[i][a];
      if (size[c] == 0) {
        letters[nl++] = (char)c;
      }
      if (in[i]->shape.dims[a] > size[c]) {
        size[c] = in[i]->shape.dims[a];
      }
      empty = empty || in[i]->shape.dims[a] == 0;
    }
  }
  tf_tensor *out = tt_rand(TF_FLOAT64, out_shape, 0, 0);
  memset(out->data, 0, (size_t)out->n * sizeof(double));
  int64_t total = empty ? 0 : 1;
  for (int j = 0; j < nl; j++) {
    total *= size[(unsigned char)letters[j]];
  }
  int64_t val[128] = {0};
  for (int64_t it = 0; it < total; it++) {
    int64_t r = it;
    for (int j = nl - 1; j >= 0; j--) {
      int64_t sz = size[(unsigned char)letters[j]];
      val[(unsigned char)letters[j]] = r % sz;
      r /= sz;
    }
    double p = 1;
    for (int i = 0; i < n; i++) {
      p *= elem(in[i], ref_offset(&in[i]->shape, sub[i], val));
    }
    ((double *)out->data)[ref_offset(&out_shape, sub[2], val)] += p;
  }
  return out;
}

/* Converts t to float64 (a new tensor). */
static tf_tensor *to_f64(const tf_tensor *t) {
  tf_tensor *d = tt_rand(TF_FLOAT64, t->shape, 0, 0);
  for (int64_t i = 0; i < t->n; i++) {
    ((double *)d->data)[i] = elem(t, i);
  }
  return d;
}

typedef struct ein_case {
  const char *eq;     /* as given to the op */
  const char *ref;    /* explicit, no "...", for the reference */
  int n;
  tf_shape s[2];
  tf_shape out;
} ein_case;

static const ein_case *cases(int *n) {
  static ein_case c[32];
  int k = 0;
  c[k++] = (ein_case){"ij,jk->ik", "ij,jk->ik", 2, {SHAPE(3, 4), SHAPE(4, 5)}, SHAPE(3, 5)};
  c[k++] = (ein_case){"ij,jk", "ij,jk->ik", 2, {SHAPE(2, 3), SHAPE(3, 4)}, SHAPE(2, 4)};
  c[k++] = (ein_case){"bij,bjk->bik", "bij,bjk->bik", 2, {SHAPE(3, 2, 4), SHAPE(3, 4, 5)}, SHAPE(3, 2, 5)};
  c[k++] = (ein_case){"ij->ji", "ij->ji", 1, {SHAPE(3, 4)}, SHAPE(4, 3)};
  c[k++] = (ein_case){"ii->i", "ii->i", 1, {SHAPE(4, 4)}, SHAPE(4)};
  c[k++] = (ein_case){"ii", "ii->", 1, {SHAPE(5, 5)}, SHAPE()};
  c[k++] = (ein_case){"ij->", "ij->", 1, {SHAPE(3, 4)}, SHAPE()};
  c[k++] = (ein_case){"i,i->", "i,i->", 2, {SHAPE(7), SHAPE(7)}, SHAPE()};
  c[k++] = (ein_case){"i,j->ij", "i,j->ij", 2, {SHAPE(3), SHAPE(4)}, SHAPE(3, 4)};
  c[k++] = (ein_case){"...ij,...jk->...ik", "abij,bjk->abik", 2, {SHAPE(2, 1, 3, 4), SHAPE(3, 4, 2)}, SHAPE(2, 3, 3, 2)};
  c[k++] = (ein_case){"...ij,...jk->...ik", "aij,ajk->aik", 2, {SHAPE(1, 2, 3), SHAPE(4, 3, 2)}, SHAPE(4, 2, 2)};
  c[k++] = (ein_case){"bhqd,bhkd->bhqk", "bhqd,bhkd->bhqk", 2, {SHAPE(2, 3, 4, 5), SHAPE(2, 3, 6, 5)}, SHAPE(2, 3, 4, 6)};
  c[k++] = (ein_case){"ki,kj->ij", "ki,kj->ij", 2, {SHAPE(4, 3), SHAPE(4, 5)}, SHAPE(3, 5)};
  c[k++] = (ein_case){"bki,bjk->bij", "bki,bjk->bij", 2, {SHAPE(2, 4, 3), SHAPE(2, 5, 4)}, SHAPE(2, 3, 5)};
  c[k++] = (ein_case){"ij,jk->ki", "ij,jk->ki", 2, {SHAPE(3, 4), SHAPE(4, 2)}, SHAPE(2, 3)};
  c[k++] = (ein_case){"ijk,j->", "ijk,j->", 2, {SHAPE(2, 3, 4), SHAPE(3)}, SHAPE()};
  c[k++] = (ein_case){"iij,jk->ik", "iij,jk->ik", 2, {SHAPE(3, 3, 4), SHAPE(4, 2)}, SHAPE(3, 2)};
  c[k++] = (ein_case){"ij,kl", "ij,kl->ijkl", 2, {SHAPE(2, 3), SHAPE(2, 2)}, SHAPE(2, 3, 2, 2)};
  c[k++] = (ein_case){"ba", "ba->ab", 1, {SHAPE(3, 4)}, SHAPE(4, 3)};
  c[k++] = (ein_case){"i->ii", "i->ii", 1, {SHAPE(4)}, SHAPE(4, 4)};
  c[k++] = (ein_case){"ij,ij->ij", "ij,ij->ij", 2, {SHAPE(3, 4), SHAPE(3, 4)}, SHAPE(3, 4)};
  c[k++] = (ein_case){"...i->...", "abi->ab", 1, {SHAPE(2, 3, 4)}, SHAPE(2, 3)};
  c[k++] = (ein_case){"i...->...", "iab->ab", 1, {SHAPE(2, 3, 4)}, SHAPE(3, 4)};
  c[k++] = (ein_case){"...ij->ij", "ij->ij", 1, {SHAPE(3, 2)}, SHAPE(3, 2)};
  c[k++] = (ein_case){"abc,cd->dba", "abc,cd->dba", 2, {SHAPE(2, 3, 4), SHAPE(4, 5)}, SHAPE(5, 3, 2)};
  c[k++] = (ein_case){"Ab,bA->A", "Ab,bA->A", 2, {SHAPE(3, 2), SHAPE(2, 3)}, SHAPE(3)};
  c[k++] = (ein_case){"ij,jk->ik", "ij,jk->ik", 2, {SHAPE(0, 3), SHAPE(3, 4)}, SHAPE(0, 4)};
  c[k++] = (ein_case){"ij,jk->ik", "ij,jk->ik", 2, {SHAPE(2, 0), SHAPE(0, 3)}, SHAPE(2, 3)};
  c[k++] = (ein_case){"ij->", "ij->", 1, {SHAPE(0, 3)}, SHAPE()};
  *n = k;
  return c;
}

/* Runs every case in dtype dt against the reference. */
static void check_cases(tf_dtype dt, double tol) {
  int n;
  const ein_case *c = cases(&n);
  for (int t = 0; t < n; t++) {
    tf_tensor *in[2];
    for (int i = 0; i < c[t].n; i++) {
      in[i] = tt_rand(dt, c[t].s[i], dt == TF_INT32 || dt == TF_INT64 ? -9 : -1,
                      dt == TF_INT32 || dt == TF_INT64 ? 9 : 1);
    }
    tf_tensor *got = einsum_ok(c[t].eq, in, c[t].n);
    tf_tensor *want = ref_einsum(c[t].ref, in, c[t].n, c[t].out);
    tf_tensor *got64 = to_f64(got);
    ck_assert_int_eq(got->dtype, dt);
    tt_assert_close(got64, want, tol, tol);
    tt_free(in, c[t].n);
    tf_tensor_unref(got);
    tf_tensor_unref(got64);
    tf_tensor_unref(want);
  }
}

START_TEST(test_float64) { check_cases(TF_FLOAT64, 1e-12); }
END_TEST

START_TEST(test_float32) { check_cases(TF_FLOAT32, 1e-5); }
END_TEST

START_TEST(test_int32) { check_cases(TF_INT32, 0); }
END_TEST

START_TEST(test_int64) { check_cases(TF_INT64, 0); }
END_TEST

/* A larger batched product (enough to go through several GEMMs with
 * non-trivial m, n, k) against the reference. */
START_TEST(test_larger) {
  tf_tensor *in[2] = {tt_rand(TF_FLOAT64, SHAPE(3, 17, 9, 4), -1, 1),
                      tt_rand(TF_FLOAT64, SHAPE(4, 3, 9, 13), -1, 1)};
  tf_tensor *got = einsum_ok("bmkh,hbkn->bhmn", in, 2);
  tf_tensor *want = ref_einsum("bmkh,hbkn->bhmn", in, 2, SHAPE(3, 4, 17, 13));
  tt_assert_close(got, want, 1e-12, 1e-12);
  tt_free(in, 2);
  tf_tensor_unref(got);
  tf_tensor_unref(want);
  /* Walks large enough to be split over the intra-op pool: a transpose
   * and a reduction of 64 x 50 x 40 elements. */
  const char *eqs[2] = {"ij->ji", "ijk->ki"};
  const char *refs[2] = {"ij->ji", "ijk->ki"};
  tf_shape ins[2] = {SHAPE(300, 200), SHAPE(64, 50, 40)};
  tf_shape outs[2] = {SHAPE(200, 300), SHAPE(40, 64)};
  for (int c = 0; c < 2; c++) {
    tf_tensor *x = tt_rand(TF_FLOAT64, ins[c], -1, 1);
    got = einsum_ok(eqs[c], &x, 1);
    want = ref_einsum(refs[c], &x, 1, outs[c]);
    tt_assert_close(got, want, 1e-12, 1e-12);
    tf_tensor_unref(x);
    tf_tensor_unref(got);
    tf_tensor_unref(want);
  }
  /* 64 small products: spread over the intra-op pool in chunks. */
  for (int dt = 0; dt < 2; dt++) {
    tf_dtype t = dt == 0 ? TF_FLOAT64 : TF_INT64;
    tf_tensor *b[2] = {tt_rand(t, SHAPE(64, 16, 16), -4, 4),
                       tt_rand(t, SHAPE(64, 16, 16), -4, 4)};
    got = einsum_ok("bij,bjk->bik", b, 2);
    tf_tensor *got64 = to_f64(got);
    want = ref_einsum("bij,bjk->bik", b, 2, SHAPE(64, 16, 16));
    tt_assert_close(got64, want, 1e-11, 1e-12);
    tt_free(b, 2);
    tf_tensor_unref(got);
    tf_tensor_unref(got64);
    tf_tensor_unref(want);
  }
}
END_TEST

/* int32 products wrap on overflow as TF's do: 65536^2 + 65536 = 65536
 * modulo 2^32. */
START_TEST(test_int32_wraps) {
  int64_t xv[2] = {65536, 65536}, yv[2] = {65536, 1};
  tf_tensor *in[2] = {tt_tensor_i(TF_INT32, SHAPE(2), xv),
                      tt_tensor_i(TF_INT32, SHAPE(2), yv)};
  tf_tensor *got = einsum_ok("i,i->", in, 2);
  ck_assert_int_eq(((int32_t *)got->data)[0], 65536);
  tt_free(in, 2);
  tf_tensor_unref(got);
}
END_TEST

static void expect_error(const char *eq, tf_tensor **in, int n,
                         const char *needle) {
  tf_status st;
  tf_status_init(&st);
  tf_tensor *out = NULL;
  tf_code rc = run_einsum(eq, in, n, &out, &st);
  ck_assert_msg(rc == TF_INVALID_ARGUMENT, "'%s': got %s: %s", eq,
                tf_code_name(rc), st.msg);
  ck_assert_msg(strstr(st.msg, needle) != NULL && strstr(st.msg, eq) != NULL,
                "'%s': message '%s' lacks '%s'", eq, st.msg, needle);
}

START_TEST(test_errors) {
  tf_tensor *a = tt_rand(TF_FLOAT32, SHAPE(2, 3), -1, 1);
  tf_tensor *b = tt_rand(TF_FLOAT32, SHAPE(4, 5), -1, 1);
  tf_tensor *c = tt_rand(TF_FLOAT32, SHAPE(3, 2, 3), -1, 1);
  tf_tensor *d = tt_rand(TF_FLOAT32, SHAPE(4, 3, 5), -1, 1);
  expect_error("ij,jk->ik", (tf_tensor *[]){a, b}, 2, "label 'j' has size");
  expect_error("ii->i", (tf_tensor *[]){a}, 1, "label 'i' has size");
  expect_error("ijk->i", (tf_tensor *[]){a}, 1, "need rank 3");
  expect_error("...ijk->i", (tf_tensor *[]){a}, 1, "need rank at least 3");
  expect_error("...ij,...jk->...ik", (tf_tensor *[]){c, d}, 2,
               "ellipsis dims do not broadcast");
  expect_error("...ij->ij", (tf_tensor *[]){c}, 1,
               "the output has no ellipsis '...' for the 1 broadcast dim");
  tf_tensor_unref(a);
  tf_tensor_unref(b);
  tf_tensor_unref(c);
  tf_tensor_unref(d);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_einsum");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_float64);
  tcase_add_test(tc, test_float32);
  tcase_add_test(tc, test_int32);
  tcase_add_test(tc, test_int64);
  tcase_add_test(tc, test_larger);
  tcase_add_test(tc, test_int32_wraps);
  tcase_add_test(tc, test_errors);
  suite_add_tcase(s, tc);
  return s;
}
