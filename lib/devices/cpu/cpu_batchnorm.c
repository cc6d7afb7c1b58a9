/* cpu_batchnorm.c: CPU kernels of FusedBatchNormV3 and FusedBatchNormGradV3
 * (T float32 with U float32, T float16/bfloat16 with U float32, and T = U =
 * float64), following TensorFlow's CPU kernels (fused_batch_norm_op.cc) in
 * NHWC and NCHW. Training normalises with the batch mean and the biased
 * batch variance and returns the batch mean and the Bessel-corrected
 * variance (n / max(n - 1, 1)), blended into the given running statistics
 * when exponential_avg_factor != 1; reserve_space_1/2 are the batch mean and
 * the biased variance (what the gradient reads); reserve_space_3 is a
 * scalar 0. An empty x gives NaN statistics, as TF. Statistics and results
 * are computed in double and rounded once to the output dtype, so results
 * do not depend on the thread count. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/half.h"
#include "lib/core/base/util.h"
#include "lib/core/framework/kernel.h"

/* ---- element access --------------------------------------------------------- */

static double ld(const void *p, tf_dtype dt, int64_t i) {
  switch (dt) {
    case TF_FLOAT64: return ((const double *)p)[i];
    case TF_FLOAT32: return ((const float *)p)[i];
    case TF_FLOAT16: return tf__f16_to_f32(((const uint16_t *)p)[i]);
    default: return tf__bf16_to_f32(((const uint16_t *)p)[i]);
  }
}

/* Stores v; 16-bit types round through float32, as TF's cast from U. */
static void st(void *p, tf_dtype dt, int64_t i, double v) {
  switch (dt) {
    case TF_FLOAT64: ((double *)p)[i] = v; break;
    case TF_FLOAT32: ((float *)p)[i] = (float)v; break;
    case TF_FLOAT16: ((uint16_t *)p)[i] = tf__f32_to_f16((float)v); break;
    default: ((uint16_t *)p)[i] = tf__f32_to_bf16((float)v); break;
  }
}

/* ---- attrs ------------------------------------------------------------------ */

typedef struct fbn_state {
  double eps;    /* epsilon as TF's float attr */
  double factor; /* exponential_avg_factor (1 for the grad op) */
  bool nchw, training;
} fbn_state;

static tf_code fbn_read(const tf_node *node, fbn_state *s, tf_status *st_) {
  const char *fmt;
  tf_dtype t, u;
  TF_TRY(tf_node_attr_get_float(node, "epsilon", &s->eps, st_));
  TF_TRY(tf_node_attr_get_string(node, "data_format", &fmt, st_));
  TF_TRY(tf_node_attr_get_bool(node, "is_training", &s->training, st_));
  TF_TRY(tf_node_attr_get_type(node, "T", &t, st_));
  TF_TRY(tf_node_attr_get_type(node, "U", &u, st_));
  s->eps = (float)s->eps;
  s->factor = 1;
  if (tf_node_attr(node, "exponential_avg_factor") != NULL) {
    TF_TRY(tf_node_attr_get_float(node, "exponential_avg_factor", &s->factor,
                                  st_));
    s->factor = (float)s->factor;
  }
  if (strcmp(fmt, "NHWC") != 0 && strcmp(fmt, "NCHW") != 0) {
    return tf_status_set(st_, TF_INVALID_ARGUMENT,
                         "unknown data_format '%s' (want NHWC or NCHW)", fmt);
  }
  s->nchw = strcmp(fmt, "NCHW") == 0;
  if ((t == TF_FLOAT64) != (u == TF_FLOAT64)) {
    return tf_status_set(st_, TF_INVALID_ARGUMENT,
                         "U must be float64 exactly when T is float64 (float32 "
                         "otherwise), got T=%s and U=%s", tf_dtype_name(t),
                         tf_dtype_name(u));
  }
  return TF_OK;
}

static tf_code fbn_init(const tf_node *node, void **state, tf_status *st_) {
  fbn_state *s = tf__xcalloc(1, sizeof *s);
  tf_code code = fbn_read(node, s, st_);
  if (code != TF_OK) {
    free(s);
    tf_status_prefix(st_, "node '%s' (%s)", tf_node_name(node),
                     tf_node_op(node));
    return code;
  }
  *state = s;
  return TF_OK;
}

/* ---- layout and the per-channel passes ------------------------------------- */

/* x as [outer, c, inner]: NHWC has inner 1, NCHW outer N and inner H*W. */
typedef struct fbn_layout {
  int64_t outer, c, inner, rest; /* rest = elements per channel */
} fbn_layout;

static fbn_layout layout_of(const tf_shape *x, bool nchw) {
  fbn_layout l;
  l.c = x->dims[nchw ? 1 : 3];
  l.inner = nchw ? x->dims[2] * x->dims[3] : 1;
  l.outer = nchw ? x->dims[0] : x->dims[0] * x->dims[1] * x->dims[2];
  l.rest = l.outer * l.inner;
  return l;
}

/* Per channel: s1 = sum(a), and s2 = sum(b * (x - m)) when b is not NULL
 * (b == x: the sum of squared deviations, each (x - m) * (x - m)). */
static void channel_sums(const fbn_layout *l, tf_dtype dt, const void *a,
                         const void *b, const void *x, const double *m,
                         double *s1, double *s2) {
  for (int64_t ch = 0; ch < l->c; ch++) s1[ch] = s2[ch] = 0;
  for (int64_t o = 0; o < l->outer; o++) {
    for (int64_t ch = 0; ch < l->c; ch++) {
      int64_t base = (o * l->c + ch) * l->inner;
      double t1 = 0, t2 = 0;
      for (int64_t k = 0; k < l->inner; k++) {
        t1 += ld(a, dt, base + k);
        if (b != NULL) {
          double d = ld(x, dt, base + k) - m[ch];
          t2 += (b == x ? d : ld(b, dt, base + k)) * d;
        }
      }
      s1[ch] += t1;
      s2[ch] += t2;
    }
  }
}

/* out = A[ch] * dy + B[ch] * (x - m[ch]) + C[ch] (dy NULL: no A term). */
typedef struct affine_args {
  fbn_layout l;
  tf_dtype dt;
  const void *dy, *x;
  void *out;
  const double *m, *A, *B, *C;
} affine_args;

static void affine_rows(void *arg, int64_t begin, int64_t end) {
  const affine_args *a = arg;
  for (int64_t r = begin; r < end; r++) {
    int64_t ch = r % a->l.c, base = r * a->l.inner;
    for (int64_t k = 0; k < a->l.inner; k++) {
      double v = a->B[ch] * (ld(a->x, a->dt, base + k) - a->m[ch]) + a->C[ch];
      if (a->dy != NULL) {
        v += a->A[ch] * ld(a->dy, a->dt, base + k);
      }
      st(a->out, a->dt, base + k, v);
    }
  }
}

static void affine(tf_kernel_ctx *ctx, const affine_args *a) {
  int64_t grain = TF_MAX(1, TF_PARALLEL_GRAIN / TF_MAX(a->l.inner, 1));
  tf_parallel_for(ctx->pool, a->l.outer * a->l.c, grain, affine_rows,
                  (void *)a);
}

/* ---- input checks ----------------------------------------------------------- */

static tf_code want_vec(tf_kernel_ctx *ctx, int i, const char *what, int64_t c,
                        bool check_len) {
  const tf_tensor *t = ctx->inputs[i];
  char b[128];
  if (t->shape.rank != 1) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "%s must be 1-dimensional, got shape %s", what,
                           tf_shape_str(&t->shape, b, sizeof b));
  }
  if (check_len && t->n != c) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "%s must have the same number of elements as the "
                           "channels of x, got %lld and %lld", what,
                           (long long)t->n, (long long)c);
  }
  return TF_OK;
}

static tf_code want_4d(tf_kernel_ctx *ctx, int i, const char *what) {
  const tf_tensor *t = ctx->inputs[i];
  if (t->shape.rank != 4) {
    char b[128];
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "%s must be 4-dimensional, got shape %s", what,
                           tf_shape_str(&t->shape, b, sizeof b));
  }
  return TF_OK;
}

/* Allocates outputs first..last as U vectors of length n. */
static tf_code alloc_vecs(tf_kernel_ctx *ctx, int first, int last, tf_dtype u,
                          int64_t n, tf_tensor **out) {
  tf_shape s = tf_shape_of(1, n);
  for (int i = first; i <= last; i++) {
    TF_TRY(tf_kernel_alloc_output(ctx, i, u, &s, &out[i]));
  }
  return TF_OK;
}

/* ---- FusedBatchNormV3 ------------------------------------------------------- */

static tf_code fbn_check(tf_kernel_ctx *ctx, const fbn_state *s, int64_t c) {
  TF_TRY(want_vec(ctx, 1, "scale", c, true));
  TF_TRY(want_vec(ctx, 2, "offset", c, true));
  bool used = !s->training || s->factor != 1;
  TF_TRY(want_vec(ctx, 3, "mean", c, used));
  return want_vec(ctx, 4, "variance", c, used);
}

/* Outputs 1..4 from the statistics the kernel normalised with. */
static void fbn_stats_out(const fbn_state *s, tf_tensor *const *in,
                          tf_tensor **out, const double *mean,
                          const double *var, int64_t rest) {
  tf_dtype u = out[1]->dtype;
  double adj = s->training ? (double)rest / (double)(rest > 1 ? rest - 1 : 1)
                           : 1;
  double f = s->factor, g = 1 - f;
  for (int64_t ch = 0; ch < out[1]->n; ch++) {
    double m = mean[ch], v = var[ch] * adj;
    if (s->training && f != 1) {
      m = g * ld(in[3]->data, u, ch) + f * m;
      v = g * ld(in[4]->data, u, ch) + f * v;
    }
    st(out[1]->data, u, ch, m);
    st(out[2]->data, u, ch, v);
    st(out[3]->data, u, ch, mean[ch]);
    st(out[4]->data, u, ch, var[ch]);
  }
}

/* y, and mean / var per channel (from x, or the given ones). */
static void fbn_normalise(tf_kernel_ctx *ctx, const fbn_state *s,
                          const fbn_layout *l, double *mean, double *var,
                          double *work) {
  tf_tensor *const *in = ctx->inputs;
  const tf_tensor *x = in[0];
  tf_dtype u = in[1]->dtype;
  double *scale = work, *zero = work + l->c, *off = work + 2 * l->c;
  for (int64_t ch = 0; ch < l->c; ch++) zero[ch] = 0;
  if (s->training) {
    channel_sums(l, x->dtype, x->data, NULL, x->data, zero, mean, var);
    for (int64_t ch = 0; ch < l->c; ch++) mean[ch] /= (double)l->rest;
    /* off is scratch here (the sums of x again); it is set below */
    channel_sums(l, x->dtype, x->data, x->data, x->data, mean, off, var);
    for (int64_t ch = 0; ch < l->c; ch++) var[ch] /= (double)l->rest;
  } else {
    for (int64_t ch = 0; ch < l->c; ch++) {
      mean[ch] = ld(in[3]->data, u, ch);
      var[ch] = ld(in[4]->data, u, ch);
    }
  }
  for (int64_t ch = 0; ch < l->c; ch++) {
    scale[ch] = ld(in[1]->data, u, ch) / sqrt(var[ch] + s->eps);
    off[ch] = ld(in[2]->data, u, ch);
  }
  affine_args a = {.l = *l, .dt = x->dtype, .x = x->data,
                   .out = ctx->outputs[0]->data, .m = mean, .A = zero,
                   .B = scale, .C = off};
  affine(ctx, &a);
}

static tf_code fbn_kernel(tf_kernel_ctx *ctx) {
  const fbn_state *s = ctx->state;
  const tf_tensor *x = ctx->inputs[0];
  TF_TRY(want_4d(ctx, 0, "x"));
  fbn_layout l = layout_of(&x->shape, s->nchw);
  TF_TRY(fbn_check(ctx, s, l.c));
  tf_dtype u = ctx->inputs[1]->dtype;
  tf_tensor *out[6];
  tf_shape scalar = tf_shape_scalar();
  TF_TRY(tf_kernel_alloc_output(ctx, 0, x->dtype, &x->shape, &out[0]));
  TF_TRY(alloc_vecs(ctx, 1, 4, u, l.c, out));
  TF_TRY(tf_kernel_alloc_output(ctx, 5, u, &scalar, &out[5]));
  st(out[5]->data, u, 0, 0);
  if (x->n == 0) {
    for (int i = 1; i <= 4; i++) {
      for (int64_t ch = 0; ch < l.c; ch++) st(out[i]->data, u, ch, NAN);
    }
    return TF_OK;
  }
  double *buf = tf__xmalloc((size_t)l.c * 5 * sizeof *buf);
  fbn_normalise(ctx, s, &l, buf, buf + l.c, buf + 2 * l.c);
  fbn_stats_out(s, ctx->inputs, out, buf, buf + l.c, l.rest);
  free(buf);
  return TF_OK;
}

/* ---- FusedBatchNormGradV3 --------------------------------------------------- */

static tf_code fbn_grad_check(tf_kernel_ctx *ctx, const fbn_state *s,
                              int64_t c) {
  const tf_tensor *dy = ctx->inputs[0], *x = ctx->inputs[1];
  if (!tf_shape_equal(&dy->shape, &x->shape)) {
    char a[128], b[128];
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "x and y_backprop must have the same shape, got %s "
                           "and %s", tf_shape_str(&x->shape, a, sizeof a),
                           tf_shape_str(&dy->shape, b, sizeof b));
  }
  TF_TRY(want_vec(ctx, 2, "scale", c, true));
  TF_TRY(want_vec(ctx, 3, "reserve_space_1", c, true));
  TF_TRY(want_vec(ctx, 4, "reserve_space_2", c, true));
  if (!s->training && s->nchw) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "with is_training=false only the NHWC data_format "
                           "is supported (as TF: the gradient transposes)");
  }
  return TF_OK;
}

/* Per-channel coefficients of dx = A dy + B (x - m) + C and the scale and
 * offset gradients, from s1 = sum(dy) and s2 = sum(dy (x - m)). */
static void grad_coefs(const fbn_state *s, const tf_tensor *scale,
                       const tf_tensor *var, const fbn_layout *l,
                       const double *s1, const double *s2, double *A,
                       double *B, double *C, tf_tensor **out) {
  tf_dtype u = scale->dtype;
  double n = (double)l->rest;
  for (int64_t ch = 0; ch < l->c; ch++) {
    double c0 = 1 / sqrt(ld(var->data, u, ch) + s->eps);
    A[ch] = ld(scale->data, u, ch) * c0;
    B[ch] = s->training ? -A[ch] * c0 * c0 * s2[ch] / n : 0;
    C[ch] = s->training ? -A[ch] * s1[ch] / n : 0;
    st(out[1]->data, u, ch, s2[ch] * c0);
    st(out[2]->data, u, ch, s1[ch]);
  }
}

static tf_code fbn_grad_kernel(tf_kernel_ctx *ctx) {
  const fbn_state *s = ctx->state;
  tf_tensor *const *in = ctx->inputs;
  TF_TRY(want_4d(ctx, 0, "y_backprop"));
  TF_TRY(want_4d(ctx, 1, "x"));
  fbn_layout l = layout_of(&in[1]->shape, s->nchw);
  TF_TRY(fbn_grad_check(ctx, s, l.c));
  tf_dtype u = in[2]->dtype, t = in[1]->dtype;
  tf_tensor *out[5];
  TF_TRY(tf_kernel_alloc_output(ctx, 0, t, &in[1]->shape, &out[0]));
  TF_TRY(alloc_vecs(ctx, 1, 2, u, l.c, out));
  TF_TRY(alloc_vecs(ctx, 3, 4, u, 0, out));
  if (in[1]->n == 0) {
    for (int64_t ch = 0; ch < l.c; ch++) {
      st(out[1]->data, u, ch, 0);
      st(out[2]->data, u, ch, 0);
    }
    return TF_OK;
  }
  double *buf = tf__xmalloc((size_t)l.c * 6 * sizeof *buf);
  double *m = buf, *s1 = buf + l.c, *s2 = buf + 2 * l.c;
  double *A = buf + 3 * l.c, *B = buf + 4 * l.c, *C = buf + 5 * l.c;
  for (int64_t ch = 0; ch < l.c; ch++) m[ch] = ld(in[3]->data, u, ch);
  channel_sums(&l, t, in[0]->data, in[0]->data, in[1]->data, m, s1, s2);
  grad_coefs(s, in[2], in[4], &l, s1, s2, A, B, C, out);
  affine_args a = {.l = l, .dt = t, .dy = in[0]->data, .x = in[1]->data,
                   .out = out[0]->data, .m = m, .A = A, .B = B, .C = C};
  affine(ctx, &a);
  free(buf);
  return TF_OK;
}

/* ---- registration ------------------------------------------------------------ */

#define FBN_KERNELS(name, fn, dt)                                              \
  {.op = name, .device_type = TF_DEVICE_CPU, .dtype = dt, .init = fbn_init,    \
   .compute = fn, .free_state = free}

static const tf_kernel_def batchnorm_kernels[] = {
    FBN_KERNELS("FusedBatchNormV3", fbn_kernel, TF_FLOAT32),
    FBN_KERNELS("FusedBatchNormV3", fbn_kernel, TF_FLOAT64),
    FBN_KERNELS("FusedBatchNormV3", fbn_kernel, TF_FLOAT16),
    FBN_KERNELS("FusedBatchNormV3", fbn_kernel, TF_BFLOAT16),
    FBN_KERNELS("FusedBatchNormGradV3", fbn_grad_kernel, TF_FLOAT32),
    FBN_KERNELS("FusedBatchNormGradV3", fbn_grad_kernel, TF_FLOAT64),
    FBN_KERNELS("FusedBatchNormGradV3", fbn_grad_kernel, TF_FLOAT16),
    FBN_KERNELS("FusedBatchNormGradV3", fbn_grad_kernel, TF_BFLOAT16),
};

TF_REGISTER_KERNELS(batchnorm_kernels)
