/* gen_corpus.c: writes seed inputs for the fuzz harnesses: valid .npy and
 * tensor msgpack encodings of every dtype in several shapes, graphs
 * with every attr type in msgpack and YAML, message bodies for the
 * msg_* harnesses (msg_seeds.h), whole requests for rpc_dispatch
 * (dispatch_seeds.h), and checkpoint shards, manifests and
 * pointer files (each behind the harness's mode byte). Usage: gen_corpus DIR (writes
 * DIR/<harness>/seed_<n>). Built and run by scripts/run-fuzz.sh. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <unistd.h>

#include "lib/core/serialize/ckpt_shard.h"
#include "lib/runtime/ckpt_dir.h"
#include "tf/tf.h"
#include "test/fuzz/dispatch_seeds.h"
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

/* buf behind each mode byte (0: as is; 1: the harness fixes the CRC). */
static void put_modes(const char *harness, int *n, const void *buf, size_t len) {
  char *b = malloc(len + 1);
  memcpy(b + 1, buf, len);
  for (int mode = 0; mode < 2; mode++) {
    b[0] = (char)mode;
    put(harness, (*n)++, b, len + 1);
  }
  free(b);
}

/* Shards with whole tensors of several dtypes and with slices; a
 * manifest and a pointer file. */
static void checkpoints(void) {
  char dir[] = "/tmp/gen_corpus.XXXXXX", path[64];
  if (mkdtemp(dir) == NULL) die("mkdtemp", NULL);
  snprintf(path, sizeof path, "%s/s", dir);
  tf_tensor *t[4] = {make_tensor(TF_FLOAT32, tf_shape_of(2, 2, 3), 1),
                     make_tensor(TF_STRING, tf_shape_of(1, 2), 2),
                     make_tensor(TF_BOOL, tf_shape_of(1, 3), 3),
                     make_tensor(TF_INT64, tf_shape_of(2, 1, 3), 4)};
  tf_ckpt_entry e[5] = {{"w", NULL, t[0]}, {"vocab", "", t[1]}, {"mask", NULL, t[2]},
                        {"emb", "2 3 0,1:-", t[3]}, {"emb", "2 3 1,1:-", t[3]}};
  int n = 0;
  tf_status st;
  for (int k = 1; k <= 5; k++) {
    if (tf_ckpt_shard_write(path, e, k, &st) != TF_OK) die("shard", &st);
    char buf[4096];
    FILE *f = fopen(path, "rb");
    size_t len = f ? fread(buf, 1, sizeof buf, f) : 0;
    if (f == NULL || len == 0 || len == sizeof buf) die(path, NULL);
    fclose(f);
    put_modes("ckpt_shard", &n, buf, len);
  }
  unlink(path);
  rmdir(dir);
  for (int i = 0; i < 4; i++) tf_tensor_unref(t[i]);
  tf_ckpt_shard_ref sh[2] = {{"ps-0.shard", 1234, 0xdeadbeef}, {"worker-0.shard", 0, 0}};
  tf_ckpt_manifest m = {.job = "fmnist-mlp", .step = 1000, .time_ms = 1700000000000,
                        .spec_hash = "0123abcd", .mode = "sync", .n_shards = 2, .shards = sh};
  char *text;
  size_t len;
  if (tf_ckpt_manifest_format(&m, &text, &len, &st) != TF_OK) die("manifest", &st);
  n = 0;
  put_modes("ckpt_manifest", &n, text, len);
  put_modes("ckpt_manifest", &n, text, len - 17); /* the body alone */
  free(text);
  char *names[] = {"ckpt-800", "ckpt-900", "ckpt-1000"};
  text = tf_ckpt_pointer_format(names, 3);
  put_modes("ckpt_manifest", &n, text, strlen(text));
  free(text);
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
  dispatch_seeds(put);
  checkpoints();
  return 0;
}
