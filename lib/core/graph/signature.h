/* signature.h: node and tensor names, and a step's signature.
 *
 * Node names follow TensorFlow's rule [A-Za-z0-9.][A-Za-z0-9_.\-/>]*.
 * Names that begin with '_' are reserved for the nodes the system makes
 * for itself (a signature's _Arg/_Retval): only graphs made with
 * tf__graph_new_internal (graph_impl.h) accept them.
 *
 * A tensor name is "node" (output 0) or "node:port", the port a decimal
 * number without sign or leading zeros ("x:0", "x:12"; not "x:", "x:-1",
 * "x:+1", "x: 1", "x:01"). A target is "node" or "^node".
 *
 * A signature is what a Run names: its feeds and fetches canonical
 * ("x" -> "x:0"), sorted and unique, its targets sorted and unique, the
 * maps from the caller's order to the sorted one, and a cache key that
 * no other signature shares. The local session and the master both build
 * their signatures here, so a name means the same thing to both. */
#ifndef TF_CORE_GRAPH_SIGNATURE_H
#define TF_CORE_GRAPH_SIGNATURE_H

#include <stdbool.h>
#include <stddef.h>

#include "tf/status.h"

/* Whether name[0..len) is a valid node name; internal also allows a
 * leading '_'. When not, writes what is wrong ("'%' at offset 2 is not
 * allowed ...") into why (why_size bytes; why may be NULL). */
bool tf__node_name_valid(const char *name, size_t len, bool internal,
                         char *why, size_t why_size);

/* Splits a tensor name at its last ':' and parses the port (port 0 when
 * there is no ':'); the node part is not checked. Returns NULL, with
 * *node_len and *port set, or a description of what is wrong with the
 * port (static storage). */
const char *tf__tensor_name_split(const char *s, size_t *node_len, int *port);

/* One name of a signature. */
typedef struct tf__sig_name {
  char *canon;  /* "node:port" (feeds, fetches) or "node" (targets) */
  char *node;   /* the node part (in canon's allocation) */
  int port;     /* -1 for targets */
} tf__sig_name;

typedef struct tf__sig {
  int n_feeds, n_fetches, n_targets;   /* unique */
  /* Sorted by canon (strcmp); an empty set's array (and an empty
   * position map) is NULL. */
  tf__sig_name *feeds;
  tf__sig_name *fetches;
  tf__sig_name *targets;
  int n_feed_args, n_fetch_args;       /* as the caller gave them */
  int *feed_pos;   /* the caller's feed i is feeds[feed_pos[i]] */
  int *fetch_pos;  /* the caller's fetch i is fetches[fetch_pos[i]] */
  char *key;       /* equal keys <=> equal (feeds, fetches, targets) */
} tf__sig;

/* Parses, canonicalises, sorts and dedupes the names of one Run. Counts
 * must be >= 0, arrays non-NULL when their count is > 0. Errors are
 * INVALID_ARGUMENT naming the name and whether it is a feed, fetch or
 * target: a NULL or invalid name, or one tensor fed twice (in any
 * spelling). A repeated fetch or target is fine (one entry, both callers'
 * positions map to it). On error sig is left empty (tf__sig_fini-safe). */
tf_code tf__sig_build(tf__sig *sig, const char *const *feeds, int n_feeds,
                      const char *const *fetches, int n_fetches,
                      const char *const *targets, int n_targets,
                      tf_status *st);
void tf__sig_fini(tf__sig *sig);

#endif
