/* ops_training_test.c: the optimizer update op specs (TF names, argument
 * order, ref arguments, attrs and defaults, flags) and their shape
 * functions: var, slots and grad merge into the output shape (partial
 * shapes too), hyperparameters must be scalars, sparse grads are rows
 * indices.shape + var.shape[1:] with 1-D indices and an at least 1-D var;
 * known shapes that cannot work are rejected naming them, and T must be
 * float or double. */
#include <string.h>

#include "lib/core/framework/op_registry.h"
#include "test/unit/testutil.h"

#define U TF_UNKNOWN_DIM

typedef struct spec {
  const char *op;
  int n_refs; /* the leading Ref(T) inputs: var and its slots */
  const char *inputs[12];
} spec;

/* TF's argument order (training_ops.cc); SparseApplyAdam is ours. */
static const spec specs[] = {
    {"ApplyGradientDescent", 1, {"var", "alpha", "delta"}},
    {"ApplyMomentum", 2, {"var", "accum", "lr", "grad", "momentum"}},
    {"SparseApplyMomentum", 2,
     {"var", "accum", "lr", "grad", "indices", "momentum"}},
    {"ApplyAdagrad", 2, {"var", "accum", "lr", "grad"}},
    {"SparseApplyAdagrad", 2, {"var", "accum", "lr", "grad", "indices"}},
    {"ApplyAdadelta", 3,
     {"var", "accum", "accum_update", "lr", "rho", "epsilon", "grad"}},
    {"SparseApplyAdadelta", 3,
     {"var", "accum", "accum_update", "lr", "rho", "epsilon", "grad",
      "indices"}},
    {"ApplyRMSProp", 3,
     {"var", "ms", "mom", "lr", "rho", "momentum", "epsilon", "grad"}},
    {"SparseApplyRMSProp", 3,
     {"var", "ms", "mom", "lr", "rho", "momentum", "epsilon", "grad",
      "indices"}},
    {"ApplyAdam", 3,
     {"var", "m", "v", "beta1_power", "beta2_power", "lr", "beta1", "beta2",
      "epsilon", "grad"}},
    {"SparseApplyAdam", 3,
     {"var", "m", "v", "beta1_power", "beta2_power", "lr", "beta1", "beta2",
      "epsilon", "grad", "indices"}},
};

START_TEST(test_specs) {
  for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) {
    const tf_op_def *d = tf_op_lookup(specs[i].op);
    ck_assert_msg(d != NULL, "%s", specs[i].op);
    ck_assert_str_eq(tf_op_family_of(d), "training");
    ck_assert(d->flags & TF_OP_STATEFUL);
    ck_assert(d->flags & TF_OP_NOT_DIFFERENTIABLE);
    ck_assert(d->doc && *d->doc);
    int n = 0;
    while (n < 12 && specs[i].inputs[n]) {
      n++;
    }
    ck_assert_int_eq(d->n_inputs, n);
    for (int k = 0; k < n; k++) {
      ck_assert_str_eq(d->inputs[k].name, specs[i].inputs[k]);
      ck_assert_msg(d->inputs[k].is_ref == (k < specs[i].n_refs),
                    "%s input %s", d->name, d->inputs[k].name);
    }
    ck_assert_int_eq(d->n_outputs, 1);
    ck_assert_str_eq(d->outputs[0].name, "out");
    ck_assert(d->outputs[0].is_ref);
    const tf_attr_def *lock = tf_op_find_attr(d, "use_locking");
    ck_assert(lock && lock->has_default && !lock->default_value.u.b);
    const tf_attr_def *t = tf_op_find_attr(d, "T");
    ck_assert_int_eq(t->n_allowed_types, 2);
    bool sparse = strncmp(d->name, "Sparse", 6) == 0;
    ck_assert_int_eq(tf_op_find_attr(d, "Tindices") != NULL, sparse);
  }
  const char *nesterov[] = {"ApplyMomentum", "SparseApplyMomentum",
                            "ApplyAdam"};
  for (int i = 0; i < 3; i++) {
    const tf_attr_def *a = tf_op_find_attr(tf_op_lookup(nesterov[i]),
                                           "use_nesterov");
    ck_assert_msg(a && a->has_default && !a->default_value.u.b, "%s",
                  nesterov[i]);
  }
  const char *slots[] = {"ApplyAdagrad", "SparseApplyAdagrad"};
  for (int i = 0; i < 2; i++) {
    const tf_attr_def *a = tf_op_find_attr(tf_op_lookup(slots[i]),
                                           "update_slots");
    ck_assert(a && a->has_default && a->default_value.u.b);
  }
}
END_TEST

/* ---- shape functions ----------------------------------------------------- */

static tf_node *variable(tf_graph *g, tf_dtype dt, tf_shape shape) {
  tf_attr_kv a[] = {{"dtype", tf_attr_type_v(dt)},
                    {"shape", tf_attr_shape(shape)}};
  return tt_node(g, "VariableV2", NULL, NULL, 0, a, 2);
}

/* op on variables for its refs (shapes from ref_shapes in order) and
 * Placeholders for the rest: "indices" gets idx, "grad"/"delta" gets
 * grad, the others scalar unless named bad (then [2]). NULL with *st on
 * error; *out the output shape. */
static tf_node *build(tf_graph *g, const char *op, tf_dtype dt,
                      const tf_shape *ref_shapes, tf_shape grad, tf_shape idx,
                      const char *bad, tf_status *st) {
  const tf_op_def *d = tf_op_lookup(op);
  ck_assert_msg(d != NULL, "no op %s", op);
  tf_node_builder *b = tf_node_begin(g, op, NULL);
  int r = 0;
  for (int i = 0; i < d->n_inputs; i++) {
    const char *name = d->inputs[i].name;
    tf_node *n;
    if (d->inputs[i].is_ref) {
      n = variable(g, dt, ref_shapes[r++]);
    } else if (strcmp(name, "indices") == 0) {
      n = tt_placeholder(g, NULL, TF_INT32, idx);
    } else if (strcmp(name, "grad") == 0 || strcmp(name, "delta") == 0) {
      n = tt_placeholder(g, NULL, dt, grad);
    } else {
      bool is_bad = bad && strcmp(bad, name) == 0;
      n = tt_placeholder(g, NULL, dt,
                         is_bad ? tf_shape_of(1, 2) : tf_shape_scalar());
    }
    tf_node_add_input(b, (tf_output){n, 0});
  }
  return tf_node_finish(b, st);
}

static void assert_shape_eq(const tf_shape *got, tf_shape want) {
  char a[96], b[96];
  ck_assert_msg(tf_shape_equal(got, &want), "got %s, want %s",
                tf_shape_str(got, a, sizeof a),
                tf_shape_str(&want, b, sizeof b));
}

static void expect_error(tf_node *n, const tf_status *st, const char *want) {
  ck_assert_ptr_null(n);
  ck_assert_int_eq(st->code, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st->msg, want), "want '%s' in '%s'", want, st->msg);
}

START_TEST(test_dense_shapes) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_shape refs[] = {tf_shape_of(2, U, 3), tf_shape_of(2, 2, U),
                     tf_shape_unknown()};
  tf_node *n = build(g, "ApplyRMSProp", TF_FLOAT32, refs,
                     tf_shape_unknown(), tf_shape_unknown(), NULL, &st);
  ck_assert_msg(n != NULL, "%s", st.msg);
  assert_shape_eq(tf_node_output_shape(n, 0), tf_shape_of(2, 2, 3));
  n = build(g, "ApplyGradientDescent", TF_FLOAT64, refs, tf_shape_of(2, 4, U),
            tf_shape_unknown(), NULL, &st);
  ck_assert_msg(n != NULL, "%s", st.msg);
  assert_shape_eq(tf_node_output_shape(n, 0), tf_shape_of(2, 4, 3));
  tf_shape bad[] = {tf_shape_of(2, 2, 3), tf_shape_of(2, 2, 4)};
  n = build(g, "ApplyMomentum", TF_FLOAT32, bad, tf_shape_unknown(),
            tf_shape_unknown(), NULL, &st);
  expect_error(n, &st, "var and accum do not have the same shape [2,3] "
                       "[2,4]");
  n = build(g, "ApplyAdam", TF_FLOAT32, refs, tf_shape_of(1, 3),
            tf_shape_unknown(), NULL, &st);
  expect_error(n, &st, "var and grad do not have the same shape");
  n = build(g, "ApplyAdam", TF_FLOAT32, refs, tf_shape_unknown(),
            tf_shape_unknown(), "beta2_power", &st);
  expect_error(n, &st, "beta2_power is not a scalar: [2]");
  n = build(g, "ApplyGradientDescent", TF_INT32, refs, tf_shape_unknown(),
            tf_shape_unknown(), NULL, &st);
  ck_assert_ptr_null(n);
  ck_assert_msg(strstr(st.msg, "int32"), "%s", st.msg);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_sparse_shapes) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_shape refs[] = {tf_shape_of(3, U, 4, 5), tf_shape_of(3, 10, U, U),
                     tf_shape_unknown()};
  tf_node *n = build(g, "SparseApplyAdadelta", TF_FLOAT32, refs,
                     tf_shape_of(3, 7, 4, 5), tf_shape_of(1, 7), NULL, &st);
  ck_assert_msg(n != NULL, "%s", st.msg);
  assert_shape_eq(tf_node_output_shape(n, 0), tf_shape_of(3, 10, 4, 5));
  n = build(g, "SparseApplyAdam", TF_FLOAT64, refs, tf_shape_unknown(),
            tf_shape_unknown(), NULL, &st);
  ck_assert_msg(n != NULL, "%s", st.msg);
  n = build(g, "SparseApplyAdagrad", TF_FLOAT32, refs, tf_shape_of(3, 6, 4, 5),
            tf_shape_of(1, 7), NULL, &st);
  expect_error(n, &st, "grad must have as many rows as indices has "
                       "elements, got grad [6,4,5] and 7 indices");
  n = build(g, "SparseApplyMomentum", TF_FLOAT32, refs,
            tf_shape_of(3, 7, 4, 6), tf_shape_of(1, 7), NULL, &st);
  expect_error(n, &st, "var and grad must match in every dimension but the "
                       "first, got var [10,4,5] and grad [7,4,6]");
  n = build(g, "SparseApplyRMSProp", TF_FLOAT32, refs, tf_shape_unknown(),
            tf_shape_of(2, 2, 2), NULL, &st);
  expect_error(n, &st, "indices must be one-dimensional, got [2,2]");
  tf_shape scalars[] = {tf_shape_scalar(), tf_shape_unknown()};
  n = build(g, "SparseApplyAdagrad", TF_FLOAT32, scalars, tf_shape_unknown(),
            tf_shape_unknown(), NULL, &st);
  expect_error(n, &st, "var must be at least 1 dimensional");
  n = build(g, "SparseApplyAdagrad", TF_FLOAT32, refs, tf_shape_scalar(),
            tf_shape_unknown(), NULL, &st);
  expect_error(n, &st, "grad must be at least 1 dimensional");
  n = build(g, "SparseApplyMomentum", TF_FLOAT32, refs, tf_shape_unknown(),
            tf_shape_unknown(), "momentum", &st);
  expect_error(n, &st, "momentum is not a scalar: [2]");
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("ops_training");
  TCase *c = tcase_create("core");
  tcase_add_test(c, test_specs);
  tcase_add_test(c, test_dense_shapes);
  tcase_add_test(c, test_sparse_shapes);
  suite_add_tcase(s, c);
  return s;
}
