/* Tests for the cluster spec's auth section (lib/runtime/cluster_spec.c)
 * and cluster_auth.c: parsing (none, a mapping, each error with its
 * file:line:col), relative key files anchored to the spec's directory,
 * the keyrings of a daemon (task key first, roles) and of a client (the
 * client key, else the task key, else an error naming both), loopback
 * hosts, and the exposure rule (no auth beyond loopback refused; auth:
 * none allowed with a warning; wildcard addresses named). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/runtime/cluster_auth.h"
#include "test/unit/testutil.h"

static tf_cluster_spec *parse(const char *text, tf_status *st) {
  tf_cluster_spec *s = NULL;
  tf_cluster_spec_parse(text, strlen(text), "c.yaml", &s, st);
  return s;
}

static const char *base = "jobs:\n  master: [127.0.0.1:7070]\n  worker: [127.0.0.1:7071]\n";

static tf_cluster_spec *with(const char *extra, tf_status *st) {
  char text[1024];
  snprintf(text, sizeof text, "%s%s", base, extra);
  return parse(text, st);
}

START_TEST(test_parse) {
  tf_status st;
  tf_cluster_spec *s = with("", &st);
  ck_assert_ptr_nonnull(s);
  ck_assert_int_eq(s->auth_mode, TF_CLUSTER_AUTH_UNSET);
  ck_assert_int_eq(s->auth_window_ms, 30000);
  tf_cluster_spec_free(s);
  s = with("auth: none\n", &st);
  ck_assert_int_eq(s->auth_mode, TF_CLUSTER_AUTH_NONE);
  tf_cluster_spec_free(s);
  s = with("auth:\n  key_file: k/t.key\n  readonly_key_file: /r.key\n  window_ms: 5000\n", &st);
  ck_assert_msg(s != NULL, "%s", st.msg);
  ck_assert_int_eq(s->auth_mode, TF_CLUSTER_AUTH_KEY);
  ck_assert_str_eq(s->auth_key_file, "k/t.key");
  ck_assert_ptr_null(s->auth_client_key_file);
  ck_assert_str_eq(s->auth_readonly_key_file, "/r.key");
  ck_assert_int_eq(s->auth_window_ms, 5000);
  tf_cluster_spec_free(s);
  static const char *const bad[][2] = {
      {"auth: off\n", "c.yaml:4:7: auth: expected 'none' or a mapping with key_file"},
      {"auth: {client_key_file: c.key}\n", "c.yaml:4:7: auth: missing key_file"},
      {"auth: {key_file: k, window_ms: 10}\n", "auth.window_ms: expected an integer in 1000..3600000"},
      {"auth: {key_file: ''}\n", "auth.key_file: expected a key file, got ''"},
      {"auth: {key_file: k, key: x}\n", "unknown key 'key' in 'auth'"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    s = with(bad[i][0], &st);
    ck_assert_ptr_null(s);
    ck_assert_msg(strstr(st.msg, bad[i][1]) != NULL, "%s: %s", bad[i][0], st.msg);
  }
}
END_TEST

static char dir[64];

static char *write_spec(const char *extra) {
  char *p = malloc(128);
  snprintf(p, 128, "%s/c.yaml", dir);
  FILE *f = fopen(p, "w");
  fprintf(f, "%s%s", base, extra);
  fclose(f);
  return p;
}

START_TEST(test_keyrings) {
  snprintf(dir, sizeof dir, "/tmp/tf_cluster_auth_XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(dir));
  char task[128], client[128];
  snprintf(task, sizeof task, "%s/t.key", dir);
  snprintf(client, sizeof client, "%s/c.key", dir);
  tf_status st;
  ck_assert_int_eq(tf_auth_key_file_generate(task, &st), TF_OK);
  char *path = write_spec("auth:\n  key_file: t.key\n  client_key_file: c.key\n");
  tf_cluster_spec *s = NULL;
  ck_assert_int_eq(tf_cluster_spec_load(path, &s, &st), TF_OK);
  ck_assert_str_eq(s->auth_key_file, task); /* anchored to the spec's directory */
  tf_auth *a = NULL;
  /* the client key does not exist yet: a daemon refuses, naming it */
  ck_assert_int_eq(tf_cluster_auth_daemon(s, &a, &st), TF_NOT_FOUND);
  ck_assert_msg(strstr(st.msg, "auth.client_key_file") != NULL && strstr(st.msg, "c.key"),
                "%s", st.msg);
  /* a client without it falls back to the task key */
  ck_assert_int_eq(tf_cluster_auth_client(s, NULL, &a, &st), TF_OK);
  ck_assert_ptr_nonnull(a);
  tf_auth_free(a);
  ck_assert_int_eq(tf_auth_key_file_generate(client, &st), TF_OK);
  ck_assert_int_eq(tf_cluster_auth_daemon(s, &a, &st), TF_OK);
  ck_assert_int_eq(tf_auth_n_keys(a), 2);
  tf_auth_free(a);
  chmod(task, 0640);
  ck_assert_int_eq(tf_cluster_auth_daemon(s, &a, &st), TF_PERMISSION_DENIED);
  ck_assert_msg(strstr(st.msg, "auth.key_file") != NULL && strstr(st.msg, "chmod 600"), "%s",
                st.msg);
  unlink(task);
  unlink(client);
  ck_assert_int_eq(tf_cluster_auth_client(s, NULL, &a, &st), TF_PERMISSION_DENIED);
  ck_assert_msg(strstr(st.msg, "--key FILE") != NULL, "%s", st.msg);
  tf_cluster_spec_free(s);
  /* no auth: no keyring, and none needed */
  s = parse(base, &st);
  ck_assert_int_eq(tf_cluster_auth_daemon(s, &a, &st), TF_OK);
  ck_assert_ptr_null(a);
  ck_assert_int_eq(tf_cluster_auth_client(s, NULL, &a, &st), TF_OK);
  ck_assert_ptr_null(a);
  tf_cluster_spec_free(s);
  unlink(path);
  free(path);
  rmdir(dir);
}
END_TEST

START_TEST(test_loopback) {
  const char *yes[] = {"localhost", "LocalHost", "127.0.0.1", "127.1.2.3", "::1", "[::1]"};
  const char *no[] = {"0.0.0.0", "10.0.0.1", "::", "[::]", "example.com", "128.0.0.1", ""};
  for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
    ck_assert_msg(tf_cluster_host_is_loopback(yes[i]), "%s", yes[i]);
  }
  for (size_t i = 0; i < sizeof no / sizeof no[0]; i++) {
    ck_assert_msg(!tf_cluster_host_is_loopback(no[i]), "%s", no[i]);
  }
}
END_TEST

START_TEST(test_exposure) {
  tf_status st;
  char warn[512];
  tf_cluster_spec *s = parse("jobs:\n  master: [127.0.0.1:7070]\n  worker: [10.1.2.3:7071]\n", &st);
  ck_assert_int_eq(tf_cluster_check_exposure(s, "master", 0, warn, sizeof warn, &st), TF_OK);
  ck_assert_ptr_nonnull(strstr(warn, "authentication is off"));
  ck_assert_int_eq(tf_cluster_check_exposure(s, "worker", 0, warn, sizeof warn, &st),
                   TF_FAILED_PRECONDITION);
  ck_assert_msg(strstr(st.msg, "'10.1.2.3:7071' without authentication") != NULL, "%s", st.msg);
  tf_cluster_spec_free(s);
  s = parse("jobs:\n  master: [127.0.0.1:7070]\n  worker: ['0.0.0.0:7071']\nauth: none\n", &st);
  ck_assert_int_eq(tf_cluster_check_exposure(s, "worker", 0, warn, sizeof warn, &st), TF_OK);
  ck_assert_msg(strstr(warn, "auth: none") != NULL && strstr(warn, "every interface") != NULL,
                "%s", warn);
  tf_cluster_spec_free(s);
  s = parse("jobs:\n  master: [127.0.0.1:7070]\n  worker: ['0.0.0.0:7071']\n"
            "auth: {key_file: k}\n", &st);
  ck_assert_int_eq(tf_cluster_check_exposure(s, "worker", 0, warn, sizeof warn, &st), TF_OK);
  ck_assert_ptr_nonnull(strstr(warn, "every interface"));
  ck_assert_int_eq(tf_cluster_check_exposure(s, "master", 0, warn, sizeof warn, &st), TF_OK);
  ck_assert_str_eq(warn, "");
  tf_cluster_spec_free(s);
  s = parse("transport: ipc\njobs:\n  master: [/tmp/m.sock]\n  worker: [/tmp/w.sock]\n", &st);
  ck_assert_int_eq(tf_cluster_check_exposure(s, "worker", 0, warn, sizeof warn, &st), TF_OK);
  tf_cluster_spec_free(s);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cluster_auth");
  TCase *tc = tcase_create("cluster_auth");
  tcase_add_test(tc, test_parse);
  tcase_add_test(tc, test_keyrings);
  tcase_add_test(tc, test_loopback);
  tcase_add_test(tc, test_exposure);
  suite_add_tcase(s, tc);
  return s;
}
