/* Tests for mutual TLS on tls+tcp (lib/transport/tls.c, the RPC server and
 * client, the tensor stream): certificates are made at run time by
 * scripts/make-certs.sh in a temporary directory (a cluster CA with
 * certificates for "localhost" and "tfhost1" and a client certificate; a
 * foreign CA with its own; an expired "localhost" certificate from the
 * cluster CA). Checked: loading errors name the file (missing, not PEM,
 * no key, key of another certificate); a round trip over tls+tcp; refused
 * with UNAVAILABLE "TLS handshake failed": a client without a
 * certificate, with one from a foreign CA, with an expired one, a client
 * that trusts only a foreign CA, a server whose certificate names another
 * host, a server whose certificate expired; after each the server still
 * serves a good client, and the server counts the failures
 * (tf_rpc_tls_handshake_failures_total) and logs them rate-limited; a
 * dial_now client fails its first call at once; tensor-stream frames over
 * TLS arrive intact, and a foreign client's frame is refused. Every wait
 * is bounded. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "lib/transport/tls.h"
#include "tf/tls.h"
#include "test/unit/transport/rpc_testlib.h"
#include "test/unit/transport/tstream_testlib.h"

static char dir[64];

static void run(const char *cmd) {
  int rc = system(cmd);
  ck_assert_msg(rc == 0, "'%s' exited with %d", cmd, rc);
}

/* The certificates, made once before the tests (an unchecked fixture:
 * in the parent process, before each test's fork). */
static void make_certs(void) {
  snprintf(dir, sizeof dir, "/tmp/tf_tls_XXXXXX");
  ck_assert(mkdtemp(dir) != NULL);
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "scripts/make-certs.sh %s localhost tfhost1 >/dev/null && "
           "scripts/make-certs.sh --ca-name foreign-ca %s/foreign localhost >/dev/null && "
           "mkdir -p %s/expired && cp %s/ca.crt %s/ca.key %s/expired/ && "
           "scripts/make-certs.sh --expired %s/expired localhost >/dev/null",
           dir, dir, dir, dir, dir, dir, dir);
  run(cmd);
}

static void remove_certs(void) {
  if (dir[0] != '\0') {
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    run(cmd);
    dir[0] = '\0';
  }
}

/* A configuration from DIR/ca and DIR/cert (cert NULL: none). */
static tf_tls_config *cfg(const char *ca, const char *cert) {
  char a[256], b[256];
  snprintf(a, sizeof a, "%s/%s", dir, ca);
  snprintf(b, sizeof b, "%s/%s", dir, cert != NULL ? cert : "");
  tf_tls_config *c = NULL;
  tf_status st;
  tf_status_init(&st);
  ck_assert_msg(tf_tls_config_load(a, cert != NULL ? b : NULL, &c, &st) == TF_OK,
                "%s", st.msg);
  return c;
}

/* ---- loading ------------------------------------------------------------ */

static void load_fails(const char *ca, const char *cert, tf_code code,
                       const char *want1, const char *want2) {
  tf_tls_config *c = (tf_tls_config *)1;
  tf_status st;
  tf_status_init(&st);
  ck_assert_int_eq(tf_tls_config_load(ca, cert, &c, &st), code);
  ck_assert(c == NULL);
  ck_assert_msg(strstr(st.msg, want1) != NULL && strstr(st.msg, want2) != NULL,
                "'%s' lacks '%s' or '%s'", st.msg, want1, want2);
}

START_TEST(test_load_errors_name_the_file) {
  char ca[256], host[256], p[256], q[1024];
  tf_status st_;
  tf_status_init(&st_);
  snprintf(ca, sizeof ca, "%s/ca.crt", dir);
  snprintf(host, sizeof host, "%s/localhost.pem", dir);
  snprintf(p, sizeof p, "%s/none.pem", dir);
  load_fails(p, NULL, TF_NOT_FOUND, "TLS CA file '", "none.pem': cannot open");
  load_fails(ca, p, TF_NOT_FOUND, "TLS certificate file '", "none.pem'");
  snprintf(p, sizeof p, "%s/text.pem", dir);
  FILE *f = fopen(p, "w");
  fputs("hello\n", f);
  fclose(f);
  load_fails(p, NULL, TF_INVALID_ARGUMENT, "text.pem", "not a PEM file");
  load_fails(ca, p, TF_INVALID_ARGUMENT, "text.pem", "not a PEM file");
  /* the CA file without a certificate; a certificate without its key */
  snprintf(q, sizeof q, "sed -n '/BEGIN PRIVATE KEY/,$p' %s > %s/key.pem && "
           "sed '/BEGIN PRIVATE KEY/,$d' %s > %s/cert.pem", host, dir, host, dir);
  run(q);
  snprintf(p, sizeof p, "%s/key.pem", dir);
  load_fails(p, NULL, TF_INVALID_ARGUMENT, "key.pem", "no CERTIFICATE block");
  snprintf(p, sizeof p, "%s/cert.pem", dir);
  load_fails(ca, p, TF_INVALID_ARGUMENT, "cert.pem", "found 1 CERTIFICATE and 0 PRIVATE KEY");
  /* localhost's certificate with the client's key */
  snprintf(q, sizeof q, "sed -n '/BEGIN PRIVATE KEY/,$p' %s/client.pem | cat %s/cert.pem - "
           "> %s/mixed.pem", dir, dir, dir);
  run(q);
  snprintf(p, sizeof p, "%s/mixed.pem", dir);
  load_fails(ca, p, TF_INVALID_ARGUMENT, "mixed.pem",
             "the private key does not match the certificate");
  /* the public call: an error leaves the configuration as it was */
  ck_assert_int_eq(tf_tls_use_files(ca, "/nonexistent/x.pem", &st_), TF_NOT_FOUND);
  ck_assert_msg(strstr(st_.msg, "'/nonexistent/x.pem'") != NULL, "%s", st_.msg);
  ck_assert_ptr_null(tf_tls_default());
  ck_assert_int_eq(tf_tls_use_files(ca, host, &st_), TF_OK);
  tf_tls_config *d = tf_tls_default();
  ck_assert_ptr_nonnull(d);
  ck_assert_str_eq(tf_tls_config_cert_file(d), host);
  tf_tls_config_free(d);
  tf_tls_set_default(NULL);
  /* validity dates are read */
  char when[64];
  tf_tls_config *c = cfg("ca.crt", "expired/localhost.pem");
  ck_assert(tf_tls_config_expired(c, when, sizeof when));
  ck_assert_str_eq(when, "2021-01-01 00:00:00 UTC");
  tf_tls_config_free(c);
  c = cfg("ca.crt", "localhost.pem");
  ck_assert(!tf_tls_config_expired(c, when, sizeof when));
  ck_assert_str_eq(tf_tls_config_cert_file(c), host);
  tf_tls_config_free(c);
}
END_TEST

/* ---- RPC ---------------------------------------------------------------- */

static atomic_int tls_logs;

static void count_log(void *arg, int prio, const char *msg) {
  if (strstr(msg, "TLS handshake") != NULL) {
    atomic_fetch_add(&tls_logs, 1);
  }
}

/* An echo server on tls+tcp://127.0.0.1:0 presenting DIR/cert; *url gets
 * tls+tcp://localhost:PORT. */
static tf_rpc_server *tls_server(const char *cert, char *url, size_t n) {
  tf_tls_config *c = cfg("ca.crt", cert);
  tf_rpc_server_options o;
  tf_rpc_server_options_init(&o, "tls+tcp://127.0.0.1:0");
  o.tls = c;
  o.log = count_log;
  o.idle_connection_ms = 400; /* the failure sweep runs every 100 ms */
  tf_rpc_server *s = NULL;
  tf_status st;
  tf_status_init(&st);
  ck_assert_msg(tf_rpc_server_start(&o, rt_nil_handler, NULL, &s, &st) == TF_OK,
                "%s", st.msg);
  tf_tls_config_free(c); /* the server keeps what it needs */
  ck_assert_int_gt(tf_rpc_server_port(s), 0);
  snprintf(url, n, "tls+tcp://localhost:%d", tf_rpc_server_port(s));
  return s;
}

static tf_rpc_client *tls_client(const char *url, const char *ca, const char *cert,
                                 bool dial_now) {
  tf_tls_config *c = cfg(ca, cert);
  tf_rpc_client_options o = {.url = url, .tls = c, .dial_now = dial_now};
  tf_rpc_client *cl = NULL;
  tf_status st;
  tf_status_init(&st);
  ck_assert_msg(tf_rpc_client_open(&o, &cl, &st) == TF_OK, "%s", st.msg);
  tf_tls_config_free(c);
  return cl;
}

static tf_code call(tf_rpc_client *c, int64_t ms, tf_status *st) {
  tf_wire_msg *r = NULL;
  tf_code code = tf_rpc_call(c, rt_request(RT_ECHO, 0, NULL, 0), ms, &r, st);
  tf_wire_msg_free(r);
  return code;
}

static void call_ok(tf_rpc_client *c) {
  tf_status st;
  tf_status_init(&st);
  ck_assert_msg(call(c, 5000, &st) == TF_OK, "%s", st.msg);
}

/* A client of (ca, cert) at url is refused: UNAVAILABLE naming the method,
 * the URL and the handshake, after the call's 1 s and one probe. */
static void refused(const char *url, const char *ca, const char *cert) {
  tf_rpc_client *c = tls_client(url, ca, cert, false);
  tf_status st;
  tf_status_init(&st);
  int64_t t0 = rt_now_ms();
  ck_assert_int_eq(call(c, 1000, &st), TF_UNAVAILABLE);
  /* the deadline, then one probe (connect and handshake, 1 s each at
   * most), with room for a sanitizer's slowdown */
  ck_assert_int_lt(rt_now_ms() - t0, 4500);
  char want[160];
  snprintf(want, sizeof want, "GetStatus to %s: TLS handshake failed (certificate "
           "not trusted, expired, or name mismatch: ", url);
  ck_assert_msg(strstr(st.msg, want) == st.msg, "%s (want '%s')", st.msg, want);
  tf_rpc_client_free(c);
}

START_TEST(test_rpc_round_trip_and_refusals) {
  char url[96];
  tf_rpc_server *s = tls_server("localhost.pem", url, sizeof url);
  char listen_url[96];
  snprintf(listen_url, sizeof listen_url, "tls+tcp://127.0.0.1:0");
  tf_rpc_client *good = tls_client(url, "ca.crt", "client.pem", false);
  call_ok(good);
  atomic_store(&tls_logs, 0);
  /* the server refuses these clients */
  refused(url, "ca.crt", NULL);
  call_ok(good);
  refused(url, "ca.crt", "foreign/client.pem");
  call_ok(good);
  refused(url, "ca.crt", "expired/localhost.pem");
  call_ok(good);
  /* the client refuses the server: it trusts another CA */
  refused(url, "foreign/ca.crt", "client.pem");
  call_ok(good);
  /* a fresh good client still gets in */
  tf_rpc_client *good2 = tls_client(url, "ca.crt", "client.pem", false);
  call_ok(good2);
  tf_rpc_client_free(good2);
  /* counted (from the listener's statistics, polled by the sweep) and
   * logged once: the failures come within 10 s of each other */
  int64_t end = rt_now_ms() + 5000;
  while (tf__tls_failures(listen_url) < 3 && rt_now_ms() < end) {
    rt_sleep_ms(20);
  }
  ck_assert_uint_ge(tf__tls_failures(listen_url), 3);
  /* once per 10 s: the refusals take about 4 s (2 s under a sanitizer's
   * slowdown could straddle a second window) */
  ck_assert_int_ge(atomic_load(&tls_logs), 1);
  ck_assert_int_le(atomic_load(&tls_logs), 2);
  tf_rpc_client_free(good);
  tf_rpc_server_stop(s);
}
END_TEST

START_TEST(test_rpc_server_certificate_checked) {
  char url[96], other[96];
  /* a certificate for tfhost1 at localhost: the name does not match */
  tf_rpc_server *s = tls_server("tfhost1.pem", url, sizeof url);
  refused(url, "ca.crt", "client.pem");
  tf_rpc_server_stop(s);
  /* an expired server certificate */
  s = tls_server("expired/localhost.pem", url, sizeof url);
  refused(url, "ca.crt", "client.pem");
  tf_rpc_server_stop(s);
  /* the same clients get in where the certificate is right */
  s = tls_server("localhost.pem", other, sizeof other);
  tf_rpc_client *c = tls_client(other, "ca.crt", "client.pem", false);
  call_ok(c);
  tf_rpc_client_free(c);
  tf_rpc_server_stop(s);
}
END_TEST

START_TEST(test_rpc_dial_now_fails_first_call_at_once) {
  char url[96];
  tf_rpc_server *s = tls_server("localhost.pem", url, sizeof url);
  tf_rpc_client *c = tls_client(url, "ca.crt", "foreign/client.pem", true);
  tf_status st;
  tf_status_init(&st);
  int64_t t0 = rt_now_ms();
  ck_assert_int_eq(call(c, 10000, &st), TF_UNAVAILABLE);
  ck_assert_int_lt(rt_now_ms() - t0, 2000);
  ck_assert_msg(strstr(st.msg, "TLS handshake failed") != NULL, "%s", st.msg);
  tf_rpc_client_free(c);
  c = tls_client(url, "ca.crt", "client.pem", true);
  call_ok(c);
  tf_rpc_client_free(c);
  tf_rpc_server_stop(s);
  /* nobody listening: dial_now says so at once */
  tf_tls_config *k = cfg("ca.crt", "client.pem");
  snprintf(url, sizeof url, "tls+tcp://localhost:%d", rt_free_port());
  tf_rpc_client_options o = {.url = url, .tls = k, .dial_now = true};
  ck_assert_int_eq(tf_rpc_client_open(&o, &c, &st), TF_UNAVAILABLE);
  ck_assert_msg(strstr(st.msg, "cannot connect to") != NULL, "%s", st.msg);
  /* without dial_now a call times out, saying why it is not connected */
  o.dial_now = false;
  ck_assert_int_eq(tf_rpc_client_open(&o, &c, &st), TF_OK);
  ck_assert_int_eq(call(c, 300, &st), TF_DEADLINE_EXCEEDED);
  ck_assert_msg(strstr(st.msg, "no reply within 300 ms (not connected: Connection refused)") !=
                    NULL, "%s", st.msg);
  tf_rpc_client_free(c);
  tf_tls_config_free(k);
}
END_TEST

START_TEST(test_rpc_process_default_and_ip_hosts) {
  tf_status st;
  tf_status_init(&st);
  tf_rpc_client *c = NULL;
  ck_assert_int_eq(tf_rpc_client_new("tls+tcp://localhost:1", 0, &c, &st),
                   TF_FAILED_PRECONDITION);
  ck_assert_msg(strstr(st.msg, "no TLS configuration") != NULL, "%s", st.msg);
  ck_assert_int_eq(tf_rpc_client_new("tls+tcp://[::1]:1", 0, &c, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "DNS name") != NULL, "%s", st.msg);
  tf_tls_config *k = cfg("ca.crt", "localhost.pem");
  tf_tls_set_default(k);
  tf_tls_config_free(k);
  tf_rpc_server_options o;
  tf_rpc_server_options_init(&o, "tls+tcp://127.0.0.1:0");
  tf_rpc_server *s = NULL;
  ck_assert_msg(tf_rpc_server_start(&o, rt_nil_handler, NULL, &s, &st) == TF_OK,
                "%s", st.msg);
  char url[96];
  snprintf(url, sizeof url, "tls+tcp://localhost:%d", tf_rpc_server_port(s));
  c = rt_client(url, 0);
  call_ok(c);
  tf_rpc_client_free(c);
  tf_rpc_server_stop(s);
  tf_tls_set_default(NULL);
  ck_assert_ptr_null(tf_tls_default());
}
END_TEST

/* ---- tensor stream ------------------------------------------------------ */

START_TEST(test_tensor_stream_over_tls) {
  sink k;
  sink_init(&k, true);
  tf_tls_config *sc = cfg("ca.crt", "localhost.pem");
  tf_tstream_server_opts o = server_opts(&k);
  o.url = "tls+tcp://127.0.0.1:0";
  o.tls = sc;
  tf_tstream_server *s = start_server(&o, &k);
  tf_tls_config_free(sc);
  ck_assert(strncmp(tf_tstream_server_url(s), "tls+tcp://127.0.0.1:", 20) == 0);
  char url[96];
  snprintf(url, sizeof url, "tls+tcp://localhost:%d", tf_tstream_server_port(s));
  tf_tls_config *cc = cfg("ca.crt", "client.pem");
  tf_tstream_client_opts co = tf_tstream_client_opts_default();
  co.tls = cc;
  tf_tstream_client *c = NULL;
  tf_status st;
  tf_status_init(&st);
  ck_assert_msg(tf_tstream_client_new(url, &co, &c, &st) == TF_OK, "%s", st.msg);
  tf_tls_config_free(cc);
  tf_tensor *t = tt_rand(TF_FLOAT32, tf_shape_of(2, 64, 129), -1, 1);
  tf_tstream_hdr h = hdr(1, "a");
  ck_assert_msg(send_sync(c, &h, t, &st) == TF_OK, "%s", st.msg);
  sink_wait(&k, 1);
  ck_assert(tf_tensor_equal(k.v[0].t, t));
  /* a client with a certificate from a foreign CA */
  tf_tls_config *fc = cfg("ca.crt", "foreign/client.pem");
  co.tls = fc;
  tf_tstream_client *bad = NULL;
  ck_assert_msg(tf_tstream_client_new(url, &co, &bad, &st) == TF_OK, "%s", st.msg);
  tf_tls_config_free(fc);
  h = hdr(1, "b");
  ck_assert_int_eq(send_sync(bad, &h, t, &st), TF_UNAVAILABLE);
  ck_assert_msg(strstr(st.msg, "TLS handshake failed") != NULL, "%s", st.msg);
  tf_tstream_client_free(bad);
  /* counted and logged by the server, which still serves the good one */
  int64_t end = now_ms() + WAIT_MS;
  while (tf__tls_failures(tf_tstream_server_url(s)) < 1 && now_ms() < end) {
    sleep_ms(10);
  }
  ck_assert_uint_eq(tf__tls_failures(tf_tstream_server_url(s)), 1);
  ck_assert_msg(strstr(k.last_log, "TLS handshake with 127.0.0.1:") != NULL, "%s",
                k.last_log);
  h = hdr(1, "c");
  ck_assert_msg(send_sync(c, &h, t, &st) == TF_OK, "%s", st.msg);
  sink_wait(&k, 2);
  ck_assert_int_eq(k.n, 2);
  tf_tensor_unref(t);
  tf_tstream_client_free(c);
  tf_tstream_server_stop(s);
  sink_fini(&k);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("tls");
  TCase *tc = tcase_create("tls");
  tcase_set_timeout(tc, 60);
  tcase_add_unchecked_fixture(tc, make_certs, remove_certs);
  tcase_add_test(tc, test_load_errors_name_the_file);
  tcase_add_test(tc, test_rpc_round_trip_and_refusals);
  tcase_add_test(tc, test_rpc_server_certificate_checked);
  tcase_add_test(tc, test_rpc_dial_now_fails_first_call_at_once);
  tcase_add_test(tc, test_rpc_process_default_and_ip_hosts);
  tcase_add_test(tc, test_tensor_stream_over_tls);
  suite_add_tcase(s, tc);
  return s;
}
