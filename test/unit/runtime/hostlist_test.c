/* hostlist_test.c: Slurm host lists and tasks-per-node counts: a table of
 * lists with the names `scontrol show hostnames` (Slurm 22.05) printed for
 * them, random lists compared with a live scontrol where one is installed
 * (else that test says so and checks only the round trip), malformed
 * lists each with a message naming the text and the character, and the
 * size caps holding before any allocation. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/runtime/hostlist.h"
#include "test/unit/testutil.h"

/* The names of list, joined by ' ' (static). */
static const char *expand_ok(const char *list) {
  static char out[8192];
  tf_status st;
  tf_status_init(&st);
  char **names = NULL;
  int n = -1;
  ck_assert_msg(tf_hostlist_expand(list, &names, &n, &st) == TF_OK, "%s: %s",
                list, st.msg);
  out[0] = '\0';
  for (int i = 0; i < n; i++) {
    size_t l = strlen(out);
    snprintf(out + l, sizeof out - l, "%s%s", i ? " " : "", names[i]);
  }
  tf_hostlist_free(names, n);
  return out;
}

START_TEST(test_scontrol_table) {
  /* Each right side is what scontrol show hostnames printed here. */
  static const char *const t[][2] = {
      {"n[009-011]", "n009 n010 n011"},
      {"a[1-2,5],b3", "a1 a2 a5 b3"},
      {"a[1-2]b[3-4]", "a1b3 a1b4 a2b3 a2b4"},
      {"r[1-2]-n[01-02]", "r1-n01 r1-n02 r2-n01 r2-n02"},
      {"n[1-2]x[1-2]y[1-2]",
       "n1x1y1 n1x1y2 n2x1y1 n2x1y2 n1x2y1 n1x2y2 n2x2y1 n2x2y2"},
      {"n[009-011],x", "n009 n010 n011 x"},
      {"n[08-12]", "n08 n09 n10 n11 n12"},
      {"n[8-012]", "n8 n9 n10 n11 n12"},
      {"n[01-1]", "n01"},
      {"n[099-101]", "n099 n100 n101"},
      {"n[0-0]", "n0"},
      {"n[2,1]", "n2 n1"},
      {"n[1-2],n1", "n1 n2 n1"},
      {"a,,b", "a b"},
      {"n1 n2", "n1 n2"},
      {"n[1-2],", "n1 n2"},
      {",n1", "n1"},
      {"n-[1-2]", "n-1 n-2"},
      {"localhost", "localhost"},
      {"n.x_[1-2]", "n.x_1 n.x_2"},
  };
  for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
    ck_assert_msg(strcmp(expand_ok(t[i][0]), t[i][1]) == 0, "%s -> '%s', "
                  "want '%s'", t[i][0], expand_ok(t[i][0]), t[i][1]);
  }
}
END_TEST

static void expand_bad(const char *list, const char *want) {
  tf_status st;
  tf_status_init(&st);
  char **names = (char **)1;
  int n = -1;
  ck_assert_int_eq(tf_hostlist_expand(list, &names, &n, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_ptr_null(names);
  ck_assert_int_eq(n, 0);
  ck_assert_msg(strstr(st.msg, want) != NULL, "%s: '%s' lacks '%s'", list,
                st.msg, want);
}

START_TEST(test_bad_lists) {
  expand_bad("n[3-1]", "hostlist 'n[3-1]' at character 3: range '3-1' runs "
             "backwards");
  expand_bad("n[]", "at character 3: empty range");
  expand_bad("n[1,,2]", "at character 5: empty range");
  expand_bad("n[1-2", "at character 6: the bracket group at character 2 has "
             "no ']'");
  expand_bad("n[1-]", "at character 5: expected a number, got ']'");
  expand_bad("n[-1]", "at character 3: expected a number, got '-'");
  expand_bad("n[a-b]", "expected a number, got 'a'");
  expand_bad("n[1 - 2]", "expected ',', '-' or ']' in the bracket group at "
             "character 2, got ' '");
  expand_bad("n[0-3-5]", "got '-'");
  expand_bad("n[1-3]-ib", "at character 7: text '-ib' after the last "
             "bracket group");
  expand_bad("x[9-11]y", "text 'y' after the last bracket group");
  expand_bad("n1-2]", "at character 5: ']' without '['");
  expand_bad("n[[1]]", "expected a number, got '['");
  expand_bad("n1;n2", "at character 3: ';' cannot be in a host name");
  expand_bad("n[1234567890]", "number '1234567890' has more than 9 digits");
  expand_bad("", "hostlist '' names no host");
  expand_bad(" , ", "names no host");
  expand_bad(NULL, "names no host");
  char longname[300];
  memset(longname, 'a', 256);
  longname[256] = '\0';
  expand_bad(longname, "a name of more than 255 characters");
}
END_TEST

START_TEST(test_caps) {
  /* Each would be gigabytes of names: refused before allocating. */
  expand_bad("n[0-999999999]", "range '0-999999999' gives 1000000000 "
             "names; a list may give at most 65536");
  expand_bad("a[0-999]b[0-999]", "a list may give at most 65536");
  expand_bad("a[0-60000],b[0-6000]", "a list may give at most 65536");
  expand_bad("a[0-1]b[0-1]c[0-1]d[0-1]e[0-1]f[0-1]g[0-1]h[0-1]i[0-1]",
             "more than 8 bracket groups");
  /* Exactly the cap is fine. */
  tf_status st;
  tf_status_init(&st);
  char **names;
  int n;
  ck_assert_int_eq(tf_hostlist_expand("n[1-65536]", &names, &n, &st), TF_OK);
  ck_assert_int_eq(n, TF_HOSTLIST_MAX);
  ck_assert_str_eq(names[65535], "n65536");
  /* The same names written out plainly, as many items: the arrays grow
   * by doubling (once per item, a sanitizer build took 25 s for 63000). */
  char *plain = malloc((size_t)n * 8 + 16), *p = plain;
  for (int i = 0; i < n; i++) {
    p += sprintf(p, "%s%s", i ? "," : "", names[i]);
  }
  char **again;
  int n2;
  ck_assert_int_eq(tf_hostlist_expand(plain, &again, &n2, &st), TF_OK);
  ck_assert_int_eq(n2, n);
  for (int i = 0; i < n; i++) {
    ck_assert_str_eq(again[i], names[i]);
  }
  tf_hostlist_free(again, n2);
  strcpy(p, ",x");
  ck_assert_int_eq(tf_hostlist_expand(plain, &again, &n2, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert(again == NULL && n2 == 0);
  ck_assert_msg(strstr(st.msg, "at character 447647: more than 65536 names")
                != NULL, "%s", st.msg);
  expand_bad("n[1-65536],x", "at character 12: more than 65536 names");
  /* 65536 tasks per node items of 1 each. */
  p = plain;
  for (int i = 0; i < TF_HOSTLIST_MAX; i++) {
    p += sprintf(p, "%s1", i ? "," : "");
  }
  int *counts;
  ck_assert_int_eq(tf_tasks_per_node_expand(plain, &counts, &n2, &st), TF_OK);
  ck_assert_int_eq(n2, TF_HOSTLIST_MAX);
  ck_assert(counts[0] == 1 && counts[TF_HOSTLIST_MAX - 1] == 1);
  free(counts);
  free(plain);
  tf_hostlist_free(names, n);
  tf_hostlist_free(NULL, 0);
}
END_TEST

static const char *tpn_ok(const char *s) {
  static char out[1024];
  tf_status st;
  tf_status_init(&st);
  int *c = NULL, n = -1;
  ck_assert_msg(tf_tasks_per_node_expand(s, &c, &n, &st) == TF_OK, "%s: %s",
                s, st.msg);
  out[0] = '\0';
  for (int i = 0; i < n; i++) {
    size_t l = strlen(out);
    snprintf(out + l, sizeof out - l, "%s%d", i ? " " : "", c[i]);
  }
  free(c);
  return out;
}

static void tpn_bad(const char *s, const char *want) {
  tf_status st;
  tf_status_init(&st);
  int *c = (int *)1, n = -1;
  ck_assert_int_eq(tf_tasks_per_node_expand(s, &c, &n, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_ptr_null(c);
  ck_assert_int_eq(n, 0);
  ck_assert_msg(strstr(st.msg, want) != NULL, "%s: '%s' lacks '%s'", s,
                st.msg, want);
}

START_TEST(test_tasks_per_node) {
  ck_assert_str_eq(tpn_ok("2(x3),1"), "2 2 2 1");
  ck_assert_str_eq(tpn_ok("3"), "3");
  ck_assert_str_eq(tpn_ok("1(x3)"), "1 1 1");
  ck_assert_str_eq(tpn_ok("1,2(x2),4"), "1 2 2 4");
  tpn_bad("", "tasks per node '' at character 1: expected a number, got "
          "the end");
  tpn_bad("2(3)", "at character 3: expected 'x' after '('");
  tpn_bad("2(x3", "at character 5: expected ')' to close the '(' at "
          "character 2");
  tpn_bad("2(x0)", "repeat count 0");
  tpn_bad("0", "task count 0 is not in 1..1000000");
  tpn_bad("2,,1", "at character 3: expected a number, got ','");
  tpn_bad("2;1", "at character 2: expected ',' or the end, got ';'");
  tpn_bad("1(x999999999)", "more than 65536 nodes");
  tpn_bad("1000(x100)", "gives 100000 tasks; at most 65536");
  tpn_bad(NULL, "expected a number");
}
END_TEST

/* A random list of 1..3 items, each a prefix and 0..2 groups. */
static void random_list(char *buf, size_t cap) {
  static const char *const pre[] = {"n", "node", "r", "a.b", "x-", "c_"};
  size_t l = 0;
  int items = 1 + (int)(tt_rand_u64() % 3);
  for (int i = 0; i < items; i++) {
    l += (size_t)snprintf(buf + l, cap - l, "%s%s", i ? "," : "",
                          pre[tt_rand_u64() % 6]);
    int groups = (int)(tt_rand_u64() % 3);
    for (int g = 0; g < groups; g++) {
      int w = 1 + (int)(tt_rand_u64() % 3), parts = 1 + (int)(tt_rand_u64() % 2);
      l += (size_t)snprintf(buf + l, cap - l, "%s[", g ? "-" : "");
      int lo = (int)(tt_rand_u64() % 12);
      for (int p = 0; p < parts; p++) {
        int hi = lo + (int)(tt_rand_u64() % 4);
        l += (size_t)snprintf(buf + l, cap - l, "%s%0*d-%d", p ? "," : "", w,
                              lo, hi);
        lo = hi + 1 + (int)(tt_rand_u64() % 3);
      }
      l += (size_t)snprintf(buf + l, cap - l, "]");
    }
  }
}

START_TEST(test_random_against_scontrol) {
  tt_rng_reseed(tt_seed() ^ 0x5c0);
  bool live = access("/usr/bin/scontrol", X_OK) == 0;
  char dir[] = "/tmp/hostlist_testXXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  char conf[128];
  snprintf(conf, sizeof conf, "%s/slurm.conf", dir);
  FILE *f = fopen(conf, "w");
  fputs("ClusterName=x\nSlurmctldHost=localhost\nNodeName=localhost CPUs=1\n"
        "PartitionName=d Nodes=localhost\n", f);
  fclose(f);
  if (!live) {
    printf("hostlist_test: no /usr/bin/scontrol: the random lists are "
           "checked against nothing but themselves\n");
  }
  for (int iter = 0; iter < (live ? 40 : 200); iter++) {
    char list[512], cmd[1024], want[8192] = "";
    random_list(list, sizeof list);
    const char *got = expand_ok(list);
    if (!live) {
      ck_assert(got[0] != '\0');
      continue;
    }
    snprintf(cmd, sizeof cmd, "SLURM_CONF=%s scontrol show hostnames '%s' "
             "2>&1 | tr '\\n' ' '", conf, list);
    FILE *p = popen(cmd, "r");
    size_t n = fread(want, 1, sizeof want - 1, p);
    pclose(p);
    while (n > 0 && want[n - 1] == ' ') {
      n--;
    }
    want[n] = '\0';
    ck_assert_msg(strcmp(got, want) == 0, "%s: got '%s', scontrol '%s'", list,
                  got, want);
  }
  unlink(conf);
  rmdir(dir);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("hostlist");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_scontrol_table);
  tcase_add_test(tc, test_bad_lists);
  tcase_add_test(tc, test_caps);
  tcase_add_test(tc, test_tasks_per_node);
  tcase_add_test(tc, test_random_against_scontrol);
  suite_add_tcase(s, tc);
  return s;
}
