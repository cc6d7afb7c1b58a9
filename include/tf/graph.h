/* graph.h: dataflow graphs.
 *
 * A graph owns its nodes. Each node has a unique name, an op type, attrs,
 * data inputs (an output of another node: "name:port"), control inputs
 * ("^name"), a requested device (a partial spec like "/job:ps") and
 * optional colocation ("loc:@name" entries in the "_class" attr).
 *
 * Nodes are added with a builder: tf_node_begin, then inputs and attrs, then
 * tf_node_finish, which validates against the op registry (arity, dtypes,
 * attrs with defaults filled in), infers output dtypes and shapes, and on
 * error returns NULL with a status naming node and op. Graphs are not
 * thread-safe for writing; concurrent readers of a finished graph are fine. */
#ifndef TF_GRAPH_H
#define TF_GRAPH_H

#include <stdbool.h>
#include <stdint.h>

#include "tf/export.h"
#include "tf/attr.h"
#include "tf/status.h"
#include "tf/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tf_graph tf_graph;
typedef struct tf_node tf_node;
typedef struct tf_node_builder tf_node_builder;

/* One output of a node: the edge "name:index". */
typedef struct tf_output {
  tf_node *node;
  int index;
} tf_output;

TF_API tf_graph *tf_graph_new(void);
TF_API void tf_graph_free(tf_graph *g); /* NULL-safe; frees every node */

TF_API int tf_graph_num_nodes(const tf_graph *g);
/* Nodes in insertion order; i in [0, num_nodes). */
TF_API tf_node *tf_graph_node(const tf_graph *g, int i);
TF_API tf_node *tf_graph_find(const tf_graph *g, const char *name);
/* Parses "name", "name:3"; NOT_FOUND/INVALID_ARGUMENT naming the string. */
TF_API tf_code tf_graph_find_output(const tf_graph *g, const char *edge,
                                    tf_output *out, tf_status *st);

/* Name scopes: names given to tf_node_begin are prefixed "scope/". Scopes
 * nest; a pushed scope is made unique ("dense", "dense_1") unless it ends
 * in '/', which reuses it exactly. */
TF_API void tf_graph_push_scope(tf_graph *g, const char *scope);
TF_API void tf_graph_pop_scope(tf_graph *g);
/* A fresh name "base", "base_1", ... under the current scope. */
TF_API const char *tf_graph_unique_name(tf_graph *g, const char *base,
                                        char *buf, size_t size);

/* Starts a node of op type `op` named `name` (NULL: the op type, uniqued).
 * An explicit name under the current scope that already exists is an error
 * at finish (ALREADY_EXISTS). Never fails here. */
TF_API tf_node_builder *tf_node_begin(tf_graph *g, const char *op,
                                      const char *name);
TF_API void tf_node_add_input(tf_node_builder *b, tf_output in);
/* Adds a list argument (e.g. AddN's inputs, Concat's values). */
TF_API void tf_node_add_input_list(tf_node_builder *b, const tf_output *in,
                                   int n);
TF_API void tf_node_add_control_input(tf_node_builder *b, tf_node *n);
TF_API void tf_node_set_attr(tf_node_builder *b, const char *name,
                             tf_attr_value v);
TF_API void tf_node_set_device(tf_node_builder *b, const char *device);
TF_API void tf_node_colocate_with(tf_node_builder *b, const tf_node *n);
/* Validates and adds the node; frees b in every case. NULL on error. */
TF_API tf_node *tf_node_finish(tf_node_builder *b, tf_status *st);
/* Frees an unfinished builder. NULL-safe. */
TF_API void tf_node_abandon(tf_node_builder *b);

/* Accessors. Strings and arrays are owned by the graph. */
TF_API const char *tf_node_name(const tf_node *n);
TF_API const char *tf_node_op(const tf_node *n);
TF_API const char *tf_node_device(const tf_node *n); /* "" if none requested */
TF_API int tf_node_id(const tf_node *n);             /* index in the graph */
TF_API int tf_node_num_inputs(const tf_node *n);
TF_API tf_output tf_node_input(const tf_node *n, int i);
TF_API int tf_node_num_control_inputs(const tf_node *n);
TF_API tf_node *tf_node_control_input(const tf_node *n, int i);
TF_API int tf_node_num_outputs(const tf_node *n);
TF_API tf_dtype tf_node_output_type(const tf_node *n, int i);
TF_API tf_dtype tf_node_input_type(const tf_node *n, int i);
/* Inferred output shape (may be partially unknown). */
TF_API const tf_shape *tf_node_output_shape(const tf_node *n, int i);
/* Input index range [*start, *start + *count) of the op's argument named
 * arg; false if the op has no such input argument. */
TF_API bool tf_node_input_range(const tf_node *n, const char *arg, int *start,
                                int *count);
TF_API bool tf_node_output_range(const tf_node *n, const char *arg, int *start,
                                 int *count);

TF_API int tf_node_num_attrs(const tf_node *n);
/* i-th attr in name order. */
TF_API const char *tf_node_attr_name(const tf_node *n, int i);
TF_API const tf_attr_value *tf_node_attr_at(const tf_node *n, int i);
/* NULL if absent. */
TF_API const tf_attr_value *tf_node_attr(const tf_node *n, const char *name);
/* Typed getters: INVALID_ARGUMENT naming node and attr if absent or of
 * another type. */
TF_API tf_code tf_node_attr_get_int(const tf_node *n, const char *name,
                                    int64_t *v, tf_status *st);
TF_API tf_code tf_node_attr_get_float(const tf_node *n, const char *name,
                                      double *v, tf_status *st);
TF_API tf_code tf_node_attr_get_bool(const tf_node *n, const char *name,
                                     bool *v, tf_status *st);
TF_API tf_code tf_node_attr_get_type(const tf_node *n, const char *name,
                                     tf_dtype *v, tf_status *st);
TF_API tf_code tf_node_attr_get_string(const tf_node *n, const char *name,
                                       const char **v, tf_status *st);
TF_API tf_code tf_node_attr_get_shape(const tf_node *n, const char *name,
                                      tf_shape *v, tf_status *st);
TF_API tf_code tf_node_attr_get_tensor(const tf_node *n, const char *name,
                                       tf_tensor **v, tf_status *st);
/* List getters: *v points into the graph, *count gets the length. */
TF_API tf_code tf_node_attr_get_int_list(const tf_node *n, const char *name,
                                         const int64_t **v, int *count,
                                         tf_status *st);

/* Name-based node description, the form graphs take on disk and the wire
 * (like TF's NodeDef). inputs are "src", "src:port" or "^src". */
typedef struct tf_node_def {
  const char *name;
  const char *op;
  const char *device; /* NULL or "" for none */
  int n_inputs;
  const char *const *inputs;
  int n_attrs;
  const tf_attr_kv *attrs;
} tf_node_def;

/* Adds the nodes described by defs to g in one batch: names may refer to
 * nodes already in g or anywhere in the batch (cycles allowed only through
 * NextIteration). The new nodes get ids in a topological order (edges out
 * of NextIteration aside): each def's position when the defs are already
 * in one, else producers first with ties going to the earlier def. Attrs
 * absent from a def get the op's defaults. On error
 * nothing is added and the status names the node and what was wrong
 * (unknown op, unknown input, wrong arity or dtype, missing attr,
 * duplicate name, cycle). */
TF_API tf_code tf_graph_import(tf_graph *g, const tf_node_def *defs, int n,
                               tf_status *st);

/* Checks the whole graph: every cycle passes through a NextIteration node.
 * INVALID_ARGUMENT naming a node on the cycle otherwise. */
TF_API tf_code tf_graph_validate(const tf_graph *g, tf_status *st);

/* The node's def as borrowed views into the graph, valid until the graph
 * changes. inputs written to buf (an array of n_inputs + n_control string
 * slots the caller frees with tf_node_def_fini). */
TF_API void tf_node_to_def(const tf_node *n, tf_node_def *def);
TF_API void tf_node_def_fini(tf_node_def *def);

#ifdef __cplusplus
}
#endif

#endif
