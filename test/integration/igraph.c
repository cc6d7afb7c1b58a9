/* igraph.c: the daemon tests' graphs and raw calls (igraph.h). */
#include "test/integration/igraph.h"

#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/tfctl/ctl_client.h"
#include "cmd/tfctl/ctl_procs.h"
#include "lib/transport/rpc.h"
#include "test/integration/harness.h"
#include "test/unit/testutil.h"

tf_node *ig_node(tf_graph *g, const char *op, const char *name, const char *device,
                 const tf_output *in, int n_in, const tf_attr_kv *kv, int n_kv) {
  tf_status st;
  tf_node_builder *b = tf_node_begin(g, op, name);
  for (int i = 0; i < n_in; i++) {
    tf_node_add_input(b, in[i]);
  }
  for (int i = 0; i < n_kv; i++) {
    tf_node_set_attr(b, kv[i].name, kv[i].value);
  }
  if (device != NULL) {
    tf_node_set_device(b, device);
  }
  tf_node *n = tf_node_finish(b, &st);
  ck_assert_msg(n != NULL, "node %s (%s): %s", name, op, st.msg);
  return n;
}

tf_output ig_out(tf_node *n) { return (tf_output){n, 0}; }

tf_graph *ig_cross_graph(void) {
  tf_graph *g = tf_graph_new();
  tf_node *x = tt_placeholder(g, "x", TF_FLOAT32, tf_shape_of(1, -1));
  tf_output xo = ig_out(x);
  tf_node *y = ig_node(g, "Neg", "y", "/job:worker/task:0", &xo, 1, NULL, 0);
  tf_output yx[] = {ig_out(y), xo};
  ig_node(g, "Mul", "z", "/job:worker/task:1", yx, 2, NULL, 0);
  return g;
}

tf_code ig_run_cross(tf_session *s, int64_t timeout_ms, tf_status *st) {
  enum { N = 8 };
  double v[N];
  for (int i = 0; i < N; i++) {
    v[i] = i + 1;
  }
  tf_tensor *x = tt_tensor(TF_FLOAT32, tf_shape_of(1, N), v);
  const char *feed = "x", *fetch = "z";
  tf_tensor *z = NULL;
  tf_run_options ro = {.timeout_ms = timeout_ms};
  tf_code rc = tf_session_run(s, &ro, &feed, &x, 1, &fetch, &z, 1, NULL, 0, NULL, st);
  if (rc == TF_OK) {
    const float *zv = z->data;
    for (int i = 0; i < N && rc == TF_OK; i++) {
      if (zv[i] != (float)(-v[i] * v[i])) {
        rc = tf_status_set(st, TF_INTERNAL, "z[%d] = %g, expected %g", i, zv[i],
                           -v[i] * v[i]);
      }
    }
    tf_tensor_unref(z);
  }
  tf_tensor_unref(x);
  return rc;
}

/* A FIFOQueue of float32 named name and its QueueDequeue, both on device. */
static tf_node *dequeue_on(tf_graph *g, const char *name, const char *device) {
  tf_dtype ct[] = {TF_FLOAT32};
  tf_attr_kv kv[] = {{"component_types", tf_attr_type_list(ct, 1)}};
  tf_node *q = ig_node(g, "FIFOQueue", name, device, NULL, 0, kv, 1);
  char deq[64];
  snprintf(deq, sizeof deq, "deq_%s", name);
  tf_output qo = ig_out(q);
  tf_attr_kv dkv[] = {{"component_types", tf_attr_type_list(ct, 1)}};
  return ig_node(g, "QueueDequeue", deq, device, &qo, 1, dkv, 1);
}

tf_graph *ig_blocking_graph(void) {
  tf_graph *g = tf_graph_new();
  tf_node *d0 = dequeue_on(g, "q0", "/job:worker/task:0");
  tf_node *d1 = dequeue_on(g, "q1", "/job:worker/task:1");
  tf_output in[] = {ig_out(d0), ig_out(d1)};
  ig_node(g, "Add", "sum", "/job:worker/task:1", in, 2, NULL, 0);
  return g;
}

tf_graph *ig_chain_graph(int n, const char *device, int blocking, int dim) {
  tf_graph *g = tf_graph_new();
  tf_node *prev;
  char name[32];
  if (blocking) {
    prev = dequeue_on(g, "q", device);
  } else {
    tf_tensor *m = tt_rand(TF_FLOAT32, tf_shape_of(2, dim, dim), -1.0 / dim, 1.0 / dim);
    prev = ig_node(g, "Const", "m", device, NULL, 0,
                   (tf_attr_kv[]){{"value", tf_attr_tensor(m)}, {"dtype", tf_attr_type_v(TF_FLOAT32)}},
                   2);
    tf_tensor_unref(m);
  }
  tf_node *m0 = prev;
  for (int i = blocking ? 1 : 0; i < n; i++) {
    snprintf(name, sizeof name, i == n - 1 ? "last" : "n%d", i);
    if (blocking) {
      tf_output in = ig_out(prev);
      prev = ig_node(g, "Identity", name, device, &in, 1, NULL, 0);
    } else {
      tf_output in[] = {ig_out(prev), ig_out(m0)};
      prev = ig_node(g, "MatMul", name, device, in, 2, NULL, 0);
    }
  }
  if (blocking && n == 1) {
    tf_output in = ig_out(prev);
    ig_node(g, "Identity", "last", device, &in, 1, NULL, 0);
  }
  return g;
}

tf_session *ig_remote(const char *url, tf_graph *g, tf_status *st) {
  tf_session_options so = {.target = url};
  return tf_session_new(g, &so, st);
}

tf_code ig_call(const char *url, const tf_wire_header *h, ig_body_fn enc, const void *arg,
                int64_t timeout_ms, tf_wire_msg **reply, tf_status *st) {
  tf_rpc_client *c = NULL;
  *reply = NULL;
  if (tf_rpc_client_new(url, 0, &c, st) != TF_OK) {
    return st->code;
  }
  tf_wire_writer *w = tf_wire_writer_new(h);
  if (enc != NULL) {
    enc(w, arg);
  }
  nng_msg *m = NULL;
  if (tf_wire_finish(w, &m, st) == TF_OK) {
    tf_rpc_call(c, m, timeout_ms, reply, st);
  }
  tf_rpc_client_free(c);
  return st->code;
}

tf_code ig_status(const char *url, tf_msg_get_status_reply *out, tf_wire_msg **keep,
                  tf_status *st) {
  tf_wire_header h = {.version = TF_WIRE_VERSION, .method = TF_M_GET_STATUS};
  memset(out, 0, sizeof *out);
  if (ig_call(url, &h, NULL, NULL, 3000, keep, st) != TF_OK) {
    return st->code;
  }
  if (tf_msg_get_status_reply_decode(*keep, out, st) != TF_OK) {
    tf_wire_msg_free(*keep);
    *keep = NULL;
  }
  return st->code;
}

int ig_sp_connect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_port = htons((uint16_t)port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  static const unsigned char hello[8] = {0, 'S', 'P', 0, 0, 0x30, 0, 0};
  unsigned char peer[8];
  struct pollfd p = {.fd = fd, .events = POLLIN};
  if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
      write(fd, hello, 8) != 8 || poll(&p, 1, 3000) != 1 || read(fd, peer, 8) != 8 ||
      peer[1] != 'S' || peer[2] != 'P' || peer[5] != 0x31) {
    if (fd >= 0) close(fd);
    return -1;
  }
  return fd;
}

bool ig_send_frame_start(int fd, uint64_t declared) {
  unsigned char frame[12] = {0};
  for (int i = 0; i < 8; i++) {
    frame[i] = (unsigned char)(declared >> (56 - 8 * i));
  }
  memcpy(frame + 8, "\x80\0\0\1", 4);
  return write(fd, frame, sizeof frame) == (ssize_t)sizeof frame;
}

bool ig_closed_within(int fd, int ms) {
  struct pollfd p = {.fd = fd, .events = POLLIN};
  if (poll(&p, 1, ms) != 1) {
    return false;
  }
  char buf[64];
  ssize_t got = read(fd, buf, sizeof buf);
  return got == 0 || (got < 0 && (errno == ECONNRESET || errno == EPIPE));
}

/* Whether the master's health shows every task up within ms. */
bool ig_master_sees_all_up(th_cluster *c, int64_t ms) {
  th_task *master = th_task_get(c, "master", 0);
  int64_t deadline = tf_ctl_now_ms() + ms;
  while (tf_ctl_now_ms() < deadline) {
    tf_ctl_task *ts = NULL;
    int n = 0, up = 0;
    tf_status st;
    if (tf_ctl_cluster_status(master->url, 2000, &ts, &n, &st) == TF_OK) {
      for (int i = 0; i < n; i++) up += ts[i].up;
      tf_ctl_tasks_free(ts, n);
      if (up == n && n == c->n_tasks) return true;
    }
    tf_ctl_sleep_ms(50);
  }
  return false;
}
