/* ctl_inspect.c: `tfctl inspect` (ctl_inspect.h). Resolves the path to a
 * verified checkpoint (or one shard file), prints the manifest's facts
 * and a table per shard, and exports one variable as .npy, assembled from
 * its stored slices across the checkpoint's shards with a coverage mask. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cmd/tfctl/ctl_inspect.h"
#include "lib/core/serialize/ckpt_shard.h"
#include "lib/core/serialize/ckpt_slice.h"
#include "lib/runtime/ckpt_dir.h"
#include "lib/core/base/util.h"
#include "tf/serialize.h"

/* What to list: a checkpoint's shards, or one shard file. */
typedef struct target {
  tf_ckpt_manifest m; /* m.path NULL for one file */
  char **files;       /* full paths */
  int n;
} target;

static void target_fini(target *t) {
  for (int i = 0; i < t->n; i++) {
    free(t->files[i]);
  }
  free(t->files);
  tf_ckpt_manifest_fini(&t->m);
}

static char *join(const char *a, const char *b) {
  size_t n = strlen(a) + strlen(b) + 2;
  char *s = malloc(n);
  snprintf(s, n, "%s/%s", a, b);
  return s;
}

/* A directory: the checkpoint it is, or the latest of a job's. */
static tf_code resolve_dir(const tf_ctl_inspect_opts *o, target *t, tf_status *st) {
  char *manifest = join(o->path, "manifest");
  struct stat sb;
  bool is_ckpt = stat(manifest, &sb) == 0;
  free(manifest);
  if (is_ckpt) {
    return tf_ckpt_verify(o->path, &t->m, st);
  }
  char *note = NULL;
  tf_code c = tf_ckpt_latest(o->path, &t->m, &note, st);
  if (note != NULL) {
    fprintf(o->err, "tfctl: note: %s\n", note);
    free(note);
  }
  if (c == TF_OK) {
    fprintf(o->out, "latest checkpoint of %s: %s\n", o->path, t->m.path);
  }
  return c;
}

static tf_code resolve(const tf_ctl_inspect_opts *o, target *t, tf_status *st) {
  *t = (target){0};
  struct stat sb;
  if (stat(o->path, &sb) != 0) {
    return tf_status_set(st, TF_NOT_FOUND, "%s: no such file or directory", o->path);
  }
  if (!S_ISDIR(sb.st_mode)) {
    t->files = calloc(1, sizeof *t->files);
    t->files[t->n++] = strdup(o->path);
    return TF_OK;
  }
  TF_TRY(resolve_dir(o, t, st));
  t->files = calloc((size_t)t->m.n_shards + 1, sizeof *t->files);
  for (int i = 0; i < t->m.n_shards; i++) {
    t->files[t->n++] = join(t->m.path, t->m.shards[i].file);
  }
  return TF_OK;
}

static void print_manifest(FILE *out, const tf_ckpt_manifest *m) {
  char when[64] = "?";
  time_t secs = (time_t)(m->time_ms / 1000);
  struct tm tm;
  if (gmtime_r(&secs, &tm) != NULL) {
    size_t k = strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(when + k, sizeof when - k, ".%03dZ", (int)(m->time_ms % 1000));
  }
  fprintf(out, "checkpoint: %s\njob: %s\nstep: %lld\ntime: %s\nmode: %s\n"
               "spec_hash: %s\nshards: %d, %lld bytes with the manifest\n",
          m->path, m->job, (long long)m->step, when, m->mode[0] ? m->mode : "-",
          m->spec_hash[0] ? m->spec_hash : "-", m->n_shards,
          (long long)tf_ckpt_bytes(m));
}

/* The table of one shard: NAME DTYPE SHAPE BYTES SLICE. */
static void print_table(FILE *out, const tf_ckpt_shard *s) {
  int n = tf_ckpt_shard_count(s), wn = 4, ws = 5;
  char shape[96];
  for (int i = 0; i < n; i++) {
    tf_ckpt_info in;
    tf_ckpt_shard_info(s, i, &in);
    int l = (int)strlen(in.name);
    wn = l > wn ? l : wn;
    l = (int)strlen(tf_shape_str(&in.shape, shape, sizeof shape));
    ws = l > ws ? l : ws;
  }
  fprintf(out, "  %-*s  %-9s %-*s %12s  %s\n", wn, "NAME", "DTYPE", ws, "SHAPE", "BYTES",
          "SLICE");
  for (int i = 0; i < n; i++) {
    tf_ckpt_info in;
    tf_ckpt_shard_info(s, i, &in);
    fprintf(out, "  %-*s  %-9s %-*s %12lld%s%s\n", wn, in.name, tf_dtype_name(in.dtype), ws,
            tf_shape_str(&in.shape, shape, sizeof shape), (long long)in.bytes,
            in.slice[0] ? "  " : "", in.slice);
  }
}

static tf_code list_shards(const tf_ctl_inspect_opts *o, const target *t, tf_status *st) {
  for (int i = 0; i < t->n; i++) {
    tf_ckpt_shard *s;
    TF_TRY(tf_ckpt_shard_open(t->files[i], &s, st));
    /* A checkpoint was verified whole; a lone file is verified here. */
    tf_code c = t->m.path == NULL ? tf_ckpt_shard_verify(s, st) : TF_OK;
    if (c == TF_OK) {
      const char *slash = strrchr(t->files[i], '/');
      struct stat sb;
      long long bytes = stat(t->files[i], &sb) == 0 ? (long long)sb.st_size : -1;
      fprintf(o->out, "\nshard %s: %d tensors, %lld bytes\n",
              t->m.path != NULL && slash ? slash + 1 : t->files[i],
              tf_ckpt_shard_count(s), bytes);
      print_table(o->out, s);
    }
    tf_ckpt_shard_close(s);
    if (c != TF_OK) {
      return c;
    }
  }
  return TF_OK;
}

/* ---- export -------------------------------------------------------------------- */

/* The variable being assembled. */
typedef struct assembly {
  tf_tensor *whole;
  tf_ckpt_box box;
  uint8_t *mask;
  int64_t vol;
} assembly;

/* Copies entry in (of the variable) from shard s into a. */
static tf_code add_piece(assembly *a, tf_ckpt_shard *s, const tf_ckpt_info *in,
                         tf_status *st) {
  const char *path = tf_ckpt_shard_path(s);
  if (a->whole == NULL) {
    TF_TRY(tf_tensor_new(in->dtype, &in->full, &a->whole, st));
    a->box = tf__ckpt_box_whole(&in->full);
    a->vol = tf__ckpt_box_volume(&a->box);
    a->mask = calloc((size_t)a->vol + 1, 1);
    if (a->mask == NULL) {
      return tf_status_set(st, TF_RESOURCE_EXHAUSTED, "no memory to assemble '%s'", in->name);
    }
  } else if (in->dtype != a->whole->dtype || !tf_shape_equal(&in->full, &a->whole->shape)) {
    return tf_status_set(st, TF_DATA_LOSS, "tensor '%s' in %s has another dtype or full "
                         "shape than in the checkpoint's other shards", in->name, path);
  }
  tf_tensor *part;
  TF_TRY(tf_ckpt_shard_read(s, in->name, in->slice, (int)in->dtype, &part, st));
  tf_shape full;
  tf_ckpt_box pb = tf__ckpt_box_whole(&part->shape);
  bool whole;
  tf_code c = tf__ckpt_slice_parse(in->slice, &full, &pb, &whole, st);
  if (c == TF_OK) {
    c = tf__ckpt_box_copy(a->whole, &a->box, part, &pb, &pb, st);
    tf__ckpt_box_mark(a->mask, &a->box, &pb);
  }
  tf_tensor_unref(part);
  return c;
}

static tf_code assemble(const tf_ctl_inspect_opts *o, const target *t, assembly *a,
                        tf_status *st) {
  for (int i = 0; i < t->n; i++) {
    tf_ckpt_shard *s;
    TF_TRY(tf_ckpt_shard_open(t->files[i], &s, st));
    tf_code c = TF_OK;
    for (int k = 0; k < tf_ckpt_shard_count(s) && c == TF_OK; k++) {
      tf_ckpt_info in;
      tf_ckpt_shard_info(s, k, &in);
      if (strcmp(in.name, o->export_name) == 0) {
        c = add_piece(a, s, &in, st);
      }
    }
    tf_ckpt_shard_close(s);
    TF_TRY(c);
  }
  const char *where = t->m.path ? t->m.path : o->path;
  if (a->whole == NULL) {
    return tf_status_set(st, TF_NOT_FOUND, "no variable '%s' in %s", o->export_name, where);
  }
  if (a->vol > 0 && memchr(a->mask, 0, (size_t)a->vol) != NULL) {
    return tf_status_set(st, TF_DATA_LOSS, "the slices of '%s' in %s do not cover its full "
                         "shape", o->export_name, where);
  }
  return TF_OK;
}

static tf_code export_var(const tf_ctl_inspect_opts *o, const target *t, tf_status *st) {
  assembly a = {0};
  tf_code c = assemble(o, t, &a, st);
  if (c == TF_OK && a.whole->dtype == TF_STRING) {
    c = tf_status_set(st, TF_INVALID_ARGUMENT, "'%s' is a string tensor, which .npy files "
                      "cannot hold", o->export_name);
  } else if (c == TF_OK) {
    c = tf_tensor_save_npy(a.whole, o->export_file, st);
    if (c == TF_UNIMPLEMENTED && st != NULL) {
      st->code = c = TF_INVALID_ARGUMENT; /* a dtype .npy has no encoding for */
    }
  }
  if (c == TF_OK) {
    char shape[96];
    fprintf(o->out, "\nexported %s (%s %s) to %s\n", o->export_name,
            tf_dtype_name(a.whole->dtype), tf_shape_str(&a.whole->shape, shape, sizeof shape),
            o->export_file);
  }
  tf_tensor_unref(a.whole);
  free(a.mask);
  return c;
}

tf_code tf_ctl_inspect(const tf_ctl_inspect_opts *o, tf_status *st) {
  target t;
  tf_code c = resolve(o, &t, st);
  if (c == TF_OK && t.m.path != NULL) {
    print_manifest(o->out, &t.m);
  }
  if (c == TF_OK) {
    c = list_shards(o, &t, st);
  }
  if (c == TF_OK && o->export_name != NULL) {
    c = export_var(o, &t, st);
  }
  fflush(o->out);
  target_fini(&t);
  return c;
}
