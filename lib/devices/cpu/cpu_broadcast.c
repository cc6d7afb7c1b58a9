/* cpu_broadcast.c: NumPy broadcasting of up to four operands, collapsed to
 * the fewest dims and walked in row blocks (see cpu_broadcast.h). */
#include "lib/devices/cpu/cpu_broadcast.h"

#include <stdio.h>
#include <string.h>

#include "lib/core/base/util.h"

/* Dim i (counted in the output's rank R) of s, right-aligned: 1 where s has
 * fewer dims. */
static int64_t aligned_dim(const tf_shape *s, int R, int i) {
  int j = i - (R - s->rank);
  return j < 0 ? 1 : s->dims[j];
}

static tf_code incompatible(int n_in, const tf_shape *const *in,
                            const char *why, tf_status *st) {
  char msg[512], sb[128];
  size_t len = 0;
  msg[0] = '\0';
  for (int k = 0; k < n_in && len < sizeof(msg); k++) {
    int w = snprintf(msg + len, sizeof(msg) - len, "%s%s", k ? " vs. " : "",
                     tf_shape_str(in[k], sb, sizeof(sb)));
    len += w > 0 ? (size_t)w : 0;
  }
  return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: %s", why, msg);
}

/* Output dims and element count; errors on a conflict or overflow. */
static tf_code broadcast_dims(tf_bcast *bc, int n_in,
                              const tf_shape *const *in, tf_status *st) {
  int R = 0;
  for (int k = 0; k < n_in; k++) {
    TF_ASSERT(in[k]->rank >= 0 && in[k]->rank <= TF_MAX_RANK);
    R = TF_MAX(R, in[k]->rank);
  }
  bc->out.rank = R;
  int64_t n = 1;
  for (int i = 0; i < R; i++) {
    int64_t d = 1;
    for (int k = 0; k < n_in; k++) {
      int64_t dk = aligned_dim(in[k], R, i);
      TF_ASSERT(dk >= 0);
      if (dk == 1) {
        continue;
      }
      if (d != 1 && dk != d) {
        return incompatible(n_in, in, "Incompatible shapes", st);
      }
      d = dk;
    }
    bc->out.dims[i] = d;
    if (__builtin_mul_overflow(n, d, &n)) {
      return incompatible(n_in, in, "Broadcast output too large", st);
    }
  }
  bc->n = n;
  for (int k = 0; k < n_in; k++) {
    int64_t nk = 1;
    for (int i = 0; i < in[k]->rank; i++) {
      if (__builtin_mul_overflow(nk, in[k]->dims[i], &nk)) {
        return incompatible(n_in, in, "Operand too large", st);
      }
    }
    bc->in_n[k] = nk;
  }
  return TF_OK;
}

/* Drops size-1 output dims, merges runs with equal broadcast patterns and
 * pads to rank 2; then sets contiguous strides per operand. */
static void collapse(tf_bcast *bc, int n_in, const tf_shape *const *in) {
  int R = bc->out.rank, r = 0;
  unsigned flags[TF_MAX_RANK + 2] = {0};
  int64_t dims[TF_MAX_RANK + 2] = {0};
  for (int i = 0; i < R; i++) {
    if (bc->out.dims[i] == 1) {
      continue;
    }
    unsigned f = 0; /* bit k: operand k broadcasts along this dim */
    for (int k = 0; k < n_in; k++) {
      if (aligned_dim(in[k], R, i) == 1) {
        f |= 1u << k;
      }
    }
    if (r > 0 && flags[r - 1] == f) {
      dims[r - 1] *= bc->out.dims[i];
    } else {
      flags[r] = f;
      dims[r++] = bc->out.dims[i];
    }
  }
  int pad = r < 2 ? 2 - r : 0;
  bc->rank = r + pad;
  for (int j = 0; j < bc->rank; j++) {
    bc->dims[j] = j < pad ? 1 : dims[j - pad];
  }
  for (int k = 0; k < n_in; k++) {
    int64_t s = 1;
    for (int j = bc->rank - 1; j >= 0; j--) {
      bool b = j < pad || (flags[j - pad] >> k & 1u);
      bc->strides[k][j] = b ? 0 : s;
      s *= b ? 1 : bc->dims[j];
    }
  }
}

tf_code tf_bcast_init(tf_bcast *bc, int n_in, const tf_shape *const *in,
                      tf_status *st) {
  TF_ASSERT(n_in >= 1 && n_in <= TF_BCAST_MAX_IN);
  memset(bc, 0, sizeof(*bc));
  bc->n_in = n_in;
  TF_TRY(broadcast_dims(bc, n_in, in, st));
  if (bc->n == 0) {
    bc->rank = 2; /* dims {0, 0}: nothing to walk */
  } else {
    collapse(bc, n_in, in);
  }
  int r = bc->rank;
  bc->out_row_stride = bc->dims[r - 1];
  for (int k = 0; k < n_in; k++) {
    bc->row_stride[k] = bc->strides[k][r - 2];
    bc->col_stride[k] = bc->strides[k][r - 1];
    TF_ASSERT(bc->col_stride[k] == 0 || bc->col_stride[k] == 1);
  }
  return TF_OK;
}

bool tf_bcast_is_full(const tf_bcast *bc, int k) {
  TF_ASSERT(k >= 0 && k < bc->n_in);
  return bc->in_n[k] == bc->n;
}

void tf_bcast_iter_init(tf_bcast_iter *it, const tf_bcast *bc, int64_t begin,
                        int64_t end) {
  memset(it, 0, sizeof(*it));
  it->bc = bc;
  it->pos = TF_MAX(begin, 0);
  it->end = TF_MIN(end, bc->n);
  if (it->pos >= it->end) {
    return;
  }
  int64_t rem = it->pos;
  for (int j = bc->rank - 1; j >= 0; j--) {
    it->idx[j] = rem % bc->dims[j];
    rem /= bc->dims[j];
    for (int k = 0; k < bc->n_in; k++) {
      it->off[k] += it->idx[j] * bc->strides[k][j];
    }
  }
}

/* Steps dims j, j-1, ... by one with carries (an odometer). */
static void carry(tf_bcast_iter *it, int j) {
  const tf_bcast *bc = it->bc;
  for (; j >= 0; j--) {
    it->idx[j]++;
    for (int k = 0; k < bc->n_in; k++) {
      it->off[k] += bc->strides[k][j];
    }
    if (it->idx[j] < bc->dims[j]) {
      return;
    }
    it->idx[j] = 0;
    for (int k = 0; k < bc->n_in; k++) {
      it->off[k] -= bc->dims[j] * bc->strides[k][j];
    }
  }
}

/* Moves dim j forward by count (not past its end), carrying at the end. */
static void advance_dim(tf_bcast_iter *it, int j, int64_t count) {
  const tf_bcast *bc = it->bc;
  it->idx[j] += count;
  for (int k = 0; k < bc->n_in; k++) {
    it->off[k] += count * bc->strides[k][j];
  }
  if (it->idx[j] == bc->dims[j]) {
    it->idx[j] = 0;
    for (int k = 0; k < bc->n_in; k++) {
      it->off[k] -= bc->dims[j] * bc->strides[k][j];
    }
    carry(it, j - 1);
  }
}

bool tf_bcast_iter_next(tf_bcast_iter *it, tf_bcast_block *blk) {
  if (it->pos >= it->end) {
    return false;
  }
  const tf_bcast *bc = it->bc;
  int r = bc->rank;
  int64_t D = bc->dims[r - 1], c = it->idx[r - 1], left = it->end - it->pos;
  blk->out_off = it->pos;
  memcpy(blk->in_off, it->off, sizeof(blk->in_off));
  if (c != 0 || left < D) {
    blk->rows = 1;
    blk->cols = TF_MIN(D - c, left);
    advance_dim(it, r - 1, blk->cols);
  } else {
    blk->rows = TF_MIN(bc->dims[r - 2] - it->idx[r - 2], left / D);
    blk->cols = D;
    advance_dim(it, r - 2, blk->rows);
  }
  it->pos += blk->rows * blk->cols;
  return true;
}

typedef struct run_arg {
  const tf_bcast *bc;
  tf_bcast_block_fn fn;
  void *arg;
} run_arg;

static void run_range(void *p, int64_t begin, int64_t end) {
  const run_arg *ra = p;
  tf_bcast_iter it;
  tf_bcast_block blk;
  tf_bcast_iter_init(&it, ra->bc, begin, end);
  while (tf_bcast_iter_next(&it, &blk)) {
    ra->fn(ra->arg, ra->bc, &blk);
  }
}

void tf_bcast_run(const tf_bcast *bc, tf_threadpool *pool, int64_t grain,
                  tf_bcast_block_fn fn, void *arg) {
  if (bc->n <= 0) {
    return;
  }
  run_arg ra = {bc, fn, arg};
  tf_parallel_for(pool, bc->n, grain < 1 ? 1 : grain, run_range, &ra);
}
