/* serialize.h: graphs and tensors to and from bytes.
 *
 * Graphs: msgpack (the wire and .tfg files) and a YAML text form (readable,
 * diffable). Tensors: msgpack and NumPy's .npy format (version 1.0/2.0,
 * little-endian, C order), so users can make and read tensors with numpy.
 *
 * Every decoder takes untrusted bytes: malformed, truncated or hostile input
 * gives INVALID_ARGUMENT or DATA_LOSS with the offset or field that was
 * wrong, never a crash, and allocates no more than the input justifies
 * (sizes are checked against the bytes actually present). Encoded buffers
 * are malloc'd; the caller frees them with free(). */
#ifndef TF_SERIALIZE_H
#define TF_SERIALIZE_H

#include <stddef.h>

#include "tf/export.h"
#include "tf/graph.h"
#include "tf/status.h"
#include "tf/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Graph msgpack layout (docs/graph-format.md): map {"version": 1, "nodes": [node]}
 * with node = map {"name", "op", "device", "inputs": [str],
 * "attrs": map name -> attr}. */
TF_API tf_code tf_graph_to_msgpack(const tf_graph *g, void **buf, size_t *len,
                                   tf_status *st);
/* Imports the nodes into g (normally empty) with tf_graph_import. */
TF_API tf_code tf_graph_from_msgpack(tf_graph *g, const void *buf, size_t len,
                                     tf_status *st);

TF_API tf_code tf_graph_to_yaml(const tf_graph *g, char **text, size_t *len,
                                tf_status *st);
TF_API tf_code tf_graph_from_yaml(tf_graph *g, const char *text, size_t len,
                                  tf_status *st);

/* By extension: ".yaml"/".yml" is YAML, anything else msgpack (.tfg).
 * Errors name the path. */
TF_API tf_code tf_graph_save(const tf_graph *g, const char *path,
                             tf_status *st);
TF_API tf_code tf_graph_load(tf_graph *g, const char *path, tf_status *st);

/* Tensor msgpack: map {"dtype": int, "shape": [int], "data": bin} (strings:
 * "data" is an array of bin). */
TF_API tf_code tf_tensor_to_msgpack(const tf_tensor *t, void **buf, size_t *len,
                                    tf_status *st);
TF_API tf_code tf_tensor_from_msgpack(const void *buf, size_t len,
                                      tf_tensor **out, tf_status *st);

/* .npy: bool, int8..64, uint8..64, float16, float32, float64, complex64.
 * bfloat16 and string tensors give UNIMPLEMENTED on write; unknown descrs
 * (e.g. '>f4', object arrays, Fortran order) INVALID_ARGUMENT on read. */
TF_API tf_code tf_tensor_to_npy(const tf_tensor *t, void **buf, size_t *len,
                                tf_status *st);
TF_API tf_code tf_tensor_from_npy(const void *buf, size_t len, tf_tensor **out,
                                  tf_status *st);
TF_API tf_code tf_tensor_save_npy(const tf_tensor *t, const char *path,
                                  tf_status *st);
TF_API tf_code tf_tensor_load_npy(const char *path, tf_tensor **out,
                                  tf_status *st);

#ifdef __cplusplus
}
#endif

#endif
