/* ctl_top_test.c: tfctl top (cmd/tfctl/ctl_top.c). The pure parts: human
 * units at their boundaries and, on seeded random values, read back
 * within half a printed digit of a float64 reference; rates from two
 * samples against a float64 recomputation, and every case where a rate
 * is not known (down, restarted, an older peer without the counter, a
 * counter that went back, no previous sample); a frame's header, columns
 * and rows. The loop, against fake daemons (an RPC server answering
 * ClusterStatus and GetStatus as the master, one as a worker whose
 * counters grow at known rates with time, and a listed task nobody
 * serves): N frames one after another with rates within 15% of the true
 * ones, the dead task down in every frame, redraw mode's escape
 * sequences, and a master that does not answer (exit 1, one line naming
 * it). */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/tfctl/ctl_top.h"
#include "lib/core/base/util.h"
#include "lib/transport/messages.h"
#include "lib/transport/rpc.h"
#include "test/unit/testutil.h"

/* ---- units ------------------------------------------------------------------ */

START_TEST(units_at_boundaries) {
  static const struct {
    double v;
    const char *bytes, *count;
  } cases[] = {
      {0, "0 B", "0"},
      {1, "1 B", "1.0"},
      {7.5, "8 B", "7.5"},
      {999.94, "1000 B", "999.9"},
      {999.96, "1000 B", "1.0k"},
      {1023, "1023 B", "1.0k"},
      {1024, "1.0 KiB", "1.0k"},
      {1536, "1.5 KiB", "1.5k"},
      {1048575, "1.0 MiB", "1.0M"},   /* 1023.999 KiB prints as the next unit */
      {1048576, "1.0 MiB", "1.0M"},
      {20.0 * 1048576, "20.0 MiB", "21.0M"},
      {1.5 * 1073741824.0, "1.5 GiB", "1.6G"},
      {1099511627776.0, "1.0 TiB", "1.1T"},
      {-1, "-", "-"},
      {NAN, "-", "-"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char b[32], c[32];
    ck_assert_str_eq(tf_ctl_fmt_bytes(cases[i].v, b, sizeof b), cases[i].bytes);
    ck_assert_str_eq(tf_ctl_fmt_count(cases[i].v, c, sizeof c), cases[i].count);
  }
}
END_TEST

/* The value a printed size or count stands for, and half its last digit. */
static double read_back(const char *s, bool bytes, double *half) {
  double x = 0;
  char unit[8] = "";
  ck_assert_int_ge(sscanf(s, "%lf %7s", &x, unit), 1);
  if (bytes) {
    static const char *const u[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    for (int k = 0; k < 6; k++) {
      if (strcmp(unit, u[k]) == 0) {
        *half = (k == 0 ? 0.5 : 0.05) * pow(1024, k);
        return x * pow(1024, k);
      }
    }
    ck_abort_msg("'%s': no unit", s);
  }
  const char *end = s + strlen(s) - 1;
  int k = *end == 'k' ? 1 : *end == 'M' ? 2 : *end == 'G' ? 3 : *end == 'T' ? 4 : 0;
  *half = 0.05 * pow(1000, k);
  return x * pow(1000, k);
}

START_TEST(units_read_back) {
  tt_rng_reseed(tt_seed());
  for (int i = 0; i < 20000; i++) {
    double v = floor(exp(tt_rand_uniform(0, log(1e15))));
    double cv = tt_rand_uniform(0, 1) < 0.5 ? v : v / 1000.0; /* fractional rates too */
    char b[32], c[32];
    double hb = 0, hc = 0;
    double gb = read_back(tf_ctl_fmt_bytes(v, b, sizeof b), true, &hb);
    double gc = read_back(tf_ctl_fmt_count(cv, c, sizeof c), false, &hc);
    ck_assert_msg(fabs(gb - v) <= hb * 1.0001, "%.0f printed as %s", v, b);
    ck_assert_msg(fabs(gc - cv) <= hc * 1.0001, "%.6g printed as %s", cv, c);
    ck_assert_int_le(strlen(b), 10); /* fits the column */
    ck_assert_int_le(strlen(c), 8);
  }
}
END_TEST

/* ---- rates ------------------------------------------------------------------ */

static tf_ctl_top_sample sample(uint64_t inc, int64_t at_ns, uint64_t steps, uint64_t sent,
                                uint64_t recv) {
  return (tf_ctl_top_sample){.up = true, .incarnation = inc, .at_ns = at_ns,
                             .has = TF_MSG_STATUS_WORKER | TF_MSG_STATUS_USAGE,
                             .steps = steps, .bytes_sent = sent, .bytes_received = recv,
                             .mem_in_use = 1 << 20, .mem_peak = 3 << 20, .running_steps = 2};
}

START_TEST(rates_match_float64) {
  tt_rng_reseed(tt_seed());
  for (int i = 0; i < 2000; i++) {
    uint64_t s0 = tt_rand_u64() >> 4, b0 = tt_rand_u64() >> 4, r0 = tt_rand_u64() >> 4;
    uint64_t ds = tt_rand_u64() % 100000, db = tt_rand_u64() % (1ULL << 40),
             dr = tt_rand_u64() % 1000;
    int64_t t0 = (int64_t)(tt_rand_u64() >> 2), dt = 1 + (int64_t)(tt_rand_u64() % 10000000000ULL);
    tf_ctl_top_sample p = sample(7, t0, s0, b0, r0);
    tf_ctl_top_sample c = sample(7, t0 + dt, s0 + ds, b0 + db, r0 + dr);
    tf_ctl_top_row row;
    tf_ctl_top_row_of("worker", 3, &p, &c, &row);
    double sec = (double)dt / 1e9;
    ck_assert_str_eq(row.task, "/job:worker/task:3");
    ck_assert(row.up);
    ck_assert_msg(fabs(row.steps_per_s - (double)ds / sec) <= 1e-9 * ((double)ds / sec) + 1e-12,
                  "%g vs %g", row.steps_per_s, (double)ds / sec);
    ck_assert(fabs(row.sent_per_s - (double)db / sec) <= 1e-9 * ((double)db / sec) + 1e-12);
    ck_assert(fabs(row.recv_per_s - (double)dr / sec) <= 1e-9 * ((double)dr / sec) + 1e-12);
    ck_assert(row.mem_in_use == 1 << 20 && row.mem_peak == 3 << 20 && row.running_steps == 2);
  }
}
END_TEST

static void assert_no_rates(const tf_ctl_top_row *r) {
  ck_assert(r->steps_per_s < 0 && r->sent_per_s < 0 && r->recv_per_s < 0);
}

START_TEST(rates_not_known) {
  tf_ctl_top_sample p = sample(7, 1000000000, 10, 100, 1000);
  tf_ctl_top_sample c = sample(7, 2000000000, 30, 300, 3000);
  tf_ctl_top_row row;
  /* No previous sample: memory and running steps, no rates. */
  tf_ctl_top_row_of("ps", 0, NULL, &c, &row);
  assert_no_rates(&row);
  ck_assert(row.up && row.mem_in_use == 1 << 20 && row.running_steps == 2);
  /* Down now: nothing known. */
  tf_ctl_top_sample down = {.up = false, .at_ns = 2000000000, .running_steps = -1};
  tf_ctl_top_row_of("ps", 0, &p, &down, &row);
  ck_assert(!row.up);
  assert_no_rates(&row);
  ck_assert(row.mem_in_use < 0 && row.mem_peak < 0 && row.running_steps < 0);
  /* Down before, up now: no rates. */
  tf_ctl_top_row_of("ps", 0, &down, &c, &row);
  assert_no_rates(&row);
  ck_assert(row.up && row.mem_peak == 3 << 20);
  /* Restarted (new incarnation): its counters began again. */
  tf_ctl_top_sample r = sample(8, 2000000000, 3, 5, 7);
  tf_ctl_top_row_of("ps", 0, &p, &r, &row);
  assert_no_rates(&row);
  /* A counter that went back (same incarnation): that rate only. */
  tf_ctl_top_sample back = c;
  back.bytes_sent = 50;
  tf_ctl_top_row_of("ps", 0, &p, &back, &row);
  ck_assert(row.sent_per_s < 0 && fabs(row.steps_per_s - 20) < 1e-12 &&
            fabs(row.recv_per_s - 2000) < 1e-9);
  /* An older peer without the usage counters: steps/s only; memory "-". */
  tf_ctl_top_sample op = p, oc = c;
  op.has = oc.has = TF_MSG_STATUS_WORKER;
  tf_ctl_top_row_of("ps", 0, &op, &oc, &row);
  ck_assert(fabs(row.steps_per_s - 20) < 1e-12 && row.sent_per_s < 0 && row.recv_per_s < 0);
  ck_assert(row.mem_in_use < 0 && row.mem_peak < 0);
  /* Samples out of time order or at the same instant: no rates. */
  tf_ctl_top_row_of("ps", 0, &c, &c, &row);
  assert_no_rates(&row);
  tf_ctl_top_row_of("ps", 0, &c, &p, &row);
  assert_no_rates(&row);
}
END_TEST

/* A tf_ctl_task as GetStatus would fill it turns into its sample. */
START_TEST(sample_of_task) {
  tf_ctl_task t = {.up = true, .incarnation = 5, .has = TF_MSG_STATUS_WORKER,
                   .running_steps = 4, .steps_run = 9, .bytes_sent = 8, .bytes_received = 7,
                   .mem_in_use = 6, .mem_peak = 11};
  tf_ctl_top_sample s = tf_ctl_top_sample_of(&t, 42);
  ck_assert(s.up && s.incarnation == 5 && s.at_ns == 42 && s.steps == 9);
  ck_assert(s.bytes_sent == 8 && s.bytes_received == 7 && s.mem_peak == 11);
  ck_assert_int_eq(s.running_steps, 4);
  t.has = 0; /* running_steps not sent */
  ck_assert_int_eq(tf_ctl_top_sample_of(&t, 42).running_steps, -1);
  t.up = false;
  s = tf_ctl_top_sample_of(&t, 43);
  ck_assert(!s.up && s.incarnation == 0 && s.has == 0 && s.running_steps == -1);
}
END_TEST

/* ---- a frame ---------------------------------------------------------------- */

/* The number of lines in s that start with prefix. */
static int count_lines(const char *s, const char *prefix) {
  int n = 0;
  for (const char *p = s; p != NULL && *p != '\0';) {
    n += strncmp(p, prefix, strlen(prefix)) == 0;
    p = strchr(p, '\n');
    p = p != NULL ? p + 1 : NULL;
  }
  return n;
}

START_TEST(frame_text) {
  tf_ctl_top_row rows[3];
  tf_ctl_top_sample p = sample(7, 0, 0, 0, 0);
  tf_ctl_top_sample c = sample(7, 500000000, 50, 3 << 20, 1536);
  tf_ctl_top_row_of("master", 0, &p, &c, &rows[0]);
  tf_ctl_top_row_of("worker", 0, &p, &c, &rows[1]);
  tf_ctl_top_sample down = {.running_steps = -1};
  tf_ctl_top_row_of("worker", 1, &p, &down, &rows[2]);
  tf_ctl_top_head h = {.master_url = "tcp://127.0.0.1:7070", .interval_ms = 500,
                       .now = 1700000000};
  char *s = tf_ctl_top_frame(&h, rows, 3);
  ck_assert_msg(strncmp(s, "tfctl top: tcp://127.0.0.1:7070, 3 tasks (2 up), every 500 ms, ",
                        62) == 0, "%s", s);
  int y, mo, d, hh, mi, ss, off;
  ck_assert_msg(sscanf(strchr(s, ',') + 1, " 3 tasks (2 up), every 500 ms, "
                       "%4d-%2d-%2dT%2d:%2d:%2d%5d", &y, &mo, &d, &hh, &mi, &ss, &off) == 7,
                "%s", s);
  ck_assert_int_ge(y, 2023);
  ck_assert_int_le(y, 2024);
  ck_assert_int_eq(count_lines(s, "TASK "), 1);
  ck_assert_msg(strstr(s, "STEPS/S") && strstr(s, "RECV/S") && strstr(s, "SENT/S") &&
                strstr(s, "MEM-PEAK") && strstr(s, "RUNNING"), "%s", s);
  ck_assert_int_eq(count_lines(s, "/job:"), 3);
  /* 50 steps, 3 MiB sent and 1.5 KiB received in 0.5 s. */
  char want[256];
  snprintf(want, sizeof want, "/job:worker/task:0 up       100.0   3.0 KiB/s   6.0 MiB/s"
           "    1.0 MiB    3.0 MiB       2\n");
  ck_assert_msg(strstr(s, want) != NULL, "no line\n%swithin\n%s", want, s);
  ck_assert_msg(strstr(s, "/job:worker/task:1 down         -           -           -"
                          "          -          -       -\n") != NULL, "%s", s);
  ck_assert(s[strlen(s) - 1] == '\n');
  free(s);
  /* No rows: the header and the column names. */
  s = tf_ctl_top_frame(&h, NULL, 0);
  ck_assert_msg(strstr(s, ", 0 tasks (0 up), ") != NULL, "%s", s);
  ck_assert_int_eq(count_lines(s, "TASK"), 1);
  free(s);
}
END_TEST

/* ---- the loop against fake daemons ----------------------------------------- */

/* The worker's true rates. */
#define W_STEPS_PER_S 400.0
#define W_SENT_PER_S (8.0 * 1048576)
#define W_RECV_PER_S (2.0 * 1048576)

static tf_rpc_server *master_srv, *worker_srv;
static char master_url[64], worker_url[64], dead_url[64];
static int64_t t0_ns;

static nng_msg *finish(tf_wire_writer *w, tf_status *st) {
  nng_msg *out = NULL;
  return tf_wire_finish(w, &out, st) == TF_OK ? out : NULL;
}

/* The master: ClusterStatus lists itself, the worker and a task nobody
 * serves; GetStatus as the master, without the usage counters (an older
 * master). */
static nng_msg *master_handle(void *arg, const tf_wire_msg *req, tf_status *st) {
  tf_wire_writer *w = tf_wire_reply_writer(req);
  if (req->h.method == TF_M_CLUSTER_STATUS) {
    tf_msg_task_status ts[] = {
        {"master", 0, "tcp://elsewhere:1", true, 1, 0, NULL, 0, ""},
        {"worker", 0, worker_url, true, 2, 0, NULL, 0, ""},
        {"worker", 1, dead_url, false, 0, 0, NULL, -1, "no answer"}};
    tf_msg_cluster_status_reply_encode(w, &(tf_msg_cluster_status_reply){3, ts});
  } else if (req->h.method == TF_M_GET_STATUS) {
    tf_msg_get_status_reply_encode(w, &(tf_msg_get_status_reply){
                                          .job = "master", .incarnation = 1,
                                          .has = TF_MSG_STATUS_MASTER, .sessions = 1,
                                          .running_steps = 3});
  } else {
    tf_wire_writer_free(w);
    tf_status_set(st, TF_UNIMPLEMENTED, "fake master: method %d", req->h.method);
    return NULL;
  }
  return finish(w, st);
}

/* The worker: counters that grow at the W_* rates since t0_ns. */
static nng_msg *worker_handle(void *arg, const tf_wire_msg *req, tf_status *st) {
  tf_wire_writer *w = tf_wire_reply_writer(req);
  double sec = (double)(tf__now_ns() - t0_ns) / 1e9;
  tf_msg_get_status_reply_encode(
      w, &(tf_msg_get_status_reply){
             .job = "worker", .task = 0, .incarnation = 2,
             .has = TF_MSG_STATUS_WORKER | TF_MSG_STATUS_USAGE, .running_steps = 1,
             .steps_run = (uint64_t)(W_STEPS_PER_S * sec),
             .bytes_sent = (uint64_t)(W_SENT_PER_S * sec),
             .bytes_received = (uint64_t)(W_RECV_PER_S * sec), .mem_in_use = 5 << 20,
             .mem_peak = 9 << 20});
  return finish(w, st);
}

static void fakes_start(void) {
  tf_status st;
  tf_status_init(&st);
  t0_ns = tf__now_ns();
  snprintf(dead_url, sizeof dead_url, "tcp://127.0.0.1:%d", tt_free_port());
  ck_assert_msg(tf_rpc_server_start_sync("tcp://127.0.0.1:0", 2, 0, worker_handle, NULL,
                                         &worker_srv, &st) == TF_OK, "%s", st.msg);
  snprintf(worker_url, sizeof worker_url, "tcp://127.0.0.1:%d",
           tf_rpc_server_port(worker_srv));
  ck_assert_msg(tf_rpc_server_start_sync("tcp://127.0.0.1:0", 2, 0, master_handle, NULL,
                                         &master_srv, &st) == TF_OK, "%s", st.msg);
  snprintf(master_url, sizeof master_url, "tcp://127.0.0.1:%d",
           tf_rpc_server_port(master_srv));
}

static void fakes_stop(void) {
  tf_rpc_server_stop(master_srv);
  tf_rpc_server_stop(worker_srv);
}

typedef struct run {
  char *out, *err;
  size_t out_len, err_len;
  int rc;
} run;

static run top(const char *url, int64_t frames, int64_t interval_ms, bool redraw) {
  run r = {0};
  tf_ctl_top_opts o = {.master_url = url, .timeout_ms = 2000, .interval_ms = interval_ms,
                       .frames = frames, .redraw = redraw};
  o.out = open_memstream(&r.out, &r.out_len);
  o.err = open_memstream(&r.err, &r.err_len);
  r.rc = tf_ctl_cmd_top(&o);
  fclose(o.out);
  fclose(o.err);
  return r;
}

/* The numbers of line `task` in frame k (0-based) of out. */
static void row_fields(const char *out, int k, const char *task, char f[8][32]) {
  const char *p = out;
  for (int i = 0; i <= k; i++) {
    p = strstr(p + (i > 0), "tfctl top: ");
    ck_assert_msg(p != NULL, "no frame %d in\n%s", k, out);
  }
  const char *line = strstr(p, task);
  ck_assert_msg(line != NULL, "no %s in frame %d of\n%s", task, k, out);
  char a[8][32];
  int n = sscanf(line, "%31s %31s %31s %31s %31s %31s %31s %31s", a[0], a[1], a[2], a[3],
                 a[4], a[5], a[6], a[7]);
  ck_assert_int_ge(n, 3);
  memcpy(f, a, sizeof a);
}

START_TEST(loop_frames_and_rates) {
  fakes_start();
  int64_t start = tf__now_ns();
  run r = top(master_url, 3, 200, false);
  double took_s = (double)(tf__now_ns() - start) / 1e9;
  ck_assert_msg(r.rc == 0, "rc %d: %s", r.rc, r.err);
  ck_assert_str_eq(r.err, "");
  ck_assert_int_eq(count_lines(r.out, "tfctl top: "), 3);
  ck_assert_int_eq(count_lines(r.out, "TASK "), 3);
  ck_assert_int_eq(count_lines(r.out, "/job:"), 9);
  ck_assert_msg(took_s >= 0.6, "3 frames of 200 ms took %.3f s", took_s);
  ck_assert_msg(strstr(r.out, ", 3 tasks (2 up), every 200 ms, ") != NULL, "%s", r.out);
  for (int k = 0; k < 3; k++) {
    char f[8][32];
    row_fields(r.out, k, "/job:worker/task:0", f);
    /* task state steps/s recv sent: "2.0 MiB/s" splits in two words. */
    ck_assert_str_eq(f[1], "up");
    double steps = atof(f[2]), recv = atof(f[3]), sent = atof(f[5]);
    ck_assert_msg(fabs(steps - W_STEPS_PER_S) <= 0.15 * W_STEPS_PER_S, "steps/s %s", f[2]);
    ck_assert_str_eq(f[4], "MiB/s");
    ck_assert_msg(fabs(recv - 2.0) <= 0.3, "recv %s %s", f[3], f[4]);
    ck_assert_msg(fabs(sent - 8.0) <= 1.2, "sent %s %s", f[5], f[6]);
    row_fields(r.out, k, "/job:worker/task:1", f);
    ck_assert_str_eq(f[1], "down");
    ck_assert_str_eq(f[2], "-");
    row_fields(r.out, k, "/job:master/task:0", f);
    ck_assert_str_eq(f[1], "up");
    ck_assert_str_eq(f[2], "-"); /* no steps_run, no usage: an older master */
  }
  ck_assert_msg(strstr(r.out, "5.0 MiB    9.0 MiB       1\n") != NULL, "%s", r.out);
  ck_assert_ptr_null(strstr(r.out, "\033["));
  free(r.out);
  free(r.err);
  /* Redraw mode: cursor hidden, each frame after home + clear, cursor back. */
  r = top(master_url, 2, 50, true);
  ck_assert_int_eq(r.rc, 0);
  ck_assert_msg(strncmp(r.out, "\033[?25l\033[H\033[2Jtfctl top: ", 24) == 0, "%s", r.out);
  ck_assert_ptr_nonnull(strstr(r.out + 10, "\n\033[H\033[2Jtfctl top: "));
  ck_assert_msg(strcmp(r.out + r.out_len - 6, "\033[?25h") == 0, "%s", r.out);
  free(r.out);
  free(r.err);
  fakes_stop();
}
END_TEST

START_TEST(loop_master_down) {
  char url[64];
  snprintf(url, sizeof url, "tcp://127.0.0.1:%d", tt_free_port());
  run r = top(url, 1, 50, false);
  ck_assert_int_eq(r.rc, 1);
  ck_assert_str_eq(r.out, "");
  ck_assert_msg(strncmp(r.err, "tfctl: top: the master at ", 26) == 0 &&
                strstr(r.err, url) != NULL, "%s", r.err);
  ck_assert_int_eq(count_lines(r.err, ""), 1);
  free(r.out);
  free(r.err);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("ctl_top");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, units_at_boundaries);
  tcase_add_test(tc, units_read_back);
  tcase_add_test(tc, rates_match_float64);
  tcase_add_test(tc, rates_not_known);
  tcase_add_test(tc, sample_of_task);
  tcase_add_test(tc, frame_text);
  tcase_add_test(tc, loop_frames_and_rates);
  tcase_add_test(tc, loop_master_down);
  suite_add_tcase(s, tc);
  return s;
}
