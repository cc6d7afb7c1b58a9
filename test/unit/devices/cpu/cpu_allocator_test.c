/* cpu_allocator_test.c: the CPU allocator's alignment, byte statistics
 * (in use, peak, count, also under concurrent use), zero-size requests, and
 * huge requests that must return NULL instead of aborting. */
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "test/unit/testutil.h"

static long long in_use(tf_allocator *a) { return tf_allocator_get_stats(a).bytes_in_use; }
static long long peak(tf_allocator *a) { return tf_allocator_get_stats(a).peak_bytes; }
static long long count(tf_allocator *a) { return tf_allocator_get_stats(a).num_allocs; }

START_TEST(test_identity) {
  tf_allocator *a = tf_cpu_allocator();
  ck_assert_ptr_nonnull(a);
  ck_assert_ptr_eq(tf_cpu_allocator(), a);
  ck_assert_str_eq(a->name, "cpu");
  ck_assert_ptr_nonnull(a->alloc);
  ck_assert_ptr_nonnull(a->free);
  ck_assert_int_eq(TF_ALLOC_ALIGN, 64);
}
END_TEST

START_TEST(test_alignment_and_usable_size) {
  tf_allocator *a = tf_cpu_allocator();
  static void *ps[400];
  size_t sizes[400];
  for (int i = 0; i < 400; i++) {
    sizes[i] = i < 300 ? (size_t)i : (size_t)1 << ((i - 300) % 22);
    ps[i] = a->alloc(a, sizes[i]);
    ck_assert_msg(ps[i] != NULL, "alloc %zu", sizes[i]);
    ck_assert_msg(((uintptr_t)ps[i] & (TF_ALLOC_ALIGN - 1)) == 0, "%zu bytes at %p",
                  sizes[i], ps[i]);
    memset(ps[i], (int)i, sizes[i]); /* every byte usable (ASan checks) */
  }
  for (int i = 0; i < 400; i++) {
    const unsigned char *b = ps[i];
    if (sizes[i]) ck_assert_int_eq(b[sizes[i] - 1], (unsigned char)i);
    a->free(a, ps[i], sizes[i]);
  }
}
END_TEST

START_TEST(test_blocks_do_not_overlap) {
  tf_allocator *a = tf_cpu_allocator();
  enum { N = 64 };
  unsigned char *ps[N];
  for (int i = 0; i < N; i++) {
    ps[i] = a->alloc(a, 100);
    memset(ps[i], i, 100);
  }
  for (int i = 0; i < N; i++) {
    for (int k = 0; k < 100; k++) {
      if (ps[i][k] != i) ck_abort_msg("block %d byte %d is %d", i, k, ps[i][k]);
    }
    a->free(a, ps[i], 100);
  }
}
END_TEST

START_TEST(test_stats) {
  tf_allocator *a = tf_cpu_allocator();
  long long u0 = in_use(a), c0 = count(a);
  void *p = a->alloc(a, 1000);
  ck_assert_int_eq(in_use(a) - u0, 1000); /* requested bytes, not rounded */
  ck_assert_int_eq(count(a) - c0, 1);
  ck_assert_int_ge(peak(a), in_use(a));
  void *q = a->alloc(a, 1 << 20);
  ck_assert_int_eq(in_use(a) - u0, 1000 + (1 << 20));
  long long pk = peak(a);
  ck_assert_int_ge(pk, u0 + 1000 + (1 << 20));
  a->free(a, q, 1 << 20);
  ck_assert_int_eq(in_use(a) - u0, 1000);
  ck_assert_int_eq(peak(a), pk); /* the peak stays */
  a->free(a, p, 1000);
  ck_assert_int_eq(in_use(a), u0);
  ck_assert_int_eq(count(a) - c0, 2); /* frees do not count */
}
END_TEST

START_TEST(test_zero_size) {
  tf_allocator *a = tf_cpu_allocator();
  long long u0 = in_use(a), c0 = count(a);
  void *p = a->alloc(a, 0), *q = a->alloc(a, 0);
  ck_assert_ptr_nonnull(p);
  ck_assert_ptr_nonnull(q);
  ck_assert_ptr_ne(p, q); /* unique pointers */
  ck_assert(((uintptr_t)p & 63) == 0 && ((uintptr_t)q & 63) == 0);
  ck_assert_int_eq(in_use(a), u0);
  ck_assert_int_eq(count(a) - c0, 2);
  a->free(a, p, 0);
  a->free(a, q, 0);
  ck_assert_int_eq(in_use(a), u0);
}
END_TEST

START_TEST(test_free_null) {
  tf_allocator *a = tf_cpu_allocator();
  long long u0 = in_use(a);
  a->free(a, NULL, 0);
  a->free(a, NULL, 4096);
  ck_assert_int_eq(in_use(a), u0);
}
END_TEST

/* Requests no machine can satisfy give NULL, change no statistics and do
 * not abort (also under ASan). */
START_TEST(test_huge_returns_null) {
  tf_allocator *a = tf_cpu_allocator();
  const size_t huge[] = {SIZE_MAX, SIZE_MAX - 1, SIZE_MAX - 63, SIZE_MAX - 64,
                         (size_t)1 << 63, (size_t)1 << 62, (size_t)1 << 50,
                         ((size_t)1 << 48) + 1};
  for (size_t i = 0; i < sizeof huge / sizeof huge[0]; i++) {
    long long u0 = in_use(a), c0 = count(a), p0 = peak(a);
    void *p = a->alloc(a, huge[i]);
    ck_assert_msg(p == NULL, "alloc(%zu) gave %p", huge[i], p);
    ck_assert_int_eq(in_use(a), u0);
    ck_assert_int_eq(count(a), c0);
    ck_assert_int_eq(peak(a), p0);
  }
  /* Anything beyond physical memory is refused up front. */
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) {
    size_t phys = (size_t)pages * (size_t)page;
    ck_assert_ptr_null(a->alloc(a, phys + 1));
    ck_assert_ptr_null(a->alloc(a, phys * 2));
  }
  /* The allocator still works afterwards. */
  void *p = a->alloc(a, 64);
  ck_assert_ptr_nonnull(p);
  a->free(a, p, 64);
}
END_TEST

START_TEST(test_note_functions) {
  tf_allocator a;
  memset(&a, 0, sizeof a);
  tf_allocator_note_alloc(&a, 100);
  ck_assert(in_use(&a) == 100 && peak(&a) == 100 && count(&a) == 1);
  tf_allocator_note_alloc(&a, 50);
  ck_assert(in_use(&a) == 150 && peak(&a) == 150 && count(&a) == 2);
  tf_allocator_note_free(&a, 120);
  ck_assert(in_use(&a) == 30 && peak(&a) == 150 && count(&a) == 2);
  tf_allocator_note_alloc(&a, 10);
  ck_assert(in_use(&a) == 40 && peak(&a) == 150 && count(&a) == 3);
  tf_allocator_note_alloc(&a, 200);
  ck_assert(in_use(&a) == 240 && peak(&a) == 240);
  tf_allocator_note_alloc(&a, 0);
  ck_assert(in_use(&a) == 240 && count(&a) == 5);
  /* reset_peak starts a new measurement at the bytes in use now */
  tf_allocator_note_free(&a, 200);
  ck_assert(in_use(&a) == 40 && peak(&a) == 240);
  tf_allocator_reset_peak(&a);
  ck_assert(in_use(&a) == 40 && peak(&a) == 40 && count(&a) == 5);
  tf_allocator_note_alloc(&a, 25);
  ck_assert(in_use(&a) == 65 && peak(&a) == 65 && count(&a) == 6);
}
END_TEST

enum { THREADS = 4, ITERS = 5000 };

static void *stats_worker(void *arg) {
  tf_allocator *a = arg;
  for (int i = 0; i < ITERS; i++) {
    size_t n = (size_t)(i % 7) * 100 + 1;
    void *p = a->alloc(a, n);
    if (p == NULL) return (void *)1;
    ((char *)p)[n - 1] = 1;
    a->free(a, p, n);
  }
  return NULL;
}

static void *note_worker(void *arg) {
  tf_allocator *a = arg;
  for (int i = 0; i < ITERS; i++) {
    tf_allocator_note_alloc(a, 10);
    tf_allocator_note_free(a, 10);
  }
  return NULL;
}

/* Concurrent allocations keep exact counts; the peak never exceeds what
 * could be live at once. */
START_TEST(test_stats_concurrent) {
  tf_allocator *a = tf_cpu_allocator();
  long long u0 = in_use(a), c0 = count(a);
  pthread_t th[THREADS];
  for (int i = 0; i < THREADS; i++) pthread_create(&th[i], NULL, stats_worker, a);
  for (int i = 0; i < THREADS; i++) {
    void *r;
    pthread_join(th[i], &r);
    ck_assert_ptr_null(r);
  }
  ck_assert_int_eq(in_use(a), u0);
  ck_assert_int_eq(count(a) - c0, THREADS * ITERS);
  tf_allocator b;
  memset(&b, 0, sizeof b);
  for (int i = 0; i < THREADS; i++) pthread_create(&th[i], NULL, note_worker, &b);
  for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
  ck_assert_int_eq(in_use(&b), 0);
  ck_assert_int_eq(count(&b), THREADS * ITERS);
  ck_assert(peak(&b) >= 10 && peak(&b) <= 10 * THREADS);
}
END_TEST

#if defined(__SANITIZE_ADDRESS__)
#define ALLOC_CACHE_ON 0
#else
#define ALLOC_CACHE_ON 1
#endif

/* Large blocks come back for the next request of the same page-rounded
 * size (not under ASan, where the cache is off), stats still count only
 * live bytes, and contents are not promised. */
START_TEST(test_large_block_cache) {
  tf_allocator *a = tf_cpu_allocator();
  long long u0 = in_use(a);
  size_t big = (4u << 20) + 100;
  char *p = a->alloc(a, big);
  ck_assert_ptr_nonnull(p);
  memset(p, 1, big);
  a->free(a, p, big);
  ck_assert_int_eq(in_use(a), u0);
  char *q = a->alloc(a, big + 50); /* same page-rounded size */
  ck_assert_ptr_nonnull(q);
  ck_assert_int_eq(in_use(a) - u0, (long long)(big + 50));
  if (ALLOC_CACHE_ON) ck_assert_ptr_eq(q, p);
  char *r = a->alloc(a, 8u << 20); /* another size: a fresh block */
  ck_assert_ptr_nonnull(r);
  ck_assert_ptr_ne(r, q);
  memset(q, 2, big + 50);
  memset(r, 3, 8u << 20);
  a->free(a, q, big + 50);
  a->free(a, r, 8u << 20);
  ck_assert_int_eq(in_use(a), u0);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_allocator");
  TCase *tc = tcase_create("cpu_allocator");
  tcase_add_test(tc, test_identity);
  tcase_add_test(tc, test_alignment_and_usable_size);
  tcase_add_test(tc, test_blocks_do_not_overlap);
  tcase_add_test(tc, test_stats);
  tcase_add_test(tc, test_zero_size);
  tcase_add_test(tc, test_free_null);
  tcase_add_test(tc, test_huge_returns_null);
  tcase_add_test(tc, test_note_functions);
  tcase_add_test(tc, test_stats_concurrent);
  tcase_add_test(tc, test_large_block_cache);
  suite_add_tcase(s, tc);
  return s;
}
