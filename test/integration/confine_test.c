/* confine_test.c: file-access confinement and the op allowlist against
 * real daemons (1 master, 1 ps, 2 workers) whose spec has
 * data_dirs: [ROOT/data] and checkpoint_dir: ROOT/ckpt, with ROOT/secret
 * outside both, ROOT/data/passwd -> /etc/passwd and ROOT/ckpt/evil ->
 * ROOT/secret (symbolic links):
 * - through the master (a remote session): WriteTFRecords to ROOT/secret,
 *   to ROOT/ckpt/../secret and through ROOT/ckpt/evil, and a
 *   TFRecordReader on /etc/passwd and on ROOT/data/passwd, are each
 *   PERMISSION_DENIED naming the path and the allowed directories; the
 *   secret keeps its bytes and mtime; a write to ROOT/ckpt/ok.rec and
 *   reading it back work; the cluster still runs a cross-task step;
 * - straight to a worker (RegisterGraph + RunGraph, as an attacker would):
 *   the same writes are refused the same way and the worker keeps serving;
 * - a job whose data is outside data_dirs, or whose checkpoint.dir is
 *   outside checkpoint_dir, is refused at submission naming the key;
 * - a client graph naming _Recv is refused at CreateSession (the
 *   allowlist), and a cluster whose ops.allow names _Recv accepts it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test/integration/harness.h"
#include "test/integration/igraph.h"
#include "test/integration/jobutil.h"
#include "lib/core/base/util.h"
#include "test/unit/testutil.h"

static char g_root[64];
static char g_extra[1024];

static char *rootp(const char *rel) { return tf__xasprintf("%s/%s", g_root, rel); }

static th_cluster *start(const char *more) {
  snprintf(g_root, sizeof g_root, "/tmp/tf-confine-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(g_root));
  char p[128];
  snprintf(p, sizeof p, "%s/data", g_root);
  ck_assert_int_eq(mkdir(p, 0755), 0);
  snprintf(p, sizeof p, "%s/ckpt", g_root);
  ck_assert_int_eq(mkdir(p, 0755), 0);
  snprintf(p, sizeof p, "%s/secret", g_root);
  FILE *f = fopen(p, "w");
  ck_assert_ptr_nonnull(f);
  fputs("the daemon must not touch this\n", f);
  fclose(f);
  char l[128];
  snprintf(l, sizeof l, "%s/data/passwd", g_root);
  ck_assert_int_eq(symlink("/etc/passwd", l), 0);
  snprintf(l, sizeof l, "%s/ckpt/evil", g_root);
  ck_assert_int_eq(symlink(p, l), 0);
  snprintf(g_extra, sizeof g_extra, "data_dirs: [%s/data]\ncheckpoint_dir: %s/ckpt\n%s",
           g_root, g_root, more ? more : "");
  th_opts o = th_default_opts();
  o.extra_yaml = g_extra;
  th_cluster *c = th_cluster_new(&o);
  TH_REQUIRE(c, th_start_all(c, 20000), "cluster did not start");
  return c;
}

static void finish(th_cluster *c) {
  th_cluster_free(c);
  tj_remove_tree(g_root);
}

static struct stat secret_stat(void) {
  char p[128];
  snprintf(p, sizeof p, "%s/secret", g_root);
  struct stat sb;
  ck_assert_int_eq(stat(p, &sb), 0);
  return sb;
}

static void require_secret_untouched(th_cluster *c, const struct stat *before, const char *what) {
  struct stat now = secret_stat();
  char p[128], buf[64] = {0};
  snprintf(p, sizeof p, "%s/secret", g_root);
  FILE *f = fopen(p, "r");
  TH_REQUIRE(c, f != NULL, "%s: secret gone", what);
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  TH_REQUIRE(c, n > 0 && strcmp(buf, "the daemon must not touch this\n") == 0 &&
                    now.st_mtim.tv_sec == before->st_mtim.tv_sec &&
                    now.st_mtim.tv_nsec == before->st_mtim.tv_nsec && now.st_size == before->st_size,
             "%s: the secret changed: '%s'", what, buf);
}

static tf_tensor *str_scalar(const char *s) {
  tf_tensor *t;
  tf_status st;
  tf_shape sh = tf_shape_scalar();
  ck_assert(tf_tensor_new(TF_STRING, &sh, &t, &st) == TF_OK);
  ck_assert(tf_tensor_set_string(t, 0, s, strlen(s), &st) == TF_OK);
  return t;
}

static tf_node *str_const(tf_graph *g, const char *name, const char *dev, tf_tensor *t) {
  tf_node *n = ig_node(g, "Const", name, dev, NULL, 0,
                       (tf_attr_kv[]){{"value", tf_attr_tensor(t)},
                                      {"dtype", tf_attr_type_v(TF_STRING)}}, 2);
  tf_tensor_unref(t);
  return n;
}

/* fn = path, recs = ["rec0", "rec1"], w = WriteTFRecords(fn, recs) on dev. */
static tf_graph *write_graph(const char *path, const char *dev) {
  tf_graph *g = tf_graph_new();
  tf_tensor *recs;
  tf_status st;
  tf_shape sh = tf_shape_of(1, 2);
  ck_assert(tf_tensor_new(TF_STRING, &sh, &recs, &st) == TF_OK);
  ck_assert(tf_tensor_set_string(recs, 0, "rec0", 4, &st) == TF_OK);
  ck_assert(tf_tensor_set_string(recs, 1, "rec1", 4, &st) == TF_OK);
  tf_output in[2] = {ig_out(str_const(g, "fn", dev, str_scalar(path))),
                     ig_out(str_const(g, "recs", dev, recs))};
  ig_node(g, "WriteTFRecords", "w", dev, in, 2, NULL, 0);
  return g;
}

/* q = FIFOQueue(string); enq = QueueEnqueue(q, path); rd = ReaderRead(
 * TFRecordReader, q), all on worker 0. */
static tf_graph *read_graph(const char *path) {
  const char *dev = "/job:worker/task:0";
  tf_graph *g = tf_graph_new();
  tf_dtype types[1] = {TF_STRING};
  tf_node *q = ig_node(g, "FIFOQueue", "q", dev, NULL, 0,
                       (tf_attr_kv[]){{"component_types", tf_attr_type_list(types, 1)}}, 1);
  tf_output eq[2] = {ig_out(q), ig_out(str_const(g, "fn", dev, str_scalar(path)))};
  ig_node(g, "QueueEnqueue", "enq", dev, eq, 2,
          (tf_attr_kv[]){{"Tcomponents", tf_attr_type_list(types, 1)}}, 1);
  tf_node *r = ig_node(g, "TFRecordReader", "reader", dev, NULL, 0, NULL, 0);
  tf_output rd[2] = {ig_out(r), ig_out(q)};
  ig_node(g, "ReaderRead", "rd", dev, rd, 2, NULL, 0);
  return g;
}

/* Runs target (and fetch, when given) of g on a session on the master. */
static tf_code run_on_master(th_cluster *c, tf_graph *g, const char *target, const char *fetch,
                             tf_tensor **out, tf_status *st) {
  tf_session *s = ig_remote(th_task_get(c, "master", 0)->url, g, st);
  TH_REQUIRE(c, s != NULL, "session: %s", st->msg);
  const char *targets[1] = {target};
  tf_code rc = tf_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, targets, 1, NULL, st);
  if (rc == TF_OK && fetch != NULL) {
    const char *fetches[1] = {fetch};
    rc = tf_session_run(s, NULL, NULL, NULL, 0, fetches, out, 1, NULL, 0, NULL, st);
  }
  tf_status cst;
  tf_session_close(s, &cst);
  tf_session_free(s);
  return rc;
}

static void require_denied(th_cluster *c, tf_code rc, const tf_status *st, const char *path,
                           const char *what) {
  TH_REQUIRE(c, rc == TF_PERMISSION_DENIED, "%s: %s: %s", what, tf_code_name(rc), st->msg);
  TH_REQUIRE(c, strstr(st->msg, path) != NULL &&
                    (strstr(st->msg, "is outside the directories this cluster allows") ||
                     strstr(st->msg, "leads outside the directories this cluster allows")) &&
                    strstr(st->msg, "checkpoint_dir: "),
             "%s: the refusal names no path or directories: %s", what, st->msg);
  fprintf(stderr, "confine: %s: %s\n", what, st->msg);
}

START_TEST(test_via_master) {
  th_cluster *c = start(NULL);
  struct stat before = secret_stat();
  const char *dev = "/job:worker/task:0";
  char *bad[3] = {rootp("secret"), rootp("ckpt/../secret"), rootp("ckpt/evil")};
  tf_status st;
  for (int i = 0; i < 3; i++) {
    tf_graph *g = write_graph(bad[i], dev);
    tf_code rc = run_on_master(c, g, "w", NULL, NULL, &st);
    require_denied(c, rc, &st, bad[i], "WriteTFRecords via the master");
    TH_REQUIRE(c, strstr(st.msg, "node 'w' (WriteTFRecords)"), "names no node: %s", st.msg);
    tf_graph_free(g);
    require_secret_untouched(c, &before, bad[i]);
  }
  char *reads[2] = {tf__xasprintf("/etc/passwd"), rootp("data/passwd")};
  for (int i = 0; i < 2; i++) {
    tf_graph *g = read_graph(reads[i]);
    tf_tensor *v = NULL;
    tf_code rc = run_on_master(c, g, "enq", "rd:1", &v, &st);
    require_denied(c, rc, &st, reads[i], "TFRecordReader via the master");
    TH_REQUIRE(c, strstr(st.msg, "corrupted") == NULL, "read the file: %s", st.msg);
    tf_graph_free(g);
  }
  /* Inside checkpoint_dir: written and read back. */
  char *ok = rootp("ckpt/ok.rec");
  tf_graph *g = write_graph(ok, dev);
  TH_REQUIRE(c, run_on_master(c, g, "w", NULL, NULL, &st) == TF_OK, "write %s: %s", ok, st.msg);
  tf_graph_free(g);
  g = read_graph(ok);
  tf_tensor *v = NULL;
  TH_REQUIRE(c, run_on_master(c, g, "enq", "rd:1", &v, &st) == TF_OK, "read %s: %s", ok,
             st.msg);
  const tf_string *s0 = tf_tensor_strings(v);
  TH_REQUIRE(c, s0->len == 4 && memcmp(s0->data, "rec0", 4) == 0, "read back a wrong record");
  tf_tensor_unref(v);
  tf_graph_free(g);
  g = ig_cross_graph();
  tf_session *s = ig_remote(th_task_get(c, "master", 0)->url, g, &st);
  TH_REQUIRE(c, s != NULL && ig_run_cross(s, 10000, &st) == TF_OK, "cross step: %s", st.msg);
  tf_session_close(s, &st);
  tf_session_free(s);
  tf_graph_free(g);
  for (int i = 0; i < 3; i++) free(bad[i]);
  free(reads[0]);
  free(reads[1]);
  free(ok);
  finish(c);
}
END_TEST

static void register_body(tf_wire_writer *wr, const void *arg) {
  tf_msg_register_graph_req_encode(wr, arg);
}

static void run_body(tf_wire_writer *wr, const void *arg) {
  tf_msg_run_graph_req_encode(wr, arg);
}

/* RegisterGraph of g on worker 0 as an intruder, then RunGraph of it. */
static tf_code register_and_run(th_cluster *c, tf_graph *g, tf_status *st) {
  th_task *w = th_task_get(c, "worker", 0);
  void *buf = NULL;
  size_t len = 0;
  TH_REQUIRE(c, tf_graph_to_msgpack(g, &buf, &len, st) == TF_OK, "%s", st->msg);
  tf_msg_register_graph_req req = {.graph = buf, .graph_len = len};
  tf_wire_header h = {.version = TF_WIRE_VERSION, .method = TF_M_REGISTER_GRAPH,
                      .from = "/job:intruder/replica:0/task:0", .from_inc = 7,
                      .to = "/job:worker/replica:0/task:0"};
  tf_wire_msg *r = NULL;
  tf_code rc = ig_call(w->url, &h, register_body, &req, 5000, &r, st);
  free(buf);
  TH_REQUIRE(c, rc == TF_OK, "RegisterGraph: %s: %s", tf_code_name(rc), st->msg);
  tf_msg_register_graph_reply reg;
  TH_REQUIRE(c, tf_msg_register_graph_reply_decode(r, &reg, st) == TF_OK, "%s", st->msg);
  tf_wire_msg_free(r);
  tf_msg_run_graph_req run = {.handle = reg.handle};
  h.method = TF_M_RUN_GRAPH;
  h.step_id = 4242;
  rc = ig_call(w->url, &h, run_body, &run, 10000, &r, st);
  tf_wire_msg_free(r);
  return rc;
}

START_TEST(test_straight_to_worker) {
  th_cluster *c = start(NULL);
  struct stat before = secret_stat();
  const char *dev = "/job:worker/replica:0/task:0/device:CPU:0";
  char *bad[3] = {rootp("secret"), rootp("ckpt/../secret"), rootp("ckpt/evil")};
  tf_status st;
  for (int i = 0; i < 3; i++) {
    tf_graph *g = write_graph(bad[i], dev);
    tf_code rc = register_and_run(c, g, &st);
    require_denied(c, rc, &st, bad[i], "WriteTFRecords straight to a worker");
    tf_graph_free(g);
    require_secret_untouched(c, &before, bad[i]);
  }
  char *ok = rootp("ckpt/direct.rec");
  tf_graph *g = write_graph(ok, dev);
  TH_REQUIRE(c, register_and_run(c, g, &st) == TF_OK, "write %s: %s", ok, st.msg);
  tf_graph_free(g);
  struct stat sb;
  TH_REQUIRE(c, stat(ok, &sb) == 0 && sb.st_size > 8, "%s not written", ok);
  tf_msg_get_status_reply gs;
  tf_wire_msg *keep = NULL;
  TH_REQUIRE(c, ig_status(th_task_get(c, "worker", 0)->url, &gs, &keep, &st) == TF_OK,
             "the worker stopped answering: %s", st.msg);
  tf_msg_get_status_reply_fini(&gs);
  tf_wire_msg_free(keep);
  for (int i = 0; i < 3; i++) free(bad[i]);
  free(ok);
  finish(c);
}
END_TEST

START_TEST(test_job_paths) {
  th_cluster *c = start(NULL);
  tj_write_idx(c, "train", 64, 7); /* in DIR: outside data_dirs */
  char *spec = tj_write_mlp_spec(c, "job.yaml", "outside", 8, 1, 4, 2, "");
  char *out = NULL, *err = NULL;
  int rc = tj_tfctl(c, 20000, &out, &err, "submit", spec, NULL);
  char both[4096];
  snprintf(both, sizeof both, "%s%s", out ? out : "", err ? err : "");
  TH_REQUIRE(c, rc != 0 && strstr(both, "input.train.images[0]: '") &&
                    strstr(both, "is outside the directories this cluster allows"),
             "submit of data outside data_dirs: exit %d: %s", rc, both);
  fprintf(stderr, "confine: job data: %s", both);
  free(out);
  free(err);
  /* the master still takes requests, and sees every task up (its first
   * health round may end after the refusal: the cluster has just started) */
  TH_REQUIRE(c, ig_master_sees_all_up(c, 10000), "the master does not see every task up");
  rc = tj_tfctl(c, 20000, &out, &err, "health", NULL);
  TH_REQUIRE(c, rc == 0, "health after the refusal: exit %d: %s%s", rc, out ? out : "",
             err ? err : "");
  free(out);
  free(err);
  free(spec);
  finish(c);
}
END_TEST

START_TEST(test_allowlist) {
  th_cluster *c = start(NULL);
  tf_graph *g = tf_graph_new();
  ig_node(g, "_Recv", "r", "/job:worker/task:0", NULL, 0,
          (tf_attr_kv[]){{"tensor_type", tf_attr_type_v(TF_FLOAT32)},
                         {"tensor_name", tf_attr_string("x")},
                         {"send_device", tf_attr_string("/job:worker/replica:0/task:1/device:CPU:0")},
                         {"send_device_incarnation", tf_attr_int(1)},
                         {"recv_device", tf_attr_string("/job:worker/replica:0/task:0/device:CPU:0")}},
          5);
  tf_status st;
  tf_session *s = ig_remote(th_task_get(c, "master", 0)->url, g, &st);
  tf_code rc = s == NULL ? st.code : TF_OK;
  if (s != NULL) { /* the graph may travel with the first run */
    const char *t[1] = {"r"};
    rc = tf_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, t, 1, NULL, &st);
    tf_session_close(s, &st);
    tf_session_free(s);
  }
  TH_REQUIRE(c, rc == TF_PERMISSION_DENIED &&
                    strstr(st.msg, "graph node 'r' (op _Recv) is not allowed on this cluster "
                                   "(ops.allow in "),
             "_Recv from a client: %s: %s", tf_code_name(rc), st.msg);
  fprintf(stderr, "confine: allowlist: %s\n", st.msg);
  finish(c);
  /* ops.allow extends the default. */
  c = start("ops: {allow: [_Recv]}\n");
  s = ig_remote(th_task_get(c, "master", 0)->url, g, &st);
  TH_REQUIRE(c, s != NULL, "with ops.allow: %s", st.msg);
  tf_session_close(s, &st);
  tf_session_free(s);
  tf_graph_free(g);
  finish(c);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("confine");
  TCase *tc = tcase_create("confine");
  tcase_set_timeout(tc, TH_SANITIZED ? 240 : 90);
  tcase_add_test(tc, test_via_master);
  tcase_add_test(tc, test_straight_to_worker);
  tcase_add_test(tc, test_job_paths);
  tcase_add_test(tc, test_allowlist);
  suite_add_tcase(s, tc);
  return s;
}
