/* ckpt_dir_testlib.h: a checkpoint of a pretend job for the checkpoint
 * directory tests: step s has three shards (ps-0, ps-1, worker-0) whose
 * tensors are seeded by s, so a test can tell which step a checkpoint
 * holds and check that every tensor is that step's (never a mix). */
#ifndef TF_TEST_CKPT_DIR_TESTLIB_H
#define TF_TEST_CKPT_DIR_TESTLIB_H

#include "lib/core/base/util.h"
#include "lib/core/serialize/ckpt_shard.h"
#include "lib/runtime/ckpt_dir.h"
#include "test/unit/core/serialize/ckpt_testlib.h"

#define CD_SHARDS 3
static const char *const cd_shard_files[CD_SHARDS] = {"ps-0.shard", "ps-1.shard",
                                                      "worker-0.shard"};

/* Shard k of step s: tensors "k/a" (float32 [5, 4]), "k/b" (int64 [3])
 * and "k/c" (string [2]), from a generator seeded by (s, k). */
static inline int cd_tensors(int64_t s, int k, tf_tensor **t, char names[3][16]) {
  tt_rng_reseed(0x5eed0000u + (uint64_t)s * 16 + (uint64_t)k);
  t[0] = ck_rand_tensor(TF_FLOAT32, tf_shape_of(2, 5, 4));
  t[1] = ck_rand_tensor(TF_INT64, tf_shape_of(1, 3));
  t[2] = ck_rand_tensor(TF_STRING, tf_shape_of(1, 2));
  for (int i = 0; i < 3; i++) snprintf(names[i], 16, "%d/%c", k, 'a' + i);
  return 3;
}

/* Writes shard k of step s into ckpt_path. */
static inline void cd_write_shard(const char *ckpt_path, int64_t s, int k) {
  tf_tensor *t[3];
  char names[3][16];
  cd_tensors(s, k, t, names);
  tf_ckpt_entry e[3];
  for (int i = 0; i < 3; i++) e[i] = (tf_ckpt_entry){names[i], NULL, t[i]};
  char path[IO_PATH_MAX];
  io_path(path, ckpt_path, cd_shard_files[k]);
  tf_status st;
  ck_assert_msg(tf_ckpt_shard_write(path, e, 3, &st) == TF_OK, "%s", st.msg);
  tt_free(t, 3);
}

/* The manifest fields of step s (shards named, sizes filled by commit). */
static inline tf_ckpt_manifest cd_manifest(int64_t s) {
  tf_ckpt_manifest m = {.job = tf__xstrdup("mnist"), .step = s,
                        .spec_hash = tf__xstrdup("0123456789abcdef"),
                        .mode = tf__xstrdup("sync"), .n_shards = CD_SHARDS};
  m.shards = calloc(CD_SHARDS, sizeof *m.shards);
  for (int k = 0; k < CD_SHARDS; k++) m.shards[k].file = tf__xstrdup(cd_shard_files[k]);
  return m;
}

/* A whole checkpoint of step s in dir (begin, shards, commit). */
static inline void cd_save(const char *dir, int64_t s, int keep) {
  char *ckpt;
  tf_status st;
  ck_assert_msg(tf_ckpt_begin(dir, s, &ckpt, &st) == TF_OK, "%s", st.msg);
  for (int k = 0; k < CD_SHARDS; k++) {
    cd_write_shard(ckpt, s, k);
    tf_ckpt_crash_point("between-shards", ckpt);
  }
  tf_ckpt_manifest m = cd_manifest(s);
  ck_assert_msg(tf_ckpt_commit(dir, &m, keep, &st) == TF_OK, "%s", st.msg);
  ck_assert_str_eq(m.path, ckpt);
  ck_assert_int_gt(m.time_ms, 0);
  tf_ckpt_manifest_fini(&m);
  free(ckpt);
}

/* Every tensor of the checkpoint m is exactly step m->step's. */
static inline void cd_expect_whole(const tf_ckpt_manifest *m) {
  ck_assert_int_eq(m->n_shards, CD_SHARDS);
  for (int k = 0; k < CD_SHARDS; k++) {
    ck_assert_str_eq(m->shards[k].file, cd_shard_files[k]);
    char path[IO_PATH_MAX];
    io_path(path, m->path, m->shards[k].file);
    tf_ckpt_shard *s;
    tf_status st;
    ck_assert_msg(tf_ckpt_shard_open(path, &s, &st) == TF_OK, "%s", st.msg);
    tf_tensor *want[3];
    char names[3][16];
    cd_tensors(m->step, k, want, names);
    for (int i = 0; i < 3; i++) {
      tf_tensor *got;
      ck_assert_msg(tf_ckpt_shard_read(s, names[i], NULL, -1, &got, &st) == TF_OK, "%s", st.msg);
      ck_assert_msg(tf_tensor_equal(got, want[i]), "%s of step %lld differs", names[i],
                    (long long)m->step);
      tf_tensor_unref(got);
    }
    tt_free(want, 3);
    tf_ckpt_shard_close(s);
  }
}

#endif
