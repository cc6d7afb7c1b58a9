/* op_registry.c: parses op specs (TF REGISTER_OP syntax) into tf_op_def
 * once, on first lookup, and answers lookups by binary search. Families
 * link themselves in from constructors before main; parsing happens later,
 * under pthread_once, so constructor order does not matter. A malformed
 * spec is a programming error and panics naming the op. */
#include <ctype.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/framework/op_registry.h"
#include "lib/core/base/util.h"

static tf_op_family *families;   /* written by constructors only */
static tf_op_def **ops;          /* sorted by name, built once */
static const char **op_families; /* family of ops[i] */
static int n_ops;
static pthread_once_t ops_once = PTHREAD_ONCE_INIT;

void tf__op_register_family(tf_op_family *fam) {
  fam->next = families;
  families = fam;
}

/* ---- small string helpers ---------------------------------------------- */

static char *trim(char *s) {
  while (isspace((unsigned char)*s)) s++;
  size_t n = strlen(s);
  while (n > 0 && isspace((unsigned char)s[n - 1])) s[--n] = '\0';
  return s;
}

/* Splits "a: b" at the first ':'; returns false without one. */
static bool split_colon(char *s, char **name, char **rest) {
  char *c = strchr(s, ':');
  if (c == NULL) return false;
  *c = '\0';
  *name = trim(s);
  *rest = trim(c + 1);
  return **name != '\0';
}

/* ---- argument specs ------------------------------------------------------ */

static void parse_arg(const char *op, const char *spec, tf_arg_def *a) {
  char *s = tf__xstrdup(spec), *name, *rest;
  if (!split_colon(s, &name, &rest)) TF_PANIC("op %s: bad arg spec '%s'", op, spec);
  memset(a, 0, sizeof *a);
  a->name = tf__xstrdup(name);
  char *star = strchr(rest, '*');
  if (star != NULL) {
    *star = '\0';
    a->number_attr = tf__xstrdup(trim(rest));
    rest = trim(star + 1);
  }
  if (strncmp(rest, "Ref(", 4) == 0 && rest[strlen(rest) - 1] == ')') {
    a->is_ref = true;
    rest[strlen(rest) - 1] = '\0';
    rest = trim(rest + 4);
  }
  tf_dtype dt;
  if (tf_dtype_from_name(rest, &dt)) {
    a->fixed_type = dt;
  } else {
    a->type_attr = tf__xstrdup(rest);
  }
  free(s);
}

/* ---- attr specs ---------------------------------------------------------- */

static bool parse_scalar(tf_attr_type t, char *s, void *out) {
  s = trim(s);
  char *end;
  switch (t) {
  case TF_ATTR_INT:
    *(int64_t *)out = strtoll(s, &end, 10);
    return end != s && *trim(end) == '\0';
  case TF_ATTR_FLOAT:
    *(double *)out = strtod(s, &end);
    return end != s && *trim(end) == '\0';
  case TF_ATTR_BOOL:
    if (strcmp(s, "true") == 0) { *(bool *)out = true; return true; }
    if (strcmp(s, "false") == 0) { *(bool *)out = false; return true; }
    return false;
  case TF_ATTR_STRING: {
    size_t n = strlen(s);
    if (n < 2 || (s[0] != '\'' && s[0] != '"') || s[n - 1] != s[0]) return false;
    *(char **)out = tf__xstrndup(s + 1, n - 2);
    return true;
  }
  case TF_ATTR_TYPE:
    return tf_dtype_from_name(s, (tf_dtype *)out);
  default:
    return false;
  }
}

static bool parse_shape(char *s, tf_shape *out) {
  s = trim(s);
  if (strcmp(s, "unknown") == 0) {
    *out = tf_shape_unknown();
    return true;
  }
  size_t n = strlen(s);
  if (n < 2 || s[0] != '[' || s[n - 1] != ']') return false;
  s[n - 1] = '\0';
  int64_t dims[TF_MAX_RANK];
  int rank = 0;
  for (char *tok = strtok(s + 1, ","); tok; tok = strtok(NULL, ",")) {
    if (rank == TF_MAX_RANK || !parse_scalar(TF_ATTR_INT, tok, &dims[rank])) {
      return false;
    }
    rank++;
  }
  *out = tf_shape_make(rank, dims);
  return true;
}

static bool parse_list_default(tf_attr_type t, char *s, tf_attr_value *v) {
  s = trim(s);
  size_t n = strlen(s);
  if (n < 2 || s[0] != '[' || s[n - 1] != ']') return false;
  s[n - 1] = '\0';
  v->is_list = true;
  v->n = 0;
  if (t == TF_ATTR_SHAPE || t == TF_ATTR_TENSOR) {
    /* only the empty list: "shapes: list(shape) = []" */
    return *trim(s + 1) == '\0';
  }
  union { int64_t i[64]; double f[64]; bool b[64]; char *s[64]; tf_dtype t[64]; } tmp;
  for (char *tok = strtok(s + 1, ","); tok; tok = strtok(NULL, ",")) {
    if (v->n == 64) return false;
    void *slot = t == TF_ATTR_INT ? (void *)&tmp.i[v->n]
                 : t == TF_ATTR_FLOAT ? (void *)&tmp.f[v->n]
                 : t == TF_ATTR_BOOL ? (void *)&tmp.b[v->n]
                 : t == TF_ATTR_STRING ? (void *)&tmp.s[v->n]
                                       : (void *)&tmp.t[v->n];
    if (!parse_scalar(t, tok, slot)) return false;
    v->n++;
  }
  v->u.ints = tmp.i; /* every union member starts at the same address */
  tf_attr_value c = tf_attr_value_clone(v);
  if (t == TF_ATTR_STRING) {
    for (int i = 0; i < v->n; i++) free(tmp.s[i]);
  }
  *v = c;
  return true;
}

/* Finds '=' that starts a default (not part of ">="). */
static char *find_default(char *s) {
  for (char *p = s; *p; p++) {
    if (*p == '\'' || *p == '"') {
      char q = *p;
      p = strchr(p + 1, q);
      if (p == NULL) return NULL;
    } else if (*p == '=' && (p == s || p[-1] != '>')) {
      return p;
    }
  }
  return NULL;
}

static tf_attr_type attr_type_named(const char *s) {
  static const struct { const char *n; tf_attr_type t; } names[] = {
      {"int", TF_ATTR_INT},       {"float", TF_ATTR_FLOAT},
      {"bool", TF_ATTR_BOOL},     {"string", TF_ATTR_STRING},
      {"type", TF_ATTR_TYPE},     {"shape", TF_ATTR_SHAPE},
      {"tensor", TF_ATTR_TENSOR}};
  for (size_t i = 0; i < TF_ARRAY_LEN(names); i++) {
    if (strcmp(s, names[i].n) == 0) return names[i].t;
  }
  return TF_ATTR_NONE;
}

/* "{float, double}" or "{'SAME', 'VALID'}" */
static void parse_allowed(const char *op, char *set, tf_attr_def *a) {
  size_t n = strlen(set);
  if (set[n - 1] != '}') TF_PANIC("op %s: bad allowed set for %s", op, a->name);
  set[n - 1] = '\0';
  for (char *tok = strtok(set + 1, ","); tok; tok = strtok(NULL, ",")) {
    tok = trim(tok);
    if (*tok == '\'' || *tok == '"') {
      a->type = TF_ATTR_STRING;
      if (a->n_allowed_strings == TF_OP_MAX_ALLOWED) TF_PANIC("op %s: set too big", op);
      char *str;
      if (!parse_scalar(TF_ATTR_STRING, tok, &str)) TF_PANIC("op %s: bad string %s", op, tok);
      a->allowed_strings[a->n_allowed_strings++] = str;
    } else {
      a->type = TF_ATTR_TYPE;
      if (a->n_allowed_types == TF_OP_MAX_ALLOWED) TF_PANIC("op %s: set too big", op);
      if (!tf_dtype_from_name(tok, &a->allowed_types[a->n_allowed_types++])) {
        TF_PANIC("op %s: unknown dtype '%s' in attr %s", op, tok, a->name);
      }
    }
  }
}

static void parse_attr_type(const char *op, char *ty, tf_attr_def *a) {
  if (*ty == '{') {
    parse_allowed(op, ty, a);
    return;
  }
  char *ge = strstr(ty, ">=");
  if (strncmp(ty, "list(", 5) == 0) {
    /* "list(int) >= 2": the minimum is on the list's length */
    char *close = strrchr(ty, ')');
    if (close == NULL) TF_PANIC("op %s: bad list type for %s", op, a->name);
    *close = '\0';
    a->is_list = true;
    if (ge != NULL) {
      a->has_min = true;
      if (!parse_scalar(TF_ATTR_INT, ge + 2, &a->min)) TF_PANIC("op %s: bad minimum", op);
    }
    ty = trim(ty + 5);
    if (*ty == '{') {
      parse_allowed(op, ty, a);
      return;
    }
    ge = NULL;
  }
  if (ge != NULL) {
    *ge = '\0';
    a->has_min = true;
    if (!parse_scalar(TF_ATTR_INT, ge + 2, &a->min)) TF_PANIC("op %s: bad minimum", op);
    ty = trim(ty);
  }
  a->type = attr_type_named(ty);
  if (a->type == TF_ATTR_NONE) TF_PANIC("op %s: unknown attr type '%s'", op, ty);
}

static void parse_attr(const char *op, const char *spec, tf_attr_def *a) {
  char *s = tf__xstrdup(spec), *name, *rest;
  if (!split_colon(s, &name, &rest)) TF_PANIC("op %s: bad attr spec '%s'", op, spec);
  memset(a, 0, sizeof *a);
  a->name = tf__xstrdup(name);
  char *eq = find_default(rest);
  if (eq != NULL) *eq = '\0';
  parse_attr_type(op, trim(rest), a);
  if (eq != NULL) {
    char *dv = trim(eq + 1);
    tf_attr_value *v = &a->default_value;
    v->type = a->type;
    bool ok = a->is_list ? parse_list_default(a->type, dv, v)
              : a->type == TF_ATTR_SHAPE ? parse_shape(dv, &v->u.shape)
                                         : parse_scalar(a->type, dv, &v->u);
    if (!ok) TF_PANIC("op %s: bad default '%s' for attr %s", op, dv, a->name);
    a->has_default = true;
  }
  free(s);
}

/* ---- registry ------------------------------------------------------------ */

static tf_op_def *parse_spec(const tf_op_spec *spec) {
  tf_op_def *d = tf__xcalloc(1, sizeof *d);
  d->name = spec->name;
  d->spec = spec;
  d->shape_fn = spec->shape_fn;
  d->flags = spec->flags;
  d->doc = spec->doc ? spec->doc : "";
  for (; d->n_inputs < TF_OP_MAX_ARGS && spec->inputs[d->n_inputs]; d->n_inputs++) {
    parse_arg(spec->name, spec->inputs[d->n_inputs], &d->inputs[d->n_inputs]);
  }
  for (; d->n_outputs < TF_OP_MAX_ARGS && spec->outputs[d->n_outputs]; d->n_outputs++) {
    parse_arg(spec->name, spec->outputs[d->n_outputs], &d->outputs[d->n_outputs]);
  }
  for (; d->n_attrs < TF_OP_MAX_ATTRS && spec->attrs[d->n_attrs]; d->n_attrs++) {
    parse_attr(spec->name, spec->attrs[d->n_attrs], &d->attrs[d->n_attrs]);
  }
  /* Every attr an argument names must be declared with the right type; an
   * arg typed by a list(type) attr is a type list. */
  for (int k = 0; k < d->n_inputs + d->n_outputs; k++) {
    tf_arg_def *a = k < d->n_inputs ? &d->inputs[k] : &d->outputs[k - d->n_inputs];
    const tf_attr_def *ta = a->type_attr ? tf_op_find_attr(d, a->type_attr) : NULL;
    if (ta != NULL && ta->type == TF_ATTR_TYPE && ta->is_list) {
      if (a->number_attr != NULL) {
        TF_PANIC("op %s: type-list arg %s cannot also have a length attr",
                 d->name, a->name);
      }
      a->type_list_attr = a->type_attr;
      a->type_attr = NULL;
      continue;
    }
    const tf_attr_def *na = a->number_attr ? tf_op_find_attr(d, a->number_attr) : NULL;
    if (a->type_attr && (ta == NULL || ta->type != TF_ATTR_TYPE || ta->is_list)) {
      TF_PANIC("op %s: arg %s names undeclared type attr %s", d->name, a->name, a->type_attr);
    }
    if (a->number_attr && (na == NULL || na->type != TF_ATTR_INT || na->is_list)) {
      TF_PANIC("op %s: arg %s names undeclared int attr %s", d->name, a->name, a->number_attr);
    }
  }
  return d;
}

static int cmp_def(const void *a, const void *b) {
  return strcmp((*(tf_op_def *const *)a)->name, (*(tf_op_def *const *)b)->name);
}

static void build_registry(void) {
  int n = 0;
  for (tf_op_family *f = families; f; f = f->next) n += (int)f->n;
  ops = tf__xcalloc((size_t)n + 1, sizeof *ops);
  for (tf_op_family *f = families; f; f = f->next) {
    for (size_t i = 0; i < f->n; i++) {
      tf_op_def *d = parse_spec(&f->specs[i]);
      /* the family is recorded below, after sorting */
      ops[n_ops++] = d;
      (void)f->family;
    }
  }
  qsort(ops, (size_t)n_ops, sizeof *ops, cmp_def);
  op_families = tf__xcalloc((size_t)n_ops + 1, sizeof *op_families);
  for (int i = 0; i < n_ops; i++) {
    if (i > 0 && strcmp(ops[i - 1]->name, ops[i]->name) == 0) {
      TF_PANIC("op %s registered twice", ops[i]->name);
    }
    for (tf_op_family *f = families; f; f = f->next) {
      if (ops[i]->spec >= f->specs && ops[i]->spec < f->specs + f->n) {
        op_families[i] = f->family;
      }
    }
  }
}

const tf_op_def *tf_op_lookup(const char *name) {
  pthread_once(&ops_once, build_registry);
  int lo = 0, hi = n_ops - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    int c = strcmp(name, ops[mid]->name);
    if (c == 0) return ops[mid];
    if (c < 0) {
      hi = mid - 1;
    } else {
      lo = mid + 1;
    }
  }
  return NULL;
}

const tf_op_def *const *tf_op_all(int *n) {
  pthread_once(&ops_once, build_registry);
  *n = n_ops;
  return (const tf_op_def *const *)ops;
}

const char *tf_op_family_of(const tf_op_def *op) {
  pthread_once(&ops_once, build_registry);
  for (int i = 0; i < n_ops; i++) {
    if (ops[i] == op) return op_families[i];
  }
  return "";
}

const tf_attr_def *tf_op_find_attr(const tf_op_def *op, const char *name) {
  for (int i = 0; i < op->n_attrs; i++) {
    if (strcmp(op->attrs[i].name, name) == 0) return &op->attrs[i];
  }
  return NULL;
}

/* ---- shape function helpers --------------------------------------------- */

tf_code tf_shape_error(tf_shape_ctx *ctx, const char *fmt, ...) {
  char msg[TF_STATUS_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return tf_status_set(ctx->status, TF_INVALID_ARGUMENT, "node '%s' (%s): %s",
                       tf_node_name(ctx->node), tf_node_op(ctx->node), msg);
}

tf_code tf_shape_fn_unchanged(tf_shape_ctx *ctx) {
  for (int i = 0; i < ctx->n_out; i++) ctx->out[i] = ctx->in[0];
  return TF_OK;
}

tf_code tf_shape_fn_broadcast(tf_shape_ctx *ctx) {
  tf_status tmp;
  if (tf_shape_broadcast(&ctx->in[0], &ctx->in[1], &ctx->out[0], &tmp) != TF_OK) {
    return tf_shape_error(ctx, "%s", tmp.msg);
  }
  return TF_OK;
}

tf_code tf_shape_fn_scalar(tf_shape_ctx *ctx) {
  for (int i = 0; i < ctx->n_out; i++) ctx->out[i] = tf_shape_scalar();
  return TF_OK;
}

bool tf_shape_const_ints(const tf_shape_ctx *ctx, int input, int64_t *v,
                         int max, int *n) {
  if (input >= ctx->n_in || ctx->in_value == NULL) return false;
  const tf_tensor *t = ctx->in_value[input];
  if (t == NULL || (t->dtype != TF_INT32 && t->dtype != TF_INT64) ||
      t->shape.rank > 1 || t->n > max) {
    return false;
  }
  for (int64_t i = 0; i < t->n; i++) v[i] = tf_tensor_get_i64(t, i);
  *n = (int)t->n;
  return true;
}
