/* igraph.h: graphs and raw calls the daemon tests share: a cross-task
 * step, a step that blocks on empty queues on both workers, chains of N
 * nodes, and requests sent straight to a task (GetStatus counters,
 * TensorPush, RegisterGraph) the way a peer or an attacker would. */
#ifndef TF_TEST_INTEGRATION_IGRAPH_H
#define TF_TEST_INTEGRATION_IGRAPH_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/transport/messages.h"
#include "tf/graph.h"
#include "tf/session.h"

/* Adds a node (aborting the test on error). kv may be NULL. */
tf_node *ig_node(tf_graph *g, const char *op, const char *name, const char *device,
                 const tf_output *in, int n_in, const tf_attr_kv *kv, int n_kv);
tf_output ig_out(tf_node *n);

/* x (fed float32 [n]) -> y = Neg(x) on /job:worker/task:0 -> z = Mul(y, x)
 * on /job:worker/task:1; fetch "z" = -x*x. */
tf_graph *ig_cross_graph(void);
/* Runs the cross graph once on s with x = [1..n] and checks z exactly. */
tf_code ig_run_cross(tf_session *s, int64_t timeout_ms, tf_status *st);

/* Each worker task dequeues from its own empty FIFOQueue ("q0", "q1");
 * "sum" = Add(deq0, deq1) on worker 1. Fetching "sum" blocks on both. */
tf_graph *ig_blocking_graph(void);

/* A graph of n working nodes on device, fetched as "last": blocking, a
 * FIFOQueue, its QueueDequeue and n - 1 Identity nodes after it (the step
 * waits on the empty queue); else a dim x dim Const and a chain of n
 * MatMuls of it (each multiplies by the Const scaled to keep values
 * finite). */
tf_graph *ig_chain_graph(int n, const char *device, int blocking, int dim);

/* A session on the master at url (aborts the test on error). */
tf_session *ig_remote(const char *url, tf_graph *g, tf_status *st);

/* A synchronous call to the task at url: req_hdr's method, to, from;
 * body written by enc(w, arg) (NULL: nil body). The reply (free with
 * tf_wire_msg_free) or NULL and st. */
typedef void (*ig_body_fn)(tf_wire_writer *w, const void *arg);
tf_code ig_call(const char *url, const tf_wire_header *h, ig_body_fn enc, const void *arg,
                int64_t timeout_ms, tf_wire_msg **reply, tf_status *st);

/* GetStatus counters of the task at url (decoded reply; fini it). */
tf_code ig_status(const char *url, tf_msg_get_status_reply *out, tf_wire_msg **keep,
                  tf_status *st);

/* Whether the master's health (ClusterStatus) shows every task of c up
 * within ms. */
struct th_cluster;
bool ig_master_sees_all_up(struct th_cluster *c, int64_t ms);

/* A TCP connection to port on 127.0.0.1 that has done NNG's SP handshake
 * as a req0 peer (-1 if the server closed it or did not answer within
 * 3 s). */
int ig_sp_connect(int port);
/* Writes a frame header declaring `declared` bytes and 4 of them. */
bool ig_send_frame_start(int fd, uint64_t declared);
/* Whether the peer closes fd within ms. */
bool ig_closed_within(int fd, int ms);

#endif
