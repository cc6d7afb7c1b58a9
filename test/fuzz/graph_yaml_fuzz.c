/* graph_yaml_fuzz.c: libFuzzer harness for tf_graph_from_yaml. A failed
 * decode leaves the graph empty; an accepted graph writes YAML that reads
 * back to the same graph (compared through its msgpack bytes) and the same
 * text. */
#include <stddef.h>
#include <stdint.h>

#include "test/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tf_status st;
  tf_status_init(&st);
  tf_graph *g = tf_graph_new();
  tf_code c = tf_graph_from_yaml(g, (const char *)data, size, &st);
  if (c != TF_OK) {
    fuzz_check_rejection(c, &st);
    FUZZ_CHECK(tf_graph_num_nodes(g) == 0, &st);
    tf_graph_free(g);
    return 0;
  }
  char *text, *text2;
  size_t len, len2;
  FUZZ_CHECK(tf_graph_to_yaml(g, &text, &len, &st) == TF_OK, &st);
  tf_graph *h = tf_graph_new();
  FUZZ_CHECK(tf_graph_from_yaml(h, text, len, &st) == TF_OK, &st);
  void *a, *b;
  size_t alen, blen;
  fuzz_graph_bytes(g, &a, &alen);
  fuzz_graph_bytes(h, &b, &blen);
  FUZZ_CHECK(alen == blen && memcmp(a, b, alen) == 0, &st);
  FUZZ_CHECK(tf_graph_to_yaml(h, &text2, &len2, &st) == TF_OK, &st);
  FUZZ_CHECK(len == len2 && memcmp(text, text2, len) == 0, &st);
  free(a);
  free(b);
  free(text);
  free(text2);
  tf_graph_free(h);
  tf_graph_free(g);
  return 0;
}
