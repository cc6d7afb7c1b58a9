/* ctl_inspect.h: `tfctl inspect CHECKPOINT [--export NAME FILE.npy]`:
 * reads checkpoint files offline (no cluster) and prints what they hold;
 * docs/checkpoint.md shows its output. */
#ifndef TF_CMD_TFCTL_CTL_INSPECT_H
#define TF_CMD_TFCTL_CTL_INSPECT_H

#include <stdio.h>

#include "tf/status.h"

typedef struct tf_ctl_inspect_opts {
  /* A checkpoint (a ckpt-<step> directory with a manifest), a job's
   * checkpoint directory (its latest checkpoint that verifies is taken,
   * and named), or one shard file. */
  const char *path;
  const char *export_name; /* NULL: print only */
  const char *export_file; /* the .npy file to write export_name to */
  FILE *out;               /* the listing */
  FILE *err;               /* notes (checkpoints skipped as damaged) */
} tf_ctl_inspect_opts;

/* Verifies what o->path names (every CRC), then prints the checkpoint's
 * job, step and time and, per shard, a table of its tensors: name, dtype,
 * stored shape, bytes and slice. With export_name, writes that variable,
 * whole (assembled from its slices in every shard), as .npy. Errors name
 * the file and tensor: DATA_LOSS for damage, NOT_FOUND for a missing
 * path or variable, INVALID_ARGUMENT for a variable .npy cannot hold. */
tf_code tf_ctl_inspect(const tf_ctl_inspect_opts *o, tf_status *st);

#endif
