/* resource.c: refcounted resources, containers and the per-session manager
 * (whitepaper §4.7). The manager maps container names to containers and a
 * container maps resource names to resources, each holding one reference.
 * One mutex guards both maps; type->shutdown callbacks always run after it
 * is released, because a queue's shutdown completes waiting kernels, whose
 * continuations may look resources up again. A container remembers its
 * resources in creation order, and shutdowns run in that order. */
#include "lib/core/framework/resource.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/strmap.h"
#include "lib/core/base/util.h"

typedef struct rcontainer {
  tf__strmap by_name;  /* name -> tf_resource* (the container's reference) */
  tf_resource **order; /* the same resources in creation order */
  int n, cap;
} rcontainer;

struct tf_resource_mgr {
  pthread_mutex_t mu;
  tf__strmap containers; /* container name -> container* */
  char **names;          /* container names in creation order */
  int n_names, cap_names;
};

/* ---- resources ----------------------------------------------------------- */

void tf_resource_init(tf_resource *r, const tf_resource_type *type,
                      const char *container, const char *name) {
  r->type = type;
  tf__ref_init(&r->refs, 1);
  r->container = tf__xstrdup(container ? container : "");
  r->name = tf__xstrdup(name ? name : "");
}

void tf_resource_fini(tf_resource *r) {
  free(r->container);
  free(r->name);
  r->container = r->name = NULL;
}

tf_resource *tf_resource_ref(tf_resource *r) {
  if (r != NULL) {
    tf__ref_get(&r->refs);
  }
  return r;
}

static void resource_release(void *r) {
  ((tf_resource *)r)->type->free(r);
}

void tf_resource_unref(tf_resource *r) {
  if (r != NULL) {
    tf__ref_put(&r->refs, resource_release, r);
  }
}

/* ---- containers ---------------------------------------------------------- */

static const char *canon(const char *c) {
  return (c == NULL || *c == '\0') ? TF_DEFAULT_CONTAINER : c;
}

static void container_add(rcontainer *c, const char *name, tf_resource *r) {
  if (c->n == c->cap) {
    c->cap = c->cap ? c->cap * 2 : 8;
    c->order = tf__xrealloc(c->order, (size_t)c->cap * sizeof *c->order);
  }
  c->order[c->n++] = r;
  tf__strmap_put(&c->by_name, name, r);
}

/* Frees the container's maps; the references in order[] go to the caller. */
static tf_resource **container_release(rcontainer *c, int *n) {
  tf_resource **order = c->order;
  *n = c->n;
  tf__strmap_fini(&c->by_name);
  free(c);
  return order;
}

/* Runs every shutdown (no lock held), then drops the references. */
static void shutdown_and_drop(tf_resource **rs, int n, bool drop) {
  for (int i = 0; i < n; i++) {
    if (rs[i]->type->shutdown != NULL) {
      rs[i]->type->shutdown(rs[i]);
    }
  }
  for (int i = 0; drop && i < n; i++) {
    tf_resource_unref(rs[i]);
  }
}

/* The container named c (canonical), created when create is set; NULL when
 * absent. Called with m->mu held. */
static rcontainer *find_container(tf_resource_mgr *m, const char *c,
                                  bool create) {
  rcontainer *ct = tf__strmap_get(&m->containers, c, NULL);
  if (ct != NULL || !create) {
    return ct;
  }
  ct = tf__xcalloc(1, sizeof *ct);
  tf__strmap_init(&ct->by_name);
  tf__strmap_put(&m->containers, c, ct);
  if (m->n_names == m->cap_names) {
    m->cap_names = m->cap_names ? m->cap_names * 2 : 4;
    m->names = tf__xrealloc(m->names, (size_t)m->cap_names * sizeof *m->names);
  }
  m->names[m->n_names++] = tf__xstrdup(c);
  return ct;
}

/* Removes container c from the manager; returns it (NULL when absent).
 * Called with m->mu held. */
static rcontainer *take_container(tf_resource_mgr *m, const char *c) {
  rcontainer *ct = tf__strmap_get(&m->containers, c, NULL);
  if (ct == NULL) {
    return NULL;
  }
  tf__strmap_del(&m->containers, c);
  for (int i = 0; i < m->n_names; i++) {
    if (strcmp(m->names[i], c) == 0) {
      free(m->names[i]);
      memmove(&m->names[i], &m->names[i + 1],
              (size_t)(m->n_names - i - 1) * sizeof *m->names);
      m->n_names--;
      break;
    }
  }
  return ct;
}

/* ---- the manager --------------------------------------------------------- */

tf_resource_mgr *tf_resource_mgr_new(void) {
  tf_resource_mgr *m = tf__xcalloc(1, sizeof *m);
  pthread_mutex_init(&m->mu, NULL);
  tf__strmap_init(&m->containers);
  return m;
}

void tf_resource_mgr_free(tf_resource_mgr *m) {
  if (m == NULL) {
    return;
  }
  /* Containers go in creation order; nothing else may use m now. */
  while (m->n_names > 0) {
    char *first = tf__xstrdup(m->names[0]);
    tf_resource_mgr_reset(m, first);
    free(first);
  }
  tf__strmap_fini(&m->containers);
  free(m->names);
  pthread_mutex_destroy(&m->mu);
  free(m);
}

static tf_code type_mismatch(const char *c, const char *name,
                             const tf_resource *r, const tf_resource_type *t,
                             tf_status *st) {
  return tf_status_set(st, TF_INVALID_ARGUMENT,
                       "resource %s/%s is a %s, not a %s", c, name,
                       r->type->name, t->name);
}

/* Makes the resource with create and inserts it; m->mu held. */
static tf_code create_locked(tf_resource_mgr *m, const char *c,
                             const char *name, const tf_resource_type *type,
                             tf_resource_create_fn create, void *arg,
                             tf_resource **out, tf_status *st) {
  tf_resource *r = NULL;
  tf_code rc = create(arg, &r, st);
  if (rc != TF_OK) {
    tf_resource_unref(r);
    return rc;
  }
  if (r == NULL || r->type != type) {
    tf_resource_unref(r);
    return tf_status_set(st, TF_INTERNAL,
                         "creating resource %s/%s did not make a %s", c,
                         name, type->name);
  }
  container_add(find_container(m, c, true), name, r);
  *out = tf_resource_ref(r);
  return TF_OK;
}

tf_code tf_resource_lookup_or_create(tf_resource_mgr *m, const char *container,
                                     const char *name,
                                     const tf_resource_type *type,
                                     tf_resource_create_fn create, void *arg,
                                     tf_resource **out, tf_status *st) {
  const char *c = canon(container);
  *out = NULL;
  pthread_mutex_lock(&m->mu);
  rcontainer *ct = find_container(m, c, false);
  tf_resource *r = ct ? tf__strmap_get(&ct->by_name, name, NULL) : NULL;
  tf_code rc;
  if (r != NULL) {
    rc = r->type == type ? TF_OK : type_mismatch(c, name, r, type, st);
    if (rc == TF_OK) {
      *out = tf_resource_ref(r);
    }
  } else {
    rc = create_locked(m, c, name, type, create, arg, out, st);
  }
  pthread_mutex_unlock(&m->mu);
  return rc;
}

tf_code tf_resource_lookup(tf_resource_mgr *m, const char *container,
                           const char *name, tf_resource **out, tf_status *st) {
  const char *c = canon(container);
  pthread_mutex_lock(&m->mu);
  rcontainer *ct = find_container(m, c, false);
  tf_resource *r = ct ? tf__strmap_get(&ct->by_name, name, NULL) : NULL;
  *out = tf_resource_ref(r);
  pthread_mutex_unlock(&m->mu);
  if (r == NULL) {
    return tf_status_set(st, TF_NOT_FOUND, "resource %s/%s does not exist", c,
                         name);
  }
  return TF_OK;
}

void tf_resource_mgr_reset(tf_resource_mgr *m, const char *container) {
  pthread_mutex_lock(&m->mu);
  rcontainer *ct = take_container(m, canon(container));
  pthread_mutex_unlock(&m->mu);
  if (ct == NULL) {
    return;
  }
  int n;
  tf_resource **rs = container_release(ct, &n);
  shutdown_and_drop(rs, n, true);
  free(rs);
}

void tf_resource_mgr_shutdown(tf_resource_mgr *m) {
  pthread_mutex_lock(&m->mu);
  int n = 0, cap = 0;
  tf_resource **rs = NULL;
  for (int i = 0; i < m->n_names; i++) {
    rcontainer *ct = tf__strmap_get(&m->containers, m->names[i], NULL);
    for (int j = 0; j < ct->n; j++) {
      if (n == cap) {
        cap = cap ? cap * 2 : 16;
        rs = tf__xrealloc(rs, (size_t)cap * sizeof *rs);
      }
      rs[n++] = tf_resource_ref(ct->order[j]);
    }
  }
  pthread_mutex_unlock(&m->mu);
  shutdown_and_drop(rs, n, false);
  for (int i = 0; i < n; i++) {
    tf_resource_unref(rs[i]);
  }
  free(rs);
}

int tf_resource_mgr_count(tf_resource_mgr *m, const char *container) {
  pthread_mutex_lock(&m->mu);
  int n = 0;
  if (container == NULL) {
    for (int i = 0; i < m->n_names; i++) {
      n += ((rcontainer *)tf__strmap_get(&m->containers, m->names[i],
                                               NULL))->n;
    }
  } else {
    rcontainer *ct = find_container(m, canon(container), false);
    n = ct ? ct->n : 0;
  }
  pthread_mutex_unlock(&m->mu);
  return n;
}
