/* peer_metrics.h: the transport's Prometheus series (lib/core/base/
 * metrics.h): bytes and messages sent to and received from each peer, on
 * the control RPC and the tensor stream, and RPC errors by method and
 * code. A peer is the remote task's name where known ("/job:worker/
 * task:0"), else its address. Lookups are cached per peer name (capped
 * like the series themselves), so a message costs one hash lookup under
 * a mutex plus atomic adds; callers that talk to one peer keep the
 * pointer. */
#ifndef TF_TRANSPORT_PEER_METRICS_H
#define TF_TRANSPORT_PEER_METRICS_H

#include <stddef.h>

#include "lib/core/base/metrics.h"
#include "tf/status.h"

typedef struct tf__peer_metrics {
  tf_metric *sent_bytes, *received_bytes, *sent_messages, *received_messages;
} tf__peer_metrics;

/* The series of peer ("" reads as "unknown"). Never NULL; lives as long
 * as the process. Thread-safe. */
const tf__peer_metrics *tf__peer_metrics_of(const char *peer);

/* Counts one message of n bytes sent to / received from pm. */
void tf__peer_sent(const tf__peer_metrics *pm, size_t n);
void tf__peer_received(const tf__peer_metrics *pm, size_t n);

/* Counts a failed RPC: side "server" (an error reply this process sent)
 * or "client" (a call of this process that failed), the method's name,
 * and the code. */
void tf__rpc_count_error(const char *side, int method, tf_code code);

#endif
