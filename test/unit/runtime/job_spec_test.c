/* job_spec_test.c: the job spec reader: every file in conf/jobs/ parses
 * (so the examples never rot) and the sync example field by field; the
 * defaults of a minimal spec; every key set at once; one case per error
 * class (bad YAML, wrong types, unknown keys, ranges, caps, missing keys,
 * checks across sections), each with its exact file:line:column, key path
 * and expectation; the per-worker file shards and seeds. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/runtime/job_spec.h"
#include "test/unit/testutil.h"

static tf_job_spec *parse_ok(const char *text) {
  tf_status st;
  tf_status_init(&st);
  tf_job_spec *s = NULL;
  tf_code c = tf_job_spec_parse(text, strlen(text), "x.yaml", &s, &st);
  ck_assert_msg(c == TF_OK, "parse failed: %s\n%s", st.msg, text);
  ck_assert(s != NULL);
  return s;
}

/* Parsing text fails with INVALID_ARGUMENT and exactly message want. */
static void parse_err(const char *text, const char *want) {
  tf_status st;
  tf_status_init(&st);
  tf_job_spec *s = (tf_job_spec *)1;
  tf_code c = tf_job_spec_parse(text, strlen(text), "x.yaml", &s, &st);
  ck_assert_msg(c == TF_INVALID_ARGUMENT, "expected an error for:\n%s\ngot "
                "code %d", text, c);
  ck_assert(s == NULL);
  ck_assert_msg(strcmp(st.msg, want) == 0, "for:\n%s\nwant: %s\ngot:  %s",
                text, want, st.msg);
}

/* The lines every spec below starts from: model, input, optimizer. */
#define HEAD                                                                   \
  "name: t\n"                                                                  \
  "model:\n"                                                                   \
  "  input: {shape: [4]}\n"                                                    \
  "  layers:\n"                                                                \
  "    - {type: dense, units: 3}\n"                                            \
  "  loss: sparse_softmax_cross_entropy\n"                                     \
  "input:\n"                                                                   \
  "  format: idx\n"                                                            \
  "  train: {images: a, labels: b}\n"                                          \
  "optimizer: {name: sgd, learning_rate: 0.1}\n"
#define TRAIN "train: {steps: 10}\n"

START_TEST(test_every_example_parses) {
  DIR *d = opendir("conf/jobs");
  ck_assert_msg(d != NULL, "conf/jobs is missing");
  int n = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    size_t len = strlen(e->d_name);
    if (len < 5 || strcmp(e->d_name + len - 5, ".yaml") != 0) {
      continue;
    }
    char path[512];
    snprintf(path, sizeof path, "conf/jobs/%s", e->d_name);
    tf_status st;
    tf_job_spec *s = NULL;
    ck_assert_msg(tf_job_spec_load(path, &s, &st) == TF_OK, "%s", st.msg);
    ck_assert_str_eq(s->path, path);
    /* The name is the file's name without .yaml. */
    ck_assert_msg(strncmp(s->name, e->d_name, len - 5) == 0 &&
                      s->name[len - 5] == '\0',
                  "%s: name '%s'", path, s->name);
    tf_job_spec_free(s);
    n++;
  }
  closedir(d);
  ck_assert_int_ge(n, 3);
}
END_TEST

static void check_layer(const tf_job_layer *L, tf_job_layer_kind kind,
                        const char *name, int64_t units, tf_activation act) {
  ck_assert_int_eq(L->kind, kind);
  ck_assert_str_eq(L->name, name);
  ck_assert_int_eq(L->units, units);
  ck_assert_int_eq(L->activation, act);
  ck_assert(L->use_bias);
  ck_assert_int_eq(L->kernel_init.kind, TF_INIT_GLOROT_UNIFORM);
  ck_assert_int_eq(L->bias_init.kind, TF_INIT_ZEROS);
  ck_assert_int_eq(L->out_rank, 1);
  ck_assert_int_eq(L->out_dims[0], units);
}

START_TEST(test_sync_example) {
  tf_status st;
  tf_job_spec *s = NULL;
  ck_assert_msg(tf_job_spec_load("conf/jobs/fmnist-mlp-sync.yaml", &s, &st) ==
                    TF_OK, "%s", st.msg);
  ck_assert_str_eq(s->name, "fmnist-mlp-sync");
  ck_assert(s->has_model);
  ck_assert_int_eq(s->model.input.dtype, TF_FLOAT32);
  ck_assert_int_eq(s->model.input.rank, 1);
  ck_assert_int_eq(s->model.input.dims[0], 784);
  ck_assert_int_eq(s->model.n_layers, 3);
  check_layer(&s->model.layers[0], TF_JOB_LAYER_DENSE, "dense", 256,
              TF_ACT_RELU);
  check_layer(&s->model.layers[1], TF_JOB_LAYER_DENSE, "dense_1", 128,
              TF_ACT_RELU);
  check_layer(&s->model.layers[2], TF_JOB_LAYER_DENSE, "dense_2", 10,
              TF_ACT_NONE);
  ck_assert_int_eq(s->model.loss, TF_JOB_LOSS_SPARSE_SOFTMAX_CE);
  ck_assert_int_eq(s->model.n_metrics, 1);
  ck_assert_int_eq(s->model.metrics[0], TF_JOB_METRIC_ACCURACY);
  ck_assert_int_eq(s->model.seed, 1);
  ck_assert_int_eq(s->model.num_classes, 10);
  const tf_job_input *in = &s->input;
  ck_assert(in->present);
  ck_assert_int_eq(in->format, TF_RECORD_IDX);
  ck_assert_int_eq(in->compression, TF_COMPRESSION_AUTO);
  ck_assert_int_eq(in->train_images.n, 1);
  ck_assert_str_eq(in->train_images.paths[0], "/usr/share/datasets/"
                   "fashion-mnist/train-images-idx3-ubyte.gz");
  ck_assert_str_eq(in->test_labels.paths[0], "/usr/share/datasets/"
                   "fashion-mnist/t10k-labels-idx1-ubyte.gz");
  ck_assert_int_eq(in->image_dtype, TF_UINT8);
  ck_assert_int_eq(in->label_dtype, TF_UINT8);
  ck_assert_double_eq(in->scale, 0.00392156862745098);
  ck_assert_int_eq(in->batch_size, 100);
  ck_assert(in->shuffle);
  ck_assert_int_eq(in->seed, 1);
  ck_assert_int_eq(in->shard, TF_JOB_SHARD_SHUFFLE);
  ck_assert_int_eq(s->optimizer.kind, TF_OPT_ADAM);
  ck_assert_double_eq(s->optimizer.options.learning_rate, 0.001);
  ck_assert_double_eq(s->optimizer.options.epsilon, 1e-7);
  ck_assert_double_eq(s->optimizer.options.beta1, 0.9);
  ck_assert_int_eq(s->optimizer.schedule.kind, TF_JOB_SCHEDULE_EXPONENTIAL);
  ck_assert_double_eq(s->optimizer.schedule.decay_steps, 1500);
  ck_assert_double_eq(s->optimizer.schedule.decay_rate, 0.5);
  ck_assert(!s->optimizer.schedule.staircase);
  ck_assert_int_eq(s->replication.mode, TF_JOB_MODE_SYNC);
  ck_assert_int_eq(s->replication.workers, 2);
  ck_assert_int_eq(s->replication.backup_workers, 0);
  ck_assert_int_eq(s->epochs, 8);
  ck_assert_int_eq(s->steps, 0);
  ck_assert_int_eq(s->log_every_steps, 100);
  ck_assert(s->eval);
  ck_assert_int_eq(s->eval_every_steps, 1000);
  ck_assert(s->eval_at_end);
  ck_assert_int_eq(s->eval_batch_size, 100);
  ck_assert(s->checkpoint);
  ck_assert_str_eq(s->checkpoint_dir, "run/local/checkpoints/fmnist-mlp-sync");
  ck_assert_int_eq(s->checkpoint_every_steps, 1000);
  ck_assert_int_eq(s->checkpoint_every_seconds, 0);
  ck_assert_int_eq(s->checkpoint_keep, 3);
  tf_job_spec_free(s);
  s = NULL;
  ck_assert(tf_job_spec_load("conf/jobs/fmnist-mlp-backup.yaml", &s, &st) ==
            TF_OK);
  ck_assert_int_eq(s->replication.workers, 3);
  ck_assert_int_eq(s->replication.backup_workers, 1);
  tf_job_spec_free(s);
  ck_assert(tf_job_spec_load("conf/jobs/fmnist-mlp-async.yaml", &s, &st) ==
            TF_OK);
  ck_assert_int_eq(s->replication.mode, TF_JOB_MODE_ASYNC);
  tf_job_spec_free(s);
  ck_assert_msg(tf_job_spec_load("conf/jobs/fmnist-lstm.yaml", &s, &st) == TF_OK, "%s",
                st.msg);
  ck_assert_int_eq(s->model.layers[0].kind, TF_JOB_LAYER_LSTM);
  ck_assert_int_eq(s->model.layers[0].units, 128);
  ck_assert_int_eq(s->model.input.rank, 2);
  tf_job_spec_free(s);
}
END_TEST

START_TEST(test_defaults) {
  tf_job_spec *s = parse_ok(HEAD TRAIN);
  ck_assert_str_eq(s->path, "x.yaml");
  ck_assert_int_eq(s->model.input.dtype, TF_FLOAT32);
  ck_assert_int_eq(s->model.n_metrics, 0);
  ck_assert_int_eq(s->model.seed, 0);
  ck_assert_int_eq(s->model.num_classes, 3);
  ck_assert_int_eq(s->input.test_images.n, 0);
  ck_assert_int_eq(s->input.batch_size, 32);
  ck_assert(s->input.shuffle);
  ck_assert(s->input.little_endian);
  ck_assert_double_eq(s->input.scale, 1.0);
  ck_assert_int_eq(s->input.seed, 0);
  ck_assert_int_eq(s->input.read_threads, 1);
  ck_assert_int_eq(s->input.shard, TF_JOB_SHARD_FILES); /* 1 file, 1 worker */
  ck_assert_int_eq(s->optimizer.kind, TF_OPT_GRADIENT_DESCENT);
  ck_assert_double_eq(s->optimizer.clip_norm, 0);
  ck_assert_int_eq(s->replication.mode, TF_JOB_MODE_SYNC);
  ck_assert_int_eq(s->replication.workers, 1);
  ck_assert_int_eq(s->replication.placement, TF_JOB_PLACE_ROUND_ROBIN);
  ck_assert_int_eq(s->replication.ps_tasks, 0);
  ck_assert_int_eq(s->steps, 10);
  ck_assert_int_eq(s->log_every_steps, 100);
  ck_assert(!s->eval);
  ck_assert(!s->checkpoint);
  ck_assert(s->checkpoint_dir == NULL);
  ck_assert_int_eq(s->recovery_max_attempts, 10);
  ck_assert_int_eq(s->recovery_wait_seconds, 300);
  ck_assert_uint_eq(strlen(s->hash), 8);
  ck_assert_uint_eq(s->text_len, strlen(s->text));
  tf_job_spec_free(s);
  tf_job_spec_free(NULL);
}
END_TEST

START_TEST(test_every_key) {
  const char *text =
      "name: all.keys_1\n"
      "model:\n"
      "  input: {shape: [12, 12, 2], dtype: float64}\n"
      "  layers:\n"
      "    - {type: conv2d, name: c1, filters: 4, kernel_size: [3, 2],\n"
      "       strides: 1, padding: same, activation: tanh, use_bias: false,\n"
      "       kernel_initializer: {type: truncated_normal, mean: 0.5,\n"
      "                            stddev: 0.25, seed: 7}}\n"
      "    - {type: max_pool, pool_size: 2}\n"
      "    - {type: avg_pool, pool_size: [3, 2], strides: [1, 2],\n"
      "       padding: valid}\n"
      "    - {type: activation, activation: sigmoid}\n"
      "    - {type: flatten}\n"
      "    - {type: dropout, rate: 0.25, seed: 3}\n"
      "    - {type: dense, units: 5, activation: linear,\n"
      "       kernel_initializer: he_normal,\n"
      "       bias_initializer: {type: constant, value: 0.5}}\n"
      "  loss: softmax_cross_entropy\n"
      "  metrics: accuracy\n"
      "  seed: 42\n"
      "input:\n"
      "  format: tfrecord\n"
      "  compression: gzip\n"
      "  train: {images: [i0, i1, i2], labels: [l0, l1, l2]}\n"
      "  test: {images: [t0], labels: [u0]}\n"
      "  image_dtype: int64\n"
      "  label_dtype: uint16\n"
      "  little_endian: false\n"
      "  scale: 2.5\n"
      "  batch_size: 7\n"
      "  shuffle: false\n"
      "  seed: 9\n"
      "  shard: files\n"
      "  read_threads: 4\n"
      "optimizer:\n"
      "  name: rmsprop\n"
      "  learning_rate: 0.5\n"
      "  rho: 0.8\n"
      "  momentum: 0.25\n"
      "  epsilon: 0.001\n"
      "  clip_norm: 5\n"
      "  schedule: {type: piecewise_constant, boundaries: [10, 20],\n"
      "             values: [0.1, 0.01, 0.001]}\n"
      "replication: {mode: sync, workers: 3, backup_workers: 2,\n"
      "              placement: balanced, ps_tasks: 2}\n"
      "train: {epochs: 2, log_every_steps: 5}\n"
      "eval: {every_steps: 0, at_end: true, batch_size: 11}\n"
      "checkpoint: {dir: ck, every_steps: 4, every_seconds: 30, keep: 1}\n"
      "recovery: {max_attempts: 0, wait_seconds: 7}\n";
  /* learning_rate with piecewise is an error: take it out. */
  char *t = strdup(text);
  char *lr = strstr(t, "  learning_rate: 0.5\n");
  memmove(lr, lr + 20, strlen(lr + 20) + 1);
  tf_job_spec *s = parse_ok(t);
  free(t);
  const tf_job_model_spec *m = &s->model;
  ck_assert_str_eq(s->name, "all.keys_1");
  ck_assert_int_eq(m->input.dtype, TF_FLOAT64);
  ck_assert_int_eq(m->n_layers, 7);
  const tf_job_layer *L = &m->layers[0];
  ck_assert_str_eq(L->name, "c1");
  ck_assert_int_eq(L->units, 4);
  ck_assert_int_eq(L->window[0], 3);
  ck_assert_int_eq(L->window[1], 2);
  ck_assert_int_eq(L->strides[0], 1);
  ck_assert_int_eq(L->strides[1], 1);
  ck_assert(L->same_padding && !L->use_bias);
  ck_assert_int_eq(L->activation, TF_ACT_TANH);
  ck_assert_int_eq(L->kernel_init.kind, TF_INIT_TRUNCATED_NORMAL);
  ck_assert_double_eq(L->kernel_init.mean, 0.5);
  ck_assert_double_eq(L->kernel_init.stddev, 0.25);
  ck_assert_int_eq(L->kernel_init.seed, 7);
  ck_assert_int_eq(L->out_rank, 3);
  ck_assert_int_eq(L->out_dims[0], 12);
  ck_assert_int_eq(L->out_dims[1], 12);
  ck_assert_int_eq(L->out_dims[2], 4);
  L = &m->layers[1]; /* 2x2, stride 2 (the pool size), valid */
  ck_assert_str_eq(L->name, "max_pool");
  ck_assert_int_eq(L->strides[0], 2);
  ck_assert_int_eq(L->out_dims[0], 6);
  ck_assert_int_eq(L->out_dims[1], 6);
  L = &m->layers[2]; /* [6, 6, 4] -> 3x2 window, strides (1, 2) */
  ck_assert_int_eq(L->window[0], 3);
  ck_assert_int_eq(L->strides[1], 2);
  ck_assert(!L->same_padding);
  ck_assert_int_eq(L->out_dims[0], 4);
  ck_assert_int_eq(L->out_dims[1], 3);
  ck_assert_int_eq(L->out_dims[2], 4);
  ck_assert_int_eq(m->layers[3].activation, TF_ACT_SIGMOID);
  ck_assert_int_eq(m->layers[4].out_rank, 1);
  ck_assert_int_eq(m->layers[4].out_dims[0], 48);
  ck_assert_double_eq(m->layers[5].rate, 0.25);
  ck_assert_int_eq(m->layers[5].seed, 3);
  L = &m->layers[6];
  ck_assert_int_eq(L->kernel_init.kind, TF_INIT_HE_NORMAL);
  ck_assert_int_eq(L->bias_init.kind, TF_INIT_CONSTANT);
  ck_assert_double_eq(L->bias_init.value, 0.5);
  ck_assert_int_eq(m->loss, TF_JOB_LOSS_SOFTMAX_CE);
  ck_assert_int_eq(m->n_metrics, 1);
  ck_assert_int_eq(m->seed, 42);
  ck_assert_int_eq(m->num_classes, 5);
  const tf_job_input *in = &s->input;
  ck_assert_int_eq(in->format, TF_RECORD_TFRECORD);
  ck_assert_int_eq(in->compression, TF_COMPRESSION_GZIP);
  ck_assert_int_eq(in->train_labels.n, 3);
  ck_assert_str_eq(in->train_labels.paths[2], "l2");
  ck_assert_str_eq(in->test_images.paths[0], "t0");
  ck_assert_int_eq(in->image_dtype, TF_INT64);
  ck_assert_int_eq(in->label_dtype, TF_UINT16);
  ck_assert(!in->little_endian && !in->shuffle);
  ck_assert_double_eq(in->scale, 2.5);
  ck_assert_int_eq(in->batch_size, 7);
  ck_assert_int_eq(in->seed, 9);
  ck_assert_int_eq(in->shard, TF_JOB_SHARD_FILES);
  ck_assert_int_eq(in->read_threads, 4);
  const tf_job_optimizer *o = &s->optimizer;
  ck_assert_int_eq(o->kind, TF_OPT_RMSPROP);
  ck_assert_double_eq(o->options.rho, 0.8);
  ck_assert_double_eq(o->options.momentum, 0.25);
  ck_assert_double_eq(o->options.epsilon, 0.001);
  ck_assert_double_eq(o->clip_norm, 5);
  ck_assert_int_eq(o->schedule.kind, TF_JOB_SCHEDULE_PIECEWISE);
  ck_assert_int_eq(o->schedule.n_boundaries, 2);
  ck_assert_double_eq(o->schedule.boundaries[1], 20);
  ck_assert_double_eq(o->schedule.values[2], 0.001);
  ck_assert_int_eq(s->replication.workers, 3);
  ck_assert_int_eq(s->replication.backup_workers, 2);
  ck_assert_int_eq(s->replication.placement, TF_JOB_PLACE_BALANCED);
  ck_assert_int_eq(s->replication.ps_tasks, 2);
  ck_assert_int_eq(s->epochs, 2);
  ck_assert_int_eq(s->log_every_steps, 5);
  ck_assert_int_eq(s->eval_every_steps, 0);
  ck_assert_int_eq(s->eval_batch_size, 11);
  ck_assert_str_eq(s->checkpoint_dir, "ck");
  ck_assert_int_eq(s->checkpoint_every_seconds, 30);
  ck_assert_int_eq(s->checkpoint_every_steps, 4);
  ck_assert_int_eq(s->checkpoint_keep, 1);
  ck_assert_int_eq(s->recovery_max_attempts, 0);
  ck_assert_int_eq(s->recovery_wait_seconds, 7);
  /* Worker 1 of 3 reads the files 1 (of 3), seed stays per spec. */
  const char **files;
  int n;
  tf_job_spec_worker_files(s, &in->train_images, 1, &files, &n);
  ck_assert_int_eq(n, 1);
  ck_assert_str_eq(files[0], "i1");
  free(files);
  ck_assert_int_eq(tf_job_spec_worker_seed(s, 2), 11);
  tf_job_spec_free(s);
}
END_TEST

START_TEST(test_schedules_and_optimizers) {
  tf_job_spec *s = parse_ok(
      "name: t\nmodel: {input: {shape: [2]}, layers: [{type: dense, units: "
      "2}], loss: sparse_softmax_cross_entropy}\n"
      "input: {format: idx, train: {images: a, labels: b}}\n"
      "optimizer: {name: momentum, learning_rate: 0.5, momentum: 0.5, "
      "use_nesterov: true, schedule: {type: exponential_decay, decay_steps: "
      "100, decay_rate: 0.5, staircase: true}}\n" TRAIN);
  ck_assert_int_eq(s->optimizer.kind, TF_OPT_MOMENTUM);
  ck_assert(s->optimizer.options.use_nesterov);
  ck_assert_int_eq(s->optimizer.schedule.kind, TF_JOB_SCHEDULE_EXPONENTIAL);
  ck_assert_double_eq(s->optimizer.schedule.decay_steps, 100);
  ck_assert(s->optimizer.schedule.staircase);
  tf_job_spec_free(s);
  s = parse_ok(HEAD TRAIN);
  tf_job_spec_free(s);
  static const char *const opts[] = {
      "{name: adagrad, learning_rate: 1, initial_accumulator_value: 0.5}",
      "{name: adadelta, learning_rate: 1, rho: 0.5, epsilon: 1e-6}",
      "{name: adam, learning_rate: 1, beta1: 0.5, beta2: 0.75}",
      "{name: gradient_descent, learning_rate: 1, schedule: {type: "
      "polynomial_decay, decay_steps: 10, end_learning_rate: 0, power: 2, "
      "cycle: true}}",
      "{name: sgd, learning_rate: 1, schedule: {type: inverse_time_decay, "
      "decay_steps: 10, decay_rate: 2}}"};
  static const tf_optimizer_kind kinds[] = {TF_OPT_ADAGRAD, TF_OPT_ADADELTA,
                                            TF_OPT_ADAM,
                                            TF_OPT_GRADIENT_DESCENT,
                                            TF_OPT_GRADIENT_DESCENT};
  for (int i = 0; i < 5; i++) {
    char text[1024];
    snprintf(text, sizeof text, "name: t\nmodel: {input: {shape: [2]}, "
             "layers: [{type: dense, units: 2}], loss: "
             "sparse_softmax_cross_entropy}\ninput: {format: idx, train: "
             "{images: a, labels: b}}\noptimizer: %s\n" TRAIN, opts[i]);
    s = parse_ok(text);
    ck_assert_int_eq(s->optimizer.kind, kinds[i]);
    if (i == 3) {
      ck_assert_int_eq(s->optimizer.schedule.kind, TF_JOB_SCHEDULE_POLYNOMIAL);
      ck_assert_double_eq(s->optimizer.schedule.power, 2);
      ck_assert_double_eq(s->optimizer.schedule.end_learning_rate, 0);
      ck_assert(s->optimizer.schedule.cycle);
    }
    tf_job_spec_free(s);
  }
}
END_TEST

START_TEST(test_graph_and_embedding) {
  tf_job_spec *s = parse_ok(
      "name: g\ngraph:\n  file: m.tfg\n  train: train\n  loss: loss:0\n"
      "  metrics: [acc, 'acc2:1']\n  init: init\n  images: x\n  labels: y\n"
      "  input: {shape: [3, 4], dtype: int32}\n"
      "input: {format: idx, train: {images: a, labels: b}}\n"
      "train: {epochs: 1}\n");
  ck_assert(!s->has_model);
  ck_assert_str_eq(s->graph.file, "m.tfg");
  ck_assert_str_eq(s->graph.loss, "loss:0");
  ck_assert_int_eq(s->graph.n_metrics, 2);
  ck_assert_str_eq(s->graph.metrics[1], "acc2:1");
  ck_assert_str_eq(s->graph.images, "x");
  ck_assert(s->graph.has_input);
  ck_assert_int_eq(s->graph.input.dtype, TF_INT32);
  ck_assert_int_eq(s->graph.input.dims[1], 4);
  tf_job_spec_free(s);
  s = parse_ok("name: g\ngraph: {file: m.yaml, train: t, loss: l}\n" TRAIN);
  ck_assert(s->graph.init == NULL && s->graph.images == NULL);
  ck_assert(!s->input.present);
  tf_job_spec_free(s);
  s = parse_ok(
      "name: e\nmodel:\n  input: {shape: [5], dtype: int64}\n  layers:\n"
      "    - {type: embedding, input_dim: 100, output_dim: 8,\n"
      "       embeddings_initializer: zeros}\n"
      "    - {type: flatten}\n    - {type: dense, units: 2}\n"
      "  loss: sparse_softmax_cross_entropy\n"
      "input: {format: idx, train: {images: a, labels: b}}\n"
      "optimizer: {name: sgd, learning_rate: 1}\n" TRAIN);
  ck_assert_int_eq(s->model.layers[0].input_dim, 100);
  ck_assert_int_eq(s->model.layers[0].kernel_init.kind, TF_INIT_ZEROS);
  ck_assert_int_eq(s->model.layers[0].out_rank, 2);
  ck_assert_int_eq(s->model.layers[1].out_dims[0], 40);
  tf_job_spec_free(s);
  s = parse_ok(
      "name: r\nmodel:\n  input: {shape: [28, 28]}\n  layers:\n"
      "    - {type: lstm, units: 16}\n    - {type: dense, units: 10}\n"
      "  loss: sparse_softmax_cross_entropy\n"
      "input: {format: idx, train: {images: a, labels: b}}\n"
      "optimizer: {name: sgd, learning_rate: 1}\n" TRAIN);
  ck_assert_int_eq(s->model.layers[0].kind, TF_JOB_LAYER_LSTM);
  ck_assert_str_eq(s->model.layers[0].name, "lstm");
  ck_assert_int_eq(s->model.layers[0].out_rank, 1);
  ck_assert_int_eq(s->model.layers[0].out_dims[0], 16);
  tf_job_spec_free(s);
}
END_TEST

START_TEST(test_yaml_errors) {
  parse_err("name: [a\n", "x.yaml:2:1: YAML syntax error: did not find "
            "expected ',' or ']' (while parsing a flow sequence)");
  parse_err("name: a\n---\nname: b\n", "x.yaml:2:1: a second YAML document "
            "(expected one)");
  parse_err("", "x.yaml:1:1: no YAML document (expected a job spec mapping)");
  parse_err("- a\n", "x.yaml:1:1: expected a job spec (a mapping with name, "
            "model, ...), got a sequence");
  parse_err("name: a\nname: b\n", "x.yaml:2:1: key 'name' appears twice in "
            "the top level");
  parse_err("nam: a\n", "x.yaml:1:1: unknown key 'nam' in the top level "
            "(expected name, model, graph, input, optimizer, replication, "
            "train, eval, checkpoint, recovery)");
  parse_err("? [a]\n: b\n", "x.yaml:1:3: expected a key name, got a sequence");
  char *big = malloc(TF_JOB_SPEC_BYTES_MAX + 2);
  memset(big, '#', TF_JOB_SPEC_BYTES_MAX + 1);
  big[TF_JOB_SPEC_BYTES_MAX + 1] = '\0';
  parse_err(big, "x.yaml: 1048577 bytes, more than the 1048576 a spec may "
            "have");
  free(big);
}
END_TEST

START_TEST(test_section_errors) {
  parse_err(HEAD, "x.yaml:1:1: a job spec needs 'train'");
  parse_err("train: {steps: 1}\n", "x.yaml:1:1: a job spec needs 'name'");
  parse_err("name: t\n" TRAIN, "x.yaml:1:1: give either 'model' (a layer "
            "list) or 'graph' (a graph file)");
  parse_err(HEAD "graph: {file: f, train: t, loss: l}\n" TRAIN,
            "x.yaml:11:8: give either 'model' (a layer list) or 'graph' (a "
            "graph file), not both");
  parse_err("name: t\nmodel: {input: {shape: [2]}, layers: [{type: dense, "
            "units: 2}], loss: sparse_softmax_cross_entropy}\n" TRAIN,
            "x.yaml:1:1: a job with a model section needs 'input'");
  parse_err("name: t\ngraph: {file: f, train: t, loss: l}\noptimizer: {name: "
            "sgd}\n" TRAIN, "x.yaml:3:12: optimizer: a graph job's train "
            "target holds its optimizer already (the section applies to a "
            "model section only)");
  parse_err("name: t\ngraph: {file: f, train: t, loss: l}\ninput: {format: "
            "idx, train: {images: a, labels: b}}\n" TRAIN, "x.yaml:3:8: "
            "input: the graph section names no 'images' and 'labels' nodes "
            "to feed the batches to");
  parse_err("name: t\ngraph: {file: f, train: t, loss: l, images: x}\n" TRAIN,
            "x.yaml:2:8: graph: 'images', 'labels' and 'input' go together "
            "(the nodes fed with each batch and the examples' shape), or "
            "none of them");
  parse_err("name: t\ngraph: {file: f, train: t}\n" TRAIN,
            "x.yaml:2:8: graph: needs 'loss'");
  parse_err("name: t\ngraph: {file: f, train: 'a b', loss: l}\n" TRAIN,
            "x.yaml:2:25: graph.train: node name 'a b' may hold only "
            "[A-Za-z0-9_.-/] and ':' before an output index");
  parse_err("name: t\ngraph: {file: f, train: t, loss: l}\ntrain: {epochs: "
            "1}\n", "x.yaml:3:8: train.epochs: epochs count passes over "
            "input.train, and there is no input section (give steps)");
  parse_err(HEAD "train: {steps: 1, epochs: 1}\n", "x.yaml:11:27: train: "
            "give either 'steps' or 'epochs', not both");
  parse_err(HEAD "train: {}\n", "x.yaml:11:8: train: give either 'steps' or "
            "'epochs'");
  parse_err(HEAD "train: {steps: 0}\n", "x.yaml:11:16: train.steps: "
            "expected an integer in 1..9007199254740992, got '0'");
  parse_err(HEAD TRAIN "eval: {every_steps: 5}\n", "x.yaml:12:7: eval: "
            "evaluation needs a test set (input.test: {images, labels})");
  parse_err(HEAD TRAIN "eval: {every_steps: 0, at_end: false}\n",
            "x.yaml:12:32: eval.at_end: with every_steps 0 and at_end false "
            "the job never evaluates (leave the eval section out instead)");
  parse_err(HEAD TRAIN "checkpoint: {keep: 2}\n", "x.yaml:12:13: checkpoint: "
            "needs 'dir' (where checkpoints are written)");
  parse_err(HEAD TRAIN "checkpoint: {dir: d, every_steps: 1, every_seconds: "
            "0}\n", "x.yaml:12:53: checkpoint.every_seconds: expected an integer "
            "in 1..2147483648, got '0'");
  parse_err(HEAD TRAIN "checkpoint: {dir: d, keep: 1001}\n", "x.yaml:12:28: "
            "checkpoint.keep: expected an integer in 1..1000, got '1001'");
  parse_err(HEAD TRAIN "checkpoint: {dir: ''}\n", "x.yaml:12:19: "
            "checkpoint.dir: expected a directory of 1..4095 bytes, got 0 "
            "bytes");
  parse_err(HEAD TRAIN "recovery: {max_attempts: 1001}\n", "x.yaml:12:26: "
            "recovery.max_attempts: expected an integer in 0..1000, got '1001'");
  parse_err(HEAD TRAIN "recovery: {wait_seconds: 0}\n", "x.yaml:12:26: "
            "recovery.wait_seconds: expected an integer in 1..86400, got '0'");
  parse_err(HEAD TRAIN "recovery: {tries: 3}\n", "x.yaml:12:12: recovery: "
            "unknown key 'tries' in 'recovery' (expected max_attempts, wait_seconds)");
}
END_TEST

START_TEST(test_replication_errors) {
  parse_err(HEAD TRAIN "replication: {mode: lockstep}\n", "x.yaml:12:21: "
            "replication.mode: expected sync or async, got 'lockstep'");
  parse_err(HEAD TRAIN "replication: {workers: 0}\n", "x.yaml:12:24: "
            "replication.workers: expected an integer in 1..1024, got '0'");
  parse_err(HEAD TRAIN "replication: {workers: 2, backup_workers: 2}\n",
            "x.yaml:12:43: replication.backup_workers: expected an integer "
            "in 0..1 (fewer than the workers, each step aggregates workers - "
            "backup_workers gradients), got '2'");
  parse_err(HEAD TRAIN "replication: {mode: async, workers: 2, "
            "backup_workers: 1}\n", "x.yaml:12:56: replication."
            "backup_workers: backup workers need mode: sync (an async job "
            "waits for no one)");
  parse_err(HEAD TRAIN "replication: {placement: random}\n", "x.yaml:12:26: "
            "replication.placement: expected round_robin or balanced, got "
            "'random'");
  parse_err(HEAD TRAIN "replication: {ps_tasks: -1}\n", "x.yaml:12:25: "
            "replication.ps_tasks: expected an integer in 0..1024 (0: every "
            "ps task of the cluster), got '-1'");
  parse_err(HEAD TRAIN "replication: [sync]\n", "x.yaml:12:14: replication: "
            "expected a mapping, got a sequence");
}
END_TEST

START_TEST(test_shard) {
  tf_job_spec *s = parse_ok(HEAD TRAIN "replication: {workers: 2}\n");
  ck_assert_int_eq(s->input.shard, TF_JOB_SHARD_SHUFFLE);
  const char **files;
  int n;
  tf_job_spec_worker_files(s, &s->input.train_images, 1, &files, &n);
  ck_assert_int_eq(n, 1);
  ck_assert_str_eq(files[0], "a");
  free(files);
  ck_assert_int_eq(tf_job_spec_worker_seed(s, 1), 0); /* unseeded stays */
  tf_job_spec_free(s);
  const char *two =
      "name: t\nmodel: {input: {shape: [2]}, layers: [{type: dense, units: "
      "2}], loss: sparse_softmax_cross_entropy}\n"
      "input: {format: idx, train: {images: [a, b], labels: [c, d]}, %s}\n"
      "optimizer: {name: sgd, learning_rate: 1}\n" TRAIN
      "replication: {workers: %d}\n";
  char text[1024];
  snprintf(text, sizeof text, two, "seed: 5", 2);
  s = parse_ok(text);
  ck_assert_int_eq(s->input.shard, TF_JOB_SHARD_FILES);
  tf_job_spec_worker_files(s, &s->input.train_labels, 1, &files, &n);
  ck_assert_int_eq(n, 1);
  ck_assert_str_eq(files[0], "d");
  free(files);
  ck_assert_int_eq(tf_job_spec_worker_seed(s, 1), 6);
  tf_job_spec_free(s);
  snprintf(text, sizeof text, two, "shard: files", 3);
  parse_err(text, "x.yaml:3:70: input.shard: 'files' gives each of the 3 "
            "workers its own files, but input.train has 2 (use shuffle: "
            "every worker reads every file in its own order)");
  snprintf(text, sizeof text, two, "shuffle: false", 3);
  parse_err(text, "x.yaml:3:8: input.shard: with 3 workers reading every "
            "file, shuffle must be on (else every worker reads the same "
            "batches)");
  snprintf(text, sizeof text, two, "shard: sideways", 1);
  parse_err(text, "x.yaml:3:70: input.shard: expected files, shuffle or "
            "auto, got 'sideways'");
}
END_TEST

/* A spec whose model section is `model` (flow or block text). */
static void model_err(const char *model, const char *want) {
  char text[4096];
  snprintf(text, sizeof text, "name: t\nmodel:\n%s"
           "input: {format: idx, train: {images: a, labels: b}}\n"
           "optimizer: {name: sgd, learning_rate: 1}\n" TRAIN, model);
  parse_err(text, want);
}

#define LOSS                                                                   \
  "  layers: [{type: dense, units: 2}]\n"                                      \
  "  loss: sparse_softmax_cross_entropy\n"
#define IN "  input: {shape: [8]}\n  loss: sparse_softmax_cross_entropy\n"
#define IN3 "  input: {shape: [8, 8, 1]}\n" \
            "  loss: sparse_softmax_cross_entropy\n"

START_TEST(test_model_errors) {
  model_err(IN "  layers: [{type: dense, units: 0}]\n", "x.yaml:5:33: "
            "model.layers[0].units: expected an integer in 1..65536, got "
            "'0'");
  model_err(IN "  layers: [{type: dense, unit: 2}]\n", "x.yaml:5:26: "
            "model.layers[0]: unknown key 'unit' in 'model.layers[0]' "
            "(expected type, name, units, activation, use_bias, "
            "kernel_initializer, bias_initializer, filters, kernel_size, "
            "strides, padding, pool_size, rate, seed, input_dim, output_dim, "
            "embeddings_initializer)");
  model_err(IN "  layers: [{type: dense, units: 2, pool_size: 2}]\n",
            "x.yaml:5:47: model.layers[0]: key 'pool_size' does not apply to "
            "a dense layer (its keys: type, name, units, activation, "
            "use_bias, kernel_initializer, bias_initializer)");
  model_err(IN "  layers: [{type: dense}]\n", "x.yaml:5:12: model.layers[0]: "
            "a dense layer needs 'units'");
  model_err(IN "  layers: [{units: 2}]\n", "x.yaml:5:12: model.layers[0]: a "
            "layer needs 'type' (dense, conv2d, max_pool, avg_pool, flatten, "
            "dropout, embedding, activation or lstm)");
  model_err(IN "  layers: [{type: gru}]\n", "x.yaml:5:19: "
            "model.layers[0].type: expected dense, conv2d, max_pool, "
            "avg_pool, flatten, dropout, embedding, activation or lstm, got "
            "'gru'");
  model_err(IN "  layers: [{type: lstm, units: 4}]\n", "x.yaml:5:12: "
            "model.layers[0]: an lstm layer needs a [batch, time, features] "
            "input, got [batch, 8]");
  model_err(IN "  layers: [{type: lstm, units: 4, activation: relu}]\n",
            "x.yaml:5:47: model.layers[0]: key 'activation' does not apply to "
            "a lstm layer (its keys: type, name, units, kernel_initializer, "
            "bias_initializer)");
  model_err(IN "  layers: [dense]\n", "x.yaml:5:12: model.layers[0]: "
            "expected a layer (a mapping with 'type'), got 'dense'");
  model_err(IN "  layers: []\n", "x.yaml:5:11: model.layers: expected "
            "1..64 items, got 0");
  model_err(IN "  layers: {type: dense}\n", "x.yaml:5:11: model.layers: "
            "expected a list, got a mapping");
  model_err(IN "  layers: [{type: dense, units: 2, activation: gelu}]\n",
            "x.yaml:5:48: model.layers[0].activation: expected none, linear, "
            "relu, tanh, sigmoid or softmax, got 'gelu'");
  model_err(IN "  layers: [{type: dense, units: 2, use_bias: 1}]\n",
            "x.yaml:5:46: model.layers[0].use_bias: expected true or false, "
            "got '1'");
  model_err(IN "  layers: [{type: dense, units: 2.5}]\n", "x.yaml:5:33: "
            "model.layers[0].units: expected an integer in 1..65536, got "
            "'2.5'");
  model_err(IN "  layers: [{type: dense, units: 2, activation: softmax}]\n",
            "x.yaml:5:12: model.layers[0]: the last layer must give logits: "
            "the loss applies softmax itself (use activation: none, and no "
            "dropout last)");
  model_err(IN "  layers: [{type: dense, units: 1}]\n", "x.yaml:5:12: "
            "model.layers[0]: the last layer must give logits [batch, "
            "classes] with at least 2 classes, got [batch, 1]");
  model_err(IN "  layers: [{type: dropout, rate: 1}, {type: dense, units: "
            "2}]\n", "x.yaml:5:34: model.layers[0].rate: expected a number "
            "in [0, 1), got '1'");
  model_err(IN "  layers: [{type: dense, units: 2, name: loss}]\n",
            "x.yaml:5:42: model.layers[0]: layer name 'loss' is reserved "
            "(images, labels_one_hot, logits, loss, accuracy, init, "
            "global_step, learning_rate)");
  model_err(IN "  layers: [{type: dense, units: 2, name: a}, {type: dense, "
            "units: 2, name: a}]\n", "x.yaml:5:76: model.layers[1]: layer "
            "name 'a' is already the name of model.layers[0]");
  model_err(IN "  layers: [{type: dense, units: 2, name: 'a/b'}]\n",
            "x.yaml:5:42: model.layers[0].name: name 'a/b' must be 1..63 "
            "characters of [A-Za-z0-9_.-], not starting with '.' or '-'");
  model_err(IN3 "  layers: [{type: dense, units: 2}]\n", "x.yaml:5:12: "
            "model.layers[0]: a dense layer needs a [batch, n] input, got "
            "[batch, 8, 8, 1] (put a flatten layer before it)");
  model_err(IN "  layers: [{type: conv2d, filters: 2, kernel_size: 3}, "
            "{type: dense, units: 2}]\n", "x.yaml:5:12: model.layers[0]: a "
            "conv2d layer needs a [batch, height, width, channels] input, got "
            "[batch, 8]");
  model_err(IN3 "  layers: [{type: max_pool, pool_size: 9}, {type: flatten},"
            " {type: dense, units: 2}]\n", "x.yaml:5:12: model.layers[0]: a "
            "9x9 window with valid padding does not fit the input [batch, 8, "
            "8, 1]");
  model_err(IN3 "  layers: [{type: max_pool, pool_size: [2, 2, 2]}]\n",
            "x.yaml:5:40: model.layers[0].pool_size: expected 1..2 items, got "
            "3");
  model_err(IN3 "  layers: [{type: conv2d, filters: 2, kernel_size: 65}]\n",
            "x.yaml:5:52: model.layers[0].kernel_size: expected an integer in "
            "1..64, got '65'");
  model_err(IN3 "  layers: [{type: conv2d, filters: 2, kernel_size: 3, "
            "padding: full}]\n", "x.yaml:5:64: model.layers[0].padding: "
            "expected valid or same, got 'full'");
  model_err(IN "  layers: [{type: embedding, input_dim: 9, output_dim: 2}]\n",
            "x.yaml:5:12: model.layers[0]: an embedding layer needs integer "
            "ids (model.input.dtype int32 or int64) and must come first");
  model_err("  input: {shape: [8], dtype: int32}\n"
            "  loss: sparse_softmax_cross_entropy\n"
            "  layers: [{type: dense, units: 2}]\n", "x.yaml:5:12: "
            "model.layers[0]: a dense layer needs float input; integer ids "
            "must go through an embedding layer first");
  model_err("  input: {shape: [8], dtype: uint8}\n" LOSS,
            "x.yaml:3:30: "
            "model.input.dtype: expected float32, float64, int32 or int64, "
            "got 'uint8'");
  model_err("  input: {shape: [1, 2, 3, 4, 5]}\n" LOSS,
            "x.yaml:3:18: "
            "model.input.shape: expected 1..4 items, got 5");
  model_err("  input: {shape: [65537]}\n" LOSS, "x.yaml:3:19: "
            "model.input.shape: expected an integer in 1..65536, got '65537'");
  model_err("  input: {shape: [65536, 65536]}\n" LOSS, "x.yaml:3:18: "
            "model.input.shape: an example of more than 2^31 elements");
  model_err("  input: {dtype: float32}\n" LOSS,
            "x.yaml:3:10: model.input: needs "
            "'shape' (one example's dims without the batch dim, e.g. [784] "
            "or [28, 28, 1])");
  model_err(IN "  layers: [{type: dense, units: 2}]\n  metrics: [accuracy, "
            "accuracy]\n", "x.yaml:6:23: model.metrics: 'accuracy' appears "
            "twice");
  model_err(IN "  layers: [{type: dense, units: 2}]\n  metrics: [auc]\n",
            "x.yaml:6:13: model.metrics: expected accuracy, got 'auc'");
  model_err("  input: {shape: [8]}\n  layers: [{type: dense, units: 2}]\n"
            "  loss: mse\n", "x.yaml:5:9: model.loss: expected "
            "sparse_softmax_cross_entropy or softmax_cross_entropy, got "
            "'mse'");
  model_err("  input: {shape: [8]}\n  layers: [{type: dense, units: 2}]\n",
            "x.yaml:3:3: model: needs 'loss'");
  model_err(IN "  layers: [{type: dense, units: 2, kernel_initializer: "
            "{type: zeros, seed: 1}}]\n", "x.yaml:5:76: model.layers[0]."
            "kernel_initializer.seed: a zeros initializer takes no 'seed'");
  model_err(IN "  layers: [{type: dense, units: 2, kernel_initializer: "
            "{type: truncated_normal, stddev: 0}}]\n", "x.yaml:5:89: "
            "model.layers[0].kernel_initializer.stddev: expected a number in "
            "(0, 1e+30], got '0'");
  model_err(IN "  layers: [{type: dense, units: 2, kernel_initializer: "
            "{seed: 1}}]\n", "x.yaml:5:56: model.layers[0].kernel_initializer:"
            " an initializer needs 'type' (zeros, ones, constant, "
            "glorot_uniform, he_normal or truncated_normal)");
  model_err(IN "  layers: [{type: dense, units: 2, kernel_initializer: "
            "orthogonal}]\n", "x.yaml:5:56: model.layers[0]."
            "kernel_initializer: expected zeros, ones, constant, "
            "glorot_uniform, he_normal or truncated_normal, got "
            "'orthogonal'");
  model_err("  input: {shape: [2], dtype: int32}\n"
            "  loss: sparse_softmax_cross_entropy\n"
            "  layers: [{type: embedding, input_dim: 2147483648, output_dim: "
            "2}, {type: flatten}, {type: dense, units: 2}]\n", "x.yaml:5:12: "
            "model.layers[0]: an embedding of [2147483648, 2] on [batch, 2] "
            "gives more than 4 dims or a table of more than 2^31 elements");
}
END_TEST

/* A spec whose input section is `input` (flow mapping body). */
static void input_err(const char *input, const char *want) {
  char text[4096];
  snprintf(text, sizeof text, "name: t\nmodel: {input: {shape: [2]}, "
           "layers: [{type: dense, units: 2}], loss: "
           "sparse_softmax_cross_entropy}\ninput: {%s}\n"
           "optimizer: {name: sgd, learning_rate: 1}\n" TRAIN, input);
  parse_err(text, want);
}

START_TEST(test_input_errors) {
  input_err("train: {images: a, labels: b}", "x.yaml:3:8: input: needs "
            "'format'");
  input_err("format: csv, train: {images: a, labels: b}", "x.yaml:3:17: "
            "input.format: expected tfrecord or idx, got 'csv'");
  input_err("format: idx, train: {images: a}", "x.yaml:3:29: input.train: "
            "needs 'labels' (a file or a list of files)");
  input_err("format: idx, train: {images: [a, b], labels: [c]}",
            "x.yaml:3:54: input.train.labels: 1 label files for 2 image files "
            "(the n-th label file holds the labels of the n-th image file)");
  input_err("format: idx, train: {images: [a, 3.5, ''], labels: c}",
            "x.yaml:3:47: input.train.images[2]: expected a file path of "
            "1..4095 bytes, got 0 bytes");
  input_err("format: idx, train: {images: a, labels: b}, batch_size: 0",
            "x.yaml:3:65: input.batch_size: expected an integer in 1..65536, "
            "got '0'");
  input_err("format: idx, train: {images: a, labels: b}, scale: 0",
            "x.yaml:3:60: input.scale: expected a number in (0, 1e+30], got "
            "'0'");
  input_err("format: idx, train: {images: a, labels: b}, scale: .nan",
            "x.yaml:3:60: input.scale: expected a number in (0, 1e+30], got "
            "'.nan'");
  input_err("format: idx, train: {images: a, labels: b}, image_dtype: int64",
            "x.yaml:3:66: input.image_dtype: expected uint8, int8, int16, "
            "int32, float32 or float64, got 'int64'");
  input_err("format: tfrecord, train: {images: a, labels: b}, label_dtype: "
            "float32", "x.yaml:3:71: input.label_dtype: expected uint8, int8, "
            "int16, int32, uint16 or int64, got 'float32'");
  input_err("format: idx, train: {images: a, labels: b}, little_endian: true",
            "x.yaml:3:68: input.little_endian: IDX files are big-endian by "
            "definition; the key applies to tfrecord only");
  input_err("format: idx, train: {images: a, labels: b}, compression: lz4",
            "x.yaml:3:66: input.compression: expected auto, none, zlib or "
            "gzip, got 'lz4'");
  input_err("format: idx, train: {images: a, labels: b}, read_threads: 17",
            "x.yaml:3:67: input.read_threads: expected an integer in 1..16, "
            "got '17'");
  input_err("format: idx, train: {images: a, labels: b}, seed: -1",
            "x.yaml:3:59: input.seed: expected an integer in "
            "0..4611686018427387903 (0: nondeterministic), got '-1'");
  input_err("format: idx, train: {images: a, labels: b}, shuffle: maybe",
            "x.yaml:3:62: input.shuffle: expected true or false, got "
            "'maybe'");
  input_err("format: idx, train: {images: a, labels: b}, test: {labels: c}",
            "x.yaml:3:59: input.test: needs 'images' (a file or a list of "
            "files)");
  input_err("format: idx, train: {images: a, labels: b}, epochs: 3",
            "x.yaml:3:53: input: unknown key 'epochs' in 'input' (expected "
            "format, compression, train, test, image_dtype, label_dtype, "
            "little_endian, scale, batch_size, shuffle, seed, shard, "
            "read_threads)");
}
END_TEST

/* A spec whose optimizer section is `opt` (flow mapping). */
static void opt_err(const char *opt, const char *want) {
  char text[4096];
  snprintf(text, sizeof text, "name: t\nmodel: {input: {shape: [2]}, "
           "layers: [{type: dense, units: 2}], loss: "
           "sparse_softmax_cross_entropy}\ninput: {format: idx, train: "
           "{images: a, labels: b}}\noptimizer: %s\n" TRAIN, opt);
  parse_err(text, want);
}

START_TEST(test_optimizer_errors) {
  opt_err("{learning_rate: 1}", "x.yaml:4:12: optimizer: needs 'name' "
          "(gradient_descent or sgd, momentum, adagrad, adadelta, rmsprop or "
          "adam)");
  opt_err("{name: lbfgs, learning_rate: 1}", "x.yaml:4:19: optimizer.name: "
          "expected gradient_descent, momentum, adagrad, adadelta, rmsprop, "
          "adam or sgd, got 'lbfgs'");
  opt_err("{name: adam}", "x.yaml:4:12: optimizer: needs 'learning_rate'");
  opt_err("{name: adam, learning_rate: 0}", "x.yaml:4:40: "
          "optimizer.learning_rate: expected a number in (0, 1e+06], got "
          "'0'");
  opt_err("{name: adam, learning_rate: 1, momentum: 0.9}", "x.yaml:4:53: "
          "optimizer: the adam optimizer takes no 'momentum' (its keys: name, "
          "learning_rate, beta1, beta2, epsilon, schedule, clip_norm)");
  opt_err("{name: momentum, learning_rate: 1, momentum: 1}", "x.yaml:4:57: "
          "optimizer.momentum: expected a number in [0, 1), got '1'");
  opt_err("{name: adam, learning_rate: 1, beta2: -0.5}", "x.yaml:4:50: "
          "optimizer.beta2: expected a number in [0, 1), got '-0.5'");
  opt_err("{name: adam, learning_rate: 1, clip_norm: 0}", "x.yaml:4:54: "
          "optimizer.clip_norm: expected a number in (0, 1e+30], got '0'");
  opt_err("{name: sgd, learning_rate: 1, schedule: {type: cosine}}",
          "x.yaml:4:59: optimizer.schedule.type: expected exponential_decay, "
          "inverse_time_decay, polynomial_decay or piecewise_constant, got "
          "'cosine'");
  opt_err("{name: sgd, learning_rate: 1, schedule: {type: exponential_decay,"
          " decay_steps: 10}}", "x.yaml:4:52: optimizer.schedule: the "
          "exponential_decay schedule needs 'decay_rate'");
  opt_err("{name: sgd, learning_rate: 1, schedule: {type: polynomial_decay, "
          "decay_steps: 10, staircase: true}}", "x.yaml:4:105: "
          "optimizer.schedule: the polynomial_decay schedule takes no "
          "'staircase' (its keys: type, decay_steps, end_learning_rate, "
          "power, cycle)");
  opt_err("{name: sgd, learning_rate: 1, schedule: {type: piecewise_constant,"
          " boundaries: [1], values: [1, 2]}}", "x.yaml:4:39: "
          "optimizer.learning_rate: a piecewise_constant schedule gives the "
          "learning rates (its values); leave learning_rate out");
  opt_err("{name: sgd, schedule: {type: piecewise_constant, boundaries: [5, "
          "5], values: [1, 2, 3]}}", "x.yaml:4:77: "
          "optimizer.schedule.boundaries: boundaries must increase: 5 after "
          "5");
  opt_err("{name: sgd, schedule: {type: piecewise_constant, boundaries: [5], "
          "values: [1, 2, 3]}}", "x.yaml:4:86: optimizer.schedule.values: "
          "expected 2 values (one more than the 1 boundaries), got 3");
  opt_err("{name: sgd, learning_rate: 1, schedule: {type: exponential_decay,"
          " decay_steps: 0, decay_rate: 1}}", "x.yaml:4:91: "
          "optimizer.schedule.decay_steps: expected a number in (0, 1e+12], "
          "got '0'");
}
END_TEST

/* Lists and strings longer than their caps. */
START_TEST(test_caps) {
  char *t = malloc(200000);
  /* 65 layers */
  int k = sprintf(t, "name: t\nmodel:\n  input: {shape: [2]}\n  loss: "
                  "sparse_softmax_cross_entropy\n  layers:\n");
  for (int i = 0; i < 65; i++) {
    k += sprintf(t + k, "    - {type: dense, units: 2}\n");
  }
  sprintf(t + k, "input: {format: idx, train: {images: a, labels: b}}\n"
          "optimizer: {name: sgd, learning_rate: 1}\n" TRAIN);
  parse_err(t, "x.yaml:6:5: model.layers: expected 1..64 items, got 65");
  /* 1025 files */
  k = sprintf(t, "name: t\nmodel: {input: {shape: [2]}, layers: [{type: "
              "dense, units: 2}], loss: sparse_softmax_cross_entropy}\n"
              "input: {format: idx, train: {labels: b, images: [");
  for (int i = 0; i < 1025; i++) {
    k += sprintf(t + k, "%sf%d", i ? ", " : "", i);
  }
  sprintf(t + k, "]}}\noptimizer: {name: sgd, learning_rate: 1}\n" TRAIN);
  parse_err(t, "x.yaml:3:49: input.train.images: expected 1..1024 items, "
            "got 1025");
  /* 9 metrics */
  parse_err("name: g\ngraph: {file: f, train: t, loss: l, metrics: [a, b, c, "
            "d, e, f, g, h, i]}\n" TRAIN, "x.yaml:2:46: graph.metrics: "
            "expected 0..8 items, got 9");
  /* a 64-character name, a 4096-byte path, a 256-byte node name */
  char name[65];
  memset(name, 'n', 64);
  name[64] = '\0';
  sprintf(t, "name: %s\ngraph: {file: f, train: t, loss: l}\n" TRAIN, name);
  parse_err(t, "x.yaml:1:7: name: expected a name of 1..63 bytes, got 64 "
            "bytes");
  k = sprintf(t, "name: g\ngraph: {file: ");
  memset(t + k, 'p', 4096);
  sprintf(t + k + 4096, ", train: t, loss: l}\n" TRAIN);
  parse_err(t, "x.yaml:2:15: graph.file: expected a graph file (.tfg or "
            ".yaml) of 1..4095 bytes, got 4096 bytes");
  k = sprintf(t, "name: g\ngraph: {file: f, train: ");
  memset(t + k, 'p', 256);
  sprintf(t + k + 256, ", loss: l}\n" TRAIN);
  parse_err(t, "x.yaml:2:25: graph.train: expected a node name of 1..255 "
            "bytes, got 256 bytes");
  /* 65 boundaries */
  k = sprintf(t, "name: t\nmodel: {input: {shape: [2]}, layers: [{type: "
              "dense, units: 2}], loss: sparse_softmax_cross_entropy}\n"
              "input: {format: idx, train: {images: a, labels: b}}\n"
              "optimizer: {name: sgd, schedule: {type: piecewise_constant, "
              "values: [1], boundaries: [");
  for (int i = 0; i < 65; i++) {
    k += sprintf(t + k, "%s%d", i ? ", " : "", i + 1);
  }
  sprintf(t + k, "]}}\n" TRAIN);
  parse_err(t, "x.yaml:4:86: optimizer.schedule.boundaries: expected 1..64 "
            "items, got 65");
  free(t);
}
END_TEST

START_TEST(test_load_missing) {
  tf_status st;
  tf_job_spec *s = (tf_job_spec *)1;
  ck_assert_int_eq(tf_job_spec_load("conf/jobs/no-such.yaml", &s, &st),
                   TF_NOT_FOUND);
  ck_assert(s == NULL);
  ck_assert_ptr_nonnull(strstr(st.msg, "conf/jobs/no-such.yaml"));
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("job_spec");
  TCase *tc = tcase_create("job_spec");
  tcase_add_test(tc, test_every_example_parses);
  tcase_add_test(tc, test_sync_example);
  tcase_add_test(tc, test_defaults);
  tcase_add_test(tc, test_every_key);
  tcase_add_test(tc, test_schedules_and_optimizers);
  tcase_add_test(tc, test_graph_and_embedding);
  tcase_add_test(tc, test_yaml_errors);
  tcase_add_test(tc, test_section_errors);
  tcase_add_test(tc, test_replication_errors);
  tcase_add_test(tc, test_shard);
  tcase_add_test(tc, test_model_errors);
  tcase_add_test(tc, test_input_errors);
  tcase_add_test(tc, test_optimizer_errors);
  tcase_add_test(tc, test_caps);
  tcase_add_test(tc, test_load_missing);
  suite_add_tcase(s, tc);
  return s;
}
