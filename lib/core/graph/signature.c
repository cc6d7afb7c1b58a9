/* signature.c: the node-name rule, tensor-name parsing, and a step's
 * signature (canonical sorted feeds, fetches and targets, the caller's
 * positions in them, and an unambiguous cache key).
 *
 * The key lists each of the three sets as "<count>[" then every name as
 * "<length>:<bytes>" then "]", e.g. feeds {x:0}, fetches {y:0, z:0}, no
 * targets: "1[3:x:0]2[3:y:03:z:0]0[]". With every length given, the key
 * parses back to exactly one signature, whatever bytes the names hold, so
 * two signatures never share a key (names are also validated first). */
#include "lib/core/graph/signature.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/base/util.h"

/* ---- names ----------------------------------------------------------------- */

static bool is_alnum(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool first_ok(char c, bool internal) {
  return is_alnum(c) || c == '.' || (internal && c == '_');
}

static bool rest_ok(char c) {
  return is_alnum(c) || c == '_' || c == '.' || c == '-' || c == '/' || c == '>';
}

/* c as it reads in a message: 'x', or \xNN for bytes that do not print. */
static const char *char_str(char c, char buf[8]) {
  unsigned char u = (unsigned char)c;
  if (u >= 0x20 && u < 0x7f) {
    snprintf(buf, 8, "'%c'", c);
  } else {
    snprintf(buf, 8, "\\x%02x", u);
  }
  return buf;
}

bool tf__node_name_valid(const char *name, size_t len, bool internal,
                         char *why, size_t why_size) {
  char cb[8];
  const char *rule = "a node name is [A-Za-z0-9.][A-Za-z0-9_.\\-/>]*";
  if (why == NULL) why_size = 0;
  if (len == 0) {
    if (why_size) snprintf(why, why_size, "the node name is empty");
    return false;
  }
  if (!first_ok(name[0], internal)) {
    if (why_size && name[0] == '_') {
      snprintf(why, why_size, "a node name may not begin with '_', which is "
               "reserved for the system's internal nodes");
    } else if (why_size) {
      snprintf(why, why_size, "%s may not begin a node name (%s)",
               char_str(name[0], cb), rule);
    }
    return false;
  }
  for (size_t i = 1; i < len; i++) {
    if (!rest_ok(name[i])) {
      if (why_size) {
        snprintf(why, why_size, "%s at offset %zu is not allowed (%s)",
                 char_str(name[i], cb), i, rule);
      }
      return false;
    }
  }
  return true;
}

const char *tf__tensor_name_split(const char *s, size_t *node_len, int *port) {
  const char *colon = strrchr(s, ':');
  *node_len = colon ? (size_t)(colon - s) : strlen(s);
  *port = 0;
  if (colon == NULL) return NULL;
  const char *d = colon + 1;
  if (*d == '\0') return "the port after ':' is empty";
  long long v = 0;
  for (const char *p = d; *p != '\0'; p++) {
    if (*p < '0' || *p > '9') {
      return "the port after ':' is not a decimal number (digits only, no sign)";
    }
    v = v * 10 + (*p - '0');
    if (v > INT_MAX) return "the port after ':' is too large";
  }
  if (d[0] == '0' && d[1] != '\0') return "the port after ':' has a leading zero";
  *port = (int)v;
  return NULL;
}

/* A name for a message: at most ~120 bytes, unprintable bytes as \xNN. */
static const char *quoted(const char *s, char *buf, size_t size) {
  size_t o = 0;
  for (const char *p = s; *p != '\0' && o + 8 < size; p++) {
    unsigned char u = (unsigned char)*p;
    if (o > 120) {
      o += (size_t)snprintf(buf + o, size - o, "...");
      break;
    }
    if (u >= 0x20 && u < 0x7f && u != '\\') {
      buf[o++] = *p;
    } else {
      o += (size_t)snprintf(buf + o, size - o, "\\x%02x", u);
    }
  }
  buf[o] = '\0';
  return buf;
}

/* Writes v (>= 0) in decimal at p; returns the end. */
static char *put_decimal(char *p, long long v) {
  char digits[24];
  int n = 0;
  do {
    digits[n++] = (char)('0' + v % 10);
    v /= 10;
  } while (v > 0);
  while (n > 0) *p++ = digits[--n];
  return p;
}

/* e's strings in one block: canon ("node:port", or "node" for a target,
 * port < 0) then node. Run is on every step, so no printf here. */
static void set_name(tf__sig_name *e, const char *node, size_t len, int port) {
  char *b = tf__xmalloc(2 * len + 16);
  memcpy(b, node, len);
  char *p = b + len;
  if (port >= 0) {
    *p++ = ':';
    p = put_decimal(p, port);
  }
  *p++ = '\0';
  memcpy(p, node, len);
  p[len] = '\0';
  e->canon = b;
  e->node = p;
  e->port = port;
}

/* Parses one feed/fetch (target false) or target name into e. */
static tf_code parse_name(const char *what, int i, const char *s, bool target,
                          tf__sig_name *e, tf_status *st) {
  char q[160], why[200];
  if (s == NULL) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s %d has no name", what, i);
  }
  size_t len = 0;
  int port = -1;
  const char *node = s;
  if (target) {
    node = s[0] == '^' ? s + 1 : s;
    len = strlen(node);
  } else {
    const char *bad = tf__tensor_name_split(s, &len, &port);
    if (bad != NULL) {
      return tf_status_set(st, TF_INVALID_ARGUMENT, "%s '%s' is not a valid "
                           "tensor name ('node' or 'node:port'): %s", what,
                           quoted(s, q, sizeof q), bad);
    }
  }
  if (!tf__node_name_valid(node, len, false, why, sizeof why)) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "%s '%s' is not a valid %s: %s",
                         what, quoted(s, q, sizeof q),
                         target ? "target ('node' or '^node')"
                                : "tensor name ('node' or 'node:port')", why);
  }
  set_name(e, node, len, port);
  return TF_OK;
}

/* ---- sets ------------------------------------------------------------------ */

typedef struct entry {
  tf__sig_name name;
  int arg;  /* position in the caller's array */
} entry;

static int cmp_entry(const void *a, const void *b) {
  const entry *x = a, *y = b;
  int c = strcmp(x->name.canon, y->name.canon);
  return c ? c : (x->arg > y->arg) - (x->arg < y->arg);
}

static void name_fini(tf__sig_name *e) {
  free(e->canon); /* node lives in the same block */
}

/* Builds the sorted unique set of names[0..n) into *out / *n_out and, when
 * pos is not NULL, pos[i] = the index of names[i] in it. unique_only:
 * a name given twice is an error. */
static tf_code build_set(const char *what, const char *const *names, int n,
                         bool target, bool unique_only, tf__sig_name **out,
                         int *n_out, int *pos, tf_status *st) {
  *out = NULL;
  *n_out = 0;
  if (n == 0) return TF_OK;
  entry *e = tf__xcalloc((size_t)n, sizeof *e);
  tf_code rc = TF_OK;
  for (int i = 0; i < n && rc == TF_OK; i++) {
    e[i].arg = i;
    rc = parse_name(what, i, names[i], target, &e[i].name, st);
  }
  if (rc == TF_OK && n > 1) qsort(e, (size_t)n, sizeof *e, cmp_entry);
  tf__sig_name *set = tf__xcalloc((size_t)n, sizeof *set);
  int u = 0;
  for (int i = 0; i < n && rc == TF_OK; i++) {
    bool dup = u > 0 && strcmp(set[u - 1].canon, e[i].name.canon) == 0;
    if (dup && unique_only) {
      char q1[160], q2[160];
      const char *first = names[e[i - 1].arg], *again = names[e[i].arg];
      bool same = strcmp(first, again) == 0;
      rc = tf_status_set(st, TF_INVALID_ARGUMENT, "%s '%s' is given twice%s%s%s",
                         what, quoted(again, q1, sizeof q1),
                         same ? "" : " (also as '",
                         same ? "" : quoted(first, q2, sizeof q2), same ? "" : "')");
      break;
    }
    if (dup) {
      name_fini(&e[i].name);
    } else {
      set[u++] = e[i].name;
    }
    e[i].name = (tf__sig_name){0};
    if (pos != NULL) pos[e[i].arg] = u - 1;
  }
  /* Entries moved into set or freed are zeroed; the rest are freed here. */
  for (int i = 0; i < n; i++) name_fini(&e[i].name);
  free(e);
  if (rc != TF_OK) {
    for (int i = 0; i < u; i++) name_fini(&set[i]);
    free(set);
    return rc;
  }
  *out = set;
  *n_out = u;
  return TF_OK;
}

/* The key: "<count>[" + "<len>:<name>"... + "]" for each set. */
static char *make_key(const tf__sig *sig) {
  const tf__sig_name *sets[3] = {sig->feeds, sig->fetches, sig->targets};
  int counts[3] = {sig->n_feeds, sig->n_fetches, sig->n_targets};
  size_t len = 1;
  for (int k = 0; k < 3; k++) {
    len += 24;
    for (int i = 0; i < counts[k]; i++) len += strlen(sets[k][i].canon) + 24;
  }
  char *key = tf__xmalloc(len), *p = key;
  for (int k = 0; k < 3; k++) {
    p = put_decimal(p, counts[k]);
    *p++ = '[';
    for (int i = 0; i < counts[k]; i++) {
      size_t l = strlen(sets[k][i].canon);
      p = put_decimal(p, (long long)l);
      *p++ = ':';
      memcpy(p, sets[k][i].canon, l);
      p += l;
    }
    *p++ = ']';
  }
  *p = '\0';
  TF_ASSERT((size_t)(p - key) < len);
  return key;
}

tf_code tf__sig_build(tf__sig *sig, const char *const *feeds, int n_feeds,
                      const char *const *fetches, int n_fetches,
                      const char *const *targets, int n_targets,
                      tf_status *st) {
  memset(sig, 0, sizeof *sig);
  TF_ASSERT(n_feeds >= 0 && n_fetches >= 0 && n_targets >= 0);
  TF_ASSERT((n_feeds == 0 || feeds) && (n_fetches == 0 || fetches) &&
            (n_targets == 0 || targets));
  if (n_feeds > 0) sig->feed_pos = tf__xcalloc((size_t)n_feeds, sizeof *sig->feed_pos);
  if (n_fetches > 0) {
    sig->fetch_pos = tf__xcalloc((size_t)n_fetches, sizeof *sig->fetch_pos);
  }
  sig->n_feed_args = n_feeds;
  sig->n_fetch_args = n_fetches;
  tf_code rc = build_set("feed", feeds, n_feeds, false, true, &sig->feeds,
                         &sig->n_feeds, sig->feed_pos, st);
  if (rc == TF_OK) {
    rc = build_set("fetch", fetches, n_fetches, false, false, &sig->fetches,
                   &sig->n_fetches, sig->fetch_pos, st);
  }
  if (rc == TF_OK) {
    rc = build_set("target", targets, n_targets, true, false, &sig->targets,
                   &sig->n_targets, NULL, st);
  }
  if (rc != TF_OK) {
    tf__sig_fini(sig);
    return rc;
  }
  sig->key = make_key(sig);
  return TF_OK;
}

void tf__sig_fini(tf__sig *sig) {
  if (sig == NULL) return;
  for (int i = 0; i < sig->n_feeds; i++) name_fini(&sig->feeds[i]);
  for (int i = 0; i < sig->n_fetches; i++) name_fini(&sig->fetches[i]);
  for (int i = 0; i < sig->n_targets; i++) name_fini(&sig->targets[i]);
  free(sig->feeds);
  free(sig->fetches);
  free(sig->targets);
  free(sig->feed_pos);
  free(sig->fetch_pos);
  free(sig->key);
  memset(sig, 0, sizeof *sig);
}
