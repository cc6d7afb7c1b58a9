/* reader_test.c: the reader resource (lib/core/serialize/reader.c) driven directly
 * with a queue of file names: records across files in order with
 * TensorFlow's keys and counters, ReadUpTo crossing files and returning a
 * partial batch when the names run out, waiting (holding no thread) for a
 * name that another thread enqueues later, requests served in arrival
 * order, cancellation of the active request and of waiting ones, a missing
 * or damaged file failing one request and the next going on with the next
 * file, reset, argument checks, and a race of reads, cancellations and
 * enqueues where every request completes exactly once. */
#include <pthread.h>
#include <time.h>

#include "lib/core/serialize/reader.h"
#include "lib/core/base/util.h"
#include "test/unit/core/serialize/io_testlib.h"

/* One request's outcome; waitable from another thread. */
typedef struct rec {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int calls;
  tf_status st;
  tf_tensor *keys, *values;
  pthread_t thread; /* where done ran */
} rec;

static void rec_init(rec *r) {
  memset(r, 0, sizeof *r);
  pthread_mutex_init(&r->mu, NULL);
  pthread_cond_init(&r->cv, NULL);
}

static void rec_fini(rec *r) {
  tf_tensor_unref(r->keys);
  tf_tensor_unref(r->values);
  pthread_mutex_destroy(&r->mu);
  pthread_cond_destroy(&r->cv);
}

static void on_done(void *arg, const tf_status *st, tf_tensor *keys,
                    tf_tensor *values) {
  rec *r = arg;
  pthread_mutex_lock(&r->mu);
  r->calls++;
  r->st = *st;
  r->keys = tf_tensor_ref(keys);
  r->values = tf_tensor_ref(values);
  r->thread = pthread_self();
  pthread_cond_broadcast(&r->cv);
  pthread_mutex_unlock(&r->mu);
}

/* Waits (at most 2 s) for r's callback; false on timeout. */
static bool rec_wait(rec *r) {
  struct timespec dl;
  clock_gettime(CLOCK_REALTIME, &dl);
  dl.tv_sec += 2;
  pthread_mutex_lock(&r->mu);
  int rc = 0;
  while (r->calls == 0 && rc == 0) rc = pthread_cond_timedwait(&r->cv, &r->mu, &dl);
  bool ok = r->calls > 0;
  pthread_mutex_unlock(&r->mu);
  return ok;
}

/* Element i of a string tensor as a NUL-terminated string. */
static const char *str(const tf_tensor *t, int64_t i) {
  const tf_string *s = &tf_tensor_strings(t)[i];
  return s->data ? s->data : "";
}

static tf_queue *name_queue(void) {
  tf_dtype dt = TF_STRING;
  tf_queue_config c = {.kind = TF_QUEUE_FIFO, .n_components = 1, .dtypes = &dt,
                       .capacity = -1};
  return tf_queue_new("", "names", &c);
}

static void qfree(tf_queue *q) { tf_resource_unref(tf_queue_resource(q)); }

static void ignore(void *arg, const tf_status *st, tf_tensor **tuple) {
  (void)arg, (void)st, (void)tuple;
}

static void put_name(tf_queue *q, const char *name) {
  tf_tensor *t;
  tf_status st;
  tf_shape s = tf_shape_scalar();
  ck_assert_int_eq(tf_tensor_new(TF_STRING, &s, &t, &st), TF_OK);
  tf_tensor_set_string(t, 0, name, strlen(name), &st);
  ck_assert_int_eq(tf_queue_enqueue(q, &t, 1, false, NULL, ignore, NULL, &st), TF_OK);
  tf_tensor_unref(t);
}

static const tf_record_options tfrec = {.format = TF_RECORD_TFRECORD};

static tf_reader *mkreader(void) { return tf_reader_new("", "r", &tfrec); }
static void rfree(tf_reader *r) { tf_resource_unref(tf_reader_resource(r)); }

/* A TFRecord file of the given records. */
static void write_records(const char *path, const char *const *recs, int n) {
  io_buf b = {0};
  for (int i = 0; i < n; i++) io_tfrecord(&b, recs[i], strlen(recs[i]));
  io_write(path, b.p, b.n);
  free(b.p);
}

/* Four files: two records, one, none, three. */
typedef struct fixture {
  char dir[IO_PATH_MAX];
  char path[4][IO_PATH_MAX];
} fixture;

static void fixture_make(fixture *f) {
  io_tmpdir(f->dir, sizeof f->dir);
  static const char *const r0[] = {"f0r0", "f0r1"}, *const r1[] = {"f1r0"},
                           *const r3[] = {"f3r0", "f3r1", "f3r2"};
  write_records(io_path(f->path[0], f->dir, "0.tfr"), r0, 2);
  write_records(io_path(f->path[1], f->dir, "1.tfr"), r1, 1);
  write_records(io_path(f->path[2], f->dir, "2.tfr"), NULL, 0);
  write_records(io_path(f->path[3], f->dir, "3.tfr"), r3, 3);
}

static void read_one(tf_reader *r, tf_queue *q, int64_t n, tf_cancel *c, rec *out) {
  tf_status st;
  ck_assert_msg(tf_reader_read(r, q, n, c, on_done, out, &st) == TF_OK, "%s", st.msg);
}

START_TEST(test_reads_across_files) {
  fixture f;
  fixture_make(&f);
  tf_queue *q = name_queue();
  for (int i = 0; i < 4; i++) put_name(q, f.path[i]);
  tf_queue_close(q, false);
  tf_reader *r = mkreader();
  static const char *want[6] = {"f0r0", "f0r1", "f1r0", "f3r0", "f3r1", "f3r2"};
  static const int file[6] = {0, 0, 1, 3, 3, 3}, off[6] = {0, 20, 0, 0, 20, 40};
  for (int i = 0; i < 6; i++) {
    rec a;
    rec_init(&a);
    read_one(r, q, -1, NULL, &a);
    ck_assert_int_eq(a.calls, 1); /* no waiting: names are there */
    ck_assert_msg(a.st.code == TF_OK, "%s", a.st.msg);
    ck_assert_int_eq(a.values->shape.rank, 0);
    ck_assert_str_eq(str(a.values, 0), want[i]);
    char key[2 * IO_PATH_MAX];
    snprintf(key, sizeof key, "%s:%d", f.path[file[i]], off[i]);
    ck_assert_str_eq(str(a.keys, 0), key);
    rec_fini(&a);
  }
  ck_assert_int_eq(tf_reader_records_produced(r), 6);
  ck_assert_int_eq(tf_reader_work_units_completed(r), 3); /* 3.tfr still open */
  rec end;
  rec_init(&end);
  read_one(r, q, -1, NULL, &end);
  ck_assert_int_eq(end.calls, 1);
  io_assert_error(&end.st, TF_OUT_OF_RANGE, "FIFOQueue 'names' is closed");
  ck_assert_ptr_null(end.keys);
  ck_assert_int_eq(tf_reader_work_units_completed(r), 4);
  rec_fini(&end);
  rfree(r);
  qfree(q);
  io_tmpdir_remove(f.dir);
}
END_TEST

START_TEST(test_read_up_to) {
  fixture f;
  fixture_make(&f);
  tf_queue *q = name_queue();
  for (int i = 0; i < 4; i++) put_name(q, f.path[i]);
  tf_queue_close(q, false);
  tf_reader *r = mkreader();
  rec a, b, c;
  rec_init(&a);
  rec_init(&b);
  rec_init(&c);
  read_one(r, q, 4, NULL, &a);
  ck_assert_msg(a.calls == 1 && a.st.code == TF_OK, "%s", a.st.msg);
  tt_assert_shape(a.values, 1, 4);
  tt_assert_shape(a.keys, 1, 4);
  static const char *want[6] = {"f0r0", "f0r1", "f1r0", "f3r0", "f3r1", "f3r2"};
  for (int i = 0; i < 4; i++) ck_assert_str_eq(str(a.values, i), want[i]);
  read_one(r, q, 100, NULL, &b); /* only 2 left: a partial batch */
  ck_assert_msg(b.calls == 1 && b.st.code == TF_OK, "%s", b.st.msg);
  tt_assert_shape(b.values, 1, 2);
  ck_assert_str_eq(str(b.values, 0), "f3r1");
  ck_assert_str_eq(str(b.values, 1), "f3r2");
  read_one(r, q, 3, NULL, &c);
  ck_assert_int_eq(c.st.code, TF_OUT_OF_RANGE);
  rec_fini(&a);
  rec_fini(&b);
  rec_fini(&c);
  /* a batch larger than the first allocation grows correctly */
  tf_queue *q2 = name_queue();
  char big[IO_PATH_MAX];
  const char *recs[300];
  char buf[300][8];
  for (int i = 0; i < 300; i++) {
    snprintf(buf[i], sizeof buf[i], "r%d", i);
    recs[i] = buf[i];
  }
  write_records(io_path(big, f.dir, "big.tfr"), recs, 300);
  put_name(q2, big);
  rec d;
  rec_init(&d);
  read_one(r, q2, 300, NULL, &d);
  ck_assert_msg(d.st.code == TF_OK, "%s", d.st.msg);
  tt_assert_shape(d.values, 1, 300);
  for (int i = 0; i < 300; i++) ck_assert_str_eq(str(d.values, i), recs[i]);
  rec_fini(&d);
  rfree(r);
  qfree(q);
  qfree(q2);
  io_tmpdir_remove(f.dir);
}
END_TEST

typedef struct delayed {
  tf_queue *q;
  const char *name;
  pthread_t thread;
} delayed;

static void *enqueue_later(void *arg) {
  delayed *d = arg;
  struct timespec ts = {0, 30 * 1000 * 1000};
  nanosleep(&ts, NULL);
  d->thread = pthread_self();
  put_name(d->q, d->name);
  return NULL;
}

/* A read waits for a name; the thread that enqueues it completes it. Two
 * more requests queue behind and are served in order from that file. */
START_TEST(test_waits_in_order) {
  fixture f;
  fixture_make(&f);
  tf_queue *q = name_queue();
  tf_reader *r = mkreader();
  rec a, b, c;
  rec_init(&a);
  rec_init(&b);
  rec_init(&c);
  read_one(r, q, -1, NULL, &a);
  read_one(r, q, -1, NULL, &b);
  read_one(r, q, 2, NULL, &c);
  ck_assert(a.calls == 0 && b.calls == 0 && c.calls == 0);
  delayed d = {q, f.path[3], 0};
  pthread_t t;
  pthread_create(&t, NULL, enqueue_later, &d);
  ck_assert(rec_wait(&a) && rec_wait(&b));
  pthread_join(t, NULL);
  ck_assert(pthread_equal(a.thread, d.thread));
  ck_assert_str_eq(str(a.values, 0), "f3r0");
  ck_assert_str_eq(str(b.values, 0), "f3r1");
  /* c wanted 2, got f3r2 and waits for another name; a close ends it with
   * what it has */
  ck_assert_int_eq(c.calls, 0);
  tf_queue_close(q, false);
  ck_assert_int_eq(c.calls, 1);
  ck_assert_msg(c.st.code == TF_OK, "%s", c.st.msg);
  tt_assert_shape(c.values, 1, 1);
  ck_assert_str_eq(str(c.values, 0), "f3r2");
  rec_fini(&a);
  rec_fini(&b);
  rec_fini(&c);
  rfree(r);
  qfree(q);
  io_tmpdir_remove(f.dir);
}
END_TEST

START_TEST(test_cancellation) {
  fixture f;
  fixture_make(&f);
  tf_queue *q = name_queue();
  tf_reader *r = mkreader();
  tf_cancel ca, cb, cc;
  tf_cancel_init(&ca);
  tf_cancel_init(&cb);
  tf_cancel_init(&cc);
  rec a, b, c;
  rec_init(&a);
  rec_init(&b);
  rec_init(&c);
  read_one(r, q, -1, &ca, &a); /* active: waits on the queue */
  read_one(r, q, -1, &cb, &b); /* waits in the reader's list */
  read_one(r, q, -1, &cc, &c);
  tf_cancel_start(&cb, TF_DEADLINE_EXCEEDED, "step deadline");
  ck_assert_int_eq(b.calls, 1);
  io_assert_error(&b.st, TF_DEADLINE_EXCEEDED, "step deadline");
  ck_assert(a.calls == 0 && c.calls == 0);
  tf_cancel_start(&ca, TF_CANCELLED, "session closed");
  ck_assert_int_eq(a.calls, 1);
  io_assert_error(&a.st, TF_CANCELLED, "session closed");
  /* c is active now and gets the next name */
  ck_assert_int_eq(c.calls, 0);
  put_name(q, f.path[1]);
  ck_assert_int_eq(c.calls, 1);
  ck_assert_str_eq(str(c.values, 0), "f1r0");
  /* a request whose step is already cancelled ends at once */
  rec d;
  rec_init(&d);
  read_one(r, q, -1, &cb, &d);
  ck_assert_int_eq(d.calls, 1);
  ck_assert_int_eq(d.st.code, TF_DEADLINE_EXCEEDED);
  rec_fini(&a);
  rec_fini(&b);
  rec_fini(&c);
  rec_fini(&d);
  tf_cancel_fini(&ca);
  tf_cancel_fini(&cb);
  tf_cancel_fini(&cc);
  rfree(r);
  qfree(q);
  io_tmpdir_remove(f.dir);
}
END_TEST

/* A missing file and a damaged one each fail one request; reading goes on
 * with the next file. */
START_TEST(test_file_errors) {
  fixture f;
  fixture_make(&f);
  char bad[IO_PATH_MAX], missing[IO_PATH_MAX];
  io_buf b = {0};
  io_tfrecord(&b, "good", 4);
  io_tfrecord(&b, "ruined", 6);
  b.p[b.n - 1] ^= 1;
  io_write(io_path(bad, f.dir, "bad.tfr"), b.p, b.n);
  free(b.p);
  io_path(missing, f.dir, "missing.tfr");
  tf_queue *q = name_queue();
  put_name(q, missing);
  put_name(q, bad);
  put_name(q, f.path[1]);
  tf_queue_close(q, false);
  tf_reader *r = mkreader();
  rec a, b1, b2, c;
  rec_init(&a);
  rec_init(&b1);
  rec_init(&b2);
  rec_init(&c);
  read_one(r, q, -1, NULL, &a);
  io_assert_error(&a.st, TF_NOT_FOUND, missing);
  read_one(r, q, 5, NULL, &b1);
  io_assert_error(&b1.st, TF_DATA_LOSS, bad, "corrupted record at offset 20");
  read_one(r, q, 5, NULL, &c);
  ck_assert_msg(c.st.code == TF_OK, "%s", c.st.msg);
  tt_assert_shape(c.values, 1, 1);
  ck_assert_str_eq(str(c.values, 0), "f1r0");
  ck_assert_int_eq(tf_reader_work_units_completed(r), 2); /* bad dropped, 1.tfr */
  read_one(r, q, 5, NULL, &b2);
  ck_assert_int_eq(b2.st.code, TF_OUT_OF_RANGE);
  rec_fini(&a);
  rec_fini(&b1);
  rec_fini(&b2);
  rec_fini(&c);
  rfree(r);
  qfree(q);
  io_tmpdir_remove(f.dir);
}
END_TEST

START_TEST(test_reset_and_idx_keys) {
  fixture f;
  fixture_make(&f);
  tf_queue *q = name_queue();
  put_name(q, f.path[3]);
  put_name(q, f.path[0]);
  tf_reader *r = mkreader();
  rec a, z, b;
  rec_init(&a);
  rec_init(&z);
  rec_init(&b);
  read_one(r, q, -1, NULL, &a);
  ck_assert_str_eq(str(a.values, 0), "f3r0");
  tf_reader_reset(r, NULL, on_done, &z);
  ck_assert(z.calls == 1 && z.st.code == TF_OK && z.keys == NULL);
  ck_assert_int_eq(tf_reader_records_produced(r), 0);
  read_one(r, q, -1, NULL, &b); /* 3.tfr was dropped: the next name */
  ck_assert_str_eq(str(b.values, 0), "f0r0");
  rec_fini(&a);
  rec_fini(&z);
  rec_fini(&b);
  rfree(r);
  /* IDX keys are "file:index" */
  char idx[IO_PATH_MAX];
  io_buf img = io_idx_u8(3, 2, 2);
  io_write_gz(io_path(idx, f.dir, "img.gz"), img.p, img.n);
  free(img.p);
  tf_record_options o = tf_record_options_idx();
  tf_reader *ri = tf_reader_new("", "ri", &o);
  put_name(q, idx);
  rec c;
  rec_init(&c);
  read_one(ri, q, 10, NULL, &c); /* 3 records, then it waits for a name */
  ck_assert_int_eq(c.calls, 0);
  tf_queue_close(q, false);
  ck_assert_msg(c.calls == 1 && c.st.code == TF_OK, "%s", c.st.msg);
  tt_assert_shape(c.keys, 1, 3);
  for (int i = 0; i < 3; i++) {
    char key[2 * IO_PATH_MAX];
    snprintf(key, sizeof key, "%s:%d", idx, i);
    ck_assert_str_eq(str(c.keys, i), key);
    ck_assert_uint_eq(tf_tensor_strings(c.values)[i].len, 4);
    ck_assert_uint_eq((uint8_t)str(c.values, i)[1], (uint8_t)(i * 7 + 1));
  }
  rec_fini(&c);
  tf_status st;
  ck_assert_int_eq(tf_reader_matches(ri, &o, &st), TF_OK);
  ck_assert_int_eq(tf_reader_matches(ri, &tfrec, &st), TF_INVALID_ARGUMENT);
  io_assert_error(&st, TF_INVALID_ARGUMENT, "reader 'ri'", "format");
  o.idx_dtype = TF_INT32;
  ck_assert_int_eq(tf_reader_matches(ri, &o, &st), TF_INVALID_ARGUMENT);
  rfree(ri);
  qfree(q);
  io_tmpdir_remove(f.dir);
}
END_TEST

START_TEST(test_bad_arguments) {
  tf_reader *r = mkreader();
  tf_dtype i32 = TF_INT32;
  tf_queue_config c = {.kind = TF_QUEUE_FIFO, .n_components = 1, .dtypes = &i32,
                       .capacity = -1};
  tf_queue *qi = tf_queue_new("", "ints", &c);
  rec a;
  rec_init(&a);
  tf_status st;
  ck_assert_int_eq(tf_reader_read(r, qi, -1, NULL, on_done, &a, &st), TF_INVALID_ARGUMENT);
  io_assert_error(&st, TF_INVALID_ARGUMENT, "work queue ints", "one string component");
  tf_queue *q = name_queue();
  ck_assert_int_eq(tf_reader_read(r, q, 0, NULL, on_done, &a, &st), TF_INVALID_ARGUMENT);
  io_assert_error(&st, TF_INVALID_ARGUMENT, "num_records must be >= 1");
  ck_assert_int_eq(a.calls, 0);
  /* a work item that is not a scalar */
  tf_shape s = tf_shape_of(1, 2);
  tf_tensor *t;
  ck_assert_int_eq(tf_tensor_new(TF_STRING, &s, &t, &st), TF_OK);
  ck_assert_int_eq(tf_queue_enqueue(q, &t, 1, false, NULL, ignore, NULL, &st), TF_OK);
  tf_tensor_unref(t);
  read_one(r, q, -1, NULL, &a);
  io_assert_error(&a.st, TF_INVALID_ARGUMENT, "scalar string", "[2]");
  tf_tensor *v;
  ck_assert_int_eq(tf_reader_type.read(tf_reader_resource(r), &v, &st), TF_FAILED_PRECONDITION);
  ck_assert_ptr_eq(tf_reader_cast(tf_queue_resource(q)), NULL);
  rec_fini(&a);
  rfree(r);
  qfree(q);
  qfree(qi);
}
END_TEST

/* ---- a race ----------------------------------------------------------------------- */

enum { RACE_READS = 300, RACE_THREADS = 3 };

typedef struct race {
  tf_reader *r;
  tf_queue *q;
  tf_cancel cancel[RACE_READS];
  rec out[RACE_READS];
  int next; /* requests submitted (atomic) */
} race;

static void *race_reader(void *arg) {
  race *x = arg;
  for (;;) {
    int i = __atomic_fetch_add(&x->next, 1, __ATOMIC_SEQ_CST);
    if (i >= RACE_READS) return NULL;
    read_one(x->r, x->q, -1, &x->cancel[i], &x->out[i]);
  }
}

static void *race_canceller(void *arg) {
  race *x = arg;
  for (int i = 0; i < RACE_READS; i += 2) {
    tf_cancel_start(&x->cancel[i], TF_CANCELLED, "raced");
  }
  return NULL;
}

/* Readers, a canceller and the enqueuing main thread race: each request
 * completes exactly once; successful ones hold distinct records. */
START_TEST(test_race) {
  char dir[IO_PATH_MAX], p[IO_PATH_MAX];
  io_tmpdir(dir, sizeof dir);
  race *x = calloc(1, sizeof *x);
  x->r = mkreader();
  x->q = name_queue();
  for (int i = 0; i < RACE_READS; i++) {
    tf_cancel_init(&x->cancel[i]);
    rec_init(&x->out[i]);
  }
  pthread_t th[RACE_THREADS + 1];
  for (int i = 0; i < RACE_THREADS; i++) pthread_create(&th[i], NULL, race_reader, x);
  pthread_create(&th[RACE_THREADS], NULL, race_canceller, x);
  for (int i = 0; i < RACE_READS; i++) {
    char name[32];
    snprintf(name, sizeof name, "%d.tfr", i);
    const char *rec1[1] = {name};
    write_records(io_path(p, dir, name), rec1, 1);
    put_name(x->q, p);
  }
  for (int i = 0; i <= RACE_THREADS; i++) pthread_join(th[i], NULL);
  tf_queue_close(x->q, false); /* the rest end with OUT_OF_RANGE */
  char seen[RACE_READS] = {0};
  int ok = 0;
  for (int i = 0; i < RACE_READS; i++) {
    ck_assert_msg(rec_wait(&x->out[i]), "request %d never completed", i);
    ck_assert_int_eq(x->out[i].calls, 1);
    tf_code c = x->out[i].st.code;
    ck_assert_msg(c == TF_OK || c == TF_CANCELLED || c == TF_OUT_OF_RANGE,
                  "%s", x->out[i].st.msg);
    if (c == TF_OK) {
      int v = atoi(str(x->out[i].values, 0));
      ck_assert(!seen[v]);
      seen[v] = 1;
      ok++;
    }
    ck_assert(c != TF_CANCELLED || i % 2 == 0);
    rec_fini(&x->out[i]);
    tf_cancel_fini(&x->cancel[i]);
  }
  ck_assert_int_ge(ok, RACE_READS / 2 - 1);
  ck_assert_int_eq(tf_reader_records_produced(x->r), ok);
  rfree(x->r);
  qfree(x->q);
  free(x);
  io_tmpdir_remove(dir);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("reader");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_reads_across_files);
  tcase_add_test(tc, test_read_up_to);
  tcase_add_test(tc, test_waits_in_order);
  tcase_add_test(tc, test_cancellation);
  tcase_add_test(tc, test_file_errors);
  tcase_add_test(tc, test_reset_and_idx_keys);
  tcase_add_test(tc, test_bad_arguments);
  tcase_add_test(tc, test_race);
  suite_add_tcase(s, tc);
  return s;
}
