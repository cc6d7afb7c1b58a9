/* placement_cost.c: what the placer knows about node run times. The cost
 * model is a mutex-guarded hash map from node name to the running sum and
 * count of measured times (fed from step traces); static estimates come
 * from the op and the inferred shapes when nothing was measured. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/graph/graph_impl.h"
#include "lib/core/base/strmap.h"
#include "lib/core/base/util.h"
#include "lib/runtime/placement_impl.h"

#define FLOPS_PER_NS 10.0 /* 10 GFLOP/s */
#define BYTES_PER_NS 5.0  /* 5 GB/s */
#define MIN_COST_NS 1000  /* per-node overhead floor */

typedef struct cost_entry {
  int64_t sum;
  int64_t count;
} cost_entry;

struct tf_cost_model {
  pthread_mutex_t mu;
  tf__strmap times; /* node name -> cost_entry* */
};

tf_cost_model *tf_cost_model_new(void) {
  tf_cost_model *cm = tf__xcalloc(1, sizeof *cm);
  pthread_mutex_init(&cm->mu, NULL);
  tf__strmap_init(&cm->times);
  return cm;
}

void tf_cost_model_free(tf_cost_model *cm) {
  if (cm == NULL) {
    return;
  }
  for (size_t i = 0; i < cm->times.cap; i++) {
    free(cm->times.vals[i]);
  }
  tf__strmap_fini(&cm->times);
  pthread_mutex_destroy(&cm->mu);
  free(cm);
}

void tf_cost_model_record(tf_cost_model *cm, const char *node, int64_t ns) {
  if (cm == NULL || node == NULL || ns < 0) {
    return;
  }
  pthread_mutex_lock(&cm->mu);
  cost_entry *e = tf__strmap_get(&cm->times, node, NULL);
  if (e == NULL) {
    e = tf__xcalloc(1, sizeof *e);
    tf__strmap_put(&cm->times, node, e);
  }
  e->sum += ns;
  e->count++;
  pthread_mutex_unlock(&cm->mu);
}

int64_t tf_cost_model_get(const tf_cost_model *cm, const char *node) {
  if (cm == NULL || node == NULL) {
    return -1;
  }
  tf_cost_model *m = (tf_cost_model *)cm; /* the lock is not logical state */
  pthread_mutex_lock(&m->mu);
  const cost_entry *e = tf__strmap_get(&m->times, node, NULL);
  int64_t v = e != NULL && e->count > 0 ? e->sum / e->count : -1;
  pthread_mutex_unlock(&m->mu);
  return v;
}

/* Elements of s with unknown dimensions (or an unknown rank) counted as 1. */
static double est_elems(const tf_shape *s) {
  double n = 1;
  if (s == NULL || s->rank <= 0) {
    return n;
  }
  for (int i = 0; i < s->rank; i++) {
    if (s->dims[i] > 0) {
      n *= (double)s->dims[i];
    } else if (s->dims[i] == 0) {
      return 0;
    }
  }
  return n;
}

static double dim_or_1(const tf_shape *s, int i) {
  if (s == NULL || s->rank <= 0 || i < 0 || i >= s->rank || s->dims[i] < 0) {
    return 1;
  }
  return (double)s->dims[i];
}

int64_t tf__place_output_bytes(const tf_node *n, int port) {
  size_t esz = tf_dtype_size(n->out_types[port]);
  return (int64_t)(est_elems(&n->out_shapes[port]) * (double)(esz ? esz : 4));
}

static bool attr_true(const tf_node *n, const char *name) {
  const tf_attr_value *v = tf_node_attr(n, name);
  return v != NULL && v->type == TF_ATTR_BOOL && !v->is_list && v->u.b;
}

/* Multiply-adds of MatMul / BatchMatMul and convolutions; -1 for others. */
static double op_flops(const tf_node *n) {
  const char *op = n->op->name;
  if (n->n_outputs < 1 || n->n_inputs < 2) {
    return -1;
  }
  double out = est_elems(&n->out_shapes[0]);
  const tf_shape *a = tf_node_output_shape(n->inputs[0].node, n->inputs[0].index);
  const tf_shape *b = tf_node_output_shape(n->inputs[1].node, n->inputs[1].index);
  if (strcmp(op, "MatMul") == 0 || strcmp(op, "BatchMatMul") == 0 ||
      strcmp(op, "BatchMatMulV2") == 0) {
    bool ta = attr_true(n, "transpose_a") || attr_true(n, "adj_x");
    int r = a != NULL ? a->rank : -1;
    double k = dim_or_1(a, ta ? r - 2 : r - 1);
    return 2 * out * k;
  }
  if (strcmp(op, "Conv2D") == 0 || strcmp(op, "DepthwiseConv2dNative") == 0) {
    return 2 * out * dim_or_1(b, 0) * dim_or_1(b, 1) * dim_or_1(b, 2);
  }
  if (n->n_inputs == 3 && strncmp(op, "Conv2DBackprop", 14) == 0) {
    /* one multiply-add per output-gradient element and filter tap */
    const tf_output *g = &n->inputs[2];
    double dy = est_elems(tf_node_output_shape(g->node, g->index));
    const tf_shape *f = strcmp(op, "Conv2DBackpropInput") == 0 ? b : &n->out_shapes[0];
    return 2 * dy * dim_or_1(f, 0) * dim_or_1(f, 1) * dim_or_1(f, 2);
  }
  return -1;
}

int64_t tf__place_static_cost(const tf_node *n) {
  double flops = op_flops(n);
  double ns;
  if (flops >= 0) {
    ns = flops / FLOPS_PER_NS;
  } else {
    double bytes = 0;
    for (int i = 0; i < n->n_inputs; i++) {
      if (!tf__node_input_is_ref(n, i)) {
        bytes += (double)tf__place_output_bytes(n->inputs[i].node, n->inputs[i].index);
      }
    }
    for (int i = 0; i < n->n_outputs; i++) {
      if (!tf__node_output_is_ref(n, i)) {
        bytes += (double)tf__place_output_bytes(n, i);
      }
    }
    ns = bytes / BYTES_PER_NS;
  }
  if (ns < MIN_COST_NS) {
    return MIN_COST_NS;
  }
  return ns > 1e15 ? (int64_t)1e15 : (int64_t)ns;
}

int64_t tf__place_node_cost(const tf_node *n, const tf_cost_model *cm) {
  int64_t m = tf_cost_model_get(cm, n->name);
  return m >= 0 ? m : tf__place_static_cost(n);
}
