/* train_impl.h: what the training builders (train.c, train_build.c,
 * train_schedule.c) share: a build session over a graph that records the
 * first error, so a builder chains node constructions and checks once,
 * and that on error removes every node added since it began (the graph is
 * left as it was) and pops the scopes it pushed. */
#ifndef TF_CORE_TRAIN_IMPL_H
#define TF_CORE_TRAIN_IMPL_H

#include "lib/core/graph/algorithm.h"
#include "tf/graph.h"
#include "tf/status.h"
#include "tf/train.h"

typedef struct tf__tb {
  tf_graph *g;
  tf_status *st;       /* OK until the first error */
  tf__gmark mark;      /* the graph when the build began */
} tf__tb;

/* Begins a build on g (takes a mark on it); clears st. Every begin must
 * be followed by exactly one tf__tb_end, builds nesting like calls. */
void tf__tb_begin(tf__tb *b, tf_graph *g, tf_status *st);
/* Ends it: pops the scopes pushed since begin and, when st holds an
 * error, rolls the graph back to begin (the nodes added since are
 * removed and their names free again). Returns st's code. */
tf_code tf__tb_end(tf__tb *b);
/* Whether the build has failed. */
static inline bool tf__tb_failed(const tf__tb *b) { return b->st->code != TF_OK; }
/* Records an INVALID_ARGUMENT error (when none yet); returns it. */
tf_code tf__tb_fail(tf__tb *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Node op named name (NULL: the op's name, made unique) on data inputs
 * in[0..n_in) (each its own argument) with attrs and control inputs
 * ctrl[0..n_ctrl). NULL once the build has failed or when an input's node
 * is NULL; records the error. */
tf_node *tf__tb_node(tf__tb *b, const char *op, const char *name,
                     const tf_output *in, int n_in, const tf_attr_kv *attrs,
                     int n_attrs, tf_node *const *ctrl, int n_ctrl);
/* Output 0 of tf__tb_node without control inputs. */
tf_output tf__tb_op(tf__tb *b, const char *op, const char *name,
                    const tf_output *in, int n_in, const tf_attr_kv *attrs,
                    int n_attrs);
static inline tf_output tf__tb_op1(tf__tb *b, const char *op, tf_output x) {
  return tf__tb_op(b, op, NULL, &x, 1, NULL, 0);
}
static inline tf_output tf__tb_op2(tf__tb *b, const char *op, tf_output x,
                                   tf_output y) {
  tf_output in[2] = {x, y};
  return tf__tb_op(b, op, NULL, in, 2, NULL, 0);
}
/* A scalar Const of dtype dt (float or int) holding v. */
tf_output tf__tb_scalar(tf__tb *b, const char *name, tf_dtype dt, double v);
/* x cast to dt (x itself when it has that dtype). */
tf_output tf__tb_cast(tf__tb *b, tf_output x, tf_dtype dt);
/* A unique name for base under the current scope, relative to it (what
 * tf_node_begin expects), in buf. */
const char *tf__tb_unique(tf__tb *b, const char *base, char *buf, size_t size);

/* dtype of edge o; TF_DTYPE_INVALID when o.node is NULL. */
tf_dtype tf__tb_dtype(tf_output o);

#endif
