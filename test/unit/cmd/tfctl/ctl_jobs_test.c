/* ctl_jobs_test.c: tfctl's job commands (cmd/tfctl/ctl_jobs.c) and their
 * client calls (ctl_client.c) against a fake master: an RPC server that
 * decodes the job requests with lib/transport's codecs and answers from a
 * script (a sequence of job states, log lines that appear as the job
 * runs, scripted failures). Covers submit (the id alone on the last line,
 * the spec and its name as sent, files missing or over 1 MiB refused
 * before any call, the master's error printed as is), the jobs table,
 * status's summary (metrics last), --follow in plain and terminal mode
 * with its exit statuses, polls that fail for a while and a master that
 * stays away, the control actions, logs with and without --follow,
 * checkpoint (the path alone on the last line), checkpoints (the table,
 * local time and human sizes), restore (the checkpoint as sent, the
 * master's note printed), and the progress line's format. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/tfctl/ctl_jobs.h"
#include "cmd/tfctl/ctl_procs.h"
#include "lib/transport/messages.h"
#include "lib/transport/rpc.h"
#include "test/unit/testutil.h"

/* ---- the fake master ------------------------------------------------------- */

enum { MAX_SCRIPT = 16, MAX_LOG = 64 };

static struct {
  pthread_mutex_t mu;
  tf_msg_job_info script[MAX_SCRIPT]; /* JobStatus answers in turn; the last repeats */
  int n_script, at;
  int fail_status;        /* JobStatus calls still to answer UNAVAILABLE */
  tf_code error_code;     /* not OK: every call fails with it */
  char error_msg[256];
  int calls[64];          /* requests per method */
  char job[128], action[32], name[256];
  int64_t steps, from;
  char ckpt[256];         /* JobControl's checkpoint */
  const char *note;       /* JobControl's note in the reply */
  const char *ckpt_dir;   /* JobCheckpoints */
  tf_msg_checkpoint *ckpts;
  int n_ckpts;
  size_t spec_len;
  uint32_t spec_crc;      /* a checksum of the spec received */
  int n_log, log_kept;    /* log lines 0..n_log-1; those below log_kept are dropped */
  int log_per_poll;       /* lines that appear per JobStatus call (0: all at once) */
  int log_chunk;          /* at most this many lines per JobLogs reply */
  tf_msg_job_info *jobs;  /* ListJobs */
  int n_jobs;
} fk = {.mu = PTHREAD_MUTEX_INITIALIZER};

static tf_rpc_server *server;
static char url[64];

static uint32_t checksum(const void *p, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; i++) h = (h ^ ((const uint8_t *)p)[i]) * 16777619u;
  return h;
}

static char log_line[MAX_LOG][32];

/* The JobLogs reply to a request from `from`, under fk.mu. */
static void encode_logs(tf_wire_writer *w, int64_t from) {
  int avail = fk.log_per_poll > 0 ? fk.log_per_poll * fk.calls[TF_M_JOB_STATUS] : fk.n_log;
  avail = avail < fk.n_log ? avail : fk.n_log;
  if (fk.at >= fk.n_script - 1) avail = fk.n_log; /* the final state: all of it */
  int64_t first = from > fk.log_kept ? from : fk.log_kept;
  first = first < avail ? first : avail;
  int n = (int)(avail - first);
  n = fk.log_chunk > 0 && n > fk.log_chunk ? fk.log_chunk : n;
  const char *lines[MAX_LOG];
  for (int i = 0; i < n; i++) lines[i] = log_line[first + i];
  tf_msg_job_logs_reply_encode(w, &(tf_msg_job_logs_reply){.first = first, .n_lines = n,
                                                            .lines = lines, .next = first + n});
}

/* Decodes req, records it and encodes the answer into w, under fk.mu. */
static tf_code answer(const tf_wire_msg *req, tf_wire_writer *w, tf_status *st) {
  int m = req->h.method;
  if (m == TF_M_SUBMIT_JOB) {
    tf_msg_submit_job_req b;
    TF_TRY(tf_msg_submit_job_req_decode(req, &b, st));
    fk.spec_len = b.spec_len;
    fk.spec_crc = checksum(b.spec, b.spec_len);
    snprintf(fk.name, sizeof fk.name, "%s", b.name);
    tf_msg_submit_job_req_fini(&b);
    tf_msg_submit_job_reply_encode(w, &(tf_msg_submit_job_reply){.job = "fmnist-mlp-sync-1"});
  } else if (m == TF_M_LIST_JOBS) {
    tf_msg_list_jobs_reply_encode(w, &(tf_msg_list_jobs_reply){fk.n_jobs, fk.jobs});
  } else if (m == TF_M_JOB_STATUS) {
    tf_msg_job_status_req b;
    TF_TRY(tf_msg_job_status_req_decode(req, &b, st));
    snprintf(fk.job, sizeof fk.job, "%s", b.job);
    tf_msg_job_status_req_fini(&b);
    tf_msg_job_info_reply_encode(w, &(tf_msg_job_info_reply){.info = fk.script[fk.at]});
    fk.at += fk.at < fk.n_script - 1;
  } else if (m == TF_M_JOB_CONTROL) {
    tf_msg_job_control_req b;
    TF_TRY(tf_msg_job_control_req_decode(req, &b, st));
    snprintf(fk.job, sizeof fk.job, "%s", b.job);
    snprintf(fk.action, sizeof fk.action, "%s", b.action);
    fk.steps = b.steps;
    snprintf(fk.ckpt, sizeof fk.ckpt, "%s", b.checkpoint);
    tf_msg_job_control_req_fini(&b);
    tf_msg_job_info info = fk.script[0];
    info.note = fk.note;
    tf_msg_job_info_reply_encode(w, &(tf_msg_job_info_reply){.info = info});
  } else if (m == TF_M_JOB_CHECKPOINTS) {
    tf_msg_job_checkpoints_req b;
    TF_TRY(tf_msg_job_checkpoints_req_decode(req, &b, st));
    snprintf(fk.job, sizeof fk.job, "%s", b.job);
    tf_msg_job_checkpoints_req_fini(&b);
    tf_msg_job_checkpoints_reply_encode(w, &(tf_msg_job_checkpoints_reply){
                                               .dir = fk.ckpt_dir, .n_checkpoints = fk.n_ckpts,
                                               .checkpoints = fk.ckpts});
  } else if (m == TF_M_JOB_LOGS) {
    tf_msg_job_logs_req b;
    TF_TRY(tf_msg_job_logs_req_decode(req, &b, st));
    fk.from = b.from;
    encode_logs(w, b.from);
    tf_msg_job_logs_req_fini(&b);
  } else {
    return tf_status_set(st, TF_UNIMPLEMENTED, "the fake master has no method %d", m);
  }
  return TF_OK;
}

static nng_msg *fake_handle(void *arg, const tf_wire_msg *req, tf_status *st) {
  (void)arg;
  pthread_mutex_lock(&fk.mu);
  int m = req->h.method;
  fk.calls[m >= 0 && m < 64 ? m : 0]++;
  tf_code code = TF_OK;
  tf_wire_writer *w = tf_wire_reply_writer(req);
  if (fk.error_code != TF_OK) {
    code = tf_status_set(st, fk.error_code, "%s", fk.error_msg);
  } else if (m == TF_M_JOB_STATUS && fk.fail_status > 0) {
    fk.fail_status--;
    code = tf_status_set(st, TF_UNAVAILABLE, "scripted: the master is restarting");
  } else {
    code = answer(req, w, st);
  }
  pthread_mutex_unlock(&fk.mu);
  nng_msg *out = NULL;
  if (code != TF_OK) {
    tf_wire_writer_free(w);
    return NULL;
  }
  return tf_wire_finish(w, &out, st) == TF_OK ? out : NULL;
}

static void fake_start(void) {
  tf_status st;
  tf_status_init(&st);
  ck_assert_msg(tf_rpc_server_start_sync("tcp://127.0.0.1:0", 2, 0, fake_handle, NULL, &server,
                                         &st) == TF_OK, "%s", st.msg);
  snprintf(url, sizeof url, "tcp://127.0.0.1:%d", tf_rpc_server_port(server));
  for (int i = 0; i < MAX_LOG; i++) snprintf(log_line[i], sizeof log_line[i], "line %d", i);
}

static void fake_stop(void) { tf_rpc_server_stop(server); }

static tf_msg_job_info job(const char *state, int64_t step, double loss) {
  return (tf_msg_job_info){.job = "j-1", .name = "fmnist-mlp", .state = state, .mode = "sync",
                           .workers = 2, .step = step, .steps = 3000, .loss = loss,
                           .steps_per_s = 85.2, .elapsed_ms = 14100, .error = ""};
}

static void script(const tf_msg_job_info *js, int n) {
  pthread_mutex_lock(&fk.mu);
  for (int i = 0; i < n; i++) fk.script[i] = js[i];
  fk.n_script = n;
  fk.at = 0;
  pthread_mutex_unlock(&fk.mu);
}

/* ---- running a command ----------------------------------------------------- */

typedef struct run {
  char *out, *err;
  size_t out_len, err_len;
  int rc;
} run;

typedef enum { CMD_SUBMIT, CMD_JOBS, CMD_STATUS, CMD_FOLLOW, CMD_CONTROL, CMD_LOGS,
               CMD_LOGS_FOLLOW, CMD_CHECKPOINT, CMD_CHECKPOINTS, CMD_RESTORE } cmd;

/* Runs one command with out and err captured; o's streams are filled in.
 * action is restore's checkpoint. */
static run do_cmd(tf_ctl_jobs_opts o, cmd c, const char *arg, const char *action,
                  int64_t steps) {
  run r = {0};
  o.out = open_memstream(&r.out, &r.out_len);
  o.err = open_memstream(&r.err, &r.err_len);
  o.master_url = o.master_url != NULL ? o.master_url : url;
  o.timeout_ms = o.timeout_ms > 0 ? o.timeout_ms : 2000;
  o.poll_ms = o.poll_ms > 0 ? o.poll_ms : 5;
  switch (c) {
    case CMD_SUBMIT: r.rc = tf_ctl_cmd_submit(&o, arg); break;
    case CMD_JOBS: r.rc = tf_ctl_cmd_jobs(&o); break;
    case CMD_STATUS: r.rc = tf_ctl_cmd_status(&o, arg, false); break;
    case CMD_FOLLOW: r.rc = tf_ctl_cmd_status(&o, arg, true); break;
    case CMD_CONTROL: r.rc = tf_ctl_cmd_control(&o, arg, action, steps); break;
    case CMD_LOGS: r.rc = tf_ctl_cmd_logs(&o, arg, false); break;
    case CMD_LOGS_FOLLOW: r.rc = tf_ctl_cmd_logs(&o, arg, true); break;
    case CMD_CHECKPOINT: r.rc = tf_ctl_cmd_checkpoint(&o, arg); break;
    case CMD_CHECKPOINTS: r.rc = tf_ctl_cmd_checkpoints(&o, arg); break;
    case CMD_RESTORE: r.rc = tf_ctl_cmd_restore(&o, arg, action); break;
  }
  fclose(o.out);
  fclose(o.err);
  return r;
}

static void run_free(run *r) {
  free(r->out);
  free(r->err);
}

static int calls(int method) {
  pthread_mutex_lock(&fk.mu);
  int n = fk.calls[method];
  pthread_mutex_unlock(&fk.mu);
  return n;
}

/* The last line of s (without its newline), in buf. */
static const char *last_line(const char *s, char *buf, size_t n) {
  size_t len = strlen(s);
  while (len > 0 && s[len - 1] == '\n') len--;
  size_t start = len;
  while (start > 0 && s[start - 1] != '\n') start--;
  snprintf(buf, n, "%.*s", (int)(len - start), s + start);
  return buf;
}

static char *write_file(const char *dir, const char *name, const void *p, size_t n) {
  char *path = malloc(strlen(dir) + strlen(name) + 2);
  sprintf(path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(p, 1, n, f), n);
  fclose(f);
  return path;
}

/* ---- submit ---------------------------------------------------------------- */

START_TEST(test_submit) {
  fake_start();
  char dir[] = "/tmp/ctl_jobs_test_XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  static const char spec[] = "name: fmnist-mlp\nmodel:\n  layers: [{dense: {units: 10}}]\n";
  char *path = write_file(dir, "j.yaml", spec, sizeof spec - 1);
  run r = do_cmd((tf_ctl_jobs_opts){0}, CMD_SUBMIT, path, NULL, 0);
  ck_assert_msg(r.rc == 0, "%s", r.err);
  char want[512], last[128];
  snprintf(want, sizeof want, "submitted job fmnist-mlp-sync-1 to %s\nfmnist-mlp-sync-1\n", url);
  ck_assert_str_eq(r.out, want);
  ck_assert_str_eq(last_line(r.out, last, sizeof last), "fmnist-mlp-sync-1");
  ck_assert_str_eq(r.err, "");
  ck_assert_uint_eq(fk.spec_len, sizeof spec - 1);
  ck_assert_uint_eq(fk.spec_crc, checksum(spec, sizeof spec - 1));
  ck_assert_str_eq(fk.name, path); /* the path as given names the spec */
  run_free(&r);
  /* Exactly 1 MiB goes; one byte more is refused before any call. */
  size_t cap = TF_MSG_MAX_JOB_SPEC_BYTES;
  char *big = malloc(cap + 1);
  for (size_t i = 0; i <= cap; i++) big[i] = (char)('a' + i % 26);
  char *ok_path = write_file(dir, "max.yaml", big, cap);
  r = do_cmd((tf_ctl_jobs_opts){0}, CMD_SUBMIT, ok_path, NULL, 0);
  ck_assert_msg(r.rc == 0, "%s", r.err);
  ck_assert_uint_eq(fk.spec_len, cap);
  ck_assert_uint_eq(fk.spec_crc, checksum(big, cap));
  run_free(&r);
  int before = calls(TF_M_SUBMIT_JOB);
  char *big_path = write_file(dir, "big.yaml", big, cap + 1);
  r = do_cmd((tf_ctl_jobs_opts){0}, CMD_SUBMIT, big_path, NULL, 0);
  ck_assert_int_eq(r.rc, 1);
  snprintf(want, sizeof want, "tfctl: job spec %s is 1048577 bytes, over the limit of 1048576 "
           "(1 MiB)\n", big_path);
  ck_assert_str_eq(r.err, want);
  ck_assert_str_eq(r.out, "");
  run_free(&r);
  /* Missing, a directory: named, no call. */
  char missing[300];
  snprintf(missing, sizeof missing, "%s/nope.yaml", dir);
  r = do_cmd((tf_ctl_jobs_opts){0}, CMD_SUBMIT, missing, NULL, 0);
  ck_assert_int_eq(r.rc, 1);
  snprintf(want, sizeof want, "tfctl: cannot read job spec %s: No such file or directory\n",
           missing);
  ck_assert_str_eq(r.err, want);
  run_free(&r);
  r = do_cmd((tf_ctl_jobs_opts){0}, CMD_SUBMIT, dir, NULL, 0);
  ck_assert_int_eq(r.rc, 1);
  ck_assert_msg(strstr(r.err, dir) != NULL && strstr(r.err, "Is a directory"), "%s", r.err);
  run_free(&r);
  ck_assert_int_eq(calls(TF_M_SUBMIT_JOB), before);
  /* The master's refusal, as it said it. */
  fk.error_code = TF_INVALID_ARGUMENT;
  snprintf(fk.error_msg, sizeof fk.error_msg, "j.yaml:7:17: model.layers[1].units: expected "
           "an int >= 1, got 'ten'");
  r = do_cmd((tf_ctl_jobs_opts){0}, CMD_SUBMIT, path, NULL, 0);
  ck_assert_int_eq(r.rc, 1);
  ck_assert_str_eq(r.err, "tfctl: j.yaml:7:17: model.layers[1].units: expected an int >= 1, "
                          "got 'ten'\n");
  ck_assert_str_eq(r.out, "");
  run_free(&r);
  unlink(path), unlink(ok_path), unlink(big_path), rmdir(dir);
  free(path), free(ok_path), free(big_path), free(big);
  fake_stop();
}
END_TEST

/* ---- jobs, status, control ------------------------------------------------- */

START_TEST(test_jobs_table) {
  fake_start();
  run r = do_cmd((tf_ctl_jobs_opts){0}, CMD_JOBS, NULL, NULL, 0);
  ck_assert_int_eq(r.rc, 0);
  ck_assert_str_eq(r.out, "no jobs\n");
  run_free(&r);
  tf_msg_job_info js[] = {job("running", 1200, 0.4123), job("queued", 0, NAN)};
  js[1].job = "fmnist-cnn-async-2";
  js[1].name = "cnn";
  js[1].steps = 0;
  js[1].elapsed_ms = 0;
  fk.jobs = js;
  fk.n_jobs = 2;
  r = do_cmd((tf_ctl_jobs_opts){0}, CMD_JOBS, NULL, NULL, 0);
  ck_assert_int_eq(r.rc, 0);
  ck_assert_str_eq(r.out,
                   "JOB                 NAME        STATE    STEP       LOSS    ELAPSED\n"
                   "j-1                 fmnist-mlp  running  1200/3000  0.4123  14.1 s\n"
                   "fmnist-cnn-async-2  cnn         queued   0          -       0.0 s\n");
  run_free(&r);
  fk.error_code = TF_UNAVAILABLE;
  snprintf(fk.error_msg, sizeof fk.error_msg, "the master is stopping");
  r = do_cmd((tf_ctl_jobs_opts){0}, CMD_JOBS, NULL, NULL, 0);
  ck_assert_int_eq(r.rc, 1);
  ck_assert_str_eq(r.err, "tfctl: the master is stopping\n");
  run_free(&r);
  fake_stop();
}
END_TEST

START_TEST(test_status_one_shot) {
  fake_start();
  tf_msg_metric ms[] = {{"test_loss", 0.31234}, {"test_accuracy", 0.89124}};
  tf_msg_job_info j = job("running", 1200, 0.4123);
  j.n_metrics = 2;
  j.metrics = ms;
  script(&j, 1);
  run r = do_cmd((tf_ctl_jobs_opts){0}, CMD_STATUS, "j-1", NULL, 0);
  ck_assert_msg(r.rc == 0, "%s", r.err);
  ck_assert_str_eq(r.out, "job: j-1\nname: fmnist-mlp\nstate: running\nmode: sync, 2 workers\n"
                          "step: 1200/3000\nloss: 0.4123\nsteps/s: 85.2\nelapsed: 14.1 s\n"
                          "recoveries: 0\ntest_loss: 0.3123\ntest_accuracy: 0.8912\n");
  ck_assert_str_eq(fk.job, "j-1");
  run_free(&r);
  /* Failed: the error line; one worker; no loss yet; no total. */
  j = job("failed", 7, NAN);
  j.workers = 1;
  j.steps = 0;
  j.error = "worker 1: step 7: loss is NaN";
  script(&j, 1);
  r = do_cmd((tf_ctl_jobs_opts){0}, CMD_STATUS, "j-1", NULL, 0);
  ck_assert_int_eq(r.rc, 0); /* one-shot: the state is reported, not judged */
  ck_assert_str_eq(r.out, "job: j-1\nname: fmnist-mlp\nstate: failed\nmode: sync, 1 worker\n"
                          "step: 7\nloss: -\nsteps/s: 85.2\nelapsed: 14.1 s\n"
                          "recoveries: 0\nerror: worker 1: step 7: loss is NaN\n");
  run_free(&r);
  /* Recovered twice, with a checkpoint: both lines, before the metrics. */
  j = job("running", 1300, 0.4);
  j.recoveries = 2;
  j.checkpoint = "run/ckpt/fmnist/ckpt-1200";
  j.checkpoint_step = 1200;
  j.n_metrics = 1;
  j.metrics = ms;
  script(&j, 1);
  r = do_cmd((tf_ctl_jobs_opts){0}, CMD_STATUS, "j-1", NULL, 0);
  ck_assert_msg(r.rc == 0, "%s", r.err);
  ck_assert_str_eq(r.out, "job: j-1\nname: fmnist-mlp\nstate: running\nmode: sync, 2 workers\n"
                          "step: 1300/3000\nloss: 0.4000\nsteps/s: 85.2\nelapsed: 14.1 s\n"
                          "recoveries: 2\ncheckpoint: run/ckpt/fmnist/ckpt-1200 (step 1200)\n"
                          "test_loss: 0.3123\n");
  run_free(&r);
  fk.error_code = TF_NOT_FOUND;
  snprintf(fk.error_msg, sizeof fk.error_msg, "no job 'x' (tfctl jobs lists them)");
  r = do_cmd((tf_ctl_jobs_opts){0}, CMD_STATUS, "x", NULL, 0);
  ck_assert_int_eq(r.rc, 1);
  ck_assert_str_eq(r.err, "tfctl: no job 'x' (tfctl jobs lists them)\n");
  ck_assert_str_eq(r.out, "");
  run_free(&r);
  fake_stop();
}
END_TEST

START_TEST(test_control) {
  fake_start();
  tf_msg_job_info j = job("paused", 1200, 0.4123);
  script(&j, 1);
  const char *actions[] = {"pause", "resume", "cancel"};
  for (int i = 0; i < 3; i++) {
    run r = do_cmd((tf_ctl_jobs_opts){0}, CMD_CONTROL, "j-1", actions[i], 0);
    ck_assert_msg(r.rc == 0, "%s", r.err);
    ck_assert_str_eq(r.out, "job j-1: paused\n"); /* the state the master reports */
    ck_assert_str_eq(fk.action, actions[i]);
    ck_assert(fk.steps == 0);
    run_free(&r);
  }
  j.state = "running";
  script(&j, 1);
  run r = do_cmd((tf_ctl_jobs_opts){0}, CMD_CONTROL, "j-1", "step", 25);
  ck_assert_msg(r.rc == 0, "%s", r.err);
  ck_assert_str_eq(r.out, "job j-1: running, step 1200/3000, loss 0.4123\n");
  ck_assert_str_eq(fk.action, "step");
  ck_assert(fk.steps == 25);
  ck_assert_str_eq(fk.job, "j-1");
  run_free(&r);
  fk.error_code = TF_NOT_FOUND;
  snprintf(fk.error_msg, sizeof fk.error_msg, "no job 'x' (tfctl jobs lists them)");
  r = do_cmd((tf_ctl_jobs_opts){0}, CMD_CONTROL, "x", "pause", 0);
  ck_assert_int_eq(r.rc, 1);
  ck_assert_str_eq(r.err, "tfctl: no job 'x' (tfctl jobs lists them)\n");
  run_free(&r);
  fake_stop();
}
END_TEST

/* ---- --follow -------------------------------------------------------------- */

static const tf_msg_metric final_metrics[] = {{"test_loss", 0.3333}, {"test_accuracy", 0.8912}};

/* queued, running x2, then final (done with metrics, failed, cancelled). */
static void script_run(const char *final) {
  tf_msg_job_info js[] = {job("queued", 0, NAN), job("running", 1000, 0.6),
                          job("running", 2000, 0.5), job(final, 3000, 0.4123)};
  js[3].n_metrics = 2;
  js[3].metrics = (tf_msg_metric *)final_metrics;
  if (strcmp(final, "failed") == 0) js[3].error = "worker 1 died: exit 137";
  script(js, 4);
}

static const char done_summary[] =
    "job: j-1\nname: fmnist-mlp\nstate: done\nmode: sync, 2 workers\nstep: 3000/3000\n"
    "loss: 0.4123\nsteps/s: 85.2\nelapsed: 14.1 s\nrecoveries: 0\ntest_loss: 0.3333\n"
    "test_accuracy: 0.8912\n";

START_TEST(test_follow_plain) {
  fake_start();
  script_run("done");
  tf_ctl_jobs_opts o = {.plain_every_ms = 60000};
  run r = do_cmd(o, CMD_FOLLOW, "j-1", NULL, 0);
  ck_assert_msg(r.rc == 0, "%s", r.err);
  char want[1024];
  snprintf(want, sizeof want,
           "step 0/3000 loss - 85.2 steps/s state queued\n"
           "step 1000/3000 loss 0.6000 85.2 steps/s state running\n"
           "step 3000/3000 loss 0.4123 85.2 steps/s state done\n%s", done_summary);
  ck_assert_str_eq(r.out, want); /* a line per state change, metrics last */
  ck_assert_str_eq(r.err, "");
  ck_assert_int_eq(calls(TF_M_JOB_STATUS), 4);
  run_free(&r);
  /* A line on every poll when they are due that often. */
  script_run("done");
  o.plain_every_ms = 1;
  o.poll_ms = 20;
  r = do_cmd(o, CMD_FOLLOW, "j-1", NULL, 0);
  ck_assert_int_eq(r.rc, 0);
  ck_assert_msg(strstr(r.out, "step 2000/3000 loss 0.5000 85.2 steps/s state running\n"), "%s",
                r.out);
  run_free(&r);
  script_run("failed");
  r = do_cmd((tf_ctl_jobs_opts){0}, CMD_FOLLOW, "j-1", NULL, 0);
  ck_assert_int_eq(r.rc, 1);
  ck_assert_str_eq(r.err, "tfctl: job j-1 failed: worker 1 died: exit 137\n");
  ck_assert_msg(strstr(r.out, "error: worker 1 died: exit 137\ntest_loss: 0.3333\n"), "%s",
                r.out);
  run_free(&r);
  script_run("cancelled");
  r = do_cmd((tf_ctl_jobs_opts){0}, CMD_FOLLOW, "j-1", NULL, 0);
  ck_assert_int_eq(r.rc, 1);
  ck_assert_str_eq(r.err, "tfctl: job j-1 was cancelled\n");
  ck_assert_msg(strstr(r.out, "state: cancelled\n"), "%s", r.out);
  run_free(&r);
  fake_stop();
}
END_TEST

START_TEST(test_follow_tty) {
  fake_start();
  script_run("done");
  run r = do_cmd((tf_ctl_jobs_opts){.tty = true}, CMD_FOLLOW, "j-1", NULL, 0);
  ck_assert_msg(r.rc == 0, "%s", r.err);
  /* Four redraws of one line, padded over the longer one before, then the
   * summary on lines of their own. */
  const char *l1 = "\r[>                   ] 0/3000  0%  loss -  85.2 steps/s  ETA -  queued";
  const char *l2 = "\r[======>             ] 1000/3000  33%  loss 0.6000  85.2 steps/s  "
                   "ETA 23 s  running";
  const char *l4 = "\r[====================] 3000/3000  100%  loss 0.4123  85.2 steps/s  "
                   "ETA -  done";
  ck_assert_msg(strncmp(r.out, l1, strlen(l1)) == 0, "%s", r.out);
  ck_assert_msg(strstr(r.out, l2) != NULL, "%s", r.out);
  const char *end = strstr(r.out, l4);
  ck_assert_msg(end != NULL, "%s", r.out);
  end += strlen(l4);
  while (*end == ' ') end++; /* padding over the running line */
  ck_assert_str_eq(end, "\njob: j-1\nname: fmnist-mlp\nstate: done\nmode: sync, 2 workers\n"
                        "step: 3000/3000\nloss: 0.4123\nsteps/s: 85.2\nelapsed: 14.1 s\n"
                        "recoveries: 0\ntest_loss: 0.3333\ntest_accuracy: 0.8912\n");
  int n_cr = 0;
  for (const char *p = r.out; *p; p++) n_cr += *p == '\r';
  ck_assert_int_eq(n_cr, 4);
  run_free(&r);
  fake_stop();
}
END_TEST

/* Polls that fail now and then are retried; a master that stays away for
 * unreachable_ms ends the follow, naming why; other errors end it at once. */
START_TEST(test_follow_failed_polls) {
  fake_start();
  script_run("done");
  fk.fail_status = 3;
  run r = do_cmd((tf_ctl_jobs_opts){.unreachable_ms = 5000}, CMD_FOLLOW, "j-1", NULL, 0);
  ck_assert_msg(r.rc == 0, "%s", r.err);
  ck_assert_int_eq(calls(TF_M_JOB_STATUS), 7);
  char want[1024];
  snprintf(want, sizeof want,
           "step 0/3000 loss - 85.2 steps/s state queued\n"
           "step 1000/3000 loss 0.6000 85.2 steps/s state running\n"
           "step 3000/3000 loss 0.4123 85.2 steps/s state done\n%s", done_summary);
  ck_assert_str_eq(r.out, want);
  run_free(&r);
  fk.fail_status = 1 << 30;
  int64_t t0 = tf_ctl_now_ms();
  r = do_cmd((tf_ctl_jobs_opts){.unreachable_ms = 300}, CMD_FOLLOW, "j-1", NULL, 0);
  int64_t took = tf_ctl_now_ms() - t0;
  ck_assert_int_eq(r.rc, 1);
  ck_assert_msg(strncmp(r.err, "tfctl: following job j-1: no answer from the master for ",
                        strlen("tfctl: following job j-1: no answer from the master for ")) == 0 &&
                    strstr(r.err, " s: scripted: the master is restarting\n"),
                "%s", r.err);
  ck_assert_msg(took >= 300 && took < 3000, "gave up after %lld ms", (long long)took);
  run_free(&r);
  fk.fail_status = 0;
  fk.error_code = TF_NOT_FOUND;
  snprintf(fk.error_msg, sizeof fk.error_msg, "no job 'j-1' (tfctl jobs lists them)");
  r = do_cmd((tf_ctl_jobs_opts){.unreachable_ms = 60000}, CMD_FOLLOW, "j-1", NULL, 0);
  ck_assert_int_eq(r.rc, 1);
  ck_assert_str_eq(r.err, "tfctl: no job 'j-1' (tfctl jobs lists them)\n");
  run_free(&r);
  fake_stop();
  /* Nothing listening any more: the transport's reason. */
  t0 = tf_ctl_now_ms();
  r = do_cmd((tf_ctl_jobs_opts){.timeout_ms = 100, .unreachable_ms = 400}, CMD_FOLLOW, "j-1",
             NULL, 0);
  took = tf_ctl_now_ms() - t0;
  ck_assert_int_eq(r.rc, 1);
  ck_assert_msg(strstr(r.err, "following job j-1: no answer from the master for") &&
                strstr(r.err, url) && strchr(r.err, '\n') == r.err + strlen(r.err) - 1,
                "%s", r.err);
  ck_assert_msg(took >= 400 && took < 5000, "gave up after %lld ms", (long long)took);
  run_free(&r);
}
END_TEST

/* ---- logs ------------------------------------------------------------------ */

/* Lines a..b-1 as printed ("line a\n...") in buf. */
static const char *lines_text(int a, int b, char *buf, size_t n) {
  size_t k = 0;
  buf[0] = '\0';
  for (int i = a; i < b; i++) k += (size_t)snprintf(buf + k, n - k, "line %d\n", i);
  return buf;
}

START_TEST(test_logs) {
  fake_start();
  tf_msg_job_info j = job("running", 1200, 0.4123);
  script(&j, 1);
  fk.n_log = 10;
  fk.log_chunk = 4; /* three calls' worth */
  char want[2048];
  run r = do_cmd((tf_ctl_jobs_opts){0}, CMD_LOGS, "j-1", NULL, 0);
  ck_assert_msg(r.rc == 0, "%s", r.err);
  ck_assert_str_eq(r.out, lines_text(0, 10, want, sizeof want));
  ck_assert_int_eq(calls(TF_M_JOB_LOGS), 4); /* 4 + 4 + 2 lines, then none */
  ck_assert_int_eq(calls(TF_M_JOB_STATUS), 0);
  run_free(&r);
  fk.log_kept = 6; /* older lines dropped: what is kept */
  r = do_cmd((tf_ctl_jobs_opts){0}, CMD_LOGS, "j-1", NULL, 0);
  ck_assert_str_eq(r.out, lines_text(6, 10, want, sizeof want));
  run_free(&r);
  fk.error_code = TF_NOT_FOUND;
  snprintf(fk.error_msg, sizeof fk.error_msg, "no job 'x' (tfctl jobs lists them)");
  r = do_cmd((tf_ctl_jobs_opts){0}, CMD_LOGS, "x", NULL, 0);
  ck_assert_int_eq(r.rc, 1);
  ck_assert_str_eq(r.err, "tfctl: no job 'x' (tfctl jobs lists them)\n");
  run_free(&r);
  fake_stop();
}
END_TEST

/* --follow: lines appear as the job runs (3 per JobStatus poll); every line
 * is printed once, in order, also those logged as the job ended. */
START_TEST(test_logs_follow) {
  fake_start();
  script_run("done");
  fk.n_log = 40;
  fk.log_per_poll = 3;
  fk.log_chunk = 5;
  fk.fail_status = 2; /* and a poll that fails now and then */
  run r = do_cmd((tf_ctl_jobs_opts){0}, CMD_LOGS_FOLLOW, "j-1", NULL, 0);
  ck_assert_msg(r.rc == 0, "%s", r.err);
  char want[4096];
  ck_assert_str_eq(r.out, lines_text(0, 40, want, sizeof want));
  ck_assert_int_ge(calls(TF_M_JOB_STATUS), 4);
  run_free(&r);
  fake_stop();
}
END_TEST

/* ---- checkpoints ----------------------------------------------------------- */

START_TEST(test_checkpoint) {
  fake_start();
  tf_msg_job_info j = job("running", 1210, 0.4123);
  j.checkpoint = "run/ckpt/fmnist/ckpt-1210";
  j.checkpoint_step = 1210;
  script(&j, 1);
  fk.note = "run/ckpt/fmnist/ckpt-1210";
  run r = do_cmd((tf_ctl_jobs_opts){0}, CMD_CHECKPOINT, "j-1", NULL, 0);
  ck_assert_msg(r.rc == 0, "%s", r.err);
  ck_assert_str_eq(r.out, "job j-1: checkpoint at step 1210\nrun/ckpt/fmnist/ckpt-1210\n");
  char last[128];
  ck_assert_str_eq(last_line(r.out, last, sizeof last), "run/ckpt/fmnist/ckpt-1210");
  ck_assert_str_eq(fk.action, "checkpoint");
  ck_assert_str_eq(fk.ckpt, "");
  ck_assert_str_eq(fk.job, "j-1");
  run_free(&r);
  /* A master that says nothing of where: an error, not an empty line. */
  fk.note = "";
  r = do_cmd((tf_ctl_jobs_opts){0}, CMD_CHECKPOINT, "j-1", NULL, 0);
  ck_assert_int_eq(r.rc, 1);
  ck_assert_str_eq(r.err, "tfctl: job j-1: the master took a checkpoint but did not say "
                          "where\n");
  run_free(&r);
  fk.error_code = TF_FAILED_PRECONDITION;
  snprintf(fk.error_msg, sizeof fk.error_msg, "job j-1 has no checkpoint section "
           "(checkpoint.dir) in its spec");
  r = do_cmd((tf_ctl_jobs_opts){0}, CMD_CHECKPOINT, "j-1", NULL, 0);
  ck_assert_int_eq(r.rc, 1);
  ck_assert_str_eq(r.err, "tfctl: job j-1 has no checkpoint section (checkpoint.dir) in its "
                          "spec\n");
  ck_assert_str_eq(r.out, "");
  run_free(&r);
  fake_stop();
}
END_TEST

START_TEST(test_checkpoints_table) {
  setenv("TZ", "UTC", 1);
  tzset();
  fake_start();
  fk.ckpt_dir = "run/ckpt/fmnist";
  run r = do_cmd((tf_ctl_jobs_opts){0}, CMD_CHECKPOINTS, "j-1", NULL, 0);
  ck_assert_msg(r.rc == 0, "%s", r.err);
  ck_assert_str_eq(r.out, "no checkpoints yet (in run/ckpt/fmnist)\n");
  ck_assert_str_eq(fk.job, "j-1");
  run_free(&r);
  tf_msg_checkpoint cs[] = {{"ckpt-100", 100, 1748786571000LL, 812},
                            {"ckpt-200", 200, 1748786587123LL, 1536},
                            {"ckpt-1000", 1000, 1748790000999LL, 1048575},
                            {"ckpt-123456", 123456, 0, 3LL << 40}};
  fk.ckpts = cs;
  fk.n_ckpts = 4;
  r = do_cmd((tf_ctl_jobs_opts){0}, CMD_CHECKPOINTS, "j-1", NULL, 0);
  ck_assert_msg(r.rc == 0, "%s", r.err);
  ck_assert_str_eq(r.out, "CHECKPOINT   STEP    TIME                 SIZE\n"
                          "ckpt-100     100     2025-06-01 14:02:51  812 B\n"
                          "ckpt-200     200     2025-06-01 14:03:07  1.5 KiB\n"
                          "ckpt-1000    1000    2025-06-01 15:00:00  1.0 MiB\n"
                          "ckpt-123456  123456  -                    3.0 TiB\n");
  run_free(&r);
  fk.error_code = TF_FAILED_PRECONDITION;
  snprintf(fk.error_msg, sizeof fk.error_msg, "job j-1 has no checkpoint section");
  r = do_cmd((tf_ctl_jobs_opts){0}, CMD_CHECKPOINTS, "j-1", NULL, 0);
  ck_assert_int_eq(r.rc, 1);
  ck_assert_str_eq(r.err, "tfctl: job j-1 has no checkpoint section\n");
  run_free(&r);
  fake_stop();
}
END_TEST

START_TEST(test_restore) {
  fake_start();
  tf_msg_job_info j = job("running", 1210, 0.4123);
  script(&j, 1);
  fk.note = "restoring run/ckpt/fmnist/ckpt-300 (step 300)";
  run r = do_cmd((tf_ctl_jobs_opts){0}, CMD_RESTORE, "j-1", "ckpt-300", 0);
  ck_assert_msg(r.rc == 0, "%s", r.err);
  ck_assert_str_eq(r.out, "restoring run/ckpt/fmnist/ckpt-300 (step 300)\n");
  ck_assert_str_eq(fk.action, "restore");
  ck_assert_str_eq(fk.ckpt, "ckpt-300");
  run_free(&r);
  /* No checkpoint named: "" (the latest good one); the note says what was
   * skipped. */
  fk.note = "restoring run/ckpt/fmnist/ckpt-300 (step 300); skipped ckpt-400: ps-0.shard: "
            "CRC mismatch";
  r = do_cmd((tf_ctl_jobs_opts){0}, CMD_RESTORE, "j-1", NULL, 0);
  ck_assert_msg(r.rc == 0, "%s", r.err);
  ck_assert_str_eq(fk.ckpt, "");
  ck_assert_msg(strstr(r.out, "; skipped ckpt-400: ps-0.shard: CRC mismatch\n"), "%s", r.out);
  run_free(&r);
  fk.error_code = TF_NOT_FOUND;
  snprintf(fk.error_msg, sizeof fk.error_msg, "run/ckpt/fmnist/ckpt-999999: no manifest");
  r = do_cmd((tf_ctl_jobs_opts){0}, CMD_RESTORE, "j-1", "ckpt-999999", 0);
  ck_assert_int_eq(r.rc, 1);
  ck_assert_str_eq(r.err, "tfctl: run/ckpt/fmnist/ckpt-999999: no manifest\n");
  ck_assert_str_eq(r.out, "");
  run_free(&r);
  fake_stop();
}
END_TEST

/* ---- the progress line ----------------------------------------------------- */

START_TEST(test_job_line) {
  tf_ctl_job j = {.job = "j", .name = "n", .state = "running", .mode = "sync", .workers = 2,
                  .step = 1200, .steps = 3000, .loss = 0.4123, .steps_per_s = 85.2,
                  .error = ""};
  char buf[256];
  ck_assert_str_eq(tf_ctl_job_line(&j, true, buf, sizeof buf),
                   "[========>           ] 1200/3000  40%  loss 0.4123  85.2 steps/s  "
                   "ETA 21 s  running");
  ck_assert_str_eq(tf_ctl_job_line(&j, false, buf, sizeof buf),
                   "step 1200/3000 loss 0.4123 85.2 steps/s state running");
  j.steps_per_s = 1.5;
  j.steps = 100000;
  ck_assert_msg(strstr(tf_ctl_job_line(&j, true, buf, sizeof buf), "ETA 18h17m  running"), "%s",
                buf);
  j.steps = 1500;
  ck_assert_msg(strstr(tf_ctl_job_line(&j, true, buf, sizeof buf), "ETA 3m20s  running"), "%s",
                buf);
  j.state = "paused"; /* no ETA while it does not run */
  ck_assert_msg(strstr(tf_ctl_job_line(&j, true, buf, sizeof buf), "ETA -  paused"), "%s", buf);
  j.steps = 0; /* no total: no bar, percent or ETA */
  j.loss = NAN;
  ck_assert_str_eq(tf_ctl_job_line(&j, true, buf, sizeof buf),
                   "step 1200  loss -  1.5 steps/s  paused");
  ck_assert_str_eq(tf_ctl_job_line(&j, false, buf, sizeof buf),
                   "step 1200 loss - 1.5 steps/s state paused");
  j.steps = 1000; /* past the total (more steps granted): full bar */
  const char *full = "[====================] 1200/1000  100%  loss -";
  ck_assert_msg(strncmp(tf_ctl_job_line(&j, true, buf, sizeof buf), full, strlen(full)) == 0,
                "%s", buf);
  ck_assert(tf_ctl_job_final("done") && tf_ctl_job_final("failed") &&
            tf_ctl_job_final("cancelled"));
  ck_assert(!tf_ctl_job_final("running") && !tf_ctl_job_final("paused") &&
            !tf_ctl_job_final("recovering") && !tf_ctl_job_final("queued"));
  char small[8];
  tf_ctl_job_line(&j, true, small, sizeof small); /* truncated, still terminated */
  ck_assert_uint_eq(strlen(small), 7);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("ctl_jobs");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, test_submit);
  tcase_add_test(tc, test_jobs_table);
  tcase_add_test(tc, test_status_one_shot);
  tcase_add_test(tc, test_control);
  tcase_add_test(tc, test_follow_plain);
  tcase_add_test(tc, test_follow_tty);
  tcase_add_test(tc, test_follow_failed_polls);
  tcase_add_test(tc, test_logs);
  tcase_add_test(tc, test_logs_follow);
  tcase_add_test(tc, test_checkpoint);
  tcase_add_test(tc, test_checkpoints_table);
  tcase_add_test(tc, test_restore);
  tcase_add_test(tc, test_job_line);
  suite_add_tcase(s, tc);
  return s;
}
