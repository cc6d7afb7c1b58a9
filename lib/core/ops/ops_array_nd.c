/* ops_array_nd.c: op definitions of the N-d indexing ops GatherNd and
 * ScatterNd, and of Bincount (TensorFlow's math_ops.cc registers it; it
 * lives here because, like ScatterNd, it sums values into bins at integer
 * positions). Signatures, attrs and defaults are TensorFlow's; the shape
 * functions accept unknown ranks and dims and reject known shapes that no
 * kernel could run, naming the offending input. */
#include <inttypes.h>
#include <string.h>

#include "lib/core/framework/op_registry.h"
#include "lib/core/base/util.h"

/* ---- helpers ---------------------------------------------------------- */

static bool known(const tf_shape *s) { return s->rank != TF_UNKNOWN_RANK; }

static const char *sstr(const tf_shape *s, char *buf, size_t n) {
  return tf_shape_str(s, buf, n);
}

static tf_shape unknown_dims(int r) {
  int64_t d[TF_MAX_RANK];
  for (int i = 0; i < r; i++) {
    d[i] = TF_UNKNOWN_DIM;
  }
  return tf_shape_make(r, d);
}

static bool dims_compatible(int64_t a, int64_t b) {
  return a < 0 || b < 0 || a == b;
}

/* TF's bad_indices_policy: '' and 'DEFAULT' and 'ERROR' all mean "out of
 * range is an error", which is what the CPU kernels here do; 'IGNORE' is
 * not implemented and is refused when the graph is built. */
static tf_code check_policy(tf_shape_ctx *c) {
  const tf_attr_value *v = tf_node_attr(c->node, "bad_indices_policy");
  if (v == NULL || v->type != TF_ATTR_STRING) {
    return TF_OK;
  }
  const char *p = v->u.s;
  if (p[0] != '\0' && strcmp(p, "DEFAULT") != 0 && strcmp(p, "ERROR") != 0) {
    return tf_shape_error(c, "bad_indices_policy '%s' is not supported (only "
                          "'', 'DEFAULT' and 'ERROR')", p);
  }
  return TF_OK;
}

/* ---- GatherNd ----------------------------------------------------------- */

/* out = indices.shape[:-1] + params.shape[indices.shape[-1]:]. */
static tf_code gather_nd_shape(tf_shape_ctx *c) {
  const tf_shape *p = &c->in[0], *ix = &c->in[1];
  char b1[96], b2[96];
  TF_TRY(check_policy(c));
  if (known(p) && p->rank < 1) {
    return tf_shape_error(c, "params must be at least a vector, got shape %s",
                          sstr(p, b1, sizeof(b1)));
  }
  if (known(ix) && ix->rank < 1) {
    return tf_shape_error(c, "indices must be at least a vector, got shape %s",
                          sstr(ix, b1, sizeof(b1)));
  }
  if (!known(ix) || ix->dims[ix->rank - 1] < 0 || !known(p)) {
    return TF_OK;
  }
  int64_t depth = ix->dims[ix->rank - 1];
  if (depth > p->rank) {
    return tf_shape_error(c,
                          "indices.shape[-1] must be <= params.rank, but saw "
                          "indices shape: %s and params shape: %s",
                          sstr(ix, b1, sizeof(b1)), sstr(p, b2, sizeof(b2)));
  }
  int64_t rank = (int64_t)ix->rank - 1 + p->rank - depth;
  if (rank > TF_MAX_RANK) {
    return tf_shape_error(c, "output rank %" PRId64 " exceeds the maximum %d",
                          rank, TF_MAX_RANK);
  }
  tf_shape o = unknown_dims((int)rank);
  int k = 0;
  for (int i = 0; i + 1 < ix->rank; i++) {
    o.dims[k++] = ix->dims[i];
  }
  for (int i = (int)depth; i < p->rank; i++) {
    o.dims[k++] = p->dims[i];
  }
  c->out[0] = o;
  return TF_OK;
}

/* ---- ScatterNd ---------------------------------------------------------- */

/* Checks updates.shape == indices.shape[:-1] + out.shape[depth:] where the
 * shapes are known (TF's ScatterNdShapeHelper). */
static tf_code scatter_nd_check(tf_shape_ctx *c, const tf_shape *out) {
  const tf_shape *ix = &c->in[0], *u = &c->in[1];
  char b1[96], b2[96], b3[96];
  if (!known(ix) || !known(u) || !known(out)) {
    return TF_OK;
  }
  int outer = ix->rank - 1;
  int64_t depth = ix->dims[outer];
  bool ok = u->rank >= outer;
  for (int i = 0; ok && i < outer; i++) {
    ok = dims_compatible(ix->dims[i], u->dims[i]);
  }
  if (!ok) {
    return tf_shape_error(c, "Dimensions [0,%d) of indices[shape=%s] must "
                          "match dimensions [0,%d) of updates[shape=%s]",
                          outer, sstr(ix, b1, sizeof(b1)), outer,
                          sstr(u, b2, sizeof(b2)));
  }
  if (depth < 0) {
    return TF_OK;
  }
  ok = depth <= out->rank && u->rank - outer == out->rank - depth;
  for (int i = 0; ok && i < u->rank - outer; i++) {
    ok = dims_compatible(u->dims[outer + i], out->dims[depth + i]);
  }
  if (!ok) {
    return tf_shape_error(c, "updates[shape=%s] must be indices.shape[:-1] + "
                          "shape[%" PRId64 ":] with indices[shape=%s] and "
                          "shape %s", sstr(u, b1, sizeof(b1)), depth,
                          sstr(ix, b2, sizeof(b2)), sstr(out, b3, sizeof(b3)));
  }
  return TF_OK;
}

static tf_code scatter_nd_shape(tf_shape_ctx *c) {
  const tf_shape *ix = &c->in[0], *u = &c->in[1], *s = &c->in[2];
  char b1[96];
  TF_TRY(check_policy(c));
  if (known(ix) && ix->rank < 1) {
    return tf_shape_error(c, "indices must be at least a vector, got shape %s",
                          sstr(ix, b1, sizeof(b1)));
  }
  if (known(u) && u->rank < 1 && known(ix) && ix->rank > 1) {
    return tf_shape_error(c, "updates must be at least a vector, got shape %s",
                          sstr(u, b1, sizeof(b1)));
  }
  if (known(s) && s->rank != 1) {
    return tf_shape_error(c, "shape must be a vector, got shape %s",
                          sstr(s, b1, sizeof(b1)));
  }
  int64_t v[TF_MAX_RANK];
  int n = 0;
  if (tf_shape_const_ints(c, 2, v, TF_MAX_RANK, &n)) {
    for (int i = 0; i < n; i++) {
      if (v[i] < 0) {
        return tf_shape_error(c, "shape[%d] = %" PRId64 " must be "
                              "non-negative", i, v[i]);
      }
    }
    tf_shape o = tf_shape_make(n, v);
    TF_TRY(scatter_nd_check(c, &o));
    c->out[0] = o;
    return TF_OK;
  }
  if (known(s) && s->dims[0] >= 0) {
    if (s->dims[0] > TF_MAX_RANK) {
      return tf_shape_error(c, "output rank %" PRId64 " exceeds the maximum "
                            "%d", s->dims[0], TF_MAX_RANK);
    }
    c->out[0] = unknown_dims((int)s->dims[0]);
  }
  return TF_OK;
}

/* ---- Bincount ----------------------------------------------------------- */

static tf_code bincount_shape(tf_shape_ctx *c) {
  char b1[96];
  if (known(&c->in[1]) && c->in[1].rank != 0) {
    return tf_shape_error(c, "size must be a scalar, got shape %s",
                          sstr(&c->in[1], b1, sizeof(b1)));
  }
  const tf_tensor *t = c->in_value ? c->in_value[1] : NULL;
  int64_t d = TF_UNKNOWN_DIM;
  if (t != NULL && t->n == 1) {
    d = tf_tensor_get_i64(t, 0);
    if (d < 0) {
      return tf_shape_error(c, "size (%" PRId64 ") must be non-negative", d);
    }
  }
  c->out[0] = tf_shape_make(1, &d);
  return TF_OK;
}

/* ---- table --------------------------------------------------------------- */

static const tf_op_spec array_nd_ops[] = {
    {.name = "GatherNd",
     .inputs = {"params: Tparams", "indices: Tindices"},
     .outputs = {"output: Tparams"},
     .attrs = {"Tparams: type", "Tindices: {int16, int32, int64}",
               "bad_indices_policy: string = ''"},
     .shape_fn = gather_nd_shape,
     .doc = "Slices of params at N-d indices (indices.shape[:-1] + "
            "params.shape[indices.shape[-1]:]).",
     .deviation = "bad_indices_policy 'IGNORE' is refused; the others mean "
                  "an out-of-range index is an error, as TF's CPU default"},
    {.name = "ScatterNd",
     .inputs = {"indices: Tindices", "updates: T", "shape: Tindices"},
     .outputs = {"output: T"},
     .attrs = {"T: type", "Tindices: {int16, int32, int64}",
               "bad_indices_policy: string = ''"},
     .shape_fn = scatter_nd_shape,
     .doc = "Zeros of the given shape with updates summed in at N-d indices "
            "(duplicates add).",
     .deviation = "bad_indices_policy 'IGNORE' is refused; no CPU kernel "
                  "for bool or string"},
    {.name = "Bincount",
     .inputs = {"arr: int32", "size: int32", "weights: T"},
     .outputs = {"bins: T"},
     .attrs = {"T: {int32, int64, float, double}"},
     .shape_fn = bincount_shape,
     .flags = TF_OP_NOT_DIFFERENTIABLE,
     .doc = "bins[i] = sum of weights (or count) where arr == i, for i in "
            "[0, size); values >= size are ignored, negative ones an error."},
};

TF_REGISTER_OPS("array_nd", array_nd_ops)
