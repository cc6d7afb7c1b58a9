/* signature_test.c: node and tensor names and step signatures.
 *
 * The node-name rule is checked against POSIX regex (the independent
 * reference) on every string of one and two bytes and on random strings;
 * tensor names on hand-picked good and bad cases (ports without sign,
 * junk or leading zeros); signatures for canonical sorted sets, the
 * caller-order maps, errors naming the name and its role, and keys:
 * random signatures over names built to be prefixes and joins of each
 * other get equal keys exactly when their sets are equal, and every key
 * decodes back to its sets. Graph-level checks: the builder and import
 * refuse invalid names naming them, internal graphs take '_' names, and
 * tf_graph_find_output parses ports strictly. */
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "lib/core/graph/graph_impl.h"
#include "lib/core/graph/signature.h"
#include "test/unit/testutil.h"

#define ASSERT_HAS(msg, sub)                                                   \
  ck_assert_msg(strstr((msg), (sub)) != NULL, "'%s' lacks '%s'", (msg), (sub))

/* ---- node names -------------------------------------------------------------- */

static bool valid(const char *s, bool internal) {
  return tf__node_name_valid(s, strlen(s), internal, NULL, 0);
}

/* Every 1- and 2-byte name, and 20,000 random ones up to 8 bytes from a
 * biased alphabet, agree with the regex (and, internal, with the regex
 * whose first class also has '_'). */
START_TEST(test_node_name_rule_vs_regex) {
  regex_t re, re_int;
  ck_assert_int_eq(regcomp(&re, "^[A-Za-z0-9.][A-Za-z0-9_./>-]*$", REG_EXTENDED | REG_NOSUB), 0);
  ck_assert_int_eq(regcomp(&re_int, "^[A-Za-z0-9._][A-Za-z0-9_./>-]*$", REG_EXTENDED | REG_NOSUB), 0);
  char s[16];
  int n_valid = 0;
  for (int a = 1; a < 256; a++) {
    for (int b = 0; b < 256; b++) {
      s[0] = (char)a;
      s[1] = (char)b;
      s[2] = '\0';
      bool want = regexec(&re, s, 0, NULL, 0) == 0;
      bool want_int = regexec(&re_int, s, 0, NULL, 0) == 0;
      ck_assert_msg(valid(s, false) == want, "0x%02x 0x%02x: rule %d, regex %d", a, b,
                    valid(s, false), want);
      ck_assert_msg(valid(s, true) == want_int, "internal 0x%02x 0x%02x", a, b);
      n_valid += want;
    }
  }
  /* 63 first characters, each alone or followed by one of 67 others. */
  ck_assert_int_eq(n_valid, 63 * (1 + 67));
  const char alpha[] = "aZ09._-/>:^, \n\x01\xc3\xa9";
  tt_rng_reseed(tt_seed() ^ 0x5167);
  for (int k = 0; k < 20000; k++) {
    int len = 1 + (int)(tt_rand_u64() % 8);
    for (int i = 0; i < len; i++) s[i] = alpha[tt_rand_u64() % (sizeof alpha - 1)];
    s[len] = '\0';
    ck_assert_msg(valid(s, false) == (regexec(&re, s, 0, NULL, 0) == 0), "'%s'", s);
    ck_assert_msg(valid(s, true) == (regexec(&re_int, s, 0, NULL, 0) == 0), "'%s'", s);
  }
  ck_assert(!valid("", false) && !valid("", true));
  regfree(&re);
  regfree(&re_int);
}
END_TEST

START_TEST(test_node_name_messages) {
  char why[200];
  ck_assert(!tf__node_name_valid("ab c", 4, false, why, sizeof why));
  ASSERT_HAS(why, "' ' at offset 2 is not allowed");
  ASSERT_HAS(why, "[A-Za-z0-9.][A-Za-z0-9_.\\-/>]*");
  ck_assert(!tf__node_name_valid("_x", 2, false, why, sizeof why));
  ASSERT_HAS(why, "reserved for the system's internal nodes");
  ck_assert(!tf__node_name_valid("-x", 2, false, why, sizeof why));
  ASSERT_HAS(why, "'-' may not begin a node name");
  ck_assert(!tf__node_name_valid("a\nb", 3, false, why, sizeof why));
  ASSERT_HAS(why, "\\x0a at offset 1");
  ck_assert(!tf__node_name_valid("", 0, true, why, sizeof why));
  ASSERT_HAS(why, "empty");
  /* Only len bytes count. */
  ck_assert(tf__node_name_valid("ab:0", 2, false, why, sizeof why));
}
END_TEST

/* ---- tensor names ------------------------------------------------------------ */

START_TEST(test_tensor_name_split) {
  struct {
    const char *s;
    size_t node_len;
    int port;
  } good[] = {{"x", 1, 0},       {"x:0", 1, 0},   {"x:7", 1, 7},
              {"ab/c:12", 4, 12}, {"x:0:1", 3, 1}, {"x:2147483647", 1, 2147483647}};
  for (size_t i = 0; i < TF_ARRAY_LEN(good); i++) {
    size_t len = 99;
    int port = -5;
    const char *bad = tf__tensor_name_split(good[i].s, &len, &port);
    ck_assert_msg(bad == NULL, "%s: %s", good[i].s, bad);
    ck_assert_uint_eq(len, good[i].node_len);
    ck_assert_int_eq(port, good[i].port);
  }
  struct {
    const char *s, *why;
  } bad[] = {{"x:", "empty"},          {"x:-1", "not a decimal"}, {"x:+1", "not a decimal"},
             {"x: 1", "not a decimal"}, {"x:1 ", "not a decimal"}, {"x:0x1", "not a decimal"},
             {"y:0,z", "not a decimal"}, {"x:01", "leading zero"}, {"x:00", "leading zero"},
             {"x:2147483648", "too large"}, {"x:99999999999999999999", "too large"}};
  for (size_t i = 0; i < TF_ARRAY_LEN(bad); i++) {
    size_t len;
    int port;
    const char *why = tf__tensor_name_split(bad[i].s, &len, &port);
    ck_assert_msg(why != NULL, "'%s' accepted", bad[i].s);
    ASSERT_HAS(why, bad[i].why);
  }
}
END_TEST

/* ---- signatures -------------------------------------------------------------- */

START_TEST(test_sig_canonical_sorted_maps) {
  tf_status st;
  tf__sig sig;
  const char *feeds[] = {"b", "a:1", "a"};
  const char *fetches[] = {"z", "y:0", "z:0", "y", "a:1"};
  const char *targets[] = {"^t", "t", "s"};
  ck_assert_msg(tf__sig_build(&sig, feeds, 3, fetches, 5, targets, 3, &st) == TF_OK, "%s",
                st.msg);
  ck_assert_int_eq(sig.n_feeds, 3);
  ck_assert_str_eq(sig.feeds[0].canon, "a:0");
  ck_assert_str_eq(sig.feeds[1].canon, "a:1");
  ck_assert_str_eq(sig.feeds[2].canon, "b:0");
  ck_assert_str_eq(sig.feeds[1].node, "a");
  ck_assert_int_eq(sig.feeds[1].port, 1);
  ck_assert_int_eq(sig.n_feed_args, 3);
  ck_assert(sig.feed_pos[0] == 2 && sig.feed_pos[1] == 1 && sig.feed_pos[2] == 0);
  ck_assert_int_eq(sig.n_fetches, 3);
  ck_assert_str_eq(sig.fetches[0].canon, "a:1");
  ck_assert_str_eq(sig.fetches[1].canon, "y:0");
  ck_assert_str_eq(sig.fetches[2].canon, "z:0");
  int want_pos[] = {2, 1, 2, 1, 0};
  ck_assert_int_eq(sig.n_fetch_args, 5);
  for (int i = 0; i < 5; i++) ck_assert_int_eq(sig.fetch_pos[i], want_pos[i]);
  ck_assert_int_eq(sig.n_targets, 2);
  ck_assert_str_eq(sig.targets[0].canon, "s");
  ck_assert_str_eq(sig.targets[1].canon, "t");
  ck_assert_int_eq(sig.targets[1].port, -1);
  ck_assert_str_eq(sig.key, "3[3:a:03:a:13:b:0]3[3:a:13:y:03:z:0]2[1:s1:t]");
  tf__sig_fini(&sig);
  /* Empty. */
  ck_assert_int_eq(tf__sig_build(&sig, NULL, 0, NULL, 0, NULL, 0, &st), TF_OK);
  ck_assert_str_eq(sig.key, "0[]0[]0[]");
  tf__sig_fini(&sig);
}
END_TEST

/* Builds with one name in one role and expects INVALID_ARGUMENT naming
 * it ("<role> '<shown>'") and containing why. */
static void expect_bad(int role, const char *name, const char *shown, const char *why) {
  tf_status st;
  tf__sig sig;
  const char *v[] = {"ok", name};
  tf_code rc = tf__sig_build(&sig, role == 0 ? v : NULL, role == 0 ? 2 : 0,
                             role == 1 ? v : NULL, role == 1 ? 2 : 0,
                             role == 2 ? v : NULL, role == 2 ? 2 : 0, &st);
  ck_assert_msg(rc == TF_INVALID_ARGUMENT, "'%s' as %d: %d %s", shown, role, rc, st.msg);
  const char *roles[] = {"feed", "fetch", "target"};
  char want[200];
  snprintf(want, sizeof want, "%s '%s'", roles[role], shown);
  ASSERT_HAS(st.msg, want);
  ASSERT_HAS(st.msg, why);
  ck_assert_ptr_null(sig.key);
  tf__sig_fini(&sig); /* safe on a failed build */
}

START_TEST(test_sig_errors) {
  for (int role = 0; role < 2; role++) {
    expect_bad(role, "y:0,z", "y:0,z", "not a decimal");
    expect_bad(role, "y,z", "y,z", "',' at offset 1");
    expect_bad(role, "x:", "x:", "empty");
    expect_bad(role, "x:-1", "x:-1", "not a decimal");
    expect_bad(role, "x:01", "x:01", "leading zero");
    expect_bad(role, "x:0:1", "x:0:1", "':' at offset 1");
    expect_bad(role, "a\n", "a\\x0a", "\\x0a at offset 1");
    expect_bad(role, "a\nb:0", "a\\x0ab:0", "offset 1");
    expect_bad(role, "", "", "empty");
    expect_bad(role, ":0", ":0", "empty");
    expect_bad(role, "^x", "^x", "'^' may not begin");
    expect_bad(role, "_arg_0", "_arg_0", "reserved");
  }
  expect_bad(2, "x:0", "x:0", "':' at offset 1");
  expect_bad(2, "^", "^", "empty");
  expect_bad(2, "^^x", "^^x", "'^' may not begin");
  expect_bad(2, "a b", "a b", "' ' at offset 1");
  tf_status st;
  tf__sig sig;
  /* One tensor fed twice, in one or two spellings; fetched twice is fine. */
  const char *twice[] = {"x", "y", "x:0"}, *same[] = {"x:1", "x:1"};
  ck_assert_int_eq(tf__sig_build(&sig, twice, 3, NULL, 0, NULL, 0, &st), TF_INVALID_ARGUMENT);
  ASSERT_HAS(st.msg, "feed 'x:0' is given twice (also as 'x')");
  ck_assert_int_eq(tf__sig_build(&sig, same, 2, NULL, 0, NULL, 0, &st), TF_INVALID_ARGUMENT);
  ASSERT_HAS(st.msg, "feed 'x:1' is given twice");
  ck_assert_int_eq(tf__sig_build(&sig, NULL, 0, twice, 3, NULL, 0, &st), TF_OK);
  ck_assert_int_eq(sig.n_fetches, 2);
  tf__sig_fini(&sig);
  const char *nul[] = {"a", NULL};
  ck_assert_int_eq(tf__sig_build(&sig, NULL, 0, nul, 2, NULL, 0, &st), TF_INVALID_ARGUMENT);
  ASSERT_HAS(st.msg, "fetch 1 has no name");
}
END_TEST

/* Splits key back into its three sets (the format in signature.c);
 * fails the test on malformed keys. Returns the names as one string
 * "F:a:0,b:0|O:...|T:..." for comparison. */
static void decode_key(const char *key, char *out, size_t size) {
  const char *p = key;
  size_t o = 0;
  for (int k = 0; k < 3; k++) {
    char *end;
    long n = strtol(p, &end, 10);
    ck_assert_msg(end != p && *end == '[', "key '%s' at %ld", key, (long)(p - key));
    p = end + 1;
    o += (size_t)snprintf(out + o, size - o, "%c:", "FOT"[k]);
    for (long i = 0; i < n; i++) {
      long len = strtol(p, &end, 10);
      ck_assert_msg(end != p && *end == ':' && len > 0, "key '%s'", key);
      p = end + 1;
      ck_assert_msg((long)strlen(p) >= len, "key '%s' truncated", key);
      o += (size_t)snprintf(out + o, size - o, "%.*s,", (int)len, p);
      p += len;
    }
    ck_assert_msg(*p == ']', "key '%s'", key);
    p++;
    o += (size_t)snprintf(out + o, size - o, "|");
  }
  ck_assert_msg(*p == '\0', "key '%s' has trailing bytes", key);
}

/* The sets of a built signature in the same form as decode_key. */
static void sets_str(const tf__sig *s, char *out, size_t size) {
  const tf__sig_name *v[3] = {s->feeds, s->fetches, s->targets};
  int n[3] = {s->n_feeds, s->n_fetches, s->n_targets};
  size_t o = 0;
  for (int k = 0; k < 3; k++) {
    o += (size_t)snprintf(out + o, size - o, "%c:", "FOT"[k]);
    for (int i = 0; i < n[k]; i++) o += (size_t)snprintf(out + o, size - o, "%s,", v[k][i].canon);
    o += (size_t)snprintf(out + o, size - o, "|");
  }
}

/* Random signatures over names that are prefixes, joins and digit-suffixed
 * variants of each other (what a naive join confuses): keys are equal
 * exactly when the canonical sets are, and decode back to them. */
START_TEST(test_sig_keys_never_collide) {
  const char *pool[] = {"a", "a:1", "a1", "a:11", "a1:1", "b", "ab", "a.b", "a/b",
                        "a>b", "a-b", "1", "1:1", "11", "a_0", "a:0", "b:10", "b1:0"};
  const char *tpool[] = {"a", "^a", "b", "ab", "a1", "1", "11", "^b1"};
  enum { N = 400 };
  char **keys = calloc(N, sizeof *keys), **sets = calloc(N, sizeof *sets);
  tt_rng_reseed(tt_seed() ^ 0x6b65);
  tf_status st;
  for (int t = 0; t < N; t++) {
    const char *f[4], *o[4], *g[3];
    int nf = (int)(tt_rand_u64() % 3), no = (int)(tt_rand_u64() % 4), nt = (int)(tt_rand_u64() % 3);
    for (int i = 0; i < nf; i++) f[i] = pool[tt_rand_u64() % TF_ARRAY_LEN(pool)];
    for (int i = 0; i < no; i++) o[i] = pool[tt_rand_u64() % TF_ARRAY_LEN(pool)];
    for (int i = 0; i < nt; i++) g[i] = tpool[tt_rand_u64() % TF_ARRAY_LEN(tpool)];
    tf__sig sig;
    tf_code rc = tf__sig_build(&sig, f, nf, o, no, g, nt, &st);
    if (rc != TF_OK) { /* a repeated feed */
      ASSERT_HAS(st.msg, "given twice");
      t--;
      continue;
    }
    char a[1024], b[1024];
    decode_key(sig.key, a, sizeof a);
    sets_str(&sig, b, sizeof b);
    ck_assert_str_eq(a, b);
    keys[t] = strdup(sig.key);
    sets[t] = strdup(b);
    tf__sig_fini(&sig);
  }
  int equal = 0;
  for (int i = 0; i < N; i++) {
    for (int j = i + 1; j < N; j++) {
      bool same_key = strcmp(keys[i], keys[j]) == 0, same_set = strcmp(sets[i], sets[j]) == 0;
      ck_assert_msg(same_key == same_set, "'%s' / '%s' vs '%s' / '%s'", keys[i], sets[i],
                    keys[j], sets[j]);
      equal += same_set;
    }
  }
  ck_assert_int_gt(equal, 0); /* some repeats, in other orders and spellings */
  for (int i = 0; i < N; i++) free(keys[i]), free(sets[i]);
  free(keys);
  free(sets);
}
END_TEST

/* The pairs a ','- or '\n'-joined key confused: all rejected or distinct. */
START_TEST(test_sig_old_collisions) {
  tf_status st;
  tf__sig s1, s2;
  const char *ab[] = {"a", "b"}, *a_comma_b[] = {"a,b"}, *yz[] = {"y:0", "z:0"},
             *y_comma_z[] = {"y:0,z"}, *nl[] = {"y:0\nz:0"};
  ck_assert_int_eq(tf__sig_build(&s1, NULL, 0, ab, 2, NULL, 0, &st), TF_OK);
  ck_assert_int_eq(tf__sig_build(&s2, NULL, 0, a_comma_b, 1, NULL, 0, &st), TF_INVALID_ARGUMENT);
  ASSERT_HAS(st.msg, "fetch 'a,b'");
  ck_assert_int_eq(tf__sig_build(&s2, NULL, 0, y_comma_z, 1, NULL, 0, &st), TF_INVALID_ARGUMENT);
  ASSERT_HAS(st.msg, "fetch 'y:0,z'");
  ck_assert_int_eq(tf__sig_build(&s2, NULL, 0, nl, 1, NULL, 0, &st), TF_INVALID_ARGUMENT);
  ck_assert_int_eq(tf__sig_build(&s2, NULL, 0, yz, 2, NULL, 0, &st), TF_OK);
  ck_assert_str_ne(s1.key, s2.key);
  tf__sig_fini(&s2);
  /* The same names in another role, or split across roles. */
  ck_assert_int_eq(tf__sig_build(&s2, ab, 2, NULL, 0, NULL, 0, &st), TF_OK);
  ck_assert_str_ne(s1.key, s2.key);
  tf__sig_fini(&s2);
  ck_assert_int_eq(tf__sig_build(&s2, ab, 1, ab + 1, 1, NULL, 0, &st), TF_OK);
  ck_assert_str_ne(s1.key, s2.key);
  tf__sig_fini(&s2);
  ck_assert_int_eq(tf__sig_build(&s2, NULL, 0, ab, 1, ab + 1, 1, &st), TF_OK);
  ck_assert_str_ne(s1.key, s2.key);
  tf__sig_fini(&s2);
  tf__sig_fini(&s1);
}
END_TEST

/* ---- names in graphs --------------------------------------------------------- */

START_TEST(test_graph_name_checks) {
  tf_status st;
  tf_graph *g = tf_graph_new();
  const char *bad[] = {"a b", "_x", "-x", "x:0", "^x", "a,b", "a\tb"};
  for (size_t i = 0; i < TF_ARRAY_LEN(bad); i++) {
    ck_assert_ptr_null(tf_node_finish(tf_node_begin(g, "NoOp", bad[i]), &st));
    ck_assert_int_eq(st.code, TF_INVALID_ARGUMENT);
    char want[64];
    snprintf(want, sizeof want, "node '%s' (NoOp): invalid node name", bad[i]);
    ASSERT_HAS(st.msg, want);
    tf_node_def d[2] = {{.name = "fine", .op = "NoOp"}, {.name = bad[i], .op = "NoOp"}};
    ck_assert_int_eq(tf_graph_import(g, d, 2, &st), TF_INVALID_ARGUMENT);
    snprintf(want, sizeof want, "node 1 has an invalid name '%s'", bad[i]);
    ASSERT_HAS(st.msg, want);
  }
  /* A scope with a bad character makes the full name bad. */
  tf_graph_push_scope(g, "s p");
  ck_assert_ptr_null(tf_node_finish(tf_node_begin(g, "NoOp", "n"), &st));
  ASSERT_HAS(st.msg, "' ' at offset 1");
  tf_graph_pop_scope(g);
  /* An unnamed node of an internal op gets the op's name, which begins with
   * '_': refused in a user graph, fine in an internal one. */
  tf_node_builder *b = tf_node_begin(g, "_Arg", NULL);
  tf_node_set_attr(b, "T", tf_attr_type_v(TF_FLOAT32));
  tf_node_set_attr(b, "index", tf_attr_int(0));
  ck_assert_ptr_null(tf_node_finish(b, &st));
  ASSERT_HAS(st.msg, "reserved");
  ck_assert_int_eq(tf_graph_num_nodes(g), 0);
  const char *good[] = {"a", "A.b-c/d>e_f", ".x", "0", "dense/MatMul_1"};
  for (size_t i = 0; i < TF_ARRAY_LEN(good); i++) {
    ck_assert_msg(tf_node_finish(tf_node_begin(g, "NoOp", good[i]), &st) != NULL, "%s: %s",
                  good[i], st.msg);
  }
  tf_graph *ig = tf__graph_new_internal();
  ck_assert_ptr_nonnull(tf_node_finish(tf_node_begin(ig, "NoOp", "_x"), &st));
  tf_node_def d = {.name = "_retval_0", .op = "NoOp"};
  ck_assert_int_eq(tf_graph_import(ig, &d, 1, &st), TF_OK);
  tf_node_def d2 = {.name = "_a b", .op = "NoOp"};
  ck_assert_int_eq(tf_graph_import(ig, &d2, 1, &st), TF_INVALID_ARGUMENT);
  tf_graph_free(ig);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_find_output_and_import_ports_strict) {
  tf_status st;
  tf_graph *g = tf_graph_new();
  tt_placeholder(g, "x", TF_FLOAT32, tf_shape_scalar());
  tf_output o;
  ck_assert_int_eq(tf_graph_find_output(g, "x:0", &o, &st), TF_OK);
  ck_assert_int_eq(tf_graph_find_output(g, "x", &o, &st), TF_OK);
  const char *bad[] = {"x: 0", "x:+0", "x:00", "x:", "x:0,z"};
  for (size_t i = 0; i < TF_ARRAY_LEN(bad); i++) {
    ck_assert_int_eq(tf_graph_find_output(g, bad[i], &o, &st), TF_INVALID_ARGUMENT);
    ASSERT_HAS(st.msg, bad[i]);
    tf_node_def d = {.name = "n", .op = "Neg", .n_inputs = 1, .inputs = &bad[i]};
    ck_assert_int_eq(tf_graph_import(g, &d, 1, &st), TF_INVALID_ARGUMENT);
    ASSERT_HAS(st.msg, "bad input");
  }
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("signature");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_node_name_rule_vs_regex);
  tcase_add_test(tc, test_node_name_messages);
  tcase_add_test(tc, test_tensor_name_split);
  tcase_add_test(tc, test_sig_canonical_sorted_maps);
  tcase_add_test(tc, test_sig_errors);
  tcase_add_test(tc, test_sig_keys_never_collide);
  tcase_add_test(tc, test_sig_old_collisions);
  tcase_add_test(tc, test_graph_name_checks);
  tcase_add_test(tc, test_find_output_and_import_ports_strict);
  suite_add_tcase(s, tc);
  return s;
}
