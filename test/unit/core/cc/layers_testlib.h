/* layers_testlib.h: helpers shared by the layers tests (layers_test.c,
 * layers_nn_test.c, layers_loss_test.c): a session over a graph whose
 * layers variables are initialized by the context's init target, and one
 * Run with feeds and tf_output fetches. Static inline so each test
 * includes what it uses; every failure aborts the test naming the error. */
#ifndef TF_TEST_LAYERS_TESTLIB_H
#define TF_TEST_LAYERS_TESTLIB_H

#include <stdio.h>
#include <string.h>

#include "test/unit/testutil.h"
#include "tf/layers.h"
#include "tf/session.h"

#define LT_MAX_IO 8

/* Checks a builder's code; the caller's status must be named st. */
#define LT_OK(call)                                                            \
  ck_assert_msg((call) == TF_OK, "%s: %s", #call, st.msg)

/* The edge name "node:index" of o, in buf. */
static inline const char *lt_name(tf_output o, char *buf, size_t size) {
  snprintf(buf, size, "%s:%d", tf_node_name(o.node), o.index);
  return buf;
}

/* A session on g with l's variables initialized (l may be NULL or have no
 * variables: no init run). */
static inline tf_session *lt_session(tf_graph *g, tf_layers *l) {
  tf_status st;
  tf_session *s = tf_session_new(g, NULL, &st);
  ck_assert_msg(s != NULL, "%s", st.msg);
  if (l != NULL && tf_layers_num_vars(l) > 0) {
    tf_node *init = tf_layers_init_op(l, NULL, &st);
    ck_assert_msg(init != NULL, "%s", st.msg);
    const char *t[] = {tf_node_name(init)};
    ck_assert_msg(tf_session_run(s, NULL, NULL, NULL, 0, NULL, NULL, 0, t, 1,
                                 NULL, &st) == TF_OK, "init: %s", st.msg);
  }
  return s;
}

/* One Run: feeds feed_names[i] -> feeds[i], fetches[i] -> out[i]. */
static inline void lt_run(tf_session *s, const char *const *feed_names,
                          tf_tensor *const *feeds, int n_feeds,
                          const tf_output *fetches, tf_tensor **out, int n) {
  char bufs[LT_MAX_IO][256];
  const char *names[LT_MAX_IO];
  ck_assert_int_le(n, LT_MAX_IO);
  for (int i = 0; i < n; i++) {
    names[i] = lt_name(fetches[i], bufs[i], sizeof bufs[i]);
  }
  tf_status st;
  ck_assert_msg(tf_session_run(s, NULL, feed_names, feeds, n_feeds, names, out,
                               n, NULL, 0, NULL, &st) == TF_OK, "%s", st.msg);
}

/* Runs a fresh session on g (with l's init) once and fetches. */
static inline void lt_run_once(tf_graph *g, tf_layers *l,
                               const char *const *feed_names,
                               tf_tensor *const *feeds, int n_feeds,
                               const tf_output *fetches, tf_tensor **out,
                               int n) {
  tf_session *s = lt_session(g, l);
  lt_run(s, feed_names, feeds, n_feeds, fetches, out, n);
  tf_session_free(s);
}

/* Element i of t as double (float32/float64/int tensors). */
static inline double lt_at(const tf_tensor *t, int64_t i) {
  return tf_tensor_get_f64(t, i);
}

#endif
