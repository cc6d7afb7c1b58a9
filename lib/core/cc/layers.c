/* layers.c: the layers context: node-building helpers shared by the
 * layers, TF1-style seeds, variables with their initializer subgraphs
 * (zeros, ones, constant, Glorot uniform, He normal, truncated normal), the
 * init target, and the list and count of trainable parameters. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/graph/graph_impl.h"
#include "lib/core/cc/layers_impl.h"
#include "lib/core/base/util.h"

/* TF's DEFAULT_GRAPH_SEED: pairs with an op seed when no graph seed is set. */
#define DEFAULT_GRAPH_SEED 87654321
/* 1 / this is the stddev of a standard normal truncated at +-2 sd: TF's
 * VarianceScaling divides by it so the truncated draw has the wanted sd. */
#define TRUNC_STDDEV 0.87962566103423978

/* ---- context ------------------------------------------------------------- */

tf_layers *tf_layers_new(tf_graph *g, int64_t seed) {
  TF_ASSERT(g != NULL);
  tf_layers *l = tf__xcalloc(1, sizeof *l);
  l->g = g;
  l->seed = seed;
  return l;
}

void tf_layers_free(tf_layers *l) {
  if (l == NULL) {
    return;
  }
  for (int i = 0; i < l->n_vars; i++) {
    free((char *)l->vars[i].name);
  }
  free(l->vars);
  free(l->updates);
  free(l);
}

tf_graph *tf_layers_graph(const tf_layers *l) { return l->g; }

void tf__layers_seeds(tf_layers *l, int64_t op_seed, int64_t *seed,
                      int64_t *seed2) {
  if (l->seed != 0) {
    *seed = l->seed;
    *seed2 = op_seed != 0 ? op_seed : ++l->op_count;
  } else if (op_seed != 0) {
    *seed = DEFAULT_GRAPH_SEED;
    *seed2 = op_seed;
  } else {
    *seed = 0;
    *seed2 = 0;
  }
}

/* ---- node helpers ---------------------------------------------------------- */

tf_output tf__layers_op(tf_layers *l, const char *op, const char *name,
                        const tf_output *in, int n_in, const tf_attr_kv *attrs,
                        int n_attrs, tf_status *st) {
  tf_output none = {NULL, 0};
  if (st->code != TF_OK) {
    return none;
  }
  tf_node_builder *b = tf_node_begin(l->g, op, name);
  if (l->device != NULL) {
    tf_node_set_device(b, l->device);
  }
  for (int i = 0; i < n_in; i++) {
    tf_node_add_input(b, in[i]);
  }
  for (int i = 0; i < n_attrs; i++) {
    tf_node_set_attr(b, attrs[i].name, attrs[i].value);
  }
  tf_node *n = tf_node_finish(b, st);
  return n != NULL ? (tf_output){n, 0} : none;
}

tf_output tf__layers_scalar(tf_layers *l, tf_dtype dt, double v,
                            tf_status *st) {
  tf_output none = {NULL, 0};
  if (st->code != TF_OK) {
    return none;
  }
  tf_tensor *t;
  switch (dt) {
    case TF_FLOAT32: t = tf_tensor_scalar_f32((float)v); break;
    case TF_FLOAT64: t = tf_tensor_scalar_f64(v); break;
    case TF_INT32: t = tf_tensor_scalar_i32((int32_t)v); break;
    case TF_INT64: t = tf_tensor_scalar_i64((int64_t)v); break;
    default:
      tf_status_set(st, TF_INVALID_ARGUMENT, "no constant of dtype %s: "
                    "expected float32, float64, int32 or int64",
                    tf_dtype_name(dt));
      return none;
  }
  tf_attr_kv a[] = {{"value", tf_attr_tensor(t)}, {"dtype", tf_attr_type_v(dt)}};
  tf_output o = tf__layers_op(l, "Const", NULL, NULL, 0, a, 2, st);
  tf_tensor_unref(t);
  return o;
}

tf_output tf__layers_ivec(tf_layers *l, const int32_t *v, int n,
                          tf_status *st) {
  if (st->code != TF_OK) {
    return (tf_output){NULL, 0};
  }
  tf_tensor *t = tf_tensor_vec_i32(n, v);
  tf_attr_kv a[] = {{"value", tf_attr_tensor(t)},
                    {"dtype", tf_attr_type_v(TF_INT32)}};
  tf_output o = tf__layers_op(l, "Const", NULL, NULL, 0, a, 2, st);
  tf_tensor_unref(t);
  return o;
}

bool tf__layers_float(tf_dtype dt) {
  return dt == TF_FLOAT32 || dt == TF_FLOAT64;
}

tf_code tf__layers_check_float(const char *what, tf_output x, tf_status *st) {
  if (x.node == NULL) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: input is a NULL node",
                         what);
  }
  tf_dtype dt = tf_node_output_type(x.node, x.index);
  if (!tf__layers_float(dt)) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: input '%s:%d' must be "
                         "float32 or float64, got %s", what,
                         tf_node_name(x.node), x.index, tf_dtype_name(dt));
  }
  return TF_OK;
}

const char *tf__layers_unique(tf_layers *l, const char *base, char *buf,
                              size_t size) {
  tf_graph_unique_name(l->g, base, buf, size);
  return buf + strlen(tf__graph_scope(l->g));
}

/* ---- initializers ---------------------------------------------------------- */

tf_code tf__layers_check_init(const char *what, const tf_initializer *init,
                              tf_dtype dt, tf_status *st) {
  tf_init_kind k = init ? init->kind : TF_INIT_ZEROS;
  bool ok_dt = tf__layers_float(dt);
  if (k == TF_INIT_ZEROS || k == TF_INIT_ONES || k == TF_INIT_CONSTANT) {
    ok_dt = ok_dt || dt == TF_INT32 || dt == TF_INT64;
  } else if (k != TF_INIT_GLOROT_UNIFORM && k != TF_INIT_HE_NORMAL &&
             k != TF_INIT_TRUNCATED_NORMAL) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: unknown initializer "
                         "kind %d", what, (int)k);
  }
  if (!ok_dt) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: initializer kind %d "
                         "cannot make dtype %s", what, (int)k,
                         tf_dtype_name(dt));
  }
  if (k == TF_INIT_TRUNCATED_NORMAL &&
      !(init->stddev >= 0 && isfinite(init->stddev) && isfinite(init->mean))) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: truncated normal "
                         "needs a finite mean and stddev >= 0, got mean %g "
                         "stddev %g", what, init->mean, init->stddev);
  }
  if (k == TF_INIT_CONSTANT && !isfinite(init->value)) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: constant initializer "
                         "value %g is not finite", what, init->value);
  }
  return TF_OK;
}

/* TF's _compute_fans. */
static void fans(const tf_shape *s, double *fan_in, double *fan_out) {
  if (s->rank == 0) {
    *fan_in = *fan_out = 1;
  } else if (s->rank == 1) {
    *fan_in = *fan_out = (double)s->dims[0];
  } else {
    double receptive = 1;
    for (int i = 0; i < s->rank - 2; i++) {
      receptive *= (double)s->dims[i];
    }
    *fan_in = (double)s->dims[s->rank - 2] * receptive;
    *fan_out = (double)s->dims[s->rank - 1] * receptive;
  }
}

/* A seeded random op of dtype dt and the given shape. */
static tf_output random_op(tf_layers *l, const char *op, tf_output shape,
                           tf_dtype dt, int64_t op_seed, tf_status *st) {
  int64_t seed, seed2;
  tf__layers_seeds(l, op_seed, &seed, &seed2);
  tf_attr_kv a[] = {{"dtype", tf_attr_type_v(dt)},
                    {"seed", tf_attr_int(seed)},
                    {"seed2", tf_attr_int(seed2)}};
  return tf__layers_op(l, op, NULL, &shape, 1, a, 3, st);
}

static tf_output binop(tf_layers *l, const char *op, tf_output a, tf_output b,
                       tf_status *st) {
  tf_output in[2] = {a, b};
  return tf__layers_op(l, op, NULL, in, 2, NULL, 0, st);
}

/* The initial value of a variable of shape s (fully defined, dims < 2^31)
 * and dtype dt, random kinds scaled by the fans of fan_shape; init already
 * checked. */
static tf_output init_value(tf_layers *l, const tf_initializer *init,
                            const tf_shape *s, const tf_shape *fan_shape,
                            tf_dtype dt, tf_status *st) {
  int32_t dims[TF_MAX_RANK];
  for (int i = 0; i < s->rank; i++) {
    dims[i] = (int32_t)s->dims[i];
  }
  tf_output shape = tf__layers_ivec(l, dims, s->rank, st);
  tf_initializer zeros = tf_init_zeros();
  const tf_initializer *in = init ? init : &zeros;
  double fan_in, fan_out;
  fans(fan_shape, &fan_in, &fan_out);
  switch (in->kind) {
    case TF_INIT_ZEROS:
    case TF_INIT_ONES:
    case TF_INIT_CONSTANT: {
      double v = in->kind == TF_INIT_ZEROS ? 0 : in->kind == TF_INIT_ONES
                                                     ? 1 : in->value;
      return binop(l, "Fill", shape, tf__layers_scalar(l, dt, v, st), st);
    }
    case TF_INIT_GLOROT_UNIFORM: {
      double limit = sqrt(6.0 / TF_MAX(fan_in + fan_out, 1.0));
      tf_output u = random_op(l, "RandomUniform", shape, dt, in->seed, st);
      u = binop(l, "Mul", u, tf__layers_scalar(l, dt, 2 * limit, st), st);
      return binop(l, "Add", u, tf__layers_scalar(l, dt, -limit, st), st);
    }
    case TF_INIT_HE_NORMAL: {
      double sd = sqrt(2.0 / TF_MAX(fan_in, 1.0)) / TRUNC_STDDEV;
      tf_output n = random_op(l, "TruncatedNormal", shape, dt, in->seed, st);
      return binop(l, "Mul", n, tf__layers_scalar(l, dt, sd, st), st);
    }
    case TF_INIT_TRUNCATED_NORMAL:
    default: {
      tf_output n = random_op(l, "TruncatedNormal", shape, dt, in->seed, st);
      n = binop(l, "Mul", n, tf__layers_scalar(l, dt, in->stddev, st), st);
      return binop(l, "Add", n, tf__layers_scalar(l, dt, in->mean, st), st);
    }
  }
}

/* ---- variables ------------------------------------------------------------- */

static tf_code check_var(tf_layers *l, const char *name, const tf_shape *s,
                         tf_dtype dt, const tf_initializer *init,
                         tf_status *st) {
  char b[128];
  if (name == NULL || name[0] == '\0') {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "variable: empty name");
  }
  if (s->rank < 0 || s->rank > TF_MAX_RANK || !tf_shape_is_fully_defined(s)) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "variable '%s': shape %s "
                         "must be fully defined", name,
                         tf_shape_str(s, b, sizeof b));
  }
  for (int i = 0; i < s->rank; i++) {
    if (s->dims[i] > INT32_MAX) {
      return tf_status_set(st, TF_INVALID_ARGUMENT, "variable '%s': dim %d "
                           "of shape %s is too large", name, i,
                           tf_shape_str(s, b, sizeof b));
    }
  }
  if (tf_shape_num_elements(s) < 0) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "variable '%s': shape %s "
                         "has too many elements", name,
                         tf_shape_str(s, b, sizeof b));
  }
  char *full = tf__xasprintf("%s%s", tf__graph_scope(l->g), name);
  bool taken = tf_graph_find(l->g, full) != NULL;
  tf_code c = taken ? tf_status_set(st, TF_ALREADY_EXISTS, "variable '%s': "
                                    "a node with this name already exists",
                                    full)
                    : TF_OK;
  free(full);
  TF_TRY(c);
  char what[160];
  snprintf(what, sizeof what, "variable '%s'", name);
  return tf__layers_check_init(what, init, dt, st);
}

static void record_var(tf_layers *l, tf_output var, const tf_shape *s,
                       tf_dtype dt, bool trainable, tf_node *assign) {
  if (l->n_vars == l->cap_vars) {
    l->cap_vars = l->cap_vars ? 2 * l->cap_vars : 16;
    l->vars = tf__xrealloc(l->vars, (size_t)l->cap_vars * sizeof *l->vars);
  }
  l->vars[l->n_vars++] = (tf_layer_var){
      .name = tf__xstrdup(tf_node_name(var.node)), .var = var, .shape = *s,
      .dtype = dt, .trainable = trainable, .assign = assign};
}

tf_output tf__layers_var(tf_layers *l, const char *name, tf_shape shape,
                         tf_dtype dt, const tf_initializer *init,
                         bool trainable, tf_status *st) {
  return tf__layers_var_fans(l, name, shape, &shape, dt, init, trainable, st);
}

tf_output tf__layers_var_fans(tf_layers *l, const char *name, tf_shape shape,
                              const tf_shape *fan_shape, tf_dtype dt,
                              const tf_initializer *init, bool trainable,
                              tf_status *st) {
  tf_output none = {NULL, 0};
  if (st->code != TF_OK || check_var(l, name, &shape, dt, init, st) != TF_OK) {
    return none;
  }
  tf_attr_kv a[] = {{"shape", tf_attr_shape(shape)},
                    {"dtype", tf_attr_type_v(dt)}};
  tf_output v = tf__layers_op(l, "VariableV2", name, NULL, 0, a, 2, st);
  if (v.node == NULL) {
    return none;
  }
  char *scope = tf__xasprintf("%s/", name);
  tf_graph_push_scope(l->g, scope);
  free(scope);
  tf_graph_push_scope(l->g, "Initializer/");
  tf_output value = init_value(l, init, &shape, fan_shape, dt, st);
  tf_graph_pop_scope(l->g);
  tf_output in[2] = {v, value};
  tf_output assign = tf__layers_op(l, "Assign", "Assign", in, 2, NULL, 0, st);
  tf_graph_pop_scope(l->g);
  if (assign.node == NULL) {
    return none;
  }
  record_var(l, v, &shape, dt, trainable, assign.node);
  return v;
}

void tf__layers_forget_vars(tf_layers *l, int n) {
  for (int i = n; i < l->n_vars; i++) {
    free((char *)l->vars[i].name);
  }
  if (n < l->n_vars) {
    l->n_vars = n;
  }
}

tf_code tf_layers_variable(tf_layers *l, const char *name, tf_shape shape,
                           tf_dtype dtype, const tf_initializer *init,
                           bool trainable, tf_output *out, tf_status *st) {
  tf_status local;
  if (st == NULL) {
    st = &local;
  }
  tf_status_init(st);
  *out = tf__layers_var(l, name, shape, dtype, init, trainable, st);
  return st->code;
}

tf_node *tf_layers_init_op(tf_layers *l, const char *name, tf_status *st) {
  tf_status local;
  if (st == NULL) {
    st = &local;
  }
  tf_status_init(st);
  if (l->n_vars == 0) {
    tf_status_set(st, TF_INVALID_ARGUMENT, "init op: the layers context has "
                  "no variables");
    return NULL;
  }
  char buf[256];
  const char *n = name ? name : tf__layers_unique(l, "init", buf, sizeof buf);
  tf_node_builder *b = tf_node_begin(l->g, "NoOp", n);
  for (int i = 0; i < l->n_vars; i++) {
    tf_node_add_control_input(b, l->vars[i].assign);
  }
  return tf_node_finish(b, st);
}

/* ---- listing and counting -------------------------------------------------- */

int tf_layers_num_vars(const tf_layers *l) { return l->n_vars; }

const tf_layer_var *tf_layers_var(const tf_layers *l, int i) {
  TF_ASSERT(i >= 0 && i < l->n_vars);
  return &l->vars[i];
}

int tf_layers_trainable(const tf_layers *l, tf_output *vars, int max) {
  int n = 0;
  for (int i = 0; i < l->n_vars; i++) {
    if (l->vars[i].trainable) {
      if (n < max) {
        vars[n] = l->vars[i].var;
      }
      n++;
    }
  }
  return n;
}

int64_t tf_layers_num_params(const tf_layers *l) {
  int64_t total = 0;
  for (int i = 0; i < l->n_vars; i++) {
    if (l->vars[i].trainable) {
      total += tf_shape_num_elements(&l->vars[i].shape);
    }
  }
  return total;
}

void tf_layers_print_params(const tf_layers *l, FILE *f) {
  int w = (int)strlen("variable");
  for (int i = 0; i < l->n_vars; i++) {
    if (l->vars[i].trainable && (int)strlen(l->vars[i].name) > w) {
      w = (int)strlen(l->vars[i].name);
    }
  }
  fprintf(f, "%-*s  %-20s %12s\n", w, "variable", "shape", "params");
  for (int i = 0; i < l->n_vars; i++) {
    const tf_layer_var *v = &l->vars[i];
    if (!v->trainable) {
      continue;
    }
    char b[128];
    fprintf(f, "%-*s  %-20s %12" PRId64 "\n", w, v->name,
            tf_shape_str(&v->shape, b, sizeof b),
            tf_shape_num_elements(&v->shape));
  }
  fprintf(f, "Total trainable parameters: %" PRId64 "\n",
          tf_layers_num_params(l));
}
