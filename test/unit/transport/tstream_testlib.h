/* tstream_testlib.h: what the tensor stream's tests (tensor_stream_test.c,
 * tensor_stream_faults_test.c) share: a deliver callback that records
 * frames (the sink), a done callback to wait on, servers and clients on
 * loopback with this test's identities, counters polled with a deadline,
 * and raw sockets to play a hostile or broken peer. Every wait is bounded
 * by WAIT_MS. */
#ifndef TF_TEST_UNIT_TRANSPORT_TSTREAM_TESTLIB_H
#define TF_TEST_UNIT_TRANSPORT_TSTREAM_TESTLIB_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "lib/transport/tensor_stream.h"
#include "lib/transport/tstream_frame.h"
#include "test/unit/testutil.h"

#define SELF "/job:worker/replica:0/task:1"
#define SELF_INC 0x51u
#define PEER "/job:ps/replica:0/task:0"
#define WAIT_MS 10000
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* ---- helpers ------------------------------------------------------------ */

static inline int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline void sleep_ms(int64_t ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
  nanosleep(&ts, NULL);
}

/* What the server delivered: frames kept in arrival order. */
typedef struct got {
  uint64_t step;
  char key[64], from[64], to[64];
  uint64_t from_inc, to_inc;
  bool dead;
  tf_dtype dtype;
  tf_shape shape;
  tf_tensor *t;
} got;

typedef struct sink {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  got *v;
  int n, cap;
  bool keep;          /* keep tensors (else only headers) */
  const char *refuse; /* deliver fails frames with this key */
  atomic_int logs;
  char last_log[512];
} sink;

static inline void sink_init(sink *k, bool keep) {
  memset(k, 0, sizeof *k);
  pthread_mutex_init(&k->mu, NULL);
  pthread_cond_init(&k->cv, NULL);
  k->keep = keep;
}

static inline void sink_fini(sink *k) {
  for (int i = 0; i < k->n; i++) {
    tf_tensor_unref(k->v[i].t);
  }
  free(k->v);
  pthread_cond_destroy(&k->cv);
  pthread_mutex_destroy(&k->mu);
}

static inline tf_code deliver(void *arg, const tf_tstream_hdr *h, tf_tensor *t,
                       tf_status *st) {
  sink *k = arg;
  if (k->refuse != NULL && strcmp(h->key, k->refuse) == 0) {
    return tf_status_set(st, TF_ABORTED, "refused %s", h->key);
  }
  pthread_mutex_lock(&k->mu);
  if (k->n == k->cap) {
    k->cap = k->cap ? 2 * k->cap : 64;
    k->v = realloc(k->v, (size_t)k->cap * sizeof *k->v);
  }
  got *g = &k->v[k->n++];
  memset(g, 0, sizeof *g);
  g->step = h->step_id;
  snprintf(g->key, sizeof g->key, "%s", h->key);
  snprintf(g->from, sizeof g->from, "%s", h->from);
  snprintf(g->to, sizeof g->to, "%s", h->to);
  g->from_inc = h->from_inc;
  g->to_inc = h->to_inc;
  g->dead = h->is_dead;
  g->dtype = h->dtype;
  g->shape = h->shape;
  g->t = k->keep ? tf_tensor_ref(t) : NULL;
  pthread_cond_broadcast(&k->cv);
  pthread_mutex_unlock(&k->mu);
  return TF_OK;
}

static inline void log_line(void *arg, const char *line) {
  sink *k = arg;
  pthread_mutex_lock(&k->mu);
  snprintf(k->last_log, sizeof k->last_log, "%s", line);
  pthread_mutex_unlock(&k->mu);
  atomic_fetch_add(&k->logs, 1);
}

/* Waits up to WAIT_MS for n frames. */
static inline void sink_wait(sink *k, int n) {
  int64_t end = now_ms() + WAIT_MS;
  pthread_mutex_lock(&k->mu);
  while (k->n < n && now_ms() < end) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 20000000;
    if (ts.tv_nsec >= 1000000000) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000;
    }
    pthread_cond_timedwait(&k->cv, &k->mu, &ts);
  }
  int have = k->n;
  pthread_mutex_unlock(&k->mu);
  ck_assert_msg(have >= n, "%d frames delivered, want %d", have, n);
}

static inline tf_tstream_server_opts server_opts(sink *k) {
  tf_tstream_server_opts o = tf_tstream_server_opts_default();
  o.url = "tcp://127.0.0.1:0";
  o.self_task = SELF;
  o.self_incarnation = SELF_INC;
  o.log = log_line;
  o.log_arg = k;
  return o;
}

static inline tf_tstream_server *start_server(const tf_tstream_server_opts *o,
                                       sink *k) {
  tf_tstream_server *s = NULL;
  tf_status st;
  tf_status_init(&st);
  ck_assert_msg(tf_tstream_server_start(o, deliver, k, &s, &st) == TF_OK,
                "%s", st.msg);
  return s;
}

static inline tf_tstream_client *client_for(tf_tstream_server *s,
                                     const tf_tstream_client_opts *o) {
  tf_tstream_client *c = NULL;
  tf_status st;
  tf_status_init(&st);
  ck_assert_msg(tf_tstream_client_new(tf_tstream_server_url(s), o, &c, &st) ==
                    TF_OK, "%s", st.msg);
  return c;
}

/* A done callback that records its status and signals. */
typedef struct waiter {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int calls;
  tf_status st;
} waiter;

static inline void waiter_init(waiter *w) {
  memset(w, 0, sizeof *w);
  pthread_mutex_init(&w->mu, NULL);
  pthread_cond_init(&w->cv, NULL);
}

static inline void on_done(void *arg, const tf_status *st) {
  waiter *w = arg;
  pthread_mutex_lock(&w->mu);
  w->calls++;
  w->st = *st;
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
}

/* Waits for w's done call; returns its code. */
static inline tf_code waiter_wait(waiter *w) {
  int64_t end = now_ms() + WAIT_MS;
  pthread_mutex_lock(&w->mu);
  while (w->calls == 0 && now_ms() < end) {
    pthread_mutex_unlock(&w->mu);
    sleep_ms(2);
    pthread_mutex_lock(&w->mu);
  }
  int calls = w->calls;
  tf_code c = w->st.code;
  pthread_mutex_unlock(&w->mu);
  ck_assert_int_eq(calls, 1);
  return c;
}

static inline tf_tstream_hdr hdr(uint64_t step, const char *key) {
  return (tf_tstream_hdr){.step_id = step, .key = key, .from = PEER,
                          .from_inc = 7, .to = SELF, .to_inc = SELF_INC};
}

/* Sends one frame and waits for its done; returns the code (st: msg). */
static inline tf_code send_sync(tf_tstream_client *c, const tf_tstream_hdr *h,
                         tf_tensor *t, tf_status *st) {
  waiter w;
  waiter_init(&w);
  tf_tstream_send(c, h, t, on_done, &w);
  tf_code code = waiter_wait(&w);
  if (st != NULL) {
    *st = w.st;
  }
  return code;
}

/* Random bytes (bool: 0 or 1). */
static inline void fill_random(tf_tensor *t) {
  uint8_t *b = t->data;
  for (size_t i = 0; i < t->nbytes; i++) {
    b[i] = (uint8_t)tt_rand_u64();
    if (t->dtype == TF_BOOL) {
      b[i] &= 1;
    }
  }
}

static inline tf_tstream_server_stats stats_when(tf_tstream_server *s,
                                          bool (*pred)(const tf_tstream_server_stats *)) {
  int64_t end = now_ms() + WAIT_MS;
  tf_tstream_server_stats x = tf_tstream_server_stats_get(s);
  while (!pred(&x) && now_ms() < end) {
    sleep_ms(5);
    x = tf_tstream_server_stats_get(s);
  }
  ck_assert_msg(pred(&x), "server counters never reached the expected state");
  return x;
}

/* The counters once frames >= n: deliver runs before a frame is counted,
 * so a test that saw n deliveries waits here for the counts. */
static inline tf_tstream_server_stats stats_frames(tf_tstream_server *s, uint64_t n) {
  int64_t end = now_ms() + WAIT_MS;
  tf_tstream_server_stats x = tf_tstream_server_stats_get(s);
  while (x.frames < n && now_ms() < end) {
    sleep_ms(2);
    x = tf_tstream_server_stats_get(s);
  }
  ck_assert_msg(x.frames >= n, "%llu frames counted, want %llu",
                (unsigned long long)x.frames, (unsigned long long)n);
  return x;
}

/* ---- raw sockets -------------------------------------------------------- */

static inline int raw_connect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET,
                           .sin_port = htons((uint16_t)port),
                           .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
  struct timeval tv = {.tv_sec = WAIT_MS / 1000};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

static inline void raw_write(int fd, const void *p, size_t n) {
  const char *b = p;
  while (n > 0) {
    ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
    ck_assert_msg(w > 0, "send: %s", strerror(errno));
    b += w;
    n -= (size_t)w;
  }
}

/* True when the server closed fd (EOF or reset) within WAIT_MS. */
static inline bool raw_closed_by_peer(int fd) {
  char b[64];
  ssize_t r = recv(fd, b, sizeof b, 0);
  return r == 0 || (r < 0 && errno == ECONNRESET);
}

/* A listener that accepts and never reads (for stalls). */
static inline int raw_listen(int *port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET,
                           .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof sa;
  ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
  ck_assert_int_eq(listen(fd, 8), 0);
  getsockname(fd, (struct sockaddr *)&sa, &len);
  *port = ntohs(sa.sin_port);
  return fd;
}

/* A free loopback port nobody listens on. */
static inline int dead_port(void) {
  int p = 0;
  int fd = raw_listen(&p);
  close(fd);
  return p;
}

/* A frame's bytes: prefix + header packed from h (dtype and shape as
 * given) with payload_len declared. */
static inline size_t raw_frame(const tf_tstream_hdr *h, uint64_t payload_len,
                        uint8_t **out) {
  void *hb = NULL;
  size_t hl = 0;
  ck_assert_int_eq(tf__tstream_header_pack_raw(h, &hb, &hl, NULL), TF_OK);
  *out = malloc(TF__TSTREAM_PREFIX_BYTES + hl);
  tf__tstream_prefix_write(*out, (uint32_t)hl, payload_len);
  memcpy(*out + TF__TSTREAM_PREFIX_BYTES, hb, hl);
  free(hb);
  return TF__TSTREAM_PREFIX_BYTES + hl;
}

/* /proc/self/statm: total program size and resident set, in bytes. */
static inline void statm(int64_t *vm, int64_t *rss) {
  FILE *f = fopen("/proc/self/statm", "r");
  long long a = 0, b = 0;
  ck_assert(f != NULL && fscanf(f, "%lld %lld", &a, &b) == 2);
  fclose(f);
  long page = sysconf(_SC_PAGESIZE);
  *vm = a * page;
  *rss = b * page;
}

/* Reads exactly n bytes from fd. */
static inline void raw_read(int fd, void *p, size_t n) {
  char *b = p;
  while (n > 0) {
    ssize_t r = recv(fd, b, n, 0);
    ck_assert_msg(r > 0, "recv: %s", r == 0 ? "EOF" : strerror(errno));
    b += r;
    n -= (size_t)r;
  }
}

#endif
