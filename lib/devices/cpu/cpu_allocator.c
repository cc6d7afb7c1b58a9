/* cpu_allocator.c: the CPU allocator: 64-byte aligned blocks from the C
 * heap, with byte statistics. Returns NULL when memory is short. */
#include <stdlib.h>

#include "tf/allocator.h"

void tf_allocator_note_alloc(tf_allocator *a, size_t nbytes) {
  long long now = atomic_fetch_add(&a->bytes_in_use, (long long)nbytes) +
                  (long long)nbytes;
  atomic_fetch_add(&a->num_allocs, 1);
  long long peak = atomic_load(&a->peak_bytes);
  while (now > peak && !atomic_compare_exchange_weak(&a->peak_bytes, &peak, now)) {
  }
}

void tf_allocator_note_free(tf_allocator *a, size_t nbytes) {
  atomic_fetch_sub(&a->bytes_in_use, (long long)nbytes);
}

static void *cpu_alloc(tf_allocator *a, size_t nbytes) {
  size_t rounded = (nbytes + TF_ALLOC_ALIGN - 1) & ~(size_t)(TF_ALLOC_ALIGN - 1);
  if (rounded < nbytes) return NULL; /* overflow */
  if (rounded == 0) rounded = TF_ALLOC_ALIGN;
  void *p = aligned_alloc(TF_ALLOC_ALIGN, rounded);
  if (p != NULL) tf_allocator_note_alloc(a, nbytes);
  return p;
}

static void cpu_free(tf_allocator *a, void *p, size_t nbytes) {
  if (p == NULL) return;
  free(p);
  tf_allocator_note_free(a, nbytes);
}

static tf_allocator cpu_allocator = {
    .name = "cpu", .alloc = cpu_alloc, .free = cpu_free};

tf_allocator *tf_cpu_allocator(void) { return &cpu_allocator; }
