/* grad_reduction.c: gradients of the reductions, after TensorFlow's
 * python/ops/math_grad.py. dy is reshaped to the input's rank with the
 * reduced dims kept as 1 and then tiled (Sum, Mean) or broadcast through
 * element-wise ops (Prod, Max, Min) over the input. The kept shape and the
 * tile multiples are constants when the axes and the input's shape are
 * known, a Mul/Add on Shape(x) when only the axes and rank are, and TF's
 * DynamicStitch construction otherwise.
 *
 * Prod: the gradient of element i is the product of the others; it is
 * computed as prod(nonzero) / x_i when the group has no zero, as the
 * product of the others at the group's only zero, and 0 elsewhere (the
 * values TF's exclusive-cumprod formulation gives). Max/Min split the
 * gradient equally among the elements equal to the extreme, as TF does.
 * ArgMax/ArgMin, integer outputs, have no gradient. */
#include "lib/core/grad/grad_shape.h"
#include "lib/core/graph/grad_registry.h"
#include "lib/core/ops/array_spec.h"
#include "lib/core/base/util.h"

typedef struct red_shapes {
  tf_output kept;     /* int32 [rank]: x's shape with reduced dims 1 */
  tf_output tile;     /* int32 [rank]: reduced dims' sizes, 1 elsewhere */
  bool no_tile;       /* statically every tile multiple is 1 */
  bool static_factor; /* factor known */
  double factor;      /* elements reduced into each output element */
} red_shapes;

/* Static reduction mask; false when the axes or the rank are not known. */
static bool static_mask(const tf_grad_ctx *ctx, int *rank, uint32_t *mask) {
  const tf_tensor *axes = tf__gs_const(tf__grad_in(ctx, 1));
  *rank = tf__gs_rank(tf__grad_in(ctx, 0));
  tf_status st;
  tf_status_init(&st);
  return axes != NULL && *rank >= 0 &&
         tf__reduction_axes(axes, *rank, mask, &st) == TF_OK;
}

static void masked_shapes(tf_grad_ctx *ctx, int rank, uint32_t mask,
                          bool want_tile, red_shapes *r) {
  tf_output x = tf__grad_in(ctx, 0);
  const tf_shape *xs = tf_node_output_shape(x.node, x.index);
  int32_t kept[TF_MAX_RANK], tile[TF_MAX_RANK], red[TF_MAX_RANK],
      keep[TF_MAX_RANK];
  bool known = true;
  r->no_tile = true;
  r->static_factor = true;
  r->factor = 1;
  for (int d = 0; d < rank; d++) {
    bool reduced = (mask >> d) & 1;
    int64_t n = xs->dims[d];
    known = known && n >= 0;
    red[d] = reduced;
    keep[d] = !reduced;
    kept[d] = reduced ? 1 : (int32_t)n;
    tile[d] = reduced ? (int32_t)n : 1;
    if (reduced) {
      r->no_tile = r->no_tile && n == 1;
      r->static_factor = r->static_factor && n >= 0;
      r->factor *= (double)n;
    }
  }
  if (known) {
    r->kept = tf__grad_ivec(ctx, kept, rank);
    r->tile = want_tile ? tf__grad_ivec(ctx, tile, rank) : (tf_output){0};
    return;
  }
  tf_output s = tf__grad_shape(ctx, x);
  tf_output rv = tf__grad_ivec(ctx, red, rank), kv = tf__grad_ivec(ctx, keep, rank);
  r->kept = tf__grad_op2(ctx, "Add", tf__grad_op2(ctx, "Mul", s, kv), rv);
  if (want_tile) {
    r->tile = tf__grad_op2(ctx, "Add", tf__grad_op2(ctx, "Mul", s, rv), kv);
  }
}

/* TF's reduced_shape: stitch 1s into Shape(x) at (axes mod rank). */
static void dynamic_shapes(tf_grad_ctx *ctx, bool want_tile, red_shapes *r) {
  tf_output x = tf__grad_in(ctx, 0);
  tf_output s = tf__grad_shape(ctx, x);
  tf_output rank = tf__gs_size(ctx, s);
  tf_output ax = tf__grad_op2(
      ctx, "FloorMod", tf__gs_cast(ctx, tf__grad_in(ctx, 1), TF_INT32), rank);
  tf_output range[3] = {tf__grad_scalar(ctx, TF_INT32, 0), rank,
                        tf__grad_scalar(ctx, TF_INT32, 1)};
  tf_output ones =
      tf__grad_op2(ctx, "Fill", tf__grad_shape(ctx, ax),
                   tf__grad_scalar(ctx, TF_INT32, 1));
  tf_output in[4] = {tf__grad_op(ctx, "Range", range, 3, NULL, 0), ax, s,
                     ones};
  int count[2] = {2, 2};
  r->kept = tf__gs_op_groups(ctx, "DynamicStitch", in, count, 2, NULL, 0);
  if (want_tile) {
    r->tile = tf__grad_op2(ctx, "FloorDiv", s,
                           tf__grad_op2(ctx, "Maximum", r->kept,
                                        tf__grad_scalar(ctx, TF_INT32, 1)));
  }
  r->no_tile = false;
  r->static_factor = false;
}

/* The kept shape, and the tile multiples when want_tile. */
static void reduction_shapes(tf_grad_ctx *ctx, bool want_tile,
                             red_shapes *r) {
  int rank;
  uint32_t mask;
  *r = (red_shapes){.no_tile = false};
  if (static_mask(ctx, &rank, &mask)) {
    masked_shapes(ctx, rank, mask, want_tile, r);
  } else {
    dynamic_shapes(ctx, want_tile, r);
  }
}

/* Tile(Reshape(g, kept), tile): g spread over the reduced dims. */
static tf_output spread(tf_grad_ctx *ctx, const red_shapes *r, tf_output g) {
  tf_output k = tf__gs_reshape(ctx, g, r->kept);
  return r->no_tile ? k : tf__grad_op2(ctx, "Tile", k, r->tile);
}

static tf_code sum_grad(tf_grad_ctx *ctx) {
  red_shapes r;
  reduction_shapes(ctx, true, &r);
  ctx->dx[0].values = spread(ctx, &r, ctx->dy[0]);
  return ctx->st->code;
}

static tf_code mean_grad(tf_grad_ctx *ctx) {
  red_shapes r;
  reduction_shapes(ctx, true, &r);
  tf_dtype dt = tf_node_output_type(ctx->node, 0);
  tf_output factor;
  if (r.static_factor) {
    if (r.factor == 1) {
      ctx->dx[0].values = spread(ctx, &r, ctx->dy[0]);
      return ctx->st->code;
    }
    factor = tf__grad_scalar(ctx, dt, r.factor);
  } else {
    tf_output n_out = tf__grad_op2(ctx, "Maximum",
                                   tf__gs_size(ctx, tf__grad_out(ctx, 0)),
                                   tf__grad_scalar(ctx, TF_INT32, 1));
    factor = tf__gs_cast(
        ctx,
        tf__grad_op2(ctx, "FloorDiv", tf__gs_size(ctx, tf__grad_in(ctx, 0)),
                     n_out),
        dt);
  }
  ctx->dx[0].values =
      spread(ctx, &r, tf__grad_op2(ctx, "Div", ctx->dy[0], factor));
  return ctx->st->code;
}

static tf_output keep_dims_op(tf_grad_ctx *ctx, const char *op, tf_output x) {
  return tf__gs_op_attr(ctx, op, x, tf__grad_in(ctx, 1), "keep_dims",
                        tf_attr_bool(true));
}

static tf_output equal_as(tf_grad_ctx *ctx, tf_output a, tf_output b,
                          tf_dtype dt) {
  return tf__gs_cast(ctx, tf__grad_op2(ctx, "Equal", a, b), dt);
}

static tf_code prod_grad(tf_grad_ctx *ctx) {
  red_shapes r;
  reduction_shapes(ctx, false, &r);
  tf_output x = tf__grad_in(ctx, 0);
  tf_dtype dt = tf_node_output_type(ctx->node, 0);
  tf_output zero = tf__grad_scalar(ctx, dt, 0), one = tf__grad_scalar(ctx, dt, 1);
  tf_output is_zero = tf__grad_op2(ctx, "Equal", x, zero);
  tf_output sel[3] = {is_zero, tf__grad_op1(ctx, "OnesLike", x), x};
  tf_output x_nz = tf__grad_op(ctx, "Select", sel, 3, NULL, 0);
  tf_output prod_nz = keep_dims_op(ctx, "Prod", x_nz);
  tf_output zf = tf__gs_cast(ctx, is_zero, dt);
  tf_output n_zero = keep_dims_op(ctx, "Sum", zf);
  tf_output none = equal_as(ctx, n_zero, zero, dt);
  tf_output single = equal_as(ctx, n_zero, one, dt);
  /* none * (1 - zf) / x_nz + single * zf */
  tf_output at_nonzero = tf__grad_op2(
      ctx, "Div", tf__grad_op2(ctx, "Mul", none, tf__grad_op2(ctx, "Sub", one, zf)),
      x_nz);
  tf_output at_zero = tf__grad_op2(ctx, "Mul", single, zf);
  tf_output others = tf__grad_op2(
      ctx, "Mul", tf__grad_op2(ctx, "Add", at_nonzero, at_zero), prod_nz);
  tf_output dyk = tf__gs_reshape(ctx, ctx->dy[0], r.kept);
  ctx->dx[0].values = tf__grad_op2(ctx, "Mul", others, dyk);
  return ctx->st->code;
}

/* indicators / count * dy over the elements equal to the extreme. */
static tf_code extreme_grad(tf_grad_ctx *ctx) {
  red_shapes r;
  reduction_shapes(ctx, false, &r);
  tf_output x = tf__grad_in(ctx, 0);
  tf_dtype dt = tf_node_output_type(ctx->node, 0);
  tf_output yk = tf__gs_reshape(ctx, tf__grad_out(ctx, 0), r.kept);
  tf_output dyk = tf__gs_reshape(ctx, ctx->dy[0], r.kept);
  tf_output ind = equal_as(ctx, yk, x, dt);
  tf_output count = keep_dims_op(ctx, "Sum", ind);
  ctx->dx[0].values =
      tf__grad_op2(ctx, "Mul", tf__grad_op2(ctx, "Div", ind, count), dyk);
  return ctx->st->code;
}

static const tf_grad_def reduction_grads[] = {
    {"Sum", sum_grad},   {"Mean", mean_grad},   {"Prod", prod_grad},
    {"Max", extreme_grad}, {"Min", extreme_grad},
};

TF_REGISTER_GRADIENTS(reduction_grads)
