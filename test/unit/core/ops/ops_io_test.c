/* ops_io_test.c: the input op specs (TensorFlow 1 names, arguments,
 * attrs, defaults, flags, Ref(string) handles) and their shape functions:
 * reader handles are [2], ReaderRead gives scalars and ReaderReadUpTo
 * vectors (num_records must be a scalar >= 1 when constant), DecodeRaw
 * appends an unknown dim and DecodeRawExamples the example shape (float
 * to int and scaling of ints are refused at build time), the IDX reader's
 * attrs are checked, and WriteTFRecords needs a scalar file name. */
#include <string.h>

#include "lib/core/framework/op_registry.h"
#include "test/unit/testutil.h"

static tf_node *build(tf_graph *g, const char *op, const tf_output *in, int n,
                      const tf_attr_kv *a, int na, tf_status *st) {
  tf_node_builder *b = tf_node_begin(g, op, NULL);
  for (int i = 0; i < n; i++) tf_node_add_input(b, in[i]);
  for (int i = 0; i < na; i++) tf_node_set_attr(b, a[i].name, a[i].value);
  return tf_node_finish(b, st);
}

static tf_node *must(tf_node *n, const tf_status *st) {
  ck_assert_msg(n != NULL, "%s", st->msg);
  return n;
}

START_TEST(test_specs) {
  struct { const char *op; bool async, source; } ops[] = {
      {"TFRecordReader", false, true}, {"IdxRecordReader", false, true},
      {"ReaderRead", true, false}, {"ReaderReadUpTo", true, false},
      {"ReaderNumRecordsProduced", false, false},
      {"ReaderNumWorkUnitsCompleted", false, false}, {"ReaderReset", true, false},
      {"DecodeRaw", false, false}, {"DecodeRawExamples", false, false},
      {"WriteTFRecords", false, false}};
  for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
    const tf_op_def *d = tf_op_lookup(ops[i].op);
    ck_assert_msg(d != NULL, "%s", ops[i].op);
    ck_assert_str_eq(tf_op_family_of(d), "io");
    ck_assert(d->flags & TF_OP_NOT_DIFFERENTIABLE);
    ck_assert_ptr_nonnull(d->shape_fn);
    ck_assert_ptr_nonnull(d->doc);
    ck_assert_msg(((d->flags & TF_OP_ASYNC) != 0) == ops[i].async, "%s", ops[i].op);
    ck_assert_msg(((d->flags & TF_OP_SOURCE) != 0) == ops[i].source, "%s", ops[i].op);
    bool decode = strncmp(ops[i].op, "Decode", 6) == 0;
    ck_assert_msg(((d->flags & TF_OP_STATEFUL) != 0) == !decode, "%s", ops[i].op);
    if (ops[i].source) {
      ck_assert_str_eq(d->outputs[0].name, "reader_handle");
      ck_assert(d->outputs[0].is_ref && d->outputs[0].fixed_type == TF_STRING);
    } else if (strncmp(ops[i].op, "Reader", 6) == 0) {
      ck_assert_str_eq(d->inputs[0].name, "reader_handle");
      ck_assert(d->inputs[0].is_ref);
    }
  }
  const tf_op_def *rd = tf_op_lookup("ReaderReadUpTo");
  ck_assert_str_eq(rd->inputs[1].name, "queue_handle");
  ck_assert(rd->inputs[1].is_ref);
  ck_assert_int_eq(rd->inputs[2].fixed_type, TF_INT64);
  ck_assert_str_eq(rd->outputs[0].name, "keys");
  ck_assert_str_eq(rd->outputs[1].name, "values");
  const tf_op_def *tr = tf_op_lookup("TFRecordReader");
  const tf_attr_def *ct = tf_op_find_attr(tr, "compression_type");
  ck_assert_str_eq(ct->default_value.u.s, "");
  ck_assert_int_eq(ct->n_allowed_strings, 3);
  const tf_op_def *dr = tf_op_lookup("DecodeRaw");
  ck_assert(tf_op_find_attr(dr, "little_endian")->default_value.u.b);
  const tf_op_def *ix = tf_op_lookup("IdxRecordReader");
  ck_assert_int_eq(tf_op_find_attr(ix, "dtype")->default_value.u.t, TF_UINT8);
  ck_assert_int_eq(tf_op_find_attr(ix, "record_shape")->default_value.u.shape.rank,
                   TF_UNKNOWN_RANK);
}
END_TEST

START_TEST(test_reader_shapes) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_node *r = must(build(g, "TFRecordReader", NULL, 0, NULL, 0, &st), &st);
  const tf_shape *hs = tf_node_output_shape(r, 0);
  ck_assert(hs->rank == 1 && hs->dims[0] == 2);
  tf_dtype s = TF_STRING;
  tf_attr_kv qa = {"component_types", tf_attr_type_list(&s, 1)};
  tf_node *q = must(build(g, "FIFOQueue", NULL, 0, &qa, 1, &st), &st);
  tf_output rq[2] = {{r, 0}, {q, 0}};
  tf_node *rd = must(build(g, "ReaderRead", rq, 2, NULL, 0, &st), &st);
  ck_assert_int_eq(tf_node_output_shape(rd, 0)->rank, 0);
  ck_assert_int_eq(tf_node_output_shape(rd, 1)->rank, 0);
  ck_assert_int_eq(tf_node_output_type(rd, 1), TF_STRING);
  /* num_records: scalar, >= 1 when constant */
  tf_node *n = tt_const(g, "n", tf_tensor_scalar_i64(32));
  tf_output rqn[3] = {{r, 0}, {q, 0}, {n, 0}};
  tf_node *up = must(build(g, "ReaderReadUpTo", rqn, 3, NULL, 0, &st), &st);
  const tf_shape *ks = tf_node_output_shape(up, 0);
  ck_assert(ks->rank == 1 && ks->dims[0] == TF_UNKNOWN_DIM);
  rqn[2] = (tf_output){tt_const(g, "zero", tf_tensor_scalar_i64(0)), 0};
  ck_assert_ptr_null(build(g, "ReaderReadUpTo", rqn, 3, NULL, 0, &st));
  ck_assert_msg(strstr(st.msg, "num_records must be >= 1, got 0"), "%s", st.msg);
  rqn[2] = (tf_output){tt_const(g, "vec", tf_tensor_vec_i64(1, (int64_t[]){3})), 0};
  ck_assert_ptr_null(build(g, "ReaderReadUpTo", rqn, 3, NULL, 0, &st));
  ck_assert_msg(strstr(st.msg, "num_records must be a scalar"), "%s", st.msg);
  tf_output h = {r, 0};
  tf_node *cnt = must(build(g, "ReaderNumRecordsProduced", &h, 1, NULL, 0, &st), &st);
  ck_assert_int_eq(tf_node_output_shape(cnt, 0)->rank, 0);
  ck_assert_int_eq(tf_node_output_type(cnt, 0), TF_INT64);
  must(build(g, "ReaderReset", &h, 1, NULL, 0, &st), &st);
  /* a handle must be a ref edge */
  tf_node *p = tt_placeholder(g, NULL, TF_STRING, tf_shape_of(1, 2));
  tf_output ph = {p, 0};
  ck_assert_ptr_null(build(g, "ReaderReset", &ph, 1, NULL, 0, &st));
  tf_graph_free(g);
}
END_TEST

START_TEST(test_idx_reader_attrs) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_attr_kv ok[3] = {{"dtype", tf_attr_type_v(TF_FLOAT32)},
                      {"record_shape", tf_attr_shape(tf_shape_of(2, 28, 28))},
                      {"compression_type", tf_attr_string("GZIP")}};
  must(build(g, "IdxRecordReader", NULL, 0, ok, 3, &st), &st);
  tf_attr_kv bad_type = {"dtype", tf_attr_type_v(TF_INT64)};
  ck_assert_ptr_null(build(g, "IdxRecordReader", NULL, 0, &bad_type, 1, &st));
  tf_attr_kv partial = {"record_shape", tf_attr_shape(tf_shape_of(2, 28, -1))};
  ck_assert_ptr_null(build(g, "IdxRecordReader", NULL, 0, &partial, 1, &st));
  ck_assert_msg(strstr(st.msg, "must be fully defined"), "%s", st.msg);
  tf_attr_kv deep = {"record_shape", tf_attr_shape(tf_shape_of(8, 1, 1, 1, 1, 1, 1, 1, 1))};
  ck_assert_ptr_null(build(g, "IdxRecordReader", NULL, 0, &deep, 1, &st));
  ck_assert_msg(strstr(st.msg, "rank 8 > 7"), "%s", st.msg);
  tf_attr_kv bz = {"compression_type", tf_attr_string("BZIP2")};
  ck_assert_ptr_null(build(g, "TFRecordReader", NULL, 0, &bz, 1, &st));
  ck_assert_msg(strstr(st.msg, "BZIP2"), "%s", st.msg);
  tf_graph_free(g);
}
END_TEST

START_TEST(test_decode_shapes) {
  tt_input in = {TF_STRING, tf_shape_of(2, 4, 5)};
  tf_attr_kv a[1] = {{"out_type", tf_attr_type_v(TF_INT16)}};
  tf_dtype dt;
  tf_shape s = tt_infer_shape("DecodeRaw", &in, 1, false, a, 1, 0, &dt);
  ck_assert_int_eq(dt, TF_INT16);
  ck_assert(s.rank == 3 && s.dims[0] == 4 && s.dims[1] == 5 && s.dims[2] == TF_UNKNOWN_DIM);
  tf_attr_kv e[3] = {{"raw_type", tf_attr_type_v(TF_UINT8)},
                     {"out_type", tf_attr_type_v(TF_FLOAT32)},
                     {"shape", tf_attr_shape(tf_shape_of(2, 28, 28))}};
  tt_input v = {TF_STRING, tf_shape_of(1, TF_UNKNOWN_DIM)};
  s = tt_infer_shape("DecodeRawExamples", &v, 1, false, e, 3, 0, &dt);
  ck_assert_int_eq(dt, TF_FLOAT32);
  ck_assert(s.rank == 3 && s.dims[0] == TF_UNKNOWN_DIM && s.dims[1] == 28 && s.dims[2] == 28);
  tf_graph *g = tf_graph_new();
  tf_status st;
  tf_attr_kv f2i[3] = {{"raw_type", tf_attr_type_v(TF_FLOAT32)},
                       {"out_type", tf_attr_type_v(TF_INT32)},
                       {"shape", tf_attr_shape(tf_shape_scalar())}};
  ck_assert_ptr_null(tt_build_node(g, "DecodeRawExamples", NULL, &v, 1, false, f2i, 3, &st));
  ck_assert_msg(strstr(st.msg, "cannot convert float32 records to int32"), "%s", st.msg);
  tf_attr_kv si[4] = {{"raw_type", tf_attr_type_v(TF_UINT8)},
                      {"out_type", tf_attr_type_v(TF_INT64)},
                      {"shape", tf_attr_shape(tf_shape_scalar())},
                      {"scale", tf_attr_float(0.5)}};
  ck_assert_ptr_null(tt_build_node(g, "DecodeRawExamples", NULL, &v, 1, false, si, 4, &st));
  ck_assert_msg(strstr(st.msg, "scale 0.5 needs a float out_type"), "%s", st.msg);
  tf_attr_kv un[3] = {{"raw_type", tf_attr_type_v(TF_UINT8)},
                      {"out_type", tf_attr_type_v(TF_INT64)},
                      {"shape", tf_attr_shape(tf_shape_of(1, TF_UNKNOWN_DIM))}};
  ck_assert_ptr_null(tt_build_node(g, "DecodeRawExamples", NULL, &v, 1, false, un, 3, &st));
  ck_assert_msg(strstr(st.msg, "must be fully defined"), "%s", st.msg);
  tt_input deep = {TF_STRING, tf_shape_of(7, 1, 1, 1, 1, 1, 1, 1)};
  ck_assert_ptr_null(tt_build_node(g, "DecodeRawExamples", NULL, &deep, 1, false, e, 3, &st));
  ck_assert_msg(strstr(st.msg, "exceed rank 8"), "%s", st.msg);
  tt_input deep8 = {TF_STRING, tf_shape_of(8, 1, 1, 1, 1, 1, 1, 1, 1)};
  ck_assert_ptr_null(tt_build_node(g, "DecodeRaw", NULL, &deep8, 1, false, a, 1, &st));
  tf_graph_free(g);
}
END_TEST

START_TEST(test_write_shapes) {
  tf_graph *g = tf_graph_new();
  tf_status st;
  tt_input ok[2] = {{TF_STRING, tf_shape_scalar()}, {TF_STRING, tf_shape_of(1, 3)}};
  ck_assert_ptr_nonnull(tt_build_node(g, "WriteTFRecords", NULL, ok, 2, false, NULL, 0, &st));
  tt_input bad[2] = {{TF_STRING, tf_shape_of(1, 2)}, {TF_STRING, tf_shape_of(1, 3)}};
  ck_assert_ptr_null(tt_build_node(g, "WriteTFRecords", NULL, bad, 2, false, NULL, 0, &st));
  ck_assert_msg(strstr(st.msg, "filename must be a scalar"), "%s", st.msg);
  tf_graph_free(g);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("ops_io");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_specs);
  tcase_add_test(tc, test_reader_shapes);
  tcase_add_test(tc, test_idx_reader_attrs);
  tcase_add_test(tc, test_decode_shapes);
  tcase_add_test(tc, test_write_shapes);
  suite_add_tcase(s, tc);
  return s;
}
