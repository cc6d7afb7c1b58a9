/* cpu_training.c: CPU kernels of the fused optimizer updates
 * (ops_training.c) and what the sparse ones (cpu_training_sparse.c) share
 * with them. Each optimizer's update is one element-wise pass with
 * TensorFlow's formulas (training_ops.cc), in blocks that stay in L1:
 * a vectorised pass updates the slots and gathers the denominators, a
 * vector square-root pass (SIMD intrinsics: the compiler does not
 * vectorise sqrt while it may set errno) and a vectorised pass moves the
 * variable. Dense updates split the elements over the intra-op pool.
 *
 * Every variable of an update is locked, in address order (so two kernels
 * never deadlock), through nested tf_variable_update calls: each gets a
 * writable value (a copy when a reader holds the old one), the innermost
 * call checks every shape before writing, and a failure leaves all the
 * variables as they were. */
#include "lib/devices/cpu/cpu_training.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "lib/core/framework/op_registry.h"
#include "lib/core/base/util.h"

/* ---- vector square roots ------------------------------------------------- */

static void vsqrt_f32(float *x, int64_t n) {
  int64_t i = 0;
#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16) {
    _mm512_storeu_ps(x + i, _mm512_sqrt_ps(_mm512_loadu_ps(x + i)));
  }
#elif defined(__AVX__)
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(x + i, _mm256_sqrt_ps(_mm256_loadu_ps(x + i)));
  }
#elif defined(__SSE2__)
  for (; i + 4 <= n; i += 4) {
    _mm_storeu_ps(x + i, _mm_sqrt_ps(_mm_loadu_ps(x + i)));
  }
#endif
  for (; i < n; i++) {
    x[i] = sqrtf(x[i]);
  }
}

static void vsqrt_f64(double *x, int64_t n) {
  int64_t i = 0;
#if defined(__AVX512F__)
  for (; i + 8 <= n; i += 8) {
    _mm512_storeu_pd(x + i, _mm512_sqrt_pd(_mm512_loadu_pd(x + i)));
  }
#elif defined(__AVX__)
  for (; i + 4 <= n; i += 4) {
    _mm256_storeu_pd(x + i, _mm256_sqrt_pd(_mm256_loadu_pd(x + i)));
  }
#elif defined(__SSE2__)
  for (; i + 2 <= n; i += 2) {
    _mm_storeu_pd(x + i, _mm_sqrt_pd(_mm_loadu_pd(x + i)));
  }
#endif
  for (; i < n; i++) {
    x[i] = sqrt(x[i]);
  }
}

/* ---- element-wise updates (TF's formulas) -------------------------------- */

#define BLOCK 256
#define FOR_BLOCKS(n)                                                          \
  for (int64_t b0 = 0, m = (n) < BLOCK ? (n) : BLOCK; b0 < (n);                \
       b0 += BLOCK, m = (n) - b0 < BLOCK ? (n) - b0 : BLOCK)

/* T the element type, S the suffix, F the params field (f or d). */
#define SPANS(T, S, F)                                                         \
  static void sgd_##S(const tf__train_params *p, void *const *x,              \
                      const void *gv, int64_t n) {                             \
    T *restrict w = x[0];                                                      \
    const T *restrict g = gv;                                                  \
    const T lr = p->F[0];                                                      \
    for (int64_t i = 0; i < n; i++) {                                          \
      w[i] -= lr * g[i];                                                       \
    }                                                                          \
  }                                                                            \
  static void momentum_##S(const tf__train_params *p, void *const *x,         \
                           const void *gv, int64_t n) {                        \
    T *restrict w = x[0], *restrict a = x[1];                                  \
    const T *restrict g = gv;                                                  \
    const T lr = p->F[0], mu = p->F[1];                                        \
    if (p->nesterov) {                                                         \
      for (int64_t i = 0; i < n; i++) {                                        \
        a[i] = a[i] * mu + g[i];                                               \
        w[i] -= g[i] * lr + a[i] * mu * lr;                                    \
      }                                                                        \
    } else {                                                                   \
      for (int64_t i = 0; i < n; i++) {                                        \
        a[i] = a[i] * mu + g[i];                                               \
        w[i] -= a[i] * lr;                                                     \
      }                                                                        \
    }                                                                          \
  }                                                                            \
  static void adagrad_##S(const tf__train_params *p, void *const *x,          \
                          const void *gv, int64_t n) {                         \
    T *restrict w = x[0], *restrict a = x[1];                                  \
    const T *restrict g = gv;                                                  \
    const T lr = p->F[0];                                                      \
    T den[BLOCK];                                                              \
    FOR_BLOCKS(n) {                                                            \
      T *restrict wb = w + b0, *restrict ab = a + b0;                          \
      const T *restrict gb = g + b0;                                           \
      for (int64_t i = 0; i < m; i++) {                                        \
        ab[i] += p->update_slots ? gb[i] * gb[i] : 0;                          \
        den[i] = ab[i];                                                        \
      }                                                                        \
      vsqrt_##S(den, m);                                                       \
      for (int64_t i = 0; i < m; i++) {                                        \
        wb[i] -= gb[i] * lr / den[i];                                          \
      }                                                                        \
    }                                                                          \
  }                                                                            \
  static void adadelta_##S(const tf__train_params *p, void *const *x,         \
                           const void *gv, int64_t n) {                        \
    T *restrict w = x[0], *restrict a = x[1], *restrict u = x[2];              \
    const T *restrict g = gv;                                                  \
    const T lr = p->F[0], rho = p->F[1], eps = p->F[2], omr = p->F[3];         \
    T num[BLOCK], den[BLOCK];                                                  \
    FOR_BLOCKS(n) {                                                            \
      T *restrict wb = w + b0, *restrict ab = a + b0, *restrict ub = u + b0;   \
      const T *restrict gb = g + b0;                                           \
      for (int64_t i = 0; i < m; i++) {                                        \
        ab[i] = ab[i] * rho + gb[i] * gb[i] * omr;                             \
        num[i] = ub[i] + eps;                                                  \
        den[i] = ab[i] + eps;                                                  \
      }                                                                        \
      vsqrt_##S(num, m);                                                       \
      vsqrt_##S(den, m);                                                       \
      for (int64_t i = 0; i < m; i++) {                                        \
        T up = num[i] / den[i] * gb[i];                                        \
        wb[i] -= up * lr;                                                      \
        ub[i] = ub[i] * rho + up * up * omr;                                   \
      }                                                                        \
    }                                                                          \
  }                                                                            \
  static void rmsprop_##S(const tf__train_params *p, void *const *x,          \
                          const void *gv, int64_t n) {                         \
    T *restrict w = x[0], *restrict ms = x[1], *restrict mom = x[2];           \
    const T *restrict g = gv;                                                  \
    const T lr = p->F[0], mu = p->F[2], eps = p->F[3], omr = p->F[4];          \
    T den[BLOCK];                                                              \
    FOR_BLOCKS(n) {                                                            \
      T *restrict wb = w + b0, *restrict sb = ms + b0;                         \
      T *restrict mb = mom + b0;                                               \
      const T *restrict gb = g + b0;                                           \
      for (int64_t i = 0; i < m; i++) {                                        \
        sb[i] += (gb[i] * gb[i] - sb[i]) * omr;                                \
        den[i] = sb[i] + eps;                                                  \
      }                                                                        \
      vsqrt_##S(den, m);                                                       \
      for (int64_t i = 0; i < m; i++) {                                        \
        mb[i] = mb[i] * mu + gb[i] * lr / den[i];                              \
        wb[i] -= mb[i];                                                        \
      }                                                                        \
    }                                                                          \
  }                                                                            \
  static void adam_##S(const tf__train_params *p, void *const *x,             \
                       const void *gv, int64_t n) {                            \
    T *restrict w = x[0], *restrict m1 = x[1], *restrict m2 = x[2];            \
    const T *restrict g = gv;                                                  \
    const T lr_t = p->F[0], b1 = p->F[1], eps = p->F[3], omb1 = p->F[4],       \
            omb2 = p->F[5];                                                    \
    T den[BLOCK];                                                              \
    FOR_BLOCKS(n) {                                                            \
      T *restrict wb = w + b0, *restrict mb = m1 + b0, *restrict vb = m2 + b0; \
      const T *restrict gb = g + b0;                                           \
      for (int64_t i = 0; i < m; i++) {                                        \
        mb[i] += (gb[i] - mb[i]) * omb1;                                       \
        vb[i] += (gb[i] * gb[i] - vb[i]) * omb2;                               \
        den[i] = vb[i];                                                        \
      }                                                                        \
      vsqrt_##S(den, m);                                                       \
      if (p->nesterov) {                                                       \
        for (int64_t i = 0; i < m; i++) {                                      \
          wb[i] -= ((gb[i] * omb1 + b1 * mb[i]) * lr_t) / (den[i] + eps);      \
        }                                                                      \
      } else {                                                                 \
        for (int64_t i = 0; i < m; i++) {                                      \
          wb[i] -= (mb[i] * lr_t) / (den[i] + eps);                            \
        }                                                                      \
      }                                                                        \
    }                                                                          \
  }

SPANS(float, f32, f)
SPANS(double, f64, d)

/* ---- hyperparameters ----------------------------------------------------- */

/* Scalars in input order -> d[]; the same layout unless said otherwise. */
static void prep_copy(const double *s, tf__train_params *p) {
  memcpy(p->d, s, TF__TRAIN_MAX_SCALARS * sizeof *s);
}

/* lr, rho, epsilon -> lr, rho, epsilon, 1 - rho. */
static void prep_adadelta(const double *s, tf__train_params *p) {
  prep_copy(s, p);
  p->d[3] = 1 - s[1];
}

/* lr, rho, momentum, epsilon -> the same and 1 - rho. */
static void prep_rmsprop(const double *s, tf__train_params *p) {
  prep_copy(s, p);
  p->d[4] = 1 - s[1];
}

/* beta1_power, beta2_power, lr, beta1, beta2, epsilon -> lr_t, beta1,
 * beta2, epsilon, 1 - beta1, 1 - beta2. */
static void prep_adam(const double *s, tf__train_params *p) {
  p->d[0] = s[2] * sqrt(1 - s[1]) / (1 - s[0]);
  p->d[1] = s[3];
  p->d[2] = s[4];
  p->d[3] = s[5];
  p->d[4] = 1 - s[3];
  p->d[5] = 1 - s[4];
}

static const tf__train_kind kinds[] = {
    {"GradientDescent", prep_copy, {sgd_f32, sgd_f64}},
    {"Momentum", prep_copy, {momentum_f32, momentum_f64}},
    {"Adagrad", prep_copy, {adagrad_f32, adagrad_f64}},
    {"Adadelta", prep_adadelta, {adadelta_f32, adadelta_f64}},
    {"RMSProp", prep_rmsprop, {rmsprop_f32, rmsprop_f64}},
    {"Adam", prep_adam, {adam_f32, adam_f64}},
};

const tf__train_kind *tf__train_kind_for(const char *op) {
  if (strncmp(op, "Sparse", 6) == 0) {
    op += 6;
  }
  if (strncmp(op, "Apply", 5) != 0) {
    return NULL;
  }
  for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) {
    if (strcmp(op + 5, kinds[i].name) == 0) {
      return &kinds[i];
    }
  }
  return NULL;
}

/* ---- kernel state -------------------------------------------------------- */

/* Sorts the op's inputs into refs, scalars, grad and indices. */
static tf_code read_layout(const tf_op_def *d, tf__train_state *s,
                           tf_status *st) {
  s->grad_in = s->indices_in = -1;
  for (int i = 0; i < d->n_inputs; i++) {
    const char *name = d->inputs[i].name;
    if (d->inputs[i].is_ref && i == s->n_refs &&
        s->n_refs < TF__TRAIN_MAX_REFS) {
      s->ref_names[s->n_refs++] = name;
    } else if (strcmp(name, "grad") == 0 || strcmp(name, "delta") == 0) {
      s->grad_in = i;
      s->grad_name = name;
    } else if (strcmp(name, "indices") == 0) {
      s->indices_in = i;
    } else if (!d->inputs[i].is_ref && s->n_scalars < TF__TRAIN_MAX_SCALARS) {
      s->scalar_names[s->n_scalars] = name;
      s->scalar_in[s->n_scalars++] = i;
    } else {
      return tf_status_set(st, TF_INTERNAL, "%s: unexpected input %s",
                           d->name, name);
    }
  }
  if (s->n_refs == 0 || s->grad_in < 0) {
    return tf_status_set(st, TF_INTERNAL, "%s: no var or grad input",
                         d->name);
  }
  return TF_OK;
}

static tf_code read_flags(const tf_node *node, tf__train_state *s,
                          tf_status *st) {
  TF_TRY(tf_node_attr_get_type(node, "T", &s->dtype, st));
  s->update_slots = true;
  if (tf_node_attr(node, "use_nesterov") != NULL) {
    TF_TRY(tf_node_attr_get_bool(node, "use_nesterov", &s->nesterov, st));
  }
  if (tf_node_attr(node, "update_slots") != NULL) {
    TF_TRY(tf_node_attr_get_bool(node, "update_slots", &s->update_slots, st));
  }
  return TF_OK;
}

tf_code tf__train_init(const tf_node *node, void **state, tf_status *st) {
  const char *op = tf_node_op(node);
  const tf_op_def *d = tf_op_lookup(op);
  const tf__train_kind *k = tf__train_kind_for(op);
  if (d == NULL || k == NULL) {
    return tf_status_set(st, TF_INTERNAL, "no optimizer update for op %s",
                         op);
  }
  tf__train_state *s = tf__xcalloc(1, sizeof *s);
  s->kind = k;
  tf_code rc = read_layout(d, s, st);
  if (rc == TF_OK) {
    rc = read_flags(node, s, st);
  }
  if (rc != TF_OK) {
    free(s);
    return rc;
  }
  *state = s;
  return TF_OK;
}

void tf__train_free_state(void *state) { free(state); }

/* ---- the driver ---------------------------------------------------------- */

/* The variables on the ref inputs: distinct, of dtype T. */
static tf_code collect_refs(tf__train_call *c) {
  tf_kernel_ctx *ctx = c->ctx;
  const tf__train_state *s = c->s;
  TF_TRY(tf_kernel_need_step(ctx));
  for (int i = 0; i < s->n_refs; i++) {
    tf_resource *r = ctx->in_refs ? ctx->in_refs[i] : NULL;
    tf_variable *v = tf_variable_cast(r);
    if (v == NULL) {
      return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                             "%s must be a ref to a variable, got %s",
                             s->ref_names[i], r ? r->type->name : "nothing");
    }
    if (v->dtype != s->dtype) {
      return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                             "%s (variable %s) is %s but T is %s",
                             s->ref_names[i], v->base.name,
                             tf_dtype_name(v->dtype), tf_dtype_name(s->dtype));
    }
    for (int j = 0; j < i; j++) {
      if (c->vars[j] == v) {
        return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                               "%s and %s are the same variable %s",
                               s->ref_names[j], s->ref_names[i],
                               v->base.name);
      }
    }
    c->vars[i] = v;
  }
  return TF_OK;
}

static tf_code check_dtype(tf_kernel_ctx *ctx, const tf_tensor *t,
                           const char *name, tf_dtype want) {
  if (t == NULL || t->dtype != want) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "%s must be %s, got %s",
                           name, tf_dtype_name(want),
                           t ? tf_dtype_name(t->dtype) : "nothing");
  }
  return TF_OK;
}

/* Scalars into params; grad and indices checked for dtype (and rank). */
static tf_code collect_inputs(tf__train_call *c) {
  tf_kernel_ctx *ctx = c->ctx;
  const tf__train_state *s = c->s;
  double v[TF__TRAIN_MAX_SCALARS] = {0};
  char buf[96];
  for (int i = 0; i < s->n_scalars; i++) {
    const tf_tensor *t = ctx->inputs[s->scalar_in[i]];
    TF_TRY(check_dtype(ctx, t, s->scalar_names[i], s->dtype));
    if (t->shape.rank != 0) {
      return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "%s is not a scalar: %s",
                             s->scalar_names[i],
                             tf_shape_str(&t->shape, buf, sizeof buf));
    }
    v[i] = tf_tensor_get_f64(t, 0);
  }
  s->kind->prep(v, &c->p);
  for (int i = 0; i < TF__TRAIN_MAX_SCALARS + 2; i++) {
    c->p.f[i] = (float)c->p.d[i];
  }
  c->p.nesterov = s->nesterov;
  c->p.update_slots = s->update_slots;
  c->grad = ctx->inputs[s->grad_in];
  TF_TRY(check_dtype(ctx, c->grad, s->grad_name, s->dtype));
  if (s->indices_in < 0) {
    return TF_OK;
  }
  const tf_tensor *idx = ctx->inputs[s->indices_in];
  if (idx == NULL || (idx->dtype != TF_INT32 && idx->dtype != TF_INT64)) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "indices must be int32 or int64, got %s",
                           idx ? tf_dtype_name(idx->dtype) : "nothing");
  }
  if (idx->shape.rank != 1) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT,
                           "indices must be one-dimensional, got %s",
                           tf_shape_str(&idx->shape, buf, sizeof buf));
  }
  c->indices = idx;
  return TF_OK;
}

/* Locks vars[order[depth]], then the next, ...; the innermost runs fn. */
static tf_code lock_step(void *arg, tf_variable *v, tf_tensor *value,
                         tf_status *st) {
  tf__train_call *c = arg;
  c->vals[c->order[c->depth]] = value;
  c->depth++;
  tf_code rc = c->depth == c->s->n_refs
                   ? c->fn(c, st)
                   : tf_variable_update(c->vars[c->order[c->depth]],
                                        lock_step, c, st);
  c->depth--;
  return rc;
}

tf_code tf__train_run(tf_kernel_ctx *ctx, tf__train_locked_fn fn) {
  tf__train_call c = {.ctx = ctx, .s = ctx->state, .fn = fn};
  TF_TRY(collect_refs(&c));
  TF_TRY(collect_inputs(&c));
  int n = c.s->n_refs;
  for (int i = 0; i < n; i++) {
    int j = i;
    for (; j > 0 && (uintptr_t)c.vars[c.order[j - 1]] > (uintptr_t)c.vars[i];
         j--) {
      c.order[j] = c.order[j - 1];
    }
    c.order[j] = i;
  }
  tf_status local;
  tf_status_init(&local);
  tf_code rc = tf_variable_update(c.vars[c.order[0]], lock_step, &c, &local);
  if (rc != TF_OK) {
    return tf_kernel_error(ctx, rc, "%s", local.msg);
  }
  tf_kernel_set_ref_output(ctx, 0, &c.vars[0]->base);
  return TF_OK;
}

tf_code tf__train_check_slots(const tf__train_call *c, tf_status *st) {
  const tf_tensor *var = c->vals[0];
  char a[96], b[96];
  for (int i = 1; i < c->s->n_refs; i++) {
    if (!tf_shape_equal(&var->shape, &c->vals[i]->shape)) {
      return tf_status_set(st, TF_INVALID_ARGUMENT,
                           "var (%s) and %s (%s) do not have the same shape "
                           "%s %s", c->vars[0]->base.name, c->s->ref_names[i],
                           c->vars[i]->base.name,
                           tf_shape_str(&var->shape, a, sizeof a),
                           tf_shape_str(&c->vals[i]->shape, b, sizeof b));
    }
  }
  return TF_OK;
}

/* ---- dense updates ------------------------------------------------------- */

static void dense_range(void *arg, int64_t b, int64_t e) {
  const tf__train_call *c = arg;
  size_t es = tf_dtype_size(c->s->dtype);
  void *x[TF__TRAIN_MAX_REFS];
  for (int i = 0; i < c->s->n_refs; i++) {
    x[i] = (char *)c->vals[i]->data + (size_t)b * es;
  }
  const char *g = (const char *)c->grad->data + (size_t)b * es;
  c->s->kind->span[c->s->dtype == TF_FLOAT64](&c->p, x, g, e - b);
}

static tf_code dense_locked(tf__train_call *c, tf_status *st) {
  const tf_tensor *var = c->vals[0];
  char a[96], b[96];
  TF_TRY(tf__train_check_slots(c, st));
  if (!tf_shape_equal(&var->shape, &c->grad->shape)) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "var (%s) and %s do not have the same shape %s %s",
                         c->vars[0]->base.name,
                         c->s->grad_name,
                         tf_shape_str(&var->shape, a, sizeof a),
                         tf_shape_str(&c->grad->shape, b, sizeof b));
  }
  tf_parallel_for(c->ctx->pool, var->n, TF__TRAIN_GRAIN, dense_range, c);
  return TF_OK;
}

static tf_code dense_compute(tf_kernel_ctx *ctx) {
  return tf__train_run(ctx, dense_locked);
}

/* ---- registration -------------------------------------------------------- */

#define DENSE(name)                                                            \
  {.op = name, .device_type = TF_DEVICE_CPU, .dtype = TF_FLOAT32,              \
   .init = tf__train_init, .compute = dense_compute,                           \
   .free_state = tf__train_free_state},                                        \
      {.op = name, .device_type = TF_DEVICE_CPU, .dtype = TF_FLOAT64,          \
       .init = tf__train_init, .compute = dense_compute,                       \
       .free_state = tf__train_free_state}

static const tf_kernel_def training_kernels[] = {
    DENSE("ApplyGradientDescent"), DENSE("ApplyMomentum"),
    DENSE("ApplyAdagrad"),         DENSE("ApplyAdadelta"),
    DENSE("ApplyRMSProp"),
    DENSE("ApplyAdam"),
};

TF_REGISTER_KERNELS(training_kernels)
