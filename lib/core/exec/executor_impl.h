/* executor_impl.h: the executor's prepared form, shared by executor.c
 * (building it from a graph) and executor_step.c (running steps). */
#ifndef TF_CORE_EXECUTOR_IMPL_H
#define TF_CORE_EXECUTOR_IMPL_H

#include "lib/core/exec/executor.h"

enum {
  IT_CHEAP = 1u << 0,      /* run inline in the thread that readied it */
  IT_ASYNC = 1u << 1,      /* compute_async */
  IT_MERGE = 1u << 2,
  IT_ENTER = 1u << 3,
  IT_EXIT = 1u << 4,
  IT_NEXT = 1u << 5,       /* NextIteration */
  IT_CONST_ENTER = 1u << 6,/* Enter with is_constant: a loop invariant */
  IT_CTRL_FLOW = 1u << 7,  /* may leave outputs unset (dead) */
  IT_REF_IN = 1u << 8,     /* some input is declared Ref(T) */
  IT_DEREF = 1u << 9,      /* some plain input is fed by a ref edge */
  IT_REF_OUT = 1u << 10,   /* some output is declared Ref(T) */
  IT_DEAD_AWARE = 1u << 11,/* TF_OP_DEAD_AWARE: runs when dead, may leave
                            * outputs unset (_Send, _Recv) */
};

/* An out edge: dst_slot is the consumer's input index, -1 for control. */
typedef struct exec_edge {
  int32_t dst;
  int32_t dst_slot;
  int32_t src_port; /* -1 for control */
} exec_edge;

/* Input kinds, for items with IT_REF_IN or IT_DEREF. */
enum { IN_PLAIN = 0, IN_REF = 1, IN_DEREF = 2 };

typedef struct exec_item {
  const tf_node *node;
  const tf_kernel_def *k;
  void *state;           /* from the kernel's init */
  uint32_t flags;
  int32_t n_inputs, n_outputs;
  int32_t n_data_in;     /* data inputs (Merge: deadness needs all) */
  int32_t input_start;   /* first input slot within its frame */
  int32_t pending_id;    /* index within its frame */
  int32_t frame;         /* static frame it runs in */
  int32_t enter_frame;   /* Enter: the frame it feeds */
  int32_t edge_start, n_edges;
  int32_t kinds_start;   /* into e->in_kinds when REF_IN or DEREF */
} exec_item;

typedef struct exec_frame {
  char *name;            /* "" for the root frame */
  int32_t parent;        /* -1 for the root */
  int32_t n_nodes;       /* pending-count entries */
  int32_t n_slots;       /* input slots */
  int32_t n_enters;      /* Enter nodes feeding it (pending inputs) */
  int32_t parallel_iterations;
  bool has_refs;         /* some slot may carry a resource */
  int32_t *init_pending; /* n_nodes; initial pending counts */
} exec_frame;

struct tf_executor {
  const tf_graph *g;
  tf_device *device;
  tf_workq *runner;
  int n_items;
  exec_item *items;
  exec_edge *edges;
  uint8_t *in_kinds;
  int n_frames;
  exec_frame *frames;
  int32_t *roots;        /* root-frame items with nothing pending */
  int n_roots;
  int max_outputs;
  /* No control-flow or dead-aware ops and one frame: nothing can be
   * dead, so pending counts are atomics and steps take no lock per node. */
  bool simple;
  bool needs_rendezvous; /* some node is a _Send or _Recv */
};

#endif
