/* cpu_checkpoint_test.c: SaveV2 and RestoreV2 through a session
 * (include/tf/session.h). Variables of four dtypes are initialised from
 * seeded random values, saved (one of them as two slices cut with Slice,
 * into a directory SaveV2 makes), overwritten, then restored with
 * RestoreV2 + Assign: each equals what was saved; a slice straddling the
 * two stored ones equals the direct slice. Errors: a missing name
 * (NOT_FOUND naming it and the file), a damaged file (DATA_LOSS), a
 * dtype other than the stored one, a missing file, and SaveV2's argument
 * checks (N names for N tensors, non-empty and unique names, a scalar
 * prefix). */
#include <string.h>
#include <sys/stat.h>

#include "test/unit/core/serialize/ckpt_testlib.h"
#include "tf/session.h"

static tf_node *node(tf_graph *g, const char *op, const char *name, const tf_output *in,
                     int n_in, const tf_output *list, int n_list, const tf_attr_kv *attrs,
                     int n_attrs, tf_status *st) {
  tf_node_builder *b = tf_node_begin(g, op, name);
  for (int i = 0; i < n_in; i++) tf_node_add_input(b, in[i]);
  if (list != NULL) tf_node_add_input_list(b, list, n_list);
  for (int i = 0; i < n_attrs; i++) tf_node_set_attr(b, attrs[i].name, attrs[i].value);
  return tf_node_finish(b, st);
}

static tf_node *must(tf_node *n, const tf_status *st) {
  ck_assert_msg(n != NULL, "%s", st->msg);
  return n;
}

static tf_tensor *strings(int n, const char *const *v) {
  tf_tensor *t;
  tf_shape s = tf_shape_of(1, n);
  ck_assert(tf_tensor_new(TF_STRING, &s, &t, NULL) == TF_OK);
  for (int i = 0; i < n; i++) tf_tensor_set_string(t, i, v[i], strlen(v[i]), NULL);
  return t;
}

static tf_output sconst(tf_graph *g, int n, const char *const *v) {
  return (tf_output){tt_const(g, NULL, strings(n, v)), 0};
}

static tf_output scalar_str(tf_graph *g, const char *name, const char *v) {
  tf_tensor *t;
  tf_shape s = tf_shape_scalar();
  ck_assert(tf_tensor_new(TF_STRING, &s, &t, NULL) == TF_OK);
  tf_tensor_set_string(t, 0, v, strlen(v), NULL);
  return (tf_output){tt_const(g, name, t), 0};
}

static tf_node *var(tf_graph *g, const char *name, tf_dtype dt, tf_shape shape) {
  tf_attr_kv a[] = {{"dtype", tf_attr_type_v(dt)}, {"shape", tf_attr_shape(shape)}};
  tf_status st;
  return must(node(g, "VariableV2", name, NULL, 0, NULL, 0, a, 2, &st), &st);
}

static tf_node *assign(tf_graph *g, const char *name, tf_node *v, tf_output value) {
  tf_status st;
  return must(node(g, "Assign", name, (tf_output[]){{v, 0}, value}, 2, NULL, 0, NULL, 0, &st),
              &st);
}

static tf_code run(tf_session *s, const char *const *fn, tf_tensor *const *fv, int nf,
                   const char *fetch, tf_tensor **out, const char *const *targets, int nt,
                   tf_status *st) {
  tf_run_options o = {.timeout_ms = 20000};
  return tf_session_run(s, &o, fn, fv, nf, fetch ? &fetch : NULL, out, fetch ? 1 : 0, targets,
                        nt, NULL, st);
}

#define NV 4
static const char *const vnames[NV] = {"w", "b", "s", "emb"};

/* The variables, their initial values (fed to init_<name>) and the save,
 * overwrite and restore nodes. */
typedef struct model {
  tf_graph *g;
  tf_tensor *init[NV], *other[NV];
  char dir[IO_PATH_MAX], prefix[IO_PATH_MAX];
} model;

static void build(model *m) {
  tt_rng_reseed(tt_seed() ^ 0x5a7e);
  io_tmpdir(m->dir, sizeof m->dir);
  io_path(m->prefix, m->dir, "new_dir/model.shard");
  m->g = tf_graph_new();
  tf_dtype dts[NV] = {TF_FLOAT32, TF_INT64, TF_STRING, TF_FLOAT64};
  tf_shape shapes[NV] = {tf_shape_of(2, 3, 4), tf_shape_of(1, 5), tf_shape_of(1, 2),
                         tf_shape_of(2, 6, 2)};
  tf_node *v[NV];
  tf_status st;
  for (int i = 0; i < NV; i++) {
    v[i] = var(m->g, vnames[i], dts[i], shapes[i]);
    m->init[i] = ck_rand_tensor(dts[i], shapes[i]);
    m->other[i] = ck_rand_tensor(dts[i], shapes[i]);
    char pn[32], an[32];
    snprintf(pn, sizeof pn, "init_%s", vnames[i]);
    snprintf(an, sizeof an, "assign_%s", vnames[i]);
    assign(m->g, an, v[i], (tf_output){tt_placeholder(m->g, pn, dts[i], shapes[i]), 0});
  }
  /* emb saved as rows 0..2 and 3..5, cut with Slice. */
  tf_output e = {v[3], 0}, cuts[2];
  for (int k = 0; k < 2; k++) {
    tf_output begin = {tt_const(m->g, NULL, tf_tensor_vec_i32(2, (int32_t[]){3 * k, 0})), 0};
    tf_output size = {tt_const(m->g, NULL, tf_tensor_vec_i32(2, (int32_t[]){3, 2})), 0};
    cuts[k] = (tf_output){must(node(m->g, "Slice", NULL, (tf_output[]){e, begin, size}, 3, NULL,
                                    0, NULL, 0, &st), &st), 0};
  }
  const char *names[] = {"w", "b", "s", "emb", "emb"};
  const char *slices[] = {"", "", "", "6 2 0,3:-", "6 2 3,3:-"};
  tf_output in[3] = {scalar_str(m->g, "prefix", m->prefix), sconst(m->g, 5, names),
                     sconst(m->g, 5, slices)};
  tf_output tensors[5] = {{v[0], 0}, {v[1], 0}, {v[2], 0}, cuts[0], cuts[1]};
  must(node(m->g, "SaveV2", "save", in, 3, tensors, 5, NULL, 0, &st), &st);
  const char *whole[] = {"", "", "", ""};
  in[1] = sconst(m->g, NV, vnames);
  in[2] = sconst(m->g, NV, whole);
  tf_attr_kv a = {"dtypes", tf_attr_type_list(dts, NV)};
  tf_node *r = must(node(m->g, "RestoreV2", "restore", in, 3, NULL, 0, &a, 1, &st), &st);
  for (int i = 0; i < NV; i++) {
    char an[32];
    snprintf(an, sizeof an, "restore_%s", vnames[i]);
    assign(m->g, an, v[i], (tf_output){r, i});
  }
}

static void assign_all(tf_session *s, tf_tensor **vals) {
  const char *fn[NV] = {"init_w", "init_b", "init_s", "init_emb"};
  const char *targets[NV] = {"assign_w", "assign_b", "assign_s", "assign_emb"};
  tf_status st;
  ck_assert_msg(run(s, fn, vals, NV, NULL, NULL, targets, NV, &st) == TF_OK, "%s", st.msg);
}

static void expect_vars(tf_session *s, tf_tensor **want) {
  for (int i = 0; i < NV; i++) {
    tf_tensor *t = NULL;
    tf_status st;
    ck_assert_msg(run(s, NULL, NULL, 0, vnames[i], &t, NULL, 0, &st) == TF_OK, "%s", st.msg);
    ck_assert_msg(tf_tensor_equal(t, want[i]), "variable %s", vnames[i]);
    tf_tensor_unref(t);
  }
}

START_TEST(test_save_change_restore) {
  model m;
  build(&m);
  tf_session *s = tf_session_new(m.g, NULL, NULL);
  ck_assert_ptr_nonnull(s);
  assign_all(s, m.init);
  tf_status st;
  const char *save = "save";
  ck_assert_msg(run(s, NULL, NULL, 0, NULL, NULL, &save, 1, &st) == TF_OK, "%s", st.msg);
  struct stat sb;
  ck_assert(stat(m.prefix, &sb) == 0 && S_ISREG(sb.st_mode));
  assign_all(s, m.other);
  expect_vars(s, m.other);
  const char *targets[NV] = {"restore_w", "restore_b", "restore_s", "restore_emb"};
  ck_assert_msg(run(s, NULL, NULL, 0, NULL, NULL, targets, NV, &st) == TF_OK, "%s", st.msg);
  expect_vars(s, m.init);
  /* A slice straddling the two stored ones, restored alone. */
  tf_graph_push_scope(m.g, "more");
  tf_output in[3] = {scalar_str(m.g, NULL, m.prefix), sconst(m.g, 1, (const char *[]){"emb"}),
                     sconst(m.g, 1, (const char *[]){"6 2 2,3:1,1"})};
  tf_dtype f64 = TF_FLOAT64;
  tf_attr_kv a = {"dtypes", tf_attr_type_list(&f64, 1)};
  tf_node *r = must(node(m.g, "RestoreV2", "part", in, 3, NULL, 0, &a, 1, &st), &st);
  tf_graph_pop_scope(m.g);
  tf_tensor *got = NULL;
  ck_assert_msg(run(s, NULL, NULL, 0, tf_node_name(r), &got, NULL, 0, &st) == TF_OK, "%s", st.msg);
  tf_tensor *want = ck_slice_ref(m.init[3], (int64_t[]){2, 1}, (int64_t[]){3, 1});
  ck_assert(tf_tensor_equal(got, want));
  tt_free((tf_tensor *[]){got, want}, 2);
  tf_session_free(s);
  tt_free(m.init, NV);
  tt_free(m.other, NV);
  tf_graph_free(m.g);
  io_tmpdir_remove(m.dir);
}
END_TEST

/* A RestoreV2 of names[0..n) with dtypes dts from prefix, run alone. */
static tf_code restore_one(tf_session *s, tf_graph *g, const char *prefix, const char *name,
                           const char *slice, tf_dtype dt, tf_status *st) {
  tf_output in[3] = {scalar_str(g, NULL, prefix), sconst(g, 1, &name), sconst(g, 1, &slice)};
  tf_attr_kv a = {"dtypes", tf_attr_type_list(&dt, 1)};
  tf_status bst;
  tf_node *r = must(node(g, "RestoreV2", NULL, in, 3, NULL, 0, &a, 1, &bst), &bst);
  tf_tensor *t = NULL;
  tf_code c = run(s, NULL, NULL, 0, tf_node_name(r), &t, NULL, 0, st);
  tf_tensor_unref(t);
  return c;
}

START_TEST(test_restore_errors) {
  model m;
  build(&m);
  tf_session *s = tf_session_new(m.g, NULL, NULL);
  assign_all(s, m.init);
  tf_status st;
  const char *save = "save";
  ck_assert(run(s, NULL, NULL, 0, NULL, NULL, &save, 1, &st) == TF_OK);
  ck_assert(restore_one(s, m.g, m.prefix, "w", "", TF_FLOAT32, &st) == TF_OK);
  ck_assert_int_eq(restore_one(s, m.g, m.prefix, "nope", "", TF_FLOAT32, &st), TF_NOT_FOUND);
  ck_assert_msg(strstr(st.msg, "'nope'") && strstr(st.msg, "model.shard") &&
                    strstr(st.msg, "RestoreV2"), "%s", st.msg);
  ck_assert_int_eq(restore_one(s, m.g, m.prefix, "w", "", TF_INT32, &st), TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(st.msg, "'w'") && strstr(st.msg, "int32"), "%s", st.msg);
  ck_assert_int_eq(restore_one(s, m.g, m.prefix, "emb", "6 3 0,1:-", TF_FLOAT64, &st),
                   TF_INVALID_ARGUMENT);
  char missing[IO_PATH_MAX];
  io_path(missing, m.dir, "none.shard");
  ck_assert_int_eq(restore_one(s, m.g, missing, "w", "", TF_FLOAT32, &st), TF_NOT_FOUND);
  ck_assert_ptr_nonnull(strstr(st.msg, "none.shard"));
  /* Damage w's bytes (right after the 16-byte header). */
  size_t n;
  uint8_t *b = io_read(m.prefix, &n);
  b[20] ^= 0x10;
  io_write(m.prefix, b, n);
  free(b);
  ck_assert_int_eq(restore_one(s, m.g, m.prefix, "w", "", TF_FLOAT32, &st), TF_DATA_LOSS);
  ck_assert_msg(strstr(st.msg, "'w'") && strstr(st.msg, "CRC32C"), "%s", st.msg);
  ck_assert(restore_one(s, m.g, m.prefix, "b", "", TF_INT64, &st) == TF_OK);
  tf_session_free(s);
  tt_free(m.init, NV);
  tt_free(m.other, NV);
  tf_graph_free(m.g);
  io_tmpdir_remove(m.dir);
}
END_TEST

/* SaveV2 fed names/slices (unknown shapes) with one float tensor. */
START_TEST(test_save_argument_checks) {
  char dir[IO_PATH_MAX], path[IO_PATH_MAX];
  io_tmpdir(dir, sizeof dir);
  io_path(path, dir, "x.shard");
  tf_graph *g = tf_graph_new();
  tf_output p = {tt_placeholder(g, "p", TF_STRING, tf_shape_unknown()), 0};
  tf_output nm = {tt_placeholder(g, "n", TF_STRING, tf_shape_unknown()), 0};
  tf_output sl = {tt_placeholder(g, "sl", TF_STRING, tf_shape_unknown()), 0};
  tf_output x = {tt_const(g, "x", tf_tensor_vec_f32(2, (float[]){1, 2})), 0};
  tf_status st;
  must(node(g, "SaveV2", "save", (tf_output[]){p, nm, sl}, 3, (tf_output[]){x, x}, 2, NULL, 0,
            &st), &st);
  tf_session *s = tf_session_new(g, NULL, NULL);
  struct { const char *names[3]; int n; const char *slices[3]; int ns; const char *want; } cases[] = {
      {{"a", "b"}, 2, {"", ""}, 2, NULL},
      {{"a"}, 1, {"", ""}, 2, "tensor_names must be a vector of 2"},
      {{"a", "b"}, 2, {""}, 1, "shape_and_slices must be a vector of 2"},
      {{"a", ""}, 2, {"", ""}, 2, "tensor_names[1] is empty"},
      {{"a", "a"}, 2, {"", ""}, 2, "saved twice"},
      {{"a", "a"}, 2, {"4 0,2", "4 2,2"}, 2, NULL},
      {{"a", "a"}, 2, {"4 0,2", "4 1,2"}, 2, "overlaps"},
      {{"a", "b"}, 2, {"3 0,2", "x"}, 2, "'x'"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tf_tensor *fv[3] = {NULL, strings(cases[i].n, cases[i].names),
                        strings(cases[i].ns, cases[i].slices)};
    tf_tensor *pt;
    tf_shape sc = tf_shape_scalar();
    ck_assert(tf_tensor_new(TF_STRING, &sc, &pt, NULL) == TF_OK);
    tf_tensor_set_string(pt, 0, path, strlen(path), NULL);
    fv[0] = pt;
    const char *fn[3] = {"p", "n", "sl"}, *target = "save";
    tf_code c = run(s, fn, fv, 3, NULL, NULL, &target, 1, &st);
    if (cases[i].want == NULL) {
      ck_assert_msg(c == TF_OK, "case %zu: %s", i, st.msg);
    } else {
      ck_assert_msg(c == TF_INVALID_ARGUMENT && strstr(st.msg, cases[i].want) &&
                        strstr(st.msg, "save"), "case %zu: %s", i, st.msg);
    }
    tt_free(fv, 3);
  }
  /* A vector prefix. */
  tf_tensor *fv[3] = {strings(1, (const char *[]){path}), strings(1, (const char *[]){"a"}),
                      strings(1, (const char *[]){""})};
  tf_graph *g2 = tf_graph_new();
  tf_output p2 = {tt_placeholder(g2, "p", TF_STRING, tf_shape_unknown()), 0};
  tf_output n2 = {tt_placeholder(g2, "n", TF_STRING, tf_shape_unknown()), 0};
  tf_output s2 = {tt_placeholder(g2, "sl", TF_STRING, tf_shape_unknown()), 0};
  tf_output x2 = {tt_const(g2, "x", tf_tensor_vec_f32(2, (float[]){1, 2})), 0};
  must(node(g2, "SaveV2", "save", (tf_output[]){p2, n2, s2}, 3, &x2, 1, NULL, 0, &st), &st);
  tf_session *s2s = tf_session_new(g2, NULL, NULL);
  const char *fn[3] = {"p", "n", "sl"}, *target = "save";
  ck_assert_int_eq(run(s2s, fn, fv, 3, NULL, NULL, &target, 1, &st), TF_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(st.msg, "prefix must be a non-empty scalar"));
  tt_free(fv, 3);
  tf_session_free(s2s);
  tf_graph_free(g2);
  tf_session_free(s);
  tf_graph_free(g);
  io_tmpdir_remove(dir);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_checkpoint");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_save_change_restore);
  tcase_add_test(tc, test_restore_errors);
  tcase_add_test(tc, test_save_argument_checks);
  suite_add_tcase(s, tc);
  return s;
}
