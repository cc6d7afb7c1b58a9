/* attr_test.c: attribute values: constructors, type names, deep clone and
 * fini of every type and list type (tensors referenced, not copied), list
 * element sizes, equality, and printing with truncation. */
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test/unit/testutil.h"

#define SHAPE(...)                                                             \
  tf_shape_make((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),    \
                (int64_t[]){__VA_ARGS__})

static int refs(const tf_tensor *t) { return atomic_load(&t->refs); }

static bool all_zero(const tf_attr_value *v) {
  const unsigned char *b = (const unsigned char *)v;
  for (size_t i = 0; i < sizeof *v; i++) {
    if (b[i] != 0) return false;
  }
  return true;
}

START_TEST(test_constructors) {
  tf_attr_value v = tf_attr_int(-5);
  ck_assert(v.type == TF_ATTR_INT && !v.is_list && v.u.i == -5);
  v = tf_attr_float(0.25);
  ck_assert(v.type == TF_ATTR_FLOAT && !v.is_list && v.u.f == 0.25);
  v = tf_attr_bool(true);
  ck_assert(v.type == TF_ATTR_BOOL && v.u.b);
  const char *s = "SAME";
  v = tf_attr_string(s);
  ck_assert(v.type == TF_ATTR_STRING && v.u.s == s); /* borrowed */
  v = tf_attr_type_v(TF_INT64);
  ck_assert(v.type == TF_ATTR_TYPE && v.u.t == TF_INT64);
  v = tf_attr_shape(SHAPE(2, TF_UNKNOWN_DIM));
  ck_assert(v.type == TF_ATTR_SHAPE && v.u.shape.rank == 2 && v.u.shape.dims[1] == -1);
  tf_tensor *t = tf_tensor_scalar_f32(1);
  v = tf_attr_tensor(t);
  ck_assert(v.type == TF_ATTR_TENSOR && v.u.tensor == t);
  ck_assert_int_eq(refs(t), 1); /* constructors do not take references */
  int64_t ints[3] = {1, 2, 3};
  v = tf_attr_int_list(ints, 3);
  ck_assert(v.type == TF_ATTR_INT && v.is_list && v.n == 3 && v.u.ints == ints);
  double fl[2] = {1, 2};
  v = tf_attr_float_list(fl, 2);
  ck_assert(v.type == TF_ATTR_FLOAT && v.is_list && v.n == 2 && v.u.floats == fl);
  bool bl[1] = {true};
  v = tf_attr_bool_list(bl, 1);
  ck_assert(v.type == TF_ATTR_BOOL && v.is_list && v.u.bools == bl);
  const char *strs[2] = {"a", "b"};
  v = tf_attr_string_list(strs, 2);
  ck_assert(v.type == TF_ATTR_STRING && v.is_list && v.u.strs == strs);
  tf_dtype ty[2] = {TF_FLOAT32, TF_INT32};
  v = tf_attr_type_list(ty, 2);
  ck_assert(v.type == TF_ATTR_TYPE && v.is_list && v.u.types == ty);
  tf_shape sh[1] = {SHAPE(3)};
  v = tf_attr_shape_list(sh, 1);
  ck_assert(v.type == TF_ATTR_SHAPE && v.is_list && v.u.shapes == sh);
  tf_tensor *ts[1] = {t};
  v = tf_attr_tensor_list(ts, 1);
  ck_assert(v.type == TF_ATTR_TENSOR && v.is_list && v.u.tensors == ts);
  v = tf_attr_int_list(NULL, 0);
  ck_assert(v.is_list && v.n == 0);
  tf_tensor_unref(t);
}
END_TEST

START_TEST(test_type_names) {
  static const char *scalars[] = {"none", "int", "float", "bool", "string",
                                  "type", "shape", "tensor"};
  for (int t = 0; t < TF_ATTR_TYPE_COUNT; t++) {
    char list[32];
    snprintf(list, sizeof list, "list(%s)", scalars[t]);
    ck_assert_str_eq(tf_attr_type_name((tf_attr_type)t, false), scalars[t]);
    ck_assert_str_eq(tf_attr_type_name((tf_attr_type)t, true), list);
  }
  ck_assert_str_eq(tf_attr_type_name(TF_ATTR_TYPE_COUNT, false), "invalid");
  ck_assert_str_eq(tf_attr_type_name(TF_ATTR_TYPE_COUNT, true), "invalid");
  ck_assert_str_eq(tf_attr_type_name((tf_attr_type)-1, false), "invalid");
  ck_assert_str_eq(tf_attr_type_name((tf_attr_type)99, true), "invalid");
}
END_TEST

START_TEST(test_elem_size) {
  /* The stride of each list member of the union. */
  ck_assert_uint_eq(tf_attr_elem_size(TF_ATTR_INT), sizeof(int64_t));
  ck_assert_uint_eq(tf_attr_elem_size(TF_ATTR_FLOAT), sizeof(double));
  ck_assert_uint_eq(tf_attr_elem_size(TF_ATTR_BOOL), sizeof(bool));
  ck_assert_uint_eq(tf_attr_elem_size(TF_ATTR_STRING), sizeof(const char *));
  ck_assert_uint_eq(tf_attr_elem_size(TF_ATTR_TYPE), sizeof(tf_dtype));
  ck_assert_uint_eq(tf_attr_elem_size(TF_ATTR_SHAPE), sizeof(tf_shape));
  ck_assert_uint_eq(tf_attr_elem_size(TF_ATTR_TENSOR), sizeof(tf_tensor *));
  ck_assert_uint_eq(tf_attr_elem_size(TF_ATTR_NONE), 0);
  ck_assert_uint_eq(tf_attr_elem_size(TF_ATTR_TYPE_COUNT), 0);
  ck_assert_uint_eq(tf_attr_elem_size((tf_attr_type)-1), 0);
  ck_assert_uint_eq(tf_attr_elem_size((tf_attr_type)99), 0);
  /* Stepping a list's array by the size reaches its second element. */
  tf_shape sh[2] = {SHAPE(1), SHAPE(2, 3)};
  tf_attr_value v = tf_attr_shape_list(sh, 2);
  const tf_shape *second = (const tf_shape *)(const void *)(
      (const char *)v.u.ints + tf_attr_elem_size(v.type));
  ck_assert(tf_shape_equal(second, &sh[1]));
  tf_dtype ty[2] = {TF_INT8, TF_COMPLEX64};
  v = tf_attr_type_list(ty, 2);
  ck_assert_int_eq(*(const tf_dtype *)(const void *)(
                       (const char *)v.u.ints + tf_attr_elem_size(v.type)),
                   TF_COMPLEX64);
}
END_TEST

START_TEST(test_clone_plain_scalars) {
  tf_attr_value vs[] = {tf_attr_int(INT64_MIN), tf_attr_float(-1.5), tf_attr_bool(true),
                        tf_attr_type_v(TF_BFLOAT16), tf_attr_shape(SHAPE(1, 2, 3))};
  for (size_t i = 0; i < sizeof vs / sizeof vs[0]; i++) {
    tf_attr_value c = tf_attr_value_clone(&vs[i]);
    ck_assert(tf_attr_value_equal(&c, &vs[i]));
    tf_attr_value_fini(&c);
    ck_assert(all_zero(&c));
  }
}
END_TEST

START_TEST(test_clone_string) {
  char buf[16];
  strcpy(buf, "VALID");
  tf_attr_value v = tf_attr_string(buf);
  tf_attr_value c = tf_attr_value_clone(&v);
  ck_assert_ptr_ne(c.u.s, buf);
  ck_assert_str_eq(c.u.s, "VALID");
  ck_assert(tf_attr_value_equal(&c, &v));
  buf[0] = 'X'; /* the clone owns its copy */
  ck_assert_str_eq(c.u.s, "VALID");
  ck_assert(!tf_attr_value_equal(&c, &v));
  tf_attr_value c2 = tf_attr_value_clone(&c);
  tf_attr_value_fini(&c);
  ck_assert(all_zero(&c));
  ck_assert_str_eq(c2.u.s, "VALID");
  tf_attr_value_fini(&c2);
  /* A NULL string clones as "". */
  v = tf_attr_string(NULL);
  c = tf_attr_value_clone(&v);
  ck_assert_str_eq(c.u.s, "");
  tf_attr_value_fini(&c);
}
END_TEST

START_TEST(test_clone_tensor_refcounted) {
  tf_tensor *t = tt_tensor(TF_FLOAT32, SHAPE(2), (double[]){1, 2});
  long long before = tf_allocator_get_stats(tf_cpu_allocator()).bytes_in_use;
  tf_attr_value v = tf_attr_tensor(t);
  tf_attr_value c = tf_attr_value_clone(&v);
  ck_assert_ptr_eq(c.u.tensor, t); /* referenced, not copied */
  ck_assert_int_eq(refs(t), 2);
  ck_assert_int_eq(tf_allocator_get_stats(tf_cpu_allocator()).bytes_in_use, before);
  tf_attr_value c2 = tf_attr_value_clone(&c);
  ck_assert_int_eq(refs(t), 3);
  tf_tensor_unref(t); /* the caller drops its own reference */
  ck_assert_int_eq(refs(t), 2);
  tf_attr_value_fini(&c);
  ck_assert_int_eq(refs(c2.u.tensor), 1);
  ck_assert(tf_tensor_get_f64(c2.u.tensor, 1) == 2.0);
  tf_attr_value_fini(&c2); /* last holder: the tensor is freed */
  ck_assert(all_zero(&c2));
  ck_assert_int_eq(tf_allocator_get_stats(tf_cpu_allocator()).bytes_in_use, before - 8);
}
END_TEST

START_TEST(test_clone_numeric_lists) {
  int64_t ints[4] = {1, -2, INT64_MAX, 0};
  double fl[3] = {0.5, -1e300, NAN};
  bool bl[5] = {true, false, false, true, true};
  tf_dtype ty[3] = {TF_FLOAT32, TF_STRING, TF_UINT64};
  tf_shape sh[3] = {SHAPE(2, 3), tf_shape_unknown(), tf_shape_scalar()};
  tf_attr_value vs[] = {tf_attr_int_list(ints, 4), tf_attr_float_list(fl, 3),
                        tf_attr_bool_list(bl, 5), tf_attr_type_list(ty, 3),
                        tf_attr_shape_list(sh, 3)};
  tf_attr_value cs[5];
  for (int i = 0; i < 5; i++) {
    cs[i] = tf_attr_value_clone(&vs[i]);
    ck_assert(cs[i].is_list && cs[i].n == vs[i].n && cs[i].type == vs[i].type);
    ck_assert_ptr_ne(cs[i].u.ints, vs[i].u.ints);
    ck_assert_msg(tf_attr_value_equal(&cs[i], &vs[i]), "%s",
                  tf_attr_type_name(vs[i].type, true));
  }
  /* Clones are independent of the source arrays. */
  ints[2] = 7;
  fl[0] = 9;
  bl[4] = false;
  ty[1] = TF_INT8;
  sh[0].dims[1] = 4;
  for (int i = 0; i < 5; i++) {
    ck_assert_msg(!tf_attr_value_equal(&cs[i], &vs[i]), "%s shares its array",
                  tf_attr_type_name(vs[i].type, true));
  }
  ck_assert_int_eq(cs[0].u.ints[2], INT64_MAX);
  ck_assert(cs[1].u.floats[0] == 0.5 && isnan(cs[1].u.floats[2]));
  ck_assert(cs[2].u.bools[4]);
  ck_assert_int_eq(cs[3].u.types[1], TF_STRING);
  ck_assert_int_eq(cs[4].u.shapes[0].dims[1], 3);
  ck_assert_int_eq(cs[4].u.shapes[1].rank, TF_UNKNOWN_RANK);
  for (int i = 0; i < 5; i++) {
    tf_attr_value_fini(&cs[i]);
    ck_assert(all_zero(&cs[i]));
  }
}
END_TEST

START_TEST(test_clone_string_list) {
  char a[8] = "SAME", b[8] = "VALID";
  const char *strs[3] = {a, b, NULL};
  tf_attr_value v = tf_attr_string_list(strs, 3);
  tf_attr_value c = tf_attr_value_clone(&v);
  ck_assert_ptr_ne(c.u.strs, strs);
  ck_assert_ptr_ne(c.u.strs[0], a);
  ck_assert_str_eq(c.u.strs[0], "SAME");
  ck_assert_str_eq(c.u.strs[1], "VALID");
  ck_assert_str_eq(c.u.strs[2], ""); /* NULL element clones as "" */
  a[0] = 'X';
  ck_assert_str_eq(c.u.strs[0], "SAME");
  tf_attr_value c2 = tf_attr_value_clone(&c);
  ck_assert(tf_attr_value_equal(&c, &c2));
  ck_assert_ptr_ne(c2.u.strs[1], c.u.strs[1]);
  tf_attr_value_fini(&c);
  ck_assert_str_eq(c2.u.strs[1], "VALID");
  tf_attr_value_fini(&c2);
}
END_TEST

START_TEST(test_clone_tensor_list) {
  tf_tensor *t0 = tf_tensor_scalar_i32(4), *t1 = tf_tensor_vec_i64(2, (int64_t[]){5, 6});
  tf_tensor *ts[3] = {t0, t1, t0};
  tf_attr_value v = tf_attr_tensor_list(ts, 3);
  tf_attr_value c = tf_attr_value_clone(&v);
  ck_assert_int_eq(refs(t0), 3);
  ck_assert_int_eq(refs(t1), 2);
  ck_assert(c.u.tensors[0] == t0 && c.u.tensors[1] == t1 && c.u.tensors[2] == t0);
  ck_assert(tf_attr_value_equal(&c, &v));
  tf_attr_value c2 = tf_attr_value_clone(&c);
  ck_assert_int_eq(refs(t0), 5);
  tf_attr_value_fini(&c);
  ck_assert_int_eq(refs(t0), 3);
  ck_assert_int_eq(refs(t1), 2);
  tf_attr_value_fini(&c2);
  ck_assert_int_eq(refs(t0), 1);
  ck_assert_int_eq(refs(t1), 1);
  tf_tensor_unref(t0);
  tf_tensor_unref(t1);
}
END_TEST

START_TEST(test_clone_empty_lists) {
  tf_attr_value vs[] = {tf_attr_int_list(NULL, 0),    tf_attr_float_list(NULL, 0),
                        tf_attr_bool_list(NULL, 0),   tf_attr_string_list(NULL, 0),
                        tf_attr_type_list(NULL, 0),   tf_attr_shape_list(NULL, 0),
                        tf_attr_tensor_list(NULL, 0)};
  for (size_t i = 0; i < sizeof vs / sizeof vs[0]; i++) {
    tf_attr_value c = tf_attr_value_clone(&vs[i]);
    ck_assert(c.is_list && c.n == 0 && c.type == vs[i].type);
    ck_assert(tf_attr_value_equal(&c, &vs[i]));
    tf_attr_value_fini(&c);
    ck_assert(all_zero(&c));
  }
  tf_attr_value none = {0};
  tf_attr_value c = tf_attr_value_clone(&none);
  tf_attr_value_fini(&c);
  tf_attr_value_fini(&none); /* fini of a zero value is a no-op */
}
END_TEST

START_TEST(test_equality) {
  tf_attr_value i1 = tf_attr_int(3), i2 = tf_attr_int(3), i3 = tf_attr_int(4);
  tf_attr_value f3 = tf_attr_float(3), b1 = tf_attr_bool(true), b0 = tf_attr_bool(false);
  ck_assert(tf_attr_value_equal(&i1, &i2));
  ck_assert(!tf_attr_value_equal(&i1, &i3));
  ck_assert(!tf_attr_value_equal(&i1, &f3)); /* type matters */
  ck_assert(!tf_attr_value_equal(&b1, &b0));
  tf_attr_value nan1 = tf_attr_float(NAN), nan2 = tf_attr_float(NAN);
  ck_assert(tf_attr_value_equal(&nan1, &nan2));
  char s1[] = "abc", s2[] = "abc";
  tf_attr_value sa = tf_attr_string(s1), sb = tf_attr_string(s2), sc = tf_attr_string("abd");
  ck_assert(tf_attr_value_equal(&sa, &sb)); /* content, not pointer */
  ck_assert(!tf_attr_value_equal(&sa, &sc));
  tf_attr_value ta = tf_attr_type_v(TF_FLOAT32), tb = tf_attr_type_v(TF_FLOAT64);
  ck_assert(!tf_attr_value_equal(&ta, &tb));
  tf_attr_value sh1 = tf_attr_shape(SHAPE(2, -1)), sh2 = tf_attr_shape(SHAPE(2, -1));
  tf_attr_value sh3 = tf_attr_shape(SHAPE(2, 5)), sh4 = tf_attr_shape(tf_shape_unknown());
  ck_assert(tf_attr_value_equal(&sh1, &sh2));
  ck_assert(!tf_attr_value_equal(&sh1, &sh3));
  ck_assert(!tf_attr_value_equal(&sh1, &sh4));
  /* Tensors compare by content. */
  tf_tensor *x = tt_tensor(TF_FLOAT32, SHAPE(2), (double[]){1, 2});
  tf_tensor *y = tt_tensor(TF_FLOAT32, SHAPE(2), (double[]){1, 2});
  tf_tensor *z = tt_tensor(TF_FLOAT32, SHAPE(2), (double[]){1, 3});
  tf_attr_value tx = tf_attr_tensor(x), ty = tf_attr_tensor(y), tz = tf_attr_tensor(z);
  ck_assert(tf_attr_value_equal(&tx, &ty));
  ck_assert(!tf_attr_value_equal(&tx, &tz));
  /* Scalar vs list of one, lengths, elements. */
  int64_t one[1] = {3}, l1[3] = {1, 2, 3}, l2[3] = {1, 2, 3}, l3[3] = {1, 2, 4};
  tf_attr_value lone = tf_attr_int_list(one, 1);
  ck_assert(!tf_attr_value_equal(&i1, &lone));
  tf_attr_value la = tf_attr_int_list(l1, 3), lb = tf_attr_int_list(l2, 3);
  tf_attr_value lc = tf_attr_int_list(l3, 3), ld = tf_attr_int_list(l1, 2);
  ck_assert(tf_attr_value_equal(&la, &lb));
  ck_assert(!tf_attr_value_equal(&la, &lc));
  ck_assert(!tf_attr_value_equal(&la, &ld));
  double fl[3] = {1, 2, 3};
  tf_attr_value lf = tf_attr_float_list(fl, 3);
  ck_assert(!tf_attr_value_equal(&la, &lf));
  const char *sl1[2] = {"a", "b"}, *sl2[2] = {"a", "c"};
  tf_attr_value ls1 = tf_attr_string_list(sl1, 2), ls2 = tf_attr_string_list(sl2, 2);
  ck_assert(!tf_attr_value_equal(&ls1, &ls2));
  ck_assert(tf_attr_value_equal(&ls1, &ls1));
  tf_tensor *tl1[2] = {x, y}, *tl2[2] = {y, x}, *tl3[2] = {x, z};
  tf_attr_value lt1 = tf_attr_tensor_list(tl1, 2), lt2 = tf_attr_tensor_list(tl2, 2);
  tf_attr_value lt3 = tf_attr_tensor_list(tl3, 2);
  ck_assert(tf_attr_value_equal(&lt1, &lt2));
  ck_assert(!tf_attr_value_equal(&lt1, &lt3));
  tf_tensor *all[] = {x, y, z};
  tt_free(all, 3);
}
END_TEST

START_TEST(test_str) {
  char buf[256];
  static const struct {
    tf_attr_value v;
    const char *want;
  } plain[] = {
      {{TF_ATTR_INT, false, 0, {.i = -42}}, "-42"},
      {{TF_ATTR_FLOAT, false, 0, {.f = 0.5}}, "0.5"},
      {{TF_ATTR_FLOAT, false, 0, {.f = 0.1}}, "0.10000000000000001"},
      {{TF_ATTR_BOOL, false, 0, {.b = true}}, "true"},
      {{TF_ATTR_BOOL, false, 0, {.b = false}}, "false"},
      {{TF_ATTR_STRING, false, 0, {.s = "SAME"}}, "'SAME'"},
      {{TF_ATTR_TYPE, false, 0, {.t = TF_UINT16}}, "uint16"},
      {{TF_ATTR_SHAPE, false, 0, {.shape = {2, {-1, 3}}}}, "[?,3]"},
      {{TF_ATTR_SHAPE, false, 0, {.shape = {-1, {0}}}}, "<unknown>"},
  };
  for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++) {
    ck_assert_ptr_eq(tf_attr_value_str(&plain[i].v, buf, sizeof buf), buf);
    ck_assert_str_eq(buf, plain[i].want);
  }
  tf_tensor *t = tt_tensor(TF_FLOAT32, SHAPE(2), (double[]){1, 2});
  tf_attr_value v = tf_attr_tensor(t);
  ck_assert_str_eq(tf_attr_value_str(&v, buf, sizeof buf), "float32[2] {1, 2}");
  tf_tensor *tl[2] = {t, t};
  v = tf_attr_tensor_list(tl, 2);
  ck_assert_str_eq(tf_attr_value_str(&v, buf, sizeof buf),
                   "[float32[2] {1, 2}, float32[2] {1, 2}]");
  tf_tensor_unref(t);
  v = tf_attr_int_list((int64_t[]){1, 2, 3}, 3);
  ck_assert_str_eq(tf_attr_value_str(&v, buf, sizeof buf), "[1, 2, 3]");
  v = tf_attr_int_list(NULL, 0);
  ck_assert_str_eq(tf_attr_value_str(&v, buf, sizeof buf), "[]");
  const char *strs[2] = {"a", "b c"};
  v = tf_attr_string_list(strs, 2);
  ck_assert_str_eq(tf_attr_value_str(&v, buf, sizeof buf), "['a', 'b c']");
  v = tf_attr_type_list((tf_dtype[]){TF_FLOAT32, TF_BOOL}, 2);
  ck_assert_str_eq(tf_attr_value_str(&v, buf, sizeof buf), "[float32, bool]");
  v = tf_attr_bool_list((bool[]){false, true}, 2);
  ck_assert_str_eq(tf_attr_value_str(&v, buf, sizeof buf), "[false, true]");
  v = tf_attr_float_list((double[]){-1, 2.5}, 2);
  ck_assert_str_eq(tf_attr_value_str(&v, buf, sizeof buf), "[-1, 2.5]");
  v = tf_attr_shape_list((tf_shape[]){SHAPE(1, 2), tf_shape_scalar()}, 2);
  ck_assert_str_eq(tf_attr_value_str(&v, buf, sizeof buf), "[[1,2], []]");
}
END_TEST

/* Every buffer size gives a NUL-terminated prefix of the full text and
 * writes nothing past size. */
static void check_truncation(const tf_attr_value *v) {
  char full[512], buf[600];
  tf_attr_value_str(v, full, sizeof full);
  size_t len = strlen(full);
  for (size_t size = 1; size <= len + 2; size++) {
    memset(buf, '#', sizeof buf);
    tf_attr_value_str(v, buf, size);
    size_t want = len < size - 1 ? len : size - 1;
    ck_assert_msg(strlen(buf) == want && strncmp(buf, full, want) == 0,
                  "size %zu: '%s' vs '%s'", size, buf, full);
    for (size_t k = size; k < sizeof buf; k++) {
      if (buf[k] != '#') ck_abort_msg("size %zu: byte %zu written", size, k);
    }
  }
  memset(buf, '#', sizeof buf);
  tf_attr_value_str(v, buf, 0);
  ck_assert_int_eq(buf[0], '#');
}

START_TEST(test_str_truncation) {
  int64_t ints[6] = {123456, -7, 0, INT64_MIN, 42, 9};
  tf_attr_value v = tf_attr_int_list(ints, 6);
  check_truncation(&v);
  const char *strs[3] = {"alpha", "", "a longer string here"};
  v = tf_attr_string_list(strs, 3);
  check_truncation(&v);
  v = tf_attr_shape_list((tf_shape[]){SHAPE(1, -1, 3), tf_shape_unknown()}, 2);
  check_truncation(&v);
  v = tf_attr_float(1.0 / 3);
  check_truncation(&v);
  tf_tensor *t = tt_tensor(TF_FLOAT64, SHAPE(3), (double[]){0.25, 1e-9, 3});
  v = tf_attr_tensor(t);
  check_truncation(&v);
  tf_tensor_unref(t);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("attr");
  TCase *tc = tcase_create("attr");
  tcase_add_test(tc, test_constructors);
  tcase_add_test(tc, test_type_names);
  tcase_add_test(tc, test_elem_size);
  tcase_add_test(tc, test_clone_plain_scalars);
  tcase_add_test(tc, test_clone_string);
  tcase_add_test(tc, test_clone_tensor_refcounted);
  tcase_add_test(tc, test_clone_numeric_lists);
  tcase_add_test(tc, test_clone_string_list);
  tcase_add_test(tc, test_clone_tensor_list);
  tcase_add_test(tc, test_clone_empty_lists);
  tcase_add_test(tc, test_equality);
  tcase_add_test(tc, test_str);
  tcase_add_test(tc, test_str_truncation);
  suite_add_tcase(s, tc);
  return s;
}
