/* job_ckpt_graph_test.c: the checkpoint nodes of a job's graph
 * (job_ckpt_graph.c): one SaveV2 and one RestoreV2 per task holding
 * variables, on that task, covering every VariableV2 exactly once except
 * the sync replicas' local steps; `checkpoint/resync` (sync only) sets
 * every accumulator's step and every local step to the global step. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/runtime/job_graph.h"
#include "test/unit/testutil.h"

static const char *const workers[] = {"/job:worker/replica:0/task:0/device:CPU:0",
                                      "/job:worker/replica:0/task:1/device:CPU:0"};
static const char *const ps[] = {"/job:ps/replica:0/task:0/device:CPU:0",
                                 "/job:ps/replica:0/task:1/device:CPU:0"};

static char dir[64];

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
    unsigned char two[4] = {0, 0, 0, 2};
    fwrite(two, 1, 4, f);
  }
  for (int i = 0; i < n * (rank ? 4 : 1); i++) fputc(i % 3, f);
  fclose(f);
}

static tf_job_graph *build(const char *mode) {
  char text[2048];
  snprintf(text, sizeof text,
           "name: ck\n"
           "model:\n"
           "  input: {shape: [4]}\n"
           "  layers: [{type: dense, units: 5, activation: relu}, {type: dense, units: 3}]\n"
           "  loss: sparse_softmax_cross_entropy\n"
           "input:\n"
           "  format: idx\n"
           "  train: {images: %s/i.idx, labels: %s/l.idx}\n"
           "  batch_size: 2\n"
           "optimizer: {name: adam, learning_rate: 0.1}\n"
           "replication: {mode: %s, workers: 2}\n"
           "train: {steps: 3}\n"
           "checkpoint: {dir: %s/ck, every_steps: 1}\n",
           dir, dir, mode, dir);
  tf_job_spec *s = NULL;
  tf_status st;
  ck_assert_msg(tf_job_spec_parse(text, strlen(text), "ck.yaml", &s, &st) == TF_OK, "%s",
                st.msg);
  tf_job_graph_options o = {.workers = 2, .worker_devices = workers, .n_ps = 2,
                            .ps_devices = ps, .container = "ck-1"};
  tf_job_graph *jg = NULL;
  ck_assert_msg(tf_job_graph_build(s, &o, &jg, &st) == TF_OK, "%s", st.msg);
  tf_job_spec_free(s);
  return jg;
}

static bool is_local_step(const char *name) {
  return strncmp(name, "replica_", 8) == 0 && strstr(name, "/local_step") &&
         strcmp(strstr(name, "/local_step"), "/local_step") == 0;
}

/* Every VariableV2 but the local steps is saved by exactly one SaveV2,
 * the one on its own task, and restored by an Assign on its device. */
static void check_shards(tf_job_graph *jg) {
  ck_assert_int_eq(jg->n_shards, 2);
  ck_assert_str_eq(jg->shard_files[0], "ps-0.shard");
  ck_assert_str_eq(jg->shard_files[1], "ps-1.shard");
  tf_graph *g = jg->g;
  int n = tf_graph_num_nodes(g), vars = 0, saved = 0;
  for (int i = 0; i < n; i++) {
    tf_node *v = tf_graph_node(g, i);
    if (strcmp(tf_node_op(v), "VariableV2") != 0 || is_local_step(tf_node_name(v))) {
      continue;
    }
    vars++;
    int times = 0;
    for (int k = 0; k < jg->n_shards; k++) {
      char name[64];
      snprintf(name, sizeof name, "checkpoint/save_%d", k);
      tf_node *sv = tf_graph_find(g, name);
      ck_assert_ptr_nonnull(sv);
      ck_assert_str_eq(tf_node_device(sv), ps[k]);
      for (int in = 3; in < tf_node_num_inputs(sv); in++) {
        if (tf_node_input(sv, in).node == v) {
          times++;
          ck_assert_str_eq(tf_node_device(v), ps[k]);
        }
      }
    }
    ck_assert_msg(times == 1, "%s saved %d times", tf_node_name(v), times);
    saved++;
  }
  ck_assert_int_gt(vars, 4); /* kernels, biases, Adam's slots, global_step */
  ck_assert_int_eq(saved, vars);
  ck_assert_ptr_nonnull(tf_graph_find(g, jg->save));
  tf_node *r = tf_graph_find(g, jg->restore);
  ck_assert_ptr_nonnull(r);
  ck_assert_int_eq(tf_node_num_control_inputs(r), vars);
  for (int c = 0; c < tf_node_num_control_inputs(r); c++) {
    tf_node *a = tf_node_control_input(r, c);
    ck_assert_str_eq(tf_node_op(a), "Assign");
    ck_assert_str_eq(tf_node_device(a), tf_node_device(tf_node_input(a, 0).node));
  }
}

START_TEST(test_sync) {
  tf_job_graph *jg = build("sync");
  check_shards(jg);
  ck_assert_ptr_nonnull(jg->resync);
  tf_node *rs = tf_graph_find(jg->g, jg->resync);
  ck_assert_ptr_nonnull(rs);
  int acc = 0, local = 0;
  for (int c = 0; c < tf_node_num_control_inputs(rs); c++) {
    tf_node *x = tf_node_control_input(rs, c);
    tf_node *target = tf_node_input(x, 0).node;
    ck_assert_ptr_eq(tf_node_input(x, 1).node, tf_graph_find(jg->g, jg->global_step));
    if (strcmp(tf_node_op(x), "AccumulatorSetGlobalStep") == 0) {
      ck_assert_str_eq(tf_node_op(target), "ConditionalAccumulator");
      acc++;
    } else {
      ck_assert_str_eq(tf_node_op(x), "Assign");
      ck_assert(is_local_step(tf_node_name(target)));
      local++;
    }
  }
  ck_assert_int_eq(acc, 4); /* one per trainable variable */
  ck_assert_int_eq(local, 2);
  tf_job_graph_free(jg);
}
END_TEST

START_TEST(test_async) {
  tf_job_graph *jg = build("async");
  check_shards(jg);
  ck_assert_ptr_null(jg->resync);
  tf_job_graph_free(jg);
}
END_TEST

static void setup(void) {
  snprintf(dir, sizeof dir, "/tmp/tf-ckg-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(dir));
  write_idx("i.idx", 6, 2);
  write_idx("l.idx", 6, 0);
}

static void teardown(void) {
  char p[128];
  snprintf(p, sizeof p, "%s/i.idx", dir);
  unlink(p);
  snprintf(p, sizeof p, "%s/l.idx", dir);
  unlink(p);
  rmdir(dir);
}

Suite *tt_suite(void) {
  Suite *s = suite_create("job_ckpt_graph");
  TCase *tc = tcase_create("graph");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, test_sync);
  tcase_add_test(tc, test_async);
  suite_add_tcase(s, tc);
  return s;
}
