/* layers_shard_test.c: partitioned variables and the sharded embedding
 * lookup (lib/core/cc/layers_shard.c), run in-process and compared with
 * float64 recomputations from the fetched shards: the shard layout, names,
 * devices and initial values; lookups for "mod" and "div" with uneven
 * shards, repeated ids, int32 and int64 ids of rank 0, 1 and 2; per-shard
 * gradients that stay sparse and equal the dense reference and central
 * finite differences; one SGD and one Adagrad step that change exactly the
 * gathered rows of each shard (full shards read before and after) by the
 * expected amounts; a dense layer
 * whose kernel is partitioned training to the same values as the
 * unpartitioned one; run-time errors for ids outside the table; build-time
 * errors that leave the graph unchanged. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test/unit/core/cc/layers_testlib.h"
#include "tf/gradients.h"
#include "tf/train.h"

#define MAXS 4 /* shards at most in these tests */

static const char *const PS[] = {"/job:ps/task:0", "/job:ps/task:1"};

/* Shard and row of `id` in a table of `total` rows split n ways. */
static void locate(bool div, int64_t total, int n, int64_t id, int *shard,
                   int64_t *row) {
  if (!div) {
    *shard = (int)(id % n);
    *row = id / n;
    return;
  }
  int64_t off = 0;
  for (int i = 0; i < n; i++) {
    int64_t r = tf_layers_shard_rows(total, n, i);
    if (id < off + r) {
      *shard = i;
      *row = id - off;
      return;
    }
    off += r;
  }
  ck_abort_msg("id %lld outside a table of %lld rows", (long long)id,
               (long long)total);
}

/* A graph with a partitioned [total, dim] float64 variable "emb" over n
 * shards (Glorot, seeded) and ids fed through placeholder "ids". */
typedef struct fixture {
  tf_graph *g;
  tf_layers *l;
  tf_output shards[MAXS], dense, ids, out;
  int n;
  int64_t total, dim;
} fixture;

static void fixture_init(fixture *f, int64_t total, int64_t dim, int n,
                         tf_dtype idt, tf_shape ids_shape,
                         const char *strategy) {
  tf_status st;
  memset(f, 0, sizeof *f);
  f->g = tf_graph_new();
  f->l = tf_layers_new(f->g, 7);
  f->n = n;
  f->total = total;
  f->dim = dim;
  tf_initializer init = tf_init_glorot_uniform(0);
  LT_OK(tf_layers_partitioned_variable(f->l, "emb", tf_shape_of(2, total, dim),
                                       TF_FLOAT64, &init, true, n, PS, 2,
                                       f->shards, &f->dense, &st));
  f->ids = (tf_output){tt_placeholder(f->g, "ids", idt, ids_shape), 0};
  LT_OK(tf_layer_sharded_embedding_lookup(f->l, f->shards, n, f->ids, strategy,
                                          NULL, &f->out, &st));
}

static void fixture_fini(fixture *f) {
  tf_layers_free(f->l);
  tf_graph_free(f->g);
}

/* ---- layout ---------------------------------------------------------------- */

START_TEST(test_shard_rows) {
  ck_assert_int_eq(tf_layers_shard_rows(7, 3, 0), 3);
  ck_assert_int_eq(tf_layers_shard_rows(7, 3, 1), 2);
  ck_assert_int_eq(tf_layers_shard_rows(7, 3, 2), 2);
  ck_assert_int_eq(tf_layers_shard_rows(1000, 2, 1), 500);
  ck_assert_int_eq(tf_layers_shard_rows(5, 5, 4), 1);
  ck_assert_int_eq(tf_layers_shard_rows(7, 3, 3), 0);
  ck_assert_int_eq(tf_layers_shard_rows(7, 0, 0), 0);
  ck_assert_int_eq(tf_layers_shard_rows(-1, 2, 0), 0);
}
END_TEST

/* [7, 3] over 3 shards: names, shapes 3/2/2, devices round-robin on the
 * variable, its Assign and its initializer; constant init concatenates to
 * the unpartitioned value; Glorot uses the full shape's fans, draws each
 * shard distinctly and repeats across builds with the same seeds. */
static void build_var(tf_graph *g, tf_layers *l, const tf_initializer *init,
                      tf_output *shards, tf_output *dense) {
  tf_status st;
  LT_OK(tf_layers_partitioned_variable(l, "w", tf_shape_of(2, 7, 3),
                                       TF_FLOAT64, init, true, 3, PS, 2,
                                       shards, dense, &st));
}

START_TEST(test_partitioned_variable) {
  tf_graph *g = tf_graph_new();
  tf_layers *l = tf_layers_new(g, 3);
  tf_output s[3], dense;
  tf_initializer c = tf_init_constant(2.5);
  build_var(g, l, &c, s, &dense);
  ck_assert_int_eq(tf_layers_num_vars(l), 3);
  ck_assert_int_eq(tf_layers_num_params(l), 21);
  const int64_t rows[3] = {3, 2, 2};
  for (int i = 0; i < 3; i++) {
    char want[32];
    snprintf(want, sizeof want, "w/part_%d", i);
    ck_assert_str_eq(tf_node_name(s[i].node), want);
    ck_assert_str_eq(tf_layers_var(l, i)->name, want);
    ck_assert_int_eq(tf_node_output_shape(s[i].node, 0)->dims[0], rows[i]);
    ck_assert_str_eq(tf_node_device(s[i].node), PS[i % 2]);
    ck_assert_str_eq(tf_node_device(tf_layers_var(l, i)->assign), PS[i % 2]);
    snprintf(want, sizeof want, "w/part_%d/Initializer/Fill", i);
    tf_node *fill = tf_graph_find(g, want);
    ck_assert_msg(fill != NULL, "no %s", want);
    ck_assert_str_eq(tf_node_device(fill), PS[i % 2]);
  }
  ck_assert_str_eq(tf_node_name(dense.node), "w/concat");
  ck_assert_str_eq(tf_node_device(dense.node), "");
  tf_tensor *out;
  lt_run_once(g, l, NULL, NULL, 0, &dense, &out, 1);
  tt_assert_shape(out, 2, 7, 3);
  for (int64_t i = 0; i < 21; i++) ck_assert(lt_at(out, i) == 2.5);
  tf_tensor_unref(out);
  tf_layers_free(l);
  tf_graph_free(g);
  /* Random: two identical builds agree; shards differ; |v| <= the limit
   * of the full [7, 3] shape. */
  tf_tensor *vals[2][3];
  for (int b = 0; b < 2; b++) {
    g = tf_graph_new();
    l = tf_layers_new(g, 3);
    tf_initializer gl = tf_init_glorot_uniform(0);
    build_var(g, l, &gl, s, &dense);
    lt_run_once(g, l, NULL, NULL, 0, s, vals[b], 3);
    tf_layers_free(l);
    tf_graph_free(g);
  }
  double limit = sqrt(6.0 / 10.0);
  for (int i = 0; i < 3; i++) {
    ck_assert(tf_tensor_equal(vals[0][i], vals[1][i]));
    for (int64_t k = 0; k < vals[0][i]->n; k++) {
      ck_assert(fabs(lt_at(vals[0][i], k)) <= limit);
    }
  }
  /* Rows 0..1 of shards 1 and 2 (same shape) must not repeat each other. */
  ck_assert(memcmp(vals[0][1]->data, vals[0][2]->data, vals[0][1]->nbytes) != 0);
  ck_assert(memcmp(vals[0][0]->data, vals[0][1]->data, vals[0][1]->nbytes) != 0);
  tt_free(vals[0], 3);
  tt_free(vals[1], 3);
}
END_TEST

/* An explicit op seed s draws shard i with op seed s + i: shards 1 and 2
 * of seed 5 equal shards 0 and 1 of seed 6 where the shapes agree. */
START_TEST(test_partitioned_explicit_seed) {
  tf_tensor *v[2][3];
  for (int b = 0; b < 2; b++) {
    tf_graph *g = tf_graph_new();
    tf_layers *l = tf_layers_new(g, 3);
    tf_output s[3], dense;
    tf_initializer tn = tf_init_truncated_normal(0, 1, 5 + b);
    build_var(g, l, &tn, s, &dense);
    lt_run_once(g, l, NULL, NULL, 0, s, v[b], 3);
    tf_layers_free(l);
    tf_graph_free(g);
  }
  /* seed 5 shard 2 ([2, 3], op seed 7) == seed 6 shard 1 ([2, 3], op seed 7). */
  ck_assert(tf_tensor_equal(v[0][2], v[1][1]));
  ck_assert(!tf_tensor_equal(v[0][1], v[0][2]));
  tt_free(v[0], 3);
  tt_free(v[1], 3);
}
END_TEST

/* ---- lookup values ------------------------------------------------------ */

/* Lookup of ids (values idv, n_ids of them, shape ids_shape) against the
 * float64 recomputation from the fetched shards; also checks the Gathers
 * are colocated with their shards and request their devices. */
static void check_lookup(int64_t total, int n, const char *strategy,
                         tf_dtype idt, tf_shape ids_shape, const int64_t *idv,
                         int n_ids) {
  fixture f;
  fixture_init(&f, total, 5, n, idt, ids_shape, strategy);
  bool div = strategy != NULL && strcmp(strategy, "div") == 0;
  int gathers = 0;
  for (int i = 0; i < tf_graph_num_nodes(f.g); i++) {
    tf_node *v = tf_graph_node(f.g, i);
    if (strcmp(tf_node_op(v), "Gather") != 0) continue;
    tf_node *shard = tf_node_input(v, 0).node;
    ck_assert_str_eq(tf_node_device(v), tf_node_device(shard));
    ck_assert_ptr_nonnull(tf_node_attr(v, "_class"));
    gathers++;
  }
  ck_assert_int_eq(gathers, n);
  tf_tensor *ids = tt_tensor_i(idt, ids_shape, idv);
  const char *fn[] = {"ids"};
  tf_output fetch[1 + MAXS];
  fetch[0] = f.out;
  for (int i = 0; i < n; i++) fetch[1 + i] = f.shards[i];
  tf_tensor *out[1 + MAXS];
  lt_run_once(f.g, f.l, fn, &ids, 1, fetch, out, 1 + n);
  ck_assert_int_eq(out[0]->shape.rank, ids_shape.rank + 1);
  for (int d = 0; d < ids_shape.rank; d++) {
    ck_assert_int_eq(out[0]->shape.dims[d], ids_shape.dims[d]);
  }
  ck_assert_int_eq(out[0]->shape.dims[ids_shape.rank], 5);
  for (int j = 0; j < n_ids; j++) {
    int s;
    int64_t r;
    locate(div, total, n, idv[j], &s, &r);
    for (int c = 0; c < 5; c++) {
      ck_assert_msg(lt_at(out[0], j * 5 + c) == lt_at(out[1 + s], r * 5 + c),
                    "%s id %lld col %d", strategy ? strategy : "(null)", (long long)idv[j], c);
    }
  }
  tt_free(out, 1 + n);
  tf_tensor_unref(ids);
  fixture_fini(&f);
}

START_TEST(test_lookup_mod_div) {
  const int64_t idv[8] = {0, 9, 3, 3, 10, 4, 0, 7};
  const char *strat[2] = {"mod", "div"};
  const tf_dtype idt[2] = {TF_INT32, TF_INT64};
  for (int s = 0; s < 2; s++) {
    for (int t = 0; t < 2; t++) {
      /* 11 rows over 3 shards: 4, 4, 3 (uneven); ids [2, 4], repeats. */
      check_lookup(11, 3, strat[s], idt[t], tf_shape_of(2, 2, 4), idv, 8);
      check_lookup(11, 3, strat[s], idt[t], tf_shape_of(1, 8), idv, 8);
      check_lookup(11, 4, strat[s], idt[t], tf_shape_of(0), idv + 1, 1);
    }
  }
  /* NULL strategy is "mod". */
  check_lookup(11, 2, NULL, TF_INT32, tf_shape_of(1, 8), idv, 8);
}
END_TEST

/* n == 1: one Gather named like the plain lookup, same values. */
START_TEST(test_single_shard) {
  tf_graph *g = tf_graph_new();
  tf_layers *l = tf_layers_new(g, 3);
  tf_status st;
  tf_output s, dense, out, plain;
  tf_initializer gl = tf_init_glorot_uniform(0);
  LT_OK(tf_layers_partitioned_variable(l, "t", tf_shape_of(2, 6, 2),
                                       TF_FLOAT32, &gl, true, 1, PS + 1, 1, &s,
                                       &dense, &st));
  tf_output ids = {tt_placeholder(g, "ids", TF_INT64, tf_shape_of(1, 4)), 0};
  LT_OK(tf_layer_sharded_embedding_lookup(l, &s, 1, ids, "div", NULL, &out,
                                          &st));
  ck_assert_str_eq(tf_node_op(out.node), "Gather");
  ck_assert_str_eq(tf_node_name(out.node), "embedding_lookup");
  ck_assert_str_eq(tf_node_device(out.node), PS[1]);
  LT_OK(tf_layer_embedding_lookup(l, s, ids, NULL, &plain, &st));
  tf_tensor *idt = tt_tensor_i(TF_INT64, tf_shape_of(1, 4),
                               (int64_t[]){5, 0, 5, 2});
  const char *fn[] = {"ids"};
  tf_tensor *o[2];
  lt_run_once(g, l, fn, &idt, 1, (tf_output[]){out, plain}, o, 2);
  ck_assert(tf_tensor_equal(o[0], o[1]));
  tt_free(o, 2);
  tf_tensor_unref(idt);
  tf_layers_free(l);
  tf_graph_free(g);
}
END_TEST

/* ---- gradients -------------------------------------------------------------- */

/* loss = sum(lookup * w) for a fed w of the lookup's shape. */
static tf_output weighted_sum(fixture *f, tf_tensor *w) {
  tf_graph *g = f->g;
  tf_tensor_ref(w); /* tt_const takes a reference; the caller keeps its own */
  tf_node *wn = tt_const(g, "wsum_w", w);
  tf_node *m = tt_node(g, "Mul", "wsum_mul", (tf_output[]){f->out, {wn, 0}}, 2,
                       NULL, 0);
  int32_t axes[TF_MAX_RANK];
  for (int d = 0; d < w->shape.rank; d++) axes[d] = d;
  tf_node *ax = tt_const(g, "wsum_axes", tf_tensor_vec_i32(w->shape.rank, axes));
  return (tf_output){tt_node(g, "Sum", "wsum", (tf_output[]){{m, 0}, {ax, 0}},
                             2, NULL, 0), 0};
}

/* The gradient of each shard is sparse, its indices are only rows the ids
 * read, and densified it equals both the float64 reference (sum of w over
 * the positions that read each row) and tf_gradients' dense result. */
static void check_grad(const char *strategy, tf_dtype idt) {
  const int64_t idv[6] = {4, 1, 4, 8, 0, 4};
  fixture f;
  fixture_init(&f, 9, 5, 3, idt, tf_shape_of(2, 2, 3), strategy);
  bool div = strcmp(strategy, "div") == 0;
  tf_tensor *w = tt_rand(TF_FLOAT64, tf_shape_of(3, 2, 3, 5), -1, 1);
  tf_output loss = weighted_sum(&f, w);
  tf_status st;
  tf_grad sg[3];
  tf_output dg[3];
  LT_OK(tf_gradients_sparse(f.g, &loss, 1, f.shards, 3, NULL, sg, &st));
  LT_OK(tf_gradients(f.g, &loss, 1, f.shards, 3, NULL, dg, &st));
  tf_output fetch[8];
  for (int i = 0; i < 3; i++) {
    ck_assert_msg(tf_grad_is_sparse(&sg[i]), "%s: shard %d's gradient was "
                  "densified", strategy, i);
    fetch[2 * i] = sg[i].values;
    fetch[2 * i + 1] = sg[i].indices;
  }
  fetch[6] = dg[0];
  fetch[7] = dg[2];
  tf_tensor *ids = tt_tensor_i(idt, tf_shape_of(2, 2, 3), idv);
  const char *fn[] = {"ids"};
  tf_tensor *out[8];
  lt_run_once(f.g, f.l, fn, &ids, 1, fetch, out, 8);
  double want[3][4 * 5] = {{0}}, got[3][4 * 5] = {{0}};
  bool read[3][4] = {{false}};
  for (int j = 0; j < 6; j++) {
    int s;
    int64_t r;
    locate(div, 9, 3, idv[j], &s, &r);
    read[s][r] = true;
    for (int c = 0; c < 5; c++) want[s][r * 5 + c] += lt_at(w, j * 5 + c);
  }
  for (int i = 0; i < 3; i++) {
    const tf_tensor *v = out[2 * i], *ix = out[2 * i + 1];
    ck_assert_int_eq(v->n, ix->n * 5);
    for (int64_t k = 0; k < ix->n; k++) {
      int64_t r = tf_tensor_get_i64(ix, k);
      ck_assert_msg(r >= 0 && r < 3 && read[i][r], "%s: shard %d's gradient "
                    "has row %lld, which no id read", strategy, i, (long long)r);
      for (int c = 0; c < 5; c++) got[i][r * 5 + c] += lt_at(v, k * 5 + c);
    }
    for (int k = 0; k < 15; k++) {
      ck_assert_msg(fabs(got[i][k] - want[i][k]) <= 1e-12, "%s shard %d elem "
                    "%d: %.17g vs %.17g", strategy, i, k, got[i][k], want[i][k]);
    }
  }
  for (int k = 0; k < 15; k++) {
    ck_assert(fabs(lt_at(out[6], k) - want[0][k]) <= 1e-12);
    ck_assert(fabs(lt_at(out[7], k) - want[2][k]) <= 1e-12);
  }
  tt_free(out, 8);
  tf_tensor_unref(ids);
  tf_tensor_unref(w);
  fixture_fini(&f);
}

START_TEST(test_gradient_sparse) {
  check_grad("mod", TF_INT32);
  check_grad("mod", TF_INT64);
  check_grad("div", TF_INT32);
  check_grad("div", TF_INT64);
}
END_TEST

/* Finite differences: y = Tanh(lookup(shards, ids)) with the shards as
 * float64 inputs [4, 3], [3, 3], [3, 3] (10 rows) and ids a constant with
 * repeats; tf_gradients (the sparse rows densified) against central
 * differences, for "mod" and "div". */
typedef struct fd_arg {
  const char *strategy;
  tf_dtype idt;
} fd_arg;

static tf_output fd_build(tf_graph *g, const tf_output *in, int n_in,
                          void *arg) {
  const fd_arg *a = arg;
  tf_layers *l = tf_layers_new(g, 0);
  tf_status st;
  const int64_t idv[7] = {9, 0, 4, 9, 3, 7, 0};
  tf_output ids = {tt_const(g, "fd_ids", tt_tensor_i(a->idt, tf_shape_of(1, 7),
                                                     idv)), 0};
  tf_output e;
  LT_OK(tf_layer_sharded_embedding_lookup(l, in, n_in, ids, a->strategy, NULL,
                                          &e, &st));
  tf_layers_free(l);
  return (tf_output){tt_node(g, "Tanh", "fd_y", &e, 1, NULL, 0), 0};
}

START_TEST(test_gradient_finite_differences) {
  const fd_arg args[3] = {{"mod", TF_INT32}, {"div", TF_INT64}, {"mod", TF_INT64}};
  for (int k = 0; k < 3; k++) {
    tf_tensor *in[3] = {tt_rand(TF_FLOAT64, tf_shape_of(2, 4, 3), -1, 1),
                        tt_rand(TF_FLOAT64, tf_shape_of(2, 3, 3), -1, 1),
                        tt_rand(TF_FLOAT64, tf_shape_of(2, 3, 3), -1, 1)};
    tt_grad_check(fd_build, (void *)&args[k], in, 3, NULL, 1e-7, 1e-6);
    tt_free(in, 3);
  }
}
END_TEST

/* ---- sparse updates --------------------------------------------------------- */

/* One step of kind (SGD lr 0.5 or Adagrad lr 0.5, initial accumulator 0.1)
 * on loss = sum(lookup * w): each shard's update is a ScatterSub /
 * SparseApplyAdagrad on that shard (a ref input, so colocated with it);
 * reading every shard in full before and after, the rows no id read are
 * bitwise unchanged and the others moved by the float64 prediction. */
static void check_step(tf_optimizer_kind kind, const char *strategy) {
  const int64_t idv[5] = {2, 9, 2, 5, 6};
  fixture f;
  fixture_init(&f, 10, 5, 3, TF_INT64, tf_shape_of(1, 5), strategy);
  bool div = strcmp(strategy, "div") == 0;
  tf_tensor *w = tt_rand(TF_FLOAT64, tf_shape_of(2, 5, 5), -1, 1);
  tf_output loss = weighted_sum(&f, w);
  tf_status st;
  tf_optimizer *o = tf_optimizer_new(kind, NULL);
  tf_optimizer_options opt = tf_optimizer_defaults(kind);
  opt.learning_rate = 0.5;
  tf_optimizer_free(o);
  o = tf_optimizer_new(kind, &opt);
  tf_node *train = tf_optimizer_minimize(o, f.g, loss, f.shards, 3,
                                         (tf_output){NULL, 0}, NULL, &st);
  ck_assert_msg(train != NULL, "%s", st.msg);
  const char *upd = kind == TF_OPT_ADAGRAD ? "SparseApplyAdagrad" : "ScatterSub";
  int n_upd = 0;
  for (int i = 0; i < tf_graph_num_nodes(f.g); i++) {
    tf_node *v = tf_graph_node(f.g, i);
    ck_assert_msg(strcmp(tf_node_op(v), kind == TF_OPT_ADAGRAD ? "ApplyAdagrad"
                                                               : "AssignSub"),
                  "a dense update '%s' was built", tf_node_name(v));
    if (strcmp(tf_node_op(v), upd) == 0) {
      tf_node *var = tf_node_input(v, 0).node;
      ck_assert_ptr_eq(var, f.shards[n_upd].node);
      n_upd++;
    }
  }
  ck_assert_int_eq(n_upd, 3);
  tf_session *s = lt_session(f.g, f.l);
  if (kind == TF_OPT_ADAGRAD) {
    tf_node *oi = tf_optimizer_init_op(o, NULL, &st);
    const char *t[] = {tf_node_name(oi)};
    ck_assert(tf_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, t, 1, NULL,
                             &st) == TF_OK);
  }
  tf_tensor *before[3], *after[3];
  lt_run(s, NULL, NULL, 0, f.shards, before, 3);
  tf_tensor *ids = tt_tensor_i(TF_INT64, tf_shape_of(1, 5), idv);
  const char *fn[] = {"ids"}, *tn[] = {tf_node_name(train)};
  ck_assert_msg(tf_session_run(s, NULL, fn, &ids, 1, NULL, NULL, 0, tn, 1,
                               NULL, &st) == TF_OK, "%s", st.msg);
  lt_run(s, NULL, NULL, 0, f.shards, after, 3);
  double grad[3][4 * 5] = {{0}};
  bool read[3][4] = {{false}};
  for (int j = 0; j < 5; j++) {
    int sh;
    int64_t r;
    locate(div, 10, 3, idv[j], &sh, &r);
    read[sh][r] = true;
    for (int c = 0; c < 5; c++) grad[sh][r * 5 + c] += lt_at(w, j * 5 + c);
  }
  int changed = 0;
  for (int i = 0; i < 3; i++) {
    for (int64_t k = 0; k < before[i]->n; k++) {
      double b = lt_at(before[i], k), a = lt_at(after[i], k);
      if (!read[i][k / 5]) {
        ck_assert_msg(memcmp(&a, &b, sizeof a) == 0, "%s: shard %d element "
                      "%lld of an unread row changed", upd, i, (long long)k);
        continue;
      }
      double g = grad[i][k], want = b - 0.5 * g;
      if (kind == TF_OPT_ADAGRAD) want = b - 0.5 * g / sqrt(0.1 + g * g);
      ck_assert_msg(fabs(a - want) <= 1e-12, "%s: shard %d element %lld: "
                    "%.17g, want %.17g", upd, i, (long long)k, a, want);
      changed += a != b;
    }
  }
  ck_assert_int_eq(changed, 4 * 5); /* 4 distinct rows, 5 columns */
  tt_free(before, 3);
  tt_free(after, 3);
  tf_tensor_unref(ids);
  tf_tensor_unref(w);
  tf_session_free(s);
  tf_optimizer_free(o);
  fixture_fini(&f);
}

START_TEST(test_sparse_sgd_step) {
  check_step(TF_OPT_GRADIENT_DESCENT, "mod");
  check_step(TF_OPT_GRADIENT_DESCENT, "div");
}
END_TEST

START_TEST(test_sparse_adagrad_step) {
  check_step(TF_OPT_ADAGRAD, "mod");
  check_step(TF_OPT_ADAGRAD, "div");
}
END_TEST

/* ---- a dense layer on a partitioned kernel --------------------------------- */

/* y = x @ kernel + bias, loss = mean((y - t)^2), Adam for 5 steps; kernel
 * [6, 4] is partitioned over the 2 ps tasks (3 + 3 rows) in one graph and
 * a plain variable in another, both started from the same values (the
 * partitioned one's Glorot draw, fed into the plain one's Assign): the
 * kernels and biases end equal to 1e-12. */
typedef struct dense_net {
  tf_graph *g;
  tf_layers *l;
  tf_output kernel[2], dense, bias, loss;
  tf_node *train, *opt_init;
  tf_optimizer *o;
} dense_net;

static void dense_build(dense_net *d, bool partitioned) {
  tf_status st;
  d->g = tf_graph_new();
  d->l = tf_layers_new(d->g, 11);
  tf_initializer gl = tf_init_glorot_uniform(0), z = tf_init_zeros();
  int nv;
  if (partitioned) {
    LT_OK(tf_layers_partitioned_variable(d->l, "kernel", tf_shape_of(2, 6, 4),
                                         TF_FLOAT64, &gl, true, 2, PS, 2,
                                         d->kernel, &d->dense, &st));
    nv = 2;
  } else {
    LT_OK(tf_layers_variable(d->l, "kernel", tf_shape_of(2, 6, 4), TF_FLOAT64,
                             &z, true, &d->kernel[0], &st));
    d->dense = d->kernel[0];
    nv = 1;
  }
  LT_OK(tf_layers_variable(d->l, "bias", tf_shape_of(1, 4), TF_FLOAT64, &z,
                           true, &d->bias, &st));
  tf_node *x = tt_placeholder(d->g, "x", TF_FLOAT64, tf_shape_of(2, 8, 6));
  tf_node *t = tt_placeholder(d->g, "t", TF_FLOAT64, tf_shape_of(2, 8, 4));
  tf_node *mm = tt_node(d->g, "MatMul", "mm", (tf_output[]){{x, 0}, d->dense},
                        2, NULL, 0);
  tf_node *y = tt_node(d->g, "BiasAdd", "y", (tf_output[]){{mm, 0}, d->bias},
                       2, NULL, 0);
  tf_node *e = tt_node(d->g, "Sub", "e", (tf_output[]){{y, 0}, {t, 0}}, 2,
                       NULL, 0);
  tf_node *sq = tt_node(d->g, "Square", "sq", (tf_output[]){{e, 0}}, 1, NULL, 0);
  tf_node *ax = tt_const(d->g, "axes", tf_tensor_vec_i32(2, (int32_t[]){0, 1}));
  d->loss = (tf_output){tt_node(d->g, "Mean", "loss",
                                (tf_output[]){{sq, 0}, {ax, 0}}, 2, NULL, 0), 0};
  d->o = tf_optimizer_adam(0.05);
  tf_output vars[3] = {d->kernel[0], d->kernel[1], d->bias};
  if (!partitioned) vars[1] = d->bias;
  d->train = tf_optimizer_minimize(d->o, d->g, d->loss, vars, nv + 1,
                                   (tf_output){NULL, 0}, NULL, &st);
  ck_assert_msg(d->train != NULL, "%s", st.msg);
  d->opt_init = tf_optimizer_init_op(d->o, NULL, &st);
  ck_assert_msg(d->opt_init != NULL, "%s", st.msg);
}

static void run_targets(tf_session *s, const char *const *fn, tf_tensor **fv,
                        int nf, tf_node *target) {
  tf_status st;
  const char *t[] = {tf_node_name(target)};
  ck_assert_msg(tf_session_run(s, NULL, fn, fv, nf, NULL, NULL, 0, t, 1, NULL,
                               &st) == TF_OK, "%s: %s", t[0], st.msg);
}

START_TEST(test_partitioned_dense_trains_like_plain) {
  dense_net p, u;
  dense_build(&p, true);
  dense_build(&u, false);
  tf_session *sp = lt_session(p.g, p.l), *su = lt_session(u.g, u.l);
  run_targets(sp, NULL, NULL, 0, p.opt_init);
  run_targets(su, NULL, NULL, 0, u.opt_init);
  tf_tensor *k0;
  lt_run(sp, NULL, NULL, 0, &p.dense, &k0, 1);
  /* Start the plain kernel from the partitioned draw. */
  tf_node *kv = tt_placeholder(u.g, "k0", TF_FLOAT64, tf_shape_of(2, 6, 4));
  tf_node *set = tt_node(u.g, "Assign", "set_k0",
                         (tf_output[]){u.kernel[0], {kv, 0}}, 2, NULL, 0);
  const char *kn[] = {"k0"};
  run_targets(su, kn, &k0, 1, set);
  tf_tensor *x = tt_rand(TF_FLOAT64, tf_shape_of(2, 8, 6), -1, 1);
  tf_tensor *t = tt_rand(TF_FLOAT64, tf_shape_of(2, 8, 4), -1, 1);
  const char *fn[] = {"x", "t"};
  tf_tensor *fv[] = {x, t};
  for (int step = 0; step < 5; step++) {
    run_targets(sp, fn, fv, 2, p.train);
    run_targets(su, fn, fv, 2, u.train);
  }
  tf_tensor *a[2], *b[2];
  lt_run(sp, NULL, NULL, 0, (tf_output[]){p.dense, p.bias}, a, 2);
  lt_run(su, NULL, NULL, 0, (tf_output[]){u.dense, u.bias}, b, 2);
  ck_assert(!tf_tensor_equal(a[0], k0)); /* it trained */
  tt_assert_close(a[0], b[0], 1e-12, 0);
  tt_assert_close(a[1], b[1], 1e-12, 0);
  tt_free(a, 2);
  tt_free(b, 2);
  tf_tensor_unref(k0);
  tf_tensor_unref(x);
  tf_tensor_unref(t);
  tf_session_free(sp);
  tf_session_free(su);
  dense_net *nets[2] = {&p, &u};
  for (int i = 0; i < 2; i++) {
    tf_optimizer_free(nets[i]->o);
    tf_layers_free(nets[i]->l);
    tf_graph_free(nets[i]->g);
  }
}
END_TEST

/* ---- errors -------------------------------------------------------------- */

/* An id outside the table fails the Run with INVALID_ARGUMENT naming the
 * node that met it: a shard's Gather ("mod") or the DynamicPartition
 * ("div"); negative ids too. */
static void check_bad_id(const char *strategy, int64_t id, const char *node) {
  fixture f;
  fixture_init(&f, 10, 5, 3, TF_INT32, tf_shape_of(1, 3), strategy);
  tf_session *s = lt_session(f.g, f.l);
  tf_tensor *ids = tt_tensor_i(TF_INT32, tf_shape_of(1, 3),
                               (int64_t[]){1, id, 2});
  const char *fn[] = {"ids"};
  char name[256];
  const char *fetch[] = {lt_name(f.out, name, sizeof name)};
  tf_tensor *out = NULL;
  tf_status st;
  tf_code rc = tf_session_run(s, NULL, fn, &ids, 1, fetch, &out, 1, NULL, 0,
                              NULL, &st);
  ck_assert_msg(rc == TF_INVALID_ARGUMENT, "%s id %lld: %s: %s", strategy,
                (long long)id, tf_code_name(rc), st.msg);
  ck_assert_msg(strstr(st.msg, node) != NULL && strstr(st.msg, "is not in") != NULL,
                "%s id %lld: '%s' lacks '%s'", strategy, (long long)id, st.msg,
                node);
  tf_tensor_unref(ids);
  tf_session_free(s);
  fixture_fini(&f);
}

START_TEST(test_out_of_range_ids) {
  check_bad_id("mod", 10, "embedding_lookup/Gather_1' (Gather)");
  check_bad_id("mod", 12, "embedding_lookup/Gather' (Gather)");
  check_bad_id("mod", -2, "(Gather)");
  /* Both DynamicPartitions (ids and positions) meet it; either may fail
   * first. */
  check_bad_id("div", 10, "(DynamicPartition): partitions[1] = 3");
  check_bad_id("div", -1, "(DynamicPartition): partitions[1] = -1");
}
END_TEST

/* Bad arguments: INVALID_ARGUMENT (ALREADY_EXISTS for a taken name)
 * naming the builder and the problem; graph and context unchanged. */
START_TEST(test_build_errors) {
  tf_graph *g = tf_graph_new();
  tf_layers *l = tf_layers_new(g, 1);
  tf_status st;
  tf_output s[3], d, y, odd[2];
  LT_OK(tf_layers_partitioned_variable(l, "t", tf_shape_of(2, 7, 2),
                                       TF_FLOAT32, NULL, true, 3, NULL, 0, s,
                                       &d, &st));
  LT_OK(tf_layers_variable(l, "a", tf_shape_of(2, 2, 2), TF_FLOAT32, NULL, true,
                           &odd[0], &st));
  LT_OK(tf_layers_variable(l, "b", tf_shape_of(2, 5, 3), TF_FLOAT32, NULL, true,
                           &odd[1], &st));
  tf_output ids = {tt_placeholder(g, "ids", TF_INT32, tf_shape_of(1, 2)), 0};
  tf_output fids = {tt_placeholder(g, "fids", TF_FLOAT32, tf_shape_of(1, 2)), 0};
  tf_output f64 = {tt_placeholder(g, "f64", TF_FLOAT64, tf_shape_of(2, 3, 2)), 0};
  int n = tf_graph_num_nodes(g), nv = tf_layers_num_vars(l);
#define CASE(call, code, text)                                                 \
  do {                                                                         \
    tf_code rc_ = (call);                                                      \
    ck_assert_msg(rc_ == (code), "%s: %s", #call, tf_code_name(rc_));           \
    ck_assert_msg(strstr(st.msg, text) != NULL, "'%s' lacks '%s'", st.msg,      \
                  text);                                                       \
  } while (0)
  tf_output ps[3];
  CASE(tf_layers_partitioned_variable(l, "t", tf_shape_of(2, 7, 2), TF_FLOAT32,
                                      NULL, true, 3, NULL, 0, ps, NULL, &st),
       TF_ALREADY_EXISTS, "'t/part_0'");
  CASE(tf_layers_partitioned_variable(l, "u", tf_shape_of(2, 2, 2), TF_FLOAT32,
                                      NULL, true, 3, NULL, 0, ps, NULL, &st),
       TF_INVALID_ARGUMENT, "num_shards 3 must be in [1, 2]");
  CASE(tf_layers_partitioned_variable(l, "u", tf_shape_of(0), TF_FLOAT32, NULL,
                                      true, 1, NULL, 0, ps, NULL, &st),
       TF_INVALID_ARGUMENT, "of rank >= 1");
  CASE(tf_layers_partitioned_variable(l, "u", tf_shape_of(2, -1, 2),
                                      TF_FLOAT32, NULL, true, 1, NULL, 0, ps,
                                      NULL, &st),
       TF_INVALID_ARGUMENT, "must be fully defined");
  const char *bad_dev[] = {"ps0"};
  CASE(tf_layers_partitioned_variable(l, "u", tf_shape_of(2, 4, 2), TF_FLOAT32,
                                      NULL, true, 2, bad_dev, 1, ps, NULL, &st),
       TF_INVALID_ARGUMENT, "devices[0] 'ps0' is not a device name");
  tf_initializer he = tf_init_he_normal(0);
  CASE(tf_layers_partitioned_variable(l, "u", tf_shape_of(2, 4, 2), TF_INT32,
                                      &he, true, 2, NULL, 0, ps, NULL, &st),
       TF_INVALID_ARGUMENT, "partitioned variable 'u': initializer");
  CASE(tf_layer_sharded_embedding_lookup(l, s, 3, ids, "hash", NULL, &y, &st),
       TF_INVALID_ARGUMENT, "strategy 'hash' is not supported");
  CASE(tf_layer_sharded_embedding_lookup(l, s, 0, ids, NULL, NULL, &y, &st),
       TF_INVALID_ARGUMENT, "needs at least one shard");
  CASE(tf_layer_sharded_embedding_lookup(l, s, 3, fids, NULL, NULL, &y, &st),
       TF_INVALID_ARGUMENT, "ids must be int32 or int64, got float32");
  tf_output mixed[2] = {s[0], f64};
  CASE(tf_layer_sharded_embedding_lookup(l, mixed, 2, ids, NULL, NULL, &y, &st),
       TF_INVALID_ARGUMENT, "shard 1 'f64'");
  CASE(tf_layer_sharded_embedding_lookup(l, odd, 2, ids, NULL, NULL, &y, &st),
       TF_INVALID_ARGUMENT, "equal row dims");
  tf_output rev[3] = {s[2], s[1], s[0]};
  CASE(tf_layer_sharded_embedding_lookup(l, rev, 3, ids, "div", NULL, &y, &st),
       TF_INVALID_ARGUMENT, "shard 0 't/part_2' has 2");
#undef CASE
  ck_assert_int_eq(tf_graph_num_nodes(g), n);
  ck_assert_int_eq(tf_layers_num_vars(l), nv);
  /* After the errors, the names are free again for good builds. */
  LT_OK(tf_layers_partitioned_variable(l, "u", tf_shape_of(2, 4, 2), TF_FLOAT32,
                                       NULL, true, 2, PS, 2, ps, NULL, &st));
  ck_assert_str_eq(tf_node_name(ps[1].node), "u/part_1");
  LT_OK(tf_layer_sharded_embedding_lookup(l, rev, 3, ids, "mod", NULL, &y, &st));
  ck_assert_str_eq(tf_node_name(y.node), "embedding_lookup/stitch");
  tf_layers_free(l);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("layers_shard");
  TCase *tc = tcase_create("layers_shard");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_shard_rows);
  tcase_add_test(tc, test_partitioned_variable);
  tcase_add_test(tc, test_partitioned_explicit_seed);
  tcase_add_test(tc, test_lookup_mod_div);
  tcase_add_test(tc, test_single_shard);
  tcase_add_test(tc, test_gradient_sparse);
  tcase_add_test(tc, test_gradient_finite_differences);
  tcase_add_test(tc, test_sparse_sgd_step);
  tcase_add_test(tc, test_sparse_adagrad_step);
  tcase_add_test(tc, test_partitioned_dense_trains_like_plain);
  tcase_add_test(tc, test_out_of_range_ids);
  tcase_add_test(tc, test_build_errors);
  suite_add_tcase(s, tc);
  return s;
}
