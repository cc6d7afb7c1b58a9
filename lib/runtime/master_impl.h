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
#include "lib/core/base/workqueue.h"
#include "lib/core/graph/prune.h"
#include "lib/runtime/job_spec.h"
#include "lib/runtime/master.h"
#include "lib/runtime/partition.h"
#include "lib/runtime/placement.h"
#include "lib/transport/messages.h"
#include "lib/runtime/rt_metrics.h"
#include "lib/transport/rpc.h"

/* Jobs (master_jobs.c): active at once, and kept in all. */
#define TF_MS_JOBS_ACTIVE 8
#define TF_MS_JOBS_KEPT 64

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
  bool known;          /* a GetStatus answered or failed at least once */
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
  size_t graph_bytes;  /* msgpack bytes of g's nodes as sent: <= max_message_bytes */
  tf__strmap cache;    /* signature -> ms_prepared */
  /* Where each node with state (a "container" attr: variables, queues,
   * accumulators, readers) lives, from placing the whole graph (name ->
   * device name): every signature puts it there, as TF places the session's
   * graph once. pins_nodes: the graph's size when last placed. */
  tf__strmap pins;
  int pins_nodes;
  bool closed;
  ms_prepared **retired; /* replaced entries (steps may still use them) */
  int n_retired;
  tf__refcount refs;   /* the table's and one per tf__ms_session_get */
  int64_t last_used_ns; /* under the master's mu: the last request on it */
} ms_session;

/* A step in flight (master_run.c): from RunStep's arrival to its reply. */
typedef struct ms_step ms_step;

/* What GetStatus on the master reports (under mu). */
typedef struct ms_counters {
  uint64_t steps_ok, steps_failed, steps_deadline, steps_refused;
  uint64_t sessions_expired, sessions_refused;
} ms_counters;

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
  ms_step **steps;     /* in flight (at most spec->max_steps) */
  int n_steps, cap_steps;
  bool draining;
  bool stopping;       /* tf_master_free began: no new calls to tasks */
  int inflight;        /* async calls to tasks whose callbacks touch m */
  int senders;         /* threads inside tf__ms_send */
  pthread_cond_t inflight_cv; /* inflight or senders fell */
  ms_counters counters;
  pthread_t timer;     /* step deadlines (master_run.c) */
  bool timer_on;
  pthread_cond_t timer_cv; /* a step was added, or the timer must stop */
  tf_cost_model *costs;
  tf_workq *build_q;   /* prunes, places and partitions new signatures */
  pthread_mutex_t jobs_mu; /* the job table (master_jobs.c) */
  struct tf_job *jobs[TF_MS_JOBS_KEPT]; /* oldest first */
  int n_jobs;
  uint64_t job_seq;
  bool draining_jobs;  /* no new jobs */
  int ckpt_waits;      /* JobControl checkpoints waiting for their job (jobs_mu) */
  tf__step_metrics step_metrics; /* Prometheus (rt_metrics.h) */
  tf_metrics_collector *collector;
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

/* Sends msg (taken) to task i without blocking; done runs exactly once
 * (possibly in the caller) and is counted in m->inflight until it
 * returns, so tf_master_free waits for it. Once the master is stopping,
 * done runs at once with UNAVAILABLE. */
void tf__ms_send(tf_master *m, int task, nng_msg *msg, int64_t timeout_ms,
                 tf_rpc_done done, void *arg);
/* tf__ms_send whose reply nobody needs. */
void tf__ms_send_ignore(tf_master *m, int task, nng_msg *msg, int64_t timeout_ms);
/* Waits (up to timeout_ms) until every task's health is known (answered or
 * failed once); a task that is down does not fail this. */
void tf__ms_wait_known(tf_master *m, int64_t timeout_ms);
/* Asks task i for its status without blocking and records the answer;
 * then calls then(arg) (may be NULL). */
void tf__ms_refresh_task_async(tf_master *m, int i, int64_t timeout_ms,
                               void (*then)(void *), void *arg);
/* Frees a session nobody references. */
void tf__ms_session_destroy(ms_session *s);
/* Whether task i is up, with its incarnation. */
bool tf__ms_task_up(tf_master *m, int i, uint64_t *incarnation);
/* UNAVAILABLE "<task> is down (<why>); the step needs it" with the reason
 * health shows (no answer, wrong task at address, ...). Returns st's code. */
tf_code tf__ms_task_down(tf_master *m, int i, tf_status *st);

/* Session table: get adds a reference (FAILED_PRECONDITION/NOT_FOUND when
 * closed or unknown), put drops it. */
ms_session *tf__ms_session_get(tf_master *m, uint64_t handle, tf_status *st);
void tf__ms_session_put(tf_master *m, ms_session *s);
void tf__ms_prepared_free(ms_prepared *p);

nng_msg *tf__ms_create_session(tf_master *m, const tf_wire_msg *req, tf_status *st);
nng_msg *tf__ms_extend_session(tf_master *m, const tf_wire_msg *req, tf_status *st);
nng_msg *tf__ms_close_session(tf_master *m, const tf_wire_msg *req, tf_status *st);
nng_msg *tf__ms_keep_alive(tf_master *m, const tf_wire_msg *req, tf_status *st);
/* Closes sessions not refreshed for session_ttl_ms (from tf_master_tick). */
void tf__ms_expire_sessions(tf_master *m);
/* Marks s closed, aborts its steps and deregisters its partitions (not
 * waited for). s is already out of the table; takes its reference. */
void tf__ms_session_end(tf_master *m, ms_session *s, const char *why);
/* DeregisterGraph of p's partitions (not waited for). */
void tf__ms_deregister(tf_master *m, uint64_t session, const ms_prepared *p);

/* The prepared partitions of sig in s, or NULL with st set. */
typedef void (*tf__ms_prepared_fn)(void *arg, ms_prepared *p, const tf_status *st);
/* Gets sig's prepared partitions from s's cache (done runs in the caller),
 * or builds them on m->build_q (never on the caller's thread, which may be
 * an NNG thread) and registers them on their tasks without blocking; done
 * runs exactly once. The caller holds a reference on s, and sig stays
 * valid until done. */
void tf__ms_prepare(tf_master *m, ms_session *s, const tf__sig *sig,
                    tf__ms_prepared_fn done, void *arg);
/* Drops stale (a task restarted under it) from s's cache if it is still
 * there (kept on the retired list while steps use it) and deregisters its
 * handles on the tasks that did not restart. */
void tf__ms_retire(tf_master *m, ms_session *s, const char *key, ms_prepared *stale);

/* RunStep: answers the call later, from the last completion. */
void tf__ms_run_step(tf_master *m, struct tf_rpc_call *call);
/* Fails steps in flight that use task i (it went down), belong to session
 * (non-zero), or all (task < 0 and session 0), with code and why. */
void tf__ms_abort_steps(tf_master *m, int task, uint64_t session, tf_code code,
                        const char *why);
/* The job methods (master_jobs.c); answered at once. */
nng_msg *tf__ms_submit_job(tf_master *m, const tf_wire_msg *req, tf_status *st);
nng_msg *tf__ms_list_jobs(tf_master *m, const tf_wire_msg *req, tf_status *st);
nng_msg *tf__ms_job_status(tf_master *m, const tf_wire_msg *req, tf_status *st);
nng_msg *tf__ms_job_control(tf_master *m, const tf_wire_msg *req, tf_status *st);
nng_msg *tf__ms_job_logs(tf_master *m, const tf_wire_msg *req, tf_status *st);
/* The job `id`, held (tf_job_hold: the caller releases it) so that it
 * may be used without jobs_mu, or NULL with st NOT_FOUND. */
struct tf_job *tf__ms_job_find_held(tf_master *m, const char *id, tf_status *st);
/* The JobStatus / JobControl reply to req for job j (held, or under
 * jobs_mu) as it is now, with note (NULL: ""). */
nng_msg *tf__ms_job_info_reply(tf_master *m, const tf_wire_msg *req, struct tf_job *j,
                               const char *note, tf_status *st);
/* Checkpoints (master_ckpt.c; answered at once, a checkpoint after a
 * bounded wait): JobControl's "checkpoint" and "restore" (r is the
 * decoded request), and JobCheckpoints. */
nng_msg *tf__ms_job_ckpt_control(tf_master *m, const tf_wire_msg *req,
                                 const tf_msg_job_control_req *r, tf_status *st);
nng_msg *tf__ms_job_checkpoints(tf_master *m, const tf_wire_msg *req, tf_status *st);
/* Per task (m->tasks order) the active jobs using it, "id@step ..." or
 * NULL; free each and the array. */
char **tf__ms_jobs_by_task(tf_master *m);
/* Starts a job from spec (taken in every case) as id ("<name>-<seq>"), or
 * as a new id when id is NULL; records it (master_registry.c); out_id
 * gets the id. */
tf_code tf__ms_start_job(tf_master *m, tf_job_spec *spec, const char *id,
                         uint64_t seq, char *out_id, size_t n, tf_status *st);
/* The registry of resumable jobs (master_registry.c): add at submission
 * (jobs with checkpoints, when the cluster has a checkpoint_dir), remove
 * when a job ends for good, reload (start every recorded job) at start. */
void tf__ms_registry_add(tf_master *m, const char *id, const tf_job_spec *spec);
void tf__ms_registry_remove(tf_master *m, const char *id);
void tf__ms_registry_reload(tf_master *m);
/* Refuses new jobs, suspends those with checkpoints (they checkpoint and
 * end, resumable) and cancels the others, waiting up to timeout_ms for
 * them to end (their threads use the master's server). */
void tf__ms_jobs_stop(tf_master *m, int64_t timeout_ms);
/* Stops (waiting as long as it takes) and frees every job. */
void tf__ms_jobs_free(tf_master *m);
/* Starts and stops the step-deadline thread. */
void tf__ms_timer_start(tf_master *m);
void tf__ms_timer_stop(tf_master *m);

#endif
