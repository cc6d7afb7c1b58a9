/* auth.c: keys, signatures and their checks (auth.h). HMAC-SHA256, the
 * constant-time compare and the nonces (RAND_bytes) are OpenSSL's; keys
 * come from getrandom(2). */
#include "lib/transport/auth.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "lib/core/base/metrics.h"
#include "lib/core/base/util.h"
#include "lib/transport/auth_replay.h"
#include "lib/transport/wire.h"

#define MAX_KEYS 8
#define TAG_OFF 64
#define TAG_BYTES 32
/* Nonces one generation of the replay cache holds at most: 3 generations
 * of 2^18 take at most 36 MiB. */
#define REPLAY_PER_GEN (1u << 18)
#define POOL_MAX 32 /* idle HMAC contexts kept per key */

static const uint8_t MAGIC[4] = {'T', 'F', 'A', 1};

typedef struct auth_key {
  uint8_t id[TF_AUTH_KEY_ID_BYTES];
  uint8_t bytes[TF_AUTH_MAX_KEY_BYTES];
  size_t n;
  tf_auth_role role;
  char name[256];
  EVP_MAC_CTX *mac; /* keyed: the template of the contexts below */
  /* Keyed contexts not in use (a cache, mutable also through a const
   * keyring): a context is re-initialised with its key for each message
   * instead of copied from the template, which would allocate. */
  pthread_mutex_t pool_mu;
  EVP_MAC_CTX *pool[POOL_MAX];
  int n_pool;
} auth_key;

struct tf_auth {
  auth_key keys[MAX_KEYS];
  int n_keys;
  int64_t window_ms;
  EVP_MAC *hmac;
  pthread_mutex_t mu; /* the replay cache */
  tf__replay replay;
};

const char *tf_auth_role_name(tf_auth_role r) {
  switch (r) {
  case TF_AUTH_ROLE_READONLY:
    return "read-only";
  case TF_AUTH_ROLE_CLIENT:
    return "client";
  case TF_AUTH_ROLE_TASK:
    return "task";
  default:
    return "none";
  }
}

tf_auth_role tf_auth_method_role(int method, bool is_master) {
  if (method == TF_M_GET_STATUS) {
    return TF_AUTH_ROLE_READONLY;
  }
  if (!is_master) {
    return TF_AUTH_ROLE_TASK;
  }
  switch (method) {
  case TF_M_LIST_DEVICES:
  case TF_M_CLUSTER_STATUS:
  case TF_M_LIST_JOBS:
  case TF_M_JOB_STATUS:
  case TF_M_JOB_LOGS:
  case TF_M_JOB_CHECKPOINTS:
    return TF_AUTH_ROLE_READONLY;
  case TF_M_CREATE_SESSION:
  case TF_M_EXTEND_SESSION:
  case TF_M_RUN_STEP:
  case TF_M_CLOSE_SESSION:
  case TF_M_RESET:
  case TF_M_KEEP_ALIVE:
  case TF_M_SUBMIT_JOB:
  case TF_M_JOB_CONTROL:
    return TF_AUTH_ROLE_CLIENT;
  default:
    return TF_AUTH_ROLE_TASK;
  }
}

const char *tf_auth_failure_label(tf_auth_failure f) {
  static const char *const names[] = {"ok", "unsigned", "malformed", "unknown_key",
                                      "bad_signature", "stale", "replay"};
  return (unsigned)f < sizeof names / sizeof names[0] ? names[f] : "unknown";
}

tf_code tf_auth_new(int64_t window_ms, tf_auth **out, tf_status *st) {
  *out = NULL;
  if (window_ms < 1000 || window_ms > 3600000) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "auth window_ms must be in [1000, 3600000] (got %lld)",
                         (long long)window_ms);
  }
  EVP_MAC *hmac = EVP_MAC_fetch(NULL, "HMAC", NULL);
  if (hmac == NULL) {
    return tf_status_set(st, TF_INTERNAL, "OpenSSL has no HMAC");
  }
  tf_auth *a = tf__xcalloc(1, sizeof *a);
  a->window_ms = window_ms;
  a->hmac = hmac;
  pthread_mutex_init(&a->mu, NULL);
  tf__replay_init(&a->replay, window_ms, REPLAY_PER_GEN);
  *out = a;
  return TF_OK;
}

void tf_auth_free(tf_auth *a) {
  if (a == NULL) {
    return;
  }
  for (int i = 0; i < a->n_keys; i++) {
    for (int j = 0; j < a->keys[i].n_pool; j++) {
      EVP_MAC_CTX_free(a->keys[i].pool[j]);
    }
    pthread_mutex_destroy(&a->keys[i].pool_mu);
    EVP_MAC_CTX_free(a->keys[i].mac);
    OPENSSL_cleanse(a->keys[i].bytes, sizeof a->keys[i].bytes);
  }
  EVP_MAC_free(a->hmac);
  tf__replay_fini(&a->replay);
  pthread_mutex_destroy(&a->mu);
  free(a);
}

int tf_auth_n_keys(const tf_auth *a) { return a->n_keys; }
int64_t tf_auth_window_ms(const tf_auth *a) { return a->window_ms; }

/* The key's id: the first 8 bytes of SHA-256("tf-auth-key-id" || key). */
static void key_id(const uint8_t *key, size_t n, uint8_t *id) {
  static const char label[] = "tf-auth-key-id";
  uint8_t d[32];
  unsigned dn = 0;
  EVP_MD_CTX *md = EVP_MD_CTX_new();
  TF_ASSERT(md != NULL && EVP_DigestInit_ex(md, EVP_sha256(), NULL) == 1);
  EVP_DigestUpdate(md, label, sizeof label - 1);
  EVP_DigestUpdate(md, key, n);
  EVP_DigestFinal_ex(md, d, &dn);
  EVP_MD_CTX_free(md);
  memcpy(id, d, TF_AUTH_KEY_ID_BYTES);
}

tf_code tf_auth_add_key(tf_auth *a, const uint8_t *key, size_t n,
                        tf_auth_role role, const char *name, tf_status *st) {
  if (n < TF_AUTH_MIN_KEY_BYTES || n > TF_AUTH_MAX_KEY_BYTES) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "key %s has %zu bytes; a key has %d to %d", name, n,
                         TF_AUTH_MIN_KEY_BYTES, TF_AUTH_MAX_KEY_BYTES);
  }
  for (int i = 0; i < a->n_keys; i++) {
    if (a->keys[i].n == n && CRYPTO_memcmp(a->keys[i].bytes, key, n) == 0) {
      return TF_OK;
    }
  }
  if (a->n_keys == MAX_KEYS) {
    return tf_status_set(st, TF_RESOURCE_EXHAUSTED, "more than %d keys", MAX_KEYS);
  }
  auth_key *k = &a->keys[a->n_keys];
  memcpy(k->bytes, key, n);
  k->n = n;
  k->role = role;
  snprintf(k->name, sizeof k->name, "%s", name);
  key_id(key, n, k->id);
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA256", 0),
      OSSL_PARAM_construct_end()};
  k->mac = EVP_MAC_CTX_new(a->hmac);
  if (k->mac == NULL || EVP_MAC_init(k->mac, key, n, params) != 1) {
    EVP_MAC_CTX_free(k->mac);
    k->mac = NULL;
    return tf_status_set(st, TF_INTERNAL, "cannot set up HMAC-SHA256 for key %s", name);
  }
  pthread_mutex_init(&k->pool_mu, NULL);
  k->n_pool = 0;
  a->n_keys++;
  return TF_OK;
}

static int hexval(int c) {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  c |= 0x20;
  return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Reads the key file (at most 1 KiB) into text, checking its mode. */
static tf_code read_key_file(const char *path, char *text, size_t cap, tf_status *st) {
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    return tf_status_set(st, errno == ENOENT ? TF_NOT_FOUND : TF_PERMISSION_DENIED,
                         "cannot read key file %s: %s", path, strerror(errno));
  }
  struct stat sb;
  tf_code c = TF_OK;
  if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    c = tf_status_set(st, TF_INVALID_ARGUMENT, "key file %s is not a regular file", path);
  } else if ((sb.st_mode & 077) != 0) {
    c = tf_status_set(st, TF_PERMISSION_DENIED,
                      "key file %s is %s by others (mode %04o): chmod 600 %s", path,
                      (sb.st_mode & 044) != 0 ? "readable" : "writable",
                      (unsigned)(sb.st_mode & 07777), path);
  } else {
    ssize_t n = read(fd, text, cap - 1);
    if (n < 0 || (size_t)n == cap - 1) {
      c = tf_status_set(st, TF_INVALID_ARGUMENT, "key file %s: %s", path,
                        n < 0 ? strerror(errno) : "longer than a key");
    } else {
      text[n] = '\0';
    }
  }
  close(fd);
  return c;
}

tf_code tf_auth_add_key_file(tf_auth *a, const char *path, tf_auth_role role,
                             tf_status *st) {
  char text[1024];
  if (read_key_file(path, text, sizeof text, st) != TF_OK) {
    return st->code;
  }
  const char *p = text, *end = text + strlen(text);
  while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) {
    p++;
  }
  while (end > p && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\n' || end[-1] == '\r')) {
    end--;
  }
  size_t digits = (size_t)(end - p);
  uint8_t key[TF_AUTH_MAX_KEY_BYTES];
  tf_code c = TF_OK;
  if (digits % 2 != 0 || digits < 2 * TF_AUTH_MIN_KEY_BYTES ||
      digits > 2 * TF_AUTH_MAX_KEY_BYTES) {
    c = tf_status_set(st, TF_INVALID_ARGUMENT,
                      "key file %s: expected %d to %d hex digits, got %zu characters "
                      "(tfctl keygen FILE writes a key)",
                      path, 2 * TF_AUTH_MIN_KEY_BYTES, 2 * TF_AUTH_MAX_KEY_BYTES, digits);
  }
  for (size_t i = 0; c == TF_OK && i < digits / 2; i++) {
    int hi = hexval((unsigned char)p[2 * i]), lo = hexval((unsigned char)p[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      c = tf_status_set(st, TF_INVALID_ARGUMENT,
                        "key file %s: character %zu is not a hex digit", path,
                        2 * i + (hi < 0 ? 1 : 2));
    } else {
      key[i] = (uint8_t)((unsigned)hi << 4 | (unsigned)lo);
    }
  }
  if (c == TF_OK) {
    c = tf_auth_add_key(a, key, digits / 2, role, path, st);
  }
  OPENSSL_cleanse(text, sizeof text);
  OPENSSL_cleanse(key, sizeof key);
  return c;
}

tf_code tf_auth_key_file_generate(const char *path, tf_status *st) {
  uint8_t key[32];
  if (getrandom(key, sizeof key, 0) != (ssize_t)sizeof key) {
    return tf_status_set(st, TF_INTERNAL, "getrandom: %s", strerror(errno));
  }
  char text[2 * sizeof key + 2];
  for (size_t i = 0; i < sizeof key; i++) {
    snprintf(text + 2 * i, 3, "%02x", key[i]);
  }
  text[2 * sizeof key] = '\n';
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  tf_code c = TF_OK;
  if (fd < 0) {
    c = tf_status_set(st, errno == EEXIST ? TF_ALREADY_EXISTS : TF_PERMISSION_DENIED,
                      "cannot create key file %s: %s", path, strerror(errno));
  } else if (write(fd, text, sizeof text - 1) != (ssize_t)(sizeof text - 1) ||
             fsync(fd) != 0) {
    c = tf_status_set(st, TF_INTERNAL, "cannot write key file %s: %s", path,
                      strerror(errno));
    unlink(path);
  }
  if (fd >= 0) {
    close(fd);
  }
  OPENSSL_cleanse(key, sizeof key);
  OPENSSL_cleanse(text, sizeof text);
  return c;
}

bool tf_auth_is_signed(const uint8_t *buf, size_t len) {
  return len >= sizeof MAGIC && memcmp(buf, MAGIC, sizeof MAGIC) == 0;
}

static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void put_u64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) {
    p[i] = (uint8_t)(v >> (8 * i));
  }
}

static uint64_t get_u64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) {
    v |= (uint64_t)p[i] << (8 * i);
  }
  return v;
}

/* HMAC(k, prefix[0..64) || msg[0..n)) into tag, on a pooled context. */
static void mac(const auth_key *ck, const uint8_t *prefix, const uint8_t *msg, size_t n,
                uint8_t *tag) {
  auth_key *k = (auth_key *)ck; /* the pool only */
  pthread_mutex_lock(&k->pool_mu);
  EVP_MAC_CTX *c = k->n_pool > 0 ? k->pool[--k->n_pool] : NULL;
  pthread_mutex_unlock(&k->pool_mu);
  if (c == NULL) {
    c = EVP_MAC_CTX_dup(k->mac);
    TF_ASSERT(c != NULL);
  }
  size_t out = 0;
  /* A NULL key re-initialises with the context's own key. */
  TF_ASSERT(EVP_MAC_init(c, NULL, 0, NULL) == 1);
  EVP_MAC_update(c, prefix, TAG_OFF);
  EVP_MAC_update(c, msg, n);
  EVP_MAC_final(c, tag, &out, TAG_BYTES);
  pthread_mutex_lock(&k->pool_mu);
  if (k->n_pool < POOL_MAX) {
    k->pool[k->n_pool++] = c;
    c = NULL;
  }
  pthread_mutex_unlock(&k->pool_mu);
  EVP_MAC_CTX_free(c);
}

void tf_auth_sign(const tf_auth *a, int key, const uint8_t *req_nonce,
                  const uint8_t *msg, size_t n, uint8_t *prefix,
                  uint8_t *nonce_out) {
  tf__auth_sign_at(a, key, req_nonce, msg, n, prefix, nonce_out, now_ms());
}

void tf__auth_sign_at(const tf_auth *a, int key, const uint8_t *req_nonce,
                      const uint8_t *msg, size_t n, uint8_t *prefix,
                      uint8_t *nonce_out, int64_t ts_ms) {
  TF_ASSERT(key >= 0 && key < a->n_keys);
  const auth_key *k = &a->keys[key];
  memset(prefix, 0, TF_AUTH_PREFIX_BYTES);
  memcpy(prefix, MAGIC, sizeof MAGIC);
  prefix[4] = req_nonce != NULL ? 1 : 0;
  memcpy(prefix + 8, k->id, TF_AUTH_KEY_ID_BYTES);
  put_u64(prefix + 16, (uint64_t)ts_ms);
  TF_ASSERT(RAND_bytes(prefix + 24, TF_AUTH_NONCE_BYTES) == 1); /* OpenSSL's DRBG */
  if (req_nonce != NULL) {
    memcpy(prefix + 40, req_nonce, TF_AUTH_NONCE_BYTES);
  }
  if (nonce_out != NULL) {
    memcpy(nonce_out, prefix + 24, TF_AUTH_NONCE_BYTES);
  }
  mac(k, prefix, msg, n, prefix + TAG_OFF);
}

/* The key that signed buf (its tag checked), or -1 with st set. */
static int check_tag(const tf_auth *a, const uint8_t *buf, size_t len,
                     tf_auth_failure *why, tf_status *st) {
  int ki = -1;
  for (int i = 0; i < a->n_keys; i++) {
    if (memcmp(a->keys[i].id, buf + 8, TF_AUTH_KEY_ID_BYTES) == 0) {
      ki = i;
    }
  }
  if (ki < 0) {
    *why = TF_AUTH_UNKNOWN_KEY;
    tf_status_set(st, TF_UNAUTHENTICATED,
                  "signed with key id %016llx, which is not one of this task's keys (a "
                  "key of another cluster?)",
                  (unsigned long long)__builtin_bswap64(get_u64(buf + 8)));
    return -1;
  }
  uint8_t tag[TAG_BYTES];
  mac(&a->keys[ki], buf, buf + TF_AUTH_PREFIX_BYTES, len - TF_AUTH_PREFIX_BYTES, tag);
  if (CRYPTO_memcmp(tag, buf + TAG_OFF, TAG_BYTES) != 0) {
    *why = TF_AUTH_BAD_SIGNATURE;
    tf_status_set(st, TF_UNAUTHENTICATED,
                  "the signature does not verify (a wrong key, or the message was altered)");
    return -1;
  }
  return ki;
}

static tf_auth_failure malformed(tf_status *st, const char *what) {
  tf_status_set(st, TF_UNAUTHENTICATED, "%s", what);
  return TF_AUTH_MALFORMED;
}

tf_auth_failure tf_auth_verify_request(tf_auth *a, const uint8_t *buf,
                                       size_t len, tf_auth_ctx *ctx,
                                       tf_status *st) {
  ctx->role = TF_AUTH_ROLE_NONE;
  ctx->key = -1;
  if (!tf_auth_is_signed(buf, len)) {
    tf_status_set(st, TF_UNAUTHENTICATED,
                  "the request is not signed, and this task accepts only requests signed "
                  "with a cluster key (tfctl --key FILE; docs/security.md)");
    return TF_AUTH_UNSIGNED;
  }
  if (len < TF_AUTH_PREFIX_BYTES) {
    return malformed(st, "the auth prefix is truncated");
  }
  if (buf[4] != 0) {
    return malformed(st, "a signed reply sent as a request");
  }
  tf_auth_failure why = TF_AUTH_OK;
  int ki = check_tag(a, buf, len, &why, st);
  if (ki < 0) {
    return why;
  }
  int64_t ts = (int64_t)get_u64(buf + 16), now = now_ms();
  int64_t skew = ts > now ? ts - now : now - ts;
  if (ts < 0 || skew > a->window_ms) {
    tf_status_set(st, TF_UNAUTHENTICATED,
                  "the request's timestamp is %lld ms %s this host's clock, outside the "
                  "window of %lld ms (auth.window_ms): a replayed request, or clocks out "
                  "of sync",
                  (long long)skew, ts > now ? "ahead of" : "behind", (long long)a->window_ms);
    return TF_AUTH_STALE;
  }
  pthread_mutex_lock(&a->mu);
  bool fresh = tf__replay_admit(&a->replay, buf + 24, ts, now);
  pthread_mutex_unlock(&a->mu);
  if (!fresh) {
    tf_status_set(st, TF_UNAUTHENTICATED,
                  "the request's nonce was seen before: a replayed request");
    return TF_AUTH_REPLAY;
  }
  ctx->key = ki;
  ctx->role = a->keys[ki].role;
  memcpy(ctx->nonce, buf + 24, TF_AUTH_NONCE_BYTES);
  return TF_AUTH_OK;
}

tf_code tf_auth_verify_reply(const tf_auth *a, int key,
                             const uint8_t *req_nonce, const uint8_t *buf,
                             size_t len, tf_status *st) {
  if (!tf_auth_is_signed(buf, len) || len < TF_AUTH_PREFIX_BYTES) {
    return tf_status_set(st, TF_UNAUTHENTICATED,
                         "the reply is not signed (the server does not use this "
                         "cluster's authentication)");
  }
  tf_auth_failure why;
  int ki = check_tag(a, buf, len, &why, st);
  if (ki < 0) {
    tf_status_prefix(st, "reply");
    return st->code;
  }
  if (ki != key || buf[4] != 1 ||
      CRYPTO_memcmp(buf + 40, req_nonce, TF_AUTH_NONCE_BYTES) != 0) {
    return tf_status_set(st, TF_UNAUTHENTICATED,
                         "the reply does not answer this request (another key or "
                         "nonce: a replayed reply?)");
  }
  return TF_OK;
}

static _Atomic(tf_auth *) process_auth;

void tf_auth_set_process(tf_auth *a) { atomic_store(&process_auth, a); }
tf_auth *tf_auth_process(void) { return atomic_load(&process_auth); }

static tf_metric_family *refusals;
static pthread_once_t refusals_once = PTHREAD_ONCE_INIT;

static void refusals_init(void) {
  refusals = tf_metrics_counter(
      "tf_rpc_auth_failures_total",
      "Requests and tensor-stream connections refused by authentication: unsigned, "
      "unknown key, bad signature, stale timestamp, replayed nonce, malformed prefix, or "
      "a role not allowed the method",
      "reason");
}

void tf_auth_count_refusal(const char *reason) {
  pthread_once(&refusals_once, refusals_init);
  tf_metric_add_u64(tf_metrics_series1(refusals, reason), 1);
}

static const uint8_t HELLO[8] = {'T', 'F', 'S', 'H', 'E', 'L', 'L', 'O'};

void tf_auth_hello_sign(const tf_auth *a, uint8_t *hello) {
  memcpy(hello + TF_AUTH_PREFIX_BYTES, HELLO, sizeof HELLO);
  tf_auth_sign(a, 0, NULL, hello + TF_AUTH_PREFIX_BYTES, sizeof HELLO, hello, NULL);
}

tf_auth_failure tf_auth_hello_verify(tf_auth *a, const uint8_t *hello, bool *role_refused,
                                     tf_status *st) {
  *role_refused = false;
  tf_auth_ctx ctx;
  tf_auth_failure why = tf_auth_verify_request(a, hello, TF_AUTH_HELLO_BYTES, &ctx, st);
  if (why != TF_AUTH_OK) {
    return why;
  }
  if (memcmp(hello + TF_AUTH_PREFIX_BYTES, HELLO, sizeof HELLO) != 0) {
    tf_status_set(st, TF_UNAUTHENTICATED, "a signed message that is not a tensor-stream hello");
    return TF_AUTH_MALFORMED;
  }
  if (ctx.role < TF_AUTH_ROLE_TASK) {
    *role_refused = true;
    tf_status_set(st, TF_PERMISSION_DENIED,
                  "the tensor stream takes only task keys; the hello was signed with a %s "
                  "key", tf_auth_role_name(ctx.role));
  }
  return TF_AUTH_OK;
}
