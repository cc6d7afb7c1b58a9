/* grad_array_index.c: gradients of the indexing ops, after TensorFlow's
 * array_grad.py and data_flow_grad.py.
 *
 * Gather and GatherV2 on axis 0 give params a SPARSE gradient (TF's
 * IndexedSlices): values = dy reshaped to [n_indices, row...], indices =
 * the flattened indices, dense_shape = Shape(params); nothing here
 * densifies it. GatherV2 on another axis or with batch_dims is dense:
 * dy's gathered dims are moved to the front, summed into their rows with
 * UnsortedSegmentSum (batch rows offset by batch * params.shape[axis]) and
 * moved back, with constant permutations when the axis is a constant and
 * the ranks are known, else with permutations computed in the graph (as
 * TF's _GatherV2Grad). UnsortedSegmentSum gathers dy back, zero for
 * dropped (negative) ids. DynamicStitch gathers dy for each data input,
 * masking the slices a later input overwrote (their gradient is 0);
 * DynamicPartition stitches the output gradients back into data's layout.
 * Indices get no gradient; OneHot, Range and Where are registered as not
 * differentiable. */
#include <stdlib.h>

#include "lib/core/grad/grad_shape.h"
#include "lib/core/graph/grad_registry.h"
#include "lib/core/base/util.h"

static tf_output ints_as_i32(tf_grad_ctx *ctx, tf_output idx) {
  tf_dtype dt = idx.node ? tf_node_output_type(idx.node, idx.index) : TF_INT32;
  return dt == TF_INT64 ? idx : tf__gs_cast(ctx, idx, TF_INT32);
}

static tf_output vec1(tf_grad_ctx *ctx, tf_output scalar) {
  return tf__gs_reshape_to(ctx, scalar, (int64_t[]){1}, 1);
}

/* ---- Gather (sparse) ---------------------------------------------------- */

/* [n_indices] + params.shape[1:], with -1 for n when the rows' size is a
 * known non-zero constant. */
static tf_output rows_shape(tf_grad_ctx *ctx, tf_output params,
                            tf_output indices) {
  const tf_shape *ps = tf_node_output_shape(params.node, params.index);
  if (ps->rank >= 1) {
    tf_shape row = tf_shape_make(ps->rank - 1, ps->dims + 1);
    int64_t dims[TF_MAX_RANK] = {-1};
    if (tf_shape_is_fully_defined(&row) && tf_shape_num_elements(&row) > 0) {
      for (int d = 0; d < row.rank; d++) {
        dims[d + 1] = row.dims[d];
      }
      int32_t v[TF_MAX_RANK];
      for (int d = 0; d < ps->rank; d++) {
        v[d] = (int32_t)dims[d];
      }
      return tf__grad_ivec(ctx, v, ps->rank);
    }
  }
  tf_output parts[2] = {vec1(ctx, tf__gs_size(ctx, indices)),
                        tf__gs_vec_slice(ctx, tf__grad_shape(ctx, params), 1,
                                         -1)};
  return tf__gs_vec_concat(ctx, parts, 2);
}

static tf_code gather_rows(tf_grad_ctx *ctx) {
  tf_output params = tf__grad_in(ctx, 0), indices = tf__grad_in(ctx, 1);
  tf_grad *g = &ctx->dx[0];
  g->values = tf__grad_op2(ctx, "Reshape", ctx->dy[0],
                           rows_shape(ctx, params, indices));
  g->indices = tf__gs_reshape_to(ctx, ints_as_i32(ctx, indices),
                                 (int64_t[]){-1}, 1);
  g->dense_shape = tf__grad_shape(ctx, params);
  return ctx->st->code;
}

/* ---- GatherV2 on another axis or with batch dims (dense) ---------------- */

typedef struct gv2 {
  int pr, ir, b, a; /* ranks of params and indices, batch_dims, axis */
  tf_output params, indices, pshape;
} gv2;

/* Segment ids (flattened) and their count: indices, offset per batch row
 * by batch * params.shape[axis]. */
static void segment_ids(tf_grad_ctx *ctx, const gv2 *v, tf_output *ids,
                        tf_output *n_seg) {
  tf_output g = tf__gs_reshape_to(ctx, tf__gs_vec_slice(ctx, v->pshape, v->a, 1),
                                  NULL, 0);
  tf_output idx = ints_as_i32(ctx, v->indices);
  if (v->b == 0) {
    *ids = tf__gs_reshape_to(ctx, idx, (int64_t[]){-1}, 1);
    *n_seg = g;
    return;
  }
  idx = tf__gs_cast(ctx, idx, TF_INT32);
  tf_output bshape = tf__gs_vec_slice(ctx, tf__grad_shape(ctx, v->indices), 0,
                                      v->b);
  tf_output n_b = tf__gs_op_attr(ctx, "Prod", bshape,
                                 tf__grad_scalar(ctx, TF_INT32, 0),
                                 "keep_dims", tf_attr_bool(false));
  tf_output range[3] = {tf__grad_scalar(ctx, TF_INT32, 0), n_b,
                        tf__grad_scalar(ctx, TF_INT32, 1)};
  tf_output off = tf__grad_op2(
      ctx, "Mul", tf__grad_op(ctx, "Range", range, 3, NULL, 0), g);
  int32_t ones[TF_MAX_RANK];
  for (int d = 0; d < v->ir - v->b; d++) {
    ones[d] = 1;
  }
  tf_output oshape[2] = {bshape, tf__grad_ivec(ctx, ones, v->ir - v->b)};
  off = tf__grad_op2(ctx, "Reshape", off, tf__gs_vec_concat(ctx, oshape, 2));
  *ids = tf__gs_reshape_to(ctx, tf__grad_op2(ctx, "Add", idx, off),
                           (int64_t[]){-1}, 1);
  *n_seg = tf__grad_op2(ctx, "Mul", n_b, g);
}

static tf_code gather_v2_dense(tf_grad_ctx *ctx, const gv2 *v) {
  int n_o = v->a - v->b, n_j = v->ir - v->b, n_i = v->pr - v->a - 1;
  int perm[2 * TF_MAX_RANK], k = 0;
  for (int d = 0; d < v->b; d++) {
    perm[k++] = d;
  }
  for (int d = 0; d < n_j; d++) {
    perm[k++] = v->b + n_o + d;
  }
  for (int d = 0; d < n_o; d++) {
    perm[k++] = v->b + d;
  }
  for (int d = 0; d < n_i; d++) {
    perm[k++] = v->b + n_o + n_j + d;
  }
  tf_output t = tf__gs_transpose(ctx, ctx->dy[0], perm, k);
  tf_output o_dims = tf__gs_vec_slice(ctx, v->pshape, v->b, n_o);
  tf_output i_dims = tf__gs_vec_slice(ctx, v->pshape, v->a + 1, -1);
  tf_output dparts[3] = {vec1(ctx, tf__gs_size(ctx, v->indices)), o_dims,
                         i_dims};
  tf_output data =
      tf__grad_op2(ctx, "Reshape", t, tf__gs_vec_concat(ctx, dparts, 3));
  tf_output ids, n_seg;
  segment_ids(ctx, v, &ids, &n_seg);
  tf_output in[3] = {data, ids, n_seg};
  tf_output seg = tf__grad_op(ctx, "UnsortedSegmentSum", in, 3, NULL, 0);
  if (v->b > 0) {
    tf_output sparts[4] = {tf__gs_vec_slice(ctx, v->pshape, 0, v->b),
                           tf__gs_vec_slice(ctx, v->pshape, v->a, 1), o_dims,
                           i_dims};
    seg = tf__grad_op2(ctx, "Reshape", seg, tf__gs_vec_concat(ctx, sparts, 4));
  }
  k = 0;
  for (int d = 0; d < v->b; d++) {
    perm[k++] = d;
  }
  for (int d = 0; d < n_o; d++) {
    perm[k++] = v->b + 1 + d;
  }
  perm[k++] = v->b;
  for (int d = 0; d < n_i; d++) {
    perm[k++] = v->a + 1 + d;
  }
  ctx->dx[0].values = tf__gs_transpose(ctx, seg, perm, k);
  return ctx->st->code;
}

/* ---- GatherV2 with the axis or the ranks known at run time (dense) ----- */

/* Graph values of TF's _GatherV2Grad: the params shape, the axis
 * (FloorMod by the rank, so negative axes count from the end) and the
 * ranges of dims around it. */
typedef struct gv2_dyn {
  int b;                 /* batch_dims, >= 0 */
  tf_output ps, rank;    /* Shape(params) and its size */
  tf_output a, a1, next; /* the axis, [axis], axis + 1 */
  tf_output r0, r1, r2;  /* [0, b), [b, axis), [axis + 1, rank) */
} gv2_dyn;

static tf_output i32(tf_grad_ctx *ctx, int v) {
  return tf__grad_scalar(ctx, TF_INT32, v);
}

static tf_output range_i32(tf_grad_ctx *ctx, tf_output start,
                           tf_output limit) {
  tf_output in[3] = {start, limit, i32(ctx, 1)};
  return tf__grad_op(ctx, "Range", in, 3, NULL, 0);
}

/* v[begin : begin + size] of an int32 vector, begin a scalar output and
 * size a constant (-1: to the end). */
static tf_output vslice_at(tf_grad_ctx *ctx, tf_output v, tf_output begin,
                           int32_t size) {
  tf_output in[3] = {v, vec1(ctx, begin), tf__grad_ivec(ctx, &size, 1)};
  return tf__grad_op(ctx, "Slice", in, 3, NULL, 0);
}

static void gv2_dyn_init(tf_grad_ctx *ctx, gv2_dyn *d) {
  d->ps = tf__grad_shape(ctx, tf__grad_in(ctx, 0));
  d->rank = tf__gs_size(ctx, d->ps);
  d->a = tf__grad_op2(ctx, "FloorMod",
                      tf__gs_cast(ctx, tf__grad_in(ctx, 2), TF_INT32), d->rank);
  d->a1 = vec1(ctx, d->a);
  d->next = tf__grad_op2(ctx, "Add", d->a, i32(ctx, 1));
  d->r0 = range_i32(ctx, i32(ctx, 0), i32(ctx, d->b));
  d->r1 = range_i32(ctx, i32(ctx, d->b), d->a);
  d->r2 = range_i32(ctx, d->next, d->rank);
}

/* TF's _GetBatchIndices: the indices offset by batch * gather_size, the
 * batch rows numbered in row-major order over indices.shape[:b]. */
static tf_output batch_ids(tf_grad_ctx *ctx, int b, tf_output bshape,
                           tf_output n_b, tf_output gather_size) {
  tf_output idx = tf__gs_cast(ctx, tf__grad_in(ctx, 1), TF_INT32);
  tf_output off = tf__grad_op2(ctx, "Mul", range_i32(ctx, i32(ctx, 0), n_b),
                               gather_size);
  tf_output n_inner = tf__grad_op2(
      ctx, "Sub", tf__grad_op1(ctx, "Rank", tf__grad_in(ctx, 1)), i32(ctx, b));
  tf_output parts[2] = {bshape, tf__grad_op2(ctx, "Fill", vec1(ctx, n_inner),
                                             i32(ctx, 1))};
  off = tf__grad_op2(ctx, "Reshape", off, tf__gs_vec_concat(ctx, parts, 2));
  return tf__grad_op2(ctx, "Add", idx, off);
}

/* TF's _BatchGatherGrad on values [batch..., n, rest...]: the sum of each
 * gathered slice into its row, [batch..., gather_size, rest...]. */
static tf_output batch_gather_grad(tf_grad_ctx *ctx, int b, tf_output values,
                                   tf_output gather_size) {
  tf_output ids, n_seg = gather_size, bshape = {0}, flat = {0};
  if (b == 0) {
    ids = tf__gs_reshape_to(ctx, ints_as_i32(ctx, tf__grad_in(ctx, 1)),
                            (int64_t[]){-1}, 1);
  } else {
    tf_output vshape = tf__grad_shape(ctx, values);
    bshape = tf__gs_vec_slice(ctx, vshape, 0, b);
    tf_output n_b = tf__gs_op_attr(ctx, "Prod", bshape, i32(ctx, 0),
                                   "keep_dims", tf_attr_bool(false));
    tf_output fparts[2] = {tf__grad_ivec(ctx, (int32_t[]){-1}, 1),
                           tf__gs_vec_slice(ctx, vshape, b + 1, -1)};
    flat = tf__gs_vec_concat(ctx, fparts, 2); /* [-1, rest...] */
    values = tf__grad_op2(ctx, "Reshape", values, flat);
    ids = tf__gs_reshape_to(ctx, batch_ids(ctx, b, bshape, n_b, gather_size),
                            (int64_t[]){-1}, 1);
    n_seg = tf__grad_op2(ctx, "Mul", n_b, gather_size);
  }
  tf_output in[3] = {values, ids, n_seg};
  tf_output seg = tf__grad_op(ctx, "UnsortedSegmentSum", in, 3, NULL, 0);
  if (b > 0) { /* [batch * gather_size, rest...] -> [batch..., -1, rest...] */
    tf_output parts[2] = {bshape, flat};
    seg = tf__grad_op2(ctx, "Reshape", seg, tf__gs_vec_concat(ctx, parts, 2));
  }
  return seg;
}

/* TF's _GatherV2Grad, built from graph ops: dy reshaped to
 * [outer..., n, inner...], the gathered dim moved after the batch dims,
 * summed into rows, and moved back. */
static tf_code gather_v2_dynamic(tf_grad_ctx *ctx, int b) {
  gv2_dyn d = {.b = b};
  gv2_dyn_init(ctx, &d);
  tf_output sl[3] = {d.ps, tf__grad_ivec(ctx, (int32_t[]){0}, 1), d.a1};
  tf_output outer = tf__grad_op(ctx, "Slice", sl, 3, NULL, 0); /* [:axis] */
  tf_output vparts[3] = {outer, tf__grad_ivec(ctx, (int32_t[]){-1}, 1),
                         vslice_at(ctx, d.ps, d.next, -1)};
  tf_output values = tf__grad_op2(ctx, "Reshape", ctx->dy[0],
                                  tf__gs_vec_concat(ctx, vparts, 3));
  tf_output perm[4] = {d.r0, d.a1, d.r1, d.r2};
  tf_output vt = tf__grad_op2(ctx, "Transpose", values,
                              tf__gs_vec_concat(ctx, perm, 4));
  tf_output g = tf__gs_reshape_to(ctx, vslice_at(ctx, d.ps, d.a, 1), NULL, 0);
  tf_output seg = batch_gather_grad(ctx, b, vt, g);
  tf_output inv[4] = {d.r0,
                      tf__grad_op2(ctx, "Add", d.r1, i32(ctx, 1)),
                      tf__grad_ivec(ctx, (int32_t[]){b}, 1), d.r2};
  ctx->dx[0].values = tf__grad_op2(ctx, "Transpose", seg,
                                   tf__gs_vec_concat(ctx, inv, 4));
  return ctx->st->code;
}

/* Axis 0 without batch dims: sparse rows (TF's IndexedSlices). A constant
 * axis with known ranks: static permutations. Otherwise the axis and the
 * permutations are computed in the graph; a negative batch_dims then
 * needs indices of known rank (as in TF). */
static tf_code gather_v2_grad(tf_grad_ctx *ctx) {
  gv2 v = {.params = tf__grad_in(ctx, 0), .indices = tf__grad_in(ctx, 1)};
  int64_t axis, bd;
  TF_TRY(tf_node_attr_get_int(ctx->node, "batch_dims", &bd, ctx->st));
  v.pr = tf__gs_rank(v.params);
  v.ir = tf__gs_rank(v.indices);
  bool const_axis = tf__gs_const_ints(tf__grad_in(ctx, 2), &axis, 1) == 1;
  if (const_axis && axis == 0 && bd == 0) {
    return gather_rows(ctx);
  }
  if (bd < 0 && v.ir < 0) {
    return tf_status_set(ctx->st, TF_UNIMPLEMENTED, "gradient of GatherV2 "
                         "'%s': batch_dims %d < 0 needs indices of known "
                         "rank", tf_node_name(ctx->node), (int)bd);
  }
  v.b = (int)(bd < 0 ? bd + v.ir : bd);
  if (v.b < 0 || (v.ir >= 0 && v.b > v.ir)) {
    return tf_status_set(ctx->st, TF_INVALID_ARGUMENT, "gradient of GatherV2 "
                         "'%s': batch_dims %d out of range for indices of "
                         "rank %d", tf_node_name(ctx->node), (int)bd, v.ir);
  }
  if (!const_axis || v.pr < 0 || v.ir < 0) {
    return gather_v2_dynamic(ctx, v.b);
  }
  v.a = (int)(axis < 0 ? axis + v.pr : axis);
  if (v.a < 0 || v.a >= v.pr || v.b > v.a) {
    return tf_status_set(ctx->st, TF_INVALID_ARGUMENT, "gradient of GatherV2 "
                         "'%s': axis %d / batch_dims %d out of range",
                         tf_node_name(ctx->node), (int)axis, (int)bd);
  }
  if (v.a == 0 && v.b == 0) {
    return gather_rows(ctx);
  }
  v.pshape = tf__grad_shape(ctx, v.params);
  return gather_v2_dense(ctx, &v);
}

/* ---- DynamicStitch and DynamicPartition --------------------------------- */

/* True when every indices input is a Const and no index repeats. */
static bool distinct_const_indices(const tf_grad_ctx *ctx, int n) {
  int64_t max = -1;
  for (int i = 0; i < n; i++) {
    const tf_tensor *t = tf__gs_const(tf__grad_in(ctx, i));
    if (t == NULL) {
      return false;
    }
    for (int64_t j = 0; j < t->n; j++) {
      max = TF_MAX(max, tf_tensor_get_i64(t, j));
    }
  }
  if (max >= (1 << 24)) {
    return false;
  }
  bool *seen = tf__xcalloc((size_t)max + 2, 1), ok = true;
  for (int i = 0; ok && i < n; i++) {
    const tf_tensor *t = tf__gs_const(tf__grad_in(ctx, i));
    for (int64_t j = 0; ok && j < t->n; j++) {
      int64_t k = tf_tensor_get_i64(t, j);
      ok = k >= 0 && !seen[k];
      if (ok) {
        seen[k] = true;
      }
    }
  }
  free(seen);
  return ok;
}

/* Ids 0, 1, ... numbering every slice of every input, shaped like each
 * indices input, into ids[0..n). */
static void slice_ids(tf_grad_ctx *ctx, int n, tf_output *ids) {
  tf_output off = tf__grad_scalar(ctx, TF_INT32, 0);
  for (int i = 0; i < n; i++) {
    tf_output idx = tf__grad_in(ctx, i);
    tf_output end = tf__grad_op2(ctx, "Add", off, tf__gs_size(ctx, idx));
    tf_output range[3] = {off, end, tf__grad_scalar(ctx, TF_INT32, 1)};
    ids[i] = tf__grad_op2(ctx, "Reshape",
                          tf__grad_op(ctx, "Range", range, 3, NULL, 0),
                          tf__grad_shape(ctx, idx));
    off = end;
  }
}

/* keep ([indices shape]) reshaped to broadcast over data_i's row dims. */
static tf_output row_mask(tf_grad_ctx *ctx, tf_output keep, tf_output idx,
                          tf_output data) {
  int ri = tf__gs_rank(idx), rd = tf__gs_rank(data);
  tf_output ones;
  if (ri >= 0 && rd >= ri) {
    int32_t o[TF_MAX_RANK];
    for (int d = 0; d < rd - ri; d++) {
      o[d] = 1;
    }
    ones = tf__grad_ivec(ctx, o, rd - ri);
  } else {
    tf_output n = tf__grad_op2(ctx, "Sub", tf__grad_op1(ctx, "Rank", data),
                               tf__grad_op1(ctx, "Rank", idx));
    ones = tf__grad_op2(ctx, "Fill", vec1(ctx, n),
                        tf__grad_scalar(ctx, TF_INT32, 1));
  }
  tf_output parts[2] = {tf__grad_shape(ctx, idx), ones};
  return tf__gs_reshape(ctx, keep, tf__gs_vec_concat(ctx, parts, 2));
}

static tf_code dynamic_stitch_grad(tf_grad_ctx *ctx) {
  int n = ctx->n_dx / 2;
  tf_output dy = ctx->dy[0];
  if (distinct_const_indices(ctx, n)) {
    for (int i = 0; i < n; i++) {
      ctx->dx[n + i].values = tf__grad_op2(ctx, "Gather", dy, tf__grad_in(ctx, i));
    }
    return ctx->st->code;
  }
  tf_output *in = tf__xcalloc(2 * (size_t)n, sizeof *in);
  for (int i = 0; i < n; i++) {
    in[i] = tf__grad_in(ctx, i);
  }
  slice_ids(ctx, n, in + n);
  int count[2] = {n, n};
  tf_output winner = tf__gs_op_groups(ctx, "DynamicStitch", in, count, 2,
                                      NULL, 0);
  tf_dtype dt = tf_node_output_type(ctx->node, 0);
  for (int i = 0; i < n; i++) {
    tf_output idx = tf__grad_in(ctx, i), data = tf__grad_in(ctx, n + i);
    tf_output keep = tf__gs_cast(
        ctx, tf__grad_op2(ctx, "Equal", tf__grad_op2(ctx, "Gather", winner, idx),
                          in[n + i]),
        dt);
    ctx->dx[n + i].values =
        tf__grad_op2(ctx, "Mul", tf__grad_op2(ctx, "Gather", dy, idx),
                     row_mask(ctx, keep, idx, data));
  }
  free(in);
  return ctx->st->code;
}

static tf_code dynamic_partition_grad(tf_grad_ctx *ctx) {
  tf_output parts = tf__grad_in(ctx, 1);
  int n = ctx->n_dy;
  tf_output range[3] = {tf__grad_scalar(ctx, TF_INT32, 0),
                        tf__gs_size(ctx, parts),
                        tf__grad_scalar(ctx, TF_INT32, 1)};
  tf_output pos = tf__grad_op2(ctx, "Reshape",
                               tf__grad_op(ctx, "Range", range, 3, NULL, 0),
                               tf__grad_shape(ctx, parts));
  tf_output pin[2] = {pos, parts};
  tf_attr_kv kv = {"num_partitions", tf_attr_int(n)};
  tf_output split = tf__grad_op(ctx, "DynamicPartition", pin, 2, &kv, 1);
  if (split.node == NULL) {
    return ctx->st->code;
  }
  tf_output *in = tf__xcalloc(2 * (size_t)n, sizeof *in);
  for (int i = 0; i < n; i++) {
    in[i] = (tf_output){split.node, i};
    in[n + i] = ctx->dy[i];
  }
  int count[2] = {n, n};
  tf_output merged = tf__gs_op_groups(ctx, "DynamicStitch", in, count, 2,
                                      NULL, 0);
  free(in);
  ctx->dx[0].values = tf__grad_op2(ctx, "Reshape", merged,
                                   tf__grad_shape(ctx, tf__grad_in(ctx, 0)));
  return ctx->st->code;
}

/* ---- UnsortedSegmentSum --------------------------------------------------- */

/* TF's _GatherDropNegatives: dy gathered at the segment ids, 0 for the
 * slices whose id is negative (dropped by the forward op). The ids and
 * num_segments get no gradient. */
static tf_code unsorted_segment_sum_grad(tf_grad_ctx *ctx) {
  tf_output ids = tf__grad_in(ctx, 1);
  tf_output zero = tf__grad_op1(ctx, "ZerosLike", ids);
  tf_output gathered = tf__grad_op2(ctx, "Gather", ctx->dy[0],
                                    tf__grad_op2(ctx, "Maximum", ids, zero));
  tf_output keep = row_mask(ctx, tf__grad_op2(ctx, "GreaterEqual", ids, zero),
                            ids, tf__grad_in(ctx, 0));
  tf_output all = tf__grad_op2(ctx, "Fill", tf__grad_shape(ctx, gathered),
                               tf__grad_scalar(ctx, TF_BOOL, 1));
  tf_output in[3] = {tf__grad_op2(ctx, "LogicalAnd", keep, all), gathered,
                     tf__grad_op1(ctx, "ZerosLike", gathered)};
  ctx->dx[0].values = tf__grad_op(ctx, "Select", in, 3, NULL, 0);
  return ctx->st->code;
}

static const tf_grad_def array_index_grads[] = {
    {"Gather", gather_rows},
    {"GatherV2", gather_v2_grad},
    {"UnsortedSegmentSum", unsorted_segment_sum_grad},
    {"DynamicStitch", dynamic_stitch_grad},
    {"DynamicPartition", dynamic_partition_grad},
};

TF_REGISTER_GRADIENTS(array_index_grads)
