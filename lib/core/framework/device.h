/* device.h: the device interface behind which CPU and CUDA sit.
 *
 * A device has a full name (/job:J/replica:0/task:T/device:CPU:0), a type
 * ("CPU", "GPU") that keys the kernel registry, an allocator for its tensors
 * and an intra-op thread pool. lib/core knows devices only through this. */
#ifndef TF_DEVICES_DEVICE_H
#define TF_DEVICES_DEVICE_H

#include "tf/allocator.h"
#include "lib/core/base/threadpool.h"

#define TF_DEVICE_CPU "CPU"
#define TF_DEVICE_GPU "GPU"

typedef struct tf_device {
  const char *name;     /* full name */
  const char *type;     /* TF_DEVICE_CPU, TF_DEVICE_GPU */
  tf_allocator *alloc;
  tf_threadpool *pool;  /* intra-op pool; may be NULL (inline) */
  void *impl;           /* backend state (streams, handles) */
} tf_device;

/* The local CPU device "/job:localhost/replica:0/task:0/device:CPU:0" with
 * the CPU allocator and the default pool. */
tf_device *tf_cpu_device(void);

#endif
