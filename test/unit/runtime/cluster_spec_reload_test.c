/* cluster_spec_reload_test.c: what SIGHUP applies. The reloadable fields
 * (log level, the timeouts, the session TTL) go into the live spec and are
 * listed old -> new; everything else that differs (the task list, caps,
 * directories) is only listed as needing a restart; a pinned log level is
 * neither applied nor listed; output is truncated to its buffer. */
#include <string.h>
#include <syslog.h>

#include "lib/runtime/cluster_spec_reload.h"
#include "test/unit/testutil.h"

static tf_cluster_spec *parse(const char *text) {
  tf_status st;
  tf_status_init(&st);
  tf_cluster_spec *s = NULL;
  ck_assert_msg(tf_cluster_spec_parse(text, strlen(text), "c.yaml", &s, &st) == TF_OK, "%s",
                st.msg);
  return s;
}

#define JOBS "jobs: {master: ['127.0.0.1:1'], worker: ['127.0.0.1:2']}\n"

START_TEST(applies_timeouts_and_level) {
  tf_cluster_spec *live = parse(JOBS);
  tf_cluster_spec *fresh = parse(JOBS "log_level: debug\ntimeouts: {rpc_ms: 5000, "
                                 "heartbeat_ms: 200, drain_ms: 1}\nlimits: {session_ttl_ms: 9}\n");
  char applied[512], restart[256];
  tf_cluster_spec_reload(live, fresh, false, applied, sizeof applied, restart, sizeof restart);
  ck_assert_str_eq(applied, "log_level info -> debug, timeouts.rpc_ms 10000 -> 5000, "
                   "timeouts.heartbeat_ms 500 -> 200, timeouts.drain_ms 10000 -> 1, "
                   "limits.session_ttl_ms 60000 -> 9");
  ck_assert_str_eq(restart, "");
  ck_assert_int_eq(live->log_level, LOG_DEBUG);
  ck_assert_int_eq(live->rpc_timeout_ms, 5000);
  ck_assert_int_eq(live->heartbeat_ms, 200);
  ck_assert_int_eq(live->drain_ms, 1);
  ck_assert_int_eq(live->session_ttl_ms, 9);
  /* The same file again: nothing changes. */
  tf_cluster_spec_reload(live, fresh, false, applied, sizeof applied, restart, sizeof restart);
  ck_assert_str_eq(applied, "");
  ck_assert_str_eq(restart, "");
  tf_cluster_spec_free(live);
  tf_cluster_spec_free(fresh);
}
END_TEST

START_TEST(restart_only_fields_are_reported_not_applied) {
  tf_cluster_spec *live = parse(JOBS);
  tf_cluster_spec *fresh = parse("jobs: {master: ['127.0.0.1:1'], worker: ['127.0.0.1:2', "
                                 "'127.0.0.1:3']}\nlimits: {max_steps: 3}\nrun_dir: /x\n"
                                 "timeouts: {step_ttl_ms: 7}\nlog_level: err\n");
  char applied[512], restart[256];
  tf_cluster_spec_reload(live, fresh, true, applied, sizeof applied, restart, sizeof restart);
  ck_assert_str_eq(applied, ""); /* log level pinned by --log-level */
  ck_assert_int_eq(live->log_level, LOG_INFO);
  ck_assert_str_eq(restart, "jobs (the task list), timeouts.step_ttl_ms, limits.max_steps, "
                   "run_dir");
  ck_assert_int_eq(live->jobs[1].n_tasks, 1);
  ck_assert_int_eq(live->max_steps, 64);
  ck_assert_int_eq(live->step_ttl_ms, 60000);
  /* A changed address is a changed task list too. */
  tf_cluster_spec *moved = parse("jobs: {master: ['127.0.0.1:1'], worker: ['127.0.0.1:9']}\n");
  tf_cluster_spec_reload(live, moved, false, applied, sizeof applied, restart, sizeof restart);
  ck_assert_str_eq(restart, "jobs (the task list)");
  /* Short buffers are cut, still terminated. */
  char small[12], tiny[8];
  tf_cluster_spec_reload(live, fresh, false, small, sizeof small, tiny, sizeof tiny);
  ck_assert_uint_lt(strlen(small), sizeof small);
  ck_assert_uint_lt(strlen(tiny), sizeof tiny);
  ck_assert_int_eq(strncmp(small, "log_level i", 11), 0);
  tf_cluster_spec_free(live);
  tf_cluster_spec_free(fresh);
  tf_cluster_spec_free(moved);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cluster_spec_reload");
  TCase *tc = tcase_create("reload");
  tcase_add_test(tc, applies_timeouts_and_level);
  tcase_add_test(tc, restart_only_fields_are_reported_not_applied);
  suite_add_tcase(s, tc);
  return s;
}
