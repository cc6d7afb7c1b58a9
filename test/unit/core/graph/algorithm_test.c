/* algorithm_test.c: the shared graph algorithms (lib/core/graph/algorithm.h)
 * other than marks (graph_test.c).
 *
 * Topological order: the tie rule (lowest ready id first) on a worked
 * example, the identity for ids already in order, independence from the
 * order of the edge list, and seeded random DAGs against a quadratic
 * reference that applies the rule literally; cycles report an id that is
 * on a cycle (not merely after one, even when that one has a lower id)
 * and leave the prefix the reference places. On graphs: loops built by
 * tf_while_loop order as their ids (NextIteration back edges ignored), a
 * control edge from a later node reorders, a cycle without NextIteration
 * names a node on it.
 * Frames: nested tf_while_loops (every node's frame and output frame from
 * its name and op), inference in topological rather than id order, and
 * the errors (Exit in the root frame, a frame entered from two frames). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/graph/algorithm.h"
#include "lib/core/graph/graph_impl.h"
#include "lib/core/base/util.h"
#include "test/unit/testutil.h"

#define ASSERT_HAS(msg, sub)                                                   \
  ck_assert_msg(strstr((msg), (sub)) != NULL, "'%s' lacks '%s'", (msg), (sub))

static tf_status st;

/* ---- references ------------------------------------------------------------ */

/* The tie rule applied literally: repeatedly place the lowest id whose
 * sources are all placed. Returns how many ids it placed. */
static int ref_order(int n, const tf__edge *e, int ne, int *order) {
  bool *placed = calloc((size_t)n + 1, 1);
  int k = 0;
  for (; k < n; k++) {
    int pick = -1;
    for (int v = 0; v < n && pick < 0; v++) {
      bool ready = !placed[v];
      for (int j = 0; j < ne && ready; j++) {
        ready = e[j].dst != v || placed[e[j].src];
      }
      pick = ready ? v : -1;
    }
    if (pick < 0) {
      break;
    }
    placed[pick] = true;
    order[k] = pick;
  }
  free(placed);
  return k;
}

/* Whether a path of one or more edges leads from u back to u. */
static bool on_cycle(int n, const tf__edge *e, int ne, int u) {
  bool *seen = calloc((size_t)n + 1, 1);
  int *stack = calloc((size_t)n + 1, sizeof *stack), top = 0;
  bool found = false;
  stack[top++] = u;
  while (top > 0 && !found) {
    int v = stack[--top];
    for (int j = 0; j < ne; j++) {
      if (e[j].src != v) {
        continue;
      }
      found = found || e[j].dst == u;
      if (!seen[e[j].dst]) {
        seen[e[j].dst] = true;
        stack[top++] = e[j].dst;
      }
    }
  }
  free(seen);
  free(stack);
  return found;
}

static void shuffle_edges(tf__edge *e, int ne) {
  for (int i = ne - 1; i > 0; i--) {
    int j = (int)(tt_rand_u64() % (uint64_t)(i + 1));
    tf__edge t = e[i];
    e[i] = e[j];
    e[j] = t;
  }
}

/* ---- tf__topo_order ---------------------------------------------------------- */

START_TEST(test_topo_ties) {
  /* 3 -> {0, 1}, {0, 4, 5} -> 2: ready at first 3, 4, 5; placing 3 readies
   * 0 and 1, which beat 4; 2 waits for 5. */
  tf__edge e[] = {{3, 1}, {3, 0}, {5, 2}, {4, 2}, {0, 2}};
  int order[6];
  ck_assert_int_eq(tf__topo_order(6, e, 5, order), -1);
  const int want[] = {3, 0, 1, 4, 5, 2};
  ck_assert_mem_eq(order, want, sizeof want);
  /* the same set of edges listed in any order, with a duplicate */
  tf__edge e2[] = {{0, 2}, {4, 2}, {3, 0}, {5, 2}, {3, 1}, {3, 0}};
  int order2[6];
  ck_assert_int_eq(tf__topo_order(6, e2, 6, order2), -1);
  ck_assert_mem_eq(order2, want, sizeof want);
  /* ids already topological (a diamond and a tail) come back unchanged */
  tf__edge d[] = {{0, 1}, {0, 2}, {1, 3}, {2, 3}, {3, 4}};
  int od[5];
  ck_assert_int_eq(tf__topo_order(5, d, 5, od), -1);
  for (int i = 0; i < 5; i++) {
    ck_assert_int_eq(od[i], i);
  }
  /* no edges: the identity; no ids: nothing */
  ck_assert_int_eq(tf__topo_order(3, NULL, 0, od), -1);
  ck_assert(od[0] == 0 && od[1] == 1 && od[2] == 2);
  ck_assert_int_eq(tf__topo_order(0, NULL, 0, NULL), -1);
}
END_TEST

START_TEST(test_topo_random_dags) {
  tt_rng_reseed(tt_seed() ^ 0x70b0);
  enum { MAXN = 40, MAXE = MAXN * MAXN };
  static tf__edge e[MAXE];
  for (int trial = 0; trial < 300; trial++) {
    int n = 1 + (int)(tt_rand_u64() % MAXN), perm[MAXN], ne = 0;
    double p = tt_rand_uniform(0.0, 0.3);
    for (int i = 0; i < n; i++) {
      perm[i] = i;
    }
    for (int i = n - 1; i > 0; i--) { /* a hidden order the edges follow */
      int j = (int)(tt_rand_u64() % (uint64_t)(i + 1));
      int t = perm[i];
      perm[i] = perm[j];
      perm[j] = t;
    }
    for (int i = 0; i < n; i++) {
      for (int j = i + 1; j < n; j++) {
        if (tt_rand_uniform(0, 1) < p) {
          e[ne++] = (tf__edge){perm[i], perm[j]};
        }
      }
    }
    shuffle_edges(e, ne);
    int got[MAXN], want[MAXN], pos[MAXN];
    ck_assert_int_eq(tf__topo_order(n, e, ne, got), -1);
    ck_assert_int_eq(ref_order(n, e, ne, want), n);
    ck_assert_msg(memcmp(got, want, (size_t)n * sizeof *got) == 0,
                  "trial %d (seed %llu): order differs from the reference",
                  trial, (unsigned long long)tt_seed());
    for (int i = 0; i < n; i++) {
      pos[got[i]] = i;
    }
    for (int j = 0; j < ne; j++) {
      ck_assert_int_lt(pos[e[j].src], pos[e[j].dst]);
    }
  }
}
END_TEST

START_TEST(test_topo_cycles) {
  int order[8];
  /* 5 <-> 6 and 0 after 6: 0 is the lowest unplaced id but not on the
   * cycle; 5 is its lowest id */
  tf__edge e[] = {{5, 6}, {6, 5}, {6, 0}, {1, 2}, {2, 3}};
  ck_assert_int_eq(tf__topo_order(7, e, 5, order), 5);
  const int prefix[] = {1, 2, 3, 4};
  ck_assert_mem_eq(order, prefix, sizeof prefix);
  /* a self-loop */
  tf__edge s[] = {{0, 1}, {2, 2}};
  ck_assert_int_eq(tf__topo_order(3, s, 2, order), 2);
  /* a long cycle reached through a chain: 0 -> 1 -> 7 -> 3 -> 6 -> 7 */
  tf__edge c[] = {{0, 1}, {1, 7}, {7, 3}, {3, 6}, {6, 7}};
  ck_assert_int_eq(tf__topo_order(8, c, 5, order), 3);
  /* random graphs with back edges: the id is on a cycle and the prefix is
   * what the reference places */
  tt_rng_reseed(tt_seed() ^ 0xc7c1e);
  enum { MAXN = 30, MAXE = MAXN * MAXN };
  static tf__edge r[MAXE];
  for (int trial = 0; trial < 300; trial++) {
    int n = 2 + (int)(tt_rand_u64() % (MAXN - 1)), ne = 0;
    for (int k = (int)(tt_rand_u64() % (uint64_t)(2 * n)); k >= 0; k--) {
      r[ne++] = (tf__edge){(int)(tt_rand_u64() % (uint64_t)n),
                           (int)(tt_rand_u64() % (uint64_t)n)};
    }
    int got[MAXN], want[MAXN];
    int bad = tf__topo_order(n, r, ne, got);
    int placed = ref_order(n, r, ne, want);
    if (placed == n) {
      ck_assert_int_eq(bad, -1);
      ck_assert_mem_eq(got, want, (size_t)n * sizeof *got);
      continue;
    }
    ck_assert_msg(bad >= 0 && on_cycle(n, r, ne, bad), "trial %d (seed %llu): "
                  "id %d is not on a cycle", trial, (unsigned long long)tt_seed(), bad);
    ck_assert_mem_eq(got, want, (size_t)placed * sizeof *got);
  }
}
END_TEST

/* ---- on graphs ---------------------------------------------------------------- */

static tf_node *nd(tf_graph *g, const char *op, const char *name, const tf_output *in,
                   int n_in) {
  return tt_node(g, op, name, in, n_in, NULL, 0);
}

static tf_output o0(tf_node *n) { return (tf_output){n, 0}; }

static tf_output i32c(tf_graph *g, int32_t v) {
  return o0(tt_const(g, NULL, tf_tensor_scalar_i32(v)));
}

/* Loop callbacks: vars[0] < invariants[0] (or < 3 without one). */
static tf_code lt_cond(tf_graph *g, const tf_output *v, int nv, const tf_output *inv,
                       int ni, tf_output *pred, void *arg, tf_status *s) {
  tf_output lim = ni > 0 ? inv[0] : i32c(g, 3);
  *pred = o0(nd(g, "Less", NULL, (tf_output[]){v[0], lim}, 2));
  return TF_OK;
}

static tf_code inc_body(tf_graph *g, const tf_output *v, int nv, const tf_output *inv,
                        int ni, tf_output *next, void *arg, tf_status *s) {
  next[0] = o0(nd(g, "Add", NULL, (tf_output[]){v[0], i32c(g, 1)}, 2));
  return TF_OK;
}

/* The outer body: an inner loop counting vars[0] up to 3 (an invariant
 * from the outer frame), then + 1. */
static tf_code outer_body(tf_graph *g, const tf_output *v, int nv, const tf_output *inv,
                          int ni, tf_output *next, void *arg, tf_status *s) {
  tf_output lim = i32c(g, 3), j;
  TF_TRY(tf_while_loop(g, "inner", v, 1, &lim, 1, lt_cond, inc_body, NULL, 1, &j, s));
  next[0] = o0(nd(g, "Add", NULL, (tf_output[]){j, i32c(g, 1)}, 2));
  return TF_OK;
}

/* x, then outer(inner) loops, then y = Identity of the result. */
static tf_graph *nested_loops(void) {
  tf_graph *g = tf_graph_new();
  tf_output x = i32c(g, 0), out;
  ck_assert_int_eq(tf_while_loop(g, "outer", &x, 1, NULL, 0, lt_cond, outer_body, NULL, 1,
                                 &out, &st), TF_OK);
  nd(g, "Identity", "y", &out, 1);
  return g;
}

START_TEST(test_graph_order) {
  tf_graph *g = nested_loops();
  int n = tf_graph_num_nodes(g);
  int *order = calloc((size_t)n, sizeof *order);
  ck_assert_int_eq(tf__graph_topo_order(g, order, &st), TF_OK);
  for (int i = 0; i < n; i++) {
    ck_assert_int_eq(order[i], i); /* builders give topological ids */
  }
  free(order);
  tf_graph_free(g);
  /* a control edge from a later node puts it first */
  g = tf_graph_new();
  tf_node *a = nd(g, "NoOp", "a", NULL, 0);
  tf_node *b = nd(g, "NoOp", "b", NULL, 0);
  tf_node *c = nd(g, "NoOp", "c", NULL, 0);
  tf__node_add_control(a, c);
  int o3[3];
  ck_assert_int_eq(tf__graph_topo_order(g, o3, &st), TF_OK);
  ck_assert(o3[0] == 1 && o3[1] == 2 && o3[2] == 0);
  /* a cycle b -> d -> b behind x (x has the lowest id but is only after
   * the cycle): named by a node on it */
  tf_node *d = nd(g, "NoOp", "d", NULL, 0);
  tf__node_add_control(d, b);
  tf__node_add_control(b, d);
  tf__node_add_control(a, d);
  ck_assert_int_eq(tf__graph_topo_order(g, NULL, &st), TF_INVALID_ARGUMENT);
  ASSERT_HAS(st.msg, "graph has a cycle through node 'b' (NoOp) that does not "
                     "pass through a NextIteration node");
  ck_assert_int_eq(tf_graph_validate(g, &st), TF_INVALID_ARGUMENT);
  ASSERT_HAS(st.msg, "node 'b' (NoOp)");
  tf_graph_free(g);
}
END_TEST

/* ---- frames ---------------------------------------------------------------------- */

static int frame_named(const tf__frames *f, const char *name) {
  for (int i = 0; i < f->n_frames; i++) {
    if (strcmp(f->frames[i].name, name) == 0) {
      return i;
    }
  }
  return -1;
}

static bool starts(const char *s, const char *prefix) {
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

START_TEST(test_frames_nested) {
  tf_graph *g = nested_loops();
  tf__frames f;
  ck_assert_msg(tf__graph_frames(g, &f, &st) == TF_OK, "%s", st.msg);
  ck_assert_int_eq(f.n_frames, 3);
  int outer = frame_named(&f, "outer/while_context");
  int inner = frame_named(&f, "outer/inner/while_context");
  ck_assert(outer == 1 && inner == 2); /* parents first */
  ck_assert_str_eq(f.frames[0].name, "");
  ck_assert_int_eq(f.frames[0].parent, -1);
  ck_assert_ptr_null(f.frames[0].enter);
  ck_assert_int_eq(f.frames[outer].parent, 0);
  ck_assert_int_eq(f.frames[inner].parent, outer);
  ck_assert_str_eq(tf_node_op(f.frames[inner].enter), "Enter");
  ck_assert(starts(tf_node_name(f.frames[inner].enter), "outer/inner/"));
  /* A node runs in the loop whose scope holds it, except the Enters, which
   * run in the enclosing frame; outputs move in at an Enter, out at an Exit. */
  int n_enter = 0, n_exit = 0;
  for (int i = 0; i < tf_graph_num_nodes(g); i++) {
    const tf_node *v = tf_graph_node(g, i);
    const char *name = tf_node_name(v), *op = tf_node_op(v);
    int scope = starts(name, "outer/inner/") ? inner : starts(name, "outer/") ? outer : 0;
    int parent = scope > 0 ? f.frames[scope].parent : -1;
    bool is_enter = strcmp(op, "Enter") == 0, is_exit = strcmp(op, "Exit") == 0;
    n_enter += is_enter;
    n_exit += is_exit;
    int run = is_enter ? parent : scope;
    int out = is_enter ? scope : is_exit ? parent : scope;
    ck_assert_msg(f.node_frame[i] == run && f.out_frame[i] == out,
                  "node '%s' (%s): frame %d, outputs %d; want %d, %d", name, op,
                  f.node_frame[i], f.out_frame[i], run, out);
  }
  ck_assert_int_eq(n_enter, 3); /* outer var; inner var and invariant */
  ck_assert_int_eq(n_exit, 2);
  tf__frames_fini(&f);
  tf__frames_fini(&f); /* zeroed: a no-op */
  tf__frames_fini(NULL);
  tf_graph_free(g);
}
END_TEST

static tf_node *enter_node(tf_graph *g, const char *name, tf_output x, const char *frame) {
  tf_attr_kv a[] = {{"frame_name", tf_attr_string(frame)}};
  return tt_node(g, "Enter", name, &x, 1, a, 1);
}

START_TEST(test_frames_topological) {
  /* c (id 1) gets its only input, a control edge, from the Enter e (id 2):
   * visited in id order it would land in the root frame */
  tf_graph *g = tf_graph_new();
  tf_output x = i32c(g, 1);
  tf_node *c = nd(g, "NoOp", "c", NULL, 0);
  tf_node *e = enter_node(g, "e", x, "F");
  tf__node_add_control(c, e);
  tf__frames f;
  ck_assert_msg(tf__graph_frames(g, &f, &st) == TF_OK, "%s", st.msg);
  ck_assert_int_eq(f.n_frames, 2);
  ck_assert_int_eq(f.node_frame[tf_node_id(e)], 0);
  ck_assert_int_eq(f.out_frame[tf_node_id(e)], 1);
  ck_assert_int_eq(f.node_frame[tf_node_id(c)], 1);
  ck_assert_ptr_eq(f.frames[1].enter, e);
  tf__frames_fini(&f);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_frames_errors) {
  tf__frames f;
  /* an Exit whose input is in the root frame */
  tf_graph *g = tf_graph_new();
  tf_output x = i32c(g, 1);
  nd(g, "Exit", "lonely", &x, 1);
  ck_assert_int_eq(tf__graph_frames(g, &f, &st), TF_INVALID_ARGUMENT);
  ASSERT_HAS(st.msg, "node 'lonely' (Exit) is not inside a loop (its input is "
                     "in the root frame)");
  ck_assert(f.n_frames == 0 && f.frames == NULL && f.node_frame == NULL);
  tf_graph_free(g);
  /* frame B entered from frame A and from the root */
  g = tf_graph_new();
  x = i32c(g, 1);
  tf_node *a = enter_node(g, "a", x, "A");
  enter_node(g, "b1", o0(a), "B");
  enter_node(g, "b2", x, "B");
  ck_assert_int_eq(tf__graph_frames(g, &f, &st), TF_INVALID_ARGUMENT);
  ASSERT_HAS(st.msg, "node 'b2' (Enter) enters frame 'B' from the root frame, but "
                     "it is also entered from frame 'A'");
  /* a cycle without NextIteration */
  tf_node *p = nd(g, "NoOp", "p", NULL, 0), *q = nd(g, "NoOp", "q", NULL, 0);
  tf__node_add_control(p, q);
  tf__node_add_control(q, p);
  ck_assert_int_eq(tf__graph_frames(g, &f, &st), TF_INVALID_ARGUMENT);
  ASSERT_HAS(st.msg, "cycle through node 'p' (NoOp)");
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("algorithm");
  TCase *tc = tcase_create("topo");
  tcase_add_test(tc, test_topo_ties);
  tcase_add_test(tc, test_topo_random_dags);
  tcase_add_test(tc, test_topo_cycles);
  tcase_add_test(tc, test_graph_order);
  suite_add_tcase(s, tc);
  TCase *tf = tcase_create("frames");
  tcase_add_test(tf, test_frames_nested);
  tcase_add_test(tf, test_frames_topological);
  tcase_add_test(tf, test_frames_errors);
  suite_add_tcase(s, tf);
  return s;
}
