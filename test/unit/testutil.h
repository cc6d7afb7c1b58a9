/* testutil.h: helpers shared by the Check unit tests.
 *
 * Each test file defines `Suite *tt_suite(void)`; testutil.c provides main,
 * which runs it in fork mode and exits non-zero on any failure. Random
 * inputs come from tt_rng, seeded from $TF_TEST_SEED or the clock; the seed
 * is printed so a failure can be replayed. */
#ifndef TF_TEST_TESTUTIL_H
#define TF_TEST_TESTUTIL_H

#include <check.h>
#include <stdint.h>

#include "tf/tf.h"

Suite *tt_suite(void);

/* The run's seed (printed at start). */
/* A loopback TCP port nobody listened on when asked, and never handed out
 * before by this process (the kernel may offer a port twice once it is
 * released; a spec of tasks on one host needs each once). Thread-safe. */
int tt_free_port(void);

uint64_t tt_seed(void);
/* xoshiro256** generator. Every forked test starts from the run's seed;
 * tt_rng_reseed(tt_seed() ^ k) gives a test its own stream. */
void tt_rng_reseed(uint64_t seed);
uint64_t tt_rand_u64(void);
double tt_rand_uniform(double lo, double hi);
double tt_rand_normal(void);

/* The last hidden state h [nb, nh] (row-major doubles) of an LSTM with
 * gates [i | f | g | o] over x [nb, nt, ni] from zero state: z = x_t·w +
 * h·u + bias with w [ni, 4nh], u [nh, 4nh], bias [4nh]; c' = σ(f)c +
 * σ(i)tanh(g), h' = σ(o)tanh(c'). A float64 loop, the reference of the
 * LSTM layer tests. */
void tt_lstm_ref(const tf_tensor *x, const tf_tensor *w, const tf_tensor *u,
                 const tf_tensor *bias, int64_t nb, int64_t nt, int64_t ni,
                 int64_t nh, double *h);

/* Random tensor: floats uniform in [lo, hi); ints uniform in [lo, hi];
 * bool 0/1. */
tf_tensor *tt_rand(tf_dtype dt, tf_shape shape, double lo, double hi);
/* Tensor from doubles (converted to dt). */
tf_tensor *tt_tensor(tf_dtype dt, tf_shape shape, const double *v);
/* Tensor from an int64 array (converted to dt). */
tf_tensor *tt_tensor_i(tf_dtype dt, tf_shape shape, const int64_t *v);

/* Runs op and requires OK; out[] gets the outputs; returns the count. */
int tt_run(const char *op, tf_tensor *const *in, int n_in,
           const tf_attr_kv *attrs, int n_attrs, tf_tensor **out,
           int max_out);
/* Runs op expecting exactly one output. */
tf_tensor *tt_run1(const char *op, tf_tensor *const *in, int n_in,
                   const tf_attr_kv *attrs, int n_attrs);
/* Runs op expecting failure with code; returns the message (static). */
const char *tt_run_fail(const char *op, tf_tensor *const *in, int n_in,
                        const tf_attr_kv *attrs, int n_attrs, tf_code code);

/* Asserts same dtype and shape, and |got - want| <= atol + rtol * |want|
 * elementwise (NaNs must match). Failure names the first bad index. */
#define tt_assert_close(got, want, atol, rtol)                                 \
  tt__assert_close((got), (want), (atol), (rtol), __FILE__, __LINE__)
void tt__assert_close(const tf_tensor *got, const tf_tensor *want, double atol,
                      double rtol, const char *file, int line);
/* Asserts shape equality against dims. */
#define tt_assert_shape(t, ...)                                                \
  tt__assert_shape((t), tf_shape_of(__VA_ARGS__), __FILE__, __LINE__)
void tt__assert_shape(const tf_tensor *t, tf_shape want, const char *file,
                      int line);

/* Adds a Placeholder node of dtype dt and shape (tf_shape_unknown() for
 * none) to g; name NULL picks a unique one. Aborts the test on failure. */
tf_node *tt_placeholder(tf_graph *g, const char *name, tf_dtype dt,
                        tf_shape shape);

/* Adds a Const node holding t (the caller's reference is taken); name
 * NULL picks a unique one. Aborts the test on failure. */
tf_node *tt_const(tf_graph *g, const char *name, tf_tensor *t);

/* Adds op on data inputs in[0..n_in) (each its own argument) with attrs;
 * name NULL picks a unique one. Aborts the test naming op and the error on
 * failure. */
tf_node *tt_node(tf_graph *g, const char *op, const char *name,
                 const tf_output *in, int n_in, const tf_attr_kv *attrs,
                 int n_attrs);

/* One input of tt_build_node / tt_infer_shape: a fresh Placeholder. */
typedef struct tt_input {
  tf_dtype dt;
  tf_shape shape;
} tt_input;

/* Adds op (node name `name`, NULL for a unique one) to g on fresh
 * Placeholders for in[0..n_in), each its own input argument, or all as one
 * list argument when as_list; then sets attrs. Returns the node, or NULL
 * with the error in *st. */
tf_node *tt_build_node(tf_graph *g, const char *op, const char *name,
                       const tt_input *in, int n_in, bool as_list,
                       const tf_attr_kv *attrs, int n_attrs, tf_status *st);
/* Shape inference in a scratch graph: tt_build_node(op) must succeed (the
 * test aborts naming op and the error otherwise); returns the inferred
 * shape of output `out` and, unless dtype is NULL, its dtype. */
tf_shape tt_infer_shape(const char *op, const tt_input *in, int n_in,
                        bool as_list, const tf_attr_kv *attrs, int n_attrs,
                        int out, tf_dtype *dtype);

/* Runs op's CPU kernel directly, as the executor does, on inputs whose
 * only references are the caller's: the kernel may then write its output
 * into an input's buffer (in place). Inputs come from Placeholders of
 * unknown shape, as a list when as_list; exactly one output. The caller
 * keeps its references to in[] and owns the result. */
tf_tensor *tt_run_in_place(const char *op, tf_tensor **in, int n, bool as_list);

/* Flat index of the element of an operand of shape `in` that feeds flat
 * output element o under NumPy broadcasting to `out` (dims right-aligned,
 * size-1 dims repeat): a reference independent of the kernels' code. */
int64_t tt_bcast_src_index(const tf_shape *in, const tf_shape *out, int64_t o);

/* Unrefs an array of tensors. */
void tt_free(tf_tensor **t, int n);

/* Runs /usr/bin/python3 with numpy on script, passing tensors as .npy
 * files in a temp dir: inputs are in0.npy.., the script must write
 * out0.npy..; returns the number of outputs read into out. Skips
 * (returns -1) when numpy is not available. Needs the .npy codec. */
int tt_numpy(const char *script, tf_tensor *const *in, int n_in,
             tf_tensor **out, int max_out);

/* ---- gradient checks -------------------------------------------------------
 * Builds y = build(g, in, n_in, arg) on float64 Placeholders for inputs,
 * loss = Sum(y * w) with w a fixed random tensor of y's shape, and checks
 * tf_gradients(loss, in[i]) for every i with check[i] (check NULL: all)
 * against central finite differences of the loss in float64 (step
 * 1e-6 * max(1, |x|)). Fails the test, naming the input and flat element,
 * when |analytic - numeric| > atol + rtol * |numeric|. Also fails when an
 * input that should get a gradient gets none. */
typedef tf_output (*tt_grad_build_fn)(tf_graph *g, const tf_output *in, int n_in,
                                      void *arg);
void tt_grad_check(tt_grad_build_fn build, void *arg, tf_tensor *const *inputs,
                   int n_inputs, const bool *check, double atol, double rtol);
/* The same for one op on the inputs (each its own argument, or all one list
 * argument when as_list) with attrs; y is the op's output out_index. */
void tt_grad_check_op(const char *op, tf_tensor *const *inputs, int n_inputs,
                      bool as_list, const tf_attr_kv *attrs, int n_attrs,
                      int out_index, const bool *check, double atol, double rtol);

/* The number after the line of text that starts with head followed by a
 * space (a Prometheus sample "name{labels} value"), or NaN when no line
 * does. */
double tt_line_value(const char *text, const char *head);

#endif
