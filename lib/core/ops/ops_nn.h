/* ops_nn.h: window arithmetic shared by the nn ops' shape functions
 * (ops_nn.c) and their CPU kernels (Conv2D, MaxPool, AvgPool), so graph
 * construction and execution agree on output sizes and padding. It follows
 * TensorFlow's GetWindowedOutputSize exactly. Internal to lib/. */
#ifndef TF_CORE_OPS_OPS_NN_H
#define TF_CORE_OPS_OPS_NN_H

#include <stdbool.h>
#include <stdint.h>

#include "tf/graph.h"
#include "tf/status.h"

typedef enum tf__nn_padding {
  TF__NN_VALID,
  TF__NN_SAME,
  TF__NN_EXPLICIT, /* Conv2D only: pads from explicit_paddings */
} tf__nn_padding;

/* A node's window attrs, each in its data_format's dimension order. */
typedef struct tf__nn_window {
  int64_t ksize[4];     /* pools; all 1 for Conv2D */
  int64_t strides[4];
  int64_t dilations[4]; /* Conv2D; all 1 for pools */
  int64_t pads[8];      /* EXPLICIT: (before, after) per dimension */
  tf__nn_padding padding;
  bool nchw;            /* data_format == "NCHW" */
  int h_dim, w_dim, c_dim; /* 1,2,3 for NHWC; 2,3,1 for NCHW */
} tf__nn_window;

/* Reads node n's strides, padding and data_format, plus ksize, dilations and
 * explicit_paddings when the op has them, and checks them as TF does:
 * lists of 4 positive values, no striding (or pooling, dilating, padding)
 * over the batch and depth dimensions. INVALID_ARGUMENT naming the attr;
 * UNIMPLEMENTED for depthwise pooling. NCHW is accepted here: kernels that
 * support only NHWC check w->nchw themselves. */
tf_code tf__nn_window_parse(const tf_node *n, tf__nn_window *w, tf_status *st);

/* Output size and padding before for one spatial dimension of extent in,
 * window k with dilation d and stride s (TF's GetWindowedOutputSize):
 * VALID: (in - eff + s) / s; SAME: ceil(in / s) with pad_before =
 * floor(total / 2); EXPLICIT: (in + lo + hi - eff + s) / s with pad_before =
 * lo; eff = (k - 1) * d + 1. INVALID_ARGUMENT naming dim ("rows", "cols")
 * when the size would be negative or the arithmetic overflows. */
tf_code tf__nn_out_size(const char *dim, int64_t in, int64_t k, int64_t d,
                        int64_t s, tf__nn_padding p, int64_t lo, int64_t hi,
                        int64_t *out, int64_t *pad_before, tf_status *st);

#endif
