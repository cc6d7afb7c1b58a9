/* npy.c: NumPy's .npy format, so tensors move to and from numpy.
 *
 * Layout: magic "\x93NUMPY", major and minor version bytes, the header
 * length (uint16 LE for 1.0, uint32 LE for 2.0/3.0), an ASCII Python dict
 * literal {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 * padded with spaces and a '\n' so the data starts at a multiple of 64,
 * then the raw little-endian C-order elements. We read 1.0, 2.0 and 3.0
 * and write 1.0 (2.0 only when the header would not fit in 64 KiB). The
 * header parser is a small tokenizer over the dict literal, not eval: keys
 * in any order and either quote style, arbitrary whitespace, trailing
 * commas, Python 2 "3L" ints. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/serialize/serialize_util.h"
#include "lib/core/base/util.h"
#include "tf/serialize.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               ".npy data is read and written as little-endian bytes");

static const char npy_magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

#define NPY_ALIGN 64

typedef struct npy_type {
  tf_dtype dtype;
  char kind; /* 'f', 'i', 'u', 'b', 'c' */
  int size;
} npy_type;

static const npy_type npy_types[] = {
    {TF_FLOAT16, 'f', 2}, {TF_FLOAT32, 'f', 4},  {TF_FLOAT64, 'f', 8},
    {TF_INT8, 'i', 1},    {TF_INT16, 'i', 2},    {TF_INT32, 'i', 4},
    {TF_INT64, 'i', 8},   {TF_UINT8, 'u', 1},    {TF_UINT16, 'u', 2},
    {TF_UINT32, 'u', 4},  {TF_UINT64, 'u', 8},   {TF_BOOL, 'b', 1},
    {TF_COMPLEX64, 'c', 8},
};

/* ---- writing ------------------------------------------------------------- */

static const npy_type *npy_type_of(tf_dtype dt) {
  for (size_t i = 0; i < TF_ARRAY_LEN(npy_types); i++) {
    if (npy_types[i].dtype == dt) {
      return &npy_types[i];
    }
  }
  return NULL;
}

/* Writes the dict literal (unpadded) into buf; returns its length. */
static size_t npy_dict(const tf_tensor *t, const npy_type *nt, char *buf,
                       size_t size) {
  char order = nt->size == 1 ? '|' : '<';
  size_t off = (size_t)snprintf(buf, size,
                                "{'descr': '%c%c%d', 'fortran_order': False, "
                                "'shape': (",
                                order, nt->kind, nt->size);
  for (int i = 0; i < t->shape.rank; i++) {
    off += (size_t)snprintf(buf + off, size - off, "%s%lld", i ? ", " : "",
                            (long long)t->shape.dims[i]);
  }
  off += (size_t)snprintf(buf + off, size - off, "%s), }",
                          t->shape.rank == 1 ? "," : "");
  TF_ASSERT(off < size);
  return off;
}

tf_code tf_tensor_to_npy(const tf_tensor *t, void **buf, size_t *len,
                         tf_status *st) {
  *buf = NULL;
  *len = 0;
  const npy_type *nt = npy_type_of(t->dtype);
  if (nt == NULL) {
    return tf_status_set(st, TF_UNIMPLEMENTED,
                         ".npy has no encoding for %s tensors",
                         tf_dtype_name(t->dtype));
  }
  char dict[512];
  size_t dlen = npy_dict(t, nt, dict, sizeof dict);
  /* Version 1.0 has a 2-byte header length; 2.0 a 4-byte one. */
  size_t prefix = 10, hlen = dlen + 1;
  if (((prefix + hlen + NPY_ALIGN - 1) / NPY_ALIGN) * NPY_ALIGN - prefix >
      UINT16_MAX) {
    prefix = 12;
  }
  hlen = ((prefix + hlen + NPY_ALIGN - 1) / NPY_ALIGN) * NPY_ALIGN - prefix;
  size_t total = prefix + hlen + t->nbytes;
  if (total < t->nbytes) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "tensor too large for .npy");
  }
  uint8_t *out = malloc(total);
  if (out == NULL) {
    return tf_status_set(st, TF_RESOURCE_EXHAUSTED,
                         "out of memory for a %zu-byte .npy buffer", total);
  }
  memcpy(out, npy_magic, sizeof npy_magic);
  out[6] = prefix == 10 ? 1 : 2;
  out[7] = 0;
  for (size_t i = 0; i < prefix - 8; i++) {
    out[8 + i] = (uint8_t)(hlen >> (8 * i));
  }
  memcpy(out + prefix, dict, dlen);
  memset(out + prefix + dlen, ' ', hlen - dlen - 1);
  out[prefix + hlen - 1] = '\n';
  if (t->nbytes > 0) {
    memcpy(out + prefix + hlen, t->data, t->nbytes);
  }
  *buf = out;
  *len = total;
  return TF_OK;
}

/* ---- header parsing ------------------------------------------------------ */

typedef struct hdr {
  const char *p, *end;
  const char *base; /* for offsets in messages */
  tf_status *st;
} hdr;

static tf_code hdr_err(hdr *h, const char *what) {
  return tf_status_set(h->st, TF_INVALID_ARGUMENT,
                       ".npy header: %s at header offset %zu", what,
                       (size_t)(h->p - h->base));
}

static void hdr_ws(hdr *h) {
  while (h->p < h->end &&
         (*h->p == ' ' || *h->p == '\t' || *h->p == '\n' || *h->p == '\r')) {
    h->p++;
  }
}

static bool hdr_eat(hdr *h, char c) {
  hdr_ws(h);
  if (h->p < h->end && *h->p == c) {
    h->p++;
    return true;
  }
  return false;
}

/* A quoted string without escapes; [*s, *s + *n). */
static tf_code hdr_string(hdr *h, const char **s, size_t *n) {
  hdr_ws(h);
  if (h->p >= h->end || (*h->p != '\'' && *h->p != '"')) {
    return hdr_err(h, "expected a quoted string");
  }
  char q = *h->p++;
  const char *start = h->p;
  while (h->p < h->end && *h->p != q) {
    if (*h->p == '\\') {
      return hdr_err(h, "escape sequences are not supported");
    }
    h->p++;
  }
  if (h->p >= h->end) {
    return hdr_err(h, "unterminated string");
  }
  *s = start;
  *n = (size_t)(h->p - start);
  h->p++;
  return TF_OK;
}

static bool hdr_word(hdr *h, const char *w) {
  size_t n = strlen(w);
  hdr_ws(h);
  if ((size_t)(h->end - h->p) >= n && memcmp(h->p, w, n) == 0) {
    h->p += n;
    return true;
  }
  return false;
}

static tf_code hdr_int(hdr *h, int64_t *v) {
  hdr_ws(h);
  const char *start = h->p;
  int64_t x = 0;
  while (h->p < h->end && *h->p >= '0' && *h->p <= '9') {
    if (__builtin_mul_overflow(x, 10, &x) ||
        __builtin_add_overflow(x, *h->p - '0', &x)) {
      return hdr_err(h, "dimension does not fit in int64");
    }
    h->p++;
  }
  if (h->p == start) {
    return hdr_err(h, "expected a non-negative integer");
  }
  if (h->p < h->end && (*h->p == 'L' || *h->p == 'l')) {
    h->p++;
  }
  *v = x;
  return TF_OK;
}

/* "(2, 3)", "(3,)", "()" and, leniently, "(3)". */
static tf_code hdr_shape(hdr *h, tf_shape *s) {
  memset(s, 0, sizeof *s);
  if (!hdr_eat(h, '(')) {
    return hdr_err(h, "'shape' must be a tuple");
  }
  while (!hdr_eat(h, ')')) {
    if (s->rank == TF_MAX_RANK) {
      return hdr_err(h, "shape rank exceeds 8");
    }
    TF_TRY(hdr_int(h, &s->dims[s->rank]));
    s->rank++;
    if (!hdr_eat(h, ',')) {
      if (!hdr_eat(h, ')')) {
        return hdr_err(h, "expected ',' or ')' in shape");
      }
      break;
    }
  }
  return TF_OK;
}

static tf_code hdr_descr(hdr *h, tf_dtype *dt) {
  const char *s;
  size_t n;
  TF_TRY(hdr_string(h, &s, &n));
  if (n == 3 && (s[0] == '<' || s[0] == '|' || s[0] == '>' || s[0] == '=')) {
    int size = s[2] - '0';
    for (size_t i = 0; i < TF_ARRAY_LEN(npy_types); i++) {
      const npy_type *nt = &npy_types[i];
      bool order_ok = nt->size == 1 || s[0] == '<' || s[0] == '=';
      if (nt->kind == s[1] && nt->size == size && order_ok) {
        *dt = nt->dtype;
        return TF_OK;
      }
    }
  }
  return tf_status_set(h->st, TF_INVALID_ARGUMENT,
                       ".npy header: unsupported descr '%.*s' (want one of "
                       "<f2 <f4 <f8 |i1 <i2 <i4 <i8 |u1 <u2 <u4 <u8 |b1 <c8)",
                       (int)TF_MIN(n, 32), s);
}

/* Parses the dict; exactly the three keys, each once. */
static tf_code hdr_parse(hdr *h, tf_dtype *dt, tf_shape *shape) {
  bool seen[3] = {false, false, false};
  if (!hdr_eat(h, '{')) {
    return hdr_err(h, "expected '{'");
  }
  while (!hdr_eat(h, '}')) {
    const char *k;
    size_t n;
    TF_TRY(hdr_string(h, &k, &n));
    if (!hdr_eat(h, ':')) {
      return hdr_err(h, "expected ':'");
    }
    int which = n == 5 && memcmp(k, "descr", 5) == 0           ? 0
                : n == 13 && memcmp(k, "fortran_order", 13) == 0 ? 1
                : n == 5 && memcmp(k, "shape", 5) == 0           ? 2
                                                                 : -1;
    if (which < 0 || seen[which]) {
      return hdr_err(h, which < 0 ? "unknown key" : "repeated key");
    }
    seen[which] = true;
    if (which == 0) {
      TF_TRY(hdr_descr(h, dt));
    } else if (which == 1) {
      if (hdr_word(h, "True")) {
        return hdr_err(h, "fortran_order True is not supported");
      }
      if (!hdr_word(h, "False")) {
        return hdr_err(h, "fortran_order must be True or False");
      }
    } else {
      TF_TRY(hdr_shape(h, shape));
    }
    if (hdr_eat(h, '}')) {
      break;
    }
    if (!hdr_eat(h, ',')) {
      return hdr_err(h, "expected ',' or '}'");
    }
  }
  hdr_ws(h);
  if (h->p != h->end) {
    return hdr_err(h, "unexpected text after the dict");
  }
  if (!seen[0] || !seen[1] || !seen[2]) {
    return hdr_err(h, "missing one of 'descr', 'fortran_order', 'shape'");
  }
  return TF_OK;
}

/* ---- reading ------------------------------------------------------------- */

/* Magic and version; *data_off gets where the header dict ends. */
static tf_code npy_preamble(const uint8_t *p, size_t len, size_t *hdr_off,
                            size_t *data_off, tf_status *st) {
  if (len < 10) {
    return tf_status_set(st, len >= 6 && memcmp(p, npy_magic, 6) == 0
                                 ? TF_DATA_LOSS
                                 : TF_INVALID_ARGUMENT,
                         ".npy: %zu bytes is shorter than the preamble", len);
  }
  if (memcmp(p, npy_magic, 6) != 0) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         ".npy: bad magic (not a .npy file)");
  }
  int major = p[6], minor = p[7];
  if (major < 1 || major > 3 || minor != 0) {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         ".npy: unsupported version %d.%d", major, minor);
  }
  size_t prefix = major == 1 ? 10 : 12;
  if (len < prefix) {
    return tf_status_set(st, TF_DATA_LOSS,
                         ".npy: truncated in the header length");
  }
  uint64_t hlen = p[8] | (uint64_t)p[9] << 8;
  if (major > 1) {
    hlen |= (uint64_t)p[10] << 16 | (uint64_t)p[11] << 24;
  }
  if (hlen > len - prefix) {
    return tf_status_set(st, TF_DATA_LOSS,
                         ".npy: header of %llu bytes but only %zu follow",
                         (unsigned long long)hlen, len - prefix);
  }
  *hdr_off = prefix;
  *data_off = prefix + (size_t)hlen;
  return TF_OK;
}

static tf_code check_bools(const uint8_t *p, size_t n, tf_status *st) {
  for (size_t i = 0; i < n; i++) {
    if (p[i] > 1) {
      return tf_status_set(st, TF_INVALID_ARGUMENT,
                           ".npy: bool element %zu has byte value %u", i,
                           (unsigned)p[i]);
    }
  }
  return TF_OK;
}

tf_code tf_tensor_from_npy(const void *buf, size_t len, tf_tensor **out,
                           tf_status *st) {
  const uint8_t *p = buf;
  size_t hdr_off = 0, data_off = 0;
  tf_dtype dt = TF_DTYPE_INVALID;
  tf_shape shape;
  int64_t n;
  *out = NULL;
  TF_TRY(npy_preamble(p, len, &hdr_off, &data_off, st));
  hdr h = {(const char *)p + hdr_off, (const char *)p + data_off,
           (const char *)p + hdr_off, st};
  TF_TRY(hdr_parse(&h, &dt, &shape));
  TF_TRY(tf_shape_check(&shape, tf_dtype_size(dt), &n, st));
  size_t want = (size_t)n * tf_dtype_size(dt), have = len - data_off;
  if (have != want) {
    return tf_status_set(st, have < want ? TF_DATA_LOSS : TF_INVALID_ARGUMENT,
                         ".npy: %s%s data needs %zu bytes, the file has %zu",
                         tf_dtype_name(dt), tf_shape_str(&shape, (char[200]){0}, 200),
                         want, have);
  }
  if (dt == TF_BOOL) {
    TF_TRY(check_bools(p + data_off, want, st));
  }
  return tf_tensor_from_data(dt, &shape, p + data_off, want, out, st);
}

tf_code tf_tensor_save_npy(const tf_tensor *t, const char *path,
                           tf_status *st) {
  void *buf;
  size_t len;
  tf_code c = tf_tensor_to_npy(t, &buf, &len, st);
  if (c == TF_OK) {
    c = tf__write_file(path, buf, len, st);
    free(buf);
  } else {
    tf_status_prefix(st, "%s", path);
  }
  return c;
}

tf_code tf_tensor_load_npy(const char *path, tf_tensor **out, tf_status *st) {
  char *buf;
  size_t len;
  *out = NULL;
  TF_TRY(tf__read_file_confined(path, &buf, &len, st));
  tf_code c = tf_tensor_from_npy(buf, len, out, st);
  free(buf);
  if (c != TF_OK) {
    tf_status_prefix(st, "%s", path);
  }
  return c;
}
