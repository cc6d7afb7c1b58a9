/* hostlist.c: expands Slurm's compressed host lists and tasks-per-node
 * counts (hostlist.h). One pass per item: the literal text and bracket
 * groups are read and sized first, and the names are made only when the
 * list's total is known to stay within TF_HOSTLIST_MAX. */
#include "lib/runtime/hostlist.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/util.h"

#define DIGITS_MAX 9     /* numbers below 1e9: no overflow anywhere */
#define GROUPS_MAX 8     /* bracket groups in one item */
#define COUNT_MAX 1000000 /* tasks on one node */

typedef struct hl {
  const char *what; /* "hostlist" or "tasks per node" */
  const char *list;
  tf_status *st;
  char **names;
  int n;
  int cap; /* names (or counts) allocated: grown by doubling, so a long
            * plain list is not copied once per item */
} hl;

/* arr (room for *cap elements of size bytes) with room for need. */
static void *grow(void *arr, int *cap, int64_t need, size_t size) {
  if (need <= *cap) {
    return arr;
  }
  *cap = (int)TF_MAX(need, 2 * (int64_t)*cap);
  return tf__xrealloc(arr, (size_t)*cap * size);
}

/* One bracket group: count numbers, each printed with its width. */
typedef struct group {
  int64_t *vals;
  int *widths;
  int count;
} group;

__attribute__((format(printf, 3, 4))) static tf_code
bad(const hl *h, const char *at, const char *fmt, ...) {
  char msg[320];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return tf_status_set(h->st, TF_INVALID_ARGUMENT, "%s '%.200s' at character "
                       "%d: %s", h->what, h->list, (int)(at - h->list) + 1, msg);
}

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

static bool is_name_char(char c) {
  return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         c == '.' || c == '_' || c == '-';
}

static bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* A decimal number of 1..DIGITS_MAX digits at *p; *width its digits. */
static tf_code number(const hl *h, const char **p, int64_t *v, int *width) {
  const char *s = *p;
  int k = 0;
  while (is_digit(s[k])) {
    k++;
  }
  if (k == 0 && *s == '\0') {
    return bad(h, s, "expected a number, got the end");
  }
  if (k == 0) {
    return bad(h, s, "expected a number, got '%c'", *s);
  }
  if (k > DIGITS_MAX) {
    return bad(h, s, "number '%.*s' has more than %d digits", k, s,
               DIGITS_MAX);
  }
  *v = strtoll(s, NULL, 10);
  *width = k;
  *p = s + k;
  return TF_OK;
}

static void group_fini(group *g) {
  free(g->vals);
  free(g->widths);
  *g = (group){0};
}

/* Adds lo..hi (width w) to g, which may hold budget numbers in all. */
static tf_code group_add(const hl *h, const char *at, group *g, int64_t lo,
                         int64_t hi, int w, int64_t budget) {
  if (hi < lo) {
    return bad(h, at, "range '%lld-%lld' runs backwards", (long long)lo,
               (long long)hi);
  }
  if (hi - lo + 1 > budget - g->count) {
    return bad(h, at, "range '%lld-%lld' gives %lld names; a list may give "
               "at most %d", (long long)lo, (long long)hi,
               (long long)(hi - lo + 1), TF_HOSTLIST_MAX);
  }
  size_t n = (size_t)(g->count + (hi - lo + 1));
  g->vals = tf__xrealloc(g->vals, n * sizeof *g->vals);
  g->widths = tf__xrealloc(g->widths, n * sizeof *g->widths);
  for (int64_t v = lo; v <= hi; v++) {
    g->vals[g->count] = v;
    g->widths[g->count++] = w;
  }
  return TF_OK;
}

/* A bracket group at *p ('['), up to and past its ']'. */
static tf_code group_parse(const hl *h, const char **p, group *g,
                           int64_t budget) {
  const char *open = *p, *s = *p + 1;
  for (;;) {
    const char *at = s;
    int64_t lo, hi;
    int w, w2;
    if (*s == ']' || *s == ',') {
      return bad(h, s, "empty range in the bracket group at character %d",
                 (int)(open - h->list) + 1);
    }
    TF_TRY(number(h, &s, &lo, &w));
    hi = lo;
    if (*s == '-') {
      s++;
      TF_TRY(number(h, &s, &hi, &w2));
    }
    TF_TRY(group_add(h, at, g, lo, hi, w, budget));
    if (*s == ']') {
      *p = s + 1;
      return TF_OK;
    }
    int at_open = (int)(open - h->list) + 1;
    if (*s == '\0') {
      return bad(h, s, "the bracket group at character %d has no ']'",
                 at_open);
    }
    if (*s != ',') {
      return bad(h, s, "expected ',', '-' or ']' in the bracket group at "
                 "character %d, got '%c'", at_open, *s);
    }
    s++;
  }
}

/* The most characters a number of g prints as. */
static int group_len(const group *g) {
  int m = 0;
  for (int i = 0; i < g->count; i++) {
    char b[32];
    int l = snprintf(b, sizeof b, "%0*lld", g->widths[i], (long long)g->vals[i]);
    m = TF_MAX(m, l);
  }
  return m;
}

/* Makes the names of one item: lits[0] g[0] lits[1] ... g[k-1], the last
 * group varying fastest, then the first, second, ... (Slurm's order). */
static void item_expand(hl *h, const char *const *lits, const int *lit_len,
                        const group *g, int k, int64_t total) {
  int idx[GROUPS_MAX] = {0}, ord[GROUPS_MAX];
  for (int i = 0; i < k; i++) {
    ord[i] = i == 0 ? k - 1 : i - 1;
  }
  h->names = grow(h->names, &h->cap, h->n + total, sizeof *h->names);
  for (int64_t t = 0; t < total; t++) {
    char name[TF_HOSTLIST_NAME_MAX + 32];
    int len = snprintf(name, sizeof name, "%.*s", lit_len[0], lits[0]);
    for (int i = 0; i < k; i++) {
      len += snprintf(name + len, sizeof name - (size_t)len, "%0*lld%.*s",
                      g[i].widths[idx[i]], (long long)g[i].vals[idx[i]],
                      lit_len[i + 1], lits[i + 1]);
    }
    h->names[h->n++] = tf__xstrdup(name);
    for (int i = 0; i < k && ++idx[ord[i]] == g[ord[i]].count; i++) {
      idx[ord[i]] = 0;
    }
  }
}

/* One item from *p to its separator or the end. */
static tf_code item(hl *h, const char **p) {
  const char *s = *p, *start = *p, *lits[GROUPS_MAX + 1];
  int lit_len[GROUPS_MAX + 1], k = 0, len = 0;
  group g[GROUPS_MAX] = {{0}};
  int64_t total = 1, budget = TF_HOSTLIST_MAX - h->n;
  tf_code code = TF_OK;
  for (;;) {
    lits[k] = s;
    while (is_name_char(*s)) {
      s++;
    }
    lit_len[k] = (int)(s - lits[k]);
    len += lit_len[k];
    if (*s != '[') {
      break;
    }
    if (k == GROUPS_MAX) {
      code = bad(h, s, "more than %d bracket groups in one name", GROUPS_MAX);
      break;
    }
    code = group_parse(h, &s, &g[k], budget / total);
    if (code != TF_OK) {
      break;
    }
    total *= g[k].count;
    len += group_len(&g[k]);
    k++;
  }
  if (code == TF_OK && *s != '\0' && *s != ',' && !is_space(*s)) {
    code = bad(h, s, *s == ']' ? "']' without '['" : "'%c' cannot be in a "
               "host name (expected [A-Za-z0-9._-])", *s);
  } else if (code == TF_OK && k > 0 && lit_len[k] > 0) {
    code = bad(h, lits[k], "text '%.*s' after the last bracket group (Slurm "
               "refuses it too)", lit_len[k], lits[k]);
  } else if (code == TF_OK && len > TF_HOSTLIST_NAME_MAX) {
    code = bad(h, start, "a name of more than %d characters",
               TF_HOSTLIST_NAME_MAX);
  } else if (code == TF_OK && total > budget) { /* a name without groups */
    code = bad(h, start, "more than %d names", TF_HOSTLIST_MAX);
  }
  if (code == TF_OK && s > start) {
    item_expand(h, lits, lit_len, g, k, total);
  }
  for (int i = 0; i < GROUPS_MAX; i++) {
    group_fini(&g[i]);
  }
  *p = s;
  return code;
}

tf_code tf_hostlist_expand(const char *list, char ***names, int *n,
                           tf_status *st) {
  *names = NULL;
  *n = 0;
  hl h = {"hostlist", list ? list : "", st, NULL, 0, 0};
  const char *p = h.list;
  tf_code code = TF_OK;
  while (code == TF_OK && *p != '\0') {
    if (*p == ',' || is_space(*p)) {
      p++;
      continue;
    }
    code = item(&h, &p);
  }
  if (code == TF_OK && h.n == 0) {
    code = tf_status_set(st, TF_INVALID_ARGUMENT, "hostlist '%.200s' names "
                         "no host", h.list);
  }
  if (code != TF_OK) {
    tf_hostlist_free(h.names, h.n);
    return code;
  }
  *names = h.names;
  *n = h.n;
  return TF_OK;
}

void tf_hostlist_free(char **names, int n) {
  for (int i = 0; names != NULL && i < n; i++) {
    free(names[i]);
  }
  free(names);
}

/* One N or N(xM) item at *p; adds its counts to *out. */
static tf_code tpn_item(hl *h, const char **p, int **out, int *n) {
  const char *s = *p;
  int64_t c, times = 1;
  int w;
  TF_TRY(number(h, &s, &c, &w));
  if (c < 1 || c > COUNT_MAX) {
    return bad(h, *p, "task count %lld is not in 1..%d", (long long)c,
               COUNT_MAX);
  }
  if (*s == '(') {
    const char *x = s;
    if (s[1] != 'x') {
      return bad(h, s + 1, "expected 'x' after '(' (the form is N(xM))");
    }
    s += 2;
    TF_TRY(number(h, &s, &times, &w));
    if (*s != ')') {
      return bad(h, s, "expected ')' to close the '(' at character %d",
                 (int)(x - h->list) + 1);
    }
    s++;
    if (times < 1) {
      return bad(h, x, "repeat count 0 (expected N(xM) with M >= 1)");
    }
  }
  if (times > TF_HOSTLIST_MAX - *n) {
    return bad(h, *p, "more than %d nodes", TF_HOSTLIST_MAX);
  }
  *out = grow(*out, &h->cap, *n + times, sizeof **out);
  for (int64_t i = 0; i < times; i++) {
    (*out)[(*n)++] = (int)c;
  }
  *p = s;
  return TF_OK;
}

tf_code tf_tasks_per_node_expand(const char *s, int **counts, int *n,
                                 tf_status *st) {
  *counts = NULL;
  *n = 0;
  hl h = {"tasks per node", s ? s : "", st, NULL, 0, 0};
  const char *p = h.list;
  int64_t total = 0;
  tf_code code = TF_OK;
  for (;;) {
    code = tpn_item(&h, &p, counts, n);
    if (code != TF_OK || *p == '\0') {
      break;
    }
    if (*p != ',') {
      code = bad(&h, p, "expected ',' or the end, got '%c'", *p);
      break;
    }
    p++;
  }
  for (int i = 0; code == TF_OK && i < *n; i++) {
    total += (*counts)[i];
  }
  if (code == TF_OK && total > TF_HOSTLIST_MAX) {
    code = tf_status_set(st, TF_INVALID_ARGUMENT, "tasks per node '%.200s' "
                         "gives %lld tasks; at most %d", h.list,
                         (long long)total, TF_HOSTLIST_MAX);
  }
  if (code != TF_OK) {
    free(*counts);
    *counts = NULL;
    *n = 0;
  }
  return code;
}
