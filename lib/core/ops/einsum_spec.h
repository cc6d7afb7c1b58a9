/* einsum_spec.h: the Einsum equation parser shared by the op's shape
 * function (lib/core/ops/ops_einsum.c, which implements it), its CPU kernel
 * (lib/devices/cpu/cpu_einsum.c) and its gradient (lib/core/grad).
 *
 * An equation is "in0[,in1][->out]": each term is letters (a-z, A-Z) with
 * at most one "..." (broadcast dims). Without "->" the output is implicit:
 * "..." first when any input has one, then the labels that occur exactly
 * once in the whole equation, sorted (upper case before lower, as ASCII).
 * Labels are numbered 0..51 (a-z, A-Z); the dims a "..." stands for get
 * labels TF__EINSUM_ELL_LABEL + 0..n_ell-1, right-aligned over the inputs
 * as in NumPy broadcasting. Errors are INVALID_ARGUMENT messages that name
 * the equation and what is wrong, without a node prefix (the caller adds
 * it with tf_shape_error or tf_kernel_error). Not public API. */
#ifndef TF_CORE_OPS_EINSUM_SPEC_H
#define TF_CORE_OPS_EINSUM_SPEC_H

#include <stdbool.h>
#include <stdint.h>

#include "tf/status.h"
#include "tf/tensor.h"

#define TF__EINSUM_ELL (-1)          /* a "..." entry in a parsed term */
#define TF__EINSUM_ELL_LABEL 52      /* first label of the "..." dims */
#define TF__EINSUM_LABELS (TF__EINSUM_ELL_LABEL + TF_MAX_RANK)
#define TF__EINSUM_MAX_TERM (TF_MAX_RANK + 1)

/* One term: label ids (0..51) and at most one TF__EINSUM_ELL entry. */
typedef struct tf__einsum_term {
  int n;
  int8_t e[TF__EINSUM_MAX_TERM];
  bool has_ell;
} tf__einsum_term;

typedef struct tf__einsum_eq {
  const char *text; /* the equation as given (borrowed) */
  int n_in;         /* 1 or 2 */
  tf__einsum_term in[2];
  tf__einsum_term out; /* explicit, or the implicit output spelled out */
} tf__einsum_eq;

/* The equation resolved against input shapes. */
typedef struct tf__einsum_dims {
  int n_ell;                         /* dims each "..." expands to, at most */
  int rank[2];
  int8_t axis[2][TF_MAX_RANK];       /* label of each input axis */
  int out_rank;
  int8_t out_axis[TF_MAX_RANK];      /* label of each output axis */
  int64_t size[TF__EINSUM_LABELS];   /* -1: unknown or unused */
  unsigned use[TF__EINSUM_LABELS];   /* bit 0: input 0, 1: input 1, 2: out */
  tf_shape out_shape;
} tf__einsum_dims;

/* Parses text for n_in operands into *eq. INVALID_ARGUMENT on a character
 * other than letters, ',', '->' and '...', a second "->" or "...", a count
 * of input terms other than n_in, n_in other than 1 or 2, a term with more
 * than TF_MAX_RANK labels, or an output label that is in no input. */
tf_code tf__einsum_parse(const char *text, int n_in, tf__einsum_eq *eq,
                         tf_status *st);

/* Resolves eq against the input shapes in[0..n_in) (known ranks; dims may
 * be -1 at graph time) into *d, including the output shape (-1 dims where
 * unknown). INVALID_ARGUMENT when an input's rank does not fit its term,
 * a label has two sizes, "..." dims do not broadcast, the inputs' "..."
 * stand for some dims but the output has no "..." (as in TF), or the
 * output has more than TF_MAX_RANK dims. */
tf_code tf__einsum_resolve(const tf__einsum_eq *eq, const tf_shape *in,
                           tf__einsum_dims *d, tf_status *st);

/* Writes term t as subscripts ("...ij") into buf (at least 32 bytes). */
void tf__einsum_term_str(const tf__einsum_term *t, char *buf);

#endif
