/* msg_seeds.h: seed inputs for the message harnesses (msg_*_fuzz.c), for
 * gen_corpus.c: for every message type a few bodies made by its encoder
 * (typical, empty lists, dead values, string and bool tensors), each
 * written as the harness reads it: the body's msgpack bytes followed by
 * the payload area (msg_raw.h). */
#ifndef TF_TEST_FUZZ_MSG_SEEDS_H
#define TF_TEST_FUZZ_MSG_SEEDS_H

#include <math.h>

#include "lib/transport/messages.h"
#include "test/fuzz/msg_raw.h"

typedef void (*seed_put_fn)(const char *harness, int n, const void *buf, size_t len);

/* The header every seed is encoded under (only the body is kept). */
static inline tf_wire_writer *seed_writer(int method, bool reply) {
  tf_wire_header h = {.version = TF_WIRE_VERSION, .method = method,
                      .is_reply = reply, .error = ""};
  return tf_wire_writer_new(&h);
}

/* Finishes w and writes its body and payload area as seed n of harness. */
static inline void seed_put(seed_put_fn put, const char *harness, int n,
                            tf_wire_writer *w) {
  nng_msg *m = NULL;
  tf_status st;
  if (tf_wire_finish(w, &m, &st) != TF_OK) {
    raw_die(st.msg);
  }
  const uint8_t *body, *pay;
  size_t blen, plen;
  raw_split(m, &body, &blen, &pay, &plen);
  uint8_t *buf = malloc(blen + plen + 1);
  memcpy(buf, body, blen);
  if (plen > 0) {
    memcpy(buf + blen, pay, plen);
  }
  put(harness, n, buf, blen + plen);
  free(buf);
  nng_msg_free(m);
}

static inline tf_tensor *seed_tensor(tf_dtype dt, int n) {
  tf_shape s = tf_shape_of(1, n);
  tf_tensor *t = NULL;
  tf_status st;
  if (tf_tensor_new(dt, &s, &t, &st) != TF_OK) {
    raw_die(st.msg);
  }
  for (int64_t i = 0; i < t->n; i++) {
    if (dt == TF_STRING) {
      tf_tensor_set_string(t, i, "seed", 4, &st);
    } else if (dt == TF_BOOL) {
      ((uint8_t *)t->data)[i] = (uint8_t)(i & 1);
    }
  }
  if (dt != TF_STRING && dt != TF_BOOL) {
    for (size_t k = 0; k < t->nbytes; k++) {
      ((uint8_t *)t->data)[k] = (uint8_t)(k * 7 + 1);
    }
  }
  return t;
}

static void seeds_worker(seed_put_fn put, tf_tensor **ts) {
  static const char graph[] = "\x82\xa7version\x01\xa5nodes\x90";
  tf_wire_writer *w = seed_writer(TF_M_REGISTER_GRAPH, false);
  tf_msg_register_graph_req_encode(w, &(tf_msg_register_graph_req){graph, sizeof graph - 1});
  seed_put(put, "msg_register_graph_req", 0, w);
  w = seed_writer(TF_M_REGISTER_GRAPH, true);
  tf_msg_register_graph_reply_encode(w, &(tf_msg_register_graph_reply){0x1234});
  seed_put(put, "msg_register_graph_reply", 0, w);
  for (int k = 0; k < 2; k++) {
    w = seed_writer(TF_M_RUN_GRAPH, false);
    tf_msg_run_graph_req rq = {.handle = 3, .n_args = k ? 4 : 0, .args = ts, .n_rets = 2,
                               .trace = k};
    tf_msg_run_graph_req_encode(w, &rq);
    seed_put(put, "msg_run_graph_req", k, w);
    tf_tensor *rets[] = {ts[0], NULL, ts[3]};
    tf_msg_timing tm[] = {{"a", 10, 20}, {"mm/b", 15, 15}};
    w = seed_writer(TF_M_RUN_GRAPH, true);
    tf_msg_run_graph_reply rp = {.n_rets = k ? 3 : 0, .rets = rets,
                                 .n_timings = k ? 2 : 0, .timings = tm};
    tf_msg_run_graph_reply_encode(w, &rp);
    seed_put(put, "msg_run_graph_reply", k, w);
  }
  for (int k = 0; k < 3; k++) {
    w = seed_writer(TF_M_TENSOR_PUSH, false);
    tf_msg_tensor_push_req p = {
        .key = "/job:ps/replica:0/task:0/device:CPU:0;7;/job:worker/replica:0/task:1/"
               "device:CPU:0;x;0:0",
        .dead = k == 2, .tensor = k == 2 ? NULL : ts[k]};
    tf_msg_tensor_push_req_encode(w, &p);
    seed_put(put, "msg_tensor_push_req", k, w);
  }
  w = seed_writer(TF_M_ABORT_STEP, false);
  tf_msg_abort_step_req_encode(w, &(tf_msg_abort_step_req){.code = TF_CANCELLED,
                                                            .msg = "client gave up"});
  seed_put(put, "msg_abort_step_req", 0, w);
  w = seed_writer(TF_M_DEREGISTER_GRAPH, false);
  tf_msg_deregister_graph_req_encode(w, &(tf_msg_deregister_graph_req){77});
  seed_put(put, "msg_deregister_graph_req", 0, w);
  const char *cs[] = {"", "c1"};
  for (int k = 0; k < 2; k++) {
    w = seed_writer(TF_M_WORKER_RESET, false);
    tf_msg_worker_reset_req_encode(w, &(tf_msg_worker_reset_req){.n_containers = 2 * k,
                                                                  .containers = cs});
    seed_put(put, "msg_worker_reset_req", k, w);
    w = seed_writer(TF_M_RESET, false);
    tf_msg_reset_req_encode(w, &(tf_msg_reset_req){.n_containers = 2 * k, .containers = cs});
    seed_put(put, "msg_reset_req", k, w);
  }
}

static void seeds_master(seed_put_fn put, tf_tensor **ts) {
  static const char graph[] = "\x82\xa7version\x01\xa5nodes\x90";
  for (int k = 0; k < 2; k++) {
    tf_wire_writer *w = seed_writer(TF_M_CREATE_SESSION, false);
    tf_msg_create_session_req_encode(w, &(tf_msg_create_session_req){k, graph,
                                                                      sizeof graph - 1});
    seed_put(put, "msg_create_session_req", k, w);
  }
  tf_wire_writer *w = seed_writer(TF_M_CREATE_SESSION, true);
  tf_msg_create_session_reply_encode(w, &(tf_msg_create_session_reply){0xfeedULL << 40});
  seed_put(put, "msg_create_session_reply", 0, w);
  w = seed_writer(TF_M_EXTEND_SESSION, false);
  tf_msg_extend_session_req_encode(w, &(tf_msg_extend_session_req){graph, sizeof graph - 1});
  seed_put(put, "msg_extend_session_req", 0, w);
  const char *names[] = {"x", "y:1", "z"};
  for (int k = 0; k < 2; k++) {
    w = seed_writer(TF_M_RUN_STEP, false);
    tf_msg_run_step_req rq = {.n_feeds = k ? 3 : 0, .feed_names = names, .feed_values = ts,
                              .n_fetches = k ? 2 : 1, .fetches = names,
                              .n_targets = k, .targets = names + 2, .trace = k};
    tf_msg_run_step_req_encode(w, &rq);
    seed_put(put, "msg_run_step_req", k, w);
    w = seed_writer(TF_M_RUN_STEP, true);
    tf_msg_run_step_reply_encode(w, &(tf_msg_run_step_reply){.n_fetches = k ? 4 : 0,
                                                              .fetches = ts});
    seed_put(put, "msg_run_step_reply", k, w);
  }
}

static void seeds_status(seed_put_fn put) {
  tf_msg_status_device dev = {"/job:worker/replica:0/task:1/device:CPU:0", "CPU", 42};
  for (int k = 0; k < 2; k++) {
    tf_wire_writer *w = seed_writer(TF_M_GET_STATUS, true);
    tf_msg_get_status_reply b = {.job = k ? "worker" : "master", .task = k,
                                 .incarnation = 42, .n_devices = k, .devices = &dev,
                                 .has = (k ? TF_MSG_STATUS_WORKER : TF_MSG_STATUS_MASTER) |
                                        TF_MSG_STATUS_USAGE,
                                 .sessions = 2, .running_steps = 1, .step_tables = 3,
                                 .buffered_bytes = 1 << 20, .graphs = 4, .steps_run = 99,
                                 .bytes_sent = 1ULL << 32, .bytes_received = 77,
                                 .mem_in_use = 1 << 22, .mem_peak = 1 << 23};
    tf_msg_get_status_reply_encode(w, &b);
    seed_put(put, "msg_get_status_reply", k, w);
  }
  tf_msg_device ds[] = {{"/job:ps/replica:0/task:0/device:CPU:0", "CPU", 1,
                         "/job:ps/replica:0/task:0", "tcp://127.0.0.1:2222"}};
  tf_wire_writer *w = seed_writer(TF_M_LIST_DEVICES, true);
  tf_msg_list_devices_reply_encode(w, &(tf_msg_list_devices_reply){1, ds});
  seed_put(put, "msg_list_devices_reply", 0, w);
  const char *devs[] = {"/job:ps/replica:0/task:0/device:CPU:0"};
  tf_msg_task_status tasks[] = {
      {"master", 0, "tcp://127.0.0.1:2220", true, 5, 0, NULL, 0, ""},
      {"ps", 0, "tcp://127.0.0.1:2222", false, 1, 1, devs, 1500, "no answer"}};
  w = seed_writer(TF_M_CLUSTER_STATUS, true);
  tf_msg_cluster_status_reply_encode(w, &(tf_msg_cluster_status_reply){2, tasks});
  seed_put(put, "msg_cluster_status_reply", 0, w);
}

static void seeds_job_info(seed_put_fn put) {
  tf_msg_metric ms[] = {{"test_accuracy", 0.8912}, {"test_loss", NAN}};
  tf_msg_job_info js[] = {
      {.job = "fmnist-mlp-sync-1", .name = "fmnist-mlp", .state = "running", .mode = "sync",
       .workers = 2, .step = 1200, .steps = 3000, .loss = 0.4123, .steps_per_s = 85.2,
       .elapsed_ms = 14100, .submitted_ms = 1790000000123LL, .error = "", .n_metrics = 2,
       .metrics = ms, .recoveries = 1, .checkpoint = "run/ckpt/mlp/ckpt-1000",
       .checkpoint_step = 1000, .note = "run/ckpt/mlp/ckpt-1000"},
      {.job = "q-2", .name = "q", .state = "failed", .mode = "async", .loss = NAN,
       .error = "worker 1: step 7: loss is NaN"}};
  for (int k = 0; k < 2; k++) {
    tf_wire_writer *w = seed_writer(k ? TF_M_JOB_CONTROL : TF_M_JOB_STATUS, true);
    tf_msg_job_info_reply_encode(w, &(tf_msg_job_info_reply){.info = js[k]});
    seed_put(put, "msg_job_info_reply", k, w);
    w = seed_writer(TF_M_LIST_JOBS, true);
    tf_msg_list_jobs_reply_encode(w, &(tf_msg_list_jobs_reply){.n_jobs = 2 * k, .jobs = js});
    seed_put(put, "msg_list_jobs_reply", k, w);
  }
}

static void seeds_checkpoints(seed_put_fn put) {
  tf_msg_checkpoint cs[] = {{"ckpt-100", 100, 1790000000123LL, 4096},
                            {"ckpt-200", 200, 1790000060456LL, 1536}};
  for (int k = 0; k < 2; k++) {
    tf_wire_writer *w = seed_writer(TF_M_JOB_CHECKPOINTS, true);
    tf_msg_job_checkpoints_reply_encode(w, &(tf_msg_job_checkpoints_reply){
                                               .dir = "run/ckpt/mlp", .n_checkpoints = 2 * k,
                                               .checkpoints = cs});
    seed_put(put, "msg_job_checkpoints_reply", k, w);
    w = seed_writer(TF_M_JOB_CONTROL, false);
    tf_msg_job_control_req_encode(w, &(tf_msg_job_control_req){
                                        .job = "mlp-1", .action = k ? "restore" : "checkpoint",
                                        .checkpoint = k ? "ckpt-100" : ""});
    seed_put(put, "msg_job_control_req", 2 + k, w);
  }
  tf_wire_writer *w = seed_writer(TF_M_JOB_CHECKPOINTS, false);
  tf_msg_job_checkpoints_req_encode(w, &(tf_msg_job_checkpoints_req){.job = "mlp-1"});
  seed_put(put, "msg_job_checkpoints_req", 0, w);
}

static void seeds_jobs(seed_put_fn put) {
  static const char spec[] = "name: mlp\nmodel:\n  layers: [{dense: {units: 10}}]\n";
  tf_wire_writer *w = seed_writer(TF_M_SUBMIT_JOB, false);
  tf_msg_submit_job_req_encode(w, &(tf_msg_submit_job_req){spec, sizeof spec - 1, "j.yaml"});
  seed_put(put, "msg_submit_job_req", 0, w);
  w = seed_writer(TF_M_SUBMIT_JOB, true);
  tf_msg_submit_job_reply_encode(w, &(tf_msg_submit_job_reply){.job = "mlp-1"});
  seed_put(put, "msg_submit_job_reply", 0, w);
  w = seed_writer(TF_M_JOB_STATUS, false);
  tf_msg_job_status_req_encode(w, &(tf_msg_job_status_req){.job = "mlp-1"});
  seed_put(put, "msg_job_status_req", 0, w);
  const char *actions[] = {"step", "pause"};
  const char *lines[] = {"step 100 loss 0.6931", "", "done"};
  for (int k = 0; k < 2; k++) {
    w = seed_writer(TF_M_JOB_CONTROL, false);
    tf_msg_job_control_req_encode(w, &(tf_msg_job_control_req){.job = "mlp-1",
                                                                .action = actions[k],
                                                                .steps = k ? 0 : 10});
    seed_put(put, "msg_job_control_req", k, w);
    w = seed_writer(TF_M_JOB_LOGS, false);
    tf_msg_job_logs_req_encode(w, &(tf_msg_job_logs_req){.job = "mlp-1", .from = 40 * k});
    seed_put(put, "msg_job_logs_req", k, w);
    w = seed_writer(TF_M_JOB_LOGS, true);
    tf_msg_job_logs_reply_encode(w, &(tf_msg_job_logs_reply){
                                        .first = 40 * k, .n_lines = 3 * k, .lines = lines,
                                        .next = 43 * k});
    seed_put(put, "msg_job_logs_reply", k, w);
  }
  seeds_job_info(put);
  seeds_checkpoints(put);
}

/* Writes every message harness's seeds through put. */
static void msg_seeds(seed_put_fn put) {
  tf_tensor *ts[] = {seed_tensor(TF_FLOAT32, 3), seed_tensor(TF_STRING, 2),
                     seed_tensor(TF_BOOL, 5), seed_tensor(TF_INT64, 0)};
  seeds_worker(put, ts);
  seeds_master(put, ts);
  seeds_status(put);
  seeds_jobs(put);
  for (int i = 0; i < 4; i++) {
    tf_tensor_unref(ts[i]);
  }
}

#endif
