/* cpu_training.h: what the dense (cpu_training.c) and sparse
 * (cpu_training_sparse.c) optimizer kernels share: each op's layout (which
 * inputs are the variable and its slots, the scalars, grad and indices),
 * the element-wise update of each optimizer over a span of elements, and
 * the driver that checks the inputs and runs an update under the mutexes
 * of every variable involved. */
#ifndef TF_DEVICES_CPU_CPU_TRAINING_H
#define TF_DEVICES_CPU_CPU_TRAINING_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/core/framework/kernel.h"
#include "lib/core/framework/variable.h"

#define TF__TRAIN_MAX_REFS 3
#define TF__TRAIN_MAX_SCALARS 6

/* The hyperparameters of one update, prepared from the scalar inputs:
 * d[] in double, f[] the same rounded to float. */
typedef struct tf__train_params {
  double d[TF__TRAIN_MAX_SCALARS + 2];
  float f[TF__TRAIN_MAX_SCALARS + 2];
  bool nesterov;
  bool update_slots;
} tf__train_params;

/* Updates n elements: x[0] the variable, x[1..] its slots (each already
 * offset to the span), g the gradient's matching elements. */
typedef void (*tf__train_span_fn)(const tf__train_params *p, void *const *x,
                                  const void *g, int64_t n);

/* One optimizer: the scalars (in input order) turned into params, and
 * the span update for float32 ([0]) and float64 ([1]). */
typedef struct tf__train_kind {
  const char *name; /* "Momentum", ... */
  void (*prep)(const double *scalars, tf__train_params *p);
  tf__train_span_fn span[2];
} tf__train_kind;

/* Kernel state, made by tf__train_init from the node's op and attrs. */
typedef struct tf__train_state {
  const tf__train_kind *kind;
  tf_dtype dtype; /* T */
  int n_refs;     /* ref inputs 0..n_refs-1: var then slots */
  const char *ref_names[TF__TRAIN_MAX_REFS];
  int n_scalars;
  int scalar_in[TF__TRAIN_MAX_SCALARS];
  const char *scalar_names[TF__TRAIN_MAX_SCALARS];
  int grad_in;    /* "grad" or "delta" */
  const char *grad_name;
  int indices_in; /* -1 for the dense ops */
  bool nesterov, update_slots;
} tf__train_state;

/* One kernel call. vals[] are the writable values of vars[] while the
 * update function runs (under every variable's mutex). */
typedef struct tf__train_call {
  tf_kernel_ctx *ctx;
  const tf__train_state *s;
  tf_variable *vars[TF__TRAIN_MAX_REFS];
  tf_tensor *vals[TF__TRAIN_MAX_REFS];
  const tf_tensor *grad;
  const tf_tensor *indices; /* NULL for the dense ops */
  tf__train_params p;
  int order[TF__TRAIN_MAX_REFS]; /* locking order (by address) */
  int depth;
  tf_code (*fn)(struct tf__train_call *c, tf_status *st); /* under locks */
} tf__train_call;

/* The update for Apply<name> / SparseApply<name>; NULL when unknown. */
const tf__train_kind *tf__train_kind_for(const char *op);

/* init of every training kernel: the layout of the node's op, its T and
 * its use_nesterov / update_slots attrs. */
tf_code tf__train_init(const tf_node *node, void **state, tf_status *st);
void tf__train_free_state(void *state);

/* Called with every variable locked and c->vals[] writable; checks the
 * shapes it relies on before writing anything. Errors go to st (the
 * driver prefixes the node). */
typedef tf_code (*tf__train_locked_fn)(tf__train_call *c, tf_status *st);

/* Checks the inputs (refs are distinct variables of dtype T, scalars are
 * T scalars, grad is T, indices int32/int64 vectors), prepares the params,
 * locks the variables in address order (copy-on-write where a reader holds
 * a value), runs fn and outputs the ref to var. Uninitialized variables
 * give FAILED_PRECONDITION naming the variable. */
tf_code tf__train_run(tf_kernel_ctx *ctx, tf__train_locked_fn fn);

/* INVALID_ARGUMENT unless every slot's value has var's shape. */
tf_code tf__train_check_slots(const tf__train_call *c, tf_status *st);

/* Elements per parallel_for chunk at least (the updates do several
 * flops and a square root per element). */
#define TF__TRAIN_GRAIN 16384

#endif
