/* grad_shape.c: shape arithmetic for the array, array_index, reduction and
 * matrix gradient functions: constants when the graph already knows the
 * answer, small Shape/Slice/ConcatV2 nodes when it does not (see
 * grad_shape.h). */
#include "lib/core/grad/grad_shape.h"

#include <stdio.h>
#include <string.h>

#include "lib/core/graph/graph_impl.h"
#include "lib/core/base/util.h"

static const tf_output k_none = {NULL, 0};

const tf_tensor *tf__gs_const(tf_output o) {
  if (o.node == NULL || strcmp(tf_node_op(o.node), "Const") != 0) {
    return NULL;
  }
  const tf_attr_value *v = tf_node_attr(o.node, "value");
  if (v == NULL || v->type != TF_ATTR_TENSOR || v->is_list) {
    return NULL;
  }
  return v->u.tensor;
}

int tf__gs_const_ints(tf_output o, int64_t *v, int max) {
  const tf_tensor *t = tf__gs_const(o);
  if (t == NULL || (t->dtype != TF_INT32 && t->dtype != TF_INT64) ||
      t->n > max) {
    return -1;
  }
  for (int64_t i = 0; i < t->n; i++) {
    v[i] = tf_tensor_get_i64(t, i);
  }
  return (int)t->n;
}

bool tf__gs_static_shape(tf_output o, tf_shape *s) {
  if (o.node == NULL) {
    return false;
  }
  const tf_shape *p = tf_node_output_shape(o.node, o.index);
  if (p == NULL || !tf_shape_is_fully_defined(p)) {
    return false;
  }
  *s = *p;
  return true;
}

int tf__gs_rank(tf_output o) {
  if (o.node == NULL) {
    return -1;
  }
  const tf_shape *p = tf_node_output_shape(o.node, o.index);
  return p == NULL || p->rank == TF_UNKNOWN_RANK ? -1 : p->rank;
}

static bool inputs_ok(tf_grad_ctx *ctx, const tf_output *in, int n) {
  if (ctx->st->code != TF_OK) {
    return false;
  }
  for (int i = 0; i < n; i++) {
    if (in[i].node == NULL) {
      tf_status_set(ctx->st, TF_INTERNAL, "gradient of node '%s' (%s): a "
                    "helper got a missing input", tf_node_name(ctx->node),
                    tf_node_op(ctx->node));
      return false;
    }
  }
  return true;
}

tf_output tf__gs_op_groups(tf_grad_ctx *ctx, const char *op,
                           const tf_output *in, const int *count,
                           int n_groups, const tf_attr_kv *attrs,
                           int n_attrs) {
  int n_in = 0;
  for (int k = 0; k < n_groups; k++) {
    n_in += count[k] > 0 ? count[k] : 1;
  }
  if (!inputs_ok(ctx, in, n_in)) {
    return k_none;
  }
  char base[512], full[640];
  snprintf(base, sizeof base, "%s_grad/%s", tf_node_name(ctx->node), op);
  tf_graph_unique_name(ctx->g, base, full, sizeof full);
  tf_node_builder *b =
      tf_node_begin(ctx->g, op, full + strlen(tf__graph_scope(ctx->g)));
  for (int k = 0, i = 0; k < n_groups; k++) {
    if (count[k] > 0) {
      tf_node_add_input_list(b, in + i, count[k]);
      i += count[k];
    } else {
      tf_node_add_input(b, in[i++]);
    }
  }
  for (int i = 0; i < n_attrs; i++) {
    tf_node_set_attr(b, attrs[i].name, attrs[i].value);
  }
  tf_node *n = tf_node_finish(b, ctx->st);
  return n ? (tf_output){n, 0} : k_none;
}

tf_output tf__gs_op_attr(tf_grad_ctx *ctx, const char *op, tf_output a,
                         tf_output b, const char *attr, tf_attr_value v) {
  tf_output in[2] = {a, b};
  tf_attr_kv kv = {attr, v};
  return tf__grad_op(ctx, op, in, b.node != NULL ? 2 : 1, &kv, 1);
}

tf_output tf__gs_cast(tf_grad_ctx *ctx, tf_output x, tf_dtype dt) {
  if (x.node == NULL || tf_node_output_type(x.node, x.index) == dt) {
    return x;
  }
  tf_attr_kv kv = {"DstT", tf_attr_type_v(dt)};
  return tf__grad_op(ctx, "Cast", &x, 1, &kv, 1);
}

tf_output tf__gs_reshape(tf_grad_ctx *ctx, tf_output x, tf_output shape) {
  tf_shape xs;
  int64_t want[TF_MAX_RANK];
  int n = tf__gs_const_ints(shape, want, TF_MAX_RANK);
  if (n >= 0 && tf__gs_static_shape(x, &xs) && xs.rank == n &&
      memcmp(xs.dims, want, (size_t)n * sizeof(int64_t)) == 0) {
    return x;
  }
  return tf__grad_op2(ctx, "Reshape", x, shape);
}

tf_output tf__gs_reshape_to(tf_grad_ctx *ctx, tf_output x,
                            const int64_t *dims, int n) {
  int32_t d[TF_MAX_RANK];
  TF_ASSERT(n <= TF_MAX_RANK);
  for (int i = 0; i < n; i++) {
    d[i] = (int32_t)dims[i];
  }
  if (x.node == NULL || ctx->st->code != TF_OK) {
    return k_none;
  }
  return tf__gs_reshape(ctx, x, tf__grad_ivec(ctx, d, n));
}

tf_output tf__gs_transpose(tf_grad_ctx *ctx, tf_output x, const int *perm,
                           int n) {
  int32_t p[TF_MAX_RANK];
  bool identity = true;
  for (int i = 0; i < n; i++) {
    p[i] = perm[i];
    identity = identity && perm[i] == i;
  }
  if (identity || x.node == NULL) {
    return x;
  }
  return tf__grad_op2(ctx, "Transpose", x, tf__grad_ivec(ctx, p, n));
}

tf_output tf__gs_sum(tf_grad_ctx *ctx, tf_output x, tf_output axes,
                     bool keep_dims) {
  return tf__gs_op_attr(ctx, "Sum", x, axes, "keep_dims",
                        tf_attr_bool(keep_dims));
}

tf_output tf__gs_vec_slice(tf_grad_ctx *ctx, tf_output v, int begin,
                           int size) {
  int64_t c[TF_MAX_RANK];
  int n = tf__gs_const_ints(v, c, TF_MAX_RANK);
  if (n >= 0 && begin <= n) {
    int end = size < 0 ? n : TF_MIN(n, begin + size);
    int32_t d[TF_MAX_RANK];
    for (int i = begin; i < end; i++) {
      d[i - begin] = (int32_t)c[i];
    }
    return tf__grad_ivec(ctx, d, end - begin);
  }
  int32_t b = begin, s = size;
  tf_output in[3] = {v, tf__grad_ivec(ctx, &b, 1), tf__grad_ivec(ctx, &s, 1)};
  return tf__grad_op(ctx, "Slice", in, 3, NULL, 0);
}

tf_output tf__gs_vec_concat(tf_grad_ctx *ctx, const tf_output *v, int n) {
  if (n == 1) {
    return v[0];
  }
  /* All constants: fold into one. */
  int32_t all[4 * TF_MAX_RANK];
  int total = 0;
  bool folded = true;
  for (int i = 0; i < n && folded; i++) {
    int64_t c[TF_MAX_RANK];
    int k = tf__gs_const_ints(v[i], c, TF_MAX_RANK);
    folded = k >= 0 && total + k <= 4 * TF_MAX_RANK;
    for (int j = 0; folded && j < k; j++) {
      all[total++] = (int32_t)c[j];
    }
  }
  if (folded) {
    return tf__grad_ivec(ctx, all, total);
  }
  tf_output in[4 * TF_MAX_RANK + 1];
  TF_ASSERT(n <= 4 * TF_MAX_RANK);
  memcpy(in, v, (size_t)n * sizeof *v);
  in[n] = tf__grad_scalar(ctx, TF_INT32, 0);
  int count[2] = {n, 0};
  return tf__gs_op_groups(ctx, "ConcatV2", in, count, 2, NULL, 0);
}

tf_output tf__gs_size(tf_grad_ctx *ctx, tf_output x) {
  tf_shape s;
  if (tf__gs_static_shape(x, &s)) {
    return tf__grad_scalar(ctx, TF_INT32, (double)tf_shape_num_elements(&s));
  }
  tf_attr_kv kv = {"out_type", tf_attr_type_v(TF_INT32)};
  return tf__grad_op(ctx, "Size", &x, 1, &kv, 1);
}
