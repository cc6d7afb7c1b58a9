/* partition.h: splitting a placed graph into per-device graphs
 * (whitepaper §3.2.2).
 *
 * Each node goes to its device's graph with its device set to the full
 * name. A data edge between devices becomes _Send on the source device and
 * _Recv on the destination: one _Recv per (tensor, destination device),
 * shared by every consumer there. A control edge between devices becomes a
 * dummy Const (with the control input) feeding a _Send, and a _Recv whose
 * output is a control input of the consumer. tensor_name is
 * "edge_<src node>_<port>" (control: "ctrl_<src node>"); _Send/_Recv carry
 * send_device, send_device_incarnation, recv_device, so both sides build
 * the same rendezvous key. _Arg and _Retval nodes are renumbered per
 * partition. A while loop split over devices gets, on every device at an
 * end of one of its cross-device edges, a control loop (Enter, Merge,
 * Switch on the predicate, Identity, NextIteration, Exit, named
 * "<frame>/_cloop_d<N>/...") driven by the LoopCond's value, sent there
 * every iteration; the frame's _Recvs take a control edge from it. Variable
 * Enters and NextIterations are moved to the device of the Merge they
 * feed. Errors: INVALID_ARGUMENT for a split frame without a LoopCond;
 * UNIMPLEMENTED (naming the edge and frame) for a variable Enter or a
 * NextIteration read across devices by anything but a Merge. */
#ifndef TF_RUNTIME_PARTITION_H
#define TF_RUNTIME_PARTITION_H

#include <stdint.h>

#include "lib/runtime/placement.h"
#include "tf/graph.h"
#include "tf/status.h"

typedef struct tf_partition {
  int device;     /* index into devs */
  tf_graph *g;    /* the device's nodes plus its _Send/_Recv; an internal
                     graph (tf__graph_new_internal), as it holds the
                     pruned graph's _arg_N/_retval_N */
  int n_args;     /* local _Arg index -> global feed index (the _Arg's */
  int *arg_feed;  /* original "index" attr) */
  int n_rets;     /* local _Retval index -> global fetch index */
  int *ret_fetch;
} tf_partition;

/* Partitions g by assign (node id -> device index, from tf_place).
 * incarnations[d] goes into the keys of sends from device d. Only devices
 * with nodes get a partition; *parts is ordered by device index. */
tf_code tf_partition_graph(const tf_graph *g, const int *assign,
                           const tf_place_device *devs,
                           const uint64_t *incarnations, int n_devs,
                           tf_partition **parts, int *n_parts, tf_status *st);
void tf_partitions_free(tf_partition *parts, int n);

#endif
