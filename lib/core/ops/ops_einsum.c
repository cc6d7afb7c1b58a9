/* ops_einsum.c: the Einsum op (TensorFlow's raw op of linalg_ops.cc) and
 * the equation parser of einsum_spec.h, shared with its kernel and its
 * gradient. The shape function parses the equation, checks it against the
 * known input shapes and infers the output shape; a malformed equation
 * fails at graph-build time with the same words the kernel would use. */
#include <stdio.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "lib/core/framework/op_registry.h"
#include "lib/core/ops/einsum_spec.h"

/* Label id of letter c, or -1 when c is not a letter. */
static int label_of(char c) {
  if (c >= 'a' && c <= 'z') {
    return c - 'a';
  }
  if (c >= 'A' && c <= 'Z') {
    return 26 + (c - 'A');
  }
  return -1;
}

static char letter_of(int label) {
  return (char)(label < 26 ? 'a' + label : 'A' + (label - 26));
}

static tf_code eq_error(const char *text, tf_status *st, const char *what) {
  return tf_status_set(st, TF_INVALID_ARGUMENT, "Einsum equation '%s': %s",
                       text, what);
}

/* Parses the term in s[0..len) into *t. */
static tf_code parse_term(const char *text, const char *s, size_t len,
                          tf__einsum_term *t, tf_status *st) {
  char what[160];
  t->n = 0;
  t->has_ell = false;
  for (size_t i = 0; i < len; i++) {
    int e;
    if (s[i] == '.') {
      if (len - i < 3 || s[i + 1] != '.' || s[i + 2] != '.') {
        return eq_error(text, st, "'.' must come as an ellipsis '...'");
      }
      if (t->has_ell) {
        return eq_error(text, st, "more than one ellipsis '...' in a term");
      }
      t->has_ell = true;
      e = TF__EINSUM_ELL;
      i += 2;
    } else if ((e = label_of(s[i])) < 0) {
      snprintf(what, sizeof what, "invalid character '%c' (labels are "
               "letters a-z, A-Z; terms are separated by ',' and '->')", s[i]);
      return eq_error(text, st, what);
    }
    if (e != TF__EINSUM_ELL && t->n - (t->has_ell ? 1 : 0) >= TF_MAX_RANK) {
      return eq_error(text, st, "a term has more than 8 labels");
    }
    t->e[t->n++] = (int8_t)e;
  }
  return TF_OK;
}

/* The implicit output: "..." if any input has one, then the labels that
 * occur once in all inputs together, in label-character (ASCII) order. */
static tf_code implicit_output(tf__einsum_eq *eq, tf_status *st) {
  int count[52] = {0};
  bool ell = false;
  for (int i = 0; i < eq->n_in; i++) {
    for (int j = 0; j < eq->in[i].n; j++) {
      int e = eq->in[i].e[j];
      if (e == TF__EINSUM_ELL) {
        ell = true;
      } else {
        count[e]++;
      }
    }
  }
  tf__einsum_term *o = &eq->out;
  o->n = 0;
  o->has_ell = ell;
  if (ell) {
    o->e[o->n++] = TF__EINSUM_ELL;
  }
  /* ASCII order: 'A'..'Z' (labels 26..51) before 'a'..'z' (0..25). */
  for (int k = 0; k < 52; k++) {
    int label = k < 26 ? 26 + k : k - 26;
    if (count[label] != 1) {
      continue;
    }
    if (o->n - (ell ? 1 : 0) >= TF_MAX_RANK) {
      return eq_error(eq->text, st, "the implicit output would have more "
                      "than 8 labels");
    }
    o->e[o->n++] = (int8_t)label;
  }
  return TF_OK;
}

/* Checks every output label occurs in some input. */
static tf_code check_output_labels(const tf__einsum_eq *eq, tf_status *st) {
  for (int j = 0; j < eq->out.n; j++) {
    int e = eq->out.e[j];
    bool found = e == TF__EINSUM_ELL;
    for (int i = 0; i < eq->n_in && !found; i++) {
      found = memchr(eq->in[i].e, e, (size_t)eq->in[i].n) != NULL;
    }
    if (!found) {
      char what[96];
      snprintf(what, sizeof what, "output label '%c' appears in no input",
               letter_of(e));
      return eq_error(eq->text, st, what);
    }
  }
  return TF_OK;
}

tf_code tf__einsum_parse(const char *text, int n_in, tf__einsum_eq *eq,
                         tf_status *st) {
  memset(eq, 0, sizeof(*eq));
  eq->text = text;
  if (n_in < 1 || n_in > 2) {
    char what[96];
    snprintf(what, sizeof what, "Einsum takes 1 or 2 inputs, got %d", n_in);
    return eq_error(text, st, what);
  }
  const char *arrow = strstr(text, "->");
  if (arrow != NULL && strstr(arrow + 2, "->") != NULL) {
    return eq_error(text, st, "more than one '->'");
  }
  size_t lhs_len = arrow != NULL ? (size_t)(arrow - text) : strlen(text);
  int terms = 0;
  size_t start = 0;
  for (size_t i = 0; i <= lhs_len; i++) {
    if (i < lhs_len && text[i] != ',') {
      continue;
    }
    if (terms == n_in) {
      char what[96];
      snprintf(what, sizeof what, "more input terms than the %d input%s "
               "given", n_in, n_in == 1 ? "" : "s");
      return eq_error(text, st, what);
    }
    TF_TRY(parse_term(text, text + start, i - start, &eq->in[terms++], st));
    start = i + 1;
  }
  if (terms != n_in) {
    char what[96];
    snprintf(what, sizeof what, "%d input term%s for %d inputs", terms,
             terms == 1 ? "" : "s", n_in);
    return eq_error(text, st, what);
  }
  eq->n_in = n_in;
  if (arrow == NULL) {
    return implicit_output(eq, st);
  }
  TF_TRY(parse_term(text, arrow + 2, strlen(arrow + 2), &eq->out, st));
  return check_output_labels(eq, st);
}

void tf__einsum_term_str(const tf__einsum_term *t, char *buf) {
  int k = 0;
  for (int j = 0; j < t->n; j++) {
    if (t->e[j] == TF__EINSUM_ELL) {
      memcpy(buf + k, "...", 3);
      k += 3;
    } else {
      buf[k++] = letter_of(t->e[j]);
    }
  }
  buf[k] = '\0';
}

/* Named labels of term t (entries other than "..."). */
static int named_count(const tf__einsum_term *t) {
  return t->n - (t->has_ell ? 1 : 0);
}

/* Expands term t for n_ell "..." dims (this input's own count e, right
 * aligned) into labels of axes; returns the axis count. */
static int expand_term(const tf__einsum_term *t, int n_ell, int e,
                       int8_t *axes) {
  int k = 0;
  for (int j = 0; j < t->n; j++) {
    if (t->e[j] != TF__EINSUM_ELL) {
      axes[k++] = t->e[j];
      continue;
    }
    for (int q = n_ell - e; q < n_ell; q++) {
      axes[k++] = (int8_t)(TF__EINSUM_ELL_LABEL + q);
    }
  }
  return k;
}

/* Checks input i's rank against its term; *e gets its "..." dims. */
static tf_code check_rank(const tf__einsum_eq *eq, int i, const tf_shape *s,
                          int *e, tf_status *st) {
  const tf__einsum_term *t = &eq->in[i];
  int named = named_count(t);
  if ((!t->has_ell && s->rank != named) || s->rank < named) {
    char sub[40], what[200], sh[128];
    tf__einsum_term_str(t, sub);
    snprintf(what, sizeof what, "input %d has shape %s (rank %d) but its "
             "subscripts '%s' need rank %s%d", i,
             tf_shape_str(s, sh, sizeof sh), (int)s->rank, sub,
             t->has_ell ? "at least " : "", named);
    return eq_error(eq->text, st, what);
  }
  *e = s->rank - named;
  return TF_OK;
}

/* Merges dim v of input i's axis into the size of label; named labels must
 * agree, "..." labels broadcast (1 stretches; -1 is unknown). */
static tf_code merge_size(const tf__einsum_eq *eq, tf__einsum_dims *d,
                          int label, int i, int64_t v, tf_status *st) {
  int64_t *have = &d->size[label];
  bool ell = label >= TF__EINSUM_ELL_LABEL;
  if (*have == -2 || (v != -1 && *have == -1 && !ell)) {
    *have = v;
    return TF_OK;
  }
  if (ell && v == -1 && *have == 1) {
    *have = -1;
    return TF_OK;
  }
  if (v == -1 || *have == v) {
    return TF_OK;
  }
  if (ell) {
    if (*have == 1 || (*have == -1 && v != 1)) {
      *have = v;
    } else if (v != 1 && *have != -1) {
      char what[160];
      snprintf(what, sizeof what, "ellipsis dims do not broadcast: %lld vs "
               "%lld (input %d)", (long long)*have, (long long)v, i);
      return eq_error(eq->text, st, what);
    }
    return TF_OK;
  }
  char what[160];
  snprintf(what, sizeof what, "label '%c' has size %lld and %lld (input %d)",
           letter_of(label), (long long)*have, (long long)v, i);
  return eq_error(eq->text, st, what);
}

/* Labels of the output axes, with "..." as all n_ell broadcast labels. */
static tf_code resolve_output(const tf__einsum_eq *eq, tf__einsum_dims *d,
                              tf_status *st) {
  int named = named_count(&eq->out);
  int rank = named + (eq->out.has_ell ? d->n_ell : 0);
  if (rank > TF_MAX_RANK) {
    return eq_error(eq->text, st, "the output would have more than 8 dims");
  }
  if (!eq->out.has_ell && d->n_ell > 0) {
    char what[160];
    snprintf(what, sizeof what, "the output has no ellipsis '...' for the "
             "%d broadcast dim%s of the inputs' '...'", d->n_ell,
             d->n_ell == 1 ? "" : "s");
    return eq_error(eq->text, st, what);
  }
  d->out_rank = expand_term(&eq->out, d->n_ell, d->n_ell, d->out_axis);
  d->out_shape.rank = d->out_rank;
  for (int a = 0; a < d->out_rank; a++) {
    int label = d->out_axis[a];
    d->use[label] |= 4u;
    d->out_shape.dims[a] = d->size[label] < 0 ? -1 : d->size[label];
  }
  return TF_OK;
}

tf_code tf__einsum_resolve(const tf__einsum_eq *eq, const tf_shape *in,
                           tf__einsum_dims *d, tf_status *st) {
  memset(d, 0, sizeof(*d));
  int e[2] = {0, 0};
  for (int i = 0; i < eq->n_in; i++) {
    TF_TRY(check_rank(eq, i, &in[i], &e[i], st));
    d->n_ell = e[i] > d->n_ell ? e[i] : d->n_ell;
  }
  for (int l = 0; l < TF__EINSUM_LABELS; l++) {
    d->size[l] = -2; /* unused so far */
  }
  for (int i = 0; i < eq->n_in; i++) {
    d->rank[i] = expand_term(&eq->in[i], d->n_ell, e[i], d->axis[i]);
    for (int a = 0; a < d->rank[i]; a++) {
      int label = d->axis[i][a];
      d->use[label] |= 1u << i;
      TF_TRY(merge_size(eq, d, label, i, in[i].dims[a], st));
    }
  }
  for (int l = 0; l < TF__EINSUM_LABELS; l++) {
    if (d->size[l] == -2) {
      d->size[l] = -1;
    }
  }
  return resolve_output(eq, d, st);
}

/* ---- the op -------------------------------------------------------------- */

static tf_code einsum_shape(tf_shape_ctx *ctx) {
  const char *text = NULL;
  tf_status st;
  tf_status_init(&st);
  if (tf_node_attr_get_string(ctx->node, "equation", &text, &st) != TF_OK) {
    return tf_shape_error(ctx, "%s", st.msg);
  }
  tf__einsum_eq eq;
  if (tf__einsum_parse(text, ctx->n_in, &eq, &st) != TF_OK) {
    return tf_shape_error(ctx, "%s", st.msg);
  }
  /* Inputs of unknown rank drop out: the rest still fix the output's
   * rank (when it has no "...") and the dims of the labels they carry. */
  tf__einsum_eq known = eq;
  tf_shape shapes[2];
  known.n_in = 0;
  for (int i = 0; i < ctx->n_in; i++) {
    if (ctx->in[i].rank == TF_UNKNOWN_RANK) {
      if (eq.out.has_ell) {
        ctx->out[0] = tf_shape_unknown();
        return TF_OK;
      }
      continue;
    }
    known.in[known.n_in] = eq.in[i];
    shapes[known.n_in++] = ctx->in[i];
  }
  tf__einsum_dims d;
  if (tf__einsum_resolve(&known, shapes, &d, &st) != TF_OK) {
    return tf_shape_error(ctx, "%s", st.msg);
  }
  ctx->out[0] = d.out_shape;
  return TF_OK;
}

static const tf_op_spec einsum_ops[] = {
    {.name = "Einsum",
     .inputs = {"inputs: N * T"},
     .outputs = {"output: T"},
     .attrs = {"equation: string", "N: int >= 1", "T: type"},
     .shape_fn = einsum_shape,
     .doc = "Tensor contraction over the labels of equation (one or two "
            "inputs; '...' broadcasts, repeated labels take diagonals, "
            "labels not in the output are summed).",
     .deviation = "also takes equations without '->' (NumPy's implicit "
                  "output, which tf.einsum spells out in Python before "
                  "calling the raw op, whose own parser refuses them)"},
};

TF_REGISTER_OPS("einsum", einsum_ops)
