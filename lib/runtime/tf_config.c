/* tf_config.c: TF_CONFIG -> jobs and this task's role (tf_config.h). The
 * JSON is parsed whole first (json.h), then each field is checked against
 * its type; the cluster's jobs are copied with chief/master renamed. */
#include "lib/runtime/tf_config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "lib/runtime/json.h"

#define TASKS_MAX 65536
#define JOBS_MAX 64

__attribute__((format(printf, 2, 3))) static tf_code bad(tf_status *st,
                                                         const char *fmt,
                                                         ...) {
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return tf_status_set(st, TF_INVALID_ARGUMENT, "TF_CONFIG: %s", msg);
}

static bool is_master_name(const char *name) {
  return strcmp(name, "chief") == 0 || strcmp(name, "master") == 0;
}

static tf_code check_keys(const tf__json *root, tf_status *st) {
  static const char *const known[] = {"cluster", "task", "rpc_layer",
                                      "environment", "session_master"};
  for (int i = 0; i < root->n; i++) {
    size_t k = 0;
    while (k < TF_ARRAY_LEN(known) && strcmp(known[k], root->keys[i]) != 0) {
      k++;
    }
    if (k == TF_ARRAY_LEN(known)) {
      return bad(st, "unknown key \"%.80s\" (expected cluster, task, "
                 "rpc_layer, environment or session_master)", root->keys[i]);
    }
    if (k >= 2 && root->items[i].type != TF__JSON_STRING) {
      return bad(st, "%s: expected a string, got %s", known[k],
                 tf__json_type_name(root->items[i].type));
    }
  }
  return TF_OK;
}

/* Copies job name's address list v into c->jobs[c->n_jobs]. */
static tf_code add_job(tf_tfconfig *c, const char *name, const char *as,
                       const tf__json *v, tf_status *st) {
  size_t n = strlen(as);
  if (n == 0 || n > 63 ||
      strspn(as, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                 "0123456789_-") != n) {
    return bad(st, "cluster: job name \"%.80s\" must be 1..63 characters of "
               "[A-Za-z0-9_-]", name);
  }
  if (v->type == TF__JSON_OBJECT) {
    return bad(st, "cluster.%s: a sparse job (a mapping of task indices) is "
               "not supported; give a list of addresses", name);
  }
  if (v->type != TF__JSON_ARRAY) {
    return bad(st, "cluster.%s: expected a list of \"host:port\" addresses, "
               "got %s", name, tf__json_type_name(v->type));
  }
  if (v->n == 0 || v->n > TASKS_MAX) {
    return bad(st, "cluster.%s: expected 1..%d addresses, got %d", name,
               TASKS_MAX, v->n);
  }
  for (int t = 0; t < v->n; t++) {
    const tf__json *a = &v->items[t];
    if (a->type != TF__JSON_STRING || a->text[0] == '\0') {
      return bad(st, "cluster.%s[%d]: expected a \"host:port\" address, got "
                 "%s", name, t, a->type == TF__JSON_STRING ? "\"\""
                 : tf__json_type_name(a->type));
    }
  }
  tf_cluster_job *j = &c->jobs[c->n_jobs++];
  j->name = tf__xstrdup(as);
  j->addrs = tf__xcalloc((size_t)v->n, sizeof *j->addrs);
  for (int t = 0; t < v->n; t++) {
    j->addrs[t] = tf__xstrdup(v->items[t].text);
    j->n_tasks = t + 1;
  }
  return TF_OK;
}

static tf_code parse_cluster(tf_tfconfig *c, const tf__json *v,
                             tf_status *st) {
  if (v == NULL) {
    return bad(st, "missing key \"cluster\" (expected {\"chief\": "
               "[\"host:port\"], \"worker\": [...], ...})");
  }
  if (v->type != TF__JSON_OBJECT) {
    return bad(st, "cluster: expected an object of job names to address "
               "lists, got %s", tf__json_type_name(v->type));
  }
  if (v->n > JOBS_MAX) {
    return bad(st, "cluster: more than %d jobs", JOBS_MAX);
  }
  int m = -1;
  for (int i = 0; i < v->n; i++) {
    if (is_master_name(v->keys[i])) {
      if (m >= 0) {
        return bad(st, "cluster has both \"%s\" and \"%s\"; give one master "
                   "task, as \"chief\" or as \"master\"", v->keys[m],
                   v->keys[i]);
      }
      m = i;
    }
  }
  if (m < 0) {
    return bad(st, "cluster has no \"chief\" (or \"master\") job; this "
               "system needs one master task, where jobs are submitted");
  }
  c->jobs = tf__xcalloc((size_t)v->n, sizeof *c->jobs);
  TF_TRY(add_job(c, v->keys[m], "master", &v->items[m], st));
  if (c->jobs[0].n_tasks != 1) {
    return bad(st, "cluster.%s: expected exactly one task, got %d",
               v->keys[m], c->jobs[0].n_tasks);
  }
  for (int i = 0; i < v->n; i++) {
    if (strcmp(v->keys[i], "evaluator") == 0) {
      snprintf(c->note, sizeof c->note, "TF_CONFIG: the evaluator job is "
               "left out of the cluster (this system has no evaluator)");
    } else if (i != m) {
      TF_TRY(add_job(c, v->keys[i], v->keys[i], &v->items[i], st));
    }
  }
  return TF_OK;
}

static tf_code parse_task(tf_tfconfig *c, const tf__json *v, tf_status *st) {
  if (v == NULL) {
    return bad(st, "missing key \"task\" (expected {\"type\": \"worker\", "
               "\"index\": 0})");
  }
  if (v->type != TF__JSON_OBJECT) {
    return bad(st, "task: expected an object {\"type\": ..., \"index\": ...}"
               ", got %s", tf__json_type_name(v->type));
  }
  for (int i = 0; i < v->n; i++) {
    if (strcmp(v->keys[i], "type") != 0 && strcmp(v->keys[i], "index") != 0) {
      return bad(st, "task: unknown key \"%.80s\" (expected type and index)",
                 v->keys[i]);
    }
  }
  const tf__json *type = tf__json_get(v, "type"), *ix = tf__json_get(v, "index");
  if (type == NULL || type->type != TF__JSON_STRING) {
    return bad(st, "task.type: expected a job name string, got %s",
               type ? tf__json_type_name(type->type) : "nothing");
  }
  if (strcmp(type->text, "evaluator") == 0) {
    return bad(st, "task.type \"evaluator\" is not supported (this system "
               "has no evaluator; run evaluation outside the cluster)");
  }
  const char *job = is_master_name(type->text) ? "master" : type->text;
  const tf_cluster_job *j = NULL;
  for (int k = 0; k < c->n_jobs && j == NULL; k++) {
    j = strcmp(c->jobs[k].name, job) == 0 ? &c->jobs[k] : NULL;
  }
  if (j == NULL) {
    return bad(st, "task.type \"%.80s\" is not a job of the cluster",
               type->text);
  }
  const char *x = ix != NULL && ix->type == TF__JSON_NUMBER ? ix->text : "";
  if (x[0] == '\0' || strspn(x, "0123456789") != strlen(x) ||
      strlen(x) > 9) {
    char got[64];
    snprintf(got, sizeof got, x[0] ? "'%.40s'" : "%s", x[0] ? x
             : ix ? tf__json_type_name(ix->type) : "nothing");
    return bad(st, "task.index: expected an integer >= 0, got %s", got);
  }
  c->task = atoi(x);
  if (c->task >= j->n_tasks) {
    return bad(st, "task.index %d is out of range (job \"%s\" has %d "
               "task%s: 0..%d)", c->task, type->text, j->n_tasks,
               j->n_tasks == 1 ? "" : "s", j->n_tasks - 1);
  }
  c->job = tf__xstrdup(job);
  return TF_OK;
}

tf_code tf_tfconfig_parse(const char *text, size_t len, tf_tfconfig **out,
                          tf_status *st) {
  *out = NULL;
  tf__json *root = NULL;
  TF_TRY(tf__json_parse(text, len, "TF_CONFIG", &root, st));
  tf_tfconfig *c = tf__xcalloc(1, sizeof *c);
  tf_code code;
  if (root->type != TF__JSON_OBJECT) {
    code = bad(st, "expected an object {\"cluster\": ..., \"task\": ...}, "
               "got %s", tf__json_type_name(root->type));
  } else {
    code = check_keys(root, st);
  }
  if (code == TF_OK) {
    code = parse_cluster(c, tf__json_get(root, "cluster"), st);
  }
  if (code == TF_OK) {
    code = parse_task(c, tf__json_get(root, "task"), st);
  }
  tf__json_free(root);
  if (code != TF_OK) {
    tf_tfconfig_free(c);
    return code;
  }
  *out = c;
  return TF_OK;
}

void tf_tfconfig_free(tf_tfconfig *c) {
  if (c == NULL) {
    return;
  }
  for (int j = 0; j < c->n_jobs; j++) {
    for (int t = 0; t < c->jobs[j].n_tasks; t++) {
      free(c->jobs[j].addrs[t]);
    }
    free(c->jobs[j].addrs);
    free(c->jobs[j].name);
  }
  free(c->jobs);
  free(c->job);
  free(c);
}
