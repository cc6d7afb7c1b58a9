/* eager.c: tf_execute, one op on CPU tensors through a one-node graph. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/graph/graph_impl.h"
#include "lib/core/framework/kernel.h"
#include "lib/core/base/util.h"
#include "tf/eager.h"

/* The length an attr gives list arg a: the int number attr, or the length
 * of its list(type) attr; -1 when that attr is not among attrs. */
static int given_count(const tf_arg_def *a, const tf_attr_kv *attrs,
                       int n_attrs) {
  const char *name = a->number_attr ? a->number_attr : a->type_list_attr;
  for (int j = 0; j < n_attrs; j++) {
    const tf_attr_value *v = &attrs[j].value;
    if (strcmp(attrs[j].name, name) != 0) continue;
    if (a->number_attr && v->type == TF_ATTR_INT && !v->is_list) return (int)v->u.i;
    if (a->type_list_attr && v->type == TF_ATTR_TYPE && v->is_list) return v->n;
  }
  return -1;
}

static bool is_list_arg(const tf_arg_def *a) {
  return a->number_attr != NULL || a->type_list_attr != NULL;
}

/* Which argument each flat input belongs to: list args (N * T or a type
 * list) take their attr's length when given, else what is left after the
 * other args (at most one such list). */
static tf_code split_inputs(const tf_op_def *op, int n_inputs,
                            const tf_attr_kv *attrs, int n_attrs, int *counts,
                            tf_status *st) {
  int fixed = 0, unknown = -1;
  for (int k = 0; k < op->n_inputs; k++) {
    const tf_arg_def *a = &op->inputs[k];
    counts[k] = is_list_arg(a) ? given_count(a, attrs, n_attrs) : 1;
    if (counts[k] >= 0) {
      fixed += counts[k];
    } else if (unknown >= 0) {
      return tf_status_set(st, TF_INVALID_ARGUMENT, "op %s has several list "
                           "inputs: give their length attrs", op->name);
    } else {
      unknown = k;
    }
  }
  if (unknown >= 0) counts[unknown] = n_inputs - fixed;
  if ((unknown >= 0 && counts[unknown] < 0) || (unknown < 0 && fixed != n_inputs)) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "op %s: %d inputs do not "
                         "match its %d input arguments", op->name, n_inputs,
                         op->n_inputs);
  }
  return TF_OK;
}

static tf_node *build(tf_graph *g, const tf_op_def *op, tf_tensor *const *in,
                      int n_in, const int *counts, const tf_attr_kv *attrs,
                      int n_attrs, tf_status *st) {
  tf_output *outs = tf__xcalloc((size_t)(n_in ? n_in : 1), sizeof *outs);
  for (int i = 0; i < n_in; i++) {
    if (in[i] == NULL) {
      free(outs);
      tf_status_set(st, TF_INVALID_ARGUMENT, "op %s: input %d is NULL", op->name, i);
      return NULL;
    }
    char name[32];
    snprintf(name, sizeof name, "in%d", i);
    tf_node_builder *b = tf_node_begin(g, "Placeholder", name);
    tf_node_set_attr(b, "dtype", tf_attr_type_v(in[i]->dtype));
    tf_node_set_attr(b, "shape", tf_attr_shape(in[i]->shape));
    outs[i] = (tf_output){tf_node_finish(b, st), 0};
    TF_ASSERT(outs[i].node != NULL);
  }
  tf_node_builder *b = tf_node_begin(g, op->name, "op");
  int at = 0;
  for (int k = 0; k < op->n_inputs; k++) {
    if (is_list_arg(&op->inputs[k])) {
      tf_node_add_input_list(b, outs + at, counts[k]);
    } else {
      tf_node_add_input(b, outs[at]);
    }
    at += counts[k];
  }
  for (int j = 0; j < n_attrs; j++) tf_node_set_attr(b, attrs[j].name, attrs[j].value);
  free(outs);
  return tf_node_finish(b, st);
}

tf_code tf_execute(const char *op_name, tf_tensor *const *inputs, int n_inputs,
                   const tf_attr_kv *attrs, int n_attrs, tf_tensor **outputs,
                   int *n_outputs, tf_status *st) {
  const tf_op_def *op = tf_op_lookup(op_name);
  if (op == NULL) {
    return tf_status_set(st, TF_NOT_FOUND, "op type '%s' is not registered", op_name);
  }
  int counts[TF_OP_MAX_ARGS];
  TF_TRY(split_inputs(op, n_inputs, attrs, n_attrs, counts, st));
  tf_graph *g = tf_graph_new();
  tf_node *n = build(g, op, inputs, n_inputs, counts, attrs, n_attrs, st);
  tf_code rc = n ? TF_OK : st->code;
  if (rc == TF_OK && n->n_outputs > *n_outputs) {
    rc = tf_status_set(st, TF_INVALID_ARGUMENT, "op %s has %d outputs, room "
                       "for %d given", op_name, n->n_outputs, *n_outputs);
  }
  if (rc == TF_OK) {
    rc = tf_kernel_run_node(n, tf_cpu_device(), inputs, outputs, st);
    if (rc == TF_OK) *n_outputs = n->n_outputs;
  }
  tf_graph_free(g);
  return rc;
}
