/* allocator.h: device memory allocators.
 *
 * Every tensor buffer comes from an allocator, which keeps byte counts for
 * tracing and memory reports. The CPU allocator returns 64-byte aligned
 * memory and returns NULL (never aborts) when memory is short.
 *
 * The statistics are plain int64_t fields (so the struct is the same in C
 * and C++) that only tf_allocator_note_alloc / tf_allocator_note_free
 * change, with atomic operations; read them with tf_allocator_get_stats. */
#ifndef TF_ALLOCATOR_H
#define TF_ALLOCATOR_H

#include <stddef.h>
#include <stdint.h>

#include "tf/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tf_allocator tf_allocator;

struct tf_allocator {
  const char *name; /* "cpu", "cuda:0", ... */
  /* Returns nbytes (may be 0: still a valid unique pointer) aligned to
   * TF_ALLOC_ALIGN, or NULL when memory is short. */
  void *(*alloc)(tf_allocator *a, size_t nbytes);
  void (*free)(tf_allocator *a, void *p, size_t nbytes);
  /* Statistics: private to the note functions (atomic updates); zero
   * them when setting up an allocator, read them with
   * tf_allocator_get_stats. */
  int64_t bytes_in_use;
  int64_t peak_bytes;
  int64_t num_allocs;
};

/* A snapshot of an allocator's statistics (each field read atomically). */
typedef struct tf_allocator_stats {
  int64_t bytes_in_use; /* allocated and not yet freed */
  int64_t peak_bytes;   /* largest bytes_in_use since the last reset */
  int64_t num_allocs;   /* allocations so far (zero-byte ones included) */
} tf_allocator_stats;

#define TF_ALLOC_ALIGN 64

/* The process-wide CPU allocator. */
TF_API tf_allocator *tf_cpu_allocator(void);

/* Records an allocation or free of nbytes in a's statistics. For allocator
 * implementations. */
TF_API void tf_allocator_note_alloc(tf_allocator *a, size_t nbytes);
TF_API void tf_allocator_note_free(tf_allocator *a, size_t nbytes);

/* a's statistics now. Thread-safe. */
TF_API tf_allocator_stats tf_allocator_get_stats(const tf_allocator *a);
/* Sets the peak to the bytes in use now, to measure the peak of what
 * follows. Thread-safe. */
TF_API void tf_allocator_reset_peak(tf_allocator *a);

#ifdef __cplusplus
}
#endif

#endif
