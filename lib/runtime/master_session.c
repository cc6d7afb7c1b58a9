/* master_session.c: the master's sessions: CreateSession (after every task
 * of the spec has answered, bounded by the registration timeout),
 * ExtendSession (new nodes only), CloseSession (drops the session and
 * deregisters its partitions on the workers). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/refcount.h"
#include "lib/core/base/util.h"
#include "lib/runtime/log.h"
#include "lib/runtime/master_impl.h"
#include "tf/serialize.h"

static void hkey(uint64_t h, char key[24]) { snprintf(key, 24, "%016" PRIx64, h); }

void tf__ms_prepared_free(ms_prepared *p) {
  if (p == NULL) return;
  for (int i = 0; i < p->n_feeds; i++) free(p->feeds[i]);
  for (int i = 0; i < p->n_fetches; i++) free(p->fetches[i]);
  free(p->feeds);
  free(p->feed_types);
  free(p->fetches);
  for (int i = 0; i < p->n_parts; i++) {
    free(p->parts[i].arg_feed);
    free(p->parts[i].ret_fetch);
  }
  free(p->parts);
  free(p);
}

void tf__ms_session_destroy(ms_session *s) {
  tf_graph_free(s->g);
  tf__strmap_each(&s->cache, (void (*)(void *))tf__ms_prepared_free);
  tf__strmap_fini(&s->cache);
  for (int i = 0; i < s->n_retired; i++) tf__ms_prepared_free(s->retired[i]);
  free(s->retired);
  pthread_mutex_destroy(&s->mu);
  free(s);
}

ms_session *tf__ms_session_get(tf_master *m, uint64_t handle, tf_status *st) {
  char key[24];
  hkey(handle, key);
  pthread_mutex_lock(&m->mu);
  ms_session *s = tf__strmap_get(&m->sessions, key, NULL);
  if (s != NULL) {
    tf__ref_get(&s->refs); /* under m->mu: the table's keeps s alive */
    s->last_used_ns = tf__now_ns();
  }
  pthread_mutex_unlock(&m->mu);
  if (s == NULL) {
    tf_status_set(st, TF_ABORTED, "session %s is not known to the master at %s: "
                  "it was closed, or the master restarted; create a new session",
                  key, m->url);
  }
  return s;
}

static void session_release(void *s) { tf__ms_session_destroy(s); }

void tf__ms_session_put(tf_master *m, ms_session *s) {
  tf__ref_put(&s->refs, session_release, s);
}

/* Adds the nodes of a graph sent in msgpack form (len bytes at buf) to g. */
static tf_code add_nodes(tf_graph *g, const void *buf, size_t len, const char *what,
                         tf_status *st) {
  if (tf_graph_from_msgpack(g, buf, len, st) != TF_OK) {
    return tf_status_prefix(st, "%s", what);
  }
  return TF_OK;
}

nng_msg *tf__ms_create_session(tf_master *m, const tf_wire_msg *req, tf_status *st) {
  tf_msg_create_session_req rq;
  if (tf_msg_create_session_req_decode(req, &rq, st) != TF_OK) {
    return NULL;
  }
  pthread_mutex_lock(&m->mu);
  bool draining = m->draining;
  pthread_mutex_unlock(&m->mu);
  if (draining) {
    tf_status_set(st, TF_UNAVAILABLE, "the master is shutting down");
    return NULL;
  }
  if (tf__ms_wait_tasks(m, m->spec->registration_timeout_ms, st) != TF_OK) {
    tf_status_prefix(st, "CreateSession");
    return NULL;
  }
  ms_session *s = tf__xcalloc(1, sizeof *s);
  tf__ref_init(&s->refs, 1); /* the table's */
  pthread_mutex_init(&s->mu, NULL);
  tf__strmap_init(&s->cache);
  s->g = tf_graph_new();
  if (rq.has_graph && add_nodes(s->g, rq.graph, rq.graph_len, "CreateSession", st) != TF_OK) {
    tf__ms_session_destroy(s);
    return NULL;
  }
  char key[24];
  pthread_mutex_lock(&m->mu);
  do {
    s->handle = tf__random_u64();
    hkey(s->handle, key);
  } while (tf__strmap_get(&m->sessions, key, NULL) != NULL);
  s->last_used_ns = tf__now_ns();
  tf__strmap_put(&m->sessions, key, s);
  m->n_sessions++;
  pthread_mutex_unlock(&m->mu);
  tf_log(LOG_INFO, "session %s created (%d nodes)", key, tf_graph_num_nodes(s->g));
  tf_msg_create_session_reply b = {.session = s->handle};
  tf_wire_writer *wr = tf__ms_reply_writer(m, req);
  tf_msg_create_session_reply_encode(wr, &b);
  nng_msg *msg = NULL;
  tf_wire_finish(wr, &msg, st);
  return msg;
}

nng_msg *tf__ms_extend_session(tf_master *m, const tf_wire_msg *req, tf_status *st) {
  tf_msg_extend_session_req rq;
  if (tf_msg_extend_session_req_decode(req, &rq, st) != TF_OK) return NULL;
  ms_session *s = tf__ms_session_get(m, req->h.session, st);
  if (s == NULL) return NULL;
  pthread_mutex_lock(&s->mu);
  tf_code rc = add_nodes(s->g, rq.graph, rq.graph_len, "ExtendSession", st);
  pthread_mutex_unlock(&s->mu);
  tf__ms_session_put(m, s);
  return rc == TF_OK ? tf__ms_empty_reply(m, req, st) : NULL;
}

/* Deregisters a closed session's partitions (best effort, not waited). */
static void deregister_all(tf_master *m, ms_session *s) {
  for (size_t i = 0; i < s->cache.cap; i++) {
    ms_prepared *p = s->cache.keys[i] ? s->cache.vals[i] : NULL;
    for (int k = 0; p != NULL && k < p->n_parts; k++) {
      tf_wire_header h = tf__ms_header(m, p->parts[k].task, TF_M_DEREGISTER_GRAPH,
                                       s->handle, 0, m->spec->rpc_timeout_ms);
      tf_wire_writer *wr = tf_wire_writer_new(&h);
      tf_msg_deregister_graph_req b = {.handle = p->parts[k].handle};
      tf_msg_deregister_graph_req_encode(wr, &b);
      nng_msg *msg = NULL;
      tf_wire_msg *reply = NULL;
      tf_status st;
      tf_status_init(&st);
      if (tf_wire_finish(wr, &msg, &st) == TF_OK && tf__ms_task_up(m, p->parts[k].task, NULL)) {
        tf_rpc_call(m->tasks[p->parts[k].task].client, msg, m->spec->rpc_timeout_ms,
                    &reply, &st);
      } else {
        nng_msg_free(msg);
      }
      tf_wire_msg_free(reply);
    }
  }
}

nng_msg *tf__ms_close_session(tf_master *m, const tf_wire_msg *req, tf_status *st) {
  char key[24];
  hkey(req->h.session, key);
  pthread_mutex_lock(&m->mu);
  ms_session *s = tf__strmap_get(&m->sessions, key, NULL);
  if (s != NULL) {
    tf__strmap_del(&m->sessions, key); /* the table's reference is ours */
    m->n_sessions--;
  }
  pthread_mutex_unlock(&m->mu);
  if (s == NULL) {
    tf_status_set(st, TF_ABORTED, "CloseSession: session %s is not known to "
                  "the master at %s", key, m->url);
    return NULL;
  }
  pthread_mutex_lock(&s->mu);
  s->closed = true;
  deregister_all(m, s);
  pthread_mutex_unlock(&s->mu);
  tf_log(LOG_INFO, "session %s closed", key);
  tf__ms_session_put(m, s); /* the table's */
  return tf__ms_empty_reply(m, req, st);
}
