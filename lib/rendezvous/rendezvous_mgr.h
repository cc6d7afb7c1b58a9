/* rendezvous_mgr.h: a task's per-step rendezvous tables.
 *
 * One table per step id, made on first use by RunGraph or by a tensor that
 * another task pushed before this task's part of the step started. A send
 * whose destination device belongs to this task (its name starts with the
 * task prefix) is handed over in memory without copying; any other send
 * goes to the remote-send function (the worker pushes it over the wire).
 * Tables end with tf_rdv_mgr_cleanup (CleanupGraph), with abort (AbortStep:
 * waiters fail, later sends and recvs fail), or when idle longer than the
 * TTL (orphans of a master that went away). A cleaned-up step leaves a
 * tombstone for one TTL so late pushes are refused, not resurrected. */
#ifndef TF_RENDEZVOUS_RENDEZVOUS_MGR_H
#define TF_RENDEZVOUS_RENDEZVOUS_MGR_H

#include "lib/core/framework/rendezvous.h"

typedef struct tf_rdv_mgr tf_rdv_mgr;

/* Sends t (borrowed; NULL if dead) to the task owning k->dst_device; must
 * call done exactly once (maybe from another thread). */
typedef void (*tf_rdv_remote_send_fn)(void *arg, uint64_t step_id,
                                      const char *key, const tf_rdv_key *k,
                                      tf_tensor *t, bool is_dead,
                                      tf_rdv_send_done done, void *done_arg);

/* task_prefix: "/job:worker/replica:0/task:1" (this task's devices).
 * ttl_ms > 0. remote may be NULL (then a non-local send fails with
 * UNIMPLEMENTED naming the destination). */
tf_rdv_mgr *tf_rdv_mgr_new(const char *task_prefix, int64_t ttl_ms,
                           tf_rdv_remote_send_fn remote, void *remote_arg);
/* Aborts every step (CANCELLED "rendezvous manager shut down") and frees. */
void tf_rdv_mgr_free(tf_rdv_mgr *m);

/* The step's rendezvous (made if needed), with a reference for the caller.
 * Fails (NULL, st ABORTED "step N was already cleaned up or aborted") for a
 * tombstoned step. */
tf_rendezvous *tf_rdv_mgr_step(tf_rdv_mgr *m, uint64_t step_id, tf_status *st);
void tf_rdv_step_unref(tf_rendezvous *r);

/* Puts a tensor that arrived from another task into the step's table (t is
 * borrowed; NULL if dead). ABORTED when the step is tombstoned or aborted;
 * INVALID_ARGUMENT for a malformed key; INTERNAL for a duplicate;
 * RESOURCE_EXHAUSTED "key '...' (N bytes) for step S refused: pushed
 * tensors not yet received hold B bytes, the limit is M bytes" when it
 * would be buffered past the limit of tf_rdv_mgr_set_max_pushed (a value
 * handed straight to a waiting receiver is never refused). */
tf_code tf_rdv_mgr_deliver(tf_rdv_mgr *m, uint64_t step_id, const char *key,
                           tf_tensor *t, bool is_dead, tf_status *st);
/* Fails the step's waiters and later operations with why (a copy is kept). */
void tf_rdv_mgr_abort(tf_rdv_mgr *m, uint64_t step_id, const tf_status *why);
/* Aborts (CANCELLED "step N cleaned up") and drops the table; tombstones it. */
void tf_rdv_mgr_cleanup(tf_rdv_mgr *m, uint64_t step_id);
/* As cleanup, but forgets the step entirely (no tombstone): for in-process
 * steps, which no other task can send to late. */
void tf_rdv_mgr_forget(tf_rdv_mgr *m, uint64_t step_id);
/* Expires tables untouched for longer than the TTL (aborting them with
 * ABORTED "... expired after N ms without activity") and old tombstones.
 * Returns how many tables expired. now_ns: CLOCK_MONOTONIC. */
int tf_rdv_mgr_sweep(tf_rdv_mgr *m, int64_t now_ns);
/* Live (not tombstoned) tables, and the bytes of tensors they hold. */
int tf_rdv_mgr_live_steps(tf_rdv_mgr *m);
int64_t tf_rdv_mgr_buffered_bytes(tf_rdv_mgr *m);
/* Caps the bytes of delivered (pushed) tensors buffered and not yet
 * received, over all steps; max_bytes <= 0: no cap (the default). */
void tf_rdv_mgr_set_max_pushed(tf_rdv_mgr *m, int64_t max_bytes);
/* The bytes of pushed tensors buffered now (part of buffered_bytes). */
int64_t tf_rdv_mgr_pushed_bytes(tf_rdv_mgr *m);

#endif
