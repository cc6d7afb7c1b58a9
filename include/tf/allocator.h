/* allocator.h: device memory allocators.
 *
 * Every tensor buffer comes from an allocator, which keeps byte counts for
 * tracing and memory reports. The CPU allocator returns 64-byte aligned
 * memory and returns NULL (never aborts) when memory is short. */
#ifndef TF_ALLOCATOR_H
#define TF_ALLOCATOR_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tf_allocator tf_allocator;

struct tf_allocator {
  const char *name; /* "cpu", "cuda:0", ... */
  /* Returns nbytes (may be 0: still a valid unique pointer) aligned to
   * TF_ALLOC_ALIGN, or NULL when memory is short. */
  void *(*alloc)(tf_allocator *a, size_t nbytes);
  void (*free)(tf_allocator *a, void *p, size_t nbytes);
  atomic_llong bytes_in_use; /* maintained by the allocator */
  atomic_llong peak_bytes;
  atomic_llong num_allocs;
};

#define TF_ALLOC_ALIGN 64

/* The process-wide CPU allocator. */
tf_allocator *tf_cpu_allocator(void);

/* Records an allocation or free of nbytes in a's statistics. For allocator
 * implementations. */
void tf_allocator_note_alloc(tf_allocator *a, size_t nbytes);
void tf_allocator_note_free(tf_allocator *a, size_t nbytes);

#endif
