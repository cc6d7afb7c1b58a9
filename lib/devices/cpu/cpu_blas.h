/* cpu_blas.h: the one door to OpenBLAS for CPU kernels.
 *
 * Every GEMM the CPU device runs goes through these checked wrappers, so no
 * other file calls cblas_* directly: they validate dimensions and leading
 * dimensions against BLAS's 32-bit ints (returning INVALID_ARGUMENT instead
 * of letting xerbla print and misbehave), handle the degenerate cases
 * themselves, and apply the thread policy written at the top of cpu_blas.c.
 * Matrices are row-major; lda/ldb/ldc are row strides in elements of the
 * matrices as stored (before any transpose). */
#ifndef TF_DEVICES_CPU_CPU_BLAS_H
#define TF_DEVICES_CPU_CPU_BLAS_H

#include <stdbool.h>
#include <stdint.h>

#include "tf/status.h"

/* C[m,n] = alpha * op(A)[m,k] . op(B)[k,n] + beta * C[m,n], where op(A) is
 * A (stored [m,k]) or, with trans_a, A^T (stored [k,m]); likewise B
 * (stored [k,n], or [n,k] with trans_b). As in BLAS, beta == 0 overwrites
 * C without reading it, so C may hold garbage or NaNs. */
typedef struct tf__gemm_dims {
  bool trans_a, trans_b;
  int64_t m, n, k;
  int64_t lda, ldb, ldc;
} tf__gemm_dims;

/* Row-major packed dims: lda/ldb/ldc are the stored row lengths (at least
 * 1, as BLAS requires even for empty rows). */
tf__gemm_dims tf__gemm_dims_packed(bool trans_a, bool trans_b, int64_t m,
                                   int64_t n, int64_t k);

/* INVALID_ARGUMENT naming the bad value when a dim is negative or over
 * BLAS's int range, or a leading dimension is shorter than its row. */
tf_code tf__blas_check(const tf__gemm_dims *d, tf_status *st);

/* The GEMM itself (after tf__blas_check). m == 0 or n == 0 does nothing;
 * k == 0 or alpha == 0 only scales C by beta (zero-fills for beta == 0).
 * Runs on the calling thread, or split by rows of C over the default
 * intra-op pool when large (see tf__blas_is_single_threaded). */
tf_code tf__blas_sgemm(const tf__gemm_dims *d, float alpha, const float *a,
                       const float *b, float beta, float *c, tf_status *st);
tf_code tf__blas_dgemm(const tf__gemm_dims *d, double alpha, const double *a,
                       const double *b, double beta, double *c,
                       tf_status *st);

/* True when a GEMM of this size runs on the calling thread only (m*n*k
 * at most TF__BLAS_SINGLE_THREAD_MNK, 256^3); larger ones are split over the
 * default intra-op pool. Kernels may spread such small GEMMs over the pool
 * themselves (BatchMatMul's matrices). With OPENBLAS_NUM_THREADS > 1 in
 * the environment, OpenBLAS threads them too. */
#define TF__BLAS_SINGLE_THREAD_MNK (16777216.0)
bool tf__blas_is_single_threaded(int64_t m, int64_t n, int64_t k);

/* The number of threads OpenBLAS uses (set once, on the first call of any
 * function here: 1 unless OPENBLAS_NUM_THREADS is set). */
int tf__blas_num_threads(void);

#endif
