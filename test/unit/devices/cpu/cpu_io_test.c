/* cpu_io_test.c: the reader and writer kernels through a session: records
 * of several TFRecord files in order with TensorFlow's keys and counters,
 * ReaderReadUpTo on gzipped IDX files decoded by DecodeRawExamples, errors
 * that name the node, the file and the offset (damage) or path (missing),
 * readers shared by shared_name (and refused with other options),
 * WriteTFRecords producing the hand-framed bytes and gzip files, a read
 * blocked on an empty name queue ended by its deadline (with 1 and 4
 * inter-op threads) after which the reader still works, ReaderReset, and
 * the kernels refusing to run without a session. */
#include <string.h>
#include <time.h>

#include "lib/core/base/util.h"
#include "test/unit/core/serialize/io_testlib.h"
#include "tf/session.h"

/* ---- graph helpers --------------------------------------------------------------- */

static tf_node *finish(tf_node_builder *b) {
  tf_status st;
  tf_node *n = tf_node_finish(b, &st);
  ck_assert_msg(n != NULL, "%s", st.msg);
  return n;
}

/* A string name queue (shapes [], so EnqueueMany works). */
static tf_node *name_queue(tf_graph *g, const char *name) {
  tf_dtype dt = TF_STRING;
  tf_shape s = tf_shape_scalar();
  tf_attr_kv a[2] = {{"component_types", tf_attr_type_list(&dt, 1)},
                     {"shapes", tf_attr_shape_list(&s, 1)}};
  return tt_node(g, "FIFOQueue", name, NULL, 0, a, 2);
}

static tf_tensor *string_vec(int n, const char *const *v) {
  tf_shape s = tf_shape_of(1, n);
  tf_tensor *t;
  tf_status st;
  ck_assert_int_eq(tf_tensor_new(TF_STRING, &s, &t, &st), TF_OK);
  for (int i = 0; i < n; i++) tf_tensor_set_string(t, i, v[i], strlen(v[i]), &st);
  return t;
}

/* enqueue_<name>: EnqueueMany of files; close_<name>: QueueClose. */
static void add_names(tf_graph *g, tf_node *q, const char *suffix,
                      const char *const *files, int n) {
  char nm[64];
  snprintf(nm, sizeof nm, "files_%s", suffix);
  tf_node *c = tt_const(g, nm, string_vec(n, files));
  snprintf(nm, sizeof nm, "enqueue_%s", suffix);
  tf_node_builder *b = tf_node_begin(g, "QueueEnqueueMany", nm);
  tf_node_add_input(b, (tf_output){q, 0});
  tf_output o = {c, 0};
  tf_node_add_input_list(b, &o, 1);
  finish(b);
  snprintf(nm, sizeof nm, "close_%s", suffix);
  tf_output h = {q, 0};
  tt_node(g, "QueueClose", nm, &h, 1, NULL, 0);
}

static tf_node *reader(tf_graph *g, const char *op, const char *name,
                       const tf_attr_kv *a, int n) {
  return tt_node(g, op, name, NULL, 0, a, n);
}

static tf_node *read_node(tf_graph *g, const char *name, tf_node *r, tf_node *q,
                          int64_t up_to) {
  tf_output in[3] = {{r, 0}, {q, 0}};
  if (up_to > 0) {
    char nm[64];
    snprintf(nm, sizeof nm, "%s_n", name);
    in[2] = (tf_output){tt_const(g, nm, tf_tensor_scalar_i64(up_to)), 0};
  }
  return tt_node(g, up_to > 0 ? "ReaderReadUpTo" : "ReaderRead", name, in,
                 up_to > 0 ? 3 : 2, NULL, 0);
}

static tf_session *session(tf_graph *g, int threads) {
  tf_session_options o = {.inter_op_threads = threads};
  tf_status st;
  tf_session *s = tf_session_new(g, &o, &st);
  ck_assert_msg(s != NULL, "%s", st.msg);
  return s;
}

/* One Run with a 5 s deadline (or timeout_ms): fetches f[0..nf), target t. */
static tf_code run(tf_session *s, const char *const *f, tf_tensor **out, int nf,
                   const char *t, int64_t timeout_ms, tf_status *st) {
  tf_run_options o = {.timeout_ms = timeout_ms};
  const char *tn[1] = {t};
  return tf_session_run(s, &o, NULL, NULL, 0, f, out, nf, tn, t ? 1 : 0, NULL, st);
}

static void run_target(tf_session *s, const char *t) {
  tf_status st;
  ck_assert_msg(run(s, NULL, NULL, 0, t, 5000, &st) == TF_OK, "%s", st.msg);
}

static const char *str(const tf_tensor *t, int64_t i) {
  const tf_string *s = &tf_tensor_strings(t)[i];
  return s->data ? s->data : "";
}

static void write_records(const char *path, const char *const *recs, int n) {
  io_buf b = {0};
  for (int i = 0; i < n; i++) io_tfrecord(&b, recs[i], strlen(recs[i]));
  io_write(path, b.p, b.n);
  free(b.p);
}

/* ---- tests ------------------------------------------------------------------------ */

START_TEST(test_read_records) {
  char dir[IO_PATH_MAX], a[IO_PATH_MAX], b[IO_PATH_MAX];
  io_tmpdir(dir, sizeof dir);
  static const char *const ra[] = {"one", "two"}, *const rb[] = {"three"};
  write_records(io_path(a, dir, "a.tfr"), ra, 2);
  write_records(io_path(b, dir, "b.tfr"), rb, 1);
  tf_graph *g = tf_graph_new();
  tf_node *q = name_queue(g, "names");
  const char *files[2] = {a, b};
  add_names(g, q, "q", files, 2);
  tf_node *r = reader(g, "TFRecordReader", "rdr", NULL, 0);
  read_node(g, "read", r, q, 0);
  tf_output h = {r, 0};
  tt_node(g, "ReaderNumRecordsProduced", "produced", &h, 1, NULL, 0);
  tt_node(g, "ReaderNumWorkUnitsCompleted", "completed", &h, 1, NULL, 0);
  tt_node(g, "ReaderReset", "reset", &h, 1, NULL, 0);
  tf_session *s = session(g, 2);
  run_target(s, "enqueue_q");
  run_target(s, "close_q");
  const char *f[2] = {"read:0", "read:1"};
  static const char *const want[3] = {"one", "two", "three"};
  static const int off[3] = {0, 19, 0};
  for (int i = 0; i < 3; i++) {
    tf_tensor *out[2];
    tf_status st;
    ck_assert_msg(run(s, f, out, 2, NULL, 5000, &st) == TF_OK, "%s", st.msg);
    ck_assert_str_eq(str(out[1], 0), want[i]);
    char key[2 * IO_PATH_MAX];
    snprintf(key, sizeof key, "%s:%d", i < 2 ? a : b, off[i]);
    ck_assert_str_eq(str(out[0], 0), key);
    tt_free(out, 2);
  }
  const char *cf[2] = {"produced", "completed"};
  tf_tensor *c[2];
  tf_status st;
  ck_assert_int_eq(run(s, cf, c, 2, NULL, 5000, &st), TF_OK);
  ck_assert_int_eq(*(int64_t *)c[0]->data, 3);
  ck_assert_int_eq(*(int64_t *)c[1]->data, 1);
  tt_free(c, 2);
  tf_tensor *out[2];
  ck_assert_int_eq(run(s, f, out, 2, NULL, 5000, &st), TF_OUT_OF_RANGE);
  io_assert_error(&st, TF_OUT_OF_RANGE, "read", "ReaderRead", "is closed");
  run_target(s, "reset");
  ck_assert_int_eq(run(s, cf, c, 2, NULL, 5000, &st), TF_OK);
  ck_assert_int_eq(*(int64_t *)c[0]->data, 0);
  ck_assert_int_eq(*(int64_t *)c[1]->data, 0);
  tt_free(c, 2);
  tf_session_free(s);
  tf_graph_free(g);
  io_tmpdir_remove(dir);
}
END_TEST

/* IDX images through ReaderReadUpTo and DecodeRawExamples. */
START_TEST(test_idx_up_to_decoded) {
  char dir[IO_PATH_MAX], p[IO_PATH_MAX];
  io_tmpdir(dir, sizeof dir);
  io_buf img = io_idx_u8(5, 2, 2);
  io_write_gz(io_path(p, dir, "img.gz"), img.p, img.n);
  tf_graph *g = tf_graph_new();
  tf_node *q = name_queue(g, "names");
  const char *files[1] = {p};
  add_names(g, q, "q", files, 1);
  tf_attr_kv ra[2] = {{"dtype", tf_attr_type_v(TF_UINT8)},
                      {"record_shape", tf_attr_shape(tf_shape_of(2, 2, 2))}};
  tf_node *r = reader(g, "IdxRecordReader", "rdr", ra, 2);
  tf_node *rd = read_node(g, "read", r, q, 3);
  tf_attr_kv da[4] = {{"raw_type", tf_attr_type_v(TF_UINT8)},
                      {"out_type", tf_attr_type_v(TF_FLOAT32)},
                      {"scale", tf_attr_float(0.5)},
                      {"shape", tf_attr_shape(tf_shape_of(1, 4))}};
  tf_output v = {rd, 1};
  tt_node(g, "DecodeRawExamples", "decode", &v, 1, da, 4);
  tf_session *s = session(g, 2);
  run_target(s, "enqueue_q");
  run_target(s, "close_q");
  const char *f[1] = {"decode"};
  for (int batch = 0; batch < 2; batch++) {
    tf_tensor *out;
    tf_status st;
    ck_assert_msg(run(s, f, &out, 1, NULL, 5000, &st) == TF_OK, "%s", st.msg);
    int n = batch == 0 ? 3 : 2; /* 5 records: 3, then the last 2 */
    tt_assert_shape(out, 2, n, 4);
    for (int i = 0; i < n; i++) {
      for (int j = 0; j < 4; j++) {
        int rec = batch * 3 + i;
        ck_assert_float_eq(((float *)out->data)[i * 4 + j],
                           (float)(uint8_t)(rec * 7 + j) * 0.5f);
      }
    }
    tf_tensor_unref(out);
  }
  free(img.p);
  tf_session_free(s);
  tf_graph_free(g);
  io_tmpdir_remove(dir);
}
END_TEST

START_TEST(test_errors_name_node_and_file) {
  char dir[IO_PATH_MAX], p[IO_PATH_MAX], m[IO_PATH_MAX];
  io_tmpdir(dir, sizeof dir);
  io_buf img = io_idx_u8(2, 2, 2);
  io_write(io_path(p, dir, "img"), img.p, img.n - 1); /* truncated */
  io_path(m, dir, "missing");
  tf_graph *g = tf_graph_new();
  tf_node *q = name_queue(g, "names");
  const char *files[3] = {p, m, p};
  add_names(g, q, "q", files, 3);
  tf_node *r = reader(g, "IdxRecordReader", "images", NULL, 0);
  read_node(g, "read_images", r, q, 10);
  tf_session *s = session(g, 1);
  run_target(s, "enqueue_q");
  const char *f[1] = {"read_images:1"};
  tf_tensor *out;
  tf_status st;
  ck_assert_int_eq(run(s, f, &out, 1, NULL, 5000, &st), TF_DATA_LOSS);
  io_assert_error(&st, TF_DATA_LOSS, "read_images", "ReaderReadUpTo", p,
                  "truncated at offset 23");
  ck_assert_int_eq(run(s, f, &out, 1, NULL, 5000, &st), TF_NOT_FOUND);
  io_assert_error(&st, TF_NOT_FOUND, "read_images", m);
  /* IDX checks: the third file is the truncated one again: still damaged */
  ck_assert_int_eq(run(s, f, &out, 1, NULL, 5000, &st), TF_DATA_LOSS);
  free(img.p);
  tf_session_free(s);
  tf_graph_free(g);
  io_tmpdir_remove(dir);
}
END_TEST

START_TEST(test_shared_readers) {
  char dir[IO_PATH_MAX], a[IO_PATH_MAX];
  io_tmpdir(dir, sizeof dir);
  static const char *const ra[] = {"r0", "r1", "r2", "r3"};
  write_records(io_path(a, dir, "a.tfr"), ra, 4);
  tf_graph *g = tf_graph_new();
  tf_node *q = name_queue(g, "names");
  const char *files[1] = {a};
  add_names(g, q, "q", files, 1);
  tf_attr_kv sh = {"shared_name", tf_attr_string("shared")};
  tf_node *r1 = reader(g, "TFRecordReader", "r1", &sh, 1);
  tf_node *r2 = reader(g, "TFRecordReader", "r2", &sh, 1);
  tf_attr_kv bad[2] = {{"shared_name", tf_attr_string("shared")},
                       {"compression_type", tf_attr_string("GZIP")}};
  tf_node *r3 = reader(g, "TFRecordReader", "r3", bad, 2);
  read_node(g, "read1", r1, q, 0);
  read_node(g, "read2", r2, q, 0);
  read_node(g, "read3", r3, q, 0);
  tf_session *s = session(g, 2);
  run_target(s, "enqueue_q");
  for (int i = 0; i < 4; i++) {
    const char *f[1] = {i % 2 ? "read2:1" : "read1:1"};
    tf_tensor *out;
    tf_status st;
    ck_assert_msg(run(s, f, &out, 1, NULL, 5000, &st) == TF_OK, "%s", st.msg);
    ck_assert_str_eq(str(out, 0), ra[i]); /* one reader: consecutive records */
    tf_tensor_unref(out);
  }
  const char *f3[1] = {"read3:1"};
  tf_tensor *out;
  tf_status st;
  ck_assert_int_eq(run(s, f3, &out, 1, NULL, 5000, &st), TF_INVALID_ARGUMENT);
  io_assert_error(&st, TF_INVALID_ARGUMENT, "r3", "reader 'shared' already "
                  "exists with another compression");
  tf_session_free(s);
  tf_graph_free(g);
  io_tmpdir_remove(dir);
}
END_TEST

START_TEST(test_write_tfrecords) {
  char dir[IO_PATH_MAX], p[IO_PATH_MAX], pz[IO_PATH_MAX], bad[IO_PATH_MAX];
  io_tmpdir(dir, sizeof dir);
  io_path(p, dir, "out.tfr");
  io_path(pz, dir, "out.tfr.gz");
  io_path(bad, dir, "no/such/out.tfr");
  static const char *const recs[3] = {"hello", "", "world!"};
  tf_graph *g = tf_graph_new();
  tf_node *rv = tt_const(g, "records", string_vec(3, recs));
  const char *names[3] = {p, pz, bad};
  const char *ct[3] = {"", "GZIP", ""};
  for (int i = 0; i < 3; i++) {
    char nm[32];
    snprintf(nm, sizeof nm, "fn%d", i);
    tf_shape sc = tf_shape_scalar();
    tf_tensor *t;
    tf_status st;
    ck_assert_int_eq(tf_tensor_new(TF_STRING, &sc, &t, &st), TF_OK);
    tf_tensor_set_string(t, 0, names[i], strlen(names[i]), &st);
    tf_output in[2] = {{tt_const(g, nm, t), 0}, {rv, 0}};
    tf_attr_kv a = {"compression_type", tf_attr_string(ct[i])};
    snprintf(nm, sizeof nm, "write%d", i);
    tt_node(g, "WriteTFRecords", nm, in, 2, &a, 1);
  }
  tf_session *s = session(g, 1);
  run_target(s, "write0");
  run_target(s, "write1");
  io_buf want = {0};
  for (int i = 0; i < 3; i++) io_tfrecord(&want, recs[i], strlen(recs[i]));
  size_t n;
  uint8_t *got = io_read(p, &n);
  ck_assert_uint_eq(n, want.n);
  ck_assert_int_eq(memcmp(got, want.p, n), 0);
  free(got);
  /* the gzip file decompresses (zlib's own gz reader) to the same bytes */
  gzFile gf = gzopen(pz, "rb");
  uint8_t buf[256];
  int k = gzread(gf, buf, sizeof buf);
  gzclose(gf);
  ck_assert_int_eq(k, (int)want.n);
  ck_assert_int_eq(memcmp(buf, want.p, want.n), 0);
  tf_status st;
  ck_assert_int_eq(run(s, NULL, NULL, 0, "write2", 5000, &st), TF_NOT_FOUND);
  io_assert_error(&st, TF_NOT_FOUND, "write2", bad);
  free(want.p);
  tf_session_free(s);
  tf_graph_free(g);
  io_tmpdir_remove(dir);
}
END_TEST

/* A read waiting for a name ends at its deadline; the reader still works. */
START_TEST(test_blocked_read_deadline) {
  char dir[IO_PATH_MAX], a[IO_PATH_MAX];
  io_tmpdir(dir, sizeof dir);
  static const char *const ra[] = {"x"};
  write_records(io_path(a, dir, "a.tfr"), ra, 1);
  static const int threads[2] = {1, 4};
  for (int k = 0; k < 2; k++) {
    tf_graph *g = tf_graph_new();
    tf_node *q = name_queue(g, "names");
    const char *files[1] = {a};
    add_names(g, q, "q", files, 1);
    tf_node *r = reader(g, "TFRecordReader", "rdr", NULL, 0);
    read_node(g, "read", r, q, 0);
    read_node(g, "read_many", r, q, 5);
    tf_session *s = session(g, threads[k]);
    const char *f[1] = {"read:1"}, *fm[1] = {"read_many:1"};
    tf_tensor *out;
    tf_status st;
    for (int rep = 0; rep < 2; rep++) {
      int64_t t0 = tf__now_ns();
      ck_assert_int_eq(run(s, rep ? fm : f, &out, 1, NULL, 100, &st), TF_DEADLINE_EXCEEDED);
      ck_assert_int_lt(tf__now_ns() - t0, 2000000000LL);
    }
    run_target(s, "enqueue_q");
    ck_assert_msg(run(s, f, &out, 1, NULL, 5000, &st) == TF_OK, "%s", st.msg);
    ck_assert_str_eq(str(out, 0), "x");
    tf_tensor_unref(out);
    tf_session_free(s);
    tf_graph_free(g);
  }
  io_tmpdir_remove(dir);
}
END_TEST

START_TEST(test_needs_session) {
  const char *m = tt_run_fail("TFRecordReader", NULL, 0, NULL, 0, TF_FAILED_PRECONDITION);
  ck_assert_msg(strstr(m, "needs a session"), "%s", m);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_io");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_read_records);
  tcase_add_test(tc, test_idx_up_to_decoded);
  tcase_add_test(tc, test_errors_name_node_and_file);
  tcase_add_test(tc, test_shared_readers);
  tcase_add_test(tc, test_write_tfrecords);
  tcase_add_test(tc, test_blocked_read_deadline);
  tcase_add_test(tc, test_needs_session);
  suite_add_tcase(s, tc);
  return s;
}
