/* jobs_test.c: training jobs submitted to real daemons (1 master, 1 ps,
 * 2 workers) with tfctl.
 * - Sync is exact: after k steps of a sync job with 2 workers, each
 *   reading its own file in order, the variables on the ps equal k steps
 *   of single-process training on the two workers' batches concatenated,
 *   same seeds, float64 (to 1e-9); the same for an LSTM job (a while
 *   loop over 4 rows of 4 pixels and its gradient loop on each worker).
 * - A job outlives its client: `tfctl status --follow` killed half way,
 *   the job still finishes; `tfctl status` shows it done with its
 *   test_accuracy; `tfctl jobs` lists it; `tfctl logs` has its lines.
 * - Async keeps going with a worker stopped (SIGSTOP): the global step
 *   grows; after SIGCONT both replicas update again and the job finishes.
 * - Sync with one backup worker keeps stepping while a worker is stopped;
 *   the stopped replica's late gradient reaches the accumulators with a
 *   local step behind the global step and is not taken (the accumulators'
 *   counts read before and after), while its next, fresh gradient is.
 * - Pause, step N, resume and cancel. */
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmd/tfctl/ctl_procs.h"
#include "lib/runtime/job_model.h"
#include "lib/runtime/job_spec.h"
#include "test/integration/harness.h"
#include "test/unit/testutil.h"
#include "tf/gradients.h"
#include "tf/layers.h"
#include "tf/serialize.h"
#include "tf/session.h"
#include "tf/train.h"

#define N_TRAIN 64   /* records per worker file */
#define PIXELS 16    /* 4 x 4 images */
#define CLASSES 3

/* Runs tfctl -c CONFIG args...; returns the exit code. */
static int tfctl(th_cluster *c, int64_t ms, char **out, const char *a0, ...) {
  char *argv[24];
  int k = 0;
  argv[k++] = th_bin("tfctl");
  argv[k++] = "-c";
  argv[k++] = c->config;
  va_list ap;
  va_start(ap, a0);
  for (const char *a = a0; a != NULL && k < 23; a = va_arg(ap, const char *)) {
    argv[k++] = (char *)a;
  }
  va_end(ap);
  argv[k] = NULL;
  char *err = NULL;
  int rc = th_run(c, argv, ms, out, &err);
  if (rc != 0) {
    fprintf(stderr, "tfctl %s: exit %d: %s", a0, rc, err ? err : "");
  }
  free(err);
  free(argv[0]);
  return rc;
}

/* The last non-empty line of s (static buffer). */
static const char *last_line(const char *s) {
  static char buf[256];
  buf[0] = '\0';
  for (const char *p = s; p && *p;) {
    const char *nl = strchr(p, '\n');
    size_t n = nl ? (size_t)(nl - p) : strlen(p);
    if (n > 0) {
      snprintf(buf, sizeof buf, "%.*s", (int)n, p);
    }
    p = nl ? nl + 1 : NULL;
  }
  return buf;
}

/* ---- data ------------------------------------------------------------------ */

static void put_be32(FILE *f, uint32_t v) {
  unsigned char b[4] = {v >> 24, v >> 16, v >> 8, v};
  fwrite(b, 1, 4, f);
}

/* An IDX pair in DIR: images uint8 [n, 4, 4], labels uint8 [n]: a bright
 * quarter per class over noise (learnable), from seed. */
static void write_idx(th_cluster *c, const char *stem, int n, uint32_t seed,
                      unsigned char *images, unsigned char *labels) {
  char p[512];
  for (int i = 0; i < n; i++) {
    seed = seed * 1103515245u + 12345u;
    labels[i] = (unsigned char)((seed >> 16) % CLASSES);
    for (int k = 0; k < PIXELS; k++) {
      seed = seed * 1103515245u + 12345u;
      int bright = (k / 4 < 2) == (labels[i] == 0) && (k % 4 < 2) == (labels[i] != 2);
      images[i * PIXELS + k] = (unsigned char)((seed >> 16) % 96 + (bright ? 150 : 0));
    }
  }
  snprintf(p, sizeof p, "%s/%s-images.idx", c->dir, stem);
  FILE *f = fopen(p, "wb");
  fwrite("\0\0\x08\x03", 1, 4, f);
  put_be32(f, (uint32_t)n), put_be32(f, 4), put_be32(f, 4);
  fwrite(images, 1, (size_t)n * PIXELS, f);
  fclose(f);
  snprintf(p, sizeof p, "%s/%s-labels.idx", c->dir, stem);
  f = fopen(p, "wb");
  fwrite("\0\0\x08\x01", 1, 4, f);
  put_be32(f, (uint32_t)n);
  fwrite(labels, 1, (size_t)n, f);
  fclose(f);
}

/* The model's input shape and hidden layer: dense 8 (tanh) on the 16
 * pixels unless a test sets others (an LSTM over 4 rows of 4). */
static const char *model_shape = "[16]";
static const char *model_hidden = "{type: dense, units: 8, activation: tanh}";

/* A job spec over the cluster's data files; extra is appended YAML for
 * train/eval/replication (each a full top-level section). */
static char *spec(th_cluster *c, const char *name, const char *dtype,
                  const char *replication, const char *train, const char *optim,
                  bool eval) {
  char text[4096];
  snprintf(text, sizeof text,
           "name: %s\n"
           "model:\n"
           "  input: {shape: %s, dtype: %s}\n"
           "  layers:\n"
           "    - %s\n"
           "    - {type: dense, units: %d}\n"
           "  loss: sparse_softmax_cross_entropy\n"
           "  metrics: [accuracy]\n"
           "  seed: 7\n"
           "input:\n"
           "  format: idx\n"
           "  train:\n"
           "    images: [%s/w0-images.idx, %s/w1-images.idx]\n"
           "    labels: [%s/w0-labels.idx, %s/w1-labels.idx]\n"
           "%s"
           "  scale: 0.00392156862745098\n"
           "  batch_size: 8\n"
           "  shuffle: false\n"
           "  shard: files\n"
           "optimizer: %s\n"
           "replication: %s\n"
           "train: %s\n"
           "%s",
           name, model_shape, dtype, model_hidden, CLASSES, c->dir, c->dir, c->dir, c->dir,
           eval ? "  test: {images: DIR/test-images.idx, labels: DIR/test-labels.idx}\n"
                : "",
           optim, replication, train, eval ? "eval: {every_steps: 0}\n" : "");
  char full[8192] = "";
  for (const char *p = text; *p;) { /* DIR -> c->dir */
    if (strncmp(p, "DIR", 3) == 0) {
      strncat(full, c->dir, sizeof full - strlen(full) - 1);
      p += 3;
    } else {
      size_t l = strlen(full);
      full[l] = *p++;
      full[l + 1] = '\0';
    }
  }
  char file[96];
  snprintf(file, sizeof file, "%s.yaml", name);
  return th_write_file(c, file, full);
}

static th_cluster *cluster_with_data(unsigned char *img[2], unsigned char *lab[2]) {
  th_opts o = th_default_opts();
  o.rpc_threads = 8;
  o.down_after_ms = 10000; /* a worker stopped for 1.5 s stays up */
  th_cluster *c = th_cluster_new(&o);
  static unsigned char ti[256 * PIXELS], tl[256];
  for (int w = 0; w < 2; w++) {
    write_idx(c, w ? "w1" : "w0", N_TRAIN, 11u + (uint32_t)w, img[w], lab[w]);
  }
  write_idx(c, "test", 256, 99u, ti, tl);
  TH_REQUIRE(c, th_start_all(c, 15000), "cluster did not start");
  return c;
}

/* Submits path; returns the job id (static buffer). */
static const char *submit(th_cluster *c, const char *path) {
  static char id[128];
  char *out = NULL;
  int rc = tfctl(c, 20000, &out, "submit", path, NULL);
  TH_REQUIRE(c, rc == 0, "submit %s: exit %d: %s", path, rc, out ? out : "");
  snprintf(id, sizeof id, "%s", last_line(out));
  free(out);
  return id;
}

/* Follows the job to its end; returns tfctl's output (malloc'd). */
static char *follow(th_cluster *c, const char *id, int want_rc) {
  char *out = NULL;
  int rc = tfctl(c, 120000, &out, "status", id, "--follow", NULL);
  TH_REQUIRE(c, rc == want_rc, "status --follow %s: exit %d (want %d):\n%s", id,
             rc, want_rc, out ? out : "");
  return out;
}

/* ---- sync is exact ------------------------------------------------------------ */

#define EXACT_STEPS 5
#define BATCH 8

/* The variables of s as job `id` left them on the cluster (keep_variables). */
static void cluster_vars(th_cluster *c, const tf_job_spec *s, const char *id,
                         tf_tensor **out, int *n) {
  tf_status st;
  tf_graph *ref = tf_graph_new();
  tf_job_vars *v = NULL;
  TH_REQUIRE(c, tf_job_vars_new(s, ref, NULL, &v, &st) == TF_OK, "%s", st.msg);
  *n = tf_job_vars_count(v);
  tf_graph *g = tf_graph_new();
  const char *names[16];
  for (int i = 0; i < *n; i++) {
    const tf_layer_var *lv = tf_job_vars_at(v, i);
    tf_node_builder *b = tf_node_begin(g, "VariableV2", lv->name);
    tf_node_set_attr(b, "dtype", tf_attr_type_v(lv->dtype));
    tf_node_set_attr(b, "shape", tf_attr_shape(lv->shape));
    tf_node_set_attr(b, "container", tf_attr_string(id));
    tf_node_set_device(b, "/job:ps/replica:0/task:0/device:CPU:0");
    tf_node *node = tf_node_finish(b, &st);
    TH_REQUIRE(c, node != NULL, "%s", st.msg);
    names[i] = tf_node_name(node);
  }
  char url[96];
  snprintf(url, sizeof url, "%s", th_task_get(c, "master", 0)->url);
  tf_session_options so = {.target = url};
  tf_session *sess = tf_session_new(g, &so, &st);
  TH_REQUIRE(c, sess != NULL, "session: %s", st.msg);
  TH_REQUIRE(c, tf_session_run(sess, NULL, NULL, NULL, 0, names, out, *n, NULL, 0,
                               NULL, &st) == TF_OK, "reading the variables: %s", st.msg);
  tf_session_free(sess);
  tf_graph_free(g);
  tf_job_vars_free(v);
  tf_graph_free(ref);
}

/* The gradients of the variables (fetched, race-free) in one Run, then
 * their update in another: in a single Run of minimize, an update may run
 * while the backward pass still reads the variable's buffer (a read of a
 * variable aliases it, as TF1's ref variables), and which one goes first
 * depends on the threads. The cluster's replicas receive copies of the
 * variables, so the reference must not depend on that order either. */
typedef struct local_model {
  tf_graph *g;
  tf_optimizer *opt;
  tf_job_vars *v;
  int n;
  char grad[16][160];  /* fetches */
  char feed[16][32];   /* the gradients fed to the update */
} local_model;

static void local_build(th_cluster *c, const tf_job_spec *s, local_model *m) {
  tf_status st;
  m->g = tf_graph_new();
  tf_graph *g = m->g;
  TH_REQUIRE(c, tf_job_vars_new(s, g, NULL, &m->v, &st) == TF_OK, "%s", st.msg);
  m->n = tf_job_vars_count(m->v);
  tf_node_builder *b = tf_node_begin(g, "Placeholder", "x");
  tf_node_set_attr(b, "dtype", tf_attr_type_v(TF_FLOAT64));
  tf_output x = {tf_node_finish(b, &st), 0};
  b = tf_node_begin(g, "Placeholder", "y");
  tf_node_set_attr(b, "dtype", tf_attr_type_v(TF_INT32));
  tf_output y = {tf_node_finish(b, &st), 0};
  tf_job_replica r;
  TH_REQUIRE(c, tf_job_replica_build(s, m->v, g, NULL, NULL, x, y, true, &r, &st) == TF_OK,
             "%s", st.msg);
  tf_output gs;
  TH_REQUIRE(c, tf_global_step(g, &gs, &st) == TF_OK &&
                    tf_job_optimizer_new(s, g, gs, &m->opt, &st) == TF_OK, "%s", st.msg);
  tf_grad grads[16], fed[16];
  TH_REQUIRE(c, tf_gradients_sparse(g, &r.loss, 1, tf_job_vars_refs(m->v), m->n, NULL,
                                    grads, &st) == TF_OK, "%s", st.msg);
  for (int i = 0; i < m->n; i++) {
    TH_REQUIRE(c, grads[i].values.node != NULL && !tf_grad_is_sparse(&grads[i]),
               "variable %d has no dense gradient", i);
    tf_output o = grads[i].values;
    snprintf(m->grad[i], sizeof m->grad[i], "%s:%d", tf_node_name(o.node), o.index);
    snprintf(m->feed[i], sizeof m->feed[i], "grad_%d", i);
    const tf_layer_var *lv = tf_job_vars_at(m->v, i);
    b = tf_node_begin(g, "Placeholder", m->feed[i]);
    tf_node_set_attr(b, "dtype", tf_attr_type_v(lv->dtype));
    fed[i] = (tf_grad){.values = {tf_node_finish(b, &st), 0}};
  }
  TH_REQUIRE(c, tf_job_apply_gradients(s, m->opt, g, tf_job_vars_refs(m->v), fed, m->n, gs,
                                       "train", &st) != NULL &&
                    tf_job_init_op(g, "init", &st) != NULL, "%s", st.msg);
}

/* k steps of one process on the concatenated batches of both workers. */
static void local_vars(th_cluster *c, const tf_job_spec *s, unsigned char *img[2],
                       unsigned char *lab[2], tf_tensor **out, int n) {
  tf_status st;
  local_model m;
  local_build(c, s, &m);
  TH_REQUIRE(c, m.n == n, "%d variables here, %d on the cluster", m.n, n);
  tf_session *sess = tf_session_new(m.g, NULL, &st);
  const char *init = "init", *train = "train";
  TH_REQUIRE(c, tf_session_run(sess, NULL, NULL, NULL, 0, NULL, NULL, 0, &init, 1, NULL,
                               &st) == TF_OK, "%s", st.msg);
  const char *gnames[16], *fnames[16];
  for (int i = 0; i < n; i++) {
    gnames[i] = m.grad[i];
    fnames[i] = m.feed[i];
  }
  for (int k = 0; k < EXACT_STEPS; k++) {
    tf_shape xs = tf_shape_of(2, 2 * BATCH, PIXELS), ys = tf_shape_of(1, 2 * BATCH);
    tf_tensor *fx = NULL, *fy = NULL;
    tf_tensor_new(TF_FLOAT64, &xs, &fx, &st);
    tf_tensor_new(TF_INT32, &ys, &fy, &st);
    for (int w = 0; w < 2; w++) {
      for (int i = 0; i < BATCH; i++) {
        int row = k * BATCH + i, to = w * BATCH + i;
        for (int p = 0; p < PIXELS; p++) {
          ((double *)fx->data)[to * PIXELS + p] =
              (double)img[w][row * PIXELS + p] * 0.00392156862745098;
        }
        ((int32_t *)fy->data)[to] = lab[w][row];
      }
    }
    const char *feeds[2] = {"x", "y"};
    tf_tensor *fv[2] = {fx, fy}, *gv[16] = {NULL};
    TH_REQUIRE(c, tf_session_run(sess, NULL, feeds, fv, 2, gnames, gv, n, NULL, 0, NULL,
                                 &st) == TF_OK, "local gradients %d: %s", k, st.msg);
    TH_REQUIRE(c, tf_session_run(sess, NULL, fnames, gv, n, NULL, NULL, 0, &train, 1,
                                 NULL, &st) == TF_OK, "local update %d: %s", k, st.msg);
    for (int i = 0; i < n; i++) tf_tensor_unref(gv[i]);
    tf_tensor_unref(fx);
    tf_tensor_unref(fy);
  }
  const char *names[16];
  for (int i = 0; i < n; i++) {
    names[i] = tf_job_vars_at(m.v, i)->name;
  }
  TH_REQUIRE(c, tf_session_run(sess, NULL, NULL, NULL, 0, names, out, n, NULL, 0, NULL,
                               &st) == TF_OK, "%s", st.msg);
  tf_session_free(sess);
  tf_optimizer_free(m.opt);
  tf_job_vars_free(m.v);
  tf_graph_free(m.g);
}

static void check_sync_exact(const char *name) {
  static unsigned char i0[N_TRAIN * PIXELS], i1[N_TRAIN * PIXELS], l0[N_TRAIN], l1[N_TRAIN];
  unsigned char *img[2] = {i0, i1}, *lab[2] = {l0, l1};
  th_cluster *c = cluster_with_data(img, lab);
  char *path = spec(c, name, "float64", "{mode: sync, workers: 2}",
                    "{steps: 5, keep_variables: true, log_every_steps: 1}",
                    "{name: momentum, learning_rate: 0.5, momentum: 0.9}", false);
  const char *id = submit(c, path);
  char jid[128];
  snprintf(jid, sizeof jid, "%s", id);
  char *out = follow(c, jid, 0);
  TH_REQUIRE(c, strstr(out, "state: done") != NULL && strstr(out, "step: 5/5"),
             "status:\n%s", out);
  free(out);
  tf_job_spec *s = NULL;
  tf_status st;
  TH_REQUIRE(c, tf_job_spec_load(path, &s, &st) == TF_OK, "%s", st.msg);
  tf_tensor *dist[16] = {NULL}, *local[16] = {NULL};
  int n = 0;
  cluster_vars(c, s, jid, dist, &n);
  local_vars(c, s, img, lab, local, n);
  double worst = 0, moved = 0;
  for (int i = 0; i < n; i++) {
    TH_REQUIRE(c, dist[i]->n == local[i]->n, "variable %d: %lld vs %lld elements", i,
               (long long)dist[i]->n, (long long)local[i]->n);
    for (int64_t k = 0; k < dist[i]->n; k++) {
      double a = ((double *)dist[i]->data)[k], b = ((double *)local[i]->data)[k];
      worst = fmax(worst, fabs(a - b) / fmax(1.0, fabs(b)));
      moved = fmax(moved, fabs(b));
    }
    tf_tensor_unref(dist[i]);
    tf_tensor_unref(local[i]);
  }
  fprintf(stderr, "sync vs one process: %d variables, worst relative difference %.3g\n",
          n, worst);
  if (worst >= 1e-9) {
    char *logs = NULL;
    tfctl(c, 20000, &logs, "logs", jid, NULL);
    fprintf(stderr, "job logs:\n%s", logs ? logs : "");
    free(logs);
  }
  TH_REQUIRE(c, worst < 1e-9, "sync differs from one-process training by %.3g", worst);
  TH_REQUIRE(c, moved > 0, "no variable has a value");
  tf_job_spec_free(s);
  free(path);
  th_cluster_free(c);
}

START_TEST(test_sync_is_exact) { check_sync_exact("exact"); }
END_TEST

/* The same for an LSTM job (4 rows of 4 pixels, 3 units): the loop and
 * its gradient loop run on each worker, the variables on the ps. */
START_TEST(test_sync_lstm_is_exact) {
  model_shape = "[4, 4]";
  model_hidden = "{type: lstm, units: 3}";
  check_sync_exact("exact-lstm");
}
END_TEST

/* ---- lifecycle ------------------------------------------------------------------ */

/* A field "key: value" of tfctl status's output, or -1. */
static double field(const char *out, const char *key) {
  char k[64];
  snprintf(k, sizeof k, "\n%s: ", key);
  if (strncmp(out, k + 1, strlen(k + 1)) == 0) {
    return strtod(out + strlen(k + 1), NULL);
  }
  const char *p = strstr(out, k);
  return p ? strtod(p + strlen(k), NULL) : -1;
}

static double status_field(th_cluster *c, const char *id, const char *key) {
  char *out = NULL;
  tfctl(c, 20000, &out, "status", id, NULL);
  double v = out ? field(out, key) : -1;
  free(out);
  return v;
}

/* The global step of a running job (status "step: S/T"). */
static int64_t job_step(th_cluster *c, const char *id) {
  return (int64_t)status_field(c, id, "step");
}

START_TEST(test_job_outlives_its_client) {
  static unsigned char i0[N_TRAIN * PIXELS], i1[N_TRAIN * PIXELS], l0[N_TRAIN], l1[N_TRAIN];
  unsigned char *img[2] = {i0, i1}, *lab[2] = {l0, l1};
  th_cluster *c = cluster_with_data(img, lab);
  char *path = spec(c, "outlive", "float32", "{mode: sync, workers: 2}",
                    "{steps: 300, log_every_steps: 50}",
                    "{name: adam, learning_rate: 0.05}", true);
  char id[128];
  snprintf(id, sizeof id, "%s", submit(c, path));
  /* A follower that is killed half way. */
  char *tfctl_bin = th_bin("tfctl");
  char *argv[] = {tfctl_bin, "-c", c->config, "status", id, "--follow", NULL};
  pid_t pid = th_spawn(c, argv, NULL);
  usleep(300 * 1000);
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  free(tfctl_bin);
  char *out = follow(c, id, 0);
  TH_REQUIRE(c, strstr(out, "state: done") != NULL, "status:\n%s", out);
  double acc = field(out, "test_accuracy");
  TH_REQUIRE(c, acc >= 0.9 && acc <= 1.0, "test_accuracy %.4f after 300 steps:\n%s", acc, out);
  TH_REQUIRE(c, strncmp(last_line(out), "test_", 5) == 0, "metrics are not last:\n%s", out);
  free(out);
  TH_REQUIRE(c, tfctl(c, 20000, &out, "jobs", NULL) == 0 && strstr(out, id) &&
                    strstr(out, "done"), "jobs:\n%s", out);
  free(out);
  TH_REQUIRE(c, tfctl(c, 20000, &out, "logs", id, NULL) == 0 &&
                    strstr(out, "step 300/300") && strstr(out, "eval at step 300"),
             "logs:\n%s", out);
  free(out);
  free(path);
  th_cluster_free(c);
}
END_TEST

/* A worker stopped (SIGSTOP) for a while, then continued: the job keeps
 * making updates without it; afterwards it is used again. */
static void straggler(const char *mode, const char *name) {
  static unsigned char i0[N_TRAIN * PIXELS], i1[N_TRAIN * PIXELS], l0[N_TRAIN], l1[N_TRAIN];
  unsigned char *img[2] = {i0, i1}, *lab[2] = {l0, l1};
  th_cluster *c = cluster_with_data(img, lab);
  char *path = spec(c, name, "float32", mode, "{steps: 1000000, log_every_steps: 20}",
                    "{name: sgd, learning_rate: 0.1}", false);
  char id[128];
  snprintf(id, sizeof id, "%s", submit(c, path));
  int64_t deadline = tf_ctl_now_ms() + 30000;
  while (job_step(c, id) < 50 && tf_ctl_now_ms() < deadline) {
    usleep(100 * 1000);
  }
  th_task *w1 = th_task_get(c, "worker", 1);
  kill(w1->pid, SIGSTOP);
  usleep(200 * 1000);
  int64_t a = job_step(c, id);
  usleep(1500 * 1000);
  int64_t b = job_step(c, id);
  kill(w1->pid, SIGCONT);
  TH_REQUIRE(c, a >= 50 && b > a + 20, "%s: with worker 1 stopped the step went from "
             "%lld to %lld in 1.5 s", name, (long long)a, (long long)b);
  char *out = NULL;
  tfctl(c, 20000, &out, "logs", id, NULL);
  char *before = out;
  usleep(1500 * 1000);
  tfctl(c, 20000, &out, "logs", id, NULL);
  /* "steps per replica: N0 N1" on the last step line grew for replica 1. */
  const char *p = strrchr(before, ':'), *q = strrchr(out, ':');
  long r1_before = -1, r1_after = -1, r0;
  TH_REQUIRE(c, p && q && sscanf(p + 1, "%ld %ld", &r0, &r1_before) == 2 &&
                    sscanf(q + 1, "%ld %ld", &r0, &r1_after) == 2,
             "no replica counts in the logs:\n%s", out);
  TH_REQUIRE(c, r1_after > r1_before, "%s: replica 1 made no steps after SIGCONT "
             "(%ld then %ld)", name, r1_before, r1_after);
  free(before);
  free(out);
  TH_REQUIRE(c, tfctl(c, 20000, &out, "cancel", id, NULL) == 0, "cancel");
  free(out);
  out = follow(c, id, 1);
  TH_REQUIRE(c, strstr(out, "state: cancelled") != NULL, "after cancel:\n%s", out);
  free(out);
  free(path);
  th_cluster_free(c);
}

START_TEST(test_async_goes_on_without_a_stopped_worker) {
  straggler("{mode: async, workers: 2}", "async");
}
END_TEST

START_TEST(test_backup_worker_covers_a_stopped_worker) {
  straggler("{mode: sync, workers: 2, backup_workers: 1}", "backup");
}
END_TEST

/* ---- a graph file ------------------------------------------------------------------ */

/* Replica i's count on tfctl status's "replica steps: N0 N1" line, or -1. */
__attribute__((noinline)) static long long replica_steps_of(const char *out, int i) {
  const char *p = strstr(out, "\nreplica steps:");
  long long r[2] = {-1, -1};
  if (p != NULL) sscanf(p + strlen("\nreplica steps:"), "%lld %lld", &r[0], &r[1]);
  return r[i];
}

/* A model written with the C API and saved: images [n, 16] float32 and
 * labels [n] int32 placeholders, dense tanh 8, dense 3, sparse softmax
 * cross-entropy, accuracy, Adam with a global step; node names into
 * loss/acc. */
static char *save_model(th_cluster *c, char *loss, char *acc, size_t n) {
  tf_status st;
  tf_graph *g = tf_graph_new();
  tf_layers *l = tf_layers_new(g, 7);
  tf_node_builder *b = tf_node_begin(g, "Placeholder", "images");
  tf_node_set_attr(b, "dtype", tf_attr_type_v(TF_FLOAT32));
  tf_node_set_attr(b, "shape", tf_attr_shape(tf_shape_of(2, -1, PIXELS)));
  tf_output x = {tf_node_finish(b, &st), 0};
  b = tf_node_begin(g, "Placeholder", "labels");
  tf_node_set_attr(b, "dtype", tf_attr_type_v(TF_INT32));
  tf_node_set_attr(b, "shape", tf_attr_shape(tf_shape_of(1, -1)));
  tf_output y = {tf_node_finish(b, &st), 0};
  tf_output h, logits, lo, ac, gs, vars[8];
  TH_REQUIRE(c, x.node && y.node &&
                    tf_layer_dense(l, x, 8, TF_ACT_TANH, true, NULL, NULL, NULL, &h, &st) ==
                        TF_OK &&
                    tf_layer_dense(l, h, CLASSES, TF_ACT_NONE, true, NULL, NULL, NULL, &logits,
                                   &st) == TF_OK &&
                    tf_layer_sparse_softmax_cross_entropy(l, logits, y, "loss", &lo, &st) ==
                        TF_OK &&
                    tf_layer_accuracy(l, logits, y, "accuracy", &ac, &st) == TF_OK &&
                    tf_global_step(g, &gs, &st) == TF_OK,
             "building the model: %s", st.msg);
  int nv = tf_layers_trainable(l, vars, 8);
  tf_optimizer *opt = tf_optimizer_adam(0.05);
  TH_REQUIRE(c, tf_optimizer_minimize(opt, g, lo, vars, nv, gs, "train", &st) != NULL &&
                    tf_global_variables_initializer(g, "init", &st) != NULL,
             "optimizer: %s", st.msg);
  snprintf(loss, n, "%s", tf_node_name(lo.node));
  snprintf(acc, n, "%s", tf_node_name(ac.node));
  char *path = th_write_file(c, "model.tfg", "");
  TH_REQUIRE(c, tf_graph_save(g, path, &st) == TF_OK, "saving: %s", st.msg);
  tf_optimizer_free(opt);
  tf_layers_free(l);
  tf_graph_free(g);
  return path;
}

/* A graph file (not a model section) submitted as an async job over 2
 * workers: every replica trains the shared variables from its own files,
 * the test set is evaluated with the file's accuracy; a sync job over 2
 * workers is refused, naming why. */
START_TEST(test_graph_file_job) {
  static unsigned char i0[N_TRAIN * PIXELS], i1[N_TRAIN * PIXELS], l0[N_TRAIN], l1[N_TRAIN];
  unsigned char *img[2] = {i0, i1}, *lab[2] = {l0, l1};
  th_cluster *c = cluster_with_data(img, lab);
  char loss[256], acc[256];
  char *model = save_model(c, loss, acc, sizeof loss);
  char text[4096];
  const char *modes[2] = {"{mode: async, workers: 2}", "{mode: sync, workers: 2}"};
  char *paths[2];
  for (int m = 0; m < 2; m++) {
    snprintf(text, sizeof text,
             "name: graph%d\n"
             "graph:\n"
             "  file: %s\n  train: train\n  loss: %s\n  metrics: [%s]\n  init: init\n"
             "  images: images\n  labels: labels\n"
             "  input: {shape: [%d], dtype: float32}\n"
             "input:\n  format: idx\n"
             "  train:\n"
             "    images: [%s/w0-images.idx, %s/w1-images.idx]\n"
             "    labels: [%s/w0-labels.idx, %s/w1-labels.idx]\n"
             "  test: {images: %s/test-images.idx, labels: %s/test-labels.idx}\n"
             "  scale: 0.00392156862745098\n  batch_size: 8\n  shuffle: true\n"
             "  seed: 3\n  shard: files\n"
             "replication: %s\n"
             "train: {steps: 400, log_every_steps: 50}\n"
             "eval: {every_steps: 0}\n",
             m, model, loss, acc, PIXELS, c->dir, c->dir, c->dir, c->dir, c->dir, c->dir,
             modes[m]);
    char file[32];
    snprintf(file, sizeof file, "graph%d.yaml", m);
    paths[m] = th_write_file(c, file, text);
  }
  char id[128];
  snprintf(id, sizeof id, "%s", submit(c, paths[0]));
  char *out = follow(c, id, 0);
  TH_REQUIRE(c, strstr(out, "state: done") && strstr(out, "step: 400/400"), "status:\n%s",
             out);
  double a = field(out, "test_accuracy");
  long long r0 = replica_steps_of(out, 0), r1 = replica_steps_of(out, 1);
  TH_REQUIRE(c, r0 > 0 && r1 > 0, "both replicas should have stepped:\n%s", out);
  fprintf(stderr, "graph file job: test_accuracy %.4f, replica steps %lld %lld\n", a, r0, r1);
  TH_REQUIRE(c, a >= 0.9 && a <= 1.0, "test_accuracy %.4f after 400 async steps:\n%s", a,
             out);
  free(out);
  char *tfctl_bin = th_bin("tfctl"), *err = NULL;
  char *argv[] = {tfctl_bin, "-c", c->config, "submit", paths[1], NULL};
  int rc = th_run(c, argv, 20000, NULL, &err);
  TH_REQUIRE(c, rc == 1 && err && strstr(err, "sync with 2 workers needs a model section"),
             "a sync graph job: exit %d: %s", rc, err ? err : "");
  free(err);
  free(tfctl_bin);
  free(paths[0]);
  free(paths[1]);
  free(model);
  th_cluster_free(c);
}
END_TEST

/* ---- backup workers: the late gradient is dropped ------------------------------ */

#define PS0 "/job:ps/replica:0/task:0/device:CPU:0"
#define W1 "/job:worker/replica:0/task:1/device:CPU:0"

/* A node of op on dev in container id, attrs (name, value) pairs. */
static tf_node *res_node(th_cluster *c, tf_graph *g, const char *op, const char *name,
                         const char *id, const char *dev, const tf_output *in, int n_in,
                         const char **an, const tf_attr_value *av, int n_attr) {
  tf_node_builder *b = tf_node_begin(g, op, name);
  for (int i = 0; i < n_in; i++) tf_node_add_input(b, in[i]);
  for (int i = 0; i < n_attr; i++) tf_node_set_attr(b, an[i], av[i]);
  if (id != NULL) tf_node_set_attr(b, "container", tf_attr_string(id));
  tf_node_set_device(b, dev);
  tf_status st;
  tf_node *node = tf_node_finish(b, &st);
  TH_REQUIRE(c, node != NULL, "%s %s: %s", op, name, st.msg);
  return node;
}

/* The counters of job `id` that prove what the accumulators took, read
 * through a session of their own: the global step, replica 1's local step
 * (with_w1), every accumulator's count of gradients, and the size of
 * replica 1's token queue, which is drained (drain) or given one token
 * (give). */
typedef struct sync_counters {
  int64_t global_step, local_step_1, queued;
  int n_acc;
  int32_t accumulated[16];
} sync_counters;

static sync_counters read_counters(th_cluster *c, const tf_job_spec *s, const char *id,
                                   bool with_w1, int drain, bool give) {
  tf_status st;
  tf_graph *ref = tf_graph_new();
  tf_job_vars *v = NULL;
  TH_REQUIRE(c, tf_job_vars_new(s, ref, NULL, &v, &st) == TF_OK, "%s", st.msg);
  tf_graph *g = tf_graph_new();
  const char *fetch[24];
  int nf = 0;
  tf_shape scalar = tf_shape_scalar();
  const char *vn[] = {"dtype", "shape"};
  tf_attr_value va[] = {tf_attr_type_v(TF_INT64), tf_attr_shape(scalar)};
  fetch[nf++] = tf_node_name(res_node(c, g, "VariableV2", "global_step", id, PS0, NULL, 0,
                                      vn, va, 2));
  if (with_w1) {
    fetch[nf++] = tf_node_name(res_node(c, g, "VariableV2", "replica_1/local_step", id, W1,
                                        NULL, 0, vn, va, 2));
  }
  sync_counters out = {.n_acc = tf_job_vars_count(v)};
  for (int i = 0; i < out.n_acc; i++) {
    const tf_layer_var *lv = tf_job_vars_at(v, i);
    char name[160], shared[160];
    snprintf(shared, sizeof shared, "sync/acc/%s", lv->name);
    snprintf(name, sizeof name, "acc_%d", i);
    const char *an[] = {"dtype", "shape", "shared_name"};
    tf_attr_value av[] = {tf_attr_type_v(lv->dtype), tf_attr_shape(lv->shape),
                          tf_attr_string(shared)};
    tf_node *acc = res_node(c, g, "ConditionalAccumulator", name, id, PS0, NULL, 0, an, av, 3);
    snprintf(name, sizeof name, "acc_%d/count", i);
    tf_output h = {acc, 0};
    fetch[nf++] = tf_node_name(res_node(c, g, "AccumulatorNumAccumulated", name, NULL, PS0,
                                        &h, 1, NULL, NULL, 0));
  }
  tf_dtype i64 = TF_INT64;
  const char *qn[] = {"component_types", "shapes", "shared_name"};
  tf_attr_value qv[] = {tf_attr_type_list(&i64, 1), tf_attr_shape_list(&scalar, 1),
                        tf_attr_string("sync/token_1")};
  tf_output q = {res_node(c, g, "FIFOQueue", "token_1", id, PS0, NULL, 0, qn, qv, 3), 0};
  const char *target = NULL;
  tf_tensor *value = drain > 0 ? tf_tensor_scalar_i32(drain) : tf_tensor_scalar_i64(0);
  if (drain > 0) {
    tf_output in[2] = {q, {res_node(c, g, "Const", "n", NULL, PS0, NULL, 0,
                                    (const char *[]){"dtype", "value"},
                                    (tf_attr_value[]){tf_attr_type_v(TF_INT32),
                                                      tf_attr_tensor(value)},
                                    2), 0}};
    target = tf_node_name(res_node(c, g, "QueueDequeueMany", "drain", NULL, PS0, in, 2,
                                   (const char *[]){"component_types"},
                                   (tf_attr_value[]){tf_attr_type_list(&i64, 1)}, 1));
  } else if (give) {
    tf_output in[2] = {q, {res_node(c, g, "Const", "t", NULL, PS0, NULL, 0,
                                    (const char *[]){"dtype", "value"},
                                    (tf_attr_value[]){tf_attr_type_v(TF_INT64),
                                                      tf_attr_tensor(value)},
                                    2), 0}};
    target = tf_node_name(res_node(c, g, "QueueEnqueue", "give", NULL, PS0, in, 2,
                                   (const char *[]){"Tcomponents"},
                                   (tf_attr_value[]){tf_attr_type_list(&i64, 1)}, 1));
  } else {
    fetch[nf++] = tf_node_name(res_node(c, g, "QueueSize", "size", NULL, PS0, &q, 1,
                                        NULL, NULL, 0));
  }
  tf_tensor_unref(value); /* the graph copied it */
  tf_session_options so = {.target = th_task_get(c, "master", 0)->url};
  tf_session *sess = tf_session_new(g, &so, &st);
  TH_REQUIRE(c, sess != NULL, "session: %s", st.msg);
  tf_tensor *vals[24] = {NULL};
  tf_run_options ro = {.timeout_ms = 10000};
  int n_fetch = target != NULL ? 0 : nf;
  TH_REQUIRE(c, tf_session_run(sess, &ro, NULL, NULL, 0, fetch, vals, n_fetch,
                               target ? &target : NULL, target ? 1 : 0, NULL, &st) == TF_OK,
             "reading the sync counters: %s", st.msg);
  for (int k = 0; k < n_fetch; k++) {
    int64_t x = vals[k]->dtype == TF_INT64 ? *(int64_t *)vals[k]->data
                                            : *(int32_t *)vals[k]->data;
    int a = k - 1 - (with_w1 ? 1 : 0);
    if (k == 0) {
      out.global_step = x;
    } else if (with_w1 && k == 1) {
      out.local_step_1 = x;
    } else if (a < out.n_acc) {
      out.accumulated[a] = (int32_t)x;
    } else {
      out.queued = x;
    }
    tf_tensor_unref(vals[k]);
  }
  tf_session_free(sess);
  tf_graph_free(g);
  tf_job_vars_free(v);
  tf_graph_free(ref);
  return out;
}

/* "replica steps: N0 N1" of tfctl status: replica i's count, or -1. */
static int64_t replica_steps(th_cluster *c, const char *id, int i) {
  char *out = NULL;
  tfctl(c, 20000, &out, "status", id, NULL);
  const char *p = out ? strstr(out, "\nreplica steps:") : NULL;
  long long r[2] = {-1, -1};
  if (p != NULL) sscanf(p + strlen("\nreplica steps:"), "%lld %lld", &r[0], &r[1]);
  free(out);
  return r[i];
}

/* Waits until replica i's step count holds still for 600 ms; returns it. */
static int64_t settle(th_cluster *c, const char *id, int i) {
  int64_t last = replica_steps(c, id, i), deadline = tf_ctl_now_ms() + 20000;
  for (;;) {
    usleep(600 * 1000);
    int64_t now = replica_steps(c, id, i);
    if (now == last || tf_ctl_now_ms() > deadline) return now;
    last = now;
  }
}

/* Sync with 2 workers, 1 backup: worker 1 is stopped while the job runs on
 * worker 0 alone, then the job is paused (the chief takes nothing more)
 * and replica 1's backlog of tokens drained. After SIGCONT, replica 1's
 * gradient from before the stop reaches the accumulators with its old
 * local step: the counters show it was stale and the accumulators' counts
 * do not grow. Given one token, replica 1 then sends one gradient at the
 * current version, and the counts grow by exactly one. */
START_TEST(test_backup_drops_the_late_gradient) {
  static unsigned char i0[N_TRAIN * PIXELS], i1[N_TRAIN * PIXELS], l0[N_TRAIN], l1[N_TRAIN];
  unsigned char *img[2] = {i0, i1}, *lab[2] = {l0, l1};
  th_cluster *c = cluster_with_data(img, lab);
  char *path = spec(c, "late", "float32", "{mode: sync, workers: 2, backup_workers: 1}",
                    "{steps: 1000000, log_every_steps: 20}",
                    "{name: sgd, learning_rate: 0.1}", false);
  char id[128];
  snprintf(id, sizeof id, "%s", submit(c, path));
  tf_job_spec *s = NULL;
  tf_status st;
  TH_REQUIRE(c, tf_job_spec_load(path, &s, &st) == TF_OK, "%s", st.msg);
  int64_t deadline = tf_ctl_now_ms() + 30000;
  while (job_step(c, id) < 20 && tf_ctl_now_ms() < deadline) usleep(100 * 1000);
  th_task *w1 = th_task_get(c, "worker", 1);
  kill(w1->pid, SIGSTOP);
  int64_t a = job_step(c, id);
  while (job_step(c, id) < a + 10 && tf_ctl_now_ms() < deadline) usleep(100 * 1000);
  char *out = NULL;
  TH_REQUIRE(c, tfctl(c, 20000, &out, "pause", id, NULL) == 0, "pause: %s", out);
  free(out);
  settle(c, id, 0);
  int64_t r1 = replica_steps(c, id, 1);
  sync_counters before = read_counters(c, s, id, false, 0, false);
  TH_REQUIRE(c, before.global_step >= a + 10, "the job made %lld updates without worker 1",
             (long long)(before.global_step - a));
  if (before.queued > 0) read_counters(c, s, id, false, (int)before.queued, false);
  kill(w1->pid, SIGCONT);
  usleep(500 * 1000);
  int64_t r1_mid = settle(c, id, 1);
  sync_counters mid = read_counters(c, s, id, true, 0, false);
  TH_REQUIRE(c, mid.global_step == before.global_step, "a paused job updated: %lld -> %lld",
             (long long)before.global_step, (long long)mid.global_step);
  TH_REQUIRE(c, mid.local_step_1 < mid.global_step, "replica 1's local step %lld is not "
             "behind the global step %lld after its stop", (long long)mid.local_step_1,
             (long long)mid.global_step);
  for (int i = 0; i < mid.n_acc; i++) {
    TH_REQUIRE(c, mid.accumulated[i] == before.accumulated[i], "accumulator %d took replica "
               "1's late gradient (local step %lld, global step %lld): %d -> %d gradients",
               i, (long long)mid.local_step_1, (long long)mid.global_step,
               before.accumulated[i], mid.accumulated[i]);
  }
  /* One token: replica 1 reads the current version and sends a fresh
   * gradient, which is taken. */
  read_counters(c, s, id, false, 0, true);
  usleep(500 * 1000);
  int64_t r1_end = settle(c, id, 1);
  sync_counters end = read_counters(c, s, id, true, 0, false);
  fprintf(stderr, "late gradient: global step %lld, replica 1 local step %lld, replica 1 "
          "steps %lld -> %lld -> %lld, accumulator 0: %d -> %d -> %d\n",
          (long long)mid.global_step, (long long)mid.local_step_1, (long long)r1,
          (long long)r1_mid, (long long)r1_end, before.accumulated[0], mid.accumulated[0],
          end.accumulated[0]);
  TH_REQUIRE(c, end.local_step_1 == end.global_step && r1_end > r1_mid,
             "replica 1 did not step at the current version (local step %lld, global %lld, "
             "steps %lld -> %lld)", (long long)end.local_step_1,
             (long long)end.global_step, (long long)r1_mid, (long long)r1_end);
  for (int i = 0; i < end.n_acc; i++) {
    TH_REQUIRE(c, end.accumulated[i] == mid.accumulated[i] + 1, "accumulator %d: %d -> %d "
               "gradients after one fresh step of replica 1", i, mid.accumulated[i],
               end.accumulated[i]);
  }
  TH_REQUIRE(c, tfctl(c, 20000, &out, "cancel", id, NULL) == 0, "cancel");
  free(out);
  out = follow(c, id, 1);
  free(out);
  tf_job_spec_free(s);
  free(path);
  th_cluster_free(c);
}
END_TEST

START_TEST(test_pause_step_resume_cancel) {
  static unsigned char i0[N_TRAIN * PIXELS], i1[N_TRAIN * PIXELS], l0[N_TRAIN], l1[N_TRAIN];
  unsigned char *img[2] = {i0, i1}, *lab[2] = {l0, l1};
  th_cluster *c = cluster_with_data(img, lab);
  char *path = spec(c, "pause", "float32", "{mode: sync, workers: 2}",
                    "{steps: 1000000}", "{name: sgd, learning_rate: 0.1}", false);
  char id[128];
  snprintf(id, sizeof id, "%s", submit(c, path));
  char *out = NULL;
  TH_REQUIRE(c, tfctl(c, 20000, &out, "pause", id, NULL) == 0, "pause: %s", out);
  free(out);
  int64_t deadline = tf_ctl_now_ms() + 20000;
  int64_t s0 = job_step(c, id);
  usleep(500 * 1000);
  while (job_step(c, id) != s0 && tf_ctl_now_ms() < deadline) { /* settles */
    s0 = job_step(c, id);
    usleep(300 * 1000);
  }
  TH_REQUIRE(c, tfctl(c, 20000, &out, "step", id, "-n", "7", NULL) == 0, "step: %s", out);
  free(out);
  while (job_step(c, id) < s0 + 7 && tf_ctl_now_ms() < deadline) {
    usleep(100 * 1000);
  }
  usleep(300 * 1000);
  TH_REQUIRE(c, job_step(c, id) == s0 + 7, "paused at %lld, step -n 7 gave %lld",
             (long long)s0, (long long)job_step(c, id));
  TH_REQUIRE(c, tfctl(c, 20000, &out, "resume", id, NULL) == 0, "resume: %s", out);
  free(out);
  usleep(500 * 1000);
  TH_REQUIRE(c, job_step(c, id) > s0 + 7, "resume did not resume");
  TH_REQUIRE(c, tfctl(c, 20000, &out, "cancel", id, NULL) == 0, "cancel: %s", out);
  free(out);
  out = follow(c, id, 1);
  free(out);
  free(path);
  th_cluster_free(c);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("jobs");
  TCase *ex = tcase_create("exact");
  tcase_set_timeout(ex, 60);
  tcase_add_test(ex, test_sync_is_exact);
  tcase_add_test(ex, test_sync_lstm_is_exact);
  suite_add_tcase(s, ex);
  TCase *tc = tcase_create("jobs");
  tcase_set_timeout(tc, 180);
  tcase_add_test(tc, test_job_outlives_its_client);
  tcase_add_test(tc, test_async_goes_on_without_a_stopped_worker);
  tcase_add_test(tc, test_backup_worker_covers_a_stopped_worker);
  tcase_add_test(tc, test_backup_drops_the_late_gradient);
  tcase_add_test(tc, test_graph_file_job);
  tcase_add_test(tc, test_pause_step_resume_cancel);
  suite_add_tcase(s, tc);
  return s;
}
