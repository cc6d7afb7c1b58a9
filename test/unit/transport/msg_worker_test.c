/* msg_worker_test.c: the worker service's typed messages (msg_worker.c):
 * encode -> decode round trips of every field (tensors of every dtype,
 * dead values, empty and large lists), the exact body bytes docs/wire.md
 * lists, a table of hostile bodies per message (wrong types, missing
 * fields, negative and huge counts, out-of-range codes, non-string names,
 * lists and strings over the caps) each refused naming the field, the
 * encoders' refusal of lists over a cap, and seeded byte flips through the
 * fuzz harness's checks. */
#include "test/unit/transport/msg_testlib.h"

MSG_OPS(register_req_ops, tf_msg_register_graph_req, TF_M_REGISTER_GRAPH, false)
MSG_OPS(register_reply_ops, tf_msg_register_graph_reply, TF_M_REGISTER_GRAPH, true)
MSG_OPS(run_req_ops, tf_msg_run_graph_req, TF_M_RUN_GRAPH, false)
MSG_OPS(run_reply_ops, tf_msg_run_graph_reply, TF_M_RUN_GRAPH, true)
MSG_OPS(push_ops, tf_msg_tensor_push_req, TF_M_TENSOR_PUSH, false)
MSG_OPS(abort_ops, tf_msg_abort_step_req, TF_M_ABORT_STEP, false)
MSG_OPS(dereg_ops, tf_msg_deregister_graph_req, TF_M_DEREGISTER_GRAPH, false)
MSG_OPS(wreset_ops, tf_msg_worker_reset_req, TF_M_WORKER_RESET, false)

#define KEY "/job:ps/replica:0/task:0/device:CPU:0;7;/job:worker/replica:0/task:1/device:CPU:0;x;0:0"

/* ---- valid messages ------------------------------------------------------ */

static tf_wire_msg *register_msg(const void *graph, size_t len) {
  tf_wire_writer *w = mt_writer(TF_M_REGISTER_GRAPH, false);
  tf_msg_register_graph_req_encode(w, &(tf_msg_register_graph_req){graph, len});
  return mt_parse(w);
}

/* RunGraph with one tensor of every dtype (random shapes). */
static tf_wire_msg *run_msg(tf_tensor **ts, int n, int n_rets, bool trace) {
  tf_wire_writer *w = mt_writer(TF_M_RUN_GRAPH, false);
  tf_msg_run_graph_req b = {.handle = 0xabcdef0123ULL, .n_args = n, .args = ts,
                            .n_rets = n_rets, .trace = trace};
  tf_msg_run_graph_req_encode(w, &b);
  return mt_parse(w);
}

static tf_tensor **all_dtype_tensors(void) {
  tf_tensor **ts = calloc(MT_N_DTYPES, sizeof *ts);
  for (int i = 0; i < MT_N_DTYPES; i++) {
    tf_shape s = {.rank = (int)(tt_rand_u64() % 3)};
    for (int d = 0; d < s.rank; d++) s.dims[d] = (int64_t)(tt_rand_u64() % 5);
    ts[i] = mt_tensor(mt_dtypes[i], s);
  }
  return ts;
}

static void free_tensors(tf_tensor **ts, int n) {
  for (int i = 0; i < n; i++) tf_tensor_unref(ts[i]);
  free(ts);
}

static tf_wire_msg *run_reply_msg(tf_tensor **rets, int n, const tf_msg_timing *tm, int nt) {
  tf_wire_writer *w = mt_writer(TF_M_RUN_GRAPH, true);
  tf_msg_run_graph_reply b = {.n_rets = n, .rets = rets, .n_timings = nt,
                              .timings = (tf_msg_timing *)tm};
  tf_msg_run_graph_reply_encode(w, &b);
  return mt_parse(w);
}

static tf_wire_msg *push_msg(const char *key, bool dead, tf_tensor *t) {
  tf_wire_writer *w = mt_writer(TF_M_TENSOR_PUSH, false);
  tf_msg_tensor_push_req_encode(w, &(tf_msg_tensor_push_req){.key = key, .dead = dead,
                                                              .tensor = t});
  return mt_parse(w);
}

static tf_wire_msg *abort_msg(tf_code code, const char *msg) {
  tf_wire_writer *w = mt_writer(TF_M_ABORT_STEP, false);
  tf_msg_abort_step_req_encode(w, &(tf_msg_abort_step_req){.code = code, .msg = msg});
  return mt_parse(w);
}

static tf_wire_msg *wreset_msg(const char **cs, int n) {
  tf_wire_writer *w = mt_writer(TF_M_WORKER_RESET, false);
  tf_msg_worker_reset_req_encode(w, &(tf_msg_worker_reset_req){.n_containers = n,
                                                                .containers = cs});
  return mt_parse(w);
}

/* ---- round trips --------------------------------------------------------- */

START_TEST(register_graph_round_trip) {
  uint8_t bytes[1000];
  for (size_t i = 0; i < sizeof bytes; i++) bytes[i] = (uint8_t)tt_rand_u64();
  for (int k = 0; k < 2; k++) {
    size_t len = k ? sizeof bytes : 0;
    tf_wire_msg *r = register_msg(bytes, len);
    tf_msg_register_graph_req b;
    tf_status st;
    ck_assert_msg(tf_msg_register_graph_req_decode(r, &b, &st) == TF_OK, "%s", st.msg);
    ck_assert_uint_eq(b.graph_len, len);
    ck_assert(len == 0 || memcmp(b.graph, bytes, len) == 0);
    /* borrowed: it points into the message */
    ck_assert(len == 0 || ((const uint8_t *)b.graph >= (const uint8_t *)nng_msg_body(r->msg) &&
                           (const uint8_t *)b.graph < (const uint8_t *)nng_msg_body(r->msg) +
                                                          nng_msg_len(r->msg)));
    tf_msg_register_graph_req_fini(&b);
    tf_wire_msg_free(r);
  }
  tf_wire_writer *w = mt_writer(TF_M_REGISTER_GRAPH, true);
  tf_msg_register_graph_reply_encode(w, &(tf_msg_register_graph_reply){UINT64_MAX});
  tf_wire_msg *r = mt_parse(w);
  tf_msg_register_graph_reply b;
  tf_status st;
  ck_assert_msg(tf_msg_register_graph_reply_decode(r, &b, &st) == TF_OK, "%s", st.msg);
  ck_assert(b.handle == UINT64_MAX);
  tf_wire_msg_free(r);
}
END_TEST

START_TEST(run_graph_request_round_trip) {
  tf_tensor **ts = all_dtype_tensors();
  int n_rets[] = {0, 1, TF_MSG_MAX_TENSORS};
  for (int k = 0; k < 3; k++) {
    int n = k == 0 ? 0 : MT_N_DTYPES;
    tf_wire_msg *r = run_msg(ts, n, n_rets[k], k == 1);
    tf_msg_run_graph_req b;
    tf_status st;
    ck_assert_msg(tf_msg_run_graph_req_decode(r, &b, &st) == TF_OK, "%s", st.msg);
    tf_wire_msg_free(r); /* the tensors own their bytes (or a reference) */
    ck_assert(b.handle == 0xabcdef0123ULL);
    ck_assert_int_eq(b.n_args, n);
    ck_assert_int_eq(b.n_rets, n_rets[k]);
    ck_assert(b.trace == (k == 1));
    for (int i = 0; i < n; i++) mt_same_tensor(b.args[i], ts[i]);
    tf_msg_run_graph_req_fini(&b);
    ck_assert_ptr_null(b.args);
    tf_msg_run_graph_req_fini(&b); /* twice: a no-op */
  }
  free_tensors(ts, MT_N_DTYPES);
  /* A large list: 3000 small tensors. */
  int big = 3000;
  tf_tensor **many = calloc((size_t)big, sizeof *many);
  for (int i = 0; i < big; i++) many[i] = tf_tensor_scalar_f32((float)i);
  tf_wire_msg *r = run_msg(many, big, 2, false);
  tf_msg_run_graph_req b;
  tf_status st;
  ck_assert_msg(tf_msg_run_graph_req_decode(r, &b, &st) == TF_OK, "%s", st.msg);
  ck_assert_int_eq(b.n_args, big);
  for (int i = 0; i < big; i++) ck_assert(*(float *)b.args[i]->data == (float)i);
  tf_msg_run_graph_req_fini(&b);
  tf_wire_msg_free(r);
  free_tensors(many, big);
}
END_TEST

START_TEST(run_graph_reply_round_trip) {
  tf_tensor **ts = all_dtype_tensors();
  ts[3] = (tf_tensor_unref(ts[3]), NULL); /* a dead value */
  int nt = 10000;
  tf_msg_timing *tm = calloc((size_t)nt, sizeof *tm);
  char (*names)[16] = calloc((size_t)nt, sizeof *names);
  for (int i = 0; i < nt; i++) {
    snprintf(names[i], sizeof names[i], "n%d", i);
    tm[i] = (tf_msg_timing){names[i], 1000 * i, 1000 * i + (int64_t)(tt_rand_u64() % 999)};
  }
  tf_wire_msg *r = run_reply_msg(ts, MT_N_DTYPES, tm, nt);
  tf_msg_run_graph_reply b;
  tf_status st;
  ck_assert_msg(tf_msg_run_graph_reply_decode(r, &b, &st) == TF_OK, "%s", st.msg);
  tf_wire_msg_free(r);
  ck_assert_int_eq(b.n_rets, MT_N_DTYPES);
  for (int i = 0; i < MT_N_DTYPES; i++) {
    if (i == 3) {
      ck_assert_ptr_null(b.rets[i]);
    } else {
      mt_same_tensor(b.rets[i], ts[i]);
    }
  }
  ck_assert_int_eq(b.n_timings, nt);
  for (int i = 0; i < nt; i++) {
    ck_assert_str_eq(b.timings[i].node, names[i]);
    ck_assert(b.timings[i].start_ns == tm[i].start_ns && b.timings[i].end_ns == tm[i].end_ns);
  }
  /* A caller may take a tensor: fini leaves it alone. */
  tf_tensor *taken = b.rets[0];
  b.rets[0] = NULL;
  tf_msg_run_graph_reply_fini(&b);
  mt_same_tensor(taken, ts[0]);
  tf_tensor_unref(taken);
  /* Empty lists. */
  r = run_reply_msg(NULL, 0, NULL, 0);
  ck_assert_msg(tf_msg_run_graph_reply_decode(r, &b, &st) == TF_OK, "%s", st.msg);
  ck_assert_int_eq(b.n_rets, 0);
  ck_assert_int_eq(b.n_timings, 0);
  tf_msg_run_graph_reply_fini(&b);
  tf_wire_msg_free(r);
  free(tm);
  free(names);
  free_tensors(ts, MT_N_DTYPES);
}
END_TEST

/* Timings beyond TF_MSG_MAX_TIMINGS are dropped by the encoder (they only
 * feed the cost model), so a long traced loop still gets its reply. */
START_TEST(run_graph_reply_timings_capped) {
  int nt = TF_MSG_MAX_TIMINGS + 5;
  tf_msg_timing *tm = calloc((size_t)nt, sizeof *tm);
  for (int i = 0; i < nt; i++) tm[i] = (tf_msg_timing){"loop/body", i, i + 1};
  tf_wire_msg *r = run_reply_msg(NULL, 0, tm, nt);
  tf_msg_run_graph_reply b;
  tf_status st;
  ck_assert_msg(tf_msg_run_graph_reply_decode(r, &b, &st) == TF_OK, "%s", st.msg);
  ck_assert_int_eq(b.n_timings, TF_MSG_MAX_TIMINGS);
  ck_assert(b.timings[TF_MSG_MAX_TIMINGS - 1].start_ns == TF_MSG_MAX_TIMINGS - 1);
  tf_msg_run_graph_reply_fini(&b);
  tf_wire_msg_free(r);
  free(tm);
}
END_TEST

START_TEST(tensor_push_round_trip) {
  for (int i = 0; i <= MT_N_DTYPES; i++) {
    bool dead = i == MT_N_DTYPES;
    tf_tensor *t = dead ? NULL : mt_tensor(mt_dtypes[i], tf_shape_of(2, 2, 3));
    tf_wire_msg *r = push_msg(KEY, dead, t);
    tf_msg_tensor_push_req b;
    tf_status st;
    ck_assert_msg(tf_msg_tensor_push_req_decode(r, &b, &st) == TF_OK, "%s", st.msg);
    tf_wire_msg_free(r);
    ck_assert_str_eq(b.key, KEY);
    ck_assert(b.dead == dead);
    if (dead) {
      ck_assert_ptr_null(b.tensor);
    } else {
      mt_same_tensor(b.tensor, t);
    }
    tf_msg_tensor_push_req_fini(&b);
    tf_tensor_unref(t);
  }
}
END_TEST

START_TEST(small_requests_round_trip) {
  tf_status st;
  for (int code = 1; code < TF_CODE_COUNT; code++) {
    tf_wire_msg *r = abort_msg((tf_code)code, code == 1 ? "" : "peer ran out of memory");
    tf_msg_abort_step_req b;
    ck_assert_msg(tf_msg_abort_step_req_decode(r, &b, &st) == TF_OK, "%s", st.msg);
    ck_assert_int_eq(b.code, code);
    ck_assert_str_eq(b.msg, code == 1 ? "" : "peer ran out of memory");
    tf_msg_abort_step_req_fini(&b);
    tf_wire_msg_free(r);
  }
  tf_wire_writer *w = mt_writer(TF_M_DEREGISTER_GRAPH, false);
  tf_msg_deregister_graph_req_encode(w, &(tf_msg_deregister_graph_req){1ULL << 63});
  tf_wire_msg *r = mt_parse(w);
  tf_msg_deregister_graph_req d;
  ck_assert_msg(tf_msg_deregister_graph_req_decode(r, &d, &st) == TF_OK, "%s", st.msg);
  ck_assert(d.handle == 1ULL << 63);
  tf_wire_msg_free(r);
  int n = 2000;
  const char **cs = calloc((size_t)n, sizeof *cs);
  char (*names)[12] = calloc((size_t)n, sizeof *names);
  for (int i = 0; i < n; i++) {
    snprintf(names[i], sizeof names[i], i % 7 ? "c%d" : "", i);
    cs[i] = names[i];
  }
  int counts[] = {0, 1, n};
  for (int k = 0; k < 3; k++) {
    r = wreset_msg(cs, counts[k]);
    tf_msg_worker_reset_req b;
    ck_assert_msg(tf_msg_worker_reset_req_decode(r, &b, &st) == TF_OK, "%s", st.msg);
    tf_wire_msg_free(r); /* the strings are copies */
    ck_assert_int_eq(b.n_containers, counts[k]);
    for (int i = 0; i < counts[k]; i++) ck_assert_str_eq(b.containers[i], cs[i]);
    tf_msg_worker_reset_req_fini(&b);
  }
  free(cs);
  free(names);
}
END_TEST

/* ---- the exact bytes ----------------------------------------------------- */

static void sb_init(msgpack_sbuffer *sb, msgpack_packer *pk) {
  msgpack_sbuffer_init(sb);
  msgpack_packer_init(pk, sb, msgpack_sbuffer_write);
}

static void pack_s(msgpack_packer *pk, const char *s) {
  msgpack_pack_str(pk, strlen(s));
  msgpack_pack_str_body(pk, s, strlen(s));
}

/* Bodies without tensors, packed key by key in docs/wire.md's order. */
START_TEST(bodies_are_the_documented_bytes) {
  msgpack_sbuffer sb;
  msgpack_packer pk;
  sb_init(&sb, &pk);
  msgpack_pack_map(&pk, 1);
  pack_s(&pk, "graph");
  msgpack_pack_bin(&pk, 3);
  msgpack_pack_bin_body(&pk, "abc", 3);
  tf_wire_msg *r = register_msg("abc", 3);
  mt_same_bytes(r, &sb);
  tf_wire_msg_free(r);
  msgpack_sbuffer_clear(&sb);
  msgpack_pack_map(&pk, 4);
  pack_s(&pk, "handle");
  msgpack_pack_uint64(&pk, 0xabcdef0123ULL);
  pack_s(&pk, "args");
  msgpack_pack_array(&pk, 0);
  pack_s(&pk, "n_rets");
  msgpack_pack_int(&pk, 300);
  pack_s(&pk, "trace");
  msgpack_pack_true(&pk);
  r = run_msg(NULL, 0, 300, true);
  mt_same_bytes(r, &sb);
  tf_wire_msg_free(r);
  msgpack_sbuffer_clear(&sb);
  msgpack_pack_map(&pk, 2);
  pack_s(&pk, "rets");
  msgpack_pack_array(&pk, 1);
  msgpack_pack_nil(&pk);
  pack_s(&pk, "timings");
  msgpack_pack_array(&pk, 1);
  msgpack_pack_array(&pk, 3);
  pack_s(&pk, "mm");
  msgpack_pack_int64(&pk, 5);
  msgpack_pack_int64(&pk, 70000);
  r = run_reply_msg((tf_tensor *[]){NULL}, 1, (tf_msg_timing[]){{"mm", 5, 70000}}, 1);
  mt_same_bytes(r, &sb);
  tf_wire_msg_free(r);
  msgpack_sbuffer_clear(&sb);
  msgpack_pack_map(&pk, 3);
  pack_s(&pk, "key");
  pack_s(&pk, KEY);
  pack_s(&pk, "dead");
  msgpack_pack_true(&pk);
  pack_s(&pk, "tensor");
  msgpack_pack_nil(&pk);
  r = push_msg(KEY, true, NULL);
  mt_same_bytes(r, &sb);
  tf_wire_msg_free(r);
  msgpack_sbuffer_clear(&sb);
  msgpack_pack_map(&pk, 2);
  pack_s(&pk, "code");
  msgpack_pack_int(&pk, TF_CANCELLED);
  pack_s(&pk, "msg");
  pack_s(&pk, "bye");
  r = abort_msg(TF_CANCELLED, "bye");
  mt_same_bytes(r, &sb);
  tf_wire_msg_free(r);
  msgpack_sbuffer_clear(&sb);
  msgpack_pack_map(&pk, 1);
  pack_s(&pk, "containers");
  msgpack_pack_array(&pk, 2);
  pack_s(&pk, "");
  pack_s(&pk, "c1");
  r = wreset_msg((const char *[]){"", "c1"}, 2);
  mt_same_bytes(r, &sb);
  tf_wire_msg_free(r);
  msgpack_sbuffer_destroy(&sb);
}
END_TEST

/* ---- hostile bodies ------------------------------------------------------ */

START_TEST(register_graph_hostile) {
  static const mt_case req[] = {
      {"graph", MT_DEL, 0, "RegisterGraph: field 'graph' is missing"},
      {"graph", MT_STR, 3, "RegisterGraph: field 'graph' is a str, not binary"},
      {"graph", MT_NIL, 0, "field 'graph' is a nil, not binary"},
      {"graph", MT_DUP, 0, "RegisterGraph: field 'graph' appears twice"},
      {"", MT_INTKEY, 0, "RegisterGraph: key 1 is a int, not a str"},
  };
  mt_hostile(&register_req_ops, register_msg("abc", 3), req, 5);
  tf_wire_writer *w = mt_writer(TF_M_REGISTER_GRAPH, true);
  tf_msg_register_graph_reply_encode(w, &(tf_msg_register_graph_reply){9});
  static const mt_case reply[] = {
      {"handle", MT_DEL, 0, "RegisterGraph reply: field 'handle' is missing"},
      {"handle", MT_INT, -1, "field 'handle' is a int, not an unsigned int"},
      {"handle", MT_STR, 2, "field 'handle' is a str"},
  };
  mt_hostile(&register_reply_ops, mt_parse(w), reply, 3);
}
END_TEST

START_TEST(run_graph_hostile) {
  tf_tensor *ts[] = {tf_tensor_vec_f32(2, (float[]){1, 2}), tf_tensor_scalar_f32(3)};
  static const mt_case req[] = {
      {"handle", MT_DEL, 0, "RunGraph: field 'handle' is missing"},
      {"handle", MT_INT, -5, "RunGraph: field 'handle' is a int, not an unsigned int"},
      {"n_rets", MT_INT, -1, "RunGraph: field 'n_rets' is -1, not in [0, 65536]"},
      {"n_rets", MT_INT, 1000000, "field 'n_rets' is 1000000, not in [0, 65536]"},
      {"n_rets", MT_HUGE, 0, "field 'n_rets' is 18446744073709551615, not in"},
      {"n_rets", MT_STR, 1, "field 'n_rets' is a str, not an int"},
      {"trace", MT_INT, 1, "RunGraph: field 'trace' is a int, not a bool"},
      {"trace", MT_DEL, 0, "field 'trace' is missing"},
      {"args", MT_MAP, 0, "RunGraph: field 'args' is a map, not an array"},
      {"args", MT_ARRAY, TF_MSG_MAX_TENSORS + 1,
       "'args' has 65537 entries, over the cap of 65536 (TF_MSG_MAX_TENSORS)"},
      {"args.1", MT_NIL, 0, "RunGraph: args[1] is a nil, not a tensor"},
      {"args.0", MT_STR, 4, "RunGraph: args[0]: tensor: descriptor is a str, not a map"},
      {"args.0.dt", MT_INT, 99, "RunGraph: args[0]: tensor: 'dt' 99 is not a flat dtype"},
      {"args.0.off", MT_INT, 3, "args[0]: tensor: payload 'off' 3 is not a multiple of 64"},
      {"args.1.len", MT_INT, 8, "args[1]: tensor: 'len' 8 does not match"},
      {"args.0.shape.0", MT_INT, -2, "args[0]: tensor"},
      {"", MT_INTKEY, 0, "RunGraph: key 4 is a int, not a str"},
  };
  mt_hostile(&run_req_ops, run_msg(ts, 2, 1, false), req, 17);
  tf_msg_timing tm[] = {{"a", 1, 2}, {"b", 3, 4}};
  static const mt_case reply[] = {
      {"rets", MT_DEL, 0, "RunGraph reply: field 'rets' is missing"},
      {"rets", MT_ARRAY, TF_MSG_MAX_TENSORS + 1, "'rets' has 65537 entries, over the cap"},
      {"rets.0", MT_TRUE, 0, "RunGraph reply: rets[0]: tensor: descriptor is a bool"},
      {"timings", MT_DEL, 0, "RunGraph reply: field 'timings' is missing"},
      {"timings", MT_INT, 3, "field 'timings' is a int, not an array"},
      {"timings.1", MT_STR, 2, "timings[1] is not [node, start_ns, end_ns]"},
      {"timings.1.0", MT_INT, 2, "RunGraph reply: timings[1] is a int, not a str"},
      {"timings.1.0", MT_STRNUL, 0, "RunGraph reply: timings[1] holds a NUL byte"},
      {"timings.0.1", MT_INT, -4, "timings[0] is -4, not in [0, 9223372036854775807]"},
      {"timings.0.2", MT_NIL, 0, "timings[0] is a nil, not an int"},
      {"timings.0.1", MT_INT, 5, "RunGraph reply: timings[0] ends before it starts"},
      {"timings.1.2", MT_DEL, 0, "timings[1] is not [node, start_ns, end_ns]"},
  };
  mt_hostile(&run_reply_ops, run_reply_msg(ts, 2, tm, 2), reply, 12);
  tf_tensor_unref(ts[0]);
  tf_tensor_unref(ts[1]);
}
END_TEST

START_TEST(tensor_push_hostile) {
  tf_tensor *t = tf_tensor_vec_f32(2, (float[]){1, 2});
  static const mt_case live[] = {
      {"key", MT_DEL, 0, "TensorPush: field 'key' is missing"},
      {"key", MT_INT, 7, "TensorPush: field 'key' is a int, not a str"},
      {"key", MT_STRNUL, 0, "TensorPush: field 'key' holds a NUL byte"},
      {"key", MT_STR, TF_MSG_MAX_STR_BYTES + 1,
       "field 'key' is 65537 bytes long, over the cap of 65536 (TF_MSG_MAX_STR_BYTES)"},
      {"dead", MT_DEL, 0, "TensorPush: field 'dead' is missing"},
      {"dead", MT_NIL, 0, "field 'dead' is a nil, not a bool"},
      {"tensor", MT_DEL, 0, "TensorPush '" KEY "': field 'tensor' is missing"},
      {"tensor", MT_NIL, 0, "TensorPush '" KEY "': field 'tensor' is a nil, not a tensor"},
      {"tensor.off", MT_INT, 3, "TensorPush '" KEY "': field 'tensor': tensor: payload at 'off' 3"},
      {"tensor.len", MT_HUGE, 0, "field 'tensor': tensor: 'len' 18446744073709551615"},
  };
  mt_hostile(&push_ops, push_msg(KEY, false, t), live, 10);
  static const mt_case dead[] = {
      {"tensor", MT_MAP, 0, "TensorPush '" KEY "': a dead value with a 'tensor' (a map"},
      {"tensor", MT_INT, 0, "a dead value with a 'tensor' (a int; want nil)"},
  };
  mt_hostile(&push_ops, push_msg(KEY, true, NULL), dead, 2);
  tf_tensor_unref(t);
}
END_TEST

START_TEST(small_requests_hostile) {
  static const mt_case ab[] = {
      {"code", MT_DEL, 0, "AbortStep: field 'code' is missing"},
      {"code", MT_INT, 0, "AbortStep: field 'code' is 0, not in [1, 16]"},
      {"code", MT_INT, 17, "field 'code' is 17, not in [1, 16]"},
      {"code", MT_INT, -3, "field 'code' is -3, not in [1, 16]"},
      {"code", MT_STR, 1, "field 'code' is a str, not an int"},
      {"msg", MT_DEL, 0, "AbortStep: field 'msg' is missing"},
      {"msg", MT_BIN, 0, "AbortStep: field 'msg' is a bin, not a str"},
  };
  mt_hostile(&abort_ops, abort_msg(TF_ABORTED, "why"), ab, 7);
  tf_wire_writer *w = mt_writer(TF_M_DEREGISTER_GRAPH, false);
  tf_msg_deregister_graph_req_encode(w, &(tf_msg_deregister_graph_req){3});
  static const mt_case dr[] = {
      {"handle", MT_DEL, 0, "DeregisterGraph: field 'handle' is missing"},
      {"handle", MT_TRUE, 0, "DeregisterGraph: field 'handle' is a bool, not an unsigned"},
  };
  mt_hostile(&dereg_ops, mt_parse(w), dr, 2);
  static const mt_case wr[] = {
      {"containers", MT_DEL, 0, "WorkerReset: field 'containers' is missing"},
      {"containers", MT_STR, 2, "WorkerReset: field 'containers' is a str, not an array"},
      {"containers.1", MT_INT, 4, "WorkerReset: containers[1] is a int, not a str"},
      {"containers.0", MT_NIL, 0, "WorkerReset: containers[0] is a nil, not a str"},
      {"containers", MT_ARRAY, TF_MSG_MAX_NAMES + 1,
       "'containers' has 65537 entries, over the cap of 65536 (TF_MSG_MAX_NAMES)"},
  };
  mt_hostile(&wreset_ops, wreset_msg((const char *[]){"a", "b"}, 2), wr, 5);
}
END_TEST

/* A request is not its reply, nor another method's. */
START_TEST(wrong_method_or_direction) {
  tf_wire_msg *r = run_msg(NULL, 0, 0, false);
  tf_msg_run_graph_reply b;
  tf_status st;
  ck_assert_int_eq(tf_msg_run_graph_reply_decode(r, &b, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "RunGraph reply: the message is a RunGraph request"), "%s",
                st.msg);
  tf_msg_tensor_push_req p;
  ck_assert_int_eq(tf_msg_tensor_push_req_decode(r, &p, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "TensorPush: the message is a RunGraph request"), "%s", st.msg);
  tf_wire_msg_free(r);
  tf_wire_writer *w = mt_writer(TF_M_ABORT_STEP, false); /* nil body */
  r = mt_parse(w);
  tf_msg_abort_step_req a;
  ck_assert_int_eq(tf_msg_abort_step_req_decode(r, &a, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "AbortStep: the body is a nil, not a map"), "%s", st.msg);
  tf_wire_msg_free(r);
}
END_TEST

/* A sender whose list is over a cap gets the error from tf_wire_finish;
 * nothing is sent. */
START_TEST(encoders_refuse_lists_over_caps) {
  int n = TF_MSG_MAX_TENSORS + 1;
  tf_tensor *t = tf_tensor_scalar_f32(1);
  tf_tensor **many = calloc((size_t)n, sizeof *many);
  for (int i = 0; i < n; i++) many[i] = t;
  tf_wire_writer *w = mt_writer(TF_M_RUN_GRAPH, false);
  tf_msg_run_graph_req_encode(w, &(tf_msg_run_graph_req){.n_args = n, .args = many});
  mt_finish_fails(w, "RunGraph: 'args' has 65537 entries, over the cap of 65536");
  w = mt_writer(TF_M_RUN_GRAPH, false);
  tf_msg_run_graph_req_encode(w, &(tf_msg_run_graph_req){.n_rets = n});
  mt_finish_fails(w, "RunGraph: 'n_rets' 65537 is not in [0, 65536]");
  w = mt_writer(TF_M_RUN_GRAPH, true);
  tf_msg_run_graph_reply_encode(w, &(tf_msg_run_graph_reply){.n_rets = n, .rets = many});
  mt_finish_fails(w, "RunGraph reply: 'rets' has 65537 entries");
  char *big = malloc(TF_MSG_MAX_STR_BYTES + 2);
  memset(big, 'k', TF_MSG_MAX_STR_BYTES + 1);
  big[TF_MSG_MAX_STR_BYTES + 1] = '\0';
  w = mt_writer(TF_M_TENSOR_PUSH, false);
  tf_msg_tensor_push_req_encode(w, &(tf_msg_tensor_push_req){.key = big, .tensor = t});
  mt_finish_fails(w, "TensorPush: 'key' is 65537 bytes long, over the cap of 65536");
  big[TF_MSG_MAX_STR_BYTES] = '\0'; /* exactly the cap: fine */
  tf_wire_msg *r = push_msg(big, false, t);
  tf_msg_tensor_push_req p;
  tf_status st;
  ck_assert_msg(tf_msg_tensor_push_req_decode(r, &p, &st) == TF_OK, "%s", st.msg);
  ck_assert_uint_eq(strlen(p.key), TF_MSG_MAX_STR_BYTES);
  tf_msg_tensor_push_req_fini(&p);
  tf_wire_msg_free(r);
  free(big);
  free(many);
  tf_tensor_unref(t);
}
END_TEST

START_TEST(byte_flips) {
  tf_tensor *ts[] = {tf_tensor_vec_f32(3, (float[]){1, 2, 3}), mt_tensor(TF_STRING, tf_shape_of(1, 2)),
                     mt_tensor(TF_BOOL, tf_shape_of(1, 4))};
  int n = 400;
  mt_flips(&register_req_ops, register_msg("\x82\xa7version\x01\xa5nodes\x90", 17), n);
  tf_wire_writer *w = mt_writer(TF_M_REGISTER_GRAPH, true);
  tf_msg_register_graph_reply_encode(w, &(tf_msg_register_graph_reply){12});
  mt_flips(&register_reply_ops, mt_parse(w), n);
  ck_assert_int_gt(mt_flips(&run_req_ops, run_msg(ts, 3, 2, true), n), 0);
  mt_flips(&run_reply_ops, run_reply_msg(ts, 3, (tf_msg_timing[]){{"a", 1, 2}}, 1), n);
  mt_flips(&push_ops, push_msg(KEY, false, ts[1]), n);
  mt_flips(&abort_ops, abort_msg(TF_CANCELLED, "x"), n);
  w = mt_writer(TF_M_DEREGISTER_GRAPH, false);
  tf_msg_deregister_graph_req_encode(w, &(tf_msg_deregister_graph_req){1234567});
  mt_flips(&dereg_ops, mt_parse(w), n);
  mt_flips(&wreset_ops, wreset_msg((const char *[]){"a", ""}, 2), n);
  for (int i = 0; i < 3; i++) tf_tensor_unref(ts[i]);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("msg_worker");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, register_graph_round_trip);
  tcase_add_test(tc, run_graph_request_round_trip);
  tcase_add_test(tc, run_graph_reply_round_trip);
  tcase_add_test(tc, run_graph_reply_timings_capped);
  tcase_add_test(tc, tensor_push_round_trip);
  tcase_add_test(tc, small_requests_round_trip);
  tcase_add_test(tc, bodies_are_the_documented_bytes);
  tcase_add_test(tc, register_graph_hostile);
  tcase_add_test(tc, run_graph_hostile);
  tcase_add_test(tc, tensor_push_hostile);
  tcase_add_test(tc, small_requests_hostile);
  tcase_add_test(tc, wrong_method_or_direction);
  tcase_add_test(tc, encoders_refuse_lists_over_caps);
  tcase_add_test(tc, byte_flips);
  suite_add_tcase(s, tc);
  return s;
}
