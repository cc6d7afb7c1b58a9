/* grad_testlib.h: helpers shared by the gradient tests of the array,
 * array_index, reduction and matrix families: a generic tt_grad_check
 * builder whose op inputs are fed Placeholders (optionally with their
 * static dims or rank hidden, to reach the gradients' dynamic-shape paths)
 * or constants, and small graph/session helpers. Included by one test file
 * each; everything is static. */
#ifndef TF_TEST_CORE_GRAD_TESTLIB_H
#define TF_TEST_CORE_GRAD_TESTLIB_H

#include <stdio.h>
#include <string.h>

#include "test/unit/testutil.h"
#include "tf/gradients.h"
#include "tf/session.h"

#define GT_SHAPE(...)                                                          \
  tf_shape_make((int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),    \
                (int64_t[]){__VA_ARGS__})

enum { GT_SHOW = 0, GT_HIDE_DIMS = 1, GT_HIDE_RANK = 2 };

/* One input of the op under test: fed placeholder `from` (>= 0), or the
 * constant value (from == -1; borrowed, the builder takes its own ref). */
typedef struct gt_arg {
  int from;
  tf_tensor *value;
  int hide; /* GT_SHOW, GT_HIDE_DIMS, GT_HIDE_RANK */
} gt_arg;

#define GT_P(i) ((gt_arg){.from = (i)})
#define GT_PH(i, h) ((gt_arg){.from = (i), .hide = (h)})
#define GT_C(t) ((gt_arg){.from = -1, .value = (t)})

typedef struct gt_build {
  const char *op;
  int n_args;
  gt_arg args[12];
  int list_start, list_len; /* args [start, start+len) are one list arg */
  int list2_start, list2_len; /* a second list argument (DynamicStitch) */
  const tf_attr_kv *attrs;
  int n_attrs;
  int out;
} gt_build;

static inline tf_output gt_o(tf_node *n) { return (tf_output){n, 0}; }

static inline tf_output gt_ivec(tf_graph *g, int n, const int32_t *v) {
  return gt_o(tt_const(g, NULL, tf_tensor_vec_i32(n, v)));
}

static inline tf_output gt_op2(tf_graph *g, const char *op, tf_output a,
                               tf_output b) {
  return gt_o(tt_node(g, op, NULL, (tf_output[]){a, b}, 2, NULL, 0));
}

static inline tf_output gt_shape_of(tf_graph *g, tf_output x) {
  return gt_o(tt_node(g, "Shape", NULL, &x, 1, NULL, 0));
}

/* x with unknown dims (rank kept) or unknown rank, through Reshapes whose
 * shape input is computed at run time. */
static inline tf_output gt_hide(tf_graph *g, tf_output x, int how) {
  if (how == GT_SHOW) {
    return x;
  }
  tf_output s = gt_shape_of(g, x);
  if (how == GT_HIDE_RANK) {
    s = gt_op2(g, "Reshape", s, gt_shape_of(g, s));
  }
  tf_output y = gt_op2(g, "Reshape", x, s);
  const tf_shape *ys = tf_node_output_shape(y.node, 0);
  ck_assert(how == GT_HIDE_RANK ? ys->rank == TF_UNKNOWN_RANK
                                : !tf_shape_is_fully_defined(ys) || ys->rank == 0);
  return y;
}

static inline tf_output gt_arg_out(tf_graph *g, const tf_output *in,
                                   const gt_arg *a) {
  if (a->from < 0) {
    return gt_o(tt_const(g, NULL, tf_tensor_ref(a->value)));
  }
  return gt_hide(g, in[a->from], a->hide);
}

static inline tf_output gt_build_fn(tf_graph *g, const tf_output *in, int n_in,
                             void *arg) {
  const gt_build *b = arg;
  (void)n_in;
  tf_output v[12];
  for (int i = 0; i < b->n_args; i++) {
    v[i] = gt_arg_out(g, in, &b->args[i]);
  }
  tf_status st;
  tf_status_init(&st);
  tf_node_builder *nb = tf_node_begin(g, b->op, NULL);
  for (int i = 0; i < b->n_args;) {
    if (b->list_len > 0 && i == b->list_start) {
      tf_node_add_input_list(nb, v + i, b->list_len);
      i += b->list_len;
    } else if (b->list2_len > 0 && i == b->list2_start) {
      tf_node_add_input_list(nb, v + i, b->list2_len);
      i += b->list2_len;
    } else {
      tf_node_add_input(nb, v[i++]);
    }
  }
  for (int i = 0; i < b->n_attrs; i++) {
    tf_node_set_attr(nb, b->attrs[i].name, b->attrs[i].value);
  }
  tf_node *n = tf_node_finish(nb, &st);
  ck_assert_msg(n != NULL, "building %s: %s", b->op, st.msg);
  return (tf_output){n, b->out};
}

/* Runs the graph once: feeds placeholders names[i] = vals[i], fetches o. */
static inline tf_tensor *gt_run(tf_graph *g, const char *const *names,
                                tf_tensor *const *vals, int n, tf_output o) {
  tf_status st;
  tf_status_init(&st);
  tf_session *s = tf_session_new(g, NULL, &st);
  ck_assert_msg(s != NULL, "session: %s", st.msg);
  char name[300];
  snprintf(name, sizeof name, "%s:%d", tf_node_name(o.node), o.index);
  const char *fetch = name;
  tf_tensor *out = NULL;
  tf_code rc = tf_session_run(s, NULL, names, vals, n, &fetch, &out, 1, NULL,
                              0, NULL, &st);
  ck_assert_msg(rc == TF_OK, "run %s: %s", name, st.msg);
  tf_session_free(s);
  return out;
}

/* Number of nodes of op type op in g. */
static inline int gt_count_op(const tf_graph *g, const char *op) {
  int k = 0;
  for (int i = 0; i < tf_graph_num_nodes(g); i++) {
    k += strcmp(tf_node_op(tf_graph_node(g, i)), op) == 0;
  }
  return k;
}

#endif
