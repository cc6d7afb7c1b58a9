/* bench_tstream.c: the tensor stream (lib/transport/tensor_stream.h)
 * against raw TCP and against one NNG message, 100 MB over loopback, all
 * in this process and in one run (`make bench-tstream`).
 *
 * 1. tcp: one loopback TCP connection between two threads, both buffers
 *    touched once and reused; a 1-byte request starts each transfer (as
 *    in bench_dist.c).
 * 2. tstream: a tensor stream server and client; the time from
 *    tf_tstream_send of a 100 MB float32 tensor to the server's deliver
 *    call, the receiver's tensor allocated per frame (the CPU allocator
 *    hands the freed block back, so steady state takes no page faults).
 * 3. nng_msg: what the message path costs for the same bytes: the tensor
 *    copied into an NNG message (nng_msg_append) and sent over a pair0
 *    socket, the receiver's NNG allocating the message it reads into.
 * The three are interleaved rep by rep, so load from elsewhere hits them
 * alike. Printed: each one's median ms and GB/s (1e9 bytes), then
 * tstream_vs_tcp (goal >= 0.9) and nng_msg_vs_tcp. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <nng/nng.h>
#include <nng/protocol/pair0/pair.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "lib/transport/tensor_stream.h"
#include "tf/tf.h"

#define ELEMS 25000000LL
#define BYTES (ELEMS * 4)
#define WARMUP 3
#define REPS_DEFAULT 21
#define MAX_REPS 200

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "bench_tstream: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  exit(1);
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_d);
  return v[n / 2];
}

/* ---- 1. raw TCP --------------------------------------------------------- */

typedef struct tcp_bench {
  int listen_fd, fd;
  char *sbuf, *rbuf;
  pthread_t th;
} tcp_bench;

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

static void *tcp_sender(void *arg) {
  tcp_bench *b = arg;
  int fd = accept(b->listen_fd, NULL, NULL);
  char go;
  while (fd >= 0 && full_io(fd, &go, 1, false)) {
    if (!full_io(fd, b->sbuf, (size_t)BYTES, true)) {
      break;
    }
  }
  if (fd >= 0) {
    close(fd);
  }
  return NULL;
}

static void tcp_open(tcp_bench *b) {
  b->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof sa;
  if (b->listen_fd < 0 || bind(b->listen_fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
      listen(b->listen_fd, 1) != 0 ||
      getsockname(b->listen_fd, (struct sockaddr *)&sa, &len) != 0) {
    die("tcp listen: %s", strerror(errno));
  }
  b->sbuf = malloc((size_t)BYTES);
  b->rbuf = malloc((size_t)BYTES);
  if (b->sbuf == NULL || b->rbuf == NULL) {
    die("out of memory");
  }
  memset(b->sbuf, 1, (size_t)BYTES);
  memset(b->rbuf, 0, (size_t)BYTES);
  pthread_create(&b->th, NULL, tcp_sender, b);
  b->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (connect(b->fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
    die("tcp connect: %s", strerror(errno));
  }
}

static double tcp_once(tcp_bench *b) {
  double t0 = now_s();
  char go = 1;
  if (!full_io(b->fd, &go, 1, true) || !full_io(b->fd, b->rbuf, (size_t)BYTES, false)) {
    die("tcp transfer failed: %s", strerror(errno));
  }
  return now_s() - t0;
}

static void tcp_close(tcp_bench *b) {
  close(b->fd);
  pthread_join(b->th, NULL);
  close(b->listen_fd);
  free(b->sbuf);
  free(b->rbuf);
}

/* ---- 2. tensor stream --------------------------------------------------- */

typedef struct ts_bench {
  tf_tstream_server *srv;
  tf_tstream_client *cli;
  tf_tensor *t;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int delivered, sent_ok;
  tf_status send_st;
} ts_bench;

static tf_code ts_deliver(void *arg, const tf_tstream_hdr *h, tf_tensor *t, tf_status *st) {
  ts_bench *b = arg;
  bool ok = t != NULL && t->nbytes == (size_t)BYTES && ((const float *)t->data)[ELEMS - 1] == 3.0f;
  pthread_mutex_lock(&b->mu);
  b->delivered += ok ? 1 : 1000000; /* a wrong tensor fails the bench */
  pthread_cond_broadcast(&b->cv);
  pthread_mutex_unlock(&b->mu);
  return TF_OK; /* t is borrowed: the server frees it, back to the cache */
}

static void ts_done(void *arg, const tf_status *st) {
  ts_bench *b = arg;
  pthread_mutex_lock(&b->mu);
  if (st->code == TF_OK) {
    b->sent_ok++;
  } else {
    b->send_st = *st;
  }
  pthread_cond_broadcast(&b->cv);
  pthread_mutex_unlock(&b->mu);
}

static void ts_open(ts_bench *b) {
  memset(b, 0, sizeof *b);
  pthread_mutex_init(&b->mu, NULL);
  pthread_cond_init(&b->cv, NULL);
  tf_status st;
  tf_status_init(&st);
  tf_tstream_server_opts o = tf_tstream_server_opts_default();
  o.url = "tcp://127.0.0.1:0";
  o.self_task = "/job:worker/replica:0/task:0";
  if (tf_tstream_server_start(&o, ts_deliver, b, &b->srv, &st) != TF_OK ||
      tf_tstream_client_new(tf_tstream_server_url(b->srv), NULL, &b->cli, &st) != TF_OK) {
    die("tensor stream: %s", st.msg);
  }
  tf_shape sh = tf_shape_of(1, ELEMS);
  if (tf_tensor_new(TF_FLOAT32, &sh, &b->t, &st) != TF_OK) {
    die("100 MB tensor: %s", st.msg);
  }
  float *d = b->t->data;
  for (int64_t i = 0; i < ELEMS; i++) {
    d[i] = 3.0f;
  }
}

/* Seconds from send to deliver. */
static double ts_once(ts_bench *b) {
  tf_tstream_hdr h = {.step_id = 1, .key = "bench;0:0", .from = "/job:ps/replica:0/task:0",
                      .to = "/job:worker/replica:0/task:0"};
  pthread_mutex_lock(&b->mu);
  int want = b->delivered + 1;
  pthread_mutex_unlock(&b->mu);
  double t0 = now_s();
  tf_tstream_send(b->cli, &h, b->t, ts_done, b);
  pthread_mutex_lock(&b->mu);
  while (b->delivered < want && b->send_st.code == TF_OK) {
    pthread_cond_wait(&b->cv, &b->mu);
  }
  double t = now_s() - t0;
  bool bad = b->delivered != want || b->send_st.code != TF_OK;
  pthread_mutex_unlock(&b->mu);
  if (bad) {
    die("tensor stream transfer failed: %s", b->send_st.code ? b->send_st.msg : "wrong tensor");
  }
  return t;
}

static void ts_close(ts_bench *b) {
  tf_tstream_client_free(b->cli);
  tf_tstream_server_stop(b->srv);
  tf_tensor_unref(b->t);
  pthread_cond_destroy(&b->cv);
  pthread_mutex_destroy(&b->mu);
}

/* ---- 3. one NNG message ------------------------------------------------- */

typedef struct msg_bench {
  nng_socket tx, rx;
  const tf_tensor *t;
} msg_bench;

static void nng_check(int rv, const char *what) {
  if (rv != 0) {
    die("%s: %s", what, nng_strerror(rv));
  }
}

static void msg_open(msg_bench *b, const tf_tensor *t) {
  b->t = t;
  nng_listener l;
  int port = 0;
  nng_check(nng_pair0_open(&b->rx), "nng_pair0_open");
  nng_check(nng_socket_set_size(b->rx, NNG_OPT_RECVMAXSZ, 0), "recv max size");
  nng_check(nng_listen(b->rx, "tcp://127.0.0.1:0", &l, 0), "nng_listen");
  nng_check(nng_listener_get_int(l, NNG_OPT_TCP_BOUND_PORT, &port), "bound port");
  char url[64];
  snprintf(url, sizeof url, "tcp://127.0.0.1:%d", port);
  nng_check(nng_pair0_open(&b->tx), "nng_pair0_open");
  nng_check(nng_dial(b->tx, url, NULL, 0), "nng_dial");
}

/* Seconds from copying the tensor into a message to receiving it. */
static double msg_once(msg_bench *b) {
  double t0 = now_s();
  nng_msg *m = NULL;
  nng_check(nng_msg_alloc(&m, 0), "nng_msg_alloc");
  nng_check(nng_msg_append(m, b->t->data, b->t->nbytes), "nng_msg_append");
  int rv = nng_sendmsg(b->tx, m, 0);
  if (rv != 0) {
    nng_msg_free(m);
    nng_check(rv, "nng_sendmsg");
  }
  nng_check(nng_recvmsg(b->rx, &m, 0), "nng_recvmsg");
  double t = now_s() - t0;
  if (nng_msg_len(m) != (size_t)BYTES) {
    die("nng message of %zu bytes", nng_msg_len(m));
  }
  nng_msg_free(m);
  return t;
}

static void msg_close(msg_bench *b) {
  nng_close(b->tx);
  nng_close(b->rx);
}

/* ---- main --------------------------------------------------------------- */

static int reps_arg(int argc, char **argv) {
  for (int i = 1; i + 1 < argc; i++) {
    if (strcmp(argv[i], "--reps") == 0) {
      int r = atoi(argv[i + 1]);
      if (r < 1 || r > MAX_REPS) {
        die("--reps must be 1..%d", MAX_REPS);
      }
      return r;
    }
  }
  return REPS_DEFAULT;
}

int main(int argc, char **argv) {
  signal(SIGPIPE, SIG_IGN);
  setvbuf(stdout, NULL, _IOLBF, 0);
  int reps = reps_arg(argc, argv);
  tcp_bench tcp;
  ts_bench ts;
  msg_bench msg;
  tcp_open(&tcp);
  ts_open(&ts);
  msg_open(&msg, ts.t);
  static double tt[MAX_REPS], tsv[MAX_REPS], tm[MAX_REPS];
  for (int i = 0; i < WARMUP + reps; i++) {
    double a = tcp_once(&tcp), b = ts_once(&ts), c = msg_once(&msg);
    if (i >= WARMUP) {
      tt[i - WARMUP] = a;
      tsv[i - WARMUP] = b;
      tm[i - WARMUP] = c;
    }
  }
  tf_tstream_server_stats x = tf_tstream_server_stats_get(ts.srv);
  msg_close(&msg);
  ts_close(&ts);
  tcp_close(&tcp);
  double mt = median(tt, reps), ms = median(tsv, reps), mm = median(tm, reps);
  printf("reps: %d (after %d warm-ups), %lld bytes each\n", reps, WARMUP, (long long)BYTES);
  printf("tcp_ms: %.2f\ntcp_gbps: %.3f\n", mt * 1e3, (double)BYTES / mt / 1e9);
  printf("tstream_ms: %.2f\ntstream_gbps: %.3f\n", ms * 1e3, (double)BYTES / ms / 1e9);
  printf("nng_msg_ms: %.2f\nnng_msg_gbps: %.3f\n", mm * 1e3, (double)BYTES / mm / 1e9);
  printf("tstream_connections: %llu\n", (unsigned long long)x.accepted);
  printf("tstream_vs_tcp: %.2f\n", mt / ms);
  printf("nng_msg_vs_tcp: %.2f\n", mt / mm);
  return 0;
}
