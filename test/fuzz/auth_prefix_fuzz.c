/* auth_prefix_fuzz.c: libFuzzer harness for the auth prefix a daemon
 * checks on every request and tensor-stream hello before anything else
 * (lib/transport/auth.h). The first byte picks the mode:
 * - even: the rest is a received request as is: it must be refused with
 *   UNAUTHENTICATED and a message (no input forges a tag for the fixed
 *   key without it), or be a valid signature that is then a replay;
 * - odd: the rest is a message that is signed here with the key, then
 *   (when the input is long enough) one byte of prefix or message chosen
 *   by the input is xor-ed with a non-zero value: the untouched message
 *   must verify once and then be refused as a replay, the altered one
 *   must be refused. Also run as a tensor-stream hello.
 * Replies are checked against the request's nonce the same ways. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/transport/auth.h"
#include "test/fuzz/fuzz_util.h"

static tf_auth *ring(void) {
  static tf_auth *a;
  if (a == NULL) {
    uint8_t key[32];
    for (int i = 0; i < 32; i++) {
      key[i] = (uint8_t)(i * 37 + 11);
    }
    tf_status st;
    if (tf_auth_new(30000, &a, &st) != TF_OK ||
        tf_auth_add_key(a, key, sizeof key, TF_AUTH_ROLE_TASK, "fuzz", &st) != TF_OK) {
      abort();
    }
  }
  return a;
}

static void refused(tf_auth_failure f, const tf_status *st) {
  FUZZ_CHECK(f != TF_AUTH_OK && st->code == TF_UNAUTHENTICATED && st->msg[0] != '\0', st);
}

static void signed_then_altered(const uint8_t *data, size_t size) {
  size_t n = size > 3 ? size - 3 : 0;
  const uint8_t *msg = data + 3;
  uint8_t *buf = malloc(TF_AUTH_PREFIX_BYTES + n + 1);
  if (n > 0) {
    memcpy(buf + TF_AUTH_PREFIX_BYTES, msg, n);
  }
  tf_auth_sign(ring(), 0, NULL, buf + TF_AUTH_PREFIX_BYTES, n, buf, NULL);
  size_t len = TF_AUTH_PREFIX_BYTES + n;
  size_t at = size >= 3 ? ((size_t)data[1] << 8 | data[2]) % len : 0;
  uint8_t flip = size >= 3 && data[1] != 0 ? data[1] : 0x5a;
  tf_status st;
  tf_auth_ctx ctx;
  uint8_t *bad = malloc(len);
  memcpy(bad, buf, len);
  bad[at] ^= flip;
  /* a flipped bit in the zero padding 5..8 or 56..64 still breaks the tag */
  refused(tf_auth_verify_request(ring(), bad, len, &ctx, &st), &st);
  tf_auth_failure f = tf_auth_verify_request(ring(), buf, len, &ctx, &st);
  FUZZ_CHECK(f == TF_AUTH_OK && ctx.role == TF_AUTH_ROLE_TASK, &st);
  FUZZ_CHECK(tf_auth_verify_request(ring(), buf, len, &ctx, &st) == TF_AUTH_REPLAY, &st);
  /* a reply to it, then the same reply to another nonce */
  uint8_t nonce[TF_AUTH_NONCE_BYTES];
  memcpy(nonce, buf + 24, sizeof nonce);
  tf_auth_sign(ring(), 0, nonce, buf + TF_AUTH_PREFIX_BYTES, n, buf, NULL);
  FUZZ_CHECK(tf_auth_verify_reply(ring(), 0, nonce, buf, len, &st) == TF_OK, &st);
  nonce[at % TF_AUTH_NONCE_BYTES] ^= flip;
  FUZZ_CHECK(tf_auth_verify_reply(ring(), 0, nonce, buf, len, &st) == TF_UNAUTHENTICATED, &st);
  free(bad);
  free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) {
    return 0;
  }
  tf_status st;
  tf_auth_ctx ctx;
  if ((data[0] & 1) == 0) {
    tf_auth_failure f = tf_auth_verify_request(ring(), data + 1, size - 1, &ctx, &st);
    if (f == TF_AUTH_OK) { /* only a real signature: then never twice */
      FUZZ_CHECK(tf_auth_verify_request(ring(), data + 1, size - 1, &ctx, &st) ==
                     TF_AUTH_REPLAY, &st);
    } else {
      refused(f, &st);
    }
    if (size - 1 >= TF_AUTH_HELLO_BYTES) {
      bool role = false;
      f = tf_auth_hello_verify(ring(), data + 1, &role, &st);
      FUZZ_CHECK(f != TF_AUTH_OK || st.code == TF_OK || role, &st);
    }
    FUZZ_CHECK(tf_auth_verify_reply(ring(), 0, data, data + 1, size - 1, &st) != TF_OK ||
                   size - 1 >= TF_AUTH_PREFIX_BYTES, &st);
    return 0;
  }
  signed_then_altered(data, size);
  return 0;
}
