/* Tests for the graph msgpack codec: a graph with every attr type, list
 * and control inputs, devices and colocation round-trips to an identical
 * graph and to identical bytes; random graphs with random attrs of every
 * kind (any float bits, binary strings) do too; a hand-packed message in
 * the documented layout decodes with defaults filled in; and hostile input
 * (truncation at every offset, seeded flips, wrong types in every field,
 * bad references, deep nesting) is rejected with INVALID_ARGUMENT or
 * DATA_LOSS, leaving the graph unchanged; the rich graph's bytes are
 * frozen (length and CRC-32C). */
#include <msgpack.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/crc32c.h"
#include "lib/core/serialize/tensor_msgpack.h"
#include "test/unit/core/serialize/serialize_testlib.h"

static void encode(const tf_graph *g, void **buf, size_t *len) {
  tf_status st;
  ck_assert_msg(tf_graph_to_msgpack(g, buf, len, &st) == TF_OK, "%s", st.msg);
}

static tf_graph *decode_ok(const void *buf, size_t len) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  ck_assert_msg(tf_graph_from_msgpack(g, buf, len, &st) == TF_OK, "%s",
                st.msg);
  return g;
}

/* Decodes expecting failure; the graph must stay empty. */
static tf_code decode_fail(const void *buf, size_t len, tf_status *st) {
  tf_graph *g = tf_graph_new();
  tf_code c = tf_graph_from_msgpack(g, buf, len, st);
  ck_assert_int_ne(c, TF_OK);
  ck_assert_int_eq(tf_graph_num_nodes(g), 0);
  tf_graph_free(g);
  return c;
}

static void assert_round_trip(const tf_graph *g) {
  void *buf, *buf2;
  size_t len, len2;
  encode(g, &buf, &len);
  tf_graph *back = decode_ok(buf, len);
  st_assert_graphs_equal(g, back);
  encode(back, &buf2, &len2);
  ck_assert_uint_eq(len, len2);
  ck_assert(memcmp(buf, buf2, len) == 0);
  free(buf);
  free(buf2);
  tf_graph_free(back);
}

START_TEST(test_rich_graph_round_trip) {
  tf_graph *g = st_rich_graph();
  assert_round_trip(g);
  /* Spot checks that the features really are in the graph. */
  tf_node *y = tf_graph_find(g, "y");
  ck_assert_int_eq(tf_node_num_control_inputs(y), 2);
  ck_assert_str_eq(tf_node_device(y), "/job:worker/task:1");
  ck_assert_ptr_nonnull(tf_node_attr(y, "_class"));
  ck_assert_int_eq(tf_node_attr(y, "N")->u.i, 3);
  ck_assert_int_eq(tf_node_attr(y, "lte")->n, 3);
  tf_graph_free(g);
}
END_TEST

/* The rich graph's encoding is frozen: its length and CRC-32C are what
 * the codec has always written (docs/graph-format.md), so a change in
 * them is a format change, not a refactoring. */
START_TEST(test_rich_graph_bytes_are_frozen) {
  tf_graph *g = st_rich_graph();
  void *buf;
  size_t len;
  encode(g, &buf, &len);
  ck_assert_uint_eq(len, 1681);
  ck_assert_uint_eq(tf_crc32c(buf, len), 0x899b21eau);
  free(buf);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_empty_graph) {
  tf_graph *g = tf_graph_new();
  assert_round_trip(g);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_random_graphs_round_trip) {
  for (int it = 0; it < 200; it++) {
    tf_graph *g = st_rand_graph(true);
    assert_round_trip(g);
    tf_graph_free(g);
  }
}
END_TEST

/* Decoding into a graph that already has nodes: inputs may name them. */
START_TEST(test_import_into_existing_graph) {
  tf_graph *src = tf_graph_new();
  tf_node *x = tt_placeholder(src, "x", TF_INT32, tf_shape_of(1, 4));
  tf_node_builder *b = tf_node_begin(src, "Identity", "id");
  tf_node_add_input(b, (tf_output){x, 0});
  st_finish(b);
  void *buf;
  size_t len;
  encode(src, &buf, &len);
  tf_graph *g = tf_graph_new();
  tt_placeholder(g, "other", TF_FLOAT32, tf_shape_unknown());
  tf_status st;
  ck_assert(tf_graph_from_msgpack(g, buf, len, &st) == TF_OK);
  ck_assert_int_eq(tf_graph_num_nodes(g), 3);
  /* A second import clashes on names: refused, nothing added. */
  ck_assert_int_eq(tf_graph_from_msgpack(g, buf, len, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "duplicate"));
  ck_assert_int_eq(tf_graph_num_nodes(g), 3);
  free(buf);
  tf_graph_free(src);
  tf_graph_free(g);
}
END_TEST

static void key(msgpack_packer *pk, const char *k) {
  msgpack_pack_str_with_body(pk, k, strlen(k));
}

static void attr(msgpack_packer *pk, const char *name, const char *type) {
  key(pk, name);
  msgpack_pack_map(pk, 2);
  key(pk, "type");
  key(pk, type);
  key(pk, "value");
}

/* The documented layout written by hand: defaults and N are filled in by
 * import, key order does not matter, device and attrs are optional. */
START_TEST(test_hand_packed_layout) {
  msgpack_sbuffer sb;
  msgpack_packer pk;
  msgpack_sbuffer_init(&sb);
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, 2);
  key(&pk, "nodes");
  msgpack_pack_array(&pk, 2);
  msgpack_pack_map(&pk, 3);
  key(&pk, "op");
  key(&pk, "Placeholder");
  key(&pk, "attrs");
  msgpack_pack_map(&pk, 2);
  attr(&pk, "dtype", "type");
  msgpack_pack_int(&pk, TF_FLOAT64);
  attr(&pk, "shape", "shape");
  msgpack_pack_nil(&pk);
  key(&pk, "name");
  key(&pk, "p");
  msgpack_pack_map(&pk, 4);
  key(&pk, "name");
  key(&pk, "t");
  key(&pk, "op");
  key(&pk, "SerdeTest");
  key(&pk, "inputs");
  msgpack_pack_array(&pk, 3);
  key(&pk, "p");
  key(&pk, "p:0");
  key(&pk, "^p");
  key(&pk, "attrs");
  msgpack_pack_map(&pk, 3);
  attr(&pk, "te", "tensor");
  tf_status st;
  tf_tensor *tv = tf_tensor_scalar_bool(true);
  ck_assert(tf__pack_tensor(&pk, tv, &st) == TF_OK);
  attr(&pk, "lsh", "list(shape)");
  msgpack_pack_array(&pk, 0);
  attr(&pk, "lte", "list(tensor)");
  msgpack_pack_array(&pk, 0);
  key(&pk, "version");
  msgpack_pack_int(&pk, 1);
  tf_graph *g = decode_ok(sb.data, sb.size);
  tf_node *t = tf_graph_find(g, "t");
  ck_assert_ptr_nonnull(t);
  ck_assert_int_eq(tf_node_num_inputs(t), 2);
  ck_assert_int_eq(tf_node_num_control_inputs(t), 1);
  ck_assert_int_eq(tf_node_attr(t, "N")->u.i, 1);
  ck_assert_int_eq(tf_node_attr(t, "T")->u.t, TF_FLOAT64);
  ck_assert_int_eq(tf_node_attr(t, "i")->u.i, -3);
  ck_assert_str_eq(tf_node_attr(t, "s")->u.s, "SAME");
  ck_assert_int_eq(tf_node_attr(t, "lt")->n, 2);
  ck_assert(tf_tensor_equal(tf_node_attr(t, "te")->u.tensor, tv));
  ck_assert_int_eq(tf_node_output_type(t, 0), TF_FLOAT64);
  ck_assert_int_eq(tf_node_output_shape(tf_graph_find(g, "p"), 0)->rank, -1);
  ck_assert_str_eq(tf_node_device(t), "");
  tf_tensor_unref(tv);
  tf_graph_free(g);
  msgpack_sbuffer_destroy(&sb);
}
END_TEST

START_TEST(test_truncated_at_every_offset) {
  tf_graph *g = st_rich_graph();
  void *buf;
  size_t len;
  encode(g, &buf, &len);
  for (size_t cut = 0; cut < len; cut++) {
    char *copy = malloc(cut ? cut : 1);
    memcpy(copy, buf, cut);
    tf_status st;
    tf_code c = decode_fail(copy, cut, &st);
    ck_assert_msg(c == TF_DATA_LOSS, "cut %zu: %s %s", cut, tf_code_name(c),
                  st.msg);
    free(copy);
  }
  free(buf);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_random_byte_flips) {
  tf_graph *g = st_rich_graph();
  void *orig;
  size_t len;
  encode(g, &orig, &len);
  int rejected = 0;
  for (int it = 0; it < 3000; it++) {
    unsigned char *buf = malloc(len);
    memcpy(buf, orig, len);
    for (int f = 0; f < 1 + (int)(tt_rand_u64() % 4); f++) {
      buf[tt_rand_u64() % len] ^= (unsigned char)(1u << (tt_rand_u64() % 8));
    }
    tf_graph *h = tf_graph_new();
    tf_status st;
    tf_code c = tf_graph_from_msgpack(h, buf, len, &st);
    if (c != TF_OK) {
      st_assert_rejected(c, st);
      ck_assert_int_eq(tf_graph_num_nodes(h), 0);
      rejected++;
    } else {
      ck_assert_int_gt(tf_graph_num_nodes(h), 0);
    }
    tf_graph_free(h);
    free(buf);
  }
  ck_assert_int_gt(rejected, 1000);
  free(orig);
  tf_graph_free(g);
}
END_TEST

/* A one-node graph with pieces replaced by variant v. */
static void pack_variant(msgpack_packer *pk, int v) {
  msgpack_pack_map(pk, v == 1 ? 1 : v == 2 ? 3 : 2);
  key(pk, "version");
  if (v == 3) {
    msgpack_pack_int(pk, 2);
  } else if (v == 4) {
    key(pk, "1");
  } else {
    msgpack_pack_int(pk, 1);
  }
  if (v == 1) {
    return;
  }
  if (v == 2) {
    key(pk, "extra");
    msgpack_pack_nil(pk);
  }
  key(pk, "nodes");
  if (v == 5) {
    msgpack_pack_map(pk, 0);
    return;
  }
  msgpack_pack_array(pk, v == 40 ? 2 : 1);
  if (v == 6) {
    msgpack_pack_array(pk, 0);
    return;
  }
  int nkeys = v == 7 ? 2 : v == 8 ? 5 : 4;
  msgpack_pack_map(pk, (size_t)nkeys);
  key(pk, "name");
  if (v == 9) {
    msgpack_pack_int(pk, 5);
  } else if (v == 10) {
    msgpack_pack_str_with_body(pk, "a\0b", 3);
  } else {
    key(pk, "n");
  }
  key(pk, "op");
  key(pk, v == 11 ? "NoSuchOp" : "Placeholder");
  if (v == 7) {
    return; /* attrs missing: dtype has no default */
  }
  if (v == 8) {
    key(pk, "color");
    key(pk, "red");
  }
  key(pk, "inputs");
  if (v == 12) {
    key(pk, "x");
  } else if (v == 13) {
    msgpack_pack_array(pk, 1);
    key(pk, "ghost");
  } else if (v == 14) {
    msgpack_pack_array(pk, 1);
    msgpack_pack_int(pk, 1);
  } else {
    msgpack_pack_array(pk, 0);
  }
  key(pk, "attrs");
  if (v == 15) {
    msgpack_pack_array(pk, 0);
    goto rest;
  }
  msgpack_pack_map(pk, v == 16 ? 2 : 1);
  if (v == 16) { /* repeated attr */
    attr(pk, "dtype", "type");
    msgpack_pack_int(pk, TF_FLOAT32);
  }
  if (v == 17) {
    key(pk, "dtype");
    msgpack_pack_int(pk, 1);
    goto rest;
  }
  if (v == 18) {
    key(pk, "dtype");
    msgpack_pack_map(pk, 1);
    key(pk, "type");
    key(pk, "type");
    goto rest;
  }
  attr(pk, "dtype", v == 19 ? "list(foo)" : v == 20 ? "int" : "type");
  switch (v) {
  case 21: msgpack_pack_int(pk, 99); break;
  case 22: key(pk, "float32"); break;
  case 23: msgpack_pack_int(pk, 0); break;
  default: msgpack_pack_int(pk, TF_FLOAT32); break;
  }
rest:
  if (v == 40) { /* second node with the same name */
    msgpack_pack_map(pk, 2);
    key(pk, "name");
    key(pk, "n");
    key(pk, "op");
    key(pk, "NoOp");
  }
}

/* Attr values of the wrong msgpack type for each attr type, on a NoOp's
 * "_x" attr (no op constraints: only the codec judges). */
static void pack_bad_value(msgpack_packer *pk, int v) {
  static const char *types[] = {"int", "float", "bool", "string", "type",
                                "shape", "tensor", "list(int)", "shape",
                                "shape", "shape", "list(float)", "int",
                                "tensor", "list(tensor)", "string"};
  msgpack_pack_map(pk, 2);
  key(pk, "version");
  msgpack_pack_int(pk, 1);
  key(pk, "nodes");
  msgpack_pack_array(pk, 1);
  msgpack_pack_map(pk, 3);
  key(pk, "name");
  key(pk, "n");
  key(pk, "op");
  key(pk, "NoOp");
  key(pk, "attrs");
  msgpack_pack_map(pk, 1);
  attr(pk, "_x", types[v]);
  switch (v) {
  case 0: msgpack_pack_double(pk, 1.0); break;           /* int */
  case 1: key(pk, "1.0"); break;                           /* float */
  case 2: msgpack_pack_int(pk, 1); break;                  /* bool */
  case 3: msgpack_pack_bin_with_body(pk, "x", 1); break;   /* string */
  case 4: msgpack_pack_int(pk, TF_DTYPE_MAX); break;       /* type */
  case 5: msgpack_pack_int(pk, 3); break;                  /* shape */
  case 6: msgpack_pack_array(pk, 0); break;                /* tensor */
  case 7: msgpack_pack_int(pk, 3); break;                  /* list(int) */
  case 8:                                                  /* rank 9 */
    msgpack_pack_array(pk, 9);
    for (int i = 0; i < 9; i++) msgpack_pack_int(pk, 1);
    break;
  case 9: msgpack_pack_array(pk, 1); msgpack_pack_int(pk, -2); break;
  case 10: msgpack_pack_array(pk, 1); msgpack_pack_true(pk); break;
  case 11: msgpack_pack_array(pk, 1); key(pk, "x"); break;
  case 12: msgpack_pack_uint64(pk, UINT64_MAX); break;
  case 13: /* tensor whose data is too short */
    msgpack_pack_map(pk, 3);
    key(pk, "dtype");
    msgpack_pack_int(pk, TF_INT64);
    key(pk, "shape");
    msgpack_pack_array(pk, 0);
    key(pk, "data");
    msgpack_pack_bin_with_body(pk, "1234", 4);
    break;
  case 14: msgpack_pack_array(pk, 1); msgpack_pack_nil(pk); break;
  default: msgpack_pack_str_with_body(pk, "a\0", 2); break;
  }
}

static tf_code decode_packed(void (*fn)(msgpack_packer *, int), int v,
                             tf_status *st) {
  msgpack_sbuffer sb;
  msgpack_packer pk;
  msgpack_sbuffer_init(&sb);
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  fn(&pk, v);
  tf_graph *g = tf_graph_new();
  tf_code c = tf_graph_from_msgpack(g, sb.data, sb.size, st);
  if (c != TF_OK) {
    ck_assert_int_eq(tf_graph_num_nodes(g), 0);
  }
  tf_graph_free(g);
  msgpack_sbuffer_destroy(&sb);
  return c;
}

START_TEST(test_wrong_types_in_every_field) {
  tf_status st;
  ck_assert_msg(decode_packed(pack_variant, 0, &st) == TF_OK, "%s", st.msg);
  static const struct { int v; const char *msg; } bad[] = {
      {1, "'nodes' must be an array"}, {2, "unknown or repeated key"},
      {3, "'version' must be 1"},      {4, "'version' must be 1"},
      {5, "'nodes' must be an array"}, {6, "node 0: expected a map"},
      {7, "missing attr 'dtype'"},     {8, "unknown key"},
      {9, "name: expected str, got int"}, {10, "NUL"},
      {11, "NoSuchOp"},                {12, "inputs: expected an array"},
      {13, "ghost"},                   {14, "input: expected str"},
      {15, "attrs: expected a map"},   {16, "appears twice"},
      {17, "expected map {type, value}"}, {18, "expected map {type, value}"},
      {19, "expected keys 'type'"},    {20, "must be type, got int"},
      {21, "dtype number"},            {22, "dtype number"},
      {23, "dtype number"},            {40, "duplicate"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    tf_code c = decode_packed(pack_variant, bad[i].v, &st);
    ck_assert_msg(c == TF_INVALID_ARGUMENT, "variant %d: %s %s", bad[i].v,
                  tf_code_name(c), st.msg);
    ck_assert_msg(strstr(st.msg, bad[i].msg) != NULL,
                  "variant %d: '%s' lacks '%s'", bad[i].v, st.msg, bad[i].msg);
  }
  for (int v = 0; v < 16; v++) {
    tf_code c = decode_packed(pack_bad_value, v, &st);
    ck_assert_msg(c == TF_INVALID_ARGUMENT, "value variant %d: %s %s", v,
                  tf_code_name(c), st.msg);
    ck_assert_msg(strstr(st.msg, "attr '_x'") != NULL, "variant %d: %s", v,
                  st.msg);
  }
}
END_TEST

START_TEST(test_hostile_sizes_and_depth) {
  tf_status st;
  /* {"version": 1, "nodes": array32 of 2^32-1} in 20 bytes */
  unsigned char huge[] = {0x82, 0xa7, 'v', 'e', 'r', 's', 'i', 'o', 'n', 0x01,
                          0xa5, 'n', 'o', 'd', 'e', 's', 0xdd, 0xff, 0xff,
                          0xff, 0xff, 0x80};
  ck_assert_int_eq(decode_fail(huge, sizeof huge, &st), TF_DATA_LOSS);
  unsigned char deep[64];
  memset(deep, 0x91, sizeof deep);
  deep[63] = 0xc0;
  ck_assert_int_eq(decode_fail(deep, sizeof deep, &st), TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "nesting"));
  ck_assert_int_eq(decode_fail("", 0, &st), TF_DATA_LOSS);
  ck_assert_int_eq(decode_fail("\xc0", 1, &st), TF_INVALID_ARGUMENT);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("graph_msgpack");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_rich_graph_round_trip);
  tcase_add_test(tc, test_rich_graph_bytes_are_frozen);
  tcase_add_test(tc, test_empty_graph);
  tcase_add_test(tc, test_random_graphs_round_trip);
  tcase_add_test(tc, test_import_into_existing_graph);
  tcase_add_test(tc, test_hand_packed_layout);
  tcase_add_test(tc, test_truncated_at_every_offset);
  tcase_add_test(tc, test_random_byte_flips);
  tcase_add_test(tc, test_wrong_types_in_every_field);
  tcase_add_test(tc, test_hostile_sizes_and_depth);
  suite_add_tcase(s, tc);
  return s;
}
