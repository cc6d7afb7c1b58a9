/* ckpt_testlib.h: fixtures of the checkpoint tests (shards, the checkpoint
 * directory, the ops, tfctl inspect): seeded random tensors of every
 * dtype (random bytes for numbers, so every bit pattern occurs; 0/1 for
 * bool; strings of random bytes, NULs included), and a reference slice
 * taken element by element with its own index arithmetic (independent of
 * ckpt_slice.c's box copy). Static inline so each test includes what it
 * uses; the file helpers come from io_testlib.h. */
#ifndef TF_TEST_CKPT_TESTLIB_H
#define TF_TEST_CKPT_TESTLIB_H

#include <stdint.h>
#include <string.h>

#include "test/unit/core/serialize/io_testlib.h"
#include "test/unit/testutil.h"

/* Every dtype a tensor may have. */
static const tf_dtype ck_all_dtypes[] = {
    TF_FLOAT32, TF_FLOAT64, TF_INT32,  TF_UINT8,     TF_INT16,
    TF_INT8,    TF_STRING,  TF_COMPLEX64, TF_INT64,  TF_BOOL,
    TF_BFLOAT16, TF_UINT16, TF_FLOAT16, TF_UINT32,   TF_UINT64};
#define CK_N_DTYPES ((int)(sizeof ck_all_dtypes / sizeof ck_all_dtypes[0]))

static inline tf_tensor *ck_rand_tensor(tf_dtype dt, tf_shape shape) {
  tf_tensor *t;
  tf_status st;
  ck_assert_msg(tf_tensor_new(dt, &shape, &t, &st) == TF_OK, "%s", st.msg);
  if (dt == TF_STRING) {
    for (int64_t i = 0; i < t->n; i++) {
      char b[24];
      size_t len = (size_t)(tt_rand_u64() % sizeof b);
      for (size_t k = 0; k < len; k++) b[k] = (char)tt_rand_u64();
      ck_assert(tf_tensor_set_string(t, i, b, len, &st) == TF_OK);
    }
    return t;
  }
  unsigned char *p = t->data;
  for (size_t i = 0; i < t->nbytes; i++) {
    p[i] = dt == TF_BOOL ? (unsigned char)(tt_rand_u64() & 1)
                         : (unsigned char)tt_rand_u64();
  }
  return t;
}

/* The flat index in a row-major tensor of shape dims of multi-index idx. */
static inline int64_t ck_flat(const int64_t *dims, const int64_t *idx,
                              int rank) {
  int64_t f = 0;
  for (int d = 0; d < rank; d++) f = f * dims[d] + idx[d];
  return f;
}

/* The elements [start[d], start[d] + len[d]) of full, element by element. */
static inline tf_tensor *ck_slice_ref(const tf_tensor *full,
                                      const int64_t *start,
                                      const int64_t *len) {
  int rank = full->shape.rank;
  tf_shape s = tf_shape_make(rank, len);
  tf_tensor *out;
  tf_status st;
  ck_assert(tf_tensor_new(full->dtype, &s, &out, &st) == TF_OK);
  size_t es = tf_dtype_size(full->dtype);
  int64_t idx[TF_MAX_RANK] = {0}, src[TF_MAX_RANK];
  for (int64_t o = 0; o < out->n; o++) {
    int64_t rem = o; /* idx = unravel(o, len) */
    for (int d = rank - 1; d >= 0; d--) {
      idx[d] = rem % len[d];
      rem /= len[d];
      src[d] = start[d] + idx[d];
    }
    int64_t f = ck_flat(full->shape.dims, src, rank);
    if (full->dtype == TF_STRING) {
      const tf_string *e = &tf_tensor_strings(full)[f];
      ck_assert(tf_tensor_set_string(out, o, e->data, e->len, &st) == TF_OK);
    } else {
      memcpy((char *)out->data + (size_t)o * es,
             (const char *)full->data + (size_t)f * es, es);
    }
  }
  return out;
}

/* "d0 d1 ... start,len:start,len..." for full shape and a box. */
static inline const char *ck_slice_text(char *buf, size_t n, const tf_shape *full,
                                        const int64_t *start,
                                        const int64_t *len) {
  size_t off = 0;
  for (int d = 0; d < full->rank; d++) {
    off += (size_t)snprintf(buf + off, n - off, "%lld ", (long long)full->dims[d]);
  }
  for (int d = 0; d < full->rank; d++) {
    off += (size_t)snprintf(buf + off, n - off, "%s%lld,%lld", d ? ":" : "",
                            (long long)start[d], (long long)len[d]);
  }
  return buf;
}

#endif
