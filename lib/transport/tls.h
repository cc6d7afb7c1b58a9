/* tls.h: mutual TLS for the tls+tcp transport (docs/wire.md, "TLS").
 *
 * A tf_tls_config holds, read once from PEM files, the cluster's CA
 * certificates and this process's certificate chain and private key. From
 * it the transport makes NNG TLS configurations (NNG 1.5.2 over mbedTLS
 * 2.28, TLS 1.2):
 *   - servers (RPC listener, tensor-stream listener) require a client
 *     certificate that the CA signed (auth mode REQUIRED) and present the
 *     process's certificate;
 *   - clients (RPC dialer, tensor-stream dialer) check the server's
 *     certificate against the CA and against the host name of the URL
 *     they dial (server_name is always set: NNG skips the name check when
 *     a configuration has none), and present the process's certificate.
 * Peers must be named by DNS names: mbedTLS 2.28 does not match IP
 * subjectAltNames, so a tls+tcp URL with an IP literal host is refused.
 *
 * Servers and clients take their configuration from their options or,
 * when none is given, from the process default (tf_tls_set_default, which
 * the daemons and tfctl set from the cluster spec). NNG 1.5.2 does not
 * tell a listener the name in a client's certificate: TLS authenticates
 * "signed by the cluster CA", not which task or client is calling. */
#ifndef TF_TRANSPORT_TLS_H
#define TF_TRANSPORT_TLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <nng/nng.h>
#include <nng/supplemental/tls/tls.h>

#include "tf/status.h"

typedef struct tf_tls_config tf_tls_config;

/* Reads ca_file (one or more PEM CA certificates) and cert_key_file (PEM:
 * the certificate, any intermediate certificates, and the private key,
 * unencrypted; NULL: no certificate, for a client that presents none).
 * Errors name the file: NOT_FOUND "TLS CA file '<path>': no such file",
 * PERMISSION_DENIED for unreadable files, INVALID_ARGUMENT for a file
 * that is not PEM, holds no certificate or no key, cannot be parsed
 * (mbedTLS's reason), or whose key does not match its certificate. The
 * result is counted (tf_tls_config_hold / tf_tls_config_free). */
tf_code tf_tls_config_load(const char *ca_file, const char *cert_key_file,
                           tf_tls_config **out, tf_status *st);
/* Takes one more reference; returns c. */
tf_tls_config *tf_tls_config_hold(tf_tls_config *c);
/* Drops a reference (the last frees it). NULL-safe. */
void tf_tls_config_free(tf_tls_config *c);

/* The files it was read from (cert_key_file "" when none). */
const char *tf_tls_config_ca_file(const tf_tls_config *c);
const char *tf_tls_config_cert_file(const tf_tls_config *c);
/* The own certificate's end of validity as "YYYY-MM-DD HH:MM:SS UTC" into
 * buf, and whether that time has passed; false with "" without a cert. */
bool tf_tls_config_expired(const tf_tls_config *c, char *buf, size_t size);

/* Sets the process default (a reference is taken; NULL clears it) used by
 * servers and clients whose options name no configuration. Set it before
 * starting them: servers and clients read it when they start. */
void tf_tls_set_default(tf_tls_config *c);
/* The default with a reference taken (tf_tls_config_free it), or NULL. */
tf_tls_config *tf_tls_default(void);

/* True for a tls+tcp:// URL. */
bool tf_tls_url(const char *url);

/* ---- internal to lib/transport ------------------------------------------ */

/* c, or the process default when c is NULL, with a reference; when there
 * is neither: FAILED_PRECONDITION "cannot <verb> <url>: no TLS
 * configuration (the cluster spec's tls: section, or --cert)". */
tf_code tf__tls_resolve(const tf_tls_config *c, const char *verb, const char *url,
                        tf_tls_config **out, tf_status *st);

/* A new NNG server configuration (client certificates REQUIRED, the CA,
 * the own certificate, which a server must have). */
tf_code tf__tls_server_nng(const tf_tls_config *c, const char *url,
                           nng_tls_config **out, tf_status *st);
/* OK when url's host (tls+tcp://host:port) is a DNS name; INVALID_ARGUMENT
 * "cannot dial <url>: a tls+tcp peer must be named by a DNS name ..." for
 * an IP address or an empty host. */
tf_code tf__tls_check_dial_url(const char *url, tf_status *st);
/* A new NNG client configuration for url (tls+tcp://host:port): the CA,
 * the own certificate if any, server_name = host. INVALID_ARGUMENT for an
 * IP literal host. */
tf_code tf__tls_client_nng(const tf_tls_config *c, const char *url,
                           nng_tls_config **out, tf_status *st);

/* True for the NNG errors a failed TLS handshake gives: NNG_ECRYPTO,
 * NNG_EPEERAUTH, and NNG_ECONNSHUT (the server closed the connection
 * during the handshake: it did not accept our certificate). */
bool tf__tls_handshake_error(int rv);
/* "TLS handshake failed (certificate not trusted, expired, or name
 * mismatch: <NNG's reason>)" into buf. */
void tf__tls_handshake_text(int rv, char *buf, size_t size);

/* One TLS connection to url with c (in the calling thread, at most
 * timeout_ms for the connect and as long for the handshake): 0 when the
 * handshake completed and the server spoke, else NNG's error
 * (tf__tls_handshake_error tells a refused certificate; NNG_EINVAL for a
 * URL tf__tls_client_nng refuses). */
int tf__tls_probe(const tf_tls_config *c, const char *url, int64_t timeout_ms);

/* Counts n failed server-side handshakes on listener url
 * (tf_rpc_tls_handshake_failures_total{listener=url}); returns whether the
 * caller should log them now: at most once per 10 s per key (a peer
 * address, or the URL when NNG does not tell the peer). */
bool tf__tls_count_failures(const char *url, const char *key, uint64_t n);
/* Failed handshakes counted on listener url so far (tests). */
uint64_t tf__tls_failures(const char *url);

/* An RPC listener's failed handshakes: NNG 1.5.2 gives a listener no
 * event for them, only its statistics ("auth" errors: NNG_ECRYPTO and
 * NNG_EPEERAUTH). A watch reads them when polled. */
typedef struct tf__tls_watch tf__tls_watch;
tf__tls_watch *tf__tls_watch_new(nng_listener l, const char *url);
/* Counts the failures since the last poll. Sets *log_now when the caller
 * should log (rate limited as above) and then returns the failures not
 * yet logged; else returns 0. */
uint64_t tf__tls_watch_poll(tf__tls_watch *w, bool *log_now);
void tf__tls_watch_free(tf__tls_watch *w); /* NULL-safe */

#endif
