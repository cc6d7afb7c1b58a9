/* executor.h: runs one graph (a partition for one device) step after step.
 *
 * The executor is the whitepaper's §3.1 dataflow engine with the dynamic
 * control flow of the EuroSys 2018 paper. Building it (tf_executor_new)
 * looks up and initialises every node's kernel and works out the static
 * frames: Enter moves into the frame named by its frame_name attr, Exit
 * back to the parent, and a node's inputs must all come from one frame.
 * The result is immutable, so any number of steps may run concurrently.
 *
 * A step keeps, per frame instance and iteration (the tag), a pending count
 * per node and a slot per input. A node is ready when its count reaches
 * zero; it is dead when an input is dead (the untaken output of a Switch),
 * and a dead node does not run: it passes deadness to its consumers. Merge
 * runs on its first live input, or is dead when all its data inputs are.
 * NextIteration moves values to the next iteration (at most
 * parallel_iterations run at once); loop invariants (Enter with
 * is_constant) reach every iteration. Cheap kernels run inline in the
 * thread that made them ready; others go to the runner. Asynchronous
 * kernels hold no thread while they wait. A tensor is released as soon as
 * its last consumer has run.
 *
 * Errors: the first error of a step (a kernel's, or the reason given to
 * tf_cancel_start) ends it: nothing new starts, waiting kernels are
 * cancelled, and the step completes with that status once every running
 * kernel has returned. */
#ifndef TF_CORE_EXECUTOR_H
#define TF_CORE_EXECUTOR_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/core/base/cancel.h"
#include "lib/core/framework/kernel.h"
#include "lib/core/base/workqueue.h"
#include "tf/graph.h"
#include "tf/status.h"

typedef struct tf_executor tf_executor;

typedef struct tf_executor_opts {
  tf_device *device; /* NULL: the local CPU device */
  tf_workq *runner;  /* inter-op threads; NULL: all in the calling thread */
} tf_executor_opts;

/* Builds an executor for g, which it borrows: g must outlive it and not
 * change. Errors name the node: no kernel for its op and dtype, kernel
 * init failures, inputs from different frames, Exit outside a loop, a
 * _Retval inside a loop. */
tf_code tf_executor_new(const tf_graph *g, const tf_executor_opts *opts,
                        tf_executor **out, tf_status *st);
void tf_executor_free(tf_executor *e); /* NULL-safe; no step may be running */
const tf_graph *tf_executor_graph(const tf_executor *e);
/* Whether the graph has _Send or _Recv nodes, so that a step must be
 * given a rendezvous (tf_step_ctx.rendezvous). */
bool tf_executor_needs_rendezvous(const tf_executor *e);

/* One node's run, for traces (RunOptions trace). */
typedef struct tf_node_exec_stats {
  int node;          /* node id in the executor's graph */
  int64_t frame_id;  /* 0: root */
  int64_t iter;
  int64_t start_ns;  /* CLOCK_MONOTONIC */
  int64_t end_ns;
  int thread;        /* small per-process thread number */
} tf_node_exec_stats;

typedef struct tf_exec_trace {
  tf_node_exec_stats *stats; /* malloc'd; the caller frees */
  int n, cap;
} tf_exec_trace;

typedef void (*tf_exec_done_fn)(void *arg, const tf_status *st);

/* Starts a step. *step must stay valid (and its cancel object alive) until
 * done(arg, status) has been called, exactly once, from any thread (maybe
 * before this returns). trace, when not NULL, collects one entry per node
 * run; it is written only until done is called.
 *
 * deadline_ns (CLOCK_MONOTONIC as tf__now_ns, 0 = none): when it passes,
 * the step is cancelled with DEADLINE_EXCEEDED, whose message names the
 * deadline (in ms after the start), how many nodes were running or ready
 * and the node that started last. No node starts after that; kernels that
 * wait on the step's cancel (queues, _Recv, reader requests) are woken; a
 * kernel that is computing finishes first, so the step ends within one
 * kernel's run of the deadline (kernels are not interrupted). done is
 * called only after the deadline's cancellation has returned, so the
 * caller may free step->cancel in done. step->cancel must be fresh. */
void tf_executor_run_async(tf_executor *e, tf_step_ctx *step,
                           tf_exec_trace *trace, int64_t deadline_ns,
                           tf_exec_done_fn done, void *arg);

/* Runs a step as tf_executor_run_async does and waits for it. */
tf_code tf_executor_run(tf_executor *e, tf_step_ctx *step,
                        tf_exec_trace *trace, int64_t deadline_ns,
                        tf_status *st);

#endif
