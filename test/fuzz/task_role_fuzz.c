/* task_role_fuzz.c: libFuzzer harness for tf_task_role_from_env
 * (lib/runtime/task_role.h): a daemon's role and every task's address from
 * SLURM_* or TF_CONFIG variables. The first 6 bytes make a valid cluster
 * spec: flags (bit 0: jobs as task counts, else addresses; bits 1-2: the
 * transport), the number of jobs (master, ps, worker), where master is
 * declared, 2 bits of task count per other job, and slurm.base_port (0:
 * none). The rest is the environment, one "NAME=value" a line.
 *
 * A rejection must be INVALID_ARGUMENT or FAILED_PRECONDITION naming the
 * variable (SLURM_..., TF_CONFIG), the spec, or Slurm as the source of a
 * table that fails the spec's checks (a node listed twice gives two tasks
 * one address), and leave the spec as it was. An accepted environment must give every task a distinct
 * address and this process a task of the table; from TF_CONFIG the table
 * is TF_CONFIG's cluster; from Slurm, the role is the SLURM_PROCID-th task
 * in declared order, counts become node:base_port+local id by an
 * independent block placement here, and every other rank of the step
 * (its own SLURM_PROCID, SLURM_LOCALID and SLURMD_NODENAME) is accepted
 * and computes the identical table. Seeds: test/fuzz/corpus/task_role/. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "lib/runtime/hostlist.h"
#include "lib/runtime/log.h"
#include "lib/runtime/task_role.h"
#include "lib/runtime/tf_config.h"
#include "test/fuzz/fuzz_resolve.h"
#include "test/fuzz/fuzz_util.h"

#define HEADER 6
#define MAX_ENV 64
#define SPEC_NAME "fuzz.yaml"

static const char *const transports[] = {"tcp", "ipc", "inproc", "tls+tcp"};

/* The spec the header describes (always valid). */
static tf_cluster_spec *make_spec(const uint8_t *h) {
  static const char *const names[] = {"ps", "worker"};
  int n_jobs = 1 + h[1] % 3, master_at = h[2] % n_jobs, port = h[4] << 8 | h[5];
  bool counts = h[0] & 1;
  const char *transport = transports[(h[0] >> 1) & 3];
  char text[2048];
  int len = snprintf(text, sizeof text, "transport: %s\njobs:\n", transport);
  for (int j = 0, other = 0, flat = 0; j < n_jobs; j++) {
    bool m = j == master_at;
    const char *name = m ? "master" : names[other];
    int tasks = m ? 1 : 1 + ((h[3] >> (2 * other)) & 3);
    other += !m;
    len += snprintf(text + len, sizeof text - (size_t)len, "  %s: ", name);
    if (counts) {
      len += snprintf(text + len, sizeof text - (size_t)len, "%d\n", tasks);
      continue;
    }
    for (int t = 0; t < tasks; t++, flat++) {
      const char *tr = transport;
      len += snprintf(text + len, sizeof text - (size_t)len,
                      tr[0] == 'i' && tr[1] == 'p' ? "%srun/t%d.sock"
                      : tr[0] == 'i' ? "%st%d" : "%s10.0.0.%d:7000",
                      t ? ", " : "[", flat + 1);
    }
    len += snprintf(text + len, sizeof text - (size_t)len, "]\n");
  }
  if (port != 0) {
    snprintf(text + len, sizeof text - (size_t)len, "slurm: {base_port: %d}\n",
             port);
  }
  tf_status st;
  tf_status_init(&st);
  tf_cluster_spec *s = NULL;
  FUZZ_CHECK(tf_cluster_spec_parse(text, strlen(text), SPEC_NAME, &s, &st) ==
                 TF_OK, &st);
  return s;
}

/* "job/task=addr ..." for every task (addresses or counts). */
static char *table(const tf_cluster_spec *s) {
  size_t cap = 64, n = 0;
  char *b = malloc(cap);
  b[0] = '\0';
  for (int j = 0; j < s->n_jobs; j++) {
    for (int t = 0; t < s->jobs[j].n_tasks; t++) {
      const char *a = s->jobs[j].addrs ? s->jobs[j].addrs[t] : "(count)";
      size_t need = strlen(s->jobs[j].name) + strlen(a) + 32;
      if (n + need > cap) {
        cap = (n + need) * 2;
        b = realloc(b, cap);
      }
      n += (size_t)sprintf(b + n, "%s/%d=%s ", s->jobs[j].name, t, a);
    }
  }
  return b;
}

static const char *env_get(char *const *envp, const char *name) {
  size_t n = strlen(name);
  for (int i = 0; envp[i] != NULL; i++) {
    if (strncmp(envp[i], name, n) == 0 && envp[i][n] == '=') {
      return envp[i] + n + 1;
    }
  }
  return NULL;
}

/* The flat task index r: its job and task in declared order. */
static void nth_task(const tf_cluster_spec *s, int r, int *job, int *task) {
  int j = 0;
  while (r >= s->jobs[j].n_tasks) {
    r -= s->jobs[j++].n_tasks;
  }
  *job = j;
  *task = r;
}

static void check_accepted(const tf_cluster_spec *s, const tf_task_role *role,
                           const tf_status *st) {
  FUZZ_CHECK(!s->counts && role->how[0] != '\0', st);
  const tf_cluster_job *mine = tf_cluster_spec_job(s, role->job);
  FUZZ_CHECK(mine != NULL && role->task >= 0 && role->task < mine->n_tasks,
             st);
  int masters = 0;
  for (int j = 0; j < s->n_jobs; j++) {
    masters += strcmp(s->jobs[j].name, "master") == 0 ? s->jobs[j].n_tasks : 0;
    for (int t = 0; t < s->jobs[j].n_tasks; t++) {
      for (int k = 0; k <= j; k++) {
        for (int u = 0; u < (k == j ? t : s->jobs[k].n_tasks); u++) {
          FUZZ_CHECK(strcmp(s->jobs[k].addrs[u], s->jobs[j].addrs[t]) != 0,
                     st);
        }
      }
    }
  }
  FUZZ_CHECK(masters == 1, st);
}

/* TF_CONFIG: the table is its cluster, the role its task. */
static void check_tf_config(const tf_cluster_spec *s, const tf_task_role *role,
                            const char *text, const tf_status *st) {
  tf_tfconfig *c = NULL;
  tf_status st2;
  FUZZ_CHECK(tf_tfconfig_parse(text, strlen(text), &c, &st2) == TF_OK, &st2);
  FUZZ_CHECK(c->n_jobs == s->n_jobs && strcmp(c->job, role->job) == 0 &&
                 c->task == role->task, st);
  for (int j = 0; j < s->n_jobs; j++) {
    FUZZ_CHECK(strcmp(c->jobs[j].name, s->jobs[j].name) == 0 &&
                   c->jobs[j].n_tasks == s->jobs[j].n_tasks, st);
    for (int t = 0; t < s->jobs[j].n_tasks; t++) {
      FUZZ_CHECK(strcmp(c->jobs[j].addrs[t], s->jobs[j].addrs[t]) == 0, st);
    }
  }
  tf_tfconfig_free(c);
}

/* Slurm's block placement, computed here: rank r runs on node node_of[r]
 * with local id local_of[r]. */
typedef struct place {
  char **hosts;
  int n_hosts, n;
  int *node_of, *local_of;
} place;

static void place_ranks(char *const *envp, int n, place *p,
                        const tf_status *st) {
  tf_status st2;
  int *per_node, n_per_node;
  FUZZ_CHECK(tf_hostlist_expand(env_get(envp, "SLURM_STEP_NODELIST"),
                                &p->hosts, &p->n_hosts, &st2) == TF_OK, &st2);
  FUZZ_CHECK(tf_tasks_per_node_expand(env_get(envp,
                                              "SLURM_STEP_TASKS_PER_NODE"),
                                      &per_node, &n_per_node, &st2) == TF_OK,
             &st2);
  FUZZ_CHECK(n_per_node == p->n_hosts, st);
  p->n = n;
  p->node_of = calloc((size_t)n, sizeof *p->node_of);
  p->local_of = calloc((size_t)n, sizeof *p->local_of);
  int r = 0;
  for (int i = 0; i < n_per_node; i++) {
    for (int l = 0; l < per_node[i]; l++, r++) {
      FUZZ_CHECK(r < n, st);
      p->node_of[r] = i;
      p->local_of[r] = l;
    }
  }
  FUZZ_CHECK(r == n, st);
  free(per_node);
}

/* Rank other's environment: envp with its own SLURM_PROCID, SLURM_LOCALID
 * and (if set) SLURMD_NODENAME in front (the first of a name counts). */
static void rank_env(char *const *envp, const place *p, int other,
                     char v[3][320], char **out) {
  int k = 0;
  snprintf(v[0], 320, "SLURM_PROCID=%d", other);
  snprintf(v[1], 320, "SLURM_LOCALID=%d", p->local_of[other]);
  out[k++] = v[0];
  out[k++] = v[1];
  if (env_get(envp, "SLURMD_NODENAME") != NULL) {
    snprintf(v[2], 320, "SLURMD_NODENAME=%s", p->hosts[p->node_of[other]]);
    out[k++] = v[2];
  }
  for (int i = 0; envp[i] != NULL; i++) {
    out[k++] = envp[i];
  }
  out[k] = NULL;
}

static void check_slurm(const uint8_t *h, const tf_cluster_spec *s,
                        const tf_task_role *role, char *const *envp,
                        const char *before, bool counts, const tf_status *st) {
  int rank = atoi(env_get(envp, "SLURM_PROCID")), n = 0, job, task;
  for (int j = 0; j < s->n_jobs; j++) {
    n += s->jobs[j].n_tasks;
  }
  place p = {0};
  place_ranks(envp, n, &p, st);
  nth_task(s, rank, &job, &task);
  FUZZ_CHECK(strcmp(s->jobs[job].name, role->job) == 0 && task == role->task,
             st);
  char *mine = table(s);
  if (!counts) {
    FUZZ_CHECK(strcmp(before, mine) == 0, st); /* the file's addresses kept */
  }
  for (int r = 0; counts && r < n; r++) {
    char want[320];
    nth_task(s, r, &job, &task);
    snprintf(want, sizeof want, "%s:%d", p.hosts[p.node_of[r]],
             s->slurm_base_port + p.local_of[r]);
    FUZZ_CHECK(strcmp(s->jobs[job].addrs[task], want) == 0, st);
  }
  for (int other = 0; other < n; other++) {
    char v[3][320], *env[MAX_ENV + 4];
    rank_env(envp, &p, other, v, env);
    tf_cluster_spec *s2 = make_spec(h);
    tf_task_role role2;
    tf_status st2;
    FUZZ_CHECK(tf_task_role_from_env(s2, env, &role2, &st2) == TF_OK, &st2);
    char *theirs = table(s2);
    nth_task(s2, other, &job, &task);
    FUZZ_CHECK(strcmp(mine, theirs) == 0 && task == role2.task &&
                   strcmp(s2->jobs[job].name, role2.job) == 0, &st2);
    free(theirs);
    tf_cluster_spec_free(s2);
  }
  free(mine);
  tf_hostlist_free(p.hosts, p.n_hosts);
  free(p.node_of);
  free(p.local_of);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < HEADER) {
    return 0;
  }
  tf_log_set_level(LOG_WARNING); /* no notes about replaced jobs */
  char *text = malloc(size - HEADER + 1), *env[MAX_ENV + 1];
  memcpy(text, data + HEADER, size - HEADER);
  text[size - HEADER] = '\0';
  int n_env = 0;
  for (char *line = text; line != NULL && n_env < MAX_ENV;) {
    char *nl = strchr(line, '\n');
    if (nl != NULL) {
      *nl = '\0';
    }
    env[n_env++] = line;
    line = nl ? nl + 1 : NULL;
  }
  env[n_env] = NULL;
  tf_cluster_spec *s = make_spec(data);
  char *before = table(s);
  bool counts = s->counts;
  tf_task_role role;
  tf_status st;
  tf_status_init(&st);
  tf_code c = tf_task_role_from_env(s, env, &role, &st);
  if (c != TF_OK) {
    FUZZ_CHECK((c == TF_INVALID_ARGUMENT || c == TF_FAILED_PRECONDITION) &&
                   (strstr(st.msg, "SLURM") != NULL ||
                    strncmp(st.msg, "Slurm: ", 7) == 0 ||
                    strstr(st.msg, "TF_CONFIG") != NULL ||
                    strstr(st.msg, SPEC_NAME) != NULL), &st);
    char *after = table(s);
    FUZZ_CHECK(strcmp(before, after) == 0 && s->counts == counts, &st);
    free(after);
  } else {
    check_accepted(s, &role, &st);
    const char *tfc = env_get(env, "TF_CONFIG");
    if (tfc != NULL && tfc[0] != '\0') {
      check_tf_config(s, &role, tfc, &st);
    } else {
      check_slurm(data, s, &role, env, before, counts, &st);
    }
  }
  free(before);
  tf_cluster_spec_free(s);
  free(text);
  return 0;
}
