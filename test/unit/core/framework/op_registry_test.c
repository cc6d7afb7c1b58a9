/* Tests for the op spec parser and registry, using test-only op specs
 * registered from this file. */
#include <string.h>

#include "lib/core/framework/op_registry.h"
#include "test/unit/testutil.h"

static const tf_op_spec test_ops[] = {
    {.name = "TestSpecAll",
     .inputs = {"a: T", "b: N * T", "c: int64", "r: Ref(T)"},
     .outputs = {"y: float", "zs: M * T"},
     .attrs = {"T: {float, double, int32} = float", "N: int >= 1",
               "M: int >= 0 = 2", "pad: {'SAME', 'VALID'} = 'SAME'",
               "ks: list(int) >= 2 = [1, 2, 3]", "fs: list(float) = []",
               "rate: float = 0.5", "flag: bool = true",
               "s: shape = [2, -1]", "u: shape = unknown", "t: tensor",
               "name: string = 'x=y'", "types: list(type) = [float, int32]"},
     .doc = "spec parser test"},
    {.name = "TestSpecTypeList",
     .inputs = {"handle: Ref(string)", "components: Tcomponents"},
     .outputs = {"out: component_types", "one: T"},
     .attrs = {"Tcomponents: list(type) >= 1", "component_types: list(type)",
               "T: type", "shapes: list(shape) = []"},
     .doc = "type-list parser test"},
};
TF_REGISTER_OPS("test", test_ops)

START_TEST(test_parse_args) {
  const tf_op_def *d = tf_op_lookup("TestSpecAll");
  ck_assert_ptr_nonnull(d);
  ck_assert_int_eq(d->n_inputs, 4);
  ck_assert_str_eq(d->inputs[0].type_attr, "T");
  ck_assert_ptr_null(d->inputs[0].number_attr);
  ck_assert_str_eq(d->inputs[1].number_attr, "N");
  ck_assert_int_eq(d->inputs[2].fixed_type, TF_INT64);
  ck_assert(d->inputs[3].is_ref);
  ck_assert_int_eq(d->n_outputs, 2);
  ck_assert_int_eq(d->outputs[0].fixed_type, TF_FLOAT32);
  ck_assert_str_eq(d->outputs[1].number_attr, "M");
  ck_assert_str_eq(d->doc, "spec parser test");
}
END_TEST

START_TEST(test_parse_attrs) {
  const tf_op_def *d = tf_op_lookup("TestSpecAll");
  const tf_attr_def *a = tf_op_find_attr(d, "T");
  ck_assert_int_eq(a->type, TF_ATTR_TYPE);
  ck_assert_int_eq(a->n_allowed_types, 3);
  ck_assert_int_eq(a->allowed_types[1], TF_FLOAT64);
  ck_assert(a->has_default && a->default_value.u.t == TF_FLOAT32);
  a = tf_op_find_attr(d, "N");
  ck_assert(a->has_min && a->min == 1 && !a->has_default);
  a = tf_op_find_attr(d, "M");
  ck_assert(a->has_min && a->min == 0 && a->has_default && a->default_value.u.i == 2);
  a = tf_op_find_attr(d, "pad");
  ck_assert_int_eq(a->type, TF_ATTR_STRING);
  ck_assert_int_eq(a->n_allowed_strings, 2);
  ck_assert_str_eq(a->allowed_strings[1], "VALID");
  ck_assert_str_eq(a->default_value.u.s, "SAME");
  a = tf_op_find_attr(d, "ks");
  ck_assert(a->is_list && a->default_value.n == 3 && a->default_value.u.ints[2] == 3);
  ck_assert(a->has_min && a->min == 2);
  a = tf_op_find_attr(d, "fs");
  ck_assert(a->is_list && a->has_default && a->default_value.n == 0);
  a = tf_op_find_attr(d, "rate");
  ck_assert(a->default_value.u.f == 0.5);
  a = tf_op_find_attr(d, "flag");
  ck_assert(a->default_value.u.b);
  a = tf_op_find_attr(d, "s");
  ck_assert_int_eq(a->default_value.u.shape.rank, 2);
  ck_assert_int_eq(a->default_value.u.shape.dims[1], -1);
  a = tf_op_find_attr(d, "u");
  ck_assert_int_eq(a->default_value.u.shape.rank, TF_UNKNOWN_RANK);
  a = tf_op_find_attr(d, "t");
  ck_assert(a->type == TF_ATTR_TENSOR && !a->has_default);
  a = tf_op_find_attr(d, "name");
  ck_assert_str_eq(a->default_value.u.s, "x=y");
  a = tf_op_find_attr(d, "types");
  ck_assert(a->is_list && a->default_value.n == 2 && a->default_value.u.types[1] == TF_INT32);
  ck_assert_ptr_null(tf_op_find_attr(d, "nope"));
}
END_TEST

/* An arg typed by a list(type) attr is a type list, not a single tensor
 * typed by a type attr; ordinary type attrs are unaffected. */
START_TEST(test_parse_type_list_args) {
  const tf_op_def *d = tf_op_lookup("TestSpecTypeList");
  ck_assert_ptr_nonnull(d);
  ck_assert(d->inputs[0].is_ref);
  ck_assert_int_eq(d->inputs[0].fixed_type, TF_STRING);
  ck_assert_ptr_null(d->inputs[0].type_list_attr);
  ck_assert_str_eq(d->inputs[1].type_list_attr, "Tcomponents");
  ck_assert_ptr_null(d->inputs[1].type_attr);
  ck_assert_ptr_null(d->inputs[1].number_attr);
  ck_assert(!d->inputs[1].is_ref);
  ck_assert_str_eq(d->outputs[0].type_list_attr, "component_types");
  ck_assert_ptr_null(d->outputs[0].type_attr);
  ck_assert_str_eq(d->outputs[1].type_attr, "T");
  ck_assert_ptr_null(d->outputs[1].type_list_attr);
  const tf_attr_def *a = tf_op_find_attr(d, "Tcomponents");
  ck_assert(a->type == TF_ATTR_TYPE && a->is_list && a->has_min && a->min == 1);
  ck_assert(!a->has_default);
  /* an empty list(shape) default parses */
  a = tf_op_find_attr(d, "shapes");
  ck_assert(a->type == TF_ATTR_SHAPE && a->is_list && a->has_default);
  ck_assert(a->default_value.is_list && a->default_value.n == 0);
  /* the older ops keep their single-tensor args */
  const tf_op_def *all = tf_op_lookup("TestSpecAll");
  for (int k = 0; k < all->n_inputs; k++) ck_assert_ptr_null(all->inputs[k].type_list_attr);
}
END_TEST

START_TEST(test_lookup_and_listing) {
  ck_assert_ptr_null(tf_op_lookup("NoSuchOp"));
  ck_assert_ptr_nonnull(tf_op_lookup("Const"));
  int n;
  const tf_op_def *const *all = tf_op_all(&n);
  ck_assert_int_ge(n, 5);
  for (int i = 1; i < n; i++) ck_assert_int_lt(strcmp(all[i - 1]->name, all[i]->name), 0);
  ck_assert_str_eq(tf_op_family_of(tf_op_lookup("TestSpecAll")), "test");
  ck_assert_str_eq(tf_op_family_of(tf_op_lookup("Const")), "base");
}
END_TEST

START_TEST(test_every_op_documented) {
  int n;
  const tf_op_def *const *all = tf_op_all(&n);
  for (int i = 0; i < n; i++) {
    ck_assert_msg(all[i]->doc != NULL && all[i]->doc[0] != '\0',
                  "op %s has no doc line", all[i]->name);
  }
}
END_TEST

/* The audit notes (docs/ops.md, "Audit against TensorFlow") are one
 * clause each; the ops TF lacks say so first, then what they are for. */
START_TEST(test_deviation_notes_well_formed) {
  static const char k_not_tf[] = "not a TensorFlow op: ";
  const char *not_tf[] = {"DecodeRawExamples", "IdxRecordReader",
                          "RandomNormal", "SparseApplyAdam", "WriteTFRecords"};
  int n;
  const tf_op_def *const *all = tf_op_all(&n);
  for (int i = 0; i < n; i++) {
    const char *dev = all[i]->spec->deviation;
    if (dev == NULL) continue;
    size_t len = strlen(dev);
    ck_assert_msg(len > 0 && strchr(dev, '\n') == NULL && dev[len - 1] != '.',
                  "op %s: deviation must be one clause on one line: '%s'",
                  all[i]->name, dev);
    if (strncmp(dev, "not a", 5) == 0) {
      ck_assert_msg(strncmp(dev, k_not_tf, sizeof k_not_tf - 1) == 0 &&
                        len > sizeof k_not_tf,
                    "op %s: '%s' must read '%s<what it is for>'",
                    all[i]->name, dev, k_not_tf);
    }
  }
  for (size_t i = 0; i < sizeof not_tf / sizeof not_tf[0]; i++) {
    const tf_op_def *d = tf_op_lookup(not_tf[i]);
    ck_assert_msg(d != NULL && d->spec->deviation != NULL &&
                      strncmp(d->spec->deviation, k_not_tf,
                              sizeof k_not_tf - 1) == 0,
                  "%s is not a TF op and must say so", not_tf[i]);
  }
}
END_TEST

START_TEST(test_shape_helpers) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_node *p = tt_placeholder(g, "p", TF_FLOAT32, tf_shape_unknown());
  tf_shape in[2] = {tf_shape_of(2, 3, 1), tf_shape_of(1, 4)}, out[1];
  tf_tensor *c = tf_tensor_vec_i32(3, (int32_t[]){5, 6, 7});
  const tf_tensor *vals[2] = {c, NULL};
  tf_shape_ctx ctx = {.node = p, .n_in = 2, .in = in, .in_value = vals,
                      .n_out = 1, .out = out, .status = &st};
  ck_assert_int_eq(tf_shape_fn_broadcast(&ctx), TF_OK);
  ck_assert(tf_shape_equal(&out[0], &(tf_shape){2, {3, 4}}));
  in[1] = tf_shape_of(2, 2, 5);
  ck_assert_int_eq(tf_shape_fn_broadcast(&ctx), TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "node 'p' (Placeholder)"));
  ck_assert_ptr_nonnull(strstr(st.msg, "[3,1]"));
  int64_t v[8];
  int nv;
  ck_assert(tf_shape_const_ints(&ctx, 0, v, 8, &nv));
  ck_assert(nv == 3 && v[2] == 7);
  ck_assert(!tf_shape_const_ints(&ctx, 1, v, 8, &nv));
  ck_assert(!tf_shape_const_ints(&ctx, 0, v, 2, &nv)); /* too long */
  tf_tensor_unref(c);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("op_registry");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_parse_args);
  tcase_add_test(tc, test_parse_attrs);
  tcase_add_test(tc, test_parse_type_list_args);
  tcase_add_test(tc, test_lookup_and_listing);
  tcase_add_test(tc, test_every_op_documented);
  tcase_add_test(tc, test_deviation_notes_well_formed);
  tcase_add_test(tc, test_shape_helpers);
  suite_add_tcase(s, tc);
  return s;
}
