/* cpu_decode_test.c: DecodeRaw and DecodeRawExamples against references
 * written here. DecodeRaw: every out_type on random bytes in both byte
 * orders, each element compared with the bytes assembled by hand (complex64
 * swapped per float, bool normalised to 0/1); length errors. DecodeRawExamples:
 * every allowed (raw, out) pair on random values written in both byte
 * orders, against a float64 recomputation (float32 outputs within 1e-6
 * relative, others exact); a large batch (split across threads) equal to
 * DecodeRaw -> Cast -> Mul -> Reshape bit for bit; record length errors. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "test/unit/testutil.h"

static tf_tensor *strings(tf_shape s, int64_t len, uint8_t **bytes) {
  tf_tensor *t;
  tf_status st;
  ck_assert_int_eq(tf_tensor_new(TF_STRING, &s, &t, &st), TF_OK);
  *bytes = malloc((size_t)(t->n * len + 1));
  for (int64_t i = 0; i < t->n * len; i++) (*bytes)[i] = (uint8_t)tt_rand_u64();
  for (int64_t i = 0; i < t->n; i++) {
    tf_tensor_set_string(t, i, (char *)*bytes + i * len, (size_t)len, &st);
  }
  return t;
}

/* The host-order bytes of element j (size es) read from b in the given
 * byte order; complex64 swaps each float on its own. */
static void assemble(const uint8_t *b, size_t es, bool little, bool cplx,
                     uint8_t *out) {
  size_t unit = cplx ? es / 2 : es;
  for (size_t u = 0; u < es; u += unit) {
    for (size_t i = 0; i < unit; i++) {
      out[u + i] = little ? b[u + i] : b[u + unit - 1 - i];
    }
  }
}

START_TEST(test_decode_raw_all_types) {
  static const tf_dtype types[] = {TF_FLOAT16, TF_BFLOAT16, TF_FLOAT32, TF_FLOAT64,
                                   TF_INT8, TF_INT16, TF_INT32, TF_INT64, TF_UINT8,
                                   TF_UINT16, TF_UINT32, TF_UINT64, TF_COMPLEX64,
                                   TF_BOOL};
  for (size_t k = 0; k < TF_ARRAY_LEN(types); k++) {
    for (int little = 0; little < 2; little++) {
      tf_dtype dt = types[k];
      size_t es = tf_dtype_size(dt);
      int64_t per = 5;
      uint8_t *b;
      tf_tensor *in = strings(tf_shape_of(2, 3, 2), per * (int64_t)es, &b);
      tf_attr_kv a[2] = {{"out_type", tf_attr_type_v(dt)},
                         {"little_endian", tf_attr_bool(little)}};
      tf_tensor *out = tt_run1("DecodeRaw", &in, 1, a, 2);
      ck_assert_int_eq(out->dtype, dt);
      tt_assert_shape(out, 3, 3, 2, per);
      for (int64_t j = 0; j < out->n; j++) {
        uint8_t want[64]; /* es <= 16; gcc's vectoriser plans wider stores
                           * (-Wstringop-overflow with -march=native) */
        assemble(b + j * es, es, little == (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__),
                 dt == TF_COMPLEX64, want);
        if (dt == TF_BOOL) want[0] = b[j] != 0;
        ck_assert_msg(memcmp((uint8_t *)out->data + j * es, want, es) == 0,
                      "%s little=%d element %lld", tf_dtype_name(dt), little,
                      (long long)j);
      }
      tf_tensor_unref(out);
      tf_tensor_unref(in);
      free(b);
    }
  }
}
END_TEST

START_TEST(test_decode_raw_errors_and_empty) {
  tf_status st;
  tf_shape s2 = tf_shape_of(1, 2);
  tf_tensor *in;
  ck_assert_int_eq(tf_tensor_new(TF_STRING, &s2, &in, &st), TF_OK);
  tf_tensor_set_string(in, 0, "abcd", 4, &st);
  tf_tensor_set_string(in, 1, "abcdefgh", 8, &st);
  tf_attr_kv f = {"out_type", tf_attr_type_v(TF_FLOAT32)};
  const char *m = tt_run_fail("DecodeRaw", &in, 1, &f, 1, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(m, "element 1 has size 8 != 4"), "%s", m);
  tf_tensor_set_string(in, 1, "abc", 3, &st);
  tf_tensor_set_string(in, 0, "xyz", 3, &st);
  m = tt_run_fail("DecodeRaw", &in, 1, &f, 1, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(m, "length 3 that is not a multiple of 4, the size of float32"), "%s", m);
  tf_tensor_unref(in);
  /* no strings: [0, 0]; an empty string: [0] */
  tf_shape s0 = tf_shape_of(1, 0), sc = tf_shape_scalar();
  ck_assert_int_eq(tf_tensor_new(TF_STRING, &s0, &in, &st), TF_OK);
  tf_tensor *out = tt_run1("DecodeRaw", &in, 1, &f, 1);
  tt_assert_shape(out, 2, 0, 0);
  tf_tensor_unref(out);
  tf_tensor_unref(in);
  ck_assert_int_eq(tf_tensor_new(TF_STRING, &sc, &in, &st), TF_OK);
  out = tt_run1("DecodeRaw", &in, 1, &f, 1);
  tt_assert_shape(out, 1, 0);
  tf_tensor_unref(out);
  tf_tensor_unref(in);
}
END_TEST

/* ---- DecodeRawExamples --------------------------------------------------------- */

typedef struct rtype {
  tf_dtype dt;
  double lo, hi;
  bool is_float;
} rtype;

static const rtype raws[] = {
    {TF_UINT8, 0, 255, false},     {TF_INT8, -128, 127, false},
    {TF_UINT16, 0, 1000, false},   {TF_INT16, -1000, 1000, false},
    {TF_INT32, -1000, 1000, false}, {TF_INT64, -1000, 1000, false},
    {TF_FLOAT32, -50, 50, true},   {TF_FLOAT64, -50, 50, true}};
static const tf_dtype outs[] = {TF_FLOAT32, TF_FLOAT64, TF_INT32, TF_INT64};

/* Writes value v as dt in the given byte order at p. */
static void put_value(uint8_t *p, tf_dtype dt, double v, bool little) {
  uint8_t h[8];
  size_t es = tf_dtype_size(dt);
  switch (dt) {
  case TF_UINT8: h[0] = (uint8_t)v; break;
  case TF_INT8: { int8_t x = (int8_t)v; memcpy(h, &x, 1); break; }
  case TF_UINT16: { uint16_t x = (uint16_t)v; memcpy(h, &x, 2); break; }
  case TF_INT16: { int16_t x = (int16_t)v; memcpy(h, &x, 2); break; }
  case TF_INT32: { int32_t x = (int32_t)v; memcpy(h, &x, 4); break; }
  case TF_INT64: { int64_t x = (int64_t)v; memcpy(h, &x, 8); break; }
  case TF_FLOAT32: { float x = (float)v; memcpy(h, &x, 4); break; }
  default: memcpy(h, &v, 8); break;
  }
  bool host_little = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;
  for (size_t i = 0; i < es; i++) p[i] = little == host_little ? h[i] : h[es - 1 - i];
}

START_TEST(test_decode_examples_all_pairs) {
  int pairs = 0;
  for (size_t r = 0; r < TF_ARRAY_LEN(raws); r++) {
    for (size_t o = 0; o < TF_ARRAY_LEN(outs); o++) {
      bool out_float = outs[o] == TF_FLOAT32 || outs[o] == TF_FLOAT64;
      if (raws[r].is_float && !out_float) continue;
      pairs++;
      for (int little = 0; little < 2; little++) {
        double scale = out_float ? tt_rand_uniform(0.001, 3) : 1.0;
        size_t es = tf_dtype_size(raws[r].dt);
        enum { N = 4, E = 6 };
        double vals[N * E];
        uint8_t rec[E * 8];
        tf_shape vs = tf_shape_of(1, N);
        tf_tensor *in;
        tf_status st;
        ck_assert_int_eq(tf_tensor_new(TF_STRING, &vs, &in, &st), TF_OK);
        for (int i = 0; i < N; i++) {
          for (int j = 0; j < E; j++) {
            double v = tt_rand_uniform(raws[r].lo, raws[r].hi);
            v = raws[r].is_float ? (raws[r].dt == TF_FLOAT32 ? (double)(float)v : v)
                                 : floor(v);
            vals[i * E + j] = v;
            put_value(rec + j * es, raws[r].dt, v, little);
          }
          tf_tensor_set_string(in, i, (char *)rec, E * es, &st);
        }
        tf_attr_kv a[5] = {{"raw_type", tf_attr_type_v(raws[r].dt)},
                           {"out_type", tf_attr_type_v(outs[o])},
                           {"little_endian", tf_attr_bool(little)},
                           {"scale", tf_attr_float(scale)},
                           {"shape", tf_attr_shape(tf_shape_of(2, 2, 3))}};
        tf_tensor *out = tt_run1("DecodeRawExamples", &in, 1, a, 5);
        ck_assert_int_eq(out->dtype, outs[o]);
        tt_assert_shape(out, 3, N, 2, 3);
        for (int64_t k = 0; k < out->n; k++) {
          double want = vals[k] * scale, got = tf_tensor_get_f64(out, k);
          double tol = outs[o] == TF_FLOAT32 ? 1e-6 * fabs(want) + 1e-30
                       : outs[o] == TF_FLOAT64 ? 1e-15 * fabs(want) : 0;
          ck_assert_msg(fabs(got - want) <= tol, "%s->%s little=%d [%lld]: %.17g vs %.17g",
                        tf_dtype_name(raws[r].dt), tf_dtype_name(outs[o]), little,
                        (long long)k, got, want);
        }
        tf_tensor_unref(out);
        tf_tensor_unref(in);
      }
    }
  }
  ck_assert_int_eq(pairs, 28);
}
END_TEST

/* 3000 Fashion-MNIST-sized records (the parallel path) against the
 * four-op chain, bit for bit. */
START_TEST(test_decode_examples_matches_chain) {
  uint8_t *b;
  tf_tensor *in = strings(tf_shape_of(1, 3000), 784, &b);
  double scale = 1.0 / 255.0;
  tf_attr_kv a[4] = {{"raw_type", tf_attr_type_v(TF_UINT8)},
                     {"out_type", tf_attr_type_v(TF_FLOAT32)},
                     {"scale", tf_attr_float(scale)},
                     {"shape", tf_attr_shape(tf_shape_of(2, 28, 28))}};
  tf_tensor *fused = tt_run1("DecodeRawExamples", &in, 1, a, 4);
  tt_assert_shape(fused, 3, 3000, 28, 28);
  tf_attr_kv d = {"out_type", tf_attr_type_v(TF_UINT8)};
  tf_tensor *raw = tt_run1("DecodeRaw", &in, 1, &d, 1);
  tf_attr_kv c[2] = {{"SrcT", tf_attr_type_v(TF_UINT8)}, {"DstT", tf_attr_type_v(TF_FLOAT32)}};
  tf_tensor *f = tt_run1("Cast", &raw, 1, c, 2);
  tf_tensor *xy[2] = {f, tf_tensor_scalar_f32((float)scale)};
  tf_tensor *m = tt_run1("Mul", xy, 2, NULL, 0);
  tf_tensor *rs[2] = {m, tf_tensor_vec_i64(3, (int64_t[]){-1, 28, 28})};
  tf_tensor *chain = tt_run1("Reshape", rs, 2, NULL, 0);
  tt_assert_close(fused, chain, 0, 0);
  int64_t bad = 0; /* one assertion: Check logs every passing one */
  for (int64_t i = 0; i < fused->n; i++) {
    bad += ((float *)fused->data)[i] != (float)b[i] * (float)scale;
  }
  ck_assert_int_eq(bad, 0);
  tf_tensor *all[] = {fused, raw, f, xy[1], m, rs[1], chain, in};
  tt_free(all, (int)TF_ARRAY_LEN(all));
  free(b);
}
END_TEST

START_TEST(test_decode_examples_errors) {
  tf_status st;
  tf_shape s = tf_shape_of(1, 2);
  tf_tensor *in;
  ck_assert_int_eq(tf_tensor_new(TF_STRING, &s, &in, &st), TF_OK);
  tf_tensor_set_string(in, 0, "abcdef", 6, &st);
  tf_tensor_set_string(in, 1, "abcde", 5, &st);
  tf_attr_kv a[3] = {{"raw_type", tf_attr_type_v(TF_UINT8)},
                     {"out_type", tf_attr_type_v(TF_INT32)},
                     {"shape", tf_attr_shape(tf_shape_of(2, 2, 3))}};
  const char *m = tt_run_fail("DecodeRawExamples", &in, 1, a, 3, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(m, "record 1 has 5 bytes, but an example of shape [2,3] needs 6"), "%s", m);
  tf_tensor_set_string(in, 1, "abcdef", 6, &st);
  a[0].value = tf_attr_type_v(TF_INT16); /* 6 elements of 2 bytes: 12 */
  m = tt_run_fail("DecodeRawExamples", &in, 1, a, 3, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(m, "record 0 has 6 bytes") && strstr(m, "needs 12"), "%s", m);
  tf_tensor_unref(in);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_decode");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_decode_raw_all_types);
  tcase_add_test(tc, test_decode_raw_errors_and_empty);
  tcase_add_test(tc, test_decode_examples_all_pairs);
  tcase_add_test(tc, test_decode_examples_matches_chain);
  tcase_add_test(tc, test_decode_examples_errors);
  suite_add_tcase(s, tc);
  return s;
}
