/* task_role_test.c: roles and addresses from the environment (envp arrays,
 * no setenv): Slurm's block placement over a zero-padded hostlist, every
 * rank computing the same address table (checked against an independent
 * placement over random node/task layouts), a spec with addresses kept,
 * TF_CONFIG replacing the file's jobs, and each bad environment with an
 * error naming the variable. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/runtime/task_role.h"
#include "test/unit/testutil.h"

static const char *counts_spec =
    "jobs: {master: 1, ps: 1, worker: 2}\nslurm: {base_port: 7070}\n";

static tf_cluster_spec *spec(const char *text) {
  tf_status st;
  tf_status_init(&st);
  tf_cluster_spec *s = NULL;
  ck_assert_msg(tf_cluster_spec_parse(text, strlen(text), "c.yaml", &s, &st)
                == TF_OK, "%s", st.msg);
  return s;
}

/* A Slurm step's environment for rank of n tasks; extra: more "K=V". */
typedef struct envb {
  char v[16][256];
  char *p[17];
} envb;

static char *const *slurm_env(envb *e, int rank, int n, int local,
                              const char *nodes, const char *tpn,
                              const char *node, const char *extra) {
  int k = 0;
  snprintf(e->v[k++], 256, "SLURM_PROCID=%d", rank);
  snprintf(e->v[k++], 256, "SLURM_STEP_NUM_TASKS=%d", n);
  snprintf(e->v[k++], 256, "SLURM_LOCALID=%d", local);
  snprintf(e->v[k++], 256, "SLURM_STEP_NODELIST=%s", nodes);
  snprintf(e->v[k++], 256, "SLURM_STEP_TASKS_PER_NODE=%s", tpn);
  snprintf(e->v[k++], 256, "PATH=/usr/bin");
  if (node != NULL) {
    snprintf(e->v[k++], 256, "SLURMD_NODENAME=%s", node);
  }
  if (extra != NULL) {
    snprintf(e->v[k++], 256, "%s", extra);
  }
  for (int i = 0; i < k; i++) {
    e->p[i] = e->v[i];
  }
  e->p[k] = NULL;
  return e->p;
}

static void table(const tf_cluster_spec *s, char *b, size_t cap) {
  b[0] = '\0';
  for (int j = 0; j < s->n_jobs; j++) {
    for (int t = 0; t < s->jobs[j].n_tasks; t++) {
      size_t l = strlen(b);
      snprintf(b + l, cap - l, "%s/%d=%s ", s->jobs[j].name, t,
               s->jobs[j].addrs[t]);
    }
  }
}

START_TEST(test_slurm_counts) {
  /* n009 runs ranks 0, 1; n010 rank 2; n011 rank 3. */
  static const char *const node[] = {"n009", "n009", "n010", "n011"};
  static const int local[] = {0, 1, 0, 0};
  static const char *const role[] = {"master/0", "ps/0", "worker/0",
                                     "worker/1"};
  const char *want = "master/0=n009:7070 ps/0=n009:7071 worker/0=n010:7070 "
                     "worker/1=n011:7070 ";
  for (int r = 0; r < 4; r++) {
    tf_cluster_spec *s = spec(counts_spec);
    ck_assert(s->counts);
    tf_status st;
    tf_status_init(&st);
    envb e;
    tf_task_role role_out;
    ck_assert_msg(tf_task_role_from_env(s, slurm_env(&e, r, 4, local[r],
                  "n[009-011]", "2,1(x2)", node[r], NULL), &role_out, &st)
                  == TF_OK, "rank %d: %s", r, st.msg);
    char got[512], rl[96];
    table(s, got, sizeof got);
    ck_assert_str_eq(got, want);
    snprintf(rl, sizeof rl, "%s/%d", role_out.job, role_out.task);
    ck_assert_str_eq(rl, role[r]);
    ck_assert_msg(strstr(role_out.how, "from Slurm: SLURM_PROCID=") != NULL,
                  "%s", role_out.how);
    ck_assert(!s->counts);
    char *url = tf_cluster_task_url(s, "ps", 0);
    ck_assert_str_eq(url, "tcp://n009:7071");
    free(url);
    tf_cluster_spec_free(s);
  }
}
END_TEST

START_TEST(test_slurm_addresses_kept) {
  tf_cluster_spec *s = spec("jobs:\n  master: [127.0.0.1:17001]\n"
                            "  worker: [127.0.0.1:17002, 127.0.0.1:17003]\n");
  tf_status st;
  tf_status_init(&st);
  envb e;
  tf_task_role r;
  ck_assert_msg(tf_task_role_from_env(s, slurm_env(&e, 2, 3, 2, "localhost",
                "3", "localhost", NULL), &r, &st) == TF_OK, "%s", st.msg);
  ck_assert_str_eq(r.job, "worker");
  ck_assert_int_eq(r.task, 1);
  ck_assert_str_eq(s->jobs[1].addrs[1], "127.0.0.1:17003");
  tf_cluster_spec_free(s);
}
END_TEST

static void slurm_bad(const char *spec_text, char *const *envp,
                      const char *want) {
  tf_cluster_spec *s = spec(spec_text);
  bool counts = s->counts;
  tf_status st;
  tf_status_init(&st);
  tf_task_role r;
  ck_assert_int_ne(tf_task_role_from_env(s, envp, &r, &st), TF_OK);
  ck_assert_msg(strstr(st.msg, want) != NULL, "'%s' lacks '%s'", st.msg,
                want);
  ck_assert(s->counts == counts); /* unchanged */
  tf_cluster_spec_free(s);
}

START_TEST(test_slurm_errors) {
  envb e;
  const char *cs = counts_spec;
  slurm_bad(cs, slurm_env(&e, 0, 3, 0, "n[1-3]", "1(x3)", "n1", NULL),
            "SLURM_STEP_NUM_TASKS=3 but c.yaml declares 4 tasks (master 1, "
            "ps 1, worker 2): launch them with srun -n 4");
  slurm_bad(cs, slurm_env(&e, 1, 4, 1, "n[1-3]", "2,1(x2)", "n1",
            "SLURM_DISTRIBUTION=cyclic"), "SLURM_DISTRIBUTION=cyclic: only "
            "the block distribution is supported");
  slurm_bad(cs, slurm_env(&e, 1, 4, 0, "n[1-3]", "2,1(x2)", "n2", NULL),
            "Slurm placed SLURM_PROCID=1 on n2 with SLURM_LOCALID=0, but the "
            "block distribution of 2,1(x2) over n[1-3] puts it on n1 with "
            "local id 1");
  slurm_bad(cs, slurm_env(&e, 0, 4, 0, "n[1-2]", "2,1(x2)", NULL, NULL),
            "SLURM_STEP_NODELIST=n[1-2] names 2 nodes but "
            "SLURM_STEP_TASKS_PER_NODE=2,1(x2) gives counts for 3");
  slurm_bad(cs, slurm_env(&e, 0, 4, 0, "n[1-3]", "2,1,2", NULL, NULL),
            "SLURM_STEP_TASKS_PER_NODE=2,1,2 gives 5 tasks but "
            "SLURM_STEP_NUM_TASKS=4");
  slurm_bad(cs, slurm_env(&e, 0, 4, 0, "n[3-1]", "4", NULL, NULL),
            "SLURM_STEP_NODELIST: hostlist 'n[3-1]' at character 3: range "
            "'3-1' runs backwards");
  slurm_bad(cs, slurm_env(&e, 0, 4, 0, "n1", "4(x", NULL, NULL),
            "SLURM_STEP_TASKS_PER_NODE: tasks per node '4(x'");
  slurm_bad(cs, slurm_env(&e, 4, 4, 0, "n1", "4", NULL, NULL),
            "SLURM_PROCID=4 is not below SLURM_STEP_NUM_TASKS=4");
  slurm_bad("jobs: {master: 1, worker: 3}\n",
            slurm_env(&e, 0, 4, 0, "n1", "4", NULL, NULL),
            "c.yaml gives jobs as task counts but no slurm.base_port");
  slurm_bad("jobs: {master: 1, worker: 1}\nslurm: {base_port: 65535}\n",
            slurm_env(&e, 0, 2, 0, "n1", "2", NULL, NULL),
            "slurm.base_port 65535 + local id 1 is above 65535");
  slurm_bad("transport: ipc\njobs: {master: 1}\nslurm: {base_port: 7}\n",
            slurm_env(&e, 0, 1, 0, "n1", "1", NULL, NULL),
            "transport ipc has no host:port addresses");
  char *no_list[] = {"SLURM_PROCID=0", "SLURM_STEP_NUM_TASKS=4",
                     "SLURM_LOCALID=0", NULL};
  slurm_bad(cs, no_list, "SLURM_PROCID is set but SLURM_STEP_NODELIST is "
            "not: start the daemons with srun");
  char *bad_int[] = {"SLURM_PROCID=x", NULL};
  slurm_bad(cs, bad_int, "SLURM_PROCID='x': expected an integer >= 0");
  char *none[] = {"PATH=/bin", "SLURM_PROCIDX=1", NULL};
  slurm_bad(cs, none, "no --job/--task and no TF_CONFIG or SLURM_PROCID in "
            "the environment");
  slurm_bad(cs, NULL, "no --job/--task and no TF_CONFIG");
}
END_TEST

START_TEST(test_tf_config) {
  tf_cluster_spec *s = spec("jobs:\n  master: [127.0.0.1:17001]\n"
                            "timeouts: {rpc_ms: 1234}\n");
  char *env[] = {"SLURM_PROCID=5",
                 "TF_CONFIG={\"cluster\": {\"chief\": [\"127.0.0.1:18000\"], "
                 "\"worker\": [\"127.0.0.1:18001\", \"127.0.0.1:18002\"]}, "
                 "\"task\": {\"type\": \"worker\", \"index\": 1}}", NULL};
  tf_status st;
  tf_status_init(&st);
  tf_task_role r;
  ck_assert_msg(tf_task_role_from_env(s, env, &r, &st) == TF_OK, "%s",
                st.msg);
  ck_assert_str_eq(r.job, "worker");
  ck_assert_int_eq(r.task, 1);
  char got[512];
  table(s, got, sizeof got);
  ck_assert_str_eq(got, "master/0=127.0.0.1:18000 worker/0=127.0.0.1:18001 "
                   "worker/1=127.0.0.1:18002 ");
  ck_assert_int_eq(s->rpc_timeout_ms, 1234); /* the file's, still */
  ck_assert_msg(strstr(r.how, "from TF_CONFIG") != NULL, "%s", r.how);
  tf_cluster_spec_free(s);
  char *dup[] = {"TF_CONFIG={\"cluster\": {\"chief\": [\"127.0.0.1:18000\"], "
                 "\"worker\": [\"127.0.0.1:18000\"]}, \"task\": {\"type\": "
                 "\"chief\", \"index\": 0}}", NULL};
  slurm_bad(counts_spec, dup, "TF_CONFIG: /job:worker/task:0 at "
            "'127.0.0.1:18000' has the address of /job:master/task:0");
  char *badaddr[] = {"TF_CONFIG={\"cluster\": {\"chief\": [\"nohost\"]}, "
                     "\"task\": {\"type\": \"chief\", \"index\": 0}}", NULL};
  slurm_bad(counts_spec, badaddr, "TF_CONFIG: /job:master/task:0: ");
  char *badjson[] = {"TF_CONFIG={\"cluster\": ", NULL};
  slurm_bad(counts_spec, badjson, "TF_CONFIG at character 13: expected a "
            "value, got the end");
}
END_TEST

/* Random layouts: every rank's table equals one placed independently
 * (rank r on the node where the running sum of tasks passes r). The node
 * names are IP addresses (a valid hostlist) so that the distinctness check
 * resolves them at once: names no DNS knows take its 2 s deadline. */
START_TEST(test_random_layouts) {
  tt_rng_reseed(tt_seed() ^ 0x701e);
  for (int iter = 0; iter < 30; iter++) {
    int nodes = 1 + (int)(tt_rand_u64() % 5), per[5], total = 0;
    char tpn[128] = "", hosts[5][16];
    for (int i = 0; i < nodes; i++) {
      per[i] = 1 + (int)(tt_rand_u64() % 3);
      total += per[i];
      snprintf(hosts[i], sizeof hosts[i], "127.0.1.%d", 7 + i);
      size_t l = strlen(tpn);
      snprintf(tpn + l, sizeof tpn - l, "%s%d", i ? "," : "", per[i]);
    }
    int workers = total - 1;
    char text[128], list[32];
    snprintf(text, sizeof text, "jobs: {master: 1%s%d}\nslurm: {base_port: "
             "9000}\n", workers ? ", worker: " : "", workers);
    if (workers == 0) {
      snprintf(text, sizeof text, "jobs: {master: 1}\nslurm: {base_port: "
               "9000}\n");
    }
    snprintf(list, sizeof list, "127.0.1.[%d-%d]", 7, 7 + nodes - 1);
    char want[2048] = "";
    for (int r = 0, i = 0, l = 0; r < total; r++, l++) {
      while (l == per[i]) {
        i++;
        l = 0;
      }
      size_t n = strlen(want);
      snprintf(want + n, sizeof want - n, "%s/%d=%s:%d ",
               r == 0 ? "master" : "worker", r == 0 ? 0 : r - 1, hosts[i],
               9000 + l);
    }
    for (int r = 0, i = 0, l = 0; r < total; r++, l++) {
      while (l == per[i]) {
        i++;
        l = 0;
      }
      tf_cluster_spec *s = spec(text);
      tf_status st;
      tf_status_init(&st);
      envb e;
      tf_task_role role;
      ck_assert_msg(tf_task_role_from_env(s, slurm_env(&e, r, total, l, list,
                    tpn, hosts[i], NULL), &role, &st) == TF_OK, "%s", st.msg);
      char got[2048];
      table(s, got, sizeof got);
      ck_assert_str_eq(got, want);
      tf_cluster_spec_free(s);
    }
  }
}
END_TEST

START_TEST(test_counts_spec) {
  tf_cluster_spec *s = spec(counts_spec);
  tf_status st;
  tf_status_init(&st);
  ck_assert_ptr_null(tf_cluster_task_url(s, "master", 0));
  ck_assert_int_eq(tf_cluster_spec_check_addressed(s, &st),
                   TF_FAILED_PRECONDITION);
  ck_assert_msg(strstr(st.msg, "c.yaml gives its jobs as task counts "
                "(jobs.master: 1), not addresses: only daemons started "
                "under Slurm") != NULL, "%s", st.msg);
  ck_assert_int_eq(s->slurm_base_port, 7070);
  tf_cluster_spec_free(s);
  static const char *const bad[][2] = {
      {"jobs: {master: 1, worker: [a:1]}\n", "c.yaml:1:7: jobs: job 'worker' "
       "lists addresses but others are task counts"},
      {"jobs: {master: 2}\n", "expected exactly one master task, got 2"},
      {"jobs: {master: 1, worker: 0}\n", "jobs.worker: expected an integer "
       "in 1..65536 (a task count), got '0'"},
      {"jobs: {master: 1}\nslurm: {base_port: 0}\n", "slurm.base_port: "
       "expected an integer in 1..65535"},
      {"jobs: {master: 1}\nslurm: {port: 1}\n", "unknown key 'port' in "
       "'slurm'"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    tf_cluster_spec *x = NULL;
    ck_assert_int_eq(tf_cluster_spec_parse(bad[i][0], strlen(bad[i][0]),
                     "c.yaml", &x, &st), TF_INVALID_ARGUMENT);
    ck_assert_msg(strstr(st.msg, bad[i][1]) != NULL, "'%s' lacks '%s'",
                  st.msg, bad[i][1]);
  }
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("task_role");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_slurm_counts);
  tcase_add_test(tc, test_slurm_addresses_kept);
  tcase_add_test(tc, test_slurm_errors);
  tcase_add_test(tc, test_tf_config);
  tcase_add_test(tc, test_random_layouts);
  tcase_add_test(tc, test_counts_spec);
  suite_add_tcase(s, tc);
  return s;
}
