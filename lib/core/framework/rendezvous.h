/* rendezvous.h: how _Send and _Recv kernels hand tensors across devices.
 *
 * A rendezvous is a table of tensors keyed by a string (whitepaper §3.2.2):
 *   src_device;src_incarnation;dst_device;tensor_name;frame_id:iter_id
 * with the incarnation as 16 lower-case hex digits and the frame id and
 * iteration in decimal (TF's framework/rendezvous.cc). A
 * value carries an is_dead flag, so an untaken Switch branch stays dead on
 * the other side. lib/core only knows these function tables; the per-step
 * tables and the remote path live in lib/rendezvous/. A step's rendezvous
 * is tf_step_ctx.rendezvous: a worker's table for the step, or in a local
 * session the in-process table of tf__rdv_local_ops (when a step has none,
 * Send/Recv fail with FAILED_PRECONDITION). */
#ifndef TF_CORE_RENDEZVOUS_H
#define TF_CORE_RENDEZVOUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/core/base/cancel.h"
#include "tf/status.h"
#include "tf/tensor.h"

typedef struct tf_rendezvous tf_rendezvous;

/* Called once when a send is accepted (locally stored, or acknowledged by
 * the remote receiver) or failed. */
typedef void (*tf_rdv_send_done)(void *arg, const tf_status *st);
/* Called once with the value: t is a new reference the callee owns (NULL
 * when is_dead or on error). */
typedef void (*tf_rdv_recv_done)(void *arg, const tf_status *st, tf_tensor *t,
                                 bool is_dead);

struct tf_rendezvous {
  /* Sends t (borrowed: the rendezvous takes its own reference; NULL when
   * is_dead) under key. A second send of the same key in one step is
   * INTERNAL "duplicate send of key ...". done may run before send returns. */
  void (*send)(tf_rendezvous *r, const char *key, tf_tensor *t, bool is_dead,
               tf_rdv_send_done done, void *arg);
  /* Waits for key's value. cancel (may be NULL) is the step's: cancelling
   * it ends the wait with its reason. done may run before recv returns. */
  void (*recv)(tf_rendezvous *r, const char *key, tf_cancel *cancel,
               tf_rdv_recv_done done, void *arg);
};

/* A parsed key; the strings point into buf (owned). */
typedef struct tf_rdv_key {
  char *buf;
  const char *src_device;
  uint64_t src_incarnation;
  const char *dst_device;
  const char *tensor_name;
  uint64_t frame_id;
  int64_t iter;
} tf_rdv_key;

/* The key string (malloc'd) for these parts. */
char *tf_rdv_key_make(const char *src_device, uint64_t src_incarnation,
                      const char *dst_device, const char *tensor_name,
                      uint64_t frame_id, int64_t iter);
/* Parses key into out. INVALID_ARGUMENT "rendezvous key '...': expected 5
 * ';'-separated parts ..." (or naming the bad part) when malformed. */
tf_code tf_rdv_key_parse(const char *key, tf_rdv_key *out, tf_status *st);
void tf_rdv_key_fini(tf_rdv_key *k);

/* In-process rendezvous tables: the tensors that a process's own steps
 * hand from one of its devices to another. lib/rendezvous registers the
 * implementation from a constructor (lib/core knows none); a local session
 * takes one table per step whose graph has _Send or _Recv nodes. */
typedef struct tf__rdv_local_ops {
  /* Tables for the devices whose names start with task_prefix
   * ("/job:localhost/replica:0/task:0"); a send to any other device fails
   * with UNIMPLEMENTED naming it. Never NULL. */
  void *(*open)(const char *task_prefix);
  /* The step's table, with a reference for the caller; NULL with st set
   * when the step id was used before. */
  tf_rendezvous *(*step_begin)(void *tables, uint64_t step_id, tf_status *st);
  /* Drops the caller's reference and the step's table: waiters end with
   * CANCELLED, values nobody received are released. */
  void (*step_end)(void *tables, tf_rendezvous *r, uint64_t step_id);
  /* Frees the tables; no step may be running. NULL-safe. */
  void (*close)(void *tables);
} tf__rdv_local_ops;

/* Installs the in-process tables (once, from a constructor). */
void tf__rdv_set_local_ops(const tf__rdv_local_ops *ops);
/* The installed tables, or NULL when lib/rendezvous is not linked. */
const tf__rdv_local_ops *tf__rdv_get_local_ops(void);

#endif
