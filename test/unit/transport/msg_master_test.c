/* msg_master_test.c: the master service's typed messages (msg_master.c):
 * CreateSession (with and without a graph), ExtendSession, RunStep
 * (feeds of every dtype, empty and large name lists) and Reset: encode ->
 * decode round trips, the exact body bytes docs/wire.md lists, a table
 * of hostile bodies per message each refused naming the field, the
 * encoders' refusal of lists over a cap, and seeded byte flips through
 * the fuzz harness's checks. */
#include "test/unit/transport/msg_testlib.h"

MSG_OPS(create_req_ops, tf_msg_create_session_req, TF_M_CREATE_SESSION, false)
MSG_OPS(create_reply_ops, tf_msg_create_session_reply, TF_M_CREATE_SESSION, true)
MSG_OPS(extend_ops, tf_msg_extend_session_req, TF_M_EXTEND_SESSION, false)
MSG_OPS(step_req_ops, tf_msg_run_step_req, TF_M_RUN_STEP, false)
MSG_OPS(step_reply_ops, tf_msg_run_step_reply, TF_M_RUN_STEP, true)
MSG_OPS(reset_ops, tf_msg_reset_req, TF_M_RESET, false)

static tf_wire_msg *create_msg(bool has_graph, const void *g, size_t len) {
  tf_wire_writer *w = mt_writer(TF_M_CREATE_SESSION, false);
  tf_msg_create_session_req_encode(w, &(tf_msg_create_session_req){has_graph, g, len});
  return mt_parse(w);
}

static tf_wire_msg *extend_msg(const void *g, size_t len) {
  tf_wire_writer *w = mt_writer(TF_M_EXTEND_SESSION, false);
  tf_msg_extend_session_req_encode(w, &(tf_msg_extend_session_req){g, len});
  return mt_parse(w);
}

static tf_wire_msg *step_msg(const tf_msg_run_step_req *b) {
  tf_wire_writer *w = mt_writer(TF_M_RUN_STEP, false);
  tf_msg_run_step_req_encode(w, b);
  return mt_parse(w);
}

static tf_wire_msg *step_reply_msg(tf_tensor **ts, int n) {
  tf_wire_writer *w = mt_writer(TF_M_RUN_STEP, true);
  tf_msg_run_step_reply_encode(w, &(tf_msg_run_step_reply){.n_fetches = n, .fetches = ts});
  return mt_parse(w);
}

static tf_wire_msg *reset_msg(const char **cs, int n) {
  tf_wire_writer *w = mt_writer(TF_M_RESET, false);
  tf_msg_reset_req_encode(w, &(tf_msg_reset_req){.n_containers = n, .containers = cs});
  return mt_parse(w);
}

/* n names "<prefix><i>" (free with free_names). */
static const char **names_of(const char *prefix, int n) {
  const char **v = calloc((size_t)n + 1, sizeof *v);
  for (int i = 0; i < n; i++) {
    char buf[64];
    snprintf(buf, sizeof buf, "%s%d", prefix, i);
    v[i] = strdup(buf);
  }
  return v;
}

static void free_names(const char **v, int n) {
  for (int i = 0; i < n; i++) free((char *)v[i]);
  free(v);
}

START_TEST(sessions_round_trip) {
  uint8_t g[300];
  for (size_t i = 0; i < sizeof g; i++) g[i] = (uint8_t)tt_rand_u64();
  tf_status st;
  for (int k = 0; k < 3; k++) { /* none, empty, 300 bytes */
    tf_wire_msg *r = create_msg(k > 0, g, k == 2 ? sizeof g : 0);
    tf_msg_create_session_req b;
    ck_assert_msg(tf_msg_create_session_req_decode(r, &b, &st) == TF_OK, "%s", st.msg);
    ck_assert(b.has_graph == (k > 0));
    ck_assert_uint_eq(b.graph_len, k == 2 ? sizeof g : 0);
    ck_assert(k < 2 || memcmp(b.graph, g, sizeof g) == 0);
    tf_msg_create_session_req_fini(&b);
    tf_wire_msg_free(r);
    r = extend_msg(g, k == 2 ? sizeof g : 0);
    tf_msg_extend_session_req e;
    ck_assert_msg(tf_msg_extend_session_req_decode(r, &e, &st) == TF_OK, "%s", st.msg);
    ck_assert_uint_eq(e.graph_len, k == 2 ? sizeof g : 0);
    ck_assert(k < 2 || memcmp(e.graph, g, sizeof g) == 0);
    tf_msg_extend_session_req_fini(&e);
    tf_wire_msg_free(r);
  }
  tf_wire_writer *w = mt_writer(TF_M_CREATE_SESSION, true);
  tf_msg_create_session_reply_encode(w, &(tf_msg_create_session_reply){0x8000000000000001ULL});
  tf_wire_msg *r = mt_parse(w);
  tf_msg_create_session_reply b;
  ck_assert_msg(tf_msg_create_session_reply_decode(r, &b, &st) == TF_OK, "%s", st.msg);
  ck_assert(b.session == 0x8000000000000001ULL);
  ck_assert(b.session_ttl_ms == 0 && b.max_message_bytes == 0); /* absent */
  tf_wire_msg_free(r);
  w = mt_writer(TF_M_CREATE_SESSION, true);
  tf_msg_create_session_reply full = {7, 60000, (int64_t)256 << 20};
  tf_msg_create_session_reply_encode(w, &full);
  r = mt_parse(w);
  ck_assert_msg(tf_msg_create_session_reply_decode(r, &b, &st) == TF_OK, "%s", st.msg);
  ck_assert(b.session == 7 && b.session_ttl_ms == 60000 &&
            b.max_message_bytes == (int64_t)256 << 20);
  tf_wire_msg_free(r);
}
END_TEST

START_TEST(run_step_round_trip) {
  tf_tensor *ts[MT_N_DTYPES];
  for (int i = 0; i < MT_N_DTYPES; i++) ts[i] = mt_tensor(mt_dtypes[i], tf_shape_of(2, 3, 1));
  const char **feeds = names_of("in/x:", MT_N_DTYPES);
  int nf = 5000, nt = 3000;
  const char **fetches = names_of("out/y_", nf), **targets = names_of("train/op", nt);
  int cases[][3] = {{0, 0, 0}, {MT_N_DTYPES, 2, 1}, {MT_N_DTYPES, nf, nt}};
  for (int k = 0; k < 3; k++) {
    tf_msg_run_step_req in = {.n_feeds = cases[k][0], .feed_names = feeds, .feed_values = ts,
                              .n_fetches = cases[k][1], .fetches = fetches,
                              .n_targets = cases[k][2], .targets = targets, .trace = k == 1};
    tf_wire_msg *r = step_msg(&in);
    tf_msg_run_step_req b;
    tf_status st;
    ck_assert_msg(tf_msg_run_step_req_decode(r, &b, &st) == TF_OK, "%s", st.msg);
    tf_wire_msg_free(r);
    ck_assert_int_eq(b.n_feeds, in.n_feeds);
    ck_assert_int_eq(b.n_fetches, in.n_fetches);
    ck_assert_int_eq(b.n_targets, in.n_targets);
    ck_assert(b.trace == in.trace);
    for (int i = 0; i < b.n_feeds; i++) {
      ck_assert_str_eq(b.feed_names[i], feeds[i]);
      mt_same_tensor(b.feed_values[i], ts[i]);
    }
    for (int i = 0; i < b.n_fetches; i++) ck_assert_str_eq(b.fetches[i], fetches[i]);
    for (int i = 0; i < b.n_targets; i++) ck_assert_str_eq(b.targets[i], targets[i]);
    tf_msg_run_step_req_fini(&b);
  }
  for (int n = 0; n <= MT_N_DTYPES; n += MT_N_DTYPES) {
    tf_wire_msg *r = step_reply_msg(ts, n);
    tf_msg_run_step_reply b;
    tf_status st;
    ck_assert_msg(tf_msg_run_step_reply_decode(r, &b, &st) == TF_OK, "%s", st.msg);
    tf_wire_msg_free(r);
    ck_assert_int_eq(b.n_fetches, n);
    for (int i = 0; i < n; i++) mt_same_tensor(b.fetches[i], ts[i]);
    tf_msg_run_step_reply_fini(&b);
  }
  free_names(feeds, MT_N_DTYPES);
  free_names(fetches, nf);
  free_names(targets, nt);
  for (int i = 0; i < MT_N_DTYPES; i++) tf_tensor_unref(ts[i]);
}
END_TEST

START_TEST(reset_round_trip) {
  const char **cs = names_of("c", 100);
  for (int n = 0; n <= 100; n += 50) {
    tf_wire_msg *r = reset_msg(cs, n);
    tf_msg_reset_req b;
    tf_status st;
    ck_assert_msg(tf_msg_reset_req_decode(r, &b, &st) == TF_OK, "%s", st.msg);
    tf_wire_msg_free(r);
    ck_assert_int_eq(b.n_containers, n);
    for (int i = 0; i < n; i++) ck_assert_str_eq(b.containers[i], cs[i]);
    tf_msg_reset_req_fini(&b);
  }
  free_names(cs, 100);
}
END_TEST

static void pack_s(msgpack_packer *pk, const char *s) {
  msgpack_pack_str(pk, strlen(s));
  msgpack_pack_str_body(pk, s, strlen(s));
}

START_TEST(bodies_are_the_documented_bytes) {
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, 0); /* the remote session's CreateSession */
  tf_wire_msg *r = create_msg(false, NULL, 0);
  mt_same_bytes(r, &sb);
  tf_wire_msg_free(r);
  msgpack_sbuffer_clear(&sb);
  msgpack_pack_map(&pk, 1);
  pack_s(&pk, "graph");
  msgpack_pack_bin(&pk, 2);
  msgpack_pack_bin_body(&pk, "\x90\x91", 2);
  r = extend_msg("\x90\x91", 2);
  mt_same_bytes(r, &sb);
  tf_wire_msg_free(r);
  r = create_msg(true, "\x90\x91", 2);
  mt_same_bytes(r, &sb);
  tf_wire_msg_free(r);
  msgpack_sbuffer_clear(&sb);
  msgpack_pack_map(&pk, 4);
  pack_s(&pk, "feeds");
  msgpack_pack_array(&pk, 0);
  pack_s(&pk, "fetches");
  msgpack_pack_array(&pk, 2);
  pack_s(&pk, "a");
  pack_s(&pk, "b:1");
  pack_s(&pk, "targets");
  msgpack_pack_array(&pk, 1);
  pack_s(&pk, "init");
  pack_s(&pk, "trace");
  msgpack_pack_false(&pk);
  r = step_msg(&(tf_msg_run_step_req){.n_fetches = 2, .fetches = (const char *[]){"a", "b:1"},
                                      .n_targets = 1, .targets = (const char *[]){"init"}});
  mt_same_bytes(r, &sb);
  tf_wire_msg_free(r);
  msgpack_sbuffer_clear(&sb);
  msgpack_pack_map(&pk, 1);
  pack_s(&pk, "session");
  msgpack_pack_uint64(&pk, 77);
  tf_wire_writer *w = mt_writer(TF_M_CREATE_SESSION, true);
  tf_msg_create_session_reply_encode(w, &(tf_msg_create_session_reply){77});
  r = mt_parse(w);
  mt_same_bytes(r, &sb);
  tf_wire_msg_free(r);
  msgpack_sbuffer_destroy(&sb);
}
END_TEST

START_TEST(sessions_hostile) {
  static const mt_case create[] = {
      {"graph", MT_STR, 5, "CreateSession: field 'graph' is a str, not binary"},
      {"graph", MT_NIL, 0, "CreateSession: field 'graph' is a nil, not binary"},
      {"graph", MT_DUP, 0, "CreateSession: field 'graph' appears twice"},
  };
  mt_hostile(&create_req_ops, create_msg(true, "g", 1), create, 3);
  static const mt_case extend[] = {
      {"graph", MT_DEL, 0, "ExtendSession: field 'graph' is missing"},
      {"graph", MT_ARRAY, 2, "ExtendSession: field 'graph' is a array, not binary"},
  };
  mt_hostile(&extend_ops, extend_msg("g", 1), extend, 2);
  tf_wire_writer *w = mt_writer(TF_M_CREATE_SESSION, true);
  tf_msg_create_session_reply_encode(w, &(tf_msg_create_session_reply){5});
  static const mt_case reply[] = {
      {"session", MT_DEL, 0, "CreateSession reply: field 'session' is missing"},
      {"session", MT_INT, -1, "CreateSession reply: field 'session' is a int, not an unsigned"},
  };
  mt_hostile(&create_reply_ops, mt_parse(w), reply, 2);
}
END_TEST

START_TEST(run_step_hostile) {
  tf_tensor *ts[] = {tf_tensor_vec_f32(2, (float[]){1, 2}), tf_tensor_scalar_f32(5),
                     tf_tensor_scalar_f32(6)};
  tf_msg_run_step_req in = {.n_feeds = 3, .feed_names = (const char *[]){"x", "y", "z"},
                            .feed_values = ts, .n_fetches = 2,
                            .fetches = (const char *[]){"a", "b"}, .n_targets = 1,
                            .targets = (const char *[]){"t"}};
  static const mt_case req[] = {
      {"feeds", MT_DEL, 0, "RunStep: field 'feeds' is missing"},
      {"feeds", MT_MAP, 0, "RunStep: field 'feeds' is a map, not an array"},
      {"feeds", MT_ARRAY, TF_MSG_MAX_TENSORS + 1,
       "RunStep: 'feeds' has 65537 entries, over the cap of 65536 (TF_MSG_MAX_TENSORS)"},
      {"feeds.2", MT_STR, 3, "RunStep: feeds[2] is not [name, tensor]"},
      {"feeds.2.1", MT_DEL, 0, "RunStep: feeds[2] is not [name, tensor]"},
      {"feeds.1.0", MT_INT, 9, "RunStep: feeds[1] is not [name, tensor]"},
      {"feeds.1.0", MT_STRNUL, 0, "RunStep: feeds[1] holds a NUL byte"},
      {"feeds.0.1", MT_NIL, 0, "RunStep: feed 'x': tensor: descriptor is a nil, not a map"},
      {"feeds.0.1.dt", MT_STR, 2, "RunStep: feed 'x': tensor"},
      {"feeds.1.1.len", MT_INT, 5, "RunStep: feed 'y': tensor: 'len' 5 does not match"},
      {"fetches", MT_DEL, 0, "RunStep: field 'fetches' is missing"},
      {"fetches.1", MT_INT, 3, "RunStep: fetches[1] is a int, not a str"},
      {"fetches", MT_ARRAY, TF_MSG_MAX_TENSORS + 1, "'fetches' has 65537 entries, over the cap"},
      {"targets", MT_TRUE, 0, "RunStep: field 'targets' is a bool, not an array"},
      {"targets.0", MT_STR, TF_MSG_MAX_STR_BYTES + 1,
       "RunStep: targets[0] is 65537 bytes long, over the cap of 65536 (TF_MSG_MAX_STR_BYTES)"},
      {"targets", MT_ARRAY, TF_MSG_MAX_NAMES + 1,
       "'targets' has 65537 entries, over the cap of 65536 (TF_MSG_MAX_NAMES)"},
      {"trace", MT_DEL, 0, "RunStep: field 'trace' is missing"},
      {"trace", MT_INT, 1, "RunStep: field 'trace' is a int, not a bool"},
      {"", MT_INTKEY, 0, "RunStep: key 4 is a int, not a str"},
  };
  mt_hostile(&step_req_ops, step_msg(&in), req, 19);
  static const mt_case reply[] = {
      {"fetches", MT_DEL, 0, "RunStep reply: field 'fetches' is missing"},
      {"fetches.1", MT_NIL, 0, "RunStep reply: fetches[1] is a nil, not a tensor"},
      {"fetches.0.off", MT_INT, 64000, "RunStep reply: fetches[0]: tensor: payload at 'off'"},
      {"fetches", MT_ARRAY, TF_MSG_MAX_TENSORS + 1, "'fetches' has 65537 entries"},
  };
  mt_hostile(&step_reply_ops, step_reply_msg(ts, 2), reply, 4);
  static const mt_case reset[] = {
      {"containers", MT_DEL, 0, "Reset: field 'containers' is missing"},
      {"containers.0", MT_BIN, 0, "Reset: containers[0] is a bin, not a str"},
  };
  mt_hostile(&reset_ops, reset_msg((const char *[]){"a"}, 1), reset, 2);
  for (int i = 0; i < 3; i++) tf_tensor_unref(ts[i]);
}
END_TEST

START_TEST(encoders_refuse_lists_over_caps) {
  int n = TF_MSG_MAX_NAMES + 1;
  const char **many = calloc((size_t)n, sizeof *many);
  for (int i = 0; i < n; i++) many[i] = "x";
  tf_wire_writer *w = mt_writer(TF_M_RUN_STEP, false);
  tf_msg_run_step_req_encode(w, &(tf_msg_run_step_req){.n_fetches = n, .fetches = many});
  mt_finish_fails(w, "RunStep: 'fetches' has 65537 entries, over the cap of 65536");
  w = mt_writer(TF_M_RESET, false);
  tf_msg_reset_req_encode(w, &(tf_msg_reset_req){.n_containers = n, .containers = many});
  mt_finish_fails(w, "Reset: 'containers' has 65537 entries, over the cap of 65536 "
                     "(TF_MSG_MAX_NAMES)");
  free(many);
}
END_TEST

START_TEST(byte_flips) {
  tf_tensor *ts[] = {tf_tensor_vec_f32(3, (float[]){1, 2, 3}), mt_tensor(TF_STRING, tf_shape_of(1, 2)),
                     mt_tensor(TF_BOOL, tf_shape_of(1, 4))};
  int n = 400;
  mt_flips(&create_req_ops, create_msg(true, "\x90", 1), n);
  mt_flips(&create_req_ops, create_msg(false, NULL, 0), n);
  tf_wire_writer *w = mt_writer(TF_M_CREATE_SESSION, true);
  tf_msg_create_session_reply_encode(w, &(tf_msg_create_session_reply){99});
  mt_flips(&create_reply_ops, mt_parse(w), n);
  mt_flips(&extend_ops, extend_msg("\x90", 1), n);
  tf_msg_run_step_req in = {.n_feeds = 3, .feed_names = (const char *[]){"x", "y", "z"},
                            .feed_values = ts, .n_fetches = 1, .fetches = (const char *[]){"a"},
                            .trace = true};
  ck_assert_int_gt(mt_flips(&step_req_ops, step_msg(&in), n), 0);
  mt_flips(&step_reply_ops, step_reply_msg(ts, 3), n);
  mt_flips(&reset_ops, reset_msg((const char *[]){"", "c"}, 2), n);
  for (int i = 0; i < 3; i++) tf_tensor_unref(ts[i]);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("msg_master");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, sessions_round_trip);
  tcase_add_test(tc, run_step_round_trip);
  tcase_add_test(tc, reset_round_trip);
  tcase_add_test(tc, bodies_are_the_documented_bytes);
  tcase_add_test(tc, sessions_hostile);
  tcase_add_test(tc, run_step_hostile);
  tcase_add_test(tc, encoders_refuse_lists_over_caps);
  tcase_add_test(tc, byte_flips);
  suite_add_tcase(s, tc);
  return s;
}
