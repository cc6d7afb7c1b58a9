/* placement_cost_test.c: the cost model (means, unknown nodes, concurrent
 * recording) and the static estimates the placer falls back on, checked
 * against hand-worked flop and byte counts. */
#include <check.h>
#include <pthread.h>
#include <stdlib.h>

#include "lib/runtime/placement.h"
#include "lib/runtime/placement_impl.h"
#include "test/unit/testutil.h"

START_TEST(test_cost_model_means) {
  tf_cost_model *cm = tf_cost_model_new();
  ck_assert_int_eq(tf_cost_model_get(cm, "a"), -1);
  tf_cost_model_record(cm, "a", 100);
  tf_cost_model_record(cm, "a", 300);
  tf_cost_model_record(cm, "b", 7);
  tf_cost_model_record(cm, "a", -5); /* ignored */
  tf_cost_model_record(NULL, "a", 5);  /* no-op */
  ck_assert_int_eq(tf_cost_model_get(cm, "a"), 200);
  ck_assert_int_eq(tf_cost_model_get(cm, "b"), 7);
  ck_assert_int_eq(tf_cost_model_get(cm, "c"), -1);
  ck_assert_int_eq(tf_cost_model_get(NULL, "a"), -1);
  for (int i = 0; i < 1000; i++) { /* growth keeps every entry */
    char nm[16];
    snprintf(nm, sizeof nm, "n%d", i);
    tf_cost_model_record(cm, nm, i);
  }
  for (int i = 0; i < 1000; i++) {
    char nm[16];
    snprintf(nm, sizeof nm, "n%d", i);
    ck_assert_int_eq(tf_cost_model_get(cm, nm), i);
  }
  tf_cost_model_free(cm);
  tf_cost_model_free(NULL);
}
END_TEST

typedef struct rec_arg {
  tf_cost_model *cm;
  int id;
} rec_arg;

static void *recorder(void *p) {
  rec_arg *a = p;
  for (int i = 0; i < 2000; i++) {
    char nm[16];
    snprintf(nm, sizeof nm, "k%d", i % 50);
    tf_cost_model_record(a->cm, nm, 10 * (a->id + 1));
    tf_cost_model_get(a->cm, nm);
  }
  return NULL;
}

/* Four threads record 10, 20, 30, 40 ns equally often for 50 names: every
 * mean is 25. */
START_TEST(test_cost_model_threads) {
  tf_cost_model *cm = tf_cost_model_new();
  pthread_t th[4];
  rec_arg args[4];
  for (int i = 0; i < 4; i++) {
    args[i] = (rec_arg){cm, i};
    ck_assert_int_eq(pthread_create(&th[i], NULL, recorder, &args[i]), 0);
  }
  for (int i = 0; i < 4; i++) {
    pthread_join(th[i], NULL);
  }
  for (int i = 0; i < 50; i++) {
    char nm[16];
    snprintf(nm, sizeof nm, "k%d", i);
    ck_assert_int_eq(tf_cost_model_get(cm, nm), 25);
  }
  tf_cost_model_free(cm);
}
END_TEST

static tf_node *ph(tf_graph *g, const char *name, tf_shape s) {
  return tt_placeholder(g, name, TF_FLOAT32, s);
}

/* 10 GFLOP/s for matmuls and convolutions, 5 GB/s for the rest, 1 us
 * floor; measured means win. */
START_TEST(test_static_estimates) {
  tf_graph *g = tf_graph_new();
  tf_node *a = ph(g, "a", tf_shape_of(2, 100, 200));
  tf_node *b = ph(g, "b", tf_shape_of(2, 200, 300));
  tf_node *mm = tt_node(g, "MatMul", "mm", (tf_output[]){{a, 0}, {b, 0}}, 2, NULL, 0);
  ck_assert_int_eq(tf__place_static_cost(mm), 2LL * 100 * 300 * 200 / 10);
  /* transpose_a: k is a's first dimension */
  tf_node *at = ph(g, "at", tf_shape_of(2, 200, 100));
  tf_attr_kv ta[] = {{"transpose_a", tf_attr_bool(true)}};
  tf_node *mmt = tt_node(g, "MatMul", "mmt", (tf_output[]){{at, 0}, {b, 0}}, 2, ta, 1);
  ck_assert_int_eq(tf__place_static_cost(mmt), 2LL * 100 * 300 * 200 / 10);
  /* Conv2D NHWC 8x32x32x16, filter 3x3x16x64, SAME: out 8x32x32x64 */
  tf_node *x = ph(g, "x", tf_shape_of(4, 8, 32, 32, 16));
  tf_node *f = ph(g, "f", tf_shape_of(4, 3, 3, 16, 64));
  int64_t strides[] = {1, 1, 1, 1};
  tf_attr_kv ca[] = {{"strides", tf_attr_int_list(strides, 4)},
                     {"padding", tf_attr_string("SAME")}};
  tf_node *conv = tt_node(g, "Conv2D", "conv", (tf_output[]){{x, 0}, {f, 0}}, 2, ca, 2);
  ck_assert_int_eq(tf__place_static_cost(conv), 2LL * 8 * 32 * 32 * 64 * 3 * 3 * 16 / 10);
  /* Add of two 1000x1000 floats: 12 MB moved at 5 B/ns */
  tf_node *p = ph(g, "p", tf_shape_of(2, 1000, 1000));
  tf_node *add = tt_node(g, "Add", "add", (tf_output[]){{p, 0}, {p, 0}}, 2, NULL, 0);
  ck_assert_int_eq(tf__place_static_cost(add), 12000000 / 5);
  ck_assert_int_eq(tf__place_output_bytes(add, 0), 4000000);
  /* small or unknown shapes hit the 1 us floor */
  tf_node *u = ph(g, "u", tf_shape_unknown());
  tf_node *neg = tt_node(g, "Neg", "neg", (tf_output[]){{u, 0}}, 1, NULL, 0);
  ck_assert_int_eq(tf__place_static_cost(neg), 1000);
  ck_assert_int_eq(tf__place_output_bytes(neg, 0), 4);
  tf_cost_model *cm = tf_cost_model_new();
  ck_assert_int_eq(tf__place_node_cost(add, cm), 12000000 / 5);
  tf_cost_model_record(cm, "add", 42);
  ck_assert_int_eq(tf__place_node_cost(add, cm), 42);
  ck_assert_int_eq(tf__place_node_cost(add, NULL), 12000000 / 5);
  tf_cost_model_free(cm);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("placement_cost");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_cost_model_means);
  tcase_add_test(tc, test_cost_model_threads);
  tcase_add_test(tc, test_static_estimates);
  suite_add_tcase(s, tc);
  return s;
}
