/* cpu_tensor_array_test.c: the TensorArrayV3 kernels through a session,
 * built with the include/tf/tensor_array.h builders: write/read/stack/
 * concat values, scatter/gather and split/concat round trips, size,
 * dynamic growth, clear_after_read, write-once, out-of-range indices,
 * unwritten elements (zeros when the shape is known), dtype and shape
 * mismatches, close, the size cap, string elements, arrays being per step
 * (a second run starts fresh) and per iteration inside a while loop. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "test/unit/testutil.h"
#include "tf/control_flow.h"
#include "tf/session.h"
#include "tf/tensor_array.h"

#define SHAPE(...)                                                             \
  tf_shape_make((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),    \
                (int64_t[]){__VA_ARGS__})

static tf_output o(tf_node *n) { return (tf_output){n, 0}; }
static tf_output ci(tf_graph *g, int32_t v) {
  return o(tt_const(g, NULL, tf_tensor_scalar_i32(v)));
}
static tf_output cvec(tf_graph *g, int n, const int32_t *v) {
  return o(tt_const(g, NULL, tf_tensor_vec_i32(n, v)));
}
/* A float32 const [n] with values base, base+1, ... */
static tf_output cf(tf_graph *g, tf_shape s, double base) {
  double v[64];
  int64_t n = tf_shape_num_elements(&s);
  for (int64_t i = 0; i < n; i++) v[i] = base + (double)i;
  return o(tt_const(g, NULL, tt_tensor(TF_FLOAT32, s, v)));
}

static void ok(tf_code rc, const tf_status *st) {
  ck_assert_msg(rc == TF_OK, "%s", st->msg);
}

static const char *edge(tf_output e, char *buf, size_t n) {
  snprintf(buf, n, "%s:%d", tf_node_name(e.node), e.index);
  return buf;
}

/* Runs g once fetching outs[0..n) into got (NULL-safe for n == 0) with
 * `target` (may be NULL) run too; returns the code, message in *st. */
static tf_code run(tf_graph *g, const tf_output *outs, int n, tf_tensor **got,
                   tf_node *target, tf_status *st) {
  tf_session_options opts = {.inter_op_threads = 2};
  tf_session *s = tf_session_new(g, &opts, st);
  ck_assert_msg(s != NULL, "%s", st->msg);
  char names[8][128];
  const char *fetch[8];
  for (int i = 0; i < n; i++) fetch[i] = edge(outs[i], names[i], sizeof names[i]);
  const char *tname = target ? tf_node_name(target) : NULL;
  tf_code rc = tf_session_run(s, NULL, NULL, NULL, 0, fetch, got, n,
                              target ? &tname : NULL, target ? 1 : 0, NULL, st);
  tf_session_free(s);
  return rc;
}

/* Expects running g for out to fail with code and a message holding
 * each of the NULL-terminated strings. */
static void expect_fail(tf_graph *g, tf_output out, tf_code code, ...) {
  tf_status st;
  tf_tensor *t = NULL;
  tf_code rc = run(g, &out, 1, &t, NULL, &st);
  tf_tensor_unref(t);
  ck_assert_msg(rc == code, "got %s: %s", tf_code_name(rc), st.msg);
  va_list ap;
  va_start(ap, code);
  for (const char *w; (w = va_arg(ap, const char *)) != NULL;) {
    ck_assert_msg(strstr(st.msg, w) != NULL, "'%s' not in: %s", w, st.msg);
  }
  va_end(ap);
}

static void expect_values(const tf_tensor *t, tf_shape s, const double *v) {
  tf_tensor *want = tt_tensor(t->dtype, s, v);
  tt_assert_close(t, want, 0, 0);
  tf_tensor_unref(want);
}

/* A float32 array of size n with element shape [2] and 3 writes
 * (i -> [10i, 10i+1]); opts may be NULL. */
static tf_tensor_array three(tf_graph *g, int n, const tf_tensor_array_options *opts) {
  tf_status st;
  tf_tensor_array ta;
  ok(tf_tensor_array_new(g, TF_FLOAT32, ci(g, n), opts, &ta, &st), &st);
  for (int i = 0; i < 3; i++) {
    ok(tf_tensor_array_write(g, &ta, ci(g, i), cf(g, SHAPE(2), 10.0 * i), &st), &st);
  }
  return ta;
}

START_TEST(test_write_read_stack_concat) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_tensor_array_options keep = {.keep_after_read = true};
  tf_tensor_array ta = three(g, 3, &keep);
  tf_output out[5];
  ok(tf_tensor_array_read(g, &ta, ci(g, 1), &out[0], &st), &st);
  ok(tf_tensor_array_stack(g, &ta, &out[1], &st), &st);
  ok(tf_tensor_array_concat(g, &ta, &out[2], &out[3], &st), &st);
  ok(tf_tensor_array_size(g, &ta, &out[4], &st), &st);
  tf_tensor *got[5] = {0};
  ok(run(g, out, 5, got, NULL, &st), &st);
  expect_values(got[0], SHAPE(2), (double[]){10, 11});
  expect_values(got[1], SHAPE(3, 2), (double[]){0, 1, 10, 11, 20, 21});
  expect_values(got[2], SHAPE(6), (double[]){0, 1, 10, 11, 20, 21});
  expect_values(got[3], SHAPE(3), (double[]){2, 2, 2});
  ck_assert_int_eq(got[3]->dtype, TF_INT64);
  ck_assert_int_eq(tf_tensor_get_i64(got[4], 0), 3);
  tt_free(got, 5);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_scatter_gather_split) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_tensor_array a, b;
  ok(tf_tensor_array_new(g, TF_FLOAT32, ci(g, 4), NULL, &a, &st), &st);
  ok(tf_tensor_array_scatter(g, &a, cvec(g, 4, (int32_t[]){2, 0, 3, 1}),
                             cf(g, SHAPE(4, 2), 0), &st), &st);
  ok(tf_tensor_array_new(g, TF_FLOAT32, ci(g, 3), NULL, &b, &st), &st);
  tf_output lengths = o(tt_const(g, NULL, tf_tensor_vec_i64(3, (int64_t[]){1, 0, 3})));
  ok(tf_tensor_array_split(g, &b, cf(g, SHAPE(4, 2), 100), lengths, &st), &st);
  tf_output out[4];
  ok(tf_tensor_array_gather(g, &a, cvec(g, 3, (int32_t[]){0, 1, 3}), &out[0], &st), &st);
  ok(tf_tensor_array_read(g, &b, ci(g, 2), &out[1], &st), &st);
  ok(tf_tensor_array_read(g, &b, ci(g, 1), &out[2], &st), &st);
  ok(tf_tensor_array_read(g, &a, ci(g, 2), &out[3], &st), &st);
  tf_tensor *got[4] = {0};
  ok(run(g, out, 4, got, NULL, &st), &st);
  /* a[2] = row 0, a[0] = row 1, a[3] = row 2, a[1] = row 3. */
  expect_values(got[0], SHAPE(3, 2), (double[]){2, 3, 6, 7, 4, 5});
  expect_values(got[1], SHAPE(3, 2), (double[]){102, 103, 104, 105, 106, 107});
  expect_values(got[2], SHAPE(0, 2), NULL);
  expect_values(got[3], SHAPE(2), (double[]){0, 1});
  tt_free(got, 4);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_unstack_stack_roundtrip) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_tensor_array ta;
  ok(tf_tensor_array_new(g, TF_FLOAT32, ci(g, 5), NULL, &ta, &st), &st);
  ok(tf_tensor_array_unstack(g, &ta, cf(g, SHAPE(5, 3), 1), &st), &st);
  tf_output out;
  ok(tf_tensor_array_stack(g, &ta, &out, &st), &st);
  tf_tensor *got = NULL;
  ok(run(g, &out, 1, &got, NULL, &st), &st);
  double v[15];
  for (int i = 0; i < 15; i++) v[i] = 1 + i;
  expect_values(got, SHAPE(5, 3), v);
  tf_tensor_unref(got);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_dynamic_size) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_tensor_array_options dyn = {.dynamic_size = true};
  tf_tensor_array ta;
  ok(tf_tensor_array_new(g, TF_FLOAT32, ci(g, 0), &dyn, &ta, &st), &st);
  ok(tf_tensor_array_write(g, &ta, ci(g, 4), cf(g, SHAPE(1), 4), &st), &st);
  for (int i = 0; i < 4; i++) {
    ok(tf_tensor_array_write(g, &ta, ci(g, i), cf(g, SHAPE(1), i), &st), &st);
  }
  tf_output out[2];
  ok(tf_tensor_array_size(g, &ta, &out[0], &st), &st);
  ok(tf_tensor_array_stack(g, &ta, &out[1], &st), &st);
  tf_tensor *got[2] = {0};
  ok(run(g, out, 2, got, NULL, &st), &st);
  ck_assert_int_eq(tf_tensor_get_i64(got[0], 0), 5);
  expect_values(got[1], SHAPE(5, 1), (double[]){0, 1, 2, 3, 4});
  tt_free(got, 2);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_clear_after_read) {
  tf_status st;
  for (int keep = 0; keep < 2; keep++) {
    tf_graph *g = tf_graph_new();
    tf_tensor_array_options opts = {.keep_after_read = keep, .name = "seq"};
    tf_tensor_array ta = three(g, 3, &opts);
    tf_output r1, r2;
    ok(tf_tensor_array_read(g, &ta, ci(g, 1), &r1, &st), &st);
    /* Order the second read after the first with a control edge. */
    tf_node_builder *b = tf_node_begin(g, "TensorArrayReadV3", NULL);
    tf_node_add_input(b, ta.handle);
    tf_node_add_input(b, ci(g, 1));
    tf_node_add_input(b, ta.flow);
    tf_node_set_attr(b, "dtype", tf_attr_type_v(TF_FLOAT32));
    tf_node_add_control_input(b, r1.node);
    tf_node *second = tf_node_finish(b, &st);
    ck_assert_msg(second != NULL, "%s", st.msg);
    r2 = o(second);
    if (keep) {
      tf_tensor *got = NULL;
      ok(run(g, &r2, 1, &got, NULL, &st), &st);
      expect_values(got, SHAPE(2), (double[]){10, 11});
      tf_tensor_unref(got);
    } else {
      expect_fail(g, r2, TF_FAILED_PRECONDITION, "TensorArray 'seq'",
                  "index 1 was already read", NULL);
    }
    tf_graph_free(g);
  }
}
END_TEST

/* With clear_after_read, a gather listing an index twice reads it twice. */
START_TEST(test_gather_twice) {
  tf_status st;
  tf_graph *g = tf_graph_new();
  tf_tensor_array_options named = {.name = "twice"};
  tf_tensor_array ta = three(g, 3, &named);
  tf_output out;
  ok(tf_tensor_array_gather(g, &ta, cvec(g, 3, (int32_t[]){2, 0, 2}), &out, &st), &st);
  expect_fail(g, out, TF_FAILED_PRECONDITION, "TensorArray 'twice'",
              "index 2 was already read", NULL);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_write_once_and_ranges) {
  tf_status st;
  /* A second write at one index. */
  tf_graph *g = tf_graph_new();
  tf_tensor_array_options named = {.name = "arr"};
  tf_tensor_array ta = three(g, 3, &named);
  ok(tf_tensor_array_write(g, &ta, ci(g, 1), cf(g, SHAPE(2), 0), &st), &st);
  tf_output out;
  ok(tf_tensor_array_read(g, &ta, ci(g, 0), &out, &st), &st);
  expect_fail(g, out, TF_FAILED_PRECONDITION, "TensorArray 'arr'",
              "index 1 was already written", NULL);
  tf_graph_free(g);
  /* Writing past a fixed size, reading past the size, negative index. */
  int32_t bad_write[2] = {3, -1};
  for (int k = 0; k < 2; k++) {
    g = tf_graph_new();
    ta = three(g, 3, &named);
    ok(tf_tensor_array_write(g, &ta, ci(g, bad_write[k]), cf(g, SHAPE(2), 0), &st), &st);
    ok(tf_tensor_array_read(g, &ta, ci(g, 0), &out, &st), &st);
    char want[64];
    snprintf(want, sizeof want, "index %d is out of range [0, 3)", bad_write[k]);
    expect_fail(g, out, TF_INVALID_ARGUMENT, "TensorArray 'arr'", want, NULL);
    tf_graph_free(g);
  }
  g = tf_graph_new();
  ta = three(g, 3, &named);
  ok(tf_tensor_array_read(g, &ta, ci(g, 7), &out, &st), &st);
  expect_fail(g, out, TF_INVALID_ARGUMENT, "index 7 is out of range [0, 3)", NULL);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_unwritten_elements) {
  tf_status st;
  tf_shape es = SHAPE(2, 2);
  for (int known = 0; known < 2; known++) {
    tf_graph *g = tf_graph_new();
    tf_tensor_array_options opts = {.element_shape = known ? &es : NULL,
                                    .name = "u"};
    tf_tensor_array ta;
    ok(tf_tensor_array_new(g, TF_FLOAT32, ci(g, 3), &opts, &ta, &st), &st);
    ok(tf_tensor_array_write(g, &ta, ci(g, 0), cf(g, SHAPE(2, 2), 1), &st), &st);
    tf_output out;
    ok(tf_tensor_array_stack(g, &ta, &out, &st), &st);
    if (known) {
      tf_tensor *got = NULL;
      ok(run(g, &out, 1, &got, NULL, &st), &st);
      expect_values(got, SHAPE(3, 2, 2),
                    (double[]){1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 0, 0});
      tf_tensor_unref(got);
    } else {
      expect_fail(g, out, TF_FAILED_PRECONDITION, "TensorArray 'u'",
                  "index 1 has not been written", "not fully defined", NULL);
    }
    tf_graph_free(g);
  }
}
END_TEST

START_TEST(test_bad_values) {
  tf_status st;
  /* A value of the wrong dtype, and one of the wrong shape: the shape
   * function sees the creator's element_shape and refuses at build time. */
  tf_graph *g = tf_graph_new();
  tf_shape es = SHAPE(2);
  tf_tensor_array_options opts = {.element_shape = &es, .name = "b"};
  tf_tensor_array ta;
  ok(tf_tensor_array_new(g, TF_FLOAT32, ci(g, 2), &opts, &ta, &st), &st);
  tf_tensor_array copy = ta;
  ck_assert(tf_tensor_array_write(g, &copy, ci(g, 0), cf(g, SHAPE(3), 0), &st) ==
            TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "value has shape [3]") != NULL, "%s", st.msg);
  tf_output v = o(tt_const(g, NULL, tf_tensor_vec_i32(2, (int32_t[]){1, 2})));
  /* The builder says T = the array's dtype; a raw node may say otherwise. */
  tf_node_builder *b = tf_node_begin(g, "TensorArrayWriteV3", NULL);
  tf_node_add_input(b, ta.handle);
  tf_node_add_input(b, ci(g, 0));
  tf_node_add_input(b, v);
  tf_node_add_input(b, ta.flow);
  tf_node *w = tf_node_finish(b, &st);
  ck_assert_msg(w != NULL, "%s", st.msg);
  ta.flow = o(w);
  tf_output out;
  ok(tf_tensor_array_size(g, &ta, &out, &st), &st);
  expect_fail(g, out, TF_INVALID_ARGUMENT, "TensorArray 'b' holds float32",
              "index 0 is int32", NULL);
  tf_graph_free(g);
  /* A size above the cap, and a negative one. */
  int32_t sizes[2] = {(1 << 22) + 1, -2};
  for (int k = 0; k < 2; k++) {
    g = tf_graph_new();
    ok(tf_tensor_array_new(g, TF_FLOAT32, ci(g, sizes[k]), &opts, &ta, &st), &st);
    ok(tf_tensor_array_size(g, &ta, &out, &st), &st);
    expect_fail(g, out, TF_INVALID_ARGUMENT, "TensorArray 'b': size",
                "is not in [0, 4194304]", NULL);
    tf_graph_free(g);
  }
}
END_TEST

START_TEST(test_close) {
  tf_status st;
  tf_graph *g = tf_graph_new();
  tf_tensor_array_options named = {.name = "c"};
  tf_tensor_array ta = three(g, 3, &named);
  tf_node *close;
  ok(tf_tensor_array_close(g, &ta, &close, &st), &st);
  tf_node_builder *b = tf_node_begin(g, "TensorArrayReadV3", NULL);
  tf_node_add_input(b, ta.handle);
  tf_node_add_input(b, ci(g, 0));
  tf_node_add_input(b, ta.flow);
  tf_node_set_attr(b, "dtype", tf_attr_type_v(TF_FLOAT32));
  tf_node_add_control_input(b, close);
  tf_node *r = tf_node_finish(b, &st);
  ck_assert_msg(r != NULL, "%s", st.msg);
  expect_fail(g, o(r), TF_FAILED_PRECONDITION, "TensorArray 'c' is closed", NULL);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_strings) {
  tf_status st;
  tf_graph *g = tf_graph_new();
  tf_tensor_array ta;
  ok(tf_tensor_array_new(g, TF_STRING, ci(g, 2), NULL, &ta, &st), &st);
  const char *words[2] = {"alpha", "beta"};
  for (int i = 0; i < 2; i++) {
    tf_tensor *t;
    tf_shape s = tf_shape_scalar();
    ck_assert(tf_tensor_new(TF_STRING, &s, &t, &st) == TF_OK);
    ck_assert(tf_tensor_set_string(t, 0, words[i], strlen(words[i]), &st) == TF_OK);
    ok(tf_tensor_array_write(g, &ta, ci(g, i), o(tt_const(g, NULL, t)), &st), &st);
  }
  tf_output out;
  ok(tf_tensor_array_stack(g, &ta, &out, &st), &st);
  tf_tensor *got = NULL;
  ok(run(g, &out, 1, &got, NULL, &st), &st);
  ck_assert_int_eq(got->n, 2);
  ck_assert_str_eq(tf_tensor_strings(got)[0].data, "alpha");
  ck_assert_str_eq(tf_tensor_strings(got)[1].data, "beta");
  tf_tensor_unref(got);
  tf_graph_free(g);
}
END_TEST

/* Each Run makes its own arrays: running the same writes twice in one
 * session is no second write, and the first step's array is gone. */
START_TEST(test_per_step) {
  tf_status st;
  tf_graph *g = tf_graph_new();
  tf_tensor_array ta = three(g, 3, NULL);
  tf_output out;
  ok(tf_tensor_array_stack(g, &ta, &out, &st), &st);
  tf_session_options opts = {.inter_op_threads = 2};
  tf_session *s = tf_session_new(g, &opts, &st);
  char name[128];
  const char *fetch = edge(out, name, sizeof name);
  for (int step = 0; step < 3; step++) {
    tf_tensor *got = NULL;
    ok(tf_session_run(s, NULL, NULL, NULL, 0, &fetch, &got, 1, NULL, 0, NULL, &st), &st);
    expect_values(got, SHAPE(3, 2), (double[]){0, 1, 10, 11, 20, 21});
    tf_tensor_unref(got);
  }
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

/* TensorArrayGradV3 straight: the gradient array has the forward size,
 * adds a second write at one index, reads unwritten elements as zeros of
 * the forward element's shape, and freezes a dynamic forward array. */
static tf_tensor_array grad_of(tf_graph *g, const tf_tensor_array *fwd) {
  tf_status st;
  tf_node_builder *b = tf_node_begin(g, "TensorArrayGradV3", NULL);
  tf_node_add_input(b, fwd->handle);
  tf_node_add_input(b, fwd->flow);
  tf_node_set_attr(b, "source", tf_attr_string("test"));
  tf_node *n = tf_node_finish(b, &st);
  ck_assert_msg(n != NULL, "%s", st.msg);
  return (tf_tensor_array){{n, 0}, {n, 1}, fwd->dtype};
}

START_TEST(test_grad_array) {
  tf_status st;
  tf_graph *g = tf_graph_new();
  tf_tensor_array_options dyn = {.dynamic_size = true, .name = "f"};
  tf_tensor_array ta;
  ok(tf_tensor_array_new(g, TF_FLOAT32, ci(g, 0), &dyn, &ta, &st), &st);
  for (int i = 0; i < 3; i++) {
    ok(tf_tensor_array_write(g, &ta, ci(g, i), cf(g, SHAPE(2), 10.0 * i), &st), &st);
  }
  tf_tensor_array gr = grad_of(g, &ta);
  ok(tf_tensor_array_write(g, &gr, ci(g, 1), cf(g, SHAPE(2), 1), &st), &st);
  ok(tf_tensor_array_write(g, &gr, ci(g, 1), cf(g, SHAPE(2), 5), &st), &st);
  tf_output out[2];
  ok(tf_tensor_array_stack(g, &gr, &out[0], &st), &st);
  ok(tf_tensor_array_size(g, &gr, &out[1], &st), &st);
  tf_tensor *got[2] = {0};
  ok(run(g, out, 2, got, NULL, &st), &st);
  expect_values(got[0], SHAPE(3, 2), (double[]){0, 0, 6, 8, 0, 0});
  ck_assert_int_eq(tf_tensor_get_i64(got[1], 0), 3);
  tt_free(got, 2);
  /* The forward array cannot grow any more. */
  tf_tensor_array after = ta;
  after.flow = gr.flow;
  ok(tf_tensor_array_write(g, &after, ci(g, 3), cf(g, SHAPE(2), 0), &st), &st);
  expect_fail(g, after.flow, TF_INVALID_ARGUMENT, "TensorArray 'f': index 3",
              "its size is frozen", NULL);
  tf_graph_free(g);
}
END_TEST

/* ---- in a while loop --------------------------------------------------------- */

/* vars: i, flow; invariants: handle, x ([n]). Writes x * i at i. */
static tf_code body(tf_graph *g, const tf_output *v, int n_v,
                    const tf_output *inv, int n_inv, tf_output *out,
                    void *arg, tf_status *st) {
  tf_output xi = o(tt_node(g, "Cast", NULL, &v[0], 1,
                           (tf_attr_kv[]){{"DstT", tf_attr_type_v(TF_FLOAT32)}}, 1));
  tf_output val = o(tt_node(g, "Mul", NULL, (tf_output[]){inv[1], xi}, 2, NULL, 0));
  tf_tensor_array ta = {inv[0], v[1], TF_FLOAT32};
  if (tf_tensor_array_write(g, &ta, v[0], val, st) != TF_OK) return st->code;
  tf_output one = o(tt_const(g, NULL, tf_tensor_scalar_i32(1)));
  out[0] = o(tt_node(g, "Add", NULL, (tf_output[]){v[0], one}, 2, NULL, 0));
  out[1] = ta.flow;
  return TF_OK;
}

static tf_code cond(tf_graph *g, const tf_output *v, int n_v,
                    const tf_output *inv, int n_inv, tf_output *out,
                    void *arg, tf_status *st) {
  tf_output n = o(tt_const(g, NULL, tf_tensor_scalar_i32(*(int32_t *)arg)));
  *out = o(tt_node(g, "Less", NULL, (tf_output[]){v[0], n}, 2, NULL, 0));
  return TF_OK;
}

START_TEST(test_write_in_while_loop) {
  tf_status st;
  tf_graph *g = tf_graph_new();
  int32_t steps = 6;
  tf_tensor_array ta;
  tf_tensor_array_options dyn = {.dynamic_size = true};
  ok(tf_tensor_array_new(g, TF_FLOAT32, ci(g, 0), &dyn, &ta, &st), &st);
  tf_output x = cf(g, SHAPE(2), 1); /* [1, 2] */
  tf_output vars[2] = {ci(g, 0), ta.flow}, inv[2] = {ta.handle, x}, outs[2];
  ok(tf_while_loop(g, "loop", vars, 2, inv, 2, cond, body, &steps, 4, outs,
                   &st), &st);
  ta.flow = outs[1];
  tf_output out;
  ok(tf_tensor_array_stack(g, &ta, &out, &st), &st);
  tf_tensor *got = NULL;
  ok(run(g, &out, 1, &got, NULL, &st), &st);
  double want[12];
  for (int i = 0; i < 6; i++) {
    want[2 * i] = i;
    want[2 * i + 1] = 2 * i;
  }
  expect_values(got, SHAPE(6, 2), want);
  tf_tensor_unref(got);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_tensor_array");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_write_read_stack_concat);
  tcase_add_test(tc, test_scatter_gather_split);
  tcase_add_test(tc, test_unstack_stack_roundtrip);
  tcase_add_test(tc, test_dynamic_size);
  tcase_add_test(tc, test_clear_after_read);
  tcase_add_test(tc, test_gather_twice);
  tcase_add_test(tc, test_write_once_and_ranges);
  tcase_add_test(tc, test_unwritten_elements);
  tcase_add_test(tc, test_bad_values);
  tcase_add_test(tc, test_close);
  tcase_add_test(tc, test_strings);
  tcase_add_test(tc, test_per_step);
  tcase_add_test(tc, test_grad_array);
  tcase_add_test(tc, test_write_in_while_loop);
  suite_add_tcase(s, tc);
  return s;
}
