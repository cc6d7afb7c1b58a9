/* fashion_mnist.c: train an MLP, a CNN, an LSTM or a batch-normalised
 * depthwise-separable CNN on Fashion-MNIST in one process.
 *
 * The graph reads the gzipped IDX files itself (an input pipeline of
 * readers and a shuffling queue filled by background threads), builds the
 * model with tf/layers.h, the loss and Adam with tf/train.h, and trains
 * until the epochs run out. Test accuracy is then measured by feeding the
 * test set, in chunks, past the pipeline (partial execution: the fed edge
 * cuts the queue out). A progress bar is drawn on a terminal; otherwise a
 * plain line is printed every few seconds. The last line is
 * `test_accuracy: X`.
 *
 *   fashion_mnist [--model mlp|cnn|lstm|bn_cnn] [--epochs N] [--batch N]
 *                 [--lr X] [--seed N] [--data DIR] [--threads N]
 *
 * Defaults: MLP 784-256-128-10 (ReLU), batch 128, 15 epochs; CNN (conv
 * 5x5x32 SAME + ReLU + maxpool 2, conv 5x5x64 SAME + ReLU + maxpool 2,
 * dense 256 + ReLU, dense 10), batch 64, 5 epochs; LSTM reading each image
 * row by row (28 steps of 28 pixels, hidden 128, tf_layer_lstm: a dynamic
 * loop) and dense 10 on its last hidden state, batch 128, 5 epochs;
 * bn_cnn, a small MobileNet-style CNN, batch 64, 5 epochs:
 *   conv2d 3x3x32 SAME stride 1, no bias -> batch norm -> ReLU;
 *   separable_conv2d 3x3 -> 64 SAME stride 1, no bias -> batch norm -> ReLU;
 *   maxpool 2x2;
 *   separable_conv2d 3x3 -> 128 SAME, no bias -> batch norm -> ReLU;
 *   maxpool 2x2;
 *   separable_conv2d 3x3 -> 128 SAME, no bias -> batch norm -> ReLU;
 *   global average pool (Mean over H and W); dense 10.
 * Batch norm is Keras's (momentum 0.99, epsilon 1e-3); the train op also
 * runs its moving-average updates (tf_layers_update_ops as control
 * dependencies), and the test pass feeds the scalar bool "training" false
 * so that it normalises with the moving statistics. All models: Adam
 * lr 1e-3, eps 1e-7.
 * examples/fashion_mnist/torch_ref.py trains the same in PyTorch. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tf/input.h"
#include "tf/layers.h"
#include "tf/tf.h"
#include "tf/train.h"

typedef struct options {
  const char *model;
  const char *data;
  int epochs;
  int batch;
  double lr;
  int64_t seed;
  int threads;
} options;

typedef struct model {
  tf_graph *g;
  tf_layers *layers;
  tf_input_pipeline *input;
  tf_output x;        /* PlaceholderWithDefault over the batch: feedable */
  tf_output labels;   /* likewise */
  tf_output training; /* bn_cnn: PlaceholderWithDefault(true), bool scalar;
                       * node NULL for the other models */
  tf_output logits, loss, accuracy;
  tf_node *train, *init, *opt_init;
  tf_optimizer *opt;
} model;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what, const tf_status *st) {
  fprintf(stderr, "fashion_mnist: %s: %s: %s\n", what, tf_code_name(st->code), st->msg);
  exit(1);
}

static void usage(void) {
  fprintf(stderr, "usage: fashion_mnist [--model mlp|cnn|lstm|bn_cnn] [--epochs N] "
                  "[--batch N] [--lr X] [--seed N] [--data DIR] [--threads N]\n");
  exit(2);
}

static options parse(int argc, char **argv) {
  options o = {.model = "mlp", .data = "/usr/share/datasets/fashion-mnist",
               .epochs = -1, .batch = -1, .lr = 1e-3, .seed = 1, .threads = 0};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (v == NULL) usage();
    if (strcmp(a, "--model") == 0) {
      o.model = v;
    } else if (strcmp(a, "--data") == 0) {
      o.data = v;
    } else if (strcmp(a, "--epochs") == 0) {
      o.epochs = atoi(v);
    } else if (strcmp(a, "--batch") == 0) {
      o.batch = atoi(v);
    } else if (strcmp(a, "--lr") == 0) {
      o.lr = atof(v);
    } else if (strcmp(a, "--seed") == 0) {
      o.seed = atoll(v);
    } else if (strcmp(a, "--threads") == 0) {
      o.threads = atoi(v);
    } else {
      usage();
    }
    i++;
  }
  bool cnn = strcmp(o.model, "cnn") == 0 || strcmp(o.model, "bn_cnn") == 0;
  bool lstm = strcmp(o.model, "lstm") == 0;
  if (!cnn && !lstm && strcmp(o.model, "mlp") != 0) usage();
  if (o.epochs < 0) o.epochs = cnn || lstm ? 5 : 15;
  if (o.batch < 0) o.batch = cnn ? 64 : 128;
  if (o.epochs < 1 || o.batch < 1 || !(o.lr > 0)) usage();
  return o;
}

static char *data_file(const options *o, const char *name) {
  size_t n = strlen(o->data) + strlen(name) + 2;
  char *p = malloc(n);
  snprintf(p, n, "%s/%s", o->data, name);
  return p;
}

/* files -> readers -> decode -> RandomShuffleQueue -> batches. */
static void build_input(model *m, const options *o, char **files) {
  tf_status st;
  tf_input_source src[2];
  memset(src, 0, sizeof src);
  src[0].files = (const char *const *)&files[0];
  src[0].n_files = 1;
  src[0].records = tf_record_options_idx();
  src[0].records.idx_dtype = TF_UINT8;
  src[0].records.idx_record_shape = tf_shape_of(2, 28, 28);
  src[0].decode = (tf_decode_spec){.raw_dtype = TF_UINT8, .dtype = TF_FLOAT32,
                                   .scale = 1.0 / 255, .shape = tf_shape_of(1, 784)};
  src[1].files = (const char *const *)&files[1];
  src[1].n_files = 1;
  src[1].records = tf_record_options_idx();
  src[1].records.idx_dtype = TF_UINT8;
  src[1].records.idx_record_shape = tf_shape_scalar();
  src[1].decode = (tf_decode_spec){.raw_dtype = TF_UINT8, .dtype = TF_INT32,
                                   .shape = tf_shape_scalar()};
  tf_input_options io = {.name = "input", .sources = src, .n_sources = 2,
                         .batch_size = o->batch, .num_epochs = o->epochs,
                         .shuffle = true, .capacity = 20 * o->batch,
                         .min_after_dequeue = 10 * o->batch, .seed = o->seed,
                         .read_batch = 1000};
  m->input = tf_input_pipeline_new(m->g, &io, &st);
  if (m->input == NULL) die("input pipeline", &st);
  /* Feedable views of the batch with an unknown batch size (for eval). */
  tf_attr_kv a1[] = {{"dtype", tf_attr_type_v(TF_FLOAT32)},
                     {"shape", tf_attr_shape(tf_shape_of(2, -1, 784))}};
  tf_attr_kv a2[] = {{"dtype", tf_attr_type_v(TF_INT32)},
                     {"shape", tf_attr_shape(tf_shape_of(1, -1))}};
  tf_output in0 = tf_input_pipeline_output(m->input, 0);
  tf_output in1 = tf_input_pipeline_output(m->input, 1);
  tf_node_builder *b = tf_node_begin(m->g, "PlaceholderWithDefault", "images");
  tf_node_add_input(b, in0);
  for (int i = 0; i < 2; i++) tf_node_set_attr(b, a1[i].name, a1[i].value);
  m->x = (tf_output){tf_node_finish(b, &st), 0};
  if (m->x.node == NULL) die("images", &st);
  b = tf_node_begin(m->g, "PlaceholderWithDefault", "labels");
  tf_node_add_input(b, in1);
  for (int i = 0; i < 2; i++) tf_node_set_attr(b, a2[i].name, a2[i].value);
  m->labels = (tf_output){tf_node_finish(b, &st), 0};
  if (m->labels.node == NULL) die("labels", &st);
}

static void check(tf_code rc, const char *what, const tf_status *st) {
  if (rc != TF_OK) die(what, st);
}

static void build_mlp(model *m, const options *o) {
  tf_status st;
  tf_output h;
  tf_layers *l = m->layers;
  check(tf_layer_dense(l, m->x, 256, TF_ACT_RELU, true, NULL, NULL, NULL, &h, &st), "dense", &st);
  check(tf_layer_dense(l, h, 128, TF_ACT_RELU, true, NULL, NULL, NULL, &h, &st), "dense", &st);
  check(tf_layer_dense(l, h, 10, TF_ACT_NONE, true, NULL, NULL, "logits", &m->logits, &st),
        "dense", &st);
  (void)o;
}

/* x [batch, 784] reshaped to dims[0..n). */
static tf_output reshape_images(model *m, const int32_t *dims, int n) {
  tf_status st;
  tf_tensor *shape = tf_tensor_vec_i32(n, dims);
  tf_node_builder *b = tf_node_begin(m->g, "Const", "image_shape");
  tf_node_set_attr(b, "value", tf_attr_tensor(shape));
  tf_node_set_attr(b, "dtype", tf_attr_type_v(TF_INT32));
  tf_node *c = tf_node_finish(b, &st);
  tf_tensor_unref(shape);
  if (c == NULL) die("image shape", &st);
  b = tf_node_begin(m->g, "Reshape", "image");
  tf_node_add_input(b, m->x);
  tf_node_add_input(b, (tf_output){c, 0});
  tf_output h = {tf_node_finish(b, &st), 0};
  if (h.node == NULL) die("reshape", &st);
  return h;
}

/* 28 rows of 28 pixels -> LSTM(128) -> the last h -> dense 10. */
static void build_lstm(model *m, const options *o) {
  tf_status st;
  int32_t dims[3] = {-1, 28, 28};
  tf_output h = reshape_images(m, dims, 3);
  check(tf_layer_lstm(m->layers, h, 128, NULL, &h, &st), "lstm", &st);
  check(tf_layer_dense(m->layers, h, 10, TF_ACT_NONE, true, NULL, NULL, "logits",
                       &m->logits, &st), "dense", &st);
  (void)o;
}

static void build_cnn(model *m, const options *o) {
  tf_status st;
  tf_layers *l = m->layers;
  int32_t dims[4] = {-1, 28, 28, 1};
  tf_output h = reshape_images(m, dims, 4);
  check(tf_layer_conv2d(l, h, 32, 5, 5, 1, 1, "SAME", TF_ACT_RELU, true, NULL, NULL, NULL,
                        &h, &st), "conv2d", &st);
  check(tf_layer_max_pool(l, h, 2, 2, 2, 2, "VALID", NULL, &h, &st), "max_pool", &st);
  check(tf_layer_conv2d(l, h, 64, 5, 5, 1, 1, "SAME", TF_ACT_RELU, true, NULL, NULL, NULL,
                        &h, &st), "conv2d", &st);
  check(tf_layer_max_pool(l, h, 2, 2, 2, 2, "VALID", NULL, &h, &st), "max_pool", &st);
  check(tf_layer_flatten(l, h, NULL, &h, &st), "flatten", &st);
  check(tf_layer_dense(l, h, 256, TF_ACT_RELU, true, NULL, NULL, NULL, &h, &st), "dense", &st);
  check(tf_layer_dense(l, h, 10, TF_ACT_NONE, true, NULL, NULL, "logits", &m->logits, &st),
        "dense", &st);
  (void)o;
}

/* A Const `name` holding t (which it takes). */
static tf_output constant(model *m, const char *name, tf_tensor *t) {
  tf_status st;
  tf_node_builder *b = tf_node_begin(m->g, "Const", name);
  tf_node_set_attr(b, "value", tf_attr_tensor(t));
  tf_node_set_attr(b, "dtype", tf_attr_type_v(t->dtype));
  tf_node *c = tf_node_finish(b, &st);
  tf_tensor_unref(t);
  if (c == NULL) die(name, &st);
  return (tf_output){c, 0};
}

/* m->training: a bool scalar PlaceholderWithDefault(true), fed false by
 * the evaluation. */
static void build_training_flag(model *m) {
  tf_status st;
  tf_output def = constant(m, "training/default", tf_tensor_scalar_bool(true));
  tf_node_builder *b = tf_node_begin(m->g, "PlaceholderWithDefault", "training");
  tf_node_add_input(b, def);
  tf_node_set_attr(b, "dtype", tf_attr_type_v(TF_BOOL));
  tf_node_set_attr(b, "shape", tf_attr_shape(tf_shape_scalar()));
  m->training = (tf_output){tf_node_finish(b, &st), 0};
  if (m->training.node == NULL) die("training flag", &st);
}

/* Keras's BatchNormalization (momentum 0.99, epsilon 1e-3) switched by
 * m->training, then ReLU. */
static tf_output bn_relu(model *m, tf_output h) {
  tf_status st;
  check(tf_layer_batch_norm(m->layers, h, m->training, true, 0.99, 1e-3, true, true, NULL,
                            &h, &st), "batch_norm", &st);
  check(tf_layer_activation(m->layers, h, TF_ACT_RELU, NULL, &h, &st), "relu", &st);
  return h;
}

/* SeparableConv2D 3x3 -> filters, SAME, stride 1, no bias; BN; ReLU. */
static tf_output sep_bn_relu(model *m, tf_output h, int64_t filters) {
  tf_status st;
  check(tf_layer_separable_conv2d(m->layers, h, filters, 3, 3, 1, 1, "SAME", 1, TF_ACT_NONE,
                                  false, NULL, NULL, NULL, NULL, &h, &st),
        "separable_conv2d", &st);
  return bn_relu(m, h);
}

/* The MobileNet-style bn_cnn of the header comment. */
static void build_bn_cnn(model *m, const options *o) {
  tf_status st;
  tf_layers *l = m->layers;
  build_training_flag(m);
  int32_t dims[4] = {-1, 28, 28, 1};
  tf_output h = reshape_images(m, dims, 4);
  check(tf_layer_conv2d(l, h, 32, 3, 3, 1, 1, "SAME", TF_ACT_NONE, false, NULL, NULL, NULL,
                        &h, &st), "conv2d", &st);
  h = bn_relu(m, h);
  h = sep_bn_relu(m, h, 64);
  check(tf_layer_max_pool(l, h, 2, 2, 2, 2, "VALID", NULL, &h, &st), "max_pool", &st);
  h = sep_bn_relu(m, h, 128);
  check(tf_layer_max_pool(l, h, 2, 2, 2, 2, "VALID", NULL, &h, &st), "max_pool", &st);
  h = sep_bn_relu(m, h, 128);
  /* Global average pooling: Mean over H and W. */
  int32_t axes[2] = {1, 2};
  tf_output ax = constant(m, "global_average_pooling2d/axes", tf_tensor_vec_i32(2, axes));
  tf_node_builder *b = tf_node_begin(m->g, "Mean", "global_average_pooling2d/Mean");
  tf_node_add_input(b, h);
  tf_node_add_input(b, ax);
  tf_node_set_attr(b, "keep_dims", tf_attr_bool(false));
  h = (tf_output){tf_node_finish(b, &st), 0};
  if (h.node == NULL) die("global average pool", &st);
  check(tf_layer_dense(l, h, 10, TF_ACT_NONE, true, NULL, NULL, "logits", &m->logits, &st),
        "dense", &st);
  (void)o;
}

static void build(model *m, const options *o, char **files) {
  tf_status st;
  m->g = tf_graph_new();
  m->layers = tf_layers_new(m->g, o->seed);
  build_input(m, o, files);
  if (strcmp(o->model, "cnn") == 0) {
    build_cnn(m, o);
  } else if (strcmp(o->model, "bn_cnn") == 0) {
    build_bn_cnn(m, o);
  } else if (strcmp(o->model, "lstm") == 0) {
    build_lstm(m, o);
  } else {
    build_mlp(m, o);
  }
  check(tf_layer_sparse_softmax_cross_entropy(m->layers, m->logits, m->labels, NULL,
                                              &m->loss, &st), "loss", &st);
  check(tf_layer_accuracy(m->layers, m->logits, m->labels, NULL, &m->accuracy, &st),
        "accuracy", &st);
  /* Non-finite guard: the step fails naming this node if the loss is NaN/Inf. */
  tf_node_builder *b = tf_node_begin(m->g, "CheckNumerics", "loss_is_finite");
  tf_node_add_input(b, m->loss);
  tf_node_set_attr(b, "message", tf_attr_string("loss"));
  m->loss = (tf_output){tf_node_finish(b, &st), 0};
  if (m->loss.node == NULL) die("CheckNumerics", &st);
  tf_output gs;
  check(tf_global_step(m->g, &gs, &st), "global_step", &st);
  tf_optimizer_options oo = tf_optimizer_defaults(TF_OPT_ADAM);
  oo.learning_rate = o->lr;
  oo.epsilon = 1e-7;
  m->opt = tf_optimizer_new(TF_OPT_ADAM, &oo);
  /* Batch norm's moving averages run with every step (TF's UPDATE_OPS). */
  int n_upd = tf_layers_update_ops(m->layers, NULL, 0);
  if (n_upd > 0) {
    tf_node **upd = malloc((size_t)n_upd * sizeof *upd);
    tf_layers_update_ops(m->layers, upd, n_upd);
    tf_optimizer_control_dependencies(m->opt, upd, n_upd);
    free(upd);
  }
  int n = tf_layers_trainable(m->layers, NULL, 0);
  tf_output *vars = malloc((size_t)n * sizeof *vars);
  tf_layers_trainable(m->layers, vars, n);
  m->train = tf_optimizer_minimize(m->opt, m->g, m->loss, vars, n, gs, "train", &st);
  free(vars);
  if (m->train == NULL) die("optimizer", &st);
  m->init = tf_global_variables_initializer(m->g, "init", &st);
  if (m->init == NULL) die("init", &st);
}

/* ---- progress --------------------------------------------------------------- */

typedef struct progress {
  bool tty;
  double start, last;
  int64_t steps_per_epoch, total;
  int batch;
} progress;

static void show(progress *p, int64_t step, double loss, bool force) {
  double t = now_s();
  if (!force && t - p->last < (p->tty ? 0.1 : 3.0)) return;
  p->last = t;
  double el = t - p->start;
  double ips = step > 0 ? (double)step * p->batch / el : 0;
  double eta = step > 0 && step < p->total ? el * (double)(p->total - step) / (double)step : 0;
  int64_t epoch = step / p->steps_per_epoch + 1, in_epoch = step % p->steps_per_epoch;
  if (step >= p->total) {
    epoch = p->total / p->steps_per_epoch;
    in_epoch = p->steps_per_epoch;
  }
  if (p->tty) {
    int width = 30, fill = (int)(width * (double)step / (double)p->total);
    char bar[64];
    for (int i = 0; i < width; i++) bar[i] = i < fill ? '=' : (i == fill ? '>' : ' ');
    bar[width] = '\0';
    fprintf(stderr, "\repoch %lld [%s] %lld/%lld loss %.4f %.0f img/s ETA %.0fs ",
            (long long)epoch, bar, (long long)in_epoch, (long long)p->steps_per_epoch,
            loss, ips, eta);
    if (force) fputc('\n', stderr);
  } else {
    printf("epoch %lld step %lld/%lld loss %.4f images/s %.0f ETA %.0fs\n",
           (long long)epoch, (long long)in_epoch, (long long)p->steps_per_epoch, loss,
           ips, eta);
    fflush(stdout);
  }
}

static int64_t train(model *m, const options *o, tf_session *s) {
  tf_status st;
  const char *init[2] = {tf_node_name(m->init), NULL};
  check(tf_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, init, 1, NULL, &st), "init", &st);
  check(tf_input_pipeline_start(m->input, s, &st), "input start", &st);
  progress p = {.tty = isatty(2) != 0, .start = now_s(), .steps_per_epoch = 60000 / o->batch,
                .batch = o->batch};
  p.total = p.steps_per_epoch * o->epochs;
  char loss_name[300];
  snprintf(loss_name, sizeof loss_name, "%s:%d", tf_node_name(m->loss.node), m->loss.index);
  const char *fetch = loss_name, *target = tf_node_name(m->train);
  int64_t step = 0;
  double loss = 0;
  for (;;) {
    tf_tensor *out = NULL;
    tf_code rc = tf_session_run(s, NULL, NULL, NULL, 0, &fetch, &out, 1, &target, 1, NULL, &st);
    if (rc == TF_OUT_OF_RANGE) break; /* the epochs are done */
    check(rc, "training step", &st);
    loss = tf_tensor_get_f64(out, 0);
    tf_tensor_unref(out);
    step++;
    show(&p, step, loss, false);
  }
  show(&p, step, loss, true);
  check(tf_input_pipeline_status(m->input, &st), "input pipeline", &st);
  double el = now_s() - p.start;
  printf("trained %lld steps in %.1f s (%.0f images/s)\n", (long long)step, el,
         (double)step * o->batch / el);
  return step;
}

/* The test set as float32 [n, 784] in [0, 1] and int32 labels [n]. */
static void load_test(const options *o, tf_tensor **x, tf_tensor **y) {
  tf_status st;
  char *fi = data_file(o, "t10k-images-idx3-ubyte.gz"), *fl = data_file(o, "t10k-labels-idx1-ubyte.gz");
  tf_tensor *img, *lab;
  if (tf_idx_load(fi, NULL, &img, &st) != TF_OK) die(fi, &st);
  if (tf_idx_load(fl, NULL, &lab, &st) != TF_OK) die(fl, &st);
  int64_t n = img->shape.dims[0];
  tf_shape sx = tf_shape_of(2, n, 784), sy = tf_shape_of(1, n);
  check(tf_tensor_new(TF_FLOAT32, &sx, x, &st), "alloc", &st);
  check(tf_tensor_new(TF_INT32, &sy, y, &st), "alloc", &st);
  const uint8_t *pi = img->data, *pl = lab->data;
  float *px = (*x)->data;
  int32_t *py = (*y)->data;
  for (int64_t i = 0; i < n * 784; i++) px[i] = (float)pi[i] / 255.0f;
  for (int64_t i = 0; i < n; i++) py[i] = pl[i];
  tf_tensor_unref(img);
  tf_tensor_unref(lab);
  free(fi);
  free(fl);
}

static double evaluate(model *m, tf_session *s, const options *o) {
  tf_status st;
  tf_tensor *x, *y;
  load_test(o, &x, &y);
  int64_t n = x->shape.dims[0], chunk = 1000, correct = 0;
  char acc_name[300];
  snprintf(acc_name, sizeof acc_name, "%s:%d", tf_node_name(m->accuracy.node), m->accuracy.index);
  /* bn_cnn: batch norm in inference mode (the moving statistics). */
  const char *feeds[3] = {tf_node_name(m->x.node), tf_node_name(m->labels.node),
                          m->training.node ? tf_node_name(m->training.node) : NULL};
  int n_feeds = m->training.node ? 3 : 2;
  tf_tensor *off = tf_tensor_scalar_bool(false);
  const char *fetch = acc_name;
  for (int64_t b = 0; b < n; b += chunk) {
    int64_t k = b + chunk <= n ? chunk : n - b;
    tf_tensor *vals[3] = {NULL, NULL, off}, *out = NULL;
    tf_shape sx = tf_shape_of(2, k, 784), sy = tf_shape_of(1, k);
    check(tf_tensor_new(TF_FLOAT32, &sx, &vals[0], &st), "alloc", &st);
    check(tf_tensor_new(TF_INT32, &sy, &vals[1], &st), "alloc", &st);
    memcpy(vals[0]->data, (float *)x->data + b * 784, (size_t)(k * 784) * sizeof(float));
    memcpy(vals[1]->data, (int32_t *)y->data + b, (size_t)k * sizeof(int32_t));
    check(tf_session_run(s, NULL, feeds, vals, n_feeds, &fetch, &out, 1, NULL, 0, NULL, &st),
          "evaluation", &st);
    correct += llround(tf_tensor_get_f64(out, 0) * (double)k);
    tf_tensor_unref(out);
    tf_tensor_unref(vals[0]);
    tf_tensor_unref(vals[1]);
  }
  tf_tensor_unref(off);
  tf_tensor_unref(x);
  tf_tensor_unref(y);
  (void)o;
  return (double)correct / (double)n;
}

int main(int argc, char **argv) {
  options o = parse(argc, argv);
  char *files[2] = {data_file(&o, "train-images-idx3-ubyte.gz"),
                    data_file(&o, "train-labels-idx1-ubyte.gz")};
  if (access(files[0], R_OK) != 0) {
    fprintf(stderr, "fashion_mnist: cannot read %s (install dataset-fashion-mnist, "
                    "or pass --data DIR)\n", files[0]);
    return 1;
  }
  model m = {0};
  build(&m, &o, files);
  printf("model %s, batch %d, %d epochs, Adam lr %g\n", o.model, o.batch, o.epochs, o.lr);
  tf_layers_print_params(m.layers, stdout);
  tf_status st;
  tf_session_options so = {.inter_op_threads = o.threads};
  tf_session *s = tf_session_new(m.g, &so, &st);
  if (s == NULL) die("session", &st);
  train(&m, &o, s);
  double acc = evaluate(&m, s, &o);
  tf_input_pipeline_free(m.input);
  tf_session_free(s);
  tf_optimizer_free(m.opt);
  tf_layers_free(m.layers);
  tf_graph_free(m.g);
  free(files[0]);
  free(files[1]);
  printf("test_accuracy: %.4f\n", acc);
  return 0;
}
