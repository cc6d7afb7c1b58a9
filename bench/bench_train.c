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
 * with dense 10 on the last hidden state.
 * bn_cnn (batch 64) is the example's MobileNet-style CNN: conv 3x3x32 +
 * batch norm + ReLU, three separable 3x3 convs (64, 128, 128; depthwise
 * then 1x1, no bias) each with batch norm + ReLU, maxpool 2 after the
 * first two, global average pool, dense 10; batch norm in training mode
 * with its moving-average updates in the step (PyTorch: grouped Conv2d,
 * BatchNorm2d in train mode): `bn_cnn_step_ratio_vs_torch: R`.
 * depthwise times one DepthwiseConv2dNative forward with both backprops
 * (its registered gradient, one session Run fetching the output, dx and
 * dfilter) on x [64, 14, 14, 128] NHWC, a 3x3 filter, stride 1, SAME,
 * float32, against PyTorch's conv2d(groups=128) forward + backward on the
 * same shapes (NCHW, its layout): `depthwise_ratio_vs_torch: R`.
 *
 *   bench_train [mlp|cnn|lstm|bn_cnn|depthwise ...]
 *
 * runs only the named comparisons (default: all). */
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

typedef enum kind { MLP, CNN, LSTM, BN_CNN, DW } kind;

static tf_output bench_const(tf_graph *g, const char *name, tf_tensor *t) {
  tf_status st;
  tf_node_builder *b = tf_node_begin(g, "Const", name);
  tf_node_set_attr(b, "value", tf_attr_tensor(t));
  tf_node_set_attr(b, "dtype", tf_attr_type_v(t->dtype));
  tf_node *n = tf_node_finish(b, &st);
  tf_tensor_unref(t);
  if (n == NULL) die(name, &st);
  return (tf_output){n, 0};
}

/* Batch norm (training mode, momentum 0.99, epsilon 1e-3) and ReLU. */
static tf_output bn_relu(tf_layers *l, tf_output h) {
  tf_status st;
  tf_output nil = {NULL, 0};
  ok(tf_layer_batch_norm(l, h, nil, true, 0.99, 1e-3, true, true, NULL, &h, &st), "bn", &st);
  ok(tf_layer_activation(l, h, TF_ACT_RELU, NULL, &h, &st), "relu", &st);
  return h;
}

static tf_output sep_bn_relu(tf_layers *l, tf_output h, int64_t filters) {
  tf_status st;
  ok(tf_layer_separable_conv2d(l, h, filters, 3, 3, 1, 1, "SAME", 1, TF_ACT_NONE, false, NULL,
                               NULL, NULL, NULL, &h, &st), "separable", &st);
  return bn_relu(l, h);
}

/* bn_cnn up to the global average pool (features [batch, 128]). */
static tf_output build_bn_cnn(tf_layers *l, tf_output h) {
  tf_status st;
  ok(tf_layer_conv2d(l, h, 32, 3, 3, 1, 1, "SAME", TF_ACT_NONE, false, NULL, NULL, NULL, &h, &st),
     "conv", &st);
  h = sep_bn_relu(l, bn_relu(l, h), 64);
  ok(tf_layer_max_pool(l, h, 2, 2, 2, 2, "VALID", NULL, &h, &st), "pool", &st);
  h = sep_bn_relu(l, h, 128);
  ok(tf_layer_max_pool(l, h, 2, 2, 2, 2, "VALID", NULL, &h, &st), "pool", &st);
  h = sep_bn_relu(l, h, 128);
  int32_t axes[2] = {1, 2};
  tf_graph *g = tf_layers_graph(l);
  tf_node_builder *b = tf_node_begin(g, "Mean", "global_average_pooling2d");
  tf_node_add_input(b, h);
  tf_node_add_input(b, bench_const(g, "gap_axes", tf_tensor_vec_i32(2, axes)));
  tf_node_set_attr(b, "keep_dims", tf_attr_bool(false));
  h = (tf_output){tf_node_finish(b, &st), 0};
  if (h.node == NULL) die("mean", &st);
  return h;
}

static tf_output build_model(tf_layers *l, tf_output x, kind k) {
  tf_status st;
  tf_output h = x;
  if (k == LSTM) {
    ok(tf_layer_lstm(l, h, 128, NULL, &h, &st), "lstm", &st);
  } else if (k == BN_CNN) {
    h = build_bn_cnn(l, h);
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
  tf_shape xs = k == CNN || k == BN_CNN ? tf_shape_of(4, x->shape.dims[0], 28, 28, 1)
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
  tf_node *upd[8]; /* batch norm's moving averages run with each step */
  int n_upd = tf_layers_update_ops(l, upd, 8);
  if (n_upd > 8) die("too many update ops", NULL);
  tf_optimizer_control_dependencies(opt, upd, n_upd);
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

static double our_step(void *arg) {
  ours *o = arg;
  tf_status st;
  const char *feeds[2] = {o->x_name, o->y_name};
  tf_tensor *vals[2] = {o->x, o->y};
  double t0 = now_ms();
  ok(tf_session_run(o->s, NULL, feeds, vals, 2, NULL, NULL, 0, &o->train, 1, NULL, &st), "step", &st);
  return now_ms() - t0;
}

/* DepthwiseConv2dNative forward + both backprops: one Run fetching the
 * output, dx and dfilter (tf_gradients: the op's registered gradient). */
typedef struct dw {
  tf_session *s;
  char fetch_names[3][80];
  const char *fetch[3], *feeds[3];
  tf_tensor *vals[3];
} dw;

static tf_tensor *random_f32(tf_shape sh, uint32_t seed) {
  tf_status st;
  tf_tensor *t;
  ok(tf_tensor_new(TF_FLOAT32, &sh, &t, &st), "alloc", &st);
  float *p = t->data;
  for (int64_t i = 0; i < tf_shape_num_elements(&sh); i++) {
    seed = seed * 1664525u + 1013904223u;
    p[i] = (float)(seed >> 8) / 16777216.0f - 0.5f;
  }
  return t;
}

static void build_dw(dw *d) {
  tf_status st;
  tf_graph *g = tf_graph_new();
  tf_shape xs = tf_shape_of(4, 64, 14, 14, 128), fs = tf_shape_of(4, 3, 3, 128, 1);
  tf_output in[3] = {placeholder(g, "x", TF_FLOAT32, xs), placeholder(g, "f", TF_FLOAT32, fs),
                     placeholder(g, "dy", TF_FLOAT32, xs)};
  int64_t strides[4] = {1, 1, 1, 1};
  tf_node_builder *b = tf_node_begin(g, "DepthwiseConv2dNative", "depthwise");
  tf_node_add_input(b, in[0]);
  tf_node_add_input(b, in[1]);
  tf_node_set_attr(b, "strides", tf_attr_int_list(strides, 4));
  tf_node_set_attr(b, "padding", tf_attr_string("SAME"));
  tf_output y = {tf_node_finish(b, &st), 0}, dxs[2];
  if (y.node == NULL) die("DepthwiseConv2dNative", &st);
  ok(tf_gradients(g, &y, 1, in, 2, &in[2], dxs, &st), "depthwise gradients", &st);
  tf_output outs[3] = {y, dxs[0], dxs[1]};
  static const char *feed_names[3] = {"x", "f", "dy"};
  for (int i = 0; i < 3; i++) {
    snprintf(d->fetch_names[i], sizeof d->fetch_names[i], "%s:%d", tf_node_name(outs[i].node),
             outs[i].index);
    d->fetch[i] = d->fetch_names[i];
    d->feeds[i] = feed_names[i];
  }
  d->vals[0] = random_f32(xs, 1);
  d->vals[1] = random_f32(fs, 2);
  d->vals[2] = random_f32(xs, 3);
  tf_session_options so = {.inter_op_threads = getenv("BENCH_INTEROP") ? atoi(getenv("BENCH_INTEROP")) : 0};
  d->s = tf_session_new(g, &so, &st);
  if (d->s == NULL) die("session", &st);
}

static double dw_step(void *arg) {
  dw *d = arg;
  tf_status st;
  tf_tensor *out[3] = {NULL, NULL, NULL};
  double t0 = now_ms();
  ok(tf_session_run(d->s, NULL, d->feeds, d->vals, 3, d->fetch, out, 3, NULL, 0, NULL, &st),
     "depthwise step", &st);
  double t = now_ms() - t0;
  for (int i = 0; i < 3; i++) tf_tensor_unref(out[i]);
  return t;
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
  if (k == DW) { /* forward + both backprops, each the forward's cost */
    return 3.0 * 2.0 * 14 * 14 * 128 * 9 * batch / 1e9;
  } else if (k == BN_CNN) { /* convolutions and dense; batch norm left out */
    mac = 28.0 * 28 * 32 * 9 + 28.0 * 28 * 32 * (9 + 64) + 14.0 * 14 * 64 * (9 + 128) +
          7.0 * 7 * 128 * (9 + 128) + 128.0 * 10;
  } else if (k == LSTM) {
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

/* our step(arg) against PyTorch's `model`, alternating blocks. */
static result compare(const char *model, kind k, int batch, torch *t, double (*step)(void *),
                      void *o) {
  double mine[ROUNDS * BLOCK], theirs[ROUNDS * BLOCK];
  int n_mine = 0, n_theirs = 0;
  for (int i = 0; i < WARMUP; i++) step(o);
  double tmp[WARMUP];
  torch_run(t, model, WARMUP, tmp);
  for (int r = 0; r < ROUNDS; r++) {
    bool torch_first = r % 2 == 1;
    if (torch_first) n_theirs += torch_run(t, model, BLOCK, theirs + n_theirs);
    for (int i = 0; i < BLOCK; i++) mine[n_mine++] = step(o);
    if (!torch_first) n_theirs += torch_run(t, model, BLOCK, theirs + n_theirs);
  }
  result res = {median(mine, n_mine), median(theirs, n_theirs)};
  double gf = step_gflop(k, batch);
  printf("%s (batch %d, %.3f GFLOP/step): ours %.3f ms (%.1f GFLOP/s), PyTorch %.3f ms "
         "(%.1f GFLOP/s)\n", model, batch, gf, res.ours_ms, gf / res.ours_ms * 1e3,
         res.torch_ms, gf / res.torch_ms * 1e3);
  return res;
}

/* Whether the command line asks for `name` (no arguments: everything). */
static bool wanted(int argc, char **argv, const char *name) {
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], name) == 0) return true;
  }
  return argc <= 1;
}

#define N_CASES 5
static const char *const case_names[N_CASES] = {"mlp", "cnn", "lstm", "bn_cnn", "depthwise"};
static const kind case_kinds[N_CASES] = {MLP, CNN, LSTM, BN_CNN, DW};

/* Builds our side of case i and compares it with PyTorch's. */
static result run_case(int i, torch *t, tf_tensor *const *batches) {
  kind k = case_kinds[i];
  if (k == DW) {
    dw *d = calloc(1, sizeof *d);
    build_dw(d);
    return compare(case_names[i], k, 64, t, dw_step, d);
  }
  ours *o = calloc(1, sizeof *o);
  bool small = k == CNN || k == BN_CNN; /* batch 64; else the MLP's 128 */
  build_ours(o, k, batches[small ? 2 : 0], batches[small ? 3 : 1]);
  return compare(case_names[i], k, small ? 64 : 128, t, our_step, o);
}

/* Writes the batches to DIR/<name>.npy (remove: unlinks them instead). */
static void npy_files(const char *dir, tf_tensor *const *ts, bool remove) {
  static const char *const names[4] = {"mlp_x", "mlp_y", "cnn_x", "cnn_y"};
  tf_status st;
  for (int i = 0; i < 4; i++) {
    char path[128];
    snprintf(path, sizeof path, "%s/%s.npy", dir, names[i]);
    if (remove) {
      unlink(path);
    } else {
      ok(tf_tensor_save_npy(ts[i], path, &st), path, &st);
    }
  }
}

int main(int argc, char **argv) {
  /* Both sides run with OMP_WAIT_POLICY=PASSIVE: oneDNN (our convolutions)
   * and PyTorch use OpenMP, whose idle threads otherwise spin and take the
   * other process's cores. libgomp reads it at load time, so re-exec. */
  if (getenv("OMP_WAIT_POLICY") == NULL) {
    setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
    execv("/proc/self/exe", argv);
  }
  signal(SIGPIPE, SIG_IGN);
  char dir[] = "/tmp/bench_train_XXXXXX";
  if (mkdtemp(dir) == NULL) die("mkdtemp", NULL);
  tf_tensor *ts[4]; /* mlp x, y (batch 128); cnn x, y (batch 64) */
  load_batch(128, &ts[0], &ts[1]);
  load_batch(64, &ts[2], &ts[3]);
  npy_files(dir, ts, false);
  double peak = sgemm_gflops();
  printf("bench_train: Adam lr 1e-3; %d rounds of %d steps per side, alternating; "
         "medians. sgemm peak here: %.1f GFLOP/s (n=1024, best of 15)\n", ROUNDS, BLOCK, peak);
  torch t;
  torch_start(&t, dir);
  result res[N_CASES] = {{0, 0}};
  bool ran[N_CASES] = {false};
  for (int i = 0; i < N_CASES; i++) {
    if (!wanted(argc, argv, case_names[i])) continue;
    res[i] = run_case(i, &t, ts);
    ran[i] = true;
  }
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  printf("peak RSS: ours %ld MiB, PyTorch %ld MiB\n", ru.ru_maxrss / 1024, torch_rss_kb(&t) / 1024);
  for (int i = 0; i < N_CASES; i++) {
    if (!ran[i] || case_kinds[i] == LSTM) continue;
    int batch = case_kinds[i] == MLP ? 128 : 64;
    double gf = step_gflop(case_kinds[i], batch) * 1e3 / peak;
    printf("of the sgemm peak: %s ours %.0f%% PyTorch %.0f%%\n", case_names[i],
           100 * gf / res[i].ours_ms, 100 * gf / res[i].torch_ms);
  }
  torch_stop(&t);
  npy_files(dir, ts, true);
  rmdir(dir);
  for (int i = 0; i < N_CASES; i++) {
    if (!ran[i]) continue;
    printf("%s_%sratio_vs_torch: %.3f\n", case_names[i], case_kinds[i] == DW ? "" : "step_",
           res[i].ours_ms / res[i].torch_ms);
  }
  return 0;
}
