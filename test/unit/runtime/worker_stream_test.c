/* worker_stream_test.c: tensors between two in-process workers go over
 * the receiver's tensor stream, strings by TensorPush: a 4 MiB and a
 * 1 KiB tensor cross by the stream bit-exact, a string tensor by the
 * message path (the receiver's stream counters tell which); the receiver's pushed-bytes
 * cap refuses a large frame and the receiver's part of the step fails with
 * RESOURCE_EXHAUSTED naming the cap (promptly when it is running, at once
 * when it starts later); a peer that advertises no stream in its GetStatus
 * (an older worker: here a bare RPC server) gets the tensor by TensorPush,
 * bit-exact; a receiver whose stream dies mid-tensor fails the sender's
 * step, naming the receiver and the key. */
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "lib/runtime/worker_impl.h"
#include "test/unit/runtime/rt_testlib2.h"

#define T1 "/job:worker/replica:0/task:1"

typedef struct pair {
  tf_cluster_spec *spec;
  tf_worker *w[2];
  tf_rpc_client *c[2];
} pair;

/* Two workers (n = 2), or only worker 0 (n = 1: task 1 is a fake). */
static void pair_start(pair *p, int n, int64_t max_pushed) {
  memset(p, 0, sizeof *p);
  p->spec = rt2_spec(2, 10000, 5000);
  if (max_pushed > 0) p->spec->max_pushed_bytes = max_pushed;
  tf_status st;
  tf_status_init(&st);
  for (int i = 0; i < n; i++) {
    ck_assert_msg(tf_worker_start(p->spec, "worker", i, &p->w[i], &st) == TF_OK, "%s",
                  st.msg);
    p->c[i] = rt2_client(p->spec, "worker", i);
  }
}

static void pair_stop(pair *p) {
  for (int i = 0; i < 2; i++) {
    tf_rpc_client_free(p->c[i]);
    tf_worker_free(p->w[i]);
  }
  tf_cluster_spec_free(p->spec);
}

static const char *dev_name(int task) {
  return task == 0 ? "/job:worker/replica:0/task:0/device:CPU:0"
                   : "/job:worker/replica:0/task:1/device:CPU:0";
}

/* The tensors named "text..." are strings, the others float32. */
static tf_dtype dtype_of(const char *tensor) {
  return strncmp(tensor, "text", 4) == 0 ? TF_STRING : TF_FLOAT32;
}

/* _Send of in as tensor from task 0 to task 1 (incarnation of task 0). */
static void send_node(tf_graph *g, const char *name, tf_output in, const char *tensor,
                      uint64_t inc0) {
  tf_attr_kv kv[] = {{"T", tf_attr_type_v(dtype_of(tensor))},
                     {"tensor_name", tf_attr_string(tensor)},
                     {"send_device", tf_attr_string(dev_name(0))},
                     {"send_device_incarnation", tf_attr_int((int64_t)inc0)},
                     {"recv_device", tf_attr_string(dev_name(1))}};
  rt_node(g, "_Send", name, NULL, &in, 1, kv, 5);
}

static tf_output recv_node(tf_graph *g, const char *name, const char *tensor,
                           uint64_t inc0) {
  tf_attr_kv kv[] = {{"tensor_type", tf_attr_type_v(dtype_of(tensor))},
                     {"tensor_name", tf_attr_string(tensor)},
                     {"send_device", tf_attr_string(dev_name(0))},
                     {"send_device_incarnation", tf_attr_int((int64_t)inc0)},
                     {"recv_device", tf_attr_string(dev_name(1))}};
  return rt_out(rt_node(g, "_Recv", name, NULL, NULL, 0, kv, 5));
}

static void ret_node(tf_graph *g, const char *name, tf_output in, int index) {
  tf_attr_kv kv[] = {{"T", tf_attr_type_v(tf_node_output_type(in.node, in.index))},
                     {"index", tf_attr_int(index)}};
  rt_node(g, "_Retval", name, NULL, &in, 1, kv, 2);
}

static tf_output arg_node(tf_graph *g, const char *name, int index, tf_dtype dt) {
  tf_attr_kv ak[] = {{"T", tf_attr_type_v(dt)}, {"index", tf_attr_int(index)}};
  return rt_out(rt_node(g, "_Arg", name, NULL, NULL, 0, ak, 2));
}

/* Task 0's graph: _Arg i -> _Send names[i], for n tensors. */
static tf_graph *sender_graph(const char *const *names, int n, uint64_t inc0) {
  tf_graph *g = tf_graph_new();
  for (int i = 0; i < n; i++) {
    char an[32], sn[32];
    snprintf(an, sizeof an, "arg_%d", i);
    snprintf(sn, sizeof sn, "send_%d", i);
    send_node(g, sn, arg_node(g, an, i, dtype_of(names[i])), names[i], inc0);
  }
  return g;
}

static tf_tensor *ret_of(const tf_wire_msg *r, uint32_t k) {
  tf_status st;
  tf_status_init(&st);
  const msgpack_object_array *a = tf_wire_get_array(&r->body, "rets", "reply", &st);
  ck_assert_msg(a != NULL, "%s", st.msg);
  ck_assert_uint_gt(a->size, k);
  tf_tensor *t = NULL;
  ck_assert_msg(tf_wire_unpack_tensor(r, &a->ptr[k], &t, &st) == TF_OK, "%s", st.msg);
  return t;
}

static void ck_same(const tf_tensor *a, const tf_tensor *b) {
  ck_assert_int_eq(a->dtype, b->dtype);
  ck_assert(tf_shape_equal(&a->shape, &b->shape));
  ck_assert_uint_eq(a->nbytes, b->nbytes);
  ck_assert(memcmp(a->data, b->data, a->nbytes) == 0);
}

static tf_tstream_server_stats stream_stats(tf_worker *w) {
  ck_assert_ptr_nonnull(w->tsrv);
  return tf_tstream_server_stats_get(w->tsrv);
}

/* A string tensor of n elements "s0", "s1", ... */
static tf_tensor *strings(int n) {
  tf_tensor *t = NULL;
  tf_status st;
  tf_shape sh = tf_shape_of(1, n);
  ck_assert(tf_tensor_new(TF_STRING, &sh, &t, &st) == TF_OK);
  for (int i = 0; i < n; i++) {
    char b[16];
    int len = snprintf(b, sizeof b, "s%d", i);
    ck_assert(tf_tensor_set_string(t, i, b, (size_t)len, &st) == TF_OK);
  }
  return t;
}

/* 4 MiB and 1 KiB float32 tensors and a string tensor from task 0 to
 * task 1, two steps: the float ones by the stream (two frames per step,
 * their bytes counted), the strings by TensorPush; all bit-exact. */
START_TEST(tensors_by_stream_strings_by_message) {
  pair p;
  pair_start(&p, 2, 0);
  uint64_t inc0 = tf_worker_incarnation(p.w[0]);
  const char *names[] = {"big", "small", "text"};
  tf_graph *g0 = sender_graph(names, 3, inc0), *g1 = tf_graph_new();
  for (int k = 0; k < 3; k++) {
    char rn[32], tn[32];
    snprintf(rn, sizeof rn, "recv_%s", names[k]);
    snprintf(tn, sizeof tn, "ret_%s", names[k]);
    ret_node(g1, tn, recv_node(g1, rn, names[k], inc0), k);
  }
  uint64_t h0 = rt2_register(p.c[0], g0), h1 = rt2_register(p.c[1], g1);
  for (int step = 0; step < 2; step++) {
    tf_tensor *xs[3] = {tt_rand(TF_FLOAT32, tf_shape_of(2, 1024, 1024), -1e6, 1e6),
                        tt_rand(TF_FLOAT32, tf_shape_of(1, 256), -1, 1), strings(5)};
    rt2_async a0, a1;
    rt2_async_start(&a1, p.c[1], rt2_run_graph_msg(h1, 10 + (uint64_t)step, 10000, NULL,
                                                   0, 3), 10000);
    rt2_async_start(&a0, p.c[0], rt2_run_graph_msg(h0, 10 + (uint64_t)step, 10000, xs,
                                                   3, 0), 10000);
    ck_assert(rt2_async_wait(&a0, 10000) && rt2_async_wait(&a1, 10000));
    ck_assert_msg(a0.st.code == TF_OK, "sender: %s", a0.st.msg);
    ck_assert_msg(a1.st.code == TF_OK, "receiver: %s", a1.st.msg);
    for (uint32_t k = 0; k < 3; k++) {
      tf_tensor *got = ret_of(a1.reply, k);
      ck_assert(tf_tensor_equal(got, xs[k]));
      if (k < 2) ck_same(got, xs[k]);
      tf_tensor_unref(got);
      tf_tensor_unref(xs[k]);
    }
    rt2_async_fini(&a0);
    rt2_async_fini(&a1);
    /* The stream counts a frame after delivering it, so the step's reply
     * can come back before the count moves. */
    tf_tstream_server_stats s = stream_stats(p.w[1]);
    uint64_t bytes = (uint64_t)(step + 1) * ((4u << 20) + 1024);
    for (int wait = 0; (s.frames < 2 * (uint64_t)(step + 1) || s.payload_bytes < bytes) &&
                       wait < 200; wait++) {
      usleep(10 * 1000);
      s = stream_stats(p.w[1]);
    }
    ck_assert_uint_eq(s.frames, 2 * (uint64_t)(step + 1));
    ck_assert_uint_eq(s.payload_bytes, bytes);
    ck_assert_uint_eq(s.deliver_errors + s.bad_frames + s.wrong_task, 0);
  }
  ck_assert_uint_eq(stream_stats(p.w[0]).frames, 0); /* nothing went 1 -> 0 */
  ck_assert_int_eq(rt2_poll_int(tf_worker_live_step_tables, p.w[1], 0, 2000), 0);
  tf_graph_free(g0);
  tf_graph_free(g1);
  pair_stop(&p);
}
END_TEST

static void ck_cap_refusal(const tf_status *st) {
  ck_assert_int_eq(st->code, TF_RESOURCE_EXHAUSTED);
  ck_assert_msg(strstr(st->msg, T1 ": tensor stream from /job:worker/replica:0/task:0: "
                                "key '") != NULL, "%s", st->msg);
  ck_assert_msg(strstr(st->msg, ";big;") != NULL, "%s", st->msg);
  ck_assert_msg(strstr(st->msg, "the limit is 2097152 bytes (limits.max_pushed_mb)") !=
                NULL, "%s", st->msg);
}

/* Task 1's cap is 2 MiB; task 0 sends a 4 MiB "big" that no _Recv waits
 * for (its sender's part succeeds: the frame was handed over). With
 * running, task 1's part runs already (waiting for "never") and fails
 * promptly; else it starts after the refusal and fails at once. */
static void cap_case(pair *p, bool running, uint64_t step) {
  uint64_t inc0 = tf_worker_incarnation(p->w[0]);
  const char *names[] = {"big"};
  tf_graph *g0 = sender_graph(names, 1, inc0), *g1 = tf_graph_new();
  ret_node(g1, "ret", recv_node(g1, "recv_never", "never", inc0), 0);
  uint64_t h0 = rt2_register(p->c[0], g0), h1 = rt2_register(p->c[1], g1);
  tf_tensor *x = tt_rand(TF_FLOAT32, tf_shape_of(1, 1 << 20), -1, 1);
  rt2_async a1;
  if (running) {
    rt2_async_start(&a1, p->c[1], rt2_run_graph_msg(h1, step, 10000, NULL, 0, 1), 10000);
    ck_assert_int_eq(rt2_poll_int(tf_worker_running_steps, p->w[1], 1, 2000), 1);
  }
  int64_t t0 = tf__now_ns();
  uint64_t errors = stream_stats(p->w[1]).deliver_errors;
  tf_status st;
  tf_wire_msg *r = NULL;
  ck_assert_msg(tf_rpc_call(p->c[0], rt2_run_graph_msg(h0, step, 10000, &x, 1, 0), 10000,
                            &r, &st) == TF_OK, "sender: %s", st.msg);
  tf_wire_msg_free(r);
  if (!running) {
    while (stream_stats(p->w[1]).deliver_errors == errors && rt2_secs_since(t0) < 5.0) {
      rt2_sleep_ms(5);
    }
    rt2_async_start(&a1, p->c[1], rt2_run_graph_msg(h1, step, 10000, NULL, 0, 1), 10000);
  }
  ck_assert(rt2_async_wait(&a1, 10000));
  ck_assert_msg(rt2_secs_since(t0) < 3.0, "took %.2f s", rt2_secs_since(t0));
  ck_cap_refusal(&a1.st);
  rt2_async_fini(&a1);
  while (stream_stats(p->w[1]).deliver_errors == errors && rt2_secs_since(t0) < 5.0) {
    rt2_sleep_ms(5); /* counted just after the refusal is handled */
  }
  ck_assert_uint_eq(stream_stats(p->w[1]).deliver_errors, errors + 1);
  tf_tensor_unref(x);
  tf_graph_free(g0);
  tf_graph_free(g1);
}

START_TEST(pushed_cap_refuses_large_frame) {
  pair p;
  pair_start(&p, 2, 2 << 20);
  cap_case(&p, true, 30);
  cap_case(&p, false, 31);
  tf_tstream_server_stats s = stream_stats(p.w[1]);
  ck_assert_uint_eq(s.deliver_errors, 2);
  ck_assert_int_eq(s.open_connections, 1); /* a refusal keeps the connection */
  for (int i = 0; i < 2; i++) {
    ck_assert_int_eq(rt2_poll_int(tf_worker_running_steps, p.w[i], 0, 2000), 0);
  }
  pair_stop(&p);
}
END_TEST

/* ---- a fake task 1: an RPC server, optionally pointing at a stream that
 * dies mid-tensor ---------------------------------------------------------- */

typedef struct fake {
  tf_rpc_server *srv;
  const char *stream_url; /* advertised, or NULL */
  pthread_mutex_t mu;
  int pushes;
  tf_tensor *got;   /* the last pushed tensor */
  char key[256];
} fake;

static void fake_status(fake *f, struct tf_rpc_call *call) {
  tf_msg_status_device dev = {dev_name(1), "CPU", 7};
  tf_msg_get_status_reply b = {.job = "worker", .task = 1, .incarnation = 7,
                               .n_devices = 1, .devices = &dev,
                               .tensor_stream = f->stream_url};
  tf_wire_writer *wr = tf_rpc_reply_writer(call);
  tf_msg_get_status_reply_encode(wr, &b);
  tf_rpc_reply(call, rt2_finish(wr));
}

static void fake_handle(void *arg, struct tf_rpc_call *call) {
  fake *f = arg;
  const tf_wire_msg *req = tf_rpc_call_request(call);
  if (req->h.method == TF_M_GET_STATUS) {
    fake_status(f, call);
    return;
  }
  tf_status st;
  tf_status_init(&st);
  tf_msg_tensor_push_req p;
  ck_assert_int_eq(req->h.method, TF_M_TENSOR_PUSH);
  ck_assert_msg(tf_msg_tensor_push_req_decode(req, &p, &st) == TF_OK, "%s", st.msg);
  pthread_mutex_lock(&f->mu);
  f->pushes++;
  tf_tensor_unref(f->got);
  f->got = tf_tensor_ref(p.tensor);
  snprintf(f->key, sizeof f->key, "%s", p.key);
  pthread_mutex_unlock(&f->mu);
  tf_msg_tensor_push_req_fini(&p);
  tf_rpc_reply(call, rt2_finish(tf_rpc_reply_writer(call)));
}

static void fake_start(fake *f, const tf_cluster_spec *spec, const char *stream_url) {
  memset(f, 0, sizeof *f);
  pthread_mutex_init(&f->mu, NULL);
  f->stream_url = stream_url;
  char *url = tf_cluster_task_url(spec, "worker", 1);
  tf_rpc_server_options o;
  tf_rpc_server_options_init(&o, url);
  o.self_task = T1;
  o.self_incarnation = 7;
  tf_status st;
  tf_status_init(&st);
  ck_assert_msg(tf_rpc_server_start(&o, fake_handle, f, &f->srv, &st) == TF_OK, "%s",
                st.msg);
  free(url);
}

static void fake_stop(fake *f) {
  tf_rpc_server_stop(f->srv);
  tf_tensor_unref(f->got);
  pthread_mutex_destroy(&f->mu);
}

/* Runs task 0's sender graph for one _Arg x (sent as "big"); its status. */
static tf_status run_sender(pair *p, tf_tensor *x, uint64_t step) {
  const char *names[] = {"big"};
  tf_graph *g0 = sender_graph(names, 1, tf_worker_incarnation(p->w[0]));
  uint64_t h0 = rt2_register(p->c[0], g0);
  tf_status st;
  tf_wire_msg *r = NULL;
  tf_rpc_call(p->c[0], rt2_run_graph_msg(h0, step, 10000, &x, 1, 0), 10000, &r, &st);
  tf_wire_msg_free(r);
  tf_graph_free(g0);
  return st;
}

START_TEST(peer_without_stream_gets_message_path) {
  pair p;
  pair_start(&p, 1, 0);
  fake f;
  fake_start(&f, p.spec, NULL);
  for (int step = 0; step < 2; step++) {
    tf_tensor *x = tt_rand(TF_FLOAT32, tf_shape_of(1, 1 << 20), -1, 1);
    tf_status st = run_sender(&p, x, 40 + (uint64_t)step);
    ck_assert_msg(st.code == TF_OK, "%s", st.msg);
    pthread_mutex_lock(&f.mu);
    ck_assert_int_eq(f.pushes, step + 1);
    ck_assert_msg(strstr(f.key, ";big;") != NULL, "%s", f.key);
    ck_same(f.got, x);
    pthread_mutex_unlock(&f.mu);
    tf_tensor_unref(x);
  }
  fake_stop(&f);
  pair_stop(&p);
}
END_TEST

/* A stream "server" that takes one connection, reads 64 KiB of it and
 * resets it. */
typedef struct dying {
  int fd;
  pthread_t th;
  char url[64];
} dying;

static void *dying_main(void *arg) {
  dying *d = arg;
  int c = accept(d->fd, NULL, NULL);
  if (c < 0) return NULL;
  static char buf[65536];
  size_t got = 0;
  while (got < sizeof buf) {
    ssize_t n = read(c, buf, sizeof buf - got);
    if (n <= 0) break;
    got += (size_t)n;
  }
  struct linger lg = {1, 0}; /* close with a reset */
  setsockopt(c, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
  close(c);
  return NULL;
}

static void dying_start(dying *d) {
  d->fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  ck_assert_int_eq(bind(d->fd, (struct sockaddr *)&a, sizeof a), 0);
  ck_assert_int_eq(listen(d->fd, 4), 0);
  ck_assert_int_eq(getsockname(d->fd, (struct sockaddr *)&a, &len), 0);
  snprintf(d->url, sizeof d->url, "tcp://127.0.0.1:%d", ntohs(a.sin_port));
  pthread_create(&d->th, NULL, dying_main, d);
}

START_TEST(receiver_killed_mid_tensor_fails_sender) {
  pair p;
  pair_start(&p, 1, 0);
  dying d;
  dying_start(&d);
  fake f;
  fake_start(&f, p.spec, d.url);
  tf_tensor *x = tt_rand(TF_FLOAT32, tf_shape_of(1, 8 << 20), -1, 1); /* 32 MiB */
  int64_t t0 = tf__now_ns();
  tf_status st = run_sender(&p, x, 50);
  ck_assert_msg(st.code == TF_UNAVAILABLE, "%d: %s", st.code, st.msg);
  ck_assert_msg(rt2_secs_since(t0) < 5.0, "took %.2f s", rt2_secs_since(t0));
  ck_assert_msg(strstr(st.msg, "/job:worker/replica:0/task:0: delivering key '") != NULL,
                "%s", st.msg);
  ck_assert_msg(strstr(st.msg, ";big;") != NULL, "%s", st.msg);
  ck_assert_msg(strstr(st.msg, "of step 50 to " T1 " failed: ") != NULL, "%s", st.msg);
  ck_assert_msg(strstr(st.msg, d.url) != NULL, "%s", st.msg);
  pthread_mutex_lock(&f.mu);
  ck_assert_int_eq(f.pushes, 0); /* not retried by TensorPush */
  pthread_mutex_unlock(&f.mu);
  ck_assert_int_eq(rt2_poll_int(tf_worker_running_steps, p.w[0], 0, 2000), 0);
  pthread_join(d.th, NULL);
  close(d.fd);
  tf_tensor_unref(x);
  fake_stop(&f);
  pair_stop(&p);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("worker_stream");
  TCase *tc = tcase_create("stream");
  tcase_set_timeout(tc, 45);
  tcase_add_test(tc, tensors_by_stream_strings_by_message);
  tcase_add_test(tc, pushed_cap_refuses_large_frame);
  tcase_add_test(tc, peer_without_stream_gets_message_path);
  tcase_add_test(tc, receiver_killed_mid_tensor_fails_sender);
  suite_add_tcase(s, tc);
  return s;
}
