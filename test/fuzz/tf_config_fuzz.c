/* tf_config_fuzz.c: libFuzzer harness for the strict JSON reader
 * (lib/runtime/json.h) and TF_CONFIG on top of it (tf_config.h). The input
 * is the variable's value. JSON: a rejection is INVALID_ARGUMENT
 * "TF_CONFIG at character K: ..." with K within the input (1..len+1); an
 * accepted document has every value's position at a character that starts
 * such a value, no nesting deeper than TF__JSON_DEPTH, no duplicate keys,
 * strings that are valid UTF-8 when the input is, and written out again
 * (by the writer here) it parses to the same tree and the same text.
 * TF_CONFIG: a rejection says "TF_CONFIG..." (the JSON's message when the
 * JSON is bad); an accepted one has exactly one master job, first, of one
 * task, no chief or evaluator, unique valid job names whose addresses are
 * the document's, and a task that exists. Seeds: test/fuzz/corpus/tf_config/
 * (TensorFlow's documented examples). */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/runtime/json.h"
#include "lib/runtime/tf_config.h"
#include "test/fuzz/fuzz_util.h"

typedef struct buf {
  char *p;
  size_t n, cap;
} buf;

static void put(buf *b, const char *s, size_t n) {
  if (b->n + n + 1 > b->cap) {
    b->cap = (b->n + n + 1) * 2;
    b->p = realloc(b->p, b->cap);
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = '\0';
}

static void put_string(buf *b, const char *s) {
  put(b, "\"", 1);
  for (; *s != '\0'; s++) {
    unsigned char c = (unsigned char)*s;
    char e[8];
    if (c == '"' || c == '\\') {
      e[0] = '\\';
      e[1] = (char)c;
      put(b, e, 2);
    } else if (c < 0x20) {
      put(b, e, (size_t)snprintf(e, sizeof e, "\\u%04x", c));
    } else {
      put(b, s, 1);
    }
  }
  put(b, "\"", 1);
}

/* The JSON text of v, compact. */
static void write_json(buf *b, const tf__json *v) {
  switch (v->type) {
    case TF__JSON_NULL: put(b, "null", 4); break;
    case TF__JSON_BOOL: v->b ? put(b, "true", 4) : put(b, "false", 5); break;
    case TF__JSON_NUMBER: put(b, v->text, strlen(v->text)); break;
    case TF__JSON_STRING: put_string(b, v->text); break;
    case TF__JSON_ARRAY:
    case TF__JSON_OBJECT: {
      bool obj = v->type == TF__JSON_OBJECT;
      put(b, obj ? "{" : "[", 1);
      for (int i = 0; i < v->n; i++) {
        if (i > 0) {
          put(b, ",", 1);
        }
        if (obj) {
          put_string(b, v->keys[i]);
          put(b, ":", 1);
        }
        write_json(b, &v->items[i]);
      }
      put(b, obj ? "}" : "]", 1);
      break;
    }
  }
}

/* Whether s[0..n) is valid UTF-8 (no overlong forms, no surrogates). */
static bool utf8_ok(const unsigned char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    unsigned c = s[i];
    int k = c < 0x80 ? 0 : (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2
            : (c & 0xf8) == 0xf0 ? 3 : -1;
    if (k < 0 || (k > 0 && i + (size_t)k >= n)) {
      return false;
    }
    uint32_t cp = k == 0 ? c : c & (0x3f >> k);
    for (int j = 1; j <= k; j++) {
      if ((s[i + j] & 0xc0) != 0x80) {
        return false;
      }
      cp = cp << 6 | (s[i + j] & 0x3f);
    }
    static const uint32_t least[] = {0, 0x80, 0x800, 0x10000};
    if (cp < least[k] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
      return false;
    }
    i += (size_t)k + 1;
  }
  return true;
}

/* Checks one accepted value against the text it came from. */
static void check_value(const tf__json *v, const char *text, size_t len,
                        int depth, bool utf8, const tf_status *st) {
  FUZZ_CHECK(v->pos >= 1 && (size_t)v->pos <= len, st);
  char c = text[v->pos - 1];
  static const char first[][12] = {"n", "tf", "-0123456789", "\"", "[", "{"};
  FUZZ_CHECK(strchr(first[v->type], c) != NULL && c != '\0', st);
  if (v->type == TF__JSON_STRING) {
    FUZZ_CHECK(!utf8 || utf8_ok((const unsigned char *)v->text,
                                strlen(v->text)), st);
  }
  if (v->type == TF__JSON_ARRAY || v->type == TF__JSON_OBJECT) {
    FUZZ_CHECK(depth < TF__JSON_DEPTH, st);
  }
  for (int i = 0; i < v->n; i++) {
    if (v->type == TF__JSON_OBJECT) {
      for (int k = 0; k < i; k++) {
        FUZZ_CHECK(strcmp(v->keys[k], v->keys[i]) != 0, st);
      }
    }
    check_value(&v->items[i], text, len, depth + 1, utf8, st);
  }
}

static bool same_tree(const tf__json *a, const tf__json *b) {
  if (a->type != b->type || a->b != b->b || a->n != b->n ||
      (a->text == NULL) != (b->text == NULL) ||
      (a->text != NULL && strcmp(a->text, b->text) != 0)) {
    return false;
  }
  for (int i = 0; i < a->n; i++) {
    if ((a->type == TF__JSON_OBJECT && strcmp(a->keys[i], b->keys[i]) != 0) ||
        !same_tree(&a->items[i], &b->items[i])) {
      return false;
    }
  }
  return true;
}

/* A JSON rejection: "TF_CONFIG at character K: " with K in 1..len+1. */
static void check_json_error(tf_code c, const tf_status *st, size_t len) {
  FUZZ_CHECK(c == TF_INVALID_ARGUMENT, st);
  static const char pre[] = "TF_CONFIG at character ";
  FUZZ_CHECK(strncmp(st->msg, pre, sizeof pre - 1) == 0, st);
  char *e;
  long k = strtol(st->msg + sizeof pre - 1, &e, 10);
  FUZZ_CHECK(k >= 1 && (size_t)k <= len + 1 && e[0] == ':' && e[1] == ' ' &&
                 e[2] != '\0', st);
}

/* An accepted TF_CONFIG against the document it came from. */
static void check_config(const tf_tfconfig *c, const tf__json *root,
                         const tf_status *st) {
  const tf__json *cl = tf__json_get(root, "cluster");
  bool has_eval = tf__json_get(cl, "evaluator") != NULL;
  FUZZ_CHECK(c->n_jobs == cl->n - has_eval && c->n_jobs >= 1, st);
  FUZZ_CHECK((c->note[0] != '\0') == has_eval, st);
  FUZZ_CHECK(strcmp(c->jobs[0].name, "master") == 0 &&
                 c->jobs[0].n_tasks == 1, st);
  const tf_cluster_job *mine = NULL;
  for (int j = 0; j < c->n_jobs; j++) {
    const tf_cluster_job *job = &c->jobs[j];
    size_t l = strlen(job->name);
    FUZZ_CHECK(l >= 1 && l <= 63 && strcmp(job->name, "chief") != 0 &&
                   strcmp(job->name, "evaluator") != 0, st);
    FUZZ_CHECK(j == 0 || strcmp(job->name, "master") != 0, st);
    for (int k = 0; k < j; k++) {
      FUZZ_CHECK(strcmp(c->jobs[k].name, job->name) != 0, st);
    }
    const tf__json *list = tf__json_get(cl, job->name);
    if (j == 0 && tf__json_get(cl, "chief") != NULL) {
      list = tf__json_get(cl, "chief");
    }
    FUZZ_CHECK(list != NULL && list->type == TF__JSON_ARRAY &&
                   list->n == job->n_tasks && job->n_tasks >= 1, st);
    for (int t = 0; t < job->n_tasks; t++) {
      FUZZ_CHECK(job->addrs[t][0] != '\0' &&
                     strcmp(job->addrs[t], list->items[t].text) == 0, st);
    }
    mine = strcmp(job->name, c->job) == 0 ? job : mine;
  }
  FUZZ_CHECK(mine != NULL && c->task >= 0 && c->task < mine->n_tasks, st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *text = (const char *)data;
  tf_status st, st2;
  tf_status_init(&st);
  tf_status_init(&st2);
  tf__json *root = NULL;
  tf_code c = tf__json_parse(text, size, "TF_CONFIG", &root, &st);
  tf_tfconfig *cfg = NULL;
  tf_code cc = tf_tfconfig_parse(text, size, &cfg, &st2);
  if (c != TF_OK) {
    check_json_error(c, &st, size);
    FUZZ_CHECK(root == NULL && cc == c && cfg == NULL, &st2);
    FUZZ_CHECK(strcmp(st.msg, st2.msg) == 0, &st2);
    return 0;
  }
  check_value(root, text, size, 0, utf8_ok(data, size), &st);
  buf b = {NULL, 0, 0};
  write_json(&b, root);
  tf__json *again = NULL;
  FUZZ_CHECK(tf__json_parse(b.p, b.n, "TF_CONFIG", &again, &st) == TF_OK, &st);
  FUZZ_CHECK(same_tree(root, again), &st);
  buf b2 = {NULL, 0, 0};
  write_json(&b2, again);
  FUZZ_CHECK(b.n == b2.n && memcmp(b.p, b2.p, b.n) == 0, &st);
  if (cc != TF_OK) {
    FUZZ_CHECK(cc == TF_INVALID_ARGUMENT && cfg == NULL &&
                   strncmp(st2.msg, "TF_CONFIG: ", 11) == 0 &&
                   st2.msg[11] != '\0', &st2);
  } else {
    check_config(cfg, root, &st2);
  }
  tf_tfconfig_free(cfg);
  tf__json_free(again);
  tf__json_free(root);
  free(b.p);
  free(b2.p);
  return 0;
}
