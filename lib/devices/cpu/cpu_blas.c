/* cpu_blas.c: checked OpenBLAS GEMM wrappers and the BLAS thread policy.
 *
 * Thread policy: OpenBLAS owns the threads of a large GEMM. On first use it
 * is given the default intra-op pool's thread count (capped at the online
 * CPUs, and left alone when OPENBLAS_NUM_THREADS is set), and kernels issue
 * a large GEMM from their own thread, never from inside a tf_parallel_for
 * chunk. Only GEMMs that OpenBLAS runs single-threaded anyway (m*n*k <=
 * 65536 * 4, the GEMM_MULTITHREAD_THRESHOLD rule of its interface/gemm.c)
 * may be issued from pool chunks, e.g. by BatchMatMul spreading many small
 * matrices over the pool. So the two thread systems never run one GEMM
 * together and never oversubscribe the cores.
 *
 * Why (measured on the idle 2-core machine, n x n float32 products): the
 * alternative, single-threaded OpenBLAS with the rows of C split over the
 * pool, took 2.1x the time of OpenBLAS's own threading at n = 256, 1.2-1.8x
 * at 512 and par at 1024 (the pool's wake-up and the per-chunk repacking of
 * B dominate small sizes), and 1.8-2x at every size when calls with
 * OpenBLAS threads were mixed in, because OpenBLAS's idle workers spin for
 * a while after each call and take the core from the pool's helper. */
#include "lib/devices/cpu/cpu_blas.h"

#include <cblas.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/core/base/threadpool.h"
#include "lib/core/base/util.h"

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;

static void blas_init_threads(void) {
  const char *env = getenv("OPENBLAS_NUM_THREADS");
  if (env != NULL && env[0] != '\0') {
    return; /* the user chose; respect it */
  }
  int n = tf_threadpool_size(tf_threadpool_default());
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (cpus > 0 && n > cpus) {
    n = (int)cpus;
  }
  openblas_set_num_threads(n < 1 ? 1 : n);
}

int tf__blas_num_threads(void) {
  pthread_once(&blas_once, blas_init_threads);
  return openblas_get_num_threads();
}

bool tf__blas_is_single_threaded(int64_t m, int64_t n, int64_t k) {
  return (double)m * (double)n * (double)k <= TF__BLAS_SINGLE_THREAD_MNK;
}

tf__gemm_dims tf__gemm_dims_packed(bool trans_a, bool trans_b, int64_t m,
                                   int64_t n, int64_t k) {
  tf__gemm_dims d = {.trans_a = trans_a, .trans_b = trans_b,
                     .m = m, .n = n, .k = k};
  d.lda = TF_MAX(trans_a ? m : k, (int64_t)1);
  d.ldb = TF_MAX(trans_b ? k : n, (int64_t)1);
  d.ldc = TF_MAX(n, (int64_t)1);
  return d;
}

static tf_code check_dim(const char *what, int64_t v, tf_status *st) {
  if (v < 0 || v > INT_MAX) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "gemm: %s = %lld is outside BLAS's range [0, %d]",
                         what, (long long)v, INT_MAX);
  }
  return TF_OK;
}

static tf_code check_ld(const char *what, int64_t ld, int64_t row,
                        tf_status *st) {
  int64_t need = row > 1 ? row : 1;
  if (ld < need || ld > INT_MAX) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "gemm: %s = %lld must be in [%lld, %d] (row length "
                         "%lld)",
                         what, (long long)ld, (long long)need, INT_MAX,
                         (long long)row);
  }
  return TF_OK;
}

tf_code tf__blas_check(const tf__gemm_dims *d, tf_status *st) {
  if (check_dim("m", d->m, st) != TF_OK || check_dim("n", d->n, st) != TF_OK ||
      check_dim("k", d->k, st) != TF_OK) {
    return TF_INVALID_ARGUMENT;
  }
  if (check_ld("lda", d->lda, d->trans_a ? d->m : d->k, st) != TF_OK ||
      check_ld("ldb", d->ldb, d->trans_b ? d->k : d->n, st) != TF_OK ||
      check_ld("ldc", d->ldc, d->n, st) != TF_OK) {
    return TF_INVALID_ARGUMENT;
  }
  return TF_OK;
}

/* C = beta * C over the m x n block (beta == 0 writes zeros, BLAS-style). */
#define DEFINE_SCALE(name, T)                                                  \
  static void name(int64_t m, int64_t n, T beta, T *c, int64_t ldc) {         \
    for (int64_t i = 0; i < m; i++) {                                          \
      T *restrict row = c + i * ldc;                                           \
      if (beta == 0) {                                                         \
        memset(row, 0, (size_t)n * sizeof(T));                                 \
      } else if (beta != 1) {                                                  \
        for (int64_t j = 0; j < n; j++) {                                      \
          row[j] *= beta;                                                      \
        }                                                                      \
      }                                                                        \
    }                                                                          \
  }
DEFINE_SCALE(scale_f32, float)
DEFINE_SCALE(scale_f64, double)

/* Shared prologue: validates, sets the thread count once, and handles the
 * cases BLAS would reject or where it has nothing to multiply. Returns true
 * when the caller still has to run the GEMM. */
static bool gemm_prologue(const tf__gemm_dims *d, bool alpha_zero,
                          tf_code *code, tf_status *st) {
  *code = tf__blas_check(d, st);
  if (*code != TF_OK) {
    return false;
  }
  pthread_once(&blas_once, blas_init_threads);
  if (d->m == 0 || d->n == 0) {
    return false;
  }
  return !(d->k == 0 || alpha_zero);
}

tf_code tf__blas_sgemm(const tf__gemm_dims *d, float alpha, const float *a,
                       const float *b, float beta, float *c, tf_status *st) {
  tf_code code;
  if (!gemm_prologue(d, alpha == 0, &code, st)) {
    if (code == TF_OK && d->m > 0 && d->n > 0) {
      scale_f32(d->m, d->n, beta, c, d->ldc);
    }
    return code;
  }
  cblas_sgemm(CblasRowMajor, d->trans_a ? CblasTrans : CblasNoTrans,
              d->trans_b ? CblasTrans : CblasNoTrans, (int)d->m, (int)d->n,
              (int)d->k, alpha, a, (int)d->lda, b, (int)d->ldb, beta, c,
              (int)d->ldc);
  return TF_OK;
}

tf_code tf__blas_dgemm(const tf__gemm_dims *d, double alpha, const double *a,
                       const double *b, double beta, double *c,
                       tf_status *st) {
  tf_code code;
  if (!gemm_prologue(d, alpha == 0, &code, st)) {
    if (code == TF_OK && d->m > 0 && d->n > 0) {
      scale_f64(d->m, d->n, beta, c, d->ldc);
    }
    return code;
  }
  cblas_dgemm(CblasRowMajor, d->trans_a ? CblasTrans : CblasNoTrans,
              d->trans_b ? CblasTrans : CblasNoTrans, (int)d->m, (int)d->n,
              (int)d->k, alpha, a, (int)d->lda, b, (int)d->ldb, beta, c,
              (int)d->ldc);
  return TF_OK;
}
