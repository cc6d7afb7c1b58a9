/* ckpt_dir.h: a job's checkpoint directory (docs/checkpoint.md):
 *
 *   <dir>/checkpoint            the pointer, TensorFlow's text format:
 *                               model_checkpoint_path: "ckpt-1000"
 *                               all_model_checkpoint_paths: "ckpt-800"
 *                               all_model_checkpoint_paths: "ckpt-1000"
 *   <dir>/ckpt-<step>/<job>-<task>.shard   each task's shard (SaveV2's
 *                               file: "ps-0.shard")
 *   <dir>/ckpt-<step>/manifest  written last, by the master: the job, the
 *                               step, the time, the job spec's hash, and
 *                               per shard its file, size and CRC32C
 *
 * A checkpoint is whole once its manifest is in place; the pointer is
 * replaced (tf_fs_write_atomic) only after that, so a writer killed at
 * any point leaves the previous checkpoint or the new one, never a mix.
 * A ckpt-<step> directory without a valid manifest is garbage from such a
 * crash: listing skips it and tf_ckpt_begin removes it. */
#ifndef TF_RUNTIME_CKPT_DIR_H
#define TF_RUNTIME_CKPT_DIR_H

#include <stdbool.h>
#include <stdint.h>

#include "tf/status.h"

typedef struct tf_ckpt_shard_ref {
  char *file;       /* relative to the checkpoint: "ps-0.shard" */
  int64_t bytes;
  uint32_t crc32c;  /* of the whole file */
} tf_ckpt_shard_ref;

typedef struct tf_ckpt_manifest {
  char *job;        /* the job's name */
  int64_t step;     /* the global step the variables hold */
  int64_t time_ms;  /* wall clock (ms since the epoch) when committed */
  char *spec_hash;  /* hex; the job spec text's hash */
  char *mode;       /* "sync" | "async" */
  int n_shards;
  tf_ckpt_shard_ref *shards;
  char *path;       /* <dir>/ckpt-<step> (set by the readers) */
} tf_ckpt_manifest;

void tf_ckpt_manifest_fini(tf_ckpt_manifest *m); /* NULL-safe; zeroes */

/* Caps on what a manifest and a pointer file may hold. */
#define TF_CKPT_MANIFEST_MAX (1 << 20) /* bytes */
#define TF_CKPT_MAX_SHARDS 65536
#define TF_CKPT_POINTER_MAX (1 << 20)  /* bytes */
#define TF_CKPT_MAX_KEPT 100000        /* names in the pointer */

/* The manifest's text (docs/checkpoint.md):
 *   tf-checkpoint-manifest 1
 *   job: <name>            1..255 printable ASCII characters, no spaces
 *   step: <n>              decimal, >= 0
 *   time_ms: <n>
 *   spec_hash: <hex>       0..128 lowercase hex digits
 *   mode: <word>           0..16 lowercase letters ("sync", "async")
 *   shards: <n>            0..TF_CKPT_MAX_SHARDS
 *   shard: <file> <bytes> <crc32c, 8 hex digits>   one line per shard
 *   crc32c: <8 hex digits> of every byte before this line
 * INVALID_ARGUMENT naming the field when m cannot be written so;
 * otherwise *text gets it (free()) and *len its length. */
tf_code tf_ckpt_manifest_format(const tf_ckpt_manifest *m, char **text,
                                size_t *len, tf_status *st);
/* Parses a manifest's text strictly (the fields in that order, single
 * spaces, every line ending in a newline, nothing after the CRC line, the
 * caps above): DATA_LOSS "<where>: line N: <what>" on anything else or a
 * CRC mismatch, UNIMPLEMENTED for another format version. out->path is
 * NULL; on error out is zeroed. */
tf_code tf_ckpt_manifest_parse(const char *text, size_t len, const char *where,
                               tf_ckpt_manifest *out, tf_status *st);

/* The pointer file's text for the checkpoint directories names[0..n)
 * ("ckpt-<step>", oldest first; the last is the latest); free(). */
char *tf_ckpt_pointer_format(char *const *names, int n);
/* Parses a pointer file: model_checkpoint_path first, then any
 * all_model_checkpoint_paths lines (TensorFlow's
 * all_model_checkpoint_timestamps and last_preserved_timestamp lines are
 * skipped); every name must be "ckpt-<step>". *names gets them oldest
 * first with model_checkpoint_path last, each once (free each and the
 * array). DATA_LOSS "<where>: line N: <what>" otherwise. */
tf_code tf_ckpt_pointer_parse(const char *text, size_t len, const char *where,
                              char ***names, int *n, tf_status *st);
/* Whether name is "ckpt-<step>" (decimal, no sign or leading zero, fits
 * int64); *step (may be NULL) gets the step. */
bool tf_ckpt_dir_name_step(const char *name, int64_t *step);

/* The shard file name of a task: ("ps", 1) -> "ps-1.shard"; free(). */
char *tf_ckpt_shard_name(const char *job, int task);

/* Makes <dir> (and missing parents) and an empty <dir>/ckpt-<step>,
 * removing what a crashed writer left there; *ckpt_path gets it
 * (free()). What a crashed writer leaves is removed from the whole of dir:
 * temporary files of atomic writes and every ckpt-<step> directory that
 * has no manifest file. When <dir>/ckpt-<step> already holds a checkpoint
 * that verifies, ALREADY_EXISTS naming it (nothing is removed); one that
 * does not verify is replaced. */
tf_code tf_ckpt_begin(const char *dir, int64_t step, char **ckpt_path,
                      tf_status *st);

/* Commits the checkpoint <dir>/ckpt-<m->step> whose shards the tasks have
 * written: fills each shard's size and CRC32C from its file (DATA_LOSS
 * naming a missing or unreadable one; every tensor's CRC is checked in the
 * same pass), writes the manifest atomically, then the pointer naming it
 * as the latest, keeping the newest `keep` checkpoints in the pointer and
 * deleting older ckpt-* directories. m->time_ms 0: now (m gets it);
 * m->path gets <dir>/ckpt-<step>. keep <= 0 keeps every checkpoint. The
 * directories to delete are those named ckpt-<digits> that the new
 * pointer does not name; one that cannot be removed is left for the next
 * commit (the checkpoint is committed either way). INVALID_ARGUMENT for
 * fields the manifest cannot hold (tf_ckpt_manifest_format),
 * FAILED_PRECONDITION when <dir>/ckpt-<step> does not exist. */
tf_code tf_ckpt_commit(const char *dir, tf_ckpt_manifest *m, int keep,
                       tf_status *st);

/* Drops the checkpoints of dir after step (a timeline abandoned by a
 * restore of an older checkpoint: saves of the same steps then write
 * anew, as TensorFlow's Saver overwrites them): removes their
 * directories, then rewrites the pointer without them (a crash in
 * between leaves a pointer naming removed checkpoints, which readers skip
 * for the older ones). *removed gets how many directories went. */
tf_code tf_ckpt_truncate(const char *dir, int64_t step, int *removed,
                         tf_status *st);

/* Reads and checks one checkpoint directory: the manifest's own CRC, and
 * every shard's size, CRC32C, and its tensors' CRCs (DATA_LOSS naming the
 * file, and the tensor where one is bad; NOT_FOUND when there is no
 * manifest). */
tf_code tf_ckpt_verify(const char *ckpt_path, tf_ckpt_manifest *out,
                       tf_status *st);

/* The checkpoints of dir, oldest first: those the pointer names, else
 * (no or a damaged pointer) every ckpt-* directory with a manifest, by
 * the manifests' time and step. Each entry has its manifest's fields and
 * path; only the manifest was read (tf_ckpt_verify checks the shards;
 * tf_ckpt_bytes gives the size). A checkpoint whose manifest cannot be
 * read is left out. NOT_FOUND when dir does not exist; OK with *n == 0
 * when it has no checkpoint. */
tf_code tf_ckpt_list(const char *dir, tf_ckpt_manifest **out, int *n,
                     tf_status *st);
void tf_ckpt_list_free(tf_ckpt_manifest *ms, int n);

/* The newest checkpoint of dir that verifies (tf_ckpt_verify). When the
 * latest does not, falls back to the previous one, and so on; *note then
 * says what was skipped and why (free(); NULL when nothing was). The
 * candidates are the pointer's names, newest first, then any other
 * ckpt-<step> directory with a manifest (newest first: one committed but
 * not yet named by the pointer when the writer died); with no or a
 * damaged pointer, only the latter (the note says so when it was
 * damaged). NOT_FOUND when dir has no checkpoint; DATA_LOSS when none
 * verifies, naming the latest's problem. note may be NULL. */
tf_code tf_ckpt_latest(const char *dir, tf_ckpt_manifest *out, char **note,
                       tf_status *st);

/* The total size of the files of a checkpoint: its shards' bytes as the
 * manifest records them, plus the manifest file's size when m->path is
 * set. */
int64_t tf_ckpt_bytes(const tf_ckpt_manifest *m);

#endif
