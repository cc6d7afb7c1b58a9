/* gen_corpus.c: writes seed inputs for the fuzz harnesses: valid .npy and
 * tensor msgpack encodings of every dtype in several shapes, graphs
 * with every attr type in msgpack and YAML, and message bodies for the
 * msg_* harnesses (msg_seeds.h). Usage: gen_corpus DIR (writes
 * DIR/<harness>/seed_<n>). Built and run by scripts/run-fuzz.sh. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tf/tf.h"
#include "test/fuzz/msg_seeds.h"

static const char *out_dir;

static void die(const char *what, const tf_status *st) {
  fprintf(stderr, "gen_corpus: %s: %s\n", what, st ? st->msg : "");
  exit(1);
}

static void put(const char *harness, int n, const void *buf, size_t len) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", out_dir, harness);
  mkdir(path, 0755);
  snprintf(path, sizeof path, "%s/%s/seed_%03d", out_dir, harness, n);
  FILE *f = fopen(path, "wb");
  if (f == NULL || fwrite(buf, 1, len, f) != len || fclose(f) != 0) {
    die(path, NULL);
  }
}

static tf_tensor *make_tensor(tf_dtype dt, tf_shape shape, int salt) {
  tf_tensor *t;
  tf_status st;
  if (tf_tensor_new(dt, &shape, &t, &st) != TF_OK) {
    die("tensor", &st);
  }
  for (int64_t i = 0; i < t->n; i++) {
    if (dt == TF_STRING) {
      char s[16];
      int len = snprintf(s, sizeof s, "s%d\n%lld", salt, (long long)i);
      tf_tensor_set_string(t, i, s, (size_t)len, &st);
      continue;
    }
    unsigned char *p = (unsigned char *)t->data + (size_t)i * tf_dtype_size(dt);
    for (size_t b = 0; b < tf_dtype_size(dt); b++) {
      p[b] = (unsigned char)(i * 37 + (int64_t)b * 11 + salt);
    }
    if (dt == TF_BOOL) {
      p[0] &= 1;
    }
  }
  return t;
}

static void tensors(void) {
  static const tf_dtype dts[] = {
      TF_FLOAT32, TF_FLOAT64, TF_INT32, TF_UINT8,   TF_INT16,
      TF_INT8,    TF_STRING,  TF_COMPLEX64, TF_INT64, TF_BOOL,
      TF_BFLOAT16, TF_UINT16, TF_FLOAT16, TF_UINT32, TF_UINT64};
  tf_shape shapes[] = {tf_shape_scalar(), tf_shape_of(1, 3),
                       tf_shape_of(2, 2, 0), tf_shape_of(3, 1, 2, 2)};
  int n_npy = 0, n_mp = 0;
  for (size_t k = 0; k < sizeof dts / sizeof *dts; k++) {
    for (int j = 0; j < 4; j++) {
      tf_tensor *t = make_tensor(dts[k], shapes[j], (int)k);
      void *buf;
      size_t len;
      tf_status st;
      if (tf_tensor_to_msgpack(t, &buf, &len, &st) != TF_OK) {
        die("msgpack", &st);
      }
      put("tensor_msgpack", n_mp++, buf, len);
      free(buf);
      if (tf_tensor_to_npy(t, &buf, &len, &st) == TF_OK) {
        put("npy", n_npy++, buf, len);
        free(buf);
      }
      tf_tensor_unref(t);
    }
  }
}

static tf_node *finish(tf_node_builder *b) {
  tf_status st;
  tf_node *n = tf_node_finish(b, &st);
  if (n == NULL) {
    die("node", &st);
  }
  return n;
}

/* A small graph using every attr type and edge kind. */
static tf_graph *graph(int variant) {
  tf_graph *g = tf_graph_new();
  tf_node_builder *b = tf_node_begin(g, "Placeholder", "x");
  tf_node_set_attr(b, "dtype", tf_attr_type_v(TF_FLOAT32));
  tf_node_set_attr(b, "shape", tf_attr_shape(tf_shape_of(2, 2, -1)));
  tf_node *x = finish(b);
  tf_tensor *v = make_tensor(variant ? TF_STRING : TF_FLOAT32, tf_shape_of(1, 2), 3);
  b = tf_node_begin(g, "Const", "c");
  tf_node_set_attr(b, "value", tf_attr_tensor(v));
  tf_node_set_attr(b, "dtype", tf_attr_type_v(v->dtype));
  tf_node *c = finish(b);
  b = tf_node_begin(g, "NoOp", "init");
  tf_node_set_device(b, "/job:ps/task:0");
  int64_t ints[] = {1, -2, 3};
  double floats[] = {0.5, INFINITY, -0.0};
  bool bools[] = {true, false};
  const char *strs[] = {"a", "loc:@x", ""};
  tf_dtype types[] = {TF_INT32, TF_BFLOAT16};
  tf_shape shapes[] = {tf_shape_unknown(), tf_shape_of(1, -1)};
  tf_tensor *tl[] = {v};
  tf_node_set_attr(b, "_i", tf_attr_int(-7));
  tf_node_set_attr(b, "_f", tf_attr_float(1e-3));
  tf_node_set_attr(b, "_b", tf_attr_bool(true));
  tf_node_set_attr(b, "_s", tf_attr_string("VALID"));
  tf_node_set_attr(b, "_t", tf_attr_type_v(TF_COMPLEX64));
  tf_node_set_attr(b, "_sh", tf_attr_shape(tf_shape_scalar()));
  tf_node_set_attr(b, "_te", tf_attr_tensor(v));
  tf_node_set_attr(b, "_li", tf_attr_int_list(ints, 3));
  tf_node_set_attr(b, "_lf", tf_attr_float_list(floats, 3));
  tf_node_set_attr(b, "_lb", tf_attr_bool_list(bools, 2));
  tf_node_set_attr(b, "_ls", tf_attr_string_list(strs, 3));
  tf_node_set_attr(b, "_lt", tf_attr_type_list(types, 2));
  tf_node_set_attr(b, "_lsh", tf_attr_shape_list(shapes, 2));
  tf_node_set_attr(b, "_lte", tf_attr_tensor_list(tl, variant ? 1 : 0));
  tf_node *init = finish(b);
  b = tf_node_begin(g, "Identity", "y");
  tf_node_add_input(b, (tf_output){variant ? x : c, 0});
  tf_node_add_control_input(b, init);
  tf_node_colocate_with(b, x);
  finish(b);
  (void)c;
  tf_tensor_unref(v);
  return g;
}

static void graphs(void) {
  for (int variant = 0; variant < 2; variant++) {
    tf_graph *g = graph(variant);
    void *buf;
    char *text;
    size_t len;
    tf_status st;
    if (tf_graph_to_msgpack(g, &buf, &len, &st) != TF_OK) {
      die("graph msgpack", &st);
    }
    put("graph_msgpack", variant, buf, len);
    free(buf);
    if (tf_graph_to_yaml(g, &text, &len, &st) != TF_OK) {
      die("graph yaml", &st);
    }
    put("graph_yaml", variant, text, len);
    free(text);
    tf_graph_free(g);
  }
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: gen_corpus DIR\n");
    return 2;
  }
  out_dir = argv[1];
  mkdir(out_dir, 0755);
  tensors();
  graphs();
  msg_seeds(put);
  return 0;
}
