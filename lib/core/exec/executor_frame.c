/* executor_frame.c: pending counts, frames and iterations of a running
 * step (the dynamic control flow of the EuroSys 2018 paper).
 *
 * Each frame instance keeps a ring of live iterations; an iteration is
 * done when its nodes and child frames are, and (after the first) its
 * predecessor is; a frame is done when every Enter has delivered and no
 * iteration is live. A NextIteration beyond parallel_iterations waits in
 * `nexts` until the oldest iteration ends. Dead Exits of the last
 * iteration deliver deadness to the parent when the frame is done. All of
 * it runs under the step's mutex. */
#include <stdlib.h>
#include <string.h>

#include "lib/core/exec/executor_frame.h"
#include "lib/core/base/util.h"

void tf__ready_init(ready_list *r) {
  r->v = r->small;
  r->n = 0;
  r->n_expensive = 0;
  r->cap = (int)(sizeof r->small / sizeof r->small[0]);
}

void tf__ready_fini(ready_list *r) {
  if (r->v != r->small) free(r->v);
  tf__ready_init(r);
}

void tf__ready_grow(ready_list *r) {
  int cap = r->cap * 2;
  tagged *v = tf__xmalloc((size_t)cap * sizeof *v);
  memcpy(v, r->v, (size_t)r->n * sizeof *v);
  if (r->v != r->small) free(r->v);
  r->v = v;
  r->cap = cap;
}

static iter_state *iter_new(const exec_frame *sf, int64_t iter) {
  size_t n = (size_t)sf->n_nodes, k = (size_t)sf->n_slots;
  size_t size = sizeof(iter_state) + 2 * n * sizeof(int32_t) +
                (sf->has_refs ? 2 : 1) * k * sizeof(void *);
  iter_state *is = tf__xmalloc(size);
  memset(is, 0, sizeof *is);
  is->iter = iter;
  char *p = (char *)(is + 1);
  is->in = (tf_tensor **)p;
  p += k * sizeof(void *);
  if (sf->has_refs) {
    is->refs = (tf_resource **)p;
    p += k * sizeof(void *);
  }
  is->pending = (int32_t *)p;
  is->dead = is->pending + n;
  memset(is->in, 0, (sf->has_refs ? 2 : 1) * k * sizeof(void *));
  memcpy(is->pending, sf->init_pending, n * sizeof(int32_t));
  memset(is->dead, 0, n * sizeof(int32_t));
  return is;
}

static void iter_free(const exec_frame *sf, iter_state *is) {
  if (is == NULL) return;
  for (int i = 0; i < sf->n_slots; i++) {
    tf_tensor_unref(is->in[i]);
    if (is->refs != NULL) tf_resource_unref(is->refs[i]);
  }
  free(is);
}

static inline iter_state *iter_at(frame_state *f, int64_t i) {
  return f->iters[i % f->ring];
}

static uint64_t frame_id(const frame_state *parent, int64_t parent_iter,
                         const char *name) {
  uint64_t h = 1469598103934665603ULL ^ (parent ? parent->id : 0);
  h = (h ^ (uint64_t)parent_iter) * 1099511628211ULL;
  for (const char *c = name; *c; c++) h = (h ^ (uint8_t)*c) * 1099511628211ULL;
  return h ? h : 1;
}

frame_state *tf__frame_new(exec_step *s, int sfi, frame_state *parent,
                           iter_state *parent_is) {
  TF_ASSERT((parent == NULL) == (parent_is == NULL));
  const exec_frame *sf = &s->e->frames[sfi];
  frame_state *f = tf__xcalloc(1, sizeof *f);
  f->sf = sf;
  f->sfi = sfi;
  f->parent = parent;
  f->parent_is = parent_is;
  f->id = parent ? frame_id(parent, parent_is->iter, sf->name) : 0;
  f->max_parallel = sf->parallel_iterations;
  f->ring = f->max_parallel + 1;
  f->iters = tf__xcalloc((size_t)f->ring, sizeof *f->iters);
  f->iters[0] = iter_new(sf, 0);
  f->n_outstanding_iters = 1;
  f->n_pending_inputs = sf->n_enters;
  if (parent != NULL) {
    f->sibling = parent_is->children;
    parent_is->children = f;
    parent_is->outstanding_frames++;
  }
  f->all_next = s->all;
  if (s->all) s->all->all_prev = f;
  s->all = f;
  return f;
}

static void held_free(held_value *v, int n) {
  for (int i = 0; i < n; i++) {
    tf_tensor_unref(v[i].t);
    tf_resource_unref(v[i].r);
  }
}

static void frame_free(exec_step *s, frame_state *f) {
  for (int i = 0; i < f->ring; i++) iter_free(f->sf, f->iters[i]);
  held_free(f->nexts, f->n_nexts);
  held_free(f->invs, f->n_invs);
  if (f->all_prev) f->all_prev->all_next = f->all_next;
  if (f->all_next) f->all_next->all_prev = f->all_prev;
  if (s->all == f) s->all = f->all_next;
  free(f->iters);
  free(f->nexts);
  free(f->invs);
  free(f->dead_exits);
  free(f);
}

void tf__frame_free_all(exec_step *s) {
  while (s->all != NULL) frame_free(s, s->all);
  s->root = NULL;
}

static bool has_value(tf_tensor *const *ot, tf_resource *const *orr, int port) {
  return ot != NULL && (ot[port] != NULL || (orr != NULL && orr[port] != NULL));
}

void tf__activate(exec_step *s, const exec_item *it, frame_state *f,
                  iter_state *is, tf_tensor *const *ot, tf_resource *const *orr,
                  bool is_dead, ready_list *ready) {
  const tf_executor *e = s->e;
  const exec_edge *edges = e->edges + it->edge_start;
  for (int k = 0; k < it->n_edges; k++) {
    const exec_edge *x = &edges[k];
    const exec_item *dst = &e->items[x->dst];
    int pid = dst->pending_id;
    bool ready_now, dead = false, need = false;
    bool live = !is_dead && x->dst_slot >= 0 && has_value(ot, orr, x->src_port);
    if (dst->flags & IT_MERGE) {
      if (x->dst_slot < 0) {
        int c = is->pending[pid] -= 2;
        dead = is->dead[pid] == dst->n_data_in;
        ready_now = c == 0 || (c == 1 && dead);
      } else if (live) {
        int c = is->pending[pid];
        is->pending[pid] = c & ~1;
        ready_now = c == 1;
        need = (c & 1) != 0;
      } else {
        dead = ++is->dead[pid] == dst->n_data_in;
        ready_now = is->pending[pid] == 1 && dead;
      }
    } else {
      int c = --is->pending[pid];
      if (is_dead || (x->dst_slot >= 0 && !live)) is->dead[pid]++;
      dead = is->dead[pid] > 0;
      ready_now = c == 0;
      need = live;
    }
    if (need) {
      int slot = dst->input_start + x->dst_slot;
      if (ot[x->src_port] != NULL) is->in[slot] = tf_tensor_ref(ot[x->src_port]);
      if (orr != NULL && orr[x->src_port] != NULL) {
        is->refs[slot] = tf_resource_ref(orr[x->src_port]);
      }
    }
    if (ready_now) {
      tf__ready_push(ready, (tagged){x->dst, dead, f, is});
      is->outstanding_ops++;
    }
  }
}

static void hold(held_value **v, int *n, int *cap, int32_t item, bool dead,
                 tf_tensor *t, tf_resource *r) {
  if (*n == *cap) {
    *cap = *cap ? *cap * 2 : 4;
    *v = tf__xrealloc(*v, (size_t)*cap * sizeof **v);
  }
  (*v)[(*n)++] = (held_value){item, dead, t ? tf_tensor_ref(t) : NULL,
                              r ? tf_resource_ref(r) : NULL};
}

static void activate_held(exec_step *s, frame_state *f, iter_state *is,
                          const held_value *h, ready_list *ready) {
  tf_tensor *ot[1] = {h->t};
  tf_resource *orr[1] = {h->r};
  tf__activate(s, &s->e->items[h->item], f, is, ot, orr, h->dead, ready);
}

static void increment_iteration(exec_step *s, frame_state *f, ready_list *ready) {
  int64_t i = ++f->iteration_count;
  TF_ASSERT(iter_at(f, i) == NULL);
  iter_state *is = iter_new(f->sf, i);
  f->iters[i % f->ring] = is;
  f->n_outstanding_iters++;
  f->n_dead_exits = 0;
  int n = f->n_nexts;
  f->n_nexts = 0;
  for (int k = 0; k < n; k++) {
    activate_held(s, f, is, &f->nexts[k], ready);
    tf_tensor_unref(f->nexts[k].t);
    tf_resource_unref(f->nexts[k].r);
  }
  for (int k = 0; k < f->n_invs; k++) activate_held(s, f, is, &f->invs[k], ready);
}

static bool iteration_done(frame_state *f, int64_t i) {
  iter_state *is = iter_at(f, i);
  if (is == NULL || is->outstanding_ops != 0 || is->outstanding_frames != 0) {
    return false;
  }
  return i == 0 ? f->n_pending_inputs == 0 : iter_at(f, i - 1) == NULL;
}

/* Frees finished iterations from iter on; starts a deferred one for each.
 * Returns whether the frame is done. */
static bool cleanup_iterations(exec_step *s, frame_state *f, int64_t iter,
                               ready_list *ready) {
  int64_t cur = iter;
  while (cur <= f->iteration_count && iteration_done(f, cur)) {
    iter_free(f->sf, iter_at(f, cur));
    f->iters[cur % f->ring] = NULL;
    f->n_outstanding_iters--;
    cur++;
    if (f->n_nexts > 0) increment_iteration(s, f, ready);
  }
  return f->n_pending_inputs == 0 && f->n_outstanding_iters == 0;
}

/* Delivers the frame's dead exits to the parent and frees it. */
static void delete_frame(exec_step *s, frame_state *f, ready_list *ready) {
  frame_state *p = f->parent;
  iter_state *pis = f->parent_is;
  for (int k = 0; k < f->n_dead_exits; k++) {
    tf__activate(s, &s->e->items[f->dead_exits[k]], p, pis, NULL, NULL, true, ready);
  }
  for (frame_state **c = &pis->children; *c != NULL; c = &(*c)->sibling) {
    if (*c == f) {
      *c = f->sibling;
      break;
    }
  }
  frame_free(s, f);
}

static void cleanup_frames(exec_step *s, frame_state *f, iter_state *is,
                           ready_list *ready) {
  for (;;) {
    is->outstanding_frames--;
    if (f->parent == NULL || !cleanup_iterations(s, f, is->iter, ready)) return;
    frame_state *p = f->parent;
    iter_state *pis = f->parent_is;
    delete_frame(s, f, ready);
    f = p;
    is = pis;
  }
}

/* One op of (f, is) finished: returns whether f is now done. */
static bool decrement_ops(exec_step *s, frame_state *f, iter_state *is,
                          ready_list *ready) {
  is->outstanding_ops--;
  if (f->parent == NULL || is->outstanding_ops != 0) return false;
  return cleanup_iterations(s, f, is->iter, ready);
}

static frame_state *child_frame(exec_step *s, frame_state *f, iter_state *is,
                                int sfi) {
  for (frame_state *c = is->children; c != NULL; c = c->sibling) {
    if (c->sfi == sfi) return c;
  }
  return tf__frame_new(s, sfi, f, is);
}

static void add_loop_inv(exec_step *s, frame_state *f, const exec_item *it,
                         tf_tensor *t, tf_resource *r, bool dead,
                         ready_list *ready) {
  int32_t item = (int32_t)(it - s->e->items);
  hold(&f->invs, &f->n_invs, &f->cap_invs, item, dead, t, r);
  for (int64_t i = 0; i <= f->iteration_count; i++) {
    iter_state *is = iter_at(f, i);
    if (is != NULL) activate_held(s, f, is, &f->invs[f->n_invs - 1], ready);
  }
}

static bool propagate_next(exec_step *s, const tagged *t, const exec_item *it,
                           tf_tensor *const *ot, tf_resource *const *orr,
                           ready_list *ready) {
  frame_state *f = t->frame;
  int64_t iter = t->is->iter;
  if (!t->dead) {
    if (iter == f->iteration_count && f->n_outstanding_iters == f->max_parallel) {
      hold(&f->nexts, &f->n_nexts, &f->cap_nexts, (int32_t)(it - s->e->items),
           false, ot[0], orr ? orr[0] : NULL);
    } else {
      if (iter == f->iteration_count) increment_iteration(s, f, ready);
      tf__activate(s, it, f, iter_at(f, iter + 1), ot, orr, false, ready);
    }
  }
  return decrement_ops(s, f, t->is, ready);
}

void tf__propagate(exec_step *s, const tagged *t, tf_tensor *const *ot,
                   tf_resource *const *orr, ready_list *ready) {
  const exec_item *it = &s->e->items[t->item];
  frame_state *f = t->frame;
  bool done;
  if (!(it->flags & (IT_ENTER | IT_EXIT | IT_NEXT))) {
    tf__activate(s, it, f, t->is, ot, orr, t->dead, ready);
    done = decrement_ops(s, f, t->is, ready);
  } else if (it->flags & IT_ENTER) {
    frame_state *c = child_frame(s, f, t->is, it->enter_frame);
    if (it->flags & IT_CONST_ENTER) {
      add_loop_inv(s, c, it, t->dead ? NULL : ot[0],
                   t->dead || orr == NULL ? NULL : orr[0], t->dead, ready);
    } else {
      tf__activate(s, it, c, c->iters[0], ot, orr, t->dead, ready);
    }
    c->n_pending_inputs--;
    /* The last Enter may finish an iteration 0 that had nothing to run. */
    if (c->n_pending_inputs == 0 && cleanup_iterations(s, c, 0, ready)) {
      delete_frame(s, c, ready);
      cleanup_frames(s, f, t->is, ready);
    }
    done = decrement_ops(s, f, t->is, ready);
  } else if (it->flags & IT_EXIT) {
    if (t->dead) {
      if (t->is->iter == f->iteration_count) {
        if (f->n_dead_exits == f->cap_dead_exits) {
          f->cap_dead_exits = f->cap_dead_exits ? 2 * f->cap_dead_exits : 4;
          f->dead_exits = tf__xrealloc(f->dead_exits, (size_t)f->cap_dead_exits *
                                                          sizeof(int32_t));
        }
        f->dead_exits[f->n_dead_exits++] = t->item;
      }
    } else {
      tf__activate(s, it, f->parent, f->parent_is, ot, orr, false, ready);
    }
    done = decrement_ops(s, f, t->is, ready);
  } else {
    done = propagate_next(s, t, it, ot, orr, ready);
  }
  if (done) {
    frame_state *p = f->parent;
    iter_state *pis = f->parent_is;
    delete_frame(s, f, ready);
    cleanup_frames(s, p, pis, ready);
  }
}
