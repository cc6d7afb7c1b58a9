/* ctl_inspect_test.c: `tfctl inspect` (cmd/tfctl/ctl_inspect.c) on a
 * checkpoint of two shards, one variable split between them: the listing
 * of a ckpt-<step> directory (manifest facts, one exact table line per
 * tensor), of a job's directory (its latest, named), of one shard file;
 * --export writes the split variable whole, which numpy (np.load) and the
 * project's .npy reader both read back equal to the values saved (numpy's
 * side compares with the raw bytes, independent of our .npy writer);
 * exporting a missing, a string or an uncovered variable fails naming it;
 * damage fails with DATA_LOSS naming the file and tensor, and the job
 * directory then falls back to the previous checkpoint with a note. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/tfctl/ctl_inspect.h"
#include "lib/core/base/util.h"
#include "test/unit/core/serialize/ckpt_testlib.h"
#include "lib/core/serialize/ckpt_shard.h"
#include "lib/runtime/ckpt_dir.h"
#include "tf/serialize.h"

typedef struct fixture {
  char dir[IO_PATH_MAX], jobdir[IO_PATH_MAX], ckpt[IO_PATH_MAX];
  tf_tensor *emb, *w, *names;
} fixture;

static void write_shard(const char *ckpt, const char *file, const tf_ckpt_entry *e, int n) {
  char path[IO_PATH_MAX];
  tf_status st;
  ck_assert_msg(tf_ckpt_shard_write(io_path(path, ckpt, file), e, n, &st) == TF_OK, "%s", st.msg);
}

/* Checkpoint step of jobdir: ps-0 holds w, names and emb rows 0..3;
 * ps-1 emb rows 4..6 and step. */
static void save(fixture *f, int64_t step) {
  char *ck;
  tf_status st;
  ck_assert(tf_ckpt_begin(f->jobdir, step, &ck, &st) == TF_OK);
  tf_tensor *top = ck_slice_ref(f->emb, (int64_t[]){0, 0}, (int64_t[]){4, 5});
  tf_tensor *bottom = ck_slice_ref(f->emb, (int64_t[]){4, 0}, (int64_t[]){3, 5});
  tf_tensor *s = tf_tensor_scalar_i64(step);
  write_shard(ck, "ps-0.shard", (tf_ckpt_entry[]){{"w", NULL, f->w}, {"names", NULL, f->names},
                                                 {"emb", "7 5 0,4:-", top}}, 3);
  write_shard(ck, "ps-1.shard", (tf_ckpt_entry[]){{"emb", "7 5 4,3:-", bottom},
                                                 {"global_step", NULL, s}}, 2);
  tf_ckpt_manifest m = {.job = tf__xstrdup("fmnist"), .step = step, .time_ms = 1700000000250,
                        .spec_hash = tf__xstrdup("beef"), .mode = tf__xstrdup("sync"),
                        .n_shards = 2};
  m.shards = calloc(2, sizeof *m.shards);
  m.shards[0].file = tf__xstrdup("ps-0.shard");
  m.shards[1].file = tf__xstrdup("ps-1.shard");
  ck_assert_msg(tf_ckpt_commit(f->jobdir, &m, 5, &st) == TF_OK, "%s", st.msg);
  snprintf(f->ckpt, sizeof f->ckpt, "%s", ck);
  tf_ckpt_manifest_fini(&m);
  tt_free((tf_tensor *[]){top, bottom, s}, 3);
  free(ck);
}

static void setup(fixture *f) {
  tt_rng_reseed(tt_seed() ^ 0x1a5);
  io_tmpdir(f->dir, sizeof f->dir);
  io_path(f->jobdir, f->dir, "job");
  f->emb = ck_rand_tensor(TF_FLOAT64, tf_shape_of(2, 7, 5));
  f->w = ck_rand_tensor(TF_FLOAT32, tf_shape_of(2, 2, 3));
  f->names = ck_rand_tensor(TF_STRING, tf_shape_of(1, 2));
  save(f, 10);
  save(f, 20);
}

static void teardown(fixture *f) {
  tt_free((tf_tensor *[]){f->emb, f->w, f->names}, 3);
  io_tmpdir_remove(f->dir);
}

/* Runs inspect; *out and *err get what it printed (free()). */
static tf_code inspect(const char *path, const char *name, const char *file, char **out,
                       char **err, tf_status *st) {
  size_t no, ne;
  FILE *fo = open_memstream(out, &no), *fe = open_memstream(err, &ne);
  tf_ctl_inspect_opts o = {path, name, file, fo, fe};
  tf_code c = tf_ctl_inspect(&o, st);
  fclose(fo);
  fclose(fe);
  return c;
}

static void has(const char *text, const char *line) {
  ck_assert_msg(strstr(text, line) != NULL, "missing '%s' in:\n%s", line, text);
}

START_TEST(test_listing) {
  fixture f;
  setup(&f);
  char *out, *err;
  tf_status st;
  ck_assert_msg(inspect(f.ckpt, NULL, NULL, &out, &err, &st) == TF_OK, "%s", st.msg);
  char line[4096];
  snprintf(line, sizeof line, "checkpoint: %s\njob: fmnist\nstep: 20\n"
                              "time: 2023-11-14T22:13:20.250Z\nmode: sync\nspec_hash: beef\n"
                              "shards: 2, ", f.ckpt);
  ck_assert_msg(strncmp(out, line, strlen(line)) == 0, "%s", out);
  has(out, "\nshard ps-0.shard: 3 tensors, ");
  has(out, "\n  NAME   DTYPE     SHAPE        BYTES  SLICE\n");
  has(out, "\n  w      float32   [2,3]           24\n");
  has(out, "\n  emb    float64   [4,5]          160  7 5 0,4:-\n");
  has(out, "\nshard ps-1.shard: 2 tensors, ");
  has(out, "\n  emb          float64   [3,5]          120  7 5 4,3:-\n");
  has(out, "\n  global_step  int64     []               8\n");
  ck_assert_str_eq(err, "");
  free(out);
  free(err);
  /* The job's directory: its latest, named. */
  ck_assert(inspect(f.jobdir, NULL, NULL, &out, &err, &st) == TF_OK);
  snprintf(line, sizeof line, "latest checkpoint of %s: %s\ncheckpoint: %s\n", f.jobdir, f.ckpt,
           f.ckpt);
  ck_assert_msg(strncmp(out, line, strlen(line)) == 0, "%s", out);
  free(out);
  free(err);
  /* One shard file. */
  char path[IO_PATH_MAX];
  io_path(path, f.ckpt, "ps-1.shard");
  ck_assert(inspect(path, NULL, NULL, &out, &err, &st) == TF_OK);
  ck_assert_ptr_null(strstr(out, "job:"));
  snprintf(line, sizeof line, "\nshard %s: 2 tensors, ", path);
  has(out, line);
  has(out, "  global_step  int64     []               8\n");
  free(out);
  free(err);
  teardown(&f);
}
END_TEST

START_TEST(test_export) {
  fixture f;
  setup(&f);
  char *out, *err, npy[IO_PATH_MAX], raw[IO_PATH_MAX];
  tf_status st;
  io_path(npy, f.dir, "emb.npy");
  ck_assert_msg(inspect(f.jobdir, "emb", npy, &out, &err, &st) == TF_OK, "%s", st.msg);
  char line[IO_PATH_MAX + 64];
  snprintf(line, sizeof line, "\nexported emb (float64 [7,5]) to %s\n", npy);
  has(out, line);
  free(out);
  free(err);
  tf_tensor *back;
  ck_assert(tf_tensor_load_npy(npy, &back, &st) == TF_OK);
  ck_assert(tf_tensor_equal(back, f.emb));
  tf_tensor_unref(back);
  io_write(io_path(raw, f.dir, "emb.bin"), f.emb->data, f.emb->nbytes);
  if (access("/usr/bin/python3", X_OK) == 0 &&
      system("/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1") == 0) {
    char cmd[3 * IO_PATH_MAX];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 -c \"import numpy as np, sys; "
                              "a = np.load('%s'); b = np.fromfile('%s', '<f8').reshape(7, 5); "
                              "sys.exit(0 if a.dtype == np.float64 and a.shape == (7, 5) and "
                              "np.array_equal(a, b, equal_nan=True) else 1)\"", npy, raw);
    ck_assert_msg(system(cmd) == 0, "numpy read something else from %s", npy);
  } else {
    fprintf(stderr, "ctl_inspect_test: numpy not available, its check skipped\n");
  }
  ck_assert_int_eq(inspect(f.ckpt, "nope", npy, &out, &err, &st), TF_NOT_FOUND);
  ck_assert(strstr(st.msg, "'nope'") && strstr(st.msg, "ckpt-20"));
  free(out);
  free(err);
  ck_assert_int_eq(inspect(f.ckpt, "names", npy, &out, &err, &st), TF_INVALID_ARGUMENT);
  ck_assert(strstr(st.msg, "'names'") && strstr(st.msg, "string"));
  free(out);
  free(err);
  /* One shard alone holds only rows 0..3 of emb. */
  char path[IO_PATH_MAX];
  ck_assert_int_eq(inspect(io_path(path, f.ckpt, "ps-0.shard"), "emb", npy, &out, &err, &st),
                   TF_DATA_LOSS);
  ck_assert(strstr(st.msg, "'emb'") && strstr(st.msg, "do not cover"));
  free(out);
  free(err);
  teardown(&f);
}
END_TEST

START_TEST(test_damage) {
  fixture f;
  setup(&f);
  char path[IO_PATH_MAX];
  io_path(path, f.ckpt, "ps-1.shard");
  size_t n;
  uint8_t *b = io_read(path, &n);
  b[16 + 7] ^= 0x40; /* in emb's rows 4..6 */
  io_write(path, b, n);
  free(b);
  char *out, *err;
  tf_status st;
  ck_assert_int_eq(inspect(f.ckpt, NULL, NULL, &out, &err, &st), TF_DATA_LOSS);
  ck_assert_msg(strstr(st.msg, "ps-1.shard") && strstr(st.msg, "'emb'"), "%s", st.msg);
  free(out);
  free(err);
  ck_assert_int_eq(inspect(path, NULL, NULL, &out, &err, &st), TF_DATA_LOSS);
  free(out);
  free(err);
  ck_assert(inspect(f.jobdir, NULL, NULL, &out, &err, &st) == TF_OK);
  has(out, "step: 10\n");
  has(err, "tfctl: note: skipped ckpt-20 (DATA_LOSS");
  free(out);
  free(err);
  ck_assert_int_eq(inspect("/nonexistent/x", NULL, NULL, &out, &err, &st), TF_NOT_FOUND);
  free(out);
  free(err);
  teardown(&f);
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("ctl_inspect");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_listing);
  tcase_add_test(tc, test_export);
  tcase_add_test(tc, test_damage);
  suite_add_tcase(s, tc);
  return s;
}
