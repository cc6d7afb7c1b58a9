/* layers_shard.c: partitioned variables and the sharded embedding lookup
 * (tf/layers.h), after TF1's fixed_size_partitioner, PartitionedVariable
 * and embedding_lookup over a list of params.
 *
 * A partitioned variable is num_shards plain variables "<name>/part_<i>"
 * split along axis 0, each built (with its initializer and Assign) under a
 * device request of its own. The lookup assigns each id to a shard, splits
 * the ids with DynamicPartition, gathers on each shard with a Gather
 * colocated with it and stitches the rows back into the ids' order: the
 * gradient of a shard is then its Gather's (sparse rows), and the update
 * an optimizer makes (ScatterSub, SparseApply*) takes the shard by
 * reference, so the placer puts it on the shard's device too. Builders
 * take a graph mark and roll everything back on error. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/graph/algorithm.h"
#include "lib/core/graph/graph_impl.h"
#include "lib/core/cc/layers_impl.h"
#include "lib/core/base/util.h"

#define STATUS_INIT(st, local)                                                 \
  do {                                                                         \
    if ((st) == NULL) (st) = &(local);                                         \
    tf_status_init(st);                                                        \
  } while (0)

int64_t tf_layers_shard_rows(int64_t rows, int n, int i) {
  if (rows < 0 || n <= 0 || i < 0 || i >= n) {
    return 0;
  }
  return rows / n + (i < rows % n ? 1 : 0);
}

/* ---- partitioned variables ----------------------------------------------- */

static tf_code check_partitioned(const char *name, const tf_shape *s,
                                 int num_shards, const char *const *devices,
                                 int n_devices, tf_status *st) {
  char b[128];
  if (name == NULL || name[0] == '\0') {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "partitioned variable: "
                         "empty name");
  }
  if (s->rank < 1 || s->rank > TF_MAX_RANK || !tf_shape_is_fully_defined(s)) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "partitioned variable "
                         "'%s': shape %s must be fully defined, of rank >= 1",
                         name, tf_shape_str(s, b, sizeof b));
  }
  if (num_shards < 1 || num_shards > s->dims[0]) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "partitioned variable "
                         "'%s': num_shards %d must be in [1, %" PRId64 "] "
                         "(the rows of shape %s)", name, num_shards,
                         s->dims[0], tf_shape_str(s, b, sizeof b));
  }
  if (n_devices < 0 || (n_devices > 0 && devices == NULL)) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "partitioned variable "
                         "'%s': %d devices but no device array", name,
                         n_devices);
  }
  for (int i = 0; i < n_devices; i++) {
    if (devices[i] == NULL || (devices[i][0] != '\0' && devices[i][0] != '/')) {
      return tf_status_set(st, TF_INVALID_ARGUMENT, "partitioned variable "
                           "'%s': devices[%d] '%s' is not a device name "
                           "(\"/job:ps/task:0\", or \"\" for none)", name, i,
                           devices[i] ? devices[i] : "(null)");
    }
  }
  return TF_OK;
}

/* Shard i: a variable "part_<i>" (the caller pushed "<name>/") on its
 * device, drawing random values with the full shape's fans. */
static tf_output make_shard(tf_layers *l, int i, const tf_shape *full,
                            tf_dtype dt, const tf_initializer *init,
                            bool trainable, int num_shards,
                            const char *device, tf_status *st) {
  tf_shape s = *full;
  s.dims[0] = tf_layers_shard_rows(full->dims[0], num_shards, i);
  tf_initializer in = init ? *init : tf_init_zeros();
  if (in.seed != 0) {
    in.seed += i;
  }
  char part[32];
  snprintf(part, sizeof part, "part_%d", i);
  l->device = device != NULL && device[0] != '\0' ? device : NULL;
  tf_output v = tf__layers_var_fans(l, part, s, full, dt, &in, trainable, st);
  l->device = NULL;
  return v;
}

/* ConcatV2 of in[0..n) (n >= 2) on axis 0, named name (NULL: unique). */
static tf_output concat0(tf_layers *l, const tf_output *in, int n,
                         const char *name, tf_status *st) {
  tf_output axis = tf__layers_scalar(l, TF_INT32, 0, st);
  if (st->code != TF_OK) {
    return (tf_output){NULL, 0};
  }
  tf_node_builder *b = tf_node_begin(l->g, "ConcatV2", name);
  tf_node_add_input_list(b, in, n);
  tf_node_add_input(b, axis);
  tf_node *c = tf_node_finish(b, st);
  return (tf_output){c, 0};
}

/* The whole value: the shards concatenated, or the one shard read. */
static tf_output dense_value(tf_layers *l, const tf_output *shards, int n,
                             tf_status *st) {
  if (n == 1) {
    return tf__layers_op(l, "Identity", "read", shards, 1, NULL, 0, st);
  }
  return concat0(l, shards, n, "concat", st);
}

tf_code tf_layers_partitioned_variable(
    tf_layers *l, const char *name, tf_shape shape, tf_dtype dtype,
    const tf_initializer *init, bool trainable, int num_shards,
    const char *const *devices, int n_devices, tf_output *shards,
    tf_output *dense, tf_status *st) {
  tf_status local;
  STATUS_INIT(st, local);
  if (shards == NULL) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "partitioned variable "
                         "'%s': shards is NULL", name ? name : "");
  }
  TF_TRY(check_partitioned(name, &shape, num_shards, devices, n_devices, st));
  char what[160];
  snprintf(what, sizeof what, "partitioned variable '%s'", name);
  TF_TRY(tf__layers_check_init(what, init, dtype, st));
  tf__gmark m = tf__graph_mark(l->g);
  int n_vars = l->n_vars;
  char *scope = tf__xasprintf("%s/", name);
  tf_graph_push_scope(l->g, scope);
  free(scope);
  for (int i = 0; i < num_shards && st->code == TF_OK; i++) {
    const char *dev = n_devices > 0 ? devices[i % n_devices] : NULL;
    shards[i] = make_shard(l, i, &shape, dtype, init, trainable, num_shards,
                           dev, st);
  }
  if (dense != NULL && st->code == TF_OK) {
    *dense = dense_value(l, shards, num_shards, st);
  }
  if (st->code != TF_OK) {
    for (int i = 0; i < num_shards; i++) {
      shards[i] = (tf_output){NULL, 0}; /* rolled back */
    }
    tf__layers_forget_vars(l, n_vars);
    tf__graph_rollback(l->g, &m);
    tf_status_prefix(st, "%s", what);
    return st->code;
  }
  tf__graph_commit(l->g, &m); /* pops the scope */
  return TF_OK;
}

/* ---- the sharded lookup ---------------------------------------------------- */

typedef struct lookup {
  tf_layers *l;
  const tf_output *shards;
  int n;
  tf_output ids;
  tf_dtype idt;     /* ids' dtype */
  bool div;         /* strategy */
  int64_t total;    /* div: rows of the whole table */
  const char *what; /* for messages */
  tf_status *st;
} lookup;

static const tf_shape *out_shape(tf_output o) {
  return tf_node_output_shape(o.node, o.index);
}

/* Shards of one dtype and rank >= 1 with agreeing known row dims; for
 * div, known row counts laid out as tf_layers_shard_rows. */
static tf_code check_shards(lookup *k) {
  char b0[128], b1[128];
  if (k->n < 1 || k->shards == NULL) {
    return tf_status_set(k->st, TF_INVALID_ARGUMENT, "%s: needs at least one "
                         "shard, got %d", k->what, k->n);
  }
  for (int i = 0; i < k->n; i++) {
    if (k->shards[i].node == NULL) {
      return tf_status_set(k->st, TF_INVALID_ARGUMENT, "%s: shard %d is a "
                           "NULL node", k->what, i);
    }
  }
  tf_output s0 = k->shards[0];
  const tf_shape *p0 = out_shape(s0);
  tf_dtype dt = tf_node_output_type(s0.node, s0.index);
  k->total = 0;
  for (int i = 0; i < k->n; i++) {
    tf_output s = k->shards[i];
    const tf_shape *p = out_shape(s);
    bool same_rows = p->rank < 0 || p0->rank < 0 || p->rank == p0->rank;
    for (int d = 1; same_rows && p->rank > 0 && d < p->rank; d++) {
      same_rows = p->dims[d] < 0 || p0->dims[d] < 0 || p->dims[d] == p0->dims[d];
    }
    if (tf_node_output_type(s.node, s.index) != dt || p->rank == 0 ||
        !same_rows) {
      return tf_status_set(k->st, TF_INVALID_ARGUMENT, "%s: shard %d '%s' "
                           "(%s %s) does not match shard 0 '%s' (%s %s): the "
                           "shards need one dtype, rank >= 1 and equal row "
                           "dims", k->what, i, tf_node_name(s.node),
                           tf_dtype_name(tf_node_output_type(s.node, s.index)),
                           tf_shape_str(p, b0, sizeof b0), tf_node_name(s0.node),
                           tf_dtype_name(dt), tf_shape_str(p0, b1, sizeof b1));
    }
    k->total = (p->rank < 1 || p->dims[0] < 0 || k->total < 0)
                   ? -1 : k->total + p->dims[0];
  }
  return TF_OK;
}

static tf_code check_div_layout(lookup *k) {
  if (k->total < 0) {
    return tf_status_set(k->st, TF_INVALID_ARGUMENT, "%s: the \"div\" "
                         "strategy needs every shard's row count known",
                         k->what);
  }
  for (int i = 0; i < k->n; i++) {
    int64_t rows = out_shape(k->shards[i])->dims[0];
    int64_t want = tf_layers_shard_rows(k->total, k->n, i);
    if (rows != want || want == 0) {
      return tf_status_set(k->st, TF_INVALID_ARGUMENT, "%s: the \"div\" "
                           "strategy needs %d shards of %" PRId64 " rows in "
                           "all to have %" PRId64 " or %" PRId64 " rows, the "
                           "longer first; shard %d '%s' has %" PRId64,
                           k->what, k->n, k->total, k->total / k->n + 1,
                           k->total / k->n, i,
                           tf_node_name(k->shards[i].node), rows);
    }
  }
  return TF_OK;
}

static tf_code check_lookup(lookup *k, const char *strategy) {
  if (k->ids.node == NULL) {
    return tf_status_set(k->st, TF_INVALID_ARGUMENT, "%s: ids is a NULL "
                         "node", k->what);
  }
  k->idt = tf_node_output_type(k->ids.node, k->ids.index);
  if (k->idt != TF_INT32 && k->idt != TF_INT64) {
    return tf_status_set(k->st, TF_INVALID_ARGUMENT, "%s: ids must be int32 "
                         "or int64, got %s", k->what, tf_dtype_name(k->idt));
  }
  const char *s = strategy ? strategy : "mod";
  if (strcmp(s, "mod") != 0 && strcmp(s, "div") != 0) {
    return tf_status_set(k->st, TF_INVALID_ARGUMENT, "%s: strategy '%s' is "
                         "not supported: use \"mod\" or \"div\"", k->what, s);
  }
  k->div = strcmp(s, "div") == 0;
  TF_TRY(check_shards(k));
  return k->div && k->n > 1 ? check_div_layout(k) : TF_OK;
}

static tf_output op2(lookup *k, const char *op, tf_output a, tf_output b) {
  tf_output in[2] = {a, b};
  return tf__layers_op(k->l, op, NULL, in, 2, NULL, 0, k->st);
}

static tf_output id_const(lookup *k, int64_t v) {
  return tf__layers_scalar(k->l, k->idt, (double)v, k->st);
}

/* The shard of each flat id (int32) and its row in that shard. */
static void assign_ids(lookup *k, tf_output flat, tf_output *part,
                       tf_output *row) {
  if (!k->div) {
    tf_output nc = id_const(k, k->n);
    *part = op2(k, "FloorMod", flat, nc);
    *row = op2(k, "FloorDiv", flat, nc);
  } else { /* TF's "div": ids_per_partition = total / n, extras = total % n */
    int64_t per = k->total / k->n, extras = k->total % k->n;
    tf_output p1 = id_const(k, per + 1), pc = id_const(k, per);
    tf_output shifted = op2(k, "Sub", flat, id_const(k, extras));
    *part = op2(k, "Maximum", op2(k, "FloorDiv", flat, p1),
                op2(k, "FloorDiv", shifted, pc));
    tf_output in[3] = {op2(k, "Less", *part, id_const(k, extras)),
                       op2(k, "FloorMod", flat, p1),
                       op2(k, "FloorMod", shifted, pc)};
    *row = tf__layers_op(k->l, "Select", NULL, in, 3, NULL, 0, k->st);
  }
  if (k->idt != TF_INT32) {
    tf_attr_kv a = {"DstT", tf_attr_type_v(TF_INT32)};
    *part = tf__layers_op(k->l, "Cast", NULL, part, 1, &a, 1, k->st);
  }
}

/* DynamicPartition of data by part into k->n outputs; returns the node. */
static tf_node *partition(lookup *k, tf_output data, tf_output part,
                          const char *name) {
  tf_output in[2] = {data, part};
  tf_attr_kv a = {"num_partitions", tf_attr_int(k->n)};
  return tf__layers_op(k->l, "DynamicPartition", name, in, 2, &a, 1, k->st)
      .node;
}

/* Gather(shard, idx) named name (NULL: "Gather", made unique), colocated
 * with the shard's node and requesting its device. */
static tf_output colocated_gather(lookup *k, tf_output shard, tf_output idx,
                                  const char *name) {
  if (k->st->code != TF_OK) {
    return (tf_output){NULL, 0};
  }
  char buf[256];
  const char *n = name ? name : tf__layers_unique(k->l, "Gather", buf,
                                                  sizeof buf);
  tf_node_builder *b = tf_node_begin(k->l->g, "Gather", n);
  tf_node_add_input(b, shard);
  tf_node_add_input(b, idx);
  tf_node_colocate_with(b, shard.node);
  const char *dev = tf_node_device(shard.node);
  if (dev[0] != '\0') {
    tf_node_set_device(b, dev);
  }
  tf_node *g = tf_node_finish(b, k->st);
  return (tf_output){g, 0};
}

/* Stitches rows[i] back at positions pos[i] and gives the result the
 * shape ids.shape + row shape. */
static tf_output stitch(lookup *k, tf_node *pos, const tf_output *rows) {
  if (k->st->code != TF_OK) {
    return (tf_output){NULL, 0};
  }
  tf_output *idx = tf__xcalloc((size_t)k->n, sizeof *idx);
  for (int i = 0; i < k->n; i++) {
    idx[i] = (tf_output){pos, i};
  }
  tf_node_builder *b = tf_node_begin(k->l->g, "DynamicStitch", "stitch");
  tf_node_add_input_list(b, idx, k->n);
  tf_node_add_input_list(b, rows, k->n);
  free(idx);
  tf_output merged = {tf_node_finish(b, k->st), 0};
  const tf_shape *is = out_shape(k->ids);
  if (merged.node == NULL || is->rank == 1) {
    return merged;
  }
  tf_output begin = tf__layers_ivec(k->l, (int32_t[]){1}, 1, k->st);
  tf_output size = tf__layers_ivec(k->l, (int32_t[]){-1}, 1, k->st);
  tf_output sl[3] = {tf__layers_op(k->l, "Shape", NULL, &merged, 1, NULL, 0,
                                   k->st),
                     begin, size};
  tf_output row = tf__layers_op(k->l, "Slice", NULL, sl, 3, NULL, 0, k->st);
  tf_output cat[2] = {
      tf__layers_op(k->l, "Shape", NULL, &k->ids, 1, NULL, 0, k->st), row};
  tf_output shape = concat0(k->l, cat, 2, NULL, k->st);
  return op2(k, "Reshape", merged, shape);
}

static tf_output sharded(lookup *k) {
  tf_output flat = op2(k, "Reshape", k->ids,
                       tf__layers_ivec(k->l, (int32_t[]){-1}, 1, k->st));
  tf_output part, row;
  assign_ids(k, flat, &part, &row);
  tf_node *rows = partition(k, row, part, "partition_ids");
  tf_output size = tf__layers_op(k->l, "Size", NULL, &flat, 1, NULL, 0, k->st);
  tf_output range[3] = {tf__layers_scalar(k->l, TF_INT32, 0, k->st), size,
                        tf__layers_scalar(k->l, TF_INT32, 1, k->st)};
  tf_output pos = tf__layers_op(k->l, "Range", NULL, range, 3, NULL, 0, k->st);
  tf_node *positions = partition(k, pos, part, "partition_positions");
  if (k->st->code != TF_OK) {
    return (tf_output){NULL, 0};
  }
  tf_output *got = tf__xcalloc((size_t)k->n, sizeof *got);
  for (int i = 0; i < k->n; i++) {
    got[i] = colocated_gather(k, k->shards[i], (tf_output){rows, i}, NULL);
  }
  tf_output out = stitch(k, positions, got);
  free(got);
  return out;
}

tf_code tf_layer_sharded_embedding_lookup(
    tf_layers *l, const tf_output *shards, int n, tf_output ids,
    const char *strategy, const char *name, tf_output *out, tf_status *st) {
  tf_status local;
  STATUS_INIT(st, local);
  *out = (tf_output){NULL, 0};
  lookup k = {.l = l, .shards = shards, .n = n, .ids = ids,
              .what = "sharded embedding_lookup", .st = st};
  TF_TRY(check_lookup(&k, strategy));
  tf__gmark m = tf__graph_mark(l->g);
  if (n == 1) {
    char buf[256];
    const char *nm = name ? name : tf__layers_unique(l, "embedding_lookup",
                                                     buf, sizeof buf);
    *out = colocated_gather(&k, shards[0], ids, nm);
  } else {
    tf_graph_push_scope(l->g, name ? name : "embedding_lookup");
    *out = sharded(&k);
  }
  if (st->code != TF_OK) {
    *out = (tf_output){NULL, 0};
    tf__graph_rollback(l->g, &m);
    return st->code;
  }
  tf__graph_commit(l->g, &m); /* pops the scope */
  return TF_OK;
}
