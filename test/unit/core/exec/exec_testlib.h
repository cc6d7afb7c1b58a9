/* exec_testlib.h: helpers shared by the tests that build graphs by hand and
 * run them through the executor (lib/core/exec/executor.h) with a step context
 * filled in by the test: short node builders on tt_node/tt_const (_Arg,
 * _Retval, Enter), a step with its own cancel and arg/retval slots over a
 * per-test resource manager, and executor construction. Static inline so
 * each test includes what it uses. */
#ifndef TF_TEST_EXEC_TESTLIB_H
#define TF_TEST_EXEC_TESTLIB_H

#include <string.h>

#include "lib/core/base/cancel.h"
#include "lib/core/exec/executor.h"
#include "lib/core/framework/kernel.h"
#include "lib/core/framework/op_registry.h"
#include "lib/core/framework/resource.h"
#include "lib/core/base/util.h"
#include "test/unit/testutil.h"

/* ---- graph helpers ---------------------------------------------------------- */

/* Output 0 of n. */
static inline tf_output o0(tf_node *n) { return (tf_output){n, 0}; }

/* An _Arg node feeding step argument `index` of dtype dt. Aborts the test
 * on failure. */
static inline tf_node *arg(tf_graph *g, const char *name, tf_dtype dt, int index) {
  tf_attr_kv a[] = {{"T", tf_attr_type_v(dt)}, {"index", tf_attr_int(index)}};
  return tt_node(g, "_Arg", name, NULL, 0, a, 2);
}

/* A _Retval node storing `in` into step retval slot `index`. Aborts the
 * test on failure. */
static inline tf_node *retval(tf_graph *g, const char *name, tf_output in, int index) {
  tf_attr_kv a[] = {{"index", tf_attr_int(index)}};
  return tt_node(g, "_Retval", name, &in, 1, a, 1);
}

/* An Enter node taking x into frame `frame` (loop-invariant when
 * is_constant). Aborts the test on failure. */
static inline tf_node *enter(tf_graph *g, const char *name, tf_output x,
                             const char *frame, bool is_constant) {
  tf_attr_kv a[] = {{"frame_name", tf_attr_string(frame)},
                    {"is_constant", tf_attr_bool(is_constant)}};
  return tt_node(g, "Enter", name, &x, 1, a, 2);
}

/* A dtype that op has no CPU kernel for (among the ones its attr T
 * allows), or TF_DTYPE_INVALID when every allowed dtype has one. */
static inline tf_dtype dtype_without_kernel(const char *op) {
  const tf_op_def *d = tf_op_lookup(op);
  const tf_attr_def *t = tf_op_find_attr(d, "T");
  for (int i = 0; i < t->n_allowed_types; i++) {
    if (tf_kernel_lookup(op, TF_DEVICE_CPU, t->allowed_types[i]) == NULL) {
      return t->allowed_types[i];
    }
  }
  return TF_DTYPE_INVALID;
}

/* ---- steps ---------------------------------------------------------------------- */

/* The resource manager of the running test: exec_setup creates it and
 * exec_teardown frees it (use them as the TCase's checked fixture). */
static tf_resource_mgr *resources;

static inline void exec_setup(void) { resources = tf_resource_mgr_new(); }
static inline void exec_teardown(void) { tf_resource_mgr_free(resources); }

/* A step context (step_id 1, over `resources`) with its own cancel and up
 * to 4 argument and 4 retval slots. */
typedef struct step {
  tf_step_ctx ctx;
  tf_cancel cancel;
  tf_tensor *args[4];
  tf_tensor *rets[4];
} step;

/* Zeroes s and sets it up for n_args arguments and n_rets retvals (at
 * most 4 each); the caller fills s->args. */
static inline void step_init(step *s, int n_args, int n_rets) {
  memset(s, 0, sizeof *s);
  tf_cancel_init(&s->cancel);
  s->ctx = (tf_step_ctx){.step_id = 1, .resources = resources, .cancel = &s->cancel,
                         .args = s->args, .n_args = n_args, .retvals = s->rets,
                         .n_retvals = n_rets};
}

/* Unrefs every arg and retval tensor s holds and finalizes its cancel. */
static inline void step_fini(step *s) {
  tt_free(s->args, 4);
  tt_free(s->rets, 4);
  tf_cancel_fini(&s->cancel);
}

/* Runs s on e synchronously with a 20 s deadline; returns the step's code
 * with the error in *status. */
static inline tf_code run_step(tf_executor *e, step *s, tf_status *status) {
  return tf_executor_run(e, &s->ctx, NULL, tf__now_ns() + 20LL * 1000000000, status);
}

/* An executor for g running nodes on runner (NULL: inline). Aborts the
 * test with the error if tf_executor_new fails. */
static inline tf_executor *executor(const tf_graph *g, tf_workq *runner) {
  tf_executor_opts o = {.runner = runner};
  tf_executor *e = NULL;
  tf_status st;
  tf_status_init(&st);
  ck_assert_msg(tf_executor_new(g, &o, &e, &st) == TF_OK, "%s", st.msg);
  return e;
}

#endif
