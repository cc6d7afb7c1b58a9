/* bench_train.c: training-step speed against PyTorch 1.13 (make bench-train).
 *
 * Our MLP (784-256-128-10, ReLU, batch 128) and CNN (conv 5x5x32 SAME +
 * ReLU + maxpool 2, conv 5x5x64 SAME + ReLU + maxpool 2, dense 256 + ReLU,
 * dense 10, batch 64), with sparse softmax cross-entropy and Adam (lr 1e-3,
 * eps 1e-7), train on one ready batch: the first images of Fashion-MNIST,
 * fed through Placeholders. A step is one session Run of the Adam update
 * (forward, backward, update). The same models, batches and optimizer run
 * in PyTorch (bench/torch_train.py, a child process with
 * torch.set_num_threads(2) and OMP_WAIT_POLICY=PASSIVE, its fair setting on
 * this 2-core VM), in alternating blocks of steps so both sides see the
 * same machine. Reported: median step times, achieved GFLOP/s (analytic
 * FLOPs: forward multiply-adds x 2, training = 3 x forward) against the
 * sgemm peak measured here, peak RSS of both processes, and last lines
 * `mlp_step_ratio_vs_torch: R`, `cnn_step_ratio_vs_torch: R` and
 * `lstm_step_ratio_vs_torch: R` (ours over theirs; goals 0.9, 1.0, 1.0).
 * The LSTM reads the MLP's batch of 128 images row by row (28 steps of 28
 * pixels, hidden 128: tf_layer_lstm, a dynamic loop; PyTorch's nn.LSTM)
 * with dense 10 on the last hidden state. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/devices/cpu/cpu_blas.h"
#include "tf/tf.h"

#define DATA "/usr/share/datasets/fashion-mnist/"
#define ROUNDS 7
#define BLOCK 10
#define WARMUP 5

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_d);
  return v[n / 2];
}

static void die(const char *what, const tf_status *st) {
  fprintf(stderr, "bench_train: %s: %s\n", what, st ? st->msg : "failed");
  exit(1);
}

/* ---- our side ------------------------------------------------------------------ */

typedef struct ours {
  tf_graph *g;
  tf_session *s;
  char x_name[64], y_name[64];
  const char *train;
  tf_tensor *x, *y;
} ours;

static tf_output placeholder(tf_graph *g, const char *name, tf_dtype dt, tf_shape sh) {
  tf_status st;
  tf_node_builder *b = tf_node_begin(g, "Placeholder", name);
  tf_node_set_attr(b, "dtype", tf_attr_type_v(dt));
  tf_node_set_attr(b, "shape", tf_attr_shape(sh));
  tf_node *n = tf_node_finish(b, &st);
  if (n == NULL) die(name, &st);
  return (tf_output){n, 0};
}

static void ok(tf_code rc, const char *what, const tf_status *st) {
  if (rc != TF_OK) die(what, st);
}

typedef enum kind { MLP, CNN, LSTM } kind;

static tf_output build_model(tf_layers *l, tf_output x, kind k) {
  tf_status st;
  tf_output h = x;
  if (k == LSTM) {
    ok(tf_layer_lstm(l, h, 128, NULL, &h, &st), "lstm", &st);
  } else if (k == CNN) {
    ok(tf_layer_conv2d(l, h, 32, 5, 5, 1, 1, "SAME", TF_ACT_RELU, true, NULL, NULL, NULL, &h, &st), "conv", &st);
    ok(tf_layer_max_pool(l, h, 2, 2, 2, 2, "VALID", NULL, &h, &st), "pool", &st);
    ok(tf_layer_conv2d(l, h, 64, 5, 5, 1, 1, "SAME", TF_ACT_RELU, true, NULL, NULL, NULL, &h, &st), "conv", &st);
    ok(tf_layer_max_pool(l, h, 2, 2, 2, 2, "VALID", NULL, &h, &st), "pool", &st);
    ok(tf_layer_flatten(l, h, NULL, &h, &st), "flatten", &st);
    ok(tf_layer_dense(l, h, 256, TF_ACT_RELU, true, NULL, NULL, NULL, &h, &st), "dense", &st);
  } else {
    ok(tf_layer_dense(l, h, 256, TF_ACT_RELU, true, NULL, NULL, NULL, &h, &st), "dense", &st);
    ok(tf_layer_dense(l, h, 128, TF_ACT_RELU, true, NULL, NULL, NULL, &h, &st), "dense", &st);
  }
  ok(tf_layer_dense(l, h, 10, TF_ACT_NONE, true, NULL, NULL, NULL, &h, &st), "dense", &st);
  return h;
}

static void build_ours(ours *o, kind k, tf_tensor *x, tf_tensor *y) {
  tf_status st;
  o->g = tf_graph_new();
  tf_layers *l = tf_layers_new(o->g, 1);
  tf_shape xs = k == CNN    ? tf_shape_of(4, x->shape.dims[0], 28, 28, 1)
                : k == LSTM ? tf_shape_of(3, x->shape.dims[0], 28, 28)
                            : x->shape;
  tf_output px = placeholder(o->g, "x", TF_FLOAT32, xs);
  tf_output py = placeholder(o->g, "y", TF_INT32, y->shape);
  tf_output logits = build_model(l, px, k), loss, gs;
  ok(tf_layer_sparse_softmax_cross_entropy(l, logits, py, NULL, &loss, &st), "loss", &st);
  ok(tf_global_step(o->g, &gs, &st), "global_step", &st);
  tf_optimizer_options oo = tf_optimizer_defaults(TF_OPT_ADAM);
  oo.learning_rate = 1e-3;
  oo.epsilon = 1e-7;
  tf_optimizer *opt = tf_optimizer_new(TF_OPT_ADAM, &oo);
  int n = tf_layers_trainable(l, NULL, 0);
  tf_output *vars = malloc((size_t)n * sizeof *vars);
  tf_layers_trainable(l, vars, n);
  tf_node *train = tf_optimizer_minimize(opt, o->g, loss, vars, n, gs, "train", &st);
  if (train == NULL) die("minimize", &st);
  free(vars);
  tf_node *init = tf_global_variables_initializer(o->g, "init", &st);
  if (init == NULL) die("init", &st);
  tf_session_options so = {.inter_op_threads = getenv("BENCH_INTEROP") ? atoi(getenv("BENCH_INTEROP")) : 0};
  o->s = tf_session_new(o->g, &so, &st);
  if (o->s == NULL) die("session", &st);
  const char *t = tf_node_name(init);
  ok(tf_session_run(o->s, NULL, NULL, NULL, 0, NULL, NULL, 0, &t, 1, NULL, &st), "init run", &st);
  o->train = tf_node_name(train);
  snprintf(o->x_name, sizeof o->x_name, "x");
  snprintf(o->y_name, sizeof o->y_name, "y");
  tf_tensor *xv;
  ok(tf_tensor_view(x, &xs, &xv, &st), "view", &st);
  o->x = xv;
  o->y = tf_tensor_ref(y);
  tf_optimizer_free(opt);
  tf_layers_free(l);
}

static double our_step(ours *o) {
  tf_status st;
  const char *feeds[2] = {o->x_name, o->y_name};
  tf_tensor *vals[2] = {o->x, o->y};
  double t0 = now_ms();
  ok(tf_session_run(o->s, NULL, feeds, vals, 2, NULL, NULL, 0, &o->train, 1, NULL, &st), "step", &st);
  return now_ms() - t0;
}

/* ---- PyTorch's side --------------------------------------------------------------- */

typedef struct torch {
  pid_t pid;
  FILE *to, *from;
} torch;

static void torch_start(torch *t, const char *dir) {
  int in[2], out[2];
  if (pipe(in) != 0 || pipe(out) != 0) die("pipe", NULL);
  t->pid = fork();
  if (t->pid < 0) die("fork", NULL);
  if (t->pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    close(in[1]);
    close(out[0]);
    setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
    execl("/usr/bin/python3", "python3", "bench/torch_train.py", (char *)NULL);
    perror("bench_train: exec /usr/bin/python3");
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  t->to = fdopen(in[1], "w");
  t->from = fdopen(out[0], "r");
  fprintf(t->to, "load %s\n", dir);
  fflush(t->to);
  char line[256];
  if (fgets(line, sizeof line, t->from) == NULL || strncmp(line, "ok", 2) != 0) {
    fprintf(stderr, "bench_train: PyTorch did not start (python3-torch installed? "
                    "INSTALL_EXTRAS=1 scripts/install-deps.sh)\n");
    exit(1);
  }
}

/* Runs n steps of model in PyTorch; appends their times to v. */
static int torch_run(torch *t, const char *model, int n, double *v) {
  fprintf(t->to, "run %s %d\n", model, n);
  fflush(t->to);
  static char line[65536];
  if (fgets(line, sizeof line, t->from) == NULL || strncmp(line, "ms ", 3) != 0) {
    die("PyTorch run", NULL);
  }
  char *p = line + 3, *end;
  int k = 0;
  for (double x = strtod(p, &end); end != p && k < n; x = strtod(p, &end)) {
    v[k++] = x;
    p = end;
  }
  return k;
}

static long torch_rss_kb(torch *t) {
  fprintf(t->to, "rss\n");
  fflush(t->to);
  char line[256];
  long kb = 0;
  if (fgets(line, sizeof line, t->from) != NULL) sscanf(line, "rss %ld", &kb);
  return kb;
}

static void torch_stop(torch *t) {
  fprintf(t->to, "quit\n");
  fclose(t->to);
  fclose(t->from);
  waitpid(t->pid, NULL, 0);
}

/* ---- reference peak and FLOPs -------------------------------------------------------- */

static double sgemm_gflops(void) {
  int n = 1024;
  float *a = calloc((size_t)n * n, 4), *b = calloc((size_t)n * n, 4), *c = calloc((size_t)n * n, 4);
  for (int i = 0; i < n * n; i++) a[i] = b[i] = (float)(i % 7) * 0.1f;
  tf__gemm_dims d = tf__gemm_dims_packed(false, false, n, n, n);
  tf_status st;
  double best = 1e30; /* a peak: the best of 15 */
  for (int r = 0; r < 15; r++) {
    double t0 = now_ms();
    tf__blas_sgemm(&d, 1, a, b, 0, c, &st);
    double t = now_ms() - t0;
    if (t < best) best = t;
  }
  free(a);
  free(b);
  free(c);
  return 2.0 * n * n * n / (best * 1e6);
}

/* Training FLOPs per step: 3 x forward, forward = 2 x multiply-adds. */
static double step_gflop(kind k, int batch) {
  double mac;
  if (k == LSTM) {
    mac = 28.0 * 4 * 128 * (28 + 128) + 128.0 * 10;
  } else if (k == CNN) {
    mac = 28.0 * 28 * 32 * 25 * 1 + 14.0 * 14 * 64 * 25 * 32 + 3136.0 * 256 + 256.0 * 10;
  } else {
    mac = 784.0 * 256 + 256.0 * 128 + 128.0 * 10;
  }
  return 3.0 * 2.0 * mac * batch / 1e9;
}

/* ---- main ------------------------------------------------------------------------------- */

static void load_batch(int batch, tf_tensor **x, tf_tensor **y) {
  tf_status st;
  tf_tensor *img, *lab;
  if (tf_idx_load(DATA "train-images-idx3-ubyte.gz", NULL, &img, &st) != TF_OK) die("images", &st);
  if (tf_idx_load(DATA "train-labels-idx1-ubyte.gz", NULL, &lab, &st) != TF_OK) die("labels", &st);
  tf_shape sx = tf_shape_of(2, batch, 784), sy = tf_shape_of(1, batch);
  ok(tf_tensor_new(TF_FLOAT32, &sx, x, &st), "alloc", &st);
  ok(tf_tensor_new(TF_INT32, &sy, y, &st), "alloc", &st);
  for (int i = 0; i < batch * 784; i++) ((float *)(*x)->data)[i] = ((uint8_t *)img->data)[i] / 255.0f;
  for (int i = 0; i < batch; i++) ((int32_t *)(*y)->data)[i] = ((uint8_t *)lab->data)[i];
  tf_tensor_unref(img);
  tf_tensor_unref(lab);
}

typedef struct result {
  double ours_ms, torch_ms;
} result;

static result compare(const char *model, kind k, int batch, torch *t, ours *o) {
  double mine[ROUNDS * BLOCK], theirs[ROUNDS * BLOCK];
  int n_mine = 0, n_theirs = 0;
  for (int i = 0; i < WARMUP; i++) our_step(o);
  double tmp[WARMUP];
  torch_run(t, model, WARMUP, tmp);
  for (int r = 0; r < ROUNDS; r++) {
    bool torch_first = r % 2 == 1;
    if (torch_first) n_theirs += torch_run(t, model, BLOCK, theirs + n_theirs);
    for (int i = 0; i < BLOCK; i++) mine[n_mine++] = our_step(o);
    if (!torch_first) n_theirs += torch_run(t, model, BLOCK, theirs + n_theirs);
  }
  result res = {median(mine, n_mine), median(theirs, n_theirs)};
  double gf = step_gflop(k, batch);
  printf("%s (batch %d, %.3f GFLOP/step): ours %.3f ms (%.1f GFLOP/s), PyTorch %.3f ms "
         "(%.1f GFLOP/s)\n", model, batch, gf, res.ours_ms, gf / res.ours_ms * 1e3,
         res.torch_ms, gf / res.torch_ms * 1e3);
  return res;
}

int main(int argc, char **argv) {
  /* Both sides run with OMP_WAIT_POLICY=PASSIVE: oneDNN (our convolutions)
   * and PyTorch use OpenMP, whose idle threads otherwise spin and take the
   * other process's cores. libgomp reads it at load time, so re-exec. */
  if (getenv("OMP_WAIT_POLICY") == NULL) {
    setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
    execv("/proc/self/exe", argv);
  }
  (void)argc;
  signal(SIGPIPE, SIG_IGN);
  char dir[] = "/tmp/bench_train_XXXXXX";
  if (mkdtemp(dir) == NULL) die("mkdtemp", NULL);
  tf_status st;
  tf_tensor *mx, *my, *cx, *cy;
  load_batch(128, &mx, &my);
  load_batch(64, &cx, &cy);
  const char *names[4] = {"mlp_x", "mlp_y", "cnn_x", "cnn_y"};
  tf_tensor *ts[4] = {mx, my, cx, cy};
  for (int i = 0; i < 4; i++) {
    char path[128];
    snprintf(path, sizeof path, "%s/%s.npy", dir, names[i]);
    ok(tf_tensor_save_npy(ts[i], path, &st), path, &st);
  }
  double peak = sgemm_gflops();
  printf("bench_train: Adam lr 1e-3; %d rounds of %d steps per side, alternating; "
         "medians. sgemm peak here: %.1f GFLOP/s (n=1024, best of 15)\n", ROUNDS, BLOCK, peak);
  torch t;
  torch_start(&t, dir);
  ours m = {0}, c = {0}, r = {0};
  build_ours(&m, MLP, mx, my);
  result rm = compare("mlp", MLP, 128, &t, &m);
  build_ours(&c, CNN, cx, cy);
  result rc = compare("cnn", CNN, 64, &t, &c);
  build_ours(&r, LSTM, mx, my);
  result rl = compare("lstm", LSTM, 128, &t, &r);
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  printf("peak RSS: ours %ld MiB, PyTorch %ld MiB\n", ru.ru_maxrss / 1024, torch_rss_kb(&t) / 1024);
  printf("of the sgemm peak: mlp ours %.0f%% PyTorch %.0f%%; cnn ours %.0f%% PyTorch %.0f%%\n",
         100 * step_gflop(MLP, 128) / rm.ours_ms * 1e3 / peak,
         100 * step_gflop(MLP, 128) / rm.torch_ms * 1e3 / peak,
         100 * step_gflop(CNN, 64) / rc.ours_ms * 1e3 / peak,
         100 * step_gflop(CNN, 64) / rc.torch_ms * 1e3 / peak);
  torch_stop(&t);
  for (int i = 0; i < 4; i++) {
    char path[128];
    snprintf(path, sizeof path, "%s/%s.npy", dir, names[i]);
    unlink(path);
  }
  rmdir(dir);
  printf("mlp_step_ratio_vs_torch: %.3f\n", rm.ours_ms / rm.torch_ms);
  printf("cnn_step_ratio_vs_torch: %.3f\n", rc.ours_ms / rc.torch_ms);
  printf("lstm_step_ratio_vs_torch: %.3f\n", rl.ours_ms / rl.torch_ms);
  return 0;
}
