/* job_loop.c: a job's thread (job_run.h): builds the graph, opens the
 * session on the master, runs the replicas' and the chief's step loops,
 * logs progress, evaluates, and ends in done, failed or cancelled. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/core/base/util.h"
#include "lib/runtime/job_data.h"
#include "lib/runtime/job_run_impl.h"

#define EVAL_TIMEOUT_MS (10 * 60 * 1000)
#define INIT_TIMEOUT_MS (10 * 60 * 1000)
#define PIPELINE_STOP_MS 10000
#define RATE_WINDOW_NS 1000000000LL

static double scalar_of(const tf_tensor *t) {
  switch (t->dtype) {
  case TF_FLOAT32: return *(const float *)t->data;
  case TF_FLOAT64: return *(const double *)t->data;
  case TF_INT32: return *(const int32_t *)t->data;
  case TF_INT64: return (double)*(const int64_t *)t->data;
  default: return NAN;
  }
}

/* Records the job's first error. */
static void fail(tf_job *j, const tf_status *st) {
  pthread_mutex_lock(&j->mu);
  if (j->error == NULL) {
    j->error = tf__xstrdup(st->msg);
    j->error_code = st->code;
  }
  j->stop = true;
  pthread_cond_broadcast(&j->cv);
  pthread_mutex_unlock(&j->mu);
}

void tf__job_abort(tf_job *j) {
  pthread_mutex_lock(&j->sess_mu);
  if (j->sess != NULL && !j->aborted) {
    j->aborted = true;
    tf_status st;
    tf_session_close(j->sess, &st);
  }
  j->aborted = true;
  pthread_mutex_unlock(&j->sess_mu);
}

static void timed_wait(tf_job *j, int64_t ms) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  int64_t ns = ts.tv_nsec + ms * 1000000;
  ts.tv_sec += ns / 1000000000;
  ts.tv_nsec = ns % 1000000000;
  pthread_cond_timedwait(&j->cv, &j->mu, &ts);
}

/* ---- progress ---------------------------------------------------------------- */

/* After the job reached step (under mu): rate, and the log line due. */
static void progress(tf_job *j, int64_t step, char *line, size_t size) {
  int64_t now = tf__job_now_ns();
  line[0] = '\0';
  if (step > j->step) {
    j->step = step;
  }
  if (now - j->rate_ns >= RATE_WINDOW_NS) {
    j->rate = (double)(j->step - j->rate_step) * 1e9 / (double)(now - j->rate_ns);
    j->rate_step = j->step;
    j->rate_ns = now;
  }
  if (j->step >= j->next_log || j->step >= j->steps) {
    if (j->loss_n > 0) {
      j->loss = j->loss_sum / (double)j->loss_n;
    }
    int len = snprintf(line, size, "step %lld/%lld: loss %.4f, %.1f steps/s; "
                       "steps per replica:", (long long)j->step,
                       (long long)j->steps, j->loss, j->rate);
    for (int i = 0; i < j->n_workers && len > 0 && (size_t)len < size; i++) {
      len += snprintf(line + len, size - (size_t)len, " %lld", (long long)j->sent[i]);
    }
    j->loss_sum = 0;
    j->loss_n = 0;
    while (j->next_log <= j->step) {
      j->next_log += j->spec->log_every_steps;
    }
  }
  pthread_cond_broadcast(&j->cv);
}

/* The first update after a recovery: how long since the tasks were up. */
static void note_recovered(tf_job *j) {
  pthread_mutex_lock(&j->mu);
  int64_t t = j->recover_ns;
  j->recover_ns = 0;
  pthread_mutex_unlock(&j->mu);
  if (t != 0) {
    tf__job_log(j, "recovered: stepping again %.0f ms after the tasks were up",
                (double)(tf__job_now_ns() - t) / 1e6);
  }
}

static void note_loss(tf_job *j, double loss) {
  pthread_mutex_lock(&j->mu);
  j->loss_sum += loss;
  j->loss_n++;
  if (isnan(j->loss) || j->next_log == j->spec->log_every_steps) {
    j->loss = j->loss_sum / (double)j->loss_n;
  }
  pthread_mutex_unlock(&j->mu);
}

/* ---- evaluation ----------------------------------------------------------------- */

static void set_metric(tf_job *j, const char *name, double v) {
  int i = 0;
  while (i < j->n_metrics && strcmp(j->metric_names[i], name) != 0) {
    i++;
  }
  if (i == TF_JOB_INFO_METRICS) {
    return;
  }
  if (i == j->n_metrics) {
    j->metric_names[j->n_metrics++] = tf__xstrdup(name);
  }
  j->metric_values[i] = v;
}

/* Runs the eval replica over the whole test set; sets test_loss and
 * test_<metric>. */
static tf_code evaluate(tf_job *j, tf_session *s, tf_status *st) {
  const tf_job_graph *jg = j->jg;
  int64_t n = j->test_images->shape.dims[0], b = j->spec->eval_batch_size;
  int nf = 1 + jg->n_eval_metrics;
  const char *fetch[1 + TF_JOB_METRICS_MAX];
  double sum[1 + TF_JOB_METRICS_MAX] = {0};
  fetch[0] = jg->eval_loss;
  for (int k = 0; k < jg->n_eval_metrics; k++) {
    fetch[1 + k] = jg->eval_metrics[k];
  }
  const char *feeds[2] = {jg->eval_images, jg->eval_labels};
  tf_run_options ro = {.timeout_ms = EVAL_TIMEOUT_MS};
  for (int64_t from = 0; from < n; from += b) {
    int64_t k = n - from < b ? n - from : b;
    tf_tensor *fv[2] = {tf_job_rows(j->test_images, from, k),
                        tf_job_rows(j->test_labels, from, k)};
    tf_tensor *out[1 + TF_JOB_METRICS_MAX] = {NULL};
    tf_code code = tf_session_run(s, &ro, feeds, fv, 2, fetch, out, nf, NULL, 0,
                                  NULL, st);
    tf_tensor_unref(fv[0]);
    tf_tensor_unref(fv[1]);
    for (int q = 0; q < nf && code == TF_OK; q++) {
      sum[q] += scalar_of(out[q]) * (double)k;
    }
    for (int q = 0; q < nf; q++) {
      tf_tensor_unref(out[q]);
    }
    TF_TRY(code);
  }
  char line[TF_JOB_LOG_LINE_MAX], name[TF_JOB_NAME_MAX + 8];
  pthread_mutex_lock(&j->mu);
  set_metric(j, "test_loss", sum[0] / (double)n);
  int len = snprintf(line, sizeof line, "eval at step %lld on %lld examples: "
                     "test_loss %.4f", (long long)j->step, (long long)n,
                     sum[0] / (double)n);
  for (int q = 1; q < nf; q++) {
    snprintf(name, sizeof name, "test_%s", jg->metric_names[q - 1]);
    set_metric(j, name, sum[q] / (double)n);
    len += snprintf(line + len, sizeof line - (size_t)len, ", %s %.4f", name,
                    sum[q] / (double)n);
  }
  pthread_mutex_unlock(&j->mu);
  tf__job_log(j, "%s", line);
  return TF_OK;
}

/* Evaluates when step crossed eval.every_steps. */
static tf_code maybe_evaluate(tf_job *j, tf_session *s, tf_status *st) {
  pthread_mutex_lock(&j->mu);
  bool due = j->spec->eval && j->spec->eval_every_steps > 0 &&
             j->step >= j->next_eval && j->step < j->steps;
  while (due && j->next_eval <= j->step) {
    j->next_eval += j->spec->eval_every_steps;
  }
  pthread_mutex_unlock(&j->mu);
  return due ? evaluate(j, s, st) : TF_OK;
}

/* ---- the step loops --------------------------------------------------------------- */

/* A checkpoint was asked for and not taken yet (under mu). */
static bool ckpt_pending(const tf_job *j) { return j->ckpt_asked > j->ckpt_done; }

enum { GATE_STOP = 0, GATE_GO = 1, GATE_CKPT = 2 };

/* Waits while the job is paused without budget: GATE_STOP when it must
 * end, GATE_CKPT when a paused job was asked for a checkpoint (want_ckpt),
 * else GATE_GO. claim (async): takes one of the remaining updates. */
static int gate(tf_job *j, bool claim, bool want_ckpt) {
  pthread_mutex_lock(&j->mu);
  while (!j->stop && !j->cancel && j->paused && j->budget == 0 &&
         !(want_ckpt && ckpt_pending(j))) {
    timed_wait(j, 200);
  }
  bool go = !j->stop && !j->cancel && (claim ? j->claimed : j->step) < j->steps;
  int r = go ? GATE_GO : GATE_STOP;
  if (go && j->paused && j->budget == 0) {
    r = GATE_CKPT;
  } else if (go && j->paused) {
    j->budget--;
  }
  if (r == GATE_GO && claim) {
    j->claimed++;
  }
  pthread_mutex_unlock(&j->mu);
  return r;
}

static bool stopping(tf_job *j) {
  pthread_mutex_lock(&j->mu);
  bool s = j->stop || j->cancel;
  pthread_mutex_unlock(&j->mu);
  return s;
}

/* Sync replicas end with the chief's loop, on a cancel or on an error, but
 * not on a stop alone (a suspend, a restore): the chief's update in flight
 * waits for a gradient from every replica. */
static bool replicas_ending(tf_job *j) {
  pthread_mutex_lock(&j->mu);
  bool s = j->replicas_end || j->cancel || (j->stop && j->error != NULL);
  pthread_mutex_unlock(&j->mu);
  return s;
}

typedef struct replica_arg {
  tf_job *j;
  tf_session *s;
  int i;
} replica_arg;

/* Replica i: its train target over and over (async: one claimed update
 * each), fetching its loss (and, async, the global step). */
static void *replica_main(void *arg) {
  replica_arg *a = arg;
  tf_job *j = a->j;
  const tf_job_graph *jg = j->jg;
  bool sync = jg->sync;
  const char *fetch[2] = {jg->loss[a->i], jg->global_step};
  const char *target = jg->train[a->i];
  tf_run_options ro = {0};
  tf_status st;
  tf_status_init(&st);
  while (sync ? !replicas_ending(j) : gate(j, true, false) == GATE_GO) {
    tf_tensor *out[2] = {NULL, NULL};
    tf_code code = tf_session_run(a->s, &ro, NULL, NULL, 0, fetch, out,
                                  sync ? 1 : 2, &target, 1, NULL, &st);
    if (code != TF_OK) {
      if (sync ? replicas_ending(j) : stopping(j)) {
        break;
      }
      tf_status_prefix(&st, "replica %d (%s)", a->i, j->workers[a->i]);
      if (!sync) {
        pthread_mutex_lock(&j->mu);
        j->claimed--; /* the update was not made */
        pthread_mutex_unlock(&j->mu);
      }
      if (tf__job_replica_wait(j, a->i, &st)) {
        continue;
      }
      fail(j, &st);
      tf__job_abort(j);
      break;
    }
    note_loss(j, scalar_of(out[0]));
    pthread_mutex_lock(&j->mu);
    j->sent[a->i]++;
    pthread_mutex_unlock(&j->mu);
    if (!sync) {
      char line[TF_JOB_LOG_LINE_MAX];
      pthread_mutex_lock(&j->mu);
      progress(j, j->step + 1, line, sizeof line);
      pthread_mutex_unlock(&j->mu);
      note_recovered(j);
      if (line[0]) {
        tf__job_log(j, "%s", line);
      }
    }
    tf_tensor_unref(out[0]);
    tf_tensor_unref(out[1]);
  }
  return NULL;
}

/* Sync: the chief's updates until the last step, checkpoints between
 * them (the variables change only in the chief's update: consistent). */
static tf_code chief_loop(tf_job *j, tf_session *s, tf_status *st) {
  const tf_job_graph *jg = j->jg;
  const char *fetch = jg->update_step, *target = jg->update;
  tf_run_options ro = {0};
  for (;;) {
    TF_TRY(tf__job_maybe_save(j, s, false, st));
    int g = gate(j, false, true);
    if (g == GATE_STOP) {
      return TF_OK;
    }
    if (g == GATE_CKPT) {
      continue;
    }
    tf_tensor *out = NULL;
    if (tf_session_run(s, &ro, NULL, NULL, 0, &fetch, &out, 1, &target, 1,
                       NULL, st) != TF_OK) {
      return stopping(j) ? TF_OK : tf_status_prefix(st, "sync update");
    }
    char line[TF_JOB_LOG_LINE_MAX];
    pthread_mutex_lock(&j->mu);
    progress(j, (int64_t)scalar_of(out), line, sizeof line);
    pthread_mutex_unlock(&j->mu);
    tf_tensor_unref(out);
    note_recovered(j);
    if (line[0]) {
      tf__job_log(j, "%s", line);
    }
    TF_TRY(maybe_evaluate(j, s, st));
  }
}

/* Async: waits for the replicas' updates, evaluating and checkpointing on
 * the way (a checkpoint's variables may be some updates apart). */
static tf_code monitor_loop(tf_job *j, tf_session *s, tf_status *st) {
  for (;;) {
    pthread_mutex_lock(&j->mu);
    timed_wait(j, 200);
    bool end = j->stop || j->cancel || j->step >= j->steps;
    pthread_mutex_unlock(&j->mu);
    if (end) {
      return TF_OK;
    }
    TF_TRY(maybe_evaluate(j, s, st));
    TF_TRY(tf__job_maybe_save(j, s, false, st));
  }
}

/* ---- the job's thread ------------------------------------------------------------- */

static tf_code build_graph(tf_job *j, tf_status *st) {
  tf_job_graph_options o = {.workers = j->n_workers,
                            .worker_devices = (const char *const *)j->workers,
                            .n_ps = j->n_ps,
                            .ps_devices = (const char *const *)j->ps,
                            .container = j->id};
  return tf_job_graph_build(j->spec, &o, &j->jg, st);
}

/* The graph, the total of steps and the test set. */
static tf_code prepare(tf_job *j, tf_status *st) {
  const tf_job_spec *s = j->spec;
  TF_TRY(build_graph(j, st));
  int64_t steps = s->steps;
  if (steps == 0) {
    int64_t per = -1;
    for (int i = 0; i < j->n_workers; i++) {
      int64_t n = 0;
      TF_TRY(tf_job_count_train(s, i, &n, st));
      per = per < 0 || n / s->input.batch_size < per ? n / s->input.batch_size : per;
    }
    steps = s->epochs * per * (s->replication.mode == TF_JOB_MODE_SYNC ? 1 : j->n_workers);
    if (steps < 1) {
      return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: a worker's shard holds "
                           "fewer examples than one batch (%lld)", s->path,
                           (long long)s->input.batch_size);
    }
  }
  if (s->eval) {
    TF_TRY(tf_job_load_test(s, &j->test_images, &j->test_labels, st));
  }
  pthread_mutex_lock(&j->mu);
  j->steps = steps;
  pthread_mutex_unlock(&j->mu);
  return TF_OK;
}

/* The job's counters from global step `step` on (a start or a restore). */
static void set_step(tf_job *j, int64_t step) {
  const tf_job_spec *s = j->spec;
  pthread_mutex_lock(&j->mu);
  j->step = j->claimed = j->rate_step = step;
  j->rate_ns = j->ckpt_ns = tf__job_now_ns();
  j->next_log = (step / s->log_every_steps + 1) * s->log_every_steps;
  j->next_eval = s->eval_every_steps > 0
                     ? (step / s->eval_every_steps + 1) * s->eval_every_steps
                     : 0;
  if (!j->ckpt_path) {
    j->ckpt_step = step;
  }
  pthread_mutex_unlock(&j->mu);
}

/* The latest checkpoint (or the one tfctl restore asked for) into the
 * freshly initialized variables; none: the job starts from step 0. */
static tf_code restore(tf_job *j, tf_session *s, tf_status *st) {
  pthread_mutex_lock(&j->mu);
  char *want = j->restore_req;
  j->restore_req = NULL;
  pthread_mutex_unlock(&j->mu);
  int64_t step = 0;
  tf_code code = TF_OK;
  if (j->spec->checkpoint) {
    code = tf__job_restore(j, s, want, &step, st);
    if (code == TF_NOT_FOUND && want == NULL) {
      tf__job_log(j, "no checkpoint in %s: starting at step 0",
                  j->spec->checkpoint_dir);
      tf_status_init(st);
      code = TF_OK;
    }
  } else if (j->recoveries > 0) {
    tf__job_log(j, "no checkpoint section: starting over at step 0");
  }
  free(want);
  if (code == TF_OK) {
    set_step(j, step);
  }
  pthread_mutex_lock(&j->mu);
  if (code == TF_OK && step > 0 && j->recover_ns == 0 && j->recoveries == 0) {
    j->recover_ns = j->created_ns; /* resumed from a checkpoint at start */
  }
  pthread_mutex_unlock(&j->mu);
  return code;
}

/* The session on the master, its variables initialized (and restored),
 * the pipelines on. */
static tf_code open_session(tf_job *j, tf_status *st) {
  tf_session_options so = {.target = j->master_url,
                           .rpc_timeout_ms = j->rpc_timeout_ms};
  tf_session *s = tf_session_new(j->jg->g, &so, st);
  if (s == NULL) {
    return tf_status_prefix(st, "opening a session on %s", j->master_url);
  }
  pthread_mutex_lock(&j->sess_mu);
  j->sess = s;
  bool aborted = j->aborted;
  pthread_mutex_unlock(&j->sess_mu);
  if (aborted) {
    return tf_status_set(st, TF_CANCELLED, "cancelled");
  }
  tf_run_options ro = {.timeout_ms = INIT_TIMEOUT_MS};
  const char *init = j->jg->init;
  if (tf_session_run(s, &ro, NULL, NULL, 0, NULL, NULL, 0, &init, 1, NULL, st) !=
      TF_OK) {
    return tf_status_prefix(st, "initializing the variables");
  }
  TF_TRY(restore(j, s, st));
  tf__job_note_incarnations(j);
  for (int i = 0; i < j->n_workers; i++) {
    TF_TRY(tf_input_pipeline_start(j->jg->inputs[i], s, st));
  }
  return TF_OK;
}

/* Ends the replicas: sync closes the token queues first. */
static void stop_replicas(tf_job *j, tf_session *s, pthread_t *threads, int n) {
  pthread_mutex_lock(&j->mu);
  j->stop = true;
  j->replicas_end = true;
  pthread_cond_broadcast(&j->cv);
  pthread_mutex_unlock(&j->mu);
  if (j->jg->sync) {
    tf_status st;
    tf_run_options ro = {.timeout_ms = j->rpc_timeout_ms};
    const char *close = j->jg->close;
    if (tf_session_run(s, &ro, NULL, NULL, 0, NULL, NULL, 0, &close, 1, NULL,
                       &st) != TF_OK) {
      tf__job_abort(j);
    }
  }
  for (int i = 0; i < n; i++) {
    pthread_join(threads[i], NULL);
  }
}

static tf_code train(tf_job *j, tf_session *s, tf_status *st) {
  pthread_mutex_lock(&j->mu);
  if (j->started_ns == 0) {
    j->started_ns = tf__job_now_ns();
  }
  bool paused = j->paused;
  j->replicas_end = false;
  pthread_mutex_unlock(&j->mu);
  tf__job_set_state(j, paused ? TF_JOB_PAUSED : TF_JOB_RUNNING);
  tf__job_log(j, "training: steps %lld to %lld, %lld examples per worker and step",
              (long long)j->step, (long long)j->steps,
              (long long)j->spec->input.batch_size);
  int n = j->n_workers;
  pthread_t *threads = tf__xcalloc((size_t)n, sizeof *threads);
  replica_arg *args = tf__xcalloc((size_t)n, sizeof *args);
  int started = 0;
  for (int i = 0; i < n; i++, started++) {
    args[i] = (replica_arg){.j = j, .s = s, .i = i};
    if (pthread_create(&threads[i], NULL, replica_main, &args[i]) != 0) {
      tf_status_set(st, TF_RESOURCE_EXHAUSTED, "cannot start replica %d's thread", i);
      break;
    }
  }
  tf_code code = st->code;
  if (code == TF_OK) {
    code = j->jg->sync ? chief_loop(j, s, st) : monitor_loop(j, s, st);
  }
  stop_replicas(j, s, threads, started);
  free(threads);
  free(args);
  return code;
}

/* Whether a restart may mend a failure with this code (a task killed,
 * cut off, or back without its variables); not a bad spec or file. */
static bool mendable(tf_code code) {
  return code != TF_OK && code != TF_INVALID_ARGUMENT && code != TF_UNIMPLEMENTED &&
         code != TF_OUT_OF_RANGE && code != TF_DATA_LOSS;
}

static tf_code attempt(tf_job *j, tf_status *st) {
  TF_TRY(open_session(j, st));
  return train(j, j->sess, st);
}

/* Attempts until the job ends; recovers in between (job_recover.c). */
static tf_code run(tf_job *j, tf_status *st) {
  TF_TRY(prepare(j, st));
  if (j->spec->checkpoint) { /* what an earlier master left (resumed jobs) */
    tf__job_drop_container(j);
  }
  for (;;) {
    tf_code code = attempt(j, st);
    pthread_mutex_lock(&j->mu);
    if (code != TF_OK && j->error == NULL) {
      j->error = tf__xstrdup(st->msg);
      j->error_code = code;
    }
    bool again = !j->cancel && !j->suspend &&
                 (j->restore_req != NULL ||
                  (j->error != NULL && mendable(j->error_code)));
    bool failed = j->error != NULL, suspend = j->suspend && !j->cancel;
    pthread_mutex_unlock(&j->mu);
    if (suspend && !failed) {
      return tf__job_maybe_save(j, j->sess, true, st);
    }
    if (!again) {
      break;
    }
    tf_status_init(st);
    TF_TRY(tf__job_recover(j, st));
    TF_TRY(build_graph(j, st));
  }
  pthread_mutex_lock(&j->mu);
  bool done = !j->cancel && j->error == NULL && j->step >= j->steps;
  pthread_mutex_unlock(&j->mu);
  if (done && j->spec->eval && j->spec->eval_at_end) {
    TF_TRY(evaluate(j, j->sess, st));
  }
  return done ? tf__job_maybe_save(j, j->sess, j->spec->checkpoint, st) : TF_OK;
}

/* Stops the pipelines, closes the session and settles the final state. */
static void finish(tf_job *j, tf_code code, const tf_status *st) {
  if (code != TF_OK) {
    fail(j, st);
  }
  /* Suspended by the master's shutdown: resumable from the latest good
   * checkpoint even when the last one could not be taken in time. */
  pthread_mutex_lock(&j->mu);
  bool resumable = j->suspend && j->spec->checkpoint;
  pthread_mutex_unlock(&j->mu);
  tf__job_teardown(j, !j->spec->keep_variables && !resumable);
  tf_tensor_unref(j->test_images);
  tf_tensor_unref(j->test_labels);
  j->test_images = j->test_labels = NULL;
  pthread_mutex_lock(&j->mu);
  tf_job_state end = j->cancel || j->suspend ? TF_JOB_CANCELLED
                     : j->error != NULL      ? TF_JOB_FAILED
                                             : TF_JOB_DONE;
  j->ended_ns = tf__job_now_ns();
  char *error = j->error ? tf__xstrdup(j->error) : NULL;
  pthread_mutex_unlock(&j->mu);
  if (end == TF_JOB_FAILED && !resumable) {
    tf__job_log(j, "failed: %s", error);
  } else if (resumable) {
    tf__job_log(j, "suspended at step %lld: resumes from %s when the master "
                "starts again", (long long)j->ckpt_step,
                j->ckpt_path ? j->ckpt_path : "its first step");
  }
  free(error);
  tf__job_set_state(j, end);
  if (j->on_end != NULL) {
    j->on_end(j->cb_arg, j->id, resumable);
  }
}

void *tf__job_main(void *arg) {
  tf_job *j = arg;
  tf_status st;
  tf_status_init(&st);
  tf_code code = run(j, &st);
  finish(j, code, &st);
  pthread_mutex_lock(&j->mu);
  j->thread_done = true;
  pthread_cond_broadcast(&j->cv);
  pthread_mutex_unlock(&j->mu);
  return NULL;
}
