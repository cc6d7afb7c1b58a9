/* graph_build.c: adding nodes to a graph, one at a time through a builder
 * or in a batch from name-based defs (import). Both paths end in
 * finish_node, the single place where a node is checked against its op:
 * arity, list lengths, dtypes and type attrs, attr kinds and allowed
 * values, defaults, output dtypes and shape inference. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/graph/algorithm.h"
#include "lib/core/graph/graph_impl.h"
#include "lib/core/graph/signature.h"
#include "lib/core/base/util.h"

typedef struct group {
  int start, count;
  bool is_list;
} group;

/* A node being made: what the builder or a def says about it. */
typedef struct proto {
  const char *op_name;
  const tf_op_def *op;
  char *name;
  char *device;
  group *groups;
  int n_groups;
  tf_output *inputs;
  int n_inputs, cap_inputs;
  tf_node **control;
  int n_control;
  char **attr_names;
  tf_attr_value *attrs; /* owned clones */
  int n_attrs;
  char **coloc;
  int n_coloc;
} proto;

struct tf_node_builder {
  tf_graph *g;
  proto p;
  bool explicit_name;
  char err[256]; /* first usage error, reported at finish */
};

static void proto_fini(proto *p) {
  free(p->name);
  free(p->device);
  free(p->groups);
  free(p->inputs);
  free(p->control);
  for (int i = 0; i < p->n_attrs; i++) {
    free(p->attr_names[i]);
    tf_attr_value_fini(&p->attrs[i]);
  }
  free(p->attr_names);
  free(p->attrs);
  for (int i = 0; i < p->n_coloc; i++) free(p->coloc[i]);
  free(p->coloc);
}

static tf_attr_value *proto_attr(proto *p, const char *name) {
  for (int i = 0; i < p->n_attrs; i++) {
    if (strcmp(p->attr_names[i], name) == 0) return &p->attrs[i];
  }
  return NULL;
}

/* Sets (cloning) or replaces an attr. */
static void proto_set_attr(proto *p, const char *name, const tf_attr_value *v) {
  tf_attr_value *old = proto_attr(p, name);
  if (old != NULL) {
    tf_attr_value_fini(old);
    *old = tf_attr_value_clone(v);
    return;
  }
  p->attr_names = tf__xrealloc(p->attr_names, (size_t)(p->n_attrs + 1) * sizeof(char *));
  p->attrs = tf__xrealloc(p->attrs, (size_t)(p->n_attrs + 1) * sizeof(tf_attr_value));
  p->attr_names[p->n_attrs] = tf__xstrdup(name);
  p->attrs[p->n_attrs] = tf_attr_value_clone(v);
  p->n_attrs++;
}

static void proto_add_inputs(proto *p, const tf_output *in, int n, bool is_list) {
  if (p->n_inputs + n > p->cap_inputs) {
    p->cap_inputs = TF_MAX(p->cap_inputs * 2, p->n_inputs + n + 4);
    p->inputs = tf__xrealloc(p->inputs, (size_t)p->cap_inputs * sizeof *p->inputs);
  }
  p->groups = tf__xrealloc(p->groups, (size_t)(p->n_groups + 1) * sizeof *p->groups);
  p->groups[p->n_groups++] = (group){p->n_inputs, n, is_list};
  if (n > 0) memcpy(p->inputs + p->n_inputs, in, (size_t)n * sizeof *in);
  p->n_inputs += n;
}

/* ---- checking a node against its op ------------------------------------ */

typedef struct in_info {
  const tf_dtype *types;
  const tf_shape *shapes;
  const tf_tensor *const *values;
  const bool *is_ref;          /* whether the source output is Ref(...) */
  const char *const *src_ops;  /* the source's op name, for messages */
} in_info;

#define NODE_ERR(st, code, p, ...)                                             \
  node_err((st), (code), (p), __VA_ARGS__)

__attribute__((format(printf, 4, 5))) static tf_code
node_err(tf_status *st, tf_code code, const proto *p, const char *fmt, ...) {
  char msg[TF_STATUS_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return tf_status_set(st, code, "node '%s' (%s): %s", p->name, p->op_name, msg);
}

/* Maps input groups onto the op's arguments: sets starts[k]. */
static tf_code map_groups(proto *p, int *starts, tf_status *st) {
  const tf_op_def *op = p->op;
  if (p->n_groups != op->n_inputs) {
    return NODE_ERR(st, TF_INVALID_ARGUMENT, p, "expects %d input argument%s, "
                    "got %d", op->n_inputs, op->n_inputs == 1 ? "" : "s",
                    p->n_groups);
  }
  for (int k = 0; k < op->n_inputs; k++) {
    const tf_arg_def *a = &op->inputs[k];
    const group *gr = &p->groups[k];
    starts[k] = gr->start;
    if (a->type_list_attr != NULL) continue; /* checked with the dtypes */
    if (a->number_attr == NULL && (gr->is_list || gr->count != 1)) {
      return NODE_ERR(st, TF_INVALID_ARGUMENT, p, "input '%s' takes one "
                      "tensor, got a list of %d", a->name, gr->count);
    }
    if (a->number_attr != NULL) {
      tf_attr_value nv = tf_attr_int(gr->count);
      tf_attr_value *have = proto_attr(p, a->number_attr);
      if (have != NULL && (have->type != TF_ATTR_INT || have->u.i != gr->count)) {
        return NODE_ERR(st, TF_INVALID_ARGUMENT, p, "input list '%s' has %d "
                        "tensors but attr %s says %lld", a->name, gr->count,
                        a->number_attr, (long long)have->u.i);
      }
      if (have == NULL) proto_set_attr(p, a->number_attr, &nv);
    }
  }
  starts[op->n_inputs] = p->n_inputs;
  return TF_OK;
}

/* A type-list input [start, end): infers its list(type) attr from the
 * inputs' dtypes, or checks them against it position by position. */
static tf_code check_type_list(proto *p, const tf_arg_def *a, int start,
                               int end, const in_info *in, tf_status *st) {
  int count = end - start;
  tf_attr_value *have = proto_attr(p, a->type_list_attr);
  if (have == NULL) {
    tf_attr_value tv = tf_attr_type_list(in->types + start, count);
    proto_set_attr(p, a->type_list_attr, &tv);
    return TF_OK;
  }
  if (have->type != TF_ATTR_TYPE || !have->is_list) {
    return NODE_ERR(st, TF_INVALID_ARGUMENT, p, "attr '%s' (typing input list "
                    "'%s') must be list(type), got %s", a->type_list_attr,
                    a->name, tf_attr_type_name(have->type, have->is_list));
  }
  for (int j = 0; j < TF_MAX(count, have->n); j++) {
    if (j >= count || j >= have->n) {
      return NODE_ERR(st, TF_INVALID_ARGUMENT, p, "input list '%s' has %d "
                      "tensor%s but attr %s lists %d type%s (first mismatch "
                      "at position %d)", a->name, count, count == 1 ? "" : "s",
                      a->type_list_attr, have->n, have->n == 1 ? "" : "s", j);
    }
    tf_dtype dt = in->types[start + j];
    if (dt != have->u.types[j]) {
      const tf_output *src = &p->inputs[start + j];
      return NODE_ERR(st, TF_INVALID_ARGUMENT, p, "input list '%s' position "
                      "%d (from '%s:%d') has type %s, but attr %s says %s",
                      a->name, j, src->node->name, src->index,
                      tf_dtype_name(dt), a->type_list_attr,
                      tf_dtype_name(have->u.types[j]));
    }
  }
  return TF_OK;
}

/* An input declared Ref(T) must be fed by a Ref output; a plain input may
 * be fed by either (a ref is read). */
static tf_code check_refs(const proto *p, const int *starts, const in_info *in,
                          tf_status *st) {
  const tf_op_def *op = p->op;
  for (int k = 0; k < op->n_inputs; k++) {
    if (!op->inputs[k].is_ref) continue;
    for (int i = starts[k]; i < starts[k + 1]; i++) {
      if (in->is_ref[i]) continue;
      return NODE_ERR(st, TF_INVALID_ARGUMENT, p, "input %d ('%s') must be a "
                      "reference (e.g. a variable), but '%s:%d' (%s) is not",
                      i, op->inputs[k].name, p->inputs[i].node->name,
                      p->inputs[i].index, in->src_ops[i]);
    }
  }
  return TF_OK;
}

/* Infers or checks type attrs and fixed types from input dtypes. */
static tf_code check_input_types(proto *p, const int *starts, const in_info *in,
                                 tf_status *st) {
  const tf_op_def *op = p->op;
  for (int k = 0; k < op->n_inputs; k++) {
    const tf_arg_def *a = &op->inputs[k];
    if (a->type_list_attr != NULL) {
      TF_TRY(check_type_list(p, a, starts[k], starts[k + 1], in, st));
      continue;
    }
    for (int i = starts[k]; i < starts[k + 1]; i++) {
      tf_dtype dt = in->types[i];
      tf_dtype want = a->fixed_type;
      if (a->type_attr != NULL) {
        tf_attr_value *have = proto_attr(p, a->type_attr);
        if (have == NULL) {
          tf_attr_value tv = tf_attr_type_v(dt);
          proto_set_attr(p, a->type_attr, &tv);
          continue;
        }
        want = have->type == TF_ATTR_TYPE ? have->u.t : TF_DTYPE_INVALID;
      }
      if (dt != want) {
        return NODE_ERR(st, TF_INVALID_ARGUMENT, p, "input %d ('%s', from "
                        "'%s:%d') has type %s, expected %s%s%s", i, a->name,
                        p->inputs[i].node->name, p->inputs[i].index,
                        tf_dtype_name(dt), tf_dtype_name(want),
                        a->type_attr ? " as attr " : "",
                        a->type_attr ? a->type_attr : "");
      }
    }
  }
  return TF_OK;
}

static bool type_allowed(const tf_attr_def *d, tf_dtype t) {
  if (d->n_allowed_types == 0) return tf_dtype_is_valid(t);
  for (int i = 0; i < d->n_allowed_types; i++) {
    if (d->allowed_types[i] == t) return true;
  }
  return false;
}

static tf_code check_attr_value(const proto *p, const tf_attr_def *d,
                                const tf_attr_value *v, tf_status *st) {
  char buf[256];
  if (v->type != d->type || v->is_list != d->is_list) {
    return NODE_ERR(st, TF_INVALID_ARGUMENT, p, "attr '%s' must be %s, got %s",
                    d->name, tf_attr_type_name(d->type, d->is_list),
                    tf_attr_type_name(v->type, v->is_list));
  }
  int n = v->is_list ? v->n : 1;
  if (v->is_list && d->has_min && v->n < d->min) {
    return NODE_ERR(st, TF_INVALID_ARGUMENT, p, "attr '%s' has %d elements, "
                    "at least %lld required", d->name, v->n, (long long)d->min);
  }
  for (int i = 0; i < n; i++) {
    if (d->type == TF_ATTR_TYPE) {
      tf_dtype t = v->is_list ? v->u.types[i] : v->u.t;
      if (!type_allowed(d, t)) {
        return NODE_ERR(st, TF_INVALID_ARGUMENT, p, "attr '%s' = %s is not an "
                        "allowed type", d->name, tf_dtype_name(t));
      }
    } else if (d->type == TF_ATTR_STRING && d->n_allowed_strings > 0) {
      const char *s = v->is_list ? v->u.strs[i] : v->u.s;
      bool ok = false;
      for (int j = 0; j < d->n_allowed_strings; j++) {
        ok = ok || strcmp(s, d->allowed_strings[j]) == 0;
      }
      if (!ok) {
        return NODE_ERR(st, TF_INVALID_ARGUMENT, p, "attr '%s' = '%s' is not "
                        "one of the allowed values", d->name, s);
      }
    } else if (d->type == TF_ATTR_INT && d->has_min && !v->is_list) {
      int64_t x = v->is_list ? v->u.ints[i] : v->u.i;
      if (x < d->min) {
        return NODE_ERR(st, TF_INVALID_ARGUMENT, p, "attr '%s' = %lld must be "
                        ">= %lld", d->name, (long long)x, (long long)d->min);
      }
    }
  }
  if (d->type == TF_ATTR_TENSOR && !v->is_list && v->u.tensor == NULL) {
    return NODE_ERR(st, TF_INVALID_ARGUMENT, p, "attr '%s' holds no tensor (%s)",
                    d->name, tf_attr_value_str(v, buf, sizeof buf));
  }
  return TF_OK;
}

/* Fills defaults, rejects unknown and missing attrs, checks values. */
static tf_code check_attrs(proto *p, tf_status *st) {
  const tf_op_def *op = p->op;
  for (int i = 0; i < p->n_attrs; i++) {
    if (p->attr_names[i][0] == '_') continue; /* internal: "_class" etc. */
    const tf_attr_def *d = tf_op_find_attr(op, p->attr_names[i]);
    if (d == NULL) {
      return NODE_ERR(st, TF_INVALID_ARGUMENT, p, "unknown attr '%s'",
                      p->attr_names[i]);
    }
    TF_TRY(check_attr_value(p, d, &p->attrs[i], st));
  }
  for (int k = 0; k < op->n_attrs; k++) {
    const tf_attr_def *d = &op->attrs[k];
    if (proto_attr(p, d->name) != NULL) continue;
    if (!d->has_default) {
      return NODE_ERR(st, TF_INVALID_ARGUMENT, p, "missing attr '%s' (%s)",
                      d->name, tf_attr_type_name(d->type, d->is_list));
    }
    proto_set_attr(p, d->name, &d->default_value);
  }
  return TF_OK;
}

/* Output count and dtypes from attrs alone. */
static tf_code compute_outputs(proto *p, int *out_start, tf_dtype **types,
                               tf_status *st) {
  const tf_op_def *op = p->op;
  int total = 0;
  for (int k = 0; k < op->n_outputs; k++) {
    const tf_arg_def *a = &op->outputs[k];
    out_start[k] = total;
    int64_t count = 1;
    if (a->type_list_attr != NULL) {
      const tf_attr_value *lv = proto_attr(p, a->type_list_attr);
      if (lv == NULL || lv->type != TF_ATTR_TYPE || !lv->is_list) {
        return NODE_ERR(st, TF_INVALID_ARGUMENT, p, "output list '%s' needs "
                        "attr %s, which is missing or not a list(type)",
                        a->name, a->type_list_attr);
      }
      count = lv->n;
    } else if (a->number_attr != NULL) {
      const tf_attr_value *nv = proto_attr(p, a->number_attr);
      count = nv ? nv->u.i : -1;
      if (count < 0 || count > 1000000) {
        return NODE_ERR(st, TF_INVALID_ARGUMENT, p, "output list '%s' length "
                        "attr %s = %lld is out of range", a->name,
                        a->number_attr, (long long)count);
      }
    }
    total += (int)count;
  }
  out_start[op->n_outputs] = total;
  for (int k = 0; k < op->n_outputs; k++) {
    const tf_arg_def *a = &op->outputs[k];
    const tf_attr_value *tv = a->type_attr ? proto_attr(p, a->type_attr) : NULL;
    if (a->type_attr != NULL && (tv == NULL || tv->type != TF_ATTR_TYPE || tv->is_list)) {
      return NODE_ERR(st, TF_INVALID_ARGUMENT, p, "output '%s' needs type "
                      "attr %s, which is missing or not a type", a->name,
                      a->type_attr);
    }
  }
  *types = tf__xcalloc((size_t)(total ? total : 1), sizeof **types);
  for (int k = 0; k < op->n_outputs; k++) {
    const tf_arg_def *a = &op->outputs[k];
    tf_dtype dt = a->fixed_type;
    if (a->type_attr != NULL) dt = proto_attr(p, a->type_attr)->u.t;
    const tf_attr_value *lv = a->type_list_attr ? proto_attr(p, a->type_list_attr) : NULL;
    for (int i = out_start[k]; i < out_start[k + 1]; i++) {
      (*types)[i] = lv ? lv->u.types[i - out_start[k]] : dt;
    }
  }
  return TF_OK;
}

static int cmp_attr_idx(const void *a, const void *b, void *names) {
  char **n = names;
  return strcmp(n[*(const int *)a], n[*(const int *)b]);
}

/* Moves p's attrs into n sorted by name. */
static void take_attrs(proto *p, tf_node *n) {
  int *idx = tf__xcalloc((size_t)(p->n_attrs ? p->n_attrs : 1), sizeof *idx);
  for (int i = 0; i < p->n_attrs; i++) idx[i] = i;
  qsort_r(idx, (size_t)p->n_attrs, sizeof *idx, cmp_attr_idx, p->attr_names);
  n->n_attrs = p->n_attrs;
  n->attr_names = tf__xcalloc((size_t)(p->n_attrs ? p->n_attrs : 1), sizeof(char *));
  n->attrs = tf__xcalloc((size_t)(p->n_attrs ? p->n_attrs : 1), sizeof(tf_attr_value));
  for (int i = 0; i < p->n_attrs; i++) {
    n->attr_names[i] = p->attr_names[idx[i]];
    n->attrs[i] = p->attrs[idx[i]];
  }
  free(idx);
  free(p->attr_names);
  free(p->attrs);
  p->attr_names = NULL;
  p->attrs = NULL;
  p->n_attrs = 0;
}

static void apply_colocation(proto *p) {
  if (p->n_coloc == 0) return;
  tf_attr_value v = tf_attr_string_list((const char *const *)p->coloc, p->n_coloc);
  proto_set_attr(p, "_class", &v);
}

/* Checks p and fills n (allocated by the caller, name already set). */
static tf_code finish_node(proto *p, tf_node *n, const in_info *in,
                           tf_status *st) {
  if (p->op == NULL) {
    return NODE_ERR(st, TF_NOT_FOUND, p, "op type '%s' is not registered",
                    p->op_name);
  }
  int starts[TF_OP_MAX_ARGS + 1];
  TF_TRY(map_groups(p, starts, st));
  TF_TRY(check_input_types(p, starts, in, st));
  TF_TRY(check_refs(p, starts, in, st));
  apply_colocation(p);
  TF_TRY(check_attrs(p, st));
  tf_dtype *out_types;
  TF_TRY(compute_outputs(p, n->out_start, &out_types, st));
  n->op = p->op;
  memcpy(n->in_start, starts, sizeof starts);
  n->n_outputs = n->out_start[p->op->n_outputs];
  n->out_types = out_types;
  n->out_shapes = tf__xcalloc((size_t)(n->n_outputs ? n->n_outputs : 1), sizeof(tf_shape));
  for (int i = 0; i < n->n_outputs; i++) n->out_shapes[i] = tf_shape_unknown();
  n->device = p->device ? p->device : tf__xstrdup("");
  p->device = NULL;
  n->n_inputs = p->n_inputs;
  n->inputs = tf__xcalloc((size_t)(p->n_inputs ? p->n_inputs : 1), sizeof(tf_output));
  if (p->n_inputs) memcpy(n->inputs, p->inputs, (size_t)p->n_inputs * sizeof(tf_output));
  n->in_types = tf__xcalloc((size_t)(p->n_inputs ? p->n_inputs : 1), sizeof(tf_dtype));
  if (p->n_inputs) memcpy(n->in_types, in->types, (size_t)p->n_inputs * sizeof(tf_dtype));
  n->n_control = p->n_control;
  n->control = tf__xcalloc((size_t)(p->n_control ? p->n_control : 1), sizeof(tf_node *));
  if (p->n_control) memcpy(n->control, p->control, (size_t)p->n_control * sizeof(tf_node *));
  take_attrs(p, n);
  if (p->op->shape_fn == NULL) return TF_OK;
  tf_shape_ctx sc = {.node = n, .n_in = n->n_inputs, .in = in->shapes,
                     .in_value = in->values, .n_out = n->n_outputs,
                     .out = n->out_shapes, .status = st};
  return p->op->shape_fn(&sc);
}

/* Per-input facts about the sources, owned by the caller of finish_node. */
typedef struct in_bufs {
  tf_dtype *types;
  tf_shape *shapes;
  const tf_tensor **values;
  bool *is_ref;
  const char **src_ops;
} in_bufs;

static in_info in_bufs_new(in_bufs *b, int n) {
  size_t m = (size_t)(n ? n : 1);
  b->types = tf__xcalloc(m, sizeof *b->types);
  b->shapes = tf__xcalloc(m, sizeof *b->shapes);
  b->values = tf__xcalloc(m, sizeof *b->values);
  b->is_ref = tf__xcalloc(m, sizeof *b->is_ref);
  b->src_ops = tf__xcalloc(m, sizeof *b->src_ops);
  return (in_info){b->types, b->shapes, b->values, b->is_ref, b->src_ops};
}

static void in_bufs_free(in_bufs *b) {
  free(b->types);
  free(b->shapes);
  free(b->values);
  free(b->is_ref);
  free(b->src_ops);
}

/* A Const source's value (for shape functions), else NULL. */
static const tf_tensor *const_value(const tf_node *src) {
  if (src->op == NULL || strcmp(src->op->name, "Const") != 0) return NULL;
  const tf_attr_value *v = tf_node_attr(src, "value");
  return v != NULL && v->type == TF_ATTR_TENSOR && !v->is_list ? v->u.tensor : NULL;
}

/* Gathers what finish_node needs to know about p's (finished) sources. */
static void gather_inputs(const proto *p, in_bufs *b) {
  for (int i = 0; i < p->n_inputs; i++) {
    const tf_node *src = p->inputs[i].node;
    int port = p->inputs[i].index;
    b->types[i] = src->out_types ? src->out_types[port] : TF_DTYPE_INVALID;
    b->shapes[i] = src->out_shapes ? src->out_shapes[port] : tf_shape_unknown();
    b->values[i] = const_value(src);
    b->is_ref[i] = tf__node_output_is_ref(src, port);
    b->src_ops[i] = src->op ? src->op->name : "?";
  }
}

static tf_code finish_with_inputs(proto *p, tf_node *n, tf_status *st) {
  in_bufs b;
  in_info in = in_bufs_new(&b, p->n_inputs);
  gather_inputs(p, &b);
  tf_code rc = finish_node(p, n, &in, st);
  in_bufs_free(&b);
  return rc;
}

/* The op argument (index into args) that flat position i falls in. */
static int arg_of(const int *start, int n_args, int i) {
  for (int k = 0; k < n_args; k++) {
    if (i >= start[k] && i < start[k + 1]) return k;
  }
  return -1;
}

bool tf__node_output_is_ref(const tf_node *n, int port) {
  if (n == NULL || n->op == NULL) return false;
  int k = arg_of(n->out_start, n->op->n_outputs, port);
  return k >= 0 && n->op->outputs[k].is_ref;
}

bool tf__node_input_is_ref(const tf_node *n, int i) {
  if (n == NULL || n->op == NULL) return false;
  int k = arg_of(n->in_start, n->op->n_inputs, i);
  return k >= 0 && n->op->inputs[k].is_ref;
}

/* ---- the builder -------------------------------------------------------- */

tf_node_builder *tf_node_begin(tf_graph *g, const char *op, const char *name) {
  tf_node_builder *b = tf__xcalloc(1, sizeof *b);
  b->g = g;
  b->p.op = tf_op_lookup(op);
  b->p.op_name = b->p.op ? b->p.op->name : NULL;
  if (b->p.op_name == NULL) {
    snprintf(b->err, sizeof b->err, "op type '%s' is not registered", op);
    b->p.op_name = "?";
  }
  b->explicit_name = name != NULL;
  b->p.name = name ? tf__xasprintf("%s%s", tf__graph_scope(g), name)
                   : tf__xstrdup(op);
  return b;
}

void tf_node_add_input(tf_node_builder *b, tf_output in) {
  if (in.node != NULL && b->g->input_hook != NULL) {
    in = b->g->input_hook(b->g->input_hook_arg, in);
  }
  if (in.node == NULL && b->err[0] == '\0') {
    snprintf(b->err, sizeof b->err, "input %d is a NULL node", b->p.n_inputs);
  }
  proto_add_inputs(&b->p, &in, 1, false);
}

void tf_node_add_input_list(tf_node_builder *b, const tf_output *in, int n) {
  for (int i = 0; i < n; i++) {
    if (in[i].node == NULL && b->err[0] == '\0') {
      snprintf(b->err, sizeof b->err, "input %d is a NULL node", b->p.n_inputs + i);
    }
  }
  if (b->g->input_hook != NULL && n > 0) {
    tf_output *m = tf__xmalloc((size_t)n * sizeof *m);
    for (int i = 0; i < n; i++) {
      m[i] = in[i].node ? b->g->input_hook(b->g->input_hook_arg, in[i]) : in[i];
    }
    proto_add_inputs(&b->p, m, n, true);
    free(m);
    return;
  }
  proto_add_inputs(&b->p, in, n, true);
}

void tf_node_add_control_input(tf_node_builder *b, tf_node *n) {
  if (n == NULL) {
    if (b->err[0] == '\0') snprintf(b->err, sizeof b->err, "NULL control input");
    return;
  }
  b->p.control = tf__xrealloc(b->p.control, (size_t)(b->p.n_control + 1) * sizeof(tf_node *));
  b->p.control[b->p.n_control++] = n;
}

void tf_node_set_attr(tf_node_builder *b, const char *name, tf_attr_value v) {
  proto_set_attr(&b->p, name, &v);
}

void tf_node_set_device(tf_node_builder *b, const char *device) {
  free(b->p.device);
  b->p.device = tf__xstrdup(device ? device : "");
}

void tf_node_colocate_with(tf_node_builder *b, const tf_node *n) {
  b->p.coloc = tf__xrealloc(b->p.coloc, (size_t)(b->p.n_coloc + 1) * sizeof(char *));
  b->p.coloc[b->p.n_coloc++] = tf__xasprintf("loc:@%s", n->name);
}

void tf_node_abandon(tf_node_builder *b) {
  if (b == NULL) return;
  proto_fini(&b->p);
  free(b);
}

tf_node *tf_node_finish(tf_node_builder *b, tf_status *st) {
  tf_graph *g = b->g;
  proto *p = &b->p;
  tf_node *n = NULL;
  if (b->err[0] != '\0') {
    NODE_ERR(st, b->p.op ? TF_INVALID_ARGUMENT : TF_NOT_FOUND, p, "%s", b->err);
    goto fail;
  }
  if (b->explicit_name) {
    if (tf_graph_find(g, p->name) != NULL) {
      NODE_ERR(st, TF_ALREADY_EXISTS, p, "a node with this name already "
               "exists in the graph");
      goto fail;
    }
  }
  n = tf__xcalloc(1, sizeof *n);
  n->name = b->explicit_name ? tf__xstrdup(p->name) : NULL;
  if (n->name == NULL) {
    char *u = tf__xasprintf("%s", p->name);
    char buf[512];
    /* unique_full expects a base relative to the scope */
    tf_graph_unique_name(g, u, buf, sizeof buf);
    free(u);
    n->name = tf__xstrdup(buf);
    free(p->name);
    p->name = tf__xstrdup(buf);
  }
  char why[200];
  if (!tf__node_name_valid(n->name, strlen(n->name), g->internal, why, sizeof why)) {
    NODE_ERR(st, TF_INVALID_ARGUMENT, p, "invalid node name: %s", why);
    goto fail;
  }
  if (finish_with_inputs(p, n, st) != TF_OK) goto fail;
  tf__graph_add_node(g, n);
  proto_fini(p);
  free(b);
  return n;
fail:
  tf__node_free(n);
  proto_fini(p);
  free(b);
  return NULL;
}

/* ---- import from name-based defs --------------------------------------- */

typedef struct ref {
  int target;       /* index in the batch, or -1 for a node already in g */
  tf_node *existing;
  int port;         /* -1 for a control input */
} ref;

/* Parses "name", "name:port" or "^name" against g and the batch. */
static tf_code resolve_ref(const tf_graph *g, const tf__strmap *batch,
                           const char *node_name, const char *s, ref *r,
                           tf_status *st) {
  bool control = s[0] == '^';
  const char *nm = control ? s + 1 : s;
  size_t len = strlen(nm);
  r->port = -1;
  const char *bad = control ? NULL : tf__tensor_name_split(nm, &len, &r->port);
  if (bad != NULL) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "node '%s': bad input "
                         "'%s': %s (expected 'name', 'name:port' or '^name')",
                         node_name, s, bad);
  }
  char *key = tf__xstrndup(nm, len);
  bool found;
  void *bi = tf__strmap_get(batch, key, &found);
  r->target = found ? (int)(intptr_t)bi : -1;
  r->existing = found ? NULL : tf_graph_find(g, key);
  free(key);
  if (!found && r->existing == NULL) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "node '%s': input '%s' "
                         "names a node that does not exist", node_name, s);
  }
  return TF_OK;
}

typedef struct batch {
  int n;
  proto *protos;
  tf_node **nodes;
  ref **refs;     /* refs[i]: one per def input, in def order */
  int *n_refs;
  tf__strmap names;
} batch;

static void batch_fini(batch *b, bool free_nodes) {
  for (int i = 0; i < b->n; i++) {
    proto_fini(&b->protos[i]);
    if (free_nodes) tf__node_free(b->nodes[i]);
    free(b->refs[i]);
  }
  free(b->protos);
  free(b->nodes);
  free(b->refs);
  free(b->n_refs);
  tf__strmap_fini(&b->names);
}

/* Creates protos and empty nodes; checks names; resolves input refs. */
static tf_code batch_prepare(tf_graph *g, const tf_node_def *defs, batch *b,
                             tf_status *st) {
  for (int i = 0; i < b->n; i++) {
    const tf_node_def *d = &defs[i];
    proto *p = &b->protos[i];
    p->op_name = d->op ? d->op : "";
    p->op = tf_op_lookup(p->op_name);
    p->name = tf__xstrdup(d->name ? d->name : "");
    if (d->device && d->device[0]) p->device = tf__xstrdup(d->device);
    for (int k = 0; k < d->n_attrs; k++) proto_set_attr(p, d->attrs[k].name, &d->attrs[k].value);
    b->nodes[i] = tf__xcalloc(1, sizeof(tf_node));
    b->nodes[i]->name = tf__xstrdup(p->name);
    char why[200];
    if (!tf__node_name_valid(p->name, strlen(p->name), g->internal, why, sizeof why)) {
      return tf_status_set(st, TF_INVALID_ARGUMENT, "node %d has an invalid "
                           "name '%s': %s", i, p->name, why);
    }
    bool dup;
    tf__strmap_get(&b->names, p->name, &dup);
    if (dup || tf_graph_find(g, p->name)) {
      return NODE_ERR(st, TF_ALREADY_EXISTS, p, "duplicate node name");
    }
    tf__strmap_put(&b->names, p->name, (void *)(intptr_t)i);
    if (p->op == NULL) {
      return NODE_ERR(st, TF_NOT_FOUND, p, "op type '%s' is not registered",
                      p->op_name);
    }
  }
  for (int i = 0; i < b->n; i++) {
    const tf_node_def *d = &defs[i];
    b->n_refs[i] = d->n_inputs;
    b->refs[i] = tf__xcalloc((size_t)(d->n_inputs ? d->n_inputs : 1), sizeof(ref));
    for (int k = 0; k < d->n_inputs; k++) {
      if (d->inputs[k] == NULL) {
        return NODE_ERR(st, TF_INVALID_ARGUMENT, &b->protos[i], "input %d is "
                        "missing", k);
      }
      TF_TRY(resolve_ref(g, &b->names, d->name, d->inputs[k], &b->refs[i][k], st));
    }
  }
  return TF_OK;
}

/* How many data inputs arg a takes according to p's attrs: 1 for a single
 * tensor, the length attr or the type list's length for lists, -1 when a
 * list's attr is not given (or unusable). */
static int arg_count(proto *p, const tf_arg_def *a, int n_data) {
  if (a->type_list_attr != NULL) {
    tf_attr_value *v = proto_attr(p, a->type_list_attr);
    bool ok = v != NULL && v->type == TF_ATTR_TYPE && v->is_list && v->n <= n_data;
    return ok ? v->n : -1;
  }
  if (a->number_attr == NULL) return 1;
  tf_attr_value *v = proto_attr(p, a->number_attr);
  bool ok = v != NULL && v->type == TF_ATTR_INT && !v->is_list && v->u.i >= 0 &&
            v->u.i <= n_data;
  return ok ? (int)v->u.i : -1;
}

/* Splits a def's flat data inputs into per-argument groups. */
static tf_code group_inputs(proto *p, int n_data, tf_status *st) {
  const tf_op_def *op = p->op;
  int fixed = 0, lists_unknown = 0;
  for (int k = 0; k < op->n_inputs; k++) {
    int c = arg_count(p, &op->inputs[k], n_data);
    if (c >= 0) {
      fixed += c;
    } else {
      lists_unknown++;
    }
  }
  if (lists_unknown > 1 || fixed > n_data || (lists_unknown == 0 && fixed != n_data)) {
    return NODE_ERR(st, TF_INVALID_ARGUMENT, p, "has %d data inputs, which "
                    "do not match the op's %d input arguments", n_data,
                    op->n_inputs);
  }
  int at = 0;
  for (int k = 0; k < op->n_inputs; k++) {
    const tf_arg_def *a = &op->inputs[k];
    int count = arg_count(p, a, n_data);
    if (count < 0) count = n_data - fixed;
    bool is_list = a->number_attr != NULL || a->type_list_attr != NULL;
    p->groups = tf__xrealloc(p->groups, (size_t)(p->n_groups + 1) * sizeof(group));
    p->groups[p->n_groups++] = (group){at, count, is_list};
    at += count;
  }
  return TF_OK;
}

/* Dtype of a back edge from a batch node not yet finished (NextIteration):
 * computed from that node's attrs alone. */
static tf_dtype pending_output_type(proto *src, int port) {
  int starts[TF_OP_MAX_ARGS + 1];
  tf_dtype *types = NULL;
  tf_status tmp;
  if (compute_outputs(src, starts, &types, &tmp) != TF_OK) return TF_DTYPE_INVALID;
  tf_dtype dt = port < starts[src->op->n_outputs] ? types[port] : TF_DTYPE_INVALID;
  free(types);
  return dt;
}

/* Whether output port of a batch node not yet finished is a ref. */
static bool pending_output_is_ref(proto *src, int port) {
  int starts[TF_OP_MAX_ARGS + 1];
  tf_dtype *types = NULL;
  tf_status tmp;
  if (compute_outputs(src, starts, &types, &tmp) != TF_OK) return false;
  free(types);
  int k = arg_of(starts, src->op->n_outputs, port);
  return k >= 0 && src->op->outputs[k].is_ref;
}

/* Fills ib, outs and p's control inputs from batch node i's refs (its data
 * inputs come first, then its control inputs). */
static tf_code batch_node_inputs(batch *b, int i, tf_output *outs, in_bufs *ib,
                                 tf_status *st) {
  proto *p = &b->protos[i];
  const ref *rs = b->refs[i];
  for (int k = 0; k < b->n_refs[i]; k++) {
    tf_node *src = rs[k].target >= 0 ? b->nodes[rs[k].target] : rs[k].existing;
    if (rs[k].port < 0) {
      p->control = tf__xrealloc(p->control, (size_t)(p->n_control + 1) * sizeof(tf_node *));
      p->control[p->n_control++] = src;
      continue;
    }
    outs[k] = (tf_output){src, rs[k].port};
    bool done = src->op != NULL;
    if (done && rs[k].port >= src->n_outputs) {
      return NODE_ERR(st, TF_INVALID_ARGUMENT, p, "input %d asks for output %d "
                      "of '%s', which has %d outputs", k, rs[k].port, src->name,
                      src->n_outputs);
    }
    proto *pending = done ? NULL : &b->protos[rs[k].target];
    ib->types[k] = done ? src->out_types[rs[k].port]
                        : pending_output_type(pending, rs[k].port);
    ib->shapes[k] = done ? src->out_shapes[rs[k].port] : tf_shape_unknown();
    ib->values[k] = const_value(src);
    ib->is_ref[k] = done ? tf__node_output_is_ref(src, rs[k].port)
                         : pending_output_is_ref(pending, rs[k].port);
    ib->src_ops[k] = done ? src->op->name : pending->op_name;
    if (!done && ib->types[k] == TF_DTYPE_INVALID) {
      return NODE_ERR(st, TF_INVALID_ARGUMENT, p, "cannot infer the type of "
                      "back edge input %d from '%s'", k, src->name);
    }
  }
  return TF_OK;
}

static tf_code finish_batch_node(batch *b, int i, tf_status *st) {
  proto *p = &b->protos[i];
  int n_data = 0;
  for (int k = 0; k < b->n_refs[i]; k++) {
    if (b->refs[i][k].port < 0) continue;
    if (n_data != k) {
      return NODE_ERR(st, TF_INVALID_ARGUMENT, p, "control input '^...' "
                      "must come after all data inputs");
    }
    n_data++;
  }
  tf_output *outs = tf__xcalloc((size_t)(n_data ? n_data : 1), sizeof *outs);
  in_bufs ib;
  in_info in = in_bufs_new(&ib, n_data);
  tf_code rc = batch_node_inputs(b, i, outs, &ib, st);
  if (rc == TF_OK) {
    p->n_inputs = 0;
    proto_add_inputs(p, outs, n_data, true); /* one group; regrouped below */
    p->n_groups = 0;
    rc = group_inputs(p, n_data, st);
  }
  if (rc == TF_OK) rc = finish_node(p, b->nodes[i], &in, st);
  free(outs);
  in_bufs_free(&ib);
  return rc;
}

/* Topological order over the batch (tf__topo_order: ties go to the
 * earlier def), treating edges out of NextIteration as back edges; fails
 * naming a node on a cycle otherwise. */
static bool is_back_edge_src(const batch *b, int t) {
  return b->protos[t].op != NULL && (b->protos[t].op->flags & TF_OP_BACK_EDGE);
}

static tf_code batch_order(batch *b, int *order, tf_status *st) {
  int n_edges = 0;
  for (int i = 0; i < b->n; i++) n_edges += b->n_refs[i];
  tf__edge *edges = tf__xcalloc((size_t)n_edges + 1, sizeof *edges);
  n_edges = 0;
  for (int i = 0; i < b->n; i++) {
    for (int k = 0; k < b->n_refs[i]; k++) {
      int t = b->refs[i][k].target;
      if (t >= 0 && !is_back_edge_src(b, t)) edges[n_edges++] = (tf__edge){t, i};
    }
  }
  int bad = tf__topo_order(b->n, edges, n_edges, order);
  free(edges);
  if (bad >= 0) {
    return NODE_ERR(st, TF_INVALID_ARGUMENT, &b->protos[bad], "is on a cycle "
                    "that does not pass through a NextIteration node");
  }
  return TF_OK;
}

tf_code tf_graph_import(tf_graph *g, const tf_node_def *defs, int n,
                        tf_status *st) {
  if (n < 0) return tf_status_set(st, TF_INVALID_ARGUMENT, "negative node count");
  batch b = {.n = n};
  b.protos = tf__xcalloc((size_t)n + 1, sizeof *b.protos);
  b.nodes = tf__xcalloc((size_t)n + 1, sizeof *b.nodes);
  b.refs = tf__xcalloc((size_t)n + 1, sizeof *b.refs);
  b.n_refs = tf__xcalloc((size_t)n + 1, sizeof *b.n_refs);
  tf__strmap_init(&b.names);
  int *order = tf__xcalloc((size_t)n + 1, sizeof *order);
  tf_code rc = batch_prepare(g, defs, &b, st);
  if (rc == TF_OK) rc = batch_order(&b, order, st);
  for (int j = 0; j < n && rc == TF_OK; j++) rc = finish_batch_node(&b, order[j], st);
  if (rc == TF_OK) {
    /* in that order, so ids stay topological (the executor relies on it) */
    for (int j = 0; j < n; j++) tf__graph_add_node(g, b.nodes[order[j]]);
  }
  free(order);
  batch_fini(&b, rc != TF_OK);
  return rc;
}
