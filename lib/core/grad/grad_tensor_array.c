/* grad_tensor_array.c: gradients of the TensorArray ops, as TensorFlow
 * registers them (tensor_array_grad.py): each forward op on an array has
 * a mirror op on the array's gradient array (TensorArrayGradV3 with a
 * source string; one gradient array per tf_gradients call): Read <-> Write,
 * Gather <-> Scatter, Concat <-> Split. The flow carries the ordering: the
 * gradient of a forward op's flow output is the flow of the gradient array
 * after everything that op's readers wrote to it, so the mirror op runs
 * only after them; the gradient of a flow input is the mirror op's flow
 * out. Writes to a gradient array add up, so an element read twice gets
 * the sum of both gradients. */
#include <stdlib.h>
#include <string.h>

#include "lib/core/graph/grad_registry.h"
#include "lib/core/graph/graph_impl.h"
#include "lib/core/base/util.h"

/* The gradient source: the tf_gradients scope the gradient nodes go in
 * ("gradients", "gradients_1", ..., under the caller's scope), so two
 * calls use two arrays. As TF's _GetGradSource, the scope is cut after its
 * first component that starts with "gradients": the nodes a gradient loop
 * builds ("gradients/<frame>/while_context_grad/...") then use the array
 * of the call they belong to, like those outside the loop. */
static char *grad_source(tf_grad_ctx *ctx) {
  const char *scope = tf__graph_scope(ctx->g);
  size_t n = strlen(scope);
  for (const char *c = scope; *c != '\0';) {
    const char *slash = strchr(c, '/');
    if (strncmp(c, "gradients", 9) == 0) {
      n = (size_t)((slash ? slash : c + strlen(c)) - scope);
      break;
    }
    if (slash == NULL) break;
    c = slash + 1;
  }
  if (n > 0 && scope[n - 1] == '/') {
    n--;
  }
  return n > 0 ? tf__xstrndup(scope, n) : tf__xstrdup("gradients");
}

/* TensorArrayGradV3(handle, flow) -> the gradient array's handle and flow
 * in out[0], out[1]. */
static void grad_array(tf_grad_ctx *ctx, tf_output handle, tf_output flow,
                       tf_output out[2]) {
  char *source = grad_source(ctx);
  tf_attr_kv a = {"source", tf_attr_string(source)};
  tf_output in[2] = {handle, flow};
  out[0] = tf__grad_op(ctx, "TensorArrayGradV3", in, 2, &a, 1);
  out[1] = (tf_output){out[0].node, 1};
  free(source);
}

/* The dtype attr of the forward node (attr "T" or "dtype"). */
static tf_dtype forward_dtype(tf_grad_ctx *ctx, const char *attr) {
  const tf_attr_value *v = tf_node_attr(ctx->node, attr);
  return v != NULL ? v->u.t : TF_DTYPE_INVALID;
}

/* Read(h, i, flow) -> value: the gradient array gets dy written at i; the
 * flow input's gradient is that write's flow. */
static tf_code read_grad(tf_grad_ctx *ctx) {
  tf_output g[2];
  grad_array(ctx, tf__grad_in(ctx, 0), tf__grad_in(ctx, 2), g);
  tf_attr_kv t = {"T", tf_attr_type_v(forward_dtype(ctx, "dtype"))};
  tf_output in[4] = {g[0], tf__grad_in(ctx, 1), ctx->dy[0], g[1]};
  ctx->dx[2].values = tf__grad_op(ctx, "TensorArrayWriteV3", in, 4, &t, 1);
  return ctx->st->code;
}

/* Write(h, i, value, flow) -> flow: value's gradient is the gradient
 * array's element i, read after the flow's gradient (all later readers'
 * writes); the flow passes through. */
static tf_code write_grad(tf_grad_ctx *ctx) {
  tf_output g[2];
  grad_array(ctx, tf__grad_in(ctx, 0), ctx->dy[0], g);
  tf_attr_kv t = {"dtype", tf_attr_type_v(forward_dtype(ctx, "T"))};
  tf_output in[3] = {g[0], tf__grad_in(ctx, 1), g[1]};
  ctx->dx[2].values = tf__grad_op(ctx, "TensorArrayReadV3", in, 3, &t, 1);
  ctx->dx[3].values = ctx->dy[0];
  return ctx->st->code;
}

/* Gather(h, indices, flow) -> value: dy scattered to indices. */
static tf_code gather_grad(tf_grad_ctx *ctx) {
  tf_output g[2];
  grad_array(ctx, tf__grad_in(ctx, 0), tf__grad_in(ctx, 2), g);
  tf_attr_kv t = {"T", tf_attr_type_v(forward_dtype(ctx, "dtype"))};
  tf_output in[4] = {g[0], tf__grad_in(ctx, 1), ctx->dy[0], g[1]};
  ctx->dx[2].values = tf__grad_op(ctx, "TensorArrayScatterV3", in, 4, &t, 1);
  return ctx->st->code;
}

/* Scatter(h, indices, value, flow) -> flow: value's gradient gathers the
 * gradient array at indices. */
static tf_code scatter_grad(tf_grad_ctx *ctx) {
  tf_output g[2];
  grad_array(ctx, tf__grad_in(ctx, 0), ctx->dy[0], g);
  tf_attr_kv t = {"dtype", tf_attr_type_v(forward_dtype(ctx, "T"))};
  tf_output in[3] = {g[0], tf__grad_in(ctx, 1), g[1]};
  ctx->dx[2].values = tf__grad_op(ctx, "TensorArrayGatherV3", in, 3, &t, 1);
  ctx->dx[3].values = ctx->dy[0];
  return ctx->st->code;
}

/* Concat(h, flow) -> (value, lengths): dy split by the forward lengths. */
static tf_code concat_grad(tf_grad_ctx *ctx) {
  tf_output g[2];
  grad_array(ctx, tf__grad_in(ctx, 0), tf__grad_in(ctx, 1), g);
  tf_attr_kv t = {"T", tf_attr_type_v(forward_dtype(ctx, "dtype"))};
  tf_output in[4] = {g[0], ctx->dy[0], tf__grad_out(ctx, 1), g[1]};
  ctx->dx[1].values = tf__grad_op(ctx, "TensorArraySplitV3", in, 4, &t, 1);
  return ctx->st->code;
}

/* Split(h, value, lengths, flow) -> flow: value's gradient concatenates
 * the gradient array. */
static tf_code split_grad(tf_grad_ctx *ctx) {
  tf_output g[2];
  grad_array(ctx, tf__grad_in(ctx, 0), ctx->dy[0], g);
  tf_attr_kv t = {"dtype", tf_attr_type_v(forward_dtype(ctx, "T"))};
  tf_output in[2] = {g[0], g[1]};
  ctx->dx[1].values = tf__grad_op(ctx, "TensorArrayConcatV3", in, 2, &t, 1);
  ctx->dx[3].values = ctx->dy[0];
  return ctx->st->code;
}

static const tf_grad_def tensor_array_grads[] = {
    {"TensorArrayReadV3", read_grad},
    {"TensorArrayWriteV3", write_grad},
    {"TensorArrayGatherV3", gather_grad},
    {"TensorArrayScatterV3", scatter_grad},
    {"TensorArrayConcatV3", concat_grad},
    {"TensorArraySplitV3", split_grad},
};

TF_REGISTER_GRADIENTS(tensor_array_grads)
