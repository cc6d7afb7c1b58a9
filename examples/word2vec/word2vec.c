/* word2vec.c: skip-gram word embeddings with sampled softmax, the
 * embedding table sharded over the ps tasks (OSDI 2016 §4.2).
 *
 * The corpus is a text file (--text FILE: words are runs of letters,
 * lower-cased; the --vocab most frequent become ids 0.. by frequency, the
 * rest one "UNK" id) or, by default, text this program generates: --vocab
 * words in --topics topics (word w belongs to topic w % topics), each
 * sentence 20 words of one topic drawn with Zipf frequencies, so words of
 * a topic share their contexts. Skip-gram pairs (a word, a word within
 * --window of it) are made here and fed in batches.
 *
 * The model: an embedding table [vocab, dim] partitioned into --shards
 * variables (tf_layers_partitioned_variable) and looked up with
 * tf_layer_sharded_embedding_lookup, strategy "div" (contiguous ranges of
 * ids, the partitioned variable's layout, so the shards' concatenation is
 * the table in id order). Each shard's Gather and its sparse Adagrad
 * update run where the shard lives. The output layer is trained with
 * sampled softmax (--sampled classes drawn log-uniformly per step) instead
 * of a softmax over the whole vocabulary.
 * With --target URL the graph runs on a cluster: shard i on
 * /job:ps/task:(i % ps), where ps is --ps (the cluster's number of ps
 * tasks), the rest where the master places it.
 *
 * It prints the loss every --log steps and, at the end, each of the first
 * few words' nearest neighbours by cosine similarity. With the generated
 * text the last line is `topic_neighbour_accuracy: X`: the fraction of
 * words whose nearest neighbour is of the same topic (chance: 1/topics).
 *
 *   word2vec [--target URL] [--ps N] [--shards N] [--text FILE]
 *            [--vocab N] [--topics N] [--dim N] [--steps N] [--batch N]
 *            [--window N] [--sampled N] [--lr X] [--log N] [--seed N] */
#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tf/layers.h"
#include "tf/tf.h"
#include "tf/train.h"

#define MAX_SHARDS 16
#define SENTENCE 20

typedef struct options {
  const char *target, *text;
  int ps, shards, vocab, topics, dim, steps, batch, window, sampled, log;
  double lr;
  uint64_t seed;
} options;

static void usage(void) {
  fprintf(stderr,
          "usage: word2vec [--target URL] [--ps N] [--shards N] [--text FILE] [--vocab N]\n"
          "                [--topics N] [--dim N] [--steps N] [--batch N] [--window N]\n"
          "                [--sampled N] [--lr X] [--log N] [--seed N]\n");
  exit(2);
}

static void die(const char *what, const tf_status *st) {
  fprintf(stderr, "word2vec: %s: %s: %s\n", what, tf_code_name(st->code), st->msg);
  exit(1);
}

/* A positive int option value, or usage. */
static int pos_int(const char *v, int max) {
  char *end = NULL;
  long x = strtol(v, &end, 10);
  if (end == v || *end != '\0' || x < 1 || x > max) usage();
  return (int)x;
}

static options parse(int argc, char **argv) {
  options o = {.ps = 2, .shards = 2, .vocab = 1000, .topics = 10, .dim = 32,
               .steps = 3000, .batch = 128, .window = 2, .sampled = 64, .log = 500,
               .lr = 0.5, .seed = 1};
  for (int i = 1; i < argc; i += 2) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (v == NULL) usage();
    if (strcmp(a, "--target") == 0) o.target = v;
    else if (strcmp(a, "--text") == 0) o.text = v;
    else if (strcmp(a, "--ps") == 0) o.ps = pos_int(v, 1024);
    else if (strcmp(a, "--shards") == 0) o.shards = pos_int(v, MAX_SHARDS);
    else if (strcmp(a, "--vocab") == 0) o.vocab = pos_int(v, 1 << 24);
    else if (strcmp(a, "--topics") == 0) o.topics = pos_int(v, 1 << 20);
    else if (strcmp(a, "--dim") == 0) o.dim = pos_int(v, 4096);
    else if (strcmp(a, "--steps") == 0) o.steps = pos_int(v, 1 << 30);
    else if (strcmp(a, "--batch") == 0) o.batch = pos_int(v, 1 << 20);
    else if (strcmp(a, "--window") == 0) o.window = pos_int(v, 64);
    else if (strcmp(a, "--sampled") == 0) o.sampled = pos_int(v, 1 << 20);
    else if (strcmp(a, "--log") == 0) o.log = pos_int(v, 1 << 30);
    else if (strcmp(a, "--lr") == 0) o.lr = atof(v);
    else if (strcmp(a, "--seed") == 0) o.seed = strtoull(v, NULL, 10);
    else usage();
  }
  if (!(o.lr > 0) || o.vocab < 2 || o.sampled >= o.vocab || o.shards > o.vocab ||
      o.topics > o.vocab) {
    usage();
  }
  return o;
}

/* ---- the corpus ------------------------------------------------------------ */

static uint64_t rng_next(uint64_t *s) { /* splitmix64 */
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static double rng_unit(uint64_t *s) { return (double)(rng_next(s) >> 11) / 9007199254740992.0; }

typedef struct corpus {
  int32_t *ids;  /* the text as word ids */
  int64_t n;
  char **words;  /* [vocab] names */
  int vocab;
} corpus;

/* Sentences of one topic each: word k-th of its topic drawn with
 * probability ~ 1 / (k + 1), so low ids are frequent (as the log-uniform
 * sampler assumes). */
static corpus generate(const options *o, uint64_t *rng) {
  corpus c = {.vocab = o->vocab};
  int per = o->vocab / o->topics; /* words per topic, at least 1 */
  double *cdf = malloc((size_t)per * sizeof *cdf), sum = 0;
  for (int k = 0; k < per; k++) cdf[k] = sum += 1.0 / (k + 1);
  int64_t sentences = 4 * (int64_t)o->vocab;
  c.n = sentences * SENTENCE;
  c.ids = malloc((size_t)c.n * sizeof *c.ids);
  for (int64_t s = 0; s < sentences; s++) {
    int topic = (int)(rng_next(rng) % (uint64_t)o->topics);
    for (int i = 0; i < SENTENCE; i++) {
      double u = rng_unit(rng) * sum;
      int k = 0;
      while (k < per - 1 && cdf[k] < u) k++;
      c.ids[s * SENTENCE + i] = topic + k * o->topics;
    }
  }
  free(cdf);
  c.words = calloc((size_t)o->vocab, sizeof *c.words);
  for (int w = 0; w < o->vocab; w++) {
    char b[32];
    snprintf(b, sizeof b, "t%d_w%d", w % o->topics, w / o->topics);
    c.words[w] = strdup(b);
  }
  return c;
}

typedef struct count {
  char *word;
  int64_t n;
  int id;
} count;

static int by_count(const void *a, const void *b) {
  const count *x = a, *y = b;
  return x->n != y->n ? (x->n < y->n ? 1 : -1) : strcmp(x->word, y->word);
}

/* The slot of w in the open-addressing table tab[cap]: its entry, or the
 * empty slot where it goes. */
static count *slot(count *tab, size_t cap, const char *w) {
  size_t h = 5381;
  for (const char *p = w; *p; p++) h = h * 33 + (unsigned char)*p;
  while (tab[h % cap].word != NULL && strcmp(tab[h % cap].word, w) != 0) h++;
  return &tab[h % cap];
}

/* Counts the words of f into *tab (grown as needed); seq gets each
 * occurrence (the table's interned copy). */
static size_t count_words(FILE *f, count **tab, size_t *cap, char ***seq, size_t *nw) {
  size_t used = 0, wcap = 1 << 20;
  *seq = malloc(wcap * sizeof **seq);
  char w[64];
  int len = 0, ch;
  do {
    ch = fgetc(f);
    if (ch != EOF && isalpha(ch)) {
      if (len < (int)sizeof w - 1) w[len++] = (char)tolower(ch);
      continue;
    }
    if (len == 0) continue;
    w[len] = '\0';
    len = 0;
    if (used * 2 >= *cap) { /* grow and rehash */
      count *old = *tab;
      size_t ocap = *cap;
      *cap *= 2;
      *tab = calloc(*cap, sizeof **tab);
      for (size_t i = 0; i < ocap; i++) {
        if (old[i].word != NULL) *slot(*tab, *cap, old[i].word) = old[i];
      }
      free(old);
    }
    count *e = slot(*tab, *cap, w);
    if (e->word == NULL) {
      e->word = strdup(w);
      used++;
    }
    e->n++;
    if (*nw == wcap) *seq = realloc(*seq, (wcap *= 2) * sizeof **seq);
    (*seq)[(*nw)++] = e->word;
  } while (ch != EOF);
  return used;
}

/* The file's words (runs of letters, lower-cased): the vocab - 1 most
 * frequent get ids 0.. by frequency, the others the last id ("UNK"). */
static corpus read_text(const options *o) {
  FILE *f = fopen(o->text, "r");
  if (f == NULL) {
    fprintf(stderr, "word2vec: cannot read %s\n", o->text);
    exit(1);
  }
  size_t cap = 1 << 16, nw = 0;
  count *tab = calloc(cap, sizeof *tab);
  char **seq = NULL;
  size_t used = count_words(f, &tab, &cap, &seq, &nw);
  fclose(f);
  if (nw < 2) {
    fprintf(stderr, "word2vec: %s has fewer than 2 words\n", o->text);
    exit(1);
  }
  count *all = malloc(used * sizeof *all);
  size_t k = 0;
  for (size_t i = 0; i < cap; i++) {
    if (tab[i].word != NULL) all[k++] = tab[i];
  }
  qsort(all, used, sizeof *all, by_count);
  corpus c = {.vocab = o->vocab, .n = (int64_t)nw};
  c.words = calloc((size_t)o->vocab, sizeof *c.words);
  int keep = (int)(used < (size_t)o->vocab - 1 ? used : (size_t)o->vocab - 1);
  for (size_t i = 0; i < cap; i++) tab[i].id = o->vocab - 1;
  for (int i = 0; i < keep; i++) {
    c.words[i] = strdup(all[i].word);
    slot(tab, cap, all[i].word)->id = i;
  }
  for (int i = keep; i < o->vocab; i++) c.words[i] = strdup("UNK");
  c.ids = malloc(nw * sizeof *c.ids);
  for (size_t i = 0; i < nw; i++) c.ids[i] = slot(tab, cap, seq[i])->id;
  for (size_t i = 0; i < cap; i++) free(tab[i].word);
  free(tab);
  free(all);
  free(seq);
  return c;
}

/* ---- the model --------------------------------------------------------------- */

typedef struct model {
  tf_graph *g;
  tf_layers *l;
  tf_output centers, labels;        /* fed: int64 [B], [B, 1] */
  tf_output shards[MAX_SHARDS], table; /* the embedding's shards, and all of it */
  tf_output loss;
  tf_node *train, *init, *opt_init;
  tf_optimizer *opt;
} model;

static tf_output placeholder(model *m, const char *name, tf_shape shape) {
  tf_status st;
  tf_node_builder *b = tf_node_begin(m->g, "Placeholder", name);
  tf_node_set_attr(b, "dtype", tf_attr_type_v(TF_INT64));
  tf_node_set_attr(b, "shape", tf_attr_shape(shape));
  tf_node *n = tf_node_finish(b, &st);
  if (n == NULL) die(name, &st);
  return (tf_output){n, 0};
}

/* A one-shard variable on device dev (NULL: none): its ref output. */
static tf_output variable_on(model *m, const char *name, tf_shape shape,
                             tf_initializer init, const char *dev) {
  tf_status st;
  tf_output ref, whole;
  if (tf_layers_partitioned_variable(m->l, name, shape, TF_FLOAT32, &init, true, 1, &dev,
                                     dev != NULL, &ref, &whole, &st) != TF_OK) {
    die(name, &st);
  }
  return ref;
}

static void build(model *m, const options *o) {
  tf_status st;
  m->g = tf_graph_new();
  m->l = tf_layers_new(m->g, (int64_t)o->seed);
  m->centers = placeholder(m, "centers", tf_shape_of(1, -1));
  m->labels = placeholder(m, "labels", tf_shape_of(2, -1, 1));
  char devs[MAX_SHARDS][48];
  const char *dev[MAX_SHARDS];
  for (int i = 0; i < o->shards; i++) {
    snprintf(devs[i], sizeof devs[i], "/job:ps/task:%d", i % o->ps);
    dev[i] = devs[i];
  }
  tf_initializer uni = tf_init_glorot_uniform(0);
  if (tf_layers_partitioned_variable(m->l, "embeddings", tf_shape_of(2, o->vocab, o->dim),
                                     TF_FLOAT32, &uni, true, o->shards,
                                     o->target ? dev : NULL, o->target ? o->shards : 0,
                                     m->shards, &m->table, &st) != TF_OK) {
    die("embeddings", &st);
  }
  tf_output embed;
  if (tf_layer_sharded_embedding_lookup(m->l, m->shards, o->shards, m->centers, "div",
                                        "lookup", &embed, &st) != TF_OK) {
    die("lookup", &st);
  }
  /* The output layer lives on the last ps task. */
  const char *out_dev = o->target ? dev[(o->shards - 1) % o->shards] : NULL;
  tf_output w = variable_on(m, "softmax_weights", tf_shape_of(2, o->vocab, o->dim),
                            tf_init_truncated_normal(0, 1.0 / sqrt(o->dim), 0), out_dev);
  tf_output b = variable_on(m, "softmax_biases", tf_shape_of(1, o->vocab), tf_init_zeros(),
                            out_dev);
  tf_output per_example;
  tf_node_builder *cb = tf_node_begin(m->g, "Const", "loss/axis");
  tf_node_set_attr(cb, "dtype", tf_attr_type_v(TF_INT32));
  tf_tensor *zero = tf_tensor_scalar_i32(0);
  tf_node_set_attr(cb, "value", tf_attr_tensor(zero)); /* the graph copies it */
  tf_output axis = {tf_node_finish(cb, &st), 0};
  tf_tensor_unref(zero);
  if (axis.node == NULL ||
      tf_layer_sampled_softmax_loss(m->l, w, b, m->labels, embed, o->sampled, o->vocab, 1,
                                    NULL, true, 0, "sampled_softmax", &per_example,
                                    &st) != TF_OK) {
    die("sampled softmax", &st);
  }
  tf_node_builder *mb = tf_node_begin(m->g, "Mean", "loss");
  tf_node_add_input(mb, per_example);
  tf_node_add_input(mb, axis);
  tf_node *mean = tf_node_finish(mb, &st);
  if (mean == NULL) die("loss", &st);
  m->loss = (tf_output){mean, 0};
  m->opt = tf_optimizer_adagrad(o->lr);
  tf_output vars[MAX_SHARDS + 2];
  int nv = tf_layers_trainable(m->l, vars, MAX_SHARDS + 2);
  m->train = tf_optimizer_minimize(m->opt, m->g, m->loss, vars, nv, (tf_output){NULL, 0},
                                   "train", &st);
  if (m->train == NULL) die("optimizer", &st);
  m->init = tf_layers_init_op(m->l, "init", &st);
  if (m->init == NULL) die("init", &st);
  m->opt_init = tf_optimizer_init_op(m->opt, "opt_init", &st);
  if (m->opt_init == NULL) die("optimizer init", &st);
}

/* ---- training ------------------------------------------------------------------ */

/* A batch of skip-gram pairs: a word at a random position, and a word
 * within the window of it. */
static void batch(const corpus *c, const options *o, uint64_t *rng, int64_t *centers,
                  int64_t *labels) {
  for (int i = 0; i < o->batch; i++) {
    int64_t p, q;
    do {
      p = (int64_t)(rng_next(rng) % (uint64_t)c->n);
      int off = 1 + (int)(rng_next(rng) % (uint64_t)o->window);
      q = rng_next(rng) & 1 ? p + off : p - off;
    } while (q < 0 || q >= c->n);
    centers[i] = c->ids[p];
    labels[i] = c->ids[q];
  }
}

static tf_tensor *i64_tensor(tf_shape shape, const int64_t *v) {
  tf_tensor *t = NULL;
  tf_status st;
  if (tf_tensor_new(TF_INT64, &shape, &t, &st) != TF_OK) die("tensor", &st);
  memcpy(t->data, v, (size_t)t->n * sizeof *v);
  return t;
}

static void train(model *m, tf_session *s, const corpus *c, const options *o) {
  tf_status st;
  const char *init[] = {tf_node_name(m->init), tf_node_name(m->opt_init)};
  if (tf_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, init, 2, NULL, &st) != TF_OK) {
    die("init", &st);
  }
  uint64_t rng = o->seed * 7919 + 17;
  int64_t *centers = malloc((size_t)o->batch * sizeof *centers);
  int64_t *labels = malloc((size_t)o->batch * sizeof *labels);
  const char *feeds[] = {tf_node_name(m->centers.node), tf_node_name(m->labels.node)};
  const char *fetch = tf_node_name(m->loss.node), *target = tf_node_name(m->train);
  double sum = 0;
  int n = 0;
  for (int step = 1; step <= o->steps; step++) {
    batch(c, o, &rng, centers, labels);
    tf_tensor *in[2] = {i64_tensor(tf_shape_of(1, o->batch), centers),
                        i64_tensor(tf_shape_of(2, o->batch, 1), labels)};
    tf_tensor *loss = NULL;
    if (tf_session_run(s, NULL, feeds, in, 2, &fetch, &loss, 1, &target, 1, NULL, &st) !=
        TF_OK) {
      die("train step", &st);
    }
    sum += *(float *)loss->data;
    n++;
    tf_tensor_unref(loss);
    tf_tensor_unref(in[0]);
    tf_tensor_unref(in[1]);
    if (step % o->log == 0 || step == o->steps) {
      printf("step %d/%d: sampled softmax loss %.4f\n", step, o->steps, sum / n);
      fflush(stdout);
      sum = 0;
      n = 0;
    }
  }
  free(centers);
  free(labels);
}

/* ---- evaluation -------------------------------------------------------------- */

/* Row-normalised copy of the table [vocab, dim]. */
static float *normalised(const tf_tensor *t, int vocab, int dim) {
  float *e = malloc((size_t)vocab * (size_t)dim * sizeof *e);
  const float *v = t->data;
  for (int w = 0; w < vocab; w++) {
    double s = 0;
    for (int k = 0; k < dim; k++) s += (double)v[w * dim + k] * v[w * dim + k];
    double inv = s > 0 ? 1 / sqrt(s) : 0;
    for (int k = 0; k < dim; k++) e[w * dim + k] = (float)(v[w * dim + k] * inv);
  }
  return e;
}

/* The k nearest words of w by cosine similarity into best[0..k). */
static void nearest(const float *e, int vocab, int dim, int w, int k, int *best) {
  float score[16];
  for (int i = 0; i < k; i++) best[i] = -1, score[i] = -2;
  for (int u = 0; u < vocab; u++) {
    if (u == w) continue;
    float d = 0;
    for (int j = 0; j < dim; j++) d += e[w * dim + j] * e[u * dim + j];
    for (int i = 0; i < k; i++) {
      if (d > score[i]) {
        memmove(&score[i + 1], &score[i], (size_t)(k - 1 - i) * sizeof *score);
        memmove(&best[i + 1], &best[i], (size_t)(k - 1 - i) * sizeof *best);
        score[i] = d, best[i] = u;
        break;
      }
    }
  }
}

static void evaluate(model *m, tf_session *s, const corpus *c, const options *o) {
  tf_status st;
  const char *fetch = tf_node_name(m->table.node);
  char name[256];
  if (m->table.index != 0) {
    snprintf(name, sizeof name, "%s:%d", fetch, m->table.index);
    fetch = name;
  }
  tf_tensor *t = NULL;
  if (tf_session_run(s, NULL, NULL, NULL, 0, &fetch, &t, 1, NULL, 0, NULL, &st) != TF_OK) {
    die("reading the embeddings", &st);
  }
  float *e = normalised(t, o->vocab, o->dim);
  tf_tensor_unref(t);
  for (int w = 0; w < 5 && w < o->vocab; w++) {
    int best[5];
    nearest(e, o->vocab, o->dim, w, 5, best);
    printf("nearest to %s:", c->words[w]);
    for (int i = 0; i < 5 && best[i] >= 0; i++) printf(" %s", c->words[best[i]]);
    printf("\n");
  }
  if (o->text == NULL) {
    int same = 0;
    for (int w = 0; w < o->vocab; w++) {
      int best;
      nearest(e, o->vocab, o->dim, w, 1, &best);
      same += best % o->topics == w % o->topics;
    }
    printf("topic_neighbour_accuracy: %.4f\n", (double)same / o->vocab);
  }
  free(e);
}

int main(int argc, char **argv) {
  options o = parse(argc, argv);
  uint64_t rng = o.seed;
  corpus c = o.text ? read_text(&o) : generate(&o, &rng);
  printf("word2vec: %lld words of text, vocabulary %d, embedding [%d, %d] in %d shard%s%s%s\n",
         (long long)c.n, o.vocab, o.vocab, o.dim, o.shards, o.shards == 1 ? "" : "s",
         o.target ? " on " : " (in process)", o.target ? o.target : "");
  model m = {0};
  build(&m, &o);
  tf_status st;
  tf_session_options so = {.target = o.target};
  tf_session *s = tf_session_new(m.g, &so, &st);
  if (s == NULL) die("session", &st);
  train(&m, s, &c, &o);
  evaluate(&m, s, &c, &o);
  tf_session_free(s);
  tf_optimizer_free(m.opt);
  tf_layers_free(m.l);
  tf_graph_free(m.g);
  for (int w = 0; w < c.vocab; w++) free(c.words[w]);
  free(c.words);
  free(c.ids);
  return 0;
}
