/* hostlist_fuzz.c: libFuzzer harness for Slurm's host lists and task
 * counts (lib/runtime/hostlist.h). The first byte picks the decoder (even:
 * tf_hostlist_expand, odd: tf_tasks_per_node_expand); the rest, up to a
 * NUL, is the variable's value. A rejection must be INVALID_ARGUMENT
 * naming the list and a character within it, with nothing returned. An
 * accepted host list must agree with an independent expansion written
 * here (same names in the same order, so also the same count), stay
 * within TF_HOSTLIST_MAX names of [A-Za-z0-9._-], 1..TF_HOSTLIST_NAME_MAX
 * long, and expand again to itself when written out plainly; accepted
 * task counts must agree with an independent expansion, each count >= 1,
 * the total within TF_HOSTLIST_MAX, and survive compressing them back to
 * Slurm's N(xM) form. Seeds: test/fuzz/corpus/hostlist/. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/runtime/hostlist.h"
#include "test/fuzz/fuzz_util.h"

/* Checks a rejection: "<what> '<list>' at character K: ..." with K in
 * 1..strlen(list)+1, or "<what> '<list>' names no host" / "gives N
 * tasks". */
static void check_error(tf_code c, const tf_status *st, const char *what,
                        const char *list) {
  FUZZ_CHECK(c == TF_INVALID_ARGUMENT, st);
  size_t wl = strlen(what), ll = strlen(list), shown = ll < 200 ? ll : 200;
  FUZZ_CHECK(strncmp(st->msg, what, wl) == 0 && st->msg[wl] == ' ' &&
                 st->msg[wl + 1] == '\'' &&
                 strncmp(st->msg + wl + 2, list, shown) == 0 &&
                 st->msg[wl + 2 + shown] == '\'',
             st);
  const char *rest = st->msg + wl + 3 + shown;
  if (strncmp(rest, " at character ", 14) == 0) {
    long k = strtol(rest + 14, NULL, 10);
    FUZZ_CHECK(k >= 1 && (size_t)k <= ll + 1, st);
  } else {
    FUZZ_CHECK(strcmp(rest, " names no host") == 0 ||
                   strncmp(rest, " gives ", 7) == 0,
               st);
  }
}

/* ---- the reference expansion of an accepted host list ----------------- */

typedef struct ref {
  char **names;
  int n, cap;
} ref;

static bool is_sep(char c) {
  return c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* One item s[0..len) (accepted, so well formed): its literal parts and
 * bracket groups, expanded by nested loops over the groups in order of
 * significance g[k-2], ..., g[0], g[k-1] (Slurm's `scontrol show
 * hostnames`: the last group fastest, then the first, the second, ...). */
typedef struct part {
  const char *lit;
  int lit_len;
  const char *grp; /* after '[' up to ']', NULL for the tail */
  int grp_len;
} part;

static void emit(ref *r, const part *p, int k, const int *pick_val,
                 const int *pick_w) {
  char name[1024];
  int len = 0;
  for (int i = 0; i <= k; i++) {
    len += snprintf(name + len, sizeof name - (size_t)len, "%.*s",
                    p[i].lit_len, p[i].lit);
    if (i < k) {
      len += snprintf(name + len, sizeof name - (size_t)len, "%0*d",
                      pick_w[i], pick_val[i]);
    }
  }
  if (r->n == r->cap) {
    r->cap = r->cap ? 2 * r->cap : 16;
    r->names = realloc(r->names, (size_t)r->cap * sizeof *r->names);
  }
  r->names[r->n++] = strdup(name);
}

/* Loops over group order[level] and deeper. */
static void nest(ref *r, const part *p, int k, const int *order, int level,
                 int *val, int *w) {
  if (level == k) {
    emit(r, p, k, val, w);
    return;
  }
  int g = order[level];
  const char *s = p[g].grp, *end = s + p[g].grp_len;
  while (s < end) {
    char *e;
    long lo = strtol(s, &e, 10), hi = lo;
    int width = (int)(e - s);
    if (*e == '-') {
      hi = strtol(e + 1, &e, 10);
    }
    for (long v = lo; v <= hi; v++) {
      val[g] = (int)v;
      w[g] = width;
      nest(r, p, k, order, level + 1, val, w);
    }
    s = e + (*e == ',');
  }
}

static void ref_item(ref *r, const char *s, size_t len) {
  part p[16];
  int k = 0;
  const char *end = s + len;
  for (;;) {
    const char *b = memchr(s, '[', (size_t)(end - s));
    p[k].lit = s;
    p[k].lit_len = (int)((b ? b : end) - s);
    if (b == NULL) {
      break;
    }
    const char *close = memchr(b, ']', (size_t)(end - b));
    p[k].grp = b + 1;
    p[k].grp_len = (int)(close - b - 1);
    k++;
    s = close + 1;
  }
  int order[16], val[16] = {0}, w[16] = {0};
  for (int i = 0; i < k; i++) {
    order[i] = k >= 2 ? (i < k - 1 ? k - 2 - i : k - 1) : i;
  }
  nest(r, p, k, order, 0, val, w);
}

static void ref_expand(const char *list, ref *r) {
  const char *s = list;
  while (*s != '\0') {
    if (is_sep(*s)) {
      s++;
      continue;
    }
    const char *e = s;
    int depth = 0;
    while (*e != '\0' && (depth > 0 || !is_sep(*e))) {
      depth += *e == '[' ? 1 : *e == ']' ? -1 : 0;
      e++;
    }
    ref_item(r, s, (size_t)(e - s));
    s = e;
  }
}

static void fuzz_hostlist(const char *list) {
  tf_status st;
  tf_status_init(&st);
  char **names = (char **)1;
  int n = -1;
  tf_code c = tf_hostlist_expand(list, &names, &n, &st);
  if (c != TF_OK) {
    check_error(c, &st, "hostlist", list);
    FUZZ_CHECK(names == NULL && n == 0, &st);
    return;
  }
  FUZZ_CHECK(n >= 1 && n <= TF_HOSTLIST_MAX, &st);
  ref r = {NULL, 0, 0};
  ref_expand(list, &r);
  FUZZ_CHECK(r.n == n, &st);
  size_t plain_len = 1;
  for (int i = 0; i < n; i++) {
    size_t l = strlen(names[i]);
    FUZZ_CHECK(l >= 1 && l <= TF_HOSTLIST_NAME_MAX &&
                   strspn(names[i], "abcdefghijklmnopqrstuvwxyz"
                                    "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                    "0123456789._-") == l,
               &st);
    FUZZ_CHECK(strcmp(names[i], r.names[i]) == 0, &st);
    plain_len += l + 1;
  }
  /* The names written out plainly are a host list of the same names. */
  char *plain = malloc(plain_len), *p = plain;
  for (int i = 0; i < n; i++) {
    p += sprintf(p, "%s%s", i ? "," : "", names[i]);
  }
  char **again;
  int n2;
  FUZZ_CHECK(tf_hostlist_expand(plain, &again, &n2, &st) == TF_OK, &st);
  FUZZ_CHECK(n2 == n, &st);
  for (int i = 0; i < n; i++) {
    FUZZ_CHECK(strcmp(again[i], names[i]) == 0, &st);
  }
  tf_hostlist_free(again, n2);
  tf_hostlist_free(r.names, r.n);
  tf_hostlist_free(names, n);
  free(plain);
}

/* ---- tasks per node --------------------------------------------------- */

static void fuzz_tasks_per_node(const char *s) {
  tf_status st;
  tf_status_init(&st);
  int *counts = (int *)1, n = -1;
  tf_code c = tf_tasks_per_node_expand(s, &counts, &n, &st);
  if (c != TF_OK) {
    check_error(c, &st, "tasks per node", s);
    FUZZ_CHECK(counts == NULL && n == 0, &st);
    return;
  }
  /* The reference: items N or N(xM), ',' between them. */
  int k = 0;
  long total = 0;
  for (const char *p = s; *p != '\0';) {
    char *e;
    long v = strtol(p, &e, 10), times = 1;
    if (*e == '(') {
      times = strtol(e + 2, &e, 10);
      e++;
    }
    for (long i = 0; i < times; i++, k++) {
      FUZZ_CHECK(k < n && counts[k] == v, &st);
    }
    total += v * times;
    p = e + (*e == ',');
  }
  FUZZ_CHECK(k == n && n >= 1 && total <= TF_HOSTLIST_MAX, &st);
  /* Compressed back to runs, the counts expand to themselves. */
  char *runs = malloc((size_t)n * 24 + 1), *p = runs;
  for (int i = 0; i < n;) {
    int j = i;
    while (j < n && counts[j] == counts[i]) {
      j++;
    }
    FUZZ_CHECK(counts[i] >= 1, &st);
    p += j - i > 1 ? sprintf(p, "%s%d(x%d)", i ? "," : "", counts[i], j - i)
                   : sprintf(p, "%s%d", i ? "," : "", counts[i]);
    i = j;
  }
  int *again, n2;
  FUZZ_CHECK(tf_tasks_per_node_expand(runs, &again, &n2, &st) == TF_OK, &st);
  FUZZ_CHECK(n2 == n && memcmp(again, counts, (size_t)n * sizeof *counts) == 0,
             &st);
  free(again);
  free(counts);
  free(runs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) {
    return 0;
  }
  char *s = malloc(size);
  memcpy(s, data + 1, size - 1);
  s[size - 1] = '\0'; /* the value ends at its first NUL, as in environ */
  if (data[0] & 1) {
    fuzz_tasks_per_node(s);
  } else {
    fuzz_hostlist(s);
  }
  free(s);
  return 0;
}
