/* cluster_spec_tls.h: the TLS configuration of a tls+tcp cluster, from the
 * spec's tls: section (cluster_spec.h) and the command line, made the
 * process default that RPC and tensor-stream servers and clients use
 * (lib/transport/tls.h). */
#ifndef TF_RUNTIME_CLUSTER_SPEC_TLS_H
#define TF_RUNTIME_CLUSTER_SPEC_TLS_H

#include <stdbool.h>

#include "lib/runtime/cluster_spec.h"
#include "lib/transport/tls.h"
#include "tf/status.h"

/* The configuration for s: the CA of tls.ca_file and, for a daemon
 * (client false), tls.cert_key_file; for a client (tfctl, a remote
 * session), tls.client_cert_key_file, else tls.cert_key_file. cert (NULL:
 * none) overrides the file (--tls-cert-key, --cert). OK with *out NULL
 * when s's transport is not tls+tcp. Errors name the spec and the key the
 * file came from: "conf/x.yaml: tls.ca_file: TLS CA file '/etc/tf/ca.crt':
 * cannot open: No such file or directory". */
tf_code tf_cluster_spec_tls_config(const tf_cluster_spec *s, bool client, const char *cert,
                                   tf_tls_config **out, tf_status *st);

/* tf_cluster_spec_tls_config made the process default (tf_tls_set_default);
 * nothing for a spec whose transport is not tls+tcp. *expired_at (may be
 * NULL; 40 bytes) gets the certificate's end of validity when it has
 * passed, else "". */
tf_code tf_cluster_spec_use_tls(const tf_cluster_spec *s, bool client, const char *cert,
                                char *expired_at, tf_status *st);

#endif
