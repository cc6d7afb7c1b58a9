/* input_pipeline.c: graph builders of the input pipeline. The decoding
 * helpers add one DecodeRawExamples node (DecodeRaw, Cast, Mul and
 * Reshape in one pass); the pipeline builder
 * wires, per source, a file-name FIFOQueue filled by a producer runner (one
 * EnqueueMany of the file list per epoch: max_runs = num_epochs) and a
 * reader reading up to read_batch records per step, then one example queue
 * (RandomShuffleQueue or FIFOQueue) filled by reader runners that read
 * every source, decode and EnqueueMany in one step (so zipped sources stay
 * in step), a QueueDequeueMany of batch_size and, unless turned off, a
 * FIFOQueue of whole batches filled by one more runner, so the training
 * step's QueueDequeue only takes a ready batch.
 *
 * End of input: the producer ends after num_epochs and closes its queue;
 * the readers then get OUT_OF_RANGE once the names are used up, and their
 * runner closes the example queue; the batching DequeueMany drains it and
 * then fails with OUT_OF_RANGE, its runner closes the batch queue, and the
 * training step gets the batches made and then OUT_OF_RANGE. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "tf/input.h"

#define MAX_SOURCES 8

struct tf_input_pipeline {
  int n_out;
  tf_output out[MAX_SOURCES];
  tf_queue_runner *runners[MAX_SOURCES + 2];
  int n_runners;
  bool started;
};

/* ---- node helpers ------------------------------------------------------------- */

/* Adds op on inputs in[0..n_in) (each its own argument; with list, the
 * inputs after the first form one list argument) and attrs. */
static tf_node *add(tf_graph *g, const char *op, const char *name,
                    const tf_output *in, int n_in, bool list,
                    const tf_attr_kv *attrs, int n_attrs, tf_status *st) {
  tf_node_builder *b = tf_node_begin(g, op, name);
  if (list && n_in > 0) {
    tf_node_add_input(b, in[0]);
    tf_node_add_input_list(b, in + 1, n_in - 1);
  } else {
    for (int i = 0; i < n_in; i++) {
      tf_node_add_input(b, in[i]);
    }
  }
  for (int i = 0; i < n_attrs; i++) {
    tf_node_set_attr(b, attrs[i].name, attrs[i].value);
  }
  return tf_node_finish(b, st);
}

/* A Const node holding t (the caller's reference is dropped). */
static tf_node *add_const(tf_graph *g, const char *name, tf_tensor *t,
                          tf_status *st) {
  tf_attr_kv a[2] = {{"value", tf_attr_tensor(t)},
                     {"dtype", tf_attr_type_v(t->dtype)}};
  tf_node *n = add(g, "Const", name, NULL, 0, false, a, 2, st);
  tf_tensor_unref(t);
  return n;
}

static tf_output out0(tf_node *n) { return (tf_output){n, 0}; }

/* ---- decoding ---------------------------------------------------------------- */

/* Checks what DecodeRawExamples' attrs cannot say (the node checks the
 * type pairs and scale itself, naming them). */
static tf_code check_spec(const tf_decode_spec *d, tf_dtype dt, tf_status *st) {
  char b[96];
  if (!tf_dtype_is_valid(d->raw_dtype) || !tf_dtype_is_valid(dt)) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "decode: raw_dtype %s and "
                         "dtype %s must be set", tf_dtype_name(d->raw_dtype),
                         tf_dtype_name(dt));
  }
  if (d->scale != 0 && d->scale != 1 && dt != TF_FLOAT32 && dt != TF_FLOAT64) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "decode: scale %g needs "
                         "dtype float32 or float64, not %s", d->scale,
                         tf_dtype_name(dt));
  }
  if (d->shape.rank < 0 || d->shape.rank >= TF_MAX_RANK ||
      !tf_shape_is_fully_defined(&d->shape)) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "decode: shape %s must be "
                         "fully defined with rank < %d",
                         tf_shape_str(&d->shape, b, sizeof b), TF_MAX_RANK);
  }
  return TF_OK;
}

tf_code tf_decode_records(tf_graph *g, tf_output values,
                          const tf_decode_spec *spec, tf_output *out,
                          tf_status *st) {
  tf_dtype dt = spec->dtype != TF_DTYPE_INVALID ? spec->dtype : spec->raw_dtype;
  TF_TRY(check_spec(spec, dt, st));
  tf_attr_kv a[5] = {{"raw_type", tf_attr_type_v(spec->raw_dtype)},
                     {"out_type", tf_attr_type_v(dt)},
                     {"little_endian", tf_attr_bool(spec->little_endian)},
                     {"scale", tf_attr_float(spec->scale != 0 ? spec->scale : 1)},
                     {"shape", tf_attr_shape(spec->shape)}};
  tf_node *n = add(g, "DecodeRawExamples", NULL, &values, 1, false, a, 5, st);
  if (n == NULL) {
    return st->code;
  }
  *out = out0(n);
  return TF_OK;
}

tf_code tf_decode_idx_images(tf_graph *g, tf_output values, int64_t pixels,
                             tf_output *out, tf_status *st) {
  tf_decode_spec d = {.raw_dtype = TF_UINT8, .dtype = TF_FLOAT32,
                      .scale = 1.0 / 255.0, .shape = tf_shape_of(1, pixels)};
  return tf_decode_records(g, values, &d, out, st);
}

tf_code tf_decode_idx_labels(tf_graph *g, tf_output values, tf_dtype dtype,
                             tf_output *out, tf_status *st) {
  if (dtype != TF_INT32 && dtype != TF_INT64) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "IDX labels decode to "
                         "int32 or int64, not %s", tf_dtype_name(dtype));
  }
  tf_decode_spec d = {.raw_dtype = TF_UINT8, .dtype = dtype,
                      .shape = tf_shape_scalar()};
  return tf_decode_records(g, values, &d, out, st);
}

void tf_input_idx_image_sources(const char *const files[2], int64_t rows,
                                int64_t cols, tf_dtype label_dtype,
                                tf_input_source src[2]) {
  for (int i = 0; i < 2; i++) {
    src[i] = (tf_input_source){.files = &files[i], .n_files = 1,
                               .records = tf_record_options_idx()};
    src[i].records.idx_dtype = TF_UINT8;
  }
  src[0].records.idx_record_shape = tf_shape_of(2, rows, cols);
  src[0].decode = (tf_decode_spec){.dtype = TF_FLOAT32, .scale = 1.0 / 255.0,
                                   .shape = tf_shape_of(1, rows * cols)};
  src[1].records.idx_record_shape = tf_shape_scalar();
  src[1].decode = (tf_decode_spec){.dtype = label_dtype,
                                   .shape = tf_shape_scalar()};
}

/* ---- options ------------------------------------------------------------------- */

static int64_t elements(const tf_shape *s) {
  int64_t n = 1;
  for (int i = 0; i < s->rank; i++) {
    n *= s->dims[i];
  }
  return n;
}

static tf_code check_source(const tf_input_source *src, int i, tf_status *st) {
  char a[96], b[96];
  if (src->files == NULL || src->n_files < 1) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "input source %d has no "
                         "files", i);
  }
  for (int f = 0; f < src->n_files; f++) {
    if (src->files[f] == NULL || src->files[f][0] == '\0') {
      return tf_status_set(st, TF_INVALID_ARGUMENT, "input source %d: file "
                           "%d has an empty name", i, f);
    }
  }
  const tf_record_options *r = &src->records;
  if (r->format != TF_RECORD_IDX) {
    return TF_OK;
  }
  if (r->idx_dtype == TF_DTYPE_INVALID || r->idx_record_shape.rank < 0) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "input source %d (%s): set "
                         "records.idx_dtype and records.idx_record_shape for "
                         "IDX files", i, src->files[0]);
  }
  if (elements(&r->idx_record_shape) != elements(&src->decode.shape)) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "input source %d (%s): "
                         "records of shape %s cannot make examples of shape "
                         "%s", i, src->files[0],
                         tf_shape_str(&r->idx_record_shape, a, sizeof a),
                         tf_shape_str(&src->decode.shape, b, sizeof b));
  }
  return TF_OK;
}

static tf_code check_options(const tf_input_options *o, tf_status *st) {
  if (o->n_sources < 1 || o->n_sources > MAX_SOURCES || o->sources == NULL) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "input pipeline: needs 1 "
                         "to %d sources, got %d", MAX_SOURCES, o->n_sources);
  }
  if (o->batch_size < 1 || o->num_epochs < 0 || o->read_batch < 0 ||
      o->capacity < 0 || o->min_after_dequeue < 0 || o->threads < 0) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "input pipeline: "
                         "batch_size must be >= 1, and num_epochs, read_batch, "
                         "capacity, min_after_dequeue, threads >= 0");
  }
  if (o->n_sources > 1 && (o->threads > 1 || o->shuffle_files)) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "input pipeline: zipped "
                         "sources need one reader thread and files in order "
                         "(threads %d, shuffle_files %d)", o->threads,
                         (int)o->shuffle_files);
  }
  for (int i = 0; i < o->n_sources; i++) {
    TF_TRY(check_source(&o->sources[i], i, st));
  }
  return TF_OK;
}

/* ---- building ------------------------------------------------------------------- */

/* What one source adds: the decoded examples and its producer runner. */
typedef struct built_source {
  tf_output examples;
  tf_queue_runner *producer;
} built_source;

static tf_code make_runner(const char *enq, const char *close,
                           const char *cancel, int threads, int64_t max_runs,
                           tf_queue_runner **out, tf_status *st) {
  tf_queue_runner_options ro = {.enqueue_targets = &enq, .n_enqueue_targets = 1,
                                .threads = threads, .close_target = close,
                                .cancel_target = cancel, .max_runs = max_runs};
  *out = tf_queue_runner_new(&ro, st);
  return *out != NULL ? TF_OK : st->code;
}

/* A queue's close and cancel nodes ("<what>_close", "<what>_cancel");
 * names[0..1] get their full names. */
static tf_code add_closers(tf_graph *g, tf_node *q, const char *what,
                           const char **names, tf_status *st) {
  tf_output h = out0(q);
  for (int i = 0; i < 2; i++) {
    tf_attr_kv a = {"cancel_pending_enqueues", tf_attr_bool(i == 1)};
    char nm[64];
    snprintf(nm, sizeof nm, "%s_%s", what, i ? "cancel" : "close");
    tf_node *n = add(g, "QueueClose", nm, &h, 1, false, &a, 1, st);
    if (n == NULL) {
      return st->code;
    }
    names[i] = tf_node_name(n);
  }
  return TF_OK;
}

/* File names as a string Const, shuffled per epoch when asked. */
static tf_node *file_list(tf_graph *g, const tf_input_source *src,
                          const tf_input_options *o, tf_status *st) {
  tf_shape s = tf_shape_of(1, src->n_files);
  tf_tensor *t;
  if (tf_tensor_new(TF_STRING, &s, &t, st) != TF_OK) {
    return NULL;
  }
  for (int f = 0; f < src->n_files; f++) {
    if (tf_tensor_set_string(t, f, src->files[f], strlen(src->files[f]), st) != TF_OK) {
      tf_tensor_unref(t);
      return NULL;
    }
  }
  tf_node *n = add_const(g, "files", t, st);
  if (n != NULL && o->shuffle_files) {
    tf_attr_kv a[2] = {{"seed", tf_attr_int(o->seed)},
                       {"seed2", tf_attr_int(o->seed ? 1 : 0)}};
    tf_output x = out0(n);
    n = add(g, "RandomShuffle", "shuffled_files", &x, 1, false, a, 2, st);
  }
  return n;
}

/* The reader node of src's format. */
static tf_node *reader_node(tf_graph *g, const tf_record_options *r,
                            tf_status *st) {
  const char *ct = r->compression == TF_COMPRESSION_ZLIB   ? "ZLIB"
                   : r->compression == TF_COMPRESSION_GZIP ? "GZIP"
                                                            : "";
  tf_attr_kv a[3] = {{"compression_type", tf_attr_string(ct)},
                     {"dtype", tf_attr_type_v(r->idx_dtype)},
                     {"record_shape", tf_attr_shape(r->idx_record_shape)}};
  if (r->format == TF_RECORD_IDX) {
    return add(g, "IdxRecordReader", "reader", NULL, 0, false, a, 3, st);
  }
  return add(g, "TFRecordReader", "reader", NULL, 0, false, a, 1, st);
}

/* The decode spec of src (IDX: raw type and byte order from the file). */
static tf_decode_spec source_decode(const tf_input_source *src) {
  tf_decode_spec d = src->decode;
  if (src->records.format == TF_RECORD_IDX) {
    d.raw_dtype = src->records.idx_dtype;
    d.little_endian = false;
  }
  return d;
}

static tf_code build_source(tf_graph *g, const tf_input_source *src,
                            const tf_input_options *o, int64_t read_batch,
                            built_source *b, tf_status *st) {
  tf_node *files = file_list(g, src, o, st);
  if (files == NULL) {
    return st->code;
  }
  tf_dtype sdt = TF_STRING;
  tf_shape scalar = tf_shape_scalar();
  tf_attr_kv qa[3] = {{"component_types", tf_attr_type_list(&sdt, 1)},
                      {"shapes", tf_attr_shape_list(&scalar, 1)},
                      {"capacity", tf_attr_int(32)}};
  tf_node *q = add(g, "FIFOQueue", "file_queue", NULL, 0, false, qa, 3, st);
  tf_output qf[2] = {out0(q), out0(files)};
  tf_node *enq = q ? add(g, "QueueEnqueueMany", "enqueue_files", qf, 2, true,
                         NULL, 0, st) : NULL;
  const char *closers[2];
  if (enq == NULL || add_closers(g, q, "file_queue", closers, st) != TF_OK) {
    return st->code;
  }
  tf_node *rd = reader_node(g, &src->records, st);
  tf_node *num = rd ? add_const(g, "num_records",
                                tf_tensor_scalar_i64(read_batch), st) : NULL;
  if (num == NULL) {
    return st->code;
  }
  tf_output ri[3] = {out0(rd), out0(q), out0(num)};
  tf_node *read = add(g, "ReaderReadUpTo", "read", ri, 3, false, NULL, 0, st);
  tf_decode_spec d = source_decode(src);
  if (read == NULL ||
      tf_decode_records(g, (tf_output){read, 1}, &d, &b->examples, st) != TF_OK) {
    return st->code;
  }
  return make_runner(tf_node_name(enq), closers[0], closers[1], 1,
                     o->num_epochs, &b->producer, st);
}

/* A FIFOQueue of whole batches filled by a runner that dequeues them from
 * the example queue: the training step's dequeue then only takes a ready
 * tensor, and stacking the examples happens in the background. */
static tf_code build_prefetch(tf_graph *g, const tf_input_options *o,
                              tf_node *batch, const tf_dtype *dts,
                              const tf_shape *shapes, tf_input_pipeline *p,
                              tf_status *st) {
  int n = o->n_sources;
  tf_shape bs[MAX_SOURCES];
  tf_output in[MAX_SOURCES + 1];
  for (int i = 0; i < n; i++) {
    bs[i] = (tf_shape){.rank = shapes[i].rank + 1, .dims = {o->batch_size}};
    memcpy(bs[i].dims + 1, shapes[i].dims, (size_t)shapes[i].rank * sizeof bs[i].dims[0]);
    in[i + 1] = (tf_output){batch, i};
  }
  int64_t cap = o->prefetch_batches ? o->prefetch_batches : 2;
  tf_attr_kv qa[3] = {{"component_types", tf_attr_type_list(dts, n)},
                      {"shapes", tf_attr_shape_list(bs, n)},
                      {"capacity", tf_attr_int(cap)}};
  tf_node *q = add(g, "FIFOQueue", "batch_queue", NULL, 0, false, qa, 3, st);
  if (q != NULL) {
    in[0] = out0(q);
  }
  tf_node *enq = q ? add(g, "QueueEnqueue", "enqueue_batch", in, n + 1, true,
                         NULL, 0, st) : NULL;
  const char *closers[2];
  if (enq == NULL || add_closers(g, q, "batch_queue", closers, st) != TF_OK) {
    return st->code;
  }
  tf_output h = out0(q);
  tf_attr_kv da = {"component_types", tf_attr_type_list(dts, n)};
  tf_node *deq = add(g, "QueueDequeue", "prefetched_batch", &h, 1, false, &da,
                     1, st);
  if (deq == NULL) {
    return st->code;
  }
  for (int i = 0; i < n; i++) {
    p->out[i] = (tf_output){deq, i};
  }
  return make_runner(tf_node_name(enq), closers[0], closers[1], 1, 0,
                     &p->runners[p->n_runners++], st);
}

/* The example queue, its enqueue (with the reader runner) and the batch
 * (prefetched unless prefetch_batches < 0). */
static tf_code build_batching(tf_graph *g, const tf_input_options *o,
                              const built_source *bs, tf_input_pipeline *p,
                              tf_status *st) {
  int n = o->n_sources;
  tf_dtype dts[MAX_SOURCES];
  tf_shape shapes[MAX_SOURCES];
  for (int i = 0; i < n; i++) {
    dts[i] = tf_node_output_type(bs[i].examples.node, bs[i].examples.index);
    shapes[i] = o->sources[i].decode.shape;
  }
  int64_t mad = o->min_after_dequeue ? o->min_after_dequeue
                : o->shuffle           ? 2 * o->batch_size
                                       : 0;
  int64_t cap = o->capacity ? o->capacity : mad + 3 * o->batch_size;
  tf_attr_kv qa[6] = {{"component_types", tf_attr_type_list(dts, n)},
                      {"shapes", tf_attr_shape_list(shapes, n)},
                      {"capacity", tf_attr_int(cap)},
                      {"min_after_dequeue", tf_attr_int(mad)},
                      {"seed", tf_attr_int(o->seed)},
                      {"seed2", tf_attr_int(0)}};
  tf_node *q = add(g, o->shuffle ? "RandomShuffleQueue" : "FIFOQueue",
                   "example_queue", NULL, 0, false, qa, o->shuffle ? 6 : 3, st);
  tf_output in[MAX_SOURCES + 1] = {out0(q)};
  for (int i = 0; i < n; i++) {
    in[i + 1] = bs[i].examples;
  }
  tf_node *enq = q ? add(g, "QueueEnqueueMany", "enqueue_examples", in, n + 1,
                         true, NULL, 0, st) : NULL;
  const char *closers[2];
  if (enq == NULL || add_closers(g, q, "example_queue", closers, st) != TF_OK) {
    return st->code;
  }
  tf_node *bn = add_const(g, "batch_size",
                          tf_tensor_scalar_i32((int32_t)o->batch_size), st);
  tf_output di[2] = {out0(q), out0(bn)};
  tf_attr_kv da = {"component_types", tf_attr_type_list(dts, n)};
  tf_node *batch = bn ? add(g, "QueueDequeueMany", "batch", di, 2, false, &da,
                            1, st) : NULL;
  if (batch == NULL ||
      make_runner(tf_node_name(enq), closers[0], closers[1],
                  o->threads ? o->threads : 1, 0, &p->runners[p->n_runners++],
                  st) != TF_OK) {
    return st->code;
  }
  p->n_out = n;
  for (int i = 0; i < n; i++) {
    p->out[i] = (tf_output){batch, i};
  }
  return o->prefetch_batches < 0 ? TF_OK
                                 : build_prefetch(g, o, batch, dts, shapes, p, st);
}

static tf_code build_all(tf_graph *g, const tf_input_options *o,
                         tf_input_pipeline *p, tf_status *st) {
  built_source bs[MAX_SOURCES];
  int64_t rb = o->read_batch ? o->read_batch : o->batch_size;
  for (int i = 0; i < o->n_sources; i++) {
    char scope[32];
    snprintf(scope, sizeof scope, "source%d", i);
    tf_graph_push_scope(g, scope);
    tf_code rc = build_source(g, &o->sources[i], o, rb, &bs[i], st);
    tf_graph_pop_scope(g);
    if (rc != TF_OK) {
      return tf_status_prefix(st, "input source %d", i);
    }
    p->runners[p->n_runners++] = bs[i].producer;
  }
  return build_batching(g, o, bs, p, st);
}

tf_input_pipeline *tf_input_pipeline_new(tf_graph *g, const tf_input_options *o,
                                         tf_status *st) {
  if (check_options(o, st) != TF_OK) {
    return NULL;
  }
  tf_input_pipeline *p = tf__xcalloc(1, sizeof *p);
  tf_graph_push_scope(g, o->name ? o->name : "input");
  tf_code rc = build_all(g, o, p, st);
  tf_graph_pop_scope(g);
  if (rc != TF_OK) {
    tf_input_pipeline_free(p);
    return NULL;
  }
  return p;
}

/* ---- running -------------------------------------------------------------------- */

tf_output tf_input_pipeline_output(const tf_input_pipeline *p, int i) {
  TF_ASSERT(i >= 0 && i < p->n_out);
  return p->out[i];
}

tf_code tf_input_pipeline_start(tf_input_pipeline *p, tf_session *s,
                                tf_status *st) {
  if (p->started) {
    return tf_status_set(st, TF_FAILED_PRECONDITION, "input pipeline was "
                         "started already (a pipeline runs once)");
  }
  p->started = true;
  for (int i = 0; i < p->n_runners; i++) {
    if (tf_queue_runner_start(p->runners[i], s, st) != TF_OK) {
      tf_input_pipeline_stop(p, -1, NULL);
      return st->code;
    }
  }
  return TF_OK;
}

tf_code tf_input_pipeline_status(tf_input_pipeline *p, tf_status *st) {
  tf_status one;
  tf_status_init(&one);
  for (int i = 0; i < p->n_runners && one.code == TF_OK; i++) {
    tf_queue_runner_status(p->runners[i], &one);
  }
  if (st != NULL) {
    *st = one;
  }
  return one.code;
}

tf_code tf_input_pipeline_stop(tf_input_pipeline *p, int64_t timeout_ms,
                               tf_status *st) {
  for (int i = 0; i < p->n_runners; i++) {
    tf_queue_runner_request_stop(p->runners[i]);
  }
  int64_t end = tf__now_ns() + timeout_ms * 1000000;
  tf_status first;
  tf_status_init(&first);
  for (int i = 0; i < p->n_runners; i++) {
    int64_t left = timeout_ms < 0 ? -1 : TF_MAX(0, (end - tf__now_ns()) / 1000000);
    tf_status one;
    if (tf_queue_runner_join(p->runners[i], left, &one) != TF_OK &&
        (first.code == TF_OK || first.code == TF_DEADLINE_EXCEEDED)) {
      first = one;
    }
  }
  if (st != NULL) {
    *st = first;
  }
  return first.code;
}

void tf_input_pipeline_free(tf_input_pipeline *p) {
  if (p == NULL) {
    return;
  }
  for (int i = 0; i < p->n_runners; i++) {
    tf_queue_runner_free(p->runners[i]);
  }
  free(p);
}
