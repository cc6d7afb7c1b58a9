/* grad_registry.h: per-op gradient functions and helpers to write them.
 *
 * A gradient function receives the forward node and the gradient flowing
 * into each of its outputs, and adds nodes to the graph that compute the
 * gradient of each input. Families register a table with
 * TF_REGISTER_GRADIENTS(table) in lib/core/grad/grad_<family>.c. */
#ifndef TF_CORE_GRAD_REGISTRY_H
#define TF_CORE_GRAD_REGISTRY_H

#include "tf/attr.h"
#include "tf/gradients.h"

typedef struct tf_grad_ctx {
  tf_graph *g;
  const tf_node *node;  /* the forward node */
  int n_dy;
  const tf_output *dy;  /* per forward output, dense; node NULL = zero */
  int n_dx;
  tf_grad *dx;          /* per forward input, all-NULL on entry: set the
                         * ones that get a gradient (values dense, or
                         * values + indices + dense_shape when sparse) */
  tf_status *st;
} tf_grad_ctx;

typedef tf_code (*tf_grad_fn)(tf_grad_ctx *ctx);

typedef struct tf_grad_def {
  const char *op;
  tf_grad_fn fn;
} tf_grad_def;

typedef struct tf_grad_family {
  const tf_grad_def *defs;
  size_t n;
  struct tf_grad_family *next;
} tf_grad_family;

void tf__grad_register_family(tf_grad_family *fam);

#define TF_REGISTER_GRADIENTS(table)                                           \
  static tf_grad_family tf__gfam_##table = {                                   \
      table, sizeof(table) / sizeof((table)[0]), 0};                           \
  __attribute__((constructor)) static void tf__greg_##table(void) {           \
    tf__grad_register_family(&tf__gfam_##table);                              \
  }

/* The gradient function of op, or NULL. */
tf_grad_fn tf_grad_lookup(const char *op);
/* How many families registered a gradient for op (tests: must be <= 1). */
int tf__grad_count_registrations(const char *op);

/* ---- helpers for gradient functions --------------------------------------
 * Each builds one node (named after the forward node, in the current
 * scope) and returns its output 0; on error it sets ctx->st and returns an
 * output whose node is NULL, and later helpers given a NULL input return
 * NULL too, so a function may chain calls and check ctx->st->code once. */

/* op(in[0..n_in)) with attrs; list inputs: pass them as one group with
 * tf__grad_op_list. */
tf_output tf__grad_op(tf_grad_ctx *ctx, const char *op, const tf_output *in,
                      int n_in, const tf_attr_kv *attrs, int n_attrs);
tf_output tf__grad_op_list(tf_grad_ctx *ctx, const char *op,
                           const tf_output *list, int n_list,
                           const tf_attr_kv *attrs, int n_attrs);
static inline tf_output tf__grad_op1(tf_grad_ctx *ctx, const char *op, tf_output a) {
  return tf__grad_op(ctx, op, &a, 1, NULL, 0);
}
static inline tf_output tf__grad_op2(tf_grad_ctx *ctx, const char *op, tf_output a,
                                     tf_output b) {
  tf_output in[2] = {a, b};
  return tf__grad_op(ctx, op, in, 2, NULL, 0);
}
/* A scalar constant of dtype dt. */
tf_output tf__grad_scalar(tf_grad_ctx *ctx, tf_dtype dt, double v);
/* A constant int32 vector. */
tf_output tf__grad_ivec(tf_grad_ctx *ctx, const int32_t *v, int n);
/* Shape(x) as int32. */
tf_output tf__grad_shape(tf_grad_ctx *ctx, tf_output x);
/* Reduces dy, shaped like the broadcast of x with other operands, back to
 * x's shape (Sum over the broadcast axes, then Reshape); returns dy itself
 * when the shapes are statically equal. */
tf_output tf__grad_unbroadcast(tf_grad_ctx *ctx, tf_output dy, tf_output x,
                               tf_output other);
/* Input i and output i of the forward node. */
tf_output tf__grad_in(const tf_grad_ctx *ctx, int i);
tf_output tf__grad_out(const tf_grad_ctx *ctx, int i);

#endif
