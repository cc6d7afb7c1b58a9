/* job_model.c: builds a job spec's model section (job_model.h): the
 * variables once through a tf_layers context (so initializers and seeds
 * are the layer builders'), then replicas of the forward pass, loss and
 * metrics that read those variables, with every new node put on the
 * replica's device; the optimizer with its schedule and clipping; the
 * init target. The spec was shape-checked when parsed, so the builders'
 * own checks fail here only for inputs of the wrong dtype or shape. */
#include "lib/runtime/job_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "lib/core/cc/layers_impl.h"
#include "lib/core/graph/graph_impl.h"
#include "tf/gradients.h"

/* A caller's st may be NULL; the chained builders need one that is OK. */
#define STATUS_INIT(st, local)                                                 \
  do {                                                                         \
    if ((st) == NULL) (st) = &(local);                                         \
    tf_status_init(st);                                                        \
  } while (0)

struct tf_job_vars {
  tf_layers *l;        /* owns the tf_layer_var records */
  tf_graph *g;
  int n;
  tf_output *refs;     /* [n] */
  int *first, *last;   /* [n] node index range of each variable's nodes */
  int (*of_layer)[2];  /* [n_layers] kernel/table and bias index, or -1 */
};

void tf_job_set_devices(tf_graph *g, int from, int to, const char *device) {
  if (device == NULL || device[0] == '\0') {
    return;
  }
  for (int i = from; i < to; i++) {
    tf_node *n = tf_graph_node(g, i);
    free(n->device);
    n->device = tf__xstrdup(device);
  }
}

static bool prefix_ok(const char *prefix, const char *what, tf_status *st) {
  size_t n = prefix ? strlen(prefix) : 0;
  if (n > 0 && prefix[n - 1] != '/') {
    tf_status_set(st, TF_INVALID_ARGUMENT, "%s: prefix '%s' must end in '/'",
                  what, prefix);
    return false;
  }
  return true;
}

/* The dtype the model computes in: the input's when floating. */
static tf_dtype compute_dtype(const tf_job_spec *s) {
  tf_dtype dt = s->model.input.dtype;
  return dt == TF_FLOAT32 || dt == TF_FLOAT64 ? dt : TF_FLOAT32;
}

/* ---- variables ----------------------------------------------------------- */

/* One variable `name` of layer i's scope; records its node range. */
static tf_code add_var(tf_job_vars *v, const char *name, tf_shape shape,
                       tf_dtype dt, const tf_initializer *init, int *index,
                       tf_status *st) {
  int first = tf_graph_num_nodes(v->g);
  tf_output ref;
  TF_TRY(tf_layers_variable(v->l, name, shape, dt, init, true, &ref, st));
  v->refs = tf__xrealloc(v->refs, (size_t)(v->n + 1) * sizeof *v->refs);
  v->first = tf__xrealloc(v->first, (size_t)(v->n + 1) * sizeof *v->first);
  v->last = tf__xrealloc(v->last, (size_t)(v->n + 1) * sizeof *v->last);
  v->refs[v->n] = ref;
  v->first[v->n] = first;
  v->last[v->n] = tf_graph_num_nodes(v->g);
  *index = v->n++;
  return TF_OK;
}

/* Layer i's variables, if it has any. */
static tf_code layer_vars(tf_job_vars *v, const tf_job_spec *s, int i,
                          tf_status *st) {
  const tf_job_layer *L = &s->model.layers[i];
  const tf_job_example *in0 = &s->model.input;
  int rank = i == 0 ? in0->rank : s->model.layers[i - 1].out_rank;
  const int64_t *in = i == 0 ? in0->dims : s->model.layers[i - 1].out_dims;
  tf_dtype dt = compute_dtype(s);
  tf_shape k;
  if (L->kind == TF_JOB_LAYER_DENSE) {
    k = tf_shape_of(2, in[rank - 1], L->units);
  } else if (L->kind == TF_JOB_LAYER_CONV2D) {
    k = tf_shape_of(4, L->window[0], L->window[1], in[2], L->units);
  } else if (L->kind == TF_JOB_LAYER_EMBEDDING) {
    k = tf_shape_of(2, L->input_dim, L->units);
  } else if (L->kind == TF_JOB_LAYER_LSTM) {
    k = tf_shape_of(2, in[1], 4 * L->units);
  } else {
    return TF_OK;
  }
  char scope[TF_JOB_NAME_MAX + 2];
  snprintf(scope, sizeof scope, "%s/", L->name);
  tf_graph_push_scope(v->g, scope);
  bool emb = L->kind == TF_JOB_LAYER_EMBEDDING;
  tf_code code = add_var(v, emb ? "embeddings" : "kernel", k, dt,
                         &L->kernel_init, &v->of_layer[i][0], st);
  bool lstm = L->kind == TF_JOB_LAYER_LSTM;
  int recurrent; /* lstm: right after the kernel */
  if (code == TF_OK && lstm) {
    code = add_var(v, "recurrent_kernel", tf_shape_of(2, L->units, 4 * L->units), dt,
                   &L->kernel_init, &recurrent, st);
  }
  if (code == TF_OK && !emb && L->use_bias) {
    code = add_var(v, "bias", tf_shape_of(1, (lstm ? 4 : 1) * L->units), dt,
                   &L->bias_init, &v->of_layer[i][1], st);
  }
  tf_graph_pop_scope(v->g);
  return code;
}

tf_code tf_job_vars_new(const tf_job_spec *s, tf_graph *g, const char *prefix,
                        tf_job_vars **out, tf_status *st) {
  *out = NULL;
  if (!s->has_model) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: the job has a graph "
                         "file, not a model section, to build", s->path);
  }
  if (!prefix_ok(prefix, "job variables", st)) {
    return st->code;
  }
  tf_job_vars *v = tf__xcalloc(1, sizeof *v);
  v->g = g;
  v->l = tf_layers_new(g, s->model.seed);
  v->of_layer = tf__xcalloc((size_t)s->model.n_layers, sizeof *v->of_layer);
  bool scoped = prefix != NULL && prefix[0] != '\0';
  if (scoped) {
    tf_graph_push_scope(g, prefix);
  }
  tf_code code = TF_OK;
  for (int i = 0; i < s->model.n_layers && code == TF_OK; i++) {
    v->of_layer[i][0] = v->of_layer[i][1] = -1;
    code = layer_vars(v, s, i, st);
  }
  if (scoped) {
    tf_graph_pop_scope(g);
  }
  if (code != TF_OK) {
    tf_job_vars_free(v);
    return code;
  }
  *out = v;
  return TF_OK;
}

void tf_job_vars_free(tf_job_vars *v) {
  if (v == NULL) {
    return;
  }
  tf_layers_free(v->l);
  free(v->refs);
  free(v->first);
  free(v->last);
  free(v->of_layer);
  free(v);
}

int tf_job_vars_count(const tf_job_vars *v) { return v->n; }

const tf_layer_var *tf_job_vars_at(const tf_job_vars *v, int i) {
  TF_ASSERT(i >= 0 && i < v->n);
  return tf_layers_var(v->l, i);
}

int64_t tf_job_vars_bytes(const tf_job_vars *v, int i) {
  const tf_layer_var *x = tf_job_vars_at(v, i);
  return tf_shape_num_elements(&x->shape) * (int64_t)tf_dtype_size(x->dtype);
}

const tf_output *tf_job_vars_refs(const tf_job_vars *v) { return v->refs; }

void tf_job_vars_set_device(tf_job_vars *v, int i, const char *device) {
  TF_ASSERT(i >= 0 && i < v->n);
  tf_job_set_devices(v->g, v->first[i], v->last[i], device);
}

/* ---- one replica --------------------------------------------------------- */

/* A node op(in[0..n)) named name in the current scope, chained. */
static tf_output op(tf_layers *l, const char *op, const char *name,
                    const tf_output *in, int n, tf_status *st) {
  return tf__layers_op(l, op, name, in, n, NULL, 0, st);
}

/* Dense or conv2d on x with layer i's variables. */
static tf_output kernel_layer(tf_layers *l, const tf_job_vars *v,
                              const tf_job_layer *L, int i, tf_output x,
                              tf_status *st) {
  tf_output in[2] = {x, v->refs[v->of_layer[i][0]]};
  tf_output y;
  if (L->kind == TF_JOB_LAYER_DENSE) {
    y = op(l, "MatMul", NULL, in, 2, st);
  } else {
    int64_t strides[4] = {1, L->strides[0], L->strides[1], 1};
    tf_attr_kv a[] = {{"strides", tf_attr_int_list(strides, 4)},
                      {"padding",
                       tf_attr_string(L->same_padding ? "SAME" : "VALID")}};
    y = tf__layers_op(l, "Conv2D", NULL, in, 2, a, 2, st);
  }
  if (L->use_bias && st->code == TF_OK) {
    tf_output b[2] = {y, v->refs[v->of_layer[i][1]]};
    y = op(l, "BiasAdd", NULL, b, 2, st);
  }
  if (st->code == TF_OK) {
    tf_layer_activation(l, y, L->activation, NULL, &y, st);
  }
  return st->code == TF_OK ? y : (tf_output){NULL, 0};
}

/* Layer i on x, under the scope "<layer>/". */
static tf_code build_layer(tf_layers *l, const tf_job_vars *v,
                           const tf_job_layer *L, int i, bool training,
                           tf_output *x, tf_status *st) {
  char scope[TF_JOB_NAME_MAX + 2];
  snprintf(scope, sizeof scope, "%s/", L->name);
  const char *pad = L->same_padding ? "SAME" : "VALID";
  tf_output y = {NULL, 0};
  switch (L->kind) {
  case TF_JOB_LAYER_MAX_POOL:
    return tf_layer_max_pool(l, *x, L->window[0], L->window[1], L->strides[0],
                             L->strides[1], pad, scope, x, st);
  case TF_JOB_LAYER_AVG_POOL:
    return tf_layer_avg_pool(l, *x, L->window[0], L->window[1], L->strides[0],
                             L->strides[1], pad, scope, x, st);
  case TF_JOB_LAYER_FLATTEN:
    return tf_layer_flatten(l, *x, scope, x, st);
  case TF_JOB_LAYER_DROPOUT:
    return tf_layer_dropout(l, *x, L->rate, (tf_output){NULL, 0}, training,
                            L->seed, scope, x, st);
  default:
    break;
  }
  tf_graph_push_scope(tf_layers_graph(l), scope);
  if (L->kind == TF_JOB_LAYER_EMBEDDING) {
    tf_layer_embedding_lookup(l, v->refs[v->of_layer[i][0]], *x, NULL, &y,
                              st);
  } else if (L->kind == TF_JOB_LAYER_ACTIVATION) {
    tf_layer_activation(l, *x, L->activation, NULL, &y, st);
  } else if (L->kind == TF_JOB_LAYER_LSTM) {
    int k = v->of_layer[i][0];
    y = tf__layers_lstm(l, *x, L->units, v->refs[k], v->refs[k + 1],
                        v->refs[v->of_layer[i][1]], st);
  } else {
    y = kernel_layer(l, v, L, i, *x, st);
  }
  tf_graph_pop_scope(tf_layers_graph(l));
  *x = y;
  return st->code;
}

/* images of the input dtype, reshaped to [-1] + input.shape when their
 * static shape is not [?] + input.shape. */
static tf_code model_input(tf_layers *l, const tf_job_spec *s,
                           tf_output images, tf_output *x, tf_status *st) {
  const tf_job_example *e = &s->model.input;
  char b[96];
  if (images.node == NULL || tf_node_output_type(images.node, images.index) !=
                                 e->dtype) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: the model's images "
                         "must be %s (model.input.dtype), got %s", s->path,
                         tf_dtype_name(e->dtype), images.node ?
                         tf_dtype_name(tf_node_output_type(images.node,
                                                           images.index))
                         : "nothing");
  }
  const tf_shape *sh = tf_node_output_shape(images.node, images.index);
  bool same = sh->rank == e->rank + 1;
  for (int i = 0; same && i < e->rank; i++) {
    same = sh->dims[i + 1] == e->dims[i];
  }
  *x = images;
  if (same) {
    return TF_OK;
  }
  int64_t want = 1, have = 1;
  for (int i = 0; i < e->rank; i++) {
    want *= e->dims[i];
  }
  for (int i = 1; i < sh->rank && have > 0; i++) {
    have = sh->dims[i] < 0 ? -1 : have * sh->dims[i];
  }
  if (sh->rank == 0 || (sh->rank > 0 && have > 0 && have != want)) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: images of shape %s "
                         "hold %lld elements per example; the model's input "
                         "needs %lld (model.input.shape)", s->path,
                         tf_shape_str(sh, b, sizeof b), (long long)have,
                         (long long)want);
  }
  int32_t dims[TF_JOB_RANK_MAX + 1] = {-1};
  for (int i = 0; i < e->rank; i++) {
    dims[i + 1] = (int32_t)e->dims[i];
  }
  tf_output in[2] = {images, tf__layers_ivec(l, dims, e->rank + 1, st)};
  *x = op(l, "Reshape", "images", in, 2, st);
  if (st->code != TF_OK) {
    return tf_status_set(st, st->code, "%s: images of shape %s do not "
                         "reshape to the model's input: %s", s->path,
                         tf_shape_str(sh, b, sizeof b), st->msg);
  }
  return TF_OK;
}

/* The loss on logits and labels, as node "loss". */
static tf_code model_loss(tf_layers *l, const tf_job_spec *s,
                          tf_output logits, tf_output labels, tf_output *out,
                          tf_status *st) {
  tf_dtype ldt = labels.node ? tf_node_output_type(labels.node, labels.index)
                             : TF_DTYPE_INVALID;
  bool ids = ldt == TF_INT32 || ldt == TF_INT64;
  tf_output loss;
  if (s->model.loss == TF_JOB_LOSS_SPARSE_SOFTMAX_CE) {
    TF_TRY(tf_layer_sparse_softmax_cross_entropy(l, logits, labels, NULL,
                                                 &loss, st));
  } else {
    if (ids) {
      tf_dtype dt = tf_node_output_type(logits.node, logits.index);
      tf_output in[4] = {
          labels, tf__layers_scalar(l, TF_INT32, (double)s->model.num_classes,
                                    st),
          tf__layers_scalar(l, dt, 1.0, st), tf__layers_scalar(l, dt, 0.0, st)};
      labels = op(l, "OneHot", "labels_one_hot", in, 4, st);
      TF_TRY(st->code);
    }
    TF_TRY(tf_layer_softmax_cross_entropy(l, logits, labels, NULL, &loss, st));
  }
  *out = op(l, "Identity", "loss", &loss, 1, st);
  return st->code;
}

/* Everything from the images to the metrics, in the current scope. */
static tf_code replica_ops(tf_layers *l, const tf_job_spec *s,
                           const tf_job_vars *v, tf_output images,
                           tf_output labels, bool training,
                           tf_job_replica *out, tf_status *st) {
  tf_output x;
  TF_TRY(model_input(l, s, images, &x, st));
  for (int i = 0; i < s->model.n_layers; i++) {
    TF_TRY(build_layer(l, v, &s->model.layers[i], i, training, &x, st));
  }
  out->logits = op(l, "Identity", "logits", &x, 1, st);
  TF_TRY(st->code);
  TF_TRY(model_loss(l, s, out->logits, labels, &out->loss, st));
  for (int k = 0; k < s->model.n_metrics; k++) {
    tf_output m; /* accuracy is the only metric */
    TF_TRY(tf_layer_accuracy(l, out->logits, labels, NULL, &m, st));
    out->metrics[k] = op(l, "Identity", "accuracy", &m, 1, st);
    out->metric_names[k] = "accuracy";
    out->n_metrics = k + 1;
    TF_TRY(st->code);
  }
  return TF_OK;
}

tf_code tf_job_replica_build(const tf_job_spec *s, const tf_job_vars *v,
                             tf_graph *g, const char *prefix,
                             const char *device, tf_output images,
                             tf_output labels, bool training,
                             tf_job_replica *out, tf_status *st) {
  tf_status local;
  STATUS_INIT(st, local);
  memset(out, 0, sizeof *out);
  if (!prefix_ok(prefix, "job replica", st)) {
    return st->code;
  }
  int first = tf_graph_num_nodes(g);
  tf_layers *l = tf_layers_new(g, s->model.seed);
  bool scoped = prefix != NULL && prefix[0] != '\0';
  if (scoped) {
    tf_graph_push_scope(g, prefix);
  }
  tf_code code = replica_ops(l, s, v, images, labels, training, out, st);
  if (scoped) {
    tf_graph_pop_scope(g);
  }
  tf_layers_free(l);
  tf_job_set_devices(g, first, tf_graph_num_nodes(g), device);
  out->n_vars = v->n;
  out->vars = v->refs;
  return code;
}

/* ---- training ------------------------------------------------------------ */

/* The schedule's learning-rate tensor on global_step. */
static tf_code schedule(const tf_job_spec *s, tf_graph *g, tf_output gs,
                        tf_output *lr, tf_status *st) {
  const tf_job_schedule *sc = &s->optimizer.schedule;
  double base = s->optimizer.options.learning_rate;
  if (gs.node == NULL) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: the optimizer's "
                         "learning-rate schedule needs global_step", s->path);
  }
  tf_graph_push_scope(g, "learning_rate/");
  tf_code code;
  switch (sc->kind) {
  case TF_JOB_SCHEDULE_EXPONENTIAL:
    code = tf_exponential_decay(g, base, gs, sc->decay_steps, sc->decay_rate,
                                sc->staircase, lr, st);
    break;
  case TF_JOB_SCHEDULE_INVERSE_TIME:
    code = tf_inverse_time_decay(g, base, gs, sc->decay_steps, sc->decay_rate,
                                 sc->staircase, lr, st);
    break;
  case TF_JOB_SCHEDULE_POLYNOMIAL:
    code = tf_polynomial_decay(g, base, gs, sc->decay_steps,
                               sc->end_learning_rate, sc->power, sc->cycle,
                               lr, st);
    break;
  default:
    code = tf_piecewise_constant(g, gs, sc->boundaries, sc->n_boundaries,
                                 sc->values, lr, st);
    break;
  }
  tf_graph_pop_scope(g);
  return code;
}

tf_code tf_job_optimizer_new(const tf_job_spec *s, tf_graph *g,
                             tf_output global_step, tf_optimizer **out,
                             tf_status *st) {
  *out = NULL;
  tf_optimizer_options o = s->optimizer.options;
  if (s->optimizer.schedule.kind != TF_JOB_SCHEDULE_NONE) {
    TF_TRY(schedule(s, g, global_step, &o.learning_rate_tensor, st));
  }
  *out = tf_optimizer_new(s->optimizer.kind, &o);
  return TF_OK;
}

tf_node *tf_job_apply_gradients(const tf_job_spec *s, tf_optimizer *o,
                                tf_graph *g, const tf_output *vars,
                                const tf_grad *grads, int n,
                                tf_output global_step, const char *name,
                                tf_status *st) {
  if (s->optimizer.clip_norm <= 0) {
    return tf_optimizer_apply_gradients(o, g, vars, grads, n, global_step,
                                        name, st);
  }
  tf_grad *clipped = tf__xcalloc((size_t)n + 1, sizeof *clipped);
  tf_output norm;
  tf_node *t = NULL;
  if (tf_clip_by_global_norm(g, grads, n, s->optimizer.clip_norm, clipped,
                             &norm, st) == TF_OK) {
    t = tf_optimizer_apply_gradients(o, g, vars, clipped, n, global_step,
                                     name, st);
  }
  free(clipped);
  return t;
}

tf_node *tf_job_minimize(const tf_job_spec *s, tf_optimizer *o, tf_graph *g,
                         tf_output loss, const tf_output *vars, int n,
                         tf_output global_step, const char *name,
                         tf_status *st) {
  if (s->optimizer.clip_norm <= 0) {
    /* minimize gates the updates on every gradient (train.h) */
    return tf_optimizer_minimize(o, g, loss, vars, n, global_step, name, st);
  }
  /* Clipped: every gradient is scaled by the global norm of all of them,
   * so no update can start before every gradient is computed. */
  tf_grad *grads = tf__xcalloc((size_t)n + 1, sizeof *grads);
  tf_node *t = NULL;
  if (tf_gradients_sparse(g, &loss, 1, vars, n, NULL, grads, st) == TF_OK) {
    t = tf_job_apply_gradients(s, o, g, vars, grads, n, global_step, name,
                               st);
  }
  free(grads);
  return t;
}

tf_node *tf_job_init_op(tf_graph *g, const char *name, tf_status *st) {
  return tf_global_variables_initializer(g, name ? name : "init", st);
}
