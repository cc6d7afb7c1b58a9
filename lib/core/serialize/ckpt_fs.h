/* ckpt_fs.h: the file primitives under checkpoints (internal): a buffered
 * writer that replaces its target atomically (tf_fs_write_atomic is it
 * with one write), directory fsync and creation, errno mapped to status
 * codes, and the crash points tests kill a writer at. docs/checkpoint.md
 * says why the order of fsync and rename makes a write crash-consistent. */
#ifndef TF_CORE_SERIALIZE_CKPT_FS_H
#define TF_CORE_SERIALIZE_CKPT_FS_H

#include <stddef.h>
#include <stdint.h>

#include "tf/status.h"

/* One atomic replacement in progress: the bytes go to a temporary file
 * "<dir>/.<name>.tmp-<pid>-<random>" beside path through a buffer of
 * TF__AFILE_BUF bytes (writes larger than the buffer go straight to the
 * file). */
#define TF__AFILE_BUF (1u << 20)

typedef struct tf__afile {
  int fd;          /* -1 once committed or aborted */
  char *path;      /* the final path */
  char *tmp;       /* the temporary file */
  char *buf;
  size_t n_buf;
  uint64_t bytes;  /* written so far, buffered included */
} tf__afile;

/* Creates the temporary file (mode 0644). Errors name it and errno's text;
 * on error f holds nothing to release. */
tf_code tf__afile_open(tf__afile *f, const char *path, tf_status *st);
/* Appends n bytes. On error the caller must still tf__afile_abort. */
tf_code tf__afile_write(tf__afile *f, const void *p, size_t n, tf_status *st);
/* Flushes, fsyncs, renames the temporary file over path and fsyncs the
 * directory, calling the crash hook at "temp-written", "temp-synced",
 * "renamed" and "dir-synced". Releases f in every case (the temporary
 * file is removed when the rename did not happen). */
tf_code tf__afile_commit(tf__afile *f, tf_status *st);
/* Closes and removes the temporary file, frees f's memory. Safe on a
 * committed or aborted f. */
void tf__afile_abort(tf__afile *f);

/* Whether name is one of the temporary files tf__afile makes (".<x>.tmp-"
 * followed by anything), so that cleaners can remove a crashed writer's. */
int tf__afile_is_temp_name(const char *name);

/* fsyncs the directory dir (a file system that cannot sync directories,
 * EINVAL, is not an error). */
tf_code tf__fsync_dir(const char *dir, tf_status *st);
/* fsyncs the directory that holds path. */
tf_code tf__fsync_parent(const char *path, tf_status *st);
/* Makes directory path with mode if it is missing (an existing directory
 * is fine; an existing non-directory is FAILED_PRECONDITION). */
tf_code tf__mkdir_one(const char *path, unsigned mode, tf_status *st);

/* Sets st to the code of errno value err ("<what> '<path>': <strerror>"):
 * NOT_FOUND, PERMISSION_DENIED, RESOURCE_EXHAUSTED, FAILED_PRECONDITION
 * (a directory) or UNKNOWN. Returns the code. */
tf_code tf__ckpt_os_error(tf_status *st, const char *what, const char *path,
                          int err);

/* Reads exactly n bytes at offset off of fd, retrying short reads and
 * EINTR: 0 when it did, 1 when the file ended first, -1 with errno set
 * on an error. */
int tf__pread_full(int fd, void *buf, size_t n, uint64_t off);

#endif
