/* gradients_cf.h: what gradients_cf.c (frames, cond branches, the walk and
 * the gradient of cond) and gradients_loop.c (the gradient of a while
 * loop: counters, stacks and the backward loop) share. Internal. */
#ifndef TF_CORE_GRAPH_GRADIENTS_CF_H
#define TF_CORE_GRAPH_GRADIENTS_CF_H

#include "lib/core/graph/gradients_impl.h"

/* A cond branch level: values of a node in it are live only when pred had
 * the value side and the enclosing level (parent) was live. [0]: none. */
typedef struct cf_cond {
  int parent;
  tf_output pred;
  int side;
} cf_cond;

/* One loop variable of a forward loop: Enter -> Merge -> Switch, whose
 * true side feeds the body and false side the Exit; next is the body's
 * result (the NextIteration's input). */
typedef struct cf_var {
  tf_node *enter, *merge, *sw, *exit;
  tf_output next;
} cf_var;

/* A frame: the root ([0]) or a while loop, named by its Enters. */
typedef struct cf_frame {
  const char *name; /* frame_name; "" for the root */
  int parent;
  int cond;         /* cond level of the Enters' inputs (the Exits' level) */
  int par;          /* parallel_iterations */
  bool found, handled;
  cf_var *vars;     /* found by tf__cf_find_loop */
  int n_vars;
  tf_node **invs;   /* Enters with is_constant */
  int n_invs;
  tf_node *loop_cond;
  /* made while its gradient is built */
  tf_node *zero;    /* int32 0 in the parent frame, live with the loop */
  tf_node *cnt_merge, *cnt_body, *cnt_exit; /* the forward counter */
  tf_output max_size; /* -1 for its stacks */
  tf_node **pushes;
  int n_pushes, cap_pushes;
} cf_frame;

/* A gradient loop whose body is being built. */
typedef struct cf_ctx {
  struct cf_ctx *parent;
  int f;            /* its forward frame */
  char *bframe;     /* its own frame name */
  int par;
  tf_node *cnt;     /* its counter inside its body */
  tf_node **pops;
  int n_pops, cap_pops;
  tf_output *key, *val; /* forward value -> value in this loop */
  int n_map, cap_map;
} cf_ctx;

struct tf__cf_state {
  cf_frame *frames;
  int n_frames, cap_frames;
  cf_cond *conds;
  int n_conds, cap_conds;
  int *frame, *cond; /* per node id; frame -1: not a forward node */
  int n_ids;
  bool *structural;  /* per node id < n0: a loop's own Enter/Merge/... */
  cf_ctx *cur;       /* innermost gradient loop being built, or NULL */
  bool hook_off;
};

/* Records node n as a forward node of frame f at cond level c. */
void tf__cf_set(tf__gwalk *w, const tf_node *n, int f, int c);
/* The frame of a forward node, -1 for any other. */
int tf__cf_frame_of(const tf__gwalk *w, const tf_node *n);
/* The cond level of value t (a Switch output adds its own level). */
int tf__cf_cond_of(tf__gwalk *w, tf_output t);
/* Builds op(in) (in as one list when list) with an optional control
 * input and attrs; NULL on error (w->st set). */
tf_node *tf__cf_node(tf__gwalk *w, const char *op, const tf_output *in,
                     int n, bool list, tf_node *ctl, const tf_attr_kv *a,
                     int na);
/* Walks frame f's marked nodes in reverse id order. */
tf_code tf__cf_walk_frame(tf__gwalk *w, int f);
/* gradients_loop.c: the gradient of the loop of frame f, whose Exit with
 * the highest id is trigger. */
tf_code tf__cf_loop_grad(tf__gwalk *w, int f, const tf_node *trigger);
/* The value the gradient loop being built reads for forward value t. */
tf_output tf__cf_map(tf__gwalk *w, cf_ctx *c, tf_output t);
void tf__cf_frame_free(cf_frame *f);

#endif
