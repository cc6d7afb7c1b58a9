/* job_spec.h: the training job spec (YAML; the reference with every key,
 * default and range is docs/jobs.md, examples are in conf/jobs/):
 *
 *   name: fmnist-mlp-sync
 *   model:                          # or graph: {file, train, loss, ...}
 *     input: {shape: [784], dtype: float32}
 *     layers:
 *       - {type: dense, units: 256, activation: relu}
 *       - {type: dense, units: 10}
 *     loss: sparse_softmax_cross_entropy
 *     metrics: [accuracy]
 *     seed: 1
 *   input:
 *     format: idx
 *     train: {images: .../train-images-idx3-ubyte.gz, labels: ...}
 *     test: {images: ..., labels: ...}
 *     scale: 0.00392156862745098
 *     batch_size: 100
 *   optimizer: {name: adam, learning_rate: 0.001}
 *   replication: {mode: sync, workers: 2, backup_workers: 0}
 *   train: {steps: 3000, log_every_steps: 100}
 *   eval: {every_steps: 1000}
 *   checkpoint: {dir: run/ckpt/fmnist, every_steps: 1000, keep: 5}
 *   recovery: {max_attempts: 10, wait_seconds: 300}
 *
 * Unknown keys, wrong types, values out of range, lists or strings over
 * their caps (TF_JOB_*_MAX below) and missing required keys are
 * INVALID_ARGUMENT "FILE:LINE:COL: KEY.PATH: what was expected", e.g.
 *   "j.yaml:7:17: model.layers[1].units: expected an integer in
 *    1..65536, got '0'".
 * The layer list is checked by shape inference at parse time (a dense
 * layer on a rank-3 input, a pool larger than its input, ... are errors at
 * the layer's position), so a spec that parses builds (job_model.h). */
#ifndef TF_RUNTIME_JOB_SPEC_H
#define TF_RUNTIME_JOB_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tf/dtype.h"
#include "tf/input.h"
#include "tf/layers.h"
#include "tf/status.h"
#include "tf/train.h"

/* Caps (docs/jobs.md "Limits"). */
#define TF_JOB_SPEC_BYTES_MAX (1 << 20) /* the whole file */
#define TF_JOB_NAME_MAX 63              /* job and layer names */
#define TF_JOB_PATH_MAX 4095            /* file and directory paths */
#define TF_JOB_NODE_MAX 255             /* node and edge names */
#define TF_JOB_LAYERS_MAX 64
#define TF_JOB_METRICS_MAX 8
#define TF_JOB_FILES_MAX 1024           /* files per list */
#define TF_JOB_RANK_MAX 4               /* input shape, batch excluded */
#define TF_JOB_DIM_MAX 65536            /* an input dim; units; filters */
#define TF_JOB_WINDOW_MAX 64            /* kernel, pool and stride sizes */
#define TF_JOB_BOUNDARIES_MAX 64        /* piecewise_constant */
#define TF_JOB_WORKERS_MAX 1024
#define TF_JOB_PS_MAX 1024
#define TF_JOB_BATCH_MAX 65536
#define TF_JOB_VOCAB_MAX (1LL << 31)    /* embedding input_dim */
#define TF_JOB_ELEMENTS_MAX (1LL << 31) /* elements of one example/variable */

typedef enum tf_job_layer_kind {
  TF_JOB_LAYER_DENSE = 0,
  TF_JOB_LAYER_CONV2D,
  TF_JOB_LAYER_MAX_POOL,
  TF_JOB_LAYER_AVG_POOL,
  TF_JOB_LAYER_FLATTEN,
  TF_JOB_LAYER_DROPOUT,
  TF_JOB_LAYER_EMBEDDING,
  TF_JOB_LAYER_ACTIVATION,
  TF_JOB_LAYER_LSTM,
  TF_JOB_LAYER_KINDS
} tf_job_layer_kind;

/* The spec's word for kind ("dense", "max_pool", ...). */
const char *tf_job_layer_kind_name(tf_job_layer_kind kind);

/* One layer; which fields count depends on kind (docs/jobs.md). */
typedef struct tf_job_layer {
  tf_job_layer_kind kind;
  char *name;             /* as given, else "dense", "dense_1", ... */
  int64_t units;          /* dense and lstm units, conv2d filters,
                           * embedding output_dim */
  int64_t input_dim;      /* embedding vocabulary */
  int window[2];          /* conv2d kernel_size, pool pool_size (h, w) */
  int strides[2];         /* conv2d and pools (h, w) */
  bool same_padding;      /* padding: same (else valid) */
  tf_activation activation; /* dense, conv2d, activation */
  bool use_bias;          /* dense, conv2d; default true */
  tf_initializer kernel_init; /* dense/conv2d kernel, embedding table,
                               * lstm kernel and recurrent_kernel */
  tf_initializer bias_init;
  double rate;            /* dropout */
  int64_t seed;           /* dropout op seed; 0: the model's next */
  /* Inferred at parse time: the output's shape without the batch dim. */
  int out_rank;
  int64_t out_dims[TF_JOB_RANK_MAX];
} tf_job_layer;

typedef enum tf_job_loss {
  TF_JOB_LOSS_SPARSE_SOFTMAX_CE = 0, /* labels: class ids [batch] */
  TF_JOB_LOSS_SOFTMAX_CE             /* labels: one-hot [batch, classes]
                                      * (class ids are one-hot encoded) */
} tf_job_loss;

typedef enum tf_job_metric { TF_JOB_METRIC_ACCURACY = 0 } tf_job_metric;

/* The examples a model reads: shape without the batch dim. */
typedef struct tf_job_example {
  tf_dtype dtype;   /* float32 | float64 | int32 | int64 (ids) */
  int rank;         /* 1..TF_JOB_RANK_MAX */
  int64_t dims[TF_JOB_RANK_MAX];
} tf_job_example;

typedef struct tf_job_model_spec {
  tf_job_example input;
  int n_layers;
  tf_job_layer *layers;
  tf_job_loss loss;
  int n_metrics;
  tf_job_metric metrics[TF_JOB_METRICS_MAX];
  int64_t seed;        /* graph-level seed; 0: unseeded */
  int64_t num_classes; /* the last layer's width (inferred) */
} tf_job_model_spec;

/* A model given as a graph file written by the C API. */
typedef struct tf_job_graph_spec {
  char *file;           /* .tfg or .yaml */
  char *train;          /* target run once per step */
  char *loss;           /* edge "node" or "node:k" */
  int n_metrics;
  char **metrics;       /* edges */
  char *init;           /* target run once before training; NULL: none */
  char *images, *labels; /* nodes fed each batch; NULL: none */
  bool has_input;
  tf_job_example input; /* the examples fed to images, when has_input */
} tf_job_graph_spec;

typedef struct tf_job_files {
  int n;
  char **paths;
} tf_job_files;

typedef enum tf_job_shard {
  TF_JOB_SHARD_FILES = 0, /* worker i of n reads files i, i+n, i+2n, ... */
  TF_JOB_SHARD_SHUFFLE    /* every worker reads every file, shuffled with
                           * seed + i (shuffle must be on) */
} tf_job_shard;

typedef struct tf_job_input {
  bool present;
  tf_record_format format;       /* idx | tfrecord */
  tf_compression compression;    /* auto | none | zlib | gzip */
  tf_job_files train_images, train_labels;
  tf_job_files test_images, test_labels; /* n == 0: no test set */
  tf_dtype image_dtype;          /* stored element type, default uint8 */
  tf_dtype label_dtype;          /* stored element type, default uint8 */
  bool little_endian;            /* tfrecord elements; default true */
  double scale;                  /* images *= scale; default 1 */
  int64_t batch_size;            /* default 32 */
  bool shuffle;                  /* default true */
  int64_t seed;                  /* default 0: nondeterministic */
  tf_job_shard shard;            /* resolved; see docs/jobs.md */
  int read_threads;              /* default 1 */
} tf_job_input;

typedef enum tf_job_schedule_kind {
  TF_JOB_SCHEDULE_NONE = 0,
  TF_JOB_SCHEDULE_EXPONENTIAL,
  TF_JOB_SCHEDULE_INVERSE_TIME,
  TF_JOB_SCHEDULE_POLYNOMIAL,
  TF_JOB_SCHEDULE_PIECEWISE
} tf_job_schedule_kind;

typedef struct tf_job_schedule {
  tf_job_schedule_kind kind;
  double decay_steps, decay_rate; /* exponential, inverse_time, polynomial */
  bool staircase;                 /* exponential, inverse_time */
  double end_learning_rate, power; /* polynomial */
  bool cycle;                     /* polynomial */
  int n_boundaries;               /* piecewise: n + 1 values */
  double *boundaries, *values;
} tf_job_schedule;

typedef struct tf_job_optimizer {
  tf_optimizer_kind kind;
  tf_optimizer_options options; /* TF1's defaults for what is left out;
                                 * options.name is NULL (the kind's) */
  tf_job_schedule schedule;
  double clip_norm;             /* > 0: clip by global norm; 0: none */
} tf_job_optimizer;

typedef enum tf_job_mode {
  TF_JOB_MODE_SYNC = 0,
  TF_JOB_MODE_ASYNC
} tf_job_mode;

typedef enum tf_job_placement {
  TF_JOB_PLACE_ROUND_ROBIN = 0,
  TF_JOB_PLACE_BALANCED /* by bytes: largest first onto the lightest ps */
} tf_job_placement;

typedef struct tf_job_replication {
  tf_job_mode mode;
  int workers;        /* default 1 */
  int backup_workers; /* sync only; < workers; default 0 */
  tf_job_placement placement;
  int ps_tasks;       /* 0: every ps task of the cluster */
} tf_job_replication;

typedef struct tf_job_spec {
  char *path; /* the file read, or the name given to parse */
  char *name;
  bool has_model; /* model (else graph) */
  tf_job_model_spec model;
  tf_job_graph_spec graph;
  tf_job_input input;
  tf_job_optimizer optimizer;
  tf_job_replication replication;
  int64_t steps;           /* total steps; 0 when epochs is set */
  int64_t epochs;          /* passes over the training set; 0: steps */
  int64_t log_every_steps; /* default 100 */
  bool keep_variables;     /* keep the job's container after it ends */
  bool eval;               /* an eval section (needs input.test) */
  int64_t eval_every_steps; /* 0: only at the end */
  bool eval_at_end;        /* default true */
  int64_t eval_batch_size; /* default input.batch_size */
  bool checkpoint;         /* a checkpoint section */
  char *checkpoint_dir;
  int64_t checkpoint_every_steps;   /* 0: not by steps */
  int64_t checkpoint_every_seconds; /* 0: not by time; 600 when neither is given */
  int checkpoint_keep;              /* default 5 */
  int recovery_max_attempts;        /* recoveries before FAILED; default 10 */
  int64_t recovery_wait_seconds;    /* for the tasks to be up; default 300 */
  char *text;                       /* the spec's text as given (NUL-ended) */
  size_t text_len;
  char hash[9];                     /* hex CRC32C of text */
} tf_job_spec;

/* Parses text (len bytes); name stands for the file in errors. */
tf_code tf_job_spec_parse(const char *text, size_t len, const char *name,
                          tf_job_spec **out, tf_status *st);
/* Reads and parses the file at path (its errors name path). */
tf_code tf_job_spec_load(const char *path, tf_job_spec **out, tf_status *st);
void tf_job_spec_free(tf_job_spec *s); /* NULL-safe */

/* The files worker `worker` (0-based, < replication.workers) reads from
 * list f under the spec's shard policy: with FILES, files worker,
 * worker + n, ...; with SHUFFLE, all of them. *out gets pointers into f
 * (malloc'd array, free it), *n_out their count. */
void tf_job_spec_worker_files(const tf_job_spec *s, const tf_job_files *f,
                              int worker, const char ***out, int *n_out);
/* The examples' shape and dtype: model.input, or graph.input for a graph
 * job (zeroed when it has none). */
const tf_job_example *tf_job_spec_example(const tf_job_spec *s);

/* The shuffle seed of worker `worker`: input.seed + worker (0 stays 0,
 * nondeterministic), so that SHUFFLE workers read different orders. */
int64_t tf_job_spec_worker_seed(const tf_job_spec *s, int worker);

#endif
