/* graph_yaml_read_test.c: the YAML graph reader (lib/core/serialize/graph_yaml_read.c)
 * through tf_graph_from_yaml, on hand-written documents:
 *
 *  - where errors point: libyaml's syntax errors and the reader's own
 *    schema errors give "graph yaml: line L column C: <where>: <what>",
 *    with L and C worked out by hand here (flow and block style, the n-th
 *    node of a growing document, CRLF line ends), and <where> naming the
 *    top level, node i (before its name is known), node 'x' or node 'x'
 *    attr 'y'; encoding errors (libyaml's reader gives only a byte offset)
 *    at the line and column worked out by hand, and at the same place
 *    libyaml's own marks put a syntax error at that character (multibyte
 *    characters, BOMs, CR LF, CR, NEL, LS and PS line breaks, UTF-16);
 *    errors from tf_graph_import (unknown op or input, attr of the wrong
 *    type, duplicate or invalid name, arity, dtype, cycle) at the node's
 *    mapping;
 *  - the nesting limit exactly at its boundary, and the input length
 *    honoured (no NUL needed, NULL text);
 *  - how untagged and tagged values are typed (core schema, the op's
 *    declaration, !!str/!!int/!!float/!!bool/! and the list tags), and
 *    tensor values of every dtype at their limits, compared with the C
 *    conversions (float16 through the double, bfloat16 through the float),
 *    plus !!binary data split over lines;
 *  - a failed read leaves the graph as it was; a good one may use nodes
 *    already in it.
 * Values are compared exactly. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test/unit/core/serialize/serialize_testlib.h"

static tf_code read_yaml(tf_graph *g, const char *text, tf_status *st) {
  tf_status_init(st);
  return tf_graph_from_yaml(g, text, strlen(text), st);
}

/* Reads text into a fresh graph expecting INVALID_ARGUMENT with exactly
 * want as the message. */
static void expect_msg(const char *text, const char *want) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_code c = read_yaml(g, text, &st);
  ck_assert_msg(c == TF_INVALID_ARGUMENT, "%s: %s\n--- text:\n%s",
                tf_code_name(c), st.msg, text);
  ck_assert_msg(strcmp(st.msg, want) == 0, "got  '%s'\nwant '%s'\n--- text:\n%s",
                st.msg, want, text);
  ck_assert_int_eq(tf_graph_num_nodes(g), 0);
  tf_graph_free(g);
}

/* The same, for a message that starts with prefix and contains needle. */
static void expect_prefix(const char *text, const char *prefix,
                          const char *needle) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_code c = read_yaml(g, text, &st);
  ck_assert_msg(c == TF_INVALID_ARGUMENT, "%s: %s", tf_code_name(c), st.msg);
  ck_assert_msg(strncmp(st.msg, prefix, strlen(prefix)) == 0 &&
                    strstr(st.msg, needle) != NULL,
                "'%s' should start '%s' and hold '%s'", st.msg, prefix, needle);
  ck_assert_int_eq(tf_graph_num_nodes(g), 0);
  tf_graph_free(g);
}

/* expect_msg for a text of n bytes (it may hold NULs). */
static void expect_msg_n(const char *text, size_t n, const char *want) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_status_init(&st);
  tf_code c = tf_graph_from_yaml(g, text, n, &st);
  ck_assert_msg(c == TF_INVALID_ARGUMENT, "%s: %s", tf_code_name(c), st.msg);
  ck_assert_msg(strcmp(st.msg, want) == 0, "got  '%s'\nwant '%s'", st.msg,
                want);
  tf_graph_free(g);
}

static tf_graph *read_ok(const char *text) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  ck_assert_msg(read_yaml(g, text, &st) == TF_OK, "%s\n--- text:\n%s", st.msg,
                text);
  return g;
}

#define HEAD "version: 1\nnodes:\n"

/* ---- where errors point ---------------------------------------------------- */

/* libyaml's own errors: its mark, its problem and (in parentheses) its
 * context. */
START_TEST(test_syntax_errors) {
  expect_prefix("version: 1\nnodes: [\n", "graph yaml: line 3 column 1: ",
                "did not find expected node content (while parsing a flow node)");
  expect_prefix(HEAD "- name: a\n\top: NoOp\n", "graph yaml: line 4 column 1: ",
                "found a tab character that violates indentation");
  expect_msg("a: b: c\n", "graph yaml: line 1 column 5: mapping values are "
             "not allowed in this context");
  expect_prefix("version: 1\nnodes: [a, b\n", "graph yaml: line 3 column 1: ",
                "(while parsing a flow sequence)");
  expect_prefix("version: 1\nnodes: []\nx: \"open\n", "graph yaml: line 4 "
                "column 1: ", "(while scanning a quoted scalar)");
  expect_prefix("version: 1\nnodes: []\nx: !<tag\n", "graph yaml: line 3 ", "");
}
END_TEST

/* Encoding errors come from libyaml's reader, which reports a byte offset
 * only; the line and column are counted from it in characters, after any
 * byte order mark. */
START_TEST(test_encoding_error_positions) {
  /* A trailing octet is reported at its own offset, the column is that of
   * the character it belongs to. */
  expect_msg("version: 1\nnodes: []\n_: \"\xc3\x28\"\n",
             "graph yaml: line 3 column 5: invalid trailing UTF-8 octet (0x28 "
             "at byte offset 26)");
  /* "\xc3\xa9" is one character. */
  expect_msg("version: 1\nnodes: []\n_: \"\xc3\xa9\xff\"\n",
             "graph yaml: line 3 column 6: invalid leading UTF-8 octet (0xff "
             "at byte offset 27)");
  expect_msg("version: 1\r\nnodes: []\r\n_: \xff\r\n",
             "graph yaml: line 3 column 4: invalid leading UTF-8 octet (0xff "
             "at byte offset 26)");
  expect_msg("\xef\xbb\xbfversion: \xff",
             "graph yaml: line 1 column 10: invalid leading UTF-8 octet (0xff "
             "at byte offset 12)");
  expect_msg("version: 1\nnodes: []\n_: a\x01" "b\n",
             "graph yaml: line 3 column 5: control characters are not allowed "
             "(U+0001 at byte offset 25)");
  expect_msg("version: 1\n_: \xe2\x82",
             "graph yaml: line 2 column 4: incomplete UTF-8 octet sequence "
             "(byte offset 14)");
  expect_msg_n("version: 1\n_: a\0b\n", 18,
               "graph yaml: line 2 column 5: control characters are not "
               "allowed (U+0000 at byte offset 15)");
  /* UTF-16 (by its byte order mark): two bytes a character. */
  expect_msg_n("\xff\xfev\0\n\0a\0\x00\xdc", 10,
               "graph yaml: line 2 column 2: unexpected low surrogate area "
               "(U+DC00 at byte offset 8)");
  expect_msg_n("\xfe\xff\0v\0\n\0a\xdc\x00", 10,
               "graph yaml: line 2 column 2: unexpected low surrogate area "
               "(U+DC00 at byte offset 8)");
}
END_TEST

/* The line and column of "line L column C" in msg, or (0, 0). */
static void position_of(const char *msg, int *line, int *col) {
  *line = *col = 0;
  sscanf(msg, "graph yaml: line %d column %d", line, col);
}

/* A bad byte sits where libyaml's scanner would report a character that
 * cannot start a token: both errors name the same line and column, after
 * every kind of line break libyaml knows and characters of every width. */
START_TEST(test_encoding_error_matches_libyaml_marks) {
  static const struct { const char *prefix; int line, col; } cases[] = {
      {"", 1, 4},
      {"version: 1\nnodes: []\n", 3, 4},
      {"\xef\xbb\xbf# a byte order mark\n", 2, 4},
      {"# caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\r\n# crlf\r\n", 3, 4},
      {"# cr\r# cr\r", 3, 4},
      {"# nel\xc2\x85# ls\xe2\x80\xa8# ps\xe2\x80\xa9", 4, 4},
      {"x: \"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"\n", 2, 4},
      {"\xef\xbb\xbfx: \xe4\xb8\xad\n", 2, 4},
      {"x: [a,\n    b]\n", 3, 4},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char text[256];
    tf_status st;
    int line[2], col[2];
    for (int k = 0; k < 2; k++) {
      snprintf(text, sizeof text, "%s_: %s\n", cases[i].prefix,
               k == 0 ? "@" : "\xff");
      tf_graph *g = tf_graph_new();
      ck_assert_int_eq(read_yaml(g, text, &st), TF_INVALID_ARGUMENT);
      tf_graph_free(g);
      ck_assert_msg(strstr(st.msg, k == 0 ? "cannot start any token"
                                          : "invalid leading UTF-8 octet"),
                    "case %zu: %s", i, st.msg);
      position_of(st.msg, &line[k], &col[k]);
    }
    ck_assert_msg(line[0] == cases[i].line && col[0] == cases[i].col,
                  "case %zu: libyaml says line %d column %d", i, line[0],
                  col[0]);
    ck_assert_msg(line[1] == line[0] && col[1] == col[0],
                  "case %zu: line %d column %d, libyaml line %d column %d", i,
                  line[1], col[1], line[0], col[0]);
  }
}
END_TEST

/* The reader's own errors, each with its position and context. Columns in
 * the flow lines count from the "- " at column 1: "{" is column 3, the
 * value of "_x: " inside "attrs: {" starts at column 35. */
START_TEST(test_schema_errors_exact) {
  expect_msg(HEAD "- {name: a, op: NoOp, attrs: {_x: !type nope}}\n",
             "graph yaml: line 3 column 35: node 'a' attr '_x': 'nope' is not "
             "a dtype");
  expect_msg(HEAD "- {name: a, op: NoOp}\n- {op: NoOp}\n",
             "graph yaml: line 4 column 3: node 1: 'name' and 'op' are "
             "required");
  expect_msg(HEAD "- {name: a, op: NoOp, device: [x]}\n",
             "graph yaml: line 3 column 31: node 'a': device must be a scalar, "
             "got a sequence");
  expect_msg(HEAD "- {name: a, op: NoOp, attrs: {[k]: 1}}\n",
             "graph yaml: line 3 column 31: node 'a': an attr name must be a "
             "scalar, got a sequence");
  expect_msg(HEAD "- {name: a, op: NoOp, attrs: {_x: !!float abc}}\n",
             "graph yaml: line 3 column 35: node 'a' attr '_x': 'abc' is not a "
             "float");
  expect_msg(HEAD "- {name: a, op: NoOp, attrs: {_x: !list(int) [1, !!str 2]}}\n",
             "graph yaml: line 3 column 50: node 'a' attr '_x': tag "
             "tag:yaml.org,2002:str does not fit a int value");
  expect_msg(HEAD "- {name: a, op: NoOp, attrs: {_x: !tensor {dtype: int8, "
             "shape: [2], values: [1, [2]]}}}\n",
             "graph yaml: line 3 column 81: node 'a' attr '_x': a int8 element "
             "must be a scalar");
  expect_msg(HEAD "- {name: a, op: NoOp, attrs: {_x: !tensor {dtype: int8, "
             "shape: [2], values: [1, !!int 2]}}}\n",
             "graph yaml: line 3 column 81: node 'a' attr '_x': tensor "
             "elements take no tag");
  expect_msg(HEAD "- {name: a, op: NoOp, attrs: {_x: !tensor [1]}}\n",
             "graph yaml: line 3 column 35: node 'a' attr '_x': expected a "
             "mapping, got a sequence");
  /* Block style: line and column of the value itself. */
  expect_msg(HEAD "- name: a\n  op: NoOp\n- name: b\n  op: NoOp\n"
             "  attrs: {_x: [1, a]}\n",
             "graph yaml: line 7 column 19: node 'b' attr '_x': list mixes int "
             "and string elements");
  expect_msg(HEAD "  - name: a\n    op: NoOp\n    inputs:\n      - [x]\n",
             "graph yaml: line 6 column 9: node 'a': an input must be a "
             "scalar, got a sequence");
  /* Top level. */
  expect_msg("version: 1\nversion: 1\nnodes: []\n",
             "graph yaml: line 2 column 1: top level: repeated key 'version'");
  expect_msg("{version: 1, nodes: [], x: }\n",
             "graph yaml: line 1 column 25: top level: unknown key 'x'");
  expect_msg("[a]: 1\n", "graph yaml: line 1 column 1: top level: unknown key "
             "'(collection)'");
  expect_msg("version: 1.0\nnodes: []\n",
             "graph yaml: line 1 column 10: top level: 'version' must be 1");
  expect_msg("version: !!float 1\nnodes: []\n",
             "graph yaml: line 1 column 10: top level: 'version' must be 1");
  /* A string is not the version, whatever its text. */
  expect_msg("version: '1'\nnodes: []\n",
             "graph yaml: line 1 column 10: top level: 'version' must be the "
             "integer 1, not the string '1'");
  expect_msg("nodes: []\nversion: \"1\"\n",
             "graph yaml: line 2 column 10: top level: 'version' must be the "
             "integer 1, not the string '1'");
  expect_msg("version: !!str 1\nnodes: []\n",
             "graph yaml: line 1 column 10: top level: 'version' must be the "
             "integer 1, not the string '1'");
  expect_msg("version: |\n  1\nnodes: []\n",
             "graph yaml: line 1 column 10: top level: 'version' must be the "
             "integer 1, not the string '1\n'");
  expect_msg("\n\nnodes: []\n",
             "graph yaml: line 3 column 1: top level: 'version' must be 1");
  expect_msg("version: 1\nnodes: 3\n",
             "graph yaml: line 2 column 8: top level: 'nodes' must be a "
             "sequence");
}
END_TEST

/* The bad value sits after k good nodes of two lines each: its line moves
 * with k; the same text with CRLF line ends gives the same positions. */
START_TEST(test_error_line_tracks_node) {
  char text[2048], crlf[4096], want[256];
  for (int k = 0; k < 12; k++) {
    int n = snprintf(text, sizeof text, HEAD);
    for (int i = 0; i < k; i++) {
      n += snprintf(text + n, sizeof text - (size_t)n,
                    "- name: n%d\n  op: NoOp\n", i);
    }
    snprintf(text + n, sizeof text - (size_t)n,
             "- name: bad\n  op: NoOp\n  # a comment line\n  attrs:\n"
             "    _y: 1\n    _x: !type nope\n");
    snprintf(want, sizeof want, "graph yaml: line %d column 9: node 'bad' "
             "attr '_x': 'nope' is not a dtype", 2 + 2 * k + 6);
    expect_msg(text, want);
    size_t c = 0;
    for (const char *p = text; *p; p++) {
      if (*p == '\n') {
        crlf[c++] = '\r';
      }
      crlf[c++] = *p;
    }
    crlf[c] = '\0';
    expect_msg(crlf, want);
  }
}
END_TEST

/* Errors tf_graph_import finds in the decoded nodes name the node; the
 * reader puts the line and column of that node's mapping in front. */
START_TEST(test_import_error_positions) {
  expect_msg(HEAD "- {name: a, op: NoOp}\n- name: mm\n  op: NoSuchOp\n",
             "graph yaml: line 4 column 3: node 'mm' (NoSuchOp): op type "
             "'NoSuchOp' is not registered");
  expect_msg(HEAD "- {name: a, op: NoOp}\n-   {name: w, op: Placeholder, "
             "attrs: {dtype: !!int 3}}\n",
             "graph yaml: line 4 column 5: node 'w' (Placeholder): attr "
             "'dtype' must be type, got int");
  expect_msg(HEAD "- {name: a, op: Placeholder}\n",
             "graph yaml: line 3 column 3: node 'a' (Placeholder): missing "
             "attr 'dtype' (type)");
  expect_msg(HEAD "- {name: a, op: NoOp, inputs: [ghost]}\n",
             "graph yaml: line 3 column 3: node 'a': input 'ghost' names a "
             "node that does not exist");
  expect_msg(HEAD "- {name: a, op: NoOp}\n- {name: '', op: NoOp}\n",
             "graph yaml: line 4 column 3: node 1 has an invalid name '': "
             "the node name is empty");
  /* A quote inside the name: not a valid node name, reported at the node. */
  expect_msg(HEAD "- {name: a, op: NoOp}\n- {name: \"it's\", op: NoSuchOp}\n",
             "graph yaml: line 4 column 3: node 1 has an invalid name 'it's': "
             "''' at offset 2 is not allowed (a node name is "
             "[A-Za-z0-9.][A-Za-z0-9_.\\-/>]*)");
  expect_msg(HEAD "- {name: a, op: NoOp}\n- {name: \"a' (NoOp\", op: X}\n",
             "graph yaml: line 4 column 3: node 1 has an invalid name "
             "'a' (NoOp': ''' at offset 1 is not allowed (a node name is "
             "[A-Za-z0-9.][A-Za-z0-9_.\\-/>]*)");
  /* A name used twice in the document: both places. */
  expect_msg(HEAD "- {name: a, op: NoOp}\n- {name: b, op: NoOp}\n"
             "- name: a\n  op: NoOp\n",
             "graph yaml: line 5 column 3: node 'a' (NoOp): duplicate node "
             "name; the first is at line 3 column 3");
  /* Arity, dtype and shape checks of the op, and a cycle. */
  const char *p = HEAD "- {name: p, op: Placeholder, attrs: {dtype: float32}}\n"
                       "- {name: q, op: Placeholder, attrs: {dtype: int32}}\n";
  char text[512];
  snprintf(text, sizeof text, "%s- name: mm\n  op: MatMul\n  inputs: [p]\n", p);
  expect_prefix(text, "graph yaml: line 5 column 3: node 'mm' (MatMul): ",
                "input");
  snprintf(text, sizeof text, "%s- name: mm\n  op: MatMul\n  inputs: [p, q]\n",
           p);
  expect_prefix(text, "graph yaml: line 5 column 3: node 'mm' (MatMul): ",
                "int32");
  expect_prefix(HEAD "- {name: a, op: NoOp}\n"
                "- {name: b, op: Identity, inputs: [c]}\n"
                "- {name: c, op: Identity, inputs: [b]}\n",
                "graph yaml: line 4 column 3: node 'b' (Identity): ", "cycle");
  /* The position follows the node down a growing document. */
  char want[160];
  for (int k = 0; k < 8; k++) {
    int n = snprintf(text, sizeof text, HEAD);
    for (int i = 0; i < k; i++) {
      n += snprintf(text + n, sizeof text - (size_t)n,
                    "- name: n%d\n  op: NoOp\n", i);
    }
    snprintf(text + n, sizeof text - (size_t)n,
             "# comment\n-\n    name: bad\n    op: NoOp\n    inputs: [n9]\n");
    snprintf(want, sizeof want, "graph yaml: line %d column 5: node 'bad': "
             "input 'n9' names a node that does not exist", 2 * k + 5);
    expect_msg(text, want);
  }
}
END_TEST

/* Collections nest at most 32 deep (the root mapping counts as the first):
 * 31 brackets inside it still read (and then fail on the unknown key), 32
 * stop at the innermost bracket. */
START_TEST(test_nesting_limit_boundary) {
  char text[256];
  for (int k = 31; k <= 32; k++) {
    int n = snprintf(text, sizeof text, "version: 1\nnodes: []\n_x: ");
    for (int i = 0; i < k; i++) {
      text[n++] = '[';
    }
    for (int i = 0; i < k; i++) {
      text[n++] = ']';
    }
    text[n++] = '\n';
    text[n] = '\0';
    expect_msg(text, k == 31
                         ? "graph yaml: line 3 column 1: top level: unknown key "
                           "'_x'"
                         : "graph yaml: line 3 column 36: nesting is too deep");
  }
}
END_TEST

/* Only len bytes are read: no NUL is needed and what follows is ignored. */
START_TEST(test_input_length) {
  const char *text = "version: 1\nnodes: [{name: a, op: NoOp}]\nGARBAGE: [";
  size_t len = strlen("version: 1\nnodes: [{name: a, op: NoOp}]\n");
  tf_graph *g = tf_graph_new();
  tf_status st;
  ck_assert_msg(tf_graph_from_yaml(g, text, len, &st) == TF_OK, "%s", st.msg);
  ck_assert_int_eq(tf_graph_num_nodes(g), 1);
  ck_assert_int_eq(tf_graph_from_yaml(g, text, strlen(text), &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_int_eq(tf_graph_num_nodes(g), 1);
  ck_assert_int_eq(tf_graph_from_yaml(g, NULL, 0, &st), TF_INVALID_ARGUMENT);
  ck_assert_str_eq(st.msg, "graph yaml: line 1 column 1: the text holds no "
                           "YAML document");
  ck_assert_int_eq(tf_graph_from_yaml(g, text, 0, &st), TF_INVALID_ARGUMENT);
  ck_assert_str_eq(st.msg, "graph yaml: line 1 column 1: the text holds no "
                           "YAML document");
  tf_graph_free(g);
}
END_TEST

/* ---- typing ---------------------------------------------------------------- */

static const tf_attr_value *attr(const tf_node *n, const char *name,
                                 tf_attr_type t, bool is_list) {
  const tf_attr_value *v = tf_node_attr(n, name);
  ck_assert_msg(v != NULL, "no attr %s", name);
  ck_assert_msg(v->type == t && v->is_list == is_list, "%s is %s, want %s",
                name, tf_attr_type_name(v->type, v->is_list),
                tf_attr_type_name(t, is_list));
  return v;
}

START_TEST(test_tags_and_core_schema) {
  tf_graph *g = read_ok(
      HEAD "- name: a\n  op: NoOp\n  attrs:\n"
      "    _float_tag_on_int: !!float 3\n"
      "    _str_tag: !!str 3\n"
      "    _nonspecific: ! 3\n"
      "    _int_tag: !!int 7\n"
      "    _bool_tag: !!bool true\n"
      "    _single: '12'\n"
      "    _double: \"12\"\n"
      "    _plain_int: 12\n"
      "    _plain_float: -1.5e3\n"
      "    _plain_inf: .inf\n"
      "    _plain_bool: False\n"
      "    _word: VALID\n"
      "    _widened: [1, 2.5]\n"
      "    _bools: [true, false]\n"
      "    _strs: [\"1\", two]\n"
      "    _floats: !list(float) [1, !!int 2, 2.5]\n"
      "    _shapes: !list(shape) [[1, -1], ~, unknown, []]\n"
      "    _types: !list(type) [int8, half, double]\n"
      "    _unknown: !shape ~\n"
      "    _block: |\n"
      "      two\n"
      "      lines\n");
  tf_node *n = tf_graph_find(g, "a");
  ck_assert(attr(n, "_float_tag_on_int", TF_ATTR_FLOAT, false)->u.f == 3.0);
  ck_assert_str_eq(attr(n, "_str_tag", TF_ATTR_STRING, false)->u.s, "3");
  ck_assert_str_eq(attr(n, "_nonspecific", TF_ATTR_STRING, false)->u.s, "3");
  ck_assert_int_eq(attr(n, "_int_tag", TF_ATTR_INT, false)->u.i, 7);
  ck_assert(attr(n, "_bool_tag", TF_ATTR_BOOL, false)->u.b);
  ck_assert_str_eq(attr(n, "_single", TF_ATTR_STRING, false)->u.s, "12");
  ck_assert_str_eq(attr(n, "_double", TF_ATTR_STRING, false)->u.s, "12");
  ck_assert_int_eq(attr(n, "_plain_int", TF_ATTR_INT, false)->u.i, 12);
  ck_assert(attr(n, "_plain_float", TF_ATTR_FLOAT, false)->u.f == -1500.0);
  ck_assert(isinf(attr(n, "_plain_inf", TF_ATTR_FLOAT, false)->u.f));
  ck_assert(!attr(n, "_plain_bool", TF_ATTR_BOOL, false)->u.b);
  ck_assert_str_eq(attr(n, "_word", TF_ATTR_STRING, false)->u.s, "VALID");
  const tf_attr_value *v = attr(n, "_widened", TF_ATTR_FLOAT, true);
  ck_assert(v->n == 2 && v->u.floats[0] == 1.0 && v->u.floats[1] == 2.5);
  v = attr(n, "_bools", TF_ATTR_BOOL, true);
  ck_assert(v->n == 2 && v->u.bools[0] && !v->u.bools[1]);
  v = attr(n, "_strs", TF_ATTR_STRING, true);
  ck_assert(v->n == 2 && !strcmp(v->u.strs[0], "1") && !strcmp(v->u.strs[1], "two"));
  v = attr(n, "_floats", TF_ATTR_FLOAT, true);
  ck_assert(v->n == 3 && v->u.floats[1] == 2.0 && v->u.floats[2] == 2.5);
  v = attr(n, "_shapes", TF_ATTR_SHAPE, true);
  ck_assert_int_eq(v->n, 4);
  ck_assert(tf_shape_equal(&v->u.shapes[0], &(tf_shape){2, {1, -1}}));
  ck_assert_int_eq(v->u.shapes[1].rank, TF_UNKNOWN_RANK);
  ck_assert_int_eq(v->u.shapes[2].rank, TF_UNKNOWN_RANK);
  ck_assert_int_eq(v->u.shapes[3].rank, 0);
  v = attr(n, "_types", TF_ATTR_TYPE, true);
  ck_assert(v->n == 3 && v->u.types[0] == TF_INT8 && v->u.types[1] == TF_FLOAT16 &&
            v->u.types[2] == TF_FLOAT64);
  ck_assert_int_eq(attr(n, "_unknown", TF_ATTR_SHAPE, false)->u.shape.rank,
                   TF_UNKNOWN_RANK);
  ck_assert_str_eq(attr(n, "_block", TF_ATTR_STRING, false)->u.s, "two\nlines\n");
  tf_graph_free(g);
}
END_TEST

/* Untagged values of declared attrs take the declared type; a value that
 * does not fit it is an error naming the attr. */
START_TEST(test_declared_types) {
  tf_graph *g = read_ok(
      HEAD "- {name: p, op: Placeholder, attrs: {dtype: int32, shape: [3]}}\n"
      "- name: t\n  op: SerdeTest\n  inputs: [p, p]\n  attrs:\n"
      "    i: 5\n    f: -7\n    b: false\n    s: '12'\n    sh: [3, -1]\n"
      "    te: {dtype: int32, shape: [], values: [9]}\n"
      "    li: [4, 5]\n    lf: [1, 2]\n    lb: [true]\n    ls: [x, 1]\n"
      "    lt: [int8]\n    lsh: [[], unknown]\n"
      "    lte: [{dtype: bool, shape: [1], values: [true]}]\n");
  tf_node *t = tf_graph_find(g, "t");
  ck_assert_int_eq(attr(t, "i", TF_ATTR_INT, false)->u.i, 5);
  ck_assert(attr(t, "f", TF_ATTR_FLOAT, false)->u.f == -7.0);
  ck_assert(!attr(t, "b", TF_ATTR_BOOL, false)->u.b);
  ck_assert_str_eq(attr(t, "s", TF_ATTR_STRING, false)->u.s, "12");
  ck_assert(tf_shape_equal(&attr(t, "sh", TF_ATTR_SHAPE, false)->u.shape,
                           &(tf_shape){2, {3, -1}}));
  ck_assert_int_eq(*(int32_t *)attr(t, "te", TF_ATTR_TENSOR, false)->u.tensor->data, 9);
  ck_assert_int_eq(attr(t, "li", TF_ATTR_INT, true)->u.ints[1], 5);
  ck_assert(attr(t, "lf", TF_ATTR_FLOAT, true)->u.floats[1] == 2.0);
  ck_assert(attr(t, "lb", TF_ATTR_BOOL, true)->u.bools[0]);
  ck_assert_str_eq(attr(t, "ls", TF_ATTR_STRING, true)->u.strs[1], "1");
  ck_assert_int_eq(attr(t, "lt", TF_ATTR_TYPE, true)->u.types[0], TF_INT8);
  ck_assert_int_eq(attr(t, "lsh", TF_ATTR_SHAPE, true)->u.shapes[1].rank,
                   TF_UNKNOWN_RANK);
  ck_assert(*(bool *)attr(t, "lte", TF_ATTR_TENSOR, true)->u.tensors[0]->data);
  ck_assert_int_eq(tf_node_output_type(t, 0), TF_INT32);
  tf_graph_free(g);
  static const struct { const char *attrs; const char *want; } bad[] = {
      {"i: 1.5", "line 4 column 52: node 't' attr 'i': '1.5' is not an int64"},
      {"b: 1", "line 4 column 52: node 't' attr 'b': '1' is not true or false"},
      {"sh: 3", "line 4 column 53: node 't' attr 'sh': a shape is a sequence "
                "of at most 8 ints or 'unknown'"},
      {"li: 3", "line 4 column 53: node 't' attr 'li': a list(int) value must "
                "be a sequence"},
      {"lt: [int9]", "line 4 column 54: node 't' attr 'lt': 'int9' is not a "
                     "dtype"},
      {"te: 3", "line 4 column 53: node 't' attr 'te': expected a mapping, got "
                "a scalar"},
  };
  char text[512], want[256];
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    snprintf(text, sizeof text,
             HEAD "- {name: p, op: Placeholder, attrs: {dtype: int32}}\n"
                  "- {name: t, op: SerdeTest, inputs: [p], attrs: {%s}}\n",
             bad[i].attrs);
    snprintf(want, sizeof want, "graph yaml: %s", bad[i].want);
    expect_msg(text, want);
  }
}
END_TEST

/* ---- tensors ----------------------------------------------------------------- */

static tf_tensor *tensor_attr(const tf_node *n, const char *name, tf_dtype dt,
                              int64_t count) {
  tf_tensor *t = attr(n, name, TF_ATTR_TENSOR, false)->u.tensor;
  ck_assert_msg(t->dtype == dt && t->n == count, "%s: %s with %lld elements",
                name, tf_dtype_name(t->dtype), (long long)t->n);
  return t;
}

START_TEST(test_tensor_values_at_limits) {
  tf_graph *g = read_ok(
      HEAD "- name: a\n  op: NoOp\n  attrs:\n"
      "    _i8: !tensor {dtype: int8, shape: [3], values: [-128, 127, 0]}\n"
      "    _u8: !tensor {dtype: uint8, shape: [2], values: [0, 255]}\n"
      "    _i16: !tensor {dtype: int16, shape: [2], values: [-32768, 32767]}\n"
      "    _u16: !tensor {dtype: uint16, shape: [2], values: [0, 65535]}\n"
      "    _i32: !tensor {dtype: int32, shape: [2], values: [-2147483648, +2147483647]}\n"
      "    _u32: !tensor {dtype: uint32, shape: [1], values: [4294967295]}\n"
      "    _i64: !tensor {dtype: int64, shape: [2],\n"
      "           values: [-9223372036854775808, 9223372036854775807]}\n"
      "    _u64: !tensor {dtype: uint64, shape: [1], values: [18446744073709551615]}\n"
      "    _b: !tensor {dtype: bool, shape: [3], values: [true, False, TRUE]}\n"
      "    _f32: !tensor {dtype: float32, shape: [2, 3],\n"
      "           values: [1.5, -.inf, .nan, 1e-45, 3.4028235e38, 3.5e38]}\n"
      "    _f64: !tensor {dtype: float64, shape: [3], values: [0.1, -0.0, 5e-324]}\n"
      "    _f16: !tensor {dtype: float16, shape: [4], values: [0.1, 65504, 65520, 1e-8]}\n"
      "    _bf16: !tensor {dtype: bfloat16, shape: [2], values: [0.3333333, -1e39]}\n"
      "    _c64: !tensor {dtype: complex64, shape: [2], values: [[1.5, -2], [.inf, 0.1]]}\n"
      "    _s: !tensor {dtype: string, shape: [3], values: [a, '', !!binary aGk=]}\n"
      "    _empty: !tensor {dtype: float32, shape: [2, 0], values: []}\n"
      "    _scalar: !tensor {dtype: int64, shape: [], values: [-5]}\n");
  tf_node *n = tf_graph_find(g, "a");
  int8_t *i8 = tensor_attr(n, "_i8", TF_INT8, 3)->data;
  ck_assert(i8[0] == INT8_MIN && i8[1] == INT8_MAX && i8[2] == 0);
  uint8_t *u8 = tensor_attr(n, "_u8", TF_UINT8, 2)->data;
  ck_assert(u8[0] == 0 && u8[1] == UINT8_MAX);
  int16_t *i16 = tensor_attr(n, "_i16", TF_INT16, 2)->data;
  ck_assert(i16[0] == INT16_MIN && i16[1] == INT16_MAX);
  uint16_t *u16 = tensor_attr(n, "_u16", TF_UINT16, 2)->data;
  ck_assert(u16[0] == 0 && u16[1] == UINT16_MAX);
  int32_t *i32 = tensor_attr(n, "_i32", TF_INT32, 2)->data;
  ck_assert(i32[0] == INT32_MIN && i32[1] == INT32_MAX);
  ck_assert(*(uint32_t *)tensor_attr(n, "_u32", TF_UINT32, 1)->data == UINT32_MAX);
  int64_t *i64 = tensor_attr(n, "_i64", TF_INT64, 2)->data;
  ck_assert(i64[0] == INT64_MIN && i64[1] == INT64_MAX);
  ck_assert(*(uint64_t *)tensor_attr(n, "_u64", TF_UINT64, 1)->data == UINT64_MAX);
  bool *b = tensor_attr(n, "_b", TF_BOOL, 3)->data;
  ck_assert(b[0] && !b[1] && b[2]);
  tf_tensor *f32t = tensor_attr(n, "_f32", TF_FLOAT32, 6);
  float *f32 = f32t->data;
  ck_assert_int_eq(f32t->shape.rank, 2);
  ck_assert(f32[0] == 1.5f && isinf(f32[1]) && f32[1] < 0 && isnan(f32[2]));
  ck_assert(f32[3] == 0x1p-149f && f32[4] == 3.4028235e38f && isinf(f32[5]));
  double *f64 = tensor_attr(n, "_f64", TF_FLOAT64, 3)->data;
  ck_assert(f64[0] == 0.1 && f64[1] == 0 && signbit(f64[1]) &&
            f64[2] == 0x1p-1074);
  uint16_t *f16 = tensor_attr(n, "_f16", TF_FLOAT16, 4)->data;
  ck_assert_uint_eq(f16[0], tf_double_to_float16(0.1));
  ck_assert_uint_eq(f16[1], 0x7bff); /* 65504, the largest */
  ck_assert_uint_eq(f16[2], 0x7c00); /* 65520 rounds up to inf */
  ck_assert_uint_eq(f16[3], 0x0000); /* below half the smallest subnormal */
  uint16_t *bf = tensor_attr(n, "_bf16", TF_BFLOAT16, 2)->data;
  ck_assert_uint_eq(bf[0], tf_float_to_bfloat16(strtof("0.3333333", NULL)));
  ck_assert_uint_eq(bf[1], 0xff80); /* -1e39 overflows float: -inf */
  tf_complex64 *c = tensor_attr(n, "_c64", TF_COMPLEX64, 2)->data;
  ck_assert(c[0].re == 1.5f && c[0].im == -2.0f && isinf(c[1].re) &&
            c[1].im == 0.1f);
  tf_tensor *s = tensor_attr(n, "_s", TF_STRING, 3);
  const tf_string *str = tf_tensor_strings(s);
  ck_assert(str[0].len == 1 && str[0].data[0] == 'a');
  ck_assert_uint_eq(str[1].len, 0);
  ck_assert(str[2].len == 2 && memcmp(str[2].data, "hi", 2) == 0);
  tf_tensor *e = tensor_attr(n, "_empty", TF_FLOAT32, 0);
  ck_assert(e->shape.rank == 2 && e->shape.dims[0] == 2 && e->shape.dims[1] == 0);
  tf_tensor *sc = tensor_attr(n, "_scalar", TF_INT64, 1);
  ck_assert(sc->shape.rank == 0 && *(int64_t *)sc->data == -5);
  tf_graph_free(g);
}
END_TEST

/* data: !!binary holds the little-endian bytes; base64 may run over several
 * lines of a block scalar. */
START_TEST(test_tensor_binary_data) {
  tf_graph *g = read_ok(
      HEAD "- name: a\n  op: NoOp\n  attrs:\n"
      "    _i32:\n"
      "      !tensor\n"
      "      dtype: int32\n"
      "      shape: [2]\n"
      "      data: !!binary |\n"
      "        AQAA\n"
      "        AP7///8=\n"
      "    _f64: !tensor {dtype: float64, shape: [1], data: !!binary AAAAAAAA8D8=}\n"
      "    _none: !tensor {dtype: uint8, shape: [0, 3], data: !!binary ''}\n");
  tf_node *n = tf_graph_find(g, "a");
  int32_t *v = tensor_attr(n, "_i32", TF_INT32, 2)->data;
  ck_assert(v[0] == 1 && v[1] == -2);
  ck_assert(*(double *)tensor_attr(n, "_f64", TF_FLOAT64, 1)->data == 1.0);
  tensor_attr(n, "_none", TF_UINT8, 0);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_tensor_value_errors) {
  static const struct { const char *tensor; const char *want; } bad[] = {
      {"{dtype: int8, shape: [1], values: [128]}", "'128' is not a int8 value"},
      {"{dtype: uint16, shape: [1], values: [65536]}", "'65536' is not a uint16 value"},
      {"{dtype: uint16, shape: [1], values: [-1]}", "'-1' is not a uint16 value"},
      {"{dtype: uint64, shape: [1], values: [-1]}", "'-1' is not a uint64 value"},
      {"{dtype: int64, shape: [1], values: [9223372036854775808]}",
       "'9223372036854775808' is not a int64 value"},
      {"{dtype: int32, shape: [1], values: [1.5]}", "'1.5' is not a int32 value"},
      {"{dtype: int32, shape: [1], values: [0x10]}", "'0x10' is not a int32 value"},
      {"{dtype: bool, shape: [1], values: [1]}", "'1' is not a bool value"},
      {"{dtype: float16, shape: [1], values: [abc]}", "'abc' is not a float16 value"},
      {"{dtype: bfloat16, shape: [1], values: [inf]}", "'inf' is not a bfloat16 value"},
      {"{dtype: complex64, shape: [1], values: [[1, x]]}", "'x' is not a float32 value"},
      {"{dtype: int8, shape: [3], values: [1, 2]}",
       "values must be a sequence of 3 elements (count differs)"},
      {"{dtype: int8, shape: [], values: 3}", "values must be a sequence of 1 elements"},
      {"{dtype: int8, shape: [2], values: [1, 2], dtype: int8}", "repeated key 'dtype'"},
      {"{dtype: int8, values: [1]}", "a tensor needs dtype, shape and one of values, data"},
      {"{dtype: [int8], shape: [], values: [1]}", "dtype must be a scalar, got a sequence"},
      {"{dtype: int32, shape: [1], data: !!binary AAAAAAAA}",
       "data holds 6 bytes, the tensor needs 4"},
      {"{dtype: int8, shape: [4294967296, 4294967296], values: []}",
       "shape [4294967296,4294967296] has more elements than fit in int64"},
      {"{dtype: int64, shape: [2305843009213693952], values: []}",
       "shape [2305843009213693952] of 2305843009213693952 elements of 8 "
       "bytes overflows"},
  };
  char text[512], want[256];
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    snprintf(text, sizeof text, HEAD "- {name: a, op: NoOp, attrs: {_x: !tensor %s}}\n",
             bad[i].tensor);
    snprintf(want, sizeof want, "node 'a' attr '_x': %s", bad[i].want);
    expect_prefix(text, "graph yaml: line 3 column ", want);
  }
}
END_TEST

/* ---- the graph --------------------------------------------------------------- */

START_TEST(test_null_and_empty_forms) {
  static const struct { const char *text; int nodes; } ok[] = {
      {"version: 1\nnodes:\n", 0},
      {"version: 1\nnodes: ~\n", 0},
      {"version: 1\nnodes: null\n", 0},
      {"nodes: []\nversion: 1\n", 0},
      {"# leading comment\n---\nversion: 1\nnodes: []\n...\n", 0},
      {"version: !!int 1\nnodes: []\n", 0},
      {"version: !!int '1'\nnodes: []\n", 0},
      {"version: +1\nnodes: []\n", 0},
      {HEAD "- {name: a, op: NoOp, inputs: ~, attrs: null, device: ''}\n", 1},
      {HEAD "- {name: a, op: NoOp, inputs: [], attrs: {}}\n"
            "- name: b\n  op: NoOp\n  inputs:\n  attrs:\n", 2},
  };
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
    tf_graph *g = read_ok(ok[i].text);
    ck_assert_int_eq(tf_graph_num_nodes(g), ok[i].nodes);
    tf_graph_free(g);
  }
}
END_TEST

/* A failed read adds nothing to a graph that already has nodes; a good one
 * may take inputs from them. */
START_TEST(test_existing_graph) {
  tf_graph *g = tf_graph_new();
  tt_placeholder(g, "pre", TF_FLOAT32, tf_shape_of(1, 3));
  tf_status st;
  ck_assert_int_eq(read_yaml(g, HEAD "- {name: x, op: Identity, inputs: [pre]}\n"
                                     "- {name: y, op: NoOp, attrs: {_b: !type no}}\n",
                             &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_int_eq(tf_graph_num_nodes(g), 1);
  /* Import errors (after the text was read) name the node, and are
   * INVALID_ARGUMENT whatever import's own code. */
  ck_assert_int_eq(read_yaml(g, HEAD "- {name: pre, op: NoOp}\n", &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_str_eq(st.msg, "graph yaml: line 3 column 3: node 'pre' (NoOp): "
                           "duplicate node name");
  ck_assert_int_eq(read_yaml(g, HEAD "- {name: z, op: NoSuchOp}\n", &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "NoSuchOp") != NULL, "%s", st.msg);
  ck_assert_int_eq(read_yaml(g, HEAD "- {name: w, op: Placeholder, attrs: "
                                     "{dtype: !!int 3}}\n", &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "node 'w'") && strstr(st.msg, "must be type"),
                "%s", st.msg);
  ck_assert_int_eq(tf_graph_num_nodes(g), 1);
  ck_assert_msg(read_yaml(g, HEAD "- {name: x, op: Identity, inputs: [pre]}\n",
                          &st) == TF_OK, "%s", st.msg);
  ck_assert_int_eq(tf_graph_num_nodes(g), 2);
  tf_node *x = tf_graph_find(g, "x");
  ck_assert(tf_shape_equal(tf_node_output_shape(x, 0), &(tf_shape){1, {3}}));
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("graph_yaml_read");
  TCase *tw = tcase_create("where");
  tcase_add_test(tw, test_syntax_errors);
  tcase_add_test(tw, test_encoding_error_positions);
  tcase_add_test(tw, test_encoding_error_matches_libyaml_marks);
  tcase_add_test(tw, test_import_error_positions);
  tcase_add_test(tw, test_schema_errors_exact);
  tcase_add_test(tw, test_error_line_tracks_node);
  tcase_add_test(tw, test_nesting_limit_boundary);
  tcase_add_test(tw, test_input_length);
  suite_add_tcase(s, tw);
  TCase *tt = tcase_create("typing");
  tcase_add_test(tt, test_tags_and_core_schema);
  tcase_add_test(tt, test_declared_types);
  tcase_add_test(tt, test_tensor_values_at_limits);
  tcase_add_test(tt, test_tensor_binary_data);
  tcase_add_test(tt, test_tensor_value_errors);
  suite_add_tcase(s, tt);
  TCase *tg = tcase_create("graph");
  tcase_add_test(tg, test_null_and_empty_forms);
  tcase_add_test(tg, test_existing_graph);
  suite_add_tcase(s, tg);
  return s;
}
