/* Tests for the wire envelope: round trips of every dtype (strings, rank-0
 * and 0-element tensors included) with payloads at 64-byte aligned
 * offsets, header fields of requests and replies, error replies, the exact
 * prefix bytes, offset arithmetic past 4 GiB (descriptors of fake huge
 * tensors), and hostile input: every documented parse error, bad
 * descriptors, truncation at every length and seeded byte flips, which
 * must fail cleanly or parse (run under ASan to catch overreads); and the
 * exact bytes of a request and an error reply, which must never change. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/transport/wire.h"
#include "test/unit/testutil.h"

static const tf_dtype all_dtypes[] = {
    TF_FLOAT32, TF_FLOAT64, TF_INT32,    TF_UINT8,  TF_INT16,
    TF_INT8,    TF_STRING,  TF_COMPLEX64, TF_INT64, TF_BOOL,
    TF_BFLOAT16, TF_UINT16, TF_FLOAT16,  TF_UINT32, TF_UINT64};
#define N_DTYPES ((int)(sizeof all_dtypes / sizeof all_dtypes[0]))

/* A tensor of dt with random bytes (bool 0/1, strings of random bytes). */
static tf_tensor *rand_tensor(tf_dtype dt, tf_shape shape) {
  tf_tensor *t;
  tf_status st;
  ck_assert_msg(tf_tensor_new(dt, &shape, &t, &st) == TF_OK, "%s", st.msg);
  for (int64_t i = 0; i < t->n; i++) {
    if (dt == TF_STRING) {
      char buf[40];
      size_t len = tt_rand_u64() % sizeof buf;
      for (size_t k = 0; k < len; k++) {
        buf[k] = (char)tt_rand_u64();
      }
      ck_assert(tf_tensor_set_string(t, i, buf, len, &st) == TF_OK);
    } else if (dt == TF_BOOL) {
      ((uint8_t *)t->data)[i] = tt_rand_u64() & 1;
    }
  }
  if (dt != TF_STRING && dt != TF_BOOL) {
    for (size_t k = 0; k < t->nbytes; k++) {
      ((uint8_t *)t->data)[k] = (uint8_t)tt_rand_u64();
    }
  }
  return t;
}

static tf_shape rand_shape(void) {
  int rank = (int)(tt_rand_u64() % 4);
  tf_shape s = {.rank = rank};
  for (int i = 0; i < rank; i++) {
    s.dims[i] = (int64_t)(tt_rand_u64() % 6);
  }
  return s;
}

/* Bitwise equality (NaN payloads included). */
static void assert_same(const tf_tensor *a, const tf_tensor *b) {
  ck_assert_int_eq(a->dtype, b->dtype);
  ck_assert(tf_shape_equal(&a->shape, &b->shape));
  if (a->dtype == TF_STRING) {
    ck_assert(tf_tensor_equal(a, b));
  } else {
    ck_assert_int_eq(a->nbytes, b->nbytes);
    ck_assert(memcmp(a->data, b->data, a->nbytes) == 0);
  }
}

static tf_wire_header req_header(int method) {
  return (tf_wire_header){.version = TF_WIRE_VERSION, .method = method,
                          .request_id = 0xfedcba9876543210ull,
                          .session = 7, .step_id = 1ull << 40,
                          .deadline_ms = 1500,
                          .from = "/job:master/replica:0/task:0",
                          .from_inc = 0x0102030405060708ull,
                          .to = "/job:worker/replica:0/task:1", .to_inc = 9};
}

/* Builds a message whose body is [tensors...]. */
static nng_msg *tensors_msg(tf_tensor **t, int n) {
  tf_wire_header h = req_header(TF_M_RUN_GRAPH);
  tf_wire_writer *w = tf_wire_writer_new(&h);
  msgpack_pack_array(tf_wire_body(w), (size_t)n);
  for (int i = 0; i < n; i++) {
    tf_wire_pack_tensor(w, t[i]);
  }
  nng_msg *m;
  tf_status st;
  ck_assert_msg(tf_wire_finish(w, &m, &st) == TF_OK, "%s", st.msg);
  return m;
}

static tf_wire_msg *parse_ok(nng_msg *m) {
  tf_wire_msg *r;
  tf_status st;
  ck_assert_msg(tf_wire_parse(m, &r, &st) == TF_OK, "%s", st.msg);
  return r;
}

START_TEST(test_round_trip_every_dtype) {
  tt_rng_reseed(tt_seed() ^ 1);
  for (int rep = 0; rep < 12; rep++) {
    tf_tensor *t[N_DTYPES];
    for (int k = 0; k < N_DTYPES; k++) {
      tf_shape s = rep == 0   ? tf_shape_scalar()
                   : rep == 1 ? tf_shape_of(2, 3, 0)
                              : rand_shape();
      t[k] = rand_tensor(all_dtypes[k], s);
    }
    tf_wire_msg *r = parse_ok(tensors_msg(t, N_DTYPES));
    ck_assert_int_eq(r->payload_start % 64, 0);
    ck_assert_int_eq(r->body.type, MSGPACK_OBJECT_ARRAY);
    ck_assert_int_eq(r->body.via.array.size, N_DTYPES);
    for (int k = 0; k < N_DTYPES; k++) {
      const msgpack_object *d = &r->body.via.array.ptr[k];
      if (all_dtypes[k] != TF_STRING) {
        const msgpack_object *off = tf_wire_get(d, "off");
        ck_assert(off != NULL && off->via.u64 % 64 == 0);
      }
      tf_tensor *back;
      tf_status st;
      ck_assert_msg(tf_wire_unpack_tensor(r, d, &back, &st) == TF_OK, "%s",
                    st.msg);
      assert_same(t[k], back);
      tf_tensor_unref(back);
      tf_tensor_unref(t[k]);
    }
    tf_wire_msg_free(r);
  }
}
END_TEST

START_TEST(test_payloads_follow_aligned_and_padded) {
  tf_tensor *t[] = {tf_tensor_vec_f32(3, (float[]){1, 2, 3}),
                    tf_tensor_vec_i64(1, (int64_t[]){-5})};
  nng_msg *m = tensors_msg(t, 2);
  const uint8_t *b = nng_msg_body(m);
  size_t len = nng_msg_len(m);
  ck_assert(memcmp(b, "TFW\x01", 4) == 0);
  uint32_t n = (uint32_t)b[4] | (uint32_t)b[5] << 8 | (uint32_t)b[6] << 16 |
               (uint32_t)b[7] << 24;
  ck_assert_int_eq(b[8], 0x92); /* [header, body] */
  size_t area = (8 + n + 63) / 64 * 64;
  for (size_t i = 8 + n; i < area; i++) {
    ck_assert_int_eq(b[i], 0);
  }
  ck_assert_int_eq(len, area + 64 + 8);
  ck_assert(memcmp(b + area, t[0]->data, 12) == 0);
  for (size_t i = area + 12; i < area + 64; i++) {
    ck_assert_int_eq(b[i], 0);
  }
  ck_assert(memcmp(b + area + 64, t[1]->data, 8) == 0);
  nng_msg_free(m);
  tt_free(t, 2);
}
END_TEST

START_TEST(test_header_fields_and_nil_body) {
  tf_wire_header h = req_header(TF_M_TENSOR_PUSH);
  h.deadline_ms = -3;
  nng_msg *m;
  tf_status st;
  ck_assert(tf_wire_finish(tf_wire_writer_new(&h), &m, &st) == TF_OK);
  ck_assert_int_eq(tf__wire_method_of(m), TF_M_TENSOR_PUSH);
  tf_wire_msg *r = parse_ok(m);
  ck_assert_int_eq(r->h.version, TF_WIRE_VERSION);
  ck_assert_int_eq(r->h.method, TF_M_TENSOR_PUSH);
  ck_assert(r->h.request_id == 0xfedcba9876543210ull);
  ck_assert(r->h.session == 7 && r->h.step_id == 1ull << 40);
  ck_assert_int_eq(r->h.deadline_ms, -3);
  ck_assert(!r->h.is_reply);
  ck_assert_int_eq(r->h.code, 0);
  ck_assert_str_eq(r->h.error, "");
  ck_assert_str_eq(r->h.from, "/job:master/replica:0/task:0");
  ck_assert(r->h.from_inc == 0x0102030405060708ull);
  ck_assert_str_eq(r->h.to, "/job:worker/replica:0/task:1");
  ck_assert(r->h.to_inc == 9);
  ck_assert_int_eq(r->body.type, MSGPACK_OBJECT_NIL);
  ck_assert_int_eq(r->payload_start, nng_msg_len(r->msg));
  tf_wire_msg_free(r);
  /* Without identity (a client): empty names and zero incarnations. */
  h.from = h.to = NULL;
  h.from_inc = h.to_inc = 0;
  ck_assert(tf_wire_finish(tf_wire_writer_new(&h), &m, &st) == TF_OK);
  r = parse_ok(m);
  ck_assert_str_eq(r->h.from, "");
  ck_assert_str_eq(r->h.to, "");
  ck_assert(r->h.from_inc == 0 && r->h.to_inc == 0);
  tf_wire_msg_free(r);
}
END_TEST

START_TEST(test_error_reply_keeps_code_message_and_ids) {
  tf_wire_header h = req_header(TF_M_RUN_STEP);
  tf_status bad, st;
  tf_status_set(&bad, TF_FAILED_PRECONDITION, "variable 'w' \"uninit\"");
  nng_msg *m;
  ck_assert(tf_wire_error_reply(&h, &bad, &m, &st) == TF_OK);
  tf_wire_msg *r = parse_ok(m);
  ck_assert(r->h.is_reply);
  ck_assert_int_eq(r->h.code, TF_FAILED_PRECONDITION);
  ck_assert_str_eq(r->h.error, "variable 'w' \"uninit\"");
  ck_assert_int_eq(r->h.method, TF_M_RUN_STEP);
  ck_assert(r->h.request_id == h.request_id && r->h.step_id == h.step_id);
  tf_wire_msg_free(r);
  ck_assert(tf_wire_error_reply(NULL, &bad, &m, &st) == TF_OK);
  r = parse_ok(m);
  ck_assert_int_eq(r->h.method, 0);
  ck_assert(r->h.request_id == 0);
  tf_wire_msg_free(r);
}
END_TEST

START_TEST(test_method_names) {
  ck_assert_str_eq(tf_method_name(TF_M_RUN_GRAPH), "RunGraph");
  ck_assert_str_eq(tf_method_name(TF_M_TENSOR_PUSH), "TensorPush");
  ck_assert_str_eq(tf_method_name(TF_M_CLUSTER_STATUS), "ClusterStatus");
  ck_assert_str_eq(tf_method_name(TF_M_GET_STATUS), "GetStatus");
  ck_assert_str_eq(tf_method_name(TF_M_JOB_CHECKPOINTS), "JobCheckpoints");
  ck_assert_str_eq(tf_method_name(99), "unknown");
  ck_assert_str_eq(tf_method_name(-1), "unknown");
}
END_TEST

/* ---- hostile input -------------------------------------------------------- */

static nng_msg *raw_msg(const void *p, size_t n) {
  nng_msg *m;
  ck_assert(nng_msg_alloc(&m, n) == 0);
  memcpy(nng_msg_body(m), p, n);
  return m;
}

/* A message of prefix + msgpack bytes mp + extra payload bytes. */
static nng_msg *framed(const msgpack_sbuffer *mp, size_t extra) {
  size_t area = (8 + mp->size + 63) / 64 * 64;
  size_t len = extra ? area + extra : 8 + mp->size;
  uint8_t *b = calloc(1, len);
  memcpy(b, "TFW\x01", 4);
  for (int i = 0; i < 4; i++) {
    b[4 + i] = (uint8_t)(mp->size >> (8 * i));
  }
  memcpy(b + 8, mp->data, mp->size);
  nng_msg *m = raw_msg(b, len);
  free(b);
  return m;
}

static void expect_parse_error(nng_msg *m, const char *want) {
  tf_wire_msg *r = (tf_wire_msg *)1;
  tf_status st;
  ck_assert_int_eq(tf_wire_parse(m, &r, &st), TF_INVALID_ARGUMENT);
  ck_assert(r == NULL);
  ck_assert_msg(strstr(st.msg, want) != NULL, "'%s' lacks '%s'", st.msg,
                want);
}

/* Packs a header map from alternating key / value-kind pairs. */
static nng_msg *header_msg(int n_fields, const char *const *keys,
                           const int64_t *vals) {
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_array(&pk, 2);
  msgpack_pack_map(&pk, (size_t)n_fields);
  for (int i = 0; i < n_fields; i++) {
    msgpack_pack_str_with_body(&pk, keys[i], strlen(keys[i]));
    if (vals[i] == INT64_MIN) {
      msgpack_pack_str_with_body(&pk, "x", 1);
    } else {
      msgpack_pack_int64(&pk, vals[i]);
    }
  }
  msgpack_pack_nil(&pk);
  nng_msg *m = framed(&sb, 0);
  msgpack_sbuffer_destroy(&sb);
  return m;
}

START_TEST(test_parse_errors_name_the_problem) {
  expect_parse_error(raw_msg("TFW", 3), "message too short (3 bytes)");
  expect_parse_error(raw_msg("XFW\x01\0\0\0\0", 8), "bad magic");
  expect_parse_error(raw_msg("TFW\x02\0\0\0\0", 8),
                     "unsupported wire version 2");
  expect_parse_error(raw_msg("TFW\x01\x05\0\0\0\x90", 9),
                     "msgpack part of 5 bytes overruns the 9-byte message");
  expect_parse_error(raw_msg("TFW\x01\x02\0\0\0\xc0\xc0", 10),
                     "bytes after the msgpack object");
  expect_parse_error(raw_msg("TFW\x01\x01\0\0\0\xc0", 9),
                     "not [header, body]");
  expect_parse_error(raw_msg("TFW\x01\x03\0\0\0\x92\x01\xc0", 11),
                     "header is a int, not a map");
  expect_parse_error(raw_msg("TFW\x01\x02\0\0\0\x92\x80", 10),
                     "message: msgpack: container at offset 0 declares 2");
  expect_parse_error(raw_msg("TFW\x01\x04\0\0\0\x92\x80\xa5x", 12),
                     "message: msgpack truncated");
  expect_parse_error(header_msg(1, (const char *[]){"v"}, (int64_t[]){1}),
                     "header: missing 'm'");
  expect_parse_error(header_msg(1, (const char *[]){"m"}, (int64_t[]){1}),
                     "header: missing 'v'");
  expect_parse_error(
      header_msg(2, (const char *[]){"v", "m"}, (int64_t[]){2, 1}),
      "unsupported wire version 2");
  expect_parse_error(
      header_msg(2, (const char *[]){"v", "m"}, (int64_t[]){1, -1}),
      "header: 'm' is a int, not an integer in [0, 2147483647]");
  expect_parse_error(header_msg(3, (const char *[]){"v", "m", "id"},
                                (int64_t[]){1, 1, INT64_MIN}),
                     "header: 'id' is a str");
  expect_parse_error(header_msg(3, (const char *[]){"v", "m", "code"},
                                (int64_t[]){1, 1, 17}),
                     "header: 'code' is a int, not an integer in [0, 16]");
  expect_parse_error(header_msg(3, (const char *[]){"v", "m", "err"},
                                (int64_t[]){1, 1, 5}),
                     "header: 'err' is a int, not a str");
  expect_parse_error(header_msg(3, (const char *[]){"v", "m", "reply"},
                                (int64_t[]){1, 1, 1}),
                     "header: 'reply' is a int, not a bool");
  /* Unknown keys are ignored (later versions may add fields). */
  tf_wire_msg *r = parse_ok(header_msg(
      3, (const char *[]){"v", "m", "future"}, (int64_t[]){1, 4, 9}));
  ck_assert_int_eq(r->h.method, 4);
  tf_wire_msg_free(r);
}
END_TEST

START_TEST(test_deep_nesting_rejected) {
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_array(&pk, 2);
  msgpack_pack_map(&pk, 0);
  for (int i = 0; i < 40; i++) {
    msgpack_pack_array(&pk, 1);
  }
  msgpack_pack_nil(&pk);
  nng_msg *m = framed(&sb, 0);
  msgpack_sbuffer_destroy(&sb);
  expect_parse_error(m, "nesting deeper than");
}
END_TEST

/* A message with one real 8-byte payload and descriptor fields given. */
static tf_wire_msg *desc_msg(int64_t dt, int rank, const int64_t *dims,
                             uint64_t off, uint64_t len, uint8_t fill) {
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_array(&pk, 2);
  msgpack_pack_map(&pk, 2);
  msgpack_pack_str_with_body(&pk, "v", 1);
  msgpack_pack_int(&pk, 1);
  msgpack_pack_str_with_body(&pk, "m", 1);
  msgpack_pack_int(&pk, 4);
  msgpack_pack_map(&pk, 4);
  msgpack_pack_str_with_body(&pk, "dt", 2);
  msgpack_pack_int64(&pk, dt);
  msgpack_pack_str_with_body(&pk, "shape", 5);
  msgpack_pack_array(&pk, (size_t)rank);
  for (int i = 0; i < rank; i++) {
    msgpack_pack_int64(&pk, dims[i]);
  }
  msgpack_pack_str_with_body(&pk, "off", 3);
  msgpack_pack_uint64(&pk, off);
  msgpack_pack_str_with_body(&pk, "len", 3);
  msgpack_pack_uint64(&pk, len);
  nng_msg *m = framed(&sb, 8);
  memset((uint8_t *)nng_msg_body(m) + nng_msg_len(m) - 8, fill, 8);
  msgpack_sbuffer_destroy(&sb);
  return parse_ok(m);
}

static void expect_desc_error(tf_wire_msg *r, const char *want) {
  tf_tensor *t = (tf_tensor *)1;
  tf_status st;
  ck_assert_int_eq(tf_wire_unpack_tensor(r, &r->body, &t, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert(t == NULL);
  ck_assert_msg(strstr(st.msg, want) != NULL, "'%s' lacks '%s'", st.msg,
                want);
  tf_wire_msg_free(r);
}

START_TEST(test_descriptor_errors) {
  int64_t two[] = {2}, eight[] = {8};
  tf_wire_msg *r = desc_msg(TF_INT32, 1, two, 0, 8, 1);
  tf_tensor *t;
  tf_status st;
  ck_assert_msg(tf_wire_unpack_tensor(r, &r->body, &t, &st) == TF_OK, "%s",
                st.msg);
  ck_assert_int_eq(((int32_t *)t->data)[1], 0x01010101);
  tf_tensor_unref(t);
  tf_wire_msg_free(r);
  expect_desc_error(desc_msg(TF_INT32, 1, two, 8, 8, 0),
                    "outside the 8-byte payload area");
  expect_desc_error(desc_msg(TF_INT32, 1, two, 1, 8, 0),
                    "outside the 8-byte payload area");
  expect_desc_error(desc_msg(TF_INT32, 1, two, 0, 4, 0),
                    "'len' 4 does not match int32[2] (8 bytes)");
  expect_desc_error(desc_msg(TF_STRING, 1, two, 0, 8, 0),
                    "'dt' 7 is not a flat dtype");
  expect_desc_error(desc_msg(99, 1, two, 0, 8, 0), "'dt' 99");
  expect_desc_error(desc_msg(-1, 1, two, 0, 8, 0), "'dt' -1");
  expect_desc_error(desc_msg(TF_INT8, 9, (int64_t[9]){1}, 0, 1, 0),
                    "rank 9 exceeds 8");
  expect_desc_error(desc_msg(TF_INT8, 1, (int64_t[]){-8}, 0, 8, 0),
                    "tensor: ");
  expect_desc_error(desc_msg(TF_BOOL, 1, eight, 0, 8, 2),
                    "bool element 0 is 0x02");
  /* Inside the area but not 64-byte aligned, as no writer puts it. */
  expect_desc_error(desc_msg(TF_UINT8, 1, (int64_t[]){4}, 3, 4, 0),
                    "tensor: payload 'off' 3 is not a multiple of 64");
  expect_desc_error(desc_msg(TF_UINT8, 1, (int64_t[]){1}, 7, 1, 0),
                    "'off' 7 is not a multiple of 64");
  /* Offsets past 4 GiB and off + len wrapping around 2^64. */
  expect_desc_error(desc_msg(TF_UINT8, 1, eight, 5ull << 30, 8, 0),
                    "'off' 5368709120 of 'len' 8 lies outside");
  expect_desc_error(desc_msg(TF_UINT8, 1, eight, UINT64_MAX - 3, 8, 0),
                    "lies outside");
  int64_t huge[] = {1ll << 40, 1ll << 40};
  expect_desc_error(desc_msg(TF_FLOAT64, 2, huge, 0, 8, 0), "tensor: ");
}
END_TEST

START_TEST(test_descriptor_field_types) {
  tf_tensor *v = tf_tensor_vec_f32(2, (float[]){1, 2});
  tf_wire_msg *r = parse_ok(tensors_msg(&v, 1));
  tf_tensor_unref(v);
  tf_tensor *t;
  tf_status st;
  const msgpack_object *d = &r->body.via.array.ptr[0];
  ck_assert_int_eq(tf_wire_unpack_tensor(r, &r->body, &t, &st),
                   TF_INVALID_ARGUMENT); /* an array, not a desc */
  ck_assert(strstr(st.msg, "descriptor is a array, not a map") != NULL);
  ck_assert_int_eq(tf_wire_unpack_tensor(r, NULL, &t, &st),
                   TF_INVALID_ARGUMENT);
  /* Field missing: rename keys in place ("dt" -> "dx", ...). */
  const char *keys[] = {"dt", "shape", "off", "len"};
  for (int k = 0; k < 4; k++) {
    msgpack_object_kv *kv = &d->via.map.ptr[k];
    ck_assert(kv->key.via.str.size == strlen(keys[k]));
    char *p = (char *)kv->key.via.str.ptr;
    char saved = p[1];
    p[1] = 'X';
    ck_assert_int_eq(tf_wire_unpack_tensor(r, d, &t, &st),
                     TF_INVALID_ARGUMENT);
    char want[64];
    snprintf(want, sizeof want, "tensor: field '%s' missing", keys[k]);
    ck_assert_msg(strstr(st.msg, want) != NULL, "%s", st.msg);
    p[1] = saved;
  }
  ck_assert(tf_wire_unpack_tensor(r, d, &t, &st) == TF_OK);
  tf_tensor_unref(t);
  tf_wire_msg_free(r);
}
END_TEST

/* Descriptors of fake tensors of 3 GiB each: offsets go past 4 GiB and
 * stay 64-byte aligned (nothing is copied: the writer is never finished). */
START_TEST(test_offsets_past_4_gib) {
  uint8_t small[8] = {0};
  tf_tensor fake = {.dtype = TF_UINT8, .shape = tf_shape_of(1, 3ll << 30),
                    .n = 3ll << 30, .nbytes = (size_t)3 << 30, .data = small};
  atomic_init(&fake.refs, 1);
  tf_wire_header h = req_header(TF_M_TENSOR_PUSH);
  tf_wire_writer *w = tf_wire_writer_new(&h);
  msgpack_packer *pk = tf_wire_body(w);
  msgpack_pack_array(pk, 3);
  tf_wire_pack_tensor(w, &fake);
  tf_wire_pack_tensor(w, &fake);
  tf_wire_pack_tensor(w, &fake);
  ck_assert_int_eq(atomic_load(&fake.refs), 4);
  msgpack_sbuffer *sb = pk->data;
  msgpack_zone z;
  msgpack_zone_init(&z, 1024);
  msgpack_object o;
  size_t off = 0;
  ck_assert_int_eq(msgpack_unpack(sb->data + 8, sb->size - 8, &off, &z, &o),
                   MSGPACK_UNPACK_SUCCESS);
  const msgpack_object_array *a = &o.via.array.ptr[1].via.array;
  uint64_t want[] = {0, 3ull << 30, 6ull << 30};
  for (int i = 0; i < 3; i++) {
    uint64_t got = tf_wire_get(&a->ptr[i], "off")->via.u64;
    ck_assert_msg(got == want[i], "off %d: %llu", i, (unsigned long long)got);
    ck_assert(tf_wire_get(&a->ptr[i], "len")->via.u64 == 3ull << 30);
  }
  msgpack_zone_destroy(&z);
  tf_wire_writer_free(w);
  ck_assert_int_eq(atomic_load(&fake.refs), 1);
}
END_TEST

START_TEST(test_string_tensor_too_big_fails_at_finish) {
  tf_tensor fake = {.dtype = TF_STRING, .shape = tf_shape_of(1, 1ll << 33),
                    .n = 1ll << 33, .nbytes = 16, .data = NULL};
  atomic_init(&fake.refs, 1);
  tf_wire_header h = req_header(TF_M_TENSOR_PUSH);
  tf_wire_writer *w = tf_wire_writer_new(&h);
  tf_wire_pack_tensor(w, &fake);
  nng_msg *m = (nng_msg *)1;
  tf_status st;
  ck_assert_int_eq(tf_wire_finish(w, &m, &st), TF_INVALID_ARGUMENT);
  ck_assert(m == NULL);
  ck_assert(strstr(st.msg, "4 GiB") != NULL);
}
END_TEST

/* Parses (and when it parses, decodes every descriptor of) a mutated
 * message; anything but a crash or a leak is fine. */
static int try_parse(const uint8_t *b, size_t n) {
  tf_wire_msg *r;
  tf_status st;
  if (tf_wire_parse(raw_msg(b, n), &r, &st) != TF_OK) {
    ck_assert_int_eq(st.code, TF_INVALID_ARGUMENT);
    ck_assert(st.msg[0] != '\0');
    return 0;
  }
  if (r->body.type == MSGPACK_OBJECT_ARRAY) {
    for (uint32_t i = 0; i < r->body.via.array.size; i++) {
      tf_tensor *t = NULL;
      if (tf_wire_unpack_tensor(r, &r->body.via.array.ptr[i], &t, &st) ==
          TF_OK) {
        tf_tensor_unref(t);
      } else {
        ck_assert(t == NULL && st.msg[0] != '\0');
      }
    }
  }
  tf_wire_msg_free(r);
  return 1;
}

static nng_msg *sample_msg(void) {
  tf_tensor *t[] = {tf_tensor_vec_f32(3, (float[]){1, 2, 3}),
                    rand_tensor(TF_STRING, tf_shape_of(1, 2)),
                    rand_tensor(TF_BOOL, tf_shape_of(2, 2, 2)),
                    tf_tensor_scalar_i64(-9)};
  nng_msg *m = tensors_msg(t, 4);
  tt_free(t, 4);
  return m;
}

START_TEST(test_truncation_at_every_length) {
  tt_rng_reseed(tt_seed() ^ 2);
  nng_msg *m = sample_msg();
  const uint8_t *b = nng_msg_body(m);
  size_t len = nng_msg_len(m);
  int ok = 0;
  for (size_t n = 0; n < len; n++) {
    ok += try_parse(b, n);
  }
  ck_assert_int_eq(try_parse(b, len), 1);
  /* Only cuts inside the payload area can still parse. */
  ck_assert_int_lt(ok, (int)len);
  nng_msg_free(m);
}
END_TEST

START_TEST(test_random_byte_flips) {
  tt_rng_reseed(tt_seed() ^ 3);
  nng_msg *m = sample_msg();
  size_t len = nng_msg_len(m);
  uint8_t *b = malloc(len);
  for (int rep = 0; rep < 4000; rep++) {
    memcpy(b, nng_msg_body(m), len);
    int flips = 1 + (int)(tt_rand_u64() % 4);
    for (int k = 0; k < flips; k++) {
      size_t at = tt_rand_u64() % len;
      b[at] = rep % 2 ? (uint8_t)tt_rand_u64() : b[at] ^ (1u << (rep % 8));
    }
    try_parse(b, len);
  }
  free(b);
  nng_msg_free(m);
}
END_TEST

/* A payload of 64 KiB or more is not copied: the tensor aliases the
 * message, which outlives tf_wire_msg_free until the tensor goes (ASan
 * would catch a read after the message was freed). Smaller ones are
 * copies. */
START_TEST(test_large_payloads_alias_the_message) {
  tf_tensor *t[2] = {tt_rand(TF_FLOAT32, tf_shape_of(1, 1 << 15), -1, 1),
                     tt_rand(TF_FLOAT32, tf_shape_of(1, 100), -1, 1)};
  tf_wire_msg *r = parse_ok(tensors_msg(t, 2));
  tf_tensor *got[2];
  tf_status st;
  for (int i = 0; i < 2; i++) {
    ck_assert_msg(tf_wire_unpack_tensor(r, &r->body.via.array.ptr[i], &got[i], &st) == TF_OK,
                  "%s", st.msg);
  }
  const uint8_t *lo = nng_msg_body(r->msg), *hi = lo + nng_msg_len(r->msg);
  const uint8_t *d0 = got[0]->data, *d1 = got[1]->data;
  bool aligned = ((uintptr_t)d0 & 3) == 0;
  ck_assert(!aligned || (d0 >= lo && d0 < hi));  /* aliased */
  ck_assert(d1 < lo || d1 >= hi);                /* copied */
  tf_wire_msg_free(r);                           /* the tensor keeps it */
  assert_same(got[0], t[0]);
  assert_same(got[1], t[1]);
  memset(got[0]->data, 0, 16); /* writable */
  tt_free(got, 2);
  tt_free(t, 2);
}
END_TEST

/* The exact bytes of a request (header with identity, a body map with a
 * float tensor's descriptor and a string tensor, the padded payload) and of
 * an error reply (identity swapped): the format is frozen (docs/wire.md),
 * so any change to these bytes is a protocol change. */
static const char golden_request[] =
    "54465701cc000000928ba17601a16d03a26964cffedcba9876543210a4736573"
    "7307a473746570cf0000010000000000a2646ccd05dca461757468c0a466726f"
    "6dbc2f6a6f623a6d61737465722f7265706c6963613a302f7461736b3a30a866"
    "726f6d5f696e63cf0102030405060708a2746fbc2f6a6f623a776f726b65722f"
    "7265706c6963613a302f7461736b3a31a6746f5f696e630982a17884a2647401"
    "a57368617065920203a36f666600a36c656e18a17383a5647479706507a57368"
    "6170659102a46461746192c4026162c40378797a000000000000000000000000"
    "0000000000000000000000000000000000000000000000000000000000000000"
    "0000003f0000c03f0000204000006040000090400000b040";
static const char golden_error_reply[] =
    "54465701ae000000928ea17601a16d03a26964cffedcba9876543210a4736573"
    "7307a473746570cf0000010000000000a2646c00a461757468c0a466726f6dbc"
    "2f6a6f623a776f726b65722f7265706c6963613a302f7461736b3a31a866726f"
    "6d5f696e6309a2746fbc2f6a6f623a6d61737465722f7265706c6963613a302f"
    "7461736b3a30a6746f5f696e63cf0102030405060708a57265706c79c3a4636f"
    "646505a3657272ad6e6f2073756368206772617068c0";

static void assert_bytes(nng_msg *m, const char *hex) {
  size_t len = nng_msg_len(m);
  const uint8_t *b = nng_msg_body(m);
  char *got = malloc(2 * len + 1);
  for (size_t i = 0; i < len; i++) {
    snprintf(got + 2 * i, 3, "%02x", b[i]);
  }
  ck_assert_str_eq(got, hex);
  free(got);
  nng_msg_free(m);
}

START_TEST(test_bytes_are_frozen) {
  tf_wire_header h = req_header(TF_M_RUN_GRAPH);
  tf_wire_writer *w = tf_wire_writer_new(&h);
  msgpack_packer *pk = tf_wire_body(w);
  tf_tensor *x = NULL, *s = NULL;
  tf_status st;
  ck_assert(tf_tensor_new(TF_FLOAT32, &(tf_shape){.rank = 2, .dims = {2, 3}}, &x, &st) == TF_OK);
  for (int i = 0; i < 6; i++) ((float *)x->data)[i] = (float)i + 0.5f;
  ck_assert(tf_tensor_new(TF_STRING, &(tf_shape){.rank = 1, .dims = {2}}, &s, &st) == TF_OK);
  ck_assert(tf_tensor_set_string(s, 0, "ab", 2, &st) == TF_OK);
  ck_assert(tf_tensor_set_string(s, 1, "xyz", 3, &st) == TF_OK);
  tf__mp_map body;
  tf__mp_map_begin(&body, pk, 2);
  tf__mp_map_key(&body, "x");
  tf_wire_pack_tensor(w, x);
  tf__mp_map_key(&body, "s");
  tf_wire_pack_tensor(w, s);
  tf__mp_map_end(&body);
  nng_msg *m;
  ck_assert_msg(tf_wire_finish(w, &m, &st) == TF_OK, "%s", st.msg);
  assert_bytes(m, golden_request);
  tf_status e;
  tf_status_set(&e, TF_NOT_FOUND, "no such graph");
  ck_assert(tf_wire_error_reply(&h, &e, &m, &st) == TF_OK);
  assert_bytes(m, golden_error_reply);
  tf_tensor_unref(x);
  tf_tensor_unref(s);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("wire");
  TCase *tc = tcase_create("wire");
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, test_round_trip_every_dtype);
  tcase_add_test(tc, test_payloads_follow_aligned_and_padded);
  tcase_add_test(tc, test_header_fields_and_nil_body);
  tcase_add_test(tc, test_error_reply_keeps_code_message_and_ids);
  tcase_add_test(tc, test_method_names);
  tcase_add_test(tc, test_parse_errors_name_the_problem);
  tcase_add_test(tc, test_deep_nesting_rejected);
  tcase_add_test(tc, test_descriptor_errors);
  tcase_add_test(tc, test_descriptor_field_types);
  tcase_add_test(tc, test_offsets_past_4_gib);
  tcase_add_test(tc, test_string_tensor_too_big_fails_at_finish);
  tcase_add_test(tc, test_truncation_at_every_length);
  tcase_add_test(tc, test_random_byte_flips);
  tcase_add_test(tc, test_large_payloads_alias_the_message);
  tcase_add_test(tc, test_bytes_are_frozen);
  suite_add_tcase(s, tc);
  return s;
}
