/* ops_queue_test.c: the queue op specs (TF names, arguments, attrs,
 * defaults, flags, Ref(string) handles, type lists) and their shape
 * functions: queue attrs are checked when the node is built (shapes count
 * and definedness, capacity, min_after_dequeue), enqueues and dequeues fed
 * straight from a queue node must use its component types and shapes,
 * dequeues get the queue's shapes ([n] + shape for DequeueMany), and a
 * handle must be a ref edge. */
#include <string.h>

#include "lib/core/graph/graph_impl.h"
#include "lib/core/framework/op_registry.h"
#include "test/unit/testutil.h"

static const tf_dtype fi[2] = {TF_FLOAT32, TF_INT32};

/* A queue node; NULL with *st on error. shapes may be NULL. */
static tf_node *queue(tf_graph *g, const char *op, const char *name,
                      const tf_dtype *dt, int n, const tf_shape *shapes,
                      int n_shapes, int64_t cap, tf_status *st) {
  tf_node_builder *b = tf_node_begin(g, op, name);
  tf_node_set_attr(b, "component_types", tf_attr_type_list(dt, n));
  if (shapes != NULL) tf_node_set_attr(b, "shapes", tf_attr_shape_list(shapes, n_shapes));
  tf_node_set_attr(b, "capacity", tf_attr_int(cap));
  return tf_node_finish(b, st);
}

static tf_node *enqueue(tf_graph *g, const char *op, tf_node *h,
                        tf_node *const *in, int n, tf_status *st) {
  tf_node_builder *b = tf_node_begin(g, op, NULL);
  tf_node_add_input(b, (tf_output){h, 0});
  tf_output o[4];
  for (int i = 0; i < n; i++) o[i] = (tf_output){in[i], 0};
  tf_node_add_input_list(b, o, n);
  return tf_node_finish(b, st);
}

static tf_node *dequeue(tf_graph *g, tf_node *h, const tf_dtype *dt, int n,
                        tf_node *count, tf_status *st) {
  tf_node_builder *b = tf_node_begin(g, count ? "QueueDequeueMany" : "QueueDequeue", NULL);
  tf_node_add_input(b, (tf_output){h, 0});
  if (count != NULL) tf_node_add_input(b, (tf_output){count, 0});
  tf_node_set_attr(b, "component_types", tf_attr_type_list(dt, n));
  return tf_node_finish(b, st);
}

static tf_node *cnst_i32(tf_graph *g, const char *name, int32_t v) {
  tf_status st;
  tf_tensor *t = tf_tensor_scalar_i32(v);
  tf_node_builder *b = tf_node_begin(g, "Const", name);
  tf_node_set_attr(b, "value", tf_attr_tensor(t));
  tf_node_set_attr(b, "dtype", tf_attr_type_v(TF_INT32));
  tf_node *n = tf_node_finish(b, &st);
  tf_tensor_unref(t);
  ck_assert_msg(n != NULL, "%s", st.msg);
  return n;
}

START_TEST(test_specs) {
  const char *names[] = {"FIFOQueue", "RandomShuffleQueue", "QueueEnqueue",
                         "QueueEnqueueMany", "QueueDequeue", "QueueDequeueMany",
                         "QueueClose", "QueueSize"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    const tf_op_def *d = tf_op_lookup(names[i]);
    ck_assert_msg(d != NULL, "%s", names[i]);
    ck_assert_str_eq(tf_op_family_of(d), "queue");
    ck_assert(d->flags & TF_OP_STATEFUL);
    ck_assert_ptr_nonnull(d->shape_fn);
    const tf_arg_def *h = i < 2 ? &d->outputs[0] : &d->inputs[0];
    ck_assert_str_eq(h->name, "handle");
    ck_assert(h->is_ref && h->fixed_type == TF_STRING);
    bool async = i >= 2 && i < 6; /* the enqueues and dequeues */
    ck_assert_msg(((d->flags & TF_OP_ASYNC) != 0) == async, "%s async flag", names[i]);
  }
  const tf_op_def *q = tf_op_lookup("RandomShuffleQueue");
  ck_assert(q->flags & TF_OP_SOURCE);
  const tf_attr_def *a = tf_op_find_attr(q, "component_types");
  ck_assert(a->is_list && a->type == TF_ATTR_TYPE && a->has_min && a->min == 1);
  ck_assert_int_eq(tf_op_find_attr(q, "capacity")->default_value.u.i, -1);
  ck_assert_int_eq(tf_op_find_attr(q, "shapes")->default_value.n, 0);
  ck_assert_str_eq(tf_op_find_attr(q, "container")->default_value.u.s, "");
  ck_assert_int_eq(tf_op_find_attr(q, "min_after_dequeue")->default_value.u.i, 0);
  ck_assert_ptr_nonnull(tf_op_find_attr(q, "seed2"));
  const tf_op_def *e = tf_op_lookup("QueueEnqueueMany");
  ck_assert_str_eq(e->inputs[1].type_list_attr, "Tcomponents");
  const tf_op_def *dm = tf_op_lookup("QueueDequeueMany");
  ck_assert_str_eq(dm->outputs[0].type_list_attr, "component_types");
  ck_assert_int_eq(dm->inputs[1].fixed_type, TF_INT32);
  ck_assert_int_eq(tf_op_lookup("QueueClose")->n_outputs, 0);
}
END_TEST

START_TEST(test_queue_attr_errors) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_shape good[2] = {tf_shape_of(1, 3), tf_shape_scalar()};
  tf_node *q = queue(g, "FIFOQueue", "q", fi, 2, good, 2, 10, &st);
  ck_assert_msg(q != NULL, "%s", st.msg);
  ck_assert(tf_shape_equal(tf_node_output_shape(q, 0), &(tf_shape){1, {2}}));
  ck_assert_int_eq(tf_node_output_type(q, 0), TF_STRING);
  ck_assert(tf__node_output_is_ref(q, 0));
  ck_assert_ptr_null(queue(g, "FIFOQueue", "q1", fi, 2, good, 1, 10, &st));
  ck_assert_ptr_nonnull(strstr(st.msg, "shapes has 1 entries but component_types has 2"));
  tf_shape partial[2] = {tf_shape_of(1, -1), tf_shape_scalar()};
  ck_assert_ptr_null(queue(g, "FIFOQueue", "q2", fi, 2, partial, 2, 10, &st));
  ck_assert_ptr_nonnull(strstr(st.msg, "node 'q2' (FIFOQueue): queue shapes[0] = [?] "
                               "is not fully defined"));
  ck_assert_ptr_null(queue(g, "FIFOQueue", "q3", fi, 2, NULL, 0, 0, &st));
  ck_assert_ptr_nonnull(strstr(st.msg, "capacity must be -1"));
  ck_assert_ptr_null(queue(g, "FIFOQueue", "q4", fi, 0, NULL, 0, -1, &st));
  ck_assert_ptr_nonnull(strstr(st.msg, "at least 1"));
  tf_node_builder *b = tf_node_begin(g, "RandomShuffleQueue", "rs");
  tf_node_set_attr(b, "component_types", tf_attr_type_list(fi, 1));
  tf_node_set_attr(b, "capacity", tf_attr_int(4));
  tf_node_set_attr(b, "min_after_dequeue", tf_attr_int(4));
  ck_assert_ptr_null(tf_node_finish(b, &st));
  ck_assert_ptr_nonnull(strstr(st.msg, "min_after_dequeue 4 must be >= 0 and below capacity 4"));
  tf_graph_free(g);
}
END_TEST

START_TEST(test_enqueue_checks) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_shape shapes[2] = {tf_shape_of(1, 3), tf_shape_scalar()};
  tf_node *q = queue(g, "FIFOQueue", "q", fi, 2, shapes, 2, -1, &st);
  tf_node *f3 = tt_placeholder(g, "f3", TF_FLOAT32, tf_shape_of(1, 3));
  tf_node *f4 = tt_placeholder(g, "f4", TF_FLOAT32, tf_shape_of(1, 4));
  tf_node *i0 = tt_placeholder(g, "i0", TF_INT32, tf_shape_scalar());
  tf_node *fb = tt_placeholder(g, "fb", TF_FLOAT32, tf_shape_of(2, 5, 3));
  tf_node *ib = tt_placeholder(g, "ib", TF_INT32, tf_shape_of(1, 6));
  tf_node *iu = tt_placeholder(g, "iu", TF_INT32, tf_shape_unknown());
  tf_node *ok[2] = {f3, i0};
  tf_node *e = enqueue(g, "QueueEnqueue", q, ok, 2, &st);
  ck_assert_msg(e != NULL, "%s", st.msg);
  const tf_attr_value *tc = tf_node_attr(e, "Tcomponents");
  ck_assert(tc->n == 2 && tc->u.types[1] == TF_INT32);
  tf_graph *g2 = tf_graph_new();
  tf_node *q2 = queue(g2, "FIFOQueue", "q", fi, 2, shapes, 2, -1, &st);
  tf_node *x = tt_placeholder(g2, "x", TF_INT32, tf_shape_scalar());
  tf_node *wrong[2] = {x, x};
  ck_assert_ptr_null(enqueue(g2, "QueueEnqueue", q2, wrong, 2, &st));
  ck_assert_ptr_nonnull(strstr(st.msg, "component 0: Tcomponents says int32 but "
                               "queue 'q' holds float32"));
  ck_assert_ptr_null(enqueue(g2, "QueueEnqueue", q2, wrong, 1, &st));
  ck_assert_ptr_nonnull(strstr(st.msg, "Tcomponents has 1 types but queue 'q' has 2"));
  tf_graph_free(g2);
  tf_node *shape_bad[2] = {f4, i0};
  ck_assert_ptr_null(enqueue(g, "QueueEnqueue", q, shape_bad, 2, &st));
  ck_assert_ptr_nonnull(strstr(st.msg, "component 0 has shape [4], but queue 'q' holds [3]"));
  /* many: batches of the element shapes with one dim-0 size */
  tf_node *many_bad[2] = {fb, ib};
  ck_assert_ptr_null(enqueue(g, "QueueEnqueueMany", q, many_bad, 2, &st));
  ck_assert_ptr_nonnull(strstr(st.msg, "component 1 has 6 elements along dim 0, "
                               "but an earlier component has 5"));
  tf_node *many_scalar[2] = {fb, i0};
  ck_assert_ptr_null(enqueue(g, "QueueEnqueueMany", q, many_scalar, 2, &st));
  ck_assert_ptr_nonnull(strstr(st.msg, "component 1 must be at least 1-D"));
  tf_node *many_unknown[2] = {fb, iu};
  ck_assert_ptr_nonnull(enqueue(g, "QueueEnqueueMany", q, many_unknown, 2, &st));
  /* the handle must be a reference */
  tf_node *s = tt_placeholder(g, "s", TF_STRING, tf_shape_of(1, 2));
  ck_assert_ptr_null(enqueue(g, "QueueEnqueue", s, ok, 2, &st));
  ck_assert_ptr_nonnull(strstr(st.msg, "input 0 ('handle') must be a reference"));
  tf_graph_free(g);
}
END_TEST

START_TEST(test_dequeue_shapes) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_shape shapes[2] = {tf_shape_of(2, 2, 3), tf_shape_scalar()};
  tf_node *q = queue(g, "FIFOQueue", "q", fi, 2, shapes, 2, -1, &st);
  tf_node *d = dequeue(g, q, fi, 2, NULL, &st);
  ck_assert_msg(d != NULL, "%s", st.msg);
  ck_assert_int_eq(tf_node_num_outputs(d), 2);
  ck_assert_int_eq(tf_node_output_type(d, 1), TF_INT32);
  ck_assert(tf_shape_equal(tf_node_output_shape(d, 0), &shapes[0]));
  tf_node *many = dequeue(g, q, fi, 2, cnst_i32(g, "n", 5), &st);
  ck_assert_msg(many != NULL, "%s", st.msg);
  ck_assert(tf_shape_equal(tf_node_output_shape(many, 0), &(tf_shape){3, {5, 2, 3}}));
  ck_assert(tf_shape_equal(tf_node_output_shape(many, 1), &(tf_shape){1, {5}}));
  tf_node *fed = dequeue(g, q, fi, 2, tt_placeholder(g, "k", TF_INT32, tf_shape_scalar()), &st);
  ck_assert(tf_shape_equal(tf_node_output_shape(fed, 1), &(tf_shape){1, {TF_UNKNOWN_DIM}}));
  ck_assert_ptr_null(dequeue(g, q, fi, 2, cnst_i32(g, "neg", -1), &st));
  ck_assert_ptr_nonnull(strstr(st.msg, "DequeueMany requested -1 < 0 elements"));
  ck_assert_ptr_null(dequeue(g, q, fi, 2, tt_placeholder(g, "v", TF_INT32, tf_shape_of(1, 2)), &st));
  ck_assert_ptr_nonnull(strstr(st.msg, "n must be a scalar"));
  tf_dtype swapped[2] = {TF_INT32, TF_FLOAT32};
  ck_assert_ptr_null(dequeue(g, q, swapped, 2, NULL, &st));
  ck_assert_ptr_nonnull(strstr(st.msg, "component 0: component_types says int32"));
  /* DequeueMany needs shapes on the queue */
  tf_node *free_q = queue(g, "FIFOQueue", "free", fi, 1, NULL, 0, -1, &st);
  ck_assert_ptr_nonnull(dequeue(g, free_q, fi, 1, NULL, &st));
  ck_assert_ptr_null(dequeue(g, free_q, fi, 1, cnst_i32(g, "two", 2), &st));
  ck_assert_ptr_nonnull(strstr(st.msg, "requires queue 'free' to have specified shapes"));
  /* size and close */
  tf_node_builder *b = tf_node_begin(g, "QueueSize", "size");
  tf_node_add_input(b, (tf_output){q, 0});
  tf_node *sz = tf_node_finish(b, &st);
  ck_assert_msg(sz != NULL, "%s", st.msg);
  ck_assert_int_eq(tf_node_output_type(sz, 0), TF_INT32);
  ck_assert_int_eq(tf_node_output_shape(sz, 0)->rank, 0);
  b = tf_node_begin(g, "QueueClose", "close");
  tf_node_add_input(b, (tf_output){q, 0});
  tf_node *cl = tf_node_finish(b, &st);
  ck_assert_msg(cl != NULL, "%s", st.msg);
  ck_assert(!tf_node_attr(cl, "cancel_pending_enqueues")->u.b);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("ops_queue");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_specs);
  tcase_add_test(tc, test_queue_attr_errors);
  tcase_add_test(tc, test_enqueue_checks);
  tcase_add_test(tc, test_dequeue_shapes);
  suite_add_tcase(s, tc);
  return s;
}
