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

/* The shard file name of a task: ("ps", 1) -> "ps-1.shard"; free(). */
char *tf_ckpt_shard_name(const char *job, int task);

/* Makes <dir> (and missing parents) and an empty <dir>/ckpt-<step>,
 * removing what a crashed writer left there; *ckpt_path gets it
 * (free()). */
tf_code tf_ckpt_begin(const char *dir, int64_t step, char **ckpt_path,
                      tf_status *st);

/* Commits the checkpoint <dir>/ckpt-<m->step> whose shards the tasks have
 * written: fills each shard's size and CRC32C from its file (DATA_LOSS
 * naming a missing or unreadable one), writes the manifest atomically,
 * then the pointer naming it as the latest, keeping the newest `keep`
 * checkpoints in the pointer and deleting older ckpt-* directories.
 * m->time_ms 0: now. */
tf_code tf_ckpt_commit(const char *dir, tf_ckpt_manifest *m, int keep,
                       tf_status *st);

/* Reads and checks one checkpoint directory: the manifest's own CRC, and
 * every shard's size, CRC32C, and its tensors' CRCs (DATA_LOSS naming the
 * file, and the tensor where one is bad; NOT_FOUND when there is no
 * manifest). */
tf_code tf_ckpt_verify(const char *ckpt_path, tf_ckpt_manifest *out,
                       tf_status *st);

/* The checkpoints of dir, oldest first: those the pointer names, else
 * (no or a damaged pointer) every ckpt-* directory with a manifest.
 * Each entry has its manifest fields (verified == false: only the
 * manifest was read) and its total size in *bytes when non-NULL. */
tf_code tf_ckpt_list(const char *dir, tf_ckpt_manifest **out, int *n,
                     tf_status *st);
void tf_ckpt_list_free(tf_ckpt_manifest *ms, int n);

/* The newest checkpoint of dir that verifies (tf_ckpt_verify). When the
 * latest does not, falls back to the previous one, and so on; *note then
 * says what was skipped and why (free(); NULL when nothing was). NOT_FOUND
 * when dir has no checkpoint; DATA_LOSS when none verifies, naming the
 * latest's problem. */
tf_code tf_ckpt_latest(const char *dir, tf_ckpt_manifest *out, char **note,
                       tf_status *st);

/* The total size of the files of a checkpoint (manifest included). */
int64_t tf_ckpt_bytes(const tf_ckpt_manifest *m);

#endif
