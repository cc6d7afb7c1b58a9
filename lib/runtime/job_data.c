/* job_data.c: counting a worker's training records and loading the test
 * set for evaluation (job_data.h), with the input pipeline's decoding. */
#include "lib/runtime/job_data.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "tf/input.h"

static tf_record_options record_options(const tf_job_spec *s, bool images) {
  tf_record_options o = s->input.format == TF_RECORD_IDX ? tf_record_options_idx()
                                                         : (tf_record_options){0};
  o.format = s->input.format;
  o.compression = s->input.compression;
  if (s->input.format == TF_RECORD_IDX) {
    o.idx_dtype = images ? s->input.image_dtype : s->input.label_dtype;
  }
  return o;
}

/* Records in path: IDX from the header, TFRecord by reading. */
static tf_code count_file(const tf_job_spec *s, const char *path, int64_t *n,
                          tf_status *st) {
  tf_record_options o = record_options(s, true);
  tf_record_reader *r = NULL;
  TF_TRY(tf_record_reader_open(path, &o, &r, st));
  *n = tf_record_reader_count(r);
  const void *data;
  size_t len;
  tf_code code = TF_OK;
  if (*n < 0) {
    while ((code = tf_record_reader_next(r, &data, &len, st)) == TF_OK) {
    }
    *n = tf_record_reader_index(r);
    if (code == TF_OUT_OF_RANGE) {
      tf_status_init(st);
      code = TF_OK;
    }
  }
  tf_record_reader_close(r);
  return code;
}

tf_code tf_job_count_train(const tf_job_spec *s, int worker, int64_t *n,
                           tf_status *st) {
  const char **files = NULL;
  int nf = 0;
  tf_job_spec_worker_files(s, &s->input.train_images, worker, &files, &nf);
  *n = 0;
  tf_code code = TF_OK;
  for (int i = 0; i < nf && code == TF_OK; i++) {
    int64_t k = 0;
    code = count_file(s, files[i], &k, st);
    *n += k;
  }
  free(files);
  return code;
}

/* ---- decoding -------------------------------------------------------------- */

/* Element i of a record of raw dtype (big-endian for IDX). */
static double element(const unsigned char *p, tf_dtype raw, bool big, int64_t i) {
  size_t w = tf_dtype_size(raw);
  unsigned char b[8] = {0};
  for (size_t k = 0; k < w; k++) { /* to little-endian */
    b[k] = big ? p[i * (int64_t)w + (int64_t)(w - 1 - k)] : p[i * (int64_t)w + (int64_t)k];
  }
  union { uint8_t u8; int8_t i8; int16_t i16; uint16_t u16; int32_t i32;
          int64_t i64; float f32; double f64; } u;
  memcpy(&u, b, w);
  switch (raw) {
  case TF_UINT8: return u.u8;
  case TF_INT8: return u.i8;
  case TF_INT16: return u.i16;
  case TF_UINT16: return u.u16;
  case TF_INT32: return u.i32;
  case TF_INT64: return (double)u.i64;
  case TF_FLOAT32: return u.f32;
  default: return u.f64;
  }
}

static void store(void *out, tf_dtype dt, int64_t i, double v) {
  switch (dt) {
  case TF_FLOAT32: ((float *)out)[i] = (float)v; break;
  case TF_FLOAT64: ((double *)out)[i] = v; break;
  case TF_INT32: ((int32_t *)out)[i] = (int32_t)v; break;
  default: ((int64_t *)out)[i] = (int64_t)v; break;
  }
}

/* Reads every record of files into a growing buffer of dtype dt, per
 * record elems elements of raw dtype raw, times scale (1: none). */
typedef struct reading {
  const tf_job_spec *s;
  bool images;
  tf_dtype raw, dt;
  int64_t elems;
  double scale;
  void *buf;
  int64_t n, cap;  /* records */
} reading;

static tf_code read_record(reading *rd, const tf_record_reader *r,
                           const void *data, size_t len, tf_status *st) {
  size_t want = (size_t)rd->elems * tf_dtype_size(rd->raw);
  if (len != want) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s: record %lld has %zu "
                         "bytes, expected %zu (%lld elements of %s)",
                         tf_record_reader_path(r),
                         (long long)tf_record_reader_index(r) - 1, len, want,
                         (long long)rd->elems, tf_dtype_name(rd->raw));
  }
  if ((rd->n + 1) * rd->elems > TF_JOB_TEST_ELEMENTS_MAX) {
    return tf_status_set(st, TF_RESOURCE_EXHAUSTED, "%s: the test set has more "
                         "than %lld elements, the most the master loads",
                         rd->s->path, (long long)TF_JOB_TEST_ELEMENTS_MAX);
  }
  if (rd->n == rd->cap) {
    rd->cap = rd->cap ? 2 * rd->cap : 1024;
    rd->buf = tf__xrealloc(rd->buf, (size_t)(rd->cap * rd->elems) *
                                        tf_dtype_size(rd->dt));
  }
  bool big = rd->s->input.format == TF_RECORD_IDX || !rd->s->input.little_endian;
  for (int64_t i = 0; i < rd->elems; i++) {
    double v = element(data, rd->raw, big, i);
    store(rd->buf, rd->dt, rd->n * rd->elems + i, rd->images ? v * rd->scale : v);
  }
  rd->n++;
  return TF_OK;
}

static tf_code read_files(reading *rd, const tf_job_files *f, tf_status *st) {
  tf_record_options o = record_options(rd->s, rd->images);
  for (int i = 0; i < f->n; i++) {
    tf_record_reader *r = NULL;
    TF_TRY(tf_record_reader_open(f->paths[i], &o, &r, st));
    const void *data;
    size_t len;
    tf_code code;
    while ((code = tf_record_reader_next(r, &data, &len, st)) == TF_OK &&
           read_record(rd, r, data, len, st) == TF_OK) {
    }
    tf_record_reader_close(r);
    if (code != TF_OUT_OF_RANGE) {
      return st->code;
    }
    tf_status_init(st);
  }
  return TF_OK;
}

static tf_code to_tensor(reading *rd, const tf_shape *example, tf_tensor **out,
                         tf_status *st) {
  tf_shape sh = {.rank = example->rank + 1};
  sh.dims[0] = rd->n;
  for (int i = 0; i < example->rank; i++) {
    sh.dims[i + 1] = example->dims[i];
  }
  size_t bytes = (size_t)(rd->n * rd->elems) * tf_dtype_size(rd->dt);
  return tf_tensor_from_data(rd->dt, &sh, rd->buf ? rd->buf : "", bytes, out, st);
}

tf_code tf_job_load_test(const tf_job_spec *s, tf_tensor **images,
                         tf_tensor **labels, tf_status *st) {
  *images = *labels = NULL;
  const tf_job_example *e = tf_job_spec_example(s);
  tf_shape ex = {.rank = e->rank};
  int64_t elems = 1;
  for (int i = 0; i < e->rank; i++) {
    ex.dims[i] = e->dims[i];
    elems *= e->dims[i];
  }
  bool fl = e->dtype == TF_FLOAT32 || e->dtype == TF_FLOAT64;
  reading ri = {.s = s, .images = true, .raw = s->input.image_dtype,
                .dt = e->dtype, .elems = elems, .scale = fl ? s->input.scale : 1};
  reading rl = {.s = s, .raw = s->input.label_dtype, .dt = TF_INT32, .elems = 1};
  tf_shape scalar = tf_shape_scalar();
  tf_code code = read_files(&ri, &s->input.test_images, st);
  if (code == TF_OK) {
    code = read_files(&rl, &s->input.test_labels, st);
  }
  if (code == TF_OK && ri.n != rl.n) {
    code = tf_status_set(st, TF_INVALID_ARGUMENT, "%s: the test set has %lld "
                         "images but %lld labels", s->path, (long long)ri.n,
                         (long long)rl.n);
  }
  if (code == TF_OK && to_tensor(&ri, &ex, images, st) == TF_OK) {
    code = to_tensor(&rl, &scalar, labels, st);
  }
  code = st->code;
  free(ri.buf);
  free(rl.buf);
  if (code != TF_OK) {
    tf_tensor_unref(*images);
    *images = NULL;
  }
  return code;
}

tf_tensor *tf_job_rows(const tf_tensor *t, int64_t from, int64_t n) {
  tf_shape sh = t->shape;
  size_t row = t->shape.dims[0] ? t->nbytes / (size_t)t->shape.dims[0] : 0;
  sh.dims[0] = n;
  tf_tensor *out = NULL;
  tf_status st;
  tf_tensor_from_data(t->dtype, &sh, (const char *)t->data + (size_t)from * row,
                      (size_t)n * row, &out, &st);
  return out;
}
