/* eager.c: tf_execute, one op on CPU tensors through a one-node graph. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/graph_impl.h"
#include "lib/core/kernel.h"
#include "lib/core/util.h"
#include "tf/eager.h"

/* Which argument each flat input belongs to: list args take what is left
 * after single args (one list arg), or an explicit number attr. */
static tf_code split_inputs(const tf_op_def *op, int n_inputs,
                            const tf_attr_kv *attrs, int n_attrs, int *counts,
                            tf_status *st) {
  int fixed = 0, unknown = -1;
  for (int k = 0; k < op->n_inputs; k++) {
    const tf_arg_def *a = &op->inputs[k];
    counts[k] = 1;
    if (a->number_attr == NULL) {
      fixed++;
      continue;
    }
    counts[k] = -1;
    for (int j = 0; j < n_attrs; j++) {
      if (strcmp(attrs[j].name, a->number_attr) == 0 &&
          attrs[j].value.type == TF_ATTR_INT && !attrs[j].value.is_list) {
        counts[k] = (int)attrs[j].value.u.i;
      }
    }
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
    if (op->inputs[k].number_attr != NULL) {
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
