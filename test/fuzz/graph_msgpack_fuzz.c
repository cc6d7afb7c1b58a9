/* graph_msgpack_fuzz.c: libFuzzer harness for tf_graph_from_msgpack. A
 * failed decode leaves the graph empty; an accepted graph re-encodes to
 * bytes that decode to the same graph, and whatever YAML text it writes
 * must read back. */
#include <stddef.h>
#include <stdint.h>

#include "test/fuzz/fuzz_util.h"

static void check_yaml(const tf_graph *g) {
  tf_status st;
  tf_status_init(&st);
  char *text;
  size_t len;
  if (tf_graph_to_yaml(g, &text, &len, &st) != TF_OK) {
    FUZZ_CHECK(st.code == TF_INVALID_ARGUMENT, &st); /* e.g. non-UTF-8 name */
    return;
  }
  tf_graph *h = tf_graph_new();
  FUZZ_CHECK(tf_graph_from_yaml(h, text, len, &st) == TF_OK, &st);
  FUZZ_CHECK(tf_graph_num_nodes(h) == tf_graph_num_nodes(g), &st);
  tf_graph_free(h);
  free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tf_status st;
  tf_status_init(&st);
  tf_graph *g = tf_graph_new();
  tf_code c = tf_graph_from_msgpack(g, data, size, &st);
  if (c != TF_OK) {
    fuzz_check_rejection(c, &st);
    FUZZ_CHECK(tf_graph_num_nodes(g) == 0, &st);
    tf_graph_free(g);
    return 0;
  }
  void *a, *b;
  size_t alen, blen;
  fuzz_graph_bytes(g, &a, &alen);
  tf_graph *h = tf_graph_new();
  FUZZ_CHECK(tf_graph_from_msgpack(h, a, alen, &st) == TF_OK, &st);
  fuzz_graph_bytes(h, &b, &blen);
  FUZZ_CHECK(alen == blen && memcmp(a, b, alen) == 0, &st);
  check_yaml(g);
  free(a);
  free(b);
  tf_graph_free(h);
  tf_graph_free(g);
  return 0;
}
