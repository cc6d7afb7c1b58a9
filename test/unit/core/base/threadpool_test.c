/* threadpool_test.c: tf_parallel_for covers [0, n) exactly once in chunks
 * that respect min_chunk and the pool size, for many n, chunk sizes and
 * pool sizes 1..4; small loops and nested calls run inline on the caller;
 * several threads may share one pool; back-to-back tiny jobs stay exact. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/threadpool.h"
#include "test/unit/testutil.h"

typedef struct {
  atomic_int *hits;     /* per index */
  atomic_int calls;     /* fn invocations */
  atomic_llong min_len; /* shortest chunk */
  atomic_int bad_range; /* begin/end outside [0, n) or empty */
  int64_t n;
} cover;

static void cover_fn(void *arg, int64_t b, int64_t e) {
  cover *c = arg;
  atomic_fetch_add(&c->calls, 1);
  if (b < 0 || e > c->n || b >= e) {
    atomic_store(&c->bad_range, 1);
    return;
  }
  long long len = e - b, cur = atomic_load(&c->min_len);
  while (len < cur && !atomic_compare_exchange_weak(&c->min_len, &cur, len)) {
  }
  for (int64_t i = b; i < e; i++) atomic_fetch_add(&c->hits[i], 1);
}

/* Runs one parallel_for and checks coverage and chunking. */
static void check_cover(tf_threadpool *p, int64_t n, int64_t min_chunk) {
  cover c;
  c.hits = calloc((size_t)(n > 0 ? n : 1), sizeof *c.hits);
  ck_assert_ptr_nonnull(c.hits);
  atomic_init(&c.calls, 0);
  atomic_init(&c.min_len, INT64_MAX);
  atomic_init(&c.bad_range, 0);
  c.n = n;
  tf_parallel_for(p, n, min_chunk, cover_fn, &c);
  ck_assert_msg(!atomic_load(&c.bad_range), "n %lld chunk %lld: bad range",
                (long long)n, (long long)min_chunk);
  /* Plain ifs in hot loops: every ck_assert is a write to Check's pipe. */
  for (int64_t i = 0; i < n; i++) {
    if (atomic_load(&c.hits[i]) != 1) {
      ck_abort_msg("pool %d, n %lld, min_chunk %lld: index %lld run %d times",
                   tf_threadpool_size(p), (long long)n, (long long)min_chunk,
                   (long long)i, atomic_load(&c.hits[i]));
    }
  }
  int calls = atomic_load(&c.calls);
  if (n <= 0) {
    ck_assert_int_eq(calls, 0);
  } else {
    ck_assert_msg(calls >= 1 && calls <= tf_threadpool_size(p),
                  "pool %d, n %lld: %d chunks", tf_threadpool_size(p),
                  (long long)n, calls);
    int64_t mc = min_chunk < 1 ? 1 : min_chunk;
    if (n > mc) {
      ck_assert_msg(atomic_load(&c.min_len) >= mc,
                    "pool %d, n %lld, min_chunk %lld: a chunk of %lld",
                    tf_threadpool_size(p), (long long)n, (long long)mc,
                    (long long)atomic_load(&c.min_len));
    } else {
      ck_assert_int_eq(calls, 1);
    }
  }
  free(c.hits);
}

START_TEST(test_new_size_free) {
  for (int k = 1; k <= 4; k++) {
    tf_threadpool *p = tf_threadpool_new(k);
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(tf_threadpool_size(p), k);
    tf_threadpool_free(p);
  }
  ck_assert_int_eq(tf_threadpool_size(NULL), 1);
  tf_threadpool_free(NULL);
  /* Repeated create/free neither leaks nor hangs. */
  for (int i = 0; i < 30; i++) {
    tf_threadpool *p = tf_threadpool_new(3);
    if (i % 2) check_cover(p, 100, 1);
    tf_threadpool_free(p);
  }
}
END_TEST

START_TEST(test_cover_exactly_once) {
  const int64_t ns[] = {0, 1, 2, 3, 4, 5, 7, 8, 9, 10, 16, 31, 33, 100, 1000, 4097, 100003};
  const int64_t chunks[] = {-5, 0, 1, 2, 3, 4, 7, 64, 1000, 50000};
  for (int k = 1; k <= 4; k++) {
    tf_threadpool *p = tf_threadpool_new(k);
    for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
      for (size_t j = 0; j < sizeof chunks / sizeof chunks[0]; j++) {
        check_cover(p, ns[i], chunks[j]);
      }
      check_cover(p, ns[i], ns[i]);
      check_cover(p, ns[i], ns[i] + 1);
      check_cover(p, ns[i], ns[i] - 1);
    }
    tf_threadpool_free(p);
  }
}
END_TEST

START_TEST(test_cover_random) {
  tf_threadpool *p = tf_threadpool_new(4);
  for (int it = 0; it < 300; it++) {
    int64_t n = (int64_t)(tt_rand_u64() % 5000);
    int64_t mc = (int64_t)(tt_rand_u64() % 300);
    check_cover(p, n, mc);
  }
  tf_threadpool_free(p);
}
END_TEST

typedef struct {
  pthread_t caller;
  atomic_int calls;
  atomic_int off_caller;
  int64_t b, e;
} inline_probe;

static void probe_fn(void *arg, int64_t b, int64_t e) {
  inline_probe *pr = arg;
  atomic_fetch_add(&pr->calls, 1);
  if (!pthread_equal(pthread_self(), pr->caller)) atomic_store(&pr->off_caller, 1);
  pr->b = b;
  pr->e = e;
}

static void expect_inline(tf_threadpool *p, int64_t n, int64_t min_chunk) {
  inline_probe pr = {.caller = pthread_self()};
  tf_parallel_for(p, n, min_chunk, probe_fn, &pr);
  ck_assert_int_eq(atomic_load(&pr.calls), 1);
  ck_assert_msg(!atomic_load(&pr.off_caller), "n %lld ran off the caller", (long long)n);
  ck_assert(pr.b == 0 && pr.e == n);
}

/* Loops at or below the grain, a NULL pool and one-thread pools run as one
 * call on the calling thread. */
START_TEST(test_small_runs_inline) {
  tf_threadpool *p = tf_threadpool_new(4);
  expect_inline(p, 1, 1);
  expect_inline(p, 10, 10);
  expect_inline(p, 10, 100);
  expect_inline(p, TF_PARALLEL_GRAIN, TF_PARALLEL_GRAIN);
  expect_inline(NULL, 1000000, 1);
  tf_threadpool *one = tf_threadpool_new(1);
  expect_inline(one, 1000000, 1);
  tf_threadpool_free(one);
  /* n <= 0 calls nothing. */
  inline_probe pr = {.caller = pthread_self()};
  tf_parallel_for(p, 0, 1, probe_fn, &pr);
  tf_parallel_for(p, -5, 1, probe_fn, &pr);
  ck_assert_int_eq(atomic_load(&pr.calls), 0);
  tf_threadpool_free(p);
}
END_TEST

typedef struct {
  tf_threadpool *pool, *other;
  atomic_int inner_calls, inner_off_thread, inner_bad;
  atomic_int *hits;
} nest;

typedef struct {
  pthread_t outer_thread;
  nest *ns;
  int64_t base;
} inner_arg;

static void inner_fn(void *arg, int64_t b, int64_t e) {
  inner_arg *ia = arg;
  atomic_fetch_add(&ia->ns->inner_calls, 1);
  if (!pthread_equal(pthread_self(), ia->outer_thread)) {
    atomic_store(&ia->ns->inner_off_thread, 1);
  }
  if (b != 0 || e != 64) atomic_store(&ia->ns->inner_bad, 1);
  for (int64_t i = b; i < e; i++) atomic_fetch_add(&ia->ns->hits[ia->base + i], 1);
}

static void outer_fn(void *arg, int64_t b, int64_t e) {
  nest *ns = arg;
  for (int64_t i = b; i < e; i++) {
    inner_arg ia = {pthread_self(), ns, i * 64};
    /* Same pool: must run inline, not wait for the busy helpers. */
    tf_parallel_for(ns->pool, 64, 1, inner_fn, &ia);
  }
}

START_TEST(test_nested_runs_inline) {
  nest ns = {0};
  ns.pool = tf_threadpool_new(4);
  ns.hits = calloc(16 * 64, sizeof *ns.hits);
  tf_parallel_for(ns.pool, 16, 1, outer_fn, &ns);
  ck_assert_int_eq(atomic_load(&ns.inner_calls), 16); /* one inline call each */
  ck_assert(!atomic_load(&ns.inner_off_thread));
  ck_assert(!atomic_load(&ns.inner_bad));
  int bad = 0;
  for (int i = 0; i < 16 * 64; i++) bad += atomic_load(&ns.hits[i]) != 1;
  ck_assert_int_eq(bad, 0);
  free(ns.hits);
  tf_threadpool_free(ns.pool);
}
END_TEST

static void nested_other_fn(void *arg, int64_t b, int64_t e) {
  nest *ns = arg;
  for (int64_t i = b; i < e; i++) check_cover(ns->other, 500, 1);
}

/* A loop on one pool may use another pool from inside its chunks. */
START_TEST(test_nested_other_pool) {
  nest ns = {0};
  ns.pool = tf_threadpool_new(2);
  ns.other = tf_threadpool_new(3);
  tf_parallel_for(ns.pool, 2, 1, nested_other_fn, &ns);
  tf_threadpool_free(ns.pool);
  tf_threadpool_free(ns.other);
}
END_TEST

typedef struct {
  tf_threadpool *pool;
  int seed;
  atomic_int failures;
} caller_arg;

typedef struct {
  int64_t *out;
} fill_arg;

static void fill_fn(void *arg, int64_t b, int64_t e) {
  fill_arg *f = arg;
  for (int64_t i = b; i < e; i++) f->out[i] += i * 3 + 1;
}

static void *caller_main(void *arg) {
  caller_arg *ca = arg;
  int64_t buf[3000];
  for (int it = 0; it < 150; it++) {
    int64_t n = 1 + (it * 37 + ca->seed * 101) % 3000;
    memset(buf, 0, sizeof buf);
    fill_arg f = {buf};
    tf_parallel_for(ca->pool, n, 1 + it % 50, fill_fn, &f);
    for (int64_t i = 0; i < 3000; i++) {
      if (buf[i] != (i < n ? i * 3 + 1 : 0)) {
        atomic_fetch_add(&ca->failures, 1);
        break;
      }
    }
  }
  return NULL;
}

/* Several threads share one pool; each sees only its own loop's work. */
START_TEST(test_concurrent_callers) {
  tf_threadpool *p = tf_threadpool_new(4);
  caller_arg ca[4];
  pthread_t th[4];
  for (int i = 0; i < 4; i++) {
    ca[i].pool = p;
    ca[i].seed = i;
    atomic_init(&ca[i].failures, 0);
    ck_assert_int_eq(pthread_create(&th[i], NULL, caller_main, &ca[i]), 0);
  }
  for (int i = 0; i < 4; i++) pthread_join(th[i], NULL);
  for (int i = 0; i < 4; i++) ck_assert_int_eq(atomic_load(&ca[i].failures), 0);
  tf_threadpool_free(p);
}
END_TEST

typedef struct {
  atomic_int hits[8];
} tiny;

static void tiny_fn(void *arg, int64_t b, int64_t e) {
  tiny *t = arg;
  for (int64_t i = b; i < e; i++) atomic_fetch_add(&t->hits[i], 1);
}

/* Many back-to-back tiny jobs: a helper that wakes late for one job must
 * not run chunks of the next one twice or let it return early. */
START_TEST(test_back_to_back_jobs) {
  /* More helpers than cores, so some are preempted between waking up and
   * claiming a chunk (the window a late helper could misuse). */
  tf_threadpool *p = tf_threadpool_new(8);
  for (int it = 0; it < 100000; it++) {
    tiny t;
    for (int i = 0; i < 8; i++) atomic_init(&t.hits[i], 0);
    int64_t n = 2 + it % 7;
    tf_parallel_for(p, n, 1, tiny_fn, &t);
    for (int i = 0; i < 8; i++) {
      if (atomic_load(&t.hits[i]) != (i < n)) {
        ck_abort_msg("job %d: index %d run %d times", it, i, atomic_load(&t.hits[i]));
      }
    }
  }
  tf_threadpool_free(p);
}
END_TEST

START_TEST(test_default_pool) {
  tf_threadpool *p = tf_threadpool_default();
  ck_assert_ptr_nonnull(p);
  ck_assert_ptr_eq(tf_threadpool_default(), p);
  ck_assert_int_ge(tf_threadpool_size(p), 1);
  check_cover(p, 100000, 1000);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("threadpool");
  TCase *cover = tcase_create("cover");
  tcase_add_test(cover, test_new_size_free);
  tcase_add_test(cover, test_cover_exactly_once);
  tcase_add_test(cover, test_cover_random);
  tcase_add_test(cover, test_default_pool);
  suite_add_tcase(s, cover);
  TCase *inl = tcase_create("inline");
  tcase_add_test(inl, test_small_runs_inline);
  tcase_add_test(inl, test_nested_runs_inline);
  tcase_add_test(inl, test_nested_other_pool);
  suite_add_tcase(s, inl);
  TCase *conc = tcase_create("concurrent");
  tcase_set_timeout(conc, 60);
  tcase_add_test(conc, test_concurrent_callers);
  tcase_add_test(conc, test_back_to_back_jobs);
  suite_add_tcase(s, conc);
  return s;
}
