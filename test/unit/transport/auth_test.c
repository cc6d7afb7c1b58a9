/* Tests for message authentication (lib/transport/auth.h) and the RPC
 * server and client using it:
 * - the tag is HMAC-SHA256(key, prefix[0..64) || message), recomputed with
 *   OpenSSL's one-shot HMAC() (another code path than the keyed contexts);
 * - a flipped bit anywhere, an unknown key, a stale or future timestamp,
 *   a replayed nonce and a truncated prefix are refused, each with its
 *   reason; replies must echo their request's nonce and key;
 * - key files: mode 0600 required, hex only, generate never overwrites;
 * - the replay cache remembers every nonce of its window, and under a
 *   flood forgets old ones only by raising its floor;
 * - over RPC (inproc and tcp): a signed round trip; unsigned, wrong-key
 *   and replayed requests refused with UNAUTHENTICATED and counted; a
 *   read-only key refused a client method with PERMISSION_DENIED; a
 *   signing client against a server without authentication is told so.
 * Random keys and messages come from tt_rng (seed printed by testutil). */
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nng/nng.h>
#include <nng/protocol/reqrep0/req.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "lib/core/base/metrics.h"
#include "lib/transport/auth.h"
#include "lib/transport/auth_replay.h"
#include "test/unit/transport/rpc_testlib.h"

static void rand_bytes(uint8_t *b, size_t n) {
  for (size_t i = 0; i < n; i++) {
    b[i] = (uint8_t)tt_rand_u64();
  }
}

static tf_auth *ring(int n_keys, const tf_auth_role *roles, uint8_t keys[][32]) {
  tf_auth *a;
  tf_status st;
  ck_assert(tf_auth_new(30000, &a, &st) == TF_OK);
  for (int i = 0; i < n_keys; i++) {
    ck_assert_msg(tf_auth_add_key(a, keys[i], 32, roles[i], "k", &st) == TF_OK, "%s", st.msg);
  }
  return a;
}

static int64_t wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

START_TEST(test_tag_is_hmac_sha256_and_every_bit_counts) {
  uint8_t key[1][32];
  rand_bytes(key[0], 32);
  tf_auth_role role = TF_AUTH_ROLE_TASK;
  tf_auth *a = ring(1, &role, key);
  size_t n = 1 + (size_t)(tt_rand_u64() % 3000);
  uint8_t *buf = malloc(TF_AUTH_PREFIX_BYTES + n);
  rand_bytes(buf + TF_AUTH_PREFIX_BYTES, n);
  uint8_t nonce[16];
  tf_auth_sign(a, 0, NULL, buf + TF_AUTH_PREFIX_BYTES, n, buf, nonce);
  /* independent: one-shot HMAC over prefix[0..64) || message */
  uint8_t *joined = malloc(64 + n), ref[32];
  memcpy(joined, buf, 64);
  memcpy(joined + 64, buf + TF_AUTH_PREFIX_BYTES, n);
  unsigned rn = 0;
  ck_assert(HMAC(EVP_sha256(), key[0], 32, joined, 64 + n, ref, &rn) != NULL && rn == 32);
  ck_assert_mem_eq(ref, buf + 64, 32);
  ck_assert_mem_eq(nonce, buf + 24, 16);
  /* one flipped bit at a random place (prefix or message) is refused */
  for (int trial = 0; trial < 32; trial++) {
    size_t at = (size_t)(tt_rand_u64() % (TF_AUTH_PREFIX_BYTES + n));
    if (at < 4) {
      at = 8; /* the magic: not "signed" at all; covered below */
    }
    uint8_t *bad = malloc(TF_AUTH_PREFIX_BYTES + n);
    memcpy(bad, buf, TF_AUTH_PREFIX_BYTES + n);
    bad[at] ^= (uint8_t)(1u << (tt_rand_u64() % 8));
    tf_auth_ctx ctx;
    tf_status st;
    tf_auth_failure f = tf_auth_verify_request(a, bad, TF_AUTH_PREFIX_BYTES + n, &ctx, &st);
    ck_assert_msg(f != TF_AUTH_OK, "bit flip at %zu accepted", at);
    ck_assert_int_eq(st.code, TF_UNAUTHENTICATED);
    free(bad);
  }
  tf_auth_ctx ctx;
  tf_status st;
  ck_assert_int_eq(tf_auth_verify_request(a, buf, TF_AUTH_PREFIX_BYTES + n, &ctx, &st),
                   TF_AUTH_OK);
  ck_assert_int_eq(ctx.role, TF_AUTH_ROLE_TASK);
  ck_assert_mem_eq(ctx.nonce, nonce, 16);
  /* the same bytes again: a replay */
  ck_assert_int_eq(tf_auth_verify_request(a, buf, TF_AUTH_PREFIX_BYTES + n, &ctx, &st),
                   TF_AUTH_REPLAY);
  ck_assert_ptr_nonnull(strstr(st.msg, "seen before"));
  free(joined);
  free(buf);
  tf_auth_free(a);
}
END_TEST

START_TEST(test_refusals_name_their_reason) {
  uint8_t keys[2][32];
  rand_bytes(keys[0], 32);
  rand_bytes(keys[1], 32);
  tf_auth_role roles[] = {TF_AUTH_ROLE_TASK, TF_AUTH_ROLE_READONLY};
  tf_auth *server = ring(2, roles, keys);
  tf_auth *ro = ring(1, &roles[1], &keys[1]);
  uint8_t other_key[1][32];
  rand_bytes(other_key[0], 32);
  tf_auth *stranger = ring(1, roles, other_key);
  const uint8_t msg[] = "TFW\x01 a message";
  uint8_t buf[TF_AUTH_PREFIX_BYTES + sizeof msg];
  memcpy(buf + TF_AUTH_PREFIX_BYTES, msg, sizeof msg);
  tf_auth_ctx ctx;
  tf_status st;
  /* unsigned */
  ck_assert_int_eq(tf_auth_verify_request(server, msg, sizeof msg, &ctx, &st), TF_AUTH_UNSIGNED);
  ck_assert_ptr_nonnull(strstr(st.msg, "not signed"));
  /* another cluster's key */
  tf_auth_sign(stranger, 0, NULL, msg, sizeof msg, buf, NULL);
  ck_assert_int_eq(tf_auth_verify_request(server, buf, sizeof buf, &ctx, &st),
                   TF_AUTH_UNKNOWN_KEY);
  ck_assert_ptr_nonnull(strstr(st.msg, "not one of this task's keys"));
  /* stale and future timestamps (window 30 s) */
  int64_t now = wall_ms();
  tf__auth_sign_at(ro, 0, NULL, msg, sizeof msg, buf, NULL, now - 31000);
  ck_assert_int_eq(tf_auth_verify_request(server, buf, sizeof buf, &ctx, &st), TF_AUTH_STALE);
  ck_assert_ptr_nonnull(strstr(st.msg, "behind"));
  tf__auth_sign_at(ro, 0, NULL, msg, sizeof msg, buf, NULL, now + 31000);
  ck_assert_int_eq(tf_auth_verify_request(server, buf, sizeof buf, &ctx, &st), TF_AUTH_STALE);
  ck_assert_ptr_nonnull(strstr(st.msg, "ahead of"));
  /* within the window: the read-only role */
  tf__auth_sign_at(ro, 0, NULL, msg, sizeof msg, buf, NULL, now - 20000);
  ck_assert_int_eq(tf_auth_verify_request(server, buf, sizeof buf, &ctx, &st), TF_AUTH_OK);
  ck_assert_int_eq(ctx.role, TF_AUTH_ROLE_READONLY);
  ck_assert_int_eq(ctx.key, 1);
  /* a truncated prefix; a reply sent as a request */
  ck_assert_int_eq(tf_auth_verify_request(server, buf, 40, &ctx, &st), TF_AUTH_MALFORMED);
  uint8_t req_nonce[16] = {1};
  tf_auth_sign(ro, 0, req_nonce, msg, sizeof msg, buf, NULL);
  ck_assert_int_eq(tf_auth_verify_request(server, buf, sizeof buf, &ctx, &st),
                   TF_AUTH_MALFORMED);
  /* replies: the right nonce and key only */
  ck_assert_int_eq(tf_auth_verify_reply(ro, 0, req_nonce, buf, sizeof buf, &st), TF_OK);
  uint8_t wrong[16] = {2};
  ck_assert_int_eq(tf_auth_verify_reply(ro, 0, wrong, buf, sizeof buf, &st), TF_UNAUTHENTICATED);
  ck_assert_int_eq(tf_auth_verify_reply(ro, 0, req_nonce, msg, sizeof msg, &st),
                   TF_UNAUTHENTICATED);
  ck_assert_ptr_nonnull(strstr(st.msg, "not signed"));
  tf_auth_free(server);
  tf_auth_free(ro);
  tf_auth_free(stranger);
}
END_TEST

START_TEST(test_roles_of_methods) {
  ck_assert_int_eq(tf_auth_method_role(TF_M_GET_STATUS, false), TF_AUTH_ROLE_READONLY);
  ck_assert_int_eq(tf_auth_method_role(TF_M_GET_STATUS, true), TF_AUTH_ROLE_READONLY);
  ck_assert_int_eq(tf_auth_method_role(TF_M_REGISTER_GRAPH, false), TF_AUTH_ROLE_TASK);
  ck_assert_int_eq(tf_auth_method_role(TF_M_WORKER_RESET, false), TF_AUTH_ROLE_TASK);
  ck_assert_int_eq(tf_auth_method_role(TF_M_CLUSTER_STATUS, true), TF_AUTH_ROLE_READONLY);
  ck_assert_int_eq(tf_auth_method_role(TF_M_LIST_JOBS, true), TF_AUTH_ROLE_READONLY);
  ck_assert_int_eq(tf_auth_method_role(TF_M_JOB_LOGS, true), TF_AUTH_ROLE_READONLY);
  ck_assert_int_eq(tf_auth_method_role(TF_M_SUBMIT_JOB, true), TF_AUTH_ROLE_CLIENT);
  ck_assert_int_eq(tf_auth_method_role(TF_M_JOB_CONTROL, true), TF_AUTH_ROLE_CLIENT);
  ck_assert_int_eq(tf_auth_method_role(TF_M_RESET, true), TF_AUTH_ROLE_CLIENT);
  ck_assert_int_eq(tf_auth_method_role(TF_M_RUN_STEP, true), TF_AUTH_ROLE_CLIENT);
  ck_assert_int_eq(tf_auth_method_role(999, true), TF_AUTH_ROLE_TASK);
}
END_TEST

static char *temp_path(const char *name) {
  static char dir[64];
  if (dir[0] == '\0') {
    snprintf(dir, sizeof dir, "/tmp/tf_auth_test_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
  }
  char *p = malloc(strlen(dir) + strlen(name) + 2);
  sprintf(p, "%s/%s", dir, name);
  return p;
}

START_TEST(test_key_files) {
  char *k = temp_path("a.key");
  unlink(k);
  tf_status st;
  ck_assert_int_eq(tf_auth_key_file_generate(k, &st), TF_OK);
  struct stat sb;
  ck_assert_int_eq(stat(k, &sb), 0);
  ck_assert_int_eq(sb.st_mode & 0777, 0600);
  ck_assert_int_eq(sb.st_size, 65);
  ck_assert_int_eq(tf_auth_key_file_generate(k, &st), TF_ALREADY_EXISTS);
  tf_auth *a;
  ck_assert(tf_auth_new(30000, &a, &st) == TF_OK);
  ck_assert_int_eq(tf_auth_add_key_file(a, k, TF_AUTH_ROLE_TASK, &st), TF_OK);
  ck_assert_int_eq(tf_auth_add_key_file(a, k, TF_AUTH_ROLE_CLIENT, &st), TF_OK);
  ck_assert_int_eq(tf_auth_n_keys(a), 1); /* the same key once */
  chmod(k, 0644);
  ck_assert_int_eq(tf_auth_add_key_file(a, k, TF_AUTH_ROLE_TASK, &st), TF_PERMISSION_DENIED);
  ck_assert_ptr_nonnull(strstr(st.msg, "readable by others (mode 0644): chmod 600"));
  char *bad = temp_path("bad.key");
  unlink(bad);
  int fd = open(bad, O_WRONLY | O_CREAT | O_EXCL, 0600);
  ck_assert(write(fd, "abcd\n", 5) == 5);
  close(fd);
  ck_assert_int_eq(tf_auth_add_key_file(a, bad, TF_AUTH_ROLE_TASK, &st), TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "hex digits"));
  unlink(bad);
  fd = open(bad, O_WRONLY | O_CREAT | O_EXCL, 0600);
  char text[70];
  memset(text, 'a', 64);
  text[10] = 'x';
  ck_assert(write(fd, text, 64) == 64);
  close(fd);
  ck_assert_int_eq(tf_auth_add_key_file(a, bad, TF_AUTH_ROLE_TASK, &st), TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "character 11 is not a hex digit"));
  char *none = temp_path("none.key");
  ck_assert_int_eq(tf_auth_add_key_file(a, none, TF_AUTH_ROLE_TASK, &st), TF_NOT_FOUND);
  unlink(k);
  unlink(bad);
  free(k);
  free(bad);
  free(none);
  tf_auth_free(a);
}
END_TEST

START_TEST(test_replay_cache_window_and_floor) {
  tf__replay r;
  tf__replay_init(&r, 1000, 64);
  uint8_t n[200][16];
  for (int i = 0; i < 200; i++) {
    rand_bytes(n[i], 16);
  }
  int64_t t = 1000000;
  for (int i = 0; i < 50; i++) {
    ck_assert(tf__replay_admit(&r, n[i], t, t));
  }
  for (int i = 0; i < 50; i++) {
    ck_assert(!tf__replay_admit(&r, n[i], t, t + 500));
  }
  /* two generations later, still remembered; the third forgets */
  ck_assert(tf__replay_admit(&r, n[50], t + 1000, t + 1000));
  ck_assert(tf__replay_admit(&r, n[51], t + 2000, t + 2000));
  ck_assert(!tf__replay_admit(&r, n[0], t, t + 2000));
  ck_assert(tf__replay_admit(&r, n[52], t + 3000, t + 3000));
  /* the first generation is gone, but its timestamps are below the floor */
  ck_assert(!tf__replay_admit(&r, n[0], t, t + 3000));
  ck_assert_int_ge(r.floor_ms, t);
  /* a flood: every fresh nonce admitted exactly once, none twice */
  int admitted = 0;
  for (int i = 60; i < 200; i++) {
    admitted += tf__replay_admit(&r, n[i], t + 3001 + i, t + 3001);
  }
  ck_assert_int_gt(admitted, 100);
  for (int i = 60; i < 200; i++) {
    ck_assert(!tf__replay_admit(&r, n[i], t + 3001 + i, t + 3002));
  }
  tf__replay_fini(&r);
}
END_TEST

/* ---- over RPC ------------------------------------------------------------- */

static tf_rpc_server *auth_server(const char *url, tf_auth *a, bool master) {
  tf_rpc_server_options o;
  tf_rpc_server_options_init(&o, url);
  o.auth = a;
  o.auth_master = master;
  tf_rpc_server *s;
  tf_status st;
  ck_assert_msg(tf_rpc_server_start(&o, rt_nil_handler, NULL, &s, &st) == TF_OK, "%s", st.msg);
  return s;
}

static tf_code call_with(const char *url, tf_auth *a, int method, tf_status *st) {
  tf_rpc_client_options o = {.url = url, .auth = a};
  tf_rpc_client *c;
  ck_assert(tf_rpc_client_open(&o, &c, st) == TF_OK);
  tf_wire_header h = {.version = TF_WIRE_VERSION, .method = method,
                      .request_id = tf_rpc_new_request_id()};
  nng_msg *m;
  ck_assert(tf_wire_finish(tf_wire_writer_new(&h), &m, st) == TF_OK);
  tf_wire_msg *r = NULL;
  tf_code code = tf_rpc_call(c, m, 3000, &r, st);
  tf_wire_msg_free(r);
  tf_rpc_client_free(c);
  return code;
}

static void rpc_auth(const char *url) {
  uint8_t keys[3][32];
  for (int i = 0; i < 3; i++) {
    rand_bytes(keys[i], 32);
  }
  tf_auth_role roles[] = {TF_AUTH_ROLE_TASK, TF_AUTH_ROLE_READONLY, TF_AUTH_ROLE_TASK};
  tf_auth *server_ring = ring(2, roles, keys);
  tf_auth *task = ring(1, &roles[0], &keys[0]);
  tf_auth *ro = ring(1, &roles[1], &keys[1]);
  tf_auth *stranger = ring(1, &roles[2], &keys[2]);
  tf_rpc_server *s = auth_server(url, server_ring, true);
  char tcp[64];
  if (strncmp(url, "tcp", 3) == 0) {
    rt_tcp_url(s, tcp, sizeof tcp);
    url = tcp;
  }
  tf_status st;
  ck_assert_msg(call_with(url, task, TF_M_SUBMIT_JOB, &st) == TF_OK, "%s", st.msg);
  ck_assert_msg(call_with(url, ro, TF_M_LIST_JOBS, &st) == TF_OK, "%s", st.msg);
  ck_assert_int_eq(call_with(url, ro, TF_M_SUBMIT_JOB, &st), TF_PERMISSION_DENIED);
  ck_assert_ptr_nonnull(strstr(st.msg, "SubmitJob"));
  ck_assert_ptr_nonnull(strstr(st.msg, "needs a client key"));
  ck_assert_int_eq(call_with(url, NULL, TF_M_LIST_JOBS, &st), TF_UNAUTHENTICATED);
  ck_assert_ptr_nonnull(strstr(st.msg, "not signed"));
  ck_assert_int_eq(call_with(url, stranger, TF_M_LIST_JOBS, &st), TF_UNAUTHENTICATED);
  ck_assert_ptr_nonnull(strstr(st.msg, "not one of this task's keys"));
  ck_assert_uint_eq(tf_rpc_server_auth_refused(s), 3);
  ck_assert_uint_eq(tf_rpc_server_served(s), 2);
  /* a captured signed request sent again: refused as a replay */
  nng_socket sock;
  ck_assert_int_eq(nng_req0_open(&sock), 0);
  ck_assert_int_eq(nng_dial(sock, url, NULL, 0), 0);
  nng_socket_set_ms(sock, NNG_OPT_RECVTIMEO, 3000);
  tf_wire_header h = {.version = TF_WIRE_VERSION, .method = TF_M_LIST_JOBS};
  nng_msg *m;
  ck_assert(tf_wire_finish(tf_wire_writer_new(&h), &m, &st) == TF_OK);
  uint8_t prefix[TF_AUTH_PREFIX_BYTES];
  tf_auth_sign(ro, 0, NULL, nng_msg_body(m), nng_msg_len(m), prefix, NULL);
  ck_assert_int_eq(nng_msg_insert(m, prefix, sizeof prefix), 0);
  for (int i = 0; i < 2; i++) {
    nng_msg *copy, *reply;
    ck_assert_int_eq(nng_msg_dup(&copy, m), 0);
    ck_assert_int_eq(nng_sendmsg(sock, copy, 0), 0);
    ck_assert_int_eq(nng_recvmsg(sock, &reply, 0), 0);
    bool is_signed = tf_auth_is_signed(nng_msg_body(reply), nng_msg_len(reply));
    if (is_signed) {
      nng_msg_trim(reply, TF_AUTH_PREFIX_BYTES);
    }
    tf_wire_msg *r;
    ck_assert(tf_wire_parse(reply, &r, &st) == TF_OK);
    ck_assert_int_eq(r->h.code, i == 0 ? TF_OK : TF_UNAUTHENTICATED);
    ck_assert(is_signed == (i == 0));
    if (i == 1) {
      ck_assert_ptr_nonnull(strstr(r->h.error, "seen before"));
    }
    tf_wire_msg_free(r);
  }
  nng_msg_free(m);
  nng_close(sock);
  tf_rpc_server_stop(s);
  /* every refusal is in the metrics, by reason */
  char *text = NULL;
  size_t tlen = 0;
  tf_metrics_render(tf_metrics_global(), &text, &tlen);
  static const char *const reasons[] = {"unsigned", "unknown_key", "role", "replay"};
  for (int i = 0; i < 4; i++) {
    char head[96];
    snprintf(head, sizeof head, "tf_rpc_auth_failures_total{reason=\"%s\"}", reasons[i]);
    ck_assert_msg(tt_line_value(text, head) >= 1, "%s in\n%s", head, text);
  }
  free(text);
  /* a signing client against a server that does not authenticate */
  tf_rpc_server *plain = auth_server(strncmp(url, "tcp", 3) == 0 ? "tcp://127.0.0.1:0"
                                                                 : "inproc://auth_plain",
                                     NULL, true);
  if (strncmp(url, "tcp", 3) == 0) {
    rt_tcp_url(plain, tcp, sizeof tcp);
  }
  const char *purl = strncmp(url, "tcp", 3) == 0 ? tcp : "inproc://auth_plain";
  ck_assert_int_eq(call_with(purl, task, TF_M_LIST_JOBS, &st), TF_UNAUTHENTICATED);
  ck_assert_msg(strstr(st.msg, "not signed") != NULL, "%s", st.msg);
  tf_rpc_server_stop(plain);
  tf_auth_free(server_ring);
  tf_auth_free(task);
  tf_auth_free(ro);
  tf_auth_free(stranger);
}

START_TEST(test_rpc_inproc) { rpc_auth("inproc://auth_rpc"); }
END_TEST

START_TEST(test_rpc_tcp) { rpc_auth("tcp://127.0.0.1:0"); }
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("auth");
  TCase *tc = tcase_create("auth");
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, test_tag_is_hmac_sha256_and_every_bit_counts);
  tcase_add_test(tc, test_refusals_name_their_reason);
  tcase_add_test(tc, test_roles_of_methods);
  tcase_add_test(tc, test_key_files);
  tcase_add_test(tc, test_replay_cache_window_and_floor);
  tcase_add_test(tc, test_rpc_inproc);
  tcase_add_test(tc, test_rpc_tcp);
  suite_add_tcase(s, tc);
  return s;
}
