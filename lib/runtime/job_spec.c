/* job_spec.c: reads a training job spec (schema: job_spec.h, reference:
 * docs/jobs.md) into a tf_job_spec: the top level, the train, eval,
 * checkpoint and replication sections, and the checks that span sections
 * (model or graph, eval needs a test set, backup workers need sync, the
 * shard policy against the number of workers). The model, input and
 * optimizer sections have files of their own (job_spec_impl.h). */
#include "lib/runtime/job_spec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/crc32c.h"
#include "lib/core/base/util.h"
#include "lib/core/serialize/serialize_util.h"
#include "lib/runtime/job_spec_impl.h"

#define STEPS_MAX (1LL << 53)
#define SECONDS_MAX (1LL << 31)

tf_code tf__job_parse_name(tf__spec *c, const yaml_node_t *v,
                           const char *path, const char **out) {
  TF_TRY(tf__spec_text(c, v, path, "a name", TF_JOB_NAME_MAX, out));
  size_t n = strlen(*out);
  if (strspn(*out, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                   "0123456789_.-") != n || (*out)[0] == '.' ||
      (*out)[0] == '-') {
    return tf__spec_err(c, v, path, "name '%s' must be 1..%d characters of "
                        "[A-Za-z0-9_.-], not starting with '.' or '-'", *out,
                        TF_JOB_NAME_MAX);
  }
  return TF_OK;
}

static tf_code parse_train(tf__spec *c, const yaml_node_t *v, tf_job_spec *s) {
  static const char *const keys[] = {"steps", "epochs", "log_every_steps",
                                     "keep_variables"};
  yaml_node_t *f[4];
  TF_TRY(tf__spec_fields(c, v, "train", keys, 4, f));
  if ((f[0] == NULL) == (f[1] == NULL)) {
    return tf__spec_err(c, f[1] ? f[1] : v, "train", "give either 'steps' or "
                        "'epochs'%s", f[0] ? ", not both" : "");
  }
  if (f[0] != NULL) {
    TF_TRY(tf__spec_int(c, f[0], "train.steps", 1, STEPS_MAX, "", &s->steps));
  } else {
    TF_TRY(tf__spec_int(c, f[1], "train.epochs", 1, 1000000, "",
                        &s->epochs));
  }
  if (f[2] != NULL) {
    TF_TRY(tf__spec_int(c, f[2], "train.log_every_steps", 1, STEPS_MAX, "",
                        &s->log_every_steps));
  }
  if (f[3] != NULL) {
    TF_TRY(tf__spec_bool(c, f[3], "train.keep_variables", &s->keep_variables));
  }
  return TF_OK;
}

static tf_code parse_eval(tf__spec *c, const yaml_node_t *v, tf_job_spec *s) {
  static const char *const keys[] = {"every_steps", "at_end", "batch_size"};
  yaml_node_t *f[3];
  TF_TRY(tf__spec_fields(c, v, "eval", keys, 3, f));
  s->eval = true;
  if (f[0] != NULL) {
    TF_TRY(tf__spec_int(c, f[0], "eval.every_steps", 0, STEPS_MAX,
                        " (0: only at the end)", &s->eval_every_steps));
  }
  if (f[1] != NULL) {
    TF_TRY(tf__spec_bool(c, f[1], "eval.at_end", &s->eval_at_end));
  }
  if (f[2] != NULL) {
    TF_TRY(tf__spec_int(c, f[2], "eval.batch_size", 1, TF_JOB_BATCH_MAX, "",
                        &s->eval_batch_size));
  }
  if (s->eval_every_steps == 0 && !s->eval_at_end) {
    return tf__spec_err(c, f[1], "eval.at_end", "with every_steps 0 and "
                        "at_end false the job never evaluates (leave the eval "
                        "section out instead)");
  }
  return TF_OK;
}

static tf_code parse_checkpoint(tf__spec *c, const yaml_node_t *v,
                                tf_job_spec *s) {
  static const char *const keys[] = {"dir", "every_steps", "every_seconds",
                                     "keep"};
  yaml_node_t *f[4];
  const char *t;
  int64_t keep;
  TF_TRY(tf__spec_fields(c, v, "checkpoint", keys, 4, f));
  if (f[0] == NULL) {
    return tf__spec_err(c, v, "checkpoint", "needs 'dir' (where checkpoints "
                        "are written)");
  }
  s->checkpoint = true;
  TF_TRY(tf__spec_text(c, f[0], "checkpoint.dir", "a directory",
                       TF_JOB_PATH_MAX, &t));
  s->checkpoint_dir = tf__xstrdup(t);
  if (f[1] != NULL) {
    TF_TRY(tf__spec_int(c, f[1], "checkpoint.every_steps", 1, STEPS_MAX, "",
                        &s->checkpoint_every_steps));
  }
  if (f[2] != NULL) {
    TF_TRY(tf__spec_int(c, f[2], "checkpoint.every_seconds", 1, SECONDS_MAX,
                        "", &s->checkpoint_every_seconds));
  }
  if (f[1] == NULL && f[2] == NULL) {
    s->checkpoint_every_seconds = 600; /* TF1's save_checkpoint_secs */
  }
  if (f[3] != NULL) {
    TF_TRY(tf__spec_int(c, f[3], "checkpoint.keep", 1, 1000, "", &keep));
    s->checkpoint_keep = (int)keep;
  }
  return TF_OK;
}

static tf_code parse_recovery(tf__spec *c, const yaml_node_t *v, tf_job_spec *s) {
  static const char *const keys[] = {"max_attempts", "wait_seconds"};
  yaml_node_t *f[2];
  int64_t n;
  TF_TRY(tf__spec_fields(c, v, "recovery", keys, 2, f));
  if (f[0] != NULL) {
    TF_TRY(tf__spec_int(c, f[0], "recovery.max_attempts", 0, 1000, "", &n));
    s->recovery_max_attempts = (int)n;
  }
  if (f[1] != NULL) {
    TF_TRY(tf__spec_int(c, f[1], "recovery.wait_seconds", 1, 86400, "",
                        &s->recovery_wait_seconds));
  }
  return TF_OK;
}

static tf_code parse_replication(tf__spec *c, const yaml_node_t *v,
                                 tf_job_spec *s) {
  static const char *const keys[] = {"mode", "workers", "backup_workers",
                                     "placement", "ps_tasks"};
  static const char *const modes[] = {"sync", "async"};
  static const char *const places[] = {"round_robin", "balanced"};
  tf_job_replication *r = &s->replication;
  yaml_node_t *f[5];
  int k;
  int64_t x;
  TF_TRY(tf__spec_fields(c, v, "replication", keys, 5, f));
  if (f[0] != NULL) {
    TF_TRY(tf__spec_enum(c, f[0], "replication.mode", modes, 2, &k));
    r->mode = (tf_job_mode)k;
  }
  if (f[1] != NULL) {
    TF_TRY(tf__spec_int(c, f[1], "replication.workers", 1, TF_JOB_WORKERS_MAX,
                        "", &x));
    r->workers = (int)x;
  }
  if (f[2] != NULL) {
    TF_TRY(tf__spec_int(c, f[2], "replication.backup_workers", 0,
                        r->workers - 1, " (fewer than the workers, each step "
                        "aggregates workers - backup_workers gradients)", &x));
    r->backup_workers = (int)x;
    if (x > 0 && r->mode != TF_JOB_MODE_SYNC) {
      return tf__spec_err(c, f[2], "replication.backup_workers", "backup "
                          "workers need mode: sync (an async job waits for "
                          "no one)");
    }
  }
  if (f[3] != NULL) {
    TF_TRY(tf__spec_enum(c, f[3], "replication.placement", places, 2, &k));
    r->placement = (tf_job_placement)k;
  }
  if (f[4] != NULL) {
    TF_TRY(tf__spec_int(c, f[4], "replication.ps_tasks", 0, TF_JOB_PS_MAX,
                        " (0: every ps task of the cluster)", &x));
    r->ps_tasks = (int)x;
  }
  return TF_OK;
}

/* ---- the top level ------------------------------------------------------- */

enum { R_NAME, R_MODEL, R_GRAPH, R_INPUT, R_OPT, R_REPL, R_TRAIN, R_EVAL,
       R_CKPT, R_RECOVERY, R_COUNT };
static const char *const root_keys[R_COUNT] = {
    "name", "model", "graph", "input", "optimizer", "replication", "train",
    "eval", "checkpoint", "recovery"};

/* Required sections and the ones that exclude each other. */
static tf_code check_sections(tf__spec *c, const yaml_node_t *root,
                              yaml_node_t **f) {
  if (f[R_NAME] == NULL || f[R_TRAIN] == NULL) {
    return tf__spec_err(c, root, NULL, "a job spec needs '%s'",
                        f[R_NAME] == NULL ? "name" : "train");
  }
  if ((f[R_MODEL] == NULL) == (f[R_GRAPH] == NULL)) {
    return tf__spec_err(c, f[R_GRAPH] ? f[R_GRAPH] : root, NULL, "give "
                        "either 'model' (a layer list) or 'graph' (a graph "
                        "file)%s", f[R_MODEL] ? ", not both" : "");
  }
  if (f[R_MODEL] != NULL && (f[R_INPUT] == NULL || f[R_OPT] == NULL)) {
    return tf__spec_err(c, root, NULL, "a job with a model section needs "
                        "'%s'", f[R_INPUT] == NULL ? "input" : "optimizer");
  }
  if (f[R_GRAPH] != NULL && f[R_OPT] != NULL) {
    return tf__spec_err(c, f[R_OPT], "optimizer", "a graph job's train "
                        "target holds its optimizer already (the section "
                        "applies to a model section only)");
  }
  return TF_OK;
}

/* What one section needs of another, once all are read. */
static tf_code check_across(tf__spec *c, yaml_node_t **f, tf_job_spec *s) {
  if (f[R_INPUT] != NULL && !s->has_model && !s->graph.has_input) {
    return tf__spec_err(c, f[R_INPUT], "input", "the graph section names no "
                        "'images' and 'labels' nodes to feed the batches to");
  }
  if (s->input.present) {
    TF_TRY(tf__job_resolve_shard(c, f[R_INPUT], s));
  }
  if (s->epochs > 0 && !s->input.present) {
    return tf__spec_err(c, f[R_TRAIN], "train.epochs", "epochs count passes "
                        "over input.train, and there is no input section "
                        "(give steps)");
  }
  if (s->eval && s->input.test_images.n == 0) {
    return tf__spec_err(c, f[R_EVAL], "eval", "evaluation needs a test set "
                        "(input.test: {images, labels})");
  }
  if (s->eval_batch_size == 0) {
    s->eval_batch_size = s->input.batch_size;
  }
  return TF_OK;
}

static void set_defaults(tf_job_spec *s) {
  s->log_every_steps = 100;
  s->eval_at_end = true;
  s->checkpoint_keep = 5;
  s->recovery_max_attempts = 10;
  s->recovery_wait_seconds = 300;
  s->replication.workers = 1;
  s->input.image_dtype = TF_UINT8;
  s->input.label_dtype = TF_UINT8;
  s->input.little_endian = true;
  s->input.scale = 1.0;
  s->input.batch_size = 32;
  s->input.shuffle = true;
  s->input.read_threads = 1;
}

static tf_code parse_root(tf__spec *c, const yaml_node_t *root,
                          tf_job_spec *s) {
  char b[80];
  if (root == NULL || root->type != YAML_MAPPING_NODE) {
    return root == NULL
               ? tf_status_set(c->st, TF_INVALID_ARGUMENT, "%s:1:1: no YAML "
                               "document (expected a job spec mapping)",
                               c->file)
               : tf__spec_err(c, root, NULL, "expected a job spec (a mapping "
                              "with name, model, ...), got %s",
                              tf__spec_shown(root, b));
  }
  yaml_node_t *f[R_COUNT];
  const char *name;
  TF_TRY(tf__spec_fields(c, root, NULL, root_keys, R_COUNT, f));
  TF_TRY(check_sections(c, root, f));
  TF_TRY(tf__job_parse_name(c, f[R_NAME], "name", &name));
  s->name = tf__xstrdup(name);
  if (f[R_MODEL] != NULL) {
    TF_TRY(tf__job_parse_model(c, f[R_MODEL], s));
  } else {
    TF_TRY(tf__job_parse_graph(c, f[R_GRAPH], s));
  }
  if (f[R_INPUT] != NULL) {
    TF_TRY(tf__job_parse_input(c, f[R_INPUT], s));
  }
  if (f[R_OPT] != NULL) {
    TF_TRY(tf__job_parse_optimizer(c, f[R_OPT], s));
  }
  if (f[R_REPL] != NULL) {
    TF_TRY(parse_replication(c, f[R_REPL], s));
  }
  TF_TRY(parse_train(c, f[R_TRAIN], s));
  if (f[R_EVAL] != NULL) {
    TF_TRY(parse_eval(c, f[R_EVAL], s));
  }
  if (f[R_CKPT] != NULL) {
    TF_TRY(parse_checkpoint(c, f[R_CKPT], s));
  }
  if (f[R_RECOVERY] != NULL) {
    TF_TRY(parse_recovery(c, f[R_RECOVERY], s));
  }
  return check_across(c, f, s);
}

/* ---- entry points -------------------------------------------------------- */

tf_code tf_job_spec_parse(const char *text, size_t len, const char *name,
                          tf_job_spec **out, tf_status *st) {
  *out = NULL;
  name = name ? name : "<job spec>";
  tf__spec c;
  TF_TRY(tf__spec_load(&c, text, len, name, TF_JOB_SPEC_BYTES_MAX, st));
  tf_job_spec *s = tf__xcalloc(1, sizeof *s);
  s->path = tf__xstrdup(name);
  s->text = tf__xcalloc(len + 1, 1);
  memcpy(s->text, text, len);
  s->text_len = len;
  snprintf(s->hash, sizeof s->hash, "%08x", (unsigned)tf_crc32c(text, len));
  set_defaults(s);
  tf_code code = parse_root(&c, tf__spec_root(&c), s);
  tf__spec_fini(&c);
  if (code != TF_OK) {
    tf_job_spec_free(s);
    return code;
  }
  *out = s;
  return TF_OK;
}

tf_code tf_job_spec_load(const char *path, tf_job_spec **out, tf_status *st) {
  *out = NULL;
  char *text;
  size_t len;
  TF_TRY(tf__read_file(path, &text, &len, st));
  tf_code code = tf_job_spec_parse(text, len, path, out, st);
  free(text);
  return code;
}

void tf_job_spec_free(tf_job_spec *s) {
  if (s == NULL) {
    return;
  }
  for (int i = 0; i < s->model.n_layers; i++) {
    free(s->model.layers[i].name);
  }
  free(s->model.layers);
  tf_job_graph_spec *g = &s->graph;
  for (int i = 0; i < g->n_metrics; i++) {
    free(g->metrics[i]);
  }
  free(g->metrics);
  free(g->file);
  free(g->train);
  free(g->loss);
  free(g->init);
  free(g->images);
  free(g->labels);
  tf__job_files_free(&s->input.train_images);
  tf__job_files_free(&s->input.train_labels);
  tf__job_files_free(&s->input.test_images);
  tf__job_files_free(&s->input.test_labels);
  free(s->optimizer.schedule.boundaries);
  free(s->optimizer.schedule.values);
  free(s->checkpoint_dir);
  free(s->text);
  free(s->name);
  free(s->path);
  free(s);
}

void tf_job_spec_worker_files(const tf_job_spec *s, const tf_job_files *f,
                              int worker, const char ***out, int *n_out) {
  int n = s->replication.workers;
  TF_ASSERT(worker >= 0 && worker < n);
  const char **v = tf__xcalloc((size_t)f->n + 1, sizeof *v);
  int k = 0;
  for (int i = 0; i < f->n; i++) {
    if (s->input.shard == TF_JOB_SHARD_SHUFFLE || i % n == worker) {
      v[k++] = f->paths[i];
    }
  }
  *out = v;
  *n_out = k;
}

int64_t tf_job_spec_worker_seed(const tf_job_spec *s, int worker) {
  return s->input.seed == 0 ? 0 : s->input.seed + worker;
}

const tf_job_example *tf_job_spec_example(const tf_job_spec *s) {
  return s->has_model ? &s->model.input : &s->graph.input;
}
