/* cluster_spec_test.c: the cluster spec reader: both shipped conf files
 * field by field, defaults, URLs and task checks, one case per error class
 * (code, and a message that starts with file:line:column, names the field
 * and says what was expected), the daemon flags the conf files' comments
 * name, loading from a file, and random valid
 * specs written out as YAML and read back, plus random corruptions of them
 * (never a crash; either a spec or a positioned error). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include "lib/core/base/fs_confine.h"
#include "lib/runtime/cluster_spec.h"
#include "lib/runtime/cluster_spec_confine.h"
#include "test/unit/testutil.h"

static tf_cluster_spec *parse_ok(const char *text) {
  tf_status st;
  tf_status_init(&st);
  tf_cluster_spec *s = NULL;
  tf_code c = tf_cluster_spec_parse(text, strlen(text), "x.yaml", &s, &st);
  ck_assert_msg(c == TF_OK, "parse failed: %s\n%s", st.msg, text);
  ck_assert(s != NULL);
  return s;
}

static void check_job(const tf_cluster_spec *s, int j, const char *name,
                      int n, const char *const *addrs) {
  ck_assert_int_lt(j, s->n_jobs);
  ck_assert_str_eq(s->jobs[j].name, name);
  ck_assert_int_eq(s->jobs[j].n_tasks, n);
  for (int t = 0; t < n; t++) {
    ck_assert_str_eq(s->jobs[j].addrs[t], addrs[t]);
  }
  ck_assert(tf_cluster_spec_job(s, name) == &s->jobs[j]);
}

START_TEST(test_local_yaml) {
  tf_status st;
  tf_cluster_spec *s = NULL;
  ck_assert_msg(tf_cluster_spec_load("conf/local.yaml", &s, &st) == TF_OK,
                "%s", st.msg);
  ck_assert_str_eq(s->path, "conf/local.yaml");
  ck_assert_str_eq(s->name, "local");
  ck_assert_str_eq(s->transport, "tcp");
  ck_assert_int_eq(s->n_jobs, 3);
  check_job(s, 0, "master", 1, (const char *[]){"127.0.0.1:7070"});
  check_job(s, 1, "ps", 1, (const char *[]){"127.0.0.1:7071"});
  check_job(s, 2, "worker", 2,
            (const char *[]){"127.0.0.1:7072", "127.0.0.1:7073"});
  ck_assert_int_eq(s->rpc_timeout_ms, 10000);
  ck_assert_int_eq(s->registration_timeout_ms, 10000);
  ck_assert_int_eq(s->step_timeout_ms, 0);
  ck_assert_int_eq(s->heartbeat_ms, 500);
  ck_assert_int_eq(s->down_after_ms, 3000);
  ck_assert_int_eq(s->step_ttl_ms, 60000);
  ck_assert_int_eq(s->drain_ms, 10000);
  ck_assert_int_eq(s->max_message_bytes, 256LL << 20);
  ck_assert_int_eq(s->max_pushed_bytes, 1024LL << 20);
  ck_assert_int_eq(s->max_graphs, 1024);
  ck_assert_int_eq(s->max_sessions, 256);
  ck_assert_int_eq(s->max_steps, 64);
  ck_assert_int_eq(s->max_connections, 256);
  ck_assert_int_eq(s->idle_connection_ms, 300000);
  ck_assert_int_eq(s->session_ttl_ms, 60000);
  ck_assert_int_eq(s->inter_op_threads, 0);
  ck_assert_int_eq(s->rpc_threads, 16);
  /* Relative directories are relative to the file's own directory. */
  char cwd[4096], want[4200];
  ck_assert_ptr_nonnull(getcwd(cwd, sizeof cwd));
  snprintf(want, sizeof want, "%s/run/local/checkpoints", cwd);
  ck_assert_str_eq(s->checkpoint_dir, want);
  snprintf(want, sizeof want, "%s/run/local", cwd);
  ck_assert_str_eq(s->run_dir, want);
  ck_assert_int_eq(s->log_level, LOG_INFO);
  char *url = tf_cluster_task_url(s, "worker", 1);
  ck_assert_str_eq(url, "tcp://127.0.0.1:7073");
  free(url);
  url = tf_cluster_task_url(s, "master", 0);
  ck_assert_str_eq(url, "tcp://127.0.0.1:7070");
  free(url);
  ck_assert(tf_cluster_task_url(s, "worker", 2) == NULL);
  ck_assert(tf_cluster_task_url(s, "worker", -1) == NULL);
  ck_assert(tf_cluster_task_url(s, "chief", 0) == NULL);
  ck_assert(tf_cluster_spec_job(s, "chief") == NULL);
  ck_assert_int_eq(tf_cluster_spec_check_task(s, "worker", 1, &st), TF_OK);
  ck_assert_int_eq(tf_cluster_spec_check_task(s, "worker", 5, &st),
                   TF_NOT_FOUND);
  ck_assert_str_eq(st.msg, "no task /job:worker/task:5 in conf/local.yaml "
                           "(job 'worker' has 2 tasks: 0..1)");
  ck_assert_int_eq(tf_cluster_spec_check_task(s, "ps", -1, &st),
                   TF_NOT_FOUND);
  ck_assert_str_eq(st.msg, "no task /job:ps/task:-1 in conf/local.yaml "
                           "(job 'ps' has 1 task: 0)");
  ck_assert_int_eq(tf_cluster_spec_check_task(s, "x", 0, &st), TF_NOT_FOUND);
  ck_assert_str_eq(st.msg,
                   "no job 'x' in conf/local.yaml (jobs: master, ps, worker)");
  /* A worker serves every job but the master's. */
  ck_assert_int_eq(tf_cluster_spec_check_worker_task(s, "master", 0, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_str_eq(st.msg, "job 'master' in conf/local.yaml is the master's "
                           "task, not a worker job (worker jobs: ps, worker)");
  ck_assert_int_eq(tf_cluster_spec_check_worker_task(s, "ps", 0, &st), TF_OK);
  ck_assert_int_eq(tf_cluster_spec_check_worker_task(s, "worker", 2, &st),
                   TF_NOT_FOUND);
  ck_assert_int_eq(tf_cluster_spec_check_worker_task(s, "x", 0, &st),
                   TF_NOT_FOUND);
  tf_cluster_spec_free(s);
}
END_TEST

/* Every "--flag" a conf file's comments mention is one tfmaster or
 * tfworker accepts (the files tell people how to start the daemons). */
static int check_daemon_flags(const char *path) {
  static const char *const known[] = {"--config", "--job", "--task", "--log-level",
                                       "--metrics-address"};
  FILE *f = fopen(path, "r");
  ck_assert_msg(f != NULL, "%s", path);
  char line[512];
  int n_flags = 0;
  for (int ln = 1; fgets(line, sizeof line, f) != NULL; ln++) {
    for (char *p = strstr(line, "--"); p != NULL; p = strstr(p + 2, "--")) {
      size_t len = 2 + strspn(p + 2, "abcdefghijklmnopqrstuvwxyz-");
      bool ok = false;
      for (size_t k = 0; k < sizeof known / sizeof known[0]; k++) {
        ok = ok || (strlen(known[k]) == len && strncmp(p, known[k], len) == 0);
      }
      ck_assert_msg(ok, "%s:%d: unknown daemon flag '%.*s'", path, ln, (int)len, p);
      n_flags++;
    }
  }
  fclose(f);
  return n_flags;
}

START_TEST(test_conf_files_name_real_flags) {
  check_daemon_flags("conf/local.yaml");
  /* It spells out both start commands: --config, --job, --task, --config. */
  ck_assert_int_ge(check_daemon_flags("conf/ps-worker.yaml"), 4);
}
END_TEST

START_TEST(test_ps_worker_yaml) {
  tf_status st;
  tf_cluster_spec *s = NULL;
  ck_assert_msg(tf_cluster_spec_load("conf/ps-worker.yaml", &s, &st) == TF_OK,
                "%s", st.msg);
  ck_assert_str_eq(s->name, "ps-worker");
  ck_assert_int_eq(s->n_jobs, 3);
  check_job(s, 0, "master", 1, (const char *[]){"master.example.com:7070"});
  check_job(s, 1, "ps", 2,
            (const char *[]){"ps0.example.com:7071", "ps1.example.com:7071"});
  check_job(s, 2, "worker", 4,
            (const char *[]){"worker0.example.com:7072",
                             "worker1.example.com:7072",
                             "worker2.example.com:7072",
                             "worker3.example.com:7072"});
  ck_assert_int_eq(s->rpc_timeout_ms, 30000);
  ck_assert_int_eq(s->registration_timeout_ms, 120000);
  ck_assert_int_eq(s->step_timeout_ms, 0);    /* default */
  ck_assert_int_eq(s->step_ttl_ms, 60000);    /* default */
  ck_assert_int_eq(s->heartbeat_ms, 1000);
  ck_assert_int_eq(s->down_after_ms, 10000);
  ck_assert_int_eq(s->drain_ms, 30000);
  ck_assert_int_eq(s->max_message_bytes, 1024LL * 1024 * 1024);
  ck_assert_str_eq(s->run_dir, "/var/lib/tf/ps-worker");
  char *url = tf_cluster_task_url(s, "worker", 3);
  ck_assert_str_eq(url, "tcp://worker3.example.com:7072");
  free(url);
  tf_cluster_spec_free(s);
}
END_TEST

START_TEST(test_defaults) {
  tf_cluster_spec *s = parse_ok("jobs: {master: 'h:1'}\n");
  ck_assert_str_eq(s->path, "x.yaml");
  ck_assert_str_eq(s->name, "tf");
  ck_assert_str_eq(s->transport, "tcp");
  check_job(s, 0, "master", 1, (const char *[]){"h:1"}); /* scalar: 1 task */
  ck_assert_int_eq(s->rpc_timeout_ms, 10000);
  ck_assert_int_eq(s->registration_timeout_ms, 10000);
  ck_assert_int_eq(s->step_timeout_ms, 0);
  ck_assert_int_eq(s->heartbeat_ms, 500);
  ck_assert_int_eq(s->down_after_ms, 3000);
  ck_assert_int_eq(s->step_ttl_ms, 60000);
  ck_assert_int_eq(s->drain_ms, 10000);
  ck_assert_int_eq(s->max_message_bytes, 256LL << 20);
  ck_assert_int_eq(s->inter_op_threads, 0);
  ck_assert_int_eq(s->rpc_threads, 16);
  ck_assert(s->checkpoint_dir == NULL);
  ck_assert_str_eq(s->run_dir, "run/tf");
  ck_assert_int_eq(s->log_level, LOG_INFO);
  tf_cluster_spec_free(s);
  /* run_dir follows the cluster name; empty sections keep defaults. */
  s = parse_ok("cluster: c1\njobs: {master: ['h:1']}\ntimeouts:\n"
               "threads: {}\ncheckpoint_dir:\nlog_level: debug\n");
  ck_assert_str_eq(s->run_dir, "run/c1");
  ck_assert_int_eq(s->heartbeat_ms, 500);
  ck_assert(s->checkpoint_dir == NULL);
  ck_assert_int_eq(s->log_level, LOG_DEBUG);
  tf_cluster_spec_free(s);
  /* Heartbeats just inside the down timeout are fine; a spec of only the
   * master has no job a worker could serve. */
  s = parse_ok("jobs: {master: 'h:1'}\ntimeouts: {heartbeat_ms: 2999}\n");
  ck_assert_int_eq(s->heartbeat_ms, 2999);
  tf_status st;
  ck_assert_int_eq(tf_cluster_spec_check_worker_task(s, "master", 0, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_str_eq(st.msg, "job 'master' in x.yaml is the master's task, not "
                           "a worker job (the spec has no worker jobs)");
  tf_cluster_spec_free(s);
}
END_TEST

/* Transports, address forms and the URLs built from them. */
START_TEST(test_transports_and_urls) {
  static const struct {
    const char *transport, *addr, *url;
  } cases[] = {
      {"tcp", "127.0.0.1:7070", "tcp://127.0.0.1:7070"},
      {"tcp", "[::1]:7070", "tcp://[::1]:7070"},
      {"tcp", "[fe80::1:2]:1", "tcp://[fe80::1:2]:1"},
      {"tcp", "localhost:65535", "tcp://localhost:65535"},
      {"tcp", "a-b.c0.example.org:80", "tcp://a-b.c0.example.org:80"},
      {"tcp", "0.0.0.0:9", "tcp://0.0.0.0:9"},
      {"tls+tcp", "node7:7443", "tls+tcp://node7:7443"},
      {"ipc", "/tmp/tf/master.sock", "ipc:///tmp/tf/master.sock"},
      {"ipc", "run/m.sock", "ipc://run/m.sock"},
      {"inproc", "master", "inproc://master"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char text[256];
    snprintf(text, sizeof text, "transport: %s\njobs:\n  master: ['%s']\n%s",
             cases[i].transport, cases[i].addr,
             strcmp(cases[i].transport, "tls+tcp") == 0
                 ? "tls: {ca_file: ca.crt, cert_key_file: node7.pem}\n" : "");
    tf_cluster_spec *s = parse_ok(text);
    ck_assert_str_eq(s->transport, cases[i].transport);
    char *url = tf_cluster_task_url(s, "master", 0);
    ck_assert_str_eq(url, cases[i].url);
    free(url);
    tf_cluster_spec_free(s);
  }
}
END_TEST

typedef struct bad_case {
  const char *text;
  tf_code code;
  const char *where; /* "x.yaml:L:C: " the message must start with */
  const char *what;  /* a substring it must contain */
} bad_case;

#define MASTER "jobs:\n  master: [127.0.0.1:7070]\n"

static const bad_case bad_cases[] = {
    /* task addresses */
    {MASTER "  worker: [127.0.0.1:7072, abc]\n", TF_INVALID_ARGUMENT,
     "x.yaml:3:28: ", "jobs.worker[1]: expected host:port, got 'abc'"},
    {MASTER "  ps: [127.0.0.1:0]\n", TF_INVALID_ARGUMENT, "x.yaml:3:8: ",
     "jobs.ps[0]: port 0 is outside 1..65535 in '127.0.0.1:0'"},
    {MASTER "  ps:\n    - h:1\n    - h:70000\n", TF_INVALID_ARGUMENT,
     "x.yaml:5:7: ", "jobs.ps[1]: port 70000 is outside 1..65535"},
    {MASTER "  ps: [h:65536]\n", TF_INVALID_ARGUMENT, "x.yaml:3:8: ",
     "port 65536 is outside 1..65535"},
    {MASTER "  ps: ['h:x1']\n", TF_INVALID_ARGUMENT, "x.yaml:3:8: ",
     "jobs.ps[0]: expected host:port with a numeric port, got 'h:x1'"},
    {MASTER "  ps: ['h:-1']\n", TF_INVALID_ARGUMENT, "x.yaml:3:8: ",
     "numeric port, got 'h:-1'"},
    {MASTER "  ps: [':7071']\n", TF_INVALID_ARGUMENT, "x.yaml:3:8: ",
     "expected host:port, got ':7071' (no host)"},
    {MASTER "  ps: ['::1:7071']\n", TF_INVALID_ARGUMENT, "x.yaml:3:8: ",
     "write an IPv6 host in brackets"},
    {MASTER "  ps: ['[::g]:7071']\n", TF_INVALID_ARGUMENT, "x.yaml:3:8: ",
     "'[::g]' is not a valid IPv6 address"},
    {MASTER "  ps: [300.1.1.1:1]\n", TF_INVALID_ARGUMENT, "x.yaml:3:8: ",
     "'300.1.1.1' is not a valid IPv4 address"},
    {MASTER "  ps: [1.2.3:1]\n", TF_INVALID_ARGUMENT, "x.yaml:3:8: ",
     "'1.2.3' is not a valid IPv4 address"},
    {MASTER "  ps: [-bad.example:1]\n", TF_INVALID_ARGUMENT, "x.yaml:3:8: ",
     "'-bad.example' is not a valid hostname"},
    {MASTER "  ps: [a..b:1]\n", TF_INVALID_ARGUMENT, "x.yaml:3:8: ",
     "'a..b' is not a valid hostname"},
    {MASTER "  ps: ['tcp://h:1']\n", TF_INVALID_ARGUMENT, "x.yaml:3:8: ",
     "leave out the scheme"},
    {MASTER "  ps: [{h: 1}]\n", TF_INVALID_ARGUMENT, "x.yaml:3:8: ",
     "jobs.ps[0]: expected host:port, got a mapping"},
    {MASTER "  ps: [\"h\\0:1\"]\n", TF_INVALID_ARGUMENT, "x.yaml:3:8: ",
     "jobs.ps[0]: expected host:port, got text with a NUL character"},
    {MASTER "  ps: [127.0.0.1:7070]\n", TF_INVALID_ARGUMENT, "x.yaml:3:8: ",
     "jobs.ps[0]: /job:ps/task:0 at '127.0.0.1:7070' has the address of "
     "/job:master/task:0 at '127.0.0.1:7070' (both are 127.0.0.1 port 7070); "
     "each task needs an address of its own"},
    {MASTER "  ps: [127.0.0.1:7071]\n  worker: [h.invalid:1, localhost:7070]\n",
     TF_INVALID_ARGUMENT, "x.yaml:4:25: ",
     "jobs.worker[1]: /job:worker/task:1 at 'localhost:7070' has the address "
     "of /job:master/task:0 at '127.0.0.1:7070' (both are 127.0.0.1 port "
     "7070)"},
    {"transport: ipc\njobs: {master: ['']}\n", TF_INVALID_ARGUMENT,
     "x.yaml:2:17: ", "jobs.master[0]: expected a socket path, got ''"},
    {"transport: ipc\njobs: {master: [/tmp/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaa]}\n", TF_INVALID_ARGUMENT, "x.yaml:2:17: ",
     "socket path is 116 bytes, more than the 107"},
    {"transport: inproc\njobs: {master: ['a b']}\n", TF_INVALID_ARGUMENT,
     "x.yaml:2:17: ", "expected an inproc name, got 'a b'"},
    /* jobs */
    {MASTER "  worker: [h:1]\n  worker: [h:2]\n", TF_INVALID_ARGUMENT,
     "x.yaml:4:3: ", "jobs: job 'worker' appears twice"},
    {"jobs:\n  ps: [h:1]\n", TF_INVALID_ARGUMENT, "x.yaml:2:3: ",
     "jobs: no 'master' job (expected exactly one master task"},
    {"jobs:\n  master: [h:1, h:2]\n", TF_INVALID_ARGUMENT, "x.yaml:2:11: ",
     "jobs.master: expected exactly one master task, got 2"},
    {MASTER "  worker: []\n", TF_INVALID_ARGUMENT, "x.yaml:3:11: ",
     "jobs.worker: a job needs at least one task, got none"},
    {MASTER "  worker:\n", TF_INVALID_ARGUMENT, "x.yaml:3:10: ",
     "jobs.worker: a job needs at least one task, got none"},
    {MASTER "  worker: {a: 1}\n", TF_INVALID_ARGUMENT, "x.yaml:3:11: ",
     "jobs.worker: expected a list of task addresses, got a mapping"},
    {MASTER "  'a b': [h:1]\n", TF_INVALID_ARGUMENT, "x.yaml:3:3: ",
     "jobs: job name 'a b' must be 1..63 characters of [A-Za-z0-9_-]"},
    {"cluster: c\n", TF_INVALID_ARGUMENT, "x.yaml:1:1: ",
     "missing key 'jobs'"},
    {"jobs: [h:1]\n", TF_INVALID_ARGUMENT, "x.yaml:1:7: ",
     "jobs: expected a mapping of job names to task addresses, got a "
     "sequence"},
    /* keys */
    {MASTER "timeouts:\n  rpc_ms: 5\n  timeout: 3\n", TF_INVALID_ARGUMENT,
     "x.yaml:5:3: ", "unknown key 'timeout' in 'timeouts' (expected rpc_ms, "
     "registration_ms, step_ms, heartbeat_ms, down_after_ms, step_ttl_ms, "
     "drain_ms)"},
    {MASTER "timeouts: {rpc_ms: 5, rpc_ms: 6}\n", TF_INVALID_ARGUMENT,
     "x.yaml:3:23: ", "key 'rpc_ms' appears twice in 'timeouts'"},
    {MASTER "workers: 3\n", TF_INVALID_ARGUMENT, "x.yaml:3:1: ",
     "unknown key 'workers' in the top level (expected cluster, transport,"},
    {MASTER "threads: {inter_op: 1, io: 2}\n", TF_INVALID_ARGUMENT,
     "x.yaml:3:24: ", "unknown key 'io' in 'threads' (expected inter_op, rpc)"},
    {MASTER "timeouts: 5\n", TF_INVALID_ARGUMENT, "x.yaml:3:11: ",
     "timeouts: expected a mapping, got '5'"},
    {MASTER "? [a]\n: 1\n", TF_INVALID_ARGUMENT, "x.yaml:3:3: ",
     "expected a key name, got a sequence"},
    /* numbers */
    /* heartbeats at least as far apart as the down timeout */
    {MASTER "timeouts: {heartbeat_ms: 3000}\n", TF_INVALID_ARGUMENT,
     "x.yaml:3:26: ", "timeouts.heartbeat_ms: heartbeat_ms (3000) must be less "
     "than down_after_ms (3000, the default): a task would be marked down "
     "between two heartbeats"},
    {MASTER "timeouts:\n  down_after_ms: 400\n", TF_INVALID_ARGUMENT,
     "x.yaml:4:18: ", "timeouts.down_after_ms: heartbeat_ms (500, the "
     "default) must be less than down_after_ms (400)"},
    {MASTER "timeouts:\n  down_after_ms: 1000\n  heartbeat_ms: 2000\n",
     TF_INVALID_ARGUMENT, "x.yaml:5:17: ", "timeouts.heartbeat_ms: "
     "heartbeat_ms (2000) must be less than down_after_ms (1000)"},
    {MASTER "timeouts: {heartbeat_ms: -5}\n", TF_INVALID_ARGUMENT,
     "x.yaml:3:26: ", "timeouts.heartbeat_ms: expected an integer in "
     "1..2147483647 (milliseconds), got '-5'"},
    {MASTER "timeouts:\n  drain_ms: -1\n", TF_INVALID_ARGUMENT,
     "x.yaml:4:13: ", "timeouts.drain_ms: expected an integer in "
     "0..2147483647 (milliseconds), got '-1'"},
    {MASTER "timeouts: {rpc_ms: 0}\n", TF_INVALID_ARGUMENT, "x.yaml:3:20: ",
     "timeouts.rpc_ms: expected an integer in 1..2147483647"},
    {MASTER "timeouts: {step_ms: 1.5}\n", TF_INVALID_ARGUMENT,
     "x.yaml:3:21: ", "timeouts.step_ms: expected an integer in 0..2147483647 "
     "(milliseconds), got '1.5'"},
    {MASTER "timeouts: {step_ms: 99999999999999999999}\n", TF_INVALID_ARGUMENT,
     "x.yaml:3:21: ", "got '99999999999999999999'"},
    {MASTER "timeouts: {step_ms: 2147483648}\n", TF_INVALID_ARGUMENT,
     "x.yaml:3:21: ", "got '2147483648'"},
    {MASTER "timeouts: {step_ms: }\n", TF_INVALID_ARGUMENT, "x.yaml:3:21: ",
     "timeouts.step_ms: expected an integer in 0..2147483647 (milliseconds), "
     "got nothing"},
    {MASTER "max_message_mb: 0\n", TF_INVALID_ARGUMENT, "x.yaml:3:17: ",
     "max_message_mb: expected an integer in 1..1048576"},
    {MASTER "limits: {max_steps: 0}\n", TF_INVALID_ARGUMENT, "x.yaml:3:21: ",
     "limits.max_steps: expected an integer in 1..65536, got '0'"},
    {MASTER "limits: {session_ttl_ms: -1}\n", TF_INVALID_ARGUMENT,
     "x.yaml:3:26: ", "limits.session_ttl_ms: expected an integer in "
     "1..2147483647 (milliseconds), got '-1'"},
    {MASTER "limits: {max_pushed_mb: 2000000}\n", TF_INVALID_ARGUMENT,
     "x.yaml:3:25: ", "limits.max_pushed_mb: expected an integer in "
     "1..1048576 (MiB), got '2000000'"},
    {MASTER "limits: {max_sesions: 3}\n", TF_INVALID_ARGUMENT, "x.yaml:3:10: ",
     "max_sesions"},
    {MASTER "threads: {rpc: 0}\n", TF_INVALID_ARGUMENT, "x.yaml:3:16: ",
     "threads.rpc: expected an integer in 1..1024, got '0'"},
    {MASTER "threads: {inter_op: -1}\n", TF_INVALID_ARGUMENT, "x.yaml:3:21: ",
     "threads.inter_op: expected an integer in 0..1024 (0: number of CPUs), "
     "got '-1'"},
    {MASTER "max_message_mb: -1\n", TF_INVALID_ARGUMENT, "x.yaml:3:17: ",
     "max_message_mb: expected an integer in 1..1048576 (MiB; every message, "
     "tensors included, must fit), got "
     "'-1'"},
    /* strings */
    {"transport: udp\n" MASTER, TF_INVALID_ARGUMENT, "x.yaml:1:12: ",
     "transport: unknown transport 'udp' (expected tcp, ipc, inproc or "
     "tls+tcp)"},
    {MASTER "log_level: loud\n", TF_INVALID_ARGUMENT, "x.yaml:3:12: ",
     "log_level: unknown log level 'loud' (expected err, warning, notice, "
     "info or debug)"},
    {MASTER "log_level: [info]\n", TF_INVALID_ARGUMENT, "x.yaml:3:12: ",
     "log_level: expected a log level (err, warning, notice, info or debug), "
     "got a sequence"},
    {"cluster: 'my cluster'\n" MASTER, TF_INVALID_ARGUMENT, "x.yaml:1:10: ",
     "cluster: cluster name 'my cluster' must be 1..63 characters"},
    {MASTER "run_dir: ''\n", TF_INVALID_ARGUMENT, "x.yaml:3:10: ",
     "run_dir: expected a directory, got ''"},
    {MASTER "checkpoint_dir: {a: b}\n", TF_INVALID_ARGUMENT, "x.yaml:3:17: ",
     "checkpoint_dir: expected a directory, got a mapping"},
    /* documents and syntax (positions are libyaml's) */
    {"", TF_INVALID_ARGUMENT, "x.yaml:1:1: ", "no YAML document"},
    {"# only a comment\n", TF_INVALID_ARGUMENT, "x.yaml:1:1: ",
     "no YAML document"},
    {"- a\n- b\n", TF_INVALID_ARGUMENT, "x.yaml:1:1: ",
     "expected a mapping with 'jobs' at the top level, got a sequence"},
    {MASTER "---\n" MASTER, TF_INVALID_ARGUMENT, "x.yaml:3:1: ",
     "a second YAML document"},
    {"jobs: {master: [h:1]\n", TF_INVALID_ARGUMENT, "x.yaml:2:1: ",
     "YAML syntax error: did not find expected ',' or '}'"},
    {"jobs:\n\tmaster: [h:1]\n", TF_INVALID_ARGUMENT, "x.yaml:2:1: ",
     "YAML syntax error: found character that cannot start any token"},
    {"jobs:\n  master: [h:1]\n   ps: [h:2]\n", TF_INVALID_ARGUMENT,
     "x.yaml:3:4: ", "YAML syntax error: did not find expected key (while "
     "parsing a block mapping)"},
    {"jobs:\n  master: [h:1]\n  ps: [h\xff:2]\n", TF_INVALID_ARGUMENT,
     "x.yaml:3:9: ", "YAML syntax error: invalid leading UTF-8 octet"},
    /* a NUL escaped in a quoted number: not the number before it */
    {MASTER "timeouts: {rpc_ms: \"5\\0 junk\"}\n", TF_INVALID_ARGUMENT,
     "x.yaml:3:20: ", "timeouts.rpc_ms: expected an integer in 1..2147483647"},
    {"jobs: {master: 1}\nslurm: {base_port: \"7\\0\"}\n",
     TF_INVALID_ARGUMENT, "x.yaml:2:20: ",
     "slurm.base_port: expected an integer in 1..65535"},
};

START_TEST(test_errors) {
  const bad_case *b = &bad_cases[_i];
  tf_status st;
  tf_status_init(&st);
  tf_cluster_spec *s = (tf_cluster_spec *)1;
  tf_code c = tf_cluster_spec_parse(b->text, strlen(b->text), "x.yaml", &s,
                                    &st);
  ck_assert_msg(c == b->code, "case %d: code %s (want %s): %s", _i,
                tf_code_name(c), tf_code_name(b->code), st.msg);
  ck_assert(s == NULL);
  ck_assert_int_eq(st.code, b->code);
  ck_assert_msg(strncmp(st.msg, b->where, strlen(b->where)) == 0,
                "case %d: message '%s' does not start with '%s'", _i, st.msg,
                b->where);
  ck_assert_msg(strstr(st.msg, b->what) != NULL,
                "case %d: message '%s' lacks '%s'", _i, st.msg, b->what);
}
END_TEST

START_TEST(test_load_file) {
  char path[] = "/tmp/tf_cluster_spec_test_XXXXXX";
  int fd = mkstemp(path);
  ck_assert(fd >= 0);
  const char text[] = "jobs:\n  master: [h:1]\n  ps: [h:1]\n";
  ck_assert(write(fd, text, sizeof text - 1) == (ssize_t)(sizeof text - 1));
  close(fd);
  tf_status st;
  tf_cluster_spec *s = (tf_cluster_spec *)1;
  ck_assert_int_eq(tf_cluster_spec_load(path, &s, &st), TF_INVALID_ARGUMENT);
  ck_assert(s == NULL);
  char want[256];
  snprintf(want, sizeof want, "%s:3:8: jobs.ps[0]: /job:ps/task:0 at 'h:1' has the "
           "address of /job:master/task:0 at 'h:1'", path);
  ck_assert_msg(strncmp(st.msg, want, strlen(want)) == 0, "%s", st.msg);
  unlink(path);
  ck_assert_int_eq(tf_cluster_spec_load(path, &s, &st), TF_NOT_FOUND);
  ck_assert(s == NULL);
  ck_assert_msg(strstr(st.msg, path) != NULL, "%s", st.msg);
}
END_TEST

/* ---- random specs ------------------------------------------------------ */

typedef struct rspec {
  int n_jobs;
  char names[5][24];
  int n_tasks[5];
  char addrs[5][6][48];
  long long rpc_ms, step_ms;
  int rpc_threads;
} rspec;

static void random_spec(rspec *r) {
  static const char *const hosts[] = {"127.0.0.1", "localhost", "[::1]",
                                      "node-7.example.org", "10.0.0.255"};
  int port = 1 + (int)(tt_rand_u64() % 60000);
  r->n_jobs = 1 + (int)(tt_rand_u64() % 5);
  for (int j = 0; j < r->n_jobs; j++) {
    if (j == 0) {
      strcpy(r->names[j], "master");
    } else {
      snprintf(r->names[j], sizeof r->names[j], "job_%d-x", j);
    }
    r->n_tasks[j] = j == 0 ? 1 : 1 + (int)(tt_rand_u64() % 6);
    for (int t = 0; t < r->n_tasks[j]; t++) {
      snprintf(r->addrs[j][t], sizeof r->addrs[j][t], "%s:%d",
               hosts[tt_rand_u64() % 5], port++);
    }
  }
  r->rpc_ms = 1 + (long long)(tt_rand_u64() % 2147483647LL);
  r->step_ms = (long long)(tt_rand_u64() % 100000);
  r->rpc_threads = 1 + (int)(tt_rand_u64() % 1024);
}

/* Writes r as YAML, in block or flow style by chance. */
static void write_spec(const rspec *r, char *buf, size_t n) {
  size_t k = (size_t)snprintf(buf, n, "cluster: r\njobs:\n");
  for (int j = 0; j < r->n_jobs; j++) {
    bool flow = tt_rand_u64() % 2;
    k += (size_t)snprintf(buf + k, n - k, "  %s:%s", r->names[j],
                          flow ? " [" : "\n");
    for (int t = 0; t < r->n_tasks[j]; t++) {
      const char *a = r->addrs[j][t];
      if (flow) {
        k += (size_t)snprintf(buf + k, n - k, "%s'%s'", t ? ", " : "", a);
      } else { /* plain unless it would read as a flow sequence */
        k += (size_t)snprintf(buf + k, n - k, a[0] == '[' ? "    - '%s'\n"
                              : "    - %s\n", a);
      }
    }
    k += (size_t)snprintf(buf + k, n - k, "%s", flow ? "]\n" : "");
  }
  snprintf(buf + k, n - k, "timeouts: {rpc_ms: %lld, step_ms: %lld}\n"
           "threads:\n  rpc: %d\n", r->rpc_ms, r->step_ms, r->rpc_threads);
}

START_TEST(test_random_round_trip) {
  tt_rng_reseed(tt_seed() ^ 0x5eed);
  char text[4096];
  for (int iter = 0; iter < 200; iter++) {
    rspec r;
    random_spec(&r);
    write_spec(&r, text, sizeof text);
    tf_cluster_spec *s = parse_ok(text);
    ck_assert_int_eq(s->n_jobs, r.n_jobs);
    for (int j = 0; j < r.n_jobs; j++) {
      const char *addrs[6];
      for (int t = 0; t < r.n_tasks[j]; t++) {
        addrs[t] = r.addrs[j][t];
      }
      check_job(s, j, r.names[j], r.n_tasks[j], addrs);
      char *url = tf_cluster_task_url(s, r.names[j], r.n_tasks[j] - 1);
      char want[64];
      snprintf(want, sizeof want, "tcp://%s", r.addrs[j][r.n_tasks[j] - 1]);
      ck_assert_str_eq(url, want);
      free(url);
    }
    ck_assert_int_eq(s->rpc_timeout_ms, r.rpc_ms);
    ck_assert_int_eq(s->step_timeout_ms, r.step_ms);
    ck_assert_int_eq(s->rpc_threads, r.rpc_threads);
    tf_cluster_spec_free(s);
  }
}
END_TEST

/* Random byte edits of valid specs: each parses or fails with
 * INVALID_ARGUMENT and a "x.yaml:L:C: " position; never crashes. */
START_TEST(test_random_corruption) {
  tt_rng_reseed(tt_seed() ^ 0xc0de);
  static const char alphabet[] = ":[]{},-'\"#&*!|>\n\t 0x\xff";
  char text[4096];
  int failed = 0;
  for (int iter = 0; iter < 400; iter++) {
    rspec r;
    random_spec(&r);
    write_spec(&r, text, sizeof text);
    size_t len = strlen(text);
    for (int e = 0; e < 1 + (int)(tt_rand_u64() % 3); e++) {
      size_t at = tt_rand_u64() % len;
      text[at] = alphabet[tt_rand_u64() % (sizeof alphabet - 1)];
    }
    tf_status st;
    tf_status_init(&st);
    tf_cluster_spec *s = NULL;
    tf_code c = tf_cluster_spec_parse(text, len, "x.yaml", &s, &st);
    if (c == TF_OK) {
      ck_assert(s != NULL && tf_cluster_spec_job(s, "master") != NULL);
      tf_cluster_spec_free(s);
      continue;
    }
    failed++;
    unsigned line, col;
    ck_assert_msg(c == TF_INVALID_ARGUMENT, "%s", st.msg);
    ck_assert_msg(sscanf(st.msg, "x.yaml:%u:%u: ", &line, &col) == 2 &&
                      line >= 1 && col >= 1,
                  "no position in '%s'", st.msg);
  }
  ck_assert_int_gt(failed, 0);
}
END_TEST

/* Every limit parses into its field; those not given keep their defaults. */
START_TEST(test_limits) {
  const char *y = "jobs: {master: [h:1], worker: [h:2]}\n"
                  "max_message_mb: 8\n"
                  "limits:\n  max_pushed_mb: 16\n  max_graphs: 3\n"
                  "  max_sessions: 4\n  max_steps: 5\n  max_connections: 6\n"
                  "  idle_connection_ms: 700\n";
  tf_cluster_spec *s = NULL;
  tf_status st;
  ck_assert_msg(tf_cluster_spec_parse(y, strlen(y), "l.yaml", &s, &st) == TF_OK,
                "%s", st.msg);
  ck_assert_int_eq(s->max_message_bytes, 8LL << 20);
  ck_assert_int_eq(s->max_pushed_bytes, 16LL << 20);
  ck_assert_int_eq(s->max_graphs, 3);
  ck_assert_int_eq(s->max_sessions, 4);
  ck_assert_int_eq(s->max_steps, 5);
  ck_assert_int_eq(s->max_connections, 6);
  ck_assert_int_eq(s->idle_connection_ms, 700);
  ck_assert_int_eq(s->session_ttl_ms, 60000);
  tf_cluster_spec_free(s);
}
END_TEST

/* Parses text as "d.yaml"; the error message, or "" when it parses. */
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

/* Two tasks at one endpoint are refused at the later one, naming both
 * tasks and both addresses as written; distinct endpoints are fine. */
START_TEST(test_duplicate_addresses) {
  tf_status st;
  const char *m = parse_msg("jobs:\n  master: [127.0.0.1:17100]\n"
                            "  worker: [localhost:17101, 127.0.0.1:17101]\n", &st);
  ck_assert_msg(strcmp(m, "d.yaml:3:29: jobs.worker[1]: /job:worker/task:1 at "
                          "'127.0.0.1:17101' has the address of /job:worker/task:0 at "
                          "'localhost:17101' (both are 127.0.0.1 port 17101); each task "
                          "needs an address of its own") == 0, "%s", m);
  ck_assert_str_eq(parse_msg("jobs:\n  master: [127.0.0.1:17100]\n"
                             "  worker: [localhost:17101, 127.0.0.1:17102]\n", &st), "");
  /* The same port on other hosts, or names that do not resolve, differ. */
  ck_assert_str_eq(parse_msg("jobs: {master: [a.invalid:1], ps: [b.invalid:1], "
                             "worker: [127.0.0.2:1, 127.0.0.1:1, '[::1]:1']}\n", &st), "");
  m = parse_msg("jobs:\n  master: [node.invalid:7]\n  ps:\n    - 127.0.0.1:7\n"
                "    - NODE.invalid:7\n", &st);
  ck_assert_msg(strncmp(m, "d.yaml:5:7: jobs.ps[1]: /job:ps/task:1 at 'NODE.invalid:7' "
                           "has the address of /job:master/task:0 at 'node.invalid:7' "
                           "(both are host 'node.invalid' port 7 (not resolved))", 75) == 0 &&
                    strstr(m, "(both are host 'node.invalid' port 7 (not resolved))") != NULL,
                "%s", m);
  m = parse_msg("jobs: {master: ['[::1]:9'], worker: ['[0:0:0::1]:9']}\n", &st);
  ck_assert_msg(strstr(m, "d.yaml:1:38: jobs.worker[0]: ") == m &&
                    strstr(m, "(both are [::1] port 9)") != NULL, "%s", m);
  m = parse_msg("transport: ipc\njobs:\n  master: [a/../b.sock]\n  worker: [b.sock]\n", &st);
  ck_assert_msg(strstr(m, "d.yaml:4:12: jobs.worker[0]: /job:worker/task:0 at 'b.sock' has "
                          "the address of /job:master/task:0 at 'a/../b.sock' (both are "
                          "socket 'b.sock')") == m, "%s", m);
  ck_assert_str_eq(parse_msg("transport: ipc\njobs: {master: [b.sock], w: [/b.sock, "
                             "x/b.sock]}\n", &st), "");
  m = parse_msg("transport: inproc\njobs: {master: [m], w: [M, m]}\n", &st);
  ck_assert_msg(strstr(m, "d.yaml:2:28: jobs.w[1]: /job:w/task:1 at 'm' has the address of "
                          "/job:master/task:0 at 'm' (both are inproc name 'm')") == m, "%s", m);
}
END_TEST

/* metrics: {port_offset, host}: each task's address at its port + the
 * offset, on its own host or metrics.host; off when absent or 0; errors
 * name file:line:col; ipc/inproc have no port to offset. */
START_TEST(test_metrics_section) {
  tf_status st;
  tf_status_init(&st);
  char *a = NULL;
  tf_cluster_spec *s = parse_ok("jobs: {master: ['127.0.0.1:7070'], worker: ['h1:7072', "
                                "'[::1]:7073']}\n");
  ck_assert_int_eq(tf_cluster_metrics_address(s, "worker", 0, &a, &st), TF_OK);
  ck_assert_ptr_null(a); /* absent: off */
  tf_cluster_spec_free(s);
  s = parse_ok("jobs: {master: ['127.0.0.1:7070'], worker: ['h1:7072', '[::1]:7073']}\n"
               "metrics: {port_offset: 1000}\n");
  ck_assert_int_eq(s->metrics_port_offset, 1000);
  ck_assert_int_eq(tf_cluster_metrics_address(s, "master", 0, &a, &st), TF_OK);
  ck_assert_str_eq(a, "127.0.0.1:8070");
  free(a);
  ck_assert_int_eq(tf_cluster_metrics_address(s, "worker", 1, &a, &st), TF_OK);
  ck_assert_str_eq(a, "[::1]:8073");
  free(a);
  ck_assert_int_eq(tf_cluster_metrics_address(s, "worker", 2, &a, &st), TF_NOT_FOUND);
  tf_cluster_spec_free(s);
  s = parse_ok("jobs: {master: ['127.0.0.1:65000'], worker: ['h1:7072']}\n"
               "metrics: {port_offset: 1000, host: 0.0.0.0}\n");
  ck_assert_int_eq(tf_cluster_metrics_address(s, "worker", 0, &a, &st), TF_OK);
  ck_assert_str_eq(a, "0.0.0.0:8072");
  free(a);
  ck_assert_int_eq(tf_cluster_metrics_address(s, "master", 0, &a, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "port 66000, outside 1..65535") != NULL, "%s", st.msg);
  tf_cluster_spec_free(s);
  ck_assert_str_eq(parse_msg("jobs: {master: [h:1]}\nmetrics: {port_offset: -1}\n", &st),
                   "d.yaml:2:24: metrics.port_offset: expected an integer in 0..65534 "
                   "(0: no metrics; each task serves them at its port + this), got '-1'");
  ck_assert_str_eq(parse_msg("jobs: {master: [h:1]}\nmetrics: {port: 1}\n", &st),
                   "d.yaml:2:11: unknown key 'port' in 'metrics' (expected port_offset, host)");
  ck_assert_str_eq(parse_msg("jobs: {master: [h:1]}\nmetrics: {host: ''}\n", &st),
                   "d.yaml:2:17: metrics.host: expected a host name or address, got ''");
  ck_assert_str_eq(parse_msg("transport: ipc\njobs: {master: [m.sock]}\n"
                             "metrics: {port_offset: 5}\n", &st),
                   "d.yaml:3:24: metrics.port_offset: transport ipc has no ports to offset; "
                   "serve metrics with tfmaster/tfworker --metrics-address HOST:PORT");
  ck_assert_str_eq(parse_msg("transport: ipc\njobs: {master: [m.sock]}\n"
                             "metrics: {port_offset: 0}\n", &st), "");
}
END_TEST

/* data_dirs and ops.allow: parsed, anchored beside the file, errors at
 * file:line:col; the policy built from them reads data_dirs, writes only
 * checkpoint_dir (made when missing), and with neither allows nothing. */
START_TEST(test_confine_keys) {
  tf_status st;
  tf_status_init(&st);
  tf_cluster_spec *s = parse_ok("jobs: {master: [h:1]}\ndata_dirs: [/srv/a, b]\n"
                                "ops: {allow: [_Recv, MatMul]}\n");
  ck_assert_int_eq(s->n_data_dirs, 2);
  ck_assert_str_eq(s->data_dirs[0], "/srv/a");
  ck_assert_str_eq(s->data_dirs[1], "b");
  ck_assert_int_eq(s->n_ops_allow, 2);
  ck_assert_str_eq(s->ops_allow[0], "_Recv");
  tf_cluster_spec_free(s);
  s = parse_ok("jobs: {master: [h:1]}\ndata_dirs: /srv/one\nops: {}\n");
  ck_assert_int_eq(s->n_data_dirs, 1);
  ck_assert_int_eq(s->n_ops_allow, 0);
  tf_cluster_spec_free(s);
  ck_assert_str_eq(parse_msg("jobs: {master: [h:1]}\nops: {allow: [MatMul, NoSuchOp]}\n", &st),
                   "d.yaml:2:23: ops.allow: unknown op 'NoSuchOp' (no op of that name is "
                   "registered in this program)");
  ck_assert_str_eq(parse_msg("jobs: {master: [h:1]}\nops: {deny: [MatMul]}\n", &st),
                   "d.yaml:2:7: ops: unknown key 'deny' in 'ops' (expected allow)");
  ck_assert_ptr_nonnull(strstr(parse_msg("jobs: {master: [h:1]}\ndata_dirs: ['']\n", &st),
                               "d.yaml:2:13: data_dirs: expected a directory"));
  /* relative entries are anchored beside the file; the policy opens them */
  char dir[] = "/tmp/tf_cluster_spec_test_XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  char path[128], data[128], ck[128];
  snprintf(path, sizeof path, "%s/c.yaml", dir);
  snprintf(data, sizeof data, "%s/data", dir);
  snprintf(ck, sizeof ck, "%s/ck/pt", dir);
  ck_assert_int_eq(mkdir(data, 0755), 0);
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs("jobs: {master: [h:1]}\ndata_dirs: [data]\ncheckpoint_dir: ck/pt\n", f);
  fclose(f);
  ck_assert_msg(tf_cluster_spec_load(path, &s, &st) == TF_OK, "%s", st.msg);
  ck_assert_str_eq(s->data_dirs[0], data);
  tf_fs_policy *p = NULL;
  ck_assert_msg(tf_cluster_fs_policy(s, &p, &st) == TF_OK, "%s", st.msg);
  struct stat sb;
  ck_assert_int_eq(stat(ck, &sb), 0); /* made */
  tf__fs_policy_install(p);
  char w[160];
  snprintf(w, sizeof w, "%s/x", data);
  ck_assert_int_lt(tf__fs_open(w, O_WRONLY | O_CREAT, 0644), 0);
  ck_assert(tf__fs_take_denial(&st));
  ck_assert_msg(strstr(st.msg, "read-only") && strstr(st.msg, "data_dirs"), "%s", st.msg);
  snprintf(w, sizeof w, "%s/x", ck);
  int fd = tf__fs_open(w, O_WRONLY | O_CREAT, 0644);
  ck_assert_int_ge(fd, 0);
  close(fd);
  tf__fs_policy_install(NULL);
  tf_cluster_spec_free(s);
  /* a data directory that is missing stops the policy, naming it */
  s = parse_ok("jobs: {master: [h:1]}\ndata_dirs: [/nonexistent/tf-data]\n");
  ck_assert_int_eq(tf_cluster_fs_policy(s, &p, &st), TF_NOT_FOUND);
  ck_assert_msg(strstr(st.msg, "data_dirs '/nonexistent/tf-data'"), "%s", st.msg);
  tf_cluster_spec_free(s);
  /* neither key: nothing may be opened */
  s = parse_ok("jobs: {master: [h:1]}\n");
  ck_assert_int_eq(tf_cluster_fs_policy(s, &p, &st), TF_OK);
  tf__fs_policy_install(p);
  ck_assert_int_lt(tf__fs_open(path, O_RDONLY, 0), 0);
  ck_assert(tf__fs_take_denial(&st));
  ck_assert_msg(strstr(st.msg, "sets neither data_dirs nor checkpoint_dir"), "%s", st.msg);
  tf__fs_policy_install(NULL);
  tf_cluster_spec_free(s);
  char cmd[160];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(cmd), 0);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cluster_spec");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_local_yaml);
  tcase_add_test(tc, test_ps_worker_yaml);
  tcase_add_test(tc, test_conf_files_name_real_flags);
  tcase_add_test(tc, test_defaults);
  tcase_add_test(tc, test_limits);
  tcase_add_test(tc, test_transports_and_urls);
  tcase_add_loop_test(tc, test_errors, 0,
                      (int)(sizeof bad_cases / sizeof bad_cases[0]));
  tcase_add_test(tc, test_load_file);
  tcase_add_test(tc, test_duplicate_addresses);
  tcase_add_test(tc, test_metrics_section);
  tcase_add_test(tc, test_confine_keys);
  tcase_add_test(tc, test_random_round_trip);
  tcase_add_test(tc, test_random_corruption);
  suite_add_tcase(s, tc);
  return s;
}
