/* serialize_testlib.h: helpers shared by the serialization tests: a test op
 * with an attr of every type (and defaults), a graph using every feature
 * the formats carry, random tensors and attr values of every kind, and a
 * deep graph comparison. Static inline so each test includes what it
 * uses. */
#ifndef TF_TEST_SERIALIZE_TESTLIB_H
#define TF_TEST_SERIALIZE_TESTLIB_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/framework/op_registry.h"
#include "test/unit/testutil.h"

/* "SerdeTest": a data input, a list input, and one attr of every type;
 * most with defaults so decoding exercises default filling. */
static const tf_op_spec serde_test_ops[] = {
    {.name = "SerdeTest",
     .inputs = {"x: T", "ys: N * T"},
     .outputs = {"out: T"},
     .attrs = {"T: type", "N: int >= 0", "i: int = -3", "f: float = 0.25",
               "b: bool = true", "s: string = 'SAME'", "sh: shape = [2, -1]",
               "te: tensor", "li: list(int) = []", "lf: list(float) = [1.5]",
               "lb: list(bool) = [true, false]", "ls: list(string) = ['a']",
               "lt: list(type) = [float, int32]", "lsh: list(shape)",
               "lte: list(tensor)"},
     .doc = "Test op for the serialization tests."},
};
TF_REGISTER_OPS("serde_test", serde_test_ops)

static inline tf_node *st_finish(tf_node_builder *b) {
  tf_status st;
  tf_node *n = tf_node_finish(b, &st);
  ck_assert_msg(n != NULL, "%s", st.msg);
  return n;
}

static inline tf_node *st_const(tf_graph *g, const char *name, tf_tensor *t) {
  tf_node_builder *b = tf_node_begin(g, "Const", name);
  tf_node_set_attr(b, "value", tf_attr_tensor(t));
  tf_node_set_attr(b, "dtype", tf_attr_type_v(t->dtype));
  return st_finish(b);
}

static inline tf_tensor *st_string_tensor(tf_shape shape,
                                          const char *const *s) {
  tf_tensor *t;
  tf_status st;
  ck_assert(tf_tensor_new(TF_STRING, &shape, &t, &st) == TF_OK);
  for (int64_t i = 0; i < t->n; i++) {
    ck_assert(tf_tensor_set_string(t, i, s[i], strlen(s[i]), &st) == TF_OK);
  }
  return t;
}

static const tf_dtype st_all_dtypes[] = {
    TF_FLOAT32, TF_FLOAT64, TF_INT32,  TF_UINT8,     TF_INT16,
    TF_INT8,    TF_STRING,  TF_COMPLEX64, TF_INT64,  TF_BOOL,
    TF_BFLOAT16, TF_UINT16, TF_FLOAT16, TF_UINT32,   TF_UINT64};
#define ST_N_DTYPES ((int)(sizeof st_all_dtypes / sizeof st_all_dtypes[0]))

/* A random shape of rank 0..3 with dims 0..4 (so empty tensors occur). */
static inline tf_shape st_rand_shape(void) {
  int rank = (int)(tt_rand_u64() % 4);
  int64_t dims[TF_MAX_RANK];
  for (int i = 0; i < rank; i++) {
    dims[i] = (int64_t)(tt_rand_u64() % 5);
  }
  return tf_shape_make(rank, dims);
}

/* Random bytes of length 0..max (any byte value when binary, else
 * printable ASCII plus some UTF-8, quotes, escapes and whitespace). */
static inline size_t st_rand_bytes(char *buf, size_t max, bool binary) {
  static const char *const pieces[] = {"a", "Z", " ", "\"", "'", "\\", "\n",
                                       "\t", "\xc3\xa9", "\xe2\x82\xac", ":",
                                       "#", "- ", "{", "]", ",", "\r", "\x01",
                                       "\xf0\x9f\x98\x80", "~", "!", "&", "*"};
  size_t n = (size_t)(tt_rand_u64() % (max + 1)), len = 0;
  while (len < n) {
    if (binary) {
      buf[len++] = (char)tt_rand_u64();
      continue;
    }
    const char *p = pieces[tt_rand_u64() % (sizeof pieces / sizeof *pieces)];
    size_t pl = strlen(p);
    if (len + pl > max) {
      break;
    }
    memcpy(buf + len, p, pl);
    len += pl;
  }
  return len;
}

/* Random tensor of dtype dt: numeric bytes are raw random bits when
 * any_bits (NaN payloads, every float16 pattern), else values that every
 * format keeps exactly (finite floats, canonical NaN, infinities, -0). */
static inline tf_tensor *st_rand_tensor(tf_dtype dt, tf_shape shape,
                                        bool any_bits) {
  tf_tensor *t;
  tf_status st;
  ck_assert_msg(tf_tensor_new(dt, &shape, &t, &st) == TF_OK, "%s", st.msg);
  for (int64_t i = 0; i < t->n; i++) {
    char *p = (char *)t->data + (size_t)i * tf_dtype_size(dt);
    if (dt == TF_STRING) {
      char buf[64];
      size_t len = st_rand_bytes(buf, sizeof buf, any_bits);
      ck_assert(tf_tensor_set_string(t, i, buf, len, &st) == TF_OK);
      continue;
    }
    if (dt == TF_BOOL) {
      *(bool *)p = tt_rand_u64() & 1;
      continue;
    }
    uint64_t r = tt_rand_u64();
    memcpy(p, &r, tf_dtype_size(dt));
    if (!any_bits && tf_dtype_is_float(dt)) {
      static const double special[] = {NAN, INFINITY, -INFINITY, -0.0, 0.0};
      double v = (r % 7 < 5) ? special[r % 5] : tt_rand_normal() * 1e3;
      if (r % 11 == 0) {
        v = tt_rand_normal() * 1e-30;
      }
      switch (dt) {
      case TF_FLOAT32: *(float *)p = (float)v; break;
      case TF_FLOAT64: *(double *)p = v; break;
      case TF_FLOAT16: *(tf_float16 *)p = tf_double_to_float16(v); break;
      default: *(tf_bfloat16 *)p = tf_float_to_bfloat16((float)v); break;
      }
      if (isnan(v)) { /* the canonical quiet NaN of each width */
        if (dt == TF_FLOAT32) {
          *(uint32_t *)p = 0x7fc00000u;
        } else if (dt == TF_FLOAT64) {
          *(uint64_t *)p = 0x7ff8000000000000ull;
        } else {
          *(uint16_t *)p = dt == TF_FLOAT16 ? 0x7e00 : 0x7fc0;
        }
      }
    }
    if (!any_bits && dt == TF_COMPLEX64) {
      tf_complex64 *c = (tf_complex64 *)p;
      c->re = (float)tt_rand_normal();
      c->im = (float)(tt_rand_normal() * 1e6);
    }
  }
  return t;
}

/* The graph every codec test round-trips: placeholders of partially known
 * shape, consts of several dtypes (a string one, an empty one, a rank-0
 * one), a SerdeTest node with every attr type, list inputs, control
 * inputs, a device, colocation, and NoOps with "_" attrs. Tensors made here
 * are referenced by the graph only. */
static inline tf_graph *st_rich_graph(void) {
  tf_graph *g = tf_graph_new();
  tf_node *x = tt_placeholder(g, "x", TF_FLOAT32, tf_shape_of(2, 2, -1));
  tf_node *u = tt_placeholder(g, "scope/u", TF_FLOAT32, tf_shape_unknown());
  tf_tensor *cv = tf_tensor_vec_f32(3, (float[]){1.5f, -2.0f, 1e-7f});
  tf_node *c = st_const(g, "c", cv);
  tf_tensor_unref(cv);
  tf_tensor *sv = st_string_tensor(tf_shape_of(2, 1, 2),
                                   (const char *[]){"hello", ""});
  tf_node *cs = st_const(g, "strings", sv);
  tf_tensor_unref(sv);
  tf_node_builder *b = tf_node_begin(g, "NoOp", "init");
  tf_node_set_device(b, "/job:ps/replica:0/task:0/device:CPU:0");
  tf_node *init = st_finish(b);

  tf_tensor *te = tf_tensor_scalar_i64(-42);
  tf_tensor *e = NULL;
  tf_status st;
  ck_assert(tf_tensor_new(TF_FLOAT64, &(tf_shape){.rank = 2, .dims = {0, 3}},
                          &e, &st) == TF_OK);
  tf_tensor *s1 = st_string_tensor(tf_shape_of(1, 3),
                                   (const char *[]){"a b", "\xe2\x82\xac", ""});
  tf_tensor *tl[] = {e, s1, te};
  tf_shape shapes[] = {tf_shape_unknown(), tf_shape_scalar(),
                       tf_shape_of(3, 1, -1, 5)};
  b = tf_node_begin(g, "SerdeTest", "y");
  tf_node_add_input(b, (tf_output){x, 0});
  tf_node_add_input_list(b, (tf_output[]){{u, 0}, {c, 0}, {x, 0}}, 3);
  tf_node_add_control_input(b, init);
  tf_node_add_control_input(b, cs);
  tf_node_set_device(b, "/job:worker/task:1");
  tf_node_colocate_with(b, c);
  tf_node_set_attr(b, "i", tf_attr_int(INT64_MIN));
  tf_node_set_attr(b, "f", tf_attr_float(-0.0));
  tf_node_set_attr(b, "s", tf_attr_string("VALID \"quoted\"\n"));
  tf_node_set_attr(b, "te", tf_attr_tensor(te));
  tf_node_set_attr(b, "lf", tf_attr_float_list((double[]){1e300, -INFINITY,
                                                          0.1, 5e-324}, 4));
  tf_node_set_attr(b, "lsh", tf_attr_shape_list(shapes, 3));
  tf_node_set_attr(b, "lte", tf_attr_tensor_list(tl, 3));
  tf_node *y = st_finish(b);
  tf_tensor_unref(te);
  tf_tensor_unref(e);
  tf_tensor_unref(s1);

  b = tf_node_begin(g, "Identity", NULL);
  tf_node_add_input(b, (tf_output){y, 0});
  tf_node_colocate_with(b, x);
  tf_node_colocate_with(b, y);
  st_finish(b);
  b = tf_node_begin(g, "NoOp", "after");
  tf_node_add_control_input(b, y);
  tf_node_set_attr(b, "_empty_types", tf_attr_type_list(NULL, 0));
  tf_node_set_attr(b, "_empty_tensors", tf_attr_tensor_list(NULL, 0));
  tf_node_set_attr(b, "_true", tf_attr_string("true"));
  tf_node_set_attr(b, "_num", tf_attr_string("12"));
  tf_node_set_attr(b, "_nan", tf_attr_float(NAN));
  tf_node_set_attr(b, "_types", tf_attr_type_list((tf_dtype[]){TF_BFLOAT16,
                                                  TF_STRING}, 2));
  tf_node_set_attr(b, "_bools", tf_attr_bool_list((bool[]){true}, 1));
  tf_node_set_attr(b, "_strs", tf_attr_string_list((const char *[]){"", "x y",
                                                    "null", "-1"}, 4));
  st_finish(b);
  return g;
}

/* Asserts a and b hold the same nodes in the same order: names, ops,
 * devices, inputs (data and control), every attr, output types and
 * shapes. */
static inline void st_assert_graphs_equal(const tf_graph *a,
                                          const tf_graph *b) {
  ck_assert_int_eq(tf_graph_num_nodes(a), tf_graph_num_nodes(b));
  for (int i = 0; i < tf_graph_num_nodes(a); i++) {
    const tf_node *na = tf_graph_node(a, i), *nb = tf_graph_node(b, i);
    tf_node_def da, db;
    tf_node_to_def(na, &da);
    tf_node_to_def(nb, &db);
    ck_assert_str_eq(da.name, db.name);
    ck_assert_str_eq(da.op, db.op);
    ck_assert_str_eq(da.device ? da.device : "", db.device ? db.device : "");
    ck_assert_int_eq(da.n_inputs, db.n_inputs);
    for (int k = 0; k < da.n_inputs; k++) {
      ck_assert_str_eq(da.inputs[k], db.inputs[k]);
    }
    tf_node_def_fini(&da);
    tf_node_def_fini(&db);
    ck_assert_int_eq(tf_node_num_attrs(na), tf_node_num_attrs(nb));
    for (int k = 0; k < tf_node_num_attrs(na); k++) {
      char sa[512], sb[512];
      ck_assert_str_eq(tf_node_attr_name(na, k), tf_node_attr_name(nb, k));
      ck_assert_msg(tf_attr_value_equal(tf_node_attr_at(na, k),
                                        tf_node_attr_at(nb, k)),
                    "node %s attr %s: %s vs %s", tf_node_name(na),
                    tf_node_attr_name(na, k),
                    tf_attr_value_str(tf_node_attr_at(na, k), sa, sizeof sa),
                    tf_attr_value_str(tf_node_attr_at(nb, k), sb, sizeof sb));
    }
    ck_assert_int_eq(tf_node_num_outputs(na), tf_node_num_outputs(nb));
    for (int k = 0; k < tf_node_num_outputs(na); k++) {
      ck_assert_int_eq(tf_node_output_type(na, k), tf_node_output_type(nb, k));
      ck_assert(tf_shape_equal(tf_node_output_shape(na, k),
                               tf_node_output_shape(nb, k)));
    }
  }
}

/* A random attr value (arrays owned by the caller's pool, tensors by the
 * caller: they are appended to tensors[*nt]). yaml_safe keeps to values
 * the YAML form keeps bit-exactly (no NaN payloads, UTF-8 or binary
 * strings both fine). */
typedef struct st_pool {
  void *blocks[256];
  int n;
  tf_tensor *tensors[256];
  int nt;
} st_pool;

static inline void *st_pool_alloc(st_pool *p, size_t size) {
  ck_assert(p->n < 256);
  p->blocks[p->n] = calloc(1, size ? size : 1);
  return p->blocks[p->n++];
}

static inline void st_pool_free(st_pool *p) {
  for (int i = 0; i < p->n; i++) {
    free(p->blocks[i]);
  }
  for (int i = 0; i < p->nt; i++) {
    tf_tensor_unref(p->tensors[i]);
  }
  p->n = p->nt = 0;
}

static inline double st_rand_double(bool any_bits) {
  uint64_t r = tt_rand_u64();
  double v;
  if (any_bits) {
    memcpy(&v, &r, sizeof v);
    return v;
  }
  static const double special[] = {0.0, -0.0, INFINITY, -INFINITY, 1.0,
                                   0.1, 1e-310, 1.7976931348623157e308};
  if (r % 3 == 0) {
    return special[(r >> 8) % 8];
  }
  v = tt_rand_normal() * pow(10.0, (double)((int)((r >> 16) % 40) - 20));
  return v;
}

static inline void st_rand_elem(st_pool *p, tf_attr_type t, void *slot,
                                bool any_bits) {
  uint64_t r = tt_rand_u64();
  switch (t) {
  case TF_ATTR_INT:
    *(int64_t *)slot = (r & 1) ? (int64_t)r : (int64_t)(r % 200) - 100;
    break;
  case TF_ATTR_FLOAT: *(double *)slot = st_rand_double(any_bits); break;
  case TF_ATTR_BOOL: *(bool *)slot = r & 1; break;
  case TF_ATTR_STRING: {
    char *s = st_pool_alloc(p, 65);
    size_t n = st_rand_bytes(s, 64, r & 1);
    for (size_t i = 0; i < n; i++) {
      s[i] = s[i] ? s[i] : 'x'; /* attr strings hold no NUL */
    }
    s[n] = '\0';
    *(const char **)slot = s;
    break;
  }
  case TF_ATTR_TYPE:
    *(tf_dtype *)slot = st_all_dtypes[r % ST_N_DTYPES];
    break;
  case TF_ATTR_SHAPE: {
    tf_shape s = st_rand_shape();
    if (r % 5 == 0) {
      s = tf_shape_unknown();
    } else if (s.rank > 0 && (r & 2)) {
      s.dims[0] = -1;
    }
    *(tf_shape *)slot = s;
    break;
  }
  default: {
    ck_assert(p->nt < 256);
    tf_tensor *tt = st_rand_tensor(st_all_dtypes[r % ST_N_DTYPES],
                                   st_rand_shape(), any_bits);
    p->tensors[p->nt++] = tt;
    *(tf_tensor **)slot = tt;
    break;
  }
  }
}

static inline tf_attr_value st_rand_attr(st_pool *p, bool any_bits) {
  tf_attr_value v;
  memset(&v, 0, sizeof v);
  v.type = (tf_attr_type)(1 + tt_rand_u64() % (TF_ATTR_TYPE_COUNT - 1));
  v.is_list = tt_rand_u64() & 1;
  if (!v.is_list) {
    st_rand_elem(p, v.type, &v.u, any_bits);
    return v;
  }
  v.n = (int32_t)(tt_rand_u64() % 5);
  size_t es = tf_attr_elem_size(v.type);
  char *arr = st_pool_alloc(p, (size_t)v.n * es);
  for (int i = 0; i < v.n; i++) {
    st_rand_elem(p, v.type, arr + (size_t)i * es, any_bits);
  }
  v.u.ints = (const int64_t *)arr;
  return v;
}

/* A graph of NoOps chained by control edges, each with a few random "_"
 * attrs and maybe a device. */
static inline tf_graph *st_rand_graph(bool any_bits) {
  tf_graph *g = tf_graph_new();
  st_pool pool = {.n = 0};
  int nodes = 1 + (int)(tt_rand_u64() % 4);
  for (int i = 0; i < nodes; i++) {
    char name[32];
    snprintf(name, sizeof name, "n%d", i);
    tf_node_builder *b = tf_node_begin(g, "NoOp", name);
    int na = (int)(tt_rand_u64() % 5);
    for (int k = 0; k < na; k++) {
      char an[16];
      snprintf(an, sizeof an, "_a%d", k);
      tf_node_set_attr(b, an, st_rand_attr(&pool, any_bits));
    }
    if (i > 0 && (tt_rand_u64() & 1)) {
      tf_node_add_control_input(b, tf_graph_node(g, i - 1));
    }
    if (tt_rand_u64() & 1) {
      tf_node_set_device(b, "/device:CPU:0");
    }
    st_finish(b);
    st_pool_free(&pool);
  }
  return g;
}

/* Asserts code is INVALID_ARGUMENT or DATA_LOSS with a message. */
#define st_assert_rejected(code, st)                                           \
  ck_assert_msg(((code) == TF_INVALID_ARGUMENT || (code) == TF_DATA_LOSS) &&   \
                    (st).msg[0] != '\0',                                       \
                "expected INVALID_ARGUMENT or DATA_LOSS, got %s: %s",          \
                tf_code_name(code), (st).msg)

#endif
