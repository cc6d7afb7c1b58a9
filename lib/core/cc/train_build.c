/* train_build.c: the build sessions the training builders share
 * (train_impl.h) and the graph-level variable helpers of train.h:
 * tf_variable_create, tf_global_variables_initializer and tf_global_step.
 * A variable is a VariableV2 with its initializer "<name>/Assign", which
 * is how tf_global_variables_initializer recognises it. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/graph/graph_impl.h"
#include "lib/core/cc/train_impl.h"
#include "lib/core/base/util.h"

/* ---- build sessions ------------------------------------------------------- */

void tf__tb_begin(tf__tb *b, tf_graph *g, tf_status *st) {
  tf_status_init(st);
  *b = (tf__tb){g, st, tf__graph_mark(g)};
}

tf_code tf__tb_end(tf__tb *b) {
  if (b->st->code != TF_OK) {
    tf__graph_rollback(b->g, &b->mark);
  } else {
    tf__graph_commit(b->g, &b->mark);
  }
  return b->st->code;
}

tf_code tf__tb_fail(tf__tb *b, const char *fmt, ...) {
  if (b->st->code != TF_OK) {
    return b->st->code;
  }
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return tf_status_set(b->st, TF_INVALID_ARGUMENT, "%s", msg);
}

tf_node *tf__tb_node(tf__tb *b, const char *op, const char *name,
                     const tf_output *in, int n_in, const tf_attr_kv *attrs,
                     int n_attrs, tf_node *const *ctrl, int n_ctrl) {
  if (tf__tb_failed(b)) {
    return NULL;
  }
  for (int i = 0; i < n_in; i++) {
    if (in[i].node == NULL) {
      tf__tb_fail(b, "%s: input %d is missing", op, i);
      return NULL;
    }
  }
  tf_node_builder *nb = tf_node_begin(b->g, op, name);
  for (int i = 0; i < n_in; i++) {
    tf_node_add_input(nb, in[i]);
  }
  for (int i = 0; i < n_attrs; i++) {
    tf_node_set_attr(nb, attrs[i].name, attrs[i].value);
  }
  for (int i = 0; i < n_ctrl; i++) {
    tf_node_add_control_input(nb, ctrl[i]);
  }
  return tf_node_finish(nb, b->st);
}

tf_output tf__tb_op(tf__tb *b, const char *op, const char *name,
                    const tf_output *in, int n_in, const tf_attr_kv *attrs,
                    int n_attrs) {
  tf_node *n = tf__tb_node(b, op, name, in, n_in, attrs, n_attrs, NULL, 0);
  return (tf_output){n, 0};
}

tf_output tf__tb_scalar(tf__tb *b, const char *name, tf_dtype dt, double v) {
  if (tf__tb_failed(b)) {
    return (tf_output){NULL, 0};
  }
  tf_tensor *t;
  if (tf_tensor_new(dt, &(tf_shape){0, {0}}, &t, b->st) != TF_OK) {
    return (tf_output){NULL, 0};
  }
  switch (dt) {
  case TF_FLOAT32: *(float *)t->data = (float)v; break;
  case TF_FLOAT64: *(double *)t->data = v; break;
  case TF_INT32: *(int32_t *)t->data = (int32_t)v; break;
  case TF_INT64: *(int64_t *)t->data = (int64_t)v; break;
  default:
    tf_tensor_unref(t);
    tf__tb_fail(b, "no scalar constant of dtype %s", tf_dtype_name(dt));
    return (tf_output){NULL, 0};
  }
  tf_attr_kv a[] = {{"value", tf_attr_tensor(t)}, {"dtype", tf_attr_type_v(dt)}};
  tf_output o = tf__tb_op(b, "Const", name, NULL, 0, a, 2);
  tf_tensor_unref(t);
  return o;
}

tf_output tf__tb_cast(tf__tb *b, tf_output x, tf_dtype dt) {
  tf_dtype from = tf__tb_dtype(x);
  if (from == dt || x.node == NULL) {
    return x;
  }
  tf_attr_kv a[] = {{"SrcT", tf_attr_type_v(from)},
                    {"DstT", tf_attr_type_v(dt)}};
  return tf__tb_op(b, "Cast", NULL, &x, 1, a, 2);
}

const char *tf__tb_unique(tf__tb *b, const char *base, char *buf,
                          size_t size) {
  tf_graph_unique_name(b->g, base, buf, size);
  return buf + strlen(tf__graph_scope(b->g));
}

tf_dtype tf__tb_dtype(tf_output o) {
  return o.node ? tf_node_output_type(o.node, o.index) : TF_DTYPE_INVALID;
}

/* ---- variables ------------------------------------------------------------ */

static tf_code check_variable_args(tf__tb *b, const char *name, tf_shape shape,
                                   tf_dtype dtype, tf_output init) {
  char s1[96], s2[96];
  if (name == NULL || *name == '\0') {
    return tf__tb_fail(b, "tf_variable_create: a name is required");
  }
  if (!tf_shape_is_fully_defined(&shape)) {
    return tf__tb_fail(b, "variable %s: shape %s is not fully defined", name,
                       tf_shape_str(&shape, s1, sizeof s1));
  }
  if (init.node == NULL || tf__tb_dtype(init) != dtype) {
    return tf__tb_fail(b, "variable %s is %s but its initial value is %s",
                       name, tf_dtype_name(dtype),
                       init.node ? tf_dtype_name(tf__tb_dtype(init))
                                 : "missing");
  }
  const tf_shape *is = tf_node_output_shape(init.node, init.index);
  tf_shape merged; /* shape is fully defined: is fits it when they merge */
  if (tf_shape_merge(&shape, is, &merged, NULL) != TF_OK) {
    return tf__tb_fail(b, "variable %s has shape %s; its initial value has "
                       "shape %s", name, tf_shape_str(&shape, s1, sizeof s1),
                       tf_shape_str(is, s2, sizeof s2));
  }
  return TF_OK;
}

tf_code tf_variable_create(tf_graph *g, const char *name, tf_shape shape,
                           tf_dtype dtype, tf_output init_value, tf_var *out,
                           tf_status *st) {
  tf__tb b;
  tf__tb_begin(&b, g, st);
  *out = (tf_var){{NULL, 0}, NULL};
  if (check_variable_args(&b, name, shape, dtype, init_value) == TF_OK) {
    tf_attr_kv va[] = {{"dtype", tf_attr_type_v(dtype)},
                       {"shape", tf_attr_shape(shape)}};
    tf_output v = tf__tb_op(&b, "VariableV2", name, NULL, 0, va, 2);
    char an[512];
    snprintf(an, sizeof an, "%s/Assign", name);
    tf_node *a = tf__tb_node(&b, "Assign", an, (tf_output[]){v, init_value},
                             2, NULL, 0, NULL, 0);
    *out = (tf_var){v, a};
  }
  if (tf__tb_end(&b) != TF_OK) {
    *out = (tf_var){{NULL, 0}, NULL};
  }
  return st->code;
}

/* Whether n is the initializer of a variable: Assign "<v>/Assign" whose
 * ref input is VariableV2 v. */
static bool is_initializer(const tf_node *n) {
  if (strcmp(tf_node_op(n), "Assign") != 0 || tf_node_num_inputs(n) < 1) {
    return false;
  }
  const tf_node *v = tf_node_input(n, 0).node;
  const char *vn = tf_node_name(v);
  size_t len = strlen(vn);
  return strcmp(tf_node_op(v), "VariableV2") == 0 &&
         strncmp(tf_node_name(n), vn, len) == 0 &&
         strcmp(tf_node_name(n) + len, "/Assign") == 0;
}

tf_node *tf_global_variables_initializer(tf_graph *g, const char *name,
                                         tf_status *st) {
  tf__tb b;
  tf__tb_begin(&b, g, st);
  int n = tf_graph_num_nodes(g), k = 0;
  tf_node **ctrl = tf__xcalloc((size_t)(n > 0 ? n : 1), sizeof *ctrl);
  for (int i = 0; i < n; i++) {
    if (is_initializer(tf_graph_node(g, i))) {
      ctrl[k++] = tf_graph_node(g, i);
    }
  }
  tf_node *init = NULL;
  char buf[512];
  if (k == 0) {
    tf__tb_fail(&b, "the graph has no variable initializer (an Assign "
                    "\"<v>/Assign\" of a VariableV2 <v>)");
  } else {
    init = tf__tb_node(&b, "NoOp",
                       name ? name : tf__tb_unique(&b, "init", buf, sizeof buf),
                       NULL, 0, NULL, 0, ctrl, k);
  }
  free(ctrl);
  return tf__tb_end(&b) == TF_OK ? init : NULL;
}

/* An existing "global_step" must be an int32/int64 scalar variable. */
static tf_code check_global_step(tf__tb *b, const tf_node *n) {
  const tf_shape *s = tf_node_output_shape(n, 0);
  tf_dtype dt = tf_node_output_type(n, 0);
  char buf[96];
  if (strcmp(tf_node_op(n), "VariableV2") != 0 ||
      (dt != TF_INT32 && dt != TF_INT64) || s->rank != 0) {
    return tf__tb_fail(b, "node %s is not an int32/int64 scalar variable "
                       "(op %s, %s, shape %s)", tf_node_name(n),
                       tf_node_op(n), tf_dtype_name(dt),
                       tf_shape_str(s, buf, sizeof buf));
  }
  return TF_OK;
}

tf_code tf_global_step(tf_graph *g, tf_output *out, tf_status *st) {
  tf__tb b;
  tf__tb_begin(&b, g, st);
  char full[512];
  snprintf(full, sizeof full, "%sglobal_step", tf__graph_scope(g));
  tf_node *n = tf_graph_find(g, full);
  *out = (tf_output){NULL, 0};
  if (n != NULL) {
    if (check_global_step(&b, n) == TF_OK) {
      *out = (tf_output){n, 0};
    }
    return tf__tb_end(&b);
  }
  tf_output zero = tf__tb_scalar(&b, "global_step/Initializer/zeros",
                                 TF_INT64, 0);
  tf_var v;
  if (zero.node != NULL &&
      tf_variable_create(g, "global_step", tf_shape_scalar(), TF_INT64, zero,
                         &v, st) == TF_OK) {
    *out = v.ref;
  }
  return tf__tb_end(&b);
}
