/* grad_registry.c: the registry of per-op gradient functions and the
 * helpers gradient functions build their nodes with. Helpers name each node
 * "<forward node>_grad/<Op>" under the current scope (tf_gradients pushes
 * "gradients"), made unique; after the first error every helper returns a
 * NULL output, so a gradient function checks its status once. */
#include "lib/core/graph/grad_registry.h"

#include <stdio.h>
#include <string.h>

#include "lib/core/graph/graph_impl.h"
#include "lib/core/base/util.h"
#include "tf/eager.h"

static tf_grad_family *families;

void tf__grad_register_family(tf_grad_family *fam) {
  fam->next = families;
  families = fam;
}

tf_grad_fn tf_grad_lookup(const char *op) {
  if (op == NULL) {
    return NULL;
  }
  for (const tf_grad_family *f = families; f != NULL; f = f->next) {
    for (size_t i = 0; i < f->n; i++) {
      if (strcmp(f->defs[i].op, op) == 0) {
        return f->defs[i].fn;
      }
    }
  }
  return NULL;
}

/* How many registered entries name op (tests check it is at most 1: with
 * two, lookup would pick one silently). Not in the header: a test hook. */
int tf__grad_count_registrations(const char *op);
int tf__grad_count_registrations(const char *op) {
  int n = 0;
  for (const tf_grad_family *f = families; f != NULL; f = f->next) {
    for (size_t i = 0; i < f->n; i++) {
      n += strcmp(f->defs[i].op, op) == 0;
    }
  }
  return n;
}

/* ---- node builders -------------------------------------------------------- */

static const tf_output k_none = {NULL, 0};

static bool inputs_ok(const tf_grad_ctx *ctx, const tf_output *in, int n) {
  if (ctx->st->code != TF_OK) {
    return false;
  }
  for (int i = 0; i < n; i++) {
    if (in[i].node == NULL) {
      if (ctx->st->code == TF_OK) {
        tf_status_set(ctx->st, TF_INTERNAL, "gradient of node '%s' (%s): a "
                      "helper got a missing input", ctx->node->name,
                      ctx->node->op->name);
      }
      return false;
    }
  }
  return true;
}

/* Starts "<fwd>_grad/<op>" (unique) under the current scope. */
static tf_node_builder *begin(tf_grad_ctx *ctx, const char *op) {
  char base[512], full[640];
  snprintf(base, sizeof base, "%s_grad/%s", ctx->node->name, op);
  tf_graph_unique_name(ctx->g, base, full, sizeof full);
  return tf_node_begin(ctx->g, op, full + strlen(tf__graph_scope(ctx->g)));
}

static tf_output finish(tf_grad_ctx *ctx, tf_node_builder *b,
                        const tf_attr_kv *attrs, int n_attrs) {
  for (int i = 0; i < n_attrs; i++) {
    tf_node_set_attr(b, attrs[i].name, attrs[i].value);
  }
  tf_node *n = tf_node_finish(b, ctx->st);
  return n ? (tf_output){n, 0} : k_none;
}

tf_output tf__grad_op(tf_grad_ctx *ctx, const char *op, const tf_output *in,
                      int n_in, const tf_attr_kv *attrs, int n_attrs) {
  if (!inputs_ok(ctx, in, n_in)) {
    return k_none;
  }
  tf_node_builder *b = begin(ctx, op);
  for (int i = 0; i < n_in; i++) {
    tf_node_add_input(b, in[i]);
  }
  return finish(ctx, b, attrs, n_attrs);
}

tf_output tf__grad_op_list(tf_grad_ctx *ctx, const char *op,
                           const tf_output *list, int n_list,
                           const tf_attr_kv *attrs, int n_attrs) {
  if (!inputs_ok(ctx, list, n_list)) {
    return k_none;
  }
  tf_node_builder *b = begin(ctx, op);
  tf_node_add_input_list(b, list, n_list);
  return finish(ctx, b, attrs, n_attrs);
}

static tf_output const_node(tf_grad_ctx *ctx, tf_tensor *t) {
  if (t == NULL) {
    if (ctx->st->code == TF_OK) {
      tf_status_set(ctx->st, TF_RESOURCE_EXHAUSTED, "gradient of node '%s': "
                    "no memory for a constant", ctx->node->name);
    }
    return k_none;
  }
  if (ctx->st->code != TF_OK) {
    tf_tensor_unref(t);
    return k_none;
  }
  tf_node_builder *b = begin(ctx, "Const");
  tf_node_set_attr(b, "value", tf_attr_tensor(t));
  tf_node_set_attr(b, "dtype", tf_attr_type_v(t->dtype));
  tf_tensor_unref(t);
  return finish(ctx, b, NULL, 0);
}

tf_output tf__grad_scalar(tf_grad_ctx *ctx, tf_dtype dt, double v) {
  tf_tensor *f = tf_tensor_scalar_f64(v);
  if (dt == TF_FLOAT64) {
    return const_node(ctx, f);
  }
  tf_status st;
  tf_status_init(&st);
  tf_tensor *in[1] = {f};
  tf_tensor *out[1] = {NULL};
  int n = 1;
  tf_attr_kv kv = {"DstT", tf_attr_type_v(dt)};
  tf_code rc = tf_execute("Cast", in, 1, &kv, 1, out, &n, &st);
  tf_tensor_unref(f);
  if (rc != TF_OK) {
    if (ctx->st->code == TF_OK) {
      tf_status_set(ctx->st, TF_INVALID_ARGUMENT, "gradient of node '%s': no "
                    "scalar constant of dtype %s: %s", ctx->node->name,
                    tf_dtype_name(dt), st.msg);
    }
    return k_none;
  }
  return const_node(ctx, out[0]);
}

tf_output tf__grad_ivec(tf_grad_ctx *ctx, const int32_t *v, int n) {
  return const_node(ctx, tf_tensor_vec_i32(n, v));
}

tf_output tf__grad_shape(tf_grad_ctx *ctx, tf_output x) {
  const tf_shape *s = x.node ? tf_node_output_shape(x.node, x.index) : NULL;
  if (s != NULL && tf_shape_is_fully_defined(s) && ctx->st->code == TF_OK) {
    int32_t d[TF_MAX_RANK];
    for (int i = 0; i < s->rank; i++) {
      d[i] = (int32_t)s->dims[i];
    }
    return tf__grad_ivec(ctx, d, s->rank);
  }
  tf_attr_kv kv = {"out_type", tf_attr_type_v(TF_INT32)};
  return tf__grad_op(ctx, "Shape", &x, 1, &kv, 1);
}

/* ---- broadcasting --------------------------------------------------------- */

/* Static reduction axes of x's shape within bcast(x, other): false when
 * either shape is not fully known. *same: x already has the full shape. */
static bool static_reduce_axes(const tf_shape *x, const tf_shape *o,
                               int32_t *axes, int *n_axes, bool *same) {
  if (!tf_shape_is_fully_defined(x) || !tf_shape_is_fully_defined(o)) {
    return false;
  }
  int rank = TF_MAX(x->rank, o->rank);
  *n_axes = 0;
  *same = x->rank == rank;
  for (int d = 0; d < rank; d++) {
    int xd = d - (rank - x->rank), od = d - (rank - o->rank);
    int64_t xs = xd >= 0 ? x->dims[xd] : 1, os = od >= 0 ? o->dims[od] : 1;
    if (xs == 1 && os != 1) {
      axes[(*n_axes)++] = d;
      *same = false;
    } else if (xd < 0) {
      axes[(*n_axes)++] = d;
    }
  }
  return true;
}

tf_output tf__grad_unbroadcast(tf_grad_ctx *ctx, tf_output dy, tf_output x,
                               tf_output other) {
  tf_output chk[3] = {dy, x, other};
  if (!inputs_ok(ctx, chk, 3)) {
    return k_none;
  }
  const tf_shape *xs = tf_node_output_shape(x.node, x.index);
  const tf_shape *os = tf_node_output_shape(other.node, other.index);
  int32_t axes[TF_MAX_RANK];
  int n_axes = 0;
  bool same = false;
  tf_output red;
  if (static_reduce_axes(xs, os, axes, &n_axes, &same)) {
    if (same) {
      return dy;
    }
    red = tf__grad_ivec(ctx, axes, n_axes);
  } else {
    tf_output bga[2] = {tf__grad_shape(ctx, x), tf__grad_shape(ctx, other)};
    red = tf__grad_op(ctx, "BroadcastGradientArgs", bga, 2, NULL, 0);
  }
  tf_output sum = tf__grad_op2(ctx, "Sum", dy, red);
  return tf__grad_op2(ctx, "Reshape", sum, tf__grad_shape(ctx, x));
}

tf_output tf__grad_in(const tf_grad_ctx *ctx, int i) {
  TF_ASSERT(i >= 0 && i < ctx->node->n_inputs);
  return ctx->node->inputs[i];
}

tf_output tf__grad_out(const tf_grad_ctx *ctx, int i) {
  TF_ASSERT(i >= 0 && i < ctx->node->n_outputs);
  return (tf_output){(tf_node *)ctx->node, i};
}
