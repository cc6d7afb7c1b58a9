/* session_test.c: the local session: feeds and fetches, partial
 * execution, the signature cache, extend, errors, concurrent Runs, close,
 * traces and early release of intermediate tensors. */
#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <math.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "test/unit/testutil.h"
#include "tf/session.h"

#define cnst tt_const

static tf_node *op2(tf_graph *g, const char *op, const char *name, tf_node *a,
                    tf_node *b) {
  tf_output in[2] = {{a, 0}, {b, 0}};
  return tt_node(g, op, name, in, b != NULL ? 2 : 1, NULL, 0);
}

/* y = x * 3 + c, fed x; checked against a plain loop. */
START_TEST(test_feed_fetch) {
  tf_graph *g = tf_graph_new();
  tf_node *x = tt_placeholder(g, "x", TF_FLOAT32, tf_shape_of(1, -1));
  tf_node *three = cnst(g, "three", tf_tensor_scalar_f32(3.0f));
  tf_node *c = cnst(g, "c", tf_tensor_scalar_f32(0.5f));
  op2(g, "Add", "y", op2(g, "Mul", "m", x, three), c);
  tf_status st;
  tf_session *s = tf_session_new(g, NULL, &st);
  ck_assert_msg(s != NULL, "%s", st.msg);
  for (int rep = 0; rep < 3; rep++) {
    tf_tensor *in = tt_rand(TF_FLOAT32, tf_shape_of(1, 100), -2, 2);
    const char *fn[] = {"x"};
    const char *on[] = {"y:0", "m"};
    tf_tensor *out[2];
    ck_assert_msg(tf_session_run(s, NULL, fn, &in, 1, on, out, 2, NULL, 0, NULL,
                                 &st) == TF_OK, "%s", st.msg);
    const float *xi = in->data, *y = out[0]->data, *m = out[1]->data;
    for (int i = 0; i < 100; i++) {
      /* exact: float ops in the same order */
      if (y[i] != xi[i] * 3.0f + 0.5f || m[i] != xi[i] * 3.0f) {
        ck_abort_msg("element %d: y %g m %g for x %g", i, y[i], m[i], xi[i]);
      }
    }
    tt_free(out, 2);
    tf_tensor_unref(in);
  }
  ck_assert_int_eq(tf_session_cache_size(s), 1);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

/* Feeding an intermediate edge cuts the graph above it: the Placeholder
 * upstream is not needed, and fetching a fed edge returns the feed. */
START_TEST(test_feed_intermediate) {
  tf_graph *g = tf_graph_new();
  tf_node *x = tt_placeholder(g, "x", TF_FLOAT32, tf_shape_scalar());
  tf_node *sq = op2(g, "Square", "sq", x, NULL);
  op2(g, "Neg", "neg", sq, NULL);
  tf_status st;
  tf_session *s = tf_session_new(g, NULL, &st);
  tf_tensor *v = tf_tensor_scalar_f32(5.0f);
  const char *fn[] = {"sq"};
  const char *on[] = {"neg", "sq"};
  tf_tensor *out[2];
  ck_assert_msg(tf_session_run(s, NULL, fn, &v, 1, on, out, 2, NULL, 0, NULL, &st) == TF_OK,
                "%s", st.msg);
  ck_assert_double_eq(tf_tensor_get_f64(out[0], 0), -5.0);
  ck_assert_ptr_eq(out[1], v);
  tt_free(out, 2);
  /* Without the feed the placeholder must be fed: its error names it. */
  ck_assert_int_eq(tf_session_run(s, NULL, NULL, NULL, 0, on, out, 1, NULL, 0, NULL, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "'x'") != NULL, "%s", st.msg);
  ck_assert_ptr_null(out[0]);
  tf_tensor_unref(v);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

/* A stateful node that the fetches do not need never runs: a counter
 * variable incremented by an AssignAdd left out of the Run. */
START_TEST(test_prune_stateful) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_node_builder *b = tf_node_begin(g, "VariableV2", "counter");
  tf_node_set_attr(b, "shape", tf_attr_shape(tf_shape_scalar()));
  tf_node_set_attr(b, "dtype", tf_attr_type_v(TF_INT64));
  tf_node *v = tf_node_finish(b, &st);
  ck_assert_msg(v != NULL, "%s", st.msg);
  tf_node *zero = cnst(g, "zero", tf_tensor_scalar_i64(0));
  tf_node *one = cnst(g, "one", tf_tensor_scalar_i64(1));
  op2(g, "Assign", "init", v, zero);
  tf_node *inc = op2(g, "AssignAdd", "inc", v, one);
  /* "both" depends on inc; "plain" does not. */
  tf_node *plain = op2(g, "Add", "plain", one, one);
  op2(g, "Add", "both", inc, plain);
  tf_session *s = tf_session_new(g, NULL, &st);
  const char *init[] = {"init"};
  ck_assert_msg(tf_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, init, 1, NULL, &st) == TF_OK,
                "%s", st.msg);
  const char *f_plain[] = {"plain"}, *f_v[] = {"counter"}, *f_both[] = {"both"};
  tf_tensor *out;
  for (int i = 0; i < 5; i++) {
    ck_assert_int_eq(tf_session_run(s, NULL, NULL, NULL, 0, f_plain, &out, 1, NULL, 0, NULL, &st), TF_OK);
    ck_assert_int_eq(tf_tensor_get_i64(out, 0), 2);
    tf_tensor_unref(out);
  }
  ck_assert_int_eq(tf_session_run(s, NULL, NULL, NULL, 0, f_v, &out, 1, NULL, 0, NULL, &st), TF_OK);
  ck_assert_int_eq(tf_tensor_get_i64(out, 0), 0);
  tf_tensor_unref(out);
  ck_assert_int_eq(tf_session_run(s, NULL, NULL, NULL, 0, f_both, &out, 1, NULL, 0, NULL, &st), TF_OK);
  ck_assert_int_eq(tf_tensor_get_i64(out, 0), 3);
  tf_tensor_unref(out);
  ck_assert_int_eq(tf_session_run(s, NULL, NULL, NULL, 0, f_v, &out, 1, NULL, 0, NULL, &st), TF_OK);
  ck_assert_int_eq(tf_tensor_get_i64(out, 0), 1);
  tf_tensor_unref(out);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

/* The cache is keyed by the sorted signature: fetch order and "x" versus
 * "x:0" do not make new executors; another fetch set does. */
START_TEST(test_cache_signature) {
  tf_graph *g = tf_graph_new();
  tf_node *a = cnst(g, "a", tf_tensor_scalar_f32(1));
  tf_node *b = cnst(g, "b", tf_tensor_scalar_f32(2));
  op2(g, "Add", "c", a, b);
  tf_status st;
  tf_session *s = tf_session_new(g, NULL, &st);
  const char *f1[] = {"a", "c"}, *f2[] = {"c:0", "a:0"}, *f3[] = {"b"};
  tf_tensor *out[2];
  ck_assert_int_eq(tf_session_run(s, NULL, NULL, NULL, 0, f1, out, 2, NULL, 0, NULL, &st), TF_OK);
  ck_assert_double_eq(tf_tensor_get_f64(out[1], 0), 3.0);
  tt_free(out, 2);
  ck_assert_int_eq(tf_session_run(s, NULL, NULL, NULL, 0, f2, out, 2, NULL, 0, NULL, &st), TF_OK);
  ck_assert_double_eq(tf_tensor_get_f64(out[0], 0), 3.0);
  ck_assert_double_eq(tf_tensor_get_f64(out[1], 0), 1.0);
  tt_free(out, 2);
  ck_assert_int_eq(tf_session_cache_size(s), 1);
  ck_assert_int_eq(tf_session_run(s, NULL, NULL, NULL, 0, f3, out, 1, NULL, 0, NULL, &st), TF_OK);
  tt_free(out, 1);
  ck_assert_int_eq(tf_session_cache_size(s), 2);
  /* The same tensor fetched twice. */
  const char *f4[] = {"c", "c:0"};
  ck_assert_int_eq(tf_session_run(s, NULL, NULL, NULL, 0, f4, out, 2, NULL, 0, NULL, &st), TF_OK);
  ck_assert_ptr_eq(out[0], out[1]);
  tt_free(out, 2);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_errors) {
  tf_graph *g = tf_graph_new();
  tf_node *x = tt_placeholder(g, "x", TF_FLOAT32, tf_shape_of(2, 2, -1));
  op2(g, "Neg", "n", x, NULL);
  tf_status st;
  tf_session *s = tf_session_new(g, NULL, &st);
  tf_tensor *out[2] = {(tf_tensor *)1, (tf_tensor *)1};
  const char *bad[] = {"nope:0"};
  ck_assert_int_eq(tf_session_run(s, NULL, NULL, NULL, 0, bad, out, 1, NULL, 0, NULL, &st),
                   TF_NOT_FOUND);
  ck_assert_msg(strstr(st.msg, "fetch 'nope:0'") != NULL, "%s", st.msg);
  ck_assert_ptr_null(out[0]);
  const char *port[] = {"n:3"};
  ck_assert_int_eq(tf_session_run(s, NULL, NULL, NULL, 0, port, out, 1, NULL, 0, NULL, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "n:3") != NULL, "%s", st.msg);
  const char *tgt[] = {"ghost"};
  ck_assert_int_eq(tf_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, tgt, 1, NULL, &st),
                   TF_NOT_FOUND);
  ck_assert_msg(strstr(st.msg, "ghost") != NULL, "%s", st.msg);
  const char *fx[] = {"x"}, *fn[] = {"n"};
  tf_tensor *wrong_type = tt_rand(TF_FLOAT64, tf_shape_of(2, 2, 3), 0, 1);
  ck_assert_int_eq(tf_session_run(s, NULL, fx, &wrong_type, 1, fn, out, 1, NULL, 0, NULL, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "feed 'x'") && strstr(st.msg, "float64"), "%s", st.msg);
  tf_tensor *wrong_shape = tt_rand(TF_FLOAT32, tf_shape_of(2, 3, 3), 0, 1);
  ck_assert_int_eq(tf_session_run(s, NULL, fx, &wrong_shape, 1, fn, out, 1, NULL, 0, NULL, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "[3,3]") && strstr(st.msg, "[2,?]"), "%s", st.msg);
  tf_tensor *ok = tt_rand(TF_FLOAT32, tf_shape_of(2, 2, 7), 0, 1);
  tf_tensor *two[] = {ok, ok};
  const char *twice[] = {"x", "x:0"};
  ck_assert_int_eq(tf_session_run(s, NULL, twice, two, 2, fn, out, 1, NULL, 0, NULL, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "twice"), "%s", st.msg);
  /* And the session still works. */
  ck_assert_int_eq(tf_session_run(s, NULL, fx, &ok, 1, fn, out, 1, NULL, 0, NULL, &st), TF_OK);
  ck_assert_double_eq(tf_tensor_get_f64(out[0], 3), -tf_tensor_get_f64(ok, 3));
  tt_free(out, 1);
  tf_tensor_unref(wrong_type);
  tf_tensor_unref(wrong_shape);
  tf_tensor_unref(ok);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

/* Fetches {"y","z"}, then names that a joined key confused with them:
 * {"y:0,z"} (',' join) and {"y:0\nz:0"} ('\n' join, which returned y's
 * tensor for it) fail with INVALID_ARGUMENT naming the name and return no
 * tensor; {"y","z"} still works and nothing new was cached. */
START_TEST(test_signature_names_never_collide) {
  tf_graph *g = tf_graph_new();
  tf_node *y = cnst(g, "y", tf_tensor_scalar_f32(2));
  op2(g, "Neg", "z", y, NULL);
  tf_status st;
  tf_session *s = tf_session_new(g, NULL, &st);
  const char *yz[] = {"y", "z"};
  tf_tensor *out[2];
  for (int rep = 0; rep < 2; rep++) {
    ck_assert_msg(tf_session_run(s, NULL, NULL, NULL, 0, yz, out, 2, NULL, 0, NULL, &st) ==
                      TF_OK, "%s", st.msg);
    ck_assert_double_eq(tf_tensor_get_f64(out[0], 0), 2.0);
    ck_assert_double_eq(tf_tensor_get_f64(out[1], 0), -2.0);
    tt_free(out, 2);
    struct {
      const char *name, *shown;
    } bad[] = {{"y:0,z", "fetch 'y:0,z'"}, {"y:0\nz:0", "fetch 'y:0\\x0az:0'"},
               {"y:0,z:0", "fetch 'y:0,z:0'"}, {"y\nz", "fetch 'y\\x0az'"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
      out[0] = (tf_tensor *)1;
      ck_assert_int_eq(tf_session_run(s, NULL, NULL, NULL, 0, &bad[i].name, out, 1, NULL, 0,
                                      NULL, &st), TF_INVALID_ARGUMENT);
      ck_assert_msg(strstr(st.msg, bad[i].shown) != NULL, "%s", st.msg);
      ck_assert_ptr_null(out[0]);
    }
    ck_assert_int_eq(tf_session_cache_size(s), 1);
  }
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

/* A kernel error at run time names the node; the session stays usable. */
START_TEST(test_kernel_error_names_node) {
  tf_graph *g = tf_graph_new();
  tf_node *a = tt_placeholder(g, "a", TF_FLOAT32, tf_shape_unknown());
  tf_node *b = tt_placeholder(g, "b", TF_FLOAT32, tf_shape_unknown());
  op2(g, "MatMul", "product", a, b);
  tf_status st;
  tf_session *s = tf_session_new(g, NULL, &st);
  tf_tensor *in[2] = {tt_rand(TF_FLOAT32, tf_shape_of(2, 2, 3), 0, 1),
                      tt_rand(TF_FLOAT32, tf_shape_of(2, 4, 2), 0, 1)};
  const char *fn[] = {"a", "b"}, *on[] = {"product"};
  tf_tensor *out;
  ck_assert_int_eq(tf_session_run(s, NULL, fn, in, 2, on, &out, 1, NULL, 0, NULL, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "product") != NULL, "%s", st.msg);
  tt_free(in, 2);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

/* Nodes added to the graph after the session was made are picked up. */
START_TEST(test_extend) {
  tf_graph *g = tf_graph_new();
  tf_node *a = cnst(g, "a", tf_tensor_scalar_f32(4));
  tf_status st;
  tf_session *s = tf_session_new(g, NULL, &st);
  op2(g, "Sqrt", "r", a, NULL);
  const char *on[] = {"r"};
  tf_tensor *out;
  ck_assert_msg(tf_session_run(s, NULL, NULL, NULL, 0, on, &out, 1, NULL, 0, NULL, &st) == TF_OK,
                "%s", st.msg);
  ck_assert_double_eq(tf_tensor_get_f64(out, 0), 2.0);
  tf_tensor_unref(out);
  /* Defs naming existing nodes, as a remote client sends them. */
  const char *in[] = {"r"};
  tf_node_def d = {.name = "rr", .op = "Square", .n_inputs = 1, .inputs = in};
  ck_assert_msg(tf_session_extend_defs(s, &d, 1, &st) == TF_OK, "%s", st.msg);
  const char *on2[] = {"rr"};
  ck_assert_int_eq(tf_session_run(s, NULL, NULL, NULL, 0, on2, &out, 1, NULL, 0, NULL, &st), TF_OK);
  ck_assert_double_eq(tf_tensor_get_f64(out, 0), 4.0);
  tf_tensor_unref(out);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

typedef struct conc_arg {
  tf_session *s;
  int id;
  int bad;
} conc_arg;

static void *conc_main(void *p) {
  conc_arg *a = p;
  tf_status st;
  for (int i = 0; i < 200; i++) {
    float v = (float)(a->id * 1000 + i);
    tf_tensor *in = tf_tensor_scalar_f32(v);
    const char *fn[] = {"x"}, *on[] = {"y"};
    tf_tensor *out = NULL;
    if (tf_session_run(a->s, NULL, fn, &in, 1, on, &out, 1, NULL, 0, NULL, &st) != TF_OK ||
        tf_tensor_get_f64(out, 0) != (double)(v * 3.0f + 0.5f)) {
      a->bad++;
    }
    tf_tensor_unref(out);
    tf_tensor_unref(in);
  }
  return NULL;
}

/* Eight threads Run one session at once, each with its own feeds. */
START_TEST(test_concurrent_runs) {
  tf_graph *g = tf_graph_new();
  tf_node *x = tt_placeholder(g, "x", TF_FLOAT32, tf_shape_scalar());
  tf_node *three = cnst(g, "three", tf_tensor_scalar_f32(3.0f));
  tf_node *c = cnst(g, "c", tf_tensor_scalar_f32(0.5f));
  op2(g, "Add", "y", op2(g, "Mul", "m", x, three), c);
  int threads[] = {1, 4};
  for (int k = 0; k < 2; k++) {
    tf_status st;
    tf_session_options o = {.inter_op_threads = threads[k]};
    tf_session *s = tf_session_new(g, &o, &st);
    pthread_t th[8];
    conc_arg args[8];
    for (int i = 0; i < 8; i++) {
      args[i] = (conc_arg){s, i, 0};
      pthread_create(&th[i], NULL, conc_main, &args[i]);
    }
    for (int i = 0; i < 8; i++) {
      pthread_join(th[i], NULL);
      ck_assert_int_eq(args[i].bad, 0);
    }
    tf_session_free(s);
  }
  tf_graph_free(g);
}
END_TEST

START_TEST(test_close) {
  tf_graph *g = tf_graph_new();
  cnst(g, "a", tf_tensor_scalar_f32(1));
  tf_status st;
  tf_session *s = tf_session_new(g, NULL, &st);
  ck_assert_int_eq(tf_session_close(s, &st), TF_OK);
  ck_assert_int_eq(tf_session_close(s, &st), TF_OK);
  const char *on[] = {"a"};
  tf_tensor *out;
  ck_assert_int_eq(tf_session_run(s, NULL, NULL, NULL, 0, on, &out, 1, NULL, 0, NULL, &st),
                   TF_FAILED_PRECONDITION);
  ck_assert_msg(strstr(st.msg, "closed") != NULL, "%s", st.msg);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

/* A traced Run reports every node it ran, once, with sane times. */
START_TEST(test_trace) {
  tf_graph *g = tf_graph_new();
  tf_node *a = cnst(g, "a", tf_tensor_scalar_f32(1));
  tf_node *b = cnst(g, "b", tf_tensor_scalar_f32(2));
  op2(g, "Add", "c", a, b);
  cnst(g, "unused", tf_tensor_scalar_f32(9));
  tf_status st;
  tf_session *s = tf_session_new(g, NULL, &st);
  const char *on[] = {"c"};
  tf_tensor *out;
  tf_run_options ro = {.trace = true};
  tf_run_metadata md;
  ck_assert_int_eq(tf_session_run(s, &ro, NULL, NULL, 0, on, &out, 1, NULL, 0, &md, &st), TF_OK);
  tf_tensor_unref(out);
  /* a, b, c and the _Retval */
  ck_assert_int_eq(md.n_timings, 4);
  int seen = 0;
  for (int i = 0; i < md.n_timings; i++) {
    const tf_node_timing *t = &md.timings[i];
    ck_assert_int_le(t->start_ns, t->end_ns);
    ck_assert_int_gt(t->thread, 0);
    ck_assert_str_ne(t->node, "unused");
    if (strcmp(t->node, "c") == 0) {
      ck_assert_str_eq(t->op, "Add");
      seen++;
    }
  }
  ck_assert_int_eq(seen, 1);
  tf_run_metadata_fini(&md);
  /* Not asked: nothing collected. */
  ck_assert_int_eq(tf_session_run(s, NULL, NULL, NULL, 0, on, &out, 1, NULL, 0, &md, &st), TF_OK);
  ck_assert_int_eq(md.n_timings, 0);
  tf_tensor_unref(out);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

/* A chain of 16 MiB intermediates: each is freed once its consumer has
 * run, so the peak stays at a few tensors, not the chain's length. */
START_TEST(test_intermediates_freed) {
  tf_graph *g = tf_graph_new();
  tf_node *x = tt_placeholder(g, "x", TF_FLOAT32, tf_shape_of(1, 4 << 20));
  tf_node *cur = x;
  for (int i = 0; i < 12; i++) cur = op2(g, i % 2 ? "Neg" : "Abs", NULL, cur, NULL);
  tf_status st;
  tf_session_options o = {.inter_op_threads = 1};
  tf_session *s = tf_session_new(g, &o, &st);
  tf_tensor *in = tt_rand(TF_FLOAT32, tf_shape_of(1, 4 << 20), -1, 1);
  const char *fn[] = {"x"}, *on[] = {tf_node_name(cur)};
  tf_tensor *out;
  tf_allocator *al = tf_cpu_allocator();
  tf_allocator_reset_peak(al);
  long long before = tf_allocator_get_stats(al).bytes_in_use;
  ck_assert_int_eq(tf_session_run(s, NULL, fn, &in, 1, on, &out, 1, NULL, 0, NULL, &st), TF_OK);
  long long peak = tf_allocator_get_stats(al).peak_bytes - before;
  ck_assert_double_eq(tf_tensor_get_f64(out, 7), -fabs(tf_tensor_get_f64(in, 7)));
  /* Allow 3 live tensors of 16 MiB (in-place reuse usually needs 1). */
  ck_assert_msg(peak <= 3LL * (16 << 20) + (1 << 20), "peak %lld bytes", peak);
  tf_tensor_unref(out);
  tf_tensor_unref(in);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("session");
  TCase *tc = tcase_create("session");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_feed_fetch);
  tcase_add_test(tc, test_feed_intermediate);
  tcase_add_test(tc, test_prune_stateful);
  tcase_add_test(tc, test_cache_signature);
  tcase_add_test(tc, test_errors);
  tcase_add_test(tc, test_signature_names_never_collide);
  tcase_add_test(tc, test_kernel_error_names_node);
  tcase_add_test(tc, test_extend);
  tcase_add_test(tc, test_concurrent_runs);
  tcase_add_test(tc, test_close);
  tcase_add_test(tc, test_trace);
  tcase_add_test(tc, test_intermediates_freed);
  suite_add_tcase(s, tc);
  return s;
}
