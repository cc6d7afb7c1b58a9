/* ckpt_crash_test.c: crash consistency of the checkpoint directory, the
 * property the commit protocol exists for. A directory holds good
 * checkpoints of steps 0 and 1 (keep 2). A complete write of step 2 (three
 * shards, a point of the writer's own between them, the manifest, the
 * pointer, the removal of ckpt-0) calls the crash hook K times; for every
 * k in 0..K a forked child writes step 2 and SIGKILLs itself at the k-th
 * call. After each: tf_ckpt_latest returns step 1 (killed before the
 * pointer's rename) or step 2 (after it), every tensor exactly that
 * step's, never an error or a mix; then step 3 is saved normally, is the
 * latest, and the directory holds exactly the pointer and two checkpoints
 * (no temporary file, no half-written directory). */
#include <signal.h>
#include <sys/wait.h>
#include <dirent.h>
#include <unistd.h>

#include "test/unit/runtime/ckpt_dir_testlib.h"

#define KEEP 2
#define MAX_POINTS 64

typedef struct hook_state {
  int calls, kill_at;
  char points[MAX_POINTS][96]; /* "point path-tail" of each call */
} hook_state;

static void hook(const char *point, const char *path, void *arg) {
  hook_state *h = arg;
  if (h->calls == h->kill_at) {
    raise(SIGKILL);
  }
  const char *tail = strrchr(path, '/');
  if (h->calls < MAX_POINTS) {
    snprintf(h->points[h->calls], sizeof h->points[0], "%s %s", point, tail ? tail + 1 : path);
  }
  h->calls++;
}

static void setup(char *dir, size_t n) {
  io_tmpdir(dir, n);
  cd_save(dir, 0, KEEP);
  cd_save(dir, 1, KEEP);
}

/* Sorted names in dir (hidden ones included), space-separated. */
static const char *listing(const char *dir, char *buf, size_t n) {
  struct dirent **ents;
  int k = scandir(dir, &ents, NULL, alphasort);
  ck_assert(k >= 0);
  size_t off = 0;
  buf[0] = '\0';
  for (int i = 0; i < k; i++) {
    if (strcmp(ents[i]->d_name, ".") != 0 && strcmp(ents[i]->d_name, "..") != 0) {
      off += (size_t)snprintf(buf + off, n - off, "%s%s", off ? " " : "", ents[i]->d_name);
    }
    free(ents[i]);
  }
  free(ents);
  return buf;
}

/* Counts and names the hook calls of a complete write of step 2. */
static int count_points(hook_state *h) {
  char dir[IO_PATH_MAX];
  setup(dir, sizeof dir);
  *h = (hook_state){.kill_at = -1};
  tf_ckpt_set_crash_hook(hook, h);
  cd_save(dir, 2, KEEP);
  tf_ckpt_set_crash_hook(NULL, NULL);
  io_tmpdir_remove(dir);
  return h->calls;
}

START_TEST(test_kill_at_every_point) {
  hook_state all;
  int K = count_points(&all);
  /* 3 shards and the manifest and pointer: 4 points each; 3 of the
   * writer's own; removing ckpt-0: 2. */
  ck_assert_int_eq(K, 5 * 4 + 3 + 2);
  int pointer_renamed = -1;
  for (int i = 0; i < K; i++) {
    if (strcmp(all.points[i], "renamed checkpoint") == 0) pointer_renamed = i;
  }
  ck_assert_int_ge(pointer_renamed, 0);
  ck_assert_str_eq(all.points[K - 1], "partly-removed ckpt-0");
  for (int k = 0; k <= K; k++) {
    char dir[IO_PATH_MAX], buf[1024];
    setup(dir, sizeof dir);
    pid_t pid = fork();
    ck_assert(pid >= 0);
    if (pid == 0) {
      hook_state h = {.kill_at = k};
      tf_ckpt_set_crash_hook(hook, &h);
      cd_save(dir, 2, KEEP);
      _exit(0);
    }
    int status;
    ck_assert(waitpid(pid, &status, 0) == pid);
    bool killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
    ck_assert_msg(killed == (k < K), "k=%d (%s): status 0x%x", k,
                  k < K ? all.points[k] : "none", status);
    ck_assert(killed || (WIFEXITED(status) && WEXITSTATUS(status) == 0));
    tf_ckpt_manifest m;
    char *note = NULL;
    tf_status st;
    ck_assert_msg(tf_ckpt_latest(dir, &m, &note, &st) == TF_OK, "k=%d (%s): %s", k,
                  all.points[k < K ? k : 0], st.msg);
    int64_t want = k >= pointer_renamed ? 2 : 1; /* the hook runs after the rename */
    ck_assert_msg(m.step == want, "killed at %d (%s): latest is step %lld, want %lld", k,
                  k < K ? all.points[k] : "none", (long long)m.step, (long long)want);
    cd_expect_whole(&m);
    tf_ckpt_manifest_fini(&m);
    free(note);
    cd_save(dir, 3, KEEP);
    ck_assert(tf_ckpt_latest(dir, &m, NULL, &st) == TF_OK);
    ck_assert_int_eq(m.step, 3);
    cd_expect_whole(&m);
    tf_ckpt_manifest_fini(&m);
    ck_assert_str_eq(listing(dir, buf, sizeof buf),
                     want == 2 ? "checkpoint ckpt-2 ckpt-3" : "checkpoint ckpt-1 ckpt-3");
    io_tmpdir_remove(dir);
  }
}
END_TEST

Suite *tt_suite(void) {
  Suite *s = suite_create("ckpt_crash");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_kill_at_every_point);
  suite_add_tcase(s, tc);
  return s;
}
