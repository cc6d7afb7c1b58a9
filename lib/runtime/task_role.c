/* task_role.c: this process's job and task, and every task's address,
 * from TF_CONFIG or from the variables srun sets (task_role.h). The whole
 * address table is built first and handed to tf_cluster_spec_set_jobs,
 * which checks it as it checks a file's. */
#include "lib/runtime/task_role.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "lib/runtime/hostlist.h"
#include "lib/runtime/log.h"
#include "lib/runtime/tf_config.h"

static const char *env_get(char *const *envp, const char *name) {
  size_t n = strlen(name);
  for (int i = 0; envp != NULL && envp[i] != NULL; i++) {
    if (strncmp(envp[i], name, n) == 0 && envp[i][n] == '=') {
      return envp[i] + n + 1;
    }
  }
  return NULL;
}

/* A non-negative decimal variable; a clear error if absent or malformed. */
static tf_code env_int(char *const *envp, const char *name, int *out,
                       tf_status *st) {
  const char *v = env_get(envp, name);
  if (v == NULL) {
    return tf_status_set(st, TF_FAILED_PRECONDITION, "SLURM_PROCID is set "
                         "but %s is not: start the daemons with srun (a "
                         "batch script itself is not a job step)", name);
  }
  size_t n = strlen(v);
  if (n == 0 || n > 9 || strspn(v, "0123456789") != n) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s='%.80s': expected an "
                         "integer >= 0", name, v);
  }
  *out = atoi(v);
  return TF_OK;
}

/* Copies jobs (names and addresses) for tf_cluster_spec_set_jobs. */
static tf_cluster_job *jobs_copy(const tf_cluster_job *jobs, int n) {
  tf_cluster_job *c = tf__xcalloc((size_t)n + 1, sizeof *c);
  for (int j = 0; j < n; j++) {
    c[j].name = tf__xstrdup(jobs[j].name);
    c[j].n_tasks = jobs[j].n_tasks;
    c[j].addrs = tf__xcalloc((size_t)jobs[j].n_tasks, sizeof *c[j].addrs);
    for (int t = 0; t < jobs[j].n_tasks; t++) {
      c[j].addrs[t] = tf__xstrdup(jobs[j].addrs[t]);
    }
  }
  return c;
}

static tf_code from_tf_config(tf_cluster_spec *s, const char *text,
                              tf_task_role *out, tf_status *st) {
  tf_tfconfig *c = NULL;
  TF_TRY(tf_tfconfig_parse(text, strlen(text), &c, st));
  if (c->note[0] != '\0') {
    tf_log(LOG_NOTICE, "%s", c->note);
  }
  if (!s->counts) {
    tf_log(LOG_NOTICE, "TF_CONFIG's cluster replaces the jobs listed in %s",
           s->path);
  }
  tf_code code = tf_cluster_spec_set_jobs(s, jobs_copy(c->jobs, c->n_jobs),
                                          c->n_jobs, "TF_CONFIG", st);
  if (code == TF_OK) {
    snprintf(out->job, sizeof out->job, "%s", c->job);
    out->task = c->task;
    const tf_cluster_job *j = tf_cluster_spec_job(s, c->job);
    snprintf(out->how, sizeof out->how, "role /job:%s/task:%d at %s from "
             "TF_CONFIG (%d jobs)", c->job, c->task, j->addrs[c->task],
             s->n_jobs);
  }
  tf_tfconfig_free(c);
  return code;
}

/* What srun said about the step. */
typedef struct step {
  int rank, n_tasks, local_id;
  const char *nodelist, *tpn, *nodename;
  char **hosts;
  int n_hosts;
  int *per_node;
  int n_per_node;
  int *node_of, *local_of; /* per rank, block distribution */
} step;

static void step_fini(step *p) {
  tf_hostlist_free(p->hosts, p->n_hosts);
  free(p->per_node);
  free(p->node_of);
  free(p->local_of);
}

/* "master 1, ps 1, worker 2" */
static void job_counts(const tf_cluster_spec *s, char *b, size_t cap) {
  b[0] = '\0';
  for (int j = 0; j < s->n_jobs; j++) {
    size_t l = strlen(b);
    snprintf(b + l, cap - l, "%s%s %d", j ? ", " : "", s->jobs[j].name,
             s->jobs[j].n_tasks);
  }
}

/* Reads srun's variables into p and checks them against each other and
 * against s's task count. */
static tf_code step_read(const tf_cluster_spec *s, char *const *envp, step *p,
                         tf_status *st) {
  TF_TRY(env_int(envp, "SLURM_PROCID", &p->rank, st));
  TF_TRY(env_int(envp, "SLURM_STEP_NUM_TASKS", &p->n_tasks, st));
  TF_TRY(env_int(envp, "SLURM_LOCALID", &p->local_id, st));
  p->nodelist = env_get(envp, "SLURM_STEP_NODELIST");
  p->tpn = env_get(envp, "SLURM_STEP_TASKS_PER_NODE");
  p->nodename = env_get(envp, "SLURMD_NODENAME");
  if (p->nodelist == NULL || p->tpn == NULL) {
    return env_int(envp, p->nodelist == NULL ? "SLURM_STEP_NODELIST"
                   : "SLURM_STEP_TASKS_PER_NODE", &p->rank, st);
  }
  int total = 0;
  for (int j = 0; j < s->n_jobs; j++) {
    total += s->jobs[j].n_tasks;
  }
  if (p->n_tasks != total) {
    char counts[512];
    job_counts(s, counts, sizeof counts);
    return tf_status_set(st, TF_INVALID_ARGUMENT, "SLURM_STEP_NUM_TASKS=%d "
                         "but %s declares %d tasks (%s): launch them with "
                         "srun -n %d", p->n_tasks, s->path, total, counts,
                         total);
  }
  if (p->rank >= p->n_tasks) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "SLURM_PROCID=%d is not "
                         "below SLURM_STEP_NUM_TASKS=%d", p->rank,
                         p->n_tasks);
  }
  const char *d = env_get(envp, "SLURM_DISTRIBUTION");
  if (d != NULL && strncmp(d, "block", 5) != 0) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "SLURM_DISTRIBUTION=%.60s: "
                         "only the block distribution is supported (every "
                         "task derives the others' nodes from it): srun "
                         "--distribution=block", d);
  }
  /* The decoders name the list, not the variable it came from. */
  if (tf_hostlist_expand(p->nodelist, &p->hosts, &p->n_hosts, st) != TF_OK) {
    return tf_status_prefix(st, "SLURM_STEP_NODELIST");
  }
  if (tf_tasks_per_node_expand(p->tpn, &p->per_node, &p->n_per_node, st) !=
      TF_OK) {
    return tf_status_prefix(st, "SLURM_STEP_TASKS_PER_NODE");
  }
  return TF_OK;
}

/* Places every rank by block distribution; checks this rank's node and
 * local id against what Slurm says. */
static tf_code step_place(step *p, tf_status *st) {
  if (p->n_per_node != p->n_hosts) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "SLURM_STEP_NODELIST="
                         "%.200s names %d nodes but SLURM_STEP_TASKS_PER_NODE"
                         "=%.100s gives counts for %d", p->nodelist,
                         p->n_hosts, p->tpn, p->n_per_node);
  }
  p->node_of = tf__xcalloc((size_t)p->n_tasks, sizeof *p->node_of);
  p->local_of = tf__xcalloc((size_t)p->n_tasks, sizeof *p->local_of);
  int r = 0;
  for (int i = 0; i < p->n_hosts; i++) {
    for (int l = 0; l < p->per_node[i] && r < p->n_tasks; l++, r++) {
      p->node_of[r] = i;
      p->local_of[r] = l;
    }
  }
  int sum = 0;
  for (int i = 0; i < p->n_per_node; i++) {
    sum += p->per_node[i];
  }
  if (sum != p->n_tasks) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "SLURM_STEP_TASKS_PER_NODE"
                         "=%.100s gives %d tasks but SLURM_STEP_NUM_TASKS=%d",
                         p->tpn, sum, p->n_tasks);
  }
  const char *host = p->hosts[p->node_of[p->rank]];
  int local = p->local_of[p->rank];
  if (local != p->local_id ||
      (p->nodename != NULL && strcmp(p->nodename, host) != 0)) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "Slurm placed SLURM_PROCID"
                         "=%d on %.80s with SLURM_LOCALID=%d, but the block "
                         "distribution of %.100s over %.200s puts it on "
                         "%.80s with local id %d: launch with srun "
                         "--distribution=block", p->rank,
                         p->nodename ? p->nodename : "?", p->local_id, p->tpn,
                         p->nodelist, host, local);
  }
  return TF_OK;
}

/* The address table: the file's, or node:base_port+local for counts. */
static tf_code step_jobs(const tf_cluster_spec *s, const step *p,
                         tf_cluster_job **out, tf_status *st) {
  if (!s->counts) {
    *out = jobs_copy(s->jobs, s->n_jobs);
    return TF_OK;
  }
  if (s->slurm_base_port == 0) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s gives jobs as task "
                         "counts but no slurm.base_port (e.g. slurm: "
                         "{base_port: 7070}): the tasks' ports are base_port "
                         "+ their local id on their node", s->path);
  }
  if (strcmp(s->transport, "tcp") != 0 && strcmp(s->transport, "tls+tcp") != 0) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: transport %s has no "
                         "host:port addresses; under Slurm use tcp or tls+tcp",
                         s->path, s->transport);
  }
  int max_local = 0;
  for (int i = 0; i < p->n_per_node; i++) {
    max_local = TF_MAX(max_local, p->per_node[i] - 1);
  }
  if (s->slurm_base_port + max_local > 65535) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "slurm.base_port %d + local "
                         "id %d is above 65535 (%s)", s->slurm_base_port,
                         max_local, s->path);
  }
  tf_cluster_job *jobs = tf__xcalloc((size_t)s->n_jobs, sizeof *jobs);
  for (int j = 0, r = 0; j < s->n_jobs; j++) {
    jobs[j].name = tf__xstrdup(s->jobs[j].name);
    jobs[j].n_tasks = s->jobs[j].n_tasks;
    jobs[j].addrs = tf__xcalloc((size_t)jobs[j].n_tasks, sizeof *jobs[j].addrs);
    for (int t = 0; t < jobs[j].n_tasks; t++, r++) {
      jobs[j].addrs[t] = tf__xasprintf("%s:%d", p->hosts[p->node_of[r]],
                                       s->slurm_base_port + p->local_of[r]);
    }
  }
  *out = jobs;
  return TF_OK;
}

static tf_code from_slurm(tf_cluster_spec *s, char *const *envp,
                          tf_task_role *out, tf_status *st) {
  step p = {0};
  tf_cluster_job *jobs = NULL;
  tf_code code = step_read(s, envp, &p, st);
  code = code == TF_OK ? step_place(&p, st) : code;
  code = code == TF_OK ? step_jobs(s, &p, &jobs, st) : code;
  int n_jobs = s->n_jobs;
  if (code == TF_OK) {
    code = tf_cluster_spec_set_jobs(s, jobs, n_jobs, "Slurm", st);
  }
  if (code == TF_OK) {
    int j = 0, t = p.rank;
    while (t >= s->jobs[j].n_tasks) {
      t -= s->jobs[j++].n_tasks;
    }
    snprintf(out->job, sizeof out->job, "%s", s->jobs[j].name);
    out->task = t;
    snprintf(out->how, sizeof out->how, "role /job:%s/task:%d at %s from "
             "Slurm: SLURM_PROCID=%d of %d on %s, local id %d (nodes %.120s, "
             "tasks per node %.60s)", out->job, t, s->jobs[j].addrs[t],
             p.rank, p.n_tasks, p.hosts[p.node_of[p.rank]], p.local_id,
             p.nodelist, p.tpn);
  }
  step_fini(&p);
  return code;
}

tf_code tf_task_role_from_env(tf_cluster_spec *s, char *const *envp,
                              tf_task_role *out, tf_status *st) {
  memset(out, 0, sizeof *out);
  const char *tfc = env_get(envp, "TF_CONFIG");
  if (tfc != NULL && tfc[0] != '\0') {
    return from_tf_config(s, tfc, out, st);
  }
  if (env_get(envp, "SLURM_PROCID") != NULL) {
    return from_slurm(s, envp, out, st);
  }
  return tf_status_set(st, TF_FAILED_PRECONDITION, "no --job/--task and no "
                       "TF_CONFIG or SLURM_PROCID in the environment (%s "
                       "needs one of them to name this process's task)",
                       s->path);
}
