/* rpc_auth.c: the RPC server's side of authentication (auth.h): checking
 * and stripping a request's auth prefix before anything else reads it,
 * roles per method, signing replies, and refusals counted in metrics and
 * logged at most once per peer every LOG_PERIOD_MS. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "lib/core/base/util.h"
#include "lib/transport/rpc_server.h"

#define LOG_PEERS 64
#define LOG_PERIOD_MS 10000

typedef struct auth_log_peer {
  char host[64];
  int64_t last_ns;     /* 0: never logged */
  uint64_t suppressed; /* refusals since the last line */
} auth_log_peer;

struct tf__auth_log {
  pthread_mutex_t mu;
  auth_log_peer peers[LOG_PEERS];
  int next; /* round robin replacement */
};

void tf__rpc_auth_log_free(struct tf__auth_log *l) {
  if (l != NULL) {
    pthread_mutex_destroy(&l->mu);
    free(l);
  }
}

static struct tf__auth_log *log_of(tf_rpc_server *s) {
  pthread_mutex_lock(&s->mu);
  if (s->auth_log == NULL) {
    s->auth_log = tf__xcalloc(1, sizeof *s->auth_log);
    pthread_mutex_init(&s->auth_log->mu, NULL);
  }
  struct tf__auth_log *l = s->auth_log;
  pthread_mutex_unlock(&s->mu);
  return l;
}

/* Logs the refusal of a request from host unless that peer was logged
 * within LOG_PERIOD_MS; then the line counts the refusals in between. */
static void log_refusal(tf_rpc_server *s, const char *host, const tf_status *st) {
  struct tf__auth_log *l = log_of(s);
  int64_t now = tf__now_ns();
  pthread_mutex_lock(&l->mu);
  auth_log_peer *p = NULL;
  for (int i = 0; i < LOG_PEERS && p == NULL; i++) {
    if (l->peers[i].last_ns != 0 && strcmp(l->peers[i].host, host) == 0) {
      p = &l->peers[i];
    }
  }
  uint64_t more = 0;
  bool say = p == NULL || now - p->last_ns >= (int64_t)LOG_PERIOD_MS * 1000000;
  if (p == NULL) {
    p = &l->peers[l->next];
    l->next = (l->next + 1) % LOG_PEERS;
    snprintf(p->host, sizeof p->host, "%s", host);
    p->suppressed = 0;
  }
  if (say) {
    more = p->suppressed;
    p->suppressed = 0;
    p->last_ns = now;
  } else {
    p->suppressed++;
  }
  pthread_mutex_unlock(&l->mu);
  if (say) {
    char since[128] = "";
    if (more > 0) {
      snprintf(since, sizeof since, " (and %llu more from it since the last such line)",
               (unsigned long long)more);
    }
    tf__rpc_log(s, LOG_WARNING,
                "rpc server %s: refused a request from %s: %s%s; at most one such line "
                "per peer every %d s",
                s->url, host, st->msg, since, LOG_PERIOD_MS / 1000);
  }
}

/* Counts one refusal; role: a role not allowed the method. */
static void count_refusal(tf_auth_failure why, bool role) {
  tf_auth_count_refusal(role ? "role" : tf_auth_failure_label(why));
}

bool tf__rpc_auth_admit(tf__rpc_call *c, const char *host, tf_status *st) {
  tf_rpc_server *s = c->s;
  c->auth.key = -1;
  c->auth.role = TF_AUTH_ROLE_NONE;
  if (s->auth == NULL) {
    return true;
  }
  const uint8_t *buf = nng_msg_body(c->in);
  size_t len = nng_msg_len(c->in);
  tf_auth_failure why = tf_auth_verify_request(s->auth, buf, len, &c->auth, st);
  if (why != TF_AUTH_OK) {
    atomic_fetch_add(&s->auth_refused, 1);
    count_refusal(why, false);
    log_refusal(s, host, st);
    tf_status_prefix(st, "%s refused the request", s->url);
    return false;
  }
  nng_msg_trim(c->in, TF_AUTH_PREFIX_BYTES);
  return true;
}

tf_code tf__rpc_auth_check_role(const tf__rpc_call *c, int method, tf_status *st) {
  tf_rpc_server *s = c->s;
  if (s->auth == NULL) {
    return TF_OK;
  }
  tf_auth_role need = tf_auth_method_role(method, s->auth_master);
  if (c->auth.role >= need) {
    return TF_OK;
  }
  atomic_fetch_add(&s->auth_refused, 1);
  count_refusal(TF_AUTH_OK, true);
  return tf_status_set(st, TF_PERMISSION_DENIED,
                       "%s to %s needs a %s key; the request was signed with a %s key",
                       tf_method_name(method), s->url, tf_auth_role_name(need),
                       tf_auth_role_name(c->auth.role));
}

void tf__rpc_auth_sign_reply(const tf__rpc_call *c, nng_msg *m) {
  if (c->s->auth == NULL || c->auth.key < 0) {
    return;
  }
  uint8_t prefix[TF_AUTH_PREFIX_BYTES];
  tf_auth_sign(c->s->auth, c->auth.key, c->auth.nonce, nng_msg_body(m), nng_msg_len(m),
               prefix, NULL);
  TF_ASSERT(nng_msg_insert(m, prefix, sizeof prefix) == 0);
}
