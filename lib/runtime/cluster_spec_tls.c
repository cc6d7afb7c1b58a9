/* cluster_spec_tls.c: loads the TLS files a tls+tcp spec names
 * (cluster_spec_tls.h); the tls: section itself is parsed with the rest
 * of the spec (cluster_spec.c). */
#include "lib/runtime/cluster_spec_tls.h"

#include <stdio.h>
#include <string.h>

#include "lib/core/base/util.h"

tf_code tf_cluster_spec_tls_config(const tf_cluster_spec *s, bool client, const char *cert,
                                   tf_tls_config **out, tf_status *st) {
  *out = NULL;
  if (strcmp(s->transport, "tls+tcp") != 0) {
    return TF_OK;
  }
  const char *key = client && s->tls_client_cert_key_file != NULL
                        ? "tls.client_cert_key_file" : "tls.cert_key_file";
  const char *file = client && s->tls_client_cert_key_file != NULL
                         ? s->tls_client_cert_key_file : s->tls_cert_key_file;
  if (cert != NULL) {
    key = client ? "--cert" : "--tls-cert-key";
    file = cert;
  }
  if (s->tls_ca_file == NULL || file == NULL) {
    return tf_status_set(st, TF_FAILED_PRECONDITION, "%s: transport tls+tcp "
                         "without a tls: section", s->path);
  }
  tf_code code = tf_tls_config_load(s->tls_ca_file, file, out, st);
  if (code != TF_OK) {
    bool ca = strstr(st->msg, "TLS CA file") == st->msg;
    tf_status_prefix(st, "%s: %s", s->path, ca ? "tls.ca_file" : key);
  }
  return code;
}

tf_code tf_cluster_spec_use_tls(const tf_cluster_spec *s, bool client, const char *cert,
                                char *expired_at, tf_status *st) {
  if (expired_at != NULL) {
    expired_at[0] = '\0';
  }
  tf_tls_config *c = NULL;
  TF_TRY(tf_cluster_spec_tls_config(s, client, cert, &c, st));
  if (c == NULL) {
    return TF_OK;
  }
  char when[40];
  if (tf_tls_config_expired(c, when, sizeof when) && expired_at != NULL) {
    snprintf(expired_at, 40, "%s", when);
  }
  tf_tls_set_default(c);
  tf_tls_config_free(c);
  return TF_OK;
}
