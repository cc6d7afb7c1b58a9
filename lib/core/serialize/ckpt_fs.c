/* ckpt_fs.c: atomic file replacement for checkpoints (ckpt_fs.h): write a
 * temporary file beside the target, fsync it, rename it over the target,
 * fsync the directory. A reader, or a process that comes after a crash,
 * sees the old file or the new one, never a part: rename is atomic, and
 * the fsyncs order the data before the name on disk. The crash hook lets
 * tests kill the writer between these steps. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/core/serialize/ckpt_fs.h"
#include "lib/core/base/fs_confine.h"
#include "lib/core/serialize/ckpt_shard.h"
#include "lib/core/base/util.h"

/* ---- crash points (tests only) ---------------------------------------------- */

/* Set once by a test before it writes (and inherited by a forked child);
 * NULL in every program. */
static void (*crash_hook)(const char *point, const char *path, void *arg);
static void *crash_arg;

void tf_ckpt_set_crash_hook(void (*hook)(const char *point, const char *path,
                                         void *arg),
                            void *arg) {
  crash_hook = hook;
  crash_arg = arg;
}

void tf_ckpt_crash_point(const char *point, const char *path) {
  if (crash_hook != NULL) {
    crash_hook(point, path, crash_arg);
  }
}

/* ---- errors -------------------------------------------------------------------- */

tf_code tf__ckpt_os_error(tf_status *st, const char *what, const char *path,
                          int err) {
  if (err == EACCES && tf__fs_take_denial(st)) {
    return st->code; /* the cluster's file-access policy said no */
  }
  tf_code c = TF_UNKNOWN;
  if (err == ENOENT || err == ENOTDIR) {
    c = TF_NOT_FOUND;
  } else if (err == EACCES || err == EPERM || err == EROFS) {
    c = TF_PERMISSION_DENIED;
  } else if (err == ENOMEM || err == ENOSPC || err == EDQUOT || err == EFBIG) {
    c = TF_RESOURCE_EXHAUSTED;
  } else if (err == EISDIR || err == EEXIST) {
    c = TF_FAILED_PRECONDITION;
  }
  return tf_status_set(st, c, "%s '%s': %s", what, path, strerror(err));
}

/* ---- low-level I/O ------------------------------------------------------------- */

static int write_full(int fd, const void *p, size_t n) {
  const char *c = p;
  while (n > 0) {
    ssize_t w = write(fd, c, n);
    if (w < 0 && errno == EINTR) {
      continue;
    }
    if (w <= 0) {
      if (w == 0) {
        errno = EIO;
      }
      return -1;
    }
    c += w;
    n -= (size_t)w;
  }
  return 0;
}

int tf__pread_full(int fd, void *buf, size_t n, uint64_t off) {
  char *c = buf;
  while (n > 0) {
    ssize_t r = pread(fd, c, n, (off_t)off);
    if (r < 0 && errno == EINTR) {
      continue;
    }
    if (r < 0) {
      return -1;
    }
    if (r == 0) {
      return 1;
    }
    c += r;
    n -= (size_t)r;
    off += (uint64_t)r;
  }
  return 0;
}

/* ---- directories ------------------------------------------------------------- */

tf_code tf__fsync_dir(const char *dir, tf_status *st) {
  int fd = tf__fs_open(dir, O_RDONLY | O_DIRECTORY, 0);
  if (fd < 0) {
    return tf__ckpt_os_error(st, "cannot open directory", dir, errno);
  }
  int rc = fsync(fd);
  int err = errno;
  close(fd);
  if (rc != 0 && err != EINVAL) {
    return tf__ckpt_os_error(st, "cannot fsync directory", dir, err);
  }
  return TF_OK;
}

/* The directory part of path ("." when it has none); free(). */
static char *parent_of(const char *path) {
  const char *slash = strrchr(path, '/');
  if (slash == NULL) {
    return tf__xstrdup(".");
  }
  if (slash == path) {
    return tf__xstrdup("/");
  }
  return tf__xstrndup(path, (size_t)(slash - path));
}

tf_code tf__fsync_parent(const char *path, tf_status *st) {
  char *dir = parent_of(path);
  tf_code c = tf__fsync_dir(dir, st);
  free(dir);
  return c;
}

tf_code tf__mkdir_one(const char *path, unsigned mode, tf_status *st) {
  if (tf__fs_mkdir(path, mode) == 0) {
    return TF_OK;
  }
  int err = errno;
  struct stat sb;
  if (err == EEXIST && tf__fs_stat(path, &sb) == 0) {
    if (S_ISDIR(sb.st_mode)) {
      return TF_OK;
    }
    return tf_status_set(st, TF_FAILED_PRECONDITION,
                         "cannot make directory '%s': a file of that name "
                         "is in the way", path);
  }
  if (err == EEXIST && errno == EACCES) {
    err = EACCES; /* a link out of the allowed directories is in the way */
  }
  return tf__ckpt_os_error(st, "cannot make directory", path, err);
}

/* ---- the atomic writer ------------------------------------------------------- */

int tf__afile_is_temp_name(const char *name) {
  return name[0] == '.' && strstr(name + 1, ".tmp-") != NULL;
}

tf_code tf__afile_open(tf__afile *f, const char *path, tf_status *st) {
  *f = (tf__afile){.fd = -1};
  if (path == NULL || path[0] == '\0') {
    return tf_status_set(st, TF_INVALID_ARGUMENT, "empty file path");
  }
  size_t len = strlen(path);
  if (path[len - 1] == '/') {
    return tf_status_set(st, TF_INVALID_ARGUMENT,
                         "'%s' names a directory, not a file", path);
  }
  char *dir = parent_of(path);
  const char *slash = strrchr(path, '/');
  const char *base = slash ? slash + 1 : path;
  char *tmp = tf__xasprintf("%s/.%s.tmp-%ld-%016" PRIx64, dir, base,
                            (long)getpid(), tf__random_u64());
  free(dir);
  int fd = tf__fs_open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
  if (fd < 0) {
    tf_code c = tf__ckpt_os_error(st, "cannot create temporary file", tmp,
                                  errno);
    tf_status_prefix(st, "cannot write '%s'", path);
    free(tmp);
    return c;
  }
  *f = (tf__afile){.fd = fd, .path = tf__xstrdup(path), .tmp = tmp,
                   .buf = tf__xmalloc(TF__AFILE_BUF)};
  return TF_OK;
}

static tf_code afile_flush(tf__afile *f, tf_status *st) {
  if (f->n_buf > 0 && write_full(f->fd, f->buf, f->n_buf) != 0) {
    return tf__ckpt_os_error(st, "cannot write", f->tmp, errno);
  }
  f->n_buf = 0;
  return TF_OK;
}

tf_code tf__afile_write(tf__afile *f, const void *p, size_t n, tf_status *st) {
  TF_ASSERT(f->fd >= 0);
  f->bytes += n;
  if (f->n_buf + n <= TF__AFILE_BUF) {
    if (n > 0) {
      memcpy(f->buf + f->n_buf, p, n);
    }
    f->n_buf += n;
    return TF_OK;
  }
  TF_TRY(afile_flush(f, st));
  if (n >= TF__AFILE_BUF) {
    if (write_full(f->fd, p, n) != 0) {
      return tf__ckpt_os_error(st, "cannot write", f->tmp, errno);
    }
    return TF_OK;
  }
  memcpy(f->buf, p, n);
  f->n_buf = n;
  return TF_OK;
}

void tf__afile_abort(tf__afile *f) {
  if (f->fd >= 0) {
    close(f->fd);
    tf__fs_unlink(f->tmp);
  }
  free(f->path);
  free(f->tmp);
  free(f->buf);
  *f = (tf__afile){.fd = -1};
}

/* Flushes, fsyncs and closes the temporary file; f->fd is -1 after it
 * in every case. */
static tf_code afile_sync(tf__afile *f, tf_status *st) {
  tf_code c = afile_flush(f, st);
  if (c == TF_OK) {
    tf_ckpt_crash_point("temp-written", f->path);
    if (fsync(f->fd) != 0) {
      c = tf__ckpt_os_error(st, "cannot fsync", f->tmp, errno);
    } else {
      tf_ckpt_crash_point("temp-synced", f->path);
    }
  }
  int fd = f->fd;
  f->fd = -1;
  if (close(fd) != 0 && c == TF_OK) {
    c = tf__ckpt_os_error(st, "cannot close", f->tmp, errno);
  }
  return c;
}

tf_code tf__afile_commit(tf__afile *f, tf_status *st) {
  TF_ASSERT(f->fd >= 0);
  tf_code c = afile_sync(f, st);
  if (c == TF_OK && tf__fs_rename(f->tmp, f->path) != 0) {
    c = tf__ckpt_os_error(st, "cannot rename over", f->path, errno);
  }
  if (c != TF_OK) {
    tf__fs_unlink(f->tmp);
    tf__afile_abort(f);
    return c;
  }
  tf_ckpt_crash_point("renamed", f->path);
  c = tf__fsync_parent(f->path, st);
  if (c == TF_OK) {
    tf_ckpt_crash_point("dir-synced", f->path);
  }
  tf__afile_abort(f); /* fd is -1: frees only */
  return c;
}

tf_code tf_fs_write_atomic(const char *path, const void *data, size_t n,
                           tf_status *st) {
  tf__afile f;
  TF_TRY(tf__afile_open(&f, path, st));
  tf_code c = tf__afile_write(&f, data, n, st);
  if (c != TF_OK) {
    tf__afile_abort(&f);
    return c;
  }
  return tf__afile_commit(&f, st);
}
