/* ops_topk.c: op definitions of TopKV2 and InTopKV2 with TensorFlow's
 * signatures and their shape functions. Shape functions accept unknown
 * ranks and dims, use k when it is a constant, and reject known shapes
 * that no kernel could run, naming the offending input. */
#include <inttypes.h>

#include "lib/core/framework/op_registry.h"
#include "lib/core/base/util.h"

static bool known(const tf_shape *s) { return s->rank != TF_UNKNOWN_RANK; }

static tf_code want_rank(tf_shape_ctx *c, int i, int rank, const char *what) {
  char b[96];
  if (known(&c->in[i]) && c->in[i].rank != rank) {
    return tf_shape_error(c, "%s must be %d-D, got shape %s", what, rank,
                          tf_shape_str(&c->in[i], b, sizeof(b)));
  }
  return TF_OK;
}

/* The constant scalar k (input i), or false. */
static bool const_k(const tf_shape_ctx *c, int i, int64_t *k) {
  const tf_tensor *t = c->in_value ? c->in_value[i] : NULL;
  if (t == NULL || t->n != 1) {
    return false;
  }
  *k = tf_tensor_get_i64(t, 0);
  return true;
}

/* ---- TopKV2 ---------------------------------------------------------------- */

static tf_code top_k_shape(tf_shape_ctx *c) {
  const tf_shape *x = &c->in[0];
  char b[96];
  if (known(x) && x->rank < 1) {
    return tf_shape_error(c, "input must be at least 1-D, got shape %s",
                          tf_shape_str(x, b, sizeof(b)));
  }
  TF_TRY(want_rank(c, 1, 0, "k"));
  int64_t k = TF_UNKNOWN_DIM;
  if (const_k(c, 1, &k) && k < 0) {
    return tf_shape_error(c, "Need k >= 0, got %" PRId64, k);
  }
  if (!known(x)) {
    return TF_OK;
  }
  int64_t last = x->dims[x->rank - 1];
  if (k >= 0 && last >= 0 && last < k) {
    return tf_shape_error(c, "input must have last dimension >= k = %" PRId64
                          " but is %" PRId64 " (input shape %s)", k, last,
                          tf_shape_str(x, b, sizeof(b)));
  }
  tf_shape o = *x;
  o.dims[o.rank - 1] = k;
  c->out[0] = o;
  c->out[1] = o;
  return TF_OK;
}

/* ---- InTopKV2 -------------------------------------------------------------- */

static tf_code in_top_k_v2_shape(tf_shape_ctx *c) {
  TF_TRY(want_rank(c, 0, 2, "predictions"));
  TF_TRY(want_rank(c, 1, 1, "targets"));
  TF_TRY(want_rank(c, 2, 0, "k"));
  int64_t a = known(&c->in[0]) ? c->in[0].dims[0] : TF_UNKNOWN_DIM;
  int64_t b = known(&c->in[1]) ? c->in[1].dims[0] : TF_UNKNOWN_DIM;
  if (a >= 0 && b >= 0 && a != b) {
    return tf_shape_error(c, "targets has %" PRId64 " entries but predictions "
                          "has batch size %" PRId64, b, a);
  }
  int64_t d = a >= 0 ? a : b;
  c->out[0] = tf_shape_make(1, &d);
  return TF_OK;
}

/* ---- table --------------------------------------------------------------- */

static const tf_op_spec topk_ops[] = {
    {.name = "TopKV2",
     .inputs = {"input: T", "k: int32"},
     .outputs = {"values: T", "indices: int32"},
     .attrs = {"sorted: bool = true",
               "T: {float, double, int32, uint8, int16, int8, int64, "
               "bfloat16, uint16, half, uint32, uint64}"},
     .shape_fn = top_k_shape,
     .doc = "The k largest entries of each last-dimension row, largest first "
            "(ties: lower index first), and their indices.",
     .deviation = "k and indices are int32 only (TF's older signature, "
                  "without Tk and index_type); with sorted=false the result "
                  "is still sorted, an order TF allows"},
    {.name = "InTopKV2",
     .inputs = {"predictions: float", "targets: T", "k: T"},
     .outputs = {"precision: bool"},
     .attrs = {"T: {int32, int64} = int32"},
     .shape_fn = in_top_k_v2_shape,
     .flags = TF_OP_NOT_DIFFERENTIABLE,
     .doc = "Whether each target is among the k largest predictions of its "
            "row (ties count; false when the row has a non-finite value or "
            "the target is out of range)."},
};

TF_REGISTER_OPS("topk", topk_ops)
