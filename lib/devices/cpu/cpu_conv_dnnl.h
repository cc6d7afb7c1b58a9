/* cpu_conv_dnnl.h: float32 NHWC Conv2D forward, backward-data and
 * backward-weights through oneDNN (dnnl.h), used by the CPU conv kernels
 * (cpu_conv.c, cpu_conv_grad.c) when the build found oneDNN
 * (TF_HAVE_DNNL) and the case is supported; they fall back to im2col +
 * OpenBLAS otherwise. Without TF_HAVE_DNNL the functions below are inline
 * no-ops that report "unsupported". Internal to lib/devices/cpu. */
#ifndef TF_DEVICES_CPU_CPU_CONV_DNNL_H
#define TF_DEVICES_CPU_CPU_CONV_DNNL_H

#include <stdbool.h>

#include "lib/core/framework/kernel.h"
#include "lib/devices/cpu/cpu_conv.h"

typedef enum tf__dnnl_conv_kind {
  TF__DNNL_FWD,         /* out = conv(a = input, b = filter) */
  TF__DNNL_BWD_DATA,    /* out = d input from (a = dy, b = filter) */
  TF__DNNL_BWD_WEIGHTS, /* out = d filter from (a = input, b = dy) */
} tf__dnnl_conv_kind;

/* A kernel state's cache of oneDNN primitives, keyed by kind and geometry;
 * safe to use from several threads at once. */
typedef struct tf__dnnl_cache tf__dnnl_cache;

#ifdef TF_HAVE_DNNL

/* A new empty cache (never NULL: aborts on out of memory like
 * tf__xcalloc). */
tf__dnnl_cache *tf__dnnl_cache_new(void);

/* Frees c and its primitives; NULL is a no-op. */
void tf__dnnl_cache_free(tf__dnnl_cache *c);

/* True when oneDNN should run convolution kind on g: float32, no
 * dilation, non-empty, not a case measured slower than the fallback
 * (backward-data into 1-3 channels), and the environment variable
 * TF_DISABLE_DNNL is not "1". */
bool tf__dnnl_conv_wanted(tf__dnnl_conv_kind kind, const tf__conv_geom *g,
                          tf_dtype dt);

/* Runs convolution kind on geometry g (float32; a, b and out laid out as
 * TF's NHWC activations and HWIO filters, out overwritten). Returns
 * TF_OK, or TF_UNIMPLEMENTED without touching ctx when oneDNN cannot
 * build the primitive (the caller falls back); other failures are set on
 * ctx (INTERNAL, naming the oneDNN call). */
tf_code tf__dnnl_conv(tf_kernel_ctx *ctx, tf__dnnl_cache *c,
                      tf__dnnl_conv_kind kind, const tf__conv_geom *g,
                      const float *a, const float *b, float *out);

#else

static inline tf__dnnl_cache *tf__dnnl_cache_new(void) { return NULL; }
static inline void tf__dnnl_cache_free(tf__dnnl_cache *c) { (void)c; }
static inline bool tf__dnnl_conv_wanted(tf__dnnl_conv_kind kind,
                                        const tf__conv_geom *g, tf_dtype dt) {
  (void)kind;
  (void)g;
  (void)dt;
  return false;
}
static inline tf_code tf__dnnl_conv(tf_kernel_ctx *ctx, tf__dnnl_cache *c,
                                    tf__dnnl_conv_kind kind,
                                    const tf__conv_geom *g, const float *a,
                                    const float *b, float *out) {
  (void)ctx, (void)c, (void)kind, (void)g, (void)a, (void)b, (void)out;
  return TF_UNIMPLEMENTED;
}

#endif

#endif
