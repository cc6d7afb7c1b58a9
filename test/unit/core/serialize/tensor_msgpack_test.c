/* Tests for the tensor msgpack codec and the bounded msgpack walk: round
 * trips of every dtype (strings, empty and rank-0 tensors included), the
 * exact bytes of the documented layout, and hostile input (truncation at
 * every offset, seeded byte flips, wrong types in every field, huge
 * declared sizes, deep nesting), each rejected with INVALID_ARGUMENT or
 * DATA_LOSS. Comparisons are exact (bitwise). */
#include <msgpack.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/serialize/tensor_msgpack.h"
#include "test/unit/core/serialize/serialize_testlib.h"

static tf_tensor *round_trip(const tf_tensor *t) {
  void *buf;
  size_t len;
  tf_status st;
  tf_tensor *back;
  ck_assert_msg(tf_tensor_to_msgpack(t, &buf, &len, &st) == TF_OK, "%s",
                st.msg);
  ck_assert_msg(tf_tensor_from_msgpack(buf, len, &back, &st) == TF_OK, "%s",
                st.msg);
  free(buf);
  return back;
}

START_TEST(test_round_trip_every_dtype) {
  for (int rep = 0; rep < 20; rep++) {
    for (int k = 0; k < ST_N_DTYPES; k++) {
      tf_shape shape = rep == 0   ? tf_shape_scalar()
                       : rep == 1 ? tf_shape_of(2, 3, 0)
                                  : st_rand_shape();
      tf_tensor *t = st_rand_tensor(st_all_dtypes[k], shape, true);
      tf_tensor *back = round_trip(t);
      char a[128], b[128];
      ck_assert_msg(tf_tensor_equal(t, back), "%s vs %s (seed %llu)",
                    tf_tensor_str(t, a, sizeof a),
                    tf_tensor_str(back, b, sizeof b),
                    (unsigned long long)tt_seed());
      tf_tensor_unref(t);
      tf_tensor_unref(back);
    }
  }
}
END_TEST

START_TEST(test_strings_with_nul_and_empty) {
  tf_tensor *t;
  tf_status st;
  tf_shape s = tf_shape_of(1, 3);
  ck_assert(tf_tensor_new(TF_STRING, &s, &t, &st) == TF_OK);
  ck_assert(tf_tensor_set_string(t, 0, "a\0b", 3, &st) == TF_OK);
  ck_assert(tf_tensor_set_string(t, 2, "\xff\xfe", 2, &st) == TF_OK);
  tf_tensor *back = round_trip(t);
  ck_assert(tf_tensor_equal(t, back));
  ck_assert_int_eq(tf_tensor_strings(back)[0].len, 3);
  ck_assert_int_eq(tf_tensor_strings(back)[1].len, 0);
  tf_tensor_unref(t);
  tf_tensor_unref(back);
}
END_TEST

/* The documented layout, byte for byte: map {"dtype": 1, "shape": [2],
 * "data": bin(8)}. */
START_TEST(test_exact_layout) {
  tf_tensor *t = tf_tensor_vec_f32(2, (float[]){1.0f, -2.0f});
  void *buf;
  size_t len;
  tf_status st;
  ck_assert(tf_tensor_to_msgpack(t, &buf, &len, &st) == TF_OK);
  static const unsigned char expect[] = {
      0x83, 0xa5, 'd', 't', 'y', 'p', 'e', 0x01, 0xa5, 's', 'h', 'a', 'p',
      'e', 0x91, 0x02, 0xa4, 'd', 'a', 't', 'a', 0xc4, 0x08, 0x00, 0x00,
      0x80, 0x3f, 0x00, 0x00, 0x00, 0xc0};
  ck_assert_uint_eq(len, sizeof expect);
  ck_assert(memcmp(buf, expect, len) == 0);
  free(buf);
  tf_tensor_unref(t);
}
END_TEST

/* Tensors inside a larger message through the msgpack-level helpers. */
START_TEST(test_pack_unpack_helpers_in_array) {
  msgpack_sbuffer sb;
  msgpack_packer pk;
  tf_status st;
  msgpack_sbuffer_init(&sb);
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  tf_tensor *a = tf_tensor_scalar_i32(7);
  tf_tensor *b = st_string_tensor(tf_shape_of(1, 2), (const char *[]){"x", "yz"});
  msgpack_pack_array(&pk, 3);
  ck_assert(tf__pack_tensor(&pk, a, &st) == TF_OK);
  msgpack_pack_str_with_body(&pk, "mid", 3);
  ck_assert(tf__pack_tensor(&pk, b, &st) == TF_OK);
  msgpack_unpacked res;
  ck_assert(tf__msgpack_unpack(sb.data, sb.size, TF_MSGPACK_MAX_DEPTH, &res,
                               &st) == TF_OK);
  ck_assert_int_eq(res.data.type, MSGPACK_OBJECT_ARRAY);
  tf_tensor *a2, *b2;
  ck_assert(tf__unpack_tensor(&res.data.via.array.ptr[0], &a2, &st) == TF_OK);
  ck_assert(tf__unpack_tensor(&res.data.via.array.ptr[2], &b2, &st) == TF_OK);
  ck_assert(tf_tensor_equal(a, a2) && tf_tensor_equal(b, b2));
  tf_tensor *bad = (tf_tensor *)1;
  ck_assert(tf__unpack_tensor(&res.data.via.array.ptr[1], &bad, &st) ==
            TF_INVALID_ARGUMENT);
  ck_assert_ptr_null(bad);
  ck_assert_ptr_nonnull(strstr(st.msg, "expected a map, got str"));
  msgpack_unpacked_destroy(&res);
  msgpack_sbuffer_destroy(&sb);
  tf_tensor_unref(a);
  tf_tensor_unref(b);
  tf_tensor_unref(a2);
  tf_tensor_unref(b2);
}
END_TEST

START_TEST(test_truncated_at_every_offset) {
  tf_tensor *ts[] = {tf_tensor_vec_f32(3, (float[]){1, 2, 3}),
                     st_string_tensor(tf_shape_of(2, 2, 1),
                                      (const char *[]){"abc", ""})};
  for (int k = 0; k < 2; k++) {
    void *buf;
    size_t len;
    tf_status st;
    ck_assert(tf_tensor_to_msgpack(ts[k], &buf, &len, &st) == TF_OK);
    for (size_t cut = 0; cut < len; cut++) {
      char *copy = malloc(cut ? cut : 1); /* exact size: ASan sees overreads */
      memcpy(copy, buf, cut);
      tf_tensor *out = (tf_tensor *)1;
      tf_code c = tf_tensor_from_msgpack(copy, cut, &out, &st);
      ck_assert_msg(c == TF_DATA_LOSS, "cut %zu: %s %s", cut, tf_code_name(c),
                    st.msg);
      ck_assert_ptr_null(out);
      free(copy);
    }
    free(buf);
    tf_tensor_unref(ts[k]);
  }
}
END_TEST

START_TEST(test_random_byte_flips) {
  int rejected = 0, accepted = 0;
  for (int it = 0; it < 4000; it++) {
    tf_dtype dt = st_all_dtypes[it % ST_N_DTYPES];
    tf_tensor *t = st_rand_tensor(dt, st_rand_shape(), true);
    void *buf;
    size_t len;
    tf_status st;
    ck_assert(tf_tensor_to_msgpack(t, &buf, &len, &st) == TF_OK);
    int flips = 1 + (int)(tt_rand_u64() % 3);
    for (int f = 0; f < flips; f++) {
      ((unsigned char *)buf)[tt_rand_u64() % len] ^=
          (unsigned char)(1u << (tt_rand_u64() % 8));
    }
    tf_tensor *out;
    tf_code c = tf_tensor_from_msgpack(buf, len, &out, &st);
    if (c == TF_OK) {
      ck_assert(tf_dtype_is_valid(out->dtype));
      accepted++;
      tf_tensor_unref(out);
    } else {
      st_assert_rejected(c, st);
      ck_assert_ptr_null(out);
      rejected++;
    }
    free(buf);
    tf_tensor_unref(t);
  }
  ck_assert_int_gt(rejected, 100); /* flips in headers and keys do fail */
  ck_assert_int_gt(accepted, 100); /* flips in data bytes do not */
}
END_TEST

/* Packs a tensor map whose fields are written by the callback. */
typedef void (*field_fn)(msgpack_packer *pk, int variant);

static tf_code decode_packed(field_fn fn, int variant, tf_status *st) {
  msgpack_sbuffer sb;
  msgpack_packer pk;
  msgpack_sbuffer_init(&sb);
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  fn(&pk, variant);
  tf_tensor *out = (tf_tensor *)1;
  tf_code c = tf_tensor_from_msgpack(sb.data, sb.size, &out, st);
  if (c == TF_OK) {
    tf_tensor_unref(out);
  } else {
    ck_assert_ptr_null(out);
  }
  msgpack_sbuffer_destroy(&sb);
  return c;
}

static void key(msgpack_packer *pk, const char *k) {
  msgpack_pack_str_with_body(pk, k, strlen(k));
}

/* variant selects which field is broken (0: none). */
static void bad_fields(msgpack_packer *pk, int v) {
  static const float data[2] = {1, 2};
  int nkeys = v == 20 ? 2 : v == 21 ? 4 : 3;
  msgpack_pack_map(pk, (size_t)nkeys);
  key(pk, v == 22 ? "dtypo" : "dtype");
  switch (v) {
  case 1: key(pk, "float32"); break;
  case 2: msgpack_pack_int(pk, -1); break;
  case 3: msgpack_pack_int(pk, 0); break;
  case 4: msgpack_pack_int(pk, 11); break; /* not a TF dtype number */
  case 5: msgpack_pack_uint64(pk, UINT64_MAX); break;
  case 6: msgpack_pack_double(pk, 1.0); break;
  default: msgpack_pack_int(pk, v >= 30 ? TF_STRING : TF_FLOAT32); break;
  }
  key(pk, "shape");
  switch (v) {
  case 7: msgpack_pack_map(pk, 0); break;
  case 8:
    msgpack_pack_array(pk, 9);
    for (int i = 0; i < 9; i++) msgpack_pack_int(pk, 1);
    break;
  case 9: msgpack_pack_array(pk, 1); msgpack_pack_int(pk, -2); break;
  case 10: msgpack_pack_array(pk, 1); key(pk, "2"); break;
  case 11: msgpack_pack_array(pk, 1); msgpack_pack_uint64(pk, UINT64_MAX); break;
  case 12: /* 2^40 * 2^40 elements overflow int64 */
    msgpack_pack_array(pk, 2);
    msgpack_pack_int64(pk, 1ll << 40);
    msgpack_pack_int64(pk, 1ll << 40);
    break;
  case 13: /* 2^31 * 2^31 * 4 bytes: the check must refuse before allocating */
    msgpack_pack_array(pk, 2);
    msgpack_pack_int64(pk, 1ll << 31);
    msgpack_pack_int64(pk, 1ll << 29);
    break;
  default: msgpack_pack_array(pk, 1); msgpack_pack_int(pk, 2); break;
  }
  if (v == 20) {
    return; /* "data" missing */
  }
  key(pk, "data");
  if (v >= 30) { /* string tensors of shape [2] */
    if (v == 30) {
      msgpack_pack_bin_with_body(pk, "ab", 2);
    } else {
      msgpack_pack_array(pk, v == 31 ? 3 : 2);
      msgpack_pack_bin_with_body(pk, "a", 1);
      if (v == 32) {
        msgpack_pack_int(pk, 5);
      } else {
        msgpack_pack_bin_with_body(pk, "b", 1);
      }
      if (v == 31) msgpack_pack_bin_with_body(pk, "c", 1);
    }
  } else if (v == 14) {
    msgpack_pack_array(pk, 0);
  } else if (v == 15) {
    msgpack_pack_bin_with_body(pk, data, 7);
  } else if (v == 16) {
    msgpack_pack_str_with_body(pk, (const char *)data, 8);
  } else {
    msgpack_pack_bin_with_body(pk, data, 8);
  }
  if (v == 21) {
    key(pk, "data"); /* repeated key */
    msgpack_pack_nil(pk);
  }
}

START_TEST(test_wrong_types_in_every_field) {
  tf_status st;
  ck_assert_int_eq(decode_packed(bad_fields, 0, &st), TF_OK);
  const int variants[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13,
                          14, 15, 16, 20, 21, 22, 30, 31, 32};
  const char *expect[] = {"dtype", "dtype", "dtype", "dtype", "dtype",
                          "dtype", "shape", "rank 9", "dim 0", "dim 0",
                          "dim 0", "int64", "data", "data", "7 bytes",
                          "data", "missing field 'data'", "repeated",
                          "unknown", "data", "3 strings", "string 1"};
  for (size_t i = 0; i < sizeof variants / sizeof *variants; i++) {
    tf_code c = decode_packed(bad_fields, variants[i], &st);
    ck_assert_msg(c == TF_INVALID_ARGUMENT, "variant %d: %s %s", variants[i],
                  tf_code_name(c), st.msg);
    ck_assert_msg(strstr(st.msg, expect[i]) != NULL,
                  "variant %d: '%s' lacks '%s'", variants[i], st.msg,
                  expect[i]);
  }
  /* A string tensor (v 30..32 default path is valid when well formed). */
  ck_assert_int_eq(decode_packed(bad_fields, 33, &st), TF_OK);
}
END_TEST

START_TEST(test_bool_bytes_must_be_0_or_1) {
  tf_tensor *t = tf_tensor_scalar_bool(true);
  void *buf;
  size_t len;
  tf_status st;
  ck_assert(tf_tensor_to_msgpack(t, &buf, &len, &st) == TF_OK);
  ((unsigned char *)buf)[len - 1] = 2;
  tf_tensor *out;
  ck_assert_int_eq(tf_tensor_from_msgpack(buf, len, &out, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "bool"));
  free(buf);
  tf_tensor_unref(t);
}
END_TEST

/* Headers declaring far more than the input holds are refused by the walk
 * before msgpack-c allocates anything for them. */
START_TEST(test_huge_declared_sizes) {
  static const unsigned char cases[][6] = {
      {0xdd, 0xff, 0xff, 0xff, 0xff, 0x00}, /* array32 of 2^32-1 */
      {0xdf, 0xff, 0xff, 0xff, 0xff, 0x00}, /* map32 of 2^32-1 */
      {0xc6, 0xff, 0xff, 0xff, 0xff, 0x00}, /* bin32 of 4 GiB */
      {0xdb, 0x7f, 0xff, 0xff, 0xff, 0x00}, /* str32 of 2 GiB */
      {0xc9, 0xff, 0xff, 0xff, 0xff, 0x01}, /* ext32 */
      {0xdc, 0xff, 0xff, 0x00, 0x00, 0x00}, /* array16 of 65535 */
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    tf_status st;
    tf_tensor *out;
    ck_assert_int_eq(tf_tensor_from_msgpack(cases[i], 6, &out, &st),
                     TF_DATA_LOSS);
    ck_assert_ptr_nonnull(strstr(st.msg, "offset"));
  }
  /* A map nested inside the declared-huge array. */
  unsigned char nested[] = {0x81, 0xa1, 'a', 0xdd, 0x10, 0x00, 0x00, 0x00,
                            0x90};
  tf_status st;
  tf_tensor *out;
  ck_assert_int_eq(tf_tensor_from_msgpack(nested, sizeof nested, &out, &st),
                   TF_DATA_LOSS);
  ck_assert_ptr_nonnull(strstr(st.msg, "offset 3"));
}
END_TEST

START_TEST(test_depth_reserved_byte_and_trailing) {
  unsigned char deep[200];
  memset(deep, 0x91, sizeof deep); /* [[[[...]]]] */
  deep[sizeof deep - 1] = 0x00;
  tf_status st;
  tf_tensor *out;
  ck_assert_int_eq(tf_tensor_from_msgpack(deep, sizeof deep, &out, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "nesting"));
  unsigned char reserved[] = {0x91, 0xc1};
  ck_assert_int_eq(tf_tensor_from_msgpack(reserved, 2, &out, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "0xc1"));
  tf_tensor *t = tf_tensor_scalar_f64(2.5);
  void *buf;
  size_t len;
  ck_assert(tf_tensor_to_msgpack(t, &buf, &len, &st) == TF_OK);
  buf = realloc(buf, len + 1);
  ((unsigned char *)buf)[len] = 0xc0;
  ck_assert_int_eq(tf_tensor_from_msgpack(buf, len + 1, &out, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "trailing"));
  ck_assert_int_eq(tf_tensor_from_msgpack(buf, 0, &out, &st), TF_DATA_LOSS);
  unsigned char nil = 0xc0;
  ck_assert_int_eq(tf_tensor_from_msgpack(&nil, 1, &out, &st),
                   TF_INVALID_ARGUMENT);
  free(buf);
  tf_tensor_unref(t);
}
END_TEST

/* The walk agrees with msgpack-c on where objects end, for every kind of
 * object msgpack-c packs. */
START_TEST(test_walk_matches_msgpack_c) {
  msgpack_sbuffer sb;
  msgpack_packer pk;
  msgpack_sbuffer_init(&sb);
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_array(&pk, 24);
  msgpack_pack_nil(&pk);
  msgpack_pack_true(&pk);
  msgpack_pack_int8(&pk, -100);
  msgpack_pack_int16(&pk, -1000);
  msgpack_pack_int32(&pk, -100000);
  msgpack_pack_int64(&pk, INT64_MIN);
  msgpack_pack_uint8(&pk, 200);
  msgpack_pack_uint16(&pk, 60000);
  msgpack_pack_uint32(&pk, 4000000000u);
  msgpack_pack_uint64(&pk, UINT64_MAX);
  msgpack_pack_float(&pk, 1.5f);
  msgpack_pack_double(&pk, 2.5);
  char big[70000];
  memset(big, 'x', sizeof big);
  msgpack_pack_str_with_body(&pk, big, 31);
  msgpack_pack_str_with_body(&pk, big, 200);
  msgpack_pack_str_with_body(&pk, big, 300);
  msgpack_pack_str_with_body(&pk, big, sizeof big);
  msgpack_pack_bin_with_body(&pk, big, 10);
  msgpack_pack_bin_with_body(&pk, big, 1000);
  msgpack_pack_bin_with_body(&pk, big, sizeof big);
  msgpack_pack_ext_with_body(&pk, big, 1, 5);
  msgpack_pack_ext_with_body(&pk, big, 16, 5);
  msgpack_pack_ext_with_body(&pk, big, 17, 5);
  msgpack_pack_map(&pk, 20);
  for (int i = 0; i < 20; i++) {
    msgpack_pack_int(&pk, i);
    msgpack_pack_array(&pk, 0);
  }
  msgpack_pack_array(&pk, 70000);
  for (int i = 0; i < 70000; i++) {
    msgpack_pack_int(&pk, -1);
  }
  size_t end = 0;
  tf_status st;
  ck_assert_msg(tf__msgpack_check(sb.data, sb.size, 4, &end, &st) == TF_OK,
                "%s", st.msg);
  ck_assert_uint_eq(end, sb.size);
  msgpack_unpacked res;
  ck_assert(tf__msgpack_unpack(sb.data, sb.size, 4, &res, &st) == TF_OK);
  ck_assert_uint_eq(res.data.via.array.size, 24);
  msgpack_unpacked_destroy(&res);
  ck_assert_int_eq(tf__msgpack_check(sb.data, sb.size, 1, &end, &st),
                   TF_INVALID_ARGUMENT);
  msgpack_sbuffer_destroy(&sb);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("tensor_msgpack");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_round_trip_every_dtype);
  tcase_add_test(tc, test_strings_with_nul_and_empty);
  tcase_add_test(tc, test_exact_layout);
  tcase_add_test(tc, test_pack_unpack_helpers_in_array);
  tcase_add_test(tc, test_truncated_at_every_offset);
  tcase_add_test(tc, test_random_byte_flips);
  tcase_add_test(tc, test_wrong_types_in_every_field);
  tcase_add_test(tc, test_bool_bytes_must_be_0_or_1);
  tcase_add_test(tc, test_huge_declared_sizes);
  tcase_add_test(tc, test_depth_reserved_byte_and_trailing);
  tcase_add_test(tc, test_walk_matches_msgpack_c);
  suite_add_tcase(s, tc);
  return s;
}
