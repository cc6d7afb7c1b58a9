/* rendezvous.h: how _Send and _Recv kernels hand tensors across devices.
 *
 * A rendezvous is a table of tensors keyed by a string (whitepaper §3.2.2):
 *   src_device;src_incarnation;dst_device;tensor_name;frame_id:iter_id
 * with the incarnation as 16 lower-case hex digits and the frame id and
 * iteration in decimal (TF's framework/rendezvous.cc). A
 * value carries an is_dead flag, so an untaken Switch branch stays dead on
 * the other side. lib/core only knows this function table; the per-step
 * tables and the remote path live in lib/rendezvous/. A step's rendezvous
 * is tf_step_ctx.rendezvous (NULL in a local session: Send/Recv then fail
 * with FAILED_PRECONDITION). */
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

#endif
