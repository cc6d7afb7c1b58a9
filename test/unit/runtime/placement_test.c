/* placement_test.c: tf_place on graphs built with the C API: partial and
 * wildcard requests, the default job, variables round-robin over the ps
 * tasks with their updates colocated, loc:@ colocation, _Arg/_Retval
 * colocation, conflicting and unsatisfiable requests, the cost model
 * moving an expensive node, small connected work kept on one task (a 2x2
 * MatMul of two Consts is one partition) while big independent chains
 * spread, pinned nodes staying pinned, determinism, and the topological
 * order. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/graph/algorithm.h"
#include "lib/core/graph/graph_impl.h"
#include "lib/core/framework/kernel.h"
#include "lib/runtime/partition.h"
#include "lib/runtime/placement.h"
#include "lib/runtime/placement_impl.h"
#include "test/unit/testutil.h"

#define PS0 "/job:ps/replica:0/task:0/device:CPU:0"
#define PS1 "/job:ps/replica:0/task:1/device:CPU:0"
#define W0 "/job:worker/replica:0/task:0/device:CPU:0"
#define W1 "/job:worker/replica:0/task:1/device:CPU:0"
#define W0GPU "/job:worker/replica:0/task:0/device:GPU:0"

static const tf_place_device cluster[] = {
    {PS0, "CPU"}, {PS1, "CPU"}, {W0, "CPU"}, {W1, "CPU"}};
enum { NDEV = 4 };

/* op on inputs with attrs, requested on device (NULL: none), colocated
 * with `with` (NULL: none), and control inputs ctl[0..n_ctl). */
static tf_node *dnode(tf_graph *g, const char *op, const char *name, const tf_output *in,
                      int n_in, const tf_attr_kv *a, int n_a, const char *device,
                      const tf_node *with) {
  tf_node_builder *b = tf_node_begin(g, op, name);
  for (int i = 0; i < n_in; i++) {
    tf_node_add_input(b, in[i]);
  }
  for (int i = 0; i < n_a; i++) {
    tf_node_set_attr(b, a[i].name, a[i].value);
  }
  if (device != NULL) {
    tf_node_set_device(b, device);
  }
  if (with != NULL) {
    tf_node_colocate_with(b, with);
  }
  tf_status st;
  tf_node *n = tf_node_finish(b, &st);
  ck_assert_msg(n != NULL, "%s: %s", name, st.msg);
  return n;
}

static tf_node *cnst_on(tf_graph *g, const char *name, const char *device, float v) {
  tf_tensor *t = tf_tensor_scalar_f32(v);
  tf_attr_kv a[] = {{"value", tf_attr_tensor(t)}, {"dtype", tf_attr_type_v(TF_FLOAT32)}};
  tf_node *n = dnode(g, "Const", name, NULL, 0, a, 2, device, NULL);
  tf_tensor_unref(t);
  return n;
}

static tf_node *variable(tf_graph *g, const char *name, const char *device) {
  tf_attr_kv a[] = {{"shape", tf_attr_shape(tf_shape_scalar())},
                    {"dtype", tf_attr_type_v(TF_FLOAT32)}};
  return dnode(g, "VariableV2", name, NULL, 0, a, 2, device, NULL);
}

static const tf_place_opts worker_ps = {.default_job = "worker", .ps_job = "ps"};

static void place_ok(const tf_graph *g, const tf_place_device *devs, int nd,
                     const tf_place_opts *o, int *out) {
  tf_status st;
  tf_status_init(&st);
  ck_assert_msg(tf_place(g, devs, nd, o, out, &st) == TF_OK, "%s", st.msg);
}

static int dev_of(const tf_graph *g, const int *out, const char *name) {
  tf_node *n = tf_graph_find(g, name);
  ck_assert_msg(n != NULL, "no node %s", name);
  return out[tf_node_id(n)];
}

/* Every node is a 1 us Const, so the greedy choice is hand-worked from
 * the devices' busy times: an unrequested or job-less request goes to the
 * default job's least busy device, ties to the lower index. */
START_TEST(test_partial_requests) {
  tf_graph *g = tf_graph_new();
  cnst_on(g, "a", "/job:ps", 1);                  /* ps0 (ps1 ties, later) */
  cnst_on(g, "b", "/job:worker/task:1", 1);       /* w1 */
  cnst_on(g, "c", "/device:CPU:0", 1);            /* worker: w0 idle -> w0 */
  cnst_on(g, "d", NULL, 1);                       /* w0, w1 both 1 us -> w0 */
  cnst_on(g, "e", "/job:ps/task:1", 1);           /* ps1 */
  cnst_on(g, "f", "/job:worker/task:*", 1);       /* w0 2 us, w1 1 us -> w1 */
  cnst_on(g, "h", "/device:CPU:*", 1);            /* w0 2, w1 2 -> w0 */
  cnst_on(g, "i", "/job:ps/replica:0/task:0/device:CPU:0", 1); /* ps0 */
  cnst_on(g, "j", "/cpu:0", 1);                   /* legacy: w0 3, w1 2 -> w1 */
  cnst_on(g, "k", "/job:ps/device:CPU:0", 1);     /* ps0 2 us, ps1 1 us -> ps1 */
  int out[16];
  place_ok(g, cluster, NDEV, &worker_ps, out);
  const char *names = "abcdefhijk";
  const int want[] = {0, 3, 2, 2, 1, 3, 2, 0, 3, 1};
  for (int i = 0; names[i]; i++) {
    char nm[2] = {names[i], 0};
    ck_assert_msg(dev_of(g, out, nm) == want[i], "%s on %d, want %d", nm,
                  dev_of(g, out, nm), want[i]);
  }
  /* without a default job the unrequested node may go anywhere: the
   * idle-most device, lowest index first */
  tf_place_opts none = {0};
  place_ok(g, cluster, NDEV, &none, out);
  ck_assert_int_eq(dev_of(g, out, "c"), 1); /* ps1 idle after a, b */
  tf_graph_free(g);
}
END_TEST

/* v0..v3 alternate over the two ps tasks; a pinned variable does not take
 * a turn; Assign and ApplyGradientDescent follow their variable; the
 * constants feeding them go to the default job. */
START_TEST(test_variables_round_robin) {
  tf_graph *g = tf_graph_new();
  tf_node *lr = cnst_on(g, "lr", NULL, 0.1f);
  const char *pin[] = {NULL, NULL, "/job:ps/task:1", NULL, NULL, "/device:CPU:0"};
  const int want[] = {0, 1, 1, 0, 1, 0};
  for (int i = 0; i < 6; i++) {
    char vn[16], an[16], un[16], cn[16];
    snprintf(vn, sizeof vn, "v%d", i);
    snprintf(an, sizeof an, "assign%d", i);
    snprintf(un, sizeof un, "update%d", i);
    snprintf(cn, sizeof cn, "init%d", i);
    tf_node *v = variable(g, vn, pin[i]);
    tf_node *c = cnst_on(g, cn, NULL, (float)i);
    tt_node(g, "Assign", an, (tf_output[]){{v, 0}, {c, 0}}, 2, NULL, 0);
    tt_node(g, "ApplyGradientDescent", un, (tf_output[]){{v, 0}, {lr, 0}, {c, 0}}, 3,
            NULL, 0);
  }
  int out[64];
  place_ok(g, cluster, NDEV, &worker_ps, out);
  for (int i = 0; i < 6; i++) {
    char vn[16], an[16], un[16], cn[16];
    snprintf(vn, sizeof vn, "v%d", i);
    snprintf(an, sizeof an, "assign%d", i);
    snprintf(un, sizeof un, "update%d", i);
    snprintf(cn, sizeof cn, "init%d", i);
    ck_assert_msg(dev_of(g, out, vn) == want[i], "%s on %d, want %d", vn,
                  dev_of(g, out, vn), want[i]);
    ck_assert_int_eq(dev_of(g, out, an), want[i]);
    ck_assert_int_eq(dev_of(g, out, un), want[i]);
    ck_assert_int_ge(dev_of(g, out, cn), 2); /* a worker */
  }
  ck_assert_int_ge(dev_of(g, out, "lr"), 2);
  /* without a ps job variables are ordinary: they go to the workers */
  tf_place_opts no_ps = {.default_job = "worker"};
  place_ok(g, cluster, NDEV, &no_ps, out);
  ck_assert_int_ge(dev_of(g, out, "v0"), 2);
  ck_assert_int_eq(dev_of(g, out, "v0"), dev_of(g, out, "update0"));
  tf_graph_free(g);
}
END_TEST

/* tf_place_opts.pinned (where state already lives) restricts a node and its
 * colocation group to one device, overrides the ps round-robin, and a pin
 * its request rules out is an error naming both. */
static const char *pin_lookup(void *arg, const char *node) {
  const char *const *kv = arg; /* name, device, ..., NULL */
  for (int i = 0; kv[i] != NULL; i += 2) {
    if (strcmp(kv[i], node) == 0) return kv[i + 1];
  }
  return NULL;
}

START_TEST(test_pinned_state) {
  tf_graph *g = tf_graph_new();
  tf_node *lr = cnst_on(g, "lr", NULL, 0.1f);
  tf_node *v0 = variable(g, "v0", NULL), *v1 = variable(g, "v1", NULL);
  tf_node *c = cnst_on(g, "c", NULL, 1);
  tt_node(g, "ApplyGradientDescent", "update0", (tf_output[]){{v0, 0}, {lr, 0}, {c, 0}},
          3, NULL, 0);
  tt_node(g, "Assign", "assign1", (tf_output[]){{v1, 0}, {c, 0}}, 2, NULL, 0);
  int out[16];
  place_ok(g, cluster, NDEV, &worker_ps, out);
  ck_assert_int_eq(dev_of(g, out, "v0"), 0); /* round-robin without pins */
  ck_assert_int_eq(dev_of(g, out, "v1"), 1);
  const char *kv[] = {"v0", PS1, "v1", PS1, NULL};
  tf_place_opts o = worker_ps;
  o.pinned = pin_lookup;
  o.pinned_arg = kv;
  place_ok(g, cluster, NDEV, &o, out);
  ck_assert_int_eq(dev_of(g, out, "v0"), 1);
  ck_assert_int_eq(dev_of(g, out, "update0"), 1); /* the group follows its pin */
  ck_assert_int_eq(dev_of(g, out, "v1"), 1);
  ck_assert_int_eq(dev_of(g, out, "assign1"), 1);
  /* A request that rules the pin out. */
  tf_node *v2 = variable(g, "v2", "/job:ps/task:0");
  (void)v2;
  const char *bad[] = {"v2", PS1, NULL};
  o.pinned_arg = bad;
  tf_status st;
  tf_status_init(&st);
  ck_assert_int_eq(tf_place(g, cluster, NDEV, &o, out, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "node 'v2'") && strstr(st.msg, "its state lives on " PS1),
                "%s", st.msg);
  tf_graph_free(g);
}
END_TEST

/* loc:@ joins a node to its target's device and request; _Retval joins its
 * producer and _Arg its first consumer; chains of colocation are
 * transitive. */
START_TEST(test_colocation) {
  tf_graph *g = tf_graph_new();
  tf_node *a = cnst_on(g, "a", "/job:worker/task:1", 1);
  tf_node *b = dnode(g, "Identity", "b", (tf_output[]){{a, 0}}, 1, NULL, 0, NULL, NULL);
  tf_node *free_node = cnst_on(g, "x", NULL, 2);
  tf_node *c = dnode(g, "Neg", "c", (tf_output[]){{free_node, 0}}, 1, NULL, 0, NULL, a);
  dnode(g, "Neg", "c2", (tf_output[]){{c, 0}}, 1, NULL, 0, NULL, c);
  tf_node *ps = cnst_on(g, "p", "/job:ps/task:1", 1);
  tf_attr_kv ra[] = {{"index", tf_attr_int(0)}};
  dnode(g, "_Retval", "ret", (tf_output[]){{ps, 0}}, 1, ra, 1, NULL, NULL);
  tf_attr_kv aa[] = {{"T", tf_attr_type_v(TF_FLOAT32)}, {"index", tf_attr_int(0)}};
  tf_node *arg = dnode(g, "_Arg", "arg", NULL, 0, aa, 2, NULL, NULL);
  tf_node *late = cnst_on(g, "late", NULL, 1);
  dnode(g, "Add", "use1", (tf_output[]){{arg, 0}, {late, 0}}, 2, NULL, 0, "/job:ps/task:0",
        NULL);
  dnode(g, "Add", "use2", (tf_output[]){{arg, 0}, {late, 0}}, 2, NULL, 0, W1, NULL);
  int out[32];
  place_ok(g, cluster, NDEV, &worker_ps, out);
  ck_assert_int_eq(dev_of(g, out, "a"), 3);
  ck_assert_int_eq(dev_of(g, out, "c"), 3);
  ck_assert_int_eq(dev_of(g, out, "c2"), 3);
  ck_assert_int_eq(dev_of(g, out, "ret"), 1);
  ck_assert_int_eq(dev_of(g, out, "arg"), 0);
  ck_assert_int_eq(dev_of(g, out, "use1"), 0);
  ck_assert_int_eq(dev_of(g, out, "use2"), 3);
  (void)b;
  tf_graph_free(g);
}
END_TEST

START_TEST(test_conflicts) {
  tf_status st;
  int out[16];
  /* a variable on ps and its Assign on a worker */
  tf_graph *g = tf_graph_new();
  tf_node *v = variable(g, "var", "/job:ps");
  tf_node *c = cnst_on(g, "val", NULL, 1);
  dnode(g, "Assign", "set", (tf_output[]){{v, 0}, {c, 0}}, 2, NULL, 0, "/job:worker", NULL);
  ck_assert_int_eq(tf_place(g, cluster, NDEV, &worker_ps, out, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "'var'") && strstr(st.msg, "'set'") &&
                strstr(st.msg, "/job:ps") && strstr(st.msg, "/job:worker"), "%s", st.msg);
  tf_graph_free(g);
  /* loc:@ between two different tasks, through a third node */
  g = tf_graph_new();
  tf_node *a = cnst_on(g, "a", "/job:worker/task:0", 1);
  tf_node *m = dnode(g, "Neg", "mid", (tf_output[]){{a, 0}}, 1, NULL, 0, NULL, a);
  dnode(g, "Neg", "far", (tf_output[]){{m, 0}}, 1, NULL, 0, "/job:worker/task:1", m);
  ck_assert_int_eq(tf_place(g, cluster, NDEV, &worker_ps, out, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "'a'") && strstr(st.msg, "'far'") &&
                strstr(st.msg, "task:1"), "%s", st.msg);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_no_device) {
  tf_status st;
  int out[16];
  tf_graph *g = tf_graph_new();
  cnst_on(g, "lonely", "/job:chief", 1);
  ck_assert_int_eq(tf_place(g, cluster, NDEV, &worker_ps, out, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "'lonely'") && strstr(st.msg, "/job:chief") &&
                strstr(st.msg, PS0) && strstr(st.msg, W1), "%s", st.msg);
  tf_graph_free(g);
  /* a GPU device without GPU kernels (this build has none for MatMul) */
  ck_assert(!tf_kernel_exists("MatMul", TF_DEVICE_GPU));
  g = tf_graph_new();
  tf_node *x = cnst_on(g, "x", NULL, 1);
  tf_node *x2 = dnode(g, "Reshape", "x2", (tf_output[]){{x, 0}, {tt_const(g, "s",
                      tf_tensor_vec_i32(2, (int32_t[]){1, 1})), 0}}, 2, NULL, 0, NULL, NULL);
  dnode(g, "MatMul", "mm", (tf_output[]){{x2, 0}, {x2, 0}}, 2, NULL, 0, "/device:GPU:0", NULL);
  const tf_place_device gpu[] = {{W0, "CPU"}, {W0GPU, "GPU"}};
  ck_assert_int_eq(tf_place(g, gpu, 2, NULL, out, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "'mm'") && strstr(st.msg, "/device:GPU:0") &&
                strstr(st.msg, "kernel") && strstr(st.msg, W0GPU), "%s", st.msg);
  tf_graph_free(g);
  /* a malformed request names the node */
  g = tf_graph_new();
  cnst_on(g, "odd", "/job:ps/bogus:1", 1);
  ck_assert_int_eq(tf_place(g, cluster, NDEV, NULL, out, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "'odd'") && strstr(st.msg, "bogus"), "%s", st.msg);
  /* no devices, a malformed device name */
  ck_assert_int_eq(tf_place(g, cluster, 0, NULL, out, &st), TF_INVALID_ARGUMENT);
  const tf_place_device bad[] = {{"/job:w/oops", "CPU"}};
  ck_assert_int_eq(tf_place(g, bad, 1, NULL, out, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "oops"), "%s", st.msg);
  tf_graph_free(g);
}
END_TEST

/* Two MatMuls on one input, over two idle workers. Statically each takes
 * ~52 us (2 * 64^3 flops at 10 GFLOP/s) and moving the 16 KiB input costs
 * 65 us + 16 us, more than either's work, so the edges join them to the
 * input on w0. Measured at 10 ms each, the second would wait 10 ms on w0,
 * far more than the transfer, so it moves to w1. */
START_TEST(test_cost_model_moves_node) {
  tf_graph *g = tf_graph_new();
  tf_node *x = tt_const(g, "x", tt_rand(TF_FLOAT32, tf_shape_of(2, 64, 64), -1, 1));
  tt_node(g, "MatMul", "mm1", (tf_output[]){{x, 0}, {x, 0}}, 2, NULL, 0);
  tt_node(g, "MatMul", "mm2", (tf_output[]){{x, 0}, {x, 0}}, 2, NULL, 0);
  const tf_place_device two[] = {{W0, "CPU"}, {W1, "CPU"}};
  tf_place_opts o = {.default_job = "worker"};
  int out[8];
  place_ok(g, two, 2, &o, out);
  ck_assert_int_eq(dev_of(g, out, "x"), 0);
  ck_assert_int_eq(dev_of(g, out, "mm1"), 0);
  ck_assert_int_eq(dev_of(g, out, "mm2"), 0);
  tf_cost_model *cm = tf_cost_model_new();
  for (int i = 0; i < 3; i++) {
    tf_cost_model_record(cm, "mm1", 9000000 + 1000000 * i); /* mean 10 ms */
    tf_cost_model_record(cm, "mm2", 10000000);
  }
  o.costs = cm;
  place_ok(g, two, 2, &o, out);
  ck_assert_int_eq(dev_of(g, out, "mm1"), 0);
  ck_assert_int_eq(dev_of(g, out, "mm2"), 1);
  /* a transfer dearer than the wait keeps it home */
  o.transfer_latency_ns = 20000000;
  place_ok(g, two, 2, &o, out);
  ck_assert_int_eq(dev_of(g, out, "mm2"), 0);
  /* a slow link makes the 16 KiB input cost more than the 10 ms wait */
  o.transfer_latency_ns = 0;
  o.bytes_per_ns = 0.001;
  place_ok(g, two, 2, &o, out);
  ck_assert_int_eq(dev_of(g, out, "mm2"), 0);
  tf_cost_model_free(cm);
  tf_graph_free(g);
}
END_TEST

/* ---- small connected work on one task; big independent work spread --------- */

static const tf_place_device two_workers[] = {{W0, "CPU"}, {W1, "CPU"}};
static const tf_place_opts worker_only = {.default_job = "worker"};

static tf_node *matrix(tf_graph *g, const char *name, int n, const char *device) {
  tf_tensor *t = tt_rand(TF_FLOAT32, tf_shape_of(2, n, n), -1, 1);
  tf_attr_kv a[] = {{"value", tf_attr_tensor(t)}, {"dtype", tf_attr_type_v(TF_FLOAT32)}};
  tf_node *c = dnode(g, "Const", name, NULL, 0, a, 2, device, NULL);
  tf_tensor_unref(t);
  return c;
}

/* n MatMul(prev, x) from x, named <prefix>0..; returns the last. */
static tf_node *mm_chain(tf_graph *g, const char *prefix, tf_node *x, int n) {
  tf_node *cur = x;
  for (int i = 0; i < n; i++) {
    char nm[32];
    snprintf(nm, sizeof nm, "%s%d", prefix, i);
    cur = dnode(g, "MatMul", nm, (tf_output[]){{cur, 0}, {x, 0}}, 2, NULL, 0, NULL, NULL);
  }
  return cur;
}

/* The partitions of g as placed in out, over two_workers: their count. */
static int n_partitions(const tf_graph *g, const int *out) {
  uint64_t incs[2] = {1, 2};
  tf_partition *parts = NULL;
  int np = 0;
  tf_status st;
  ck_assert_msg(tf_partition_graph(g, out, two_workers, incs, 2, &parts, &np, &st) == TF_OK,
                "%s", st.msg);
  tf_partitions_free(parts, np);
  return np;
}

/* The 2x2 MatMul of two Consts (each 1 us of work; cutting either edge
 * costs 65 us) is one group on one task and one partition, over two idle
 * workers and over the whole cluster alike; so is a fan of cheap nodes on
 * one small input, and a chain joined only by control edges (a control
 * edge across tasks is a message too). The greedy alone used to put the
 * second Const on the idle w1 and split the MatMul across the tasks. */
START_TEST(test_small_work_one_task) {
  tf_graph *g = tf_graph_new();
  tf_node *a = matrix(g, "a", 2, NULL), *b = matrix(g, "b", 2, NULL);
  dnode(g, "MatMul", "mm", (tf_output[]){{a, 0}, {b, 0}}, 2, NULL, 0, NULL, NULL);
  int out[8];
  place_ok(g, two_workers, 2, &worker_only, out);
  ck_assert_int_eq(dev_of(g, out, "a"), dev_of(g, out, "mm"));
  ck_assert_int_eq(dev_of(g, out, "b"), dev_of(g, out, "mm"));
  ck_assert_int_eq(n_partitions(g, out), 1);
  place_ok(g, cluster, NDEV, &worker_ps, out);
  ck_assert_int_eq(dev_of(g, out, "a"), dev_of(g, out, "mm"));
  ck_assert_int_eq(dev_of(g, out, "b"), dev_of(g, out, "mm"));
  ck_assert_int_ge(dev_of(g, out, "mm"), 2);
  tf_graph_free(g);

  g = tf_graph_new();
  tf_node *x = matrix(g, "x", 4, NULL);
  for (int i = 0; i < 16; i++) {
    char nm[16];
    snprintf(nm, sizeof nm, "neg%d", i);
    dnode(g, "Neg", nm, (tf_output[]){{x, 0}}, 1, NULL, 0, NULL, NULL);
  }
  tf_node *prev = cnst_on(g, "c0", NULL, 1);
  for (int i = 1; i < 8; i++) {
    char nm[16];
    snprintf(nm, sizeof nm, "c%d", i);
    tf_node_builder *nb = tf_node_begin(g, "NoOp", nm);
    tf_node_add_control_input(nb, prev);
    tf_status st;
    prev = tf_node_finish(nb, &st);
    ck_assert_msg(prev != NULL, "%s", st.msg);
  }
  int out2[64];
  place_ok(g, two_workers, 2, &worker_only, out2);
  for (int i = 0; i < 16; i++) {
    char nm[16];
    snprintf(nm, sizeof nm, "neg%d", i);
    ck_assert_int_eq(dev_of(g, out2, nm), dev_of(g, out2, "x"));
  }
  for (int i = 1; i < 8; i++) {
    char nm[16];
    snprintf(nm, sizeof nm, "c%d", i);
    ck_assert_int_eq(dev_of(g, out2, nm), dev_of(g, out2, "c0"));
  }
  tf_graph_free(g);
}
END_TEST

/* Two chains of 1024x1024 MatMuls (each ~215 ms statically, 2 * 1024^3
 * flops at 10 GFLOP/s; moving a 4 MiB result costs 65 us + 4.2 ms): the
 * edges inside a chain cost far less than the work on either side, so the
 * chains stay separate groups and the greedy runs them on both tasks at
 * once, each chain whole on one task (its Const joins it: the Const's own
 * work, 0.8 ms, is less than the cut). Sharing one 1024x1024 input does
 * not join them either: the input goes with the first chain and is sent
 * to the second. With 2x2 matrices the same shapes of graph are cheap
 * next to any transfer, and the shared-input version is one task. */
START_TEST(test_big_chains_spread) {
  for (int shared = 0; shared < 2; shared++) {
    tf_graph *g = tf_graph_new();
    tf_node *x1 = matrix(g, "x1", 1024, NULL);
    tf_node *x2 = shared ? x1 : matrix(g, "x2", 1024, NULL);
    mm_chain(g, "a", x1, 6);
    mm_chain(g, "b", x2, 6);
    int out[32];
    place_ok(g, two_workers, 2, &worker_only, out);
    int da = dev_of(g, out, "a0"), db = dev_of(g, out, "b0");
    ck_assert_msg(da != db, "shared %d: both chains on device %d", shared, da);
    for (int i = 0; i < 6; i++) {
      char nm[8];
      snprintf(nm, sizeof nm, "a%d", i);
      ck_assert_int_eq(dev_of(g, out, nm), da);
      snprintf(nm, sizeof nm, "b%d", i);
      ck_assert_int_eq(dev_of(g, out, nm), db);
    }
    ck_assert_int_eq(dev_of(g, out, "x1"), da);
    if (!shared) {
      ck_assert_int_eq(dev_of(g, out, "x2"), db);
    }
    ck_assert_int_eq(n_partitions(g, out), 2);
    tf_graph_free(g);
  }
  tf_graph *g = tf_graph_new();
  tf_node *x = matrix(g, "x", 2, NULL);
  mm_chain(g, "a", x, 6);
  mm_chain(g, "b", x, 6);
  int out[32];
  place_ok(g, two_workers, 2, &worker_only, out);
  for (int i = 0; i < tf_graph_num_nodes(g); i++) {
    ck_assert_int_eq(out[i], out[0]);
  }
  tf_graph_free(g);
}
END_TEST

/* Pinned nodes stay where they are pinned, even when the cost model would
 * rather keep their work together: a 2x2 MatMul of a Const pinned to w1
 * and one pinned to w0 runs on w1 (its first input's group; the other
 * Const cannot join) with b sent from w0; unpinned small producers of a
 * pinned consumer go to its task; a pinned ps Const is not pulled onto a
 * worker, nor its consumer onto the ps task. */
START_TEST(test_pins_respected) {
  tf_graph *g = tf_graph_new();
  tf_node *a = matrix(g, "a", 2, "/job:worker/task:1");
  tf_node *b = matrix(g, "b", 2, "/job:worker/task:0");
  dnode(g, "MatMul", "mm", (tf_output[]){{a, 0}, {b, 0}}, 2, NULL, 0, NULL, NULL);
  tf_node *c = matrix(g, "c", 2, NULL), *d = matrix(g, "d", 2, NULL);
  dnode(g, "MatMul", "mm_pinned", (tf_output[]){{c, 0}, {d, 0}}, 2, NULL, 0,
        "/job:worker/task:0", NULL);
  tf_node *p = matrix(g, "p", 2, "/job:ps/task:1");
  dnode(g, "Neg", "after_ps", (tf_output[]){{p, 0}}, 1, NULL, 0, NULL, NULL);
  int out[32];
  place_ok(g, cluster, NDEV, &worker_ps, out);
  ck_assert_int_eq(dev_of(g, out, "a"), 3);
  ck_assert_int_eq(dev_of(g, out, "b"), 2);
  ck_assert_int_eq(dev_of(g, out, "mm"), 3);
  ck_assert_int_eq(dev_of(g, out, "mm_pinned"), 2);
  ck_assert_int_eq(dev_of(g, out, "c"), 2);
  ck_assert_int_eq(dev_of(g, out, "d"), 2);
  ck_assert_int_eq(dev_of(g, out, "p"), 1);
  ck_assert_int_ge(dev_of(g, out, "after_ps"), 2); /* the default job */
  tf_graph_free(g);

  /* Big chains whose inputs are both pinned to w1 and whose end is pinned
   * to w0: the pins hold, and the unpinned middle still spreads. */
  g = tf_graph_new();
  tf_node *x1 = matrix(g, "x1", 1024, "/job:worker/task:1");
  tf_node *x2 = matrix(g, "x2", 1024, "/job:worker/task:1");
  mm_chain(g, "a", x1, 3);
  mm_chain(g, "b", x2, 3);
  tf_node_builder *nb = tf_node_begin(g, "Neg", "pinned_end");
  tf_node_add_input(nb, (tf_output){tf_graph_find(g, "b2"), 0});
  tf_node_set_device(nb, "/job:worker/task:0");
  tf_status st;
  ck_assert_msg(tf_node_finish(nb, &st) != NULL, "%s", st.msg);
  place_ok(g, two_workers, 2, &worker_only, out);
  ck_assert_int_eq(dev_of(g, out, "x1"), 1);
  ck_assert_int_eq(dev_of(g, out, "x2"), 1);
  ck_assert_int_eq(dev_of(g, out, "pinned_end"), 0);
  int used[2] = {0, 0};
  for (int i = 0; i < tf_graph_num_nodes(g); i++) {
    used[out[i]]++;
  }
  ck_assert(used[0] > 1 && used[1] > 2);
  tf_graph_free(g);
}
END_TEST

/* A random graph with random requests: two placements agree, every node
 * is on a device matching its request, ref edges and loc:@ stay on one
 * device. */
static tf_graph *random_graph(uint64_t seed, int n) {
  tt_rng_reseed(seed);
  tf_graph *g = tf_graph_new();
  const char *req[] = {NULL, NULL, NULL, "/job:ps", "/job:worker/task:1", "/device:CPU:0",
                       "/job:worker"};
  tf_node **nodes = calloc((size_t)n, sizeof *nodes);
  int k = 0;
  for (int i = 0; i < 4; i++) {
    char nm[16];
    snprintf(nm, sizeof nm, "c%d", i);
    tf_tensor *t = tt_rand(TF_FLOAT32, tf_shape_of(2, 8, 8), -1, 1);
    tf_attr_kv a[] = {{"value", tf_attr_tensor(t)}, {"dtype", tf_attr_type_v(TF_FLOAT32)}};
    nodes[k++] = dnode(g, "Const", nm, NULL, 0, a, 2, req[tt_rand_u64() % 7], NULL);
    tf_tensor_unref(t);
  }
  for (; k < n; k++) {
    char nm[16];
    snprintf(nm, sizeof nm, "n%d", k);
    const char *ops[] = {"Add", "Mul", "MatMul", "Sub"};
    tf_output in[2] = {{nodes[tt_rand_u64() % (uint64_t)k], 0},
                       {nodes[tt_rand_u64() % (uint64_t)k], 0}};
    /* loc:@ only to an unrequested, uncolocated node: no conflicts */
    const tf_node *with = tt_rand_u64() % 10 == 0 ? nodes[tt_rand_u64() % (uint64_t)k] : NULL;
    if (with != NULL && (tf_node_device(with)[0] || tf_node_attr(with, "_class"))) {
      with = NULL;
    }
    const char *r = with != NULL ? NULL : req[tt_rand_u64() % 7];
    nodes[k] = dnode(g, ops[tt_rand_u64() % 4], nm, in, 2, NULL, 0, r, with);
  }
  free(nodes);
  return g;
}

START_TEST(test_deterministic) {
  uint64_t seed = tt_seed() ^ 0x51ace;
  enum { N = 300 };
  tf_graph *g1 = random_graph(seed, N), *g2 = random_graph(seed, N);
  int *o1 = calloc(N, sizeof(int)), *o2 = calloc(N, sizeof(int)), *o3 = calloc(N, sizeof(int));
  tf_status st;
  place_ok(g1, cluster, NDEV, &worker_ps, o1);
  place_ok(g2, cluster, NDEV, &worker_ps, o2);
  place_ok(g1, cluster, NDEV, &worker_ps, o3);
  ck_assert_mem_eq(o1, o2, N * sizeof(int));
  ck_assert_mem_eq(o1, o3, N * sizeof(int));
  int used[NDEV] = {0};
  for (int i = 0; i < N; i++) {
    tf_node *v = tf_graph_node(g1, i);
    tf_devname want, have;
    ck_assert_int_eq(tf_devname_parse(tf_node_device(v), &want, &st), TF_OK);
    ck_assert_int_eq(tf_devname_parse(cluster[o1[i]].name, &have, &st), TF_OK);
    ck_assert_msg(tf_devname_matches(&want, &have), "%s on %s", tf_node_name(v),
                  cluster[o1[i]].name);
    /* no job requested anywhere in its group: the default job */
    if (!want.has_job) {
      ck_assert_msg(o1[i] >= 2, "%s on %s", tf_node_name(v), cluster[o1[i]].name);
    }
    const tf_attr_value *c = tf_node_attr(v, "_class");
    if (c != NULL) {
      tf_node *t = tf_graph_find(g1, c->u.strs[0] + 5);
      ck_assert_int_eq(o1[i], o1[tf_node_id(t)]);
    }
    used[o1[i]]++;
  }
  /* Tensors of 8x8 cost more to move than any node's work, so connected
   * nodes share a device where their requests allow: not every device is
   * used, but both jobs are (some nodes request each). */
  ck_assert_int_gt(used[0] + used[1], 0);
  ck_assert_int_gt(used[2] + used[3], 0);
  free(o1);
  free(o2);
  free(o3);
  tf_graph_free(g1);
  tf_graph_free(g2);
}
END_TEST

/* Imported out of order: import gives topological ids (producers first,
 * ties to the earlier def), so the placer's order (tf__graph_topo_order,
 * tested in core/graph/algorithm_test) is the identity. */
START_TEST(test_topo_order) {
  tf_graph *g = tf_graph_new();
  tf_tensor *t = tf_tensor_scalar_f32(1);
  tf_attr_kv ca[] = {{"value", tf_attr_tensor(t)}, {"dtype", tf_attr_type_v(TF_FLOAT32)}};
  const char *in_y[] = {"x", "x"}, *in_z[] = {"y"};
  tf_node_def defs[] = {
      {.name = "z", .op = "Neg", .n_inputs = 1, .inputs = in_z},
      {.name = "y", .op = "Add", .n_inputs = 2, .inputs = in_y},
      {.name = "x", .op = "Const", .n_attrs = 2, .attrs = ca},
      {.name = "w", .op = "Const", .n_attrs = 2, .attrs = ca},
  };
  tf_status st;
  ck_assert_msg(tf_graph_import(g, defs, 4, &st) == TF_OK, "%s", st.msg);
  tf_tensor_unref(t);
  /* defs z 0, y 1, x 2, w 3: x and w are ready, x (2) first; then y (1)
   * beats w (3), then z (0) does */
  const char *want[] = {"x", "y", "z", "w"};
  int order[4];
  ck_assert_int_eq(tf__graph_topo_order(g, order, &st), TF_OK);
  for (int i = 0; i < 4; i++) {
    ck_assert_str_eq(tf_node_name(tf_graph_node(g, i)), want[i]);
    ck_assert_int_eq(order[i], i);
  }
  int out[4];
  place_ok(g, cluster, NDEV, &worker_ps, out);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("placement");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_partial_requests);
  tcase_add_test(tc, test_variables_round_robin);
  tcase_add_test(tc, test_colocation);
  tcase_add_test(tc, test_conflicts);
  tcase_add_test(tc, test_no_device);
  tcase_add_test(tc, test_cost_model_moves_node);
  tcase_add_test(tc, test_small_work_one_task);
  tcase_add_test(tc, test_big_chains_spread);
  tcase_add_test(tc, test_pins_respected);
  tcase_add_test(tc, test_deterministic);
  tcase_add_test(tc, test_topo_order);
  tcase_add_test(tc, test_pinned_state);
  suite_add_tcase(s, tc);
  return s;
}
