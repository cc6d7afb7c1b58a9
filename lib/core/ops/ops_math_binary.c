/* ops_math_binary.c: op definitions of the element-wise binary math family
 * (arithmetic, comparisons, logical and/or with NumPy broadcasting) and of
 * Select, SelectV2, AddN, BiasAdd and ClipByValue, with their shape
 * functions.
 *
 * Shape functions accept unknown ranks and dims and only fail on what the
 * known parts already rule out; the kernels check the rest at run time. */
#include <string.h>

#include "lib/core/framework/op_registry.h"

#define NUM_T "{float, double, int8, int16, int32, int64, uint8, uint16, " \
              "uint32, uint64}"
#define EQ_T "{float, double, int8, int16, int32, int64, uint8, uint16, " \
             "uint32, uint64, bool}"

/* ---- shape helpers ---------------------------------------------------- */

static const char *sstr(const tf_shape *s, char *buf, size_t size) {
  return tf_shape_str(s, buf, size);
}

/* ---- shape functions -------------------------------------------------- */

/* Equal / NotEqual: with incompatible_shape_error=false a pair that does
 * not broadcast gives a scalar instead of an error, so only fully known
 * shapes say which. */
static tf_code equality_shape(tf_shape_ctx *ctx) {
  const tf_attr_value *v =
      tf_node_attr(ctx->node, "incompatible_shape_error");
  if (v == NULL || v->type != TF_ATTR_BOOL || v->u.b) {
    return tf_shape_fn_broadcast(ctx);
  }
  if (!tf_shape_is_fully_defined(&ctx->in[0]) ||
      !tf_shape_is_fully_defined(&ctx->in[1])) {
    ctx->out[0] = tf_shape_unknown();
    return TF_OK;
  }
  if (tf_shape_broadcast(&ctx->in[0], &ctx->in[1], &ctx->out[0], NULL) !=
      TF_OK) {
    ctx->out[0] = tf_shape_scalar();
  }
  return TF_OK;
}

/* Select (TF v1): t and e agree; condition is a scalar, has t's shape, or
 * is a vector as long as t's first dim. */
static tf_code select_shape(tf_shape_ctx *ctx) {
  const tf_shape *c = &ctx->in[0];
  tf_shape data;
  char a[128], b[128];
  if (tf_shape_merge(&ctx->in[1], &ctx->in[2], &data, NULL) != TF_OK) {
    return tf_shape_error(ctx, "'t' and 'e' must have the same shape, got "
                          "%s and %s", sstr(&ctx->in[1], a, sizeof(a)),
                          sstr(&ctx->in[2], b, sizeof(b)));
  }
  ctx->out[0] = data;
  if (data.rank == TF_UNKNOWN_RANK && c->rank >= 2) {
    ctx->out[0] = *c; /* only a vector condition differs from t's shape */
  }
  if (c->rank == TF_UNKNOWN_RANK || data.rank == TF_UNKNOWN_RANK ||
      c->rank == 0) {
    return TF_OK;
  }
  bool ok;
  if (c->rank == 1 && data.rank >= 1) {
    int64_t x = c->dims[0], y = data.dims[0];
    ok = x < 0 || y < 0 || x == y;
    if (ok && data.rank == 1) {
      ctx->out[0].dims[0] = x >= 0 ? x : y;
    }
  } else {
    ok = tf_shape_merge(&data, c, &ctx->out[0], NULL) == TF_OK;
  }
  if (!ok) {
    return tf_shape_error(ctx, "condition must be a scalar, a vector as long "
                          "as t's first dim, or have t's shape: got "
                          "condition %s and t %s", sstr(c, a, sizeof(a)),
                          sstr(&data, b, sizeof(b)));
  }
  return TF_OK;
}

/* SelectV2: condition, t and e broadcast together (NumPy's rule over all
 * three). */
static tf_code select_v2_shape(tf_shape_ctx *ctx) {
  tf_shape te, out;
  tf_status tmp;
  if (tf_shape_broadcast(&ctx->in[1], &ctx->in[2], &te, &tmp) != TF_OK) {
    return tf_shape_error(ctx, "t and e do not broadcast: %s", tmp.msg);
  }
  if (tf_shape_broadcast(&ctx->in[0], &te, &out, &tmp) != TF_OK) {
    return tf_shape_error(ctx, "condition does not broadcast with t and e: "
                          "%s", tmp.msg);
  }
  ctx->out[0] = out;
  return TF_OK;
}

/* AddN: every input has the same shape. */
static tf_code addn_shape(tf_shape_ctx *ctx) {
  tf_shape m = ctx->in[0];
  for (int i = 1; i < ctx->n_in; i++) {
    if (tf_shape_merge(&m, &ctx->in[i], &m, NULL) != TF_OK) {
      char a[128], b[128];
      return tf_shape_error(ctx, "inputs must all have the same shape: "
                            "input 0 is %s, input %d is %s",
                            sstr(&ctx->in[0], a, sizeof(a)), i,
                            sstr(&ctx->in[i], b, sizeof(b)));
    }
  }
  ctx->out[0] = m;
  return TF_OK;
}

/* BiasAdd: value of rank >= 2 (NHWC: channels last) or >= 3 (NCHW:
 * channels at dim 1); bias a vector as long as the channel dim. */
static tf_code bias_add_shape(tf_shape_ctx *ctx) {
  const tf_attr_value *df = tf_node_attr(ctx->node, "data_format");
  bool nchw = df != NULL && df->type == TF_ATTR_STRING &&
              strcmp(df->u.s, "NCHW") == 0;
  const tf_shape *v = &ctx->in[0], *bias = &ctx->in[1];
  char a[128], b[128];
  int min_rank = nchw ? 3 : 2;
  if (v->rank != TF_UNKNOWN_RANK && v->rank < min_rank) {
    return tf_shape_error(ctx, "value must be at least %dD for data_format "
                          "%s: %s", min_rank, nchw ? "NCHW" : "NHWC",
                          sstr(v, a, sizeof(a)));
  }
  if (bias->rank != TF_UNKNOWN_RANK && bias->rank != 1) {
    return tf_shape_error(ctx, "bias must be a vector: %s",
                          sstr(bias, a, sizeof(a)));
  }
  ctx->out[0] = *v;
  if (v->rank == TF_UNKNOWN_RANK || bias->rank == TF_UNKNOWN_RANK) {
    return TF_OK;
  }
  int cdim = nchw ? 1 : v->rank - 1;
  int64_t x = v->dims[cdim], y = bias->dims[0];
  if (x >= 0 && y >= 0 && x != y) {
    return tf_shape_error(ctx, "bias must be as long as value's channel dim "
                          "%d: got bias %s, value %s", cdim,
                          sstr(bias, a, sizeof(a)), sstr(v, b, sizeof(b)));
  }
  ctx->out[0].dims[cdim] = x >= 0 ? x : y;
  return TF_OK;
}

/* ClipByValue: bounds are scalars or have t's shape. */
static tf_code clip_shape(tf_shape_ctx *ctx) {
  static const char *const names[3] = {"t", "clip_value_min",
                                       "clip_value_max"};
  tf_shape m = ctx->in[0];
  for (int i = 1; i < 3; i++) {
    const tf_shape *s = &ctx->in[i];
    if (s->rank == TF_UNKNOWN_RANK || s->rank == 0) {
      continue;
    }
    if (tf_shape_merge(&m, s, &m, NULL) != TF_OK) {
      char a[128], b[128];
      return tf_shape_error(ctx, "%s must be a scalar or have the shape of "
                            "t %s, got %s", names[i],
                            sstr(&ctx->in[0], a, sizeof(a)),
                            sstr(s, b, sizeof(b)));
    }
  }
  ctx->out[0] = m;
  return TF_OK;
}

/* ---- the table -------------------------------------------------------- */

#define BINARY(name, T, OUT, flags, doc)                                       \
  {name, {"x: " T, "y: " T}, {"z: " OUT}, {"T: " NUM_T},                       \
   tf_shape_fn_broadcast, flags, doc}
#define ARITH(name, doc) BINARY(name, "T", "T", 0, doc)
/* ARITH with the audit's note on how it differs from TensorFlow's op. */
#define ARITH_DEV(name, doc, dev)                                              \
  {name, {"x: T", "y: T"}, {"z: T"}, {"T: " NUM_T},                            \
   tf_shape_fn_broadcast, 0, doc, dev}
#define COMPARE(name, doc)                                                     \
  BINARY(name, "T", "bool", TF_OP_NOT_DIFFERENTIABLE, doc)

/* TensorFlow's T of FloorDiv and TruncateDiv (its BINARY_MORE), less
 * complex128, and of Mod and TruncateMod. */
#define DIV_T "{bfloat16, half, float, double, uint8, int8, uint16, int16, " \
              "int32, uint32, uint64, int64, complex64}"
#define TMOD_T "{int32, int64, bfloat16, half, float, double}"
/* TensorFlow's T lists (complex128 left out: this runtime has no such
 * dtype). */
#define ADDV2_T "{bfloat16, half, float, double, uint8, uint16, uint32, " \
                "uint64, int8, int16, int32, int64, complex64}"
#define SQDIFF_T "{bfloat16, half, float, double, int32, int64, complex64}"
#define DIVNONAN_T "{half, float, bfloat16, double, complex64}"
#define XOPS_T "{half, float, double, complex64}"

static const tf_op_spec k_math_binary_ops[] = {
    ARITH_DEV("Add", "x + y element-wise, with broadcasting.",
              "also takes uint16, uint32 and uint64, which TF's Add rejects "
              "(its AddV2 takes them)"),
    {.name = "AddV2", .inputs = {"x: T", "y: T"}, .outputs = {"z: T"},
     .attrs = {"T: " ADDV2_T}, .shape_fn = tf_shape_fn_broadcast,
     .doc = "x + y element-wise, with broadcasting (integers wrap)."},
    ARITH("Sub", "x - y element-wise, with broadcasting."),
    ARITH("Mul", "x * y element-wise, with broadcasting."),
    ARITH("Div", "x / y element-wise (integers truncate; dividing an integer "
                 "by zero is an error)."),
    {.name = "RealDiv", .inputs = {"x: T", "y: T"}, .outputs = {"z: T"},
     .attrs = {"T: " DIV_T}, .shape_fn = tf_shape_fn_broadcast,
     .doc = "x / y element-wise for real types, with broadcasting (IEEE: "
            "x / 0 is +-inf or NaN). CPU kernels: float and double, as "
            "TF's."},
    {.name = "SquaredDifference", .inputs = {"x: T", "y: T"},
     .outputs = {"z: T"}, .attrs = {"T: " SQDIFF_T},
     .shape_fn = tf_shape_fn_broadcast,
     .doc = "(x - y)^2 element-wise, with broadcasting (integers wrap)."},
    {.name = "DivNoNan", .inputs = {"x: T", "y: T"}, .outputs = {"z: T"},
     .attrs = {"T: " DIVNONAN_T}, .shape_fn = tf_shape_fn_broadcast,
     .doc = "0 where y == 0, else x / y, element-wise with broadcasting."},
    {.name = "Atan2", .inputs = {"y: T", "x: T"}, .outputs = {"z: T"},
     .attrs = {"T: {bfloat16, half, float, double}"},
     .shape_fn = tf_shape_fn_broadcast,
     .doc = "atan2(y, x) element-wise, the angle of the point (x, y) in "
            "[-pi, pi], with broadcasting."},
    {.name = "Xdivy", .inputs = {"x: T", "y: T"}, .outputs = {"z: T"},
     .attrs = {"T: " XOPS_T}, .shape_fn = tf_shape_fn_broadcast,
     .doc = "0 where x == 0 (whatever y is), else x / y, element-wise with "
            "broadcasting."},
    {.name = "Xlogy", .inputs = {"x: T", "y: T"}, .outputs = {"z: T"},
     .attrs = {"T: " XOPS_T}, .shape_fn = tf_shape_fn_broadcast,
     .doc = "0 where x == 0 (whatever y is), else x * log(y), element-wise "
            "with broadcasting."},
    {.name = "FloorDiv", .inputs = {"x: T", "y: T"}, .outputs = {"z: T"},
     .attrs = {"T: " DIV_T}, .shape_fn = tf_shape_fn_broadcast,
     .flags = TF_OP_NOT_DIFFERENTIABLE,
     .doc = "x / y rounded toward -inf (floats: floor(x / y)), with "
            "broadcasting; an integer division by zero is an error."},
    {.name = "TruncateDiv", .inputs = {"x: T", "y: T"}, .outputs = {"z: T"},
     .attrs = {"T: " DIV_T}, .shape_fn = tf_shape_fn_broadcast,
     .flags = TF_OP_NOT_DIFFERENTIABLE,
     .doc = "x / y rounded toward zero as in C (floats: trunc(x / y)), with "
            "broadcasting; an integer division by zero is an error."},
    {.name = "FloorMod", .inputs = {"x: T", "y: T"}, .outputs = {"z: T"},
     .attrs = {"T: {int8, int16, int32, int64, uint8, uint16, uint32, "
               "uint64, bfloat16, half, float, double}"},
     .shape_fn = tf_shape_fn_broadcast,
     .doc = "Remainder of the flooring division, x - floor(x / y) * y: the "
            "sign of y, as Python's %; an integer division by zero is an "
            "error."},
    {.name = "Mod", .inputs = {"x: T", "y: T"}, .outputs = {"z: T"},
     .attrs = {"T: " TMOD_T}, .shape_fn = tf_shape_fn_broadcast,
     .doc = "Remainder of the truncating division (C's % and fmod): the "
            "sign of x; an integer division by zero is an error. No "
            "gradient (TF defines none)."},
    {.name = "TruncateMod", .inputs = {"x: T", "y: T"}, .outputs = {"z: T"},
     .attrs = {"T: " TMOD_T}, .shape_fn = tf_shape_fn_broadcast,
     .doc = "Remainder of the truncating division (C's % and fmod): the "
            "sign of x; an integer division by zero is an error. No "
            "gradient (TF defines none)."},
    ARITH_DEV("Pow", "x ** y element-wise (integers to negative powers are "
                     "an error).",
              "also takes uint8, uint16, uint32 and uint64; TF's Pow takes "
              "signed integers only"),
    ARITH("Maximum", "max(x, y) element-wise; NaN wins."),
    ARITH("Minimum", "min(x, y) element-wise; NaN wins."),
    COMPARE("Greater", "x > y element-wise, with broadcasting."),
    COMPARE("GreaterEqual", "x >= y element-wise, with broadcasting."),
    COMPARE("Less", "x < y element-wise, with broadcasting."),
    COMPARE("LessEqual", "x <= y element-wise, with broadcasting."),
    {"Equal", {"x: T", "y: T"}, {"z: bool"},
     {"T: " EQ_T, "incompatible_shape_error: bool = true"}, equality_shape,
     TF_OP_NOT_DIFFERENTIABLE,
     "x == y element-wise; shapes that do not broadcast give false when "
     "incompatible_shape_error is false."},
    {"NotEqual", {"x: T", "y: T"}, {"z: bool"},
     {"T: " EQ_T, "incompatible_shape_error: bool = true"}, equality_shape,
     TF_OP_NOT_DIFFERENTIABLE,
     "x != y element-wise; shapes that do not broadcast give true when "
     "incompatible_shape_error is false."},
    {"LogicalAnd", {"x: bool", "y: bool"}, {"z: bool"}, {NULL},
     tf_shape_fn_broadcast, TF_OP_NOT_DIFFERENTIABLE,
     "x AND y element-wise, with broadcasting."},
    {"LogicalOr", {"x: bool", "y: bool"}, {"z: bool"}, {NULL},
     tf_shape_fn_broadcast, TF_OP_NOT_DIFFERENTIABLE,
     "x OR y element-wise, with broadcasting."},
    {"Select", {"condition: bool", "t: T", "e: T"}, {"output: T"},
     {"T: type"}, select_shape, 0,
     "Picks t where condition is true, else e (condition: scalar, t's shape, "
     "or a vector over t's first dim)."},
    {"SelectV2", {"condition: bool", "t: T", "e: T"}, {"output: T"},
     {"T: type"}, select_v2_shape, 0,
     "Picks t where condition is true, else e, with condition, t and e "
     "broadcast together (NumPy's rule)."},
    {"AddN", {"inputs: N * T"}, {"sum: T"}, {"N: int >= 1", "T: " NUM_T},
     addn_shape, 0, "Sums N tensors of the same shape and dtype."},
    {"BiasAdd", {"value: T", "bias: T"}, {"output: T"},
     {"T: " NUM_T, "data_format: {'NHWC', 'NCHW'} = 'NHWC'"}, bias_add_shape,
     0, "Adds a 1-D bias along value's channel dim (last for NHWC, 1 for "
        "NCHW)."},
    {"ClipByValue", {"t: T", "clip_value_min: T", "clip_value_max: T"},
     {"output: T"}, {"T: " NUM_T}, clip_shape, 0,
     "max(min(t, clip_value_max), clip_value_min); bounds are scalars or "
     "t's shape."},
};

TF_REGISTER_OPS("math_binary", k_math_binary_ops)
