/* op_registry.h: declarative op definitions and their registry.
 *
 * Each op family (math, array, nn, ...) declares one table of tf_op_spec in
 * lib/core/ops/ops_<family>.c and registers it with TF_REGISTER_OPS(table):
 * linking the file registers the ops. Specs are parsed once, on first use,
 * into tf_op_def. Spec strings follow TensorFlow's REGISTER_OP syntax:
 *
 *   inputs/outputs  "x: T"          dtype from type attr T
 *                   "y: float"      fixed dtype (any tf_dtype_name)
 *                   "values: N * T" list of N tensors of type T (N an int attr)
 *                   "components: Tcomponents"  type list: one tensor per
 *                                   element of a list(type) attr, each of
 *                                   that element's dtype (queues)
 *                   "ref: Ref(T)"   reference edge: carries a resource
 *                                   (variable, queue), see resource.h
 *   attrs           "T: type", "T: {float, double, int32} = float"
 *                   "N: int >= 1", "keep_dims: bool = false",
 *                   "axis: int = -1", "padding: {'SAME', 'VALID'}",
 *                   "strides: list(int)", "ksize: list(int) >= 4" (length),
 *                   "shape: shape", "value: tensor",
 *                   "Tcomponents: list(type) >= 1", "shapes: list(shape) = []",
 *                   "seed: int = 0", "rate: float = 0.5", "name: string = ''"
 *
 * A spec error is a bug and aborts at registry init with the op's name. */
#ifndef TF_CORE_OP_REGISTRY_H
#define TF_CORE_OP_REGISTRY_H

#include "tf/attr.h"
#include "tf/graph.h"
#include "tf/status.h"

#define TF_OP_MAX_ARGS 12
#define TF_OP_MAX_ATTRS 16
#define TF_OP_MAX_ALLOWED 16

enum {
  TF_OP_STATEFUL = 1u << 0,     /* has side effects: never pruned by CSE */
  TF_OP_ASYNC = 1u << 1,        /* kernel completes through a callback */
  TF_OP_CONTROL_FLOW = 1u << 2, /* Switch, Merge, Enter, Exit, NextIteration */
  TF_OP_NOT_DIFFERENTIABLE = 1u << 3, /* explicitly has no gradient */
  TF_OP_SOURCE = 1u << 4,       /* Placeholder, Const, Variable: no inputs */
  /* Its output edges are loop back edges (NextIteration): cycles through
   * such a node are allowed, and graph import orders nodes without them. */
  TF_OP_BACK_EDGE = 1u << 5,
  /* Runs even when an input is dead (tf_kernel_ctx.is_dead tells it; dead
   * inputs are NULL) and may leave outputs unset, which makes them dead:
   * _Send carries deadness to another device, _Recv restores it. */
  TF_OP_DEAD_AWARE = 1u << 6,
  /* Sends or receives through the step's rendezvous (_Send, _Recv): a
   * step running it needs tf_step_ctx.rendezvous. */
  TF_OP_RENDEZVOUS = 1u << 7,
};

/* Shape inference context. Output shapes start unknown; a shape function
 * sets what it can and returns INVALID_ARGUMENT (through tf_shape_error)
 * when known input shapes cannot work. in_value[i] is the input's constant
 * value when it comes straight from a Const node, else NULL. */
typedef struct tf_shape_ctx {
  const tf_node *node;
  int n_in;
  const tf_shape *in;
  const tf_tensor *const *in_value;
  int n_out;
  tf_shape *out;
  tf_status *status;
} tf_shape_ctx;

typedef tf_code (*tf_shape_fn)(tf_shape_ctx *ctx);

typedef struct tf_op_spec {
  const char *name;
  const char *inputs[TF_OP_MAX_ARGS];   /* NULL-terminated */
  const char *outputs[TF_OP_MAX_ARGS];  /* NULL-terminated */
  const char *attrs[TF_OP_MAX_ATTRS];   /* NULL-terminated */
  tf_shape_fn shape_fn;                 /* NULL: outputs unknown */
  unsigned flags;
  const char *doc;                      /* one line for docs/ops.md */
  /* The audit against TensorFlow's op of this name (docs/ops.md): NULL
   * when the name, input and output order, attr names and defaults and
   * the semantics match TensorFlow's; otherwise what differs and why. */
  const char *deviation;
} tf_op_spec;

typedef struct tf_arg_def {
  const char *name;
  tf_dtype fixed_type;     /* TF_DTYPE_INVALID when from an attr */
  const char *type_attr;   /* "T" or NULL */
  const char *number_attr; /* "N" for lists, NULL for one tensor */
  /* "Tcomponents" when the arg is a type list (its type names a
   * list(type) attr; type_attr is then NULL), else NULL. */
  const char *type_list_attr;
  bool is_ref;
} tf_arg_def;

typedef struct tf_attr_def {
  const char *name;
  tf_attr_type type;
  bool is_list;
  bool has_default;
  tf_attr_value default_value;
  int n_allowed_types;  /* for type attrs: allowed dtypes, 0 = any */
  tf_dtype allowed_types[TF_OP_MAX_ALLOWED];
  int n_allowed_strings; /* for string attrs: allowed values, 0 = any */
  const char *allowed_strings[TF_OP_MAX_ALLOWED];
  bool has_min;
  int64_t min; /* for int attrs ("N: int >= 1") */
} tf_attr_def;

typedef struct tf_op_def {
  const char *name;
  int n_inputs;
  tf_arg_def inputs[TF_OP_MAX_ARGS];
  int n_outputs;
  tf_arg_def outputs[TF_OP_MAX_ARGS];
  int n_attrs;
  tf_attr_def attrs[TF_OP_MAX_ATTRS];
  tf_shape_fn shape_fn;
  unsigned flags;
  const char *doc;
  const tf_op_spec *spec;
} tf_op_def;

/* A family's table, linked into the registry by its constructor. */
typedef struct tf_op_family {
  const tf_op_spec *specs;
  size_t n;
  const char *family; /* "math", "array", ... for docs */
  struct tf_op_family *next;
} tf_op_family;

void tf__op_register_family(tf_op_family *fam);

#define TF_REGISTER_OPS(family_name, table)                                    \
  static tf_op_family tf__opfam_##table = {table, sizeof(table) /              \
                                                      sizeof((table)[0]),      \
                                           family_name, 0};                    \
  __attribute__((constructor)) static void tf__opreg_##table(void) {          \
    tf__op_register_family(&tf__opfam_##table);                               \
  }

/* The op named name, or NULL. Thread-safe (registry built once). */
const tf_op_def *tf_op_lookup(const char *name);
/* All ops sorted by name; *n gets the count. */
const tf_op_def *const *tf_op_all(int *n);
/* The family name an op was registered under. */
const char *tf_op_family_of(const tf_op_def *op);
const tf_attr_def *tf_op_find_attr(const tf_op_def *op, const char *name);

/* Sets INVALID_ARGUMENT "<node> (<op>): <message>" and returns it. */
tf_code tf_shape_error(tf_shape_ctx *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Shape functions shared by many ops. */
tf_code tf_shape_fn_unchanged(tf_shape_ctx *ctx); /* out[i] = in[0] */
tf_code tf_shape_fn_broadcast(tf_shape_ctx *ctx); /* out[0] = bcast(in0,in1) */
tf_code tf_shape_fn_scalar(tf_shape_ctx *ctx);    /* every output [] */

/* Reads a constant int32/int64 vector input into dims; false if not a
 * constant. */
bool tf_shape_const_ints(const tf_shape_ctx *ctx, int input, int64_t *v,
                         int max, int *n);

#endif
