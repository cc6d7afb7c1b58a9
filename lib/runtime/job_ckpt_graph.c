/* job_ckpt_graph.c: the checkpoint nodes of a job's graph (job_graph.h).
 * The variables are grouped by the task that holds them; each group gets
 * a SaveV2 and a RestoreV2 on that task (so every task writes and reads
 * the shard of the variables it holds, docs/checkpoint.md), both taking
 * the shard's path from a string placeholder fed by the job runner. The
 * sync replicas' local steps are left out: after a restore, `resync`
 * sets them, and every accumulator's step, to the restored global step. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "lib/runtime/ckpt_dir.h"
#include "lib/runtime/device_name.h"
#include "lib/runtime/job_graph_impl.h"

typedef struct shard {
  char *device;     /* the first variable's device */
  char job[64];
  int task;
  int n;
  tf_node **vars;
} shard;

/* A string vector Const of v[0..n). */
static tf_output strings(tf_graph *g, const char *name, const char *const *v,
                         int n, const char *device, tf_status *st) {
  tf_shape sh = tf_shape_make(1, (int64_t[]){n});
  tf_tensor *t = NULL;
  if (st->code != TF_OK || tf_tensor_new(TF_STRING, &sh, &t, st) != TF_OK) {
    return (tf_output){NULL, 0};
  }
  for (int i = 0; i < n && st->code == TF_OK; i++) {
    tf_tensor_set_string(t, i, v[i], strlen(v[i]), st);
  }
  tf_attr_kv a[] = {{"value", tf_attr_tensor(t)}, {"dtype", tf_attr_type_v(TF_STRING)}};
  tf_node *c = tf__job_node(g, "Const", name, NULL, 0, a, 2, NULL, 0, device, st);
  tf_tensor_unref(t);
  return (tf_output){c, 0};
}

static bool is_local_step(const char *name) {
  int len = 0;
  return sscanf(name, "replica_%*d/local_step%n", &len) == 0 && len > 0 &&
         name[len] == '\0';
}

/* The group of the task holding v (a new one when none). */
static shard *group_of(shard **gs, int *n, const tf_node *v, tf_status *st) {
  tf_devname d;
  if (tf_devname_parse(tf_node_device(v), &d, st) != TF_OK || !d.has_job ||
      !d.has_task) {
    if (st->code == TF_OK) {
      tf_status_set(st, TF_INTERNAL, "variable %s has no task in its device "
                    "'%s'", tf_node_name(v), tf_node_device(v));
    }
    return NULL;
  }
  for (int i = 0; i < *n; i++) {
    if (strcmp((*gs)[i].job, d.job) == 0 && (*gs)[i].task == d.task) {
      return &(*gs)[i];
    }
  }
  *gs = tf__xrealloc(*gs, (size_t)(*n + 1) * sizeof **gs);
  shard *s = &(*gs)[(*n)++];
  *s = (shard){.device = tf__xstrdup(tf_node_device(v)), .task = d.task};
  snprintf(s->job, sizeof s->job, "%s", d.job);
  return s;
}

/* SaveV2 and RestoreV2 (with an Assign per variable) of shard k. */
static void shard_nodes(tf_graph *g, const shard *s, int k, tf_node **saved,
                        tf_node ***assigned, int *na, tf_status *st) {
  char name[96];
  const char **names = tf__xcalloc((size_t)s->n, sizeof *names);
  const char **slices = tf__xcalloc((size_t)s->n, sizeof *slices);
  tf_dtype *types = tf__xcalloc((size_t)s->n, sizeof *types);
  tf_output *vals = tf__xcalloc((size_t)s->n, sizeof *vals);
  for (int i = 0; i < s->n; i++) {
    names[i] = tf_node_name(s->vars[i]);
    slices[i] = "";
    const tf_attr_value *dt = tf_node_attr(s->vars[i], "dtype");
    types[i] = dt != NULL ? dt->u.t : TF_FLOAT32;
    vals[i] = (tf_output){s->vars[i], 0};
  }
  snprintf(name, sizeof name, "checkpoint/prefix_%d", k);
  tf_attr_kv pa[] = {{"dtype", tf_attr_type_v(TF_STRING)},
                     {"shape", tf_attr_shape(tf_shape_scalar())}};
  tf_output prefix = {tf__job_node(g, "Placeholder", name, NULL, 0, pa, 2, NULL, 0,
                          s->device, st), 0};
  snprintf(name, sizeof name, "checkpoint/names_%d", k);
  tf_output tn = strings(g, name, names, s->n, s->device, st);
  snprintf(name, sizeof name, "checkpoint/slices_%d", k);
  tf_output sl = strings(g, name, slices, s->n, s->device, st);
  tf_attr_kv ta[] = {{"dtypes", tf_attr_type_list(types, s->n)}};
  if (st->code == TF_OK) {
    snprintf(name, sizeof name, "checkpoint/save_%d", k);
    tf_node_builder *nb = tf_node_begin(g, "SaveV2", name);
    tf_node_add_input(nb, prefix);
    tf_node_add_input(nb, tn);
    tf_node_add_input(nb, sl);
    tf_node_add_input_list(nb, vals, s->n);
    tf_node_set_attr(nb, "dtypes", ta[0].value);
    tf_node_set_device(nb, s->device);
    *saved = tf_node_finish(nb, st);
  }
  snprintf(name, sizeof name, "checkpoint/restore_%d", k);
  tf_output rin[3] = {prefix, tn, sl};
  tf_node *r = tf__job_node(g, "RestoreV2", name, rin, 3, ta, 1, NULL, 0, s->device, st);
  for (int i = 0; i < s->n && st->code == TF_OK; i++) {
    snprintf(name, sizeof name, "checkpoint/assign_%d_%d", k, i);
    tf_output ain[2] = {vals[i], {r, i}};
    (*assigned)[(*na)++] = tf__job_node(g, "Assign", name, ain, 2, NULL, 0, NULL, 0,
                               tf_node_device(s->vars[i]), st);
  }
  free(names);
  free(slices);
  free(types);
  free(vals);
}

/* Sync: local steps and accumulators to the global step (jg->resync). */
static void resync(tf_job_graph *jg, const char *device, tf_status *st) {
  tf_graph *g = jg->g;
  tf_node *gs = tf_graph_find(g, jg->global_step);
  if (!jg->sync || gs == NULL || st->code != TF_OK) {
    return;
  }
  int n = tf_graph_num_nodes(g), nc = 0;
  tf_node **ctl = tf__xcalloc((size_t)n + 1, sizeof *ctl);
  char name[96];
  for (int i = 0; i < n && st->code == TF_OK; i++) {
    tf_node *v = tf_graph_node(g, i);
    tf_output in[2] = {{v, 0}, {gs, 0}};
    if (strcmp(tf_node_op(v), "ConditionalAccumulator") == 0) {
      snprintf(name, sizeof name, "checkpoint/resync_%d", nc);
      ctl[nc++] = tf__job_node(g, "AccumulatorSetGlobalStep", name, in, 2, NULL, 0, NULL,
                      0, tf_node_device(v), st);
    } else if (strcmp(tf_node_op(v), "VariableV2") == 0 &&
               is_local_step(tf_node_name(v))) {
      snprintf(name, sizeof name, "checkpoint/resync_%d", nc);
      ctl[nc++] = tf__job_node(g, "Assign", name, in, 2, NULL, 0, NULL, 0,
                      tf_node_device(v), st);
    }
  }
  if (tf__job_node(g, "NoOp", "checkpoint/resync", NULL, 0, NULL, 0, ctl, nc, device,
          st) != NULL) {
    jg->resync = tf__xstrdup("checkpoint/resync");
  }
  free(ctl);
}

tf_code tf__job_graph_add_checkpoint(tf_job_graph *jg, tf_status *st) {
  tf_graph *g = jg->g;
  int n = tf_graph_num_nodes(g), ns = 0;
  shard *gs = NULL;
  for (int i = 0; i < n && st->code == TF_OK; i++) {
    tf_node *v = tf_graph_node(g, i);
    if (strcmp(tf_node_op(v), "VariableV2") != 0 || is_local_step(tf_node_name(v))) {
      continue;
    }
    shard *s = group_of(&gs, &ns, v, st);
    if (s != NULL) {
      s->vars = tf__xrealloc(s->vars, (size_t)(s->n + 1) * sizeof *s->vars);
      s->vars[s->n++] = v;
    }
  }
  tf_node **saved = tf__xcalloc((size_t)ns + 1, sizeof *saved);
  tf_node **assigned = tf__xcalloc((size_t)n + 1, sizeof *assigned);
  int na = 0;
  jg->shard_files = tf__xcalloc((size_t)ns + 1, sizeof(char *));
  jg->shard_feeds = tf__xcalloc((size_t)ns + 1, sizeof(char *));
  for (int k = 0; k < ns && st->code == TF_OK; k++) {
    shard_nodes(g, &gs[k], k, &saved[k], &assigned, &na, st);
    jg->shard_files[k] = tf_ckpt_shard_name(gs[k].job, gs[k].task);
    jg->shard_feeds[k] = tf__xasprintf("checkpoint/prefix_%d", k);
    jg->n_shards = k + 1;
  }
  const char *dev = ns > 0 ? gs[0].device : NULL;
  if (tf__job_node(g, "NoOp", "checkpoint/save", NULL, 0, NULL, 0, saved, ns, dev, st) &&
      tf__job_node(g, "NoOp", "checkpoint/restore", NULL, 0, NULL, 0, assigned, na, dev, st)) {
    jg->save = tf__xstrdup("checkpoint/save");
    jg->restore = tf__xstrdup("checkpoint/restore");
  }
  resync(jg, dev, st);
  for (int k = 0; k < ns; k++) {
    free(gs[k].device);
    free(gs[k].vars);
  }
  free(gs);
  free(saved);
  free(assigned);
  return st->code;
}
