/* cpu_blas.c: checked OpenBLAS GEMM wrappers and the BLAS thread policy.
 *
 * Thread policy: OpenBLAS runs every GEMM on the calling thread (one
 * OpenBLAS thread, unless OPENBLAS_NUM_THREADS says otherwise), and a GEMM
 * of TF__BLAS_SINGLE_THREAD_MNK multiply-adds or more is split by rows of C
 * over the default intra-op pool, one single-threaded OpenBLAS call per
 * chunk (a call from inside a pool chunk runs its rows inline). So the
 * cores are shared by one set of threads, ours, whose idle workers sleep.
 *
 * Why (measured on the idle 2-core CI machine, make bench-train, whose
 * graphs run several GEMMs at once on the executor's threads): with
 * OpenBLAS's own threads, an LSTM step took 57 ms and a CNN step 28.8 ms;
 * with this policy 24.6 ms and 22.9 ms, the MLP step 1.73 ms against
 * 1.62 ms. OpenBLAS's idle workers spin for a while after each call and
 * take the cores from the executor's other threads and the pool's helper;
 * two executor threads each calling a threaded GEMM oversubscribe the
 * cores. The earlier measurement that favoured OpenBLAS's threads (2.1x at
 * n = 256, par at 1024) timed one GEMM alone. */
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
  openblas_set_num_threads(1);
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

/* One GEMM, or its rows [begin, end) of C. */
typedef struct gemm_call {
  const tf__gemm_dims *d;
  bool dbl;
  double alpha, beta;
  const void *a, *b;
  void *c;
} gemm_call;

static void gemm_rows(void *arg, int64_t begin, int64_t end) {
  const gemm_call *g = arg;
  const tf__gemm_dims *d = g->d;
  /* Row r of op(A) starts at a + r * lda, or (transposed) a + r. */
  int64_t a_off = d->trans_a ? begin : begin * d->lda, c_off = begin * d->ldc;
  CBLAS_TRANSPOSE ta = d->trans_a ? CblasTrans : CblasNoTrans;
  CBLAS_TRANSPOSE tb = d->trans_b ? CblasTrans : CblasNoTrans;
  int rows = (int)(end - begin);
  if (g->dbl) {
    cblas_dgemm(CblasRowMajor, ta, tb, rows, (int)d->n, (int)d->k, g->alpha,
                (const double *)g->a + a_off, (int)d->lda, g->b, (int)d->ldb, g->beta,
                (double *)g->c + c_off, (int)d->ldc);
  } else {
    cblas_sgemm(CblasRowMajor, ta, tb, rows, (int)d->n, (int)d->k, (float)g->alpha,
                (const float *)g->a + a_off, (int)d->lda, g->b, (int)d->ldb,
                (float)g->beta, (float *)g->c + c_off, (int)d->ldc);
  }
}

/* Runs g on the calling thread, or split by rows over the default pool
 * when large and OpenBLAS runs one thread (the policy above). */
static void gemm_run(const gemm_call *g) {
  const tf__gemm_dims *d = g->d;
  tf_threadpool *pool = tf_threadpool_default();
  int threads = tf_threadpool_size(pool);
  if (threads > 1 && d->m > 1 && !tf__blas_is_single_threaded(d->m, d->n, d->k) &&
      openblas_get_num_threads() == 1) {
    int64_t grain = (d->m + threads - 1) / threads; /* one chunk per thread */
    tf_parallel_for(pool, d->m, grain, gemm_rows, (void *)g);
  } else {
    gemm_rows((void *)g, 0, d->m);
  }
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
  gemm_run(&(gemm_call){d, false, alpha, beta, a, b, c});
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
  gemm_run(&(gemm_call){d, true, alpha, beta, a, b, c});
  return TF_OK;
}
