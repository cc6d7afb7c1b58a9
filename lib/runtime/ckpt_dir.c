/* ckpt_dir.c: a job's checkpoint directory (ckpt_dir.h, docs/checkpoint.md).
 * The commit protocol: the tasks' shards are written atomically into
 * ckpt-<step>/, then the manifest (atomically: it is the checkpoint's
 * commit record), then the pointer file, then older checkpoints are
 * removed. A writer killed anywhere leaves the previous checkpoint whole
 * and named by the pointer, or the new one whole; readers take the newest
 * that verifies and say what they skipped. Only names of the form
 * ckpt-<digits> and the temporary files of atomic writes are ever removed. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/runtime/ckpt_dir.h"
#include "lib/core/serialize/ckpt_fs.h"
#include "lib/core/serialize/ckpt_shard.h"
#include "lib/core/base/fs_confine.h"
#include "lib/core/base/util.h"

#define POINTER_FILE "checkpoint"
#define MANIFEST_FILE "manifest"
#define MAX_TREE_DEPTH 8

char *tf_ckpt_shard_name(const char *job, int task) {
  return tf__xasprintf("%s-%d.shard", job, task);
}

static char *join(const char *a, const char *b) {
  return tf__xasprintf("%s/%s", a, b);
}

static bool is_dir(const char *path) {
  struct stat sb;
  return tf__fs_lstat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

/* access(path, F_OK) == 0, through the file-access policy. */
static bool exists(const char *path) {
  struct stat sb;
  return tf__fs_stat(path, &sb) == 0;
}

/* ---- directories ------------------------------------------------------------- */

/* mkdir -p dir (mode 0755). Under a file-access policy the ancestors
 * outside the allowed directories are left alone (they exist: the allowed
 * directories below them do). */
static tf_code make_dirs(const char *dir, tf_status *st) {
  char *p = tf__xstrdup(dir);
  tf_code c = TF_OK;
  for (char *s = strchr(p + 1, '/'); s != NULL && c == TF_OK; s = strchr(s + 1, '/')) {
    *s = '\0';
    tf_status ignored;
    if (tf__fs_check(p, true, NULL, &ignored) == TF_OK) {
      c = tf__mkdir_one(p, 0755, st);
    }
    *s = '/';
  }
  if (c == TF_OK) {
    c = tf__mkdir_one(p, 0755, st);
  }
  free(p);
  return c;
}

/* Removes path and everything under it (symlinks are removed, never
 * followed), calling the crash points of a removal at depth 0. */
static tf_code remove_tree(const char *path, int depth, tf_status *st) {
  DIR *d = tf__fs_opendir(path);
  if (d == NULL) {
    return errno == ENOENT ? TF_OK
                           : tf__ckpt_os_error(st, "cannot open directory", path, errno);
  }
  tf_code c = TF_OK;
  bool first = true;
  for (struct dirent *e; c == TF_OK && (e = readdir(d)) != NULL;) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) {
      continue;
    }
    char *child = join(path, e->d_name);
    if (is_dir(child) && depth < MAX_TREE_DEPTH) {
      c = remove_tree(child, depth + 1, st);
    } else if (tf__fs_unlink(child) != 0 && errno != ENOENT) {
      c = tf__ckpt_os_error(st, "cannot remove", child, errno);
    }
    if (c == TF_OK && depth == 0 && first) {
      tf_ckpt_crash_point("partly-removed", path);
      first = false;
    }
    free(child);
  }
  closedir(d);
  if (c == TF_OK && tf__fs_rmdir(path) != 0 && errno != ENOENT) {
    c = tf__ckpt_os_error(st, "cannot remove directory", path, errno);
  }
  return c;
}

static tf_code remove_checkpoint(const char *path, tf_status *st) {
  tf_ckpt_crash_point("removing", path);
  return remove_tree(path, 0, st);
}

/* ---- bounded reads ------------------------------------------------------------- */

/* The whole file at path if it has at most cap bytes; free(). NOT_FOUND
 * when absent, DATA_LOSS when larger. */
static tf_code read_small(const char *path, size_t cap, char **buf, size_t *len,
                          tf_status *st) {
  *buf = NULL;
  int fd = tf__fs_open(path, O_RDONLY, 0);
  if (fd < 0) {
    return tf__ckpt_os_error(st, "cannot open", path, errno);
  }
  struct stat sb;
  tf_code c = TF_OK;
  if (fstat(fd, &sb) != 0) {
    c = tf__ckpt_os_error(st, "cannot stat", path, errno);
  } else if (!S_ISREG(sb.st_mode) || (uint64_t)sb.st_size > cap) {
    c = tf_status_set(st, TF_DATA_LOSS, "%s: %s", path, S_ISREG(sb.st_mode)
                      ? "larger than such a file may be" : "not a regular file");
  } else {
    *len = (size_t)sb.st_size;
    *buf = tf__xmalloc(*len + 1);
    int r = tf__pread_full(fd, *buf, *len, 0);
    if (r != 0) {
      c = r < 0 ? tf__ckpt_os_error(st, "cannot read", path, errno)
                : tf_status_set(st, TF_DATA_LOSS, "%s: shrank while read", path);
    }
  }
  close(fd);
  if (c != TF_OK) {
    free(*buf);
    *buf = NULL;
  }
  return c;
}

/* The manifest of the checkpoint at ckpt_path (m->path set). */
static tf_code read_manifest(const char *ckpt_path, tf_ckpt_manifest *m,
                             tf_status *st) {
  *m = (tf_ckpt_manifest){0};
  char *path = join(ckpt_path, MANIFEST_FILE), *text;
  size_t len = 0;
  tf_code c = read_small(path, TF_CKPT_MANIFEST_MAX, &text, &len, st);
  if (c == TF_NOT_FOUND) {
    c = tf_status_set(st, TF_NOT_FOUND, "%s has no manifest (not a "
                      "checkpoint, or one whose writer stopped before its "
                      "commit)", ckpt_path);
  } else if (c == TF_OK) {
    c = tf_ckpt_manifest_parse(text, len, path, m, st);
    free(text);
  }
  free(path);
  if (c == TF_OK) {
    m->path = tf__xstrdup(ckpt_path);
  }
  return c;
}

static tf_code read_pointer(const char *dir, char ***names, int *n,
                            tf_status *st) {
  *names = NULL;
  *n = 0;
  char *path = join(dir, POINTER_FILE), *text;
  size_t len = 0;
  tf_code c = read_small(path, TF_CKPT_POINTER_MAX, &text, &len, st);
  if (c == TF_OK) {
    c = tf_ckpt_pointer_parse(text, len, path, names, n, st);
    free(text);
  }
  free(path);
  return c;
}

static void names_free(char **names, int n) {
  for (int i = 0; i < n; i++) {
    free(names[i]);
  }
  free(names);
}

static bool names_have(char *const *names, int n, const char *name) {
  for (int i = 0; i < n; i++) {
    if (strcmp(names[i], name) == 0) {
      return true;
    }
  }
  return false;
}

/* ---- scanning -------------------------------------------------------------------- */

/* A ckpt-<step> directory found in dir. */
typedef struct found {
  char *name;
  int64_t step, time_ms;
  bool readable; /* its manifest read and parsed */
} found;

static void found_free(found *f, int n) {
  for (int i = 0; i < n; i++) {
    free(f[i].name);
  }
  free(f);
}

/* Oldest first: readable ones by (time, step), after the unreadable ones
 * by step. */
static int found_cmp(const void *pa, const void *pb) {
  const found *a = pa, *b = pb;
  if (a->readable != b->readable) {
    return a->readable ? 1 : -1;
  }
  if (a->readable && a->time_ms != b->time_ms) {
    return a->time_ms < b->time_ms ? -1 : 1;
  }
  return a->step < b->step ? -1 : a->step > b->step;
}

/* The ckpt-<step> directories of dir, sorted by found_cmp; with
 * manifests_only, those without a manifest file are left out. */
static tf_code scan(const char *dir, bool manifests_only, found **out, int *n,
                    tf_status *st) {
  *out = NULL;
  *n = 0;
  DIR *d = tf__fs_opendir(dir);
  if (d == NULL) {
    return tf__ckpt_os_error(st, "cannot open checkpoint directory", dir, errno);
  }
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    int64_t step;
    char *path = join(dir, e->d_name), *mpath = join(path, MANIFEST_FILE);
    if (tf_ckpt_dir_name_step(e->d_name, &step) && is_dir(path) &&
        (!manifests_only || exists(mpath))) {
      tf_ckpt_manifest m;
      found f = {tf__xstrdup(e->d_name), step, 0,
                 read_manifest(path, &m, NULL) == TF_OK};
      f.time_ms = m.time_ms;
      tf_ckpt_manifest_fini(&m);
      *out = tf__xrealloc(*out, (size_t)(*n + 1) * sizeof **out);
      (*out)[(*n)++] = f;
    }
    free(mpath);
    free(path);
  }
  closedir(d);
  if (*n > 1) {
    qsort(*out, (size_t)*n, sizeof **out, found_cmp);
  }
  return TF_OK;
}

/* The checkpoint names of dir, oldest first: the pointer's, else (no or
 * a damaged pointer, *damaged then gets why, free()) the directories with
 * a readable manifest. */
static tf_code known_names(const char *dir, char ***names, int *n,
                           char **damaged, tf_status *st) {
  tf_status pst;
  tf_code c = read_pointer(dir, names, n, &pst);
  if (c == TF_OK) {
    return TF_OK;
  }
  if (damaged != NULL && c != TF_NOT_FOUND) {
    *damaged = tf__xstrdup(pst.msg);
  }
  found *f;
  int nf;
  TF_TRY(scan(dir, true, &f, &nf, st));
  for (int i = 0; i < nf; i++) {
    if (f[i].readable) {
      *names = tf__xrealloc(*names, (size_t)(*n + 1) * sizeof **names);
      (*names)[(*n)++] = tf__xstrdup(f[i].name);
    }
  }
  found_free(f, nf);
  return TF_OK;
}

/* ---- verifying -------------------------------------------------------------------- */

/* Checks shard r of the checkpoint at ckpt_path: its tensors' CRCs, then
 * its size and CRC32C against the manifest. */
static tf_code verify_shard(const char *ckpt_path, const tf_ckpt_shard_ref *r,
                            tf_status *st) {
  char *path = join(ckpt_path, r->file);
  tf_ckpt_shard *s;
  tf_code c = tf_ckpt_shard_open(path, &s, st);
  int64_t bytes = 0;
  uint32_t crc = 0;
  if (c == TF_NOT_FOUND) {
    c = tf_status_set(st, TF_DATA_LOSS, "%s is missing (the manifest lists "
                      "it)", path);
  } else if (c == TF_OK) {
    c = tf_ckpt_shard_verify_file(s, &bytes, &crc, st);
    tf_ckpt_shard_close(s);
  }
  if (c == TF_OK && (bytes != r->bytes || crc != r->crc32c)) {
    c = tf_status_set(st, TF_DATA_LOSS, "%s: %lld bytes with CRC32C 0x%08x, "
                      "but the manifest records %lld bytes with 0x%08x", path,
                      (long long)bytes, crc, (long long)r->bytes, r->crc32c);
  }
  free(path);
  return c;
}

tf_code tf_ckpt_verify(const char *ckpt_path, tf_ckpt_manifest *out,
                       tf_status *st) {
  tf_ckpt_manifest m;
  if (out != NULL) {
    *out = (tf_ckpt_manifest){0};
  }
  TF_TRY(read_manifest(ckpt_path, &m, st));
  tf_code c = TF_OK;
  for (int i = 0; i < m.n_shards && c == TF_OK; i++) {
    c = verify_shard(ckpt_path, &m.shards[i], st);
  }
  if (c != TF_OK || out == NULL) {
    tf_ckpt_manifest_fini(&m);
  } else {
    *out = m;
  }
  return c;
}

/* ---- writing -------------------------------------------------------------------- */

/* Removes the temporary files of atomic writes and the ckpt-<step>
 * directories without a manifest file that crashed writers left in dir. */
static tf_code remove_garbage(const char *dir, tf_status *st) {
  DIR *d = tf__fs_opendir(dir);
  if (d == NULL) {
    return tf__ckpt_os_error(st, "cannot open checkpoint directory", dir, errno);
  }
  tf_code c = TF_OK;
  for (struct dirent *e; c == TF_OK && (e = readdir(d)) != NULL;) {
    char *path = join(dir, e->d_name), *mpath = join(path, MANIFEST_FILE);
    struct stat sb;
    if (tf__afile_is_temp_name(e->d_name) && tf__fs_lstat(path, &sb) == 0 &&
        S_ISREG(sb.st_mode)) {
      if (tf__fs_unlink(path) != 0 && errno != ENOENT) {
        c = tf__ckpt_os_error(st, "cannot remove", path, errno);
      }
    } else if (tf_ckpt_dir_name_step(e->d_name, NULL) && is_dir(path) &&
               !exists(mpath)) {
      c = remove_checkpoint(path, st);
    }
    free(mpath);
    free(path);
  }
  closedir(d);
  return c;
}

tf_code tf_ckpt_begin(const char *dir, int64_t step, char **ckpt_path,
                      tf_status *st) {
  *ckpt_path = NULL;
  if (dir == NULL || dir[0] == '\0' || step < 0) {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "checkpoint: %s",
                         step < 0 ? "negative step" : "empty directory name");
  }
  TF_TRY(make_dirs(dir, st));
  TF_TRY(remove_garbage(dir, st));
  char *name = tf__xasprintf("ckpt-%lld", (long long)step);
  char *path = join(dir, name);
  free(name);
  tf_code c = TF_OK;
  if (is_dir(path)) {
    if (tf_ckpt_verify(path, NULL, NULL) == TF_OK) {
      c = tf_status_set(st, TF_ALREADY_EXISTS, "checkpoint %s already exists "
                        "and verifies", path);
    } else {
      c = remove_checkpoint(path, st);
    }
  }
  if (c == TF_OK && tf__fs_mkdir(path, 0755) != 0) {
    c = tf__ckpt_os_error(st, "cannot make directory", path, errno);
  }
  if (c == TF_OK) {
    c = tf__fsync_dir(dir, st);
  }
  if (c != TF_OK) {
    free(path);
    return c;
  }
  *ckpt_path = path;
  return TF_OK;
}

/* Fills m's shard sizes and CRCs from their files (checking every tensor). */
static tf_code measure_shards(const char *ckpt_path, tf_ckpt_manifest *m,
                              tf_status *st) {
  for (int i = 0; i < m->n_shards; i++) {
    char *path = join(ckpt_path, m->shards[i].file);
    tf_ckpt_shard *s;
    tf_code c = tf_ckpt_shard_open(path, &s, st);
    if (c == TF_OK) {
      c = tf_ckpt_shard_verify_file(s, &m->shards[i].bytes,
                                    &m->shards[i].crc32c, st);
      tf_ckpt_shard_close(s);
    }
    free(path);
    if (c != TF_OK) {
      if (st != NULL) {
        tf_status_prefix(st, "cannot commit %s", ckpt_path);
        st->code = TF_DATA_LOSS;
      }
      return TF_DATA_LOSS;
    }
  }
  return TF_OK;
}

/* The pointer's names after adding name as the latest and keeping the
 * newest keep (keep <= 0: all); writes the pointer file. */
static tf_code update_pointer(const char *dir, const char *name, int keep,
                              char ***kept, int *n_kept, tf_status *st) {
  char **old;
  int n_old;
  TF_TRY(known_names(dir, &old, &n_old, NULL, st));
  char **names = tf__xcalloc((size_t)n_old + 1, sizeof *names);
  int n = 0;
  for (int i = 0; i < n_old; i++) {
    if (strcmp(old[i], name) != 0) {
      names[n++] = old[i];
    } else {
      free(old[i]);
    }
  }
  free(old);
  names[n++] = tf__xstrdup(name);
  int drop = keep > 0 && n > keep ? n - keep : 0;
  for (int i = 0; i < drop; i++) {
    free(names[i]);
  }
  memmove(names, names + drop, (size_t)(n - drop) * sizeof *names);
  n -= drop;
  char *text = tf_ckpt_pointer_format(names, n), *path = join(dir, POINTER_FILE);
  tf_code c = tf_fs_write_atomic(path, text, strlen(text), st);
  free(path);
  free(text);
  if (c != TF_OK) {
    names_free(names, n);
    return c;
  }
  *kept = names;
  *n_kept = n;
  return TF_OK;
}

/* Removes the ckpt-<step> directories of dir that kept does not name; a
 * failure leaves the directory for the next commit. */
static void remove_unkept(const char *dir, char *const *kept, int n_kept) {
  found *f;
  int nf;
  if (scan(dir, false, &f, &nf, NULL) != TF_OK) {
    return;
  }
  for (int i = 0; i < nf; i++) {
    if (!names_have(kept, n_kept, f[i].name)) {
      char *path = join(dir, f[i].name);
      remove_checkpoint(path, NULL);
      free(path);
    }
  }
  found_free(f, nf);
}

tf_code tf_ckpt_commit(const char *dir, tf_ckpt_manifest *m, int keep,
                       tf_status *st) {
  char *text;
  size_t len;
  TF_TRY(tf_ckpt_manifest_format(m, &text, &len, st)); /* checks the fields */
  free(text);
  char *name = tf__xasprintf("ckpt-%lld", (long long)m->step);
  char *path = join(dir, name);
  tf_code c = TF_OK;
  if (!is_dir(path)) {
    c = tf_status_set(st, TF_FAILED_PRECONDITION, "cannot commit %s: no such "
                      "directory (tf_ckpt_begin makes it)", path);
  }
  if (c == TF_OK && (c = measure_shards(path, m, st)) == TF_OK) {
    if (m->time_ms == 0) {
      struct timespec ts;
      clock_gettime(CLOCK_REALTIME, &ts);
      m->time_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    }
    TF_ASSERT(tf_ckpt_manifest_format(m, &text, &len, NULL) == TF_OK);
    char *mpath = join(path, MANIFEST_FILE);
    c = tf_fs_write_atomic(mpath, text, len, st);
    free(mpath);
    free(text);
  }
  char **kept = NULL;
  int n_kept = 0;
  if (c == TF_OK && (c = update_pointer(dir, name, keep, &kept, &n_kept, st)) == TF_OK &&
      keep > 0) {
    remove_unkept(dir, kept, n_kept);
  }
  names_free(kept, n_kept);
  free(name);
  if (c == TF_OK) {
    free(m->path);
    m->path = path;
  } else {
    free(path);
  }
  return c;
}

tf_code tf_ckpt_truncate(const char *dir, int64_t step, int *removed,
                         tf_status *st) {
  *removed = 0;
  found *f;
  int nf;
  TF_TRY(scan(dir, false, &f, &nf, st));
  for (int i = 0; i < nf; i++) { /* the directories first: see the header */
    if (f[i].step > step) {
      char *path = join(dir, f[i].name);
      if (remove_checkpoint(path, NULL) == TF_OK) {
        (*removed)++;
      }
      free(path);
    }
  }
  found_free(f, nf);
  char **names;
  int n;
  TF_TRY(known_names(dir, &names, &n, NULL, st));
  int k = 0;
  for (int i = 0; i < n; i++) {
    int64_t s = 0;
    if (tf_ckpt_dir_name_step(names[i], &s) && s <= step) {
      names[k++] = names[i];
    } else {
      free(names[i]);
    }
  }
  char *text = tf_ckpt_pointer_format(names, k), *path = join(dir, POINTER_FILE);
  tf_code c = k > 0 ? tf_fs_write_atomic(path, text, strlen(text), st) : TF_OK;
  if (k == 0 && tf__fs_unlink(path) != 0 && errno != ENOENT) {
    c = tf__ckpt_os_error(st, "cannot remove", path, errno);
  }
  free(path);
  free(text);
  names_free(names, k);
  return c;
}

/* ---- reading -------------------------------------------------------------------- */

tf_code tf_ckpt_list(const char *dir, tf_ckpt_manifest **out, int *n,
                     tf_status *st) {
  *out = NULL;
  *n = 0;
  if (!is_dir(dir)) {
    return tf_status_set(st, TF_NOT_FOUND, "no checkpoint directory %s", dir);
  }
  char **names;
  int nn;
  TF_TRY(known_names(dir, &names, &nn, NULL, st));
  *out = tf__xcalloc((size_t)nn + 1, sizeof **out);
  for (int i = 0; i < nn; i++) {
    char *path = join(dir, names[i]);
    if (read_manifest(path, &(*out)[*n], NULL) == TF_OK) {
      (*n)++;
    }
    free(path);
  }
  names_free(names, nn);
  return TF_OK;
}

void tf_ckpt_list_free(tf_ckpt_manifest *ms, int n) {
  for (int i = 0; i < n && ms != NULL; i++) {
    tf_ckpt_manifest_fini(&ms[i]);
  }
  free(ms);
}

int64_t tf_ckpt_bytes(const tf_ckpt_manifest *m) {
  int64_t total = 0;
  for (int i = 0; i < m->n_shards; i++) {
    total += m->shards[i].bytes;
  }
  if (m->path != NULL) {
    char *mpath = join(m->path, MANIFEST_FILE);
    struct stat sb;
    if (tf__fs_stat(mpath, &sb) == 0) {
      total += (int64_t)sb.st_size;
    }
    free(mpath);
  }
  return total;
}

/* tf_ckpt_latest's candidates, newest first: the pointer's names, then
 * the other directories with a manifest file. */
static tf_code candidates(const char *dir, char ***out, int *n, char **damaged,
                          tf_status *st) {
  char **ptr = NULL;
  int np = 0;
  tf_status pst;
  tf_code c = read_pointer(dir, &ptr, &np, &pst);
  if (c != TF_OK && c != TF_NOT_FOUND) {
    *damaged = tf__xstrdup(pst.msg);
  }
  found *f;
  int nf;
  if ((c = scan(dir, true, &f, &nf, st)) != TF_OK) {
    names_free(ptr, np);
    return c;
  }
  *out = tf__xcalloc((size_t)(np + nf) + 1, sizeof **out);
  *n = 0;
  for (int i = np - 1; i >= 0; i--) {
    (*out)[(*n)++] = ptr[i];
  }
  for (int i = nf - 1; i >= 0; i--) {
    if (!names_have(ptr, np, f[i].name)) {
      (*out)[(*n)++] = tf__xstrdup(f[i].name);
    }
  }
  free(ptr); /* its strings moved to *out */
  found_free(f, nf);
  return TF_OK;
}

/* Appends "; "-separated text to *acc. */
static void note_add(char **acc, const char *text) {
  char *s = tf__xasprintf("%s%s%s", *acc ? *acc : "", *acc ? "; " : "", text);
  free(*acc);
  *acc = s;
}

tf_code tf_ckpt_latest(const char *dir, tf_ckpt_manifest *out, char **note,
                       tf_status *st) {
  *out = (tf_ckpt_manifest){0};
  if (note != NULL) {
    *note = NULL;
  }
  if (!is_dir(dir)) {
    return tf_status_set(st, TF_NOT_FOUND, "no checkpoint directory %s", dir);
  }
  char **cand = NULL, *damaged = NULL, *acc = NULL, *first_err = NULL;
  int n = 0;
  TF_TRY(candidates(dir, &cand, &n, &damaged, st));
  if (damaged != NULL) {
    char *t = tf__xasprintf("the pointer file is damaged (%s), so every "
                            "ckpt-<step> directory was considered", damaged);
    note_add(&acc, t);
    free(t);
  }
  tf_code c = TF_NOT_FOUND;
  for (int i = 0; i < n && c != TF_OK; i++) {
    char *path = join(dir, cand[i]);
    tf_status vst;
    c = tf_ckpt_verify(path, out, &vst);
    if (c != TF_OK) {
      char *t = tf__xasprintf("skipped %s (%s: %s)", cand[i], tf_code_name(c), vst.msg);
      note_add(&acc, t);
      free(t);
      if (first_err == NULL) {
        first_err = tf__xasprintf("%s: %s", cand[i], vst.msg);
      }
    }
    free(path);
  }
  if (n == 0) {
    tf_status_set(st, TF_NOT_FOUND, "no checkpoint in %s", dir);
  } else if (c != TF_OK) {
    c = tf_status_set(st, TF_DATA_LOSS, "no checkpoint of %s verifies; the "
                      "latest, %s", dir, first_err);
  }
  names_free(cand, n);
  free(damaged);
  free(first_err);
  if (note != NULL) {
    *note = acc;
  } else {
    free(acc);
  }
  return c;
}
