/* tensor_test.c: tensor creation (new, zeros, from_data, scalars, vectors),
 * alignment, refcounting of tensors and shared buffers (checked through the
 * CPU allocator's byte counts), views, deep copies, string elements,
 * equality, element access for every dtype, and bad shapes and dtypes. */
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test/unit/testutil.h"

#define SHAPE(...)                                                             \
  tf_shape_make((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),    \
                (int64_t[]){__VA_ARGS__})

/* Every valid dtype. */
static const tf_dtype all_dtypes[] = {
    TF_FLOAT32, TF_FLOAT64, TF_INT32,  TF_UINT8,    TF_INT16,
    TF_INT8,    TF_STRING,  TF_COMPLEX64, TF_INT64, TF_BOOL,
    TF_BFLOAT16, TF_UINT16, TF_FLOAT16, TF_UINT32, TF_UINT64};
#define N_DTYPES (sizeof all_dtypes / sizeof all_dtypes[0])

static long long in_use(void) { return tf_allocator_get_stats(tf_cpu_allocator()).bytes_in_use; }
static long long n_allocs(void) { return tf_allocator_get_stats(tf_cpu_allocator()).num_allocs; }

static tf_tensor *make(tf_dtype dt, tf_shape s) {
  tf_tensor *t = NULL;
  tf_status st;
  ck_assert_msg(tf_tensor_new(dt, &s, &t, &st) == TF_OK, "%s", st.msg);
  return t;
}

static bool aligned64(const void *p) { return ((uintptr_t)p & 63) == 0; }

/* An allocator that counts calls and can be told to fail. */
typedef struct {
  tf_allocator base;
  bool fail;
  int allocs, frees;
  size_t freed_bytes;
} test_alloc;

static void *ta_alloc(tf_allocator *a, size_t nbytes) {
  test_alloc *ta = (test_alloc *)a;
  ta->allocs++;
  if (ta->fail) return NULL;
  void *p = aligned_alloc(64, nbytes ? (nbytes + 63) & ~(size_t)63 : 64);
  if (p != NULL) tf_allocator_note_alloc(a, nbytes);
  return p;
}

static void ta_free(tf_allocator *a, void *p, size_t nbytes) {
  test_alloc *ta = (test_alloc *)a;
  ta->frees++;
  ta->freed_bytes += nbytes;
  tf_allocator_note_free(a, nbytes);
  free(p);
}

static void ta_init(test_alloc *ta) {
  memset(ta, 0, sizeof *ta);
  ta->base.name = "testmem";
  ta->base.alloc = ta_alloc;
  ta->base.free = ta_free;
}

START_TEST(test_new_every_dtype) {
  for (size_t i = 0; i < N_DTYPES; i++) {
    tf_dtype dt = all_dtypes[i];
    long long before = in_use();
    tf_tensor *t = make(dt, SHAPE(2, 3));
    ck_assert_int_eq(t->dtype, dt);
    ck_assert_int_eq(t->n, 6);
    ck_assert_int_eq(t->nbytes, 6 * tf_dtype_size(dt));
    tt_assert_shape(t, 2, 2, 3);
    ck_assert_ptr_nonnull(t->data);
    ck_assert_msg(aligned64(t->data), "%s data %p not 64-byte aligned",
                  tf_dtype_name(dt), t->data);
    ck_assert_ptr_eq(tf_tensor_allocator(t), tf_cpu_allocator());
    ck_assert(tf_tensor_buffer_is_unique(t));
    ck_assert_int_eq(in_use() - before, (long long)t->nbytes);
    memset(t->data, 0xab, t->nbytes * (dt != TF_STRING)); /* writable */
    tf_tensor_unref(t);
    ck_assert_int_eq(in_use(), before);
  }
}
END_TEST

START_TEST(test_alignment_many_sizes) {
  tf_tensor *ts[200];
  for (int i = 0; i < 200; i++) {
    ts[i] = make(i % 2 ? TF_INT8 : TF_FLOAT64, SHAPE(i));
    ck_assert_msg(aligned64(ts[i]->data), "size %d: %p", i, ts[i]->data);
  }
  tt_free(ts, 200);
}
END_TEST

START_TEST(test_new_string_elements_empty) {
  tf_tensor *t = make(TF_STRING, SHAPE(4, 5));
  const tf_string *s = tf_tensor_strings(t);
  for (int64_t i = 0; i < t->n; i++) {
    ck_assert_ptr_null(s[i].data);
    ck_assert_int_eq(s[i].len, 0);
  }
  tf_tensor_unref(t);
}
END_TEST

START_TEST(test_zeros_every_dtype) {
  for (size_t i = 0; i < N_DTYPES; i++) {
    tf_dtype dt = all_dtypes[i];
    /* Dirty the heap first so a reused block would show through. */
    tf_tensor *dirty = make(TF_UINT8, SHAPE(1000 * 16));
    memset(dirty->data, 0xff, dirty->nbytes);
    tf_tensor_unref(dirty);
    tf_tensor *t = NULL;
    tf_shape s = SHAPE(10, 100);
    ck_assert_int_eq(tf_tensor_new_zeros(dt, &s, &t, NULL), TF_OK);
    const unsigned char *b = t->data;
    for (size_t k = 0; k < t->nbytes; k++) {
      if (b[k] != 0) ck_abort_msg("%s: byte %zu is %d", tf_dtype_name(dt), k, b[k]);
    }
    if (dt != TF_STRING) {
      ck_assert(tf_tensor_get_f64(t, 999) == 0.0);
    } else {
      ck_assert_int_eq(tf_tensor_strings(t)[999].len, 0);
    }
    tf_tensor_unref(t);
  }
}
END_TEST

START_TEST(test_zeros_bad_shape) {
  tf_tensor *t = (tf_tensor *)1;
  tf_shape s = SHAPE(-1);
  tf_status st;
  ck_assert_int_eq(tf_tensor_new_zeros(TF_FLOAT32, &s, &t, &st), TF_INVALID_ARGUMENT);
  ck_assert_ptr_null(t);
}
END_TEST

START_TEST(test_from_data) {
  double src[6] = {1, -2, 3.5, 1e300, -0.0, 6};
  tf_tensor *t = NULL;
  tf_status st;
  tf_shape s = SHAPE(3, 2);
  ck_assert_int_eq(tf_tensor_from_data(TF_FLOAT64, &s, src, sizeof src, &t, &st), TF_OK);
  ck_assert_ptr_ne(t->data, src);
  src[0] = 99; /* copied, not borrowed */
  const double *d = t->data;
  ck_assert(d[0] == 1 && d[2] == 3.5 && d[3] == 1e300 && signbit(d[4]) && d[5] == 6);
  ck_assert(aligned64(t->data));
  tf_tensor_unref(t);
}
END_TEST

START_TEST(test_from_data_errors) {
  float src[6] = {0};
  tf_tensor *t = (tf_tensor *)1;
  tf_status st;
  tf_shape s = SHAPE(2, 3);
  long long before = in_use();
  ck_assert_int_eq(tf_tensor_from_data(TF_FLOAT32, &s, src, 20, &t, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_ptr_null(t);
  ck_assert_msg(strstr(st.msg, "20") && strstr(st.msg, "24"), "%s", st.msg);
  ck_assert_int_eq(in_use(), before); /* the tentative tensor was freed */
  t = (tf_tensor *)1;
  ck_assert_int_eq(tf_tensor_from_data(TF_STRING, &s, src, 96, &t, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_ptr_null(t);
  ck_assert_msg(strstr(st.msg, "string") != NULL, "%s", st.msg);
  t = (tf_tensor *)1;
  s = SHAPE(1LL << 62, 4);
  ck_assert_int_eq(tf_tensor_from_data(TF_FLOAT32, &s, src, 24, &t, NULL),
                   TF_INVALID_ARGUMENT);
  ck_assert_ptr_null(t);
  /* Zero elements from a NULL pointer are fine. */
  s = SHAPE(0, 3);
  ck_assert_int_eq(tf_tensor_from_data(TF_INT32, &s, NULL, 0, &t, &st), TF_OK);
  ck_assert_int_eq(t->n, 0);
  tf_tensor_unref(t);
}
END_TEST

START_TEST(test_scalars_and_vectors) {
  tf_tensor *t[8];
  t[0] = tf_tensor_scalar_f32(1.5f);
  t[1] = tf_tensor_scalar_f64(-2.25);
  t[2] = tf_tensor_scalar_i32(INT32_MIN);
  t[3] = tf_tensor_scalar_i64(INT64_MAX);
  t[4] = tf_tensor_scalar_bool(true);
  ck_assert(t[0]->dtype == TF_FLOAT32 && *(float *)t[0]->data == 1.5f);
  ck_assert(t[1]->dtype == TF_FLOAT64 && *(double *)t[1]->data == -2.25);
  ck_assert(t[2]->dtype == TF_INT32 && *(int32_t *)t[2]->data == INT32_MIN);
  ck_assert(t[3]->dtype == TF_INT64 && *(int64_t *)t[3]->data == INT64_MAX);
  ck_assert(t[4]->dtype == TF_BOOL && *(bool *)t[4]->data);
  for (int i = 0; i < 5; i++) {
    ck_assert_int_eq(t[i]->shape.rank, 0);
    ck_assert_int_eq(t[i]->n, 1);
  }
  const float f[3] = {1, 2, 3};
  const int32_t i32[2] = {-1, 7};
  const int64_t i64[4] = {INT64_MIN, 0, 1, INT64_MAX};
  t[5] = tf_tensor_vec_f32(3, f);
  t[6] = tf_tensor_vec_i32(2, i32);
  t[7] = tf_tensor_vec_i64(4, i64);
  tt_assert_shape(t[5], 1, 3);
  tt_assert_shape(t[6], 1, 2);
  tt_assert_shape(t[7], 1, 4);
  ck_assert(memcmp(t[5]->data, f, sizeof f) == 0);
  ck_assert(memcmp(t[6]->data, i32, sizeof i32) == 0);
  ck_assert(memcmp(t[7]->data, i64, sizeof i64) == 0);
  tt_free(t, 8);
  tf_tensor *e = tf_tensor_vec_f32(0, NULL);
  tt_assert_shape(e, 1, 0);
  ck_assert_ptr_nonnull(e->data);
  tf_tensor_unref(e);
}
END_TEST

START_TEST(test_zero_elements) {
  const tf_shape shapes[] = {SHAPE(0), SHAPE(3, 0), SHAPE(0, 1LL << 62),
                             SHAPE(2, 0, 5, 1, 1, 1, 1, 1)};
  for (size_t k = 0; k < sizeof shapes / sizeof shapes[0]; k++) {
    for (size_t i = 0; i < N_DTYPES; i++) {
      tf_tensor *a = make(all_dtypes[i], shapes[k]);
      tf_tensor *b = make(all_dtypes[i], shapes[k]);
      ck_assert_int_eq(a->n, 0);
      ck_assert_int_eq(a->nbytes, 0);
      ck_assert_ptr_nonnull(a->data);
      ck_assert(aligned64(a->data));
      ck_assert_ptr_ne(a->data, b->data); /* distinct valid pointers */
      ck_assert(tf_tensor_equal(a, b));
      tf_tensor *c = NULL;
      ck_assert_int_eq(tf_tensor_copy(a, &c, NULL), TF_OK);
      ck_assert_ptr_nonnull(c->data);
      ck_assert(tf_tensor_equal(a, c));
      tf_tensor_unref(a);
      tf_tensor_unref(b);
      tf_tensor_unref(c);
    }
  }
}
END_TEST

/* Bad shapes and dtypes: INVALID_ARGUMENT, *out NULL, nothing allocated. */
static void check_rejected(tf_dtype dt, tf_shape s, const char *needle) {
  long long before = in_use(), allocs = n_allocs();
  tf_tensor *t = (tf_tensor *)1;
  tf_status st;
  tf_status_init(&st);
  ck_assert_int_eq(tf_tensor_new(dt, &s, &t, &st), TF_INVALID_ARGUMENT);
  ck_assert_ptr_null(t);
  ck_assert_int_eq(st.code, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, needle) != NULL, "want '%s' in: %s", needle, st.msg);
  ck_assert_int_eq(in_use(), before);
  ck_assert_int_eq(n_allocs(), allocs);
  test_alloc ta;
  ta_init(&ta);
  t = (tf_tensor *)1;
  ck_assert_int_eq(tf_tensor_new_on(&ta.base, dt, &s, &t, NULL), TF_INVALID_ARGUMENT);
  ck_assert_ptr_null(t);
  ck_assert_int_eq(ta.allocs, 0);
}

START_TEST(test_rejects_bad_shapes) {
  check_rejected(TF_FLOAT32, SHAPE(1LL << 40, 1LL << 40), "[1099511627776,1099511627776]");
  check_rejected(TF_FLOAT64, SHAPE(1LL << 61), "[2305843009213693952]");
  check_rejected(TF_UINT8, SHAPE(INT64_MAX, 2), "9223372036854775807");
  check_rejected(TF_STRING, SHAPE(1LL << 60), "[1152921504606846976]");
  check_rejected(TF_COMPLEX64, SHAPE(1LL << 31, 1LL << 31), "[2147483648,2147483648]");
  check_rejected(TF_INT32, SHAPE(3, -1), "negative");
  check_rejected(TF_INT32, tf_shape_unknown(), "rank");
  tf_shape nine = SHAPE(1, 1, 1, 1, 1, 1, 1, 1);
  nine.rank = 9;
  check_rejected(TF_INT32, nine, "rank");
}
END_TEST

START_TEST(test_rejects_bad_dtypes) {
  const int bad[] = {0, 11, 12, 18, 24, 1000, -3};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    check_rejected((tf_dtype)bad[i], SHAPE(2), "dtype");
  }
}
END_TEST

START_TEST(test_allocator_failure) {
  test_alloc ta;
  ta_init(&ta);
  ta.fail = true;
  tf_tensor *t = (tf_tensor *)1;
  tf_status st;
  tf_shape s = SHAPE(1000, 1000);
  ck_assert_int_eq(tf_tensor_new_on(&ta.base, TF_FLOAT32, &s, &t, &st),
                   TF_RESOURCE_EXHAUSTED);
  ck_assert_ptr_null(t);
  ck_assert_int_eq(ta.allocs, 1);
  ck_assert_int_eq(ta.frees, 0);
  ck_assert_msg(strstr(st.msg, "[1000,1000]") && strstr(st.msg, "testmem") &&
                    strstr(st.msg, "4000000"),
                "%s", st.msg);
}
END_TEST

/* A shape that passes the checks but no machine can hold: the CPU
 * allocator says no and the tensor layer turns it into RESOURCE_EXHAUSTED. */
START_TEST(test_cpu_out_of_memory) {
  long long before = in_use();
  tf_tensor *t = (tf_tensor *)1;
  tf_status st;
  tf_shape s = SHAPE(1LL << 30, 1LL << 30); /* 2^60 floats = 4 EiB */
  ck_assert_int_eq(tf_tensor_new(TF_FLOAT32, &s, &t, &st), TF_RESOURCE_EXHAUSTED);
  ck_assert_ptr_null(t);
  ck_assert_msg(strstr(st.msg, "[1073741824,1073741824]") != NULL, "%s", st.msg);
  ck_assert_int_eq(in_use(), before);
}
END_TEST

START_TEST(test_custom_allocator_round_trip) {
  test_alloc ta;
  ta_init(&ta);
  tf_tensor *t = NULL, *c = NULL, *v = NULL;
  tf_shape s = SHAPE(5, 7);
  ck_assert_int_eq(tf_tensor_new_on(&ta.base, TF_INT16, &s, &t, NULL), TF_OK);
  ck_assert_ptr_eq(tf_tensor_allocator(t), &ta.base);
  ck_assert_int_eq(tf_allocator_get_stats(&ta.base).bytes_in_use, 70);
  ck_assert_int_eq(tf_tensor_copy(t, &c, NULL), TF_OK); /* same allocator */
  ck_assert_ptr_eq(tf_tensor_allocator(c), &ta.base);
  tf_shape s2 = SHAPE(35);
  ck_assert_int_eq(tf_tensor_view(t, &s2, &v, NULL), TF_OK);
  ck_assert_ptr_eq(tf_tensor_allocator(v), &ta.base);
  ck_assert_int_eq(ta.allocs, 2);
  tf_tensor_unref(t);
  tf_tensor_unref(c);
  ck_assert_int_eq(ta.frees, 1);
  tf_tensor_unref(v);
  ck_assert_int_eq(ta.frees, 2);
  ck_assert_int_eq(ta.freed_bytes, 140);
  ck_assert_int_eq(tf_allocator_get_stats(&ta.base).bytes_in_use, 0);
  ck_assert_int_eq(tf_allocator_get_stats(&ta.base).peak_bytes, 140);
}
END_TEST

START_TEST(test_ref_unref) {
  ck_assert_ptr_null(tf_tensor_ref(NULL));
  tf_tensor_unref(NULL);
  long long before = in_use();
  tf_tensor *t = make(TF_FLOAT32, SHAPE(1000));
  ck_assert_int_eq(in_use() - before, 4000);
  ck_assert_ptr_eq(tf_tensor_ref(t), t);
  ck_assert(!tf_tensor_buffer_is_unique(t));
  tf_tensor_ref(t);
  tf_tensor_unref(t);
  tf_tensor_unref(t);
  ck_assert(tf_tensor_buffer_is_unique(t));
  ck_assert_int_eq(in_use() - before, 4000); /* still held once */
  ((float *)t->data)[999] = 1.0f;
  tf_tensor_unref(t);
  ck_assert_int_eq(in_use(), before);
}
END_TEST

START_TEST(test_view_shares_buffer) {
  long long before = in_use();
  tf_tensor *t = make(TF_INT32, SHAPE(2, 6));
  for (int i = 0; i < 12; i++) ((int32_t *)t->data)[i] = i;
  tf_tensor *v = NULL;
  tf_status st;
  tf_shape s = SHAPE(3, 1, 4);
  ck_assert_int_eq(tf_tensor_view(t, &s, &v, &st), TF_OK);
  ck_assert_ptr_ne(v, t);
  ck_assert_ptr_eq(v->data, t->data);
  tt_assert_shape(v, 3, 3, 1, 4);
  ck_assert_int_eq(v->n, 12);
  ck_assert_int_eq(v->nbytes, 48);
  ck_assert_int_eq(v->dtype, TF_INT32);
  ck_assert_int_eq(in_use() - before, 48); /* no new data */
  ck_assert(!tf_tensor_buffer_is_unique(t));
  ck_assert(!tf_tensor_buffer_is_unique(v));
  ((int32_t *)v->data)[5] = -5; /* writes show through */
  ck_assert_int_eq(((int32_t *)t->data)[5], -5);
  /* The buffer outlives the tensor it came from. */
  tf_tensor_unref(t);
  ck_assert_int_eq(in_use() - before, 48);
  ck_assert(tf_tensor_buffer_is_unique(v));
  ck_assert_int_eq(((int32_t *)v->data)[11], 11);
  /* A view of a view. */
  tf_tensor *w = NULL;
  tf_shape s2 = SHAPE(12);
  ck_assert_int_eq(tf_tensor_view(v, &s2, &w, NULL), TF_OK);
  tf_tensor_unref(v);
  ck_assert_int_eq(in_use() - before, 48);
  ck_assert_int_eq(((int32_t *)w->data)[5], -5);
  tf_tensor_unref(w);
  ck_assert_int_eq(in_use(), before);
}
END_TEST

START_TEST(test_view_errors) {
  tf_tensor *t = make(TF_FLOAT32, SHAPE(2, 3));
  tf_tensor *v = (tf_tensor *)1;
  tf_status st;
  tf_shape s = SHAPE(4, 2);
  ck_assert_int_eq(tf_tensor_view(t, &s, &v, &st), TF_INVALID_ARGUMENT);
  ck_assert_ptr_null(v);
  ck_assert_msg(strstr(st.msg, "[2,3]") && strstr(st.msg, "[4,2]"), "%s", st.msg);
  s = SHAPE(-2, -3);
  v = (tf_tensor *)1;
  ck_assert_int_eq(tf_tensor_view(t, &s, &v, &st), TF_INVALID_ARGUMENT);
  ck_assert_ptr_null(v);
  s = SHAPE(1LL << 62, 1LL << 62);
  ck_assert_int_eq(tf_tensor_view(t, &s, &v, NULL), TF_INVALID_ARGUMENT);
  ck_assert(tf_tensor_buffer_is_unique(t));
  tf_tensor_unref(t);
}
END_TEST

static void set_str(tf_tensor *t, int64_t i, const char *s) {
  tf_status st;
  ck_assert_msg(tf_tensor_set_string(t, i, s, strlen(s), &st) == TF_OK, "%s", st.msg);
}

START_TEST(test_strings_set) {
  tf_tensor *t = make(TF_STRING, SHAPE(3));
  set_str(t, 0, "hello");
  const char raw[5] = {'a', '\0', 'b', '\0', 'c'};
  ck_assert_int_eq(tf_tensor_set_string(t, 1, raw, 5, NULL), TF_OK);
  const tf_string *s = tf_tensor_strings(t);
  ck_assert_int_eq(s[0].len, 5);
  ck_assert_str_eq(s[0].data, "hello"); /* NUL stored after the bytes */
  ck_assert_int_eq(s[1].len, 5);
  ck_assert(memcmp(s[1].data, raw, 5) == 0 && s[1].data[5] == '\0');
  ck_assert_ptr_null(s[2].data);
  /* Overwriting frees the old bytes (ASan reports a leak otherwise). */
  set_str(t, 0, "a much longer replacement string");
  ck_assert_str_eq(s[0].data, "a much longer replacement string");
  ck_assert_int_eq(tf_tensor_set_string(t, 0, NULL, 0, NULL), TF_OK);
  ck_assert_ptr_null(s[0].data);
  ck_assert_int_eq(s[0].len, 0);
  /* Setting an element from its own bytes. */
  set_str(t, 2, "self");
  ck_assert_int_eq(tf_tensor_set_string(t, 2, s[2].data, 3, NULL), TF_OK);
  ck_assert_str_eq(s[2].data, "sel");
  tf_tensor_unref(t); /* frees each element */
}
END_TEST

START_TEST(test_strings_set_errors) {
  tf_tensor *t = make(TF_STRING, SHAPE(2, 2));
  tf_status st;
  ck_assert_int_eq(tf_tensor_set_string(t, 4, "x", 1, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "4") != NULL, "%s", st.msg);
  ck_assert_int_eq(tf_tensor_set_string(t, -1, "x", 1, &st), TF_INVALID_ARGUMENT);
  ck_assert_int_eq(tf_tensor_set_string(t, INT64_MIN, "x", 1, NULL), TF_INVALID_ARGUMENT);
  tf_tensor *f = make(TF_FLOAT32, SHAPE(4));
  ck_assert_int_eq(tf_tensor_set_string(f, 0, "x", 1, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "float32") != NULL, "%s", st.msg);
  tf_tensor_unref(t);
  tf_tensor_unref(f);
}
END_TEST

START_TEST(test_strings_view_and_free) {
  tf_tensor *t = make(TF_STRING, SHAPE(2, 2));
  for (int i = 0; i < 4; i++) {
    char buf[32];
    snprintf(buf, sizeof buf, "element-%d", i);
    set_str(t, i, buf);
  }
  tf_tensor *v = NULL;
  tf_shape s = SHAPE(4);
  ck_assert_int_eq(tf_tensor_view(t, &s, &v, NULL), TF_OK);
  tf_tensor_unref(t); /* strings live on in the shared buffer */
  ck_assert_str_eq(tf_tensor_strings(v)[3].data, "element-3");
  tf_tensor_unref(v);
}
END_TEST

START_TEST(test_copy_numeric_is_deep) {
  tf_tensor *t = tt_rand(TF_FLOAT64, SHAPE(3, 4), -1, 1);
  tf_tensor *c = NULL;
  tf_status st;
  ck_assert_int_eq(tf_tensor_copy(t, &c, &st), TF_OK);
  ck_assert_ptr_ne(c, t);
  ck_assert_ptr_ne(c->data, t->data);
  ck_assert(aligned64(c->data));
  ck_assert(tf_tensor_equal(c, t));
  ck_assert(tf_tensor_buffer_is_unique(c) && tf_tensor_buffer_is_unique(t));
  double orig = ((double *)t->data)[7];
  ((double *)c->data)[7] = 42;
  ck_assert(((double *)t->data)[7] == orig);
  ck_assert(!tf_tensor_equal(c, t));
  /* A copy of a view has the view's shape. */
  tf_tensor *v = NULL, *cv = NULL;
  tf_shape s = SHAPE(12);
  ck_assert_int_eq(tf_tensor_view(t, &s, &v, NULL), TF_OK);
  ck_assert_int_eq(tf_tensor_copy(v, &cv, NULL), TF_OK);
  tt_assert_shape(cv, 1, 12);
  ck_assert(memcmp(cv->data, t->data, 96) == 0);
  tf_tensor_unref(t);
  tf_tensor_unref(c);
  tf_tensor_unref(v);
  tf_tensor_unref(cv);
}
END_TEST

START_TEST(test_copy_strings_is_deep) {
  tf_tensor *t = make(TF_STRING, SHAPE(3));
  set_str(t, 0, "alpha");
  set_str(t, 2, "gamma");
  tf_tensor *c = NULL;
  ck_assert_int_eq(tf_tensor_copy(t, &c, NULL), TF_OK);
  ck_assert(tf_tensor_equal(t, c));
  const tf_string *a = tf_tensor_strings(t), *b = tf_tensor_strings(c);
  ck_assert_ptr_ne(a[0].data, b[0].data);
  ck_assert_ptr_null(b[1].data);
  set_str(c, 0, "changed");
  ck_assert_str_eq(a[0].data, "alpha");
  ck_assert(!tf_tensor_equal(t, c));
  tf_tensor_unref(t);
  ck_assert_str_eq(b[2].data, "gamma"); /* independent of the original */
  tf_tensor_unref(c);
}
END_TEST

START_TEST(test_equal) {
  tf_tensor *a = tt_tensor(TF_FLOAT32, SHAPE(2, 3), (double[]){1, 2, 3, 4, 5, 6});
  tf_tensor *b = tt_tensor(TF_FLOAT32, SHAPE(2, 3), (double[]){1, 2, 3, 4, 5, 6});
  tf_tensor *c = tt_tensor(TF_FLOAT32, SHAPE(3, 2), (double[]){1, 2, 3, 4, 5, 6});
  tf_tensor *d = tt_tensor(TF_INT32, SHAPE(2, 3), (double[]){1, 2, 3, 4, 5, 6});
  tf_tensor *e = tt_tensor(TF_FLOAT32, SHAPE(2, 3), (double[]){1, 2, 3, 4, 5, 7});
  ck_assert(tf_tensor_equal(a, a));
  ck_assert(tf_tensor_equal(a, b));
  ck_assert(!tf_tensor_equal(a, c)); /* shape */
  ck_assert(!tf_tensor_equal(a, d)); /* dtype */
  ck_assert(!tf_tensor_equal(a, e)); /* last element */
  tf_tensor *n1 = tf_tensor_scalar_f64(NAN), *n2 = tf_tensor_scalar_f64(NAN);
  ck_assert(tf_tensor_equal(n1, n2)); /* bytes, so NaN equals itself */
  tf_tensor *r0 = tf_tensor_scalar_f64(0), *r1 = tf_tensor_vec_i64(1, (int64_t[]){0});
  ck_assert(!tf_tensor_equal(r0, r1));
  tf_tensor *all[] = {a, b, c, d, e, n1, n2, r0, r1};
  tt_free(all, 9);
}
END_TEST

START_TEST(test_equal_strings) {
  tf_tensor *a = make(TF_STRING, SHAPE(2)), *b = make(TF_STRING, SHAPE(2));
  set_str(a, 0, "same");
  set_str(b, 0, "same");
  ck_assert(tf_tensor_equal(a, b)); /* by content, not pointer */
  set_str(b, 1, "x");
  ck_assert(!tf_tensor_equal(a, b)); /* "" vs "x" */
  set_str(a, 1, "y");
  ck_assert(!tf_tensor_equal(a, b));
  set_str(a, 1, "x");
  ck_assert(tf_tensor_equal(a, b));
  ck_assert_int_eq(tf_tensor_set_string(a, 1, "x\0z", 3, NULL), TF_OK);
  ck_assert(!tf_tensor_equal(a, b)); /* length differs past a NUL */
  ck_assert_int_eq(tf_tensor_set_string(b, 1, "x\0z", 3, NULL), TF_OK);
  ck_assert(tf_tensor_equal(a, b));
  tf_tensor_unref(a);
  tf_tensor_unref(b);
}
END_TEST

/* One element of raw bytes of dtype dt as a scalar tensor. */
static tf_tensor *scalar_raw(tf_dtype dt, const void *bytes) {
  tf_tensor *t = NULL;
  tf_shape s = tf_shape_scalar();
  ck_assert_int_eq(tf_tensor_from_data(dt, &s, bytes, tf_dtype_size(dt), &t, NULL), TF_OK);
  return t;
}

#define CHECK_GET(dt, ctype, value, want_f64, want_i64)                        \
  do {                                                                         \
    ctype v_ = (value);                                                        \
    tf_tensor *t_ = scalar_raw(dt, &v_);                                       \
    double f_ = tf_tensor_get_f64(t_, 0);                                      \
    int64_t i_ = tf_tensor_get_i64(t_, 0);                                     \
    ck_assert_msg(f_ == (want_f64) || (isnan(f_) && isnan(want_f64)),          \
                  "%s get_f64: %.17g, want %.17g", #dt, f_, (double)(want_f64)); \
    ck_assert_msg(i_ == (want_i64), "%s %s get_i64: %lld, want %lld", #dt,     \
                  #value, (long long)i_, (long long)(want_i64));               \
    tf_tensor_unref(t_);                                                       \
  } while (0)

START_TEST(test_get_every_dtype) {
  CHECK_GET(TF_FLOAT32, float, -2.75f, -2.75, -2);
  CHECK_GET(TF_FLOAT32, float, 0.999f, (double)0.999f, 0);
  CHECK_GET(TF_FLOAT32, float, NAN, NAN, 0);
  CHECK_GET(TF_FLOAT32, float, INFINITY, INFINITY, INT64_MAX);
  CHECK_GET(TF_FLOAT32, float, -INFINITY, -INFINITY, INT64_MIN);
  CHECK_GET(TF_FLOAT64, double, 123456789.99, 123456789.99, 123456789);
  CHECK_GET(TF_FLOAT64, double, -1e300, -1e300, INT64_MIN);
  CHECK_GET(TF_FLOAT64, double, 1e300, 1e300, INT64_MAX);
  CHECK_GET(TF_FLOAT64, double, 9.21e18, 9.21e18, 9210000000000000000LL);
  CHECK_GET(TF_FLOAT64, double, -9.21e18, -9.21e18, -9210000000000000000LL);
  CHECK_GET(TF_FLOAT64, double, 0x1p63, 0x1p63, INT64_MAX);
  CHECK_GET(TF_FLOAT64, double, -0x1p63, -0x1p63, INT64_MIN);
  CHECK_GET(TF_INT8, int8_t, -128, -128.0, -128);
  CHECK_GET(TF_INT16, int16_t, -32768, -32768.0, -32768);
  CHECK_GET(TF_INT32, int32_t, INT32_MIN, (double)INT32_MIN, INT32_MIN);
  CHECK_GET(TF_INT64, int64_t, INT64_MIN, -0x1p63, INT64_MIN);
  CHECK_GET(TF_INT64, int64_t, INT64_MAX - 1, 0x1p63, INT64_MAX - 1); /* exact as int */
  CHECK_GET(TF_UINT8, uint8_t, 255, 255.0, 255);
  CHECK_GET(TF_UINT16, uint16_t, 65535, 65535.0, 65535);
  CHECK_GET(TF_UINT32, uint32_t, UINT32_MAX, 4294967295.0, 4294967295LL);
  CHECK_GET(TF_UINT64, uint64_t, 1ULL << 40, 0x1p40, 1LL << 40);
  CHECK_GET(TF_UINT64, uint64_t, UINT64_MAX, 0x1p64, -1); /* bits as int64 */
  CHECK_GET(TF_BOOL, bool, true, 1.0, 1);
  CHECK_GET(TF_BOOL, bool, false, 0.0, 0);
  CHECK_GET(TF_BFLOAT16, tf_bfloat16, 0x3fc0, 1.5, 1);   /* 1.5 */
  CHECK_GET(TF_BFLOAT16, tf_bfloat16, 0xc2f7, -123.5, -123);
  CHECK_GET(TF_FLOAT16, tf_float16, 0x3e00, 1.5, 1);
  CHECK_GET(TF_FLOAT16, tf_float16, 0xc500, -5.0, -5);
  CHECK_GET(TF_FLOAT16, tf_float16, 0x7bff, 65504.0, 65504); /* max half */
  CHECK_GET(TF_COMPLEX64, tf_complex64, ((tf_complex64){2.5f, -1.0f}), 2.5, 2);
  CHECK_GET(TF_COMPLEX64, tf_complex64, ((tf_complex64){-7.75f, 3.0f}), -7.75, -7);
}
END_TEST

/* get_f64 / get_i64 index the flat element array correctly. */
START_TEST(test_get_indexing) {
  for (size_t k = 0; k < N_DTYPES; k++) {
    tf_dtype dt = all_dtypes[k];
    if (dt == TF_STRING) continue;
    tf_tensor *t = tt_tensor_i(dt, SHAPE(2, 3), (int64_t[]){0, 1, 0, 1, 1, 0});
    for (int i = 0; i < 6; i++) {
      int want = (0x1a >> i) & 1; /* 0,1,0,1,1,0 */
      ck_assert_msg(tf_tensor_get_i64(t, i) == want && tf_tensor_get_f64(t, i) == want,
                    "%s element %d", tf_dtype_name(dt), i);
    }
    tf_tensor_unref(t);
  }
  int64_t vals[5] = {-100, 0, 7, 126, -3};
  tf_tensor *t = tt_tensor_i(TF_INT8, SHAPE(5), vals);
  for (int i = 0; i < 5; i++) ck_assert_int_eq(tf_tensor_get_i64(t, i), vals[i]);
  tf_tensor_unref(t);
}
END_TEST

START_TEST(test_str) {
  char buf[256];
  tf_tensor *t = tt_tensor(TF_FLOAT32, SHAPE(2, 3), (double[]){1, 2.5, -3, 4, 5, 6});
  ck_assert_str_eq(tf_tensor_str(t, buf, sizeof buf), "float32[2,3] {1, 2.5, -3, 4, 5, 6}");
  tf_tensor_unref(t);
  t = tt_tensor_i(TF_INT64, SHAPE(10), (int64_t[]){0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  ck_assert_str_eq(tf_tensor_str(t, buf, sizeof buf),
                   "int64[10] {0, 1, 2, 3, 4, 5, 6, 7, ...}");
  tf_tensor_unref(t);
  t = tf_tensor_scalar_bool(true);
  ck_assert_str_eq(tf_tensor_str(t, buf, sizeof buf), "bool[] {1}");
  tf_tensor_unref(t);
  t = make(TF_FLOAT64, SHAPE(3, 0));
  ck_assert_str_eq(tf_tensor_str(t, buf, sizeof buf), "float64[3,0] {}");
  tf_tensor_unref(t);
  t = make(TF_STRING, SHAPE(3));
  set_str(t, 0, "ab");
  set_str(t, 2, "0123456789abcdefXYZ");
  ck_assert_str_eq(tf_tensor_str(t, buf, sizeof buf),
                   "string[3] {\"ab\", \"\", \"0123456789abcdef\"}");
  tf_tensor_unref(t);
}
END_TEST

/* Every buffer size gives a NUL-terminated prefix of the full text and
 * writes nothing past size. */
START_TEST(test_str_truncation) {
  tf_tensor *t = tt_tensor(TF_FLOAT64, SHAPE(3, 4),
                           (double[]){1.25, -2, 3e10, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  char full[256], buf[300];
  tf_tensor_str(t, full, sizeof full);
  size_t len = strlen(full);
  ck_assert_int_gt(len, 20);
  for (size_t size = 1; size <= len + 2; size++) {
    memset(buf, '#', sizeof buf);
    tf_tensor_str(t, buf, size);
    size_t want = len < size - 1 ? len : size - 1;
    ck_assert_msg(strlen(buf) == want && strncmp(buf, full, want) == 0,
                  "size %zu: '%s' vs '%s'", size, buf, full);
    for (size_t k = size; k < sizeof buf; k++) {
      if (buf[k] != '#') ck_abort_msg("size %zu: byte %zu written", size, k);
    }
  }
  tf_tensor_unref(t);
}
END_TEST

typedef struct {
  tf_tensor *t;
  int iters;
} ref_job;

static void *ref_worker(void *arg) {
  ref_job *j = arg;
  for (int i = 0; i < j->iters; i++) {
    tf_tensor_ref(j->t);
    tf_tensor_unref(j->t);
  }
  return NULL;
}

/* Concurrent ref/unref from several threads leaves the count intact. */
START_TEST(test_refcount_threads) {
  long long before = in_use();
  tf_tensor *t = make(TF_FLOAT32, SHAPE(16));
  pthread_t th[4];
  ref_job j = {t, 20000};
  for (int i = 0; i < 4; i++) ck_assert_int_eq(pthread_create(&th[i], NULL, ref_worker, &j), 0);
  for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
  ck_assert_int_eq(atomic_load(&t->refs), 1);
  ck_assert(tf_tensor_buffer_is_unique(t));
  tf_tensor_unref(t);
  ck_assert_int_eq(in_use(), before);
}
END_TEST

START_TEST(test_unref_below_zero_aborts) {
  tf_tensor *t = make(TF_FLOAT32, SHAPE(1));
  atomic_store(&t->refs, 0); /* as if it had been released already */
  ck_assert_ptr_nonnull(freopen("/dev/null", "w", stderr));
  tf_tensor_unref(t);
  ck_abort_msg("unref of a released tensor returned");
}
END_TEST

static int wrap_released;
static void wrap_release(void *arg) {
  wrap_released++;
  free(arg);
}

/* tf_tensor_wrap: the memory is used in place and released exactly once,
 * when the last reference (also of a view) goes; a bad size or alignment
 * fails naming it and still releases. */
START_TEST(test_wrap_releases_once) {
  tf_status st;
  float *mem = aligned_alloc(64, 64);
  for (int i = 0; i < 6; i++) mem[i] = (float)i;
  tf_tensor *t = NULL, *v = NULL;
  wrap_released = 0;
  tf_shape s23 = tf_shape_of(2, 2, 3), s6 = tf_shape_of(1, 6);
  ck_assert_int_eq(tf_tensor_wrap(TF_FLOAT32, &s23, mem, 6 * sizeof(float),
                                  wrap_release, mem, &t, &st), TF_OK);
  ck_assert_ptr_eq(t->data, mem);
  ck_assert_int_eq(tf_tensor_view(t, &s6, &v, &st), TF_OK);
  tf_tensor_unref(t);
  ck_assert_int_eq(wrap_released, 0);
  ck_assert(((float *)v->data)[5] == 5.0f);
  tf_tensor_unref(v);
  ck_assert_int_eq(wrap_released, 1);
  float *bad = aligned_alloc(64, 64);
  ck_assert_int_eq(tf_tensor_wrap(TF_FLOAT32, &s23, bad, 20, wrap_release, bad,
                                  &t, &st), TF_INVALID_ARGUMENT);
  ck_assert_ptr_null(t);
  ck_assert_msg(strstr(st.msg, "20 bytes") != NULL, "%s", st.msg);
  ck_assert_int_eq(wrap_released, 2);
  char *odd = aligned_alloc(64, 64);
  ck_assert_int_eq(tf_tensor_wrap(TF_FLOAT32, &s6, odd + 2, 24, NULL, NULL, &t,
                                  &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "aligned") != NULL, "%s", st.msg);
  free(odd);
  ck_assert_int_eq(tf_tensor_wrap(TF_STRING, &s6, mem, 24, NULL, NULL, &t, &st),
                   TF_INVALID_ARGUMENT);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("tensor");
  TCase *tc = tcase_create("tensor");
  tcase_add_test(tc, test_new_every_dtype);
  tcase_add_test(tc, test_alignment_many_sizes);
  tcase_add_test(tc, test_new_string_elements_empty);
  tcase_add_test(tc, test_zeros_every_dtype);
  tcase_add_test(tc, test_zeros_bad_shape);
  tcase_add_test(tc, test_from_data);
  tcase_add_test(tc, test_from_data_errors);
  tcase_add_test(tc, test_scalars_and_vectors);
  tcase_add_test(tc, test_zero_elements);
  tcase_add_test(tc, test_rejects_bad_shapes);
  tcase_add_test(tc, test_rejects_bad_dtypes);
  tcase_add_test(tc, test_allocator_failure);
  tcase_add_test(tc, test_cpu_out_of_memory);
  tcase_add_test(tc, test_custom_allocator_round_trip);
  tcase_add_test(tc, test_ref_unref);
  tcase_add_test(tc, test_view_shares_buffer);
  tcase_add_test(tc, test_view_errors);
  tcase_add_test(tc, test_strings_set);
  tcase_add_test(tc, test_strings_set_errors);
  tcase_add_test(tc, test_strings_view_and_free);
  tcase_add_test(tc, test_copy_numeric_is_deep);
  tcase_add_test(tc, test_copy_strings_is_deep);
  tcase_add_test(tc, test_equal);
  tcase_add_test(tc, test_equal_strings);
  tcase_add_test(tc, test_get_every_dtype);
  tcase_add_test(tc, test_get_indexing);
  tcase_add_test(tc, test_str);
  tcase_add_test(tc, test_str_truncation);
  tcase_add_test(tc, test_refcount_threads);
  tcase_add_test(tc, test_wrap_releases_once);
  tcase_add_test_raise_signal(tc, test_unref_below_zero_aborts, SIGABRT);
  suite_add_tcase(s, tc);
  return s;
}
