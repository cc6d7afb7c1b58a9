/* job_model.h: a job spec's model section built into a graph with the
 * layer and optimizer builders (tf/layers.h, tf/train.h), in the pieces
 * in-graph replication needs: the variables once (the caller places them,
 * e.g. on ps tasks), then one replica of the model's ops per worker (each
 * under its own name prefix and device, all reading the same variables),
 * then the optimizer's update and the init target.
 *
 * Stable names, with V the variables' prefix and P a replica's (each "" or
 * ending in '/', e.g. "replica_1/"):
 *   V<layer>/kernel, V<layer>/bias      dense and conv2d (VariableV2)
 *   V<layer>/embeddings                 embedding
 *   P<layer>/MatMul, P<layer>/Conv2D, P<layer>/BiasAdd, P<layer>/Relu, ...
 *   P<layer>/...                        the layer's other ops
 *   Pimages                             the images reshaped to the model's
 *                                       input shape (only when they differ)
 *   Plabels_one_hot                     softmax_cross_entropy on class ids
 *   Plogits, Ploss, Paccuracy           Identity nodes: fetch these
 *   <init name>                         tf_job_init_op's NoOp
 *   global_step                         tf_global_step's variable
 * where <layer> is the spec's layer name ("dense", "dense_1", ... by
 * default). The optimizer's slots are named by train.h
 * ("V<layer>/kernel/Adam"). */
#ifndef TF_RUNTIME_JOB_MODEL_H
#define TF_RUNTIME_JOB_MODEL_H

#include <stdbool.h>

#include "lib/runtime/job_spec.h"
#include "tf/graph.h"
#include "tf/status.h"
#include "tf/train.h"

typedef struct tf_job_vars tf_job_vars;

/* Creates the variables of s's model section (s->has_model) in g under
 * prefix (NULL or "": none; else it must end in '/'), each with its
 * initializer, in layer order (kernel before bias), seeded by
 * model.seed. No device is set: see tf_job_vars_set_device. Errors of the
 * builders pass through (ALREADY_EXISTS when a name is taken). */
tf_code tf_job_vars_new(const tf_job_spec *s, tf_graph *g, const char *prefix,
                        tf_job_vars **out, tf_status *st);
void tf_job_vars_free(tf_job_vars *v); /* NULL-safe; the nodes stay */

int tf_job_vars_count(const tf_job_vars *v);
/* Variable i: name ("dense/kernel"), ref output, shape, dtype. */
const tf_layer_var *tf_job_vars_at(const tf_job_vars *v, int i);
/* Its size in bytes (for placement balanced by bytes). */
int64_t tf_job_vars_bytes(const tf_job_vars *v, int i);
/* The ref outputs of all variables, in order (count tf_job_vars_count):
 * the xs of tf_gradients and the vars of tf_job_apply_gradients. */
const tf_output *tf_job_vars_refs(const tf_job_vars *v);
/* Places variable i with its initializer nodes and Assign on device (a
 * full device name, e.g. "/job:ps/replica:0/task:0/device:CPU:0"). */
void tf_job_vars_set_device(tf_job_vars *v, int i, const char *device);

/* One replica's outputs (nodes in the graph). */
typedef struct tf_job_replica {
  tf_output logits;                 /* Plogits [batch, classes] */
  tf_output loss;                   /* Ploss, scalar mean over the batch */
  int n_metrics;
  tf_output metrics[TF_JOB_METRICS_MAX];          /* e.g. Paccuracy */
  const char *metric_names[TF_JOB_METRICS_MAX];   /* "accuracy" */
  int n_vars;                       /* the variables it reads: */
  const tf_output *vars;            /* tf_job_vars_refs(v) */
} tf_job_replica;

/* Builds the model's ops on v's variables under prefix (NULL or "", or
 * ending in '/') with every new node on device (NULL or "": none).
 * images: [batch] + model.input.shape of model.input.dtype, or any shape
 * with that many elements per example (reshaped); labels: class ids
 * [batch] (int32/int64) or, for softmax_cross_entropy, also one-hot rows
 * [batch, classes] of the logits' dtype. training false builds dropout as
 * the identity (an evaluation replica). INVALID_ARGUMENT naming the
 * input for a wrong dtype or shape; on error the graph may hold the nodes
 * added so far. */
tf_code tf_job_replica_build(const tf_job_spec *s, const tf_job_vars *v,
                             tf_graph *g, const char *prefix,
                             const char *device, tf_output images,
                             tf_output labels, bool training,
                             tf_job_replica *out, tf_status *st);

/* The optimizer of s's optimizer section, with its learning-rate schedule
 * built on global_step (needed when the spec has a schedule) under scope
 * "learning_rate/". Free it with tf_optimizer_free after its last use. */
tf_code tf_job_optimizer_new(const tf_job_spec *s, tf_graph *g,
                             tf_output global_step, tf_optimizer **out,
                             tf_status *st);

/* The update of vars[i] by grads[i] (i < n) by o, clipped first by global
 * norm when the spec says clip_norm, as one target `name` that also adds
 * 1 to global_step (when its node is set). tf_optimizer_apply_gradients
 * says the rest. */
tf_node *tf_job_apply_gradients(const tf_job_spec *s, tf_optimizer *o,
                                tf_graph *g, const tf_output *vars,
                                const tf_grad *grads, int n,
                                tf_output global_step, const char *name,
                                tf_status *st);
/* The gradients of loss with respect to vars (sparse for embeddings),
 * then tf_job_apply_gradients; no update starts before every gradient is
 * computed (tf_optimizer_minimize's gate, or the clipping's global norm). */
tf_node *tf_job_minimize(const tf_job_spec *s, tf_optimizer *o, tf_graph *g,
                         tf_output loss, const tf_output *vars, int n,
                         tf_output global_step, const char *name,
                         tf_status *st);

/* Sets the requested device of nodes [from, to) of g (ids, e.g. from
 * tf_graph_num_nodes before and after building them); NULL or "": none. */
void tf_job_set_devices(tf_graph *g, int from, int to, const char *device);

/* The NoOp `name` (NULL: "init") that initializes every variable of g,
 * the optimizer's slots and global_step included: build it last. */
tf_node *tf_job_init_op(tf_graph *g, const char *name, tf_status *st);

#endif
