/* cpu_training_testlib.h: helpers shared by the optimizer kernel tests
 * (cpu_training_test.c, cpu_training_sparse_test.c): a rig that builds one
 * Apply or SparseApply node on variables named after the op's ref
 * arguments ("var", "accum", "m", ...) and Placeholders named after the
 * others ("lr", "grad", "indices", ...), runs it in a session; random
 * hyperparameters; and the reference: TensorFlow's update formulas
 * written out plainly in float64, element by element. Static inline so
 * each test includes what it uses. */
#ifndef TF_TEST_CPU_TRAINING_TESTLIB_H
#define TF_TEST_CPU_TRAINING_TESTLIB_H

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/framework/op_registry.h"
#include "test/unit/testutil.h"
#include "tf/session.h"

/* ---- sessions and variables ---------------------------------------------- */

/* A VariableV2 `name` of unknown shape with a Placeholder "<name>/init"
 * and an Assign "<name>/assign" (validate_shape false) to set it. */
static inline tf_node *tr_variable(tf_graph *g, const char *name,
                                   tf_dtype dt) {
  tf_attr_kv va[] = {{"dtype", tf_attr_type_v(dt)},
                     {"shape", tf_attr_shape(tf_shape_unknown())}};
  tf_node *v = tt_node(g, "VariableV2", name, NULL, 0, va, 2);
  char pn[128], an[128];
  snprintf(pn, sizeof pn, "%s/init", name);
  snprintf(an, sizeof an, "%s/assign", name);
  tf_node *p = tt_placeholder(g, pn, dt, tf_shape_unknown());
  tf_attr_kv aa[] = {{"validate_shape", tf_attr_bool(false)}};
  tt_node(g, "Assign", an, (tf_output[]){{v, 0}, {p, 0}}, 2, aa, 1);
  return v;
}

static inline tf_session *tr_session(tf_graph *g) {
  tf_session_options o = {.inter_op_threads = 2};
  tf_status st;
  tf_session *s = tf_session_new(g, &o, &st);
  ck_assert_msg(s != NULL, "%s", st.msg);
  return s;
}

static inline tf_code tr_run(tf_session *s, const char *const *names,
                             tf_tensor *const *vals, int n, const char *fetch,
                             tf_tensor **out, const char *target,
                             tf_status *st) {
  tf_run_options o = {.timeout_ms = 20000};
  return tf_session_run(s, &o, names, vals, n, fetch ? &fetch : NULL, out,
                        fetch ? 1 : 0, target ? &target : NULL,
                        target ? 1 : 0, NULL, st);
}

/* Runs target expecting code; returns the message (static). */
static inline const char *tr_run_fail(tf_session *s, const char *const *names,
                                      tf_tensor *const *vals, int n,
                                      const char *target, tf_code code) {
  static tf_status st;
  tf_code rc = tr_run(s, names, vals, n, NULL, NULL, target, &st);
  ck_assert_msg(rc == code, "want %s, got %s: %s", tf_code_name(code),
                tf_code_name(rc), st.msg);
  return st.msg;
}

/* Sets variable `name` (made by tr_variable) to value. */
static inline void tr_assign(tf_session *s, tf_graph *g, const char *name,
                             tf_tensor *value) {
  char pn[128], an[128];
  snprintf(pn, sizeof pn, "%s/init", name);
  snprintf(an, sizeof an, "%s/assign", name);
  (void)g;
  const char *names[] = {pn};
  tf_status st;
  ck_assert_msg(tr_run(s, names, &value, 1, NULL, NULL, an, &st) == TF_OK,
                "%s: %s", an, st.msg);
}

static inline tf_tensor *tr_fetch(tf_session *s, const char *name) {
  tf_tensor *t = NULL;
  tf_status st;
  ck_assert_msg(tr_run(s, NULL, NULL, 0, name, &t, NULL, &st) == TF_OK,
                "%s: %s", name, st.msg);
  return t;
}

/* The variable's value equals want exactly. */
static inline void tr_expect_var(tf_session *s, const char *name,
                                 const tf_tensor *want) {
  tf_tensor *t = tr_fetch(s, name);
  ck_assert_msg(tf_tensor_equal(t, want), "variable %s changed", name);
  tf_tensor_unref(t);
}

/* ---- hyperparameters ----------------------------------------------------- */

typedef struct tr_hp {
  const char *kind; /* "Momentum", ... (op name without Sparse/Apply) */
  double lr, momentum, rho, epsilon, beta1, beta2, beta1_power, beta2_power;
  bool nesterov, update_slots;
  const char *bad_scalar; /* fed as a [2] vector instead of a scalar */
} tr_hp;

static inline const char *tr_kind(const char *op) {
  if (strncmp(op, "Sparse", 6) == 0) {
    op += 6;
  }
  return strncmp(op, "Apply", 5) == 0 ? op + 5 : op;
}

static inline tr_hp tr_hp_random(const char *op, bool nesterov,
                                 bool update_slots) {
  return (tr_hp){.kind = tr_kind(op),
                 .lr = tt_rand_uniform(0.01, 0.2),
                 .momentum = tt_rand_uniform(0.5, 0.95),
                 .rho = tt_rand_uniform(0.8, 0.99),
                 .epsilon = tt_rand_uniform(1e-3, 1e-2),
                 .beta1 = tt_rand_uniform(0.8, 0.95),
                 .beta2 = tt_rand_uniform(0.9, 0.999),
                 .nesterov = nesterov,
                 .update_slots = update_slots};
}

/* Step t (from 1): Adam's beta powers beta^t; lr shrinks a little. */
static inline void tr_hp_step(tr_hp *h, int t) {
  h->beta1_power = pow(h->beta1, t);
  h->beta2_power = pow(h->beta2, t);
  h->lr *= 0.9;
}

/* The value of the op's scalar input `name`. */
static inline double tr_hp_value(const tr_hp *h, const char *name) {
  static const struct {
    const char *name;
    size_t off;
  } map[] = {{"lr", offsetof(tr_hp, lr)},
             {"alpha", offsetof(tr_hp, lr)},
             {"momentum", offsetof(tr_hp, momentum)},
             {"rho", offsetof(tr_hp, rho)},
             {"epsilon", offsetof(tr_hp, epsilon)},
             {"beta1", offsetof(tr_hp, beta1)},
             {"beta2", offsetof(tr_hp, beta2)},
             {"beta1_power", offsetof(tr_hp, beta1_power)},
             {"beta2_power", offsetof(tr_hp, beta2_power)}};
  for (size_t i = 0; i < sizeof map / sizeof *map; i++) {
    if (strcmp(map[i].name, name) == 0) {
      return *(const double *)((const char *)h + map[i].off);
    }
  }
  ck_abort_msg("no hyperparameter %s", name);
  return 0;
}

/* v as stored in dt. */
static inline double tr_q(tf_dtype dt, double v) {
  return dt == TF_FLOAT32 ? (double)(float)v : v;
}

/* ---- the reference ------------------------------------------------------- */

/* One element of TF's update (training_ops.cc), in float64; hyperparameters
 * rounded to dt first, as the kernel receives them. */
static inline void tr_elem(const tr_hp *h, tf_dtype dt, double *w, double *s1,
                           double *s2, double g) {
  const char *k = h->kind;
  double lr = tr_q(dt, h->lr), mu = tr_q(dt, h->momentum);
  double rho = tr_q(dt, h->rho), eps = tr_q(dt, h->epsilon);
  double b1 = tr_q(dt, h->beta1), b2 = tr_q(dt, h->beta2);
  double b1p = tr_q(dt, h->beta1_power), b2p = tr_q(dt, h->beta2_power);
  if (strcmp(k, "GradientDescent") == 0) {
    *w -= lr * g;
  } else if (strcmp(k, "Momentum") == 0) {
    *s1 = mu * *s1 + g;
    *w -= h->nesterov ? lr * g + lr * mu * *s1 : lr * *s1;
  } else if (strcmp(k, "Adagrad") == 0) {
    *s1 += h->update_slots ? g * g : 0;
    *w -= lr * g / sqrt(*s1);
  } else if (strcmp(k, "Adadelta") == 0) {
    *s1 = rho * *s1 + (1 - rho) * g * g;
    double up = sqrt(*s2 + eps) / sqrt(*s1 + eps) * g;
    *w -= lr * up;
    *s2 = rho * *s2 + (1 - rho) * up * up;
  } else if (strcmp(k, "RMSProp") == 0) {
    *s1 = rho * *s1 + (1 - rho) * g * g;
    *s2 = mu * *s2 + lr * g / sqrt(*s1 + eps);
    *w -= *s2;
  } else if (strcmp(k, "Adam") == 0) {
    double lr_t = lr * sqrt(1 - b2p) / (1 - b1p);
    *s1 = b1 * *s1 + (1 - b1) * g;
    *s2 = b2 * *s2 + (1 - b2) * g * g;
    double m = h->nesterov ? b1 * *s1 + (1 - b1) * g : *s1;
    *w -= lr_t * m / (sqrt(*s2) + eps);
  } else {
    ck_abort_msg("no reference for %s", k);
  }
}

/* The reference state: one float64 array per variable. */
typedef struct tr_ref {
  tf_dtype dt;
  tf_shape shape;
  int n_vars;
  int64_t n;
  double *v[3];
} tr_ref;

static inline void tr_ref_fini(tr_ref *r) {
  for (int k = 0; k < 3; k++) {
    free(r->v[k]);
  }
}

/* Element i of every variable through tr_elem with gradient g. */
static inline void tr_ref_elem(tr_ref *r, const tr_hp *h, int64_t i,
                               double g) {
  double dummy1 = 0, dummy2 = 0;
  tr_elem(h, r->dt, &r->v[0][i], r->n_vars > 1 ? &r->v[1][i] : &dummy1,
          r->n_vars > 2 ? &r->v[2][i] : &dummy2, g);
}

static inline void tr_ref_dense(tr_ref *r, const tr_hp *h,
                                const tf_tensor *g) {
  for (int64_t i = 0; i < r->n; i++) {
    tr_ref_elem(r, h, i, tf_tensor_get_f64(g, i));
  }
}

/* Rows indices[i] updated with grad row i, one index after the other. */
static inline void tr_ref_sparse(tr_ref *r, const tr_hp *h,
                                 const tf_tensor *g, const tf_tensor *idx) {
  int64_t row = r->shape.dims[0] ? r->n / r->shape.dims[0] : 0;
  for (int64_t i = 0; i < idx->n; i++) {
    int64_t k = tf_tensor_get_i64(idx, i);
    for (int64_t j = 0; j < row; j++) {
      tr_ref_elem(r, h, k * row + j, tf_tensor_get_f64(g, i * row + j));
    }
  }
}

/* ---- the rig --------------------------------------------------------------- */

typedef struct tr_rig {
  tf_graph *g;
  tf_session *s;
  const tf_op_def *d;
  tf_dtype dt;
  int n_refs;
  const char *refs[3];
} tr_rig;

/* op on variables and Placeholders named after its arguments; indices of
 * idx_dt; the node is "apply". */
static inline tr_rig *tr_rig_new(const char *op, tf_dtype dt, tf_dtype idx_dt,
                                 const tf_attr_kv *attrs, int n_attrs) {
  tr_rig *r = calloc(1, sizeof *r);
  r->g = tf_graph_new();
  r->d = tf_op_lookup(op);
  r->dt = dt;
  ck_assert_msg(r->d != NULL, "no op %s", op);
  tf_output in[16];
  for (int i = 0; i < r->d->n_inputs; i++) {
    const tf_arg_def *a = &r->d->inputs[i];
    tf_node *n;
    if (a->is_ref) {
      n = tr_variable(r->g, a->name, dt);
      r->refs[r->n_refs++] = a->name;
    } else {
      n = tt_placeholder(r->g, a->name,
                         strcmp(a->name, "indices") == 0 ? idx_dt : dt,
                         tf_shape_unknown());
    }
    in[i] = (tf_output){n, 0};
  }
  tt_node(r->g, op, "apply", in, r->d->n_inputs, attrs, n_attrs);
  r->s = tr_session(r->g);
  return r;
}

static inline void tr_rig_free(tr_rig *r) {
  tf_session_free(r->s);
  tf_graph_free(r->g);
  free(r);
}

static inline void tr_rig_assign(tr_rig *r, int k, tf_tensor *value) {
  tr_assign(r->s, r->g, r->refs[k], value);
}

static inline tf_tensor *tr_rig_fetch(tr_rig *r, int k) {
  return tr_fetch(r->s, r->refs[k]);
}

static inline void tr_rig_expect_value(tr_rig *r, int k,
                                       const tf_tensor *want) {
  tr_expect_var(r->s, r->refs[k], want);
}

/* Whether slot k of the rig's op holds a signed quantity (momentum, m)
 * rather than an accumulated square. */
static inline bool tr_signed_slot(const tr_rig *r, int k) {
  const char *n = r->refs[k];
  return strcmp(n, "mom") == 0 || strcmp(n, "m") == 0 ||
         strcmp(tr_kind(r->d->name), "Momentum") == 0;
}

/* Random values for every variable (var in [-1, 1), squares' slots in
 * [0.2, 1.5)), assigned and copied into ref. */
static inline void tr_rig_init_random(tr_rig *r, tf_shape shape, tr_ref *ref) {
  memset(ref, 0, sizeof *ref);
  ref->dt = r->dt;
  ref->shape = shape;
  ref->n_vars = r->n_refs;
  ref->n = tf_shape_num_elements(&shape);
  for (int k = 0; k < r->n_refs; k++) {
    bool sgn = k == 0 || tr_signed_slot(r, k);
    tf_tensor *t = tt_rand(r->dt, shape, sgn ? -1 : 0.2, sgn ? 1 : 1.5);
    tr_rig_assign(r, k, t);
    ref->v[k] = calloc((size_t)(ref->n > 0 ? ref->n : 1), sizeof(double));
    for (int64_t i = 0; i < ref->n; i++) {
      ref->v[k][i] = tf_tensor_get_f64(t, i);
    }
    tf_tensor_unref(t);
  }
}

/* Feeds for one step: every scalar, grad and indices (may be NULL). */
static inline int tr_rig_feeds(tr_rig *r, const tr_hp *h, tf_tensor *g,
                               tf_tensor *idx, const char **names,
                               tf_tensor **vals) {
  int n = 0;
  for (int i = 0; i < r->d->n_inputs; i++) {
    const tf_arg_def *a = &r->d->inputs[i];
    if (a->is_ref) {
      continue;
    }
    names[n] = a->name;
    if (strcmp(a->name, "grad") == 0 || strcmp(a->name, "delta") == 0) {
      vals[n++] = tf_tensor_ref(g);
    } else if (strcmp(a->name, "indices") == 0) {
      vals[n++] = tf_tensor_ref(idx);
    } else {
      double v = tr_hp_value(h, a->name), two[2] = {v, v};
      bool bad = h->bad_scalar && strcmp(h->bad_scalar, a->name) == 0;
      vals[n++] = tt_tensor(r->dt, bad ? tf_shape_of(1, 2) : tf_shape_scalar(),
                            two);
    }
  }
  return n;
}

static inline void tr_rig_step(tr_rig *r, const tr_hp *h, tf_tensor *g,
                               tf_tensor *idx) {
  const char *names[16];
  tf_tensor *vals[16];
  int n = tr_rig_feeds(r, h, g, idx, names, vals);
  tf_status st;
  tf_code rc = tr_run(r->s, names, vals, n, NULL, NULL, "apply", &st);
  tt_free(vals, n);
  ck_assert_msg(rc == TF_OK, "%s: %s", r->d->name, st.msg);
}

static inline const char *tr_rig_step_fail(tr_rig *r, const tr_hp *h,
                                           tf_tensor *g, tf_tensor *idx,
                                           tf_code code) {
  const char *names[16];
  tf_tensor *vals[16];
  int n = tr_rig_feeds(r, h, g, idx, names, vals);
  const char *msg = tr_run_fail(r->s, names, vals, n, "apply", code);
  tt_free(vals, n);
  return msg;
}

/* Every variable against the reference. */
static inline void tr_rig_compare(tr_rig *r, const tr_ref *ref, double atol,
                                  double rtol) {
  for (int k = 0; k < r->n_refs; k++) {
    tf_tensor *got = tr_rig_fetch(r, k);
    tf_tensor *want = tt_tensor(r->dt, ref->shape, ref->v[k]);
    if (!tf_shape_equal(&got->shape, &want->shape) ||
        got->dtype != want->dtype) {
      ck_abort_msg("%s: variable %s has the wrong shape or dtype",
                   r->d->name, r->refs[k]);
    }
    tt_assert_close(got, want, atol, rtol);
    tf_tensor_unref(got);
    tf_tensor_unref(want);
  }
}

#endif
