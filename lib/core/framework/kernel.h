/* kernel.h: the kernel interface and the kernel registry.
 *
 * A kernel implements one op on one device type for one dtype (or any
 * dtype, when registered with TF_DTYPE_ANY; an exact dtype match wins).
 * Families register tables with TF_REGISTER_KERNELS: linking the file
 * registers the kernels.
 *
 * Life of a kernel instance: init (optional) reads the node's attrs once
 * into private state; compute runs once per step with the inputs and must
 * set every output (tf_kernel_alloc_output or tf_kernel_set_output) or
 * return an error made with tf_kernel_error; free_state releases the state.
 * compute must be safe to run concurrently for different steps, so state is
 * read-only after init. Async kernels (Recv, Dequeue) set compute_async
 * instead and call done exactly once, possibly from another thread. */
#ifndef TF_CORE_KERNEL_H
#define TF_CORE_KERNEL_H

#include "tf/graph.h"
#include "tf/status.h"
#include "tf/tensor.h"
#include "lib/core/base/threadpool.h"
#include "lib/core/framework/device.h"

typedef struct tf_kernel_def tf_kernel_def;
typedef struct tf_resource tf_resource;
typedef struct tf_resource_mgr tf_resource_mgr;
typedef struct tf_cancel tf_cancel;
typedef struct tf_rendezvous tf_rendezvous;

/* What a step gives its kernels. The executor's caller (a local session
 * or a worker's RunGraph) fills it; kernels only read it, except _Retval, which stores
 * retvals[index] (each index is written by one node). */
typedef struct tf_step_ctx {
  uint64_t step_id;
  tf_resource_mgr *resources; /* variables and queues; never NULL in a step */
  tf_cancel *cancel;          /* the step's cancellation; never NULL */
  tf_tensor *const *args;     /* fed tensors, read by _Arg nodes */
  int n_args;
  tf_tensor **retvals;        /* fetched tensors, set by _Retval nodes */
  int n_retvals;
  /* The step's rendezvous for _Send/_Recv (rendezvous.h); NULL when the
   * step has none, and then those ops fail with FAILED_PRECONDITION. */
  tf_rendezvous *rendezvous;
  /* Resources that live for this step only (TensorArrays): callers leave
   * it NULL; tf_kernel_step_resources makes it on first use and the
   * executor frees it when the step ends. */
  tf_resource_mgr *_Atomic step_resources;
} tf_step_ctx;

typedef struct tf_kernel_ctx {
  const tf_node *node;
  const tf_kernel_def *def;
  const void *state;        /* from init, read-only */
  tf_device *device;
  tf_threadpool *pool;      /* intra-op pool (device's); NULL = inline */
  int n_inputs;
  tf_tensor *const *inputs; /* borrowed; kernels add refs to keep them */
  int n_outputs;
  tf_tensor **outputs;      /* set by the kernel; the caller owns them */
  tf_status *status;
  tf_step_ctx *step;        /* NULL when run eagerly (tf_kernel_run_node) */
  /* Ref edges (resource.h): in_refs[i] is the resource on input i when that
   * input is declared Ref(T), else NULL; the array itself is NULL when the
   * op has no ref inputs. out_refs[i] receives ref outputs
   * (tf_kernel_set_ref_output); NULL when the op has none. */
  tf_resource *const *in_refs;
  tf_resource **out_refs;
  uint64_t frame_id;        /* 0 for the root frame */
  int64_t iter;             /* iteration within the frame */
  /* Only for TF_OP_DEAD_AWARE ops (_Send): some input is dead (dead inputs
   * are NULL). Such ops may leave outputs unset, making them dead. */
  bool is_dead;
} tf_kernel_ctx;

enum {
  TF_KERNEL_CHEAP = 1u << 0, /* the executor may run it inline */
};

struct tf_kernel_def {
  const char *op;
  const char *device_type; /* TF_DEVICE_CPU, ... */
  tf_dtype dtype;          /* value of type_attr this handles; ANY for all */
  const char *type_attr;   /* attr keying dtype; NULL means "T" */
  tf_code (*init)(const tf_node *node, void **state, tf_status *st);
  tf_code (*compute)(tf_kernel_ctx *ctx);
  void (*compute_async)(tf_kernel_ctx *ctx, void (*done)(void *arg),
                        void *arg);
  void (*free_state)(void *state);
  unsigned flags;
};

typedef struct tf_kernel_family {
  const tf_kernel_def *defs;
  size_t n;
  struct tf_kernel_family *next;
} tf_kernel_family;

void tf__kernel_register_family(tf_kernel_family *fam);

#define TF_REGISTER_KERNELS(table)                                             \
  static tf_kernel_family tf__kfam_##table = {                                 \
      table, sizeof(table) / sizeof((table)[0]), 0};                           \
  __attribute__((constructor)) static void tf__kreg_##table(void) {           \
    tf__kernel_register_family(&tf__kfam_##table);                            \
  }

/* Kernel for op on device_type with type-attr value dt; exact dtype first,
 * then an ANY registration. NULL if none. */
const tf_kernel_def *tf_kernel_lookup(const char *op, const char *device_type,
                                      tf_dtype dt);
/* The kernel for node n on device_type, keyed by the node's type attr.
 * NOT_FOUND "no CPU kernel for MatMul with T=int8 (node 'mm')" if none. */
const tf_kernel_def *tf_kernel_for_node(const tf_node *n,
                                        const char *device_type,
                                        tf_status *st);
/* Whether any kernel for op exists on device_type (placement feasibility). */
bool tf_kernel_exists(const char *op, const char *device_type);
/* Dtypes with a kernel for op on device_type (ANY shows as INVALID). */
int tf_kernel_dtypes(const char *op, const char *device_type, tf_dtype *out,
                     int max);

/* Allocates output i with dtype and shape on the device's allocator and
 * stores it in ctx->outputs[i]; *out (may be NULL) gets it. Errors
 * (RESOURCE_EXHAUSTED, bad shape) are set on ctx->status naming the node. */
tf_code tf_kernel_alloc_output(tf_kernel_ctx *ctx, int i, tf_dtype dt,
                               const tf_shape *shape, tf_tensor **out);
/* As alloc_output, but reuses input in_idx's buffer when it has the same
 * dtype and size and no other holder (an in-place op). */
tf_code tf_kernel_forward_or_alloc(tf_kernel_ctx *ctx, int in_idx, int i,
                                   tf_dtype dt, const tf_shape *shape,
                                   tf_tensor **out);
/* Stores t (adding a reference) as output i. */
void tf_kernel_set_output(tf_kernel_ctx *ctx, int i, tf_tensor *t);
/* Stores resource r (adding a reference) as ref output i. */
void tf_kernel_set_ref_output(tf_kernel_ctx *ctx, int i, tf_resource *r);
/* The step, or FAILED_PRECONDITION "<node> (<op>): needs a session (it
 * uses variables or queues)" when the kernel runs eagerly. */
tf_code tf_kernel_need_step(tf_kernel_ctx *ctx);
/* The step's own resource manager (tf_step_ctx.step_resources), made on
 * first use, in *out (borrowed: valid until the step ends); fails as
 * tf_kernel_need_step when the kernel runs eagerly. */
tf_code tf_kernel_step_resources(tf_kernel_ctx *ctx, tf_resource_mgr **out);
/* Frees step->step_resources (NULL-safe) and clears it; the executor calls
 * it when the step's last node has finished. */
void tf_step_ctx_free_resources(tf_step_ctx *step);
/* Sets ctx->status to code with "<node> (<op>): <message>"; returns code. */
tf_code tf_kernel_error(tf_kernel_ctx *ctx, tf_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Runs node n's kernel on dev (NULL: the CPU device) synchronously once
 * (init, compute, free) on inputs, filling outputs[0..num_outputs) with new
 * references. Inputs are only borrowed and never written: kernels cannot
 * forward them. Used by the eager API, constant folding and kernel tests. */
tf_code tf_kernel_run_node(const tf_node *n, tf_device *dev,
                           tf_tensor *const *inputs, tf_tensor **outputs,
                           tf_status *st);

#endif
