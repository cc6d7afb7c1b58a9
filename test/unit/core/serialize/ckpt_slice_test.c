/* ckpt_slice_test.c: shape_and_slice text (TensorFlow's examples parse,
 * print back the same, and every malformed form is refused quoting the
 * text), box algebra, and the N-d box copy against an element-by-element
 * reference on seeded random boxes of ranks 0..5 (numbers and strings),
 * with the coverage mask marking exactly the copied elements. */
#include <string.h>

#include "lib/core/serialize/ckpt_slice.h"
#include "test/unit/core/serialize/ckpt_testlib.h"

START_TEST(test_parse_valid) {
  struct {
    const char *text, *back;
    int rank;
    int64_t dims[3], start[3], len[3];
  } cases[] = {
      {"10 20 0,5:-", "10 20 0,5:-", 2, {10, 20}, {0, 0}, {5, 20}},
      {"7 3,4", "7 3,4", 1, {7}, {3}, {4}},
      {"7 0,7", "7 -", 1, {7}, {0}, {7}},
      {"4 3 6 -:1,2:5,1", "4 3 6 -:1,2:5,1", 3, {4, 3, 6}, {0, 1, 5}, {4, 2, 1}},
      {"0 -", "0 -", 1, {0}, {0}, {0}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tf_shape full;
    tf_ckpt_box box;
    bool whole = true;
    tf_status st;
    ck_assert_msg(tf__ckpt_slice_parse(cases[i].text, &full, &box, &whole, &st) == TF_OK,
                  "%s: %s", cases[i].text, st.msg);
    ck_assert(!whole);
    ck_assert_int_eq(full.rank, cases[i].rank);
    ck_assert_int_eq(box.rank, cases[i].rank);
    for (int d = 0; d < cases[i].rank; d++) {
      ck_assert_int_eq(full.dims[d], cases[i].dims[d]);
      ck_assert_int_eq(box.start[d], cases[i].start[d]);
      ck_assert_int_eq(box.len[d], cases[i].len[d]);
    }
    char buf[512];
    ck_assert_str_eq(tf__ckpt_slice_str(&full, &box, buf, sizeof buf), cases[i].back);
  }
  tf_shape full = {0};
  tf_ckpt_box box = {0};
  bool whole = false;
  ck_assert_int_eq(tf__ckpt_slice_parse("", &full, &box, &whole, NULL), TF_OK);
  ck_assert(whole);
  ck_assert_int_eq(tf__ckpt_slice_parse(NULL, &full, &box, &whole, NULL), TF_OK);
  ck_assert(whole);
}
END_TEST

START_TEST(test_parse_invalid) {
  const char *bad[] = {
      "-",              /* no shape */
      "10",             /* no slice */
      "10 ",            /* empty slice */
      " 10 -",          /* leading space */
      "10  -",          /* two spaces */
      "10 20 -",        /* too few extents */
      "10 -:-",         /* too many extents */
      "10 5,6",         /* past the end */
      "10 10,1",        /* start at the end */
      "10 0,0",         /* empty length */
      "10 -1,2",        /* negative start */
      "10 1,-1",        /* negative length */
      "10 1,",          /* missing length */
      "10 ,1",          /* missing start */
      "10 1;2",         /* wrong separator */
      "x -",            /* not a number */
      "+3 -",           /* sign */
      "1 2 3 4 5 6 7 8 9 -:-:-:-:-:-:-:-:-", /* rank 9 */
      "10000000000 10000000000 -:-", /* 10^20 elements */
      "1234567890123456789 -", /* 19 digits */
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    tf_shape full;
    tf_ckpt_box box;
    bool whole;
    tf_status st;
    ck_assert_msg(tf__ckpt_slice_parse(bad[i], &full, &box, &whole, &st) ==
                      TF_INVALID_ARGUMENT, "'%s' was accepted", bad[i]);
    ck_assert_msg(strstr(st.msg, bad[i]) != NULL, "%s", st.msg);
  }
}
END_TEST

START_TEST(test_box_algebra) {
  tf_ckpt_box a = {2, {0, 2}, {4, 3}}, b = {2, {3, 0}, {4, 4}}, c;
  ck_assert(tf__ckpt_box_intersect(&a, &b, &c));
  ck_assert(c.start[0] == 3 && c.len[0] == 1 && c.start[1] == 2 && c.len[1] == 2);
  ck_assert_int_eq(tf__ckpt_box_volume(&c), 2);
  tf_ckpt_box d = {2, {4, 0}, {1, 1}};
  ck_assert(!tf__ckpt_box_intersect(&a, &d, &c)); /* touching is disjoint */
  ck_assert(tf__ckpt_box_contains(&a, &(tf_ckpt_box){2, {1, 3}, {2, 2}}));
  ck_assert(!tf__ckpt_box_contains(&a, &b));
  ck_assert(tf__ckpt_box_equal(&a, &a) && !tf__ckpt_box_equal(&a, &b));
  tf_shape s = tf_shape_of(3, 2, 0, 5);
  tf_ckpt_box w = tf__ckpt_box_whole(&s);
  ck_assert_int_eq(tf__ckpt_box_volume(&w), 0);
  tf_shape back = tf__ckpt_box_shape(&w);
  ck_assert(tf_shape_equal(&back, &s));
  tf_ckpt_box huge = {2, {0, 0}, {INT64_MAX / 2, 3}};
  ck_assert_int_eq(tf__ckpt_box_volume(&huge), -1);
}
END_TEST

/* A random box inside [0, dims). */
static tf_ckpt_box rand_box(const tf_shape *s) {
  tf_ckpt_box b = {.rank = s->rank};
  for (int d = 0; d < s->rank; d++) {
    b.start[d] = (int64_t)(tt_rand_u64() % (uint64_t)s->dims[d]);
    b.len[d] = 1 + (int64_t)(tt_rand_u64() % (uint64_t)(s->dims[d] - b.start[d]));
  }
  return b;
}

/* Copies a random region between two random boxes of one full tensor
 * and checks dst against the reference; checks the mask too. */
static void copy_once(tf_dtype dt, int rank) {
  int64_t dims[TF_MAX_RANK];
  for (int d = 0; d < rank; d++) dims[d] = 1 + (int64_t)(tt_rand_u64() % 5);
  tf_shape fs = tf_shape_make(rank, dims);
  tf_tensor *full = ck_rand_tensor(dt, fs);
  tf_ckpt_box sb = rand_box(&fs), db = rand_box(&fs), r;
  if (!tf__ckpt_box_intersect(&sb, &db, &r)) {
    sb = tf__ckpt_box_whole(&fs); /* make them overlap */
    ck_assert(tf__ckpt_box_intersect(&sb, &db, &r));
  }
  tf_tensor *src = ck_slice_ref(full, sb.start, sb.len);
  tf_tensor *dst = ck_slice_ref(full, db.start, db.len);
  tf_tensor *want = ck_slice_ref(full, db.start, db.len);
  /* Scramble dst inside r so the copy has to restore it. */
  tf_tensor *noise = ck_rand_tensor(dt, tf__ckpt_box_shape(&db));
  tf_status st;
  ck_assert(tf__ckpt_box_copy(dst, &db, noise, &db, &r, &st) == TF_OK);
  ck_assert(tf__ckpt_box_copy(dst, &db, src, &sb, &r, &st) == TF_OK);
  ck_assert_msg(tf_tensor_equal(dst, want), "rank %d %s", rank, tf_dtype_name(dt));
  int64_t vol = tf__ckpt_box_volume(&db);
  uint8_t *mask = calloc((size_t)vol + 1, 1);
  tf__ckpt_box_mark(mask, &db, &r);
  int64_t idx[TF_MAX_RANK], marked = 0;
  for (int64_t o = 0; o < vol; o++) {
    int64_t rem = o;
    bool in = true;
    for (int d = rank - 1; d >= 0; d--) {
      idx[d] = db.start[d] + rem % db.len[d];
      rem /= db.len[d];
      in = in && idx[d] >= r.start[d] && idx[d] < r.start[d] + r.len[d];
    }
    ck_assert_int_eq(mask[o], in ? 1 : 0);
    marked += mask[o];
  }
  ck_assert_int_eq(marked, tf__ckpt_box_volume(&r));
  free(mask);
  tt_free((tf_tensor *[]){full, src, dst, want, noise}, 5);
}

START_TEST(test_box_copy_random) {
  tt_rng_reseed(tt_seed() ^ 0x51ce);
  for (int it = 0; it < 400; it++) {
    int rank = it % 6;
    copy_once(it % 3 == 0 ? TF_STRING : it % 3 == 1 ? TF_FLOAT64 : TF_INT8, rank);
  }
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("ckpt_slice");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_parse_valid);
  tcase_add_test(tc, test_parse_invalid);
  tcase_add_test(tc, test_box_algebra);
  tcase_add_test(tc, test_box_copy_random);
  suite_add_tcase(s, tc);
  return s;
}
