/* Tests for the server's bounds on what arrives from outside: a frame that
 * declares 1 GiB (sent over a raw TCP socket speaking NNG's SP handshake)
 * is refused under a 1 KiB max_msg_bytes without the server allocating it
 * (the process's mapped size, /proc/self/statm's first field, does not
 * grow by the declared size: NNG's calloc of an untouched buffer shows
 * there, not in the resident size; a control run under a larger cap shows
 * the measurement catches the allocation); the (N+1)th connection is closed
 * at once while the first N keep working, counted and logged; idle
 * connections are closed after idle_connection_ms while active ones, and
 * ones with a call in progress, are not; connections ended by the sweep
 * in the middle of a frame leave the server whole. Every wait is
 * bounded. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>

#include "test/unit/transport/rpc_testlib.h"

/* ---- a server that reports the pipe of each request --------------------- */

/* GetStatus answers {pipe}; RunGraph {ms} answers after ms on a thread. */
static void pipe_handler(void *arg, struct tf_rpc_call *c);

static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;
static int refusal_lines;

static void count_log(void *arg, int prio, const char *msg) {
  pthread_mutex_lock(&log_mu);
  refusal_lines += strstr(msg, "refused") != NULL;
  pthread_mutex_unlock(&log_mu);
}

static int refusal_count(void) {
  pthread_mutex_lock(&log_mu);
  int n = refusal_lines;
  pthread_mutex_unlock(&log_mu);
  return n;
}

static tf_rpc_server *pipe_server(int max_conns, int64_t idle_ms,
                                  int64_t max_bytes) {
  tf_rpc_server_options o;
  tf_rpc_server_options_init(&o, "tcp://127.0.0.1:0");
  o.handler_threads = 2;
  o.max_calls = 16;
  o.max_connections = max_conns;
  o.idle_connection_ms = idle_ms;
  o.max_msg_bytes = max_bytes;
  o.log = count_log;
  tf_rpc_server *s;
  tf_status st;
  ck_assert_msg(tf_rpc_server_start(&o, pipe_handler, NULL, &s, &st) == TF_OK,
                "%s", st.msg);
  return s;
}

static nng_msg *pipe_reply(struct tf_rpc_call *c) {
  tf_wire_writer *w = tf_rpc_reply_writer(c);
  msgpack_pack_map(tf_wire_body(w), 1);
  tf_wire_pack_str(tf_wire_body(w), "pipe");
  msgpack_pack_uint32(tf_wire_body(w), tf_rpc_call_pipe(c));
  nng_msg *m;
  tf_status st;
  ck_assert(tf_wire_finish(w, &m, &st) == TF_OK);
  return m;
}

typedef struct later {
  struct tf_rpc_call *c;
  int64_t ms;
} later;

static void *later_main(void *arg) {
  later *l = arg;
  rt_sleep_ms(l->ms);
  tf_rpc_reply(l->c, pipe_reply(l->c));
  free(l);
  return NULL;
}

static void pipe_handler(void *arg, struct tf_rpc_call *c) {
  const tf_wire_msg *req = tf_rpc_call_request(c);
  if (req->h.method != TF_M_RUN_GRAPH) {
    tf_rpc_reply(c, pipe_reply(c));
    return;
  }
  later *l = malloc(sizeof *l);
  *l = (later){c, 0};
  tf_wire_get_i64(&req->body, "ms", "later", &l->ms, NULL);
  pthread_t th;
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  ck_assert_int_eq(pthread_create(&th, &a, later_main, l), 0);
  pthread_attr_destroy(&a);
}

/* The pipe a call to c went over; -1 and st when it failed. */
static int64_t call_pipe(tf_rpc_client *c, int method, int64_t ms,
                         int64_t timeout_ms, tf_status *st) {
  tf_wire_msg *r;
  if (tf_rpc_call(c, rt_request(method, 0, "ms", ms), timeout_ms, &r, st) !=
      TF_OK) {
    return -1;
  }
  uint64_t p = 0;
  ck_assert(tf_wire_get_u64(&r->body, "pipe", "reply", &p, NULL) == TF_OK);
  tf_wire_msg_free(r);
  return (int64_t)p;
}

static int64_t pipe_ok(tf_rpc_client *c) {
  tf_status st;
  int64_t p = call_pipe(c, TF_M_GET_STATUS, 0, 3000, &st);
  ck_assert_msg(p > 0, "%s", st.msg);
  return p;
}

static tf_rpc_server_stats stats_of(const tf_rpc_server *s) {
  tf_rpc_server_stats x;
  tf_rpc_server_get_stats(s, &x);
  return x;
}

/* ---- max_msg_bytes ------------------------------------------------------ */

/* The process's mapped size in bytes (/proc/self/statm, field 1). */
static int64_t mapped_bytes(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  ck_assert(f != NULL);
  long long pages = 0;
  ck_assert_int_eq(fscanf(f, "%lld", &pages), 1);
  fclose(f);
  return pages * sysconf(_SC_PAGESIZE);
}

/* Connects to port and does NNG's SP handshake as a req0 peer. */
static int sp_connect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_port = htons((uint16_t)port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  ck_assert(connect(fd, (struct sockaddr *)&a, sizeof a) == 0);
  static const unsigned char hello[8] = {0, 'S', 'P', 0, 0, 0x30, 0, 0};
  ck_assert(write(fd, hello, 8) == 8);
  unsigned char peer[8];
  struct pollfd p = {.fd = fd, .events = POLLIN};
  ck_assert_int_eq(poll(&p, 1, 3000), 1);
  ck_assert_int_eq(read(fd, peer, 8), 8);
  ck_assert(peer[1] == 'S' && peer[2] == 'P' && peer[5] == 0x31); /* rep0 */
  return fd;
}

/* Sends a frame header declaring `declared` bytes, then the first 4 of
 * them (a request id). */
static void send_frame_start(int fd, uint64_t declared) {
  unsigned char frame[12] = {0};
  for (int i = 0; i < 8; i++) {
    frame[i] = (unsigned char)(declared >> (56 - 8 * i));
  }
  memcpy(frame + 8, "\x80\0\0\1", 4);
  ck_assert(write(fd, frame, sizeof frame) == (ssize_t)sizeof frame);
}

/* Whether the peer closes fd within ms. */
static bool closed_within(int fd, int ms) {
  struct pollfd p = {.fd = fd, .events = POLLIN};
  int64_t end = rt_now_ms() + ms;
  while (rt_now_ms() < end) {
    if (poll(&p, 1, 50) == 1) {
      char buf[64];
      ssize_t got = read(fd, buf, sizeof buf);
      if (got == 0 || (got < 0 && errno == ECONNRESET)) {
        return true;
      }
    }
  }
  return false;
}

START_TEST(test_huge_frame_refused_before_allocation) {
  const uint64_t gib = 1ull << 30;
  tf_rpc_server *s = pipe_server(16, 60000, 1024);
  char url[64];
  rt_tcp_url(s, url, sizeof url);
  tf_rpc_client *c = rt_client(url, 0);
  pipe_ok(c); /* threads started and their malloc arenas mapped */
  int64_t before = mapped_bytes();
  int fd = sp_connect(tf_rpc_server_port(s));
  send_frame_start(fd, gib);
  ck_assert_msg(closed_within(fd, 3000), "the 1 GiB frame was not refused");
  int64_t grew = mapped_bytes() - before;
  close(fd);
  ck_assert_msg(grew < (int64_t)(gib / 2), "mapped size grew by %lld bytes",
                (long long)grew);
  /* A message just over 1 KiB from a real client is refused too; small
   * ones pass. */
  tf_tensor *t = tt_rand(TF_UINT8, tf_shape_of(1, 1100), 0, 255);
  tf_wire_msg *r;
  tf_status st;
  tf_code code = tf_rpc_call(c, rt_echo_request(&t, 1, 0), 300, &r, &st);
  ck_assert_msg(code == TF_UNAVAILABLE || code == TF_DEADLINE_EXCEEDED, "%s",
                st.msg);
  tf_tensor_unref(t);
  pipe_ok(c);
  tf_rpc_client_free(c);
  tf_rpc_server_stop(s);
}
END_TEST

/* Control: under a 512 MiB cap a frame declaring 256 MiB is allocated as
 * soon as its header arrives, and the measurement above sees it. The rest
 * of the frame is then sent, so the server answers (the bytes are not a
 * wire message) and stops cleanly. */
START_TEST(test_allocation_is_measured) {
  const uint64_t declared = 256ull << 20;
  tf_rpc_server *s = pipe_server(16, 60000, 2 * (int64_t)declared);
  char url[64];
  rt_tcp_url(s, url, sizeof url);
  tf_rpc_client *c = rt_client(url, 0);
  pipe_ok(c);
  int64_t before = mapped_bytes();
  int fd = sp_connect(tf_rpc_server_port(s));
  send_frame_start(fd, declared);
  int64_t peak = 0;
  for (int i = 0; i < 300 && peak < (int64_t)declared; i++) {
    rt_sleep_ms(10);
    peak = TF_MAX(peak, mapped_bytes() - before);
  }
  ck_assert_msg(peak >= (int64_t)(declared * 3 / 4),
                "mapped size grew by only %lld bytes", (long long)peak);
  char *zeros = calloc(1, 1 << 20);
  for (uint64_t left = declared - 4; left > 0;) {
    size_t n = (size_t)TF_MIN(left, 1u << 20);
    ssize_t w = write(fd, zeros, n);
    ck_assert_int_gt(w, 0);
    left -= (uint64_t)w;
  }
  free(zeros);
  struct pollfd p = {.fd = fd, .events = POLLIN};
  ck_assert_int_eq(poll(&p, 1, 10000), 1); /* the INVALID_ARGUMENT reply */
  ck_assert_int_eq(tf_rpc_server_rejected(s), 1);
  close(fd);
  tf_rpc_client_free(c);
  tf_rpc_server_stop(s);
}
END_TEST

START_TEST(test_limit_options_checked) {
  tf_rpc_server_options o;
  tf_rpc_server_options_init(&o, "inproc://conn_opts");
  tf_rpc_server *s = (tf_rpc_server *)1;
  tf_status st;
  o.max_msg_bytes = 0;
  ck_assert_int_eq(tf_rpc_server_start(&o, pipe_handler, NULL, &s, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert(s == NULL);
  ck_assert_str_eq(st.msg, "rpc server for 'inproc://conn_opts': "
                           "max_msg_bytes must be > 0 (got 0)");
  tf_rpc_server_options_init(&o, "inproc://conn_opts");
  o.max_connections = 0;
  ck_assert_int_eq(tf_rpc_server_start(&o, pipe_handler, NULL, &s, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "max_connections must be >= 1 (got 0)"), "%s",
                st.msg);
  tf_rpc_server_options_init(&o, "inproc://conn_opts");
  o.max_calls = 70000;
  ck_assert_int_eq(tf_rpc_server_start(&o, pipe_handler, NULL, &s, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "max_calls must be in [1, 65536] (got 70000)"),
                "%s", st.msg);
  tf_rpc_server_options_init(&o, "inproc://conn_opts");
  o.idle_connection_ms = -5;
  ck_assert_int_eq(tf_rpc_server_start(&o, pipe_handler, NULL, &s, &st),
                   TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "idle_connection_ms must be >= 1 (got -5)"),
                "%s", st.msg);
}
END_TEST

/* ---- max_connections ---------------------------------------------------- */

START_TEST(test_connection_beyond_cap_is_closed) {
  tf_rpc_server *s = pipe_server(2, 60000, 1 << 20);
  char url[64];
  rt_tcp_url(s, url, sizeof url);
  tf_rpc_client *a = rt_client(url, 0), *b = rt_client(url, 0);
  int64_t pa = pipe_ok(a), pb = pipe_ok(b);
  ck_assert(pa != pb);
  ck_assert_int_eq(stats_of(s).connections, 2);
  /* Raw SP peers: an NNG client whose pipe is closed as it sends leaks the
   * request inside NNG 1.5's req0 (its pipe close stops the send aio
   * before taking the socket lock). */
  int64_t t0 = rt_now_ms();
  for (int i = 0; i < 3; i++) {
    int fd = sp_connect(tf_rpc_server_port(s));
    ck_assert_msg(closed_within(fd, 1000), "connection %d was kept", i + 3);
    close(fd);
  }
  int64_t el = rt_now_ms() - t0;
  tf_rpc_server_stats x = stats_of(s);
  ck_assert_int_eq(x.connections_refused, 3);
  ck_assert_int_eq(x.connections, 2);
  for (int i = 0; i < 100 && refusal_count() == 0; i++) {
    rt_sleep_ms(10); /* the line is written after the close */
  }
  pthread_mutex_lock(&log_mu);
  ck_assert_int_ge(refusal_lines, 1);
  ck_assert_int_le(refusal_lines, 1 + el / 1000); /* one line a second */
  pthread_mutex_unlock(&log_mu);
  ck_assert_int_eq(pipe_ok(a), pa); /* the first two were never disturbed */
  ck_assert_int_eq(pipe_ok(b), pb);
  tf_rpc_client_free(a);
  for (int i = 0; i < 300 && stats_of(s).connections > 1; i++) {
    rt_sleep_ms(10);
  }
  tf_rpc_client *c = rt_client(url, 0); /* room again */
  pipe_ok(c);
  int fd = sp_connect(tf_rpc_server_port(s));
  ck_assert(closed_within(fd, 1000)); /* and full again */
  close(fd);
  ck_assert_int_eq(stats_of(s).connections, 2);
  ck_assert_int_eq(stats_of(s).connections_refused, 4);
  tf_rpc_client_free(b);
  tf_rpc_client_free(c);
  tf_rpc_server_stop(s);
}
END_TEST

/* ---- idle connections --------------------------------------------------- */

typedef struct slow_call {
  atomic_int done;
  tf_status st;
  uint64_t pipe;
} slow_call;

static void slow_done(void *arg, const tf_status *st, tf_wire_msg *reply) {
  slow_call *k = arg;
  k->st = *st;
  if (reply != NULL) {
    tf_wire_get_u64(&reply->body, "pipe", "reply", &k->pipe, NULL);
    tf_wire_msg_free(reply);
  }
  atomic_store(&k->done, 1);
}

START_TEST(test_idle_connections_closed_active_kept) {
  tf_rpc_server *s = pipe_server(16, 300, 1 << 20);
  char url[64];
  rt_tcp_url(s, url, sizeof url);
  tf_rpc_client *idle = rt_client(url, 0), *busy = rt_client(url, 0),
                *slow = rt_client(url, 0);
  int64_t p_idle = pipe_ok(idle), p_busy = pipe_ok(busy),
          p_slow = pipe_ok(slow);
  /* `slow` has one call of 900 ms in progress: its pipe must stay; `busy`
   * calls every 50 ms; `idle` does nothing for 1 s. */
  slow_call k = {0};
  tf_rpc_call_async(slow, rt_request(TF_M_RUN_GRAPH, 0, "ms", 900), 3000,
                    slow_done, &k);
  int64_t t0 = rt_now_ms();
  while (rt_now_ms() - t0 < 1000) {
    ck_assert_int_eq(pipe_ok(busy), p_busy);
    rt_sleep_ms(50);
  }
  for (int i = 0; i < 300 && !atomic_load(&k.done); i++) {
    rt_sleep_ms(10);
  }
  ck_assert_msg(atomic_load(&k.done) && k.st.code == TF_OK, "%s", k.st.msg);
  ck_assert_int_eq((int64_t)k.pipe, p_slow); /* answered on the same pipe */
  /* `idle`'s pipe went (and the pipes it redialled since, idle too). */
  ck_assert_int_ge(stats_of(s).connections_idle_closed, 1);
  int64_t p_again = pipe_ok(idle); /* the client redials */
  ck_assert(p_again != p_idle);
  ck_assert_int_eq(pipe_ok(busy), p_busy);
  tf_rpc_client_free(idle);
  tf_rpc_client_free(busy);
  tf_rpc_client_free(slow);
  tf_rpc_server_stop(s);
}
END_TEST

/* ---- pipes ended mid-frame ------------------------------------------------ */

/* Slow senders: connections that send a valid frame a byte every 2 ms, so
 * that NNG is always between two reads of a frame, while the idle sweep
 * (idle 40 ms: the senders have no call in progress) ends them. Closing
 * such a pipe with nng_pipe_close can hang NNG 1.5.2's reaper for good
 * (pipe_shutdown.h); after 3 s of this every connection must be gone
 * within 2 s, the server must answer, and it must stop at once. */
typedef struct dribbler {
  int port;
  int64_t until_ms;
  atomic_int frames_cut;
} dribbler;

static void *dribble_main(void *arg) {
  dribbler *d = arg;
  unsigned char frame[8 + 4 + 400];
  for (int i = 0; i < 8; i++) {
    frame[i] = (unsigned char)((uint64_t)(4 + 400) >> (56 - 8 * i));
  }
  memcpy(frame + 8, "\x80\0\0\1", 4);
  memset(frame + 12, 0x90, 400);
  while (rt_now_ms() < d->until_ms) {
    int fd = sp_connect(d->port);
    for (size_t at = 0; at < sizeof frame && rt_now_ms() < d->until_ms; at++) {
      if (send(fd, frame + at, 1, MSG_NOSIGNAL) != 1) {
        atomic_fetch_add(&d->frames_cut, 1); /* the sweep ended it */
        break;
      }
      rt_sleep_ms(2);
    }
    close(fd);
  }
  return NULL;
}

START_TEST(test_pipes_swept_mid_frame_end) {
  tf_rpc_server *s = pipe_server(64, 40, 1 << 20);
  char url[64];
  rt_tcp_url(s, url, sizeof url);
  enum { N = 6 };
  dribbler d = {.port = tf_rpc_server_port(s), .until_ms = rt_now_ms() + 3000};
  pthread_t th[N];
  for (int i = 0; i < N; i++) {
    ck_assert_int_eq(pthread_create(&th[i], NULL, dribble_main, &d), 0);
  }
  for (int i = 0; i < N; i++) {
    pthread_join(th[i], NULL);
  }
  ck_assert_int_gt(atomic_load(&d.frames_cut), 10); /* the sweep ended frames */
  int64_t t0 = rt_now_ms();
  while (stats_of(s).connections > 0 && rt_now_ms() - t0 < 2000) {
    rt_sleep_ms(10);
  }
  ck_assert_msg(stats_of(s).connections == 0,
                "%d connection(s) still open 2 s after the senders stopped: NNG no longer "
                "removes ended pipes", stats_of(s).connections);
  tf_rpc_client *c = rt_client(url, 0);
  pipe_ok(c);
  tf_rpc_client_free(c);
  t0 = rt_now_ms();
  tf_rpc_server_stop(s);
  ck_assert_int_lt(rt_now_ms() - t0, 2000);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("rpc_conn");
  TCase *tc = tcase_create("rpc_conn");
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, test_huge_frame_refused_before_allocation);
  tcase_add_test(tc, test_allocation_is_measured);
  tcase_add_test(tc, test_limit_options_checked);
  tcase_add_test(tc, test_connection_beyond_cap_is_closed);
  tcase_add_test(tc, test_idle_connections_closed_active_kept);
  tcase_add_test(tc, test_pipes_swept_mid_frame_end);
  suite_add_tcase(s, tc);
  return s;
}
