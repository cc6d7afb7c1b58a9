/* cpu_array_copy.c: region copies and fills for the CPU array kernels.
 *
 * After merging contiguous dims a region is copied in one of three ways:
 * whole rows with memcpy when the last dim is contiguous on both sides;
 * 32x32-element tiles when the destination's last dim reads the source
 * with a stride while some other dim is contiguous in the source (a
 * transpose: each tile's source lines stay in L1 while its destination
 * rows are written); otherwise a strided element loop per row. Elements
 * move with fixed-size memcpy (no type punning); strings are deep-copied
 * one by one. */
#include "lib/devices/cpu/cpu_array_copy.h"

#include <string.h>

#include "lib/core/base/util.h"

/* Let gcc vectorise the element loops at -O2 (its default "very cheap"
 * model skips loops with a runtime trip count). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=dynamic")
#endif

#define TILE 32

void tf__row_major_strides(const tf_shape *s, int64_t *strides) {
  int64_t acc = 1;
  for (int k = s->rank - 1; k >= 0; k--) {
    strides[k] = acc;
    acc *= s->dims[k];
  }
}

void tf__region_simplify(tf__region *r) {
  int m = 0;
  for (int k = 0; k < r->rank; k++) {
    int64_t d = r->dims[k];
    if (d == 0) {
      *r = (tf__region){.rank = 1, .dims = {0}};
      return;
    }
    if (d == 1) {
      continue;
    }
    if (m > 0 && r->sstride[m - 1] == r->sstride[k] * d &&
        r->dstride[m - 1] == r->dstride[k] * d) {
      r->dims[m - 1] *= d;
      r->sstride[m - 1] = r->sstride[k];
      r->dstride[m - 1] = r->dstride[k];
    } else {
      r->dims[m] = d;
      r->sstride[m] = r->sstride[k];
      r->dstride[m] = r->dstride[k];
      m++;
    }
  }
  r->rank = m;
}

/* ---- typed element movers ------------------------------------------- */

typedef void (*strided_fn)(const char *s, char *d, int64_t n, int64_t ss,
                           int64_t ds);
/* ni x nj block: d[i * dsi + j] = s[i + j * ssj] */
typedef void (*tile_fn)(const char *s, char *d, int64_t ni, int64_t nj,
                        int64_t ssj, int64_t dsi);

#define DEFINE_MOVERS(SZ)                                                      \
  static void strided_##SZ(const char *s, char *d, int64_t n, int64_t ss,      \
                           int64_t ds) {                                       \
    for (int64_t i = 0; i < n; i++) {                                          \
      memcpy(d + i * ds * SZ, s + i * ss * SZ, SZ);                            \
    }                                                                          \
  }                                                                            \
  static void tile_##SZ(const char *s, char *d, int64_t ni, int64_t nj,        \
                        int64_t ssj, int64_t dsi) {                            \
    for (int64_t j0 = 0; j0 < nj; j0 += TILE) {                                \
      int64_t j1 = TF_MIN(nj, j0 + TILE);                                      \
      for (int64_t i = 0; i < ni; i++) {                                       \
        char *drow = d + i * dsi * SZ;                                         \
        const char *scol = s + i * SZ;                                         \
        for (int64_t j = j0; j < j1; j++) {                                    \
          memcpy(drow + j * SZ, scol + j * ssj * SZ, SZ);                      \
        }                                                                      \
      }                                                                        \
    }                                                                          \
  }

DEFINE_MOVERS(1)
DEFINE_MOVERS(2)
DEFINE_MOVERS(4)
DEFINE_MOVERS(8)

static strided_fn strided_for(size_t esize) {
  switch (esize) {
  case 1: return strided_1;
  case 2: return strided_2;
  case 4: return strided_4;
  default: return strided_8;
  }
}

static tile_fn tile_for(size_t esize) {
  switch (esize) {
  case 1: return tile_1;
  case 2: return tile_2;
  case 4: return tile_4;
  default: return tile_8;
  }
}

/* ---- numeric region copy -------------------------------------------- */

typedef struct copy_job {
  const tf__region *r;
  const char *src; /* element (0,..,0) of the region */
  char *dst;
  size_t esize;
  /* tile mode: dim p is contiguous in the source; the other dims but the
   * last are the batch */
  int p, nb;
  int64_t bd[TF__REGION_MAX_RANK], bs[TF__REGION_MAX_RANK],
      bds[TF__REGION_MAX_RANK];
  int64_t ntile;
  int64_t pieces; /* rows mode: each row split into this many pieces */
} copy_job;

static void copy_rows(void *arg, int64_t r0, int64_t r1) {
  const copy_job *j = arg;
  const tf__region *r = j->r;
  int last = r->rank - 1;
  size_t bytes = (size_t)r->dims[last] * j->esize;
  tf__odo o;
  tf__odo_seek(&o, last, r->dims, r->sstride, r->dstride, r0);
  for (int64_t q = r0; q < r1; q++) {
    memcpy(j->dst + o.off1 * (int64_t)j->esize,
           j->src + o.off0 * (int64_t)j->esize, bytes);
    tf__odo_next(&o);
  }
}

/* Few long rows: task t copies piece t % pieces of row t / pieces, so big
 * copies (and their first-touch page faults) use the whole pool. */
static void copy_pieces(void *arg, int64_t t0, int64_t t1) {
  const copy_job *j = arg;
  const tf__region *r = j->r;
  int last = r->rank - 1;
  int64_t len = r->dims[last], es = (int64_t)j->esize;
  for (int64_t t = t0; t < t1; t++) {
    int64_t k = t % j->pieces;
    int64_t a = k * len / j->pieces, b = (k + 1) * len / j->pieces;
    tf__odo o;
    tf__odo_seek(&o, last, r->dims, r->sstride, r->dstride, t / j->pieces);
    memcpy(j->dst + (o.off1 + a) * es, j->src + (o.off0 + a) * es,
           (size_t)(b - a) * j->esize);
  }
}

static void copy_strided(void *arg, int64_t r0, int64_t r1) {
  const copy_job *j = arg;
  const tf__region *r = j->r;
  int last = r->rank - 1;
  strided_fn fn = strided_for(j->esize);
  tf__odo o;
  tf__odo_seek(&o, last, r->dims, r->sstride, r->dstride, r0);
  for (int64_t q = r0; q < r1; q++) {
    fn(j->src + o.off0 * (int64_t)j->esize,
       j->dst + o.off1 * (int64_t)j->esize, r->dims[last], r->sstride[last],
       r->dstride[last]);
    tf__odo_next(&o);
  }
}

static void copy_tiles(void *arg, int64_t t0, int64_t t1) {
  const copy_job *j = arg;
  const tf__region *r = j->r;
  int last = r->rank - 1;
  int64_t es = (int64_t)j->esize, np = r->dims[j->p];
  tile_fn fn = tile_for(j->esize);
  for (int64_t t = t0; t < t1; t++) {
    tf__odo o;
    tf__odo_seek(&o, j->nb, j->bd, j->bs, j->bds, t / j->ntile);
    int64_t i0 = (t % j->ntile) * TILE;
    fn(j->src + (o.off0 + i0) * es,
       j->dst + (o.off1 + i0 * r->dstride[j->p]) * es,
       TF_MIN(TILE, np - i0), r->dims[last], r->sstride[last],
       r->dstride[j->p]);
  }
}

/* The dim a transpose tile runs along, or -1 when tiling does not apply. */
static int tile_dim(const tf__region *r) {
  int last = r->rank - 1;
  if (r->rank < 2 || r->dstride[last] != 1 || r->sstride[last] == 1 ||
      r->sstride[last] == 0) {
    return -1;
  }
  for (int k = 0; k < last; k++) {
    if (r->sstride[k] == 1) {
      return k;
    }
  }
  return -1;
}

static void run_tiles(tf_threadpool *pool, copy_job *j, int p) {
  const tf__region *r = j->r;
  int last = r->rank - 1;
  int64_t batch = 1;
  j->p = p;
  j->nb = 0;
  for (int k = 0; k < last; k++) {
    if (k != p) {
      j->bd[j->nb] = r->dims[k];
      j->bs[j->nb] = r->sstride[k];
      j->bds[j->nb] = r->dstride[k];
      batch *= r->dims[k];
      j->nb++;
    }
  }
  j->ntile = (r->dims[p] + TILE - 1) / TILE;
  int64_t work = TILE * r->dims[last];
  tf_parallel_for(pool, batch * j->ntile,
                  TF_MAX(1, TF_PARALLEL_GRAIN / work), copy_tiles, j);
}

static void copy_numeric(tf_threadpool *pool, const tf__region *r,
                         const char *src, char *dst, size_t esize) {
  copy_job j = {.r = r, .src = src, .dst = dst, .esize = esize};
  if (r->rank == 0) {
    memcpy(dst, src, esize);
    return;
  }
  int last = r->rank - 1, p = tile_dim(r);
  if (p >= 0) {
    run_tiles(pool, &j, p);
    return;
  }
  int64_t rows = 1;
  for (int k = 0; k < last; k++) {
    rows *= r->dims[k];
  }
  int64_t len = r->dims[last];
  bool contiguous = r->sstride[last] == 1 && r->dstride[last] == 1;
  if (contiguous && rows < 8 && len >= 4 * TF_PARALLEL_GRAIN) {
    j.pieces = TF_MIN(16, len / (2 * TF_PARALLEL_GRAIN));
    tf_parallel_for(pool, rows * j.pieces, 1, copy_pieces, &j);
    return;
  }
  int64_t grain = TF_MAX(1, TF_PARALLEL_GRAIN / len);
  tf_parallel_for(pool, rows, grain, contiguous ? copy_rows : copy_strided,
                  &j);
}

static tf_code copy_strings(tf_kernel_ctx *ctx, const tf__region *r,
                            tf_tensor *dst, int64_t doff,
                            const tf_tensor *src, int64_t soff) {
  const tf_string *s = tf_tensor_strings(src);
  int64_t n = 1;
  for (int k = 0; k < r->rank; k++) {
    n *= r->dims[k];
  }
  tf__odo o;
  tf__odo_seek(&o, r->rank, r->dims, r->sstride, r->dstride, 0);
  for (int64_t i = 0; i < n; i++) {
    const tf_string *e = &s[soff + o.off0];
    tf_status st;
    if (tf_tensor_set_string(dst, doff + o.off1, e->data, e->len, &st) !=
        TF_OK) {
      return tf_kernel_error(ctx, st.code, "%s", st.msg);
    }
    tf__odo_next(&o);
  }
  return TF_OK;
}

tf_code tf__region_copy(tf_kernel_ctx *ctx, const tf__region *region,
                        tf_tensor *dst, int64_t doff, const tf_tensor *src,
                        int64_t soff) {
  TF_ASSERT(dst->dtype == src->dtype);
  TF_ASSERT(region->rank >= 0 && region->rank <= TF__REGION_MAX_RANK);
  tf__region r = *region;
  tf__region_simplify(&r);
  if (r.rank == 1 && r.dims[0] == 0) {
    return TF_OK;
  }
  if (src->dtype == TF_STRING) {
    return copy_strings(ctx, &r, dst, doff, src, soff);
  }
  size_t esize = tf_dtype_size(src->dtype);
  copy_numeric(ctx->pool, &r, (const char *)src->data + soff * (int64_t)esize,
               (char *)dst->data + doff * (int64_t)esize, esize);
  return TF_OK;
}

/* ---- fill ------------------------------------------------------------ */

typedef struct fill_job {
  char *dst;
  const void *value;
  size_t esize;
} fill_job;

/* Writes one element, then doubles the filled prefix with memcpy. */
static void fill_range(void *arg, int64_t i0, int64_t i1) {
  const fill_job *j = arg;
  char *d = j->dst + i0 * (int64_t)j->esize;
  int64_t n = i1 - i0, done = 1;
  memcpy(d, j->value, j->esize);
  while (done < n) {
    int64_t c = TF_MIN(done, n - done);
    memcpy(d + done * (int64_t)j->esize, d, (size_t)c * j->esize);
    done += c;
  }
}

tf_code tf__fill_value(tf_kernel_ctx *ctx, tf_tensor *dst, const void *value) {
  if (dst->n == 0) {
    return TF_OK;
  }
  if (dst->dtype == TF_STRING) {
    const tf_string *v = value;
    for (int64_t i = 0; i < dst->n; i++) {
      tf_status st;
      if (tf_tensor_set_string(dst, i, v->data, v->len, &st) != TF_OK) {
        return tf_kernel_error(ctx, st.code, "%s", st.msg);
      }
    }
    return TF_OK;
  }
  fill_job j = {.dst = dst->data, .value = value,
                .esize = tf_dtype_size(dst->dtype)};
  tf_parallel_for(ctx->pool, dst->n, TF_PARALLEL_GRAIN, fill_range, &j);
  return TF_OK;
}
