/* bench_replicas.c: data-parallel replicas on loopback, after OSDI 2016
 * §6.2 and its Fig. 6 (`make bench-replicas`).
 *
 * For W = 1, 2 and 4 workers it starts a real cluster (build/bin/tfmaster,
 * N_PS tfworker ps tasks and W tfworker workers, on free loopback ports,
 * children of this process) and times null training steps through one
 * remote session, one client thread per worker running that worker's
 * replica step over and over, all at once (OSDI §4.4's replicas, without
 * the synchronisation barrier: each thread's step time is a replica step):
 *
 * - scalar: one float32 [1] variable on each ps task (4 bytes each). A
 *   replica step reads every shard on its worker (Identity), makes an
 *   update of the same shape there (OnesLike) and applies it on the ps
 *   (AssignAdd).
 * - dense_100mb: the same with 100 MB of float32 split evenly over the ps
 *   tasks: every replica step moves 100 MB to the worker and 100 MB back.
 * - sparse_100mb, sparse_1gb: an embedding [rows, 64] float32 of 100 MB
 *   and of 1 GB, its rows sharded over the ps tasks by id % N_PS (TF's
 *   "mod" partition strategy). A step feeds 32 seeded random ids to its
 *   worker, which splits them by shard (FloorMod, DynamicPartition) and
 *   turns them into shard rows (FloorDiv); each shard's Gather and
 *   ScatterSub run on its ps, colocated with the shard, and the 32 gathered
 *   rows go to the worker and an update of the same size (OnesLike) back.
 *   Each client thread alternates between the two tables step by step, so
 *   that background load falls on both alike.
 *
 * Every variable is initialised on its ps (Fill, Assign); after each model
 * the values are checked (every dense element equals the number of replica
 * steps applied; each sparse table sums to -(steps x 32 x 64)). The
 * median and p90 of the replica step times are printed beside the paper's
 * figures (which come from a shared production cluster with 16 ps tasks,
 * not loopback).
 *
 * Then Fashion-MNIST: conf/jobs/fmnist-mlp-{sync,async}.yaml with 1 and 2
 * workers and a fixed number of steps (no eval, no checkpoints) submitted
 * to the master of the 1- and 2-worker clusters; updates/s are read from
 * JobStatus polls after a warm-up, and images/s = updates/s x batch x
 * workers (sync: one update aggregates every worker's batch) or x batch
 * (async: one update per replica step).
 *
 * The last two lines are sparse_1gb_vs_100mb (the largest ratio of the
 * median sparse step times over W; goal <= 1.2) and
 * sync_2w_images_per_s_vs_1w. A daemon that dies, a step that fails or a
 * wrong value ends the run with a message and exit status 1; the daemons
 * are stopped at exit, on SIGINT/SIGTERM and on errors. */
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cmd/tfctl/ctl_client.h"
#include "cmd/tfctl/ctl_procs.h"
#include "tf/tf.h"

#define N_PS 2
#define MAX_WORKERS 4
#define BC_MAX_PROCS (1 + N_PS + MAX_WORKERS)
#define BC_NAME "bench_replicas"
#define DENSE_BYTES 100000000LL
#define SPARSE_DIM 64
#define SPARSE_IDS 32
#define SPARSE_SMALL_BYTES 100000000LL
#define SPARSE_BIG_BYTES 1000000000LL
/* Replica steps per worker thread: warm-up (not timed), then timed. */
#define SCALAR_WARMUP 20
#define SCALAR_STEPS 500
#define DENSE_WARMUP 2
#define DENSE_STEPS 16
#define SPARSE_WARMUP 20
#define SPARSE_STEPS 400
/* Fashion-MNIST jobs: updates (global steps); rates from the first poll at
 * or past a fifth of them to the last poll while running. */
#define JOB_STEPS_SYNC 1000
#define JOB_STEPS_ASYNC 1200
#define JOB_POLL_MS 25
#define JOB_STALL_MS 60000   /* no new step for this long: the job hangs */
#define JOB_TIMEOUT_MS 600000
#define STEP_TIMEOUT_MS 60000
#define RPC_MS 10000

#include "bench/bench_cluster.h"

/* ---- the null-step models ---- */

typedef enum { M_DENSE, M_SPARSE } model_kind;

/* One model: N_PS shards on the ps tasks and, per worker, a replica step
 * (the targets "<name>/w<w>/update_<k>", feeding "<name>/w<w>/ids" when
 * sparse). */
typedef struct model {
  const char *name;
  model_kind kind;
  int64_t shard[N_PS]; /* dense: elements per shard; sparse: rows per shard */
  int64_t bytes;       /* the whole model */
  int64_t applied;     /* replica steps run so far (warm-up included) */
} model;

static tf_node *add_node(tf_graph *g, const char *op, const char *name, const char *device,
                         const tf_output *in, int n_in, const tf_attr_kv *attrs, int n_attrs) {
  tf_status st;
  tf_node_builder *b = tf_node_begin(g, op, name);
  for (int i = 0; i < n_in; i++) {
    tf_node_add_input(b, in[i]);
  }
  for (int i = 0; i < n_attrs; i++) {
    tf_node_set_attr(b, attrs[i].name, attrs[i].value);
  }
  tf_node_set_device(b, device);
  tf_node *n = tf_node_finish(b, &st);
  if (n == NULL) {
    bc_die("building %s (%s on %s): %s", name, op, device, st.msg);
  }
  return n;
}

/* A Const node holding t (the reference stays the caller's). */
static tf_output add_const(tf_graph *g, const char *name, const char *device, tf_tensor *t) {
  tf_attr_kv a[] = {{"dtype", tf_attr_type_v(t->dtype)}, {"value", tf_attr_tensor(t)}};
  return (tf_output){add_node(g, "Const", name, device, NULL, 0, a, 2), 0};
}

static tf_output add_const_i32(tf_graph *g, const char *name, const char *device, int n,
                               const int32_t *v) {
  tf_tensor *t = n == 0 ? tf_tensor_scalar_i32(v[0]) : tf_tensor_vec_i32(n, v);
  tf_output o = add_const(g, name, device, t);
  tf_tensor_unref(t);
  return o;
}

static void ps_device(int k, char *buf, size_t size) {
  snprintf(buf, size, "/job:ps/task:%d", k);
}

static void worker_device(int w, char *buf, size_t size) {
  snprintf(buf, size, "/job:worker/task:%d", w);
}

/* Shard k: "<name>/var_<k>" of its shape on ps k, initialised by
 * "<name>/init_<k>" = Assign(var, Fill(shape, 0)) there. */
static tf_node *add_shard(tf_graph *g, const model *m, int k) {
  char dev[48], name[96], nm2[96];
  ps_device(k, dev, sizeof dev);
  int64_t dims[2] = {m->shard[k], SPARSE_DIM};
  int rank = m->kind == M_SPARSE ? 2 : 1;
  tf_shape sh = tf_shape_make(rank, dims);
  snprintf(name, sizeof name, "%s/var_%d", m->name, k);
  tf_attr_kv av[] = {{"shape", tf_attr_shape(sh)}, {"dtype", tf_attr_type_v(TF_FLOAT32)}};
  tf_node *var = add_node(g, "VariableV2", name, dev, NULL, 0, av, 2);
  int32_t d32[2] = {(int32_t)dims[0], (int32_t)dims[1]};
  snprintf(name, sizeof name, "%s/init_dims_%d", m->name, k);
  tf_output fin[2] = {add_const_i32(g, name, dev, rank, d32), {0}};
  tf_tensor *zero = tf_tensor_scalar_f32(0.0f);
  snprintf(name, sizeof name, "%s/init_zero_%d", m->name, k);
  fin[1] = add_const(g, name, dev, zero);
  tf_tensor_unref(zero);
  snprintf(name, sizeof name, "%s/init_fill_%d", m->name, k);
  tf_output ain[2] = {{var, 0}, {add_node(g, "Fill", name, dev, fin, 2, NULL, 0), 0}};
  snprintf(nm2, sizeof nm2, "%s/init_%d", m->name, k);
  add_node(g, "Assign", nm2, dev, ain, 2, NULL, 0);
  return var;
}

/* Dense replica step of worker w on shard k: read on the worker, an update
 * of the same shape made there, AssignAdd on the ps. */
static void add_dense_step(tf_graph *g, const model *m, tf_node *var, int k, int w) {
  char ps[48], wk[48], name[96];
  ps_device(k, ps, sizeof ps);
  worker_device(w, wk, sizeof wk);
  tf_output in = {var, 0};
  snprintf(name, sizeof name, "%s/w%d/read_%d", m->name, w, k);
  in = (tf_output){add_node(g, "Identity", name, wk, &in, 1, NULL, 0), 0};
  snprintf(name, sizeof name, "%s/w%d/delta_%d", m->name, w, k);
  tf_output upd[2] = {{var, 0}, {add_node(g, "OnesLike", name, wk, &in, 1, NULL, 0), 0}};
  snprintf(name, sizeof name, "%s/w%d/update_%d", m->name, w, k);
  add_node(g, "AssignAdd", name, ps, upd, 2, NULL, 0);
}

/* Sparse replica step of worker w: ids (fed, [32] int32) split by shard on
 * the worker; per shard a Gather and a ScatterSub on its ps. */
static void add_sparse_step(tf_graph *g, const model *m, tf_node *const *vars, int w) {
  char wk[48], ps[48], name[96];
  worker_device(w, wk, sizeof wk);
  int64_t n_ids = SPARSE_IDS;
  snprintf(name, sizeof name, "%s/w%d/ids", m->name, w);
  tf_attr_kv ap[] = {{"dtype", tf_attr_type_v(TF_INT32)},
                     {"shape", tf_attr_shape(tf_shape_make(1, &n_ids))}};
  tf_output ids = {add_node(g, "Placeholder", name, wk, NULL, 0, ap, 2), 0};
  int32_t n_ps = N_PS;
  snprintf(name, sizeof name, "%s/w%d/n_ps", m->name, w);
  tf_output mod_in[2] = {ids, add_const_i32(g, name, wk, 0, &n_ps)};
  snprintf(name, sizeof name, "%s/w%d/shard_of", m->name, w);
  tf_output dp_in[2] = {ids, {add_node(g, "FloorMod", name, wk, mod_in, 2, NULL, 0), 0}};
  tf_attr_kv adp[] = {{"num_partitions", tf_attr_int(N_PS)}};
  snprintf(name, sizeof name, "%s/w%d/partition", m->name, w);
  tf_node *dp = add_node(g, "DynamicPartition", name, wk, dp_in, 2, adp, 1);
  for (int k = 0; k < N_PS; k++) {
    ps_device(k, ps, sizeof ps);
    tf_output div_in[2] = {{dp, k}, mod_in[1]};
    snprintf(name, sizeof name, "%s/w%d/rows_%d", m->name, w, k);
    tf_output rows = {add_node(g, "FloorDiv", name, wk, div_in, 2, NULL, 0), 0};
    tf_output gin[2] = {{vars[k], 0}, rows};
    snprintf(name, sizeof name, "%s/w%d/gather_%d", m->name, w, k);
    tf_output got = {add_node(g, "Gather", name, ps, gin, 2, NULL, 0), 0};
    snprintf(name, sizeof name, "%s/w%d/delta_%d", m->name, w, k);
    tf_output delta = {add_node(g, "OnesLike", name, wk, &got, 1, NULL, 0), 0};
    tf_output sin[3] = {{vars[k], 0}, rows, delta};
    snprintf(name, sizeof name, "%s/w%d/update_%d", m->name, w, k);
    add_node(g, "ScatterSub", name, ps, sin, 3, NULL, 0);
  }
}

/* The check fetches "<name>/check_<k>" on ps k: dense, the elements 0,
 * n/2 and n-1 (Gather); sparse, the shard's sum. */
static void add_check(tf_graph *g, const model *m, tf_node *var, int k) {
  char ps[48], name[96];
  ps_device(k, ps, sizeof ps);
  tf_output in[2] = {{var, 0}, {0}};
  snprintf(name, sizeof name, "%s/check_idx_%d", m->name, k);
  if (m->kind == M_DENSE) {
    int32_t idx[3] = {0, (int32_t)(m->shard[k] / 2), (int32_t)(m->shard[k] - 1)};
    in[1] = add_const_i32(g, name, ps, 3, idx);
    snprintf(name, sizeof name, "%s/check_%d", m->name, k);
    add_node(g, "Gather", name, ps, in, 2, NULL, 0);
  } else {
    int32_t axes[2] = {0, 1};
    in[1] = add_const_i32(g, name, ps, 2, axes);
    snprintf(name, sizeof name, "%s/check_%d", m->name, k);
    add_node(g, "Sum", name, ps, in, 2, NULL, 0);
  }
}

static void add_model(tf_graph *g, const model *m, int workers) {
  tf_node *vars[N_PS];
  for (int k = 0; k < N_PS; k++) {
    vars[k] = add_shard(g, m, k);
    add_check(g, m, vars[k], k);
  }
  for (int w = 0; w < workers; w++) {
    if (m->kind == M_SPARSE) {
      add_sparse_step(g, m, vars, w);
      continue;
    }
    for (int k = 0; k < N_PS; k++) {
      add_dense_step(g, m, vars[k], k, w);
    }
  }
}

/* A dense model of `bytes` float32 split evenly (the first shards take
 * the remainder); a sparse one of `bytes` / (64 x 4) rows, row r on shard
 * r % N_PS. */
static model make_model(const char *name, model_kind kind, int64_t bytes) {
  model m = {.name = name, .kind = kind};
  int64_t n = kind == M_DENSE ? bytes / 4 : bytes / (4 * SPARSE_DIM);
  for (int k = 0; k < N_PS; k++) {
    m.shard[k] = n / N_PS + (k < n % N_PS ? 1 : 0);
  }
  m.bytes = kind == M_DENSE ? n * 4 : n * 4 * SPARSE_DIM;
  return m;
}

static int64_t model_rows(const model *m) {
  int64_t n = 0;
  for (int k = 0; k < N_PS; k++) {
    n += m->shard[k];
  }
  return n;
}

/* ---- sessions and replica steps ---- */


/* Runs the targets "<name>/<what>_<k>" for every shard k. */
static void run_shards(tf_session *s, const model *m, const char *what) {
  char names[N_PS][96];
  const char *targets[N_PS];
  for (int k = 0; k < N_PS; k++) {
    snprintf(names[k], sizeof names[k], "%s/%s_%d", m->name, what, k);
    targets[k] = names[k];
  }
  tf_run_options ro = {.timeout_ms = STEP_TIMEOUT_MS};
  tf_status st;
  tf_status_init(&st);
  if (tf_session_run(s, &ro, NULL, NULL, 0, NULL, NULL, 0, targets, N_PS, NULL, &st) != TF_OK) {
    bc_check_daemons("during a step", st.msg);
    bc_die("%s: running %s_*: %s", m->name, what, st.msg);
  }
}

/* One client thread: `steps` replica steps of worker w on model m[0], or
 * on m[0] and m[1] in turn when m[1] is set (`steps` on each). */
typedef struct replica {
  tf_session *s;
  const model *m[2];
  int w;
  int steps;
  double *times[2];  /* steps entries per model, or NULL: not timed */
  uint64_t rng;      /* splitmix64 state, seeded per model, worker, phase */
  pthread_barrier_t *go;
  char err[TF_STATUS_MSG_MAX];
} replica;

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/* One replica step on m; false with r->err set on error. */
static bool replica_step(replica *r, const model *m, double *secs) {
  char names[N_PS][96], feed_name[96];
  const char *targets[N_PS];
  for (int k = 0; k < N_PS; k++) {
    snprintf(names[k], sizeof names[k], "%s/w%d/update_%d", m->name, r->w, k);
    targets[k] = names[k];
  }
  tf_tensor *ids = NULL;
  const char *feed = feed_name;
  if (m->kind == M_SPARSE) {
    int32_t v[SPARSE_IDS];
    int64_t rows = model_rows(m);
    for (int i = 0; i < SPARSE_IDS; i++) {
      v[i] = (int32_t)(splitmix64(&r->rng) % (uint64_t)rows);
    }
    ids = tf_tensor_vec_i32(SPARSE_IDS, v);
    snprintf(feed_name, sizeof feed_name, "%s/w%d/ids", m->name, r->w);
  }
  tf_run_options ro = {.timeout_ms = STEP_TIMEOUT_MS};
  tf_status st;
  tf_status_init(&st);
  double t0 = bc_now_s();
  tf_code c = tf_session_run(r->s, &ro, ids != NULL ? &feed : NULL, ids != NULL ? &ids : NULL,
                             ids != NULL ? 1 : 0, NULL, NULL, 0, targets, N_PS, NULL, &st);
  *secs = bc_now_s() - t0;
  if (ids != NULL) {
    tf_tensor_unref(ids);
  }
  if (c != TF_OK) {
    snprintf(r->err, sizeof r->err, "%s", st.msg);
    return false;
  }
  return true;
}

/* Set by the first replica step that fails: the other threads stop. */
static atomic_bool replica_failed;

static void *replica_main(void *arg) {
  replica *r = arg;
  pthread_barrier_wait(r->go);
  for (int i = 0; i < r->steps && !atomic_load(&replica_failed); i++) {
    for (int j = 0; j < 2 && r->m[j] != NULL; j++) {
      double t = 0;
      if (!replica_step(r, r->m[j], &t)) {
        atomic_store(&replica_failed, true);
        return NULL;
      }
      if (r->times[j] != NULL) {
        r->times[j][i] = t;
      }
    }
  }
  return NULL;
}

/* `steps` replica steps on each of `workers` workers at once, on m[0] or,
 * when m[1] is set, on both in turn; the times of m[j] go to
 * times[j][0 .. workers x steps) when times[j] is not NULL. */
static void run_replicas(tf_session *s, model *const m[2], double *const times[2], int workers,
                         int steps, uint64_t seed) {
  replica r[MAX_WORKERS];
  pthread_t th[MAX_WORKERS];
  pthread_barrier_t go;
  pthread_barrier_init(&go, NULL, (unsigned)workers);
  for (int w = 0; w < workers; w++) {
    r[w] = (replica){.s = s, .m = {m[0], m[1]}, .w = w, .steps = steps, .go = &go,
                     .rng = seed * 1000003ULL + (uint64_t)w};
    for (int j = 0; j < 2; j++) {
      r[w].times[j] = times[j] != NULL ? times[j] + (size_t)w * (size_t)steps : NULL;
    }
    if (pthread_create(&th[w], NULL, replica_main, &r[w]) != 0) {
      bc_die("cannot start a client thread for worker %d", w);
    }
  }
  for (int w = 0; w < workers; w++) {
    pthread_join(th[w], NULL);
  }
  pthread_barrier_destroy(&go);
  for (int j = 0; j < 2 && m[j] != NULL; j++) {
    m[j]->applied += (int64_t)workers * steps;
  }
  for (int w = 0; w < workers; w++) {
    if (r[w].err[0] != '\0') {
      bc_check_daemons("during a step", r[w].err);
      bc_die("%s with %d workers: a replica step of /job:worker/task:%d failed: %s", m[0]->name,
          workers, w, r[w].err);
    }
  }
}

/* Checks the model's values: every dense element is the number of replica
 * steps applied (each added 1 everywhere); the sparse shards sum to
 * -(steps x 32 x 64) (each step subtracted 1 from 32 rows of 64). */
static void check_model(tf_session *s, const model *m) {
  char names[N_PS][96];
  const char *fetches[N_PS];
  tf_tensor *out[N_PS] = {NULL};
  for (int k = 0; k < N_PS; k++) {
    snprintf(names[k], sizeof names[k], "%s/check_%d", m->name, k);
    fetches[k] = names[k];
  }
  tf_run_options ro = {.timeout_ms = STEP_TIMEOUT_MS};
  tf_status st;
  tf_status_init(&st);
  if (tf_session_run(s, &ro, NULL, NULL, 0, fetches, out, N_PS, NULL, 0, NULL, &st) != TF_OK) {
    bc_check_daemons("during the check", st.msg);
    bc_die("%s: fetching the check: %s", m->name, st.msg);
  }
  double sum = 0;
  for (int k = 0; k < N_PS; k++) {
    int64_t n = m->kind == M_DENSE ? 3 : 1;
    for (int64_t i = 0; i < n; i++) {
      double v = tf_tensor_get_f64(out[k], i);
      if (m->kind == M_DENSE && v != (double)m->applied) {
        bc_die("%s: shard %d element %lld is %g after %lld replica steps (expected %lld)",
            m->name, k, (long long)i, v, (long long)m->applied, (long long)m->applied);
      }
      sum += v;
    }
    tf_tensor_unref(out[k]);
  }
  double want = -(double)m->applied * SPARSE_IDS * SPARSE_DIM;
  if (m->kind == M_SPARSE && sum != want) {
    bc_die("%s: the table sums to %.0f after %lld replica steps (expected %.0f)", m->name, sum,
        (long long)m->applied, want);
  }
}

/* Median and p90 of one configuration, in seconds. */
typedef struct result {
  double med, p90;
  int n;
} result;

static result summarize(double *t, int n) {
  result r = {.n = n};
  r.med = bc_quantile(t, n, 0.5);
  r.p90 = bc_quantile(t, n, 0.9);
  return r;
}

/* Scalar or dense: init, warm-up, timed steps, check. */
static result bench_dense(tf_session *s, model *m, int workers, int warmup, int steps,
                          uint64_t seed) {
  model *const ms[2] = {m, NULL};
  run_shards(s, m, "init");
  run_replicas(s, ms, (double *const[2]){NULL, NULL}, workers, warmup, seed);
  double *t = calloc((size_t)workers * (unsigned)steps, sizeof *t);
  if (t == NULL) {
    bc_die("out of memory");
  }
  run_replicas(s, ms, (double *const[2]){t, NULL}, workers, steps, seed + 1);
  check_model(s, m);
  result r = summarize(t, workers * steps);
  free(t);
  return r;
}

/* The two sparse tables: init, then warm-up and SPARSE_STEPS timed steps
 * per worker alternating between the tables step by step (so that
 * background load falls on both alike); check. */
static void bench_sparse(tf_session *s, model *small, model *big, int workers, uint64_t seed,
                         result *r_small, result *r_big) {
  model *const m[2] = {small, big};
  int n = workers * SPARSE_STEPS;
  double *t[2];
  for (int j = 0; j < 2; j++) {
    run_shards(s, m[j], "init");
    t[j] = calloc((size_t)n, sizeof *t[j]);
    if (t[j] == NULL) {
      bc_die("out of memory");
    }
  }
  run_replicas(s, m, (double *const[2]){NULL, NULL}, workers, SPARSE_WARMUP, seed);
  run_replicas(s, m, t, workers, SPARSE_STEPS, seed + 1);
  check_model(s, small);
  check_model(s, big);
  *r_small = summarize(t[0], n);
  *r_big = summarize(t[1], n);
  free(t[0]);
  free(t[1]);
}

/* ---- the paper ---- */

/* OSDI 2016 §6.2 (Fig. 6), median step times stated in the text, on a
 * shared production cluster with the parameters on 16 ps tasks; other
 * worker counts are only plotted. */
static const char *paper_figure(const char *model, int workers) {
  if (strcmp(model, "scalar") == 0) {
    return workers == 1 ? "1.8 ms (1 worker; 8.8 ms at 100)" : "1.8 ms at 1 .. 8.8 ms at 100";
  }
  if (strcmp(model, "dense_100mb") == 0) {
    return workers == 1 ? "147 ms (1 worker; 613 ms at 100)" : "147 ms at 1 .. 613 ms at 100";
  }
  return "5 .. 20 ms over 1 .. 100 workers (1 GB and 16 GB alike)";
}

static void print_result(const char *model, int workers, result r) {
  printf("%-13s %7d %9.2f %9.2f %7d   %s\n", model, workers, r.med * 1e3, r.p90 * 1e3, r.n,
         paper_figure(model, workers));
}

/* ---- Fashion-MNIST jobs ---- */

static char *read_text(const char *path) {
  FILE *f = fopen(path, "r");
  if (f == NULL) {
    bc_die("cannot read %s: %s", path, strerror(errno));
  }
  size_t cap = 1 << 16, n = 0;
  char *s = malloc(cap);
  size_t got;
  while (s != NULL && (got = fread(s + n, 1, cap - 1 - n, f)) > 0) {
    n += got;
    if (n + 1 == cap) {
      char *t = realloc(s, cap *= 2);
      if (t == NULL) {
        free(s);
      }
      s = t;
    }
  }
  fclose(f);
  if (s == NULL) {
    bc_die("out of memory reading %s", path);
  }
  s[n] = '\0';
  return s;
}

/* The job spec of `path` for `workers` workers and `steps` updates: its
 * name, replication.workers and replication.mode replaced, its train, eval
 * and checkpoint sections replaced by train: {steps, log_every_steps}.
 * *batch gets input.batch_size. malloc'd. */
static char *derive_spec(const char *path, const char *mode, int workers, int64_t steps,
                         int *batch) {
  char *base = read_text(path);
  size_t cap = strlen(base) + 512;
  char *out = malloc(cap), section[32] = "";
  if (out == NULL) {
    bc_die("out of memory");
  }
  out[0] = '\0';
  size_t n = 0;
  bool skip = false, have_workers = false;
  *batch = 0;
  for (char *line = strtok(base, "\n"); line != NULL; line = strtok(NULL, "\n")) {
    char buf[256];
    const char *emit = line;
    if (line[0] != ' ' && line[0] != '#') {
      sscanf(line, "%31[^:]", section);
      skip = strcmp(section, "train") == 0 || strcmp(section, "eval") == 0 ||
             strcmp(section, "checkpoint") == 0;
      if (strcmp(section, "name") == 0) {
        snprintf(buf, sizeof buf, "name: bench-fmnist-%s-%dw", mode, workers);
        emit = buf;
      }
    }
    if (skip) {
      continue;
    }
    if (strcmp(section, "replication") == 0 && strncmp(line, "  workers:", 10) == 0) {
      snprintf(buf, sizeof buf, "  workers: %d", workers);
      emit = buf;
      have_workers = true;
    } else if (strcmp(section, "replication") == 0 && strncmp(line, "  mode:", 7) == 0) {
      snprintf(buf, sizeof buf, "  mode: %s", mode);
      emit = buf;
    } else if (strcmp(section, "input") == 0 && strncmp(line, "  batch_size:", 13) == 0) {
      *batch = atoi(line + 13);
    }
    n += (size_t)snprintf(out + n, cap - n, "%s\n", emit);
  }
  snprintf(out + n, cap - n, "train:\n  steps: %lld\n  log_every_steps: 100\n",
           (long long)steps);
  free(base);
  if (!have_workers || *batch <= 0) {
    bc_die("%s: expected the lines '  workers: N' under replication and '  batch_size: N' "
        "under input", path);
  }
  return out;
}

/* Polls the job until it is done; returns its updates per second between
 * the first poll at or past a fifth of `steps` and the last poll while it
 * ran. */
static double watch_job(const char *id, int64_t steps) {
  int64_t deadline = tf_ctl_now_ms() + JOB_TIMEOUT_MS, sa = -1, sb = -1, last = -1;
  int64_t moved_ms = tf_ctl_now_ms();
  double ta = 0, tb = 0;
  for (;;) {
    tf_ctl_job j;
    tf_status st;
    tf_status_init(&st);
    bc_check_daemons("during a job", NULL); /* the job may take rpc_ms to fail */
    if (tf_ctl_job_status(bc_procs[0].url, RPC_MS, id, &j, &st) != TF_OK) {
      bc_check_daemons("during a job", st.msg);
      bc_die("job %s: JobStatus: %s", id, st.msg);
    }
    double t = bc_now_s();
    bool done = strcmp(j.state, "done") == 0, running = strcmp(j.state, "running") == 0;
    if (j.error[0] != '\0' || (!done && !running && strcmp(j.state, "queued") != 0)) {
      bc_check_daemons("during a job", j.error);
      bc_die("job %s failed (state %s) at step %lld: %s", id, j.state, (long long)j.step, j.error);
    }
    if (done && (j.step != steps || !isfinite(j.loss))) {
      bc_die("job %s ended at step %lld of %lld with loss %g", id, (long long)j.step,
          (long long)steps, j.loss);
    }
    if (running && j.step >= steps / 5) {
      if (sa < 0) {
        sa = j.step, ta = t;
      } else {
        sb = j.step, tb = t;
      }
    }
    if (j.step != last) {
      last = j.step, moved_ms = tf_ctl_now_ms();
    }
    tf_ctl_job_fini(&j);
    if (done) {
      break;
    }
    if (tf_ctl_now_ms() - moved_ms > JOB_STALL_MS || tf_ctl_now_ms() > deadline) {
      bc_die("job %s is stuck at step %lld of %lld (no new step for %d ms, or not done within "
          "%d ms)", id, (long long)last, (long long)steps, JOB_STALL_MS, JOB_TIMEOUT_MS);
    }
    tf_ctl_sleep_ms(JOB_POLL_MS);
  }
  if (sa < 0 || sb - sa < steps / 4) {
    bc_die("job %s: too few steps seen while it ran (%lld); raise its steps", id,
        (long long)(sb - sa));
  }
  return (double)(sb - sa) / (tb - ta);
}

/* Trains the Fashion-MNIST MLP of conf/jobs/fmnist-mlp-<mode>.yaml on the
 * running cluster with `workers` workers; returns images per second. */
static double bench_job(const char *jobs_dir, const char *mode, int workers) {
  char path[512];
  snprintf(path, sizeof path, "%s/fmnist-mlp-%s.yaml", jobs_dir, mode);
  bool sync = strcmp(mode, "sync") == 0;
  int64_t steps = sync ? JOB_STEPS_SYNC : JOB_STEPS_ASYNC;
  int batch = 0;
  char *spec = derive_spec(path, mode, workers, steps, &batch);
  char *id = NULL;
  tf_status st;
  tf_status_init(&st);
  if (tf_ctl_submit_job(bc_procs[0].url, RPC_MS, spec, strlen(spec), path, &id, &st) != TF_OK) {
    bc_die("submitting %s (%s, %d workers): %s", path, mode, workers, st.msg);
  }
  free(spec);
  double ups = watch_job(id, steps);
  double images = ups * batch * (sync ? workers : 1);
  printf("fmnist %-5s %dw: %lld updates, batch %d per worker: %.1f updates/s, %.0f images/s "
         "(job %s)\n",
         mode, workers, (long long)steps, batch, ups, images, id);
  free(id);
  return images;
}

/* ---- main ---- */

static const char *arg_or(int argc, char **argv, const char *flag, const char *dflt) {
  for (int i = 1; i + 1 < argc; i++) {
    if (strcmp(argv[i], flag) == 0) {
      return argv[i + 1];
    }
  }
  return dflt;
}

enum { SCALAR, DENSE, SPARSE_SMALL, SPARSE_BIG, N_MODELS };

/* The null-step models on the running cluster of `workers` workers. */
static void bench_null_steps(int workers, result *res) {
  model m[N_MODELS] = {make_model("scalar", M_DENSE, 4 * N_PS),
                       make_model("dense_100mb", M_DENSE, DENSE_BYTES),
                       make_model("sparse_100mb", M_SPARSE, SPARSE_SMALL_BYTES),
                       make_model("sparse_1gb", M_SPARSE, SPARSE_BIG_BYTES)};
  tf_graph *g = tf_graph_new();
  for (int i = 0; i < N_MODELS; i++) {
    add_model(g, &m[i], workers);
  }
  tf_session *s = bc_open_session(60000, g);
  uint64_t seed = 100 * (uint64_t)workers;
  res[SCALAR] = bench_dense(s, &m[SCALAR], workers, SCALAR_WARMUP, SCALAR_STEPS, seed);
  print_result(m[SCALAR].name, workers, res[SCALAR]);
  res[DENSE] = bench_dense(s, &m[DENSE], workers, DENSE_WARMUP, DENSE_STEPS, seed + 20);
  print_result(m[DENSE].name, workers, res[DENSE]);
  bench_sparse(s, &m[SPARSE_SMALL], &m[SPARSE_BIG], workers, seed + 40, &res[SPARSE_SMALL],
               &res[SPARSE_BIG]);
  print_result(m[SPARSE_SMALL].name, workers, res[SPARSE_SMALL]);
  print_result(m[SPARSE_BIG].name, workers, res[SPARSE_BIG]);
  tf_status st;
  tf_status_init(&st);
  if (tf_session_reset(s, NULL, 0, &st) != TF_OK) {
    bc_die("resetting the session's variables: %s", st.msg);
  }
  tf_session_free(s);
  tf_graph_free(g);
}

static void print_header(void) {
  printf("bench-replicas: null training steps after OSDI 2016 §6.2 (Fig. 6), on loopback:\n"
         "  1 master, %d ps and W workers as local processes on this machine (%ld CPUs).\n"
         "  The paper's figures come from a shared production cluster with 16 ps tasks,\n"
         "  one machine per task, not loopback: context, not a target.\n",
         N_PS, sysconf(_SC_NPROCESSORS_ONLN));
  printf("  replica steps per worker: scalar %d + %d timed, dense_100mb %d + %d timed,\n"
         "  sparse %d + %d timed per table (each thread alternates the tables step by step);\n"
         "  sparse tables [rows, %d] float32, %d random ids per step (seeded);\n"
         "  Fashion-MNIST jobs: sync %d and async %d updates, rates after the first fifth.\n",
         SCALAR_WARMUP, SCALAR_STEPS, DENSE_WARMUP, DENSE_STEPS, SPARSE_WARMUP, SPARSE_STEPS,
         SPARSE_DIM, SPARSE_IDS, JOB_STEPS_SYNC, JOB_STEPS_ASYNC);
  model d = make_model("", M_DENSE, DENSE_BYTES), sm = make_model("", M_SPARSE, SPARSE_SMALL_BYTES),
        bg = make_model("", M_SPARSE, SPARSE_BIG_BYTES);
  printf("  sizes over the %d ps tasks: scalar %d x 4 bytes, dense_100mb %lld bytes,\n"
         "  sparse_100mb %lld rows (%lld bytes), sparse_1gb %lld rows (%lld bytes).\n",
         N_PS, N_PS, (long long)d.bytes, (long long)model_rows(&sm), (long long)sm.bytes,
         (long long)model_rows(&bg), (long long)bg.bytes);
  printf("%-13s %7s %9s %9s %7s   %s\n", "model", "workers", "median_ms", "p90_ms", "steps",
         "paper (median step time)");
}

int main(int argc, char **argv) {
  signal(SIGPIPE, SIG_IGN);
  signal(SIGINT, bc_on_signal);
  signal(SIGTERM, bc_on_signal);
  atexit(bc_stop);
  setvbuf(stdout, NULL, _IOLBF, 0);
  const char *bin = arg_or(argc, argv, "--bin", "build/bin");
  const char *jobs_dir = arg_or(argc, argv, "--jobs", "conf/jobs");
  static const int worker_counts[3] = {1, 2, 4};
  result res[3][N_MODELS];
  double images[2][2]; /* [sync, async][1, 2 workers] */
  double t0 = bc_now_s();
  for (int mode = 0; mode < 2; mode++) { /* a bad spec fails now, not after minutes */
    char path[512];
    int batch;
    snprintf(path, sizeof path, "%s/fmnist-mlp-%s.yaml", jobs_dir, mode == 0 ? "sync" : "async");
    free(derive_spec(path, mode == 0 ? "sync" : "async", 1, 1, &batch));
  }
  print_header();
  for (int i = 0; i < 3; i++) {
    int workers = worker_counts[i];
    bc_start(bin, N_PS, workers, 60000);
    bench_null_steps(workers, res[i]);
    if (workers <= 2) {
      images[0][i] = bench_job(jobs_dir, "sync", workers);
      images[1][i] = bench_job(jobs_dir, "async", workers);
    }
    bc_check_daemons("by the end", NULL);
    bc_stop();
  }
  double worst = 0;
  for (int i = 0; i < 3; i++) {
    double r = res[i][SPARSE_BIG].med / res[i][SPARSE_SMALL].med;
    printf("sparse_1gb_vs_100mb_%dw: %.2f\n", worker_counts[i], r);
    worst = fmax(worst, r);
  }
  printf("async_2w_images_per_s_vs_1w: %.2f\n", images[1][1] / images[1][0]);
  printf("total: %.0f s\n", bc_now_s() - t0);
  printf("sparse_1gb_vs_100mb: %.2f\n", worst);
  printf("sync_2w_images_per_s_vs_1w: %.2f\n", images[0][1] / images[0][0]);
  return 0;
}
