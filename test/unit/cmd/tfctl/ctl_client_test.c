/* ctl_client_test.c: the tfctl client calls against an in-process cluster
 * (master, ps, two workers on loopback): GetStatus on each task (identity,
 * incarnation, devices) and on the master, ClusterStatus before and after
 * a worker dies (it goes down with an error once down_after_ms passes),
 * ListDevices, tf_ctl_answers, unreachable URLs failing within their
 * deadline naming the URL, and malformed or error replies from a fake
 * server decoded into errors that name the bad field; tf_ctl_probe_task
 * telling the task expected at an address from another one answering. */
#include <time.h>

#include "lib/core/base/util.h"
#include "cmd/tfctl/ctl_client.h"
#include "lib/transport/rpc.h"
#include "test/unit/runtime/rt_testlib.h"

static int64_t now_ms(void) { return tf__now_ns() / 1000000; }

static void sleep_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
  nanosleep(&ts, NULL);
}

static char *url_of(rt_cluster *c, const char *job, int task) {
  char *u = tf_cluster_task_url(c->spec, job, task);
  ck_assert_ptr_nonnull(u);
  return u;
}

/* ClusterStatus until pred holds for every task, ticking the master
 * every 50 ms; fails the test after deadline_ms. */
static void tick_until(rt_cluster *c, bool (*pred)(const tf_ctl_task *ts, int n),
                       int64_t deadline_ms, tf_ctl_task **out, int *n) {
  int64_t until = now_ms() + deadline_ms;
  tf_status st;
  for (;;) {
    tf_master_tick(c->master);
    tf_status_init(&st);
    ck_assert_msg(tf_ctl_cluster_status(c->master_url, 1000, out, n, &st) == TF_OK, "%s",
                  st.msg);
    if (pred(*out, *n)) {
      return;
    }
    ck_assert_msg(now_ms() < until, "cluster never reached the expected state");
    tf_ctl_tasks_free(*out, *n);
    sleep_ms(50);
  }
}

static bool all_up(const tf_ctl_task *ts, int n) {
  for (int i = 0; i < n; i++) {
    if (!ts[i].up) {
      return false;
    }
  }
  return true;
}

/* Worker 1 down with its error recorded (the check in flight ended). */
static bool worker1_down(const tf_ctl_task *ts, int n) {
  for (int i = 0; i < n; i++) {
    if (strcmp(ts[i].job, "worker") == 0 && ts[i].task == 1) {
      return !ts[i].up && ts[i].error[0] != '\0';
    }
  }
  return false;
}

static void check_worker_status(rt_cluster *c, const char *job, int task, tf_worker *w) {
  char *url = url_of(c, job, task);
  tf_ctl_task t;
  tf_status st;
  tf_status_init(&st);
  ck_assert_msg(tf_ctl_get_status(url, 2000, &t, &st) == TF_OK, "%s", st.msg);
  ck_assert_str_eq(t.job, job);
  ck_assert_int_eq(t.task, task);
  ck_assert_str_eq(t.url, url);
  ck_assert(t.up);
  ck_assert_str_eq(t.error, "");
  ck_assert_int_eq(t.last_ok_ms, 0);
  ck_assert(t.incarnation != 0);
  ck_assert(t.incarnation == tf_worker_incarnation(w));
  ck_assert_int_eq(t.n_devices, 1);
  char want[96];
  snprintf(want, sizeof want, "/job:%s/replica:0/task:%d/device:CPU:0", job, task);
  ck_assert_str_eq(t.devices[0], want);
  ck_assert_str_eq(t.devices[0], tf_worker_device_name(w));
  tf_ctl_task_fini(&t);
  ck_assert_ptr_null(t.job); /* fini clears */
  ck_assert_int_eq(t.n_devices, 0);
  free(url);
}

START_TEST(test_get_status) {
  rt_cluster c;
  rt_start(&c, 2, 0, 5000);
  check_worker_status(&c, "ps", 0, c.ps);
  check_worker_status(&c, "worker", 0, c.workers[0]);
  check_worker_status(&c, "worker", 1, c.workers[1]);
  ck_assert(tf_worker_incarnation(c.workers[0]) != tf_worker_incarnation(c.workers[1]));
  /* The master answers GetStatus too: who it is, no devices. */
  tf_ctl_task t;
  tf_status st;
  tf_status_init(&st);
  ck_assert_msg(tf_ctl_get_status(c.master_url, 2000, &t, &st) == TF_OK, "%s", st.msg);
  ck_assert_str_eq(t.job, "master");
  ck_assert_int_eq(t.task, 0);
  ck_assert_str_eq(t.url, c.master_url);
  ck_assert(t.up);
  ck_assert(t.incarnation != 0);
  ck_assert_int_eq(t.n_devices, 0);
  tf_ctl_task_fini(&t);
  tf_ctl_task_fini(NULL); /* NULL-safe */
  /* Each task serves as itself; asked for another, it is the wrong one. */
  char *w1 = url_of(&c, "worker", 1);
  ck_assert_msg(tf_ctl_probe_task(w1, "worker", 1, 2000, &st) == TF_OK, "%s", st.msg);
  ck_assert_msg(tf_ctl_probe_task(c.master_url, "master", 0, 2000, &st) == TF_OK, "%s",
                st.msg);
  ck_assert_int_eq(tf_ctl_probe_task(w1, "worker", 0, 2000, &st), TF_FAILED_PRECONDITION);
  /* The worker's server refuses a request meant for another task itself. */
  ck_assert_msg(strstr(st.msg, "wrong task at address") != NULL &&
                    strstr(st.msg, "is /job:worker/replica:0/task:1, the request was for "
                                   "/job:worker/replica:0/task:0") != NULL, "%s", st.msg);
  free(w1);
  rt_stop(&c);
}
END_TEST

/* The entry of ts for job/task; fails when absent. */
static const tf_ctl_task *find_task(const tf_ctl_task *ts, int n, const char *job, int task) {
  for (int i = 0; i < n; i++) {
    if (strcmp(ts[i].job, job) == 0 && ts[i].task == task) {
      return &ts[i];
    }
  }
  ck_abort_msg("no /job:%s/task:%d in ClusterStatus", job, task);
  return NULL;
}

static void check_up_entry(rt_cluster *c, const tf_ctl_task *ts, int n, const char *job,
                           int task, tf_worker *w) {
  const tf_ctl_task *t = find_task(ts, n, job, task);
  char *url = url_of(c, job, task);
  ck_assert_str_eq(t->url, url);
  free(url);
  ck_assert_msg(t->up, "/job:%s/task:%d down: %s", job, task, t->error);
  ck_assert(t->incarnation == tf_worker_incarnation(w));
  ck_assert_int_eq(t->n_devices, 1);
  ck_assert_str_eq(t->devices[0], tf_worker_device_name(w));
  ck_assert_msg(t->last_ok_ms >= 0 && t->last_ok_ms < 2000, "last_ok_ms %lld",
                (long long)t->last_ok_ms);
  ck_assert_str_eq(t->error, "");
}

START_TEST(test_cluster_status_and_task_down) {
  rt_cluster c;
  rt_start(&c, 2, 0, 5000);
  tf_ctl_task *ts = NULL;
  int n = 0;
  tick_until(&c, all_up, 3000, &ts, &n);
  ck_assert_int_eq(n, 4); /* master, ps, 2 workers */
  ck_assert_str_eq(ts[0].job, "master"); /* the master is listed first */
  ck_assert_int_eq(ts[0].task, 0);
  ck_assert_str_eq(ts[0].url, c.master_url);
  ck_assert(ts[0].up);
  check_up_entry(&c, ts, n, "ps", 0, c.ps);
  check_up_entry(&c, ts, n, "worker", 0, c.workers[0]);
  check_up_entry(&c, ts, n, "worker", 1, c.workers[1]);
  uint64_t inc1 = tf_worker_incarnation(c.workers[1]);
  tf_ctl_tasks_free(ts, n);
  /* Worker 1 dies: after down_after_ms (600) of failed checks it is down,
   * with the error of the last check; the others stay up. */
  tf_worker_free(c.workers[1]);
  c.workers[1] = NULL;
  int64_t t0 = now_ms();
  tick_until(&c, worker1_down, 4000, &ts, &n);
  ck_assert_msg(now_ms() - t0 >= c.spec->down_after_ms - 150, "down after %lld ms",
                (long long)(now_ms() - t0));
  const tf_ctl_task *w1 = find_task(ts, n, "worker", 1);
  ck_assert(!w1->up);
  ck_assert(w1->incarnation == inc1); /* the last one seen */
  ck_assert_msg(w1->last_ok_ms >= c.spec->down_after_ms, "%lld", (long long)w1->last_ok_ms);
  char *url1 = url_of(&c, "worker", 1);
  ck_assert_msg(strstr(w1->error, url1) != NULL, "error '%s' does not name %s", w1->error,
                url1);
  free(url1);
  check_up_entry(&c, ts, n, "ps", 0, c.ps);
  check_up_entry(&c, ts, n, "worker", 0, c.workers[0]);
  ck_assert(ts[0].up);
  tf_ctl_tasks_free(ts, n);
  /* ListDevices now lists only the tasks that are up. */
  tf_ctl_device *ds = NULL;
  tf_status st;
  tf_status_init(&st);
  ck_assert_msg(tf_ctl_list_devices(c.master_url, 2000, &ds, &n, &st) == TF_OK, "%s", st.msg);
  ck_assert_int_eq(n, 2);
  for (int i = 0; i < n; i++) {
    ck_assert_str_ne(ds[i].name, "/job:worker/replica:0/task:1/device:CPU:0");
  }
  tf_ctl_devices_free(ds, n);
  rt_stop(&c);
}
END_TEST

START_TEST(test_list_devices) {
  rt_cluster c;
  rt_start(&c, 2, 0, 5000);
  tf_ctl_task *ts = NULL;
  int n = 0;
  tick_until(&c, all_up, 3000, &ts, &n);
  tf_ctl_tasks_free(ts, n);
  tf_ctl_device *ds = NULL;
  tf_status st;
  tf_status_init(&st);
  ck_assert_msg(tf_ctl_list_devices(c.master_url, 2000, &ds, &n, &st) == TF_OK, "%s", st.msg);
  ck_assert_int_eq(n, 3);
  struct {
    const char *job;
    int task;
    tf_worker *w;
  } want[] = {{"ps", 0, c.ps}, {"worker", 0, c.workers[0]}, {"worker", 1, c.workers[1]}};
  bool seen[3] = {false, false, false};
  for (int k = 0; k < 3; k++) {
    char name[96], task[64];
    snprintf(task, sizeof task, "/job:%s/replica:0/task:%d", want[k].job, want[k].task);
    snprintf(name, sizeof name, "%s/device:CPU:0", task);
    char *url = url_of(&c, want[k].job, want[k].task);
    for (int i = 0; i < n; i++) {
      if (strcmp(ds[i].name, name) != 0) {
        continue;
      }
      ck_assert_msg(!seen[k], "%s listed twice", name);
      seen[k] = true;
      ck_assert_str_eq(ds[i].type, "CPU");
      ck_assert_str_eq(ds[i].task, task);
      ck_assert_str_eq(ds[i].url, url);
      ck_assert(ds[i].incarnation == tf_worker_incarnation(want[k].w));
    }
    ck_assert_msg(seen[k], "%s not listed", name);
    free(url);
  }
  tf_ctl_devices_free(ds, n);
  tf_ctl_devices_free(NULL, 0);
  rt_stop(&c);
}
END_TEST

START_TEST(test_answers) {
  rt_cluster c;
  rt_start(&c, 1, 0, 5000);
  char *ps = url_of(&c, "ps", 0), *w0 = url_of(&c, "worker", 0);
  ck_assert(tf_ctl_answers(ps, 1000));
  ck_assert(tf_ctl_answers(w0, 1000));
  ck_assert(tf_ctl_answers(c.master_url, 1000));
  /* A stopped worker no longer answers; the call returns in time. */
  tf_worker_free(c.workers[0]);
  c.workers[0] = NULL;
  int64_t t0 = now_ms();
  ck_assert(!tf_ctl_answers(w0, 300));
  ck_assert_int_lt(now_ms() - t0, 1300);
  char nobody[64];
  snprintf(nobody, sizeof nobody, "tcp://127.0.0.1:%d", rt_free_port());
  t0 = now_ms();
  ck_assert(!tf_ctl_answers(nobody, 200));
  ck_assert_int_lt(now_ms() - t0, 1200);
  free(ps);
  free(w0);
  rt_stop(&c);
}
END_TEST

/* Every call to an address nobody serves fails within its timeout (plus
 * slack), with DEADLINE_EXCEEDED or UNAVAILABLE naming the URL. */
START_TEST(test_unreachable_named) {
  char url[64];
  snprintf(url, sizeof url, "tcp://127.0.0.1:%d", rt_free_port());
  tf_status st;
  tf_status_init(&st);
  tf_ctl_task t;
  int64_t t0 = now_ms();
  tf_code code = tf_ctl_get_status(url, 300, &t, &st);
  int64_t took = now_ms() - t0;
  ck_assert_msg(code == TF_DEADLINE_EXCEEDED || code == TF_UNAVAILABLE, "%s: %s",
                tf_code_name(code), st.msg);
  ck_assert_msg(strstr(st.msg, url) != NULL, "'%s' does not name %s", st.msg, url);
  ck_assert_int_lt(took, 1300);
  ck_assert(!t.up);
  ck_assert_str_eq(t.url, url);
  ck_assert_int_eq(t.last_ok_ms, -1);
  tf_ctl_task_fini(&t);
  tf_ctl_task *ts = (tf_ctl_task *)&t;
  int n = 7;
  tf_status_init(&st);
  t0 = now_ms();
  code = tf_ctl_cluster_status(url, 300, &ts, &n, &st);
  ck_assert(code == TF_DEADLINE_EXCEEDED || code == TF_UNAVAILABLE);
  ck_assert_msg(strstr(st.msg, url) != NULL, "%s", st.msg);
  ck_assert_int_lt(now_ms() - t0, 1300);
  ck_assert_ptr_null(ts);
  ck_assert_int_eq(n, 0);
  tf_ctl_device *ds = (tf_ctl_device *)&t;
  n = 7;
  tf_status_init(&st);
  t0 = now_ms();
  code = tf_ctl_list_devices(url, 300, &ds, &n, &st);
  ck_assert(code == TF_DEADLINE_EXCEEDED || code == TF_UNAVAILABLE);
  ck_assert_msg(strstr(st.msg, url) != NULL, "%s", st.msg);
  ck_assert_int_lt(now_ms() - t0, 1300);
  ck_assert_ptr_null(ds);
  ck_assert_int_eq(n, 0);
  /* A URL that is not one at all. */
  tf_status_init(&st);
  code = tf_ctl_get_status("not a url", 300, &t, &st);
  ck_assert_int_eq(code, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "not a url") != NULL, "%s", st.msg);
  tf_ctl_task_fini(&t);
}
END_TEST

/* A URL that cannot even be dialled got no answer either. */
START_TEST(test_answers_bad_url) {
  ck_assert_msg(!tf_ctl_answers("not a url", 300), "a malformed URL never answers");
}
END_TEST

/* ---- a fake server with scripted replies ---------------------------------- */

typedef enum {
  FAKE_NO_JOB,         /* GetStatus reply without "job" */
  FAKE_BAD_DEVICE,     /* devices: [7] */
  FAKE_STR_DEVICES,    /* devices as plain strings */
  FAKE_ERROR,          /* error reply NOT_FOUND */
  FAKE_ERROR_UNAVAIL,  /* error reply UNAVAILABLE */
  FAKE_TASKS_NOT_ARRAY,
  FAKE_TASK_NO_UP,     /* second entry lacks "up" */
  FAKE_WITH_MASTER,    /* the master listed (second), optional fields absent */
  FAKE_DEVICE_NO_NAME, /* second device lacks "name" */
  FAKE_FROM_OTHER,     /* as FAKE_STR_DEVICES, the header from /job:worker/task:7 */
} fake_mode;

static fake_mode mode;
static char last_to[128]; /* the `to` of the last request */

static void pack_kv_str(msgpack_packer *pk, const char *k, const char *v) {
  tf_wire_pack_str(pk, k);
  tf_wire_pack_str(pk, v);
}

static void pack_task(msgpack_packer *pk, const char *job, int task, bool with_up) {
  msgpack_pack_map(pk, with_up ? 3 : 2);
  pack_kv_str(pk, "job", job);
  tf_wire_pack_str(pk, "task");
  msgpack_pack_int(pk, task);
  if (with_up) {
    tf_wire_pack_str(pk, "up");
    msgpack_pack_true(pk);
  }
}

static void pack_body(msgpack_packer *pk) {
  switch (mode) {
    case FAKE_NO_JOB:
    case FAKE_BAD_DEVICE:
    case FAKE_STR_DEVICES:
    case FAKE_FROM_OTHER:
      msgpack_pack_map(pk, mode == FAKE_NO_JOB ? 2 : 4);
      if (mode != FAKE_NO_JOB) {
        pack_kv_str(pk, "job", "ps");
        tf_wire_pack_str(pk, "task");
        msgpack_pack_int(pk, 3);
      }
      tf_wire_pack_str(pk, "incarnation");
      msgpack_pack_uint64(pk, 0xfedcba9876543210ULL);
      tf_wire_pack_str(pk, "devices");
      msgpack_pack_array(pk, 2);
      tf_wire_pack_str(pk, "/job:ps/replica:0/task:3/device:CPU:0");
      if (mode == FAKE_BAD_DEVICE) {
        msgpack_pack_int(pk, 7);
      } else {
        tf_wire_pack_str(pk, "/job:ps/replica:0/task:3/device:CPU:1");
      }
      break;
    case FAKE_TASKS_NOT_ARRAY:
      msgpack_pack_map(pk, 1);
      pack_kv_str(pk, "tasks", "none");
      break;
    case FAKE_TASK_NO_UP:
    case FAKE_WITH_MASTER:
      msgpack_pack_map(pk, 1);
      tf_wire_pack_str(pk, "tasks");
      msgpack_pack_array(pk, 3);
      pack_task(pk, "ps", 0, true);
      pack_task(pk, mode == FAKE_WITH_MASTER ? "master" : "worker", 0,
                mode == FAKE_WITH_MASTER);
      pack_task(pk, "worker", 1, true);
      break;
    case FAKE_DEVICE_NO_NAME:
      msgpack_pack_map(pk, 1);
      tf_wire_pack_str(pk, "devices");
      msgpack_pack_array(pk, 2);
      msgpack_pack_map(pk, 1);
      pack_kv_str(pk, "name", "/job:ps/replica:0/task:0/device:CPU:0");
      msgpack_pack_map(pk, 1);
      pack_kv_str(pk, "type", "CPU");
      break;
    default:
      msgpack_pack_nil(pk);
  }
}

static nng_msg *fake_handle(void *arg, const tf_wire_msg *req, tf_status *st) {
  (void)arg;
  snprintf(last_to, sizeof last_to, "%s", req->h.to != NULL ? req->h.to : "");
  if (mode == FAKE_ERROR || mode == FAKE_ERROR_UNAVAIL) {
    tf_status_set(st, mode == FAKE_ERROR ? TF_NOT_FOUND : TF_UNAVAILABLE,
                  "scripted failure");
    return NULL;
  }
  tf_wire_header h = {.version = TF_WIRE_VERSION, .method = req->h.method,
                      .request_id = req->h.request_id, .is_reply = true,
                      .code = TF_OK, .error = "",
                      .from = mode == FAKE_FROM_OTHER ? "/job:worker/replica:0/task:7" : ""};
  tf_wire_writer *w = tf_wire_writer_new(&h);
  pack_body(tf_wire_body(w));
  nng_msg *m = NULL;
  tf_wire_finish(w, &m, st);
  return m;
}

static tf_rpc_server *fake;
static char fake_url[64];

static void fake_start(void) {
  tf_status st;
  tf_status_init(&st);
  ck_assert_msg(tf_rpc_server_start_sync("tcp://127.0.0.1:0", 2, 0, fake_handle, NULL, &fake,
                                    &st) == TF_OK, "%s", st.msg);
  snprintf(fake_url, sizeof fake_url, "tcp://127.0.0.1:%d", tf_rpc_server_port(fake));
}

static void fake_stop(void) { tf_rpc_server_stop(fake); }

START_TEST(test_get_status_replies) {
  fake_start();
  tf_status st;
  tf_ctl_task t;
  mode = FAKE_STR_DEVICES; /* devices may be plain names */
  tf_status_init(&st);
  ck_assert_msg(tf_ctl_get_status(fake_url, 2000, &t, &st) == TF_OK, "%s", st.msg);
  ck_assert_str_eq(t.job, "ps");
  ck_assert_int_eq(t.task, 3);
  ck_assert(t.incarnation == 0xfedcba9876543210ULL);
  ck_assert_int_eq(t.n_devices, 2);
  ck_assert_str_eq(t.devices[1], "/job:ps/replica:0/task:3/device:CPU:1");
  tf_ctl_task_fini(&t);
  mode = FAKE_NO_JOB;
  tf_status_init(&st);
  ck_assert_int_eq(tf_ctl_get_status(fake_url, 2000, &t, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "'job'") != NULL, "%s", st.msg);
  ck_assert(!t.up);
  tf_ctl_task_fini(&t);
  mode = FAKE_BAD_DEVICE;
  tf_status_init(&st);
  ck_assert_int_eq(tf_ctl_get_status(fake_url, 2000, &t, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "devices[1]") != NULL, "%s", st.msg);
  ck_assert(!t.up);
  tf_ctl_task_fini(&t);
  /* An error reply keeps its code and message, and counts as an answer. */
  mode = FAKE_ERROR;
  tf_status_init(&st);
  ck_assert_int_eq(tf_ctl_get_status(fake_url, 2000, &t, &st), TF_NOT_FOUND);
  ck_assert_msg(strstr(st.msg, "scripted failure") != NULL, "%s", st.msg);
  tf_ctl_task_fini(&t);
  ck_assert(tf_ctl_answers(fake_url, 1000));
  fake_stop();
}
END_TEST

/* tf_ctl_probe_task: the request names the task expected; the answer
 * must come from it, by the reply's job and task and by its header. */
START_TEST(test_probe_task_identity) {
  fake_start();
  tf_status st;
  mode = FAKE_STR_DEVICES; /* answers as /job:ps/task:3, header from "" */
  tf_status_init(&st);
  ck_assert_msg(tf_ctl_probe_task(fake_url, "ps", 3, 2000, &st) == TF_OK, "%s", st.msg);
  ck_assert_str_eq(last_to, "/job:ps/replica:0/task:3");
  ck_assert_int_eq(tf_ctl_probe_task(fake_url, "worker", 1, 2000, &st), TF_FAILED_PRECONDITION);
  char want[256];
  snprintf(want, sizeof want, "wrong task at address: %s is /job:ps/replica:0/task:3, "
           "expected /job:worker/replica:0/task:1", fake_url);
  ck_assert_str_eq(st.msg, want);
  ck_assert_str_eq(last_to, "/job:worker/replica:0/task:1");
  ck_assert_int_eq(tf_ctl_probe_task(fake_url, "ps", 4, 2000, &st), TF_FAILED_PRECONDITION);
  mode = FAKE_FROM_OTHER; /* the body says ps/3, the header another task */
  ck_assert_int_eq(tf_ctl_probe_task(fake_url, "ps", 3, 2000, &st), TF_FAILED_PRECONDITION);
  snprintf(want, sizeof want, "wrong task at address: %s is /job:worker/replica:0/task:7, "
           "expected /job:ps/replica:0/task:3", fake_url);
  ck_assert_str_eq(st.msg, want);
  mode = FAKE_ERROR; /* errors come through as they are */
  ck_assert_int_eq(tf_ctl_probe_task(fake_url, "ps", 3, 2000, &st), TF_NOT_FOUND);
  ck_assert_msg(strstr(st.msg, "scripted failure") != NULL, "%s", st.msg);
  mode = FAKE_NO_JOB;
  ck_assert_int_eq(tf_ctl_probe_task(fake_url, "ps", 3, 2000, &st), TF_INVALID_ARGUMENT);
  fake_stop();
  tf_code c = tf_ctl_probe_task(fake_url, "ps", 3, 300, &st);
  ck_assert_msg(c == TF_DEADLINE_EXCEEDED || c == TF_UNAVAILABLE, "%s", st.msg);
}
END_TEST

/* ctl_client.h: a server that replies UNAVAILABLE (e.g. one shutting down)
 * does not count as answering; the error reaches tf_ctl_get_status intact. */
START_TEST(test_answers_error_reply_unavailable) {
  fake_start();
  mode = FAKE_ERROR_UNAVAIL;
  tf_status st;
  tf_status_init(&st);
  tf_ctl_task t;
  ck_assert_int_eq(tf_ctl_get_status(fake_url, 2000, &t, &st), TF_UNAVAILABLE);
  ck_assert_msg(strstr(st.msg, "scripted failure") != NULL, "%s", st.msg);
  tf_ctl_task_fini(&t);
  ck_assert_msg(!tf_ctl_answers(fake_url, 1000),
                "an UNAVAILABLE reply is not serving (ctl_client.h)");
  fake_stop();
}
END_TEST

START_TEST(test_cluster_status_replies) {
  fake_start();
  tf_status st;
  tf_ctl_task *ts = NULL;
  int n = 0;
  mode = FAKE_WITH_MASTER; /* moved first; absent optional fields default */
  tf_status_init(&st);
  ck_assert_msg(tf_ctl_cluster_status(fake_url, 2000, &ts, &n, &st) == TF_OK, "%s", st.msg);
  ck_assert_int_eq(n, 3);
  ck_assert_str_eq(ts[0].job, "master");
  ck_assert_str_eq(ts[1].job, "ps");
  ck_assert_str_eq(ts[2].job, "worker");
  ck_assert_int_eq(ts[2].task, 1);
  for (int i = 0; i < n; i++) {
    ck_assert(ts[i].up);
    ck_assert_str_eq(ts[i].url, "");
    ck_assert_str_eq(ts[i].error, "");
    ck_assert(ts[i].incarnation == 0);
    ck_assert_int_eq(ts[i].last_ok_ms, -1);
    ck_assert_int_eq(ts[i].n_devices, 0);
  }
  tf_ctl_tasks_free(ts, n);
  mode = FAKE_TASKS_NOT_ARRAY;
  tf_status_init(&st);
  ck_assert_int_eq(tf_ctl_cluster_status(fake_url, 2000, &ts, &n, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "'tasks'") != NULL, "%s", st.msg);
  ck_assert_ptr_null(ts);
  mode = FAKE_TASK_NO_UP;
  tf_status_init(&st);
  ck_assert_int_eq(tf_ctl_cluster_status(fake_url, 2000, &ts, &n, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "'up'") != NULL, "%s", st.msg);
  ck_assert_ptr_null(ts);
  ck_assert_int_eq(n, 0);
  mode = FAKE_DEVICE_NO_NAME;
  tf_ctl_device *ds = NULL;
  tf_status_init(&st);
  ck_assert_int_eq(tf_ctl_list_devices(fake_url, 2000, &ds, &n, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "'name'") != NULL, "%s", st.msg);
  ck_assert_ptr_null(ds);
  ck_assert_int_eq(n, 0);
  mode = FAKE_ERROR;
  tf_status_init(&st);
  ck_assert_int_eq(tf_ctl_list_devices(fake_url, 2000, &ds, &n, &st), TF_NOT_FOUND);
  tf_status_init(&st);
  ck_assert_int_eq(tf_ctl_cluster_status(fake_url, 2000, &ts, &n, &st), TF_NOT_FOUND);
  fake_stop();
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("ctl_client");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 20);
  tcase_add_test(tc, test_get_status);
  tcase_add_test(tc, test_cluster_status_and_task_down);
  tcase_add_test(tc, test_list_devices);
  tcase_add_test(tc, test_answers);
  tcase_add_test(tc, test_unreachable_named);
  tcase_add_test(tc, test_get_status_replies);
  tcase_add_test(tc, test_probe_task_identity);
  tcase_add_test(tc, test_answers_error_reply_unavailable);
  tcase_add_test(tc, test_answers_bad_url);
  tcase_add_test(tc, test_cluster_status_replies);
  suite_add_tcase(s, tc);
  return s;
}
