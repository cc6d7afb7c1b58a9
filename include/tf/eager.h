/* eager.h: run one op immediately on CPU tensors.
 *
 * tf_execute builds a one-node graph (Placeholders for the inputs), checks
 * it like any graph node, runs the op's CPU kernel once and returns the
 * outputs. It is the quickest way to try an op from C, and what the kernel
 * tests use. Not for hot loops: use a session. */
#ifndef TF_EAGER_H
#define TF_EAGER_H

#include "tf/export.h"
#include "tf/attr.h"
#include "tf/status.h"
#include "tf/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Runs op with inputs (list arguments are flattened in order; list lengths
 * are inferred into number attrs such as N when not given) and attrs (type
 * attrs are inferred from inputs when not given). outputs must have room for
 * the op's output count (*n_outputs in: capacity, out: count); the caller
 * owns one reference to each. */
TF_API tf_code tf_execute(const char *op, tf_tensor *const *inputs,
                          int n_inputs, const tf_attr_kv *attrs, int n_attrs,
                          tf_tensor **outputs, int *n_outputs, tf_status *st);

#ifdef __cplusplus
}
#endif

#endif
