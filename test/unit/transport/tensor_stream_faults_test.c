/* Tests of the tensor stream's failure paths (lib/transport/
 * tensor_stream.h): hostile frames over a raw socket (bad magic, an
 * unknown version, a huge header length, a payload length that does not
 * match the shape, a string dtype, a bad bool, a payload over the cap
 * declared with 4 bytes sent: never allocated, by /proc/self/statm),
 * frames for another task (refused, logged once per peer), peers that die
 * or stall inside a frame (server: dropped at once, or after
 * io_timeout_ms), a receiver that resets mid-tensor (the sender fails at
 * once and redials; the next frame read back raw matches docs/wire.md),
 * the connection cap, idle closes on both sides, deliver errors, refused
 * dials, write stalls, freeing a client with frames queued, and stopping a
 * server with connections open or just admitted. */
#include <signal.h>
#include <sys/wait.h>

#include "test/unit/transport/tstream_testlib.h"

/* ---- hostile peers ------------------------------------------------------ */

static bool one_bad(const tf_tstream_server_stats *x) {
  return x->bad_frames >= 1 && x->open_connections == 0;
}

/* Writes bytes on a fresh raw connection; the server must close it and
 * count one bad frame, delivering nothing; its log names want. */
static void expect_refused(tf_tstream_server *s, sink *k, const void *b,
                           size_t n, const char *want) {
  uint64_t before = tf_tstream_server_stats_get(s).bad_frames;
  int fd = raw_connect(tf_tstream_server_port(s));
  raw_write(fd, b, n);
  ck_assert_msg(raw_closed_by_peer(fd), "the server kept the connection (%s)", want);
  close(fd);
  tf_tstream_server_stats x = stats_when(s, one_bad);
  ck_assert_uint_eq(x.bad_frames, before + 1);
  ck_assert_int_eq(k->n, 0);
  if (want != NULL) {
    pthread_mutex_lock(&k->mu);
    ck_assert_msg(strstr(k->last_log, want) != NULL, "log: %s", k->last_log);
    ck_assert_msg(strstr(k->last_log, "bad frame from 127.0.0.1:"), "log: %s", k->last_log);
    pthread_mutex_unlock(&k->mu);
  }
}

START_TEST(test_hostile_frames) {
  sink k;
  sink_init(&k, true);
  tf_tstream_server_opts o = server_opts(&k);
  o.max_tensor_bytes = 1ull << 30;
  tf_tstream_server *s = start_server(&o, &k);
  /* Bad magic (logged: the first bad frame from this host). */
  expect_refused(s, &k, "GET / HTTP/1.1\r\n\r\n", 18, "bad magic 47 45 54");
  /* The rest are logged no more (same host, same kind), only counted. */
  int logs = atomic_load(&k.logs);
  /* A header length of 4 GiB - 1. */
  uint8_t p[TF__TSTREAM_PREFIX_BYTES];
  tf__tstream_prefix_write(p, UINT32_MAX, 0);
  expect_refused(s, &k, p, sizeof p, NULL);
  /* A version this build does not speak, the rest of the frame valid. */
  tf_tstream_hdr h = hdr(1, "k");
  h.dtype = TF_FLOAT32;
  h.shape = tf_shape_of(1, 4);
  uint8_t *f = NULL;
  size_t n = raw_frame(&h, 16, &f);
  f[3] = TF__TSTREAM_VERSION + 1;
  expect_refused(s, &k, f, n, NULL);
  free(f);
  /* A payload length that does not match float32[4]. */
  n = raw_frame(&h, 20, &f);
  expect_refused(s, &k, f, n, NULL);
  free(f);
  /* A string dtype. */
  h.dtype = TF_STRING;
  n = raw_frame(&h, 64, &f);
  expect_refused(s, &k, f, n, NULL);
  free(f);
  /* A bool payload holding a 2. */
  h.dtype = TF_BOOL;
  h.shape = tf_shape_of(1, 3);
  n = raw_frame(&h, 3, &f);
  f = realloc(f, n + 3);
  memcpy(f + n, "\x01\x02\x00", 3);
  expect_refused(s, &k, f, n + 3, NULL);
  free(f);
  ck_assert_int_eq(atomic_load(&k.logs), logs);
  ck_assert_uint_eq(tf_tstream_server_stats_get(s).bad_frames, 6);
  tf_tstream_server_stop(s);
  sink_fini(&k);
}
END_TEST

/* A frame declaring 8 GiB against a 1 GiB cap, with 4 payload bytes sent:
 * refused from its prefix, and neither the address space nor the
 * resident set grows by anything like it. */
START_TEST(test_payload_over_cap_is_never_allocated) {
  sink k;
  sink_init(&k, true);
  tf_tstream_server_opts o = server_opts(&k);
  o.max_tensor_bytes = 1ull << 30;
  tf_tstream_server *s = start_server(&o, &k);
  tf_tstream_hdr h = hdr(1, "huge");
  h.dtype = TF_UINT8;
  h.shape = tf_shape_of(1, 8ll << 30);
  uint8_t *f = NULL;
  size_t n = raw_frame(&h, 8ull << 30, &f);
  f = realloc(f, n + 4);
  memcpy(f + n, "abcd", 4);
  int64_t vm0, rss0, vm1, rss1;
  statm(&vm0, &rss0);
  for (int i = 0; i < 4; i++) {
    expect_refused(s, &k, f, n + 4, i == 0 ? "payload length 8589934592 is over the limit of 1073741824 bytes" : NULL);
  }
  statm(&vm1, &rss1);
  /* Threads and their malloc arenas reserve some address space; the
   * four refused frames declared 32 GiB. */
  ck_assert_msg(vm1 - vm0 < (2ll << 30), "address space grew by %lld MiB",
                (long long)((vm1 - vm0) >> 20));
  ck_assert_msg(rss1 - rss0 < (32ll << 20), "resident set grew by %lld MiB",
                (long long)((rss1 - rss0) >> 20));
  free(f);
  tf_tstream_server_stop(s);
  sink_fini(&k);
}
END_TEST

static bool two_wrong(const tf_tstream_server_stats *x) {
  return x->wrong_task >= 2 && x->open_connections == 0;
}

static bool one_wrong(const tf_tstream_server_stats *x) {
  return x->wrong_task >= 1 && x->open_connections == 0;
}

START_TEST(test_frames_for_another_task_are_refused) {
  sink k;
  sink_init(&k, true);
  tf_tstream_server_opts o = server_opts(&k);
  tf_tstream_server *s = start_server(&o, &k);
  tf_tensor *t = tf_tensor_scalar_i64(3);
  /* Two clients (two connections) from one peer: refused twice, logged
   * once. */
  for (int i = 0; i < 2; i++) {
    tf_tstream_client *c = client_for(s, NULL);
    tf_tstream_hdr h = hdr(1, "misrouted");
    h.to = "/job:worker/replica:0/task:2";
    send_sync(c, &h, t, NULL); /* OK or UNAVAILABLE: the bytes may be gone */
    stats_when(s, i == 0 ? one_wrong : two_wrong);
    tf_tstream_client_free(c);
  }
  ck_assert_int_eq(atomic_load(&k.logs), 1);
  char want[256];
  snprintf(want, sizeof want, "wrong task at address: %s is %s (incarnation 0x51), the frame from %s was for /job:worker/replica:0/task:2 (incarnation 0x51)",
           tf_tstream_server_url(s), SELF, PEER);
  ck_assert_msg(strstr(k.last_log, want), "log: %s", k.last_log);
  /* This task under an incarnation it does not have. */
  tf_tstream_client *c = client_for(s, NULL);
  tf_tstream_hdr h = hdr(1, "stale");
  h.to_inc = SELF_INC + 1;
  send_sync(c, &h, t, NULL);
  tf_tstream_server_stats x = tf_tstream_server_stats_get(s);
  for (int64_t end = now_ms() + WAIT_MS; x.wrong_task < 3 && now_ms() < end;) {
    sleep_ms(5);
    x = tf_tstream_server_stats_get(s);
  }
  ck_assert_uint_eq(x.wrong_task, 3);
  tf_tstream_client_free(c);
  ck_assert_int_eq(k.n, 0);
  /* Incarnation 0 (whoever answers) and the right one are accepted. */
  c = client_for(s, NULL);
  h = hdr(1, "any_inc");
  h.to_inc = 0;
  ck_assert_int_eq(send_sync(c, &h, t, NULL), TF_OK);
  h = hdr(1, "right_inc");
  ck_assert_int_eq(send_sync(c, &h, t, NULL), TF_OK);
  sink_wait(&k, 2);
  ck_assert_str_eq(k.v[0].key, "any_inc");
  ck_assert_str_eq(k.v[1].key, "right_inc");
  tf_tstream_client_free(c);
  tf_tensor_unref(t);
  tf_tstream_server_stop(s);
  sink_fini(&k);
}
END_TEST

static bool one_broken(const tf_tstream_server_stats *x) {
  return x->broken >= 1 && x->open_connections == 0;
}

/* A child process writes a 64 MiB frame's prefix, header and 1 MiB of
 * payload, then is killed: the server drops the connection, frees the
 * tensor (ASan would report it) and delivers nothing; the next frame on a
 * new connection goes through. */
START_TEST(test_peer_killed_mid_payload) {
  sink k;
  sink_init(&k, true);
  tf_tstream_server_opts o = server_opts(&k);
  tf_tstream_server *s = start_server(&o, &k);
  tf_tstream_hdr h = hdr(1, "cut");
  h.dtype = TF_FLOAT32;
  h.shape = tf_shape_of(1, 16 << 20);
  uint8_t *f = NULL;
  size_t n = raw_frame(&h, 64ull << 20, &f);
  int go[2];
  ck_assert_int_eq(pipe(go), 0);
  pid_t pid = fork();
  if (pid == 0) {
    int fd = raw_connect(tf_tstream_server_port(s));
    raw_write(fd, f, n);
    static char part[1 << 20];
    raw_write(fd, part, sizeof part);
    char b = 1;
    if (write(go[1], &b, 1) != 1) {
      _exit(2);
    }
    pause(); /* until killed */
    _exit(0);
  }
  char b;
  ck_assert_int_eq(read(go[0], &b, 1), 1);
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  tf_tstream_server_stats x = stats_when(s, one_broken);
  ck_assert_uint_eq(x.broken, 1);
  ck_assert_uint_eq(x.frames, 0);
  ck_assert_int_eq(k.n, 0);
  pthread_mutex_lock(&k.mu);
  ck_assert_msg(strstr(k.last_log, "payload cut short after"), "log: %s", k.last_log);
  pthread_mutex_unlock(&k.mu);
  tf_tstream_client *c = client_for(s, NULL);
  tf_tensor *t = tf_tensor_scalar_f32(4);
  tf_tstream_hdr ok = hdr(2, "after");
  ck_assert_int_eq(send_sync(c, &ok, t, NULL), TF_OK);
  sink_wait(&k, 1);
  tf_tensor_unref(t);
  tf_tstream_client_free(c);
  tf_tstream_server_stop(s);
  free(f);
  close(go[0]);
  close(go[1]);
  sink_fini(&k);
}
END_TEST

/* A peer that closes inside a frame: 8 bytes of the prefix, or the prefix
 * and half the header. Each drops the connection (broken), delivers
 * nothing, and the first is logged naming what was cut short. */
START_TEST(test_truncated_frames) {
  sink k;
  sink_init(&k, true);
  tf_tstream_server_opts o = server_opts(&k);
  tf_tstream_server *s = start_server(&o, &k);
  tf_tstream_hdr h = hdr(1, "cut_header");
  h.dtype = TF_INT32;
  h.shape = tf_shape_of(1, 2);
  uint8_t *f = NULL;
  size_t n = raw_frame(&h, 8, &f);
  size_t cuts[2] = {8, TF__TSTREAM_PREFIX_BYTES + (n - TF__TSTREAM_PREFIX_BYTES) / 2};
  for (int i = 0; i < 2; i++) {
    int fd = raw_connect(tf_tstream_server_port(s));
    raw_write(fd, f, cuts[i]);
    close(fd);
    tf_tstream_server_stats x = tf_tstream_server_stats_get(s);
    for (int64_t end = now_ms() + WAIT_MS;
         (x.broken < (uint64_t)i + 1 || x.open_connections > 0) && now_ms() < end;) {
      sleep_ms(5);
      x = tf_tstream_server_stats_get(s);
    }
    ck_assert_uint_eq(x.broken, (uint64_t)i + 1);
    ck_assert_uint_eq(x.bad_frames + x.frames + x.idle_closed, 0);
    if (i == 0) {
      pthread_mutex_lock(&k.mu);
      ck_assert_msg(strstr(k.last_log, "prefix cut short after 8 bytes"), "log: %s", k.last_log);
      pthread_mutex_unlock(&k.mu);
    }
  }
  ck_assert_int_eq(atomic_load(&k.logs), 1); /* same host, same kind */
  ck_assert_int_eq(k.n, 0);
  free(f);
  tf_tstream_server_stop(s);
  sink_fini(&k);
}
END_TEST

/* A peer that stalls inside a frame (in the prefix, after the prefix,
 * inside the payload) is cut off after io_timeout_ms, not idle_ms. */
START_TEST(test_server_stall_inside_frame_times_out) {
  sink k;
  sink_init(&k, true);
  tf_tstream_server_opts o = server_opts(&k);
  o.io_timeout_ms = 200;
  tf_tstream_server *s = start_server(&o, &k);
  tf_tstream_hdr h = hdr(1, "stalled");
  h.dtype = TF_UINT8;
  h.shape = tf_shape_of(1, 4096);
  uint8_t *f = NULL;
  size_t n = raw_frame(&h, 4096, &f);
  f = realloc(f, n + 1000);
  memset(f + n, 7, 1000);
  size_t stops[3] = {8, TF__TSTREAM_PREFIX_BYTES, n + 1000};
  for (int i = 0; i < 3; i++) {
    int fd = raw_connect(tf_tstream_server_port(s));
    int64_t t0 = now_ms();
    raw_write(fd, f, stops[i]);
    ck_assert(raw_closed_by_peer(fd));
    int64_t el = now_ms() - t0;
    ck_assert_msg(el >= 190 && el < 3000, "stop %d: closed after %lld ms", i, (long long)el);
    close(fd);
  }
  tf_tstream_server_stats x = stats_when(s, one_broken);
  for (int64_t end = now_ms() + WAIT_MS; x.broken < 3 && now_ms() < end;) {
    sleep_ms(5);
    x = tf_tstream_server_stats_get(s);
  }
  ck_assert_uint_eq(x.broken, 3);
  ck_assert_uint_eq(x.idle_closed + x.frames, 0);
  ck_assert_int_eq(k.n, 0);
  free(f);
  tf_tstream_server_stop(s);
  sink_fini(&k);
}
END_TEST

/* Reads one frame from a raw socket with the codec and checks it is key
 * carrying t's bytes: the wire format as docs/wire.md gives it. */
static void raw_expect_frame(int fd, const char *key, const tf_tensor *t) {
  uint8_t pre[TF__TSTREAM_PREFIX_BYTES];
  raw_read(fd, pre, sizeof pre);
  ck_assert(memcmp(pre, "TFT\x01", 4) == 0);
  tf__tstream_prefix p;
  tf_status st;
  ck_assert_int_eq(tf__tstream_prefix_read(pre, 1ull << 30, &p, &st), TF_OK);
  ck_assert_uint_eq(p.payload_len, t->nbytes);
  uint8_t *b = malloc(p.header_len + p.payload_len);
  raw_read(fd, b, p.header_len + p.payload_len);
  tf__tstream_decoded d;
  ck_assert_msg(tf__tstream_header_decode(b, p.header_len, p.payload_len, &d, &st) == TF_OK,
                "%s", st.msg);
  ck_assert_str_eq(d.h.key, key);
  ck_assert_int_eq(d.h.dtype, t->dtype);
  ck_assert(tf_shape_equal(&d.h.shape, &t->shape));
  ck_assert(memcmp(b + p.header_len, t->data, t->nbytes) == 0);
  tf__tstream_decoded_fini(&d);
  free(b);
}

/* The receiver dies 1 MiB into a 64 MiB tensor (its socket reset): the
 * sender's done reports UNAVAILABLE at once (not at io_timeout_ms), naming
 * the URL and the key; the next frame goes over a new connection. */
START_TEST(test_receiver_dies_mid_tensor) {
  int port = 0;
  int lfd = raw_listen(&port);
  char url[64];
  snprintf(url, sizeof url, "tcp://127.0.0.1:%d", port);
  tf_tstream_client_opts co = tf_tstream_client_opts_default();
  co.max_connections = 1;
  tf_tstream_client *c = NULL;
  ck_assert_int_eq(tf_tstream_client_new(url, &co, &c, NULL), TF_OK);
  tf_shape sh = tf_shape_of(1, 64 << 20);
  tf_tensor *big = NULL;
  ck_assert_int_eq(tf_tensor_new_zeros(TF_UINT8, &sh, &big, NULL), TF_OK);
  waiter w;
  waiter_init(&w);
  tf_tstream_hdr h = hdr(1, "big");
  tf_tstream_send(c, &h, big, on_done, &w);
  int a = accept(lfd, NULL, NULL);
  ck_assert(a >= 0);
  static char part[1 << 20];
  raw_read(a, part, sizeof part);
  struct linger lg = {.l_onoff = 1, .l_linger = 0};
  setsockopt(a, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
  int64_t t0 = now_ms();
  close(a); /* RST */
  ck_assert_int_eq(waiter_wait(&w), TF_UNAVAILABLE);
  ck_assert_int_lt(now_ms() - t0, 3000);
  ck_assert_msg(strstr(w.st.msg, url) && strstr(w.st.msg, "key 'big'"), "%s", w.st.msg);
  /* The next frame redials and arrives intact. */
  tf_tensor *small = tt_rand(TF_FLOAT64, tf_shape_of(2, 3, 5), -1, 1);
  h = hdr(2, "again");
  ck_assert_int_eq(send_sync(c, &h, small, NULL), TF_OK);
  int b = accept(lfd, NULL, NULL);
  ck_assert(b >= 0);
  struct timeval tv = {.tv_sec = WAIT_MS / 1000};
  setsockopt(b, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  raw_expect_frame(b, "again", small);
  tf_tstream_client_free(c);
  ck_assert(tf_tensor_buffer_is_unique(big));
  tf_tensor_unref(big);
  tf_tensor_unref(small);
  close(b);
  close(lfd);
}
END_TEST

/* ---- connections -------------------------------------------------------- */

static bool one_refused_conn(const tf_tstream_server_stats *x) {
  return x->refused_connections >= 1;
}

START_TEST(test_connection_cap) {
  sink k;
  sink_init(&k, true);
  tf_tstream_server_opts o = server_opts(&k);
  o.max_connections = 1;
  tf_tstream_server *s = start_server(&o, &k);
  int a = raw_connect(tf_tstream_server_port(s));
  tf_tstream_server_stats x = tf_tstream_server_stats_get(s);
  for (int64_t end = now_ms() + WAIT_MS; x.open_connections < 1 && now_ms() < end;) {
    sleep_ms(5);
    x = tf_tstream_server_stats_get(s);
  }
  ck_assert_int_eq(x.open_connections, 1);
  int b = raw_connect(tf_tstream_server_port(s));
  ck_assert(raw_closed_by_peer(b));
  x = stats_when(s, one_refused_conn);
  ck_assert_uint_eq(x.refused_connections, 1);
  ck_assert_int_eq(x.open_connections, 1);
  close(b);
  close(a);
  tf_tstream_server_stop(s);
  sink_fini(&k);
}
END_TEST

static bool idle_closed(const tf_tstream_server_stats *x) {
  return x->idle_closed >= 1 && x->open_connections == 0;
}

static bool none_open(const tf_tstream_server_stats *x) {
  return x->accepted >= 1 && x->open_connections == 0;
}

/* The server closes a connection with no frame begun within idle_ms; the
 * client notices (its watch) and dials again for the next frame. */
START_TEST(test_server_idle_close_and_redial) {
  sink k;
  sink_init(&k, true);
  tf_tstream_server_opts o = server_opts(&k);
  o.idle_ms = 150;
  tf_tstream_server *s = start_server(&o, &k);
  tf_tstream_client *c = client_for(s, NULL);
  tf_tensor *t = tf_tensor_scalar_i32(1);
  tf_tstream_hdr h = hdr(1, "first");
  ck_assert_int_eq(send_sync(c, &h, t, NULL), TF_OK);
  tf_tstream_server_stats x = stats_when(s, idle_closed);
  ck_assert_uint_eq(x.idle_closed, 1);
  /* The client learns of the close from its watch read; give the FIN a
   * moment to arrive before the next frame (a frame written into a
   * socket the server has just closed is lost: done only says the kernel
   * took it). */
  sleep_ms(100);
  h = hdr(2, "second");
  ck_assert_int_eq(send_sync(c, &h, t, NULL), TF_OK);
  sink_wait(&k, 2);
  ck_assert_str_eq(k.v[1].key, "second");
  ck_assert_uint_eq(tf_tstream_server_stats_get(s).accepted, 2);
  tf_tensor_unref(t);
  tf_tstream_client_free(c);
  tf_tstream_server_stop(s);
  sink_fini(&k);
}
END_TEST

/* The client closes a connection unused for its idle_ms: the server sees
 * an orderly end between frames (not an idle close of its own). */
START_TEST(test_client_idle_close) {
  sink k;
  sink_init(&k, true);
  tf_tstream_server_opts o = server_opts(&k);
  tf_tstream_server *s = start_server(&o, &k);
  tf_tstream_client_opts co = tf_tstream_client_opts_default();
  co.idle_ms = 100;
  tf_tstream_client *c = client_for(s, &co);
  tf_tensor *t = tf_tensor_scalar_i32(1);
  tf_tstream_hdr h = hdr(1, "once");
  int64_t t0 = now_ms();
  ck_assert_int_eq(send_sync(c, &h, t, NULL), TF_OK);
  tf_tstream_server_stats x = stats_when(s, none_open);
  int64_t el = now_ms() - t0;
  ck_assert_msg(el >= 90 && el < 2000, "closed after %lld ms", (long long)el);
  ck_assert_uint_eq(x.idle_closed + x.broken + x.bad_frames, 0);
  ck_assert_int_eq(send_sync(c, &h, t, NULL), TF_OK);
  sink_wait(&k, 2);
  tf_tensor_unref(t);
  tf_tstream_client_free(c);
  tf_tstream_server_stop(s);
  sink_fini(&k);
}
END_TEST

static bool one_frame(const tf_tstream_server_stats *x) {
  return x->frames >= 1;
}

/* deliver's refusal is counted; the connection stays and the next frame
 * is delivered on it. */
START_TEST(test_deliver_errors_keep_the_connection) {
  sink k;
  sink_init(&k, true);
  k.refuse = "no";
  tf_tstream_server_opts o = server_opts(&k);
  tf_tstream_server *s = start_server(&o, &k);
  tf_tstream_client_opts co = tf_tstream_client_opts_default();
  co.max_connections = 1;
  tf_tstream_client *c = client_for(s, &co);
  tf_tensor *t = tf_tensor_scalar_i32(1);
  tf_tstream_hdr h = hdr(1, "no");
  ck_assert_int_eq(send_sync(c, &h, t, NULL), TF_OK);
  h = hdr(1, "yes");
  ck_assert_int_eq(send_sync(c, &h, t, NULL), TF_OK);
  tf_tstream_server_stats x = stats_when(s, one_frame);
  ck_assert_uint_eq(x.deliver_errors, 1);
  ck_assert_uint_eq(x.frames, 1);
  ck_assert_uint_eq(x.accepted, 1);
  ck_assert_str_eq(k.v[0].key, "yes");
  tf_tensor_unref(t);
  tf_tstream_client_free(c);
  tf_tstream_server_stop(s);
  sink_fini(&k);
}
END_TEST

/* ---- client failures ---------------------------------------------------- */

START_TEST(test_dial_refused_fails_queued_frames) {
  char url[64];
  snprintf(url, sizeof url, "tcp://127.0.0.1:%d", dead_port());
  tf_tstream_client *c = NULL;
  tf_status st;
  ck_assert_int_eq(tf_tstream_client_new(url, NULL, &c, &st), TF_OK);
  ck_assert_str_eq(tf_tstream_client_url(c), url);
  tf_tensor *t = tf_tensor_scalar_i32(1);
  waiter w[3];
  int64_t t0 = now_ms();
  for (int i = 0; i < 3; i++) {
    waiter_init(&w[i]);
    tf_tstream_hdr h = hdr(1, "k");
    tf_tstream_send(c, &h, t, on_done, &w[i]);
  }
  for (int i = 0; i < 3; i++) {
    ck_assert_int_eq(waiter_wait(&w[i]), TF_UNAVAILABLE);
    ck_assert_msg(strstr(w[i].st.msg, url) && strstr(w[i].st.msg, "key 'k': cannot connect: "),
                  "%s", w[i].st.msg);
  }
  ck_assert_int_lt(now_ms() - t0, 2000);
  tf_tensor_unref(t);
  tf_tstream_client_free(c);
}
END_TEST

/* A peer that accepts and never reads: a 64 MiB frame stalls once the
 * socket buffers are full and fails after io_timeout_ms. */
START_TEST(test_write_stall_times_out) {
  int port = 0;
  int lfd = raw_listen(&port);
  char url[64];
  snprintf(url, sizeof url, "tcp://127.0.0.1:%d", port);
  tf_tstream_client_opts co = tf_tstream_client_opts_default();
  co.io_timeout_ms = 300;
  tf_tstream_client *c = NULL;
  ck_assert_int_eq(tf_tstream_client_new(url, &co, &c, NULL), TF_OK);
  tf_shape sh = tf_shape_of(1, 64 << 20);
  tf_tensor *t = NULL;
  ck_assert_int_eq(tf_tensor_new_zeros(TF_UINT8, &sh, &t, NULL), TF_OK);
  tf_tstream_hdr h = hdr(1, "stuck");
  tf_status st;
  int64_t t0 = now_ms();
  ck_assert_int_eq(send_sync(c, &h, t, &st), TF_DEADLINE_EXCEEDED);
  int64_t el = now_ms() - t0;
  ck_assert_msg(el >= 290 && el < 3000, "failed after %lld ms", (long long)el);
  ck_assert_msg(strstr(st.msg, "key 'stuck': no write progress for 300 ms"), "%s", st.msg);
  tf_tensor_unref(t);
  tf_tstream_client_free(c);
  close(lfd);
}
END_TEST

/* Freeing a client with two frames being written (to a peer that does not
 * read) and four queued: each done runs once, before free returns. */
static atomic_int freed_unavail, freed_cancel, freed_other;

static void free_cb(void *arg, const tf_status *st) {
  atomic_fetch_add(st->code == TF_UNAVAILABLE ? &freed_unavail
                   : st->code == TF_CANCELLED ? &freed_cancel : &freed_other, 1);
}

START_TEST(test_client_free_with_sends_queued) {
  int port = 0;
  int lfd = raw_listen(&port);
  char url[64];
  snprintf(url, sizeof url, "tcp://127.0.0.1:%d", port);
  tf_tstream_client *c = NULL;
  ck_assert_int_eq(tf_tstream_client_new(url, NULL, &c, NULL), TF_OK);
  tf_shape sh = tf_shape_of(1, 64 << 20);
  tf_tensor *t = NULL;
  ck_assert_int_eq(tf_tensor_new_zeros(TF_UINT8, &sh, &t, NULL), TF_OK);
  for (int i = 0; i < 6; i++) {
    tf_tstream_hdr h = hdr(1, "q");
    tf_tstream_send(c, &h, t, free_cb, NULL);
  }
  /* Both connections are up and writing once the listener has them. */
  int a = accept(lfd, NULL, NULL), b = accept(lfd, NULL, NULL);
  ck_assert(a >= 0 && b >= 0);
  sleep_ms(50);
  tf_tstream_client_free(c);
  ck_assert_int_eq(atomic_load(&freed_cancel), 4);
  ck_assert_int_eq(atomic_load(&freed_unavail), 2);
  ck_assert_int_eq(atomic_load(&freed_other), 0);
  ck_assert(tf_tensor_buffer_is_unique(t));
  tf_tensor_unref(t);
  close(a);
  close(b);
  close(lfd);
}
END_TEST

/* Stop with connections open (one idle, one inside a payload) returns
 * promptly and frees everything. */
START_TEST(test_stop_with_connections_open) {
  sink k;
  sink_init(&k, true);
  tf_tstream_server_opts o = server_opts(&k);
  tf_tstream_server *s = start_server(&o, &k);
  int idle = raw_connect(tf_tstream_server_port(s));
  tf_tstream_hdr h = hdr(1, "half");
  h.dtype = TF_FLOAT64;
  h.shape = tf_shape_of(1, 1 << 20);
  uint8_t *f = NULL;
  size_t n = raw_frame(&h, 8ull << 20, &f);
  int busy = raw_connect(tf_tstream_server_port(s));
  raw_write(busy, f, n);
  raw_write(busy, f, n); /* some payload bytes */
  tf_tstream_server_stats x = tf_tstream_server_stats_get(s);
  for (int64_t end = now_ms() + WAIT_MS; x.open_connections < 2 && now_ms() < end;) {
    sleep_ms(5);
    x = tf_tstream_server_stats_get(s);
  }
  ck_assert_int_eq(x.open_connections, 2);
  int64_t t0 = now_ms();
  tf_tstream_server_stop(s);
  ck_assert_int_lt(now_ms() - t0, 1000);
  ck_assert(raw_closed_by_peer(idle));
  ck_assert_int_eq(k.n, 0);
  close(idle);
  close(busy);
  free(f);
  sink_fini(&k);
}
END_TEST

/* Stop right after connections are admitted, before their threads have
 * started reading: a read started after stop closed the stream must not
 * wait out idle_ms (NNG leaves such a read pending until its timeout).
 * With idle_ms 3 s, a stop that took that long failed this. */
START_TEST(test_stop_races_new_connections) {
  sink k;
  sink_init(&k, true);
  for (int round = 0; round < 60; round++) {
    tf_tstream_server_opts o = server_opts(&k);
    o.idle_ms = 3000;
    tf_tstream_server *s = start_server(&o, &k);
    int fd[4];
    for (int i = 0; i < 4; i++) {
      fd[i] = raw_connect(tf_tstream_server_port(s));
    }
    int64_t end = now_ms() + WAIT_MS;
    while (tf_tstream_server_stats_get(s).open_connections < 4 && now_ms() < end) {
      /* spin: stop as soon as they are admitted */
    }
    int64_t t0 = now_ms();
    tf_tstream_server_stop(s);
    int64_t el = now_ms() - t0;
    ck_assert_msg(el < 1000, "round %d: stop took %lld ms", round, (long long)el);
    for (int i = 0; i < 4; i++) {
      close(fd[i]);
    }
  }
  sink_fini(&k);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("tensor_stream_faults");
  TCase *tc = tcase_create("hostile");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_hostile_frames);
  tcase_add_test(tc, test_payload_over_cap_is_never_allocated);
  tcase_add_test(tc, test_frames_for_another_task_are_refused);
  tcase_add_test(tc, test_peer_killed_mid_payload);
  tcase_add_test(tc, test_truncated_frames);
  tcase_add_test(tc, test_server_stall_inside_frame_times_out);
  tcase_add_test(tc, test_receiver_dies_mid_tensor);
  suite_add_tcase(s, tc);
  tc = tcase_create("connections");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_connection_cap);
  tcase_add_test(tc, test_server_idle_close_and_redial);
  tcase_add_test(tc, test_client_idle_close);
  tcase_add_test(tc, test_deliver_errors_keep_the_connection);
  suite_add_tcase(s, tc);
  tc = tcase_create("client_and_stop");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_dial_refused_fails_queued_frames);
  tcase_add_test(tc, test_write_stall_times_out);
  tcase_add_test(tc, test_client_free_with_sends_queued);
  tcase_add_test(tc, test_stop_with_connections_open);
  tcase_add_test(tc, test_stop_races_new_connections);
  suite_add_tcase(s, tc);
  return s;
}
