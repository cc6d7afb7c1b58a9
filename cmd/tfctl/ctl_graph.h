/* ctl_graph.h: what `tfctl graph` and `tfctl run` print: a graph as
 * Graphviz dot (optionally clustered by placed device), a graph as YAML
 * with placed devices written into it, a tensor as a one-line summary,
 * and fetch names turned into file names. */
#ifndef TF_RUNTIME_CTL_GRAPH_H
#define TF_RUNTIME_CTL_GRAPH_H

#include <stddef.h>

#include "tf/graph.h"
#include "tf/status.h"
#include "tf/tensor.h"

/* Graphviz dot text (malloc'd): one box per node labelled "name\nop",
 * data edges solid (labelled ":port" for ports > 0), control edges dashed.
 * devices: NULL, or one device name per node id; nodes are then grouped
 * in one "cluster" subgraph per device (labelled with the device). */
char *tf_ctl_graph_dot(const tf_graph *g, const char *const *devices);

/* YAML of g (tf_graph_to_yaml) in which node i's device is devices[i]
 * (devices NULL: g's own). *text is malloc'd. */
tf_code tf_ctl_graph_yaml(const tf_graph *g, const char *const *devices,
                          char **text, tf_status *st);

/* "float32 [2,3] 1 2 3 4 5 6": dtype, shape and the first max_values
 * values ("..." when there are more); returns buf. */
char *tf_ctl_tensor_summary(const tf_tensor *t, int max_values, char *buf,
                            size_t size);

/* The fetch name with ':' and '/' replaced by '_' and ".npy" appended
 * ("layer/out:0" -> "layer_out_0.npy"); returns buf. */
char *tf_ctl_fetch_file_name(const char *fetch, char *buf, size_t size);

#endif
