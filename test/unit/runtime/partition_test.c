/* partition_test.c: tf_partition_graph on hand-placed graphs (node counts,
 * shared and per-device _Recv, control edges, _Arg/_Retval renumbering,
 * _Send/_Recv attrs, fresh names, split loops' control loops, ref edges
 * refused), and an
 * end-to-end run: a placed and partitioned graph with matmuls, a cond whose
 * deadness crosses devices and a loop fed from another device, executed by
 * one executor per device in its own thread over one rendezvous, must
 * fetch bitwise what a local session fetches from the whole graph. */
#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "lib/rendezvous/rendezvous_mgr.h"
#include "lib/runtime/partition.h"
#include "test/unit/core/exec/exec_testlib.h"
#include "tf/control_flow.h"
#include "tf/session.h"

#define TASK "/job:worker/replica:0/task:0"
#define D0 TASK "/device:CPU:0"
#define D1 TASK "/device:CPU:1"
#define D2 TASK "/device:CPU:2"

static const tf_place_device devs3[] = {{D0, "CPU"}, {D1, "CPU"}, {D2, "CPU"}};
static const uint64_t incs[] = {0x1111, 0xdeadbeefcafeULL, 0x42};

/* ---- helpers ------------------------------------------------------------------------ */

static tf_node *neg(tf_graph *g, const char *name, tf_node *x) {
  return tt_node(g, "Neg", name, (tf_output[]){{x, 0}}, 1, NULL, 0);
}

static tf_node *fconst(tf_graph *g, const char *name, float v) {
  return tt_const(g, name, tf_tensor_scalar_f32(v));
}

/* assign[] from "name=device" pairs; every node must be listed. */
static int *assign_of(const tf_graph *g, const char *const *names, const int *devs, int n) {
  int *a = calloc((size_t)tf_graph_num_nodes(g) + 1, sizeof *a);
  for (int i = 0; i < tf_graph_num_nodes(g); i++) {
    a[i] = -1;
  }
  for (int i = 0; i < n; i++) {
    tf_node *v = tf_graph_find(g, names[i]);
    ck_assert_msg(v != NULL, "no node %s", names[i]);
    a[tf_node_id(v)] = devs[i];
  }
  for (int i = 0; i < tf_graph_num_nodes(g); i++) {
    ck_assert_msg(a[i] >= 0, "node %s not assigned", tf_node_name(tf_graph_node(g, i)));
  }
  return a;
}

static tf_partition *partition_ok(const tf_graph *g, const int *assign, int *n) {
  tf_partition *p = NULL;
  tf_status st;
  tf_status_init(&st);
  ck_assert_msg(tf_partition_graph(g, assign, devs3, incs, 3, &p, n, &st) == TF_OK, "%s",
                st.msg);
  return p;
}

static int count_op(const tf_graph *g, const char *op) {
  int c = 0;
  for (int i = 0; i < tf_graph_num_nodes(g); i++) {
    c += strcmp(tf_node_op(tf_graph_node(g, i)), op) == 0;
  }
  return c;
}

static tf_node *find_op(const tf_graph *g, const char *op, int k) {
  for (int i = 0; i < tf_graph_num_nodes(g); i++) {
    tf_node *v = tf_graph_node(g, i);
    if (strcmp(tf_node_op(v), op) == 0 && k-- == 0) {
      return v;
    }
  }
  return NULL;
}

static const char *sattr(const tf_node *v, const char *name) {
  const char *s = NULL;
  tf_status st;
  ck_assert_msg(tf_node_attr_get_string(v, name, &s, &st) == TF_OK, "%s", st.msg);
  return s;
}

static int64_t iattr(const tf_node *v, const char *name) {
  int64_t x = 0;
  tf_status st;
  ck_assert_msg(tf_node_attr_get_int(v, name, &x, &st) == TF_OK, "%s", st.msg);
  return x;
}

/* Every node of every partition carries its partition's full device
 * name, and partitions come in device order. */
static void check_devices(const tf_partition *p, int n) {
  for (int k = 0; k < n; k++) {
    ck_assert(k == 0 || p[k].device > p[k - 1].device);
    for (int i = 0; i < tf_graph_num_nodes(p[k].g); i++) {
      ck_assert_str_eq(tf_node_device(tf_graph_node(p[k].g, i)), devs3[p[k].device].name);
    }
  }
}

/* ---- structure ---------------------------------------------------------------------- */

/* a (d0) -> b (d1) -> c (d0): d0 holds a, its _Send, b's _Recv and c;
 * d1 holds a's _Recv, b and its _Send. d2 gets nothing. */
START_TEST(test_counts) {
  tf_graph *g = tf_graph_new();
  neg(g, "c", neg(g, "b", fconst(g, "a", 1)));
  int *as = assign_of(g, (const char *[]){"a", "b", "c"}, (int[]){0, 1, 0}, 3);
  int n = 0;
  tf_partition *p = partition_ok(g, as, &n);
  ck_assert_int_eq(n, 2);
  ck_assert_int_eq(p[0].device, 0);
  ck_assert_int_eq(p[1].device, 1);
  ck_assert_int_eq(tf_graph_num_nodes(p[0].g), 4);
  ck_assert_int_eq(tf_graph_num_nodes(p[1].g), 3);
  ck_assert_int_eq(count_op(p[0].g, "_Send"), 1);
  ck_assert_int_eq(count_op(p[0].g, "_Recv"), 1);
  ck_assert_int_eq(count_op(p[1].g, "_Send"), 1);
  ck_assert_int_eq(count_op(p[1].g, "_Recv"), 1);
  tf_node *c = tf_graph_find(p[0].g, "c");
  ck_assert_str_eq(tf_node_name(tf_node_input(c, 0).node), "b/_recv_0_d0");
  tf_node *b = tf_graph_find(p[1].g, "b");
  ck_assert_str_eq(tf_node_op(tf_node_input(b, 0).node), "_Recv");
  ck_assert_int_eq(p[0].n_args + p[0].n_rets + p[1].n_args + p[1].n_rets, 0);
  check_devices(p, n);
  tf_partitions_free(p, n);
  free(as);
  tf_graph_free(g);
}
END_TEST

/* Two consumers of a:0 on d1 share one _Recv; a third on d2 gets its own,
 * so d0 sends twice. */
START_TEST(test_recv_sharing) {
  tf_graph *g = tf_graph_new();
  tf_node *a = fconst(g, "a", 1);
  neg(g, "b", a);
  neg(g, "c", a);
  tt_node(g, "Mul", "d", (tf_output[]){{a, 0}, {a, 0}}, 2, NULL, 0);
  neg(g, "e", a);
  int *as = assign_of(g, (const char *[]){"a", "b", "c", "d", "e"}, (int[]){0, 1, 1, 1, 2}, 5);
  int n = 0;
  tf_partition *p = partition_ok(g, as, &n);
  ck_assert_int_eq(n, 3);
  ck_assert_int_eq(count_op(p[0].g, "_Send"), 2);
  ck_assert_int_eq(count_op(p[1].g, "_Recv"), 1);
  ck_assert_int_eq(count_op(p[2].g, "_Recv"), 1);
  tf_node *r1 = find_op(p[1].g, "_Recv", 0), *r2 = find_op(p[2].g, "_Recv", 0);
  const char *cons[] = {"b", "c", "d"};
  for (int i = 0; i < 3; i++) {
    tf_node *v = tf_graph_find(p[1].g, cons[i]);
    for (int k = 0; k < tf_node_num_inputs(v); k++) {
      ck_assert_ptr_eq(tf_node_input(v, k).node, r1);
    }
  }
  ck_assert_ptr_eq(tf_node_input(tf_graph_find(p[2].g, "e"), 0).node, r2);
  ck_assert_str_eq(sattr(r1, "recv_device"), D1);
  ck_assert_str_eq(sattr(r2, "recv_device"), D2);
  ck_assert_str_eq(sattr(r1, "tensor_name"), "edge_a_0");
  ck_assert_str_eq(sattr(r2, "tensor_name"), "edge_a_0");
  check_devices(p, n);
  tf_partitions_free(p, n);
  free(as);
  tf_graph_free(g);
}
END_TEST

/* b (d1) and c (d2) wait for a (d0) by control edges only: d0 gets one
 * dummy Const after a and a _Send per device; each consumer waits on its
 * _Recv. A same-device control edge stays as it is. */
START_TEST(test_control_edges) {
  tf_graph *g = tf_graph_new();
  tf_node *a = fconst(g, "a", 1);
  const char *names[] = {"b", "c", "s"};
  for (int i = 0; i < 3; i++) {
    tf_tensor *t = tf_tensor_scalar_f32(2);
    tf_node_builder *bl = tf_node_begin(g, "Const", names[i]);
    tf_node_set_attr(bl, "value", tf_attr_tensor(t));
    tf_node_set_attr(bl, "dtype", tf_attr_type_v(TF_FLOAT32));
    tf_node_add_control_input(bl, a);
    tf_status st;
    ck_assert(tf_node_finish(bl, &st) != NULL);
    tf_tensor_unref(t);
  }
  int *as = assign_of(g, (const char *[]){"a", "b", "c", "s"}, (int[]){0, 1, 2, 0}, 4);
  int n = 0;
  tf_partition *p = partition_ok(g, as, &n);
  ck_assert_int_eq(n, 3);
  ck_assert_int_eq(tf_graph_num_nodes(p[0].g), 5); /* a, s, dummy, 2 sends */
  ck_assert_int_eq(count_op(p[0].g, "Const"), 3);
  tf_node *dummy = tf_graph_find(p[0].g, "a/_ctrl_const");
  ck_assert_ptr_nonnull(dummy);
  ck_assert_int_eq(tf_node_num_control_inputs(dummy), 1);
  ck_assert_str_eq(tf_node_name(tf_node_control_input(dummy, 0)), "a");
  ck_assert_int_eq(tf_node_num_control_inputs(tf_graph_find(p[0].g, "s")), 1);
  for (int k = 0; k < 2; k++) {
    tf_node *s = find_op(p[0].g, "_Send", k);
    ck_assert_ptr_eq(tf_node_input(s, 0).node, dummy);
    ck_assert_str_eq(sattr(s, "tensor_name"), "ctrl_a");
  }
  for (int d = 1; d < 3; d++) {
    tf_node *r = find_op(p[d].g, "_Recv", 0);
    ck_assert_str_eq(sattr(r, "tensor_name"), "ctrl_a");
    tf_node *v = tf_graph_find(p[d].g, names[d - 1]);
    ck_assert_int_eq(tf_node_num_control_inputs(v), 1);
    /* Through an Identity of the dummy value, so deadness carries over. */
    tf_node *id = tf_node_control_input(v, 0);
    ck_assert_str_eq(tf_node_op(id), "Identity");
    ck_assert_ptr_eq(tf_node_input(id, 0).node, r);
    ck_assert_int_eq(tf_graph_num_nodes(p[d].g), 3);
  }
  tf_partitions_free(p, n);
  free(as);
  tf_graph_free(g);
}
END_TEST

/* Feeds 0 (d0), 1 and 2 (d1); fetches 1 (d0), 0 and 2 (d1): each
 * partition numbers its own from 0 in global order and maps them back. */
START_TEST(test_arg_retval_renumbering) {
  tf_graph *g = tf_graph_new();
  tf_node *a2 = arg(g, "a2", TF_FLOAT32, 2);
  tf_node *a0 = arg(g, "a0", TF_FLOAT32, 0);
  tf_node *a1 = arg(g, "a1", TF_FLOAT32, 1);
  retval(g, "r2", o0(neg(g, "n2", a2)), 2);
  retval(g, "r1", o0(neg(g, "n0", a0)), 1);
  retval(g, "r0", o0(neg(g, "n1", a1)), 0);
  int *as = assign_of(g, (const char *[]){"a2", "a0", "a1", "r2", "r1", "r0", "n2", "n0", "n1"},
                      (int[]){1, 0, 1, 1, 0, 1, 1, 0, 1}, 9);
  int n = 0;
  tf_partition *p = partition_ok(g, as, &n);
  ck_assert_int_eq(n, 2);
  ck_assert_int_eq(p[0].n_args, 1);
  ck_assert_int_eq(p[0].arg_feed[0], 0);
  ck_assert_int_eq(p[0].n_rets, 1);
  ck_assert_int_eq(p[0].ret_fetch[0], 1);
  ck_assert_int_eq(p[1].n_args, 2);
  ck_assert_int_eq(p[1].arg_feed[0], 1);
  ck_assert_int_eq(p[1].arg_feed[1], 2);
  ck_assert_int_eq(p[1].n_rets, 2);
  ck_assert_int_eq(p[1].ret_fetch[0], 0);
  ck_assert_int_eq(p[1].ret_fetch[1], 2);
  ck_assert_int_eq(iattr(tf_graph_find(p[0].g, "a0"), "index"), 0);
  ck_assert_int_eq(iattr(tf_graph_find(p[0].g, "r1"), "index"), 0);
  ck_assert_int_eq(iattr(tf_graph_find(p[1].g, "a1"), "index"), 0);
  ck_assert_int_eq(iattr(tf_graph_find(p[1].g, "a2"), "index"), 1);
  ck_assert_int_eq(iattr(tf_graph_find(p[1].g, "r0"), "index"), 0);
  ck_assert_int_eq(iattr(tf_graph_find(p[1].g, "r2"), "index"), 1);
  /* the original graph is untouched */
  ck_assert_int_eq(iattr(tf_graph_find(g, "a2"), "index"), 2);
  tf_partitions_free(p, n);
  free(as);
  tf_graph_free(g);
}
END_TEST

/* Every _Send has exactly one _Recv on its recv_device with the same key
 * attrs and dtype; send_device is the sender's partition, the incarnation
 * is the sender's, tensor_name follows the scheme. Here through output 1
 * of a Switch (int32), and with a name that collides with a user node. */
START_TEST(test_send_recv_attrs) {
  tf_graph *g = tf_graph_new();
  tf_node *x = tt_const(g, "x", tf_tensor_scalar_i32(7));
  tf_node *pred = tt_const(g, "pred", tf_tensor_scalar_bool(true));
  tf_node *sw = tt_node(g, "Switch", "sw", (tf_output[]){{x, 0}, {pred, 0}}, 2, NULL, 0);
  tt_node(g, "Neg", "t", (tf_output[]){{sw, 1}}, 1, NULL, 0);
  tt_node(g, "Neg", "f", (tf_output[]){{sw, 0}}, 1, NULL, 0);
  tf_node *clash = tt_const(g, "sw/_recv_1_d1", tf_tensor_scalar_f32(0));
  neg(g, "y", clash);
  int *as = assign_of(g, (const char *[]){"x", "pred", "sw", "t", "f", "sw/_recv_1_d1", "y"},
                      (int[]){2, 2, 2, 1, 0, 0, 1}, 7);
  int n = 0;
  tf_partition *p = partition_ok(g, as, &n);
  ck_assert_int_eq(n, 3);
  int sends = 0;
  for (int k = 0; k < n; k++) {
    for (int s = 0; find_op(p[k].g, "_Send", s) != NULL; s++, sends++) {
      tf_node *snd = find_op(p[k].g, "_Send", s);
      const char *dst = sattr(snd, "recv_device");
      ck_assert_str_eq(sattr(snd, "send_device"), devs3[p[k].device].name);
      ck_assert_int_eq(iattr(snd, "send_device_incarnation"), (int64_t)incs[p[k].device]);
      bool ct = true;
      ck_assert_int_eq(tf_node_attr_get_bool(snd, "client_terminated", &ct, NULL), TF_OK);
      ck_assert(!ct);
      int found = 0;
      for (int j = 0; j < n; j++) {
        if (strcmp(devs3[p[j].device].name, dst) != 0) {
          continue;
        }
        for (int r = 0; find_op(p[j].g, "_Recv", r) != NULL; r++) {
          tf_node *rcv = find_op(p[j].g, "_Recv", r);
          if (strcmp(sattr(rcv, "tensor_name"), sattr(snd, "tensor_name")) == 0 &&
              strcmp(sattr(rcv, "send_device"), sattr(snd, "send_device")) == 0) {
            found++;
            ck_assert_str_eq(sattr(rcv, "recv_device"), dst);
            ck_assert_int_eq(iattr(rcv, "send_device_incarnation"),
                             iattr(snd, "send_device_incarnation"));
            tf_dtype a, b;
            ck_assert_int_eq(tf_node_attr_get_type(snd, "T", &a, NULL), TF_OK);
            ck_assert_int_eq(tf_node_attr_get_type(rcv, "tensor_type", &b, NULL), TF_OK);
            ck_assert_int_eq(a, b);
          }
        }
      }
      ck_assert_int_eq(found, 1);
    }
  }
  ck_assert_int_eq(sends, 3); /* sw:1 -> d1, sw:0 -> d0, clash -> d1 */
  tf_node *t = tf_graph_find(p[1].g, "t");
  tf_node *r = tf_node_input(t, 0).node;
  ck_assert_str_eq(tf_node_name(r), "sw/_recv_1_d1_1"); /* the plain name is taken */
  ck_assert_str_eq(sattr(r, "tensor_name"), "edge_sw_1");
  ck_assert_int_eq(tf_node_output_type(r, 0), TF_INT32);
  ck_assert_int_eq(iattr(r, "send_device_incarnation"), (int64_t)incs[2]);
  tf_partitions_free(p, n);
  free(as);
  tf_graph_free(g);
}
END_TEST

static tf_code loop_cond(tf_graph *g, const tf_output *v, int nv, const tf_output *inv, int ni,
                         tf_output *pred, void *arg, tf_status *st) {
  tf_node *lim = tt_const(g, "limit", tf_tensor_scalar_i32(3));
  *pred = o0(tt_node(g, "Less", "less", (tf_output[]){v[0], o0(lim)}, 2, NULL, 0));
  return TF_OK;
}

static tf_code loop_body(tf_graph *g, const tf_output *v, int nv, const tf_output *inv, int ni,
                         tf_output *next, void *arg, tf_status *st) {
  tf_node *one = tt_const(g, "one", tf_tensor_scalar_i32(1));
  next[0] = o0(tt_node(g, "Add", "inc", (tf_output[]){v[0], o0(one)}, 2, NULL, 0));
  tf_node *k = tt_const(g, "k", tf_tensor_scalar_f32(1.5f));
  next[1] = o0(tt_node(g, "Mul", "scale", (tf_output[]){v[1], o0(k)}, 2, NULL, 0));
  return TF_OK;
}

/* A loop over (i, v): i < 3; i += 1, v *= 1.5. */
static void build_loop(tf_graph *g, tf_output i0, tf_output v0, tf_output *out) {
  tf_status st;
  tf_output vars[2] = {i0, v0};
  ck_assert_msg(tf_while_loop(g, "while", vars, 2, NULL, 0, loop_cond, loop_body, NULL, 1, out,
                              &st) == TF_OK, "%s", st.msg);
}

static bool in_loop(const tf_node *v) { return strncmp(tf_node_name(v), "while/", 6) == 0; }

/* A loop wholly on d1 fed from d0 partitions (the edges into its Enters
 * are in the root frame) without control loops; moving its body's Mul to
 * d2 gives d1 and d2 one control loop each, and d2 the predicate by a
 * _Recv hanging off its control loop's Merge (partition_loop_test runs
 * such graphs). */
START_TEST(test_loop_edges) {
  tf_graph *g = tf_graph_new();
  tf_node *i0 = tt_const(g, "i0", tf_tensor_scalar_i32(0));
  tf_node *v0 = fconst(g, "v0", 2);
  tf_output out[2];
  build_loop(g, o0(i0), o0(v0), out);
  int nn = tf_graph_num_nodes(g);
  int *as = calloc((size_t)nn, sizeof *as);
  for (int i = 0; i < nn; i++) {
    as[i] = in_loop(tf_graph_node(g, i)) ? 1 : 0;
  }
  int n = 0;
  tf_partition *p = partition_ok(g, as, &n);
  ck_assert_int_eq(n, 2);
  ck_assert_int_eq(count_op(p[0].g, "_Send"), 2);
  ck_assert_int_eq(count_op(p[1].g, "_Recv"), 2);
  tf_partitions_free(p, n);
  tf_node *mul = tf_graph_find(g, "while/scale");
  ck_assert_ptr_nonnull(mul);
  as[tf_node_id(mul)] = 2;
  p = partition_ok(g, as, &n);
  ck_assert_int_eq(n, 3);
  for (int k = 1; k < 3; k++) {
    ck_assert_int_eq(count_op(p[k].g, "Merge"), k == 1 ? 3 : 1);
    ck_assert_int_eq(count_op(p[k].g, "NextIteration"), k == 1 ? 3 : 1);
  }
  const tf_node *r = NULL;
  for (int k = 0; (r = find_op(p[2].g, "_Recv", k)) != NULL; k++) {
    if (strstr(tf_node_name(r), "LoopCond") != NULL) {
      break;
    }
  }
  ck_assert_ptr_nonnull(r);
  ck_assert_int_eq(tf_node_num_control_inputs(r), 1);
  ck_assert_str_eq(tf_node_op(tf_node_control_input(r, 0)), "Merge");
  tf_partitions_free(p, n);
  free(as);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_bad_inputs) {
  tf_graph *g = tf_graph_new();
  tf_attr_kv va[] = {{"shape", tf_attr_shape(tf_shape_scalar())},
                     {"dtype", tf_attr_type_v(TF_FLOAT32)}};
  tf_node *v = tt_node(g, "VariableV2", "var", NULL, 0, va, 2);
  tf_node *c = fconst(g, "val", 1);
  tt_node(g, "Assign", "set", (tf_output[]){{v, 0}, {c, 0}}, 2, NULL, 0);
  int *as = assign_of(g, (const char *[]){"var", "val", "set"}, (int[]){0, 0, 1}, 3);
  tf_partition *p = NULL;
  int n = -1;
  tf_status st;
  ck_assert_int_eq(tf_partition_graph(g, as, devs3, incs, 3, &p, &n, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "ref") && strstr(st.msg, "'var:0'") && strstr(st.msg, "'set'"),
                "%s", st.msg);
  as[2] = 3;
  ck_assert_int_eq(tf_partition_graph(g, as, devs3, incs, 3, &p, &n, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "'set'") && strstr(st.msg, "device 3"), "%s", st.msg);
  ck_assert_int_eq(tf_partition_graph(g, NULL, devs3, incs, 3, &p, &n, &st),
                   TF_INVALID_ARGUMENT);
  /* all on one device: one partition, no sends */
  as[2] = 2;
  as[0] = as[1] = 2;
  p = partition_ok(g, as, &n);
  ck_assert_int_eq(n, 1);
  ck_assert_int_eq(p[0].device, 2);
  ck_assert_int_eq(tf_graph_num_nodes(p[0].g), 3);
  tf_partitions_free(p, n);
  tf_partitions_free(NULL, 0);
  free(as);
  tf_graph_free(g);
}
END_TEST

/* ---- end to end ----------------------------------------------------------------------- */

enum { NFETCH = 7 };

/* op on in[0..n) requested on device dev (NULL: none); control input ctl. */
static tf_node *on(tf_graph *g, const char *op, const char *name, const tf_output *in, int n,
                   const char *dev, tf_node *ctl) {
  tf_node_builder *b = tf_node_begin(g, op, name);
  for (int i = 0; i < n; i++) {
    tf_node_add_input(b, in[i]);
  }
  if (dev != NULL) {
    tf_node_set_device(b, dev);
  }
  if (ctl != NULL) {
    tf_node_add_control_input(b, ctl);
  }
  tf_status st;
  tf_node *v = tf_node_finish(b, &st);
  ck_assert_msg(v != NULL, "%s: %s", name, st.msg);
  return v;
}

static tf_code branch_true(tf_graph *g, const tf_output *in, int n_in, tf_output *out,
                           int n_out, void *arg, tf_status *st) {
  out[0] = o0(on(g, "Mul", "prod", in, 2, D1, NULL));
  return TF_OK;
}

static tf_code branch_false(tf_graph *g, const tf_output *in, int n_in, tf_output *out,
                            int n_out, void *arg, tf_status *st) {
  out[0] = o0(on(g, "Sub", "diff", in, 2, D2, NULL));
  return TF_OK;
}

/* m1 = x w1 (d0), m2 = m1 w2 (d1), s = m1 + m2 (d2), pred = sum(s) > 0
 * (sum on d1, compare on d0), c = pred ? m1 * s (d1) : m1 - s (d2),
 * r = c + m2 (d2), tick = s (d0) after m2, and a loop scaling m1 three
 * times. fetch[] gets m1, m2, s, c, r, tick and the loop's value. x is an
 * _Arg when partitioned (with a _Retval per fetch), else a Placeholder. */
static void build_e2e(tf_graph *g, bool partitioned, tf_output *fetch) {
  tt_rng_reseed(tt_seed() ^ 0xe2e);
  tf_node *x;
  if (partitioned) {
    tf_attr_kv a[] = {{"T", tf_attr_type_v(TF_FLOAT32)}, {"index", tf_attr_int(0)},
                      {"shape", tf_attr_shape(tf_shape_of(2, 4, 4))}};
    x = tt_node(g, "_Arg", "x", NULL, 0, a, 3);
  } else {
    x = tt_placeholder(g, "x", TF_FLOAT32, tf_shape_of(2, 4, 4));
  }
  tf_node *w1 = tt_const(g, "w1", tt_rand(TF_FLOAT32, tf_shape_of(2, 4, 4), -1, 1));
  tf_node *w2 = tt_const(g, "w2", tt_rand(TF_FLOAT32, tf_shape_of(2, 4, 4), -1, 1));
  tf_node *m1 = on(g, "MatMul", "m1", (tf_output[]){o0(x), o0(w1)}, 2, D0, NULL);
  tf_node *m2 = on(g, "MatMul", "m2", (tf_output[]){o0(m1), o0(w2)}, 2, D1, NULL);
  tf_node *s = on(g, "Add", "s", (tf_output[]){o0(m1), o0(m2)}, 2, D2, NULL);
  tf_node *axes = tt_const(g, "axes", tf_tensor_vec_i32(2, (int32_t[]){0, 1}));
  tf_node *red = on(g, "Sum", "red", (tf_output[]){o0(s), o0(axes)}, 2, D1, NULL);
  tf_node *zero = fconst(g, "zero", 0);
  tf_node *pred = on(g, "Greater", "pred", (tf_output[]){o0(red), o0(zero)}, 2, D0, NULL);
  tf_output c;
  tf_status st;
  ck_assert_msg(tf_cond(g, "cond", o0(pred), (tf_output[]){o0(m1), o0(s)}, 2, branch_true,
                        branch_false, NULL, &c, 1, &st) == TF_OK, "%s", st.msg);
  tf_node *r = on(g, "Add", "r", (tf_output[]){c, o0(m2)}, 2, D2, NULL);
  tf_node *tick = on(g, "Identity", "tick", (tf_output[]){o0(s)}, 1, D0, m2);
  tf_node *i0 = tt_const(g, "i0", tf_tensor_scalar_i32(0));
  tf_output lo[2];
  build_loop(g, o0(i0), o0(m1), lo);
  tf_output f[NFETCH] = {o0(m1), o0(m2), o0(s), c, o0(r), o0(tick), lo[1]};
  for (int k = 0; k < NFETCH; k++) {
    fetch[k] = f[k];
    if (partitioned) {
      char nm[16];
      snprintf(nm, sizeof nm, "ret%d", k);
      retval(g, nm, f[k], k);
    }
  }
}

/* Places g over devs3 (cond Merges forced to d0, the loop to d2) and
 * checks that deadness has to cross a device into the Merge. */
static int *place_e2e(const tf_graph *g) {
  int nn = tf_graph_num_nodes(g);
  int *as = calloc((size_t)nn, sizeof *as);
  tf_status st;
  tf_place_opts o = {0};
  ck_assert_msg(tf_place(g, devs3, 3, &o, as, &st) == TF_OK, "%s", st.msg);
  int crossing = 0;
  for (int i = 0; i < nn; i++) {
    tf_node *v = tf_graph_node(g, i);
    if (strcmp(tf_node_op(v), "Merge") == 0 && strncmp(tf_node_name(v), "cond/", 5) == 0) {
      as[i] = 0;
    }
    if (in_loop(v)) {
      as[i] = 2;
    }
  }
  for (int i = 0; i < nn; i++) {
    tf_node *v = tf_graph_node(g, i);
    if (strcmp(tf_node_op(v), "Merge") == 0 && !in_loop(v)) {
      for (int k = 0; k < tf_node_num_inputs(v); k++) {
        crossing += as[tf_node_id(tf_node_input(v, k).node)] != 0;
      }
    }
  }
  ck_assert_int_gt(crossing, 0);
  ck_assert_int_eq(as[tf_node_id(tf_graph_find(g, "m1"))], 0);
  ck_assert_int_eq(as[tf_node_id(tf_graph_find(g, "cond/prod"))], 1);
  ck_assert_int_eq(as[tf_node_id(tf_graph_find(g, "cond/diff"))], 2);
  return as;
}

/* One partition's step, run in its own thread. */
typedef struct prun {
  tf_executor *e;
  tf_rdv_mgr *mgr;
  tf_step_ctx ctx;
  tf_cancel cancel;
  tf_tensor *args[4];
  tf_tensor *rets[NFETCH];
  tf_status st;
} prun;

static void *run_partition(void *arg) {
  prun *r = arg;
  tf_executor_run(r->e, &r->ctx, NULL, tf__now_ns() + 10LL * 1000000000, &r->st);
  if (r->st.code != TF_OK) {
    tf_rdv_mgr_abort(r->mgr, r->ctx.step_id, &r->st); /* the others stop waiting */
  }
  return NULL;
}

/* Runs step step_id of the partitions with x fed; out[k] gets fetch k. */
static void run_partitions(tf_partition *p, int n, tf_executor **ex, tf_rdv_mgr *mgr,
                           tf_resource_mgr *res, uint64_t step_id, tf_tensor *x,
                           tf_tensor **out) {
  tf_status st;
  tf_rendezvous *rdv = tf_rdv_mgr_step(mgr, step_id, &st);
  ck_assert_msg(rdv != NULL, "%s", st.msg);
  prun *runs = calloc((size_t)n, sizeof *runs);
  pthread_t th[3];
  for (int k = 0; k < n; k++) {
    prun *r = &runs[k];
    r->e = ex[k];
    r->mgr = mgr;
    tf_cancel_init(&r->cancel);
    tf_status_init(&r->st);
    ck_assert_int_le(p[k].n_args, 1);
    ck_assert_int_le(p[k].n_rets, NFETCH);
    if (p[k].n_args == 1) {
      r->args[0] = x; /* feed 0 */
    }
    r->ctx = (tf_step_ctx){.step_id = step_id, .resources = res, .cancel = &r->cancel,
                           .args = r->args, .n_args = p[k].n_args, .retvals = r->rets,
                           .n_retvals = p[k].n_rets, .rendezvous = rdv};
    ck_assert_int_eq(pthread_create(&th[k], NULL, run_partition, r), 0);
  }
  for (int k = 0; k < n; k++) {
    pthread_join(th[k], NULL);
  }
  for (int k = 0; k < n; k++) {
    ck_assert_msg(runs[k].st.code == TF_OK, "partition %d: %s", k, runs[k].st.msg);
    for (int i = 0; i < p[k].n_rets; i++) {
      out[p[k].ret_fetch[i]] = runs[k].rets[i];
    }
    tf_cancel_fini(&runs[k].cancel);
  }
  free(runs);
  tf_rdv_step_unref(rdv);
  tf_rdv_mgr_cleanup(mgr, step_id);
}

static void assert_bitwise(const tf_tensor *a, const tf_tensor *b, const char *what) {
  ck_assert_msg(a != NULL && b != NULL, "%s: missing", what);
  ck_assert_int_eq(a->dtype, b->dtype);
  ck_assert_msg(tf_shape_equal(&a->shape, &b->shape), "%s: shapes differ", what);
  ck_assert_msg(memcmp(a->data, b->data, a->nbytes) == 0, "%s: values differ", what);
}

/* Which branch c took: 1 for m1 * s, 0 for m1 - s (each checked exactly
 * against a plain recomputation), -1 for neither. */
static int branch_taken(const tf_tensor *m1, const tf_tensor *s, const tf_tensor *c) {
  const float *a = m1->data, *b = s->data, *y = c->data;
  bool mul = true, sub = true;
  for (int64_t i = 0; i < c->n; i++) {
    float pm = a[i] * b[i], ps = a[i] - b[i];
    mul = mul && memcmp(&pm, &y[i], sizeof pm) == 0;
    sub = sub && memcmp(&ps, &y[i], sizeof ps) == 0;
  }
  return mul ? 1 : sub ? 0 : -1;
}

START_TEST(test_end_to_end) {
  tf_graph *g = tf_graph_new(), *ref = tf_graph_new();
  tf_output fetch[NFETCH], rfetch[NFETCH];
  build_e2e(g, true, fetch);
  build_e2e(ref, false, rfetch);
  int *as = place_e2e(g);
  int n = 0;
  tf_partition *p = partition_ok(g, as, &n);
  ck_assert_int_eq(n, 3);
  tf_device dev[3];
  tf_executor *ex[3];
  for (int k = 0; k < n; k++) {
    dev[k] = *tf_cpu_device();
    dev[k].name = devs3[p[k].device].name;
    tf_executor_opts eo = {.device = &dev[k]};
    tf_status st;
    ck_assert_msg(tf_executor_new(p[k].g, &eo, &ex[k], &st) == TF_OK, "%s", st.msg);
  }
  tf_status st;
  tf_session *sess = tf_session_new(ref, NULL, &st);
  ck_assert_msg(sess != NULL, "%s", st.msg);
  char names[NFETCH][160];
  const char *fnames[NFETCH];
  for (int k = 0; k < NFETCH; k++) {
    snprintf(names[k], sizeof names[k], "%s:%d", tf_node_name(rfetch[k].node), rfetch[k].index);
    fnames[k] = names[k];
  }
  tf_rdv_mgr *mgr = tf_rdv_mgr_new(TASK, 60000, NULL, NULL);
  tf_resource_mgr *res = tf_resource_mgr_new();
  tf_tensor *x = tt_rand(TF_FLOAT32, tf_shape_of(2, 4, 4), -1, 1);
  int taken[2];
  for (int step = 0; step < 2; step++) {
    if (step == 1) { /* -x flips the sign of every product and so pred */
      float *xv = x->data;
      for (int i = 0; i < 16; i++) {
        xv[i] = -xv[i];
      }
    }
    tf_tensor *want[NFETCH] = {0}, *got[NFETCH] = {0};
    const char *feed = "x";
    tf_run_options ro = {.timeout_ms = 10000};
    ck_assert_msg(tf_session_run(sess, &ro, &feed, &x, 1, fnames, want, NFETCH, NULL, 0, NULL,
                                 &st) == TF_OK, "%s", st.msg);
    run_partitions(p, n, ex, mgr, res, (uint64_t)step + 1, x, got);
    for (int k = 0; k < NFETCH; k++) {
      assert_bitwise(got[k], want[k], fnames[k]);
    }
    taken[step] = branch_taken(want[0], want[2], want[3]);
    ck_assert_int_ge(taken[step], 0);
    tt_free(want, NFETCH);
    tt_free(got, NFETCH);
  }
  ck_assert_int_ne(taken[0], taken[1]); /* both branches crossed devices dead */
  ck_assert_int_eq(tf_rdv_mgr_live_steps(mgr), 0);
  tf_tensor_unref(x);
  tf_rdv_mgr_free(mgr);
  tf_resource_mgr_free(res);
  tf_session_free(sess);
  for (int k = 0; k < n; k++) {
    tf_executor_free(ex[k]);
  }
  tf_partitions_free(p, n);
  free(as);
  tf_graph_free(g);
  tf_graph_free(ref);
}
END_TEST

/* The distributed-training case: a variable on d1 read (through its ref
 * output, by value) by a MatMul on d0 after an init step assigned it; the
 * same two steps in a local session give the same bits. */
static void build_var(tf_graph *g, bool with_init, bool with_read, bool partitioned) {
  tt_rng_reseed(tt_seed() ^ 0x7a7);
  tf_attr_kv va[] = {{"shape", tf_attr_shape(tf_shape_of(2, 3, 3))},
                     {"dtype", tf_attr_type_v(TF_FLOAT32)}};
  tf_node *v = tt_node(g, "VariableV2", "v", NULL, 0, va, 2);
  tf_node *init = tt_const(g, "init", tt_rand(TF_FLOAT32, tf_shape_of(2, 3, 3), -1, 1));
  tf_node *w = tt_const(g, "w", tt_rand(TF_FLOAT32, tf_shape_of(2, 3, 3), -1, 1));
  if (with_init) {
    on(g, "Assign", "assign", (tf_output[]){o0(v), o0(init)}, 2, D1, NULL);
  }
  if (with_read) {
    tf_node *y = on(g, "MatMul", "y", (tf_output[]){o0(v), o0(w)}, 2, D0, NULL);
    if (partitioned) {
      retval(g, "ret0", o0(y), 0);
    }
  }
}

START_TEST(test_variable_read) {
  tf_graph *ref = tf_graph_new();
  build_var(ref, true, true, false);
  tf_status st;
  tf_session *sess = tf_session_new(ref, NULL, &st);
  ck_assert_msg(sess != NULL, "%s", st.msg);
  const char *tgt = "assign", *fetch = "y:0";
  ck_assert_msg(tf_session_run(sess, NULL, NULL, NULL, 0, NULL, NULL, 0, &tgt, 1, NULL, &st) ==
                TF_OK, "%s", st.msg);
  tf_tensor *want = NULL;
  ck_assert_msg(tf_session_run(sess, NULL, NULL, NULL, 0, &fetch, &want, 1, NULL, 0, NULL, &st) ==
                TF_OK, "%s", st.msg);
  tf_rdv_mgr *mgr = tf_rdv_mgr_new(TASK, 60000, NULL, NULL);
  tf_resource_mgr *res = tf_resource_mgr_new();
  tf_tensor *got[NFETCH] = {0};
  for (int phase = 0; phase < 2; phase++) {
    tf_graph *g = tf_graph_new();
    build_var(g, phase == 0, phase == 1, true);
    int *as = calloc((size_t)tf_graph_num_nodes(g), sizeof *as);
    ck_assert_msg(tf_place(g, devs3, 3, NULL, as, &st) == TF_OK, "%s", st.msg);
    if (phase == 0) {
      ck_assert_int_eq(as[tf_node_id(tf_graph_find(g, "v"))], 1); /* with assign */
    } else {
      as[tf_node_id(tf_graph_find(g, "v"))] = 1; /* where init put it */
      ck_assert_int_eq(as[tf_node_id(tf_graph_find(g, "y"))], 0);
    }
    int n = 0;
    tf_partition *p = partition_ok(g, as, &n);
    tf_device dev[3];
    tf_executor *ex[3];
    for (int k = 0; k < n; k++) {
      dev[k] = *tf_cpu_device();
      dev[k].name = devs3[p[k].device].name;
      tf_executor_opts eo = {.device = &dev[k]};
      ck_assert_msg(tf_executor_new(p[k].g, &eo, &ex[k], &st) == TF_OK, "%s", st.msg);
    }
    run_partitions(p, n, ex, mgr, res, (uint64_t)phase + 1, NULL, got);
    for (int k = 0; k < n; k++) {
      tf_executor_free(ex[k]);
    }
    ck_assert_int_ge(n, 2);
    tf_partitions_free(p, n);
    free(as);
    tf_graph_free(g);
  }
  assert_bitwise(got[0], want, "y");
  tt_free(got, NFETCH);
  tf_tensor_unref(want);
  tf_rdv_mgr_free(mgr);
  tf_resource_mgr_free(res);
  tf_session_free(sess);
  tf_graph_free(ref);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("partition");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, test_counts);
  tcase_add_test(tc, test_recv_sharing);
  tcase_add_test(tc, test_control_edges);
  tcase_add_test(tc, test_arg_retval_renumbering);
  tcase_add_test(tc, test_send_recv_attrs);
  tcase_add_test(tc, test_loop_edges);
  tcase_add_test(tc, test_bad_inputs);
  tcase_add_test(tc, test_end_to_end);
  tcase_add_test(tc, test_variable_read);
  suite_add_tcase(s, tc);
  return s;
}
