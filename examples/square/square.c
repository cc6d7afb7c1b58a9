/* square.c: the smallest complete libtf program: builds x -> Square(x),
 * runs it in a session on [1, 2, 3, 4] and prints the result.
 *
 * Build against an installed libtf:
 *   cc square.c $(pkg-config --cflags --libs tf) -o square
 * or in the tree: make build/examples/square/square.
 * Prints "tf <version>" and "y = [1, 4, 9, 16]"; exits 1 with the error on
 * failure. */
#include <stdio.h>
#include <string.h>

#include "tf/tf.h"

static int fail(const char *what, const tf_status *st) {
  fprintf(stderr, "square: %s: %s: %s\n", what, tf_code_name(st->code),
          st->msg);
  return 1;
}

int main(void) {
  if (strcmp(tf_version(), TF_VERSION_STRING) != 0) {
    fprintf(stderr, "square: built with tf %s headers, running libtf %s\n",
            TF_VERSION_STRING, tf_version());
    return 1;
  }
  printf("tf %s\n", tf_version());

  tf_status st;
  tf_graph *g = tf_graph_new();
  tf_node_builder *b = tf_node_begin(g, "Placeholder", "x");
  tf_node_set_attr(b, "dtype", tf_attr_type_v(TF_FLOAT32));
  tf_node_set_attr(b, "shape", tf_attr_shape(tf_shape_of(1, -1)));
  tf_node *x = tf_node_finish(b, &st);
  if (x == NULL) return fail("Placeholder", &st);
  b = tf_node_begin(g, "Square", "y");
  tf_node_add_input(b, (tf_output){x, 0});
  if (tf_node_finish(b, &st) == NULL) return fail("Square", &st);

  tf_session *s = tf_session_new(g, NULL, &st);
  if (s == NULL) return fail("session", &st);
  tf_tensor *in = tf_tensor_vec_f32(4, (const float[]){1, 2, 3, 4}), *out;
  const char *feed = "x", *fetch = "y";
  int rc = 0;
  if (tf_session_run(s, NULL, &feed, &in, 1, &fetch, &out, 1, NULL, 0, NULL,
                     &st) != TF_OK) {
    rc = fail("run", &st);
  } else {
    printf("y = [");
    for (int64_t i = 0; i < out->n; i++)
      printf("%s%g", i ? ", " : "", tf_tensor_get_f64(out, i));
    printf("]\n");
    tf_tensor_unref(out);
  }
  tf_tensor_unref(in);
  tf_session_free(s);
  tf_graph_free(g);
  return rc;
}
