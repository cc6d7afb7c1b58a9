/* ops_scan.c: the scan op family (Cumsum, Cumprod) with TensorFlow's
 * signatures: x, a scalar axis (int32 or int64, negative counts from the
 * end), and the attrs exclusive and reverse. The output has x's shape. The
 * shape function also rejects, at graph-build time, an axis that is not a
 * scalar and a constant axis out of range (the kernel's messages). */
#include <inttypes.h>

#include "lib/core/framework/op_registry.h"
#include "lib/core/base/util.h"

static tf_code scan_shape(tf_shape_ctx *ctx) {
  const tf_shape *x = &ctx->in[0], *axis = &ctx->in[1];
  char buf[96];
  if (axis->rank != TF_UNKNOWN_RANK && axis->rank != 0) {
    return tf_shape_error(ctx, "axis must be a scalar, not shape %s",
                          tf_shape_str(axis, buf, sizeof(buf)));
  }
  const tf_tensor *av = ctx->in_value ? ctx->in_value[1] : NULL;
  if (x->rank != TF_UNKNOWN_RANK && av != NULL && av->n == 1) {
    int64_t a = tf_tensor_get_i64(av, 0);
    if (a < -x->rank || a >= x->rank) {
      return tf_shape_error(ctx,
                            "Expected scan axis in the range [%d, %d), but "
                            "got %" PRId64,
                            -x->rank, x->rank, a);
    }
  }
  ctx->out[0] = *x;
  return TF_OK;
}

#define SCAN_OP(op_name, what)                                                 \
  {op_name,                                                                    \
   {"x: T", "axis: Tidx"},                                                     \
   {"out: T"},                                                                 \
   {"exclusive: bool = false", "reverse: bool = false",                        \
    "T: {float, double, int32, int64}", "Tidx: {int32, int64} = int32"},       \
   scan_shape,                                                                 \
   0,                                                                          \
   "Cumulative " what " of x along axis; exclusive starts from the "          \
   "identity, reverse runs from the end."}

static const tf_op_spec scan_ops[] = {
    SCAN_OP("Cumsum", "sum"),
    SCAN_OP("Cumprod", "product"),
};

TF_REGISTER_OPS("scan", scan_ops)
