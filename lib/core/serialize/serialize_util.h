/* serialize_util.h: pieces shared by the graph and tensor codecs (internal):
 * whole-file reads and writes whose errors name the path, an arena that
 * owns everything a graph decoder builds before tf_graph_import copies it,
 * attr type names, and UTF-8 checks for the text form. */
#ifndef TF_CORE_SERIALIZE_UTIL_H
#define TF_CORE_SERIALIZE_UTIL_H

#include <stdbool.h>
#include <stddef.h>

#include "tf/attr.h"
#include "tf/graph.h"
#include "tf/status.h"
#include "tf/tensor.h"

/* The graph format version both codecs write and accept. */
#define TF_GRAPH_FORMAT_VERSION 1

/* Reads the whole file into a malloc'd buffer (NUL-terminated, so text
 * parsers may rely on it; *len excludes the NUL). NOT_FOUND,
 * PERMISSION_DENIED or UNKNOWN naming path and the OS error. Not confined:
 * for the files a program is configured with (cluster spec, the master's
 * registry), never for a path a request names. */
tf_code tf__read_file(const char *path, char **buf, size_t *len,
                      tf_status *st);
/* tf__read_file through the process's file-access policy (fs_confine.h):
 * PERMISSION_DENIED naming path and the allowed directories outside them.
 * For paths requests name (graph files, .npy files). */
tf_code tf__read_file_confined(const char *path, char **buf, size_t *len,
                               tf_status *st);
/* Writes len bytes to path (created or truncated), through the process's
 * file-access policy; errors name the path. */
tf_code tf__write_file(const char *path, const void *buf, size_t len,
                       tf_status *st);

/* Everything a decoder allocates for the defs it hands to tf_graph_import:
 * blocks freed together by tf__arena_fini, plus tensors it holds one
 * reference to. Allocation aborts on OOM like other metadata (callers
 * bound sizes by the input length first). */
typedef struct tf__arena_block tf__arena_block;
typedef struct tf__arena {
  tf__arena_block *blocks;
  tf_tensor **tensors;
  size_t n_tensors, cap_tensors;
} tf__arena;

void tf__arena_init(tf__arena *a);
void tf__arena_fini(tf__arena *a);
/* Zeroed memory for count elements of size bytes; count may be 0. */
void *tf__arena_calloc(tf__arena *a, size_t count, size_t size);
/* Copy of n bytes plus a NUL. */
char *tf__arena_strndup(tf__arena *a, const char *s, size_t n);
/* Takes over one reference to t (released by tf__arena_fini). */
void tf__arena_own_tensor(tf__arena *a, tf_tensor *t);

/* Parses "int", "list(shape)", ... (tf_attr_type_name's names, "none"
 * excluded); false if unknown. */
bool tf__attr_type_parse(const char *s, size_t n, tf_attr_type *t,
                         bool *is_list);

/* tf_graph_import for decoders: an import failure caused by the decoded
 * contents (unknown op or input, arity, duplicate name, ...) is reported as
 * INVALID_ARGUMENT with import's message, since to the caller of a decoder
 * the bytes were invalid; RESOURCE_EXHAUSTED passes through. */
tf_code tf__graph_import_decoded(tf_graph *g, const tf_node_def *defs, int n,
                                 tf_status *st);

/* INVALID_ARGUMENT "<where>: attr 'x' appears twice" if two of the n attrs
 * share a name (O(n log n)). */
tf_code tf__attrs_check_unique(const tf_attr_kv *kv, int n, const char *where,
                               tf_status *st);

/* True when s[0..n) is well-formed UTF-8 (no overlongs or surrogates). */
bool tf__utf8_valid(const char *s, size_t n);

/* As tf_graph_to_msgpack for the nodes from index `from` on (a remote
 * session's ExtendSession sends only the new nodes; they may refer to
 * earlier ones, so the receiver decodes them into the graph it has). */
tf_code tf__graph_nodes_to_msgpack(const tf_graph *g, int from, void **buf,
                                   size_t *len, tf_status *st);

/* Vets decoded nodes before they are imported (an op allowlist): non-OK
 * refuses the whole graph, g untouched. */
typedef tf_code (*tf__node_defs_check_fn)(const tf_node_def *defs, int n, void *arg,
                                          tf_status *st);
/* tf_graph_from_msgpack with check (NULL: none) run on the decoded nodes
 * before anything is added to g. */
tf_code tf__graph_from_msgpack_checked(tf_graph *g, const void *buf, size_t len,
                                       tf__node_defs_check_fn check, void *arg,
                                       tf_status *st);

#endif
