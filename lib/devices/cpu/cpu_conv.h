/* cpu_conv.h: what the CPU Conv2D kernel (cpu_conv.c) shares with its
 * backward kernels (cpu_conv_grad.c): the NHWC convolution geometry, the
 * attr parsing done once in init, the im2col row filler and the
 * dtype-dispatching GEMM. Internal to lib/devices/cpu. */
#ifndef TF_DEVICES_CPU_CPU_CONV_H
#define TF_DEVICES_CPU_CPU_CONV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/core/framework/kernel.h"
#include "lib/core/ops/ops_nn.h"
#include "lib/devices/cpu/cpu_blas.h"

typedef struct tf__conv_geom {
  int64_t n, h, w, cin;   /* input [N, H, W, Cin] */
  int64_t kh, kw, cout;   /* filter [KH, KW, Cin, Cout] */
  int64_t oh, ow;         /* output [N, OH, OW, Cout] */
  int64_t sh, sw, dh, dw; /* strides and dilations */
  int64_t pt, pl;         /* padding before: top, left */
  int64_t k;              /* KH * KW * Cin: one im2col row */
} tf__conv_geom;

/* The kernel state of Conv2D and its backprops: the node's parsed attrs
 * (first, so the state also reads as a tf__nn_window) and the oneDNN
 * primitive cache (cpu_conv_dnnl.h; NULL without oneDNN). */
struct tf__dnnl_cache;
typedef struct tf__conv_state {
  tf__nn_window w;
  struct tf__dnnl_cache *dnnl;
} tf__conv_state;

/* Kernel init for Conv2D and its backprops: the state is a tf__conv_state
 * (free it with tf__conv_free_state). UNIMPLEMENTED for NCHW;
 * INVALID_ARGUMENT for bad attrs, prefixed with the node. */
tf_code tf__conv_init(const tf_node *node, void **state, tf_status *st);

/* Frees a state made by tf__conv_init; NULL is a no-op. */
void tf__conv_free_state(void *state);

/* The geometry of a convolution of an input of shape in with a filter of
 * shape f, both fully defined: checks that both are rank 4, that the
 * filter has elements and that the depths agree, and computes the output
 * size (TF's arithmetic). Errors (INVALID_ARGUMENT on ctx) name the
 * operands as in_name and f_name ("input_sizes", "filter_sizes" for the
 * backprops, whose shapes come from a sizes vector). */
tf_code tf__conv_geometry(tf_kernel_ctx *ctx, const tf__nn_window *w,
                          const tf_shape *in, const tf_shape *f,
                          const char *in_name, const char *f_name,
                          tf__conv_geom *g);

/* True when the input as stored is the im2col matrix [N*OH*OW, K] (a 1x1
 * filter with stride 1, or an unpadded filter covering the whole image). */
bool tf__conv_is_direct(const tf__conv_geom *g);

/* im2col of output pixels row0 + [begin, end) (flat over N, OH, OW) into
 * rows [begin, end) of col ([*, K], each row laid out as the filter's
 * [KH, KW, Cin], zeros for padding). A tf_range_fn over pool chunks. */
typedef struct tf__im2col_args {
  const tf__conv_geom *g;
  const char *in; /* input [N, H, W, Cin] */
  char *col;      /* [rows, K] */
  size_t esz;
  int64_t row0;
} tf__im2col_args;
void tf__im2col_rows(void *arg, int64_t begin, int64_t end);

/* Small convolutions (a first layer with few input channels) go faster
 * split over the pool into one part per thread, each running im2col and a
 * single-threaded GEMM on chunks of output pixels that stay in cache.
 * Returns the rows per chunk for that path: at most what keeps K * Cout *
 * rows under TF__CONV_PART_MNK (64^3 multiply-adds, a GEMM small enough
 * to stay in cache) and a chunk within TF__CONV_PART_BYTES; 0 when that is
 * under TF__CONV_PART_MIN_ROWS rows or the pool has one thread. */
#define TF__CONV_PART_MNK (65536.0 * 4.0)
#define TF__CONV_PART_BYTES ((int64_t)256 << 10)
#define TF__CONV_PART_MIN_ROWS 64
int64_t tf__conv_part_rows(const tf__conv_geom *g, size_t esz,
                           const tf_threadpool *pool);

/* C = op(A) . op(B) + beta * C in float32 or float64 (dims as
 * cpu_blas.h), errors set on ctx. */
tf_code tf__conv_gemm(tf_kernel_ctx *ctx, tf_dtype dt, const tf__gemm_dims *d,
                      const void *a, const void *b, double beta, void *c);

#endif
