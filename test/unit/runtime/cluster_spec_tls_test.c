/* Tests for the cluster spec's tls: section (cluster_spec.c) and loading
 * its files (cluster_spec_tls.c): the section is required by transport
 * tls+tcp and refused otherwise, its keys are checked with file:line:col,
 * tls+tcp hosts must be DNS names, relative paths are taken from the
 * spec's directory, the client takes client_cert_key_file (else
 * cert_key_file) and an override, and a bad file is reported with the
 * spec and the key it came from. Certificates come from
 * scripts/make-certs.sh in a temporary directory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/runtime/cluster_spec.h"
#include "lib/runtime/cluster_spec_reload.h"
#include "lib/runtime/cluster_spec_tls.h"
#include "test/unit/testutil.h"

#define TLS_JOBS "transport: tls+tcp\njobs: {master: ['localhost:7070']}\n"

/* The message of a spec that fails to parse (named d.yaml), "" if it parses. */
static const char *parse_msg(const char *text, tf_status *st) {
  tf_cluster_spec *s = NULL;
  tf_status_init(st);
  if (tf_cluster_spec_parse(text, strlen(text), "d.yaml", &s, st) == TF_OK) {
    tf_cluster_spec_free(s);
    return "";
  }
  ck_assert_int_eq(st->code, TF_INVALID_ARGUMENT);
  return st->msg;
}

START_TEST(test_section_checked) {
  tf_status st;
  ck_assert_str_eq(parse_msg(TLS_JOBS, &st),
                   "d.yaml:1:12: transport: tls+tcp needs a 'tls:' section with "
                   "ca_file and cert_key_file (docs/security.md)");
  ck_assert_str_eq(parse_msg("jobs: {master: ['h:1']}\ntls: {ca_file: a, cert_key_file: b}\n",
                             &st),
                   "d.yaml:2:6: tls: a 'tls:' section needs transport: tls+tcp (the "
                   "transport is tcp)");
  ck_assert_str_eq(parse_msg(TLS_JOBS "tls: {ca_file: a}\n", &st),
                   "d.yaml:3:6: tls: missing 'cert_key_file' (a PEM file: this "
                   "daemon's certificate and key)");
  ck_assert_str_eq(parse_msg(TLS_JOBS "tls: {cert_key_file: a}\n", &st),
                   "d.yaml:3:6: tls: missing 'ca_file' (a PEM file: the cluster CA)");
  ck_assert_str_eq(parse_msg(TLS_JOBS "tls: {ca_file: '', cert_key_file: b}\n", &st),
                   "d.yaml:3:16: tls.ca_file: expected a file path, got ''");
  ck_assert_str_eq(parse_msg(TLS_JOBS "tls: {ca_file: [a], cert_key_file: b}\n", &st),
                   "d.yaml:3:16: tls.ca_file: expected a file path, got a sequence");
  ck_assert_str_eq(parse_msg(TLS_JOBS "tls: {ca_file: a, cert_key_file: b, key: c}\n", &st),
                   "d.yaml:3:37: unknown key 'key' in 'tls' (expected ca_file, "
                   "cert_key_file, client_cert_key_file)");
  ck_assert_str_eq(parse_msg(TLS_JOBS "tls: [a]\n", &st),
                   "d.yaml:3:6: tls: expected a mapping, got a sequence");
  /* IP literals: certificates name hosts */
  const char *msg = parse_msg("transport: tls+tcp\njobs: {master: ['127.0.0.1:7070']}\n"
                              "tls: {ca_file: a, cert_key_file: b}\n", &st);
  ck_assert_msg(strstr(msg, "tls+tcp needs a DNS name as host, got '127.0.0.1:7070'") !=
                    NULL, "%s", msg);
  msg = parse_msg("transport: tls+tcp\njobs: {master: ['[::1]:7070']}\n"
                  "tls: {ca_file: a, cert_key_file: b}\n", &st);
  ck_assert_msg(strstr(msg, "needs a DNS name") != NULL, "%s", msg);
  ck_assert_str_eq(parse_msg(TLS_JOBS "tls: {ca_file: a, cert_key_file: b}\n", &st), "");
}
END_TEST

static char dir[64];

static void make_certs(void) {
  snprintf(dir, sizeof dir, "/tmp/tf_spec_tls_XXXXXX");
  ck_assert(mkdtemp(dir) != NULL);
  char cmd[256];
  snprintf(cmd, sizeof cmd, "scripts/make-certs.sh %s/certs localhost >/dev/null", dir);
  ck_assert_int_eq(system(cmd), 0);
}

static void remove_certs(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  ck_assert_int_eq(system(cmd), 0);
}

/* Writes DIR/spec.yaml with the tls section text and loads it. */
static tf_cluster_spec *load(const char *tls) {
  char path[128];
  snprintf(path, sizeof path, "%s/spec.yaml", dir);
  FILE *f = fopen(path, "w");
  ck_assert(f != NULL);
  fprintf(f, TLS_JOBS "%s", tls);
  fclose(f);
  tf_cluster_spec *s = NULL;
  tf_status st;
  tf_status_init(&st);
  ck_assert_msg(tf_cluster_spec_load(path, &s, &st) == TF_OK, "%s", st.msg);
  return s;
}

START_TEST(test_files_loaded) {
  make_certs();
  tf_cluster_spec *s = load("tls:\n  ca_file: certs/ca.crt\n  cert_key_file: "
                            "certs/localhost.pem\n  client_cert_key_file: certs/client.pem\n");
  char want[160];
  snprintf(want, sizeof want, "%s/certs/ca.crt", dir);
  ck_assert_str_eq(s->tls_ca_file, want); /* beside the spec */
  tf_tls_config *c = NULL;
  tf_status st;
  tf_status_init(&st);
  ck_assert_msg(tf_cluster_spec_tls_config(s, false, NULL, &c, &st) == TF_OK, "%s", st.msg);
  snprintf(want, sizeof want, "%s/certs/localhost.pem", dir);
  ck_assert_str_eq(tf_tls_config_cert_file(c), want);
  tf_tls_config_free(c);
  ck_assert_msg(tf_cluster_spec_tls_config(s, true, NULL, &c, &st) == TF_OK, "%s", st.msg);
  snprintf(want, sizeof want, "%s/certs/client.pem", dir);
  ck_assert_str_eq(tf_tls_config_cert_file(c), want);
  tf_tls_config_free(c);
  /* an override that is missing: named with the flag */
  ck_assert_int_eq(tf_cluster_spec_tls_config(s, true, "/nonexistent.pem", &c, &st),
                   TF_NOT_FOUND);
  ck_assert_msg(strstr(st.msg, "spec.yaml: --cert: TLS certificate file "
                       "'/nonexistent.pem': cannot open") != NULL, "%s", st.msg);
  ck_assert_int_eq(tf_cluster_spec_tls_config(s, false, "/nonexistent.pem", &c, &st),
                   TF_NOT_FOUND);
  ck_assert_msg(strstr(st.msg, "--tls-cert-key") != NULL, "%s", st.msg);
  /* made the process default */
  char expired[40];
  ck_assert_msg(tf_cluster_spec_use_tls(s, false, NULL, expired, &st) == TF_OK, "%s", st.msg);
  ck_assert_str_eq(expired, "");
  c = tf_tls_default();
  ck_assert_ptr_nonnull(c);
  tf_tls_config_free(c);
  tf_tls_set_default(NULL);
  tf_cluster_spec_free(s);
  /* no client_cert_key_file: the daemon's; a missing CA: named by its key */
  s = load("tls: {ca_file: certs/none.crt, cert_key_file: certs/localhost.pem}\n");
  ck_assert_int_eq(tf_cluster_spec_tls_config(s, true, NULL, &c, &st), TF_NOT_FOUND);
  ck_assert_msg(strstr(st.msg, "spec.yaml: tls.ca_file: TLS CA file '") != NULL &&
                    strstr(st.msg, "certs/none.crt': cannot open") != NULL, "%s", st.msg);
  tf_cluster_spec_free(s);
  s = load("tls: {ca_file: certs/ca.crt, cert_key_file: certs/ca.crt}\n");
  ck_assert_int_eq(tf_cluster_spec_tls_config(s, true, NULL, &c, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "spec.yaml: tls.cert_key_file: TLS certificate file") != NULL &&
                    strstr(st.msg, "0 PRIVATE KEY") != NULL, "%s", st.msg);
  tf_cluster_spec_free(s);
  remove_certs();
}
END_TEST

START_TEST(test_other_transports_have_none) {
  tf_status st;
  tf_status_init(&st);
  tf_cluster_spec *s = NULL;
  const char *text = "jobs: {master: ['h:1']}\n";
  ck_assert(tf_cluster_spec_parse(text, strlen(text), "d.yaml", &s, &st) == TF_OK);
  tf_tls_config *c = (tf_tls_config *)1;
  ck_assert_int_eq(tf_cluster_spec_tls_config(s, false, NULL, &c, &st), TF_OK);
  ck_assert_ptr_null(c);
  ck_assert_int_eq(tf_cluster_spec_use_tls(s, true, NULL, NULL, &st), TF_OK);
  ck_assert_ptr_null(tf_tls_default());
  tf_cluster_spec_free(s);
}
END_TEST

/* SIGHUP does not re-read certificates: a changed tls: needs a restart. */
START_TEST(test_reload_reports_tls) {
  tf_status st;
  tf_status_init(&st);
  const char *a = TLS_JOBS "tls: {ca_file: a, cert_key_file: b}\n";
  const char *b = TLS_JOBS "tls: {ca_file: a, cert_key_file: c}\n";
  tf_cluster_spec *live = NULL, *fresh = NULL;
  ck_assert(tf_cluster_spec_parse(a, strlen(a), "d.yaml", &live, &st) == TF_OK);
  ck_assert(tf_cluster_spec_parse(b, strlen(b), "d.yaml", &fresh, &st) == TF_OK);
  char applied[256], restart[256];
  tf_cluster_spec_reload(live, fresh, false, applied, sizeof applied, restart, sizeof restart);
  ck_assert_str_eq(restart, "tls");
  ck_assert_str_eq(live->tls_cert_key_file, "b");
  tf_cluster_spec_reload(live, live, false, applied, sizeof applied, restart, sizeof restart);
  ck_assert_str_eq(restart, "");
  tf_cluster_spec_free(live);
  tf_cluster_spec_free(fresh);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cluster_spec_tls");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, test_section_checked);
  tcase_add_test(tc, test_files_loaded);
  tcase_add_test(tc, test_other_transports_have_none);
  tcase_add_test(tc, test_reload_reports_tls);
  suite_add_tcase(s, tc);
  return s;
}
