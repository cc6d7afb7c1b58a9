/* job_graph_file_test.c: a job's graph built from a graph file
 * (job_graph_file.c): the file's nodes with state are imported once and
 * shared, the rest once per worker under replica_<i>/ with the images and
 * labels placeholders rewired to that worker's pipeline (pinned to the
 * worker) and once under eval/; variables spread over the ps tasks with
 * their updates beside them; a file that lacks a named node, names a
 * non-placeholder as images, or a sync job over 2 workers are errors
 * naming what is wrong. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/runtime/job_graph.h"
#include "test/unit/testutil.h"
#include "tf/layers.h"
#include "tf/serialize.h"
#include "tf/train.h"

static const char *const workers[] = {"/job:worker/replica:0/task:0/device:CPU:0",
                                      "/job:worker/replica:0/task:1/device:CPU:0"};
static const char *const ps[] = {"/job:ps/replica:0/task:0/device:CPU:0",
                                 "/job:ps/replica:0/task:1/device:CPU:0"};

static char dir[64];

/* An IDX file of n records of dims (rank 2 for images, 0 for labels). */
static void write_idx(const char *name, int n, int rank) {
  char path[128];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  unsigned char head[4] = {0, 0, 0x08, (unsigned char)(rank + 1)};
  fwrite(head, 1, 4, f);
  unsigned char be[4] = {0, 0, 0, (unsigned char)n};
  fwrite(be, 1, 4, f);
  for (int d = 0; d < rank; d++) {
    unsigned char four[4] = {0, 0, 0, 2};
    fwrite(four, 1, 4, f);
  }
  int per = rank ? 4 : 1;
  for (int i = 0; i < n * per; i++) fputc(i % 3, f);
  fclose(f);
}

/* A model file: images [n, 4] float32, labels [n] int32, dense 3, loss,
 * accuracy, SGD; the names of its loss and accuracy. */
static void save_model(const char *path, char *loss, char *acc) {
  tf_status st;
  tf_graph *g = tf_graph_new();
  tf_layers *l = tf_layers_new(g, 1);
  tf_node_builder *b = tf_node_begin(g, "Placeholder", "images");
  tf_node_set_attr(b, "dtype", tf_attr_type_v(TF_FLOAT32));
  tf_node_set_attr(b, "shape", tf_attr_shape(tf_shape_of(2, -1, 4)));
  tf_output x = {tf_node_finish(b, &st), 0};
  b = tf_node_begin(g, "Placeholder", "labels");
  tf_node_set_attr(b, "dtype", tf_attr_type_v(TF_INT32));
  tf_node_set_attr(b, "shape", tf_attr_shape(tf_shape_of(1, -1)));
  tf_output y = {tf_node_finish(b, &st), 0};
  tf_output logits, lo, ac, vars[4];
  ck_assert(tf_layer_dense(l, x, 3, TF_ACT_NONE, true, NULL, NULL, NULL, &logits, &st) ==
            TF_OK);
  ck_assert(tf_layer_sparse_softmax_cross_entropy(l, logits, y, "loss", &lo, &st) == TF_OK);
  ck_assert(tf_layer_accuracy(l, logits, y, "accuracy", &ac, &st) == TF_OK);
  int nv = tf_layers_trainable(l, vars, 4);
  tf_optimizer *opt = tf_optimizer_gradient_descent(0.1);
  ck_assert(tf_optimizer_minimize(opt, g, lo, vars, nv, (tf_output){NULL, 0}, "train",
                                  &st) != NULL);
  ck_assert(tf_global_variables_initializer(g, "init", &st) != NULL);
  strcpy(loss, tf_node_name(lo.node));
  strcpy(acc, tf_node_name(ac.node));
  ck_assert_msg(tf_graph_save(g, path, &st) == TF_OK, "%s", st.msg);
  tf_optimizer_free(opt);
  tf_layers_free(l);
  tf_graph_free(g);
}

static tf_job_spec *graph_spec(const char *model, const char *train, const char *images,
                               const char *loss, const char *acc, const char *mode) {
  char text[2048];
  snprintf(text, sizeof text,
           "name: g\n"
           "graph: {file: %s, train: %s, loss: %s, metrics: [%s], init: init,\n"
           "        images: %s, labels: labels, input: {shape: [4], dtype: float32}}\n"
           "input:\n  format: idx\n"
           "  train: {images: %s/i.idx, labels: %s/l.idx}\n"
           "  test: {images: %s/i.idx, labels: %s/l.idx}\n"
           "  batch_size: 2\n  shard: shuffle\n"
           "replication: {mode: %s, workers: 2}\n"
           "train: {steps: 1}\n"
           "eval: {every_steps: 0}\n",
           model, train, loss, acc, images, dir, dir, dir, dir, mode);
  tf_job_spec *s = NULL;
  tf_status st;
  ck_assert_msg(tf_job_spec_parse(text, strlen(text), "g.yaml", &s, &st) == TF_OK, "%s",
                st.msg);
  return s;
}

static const tf_job_graph_options opts = {.workers = 2, .worker_devices = workers,
                                          .n_ps = 2, .ps_devices = ps, .container = "j-1"};

static const char *device_of(const tf_graph *g, const char *name) {
  tf_node *n = tf_graph_find(g, name);
  ck_assert_msg(n != NULL, "no node %s", name);
  return tf_node_device(n);
}

START_TEST(test_replicas_of_a_file) {
  char model[128], loss[256], acc[256];
  snprintf(model, sizeof model, "%s/m.tfg", dir);
  save_model(model, loss, acc);
  tf_job_spec *s = graph_spec(model, "train", "images", loss, acc, "async");
  tf_job_graph *jg = NULL;
  tf_status st;
  ck_assert_msg(tf_job_graph_build(s, &opts, &jg, &st) == TF_OK, "%s", st.msg);
  const tf_graph *g = jg->g;
  ck_assert(!jg->sync);
  ck_assert_str_eq(jg->train[1], "replica_1/count");
  ck_assert_str_eq(jg->global_step, "job/global_step");
  char want[300];
  snprintf(want, sizeof want, "replica_1/%s", loss);
  ck_assert_str_eq(jg->loss[1], want);
  /* shared variables: once, unprefixed, spread over the ps, in the job's container */
  ck_assert_ptr_null(tf_graph_find(g, "replica_0/dense/kernel"));
  ck_assert_str_eq(device_of(g, "dense/kernel"), ps[0]);
  ck_assert_str_eq(device_of(g, "dense/bias"), ps[1]);
  const tf_attr_value *c = tf_node_attr(tf_graph_find(g, "dense/kernel"), "container");
  ck_assert(c != NULL && strcmp(c->u.s, "j-1") == 0);
  /* a replica's compute on its worker, its update beside the variable */
  ck_assert_str_eq(device_of(g, "replica_1/dense/MatMul"), workers[1]);
  ck_assert_str_eq(device_of(g, "replica_0/dense/MatMul"), workers[0]);
  /* the placeholder no longer feeds replica 1: its MatMul reads the pipeline */
  const tf_node *mm = tf_graph_find(g, "replica_1/dense/MatMul");
  const char *in0 = tf_node_name(tf_node_input(mm, 0).node);
  ck_assert_msg(strncmp(in0, "replica_1/input/", 16) == 0, "MatMul's input: %s", in0);
  ck_assert_str_eq(jg->eval_images, "eval/images");
  ck_assert_int_eq(jg->n_eval_metrics, 1);
  ck_assert_str_eq(jg->metric_names[0], "accuracy");
  tf_job_graph_free(jg);
  tf_job_spec_free(s);
}
END_TEST

static void fails_with(tf_job_spec *s, tf_code code, const char *want) {
  tf_job_graph *jg = NULL;
  tf_status st;
  ck_assert_int_eq(tf_job_graph_build(s, &opts, &jg, &st), code);
  ck_assert_msg(strstr(st.msg, want) != NULL, "want '%s' in: %s", want, st.msg);
  ck_assert_ptr_null(jg);
  tf_job_spec_free(s);
}

START_TEST(test_errors) {
  char model[128], loss[256], acc[256];
  snprintf(model, sizeof model, "%s/m.tfg", dir);
  save_model(model, loss, acc);
  fails_with(graph_spec(model, "nope", "images", loss, acc, "async"), TF_INVALID_ARGUMENT,
             "graph.train: ");
  fails_with(graph_spec(model, "nope", "images", loss, acc, "async"), TF_INVALID_ARGUMENT,
             "has no node 'nope'");
  fails_with(graph_spec(model, "train", loss, loss, acc, "async"), TF_INVALID_ARGUMENT,
             "is a Mean, not a Placeholder");
  fails_with(graph_spec(model, "train", "images", loss, acc, "sync"), TF_INVALID_ARGUMENT,
             "sync with 2 workers needs a model section");
  char missing[160];
  snprintf(missing, sizeof missing, "%s/absent.tfg", dir);
  fails_with(graph_spec(missing, "train", "images", loss, acc, "async"), TF_NOT_FOUND,
             "graph.file");
}
END_TEST

static void setup(void) {
  snprintf(dir, sizeof dir, "/tmp/tf-jgf-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(dir));
  write_idx("i.idx", 4, 2);
  write_idx("l.idx", 4, 0);
}

static void teardown(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  ck_assert_int_eq(system(cmd), 0);
}

Suite *tt_suite(void) {
  Suite *s = suite_create("job_graph_file");
  TCase *tc = tcase_create("job_graph_file");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_replicas_of_a_file);
  tcase_add_test(tc, test_errors);
  suite_add_tcase(s, tc);
  return s;
}
