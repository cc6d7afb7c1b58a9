/* rpc_dispatch_fuzz.c: libFuzzer harness for whole requests through the
 * real request dispatcher: an in-process worker service and master
 * service (lib/runtime, no authentication), each serving on an inproc://
 * URL through its real RPC server (lib/transport/rpc.c: receive on a rep
 * context, parse the TFW envelope, admit -- malformed, reply sent as a
 * request, identity, retry table -- and the service's handler, inline or
 * on a handler thread), sent by a req0 socket as a peer would.
 *
 * Why inproc rather than a test-only entry point in rpc.c: the server's
 * call slots are NNG contexts whose aio callbacks drive the state machine
 * (receive, serve, send, park); calling into it without a context would
 * need a second code path in the server that the daemons never take.
 * inproc keeps every line the daemons run (NNG only copies the message
 * between two sockets in this process, no syscalls), answers in tens of
 * microseconds, and still leaves the tensor stream and TCP out (their
 * decoders have their own harnesses; test/integration/netfuzz_test.c
 * sends hostile bytes over real sockets).
 *
 * Input: a target byte (even: the worker, odd: the master), then the NNG
 * message body. Every 9-byte msgpack uint64 of DISPATCH_SESSION_MAGIC or
 * DISPATCH_HANDLE_MAGIC is replaced by the fixture session's or fixture
 * graph's handle (dispatch_seeds.h). SubmitJob is not sent: it starts a
 * training job that runs for long and writes files (its spec parser is
 * fuzzed through the msg_submit_job_req harness's body decoder).
 *
 * Checked for every input: exactly one reply within 5 s (RunGraph may wait
 * longer for a tensor nobody pushes: its deadline is the request's, so a
 * silent RunGraph is counted, not a failure); the reply is a well-formed
 * reply (tf_wire_parse) with a code in 0..16 and a message when not OK;
 * for a request that parses, the reply echoes its method and request id,
 * and one that does not parse is answered INVALID_ARGUMENT "malformed
 * request ...". ASan/UBSan catch the rest. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>

#include "lib/runtime/log.h"
#include "lib/runtime/master.h"
#include "lib/runtime/worker.h"
#include "test/fuzz/dispatch_seeds.h"

#define REPLY_WAIT_MS 5000
#define FIXTURE_TASK "/job:fuzzfix/replica:0/task:0"

static tf_cluster_spec *spec;
static tf_worker *worker;
static tf_master *master;
static char *urls[2]; /* DISPATCH_TO_WORKER, DISPATCH_TO_MASTER */
static nng_socket socks[2], tick_socks[2]; /* the inputs', the ticker's */
static _Atomic uint64_t fixture[2]; /* the graph handle, the session handle */
static atomic_bool ticking;
static pthread_t ticker;
static uint64_t silent_run_graphs;
static bool verbose; /* RPC_DISPATCH_VERBOSE=1: every reply's code and message */

static void die(const char *what, const tf_status *st) {
  fprintf(stderr, "rpc_dispatch: %s: %s\n", what, st != NULL ? st->msg : "");
  abort();
}

static void open_sock(nng_socket *ss, int target) {
  int rv = nng_req0_open(&ss[target]);
  if (rv == 0) {
    nng_socket_set_ms(ss[target], NNG_OPT_RECVTIMEO, REPLY_WAIT_MS);
    nng_socket_set_ms(ss[target], NNG_OPT_REQ_RESENDTIME, NNG_DURATION_INFINITE);
    nng_socket_set_size(ss[target], NNG_OPT_RECVMAXSZ, 0);
    rv = nng_dial(ss[target], urls[target], NULL, 0);
  }
  if (rv != 0) {
    fprintf(stderr, "rpc_dispatch: dial %s: %s\n", urls[target], nng_strerror(rv));
    abort();
  }
}

/* Sends body[0..len) to target; the reply (NULL when none came). */
static nng_msg *call(nng_socket *ss, int target, const void *body, size_t len) {
  nng_msg *m = NULL;
  if (nng_msg_alloc(&m, len) != 0) abort();
  if (len > 0) memcpy(nng_msg_body(m), body, len);
  int rv = nng_sendmsg(ss[target], m, 0);
  if (rv != 0) {
    fprintf(stderr, "rpc_dispatch: send to %s: %s\n", urls[target], nng_strerror(rv));
    abort();
  }
  nng_msg *r = NULL;
  rv = nng_recvmsg(ss[target], &r, 0);
  if (rv != 0) {
    /* A new socket: a late reply to this request must not answer the next. */
    nng_close(ss[target]);
    open_sock(ss, target);
    return NULL;
  }
  return r;
}

/* A typed request through the dispatcher on the ticker's sockets, as the
 * fixtures' owner (FIXTURE_TASK); the reply, or NULL with st. */
static tf_wire_msg *fixture_call(int target, int method, uint64_t session,
                                 void (*enc)(tf_wire_writer *, const void *), const void *arg,
                                 tf_status *st) {
  tf_wire_header h = dispatch_header(target, method, 0);
  h.session = session;
  h.from = target == DISPATCH_TO_WORKER ? FIXTURE_TASK : "";
  h.from_inc = target == DISPATCH_TO_WORKER ? 0x78 : 0;
  tf_wire_writer *w = tf_wire_writer_new(&h);
  if (enc != NULL) enc(w, arg);
  nng_msg *m = NULL;
  if (tf_wire_finish(w, &m, st) != TF_OK) die("fixture request", st);
  nng_msg *r = call(tick_socks, target, nng_msg_body(m), nng_msg_len(m));
  nng_msg_free(m);
  tf_wire_msg *rep = NULL;
  if (r == NULL) {
    tf_status_set(st, TF_DEADLINE_EXCEEDED, "no reply to the fixture's %s",
                  tf_method_name(method));
    return NULL;
  }
  if (tf_wire_parse(r, &rep, st) != TF_OK) die("fixture reply", st);
  if (rep->h.code != TF_OK) {
    tf_status_set(st, rep->h.code, "%s", rep->h.error);
    tf_wire_msg_free(rep);
    return NULL;
  }
  return rep;
}

static void enc_register(tf_wire_writer *w, const void *arg) {
  tf_msg_register_graph_req_encode(w, arg);
}

static void enc_deregister(tf_wire_writer *w, const void *arg) {
  tf_msg_deregister_graph_req_encode(w, arg);
}

static void enc_create(tf_wire_writer *w, const void *arg) {
  tf_msg_create_session_req_encode(w, arg);
}

/* Registers the fixture graph on the worker (false: refused, e.g. while
 * fuzzed graphs fill limits.max_graphs). */
static bool register_fixture_graph(tf_status *why) {
  size_t glen = 0;
  void *g = dispatch_graph(false, &glen);
  tf_status st;
  tf_status_init(&st);
  tf_msg_register_graph_req req = {g, glen};
  tf_wire_msg *rep = fixture_call(DISPATCH_TO_WORKER, TF_M_REGISTER_GRAPH, 0, enc_register,
                                  &req, &st);
  free(g);
  tf_msg_register_graph_reply rg;
  if (rep == NULL || tf_msg_register_graph_reply_decode(rep, &rg, &st) != TF_OK) {
    tf_wire_msg_free(rep);
    *why = st;
    return false;
  }
  uint64_t old = atomic_exchange(&fixture[0], rg.handle);
  tf_wire_msg_free(rep);
  if (old != 0) { /* gone already when a fuzzed request deregistered it */
    tf_msg_deregister_graph_req dr = {old};
    tf_status_init(&st);
    tf_wire_msg_free(fixture_call(DISPATCH_TO_WORKER, TF_M_DEREGISTER_GRAPH, 0, enc_deregister,
                                  &dr, &st));
  }
  return true;
}

static bool create_fixture_session(tf_status *why) {
  size_t glen = 0;
  void *g = dispatch_graph(true, &glen);
  tf_status st;
  tf_status_init(&st);
  tf_msg_create_session_req req = {true, g, glen};
  tf_wire_msg *rep = fixture_call(DISPATCH_TO_MASTER, TF_M_CREATE_SESSION, 0, enc_create,
                                  &req, &st);
  free(g);
  tf_msg_create_session_reply cs;
  if (rep == NULL || tf_msg_create_session_reply_decode(rep, &cs, &st) != TF_OK) {
    tf_wire_msg_free(rep);
    *why = st;
    return false;
  }
  atomic_store(&fixture[1], cs.session);
  tf_wire_msg_free(rep);
  return true;
}

/* Keeps the fixtures: the graph's owner and the session alive, and makes
 * them again when a fuzzed request took them away (DeregisterGraph,
 * CloseSession on the magic handles). */
static void keep_fixtures(void) {
  tf_status st;
  tf_status_init(&st);
  tf_wire_msg_free(fixture_call(DISPATCH_TO_WORKER, TF_M_GET_STATUS, 0, NULL, NULL, &st));
  tf_status_init(&st);
  tf_wire_msg *rep = fixture_call(DISPATCH_TO_MASTER, TF_M_KEEP_ALIVE,
                                  atomic_load(&fixture[1]), NULL, NULL, &st);
  if (rep == NULL && st.code == TF_ABORTED) {
    create_fixture_session(&st);
  }
  tf_wire_msg_free(rep);
}

/* The services' housekeeping, as the daemons' main loops run it, and the
 * fixtures' upkeep. */
static void *tick_main(void *arg) {
  (void)arg;
  for (int i = 0; atomic_load(&ticking); i++) {
    tf_worker_tick(worker);
    tf_master_tick(master);
    if (i % 10 == 0) keep_fixtures();
    tf_status st;
    if (i % 40 == 0 && i > 0) register_fixture_graph(&st); /* back if a request dropped it */
    nanosleep(&(struct timespec){0, 50 * 1000 * 1000}, NULL);
  }
  return NULL;
}

static void stop_all(void) {
  atomic_store(&ticking, false);
  pthread_join(ticker, NULL);
  for (int i = 0; i < 2; i++) {
    nng_close(socks[i]);
    nng_close(tick_socks[i]);
  }
  tf_master_free(master);
  tf_worker_free(worker);
  tf_cluster_spec_free(spec);
  free(urls[0]);
  free(urls[1]);
  fprintf(stderr, "rpc_dispatch: %llu RunGraph requests not answered within %d ms\n",
          (unsigned long long)silent_run_graphs, REPLY_WAIT_MS);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  /* Small caps, so that mutated requests reach them; sessions and graphs
   * nobody keeps alive end after 3 s (the ticker keeps the fixtures'). */
  char yaml[1024];
  snprintf(yaml, sizeof yaml,
           "cluster: fuzz\ntransport: inproc\n"
           "jobs:\n  master: [fz-master-%d]\n  worker: [fz-worker-%d]\n"
           "timeouts: {rpc_ms: 1000, registration_ms: 2000, step_ms: 2000, heartbeat_ms: 100,"
           " down_after_ms: 5000, step_ttl_ms: 2000}\n"
           "threads: {inter_op: 2, rpc: 4}\nmax_message_mb: 4\n"
           "limits: {max_pushed_mb: 4, max_graphs: 64, max_sessions: 16, max_steps: 16,"
           " max_connections: 16, session_ttl_ms: 3000}\nlog_level: err\n",
           (int)getpid(), (int)getpid());
  tf_status st;
  tf_status_init(&st);
  if (tf_cluster_spec_parse(yaml, strlen(yaml), "fuzz.yaml", &spec, &st) != TF_OK) {
    die("spec", &st);
  }
  tf_log_set_level(spec->log_level);
  verbose = getenv("RPC_DISPATCH_VERBOSE") != NULL;
  if (tf_worker_start(spec, "worker", 0, &worker, &st) != TF_OK) die("worker", &st);
  if (tf_master_start(spec, &master, &st) != TF_OK) die("master", &st);
  urls[DISPATCH_TO_WORKER] = tf_cluster_task_url(spec, "worker", 0);
  urls[DISPATCH_TO_MASTER] = tf_cluster_task_url(spec, "master", 0);
  for (int i = 0; i < 2; i++) {
    open_sock(socks, i);
    open_sock(tick_socks, i);
  }
  if (!register_fixture_graph(&st)) die("the fixture graph", &st);
  if (!create_fixture_session(&st)) die("the fixture session", &st);
  atomic_store(&ticking, true);
  pthread_create(&ticker, NULL, tick_main, NULL);
  atexit(stop_all);
  return 0;
}

/* Replaces the magic handles by the fixtures' (same width: 0xcf + 8). */
static void patch_magic(uint8_t *b, size_t len) {
  static const uint64_t magic[2] = {DISPATCH_HANDLE_MAGIC, DISPATCH_SESSION_MAGIC};
  for (size_t i = 0; i + 9 <= len; i++) {
    if (b[i] != 0xcf) continue;
    uint64_t v = 0;
    for (int k = 1; k <= 8; k++) v = v << 8 | b[i + k];
    for (int j = 0; j < 2; j++) {
      if (v != magic[j]) continue;
      uint64_t f = atomic_load(&fixture[j]);
      for (int k = 8; k >= 1; k--) b[i + k] = (uint8_t)(f >> (8 * (8 - k)));
      i += 8;
      break;
    }
  }
}

static void check(bool ok, const char *what, const tf_wire_msg *rep) {
  if (!ok) {
    fprintf(stderr, "rpc_dispatch: %s (reply %s code %d: %s)\n", what,
            rep != NULL ? tf_method_name(rep->h.method) : "-", rep != NULL ? rep->h.code : -1,
            rep != NULL && rep->h.error != NULL ? rep->h.error : "");
    abort();
  }
}

/* What the dispatcher must answer to request body[0..len). */
static void check_reply(const uint8_t *body, size_t len, nng_msg *r) {
  tf_status st;
  tf_status_init(&st);
  tf_wire_msg *rep = NULL;
  check(tf_wire_parse(r, &rep, &st) == TF_OK, st.msg, NULL);
  if (verbose) {
    fprintf(stderr, "rpc_dispatch: %s -> %s %s\n", tf_method_name(rep->h.method),
            tf_code_name(rep->h.code), rep->h.error);
  }
  check(rep->h.is_reply, "the reply is not marked as one", rep);
  check(rep->h.code >= 0 && rep->h.code <= 16, "reply code out of range", rep);
  check(rep->h.code == TF_OK || (rep->h.error != NULL && rep->h.error[0] != '\0'),
        "an error reply without a message", rep);
  nng_msg *again = NULL;
  if (nng_msg_alloc(&again, len) != 0) abort();
  if (len > 0) memcpy(nng_msg_body(again), body, len);
  tf_wire_msg *req = NULL;
  if (tf_wire_parse(again, &req, &st) != TF_OK) {
    check(rep->h.code == TF_INVALID_ARGUMENT && strstr(rep->h.error, "malformed request"),
          "a request that does not parse was not answered as malformed", rep);
  } else {
    check(rep->h.method == req->h.method, "the reply names another method", rep);
    check(rep->h.request_id == req->h.request_id, "the reply has another request id", rep);
    check(req->h.is_reply ? rep->h.code == TF_INVALID_ARGUMENT : true,
          "a reply sent as a request was not refused", rep);
    tf_wire_msg_free(req);
  }
  tf_wire_msg_free(rep);
}

/* The request's method when it parses, else -1. */
static int method_of(const uint8_t *body, size_t len) {
  nng_msg *m = NULL;
  if (nng_msg_alloc(&m, len) != 0) abort();
  if (len > 0) memcpy(nng_msg_body(m), body, len);
  tf_wire_msg *req = NULL;
  tf_status st;
  tf_status_init(&st);
  if (tf_wire_parse(m, &req, &st) != TF_OK) return -1;
  int method = req->h.method;
  tf_wire_msg_free(req);
  return method;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > (1u << 20)) return 0;
  int target = data[0] & 1;
  size_t len = size - 1;
  uint8_t *body = malloc(len + 1);
  if (len > 0) memcpy(body, data + 1, len);
  patch_magic(body, len);
  int method = method_of(body, len);
  if (method == TF_M_SUBMIT_JOB) {
    free(body);
    return 0;
  }
  nng_msg *r = call(socks, target, body, len);
  if (r == NULL) {
    if (method != TF_M_RUN_GRAPH) {
      fprintf(stderr, "rpc_dispatch: no reply from %s within %d ms to a %s request\n",
              urls[target], REPLY_WAIT_MS, method < 0 ? "malformed" : tf_method_name(method));
      abort();
    }
    silent_run_graphs++;
  } else {
    check_reply(body, len, r);
  }
  free(body);
  return 0;
}
