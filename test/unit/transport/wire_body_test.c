/* Tests for the typed body getters: each getter on a field of the right
 * type, of a wrong type and missing (code and message naming the field),
 * lookups in non-maps, strings with embedded bytes, and tf_wire_pack_str
 * of NULL. Bodies are built with the writer and parsed back, as peers do. */
#include <string.h>

#include "lib/transport/wire.h"
#include "test/unit/testutil.h"

static tf_wire_msg *body_msg(void) {
  tf_wire_header h = {.version = TF_WIRE_VERSION, .method = TF_M_GET_STATUS};
  tf_wire_writer *w = tf_wire_writer_new(&h);
  msgpack_packer *pk = tf_wire_body(w);
  msgpack_pack_map(pk, 7);
  tf_wire_pack_str(pk, "u");
  msgpack_pack_uint64(pk, UINT64_MAX);
  tf_wire_pack_str(pk, "i");
  msgpack_pack_int64(pk, INT64_MIN);
  tf_wire_pack_str(pk, "b");
  msgpack_pack_true(pk);
  tf_wire_pack_str(pk, "s");
  tf_wire_pack_str(pk, "job:ps");
  tf_wire_pack_str(pk, "e");
  tf_wire_pack_str(pk, NULL);
  tf_wire_pack_str(pk, "a");
  msgpack_pack_array(pk, 2);
  msgpack_pack_int(pk, 1);
  msgpack_pack_int(pk, 2);
  tf_wire_pack_str(pk, "n");
  msgpack_pack_nil(pk);
  nng_msg *m;
  tf_wire_msg *r;
  tf_status st;
  ck_assert(tf_wire_finish(w, &m, &st) == TF_OK);
  ck_assert_msg(tf_wire_parse(m, &r, &st) == TF_OK, "%s", st.msg);
  return r;
}

START_TEST(test_getters_read_their_types) {
  tf_wire_msg *r = body_msg();
  const msgpack_object *b = &r->body;
  tf_status st;
  uint64_t u;
  int64_t i;
  bool v;
  char *s;
  ck_assert(tf_wire_get_u64(b, "u", "GetStatus", &u, &st) == TF_OK);
  ck_assert(u == UINT64_MAX);
  ck_assert(tf_wire_get_i64(b, "i", "GetStatus", &i, &st) == TF_OK);
  ck_assert(i == INT64_MIN);
  ck_assert(tf_wire_get_i64(b, "a", "x", &i, &st) == TF_INVALID_ARGUMENT);
  ck_assert(tf_wire_get_bool(b, "b", "GetStatus", &v, &st) == TF_OK && v);
  ck_assert(tf_wire_get_str(b, "s", "GetStatus", &s, &st) == TF_OK);
  ck_assert_str_eq(s, "job:ps");
  free(s);
  ck_assert(tf_wire_get_str(b, "e", "GetStatus", &s, &st) == TF_OK);
  ck_assert_str_eq(s, "");
  free(s);
  const msgpack_object_array *a = tf_wire_get_array(b, "a", "GetStatus", &st);
  ck_assert(a != NULL && a->size == 2 && a->ptr[1].via.u64 == 2);
  ck_assert(tf_wire_get(b, "n") != NULL);
  ck_assert(tf_wire_get(b, "missing") == NULL);
  ck_assert(tf_wire_get(&a->ptr[0], "u") == NULL); /* not a map */
  ck_assert(tf_wire_get(NULL, "u") == NULL);
  tf_wire_msg_free(r);
}
END_TEST

static void expect_bad(tf_code c, const tf_status *st, const char *want) {
  ck_assert_int_eq(c, TF_INVALID_ARGUMENT);
  ck_assert_str_eq(st->msg, want);
}

START_TEST(test_getters_reject_wrong_types_and_missing) {
  tf_wire_msg *r = body_msg();
  const msgpack_object *b = &r->body;
  tf_status st;
  uint64_t u;
  int64_t i;
  bool v;
  char *s = (char *)1;
  expect_bad(tf_wire_get_u64(b, "i", "RunGraph", &u, &st), &st,
             "RunGraph: field 'i' missing or not an unsigned int");
  expect_bad(tf_wire_get_i64(b, "u", "RunGraph", &i, &st), &st,
             "RunGraph: field 'u' missing or not an int64");
  expect_bad(tf_wire_get_bool(b, "n", "RunStep", &v, &st), &st,
             "RunStep: field 'n' missing or not a bool");
  expect_bad(tf_wire_get_str(b, "zz", "RunStep", &s, &st), &st,
             "RunStep: field 'zz' missing or not a str");
  ck_assert(s == NULL);
  ck_assert(tf_wire_get_array(b, "s", "Reset", &st) == NULL);
  ck_assert_str_eq(st.msg, "Reset: field 's' missing or not an array");
  ck_assert(tf_wire_strdup(tf_wire_get(b, "u")) == NULL);
  ck_assert(tf_wire_strdup(NULL) == NULL);
  tf_wire_msg_free(r);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("wire_body");
  TCase *tc = tcase_create("wire_body");
  tcase_add_test(tc, test_getters_read_their_types);
  tcase_add_test(tc, test_getters_reject_wrong_types_and_missing);
  suite_add_tcase(s, tc);
  return s;
}
