/* cpu_state_test.c: the variable kernels through a session
 * (include/tf/session.h). Reading an uninitialized variable (through a
 * consumer or by fetching the ref) fails naming it; Assign then read,
 * across Runs; shape validation; AssignAdd/AssignSub (also one big enough
 * for the intra-op pool) and ScatterUpdate/Add/Sub against a plain
 * recomputation on random data (duplicate indices, 1-D and 2-D indices,
 * int32 and int64 indices, scalar updates), fed values never written, bad
 * indices named with their position and leaving the variable unchanged;
 * output_ref chains to the same variable; IsVariableInitialized;
 * shared_name sharing and its dtype/shape conflicts; resetting the default
 * container or "c2" leaves the other alone; two sessions are separate; 8
 * threads of 1,000 AssignAdd and ScatterSub steps (duplicate indices) give
 * the exact total with 1 and 4 inter-op threads, with use_locking left at
 * TF's default false (the kernels lock anyway); a concurrent reader only
 * sees whole snapshots; the kernels refuse to run eagerly. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "lib/core/framework/kernel.h"
#include "test/unit/testutil.h"
#include "tf/session.h"

#define U TF_UNKNOWN_DIM

/* ---- graph helpers ------------------------------------------------------- */

static tf_node *node(tf_graph *g, const char *op, const char *name,
                     tf_node *const *in, int n_in, const tf_attr_kv *attrs,
                     int n_attrs) {
  tf_status st;
  tf_node_builder *b = tf_node_begin(g, op, name);
  for (int i = 0; i < n_in; i++) {
    tf_node_add_input(b, (tf_output){in[i], 0});
  }
  for (int i = 0; i < n_attrs; i++) {
    tf_node_set_attr(b, attrs[i].name, attrs[i].value);
  }
  tf_node *n = tf_node_finish(b, &st);
  ck_assert_msg(n != NULL, "%s %s: %s", op, name ? name : "", st.msg);
  return n;
}

static tf_node *var(tf_graph *g, const char *name, tf_dtype dt, tf_shape shape,
                    const char *container, const char *shared) {
  tf_attr_kv a[] = {{"dtype", tf_attr_type_v(dt)},
                    {"shape", tf_attr_shape(shape)},
                    {"container", tf_attr_string(container)},
                    {"shared_name", tf_attr_string(shared)}};
  return node(g, "VariableV2", name, NULL, 0, a, 4);
}

static tf_node *op1(tf_graph *g, const char *op, const char *name,
                    tf_node *a) {
  return node(g, op, name, &a, 1, NULL, 0);
}

static tf_node *op2(tf_graph *g, const char *op, const char *name, tf_node *a,
                    tf_node *b) {
  tf_node *in[] = {a, b};
  return node(g, op, name, in, 2, NULL, 0);
}

static tf_node *op3(tf_graph *g, const char *op, const char *name, tf_node *a,
                    tf_node *b, tf_node *c) {
  tf_node *in[] = {a, b, c};
  return node(g, op, name, in, 3, NULL, 0);
}

static tf_node *constant(tf_graph *g, const char *name, tf_tensor *t) {
  tf_attr_kv a[] = {{"value", tf_attr_tensor(t)},
                    {"dtype", tf_attr_type_v(t->dtype)}};
  tf_node *n = node(g, "Const", name, NULL, 0, a, 2);
  tf_tensor_unref(t);
  return n;
}

/* ---- run helpers --------------------------------------------------------- */

static tf_session *session(tf_graph *g, int inter_op) {
  tf_session_options o = {.inter_op_threads = inter_op};
  tf_status st;
  tf_session *s = tf_session_new(g, &o, &st);
  ck_assert_msg(s != NULL, "%s", st.msg);
  return s;
}

/* One step: feeds fn[i] = fv[i], fetch (may be NULL) into *out, target
 * (may be NULL). */
static tf_code run(tf_session *s, int n_feeds, const char *const *fn,
                   tf_tensor *const *fv, const char *fetch, tf_tensor **out,
                   const char *target, tf_status *st) {
  tf_run_options o = {.timeout_ms = 20000};
  tf_tensor *dummy = NULL;
  return tf_session_run(s, &o, fn, fv, n_feeds, fetch ? &fetch : NULL,
                        out ? out : &dummy, fetch ? 1 : 0,
                        target ? &target : NULL, target ? 1 : 0, NULL, st);
}

static void run_target(tf_session *s, const char *target, int n_feeds,
                       const char *const *fn, tf_tensor *const *fv) {
  tf_status st;
  ck_assert_msg(run(s, n_feeds, fn, fv, NULL, NULL, target, &st) == TF_OK,
                "%s: %s", target, st.msg);
}

/* Runs target with one feed. */
static void run_fed(tf_session *s, const char *target, const char *feed,
                    tf_tensor *value) {
  run_target(s, target, 1, &feed, &value);
}

static tf_tensor *fetch(tf_session *s, const char *name) {
  tf_tensor *t = NULL;
  tf_status st;
  ck_assert_msg(run(s, 0, NULL, NULL, name, &t, NULL, &st) == TF_OK, "%s: %s",
                name, st.msg);
  return t;
}

/* Runs (fetching `fetch` or running `target`) expecting code; returns the
 * message in a static buffer. */
static const char *run_fail(tf_session *s, int n_feeds, const char *const *fn,
                            tf_tensor *const *fv, const char *fetch,
                            const char *target, tf_code code) {
  static tf_status st;
  tf_tensor *t = NULL;
  tf_code rc = run(s, n_feeds, fn, fv, fetch, &t, target, &st);
  ck_assert_msg(rc == code, "want %s, got %s: %s", tf_code_name(code),
                tf_code_name(rc), st.msg);
  ck_assert_ptr_null(t);
  return st.msg;
}

static bool fetch_bool(tf_session *s, const char *name) {
  tf_tensor *t = fetch(s, name);
  ck_assert_int_eq(t->dtype, TF_BOOL);
  bool b = *(bool *)t->data;
  tf_tensor_unref(t);
  return b;
}

static void assert_has(const char *msg, const char *want) {
  ck_assert_msg(strstr(msg, want) != NULL, "'%s' not in '%s'", want, msg);
}

/* ---- uninitialized, Assign, IsVariableInitialized ------------------------ */

START_TEST(test_uninitialized_then_assign) {
  tf_graph *g = tf_graph_new();
  tf_node *v = var(g, "v", TF_FLOAT32, tf_shape_of(2, 2, 3), "", "");
  tf_node *p = tt_placeholder(g, "p", TF_FLOAT32, tf_shape_of(2, 2, 3));
  tf_node *pu = tt_placeholder(g, "pu", TF_FLOAT32, tf_shape_unknown());
  op1(g, "Identity", "r", v);
  op1(g, "IsVariableInitialized", "init", v);
  op2(g, "Assign", "assign", v, p);
  op2(g, "Assign", "assign_u", v, pu);
  tf_attr_kv nv[] = {{"validate_shape", tf_attr_bool(false)}};
  node(g, "Assign", "assign_any", (tf_node *[]){v, pu}, 2, nv, 1);
  tf_session *s = session(g, 2);
  ck_assert(!fetch_bool(s, "init"));
  const char *msg = run_fail(s, 0, NULL, NULL, "r", NULL,
                             TF_FAILED_PRECONDITION);
  assert_has(msg, "Attempting to use uninitialized value v");
  msg = run_fail(s, 0, NULL, NULL, "v", NULL, TF_FAILED_PRECONDITION);
  assert_has(msg, "Attempting to use uninitialized value v");
  tf_tensor *x = tt_rand(TF_FLOAT32, tf_shape_of(2, 2, 3), -5, 5);
  run_fed(s, "assign", "p", x);
  ck_assert(fetch_bool(s, "init"));
  for (int k = 0; k < 3; k++) { /* persists across Runs */
    tf_tensor *r = fetch(s, k == 1 ? "v" : "r"); /* the ref itself, too */
    tt_assert_close(r, x, 0, 0);
    tf_tensor_unref(r);
  }
  /* validate_shape: the value must fit; the variable is left unchanged. */
  tf_tensor *bad = tt_rand(TF_FLOAT32, tf_shape_of(1, 3), -5, 5);
  const char *fn[] = {"pu"};
  msg = run_fail(s, 1, fn, &bad, NULL, "assign_u", TF_INVALID_ARGUMENT);
  assert_has(msg, "assign_u");
  assert_has(msg, "variable v has shape [2,3]");
  tf_tensor *r = fetch(s, "r");
  tt_assert_close(r, x, 0, 0);
  tf_tensor_unref(r);
  /* validate_shape=false: any shape. */
  run_fed(s, "assign_any", "pu", bad);
  r = fetch(s, "r");
  tt_assert_close(r, bad, 0, 0);
  tf_tensor_unref(r);
  msg = run_fail(s, 1, fn, &x, NULL, "assign_u", TF_INVALID_ARGUMENT);
  assert_has(msg, "Assign requires shapes of both tensors to match");
  tf_tensor_unref(bad);
  tf_tensor_unref(x);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

/* The update kernels' output_ref is the variable itself: a consumer reads
 * it after the update, in the same step. */
START_TEST(test_output_ref_chains) {
  tf_graph *g = tf_graph_new();
  tf_node *v = var(g, "v", TF_INT64, tf_shape_of(1, 3), "", "");
  tf_node *init =
      constant(g, "init_value", tf_tensor_vec_i64(3, (int64_t[]){1, 2, 3}));
  tf_node *a = op2(g, "Assign", "assign", v, init);
  op1(g, "Identity", "after_assign", a);
  tf_node *d = constant(g, "d", tf_tensor_vec_i64(3, (int64_t[]){10, 10, 10}));
  tf_node *add = op2(g, "AssignAdd", "add", v, d);
  tf_node *sub = op2(g, "AssignSub", "sub", add, d); /* chained ref */
  op1(g, "Identity", "after_add", add);
  op1(g, "Identity", "after_sub", sub);
  tf_node *idx = constant(g, "idx", tf_tensor_vec_i32(1, (int32_t[]){2}));
  tf_node *up = constant(g, "up", tf_tensor_vec_i64(1, (int64_t[]){-7}));
  op1(g, "Identity", "after_scatter",
      op3(g, "ScatterUpdate", "scatter", v, idx, up));
  op1(g, "IsVariableInitialized", "init_chain", a);
  tf_session *s = session(g, 2);
  tf_tensor *t = fetch(s, "after_assign");
  tf_tensor *want = tf_tensor_vec_i64(3, (int64_t[]){1, 2, 3});
  tt_assert_close(t, want, 0, 0);
  tf_tensor_unref(t);
  tf_tensor_unref(want);
  t = fetch(s, "after_add");
  want = tf_tensor_vec_i64(3, (int64_t[]){11, 12, 13});
  tt_assert_close(t, want, 0, 0);
  tf_tensor_unref(t);
  tf_tensor_unref(want);
  t = fetch(s, "after_sub"); /* add (+10) then sub (-10) */
  want = tf_tensor_vec_i64(3, (int64_t[]){11, 12, 13});
  tt_assert_close(t, want, 0, 0);
  tf_tensor_unref(t);
  tf_tensor_unref(want);
  t = fetch(s, "after_scatter");
  want = tf_tensor_vec_i64(3, (int64_t[]){11, 12, -7});
  tt_assert_close(t, want, 0, 0);
  tf_tensor_unref(t);
  tf_tensor_unref(want);
  ck_assert(fetch_bool(s, "init_chain"));
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

/* ---- AssignAdd / AssignSub against a recomputation ----------------------- */

static const tf_dtype arith_types[] = {TF_FLOAT32, TF_FLOAT64, TF_INT32,
                                       TF_INT64};

/* Compares got with want (doubles, recomputed in the same order as the
 * kernel): exact for integers, float64 up to rounding noise; float32
 * rounds every step, so |values| <= ~400 allow 1e-3. */
static void assert_values(tf_tensor *got, const double *want, tf_shape shape) {
  tf_tensor *w = tt_tensor(got->dtype, shape, want);
  double atol = got->dtype == TF_FLOAT32   ? 1e-3
                : got->dtype == TF_FLOAT64 ? 1e-12
                                           : 0;
  tt_assert_close(got, w, atol, atol > 0 ? 1e-6 : 0);
  tf_tensor_unref(w);
}

START_TEST(test_assign_add_sub_random) {
  for (size_t k = 0; k < sizeof arith_types / sizeof *arith_types; k++) {
    tf_dtype dt = arith_types[k];
    tf_shape sh = tf_shape_of(2, 4, 5);
    tf_graph *g = tf_graph_new();
    tf_node *v = var(g, "v", dt, sh, "", "");
    tf_node *p = tt_placeholder(g, "p", dt, sh);
    tf_node *d = tt_placeholder(g, "d", dt, tf_shape_unknown());
    op2(g, "Assign", "assign", v, p);
    op2(g, "AssignAdd", "add", v, d);
    op2(g, "AssignSub", "sub", v, d);
    op1(g, "Identity", "r", v);
    tf_session *s = session(g, 2);
    const char *fd[] = {"d"};
    tf_tensor *d0 = tt_rand(dt, sh, -50, 50);
    const char *msg = run_fail(s, 1, fd, &d0, NULL, "add",
                               TF_FAILED_PRECONDITION);
    assert_has(msg, "uninitialized value v");
    tf_tensor *x = tt_rand(dt, sh, -50, 50), *x0;
    tf_status st;
    ck_assert_int_eq(tf_tensor_copy(x, &x0, &st), TF_OK);
    run_fed(s, "assign", "p", x);
    double want[20];
    for (int i = 0; i < 20; i++) {
      want[i] = tf_tensor_get_f64(x, i);
    }
    for (int step = 0; step < 6; step++) {
      bool sub = tt_rand_u64() & 1;
      tf_tensor *delta = tt_rand(dt, sh, -50, 50);
      run_fed(s, sub ? "sub" : "add", "d", delta);
      for (int i = 0; i < 20; i++) {
        want[i] += (sub ? -1 : 1) * tf_tensor_get_f64(delta, i);
      }
      tf_tensor *r = fetch(s, "r");
      assert_values(r, want, sh);
      tf_tensor_unref(r);
      tf_tensor_unref(delta);
    }
    tf_tensor *wrong = tt_rand(dt, tf_shape_of(1, 20), -5, 5);
    msg = run_fail(s, 1, fd, &wrong, NULL, "sub", TF_INVALID_ARGUMENT);
    assert_has(msg, "variable v has shape [4,5] but the value has shape [20]");
    tf_tensor *r = fetch(s, "r");
    assert_values(r, want, sh);
    tt_assert_close(x, x0, 0, 0); /* the fed value was never written */
    tf_tensor *arr[] = {r, wrong, x, x0, d0};
    tt_free(arr, 5);
    tf_session_free(s);
    tf_graph_free(g);
  }
}
END_TEST

/* Large enough for the intra-op pool to split the loop. */
START_TEST(test_assign_add_large) {
  enum { N = 100003 };
  tf_graph *g = tf_graph_new();
  tf_node *v = var(g, "big", TF_FLOAT64, tf_shape_of(1, N), "", "");
  op2(g, "Assign", "assign", v, tt_placeholder(g, "p", TF_FLOAT64,
                                                tf_shape_of(1, N)));
  op2(g, "AssignSub", "sub", v, tt_placeholder(g, "d", TF_FLOAT64,
                                               tf_shape_of(1, N)));
  op1(g, "Identity", "r", v);
  tf_session *s = session(g, 2);
  tf_tensor *x = tt_rand(TF_FLOAT64, tf_shape_of(1, N), -1, 1);
  tf_tensor *d = tt_rand(TF_FLOAT64, tf_shape_of(1, N), -1, 1);
  run_fed(s, "assign", "p", x);
  run_fed(s, "sub", "d", d);
  tf_tensor *r = fetch(s, "r");
  const double *xv = x->data, *dv = d->data, *rv = r->data;
  for (int i = 0; i < N; i++) {
    if (rv[i] != xv[i] - dv[i]) {
      ck_abort_msg("element %d: got %g, want %g", i, rv[i], xv[i] - dv[i]);
    }
  }
  tf_tensor *arr[] = {x, d, r};
  tt_free(arr, 3);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

/* ---- Scatter* against a recomputation ------------------------------------ */

enum { ROWS = 6, COLS = 3 };

/* Runs `op` on the variable (reset to x first) with indices and updates,
 * and checks the result against the same update done here. */
static void check_scatter(tf_session *s, const char *op, tf_tensor *x,
                          tf_tensor *idx, tf_tensor *upd) {
  run_fed(s, "assign", "p", x);
  const char *fn[] = {"i", "u"};
  tf_tensor *fv[] = {idx, upd};
  run_target(s, op, 2, fn, fv);
  double want[ROWS * COLS];
  for (int i = 0; i < ROWS * COLS; i++) {
    want[i] = tf_tensor_get_f64(x, i);
  }
  bool scalar = upd->shape.rank == 0;
  for (int64_t k = 0; k < idx->n; k++) {
    int64_t row = tf_tensor_get_i64(idx, k);
    for (int c = 0; c < COLS; c++) {
      double u = tf_tensor_get_f64(upd, scalar ? 0 : k * COLS + c);
      double *w = &want[row * COLS + c];
      *w = strcmp(op, "scatter_update") == 0 ? u
           : strcmp(op, "scatter_add") == 0  ? *w + u
                                             : *w - u;
    }
  }
  tf_tensor *r = fetch(s, "r");
  assert_values(r, want, tf_shape_of(2, ROWS, COLS));
  tf_tensor_unref(r);
}

/* Random indices of shape ishape (some duplicated) and matching updates. */
static void scatter_case(tf_session *s, tf_dtype dt, tf_dtype it,
                         tf_shape ishape, bool scalar_updates) {
  const char *ops[] = {"scatter_update", "scatter_add", "scatter_sub"};
  int64_t n = tf_shape_num_elements(&ishape);
  int64_t iv[16];
  for (int64_t k = 0; k < n; k++) {
    iv[k] = (int64_t)(tt_rand_u64() % ROWS);
  }
  if (n >= 3) {
    iv[2] = iv[0]; /* a guaranteed duplicate */
  }
  tf_tensor *idx = tt_tensor_i(it, ishape, iv);
  tf_shape ushape = ishape;
  ushape.dims[ushape.rank++] = COLS;
  if (scalar_updates) {
    ushape = tf_shape_scalar();
  }
  for (int o = 0; o < 3; o++) {
    if (o > 0 && dt != TF_FLOAT32 && dt != TF_FLOAT64 && dt != TF_INT32 &&
        dt != TF_INT64) {
      break; /* only ScatterUpdate for other dtypes */
    }
    double lo = tf_dtype_is_signed(dt) ? -50 : 0;
    tf_tensor *x = tt_rand(dt, tf_shape_of(2, ROWS, COLS), lo, 50);
    tf_tensor *upd = tt_rand(dt, ushape, lo, 50);
    check_scatter(s, ops[o], x, idx, upd);
    tf_tensor_unref(x);
    tf_tensor_unref(upd);
  }
  tf_tensor_unref(idx);
}

/* A graph with variable v [ROWS, COLS] of dt and the three scatters fed by
 * placeholders i (indices of dtype it) and u. */
static tf_graph *scatter_graph(tf_dtype dt, tf_dtype it, bool arith) {
  tf_graph *g = tf_graph_new();
  tf_node *v = var(g, "v", dt, tf_shape_of(2, ROWS, COLS), "", "");
  tf_node *p = tt_placeholder(g, "p", dt, tf_shape_unknown());
  tf_node *i = tt_placeholder(g, "i", it, tf_shape_unknown());
  tf_node *u = tt_placeholder(g, "u", dt, tf_shape_unknown());
  op2(g, "Assign", "assign", v, p);
  op3(g, "ScatterUpdate", "scatter_update", v, i, u);
  if (arith) {
    op3(g, "ScatterAdd", "scatter_add", v, i, u);
    op3(g, "ScatterSub", "scatter_sub", v, i, u);
  }
  op1(g, "Identity", "r", v);
  return g;
}

START_TEST(test_scatter_random) {
  const tf_dtype types[] = {TF_FLOAT32, TF_FLOAT64, TF_INT32, TF_INT64,
                            TF_INT8, TF_UINT16};
  for (size_t k = 0; k < sizeof types / sizeof *types; k++) {
    for (int ti = 0; ti < 2; ti++) {
      tf_dtype dt = types[k], it = ti ? TF_INT64 : TF_INT32;
      bool arith = k < 4;
      tf_graph *g = scatter_graph(dt, it, arith);
      tf_session *s = session(g, 2);
      scatter_case(s, dt, it, tf_shape_of(1, 10), false);
      scatter_case(s, dt, it, tf_shape_of(2, 2, 4), false);
      scatter_case(s, dt, it, tf_shape_of(1, 4), true);
      scatter_case(s, dt, it, tf_shape_of(1, 0), false);
      tf_session_free(s);
      tf_graph_free(g);
    }
  }
}
END_TEST

START_TEST(test_scatter_errors) {
  tf_graph *g = scatter_graph(TF_FLOAT64, TF_INT64, true);
  tf_session *s = session(g, 2);
  const char *fn[] = {"i", "u"};
  tf_tensor *idx = tt_tensor_i(TF_INT64, tf_shape_of(1, 2),
                               (int64_t[]){0, 1});
  tf_tensor *upd = tt_rand(TF_FLOAT64, tf_shape_of(2, 2, COLS), -1, 1);
  tf_tensor *fv[] = {idx, upd};
  const char *msg = run_fail(s, 2, fn, fv, NULL, "scatter_add",
                             TF_FAILED_PRECONDITION);
  assert_has(msg, "uninitialized value v");
  tf_tensor *x = tt_rand(TF_FLOAT64, tf_shape_of(2, ROWS, COLS), -1, 1);
  run_fed(s, "assign", "p", x);
  tf_tensor *bad_idx = tt_tensor_i(TF_INT64, tf_shape_of(2, 2, 2),
                                   (int64_t[]){0, 1, 6, 2});
  tf_tensor *upd4 = tt_rand(TF_FLOAT64, tf_shape_of(3, 2, 2, COLS), -1, 1);
  tf_tensor *fv2[] = {bad_idx, upd4};
  const char *ops[] = {"scatter_update", "scatter_add", "scatter_sub"};
  for (int o = 0; o < 3; o++) {
    msg = run_fail(s, 2, fn, fv2, NULL, ops[o], TF_INVALID_ARGUMENT);
    assert_has(msg, "indices[1,0] = 6 is not in [0, 6)");
    assert_has(msg, ops[o]);
  }
  tf_tensor *neg = tt_tensor_i(TF_INT64, tf_shape_of(1, 2),
                               (int64_t[]){3, -1});
  tf_tensor *fv3[] = {neg, upd};
  msg = run_fail(s, 2, fn, fv3, NULL, "scatter_update", TF_INVALID_ARGUMENT);
  assert_has(msg, "indices[1] = -1 is not in [0, 6)");
  tf_tensor *fv4[] = {idx, upd4}; /* updates of the wrong shape */
  msg = run_fail(s, 2, fn, fv4, NULL, "scatter_sub", TF_INVALID_ARGUMENT);
  assert_has(msg, "Must have updates.shape = indices.shape + params.shape[1:]");
  assert_has(msg, "[2,2,3]");
  tf_tensor *r = fetch(s, "r"); /* every failure left v unchanged */
  tt_assert_close(r, x, 0, 0);
  tf_tensor *arr[] = {r, x, idx, upd, bad_idx, upd4, neg};
  tt_free(arr, 7);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

/* ---- sharing, containers, sessions --------------------------------------- */

START_TEST(test_shared_name) {
  tf_graph *g = tf_graph_new();
  tf_node *a = var(g, "a", TF_FLOAT64, tf_shape_of(1, 3), "", "shared");
  tf_node *b = var(g, "b", TF_FLOAT64, tf_shape_of(1, U), "", "shared");
  tf_node *c = var(g, "c", TF_INT32, tf_shape_of(1, 3), "", "shared");
  tf_node *d = var(g, "d", TF_FLOAT64, tf_shape_of(2, 3, 1), "", "shared");
  tf_node *e = var(g, "e", TF_FLOAT64, tf_shape_of(1, 3), "", "");
  tf_node *p = tt_placeholder(g, "p", TF_FLOAT64, tf_shape_of(1, 3));
  op2(g, "Assign", "assign_a", a, p);
  op1(g, "Identity", "read_b", b);
  op1(g, "IsVariableInitialized", "init_c", c);
  op1(g, "IsVariableInitialized", "init_d", d);
  op1(g, "IsVariableInitialized", "init_e", e);
  tf_session *s = session(g, 2);
  tf_tensor *x = tt_rand(TF_FLOAT64, tf_shape_of(1, 3), -1, 1);
  run_fed(s, "assign_a", "p", x);
  tf_tensor *r = fetch(s, "read_b");
  tt_assert_close(r, x, 0, 0);
  tf_tensor_unref(r);
  ck_assert(!fetch_bool(s, "init_e")); /* e has its own variable */
  const char *msg = run_fail(s, 0, NULL, NULL, "init_c", NULL,
                             TF_INVALID_ARGUMENT);
  assert_has(msg, "Trying to share variable shared, but specified dtype "
                  "int32 and found dtype float64");
  msg = run_fail(s, 0, NULL, NULL, "init_d", NULL, TF_INVALID_ARGUMENT);
  assert_has(msg, "Trying to share variable shared, but specified shape "
                  "[3,1] and found shape [3]");
  tf_tensor_unref(x);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_reset_containers) {
  tf_graph *g = tf_graph_new();
  tf_node *v = var(g, "v", TF_INT32, tf_shape_of(1, 2), "", "");
  tf_node *w = var(g, "w", TF_INT32, tf_shape_of(1, 2), "c2", "");
  tf_node *p = tt_placeholder(g, "p", TF_INT32, tf_shape_of(1, 2));
  op2(g, "Assign", "assign_v", v, p);
  op2(g, "Assign", "assign_w", w, p);
  op1(g, "IsVariableInitialized", "init_v", v);
  op1(g, "IsVariableInitialized", "init_w", w);
  op1(g, "Identity", "read_v", v);
  op1(g, "Identity", "read_w", w);
  tf_session *s = session(g, 2);
  tf_tensor *x = tt_rand(TF_INT32, tf_shape_of(1, 2), -9, 9);
  run_fed(s, "assign_v", "p", x);
  run_fed(s, "assign_w", "p", x);
  tf_status st;
  ck_assert_int_eq(tf_session_reset(s, NULL, 0, &st), TF_OK); /* default */
  ck_assert(!fetch_bool(s, "init_v"));
  ck_assert(fetch_bool(s, "init_w"));
  const char *msg = run_fail(s, 0, NULL, NULL, "read_v", NULL,
                             TF_FAILED_PRECONDITION);
  assert_has(msg, "uninitialized value v");
  tf_tensor *r = fetch(s, "read_w");
  tt_assert_close(r, x, 0, 0);
  tf_tensor_unref(r);
  run_fed(s, "assign_v", "p", x);
  const char *c2[] = {"c2"};
  ck_assert_int_eq(tf_session_reset(s, c2, 1, &st), TF_OK);
  ck_assert(fetch_bool(s, "init_v"));
  ck_assert(!fetch_bool(s, "init_w"));
  r = fetch(s, "read_v");
  tt_assert_close(r, x, 0, 0);
  tf_tensor_unref(r);
  run_fed(s, "assign_w", "p", x);
  const char *both[] = {"", "c2"};
  ck_assert_int_eq(tf_session_reset(s, both, 2, &st), TF_OK);
  ck_assert(!fetch_bool(s, "init_v"));
  ck_assert(!fetch_bool(s, "init_w"));
  tf_tensor_unref(x);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_two_sessions) {
  tf_graph *g = tf_graph_new();
  tf_node *v = var(g, "v", TF_FLOAT32, tf_shape_of(0), "", "");
  tf_node *p = tt_placeholder(g, "p", TF_FLOAT32, tf_shape_of(0));
  op2(g, "Assign", "assign", v, p);
  op1(g, "Identity", "r", v);
  tf_session *s1 = session(g, 1), *s2 = session(g, 2);
  tf_tensor *one = tf_tensor_scalar_f32(1), *two = tf_tensor_scalar_f32(2);
  run_fed(s1, "assign", "p", one);
  const char *msg = run_fail(s2, 0, NULL, NULL, "r", NULL,
                             TF_FAILED_PRECONDITION);
  assert_has(msg, "uninitialized value v");
  run_fed(s2, "assign", "p", two);
  tf_tensor *r1 = fetch(s1, "r"), *r2 = fetch(s2, "r");
  tt_assert_close(r1, one, 0, 0);
  tt_assert_close(r2, two, 0, 0);
  tf_tensor *arr[] = {r1, r2, one, two};
  tt_free(arr, 4);
  tf_session_free(s1);
  tf_session_free(s2);
  tf_graph_free(g);
}
END_TEST

/* ---- concurrency --------------------------------------------------------- */

#define ADD_THREADS 8
#define ADD_STEPS 1000

typedef struct adder {
  tf_session *s;
  int failures;
  char msg[TF_STATUS_MSG_MAX];
} adder;

static void *add_loop(void *arg) {
  adder *a = arg;
  const char *targets[] = {"add_i", "add_f", "sub_s"};
  tf_run_options o = {.timeout_ms = 20000};
  tf_status st;
  for (int i = 0; i < ADD_STEPS; i++) {
    if (tf_session_run(a->s, &o, NULL, NULL, 0, NULL, NULL, 0, targets, 3,
                       NULL, &st) != TF_OK) {
      a->failures++;
      memcpy(a->msg, st.msg, sizeof a->msg);
    }
  }
  return NULL;
}

START_TEST(test_concurrent_assign_add) {
  const int inter_op[] = {1, 4};
  for (int c = 0; c < 2; c++) {
    tf_graph *g = tf_graph_new();
    tf_node *vi = var(g, "vi", TF_INT64, tf_shape_of(1, 3), "", "");
    tf_node *vf = var(g, "vf", TF_FLOAT32, tf_shape_of(0), "", "");
    op2(g, "Assign", "init_i", vi,
        constant(g, "zi", tf_tensor_vec_i64(3, (int64_t[]){0, 0, 0})));
    op2(g, "Assign", "init_f", vf, constant(g, "zf", tf_tensor_scalar_f32(0)));
    tf_node *vs = var(g, "vs", TF_FLOAT32, tf_shape_of(1, 3), "", "");
    op2(g, "Assign", "init_s", vs,
        constant(g, "zs", tf_tensor_vec_f32(3, (float[]){0, 0, 0})));
    tf_node *add = op2(g, "AssignAdd", "add_i", vi,
        constant(g, "di", tf_tensor_vec_i64(3, (int64_t[]){1, 2, 3})));
    op2(g, "AssignAdd", "add_f", vf,
        constant(g, "df", tf_tensor_scalar_f32(0.25f)));
    tf_node *sub = op3(g, "ScatterSub", "sub_s", vs,
        constant(g, "is", tf_tensor_vec_i32(3, (int32_t[]){2, 0, 2})),
        constant(g, "us", tf_tensor_vec_f32(3, (float[]){0.5f, 1, 0.5f})));
    bool lock = true;
    tf_status st;
    ck_assert_int_eq(tf_node_attr_get_bool(add, "use_locking", &lock, &st),
                     TF_OK);
    ck_assert(!lock);
    ck_assert_int_eq(tf_node_attr_get_bool(sub, "use_locking", &lock, &st),
                     TF_OK);
    ck_assert(!lock);
    op1(g, "Identity", "ri", vi);
    op1(g, "Identity", "rf", vf);
    op1(g, "Identity", "rs", vs);
    tf_session *s = session(g, inter_op[c]);
    run_target(s, "init_i", 0, NULL, NULL);
    run_target(s, "init_f", 0, NULL, NULL);
    run_target(s, "init_s", 0, NULL, NULL);
    adder a[ADD_THREADS];
    pthread_t th[ADD_THREADS];
    for (int i = 0; i < ADD_THREADS; i++) {
      a[i] = (adder){.s = s};
      pthread_create(&th[i], NULL, add_loop, &a[i]);
    }
    for (int i = 0; i < ADD_THREADS; i++) {
      pthread_join(th[i], NULL);
      ck_assert_msg(a[i].failures == 0, "%d failures: %s", a[i].failures,
                    a[i].msg);
    }
    const int64_t n = ADD_THREADS * ADD_STEPS;
    tf_tensor *ri = fetch(s, "ri"), *rf = fetch(s, "rf"), *rs = fetch(s, "rs");
    tf_tensor *wi = tf_tensor_vec_i64(3, (int64_t[]){n, 2 * n, 3 * n});
    tf_tensor *wf = tf_tensor_scalar_f32(0.25f * (float)n); /* exact */
    tf_tensor *ws = tf_tensor_vec_f32(3, (float[]){-(float)n, 0,
                                                   -(float)n}); /* exact */
    tt_assert_close(ri, wi, 0, 0);
    tt_assert_close(rf, wf, 0, 0);
    tt_assert_close(rs, ws, 0, 0);
    tf_tensor *arr[] = {ri, rf, rs, wi, wf, ws};
    tt_free(arr, 6);
    tf_session_free(s);
    tf_graph_free(g);
  }
}
END_TEST

#define SNAP_N 2048
#define SNAP_WRITERS 3
#define SNAP_STEPS 300

typedef struct snap {
  tf_session *s;
  atomic_int writers_left;
  atomic_int bad;
  int reads;
  char msg[TF_STATUS_MSG_MAX];
} snap;

static void *snap_writer(void *arg) {
  snap *c = arg;
  tf_status st;
  for (int i = 0; i < SNAP_STEPS; i++) {
    if (run(c->s, 0, NULL, NULL, NULL, NULL, "add", &st) != TF_OK) {
      memcpy(c->msg, st.msg, sizeof c->msg);
      atomic_store(&c->bad, 1);
    }
  }
  atomic_fetch_sub(&c->writers_left, 1);
  return NULL;
}

/* Each fetched value must be all-equal (some prefix of the +1 updates) and
 * never smaller than the previous one; checked twice to catch writes into
 * a buffer the reader holds. */
static void *snap_reader(void *arg) {
  snap *c = arg;
  int64_t last = 0;
  tf_status st;
  while (atomic_load(&c->writers_left) > 0) {
    tf_tensor *t = NULL;
    if (run(c->s, 0, NULL, NULL, "r", &t, NULL, &st) != TF_OK) {
      memcpy(c->msg, st.msg, sizeof c->msg);
      atomic_store(&c->bad, 1);
      return NULL;
    }
    const int64_t *d = t->data;
    for (int pass = 0; pass < 2; pass++) {
      for (int i = 0; i < SNAP_N; i++) {
        if (d[i] != d[0] || d[0] < last) {
          snprintf(c->msg, sizeof c->msg, "torn snapshot: [%d] = %lld, "
                   "[0] = %lld, last %lld", i, (long long)d[i],
                   (long long)d[0], (long long)last);
          atomic_store(&c->bad, 1);
        }
      }
    }
    last = d[0];
    c->reads++;
    tf_tensor_unref(t);
  }
  return NULL;
}

START_TEST(test_reader_sees_snapshots) {
  tf_graph *g = tf_graph_new();
  tf_node *v = var(g, "v", TF_INT64, tf_shape_of(1, SNAP_N), "", "");
  tf_tensor *zero, *ones;
  tf_status st;
  tf_shape sh = tf_shape_of(1, SNAP_N);
  ck_assert_int_eq(tf_tensor_new_zeros(TF_INT64, &sh, &zero, &st), TF_OK);
  ck_assert_int_eq(tf_tensor_new(TF_INT64, &sh, &ones, &st), TF_OK);
  for (int i = 0; i < SNAP_N; i++) {
    ((int64_t *)ones->data)[i] = 1;
  }
  op2(g, "Assign", "init", v, constant(g, "zero", zero));
  op2(g, "AssignAdd", "add", v, constant(g, "ones", ones));
  op1(g, "Identity", "r", v);
  tf_session *s = session(g, 4);
  run_target(s, "init", 0, NULL, NULL);
  snap c = {.s = s};
  atomic_init(&c.writers_left, SNAP_WRITERS);
  atomic_init(&c.bad, 0);
  pthread_t th[SNAP_WRITERS + 1];
  pthread_create(&th[SNAP_WRITERS], NULL, snap_reader, &c);
  for (int i = 0; i < SNAP_WRITERS; i++) {
    pthread_create(&th[i], NULL, snap_writer, &c);
  }
  for (int i = 0; i <= SNAP_WRITERS; i++) {
    pthread_join(th[i], NULL);
  }
  ck_assert_msg(atomic_load(&c.bad) == 0, "%s", c.msg);
  ck_assert_int_gt(c.reads, 0);
  tf_tensor *r = fetch(s, "r");
  for (int i = 0; i < SNAP_N; i++) {
    ck_assert_int_eq(((int64_t *)r->data)[i], SNAP_WRITERS * SNAP_STEPS);
  }
  tf_tensor_unref(r);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

/* ---- eager --------------------------------------------------------------- */

START_TEST(test_needs_session) {
  tf_graph *g = tf_graph_new();
  tf_node *v = var(g, "v", TF_FLOAT32, tf_shape_of(0), "", "");
  tf_tensor *out = NULL;
  tf_status st;
  ck_assert_int_eq(tf_kernel_run_node(v, NULL, NULL, &out, &st),
                   TF_FAILED_PRECONDITION);
  assert_has(st.msg, "needs a session");
  assert_has(st.msg, "VariableV2");
  ck_assert_ptr_null(out);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_state");
  TCase *tc = tcase_create("kernels");
  tcase_add_test(tc, test_uninitialized_then_assign);
  tcase_add_test(tc, test_output_ref_chains);
  tcase_add_test(tc, test_assign_add_sub_random);
  tcase_add_test(tc, test_assign_add_large);
  tcase_add_test(tc, test_scatter_random);
  tcase_add_test(tc, test_scatter_errors);
  tcase_add_test(tc, test_shared_name);
  tcase_add_test(tc, test_reset_containers);
  tcase_add_test(tc, test_two_sessions);
  tcase_add_test(tc, test_needs_session);
  tcase_set_timeout(tc, 60);
  suite_add_tcase(s, tc);
  TCase *conc = tcase_create("concurrency");
  tcase_add_test(conc, test_concurrent_assign_add);
  tcase_add_test(conc, test_reader_sees_snapshots);
  tcase_set_timeout(conc, 120);
  suite_add_tcase(s, conc);
  return s;
}
