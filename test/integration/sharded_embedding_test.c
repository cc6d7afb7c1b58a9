/* sharded_embedding_test.c: a sharded embedding trained through a remote
 * session on real daemons (1 master, 2 ps tasks, 1 worker).
 *
 * The table "emb" [1000, 16] (float32) is partitioned over the two ps
 * tasks ("mod": ids 0, 2, ... on ps 0, 1, 3, ... on ps 1); the lookup's
 * Gathers are colocated with the shards, the consumer (Tanh, Mul by fed
 * weights, Sum) requests the worker, and SGD updates each shard with a
 * ScatterSub that takes the shard by reference. The placement the master
 * computes (tf_place with its options, run here on the same graph and the
 * cluster's devices) puts each shard, its Gather, its ScatterSub and every
 * other consumer of it on its ps task (so no whole shard leaves its ps)
 * and the loss on the worker. Reading both full shards through the
 * remote session before and after one training step: rows no id read are
 * bitwise unchanged, and the read rows moved by what a float64
 * recomputation from the "before" values predicts (|err| <= 1e-6 +
 * 1e-5 |want|, float32 arithmetic on values of magnitude < 1). An id past
 * the table fails the Run with INVALID_ARGUMENT naming the shard's Gather,
 * and leaves both shards bitwise as they were. The codebase exposes no
 * per-step byte counter, so the bytes moved are not measured here. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/runtime/placement.h"
#include "test/integration/harness.h"
#include "test/unit/testutil.h"
#include "tf/layers.h"
#include "tf/session.h"
#include "tf/train.h"

#define ROWS 1000
#define DIM 16
#define N_IDS 48
#define LR 0.5

static const char *const PS[] = {"/job:ps/task:0", "/job:ps/task:1"};
static const char *const WORKER = "/job:worker/task:0";

typedef struct net {
  tf_graph *g;
  tf_layers *l;
  tf_output shards[2], lookup, loss;
  tf_node *init, *train;
  tf_optimizer *o;
} net;

static tf_node *on_worker(th_cluster *c, tf_graph *g, const char *op,
                          const char *name, const tf_output *in, int n_in) {
  tf_status st;
  tf_node_builder *b = tf_node_begin(g, op, name);
  for (int i = 0; i < n_in; i++) tf_node_add_input(b, in[i]);
  tf_node_set_device(b, WORKER);
  tf_node *n = tf_node_finish(b, &st);
  TH_REQUIRE(c, n != NULL, "%s: %s", name, st.msg);
  return n;
}

static void build(th_cluster *c, net *n) {
  tf_status st;
  n->g = tf_graph_new();
  n->l = tf_layers_new(n->g, 21);
  tf_initializer init = tf_init_glorot_uniform(0);
  TH_REQUIRE(c, tf_layers_partitioned_variable(
                    n->l, "emb", tf_shape_of(2, ROWS, DIM), TF_FLOAT32, &init,
                    true, 2, PS, 2, n->shards, NULL, &st) == TF_OK,
             "partitioned variable: %s", st.msg);
  tf_output ids = {tt_placeholder(n->g, "ids", TF_INT64, tf_shape_of(1, N_IDS)), 0};
  tf_output w = {tt_placeholder(n->g, "w", TF_FLOAT32,
                                tf_shape_of(2, N_IDS, DIM)), 0};
  TH_REQUIRE(c, tf_layer_sharded_embedding_lookup(n->l, n->shards, 2, ids, "mod",
                                                  NULL, &n->lookup, &st) == TF_OK,
             "lookup: %s", st.msg);
  tf_node *t = on_worker(c, n->g, "Tanh", "act", &n->lookup, 1);
  tf_output mw[2] = {{t, 0}, w};
  tf_node *m = on_worker(c, n->g, "Mul", "weighted", mw, 2);
  tf_node *ax = tt_const(n->g, "axes", tf_tensor_vec_i32(2, (int32_t[]){0, 1}));
  tf_output sa[2] = {{m, 0}, {ax, 0}};
  n->loss = (tf_output){on_worker(c, n->g, "Sum", "loss", sa, 2), 0};
  n->init = tf_layers_init_op(n->l, NULL, &st);
  TH_REQUIRE(c, n->init != NULL, "init: %s", st.msg);
  n->o = tf_optimizer_gradient_descent(LR);
  n->train = tf_optimizer_minimize(n->o, n->g, n->loss, n->shards, 2,
                                   (tf_output){NULL, 0}, "train", &st);
  TH_REQUIRE(c, n->train != NULL, "minimize: %s", st.msg);
}

/* The master's placement of the graph on the cluster's devices: each
 * shard, every node colocated with it (its Gather, Assign and ScatterSub)
 * on its ps task; the loss on the worker. */
static void check_placement(th_cluster *c, const net *n) {
  tf_place_device devs[3] = {
      {"/job:ps/replica:0/task:0/device:CPU:0", "CPU"},
      {"/job:ps/replica:0/task:1/device:CPU:0", "CPU"},
      {"/job:worker/replica:0/task:0/device:CPU:0", "CPU"}};
  tf_place_opts po = {.default_job = "worker", .ps_job = "ps"};
  int nn = tf_graph_num_nodes(n->g);
  int *at = calloc((size_t)nn, sizeof *at);
  tf_status st;
  TH_REQUIRE(c, tf_place(n->g, devs, 3, &po, at, &st) == TF_OK, "place: %s",
             st.msg);
  int gathers = 0, updates = 0;
  for (int i = 0; i < nn; i++) {
    tf_node *v = tf_graph_node(n->g, i);
    const char *op = tf_node_op(v);
    bool g = strcmp(op, "Gather") == 0, u = strcmp(op, "ScatterSub") == 0;
    if (!g && !u) continue;
    tf_node *var = tf_node_input(v, 0).node;
    int s = var == n->shards[0].node ? 0 : var == n->shards[1].node ? 1 : -1;
    if (g && s < 0) continue; /* the gradient's Gathers */
    TH_REQUIRE(c, s >= 0, "%s '%s' updates no shard", op, tf_node_name(v));
    TH_REQUIRE(c, at[i] == s && at[tf_node_id(var)] == s,
               "%s '%s' on %s, its shard on %s (want ps task %d)", op,
               tf_node_name(v), devs[at[i]].name, devs[at[tf_node_id(var)]].name, s);
    gathers += g;
    updates += u;
  }
  TH_REQUIRE(c, gathers == 2 && updates == 2, "%d Gathers, %d ScatterSubs",
             gathers, updates);
  /* Nothing reads a whole shard off its ps (a Shape of it for the sparse
   * gradient's dense_shape would): every consumer of a shard is on it. */
  for (int i = 0; i < nn; i++) {
    tf_node *v = tf_graph_node(n->g, i);
    for (int k = 0; k < tf_node_num_inputs(v); k++) {
      tf_node *in = tf_node_input(v, k).node;
      for (int s = 0; s < 2; s++) {
        TH_REQUIRE(c, in != n->shards[s].node || at[i] == s, "'%s' (%s) reads "
                   "shard %d from %s", tf_node_name(v), tf_node_op(v), s,
                   devs[at[i]].name);
      }
    }
  }
  TH_REQUIRE(c, at[tf_node_id(n->loss.node)] == 2, "loss on %s",
             devs[at[tf_node_id(n->loss.node)]].name);
  free(at);
}

/* Both full shards, read through the session. */
static void read_shards(th_cluster *c, tf_session *s, tf_tensor **out) {
  const char *f[] = {"emb/part_0:0", "emb/part_1:0"};
  tf_run_options ro = {.timeout_ms = 20000};
  tf_status st;
  TH_REQUIRE(c, tf_session_run(s, &ro, NULL, NULL, 0, f, out, 2, NULL, 0, NULL,
                               &st) == TF_OK, "read shards: %s", st.msg);
  for (int i = 0; i < 2; i++) {
    TH_REQUIRE(c, out[i]->shape.rank == 2 && out[i]->shape.dims[0] == ROWS / 2 &&
                      out[i]->shape.dims[1] == DIM, "shard %d shape", i);
  }
}

/* One step: feeds ids and w, runs "train", fetches the lookup. */
static tf_code step(tf_session *s, const net *n, tf_tensor *ids, tf_tensor *w,
                    tf_tensor **lookup, tf_status *st) {
  const char *fn[] = {"ids", "w"}, *tn[] = {"train"};
  tf_tensor *fv[] = {ids, w};
  char name[256];
  snprintf(name, sizeof name, "%s:0", tf_node_name(n->lookup.node));
  const char *fetch[] = {name};
  tf_run_options ro = {.timeout_ms = 20000};
  return tf_session_run(s, &ro, fn, fv, 2, fetch, lookup, 1, tn, 1, NULL, st);
}

/* after == before - LR * grad on the read rows (grad from a float64
 * recomputation: sum over the ids of w * (1 - tanh(row)^2)), bitwise equal
 * elsewhere; the fetched lookup equals the "before" rows. */
static void check_update(th_cluster *c, const int64_t *idv, const tf_tensor *w,
                         tf_tensor *const *before, tf_tensor *const *after,
                         const tf_tensor *lookup) {
  double *grad = calloc(ROWS * DIM, sizeof *grad);
  bool *read = calloc(ROWS, sizeof *read);
  const float *wv = w->data, *lv = lookup->data;
  for (int j = 0; j < N_IDS; j++) {
    int64_t id = idv[j];
    const float *row = (const float *)before[id % 2]->data + (id / 2) * DIM;
    read[id] = true;
    for (int k = 0; k < DIM; k++) {
      TH_REQUIRE(c, lv[j * DIM + k] == row[k], "lookup of id %lld col %d",
                 (long long)id, k);
      double t = tanh((double)row[k]);
      grad[id * DIM + k] += (double)wv[j * DIM + k] * (1 - t * t);
    }
  }
  int changed_rows = 0;
  for (int64_t id = 0; id < ROWS; id++) {
    const float *b = (const float *)before[id % 2]->data + (id / 2) * DIM;
    const float *a = (const float *)after[id % 2]->data + (id / 2) * DIM;
    if (!read[id]) {
      TH_REQUIRE(c, memcmp(a, b, DIM * sizeof *a) == 0, "row %lld (shard %d "
                 "row %lld) was not read but changed", (long long)id,
                 (int)(id % 2), (long long)(id / 2));
      continue;
    }
    changed_rows++;
    for (int k = 0; k < DIM; k++) {
      double want = b[k] - LR * grad[id * DIM + k];
      TH_REQUIRE(c, fabs(a[k] - want) <= 1e-6 + 1e-5 * fabs(want),
                 "row %lld col %d: %.9g, want %.9g (before %.9g)",
                 (long long)id, k, a[k], want, b[k]);
    }
  }
  int distinct = 0;
  for (int64_t id = 0; id < ROWS; id++) distinct += read[id];
  TH_REQUIRE(c, changed_rows == distinct && distinct > N_IDS / 2,
             "%d rows changed, %d distinct ids", changed_rows, distinct);
  free(grad);
  free(read);
}

static tf_tensor *random_ids(int64_t *idv) {
  for (int j = 0; j < N_IDS; j++) {
    idv[j] = j % 8 == 7 ? idv[j - 3] : (int64_t)(tt_rand_u64() % ROWS);
  }
  idv[0] = 0;        /* both ends of the table */
  idv[1] = ROWS - 1;
  return tt_tensor_i(TF_INT64, tf_shape_of(1, N_IDS), idv);
}

START_TEST(test_sharded_embedding_step) {
  th_opts o = th_default_opts();
  o.n_ps = 2;
  o.n_workers = 1;
  th_cluster *c = th_cluster_new(&o);
  TH_REQUIRE(c, th_start_all(c, 10000), "cluster start");
  net n;
  build(c, &n);
  check_placement(c, &n);
  th_task *master = th_task_get(c, "master", 0);
  tf_status st;
  tf_session_options so = {.target = master->url};
  tf_session *s = tf_session_new(n.g, &so, &st);
  TH_REQUIRE(c, s != NULL, "remote session: %s", st.msg);
  const char *tn[] = {tf_node_name(n.init)};
  tf_run_options ro = {.timeout_ms = 20000};
  TH_REQUIRE(c, tf_session_run(s, &ro, NULL, NULL, 0, NULL, NULL, 0, tn, 1, NULL,
                               &st) == TF_OK, "init: %s", st.msg);
  int64_t idv[N_IDS];
  tf_tensor *ids = random_ids(idv);
  tf_tensor *w = tt_rand(TF_FLOAT32, tf_shape_of(2, N_IDS, DIM), -1, 1);
  tf_tensor *before[2], *after[2], *lookup = NULL;
  read_shards(c, s, before);
  TH_REQUIRE(c, step(s, &n, ids, w, &lookup, &st) == TF_OK, "step: %s", st.msg);
  read_shards(c, s, after);
  check_update(c, idv, w, before, after, lookup);
  tf_tensor_unref(lookup);
  /* An id past the table: the shard's Gather names it; nothing changes. */
  int64_t bad[N_IDS];
  memcpy(bad, idv, sizeof bad);
  bad[5] = ROWS + 1; /* shard 1, row 500 of 500 */
  tf_tensor *bad_ids = tt_tensor_i(TF_INT64, tf_shape_of(1, N_IDS), bad);
  lookup = NULL;
  tf_code rc = step(s, &n, bad_ids, w, &lookup, &st);
  TH_REQUIRE(c, rc == TF_INVALID_ARGUMENT && strstr(st.msg, "embedding_lookup/"
                                                    "Gather_1' (Gather)") &&
                    strstr(st.msg, "= 500 is not in [0, 500)"),
             "bad id: %s: %s", tf_code_name(rc), st.msg);
  tf_tensor *again[2];
  read_shards(c, s, again);
  for (int i = 0; i < 2; i++) {
    TH_REQUIRE(c, memcmp(again[i]->data, after[i]->data, after[i]->nbytes) == 0,
               "shard %d changed in a failed step", i);
  }
  tt_free(again, 2);
  tt_free(before, 2);
  tt_free(after, 2);
  tf_tensor_unref(bad_ids);
  tf_tensor_unref(ids);
  tf_tensor_unref(w);
  TH_REQUIRE(c, tf_session_close(s, &st) == TF_OK, "close: %s", st.msg);
  tf_session_free(s);
  tf_optimizer_free(n.o);
  tf_layers_free(n.l);
  tf_graph_free(n.g);
  th_cluster_free(c);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("sharded_embedding");
  TCase *tc = tcase_create("daemons");
  tcase_set_timeout(tc, 90);
  tcase_add_test(tc, test_sharded_embedding_step);
  suite_add_tcase(s, tc);
  return s;
}
