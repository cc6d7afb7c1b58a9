/* job_spec_input.c: the input section of a job spec (docs/jobs.md
 * "input"): the record files of the training and test sets (images and
 * labels zipped file by file, as the input pipeline reads them: IDX or
 * TFRecord), how a record decodes, the batch, shuffling and how workers
 * share the files. The shard policy "auto" is resolved by job_spec.c once
 * the number of workers is known. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "lib/runtime/job_spec_impl.h"

void tf__job_files_free(tf_job_files *f) {
  for (int i = 0; i < f->n; i++) {
    free(f->paths[i]);
  }
  free(f->paths);
  f->paths = NULL;
  f->n = 0;
}

tf_code tf__job_parse_files(tf__spec *c, yaml_node_t *v, const char *path,
                            tf_job_files *f) {
  int n;
  TF_TRY(tf__spec_seq(c, v, path, 1, TF_JOB_FILES_MAX, true, &n));
  f->paths = tf__xcalloc((size_t)n, sizeof *f->paths);
  for (int i = 0; i < n; i++) {
    char p[96];
    const char *t;
    snprintf(p, sizeof p, v->type == YAML_SEQUENCE_NODE ? "%s[%d]" : "%s",
             path, i);
    TF_TRY(tf__spec_text(c, tf__spec_item(c, v, i), p, "a file path",
                         TF_JOB_PATH_MAX, &t));
    f->paths[i] = tf__xstrdup(t);
    f->n = i + 1;
  }
  return TF_OK;
}

/* {images: FILES, labels: FILES} of one set (path "input.train"). */
static tf_code parse_set(tf__spec *c, const yaml_node_t *v, const char *path,
                         tf_job_files *images, tf_job_files *labels) {
  static const char *const keys[] = {"images", "labels"};
  yaml_node_t *f[2];
  char p[64];
  TF_TRY(tf__spec_fields(c, v, path, keys, 2, f));
  for (int k = 0; k < 2; k++) {
    if (f[k] == NULL) {
      return tf__spec_err(c, v, path, "needs '%s' (a file or a list of "
                          "files)", keys[k]);
    }
  }
  snprintf(p, sizeof p, "%s.images", path);
  TF_TRY(tf__job_parse_files(c, f[0], p, images));
  snprintf(p, sizeof p, "%s.labels", path);
  TF_TRY(tf__job_parse_files(c, f[1], p, labels));
  if (images->n != labels->n) {
    return tf__spec_err(c, f[1], p, "%d label files for %d image files (the "
                        "n-th label file holds the labels of the n-th image "
                        "file)", labels->n, images->n);
  }
  return TF_OK;
}

/* image_dtype and label_dtype: what a record stores. */
static tf_code parse_dtypes(tf__spec *c, yaml_node_t **f, tf_job_input *in) {
  static const char *const names[] = {"uint8", "int8",  "int16",  "int32",
                                      "float32", "float64", "uint16", "int64"};
  static const tf_dtype dts[] = {TF_UINT8,   TF_INT8,    TF_INT16, TF_INT32,
                                 TF_FLOAT32, TF_FLOAT64, TF_UINT16, TF_INT64};
  /* IDX stores only the first six; labels must be integers. */
  int n_img = in->format == TF_RECORD_IDX ? 6 : 8;
  int k;
  if (f[0] != NULL) {
    TF_TRY(tf__spec_enum(c, f[0], "input.image_dtype", names, n_img, &k));
    in->image_dtype = dts[k];
  }
  if (f[1] != NULL) {
    static const char *const inames[] = {"uint8", "int8", "int16", "int32",
                                         "uint16", "int64"};
    static const tf_dtype idts[] = {TF_UINT8, TF_INT8,   TF_INT16,
                                    TF_INT32, TF_UINT16, TF_INT64};
    TF_TRY(tf__spec_enum(c, f[1], "input.label_dtype", inames,
                         in->format == TF_RECORD_IDX ? 4 : 6, &k));
    in->label_dtype = idts[k];
  }
  return TF_OK;
}

enum {
  I_FORMAT, I_COMPRESSION, I_TRAIN, I_TEST, I_IMAGE_DTYPE, I_LABEL_DTYPE,
  I_LITTLE_ENDIAN, I_SCALE, I_BATCH, I_SHUFFLE, I_SEED, I_SHARD, I_THREADS,
  I_COUNT
};
static const char *const keys[I_COUNT] = {
    "format",      "compression",   "train", "test",       "image_dtype",
    "label_dtype", "little_endian", "scale", "batch_size", "shuffle",
    "seed",        "shard",         "read_threads"};

/* Everything but the files and dtypes. */
static tf_code parse_options(tf__spec *c, yaml_node_t **f, tf_job_input *in) {
  static const char *const comps[] = {"auto", "none", "zlib", "gzip"};
  int k;
  int64_t x;
  if (f[I_COMPRESSION] != NULL) {
    TF_TRY(tf__spec_enum(c, f[I_COMPRESSION], "input.compression", comps, 4,
                         &k));
    in->compression = (tf_compression)k;
  }
  if (f[I_LITTLE_ENDIAN] != NULL) {
    TF_TRY(tf__spec_bool(c, f[I_LITTLE_ENDIAN], "input.little_endian",
                         &in->little_endian));
  }
  if (f[I_SCALE] != NULL) {
    TF_TRY(tf__spec_float(c, f[I_SCALE], "input.scale", 0, true, 1e30, false,
                          &in->scale));
  }
  if (f[I_BATCH] != NULL) {
    TF_TRY(tf__spec_int(c, f[I_BATCH], "input.batch_size", 1, TF_JOB_BATCH_MAX,
                        "", &in->batch_size));
  }
  if (f[I_SHUFFLE] != NULL) {
    TF_TRY(tf__spec_bool(c, f[I_SHUFFLE], "input.shuffle", &in->shuffle));
  }
  if (f[I_SEED] != NULL) {
    TF_TRY(tf__spec_int(c, f[I_SEED], "input.seed", 0, INT64_MAX / 2,
                        " (0: nondeterministic)", &in->seed));
  }
  if (f[I_THREADS] != NULL) {
    TF_TRY(tf__spec_int(c, f[I_THREADS], "input.read_threads", 1, 16, "", &x));
    in->read_threads = (int)x;
  }
  return TF_OK;
}

tf_code tf__job_parse_input(tf__spec *c, const yaml_node_t *v,
                            tf_job_spec *s) {
  static const char *const formats[] = {"tfrecord", "idx"};
  tf_job_input *in = &s->input;
  yaml_node_t *f[I_COUNT];
  TF_TRY(tf__spec_fields(c, v, "input", keys, I_COUNT, f));
  in->present = true;
  if (f[I_FORMAT] == NULL || f[I_TRAIN] == NULL) {
    return tf__spec_err(c, v, "input", "needs '%s'",
                        f[I_FORMAT] == NULL ? "format" : "train");
  }
  int k;
  TF_TRY(tf__spec_enum(c, f[I_FORMAT], "input.format", formats, 2, &k));
  in->format = (tf_record_format)k;
  TF_TRY(parse_set(c, f[I_TRAIN], "input.train", &in->train_images,
                   &in->train_labels));
  if (f[I_TEST] != NULL) {
    TF_TRY(parse_set(c, f[I_TEST], "input.test", &in->test_images,
                     &in->test_labels));
  }
  TF_TRY(parse_dtypes(c, f + I_IMAGE_DTYPE, in));
  TF_TRY(parse_options(c, f, in));
  if (in->format == TF_RECORD_IDX && f[I_LITTLE_ENDIAN] != NULL) {
    return tf__spec_err(c, f[I_LITTLE_ENDIAN], "input.little_endian", "IDX "
                        "files are big-endian by definition; the key applies "
                        "to tfrecord only");
  }
  return TF_OK;
}

tf_code tf__job_resolve_shard(tf__spec *c, const yaml_node_t *input,
                              tf_job_spec *s) {
  static const char *const names[] = {"files", "shuffle", "auto"};
  yaml_node_t *f[I_COUNT];
  TF_TRY(tf__spec_fields(c, input, "input", keys, I_COUNT, f));
  int k = 2, workers = s->replication.workers;
  if (f[I_SHARD] != NULL) {
    TF_TRY(tf__spec_enum(c, f[I_SHARD], "input.shard", names, 3, &k));
  }
  int n = s->input.train_images.n;
  if (k == 2) {
    k = n >= workers ? TF_JOB_SHARD_FILES : TF_JOB_SHARD_SHUFFLE;
  }
  if (k == TF_JOB_SHARD_FILES && n < workers) {
    return tf__spec_err(c, f[I_SHARD], "input.shard", "'files' gives each of "
                        "the %d workers its own files, but input.train has "
                        "%d (use shuffle: every worker reads every file in "
                        "its own order)", workers, n);
  }
  if (k == TF_JOB_SHARD_SHUFFLE && !s->input.shuffle && workers > 1) {
    return tf__spec_err(c, f[I_SHARD] ? f[I_SHARD] : input, "input.shard",
                        "with %d workers reading every file, shuffle must be "
                        "on (else every worker reads the same batches)",
                        workers);
  }
  s->input.shard = (tf_job_shard)k;
  return TF_OK;
}
