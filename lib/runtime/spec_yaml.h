/* spec_yaml.h: reading a spec file written in YAML (a job spec, job_spec.h;
 * the cluster spec loads its document with tf__spec_load)
 * into typed values, internal. One document is loaded with libyaml's
 * document loader; every reader checks one node against its type and
 * range and, when it is wrong, fails with INVALID_ARGUMENT
 *   "FILE:LINE:COL: KEY.PATH: expected WHAT, got 'TEXT'"
 * at the node's position (1-based line and column). Key paths are written
 * by the caller ("model.layers[2].units"); NULL or "" leaves the path out.
 * Nodes are libyaml's and live as long as the tf__spec they came from. */
#ifndef TF_RUNTIME_SPEC_YAML_H
#define TF_RUNTIME_SPEC_YAML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <yaml.h>

#include "tf/status.h"

typedef struct tf__spec {
  yaml_document_t doc;
  const char *file; /* names the text in errors; borrowed */
  tf_status *st;    /* where errors go */
  bool loaded;
} tf__spec;

/* Loads the one YAML document of text[0..len) (a second one, a syntax
 * error, or more than max_len bytes: INVALID_ARGUMENT naming file, line
 * and column). On success tf__spec_fini must be called; on error nothing
 * is held. */
tf_code tf__spec_load(tf__spec *c, const char *text, size_t len,
                      const char *file, size_t max_len, tf_status *st);
void tf__spec_fini(tf__spec *c); /* NULL-safe, repeatable */
/* The root node, or NULL for an empty document. */
yaml_node_t *tf__spec_root(tf__spec *c);

/* INVALID_ARGUMENT "file:L:C: path: <fmt>" at n. */
tf_code tf__spec_err(tf__spec *c, const yaml_node_t *n, const char *path,
                     const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Whether n is YAML's null (empty, ~, null as a plain scalar). */
bool tf__spec_is_null(const yaml_node_t *n);
/* How n reads in "got ..." messages: 'text' (clipped to 60 characters,
 * non-printing ones as '?'), "nothing", "a sequence" or "a mapping". */
const char *tf__spec_shown(const yaml_node_t *n, char buf[80]);

/* A non-null scalar's text (no NUL inside), 1..max_len bytes. */
tf_code tf__spec_text(tf__spec *c, const yaml_node_t *n, const char *path,
                      const char *expected, size_t max_len, const char **out);
/* A decimal integer in lo..hi; unit is appended to the range in errors. */
tf_code tf__spec_int(tf__spec *c, const yaml_node_t *n, const char *path,
                     int64_t lo, int64_t hi, const char *unit, int64_t *out);
/* A finite number (YAML int or float) with lo <= x <= hi, or lo < x when
 * lo_open (and x < hi when hi_open). */
tf_code tf__spec_float(tf__spec *c, const yaml_node_t *n, const char *path,
                       double lo, bool lo_open, double hi, bool hi_open,
                       double *out);
/* true or false. */
tf_code tf__spec_bool(tf__spec *c, const yaml_node_t *n, const char *path,
                      bool *out);
/* One of names[0..count): *out gets its index; errors list them all. */
tf_code tf__spec_enum(tf__spec *c, const yaml_node_t *n, const char *path,
                      const char *const *names, int count, int *out);

/* Picks the values of the named keys out of mapping m (null m: all
 * absent): out[k] gets names[k]'s value or NULL. An unknown key ("unknown
 * key 'x' in PATH (expected a, b, c)"), a repeated key, a key that is not
 * a string, or m not a mapping are errors. */
tf_code tf__spec_fields(tf__spec *c, const yaml_node_t *m, const char *path,
                        const char *const *names, int count,
                        yaml_node_t **out);
/* The items of sequence n: count in min..max (caps every list). With
 * scalar_ok a non-null scalar counts as a list of itself. */
tf_code tf__spec_seq(tf__spec *c, const yaml_node_t *n, const char *path,
                     int min, int max, bool scalar_ok, int *count);
/* Item i of a node tf__spec_seq accepted (n itself for a scalar). */
yaml_node_t *tf__spec_item(tf__spec *c, yaml_node_t *n, int i);
/* The node at document index i (a mapping pair's key or value). */
yaml_node_t *tf__spec_node(tf__spec *c, int i);

#endif
