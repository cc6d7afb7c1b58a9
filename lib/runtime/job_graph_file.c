/* job_graph_file.c: a job's replicated graph from a graph file written with
 * the C API (job_graph.h; docs/jobs.md, "graph"). The file's nodes with
 * state (a "container" attr: variables, optimizer slots, queues) are
 * imported once and shared; every other node once per worker under
 * "replica_<i>/", its images and labels placeholders replaced by that
 * worker's input pipeline, and once more under "eval/", placeholders kept,
 * for the test set. The file's train target applies its own updates, so
 * replicas run async: each step of replica i runs its copy of the target
 * and adds 1 to the job's counter "job/global_step". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "lib/core/graph/graph_impl.h"
#include "lib/runtime/job_graph_impl.h"
#include "lib/runtime/job_model.h"
#include "tf/serialize.h"
#include "tf/train.h"

typedef struct gf {
  const tf_job_spec *s;
  const tf_job_graph_options *o;
  tf_job_graph *jg;
  tf_graph *src;  /* the file's graph */
  bool *shared;   /* [src nodes]: imported once, unprefixed */
  void **pool;    /* what an import allocated, freed after it */
  int n_pool, cap_pool;
  tf_status *st;
} gf;

static void *keep(gf *f, void *p) {
  if (f->n_pool == f->cap_pool) {
    f->cap_pool = f->cap_pool ? 2 * f->cap_pool : 256;
    f->pool = tf__xrealloc(f->pool, (size_t)f->cap_pool * sizeof *f->pool);
  }
  f->pool[f->n_pool++] = p;
  return p;
}

static void drain(gf *f) {
  for (int i = 0; i < f->n_pool; i++) {
    free(f->pool[i]);
  }
  f->n_pool = 0;
}

/* The name src's node `name` has in the copy under prefix (NULL: the
 * shared nodes, which keep their names). */
static const char *copy_name(gf *f, const char *prefix, const char *name) {
  const tf_node *n = tf_graph_find(f->src, name);
  if (prefix == NULL || (n != NULL && f->shared[tf_node_id(n)])) {
    return name;
  }
  return keep(f, tf__xasprintf("%s%s", prefix, name));
}

/* Input "src", "src:k" or "^src" of a copy; remap (NULL: none) replaces
 * the images and labels placeholders' outputs. */
static const char *copy_input(gf *f, const char *prefix, const char *in,
                              const char *const *remap) {
  bool ctl = in[0] == '^';
  const char *name = ctl ? in + 1 : in, *colon = strrchr(name, ':');
  char *node = keep(f, tf__xstrndup(name, colon ? (size_t)(colon - name) : strlen(name)));
  const char *feeds[2] = {f->s->graph.images, f->s->graph.labels};
  for (int k = 0; remap != NULL && !ctl && k < 2; k++) {
    if (strcmp(node, feeds[k]) == 0 && (colon == NULL || strcmp(colon, ":0") == 0)) {
      return remap[k];
    }
  }
  return keep(f, tf__xasprintf("%s%s%s", ctl ? "^" : "", copy_name(f, prefix, node),
                               colon ? colon : ""));
}

/* A copy of attrs with "_class" colocations ("loc:@x") renamed. */
static const tf_attr_kv *copy_attrs(gf *f, const char *prefix, const tf_node_def *d) {
  tf_attr_kv *a = keep(f, tf__xcalloc((size_t)d->n_attrs + 1, sizeof *a));
  for (int j = 0; j < d->n_attrs; j++) {
    a[j] = d->attrs[j];
    const tf_attr_value *v = &d->attrs[j].value;
    if (strcmp(a[j].name, "_class") != 0 || !v->is_list || v->type != TF_ATTR_STRING) {
      continue;
    }
    const char **c = keep(f, tf__xcalloc((size_t)v->n + 1, sizeof *c));
    for (int m = 0; m < v->n; m++) {
      const char *e = v->u.strs[m];
      c[m] = strncmp(e, "loc:@", 5) != 0
                 ? e
                 : keep(f, tf__xasprintf("loc:@%s", copy_name(f, prefix, e + 5)));
    }
    a[j].value = tf_attr_string_list(c, v->n);
  }
  return a;
}

/* Imports into g the shared nodes of the file (prefix NULL) or a copy of
 * all the others under prefix. */
static tf_code import_copy(gf *f, tf_graph *g, const char *prefix,
                           const char *const *remap) {
  int n = tf_graph_num_nodes(f->src), k = 0;
  tf_node_def *orig = tf__xcalloc((size_t)n + 1, sizeof *orig);
  tf_node_def *defs = tf__xcalloc((size_t)n + 1, sizeof *defs);
  for (int i = 0; i < n; i++) {
    if (f->shared[i] != (prefix == NULL)) {
      continue;
    }
    tf_node_to_def(tf_graph_node(f->src, i), &orig[k]);
    tf_node_def *d = &orig[k], *nd = &defs[k++];
    *nd = *d;
    nd->name = copy_name(f, prefix, d->name);
    const char **in = keep(f, tf__xcalloc((size_t)d->n_inputs + 1, sizeof *in));
    for (int j = 0; j < d->n_inputs; j++) {
      in[j] = copy_input(f, prefix, d->inputs[j], remap);
    }
    nd->inputs = in;
    nd->attrs = copy_attrs(f, prefix, d);
  }
  tf_code rc = tf_graph_import(g, defs, k, f->st);
  for (int i = 0; i < k; i++) {
    tf_node_def_fini(&orig[i]);
  }
  free(orig);
  free(defs);
  drain(f);
  if (rc != TF_OK) {
    tf_status_prefix(f->st, "importing %s (%s)", f->s->graph.file,
                     prefix ? prefix : "its variables");
  }
  return rc;
}

/* ---- checks --------------------------------------------------------------------- */

/* The node of edge "node" or "node:k" in the file, or an error naming key. */
static tf_code has_edge(gf *f, const char *key, const char *edge, const char *op) {
  const char *colon = strrchr(edge, ':');
  char *node = tf__xstrndup(edge, colon ? (size_t)(colon - edge) : strlen(edge));
  const tf_node *n = tf_graph_find(f->src, node);
  tf_code rc = TF_OK;
  if (n == NULL) {
    rc = tf_status_set(f->st, TF_INVALID_ARGUMENT, "graph.%s: %s has no node '%s'",
                       key, f->s->graph.file, node);
  } else if (op != NULL && strcmp(tf_node_op(n), op) != 0) {
    rc = tf_status_set(f->st, TF_INVALID_ARGUMENT, "graph.%s: node '%s' is a %s, "
                       "not a %s", key, node, tf_node_op(n), op);
  }
  free(node);
  return rc;
}

/* What the spec must say for the master to run the file. */
static tf_code check_spec(gf *f) {
  if (!f->s->input.present || !f->s->graph.has_input) {
    return tf_status_set(f->st, TF_INVALID_ARGUMENT, "a graph job run by the "
                         "master needs an input section, and graph.images, "
                         "graph.labels and graph.input to feed its batches");
  }
  if (f->s->replication.mode == TF_JOB_MODE_SYNC && f->o->workers > 1) {
    return tf_status_set(f->st, TF_INVALID_ARGUMENT, "replication.mode sync "
                         "with %d workers needs a model section: a graph file's "
                         "train target applies its own updates, so its replicas "
                         "run async (mode: async)", f->o->workers);
  }
  return TF_OK;
}

/* The nodes the spec names exist in the file (images and labels are
 * placeholders). */
static tf_code check_nodes(gf *f) {
  const tf_job_graph_spec *gs = &f->s->graph;
  TF_TRY(has_edge(f, "train", gs->train, NULL));
  TF_TRY(has_edge(f, "loss", gs->loss, NULL));
  TF_TRY(has_edge(f, "images", gs->images, "Placeholder"));
  TF_TRY(has_edge(f, "labels", gs->labels, "Placeholder"));
  if (gs->init != NULL) {
    TF_TRY(has_edge(f, "init", gs->init, NULL));
  }
  for (int k = 0; k < gs->n_metrics; k++) {
    TF_TRY(has_edge(f, "metrics", gs->metrics[k], NULL));
  }
  return TF_OK;
}

/* ---- the parts ------------------------------------------------------------------- */

static char *edge_name(tf_output o) {
  return o.index == 0 ? tf__xstrdup(tf_node_name(o.node))
                      : tf__xasprintf("%s:%d", tf_node_name(o.node), o.index);
}

/* Replica i: its pipeline on worker i, the copy fed by it, and the step
 * target that also counts the update. */
static tf_code replica(gf *f, tf_graph *g, int i, tf_output counter, int range[2]) {
  tf_job_graph *jg = f->jg;
  const char *dev = f->o->worker_devices[i];
  char prefix[48], name[96];
  snprintf(prefix, sizeof prefix, "replica_%d/", i);
  range[0] = tf_graph_num_nodes(g);
  snprintf(name, sizeof name, "replica_%d/input", i);
  jg->inputs[i] = tf_job_input_new(f->s, i, g, name, &jg->keep[i], f->st);
  TF_TRY(f->st->code);
  tf_job_set_devices(g, range[0], tf_graph_num_nodes(g), dev);
  char *x = edge_name(tf_input_pipeline_output(jg->inputs[i], 0));
  char *y = edge_name(tf_input_pipeline_output(jg->inputs[i], 1));
  const char *remap[2] = {x, y};
  tf_code rc = import_copy(f, g, prefix, remap);
  free(x);
  free(y);
  TF_TRY(rc);
  tf_node *t = tf_graph_find(g, copy_name(f, prefix, f->s->graph.train));
  drain(f);
  snprintf(name, sizeof name, "replica_%d/count", i);
  tf_node_builder *b = tf_node_begin(g, "AssignAdd", name);
  tf_node_add_input(b, counter);
  tf_node_add_input(b, (tf_output){tf_graph_find(g, "job/one"), 0});
  tf_node_add_control_input(b, t);
  TF_TRY(tf_node_finish(b, f->st) != NULL ? TF_OK : f->st->code);
  jg->train[i] = tf__xstrdup(name);
  jg->loss[i] = tf__xasprintf("%s%s", prefix, f->s->graph.loss);
  range[1] = tf_graph_num_nodes(g);
  return TF_OK;
}

static tf_code eval_copy(gf *f, tf_graph *g) {
  tf_job_graph *jg = f->jg;
  const tf_job_graph_spec *gs = &f->s->graph;
  int first = tf_graph_num_nodes(g);
  TF_TRY(import_copy(f, g, "eval/", NULL));
  tf_job_set_devices(g, first, tf_graph_num_nodes(g),
                     f->o->eval_device ? f->o->eval_device : f->o->worker_devices[0]);
  jg->eval_images = tf__xasprintf("eval/%s", gs->images);
  jg->eval_labels = tf__xasprintf("eval/%s", gs->labels);
  jg->eval_loss = tf__xasprintf("eval/%s", gs->loss);
  jg->n_eval_metrics = gs->n_metrics;
  jg->eval_metrics = tf__xcalloc((size_t)gs->n_metrics + 1, sizeof(char *));
  jg->metric_names = tf__xcalloc((size_t)gs->n_metrics + 1, sizeof(char *));
  for (int k = 0; k < gs->n_metrics; k++) {
    jg->eval_metrics[k] = tf__xasprintf("eval/%s", gs->metrics[k]);
    /* "accuracy/Mean:0" is reported as test_accuracy */
    jg->metric_names[k] = tf__xstrndup(gs->metrics[k], strcspn(gs->metrics[k], "/:"));
  }
  return TF_OK;
}

/* The job's update counter and its constant 1. */
static tf_code counter(gf *f, tf_graph *g, tf_var *v) {
  tf_node_builder *b = tf_node_begin(g, "Const", "job/zero");
  tf_tensor *z = tf_tensor_scalar_i64(0), *one = tf_tensor_scalar_i64(1);
  tf_node_set_attr(b, "dtype", tf_attr_type_v(TF_INT64));
  tf_node_set_attr(b, "value", tf_attr_tensor(z));
  tf_node *zn = tf_node_finish(b, f->st);
  b = tf_node_begin(g, "Const", "job/one");
  tf_node_set_attr(b, "dtype", tf_attr_type_v(TF_INT64));
  tf_node_set_attr(b, "value", tf_attr_tensor(one));
  tf_node *on = zn != NULL ? tf_node_finish(b, f->st) : (tf_node_abandon(b), NULL);
  tf_tensor_unref(z);
  tf_tensor_unref(one);
  if (on == NULL) {
    return f->st->code;
  }
  return tf_variable_create(g, "job/global_step", tf_shape_scalar(), TF_INT64,
                            (tf_output){zn, 0}, v, f->st);
}

/* Variables of the file without a device go round-robin over the ps. */
static void spread_vars(gf *f, tf_graph *g) {
  int next = 0;
  for (int i = 0; i < tf_graph_num_nodes(g); i++) {
    tf_node *n = tf_graph_node(g, i);
    if (n->device[0] == '\0' && strcmp(n->op->name, "VariableV2") == 0) {
      free(n->device);
      n->device = tf__xstrdup(f->o->ps_devices[next++ % f->o->n_ps]);
    }
  }
}

static tf_code init_op(gf *f, tf_graph *g, const tf_var *v) {
  tf_node_builder *b = tf_node_begin(g, "NoOp", "init");
  tf_node_add_control_input(b, v->initializer);
  if (f->s->graph.init != NULL) {
    tf_node_add_control_input(b, tf_graph_find(g, copy_name(f, "replica_0/",
                                                              f->s->graph.init)));
    drain(f);
  }
  TF_TRY(tf_node_finish(b, f->st) != NULL ? TF_OK : f->st->code);
  f->jg->init = tf__xstrdup("init");
  return TF_OK;
}

static tf_code build(gf *f) {
  tf_graph *g = f->jg->g;
  int n = tf_graph_num_nodes(f->src);
  f->shared = tf__xcalloc((size_t)n + 1, sizeof *f->shared);
  for (int i = 0; i < n; i++) {
    f->shared[i] = tf_node_attr(tf_graph_node(f->src, i), "container") != NULL;
  }
  tf_var v;
  TF_TRY(import_copy(f, g, NULL, NULL));
  TF_TRY(counter(f, g, &v));
  int (*ranges)[2] = tf__xcalloc((size_t)f->o->workers, sizeof *ranges);
  tf_code rc = TF_OK;
  for (int i = 0; i < f->o->workers && rc == TF_OK; i++) {
    rc = replica(f, g, i, v.ref, ranges[i]);
  }
  if (rc == TF_OK && f->s->eval) {
    rc = eval_copy(f, g);
  }
  if (rc == TF_OK) {
    rc = init_op(f, g, &v);
  }
  if (rc == TF_OK) {
    spread_vars(f, g);
    tf__job_pin_devices(g, ranges, f->o->workers, f->o->worker_devices,
                        f->o->ps_devices[0]);
    if (f->o->container != NULL && f->o->container[0] != '\0') {
      tf__job_set_container(g, f->o->container);
    }
    f->jg->global_step = tf__xstrdup("job/global_step");
  }
  free(ranges);
  return rc;
}

tf_code tf__job_graph_from_file(const tf_job_spec *s, const tf_job_graph_options *o,
                                tf_job_graph *jg, tf_status *st) {
  gf f = {.s = s, .o = o, .jg = jg, .st = st};
  jg->sync = false;
  TF_TRY(check_spec(&f));
  f.src = tf_graph_new();
  tf_code rc = tf_graph_load(f.src, s->graph.file, st);
  if (rc != TF_OK) {
    tf_status_prefix(st, "graph.file");
  }
  if (rc == TF_OK) {
    rc = check_nodes(&f);
  }
  if (rc == TF_OK) {
    rc = build(&f);
  }
  free(f.shared);
  free(f.pool);
  tf_graph_free(f.src);
  return rc;
}
