/* job_spec_opt.c: the optimizer section of a job spec (docs/jobs.md
 * "optimizer"): one of train.h's optimizers with its own parameters only
 * (a parameter of another optimizer is an error naming the ones that
 * apply), a learning-rate schedule of train_schedule.c's, and optional
 * clipping by global norm. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "lib/runtime/job_spec_impl.h"

enum {
  O_NAME, O_LR, O_MOMENTUM, O_NESTEROV, O_ACCUM, O_RHO, O_BETA1, O_BETA2,
  O_EPSILON, O_SCHEDULE, O_CLIP, O_COUNT
};
static const char *const opt_keys[O_COUNT] = {
    "name", "learning_rate", "momentum", "use_nesterov",
    "initial_accumulator_value", "rho", "beta1", "beta2", "epsilon",
    "schedule", "clip_norm"};
#define B(k) (1u << (k))
#define COMMON (B(O_NAME) | B(O_LR) | B(O_SCHEDULE) | B(O_CLIP))
/* Indexed by tf_optimizer_kind. */
static const unsigned opt_takes[] = {
    COMMON,
    COMMON | B(O_MOMENTUM) | B(O_NESTEROV),
    COMMON | B(O_ACCUM),
    COMMON | B(O_RHO) | B(O_EPSILON),
    COMMON | B(O_RHO) | B(O_MOMENTUM) | B(O_EPSILON),
    COMMON | B(O_BETA1) | B(O_BETA2) | B(O_EPSILON)};

/* ---- schedule ------------------------------------------------------------ */

enum { S_TYPE, S_STEPS, S_RATE, S_STAIR, S_END, S_POWER, S_CYCLE, S_BOUNDS,
       S_VALUES, S_COUNT };
static const char *const sched_keys[S_COUNT] = {
    "type", "decay_steps", "decay_rate", "staircase", "end_learning_rate",
    "power", "cycle", "boundaries", "values"};
static const char *const sched_names[] = {
    "exponential_decay", "inverse_time_decay", "polynomial_decay",
    "piecewise_constant"};
static const unsigned sched_takes[] = {
    B(S_TYPE) | B(S_STEPS) | B(S_RATE) | B(S_STAIR),
    B(S_TYPE) | B(S_STEPS) | B(S_RATE) | B(S_STAIR),
    B(S_TYPE) | B(S_STEPS) | B(S_END) | B(S_POWER) | B(S_CYCLE),
    B(S_TYPE) | B(S_BOUNDS) | B(S_VALUES)};
static const unsigned sched_needs[] = {
    B(S_STEPS) | B(S_RATE), B(S_STEPS) | B(S_RATE), B(S_STEPS),
    B(S_BOUNDS) | B(S_VALUES)};

/* Keys of table that kind's mask does not take, or missing needed ones. */
static tf_code check_takes(tf__spec *c, const yaml_node_t *m, const char *path,
                           const char *what, const char *const *keys,
                           int count, unsigned takes, unsigned needs,
                           yaml_node_t **f) {
  char list[320] = "";
  for (int k = 0; k < count; k++) {
    if (takes & B(k)) {
      size_t l = strlen(list);
      snprintf(list + l, sizeof list - l, "%s%s", l ? ", " : "", keys[k]);
    }
  }
  for (int k = 0; k < count; k++) {
    if (f[k] != NULL && !(takes & B(k))) {
      return tf__spec_err(c, f[k], path, "%s takes no '%s' (its keys: %s)",
                          what, keys[k], list);
    }
    if (f[k] == NULL && (needs & B(k))) {
      return tf__spec_err(c, m, path, "%s needs '%s'", what, keys[k]);
    }
  }
  return TF_OK;
}

/* piecewise_constant: n increasing integer step boundaries and n + 1
 * positive learning rates. */
static tf_code parse_piecewise(tf__spec *c, yaml_node_t **f,
                               tf_job_schedule *sc) {
  const char *pb = "optimizer.schedule.boundaries";
  const char *pv = "optimizer.schedule.values";
  int nb, nv;
  TF_TRY(tf__spec_seq(c, f[S_BOUNDS], pb, 1, TF_JOB_BOUNDARIES_MAX, false,
                      &nb));
  TF_TRY(tf__spec_seq(c, f[S_VALUES], pv, 2, TF_JOB_BOUNDARIES_MAX + 1, false,
                      &nv));
  if (nv != nb + 1) {
    return tf__spec_err(c, f[S_VALUES], pv, "expected %d values (one more "
                        "than the %d boundaries), got %d", nb + 1, nb, nv);
  }
  sc->boundaries = tf__xcalloc((size_t)nb, sizeof *sc->boundaries);
  sc->values = tf__xcalloc((size_t)nv, sizeof *sc->values);
  sc->n_boundaries = nb;
  for (int i = 0; i < nb; i++) {
    int64_t x;
    yaml_node_t *item = tf__spec_item(c, f[S_BOUNDS], i);
    TF_TRY(tf__spec_int(c, item, pb, 1, 1LL << 53, " (steps)", &x));
    if (i > 0 && (double)x <= sc->boundaries[i - 1]) {
      return tf__spec_err(c, item, pb, "boundaries must increase: %lld after "
                          "%.0f", (long long)x, sc->boundaries[i - 1]);
    }
    sc->boundaries[i] = (double)x;
  }
  for (int i = 0; i < nv; i++) {
    TF_TRY(tf__spec_float(c, tf__spec_item(c, f[S_VALUES], i), pv, 0, true,
                          1e6, false, &sc->values[i]));
  }
  return TF_OK;
}

static tf_code parse_schedule(tf__spec *c, const yaml_node_t *v,
                              tf_job_schedule *sc) {
  const char *path = "optimizer.schedule";
  yaml_node_t *f[S_COUNT];
  int k;
  TF_TRY(tf__spec_fields(c, v, path, sched_keys, S_COUNT, f));
  if (f[S_TYPE] == NULL) {
    return tf__spec_err(c, v, path, "needs 'type' (exponential_decay, "
                        "inverse_time_decay, polynomial_decay or "
                        "piecewise_constant)");
  }
  TF_TRY(tf__spec_enum(c, f[S_TYPE], "optimizer.schedule.type", sched_names,
                       4, &k));
  char what[64];
  snprintf(what, sizeof what, "the %s schedule", sched_names[k]);
  TF_TRY(check_takes(c, v, path, what, sched_keys, S_COUNT, sched_takes[k],
                     sched_needs[k], f));
  sc->kind = (tf_job_schedule_kind)(k + 1);
  sc->end_learning_rate = 0.0001; /* TF1's defaults */
  sc->power = 1.0;
  if (sc->kind == TF_JOB_SCHEDULE_PIECEWISE) {
    return parse_piecewise(c, f, sc);
  }
  char p[64];
  double *dst[] = {NULL, &sc->decay_steps, &sc->decay_rate, NULL,
                   &sc->end_learning_rate, &sc->power};
  for (int i = S_STEPS; i <= S_POWER; i++) {
    snprintf(p, sizeof p, "%s.%s", path, sched_keys[i]);
    if (f[i] != NULL && dst[i] != NULL) {
      TF_TRY(tf__spec_float(c, f[i], p, 0, i != S_END, 1e12, false, dst[i]));
    }
  }
  if (f[S_STAIR] != NULL) {
    TF_TRY(tf__spec_bool(c, f[S_STAIR], "optimizer.schedule.staircase",
                         &sc->staircase));
  }
  if (f[S_CYCLE] != NULL) {
    TF_TRY(tf__spec_bool(c, f[S_CYCLE], "optimizer.schedule.cycle",
                         &sc->cycle));
  }
  return TF_OK;
}

/* ---- optimizer ----------------------------------------------------------- */

/* The numeric parameters: (lo, lo_open, hi, hi_open) per key. */
static tf_code parse_params(tf__spec *c, yaml_node_t **f,
                            tf_optimizer_options *o) {
  double *dst[O_COUNT] = {NULL};
  dst[O_LR] = &o->learning_rate;
  dst[O_MOMENTUM] = &o->momentum;
  dst[O_ACCUM] = &o->initial_accumulator_value;
  dst[O_RHO] = &o->rho;
  dst[O_BETA1] = &o->beta1;
  dst[O_BETA2] = &o->beta2;
  dst[O_EPSILON] = &o->epsilon;
  static const double hi[O_COUNT] = {0, 1e6, 1, 0, 1e6, 1, 1, 1, 1};
  static const bool lo_open[O_COUNT] = {0, 1, 0, 0, 1, 0, 0, 0, 1};
  static const bool hi_open[O_COUNT] = {0, 0, 1, 0, 0, 0, 1, 1, 0};
  for (int k = O_LR; k <= O_EPSILON; k++) {
    char p[64];
    snprintf(p, sizeof p, "optimizer.%s", opt_keys[k]);
    if (f[k] != NULL && dst[k] != NULL) {
      TF_TRY(tf__spec_float(c, f[k], p, 0, lo_open[k], hi[k], hi_open[k],
                            dst[k]));
    }
  }
  if (f[O_NESTEROV] != NULL) {
    TF_TRY(tf__spec_bool(c, f[O_NESTEROV], "optimizer.use_nesterov",
                         &o->use_nesterov));
  }
  return TF_OK;
}

tf_code tf__job_parse_optimizer(tf__spec *c, const yaml_node_t *v,
                                tf_job_spec *s) {
  static const char *const names[] = {"gradient_descent", "momentum",
                                      "adagrad", "adadelta", "rmsprop",
                                      "adam", "sgd"};
  tf_job_optimizer *o = &s->optimizer;
  yaml_node_t *f[O_COUNT];
  int k;
  TF_TRY(tf__spec_fields(c, v, "optimizer", opt_keys, O_COUNT, f));
  if (f[O_NAME] == NULL) {
    return tf__spec_err(c, v, "optimizer", "needs 'name' (gradient_descent "
                        "or sgd, momentum, adagrad, adadelta, rmsprop or "
                        "adam)");
  }
  TF_TRY(tf__spec_enum(c, f[O_NAME], "optimizer.name", names, 7, &k));
  o->kind = (tf_optimizer_kind)(k == 6 ? 0 : k);
  o->options = tf_optimizer_defaults(o->kind);
  o->options.name = NULL;
  char what[64];
  snprintf(what, sizeof what, "the %s optimizer", names[k]);
  TF_TRY(check_takes(c, v, "optimizer", what, opt_keys, O_COUNT,
                     opt_takes[o->kind], 0, f));
  TF_TRY(parse_params(c, f, &o->options));
  if (f[O_SCHEDULE] != NULL) {
    TF_TRY(parse_schedule(c, f[O_SCHEDULE], &o->schedule));
  }
  bool piecewise = o->schedule.kind == TF_JOB_SCHEDULE_PIECEWISE;
  if (piecewise && f[O_LR] != NULL) {
    return tf__spec_err(c, f[O_LR], "optimizer.learning_rate", "a "
                        "piecewise_constant schedule gives the learning "
                        "rates (its values); leave learning_rate out");
  }
  if (!piecewise && f[O_LR] == NULL) {
    return tf__spec_err(c, v, "optimizer", "needs 'learning_rate'");
  }
  if (f[O_CLIP] != NULL) {
    TF_TRY(tf__spec_float(c, f[O_CLIP], "optimizer.clip_norm", 0, true, 1e30,
                          false, &o->clip_norm));
  }
  return TF_OK;
}
