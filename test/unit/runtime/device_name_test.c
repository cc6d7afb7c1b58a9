/* device_name_test.c: device names: parsing of full, partial, wildcard and
 * legacy forms into hand-written parts, canonical printing and round trips
 * (tables and random names), tables of matches / compatible / merge cases,
 * task names, clipping to small buffers, and malformed names (code and a
 * message naming the name and the problem). */
#include <stdio.h>
#include <string.h>

#include "lib/runtime/device_name.h"
#include "test/unit/testutil.h"

/* Parts written as a string: job ("" unset), replica/task/id (-1 unset),
 * type ("" unset). */
typedef struct parts {
  const char *job;
  int replica, task;
  const char *type;
  int id;
} parts;

static tf_devname make(parts p) {
  tf_devname d;
  memset(&d, 0, sizeof d);
  if (p.job[0] != '\0') {
    d.has_job = true;
    snprintf(d.job, sizeof d.job, "%s", p.job);
  }
  d.has_replica = p.replica >= 0;
  d.replica = d.has_replica ? p.replica : 0;
  d.has_task = p.task >= 0;
  d.task = d.has_task ? p.task : 0;
  if (p.type[0] != '\0') {
    d.has_type = true;
    snprintf(d.type, sizeof d.type, "%s", p.type);
  }
  d.has_id = p.id >= 0;
  d.id = d.has_id ? p.id : 0;
  return d;
}

/* Field-by-field equality of the parts that are set. */
static void assert_same(const tf_devname *a, const tf_devname *b,
                        const char *what) {
  ck_assert_msg(a->has_job == b->has_job && a->has_replica == b->has_replica &&
                    a->has_task == b->has_task && a->has_type == b->has_type &&
                    a->has_id == b->has_id,
                "%s: different parts set", what);
  ck_assert_msg(!a->has_job || strcmp(a->job, b->job) == 0, "%s: job", what);
  ck_assert_msg(!a->has_replica || a->replica == b->replica, "%s: replica",
                what);
  ck_assert_msg(!a->has_task || a->task == b->task, "%s: task", what);
  ck_assert_msg(!a->has_type || strcmp(a->type, b->type) == 0, "%s: type",
                what);
  ck_assert_msg(!a->has_id || a->id == b->id, "%s: id", what);
}

static tf_devname parse_ok(const char *s) {
  tf_status st;
  tf_status_init(&st);
  tf_devname d;
  ck_assert_msg(tf_devname_parse(s, &d, &st) == TF_OK, "'%s': %s", s, st.msg);
  return d;
}

static const struct {
  const char *in;
  parts want;
  const char *canonical;
} good[] = {
    {"/job:worker/replica:0/task:1/device:CPU:0", {"worker", 0, 1, "CPU", 0},
     "/job:worker/replica:0/task:1/device:CPU:0"},
    {"", {"", -1, -1, "", -1}, ""},
    {"/", {"", -1, -1, "", -1}, ""},
    {"/job:ps", {"ps", -1, -1, "", -1}, "/job:ps"},
    {"/job:worker/task:1", {"worker", -1, 1, "", -1}, "/job:worker/task:1"},
    {"/device:CPU:0", {"", -1, -1, "CPU", 0}, "/device:CPU:0"},
    {"/device:GPU:*", {"", -1, -1, "GPU", -1}, "/device:GPU:*"},
    {"/device:GPU", {"", -1, -1, "GPU", -1}, "/device:GPU:*"},
    {"/device:gpu:3", {"", -1, -1, "GPU", 3}, "/device:GPU:3"},
    {"/device:*:2", {"", -1, -1, "", 2}, "/device:*:2"},
    {"/device:*", {"", -1, -1, "", -1}, ""},
    {"/job:worker/task:*/device:CPU:0", {"worker", -1, -1, "CPU", 0},
     "/job:worker/device:CPU:0"},
    {"/job:*/replica:*/task:*/device:*:*", {"", -1, -1, "", -1}, ""},
    {"/cpu:0", {"", -1, -1, "CPU", 0}, "/device:CPU:0"},
    {"/gpu:1", {"", -1, -1, "GPU", 1}, "/device:GPU:1"},
    {"/GPU:2", {"", -1, -1, "GPU", 2}, "/device:GPU:2"},
    {"/cpu:*", {"", -1, -1, "CPU", -1}, "/device:CPU:*"},
    {"/job:localhost/replica:0/task:0/cpu:0", {"localhost", 0, 0, "CPU", 0},
     "/job:localhost/replica:0/task:0/device:CPU:0"},
    {"/device:CPU:1/job:w-2_x/task:12", {"w-2_x", -1, 12, "CPU", 1},
     "/job:w-2_x/task:12/device:CPU:1"},
    {"/replica:3", {"", 3, -1, "", -1}, "/replica:3"},
    {"/job:a/task:2147483647", {"a", -1, 2147483647, "", -1},
     "/job:a/task:2147483647"},
    {"/device:XLA_CPU:0", {"", -1, -1, "XLA_CPU", 0}, "/device:XLA_CPU:0"},
    {"/device:abcdefghijklmno:0", {"", -1, -1, "ABCDEFGHIJKLMNO", 0},
     "/device:ABCDEFGHIJKLMNO:0"}, /* 15 characters: the longest */
};

START_TEST(test_parse_and_print) {
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    tf_devname d = parse_ok(good[i].in);
    tf_devname want = make(good[i].want);
    assert_same(&d, &want, good[i].in);
    char buf[128];
    ck_assert_str_eq(tf_devname_str(&d, buf, sizeof buf), good[i].canonical);
    /* The canonical form parses back to the same parts (except that
     * "/device:*" prints as nothing, which parses to the same). */
    tf_devname back = parse_ok(buf);
    assert_same(&back, &d, buf);
  }
}
END_TEST

static const struct {
  const char *in, *what;
} bad[] = {
    {"job:ps", "expected '/' before each part"},
    {"/job:ps/", "empty part"},
    {"//job:ps", "empty part"},
    {"/foo:1", "unknown part (expected job, replica, task, device, cpu or "
               "gpu) in '/foo:1'"},
    {"/job", "missing ':' after the part's name in '/job'"},
    {"/task", "missing ':'"},
    {"/job:", "empty job name in '/job:'"},
    {"/job:a b", "job name has a character other than [A-Za-z0-9_-] in "
                 "'/job:a b'"},
    {"/job:a.b", "character other than [A-Za-z0-9_-]"},
    {"/job:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
     "job name is longer than 63 characters"},
    {"/task:-1", "negative index in '/task:-1'"},
    {"/task:x", "index is not a non-negative integer in '/task:x'"},
    {"/task:1x", "not a non-negative integer"},
    {"/task:", "missing index in '/task:'"},
    {"/replica:2147483648", "index is too large"},
    {"/task:99999999999999999999", "index is too large"},
    {"/job:a/job:b", "duplicate part in '/job:b'"},
    {"/task:1/task:1", "duplicate part"},
    {"/device:CPU:0/cpu:0", "the device is given twice in '/cpu:0'"},
    {"/device:CPU:-1", "negative index in '/device:CPU:-1'"},
    {"/device:CPU:a", "not a non-negative integer"},
    {"/device:", "device type must start with a letter"},
    {"/device:0:0", "device type must start with a letter"},
    {"/device:C-PU:0", "device type has a character other than [A-Za-z0-9_]"},
    {"/device:ABCDEFGHIJKLMNOP:0", "device type is too long"}, /* 16 */
    {"/gpu:-2", "negative index"},
    {"/gpu:", "missing index"},
};

START_TEST(test_bad_names) {
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    tf_status st;
    tf_status_init(&st);
    tf_devname d = make((parts){"keep", 1, 2, "CPU", 3});
    tf_devname before = d;
    ck_assert_msg(tf_devname_parse(bad[i].in, &d, &st) == TF_INVALID_ARGUMENT,
                  "'%s' parsed", bad[i].in);
    ck_assert_int_eq(st.code, TF_INVALID_ARGUMENT);
    char name[128];
    snprintf(name, sizeof name, "device '%s': ", bad[i].in);
    ck_assert_msg(strncmp(st.msg, name, strlen(name)) == 0,
                  "'%s' does not name the device", st.msg);
    ck_assert_msg(strstr(st.msg, bad[i].what) != NULL, "'%s' lacks '%s'",
                  st.msg, bad[i].what);
    assert_same(&d, &before, "out unchanged on error");
  }
  tf_status st;
  tf_devname d;
  ck_assert_int_eq(tf_devname_parse(NULL, &d, &st), TF_INVALID_ARGUMENT);
}
END_TEST

/* spec, name, matches(spec, name), compatible(spec, name), and the merge
 * of name into spec ("!" when they conflict). */
static const struct {
  const char *a, *b;
  bool matches, compatible;
  const char *merged;
} pairs[] = {
    {"", "/job:w/replica:0/task:1/device:CPU:0", true, true,
     "/job:w/replica:0/task:1/device:CPU:0"},
    {"/job:w", "/job:w/replica:0/task:1/device:CPU:0", true, true,
     "/job:w/replica:0/task:1/device:CPU:0"},
    {"/job:ps", "/job:w/replica:0/task:1/device:CPU:0", false, false, "!"},
    {"/job:w/task:1", "/job:w/replica:0/task:1/device:CPU:0", true, true,
     "/job:w/replica:0/task:1/device:CPU:0"},
    {"/job:w/task:2", "/job:w/replica:0/task:1/device:CPU:0", false, false,
     "!"},
    {"/device:GPU:*", "/job:w/replica:0/task:1/device:GPU:3", true, true,
     "/job:w/replica:0/task:1/device:GPU:3"},
    {"/device:GPU:*", "/job:w/replica:0/task:1/device:CPU:0", false, false,
     "!"},
    {"/gpu:1", "/job:w/replica:0/task:0/device:GPU:1", true, true,
     "/job:w/replica:0/task:0/device:GPU:1"},
    {"/cpu:0", "/job:w/replica:0/task:0/device:CPU:1", false, false, "!"},
    {"/job:w/task:*/device:CPU:0", "/job:w/replica:0/task:7/device:CPU:0",
     true, true, "/job:w/replica:0/task:7/device:CPU:0"},
    {"/device:*:2", "/device:GPU:2", true, true, "/device:GPU:2"},
    {"/device:*:2", "/device:GPU:1", false, false, "!"},
    /* partial against partial: compatible, but no match where b lacks a
     * part a sets */
    {"/job:w/task:1", "/job:w", false, true, "/job:w/task:1"},
    {"/job:w", "/task:1", false, true, "/job:w/task:1"},
    {"/device:CPU:0", "/job:ps/task:0", false, true,
     "/job:ps/task:0/device:CPU:0"},
    {"/device:GPU:*", "/device:GPU:0", true, true, "/device:GPU:0"},
    {"/device:GPU:0", "/device:GPU:*", false, true, "/device:GPU:0"},
    {"/replica:1", "/job:w/replica:0", false, false, "!"},
    {"/job:w/device:CPU:0", "", false, true, "/job:w/device:CPU:0"},
    {"", "", true, true, ""},
};

START_TEST(test_match_compatible_merge) {
  for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
    tf_devname a = parse_ok(pairs[i].a), b = parse_ok(pairs[i].b);
    ck_assert_msg(tf_devname_matches(&a, &b) == pairs[i].matches,
                  "matches('%s', '%s')", pairs[i].a, pairs[i].b);
    ck_assert_msg(tf_devname_compatible(&a, &b) == pairs[i].compatible,
                  "compatible('%s', '%s')", pairs[i].a, pairs[i].b);
    ck_assert_msg(tf_devname_compatible(&b, &a) == pairs[i].compatible,
                  "compatible is symmetric ('%s', '%s')", pairs[i].a,
                  pairs[i].b);
    tf_devname m = a;
    bool ok = tf_devname_merge(&m, &b);
    char buf[128];
    if (pairs[i].merged[0] == '!') {
      ck_assert_msg(!ok, "merge('%s', '%s') succeeded", pairs[i].a, pairs[i].b);
      assert_same(&m, &a, "merge leaves into unchanged on conflict");
    } else {
      ck_assert_msg(ok, "merge('%s', '%s') failed", pairs[i].a, pairs[i].b);
      ck_assert_str_eq(tf_devname_str(&m, buf, sizeof buf), pairs[i].merged);
      /* The merge is compatible with and matched by both inputs. */
      ck_assert(tf_devname_matches(&a, &m) && tf_devname_matches(&b, &m));
    }
    /* A spec always matches itself. */
    ck_assert(tf_devname_matches(&a, &a));
  }
}
END_TEST

START_TEST(test_task_and_clipping) {
  char buf[128];
  tf_devname d = parse_ok("/job:worker/replica:0/task:3/device:GPU:1");
  ck_assert_str_eq(tf_devname_task(&d, buf, sizeof buf),
                   "/job:worker/replica:0/task:3");
  d = parse_ok("/job:ps/task:2"); /* replica defaults to 0 */
  ck_assert_str_eq(tf_devname_task(&d, buf, sizeof buf),
                   "/job:ps/replica:0/task:2");
  d = parse_ok("/job:ps/replica:1/task:2");
  ck_assert_str_eq(tf_devname_task(&d, buf, sizeof buf),
                   "/job:ps/replica:1/task:2");
  d = parse_ok("/job:ps");
  ck_assert_str_eq(tf_devname_task(&d, buf, sizeof buf), "");
  d = parse_ok("/job:worker/replica:0/task:3/device:GPU:1");
  const char *full = "/job:worker/replica:0/task:3/device:GPU:1";
  for (size_t n = 1; n <= strlen(full) + 1; n++) {
    char small[64];
    memset(small, 'Z', sizeof small);
    tf_devname_str(&d, small, n);
    ck_assert_int_eq(strlen(small), n - 1);
    ck_assert(strncmp(small, full, n - 1) == 0);
    ck_assert(small[n] == 'Z'); /* nothing written past n */
    tf_devname_task(&d, small, n);
    ck_assert(strlen(small) < n);
  }
  char none[1] = {'Z'};
  tf_devname_str(&d, none, 0); /* n == 0 writes nothing */
  ck_assert(none[0] == 'Z');
}
END_TEST

/* Random names: print, parse back, compare parts; legacy spellings of
 * the same device parse to the same parts. */
START_TEST(test_random_round_trip) {
  tt_rng_reseed(tt_seed() ^ 0xde71ce);
  static const char *const jobs[] = {"worker", "ps", "master", "a_b-9", "J"};
  static const char *const types[] = {"CPU", "GPU", "TPU", "XLA_GPU"};
  for (int iter = 0; iter < 2000; iter++) {
    uint64_t r = tt_rand_u64();
    parts p = {r & 1 ? jobs[tt_rand_u64() % 5] : "",
               r & 2 ? (int)(tt_rand_u64() % 4) : -1,
               r & 4 ? (int)(tt_rand_u64() % 100000) : -1,
               r & 8 ? types[tt_rand_u64() % 4] : "",
               r & 16 ? (int)(tt_rand_u64() % 16) : -1};
    tf_devname d = make(p);
    char buf[128];
    tf_devname_str(&d, buf, sizeof buf);
    tf_devname back = parse_ok(buf);
    assert_same(&back, &d, buf);
    /* A legacy spelling of a CPU/GPU device means the same. */
    bool cpu = d.has_type && strcmp(d.type, "CPU") == 0;
    if (d.has_id && (cpu || (d.has_type && strcmp(d.type, "GPU") == 0))) {
      char legacy[160];
      snprintf(legacy, sizeof legacy, "%s/%s:%d", buf[0] ? "/job:x" : "",
               cpu ? "cpu" : "gpu", d.id);
      tf_devname l = parse_ok(legacy);
      ck_assert(l.has_type && l.has_id);
      ck_assert_str_eq(l.type, d.type);
      ck_assert_int_eq(l.id, d.id);
    }
  }
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("device_name");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_parse_and_print);
  tcase_add_test(tc, test_bad_names);
  tcase_add_test(tc, test_match_compatible_merge);
  tcase_add_test(tc, test_task_and_clipping);
  tcase_add_test(tc, test_random_round_trip);
  suite_add_tcase(s, tc);
  return s;
}
