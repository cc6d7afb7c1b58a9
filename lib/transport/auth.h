/* auth.h: message authentication with shared keys (docs/security.md,
 * docs/wire.md "Authentication").
 *
 * A signed message is a 96-byte auth prefix followed by the message it
 * signs (an RPC envelope "TFW...", or a tensor-stream hello):
 *   0  "TFA" 0x01                 magic and version
 *   4  flags u8 (bit 0: a reply), 3 zero bytes
 *   8  key id (8 bytes)           which key signed it
 *   16 timestamp u64 LE           the sender's Unix time in ms
 *   24 nonce (16 random bytes)
 *   40 request nonce (16 bytes)   a reply: its request's nonce; else zero
 *   56 8 zero bytes
 *   64 tag (32 bytes)             HMAC-SHA256(key, bytes 0..64 || message)
 * A receiver checks the tag (in constant time) before it reads anything
 * else, then, for a request, that its timestamp is within window_ms of its
 * own clock and that its nonce was not seen before (a replay cache whose
 * memory is capped: past the cap, the oldest nonces are forgotten and
 * requests no newer than the newest forgotten one are refused). A reply
 * must echo its request's nonce, so it cannot be replayed to another call.
 *
 * A key is at least 32 random bytes, kept as hex in a file that only its
 * owner may read (tf_auth_key_file_generate writes one). Each key has a
 * role: a task key allows every RPC, a client key the master's client
 * RPCs, a read-only key only those that change nothing
 * (tf_auth_method_role). HMAC-SHA256 is OpenSSL's (libcrypto). */
#ifndef TF_TRANSPORT_AUTH_H
#define TF_TRANSPORT_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tf/status.h"

#define TF_AUTH_PREFIX_BYTES 96
#define TF_AUTH_NONCE_BYTES 16
#define TF_AUTH_KEY_ID_BYTES 8
#define TF_AUTH_MIN_KEY_BYTES 32
#define TF_AUTH_MAX_KEY_BYTES 128
#define TF_AUTH_DEFAULT_WINDOW_MS 30000

/* What a key allows, in increasing order: each role may do what the
 * roles below it may. */
typedef enum tf_auth_role {
  TF_AUTH_ROLE_NONE = 0,     /* nothing (no valid signature) */
  TF_AUTH_ROLE_READONLY = 1, /* status, devices, health, jobs, logs */
  TF_AUTH_ROLE_CLIENT = 2,   /* + sessions, steps, submit, control, reset */
  TF_AUTH_ROLE_TASK = 3,     /* + the worker RPCs between tasks */
} tf_auth_role;

/* "read-only", "client", "task" ("none" for NONE). */
const char *tf_auth_role_name(tf_auth_role r);

/* The least role that may call method (tf_method) on a server: the master
 * (is_master) or a worker. GetStatus is READONLY everywhere; the master's
 * ListDevices, ClusterStatus, ListJobs, JobStatus, JobLogs and
 * JobCheckpoints are READONLY, its other methods CLIENT; every other worker
 * method (and any unknown method) is TASK. */
tf_auth_role tf_auth_method_role(int method, bool is_master);

/* A keyring: the keys a process signs with and accepts, and the replay
 * cache of the requests it accepted. Thread-safe once built. */
typedef struct tf_auth tf_auth;

/* An empty keyring with the given replay window (ms, in [1000, 3600000]).
 * INVALID_ARGUMENT naming window_ms otherwise. */
tf_code tf_auth_new(int64_t window_ms, tf_auth **out, tf_status *st);
void tf_auth_free(tf_auth *a);

/* Adds the key in file path with role. The first key added is the one the
 * process signs its own requests with. The file must be a regular file
 * that neither its group nor others may read or write (PERMISSION_DENIED
 * "key file F is readable by others (mode 0644): chmod 600 F") holding
 * 64 to 256 hex digits (surrounding white space ignored); INVALID_ARGUMENT
 * naming the file otherwise, NOT_FOUND when it does not exist. A key
 * already in the ring (the same bytes) keeps its first role and is not
 * added twice. */
tf_code tf_auth_add_key_file(tf_auth *a, const char *path, tf_auth_role role,
                             tf_status *st);
/* Adds key[0..n) (TF_AUTH_MIN_KEY_BYTES..TF_AUTH_MAX_KEY_BYTES) with role;
 * name is how errors and logs name it. */
tf_code tf_auth_add_key(tf_auth *a, const uint8_t *key, size_t n,
                        tf_auth_role role, const char *name, tf_status *st);
int tf_auth_n_keys(const tf_auth *a);
/* The replay window in ms. */
int64_t tf_auth_window_ms(const tf_auth *a);

/* Writes a new random key (32 bytes, as 64 hex digits and a newline) to
 * path, created with mode 0600; fails (ALREADY_EXISTS) when path exists,
 * never overwriting it. */
tf_code tf_auth_key_file_generate(const char *path, tf_status *st);

/* What verifying a request learned: the key's role and index, and the
 * request's nonce (a reply echoes it). */
typedef struct tf_auth_ctx {
  tf_auth_role role;
  int key;                 /* index in the keyring, -1: none */
  uint8_t nonce[TF_AUTH_NONCE_BYTES];
} tf_auth_ctx;

/* Why a request was refused: a label for metrics ("unsigned",
 * "unknown_key", "bad_signature", "stale", "replay", "malformed"). */
typedef enum tf_auth_failure {
  TF_AUTH_OK = 0,
  TF_AUTH_UNSIGNED,
  TF_AUTH_MALFORMED,
  TF_AUTH_UNKNOWN_KEY,
  TF_AUTH_BAD_SIGNATURE,
  TF_AUTH_STALE,
  TF_AUTH_REPLAY,
} tf_auth_failure;
const char *tf_auth_failure_label(tf_auth_failure f);

/* True when buf starts with an auth prefix's magic ("TFA" 0x01). */
bool tf_auth_is_signed(const uint8_t *buf, size_t len);

/* Signs the message msg[0..n) into prefix (TF_AUTH_PREFIX_BYTES, written
 * in full) with the keyring's key `key` (0: the first), a fresh nonce and
 * the current time. req_nonce: NULL for a request (*nonce_out gets its
 * nonce when non-NULL), the request's nonce for a reply. */
void tf_auth_sign(const tf_auth *a, int key, const uint8_t *req_nonce,
                  const uint8_t *msg, size_t n, uint8_t *prefix,
                  uint8_t *nonce_out);

/* tf_auth_sign with the timestamp ts_ms instead of the clock (tests). */
void tf__auth_sign_at(const tf_auth *a, int key, const uint8_t *req_nonce,
                      const uint8_t *msg, size_t n, uint8_t *prefix,
                      uint8_t *nonce_out, int64_t ts_ms);

/* Checks the request buf[0..len) (prefix and message): its tag, window and
 * nonce (then remembered). On success fills ctx and returns TF_AUTH_OK;
 * otherwise UNAUTHENTICATED in st with what was wrong (no secret in it).
 * Thread-safe. */
tf_auth_failure tf_auth_verify_request(tf_auth *a, const uint8_t *buf,
                                       size_t len, tf_auth_ctx *ctx,
                                       tf_status *st);

/* Checks a reply buf[0..len) to a request signed with key `key` and
 * nonce req_nonce: a prefix marked as a reply, signed with that key, that
 * echoes req_nonce. UNAUTHENTICATED otherwise. */
tf_code tf_auth_verify_reply(const tf_auth *a, int key,
                             const uint8_t *req_nonce, const uint8_t *buf,
                             size_t len, tf_status *st);

/* Counts one refused request in tf_rpc_auth_failures_total{reason}:
 * reason is a tf_auth_failure_label or "role". */
void tf_auth_count_refusal(const char *reason);

/* ---- tensor-stream connections ------------------------------------------ */

/* A tensor-stream connection starts with a hello: an auth prefix over the
 * 8 bytes "TFSHELLO" (TF_AUTH_HELLO_BYTES in all), checked by the server
 * like a request (window, replay) and requiring a task key. The frames
 * after it are not signed one by one (docs/security.md). */
#define TF_AUTH_HELLO_BYTES (TF_AUTH_PREFIX_BYTES + 8)
void tf_auth_hello_sign(const tf_auth *a, uint8_t *hello);
/* TF_AUTH_OK or why the hello is refused (st: UNAUTHENTICATED or
 * PERMISSION_DENIED for a key that is not a task key; then "role"). */
tf_auth_failure tf_auth_hello_verify(tf_auth *a, const uint8_t *hello, bool *role_refused,
                                     tf_status *st);

/* ---- the process's credentials ----------------------------------------- */

/* The keyring this process's RPC clients sign with, and its servers
 * accept, when their options name none: set once by a daemon or a tool at
 * start (the keyring must outlive every client and server), NULL: none
 * (messages are not signed and servers accept unsigned requests). */
void tf_auth_set_process(tf_auth *a);
tf_auth *tf_auth_process(void);

#endif
