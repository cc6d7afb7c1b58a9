/* cpu_math_binary.c: CPU kernels of the broadcasting element-wise binary
 * ops (arithmetic, comparisons, logical and/or).
 *
 * One init and one compute serve them all: init resolves the (op, dtype)
 * block loop once; compute broadcasts the shapes (cpu_broadcast.h), checks
 * integer divisors and exponents, reuses an input buffer for the output
 * when it can, and runs the loop over the thread pool. */
#include <stdlib.h>
#include <string.h>

#include "lib/core/framework/kernel.h"
#include "lib/core/base/util.h"
#include "lib/devices/cpu/cpu_broadcast.h"
#include "lib/devices/cpu/cpu_math_binary.h"

typedef struct binop_state {
  tf__binop op;
  tf_dtype dt;
  tf_bcast_block_fn fn;
  bool incompatible_shape_error; /* Equal/NotEqual attr; true elsewhere */
  int64_t grain;                 /* elements per parallel chunk, at least */
} binop_state;

static const struct {
  const char *name;
  tf__binop op;
} k_ops[] = {
    {"Add", TF__BINOP_ADD},
    {"AddV2", TF__BINOP_ADD}, /* TF's AddV2 computes what Add does */
    {"Sub", TF__BINOP_SUB},
    {"Mul", TF__BINOP_MUL},
    {"Div", TF__BINOP_DIV},
    {"RealDiv", TF__BINOP_DIV}, /* float kernels only: Div's float loop */
    {"FloorDiv", TF__BINOP_FLOORDIV},
    {"TruncateDiv", TF__BINOP_TRUNCDIV},
    {"FloorMod", TF__BINOP_FLOORMOD},
    {"Mod", TF__BINOP_TRUNCMOD}, /* TF's Mod truncates, as TruncateMod */
    {"TruncateMod", TF__BINOP_TRUNCMOD},
    {"Pow", TF__BINOP_POW},
    {"Maximum", TF__BINOP_MAXIMUM},
    {"Minimum", TF__BINOP_MINIMUM},
    {"Greater", TF__BINOP_GREATER},
    {"GreaterEqual", TF__BINOP_GREATER_EQUAL},
    {"Less", TF__BINOP_LESS},
    {"LessEqual", TF__BINOP_LESS_EQUAL},
    {"Equal", TF__BINOP_EQUAL},
    {"NotEqual", TF__BINOP_NOT_EQUAL},
    {"LogicalAnd", TF__BINOP_LOGICAL_AND},
    {"LogicalOr", TF__BINOP_LOGICAL_OR},
    {"SquaredDifference", TF__BINOP_SQUARED_DIFFERENCE},
    {"DivNoNan", TF__BINOP_DIV_NO_NAN},
    {"Atan2", TF__BINOP_ATAN2},
    {"Xdivy", TF__BINOP_XDIVY},
    {"Xlogy", TF__BINOP_XLOGY},
};
#define N_OPS ((int)(sizeof(k_ops) / sizeof(k_ops[0])))
/* Three names share another's loop: Mod, AddV2, RealDiv. */
_Static_assert(N_OPS == TF__BINOP_COUNT + 3, "every binop needs an op name");

static bool is_comparison(tf__binop op) {
  return op >= TF__BINOP_GREATER && op <= TF__BINOP_NOT_EQUAL;
}

static bool is_logical(tf__binop op) {
  return op == TF__BINOP_LOGICAL_AND || op == TF__BINOP_LOGICAL_OR;
}

/* Library calls (pow, fmod) and integer division cost far more than an
 * add: smaller chunks still pay for waking a thread. */
static int64_t op_grain(tf__binop op, tf_dtype dt) {
  bool is_float = dt == TF_FLOAT32 || dt == TF_FLOAT64;
  switch (op) {
  case TF__BINOP_POW:
  case TF__BINOP_ATAN2:
  case TF__BINOP_XLOGY:
    return TF_PARALLEL_GRAIN / 16;
  case TF__BINOP_FLOORMOD:
  case TF__BINOP_TRUNCMOD:
    return is_float ? TF_PARALLEL_GRAIN / 16 : TF_PARALLEL_GRAIN / 4;
  case TF__BINOP_DIV:
  case TF__BINOP_FLOORDIV:
  case TF__BINOP_TRUNCDIV:
    return is_float ? TF_PARALLEL_GRAIN : TF_PARALLEL_GRAIN / 4;
  default:
    return TF_PARALLEL_GRAIN;
  }
}

static tf_code binop_init(const tf_node *node, void **state, tf_status *st) {
  const char *name = tf_node_op(node);
  int i = 0;
  while (i < N_OPS && strcmp(k_ops[i].name, name) != 0) {
    i++;
  }
  if (i == N_OPS) {
    return tf_status_set(st, TF_INTERNAL, "'%s': %s is not a binary op",
                         tf_node_name(node), name);
  }
  binop_state s = {.op = k_ops[i].op, .dt = TF_BOOL,
                   .incompatible_shape_error = true};
  if (!is_logical(s.op)) {
    TF_TRY(tf_node_attr_get_type(node, "T", &s.dt, st));
  }
  const tf_attr_value *ise = tf_node_attr(node, "incompatible_shape_error");
  if (ise != NULL && ise->type == TF_ATTR_BOOL) {
    s.incompatible_shape_error = ise->u.b;
  }
  s.fn = tf__binop_block_fn(s.op, s.dt);
  if (s.fn == NULL) {
    return tf_status_set(st, TF_UNIMPLEMENTED,
                         "'%s': no CPU kernel for %s with T=%s",
                         tf_node_name(node), name, tf_dtype_name(s.dt));
  }
  s.grain = op_grain(s.op, s.dt);
  binop_state *p = tf__xmalloc(sizeof(*p));
  *p = s;
  *state = p;
  return TF_OK;
}

/* NumPy's rule without building anything: used where an incompatible pair
 * is an answer rather than an error (Equal with
 * incompatible_shape_error=false). */
static bool broadcastable(const tf_shape *a, const tf_shape *b) {
  for (int i = 1; i <= a->rank && i <= b->rank; i++) {
    int64_t da = a->dims[a->rank - i], db = b->dims[b->rank - i];
    if (da != db && da != 1 && db != 1) {
      return false;
    }
  }
  return true;
}

/* Equal / NotEqual on shapes that do not broadcast, when asked not to
 * fail: a scalar false / true, as TF answers. */
static tf_code incompatible_answer(tf_kernel_ctx *ctx, tf__binop op) {
  tf_tensor *out;
  tf_shape scalar = tf_shape_scalar();
  TF_TRY(tf_kernel_alloc_output(ctx, 0, TF_BOOL, &scalar, &out));
  *(bool *)out->data = op == TF__BINOP_NOT_EQUAL;
  return TF_OK;
}

/* Integer division and remainder by zero and integer Pow with a negative
 * exponent are errors, as in TF. Every element of y reaches the output
 * when the output is not empty, so scanning y is exact. */
static tf_code check_operands(tf_kernel_ctx *ctx, const binop_state *s,
                              const tf_tensor *y) {
  bool divides = s->op >= TF__BINOP_DIV && s->op <= TF__BINOP_TRUNCMOD;
  if (divides && tf__tensor_has_zero(y)) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "Integer division by zero");
  }
  if (s->op == TF__BINOP_POW && tf__tensor_has_negative(y)) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "Integers to negative integer powers are not "
                           "allowed");
  }
  return TF_OK;
}

/* Output 0: an input's buffer when it has the output's dtype and element
 * count (and nobody else holds it), else a new tensor. */
static tf_code binop_output(tf_kernel_ctx *ctx, const tf_bcast *bc,
                            tf_dtype out_dt, tf_tensor **out) {
  for (int k = 0; k < 2; k++) {
    const tf_tensor *in = ctx->inputs[k];
    if (in->dtype == out_dt && tf_bcast_is_full(bc, k)) {
      return tf_kernel_forward_or_alloc(ctx, k, 0, out_dt, &bc->out, out);
    }
  }
  return tf_kernel_alloc_output(ctx, 0, out_dt, &bc->out, out);
}

static tf_code binop_compute(tf_kernel_ctx *ctx) {
  const binop_state *s = ctx->state;
  const tf_tensor *x = ctx->inputs[0], *y = ctx->inputs[1];
  if (x->dtype != s->dt || y->dtype != s->dt) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "expected two %s inputs, got %s and %s",
                           tf_dtype_name(s->dt), tf_dtype_name(x->dtype),
                           tf_dtype_name(y->dtype));
  }
  if (!s->incompatible_shape_error && !broadcastable(&x->shape, &y->shape)) {
    return incompatible_answer(ctx, s->op);
  }
  tf_bcast bc;
  tf_status bst;
  const tf_shape *shapes[2] = {&x->shape, &y->shape};
  if (tf_bcast_init(&bc, 2, shapes, &bst) != TF_OK) {
    return tf_kernel_error(ctx, bst.code, "%s", bst.msg);
  }
  if (bc.n > 0) {
    TF_TRY(check_operands(ctx, s, y));
  }
  tf_dtype out_dt = is_comparison(s->op) ? TF_BOOL : s->dt;
  tf_tensor *out;
  TF_TRY(binop_output(ctx, &bc, out_dt, &out));
  tf__binop_args args = {out->data, {x->data, y->data}};
  tf_bcast_run(&bc, ctx->pool, s->grain, s->fn, &args);
  return TF_OK;
}

/* ---- registrations ---------------------------------------------------- */

#define KB(op, DT)                                                             \
  {op, TF_DEVICE_CPU, TF_##DT, NULL, binop_init, binop_compute, NULL, free, 0},
#define NUM_TYPES(X, op)                                                       \
  X(op, FLOAT32) X(op, FLOAT64) X(op, INT8) X(op, INT16) X(op, INT32)          \
  X(op, INT64) X(op, UINT8) X(op, UINT16) X(op, UINT32) X(op, UINT64)

/* TF's CPU kernels of Mod, TruncateMod and SquaredDifference: these four
 * dtypes. */
#define MOD_TYPES(X, op)                                                       \
  X(op, FLOAT32) X(op, FLOAT64) X(op, INT32) X(op, INT64)
/* TF's CPU kernels of RealDiv, DivNoNan, Atan2, Xdivy, Xlogy (less half,
 * bfloat16 and complex, which this runtime has no loops for). */
#define FLOAT_ONLY(X, op) X(op, FLOAT32) X(op, FLOAT64)

static const tf_kernel_def k_math_binary_kernels[] = {
    NUM_TYPES(KB, "Add") NUM_TYPES(KB, "AddV2") NUM_TYPES(KB, "Sub")
    NUM_TYPES(KB, "Mul") FLOAT_ONLY(KB, "RealDiv")
    MOD_TYPES(KB, "SquaredDifference") FLOAT_ONLY(KB, "DivNoNan")
    FLOAT_ONLY(KB, "Atan2") FLOAT_ONLY(KB, "Xdivy") FLOAT_ONLY(KB, "Xlogy")
    NUM_TYPES(KB, "Div") NUM_TYPES(KB, "FloorDiv") NUM_TYPES(KB, "TruncateDiv")
    NUM_TYPES(KB, "FloorMod") MOD_TYPES(KB, "Mod") MOD_TYPES(KB, "TruncateMod")
    NUM_TYPES(KB, "Pow") NUM_TYPES(KB, "Maximum") NUM_TYPES(KB, "Minimum")
    NUM_TYPES(KB, "Greater") NUM_TYPES(KB, "GreaterEqual")
    NUM_TYPES(KB, "Less") NUM_TYPES(KB, "LessEqual")
    NUM_TYPES(KB, "Equal") KB("Equal", BOOL)
    NUM_TYPES(KB, "NotEqual") KB("NotEqual", BOOL)
    /* No type attr: keyed as any dtype. */
    KB("LogicalAnd", DTYPE_ANY) KB("LogicalOr", DTYPE_ANY)
};

TF_REGISTER_KERNELS(k_math_binary_kernels)
