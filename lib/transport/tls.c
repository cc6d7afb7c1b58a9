/* tls.c: TLS configurations for the tls+tcp transport (tls.h): reading
 * and checking the PEM files once (mbedTLS parses them, so a bad file is
 * reported when it is loaded, naming it, not at the first handshake),
 * making NNG server and client configurations from them, mapping
 * handshake errors to words, and counting a listener's failed handshakes
 * (rate-limited log decisions, the NNG listener statistics watch). */
#include "lib/transport/tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mbedtls/error.h>
#include <mbedtls/pk.h>
#include <mbedtls/x509_crt.h>
#include <nng/supplemental/tls/tls.h>

#include "lib/core/base/metrics.h"
#include "lib/core/base/refcount.h"
#include "lib/core/base/util.h"
#include "tf/tls.h"

#define MAX_PEM_BYTES (1 << 20)
#define LOG_EVERY_MS 10000
#define LOG_KEYS 128

struct tf_tls_config {
  tf__refcount refs;
  char *ca_file, *cert_file;
  char *ca_pem;   /* every CERTIFICATE block of ca_file */
  char *cert_pem; /* the CERTIFICATE blocks of cert_key_file (NULL: none) */
  char *key_pem;  /* its PRIVATE KEY block */
  char not_after[40];
  bool expired;
};

/* ---- reading PEM files -------------------------------------------------- */

static tf_code read_pem_file(const char *what, const char *path, char **out,
                             tf_status *st) {
  *out = NULL;
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    int e = errno;
    return tf_status_set(st, e == ENOENT ? TF_NOT_FOUND
                             : e == EACCES ? TF_PERMISSION_DENIED : TF_INVALID_ARGUMENT,
                         "%s '%s': cannot open: %s", what, path, strerror(e));
  }
  char *buf = tf__xmalloc(MAX_PEM_BYTES + 1);
  size_t n = fread(buf, 1, MAX_PEM_BYTES + 1, f);
  int err = ferror(f) ? errno : 0;
  fclose(f);
  if (err != 0 || n > MAX_PEM_BYTES) {
    free(buf);
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s '%s': %s", what, path,
                         err != 0 ? strerror(err) : "larger than 1 MiB: not a PEM file");
  }
  buf[n] = '\0';
  if (strstr(buf, "-----BEGIN ") == NULL || strlen(buf) != n) {
    free(buf);
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s '%s': not a PEM file (no "
                         "'-----BEGIN' line)", what, path);
  }
  *out = buf;
  return TF_OK;
}

/* Appends to *acc every PEM block of pem whose label satisfies want (the
 * text between "-----BEGIN " and "-----"); returns how many. */
static int pem_blocks(const char *pem, bool (*want)(const char *label, size_t n),
                      char **acc) {
  int count = 0;
  const char *p = pem;
  while ((p = strstr(p, "-----BEGIN ")) != NULL) {
    const char *label = p + 11;
    const char *dash = strstr(label, "-----");
    const char *end = dash != NULL ? strstr(dash + 5, "-----END ") : NULL;
    const char *stop = end != NULL ? strstr(end + 9, "-----") : NULL;
    if (stop == NULL) {
      break;
    }
    stop += 5;
    if (want(label, (size_t)(dash - label))) {
      size_t have = *acc != NULL ? strlen(*acc) : 0, add = (size_t)(stop - p);
      *acc = tf__xrealloc(*acc, have + add + 2);
      memcpy(*acc + have, p, add);
      memcpy(*acc + have + add, "\n", 2);
      count++;
    }
    p = stop;
  }
  return count;
}

static bool is_cert(const char *label, size_t n) {
  return n == 11 && strncmp(label, "CERTIFICATE", 11) == 0;
}

static bool is_key(const char *label, size_t n) {
  return n >= 11 && strncmp(label + n - 11, "PRIVATE KEY", 11) == 0;
}

static void mbed_reason(int rv, char *buf, size_t size) {
  mbedtls_strerror(rv, buf, size);
}

/* ---- loading ------------------------------------------------------------ */

static tf_code load_ca(tf_tls_config *c, tf_status *st) {
  char *pem = NULL;
  tf_code code = read_pem_file("TLS CA file", c->ca_file, &pem, st);
  if (code != TF_OK) {
    return code;
  }
  int n = pem_blocks(pem, is_cert, &c->ca_pem);
  free(pem);
  if (n == 0) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "TLS CA file '%s': no "
                         "CERTIFICATE block", c->ca_file);
  }
  mbedtls_x509_crt crt;
  mbedtls_x509_crt_init(&crt);
  int rv = mbedtls_x509_crt_parse(&crt, (const unsigned char *)c->ca_pem,
                                  strlen(c->ca_pem) + 1);
  mbedtls_x509_crt_free(&crt);
  if (rv != 0) {
    char why[160];
    mbed_reason(rv, why, sizeof why);
    return tf_status_set(st, TF_INVALID_ARGUMENT, "TLS CA file '%s': %s%s",
                         c->ca_file, rv > 0 ? "some certificates cannot be parsed"
                                            : "cannot parse the certificate: ",
                         rv > 0 ? "" : why);
  }
  return TF_OK;
}

/* Parses the own certificate and key, checks that they match, and notes
 * the certificate's end of validity. */
static tf_code check_own(tf_tls_config *c, tf_status *st) {
  mbedtls_x509_crt crt;
  mbedtls_pk_context key;
  mbedtls_x509_crt_init(&crt);
  mbedtls_pk_init(&key);
  char why[160] = "";
  const char *bad = NULL;
  int rv = mbedtls_x509_crt_parse(&crt, (const unsigned char *)c->cert_pem,
                                  strlen(c->cert_pem) + 1);
  if (rv != 0) {
    bad = "cannot parse the certificate: ";
  } else if ((rv = mbedtls_pk_parse_key(&key, (const unsigned char *)c->key_pem,
                                        strlen(c->key_pem) + 1, NULL, 0)) != 0) {
    bad = "cannot parse the private key (encrypted keys are not supported): ";
  } else if ((rv = mbedtls_pk_check_pair(&crt.pk, &key)) != 0) {
    bad = "the private key does not match the certificate: ";
  } else {
    const mbedtls_x509_time *t = &crt.valid_to;
    snprintf(c->not_after, sizeof c->not_after, "%04d-%02d-%02d %02d:%02d:%02d UTC",
             t->year, t->mon, t->day, t->hour, t->min, t->sec);
    c->expired = mbedtls_x509_time_is_past(t) != 0;
  }
  if (bad != NULL) {
    mbed_reason(rv, why, sizeof why);
  }
  mbedtls_pk_free(&key);
  mbedtls_x509_crt_free(&crt);
  if (bad != NULL) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "TLS certificate file '%s': %s%s",
                         c->cert_file, bad, why);
  }
  return TF_OK;
}

static tf_code load_own(tf_tls_config *c, tf_status *st) {
  char *pem = NULL;
  tf_code code = read_pem_file("TLS certificate file", c->cert_file, &pem, st);
  if (code != TF_OK) {
    return code;
  }
  int certs = pem_blocks(pem, is_cert, &c->cert_pem);
  int keys = pem_blocks(pem, is_key, &c->key_pem);
  free(pem);
  if (certs == 0 || keys != 1) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "TLS certificate file '%s': "
                         "needs the certificate chain and one private key in one "
                         "PEM file (found %d CERTIFICATE and %d PRIVATE KEY blocks)",
                         c->cert_file, certs, keys);
  }
  if (strstr(c->key_pem, "ENCRYPTED") != NULL) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "TLS certificate file '%s': the "
                         "private key is encrypted (not supported: store it "
                         "unencrypted, readable only by the daemon's user)", c->cert_file);
  }
  return check_own(c, st);
}

static void config_release(void *arg) {
  tf_tls_config *c = arg;
  free(c->ca_file);
  free(c->cert_file);
  free(c->ca_pem);
  free(c->cert_pem);
  if (c->key_pem != NULL) {
    memset(c->key_pem, 0, strlen(c->key_pem));
  }
  free(c->key_pem);
  free(c);
}

tf_code tf_tls_config_load(const char *ca_file, const char *cert_key_file,
                           tf_tls_config **out, tf_status *st) {
  *out = NULL;
  if (ca_file == NULL || ca_file[0] == '\0') {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "TLS: a CA file is required");
  }
  tf_tls_config *c = tf__xcalloc(1, sizeof *c);
  tf__ref_init(&c->refs, 1);
  c->ca_file = tf__xstrdup(ca_file);
  c->cert_file = tf__xstrdup(cert_key_file != NULL ? cert_key_file : "");
  tf_code code = load_ca(c, st);
  if (code == TF_OK && c->cert_file[0] != '\0') {
    code = load_own(c, st);
  }
  if (code != TF_OK) {
    config_release(c);
    return code;
  }
  *out = c;
  return TF_OK;
}

tf_tls_config *tf_tls_config_hold(tf_tls_config *c) {
  tf__ref_get(&c->refs);
  return c;
}

void tf_tls_config_free(tf_tls_config *c) {
  if (c != NULL) {
    tf__ref_put(&c->refs, config_release, c);
  }
}

const char *tf_tls_config_ca_file(const tf_tls_config *c) { return c->ca_file; }
const char *tf_tls_config_cert_file(const tf_tls_config *c) { return c->cert_file; }

bool tf_tls_config_expired(const tf_tls_config *c, char *buf, size_t size) {
  snprintf(buf, size, "%s", c->not_after);
  return c->expired;
}

/* ---- the process default ------------------------------------------------ */

static pthread_mutex_t default_mu = PTHREAD_MUTEX_INITIALIZER;
static tf_tls_config *default_cfg;

void tf_tls_set_default(tf_tls_config *c) {
  if (c != NULL) {
    tf_tls_config_hold(c);
  }
  pthread_mutex_lock(&default_mu);
  tf_tls_config *old = default_cfg;
  default_cfg = c;
  pthread_mutex_unlock(&default_mu);
  tf_tls_config_free(old);
}

tf_tls_config *tf_tls_default(void) {
  pthread_mutex_lock(&default_mu);
  tf_tls_config *c = default_cfg != NULL ? tf_tls_config_hold(default_cfg) : NULL;
  pthread_mutex_unlock(&default_mu);
  return c;
}

tf_code tf_tls_use_files(const char *ca_file, const char *cert_key_file,
                         tf_status *st) {
  tf_tls_config *c = NULL;
  TF_TRY(tf_tls_config_load(ca_file, cert_key_file, &c, st));
  tf_tls_set_default(c);
  tf_tls_config_free(c);
  return TF_OK;
}

bool tf_tls_url(const char *url) {
  return url != NULL && strncmp(url, "tls+tcp://", 10) == 0;
}

tf_code tf__tls_resolve(const tf_tls_config *c, const char *verb, const char *url,
                        tf_tls_config **out, tf_status *st) {
  *out = c != NULL ? tf_tls_config_hold((tf_tls_config *)c) : tf_tls_default();
  if (*out == NULL) {
    return tf_status_set(st, TF_FAILED_PRECONDITION, "cannot %s %s: no TLS "
                         "configuration (the cluster spec's tls: section, or "
                         "--cert for tfctl)", verb, url);
  }
  return TF_OK;
}

/* ---- NNG configurations ------------------------------------------------- */

static tf_code nng_fail(nng_tls_config *cfg, int rv, const char *what,
                        const tf_tls_config *c, const char *url, tf_status *st) {
  nng_tls_config_free(cfg);
  return tf_status_set(st, TF_INVALID_ARGUMENT, "TLS for %s: cannot %s (CA '%s', "
                       "certificate '%s'): %s", url, what, c->ca_file,
                       c->cert_file, nng_strerror(rv));
}

tf_code tf__tls_server_nng(const tf_tls_config *c, const char *url,
                           nng_tls_config **out, tf_status *st) {
  *out = NULL;
  if (c->cert_pem == NULL) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "cannot listen on %s: the TLS "
                         "configuration has no certificate of its own", url);
  }
  nng_tls_config *cfg = NULL;
  int rv = nng_tls_config_alloc(&cfg, NNG_TLS_MODE_SERVER);
  if (rv != 0) {
    return tf_status_set(st, TF_RESOURCE_EXHAUSTED, "TLS for %s: %s", url,
                         nng_strerror(rv));
  }
  if ((rv = nng_tls_config_auth_mode(cfg, NNG_TLS_AUTH_MODE_REQUIRED)) != 0) {
    return nng_fail(cfg, rv, "require client certificates", c, url, st);
  }
  if ((rv = nng_tls_config_ca_chain(cfg, c->ca_pem, NULL)) != 0) {
    return nng_fail(cfg, rv, "set the CA", c, url, st);
  }
  if ((rv = nng_tls_config_own_cert(cfg, c->cert_pem, c->key_pem, NULL)) != 0) {
    return nng_fail(cfg, rv, "set the certificate", c, url, st);
  }
  *out = cfg;
  return TF_OK;
}

/* The host of tls+tcp://host:port (brackets of an IPv6 literal removed). */
static void url_host(const char *url, char *host, size_t size) {
  const char *h = url + 10;
  const char *colon = strrchr(h, ':');
  size_t n = colon != NULL ? (size_t)(colon - h) : strlen(h);
  if (n >= 2 && h[0] == '[' && h[n - 1] == ']') {
    h++;
    n -= 2;
  }
  snprintf(host, size, "%.*s", (int)TF_MIN(n, size - 1), h);
}

tf_code tf__tls_check_dial_url(const char *url, tf_status *st) {
  char host[256];
  unsigned char ip[16];
  url_host(url, host, sizeof host);
  if (host[0] == '\0' || inet_pton(AF_INET, host, ip) == 1 ||
      inet_pton(AF_INET6, host, ip) == 1) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "cannot dial %s: a tls+tcp peer "
                         "must be named by a DNS name (the name in its "
                         "certificate), not %s (mbedTLS 2.28 does not match IP "
                         "addresses in certificates)", url,
                         host[0] != '\0' ? "an IP address" : "an empty host");
  }
  return TF_OK;
}

tf_code tf__tls_client_nng(const tf_tls_config *c, const char *url,
                           nng_tls_config **out, tf_status *st) {
  *out = NULL;
  char host[256];
  TF_TRY(tf__tls_check_dial_url(url, st));
  url_host(url, host, sizeof host);
  nng_tls_config *cfg = NULL;
  int rv = nng_tls_config_alloc(&cfg, NNG_TLS_MODE_CLIENT);
  if (rv != 0) {
    return tf_status_set(st, TF_RESOURCE_EXHAUSTED, "TLS for %s: %s", url,
                         nng_strerror(rv));
  }
  if ((rv = nng_tls_config_auth_mode(cfg, NNG_TLS_AUTH_MODE_REQUIRED)) != 0) {
    return nng_fail(cfg, rv, "require server certificates", c, url, st);
  }
  if ((rv = nng_tls_config_ca_chain(cfg, c->ca_pem, NULL)) != 0) {
    return nng_fail(cfg, rv, "set the CA", c, url, st);
  }
  if (c->cert_pem != NULL &&
      (rv = nng_tls_config_own_cert(cfg, c->cert_pem, c->key_pem, NULL)) != 0) {
    return nng_fail(cfg, rv, "set the certificate", c, url, st);
  }
  /* Always: without it NNG does not check the server's name at all. */
  if ((rv = nng_tls_config_server_name(cfg, host)) != 0) {
    return nng_fail(cfg, rv, "set the server name", c, url, st);
  }
  *out = cfg;
  return TF_OK;
}

bool tf__tls_handshake_error(int rv) {
  return rv == NNG_ECRYPTO || rv == NNG_EPEERAUTH || rv == NNG_ECONNSHUT;
}

void tf__tls_handshake_text(int rv, char *buf, size_t size) {
  snprintf(buf, size, "TLS handshake failed (certificate not trusted, expired, "
           "or name mismatch: %s%s)", nng_strerror(rv),
           rv == NNG_ECONNSHUT ? "; the server closed the connection: it did "
           "not accept this client's certificate" : "");
}

/* ---- failed handshakes on listeners ------------------------------------- */

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
  char key[96];
  int64_t last_ns;
} logged[LOG_KEYS];

static tf_metric *failures_series(const char *url) {
  return tf_metrics_series1(
      tf_metrics_counter("tf_rpc_tls_handshake_failures_total",
                         "TLS handshakes that failed on a listener (RPC or tensor "
                         "stream): a peer without a certificate the cluster CA "
                         "signed, or one that did not trust ours", "listener"),
      url);
}

/* Whether key may be logged now (then its time is noted). Under log_mu. */
static bool log_due_locked(const char *key, int64_t now) {
  int slot = 0;
  for (int i = 0; i < LOG_KEYS; i++) {
    if (strncmp(logged[i].key, key, sizeof logged[i].key - 1) == 0) {
      if (now - logged[i].last_ns < (int64_t)LOG_EVERY_MS * 1000000) {
        return false;
      }
      slot = i;
      break;
    }
    if (logged[i].last_ns < logged[slot].last_ns) {
      slot = i; /* the oldest (or an empty) slot */
    }
  }
  snprintf(logged[slot].key, sizeof logged[slot].key, "%s", key);
  logged[slot].last_ns = now;
  return true;
}

bool tf__tls_count_failures(const char *url, const char *key, uint64_t n) {
  if (n == 0) {
    return false;
  }
  tf_metric_add_u64(failures_series(url), n);
  pthread_mutex_lock(&log_mu);
  bool due = log_due_locked(key, tf__now_ns());
  pthread_mutex_unlock(&log_mu);
  return due;
}

uint64_t tf__tls_failures(const char *url) {
  return (uint64_t)tf_metric_value(failures_series(url));
}

struct tf__tls_watch {
  nng_listener l;
  char *url;
  uint64_t seen;   /* failures counted so far */
  uint64_t unlogged;
};

tf__tls_watch *tf__tls_watch_new(nng_listener l, const char *url) {
  tf__tls_watch *w = tf__xcalloc(1, sizeof *w);
  w->l = l;
  w->url = tf__xstrdup(url);
  failures_series(url); /* the series exists (at 0) from the start */
  return w;
}

uint64_t tf__tls_watch_poll(tf__tls_watch *w, bool *log_now) {
  *log_now = false;
  nng_stat *root = NULL;
  if (nng_stats_get(&root) != 0) {
    return 0;
  }
  uint64_t total = w->seen;
  nng_stat *ls = nng_stat_find_listener(root, w->l);
  nng_stat *auth = ls != NULL ? nng_stat_find(ls, "auth") : NULL;
  if (auth != NULL) {
    total = nng_stat_value(auth);
  }
  nng_stats_free(root);
  uint64_t n = total > w->seen ? total - w->seen : 0;
  w->seen = total;
  w->unlogged += n;
  *log_now = tf__tls_count_failures(w->url, w->url, n);
  uint64_t report = *log_now ? w->unlogged : 0;
  if (*log_now) {
    w->unlogged = 0;
  }
  return report;
}

void tf__tls_watch_free(tf__tls_watch *w) {
  if (w != NULL) {
    free(w->url);
    free(w);
  }
}

/* ---- probing a server ---------------------------------------------------- */

/* Waits for aio (its timeout bounds the wait); returns its result. */
static int wait_op(nng_aio *aio) {
  nng_aio_wait(aio);
  return nng_aio_result(aio);
}

int tf__tls_probe(const tf_tls_config *c, const char *url, int64_t timeout_ms) {
  nng_tls_config *cfg = NULL;
  tf_status st;
  tf_status_init(&st);
  if (tf__tls_client_nng(c, url, &cfg, &st) != TF_OK) {
    return NNG_EINVAL;
  }
  nng_stream_dialer *d = NULL;
  nng_aio *aio = NULL;
  int rv = nng_stream_dialer_alloc(&d, url);
  if (rv == 0) {
    rv = nng_stream_dialer_set_ptr(d, NNG_OPT_TLS_CONFIG, cfg);
  }
  nng_tls_config_free(cfg);
  if (rv == 0) {
    rv = nng_aio_alloc(&aio, NULL, NULL);
  }
  if (rv == 0) {
    nng_aio_set_timeout(aio, (nng_duration)TF_MAX(1, TF_MIN(timeout_ms, INT32_MAX)));
    nng_stream_dialer_dial(d, aio);
    rv = wait_op(aio);
  }
  if (rv == 0) {
    /* Reading drives the handshake; an SP server then sends its header. */
    nng_stream *s = nng_aio_get_output(aio, 0);
    char b[8];
    nng_iov iov = {b, sizeof b};
    nng_aio_set_iov(aio, 1, &iov);
    nng_stream_recv(s, aio);
    rv = wait_op(aio);
    nng_stream_free(s);
  }
  nng_aio_free(aio);
  nng_stream_dialer_free(d);
  return rv;
}
