/* session.h: run a graph in this process (the embedded default).
 *
 * A session holds its own copy of a graph, the state that outlives steps
 * (variables and queues, in containers) and a cache of prepared executors.
 * Run feeds any edge ("name:port" -> tensor), fetches any edge and runs
 * target nodes; only the nodes that the fetches and targets need are run
 * (whitepaper §4.2: fed edges cut the graph), and the pruned, prepared
 * executor is cached per (feeds, fetches, targets) signature, so every
 * later Run with that signature only executes. Several threads may call
 * Run on one session at once (OSDI §3.2); each call is one step.
 *
 * Names: "node:port", or "node" for port 0. Targets are node names
 * ("node" or "^node"). */
#ifndef TF_SESSION_H
#define TF_SESSION_H

#include <stdbool.h>
#include <stdint.h>

#include "tf/export.h"
#include "tf/graph.h"
#include "tf/status.h"
#include "tf/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tf_session tf_session;

typedef struct tf_session_options {
  /* Threads that run graph nodes. 0: TF_NUM_INTEROP_THREADS from the
   * environment, else the number of online CPUs. 1: every node runs in the
   * calling thread (and async completions in the completing thread). */
  int inter_op_threads;
  /* NULL or "": run in this process. Otherwise the URL of a tfmaster
   * ("tcp://host:port"): the graph is sent to the master (new nodes on
   * every extend and Run), and Run, Reset and Close have the same
   * semantics as locally, with the cluster's devices and its variables.
   * A cluster with authentication (docs/security.md) needs a key: the
   * file named by the environment variable TF_KEY_FILE signs every
   * request (a client key, or the cluster key). */
  const char *target;
  /* A remote target: the deadline of each control call (CreateSession,
   * which the master may hold up to the spec's registration_ms while
   * tasks register; ExtendSession; Reset; CloseSession), in ms. 0: 60000.
   * Steps have their own (tf_run_options.timeout_ms). */
  int64_t rpc_timeout_ms;
} tf_session_options;

typedef struct tf_run_options {
  int64_t timeout_ms; /* 0: no deadline; else DEADLINE_EXCEEDED after it */
  bool trace;         /* fill the metadata's per-node timings */
} tf_run_options;

/* One node's execution in a traced Run. */
typedef struct tf_node_timing {
  const char *node;  /* the node's name (valid until the session is freed) */
  const char *op;
  int64_t frame_id;  /* 0: outside any loop */
  int64_t iter;      /* iteration within the frame */
  int64_t start_ns;  /* CLOCK_MONOTONIC */
  int64_t end_ns;
  int thread;        /* small per-process thread number */
} tf_node_timing;

typedef struct tf_run_metadata {
  tf_node_timing *timings; /* n_timings entries, in completion order */
  int n_timings;
} tf_run_metadata;

/* Frees the metadata's arrays (NULL-safe) and zeroes it. */
TF_API void tf_run_metadata_fini(tf_run_metadata *m);

/* A session on a copy of g's nodes (g may be NULL: an empty graph). The
 * session remembers g: nodes added to g later are picked up by
 * tf_session_extend and, automatically, by Run, so g must outlive the
 * session unless it was NULL (as in TensorFlow's C API). opts may be NULL
 * (defaults). */
TF_API tf_session *tf_session_new(tf_graph *g, const tf_session_options *opts,
                                  tf_status *st);

/* Adds the nodes appended to the session's graph since the last extend.
 * A node already in the session may not change. */
TF_API tf_code tf_session_extend(tf_session *s, tf_status *st);
/* Adds nodes given as definitions (what a remote client sends). Names must
 * be new; inputs may name nodes already in the session. */
TF_API tf_code tf_session_extend_defs(tf_session *s, const tf_node_def *defs,
                                      int n, tf_status *st);

/* Runs one step. Feeds are fed_names[i] -> feed_values[i] (borrowed; the
 * tensors are never written). fetch_values[i] receives a new reference for
 * fetch_names[i]. opts and meta may be NULL. Errors name the node or feed:
 * an unknown name (NOT_FOUND), a feed of the wrong dtype or shape
 * (INVALID_ARGUMENT), a fetch on an untaken branch (INVALID_ARGUMENT), a
 * kernel's error, DEADLINE_EXCEEDED past opts->timeout_ms, CANCELLED when
 * the session is closed meanwhile. On error no fetch is returned (all
 * NULL) and the session stays usable. */
TF_API tf_code tf_session_run(tf_session *s, const tf_run_options *opts,
                              const char *const *feed_names,
                              tf_tensor *const *feed_values, int n_feeds,
                              const char *const *fetch_names,
                              tf_tensor **fetch_values, int n_fetches,
                              const char *const *target_names, int n_targets,
                              tf_run_metadata *meta, tf_status *st);

/* Drops the variables and queues of the named containers ("" is the
 * default container; n == 0 resets the default container). Queues are
 * closed first, so steps blocked on them end. */
TF_API tf_code tf_session_reset(tf_session *s, const char *const *containers,
                                int n, tf_status *st);

/* Cancels running steps (CANCELLED "session closed"), waits for them and
 * closes queues; later Runs fail with FAILED_PRECONDITION. Idempotent. */
TF_API tf_code tf_session_close(tf_session *s, tf_status *st);
/* Closes (if needed) and frees. NULL-safe. */
TF_API void tf_session_free(tf_session *s);

/* The session's own graph (read-only; valid until the next extend). */
TF_API const tf_graph *tf_session_graph(const tf_session *s);
/* Number of executors in the signature cache (for tests and tools). */
TF_API int tf_session_cache_size(tf_session *s);

#ifdef __cplusplus
}
#endif

#endif
