/* graph_impl.h: the graph's internal layout, shared by graph.c, the
 * builder and import (graph_build.c), control flow, the executor and
 * sessions (lib/core/exec) and the placement and partitioning passes
 * (lib/runtime). Everything else uses the accessors in include/tf/graph.h. */
#ifndef TF_CORE_GRAPH_IMPL_H
#define TF_CORE_GRAPH_IMPL_H

#include <stdint.h>

#include "lib/core/framework/op_registry.h"
#include "lib/core/base/strmap.h"
#include "tf/graph.h"

struct tf_node {
  int id;                  /* index in graph->nodes */
  char *name;
  char *device;            /* "" when none requested */
  const tf_op_def *op;
  tf_graph *graph;
  int n_inputs;
  tf_output *inputs;
  tf_dtype *in_types;
  int n_control;
  tf_node **control;
  int n_attrs;             /* sorted by name */
  char **attr_names;
  tf_attr_value *attrs;
  int n_outputs;
  tf_dtype *out_types;
  tf_shape *out_shapes;
  /* arg k of the op covers inputs [in_start[k], in_start[k+1]) */
  int in_start[TF_OP_MAX_ARGS + 1];
  int out_start[TF_OP_MAX_ARGS + 1];
};

/* One undoable change, logged while a mark is open (algorithm.h). */
typedef struct tf__graph_edit {
  enum { TF__EDIT_USED, TF__EDIT_CONTROL, TF__EDIT_INPUT } kind;
  tf_node *node;        /* CONTROL: gained a control input; INPUT: edited */
  char *key;            /* USED: the key (owned) */
  bool existed;         /* USED: whether key was there before */
  intptr_t old;         /* USED: its counter before */
  int input;            /* INPUT: which data input */
  tf_output old_input;  /* INPUT: what it was */
} tf__graph_edit;

struct tf_graph {
  tf_node **nodes;
  int n_nodes, cap;
  tf__strmap by_name;   /* name -> tf_node* */
  tf__strmap used;      /* names and scopes handed out -> counter */
  char **scopes;        /* stack of full prefixes ending in '/' */
  int n_scopes, cap_scopes;
  int n_marks;          /* marks open (graph.c); edits are logged while > 0 */
  tf__graph_edit *edits;
  int n_edits, cap_edits;
  bool internal;        /* node names may begin with '_' (signature.h) */
  /* While set, each data input given to a node builder is first passed
   * through input_hook (tf_gradients maps the forward values a gradient
   * loop reads to pops of the stacks that saved them: gradients_cf.c). */
  tf_output (*input_hook)(void *arg, tf_output in);
  void *input_hook_arg;
};

/* A graph for the system's own use (a signature's pruned graph, its
 * partitions, a worker's registered partition): as tf_graph_new, but its
 * node names may also begin with '_', which TensorFlow reserves for the
 * nodes the system makes (_Arg, _Retval). Graphs the public API makes
 * refuse such names, so generated names never meet a user's. */
tf_graph *tf__graph_new_internal(void);

/* Appends a finished node (takes ownership). */
void tf__graph_add_node(tf_graph *g, tf_node *n);
void tf__node_free(tf_node *n);
/* Whether output port of n / data input i of n is declared Ref(T): a ref
 * edge carries a resource (resource.h), not a tensor. (graph_build.c) */
bool tf__node_output_is_ref(const tf_node *n, int port);
bool tf__node_input_is_ref(const tf_node *n, int i);

/* Replaces data input i of n by src, an output of a TF_OP_BACK_EDGE node
 * (NextIteration) with the same dtype: how a loop closes its cycle after
 * the body is built. INVALID_ARGUMENT naming both nodes otherwise. The
 * consumer's output shapes are not re-inferred. (graph.c) */
tf_code tf__node_set_back_edge(tf_node *n, int i, tf_output src, tf_status *st);
/* Adds src as a control input of the finished node n (builders tie nodes
 * without inputs to a branch's or loop's pivot). (graph.c) */
void tf__node_add_control(tf_node *n, tf_node *src);

/* Current scope prefix ("" or "a/b/"). */
const char *tf__graph_scope(const tf_graph *g);

#endif
