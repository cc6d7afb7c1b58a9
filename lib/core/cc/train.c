/* train.c: the optimizers of train.h as graph builders (OSDI §4.1). For
 * each variable apply_gradients adds one fused update node whose inputs
 * follow the op's arguments: the variable and its slots (ref edges), the
 * hyperparameters (Consts of the variable's dtype, the learning-rate
 * tensor cast to it, Adam's power variables read through their ref
 * edges) and the gradient. Slots are created on first use with
 * TensorFlow's names and initial values (Adagrad's accumulator at
 * initial_accumulator_value, RMSProp's rms at 1, the others at 0). After
 * every update, Adam multiplies its powers by beta1 and beta2, and then
 * global_step is incremented; the returned NoOp waits for all of it and
 * for the nodes given to tf_optimizer_control_dependencies. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/graph/graph_impl.h"
#include "lib/core/cc/train_impl.h"
#include "lib/core/base/util.h"

typedef struct kind_info {
  const char *name;       /* TF's default optimizer name */
  const char *dense_op;
  const char *sparse_op;  /* NULL: ScatterSub of lr * rows */
  bool dedup;             /* sum duplicate rows before sparse_op */
  int n_slots;
  const char *slots[2];   /* TF's get_slot names */
} kind_info;

static const kind_info kinds[] = {
    [TF_OPT_GRADIENT_DESCENT] = {"GradientDescent", "ApplyGradientDescent",
                                 NULL, false, 0, {NULL, NULL}},
    [TF_OPT_MOMENTUM] = {"Momentum", "ApplyMomentum", "SparseApplyMomentum",
                         true, 1, {"momentum", NULL}},
    [TF_OPT_ADAGRAD] = {"Adagrad", "ApplyAdagrad", "SparseApplyAdagrad", true,
                        1, {"accumulator", NULL}},
    [TF_OPT_ADADELTA] = {"Adadelta", "ApplyAdadelta", "SparseApplyAdadelta",
                         true, 2, {"accum", "accum_update"}},
    [TF_OPT_RMSPROP] = {"RMSProp", "ApplyRMSProp", "SparseApplyRMSProp", true,
                        2, {"rms", "momentum"}},
    [TF_OPT_ADAM] = {"Adam", "ApplyAdam", "SparseApplyAdam", false, 2,
                     {"m", "v"}},
};

/* The slots of one variable. */
typedef struct slot_entry {
  tf_output var;
  tf_output slot[2];
} slot_entry;

/* Adam's power variables for one dtype. */
typedef struct power_entry {
  tf_dtype dt;
  tf_output beta1_power, beta2_power;
} power_entry;

struct tf_optimizer {
  tf_optimizer_kind kind;
  tf_optimizer_options o;
  char *name;
  tf_graph *g; /* bound on first use */
  slot_entry *slots;
  int n_slots, cap_slots;
  tf_node **inits; /* initializers of slots and powers */
  int n_inits, cap_inits;
  power_entry powers[2];
  int n_powers;
  tf_node **deps; /* tf_optimizer_control_dependencies */
  int n_deps;
};

/* ---- construction --------------------------------------------------------- */

tf_optimizer_options tf_optimizer_defaults(tf_optimizer_kind kind) {
  tf_optimizer_options o = {.learning_rate = 0.01, .momentum = 0.9};
  switch (kind) {
  case TF_OPT_ADAGRAD: o.initial_accumulator_value = 0.1; break;
  case TF_OPT_ADADELTA: o = (tf_optimizer_options){.learning_rate = 0.001,
                                                   .rho = 0.95,
                                                   .epsilon = 1e-8};
    break;
  case TF_OPT_RMSPROP: o = (tf_optimizer_options){.learning_rate = 0.01,
                                                  .rho = 0.9, .epsilon = 1e-10};
    break;
  case TF_OPT_ADAM: o = (tf_optimizer_options){.learning_rate = 0.001,
                                               .beta1 = 0.9, .beta2 = 0.999,
                                               .epsilon = 1e-8};
    break;
  default: break;
  }
  o.name = kinds[kind].name;
  return o;
}

tf_optimizer *tf_optimizer_new(tf_optimizer_kind kind,
                               const tf_optimizer_options *o) {
  TF_ASSERT(kind >= TF_OPT_GRADIENT_DESCENT && kind <= TF_OPT_ADAM);
  tf_optimizer *opt = tf__xcalloc(1, sizeof *opt);
  opt->kind = kind;
  opt->o = o ? *o : tf_optimizer_defaults(kind);
  opt->name = tf__xstrdup(opt->o.name && *opt->o.name ? opt->o.name
                                                      : kinds[kind].name);
  opt->o.name = opt->name;
  return opt;
}

static tf_optimizer *with_lr(tf_optimizer_kind kind, double lr) {
  tf_optimizer_options o = tf_optimizer_defaults(kind);
  o.learning_rate = lr;
  return tf_optimizer_new(kind, &o);
}

tf_optimizer *tf_optimizer_gradient_descent(double learning_rate) {
  return with_lr(TF_OPT_GRADIENT_DESCENT, learning_rate);
}

tf_optimizer *tf_optimizer_momentum(double learning_rate, double momentum,
                                    bool use_nesterov) {
  tf_optimizer_options o = tf_optimizer_defaults(TF_OPT_MOMENTUM);
  o.learning_rate = learning_rate;
  o.momentum = momentum;
  o.use_nesterov = use_nesterov;
  return tf_optimizer_new(TF_OPT_MOMENTUM, &o);
}

tf_optimizer *tf_optimizer_adagrad(double learning_rate) {
  return with_lr(TF_OPT_ADAGRAD, learning_rate);
}

tf_optimizer *tf_optimizer_adadelta(double learning_rate) {
  return with_lr(TF_OPT_ADADELTA, learning_rate);
}

tf_optimizer *tf_optimizer_rmsprop(double learning_rate) {
  return with_lr(TF_OPT_RMSPROP, learning_rate);
}

tf_optimizer *tf_optimizer_adam(double learning_rate) {
  return with_lr(TF_OPT_ADAM, learning_rate);
}

void tf_optimizer_free(tf_optimizer *o) {
  if (o != NULL) {
    free(o->slots);
    free(o->inits);
    free(o->deps);
    free(o->name);
    free(o);
  }
}

/* ---- slots and powers ------------------------------------------------------ */

static bool same_output(tf_output a, tf_output b) {
  return a.node == b.node && a.index == b.index;
}

static int find_slots(const tf_optimizer *o, tf_output var) {
  for (int i = 0; i < o->n_slots; i++) {
    if (same_output(o->slots[i].var, var)) {
      return i;
    }
  }
  return -1;
}

static void add_init(tf_optimizer *o, tf_node *n) {
  if (o->n_inits == o->cap_inits) {
    o->cap_inits = o->cap_inits ? 2 * o->cap_inits : 16;
    o->inits = tf__xrealloc(o->inits, (size_t)o->cap_inits * sizeof *o->inits);
  }
  o->inits[o->n_inits++] = n;
}

static tf_output const_tensor(tf__tb *b, const char *name, tf_tensor *t) {
  tf_attr_kv a[] = {{"value", tf_attr_tensor(t)},
                    {"dtype", tf_attr_type_v(t->dtype)}};
  tf_output o = tf__tb_op(b, "Const", name, NULL, 0, a, 2);
  tf_tensor_unref(t);
  return o;
}

/* base, or base_1, base_2, ... : the first that names no node in the
 * current scope (names of a failed build that was removed are free again,
 * as TF's slot names expect). */
static const char *free_name(tf__tb *b, const char *base, char *buf,
                             size_t size) {
  const char *scope = tf__graph_scope(b->g);
  char full[700];
  snprintf(buf, size, "%s", base);
  for (int k = 1;; k++) {
    snprintf(full, sizeof full, "%s%s", scope, buf);
    if (tf_graph_find(b->g, full) == NULL) {
      return buf;
    }
    snprintf(buf, size, "%s_%d", base, k);
  }
}

/* A variable `base` (made unique) of dt and shape filled with value by its
 * initializer "<name>/Assign" (recorded). */
static tf_output filled_var(tf_optimizer *o, tf__tb *b, const char *base,
                            tf_dtype dt, const tf_shape *shape, double value) {
  char buf[512], nm[600];
  const char *name = free_name(b, base, buf, sizeof buf);
  tf_attr_kv va[] = {{"dtype", tf_attr_type_v(dt)},
                     {"shape", tf_attr_shape(*shape)}};
  tf_output v = tf__tb_op(b, "VariableV2", name, NULL, 0, va, 2);
  int64_t none = 0;
  snprintf(nm, sizeof nm, "%s/Initializer/shape", name);
  tf_output dims = const_tensor(
      b, nm, tf_tensor_vec_i64(shape->rank, shape->rank ? shape->dims : &none));
  snprintf(nm, sizeof nm, "%s/Initializer/value", name);
  tf_output val = tf__tb_scalar(b, nm, dt, value);
  snprintf(nm, sizeof nm, "%s/Initializer/Fill", name);
  tf_output fill = tf__tb_op(b, "Fill", nm, (tf_output[]){dims, val}, 2, NULL,
                             0);
  snprintf(nm, sizeof nm, "%s/Assign", name);
  tf_node *a = tf__tb_node(b, "Assign", nm, (tf_output[]){v, fill}, 2, NULL, 0,
                           NULL, 0);
  if (a != NULL) {
    add_init(o, a);
  }
  return v;
}

static double slot_init_value(const tf_optimizer *o, int slot) {
  if (o->kind == TF_OPT_ADAGRAD) {
    return o->o.initial_accumulator_value;
  }
  return o->kind == TF_OPT_RMSPROP && slot == 0 ? 1.0 : 0.0;
}

/* The slots of var (created on first use); -1 for SGD or on error. */
static int ensure_slots(tf_optimizer *o, tf__tb *b, tf_output var) {
  int i = find_slots(o, var);
  const kind_info *k = &kinds[o->kind];
  if (i >= 0 || k->n_slots == 0 || tf__tb_failed(b)) {
    return i;
  }
  if (o->n_slots == o->cap_slots) {
    o->cap_slots = o->cap_slots ? 2 * o->cap_slots : 16;
    o->slots = tf__xrealloc(o->slots, (size_t)o->cap_slots * sizeof *o->slots);
  }
  slot_entry e = {.var = var};
  char base[512];
  snprintf(base, sizeof base, "%s/%s", tf_node_name(var.node), o->name);
  for (int s = 0; s < k->n_slots; s++) {
    e.slot[s] = filled_var(o, b, base, tf__tb_dtype(var),
                           tf_node_output_shape(var.node, var.index),
                           slot_init_value(o, s));
  }
  o->slots[o->n_slots] = e;
  return o->n_slots++;
}

/* Adam's beta powers for dt, created on first use. */
static power_entry *ensure_powers(tf_optimizer *o, tf__tb *b, tf_dtype dt) {
  for (int i = 0; i < o->n_powers; i++) {
    if (o->powers[i].dt == dt) {
      return &o->powers[i];
    }
  }
  tf_shape scalar = tf_shape_scalar();
  power_entry *p = &o->powers[o->n_powers++];
  p->dt = dt;
  p->beta1_power = filled_var(o, b, "beta1_power", dt, &scalar, o->o.beta1);
  p->beta2_power = filled_var(o, b, "beta2_power", dt, &scalar, o->o.beta2);
  return p;
}

/* ---- apply_gradients -------------------------------------------------------- */

/* Hyperparameter nodes of one dtype for one apply call. */
typedef struct hypers {
  tf_dtype dt;
  tf_output lr, momentum, rho, epsilon, beta1, beta2;
  power_entry *powers;
} hypers;

typedef struct apply_ctx {
  tf_optimizer *o;
  tf__tb *b;
  hypers h[2]; /* float32, float64 */
  tf_node **updates;
  int n_updates;
} apply_ctx;

/* vars[i] must be a float variable of fully defined shape; grads[i] of
 * its dtype (rows with int32/int64 indices when sparse). */
static tf_code check_pair(tf__tb *b, int i, tf_output var, const tf_grad *g) {
  char buf[96];
  if (var.node == NULL || var.index < 0 ||
      var.index >= tf_node_num_outputs(var.node) ||
      !tf__node_output_is_ref(var.node, var.index)) {
    return tf__tb_fail(b, "vars[%d] is not a variable (a ref output)", i);
  }
  const char *vn = tf_node_name(var.node);
  tf_dtype dt = tf__tb_dtype(var);
  const tf_shape *s = tf_node_output_shape(var.node, var.index);
  if (dt != TF_FLOAT32 && dt != TF_FLOAT64) {
    return tf__tb_fail(b, "variable %s is %s; optimizers update float32 and "
                       "float64 variables", vn, tf_dtype_name(dt));
  }
  if (!tf_shape_is_fully_defined(s)) {
    return tf__tb_fail(b, "variable %s has shape %s; the optimizer needs a "
                       "fully defined shape for its slots", vn,
                       tf_shape_str(s, buf, sizeof buf));
  }
  if (g->values.node == NULL) {
    return TF_OK;
  }
  tf_dtype it = tf__tb_dtype(g->indices);
  if (tf__tb_dtype(g->values) != dt ||
      (tf_grad_is_sparse(g) && it != TF_INT32 && it != TF_INT64)) {
    return tf__tb_fail(b, "the gradient of variable %s is %s%s%s but the "
                       "variable is %s", vn,
                       tf_dtype_name(tf__tb_dtype(g->values)),
                       tf_grad_is_sparse(g) ? " rows with indices " : "",
                       tf_grad_is_sparse(g) ? tf_dtype_name(it) : "",
                       tf_dtype_name(dt));
  }
  return TF_OK;
}

/* The Consts (and cast learning rate, and Adam's powers) for dt, made
 * once per call in the optimizer's scope. */
/* A scalar Const named base (made unique in the current scope). */
static tf_output hyper_const(tf__tb *b, const char *base, tf_dtype dt,
                             double v) {
  char buf[512];
  return tf__tb_scalar(b, tf__tb_unique(b, base, buf, sizeof buf), dt, v);
}

static hypers *hypers_for(apply_ctx *a, tf_dtype dt) {
  hypers *h = &a->h[dt == TF_FLOAT64];
  if (h->dt == dt) {
    return h;
  }
  tf__tb *b = a->b;
  const tf_optimizer_options *o = &a->o->o;
  h->dt = dt;
  h->lr = o->learning_rate_tensor.node
              ? tf__tb_cast(b, o->learning_rate_tensor, dt)
              : hyper_const(b, "learning_rate", dt, o->learning_rate);
  switch (a->o->kind) {
  case TF_OPT_MOMENTUM: h->momentum = hyper_const(b, "momentum", dt,
                                                    o->momentum);
    break;
  case TF_OPT_ADADELTA:
  case TF_OPT_RMSPROP:
    h->rho = hyper_const(b, "rho", dt, o->rho);
    h->epsilon = hyper_const(b, "epsilon", dt, o->epsilon);
    if (a->o->kind == TF_OPT_RMSPROP) {
      h->momentum = hyper_const(b, "momentum", dt, o->momentum);
    }
    break;
  case TF_OPT_ADAM:
    h->beta1 = hyper_const(b, "beta1", dt, o->beta1);
    h->beta2 = hyper_const(b, "beta2", dt, o->beta2);
    h->epsilon = hyper_const(b, "epsilon", dt, o->epsilon);
    break;
  default: break;
  }
  return h;
}

/* The hyperparameter input named arg of an update op. */
static tf_output hyper(const hypers *h, const char *arg) {
  static const struct {
    const char *name;
    size_t off;
  } map[] = {{"lr", offsetof(hypers, lr)},
             {"alpha", offsetof(hypers, lr)},
             {"momentum", offsetof(hypers, momentum)},
             {"rho", offsetof(hypers, rho)},
             {"epsilon", offsetof(hypers, epsilon)},
             {"beta1", offsetof(hypers, beta1)},
             {"beta2", offsetof(hypers, beta2)}};
  if (h->powers && strcmp(arg, "beta1_power") == 0) {
    return h->powers->beta1_power;
  }
  if (h->powers && strcmp(arg, "beta2_power") == 0) {
    return h->powers->beta2_power;
  }
  for (size_t i = 0; i < sizeof map / sizeof *map; i++) {
    if (strcmp(map[i].name, arg) == 0) {
      return *(const tf_output *)((const char *)h + map[i].off);
    }
  }
  return (tf_output){NULL, 0};
}

/* (values, indices) with duplicate rows summed: Unique +
 * UnsortedSegmentSum, as TF's _deduplicate_indexed_slices. */
static void dedup(tf__tb *b, tf_grad *g) {
  tf_node *u = tf__tb_node(b, "Unique", NULL, &g->indices, 1, NULL, 0, NULL,
                           0);
  tf_output uniq = {u, 0}, pos = {u, 1};
  tf_output count = tf__tb_op1(b, "Size", uniq);
  tf_output in[] = {g->values, pos, count};
  g->values = tf__tb_op(b, "UnsortedSegmentSum", NULL, in, 3, NULL, 0);
  g->indices = uniq;
}

/* The update node of var by g (slots: its slot entry or -1). */
static tf_node *update_node(apply_ctx *a, tf_output var, tf_grad g,
                            int slots) {
  const kind_info *k = &kinds[a->o->kind];
  tf__tb *b = a->b;
  hypers *h = &a->h[tf__tb_dtype(var) == TF_FLOAT64];
  bool sparse = tf_grad_is_sparse(&g);
  if (tf__tb_failed(b) || (k->n_slots > 0 && slots < 0)) {
    return NULL;
  }
  if (sparse && k->sparse_op == NULL) { /* SGD: var[indices] -= lr * rows */
    tf_output delta = tf__tb_op2(b, "Mul", g.values, h->lr);
    return tf__tb_node(b, "ScatterSub", NULL,
                       (tf_output[]){var, g.indices, delta}, 3, NULL, 0, NULL,
                       0);
  }
  if (sparse && k->dedup) {
    dedup(b, &g);
  }
  const char *op = sparse ? k->sparse_op : k->dense_op;
  const tf_op_def *d = tf_op_lookup(op);
  if (d == NULL || d->n_inputs > 16) {
    tf__tb_fail(b, "op %s is not registered (variable %s)", op,
                tf_node_name(var.node));
    return NULL;
  }
  tf_output in[16];
  int n_in = d->n_inputs;
  for (int i = 0; i < n_in; i++) {
    const char *arg = d->inputs[i].name;
    if (d->inputs[i].is_ref) {
      in[i] = i == 0 ? var : a->o->slots[slots].slot[i - 1];
    } else if (strcmp(arg, "grad") == 0 || strcmp(arg, "delta") == 0) {
      in[i] = g.values;
    } else if (strcmp(arg, "indices") == 0) {
      in[i] = g.indices;
    } else {
      in[i] = hyper(h, arg);
    }
  }
  tf_attr_kv attrs[1];
  int n_attrs = 0;
  if (a->o->o.use_nesterov && tf_op_find_attr(d, "use_nesterov")) {
    attrs[n_attrs++] = (tf_attr_kv){"use_nesterov", tf_attr_bool(true)};
  } else if (a->o->o.use_nesterov) {
    tf__tb_fail(b, "%s has no Nesterov form (variable %s)", op,
                tf_node_name(var.node));
    return NULL;
  }
  return tf__tb_node(b, op, NULL, in, n_in, attrs, n_attrs, NULL, 0);
}

static void add_update(apply_ctx *a, tf_node *n, int cap) {
  if (n != NULL && a->n_updates < cap) {
    a->updates[a->n_updates++] = n;
  }
}

/* Adam: beta powers *= beta after every update of their dtype. */
static void finish_adam(apply_ctx *a, int cap) {
  int n = a->n_updates;
  for (int d = 0; d < 2 && a->o->kind == TF_OPT_ADAM; d++) {
    hypers *h = &a->h[d];
    if (h->powers == NULL) {
      continue;
    }
    tf_output pw[2] = {h->powers->beta1_power, h->powers->beta2_power};
    tf_output beta[2] = {h->beta1, h->beta2};
    for (int k = 0; k < 2; k++) {
      tf_node *mul = tf__tb_node(a->b, "Mul", NULL, (tf_output[]){pw[k],
                                 beta[k]}, 2, NULL, 0, a->updates, n);
      add_update(a, tf__tb_node(a->b, "Assign", NULL,
                                (tf_output[]){pw[k], {mul, 0}}, 2, NULL, 0,
                                NULL, 0), cap);
    }
  }
}

/* Checks every argument; counts the variables with a gradient. */
static tf_code check_apply(tf_optimizer *o, tf__tb *b, const tf_output *vars,
                           const tf_grad *grads, int n, tf_output step) {
  if (o->g != NULL && o->g != b->g) {
    return tf__tb_fail(b, "optimizer %s already builds into another graph",
                       o->name);
  }
  if (n <= 0 || vars == NULL || grads == NULL) {
    return tf__tb_fail(b, "apply_gradients: no variables given");
  }
  int present = 0;
  for (int i = 0; i < n; i++) {
    TF_TRY(check_pair(b, i, vars[i], &grads[i]));
    present += grads[i].values.node != NULL;
  }
  if (present == 0) {
    return tf__tb_fail(b, "No gradients provided for any variable");
  }
  for (int i = 0; i < o->n_deps; i++) {
    if (o->deps[i] == NULL || o->deps[i]->graph != b->g) {
      return tf__tb_fail(b, "apply_gradients: control dependency %d of "
                         "optimizer %s is %s", i, o->name,
                         o->deps[i] ? "in another graph" : "NULL");
    }
  }
  tf_dtype sd = tf__tb_dtype(step);
  if (step.node != NULL && (!tf__node_output_is_ref(step.node, step.index) ||
                            (sd != TF_INT32 && sd != TF_INT64))) {
    return tf__tb_fail(b, "global_step must be an int32/int64 variable, got "
                       "%s:%d", tf_node_name(step.node), step.index);
  }
  return TF_OK;
}

/* Pushes the optimizer's scope (made unique) and writes its name relative
 * to the enclosing scope, the final NoOp's name, to buf. */
static void push_apply_scope(tf_graph *g, const char *base, char *buf,
                             size_t size) {
  size_t prev = strlen(tf__graph_scope(g));
  tf_graph_push_scope(g, base);
  snprintf(buf, size, "%s", tf__graph_scope(g) + prev);
  size_t len = strlen(buf);
  if (len > 0 && buf[len - 1] == '/') {
    buf[len - 1] = '\0';
  }
}

/* Slots and powers (in the caller's scope), then the optimizer's scope
 * with its Consts and one update per variable. */
/* TF's GATE_GRAPH: every gradient is computed before any variable is
 * updated. A variable is read when its consumer runs, so without the gate
 * an update could run before the backward pass reads the variable it
 * changes (dx = dy * W' after W -= lr * dW), and one Run would give
 * results that depend on thread timing. Returns the gated gradients (a
 * malloc'd copy of grads whose values pass an Identity after the gate). */
static tf_grad *gate_gradients(tf__tb *b, const tf_grad *grads, int n) {
  tf_grad *out = tf__xcalloc((size_t)n + 1, sizeof *out);
  tf_node **ready = tf__xcalloc((size_t)n + 1, sizeof *ready);
  int nr = 0;
  for (int i = 0; i < n; i++) {
    out[i] = grads[i];
    if (grads[i].values.node != NULL) {
      ready[nr++] = grads[i].values.node;
    }
  }
  if (nr > 1) {
    char name[128];
    tf_graph_unique_name(b->g, "gradients_ready", name, sizeof name);
    tf_node *gate = tf__tb_node(b, "NoOp", name, NULL, 0, NULL, 0, ready, nr);
    for (int i = 0; i < n && gate != NULL; i++) {
      if (grads[i].values.node != NULL) {
        out[i].values = (tf_output){
            tf__tb_node(b, "Identity", NULL, &grads[i].values, 1, NULL, 0, &gate, 1), 0};
      }
    }
  }
  free(ready);
  return out;
}

static void build_updates(apply_ctx *a, const tf_output *vars,
                          const tf_grad *grads_in, int n, int *slots, int cap,
                          char *final_name, size_t size, const char *name) {
  tf_optimizer *o = a->o;
  tf_graph *g = a->b->g;
  for (int i = 0; i < n; i++) {
    if (grads_in[i].values.node != NULL) {
      tf_dtype dt = tf__tb_dtype(vars[i]);
      slots[i] = ensure_slots(o, a->b, vars[i]);
      if (o->kind == TF_OPT_ADAM) {
        a->h[dt == TF_FLOAT64].powers = ensure_powers(o, a->b, dt);
      }
    }
  }
  push_apply_scope(g, name ? name : o->name, final_name, size);
  const tf_grad *grads = grads_in;
  for (int i = 0; i < n; i++) {
    if (grads[i].values.node != NULL) {
      hypers_for(a, tf__tb_dtype(vars[i]));
    }
  }
  for (int i = 0; i < n; i++) {
    if (grads[i].values.node != NULL) {
      char sc[600];
      snprintf(sc, sizeof sc, "update_%s", tf_node_name(vars[i].node));
      tf_graph_push_scope(g, sc);
      add_update(a, update_node(a, vars[i], grads[i], slots[i]), cap);
      tf_graph_pop_scope(g);
    }
  }
}

/* The train op: a NoOp waiting for the updates and the optimizer's
 * control dependencies deps[0..n_deps). */
static tf_node *final_noop(tf__tb *b, const char *name, const apply_ctx *a,
                           tf_node *const *deps, int n_deps) {
  int n = a->n_updates + n_deps;
  tf_node **ctrl = tf__xcalloc((size_t)n + 1, sizeof *ctrl);
  memcpy(ctrl, a->updates, (size_t)a->n_updates * sizeof *ctrl);
  if (n_deps > 0) {
    memcpy(ctrl + a->n_updates, deps, (size_t)n_deps * sizeof *ctrl);
  }
  tf_node *r = tf__tb_node(b, "NoOp", name, NULL, 0, NULL, 0, ctrl, n);
  free(ctrl);
  return r;
}

void tf_optimizer_control_dependencies(tf_optimizer *o, tf_node *const *ops,
                                       int n) {
  free(o->deps);
  o->deps = NULL;
  o->n_deps = n > 0 ? n : 0;
  if (o->n_deps > 0) {
    o->deps = tf__xcalloc((size_t)n, sizeof *o->deps);
    memcpy(o->deps, ops, (size_t)n * sizeof *o->deps);
  }
}

tf_node *tf_optimizer_apply_gradients(tf_optimizer *o, tf_graph *g,
                                      const tf_output *vars,
                                      const tf_grad *grads, int n,
                                      tf_output global_step, const char *name,
                                      tf_status *st) {
  tf__tb b;
  tf__tb_begin(&b, g, st);
  int n_slots0 = o->n_slots, n_inits0 = o->n_inits, n_powers0 = o->n_powers;
  tf_node *result = NULL;
  if (check_apply(o, &b, vars, grads, n, global_step) == TF_OK) {
    int cap = n + 6;
    apply_ctx a = {.o = o, .b = &b};
    a.updates = tf__xcalloc((size_t)cap, sizeof *a.updates);
    int *slots = tf__xcalloc((size_t)n, sizeof *slots);
    char final_name[512];
    build_updates(&a, vars, grads, n, slots, cap, final_name,
                  sizeof final_name, name);
    finish_adam(&a, cap);
    if (global_step.node != NULL) {
      tf_output one = tf__tb_scalar(&b, NULL, tf__tb_dtype(global_step), 1);
      tf_node *inc = tf__tb_node(&b, "AssignAdd", NULL,
                                 (tf_output[]){global_step, one}, 2, NULL, 0,
                                 a.updates, a.n_updates);
      add_update(&a, inc, cap);
    }
    tf_graph_pop_scope(g);
    result = final_noop(&b, final_name, &a, o->deps, o->n_deps);
    free(slots);
    free(a.updates);
  }
  if (tf__tb_end(&b) != TF_OK) {
    o->n_slots = n_slots0;
    o->n_inits = n_inits0;
    o->n_powers = n_powers0;
    return NULL;
  }
  o->g = g;
  return result;
}

tf_node *tf_optimizer_minimize(tf_optimizer *o, tf_graph *g, tf_output loss,
                               const tf_output *vars, int n,
                               tf_output global_step, const char *name,
                               tf_status *st) {
  tf__tb b;
  tf__tb_begin(&b, g, st);
  tf_node *result = NULL;
  if (n <= 0 || vars == NULL || loss.node == NULL) {
    tf__tb_fail(&b, "minimize: needs a loss and at least one variable");
    tf__tb_end(&b);
    return NULL;
  }
  tf_grad *grads = tf__xcalloc((size_t)n, sizeof *grads);
  if (tf_gradients_sparse(g, &loss, 1, vars, n, NULL, grads, st) == TF_OK) {
    tf_grad *gated = gate_gradients(&b, grads, n);
    result = tf_optimizer_apply_gradients(o, g, vars, gated, n, global_step,
                                          name, st);
    free(gated);
  }
  free(grads);
  if (tf__tb_end(&b) != TF_OK) {
    return NULL;
  }
  return result;
}

tf_node *tf_optimizer_init_op(tf_optimizer *o, const char *name,
                              tf_status *st) {
  tf_status_init(st);
  if (o->n_inits == 0 || o->g == NULL) {
    tf_status_set(st, TF_INVALID_ARGUMENT,
                  "optimizer %s has created no variable to initialize",
                  o->name);
    return NULL;
  }
  tf__tb b;
  tf__tb_begin(&b, o->g, st);
  char base[300], buf[512];
  snprintf(base, sizeof base, "%s_init", o->name);
  tf_node *n = tf__tb_node(&b, "NoOp",
                           name ? name : tf__tb_unique(&b, base, buf,
                                                       sizeof buf),
                           NULL, 0, NULL, 0, o->inits, o->n_inits);
  return tf__tb_end(&b) == TF_OK ? n : NULL;
}

tf_code tf_optimizer_slot(const tf_optimizer *o, tf_output var,
                          const char *slot, tf_output *out, tf_status *st) {
  const kind_info *k = &kinds[o->kind];
  int i = find_slots(o, var);
  for (int s = 0; i >= 0 && slot != NULL && s < k->n_slots; s++) {
    if (strcmp(k->slots[s], slot) == 0) {
      *out = o->slots[i].slot[s];
      tf_status_init(st);
      return TF_OK;
    }
  }
  *out = (tf_output){NULL, 0};
  return tf_status_set(st, TF_NOT_FOUND, "optimizer %s has no slot '%s' for "
                       "%s", o->name, slot ? slot : "(null)",
                       var.node ? tf_node_name(var.node) : "(no variable)");
}
