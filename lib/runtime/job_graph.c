/* job_graph.c: a job's replicated training graph (job_graph.h): variables
 * on ps tasks, a replica and an input pipeline per worker, the async or
 * sync update built from accumulators and token queues, and an eval
 * replica fed by placeholders. */
#include "lib/runtime/job_graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "lib/core/graph/graph_impl.h"
#include "lib/runtime/job_graph_impl.h"
#include "lib/runtime/job_model.h"
#include "tf/gradients.h"
#include "tf/train.h"

typedef struct builder {
  const tf_job_spec *s;
  const tf_job_graph_options *o;
  tf_job_graph *jg;
  tf_graph *g;
  tf_job_vars *vars;
  tf_output global_step;
  tf_optimizer *opt;
  tf_output *accs;      /* sync: [n_vars] */
  tf_output *tokens;    /* sync: [workers] */
  void **keep;          /* [workers] input pipeline memory */
  int (*ranges)[2];     /* [workers] node ids each replica built */
  tf_status *st;
} builder;

tf_node *tf__job_node(tf_graph *g, const char *op, const char *name,
                      const tf_output *in, int n, const tf_attr_kv *a, int na,
                      tf_node *const *ctl, int nc, const char *device,
                      tf_status *st) {
  if (st->code != TF_OK) {
    return NULL;
  }
  tf_node_builder *nb = tf_node_begin(g, op, name);
  for (int i = 0; i < n; i++) {
    tf_node_add_input(nb, in[i]);
  }
  for (int i = 0; i < na; i++) {
    tf_node_set_attr(nb, a[i].name, a[i].value);
  }
  for (int i = 0; i < nc; i++) {
    tf_node_add_control_input(nb, ctl[i]);
  }
  if (device != NULL) {
    tf_node_set_device(nb, device);
  }
  return tf_node_finish(nb, st);
}

static tf_output node(builder *b, const char *op, const char *name,
                      const tf_output *in, int n, const tf_attr_kv *a, int na,
                      tf_node *const *ctl, int nc, const char *device) {
  return (tf_output){tf__job_node(b->g, op, name, in, n, a, na, ctl, nc, device,
                                  b->st), 0};
}

static tf_output const_t(builder *b, const char *name, tf_tensor *t,
                         const char *device) {
  tf_attr_kv a[] = {{"value", tf_attr_tensor(t)},
                    {"dtype", tf_attr_type_v(t->dtype)}};
  tf_output o = node(b, "Const", name, NULL, 0, a, 2, NULL, 0, device);
  tf_tensor_unref(t);
  return o;
}

/* ---- variables ------------------------------------------------------------ */

/* Spreads the variables over the ps devices (job_graph.h). */
static void place_vars(builder *b) {
  int n = tf_job_vars_count(b->vars), np = b->o->n_ps;
  int64_t *load = tf__xcalloc((size_t)np, sizeof *load);
  int *order = tf__xcalloc((size_t)n + 1, sizeof *order);
  for (int i = 0; i < n; i++) {
    order[i] = i;
  }
  bool balanced = b->s->replication.placement == TF_JOB_PLACE_BALANCED;
  for (int i = 1; balanced && i < n; i++) { /* largest first, stable */
    for (int j = i; j > 0 && tf_job_vars_bytes(b->vars, order[j]) >
                                 tf_job_vars_bytes(b->vars, order[j - 1]); j--) {
      int t = order[j];
      order[j] = order[j - 1];
      order[j - 1] = t;
    }
  }
  b->jg->var_devices = tf__xcalloc((size_t)n + 1, sizeof(char *));
  b->jg->n_vars = n;
  for (int k = 0; k < n; k++) {
    int v = order[k], t = k % np;
    for (int p = 0; balanced && p < np; p++) {
      t = load[p] < load[t] || p == 0 ? p : t;
    }
    load[t] += tf_job_vars_bytes(b->vars, v);
    b->jg->var_devices[v] = tf__xstrdup(b->o->ps_devices[t]);
    tf_job_vars_set_device(b->vars, v, b->o->ps_devices[t]);
  }
  free(load);
  free(order);
}

static tf_code make_vars(builder *b) {
  TF_TRY(tf_job_vars_new(b->s, b->g, NULL, &b->vars, b->st));
  place_vars(b);
  int first = tf_graph_num_nodes(b->g);
  TF_TRY(tf_global_step(b->g, &b->global_step, b->st));
  tf_job_set_devices(b->g, first, tf_graph_num_nodes(b->g), b->o->ps_devices[0]);
  return tf_job_optimizer_new(b->s, b->g, b->global_step, &b->opt, b->st);
}

/* ---- input ------------------------------------------------------------------ */

typedef struct input_keep {
  tf_input_source src[2];
  const char **images, **labels;
} input_keep;

static tf_input_source source(const tf_job_spec *s, const char **files, int n,
                              bool images) {
  const tf_job_input *in = &s->input;
  tf_input_source src = {.files = files, .n_files = n};
  src.records = in->format == TF_RECORD_IDX ? tf_record_options_idx()
                                            : (tf_record_options){0};
  src.records.format = in->format;
  src.records.compression = in->compression;
  tf_dtype raw = images ? in->image_dtype : in->label_dtype;
  if (in->format == TF_RECORD_IDX) {
    src.records.idx_dtype = raw;
    src.records.idx_record_shape = tf_shape_scalar();
  }
  src.decode.raw_dtype = raw;
  src.decode.little_endian = in->little_endian;
  if (images) {
    const tf_job_example *e = tf_job_spec_example(s);
    src.decode.dtype = e->dtype;
    bool fl = e->dtype == TF_FLOAT32 || e->dtype == TF_FLOAT64;
    src.decode.scale = fl ? in->scale : 0;
    src.decode.shape.rank = e->rank;
    for (int i = 0; i < e->rank; i++) {
      src.decode.shape.dims[i] = e->dims[i];
    }
  } else {
    src.decode.dtype = TF_INT32;
    src.decode.shape = tf_shape_scalar();
  }
  return src;
}

tf_input_pipeline *tf_job_input_new(const tf_job_spec *s, int worker,
                                    tf_graph *g, const char *name,
                                    void **keep, tf_status *st) {
  input_keep *k = tf__xcalloc(1, sizeof *k);
  *keep = k;
  int ni = 0, nl = 0;
  tf_job_spec_worker_files(s, &s->input.train_images, worker, &k->images, &ni);
  tf_job_spec_worker_files(s, &s->input.train_labels, worker, &k->labels, &nl);
  k->src[0] = source(s, k->images, ni, true);
  k->src[1] = source(s, k->labels, nl, false);
  if (s->input.format == TF_RECORD_IDX && ni > 0) {
    /* The pipeline checks every file's record dims against the first's
     * (the model only needs their element count). */
    tf_record_reader *r = NULL;
    tf_record_options o = k->src[0].records;
    o.idx_record_shape = tf_shape_unknown();
    if (tf_record_reader_open(k->images[0], &o, &r, st) != TF_OK) {
      return NULL;
    }
    k->src[0].records.idx_record_shape = *tf_record_reader_record_shape(r);
    tf_record_reader_close(r);
  }
  tf_input_options io = {.name = name, .sources = k->src, .n_sources = 2,
                         .batch_size = s->input.batch_size,
                         .num_epochs = 0, .shuffle = s->input.shuffle,
                         .seed = tf_job_spec_worker_seed(s, worker),
                         .threads = s->input.read_threads,
                         .read_batch = s->input.batch_size};
  /* num_epochs 0: the job runner counts epochs in steps (job_run.h), so
   * that no replica runs out of input while the others wait for it. */
  return tf_input_pipeline_new(g, &io, st);
}

/* ---- replicas --------------------------------------------------------------- */

static char *fmt(const char *f, int i) { return tf__xasprintf(f, i); }

/* Sync: replica i's gradients into the accumulators, then its token. */
static tf_node *sync_train(builder *b, int i, const tf_grad *grads,
                           const char *dev) {
  char name[96];
  int n = tf_job_vars_count(b->vars);
  tf_var ls;
  snprintf(name, sizeof name, "replica_%d/local_step", i);
  tf_output zero = const_t(b, NULL, tf_tensor_scalar_i64(0), dev);
  if (b->st->code != TF_OK ||
      tf_variable_create(b->g, name, tf_shape_scalar(), TF_INT64, zero, &ls,
                         b->st) != TF_OK) {
    return NULL;
  }
  snprintf(name, sizeof name, "replica_%d/local_step/read", i);
  tf_output step = node(b, "Identity", name, &ls.ref, 1, NULL, 0, NULL, 0, dev);
  tf_node **applied = tf__xcalloc((size_t)n + 1, sizeof *applied);
  int na = 0;
  for (int j = 0; j < n && b->st->code == TF_OK; j++) {
    if (grads[j].values.node == NULL) {
      continue;
    }
    const tf_layer_var *v = tf_job_vars_at(b->vars, j);
    tf_output in[3] = {b->accs[j], step, grads[j].values};
    tf_attr_kv a[] = {{"dtype", tf_attr_type_v(v->dtype)}};
    snprintf(name, sizeof name, "replica_%d/apply/%s", i, v->name);
    applied[na++] = node(b, "AccumulatorApplyGradient", name, in, 3, a, 1,
                         NULL, 0, NULL).node;
  }
  tf_dtype i64 = TF_INT64;
  tf_attr_kv qa[] = {{"component_types", tf_attr_type_list(&i64, 1)}};
  snprintf(name, sizeof name, "replica_%d/token", i);
  tf_output tok = node(b, "QueueDequeue", name, &b->tokens[i], 1, qa, 1,
                       applied, na, NULL);
  free(applied);
  snprintf(name, sizeof name, "replica_%d/global_step_now", i);
  /* Beside global_step: a read on another task would be sent when the
   * step starts, before the token. */
  tf_output now = node(b, "Identity", name, &b->global_step, 1, NULL, 0,
                       &tok.node, 1, b->o->ps_devices[0]);
  tf_output as[2] = {ls.ref, now};
  snprintf(name, sizeof name, "replica_%d/train", i);
  return node(b, "Assign", name, as, 2, NULL, 0, NULL, 0, dev).node;
}

/* A sparse gradient (embedding rows) as a dense one for the accumulator:
 * UnsortedSegmentSum of the rows by their indices over the variable's
 * static row count. */
static void densify(builder *b, tf_grad *gr, int i, int j, const char *dev) {
  if (!tf_grad_is_sparse(gr)) {
    return;
  }
  char name[96];
  const tf_layer_var *v = tf_job_vars_at(b->vars, j);
  tf_output rows = const_t(b, NULL, tf_tensor_scalar_i32((int32_t)v->shape.dims[0]),
                           dev);
  tf_output in[3] = {gr->values, gr->indices, rows};
  snprintf(name, sizeof name, "replica_%d/dense_grad/%s", i, v->name);
  gr->values = node(b, "UnsortedSegmentSum", name, in, 3, NULL, 0, NULL, 0, dev);
  gr->indices = gr->dense_shape = (tf_output){NULL, 0};
}

static tf_code replica(builder *b, int i) {
  char prefix[64], name[96];
  const char *dev = b->o->worker_devices[i];
  snprintf(prefix, sizeof prefix, "replica_%d/", i);
  snprintf(name, sizeof name, "replica_%d/input", i);
  int first = tf_graph_num_nodes(b->g);
  b->jg->inputs[i] = tf_job_input_new(b->s, i, b->g, name, &b->keep[i], b->st);
  TF_TRY(b->st->code);
  tf_job_set_devices(b->g, first, tf_graph_num_nodes(b->g), dev);
  tf_job_replica r;
  TF_TRY(tf_job_replica_build(b->s, b->vars, b->g, prefix, dev,
                              tf_input_pipeline_output(b->jg->inputs[i], 0),
                              tf_input_pipeline_output(b->jg->inputs[i], 1),
                              true, &r, b->st));
  b->jg->train[i] = fmt("replica_%d/train", i);
  b->jg->loss[i] = tf__xstrdup(tf_node_name(r.loss.node));
  int n = tf_job_vars_count(b->vars);
  tf_grad *grads = tf__xcalloc((size_t)n + 1, sizeof *grads);
  first = tf_graph_num_nodes(b->g);
  tf_gradients_sparse(b->g, &r.loss, 1, tf_job_vars_refs(b->vars), n, NULL,
                      grads, b->st);
  tf_job_set_devices(b->g, first, tf_graph_num_nodes(b->g), dev);
  if (b->st->code == TF_OK && b->jg->sync) {
    for (int j = 0; j < n && b->st->code == TF_OK; j++) {
      densify(b, &grads[j], i, j, dev);
    }
    sync_train(b, i, grads, dev);
  } else if (b->st->code == TF_OK) {
    tf_job_apply_gradients(b->s, b->opt, b->g, tf_job_vars_refs(b->vars),
                           grads, n, b->global_step, b->jg->train[i], b->st);
  }
  free(grads);
  return b->st->code;
}

/* ---- sync ------------------------------------------------------------------- */

/* The accumulators (one per variable, beside it) and token queues. */
static tf_code sync_state(builder *b) {
  int n = tf_job_vars_count(b->vars);
  char name[TF_JOB_NODE_MAX + 32];
  b->accs = tf__xcalloc((size_t)n + 1, sizeof *b->accs);
  for (int j = 0; j < n; j++) {
    const tf_layer_var *v = tf_job_vars_at(b->vars, j);
    snprintf(name, sizeof name, "sync/acc/%s", v->name);
    tf_attr_kv a[] = {{"dtype", tf_attr_type_v(v->dtype)},
                      {"shape", tf_attr_shape(v->shape)},
                      {"shared_name", tf_attr_string(name)}};
    b->accs[j] = node(b, "ConditionalAccumulator", name, NULL, 0, a, 3, NULL,
                      0, b->jg->var_devices[j]);
  }
  b->tokens = tf__xcalloc((size_t)b->o->workers, sizeof *b->tokens);
  tf_dtype i64 = TF_INT64;
  tf_shape scalar = tf_shape_scalar();
  for (int i = 0; i < b->o->workers; i++) {
    snprintf(name, sizeof name, "sync/token_%d", i);
    tf_attr_kv a[] = {{"component_types", tf_attr_type_list(&i64, 1)},
                      {"shapes", tf_attr_shape_list(&scalar, 1)},
                      {"shared_name", tf_attr_string(name)}};
    b->tokens[i] = node(b, "FIFOQueue", name, NULL, 0, a, 3, NULL, 0,
                        b->o->ps_devices[0]);
  }
  return b->st->code;
}

/* The chief's update: take, apply once, hand out tokens; and the close. */
static tf_code sync_update(builder *b) {
  int n = tf_job_vars_count(b->vars), w = b->o->workers;
  char name[TF_JOB_NODE_MAX + 32];
  tf_grad *grads = tf__xcalloc((size_t)n + 1, sizeof *grads);
  tf_output req = const_t(b, "sync/num_required",
                          tf_tensor_scalar_i32(b->jg->required),
                          b->o->ps_devices[0]);
  for (int j = 0; j < n; j++) {
    const tf_layer_var *v = tf_job_vars_at(b->vars, j);
    snprintf(name, sizeof name, "sync/take/%s", v->name);
    tf_attr_kv a[] = {{"dtype", tf_attr_type_v(v->dtype)}};
    tf_output in[2] = {b->accs[j], req};
    grads[j].values = node(b, "AccumulatorTakeGradient", name, in, 2, a, 1,
                           NULL, 0, NULL);
  }
  tf_node *apply = NULL;
  if (b->st->code == TF_OK) {
    apply = tf_job_apply_gradients(b->s, b->opt, b->g, tf_job_vars_refs(b->vars),
                                   grads, n, b->global_step, "sync/apply", b->st);
  }
  free(grads);
  TF_TRY(b->st->code);
  tf_output after = node(b, "Identity", "sync/global_step", &b->global_step, 1,
                         NULL, 0, &apply, 1, b->o->ps_devices[0]);
  tf_node **put = tf__xcalloc((size_t)w, sizeof *put);
  tf_node **closed = tf__xcalloc((size_t)w, sizeof *closed);
  tf_dtype i64 = TF_INT64;
  for (int i = 0; i < w; i++) {
    tf_output in[2] = {b->tokens[i], after};
    tf_attr_kv a[] = {{"Tcomponents", tf_attr_type_list(&i64, 1)}};
    snprintf(name, sizeof name, "sync/put_token_%d", i);
    put[i] = node(b, "QueueEnqueue", name, in, 2, a, 1, NULL, 0, NULL).node;
    tf_attr_kv c[] = {{"cancel_pending_enqueues", tf_attr_bool(true)}};
    snprintf(name, sizeof name, "sync/close_%d", i);
    closed[i] = node(b, "QueueClose", name, &b->tokens[i], 1, c, 1, NULL, 0,
                     NULL).node;
  }
  node(b, "NoOp", "sync/update", NULL, 0, NULL, 0, put, w, b->o->ps_devices[0]);
  node(b, "NoOp", "sync/close", NULL, 0, NULL, 0, closed, w, b->o->ps_devices[0]);
  free(put);
  free(closed);
  b->jg->update = tf__xstrdup("sync/update");
  b->jg->update_step = tf__xstrdup("sync/global_step");
  b->jg->close = tf__xstrdup("sync/close");
  return b->st->code;
}

/* ---- eval ------------------------------------------------------------------- */

static tf_code eval_replica(builder *b) {
  const tf_job_example *e = &b->s->model.input;
  const char *dev = b->o->eval_device ? b->o->eval_device : b->o->worker_devices[0];
  tf_shape xs = {.rank = e->rank + 1};
  xs.dims[0] = -1;
  for (int i = 0; i < e->rank; i++) {
    xs.dims[i + 1] = e->dims[i];
  }
  tf_attr_kv xa[] = {{"dtype", tf_attr_type_v(e->dtype)},
                     {"shape", tf_attr_shape(xs)}};
  tf_attr_kv ya[] = {{"dtype", tf_attr_type_v(TF_INT32)},
                     {"shape", tf_attr_shape(tf_shape_of(1, -1))}};
  tf_output x = node(b, "Placeholder", "eval/images", NULL, 0, xa, 2, NULL, 0, dev);
  tf_output y = node(b, "Placeholder", "eval/labels", NULL, 0, ya, 2, NULL, 0, dev);
  TF_TRY(b->st->code);
  tf_job_replica r;
  TF_TRY(tf_job_replica_build(b->s, b->vars, b->g, "eval/", dev, x, y, false,
                              &r, b->st));
  tf_job_graph *jg = b->jg;
  jg->eval_images = tf__xstrdup("eval/images");
  jg->eval_labels = tf__xstrdup("eval/labels");
  jg->eval_loss = tf__xstrdup(tf_node_name(r.loss.node));
  jg->n_eval_metrics = r.n_metrics;
  jg->eval_metrics = tf__xcalloc((size_t)r.n_metrics + 1, sizeof(char *));
  jg->metric_names = tf__xcalloc((size_t)r.n_metrics + 1, sizeof(char *));
  for (int k = 0; k < r.n_metrics; k++) {
    jg->eval_metrics[k] = tf__xstrdup(tf_node_name(r.metrics[k].node));
    jg->metric_names[k] = tf__xstrdup(r.metric_names[k]);
  }
  return TF_OK;
}

/* ---- the whole graph -------------------------------------------------------- */

/* Gives a node without a device the device of a node it shares a ref edge
 * with, to a fixed point; reports whether anything changed. */
static bool spread_refs(tf_graph *g) {
  bool changed = false;
  for (int i = 0; i < tf_graph_num_nodes(g); i++) {
    tf_node *n = tf_graph_node(g, i);
    for (int k = 0; k < n->n_inputs; k++) {
      tf_node *src = n->inputs[k].node;
      if (!tf__node_input_is_ref(n, k) || (n->device[0] != '\0') ==
                                             (src->device[0] != '\0')) {
        continue;
      }
      tf_node *to = n->device[0] ? src : n, *from = n->device[0] ? n : src;
      free(to->device);
      to->device = tf__xstrdup(from->device);
      changed = true;
    }
  }
  return changed;
}

static void set_device(tf_node *n, const char *device) {
  free(n->device);
  n->device = tf__xstrdup(device);
}

/* job_graph_impl.h */
void tf__job_pin_devices(tf_graph *g, int (*ranges)[2], int workers,
                         const char *const *worker_devices, const char *ps0) {
  while (spread_refs(g)) {
  }
  for (int i = 0; i < tf_graph_num_nodes(g); i++) {
    tf_node *n = tf_graph_node(g, i);
    if (n->device[0] == '\0' && tf_node_attr(n, "container") != NULL) {
      set_device(n, ps0);
    }
  }
  while (spread_refs(g)) {
  }
  for (int r = 0; r < workers; r++) {
    for (int i = ranges[r][0]; i < ranges[r][1]; i++) {
      tf_node *n = tf_graph_node(g, i);
      if (n->device[0] == '\0') {
        set_device(n, worker_devices[r]);
      }
    }
  }
  for (int i = 0; i < tf_graph_num_nodes(g); i++) {
    tf_node *n = tf_graph_node(g, i);
    if (n->device[0] == '\0') {
      set_device(n, ps0);
    }
  }
}

/* job_graph_impl.h */
void tf__job_set_container(tf_graph *g, const char *c) {
  tf_attr_value v = tf_attr_string(c);
  for (int i = 0; i < tf_graph_num_nodes(g); i++) {
    tf_node *n = tf_graph_node(g, i);
    for (int k = 0; k < n->n_attrs; k++) {
      if (strcmp(n->attr_names[k], "container") == 0) {
        tf_attr_value_fini(&n->attrs[k]);
        n->attrs[k] = tf_attr_value_clone(&v);
      }
    }
  }
}

static tf_code check(const tf_job_spec *s, const tf_job_graph_options *o,
                     tf_status *st) {
  if (s->has_model && !s->input.present) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: a job run by the master "
                         "needs an input section", s->path);
  }
  if (o->workers < 1 || o->n_ps < 1) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: a job needs at least one "
                         "worker and one ps task, got %d and %d", s->path,
                         o->workers, o->n_ps);
  }
  return TF_OK;
}

static tf_code build_all(builder *b) {
  TF_TRY(make_vars(b));
  if (b->jg->sync) {
    TF_TRY(sync_state(b));
  }
  b->ranges = tf__xcalloc((size_t)b->o->workers, sizeof *b->ranges);
  for (int i = 0; i < b->o->workers; i++) {
    b->ranges[i][0] = tf_graph_num_nodes(b->g);
    TF_TRY(replica(b, i));
    b->ranges[i][1] = tf_graph_num_nodes(b->g);
  }
  if (b->jg->sync) {
    TF_TRY(sync_update(b));
  }
  if (b->s->eval) {
    TF_TRY(eval_replica(b));
  }
  if (tf_job_init_op(b->g, "init", b->st) == NULL) {
    return b->st->code;
  }
  b->jg->init = tf__xstrdup("init");
  tf__job_pin_devices(b->g, b->ranges, b->o->workers, b->o->worker_devices,
                      b->o->ps_devices[0]);
  if (b->o->container != NULL && b->o->container[0] != '\0') {
    tf__job_set_container(b->g, b->o->container);
  }
  b->jg->global_step = tf__xstrdup(tf_node_name(b->global_step.node));
  return TF_OK;
}

tf_code tf_job_graph_build(const tf_job_spec *s, const tf_job_graph_options *o,
                           tf_job_graph **out, tf_status *st) {
  *out = NULL;
  TF_TRY(check(s, o, st));
  tf_job_graph *jg = tf__xcalloc(1, sizeof *jg);
  jg->g = tf_graph_new();
  jg->workers = o->workers;
  jg->sync = s->replication.mode == TF_JOB_MODE_SYNC;
  jg->required = o->workers - s->replication.backup_workers;
  jg->train = tf__xcalloc((size_t)o->workers, sizeof(char *));
  jg->loss = tf__xcalloc((size_t)o->workers, sizeof(char *));
  jg->inputs = tf__xcalloc((size_t)o->workers, sizeof *jg->inputs);
  builder b = {.s = s, .o = o, .jg = jg, .g = jg->g, .st = st};
  b.keep = tf__xcalloc((size_t)o->workers, sizeof *b.keep);
  jg->keep = b.keep;
  tf_code code = s->has_model ? build_all(&b) : tf__job_graph_from_file(s, o, jg, st);
  if (code == TF_OK) {
    code = tf__job_graph_add_checkpoint(jg, st);
  }
  tf_job_vars_free(b.vars);
  tf_optimizer_free(b.opt);
  free(b.accs);
  free(b.tokens);
  free(b.ranges);
  if (code != TF_OK) {
    tf_status_prefix(st, "%s: building the training graph", s->path);
    tf_job_graph_free(jg);
    return code;
  }
  *out = jg;
  return TF_OK;
}

static void free_strs(char **v, int n) {
  for (int i = 0; v != NULL && i < n; i++) {
    free(v[i]);
  }
  free(v);
}

void tf_job_graph_free(tf_job_graph *jg) {
  if (jg == NULL) {
    return;
  }
  for (int i = 0; i < jg->workers; i++) {
    tf_input_pipeline_free(jg->inputs[i]);
    if (jg->keep[i] != NULL) {
      input_keep *k = jg->keep[i];
      free(k->images);
      free(k->labels);
      free(k);
    }
  }
  free(jg->inputs);
  free(jg->keep);
  free_strs(jg->train, jg->workers);
  free_strs(jg->loss, jg->workers);
  free_strs(jg->eval_metrics, jg->n_eval_metrics);
  free_strs(jg->metric_names, jg->n_eval_metrics);
  free_strs(jg->var_devices, jg->n_vars);
  free(jg->update);
  free(jg->update_step);
  free(jg->close);
  free(jg->init);
  free(jg->global_step);
  free_strs(jg->shard_files, jg->n_shards);
  free_strs(jg->shard_feeds, jg->n_shards);
  free(jg->save);
  free(jg->restore);
  free(jg->resync);
  free(jg->eval_images);
  free(jg->eval_labels);
  free(jg->eval_loss);
  tf_graph_free(jg->g);
  free(jg);
}
