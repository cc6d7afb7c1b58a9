/* strmap_test.c: the string map against a plain reference array under
 * random put/get/del of 10k keys, and backward-shift deletion on crafted
 * probe runs (keys sharing a home slot, runs that wrap the table end). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/strmap.h"
#include "test/unit/testutil.h"

/* The map's hash (FNV-1a), to build keys that collide on purpose. */
static uint64_t fnv1a(const char *s) {
  uint64_t h = 1469598103934665603ULL;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  return h;
}

/* For hot loops: unlike ck_assert, costs nothing when it holds (every
 * ck_assert writes a checkpoint to Check's pipe). */
#define EXPECT(cond, ...)                                                      \
  do {                                                                         \
    if (!(cond)) ck_abort_msg(__VA_ARGS__);                                    \
  } while (0)

static void *val(size_t i) { return (void *)(uintptr_t)(i * 16 + 8); }

START_TEST(test_empty) {
  tf__strmap m;
  tf__strmap_init(&m);
  bool found = true;
  ck_assert_ptr_null(tf__strmap_get(&m, "x", &found));
  ck_assert(!found);
  ck_assert_ptr_null(tf__strmap_get(&m, "", NULL));
  ck_assert(!tf__strmap_del(&m, "x"));
  ck_assert_int_eq(m.n, 0);
  tf__strmap_fini(&m);
  tf__strmap_fini(&m); /* fini leaves an empty map */
  ck_assert_int_eq(m.cap, 0);
}
END_TEST

START_TEST(test_put_get_replace_del) {
  tf__strmap m;
  tf__strmap_init(&m);
  int a = 1, b = 2;
  tf__strmap_put(&m, "conv1", &a);
  tf__strmap_put(&m, "", &b); /* the empty key is a key */
  ck_assert_int_eq(m.n, 2);
  bool found = false;
  ck_assert_ptr_eq(tf__strmap_get(&m, "conv1", &found), &a);
  ck_assert(found);
  ck_assert_ptr_eq(tf__strmap_get(&m, "", NULL), &b);
  ck_assert_ptr_null(tf__strmap_get(&m, "conv", &found));
  ck_assert(!found);
  ck_assert_ptr_null(tf__strmap_get(&m, "conv12", &found));
  tf__strmap_put(&m, "conv1", &b); /* replace */
  ck_assert_int_eq(m.n, 2);
  ck_assert_ptr_eq(tf__strmap_get(&m, "conv1", NULL), &b);
  /* A NULL value is stored and found. */
  tf__strmap_put(&m, "null", NULL);
  ck_assert_ptr_null(tf__strmap_get(&m, "null", &found));
  ck_assert(found);
  ck_assert_int_eq(m.n, 3);
  ck_assert(tf__strmap_del(&m, "conv1"));
  ck_assert(!tf__strmap_del(&m, "conv1"));
  ck_assert_ptr_null(tf__strmap_get(&m, "conv1", &found));
  ck_assert(!found);
  ck_assert_int_eq(m.n, 2);
  tf__strmap_fini(&m);
}
END_TEST

START_TEST(test_keys_are_copied) {
  tf__strmap m;
  tf__strmap_init(&m);
  char key[16];
  for (int i = 0; i < 100; i++) {
    snprintf(key, sizeof key, "node_%d", i);
    tf__strmap_put(&m, key, val((size_t)i));
  }
  strcpy(key, "overwritten");
  for (int i = 0; i < 100; i++) {
    char k[16];
    snprintf(k, sizeof k, "node_%d", i);
    EXPECT(tf__strmap_get(&m, k, NULL) == val((size_t)i), "lost '%s'", k);
  }
  ck_assert_ptr_null(tf__strmap_get(&m, "overwritten", NULL));
  ck_assert_int_eq(m.n, 100);
  ck_assert(m.cap >= 2 * m.n && (m.cap & (m.cap - 1)) == 0);
  tf__strmap_fini(&m);
}
END_TEST

/* Reference: a plain array of keys with presence flags and values. */
typedef struct {
  char key[16];
  bool present;
  void *v;
} ref_entry;

static void check_all(const tf__strmap *m, const ref_entry *ref, size_t n_keys) {
  size_t count = 0;
  for (size_t i = 0; i < n_keys; i++) {
    bool found;
    void *v = tf__strmap_get(m, ref[i].key, &found);
    EXPECT(found == ref[i].present, "key '%s': found %d, want %d (seed %llu)",
           ref[i].key, found, ref[i].present, (unsigned long long)tt_seed());
    EXPECT(!found || v == ref[i].v, "key '%s': wrong value", ref[i].key);
    count += ref[i].present;
  }
  ck_assert_int_eq(m->n, count);
}

START_TEST(test_random_against_reference) {
  enum { N_KEYS = 10000, N_OPS = 60000 };
  ref_entry *ref = calloc(N_KEYS, sizeof *ref);
  ck_assert_ptr_nonnull(ref);
  /* Distinct random keys: a random body plus the index. */
  for (size_t i = 0; i < N_KEYS; i++) {
    int len = (int)(tt_rand_u64() % 6);
    char body[8];
    for (int k = 0; k < len; k++) body[k] = (char)('a' + tt_rand_u64() % 26);
    body[len] = '\0';
    snprintf(ref[i].key, sizeof ref[i].key, "%s%zu", body, i);
  }
  tf__strmap m;
  tf__strmap_init(&m);
  for (int op = 0; op < N_OPS; op++) {
    size_t i = (size_t)(tt_rand_u64() % N_KEYS);
    unsigned kind = (unsigned)(tt_rand_u64() % 10);
    if (kind < 5) {
      void *v = val(tt_rand_u64() % 1000000);
      tf__strmap_put(&m, ref[i].key, v);
      ref[i].present = true;
      ref[i].v = v;
    } else if (kind < 8) {
      EXPECT(tf__strmap_del(&m, ref[i].key) == ref[i].present, "del '%s' (seed %llu)",
             ref[i].key, (unsigned long long)tt_seed());
      ref[i].present = false;
    } else {
      bool found;
      void *v = tf__strmap_get(&m, ref[i].key, &found);
      EXPECT(found == ref[i].present && v == (ref[i].present ? ref[i].v : NULL),
             "get '%s' (seed %llu)", ref[i].key, (unsigned long long)tt_seed());
    }
    if (op % 10000 == 9999) check_all(&m, ref, N_KEYS);
  }
  check_all(&m, ref, N_KEYS);
  /* Delete everything in random order, checking as we go. */
  for (size_t i = N_KEYS - 1; i > 0; i--) {
    size_t j = (size_t)(tt_rand_u64() % (i + 1));
    ref_entry t = ref[i];
    ref[i] = ref[j];
    ref[j] = t;
  }
  for (size_t i = 0; i < N_KEYS; i++) {
    EXPECT(tf__strmap_del(&m, ref[i].key) == ref[i].present, "del '%s'", ref[i].key);
    ref[i].present = false;
    if (i % 2500 == 0) check_all(&m, ref, N_KEYS);
  }
  ck_assert_int_eq(m.n, 0);
  tf__strmap_fini(&m);
  free(ref);
}
END_TEST

/* Keys whose hash has the given low bits. */
static void keys_with_home(uint64_t mask, uint64_t home, int n, char keys[][16],
                           int *counter) {
  for (int found = 0; found < n; (*counter)++) {
    char k[16];
    snprintf(k, sizeof k, "k%d", *counter);
    if ((fnv1a(k) & mask) == home) strcpy(keys[found++], k);
  }
}

/* Inserts keys[0..n) in order, then deletes them in the order perm, checking
 * after each deletion that exactly the not-yet-deleted keys are found. */
static void delete_in_order(char keys[][16], int n, const int *perm,
                            size_t expect_cap) {
  tf__strmap m;
  tf__strmap_init(&m);
  for (int i = 0; i < n; i++) tf__strmap_put(&m, keys[i], val((size_t)i));
  if (expect_cap) ck_assert_int_eq(m.cap, expect_cap);
  bool gone[64] = {false};
  for (int d = 0; d < n; d++) {
    EXPECT(tf__strmap_del(&m, keys[perm[d]]), "del '%s'", keys[perm[d]]);
    gone[perm[d]] = true;
    for (int i = 0; i < n; i++) {
      bool found;
      void *v = tf__strmap_get(&m, keys[i], &found);
      EXPECT(found == !gone[i], "after deleting %d keys: '%s' found=%d", d + 1,
             keys[i], found);
      EXPECT(!found || v == val((size_t)i), "'%s' has a wrong value", keys[i]);
    }
    EXPECT(m.n == (size_t)(n - d - 1), "count %zu after %d deletions", m.n, d + 1);
  }
  tf__strmap_fini(&m);
}

static void random_perm(int *perm, int n) {
  for (int i = 0; i < n; i++) perm[i] = i;
  for (int i = n - 1; i > 0; i--) {
    int j = (int)(tt_rand_u64() % (uint64_t)(i + 1));
    int t = perm[i];
    perm[i] = perm[j];
    perm[j] = t;
  }
}

/* 8 keys in a 16-slot table: all with home slot 15 (the run wraps to slot
 * 0), or mixed homes 14, 15, 0 and 1 so entries sit inside each other's
 * runs. Backward shift must never move a key before its home. */
START_TEST(test_delete_wrapping_runs) {
  char keys[8][16];
  int counter = 0, perm[8];
  keys_with_home(15, 15, 8, keys, &counter);
  for (int trial = 0; trial < 200; trial++) {
    random_perm(perm, 8);
    delete_in_order(keys, 8, perm, 16);
  }
  keys_with_home(15, 14, 2, keys, &counter);
  keys_with_home(15, 15, 2, keys + 2, &counter);
  keys_with_home(15, 0, 2, keys + 4, &counter);
  keys_with_home(15, 1, 2, keys + 6, &counter);
  for (int trial = 0; trial < 300; trial++) {
    random_perm(perm, 8);
    delete_in_order(keys, 8, perm, 16);
  }
}
END_TEST

/* Many keys sharing their low 10 hash bits collide at every table size the
 * test reaches; delete first, middle and last of the run, then random. */
START_TEST(test_delete_heavy_collisions) {
  char keys[48][16];
  int counter = 0, perm[48];
  keys_with_home(1023, 77, 40, keys, &counter);
  keys_with_home(1023, 78, 8, keys + 40, &counter);
  for (int i = 0; i < 48; i++) perm[i] = i;
  delete_in_order(keys, 48, perm, 0);
  for (int i = 0; i < 48; i++) perm[i] = 47 - i;
  delete_in_order(keys, 48, perm, 0);
  for (int i = 0; i < 48; i++) perm[i] = (i * 17) % 48; /* 17 is coprime to 48 */
  delete_in_order(keys, 48, perm, 0);
  for (int trial = 0; trial < 20; trial++) {
    random_perm(perm, 48);
    delete_in_order(keys, 48, perm, 0);
  }
}
END_TEST

/* Re-inserting after deletes reuses freed slots and keeps lookups right. */
START_TEST(test_churn) {
  tf__strmap m;
  tf__strmap_init(&m);
  char k[32];
  for (int round = 0; round < 50; round++) {
    for (int i = 0; i < 200; i++) {
      snprintf(k, sizeof k, "r%d_%d", round % 3, i);
      tf__strmap_put(&m, k, val((size_t)(round * 1000 + i)));
    }
    for (int i = 0; i < 200; i += 2) {
      snprintf(k, sizeof k, "r%d_%d", round % 3, i);
      EXPECT(tf__strmap_del(&m, k), "del '%s'", k);
    }
  }
  /* Odd keys of each of the 3 name groups remain, from the last round that
   * used the group. */
  ck_assert_int_eq(m.n, 300);
  for (int g = 0; g < 3; g++) {
    int last = 49 - ((49 - g) % 3);
    for (int i = 0; i < 200; i++) {
      snprintf(k, sizeof k, "r%d_%d", g, i);
      bool found;
      void *v = tf__strmap_get(&m, k, &found);
      EXPECT(found == (i % 2 == 1), "'%s' found=%d", k, found);
      EXPECT(!found || v == val((size_t)(last * 1000 + i)), "'%s' value", k);
    }
  }
  ck_assert_int_le(m.cap, 1024);
  tf__strmap_fini(&m);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("strmap");
  TCase *tc = tcase_create("strmap");
  tcase_add_test(tc, test_empty);
  tcase_add_test(tc, test_put_get_replace_del);
  tcase_add_test(tc, test_keys_are_copied);
  tcase_add_test(tc, test_random_against_reference);
  tcase_add_test(tc, test_delete_wrapping_runs);
  tcase_add_test(tc, test_delete_heavy_collisions);
  tcase_add_test(tc, test_churn);
  suite_add_tcase(s, tc);
  return s;
}
