/* api_cxx_test.cc: the public C API used from C++.
 *
 * Built with g++ -std=c++17 -Wall -Wextra -Werror -pedantic-errors against
 * include/tf/tf.h and linked with libtf.so only (no internal header, no
 * libtf.a), so it proves that the headers are valid C++ and that what the
 * shared library exports is enough to build, run and differentiate a
 * graph: Placeholder -> Square run in a session on seeded random input
 * (checked against a double-precision recomputation), its gradient 2x,
 * error statuses, tf_shape_of's C++ form, the initializer constructors,
 * the allocator statistics accessor and the version. */
#include <check.h>

#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "tf/tf.h"

namespace {

uint64_t g_seed;

/* $TF_TEST_SEED or the clock, as the C tests pick theirs. */
uint64_t pick_seed() {
  const char *env = std::getenv("TF_TEST_SEED");
  if (env != nullptr && *env != '\0') return std::strtoull(env, nullptr, 0);
  return static_cast<uint64_t>(
      std::chrono::steady_clock::now().time_since_epoch().count());
}

tf_node *placeholder(tf_graph *g, const char *name, tf_shape shape) {
  tf_status st;
  tf_node_builder *b = tf_node_begin(g, "Placeholder", name);
  tf_node_set_attr(b, "dtype", tf_attr_type_v(TF_FLOAT32));
  tf_node_set_attr(b, "shape", tf_attr_shape(shape));
  tf_node *n = tf_node_finish(b, &st);
  ck_assert_msg(n != nullptr, "Placeholder %s: %s", name, st.msg);
  return n;
}

tf_node *unary(tf_graph *g, const char *op, const char *name, tf_node *in) {
  tf_status st;
  tf_node_builder *b = tf_node_begin(g, op, name);
  tf_output x = {in, 0};
  tf_node_add_input(b, x);
  tf_node *n = tf_node_finish(b, &st);
  ck_assert_msg(n != nullptr, "%s %s: %s", op, name, st.msg);
  return n;
}

std::vector<float> random_floats(int64_t n, uint64_t stream) {
  std::mt19937_64 rng(g_seed ^ stream);
  std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
  std::vector<float> v(static_cast<size_t>(n));
  for (float &x : v) x = dist(rng);
  return v;
}

}  // namespace

/* x -> Square(x) = y in a session; y[i] against (double)x[i]^2 rounded to
 * float (one IEEE multiply: equal up to 1 ulp), on 1000 random values. */
START_TEST(test_square_session) {
  tf_graph *g = tf_graph_new();
  tf_node *x = placeholder(g, "x", tf_shape_of(1, -1));
  tf_node *y = unary(g, "Square", "y", x);
  ck_assert_str_eq(tf_node_op(y), "Square");
  ck_assert_int_eq(tf_node_output_type(y, 0), TF_FLOAT32);

  tf_status st;
  tf_session *s = tf_session_new(g, nullptr, &st);
  ck_assert_msg(s != nullptr, "%s", st.msg);
  const int64_t n = 1000;
  std::vector<float> xs = random_floats(n, 1);
  tf_tensor *in = tf_tensor_vec_f32(n, xs.data());
  const char *feed = "x", *fetch = "y";
  tf_tensor *out = nullptr;
  tf_code rc = tf_session_run(s, nullptr, &feed, &in, 1, &fetch, &out, 1,
                              nullptr, 0, nullptr, &st);
  ck_assert_msg(rc == TF_OK, "%s: %s", tf_code_name(rc), st.msg);
  ck_assert_int_eq(out->dtype, TF_FLOAT32);
  ck_assert_int_eq(out->shape.rank, 1);
  ck_assert_int_eq(out->shape.dims[0], n);
  const float *got = static_cast<const float *>(out->data);
  for (int64_t i = 0; i < n; i++) {
    double want = static_cast<double>(xs[i]) * xs[i];
    ck_assert_msg(std::fabs(got[i] - want) <= 1.2e-7 * want,
                  "y[%" PRId64 "] = %.9g, want %.9g (x = %.9g)", i,
                  static_cast<double>(got[i]), want,
                  static_cast<double>(xs[i]));
  }
  tf_tensor_unref(out);
  tf_tensor_unref(in);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

/* tf_gradients through the shared library: d(sum(x^2))/dx = 2x. */
START_TEST(test_square_gradient) {
  tf_graph *g = tf_graph_new();
  tf_node *x = placeholder(g, "x", tf_shape_of(1, 64));
  tf_node *y = unary(g, "Square", "y", x);
  tf_status st;
  tf_output ys = {y, 0}, xs_out = {x, 0}, dx = {nullptr, 0};
  tf_code rc = tf_gradients(g, &ys, 1, &xs_out, 1, nullptr, &dx, &st);
  ck_assert_msg(rc == TF_OK, "tf_gradients: %s", st.msg);
  ck_assert_ptr_nonnull(dx.node);

  tf_session *s = tf_session_new(g, nullptr, &st);
  ck_assert_msg(s != nullptr, "%s", st.msg);
  std::vector<float> xv = random_floats(64, 2);
  tf_tensor *in = tf_tensor_vec_f32(64, xv.data());
  char fetch[256];
  std::snprintf(fetch, sizeof fetch, "%s:%d", tf_node_name(dx.node), dx.index);
  const char *feed = "x", *fetch_name = fetch;
  tf_tensor *out = nullptr;
  rc = tf_session_run(s, nullptr, &feed, &in, 1, &fetch_name, &out, 1, nullptr,
                      0, nullptr, &st);
  ck_assert_msg(rc == TF_OK, "%s", st.msg);
  for (int64_t i = 0; i < 64; i++) {
    double want = 2.0 * xv[i];
    ck_assert_double_eq_tol(tf_tensor_get_f64(out, i), want,
                            1e-6 * (1 + std::fabs(want)));
  }
  tf_tensor_unref(out);
  tf_tensor_unref(in);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

/* Errors come back as codes and messages naming what was wrong. */
START_TEST(test_errors) {
  tf_graph *g = tf_graph_new();
  tf_node *x = placeholder(g, "x", tf_shape_of(1, -1));
  unary(g, "Square", "y", x);
  tf_status st;
  tf_session *s = tf_session_new(g, nullptr, &st);
  ck_assert_ptr_nonnull(s);
  int32_t iv[2] = {1, 2};
  tf_tensor *wrong = tf_tensor_vec_i32(2, iv);
  const char *feed = "x", *fetch = "y", *missing = "nope";
  tf_tensor *out = reinterpret_cast<tf_tensor *>(1);
  tf_code rc = tf_session_run(s, nullptr, &feed, &wrong, 1, &fetch, &out, 1,
                              nullptr, 0, nullptr, &st);
  ck_assert_int_eq(rc, TF_INVALID_ARGUMENT);
  ck_assert_int_eq(st.code, TF_INVALID_ARGUMENT);
  ck_assert_ptr_null(out);
  ck_assert_msg(std::strstr(st.msg, "x") != nullptr, "message: %s", st.msg);
  rc = tf_session_run(s, nullptr, nullptr, nullptr, 0, &missing, &out, 1,
                      nullptr, 0, nullptr, &st);
  ck_assert_int_eq(rc, TF_NOT_FOUND);
  ck_assert_msg(std::strstr(st.msg, "nope") != nullptr, "message: %s", st.msg);
  ck_assert_str_eq(tf_code_name(rc), "NOT_FOUND");
  tf_code parsed = TF_OK;
  ck_assert(tf_code_from_name("DEADLINE_EXCEEDED", &parsed));
  ck_assert_int_eq(parsed, TF_DEADLINE_EXCEEDED);

  tf_node_builder *b = tf_node_begin(g, "NoSuchOp", "z");
  ck_assert_ptr_null(tf_node_finish(b, &st));
  ck_assert_int_ne(st.code, TF_OK);
  ck_assert_msg(std::strstr(st.msg, "NoSuchOp") != nullptr, "message: %s",
                st.msg);
  tf_tensor_unref(wrong);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

/* tf_shape_of's C++ form converts any integer dims, like the C macro. */
START_TEST(test_shape_of) {
  tf_shape scalar = tf_shape_of(0);
  ck_assert_int_eq(scalar.rank, 0);
  size_t rows = 3;
  long cols = 4;
  tf_shape s = tf_shape_of(3, 2, rows, cols);
  const int64_t dims[3] = {2, 3, 4};
  tf_shape want = tf_shape_make(3, dims);
  ck_assert(tf_shape_equal(&s, &want));
  ck_assert_int_eq(tf_shape_num_elements(&s), 24);
  tf_shape eight = tf_shape_of(8, 1, 2, 3, 4, 5, 6, 7, 8);
  ck_assert_int_eq(eight.dims[7], 8);
  ck_assert_int_eq(tf_shape_num_elements(&eight), 40320);
  char buf[64];
  ck_assert_str_eq(tf_shape_str(&s, buf, sizeof buf), "[2,3,4]");
  tf_shape partial = tf_shape_of(2, -1, 3);
  ck_assert(!tf_shape_is_fully_defined(&partial));
}
END_TEST

START_TEST(test_initializers_and_inline) {
  tf_initializer z = tf_init_zeros();
  ck_assert_int_eq(z.kind, TF_INIT_ZEROS);
  ck_assert(z.value == 0 && z.mean == 0 && z.stddev == 0 && z.seed == 0);
  tf_initializer c = tf_init_constant(2.5);
  ck_assert(c.kind == TF_INIT_CONSTANT && c.value == 2.5);
  tf_initializer t = tf_init_truncated_normal(0.5, 2.0, 7);
  ck_assert(t.kind == TF_INIT_TRUNCATED_NORMAL && t.mean == 0.5 &&
            t.stddev == 2.0 && t.seed == 7 && t.value == 0);
  ck_assert_int_eq(tf_init_glorot_uniform(3).seed, 3);
  ck_assert_int_eq(tf_init_he_normal(4).kind, TF_INIT_HE_NORMAL);
  ck_assert_int_eq(tf_init_ones().kind, TF_INIT_ONES);

  tf_status st;
  tf_status_init(&st);
  ck_assert(tf_status_ok(&st));
  tf_status_set(&st, TF_NOT_FOUND, "node '%s'", "q");
  ck_assert(!tf_status_ok(&st));
  ck_assert_str_eq(st.msg, "node 'q'");
  tf_grad gr = {{nullptr, 0}, {nullptr, 0}, {nullptr, 0}};
  ck_assert(!tf_grad_is_sparse(&gr));
}
END_TEST

/* The statistics accessor: a tensor's bytes appear and disappear. */
START_TEST(test_allocator_stats) {
  tf_allocator *a = tf_cpu_allocator();
  ck_assert_str_eq(a->name, "cpu");
  tf_allocator_stats before = tf_allocator_get_stats(a);
  tf_shape s = tf_shape_of(2, 10, 100);
  tf_tensor *t = nullptr;
  ck_assert_int_eq(tf_tensor_new(TF_FLOAT64, &s, &t, nullptr), TF_OK);
  tf_allocator_stats during = tf_allocator_get_stats(a);
  ck_assert_int_eq(during.bytes_in_use - before.bytes_in_use, 8000);
  ck_assert_int_eq(during.num_allocs - before.num_allocs, 1);
  ck_assert(during.peak_bytes >= during.bytes_in_use);
  tf_tensor_unref(t);
  ck_assert_int_eq(tf_allocator_get_stats(a).bytes_in_use, before.bytes_in_use);
}
END_TEST

START_TEST(test_version) {
  ck_assert_str_eq(tf_version(), TF_VERSION_STRING);
  char want[32];
  std::snprintf(want, sizeof want, "%d.%d.%d", TF_VERSION_MAJOR,
                TF_VERSION_MINOR, TF_VERSION_PATCH);
  ck_assert_str_eq(tf_version(), want);
  ck_assert_int_eq(TF_VERSION_NUMBER, 10000 * TF_VERSION_MAJOR +
                                          100 * TF_VERSION_MINOR +
                                          TF_VERSION_PATCH);
}
END_TEST

int main() {
  g_seed = pick_seed();
  std::printf("seed %" PRIu64 " (TF_TEST_SEED to replay)\n", g_seed);
  std::fflush(stdout);
  Suite *suite = suite_create("api_cxx");
  TCase *tc = tcase_create("api");
  tcase_add_test(tc, test_square_session);
  tcase_add_test(tc, test_square_gradient);
  tcase_add_test(tc, test_errors);
  tcase_add_test(tc, test_shape_of);
  tcase_add_test(tc, test_initializers_and_inline);
  tcase_add_test(tc, test_allocator_stats);
  tcase_add_test(tc, test_version);
  suite_add_tcase(suite, tc);
  SRunner *r = srunner_create(suite);
  srunner_run_all(r, CK_NORMAL);
  int failed = srunner_ntests_failed(r);
  srunner_free(r);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
