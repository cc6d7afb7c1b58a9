/* master_session.c: the master's sessions: CreateSession (at most
 * limits.max_sessions open; it waits only for the first health round, so
 * a task that is down does not block it -- the first step whose graph
 * needs that task fails naming it), ExtendSession (new nodes only),
 * KeepAlive, CloseSession, and expiry: a session that no request
 * refreshed for limits.session_ttl_ms is closed by tf_master_tick. Ending
 * a session aborts its steps in flight and deregisters its partitions on
 * the workers, without waiting and without holding a lock across a call. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/refcount.h"
#include "lib/core/base/util.h"
#include "lib/runtime/log.h"
#include "lib/core/serialize/serialize_util.h"
#include "lib/runtime/master_impl.h"
#include "lib/runtime/op_allow.h"
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
  tf__strmap_each(&s->pins, free);
  tf__strmap_fini(&s->pins);
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
static tf_code add_nodes(const tf_master *m, tf_graph *g, const void *buf, size_t len,
                         const char *what, tf_status *st) {
  tf_op_allow allow = {.spec = m->spec, .partition = false};
  if (tf__graph_from_msgpack_checked(g, buf, len, tf_op_allow_check_defs, &allow, st) !=
      TF_OK) {
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
  int open = m->n_sessions;
  if (!draining && open >= m->spec->max_sessions) m->counters.sessions_refused++;
  pthread_mutex_unlock(&m->mu);
  if (draining) {
    tf_status_set(st, TF_UNAVAILABLE, "CreateSession: the master at %s is "
                  "shutting down", m->url);
    return NULL;
  }
  if (open >= m->spec->max_sessions) {
    tf_status_set(st, TF_RESOURCE_EXHAUSTED, "CreateSession: the master has %d "
                  "sessions open, its cap limits.max_sessions = %d (%s)", open,
                  m->spec->max_sessions, m->spec->path);
    return NULL;
  }
  /* Only the first health round: placement uses the tasks that are up. */
  tf__ms_wait_known(m, m->spec->registration_timeout_ms);
  ms_session *s = tf__xcalloc(1, sizeof *s);
  tf__ref_init(&s->refs, 1); /* the table's */
  pthread_mutex_init(&s->mu, NULL);
  tf__strmap_init(&s->cache);
  tf__strmap_init(&s->pins);
  s->g = tf_graph_new();
  if (rq.has_graph && add_nodes(m, s->g, rq.graph, rq.graph_len, "CreateSession", st) != TF_OK) {
    tf__ms_session_destroy(s);
    return NULL;
  }
  s->graph_bytes = rq.has_graph ? rq.graph_len : 0;
  char key[24];
  pthread_mutex_lock(&m->mu);
  if (m->n_sessions >= m->spec->max_sessions) { /* others got in meanwhile */
    pthread_mutex_unlock(&m->mu);
    tf__ms_session_destroy(s);
    tf_status_set(st, TF_RESOURCE_EXHAUSTED, "CreateSession: the master has %d "
                  "sessions open, its cap limits.max_sessions = %d (%s)",
                  m->spec->max_sessions, m->spec->max_sessions, m->spec->path);
    return NULL;
  }
  do {
    s->handle = tf__random_u64();
    hkey(s->handle, key);
  } while (s->handle == 0 || tf__strmap_get(&m->sessions, key, NULL) != NULL);
  s->last_used_ns = tf__now_ns();
  tf__strmap_put(&m->sessions, key, s);
  m->n_sessions++;
  pthread_mutex_unlock(&m->mu);
  tf_log(LOG_INFO, "session %s created (%d nodes)", key, tf_graph_num_nodes(s->g));
  tf_msg_create_session_reply b = {.session = s->handle,
                                   .session_ttl_ms = m->spec->session_ttl_ms,
                                   .max_message_bytes = m->spec->max_message_bytes};
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
  tf_code rc;
  size_t max = (size_t)m->spec->max_message_bytes;
  if (s->graph_bytes > max || rq.graph_len > max - s->graph_bytes) {
    /* Else repeated ExtendSessions would grow the master without bound. */
    rc = tf_status_set(st, TF_RESOURCE_EXHAUSTED,
                       "ExtendSession: session %016llx's graph would grow to %zu "
                       "bytes, over max_message_mb (%lld bytes, %s): a session's "
                       "graph may be no larger than one message",
                       (unsigned long long)s->handle, s->graph_bytes + rq.graph_len,
                       (long long)m->spec->max_message_bytes, m->spec->path);
  } else {
    rc = add_nodes(m, s->g, rq.graph, rq.graph_len, "ExtendSession", st);
    s->graph_bytes += rc == TF_OK ? rq.graph_len : 0;
  }
  pthread_mutex_unlock(&s->mu);
  tf__ms_session_put(m, s);
  return rc == TF_OK ? tf__ms_empty_reply(m, req, st) : NULL;
}

nng_msg *tf__ms_keep_alive(tf_master *m, const tf_wire_msg *req, tf_status *st) {
  ms_session *s = tf__ms_session_get(m, req->h.session, st); /* refreshes it */
  if (s == NULL) return NULL;
  tf__ms_session_put(m, s);
  return tf__ms_empty_reply(m, req, st);
}

void tf__ms_session_end(tf_master *m, ms_session *s, const char *why) {
  pthread_mutex_lock(&s->mu);
  s->closed = true; /* no entry is added after this */
  ms_prepared **ps = tf__xcalloc(s->cache.cap + 1, sizeof *ps);
  int n = 0;
  for (size_t i = 0; i < s->cache.cap; i++) {
    if (s->cache.keys[i] != NULL) ps[n++] = s->cache.vals[i];
  }
  pthread_mutex_unlock(&s->mu);
  tf__ms_abort_steps(m, -1, s->handle, TF_ABORTED, why);
  /* The entries live as long as s (the table's reference, dropped last). */
  for (int k = 0; k < n; k++) tf__ms_deregister(m, s->handle, ps[k]);
  free(ps);
  tf__ms_session_put(m, s); /* the table's */
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
  char why[160];
  snprintf(why, sizeof why, "session %s was closed while the step ran", key);
  tf__ms_session_end(m, s, why);
  tf_log(LOG_INFO, "session %s closed", key);
  return tf__ms_empty_reply(m, req, st);
}

void tf__ms_expire_sessions(tf_master *m) {
  int64_t now = tf__now_ns(), ttl = m->spec->session_ttl_ms * 1000000;
  pthread_mutex_lock(&m->mu);
  ms_session **gone = tf__xcalloc((size_t)m->n_sessions + 1, sizeof *gone);
  int n = 0;
  for (size_t i = 0; i < m->sessions.cap; i++) {
    ms_session *s = m->sessions.keys[i] ? m->sessions.vals[i] : NULL;
    if (s != NULL && now - s->last_used_ns > ttl) gone[n++] = s;
  }
  for (int k = 0; k < n; k++) {
    char key[24];
    hkey(gone[k]->handle, key);
    tf__strmap_del(&m->sessions, key);
    m->n_sessions--;
    m->counters.sessions_expired++;
  }
  pthread_mutex_unlock(&m->mu);
  for (int k = 0; k < n; k++) {
    char why[200];
    snprintf(why, sizeof why, "session %016" PRIx64 " expired: no request or "
             "KeepAlive for limits.session_ttl_ms = %" PRId64 " ms",
             gone[k]->handle, m->spec->session_ttl_ms);
    tf_log(LOG_WARNING, "%s; aborting its steps and deregistering its graphs", why);
    tf__ms_session_end(m, gone[k], why);
  }
  free(gone);
}
