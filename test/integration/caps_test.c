/* caps_test.c: every bound of a daemon, tried from outside. Per cap the
 * daemon refuses (RESOURCE_EXHAUSTED naming the limit and its value, or,
 * for message size, NNG closing the connection before it allocates the
 * frame), its resident size stays under the cap plus a stated slack, and
 * it keeps serving others:
 * - max_message_mb 1: 8 connections each declaring a 1 GiB frame; a
 *   client's 1.6 MB feed is refused before it is sent, naming both sizes;
 *   a fetch of 1.6 MB fails the step on the worker, naming the limit;
 * - limits.max_pushed_mb 2: TensorPush of 512 KiB tensors for steps that
 *   never start;
 * - limits.max_graphs 4: RegisterGraph from a peer that is not the master;
 * - limits.max_sessions 4: 300 CreateSession calls with a 512 KiB graph;
 * - limits.max_connections 16: 40 raw connections; and idle ones are
 *   closed after limits.idle_connection_ms. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/tfctl/ctl_procs.h"
#include "lib/core/framework/rendezvous.h"
#include "test/integration/harness.h"
#include "test/integration/igraph.h"
#include "test/unit/testutil.h"
#include "tf/serialize.h"

/* Allocator and thread-stack noise we allow: 8 MiB; 64 MiB under the
 * sanitizers (TSan's shadow memory, ASan's quarantine, which the daemons
 * here get at 16 MiB). */
#define SLACK_KIB ((TH_SANITIZED ? 64 : 8) * 1024)

static th_cluster *start_cluster(void) {
#ifdef __SANITIZE_ADDRESS__
  static char asan[512];
  const char *cur = getenv("ASAN_OPTIONS");
  snprintf(asan, sizeof asan, "%s%squarantine_size_mb=16", cur ? cur : "", cur && *cur ? ":" : "");
  setenv("ASAN_OPTIONS", asan, 1); /* the daemons started below inherit it */
#endif
  th_opts o = th_default_opts();
  o.n_ps = 0;
  o.step_ttl_ms = 2000;
  o.extra_yaml =
      "max_message_mb: 1\n"
      "limits:\n  max_pushed_mb: 2\n  max_graphs: 4\n  max_sessions: 4\n"
      "  max_connections: 16\n  idle_connection_ms: 2000\n  session_ttl_ms: 2000\n";
  th_cluster *c = th_cluster_new(&o);
  TH_REQUIRE(c, th_start_all(c, 15000), "cluster start");
  return c;
}

/* A cross-task step on a fresh session works. */
static void serves(th_cluster *c, const char *when) {
  th_task *master = th_task_get(c, "master", 0);
  tf_graph *g = ig_cross_graph();
  tf_status st;
  tf_session *s = ig_remote(master->url, g, &st);
  TH_REQUIRE(c, s != NULL, "%s: new session: %s", when, st.msg);
  TH_REQUIRE(c, ig_run_cross(s, 10000, &st) == TF_OK, "%s: step: %s", when, st.msg);
  tf_session_close(s, &st);
  tf_session_free(s);
  tf_graph_free(g);
}

static void answers(th_cluster *c, th_task *t, const char *when) {
  tf_msg_get_status_reply r;
  tf_wire_msg *keep = NULL;
  tf_status st;
  TH_REQUIRE(c, ig_status(t->url, &r, &keep, &st) == TF_OK, "%s: GetStatus to %s: %s", when,
             t->url, st.msg);
  tf_msg_get_status_reply_fini(&r);
  tf_wire_msg_free(keep);
}

static void rss_within(th_cluster *c, th_task *t, int64_t before, int64_t cap_kib,
                       const char *what) {
  int64_t now = th_rss_kib(t->pid);
  fprintf(stderr, "caps: %s: /job:%s/task:%d RSS %lld -> %lld KiB (cap %lld KiB + slack %d)\n",
          what, t->job, t->task, (long long)before, (long long)now, (long long)cap_kib,
          SLACK_KIB);
  TH_REQUIRE(c, now >= 0 && now - before <= cap_kib + SLACK_KIB,
             "%s: RSS grew by %lld KiB", what, (long long)(now - before));
}

/* A 1.6 MB feed and a 1.6 MB fetch against max_message_mb 1. */
static void too_large_feed_and_fetch(th_cluster *c) {
  enum { N = 400000 };
  th_task *master = th_task_get(c, "master", 0);
  tf_graph *g = ig_cross_graph();
  tf_status st;
  tf_session *s = ig_remote(master->url, g, &st);
  tf_tensor *x = tt_rand(TF_FLOAT32, tf_shape_of(1, N), -1, 1);
  const char *feed = "x", *fetch = "z";
  tf_tensor *z = NULL;
  tf_run_options ro = {.timeout_ms = 10000};
  tf_code rc = tf_session_run(s, &ro, &feed, &x, 1, &fetch, &z, 1, NULL, 0, NULL, &st);
  TH_REQUIRE(c, rc == TF_RESOURCE_EXHAUSTED && strstr(st.msg, "the RunStep request is ") &&
                    strstr(st.msg, "accepts at most 1048576 (max_message_mb: 1 MiB)"),
             "1.6 MB feed: %d: %s", rc, st.msg);
  tf_tensor_unref(x);
  tf_session_close(s, &st);
  tf_session_free(s);
  tf_graph_free(g);
  /* Fill([N], 1) on worker 0, fetched: the worker's reply would be 1.6 MB. */
  g = tf_graph_new();
  int32_t dims[] = {N};
  tf_node *d = tt_const(g, "dims", tf_tensor_vec_i32(1, dims));
  tf_node *v = tt_const(g, "one", tf_tensor_scalar_f32(1));
  tf_output in[] = {ig_out(d), ig_out(v)};
  ig_node(g, "Fill", "big", "/job:worker/task:0", in, 2, NULL, 0);
  s = ig_remote(master->url, g, &st);
  fetch = "big";
  rc = tf_session_run(s, &ro, NULL, NULL, 0, &fetch, &z, 1, NULL, 0, NULL, &st);
  TH_REQUIRE(c, rc == TF_RESOURCE_EXHAUSTED && strstr(st.msg, "the RunGraph reply") &&
                    strstr(st.msg, "more than max_message_mb allows (1048576 bytes)"),
             "1.6 MB fetch: %d: %s", rc, st.msg);
  tf_session_close(s, &st);
  tf_session_free(s);
  tf_graph_free(g);
}

START_TEST(test_message_size) {
  th_cluster *c = start_cluster();
  th_task *w = th_task_get(c, "worker", 0);
  serves(c, "before");
  int64_t before = th_rss_kib(w->pid);
  int fds[8];
  for (int i = 0; i < 8; i++) {
    fds[i] = ig_sp_connect(w->port);
    TH_REQUIRE(c, fds[i] >= 0 && ig_send_frame_start(fds[i], 1ull << 30), "connection %d", i);
  }
  for (int i = 0; i < 8; i++) {
    TH_REQUIRE(c, ig_closed_within(fds[i], 3000), "the 1 GiB frame %d was not refused", i);
    close(fds[i]);
  }
  rss_within(c, w, before, 1024, "8 frames declaring 1 GiB");
  answers(c, w, "after the frames");
  serves(c, "after the frames");
  too_large_feed_and_fetch(c);
  serves(c, "after the large feed and fetch");
  th_cluster_free(c);
}
END_TEST

static void push_body(tf_wire_writer *wr, const void *arg) {
  tf_msg_tensor_push_req_encode(wr, arg);
}

START_TEST(test_pushed_bytes) {
  th_cluster *c = start_cluster();
  th_task *w = th_task_get(c, "worker", 1);
  int64_t before = th_rss_kib(w->pid);
  tf_tensor *t = tt_rand(TF_FLOAT32, tf_shape_of(1, 128 * 1024), -1, 1); /* 512 KiB */
  tf_status st;
  int refused_at = -1;
  for (int i = 0; i < 64 && refused_at < 0; i++) {
    char *key = tf_rdv_key_make("/job:worker/replica:0/task:0/device:CPU:0", 1,
                                "/job:worker/replica:0/task:1/device:CPU:0", "t", 0, 0);
    tf_msg_tensor_push_req req = {.key = key, .tensor = t};
    tf_wire_header h = {.version = TF_WIRE_VERSION, .method = TF_M_TENSOR_PUSH,
                        .step_id = 0x7000 + (uint64_t)i, .from = "/job:worker/replica:0/task:0",
                        .to = "/job:worker/replica:0/task:1"};
    tf_wire_msg *r = NULL;
    tf_code rc = ig_call(w->url, &h, push_body, &req, 5000, &r, &st);
    tf_wire_msg_free(r);
    free(key);
    if (rc == TF_RESOURCE_EXHAUSTED) {
      refused_at = i;
      TH_REQUIRE(c, strstr(st.msg, "max_pushed_mb") != NULL, "the refusal names no limit: %s",
                 st.msg);
      fprintf(stderr, "caps: push %d refused: %s\n", i, st.msg);
    } else {
      TH_REQUIRE(c, rc == TF_OK, "push %d: %s: %s", i, tf_code_name(rc), st.msg);
    }
  }
  TH_REQUIRE(c, refused_at >= 3 && refused_at <= 4, "refused at push %d of 512 KiB (cap 2 MiB)",
             refused_at);
  rss_within(c, w, before, 2048, "pushes for steps that never start");
  answers(c, w, "while the pushes are buffered");
  /* The buffered tensors expire with their steps (step_ttl_ms 2000). */
  tf_ctl_sleep_ms(3000);
  serves(c, "after the pushes expired");
  tf_tensor_unref(t);
  th_cluster_free(c);
}
END_TEST

static void register_body(tf_wire_writer *wr, const void *arg) {
  tf_msg_register_graph_req_encode(wr, arg);
}

START_TEST(test_graphs) {
  th_cluster *c = start_cluster();
  th_task *w = th_task_get(c, "worker", 0);
  int64_t before = th_rss_kib(w->pid);
  tf_graph *g = ig_chain_graph(3, "/job:worker/replica:0/task:0/device:CPU:0", 0, 8);
  void *buf = NULL;
  size_t len = 0;
  tf_status st;
  TH_REQUIRE(c, tf_graph_to_msgpack(g, &buf, &len, &st) == TF_OK, "%s", st.msg);
  tf_msg_register_graph_req req = {.graph = buf, .graph_len = len};
  int refused_at = -1;
  for (int i = 0; i < 16 && refused_at < 0; i++) {
    tf_wire_header h = {.version = TF_WIRE_VERSION, .method = TF_M_REGISTER_GRAPH,
                        .from = "/job:intruder/replica:0/task:0", .from_inc = 7,
                        .to = "/job:worker/replica:0/task:0"};
    tf_wire_msg *r = NULL;
    tf_code rc = ig_call(w->url, &h, register_body, &req, 5000, &r, &st);
    tf_wire_msg_free(r);
    if (rc == TF_RESOURCE_EXHAUSTED) {
      refused_at = i;
      TH_REQUIRE(c, strstr(st.msg, "max_graphs") != NULL, "the refusal names no limit: %s",
                 st.msg);
      fprintf(stderr, "caps: graph %d refused: %s\n", i, st.msg);
    } else {
      TH_REQUIRE(c, rc == TF_OK, "RegisterGraph %d: %s: %s", i, tf_code_name(rc), st.msg);
    }
  }
  TH_REQUIRE(c, refused_at == 4, "refused at graph %d (cap 4)", refused_at);
  rss_within(c, w, before, 1024, "graphs from an intruder");
  answers(c, w, "with the graphs registered");
  /* The intruder is silent: its graphs expire after session_ttl_ms. */
  tf_ctl_sleep_ms(3500);
  serves(c, "after the intruder's graphs expired");
  free(buf);
  tf_graph_free(g);
  th_cluster_free(c);
}
END_TEST

START_TEST(test_sessions) {
  th_cluster *c = start_cluster();
  th_task *master = th_task_get(c, "master", 0);
  tf_graph *g = tf_graph_new();
  tf_tensor *big = tt_rand(TF_FLOAT32, tf_shape_of(1, 128 * 1024), -1, 1); /* 512 KiB */
  ig_node(g, "Const", "big", "/job:worker/task:0", NULL, 0,
          (tf_attr_kv[]){{"value", tf_attr_tensor(big)}, {"dtype", tf_attr_type_v(TF_FLOAT32)}}, 2);
  tf_tensor_unref(big);
  tf_status st;
  tf_session *held[4];
  for (int i = 0; i < 4; i++) {
    held[i] = ig_remote(master->url, g, &st);
    TH_REQUIRE(c, held[i] != NULL, "session %d: %s", i, st.msg);
  }
  int64_t before = th_rss_kib(master->pid);
  for (int i = 0; i < 300; i++) {
    tf_session *s = ig_remote(master->url, g, &st);
    TH_REQUIRE(c, s == NULL && st.code == TF_RESOURCE_EXHAUSTED &&
                      strstr(st.msg, "max_sessions") != NULL,
               "CreateSession %d over the cap: %s: %s", i, tf_code_name(st.code), st.msg);
    if (i == 0) fprintf(stderr, "caps: session refused: %s\n", st.msg);
  }
  rss_within(c, master, before, 0, "300 CreateSession over the cap");
  answers(c, master, "with 4 sessions");
  TH_REQUIRE(c, tf_session_close(held[0], &st) == TF_OK, "close: %s", st.msg);
  tf_session_free(held[0]);
  serves(c, "after closing one");
  for (int i = 1; i < 4; i++) {
    tf_session_close(held[i], &st);
    tf_session_free(held[i]);
  }
  tf_graph_free(g);
  th_cluster_free(c);
}
END_TEST

START_TEST(test_connections) {
  th_cluster *c = start_cluster();
  th_task *w = th_task_get(c, "worker", 0);
  answers(c, w, "before");
  int64_t before = th_rss_kib(w->pid);
  enum { N = 40 };
  int fds[N], refused = 0;
  /* All at once (the idle sweep must not free slots meanwhile), then a
   * look at which ones the worker closed. */
  for (int i = 0; i < N; i++) {
    fds[i] = ig_sp_connect(w->port);
  }
  tf_ctl_sleep_ms(300);
  for (int i = 0; i < N; i++) {
    if (fds[i] < 0 || ig_closed_within(fds[i], 1)) {
      refused++;
      if (fds[i] >= 0) close(fds[i]);
      fds[i] = -1;
    }
  }
  fprintf(stderr, "caps: %d of %d connections over max_connections 16 closed at once\n",
          refused, N);
  /* The worker keeps at most 16 open (the master's among them when it has one). */
  TH_REQUIRE(c, refused >= N - 16, "only %d of %d connections refused", refused, N);
  rss_within(c, w, before, 0, "40 connections");
  int64_t t0 = tf_ctl_now_ms();
  int open = 0;
  for (int i = 0; i < N; i++) {
    if (fds[i] >= 0) {
      open++;
      int64_t left = 2000 + 1500 - (tf_ctl_now_ms() - t0);
      TH_REQUIRE(c, ig_closed_within(fds[i], (int)(left > 0 ? left : 1)),
                 "an idle connection outlived idle_connection_ms 2000");
      close(fds[i]);
    }
  }
  fprintf(stderr, "caps: %d idle connections closed within %lld ms\n", open,
          (long long)(tf_ctl_now_ms() - t0));
  answers(c, w, "after");
  /* The master's own connection may have been refused while the flood
   * held every slot (the worker was then down to it); once the idle ones
   * are closed it reconnects at its next health check. */
  TH_REQUIRE(c, ig_master_sees_all_up(c, 5000), "the master does not see the worker again");
  serves(c, "after the connections");
  th_cluster_free(c);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("caps");
  TCase *tc = tcase_create("daemons");
  tcase_set_timeout(tc, 90);
  tcase_add_test(tc, test_message_size);
  tcase_add_test(tc, test_pushed_bytes);
  tcase_add_test(tc, test_graphs);
  tcase_add_test(tc, test_sessions);
  tcase_add_test(tc, test_connections);
  suite_add_tcase(s, tc);
  return s;
}
