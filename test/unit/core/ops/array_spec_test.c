/* array_spec_test.c: the index arithmetic shared by array shape functions
 * and kernels, called directly: reduction axes to a mask, axis
 * normalisation, Reshape's -1 inference (also with unknown input dims),
 * and the StridedSlice spec (canonical begin/stride/size per dim, final
 * shape, identity detection, unknown begin/end at graph time). */
#include <string.h>

#include "lib/core/ops/array_spec.h"
#include "test/unit/testutil.h"

#define U TF_UNKNOWN_DIM
#define SHAPE(...)                                                             \
  tf_shape_make((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),    \
                (int64_t[]){__VA_ARGS__})

static void assert_shape_eq(tf_shape got, tf_shape want) {
  char a[128], b[128];
  ck_assert_msg(tf_shape_equal(&got, &want), "got %s, want %s",
                tf_shape_str(&got, a, sizeof(a)),
                tf_shape_str(&want, b, sizeof(b)));
}

START_TEST(test_reduction_axes) {
  tf_status st;
  uint32_t mask;
  tf_tensor *a = tf_tensor_vec_i64(3, (int64_t[]){-1, 0, 2});
  ck_assert(tf__reduction_axes(a, 4, &mask, &st) == TF_OK);
  ck_assert_uint_eq(mask, 0xdu); /* dims 0, 2, 3 */
  ck_assert(tf__reduction_axes(a, 3, &mask, &st) == TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "duplicate dimension: 2"), "%s", st.msg);
  ck_assert(tf__reduction_axes(a, 2, &mask, &st) == TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "(2 for input with 2 dimension(s)"), "%s",
                st.msg);
  tf_tensor_unref(a);
  a = tf_tensor_scalar_i32(0);
  ck_assert(tf__reduction_axes(a, 0, &mask, &st) == TF_INVALID_ARGUMENT);
  tf_tensor_unref(a);
  a = tf_tensor_scalar_f32(0);
  ck_assert(tf__reduction_axes(a, 2, &mask, &st) == TF_INVALID_ARGUMENT);
  tf_tensor_unref(a);
  int64_t out;
  ck_assert(tf__normalize_axis(-3, 3, "axis", &out, &st) == TF_OK);
  ck_assert_int_eq(out, 0);
  ck_assert(tf__normalize_axis(3, 3, "axis", &out, &st) != TF_OK);
  ck_assert_msg(strstr(st.msg, "Expected axis in the range [-3, 3), but got 3"),
                "%s", st.msg);
}
END_TEST

START_TEST(test_reshape_shape) {
  struct {
    tf_shape in;
    int n;
    int64_t sizes[4];
    tf_shape want;
  } cases[] = {
      {SHAPE(4, 3), 2, {-1, 6}, SHAPE(2, 6)},
      {SHAPE(U, 3), 2, {-1, 6}, SHAPE(U, 6)},
      {SHAPE(2, U), 2, {3, 2}, SHAPE(3, 2)},
      {SHAPE(0, 6), 2, {0, -1}, SHAPE(0, 6)},
      {SHAPE(0, 6), 3, {3, -1, 2}, SHAPE(3, 0, 2)},
      {tf_shape_scalar(), 1, {-1}, SHAPE(1)},
      {SHAPE(1, 1), 0, {0}, tf_shape_scalar()},
  };
  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
    tf_tensor *s = tf_tensor_vec_i64(cases[c].n, cases[c].sizes);
    tf_shape out;
    tf_status st;
    ck_assert_msg(tf__reshape_shape(&cases[c].in, s, &out, &st) == TF_OK,
                  "case %zu: %s", c, st.msg);
    assert_shape_eq(out, cases[c].want);
    tf_tensor_unref(s);
  }
  tf_shape in = tf_shape_unknown(), out;
  tf_tensor *s = tf_tensor_vec_i64(2, (int64_t[]){-1, 5});
  tf_status st;
  ck_assert(tf__reshape_shape(&in, s, &out, &st) == TF_OK);
  assert_shape_eq(out, SHAPE(U, 5));
  tf_tensor_unref(s);
  in = SHAPE(7);
  s = tf_tensor_vec_i64(2, (int64_t[]){-1, 2});
  ck_assert(tf__reshape_shape(&in, s, &out, &st) == TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "7 values, but the requested shape requires "
                               "a multiple of 2"),
                "%s", st.msg);
  tf_tensor_unref(s);
  s = tf_tensor_vec_i64(9, (int64_t[]){1, 1, 1, 1, 1, 1, 1, 1, 7});
  ck_assert(tf__reshape_shape(&in, s, &out, &st) == TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "rank 9 exceeds"), "%s", st.msg);
  tf_tensor_unref(s);
}
END_TEST

static tf_code spec(tf_shape in, int n, const int64_t *b, const int64_t *e,
                    const int64_t *s, tf__slice_masks m, tf__slice_spec *out,
                    tf_status *st) {
  return tf__strided_slice_spec(&in, b, e, s, n, &m, out, st);
}

START_TEST(test_strided_spec) {
  tf__slice_spec sp;
  tf_status st;
  /* x[::-1] on [5]: begin 4, stride -1, 5 elements */
  ck_assert(spec(SHAPE(5), 1, (int64_t[]){0}, (int64_t[]){0},
                 (int64_t[]){-1}, (tf__slice_masks){.begin = 1, .end = 1},
                 &sp, &st) == TF_OK);
  ck_assert(sp.begin[0] == 4 && sp.stride[0] == -1 && sp.size[0] == 5);
  ck_assert(!sp.identity);
  /* x[-100:100:2] on [5] clamps to 0..5: 3 elements */
  ck_assert(spec(SHAPE(5), 1, (int64_t[]){-100}, (int64_t[]){100},
                 (int64_t[]){2}, (tf__slice_masks){0}, &sp, &st) == TF_OK);
  ck_assert(sp.begin[0] == 0 && sp.size[0] == 3);
  /* x[100:-100:-1] clamps to 4..-1: 5 elements */
  ck_assert(spec(SHAPE(5), 1, (int64_t[]){100}, (int64_t[]){-100},
                 (int64_t[]){-1}, (tf__slice_masks){0}, &sp, &st) == TF_OK);
  ck_assert(sp.begin[0] == 4 && sp.size[0] == 5);
  /* x[None, ..., 1] on [2, 3, 4] -> [1, 2, 3]; x[...] is the identity */
  ck_assert(spec(SHAPE(2, 3, 4), 3, (int64_t[]){0, 0, 1}, (int64_t[]){0, 0, 2},
                 (int64_t[]){1, 1, 1},
                 (tf__slice_masks){.new_axis = 1, .ellipsis = 2,
                                   .shrink_axis = 4},
                 &sp, &st) == TF_OK);
  assert_shape_eq(sp.final, SHAPE(1, 2, 3));
  ck_assert(sp.begin[2] == 1 && sp.size[2] == 1);
  ck_assert(spec(SHAPE(2, 3), 1, (int64_t[]){0}, (int64_t[]){0},
                 (int64_t[]){1}, (tf__slice_masks){.ellipsis = 1}, &sp,
                 &st) == TF_OK);
  ck_assert(sp.identity);
  /* graph time: begin/end unknown; shrink and fully masked dims known */
  ck_assert(spec(SHAPE(U, 6, 4), 3, NULL, NULL, (int64_t[]){1, -2, 1},
                 (tf__slice_masks){.begin = 2, .end = 2, .shrink_axis = 4},
                 &sp, &st) == TF_OK);
  assert_shape_eq(sp.final, SHAPE(U, 3));
  /* nine output dims */
  ck_assert(spec(SHAPE(1, 1, 1, 1, 1, 1, 1, 1), 1, (int64_t[]){0},
                 (int64_t[]){0}, (int64_t[]){1},
                 (tf__slice_masks){.new_axis = 1}, &sp,
                 &st) == TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "more than 8 dimensions"), "%s", st.msg);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("array_spec");
  TCase *tc = tcase_create("spec");
  tcase_add_test(tc, test_reduction_axes);
  tcase_add_test(tc, test_reshape_shape);
  tcase_add_test(tc, test_strided_spec);
  suite_add_tcase(s, tc);
  return s;
}
