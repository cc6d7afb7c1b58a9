/* cpu_training_sparse_test.c: the row-wise optimizer kernels through a
 * session. SparseApplyMomentum (and Nesterov), SparseApplyAdagrad (also
 * without slot updates), SparseApplyAdadelta and SparseApplyRMSProp run
 * several steps with duplicate indices (int32 and int64, float32 and
 * float64) against a float64 recomputation of TF's formula applied one
 * index after the other; where TF's meanings coincide (Adagrad on unique
 * indices, whose untouched rows do not move) the sparse update equals the
 * dense one of the densified gradient. SparseApplyAdam (non-lazy: every
 * row of m and v decays, duplicates summed) equals ApplyAdam on the
 * densified gradient and the float64 reference. Big updates go through
 * the pool. Bad indices (named with their offset), wrong grad shapes and
 * non-vector indices fail and leave every variable unchanged. */
#include <string.h>

#include "test/unit/devices/cpu/cpu_training_testlib.h"

/* n random indices in [0, rows), with at least one duplicate when n > 1. */
static tf_tensor *rand_indices(tf_dtype dt, int64_t n, int64_t rows) {
  int64_t v[4096];
  ck_assert(n <= 4096);
  for (int64_t i = 0; i < n; i++) {
    v[i] = (int64_t)(tt_rand_u64() % (uint64_t)rows);
  }
  if (n > 1) {
    v[n - 1] = v[0];
  }
  return tt_tensor_i(dt, tf_shape_of(1, n), v);
}

/* grad rows: [n] + shape[1:]. */
static tf_shape rows_shape(tf_shape shape, int64_t n) {
  shape.dims[0] = n;
  return shape;
}

static void check_sparse(const char *op, tf_dtype dt, tf_dtype idx_dt,
                         tf_shape shape, int64_t n_idx, bool nesterov,
                         bool update_slots, int steps) {
  tf_attr_kv attrs[2];
  int n_attrs = 0;
  const tf_op_def *d = tf_op_lookup(op);
  ck_assert_msg(d != NULL, "no op %s", op);
  if (tf_op_find_attr(d, "use_nesterov")) {
    attrs[n_attrs++] = (tf_attr_kv){"use_nesterov", tf_attr_bool(nesterov)};
  }
  if (tf_op_find_attr(d, "update_slots")) {
    attrs[n_attrs++] = (tf_attr_kv){"update_slots",
                                    tf_attr_bool(update_slots)};
  }
  tr_rig *r = tr_rig_new(op, dt, idx_dt, attrs, n_attrs);
  tr_ref ref;
  tr_rig_init_random(r, shape, &ref);
  tr_hp hp = tr_hp_random(op, nesterov, update_slots);
  for (int t = 1; t <= steps; t++) {
    tr_hp_step(&hp, t);
    tf_tensor *idx = rand_indices(idx_dt, n_idx, shape.dims[0]);
    tf_tensor *g = tt_rand(dt, rows_shape(shape, n_idx), -2, 2);
    tr_rig_step(r, &hp, g, idx);
    tr_ref_sparse(&ref, &hp, g, idx);
    tr_rig_compare(r, &ref, dt == TF_FLOAT32 ? 2e-5 : 1e-12,
                   dt == TF_FLOAT32 ? 2e-5 : 1e-11);
    tf_tensor_unref(g);
    tf_tensor_unref(idx);
  }
  tr_ref_fini(&ref);
  tr_rig_free(r);
}

static const char *const sparse_ops[] = {
    "SparseApplyMomentum", "SparseApplyAdagrad", "SparseApplyAdadelta",
    "SparseApplyRMSProp"};

START_TEST(test_sparse_vs_reference) {
  tt_rng_reseed(tt_seed() ^ 11);
  for (size_t i = 0; i < sizeof sparse_ops / sizeof *sparse_ops; i++) {
    check_sparse(sparse_ops[i], TF_FLOAT32, TF_INT32, tf_shape_of(2, 9, 5),
                 12, false, true, 4);
    check_sparse(sparse_ops[i], TF_FLOAT64, TF_INT64, tf_shape_of(3, 6, 2, 3),
                 8, false, true, 3);
    check_sparse(sparse_ops[i], TF_FLOAT64, TF_INT32, tf_shape_of(1, 10), 15,
                 false, true, 3);
  }
  check_sparse("SparseApplyMomentum", TF_FLOAT32, TF_INT64,
               tf_shape_of(2, 7, 4), 9, true, true, 4);
  check_sparse("SparseApplyAdagrad", TF_FLOAT64, TF_INT32,
               tf_shape_of(2, 7, 4), 9, false, false, 3);
  check_sparse("SparseApplyRMSProp", TF_FLOAT32, TF_INT32,
               tf_shape_of(2, 4, 3), 0, false, true, 1); /* no indices */
}
END_TEST

/* Enough rows and indices to split the rows over the pool. */
START_TEST(test_sparse_parallel) {
  tt_rng_reseed(tt_seed() ^ 12);
  check_sparse("SparseApplyAdagrad", TF_FLOAT32, TF_INT32,
               tf_shape_of(2, 3000, 12), 4000, false, true, 2);
  check_sparse("SparseApplyMomentum", TF_FLOAT64, TF_INT64,
               tf_shape_of(2, 500, 40), 1000, true, true, 2);
}
END_TEST

/* A densified copy of rows g at idx in dt arithmetic (duplicates summed in
 * index order). */
static tf_tensor *densify(const tf_tensor *g, const tf_tensor *idx,
                          tf_shape shape) {
  tf_tensor *out;
  tf_status st;
  ck_assert_int_eq(tf_tensor_new_zeros(g->dtype, &shape, &out, &st), TF_OK);
  int64_t row = shape.dims[0] ? out->n / shape.dims[0] : 0;
  for (int64_t i = 0; i < idx->n; i++) {
    int64_t k = tf_tensor_get_i64(idx, i);
    for (int64_t j = 0; j < row; j++) {
      if (g->dtype == TF_FLOAT32) {
        ((float *)out->data)[k * row + j] += ((float *)g->data)[i * row + j];
      } else {
        ((double *)out->data)[k * row + j] += ((double *)g->data)[i * row + j];
      }
    }
  }
  return out;
}

/* sparse_op on rows (unique indices when `unique`) against dense_op on
 * the densified gradient, from the same random start; both also against
 * the float64 reference of the dense update. */
static void check_vs_dense(const char *sparse_op, const char *dense_op,
                           tf_dtype dt, tf_shape shape, int64_t n_idx,
                           bool unique, int steps) {
  tr_rig *rs = tr_rig_new(sparse_op, dt, TF_INT64, NULL, 0);
  tr_rig *rd = tr_rig_new(dense_op, dt, TF_INT64, NULL, 0);
  tr_ref ref;
  tr_rig_init_random(rs, shape, &ref);
  for (int k = 0; k < rs->n_refs; k++) {
    tf_tensor *t = tr_rig_fetch(rs, k);
    tr_rig_assign(rd, k, t);
    tf_tensor_unref(t);
  }
  tr_hp hp = tr_hp_random(dense_op, false, true);
  for (int t = 1; t <= steps; t++) {
    tr_hp_step(&hp, t);
    tf_tensor *idx = rand_indices(TF_INT64, n_idx, shape.dims[0]);
    if (unique) {
      for (int64_t i = 0; i < n_idx; i++) {
        ((int64_t *)idx->data)[i] = (i * 7 + t) % shape.dims[0];
      }
    }
    tf_tensor *g = tt_rand(dt, rows_shape(shape, n_idx), -2, 2);
    tf_tensor *dense = densify(g, idx, shape);
    tr_rig_step(rs, &hp, g, idx);
    tr_rig_step(rd, &hp, dense, NULL);
    tr_ref_dense(&ref, &hp, dense);
    for (int k = 0; k < rs->n_refs; k++) {
      tf_tensor *a = tr_rig_fetch(rs, k), *b = tr_rig_fetch(rd, k);
      tt_assert_close(a, b, 0, dt == TF_FLOAT32 ? 1e-6 : 1e-14);
      tf_tensor_unref(a);
      tf_tensor_unref(b);
    }
    tr_rig_compare(rs, &ref, dt == TF_FLOAT32 ? 2e-5 : 1e-12,
                   dt == TF_FLOAT32 ? 2e-5 : 1e-11);
    tf_tensor *tt[] = {g, idx, dense};
    tt_free(tt, 3);
  }
  tr_ref_fini(&ref);
  tr_rig_free(rs);
  tr_rig_free(rd);
}

START_TEST(test_sparse_vs_dense) {
  tt_rng_reseed(tt_seed() ^ 13);
  check_vs_dense("SparseApplyAdagrad", "ApplyAdagrad", TF_FLOAT32,
                 tf_shape_of(2, 11, 3), 5, true, 3);
  check_vs_dense("SparseApplyAdagrad", "ApplyAdagrad", TF_FLOAT64,
                 tf_shape_of(1, 20), 9, true, 3);
  check_vs_dense("SparseApplyAdam", "ApplyAdam", TF_FLOAT32,
                 tf_shape_of(2, 13, 5), 11, false, 4);
  check_vs_dense("SparseApplyAdam", "ApplyAdam", TF_FLOAT64,
                 tf_shape_of(3, 8, 2, 2), 20, false, 3);
  check_vs_dense("SparseApplyAdam", "ApplyAdam", TF_FLOAT64,
                 tf_shape_of(1, 2000), 3, false, 2); /* runs of zero rows */
  check_vs_dense("SparseApplyAdam", "ApplyAdam", TF_FLOAT32,
                 tf_shape_of(2, 3000, 16), 700, false, 2); /* the pool */
}
END_TEST

/* ---- errors -------------------------------------------------------------- */

START_TEST(test_bad_indices) {
  tt_rng_reseed(tt_seed() ^ 14);
  const char *ops[] = {"SparseApplyAdagrad", "SparseApplyAdam"};
  for (int o = 0; o < 2; o++) {
    tr_rig *r = tr_rig_new(ops[o], TF_FLOAT32, TF_INT32, NULL, 0);
    tr_ref ref;
    tr_rig_init_random(r, tf_shape_of(2, 4, 3), &ref);
    tf_tensor *before[3];
    for (int k = 0; k < r->n_refs; k++) {
      before[k] = tr_rig_fetch(r, k);
    }
    tr_hp hp = tr_hp_random(ops[o], false, true);
    tr_hp_step(&hp, 1);
    int64_t bad[] = {1, 3, 4, 0};
    tf_tensor *idx = tt_tensor_i(TF_INT32, tf_shape_of(1, 4), bad);
    tf_tensor *g = tt_rand(TF_FLOAT32, tf_shape_of(2, 4, 3), -1, 1);
    const char *msg = tr_rig_step_fail(r, &hp, g, idx, TF_INVALID_ARGUMENT);
    ck_assert_msg(strstr(msg, "Index 4 at offset 2 in indices is out of "
                              "range [0, 4) (variable var)"),
                  "%s", msg);
    bad[2] = -1;
    tf_tensor *neg = tt_tensor_i(TF_INT32, tf_shape_of(1, 4), bad);
    msg = tr_rig_step_fail(r, &hp, g, neg, TF_INVALID_ARGUMENT);
    ck_assert_msg(strstr(msg, "Index -1 at offset 2"), "%s", msg);
    tf_tensor *g3 = tt_rand(TF_FLOAT32, tf_shape_of(2, 3, 3), -1, 1);
    bad[2] = 2;
    tf_tensor *ok = tt_tensor_i(TF_INT32, tf_shape_of(1, 4), bad);
    msg = tr_rig_step_fail(r, &hp, g3, ok, TF_INVALID_ARGUMENT);
    ck_assert_msg(strstr(msg, "grad must have shape [4] + var.shape[1:]") &&
                      strstr(msg, "[3,3]") && strstr(msg, "[4,3]"),
                  "%s", msg);
    tf_tensor *idx2 = tt_tensor_i(TF_INT32, tf_shape_of(2, 2, 2), bad);
    msg = tr_rig_step_fail(r, &hp, g, idx2, TF_INVALID_ARGUMENT);
    ck_assert_msg(strstr(msg, "indices must be one-dimensional, got [2,2]"),
                  "%s", msg);
    for (int k = 0; k < r->n_refs; k++) {
      tr_rig_expect_value(r, k, before[k]);
    }
    tt_free(before, r->n_refs);
    tf_tensor *t[] = {idx, neg, g, g3, ok, idx2};
    tt_free(t, 6);
    tr_ref_fini(&ref);
    tr_rig_free(r);
  }
}
END_TEST

START_TEST(test_scalar_var) {
  tr_rig *r = tr_rig_new("SparseApplyMomentum", TF_FLOAT64, TF_INT32, NULL, 0);
  tf_tensor *w = tf_tensor_scalar_f64(1.5);
  tr_rig_assign(r, 0, w);
  tr_rig_assign(r, 1, w);
  tr_hp hp = tr_hp_random("SparseApplyMomentum", false, true);
  int64_t zero = 0;
  tf_tensor *idx = tt_tensor_i(TF_INT32, tf_shape_of(1, 1), &zero);
  tf_tensor *g = tt_rand(TF_FLOAT64, tf_shape_of(1, 1), -1, 1);
  const char *msg = tr_rig_step_fail(r, &hp, g, idx, TF_INVALID_ARGUMENT);
  ck_assert_msg(strstr(msg, "var (var) must be at least 1 dimensional, got "
                            "[]"),
                "%s", msg);
  tr_rig_expect_value(r, 0, w);
  tf_tensor *t[] = {w, idx, g};
  tt_free(t, 3);
  tr_rig_free(r);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("cpu_training_sparse");
  TCase *c = tcase_create("core");
  tcase_set_timeout(c, 30);
  tcase_add_test(c, test_sparse_vs_reference);
  tcase_add_test(c, test_sparse_parallel);
  tcase_add_test(c, test_sparse_vs_dense);
  tcase_add_test(c, test_bad_indices);
  tcase_add_test(c, test_scalar_var);
  suite_add_tcase(s, c);
  return s;
}
