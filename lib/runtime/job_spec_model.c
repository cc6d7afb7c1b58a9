/* job_spec_model.c: the model and graph sections of a job spec
 * (docs/jobs.md "model", "graph"). A layer is a mapping with a type and
 * the keys of that type (a key of another type is an error naming the
 * keys that apply); the layer list is run through shape inference here,
 * batch dim left out, so that every shape error points at its layer and a
 * spec that parses also builds (job_model.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "lib/runtime/job_spec_impl.h"

static const char *const kind_names[TF_JOB_LAYER_KINDS] = {
    "dense",   "conv2d",    "max_pool",  "avg_pool",
    "flatten", "dropout",   "embedding", "activation", "lstm"};

const char *tf_job_layer_kind_name(tf_job_layer_kind kind) {
  return kind >= 0 && kind < TF_JOB_LAYER_KINDS ? kind_names[kind] : "?";
}

/* ---- one layer ----------------------------------------------------------- */

enum {
  K_TYPE, K_NAME, K_UNITS, K_ACTIVATION, K_USE_BIAS, K_KERNEL_INIT,
  K_BIAS_INIT, K_FILTERS, K_KERNEL_SIZE, K_STRIDES, K_PADDING, K_POOL_SIZE,
  K_RATE, K_SEED, K_INPUT_DIM, K_OUTPUT_DIM, K_EMB_INIT, K_COUNT
};
static const char *const layer_keys[K_COUNT] = {
    "type",      "name",        "units",     "activation",
    "use_bias",  "kernel_initializer", "bias_initializer", "filters",
    "kernel_size", "strides",   "padding",   "pool_size",
    "rate",      "seed",        "input_dim", "output_dim",
    "embeddings_initializer"};
#define B(k) (1u << (k))
#define COMMON (B(K_TYPE) | B(K_NAME))
/* The keys each kind takes, and those it requires. */
static const unsigned kind_keys[TF_JOB_LAYER_KINDS] = {
    COMMON | B(K_UNITS) | B(K_ACTIVATION) | B(K_USE_BIAS) | B(K_KERNEL_INIT) |
        B(K_BIAS_INIT),
    COMMON | B(K_FILTERS) | B(K_KERNEL_SIZE) | B(K_STRIDES) | B(K_PADDING) |
        B(K_ACTIVATION) | B(K_USE_BIAS) | B(K_KERNEL_INIT) | B(K_BIAS_INIT),
    COMMON | B(K_POOL_SIZE) | B(K_STRIDES) | B(K_PADDING),
    COMMON | B(K_POOL_SIZE) | B(K_STRIDES) | B(K_PADDING),
    COMMON,
    COMMON | B(K_RATE) | B(K_SEED),
    COMMON | B(K_INPUT_DIM) | B(K_OUTPUT_DIM) | B(K_EMB_INIT),
    COMMON | B(K_ACTIVATION),
    COMMON | B(K_UNITS) | B(K_KERNEL_INIT) | B(K_BIAS_INIT)};
static const unsigned kind_required[TF_JOB_LAYER_KINDS] = {
    B(K_UNITS), B(K_FILTERS) | B(K_KERNEL_SIZE), 0, 0, 0, B(K_RATE),
    B(K_INPUT_DIM) | B(K_OUTPUT_DIM), B(K_ACTIVATION), B(K_UNITS)};

/* Keys that do not apply to the kind, or required ones missing. */
static tf_code check_keys(tf__spec *c, const yaml_node_t *m, const char *path,
                          tf_job_layer_kind kind, yaml_node_t **f) {
  char list[256] = "";
  for (int k = 0; k < K_COUNT; k++) {
    if (kind_keys[kind] & B(k)) {
      size_t l = strlen(list);
      snprintf(list + l, sizeof list - l, "%s%s", l ? ", " : "",
               layer_keys[k]);
    }
  }
  for (int k = 0; k < K_COUNT; k++) {
    if (f[k] != NULL && !(kind_keys[kind] & B(k))) {
      return tf__spec_err(c, f[k], path, "key '%s' does not apply to a %s "
                          "layer (its keys: %s)", layer_keys[k],
                          kind_names[kind], list);
    }
    if (f[k] == NULL && (kind_required[kind] & B(k))) {
      return tf__spec_err(c, m, path, "a %s layer needs '%s'",
                          kind_names[kind], layer_keys[k]);
    }
  }
  return TF_OK;
}

/* An int, or a list [h, w] of ints, each in 1..TF_JOB_WINDOW_MAX. */
static tf_code parse_pair(tf__spec *c, yaml_node_t *v, const char *path,
                          int out[2]) {
  int n;
  TF_TRY(tf__spec_seq(c, v, path, 1, 2, true, &n));
  for (int i = 0; i < 2; i++) {
    int64_t x;
    TF_TRY(tf__spec_int(c, tf__spec_item(c, v, n == 1 ? 0 : i), path, 1,
                        TF_JOB_WINDOW_MAX, "", &x));
    out[i] = (int)x;
  }
  return TF_OK;
}

static tf_code parse_activation(tf__spec *c, const yaml_node_t *v,
                                const char *path, tf_activation *out) {
  static const char *const names[] = {"none", "linear", "relu", "tanh",
                                      "sigmoid", "softmax"};
  static const tf_activation acts[] = {TF_ACT_NONE, TF_ACT_NONE,
                                       TF_ACT_RELU, TF_ACT_TANH,
                                       TF_ACT_SIGMOID, TF_ACT_SOFTMAX};
  int k;
  TF_TRY(tf__spec_enum(c, v, path, names, 6, &k));
  *out = acts[k];
  return TF_OK;
}

/* An initializer: a kind's name, or {type, seed, value, mean, stddev}
 * with only the keys the kind uses. */
static tf_code parse_init(tf__spec *c, const yaml_node_t *v, const char *path,
                          tf_initializer *out) {
  static const char *const kinds[] = {"zeros", "ones", "constant",
                                      "glorot_uniform", "he_normal",
                                      "truncated_normal"};
  static const char *const keys[] = {"type", "seed", "value", "mean",
                                     "stddev"};
  /* Per kind, the keys beyond type it takes: bit 1 seed, 2 value, 3 mean,
   * 4 stddev. */
  static const unsigned takes[] = {0, 0, 4, 2, 2, 2 | 8 | 16};
  yaml_node_t *f[5] = {NULL};
  int k;
  char p[160];
  if (v->type == YAML_MAPPING_NODE) {
    TF_TRY(tf__spec_fields(c, v, path, keys, 5, f));
    if (f[0] == NULL) {
      return tf__spec_err(c, v, path, "an initializer needs 'type' (zeros, "
                          "ones, constant, glorot_uniform, he_normal or "
                          "truncated_normal)");
    }
  }
  snprintf(p, sizeof p, "%.120s%s", path, f[0] ? ".type" : "");
  TF_TRY(tf__spec_enum(c, f[0] ? f[0] : v, p, kinds, 6, &k));
  *out = tf__init_make((tf_init_kind)k, 0, 0, k == 5 ? 1.0 : 0, 0);
  double *dst[5] = {NULL, NULL, &out->value, &out->mean, &out->stddev};
  for (int i = 1; i < 5; i++) {
    snprintf(p, sizeof p, "%.120s.%s", path, keys[i]);
    if (f[i] != NULL && !(takes[k] & (1u << i))) {
      return tf__spec_err(c, f[i], p, "a %s initializer takes no '%s'",
                          kinds[k], keys[i]);
    }
    if (f[i] != NULL && i == 1) {
      TF_TRY(tf__spec_int(c, f[i], p, 0, INT64_MAX / 2, "", &out->seed));
    } else if (f[i] != NULL) {
      TF_TRY(tf__spec_float(c, f[i], p, i == 4 ? 0 : -1e30, i == 4, 1e30,
                            false, dst[i]));
    }
  }
  return TF_OK;
}

/* The kind and the keys' values of layer mapping m. */
static tf_code layer_fields(tf__spec *c, const yaml_node_t *m,
                            const char *path, tf_job_layer *L,
                            yaml_node_t **f) {
  char b[80], p[160];
  if (m->type != YAML_MAPPING_NODE) {
    return tf__spec_err(c, m, path, "expected a layer (a mapping with "
                        "'type'), got %s", tf__spec_shown(m, b));
  }
  TF_TRY(tf__spec_fields(c, m, path, layer_keys, K_COUNT, f));
  if (f[K_TYPE] == NULL) {
    return tf__spec_err(c, m, path, "a layer needs 'type' (dense, conv2d, "
                        "max_pool, avg_pool, flatten, dropout, embedding, "
                        "activation or lstm)");
  }
  int k;
  snprintf(p, sizeof p, "%s.type", path);
  TF_TRY(tf__spec_enum(c, f[K_TYPE], p, kind_names, TF_JOB_LAYER_KINDS, &k));
  L->kind = (tf_job_layer_kind)k;
  return check_keys(c, m, path, L->kind, f);
}

/* Sizes: units, filters, input_dim, output_dim, rate, seed. */
static tf_code layer_sizes(tf__spec *c, const char *path, tf_job_layer *L,
                           yaml_node_t **f) {
  char p[160];
  int64_t x;
  static const int size_keys[] = {K_UNITS, K_FILTERS, K_OUTPUT_DIM};
  for (int i = 0; i < 3; i++) {
    if (f[size_keys[i]] != NULL) {
      snprintf(p, sizeof p, "%s.%s", path, layer_keys[size_keys[i]]);
      TF_TRY(tf__spec_int(c, f[size_keys[i]], p, 1, TF_JOB_DIM_MAX, "",
                          &L->units));
    }
  }
  if (f[K_INPUT_DIM] != NULL) {
    snprintf(p, sizeof p, "%s.input_dim", path);
    TF_TRY(tf__spec_int(c, f[K_INPUT_DIM], p, 1, TF_JOB_VOCAB_MAX, "", &x));
    L->input_dim = x;
  }
  if (f[K_RATE] != NULL) {
    snprintf(p, sizeof p, "%s.rate", path);
    TF_TRY(tf__spec_float(c, f[K_RATE], p, 0, false, 1, true, &L->rate));
  }
  if (f[K_SEED] != NULL) {
    snprintf(p, sizeof p, "%s.seed", path);
    TF_TRY(tf__spec_int(c, f[K_SEED], p, 0, INT64_MAX / 2, "", &L->seed));
  }
  return TF_OK;
}

/* Windows, padding, activation, bias and initializers. */
static tf_code layer_options(tf__spec *c, const char *path, tf_job_layer *L,
                             yaml_node_t **f) {
  char p[160];
  static const char *const pads[] = {"valid", "same"};
  int pad = 0;
  bool pool = L->kind == TF_JOB_LAYER_MAX_POOL ||
              L->kind == TF_JOB_LAYER_AVG_POOL;
  L->window[0] = L->window[1] = pool ? 2 : 1;
  yaml_node_t *win = f[pool ? K_POOL_SIZE : K_KERNEL_SIZE];
  snprintf(p, sizeof p, "%s.%s", path, pool ? "pool_size" : "kernel_size");
  if (win != NULL) {
    TF_TRY(parse_pair(c, win, p, L->window));
  }
  L->strides[0] = pool ? L->window[0] : 1; /* Keras: pools stride by size */
  L->strides[1] = pool ? L->window[1] : 1;
  snprintf(p, sizeof p, "%s.strides", path);
  if (f[K_STRIDES] != NULL) {
    TF_TRY(parse_pair(c, f[K_STRIDES], p, L->strides));
  }
  snprintf(p, sizeof p, "%s.padding", path);
  if (f[K_PADDING] != NULL) {
    TF_TRY(tf__spec_enum(c, f[K_PADDING], p, pads, 2, &pad));
  }
  L->same_padding = pad == 1;
  snprintf(p, sizeof p, "%s.activation", path);
  if (f[K_ACTIVATION] != NULL) {
    TF_TRY(parse_activation(c, f[K_ACTIVATION], p, &L->activation));
  }
  snprintf(p, sizeof p, "%s.use_bias", path);
  if (f[K_USE_BIAS] != NULL) {
    TF_TRY(tf__spec_bool(c, f[K_USE_BIAS], p, &L->use_bias));
  }
  static const int init_keys[] = {K_KERNEL_INIT, K_EMB_INIT, K_BIAS_INIT};
  for (int i = 0; i < 3; i++) {
    snprintf(p, sizeof p, "%s.%s", path, layer_keys[init_keys[i]]);
    if (f[init_keys[i]] != NULL) {
      TF_TRY(parse_init(c, f[init_keys[i]], p,
                        i < 2 ? &L->kernel_init : &L->bias_init));
    }
  }
  return TF_OK;
}

/* ---- shape inference ----------------------------------------------------- */

static void shape_str(int rank, const int64_t *dims, char *buf, size_t n) {
  size_t l = (size_t)snprintf(buf, n, "[batch");
  for (int i = 0; i < rank && l < n; i++) {
    l += (size_t)snprintf(buf + l, n - l, ", %lld", (long long)dims[i]);
  }
  snprintf(buf + (l < n ? l : n - 1), n - (l < n ? l : n - 1), "]");
}

/* One spatial dim of a conv or pool: ceil(x / s) for same, else
 * ceil((x - k + 1) / s); 0 when the window does not fit. */
static int64_t spatial(int64_t x, int k, int s, bool same) {
  if (same) {
    return (x + s - 1) / s;
  }
  return x < k ? 0 : (x - k) / s + 1;
}

/* Conv2d and pools: [h, w, c] -> [h', w', c']. */
static tf_code infer_window(tf__spec *c, const yaml_node_t *m,
                            const char *path, tf_job_layer *L, int rank,
                            const int64_t *in, char *shown) {
  if (rank != 3) {
    return tf__spec_err(c, m, path, "a %s layer needs a [batch, height, "
                        "width, channels] input, got %s", kind_names[L->kind],
                        shown);
  }
  L->out_rank = 3;
  for (int i = 0; i < 2; i++) {
    L->out_dims[i] = spatial(in[i], L->window[i], L->strides[i],
                             L->same_padding);
    if (L->out_dims[i] == 0) {
      return tf__spec_err(c, m, path, "a %dx%d window with valid padding "
                          "does not fit the input %s", L->window[0],
                          L->window[1], shown);
    }
  }
  bool conv = L->kind == TF_JOB_LAYER_CONV2D;
  L->out_dims[2] = conv ? L->units : in[2];
  if (conv && (double)L->window[0] * L->window[1] * (double)in[2] *
                      (double)L->units > (double)TF_JOB_ELEMENTS_MAX) {
    return tf__spec_err(c, m, path, "the kernel [%d, %d, %lld, %lld] has more "
                        "than 2^31 elements", L->window[0], L->window[1],
                        (long long)in[2], (long long)L->units);
  }
  return TF_OK;
}

/* L's output shape from its input's (rank, in, dtype is_int). */
static tf_code infer(tf__spec *c, const yaml_node_t *m, const char *path,
                     tf_job_layer *L, int rank, const int64_t *in,
                     bool is_int) {
  char shown[160];
  shape_str(rank, in, shown, sizeof shown);
  bool emb = L->kind == TF_JOB_LAYER_EMBEDDING;
  if (is_int != emb) {
    return tf__spec_err(c, m, path, is_int ?
                        "a %s layer needs float input; integer ids must go "
                        "through an embedding layer first" :
                        "an %s layer needs integer ids (model.input.dtype "
                        "int32 or int64) and must come first",
                        kind_names[L->kind]);
  }
  L->out_rank = rank;
  memcpy(L->out_dims, in, sizeof L->out_dims);
  double elems = 1;
  for (int i = 0; i < rank; i++) {
    elems *= (double)in[i];
  }
  switch (L->kind) {
  case TF_JOB_LAYER_DENSE:
    if (rank != 1) {
      return tf__spec_err(c, m, path, "a dense layer needs a [batch, n] "
                          "input, got %s (put a flatten layer before it)",
                          shown);
    }
    L->out_dims[0] = L->units;
    return elems * (double)L->units > (double)TF_JOB_ELEMENTS_MAX
               ? tf__spec_err(c, m, path, "the kernel [%lld, %lld] has more "
                              "than 2^31 elements", (long long)in[0],
                              (long long)L->units)
               : TF_OK;
  case TF_JOB_LAYER_FLATTEN:
    L->out_rank = 1;
    L->out_dims[0] = (int64_t)elems;
    return TF_OK;
  case TF_JOB_LAYER_LSTM:
    if (rank != 2) {
      return tf__spec_err(c, m, path, "an lstm layer needs a [batch, time, "
                          "features] input, got %s", shown);
    }
    L->out_rank = 1;
    L->out_dims[0] = L->units;
    return (double)(in[1] + L->units) * 4.0 * (double)L->units >
                   (double)TF_JOB_ELEMENTS_MAX
               ? tf__spec_err(c, m, path, "the kernels [%lld + %lld, 4 x %lld] "
                              "have more than 2^31 elements", (long long)in[1],
                              (long long)L->units, (long long)L->units)
               : TF_OK;
  case TF_JOB_LAYER_EMBEDDING:
    if (rank >= TF_JOB_RANK_MAX ||
        (double)L->input_dim * (double)L->units > (double)TF_JOB_ELEMENTS_MAX) {
      return tf__spec_err(c, m, path, "an embedding of [%lld, %lld] on %s "
                          "gives more than %d dims or a table of more than "
                          "2^31 elements", (long long)L->input_dim,
                          (long long)L->units, shown, TF_JOB_RANK_MAX);
    }
    L->out_dims[L->out_rank++] = L->units;
    return TF_OK;
  case TF_JOB_LAYER_CONV2D:
  case TF_JOB_LAYER_MAX_POOL:
  case TF_JOB_LAYER_AVG_POOL:
    return infer_window(c, m, path, L, rank, in, shown);
  default:
    return TF_OK; /* dropout, activation: same shape */
  }
}

/* ---- the layer list ------------------------------------------------------ */

/* The default name of layer i: its kind, then kind_1, kind_2, ... as
 * Keras counts layers of one kind. */
static char *default_name(const tf_job_spec *s, int i) {
  int same = 0;
  tf_job_layer_kind kind = s->model.layers[i].kind;
  for (int j = 0; j < i; j++) {
    same += s->model.layers[j].kind == kind;
  }
  return same == 0 ? tf__xstrdup(kind_names[kind])
                   : tf__xasprintf("%s_%d", kind_names[kind], same);
}

static tf_code parse_layer(tf__spec *c, yaml_node_t *m, int i, tf_job_spec *s,
                           int rank, const int64_t *in, bool is_int) {
  char path[64], p[96];
  snprintf(path, sizeof path, "model.layers[%d]", i);
  tf_job_layer *L = &s->model.layers[i];
  L->use_bias = true;
  L->kernel_init = tf_init_glorot_uniform(0);
  L->bias_init = tf_init_zeros();
  yaml_node_t *f[K_COUNT];
  TF_TRY(layer_fields(c, m, path, L, f));
  s->model.n_layers = i + 1; /* owned from here on */
  TF_TRY(layer_sizes(c, path, L, f));
  TF_TRY(layer_options(c, path, L, f));
  if (f[K_NAME] != NULL) {
    const char *name;
    snprintf(p, sizeof p, "%s.name", path);
    TF_TRY(tf__job_parse_name(c, f[K_NAME], p, &name));
    L->name = tf__xstrdup(name);
  } else {
    L->name = default_name(s, i);
  }
  /* Names job_model.h gives to nodes beside the layers' scopes. */
  static const char *const reserved[] = {"images", "labels_one_hot", "logits",
                                         "loss", "accuracy", "init",
                                         "global_step", "learning_rate"};
  for (int j = 0; j < 8; j++) {
    if (strcmp(L->name, reserved[j]) == 0) {
      return tf__spec_err(c, f[K_NAME], path, "layer name '%s' is reserved "
                          "(images, labels_one_hot, logits, loss, accuracy, "
                          "init, global_step, learning_rate)", L->name);
    }
  }
  for (int j = 0; j < i; j++) {
    if (strcmp(s->model.layers[j].name, L->name) == 0) {
      return tf__spec_err(c, f[K_NAME] ? f[K_NAME] : m, path, "layer name "
                          "'%s' is already the name of model.layers[%d]",
                          L->name, j);
    }
  }
  return infer(c, m, path, L, rank, in, is_int);
}

/* The last layer must give logits [batch, classes >= 2]. */
static tf_code check_logits(tf__spec *c, const yaml_node_t *m,
                            tf_job_spec *s) {
  const tf_job_layer *L = &s->model.layers[s->model.n_layers - 1];
  char shown[160], path[64];
  snprintf(path, sizeof path, "model.layers[%d]", s->model.n_layers - 1);
  shape_str(L->out_rank, L->out_dims, shown, sizeof shown);
  if (L->out_rank != 1 || L->out_dims[0] < 2) {
    return tf__spec_err(c, m, path, "the last layer must give logits [batch, "
                        "classes] with at least 2 classes, got %s", shown);
  }
  if (L->activation == TF_ACT_SOFTMAX || L->kind == TF_JOB_LAYER_DROPOUT) {
    return tf__spec_err(c, m, path, "the last layer must give logits: the "
                        "loss applies softmax itself (use activation: none, "
                        "and no dropout last)");
  }
  s->model.num_classes = L->out_dims[0];
  return TF_OK;
}

static tf_code parse_layers(tf__spec *c, yaml_node_t *v, tf_job_spec *s) {
  int n;
  TF_TRY(tf__spec_seq(c, v, "model.layers", 1, TF_JOB_LAYERS_MAX, false, &n));
  s->model.layers = tf__xcalloc((size_t)n, sizeof *s->model.layers);
  int rank = s->model.input.rank;
  const int64_t *in = s->model.input.dims;
  bool is_int = s->model.input.dtype == TF_INT32 ||
                s->model.input.dtype == TF_INT64;
  yaml_node_t *last = NULL;
  for (int i = 0; i < n; i++) {
    last = tf__spec_item(c, v, i);
    TF_TRY(parse_layer(c, last, i, s, rank, in, is_int));
    rank = s->model.layers[i].out_rank;
    in = s->model.layers[i].out_dims;
    is_int = false;
  }
  return check_logits(c, last, s);
}

/* ---- sections ------------------------------------------------------------ */

tf_code tf__job_parse_example(tf__spec *c, const yaml_node_t *v,
                              const char *path, bool ints,
                              tf_job_example *out) {
  static const char *const keys[] = {"shape", "dtype"};
  static const char *const dts[] = {"float32", "float64", "int32", "int64"};
  static const tf_dtype dtv[] = {TF_FLOAT32, TF_FLOAT64, TF_INT32, TF_INT64};
  yaml_node_t *f[2];
  char p[96];
  TF_TRY(tf__spec_fields(c, v, path, keys, 2, f));
  if (f[0] == NULL) {
    return tf__spec_err(c, v, path, "needs 'shape' (one example's dims "
                        "without the batch dim, e.g. [784] or [28, 28, 1])");
  }
  int n, k = 0;
  snprintf(p, sizeof p, "%s.shape", path);
  TF_TRY(tf__spec_seq(c, f[0], p, 1, TF_JOB_RANK_MAX, false, &n));
  out->rank = n;
  double elems = 1;
  for (int i = 0; i < n; i++) {
    TF_TRY(tf__spec_int(c, tf__spec_item(c, f[0], i), p, 1, TF_JOB_DIM_MAX,
                        "", &out->dims[i]));
    elems *= (double)out->dims[i];
  }
  if (elems > (double)TF_JOB_ELEMENTS_MAX) {
    return tf__spec_err(c, f[0], p, "an example of more than 2^31 elements");
  }
  snprintf(p, sizeof p, "%s.dtype", path);
  if (f[1] != NULL) {
    TF_TRY(tf__spec_enum(c, f[1], p, dts, ints ? 4 : 2, &k));
  }
  out->dtype = dtv[k];
  return TF_OK;
}

tf_code tf__job_parse_model(tf__spec *c, const yaml_node_t *v,
                            tf_job_spec *s) {
  static const char *const keys[] = {"input", "layers", "loss", "metrics",
                                     "seed"};
  static const char *const losses[] = {"sparse_softmax_cross_entropy",
                                       "softmax_cross_entropy"};
  static const char *const metrics[] = {"accuracy"};
  yaml_node_t *f[5];
  TF_TRY(tf__spec_fields(c, v, "model", keys, 5, f));
  for (int k = 0; k < 3; k++) {
    if (f[k] == NULL) {
      return tf__spec_err(c, v, "model", "needs '%s'", keys[k]);
    }
  }
  s->has_model = true;
  TF_TRY(tf__job_parse_example(c, f[0], "model.input", true, &s->model.input));
  TF_TRY(parse_layers(c, f[1], s));
  int k, n = 0;
  TF_TRY(tf__spec_enum(c, f[2], "model.loss", losses, 2, &k));
  s->model.loss = (tf_job_loss)k;
  if (f[3] != NULL) {
    TF_TRY(tf__spec_seq(c, f[3], "model.metrics", 0, TF_JOB_METRICS_MAX, true,
                        &n));
  }
  for (int i = 0; i < n; i++) {
    yaml_node_t *item = tf__spec_item(c, f[3], i);
    TF_TRY(tf__spec_enum(c, item, "model.metrics", metrics, 1, &k));
    for (int j = 0; j < i; j++) {
      if (s->model.metrics[j] == (tf_job_metric)k) {
        return tf__spec_err(c, item, "model.metrics", "'%s' appears twice",
                            metrics[k]);
      }
    }
    s->model.metrics[s->model.n_metrics++] = (tf_job_metric)k;
  }
  if (f[4] != NULL) {
    TF_TRY(tf__spec_int(c, f[4], "model.seed", 0, INT64_MAX / 2,
                        " (0: unseeded)", &s->model.seed));
  }
  return TF_OK;
}

/* A node or edge name: "name" or "name:k". */
static tf_code node_name(tf__spec *c, const yaml_node_t *v, const char *path,
                         char **out) {
  const char *t;
  TF_TRY(tf__spec_text(c, v, path, "a node name", TF_JOB_NODE_MAX, &t));
  if (strspn(t, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                "0123456789_.-/:") != strlen(t)) {
    return tf__spec_err(c, v, path, "node name '%s' may hold only "
                        "[A-Za-z0-9_.-/] and ':' before an output index", t);
  }
  *out = tf__xstrdup(t);
  return TF_OK;
}

tf_code tf__job_parse_graph(tf__spec *c, const yaml_node_t *v,
                            tf_job_spec *s) {
  static const char *const keys[] = {"file",   "train",  "loss",  "metrics",
                                     "init",   "images", "labels", "input"};
  tf_job_graph_spec *g = &s->graph;
  yaml_node_t *f[8];
  const char *t;
  TF_TRY(tf__spec_fields(c, v, "graph", keys, 8, f));
  for (int k = 0; k < 3; k++) {
    if (f[k] == NULL) {
      return tf__spec_err(c, v, "graph", "needs '%s'", keys[k]);
    }
  }
  TF_TRY(tf__spec_text(c, f[0], "graph.file", "a graph file (.tfg or .yaml)",
                       TF_JOB_PATH_MAX, &t));
  g->file = tf__xstrdup(t);
  char **dst[] = {NULL, &g->train, &g->loss, NULL, &g->init, &g->images,
                  &g->labels};
  for (int k = 1; k < 7; k++) {
    char p[32];
    snprintf(p, sizeof p, "graph.%s", keys[k]);
    if (f[k] != NULL && dst[k] != NULL) {
      TF_TRY(node_name(c, f[k], p, dst[k]));
    }
  }
  int n = 0;
  if (f[3] != NULL) {
    TF_TRY(tf__spec_seq(c, f[3], "graph.metrics", 0, TF_JOB_METRICS_MAX, true,
                        &n));
    g->metrics = tf__xcalloc((size_t)n + 1, sizeof *g->metrics);
  }
  for (int i = 0; i < n; i++) {
    TF_TRY(node_name(c, tf__spec_item(c, f[3], i), "graph.metrics",
                     &g->metrics[i]));
    g->n_metrics = i + 1;
  }
  if ((f[5] == NULL) != (f[6] == NULL) || (f[5] == NULL) != (f[7] == NULL)) {
    return tf__spec_err(c, v, "graph", "'images', 'labels' and 'input' go "
                        "together (the nodes fed with each batch and the "
                        "examples' shape), or none of them");
  }
  if (f[7] != NULL) {
    g->has_input = true;
    TF_TRY(tf__job_parse_example(c, f[7], "graph.input", true, &g->input));
  }
  return TF_OK;
}
