/* variable_test.c: the variable resource through its own API: reading an
 * uninitialized variable fails naming it (also through type->read), Assign
 * then read, shape validation (declared partial shapes, the current shape
 * once initialized, validate_shape off), dtype checks, copy-on-write (a
 * held snapshot never changes; an unshared value is updated in place; a
 * unique assigned value is taken over, a shared one copied), failed updates
 * leave the value as it was, and concurrent readers always see one of the
 * values the writers produced. */
#include <pthread.h>
#include <string.h>

#include "lib/core/framework/variable.h"
#include "test/unit/testutil.h"

static tf_variable *new_var(const char *name, tf_dtype dt, tf_shape shape) {
  tf_variable *v = tf_variable_new("", name, dt, &shape);
  ck_assert_ptr_nonnull(v);
  return v;
}

/* An update that adds `delta` to every float64 element, or fails. */
typedef struct add_arg {
  double delta;
  bool fail;
} add_arg;

static tf_code add_all(void *arg, tf_variable *v, tf_tensor *value,
                       tf_status *st) {
  const add_arg *a = arg;
  if (a->fail) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "refused for %s",
                         v->base.name);
  }
  double *d = value->data;
  for (int64_t i = 0; i < value->n; i++) {
    d[i] += a->delta;
  }
  return TF_OK;
}

START_TEST(test_uninitialized_read) {
  tf_variable *v = new_var("my/var", TF_FLOAT32, tf_shape_of(1, 2));
  tf_tensor *t = (tf_tensor *)0x1;
  tf_status st;
  ck_assert(!tf_variable_is_initialized(v));
  ck_assert_int_eq(tf_variable_read(v, &t, &st), TF_FAILED_PRECONDITION);
  ck_assert_ptr_null(t);
  ck_assert_str_eq(st.msg, "Attempting to use uninitialized value my/var");
  ck_assert_int_eq(v->base.type->read(&v->base, &t, &st),
                   TF_FAILED_PRECONDITION);
  ck_assert_msg(strstr(st.msg, "my/var"), "%s", st.msg);
  add_arg a = {1, false};
  ck_assert_int_eq(tf_variable_update(v, add_all, &a, &st),
                   TF_FAILED_PRECONDITION);
  ck_assert_msg(strstr(st.msg, "uninitialized value my/var"), "%s", st.msg);
  ck_assert_ptr_eq(tf_variable_cast(&v->base), v);
  ck_assert_ptr_null(tf_variable_cast(NULL));
  ck_assert_str_eq(v->base.type->name, "Variable");
  ck_assert_str_eq(v->base.container, "");
  tf_resource_unref(&v->base);
}
END_TEST

START_TEST(test_assign_then_read) {
  tf_variable *v = new_var("v", TF_FLOAT64, tf_shape_of(2, 2, 3));
  tf_tensor *x = tt_rand(TF_FLOAT64, tf_shape_of(2, 2, 3), -1, 1);
  tf_tensor *keep = tf_tensor_ref(x); /* shared: the variable must copy */
  tf_status st;
  ck_assert_int_eq(tf_variable_assign(v, x, true, &st), TF_OK);
  ck_assert(tf_variable_is_initialized(v));
  tf_tensor *r;
  ck_assert_int_eq(tf_variable_read(v, &r, &st), TF_OK);
  ck_assert_ptr_ne(r, x);
  ck_assert(tf_tensor_equal(r, x));
  tf_tensor_unref(r);
  tf_tensor_unref(keep);
  /* x is now unique: the variable takes it over without a copy. */
  ck_assert_int_eq(tf_variable_assign(v, x, true, &st), TF_OK);
  ck_assert_ptr_eq(v->value, x);
  tf_tensor_unref(x);
  ck_assert(tf_tensor_buffer_is_unique(v->value));
  /* A shared value of the current shape refills the private buffer. */
  void *buf = v->value->data;
  tf_tensor *y = tt_rand(TF_FLOAT64, tf_shape_of(2, 2, 3), -1, 1);
  tf_tensor *y2 = tf_tensor_ref(y);
  ck_assert_int_eq(tf_variable_assign(v, y, true, &st), TF_OK);
  ck_assert_ptr_eq(v->value->data, buf);
  ck_assert(tf_tensor_equal(v->value, y));
  tf_tensor_unref(y);
  tf_tensor_unref(y2);
  tf_resource_unref(&v->base);
}
END_TEST

START_TEST(test_assign_shapes_and_dtypes) {
  tf_variable *v = new_var("w", TF_INT32, tf_shape_of(2, -1, 3));
  tf_status st;
  tf_tensor *a = tt_rand(TF_INT32, tf_shape_of(2, 4, 3), -9, 9);
  tf_tensor *b = tt_rand(TF_INT32, tf_shape_of(2, 5, 3), -9, 9);
  tf_tensor *c = tt_rand(TF_INT32, tf_shape_of(1, 3), -9, 9);
  tf_tensor *f = tt_rand(TF_FLOAT32, tf_shape_of(2, 4, 3), -9, 9);
  ck_assert_int_eq(tf_variable_assign(v, c, true, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "variable w has shape [?,3]") &&
                    strstr(st.msg, "[3]"),
                "%s", st.msg);
  ck_assert(!tf_variable_is_initialized(v));
  ck_assert_int_eq(tf_variable_assign(v, f, true, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "int32") && strstr(st.msg, "float32"), "%s",
                st.msg);
  ck_assert_int_eq(tf_variable_assign(v, a, true, &st), TF_OK);
  /* Initialized: the shape must now equal the current one. */
  ck_assert_int_eq(tf_variable_assign(v, b, true, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "Assign requires shapes of both tensors to "
                               "match") &&
                    strstr(st.msg, "[4,3]") && strstr(st.msg, "[5,3]"),
                "%s", st.msg);
  tf_tensor *r;
  ck_assert_int_eq(tf_variable_read(v, &r, &st), TF_OK);
  ck_assert(tf_tensor_equal(r, a));
  tf_tensor_unref(r);
  /* validate_shape false takes any shape. */
  ck_assert_int_eq(tf_variable_assign(v, c, false, &st), TF_OK);
  ck_assert_int_eq(tf_variable_read(v, &r, &st), TF_OK);
  ck_assert(tf_tensor_equal(r, c));
  tf_tensor_unref(r);
  tf_tensor *s = tf_tensor_scalar_i32(5);
  ck_assert_int_eq(tf_variable_assign(v, s, false, &st), TF_OK);
  ck_assert_int_eq(v->value->shape.rank, 0);
  tf_tensor *arr[] = {a, b, c, f, s};
  tt_free(arr, 5);
  tf_resource_unref(&v->base);
}
END_TEST

START_TEST(test_strings_assign) {
  tf_variable *v = new_var("s", TF_STRING, tf_shape_of(1, 2));
  tf_tensor *t;
  tf_status st;
  ck_assert_int_eq(tf_tensor_new(TF_STRING, &(tf_shape){1, {2}}, &t, &st),
                   TF_OK);
  tf_tensor_set_string(t, 0, "hello", 5, &st);
  tf_tensor_set_string(t, 1, "", 0, &st);
  tf_tensor *keep = tf_tensor_ref(t);
  ck_assert_int_eq(tf_variable_assign(v, t, true, &st), TF_OK);
  ck_assert_ptr_ne(v->value, t);
  ck_assert(tf_tensor_equal(v->value, t));
  ck_assert_int_eq(tf_variable_assign(v, t, true, &st), TF_OK); /* again */
  ck_assert(tf_tensor_equal(v->value, t));
  tf_tensor_unref(t);
  tf_tensor_unref(keep);
  tf_resource_unref(&v->base);
}
END_TEST

START_TEST(test_copy_on_write) {
  tf_variable *v = new_var("cow", TF_FLOAT64, tf_shape_of(1, 100));
  tf_status st;
  tf_tensor *z;
  ck_assert_int_eq(tf_tensor_new_zeros(TF_FLOAT64, &(tf_shape){1, {100}}, &z,
                                       &st),
                   TF_OK);
  ck_assert_int_eq(tf_variable_assign(v, z, true, &st), TF_OK);
  tf_tensor_unref(z);
  /* No reader: in place. */
  tf_tensor *before = v->value;
  add_arg one = {1, false};
  ck_assert_int_eq(tf_variable_update(v, add_all, &one, &st), TF_OK);
  ck_assert_ptr_eq(v->value, before);
  /* A reader holds a snapshot: the update goes to a copy. */
  tf_tensor *snap;
  ck_assert_int_eq(tf_variable_read(v, &snap, &st), TF_OK);
  ck_assert_int_eq(tf_variable_update(v, add_all, &one, &st), TF_OK);
  ck_assert_ptr_ne(v->value, snap);
  for (int64_t i = 0; i < 100; i++) {
    ck_assert_double_eq(((double *)snap->data)[i], 1.0);
    ck_assert_double_eq(((double *)v->value->data)[i], 2.0);
  }
  /* A view of a snapshot shares the buffer: still copy-on-write. */
  tf_tensor *cur, *view;
  ck_assert_int_eq(tf_variable_read(v, &cur, &st), TF_OK);
  ck_assert_int_eq(tf_tensor_view(cur, &(tf_shape){2, {10, 10}}, &view, &st),
                   TF_OK);
  tf_tensor_unref(cur);
  ck_assert_int_eq(tf_variable_update(v, add_all, &one, &st), TF_OK);
  ck_assert_double_eq(((double *)view->data)[99], 2.0);
  ck_assert_double_eq(((double *)v->value->data)[99], 3.0);
  /* A failing update changes nothing, on either path. */
  add_arg bad = {100, true};
  ck_assert_int_eq(tf_variable_update(v, add_all, &bad, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_str_eq(st.msg, "refused for cow");
  tf_tensor_unref(view);
  before = v->value;
  ck_assert_int_eq(tf_variable_update(v, add_all, &bad, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_ptr_eq(v->value, before);
  ck_assert_double_eq(((double *)v->value->data)[0], 3.0);
  tf_tensor_unref(snap);
  tf_resource_unref(&v->base);
}
END_TEST

/* ---- concurrent readers and writers -------------------------------------- */

#define CONC_N 512
#define CONC_WRITERS 3
#define CONC_STEPS 300

typedef struct conc {
  tf_variable *v;
  atomic_int writers_left;
  atomic_int bad; /* a torn or decreasing snapshot */
  atomic_int reads;
} conc;

static void *writer(void *arg) {
  conc *c = arg;
  add_arg one = {1, false};
  tf_status st;
  for (int i = 0; i < CONC_STEPS; i++) {
    if (tf_variable_update(c->v, add_all, &one, &st) != TF_OK) {
      atomic_store(&c->bad, 1);
    }
  }
  atomic_fetch_sub(&c->writers_left, 1);
  return NULL;
}

static void *reader(void *arg) {
  conc *c = arg;
  double last = 0;
  tf_status st;
  while (atomic_load(&c->writers_left) > 0) {
    tf_tensor *t;
    if (tf_variable_read(c->v, &t, &st) != TF_OK) {
      atomic_store(&c->bad, 1);
      return NULL;
    }
    const double *d = t->data;
    /* Every prefix of the updates leaves all elements equal; check them
     * twice so a concurrent in-place write would show. */
    for (int pass = 0; pass < 2; pass++) {
      for (int i = 0; i < CONC_N; i++) {
        if (d[i] != d[0] || d[0] < last) {
          atomic_store(&c->bad, 1);
        }
      }
    }
    last = d[0];
    tf_tensor_unref(t);
    atomic_fetch_add(&c->reads, 1);
  }
  return NULL;
}

START_TEST(test_concurrent_snapshots) {
  conc c;
  c.v = new_var("hot", TF_FLOAT64, tf_shape_of(1, CONC_N));
  atomic_init(&c.writers_left, CONC_WRITERS);
  atomic_init(&c.bad, 0);
  atomic_init(&c.reads, 0);
  tf_tensor *z;
  tf_status st;
  ck_assert_int_eq(tf_tensor_new_zeros(TF_FLOAT64,
                                       &(tf_shape){1, {CONC_N}}, &z, &st),
                   TF_OK);
  ck_assert_int_eq(tf_variable_assign(c.v, z, true, &st), TF_OK);
  tf_tensor_unref(z);
  pthread_t th[CONC_WRITERS + 2];
  for (int i = 0; i < CONC_WRITERS + 2; i++) {
    pthread_create(&th[i], NULL, i < CONC_WRITERS ? writer : reader, &c);
  }
  for (int i = 0; i < CONC_WRITERS + 2; i++) {
    pthread_join(th[i], NULL);
  }
  int bad = atomic_load(&c.bad);
  ck_assert_int_eq(bad, 0);
  tf_tensor *r;
  ck_assert_int_eq(tf_variable_read(c.v, &r, &st), TF_OK);
  for (int i = 0; i < CONC_N; i++) {
    ck_assert_double_eq(((double *)r->data)[i], CONC_WRITERS * CONC_STEPS);
  }
  tf_tensor_unref(r);
  tf_resource_unref(&c.v->base);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("variable");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_uninitialized_read);
  tcase_add_test(tc, test_assign_then_read);
  tcase_add_test(tc, test_assign_shapes_and_dtypes);
  tcase_add_test(tc, test_strings_assign);
  tcase_add_test(tc, test_copy_on_write);
  tcase_add_test(tc, test_concurrent_snapshots);
  tcase_set_timeout(tc, 30);
  suite_add_tcase(s, tc);
  return s;
}
