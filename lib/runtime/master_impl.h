/* master_impl.h: the master's state, shared by master.c (lifecycle, task
 * health, small methods), master_session.c (sessions) and master_step.c
 * (building and running steps). */
#ifndef TF_RUNTIME_MASTER_IMPL_H
#define TF_RUNTIME_MASTER_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "lib/core/base/refcount.h"
#include "lib/core/base/strmap.h"
#include "lib/core/graph/prune.h"
#include "lib/runtime/master.h"
#include "lib/runtime/partition.h"
#include "lib/runtime/placement.h"
#include "lib/transport/messages.h"
#include "lib/transport/rpc.h"

/* One task of the spec other than the master, as health checks see it. */
typedef struct ms_task {
  char *job;
  int task;
  char *prefix;   /* "/job:J/replica:0/task:T" */
  char *device;   /* prefix + "/device:CPU:0" */
  char *url;
  tf_rpc_client *client;
  /* under the master's mu: */
  bool up;
  bool ever_up;
  bool checking;       /* a GetStatus is in flight */
  uint64_t incarnation;
  int64_t last_ok_ns;  /* 0: never */
  int64_t last_try_ns;
  char *error;         /* the last failure, or NULL */
} ms_task;

/* A signature's partitions, registered on their tasks. */
typedef struct ms_part {
  int task;            /* index into m->tasks */
  uint64_t handle;
  uint64_t incarnation; /* of the task at registration */
  int n_args, *arg_feed;
  int n_rets, *ret_fetch;
} ms_part;

typedef struct ms_prepared {
  int n_feeds;         /* the signature's sorted canonical names (signature.h) */
  char **feeds;
  tf_dtype *feed_types;
  int n_fetches;
  char **fetches;
  int n_parts;
  ms_part *parts;
  _Atomic bool traced; /* the first run was traced for the cost model */
} ms_prepared;

typedef struct ms_session {
  uint64_t handle;
  pthread_mutex_t mu;  /* graph and cache */
  tf_graph *g;
  tf__strmap cache;    /* signature -> ms_prepared */
  bool closed;
  ms_prepared **retired; /* replaced entries (steps may still use them) */
  int n_retired;
  tf__refcount refs;   /* the table's and one per tf__ms_session_get */
  int64_t last_used_ns;
} ms_session;

/* A running step (for health aborts): the tasks it uses. */
typedef struct ms_step ms_step;

struct tf_master {
  const tf_cluster_spec *spec;
  tf_rpc_server *srv;
  char *url;
  uint64_t incarnation; /* random per start */
  pthread_mutex_t mu;
  pthread_cond_t idle_cv;
  ms_task *tasks;
  int n_tasks;
  tf__strmap sessions; /* "%016llx" -> ms_session */
  int n_sessions;
  ms_step **steps;     /* running */
  int n_steps, cap_steps;
  bool draining;
  tf_cost_model *costs;
};

/* A writer for the OK reply to req, from the master (its task name and
 * incarnation in the header). */
tf_wire_writer *tf__ms_reply_writer(const tf_master *m, const tf_wire_msg *req);
/* A reply with a nil body. */
nng_msg *tf__ms_empty_reply(const tf_master *m, const tf_wire_msg *req, tf_status *st);
/* A new request header for method to task (an index into m->tasks): from
 * the master (name and incarnation) to the task's name and the
 * incarnation it was last seen with (0: never seen). Takes m->mu, which
 * the caller must not hold; the strings live as long as m. */
tf_wire_header tf__ms_header(tf_master *m, int task, int method, uint64_t session,
                             uint64_t step, int64_t deadline_ms);

/* Waits (up to timeout_ms) until every task answered GetStatus; else
 * UNAVAILABLE naming the tasks that did not. */
tf_code tf__ms_wait_tasks(tf_master *m, int64_t timeout_ms, tf_status *st);
/* Asks task i for its status now (up to timeout_ms) and records it. */
void tf__ms_refresh_task(tf_master *m, int i, int64_t timeout_ms);
/* Frees a session nobody references. */
void tf__ms_session_destroy(ms_session *s);
/* Whether task i is up, with its incarnation. */
bool tf__ms_task_up(tf_master *m, int i, uint64_t *incarnation);

/* Session table: get adds a reference (FAILED_PRECONDITION/NOT_FOUND when
 * closed or unknown), put drops it. */
ms_session *tf__ms_session_get(tf_master *m, uint64_t handle, tf_status *st);
void tf__ms_session_put(tf_master *m, ms_session *s);
void tf__ms_prepared_free(ms_prepared *p);

nng_msg *tf__ms_create_session(tf_master *m, const tf_wire_msg *req, tf_status *st);
nng_msg *tf__ms_extend_session(tf_master *m, const tf_wire_msg *req, tf_status *st);
nng_msg *tf__ms_close_session(tf_master *m, const tf_wire_msg *req, tf_status *st);
nng_msg *tf__ms_run_step(tf_master *m, const tf_wire_msg *req, tf_status *st);
/* Runs one step of p: feeds[k] is the tensor for p->feeds[k]; fills
 * fetched[k] (new references) for p->fetches[k]. deadline_ms 0: none. */
tf_code tf__ms_run_partitions(tf_master *m, ms_session *s, ms_prepared *p,
                              tf_tensor **feeds, int64_t deadline_ms,
                              bool trace, tf_tensor **fetched, tf_status *st);
/* Fails running steps that use task i (it went down). */
void tf__ms_abort_steps_on(tf_master *m, int task, const char *why);

#endif
