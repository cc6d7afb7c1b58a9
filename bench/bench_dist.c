/* bench_dist.c: the cluster runtime's costs on loopback against the raw
 * transports they are built on, all in one run (`make bench-dist`).
 *
 * 1. rpc_rtt_us: a raw NNG req/rep round trip of an 8-byte message over
 *    tcp://127.0.0.1 (a rep thread in this process, nng_sendmsg and
 *    nng_recvmsg on both sides).
 * 2. null_step_us: a real cluster (build/bin/tfmaster, build/bin/tfworker as ps and as
 *    worker, on free loopback ports) and a remote session: a scalar Const
 *    on the ps, an Identity of it on the worker, fetched by the client.
 * 3. dense: a 100 MB float32 Const on the ps whose Identity on the worker
 *    feeds a Size (also on the worker); the client fetches the scalar, so
 *    the step moves 100 MB from the ps to the worker.
 * 4. tcp_gbps: the same 100 MB over one loopback TCP connection between
 *    two threads (reused buffers; a 1-byte request starts each transfer).
 * 5. the null and dense steps again on a cluster with authentication on
 *    (auth.key_file: every request and reply signed, each tensor-stream
 *    connection opened with a signed hello; docs/security.md):
 *    auth_null_step_us, auth_dense_step_ms and their ratios to the steps
 *    without it, auth_null_ratio (goal <= 1.2) and auth_dense_ratio
 *    (goal <= 1.1), the two clusters run one after the other in this run.
 * 6. dist_loop_iter_us: a null while loop split over the two tasks (the
 *    LoopCond and the counter's Merge on the worker, the body's Add on the
 *    ps; the partitioner gives the ps a control loop driven by the
 *    predicate the worker sends every iteration), LOOP_TRIPS iterations in
 *    one step: the step's time / LOOP_TRIPS, on the first cluster, and its
 *    ratio to rpc_rtt_us, dist_loop_iter_vs_rtt (goal <= 1.5).
 * The last three lines are null_step_vs_rtt (goal <= 3), dense_vs_tcp
 * (goal >= 0.8) and dist_loop_iter_vs_rtt.
 * With --tls (or TF_BENCH_TLS=1) it then runs 2. and 3. again on a cluster
 * on tls+tcp (certificates from scripts/make-certs.sh) and prints
 * tls_null_step_us, tls_dense_step_ms, tls_dense_gbps and the ratios to the
 * tcp cluster's steps (tls_null_vs_tcp, tls_dense_vs_tcp).
 * With --soak FILE.csv it runs the soak instead: SOAK_NULL null steps then
 * SOAK_DENSE dense steps on one cluster, sampling every daemon's resident
 * size (VmRSS) every SOAK_EVERY_NULL / SOAK_EVERY_DENSE steps into the CSV,
 * and prints each daemon's growth from the end of warm-up (the first fifth
 * of each phase) to the end (`make soak` plots the CSV with gnuplot). Daemons are children of this process: they are stopped
 * at exit, on SIGINT/SIGTERM and on errors, and bc_die with it. */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nng/nng.h>
#include <nng/protocol/reqrep0/rep.h>
#include <nng/protocol/reqrep0/req.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cmd/tfctl/ctl_client.h"
#include "cmd/tfctl/ctl_procs.h"
#include "tf/tf.h"

#define RTT_WARMUP 200
#define RTT_REPS 2000
#define NULL_WARMUP 50
#define NULL_REPS 1000
#define DENSE_ELEMS 25000000LL
#define DENSE_BYTES (DENSE_ELEMS * 4)
#define DENSE_WARMUP 3
#define LOOP_TRIPS 2000
#define LOOP_REPS 7
#define DENSE_REPS 10
#define SOAK_NULL 10000
#define SOAK_DENSE 1000
#define SOAK_EVERY_NULL 100
#define SOAK_EVERY_DENSE 10
#define STEP_TIMEOUT_MS 30000
#define BC_NAME "bench_dist"
#define BC_MAX_PROCS 3

#include "bench/bench_cluster.h"

/* ---- 1. raw NNG req/rep round trip ---- */

static void *rep_loop(void *arg) {
  nng_socket s = *(nng_socket *)arg;
  for (;;) {
    nng_msg *m = NULL;
    if (nng_recvmsg(s, &m, 0) != 0) {
      return NULL; /* closed */
    }
    if (nng_sendmsg(s, m, 0) != 0) {
      nng_msg_free(m);
    }
  }
}

static void nng_check(int rv, const char *what) {
  if (rv != 0) {
    bc_die("%s: %s", what, nng_strerror(rv));
  }
}

/* One timed round trip of an 8-byte message; seconds. */
static double rtt_once(nng_socket c, uint64_t i) {
  nng_msg *m = NULL;
  double t0 = bc_now_s();
  nng_check(nng_msg_alloc(&m, 0), "nng_msg_alloc");
  nng_check(nng_msg_append(m, &i, sizeof i), "nng_msg_append");
  int rv = nng_sendmsg(c, m, 0);
  if (rv != 0) {
    nng_msg_free(m);
    nng_check(rv, "nng_sendmsg");
  }
  nng_check(nng_recvmsg(c, &m, 0), "nng_recvmsg");
  double t1 = bc_now_s();
  nng_msg_free(m);
  return t1 - t0;
}

static void bench_rtt(double *med_us, double *p90_us) {
  nng_socket srv, cli;
  nng_listener l;
  int port = 0;
  nng_check(nng_rep0_open(&srv), "nng_rep0_open");
  nng_check(nng_listen(srv, "tcp://127.0.0.1:0", &l, 0), "nng_listen");
  nng_check(nng_listener_get_int(l, NNG_OPT_TCP_BOUND_PORT, &port), "bound port");
  pthread_t th;
  pthread_create(&th, NULL, rep_loop, &srv);
  char url[64];
  snprintf(url, sizeof url, "tcp://127.0.0.1:%d", port);
  nng_check(nng_req0_open(&cli), "nng_req0_open");
  nng_check(nng_socket_set_ms(cli, NNG_OPT_RECVTIMEO, 5000), "recv timeout");
  nng_check(nng_socket_set_ms(cli, NNG_OPT_SENDTIMEO, 5000), "send timeout");
  nng_check(nng_dial(cli, url, NULL, 0), "nng_dial");
  static double t[RTT_REPS];
  for (int i = 0; i < RTT_WARMUP; i++) {
    rtt_once(cli, (uint64_t)i);
  }
  for (int i = 0; i < RTT_REPS; i++) {
    t[i] = rtt_once(cli, (uint64_t)i);
  }
  nng_close(cli);
  nng_close(srv);
  pthread_join(th, NULL);
  *med_us = bc_quantile(t, RTT_REPS, 0.5) * 1e6;
  *p90_us = bc_quantile(t, RTT_REPS, 0.9) * 1e6;
}

/* ---- 2, 3. the cluster ---- */

static tf_node *add_node(tf_graph *g, const char *op, const char *name, const char *device,
                         const tf_output *in, const tf_attr_kv *attrs, int n_attrs) {
  tf_status st;
  tf_node_builder *b = tf_node_begin(g, op, name);
  if (in != NULL) {
    tf_node_add_input(b, *in);
  }
  for (int i = 0; i < n_attrs; i++) {
    tf_node_set_attr(b, attrs[i].name, attrs[i].value);
  }
  tf_node_set_device(b, device);
  tf_node *n = tf_node_finish(b, &st);
  if (n == NULL) {
    bc_die("building %s: %s", name, st.msg);
  }
  return n;
}

#define PS "/job:ps/task:0"
#define WORKER "/job:worker/task:0"

/* null: Const (ps) -> null_id (worker). dense: big (ps) -> big_id
 * (worker) -> big_size (worker). */
static tf_graph *build_graph(void) {
  tf_graph *g = tf_graph_new();
  tf_tensor *one = tf_tensor_scalar_f32(1.0f);
  tf_attr_kv a1[] = {{"dtype", tf_attr_type_v(TF_FLOAT32)}, {"value", tf_attr_tensor(one)}};
  tf_node *c = add_node(g, "Const", "null_c", PS, NULL, a1, 2);
  tf_output o = {c, 0};
  add_node(g, "Identity", "null_id", WORKER, &o, NULL, 0);
  tf_tensor_unref(one);

  int64_t dims[1] = {DENSE_ELEMS};
  tf_shape sh = tf_shape_make(1, dims);
  tf_tensor *big = NULL;
  tf_status st;
  if (tf_tensor_new(TF_FLOAT32, &sh, &big, &st) != TF_OK) {
    bc_die("100 MB tensor: %s", st.msg);
  }
  float *d = big->data;
  for (int64_t i = 0; i < DENSE_ELEMS; i++) {
    d[i] = (float)(i & 1023);
  }
  tf_attr_kv a2[] = {{"dtype", tf_attr_type_v(TF_FLOAT32)}, {"value", tf_attr_tensor(big)}};
  tf_node *bc = add_node(g, "Const", "big", PS, NULL, a2, 2);
  tf_tensor_unref(big);
  o = (tf_output){bc, 0};
  tf_node *bi = add_node(g, "Identity", "big_id", WORKER, &o, NULL, 0);
  o = (tf_output){bi, 0};
  add_node(g, "Size", "big_size", WORKER, &o, NULL, 0);
  return g;
}


/* One step fetching `fetch`; returns its seconds and checks the value. */
static double step(tf_session *s, const char *fetch, double want) {
  tf_run_options ro = {.timeout_ms = STEP_TIMEOUT_MS};
  tf_tensor *out = NULL;
  tf_status st;
  tf_status_init(&st);
  double t0 = bc_now_s();
  if (tf_session_run(s, &ro, NULL, NULL, 0, &fetch, &out, 1, NULL, 0, NULL, &st) != TF_OK) {
    bc_die("step fetching %s: %s", fetch, st.msg);
  }
  double t = bc_now_s() - t0;
  double got = tf_tensor_get_f64(out, 0);
  tf_tensor_unref(out);
  if (got != want) {
    bc_die("step fetching %s returned %g, expected %g", fetch, got, want);
  }
  return t;
}

/* ---- 6. a while loop split over two tasks ---- */

static tf_code loop_cond(tf_graph *g, const tf_output *v, int nv, const tf_output *inv, int ni,
                         tf_output *pred, void *arg, tf_status *st) {
  tf_output in[2] = {v[0], inv[0]};
  tf_node_builder *b = tf_node_begin(g, "Less", "less");
  tf_node_add_input(b, in[0]);
  tf_node_add_input(b, in[1]);
  tf_node_set_device(b, WORKER);
  tf_node *n = tf_node_finish(b, st);
  *pred = (tf_output){n, 0};
  return n != NULL ? TF_OK : st->code;
}

static tf_code loop_body(tf_graph *g, const tf_output *v, int nv, const tf_output *inv, int ni,
                         tf_output *next, void *arg, tf_status *st) {
  tf_tensor *one = tf_tensor_scalar_i32(1);
  tf_attr_kv a[] = {{"dtype", tf_attr_type_v(TF_INT32)}, {"value", tf_attr_tensor(one)}};
  tf_node *c = add_node(g, "Const", "one", PS, NULL, a, 2);
  tf_node_builder *b = tf_node_begin(g, "Add", "inc");
  tf_node_add_input(b, v[0]);
  tf_node_add_input(b, (tf_output){c, 0});
  tf_node_set_device(b, PS);
  tf_node *n = tf_node_finish(b, st);
  tf_tensor_unref(one);
  next[0] = (tf_output){n, 0};
  return n != NULL ? TF_OK : st->code;
}

/* i = 0; while (i < n) i = i + 1, n fed; "loop_out" is the final i. */
static tf_graph *build_loop_graph(void) {
  tf_graph *g = tf_graph_new();
  tf_attr_kv pa[] = {{"dtype", tf_attr_type_v(TF_INT32)},
                     {"shape", tf_attr_shape(tf_shape_scalar())}};
  tf_node *n = add_node(g, "Placeholder", "n", WORKER, NULL, pa, 2);
  tf_tensor *zero = tf_tensor_scalar_i32(0);
  tf_attr_kv za[] = {{"dtype", tf_attr_type_v(TF_INT32)}, {"value", tf_attr_tensor(zero)}};
  tf_node *i0 = add_node(g, "Const", "i0", WORKER, NULL, za, 2);
  tf_tensor_unref(zero);
  tf_output v0 = {i0, 0}, inv = {n, 0}, out;
  tf_status st;
  if (tf_while_loop(g, "loop", &v0, 1, &inv, 1, loop_cond, loop_body, NULL, 0, &out, &st) !=
      TF_OK) {
    bc_die("building the loop: %s", st.msg);
  }
  add_node(g, "Identity", "loop_out", WORKER, &out, NULL, 0);
  return g;
}

/* One step of trips iterations; returns its seconds. */
static double loop_step(tf_session *s, int trips) {
  tf_run_options ro = {.timeout_ms = STEP_TIMEOUT_MS};
  tf_tensor *n = tf_tensor_scalar_i32(trips), *out = NULL;
  const char *feed = "n", *fetch = "loop_out:0";
  tf_status st;
  tf_status_init(&st);
  double t0 = bc_now_s();
  if (tf_session_run(s, &ro, &feed, &n, 1, &fetch, &out, 1, NULL, 0, NULL, &st) != TF_OK) {
    bc_die("loop step of %d iterations: %s", trips, st.msg);
  }
  double t = bc_now_s() - t0;
  int got = (int)tf_tensor_get_f64(out, 0);
  tf_tensor_unref(out);
  tf_tensor_unref(n);
  if (got != trips) {
    bc_die("loop step returned %d, expected %d", got, trips);
  }
  return t;
}

/* The median seconds per iteration of a LOOP_TRIPS-iteration step. */
static double bench_loop(void) {
  tf_graph *g = build_loop_graph();
  tf_session *s = bc_open_session(0, g);
  static double t[LOOP_REPS];
  loop_step(s, 100);
  for (int i = 0; i < LOOP_REPS; i++) {
    t[i] = loop_step(s, LOOP_TRIPS) / LOOP_TRIPS;
  }
  tf_session_free(s);
  tf_graph_free(g);
  return bc_quantile(t, LOOP_REPS, 0.5);
}

/* ---- 4. raw loopback TCP ---- */

typedef struct tcp_pair {
  int listen_fd;
  char *buf;
} tcp_pair;

static bool full_io(int fd, char *p, size_t n, bool wr) {
  while (n > 0) {
    ssize_t r = wr ? send(fd, p, n, MSG_NOSIGNAL) : recv(fd, p, n, 0);
    if (r < 0 && errno == EINTR) {
      continue;
    }
    if (r <= 0) {
      return false;
    }
    p += r;
    n -= (size_t)r;
  }
  return true;
}

/* Sender: per 1-byte request, writes DENSE_BYTES from one reused buffer. */
static void *tcp_sender(void *arg) {
  tcp_pair *tp = arg;
  int fd = accept(tp->listen_fd, NULL, NULL);
  char go;
  while (fd >= 0 && full_io(fd, &go, 1, false)) {
    if (!full_io(fd, tp->buf, (size_t)DENSE_BYTES, true)) {
      break;
    }
  }
  if (fd >= 0) {
    close(fd);
  }
  return NULL;
}

static int tcp_listen(int *port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof sa;
  if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 1) != 0 ||
      getsockname(fd, (struct sockaddr *)&sa, &len) != 0) {
    bc_die("tcp listen: %s", strerror(errno));
  }
  *port = ntohs(sa.sin_port);
  return fd;
}

/* Median seconds per 100 MB transfer. */
static double bench_tcp(void) {
  int port = 0;
  tcp_pair tp = {.listen_fd = tcp_listen(&port), .buf = malloc((size_t)DENSE_BYTES)};
  char *rbuf = malloc((size_t)DENSE_BYTES);
  if (tp.buf == NULL || rbuf == NULL) {
    bc_die("out of memory");
  }
  memset(tp.buf, 1, (size_t)DENSE_BYTES); /* fault the pages in once */
  memset(rbuf, 0, (size_t)DENSE_BYTES);
  pthread_t th;
  pthread_create(&th, NULL, tcp_sender, &tp);
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                           .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  struct timeval tv = {.tv_sec = 10};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
    bc_die("tcp connect: %s", strerror(errno));
  }
  static double t[DENSE_REPS];
  for (int i = 0; i < DENSE_WARMUP + DENSE_REPS; i++) {
    double t0 = bc_now_s();
    char go = 1;
    if (!full_io(fd, &go, 1, true) || !full_io(fd, rbuf, (size_t)DENSE_BYTES, false)) {
      bc_die("tcp transfer %d failed: %s", i, strerror(errno));
    }
    if (i >= DENSE_WARMUP) {
      t[i - DENSE_WARMUP] = bc_now_s() - t0;
    }
  }
  close(fd);
  pthread_join(th, NULL);
  close(tp.listen_fd);
  free(tp.buf);
  free(rbuf);
  return bc_quantile(t, DENSE_REPS, 0.5);
}

/* ---- main ---- */

static const char *bin_dir_arg(int argc, char **argv) {
  for (int i = 1; i + 1 < argc; i++) {
    if (strcmp(argv[i], "--bin") == 0) {
      return argv[i + 1];
    }
  }
  return "build/bin";
}

/* Times the null and dense steps on the running cluster. */
static void bench_steps(double *null_med, double *null_p90, double *dense_med) {
  tf_graph *g = build_graph();
  tf_session *s = bc_open_session(0, g);
  static double tn[NULL_REPS], td[DENSE_REPS];
  for (int i = 0; i < NULL_WARMUP; i++) {
    step(s, "null_id:0", 1.0);
  }
  for (int i = 0; i < NULL_REPS; i++) {
    tn[i] = step(s, "null_id:0", 1.0);
  }
  for (int i = 0; i < DENSE_WARMUP; i++) {
    step(s, "big_size:0", (double)DENSE_ELEMS);
  }
  for (int i = 0; i < DENSE_REPS; i++) {
    td[i] = step(s, "big_size:0", (double)DENSE_ELEMS);
  }
  tf_session_free(s);
  tf_graph_free(g);
  *null_med = bc_quantile(tn, NULL_REPS, 0.5);
  *null_p90 = bc_quantile(tn, NULL_REPS, 0.9);
  *dense_med = bc_quantile(td, DENSE_REPS, 0.5);
}

/* ---- soak ---- */

static long long rss_kib(pid_t pid) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  FILE *f = fopen(path, "r");
  long long kib = -1;
  while (f != NULL && fgets(line, sizeof line, f) != NULL) {
    if (sscanf(line, "VmRSS: %lld kB", &kib) == 1) {
      break;
    }
  }
  if (f != NULL) {
    fclose(f);
  }
  return kib;
}

/* One CSV row: the step count so far, the phase and each daemon's RSS;
 * keeps the row in last[]. */
static void sample(FILE *csv, int n, const char *phase, long long last[3]) {
  fprintf(csv, "%d,%s", n, phase);
  for (int i = 0; i < 3; i++) {
    last[i] = rss_kib(bc_procs[i].pid);
    if (last[i] < 0) {
      bc_die("/job:%s/task:0 (pid %d) is gone during the soak", bc_procs[i].job, (int)bc_procs[i].pid);
    }
    fprintf(csv, ",%lld", last[i]);
  }
  fputc('\n', csv);
  fflush(csv);
}

static void soak_phase(tf_session *s, FILE *csv, int *n, const char *phase, int steps,
                       int every) {
  const bool dense = strcmp(phase, "dense") == 0;
  long long warm[3] = {0}, last[3] = {0};
  double t0 = bc_now_s();
  for (int i = 1; i <= steps; i++) {
    step(s, dense ? "big_size:0" : "null_id:0", dense ? (double)DENSE_ELEMS : 1.0);
    ++*n;
    if (i % every == 0) {
      sample(csv, *n, phase, last);
      if (i == steps / 5) {
        memcpy(warm, last, sizeof warm);
      }
    }
  }
  printf("soak %s: %d steps in %.1f s\n", phase, steps, bc_now_s() - t0);
  for (int i = 0; i < 3; i++) {
    printf("soak %s: %-6s RSS after warm-up %lld KiB, at the end %lld KiB (%+lld KiB)\n",
           phase, bc_procs[i].job, warm[i], last[i], last[i] - warm[i]);
  }
}

static void soak(const char *path) {
  FILE *csv = fopen(path, "w");
  if (csv == NULL) {
    bc_die("cannot write %s: %s", path, strerror(errno));
  }
  fprintf(csv, "step,phase,master_kib,ps_kib,worker_kib\n");
  tf_graph *g = build_graph();
  tf_session *s = bc_open_session(0, g);
  int n = 0;
  long long first[3];
  sample(csv, n, "start", first);
  soak_phase(s, csv, &n, "null", SOAK_NULL, SOAK_EVERY_NULL);
  soak_phase(s, csv, &n, "dense", SOAK_DENSE, SOAK_EVERY_DENSE);
  tf_session_free(s);
  tf_graph_free(g);
  fclose(csv);
  printf("soak: samples in %s\n", path);
}

static const char *soak_arg(int argc, char **argv) {
  for (int i = 1; i + 1 < argc; i++) {
    if (strcmp(argv[i], "--soak") == 0) {
      return argv[i + 1];
    }
  }
  return NULL;
}

static bool tls_arg(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--tls") == 0) {
      return true;
    }
  }
  const char *e = getenv("TF_BENCH_TLS");
  return e != NULL && strcmp(e, "1") == 0;
}

/* The null and dense steps again on a tls+tcp cluster, against the tcp
 * cluster's medians. */
static void bench_tls(const char *bin_dir, double null_med, double dense_med) {
  bc_tls = true;
  bc_start(bin_dir, 1, 1, 30000);
  double tls_null, tls_null_p90, tls_dense;
  bench_steps(&tls_null, &tls_null_p90, &tls_dense);
  bc_stop();
  bc_tls = false;
  printf("tls_null_step_us: %.1f\ntls_null_step_p90_us: %.1f\n", tls_null * 1e6,
         tls_null_p90 * 1e6);
  printf("tls_dense_step_ms: %.2f\ntls_dense_gbps: %.3f\n", tls_dense * 1e3,
         (double)DENSE_BYTES / tls_dense / 1e9);
  printf("tls_null_vs_tcp: %.2f\ntls_dense_vs_tcp: %.2f\n", tls_null / null_med,
         tls_dense / dense_med);
}

int main(int argc, char **argv) {
  signal(SIGPIPE, SIG_IGN);
  signal(SIGINT, bc_on_signal);
  signal(SIGTERM, bc_on_signal);
  atexit(bc_stop);
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (soak_arg(argc, argv) != NULL) {
    bc_start(bin_dir_arg(argc, argv), 1, 1, 30000);
    soak(soak_arg(argc, argv));
    bc_stop();
    return 0;
  }
  double rtt_med, rtt_p90;
  bench_rtt(&rtt_med, &rtt_p90);
  printf("rpc_rtt_us: %.1f\nrpc_rtt_p90_us: %.1f\n", rtt_med, rtt_p90);

  bc_start(bin_dir_arg(argc, argv), 1, 1, 30000);
  double null_med, null_p90, dense_med;
  bench_steps(&null_med, &null_p90, &dense_med);
  double loop_iter = bench_loop();
  bc_stop();
  double dense_gbps = (double)DENSE_BYTES / dense_med / 1e9;
  printf("null_step_us: %.1f\nnull_step_p90_us: %.1f\n", null_med * 1e6, null_p90 * 1e6);
  printf("dense_step_ms: %.2f\ndense_gbps: %.3f\n", dense_med * 1e3, dense_gbps);

  bc_auth = true;
  bc_start(bin_dir_arg(argc, argv), 1, 1, 30000);
  double anull_med, anull_p90, adense_med;
  bench_steps(&anull_med, &anull_p90, &adense_med);
  bc_stop();
  bc_auth = false;
  printf("auth_null_step_us: %.1f\nauth_null_step_p90_us: %.1f\nauth_dense_step_ms: %.2f\n",
         anull_med * 1e6, anull_p90 * 1e6, adense_med * 1e3);
  printf("auth_null_ratio: %.2f\nauth_dense_ratio: %.2f\n", anull_med / null_med,
         adense_med / dense_med);

  double tcp_med = bench_tcp();
  double tcp_gbps = (double)DENSE_BYTES / tcp_med / 1e9;
  printf("tcp_ms: %.2f\ntcp_gbps: %.3f\n", tcp_med * 1e3, tcp_gbps);
  printf("null_step_vs_rtt: %.2f\n", null_med * 1e6 / rtt_med);
  printf("dense_vs_tcp: %.2f\n", dense_gbps / tcp_gbps);
  printf("dist_loop_iter_us: %.1f\n", loop_iter * 1e6);
  printf("dist_loop_iter_vs_rtt: %.2f\n", loop_iter * 1e6 / rtt_med);
  if (tls_arg(argc, argv)) {
    bench_tls(bin_dir_arg(argc, argv), null_med, dense_med);
  }
  return 0;
}
