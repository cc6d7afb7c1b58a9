/* grad_image_test.c: the gradients of grad_image.c checked against central
 * differences of loss = sum(y * w) through the whole graph on fresh random
 * inputs, in every sampling mode, upscaling, downscaling and with size-1
 * dims, also with the image's dims unknown until run time.
 *  - ResizeNearestNeighbor on float64 images: tt_grad_check (step 1e-6,
 *    atol 1e-7, rtol 1e-6; the op is linear in the image, so differences
 *    are exact up to rounding).
 *  - ResizeBilinear, whose output is float32 whatever the image dtype: a
 *    local check with loss taken in float64 (Cast) and step 16 (the op is
 *    linear in the image, so the difference quotient is exact but for the
 *    float32 rounding of y, about 1e-6 relative; atol 2e-4, rtol 1e-4), on
 *    float32 and float64 images.
 * Also TF's structure: one ResizeBilinearGrad / ResizeNearestNeighborGrad
 * carrying the forward node's mode attrs, integer images get no
 * ResizeBilinear gradient, and size never gets one. */
#include <check.h>
#include <math.h>
#include <string.h>

#include "lib/core/graph/grad_registry.h"
#include "test/unit/core/grad/grad_testlib.h"

enum { LEGACY, ALIGN, HALF };

typedef struct rs_cfg {
  const char *op;
  int mode;
  int32_t oh, ow;
  bool hide;
} rs_cfg;

static int mode_kv(int mode, tf_attr_kv *kv) {
  kv[0] = (tf_attr_kv){"align_corners", tf_attr_bool(mode == ALIGN)};
  kv[1] = (tf_attr_kv){"half_pixel_centers", tf_attr_bool(mode == HALF)};
  return 2;
}

static tf_output build_rs(tf_graph *g, const tf_output *in, int n_in,
                          void *arg) {
  const rs_cfg *c = arg;
  (void)n_in;
  tf_attr_kv kv[2];
  int n = mode_kv(c->mode, kv);
  tf_output x = c->hide ? gt_hide(g, in[0], GT_HIDE_DIMS) : in[0];
  tf_output sz = gt_ivec(g, 2, (int32_t[]){c->oh, c->ow});
  return gt_o(tt_node(g, c->op, NULL, (tf_output[]){x, sz}, 2, kv, n));
}

typedef struct rs_shape {
  int64_t n, h, w, c;
  int32_t oh, ow;
} rs_shape;

static const rs_shape shapes[] = {
    {2, 3, 4, 2, 7, 9}, /* up */
    {1, 7, 9, 2, 3, 4}, /* down */
    {1, 1, 1, 2, 3, 2}, /* 1x1 image */
    {1, 5, 4, 1, 1, 1}, /* to 1x1 */
    {2, 1, 6, 1, 4, 3}, /* height 1, mixed */
};
#define N_SHAPES ((int)(sizeof shapes / sizeof shapes[0]))

START_TEST(test_nearest) {
  for (int m = 0; m < 3; m++)
    for (int k = 0; k < N_SHAPES; k++)
      for (int hide = 0; hide < 2; hide++) {
        const rs_shape *s = &shapes[k];
        rs_cfg c = {"ResizeNearestNeighbor", m, s->oh, s->ow, hide};
        tf_tensor *x = tt_rand(TF_FLOAT64, tf_shape_of(4, s->n, s->h, s->w,
                                                       s->c), -1, 1);
        tt_grad_check(build_rs, &c, &x, 1, NULL, 1e-7, 1e-6);
        tf_tensor_unref(x);
      }
}
END_TEST

/* ---- bilinear: loss in float64, large steps ------------------------------ */

typedef struct bl_run {
  tf_session *s;
  tf_tensor *x;
} bl_run;

static tf_tensor *bl_fetch(bl_run *r, const char *name) {
  tf_status st;
  tf_status_init(&st);
  const char *feed = "bl_x";
  tf_tensor *out = NULL;
  tf_code rc = tf_session_run(r->s, NULL, &feed, &r->x, 1, &name, &out, 1,
                              NULL, 0, NULL, &st);
  ck_assert_msg(rc == TF_OK, "fetching %s: %s", name, st.msg);
  return out;
}

static double bl_loss(bl_run *r) {
  tf_tensor *l = bl_fetch(r, "bl_loss");
  double v = tf_tensor_get_f64(l, 0);
  tf_tensor_unref(l);
  return v;
}

static void bl_set(tf_tensor *t, int64_t k, double v) {
  if (t->dtype == TF_FLOAT32) {
    ((float *)t->data)[k] = (float)v;
  } else {
    ((double *)t->data)[k] = v;
  }
}

/* loss = Sum(Reshape(Cast(y, float64) * w, [-1]), 0), named bl_loss. */
static tf_output bl_loss_node(tf_graph *g, tf_output y, const rs_shape *s) {
  tf_attr_kv ct = {"DstT", tf_attr_type_v(TF_FLOAT64)};
  tf_output yc = gt_o(tt_node(g, "Cast", NULL, &y, 1, &ct, 1));
  tf_tensor *w = tt_rand(TF_FLOAT64, tf_shape_of(4, s->n, s->oh, s->ow, s->c),
                         -1, 1);
  tf_output p = gt_op2(g, "Mul", yc, gt_o(tt_const(g, NULL, w)));
  int32_t m1 = -1, z = 0;
  tf_output flat = gt_op2(g, "Reshape", p, gt_ivec(g, 1, &m1));
  tf_output in[2] = {flat, gt_ivec(g, 1, &z)};
  return gt_o(tt_node(g, "Sum", "bl_loss", in, 2, NULL, 0));
}

static void check_bilinear(tf_dtype dt, const rs_shape *s, int mode,
                           bool hide) {
  tf_graph *g = tf_graph_new();
  tf_shape xs = tf_shape_of(4, s->n, s->h, s->w, s->c);
  tf_output x = gt_o(tt_placeholder(g, "bl_x", dt, xs));
  rs_cfg c = {"ResizeBilinear", mode, s->oh, s->ow, hide};
  tf_output loss = bl_loss_node(g, build_rs(g, &x, 1, &c), s);
  tf_status st;
  tf_status_init(&st);
  tf_output dx;
  ck_assert_msg(tf_gradients(g, &loss, 1, &x, 1, NULL, &dx, &st) == TF_OK,
                "%s", st.msg);
  ck_assert(dx.node != NULL && gt_count_op(g, "ResizeBilinearGrad") == 1);
  bl_run r = {tf_session_new(g, NULL, &st), tt_rand(dt, xs, -1, 1)};
  ck_assert_msg(r.s != NULL, "%s", st.msg);
  char name[300];
  snprintf(name, sizeof name, "%s:%d", tf_node_name(dx.node), dx.index);
  tf_tensor *d = bl_fetch(&r, name);
  ck_assert(d->dtype == dt && tf_shape_equal(&d->shape, &xs));
  const double h = 16;
  for (int64_t k = 0; k < r.x->n; k++) {
    double x0 = tf_tensor_get_f64(r.x, k);
    bl_set(r.x, k, x0 + h);
    double lp = bl_loss(&r), hp = tf_tensor_get_f64(r.x, k) - x0;
    bl_set(r.x, k, x0 - h);
    double lm = bl_loss(&r), hm = x0 - tf_tensor_get_f64(r.x, k);
    bl_set(r.x, k, x0);
    double num = (lp - lm) / (hp + hm), ana = tf_tensor_get_f64(d, k);
    ck_assert_msg(fabs(ana - num) <= 2e-4 + 1e-4 * fabs(num),
                  "mode %d shape %d element %lld: analytic %.9g numeric %.9g",
                  mode, (int)(s - shapes), (long long)k, ana, num);
  }
  tt_free((tf_tensor *[]){d, r.x}, 2);
  tf_session_free(r.s);
  tf_graph_free(g);
}

START_TEST(test_bilinear) {
  for (int m = 0; m < 3; m++)
    for (int k = 0; k < N_SHAPES; k++) {
      check_bilinear(TF_FLOAT64, &shapes[k], m, k == 0);
      check_bilinear(TF_FLOAT32, &shapes[k], m, false);
    }
}
END_TEST

/* The emitted op carries the forward node's modes; integer images and the
 * size get no gradient. */
START_TEST(test_structure) {
  static const char *const fwd[] = {"ResizeBilinear", "ResizeNearestNeighbor"};
  static const char *const bwd[] = {"ResizeBilinearGrad",
                                    "ResizeNearestNeighborGrad"};
  for (int i = 0; i < 2; i++) {
    tf_graph *g = tf_graph_new();
    tf_output x = gt_o(tt_placeholder(g, NULL, TF_FLOAT32,
                                      tf_shape_of(4, 1, 3, 3, 1)));
    tf_output sz = gt_o(tt_placeholder(g, NULL, TF_INT32, tf_shape_of(1, 2)));
    tf_attr_kv kv[2];
    mode_kv(HALF, kv);
    tf_output y = gt_o(tt_node(g, fwd[i], NULL, (tf_output[]){x, sz}, 2, kv,
                               2));
    tf_status st;
    tf_output dx[2];
    ck_assert(tf_gradients(g, &y, 1, (tf_output[]){x, sz}, 2, NULL, dx,
                           &st) == TF_OK);
    ck_assert(dx[0].node != NULL && dx[1].node == NULL);
    ck_assert_str_eq(tf_node_op(dx[0].node), bwd[i]);
    const tf_attr_value *h = tf_node_attr(dx[0].node, "half_pixel_centers");
    ck_assert(h != NULL && h->u.b);
    tf_graph_free(g);
  }
  tf_graph *g = tf_graph_new();
  tf_output x = gt_o(tt_placeholder(g, NULL, TF_UINT8,
                                    tf_shape_of(4, 1, 3, 3, 1)));
  tf_output sz = gt_ivec(g, 2, (int32_t[]){4, 4});
  tf_output y = gt_o(tt_node(g, "ResizeBilinear", NULL, (tf_output[]){x, sz},
                             2, NULL, 0));
  tf_status st;
  tf_output dx;
  ck_assert(tf_gradients(g, &y, 1, &x, 1, NULL, &dx, &st) == TF_OK);
  ck_assert(dx.node == NULL);
  ck_assert_int_eq(gt_count_op(g, "ResizeBilinearGrad"), 0);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("grad_image");
  TCase *tc = tcase_create("image");
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, test_nearest);
  tcase_add_test(tc, test_bilinear);
  tcase_add_test(tc, test_structure);
  suite_add_tcase(s, tc);
  return s;
}
