/* placement_impl.h: helpers shared by the placer (placement.c), its cost
 * estimates (placement_cost.c) and the partitioner (partition.c). */
#ifndef TF_RUNTIME_PLACEMENT_IMPL_H
#define TF_RUNTIME_PLACEMENT_IMPL_H

#include <stdint.h>

#include "lib/runtime/placement.h"
#include "tf/graph.h"
#include "tf/status.h"

/* Static estimate of node n's run time in ns: 2mnk flops for MatMul and
 * BatchMatMul, 2 * output elements * filter volume for convolutions (at
 * 10 GFLOP/s), else the bytes read and written (at 5 GB/s); at least
 * 1 us. Unknown dimensions count as 1. */
int64_t tf__place_static_cost(const tf_node *n);
/* The measured mean from cm when known (cm may be NULL), else the static
 * estimate. */
int64_t tf__place_node_cost(const tf_node *n, const tf_cost_model *cm);
/* Estimated bytes of output port of n (unknown dimensions count as 1). */
int64_t tf__place_output_bytes(const tf_node *n, int port);

#endif
