/* job_graph.h: the whole training graph of a job spec's model section (or
 * of its graph file: job_graph_file.c, async only), replicated in-graph
 * over worker tasks (whitepaper §4.4, §7; OSDI 2016
 * §4.4): the variables on ps tasks, one replica of the model per worker
 * reading its own shard of the input with its own pipeline on that
 * worker, and the replication mode built from graph ops:
 *
 * async  replica i's target `replica_i/train` applies its own gradients
 *        to the shared variables and adds 1 to global_step.
 * sync   each variable has a ConditionalAccumulator (MEAN) beside it on
 *        its ps task and each replica a token queue (a FIFOQueue of int64
 *        on the first ps task). `replica_i/train` applies replica i's
 *        gradients to the accumulators, tagged with its local step (the
 *        global step its variables were read at), then takes a token from
 *        its queue and sets its local step to the global step now. The
 *        chief's target `sync/update` takes the mean of the first
 *        `workers - backup_workers` gradients of the current step from
 *        every accumulator (a gradient tagged with an older step is
 *        dropped by the accumulator: a late backup worker's gradient is
 *        never applied to a newer version), applies it once, adds 1 to
 *        global_step and puts one token (the new global step) into every
 *        replica's queue. A replica's step thus blocks until the update
 *        of the gradients it sent, and every replica reads the same
 *        version. `sync/close` closes the token queues.
 *
 * Names (beyond job_model.h's, with replica prefix "replica_<i>/"):
 *   replica_<i>/train, replica_<i>/loss     a replica's target and loss
 *   replica_<i>/local_step                  sync: its local step (int64)
 *   replica_<i>/input/...                   its input pipeline
 *   sync/acc/<var>, sync/token_<i>          accumulators, token queues
 *   sync/update, sync/global_step, sync/close
 *   eval/images, eval/labels                placeholders of the eval replica
 *   eval/loss, eval/<metric>                (prefix "eval/", dropout off)
 *   global_step, init
 *   checkpoint/save, checkpoint/restore     every shard's SaveV2 / RestoreV2
 *   checkpoint/prefix_<k>                   shard k's path (string feed)
 *   checkpoint/resync                       sync: local steps and
 *                                           accumulators := global step
 */
#ifndef TF_RUNTIME_JOB_GRAPH_H
#define TF_RUNTIME_JOB_GRAPH_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/runtime/job_spec.h"
#include "tf/graph.h"
#include "tf/input.h"
#include "tf/status.h"

/* Where the parts go: full device names. */
typedef struct tf_job_graph_options {
  int workers;                        /* replicas (>= 1) */
  const char *const *worker_devices;  /* [workers] */
  int n_ps;                           /* >= 1 */
  const char *const *ps_devices;      /* [n_ps]: variables, accumulators */
  const char *eval_device;            /* the eval replica; NULL: worker 0 */
  const char *container;              /* every resource's container (the
                                       * job id: jobs never share state);
                                       * NULL: the default "" */
} tf_job_graph_options;

typedef struct tf_job_graph {
  tf_graph *g;
  int workers;
  bool sync;
  int required;         /* sync: gradients aggregated per step */
  char **train;         /* [workers] targets */
  char **loss;          /* [workers] fetches (scalar, the model's dtype) */
  char *update;         /* sync: the chief's target; NULL for async */
  char *update_step;    /* sync: the global step after update (fetch) */
  char *close;          /* sync: closes the token queues */
  char *init;           /* initializes every variable */
  char *global_step;    /* fetch: int64 */
  tf_input_pipeline **inputs; /* [workers] (start them on the session) */
  char *eval_images, *eval_labels; /* feeds: [n] + input shape, int32 [n] */
  char *eval_loss;
  int n_eval_metrics;
  char **eval_metrics;  /* fetches */
  char **metric_names;  /* "accuracy" */
  char **var_devices;   /* [n_vars]: where each variable went */
  int n_vars;
  void **keep;          /* [workers] the pipelines' file lists */
  /* Checkpoints (docs/checkpoint.md): one shard per task holding
   * variables. Run `save` or `restore` feeding shard_feeds[k] the path of
   * shard k (a string scalar: <checkpoint>/<shard_files[k]>). */
  int n_shards;
  char **shard_files;   /* [n_shards] "ps-0.shard" */
  char **shard_feeds;   /* [n_shards] placeholders */
  char *save, *restore; /* targets */
  char *resync;         /* sync: run after restore; NULL for async */
} tf_job_graph;

/* Builds s's training graph (s->has_model and s->input.present, else
 * INVALID_ARGUMENT) for o. Variables are spread over the ps devices by
 * s->replication.placement (round robin in creation order, or balanced:
 * the largest first onto the task with the fewest bytes so far), global
 * step and token queues on ps 0. Errors of the builders pass through,
 * prefixed with the spec's path. */
tf_code tf_job_graph_build(const tf_job_spec *s, const tf_job_graph_options *o,
                           tf_job_graph **out, tf_status *st);
void tf_job_graph_free(tf_job_graph *jg); /* NULL-safe; frees the graph */

/* The input pipeline options of worker `worker` from s's input section
 * (its files and seed per the shard policy, images decoded to the
 * model's input dtype and shape, labels to int32), built into g under
 * `name`. The sources and file lists live in *keep (free with free()). */
tf_input_pipeline *tf_job_input_new(const tf_job_spec *s, int worker,
                                    tf_graph *g, const char *name,
                                    void **keep, tf_status *st);

#endif
