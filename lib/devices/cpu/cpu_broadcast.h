/* cpu_broadcast.h: NumPy broadcasting as strided iteration, for CPU kernels.
 *
 * tf_bcast_init checks up to TF_BCAST_MAX_IN operand shapes against each
 * other (right-aligned; a dim must equal the output's or be 1), computes the
 * output shape, then collapses the problem: output dims of size 1 are
 * dropped and adjacent dims merged where every operand either spans both or
 * broadcasts over both. What is left is a row-major output of rank >= 2
 * (padded with leading 1s) with per-operand element strides, 0 where the
 * operand is broadcast. Kernels walk it in blocks of whole or partial rows
 * of the innermost dim; along a row every operand moves by 0 or 1 element,
 * so a kernel needs at most four tight loops per op (both moving, one of
 * them fixed, both fixed). Common cases come out as one block per thread:
 * same shape and scalar operands collapse to a single row, [N,C] + [C]
 * becomes rows of C.
 *
 * Offsets and strides count elements, not bytes, so one walk serves any
 * element types (a bool condition next to float values). */
#ifndef TF_DEVICES_CPU_CPU_BROADCAST_H
#define TF_DEVICES_CPU_CPU_BROADCAST_H

#include <stdbool.h>
#include <stdint.h>

#include "tf/status.h"
#include "tf/tensor.h"
#include "lib/core/base/threadpool.h"

#define TF_BCAST_MAX_IN 4

typedef struct tf_bcast {
  int n_in;
  tf_shape out;     /* broadcast output shape (not collapsed) */
  int64_t n;        /* output elements; 0 means nothing to walk */
  int64_t in_n[TF_BCAST_MAX_IN]; /* operand element counts */
  int rank;         /* collapsed rank, >= 2 */
  int64_t dims[TF_MAX_RANK];                     /* collapsed output dims */
  int64_t strides[TF_BCAST_MAX_IN][TF_MAX_RANK]; /* elements, 0 = bcast */
  /* Shortcuts for blocks: output rows are out_row_stride (the innermost
   * dim) apart; operand k's rows are row_stride[k] apart and its elements
   * along a row col_stride[k] (0 or 1) apart. */
  int64_t out_row_stride;
  int64_t row_stride[TF_BCAST_MAX_IN];
  int64_t col_stride[TF_BCAST_MAX_IN];
} tf_bcast;

/* A piece of the output: rows x cols elements starting at output offset
 * out_off; when rows > 1 each row is a whole innermost dim (cols ==
 * out_row_stride). in_off[k] is operand k's offset of the first element. */
typedef struct tf_bcast_block {
  int64_t out_off;
  int64_t rows, cols;
  int64_t in_off[TF_BCAST_MAX_IN];
} tf_bcast_block;

/* Broadcasts the n_in (1..TF_BCAST_MAX_IN) shapes in[], which must be fully
 * defined. INVALID_ARGUMENT "Incompatible shapes: [2,3] vs. [4]" naming
 * every shape when a dim conflicts, or when the output's element count
 * overflows int64. */
tf_code tf_bcast_init(tf_bcast *bc, int n_in, const tf_shape *const *in,
                      tf_status *st);

/* True when operand k is walked contiguously with the output (same number
 * of elements: it may then share the output's buffer in place). */
bool tf_bcast_is_full(const tf_bcast *bc, int k);

/* Walks output elements [begin, end) of bc in order, block by block. */
typedef struct tf_bcast_iter {
  const tf_bcast *bc;
  int64_t pos, end;
  int64_t idx[TF_MAX_RANK];          /* multi-index of pos */
  int64_t off[TF_BCAST_MAX_IN];      /* operand offsets at pos */
} tf_bcast_iter;

void tf_bcast_iter_init(tf_bcast_iter *it, const tf_bcast *bc, int64_t begin,
                        int64_t end);
/* Fills *blk with the next block and returns true; false when done. */
bool tf_bcast_iter_next(tf_bcast_iter *it, tf_bcast_block *blk);

/* Calls fn on every block of bc's output, split across pool in chunks of at
 * least grain elements (inline when small or pool is NULL). fn may run
 * concurrently on disjoint blocks. */
typedef void (*tf_bcast_block_fn)(void *arg, const tf_bcast *bc,
                                  const tf_bcast_block *blk);
void tf_bcast_run(const tf_bcast *bc, tf_threadpool *pool, int64_t grain,
                  tf_bcast_block_fn fn, void *arg);

#endif
