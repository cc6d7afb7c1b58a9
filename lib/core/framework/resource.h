/* resource.h: stateful objects that outlive steps (variables, queues) and
 * the containers that hold them (whitepaper §4.7).
 *
 * A resource is refcounted; a container maps names to resources; the
 * manager maps container names to containers. A session owns one manager,
 * so the default container lives as long as the session (on a worker: as
 * long as the process). Resetting a container drops its references: steps
 * that still hold a resource keep it alive until they finish, and the next
 * lookup creates a fresh one.
 *
 * Ref edges. An op output declared "Ref(T)" carries a resource, not a
 * tensor: kernels set it with tf_kernel_set_ref_output and read it from
 * ctx->in_refs. When a ref edge feeds an ordinary input, the executor reads
 * the resource's current value (type->read) just before the consumer runs,
 * so control dependencies order reads after writes. */
#ifndef TF_CORE_RESOURCE_H
#define TF_CORE_RESOURCE_H

#include <stdatomic.h>

#include "lib/core/base/refcount.h"
#include "tf/status.h"
#include "tf/tensor.h"

typedef struct tf_resource tf_resource;

typedef struct tf_resource_type {
  const char *name; /* "Variable", "FIFOQueue", ... */
  /* Frees the object once its last reference is gone. */
  void (*free)(tf_resource *r);
  /* The current value as a new reference, for a plain input fed by a ref
   * edge; NULL when the resource has no value to read (queues). Errors
   * (an uninitialized variable) name the resource. */
  tf_code (*read)(tf_resource *r, tf_tensor **out, tf_status *st);
  /* Called when the resource's container is reset or the session closes,
   * before the container drops its reference: wake waiters (a queue closes
   * and cancels its pending operations). NULL when nothing waits. */
  void (*shutdown)(tf_resource *r);
} tf_resource_type;

struct tf_resource {
  const tf_resource_type *type;
  tf__refcount refs; /* type->free runs on the last tf_resource_unref */
  char *container; /* owned */
  char *name;      /* owned: the shared name, or the creating node's name */
};

/* Sets the header: one reference, copies of container and name. */
void tf_resource_init(tf_resource *r, const tf_resource_type *type,
                      const char *container, const char *name);
/* Frees the header's strings (for type->free implementations). */
void tf_resource_fini(tf_resource *r);
tf_resource *tf_resource_ref(tf_resource *r);
void tf_resource_unref(tf_resource *r); /* NULL-safe */

/* The name of the default container ("" maps to it). */
#define TF_DEFAULT_CONTAINER "localhost"

typedef struct tf_resource_mgr tf_resource_mgr;

tf_resource_mgr *tf_resource_mgr_new(void);
/* Shuts down and drops every resource. NULL-safe. */
void tf_resource_mgr_free(tf_resource_mgr *m);

typedef tf_code (*tf_resource_create_fn)(void *arg, tf_resource **out,
                                         tf_status *st);

/* The resource named name in container ("" = default), as a new reference
 * in *out. When absent, create(arg, out, st) makes it (called under the
 * manager's lock, so two steps never create the same resource twice) and
 * it is inserted. A resource of another type under that name is
 * INVALID_ARGUMENT naming both types. */
tf_code tf_resource_lookup_or_create(tf_resource_mgr *m, const char *container,
                                     const char *name,
                                     const tf_resource_type *type,
                                     tf_resource_create_fn create, void *arg,
                                     tf_resource **out, tf_status *st);
/* The resource or NOT_FOUND naming container and name. */
tf_code tf_resource_lookup(tf_resource_mgr *m, const char *container,
                           const char *name, tf_resource **out, tf_status *st);
/* Resets a container ("" = default): shuts down and drops its resources.
 * Resetting a container that does not exist is not an error. */
void tf_resource_mgr_reset(tf_resource_mgr *m, const char *container);
/* Shuts down every resource (session close) without dropping them. */
void tf_resource_mgr_shutdown(tf_resource_mgr *m);
/* Number of resources in container ("" = default; NULL = all). */
int tf_resource_mgr_count(tf_resource_mgr *m, const char *container);

#endif
