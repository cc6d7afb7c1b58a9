/* dispatch_seeds.h: the fixture graphs and the seed requests of the
 * request-dispatcher harness (rpc_dispatch_fuzz.c), shared with
 * gen_corpus.c. A seed is one whole request as the harness reads it: a
 * target byte (even: the worker, odd: the master) followed by the TFW
 * envelope (docs/wire.md) exactly as tf_wire_finish builds it, one valid
 * request of every method the two services serve. Session handles are
 * random and graph handles count up in the running services, so seeds
 * carry DISPATCH_SESSION_MAGIC and DISPATCH_HANDLE_MAGIC instead (msgpack
 * uint64, 0xcf and 8 bytes), which the harness replaces in every input by
 * its fixture session's and fixture graph's handles: mutated requests
 * then reach RunStep and RunGraph on something that exists. */
#ifndef TF_TEST_FUZZ_DISPATCH_SEEDS_H
#define TF_TEST_FUZZ_DISPATCH_SEEDS_H

#include <nng/nng.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/framework/rendezvous.h"
#include "lib/transport/messages.h"
#include "tf/tf.h"

#define DISPATCH_SESSION_MAGIC 0x5e55105e55105e55ull
#define DISPATCH_HANDLE_MAGIC 0x4a4e444c4a4e444cull
#define DISPATCH_TO_WORKER 0
#define DISPATCH_TO_MASTER 1
#define DISPATCH_WORKER_TASK "/job:worker/replica:0/task:0"
#define DISPATCH_MASTER_TASK "/job:master/replica:0/task:0"

static inline void dispatch_die(const char *what, const tf_status *st) {
  fprintf(stderr, "dispatch: %s: %s\n", what, st != NULL ? st->msg : "");
  abort();
}

static inline tf_node *dispatch_node(tf_graph *g, const char *op, const char *name,
                                     const char *dev, const tf_output *in, int n_in,
                                     const tf_attr_kv *kv, int n_kv) {
  tf_node_builder *b = tf_node_begin(g, op, name);
  for (int i = 0; i < n_in; i++) tf_node_add_input(b, in[i]);
  for (int i = 0; i < n_kv; i++) tf_node_set_attr(b, kv[i].name, kv[i].value);
  if (dev != NULL) tf_node_set_device(b, dev);
  tf_status st;
  tf_status_init(&st);
  tf_node *n = tf_node_finish(b, &st);
  if (n == NULL) dispatch_die(name, &st);
  return n;
}

/* The msgpack bytes of a graph (malloc'd): for the worker, a partition
 * x = _Arg(0) -> y = Neg(x) -> _Retval(0) (float32); for the master,
 * x = Placeholder(float32) -> y = Neg(x) on /job:worker/task:0, fed "x"
 * and fetched "y". */
static inline void *dispatch_graph(bool master, size_t *len) {
  tf_graph *g = tf_graph_new();
  tf_node *x;
  const char *dev = master ? "/job:worker/task:0" : NULL;
  if (master) {
    tf_attr_kv kv[] = {{"dtype", tf_attr_type_v(TF_FLOAT32)}};
    x = dispatch_node(g, "Placeholder", "x", dev, NULL, 0, kv, 1);
  } else {
    tf_attr_kv kv[] = {{"T", tf_attr_type_v(TF_FLOAT32)}, {"index", tf_attr_int(0)}};
    x = dispatch_node(g, "_Arg", "x", NULL, NULL, 0, kv, 2);
  }
  tf_output in[] = {{x, 0}};
  tf_node *y = dispatch_node(g, "Neg", "y", dev, in, 1, NULL, 0);
  if (!master) {
    tf_attr_kv kv[] = {{"T", tf_attr_type_v(TF_FLOAT32)}, {"index", tf_attr_int(0)}};
    tf_output yo[] = {{y, 0}};
    dispatch_node(g, "_Retval", "ret", NULL, yo, 1, kv, 2);
  }
  void *buf = NULL;
  tf_status st;
  tf_status_init(&st);
  if (tf_graph_to_msgpack(g, &buf, len, &st) != TF_OK) dispatch_die("graph", &st);
  tf_graph_free(g);
  return buf;
}

typedef void (*dispatch_put_fn)(const char *harness, int n, const void *buf, size_t len);

/* The header of a request to the worker (from a peer task, /job:fuzzer,
 * that owns what it registers there; not the master, whose graphs a
 * request from another incarnation of it would drop) or to the master (as
 * a client), with a 2 s deadline. */
static inline tf_wire_header dispatch_header(int target, int method, uint64_t step) {
  bool w = target == DISPATCH_TO_WORKER;
  return (tf_wire_header){.version = TF_WIRE_VERSION, .method = method,
                          .request_id = 0, .session = w ? 0 : DISPATCH_SESSION_MAGIC,
                          .step_id = step, .deadline_ms = 2000,
                          .from = w ? "/job:fuzzer/replica:0/task:0" : "", .from_inc = w ? 0x77 : 0,
                          .to = w ? DISPATCH_WORKER_TASK : DISPATCH_MASTER_TASK,
                          .error = ""};
}

/* Finishes w as seed n: the target byte, then the message's bytes. */
static inline void dispatch_put(dispatch_put_fn put, int *n, int target, tf_wire_writer *w) {
  nng_msg *m = NULL;
  tf_status st;
  tf_status_init(&st);
  if (tf_wire_finish(w, &m, &st) != TF_OK) dispatch_die("seed", &st);
  size_t len = nng_msg_len(m);
  uint8_t *buf = malloc(len + 1);
  buf[0] = (uint8_t)target;
  memcpy(buf + 1, nng_msg_body(m), len);
  put("rpc_dispatch", (*n)++, buf, len + 1);
  free(buf);
  nng_msg_free(m);
}

static inline tf_wire_writer *dispatch_writer(int target, int method, uint64_t step) {
  tf_wire_header h = dispatch_header(target, method, step);
  return tf_wire_writer_new(&h);
}

static inline void dispatch_seeds_worker(dispatch_put_fn put, int *n, tf_tensor *x) {
  enum { W = DISPATCH_TO_WORKER };
  size_t glen = 0;
  void *g = dispatch_graph(false, &glen);
  tf_wire_writer *w = dispatch_writer(W, TF_M_GET_STATUS, 0);
  dispatch_put(put, n, W, w);
  w = dispatch_writer(W, TF_M_REGISTER_GRAPH, 0);
  tf_msg_register_graph_req_encode(w, &(tf_msg_register_graph_req){g, glen});
  dispatch_put(put, n, W, w);
  w = dispatch_writer(W, TF_M_RUN_GRAPH, 0x51);
  tf_tensor *args[] = {x};
  tf_msg_run_graph_req_encode(w, &(tf_msg_run_graph_req){.handle = DISPATCH_HANDLE_MAGIC,
                                                         .n_args = 1, .args = args,
                                                         .n_rets = 1, .trace = true});
  dispatch_put(put, n, W, w);
  char *key = tf_rdv_key_make("/job:worker/replica:0/task:0/device:CPU:0", 1,
                              "/job:worker/replica:0/task:0/device:CPU:0", "t", 0, 0);
  w = dispatch_writer(W, TF_M_TENSOR_PUSH, 0x52);
  tf_msg_tensor_push_req_encode(w, &(tf_msg_tensor_push_req){.key = key, .tensor = x});
  dispatch_put(put, n, W, w);
  free(key);
  w = dispatch_writer(W, TF_M_CLEANUP_GRAPH, 0x53); /* not the steps above */
  dispatch_put(put, n, W, w);
  w = dispatch_writer(W, TF_M_ABORT_STEP, 0x54);
  tf_msg_abort_step_req_encode(w, &(tf_msg_abort_step_req){TF_CANCELLED, "fuzz"});
  dispatch_put(put, n, W, w);
  w = dispatch_writer(W, TF_M_DEREGISTER_GRAPH, 0);
  tf_msg_deregister_graph_req_encode(w, &(tf_msg_deregister_graph_req){DISPATCH_HANDLE_MAGIC + 1});
  dispatch_put(put, n, W, w);
  const char *containers[] = {"c0", ""};
  w = dispatch_writer(W, TF_M_WORKER_RESET, 0);
  tf_msg_worker_reset_req_encode(w, &(tf_msg_worker_reset_req){.n_containers = 2,
                                                               .containers = containers});
  dispatch_put(put, n, W, w);
  free(g);
}

static inline void dispatch_seeds_master(dispatch_put_fn put, int *n, tf_tensor *x) {
  enum { M = DISPATCH_TO_MASTER };
  size_t glen = 0;
  void *g = dispatch_graph(true, &glen);
  tf_wire_writer *w = dispatch_writer(M, TF_M_CREATE_SESSION, 0);
  tf_msg_create_session_req_encode(w, &(tf_msg_create_session_req){true, g, glen});
  dispatch_put(put, n, M, w);
  w = dispatch_writer(M, TF_M_EXTEND_SESSION, 0);
  tf_msg_extend_session_req_encode(w, &(tf_msg_extend_session_req){g, glen});
  dispatch_put(put, n, M, w);
  const char *feeds[] = {"x"}, *fetches[] = {"y"};
  tf_tensor *vals[] = {x};
  w = dispatch_writer(M, TF_M_RUN_STEP, 0);
  tf_msg_run_step_req_encode(w, &(tf_msg_run_step_req){.n_feeds = 1, .feed_names = feeds,
                                                        .feed_values = vals, .n_fetches = 1,
                                                        .fetches = fetches, .trace = true});
  dispatch_put(put, n, M, w);
  static const int nil_body[] = {TF_M_GET_STATUS, TF_M_LIST_DEVICES, TF_M_CLUSTER_STATUS,
                                 TF_M_KEEP_ALIVE, TF_M_LIST_JOBS};
  for (size_t i = 0; i < sizeof nil_body / sizeof *nil_body; i++) {
    dispatch_put(put, n, M, dispatch_writer(M, nil_body[i], 0));
  }
  tf_wire_header h = dispatch_header(M, TF_M_CLOSE_SESSION, 0);
  h.session = 0x1234; /* not the fixture's: the seeds after it use that */
  dispatch_put(put, n, M, tf_wire_writer_new(&h));
  const char *containers[] = {"c0"};
  w = dispatch_writer(M, TF_M_RESET, 0);
  tf_msg_reset_req_encode(w, &(tf_msg_reset_req){.n_containers = 1, .containers = containers});
  dispatch_put(put, n, M, w);
  w = dispatch_writer(M, TF_M_JOB_STATUS, 0);
  tf_msg_job_status_req_encode(w, &(tf_msg_job_status_req){.job = "job-1"});
  dispatch_put(put, n, M, w);
  w = dispatch_writer(M, TF_M_JOB_CONTROL, 0);
  tf_msg_job_control_req_encode(w, &(tf_msg_job_control_req){.job = "job-1", .action = "step",
                                                              .steps = 3, .checkpoint = ""});
  dispatch_put(put, n, M, w);
  w = dispatch_writer(M, TF_M_JOB_LOGS, 0);
  tf_msg_job_logs_req_encode(w, &(tf_msg_job_logs_req){.job = "job-1", .from = 2});
  dispatch_put(put, n, M, w);
  w = dispatch_writer(M, TF_M_JOB_CHECKPOINTS, 0);
  tf_msg_job_checkpoints_req_encode(w, &(tf_msg_job_checkpoints_req){.job = "job-1"});
  dispatch_put(put, n, M, w);
  free(g);
}

/* Every seed of the rpc_dispatch harness. */
static inline void dispatch_seeds(dispatch_put_fn put) {
  tf_shape s = tf_shape_of(1, 4);
  tf_tensor *x = NULL;
  tf_status st;
  tf_status_init(&st);
  if (tf_tensor_new(TF_FLOAT32, &s, &x, &st) != TF_OK) dispatch_die("tensor", &st);
  for (int i = 0; i < 4; i++) ((float *)x->data)[i] = (float)i - 1.5f;
  int n = 0;
  dispatch_seeds_worker(put, &n, x);
  dispatch_seeds_master(put, &n, x);
  tf_tensor_unref(x);
}

#endif
