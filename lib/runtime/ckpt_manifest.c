/* ckpt_manifest.c: the text files of a checkpoint directory (ckpt_dir.h):
 * the manifest, a small line format whose last line is the CRC32C of the
 * bytes before it, parsed strictly with caps because a damaged or crafted
 * file must be refused, never half-read; and the pointer file in
 * TensorFlow's CheckpointState text format. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/runtime/ckpt_dir.h"
#include "lib/core/base/crc32c.h"
#include "lib/core/base/strmap.h"
#include "lib/core/base/util.h"

#define MANIFEST_MAGIC "tf-checkpoint-manifest"
#define MANIFEST_VERSION 1

void tf_ckpt_manifest_fini(tf_ckpt_manifest *m) {
  if (m == NULL) {
    return;
  }
  free(m->job);
  free(m->spec_hash);
  free(m->mode);
  for (int i = 0; i < m->n_shards && m->shards != NULL; i++) {
    free(m->shards[i].file);
  }
  free(m->shards);
  free(m->path);
  *m = (tf_ckpt_manifest){0};
}

/* ---- field syntax ------------------------------------------------------------ */

/* 1..255 printable ASCII characters other than space. */
static bool job_ok(const char *s, size_t n) {
  if (n == 0 || n > 255) {
    return false;
  }
  for (size_t i = 0; i < n; i++) {
    if (s[i] <= ' ' || s[i] > '~') {
      return false;
    }
  }
  return true;
}

static bool in_set(const char *s, size_t n, size_t max, const char *set) {
  if (n > max) {
    return false;
  }
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '\0' || strchr(set, s[i]) == NULL) {
      return false;
    }
  }
  return true;
}

#define HEX "0123456789abcdef"
#define FILE_CHARS                                                             \
  "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-"

/* A shard file name: [A-Za-z0-9._-]{1,255}, not starting with '.'. */
static bool file_ok(const char *s, size_t n) {
  return n > 0 && s[0] != '.' && in_set(s, n, 255, FILE_CHARS);
}

/* Decimal digits without sign or leading zero, within int64. */
static bool parse_i64(const char *s, size_t n, int64_t *v) {
  if (n == 0 || n > 19 || (n > 1 && s[0] == '0')) {
    return false;
  }
  uint64_t x = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') {
      return false;
    }
    x = x * 10 + (uint64_t)(s[i] - '0');
  }
  if (x > (uint64_t)INT64_MAX) {
    return false;
  }
  *v = (int64_t)x;
  return true;
}

static bool parse_crc(const char *s, size_t n, uint32_t *v) {
  if (n != 8 || !in_set(s, n, 8, HEX)) {
    return false;
  }
  uint32_t x = 0;
  for (size_t i = 0; i < 8; i++) {
    x = x << 4 | (uint32_t)(strchr(HEX, s[i]) - HEX);
  }
  *v = x;
  return true;
}

bool tf_ckpt_dir_name_step(const char *name, int64_t *step) {
  int64_t v;
  if (strncmp(name, "ckpt-", 5) != 0 || !parse_i64(name + 5, strlen(name + 5), &v)) {
    return false;
  }
  if (step != NULL) {
    *step = v;
  }
  return true;
}

/* ---- writing ----------------------------------------------------------------- */

static tf_code check_fields(const tf_ckpt_manifest *m, tf_status *st) {
  const char *sh = m->spec_hash ? m->spec_hash : "", *mode = m->mode ? m->mode : "";
  const char *bad = !m->job || !job_ok(m->job, strlen(m->job)) ? "job"
                    : m->step < 0                              ? "step"
                    : m->time_ms < 0                           ? "time_ms"
                    : !in_set(sh, strlen(sh), 128, HEX)        ? "spec_hash"
                    : !in_set(mode, strlen(mode), 16, "abcdefghijklmnopqrstuvwxyz")
                        ? "mode"
                    : m->n_shards < 0 || m->n_shards > TF_CKPT_MAX_SHARDS ||
                            (m->n_shards > 0 && m->shards == NULL)
                        ? "n_shards"
                        : NULL;
  if (bad != NULL) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "checkpoint manifest: bad "
                         "%s (docs/checkpoint.md gives each field's form)", bad);
  }
  tf__strmap seen;
  tf__strmap_init(&seen);
  tf_code c = TF_OK;
  for (int i = 0; i < m->n_shards && c == TF_OK; i++) {
    const char *f = m->shards[i].file;
    if (f == NULL || !file_ok(f, strlen(f)) || m->shards[i].bytes < 0 ||
        tf__strmap_get(&seen, f, NULL) != NULL) {
      c = tf_status_set(st, TF_INVALID_ARGUMENT, "checkpoint manifest: shard "
                        "%d: file '%s' %s", i, f ? f : "",
                        f && tf__strmap_get(&seen, f, NULL) ? "appears twice"
                        : "must be 1..255 of [A-Za-z0-9._-], not starting "
                          "with '.' (and its size >= 0)");
    } else {
      tf__strmap_put(&seen, f, (void *)1);
    }
  }
  tf__strmap_fini(&seen);
  return c;
}

tf_code tf_ckpt_manifest_format(const tf_ckpt_manifest *m, char **text,
                                size_t *len, tf_status *st) {
  *text = NULL;
  *len = 0;
  TF_TRY(check_fields(m, st));
  char *buf = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&buf, &n);
  TF_ASSERT(f != NULL);
  fprintf(f, "%s %d\njob: %s\nstep: %lld\ntime_ms: %lld\nspec_hash: %s\n"
             "mode: %s\nshards: %d\n", MANIFEST_MAGIC, MANIFEST_VERSION,
          m->job, (long long)m->step, (long long)m->time_ms,
          m->spec_hash ? m->spec_hash : "", m->mode ? m->mode : "",
          m->n_shards);
  for (int i = 0; i < m->n_shards; i++) {
    fprintf(f, "shard: %s %lld %08x\n", m->shards[i].file,
            (long long)m->shards[i].bytes, m->shards[i].crc32c);
  }
  fflush(f);
  fprintf(f, "crc32c: %08x\n", tf_crc32c(buf, n));
  TF_ASSERT(fclose(f) == 0);
  *text = buf;
  *len = n;
  return TF_OK;
}

/* ---- reading ----------------------------------------------------------------- */

/* Lines of text, each ending in '\n'. */
typedef struct lines {
  const char *p, *end, *where;
  int no; /* the current line's number */
  const char *val; /* the value after "key: " of the current line */
  size_t val_len;
} lines;

static tf_code line_error(const lines *l, tf_status *st, const char *what) {
  return tf_status_set(st, TF_DATA_LOSS, "%s: line %d: %s", l->where, l->no,
                       what);
}

/* The next line, which must read "<key>: <value>". */
static tf_code expect(lines *l, const char *key, tf_status *st) {
  l->no++;
  const char *nl = l->p < l->end ? memchr(l->p, '\n', (size_t)(l->end - l->p)) : NULL;
  size_t kl = strlen(key);
  if (nl == NULL) {
    return line_error(l, st, "missing (truncated?)");
  }
  if ((size_t)(nl - l->p) < kl + 2 || memcmp(l->p, key, kl) != 0 ||
      memcmp(l->p + kl, ": ", 2) != 0) {
    char what[64];
    snprintf(what, sizeof what, "expected '%s: '", key);
    return line_error(l, st, what);
  }
  l->val = l->p + kl + 2;
  l->val_len = (size_t)(nl - l->val);
  l->p = nl + 1;
  return TF_OK;
}

/* The value of the next line "<key>: <value>" as a string of the given
 * syntax; free(). */
static tf_code expect_str(lines *l, const char *key,
                          bool (*ok)(const char *, size_t), char **out,
                          tf_status *st) {
  TF_TRY(expect(l, key, st));
  if (!ok(l->val, l->val_len)) {
    return line_error(l, st, "bad value");
  }
  *out = tf__xstrndup(l->val, l->val_len);
  return TF_OK;
}

static tf_code expect_i64(lines *l, const char *key, int64_t *v, tf_status *st) {
  TF_TRY(expect(l, key, st));
  return parse_i64(l->val, l->val_len, v) ? TF_OK
         : line_error(l, st, "expected a decimal number");
}

static bool hash_ok(const char *s, size_t n) { return in_set(s, n, 128, HEX); }
static bool mode_ok(const char *s, size_t n) {
  return in_set(s, n, 16, "abcdefghijklmnopqrstuvwxyz");
}

/* "shard: <file> <bytes> <crc>" into r. */
static tf_code parse_shard(lines *l, tf_ckpt_shard_ref *r, tf__strmap *seen,
                           tf_status *st) {
  TF_TRY(expect(l, "shard", st));
  const char *v = l->val, *e = v + l->val_len;
  const char *s1 = memchr(v, ' ', (size_t)(e - v));
  const char *s2 = s1 ? memchr(s1 + 1, ' ', (size_t)(e - s1 - 1)) : NULL;
  if (s2 == NULL || !file_ok(v, (size_t)(s1 - v)) ||
      !parse_i64(s1 + 1, (size_t)(s2 - s1 - 1), &r->bytes) ||
      !parse_crc(s2 + 1, (size_t)(e - s2 - 1), &r->crc32c)) {
    return line_error(l, st, "expected 'shard: <file> <bytes> <crc32c>'");
  }
  r->file = tf__xstrndup(v, (size_t)(s1 - v));
  if (tf__strmap_get(seen, r->file, NULL) != NULL) {
    return line_error(l, st, "a shard file appears twice");
  }
  tf__strmap_put(seen, r->file, (void *)1);
  return TF_OK;
}

static tf_code parse_body(lines *l, tf_ckpt_manifest *m, tf_status *st) {
  TF_TRY(expect_str(l, "job", job_ok, &m->job, st));
  TF_TRY(expect_i64(l, "step", &m->step, st));
  TF_TRY(expect_i64(l, "time_ms", &m->time_ms, st));
  TF_TRY(expect_str(l, "spec_hash", hash_ok, &m->spec_hash, st));
  TF_TRY(expect_str(l, "mode", mode_ok, &m->mode, st));
  int64_t n;
  TF_TRY(expect_i64(l, "shards", &n, st));
  if (n > TF_CKPT_MAX_SHARDS || n > (int64_t)(l->end - l->p) / 8) {
    return line_error(l, st, "more shards than the cap or the file holds");
  }
  m->shards = tf__xcalloc((size_t)n + 1, sizeof *m->shards);
  tf__strmap seen;
  tf__strmap_init(&seen);
  tf_code c = TF_OK;
  for (; m->n_shards < n && c == TF_OK; m->n_shards++) {
    c = parse_shard(l, &m->shards[m->n_shards], &seen, st);
  }
  tf__strmap_fini(&seen);
  TF_TRY(c);
  if (l->p != l->end) {
    l->no++;
    return line_error(l, st, "unexpected line");
  }
  return TF_OK;
}

/* Checks the last line, "crc32c: <hex>", against the bytes before it;
 * *body_len gets their length. */
static tf_code check_crc(const char *text, size_t len, const char *where,
                         size_t *body_len, tf_status *st) {
  if (len == 0 || text[len - 1] != '\n') {
    return tf_status_set(st, TF_DATA_LOSS, "%s: does not end in a newline "
                         "(truncated?)", where);
  }
  size_t start = len - 1;
  while (start > 0 && text[start - 1] != '\n') {
    start--;
  }
  uint32_t stored;
  if (len - start != 17 || memcmp(text + start, "crc32c: ", 8) != 0 ||
      !parse_crc(text + start + 8, 8, &stored)) {
    return tf_status_set(st, TF_DATA_LOSS, "%s: the last line is not "
                         "'crc32c: <8 hex digits>' (truncated?)", where);
  }
  uint32_t got = tf_crc32c(text, start);
  if (got != stored) {
    return tf_status_set(st, TF_DATA_LOSS, "%s: CRC32C mismatch (stored "
                         "0x%08x, computed 0x%08x)", where, stored, got);
  }
  *body_len = start;
  return TF_OK;
}

tf_code tf_ckpt_manifest_parse(const char *text, size_t len, const char *where,
                               tf_ckpt_manifest *out, tf_status *st) {
  *out = (tf_ckpt_manifest){0};
  size_t body = 0;
  if (len > TF_CKPT_MANIFEST_MAX) {
    return tf_status_set(st, TF_DATA_LOSS, "%s: %zu bytes, more than a "
                         "manifest may have (%d)", where, len,
                         TF_CKPT_MANIFEST_MAX);
  }
  TF_TRY(check_crc(text, len, where, &body, st));
  lines l = {text, text + body, where, 1, NULL, 0};
  const char *nl = memchr(text, '\n', body);
  size_t ml = strlen(MANIFEST_MAGIC);
  int64_t version;
  if (nl == NULL || (size_t)(nl - text) <= ml + 1 ||
      memcmp(text, MANIFEST_MAGIC " ", ml + 1) != 0 ||
      !parse_i64(text + ml + 1, (size_t)(nl - text) - ml - 1, &version)) {
    return line_error(&l, st, "not a checkpoint manifest");
  }
  if (version != MANIFEST_VERSION) {
    return tf_status_set(st, TF_UNIMPLEMENTED, "%s: manifest version %lld; "
                         "this build reads version %d", where,
                         (long long)version, MANIFEST_VERSION);
  }
  l.p = nl + 1;
  tf_code c = parse_body(&l, out, st);
  if (c != TF_OK) {
    tf_ckpt_manifest_fini(out);
  }
  return c;
}

/* ---- the pointer file ----------------------------------------------------------- */

char *tf_ckpt_pointer_format(char *const *names, int n) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  TF_ASSERT(f != NULL);
  if (n > 0) {
    fprintf(f, "model_checkpoint_path: \"%s\"\n", names[n - 1]);
  }
  for (int i = 0; i < n; i++) {
    fprintf(f, "all_model_checkpoint_paths: \"%s\"\n", names[i]);
  }
  TF_ASSERT(fclose(f) == 0);
  return buf;
}

/* The quoted checkpoint name of l's current value; free(). */
static tf_code pointer_name(lines *l, char **out, tf_status *st) {
  const char *v = l->val;
  size_t n = l->val_len;
  char name[32];
  if (n < 3 || n - 2 >= sizeof name || v[0] != '"' || v[n - 1] != '"') {
    return line_error(l, st, "expected a quoted \"ckpt-<step>\"");
  }
  memcpy(name, v + 1, n - 2);
  name[n - 2] = '\0';
  if (!tf_ckpt_dir_name_step(name, NULL)) {
    return line_error(l, st, "expected a quoted \"ckpt-<step>\"");
  }
  *out = tf__xstrdup(name);
  return TF_OK;
}

static void names_free(char **names, int n) {
  for (int i = 0; i < n; i++) {
    free(names[i]);
  }
  free(names);
}

/* Appends name to names unless it is there; takes name. */
static void names_add(char ***names, int *n, char *name) {
  for (int i = 0; i < *n; i++) {
    if (strcmp((*names)[i], name) == 0) {
      free(name);
      return;
    }
  }
  *names = tf__xrealloc(*names, (size_t)(*n + 1) * sizeof **names);
  (*names)[(*n)++] = name;
}

/* Moves latest to the end of names (adding it when absent); takes it. */
static void names_put_last(char **names, int *n, char *latest) {
  int w = 0;
  for (int i = 0; i < *n; i++) {
    if (strcmp(names[i], latest) == 0) {
      free(names[i]);
    } else {
      names[w++] = names[i];
    }
  }
  names[w++] = latest;
  *n = w;
}

static bool skipped_key(const lines *l) {
  const char *keys[] = {"all_model_checkpoint_timestamps: ",
                        "last_preserved_timestamp: "};
  for (size_t i = 0; i < 2; i++) {
    size_t kl = strlen(keys[i]);
    if ((size_t)(l->end - l->p) >= kl && memcmp(l->p, keys[i], kl) == 0) {
      return true;
    }
  }
  return false;
}

static tf_code parse_pointer_lines(lines *l, char ***names, int *n,
                                   char **latest, tf_status *st) {
  TF_TRY(expect(l, "model_checkpoint_path", st));
  TF_TRY(pointer_name(l, latest, st));
  while (l->p < l->end) {
    if (skipped_key(l)) {
      const char *nl = memchr(l->p, '\n', (size_t)(l->end - l->p));
      l->no++;
      if (nl == NULL) {
        return line_error(l, st, "missing newline (truncated?)");
      }
      l->p = nl + 1;
      continue;
    }
    char *name;
    TF_TRY(expect(l, "all_model_checkpoint_paths", st));
    TF_TRY(pointer_name(l, &name, st));
    if (*n >= TF_CKPT_MAX_KEPT) {
      free(name);
      return line_error(l, st, "more checkpoint names than the cap");
    }
    names_add(names, n, name);
  }
  return TF_OK;
}

tf_code tf_ckpt_pointer_parse(const char *text, size_t len, const char *where,
                              char ***names, int *n, tf_status *st) {
  *names = NULL;
  *n = 0;
  if (len > TF_CKPT_POINTER_MAX || memchr(text, '\0', len) != NULL) {
    return tf_status_set(st, TF_DATA_LOSS, "%s: not a checkpoint pointer "
                         "(too large or binary)", where);
  }
  lines l = {text, text + len, where, 0, NULL, 0};
  char *latest = NULL;
  tf_code c = parse_pointer_lines(&l, names, n, &latest, st);
  if (c != TF_OK) {
    free(latest);
    names_free(*names, *n);
    *names = NULL;
    *n = 0;
    return c;
  }
  *names = tf__xrealloc(*names, (size_t)(*n + 1) * sizeof **names);
  names_put_last(*names, n, latest);
  return TF_OK;
}
