/* remote_session.c: the client side of a session whose target is a
 * tfmaster URL (tf_session_options.target). The local session object keeps
 * the graph copy and hands new nodes here; this file turns them and every
 * call into master-service requests (docs/wire.md). Registered with
 * lib/core's session through tf__session_set_remote_ops when the library
 * loads, so lib/core knows no transport.
 *
 * Keep-alive: the master closes a session that no request refreshed for
 * its limits.session_ttl_ms (sent in the CreateSession reply). While the
 * session is open a thread of its own sends KeepAlive every TTL/3, so a
 * client that dies loses its session (and its steps) within the TTL. */
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/serialize/serialize_util.h"
#include "lib/core/exec/remote.h"
#include "lib/core/base/util.h"
#include "lib/runtime/cluster_auth.h"
#include "lib/transport/messages.h"
#include "lib/transport/rpc.h"

/* A step without timeout_ms waits this long for the master's answer; the
 * master itself fails steps on tasks that go down. */
#define NO_DEADLINE_RPC_MS (24LL * 3600 * 1000)
#define RPC_GRACE_MS 5000

typedef struct remote {
  tf_rpc_client *c;
  uint64_t session;
  char *target;
  int64_t control_ms; /* control calls (create, extend, close, reset) */
  int64_t ttl_ms;     /* the master's session TTL; 0: unknown (no keep-alive) */
  int64_t max_msg;    /* the master's max_message_mb in bytes; 0: unknown */
  pthread_t ka;       /* the keep-alive thread, while ka_on */
  bool ka_on;
  bool ka_stop;       /* under ka_mu */
  pthread_mutex_t ka_mu;
  pthread_cond_t ka_cv;
} remote;

/* A request from this client (from "") to the master. */
static tf_wire_writer *request(const remote *r, int method, int64_t deadline_ms) {
  tf_wire_header h = {.version = TF_WIRE_VERSION, .method = method,
                      .request_id = tf_rpc_new_request_id(),
                      .session = r->session, .deadline_ms = deadline_ms,
                      .from = "", .to = TF_MSG_MASTER_TASK};
  return tf_wire_writer_new(&h);
}

/* Finishes wr, calls, and returns the reply (or NULL with st set). A
 * request larger than the master accepts fails here, naming both sizes:
 * the master's transport would only drop the connection. */
static tf_wire_msg *call(remote *r, tf_wire_writer *wr, int64_t timeout_ms,
                         tf_status *st) {
  nng_msg *m = NULL;
  tf_wire_msg *reply = NULL;
  if (tf_wire_finish(wr, &m, st) != TF_OK) return NULL;
  size_t len = nng_msg_len(m);
  if (r->max_msg > 0 && len > (size_t)r->max_msg) {
    int method = tf__wire_method_of(m);
    nng_msg_free(m);
    tf_status_set(st, TF_RESOURCE_EXHAUSTED, "the %s request is %zu bytes; the master at "
                  "%s accepts at most %lld (max_message_mb: %lld MiB)",
                  tf_method_name(method), len, r->target, (long long)r->max_msg,
                  (long long)(r->max_msg >> 20));
    return NULL;
  }
  if (tf_rpc_call(r->c, m, timeout_ms, &reply, st) != TF_OK) return NULL;
  return reply;
}

/* Packs g's nodes from index `from` on as an ExtendSession body. */
static tf_code pack_graph(tf_wire_writer *wr, const tf_graph *g, int from,
                          tf_status *st) {
  void *buf = NULL;
  size_t len = 0;
  TF_TRY(tf__graph_nodes_to_msgpack(g, from, &buf, &len, st));
  tf_msg_extend_session_req b = {.graph = buf, .graph_len = len};
  tf_msg_extend_session_req_encode(wr, &b);
  free(buf);
  return TF_OK;
}

/* Sends KeepAlive every ttl/3 until told to stop. A failed KeepAlive is
 * retried at the next period; the step or call that follows reports a
 * session the master has dropped. */
static void *keep_alive_main(void *arg) {
  remote *r = arg;
  int64_t period = r->ttl_ms / 3 > 0 ? r->ttl_ms / 3 : 1;
  pthread_mutex_lock(&r->ka_mu);
  while (!r->ka_stop) {
    int64_t until = tf__now_ns() + period * 1000000;
    while (!r->ka_stop && tf__now_ns() < until) {
      tf__cond_wait_ms(&r->ka_cv, &r->ka_mu, (until - tf__now_ns()) / 1000000 + 1);
    }
    if (r->ka_stop) break;
    pthread_mutex_unlock(&r->ka_mu);
    tf_wire_writer *wr = request(r, TF_M_KEEP_ALIVE, period);
    tf_status st;
    tf_status_init(&st);
    tf_wire_msg_free(call(r, wr, period, &st));
    pthread_mutex_lock(&r->ka_mu);
  }
  pthread_mutex_unlock(&r->ka_mu);
  return NULL;
}

static void keep_alive_start(remote *r) {
  pthread_mutex_init(&r->ka_mu, NULL);
  pthread_cond_init(&r->ka_cv, NULL);
  r->ka_on = r->ttl_ms > 0 && pthread_create(&r->ka, NULL, keep_alive_main, r) == 0;
}

static void keep_alive_stop(remote *r) {
  if (!r->ka_on) return;
  pthread_mutex_lock(&r->ka_mu);
  r->ka_stop = true;
  pthread_cond_broadcast(&r->ka_cv);
  pthread_mutex_unlock(&r->ka_mu);
  pthread_join(r->ka, NULL); /* its call is bounded by ttl/3 */
  r->ka_on = false;
}

static void *r_open(const char *target, int64_t rpc_timeout_ms, tf_status *st) {
  remote *r = tf__xcalloc(1, sizeof *r);
  r->target = tf__xstrdup(target);
  r->control_ms = rpc_timeout_ms;
  if (tf_cluster_auth_from_env(st) != TF_OK || tf_rpc_client_new(target, 0, &r->c, st) != TF_OK) {
    free(r->target);
    free(r);
    return NULL;
  }
  tf_wire_writer *wr = request(r, TF_M_CREATE_SESSION, r->control_ms);
  tf_msg_create_session_req b = {.has_graph = false}; /* nodes come with Extend */
  tf_msg_create_session_req_encode(wr, &b);
  tf_wire_msg *reply = call(r, wr, r->control_ms, st);
  tf_msg_create_session_reply rb = {0};
  if (reply == NULL || tf_msg_create_session_reply_decode(reply, &rb, st) != TF_OK) {
    tf_wire_msg_free(reply);
    tf_status_prefix(st, "session on %s", target);
    tf_rpc_client_free(r->c);
    free(r->target);
    free(r);
    return NULL;
  }
  r->session = rb.session;
  r->ttl_ms = rb.session_ttl_ms;
  r->max_msg = rb.max_message_bytes;
  tf_wire_msg_free(reply);
  keep_alive_start(r);
  return r;
}

static tf_code r_extend(void *impl, const tf_graph *g, int from, tf_status *st) {
  remote *r = impl;
  tf_wire_writer *wr = request(r, TF_M_EXTEND_SESSION, r->control_ms);
  if (pack_graph(wr, g, from, st) != TF_OK) {
    tf_wire_writer_free(wr);
    return st->code;
  }
  tf_wire_msg *reply = call(r, wr, r->control_ms, st);
  tf_wire_msg_free(reply);
  return reply ? TF_OK : st->code;
}

/* The fetches of a RunStep reply into out[0..n) (new references). */
static tf_code unpack_fetches(const tf_wire_msg *reply, tf_tensor **out, int n,
                              tf_status *st) {
  tf_msg_run_step_reply b;
  TF_TRY(tf_msg_run_step_reply_decode(reply, &b, st));
  tf_code rc = TF_OK;
  if (b.n_fetches != n) {
    rc = tf_status_set(st, TF_INTERNAL, "RunStep reply has %d fetches, "
                       "expected %d", b.n_fetches, n);
  }
  for (int i = 0; rc == TF_OK && i < n; i++) {
    out[i] = b.fetches[i];
    b.fetches[i] = NULL;
  }
  tf_msg_run_step_reply_fini(&b);
  return rc;
}

static tf_code r_run(void *impl, const tf_run_options *opts,
                     const char *const *feed_names, tf_tensor *const *feed_values,
                     int n_feeds, const char *const *fetch_names,
                     tf_tensor **fetch_values, int n_fetches,
                     const char *const *target_names, int n_targets,
                     tf_run_metadata *meta, tf_status *st) {
  remote *r = impl;
  int64_t timeout = opts && opts->timeout_ms > 0 ? opts->timeout_ms : 0;
  tf_wire_writer *wr = request(r, TF_M_RUN_STEP, timeout);
  tf_msg_run_step_req b = {.n_feeds = n_feeds, .feed_names = (const char **)feed_names,
                           .feed_values = (tf_tensor **)feed_values,
                           .n_fetches = n_fetches, .fetches = (const char **)fetch_names,
                           .n_targets = n_targets, .targets = (const char **)target_names,
                           .trace = opts && opts->trace};
  tf_msg_run_step_req_encode(wr, &b);
  int64_t rpc_ms = timeout > 0 ? timeout + RPC_GRACE_MS : NO_DEADLINE_RPC_MS;
  tf_wire_msg *reply = call(r, wr, rpc_ms, st);
  if (reply == NULL) return st->code;
  tf_code rc = unpack_fetches(reply, fetch_values, n_fetches, st);
  tf_wire_msg_free(reply);
  if (meta != NULL) memset(meta, 0, sizeof *meta);
  return rc;
}

static tf_code r_reset(void *impl, const char *const *containers, int n,
                       tf_status *st) {
  remote *r = impl;
  tf_wire_writer *wr = request(r, TF_M_RESET, r->control_ms);
  tf_msg_reset_req b = {.n_containers = n, .containers = (const char **)containers};
  tf_msg_reset_req_encode(wr, &b);
  tf_wire_msg *reply = call(r, wr, r->control_ms, st);
  tf_wire_msg_free(reply);
  return reply ? TF_OK : st->code;
}

static tf_code r_close(void *impl, tf_status *st) {
  remote *r = impl;
  if (r->session == 0) return TF_OK;
  keep_alive_stop(r);
  tf_wire_writer *wr = request(r, TF_M_CLOSE_SESSION, r->control_ms);
  tf_wire_msg *reply = call(r, wr, r->control_ms, st);
  tf_wire_msg_free(reply);
  r->session = 0;
  return reply ? TF_OK : st->code;
}

static void r_free(void *impl) {
  remote *r = impl;
  if (r == NULL) return;
  keep_alive_stop(r);
  pthread_mutex_destroy(&r->ka_mu);
  pthread_cond_destroy(&r->ka_cv);
  tf_rpc_client_free(r->c);
  free(r->target);
  free(r);
}

static const tf__remote_ops remote_ops = {r_open, r_extend, r_run, r_reset,
                                          r_close, r_free};

__attribute__((constructor)) static void register_remote(void) {
  tf__session_set_remote_ops(&remote_ops);
}
