/* executor_frame.h: a running step's state: frame instances, iterations,
 * tagged ready nodes. Shared by executor_step.c (running nodes) and
 * executor_frame.c (pending counts, frames and iterations). Everything
 * here is guarded by the step's mutex unless said otherwise. */
#ifndef TF_CORE_EXECUTOR_FRAME_H
#define TF_CORE_EXECUTOR_FRAME_H

#include <pthread.h>
#include <stdatomic.h>

#include "lib/core/base/refcount.h"
#include "lib/core/base/timer.h"
#include "lib/core/exec/executor_impl.h"
#include "lib/core/framework/resource.h"

/* One iteration of one frame instance: pending counts and input slots. */
typedef struct iter_state {
  int64_t iter;
  int32_t outstanding_ops;    /* ready or running nodes of this iteration */
  int32_t outstanding_frames; /* child frames started in it */
  int32_t *pending;
  int32_t *dead;
  tf_tensor **in;             /* input slots (a node reads its own unlocked) */
  tf_resource **refs;         /* resources on ref edges; NULL if none */
  struct frame_state *children;
} iter_state;

/* A value held for later delivery (deferred NextIteration, invariant). */
typedef struct held_value {
  int32_t item;
  bool dead;
  tf_tensor *t;
  tf_resource *r;
} held_value;

typedef struct frame_state {
  const exec_frame *sf;
  int32_t sfi;
  struct frame_state *parent; /* NULL: the root frame */
  iter_state *parent_is;      /* the parent's iteration that started it */
  uint64_t id;
  int64_t iteration_count;    /* the newest iteration */
  int32_t n_outstanding_iters;
  int32_t max_parallel;
  int32_t ring;               /* max_parallel + 1 */
  iter_state **iters;         /* iteration i at iters[i % ring] */
  int32_t n_pending_inputs;   /* Enters not yet delivered */
  held_value *nexts;          /* deferred over parallel_iterations */
  int n_nexts, cap_nexts;
  held_value *invs;           /* loop invariants */
  int n_invs, cap_invs;
  int32_t *dead_exits;
  int n_dead_exits, cap_dead_exits;
  struct frame_state *sibling;          /* in parent_is->children */
  struct frame_state *all_prev, *all_next; /* every live frame of the step */
} frame_state;

typedef struct tagged {
  int32_t item;
  bool dead;
  frame_state *frame;
  iter_state *is;
} tagged;

/* A growable list of ready nodes with room for a few inline. n_expensive:
 * how many of them are expensive (kept up to date for a thread's stack
 * only; executor_step.c). */
typedef struct ready_list {
  tagged *v;
  int n, cap;
  int n_expensive;
  tagged small[32];
} ready_list;

typedef struct exec_step {
  tf_executor *e;
  tf_step_ctx *ctx;
  tf_exec_trace *trace;
  tf_exec_done_fn done;
  void *done_arg;
  int64_t start_ns;
  int64_t deadline_ns;        /* 0: none */
  /* The deadline's timer (armed when deadline_ns is set) and the step's
   * two owners: the graph (dropped when no node is ready or running) and
   * the armed timer (dropped by its callback, or by whoever disarms it).
   * The last one ends the step, so a deadline's cancellation has returned
   * before the caller learns the outcome and frees the cancel object. */
  tf_timer_entry timer;
  tf__refcount owners;
  _Atomic bool graph_done;
  _Atomic int32_t last_started; /* item of the node that started last, -1
                                 * (kept only when there is a deadline) */
  pthread_mutex_t mu;
  int64_t outstanding;        /* ready or running nodes, all frames
                               * (atomic builtins when e->simple) */
  frame_state *root;
  frame_state *all;
} exec_step;

void tf__ready_init(ready_list *r);
void tf__ready_fini(ready_list *r);
void tf__ready_grow(ready_list *r);

static inline void tf__ready_push(ready_list *r, tagged t) {
  if (r->n == r->cap) tf__ready_grow(r);
  r->v[r->n++] = t;
}

/* Frames and iterations (executor_frame.c); called under s->mu. */
frame_state *tf__frame_new(exec_step *s, int sfi, frame_state *parent,
                           iter_state *parent_is);
void tf__frame_free_all(exec_step *s);
/* Delivers item's outputs (ot/orr indexed by port; NULL = all dead) to its
 * consumers in (f, is); pushes nodes that became ready. */
void tf__activate(exec_step *s, const exec_item *it, frame_state *f,
                  iter_state *is, tf_tensor *const *ot, tf_resource *const *orr,
                  bool is_dead, ready_list *ready);
/* Routes a finished node's outputs (Enter, Exit and NextIteration cross
 * frames and iterations) and does the frame bookkeeping. */
void tf__propagate(exec_step *s, const tagged *t, tf_tensor *const *ot,
                   tf_resource *const *orr, ready_list *ready);

#endif
