/* input_pipeline_test.c: the pipeline builder end to end on small files
 * written here. Zipped IDX sources (images and labels over several files,
 * raw and gzipped) deliver every example exactly once per epoch, in file
 * order without shuffling, and then OUT_OF_RANGE after num_epochs; with a
 * RandomShuffleQueue every example comes num_epochs times, still paired
 * with its label, in another order; TFRecord sources with several reader
 * threads and shuffled files lose nothing; sources of unequal length, a
 * damaged file and a missing one end the input with the error kept
 * (DATA_LOSS naming file and offset, NOT_FOUND naming the path); a stop
 * releases runners blocked on full queues promptly; bad options are
 * refused; the installed Fashion-MNIST test set comes out whole. */
#include <math.h>
#include <time.h>

#include "lib/core/base/util.h"
#include "test/unit/core/serialize/io_testlib.h"
#include "tf/session.h"

#define FMNIST "/usr/share/datasets/fashion-mnist/"
#define MAXN 256

/* IDX images [n, 2, 3] whose example k (global index first + i) has pixel
 * j = (k + j) & 0xff, and labels k % 10. */
static void write_idx_pair(const char *img, const char *lab, int first, int n,
                           bool gz) {
  io_buf a = {0}, b = {0};
  uint32_t d3[3] = {(uint32_t)n, 2, 3}, d1[1] = {(uint32_t)n};
  io_idx_header(&a, 0x08, 3, d3);
  io_idx_header(&b, 0x08, 1, d1);
  for (int i = 0; i < n; i++) {
    int k = first + i;
    for (int j = 0; j < 6; j++) {
      uint8_t v = (uint8_t)((k + j) & 0xff);
      io_put(&a, &v, 1);
    }
    uint8_t l = (uint8_t)(k % 10);
    io_put(&b, &l, 1);
  }
  if (gz) {
    io_write_gz(img, a.p, a.n);
    io_write_gz(lab, b.p, b.n);
  } else {
    io_write(img, a.p, a.n);
    io_write(lab, b.p, b.n);
  }
  free(a.p);
  free(b.p);
}

typedef struct fixture {
  char dir[IO_PATH_MAX];
  char img[3][IO_PATH_MAX], lab[3][IO_PATH_MAX];
  const char *imgs[3], *labs[3];
  tf_input_source src[2];
} fixture;

/* 60 examples over three file pairs of 20 (the middle one gzipped). */
static void fixture_make(fixture *f) {
  io_tmpdir(f->dir, sizeof f->dir);
  for (int i = 0; i < 3; i++) {
    char n[32];
    snprintf(n, sizeof n, "img%d%s", i, i == 1 ? ".gz" : "");
    io_path(f->img[i], f->dir, n);
    snprintf(n, sizeof n, "lab%d%s", i, i == 1 ? ".gz" : "");
    io_path(f->lab[i], f->dir, n);
    write_idx_pair(f->img[i], f->lab[i], 20 * i, 20, i == 1);
    f->imgs[i] = f->img[i];
    f->labs[i] = f->lab[i];
  }
  tf_record_options io = tf_record_options_idx(), lo = tf_record_options_idx();
  io.idx_dtype = lo.idx_dtype = TF_UINT8;
  io.idx_record_shape = tf_shape_of(2, 2, 3);
  lo.idx_record_shape = tf_shape_scalar();
  f->src[0] = (tf_input_source){.files = f->imgs, .n_files = 3, .records = io,
                                .decode = {.dtype = TF_FLOAT32, .shape = tf_shape_of(1, 6)}};
  f->src[1] = (tf_input_source){.files = f->labs, .n_files = 3, .records = lo,
                                .decode = {.dtype = TF_INT64, .shape = tf_shape_scalar()}};
}

/* What a drained pipeline delivered. */
typedef struct drained {
  int64_t batches;
  int order[4 * MAXN]; /* example index per delivered example */
  int n;
  tf_status end;       /* the run that ended the loop */
  tf_status status;    /* the pipeline's own status after stop */
} drained;

/* Builds, runs to OUT_OF_RANGE (or another error), stops. Example index
 * = pixel 0; checks every pixel and the pairing with the label. */
static void run_pipeline(const tf_input_options *o, drained *d) {
  tf_status st;
  tf_graph *g = tf_graph_new();
  tf_input_pipeline *p = tf_input_pipeline_new(g, o, &st);
  ck_assert_msg(p != NULL, "%s", st.msg);
  tf_session_options so = {.inter_op_threads = 2};
  tf_session *s = tf_session_new(g, &so, &st);
  ck_assert_int_eq(tf_input_pipeline_start(p, s, &st), TF_OK);
  char f0[128], f1[128];
  tf_output o0 = tf_input_pipeline_output(p, 0);
  snprintf(f0, sizeof f0, "%s:%d", tf_node_name(o0.node), o0.index);
  const char *fetch[2] = {f0, f1};
  int nf = 1;
  if (o->n_sources > 1) {
    tf_output o1 = tf_input_pipeline_output(p, 1);
    snprintf(f1, sizeof f1, "%s:%d", tf_node_name(o1.node), o1.index);
    nf = 2;
  }
  memset(d, 0, sizeof *d);
  tf_run_options ro = {.timeout_ms = 5000};
  int bad = 0;
  for (;;) {
    tf_tensor *out[2] = {NULL, NULL};
    if (tf_session_run(s, &ro, NULL, NULL, 0, fetch, out, nf, NULL, 0, NULL,
                       &d->end) != TF_OK) {
      break;
    }
    d->batches++;
    const float *px = out[0]->data;
    ck_assert_int_eq(out[0]->shape.dims[0], o->batch_size);
    for (int64_t i = 0; i < o->batch_size; i++) {
      int k = (int)px[i * 6];
      for (int j = 0; j < 6; j++) bad += px[i * 6 + j] != (float)((k + j) & 0xff);
      if (nf == 2) bad += ((int64_t *)out[1]->data)[i] != k % 10;
      ck_assert_int_lt(d->n, 4 * MAXN);
      d->order[d->n++] = k;
    }
    tt_free(out, nf);
  }
  ck_assert_int_eq(bad, 0);
  int64_t t0 = tf__now_ns();
  tf_input_pipeline_stop(p, 5000, &d->status);
  ck_assert_int_lt(tf__now_ns() - t0, 2000000000LL);
  tf_status again;
  ck_assert_int_eq(tf_input_pipeline_status(p, &again), d->status.code);
  tf_input_pipeline_free(p);
  tf_session_free(s);
  tf_graph_free(g);
}

static void count_each(const drained *d, int n_examples, int times) {
  int seen[MAXN] = {0};
  for (int i = 0; i < d->n; i++) {
    ck_assert_int_lt(d->order[i], n_examples);
    seen[d->order[i]]++;
  }
  int wrong = 0;
  for (int k = 0; k < n_examples; k++) wrong += seen[k] != times;
  ck_assert_msg(wrong == 0, "%d examples not delivered exactly %d times", wrong, times);
}

/* With batches prefetched (by default, and 5 deep) and without. */
START_TEST(test_fifo_in_order_per_epoch) {
  fixture f;
  fixture_make(&f);
  static const int64_t prefetch[3] = {0, 5, -1};
  for (int k = 0; k < 3; k++) {
    tf_input_options o = {.sources = f.src, .n_sources = 2, .batch_size = 6,
                          .num_epochs = 3, .read_batch = 7,
                          .prefetch_batches = prefetch[k]};
    drained d;
    run_pipeline(&o, &d);
    io_assert_error(&d.end, TF_OUT_OF_RANGE, "is closed");
    ck_assert_msg(d.status.code == TF_OK, "%s", d.status.msg);
    ck_assert_int_eq(d.batches, 30);
    int wrong = 0;
    for (int i = 0; i < d.n; i++) wrong += d.order[i] != i % 60;
    ck_assert_int_eq(wrong, 0);
  }
  io_tmpdir_remove(f.dir);
}
END_TEST

START_TEST(test_shuffled_epochs) {
  fixture f;
  fixture_make(&f);
  for (int epochs = 1; epochs <= 2; epochs++) {
    tf_input_options o = {.sources = f.src, .n_sources = 2, .batch_size = 5,
                          .num_epochs = epochs, .shuffle = true, .capacity = 40,
                          .min_after_dequeue = 10, .seed = 42};
    drained d;
    run_pipeline(&o, &d);
    ck_assert_msg(d.status.code == TF_OK, "%s", d.status.msg);
    ck_assert_int_eq(d.batches, 12 * epochs);
    count_each(&d, 60, epochs);
    int moved = 0;
    for (int i = 0; i < d.n; i++) moved += d.order[i] != i % 60;
    ck_assert_int_gt(moved, 30);
  }
  io_tmpdir_remove(f.dir);
}
END_TEST

/* TFRecord records of three little-endian int16 (k, -k, 2k). */
START_TEST(test_tfrecord_threads_shuffled_files) {
  char dir[IO_PATH_MAX], path[4][IO_PATH_MAX];
  const char *files[4];
  io_tmpdir(dir, sizeof dir);
  for (int fi = 0; fi < 4; fi++) {
    io_buf b = {0};
    for (int i = 0; i < 25; i++) {
      int k = fi * 25 + i;
      io_buf r = {0};
      io_put_le(&r, (uint16_t)k, 2);
      io_put_le(&r, (uint16_t)(int16_t)-k, 2);
      io_put_le(&r, (uint16_t)(2 * k), 2);
      io_tfrecord(&b, r.p, r.n);
      free(r.p);
    }
    char n[32];
    snprintf(n, sizeof n, "r%d.tfrecord", fi);
    io_write(io_path(path[fi], dir, n), b.p, b.n);
    files[fi] = path[fi];
    free(b.p);
  }
  tf_input_source src = {.files = files, .n_files = 4,
                         .decode = {.raw_dtype = TF_INT16, .little_endian = true,
                                    .dtype = TF_FLOAT64, .shape = tf_shape_of(1, 3)}};
  tf_input_options o = {.sources = &src, .n_sources = 1, .batch_size = 10,
                        .num_epochs = 2, .shuffle = true, .seed = 3,
                        .shuffle_files = true, .threads = 3, .read_batch = 8};
  tf_status st;
  tf_graph *g = tf_graph_new();
  tf_input_pipeline *p = tf_input_pipeline_new(g, &o, &st);
  ck_assert_msg(p != NULL, "%s", st.msg);
  tf_session *s = tf_session_new(g, NULL, &st);
  ck_assert_int_eq(tf_input_pipeline_start(p, s, &st), TF_OK);
  ck_assert_int_eq(tf_input_pipeline_start(p, s, &st), TF_FAILED_PRECONDITION);
  tf_output out0 = tf_input_pipeline_output(p, 0);
  char f0[128];
  snprintf(f0, sizeof f0, "%s:%d", tf_node_name(out0.node), out0.index);
  const char *fetch[1] = {f0};
  int seen[100] = {0}, bad = 0, batches = 0;
  tf_run_options ro = {.timeout_ms = 5000};
  tf_tensor *t;
  while (tf_session_run(s, &ro, NULL, NULL, 0, fetch, &t, 1, NULL, 0, NULL, &st) == TF_OK) {
    tt_assert_shape(t, 2, 10, 3);
    const double *v = t->data;
    for (int i = 0; i < 10; i++) {
      int k = (int)v[3 * i];
      bad += k < 0 || k >= 100 || v[3 * i + 1] != -k || v[3 * i + 2] != 2 * k;
      if (k >= 0 && k < 100) seen[k]++;
    }
    tf_tensor_unref(t);
    batches++;
  }
  io_assert_error(&st, TF_OUT_OF_RANGE, "is closed");
  ck_assert_int_eq(bad, 0);
  ck_assert_int_eq(batches, 20);
  for (int k = 0; k < 100; k++) ck_assert_int_eq(seen[k], 2);
  ck_assert_int_eq(tf_input_pipeline_stop(p, 5000, &st), TF_OK);
  tf_input_pipeline_free(p);
  tf_session_free(s);
  tf_graph_free(g);
  io_tmpdir_remove(dir);
}
END_TEST

START_TEST(test_input_errors_kept) {
  fixture f;
  fixture_make(&f);
  tf_input_options o = {.sources = f.src, .n_sources = 2, .batch_size = 4,
                        .num_epochs = 1, .read_batch = 8};
  drained d;
  /* labels file 2 shorter than images file 2: the zip breaks */
  write_idx_pair(f.img[2], f.lab[2], 40, 20, false);
  char shortlab[IO_PATH_MAX], junk[IO_PATH_MAX];
  io_path(junk, f.dir, "junk");
  write_idx_pair(junk, io_path(shortlab, f.dir, "short"), 40, 12, false);
  f.labs[2] = shortlab;
  run_pipeline(&o, &d);
  ck_assert_int_eq(d.end.code, TF_OUT_OF_RANGE);
  ck_assert_int_eq(d.status.code, TF_INVALID_ARGUMENT);
  ck_assert_int_le(d.n, 60);
  /* a damaged file: DATA_LOSS naming it and the offset */
  f.labs[2] = f.lab[2];
  size_t n;
  uint8_t *b = io_read(f.img[2], &n);
  io_write(f.img[2], b, n - 10);
  free(b);
  run_pipeline(&o, &d);
  ck_assert_int_eq(d.end.code, TF_OUT_OF_RANGE);
  io_assert_error(&d.status, TF_DATA_LOSS, f.img[2], "truncated at offset");
  ck_assert_int_eq(d.n, 40); /* the first two file pairs came through */
  /* a missing file */
  f.imgs[2] = "/nonexistent/images-idx3-ubyte";
  run_pipeline(&o, &d);
  io_assert_error(&d.status, TF_NOT_FOUND, "/nonexistent/images-idx3-ubyte");
  io_tmpdir_remove(f.dir);
}
END_TEST

/* Forever, never consumed: every runner ends up blocked on a full queue;
 * a stop releases them at once. */
START_TEST(test_stop_while_blocked) {
  fixture f;
  fixture_make(&f);
  tf_input_options o = {.sources = f.src, .n_sources = 2, .batch_size = 4,
                        .num_epochs = 0, .shuffle = true, .capacity = 16,
                        .min_after_dequeue = 4};
  tf_status st;
  tf_graph *g = tf_graph_new();
  tf_input_pipeline *p = tf_input_pipeline_new(g, &o, &st);
  ck_assert_msg(p != NULL, "%s", st.msg);
  tf_session *s = tf_session_new(g, NULL, &st);
  ck_assert_int_eq(tf_input_pipeline_start(p, s, &st), TF_OK);
  struct timespec ts = {0, 100 * 1000 * 1000};
  nanosleep(&ts, NULL);
  ck_assert_int_eq(tf_input_pipeline_status(p, &st), TF_OK);
  int64_t t0 = tf__now_ns();
  ck_assert_msg(tf_input_pipeline_stop(p, 2000, &st) == TF_OK, "%s", st.msg);
  ck_assert_int_lt(tf__now_ns() - t0, 1000000000LL);
  tf_input_pipeline_free(p);
  tf_session_free(s);
  tf_graph_free(g);
  io_tmpdir_remove(f.dir);
}
END_TEST

START_TEST(test_bad_options) {
  fixture f;
  fixture_make(&f);
  tf_graph *g = tf_graph_new();
  tf_status st;
  struct { tf_input_options o; const char *msg; } cases[] = {
      {{.sources = f.src, .n_sources = 0, .batch_size = 1}, "needs 1 to 8 sources"},
      {{.sources = f.src, .n_sources = 2, .batch_size = 0}, "batch_size must be >= 1"},
      {{.sources = f.src, .n_sources = 2, .batch_size = 1, .threads = 2}, "zipped"},
      {{.sources = f.src, .n_sources = 2, .batch_size = 1, .shuffle_files = true}, "zipped"},
  };
  for (size_t i = 0; i < TF_ARRAY_LEN(cases); i++) {
    ck_assert_ptr_null(tf_input_pipeline_new(g, &cases[i].o, &st));
    io_assert_error(&st, TF_INVALID_ARGUMENT, cases[i].msg);
  }
  tf_input_options o = {.sources = f.src, .n_sources = 2, .batch_size = 2};
  f.src[0].records.idx_dtype = TF_DTYPE_INVALID;
  ck_assert_ptr_null(tf_input_pipeline_new(g, &o, &st));
  io_assert_error(&st, TF_INVALID_ARGUMENT, "set records.idx_dtype");
  f.src[0].records.idx_dtype = TF_UINT8;
  f.src[0].decode.shape = tf_shape_of(1, 5);
  ck_assert_ptr_null(tf_input_pipeline_new(g, &o, &st));
  io_assert_error(&st, TF_INVALID_ARGUMENT, "records of shape [2,3] cannot make "
                  "examples of shape [5]");
  f.src[0].decode.shape = tf_shape_of(1, 6);
  f.src[1].decode.scale = 0.5; /* int64 labels */
  ck_assert_ptr_null(tf_input_pipeline_new(g, &o, &st));
  io_assert_error(&st, TF_INVALID_ARGUMENT, "scale 0.5");
  f.src[1].decode.scale = 0;
  f.imgs[1] = "";
  ck_assert_ptr_null(tf_input_pipeline_new(g, &o, &st));
  io_assert_error(&st, TF_INVALID_ARGUMENT, "file 1 has an empty name");
  /* the decode helpers */
  tf_node *v = tt_placeholder(g, "v", TF_STRING, tf_shape_of(1, -1));
  tf_output out;
  ck_assert_int_eq(tf_decode_idx_labels(g, (tf_output){v, 0}, TF_FLOAT32, &out, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_int_eq(tf_decode_idx_images(g, (tf_output){v, 0}, 784, &out, &st), TF_OK);
  ck_assert_int_eq(tf_node_output_type(out.node, 0), TF_FLOAT32);
  ck_assert_int_eq(tf_node_output_shape(out.node, 0)->dims[1], 784);
  ck_assert_int_eq(tf_decode_idx_labels(g, (tf_output){v, 0}, TF_INT32, &out, &st), TF_OK);
  ck_assert_int_eq(tf_node_output_shape(out.node, 0)->rank, 1);
  tf_graph_free(g);
  io_tmpdir_remove(f.dir);
}
END_TEST

START_TEST(test_fashion_mnist_test_set) {
  if (access(FMNIST "t10k-images-idx3-ubyte.gz", R_OK) != 0) {
    fprintf(stderr, "input_pipeline_test: %s not installed (INSTALL_EXTRAS=1 "
            "scripts/install-deps.sh); Fashion-MNIST pipeline skipped\n", FMNIST);
    return;
  }
  const char *files[2] = {FMNIST "t10k-images-idx3-ubyte.gz",
                          FMNIST "t10k-labels-idx1-ubyte.gz"};
  tf_input_source src[2];
  tf_input_idx_image_sources(files, 28, 28, TF_INT32, src);
  tf_input_options o = {.sources = src, .n_sources = 2, .batch_size = 100,
                        .num_epochs = 1, .shuffle = true, .seed = 1,
                        .capacity = 2000, .min_after_dequeue = 1000, .read_batch = 500};
  tf_status st;
  tf_graph *g = tf_graph_new();
  tf_input_pipeline *p = tf_input_pipeline_new(g, &o, &st);
  ck_assert_msg(p != NULL, "%s", st.msg);
  tf_session *s = tf_session_new(g, NULL, &st);
  ck_assert_int_eq(tf_input_pipeline_start(p, s, &st), TF_OK);
  char f[2][128];
  const char *fetch[2] = {f[0], f[1]};
  for (int i = 0; i < 2; i++) {
    tf_output oi = tf_input_pipeline_output(p, i);
    snprintf(f[i], sizeof f[i], "%s:%d", tf_node_name(oi.node), oi.index);
  }
  int64_t per[10] = {0}, bad = 0, batches = 0;
  double ink = 0;
  tf_tensor *t[2];
  tf_run_options ro = {.timeout_ms = 10000};
  while (tf_session_run(s, &ro, NULL, NULL, 0, fetch, t, 2, NULL, 0, NULL, &st) == TF_OK) {
    batches++;
    tt_assert_shape(t[0], 2, 100, 784);
    for (int64_t i = 0; i < t[0]->n; i++) {
      float v = ((float *)t[0]->data)[i];
      bad += !(v >= 0 && v <= 1);
      ink += v;
    }
    for (int i = 0; i < 100; i++) {
      int32_t l = ((int32_t *)t[1]->data)[i];
      if (l < 0 || l > 9) bad++;
      else per[l]++;
    }
    tt_free(t, 2);
  }
  io_assert_error(&st, TF_OUT_OF_RANGE, "is closed");
  ck_assert_int_eq(bad, 0);
  ck_assert_int_eq(batches, 100);
  for (int c = 0; c < 10; c++) ck_assert_int_eq(per[c], 1000);
  double mean = ink / (10000.0 * 784);
  ck_assert_msg(mean > 0.2 && mean < 0.4, "mean pixel %g", mean); /* about 0.286 */
  ck_assert_int_eq(tf_input_pipeline_stop(p, 5000, &st), TF_OK);
  tf_input_pipeline_free(p);
  tf_session_free(s);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("input_pipeline");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_fifo_in_order_per_epoch);
  tcase_add_test(tc, test_shuffled_epochs);
  tcase_add_test(tc, test_tfrecord_threads_shuffled_files);
  tcase_add_test(tc, test_input_errors_kept);
  tcase_add_test(tc, test_stop_while_blocked);
  tcase_add_test(tc, test_bad_options);
  tcase_add_test(tc, test_fashion_mnist_test_set);
  suite_add_tcase(s, tc);
  return s;
}
