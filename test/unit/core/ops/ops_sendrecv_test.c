/* ops_sendrecv_test.c: the _Send/_Recv op specs: TF's argument and attr
 * names, the client_terminated default, the flags (stateful, dead-aware,
 * _Recv async, neither differentiable), graph building with every attr
 * (_Recv's output has the tensor_type dtype and an unknown shape), each
 * required attr missing fails naming it, and in a local session (whose
 * rendezvous is in-process) a send to another task fails naming its
 * device while a receive that gets nothing ends at the deadline. */
#include <string.h>

#include "lib/core/framework/op_registry.h"
#include "lib/core/graph/graph_impl.h"
#include "test/unit/testutil.h"

static const char *const key_attrs[] = {"tensor_name", "send_device",
                                        "send_device_incarnation",
                                        "recv_device"};
#define N_KEY ((int)(sizeof key_attrs / sizeof *key_attrs))

/* Sets every key attr except the one named skip (NULL: none). */
static void set_key_attrs(tf_node_builder *b, const char *skip) {
  const char *dev0 = "/job:worker/replica:0/task:0/device:CPU:0";
  const char *dev1 = "/job:ps/replica:0/task:0/device:CPU:0";
  if (!skip || strcmp(skip, "tensor_name") != 0) {
    tf_node_set_attr(b, "tensor_name", tf_attr_string("edge_3_x"));
  }
  if (!skip || strcmp(skip, "send_device") != 0) {
    tf_node_set_attr(b, "send_device", tf_attr_string(dev0));
  }
  if (!skip || strcmp(skip, "send_device_incarnation") != 0) {
    tf_node_set_attr(b, "send_device_incarnation", tf_attr_int(12345));
  }
  if (!skip || strcmp(skip, "recv_device") != 0) {
    tf_node_set_attr(b, "recv_device", tf_attr_string(dev1));
  }
}

/* _Recv of dtype dt; skip names one attr to leave out ("tensor_type" too). */
static tf_node *recv_node(tf_graph *g, const char *name, tf_dtype dt,
                          const char *skip, tf_status *st) {
  tf_node_builder *b = tf_node_begin(g, "_Recv", name);
  if (!skip || strcmp(skip, "tensor_type") != 0) {
    tf_node_set_attr(b, "tensor_type", tf_attr_type_v(dt));
  }
  set_key_attrs(b, skip);
  return tf_node_finish(b, st);
}

static tf_node *send_node(tf_graph *g, const char *name, tf_output in,
                          const char *skip, tf_status *st) {
  tf_node_builder *b = tf_node_begin(g, "_Send", name);
  tf_node_add_input(b, in);
  set_key_attrs(b, skip);
  return tf_node_finish(b, st);
}

static void check_key_attrs(const tf_op_def *d) {
  for (int i = 0; i < N_KEY; i++) {
    const tf_attr_def *a = tf_op_find_attr(d, key_attrs[i]);
    ck_assert_msg(a != NULL, "%s has no attr %s", d->name, key_attrs[i]);
    ck_assert_msg(!a->has_default, "%s.%s has a default", d->name, key_attrs[i]);
    ck_assert_int_eq(a->type, i == 2 ? TF_ATTR_INT : TF_ATTR_STRING);
  }
  const tf_attr_def *ct = tf_op_find_attr(d, "client_terminated");
  ck_assert_ptr_nonnull(ct);
  ck_assert_int_eq(ct->type, TF_ATTR_BOOL);
  ck_assert(ct->has_default);
  ck_assert(!ct->default_value.u.b);
  ck_assert_int_eq(d->n_attrs, N_KEY + 2); /* + the type attr */
  ck_assert_str_eq(tf_op_family_of(d), "sendrecv");
  ck_assert(d->doc != NULL && d->doc[0] != '\0');
  ck_assert_ptr_nonnull(d->shape_fn);
}

START_TEST(test_specs) {
  const tf_op_def *s = tf_op_lookup("_Send");
  const tf_op_def *r = tf_op_lookup("_Recv");
  ck_assert_ptr_nonnull(s);
  ck_assert_ptr_nonnull(r);
  ck_assert_int_eq(s->n_inputs, 1);
  ck_assert_int_eq(s->n_outputs, 0);
  ck_assert_str_eq(s->inputs[0].name, "tensor");
  ck_assert_str_eq(s->inputs[0].type_attr, "T");
  ck_assert(!s->inputs[0].is_ref);
  ck_assert_int_eq(tf_op_find_attr(s, "T")->type, TF_ATTR_TYPE);
  ck_assert_int_eq(tf_op_find_attr(s, "T")->n_allowed_types, 0);
  ck_assert_ptr_null(tf_op_find_attr(s, "tensor_type"));
  ck_assert_int_eq(r->n_inputs, 0);
  ck_assert_int_eq(r->n_outputs, 1);
  ck_assert_str_eq(r->outputs[0].name, "tensor");
  ck_assert_str_eq(r->outputs[0].type_attr, "tensor_type");
  ck_assert_int_eq(tf_op_find_attr(r, "tensor_type")->type, TF_ATTR_TYPE);
  ck_assert_ptr_null(tf_op_find_attr(r, "T"));
  check_key_attrs(s);
  check_key_attrs(r);
}
END_TEST

START_TEST(test_flags) {
  const tf_op_def *s = tf_op_lookup("_Send");
  const tf_op_def *r = tf_op_lookup("_Recv");
  /* Stateful: never pruned or merged by CSE even with equal attrs. */
  ck_assert(s->flags & TF_OP_STATEFUL);
  ck_assert(r->flags & TF_OP_STATEFUL);
  /* Deadness travels: both run on dead inputs (_Recv may emit dead). */
  ck_assert(s->flags & TF_OP_DEAD_AWARE);
  ck_assert(r->flags & TF_OP_DEAD_AWARE);
  ck_assert(r->flags & TF_OP_ASYNC);
  ck_assert(s->flags & TF_OP_NOT_DIFFERENTIABLE);
  ck_assert(r->flags & TF_OP_NOT_DIFFERENTIABLE);
  /* A step running either needs a rendezvous (tf_step_ctx.rendezvous). */
  ck_assert(s->flags & TF_OP_RENDEZVOUS);
  ck_assert(r->flags & TF_OP_RENDEZVOUS);
  ck_assert(!(s->flags & (TF_OP_CONTROL_FLOW | TF_OP_BACK_EDGE)));
  ck_assert(!(r->flags & (TF_OP_CONTROL_FLOW | TF_OP_BACK_EDGE)));
}
END_TEST

START_TEST(test_build_with_all_attrs) {
  const tf_dtype types[] = {TF_FLOAT32, TF_INT64, TF_BOOL, TF_STRING, TF_FLOAT64};
  /* Unnamed, the nodes are called _Recv, _Recv_1, ...: names only internal
   * graphs (partitions, where _Recv lives) accept. */
  tf_graph *g = tf__graph_new_internal();
  tf_status st;
  tf_status_init(&st);
  for (size_t i = 0; i < sizeof types / sizeof *types; i++) {
    tf_node *r = recv_node(g, NULL, types[i], NULL, &st);
    ck_assert_msg(r != NULL, "%s: %s", tf_dtype_name(types[i]), st.msg);
    ck_assert_int_eq(tf_node_num_outputs(r), 1);
    ck_assert_int_eq(tf_node_output_type(r, 0), types[i]);
    ck_assert_int_eq(tf_node_output_shape(r, 0)->rank, -1);
    bool ct = true;
    ck_assert_int_eq(tf_node_attr_get_bool(r, "client_terminated", &ct, &st), TF_OK);
    ck_assert(!ct);
    int64_t inc = 0;
    ck_assert_int_eq(tf_node_attr_get_int(r, "send_device_incarnation", &inc, &st), TF_OK);
    ck_assert_int_eq(inc, 12345);
    /* _Send on the received value: T inferred from the input. */
    tf_node *s = send_node(g, NULL, (tf_output){r, 0}, NULL, &st);
    ck_assert_msg(s != NULL, "%s", st.msg);
    ck_assert_int_eq(tf_node_num_outputs(s), 0);
    tf_dtype t = TF_DTYPE_INVALID;
    ck_assert_int_eq(tf_node_attr_get_type(s, "T", &t, &st), TF_OK);
    ck_assert_int_eq(t, types[i]);
    const char *name = NULL;
    ck_assert_int_eq(tf_node_attr_get_string(s, "tensor_name", &name, &st), TF_OK);
    ck_assert_str_eq(name, "edge_3_x");
  }
  /* client_terminated set explicitly is kept; a known input shape does
   * not leak into _Recv (it has no inputs, so its shape stays unknown). */
  tf_node_builder *b = tf_node_begin(g, "_Recv", "ct");
  tf_node_set_attr(b, "tensor_type", tf_attr_type_v(TF_INT32));
  tf_node_set_attr(b, "client_terminated", tf_attr_bool(true));
  set_key_attrs(b, NULL);
  tf_node *r = tf_node_finish(b, &st);
  ck_assert_msg(r != NULL, "%s", st.msg);
  bool ct = false;
  ck_assert_int_eq(tf_node_attr_get_bool(r, "client_terminated", &ct, &st), TF_OK);
  ck_assert(ct);
  tf_node *p = tt_placeholder(g, "p", TF_FLOAT32, tf_shape_of(2, 3, 4));
  ck_assert_ptr_nonnull(send_node(g, "send_p", (tf_output){p, 0}, NULL, &st));
  tf_graph_free(g);
}
END_TEST

START_TEST(test_missing_attrs_named) {
  const char *required[] = {"tensor_name", "send_device", "send_device_incarnation",
                            "recv_device", "tensor_type"};
  tf_graph *g = tf_graph_new();
  tf_node *p = tt_placeholder(g, "p", TF_FLOAT32, tf_shape_unknown());
  tf_status st;
  for (size_t i = 0; i < sizeof required / sizeof *required; i++) {
    tf_status_init(&st);
    ck_assert_ptr_null(recv_node(g, "r", TF_FLOAT32, required[i], &st));
    ck_assert_int_eq(st.code, TF_INVALID_ARGUMENT);
    ck_assert_msg(strstr(st.msg, required[i]) != NULL, "_Recv without %s: %s",
                  required[i], st.msg);
    if (strcmp(required[i], "tensor_type") == 0) {
      continue; /* _Send has T, inferred from its input */
    }
    tf_status_init(&st);
    ck_assert_ptr_null(send_node(g, "s", (tf_output){p, 0}, required[i], &st));
    ck_assert_int_eq(st.code, TF_INVALID_ARGUMENT);
    ck_assert_msg(strstr(st.msg, required[i]) != NULL, "_Send without %s: %s",
                  required[i], st.msg);
  }
  /* A wrongly typed key attr is refused too, naming it. */
  tf_node_builder *b = tf_node_begin(g, "_Recv", "bad");
  tf_node_set_attr(b, "tensor_type", tf_attr_type_v(TF_FLOAT32));
  set_key_attrs(b, "send_device_incarnation");
  tf_node_set_attr(b, "send_device_incarnation", tf_attr_string("7"));
  tf_status_init(&st);
  ck_assert_ptr_null(tf_node_finish(b, &st));
  ck_assert_int_eq(st.code, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "send_device_incarnation") != NULL, "%s", st.msg);
  /* _Send takes exactly one input. */
  b = tf_node_begin(g, "_Send", "noinput");
  set_key_attrs(b, NULL);
  tf_status_init(&st);
  ck_assert_ptr_null(tf_node_finish(b, &st));
  ck_assert_int_ne(st.code, TF_OK);
  /* Nothing failed was added: the graph has only p. */
  ck_assert_int_eq(tf_graph_num_nodes(g), 1);
  tf_graph_free(g);
}
END_TEST

/* Runs a local session on g fetching fetch (or running target) with a
 * 300 ms deadline; returns the code and leaves the message in st. */
static tf_code run_local(tf_graph *g, const char *fetch, const char *target,
                         tf_status *st) {
  tf_status_init(st);
  tf_session *s = tf_session_new(g, NULL, st);
  ck_assert_msg(s != NULL, "%s", st->msg);
  tf_run_options ro = {.timeout_ms = 300};
  tf_tensor *out = NULL;
  tf_code code = tf_session_run(s, &ro, NULL, NULL, 0, fetch ? &fetch : NULL,
                                fetch ? &out : NULL, fetch ? 1 : 0,
                                target ? &target : NULL, target ? 1 : 0, NULL, st);
  ck_assert_ptr_null(out);
  tf_session_free(s);
  return code;
}

/* A local session's rendezvous is in-process: a _Send to another task's
 * device fails naming it, and a _Recv whose value never comes ends at the
 * deadline instead of waiting forever. */
START_TEST(test_local_session_rendezvous) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_status_init(&st);
  tf_node *r = recv_node(g, "recv", TF_FLOAT32, NULL, &st);
  ck_assert_msg(r != NULL, "%s", st.msg);
  tf_node *c = tt_const(g, "c", tf_tensor_scalar_f32(2.5f));
  ck_assert_ptr_nonnull(send_node(g, "send", (tf_output){c, 0}, NULL, &st));
  ck_assert_int_eq(run_local(g, "recv", NULL, &st), TF_DEADLINE_EXCEEDED);
  ck_assert_int_eq(run_local(g, NULL, "send", &st), TF_UNIMPLEMENTED);
  ck_assert_msg(strstr(st.msg, "/job:ps/replica:0/task:0/device:CPU:0") != NULL,
                "%s", st.msg);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("ops_sendrecv");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_specs);
  tcase_add_test(tc, test_flags);
  tcase_add_test(tc, test_build_with_all_attrs);
  tcase_add_test(tc, test_missing_attrs_named);
  tcase_add_test(tc, test_local_session_rendezvous);
  suite_add_tcase(s, tc);
  return s;
}
