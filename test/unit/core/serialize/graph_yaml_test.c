/* Tests for the YAML graph form: the rich graph and random graphs round
 * trip to identical graphs and identical text; the exact text of a small
 * graph (the schema, pinned); floats of every width read back bit-exactly
 * (every float16 and bfloat16 pattern, random float32/float64); big
 * tensors go through !!binary; hand-written files (untagged values typed by
 * the op's declarations or the core schema, flow and block styles,
 * comments) decode as documented; PyYAML reads our text with the same
 * core types; and malformed text (every truncation, seeded flips, wrong
 * types in every field, aliases, deep nesting, bad UTF-8) is rejected with
 * INVALID_ARGUMENT naming the line, leaving the graph unchanged. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test/unit/core/serialize/serialize_testlib.h"

static char *to_yaml(const tf_graph *g, size_t *len) {
  char *text;
  tf_status st;
  ck_assert_msg(tf_graph_to_yaml(g, &text, len, &st) == TF_OK, "%s", st.msg);
  ck_assert_uint_eq(strlen(text), *len);
  return text;
}

static tf_graph *from_yaml_ok(const char *text) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  ck_assert_msg(tf_graph_from_yaml(g, text, strlen(text), &st) == TF_OK,
                "%s\n--- text:\n%s", st.msg, text);
  return g;
}

/* Decodes expecting INVALID_ARGUMENT whose message holds want; the graph
 * stays empty. */
static void expect_error(const char *text, const char *want) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_code c = tf_graph_from_yaml(g, text, strlen(text), &st);
  ck_assert_msg(c == TF_INVALID_ARGUMENT, "%s: %s\n--- text:\n%s",
                tf_code_name(c), st.msg, text);
  ck_assert_msg(strstr(st.msg, want) != NULL, "'%s' lacks '%s'", st.msg,
                want);
  ck_assert_int_eq(tf_graph_num_nodes(g), 0);
  tf_graph_free(g);
}

static void assert_round_trip(const tf_graph *g) {
  size_t len, len2;
  char *text = to_yaml(g, &len);
  tf_graph *back = from_yaml_ok(text);
  st_assert_graphs_equal(g, back);
  char *text2 = to_yaml(back, &len2);
  ck_assert_str_eq(text, text2);
  free(text);
  free(text2);
  tf_graph_free(back);
}

START_TEST(test_rich_graph_round_trip) {
  tf_graph *g = st_rich_graph();
  assert_round_trip(g);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_random_graphs_round_trip) {
  for (int it = 0; it < 200; it++) {
    tf_graph *g = st_rand_graph(false);
    assert_round_trip(g);
    tf_graph_free(g);
  }
}
END_TEST

START_TEST(test_exact_text) {
  tf_graph *g = tf_graph_new();
  tf_node *x = tt_placeholder(g, "x", TF_FLOAT32, tf_shape_of(2, 2, -1));
  tf_node_builder *b = tf_node_begin(g, "Identity", "true");
  tf_node_add_input(b, (tf_output){x, 0});
  tf_node_set_device(b, "/job:ps/task:0");
  tf_node_set_attr(b, "_s", tf_attr_string("a\tb"));
  tf_node_set_attr(b, "_f", tf_attr_float(1.0));
  tf_node_set_attr(b, "_bin", tf_attr_string("\xff"));
  st_finish(b);
  size_t len;
  char *text = to_yaml(g, &len);
  ck_assert_str_eq(text,
                   "# tf graph, YAML form (docs/graph-format.md)\n"
                   "version: 1\n"
                   "nodes:\n"
                   "- name: x\n"
                   "  op: Placeholder\n"
                   "  attrs:\n"
                   "    dtype: !type float32\n"
                   "    shape: !shape [2, -1]\n"
                   "- name: \"true\"\n"
                   "  op: Identity\n"
                   "  inputs: [x]\n"
                   "  device: /job:ps/task:0\n"
                   "  attrs:\n"
                   "    T: !type float32\n"
                   "    _bin: !!binary /w==\n"
                   "    _f: 1.0\n"
                   "    _s: \"a\\tb\"\n");
  free(text);
  tf_graph_free(g);
}
END_TEST

static void const_round_trip(tf_tensor *t) {
  tf_graph *g = tf_graph_new();
  st_const(g, "c", t);
  assert_round_trip(g);
  tf_graph_free(g);
}

/* Every 16-bit pattern that is not a NaN reads back exactly. */
START_TEST(test_every_half_float_pattern) {
  tf_dtype dts[] = {TF_FLOAT16, TF_BFLOAT16};
  for (int k = 0; k < 2; k++) {
    tf_tensor *t;
    tf_status st;
    tf_shape s = tf_shape_of(1, 200);
    ck_assert(tf_tensor_new(dts[k], &s, &t, &st) == TF_OK);
    uint16_t *p = t->data;
    for (uint32_t base = 0; base < 65536; base += 200) {
      for (int i = 0; i < 200; i++) {
        uint32_t bits = base + (uint32_t)i;
        bool nan = dts[k] == TF_FLOAT16 ? (bits & 0x7c00) == 0x7c00 && (bits & 0x3ff)
                                        : (bits & 0x7f80) == 0x7f80 && (bits & 0x7f);
        p[i] = bits < 65536 && !nan ? (uint16_t)bits : 0;
      }
      const_round_trip(t);
    }
    tf_tensor_unref(t);
  }
}
END_TEST

START_TEST(test_random_float_bits) {
  tf_tensor *f32, *f64;
  tf_status st;
  tf_shape s = tf_shape_of(1, 250);
  ck_assert(tf_tensor_new(TF_FLOAT32, &s, &f32, &st) == TF_OK);
  ck_assert(tf_tensor_new(TF_FLOAT64, &s, &f64, &st) == TF_OK);
  for (int rep = 0; rep < 40; rep++) {
    for (int i = 0; i < 250; i++) {
      uint64_t r = tt_rand_u64();
      uint32_t r32 = (uint32_t)r;
      if ((r32 & 0x7f800000u) == 0x7f800000u && (r32 & 0x7fffff)) {
        r32 = 0x7fc00000u; /* only the canonical NaN survives text */
      }
      if ((r & 0x7ff0000000000000ull) == 0x7ff0000000000000ull &&
          (r & 0xfffffffffffffull)) {
        r = 0x7ff8000000000000ull;
      }
      memcpy((float *)f32->data + i, &r32, 4);
      memcpy((double *)f64->data + i, &r, 8);
    }
    const_round_trip(f32);
    const_round_trip(f64);
  }
  tf_tensor_unref(f32);
  tf_tensor_unref(f64);
}
END_TEST

/* Tensors of every dtype, small (values) and large (data: !!binary). */
START_TEST(test_tensors_every_dtype) {
  for (int k = 0; k < ST_N_DTYPES; k++) {
    tf_shape shapes[] = {tf_shape_scalar(), tf_shape_of(2, 0, 3),
                         tf_shape_of(2, 3, 4), tf_shape_of(1, 300)};
    for (int j = 0; j < 4; j++) {
      tf_tensor *t = st_rand_tensor(st_all_dtypes[k], shapes[j], false);
      tf_graph *g = tf_graph_new();
      st_const(g, "c", t);
      size_t len;
      char *text = to_yaml(g, &len);
      bool raw = j == 3 && st_all_dtypes[k] != TF_STRING;
      ck_assert_int_eq(strstr(text, "data: !!binary") != NULL, raw);
      free(text);
      assert_round_trip(g);
      tf_graph_free(g);
      tf_tensor_unref(t);
    }
  }
  /* Binary strings in tensors and attrs. */
  tf_tensor *t = st_rand_tensor(TF_STRING, tf_shape_of(1, 50), true);
  const_round_trip(t);
  tf_tensor_unref(t);
}
END_TEST

static const char *hand_written =
    "# a hand-written graph\n"
    "version: 1\n"
    "nodes:\n"
    "  - name: p\n"
    "    op: Placeholder\n"
    "    attrs: {dtype: float64, shape: [2, -1]}   # typed by the op\n"
    "  - {name: q, op: Placeholder, attrs: {dtype: !type float64}}\n"
    "  - name: t\n"
    "    op: SerdeTest\n"
    "    inputs: [p, 'q:0', ^p]\n"
    "    device: /job:worker\n"
    "    attrs:\n"
    "      te:\n"
    "        dtype: int8\n"
    "        shape: [2, 2]\n"
    "        values: [-128, 127, 0, 1]\n"
    "      lsh: [[2, -1], unknown, []]\n"
    "      lte: []\n"
    "      f: 2\n"
    "      s: VALID\n"
    "      li: [1, 2, 3]\n"
    "      lt: [bool, string]\n"
    "      _ints: [1, -2]\n"
    "      _floats: [1, 2.5, .inf]\n"
    "      _strs: [a, \"1\", 'true']\n"
    "      _word: hello\n"
    "      _num: 3\n"
    "      _flt: 1e3\n"
    "      _bool: False\n"
    "      _bin: !!binary aGk=\n"
    "      _t: !type half\n"
    "      _sh: !shape\n"
    "      _el: !list(int)\n"
    "      _big: !tensor {dtype: uint64, shape: [1], values: [18446744073709551615]}\n"
    "      _cx: !tensor {dtype: complex64, shape: [1], values: [[1.5, -2]]}\n"
    "      _raw: !tensor {dtype: int16, shape: [2], data: !!binary AQACAA==}\n";

START_TEST(test_hand_written) {
  tf_graph *g = from_yaml_ok(hand_written);
  tf_node *t = tf_graph_find(g, "t");
  ck_assert_ptr_nonnull(t);
  ck_assert_int_eq(tf_node_output_shape(tf_graph_find(g, "p"), 0)->dims[1], -1);
  ck_assert_int_eq(tf_node_attr(t, "N")->u.i, 1);
  ck_assert_int_eq(tf_node_attr(t, "te")->u.tensor->dtype, TF_INT8);
  ck_assert_int_eq(((int8_t *)tf_node_attr(t, "te")->u.tensor->data)[0], -128);
  ck_assert_int_eq(tf_node_attr(t, "lsh")->u.shapes[1].rank, -1);
  ck_assert(tf_node_attr(t, "f")->u.f == 2.0);
  ck_assert_str_eq(tf_node_attr(t, "s")->u.s, "VALID");
  ck_assert_int_eq(tf_node_attr(t, "lt")->u.types[1], TF_STRING);
  ck_assert(tf_node_attr(t, "b")->u.b); /* default */
  ck_assert_str_eq(tf_node_device(t), "/job:worker");
  ck_assert_int_eq(tf_node_num_control_inputs(t), 1);
  const tf_attr_value *v = tf_node_attr(t, "_ints");
  ck_assert(v->type == TF_ATTR_INT && v->is_list && v->u.ints[1] == -2);
  v = tf_node_attr(t, "_floats");
  ck_assert(v->type == TF_ATTR_FLOAT && v->u.floats[0] == 1.0 &&
            isinf(v->u.floats[2]));
  v = tf_node_attr(t, "_strs");
  ck_assert(v->type == TF_ATTR_STRING && strcmp(v->u.strs[1], "1") == 0 &&
            strcmp(v->u.strs[2], "true") == 0);
  ck_assert_str_eq(tf_node_attr(t, "_word")->u.s, "hello");
  ck_assert_int_eq(tf_node_attr(t, "_num")->type, TF_ATTR_INT);
  ck_assert(tf_node_attr(t, "_flt")->u.f == 1000.0);
  ck_assert(!tf_node_attr(t, "_bool")->u.b);
  ck_assert_str_eq(tf_node_attr(t, "_bin")->u.s, "hi");
  ck_assert_int_eq(tf_node_attr(t, "_t")->u.t, TF_FLOAT16);
  ck_assert_int_eq(tf_node_attr(t, "_sh")->u.shape.rank, -1);
  v = tf_node_attr(t, "_el");
  ck_assert(v->is_list && v->type == TF_ATTR_INT && v->n == 0);
  ck_assert(*(uint64_t *)tf_node_attr(t, "_big")->u.tensor->data == UINT64_MAX);
  tf_complex64 cx = *(tf_complex64 *)tf_node_attr(t, "_cx")->u.tensor->data;
  ck_assert(cx.re == 1.5f && cx.im == -2.0f);
  int16_t *raw = tf_node_attr(t, "_raw")->u.tensor->data;
  ck_assert(raw[0] == 1 && raw[1] == 2);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_errors_name_the_problem) {
  static const char *head = "version: 1\nnodes:\n";
  static const struct { const char *body; const char *msg; } bad[] = {
      {"- {name: a, op: NoOp, attrs: {_x: !foo 3}}", "unknown tag !foo"},
      {"- {name: a, op: NoOp, attrs: {_x: {a: 1}}}", "has no attr type"},
      {"- {name: a, op: NoOp, attrs: {_x: []}}", "empty list needs a tag"},
      {"- {name: a, op: NoOp, attrs: {_x: [1, a]}}", "mixes"},
      {"- {name: a, op: NoOp, attrs: {_x: [[1]]}}", "cannot tell"},
      {"- {name: a, op: NoOp, attrs: {_x: ~}}", "has no attr type"},
      {"- {name: a, op: NoOp, attrs: {_x: !type float99}}", "not a dtype"},
      {"- {name: a, op: NoOp, attrs: {_x: !list(int) [a]}}", "not an int64"},
      {"- {name: a, op: NoOp, attrs: {_x: !list(int) 3}}", "must be a sequence"},
      {"- {name: a, op: NoOp, attrs: {_x: !shape [1, -2]}}", "dim 1"},
      {"- {name: a, op: NoOp, attrs: {_x: !shape [1,1,1,1,1,1,1,1,1]}}",
       "at most 8"},
      {"- {name: a, op: NoOp, attrs: {_x: !int [1]}}", "must be a scalar"},
      {"- {name: a, op: NoOp, attrs: {_x: !bool yes}}", "not true or false"},
      {"- {name: a, op: NoOp, attrs: {_x: !int 99999999999999999999}}",
       "not an int64"},
      {"- {name: a, op: NoOp, attrs: {_x: !!binary AA==}}", "NUL"},
      {"- {name: a, op: NoOp, attrs: {_x: !!binary A===}}", "base64"},
      {"- {name: a, op: NoOp, attrs: {_x: 1, _x: 2}}", "twice"},
      {"- {name: a, op: NoOp, attrs: {_x: !tensor {dtype: int8, shape: [1], "
       "values: [300]}}}", "not a int8 value"},
      {"- {name: a, op: NoOp, attrs: {_x: !tensor {dtype: int8, shape: [2], "
       "values: [1]}}}", "sequence of 2"},
      {"- {name: a, op: NoOp, attrs: {_x: !tensor {dtype: int8, shape: [-1], "
       "values: []}}}", "dim 0 must be an int >= 0"},
      {"- {name: a, op: NoOp, attrs: {_x: !tensor {dtype: int8, shape: [], "
       "values: [1], data: AQ==}}}", "one of values, data"},
      {"- {name: a, op: NoOp, attrs: {_x: !tensor {dtype: int8, shape: [2], "
       "data: !!binary AQ==}}}", "holds 1 bytes"},
      {"- {name: a, op: NoOp, attrs: {_x: !tensor {dtype: int8, shape: [1000000], "
       "data: !!binary AQ==}}}", "must be !!binary holding 1000000"},
      {"- {name: a, op: NoOp, attrs: {_x: !tensor {dtype: string, shape: [], "
       "data: !!binary AQ==}}}", "take 'values'"},
      {"- {name: a, op: NoOp, attrs: {_x: !tensor {dtype: bool, shape: [], "
       "data: !!binary Ag==}}}", "byte value 2"},
      {"- {name: a, op: NoOp, attrs: {_x: !tensor {dtype: complex64, "
       "shape: [1], values: [1]}}}", "pair"},
      {"- {name: a, op: NoOp, attrs: {_x: !tensor {dtype: foo, shape: [], "
       "values: [1]}}}", "not a dtype"},
      {"- {name: a, op: NoOp, attrs: {_x: !tensor {dtype: int8, shape: [], "
       "values: [1], extra: 1}}}", "unknown key 'extra'"},
      {"- {name: a, op: NoOp, attrs: {_x: !tensor {dtype: float32, shape: [1], "
       "values: [x]}}}", "not a float32 value"},
      {"- {name: a, op: NoOp, attrs: {_x: !tensor {dtype: int8, shape: "
       "[4294967296, 4294967296], values: []}}}", "int64"},
      {"- {name: a, op: NoOp, attrs: [1]}", "attrs must be a mapping"},
      {"- {name: a, op: NoOp, inputs: a}", "inputs must be a sequence"},
      {"- {name: a, op: NoOp, inputs: [[a]]}", "an input must be a scalar"},
      {"- {name: a, op: NoOp, inputs: [ghost]}", "ghost"},
      {"- {name: a, op: NoOp, color: red}", "unknown key 'color'"},
      {"- {name: a, op: NoOp, name: b}", "repeated key 'name'"},
      {"- {name: a}", "'name' and 'op' are required"},
      {"- {name: [a], op: NoOp}", "name must be a scalar"},
      {"- {name: \"a\\0b\", op: NoOp}", "NUL"},
      {"- {name: a, op: NoSuchOp}", "not registered"},
      {"- {name: a, op: Placeholder}", "missing attr 'dtype'"},
      {"- {name: a, op: Placeholder, attrs: {dtype: 3}}", "not a dtype"},
      {"- {name: a, op: NoOp}\n- {name: a, op: NoOp}", "duplicate"},
      {"- {name: a, op: NoOp}\n- {name: b, op: NoSuchOp}",
       "line 4 column 3: node 'b' (NoSuchOp)"},
      {"- 7", "expected a mapping"},
  };
  char text[1024];
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    snprintf(text, sizeof text, "%s%s\n", head, bad[i].body);
    expect_error(text, bad[i].msg);
  }
  expect_error("", "no YAML document");
  expect_error("# only a comment\n", "no YAML document");
  expect_error("version: 1\nnodes: []\n---\nversion: 1\n", "more than one");
  expect_error("version: 1\nnodes: &a []\nx: *a\n", "aliases");
  expect_error("version: 2\nnodes: []\n", "'version' must be 1");
  expect_error("nodes: []\n", "'version' must be 1");
  expect_error("version: '1'\nnodes: []\n", "not the string '1'");
  expect_error("version: 1\n", "'nodes' must be a sequence");
  expect_error("version: 1\nnodes: {}\n", "'nodes' must be a sequence");
  expect_error("version: 1\nnodes: []\nfoo: 1\n", "unknown key 'foo'");
  expect_error("[1, 2]\n", "expected a mapping");
  expect_error("version: 1\nnodes: [\n", "line 3");
  expect_error("version: 1\nnodes:\n- name: a\n\top: NoOp\n", "line 4");
  expect_error("version: 1\nnodes: []\n_: \"\xff\"\n", "UTF-8");
  char deep[300];
  memset(deep, '[', 120);
  memset(deep + 120, ']', 120);
  deep[240] = '\0';
  expect_error(deep, "too deep");
  /* The error names the line of the offending value. */
  expect_error("version: 1\nnodes:\n- name: a\n  op: NoOp\n  attrs:\n"
               "    _x: !type nope\n", "line 6 column 9");
  /* Empty nodes may be written as null. */
  tf_graph *g = from_yaml_ok("version: 1\nnodes:\n");
  ck_assert_int_eq(tf_graph_num_nodes(g), 0);
  tf_graph_free(g);
}
END_TEST

/* Every prefix of a valid text either decodes (a shorter document can be
 * valid YAML) or is rejected; nothing crashes or leaks. */
START_TEST(test_truncated_at_every_offset) {
  tf_graph *g = st_rich_graph();
  size_t len;
  char *text = to_yaml(g, &len);
  int rejected = 0;
  for (size_t cut = 0; cut < len; cut++) {
    char *copy = malloc(cut ? cut : 1); /* no NUL: the length is the end */
    memcpy(copy, text, cut);
    tf_graph *h = tf_graph_new();
    tf_status st;
    tf_code c = tf_graph_from_yaml(h, copy, cut, &st);
    if (c != TF_OK) {
      st_assert_rejected(c, st);
      ck_assert_int_eq(tf_graph_num_nodes(h), 0);
      rejected++;
    }
    tf_graph_free(h);
    free(copy);
  }
  ck_assert_int_gt(rejected, (int)len / 2);
  free(text);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_random_byte_flips) {
  tf_graph *g = st_rich_graph();
  size_t len;
  char *text = to_yaml(g, &len);
  int rejected = 0;
  for (int it = 0; it < 3000; it++) {
    char *buf = malloc(len);
    memcpy(buf, text, len);
    for (int f = 0; f < 1 + (int)(tt_rand_u64() % 3); f++) {
      buf[tt_rand_u64() % len] ^= (char)(1u << (tt_rand_u64() % 8));
    }
    tf_graph *h = tf_graph_new();
    tf_status st;
    tf_code c = tf_graph_from_yaml(h, buf, len, &st);
    if (c != TF_OK) {
      st_assert_rejected(c, st);
      ck_assert_int_eq(tf_graph_num_nodes(h), 0);
      rejected++;
    }
    tf_graph_free(h);
    free(buf);
  }
  ck_assert_int_gt(rejected, 1000);
  free(text);
  tf_graph_free(g);
}
END_TEST

/* PyYAML (another YAML implementation, YAML 1.1 rules) reads our text with
 * the same core types: names and quoted strings stay strings, ints and
 * floats stay numbers. */
START_TEST(test_pyyaml_reads_ours) {
  if (system("/usr/bin/python3 -c 'import yaml' >/dev/null 2>&1") != 0) {
    fprintf(stderr, "PyYAML not available: interop test skipped\n");
    return;
  }
  tf_graph *g = st_rich_graph();
  size_t len;
  char *text = to_yaml(g, &len);
  char path[] = "/tmp/yaml_test_XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(write(fd, text, len), (ssize_t)len);
  close(fd);
  char cmd[2048];
  snprintf(cmd, sizeof cmd,
           "/usr/bin/python3 - %s <<'EOF'\n"
           "import sys, math, yaml\n"
           "class L(yaml.SafeLoader): pass\n"
           "L.add_multi_constructor('!', lambda l, s, n: (s, "
           "l.construct_sequence(n) if isinstance(n, yaml.SequenceNode) else "
           "l.construct_mapping(n) if isinstance(n, yaml.MappingNode) else "
           "l.construct_scalar(n)))\n"
           "d = yaml.load(open(sys.argv[1]), Loader=L)\n"
           "assert d['version'] == 1\n"
           "names = [n['name'] for n in d['nodes']]\n"
           "assert names == ['x', 'scope/u', 'c', 'strings', 'init', 'y', "
           "'Identity', 'after'], names\n"
           "y = d['nodes'][5]['attrs']\n"
           "assert y['N'] == 3 and y['i'] == -2**63 and y['b'] is True\n"
           "assert y['f'] == 0.0 and math.copysign(1, y['f']) < 0\n"
           "assert y['s'] == 'VALID \"quoted\"\\n'\n"
           "assert y['T'] == ('type', 'float32')\n"
           "assert y['lf'] == ('list(float)', [1e300, -math.inf, 0.1, 5e-324])\n"
           "a = d['nodes'][7]['attrs']\n"
           "assert a['_true'] == 'true' and a['_num'] == '12'\n"
           "assert math.isnan(a['_nan'])\n"
           "assert d['nodes'][5]['inputs'][-1] == '^strings'\n"
           "EOF",
           path);
  int rc = system(cmd);
  unlink(path);
  ck_assert_msg(rc == 0, "PyYAML check failed on:\n%s", text);
  free(text);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("graph_yaml");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_rich_graph_round_trip);
  tcase_add_test(tc, test_random_graphs_round_trip);
  tcase_add_test(tc, test_exact_text);
  tcase_add_test(tc, test_every_half_float_pattern);
  tcase_add_test(tc, test_random_float_bits);
  tcase_add_test(tc, test_tensors_every_dtype);
  tcase_add_test(tc, test_hand_written);
  tcase_add_test(tc, test_errors_name_the_problem);
  tcase_add_test(tc, test_truncated_at_every_offset);
  tcase_add_test(tc, test_random_byte_flips);
  tcase_add_test(tc, test_pyyaml_reads_ours);
  suite_add_tcase(s, tc);
  return s;
}
