/* ops_image_test.c: the specs and shape functions of ResizeBilinear,
 * ResizeBilinearGrad, ResizeNearestNeighbor and ResizeNearestNeighborGrad
 * (ops_image.c): TF's input order, dtypes, attrs and defaults, output
 * shapes from constant and unknown sizes and from partially known images,
 * and build-time errors naming the op, the input and what was wrong (both
 * mode attrs set, non-4-D images, bad size vectors, mismatched grads).
 * The kernels are tested in test/unit/devices/cpu/cpu_resize_test.c. */
#include <check.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "lib/core/framework/op_registry.h"
#include "test/unit/testutil.h"

#define U TF_UNKNOWN_DIM

static tf_output ph(tf_graph *g, tf_dtype dt, tf_shape s) {
  return (tf_output){tt_placeholder(g, NULL, dt, s), 0};
}

static tf_output ivec(tf_graph *g, int n, const int32_t *v) {
  return (tf_output){tt_const(g, NULL, tf_tensor_vec_i32(n, v)), 0};
}

/* op(a, b) with align_corners / half_pixel_centers set when >= 0. */
static tf_node *build(tf_graph *g, const char *op, tf_output a, tf_output b,
                      int align, int half, tf_status *st) {
  tf_node_builder *nb = tf_node_begin(g, op, NULL);
  tf_node_add_input(nb, a);
  tf_node_add_input(nb, b);
  if (align >= 0) {
    tf_node_set_attr(nb, "align_corners", tf_attr_bool(align));
  }
  if (half >= 0) {
    tf_node_set_attr(nb, "half_pixel_centers", tf_attr_bool(half));
  }
  return tf_node_finish(nb, st);
}

static void expect_shape(tf_node *n, tf_shape want, tf_dtype dt) {
  char a[128], b[128];
  const tf_shape *got = tf_node_output_shape(n, 0);
  ck_assert_msg(tf_shape_equal(got, &want), "%s: inferred %s, want %s",
                tf_node_op(n), tf_shape_str(got, a, sizeof a),
                tf_shape_str(&want, b, sizeof b));
  ck_assert_int_eq(tf_node_output_type(n, 0), dt);
}

static void expect_fail(tf_graph *g, const char *op, tf_output a, tf_output b,
                        int align, int half, const char *needle) {
  tf_status st;
  ck_assert_msg(build(g, op, a, b, align, half, &st) == NULL,
                "%s: expected an error naming '%s'", op, needle);
  ck_assert_msg(st.code == TF_INVALID_ARGUMENT, "%s: %s", op, st.msg);
  ck_assert_msg(strstr(st.msg, op) != NULL, "%s: not named: %s", op, st.msg);
  ck_assert_msg(strstr(st.msg, needle) != NULL, "%s: '%s' not in: %s", op,
                needle, st.msg);
}

START_TEST(test_specs) {
  static const char *const ops[] = {"ResizeBilinear", "ResizeBilinearGrad",
                                    "ResizeNearestNeighbor",
                                    "ResizeNearestNeighborGrad"};
  static const char *const in0[] = {"images", "grads", "images", "grads"};
  static const char *const in1[] = {"size", "original_image", "size", "size"};
  for (int i = 0; i < 4; i++) {
    const tf_op_def *d = tf_op_lookup(ops[i]);
    ck_assert_msg(d != NULL, "%s", ops[i]);
    ck_assert_int_eq(d->n_inputs, 2);
    ck_assert_str_eq(d->inputs[0].name, in0[i]);
    ck_assert_str_eq(d->inputs[1].name, in1[i]);
    ck_assert_str_eq(tf_op_family_of(d), "image");
    const char *names[2] = {"align_corners", "half_pixel_centers"};
    for (int k = 0; k < 2; k++) {
      const tf_attr_def *a = tf_op_find_attr(d, names[k]);
      ck_assert(a != NULL && a->type == TF_ATTR_BOOL && a->has_default &&
                !a->default_value.u.b);
    }
  }
  ck_assert_int_eq(tf_op_lookup("ResizeBilinear")->outputs[0].fixed_type,
                   TF_FLOAT32);
  ck_assert_int_eq(tf_op_lookup("ResizeBilinearGrad")->inputs[0].fixed_type,
                   TF_FLOAT32);
  ck_assert_int_eq(tf_op_lookup("ResizeBilinear")->inputs[1].fixed_type,
                   TF_INT32);
}
END_TEST

START_TEST(test_shapes) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_output sz = ivec(g, 2, (int32_t[]){7, 9});
  tf_output img = ph(g, TF_UINT8, tf_shape_of(4, 2, 3, 4, 5));
  tf_node *n = build(g, "ResizeBilinear", img, sz, -1, 1, &st);
  ck_assert_msg(n != NULL, "%s", st.msg);
  expect_shape(n, tf_shape_of(4, 2, 7, 9, 5), TF_FLOAT32);
  n = build(g, "ResizeNearestNeighbor", img, sz, 1, 0, &st);
  ck_assert_msg(n != NULL, "%s", st.msg);
  expect_shape(n, tf_shape_of(4, 2, 7, 9, 5), TF_UINT8);
  /* size not constant: height and width unknown */
  tf_output psz = ph(g, TF_INT32, tf_shape_of(1, 2));
  n = build(g, "ResizeBilinear", img, psz, -1, -1, &st);
  expect_shape(n, tf_shape_of(4, 2, U, U, 5), TF_FLOAT32);
  /* unknown image rank */
  tf_output ui = ph(g, TF_FLOAT64, tf_shape_unknown());
  n = build(g, "ResizeNearestNeighbor", ui, sz, -1, -1, &st);
  expect_shape(n, tf_shape_of(4, U, 7, 9, U), TF_FLOAT64);
  /* grads */
  tf_output gr = ph(g, TF_FLOAT32, tf_shape_of(4, 2, 7, 9, 5));
  tf_output orig = ph(g, TF_FLOAT64, tf_shape_of(4, 2, 3, 4, 5));
  n = build(g, "ResizeBilinearGrad", gr, orig, -1, -1, &st);
  ck_assert_msg(n != NULL, "%s", st.msg);
  expect_shape(n, tf_shape_of(4, 2, 3, 4, 5), TF_FLOAT64);
  n = build(g, "ResizeNearestNeighborGrad", gr,
            ivec(g, 2, (int32_t[]){3, 4}), -1, -1, &st);
  ck_assert_msg(n != NULL, "%s", st.msg);
  expect_shape(n, tf_shape_of(4, 2, 3, 4, 5), TF_FLOAT32);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_errors) {
  tf_graph *g = tf_graph_new();
  tf_output sz = ivec(g, 2, (int32_t[]){7, 9});
  tf_output img = ph(g, TF_FLOAT32, tf_shape_of(4, 2, 3, 4, 5));
  tf_output img3 = ph(g, TF_FLOAT32, tf_shape_of(3, 3, 4, 5));
  static const char *const fwd[] = {"ResizeBilinear", "ResizeNearestNeighbor",
                                    "ResizeNearestNeighborGrad"};
  for (int i = 0; i < 3; i++) {
    expect_fail(g, fwd[i], img, sz, 1, 1, "half_pixel_centers");
    expect_fail(g, fwd[i], img3, sz, -1, -1, "4-dimensional");
    expect_fail(g, fwd[i], img, ivec(g, 3, (int32_t[]){1, 2, 3}), -1, -1,
                "size must be a 1-D int32 tensor of 2 elements");
    expect_fail(g, fwd[i], img, ivec(g, 2, (int32_t[]){0, 2}), -1, -1,
                "size must be positive");
    expect_fail(g, fwd[i], img, ivec(g, 2, (int32_t[]){4, -2}), -1, -1,
                "size must be positive");
  }
  tf_output gr = ph(g, TF_FLOAT32, tf_shape_of(4, 2, 7, 9, 5));
  expect_fail(g, "ResizeBilinearGrad", gr,
              ph(g, TF_FLOAT32, tf_shape_of(4, 3, 3, 4, 5)), -1, -1,
              "batch size");
  expect_fail(g, "ResizeBilinearGrad", gr,
              ph(g, TF_FLOAT32, tf_shape_of(4, 2, 3, 4, 6)), -1, -1, "depth");
  expect_fail(g, "ResizeBilinearGrad", gr, img3, -1, -1, "original_image");
  expect_fail(g, "ResizeBilinearGrad", gr, img, 1, 1, "half_pixel_centers");
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("ops_image");
  TCase *tc = tcase_create("image");
  tcase_add_test(tc, test_specs);
  tcase_add_test(tc, test_shapes);
  tcase_add_test(tc, test_errors);
  suite_add_tcase(s, tc);
  return s;
}
