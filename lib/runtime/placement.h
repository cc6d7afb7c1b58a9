/* placement.h: choosing a device for every node (whitepaper §3.2.1, §4.3).
 *
 * 1. Feasible devices per node: those with a kernel for its op (and type
 *    attr) that match its requested (partial) device spec.
 * 2. Colocation groups by union-find: a node with a Ref input joins the
 *    ref's producer (a variable and its Assign, ApplyAdam, ...), "loc:@x"
 *    entries of _class join x, a _Retval joins its input's producer and
 *    an _Arg its first consumer. A group's feasible set is the
 *    intersection; an empty one is INVALID_ARGUMENT naming the group's
 *    nodes and their requests.
 * 3. Defaults: groups holding a variable (stateful source op with a Ref
 *    output, e.g. VariableV2) with no request go round-robin over the ps
 *    job's tasks (in first-appearance order); other unconstrained groups
 *    are restricted to the default job (when the cluster has it).
 * 4. Small connected work stays together: in topological order, an edge
 *    whose transfer cost (latency + bytes / rate; a control edge is the
 *    latency alone) is at least the work of the smaller of the two groups
 *    it joins merges them, when their feasible sets meet (the merged set
 *    is the intersection, so requests and colocation still hold). Running
 *    the two groups on two devices could save at most the smaller one's
 *    work, and cutting the edge would cost the transfer; so a 2x2 MatMul
 *    of two Consts lands on one task, while chains of MatMuls that take
 *    far longer than moving their tensors stay separate groups.
 * 5. Greedy simulated placement: in topological order each group goes to
 *    its feasible device with the earliest simulated finish time, given the
 *    time each device is busy and the transfer time of inputs from other
 *    devices. Node costs are the measured mean times from earlier steps
 *    when known, else static estimates (flops and bytes from shapes).
 * Deterministic: ties go to the lowest device index. */
#ifndef TF_RUNTIME_PLACEMENT_H
#define TF_RUNTIME_PLACEMENT_H

#include <stdint.h>

#include "lib/runtime/device_name.h"
#include "tf/graph.h"
#include "tf/status.h"

typedef struct tf_place_device {
  const char *name; /* full name */
  const char *type; /* "CPU", "GPU" */
} tf_place_device;

/* Measured node times (mean ns by node name); thread-safe. */
typedef struct tf_cost_model tf_cost_model;
tf_cost_model *tf_cost_model_new(void);
void tf_cost_model_free(tf_cost_model *cm);
void tf_cost_model_record(tf_cost_model *cm, const char *node, int64_t ns);
/* Mean recorded time, or -1 when none. */
int64_t tf_cost_model_get(const tf_cost_model *cm, const char *node);

typedef struct tf_place_opts {
  const char *default_job; /* "worker"; NULL: none */
  const char *ps_job;      /* "ps"; NULL: none */
  const tf_cost_model *costs; /* NULL: static estimates only */
  double bytes_per_ns;     /* cross-device transfer rate; 0: 1.0 (1 GB/s) */
  /* per cross-device edge; 0: 65000 (a loopback RPC round trip) */
  int64_t transfer_latency_ns;
  /* Devices fixed beforehand (the master's: where a node's state already
   * lives): pinned(pinned_arg, node name) is a full device name of devs,
   * or NULL. A pinned node may go only there (with its colocation group);
   * NULL pinned: none. */
  const char *(*pinned)(void *arg, const char *node);
  void *pinned_arg;
} tf_place_opts;

/* Fills out[node->id] (g's node ids) with an index into devs. Errors name
 * the node, its request and the devices considered. */
tf_code tf_place(const tf_graph *g, const tf_place_device *devs, int n_devs,
                 const tf_place_opts *o, int *out, tf_status *st);

#endif
