/* grad_shape.h: shape arithmetic shared by the array, array_index,
 * reduction and matrix gradient functions (lib/core/grad/grad_*.c).
 *
 * Gradient functions need shapes, slices of shapes and reduction axes.
 * These helpers fold what is known when the graph is built (Const inputs,
 * fully inferred shapes) into constants and fall back to Shape/Slice/...
 * nodes otherwise, so a graph with static shapes gets few extra nodes. Like
 * the tf__grad_* helpers, each returns a NULL output after an error and
 * passes NULL inputs through. Not public API. */
#ifndef TF_CORE_GRAD_GRAD_SHAPE_H
#define TF_CORE_GRAD_GRAD_SHAPE_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/core/graph/grad_registry.h"

/* The value of o when its node is a Const (borrowed from the graph), else
 * NULL. */
const tf_tensor *tf__gs_const(tf_output o);

/* Reads a Const int32/int64 tensor o (any rank, row-major) into
 * v[0..max): the element count, or -1 when o is not a Const int tensor of
 * at most max elements. */
int tf__gs_const_ints(tf_output o, int64_t *v, int max);

/* o's inferred shape into *s when it is fully known; false otherwise. */
bool tf__gs_static_shape(tf_output o, tf_shape *s);

/* o's inferred rank, or -1 when unknown. */
int tf__gs_rank(tf_output o);

/* op on input groups: group k is one input (count[k] == 0) or a list
 * argument of count[k] >= 1 inputs; in[] holds the groups' inputs in
 * order. Named like the tf__grad_* helpers' nodes. Returns output 0; the
 * node is the returned output's node (for ops with several outputs). */
tf_output tf__gs_op_groups(tf_grad_ctx *ctx, const char *op,
                           const tf_output *in, const int *count,
                           int n_groups, const tf_attr_kv *attrs,
                           int n_attrs);

/* op(a) / op(a, b) with one int attr (keep_dims, axis, ...). */
tf_output tf__gs_op_attr(tf_grad_ctx *ctx, const char *op, tf_output a,
                         tf_output b, const char *attr, tf_attr_value v);

/* x cast to dt (x itself when it already has dtype dt). */
tf_output tf__gs_cast(tf_grad_ctx *ctx, tf_output x, tf_dtype dt);

/* Reshape(x, shape); x itself when x's static shape is already the
 * constant shape. */
tf_output tf__gs_reshape(tf_grad_ctx *ctx, tf_output x, tf_output shape);

/* Reshape(x) to constant dims[0..n). */
tf_output tf__gs_reshape_to(tf_grad_ctx *ctx, tf_output x,
                            const int64_t *dims, int n);

/* Transpose(x) by the constant perm[0..n); x when perm is the identity. */
tf_output tf__gs_transpose(tf_grad_ctx *ctx, tf_output x, const int *perm,
                           int n);

/* Sum(x, axes) with keep_dims. */
tf_output tf__gs_sum(tf_grad_ctx *ctx, tf_output x, tf_output axes,
                     bool keep_dims);

/* v[begin : begin + size] of an int32 vector v (size -1: to the end). */
tf_output tf__gs_vec_slice(tf_grad_ctx *ctx, tf_output v, int begin,
                           int size);

/* ConcatV2 of int32 vectors v[0..n) along axis 0 (v[0] itself when n == 1). */
tf_output tf__gs_vec_concat(tf_grad_ctx *ctx, const tf_output *v, int n);

/* Size(x) as an int32 scalar: a constant when x's shape is known. */
tf_output tf__gs_size(tf_grad_ctx *ctx, tf_output x);

#endif
