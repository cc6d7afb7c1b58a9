/* ops_io.c: op definitions of the input operations (whitepaper §4.5) with
 * TensorFlow 1's signatures: reader ops make or find a reader resource in
 * a container of the session and output a ref edge to it (TFRecordReader,
 * and IdxRecordReader for MNIST-style IDX files); ReaderRead and
 * ReaderReadUpTo return (key, value) records, taking file names from a
 * string queue; DecodeRaw reinterprets bytes as numbers, and
 * DecodeRawExamples also converts, scales and shapes them in one pass;
 * WriteTFRecords writes a TFRecord file. See lib/core/serialize/reader.h for the
 * reader semantics. */
#include "lib/core/framework/op_registry.h"
#include "lib/core/base/util.h"

static tf_code shape_reader(tf_shape_ctx *c) {
  c->out[0] = tf_shape_of(1, 2); /* TF's handle: [container, name] */
  return TF_OK;
}

static tf_code shape_idx_reader(tf_shape_ctx *c) {
  const tf_attr_value *rs = tf_node_attr(c->node, "record_shape");
  char b[96];
  if (rs != NULL && rs->u.shape.rank != TF_UNKNOWN_RANK) {
    const tf_shape *s = &rs->u.shape;
    if (s->rank > TF_MAX_RANK - 1) {
      return tf_shape_error(c, "record_shape %s has rank %d > %d (IDX files "
                            "hold at most %d dims with the count)",
                            tf_shape_str(s, b, sizeof b), s->rank,
                            TF_MAX_RANK - 1, TF_MAX_RANK);
    }
    for (int i = 0; i < s->rank; i++) {
      if (s->dims[i] < 0) {
        return tf_shape_error(c, "record_shape %s must be fully defined (or "
                              "unknown for any)", tf_shape_str(s, b, sizeof b));
      }
    }
  }
  return shape_reader(c);
}

static tf_code scalar_input(tf_shape_ctx *c, int i, const char *what) {
  if (c->in[i].rank != TF_UNKNOWN_RANK && c->in[i].rank != 0) {
    return tf_shape_error(c, "%s must be a scalar, got rank %d", what,
                          c->in[i].rank);
  }
  return TF_OK;
}

static tf_code shape_read(tf_shape_ctx *c) {
  c->out[0] = tf_shape_scalar();
  c->out[1] = tf_shape_scalar();
  return TF_OK;
}

static tf_code shape_read_up_to(tf_shape_ctx *c) {
  TF_TRY(scalar_input(c, 2, "num_records"));
  int64_t n;
  int got;
  if (tf_shape_const_ints(c, 2, &n, 1, &got) && got == 1 && n < 1) {
    return tf_shape_error(c, "num_records must be >= 1, got %lld",
                          (long long)n);
  }
  c->out[0] = tf_shape_of(1, TF_UNKNOWN_DIM);
  c->out[1] = tf_shape_of(1, TF_UNKNOWN_DIM);
  return TF_OK;
}

static tf_code shape_none(tf_shape_ctx *c) {
  (void)c;
  return TF_OK;
}

/* output = bytes.shape + [?] (the element count per string). */
static tf_code shape_decode_raw(tf_shape_ctx *c) {
  const tf_shape *in = &c->in[0];
  if (in->rank == TF_UNKNOWN_RANK) {
    return TF_OK;
  }
  if (in->rank >= TF_MAX_RANK) {
    return tf_shape_error(c, "bytes has rank %d; the output would exceed "
                          "rank %d", in->rank, TF_MAX_RANK);
  }
  tf_shape s = *in;
  s.dims[s.rank++] = TF_UNKNOWN_DIM;
  c->out[0] = s;
  return TF_OK;
}

/* output = bytes.shape + shape; conversions that could overflow (float to
 * int) and scaling of integers are refused. */
static tf_code shape_decode_examples(tf_shape_ctx *c) {
  const tf_shape *in = &c->in[0];
  const tf_shape *ex = &tf_node_attr(c->node, "shape")->u.shape;
  tf_dtype raw = tf_node_attr(c->node, "raw_type")->u.t;
  tf_dtype out = tf_node_attr(c->node, "out_type")->u.t;
  double scale = tf_node_attr(c->node, "scale")->u.f;
  char b[96];
  if (ex->rank < 0 || !tf_shape_is_fully_defined(ex)) {
    return tf_shape_error(c, "shape %s must be fully defined",
                          tf_shape_str(ex, b, sizeof b));
  }
  if (tf_dtype_is_float(raw) && !tf_dtype_is_float(out)) {
    return tf_shape_error(c, "cannot convert %s records to %s here (out of "
                          "range values); decode as float and Cast",
                          tf_dtype_name(raw), tf_dtype_name(out));
  }
  if (scale != 1.0 && !tf_dtype_is_float(out)) {
    return tf_shape_error(c, "scale %g needs a float out_type, not %s", scale,
                          tf_dtype_name(out));
  }
  if (in->rank == TF_UNKNOWN_RANK) {
    return TF_OK;
  }
  if (in->rank + ex->rank > TF_MAX_RANK) {
    return tf_shape_error(c, "bytes has rank %d and shape rank %d: the "
                          "output would exceed rank %d", in->rank, ex->rank,
                          TF_MAX_RANK);
  }
  tf_shape s = *in;
  for (int i = 0; i < ex->rank; i++) {
    s.dims[s.rank++] = ex->dims[i];
  }
  c->out[0] = s;
  return TF_OK;
}

static tf_code shape_write(tf_shape_ctx *c) {
  return scalar_input(c, 0, "filename");
}

#define READER_ATTRS                                                           \
  "container: string = ''", "shared_name: string = ''",                       \
      "compression_type: {'', 'ZLIB', 'GZIP'} = ''"
#define READER_FLAGS (TF_OP_STATEFUL | TF_OP_NOT_DIFFERENTIABLE)

static const tf_op_spec io_ops[] = {
    {.name = "TFRecordReader",
     .outputs = {"reader_handle: Ref(string)"},
     .attrs = {READER_ATTRS},
     .shape_fn = shape_reader,
     .flags = READER_FLAGS | TF_OP_SOURCE,
     .doc = "A reader of TFRecord files (TensorFlow's framing with masked "
            "CRC-32C; compression_type '' | ZLIB | GZIP); keys are "
            "\"file:offset\"."},
    {.name = "IdxRecordReader",
     .outputs = {"reader_handle: Ref(string)"},
     .attrs = {READER_ATTRS,
               "dtype: {uint8, int8, int16, int32, float, double} = uint8",
               "record_shape: shape = unknown"},
     .shape_fn = shape_idx_reader,
     .flags = READER_FLAGS | TF_OP_SOURCE,
     .doc = "A reader of IDX files (MNIST format; gzip detected when "
            "compression_type is ''): one record per entry of dim 0, "
            "checked against dtype and record_shape; keys \"file:index\".",
     .deviation = "not a TensorFlow op: reads IDX files (MNIST's format) "
                  "through the TF reader interface"},
    {.name = "ReaderRead",
     .inputs = {"reader_handle: Ref(string)", "queue_handle: Ref(string)"},
     .outputs = {"key: string", "value: string"},
     .shape_fn = shape_read,
     .flags = READER_FLAGS | TF_OP_ASYNC,
     .doc = "The next record of the reader, which takes a file name from "
            "the queue when it needs one; OUT_OF_RANGE when the queue is "
            "closed and empty."},
    {.name = "ReaderReadUpTo",
     .inputs = {"reader_handle: Ref(string)", "queue_handle: Ref(string)",
                "num_records: int64"},
     .outputs = {"keys: string", "values: string"},
     .shape_fn = shape_read_up_to,
     .flags = READER_FLAGS | TF_OP_ASYNC,
     .doc = "Up to num_records records (fewer only when the queue runs out, "
            "OUT_OF_RANGE if none)."},
    {.name = "ReaderNumRecordsProduced",
     .inputs = {"reader_handle: Ref(string)"},
     .outputs = {"records_produced: int64"},
     .shape_fn = tf_shape_fn_scalar,
     .flags = READER_FLAGS,
     .doc = "The number of records the reader has returned."},
    {.name = "ReaderNumWorkUnitsCompleted",
     .inputs = {"reader_handle: Ref(string)"},
     .outputs = {"units_completed: int64"},
     .shape_fn = tf_shape_fn_scalar,
     .flags = READER_FLAGS,
     .doc = "The number of files the reader has finished (or dropped as "
            "damaged)."},
    {.name = "ReaderReset",
     .inputs = {"reader_handle: Ref(string)"},
     .shape_fn = shape_none,
     .flags = READER_FLAGS | TF_OP_ASYNC,
     .doc = "Closes the reader's file and zeroes its counters."},
    {.name = "DecodeRaw",
     .inputs = {"bytes: string"},
     .outputs = {"output: out_type"},
     .attrs = {"out_type: {half, bfloat16, float, double, int8, int16, int32, "
               "int64, uint8, uint16, uint32, uint64, complex64, bool}",
               "little_endian: bool = true"},
     .shape_fn = shape_decode_raw,
     .flags = TF_OP_NOT_DIFFERENTIABLE,
     .doc = "Reinterprets each string's bytes as a vector of out_type "
            "(all strings of one length, a multiple of the element size).",
     .deviation = "also takes out_type uint32 and uint64, which TF's "
                  "DecodeRaw rejects"},
    {.name = "DecodeRawExamples",
     .inputs = {"bytes: string"},
     .outputs = {"output: out_type"},
     .attrs = {"raw_type: {uint8, int8, uint16, int16, int32, int64, float, "
               "double}",
               "out_type: {float, double, int32, int64}",
               "little_endian: bool = true", "scale: float = 1.0",
               "shape: shape"},
     .shape_fn = shape_decode_examples,
     .flags = TF_OP_NOT_DIFFERENTIABLE,
     .doc = "Each string as one example: prod(shape) elements of raw_type "
            "(its length is checked), converted to out_type and multiplied "
            "by scale; bytes.shape + shape. DecodeRaw, Cast, Mul and "
            "Reshape in one pass.",
     .deviation = "not a TensorFlow op: DecodeRaw, Cast, Mul and Reshape "
                  "fused for input pipelines"},
    {.name = "WriteTFRecords",
     .inputs = {"filename: string", "records: string"},
     .attrs = {"compression_type: {'', 'ZLIB', 'GZIP'} = ''"},
     .shape_fn = shape_write,
     .flags = TF_OP_STATEFUL | TF_OP_NOT_DIFFERENTIABLE,
     .doc = "Writes every element of records, in order, as one TFRecord "
            "file (created or truncated).",
     .deviation = "not a TensorFlow op: writes a string tensor as a "
                  "TFRecord file (TF has tf.io.TFRecordWriter and the "
                  "dataset op DatasetToTFRecord for this)"},
};

TF_REGISTER_OPS("io", io_ops)
