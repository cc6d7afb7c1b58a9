/* cpu_device.c: the local CPU device: CPU allocator and default pool. */
#include <pthread.h>

#include "lib/core/framework/device.h"

static tf_device cpu_device;
static pthread_once_t cpu_once = PTHREAD_ONCE_INIT;

static void make_cpu(void) {
  cpu_device.name = "/job:localhost/replica:0/task:0/device:CPU:0";
  cpu_device.type = TF_DEVICE_CPU;
  cpu_device.alloc = tf_cpu_allocator();
  cpu_device.pool = tf_threadpool_default();
}

tf_device *tf_cpu_device(void) {
  pthread_once(&cpu_once, make_cpu);
  return &cpu_device;
}
