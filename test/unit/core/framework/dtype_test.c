/* dtype_test.c: dtype numbers (TensorFlow's DataType values), sizes, names
 * and aliases, class predicates, and behaviour on invalid values. */
#include <string.h>

#include "test/unit/testutil.h"

/* Expected facts per dtype, written out independently of TF_DTYPE_MAP:
 * TF's DataType number, element size, name, and classes. */
typedef struct {
  tf_dtype dt;
  int tf_num;
  size_t size;
  const char *name;
  bool is_float, is_integer, is_signed, is_complex, is_numeric;
} dtype_fact;

static const dtype_fact facts[] = {
    /* dt          num size name        float  int    signed complex numeric */
    {TF_FLOAT32, 1, 4, "float32", true, false, true, false, true},
    {TF_FLOAT64, 2, 8, "float64", true, false, true, false, true},
    {TF_INT32, 3, 4, "int32", false, true, true, false, true},
    {TF_UINT8, 4, 1, "uint8", false, true, false, false, true},
    {TF_INT16, 5, 2, "int16", false, true, true, false, true},
    {TF_INT8, 6, 1, "int8", false, true, true, false, true},
    {TF_STRING, 7, sizeof(tf_string), "string", false, false, false, false, false},
    {TF_COMPLEX64, 8, 8, "complex64", false, false, false, true, true},
    {TF_INT64, 9, 8, "int64", false, true, true, false, true},
    {TF_BOOL, 10, 1, "bool", false, false, false, false, false},
    {TF_BFLOAT16, 14, 2, "bfloat16", true, false, true, false, true},
    {TF_UINT16, 17, 2, "uint16", false, true, false, false, true},
    {TF_FLOAT16, 19, 2, "float16", true, false, true, false, true},
    {TF_UINT32, 22, 4, "uint32", false, true, false, false, true},
    {TF_UINT64, 23, 8, "uint64", false, true, false, false, true},
};
#define N_FACTS ((int)(sizeof facts / sizeof facts[0]))

static const dtype_fact *fact_of(int v) {
  for (int i = 0; i < N_FACTS; i++) {
    if ((int)facts[i].dt == v) return &facts[i];
  }
  return NULL;
}

/* Sizes from the map match the C element types. */
#define SIZE_MATCHES_CTYPE(e, num, ctype, size, name)                          \
  _Static_assert(sizeof(ctype) == size, "size of " name);
TF_DTYPE_MAP(SIZE_MATCHES_CTYPE)
#undef SIZE_MATCHES_CTYPE

START_TEST(test_tf_numbers) {
  for (int i = 0; i < N_FACTS; i++) {
    ck_assert_msg((int)facts[i].dt == facts[i].tf_num, "%s is %d, TF says %d",
                  facts[i].name, (int)facts[i].dt, facts[i].tf_num);
  }
  ck_assert_int_eq(TF_DTYPE_INVALID, 0);
  ck_assert_int_eq(TF_DTYPE_ANY, TF_DTYPE_INVALID);
  ck_assert_int_gt(TF_DTYPE_MAX, TF_UINT64);
  /* Every value the map defines is in the table above. */
  int n_map = 0;
#define COUNT(e, num, ctype, size, name) n_map++;
  TF_DTYPE_MAP(COUNT)
#undef COUNT
  ck_assert_int_eq(n_map, N_FACTS);
}
END_TEST

START_TEST(test_sizes_and_names) {
  for (int i = 0; i < N_FACTS; i++) {
    const dtype_fact *f = &facts[i];
    ck_assert_msg(tf_dtype_size(f->dt) == f->size, "%s: size %zu, want %zu",
                  f->name, tf_dtype_size(f->dt), f->size);
    ck_assert_str_eq(tf_dtype_name(f->dt), f->name);
    ck_assert(tf_dtype_is_valid(f->dt));
  }
  ck_assert_int_eq(tf_dtype_size(TF_STRING), 16);
  ck_assert_int_eq(sizeof(tf_complex64), 8);
}
END_TEST

START_TEST(test_names_round_trip_and_distinct) {
  for (int v = 0; v < TF_DTYPE_MAX; v++) {
    if (!tf_dtype_is_valid((tf_dtype)v)) continue;
    const char *name = tf_dtype_name((tf_dtype)v);
    tf_dtype back = TF_DTYPE_INVALID;
    ck_assert_msg(tf_dtype_from_name(name, &back), "%s does not parse", name);
    ck_assert_int_eq(back, v);
    for (int w = 0; w < v; w++) {
      if (tf_dtype_is_valid((tf_dtype)w)) {
        ck_assert_msg(strcmp(name, tf_dtype_name((tf_dtype)w)) != 0,
                      "dtypes %d and %d are both %s", w, v, name);
      }
    }
  }
}
END_TEST

START_TEST(test_aliases) {
  static const struct {
    const char *alias;
    tf_dtype dt;
  } aliases[] = {{"float", TF_FLOAT32}, {"double", TF_FLOAT64}, {"half", TF_FLOAT16}};
  for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++) {
    tf_dtype dt = TF_DTYPE_INVALID;
    ck_assert_msg(tf_dtype_from_name(aliases[i].alias, &dt), "%s", aliases[i].alias);
    ck_assert_int_eq(dt, aliases[i].dt);
  }
  /* Aliases parse but the canonical name is what is printed. */
  ck_assert_str_eq(tf_dtype_name(TF_FLOAT32), "float32");
  ck_assert_str_eq(tf_dtype_name(TF_FLOAT16), "float16");
}
END_TEST

START_TEST(test_unknown_names) {
  const char *bad[] = {"", "invalid", "Float32", "FLOAT32", "float128", "int",
                       "uint", "float32 ", " int8", "complex128", "qint8", "str",
                       "DT_FLOAT", "bool\n"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    tf_dtype dt = TF_INT16;
    ck_assert_msg(!tf_dtype_from_name(bad[i], &dt), "'%s' parsed", bad[i]);
    ck_assert_msg(dt == TF_INT16, "'%s' wrote *out on failure", bad[i]);
  }
}
END_TEST

START_TEST(test_classes) {
  for (int i = 0; i < N_FACTS; i++) {
    const dtype_fact *f = &facts[i];
    ck_assert_msg(tf_dtype_is_float(f->dt) == f->is_float, "%s is_float", f->name);
    ck_assert_msg(tf_dtype_is_integer(f->dt) == f->is_integer, "%s is_integer", f->name);
    ck_assert_msg(tf_dtype_is_signed(f->dt) == f->is_signed, "%s is_signed", f->name);
    ck_assert_msg(tf_dtype_is_complex(f->dt) == f->is_complex, "%s is_complex", f->name);
    ck_assert_msg(tf_dtype_is_numeric(f->dt) == f->is_numeric, "%s is_numeric", f->name);
  }
}
END_TEST

START_TEST(test_invalid_values) {
  const int bad[] = {0, -1, 11, 12, 13, 15, 16, 18, 20, 21, 24, 25, 100, 1 << 20};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    tf_dtype dt = (tf_dtype)bad[i];
    ck_assert_ptr_null(fact_of(bad[i]));
    ck_assert_msg(tf_dtype_size(dt) == 0, "dtype %d has size %zu", bad[i],
                  tf_dtype_size(dt));
    ck_assert_str_eq(tf_dtype_name(dt), "invalid");
    ck_assert(!tf_dtype_is_valid(dt));
    ck_assert(!tf_dtype_is_float(dt));
    ck_assert(!tf_dtype_is_integer(dt));
    ck_assert(!tf_dtype_is_signed(dt));
    ck_assert(!tf_dtype_is_complex(dt));
    ck_assert(!tf_dtype_is_numeric(dt));
  }
  /* Every value below TF_DTYPE_MAX is either in the table or invalid. */
  for (int v = 0; v < TF_DTYPE_MAX; v++) {
    ck_assert_msg(tf_dtype_is_valid((tf_dtype)v) == (fact_of(v) != NULL),
                  "dtype %d validity", v);
  }
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("dtype");
  TCase *tc = tcase_create("dtype");
  tcase_add_test(tc, test_tf_numbers);
  tcase_add_test(tc, test_sizes_and_names);
  tcase_add_test(tc, test_names_round_trip_and_distinct);
  tcase_add_test(tc, test_aliases);
  tcase_add_test(tc, test_unknown_names);
  tcase_add_test(tc, test_classes);
  tcase_add_test(tc, test_invalid_values);
  suite_add_tcase(s, tc);
  return s;
}
