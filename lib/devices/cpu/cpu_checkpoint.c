/* cpu_checkpoint.c: CPU kernels of SaveV2 and RestoreV2 (ops_checkpoint.c)
 * over checkpoint shard files (lib/core/serialize/ckpt_shard.h). The
 * kernels check their string inputs (a scalar prefix, N names and N
 * slices for N tensors, names non-empty and without NUL bytes), then hand
 * the work to the shard writer or reader, whose errors name the tensor and
 * the file. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/framework/kernel.h"
#include "lib/core/serialize/ckpt_fs.h"
#include "lib/core/serialize/ckpt_shard.h"
#include "lib/core/base/util.h"

/* The C string of element i of a string tensor, or NULL when it holds a
 * NUL byte (then it cannot be a file name or a tensor name). */
static const char *cstr(const tf_tensor *t, int64_t i) {
  const tf_string *s = &tf_tensor_strings(t)[i];
  if (s->len == 0) {
    return "";
  }
  return memchr(s->data, '\0', s->len) == NULL ? s->data : NULL;
}

/* prefix, tensor_names and shape_and_slices for n tensors. */
static tf_code check_args(tf_kernel_ctx *ctx, int64_t n, const char **prefix) {
  const tf_tensor *p = ctx->inputs[0], *names = ctx->inputs[1],
                  *slices = ctx->inputs[2];
  if (p->shape.rank != 0 || (*prefix = cstr(p, 0)) == NULL || **prefix == '\0') {
    return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "prefix must be a "
                           "non-empty scalar file name without NUL bytes "
                           "(got rank %d)", p->shape.rank);
  }
  const tf_tensor *v[2] = {names, slices};
  const char *what[2] = {"tensor_names", "shape_and_slices"};
  for (int k = 0; k < 2; k++) {
    if (v[k]->shape.rank != 1 || v[k]->n != n) {
      char b[96];
      return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "%s must be a vector "
                             "of %lld entries (one per tensor), got shape %s",
                             what[k], (long long)n,
                             tf_shape_str(&v[k]->shape, b, sizeof b));
    }
    for (int64_t i = 0; i < n; i++) {
      const char *s = cstr(v[k], i);
      if (s == NULL || (k == 0 && *s == '\0')) {
        return tf_kernel_error(ctx, TF_INVALID_ARGUMENT, "%s[%lld] is %s",
                               what[k], (long long)i,
                               s == NULL ? "not a string without NUL bytes"
                                         : "empty");
      }
    }
  }
  return TF_OK;
}

/* Makes the directory prefix is in when it is missing (one level). */
static tf_code make_parent(tf_kernel_ctx *ctx, const char *prefix) {
  const char *slash = strrchr(prefix, '/');
  if (slash == NULL || slash == prefix) {
    return TF_OK;
  }
  char *dir = tf__xstrndup(prefix, (size_t)(slash - prefix));
  tf_status st;
  tf_code c = tf__mkdir_one(dir, 0755, &st);
  free(dir);
  return c == TF_OK ? TF_OK : tf_kernel_error(ctx, c, "%s", st.msg);
}

static tf_code save_compute(tf_kernel_ctx *ctx) {
  int64_t n = ctx->n_inputs - 3;
  const char *prefix;
  TF_TRY(check_args(ctx, n, &prefix));
  TF_TRY(make_parent(ctx, prefix));
  tf_ckpt_entry *e = tf__xcalloc((size_t)n + 1, sizeof *e);
  for (int64_t i = 0; i < n; i++) {
    e[i] = (tf_ckpt_entry){.name = cstr(ctx->inputs[1], i),
                           .slice = cstr(ctx->inputs[2], i),
                           .t = ctx->inputs[3 + i]};
  }
  tf_status st;
  tf_code c = tf_ckpt_shard_write(prefix, e, (int)n, &st);
  free(e);
  return c == TF_OK ? TF_OK : tf_kernel_error(ctx, c, "%s", st.msg);
}

static tf_code restore_compute(tf_kernel_ctx *ctx) {
  int64_t n = ctx->n_outputs;
  const char *prefix;
  TF_TRY(check_args(ctx, n, &prefix));
  const tf_attr_value *dt = tf_node_attr(ctx->node, "dtypes");
  tf_status st;
  tf_ckpt_shard *s;
  if (tf_ckpt_shard_open(prefix, &s, &st) != TF_OK) {
    return tf_kernel_error(ctx, st.code, "%s", st.msg);
  }
  tf_code c = TF_OK;
  for (int64_t i = 0; i < n && c == TF_OK; i++) {
    tf_tensor *t;
    c = tf_ckpt_shard_read(s, cstr(ctx->inputs[1], i), cstr(ctx->inputs[2], i),
                           (int)dt->u.types[i], &t, &st);
    if (c == TF_OK) {
      tf_kernel_set_output(ctx, (int)i, t);
      tf_tensor_unref(t);
    }
  }
  tf_ckpt_shard_close(s);
  return c == TF_OK ? TF_OK : tf_kernel_error(ctx, c, "%s", st.msg);
}

#define CPU(name) .op = name, .device_type = TF_DEVICE_CPU, .dtype = TF_DTYPE_ANY

static const tf_kernel_def checkpoint_kernels[] = {
    {CPU("SaveV2"), .compute = save_compute},
    {CPU("RestoreV2"), .compute = restore_compute},
};

TF_REGISTER_KERNELS(checkpoint_kernels)
