/* tls.h: mutual TLS for a program's connections to a cluster on transport
 * tls+tcp (docs/security.md): a remote session whose target is
 * "tls+tcp://host:port" (tf_session_options.target) presents the
 * certificate given here and trusts the servers the CA signed, checking
 * each server's certificate against the host name it dials. */
#ifndef TF_TLS_H
#define TF_TLS_H

#include "tf/export.h"
#include "tf/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Reads ca_file (the cluster CA, PEM) and cert_key_file (this program's
 * certificate chain and unencrypted private key in one PEM file: the
 * spec's tls.client_cert_key_file, for instance) and makes them the TLS
 * configuration of every tls+tcp connection this process opens from now
 * on. Errors name the file: NOT_FOUND, PERMISSION_DENIED, or
 * INVALID_ARGUMENT (not PEM, no certificate, no key, a key that does not
 * match the certificate); the configuration in use is then unchanged. */
TF_API tf_code tf_tls_use_files(const char *ca_file, const char *cert_key_file,
                                tf_status *st);

#ifdef __cplusplus
}
#endif

#endif
