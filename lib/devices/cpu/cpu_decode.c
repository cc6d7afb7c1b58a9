/* cpu_decode.c: CPU kernels that turn record bytes into numbers.
 * DecodeRaw copies each string's bytes into a numeric tensor, swapping the
 * byte order when the data's differs from the host's (complex64: each
 * float on its own, as TensorFlow). DecodeRawExamples converts each record
 * straight to the example dtype and scales it, one typed loop per (raw,
 * out) pair, so the common uint8 -> float32 * 1/255 vectorises. Records
 * are split across the intra-op pool only when there are many MiB. */
#include <string.h>

#include "lib/core/framework/kernel.h"
#include "lib/core/base/util.h"

#define HOST_LITTLE (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__)
/* Bytes per parallel chunk at least. Large: input pipelines decode in
 * background threads, and their batches (a few MiB) are better done inline
 * than taking the intra-op pool from the training step. */
#define PAR_BYTES ((size_t)4 << 20)

static void swap_bytes(uint8_t *p, size_t len, size_t unit) {
  for (size_t b = 0; unit > 1 && b + unit <= len; b += unit) {
    for (size_t x = b, y = b + unit - 1; x < y; x++, y--) {
      uint8_t t = p[x];
      p[x] = p[y];
      p[y] = t;
    }
  }
}

/* The common string length of in, checked against every element. */
static tf_code common_len(tf_kernel_ctx *ctx, const tf_tensor *in, size_t *len) {
  const tf_string *s = tf_tensor_strings(in);
  *len = in->n > 0 ? s[0].len : 0;
  for (int64_t i = 1; i < in->n; i++) {
    if (s[i].len != *len) {
      return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "DecodeRaw requires "
                             "input strings to all be the same size, but "
                             "element %lld has size %zu != %zu",
                             (long long)i, s[i].len, *len);
    }
  }
  return TF_OK;
}

static bool attr_bool(const tf_node *n, const char *name, bool dflt) {
  const tf_attr_value *v = tf_node_attr(n, name);
  return v != NULL ? v->u.b : dflt;
}

/* ---- DecodeRaw ------------------------------------------------------------------- */

typedef struct raw_job {
  const tf_string *in;
  uint8_t *out;
  size_t len;     /* bytes per string */
  size_t swap;    /* bytes per swapped unit; 0: a plain copy */
  bool to_bool;
} raw_job;

static void raw_range(void *arg, int64_t begin, int64_t end) {
  const raw_job *j = arg;
  for (int64_t i = begin; i < end; i++) {
    uint8_t *o = j->out + (size_t)i * j->len;
    if (j->len > 0) {
      memcpy(o, j->in[i].data, j->len);
    }
    swap_bytes(o, j->len, j->swap);
    for (size_t b = 0; j->to_bool && b < j->len; b++) {
      o[b] = o[b] != 0;
    }
  }
}

static tf_code decode_raw_compute(tf_kernel_ctx *ctx) {
  const tf_tensor *in = ctx->inputs[0];
  tf_dtype dt = tf_node_output_type(ctx->node, 0);
  size_t es = tf_dtype_size(dt), len;
  if (in->dtype != TF_STRING || in->shape.rank >= TF_MAX_RANK) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "bytes must be a string "
                           "tensor of rank < %d", TF_MAX_RANK);
  }
  TF_TRY(common_len(ctx, in, &len));
  if (len % es != 0) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "input to DecodeRaw has "
                           "length %zu that is not a multiple of %zu, the "
                           "size of %s", len, es, tf_dtype_name(dt));
  }
  tf_shape s = in->shape;
  s.dims[s.rank++] = (int64_t)(len / es);
  tf_tensor *out;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, dt, &s, &out));
  bool little = attr_bool(ctx->node, "little_endian", true);
  raw_job j = {.in = tf_tensor_strings(in), .out = out->data, .len = len,
               .swap = little == HOST_LITTLE ? 0
                       : dt == TF_COMPLEX64  ? es / 2
                                             : es,
               .to_bool = dt == TF_BOOL};
  int64_t grain = (int64_t)TF_MAX((size_t)1, PAR_BYTES / TF_MAX(len, (size_t)1));
  tf_parallel_for(ctx->pool, in->n, grain, raw_range, &j);
  return TF_OK;
}

/* ---- DecodeRawExamples ------------------------------------------------------------ */

typedef void (*conv_fn)(const uint8_t *in, void *out, int64_t n, double scale);

/* conv_<raw>_<out>: n raw elements (host order, maybe unaligned) to out,
 * times scale for float outputs. */
#define CONV(RN, R, ON, O, SCALED)                                             \
  static void conv_##RN##_##ON(const uint8_t *in, void *outp, int64_t n,      \
                               double scale) {                                \
    O *out = outp;                                                             \
    const O k = (O)scale;                                                      \
    (void)k;                                                                   \
    for (int64_t i = 0; i < n; i++) {                                          \
      R v;                                                                     \
      memcpy(&v, in + (size_t)i * sizeof(R), sizeof(R));                       \
      out[i] = SCALED ? (O)v * k : (O)v;                                       \
    }                                                                          \
  }
#define CONV_ALL_OUT(RN, R)                                            \
  CONV(RN, R, f32, float, 1)                                                   \
  CONV(RN, R, f64, double, 1)                                                  \
  CONV(RN, R, i32, int32_t, 0)                                                 \
  CONV(RN, R, i64, int64_t, 0)
CONV_ALL_OUT(u8, uint8_t)
CONV_ALL_OUT(i8, int8_t)
CONV_ALL_OUT(u16, uint16_t)
CONV_ALL_OUT(i16, int16_t)
CONV_ALL_OUT(i32, int32_t)
CONV_ALL_OUT(i64, int64_t)
CONV(f32, float, f32, float, 1)
CONV(f32, float, f64, double, 1)
CONV(f64, double, f32, float, 1)
CONV(f64, double, f64, double, 1)

#define CONV_ROW(RN) {conv_##RN##_f32, conv_##RN##_f64, conv_##RN##_i32, conv_##RN##_i64}

/* The converter for (raw, out), or NULL (float to int is refused). */
static conv_fn conv_for(tf_dtype raw, tf_dtype out) {
  static const conv_fn ints[6][4] = {CONV_ROW(u8),  CONV_ROW(i8),
                                     CONV_ROW(u16), CONV_ROW(i16),
                                     CONV_ROW(i32), CONV_ROW(i64)};
  static const conv_fn floats[2][2] = {{conv_f32_f32, conv_f32_f64},
                                       {conv_f64_f32, conv_f64_f64}};
  int o = out == TF_FLOAT32 ? 0 : out == TF_FLOAT64 ? 1 : out == TF_INT32 ? 2
          : out == TF_INT64 ? 3 : -1;
  static const tf_dtype int_raw[6] = {TF_UINT8, TF_INT8,
                                      TF_UINT16, TF_INT16, TF_INT32, TF_INT64};
  for (int r = 0; r < 6 && o >= 0; r++) {
    if (int_raw[r] == raw) {
      return ints[r][o];
    }
  }
  int rf = raw == TF_FLOAT32 ? 0 : raw == TF_FLOAT64 ? 1 : -1;
  return rf >= 0 && (o == 0 || o == 1) ? floats[rf][o] : NULL;
}

typedef struct ex_job {
  const tf_string *in;
  uint8_t *out;
  size_t in_len;   /* bytes per record */
  size_t out_len;  /* bytes per example */
  int64_t elems;   /* elements per example */
  size_t swap;     /* raw element size when bytes must be swapped, else 0 */
  conv_fn conv;
  double scale;
} ex_job;

static void ex_range(void *arg, int64_t begin, int64_t end) {
  const ex_job *j = arg;
  uint8_t tmp[4096];
  for (int64_t i = begin; i < end; i++) {
    const uint8_t *src = (const uint8_t *)j->in[i].data;
    uint8_t *dst = j->out + (size_t)i * j->out_len;
    if (j->swap == 0) {
      j->conv(src, dst, j->elems, j->scale);
      continue;
    }
    /* swapped copies in stack-sized pieces, then converted */
    size_t per = sizeof tmp / j->swap, es = j->swap;
    size_t out_es = j->out_len / (size_t)TF_MAX(j->elems, 1);
    for (size_t e = 0; e < (size_t)j->elems; e += per) {
      size_t k = TF_MIN(per, (size_t)j->elems - e);
      memcpy(tmp, src + e * es, k * es);
      swap_bytes(tmp, k * es, es);
      j->conv(tmp, dst + e * out_es, (int64_t)k, j->scale);
    }
  }
}

/* Reads the attrs into a job (in and out still unset). */
static tf_code ex_setup(tf_kernel_ctx *ctx, ex_job *j, tf_shape *ex) {
  tf_status st;
  tf_dtype raw, out;
  if (tf_node_attr_get_type(ctx->node, "raw_type", &raw, &st) != TF_OK ||
      tf_node_attr_get_type(ctx->node, "out_type", &out, &st) != TF_OK ||
      tf_node_attr_get_float(ctx->node, "scale", &j->scale, &st) != TF_OK ||
      tf_node_attr_get_shape(ctx->node, "shape", ex, &st) != TF_OK) {
    return tf_kernel_error(ctx, st.code, "%s", st.msg);
  }
  j->conv = conv_for(raw, out);
  j->elems = tf_shape_num_elements(ex);
  if (j->conv == NULL || j->elems < 0) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "cannot decode %s "
                           "records into %s examples of a partly unknown or "
                           "huge shape", tf_dtype_name(raw), tf_dtype_name(out));
  }
  size_t rs = tf_dtype_size(raw);
  j->in_len = (size_t)j->elems * rs;
  j->out_len = (size_t)j->elems * tf_dtype_size(out);
  bool little = attr_bool(ctx->node, "little_endian", true);
  j->swap = little != HOST_LITTLE && rs > 1 ? rs : 0;
  return TF_OK;
}

static tf_code decode_examples_compute(tf_kernel_ctx *ctx) {
  const tf_tensor *in = ctx->inputs[0];
  ex_job j;
  tf_shape ex, s = in->shape;
  TF_TRY(ex_setup(ctx, &j, &ex));
  if (in->shape.rank + ex.rank > TF_MAX_RANK) {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "bytes has rank %d and "
                           "shape rank %d: more than %d dims", in->shape.rank,
                           ex.rank, TF_MAX_RANK);
  }
  const tf_string *str = tf_tensor_strings(in);
  for (int64_t i = 0; i < in->n; i++) {
    if (str[i].len != j.in_len) {
      char b[96];
      return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "record %lld has %zu "
                             "bytes, but an example of shape %s needs %zu",
                             (long long)i, str[i].len,
                             tf_shape_str(&ex, b, sizeof b), j.in_len);
    }
  }
  for (int i = 0; i < ex.rank; i++) {
    s.dims[s.rank++] = ex.dims[i];
  }
  tf_tensor *out;
  TF_TRY(tf_kernel_alloc_output(ctx, 0, tf_node_output_type(ctx->node, 0), &s,
                                &out));
  j.in = str;
  j.out = out->data;
  int64_t grain = (int64_t)TF_MAX((size_t)1, PAR_BYTES / TF_MAX(j.out_len, (size_t)1));
  tf_parallel_for(ctx->pool, in->n, grain, ex_range, &j);
  return TF_OK;
}

#define CPU(name) .op = name, .device_type = TF_DEVICE_CPU, .dtype = TF_DTYPE_ANY

static const tf_kernel_def decode_kernels[] = {
    {CPU("DecodeRaw"), .type_attr = "out_type", .compute = decode_raw_compute},
    {CPU("DecodeRawExamples"), .type_attr = "out_type",
     .compute = decode_examples_compute},
};

TF_REGISTER_KERNELS(decode_kernels)
