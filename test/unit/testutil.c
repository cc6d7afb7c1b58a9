/* testutil.c: main for every unit test binary, seeded random inputs, op
 * runners and tensor comparison. */
#include "test/unit/testutil.h"

#include "lib/core/framework/kernel.h"
#include "tf/gradients.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t seed_value;
static uint64_t rng_state[4];

static uint64_t splitmix(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static void reseed(uint64_t s) {
  for (int i = 0; i < 4; i++) rng_state[i] = splitmix(&s);
}

uint64_t tt_seed(void) { return seed_value; }

void tt_rng_reseed(uint64_t seed) { reseed(seed); }

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t tt_rand_u64(void) {
  uint64_t *s = rng_state;
  uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return r;
}

double tt_rand_uniform(double lo, double hi) {
  return lo + (hi - lo) * ((double)(tt_rand_u64() >> 11) * 0x1.0p-53);
}

double tt_rand_normal(void) {
  double u1 = tt_rand_uniform(1e-300, 1.0), u2 = tt_rand_uniform(0.0, 1.0);
  return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

static void set_elem(tf_tensor *t, int64_t i, double v) {
  void *p = (char *)t->data + (size_t)i * tf_dtype_size(t->dtype);
  switch (t->dtype) {
  case TF_FLOAT32: *(float *)p = (float)v; break;
  case TF_FLOAT64: *(double *)p = v; break;
  case TF_INT8: *(int8_t *)p = (int8_t)v; break;
  case TF_INT16: *(int16_t *)p = (int16_t)v; break;
  case TF_INT32: *(int32_t *)p = (int32_t)v; break;
  case TF_INT64: *(int64_t *)p = (int64_t)v; break;
  case TF_UINT8: *(uint8_t *)p = (uint8_t)v; break;
  case TF_UINT16: *(uint16_t *)p = (uint16_t)v; break;
  case TF_UINT32: *(uint32_t *)p = (uint32_t)v; break;
  case TF_UINT64: *(uint64_t *)p = (uint64_t)v; break;
  case TF_BOOL: *(bool *)p = v != 0; break;
  case TF_BFLOAT16: *(tf_bfloat16 *)p = tf_float_to_bfloat16((float)v); break;
  case TF_FLOAT16: *(tf_float16 *)p = tf_float_to_float16((float)v); break;
  case TF_COMPLEX64: ((tf_complex64 *)p)->re = (float)v; ((tf_complex64 *)p)->im = 0; break;
  default: ck_abort_msg("tt: cannot set elements of %s", tf_dtype_name(t->dtype));
  }
}

static tf_tensor *new_tensor(tf_dtype dt, tf_shape shape) {
  tf_tensor *t;
  tf_status st;
  ck_assert_msg(tf_tensor_new(dt, &shape, &t, &st) == TF_OK, "%s", st.msg);
  return t;
}

tf_tensor *tt_rand(tf_dtype dt, tf_shape shape, double lo, double hi) {
  tf_tensor *t = new_tensor(dt, shape);
  for (int64_t i = 0; i < t->n; i++) {
    double v;
    if (tf_dtype_is_integer(dt)) {
      v = floor(tt_rand_uniform(lo, hi + 1));
      if (v > hi) v = hi;
    } else if (dt == TF_BOOL) {
      v = (double)(tt_rand_u64() & 1);
    } else {
      v = tt_rand_uniform(lo, hi);
    }
    set_elem(t, i, v);
  }
  return t;
}

tf_tensor *tt_tensor(tf_dtype dt, tf_shape shape, const double *v) {
  tf_tensor *t = new_tensor(dt, shape);
  for (int64_t i = 0; i < t->n; i++) set_elem(t, i, v[i]);
  return t;
}

tf_tensor *tt_tensor_i(tf_dtype dt, tf_shape shape, const int64_t *v) {
  tf_tensor *t = new_tensor(dt, shape);
  for (int64_t i = 0; i < t->n; i++) {
    void *p = (char *)t->data + (size_t)i * tf_dtype_size(dt);
    if (dt == TF_INT64) {
      *(int64_t *)p = v[i];
    } else if (dt == TF_UINT64) {
      *(uint64_t *)p = (uint64_t)v[i];
    } else {
      set_elem(t, i, (double)v[i]);
    }
  }
  return t;
}

int tt_run(const char *op, tf_tensor *const *in, int n_in,
           const tf_attr_kv *attrs, int n_attrs, tf_tensor **out, int max_out) {
  tf_status st;
  tf_status_init(&st);
  int n = max_out;
  tf_code rc = tf_execute(op, in, n_in, attrs, n_attrs, out, &n, &st);
  ck_assert_msg(rc == TF_OK, "%s failed: %s: %s", op, tf_code_name(rc), st.msg);
  return n;
}

tf_tensor *tt_run1(const char *op, tf_tensor *const *in, int n_in,
                   const tf_attr_kv *attrs, int n_attrs) {
  tf_tensor *out[8] = {0};
  int n = tt_run(op, in, n_in, attrs, n_attrs, out, 8);
  ck_assert_msg(n == 1, "%s gave %d outputs, expected 1", op, n);
  return out[0];
}

const char *tt_run_fail(const char *op, tf_tensor *const *in, int n_in,
                        const tf_attr_kv *attrs, int n_attrs, tf_code code) {
  static tf_status st;
  tf_status_init(&st);
  tf_tensor *out[64] = {0};
  int n = 64;
  tf_code rc = tf_execute(op, in, n_in, attrs, n_attrs, out, &n, &st);
  if (rc == TF_OK) tt_free(out, n);
  ck_assert_msg(rc == code, "%s: expected %s, got %s: %s", op,
                tf_code_name(code), tf_code_name(rc), st.msg);
  ck_assert_msg(st.msg[0] != '\0', "%s: error without a message", op);
  return st.msg;
}

void tt__assert_close(const tf_tensor *got, const tf_tensor *want, double atol,
                      double rtol, const char *file, int line) {
  char a[256], b[256];
  ck_assert_msg(got != NULL && want != NULL, "%s:%d: NULL tensor", file, line);
  ck_assert_msg(got->dtype == want->dtype && tf_shape_equal(&got->shape, &want->shape),
                "%s:%d: got %s, want %s", file, line,
                tf_tensor_str(got, a, sizeof a), tf_tensor_str(want, b, sizeof b));
  if (got->dtype == TF_STRING) {
    ck_assert_msg(tf_tensor_equal(got, want), "%s:%d: strings differ", file, line);
    return;
  }
  for (int64_t i = 0; i < got->n; i++) {
    double g = tf_tensor_get_f64(got, i), w = tf_tensor_get_f64(want, i);
    if (isnan(w) && isnan(g)) continue;
    if (tf_dtype_is_integer(got->dtype) || got->dtype == TF_BOOL) {
      int64_t gi = tf_tensor_get_i64(got, i), wi = tf_tensor_get_i64(want, i);
      if (gi != wi) {
        ck_abort_msg("%s:%d: element %lld: got %lld, want %lld (seed %llu)",
                     file, line, (long long)i, (long long)gi, (long long)wi,
                     (unsigned long long)seed_value);
      }
      continue;
    }
    bool ok = (g == w) || fabs(g - w) <= atol + rtol * fabs(w);
    /* Only failures go through Check: every passing ck_assert costs a
     * write to its result pipe, which dominates on large tensors. */
    if (!ok) ck_abort_msg("%s:%d: element %lld: got %.9g, want %.9g (|diff| %.3g > "
                  "atol %.3g + rtol %.3g * |want|; seed %llu)", file, line,
                  (long long)i, g, w, fabs(g - w), atol, rtol,
                  (unsigned long long)seed_value);
  }
}

void tt__assert_shape(const tf_tensor *t, tf_shape want, const char *file,
                      int line) {
  char a[200], b[200];
  ck_assert_msg(tf_shape_equal(&t->shape, &want), "%s:%d: shape %s, want %s",
                file, line, tf_shape_str(&t->shape, a, sizeof a),
                tf_shape_str(&want, b, sizeof b));
}

tf_node *tt_placeholder(tf_graph *g, const char *name, tf_dtype dt,
                        tf_shape shape) {
  tf_status st;
  tf_status_init(&st);
  tf_node_builder *b = tf_node_begin(g, "Placeholder", name);
  tf_node_set_attr(b, "dtype", tf_attr_type_v(dt));
  tf_node_set_attr(b, "shape", tf_attr_shape(shape));
  tf_node *n = tf_node_finish(b, &st);
  ck_assert_msg(n != NULL, "Placeholder %s: %s", name ? name : "", st.msg);
  return n;
}

tf_node *tt_const(tf_graph *g, const char *name, tf_tensor *t) {
  tf_status st;
  tf_status_init(&st);
  tf_node_builder *b = tf_node_begin(g, "Const", name);
  tf_node_set_attr(b, "value", tf_attr_tensor(t));
  tf_node_set_attr(b, "dtype", tf_attr_type_v(t->dtype));
  tf_node *n = tf_node_finish(b, &st);
  tf_tensor_unref(t);
  ck_assert_msg(n != NULL, "Const %s: %s", name ? name : "", st.msg);
  return n;
}

tf_node *tt_node(tf_graph *g, const char *op, const char *name,
                 const tf_output *in, int n_in, const tf_attr_kv *attrs,
                 int n_attrs) {
  tf_status st;
  tf_status_init(&st);
  tf_node_builder *b = tf_node_begin(g, op, name);
  for (int i = 0; i < n_in; i++) tf_node_add_input(b, in[i]);
  for (int i = 0; i < n_attrs; i++) tf_node_set_attr(b, attrs[i].name, attrs[i].value);
  tf_node *n = tf_node_finish(b, &st);
  ck_assert_msg(n != NULL, "%s %s: %s", op, name ? name : "", st.msg);
  return n;
}

tf_node *tt_build_node(tf_graph *g, const char *op, const char *name,
                       const tt_input *in, int n_in, bool as_list,
                       const tf_attr_kv *attrs, int n_attrs, tf_status *st) {
  tf_output o[16];
  ck_assert_msg(n_in >= 0 && n_in <= 16, "tt_build_node: %d inputs", n_in);
  for (int i = 0; i < n_in; i++) {
    o[i] = (tf_output){tt_placeholder(g, NULL, in[i].dt, in[i].shape), 0};
  }
  tf_node_builder *b = tf_node_begin(g, op, name);
  if (as_list) {
    tf_node_add_input_list(b, o, n_in);
  } else {
    for (int i = 0; i < n_in; i++) {
      tf_node_add_input(b, o[i]);
    }
  }
  for (int i = 0; i < n_attrs; i++) {
    tf_node_set_attr(b, attrs[i].name, attrs[i].value);
  }
  tf_status_init(st);
  return tf_node_finish(b, st);
}

tf_shape tt_infer_shape(const char *op, const tt_input *in, int n_in,
                        bool as_list, const tf_attr_kv *attrs, int n_attrs,
                        int out, tf_dtype *dtype) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_node *n = tt_build_node(g, op, NULL, in, n_in, as_list, attrs, n_attrs, &st);
  ck_assert_msg(n != NULL, "%s: %s", op, st.msg);
  ck_assert_msg(out >= 0 && out < tf_node_num_outputs(n),
                "%s has %d outputs; asked for output %d", op,
                tf_node_num_outputs(n), out);
  tf_shape s = *tf_node_output_shape(n, out);
  if (dtype != NULL) {
    *dtype = tf_node_output_type(n, out);
  }
  tf_graph_free(g);
  return s;
}

tf_tensor *tt_run_in_place(const char *op, tf_tensor **in, int n, bool as_list) {
  ck_assert(n >= 0 && n <= 16);
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_status_init(&st);
  tf_output o[16];
  for (int i = 0; i < n; i++) {
    o[i] = (tf_output){tt_placeholder(g, NULL, in[i]->dtype, tf_shape_unknown()), 0};
  }
  tf_node_builder *b = tf_node_begin(g, op, "op");
  if (as_list) {
    tf_node_add_input_list(b, o, n);
  } else {
    for (int i = 0; i < n; i++) tf_node_add_input(b, o[i]);
  }
  tf_node *node = tf_node_finish(b, &st);
  ck_assert_msg(node != NULL, "%s", st.msg);
  const tf_kernel_def *k = tf_kernel_for_node(node, TF_DEVICE_CPU, &st);
  ck_assert_msg(k != NULL, "%s", st.msg);
  void *state = NULL;
  ck_assert_msg(k->init == NULL || k->init(node, &state, &st) == TF_OK, "%s", st.msg);
  tf_tensor *out[1] = {NULL};
  tf_device *dev = tf_cpu_device();
  tf_kernel_ctx ctx = {.node = node, .def = k, .state = state, .device = dev,
                       .pool = dev->pool, .n_inputs = n, .inputs = in,
                       .n_outputs = 1, .outputs = out, .status = &st};
  ck_assert_msg(k->compute(&ctx) == TF_OK, "%s", st.msg);
  if (k->free_state != NULL) k->free_state(state);
  tf_graph_free(g);
  return out[0];
}

int64_t tt_bcast_src_index(const tf_shape *in, const tf_shape *out, int64_t o) {
  int64_t off = 0, stride = 1;
  for (int i = out->rank - 1; i >= 0; i--) {
    int64_t c = o % out->dims[i];
    o /= out->dims[i];
    int j = i - (out->rank - in->rank);
    if (j >= 0) {
      off += in->dims[j] == 1 ? 0 : c * stride;
      stride *= in->dims[j];
    }
  }
  return off;
}

void tt_free(tf_tensor **t, int n) {
  for (int i = 0; i < n; i++) {
    tf_tensor_unref(t[i]);
    t[i] = NULL;
  }
}

int tt_numpy(const char *script, tf_tensor *const *in, int n_in,
             tf_tensor **out, int max_out) {
  if (access("/usr/bin/python3", X_OK) != 0 ||
      system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") != 0) {
    fprintf(stderr, "tt_numpy: numpy not available, reference skipped\n");
    return -1;
  }
  char dir[] = "/tmp/tt_numpy_XXXXXX";
  ck_assert(mkdtemp(dir) != NULL);
  tf_status st;
  char path[512];
  for (int i = 0; i < n_in; i++) {
    snprintf(path, sizeof path, "%s/in%d.npy", dir, i);
    ck_assert_msg(tf_tensor_save_npy(in[i], path, &st) == TF_OK, "%s", st.msg);
  }
  snprintf(path, sizeof path, "%s/script.py", dir);
  FILE *f = fopen(path, "w");
  ck_assert(f != NULL);
  fprintf(f, "import numpy as np, os\nos.chdir(%s%s%s)\n"
             "ins = [np.load('in%%d.npy' %% i) for i in range(%d)]\n"
             "outs = []\n%s\n"
             "for i, o in enumerate(outs): np.save('out%%d.npy' %% i, np.asarray(o, order='C'))\n",
          "'", dir, "'", n_in, script);
  fclose(f);
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "cd %s && /usr/bin/python3 script.py", dir);
  ck_assert_msg(system(cmd) == 0, "numpy script failed:\n%s", script);
  int n = 0;
  for (; n < max_out; n++) {
    snprintf(path, sizeof path, "%s/out%d.npy", dir, n);
    if (access(path, R_OK) != 0) break;
    ck_assert_msg(tf_tensor_load_npy(path, &out[n], &st) == TF_OK, "%s", st.msg);
  }
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) fprintf(stderr, "tt_numpy: could not remove %s\n", dir);
  return n;
}

/* ---- gradient checks ------------------------------------------------------- */

/* What is being checked, for failure messages ("" for a build function). */
static const char *gc_label = "";

typedef struct gc_op {
  const char *op;
  bool as_list;
  const tf_attr_kv *attrs;
  int n_attrs;
  int out_index;
} gc_op;

static tf_output gc_build_op(tf_graph *g, const tf_output *in, int n_in,
                             void *arg) {
  const gc_op *o = arg;
  tf_status st;
  tf_status_init(&st);
  tf_node_builder *b = tf_node_begin(g, o->op, "op");
  if (o->as_list) {
    tf_node_add_input_list(b, in, n_in);
  } else {
    for (int i = 0; i < n_in; i++) tf_node_add_input(b, in[i]);
  }
  for (int i = 0; i < o->n_attrs; i++) {
    tf_node_set_attr(b, o->attrs[i].name, o->attrs[i].value);
  }
  tf_node *n = tf_node_finish(b, &st);
  ck_assert_msg(n != NULL, "grad check: building %s: %s", o->op, st.msg);
  ck_assert_msg(o->out_index >= 0 && o->out_index < tf_node_num_outputs(n),
                "grad check: %s has no output %d", o->op, o->out_index);
  return (tf_output){n, o->out_index};
}

typedef struct gc_run {
  tf_session *s;
  const char *feed_names[16];
  tf_tensor *feeds[16];
  int n;
} gc_run;

static tf_tensor *gc_fetch(gc_run *r, const char *name) {
  tf_status st;
  tf_status_init(&st);
  tf_tensor *out = NULL;
  tf_code rc = tf_session_run(r->s, NULL, r->feed_names, r->feeds, r->n,
                              &name, &out, 1, NULL, 0, NULL, &st);
  ck_assert_msg(rc == TF_OK, "grad check: fetching %s: %s", name, st.msg);
  return out;
}

static double gc_loss(gc_run *r) {
  tf_tensor *l = gc_fetch(r, "gc_loss");
  double v = tf_tensor_get_f64(l, 0);
  tf_tensor_unref(l);
  return v;
}

/* loss = Sum(Reshape(y * w, [-1])) with w random of y's value's shape. */
static tf_output gc_loss_node(tf_graph *g, gc_run *r, tf_output y) {
  char yname[300];
  snprintf(yname, sizeof yname, "%s:%d", tf_node_name(y.node), y.index);
  tf_tensor *yv = gc_fetch(r, yname);
  tf_tensor *w = tt_rand(yv->dtype, yv->shape, -1, 1);
  tf_tensor_unref(yv);
  tf_output wc = {tt_const(g, "gc_w", w), 0};
  tf_output prod = {tt_node(g, "Mul", "gc_yw", (tf_output[]){y, wc}, 2, NULL, 0), 0};
  int32_t m1 = -1, z = 0;
  tf_output shp = {tt_const(g, "gc_flat", tf_tensor_vec_i32(1, &m1)), 0};
  tf_output flat = {tt_node(g, "Reshape", "gc_reshape", (tf_output[]){prod, shp}, 2,
                            NULL, 0), 0};
  tf_output ax = {tt_const(g, "gc_axis", tf_tensor_vec_i32(1, &z)), 0};
  return (tf_output){tt_node(g, "Sum", "gc_loss", (tf_output[]){flat, ax}, 2, NULL, 0),
                     0};
}

static void gc_set(tf_tensor *t, int64_t k, double v) {
  if (t->dtype == TF_FLOAT32) {
    ((float *)t->data)[k] = (float)v;
  } else {
    ((double *)t->data)[k] = v;
  }
}

/* Compares analytic dx (for input i, fed in r->feeds[i]) with central
 * differences of the loss. */
static void gc_compare(gc_run *r, int i, const tf_tensor *dx, double atol,
                       double rtol) {
  tf_tensor *x = r->feeds[i];
  ck_assert_msg(dx->n == x->n, "grad check: input %d has %lld elements but "
                "its gradient %lld", i, (long long)x->n, (long long)dx->n);
  for (int64_t k = 0; k < x->n; k++) {
    double x0 = tf_tensor_get_f64(x, k);
    double h = 1e-6 * fmax(1.0, fabs(x0));
    gc_set(x, k, x0 + h);
    double lp = gc_loss(r);
    gc_set(x, k, x0 - h);
    double lm = gc_loss(r);
    gc_set(x, k, x0);
    double num = (lp - lm) / (2 * h), ana = tf_tensor_get_f64(dx, k);
    if (!(fabs(ana - num) <= atol + rtol * fabs(num))) {
      ck_abort_msg("grad check%s%s: input %d element %lld: analytic %.9g, numeric "
                   "%.9g (|diff| %.3g > atol %.3g + rtol %.3g * |numeric|; "
                   "seed %llu)", gc_label[0] ? " of " : "", gc_label, i,
                   (long long)k, ana, num, fabs(ana - num), atol, rtol,
                   (unsigned long long)seed_value);
    }
  }
}

void tt_grad_check(tt_grad_build_fn build, void *arg, tf_tensor *const *inputs,
                   int n_inputs, const bool *check, double atol, double rtol) {
  ck_assert_msg(n_inputs >= 0 && n_inputs <= 16, "grad check: %d inputs", n_inputs);
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_status_init(&st);
  gc_run r = {.n = n_inputs};
  tf_output in[16];
  char names[16][16];
  for (int i = 0; i < n_inputs; i++) {
    snprintf(names[i], sizeof names[i], "gc_x%d", i);
    in[i] = (tf_output){tt_placeholder(g, names[i], inputs[i]->dtype,
                                       inputs[i]->shape), 0};
    r.feed_names[i] = names[i];
    ck_assert(tf_tensor_copy(inputs[i], &r.feeds[i], &st) == TF_OK);
  }
  tf_output y = build(g, in, n_inputs, arg);
  ck_assert_msg(y.node != NULL, "grad check: build gave no output");
  tf_session_options opts = {.inter_op_threads = 1};
  r.s = tf_session_new(g, &opts, &st);
  ck_assert_msg(r.s != NULL, "grad check: session: %s", st.msg);
  tf_output loss = gc_loss_node(g, &r, y);
  tf_output dx[16];
  ck_assert_msg(tf_gradients(g, &loss, 1, in, n_inputs, NULL, dx, &st) == TF_OK,
                "grad check: tf_gradients: %s", st.msg);
  for (int i = 0; i < n_inputs; i++) {
    bool is_float = inputs[i]->dtype == TF_FLOAT64 || inputs[i]->dtype == TF_FLOAT32;
    bool want = check ? check[i] : is_float;
    if (!want) continue;
    ck_assert_msg(is_float, "grad check: input %d is %s, not float", i,
                  tf_dtype_name(inputs[i]->dtype));
    ck_assert_msg(dx[i].node != NULL, "grad check: input %d got no gradient", i);
    char dname[300];
    snprintf(dname, sizeof dname, "%s:%d", tf_node_name(dx[i].node), dx[i].index);
    tf_tensor *d = gc_fetch(&r, dname);
    ck_assert_msg(d->dtype == inputs[i]->dtype &&
                      tf_shape_equal(&d->shape, &inputs[i]->shape),
                  "grad check: gradient of input %d has the wrong dtype or shape", i);
    gc_compare(&r, i, d, atol, rtol);
    tf_tensor_unref(d);
  }
  tt_free(r.feeds, n_inputs);
  tf_session_free(r.s);
  tf_graph_free(g);
}

void tt_grad_check_op(const char *op, tf_tensor *const *inputs, int n_inputs,
                      bool as_list, const tf_attr_kv *attrs, int n_attrs,
                      int out_index, const bool *check, double atol, double rtol) {
  gc_op o = {op, as_list, attrs, n_attrs, out_index};
  gc_label = op;
  tt_grad_check(gc_build_op, &o, inputs, n_inputs, check, atol, rtol);
  gc_label = "";
}

static void seed_from_env(void) {
  const char *env = getenv("TF_TEST_SEED");
  seed_value = env ? strtoull(env, NULL, 0)
                   : (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
  reseed(seed_value);
}

static double tt_sigmoid(double v) { return 1.0 / (1.0 + exp(-v)); }

/* One time step t of the LSTM for batch row b: z, then c and hn in place. */
static void lstm_ref_step(const tf_tensor *x, const tf_tensor *w, const tf_tensor *u,
                          const tf_tensor *bias, int64_t b, int64_t t, int64_t nt,
                          int64_t ni, int64_t nh, const double *h, double *c, double *z,
                          double *hn) {
  for (int64_t k = 0; k < 4 * nh; k++) {
    double s = tf_tensor_get_f64(bias, k);
    for (int64_t i = 0; i < ni; i++) {
      s += tf_tensor_get_f64(x, (b * nt + t) * ni + i) * tf_tensor_get_f64(w, i * 4 * nh + k);
    }
    for (int64_t j = 0; j < nh; j++) {
      s += h[b * nh + j] * tf_tensor_get_f64(u, j * 4 * nh + k);
    }
    z[k] = s;
  }
  for (int64_t j = 0; j < nh; j++) {
    double ig = tt_sigmoid(z[j]), fg = tt_sigmoid(z[nh + j]), gg = tanh(z[2 * nh + j]);
    double og = tt_sigmoid(z[3 * nh + j]);
    c[b * nh + j] = fg * c[b * nh + j] + ig * gg;
    hn[b * nh + j] = og * tanh(c[b * nh + j]);
  }
}

void tt_lstm_ref(const tf_tensor *x, const tf_tensor *w, const tf_tensor *u,
                 const tf_tensor *bias, int64_t nb, int64_t nt, int64_t ni,
                 int64_t nh, double *h) {
  double *c = calloc((size_t)(nb * nh), sizeof *c);
  double *z = malloc((size_t)(4 * nh) * sizeof *z);
  double *hn = malloc((size_t)(nb * nh) * sizeof *hn);
  for (int64_t i = 0; i < nb * nh; i++) h[i] = 0;
  for (int64_t t = 0; t < nt; t++) {
    for (int64_t b = 0; b < nb; b++) lstm_ref_step(x, w, u, bias, b, t, nt, ni, nh, h, c, z, hn);
    memcpy(h, hn, (size_t)(nb * nh) * sizeof *h);
  }
  free(c);
  free(z);
  free(hn);
}

int main(void) {
  seed_from_env();
  printf("seed %llu (set TF_TEST_SEED to replay)\n", (unsigned long long)seed_value);
  fflush(stdout);
  SRunner *sr = srunner_create(tt_suite());
  srunner_run_all(sr, CK_ENV);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? 0 : 1;
}

double tt_line_value(const char *text, const char *head) {
  size_t n = strlen(head);
  for (const char *p = text; p != NULL && *p != '\0';) {
    if (strncmp(p, head, n) == 0 && p[n] == ' ') {
      return strtod(p + n + 1, NULL);
    }
    p = strchr(p, '\n');
    p = p != NULL ? p + 1 : NULL;
  }
  return NAN;
}
