/* rendezvous_mgr.c: a task's per-step rendezvous tables
 * (rendezvous_mgr.h).
 *
 * One mutex per manager guards the step map, every table and the byte
 * count. A table maps a key to a buffered value (a tensor reference and
 * its dead flag) or to one waiting receiver. Callbacks (receivers' done,
 * senders' done, the remote hook) always run without the lock. A waiter is
 * registered with the step's tf_cancel before it enters the table and is
 * reference counted (the table side and the cancel registration each hold
 * one), so whoever completes it first (a send, an abort, the cancel
 * callback) may race with the others safely. */
#include "lib/rendezvous/rendezvous_mgr.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/refcount.h"
#include "lib/core/base/strmap.h"
#include "lib/core/base/util.h"

typedef struct waiter {
  tf_rdv_recv_done done;
  void *arg;
  tf_cancel *cancel;
  uint64_t token;
  struct rdv_table *table;
  char *key;
  tf__refcount refs; /* the table side's and the cancel registration's */
  bool in_table;  /* under the manager's lock */
  bool completed; /* taken out of the table by someone */
} waiter;

/* One key's entry: a buffered value (w == NULL) or a waiter. */
typedef struct item {
  tf_tensor *t;
  bool dead;
  bool pushed; /* delivered from another task: counted in pushed bytes */
  waiter *w;
} item;

typedef struct rdv_table {
  tf_rendezvous base; /* first: a tf_rendezvous * is a table */
  tf_rdv_mgr *m;
  uint64_t step_id;
  tf__refcount refs;  /* the map's, one per tf_rdv_mgr_step and one per
                         waiter; changed only under the manager's lock */
  tf_status why;      /* code != OK once aborted */
  int64_t last_ns;
  tf__strmap items;
} rdv_table;

/* A step's entry in the map: a live table or a tombstone. */
typedef struct step_ent {
  uint64_t id;
  rdv_table *t;       /* NULL: tombstone */
  int64_t tomb_ns;
  struct step_ent *next;
} step_ent;

struct tf_rdv_mgr {
  pthread_mutex_t mu;
  tf__refcount refs;  /* the owner's and one per table alive */
  char *prefix;       /* task prefix + "/device:" */
  int64_t ttl_ns;
  tf_rdv_remote_send_fn remote;
  void *remote_arg;
  step_ent **buckets;
  size_t n_buckets, n_ents;
  int live;
  int64_t bytes;
  int64_t pushed;      /* the part of bytes delivered from other tasks */
  int64_t max_pushed;  /* 0: no limit */
};

/* A waiter completed outside the lock. */
typedef struct wake {
  waiter *w;
  tf_status st;
  tf_tensor *t;
  bool dead;
} wake;

static void mgr_release(void *arg) {
  tf_rdv_mgr *m = arg;
  pthread_mutex_destroy(&m->mu);
  free(m->buckets);
  free(m->prefix);
  free(m);
}

static void mgr_unref(tf_rdv_mgr *m) { tf__ref_put(&m->refs, mgr_release, m); }

static bool table_unref_locked(struct rdv_table *t);

/* Frees a waiter and drops its table reference (never under the lock). */
static void waiter_release(void *arg) {
  waiter *w = arg;
  tf_rdv_mgr *m = w->table->m;
  pthread_mutex_lock(&m->mu);
  bool lost = table_unref_locked(w->table);
  pthread_mutex_unlock(&m->mu);
  if (lost) mgr_unref(m);
  free(w->key);
  free(w);
}

static void waiter_unref(waiter *w) {
  tf__ref_put(&w->refs, waiter_release, w);
}

/* ---- waking waiters ------------------------------------------------------- */

/* Ends w's cancel registration (outside the lock), then calls its done. */
static void wake_run(wake *k) {
  waiter *w = k->w;
  if (w->token != 0 && tf_cancel_deregister(w->cancel, w->token)) {
    waiter_unref(w); /* the callback will never run: drop its reference */
  }
  w->done(w->arg, &k->st, k->t, k->dead);
  waiter_unref(w);
}

static void wake_all(wake *v, int n) {
  for (int i = 0; i < n; i++) wake_run(&v[i]);
  free(v);
}

static size_t tensor_bytes(const tf_tensor *t) { return t ? t->nbytes : 0; }

/* Aborts t with why (the first reason wins) and empties it: values are
 * dropped, waiters returned in *out to wake after unlocking. Under the
 * lock. */
static int abort_locked(rdv_table *t, const tf_status *why, wake **out) {
  if (t->why.code == TF_OK) t->why = *why;
  wake *v = tf__xcalloc(t->items.n + 1, sizeof *v);
  int n = 0;
  for (size_t i = 0; i < t->items.cap; i++) {
    if (t->items.keys[i] == NULL) continue;
    item *it = t->items.vals[i];
    if (it->w != NULL) {
      it->w->in_table = false;
      it->w->completed = true;
      v[n++] = (wake){it->w, t->why, NULL, false};
    } else {
      t->m->bytes -= (int64_t)tensor_bytes(it->t);
      if (it->pushed) t->m->pushed -= (int64_t)tensor_bytes(it->t);
      tf_tensor_unref(it->t);
    }
    free(it);
  }
  tf__strmap_fini(&t->items);
  tf__strmap_init(&t->items);
  *out = v;
  return n;
}

/* ---- the step map ---------------------------------------------------------- */

static step_ent **bucket_of(tf_rdv_mgr *m, uint64_t id) {
  uint64_t h = id * 0x9e3779b97f4a7c15ull;
  return &m->buckets[(h >> 32) & (m->n_buckets - 1)];
}

static step_ent *find_ent(tf_rdv_mgr *m, uint64_t id) {
  for (step_ent *e = *bucket_of(m, id); e != NULL; e = e->next) {
    if (e->id == id) return e;
  }
  return NULL;
}

static void grow(tf_rdv_mgr *m) {
  size_t old_n = m->n_buckets;
  step_ent **old = m->buckets;
  m->n_buckets *= 2;
  m->buckets = tf__xcalloc(m->n_buckets, sizeof *m->buckets);
  for (size_t i = 0; i < old_n; i++) {
    for (step_ent *e = old[i], *next; e != NULL; e = next) {
      next = e->next;
      step_ent **b = bucket_of(m, e->id);
      e->next = *b;
      *b = e;
    }
  }
  free(old);
}

static void remove_ent(tf_rdv_mgr *m, step_ent *ent) {
  for (step_ent **p = bucket_of(m, ent->id); *p != NULL; p = &(*p)->next) {
    if (*p == ent) {
      *p = ent->next;
      m->n_ents--;
      free(ent);
      return;
    }
  }
}

static void table_send(tf_rendezvous *r, const char *key, tf_tensor *t,
                       bool is_dead, tf_rdv_send_done done, void *arg);
static void table_recv(tf_rendezvous *r, const char *key, tf_cancel *cancel,
                       tf_rdv_recv_done done, void *arg);

static rdv_table *table_new(tf_rdv_mgr *m, uint64_t id) {
  rdv_table *t = tf__xcalloc(1, sizeof *t);
  t->base.send = table_send;
  t->base.recv = table_recv;
  t->m = m;
  t->step_id = id;
  tf__ref_init(&t->refs, 1);
  tf_status_init(&t->why);
  t->last_ns = tf__now_ns();
  tf__strmap_init(&t->items);
  tf__ref_get(&m->refs);
  if (m->n_ents + 1 > 2 * m->n_buckets) grow(m);
  step_ent *e = tf__xcalloc(1, sizeof *e);
  e->id = id;
  e->t = t;
  step_ent **b = bucket_of(m, id);
  e->next = *b;
  *b = e;
  m->n_ents++;
  m->live++;
  return t;
}

/* Drops one table reference; the last frees it. Under the lock; returns
 * whether the manager lost a reference (to drop after unlocking). */
static bool table_unref_locked(rdv_table *t) {
  if (!tf__ref_drop(&t->refs)) return false;
  tf_status st = {TF_CANCELLED, "released"};
  wake *v = NULL;
  int n = abort_locked(t, &st, &v);
  TF_ASSERT(n == 0); /* each waiter holds a table reference */
  free(v);
  tf__strmap_fini(&t->items);
  free(t);
  return true;
}

/* The entry's table becomes a tombstone (the map's reference dropped). */
static bool tombstone_locked(tf_rdv_mgr *m, step_ent *e, int64_t now) {
  rdv_table *t = e->t;
  e->t = NULL;
  e->tomb_ns = now;
  m->live--;
  return table_unref_locked(t);
}

tf_rdv_mgr *tf_rdv_mgr_new(const char *task_prefix, int64_t ttl_ms,
                           tf_rdv_remote_send_fn remote, void *remote_arg) {
  tf_rdv_mgr *m = tf__xcalloc(1, sizeof *m);
  pthread_mutex_init(&m->mu, NULL);
  tf__ref_init(&m->refs, 1);
  m->prefix = tf__xasprintf("%s/device:", task_prefix ? task_prefix : "");
  m->ttl_ns = (ttl_ms > 0 ? ttl_ms : 1) * 1000000LL;
  m->remote = remote;
  m->remote_arg = remote_arg;
  m->n_buckets = 16;
  m->buckets = tf__xcalloc(m->n_buckets, sizeof *m->buckets);
  return m;
}

void tf_rdv_mgr_free(tf_rdv_mgr *m) {
  if (m == NULL) return;
  tf_status why = {TF_CANCELLED, "rendezvous manager shut down"};
  wake *all = NULL;
  int n_all = 0, lost = 0;
  pthread_mutex_lock(&m->mu);
  for (size_t i = 0; i < m->n_buckets; i++) {
    for (step_ent *e = m->buckets[i], *next; e != NULL; e = next) {
      next = e->next;
      if (e->t != NULL) {
        wake *v = NULL;
        int n = abort_locked(e->t, &why, &v);
        all = tf__xrealloc(all, (size_t)(n_all + n + 1) * sizeof *all);
        memcpy(all + n_all, v, (size_t)n * sizeof *v);
        n_all += n;
        free(v);
        lost += tombstone_locked(m, e, 0);
      }
      free(e);
    }
    m->buckets[i] = NULL;
  }
  m->n_ents = 0;
  pthread_mutex_unlock(&m->mu);
  wake_all(all, n_all);
  for (int i = 0; i < lost; i++) mgr_unref(m);
  mgr_unref(m);
}

tf_rendezvous *tf_rdv_mgr_step(tf_rdv_mgr *m, uint64_t step_id, tf_status *st) {
  pthread_mutex_lock(&m->mu);
  step_ent *e = find_ent(m, step_id);
  if (e != NULL && e->t == NULL) {
    pthread_mutex_unlock(&m->mu);
    tf_status_set(st, TF_ABORTED, "step %" PRIu64 " was already cleaned up or "
                  "aborted", step_id);
    return NULL;
  }
  rdv_table *t = e != NULL ? e->t : table_new(m, step_id);
  tf__ref_get(&t->refs);
  t->last_ns = tf__now_ns();
  pthread_mutex_unlock(&m->mu);
  return &t->base;
}

void tf_rdv_step_unref(tf_rendezvous *r) {
  if (r == NULL) return;
  rdv_table *t = (rdv_table *)r;
  tf_rdv_mgr *m = t->m;
  pthread_mutex_lock(&m->mu);
  t->last_ns = tf__now_ns(); /* the TTL counts from the last user */
  bool lost = table_unref_locked(t);
  pthread_mutex_unlock(&m->mu);
  if (lost) mgr_unref(m);
}

/* ---- values and waiters ----------------------------------------------------- */

/* Puts a value under key in t, or hands it to the waiting receiver (*k
 * then holds the wake to run after unlocking, k->w != NULL). Under the
 * lock; the error goes to st. */
static tf_code put_locked(rdv_table *t, const char *key, tf_tensor *v,
                          bool dead, bool pushed, wake *k, tf_status *st) {
  k->w = NULL;
  if (t->why.code != TF_OK) {
    *st = t->why;
    return st->code;
  }
  t->last_ns = tf__now_ns();
  item *it = tf__strmap_get(&t->items, key, NULL);
  if (it != NULL && it->w == NULL) {
    return tf_status_set(st, TF_INTERNAL, "duplicate send of key '%s' in step "
                         "%" PRIu64, key, t->step_id);
  }
  tf_tensor *ref = dead || v == NULL ? NULL : tf_tensor_ref(v);
  if (it != NULL) {
    tf__strmap_del(&t->items, key);
    it->w->in_table = false;
    it->w->completed = true;
    *k = (wake){it->w, {TF_OK, ""}, ref, dead};
    free(it);
    return TF_OK;
  }
  tf_rdv_mgr *m = t->m;
  int64_t nb = (int64_t)tensor_bytes(ref);
  if (pushed && m->max_pushed > 0 && m->pushed + nb > m->max_pushed) {
    tf_tensor_unref(ref);
    return tf_status_set(st, TF_RESOURCE_EXHAUSTED, "key '%s' (%lld bytes) "
                         "for step %" PRIu64 " refused: pushed tensors not "
                         "yet received hold %lld bytes, the limit is %lld "
                         "bytes", key, (long long)nb, t->step_id,
                         (long long)m->pushed, (long long)m->max_pushed);
  }
  it = tf__xcalloc(1, sizeof *it);
  it->t = ref;
  it->dead = dead;
  it->pushed = pushed;
  tf__strmap_put(&t->items, key, it);
  m->bytes += nb;
  if (pushed) m->pushed += nb;
  return TF_OK;
}

static bool is_local(const tf_rdv_mgr *m, const char *dst) {
  return strncmp(dst, m->prefix, strlen(m->prefix)) == 0;
}

static void table_send(tf_rendezvous *r, const char *key, tf_tensor *v,
                       bool is_dead, tf_rdv_send_done done, void *arg) {
  rdv_table *t = (rdv_table *)r;
  tf_rdv_mgr *m = t->m;
  tf_status st;
  tf_status_init(&st);
  tf_rdv_key k;
  if (tf_rdv_key_parse(key, &k, &st) != TF_OK) {
    done(arg, &st);
    return;
  }
  if (!is_local(m, k.dst_device)) {
    pthread_mutex_lock(&m->mu);
    st = t->why;
    t->last_ns = tf__now_ns();
    pthread_mutex_unlock(&m->mu);
    if (st.code == TF_OK && m->remote == NULL) {
      tf_status_set(&st, TF_UNIMPLEMENTED, "cannot send key '%s': its "
                    "destination '%s' is on another task and this rendezvous "
                    "has no remote path", key, k.dst_device);
    }
    if (st.code != TF_OK) {
      done(arg, &st);
    } else {
      m->remote(m->remote_arg, t->step_id, key, &k, is_dead ? NULL : v, is_dead,
                done, arg);
    }
    tf_rdv_key_fini(&k);
    return;
  }
  tf_rdv_key_fini(&k);
  wake w;
  pthread_mutex_lock(&m->mu);
  put_locked(t, key, v, is_dead, false, &w, &st);
  pthread_mutex_unlock(&m->mu);
  if (w.w != NULL) wake_run(&w);
  done(arg, &st);
}

/* The cancel callback of a waiter: fails it unless someone completed it
 * first. Before the waiter is in the table, marking it completed tells
 * table_recv to fail it. */
static void waiter_cancelled(void *arg) {
  waiter *w = arg;
  tf_rdv_mgr *m = w->table->m;
  bool mine = false;
  pthread_mutex_lock(&m->mu);
  if (!w->completed) {
    w->completed = true;
    if (w->in_table) {
      item *it = tf__strmap_get(&w->table->items, w->key, NULL);
      TF_ASSERT(it != NULL && it->w == w);
      tf__strmap_del(&w->table->items, w->key);
      free(it);
      w->in_table = false;
      mine = true;
    }
  }
  pthread_mutex_unlock(&m->mu);
  if (mine) {
    tf_status st;
    tf_cancel_reason(w->cancel, &st);
    w->done(w->arg, &st, NULL, false);
    waiter_unref(w); /* the table side */
  }
  waiter_unref(w); /* the registration */
}

/* Under the lock: the value of key for w, a failure, or (false) w waits
 * in the table. */
static bool take_locked(rdv_table *t, const char *key, waiter *w, wake *k) {
  *k = (wake){w, {TF_OK, ""}, NULL, false};
  t->last_ns = tf__now_ns();
  if (w->completed) { /* cancelled before it got here */
    tf_cancel_reason(w->cancel, &k->st);
    return true;
  }
  w->completed = true;
  if (t->why.code != TF_OK) {
    k->st = t->why;
    return true;
  }
  item *it = tf__strmap_get(&t->items, key, NULL);
  if (it != NULL && it->w != NULL) {
    tf_status_set(&k->st, TF_INTERNAL, "duplicate recv of key '%s' in step "
                  "%" PRIu64, key, t->step_id);
    return true;
  }
  if (it != NULL) {
    tf__strmap_del(&t->items, key);
    t->m->bytes -= (int64_t)tensor_bytes(it->t);
    if (it->pushed) t->m->pushed -= (int64_t)tensor_bytes(it->t);
    k->t = it->t;
    k->dead = it->dead;
    free(it);
    return true;
  }
  w->completed = false;
  w->in_table = true;
  it = tf__xcalloc(1, sizeof *it);
  it->w = w;
  tf__strmap_put(&t->items, key, it);
  return false;
}

static void table_recv(tf_rendezvous *r, const char *key, tf_cancel *cancel,
                       tf_rdv_recv_done done, void *arg) {
  rdv_table *t = (rdv_table *)r;
  tf_rdv_mgr *m = t->m;
  waiter *w = tf__xcalloc(1, sizeof *w);
  *w = (waiter){.done = done, .arg = arg, .cancel = cancel, .table = t,
                .key = tf__xstrdup(key)};
  tf__ref_init(&w->refs, cancel != NULL ? 2 : 1);
  if (cancel != NULL) {
    w->token = tf_cancel_register(cancel, waiter_cancelled, w);
    if (w->token == 0) { /* already cancelled */
      tf_status st;
      tf_cancel_reason(cancel, &st);
      free(w->key);
      free(w);
      done(arg, &st, NULL, false);
      return;
    }
  }
  wake k;
  pthread_mutex_lock(&m->mu);
  tf__ref_get(&t->refs); /* the waiter's, dropped by waiter_release */
  bool finished = take_locked(t, key, w, &k);
  pthread_mutex_unlock(&m->mu);
  if (finished) wake_run(&k);
}

/* ---- manager operations ----------------------------------------------------- */

tf_code tf_rdv_mgr_deliver(tf_rdv_mgr *m, uint64_t step_id, const char *key,
                           tf_tensor *t, bool is_dead, tf_status *st) {
  tf_rdv_key k;
  TF_TRY(tf_rdv_key_parse(key, &k, st));
  bool local = is_local(m, k.dst_device);
  tf_rdv_key_fini(&k);
  if (!local) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "rendezvous key '%s': its "
                         "destination is not on this task (%.*s)", key,
                         (int)(strlen(m->prefix) - strlen("/device:")), m->prefix);
  }
  wake w = {NULL};
  tf_code rc = TF_OK;
  pthread_mutex_lock(&m->mu);
  step_ent *e = find_ent(m, step_id);
  if (e != NULL && e->t == NULL) {
    rc = tf_status_set(st, TF_ABORTED, "step %" PRIu64 " was already cleaned "
                       "up or aborted", step_id);
  } else {
    rdv_table *tb = e != NULL ? e->t : table_new(m, step_id);
    rc = put_locked(tb, key, t, is_dead, true, &w, st);
    if (rc != TF_OK && tb->why.code != TF_OK) {
      rc = tf_status_set(st, TF_ABORTED, "step %" PRIu64 " was aborted: %s",
                         step_id, tb->why.msg);
    }
  }
  pthread_mutex_unlock(&m->mu);
  if (w.w != NULL) wake_run(&w);
  return rc;
}

void tf_rdv_mgr_abort(tf_rdv_mgr *m, uint64_t step_id, const tf_status *why) {
  tf_status reason = *why;
  if (reason.code == TF_OK) reason.code = TF_ABORTED;
  wake *v = NULL;
  int n = 0;
  pthread_mutex_lock(&m->mu);
  step_ent *e = find_ent(m, step_id);
  if (e == NULL || e->t != NULL) {
    rdv_table *t = e != NULL ? e->t : table_new(m, step_id);
    n = abort_locked(t, &reason, &v);
  }
  pthread_mutex_unlock(&m->mu);
  wake_all(v, n);
}

void tf_rdv_mgr_cleanup(tf_rdv_mgr *m, uint64_t step_id) {
  tf_status why;
  tf_status_set(&why, TF_CANCELLED, "step %" PRIu64 " cleaned up", step_id);
  wake *v = NULL;
  int n = 0;
  bool lost = false;
  pthread_mutex_lock(&m->mu);
  int64_t now = tf__now_ns();
  step_ent *e = find_ent(m, step_id);
  if (e == NULL) {
    e = tf__xcalloc(1, sizeof *e);
    e->id = step_id;
    e->tomb_ns = now;
    if (m->n_ents + 1 > 2 * m->n_buckets) grow(m);
    step_ent **b = bucket_of(m, step_id);
    e->next = *b;
    *b = e;
    m->n_ents++;
  } else if (e->t != NULL) {
    n = abort_locked(e->t, &why, &v);
    lost = tombstone_locked(m, e, now);
  }
  pthread_mutex_unlock(&m->mu);
  wake_all(v, n);
  if (lost) mgr_unref(m);
}

void tf_rdv_mgr_forget(tf_rdv_mgr *m, uint64_t step_id) {
  tf_status why;
  tf_status_set(&why, TF_CANCELLED, "step %" PRIu64 " ended", step_id);
  wake *v = NULL;
  int n = 0;
  bool lost = false;
  pthread_mutex_lock(&m->mu);
  step_ent *e = find_ent(m, step_id);
  if (e != NULL) {
    if (e->t != NULL) {
      n = abort_locked(e->t, &why, &v);
      lost = tombstone_locked(m, e, 0);
    }
    remove_ent(m, e);
  }
  pthread_mutex_unlock(&m->mu);
  wake_all(v, n);
  if (lost) mgr_unref(m);
}

int tf_rdv_mgr_sweep(tf_rdv_mgr *m, int64_t now_ns) {
  wake *all = NULL;
  int n_all = 0, expired = 0, lost = 0;
  pthread_mutex_lock(&m->mu);
  for (size_t i = 0; i < m->n_buckets; i++) {
    for (step_ent *e = m->buckets[i], *next; e != NULL; e = next) {
      next = e->next;
      if (e->t == NULL) {
        if (now_ns - e->tomb_ns > m->ttl_ns) remove_ent(m, e);
        continue;
      }
      /* Only orphans expire: a table a RunGraph or a waiting _Recv still
       * holds (refs beyond the map's) belongs to a running step, which its
       * deadline and the master's health checks bound. */
      if (tf__ref_count(&e->t->refs) > 1 ||
          now_ns - e->t->last_ns <= m->ttl_ns) {
        continue;
      }
      tf_status why;
      tf_status_set(&why, TF_ABORTED, "step %" PRIu64 ": rendezvous table "
                    "expired after %lld ms without activity", e->id,
                    (long long)(m->ttl_ns / 1000000));
      wake *v = NULL;
      int n = abort_locked(e->t, &why, &v);
      all = tf__xrealloc(all, (size_t)(n_all + n + 1) * sizeof *all);
      memcpy(all + n_all, v, (size_t)n * sizeof *v);
      n_all += n;
      free(v);
      lost += tombstone_locked(m, e, now_ns);
      expired++;
    }
  }
  pthread_mutex_unlock(&m->mu);
  wake_all(all, n_all);
  for (int i = 0; i < lost; i++) mgr_unref(m);
  return expired;
}

int tf_rdv_mgr_live_steps(tf_rdv_mgr *m) {
  pthread_mutex_lock(&m->mu);
  int n = m->live;
  pthread_mutex_unlock(&m->mu);
  return n;
}

int64_t tf_rdv_mgr_buffered_bytes(tf_rdv_mgr *m) {
  pthread_mutex_lock(&m->mu);
  int64_t n = m->bytes;
  pthread_mutex_unlock(&m->mu);
  return n;
}

void tf_rdv_mgr_set_max_pushed(tf_rdv_mgr *m, int64_t max_bytes) {
  pthread_mutex_lock(&m->mu);
  m->max_pushed = max_bytes > 0 ? max_bytes : 0;
  pthread_mutex_unlock(&m->mu);
}

int64_t tf_rdv_mgr_pushed_bytes(tf_rdv_mgr *m) {
  pthread_mutex_lock(&m->mu);
  int64_t n = m->pushed;
  pthread_mutex_unlock(&m->mu);
  return n;
}
