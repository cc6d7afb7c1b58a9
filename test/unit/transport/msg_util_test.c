/* msg_util_test.c: the helpers under every message codec (msg_util.c):
 * the reply writer's identity (from the replying task, to the requester),
 * a decoded struct's memory (freed by fini, fini safe on a zeroed struct
 * and twice), the walk over a body map (non-map bodies, non-str keys,
 * known keys twice, unknown keys ignored), integer ranges at their edges,
 * and strings at and over the cap or holding a NUL byte. */
#include "lib/transport/msg_util.h"
#include "test/unit/transport/msg_testlib.h"

START_TEST(reply_writer_carries_identity) {
  tf_wire_writer *w = mt_writer(TF_M_RUN_GRAPH, false);
  tf_msg_run_graph_req_encode(w, &(tf_msg_run_graph_req){.handle = 1});
  tf_wire_msg *req = mt_parse(w);
  tf_wire_msg *r = mt_parse(tf_msg_reply_writer(req, "/job:worker/replica:0/task:0", 99));
  ck_assert(r->h.is_reply);
  ck_assert_int_eq(r->h.method, TF_M_RUN_GRAPH);
  ck_assert(r->h.request_id == 5 && r->h.session == 6 && r->h.step_id == 7);
  ck_assert_str_eq(r->h.from, "/job:worker/replica:0/task:0");
  ck_assert(r->h.from_inc == 99);
  ck_assert_str_eq(r->h.to, "/job:master/replica:0/task:0"); /* the requester */
  ck_assert(r->h.to_inc == 1);
  ck_assert_int_eq(r->h.code, TF_OK);
  ck_assert_int_eq(r->body.type, MSGPACK_OBJECT_NIL);
  tf_wire_msg_free(r);
  tf_wire_msg_free(req);
}
END_TEST

START_TEST(memory_and_fini) {
  tf_msg_mem m = {0};
  for (int i = 0; i < 100; i++) {
    size_t n = (size_t)i * 37;
    unsigned char *p = tf__msg_alloc(&m, n);
    ck_assert_uint_eq((uintptr_t)p % _Alignof(max_align_t), 0);
    for (size_t k = 0; k < n; k++) ck_assert_uint_eq(p[k], 0);
    memset(p, 0xee, n);
  }
  tf__msg_mem_free(&m);
  ck_assert_ptr_null(m.head);
  tf__msg_mem_free(&m);
  /* Every fini on a zeroed struct, and twice. */
  tf_msg_run_graph_req a = {0};
  tf_msg_run_graph_reply b = {0};
  tf_msg_tensor_push_req c = {0};
  tf_msg_run_step_req d = {0};
  tf_msg_run_step_reply e = {0};
  tf_msg_get_status_reply f = {0};
  tf_msg_list_devices_reply g = {0};
  tf_msg_cluster_status_reply h = {0};
  tf_msg_worker_reset_req i = {0};
  tf_msg_reset_req j = {0};
  tf_msg_abort_step_req k = {0};
  for (int n = 0; n < 2; n++) {
    tf_msg_run_graph_req_fini(&a);
    tf_msg_run_graph_reply_fini(&b);
    tf_msg_tensor_push_req_fini(&c);
    tf_msg_run_step_req_fini(&d);
    tf_msg_run_step_reply_fini(&e);
    tf_msg_get_status_reply_fini(&f);
    tf_msg_list_devices_reply_fini(&g);
    tf_msg_cluster_status_reply_fini(&h);
    tf_msg_worker_reset_req_fini(&i);
    tf_msg_reset_req_fini(&j);
    tf_msg_abort_step_req_fini(&k);
  }
}
END_TEST

/* A message whose body is the msgpack object packed by fn. */
static tf_wire_msg *raw_body(int method, bool reply, void (*fn)(msgpack_packer *)) {
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  msgpack_packer pk;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  fn(&pk);
  tf_wire_header h = {.version = TF_WIRE_VERSION, .method = method, .is_reply = reply};
  tf_wire_msg *r = NULL;
  tf_status st;
  ck_assert(tf_wire_parse(raw_build(&h, sb.data, sb.size, NULL, 0), &r, &st) == TF_OK);
  msgpack_sbuffer_destroy(&sb);
  return r;
}

static void pack_s(msgpack_packer *pk, const char *s) {
  msgpack_pack_str(pk, strlen(s));
  msgpack_pack_str_body(pk, s, strlen(s));
}

/* {handle: 3, extra: [1, {x: nil}], future: "ok"}: unknown keys ignored. */
static void body_with_unknown_keys(msgpack_packer *pk) {
  msgpack_pack_map(pk, 3);
  pack_s(pk, "extra");
  msgpack_pack_array(pk, 2);
  msgpack_pack_int(pk, 1);
  msgpack_pack_map(pk, 1);
  pack_s(pk, "x");
  msgpack_pack_nil(pk);
  pack_s(pk, "handle");
  msgpack_pack_uint64(pk, 3);
  pack_s(pk, "future");
  pack_s(pk, "ok");
}

static void body_array(msgpack_packer *pk) {
  msgpack_pack_array(pk, 1);
  pack_s(pk, "handle");
}

START_TEST(body_walk) {
  tf_status st;
  tf_wire_msg *r = raw_body(TF_M_DEREGISTER_GRAPH, false, body_with_unknown_keys);
  tf_msg_deregister_graph_req d;
  ck_assert_msg(tf_msg_deregister_graph_req_decode(r, &d, &st) == TF_OK, "%s", st.msg);
  ck_assert(d.handle == 3);
  tf_wire_msg_free(r);
  r = raw_body(TF_M_DEREGISTER_GRAPH, false, body_array);
  ck_assert_int_eq(tf_msg_deregister_graph_req_decode(r, &d, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "DeregisterGraph: the body is a array, not a map"), "%s", st.msg);
  tf_wire_msg_free(r);
  r = raw_body(TF_M_DEREGISTER_GRAPH, true, body_with_unknown_keys);
  ck_assert_int_eq(tf_msg_deregister_graph_req_decode(r, &d, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "DeregisterGraph: the message is a DeregisterGraph reply"),
                "%s", st.msg);
  tf_wire_msg_free(r);
}
END_TEST

static int64_t n_rets_value;
static bool n_rets_negative;

static void body_run(msgpack_packer *pk) {
  msgpack_pack_map(pk, 4);
  pack_s(pk, "handle");
  msgpack_pack_uint64(pk, 1);
  pack_s(pk, "args");
  msgpack_pack_array(pk, 0);
  pack_s(pk, "n_rets");
  if (n_rets_negative) {
    msgpack_pack_int64(pk, n_rets_value);
  } else {
    msgpack_pack_uint64(pk, (uint64_t)n_rets_value);
  }
  pack_s(pk, "trace");
  msgpack_pack_false(pk);
}

/* n_rets in [0, 65536]: both edges in, one past each out, and the
 * extremes of both integer encodings. */
START_TEST(int_ranges) {
  struct {
    int64_t v;
    bool neg, ok;
    const char *shown;
  } cases[] = {{0, false, true, ""},
               {TF_MSG_MAX_TENSORS, false, true, ""},
               {TF_MSG_MAX_TENSORS + 1, false, false, "is 65537, not in [0, 65536]"},
               {-1, true, false, "is -1, not in [0, 65536]"},
               {INT64_MIN, true, false, "is -9223372036854775808, not in"},
               {INT64_MAX, false, false, "is 9223372036854775807, not in"},
               {-1, false, false, "is 18446744073709551615, not in"}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    n_rets_value = cases[i].v;
    n_rets_negative = cases[i].neg;
    tf_wire_msg *r = raw_body(TF_M_RUN_GRAPH, false, body_run);
    tf_msg_run_graph_req b;
    tf_status st;
    tf_code rc = tf_msg_run_graph_req_decode(r, &b, &st);
    if (cases[i].ok) {
      ck_assert_msg(rc == TF_OK, "%zu: %s", i, st.msg);
      ck_assert_int_eq(b.n_rets, cases[i].v);
    } else {
      ck_assert_int_eq(rc, TF_INVALID_ARGUMENT);
      ck_assert_msg(strstr(st.msg, cases[i].shown), "%zu: %s", i, st.msg);
    }
    tf_msg_run_graph_req_fini(&b);
    tf_wire_msg_free(r);
  }
}
END_TEST

static size_t key_len;
static bool key_nul;

static void body_push(msgpack_packer *pk) {
  char *key = malloc(key_len + 1);
  memset(key, 'k', key_len);
  if (key_nul) key[key_len / 2] = '\0';
  msgpack_pack_map(pk, 3);
  pack_s(pk, "key");
  msgpack_pack_str(pk, key_len);
  msgpack_pack_str_body(pk, key, key_len);
  pack_s(pk, "dead");
  msgpack_pack_true(pk);
  pack_s(pk, "tensor");
  msgpack_pack_nil(pk);
  free(key);
}

START_TEST(string_caps_and_nul) {
  struct {
    size_t len;
    bool nul, ok;
  } cases[] = {{0, false, true},
               {TF_MSG_MAX_STR_BYTES, false, true},
               {TF_MSG_MAX_STR_BYTES + 1, false, false},
               {10, true, false}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    key_len = cases[i].len;
    key_nul = cases[i].nul;
    tf_wire_msg *r = raw_body(TF_M_TENSOR_PUSH, false, body_push);
    tf_msg_tensor_push_req b;
    tf_status st;
    tf_code rc = tf_msg_tensor_push_req_decode(r, &b, &st);
    if (cases[i].ok) {
      ck_assert_msg(rc == TF_OK, "%s", st.msg);
      ck_assert_uint_eq(strlen(b.key), cases[i].len);
      ck_assert(b.dead);
    } else {
      ck_assert_int_eq(rc, TF_INVALID_ARGUMENT);
      ck_assert_msg(strstr(st.msg, cases[i].nul ? "field 'key' holds a NUL byte"
                                                : "field 'key' is 65537 bytes long"),
                    "%s", st.msg);
    }
    tf_msg_tensor_push_req_fini(&b);
    tf_wire_msg_free(r);
  }
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("msg_util");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, reply_writer_carries_identity);
  tcase_add_test(tc, memory_and_fini);
  tcase_add_test(tc, body_walk);
  tcase_add_test(tc, int_ranges);
  tcase_add_test(tc, string_caps_and_nul);
  suite_add_tcase(s, tc);
  return s;
}
