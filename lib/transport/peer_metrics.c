/* peer_metrics.c: per-peer transport series and RPC error counts
 * (peer_metrics.h). The cache maps a peer name to its four series; past
 * TF_METRICS_MAX_SERIES names, new peers share one entry whose series are
 * the families' sinks (looked up once, which counts the drop). */
#include "lib/transport/peer_metrics.h"

#include <pthread.h>

#include "lib/core/base/strmap.h"
#include "lib/core/base/util.h"
#include "lib/transport/wire.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static tf__strmap cache; /* zero-initialised: an empty map */
static tf__peer_metrics *overflow;

static tf__peer_metrics *lookup(const char *peer) {
  tf__peer_metrics *pm = tf__xcalloc(1, sizeof *pm);
  pm->sent_bytes = tf_metrics_series1(
      tf_metrics_counter("tf_rpc_sent_bytes_total",
                         "Bytes sent to a peer (control RPC and tensor stream)", "peer"),
      peer);
  pm->received_bytes = tf_metrics_series1(
      tf_metrics_counter("tf_rpc_received_bytes_total",
                         "Bytes received from a peer (control RPC and tensor stream)", "peer"),
      peer);
  pm->sent_messages = tf_metrics_series1(
      tf_metrics_counter("tf_rpc_sent_messages_total",
                         "Messages (RPC requests and replies, tensor frames) sent to a peer",
                         "peer"),
      peer);
  pm->received_messages = tf_metrics_series1(
      tf_metrics_counter("tf_rpc_received_messages_total",
                         "Messages (RPC requests and replies, tensor frames) received from a "
                         "peer", "peer"),
      peer);
  return pm;
}

const tf__peer_metrics *tf__peer_metrics_of(const char *peer) {
  peer = peer != NULL && peer[0] != '\0' ? peer : "unknown";
  pthread_mutex_lock(&mu);
  tf__peer_metrics *pm = tf__strmap_get(&cache, peer, NULL);
  if (pm == NULL && cache.n >= TF_METRICS_MAX_SERIES) {
    if (overflow == NULL) {
      overflow = lookup(peer); /* past the families' caps too: their sinks */
    }
    pm = overflow;
  } else if (pm == NULL) {
    pm = lookup(peer);
    tf__strmap_put(&cache, peer, pm);
  }
  pthread_mutex_unlock(&mu);
  return pm;
}

void tf__peer_sent(const tf__peer_metrics *pm, size_t n) {
  tf_metric_add_u64(pm->sent_bytes, n);
  tf_metric_add_u64(pm->sent_messages, 1);
}

void tf__peer_received(const tf__peer_metrics *pm, size_t n) {
  tf_metric_add_u64(pm->received_bytes, n);
  tf_metric_add_u64(pm->received_messages, 1);
}

void tf__rpc_count_error(const char *side, int method, tf_code code) {
  tf_metric_family *fam = tf_metrics_counter(
      "tf_rpc_errors_total", "RPCs that failed, by side (server: error replies sent; client: "
      "calls that failed), method and code", "side,method,code");
  const char *vals[] = {side, method >= 0 ? tf_method_name(method) : "unknown",
                        tf_code_name(code)};
  tf_metric_add_u64(tf_metrics_series(fam, vals), 1);
}
