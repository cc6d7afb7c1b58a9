/* prune_test.c: the prune pass (lib/core/graph/prune.h) on its own, with
 * no executor: the pruned graph holds exactly the nodes the fetches and
 * targets need plus one _Arg per sorted feed and one _Retval per sorted
 * fetch (attr index k for sorted position k); a fed edge cuts its producer
 * out; feed dtypes and shapes come from the fed edges; the source graph is
 * unchanged; and errors name the feed, fetch or target at fault.
 * (test/unit/core/exec/session_prune_test.c runs the same pass through
 * tf_session_run.) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/graph/prune.h"
#include "test/unit/testutil.h"

/* a = Placeholder, b = Placeholder, s = a + b, n = Neg(s), d = Neg(b)
 * (unused unless fetched), r = RandomUniform (stateful, unused). */
static tf_graph *sample(void) {
  tf_graph *g = tf_graph_new();
  tf_node *a = tt_placeholder(g, "a", TF_FLOAT32, tf_shape_of(1, 3));
  tf_node *b = tt_placeholder(g, "b", TF_FLOAT32, tf_shape_of(1, 3));
  tf_node *s = tt_node(g, "Add", "s", (tf_output[]){{a, 0}, {b, 0}}, 2, NULL, 0);
  tt_node(g, "Neg", "n", &(tf_output){s, 0}, 1, NULL, 0);
  tt_node(g, "Neg", "d", &(tf_output){b, 0}, 1, NULL, 0);
  return g;
}

static tf__pruned *prune_ok(const tf_graph *g, const char *const *feeds, int nf,
                            const char *const *fetches, int no,
                            const char *const *targets, int nt, tf__sig *sig) {
  tf_status st;
  tf_status_init(&st);
  ck_assert_msg(tf__sig_build(sig, feeds, nf, fetches, no, targets, nt, &st) ==
                    TF_OK, "%s", st.msg);
  tf__pruned *p = NULL;
  ck_assert_msg(tf__prune(g, sig, &p, &st) == TF_OK, "%s", st.msg);
  return p;
}

/* The names of p's nodes, sorted and joined by ','. */
static void node_names(const tf_graph *g, char *buf, size_t size) {
  int n = tf_graph_num_nodes(g);
  const char **v = calloc((size_t)n + 1, sizeof *v);
  for (int i = 0; i < n; i++) v[i] = tf_node_name(tf_graph_node(g, i));
  for (int i = 1; i < n; i++) { /* insertion sort: a handful of names */
    for (int k = i; k > 0 && strcmp(v[k - 1], v[k]) > 0; k--) {
      const char *t = v[k];
      v[k] = v[k - 1];
      v[k - 1] = t;
    }
  }
  buf[0] = '\0';
  for (int i = 0; i < n; i++) {
    snprintf(buf + strlen(buf), size - strlen(buf), "%s%s", i ? "," : "", v[i]);
  }
  free(v);
}

static int64_t index_attr(const tf_graph *g, const char *name) {
  int64_t k = -1;
  tf_node *n = tf_graph_find(g, name);
  ck_assert_msg(n != NULL, "no node %s", name);
  ck_assert_int_eq(tf_node_attr_get_int(n, "index", &k, NULL), TF_OK);
  return k;
}

START_TEST(test_keeps_what_fetches_need) {
  tf_graph *g = sample();
  int before = tf_graph_num_nodes(g);
  tf__sig sig;
  const char *feeds[] = {"b", "a:0"}, *fetches[] = {"n"};
  tf__pruned *p = prune_ok(g, feeds, 2, fetches, 1, NULL, 0, &sig);
  char names[256];
  node_names(p->g, names, sizeof names);
  /* a and b are fed: their Placeholders are cut out, d is not needed. */
  ck_assert_str_eq(names, "_arg_0,_arg_1,_retval_0,n,s");
  ck_assert_int_eq(p->n_feeds, 2);
  ck_assert_int_eq(p->n_fetches, 1);
  /* Sorted feeds: a:0 is position 0, b:0 position 1. */
  ck_assert_str_eq(sig.feeds[0].canon, "a:0");
  ck_assert_int_eq(index_attr(p->g, "_arg_0"), 0);
  ck_assert_int_eq(index_attr(p->g, "_arg_1"), 1);
  tf_node *s = tf_graph_find(p->g, "s");
  ck_assert_str_eq(tf_node_name(tf_node_input(s, 0).node), "_arg_0");
  ck_assert_str_eq(tf_node_name(tf_node_input(s, 1).node), "_arg_1");
  for (int k = 0; k < 2; k++) {
    ck_assert_int_eq(p->feed_types[k], TF_FLOAT32);
    ck_assert(tf_shape_equal(&p->feed_shapes[k], &(tf_shape){1, {3}}));
  }
  ck_assert_int_eq(tf_graph_num_nodes(g), before); /* g is unchanged */
  tf__pruned_free(p);
  tf__sig_fini(&sig);
  tf_graph_free(g);
}
END_TEST

/* A target pulls in what it needs (no _Retval); an unfed Placeholder
 * stays (running it then fails, which is the executor's business). */
START_TEST(test_targets_and_unfed_inputs) {
  tf_graph *g = sample();
  tf__sig sig;
  const char *targets[] = {"d"};
  tf__pruned *p = prune_ok(g, NULL, 0, NULL, 0, targets, 1, &sig);
  char names[256];
  node_names(p->g, names, sizeof names);
  ck_assert_str_eq(names, "b,d");
  tf__pruned_free(p);
  tf__sig_fini(&sig);
  tf_graph_free(g);
}
END_TEST

/* Feeding and fetching one edge: the _Retval reads the _Arg. */
START_TEST(test_fetch_of_fed_edge) {
  tf_graph *g = sample();
  tf__sig sig;
  const char *feeds[] = {"s"}, *fetches[] = {"s:0"};
  tf__pruned *p = prune_ok(g, feeds, 1, fetches, 1, NULL, 0, &sig);
  char names[256];
  node_names(p->g, names, sizeof names);
  ck_assert_str_eq(names, "_arg_0,_retval_0");
  tf_node *r = tf_graph_find(p->g, "_retval_0");
  ck_assert_str_eq(tf_node_name(tf_node_input(r, 0).node), "_arg_0");
  tf__pruned_free(p);
  tf__sig_fini(&sig);
  tf_graph_free(g);
}
END_TEST

static void expect_prune_error(const tf_graph *g, const char *feed,
                               const char *fetch, tf_code code,
                               const char *needle) {
  tf__sig sig;
  tf_status st;
  tf_status_init(&st);
  ck_assert_int_eq(tf__sig_build(&sig, feed ? &feed : NULL, feed ? 1 : 0,
                                 &fetch, 1, NULL, 0, &st), TF_OK);
  tf__pruned *p = NULL;
  ck_assert_int_eq(tf__prune(g, &sig, &p, &st), code);
  ck_assert_ptr_null(p);
  ck_assert_msg(strstr(st.msg, needle) != NULL, "'%s' lacks '%s'", st.msg, needle);
  tf__sig_fini(&sig);
}

START_TEST(test_errors_name_the_culprit) {
  tf_graph *g = sample();
  expect_prune_error(g, NULL, "nope", TF_NOT_FOUND, "nope");
  expect_prune_error(g, "ghost:0", "n", TF_NOT_FOUND, "ghost");
  expect_prune_error(g, NULL, "n:1", TF_INVALID_ARGUMENT, "n:1");
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("prune");
  TCase *tc = tcase_create("pass");
  tcase_add_test(tc, test_keeps_what_fetches_need);
  tcase_add_test(tc, test_targets_and_unfed_inputs);
  tcase_add_test(tc, test_fetch_of_fed_edge);
  tcase_add_test(tc, test_errors_name_the_culprit);
  suite_add_tcase(s, tc);
  return s;
}
