/* ckpt_shard.h: one checkpoint shard file, the unit SaveV2 writes and
 * RestoreV2 reads (TensorFlow's tensor bundle in spirit, our own format:
 * docs/checkpoint.md). A shard holds named tensors, each either whole or
 * a slice of a larger variable (TensorFlow's shape_and_slice text: the
 * full shape, a space, then one "start,length" or "-" per dimension
 * joined by ':', e.g. "10 20 0,5:-"). Every tensor's bytes carry a
 * CRC32C, and so does the index; a file that does not verify is refused
 * with DATA_LOSS naming the file (and the tensor where there is one).
 *
 * Files are replaced atomically (tf_fs_write_atomic): a reader sees the
 * old file, the new one, or none, never a part. */
#ifndef TF_CORE_SERIALIZE_CKPT_SHARD_H
#define TF_CORE_SERIALIZE_CKPT_SHARD_H

#include <stddef.h>
#include <stdint.h>

#include "tf/status.h"
#include "tf/tensor.h"

/* Caps: a shard's entries, a name, a slice text. */
#define TF_CKPT_MAX_ENTRIES 1000000
#define TF_CKPT_NAME_MAX 4096

typedef struct tf_ckpt_entry {
  const char *name;      /* unique in the shard with its slice */
  const char *slice;     /* NULL or "": the whole tensor */
  const tf_tensor *t;    /* the tensor (the slice's values when sliced) */
} tf_ckpt_entry;

/* Writes entries e[0..n) to path atomically: a temporary file in the same
 * directory, fsync, rename over path, fsync of the directory. A slice
 * must parse and its extent must equal t's shape (INVALID_ARGUMENT
 * naming the entry). I/O errors name the path and errno's text. */
tf_code tf_ckpt_shard_write(const char *path, const tf_ckpt_entry *e, int n,
                            tf_status *st);

typedef struct tf_ckpt_shard tf_ckpt_shard;

/* Opens path and checks its header and index (DATA_LOSS naming path on a
 * bad magic, a truncation or a CRC mismatch; NOT_FOUND when absent). The
 * tensors' bytes are checked when read. */
tf_code tf_ckpt_shard_open(const char *path, tf_ckpt_shard **out, tf_status *st);
/* As tf_ckpt_shard_open on an open file descriptor, which the shard then
 * owns (closed by tf_ckpt_shard_close, and also if this fails); name
 * stands for the file in errors (fuzzing opens a memfd this way). */
tf_code tf_ckpt_shard_open_fd(int fd, const char *name, tf_ckpt_shard **out,
                              tf_status *st);
void tf_ckpt_shard_close(tf_ckpt_shard *s); /* NULL-safe */
/* The path (or name) it was opened with. */
const char *tf_ckpt_shard_path(const tf_ckpt_shard *s);

typedef struct tf_ckpt_info {
  const char *name;
  const char *slice;   /* "" when whole */
  tf_dtype dtype;
  tf_shape shape;      /* of the stored values */
  tf_shape full;       /* the variable's full shape (== shape when whole) */
  int64_t bytes;       /* stored bytes */
} tf_ckpt_info;

int tf_ckpt_shard_count(const tf_ckpt_shard *s);
/* Entry i (0 <= i < count), in the order written; pointers live as long
 * as s. */
void tf_ckpt_shard_info(const tf_ckpt_shard *s, int i, tf_ckpt_info *out);

/* Reads name as shape_and_slice asks (NULL or "": the whole variable),
 * assembled from every stored slice of name that overlaps it (RestoreV2's
 * semantics). NOT_FOUND when name is absent, INVALID_ARGUMENT when the
 * request does not fit the stored full shape or when want_dtype (a
 * tf_dtype, or -1 for any) differs from the stored one, DATA_LOSS naming
 * the tensor and file on a CRC mismatch or when the stored slices do not
 * cover the request. */
tf_code tf_ckpt_shard_read(tf_ckpt_shard *s, const char *name,
                           const char *shape_and_slice, int want_dtype,
                           tf_tensor **out, tf_status *st);

/* Reads every tensor and checks its CRC (DATA_LOSS naming the first bad
 * tensor and the file). */
tf_code tf_ckpt_shard_verify(tf_ckpt_shard *s, tf_status *st);
/* As tf_ckpt_shard_verify, in the same single sequential pass over the
 * whole file, also gives the file's size and CRC32C (what a checkpoint's
 * manifest records). */
tf_code tf_ckpt_shard_verify_file(tf_ckpt_shard *s, int64_t *bytes,
                                  uint32_t *crc32c, tf_status *st);

/* Replaces path with data[0..n) atomically (temporary file in the same
 * directory, fsync, rename, fsync of the directory). */
tf_code tf_fs_write_atomic(const char *path, const void *data, size_t n,
                           tf_status *st);

/* Tests only: hook called at each named point of an atomic write
 * ("temp-written", "temp-synced", "renamed", "dir-synced") with the final
 * path, so that a test can kill the writer there. NULL: none. Set it
 * before any writer runs (it is a plain global, read without locks). */
void tf_ckpt_set_crash_hook(void (*hook)(const char *point, const char *path,
                                         void *arg),
                            void *arg);
/* Calls the hook (if any) at a point of the caller's: the checkpoint
 * directory's removal of old checkpoints ("removing", "partly-removed"),
 * or a test's own point between two shard writes. */
void tf_ckpt_crash_point(const char *point, const char *path);

#endif
