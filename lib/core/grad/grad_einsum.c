/* grad_einsum.c: the gradient of Einsum, after TensorFlow's _EinsumGrad
 * (python/ops/linalg_grad.py), for every equation the kernel runs.
 *
 * One input x with subscripts I and output O: dx = Einsum("O->I")(dy), the
 * output spreading dy back (repeated labels of I fill a diagonal). Two
 * inputs x (subscripts I), y (J): dx = Einsum("O,J->L")(dy, y), L being I
 * less the labels only x has and the output lacks (those x summed out);
 * likewise dy_y. Where x summed labels out, the gradient is broadcast back
 * along them: TF reshapes and uses BroadcastTo; this file multiplies by
 * OnesLike(x) in an Einsum("L,I->I"), the same values, which also works
 * when x's shape is known only at run time. When y or the output has
 * "..." its dims may broadcast against x's: as in TF, the gradient is
 * formed over the full broadcast dims and summed back to x's own
 * (BroadcastGradientArgs when the shapes are not static). */
#include <stdio.h>
#include <string.h>

#include "lib/core/base/util.h"
#include "lib/core/graph/grad_registry.h"
#include "lib/core/ops/einsum_spec.h"

/* Einsum(eq) of in[0..n). */
static tf_output einsum(tf_grad_ctx *ctx, const char *eq, const tf_output *in,
                        int n) {
  tf_attr_kv kv = {"equation", tf_attr_string(eq)};
  return tf__grad_op_list(ctx, "Einsum", in, n, &kv, 1);
}

/* Whether label occurs in term t. */
static bool has_label(const tf__einsum_term *t, int label) {
  for (int j = 0; j < t->n; j++) {
    if (t->e[j] == label) {
      return true;
    }
  }
  return false;
}

/* g, the gradient of x (subscripts xs) with the labels x summed out
 * dropped (subscripts left), spread back over x's full shape. */
static tf_output spread(tf_grad_ctx *ctx, tf_output g, const char *left,
                        const char *xs, tf_output x) {
  char eq[112];
  snprintf(eq, sizeof eq, "%s,%s->%s", left, xs, xs);
  tf_output in[2] = {g, tf__grad_op1(ctx, "OnesLike", x)};
  return einsum(ctx, eq, in, 2);
}

/* Subscripts of x less the labels only x has and the output lacks (x
 * summed those out) into *left; true when there were such labels. */
static bool left_term(const tf__einsum_eq *eq, int xi, tf__einsum_term *left) {
  const tf__einsum_term *xt = &eq->in[xi], *ot = &eq->in[1 - xi];
  bool reduced = false;
  memset(left, 0, sizeof(*left));
  for (int j = 0; j < xt->n; j++) {
    int label = xt->e[j];
    if (has_label(&eq->out, label) || has_label(ot, label)) {
      left->e[left->n++] = (int8_t)label;
      left->has_ell = left->has_ell || label == TF__EINSUM_ELL;
    } else {
      reduced = true;
    }
  }
  return reduced;
}

/* Einsum("a,b->c") of p, q with the terms spelled from a, b, c. */
static tf_output einsum2(tf_grad_ctx *ctx, const tf__einsum_term *a,
                         const tf__einsum_term *b, const tf__einsum_term *c,
                         tf_output p, tf_output q) {
  char as[32], bs[32], cs[32], es[112];
  tf__einsum_term_str(a, as);
  tf__einsum_term_str(c, cs);
  if (b == NULL) {
    snprintf(es, sizeof es, "%s->%s", as, cs);
    return einsum(ctx, es, &p, 1);
  }
  tf__einsum_term_str(b, bs);
  snprintf(es, sizeof es, "%s,%s->%s", as, bs, cs);
  tf_output in[2] = {p, q};
  return einsum(ctx, es, in, 2);
}

/* x's gradient when the other operand or the output has "...", whose
 * dims may broadcast against x's own (or x may have none): computed with
 * "..." in front over the full broadcast dims (times ones shaped like x so
 * that every broadcast dim is present), summed back to x's own "..." dims
 * as a broadcasting binary op's gradient is, then laid out as x. */
static tf_output grad_bcast(tf_grad_ctx *ctx, const tf__einsum_eq *eq, int xi,
                            tf_output dy, const tf__einsum_term *left,
                            bool reduced) {
  const tf__einsum_term *xt = &eq->in[xi];
  tf__einsum_term front = {.n = 1, .e = {TF__EINSUM_ELL}, .has_ell = true};
  for (int j = 0; j < left->n; j++) {
    if (left->e[j] != TF__EINSUM_ELL) {
      front.e[front.n++] = left->e[j];
    }
  }
  tf_output x = tf__grad_in(ctx, xi);
  tf_output xr = einsum2(ctx, xt, NULL, &front, x, x);
  tf_output g = einsum2(ctx, &eq->out, &eq->in[1 - xi], &front, dy,
                        tf__grad_in(ctx, 1 - xi));
  g = einsum2(ctx, &front, &front, &front, g,
              tf__grad_op1(ctx, "OnesLike", xr));
  g = tf__grad_unbroadcast(ctx, g, xr, g);
  if (!reduced) {
    return einsum2(ctx, &front, NULL, xt, g, g);
  }
  return einsum2(ctx, &front, xt, xt, g, tf__grad_op1(ctx, "OnesLike", x));
}

/* The gradient of operand xi given the other operand and dy. */
static tf_output grad_wrt(tf_grad_ctx *ctx, const tf__einsum_eq *eq,
                          int xi, tf_output dy) {
  const tf__einsum_term *xt = &eq->in[xi];
  tf__einsum_term left;
  bool reduced = left_term(eq, xi, &left);
  if (has_label(&eq->out, TF__EINSUM_ELL) ||
      has_label(&eq->in[1 - xi], TF__EINSUM_ELL)) {
    return grad_bcast(ctx, eq, xi, dy, &left, reduced);
  }
  tf_output g = einsum2(ctx, &eq->out, &eq->in[1 - xi], &left, dy,
                        tf__grad_in(ctx, 1 - xi));
  if (!reduced) {
    return g;
  }
  char ls[32], xs[32];
  tf__einsum_term_str(&left, ls);
  tf__einsum_term_str(xt, xs);
  return spread(ctx, g, ls, xs, tf__grad_in(ctx, xi));
}

/* One input: dy spread back to the input's subscripts. */
static tf_output grad_one(tf_grad_ctx *ctx, const tf__einsum_eq *eq,
                          tf_output dy) {
  char os[32], xs[32], es[112];
  tf__einsum_term_str(&eq->out, os);
  tf__einsum_term_str(&eq->in[0], xs);
  for (int j = 0; j < eq->in[0].n; j++) {
    if (!has_label(&eq->out, eq->in[0].e[j])) {
      return spread(ctx, dy, os, xs, tf__grad_in(ctx, 0));
    }
  }
  snprintf(es, sizeof es, "%s->%s", os, xs);
  return einsum(ctx, es, &dy, 1);
}

static tf_code einsum_grad(tf_grad_ctx *ctx) {
  const char *text = NULL;
  TF_TRY(tf_node_attr_get_string(ctx->node, "equation", &text, ctx->st));
  tf__einsum_eq eq;
  TF_TRY(tf__einsum_parse(text, ctx->n_dx, &eq, ctx->st));
  if (eq.n_in == 1) {
    ctx->dx[0].values = grad_one(ctx, &eq, ctx->dy[0]);
  } else {
    ctx->dx[0].values = grad_wrt(ctx, &eq, 0, ctx->dy[0]);
    ctx->dx[1].values = grad_wrt(ctx, &eq, 1, ctx->dy[0]);
  }
  return ctx->st->code;
}

static const tf_grad_def einsum_grads[] = {
    {"Einsum", einsum_grad},
};

TF_REGISTER_GRADIENTS(einsum_grads)
