/* rpc_conn.c: the RPC server's connections (NNG pipes). NNG tells the
 * server of every pipe that completed the SP handshake (ADD_PRE) and of
 * every pipe removed (REM_POST); the server keeps a table of at most
 * max_connections of them, each with the number of calls in progress on it
 * and the time it last became idle. A pipe beyond the cap is closed inside
 * its ADD_PRE callback (NNG then never starts it), counted, and reported
 * at most once a second; so is every new pipe once the server is stopping
 * (closing the listener instead would close the pipes it accepted, and
 * with them the replies still to be sent). The idle sweep (rpc.c runs it from an NNG timer)
 * ends pipes without calls that have been idle for idle_ms, a TCP one by
 * shutting its socket down (pipe_shutdown.h): such a pipe has no reply
 * in flight, and nng_pipe_close could hang NNG while a frame arrives. The table is
 * open-addressed by pipe id with linear probing (deletions shift back), at
 * most half full. */
#include <syslog.h>
#include <stdlib.h>

#include <nng/nng.h>

#include "lib/core/base/util.h"
#include "lib/transport/pipe_shutdown.h"
#include "lib/transport/rpc_server.h"

#define REFUSE_LOG_NS 1000000000LL /* at most one refusal line a second */

typedef struct conn {
  uint32_t id;       /* 0: empty */
  int calls;         /* in progress on this pipe */
  bool closing;      /* the sweep closed it; REM_POST not seen yet */
  int64_t idle_ns;   /* when it last became idle (or connected) */
} conn;

struct tf__conns {
  tf_rpc_server *s;
  pthread_mutex_t mu;
  conn *tab;
  size_t mask;       /* capacity - 1 (a power of two >= 2 * max) */
  int n, max;
  int64_t idle_ns_max;
  uint64_t refused, refused_unlogged, idle_closed;
  int64_t refuse_logged_ns;
};

static size_t home(const tf__conns *t, uint32_t id) {
  return (size_t)((id * 0x9E3779B1u) & t->mask);
}

/* Under t->mu: the entry of id, or NULL. */
static conn *find(tf__conns *t, uint32_t id) {
  for (size_t i = home(t, id);; i = (i + 1) & t->mask) {
    if (t->tab[i].id == id) {
      return &t->tab[i];
    }
    if (t->tab[i].id == 0) {
      return NULL;
    }
  }
}

static void insert(tf__conns *t, uint32_t id, int64_t now) {
  size_t i = home(t, id);
  while (t->tab[i].id != 0) {
    i = (i + 1) & t->mask;
  }
  t->tab[i] = (conn){.id = id, .idle_ns = now};
  t->n++;
}

/* Removes e, shifting later entries of its probe run back into place. */
static void erase(tf__conns *t, conn *e) {
  size_t i = (size_t)(e - t->tab);
  size_t j = i;
  for (;;) {
    j = (j + 1) & t->mask;
    if (t->tab[j].id == 0) {
      break;
    }
    size_t k = home(t, t->tab[j].id);
    /* Move j to i unless its home lies cyclically in (i, j]. */
    bool stays = i <= j ? (i < k && k <= j) : (i < k || k <= j);
    if (!stays) {
      t->tab[i] = t->tab[j];
      i = j;
    }
  }
  t->tab[i] = (conn){0};
  t->n--;
}

static void refuse(tf__conns *t, nng_pipe p) {
  int64_t now = tf__now_ns();
  t->refused++;
  t->refused_unlogged++;
  bool log = now - t->refuse_logged_ns >= REFUSE_LOG_NS;
  uint64_t k = t->refused_unlogged;
  if (log) {
    t->refuse_logged_ns = now;
    t->refused_unlogged = 0;
  }
  int open = t->n;
  pthread_mutex_unlock(&t->mu);
  nng_pipe_close(p); /* in ADD_PRE: NNG never starts the pipe */
  if (log) {
    tf__rpc_log(t->s, LOG_WARNING,
                "rpc server %s: refused %llu connection(s): %d open, "
                "max_connections is %d",
                t->s->url, (unsigned long long)k, open, t->max);
  }
}

static void pipe_added(nng_pipe p, nng_pipe_ev ev, void *arg) {
  tf__conns *t = arg;
  uint32_t id = (uint32_t)nng_pipe_id(p);
  if (atomic_load(&t->s->stopping)) {
    nng_pipe_close(p); /* stop refuses new connections, keeps the others */
    return;
  }
  pthread_mutex_lock(&t->mu);
  if (t->n >= t->max) {
    refuse(t, p); /* unlocks */
    return;
  }
  insert(t, id, tf__now_ns());
  pthread_mutex_unlock(&t->mu);
}

static void pipe_removed(nng_pipe p, nng_pipe_ev ev, void *arg) {
  tf__conns *t = arg;
  pthread_mutex_lock(&t->mu);
  conn *e = find(t, (uint32_t)nng_pipe_id(p));
  if (e != NULL) { /* else refused in ADD_PRE */
    erase(t, e);
  }
  pthread_mutex_unlock(&t->mu);
}

tf__conns *tf__conns_new(tf_rpc_server *s, int max, int64_t idle_ms) {
  tf__conns *t = tf__xcalloc(1, sizeof *t);
  t->s = s;
  t->max = max;
  t->idle_ns_max = idle_ms * 1000000;
  size_t cap = 16;
  while (cap < 2 * (size_t)max) {
    cap *= 2;
  }
  t->tab = tf__xcalloc(cap, sizeof *t->tab);
  t->mask = cap - 1;
  t->refuse_logged_ns = tf__now_ns() - REFUSE_LOG_NS;
  pthread_mutex_init(&t->mu, NULL);
  nng_pipe_notify(s->sock, NNG_PIPE_EV_ADD_PRE, pipe_added, t);
  nng_pipe_notify(s->sock, NNG_PIPE_EV_REM_POST, pipe_removed, t);
  return t;
}

void tf__conns_free(tf__conns *t) {
  if (t == NULL) {
    return;
  }
  pthread_mutex_destroy(&t->mu);
  free(t->tab);
  free(t);
}

void tf__conns_call_begin(tf__conns *t, uint32_t pipe) {
  pthread_mutex_lock(&t->mu);
  conn *e = find(t, pipe);
  if (e != NULL) {
    e->calls++;
  }
  pthread_mutex_unlock(&t->mu);
}

void tf__conns_call_end(tf__conns *t, uint32_t pipe) {
  int64_t now = tf__now_ns();
  pthread_mutex_lock(&t->mu);
  conn *e = find(t, pipe);
  if (e != NULL && e->calls > 0) { /* 0: the pipe came back with a reused id */
    e->calls--;
    e->idle_ns = now;
  }
  pthread_mutex_unlock(&t->mu);
}

/* Ends the n pipes ids[]: a TCP one by shutting its socket down (a close
 * while a frame arrives can hang NNG 1.5.2 for good: pipe_shutdown.h),
 * others with nng_pipe_close. REM_POST then removes each. */
static void end_pipes(const uint32_t *ids, int n) {
  if (n == 0) return;
  bool *done = tf__xcalloc((size_t)n + 1, sizeof *done);
  tf__pipes_shutdown(ids, n, done);
  for (int i = 0; i < n; i++) {
    if (!done[i]) {
      nng_pipe p = NNG_PIPE_INITIALIZER;
      p.id = ids[i];
      nng_pipe_close(p);
    }
  }
  free(done);
}

int tf__conns_sweep(tf__conns *t) {
  int64_t now = tf__now_ns();
  pthread_mutex_lock(&t->mu);
  uint32_t *ids = tf__xmalloc((size_t)(t->n + 1) * sizeof *ids);
  int k = 0;
  for (size_t i = 0; i <= t->mask; i++) {
    conn *e = &t->tab[i];
    if (e->id != 0 && e->calls == 0 && !e->closing &&
        now - e->idle_ns >= t->idle_ns_max) {
      e->closing = true;
      ids[k++] = e->id;
    }
  }
  t->idle_closed += (uint64_t)k;
  pthread_mutex_unlock(&t->mu);
  end_pipes(ids, k);
  free(ids);
  return k;
}

void tf__conns_stats(tf__conns *t, tf_rpc_server_stats *out) {
  pthread_mutex_lock(&t->mu);
  out->connections = t->n;
  out->connections_refused = t->refused;
  out->connections_idle_closed = t->idle_closed;
  pthread_mutex_unlock(&t->mu);
}
