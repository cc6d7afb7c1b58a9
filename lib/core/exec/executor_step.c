/* executor_step.c: running a step: the ready loop, kernels, async
 * completions, errors, cancellation, deadlines and traces.
 *
 * A thread runs ready nodes from a local LIFO stack. After a node, its
 * outputs are propagated under the step mutex (one lock per node); nodes
 * that became ready go onto the stack when cheap (or when there is no
 * runner), the first expensive one stays with this thread, and the rest go
 * to the runner. A thread marked responsive (tf_thread_set_responsive: an
 * NNG callback serving a request) keeps no expensive node: they all go to
 * the runner. An asynchronous kernel completed from another thread (a
 * transport's, or another kernel's) runs its cheap successors there at
 * once, marked responsive meanwhile, and hands the expensive ones to the
 * runner. A node reads its input slots without the lock: they were
 * filled before it became ready and nobody else touches them. The step
 * ends when no node is ready or running; cancellation (its reason is the
 * step's first error) is polled before each node.
 *
 * A deadline is one timer (lib/core/base/timer.h) armed when the step
 * starts, for every way of running it (tf_executor_run or _run_async, with
 * or without a runner, any graph size): at the deadline the timer thread
 * cancels the step with DEADLINE_EXCEEDED, which stops the ready loops
 * before their next node and wakes every kernel waiting on the step's
 * cancel (queues, _Recv). The step therefore ends within one kernel's run
 * of its deadline; a single kernel that runs longer cannot be interrupted.
 * The ready loop itself reads no clock. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/exec/executor_frame.h"
#include "lib/core/graph/graph_impl.h"
#include "lib/core/base/util.h"

#define STACK_OUTPUTS 8

static _Atomic int next_thread_no = 1;
static _Thread_local int thread_no;

static int my_thread_no(void) {
  if (thread_no == 0) thread_no = atomic_fetch_add(&next_thread_no, 1);
  return thread_no;
}

static void process(exec_step *s, tagged first);

/* Ends the step: frees what is left and reports. No node is running and
 * the deadline's timer is disarmed or its callback has returned. */
static void finish_step(void *step) {
  exec_step *s = step;
  tf_status st;
  tf_cancel_reason(s->ctx->cancel, &st);
  tf__frame_free_all(s);
  tf_step_ctx_free_resources(s->ctx);
  tf_exec_done_fn done = s->done;
  void *arg = s->done_arg;
  pthread_mutex_destroy(&s->mu);
  free(s);
  done(arg, &st);
}

/* No node is ready or running: the graph drops its hold on the step, and
 * the timer's too when it is disarmed before firing. */
static void graph_finished(exec_step *s) {
  if (s->deadline_ns == 0) { /* no timer was armed: the graph is the owner */
    finish_step(s);
    return;
  }
  atomic_store_explicit(&s->graph_done, true, memory_order_release);
  if (tf__timer_stop(&s->timer)) {
    TF_ASSERT(!tf__ref_drop(&s->owners)); /* the graph's is still held */
  }
  tf__ref_put(&s->owners, finish_step, s);
}

/* The first error of the step wins; it cancels everything else. */
static void record_error(exec_step *s, const tf_status *st) {
  tf_cancel_start(s->ctx->cancel, st->code, st->msg);
}

static bool aborted(exec_step *s) { return tf_cancel_is_cancelled(s->ctx->cancel); }

static void add_trace(exec_step *s, const tagged *t, int64_t t0, int64_t t1) {
  tf_exec_trace *tr = s->trace;
  if (tr->n == tr->cap) {
    tr->cap = tr->cap ? tr->cap * 2 : 256;
    tr->stats = tf__xrealloc(tr->stats, (size_t)tr->cap * sizeof *tr->stats);
  }
  tr->stats[tr->n++] = (tf_node_exec_stats){t->item, (int64_t)t->frame->id,
                                            t->is->iter, t0, t1, my_thread_no()};
}

static void run_task(tf_task *task) {
  tagged t = {(int32_t)task->i[0], task->i[1] != 0, task->p[1], task->p[2]};
  process(task->p[0], t);
}

static bool expensive(const exec_step *s, const tagged *t) {
  return !t->dead && !(s->e->items[t->item].flags & IT_CHEAP);
}

static void schedule(exec_step *s, tf_workq *runner, const tagged *t) {
  tf_task task = {.fn = run_task, .p = {s, t->frame, t->is}, .i = {t->item, t->dead}};
  tf_workq_schedule(runner, &task);
}

/* Splits newly ready nodes between this thread's stack and the runner.
 * Cheap and dead ones stay, on top, so they run first; the first expensive
 * one stays too, under them, unless the stack already holds an expensive
 * node: then it goes to the runner, so that work piling up here (the
 * independent iterations of a loop whose counter runs ahead) reaches idle
 * threads. The rest go to the runner. A responsive thread
 * (tf_thread_set_responsive) keeps no expensive one. */
static void distribute(exec_step *s, ready_list *ready, ready_list *stack) {
  if (ready->n == 0) return; /* the step may be gone */
  tf_workq *runner = s->e->runner;
  int keep = -1;
  for (int i = 0; runner != NULL && stack->n_expensive == 0 && keep < 0 && i < ready->n &&
                  !tf_thread_is_responsive();
       i++) {
    if (expensive(s, &ready->v[i])) keep = i;
  }
  if (keep >= 0) {
    tf__ready_push(stack, ready->v[keep]);
    stack->n_expensive++;
  }
  /* Entries not yet handed on keep the step alive: read none after the
   * last one went to the runner. */
  for (int i = 0; i < ready->n; i++) {
    const tagged *t = &ready->v[i];
    if (i == keep) continue;
    if (runner != NULL && expensive(s, t)) {
      schedule(s, runner, t);
    } else {
      stack->n_expensive += expensive(s, t);
      tf__ready_push(stack, *t);
    }
  }
  ready->n = 0;
}

static void unref_outputs(tf_tensor **ot, tf_resource **orr, int n_out) {
  for (int i = 0; i < n_out; i++) {
    tf_tensor_unref(ot[i]);
    ot[i] = NULL;
    if (orr != NULL) {
      tf_resource_unref(orr[i]);
      orr[i] = NULL;
    }
  }
}

/* complete_node for simple executors: one frame, nothing dead, so each
 * edge is one atomic decrement and the step mutex is only for traces. The
 * slot is written before the decrement (acq_rel), so the consumer that
 * sees zero also sees its inputs. */
static void complete_simple(exec_step *s, const tagged *t, tf_tensor **ot,
                            tf_resource **orr, int n_out, int64_t t0,
                            ready_list *ready) {
  const tf_executor *e = s->e;
  const exec_item *it = &e->items[t->item];
  iter_state *is = t->is;
  if (!aborted(s)) {
    const exec_edge *edges = e->edges + it->edge_start;
    for (int k = 0; k < it->n_edges; k++) {
      const exec_edge *x = &edges[k];
      const exec_item *dst = &e->items[x->dst];
      if (x->dst_slot >= 0) {
        int slot = dst->input_start + x->dst_slot;
        if (ot[x->src_port] != NULL) is->in[slot] = tf_tensor_ref(ot[x->src_port]);
        if (orr != NULL && orr[x->src_port] != NULL) {
          is->refs[slot] = tf_resource_ref(orr[x->src_port]);
        }
      }
      if (__atomic_sub_fetch(&is->pending[dst->pending_id], 1, __ATOMIC_ACQ_REL) == 0) {
        tf__ready_push(ready, (tagged){x->dst, false, t->frame, is});
      }
    }
  }
  if (s->trace != NULL && t0 != 0) { /* t0 is 0 when the node did not run */
    pthread_mutex_lock(&s->mu);
    add_trace(s, t, t0, tf__now_ns());
    pthread_mutex_unlock(&s->mu);
  }
  unref_outputs(ot, orr, n_out);
  int64_t left = __atomic_add_fetch(&s->outstanding, ready->n - 1, __ATOMIC_ACQ_REL);
  if (left == 0) {
    TF_ASSERT(ready->n == 0);
    graph_finished(s);
  }
}

/* After a node: propagate (unless the step is aborting), count, report. */
static void complete_node(exec_step *s, const tagged *t, tf_tensor **ot,
                          tf_resource **orr, int n_out, int64_t t0,
                          ready_list *ready) {
  if (s->e->simple) {
    complete_simple(s, t, ot, orr, n_out, t0, ready);
    return;
  }
  bool stop = aborted(s);
  pthread_mutex_lock(&s->mu);
  /* Trace first: propagation may free the node's frame. t0 is 0 when the
   * node did not run (dead, or skipped once the step was cancelled). */
  if (s->trace != NULL && t0 != 0) add_trace(s, t, t0, tf__now_ns());
  if (!stop) tf__propagate(s, t, ot, orr, ready);
  s->outstanding += ready->n - 1;
  bool last = s->outstanding == 0;
  pthread_mutex_unlock(&s->mu);
  unref_outputs(ot, orr, n_out);
  if (last) {
    TF_ASSERT(ready->n == 0);
    graph_finished(s);
  }
}

/* Reads the ref edges that feed plain inputs into tmp (a dead input of a
 * dead-aware node stays NULL). */
static tf_code deref_inputs(exec_step *s, const exec_item *it, const tagged *t,
                            tf_tensor **tmp, tf_status *st) {
  iter_state *is = t->is;
  const uint8_t *kinds = s->e->in_kinds + it->kinds_start;
  for (int i = 0; i < it->n_inputs; i++) {
    tmp[i] = kinds[i] == IN_DEREF ? NULL : is->in[it->input_start + i];
  }
  for (int i = 0; i < it->n_inputs; i++) {
    if (kinds[i] != IN_DEREF) continue;
    tf_resource *r = is->refs[it->input_start + i];
    if (r == NULL && t->dead) continue;
    if (r == NULL || r->type->read == NULL) {
      return tf_status_set(st, TF_INVALID_ARGUMENT, "node '%s' (%s): input %d "
                           "is a %s, which has no value to read",
                           it->node->name, it->node->op->name, i,
                           r ? r->type->name : "missing resource");
    }
    tf_tensor *v = NULL;
    TF_TRY(r->type->read(r, &v, st));
    tmp[i] = v;
  }
  return TF_OK;
}

static void release_inputs(exec_step *s, const exec_item *it, iter_state *is,
                           tf_tensor **tmp) {
  tf_tensor **slots = is->in + it->input_start;
  if (tmp != NULL) {
    const uint8_t *kinds = s->e->in_kinds + it->kinds_start;
    for (int i = 0; i < it->n_inputs; i++) {
      if (kinds[i] == IN_DEREF) tf_tensor_unref(tmp[i]);
    }
  }
  for (int i = 0; i < it->n_inputs; i++) {
    tf_tensor_unref(slots[i]);
    slots[i] = NULL;
  }
  if (is->refs != NULL) {
    tf_resource **r = is->refs + it->input_start;
    for (int i = 0; i < it->n_inputs; i++) {
      tf_resource_unref(r[i]);
      r[i] = NULL;
    }
  }
}

/* Checks a finished kernel's status and outputs. */
static tf_code check_outputs(const exec_item *it, tf_kernel_ctx *ctx,
                             tf_status *st) {
  if (st->code != TF_OK || (it->flags & (IT_CTRL_FLOW | IT_DEAD_AWARE))) {
    return st->code;
  }
  for (int i = 0; i < it->n_outputs; i++) {
    if (ctx->outputs[i] == NULL && (ctx->out_refs == NULL || ctx->out_refs[i] == NULL)) {
      return tf_kernel_error(ctx, TF_INTERNAL, "kernel did not set output %d", i);
    }
  }
  return TF_OK;
}

static void init_ctx(exec_step *s, const exec_item *it, const tagged *t,
                     tf_kernel_ctx *ctx, tf_tensor **inputs, tf_tensor **ot,
                     tf_resource **orr, tf_status *st) {
  tf_device *dev = s->e->device;
  *ctx = (tf_kernel_ctx){
      .node = it->node, .def = it->k, .state = it->state, .device = dev,
      .pool = dev->pool, .n_inputs = it->n_inputs, .inputs = inputs,
      .n_outputs = it->n_outputs, .outputs = ot, .status = st, .step = s->ctx,
      .in_refs = (it->flags & IT_REF_IN) ? t->is->refs + it->input_start : NULL,
      .out_refs = (it->flags & IT_REF_OUT) ? orr : NULL,
      .frame_id = t->frame->id, .iter = t->is->iter, .is_dead = t->dead};
}

/* ---- asynchronous kernels ------------------------------------------------ */

typedef struct async_run {
  exec_step *s;
  tagged t;
  tf_kernel_ctx ctx;
  tf_status st;
  pthread_t thread;      /* the launching thread */
  bool in_compute;       /* read only by the launching thread */
  ready_list *stack;     /* the launcher's stack, while in_compute */
  tf__refcount refs;     /* the launcher's and the completion's */
  int64_t t0;
  tf_tensor **tmp;       /* derefs, or NULL */
  tf_tensor **ot;
  tf_resource **orr;
} async_run;

static void async_release(async_run *a) { tf__ref_put(&a->refs, free, a); }

static void async_done(void *arg) {
  async_run *a = arg;
  exec_step *s = a->s;
  const exec_item *it = &s->e->items[a->t.item];
  if (check_outputs(it, &a->ctx, &a->st) != TF_OK) record_error(s, &a->st);
  release_inputs(s, it, a->t.is, a->tmp);
  ready_list ready;
  tf__ready_init(&ready);
  bool inline_here = pthread_equal(a->thread, pthread_self()) && a->in_compute;
  ready_list *stack = a->stack;
  tf_workq *runner = s->e->runner; /* read now: the step may end below */
  complete_node(s, &a->t, a->ot, a->orr, it->n_outputs, a->t0, &ready);
  if (inline_here) {
    distribute(s, &ready, stack);
  } else if (runner != NULL) {
    /* Another thread completed the kernel (a transport's, or another
     * kernel's): the cheap successors run here, at once, and the
     * expensive ones go to the runner. */
    bool was = tf_thread_set_responsive(true);
    ready_list mine;
    tf__ready_init(&mine);
    distribute(s, &ready, &mine);
    for (int i = 0; i < mine.n; i++) process(s, mine.v[i]);
    tf__ready_fini(&mine);
    tf_thread_set_responsive(was);
  } else {
    for (int i = 0; i < ready.n; i++) process(s, ready.v[i]);
  }
  tf__ready_fini(&ready);
  async_release(a);
}

static void launch_async(exec_step *s, const exec_item *it, const tagged *t,
                         ready_list *stack) {
  size_t n_in = (size_t)it->n_inputs, n_out = (size_t)it->n_outputs;
  async_run *a = tf__xcalloc(1, sizeof *a + (n_in + 2 * n_out) * sizeof(void *));
  void **extra = (void **)(a + 1);
  a->ot = (tf_tensor **)extra;
  a->orr = (tf_resource **)(extra + n_out);
  a->s = s;
  a->t = *t;
  a->thread = pthread_self();
  a->in_compute = true;
  a->stack = stack;
  tf__ref_init(&a->refs, 2);
  a->t0 = s->trace ? tf__now_ns() : 0;
  tf_status_init(&a->st);
  tf_tensor **inputs = t->is->in + it->input_start;
  if (it->flags & IT_DEREF) {
    a->tmp = (tf_tensor **)(extra + 2 * n_out);
    inputs = a->tmp;
  }
  init_ctx(s, it, t, &a->ctx, inputs, a->ot, a->orr, &a->st);
  if (a->tmp != NULL && deref_inputs(s, it, t, a->tmp, &a->st) != TF_OK) {
    async_done(a);
  } else {
    it->k->compute_async(&a->ctx, async_done, a);
  }
  a->in_compute = false;
  async_release(a);
}

/* ---- the ready loop ------------------------------------------------------ */

static void run_node(exec_step *s, const tagged *t, ready_list *stack,
                     ready_list *ready) {
  const exec_item *it = &s->e->items[t->item];
  tf_tensor *ot_buf[STACK_OUTPUTS];
  tf_resource *orr_buf[STACK_OUTPUTS];
  tf_tensor **ot = ot_buf;
  tf_resource **orr = orr_buf;
  if (it->n_outputs > STACK_OUTPUTS) {
    ot = tf__xcalloc((size_t)it->n_outputs, sizeof *ot);
    orr = tf__xcalloc((size_t)it->n_outputs, sizeof *orr);
  } else {
    for (int i = 0; i < it->n_outputs; i++) ot[i] = NULL, orr[i] = NULL;
  }
  int64_t t0 = 0;
  /* Dead nodes skip their kernel, except dead-aware ones (_Send). */
  if ((!t->dead || (it->flags & IT_DEAD_AWARE)) && !aborted(s)) {
    if (s->deadline_ns != 0) {
      atomic_store_explicit(&s->last_started, t->item, memory_order_relaxed);
    }
    if (it->flags & IT_ASYNC) {
      launch_async(s, it, t, stack);
      goto out;
    }
    if (s->trace != NULL) t0 = tf__now_ns();
    tf_status st;
    st.code = TF_OK;
    tf_tensor *tmp_buf[STACK_OUTPUTS], **tmp = NULL, **inputs = t->is->in + it->input_start;
    if (it->flags & IT_DEREF) {
      tmp = it->n_inputs > STACK_OUTPUTS ? tf__xcalloc((size_t)it->n_inputs, sizeof *tmp)
                                         : tmp_buf;
      inputs = tmp;
    }
    tf_kernel_ctx ctx;
    init_ctx(s, it, t, &ctx, inputs, ot, orr, &st);
    if (tmp == NULL || deref_inputs(s, it, t, tmp, &st) == TF_OK) {
      it->k->compute(&ctx);
      check_outputs(it, &ctx, &st);
    }
    release_inputs(s, it, t->is, tmp);
    if (tmp != NULL && tmp != tmp_buf) free(tmp);
    if (st.code != TF_OK) record_error(s, &st);
  } else {
    release_inputs(s, it, t->is, NULL); /* a dead node's live inputs */
  }
  complete_node(s, t, ot, orr, it->n_outputs, t0, ready);
  distribute(s, ready, stack);
out:
  if (ot != ot_buf) {
    free(ot);
    free(orr);
  }
}

static void process(exec_step *s, tagged first) {
  ready_list stack, ready;
  tf__ready_init(&stack);
  tf__ready_init(&ready);
  tf__ready_push(&stack, first);
  stack.n_expensive = expensive(s, &first);
  while (stack.n > 0) {
    tagged t = stack.v[--stack.n];
    stack.n_expensive -= expensive(s, &t);
    run_node(s, &t, &stack, &ready);
  }
  tf__ready_fini(&stack);
  tf__ready_fini(&ready);
}

/* ---- deadlines ----------------------------------------------------------- */

/* What DEADLINE_EXCEEDED says: the deadline, relative to the step's start,
 * how many nodes were running (waiting included) or ready, and the node
 * that started last. */
static void deadline_message(exec_step *s, char *buf, size_t n) {
  pthread_mutex_lock(&s->mu); /* outstanding is locked when not simple */
  long long busy = (long long)__atomic_load_n(&s->outstanding, __ATOMIC_ACQUIRE);
  pthread_mutex_unlock(&s->mu);
  int64_t after_ns = s->deadline_ns - s->start_ns;
  int len = after_ns <= 0
                ? snprintf(buf, n, "the step's deadline had passed %.1f ms before "
                           "it started", (double)-after_ns / 1e6)
                : snprintf(buf, n, "the step ran past its deadline (%lld ms after "
                           "it started) with %lld node%s running or ready",
                           (long long)((after_ns + 500000) / 1000000), busy,
                           busy == 1 ? "" : "s");
  int32_t last = atomic_load_explicit(&s->last_started, memory_order_relaxed);
  if (after_ns <= 0 || len <= 0 || (size_t)len >= n) return;
  if (last < 0) {
    snprintf(buf + len, n - (size_t)len, "; no node had started");
  } else {
    const tf_node *nd = s->e->items[last].node;
    snprintf(buf + len, n - (size_t)len, "; the last to start was '%s' (%s)",
             nd->name, nd->op->name);
  }
}

/* The timer's callback: cancels the step unless its graph has finished,
 * then drops the timer's hold (which may end the step here). */
static void on_deadline(void *arg) {
  exec_step *s = arg;
  if (!atomic_load_explicit(&s->graph_done, memory_order_acquire)) {
    char msg[600];
    deadline_message(s, msg, sizeof msg);
    tf_cancel_start(s->ctx->cancel, TF_DEADLINE_EXCEEDED, msg);
  }
  tf__ref_put(&s->owners, finish_step, s);
}

/* Arms the deadline (the timer holds the step), or cancels at once when it
 * has passed already. */
static void arm_deadline(exec_step *s) {
  tf__timer_entry_init(&s->timer);
  if (s->deadline_ns == 0) return;
  if (s->deadline_ns <= s->start_ns) {
    char msg[600];
    deadline_message(s, msg, sizeof msg);
    tf_cancel_start(s->ctx->cancel, TF_DEADLINE_EXCEEDED, msg);
    s->deadline_ns = 0;
    return;
  }
  tf__ref_get(&s->owners);
  tf__timer_start(&s->timer, s->deadline_ns, on_deadline, s);
}

static void run_async(tf_executor *e, tf_step_ctx *step, tf_exec_trace *trace,
                      int64_t deadline_ns, tf_exec_done_fn done, void *arg) {
  exec_step *s = tf__xcalloc(1, sizeof *s);
  s->e = e;
  s->ctx = step;
  s->trace = trace;
  s->done = done;
  s->done_arg = arg;
  s->start_ns = deadline_ns != 0 ? tf__now_ns() : 0; /* only for the deadline */
  s->deadline_ns = deadline_ns;
  tf__ref_init(&s->owners, 1);
  atomic_init(&s->graph_done, false);
  atomic_init(&s->last_started, -1);
  /* Adaptive: every finished node of a non-simple step takes this mutex
   * for microseconds; spinning first spares the futex sleep and wake-up
   * when two threads finish nodes at once (docs/benchmarks.md, loops). */
  pthread_mutexattr_t ma;
  pthread_mutexattr_init(&ma);
  pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ADAPTIVE_NP);
  pthread_mutex_init(&s->mu, &ma);
  pthread_mutexattr_destroy(&ma);
  s->root = tf__frame_new(s, 0, NULL, NULL);
  if (e->n_roots == 0) {
    tf__timer_entry_init(&s->timer);
    s->deadline_ns = 0;
    graph_finished(s);
    return;
  }
  ready_list first;
  tf__ready_init(&first);
  pthread_mutex_lock(&s->mu);
  for (int i = 0; i < e->n_roots; i++) {
    tf__ready_push(&first, (tagged){e->roots[i], false, s->root, s->root->iters[0]});
  }
  s->outstanding = e->n_roots;
  s->root->iters[0]->outstanding_ops = e->n_roots;
  pthread_mutex_unlock(&s->mu);
  arm_deadline(s); /* no node has run: the graph holds the step */
  /* Roots run here; cheap ones inline, others spread by distribute. */
  ready_list stack;
  tf__ready_init(&stack);
  distribute(s, &first, &stack);
  tf__ready_fini(&first);
  for (int i = 0; i < stack.n; i++) process(s, stack.v[i]);
  tf__ready_fini(&stack);
}

void tf_executor_run_async(tf_executor *e, tf_step_ctx *step,
                           tf_exec_trace *trace, int64_t deadline_ns,
                           tf_exec_done_fn done, void *arg) {
  run_async(e, step, trace, deadline_ns, done, arg);
}

typedef struct sync_wait {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool done;
  tf_status st;
} sync_wait;

static void sync_done(void *arg, const tf_status *st) {
  sync_wait *w = arg;
  pthread_mutex_lock(&w->mu);
  w->st = *st;
  w->done = true;
  pthread_cond_signal(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

tf_code tf_executor_run(tf_executor *e, tf_step_ctx *step, tf_exec_trace *trace,
                        int64_t deadline_ns, tf_status *st) {
  sync_wait w = {.done = false};
  pthread_mutex_init(&w.mu, NULL);
  pthread_cond_init(&w.cv, NULL);
  run_async(e, step, trace, deadline_ns, sync_done, &w);
  /* The step's own timer enforces the deadline; this wait needs none. */
  pthread_mutex_lock(&w.mu);
  while (!w.done) pthread_cond_wait(&w.cv, &w.mu);
  pthread_mutex_unlock(&w.mu);
  pthread_mutex_destroy(&w.mu);
  pthread_cond_destroy(&w.cv);
  if (st != NULL) *st = w.st;
  return w.st.code;
}
