/* kernel_registry.c: the (op, device type, dtype) -> kernel table, built
 * once from the families linked in, plus the kernel-context helpers
 * kernels call (output allocation, errors) and a synchronous runner. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/core/framework/kernel.h"
#include "lib/core/framework/resource.h"
#include "lib/core/base/util.h"

static tf_kernel_family *kfamilies;
static const tf_kernel_def **kernels; /* sorted by (op, device, dtype) */
static int n_kernels;
static pthread_once_t kernels_once = PTHREAD_ONCE_INIT;

void tf__kernel_register_family(tf_kernel_family *fam) {
  fam->next = kfamilies;
  kfamilies = fam;
}

static int cmp_key(const char *op, const char *dev, int dt,
                   const tf_kernel_def *k) {
  int c = strcmp(op, k->op);
  if (c != 0) return c;
  c = strcmp(dev, k->device_type);
  if (c != 0) return c;
  return dt - (int)k->dtype;
}

static int cmp_kernel(const void *a, const void *b) {
  const tf_kernel_def *x = *(const tf_kernel_def *const *)a;
  return cmp_key(x->op, x->device_type, (int)x->dtype,
                 *(const tf_kernel_def *const *)b);
}

static void build_kernels(void) {
  int n = 0;
  for (tf_kernel_family *f = kfamilies; f; f = f->next) n += (int)f->n;
  kernels = tf__xcalloc((size_t)n + 1, sizeof *kernels);
  for (tf_kernel_family *f = kfamilies; f; f = f->next) {
    for (size_t i = 0; i < f->n; i++) kernels[n_kernels++] = &f->defs[i];
  }
  qsort(kernels, (size_t)n_kernels, sizeof *kernels, cmp_kernel);
  for (int i = 1; i < n_kernels; i++) {
    if (cmp_kernel(&kernels[i - 1], &kernels[i]) == 0) {
      TF_PANIC("kernel for %s on %s dtype %s registered twice", kernels[i]->op,
               kernels[i]->device_type, tf_dtype_name(kernels[i]->dtype));
    }
  }
  for (int i = 0; i < n_kernels; i++) {
    if (kernels[i]->compute == NULL && kernels[i]->compute_async == NULL) {
      TF_PANIC("kernel for %s has no compute function", kernels[i]->op);
    }
  }
}

static const tf_kernel_def *find_exact(const char *op, const char *dev, int dt) {
  int lo = 0, hi = n_kernels - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    int c = cmp_key(op, dev, dt, kernels[mid]);
    if (c == 0) return kernels[mid];
    if (c < 0) {
      hi = mid - 1;
    } else {
      lo = mid + 1;
    }
  }
  return NULL;
}

const tf_kernel_def *tf_kernel_lookup(const char *op, const char *device_type,
                                      tf_dtype dt) {
  pthread_once(&kernels_once, build_kernels);
  const tf_kernel_def *k = find_exact(op, device_type, (int)dt);
  if (k == NULL && dt != TF_DTYPE_ANY) k = find_exact(op, device_type, TF_DTYPE_ANY);
  return k;
}

bool tf_kernel_exists(const char *op, const char *device_type) {
  tf_dtype dts[1];
  return tf_kernel_dtypes(op, device_type, dts, 1) > 0;
}

int tf_kernel_dtypes(const char *op, const char *device_type, tf_dtype *out,
                     int max) {
  pthread_once(&kernels_once, build_kernels);
  int n = 0;
  for (int i = 0; i < n_kernels; i++) {
    if (strcmp(kernels[i]->op, op) == 0 &&
        strcmp(kernels[i]->device_type, device_type) == 0) {
      if (n < max) out[n] = kernels[i]->dtype;
      n++;
    }
  }
  return n;
}

const tf_kernel_def *tf_kernel_for_node(const tf_node *n,
                                        const char *device_type,
                                        tf_status *st) {
  pthread_once(&kernels_once, build_kernels);
  tf_dtype dt = TF_DTYPE_ANY;
  const char *attr = "T";
  /* The attr that keys this op's kernels: ask its registrations (sorted
   * by op, so they are adjacent). */
  int lo = 0, hi = n_kernels;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (strcmp(kernels[mid]->op, tf_node_op(n)) < 0) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  for (int i = lo; i < n_kernels && strcmp(kernels[i]->op, tf_node_op(n)) == 0; i++) {
    if (kernels[i]->type_attr) {
      attr = kernels[i]->type_attr;
      break;
    }
  }
  const tf_attr_value *v = tf_node_attr(n, attr);
  if (v != NULL && v->type == TF_ATTR_TYPE && !v->is_list) dt = v->u.t;
  const tf_kernel_def *k = tf_kernel_lookup(tf_node_op(n), device_type, dt);
  if (k == NULL && dt != TF_DTYPE_ANY) {
    tf_status_set(st, TF_NOT_FOUND, "no %s kernel for op %s with %s=%s "
                  "(node '%s')", device_type, tf_node_op(n), attr,
                  tf_dtype_name(dt), tf_node_name(n));
  } else if (k == NULL) {
    tf_status_set(st, TF_NOT_FOUND, "no %s kernel for op %s (node '%s')",
                  device_type, tf_node_op(n), tf_node_name(n));
  }
  return k;
}

/* ---- kernel context helpers -------------------------------------------- */

tf_code tf_kernel_error(tf_kernel_ctx *ctx, tf_code code, const char *fmt, ...) {
  char msg[TF_STATUS_MSG_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return tf_status_set(ctx->status, code, "node '%s' (%s): %s",
                       tf_node_name(ctx->node), tf_node_op(ctx->node), msg);
}

tf_code tf_kernel_alloc_output(tf_kernel_ctx *ctx, int i, tf_dtype dt,
                               const tf_shape *shape, tf_tensor **out) {
  TF_ASSERT(i >= 0 && i < ctx->n_outputs);
  tf_allocator *a = ctx->device ? ctx->device->alloc : tf_cpu_allocator();
  tf_tensor *t;
  tf_status tmp;
  if (tf_tensor_new_on(a, dt, shape, &t, &tmp) != TF_OK) {
    return tf_kernel_error(ctx, tmp.code, "output %d: %s", i, tmp.msg);
  }
  tf_tensor_unref(ctx->outputs[i]);
  ctx->outputs[i] = t;
  if (out != NULL) *out = t;
  return TF_OK;
}

tf_code tf_kernel_forward_or_alloc(tf_kernel_ctx *ctx, int in_idx, int i,
                                   tf_dtype dt, const tf_shape *shape,
                                   tf_tensor **out) {
  tf_tensor *in = ctx->inputs[in_idx];
  /* The caller of compute holds one reference to each input; if that is
   * the only one, nobody else can observe the buffer being reused. */
  if (in != NULL && in->dtype == dt && dt != TF_STRING &&
      tf_shape_num_elements(shape) == in->n && tf_tensor_buffer_is_unique(in)) {
    tf_tensor *v;
    if (tf_tensor_view(in, shape, &v, NULL) == TF_OK) {
      tf_tensor_unref(ctx->outputs[i]);
      ctx->outputs[i] = v;
      if (out != NULL) *out = v;
      return TF_OK;
    }
  }
  return tf_kernel_alloc_output(ctx, i, dt, shape, out);
}

void tf_kernel_set_output(tf_kernel_ctx *ctx, int i, tf_tensor *t) {
  TF_ASSERT(i >= 0 && i < ctx->n_outputs);
  tf_tensor_ref(t);
  tf_tensor_unref(ctx->outputs[i]);
  ctx->outputs[i] = t;
}

void tf_kernel_set_ref_output(tf_kernel_ctx *ctx, int i, tf_resource *r) {
  TF_ASSERT(i >= 0 && i < ctx->n_outputs && ctx->out_refs != NULL);
  tf_resource_ref(r);
  tf_resource_unref(ctx->out_refs[i]);
  ctx->out_refs[i] = r;
}

tf_code tf_kernel_need_step(tf_kernel_ctx *ctx) {
  if (ctx->step != NULL) return TF_OK;
  return tf_kernel_error(ctx, TF_FAILED_PRECONDITION, "needs a session (it "
                         "uses variables or queues)");
}

tf_code tf_kernel_step_resources(tf_kernel_ctx *ctx, tf_resource_mgr **out) {
  *out = NULL;
  TF_TRY(tf_kernel_need_step(ctx));
  tf_resource_mgr *m = atomic_load(&ctx->step->step_resources);
  if (m == NULL) {
    tf_resource_mgr *fresh = tf_resource_mgr_new();
    /* Two kernels may race to make it: the loser frees its own. */
    if (atomic_compare_exchange_strong(&ctx->step->step_resources, &m, fresh)) {
      m = fresh;
    } else {
      tf_resource_mgr_free(fresh);
    }
  }
  *out = m;
  return TF_OK;
}

void tf_step_ctx_free_resources(tf_step_ctx *step) {
  if (step != NULL) {
    tf_resource_mgr_free(atomic_exchange(&step->step_resources, NULL));
  }
}

tf_code tf_kernel_run_node(const tf_node *n, tf_device *dev,
                           tf_tensor *const *inputs, tf_tensor **outputs,
                           tf_status *st) {
  if (dev == NULL) dev = tf_cpu_device();
  const tf_kernel_def *k = tf_kernel_for_node(n, dev->type, st);
  if (k == NULL) return st ? st->code : TF_NOT_FOUND;
  int n_in = tf_node_num_inputs(n), n_out = tf_node_num_outputs(n);
  for (int i = 0; i < n_in; i++) {
    if (inputs[i] == NULL || inputs[i]->dtype != tf_node_input_type(n, i)) {
      return tf_status_set(st, TF_INVALID_ARGUMENT, "node '%s' (%s): input %d "
                           "is %s, expected %s", tf_node_name(n), tf_node_op(n), i,
                           inputs[i] ? tf_dtype_name(inputs[i]->dtype) : "missing",
                           tf_dtype_name(tf_node_input_type(n, i)));
    }
  }
  void *state = NULL;
  if (k->init != NULL) TF_TRY(k->init(n, &state, st));
  for (int i = 0; i < n_out; i++) outputs[i] = NULL;
  /* The caller keeps its references: hold our own so no kernel forwards
   * (overwrites) a buffer the caller can still see. */
  for (int i = 0; i < n_in; i++) tf_tensor_ref(inputs[i]);
  tf_status local;
  tf_status_init(&local);
  tf_kernel_ctx ctx = {.node = n, .def = k, .state = state, .device = dev,
                       .pool = dev->pool, .n_inputs = n_in,
                       .inputs = inputs, .n_outputs = n_out,
                       .outputs = outputs, .status = &local};
  tf_code rc;
  if (k->compute != NULL) {
    rc = k->compute(&ctx);
  } else {
    rc = tf_kernel_error(&ctx, TF_UNIMPLEMENTED, "asynchronous kernels need "
                         "the executor");
  }
  if (rc == TF_OK) rc = local.code;
  for (int i = 0; rc == TF_OK && i < n_out; i++) {
    if (outputs[i] == NULL) {
      rc = tf_kernel_error(&ctx, TF_INTERNAL, "kernel did not set output %d", i);
    }
  }
  if (k->free_state != NULL) k->free_state(state);
  for (int i = 0; i < n_in; i++) tf_tensor_unref(inputs[i]);
  if (rc != TF_OK) {
    for (int i = 0; i < n_out; i++) {
      tf_tensor_unref(outputs[i]);
      outputs[i] = NULL;
    }
    if (st != NULL) *st = local;
    return rc;
  }
  return TF_OK;
}
