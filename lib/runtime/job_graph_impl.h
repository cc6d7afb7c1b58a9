/* job_graph_impl.h: what the two builders of a job's replicated graph
 * share: job_graph.c (from a model section) and job_graph_file.c (from a
 * graph file written with the C API). */
#ifndef TF_RUNTIME_JOB_GRAPH_IMPL_H
#define TF_RUNTIME_JOB_GRAPH_IMPL_H

#include "lib/runtime/job_graph.h"

/* A node op(in) named name with attrs, control inputs and a device (NULL:
 * none) added to g; NULL (st set) on error, and nothing is added when st
 * already holds one (builders chain calls and check once). */
tf_node *tf__job_node(tf_graph *g, const char *op, const char *name,
                      const tf_output *in, int n, const tf_attr_kv *a, int na,
                      tf_node *const *ctl, int nc, const char *device,
                      tf_status *st);

/* Every node of g gets an explicit device, so that a replica's step
 * touches only its worker and the ps tasks (a stopped worker must not
 * hold up the others): nodes joined by ref edges to a placed node go there
 * (an optimizer's slots beside their variable); other resources go to
 * ps0; the rest of what replica r built (ranges[r]: [first, end) node ids)
 * goes to worker_devices[r]; everything else (the chief's update, init)
 * to ps0. Nodes that already have a device keep it. */
void tf__job_pin_devices(tf_graph *g, int (*ranges)[2], int workers,
                         const char *const *worker_devices, const char *ps0);

/* Puts every stateful resource of g (variables, queues, accumulators,
 * readers: the ops with a "container" attr) in container c. */
void tf__job_set_container(tf_graph *g, const char *c);

/* Builds jg (allocated by tf_job_graph_build: train, loss, inputs and keep
 * sized for o->workers) from s's graph file (job_graph.h). */
tf_code tf__job_graph_from_file(const tf_job_spec *s, const tf_job_graph_options *o,
                                tf_job_graph *jg, tf_status *st);

/* Adds the checkpoint nodes of jg (job_graph.h: save, restore, resync,
 * shard_files, shard_feeds) for every VariableV2 of jg->g but the sync
 * replicas' local steps, grouped by the task in the variable's device
 * (every node has one: tf__job_pin_devices). Builder errors pass
 * through. */
tf_code tf__job_graph_add_checkpoint(tf_job_graph *jg, tf_status *st);

#endif
