/* cpu_allocator.c: the CPU allocator: 64-byte aligned blocks from the C
 * heap, with byte statistics. Returns NULL when memory is short, and for
 * any request beyond the machine's physical memory without asking the heap
 * (ASan's heap aborts on such requests instead of returning NULL).
 *
 * Large blocks (>= 64 KiB) are cached on free and handed out again for a
 * request of the same page-rounded size: a training step allocates the
 * same shapes every step, and the page faults of a fresh block cost more
 * than the arithmetic done in it (glibc serves such blocks by mmap or
 * trims them back with madvise; an LSTM step of 256 KiB gates spent a
 * third of its time in page faults). The cache holds at most
 * TF_CPU_ALLOC_CACHE_MB (default 1024) MiB and is off under ASan so that
 * use-after-free is still caught. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "tf/allocator.h"

void tf_allocator_note_alloc(tf_allocator *a, size_t nbytes) {
  int64_t now = __atomic_add_fetch(&a->bytes_in_use, (int64_t)nbytes,
                                   __ATOMIC_RELAXED);
  __atomic_add_fetch(&a->num_allocs, 1, __ATOMIC_RELAXED);
  int64_t peak = __atomic_load_n(&a->peak_bytes, __ATOMIC_RELAXED);
  while (now > peak &&
         !__atomic_compare_exchange_n(&a->peak_bytes, &peak, now, true,
                                      __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
}

void tf_allocator_note_free(tf_allocator *a, size_t nbytes) {
  __atomic_sub_fetch(&a->bytes_in_use, (int64_t)nbytes, __ATOMIC_RELAXED);
}

tf_allocator_stats tf_allocator_get_stats(const tf_allocator *a) {
  tf_allocator_stats s;
  s.bytes_in_use = __atomic_load_n(&a->bytes_in_use, __ATOMIC_RELAXED);
  s.peak_bytes = __atomic_load_n(&a->peak_bytes, __ATOMIC_RELAXED);
  s.num_allocs = __atomic_load_n(&a->num_allocs, __ATOMIC_RELAXED);
  return s;
}

void tf_allocator_reset_peak(tf_allocator *a) {
  __atomic_store_n(&a->peak_bytes,
                   __atomic_load_n(&a->bytes_in_use, __ATOMIC_RELAXED),
                   __ATOMIC_RELAXED);
}

/* Physical memory in bytes, computed once (racing first calls agree). */
static size_t max_request(void) {
  static _Atomic size_t cached;
  size_t m = atomic_load_explicit(&cached, memory_order_relaxed);
  if (m == 0) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    m = pages > 0 && page > 0 ? (size_t)pages * (size_t)page : SIZE_MAX / 2;
    atomic_store_explicit(&cached, m, memory_order_relaxed);
  }
  return m;
}

#if defined(__SANITIZE_ADDRESS__)
#define CACHE_ENABLED false
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define CACHE_ENABLED false
#endif
#endif
#ifndef CACHE_ENABLED
#define CACHE_ENABLED true
#endif

#define CACHE_MIN_BYTES ((size_t)1 << 16)
#define CACHE_SLOTS 256
#define PAGE_BYTES ((size_t)4096)

/* Free large blocks by page-rounded size; a small array searched linearly
 * (a step has few distinct large sizes). */
static struct {
  pthread_mutex_t mu;
  size_t cap_bytes, held_bytes;
  int n;
  struct { void *p; size_t size; } slot[CACHE_SLOTS];
} cache = {.mu = PTHREAD_MUTEX_INITIALIZER};
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;

static void cache_init(void) {
  const char *env = getenv("TF_CPU_ALLOC_CACHE_MB");
  long mb = env ? atol(env) : 1024;
  cache.cap_bytes = CACHE_ENABLED && mb > 0 ? (size_t)mb << 20 : 0;
}

static void *cache_take(size_t size) {
  void *p = NULL;
  pthread_mutex_lock(&cache.mu);
  for (int i = cache.n - 1; i >= 0; i--) {
    if (cache.slot[i].size == size) {
      p = cache.slot[i].p;
      cache.held_bytes -= size;
      cache.slot[i] = cache.slot[--cache.n];
      break;
    }
  }
  pthread_mutex_unlock(&cache.mu);
  return p;
}

/* Keeps p if there is room, evicting the oldest blocks; false if not kept. */
static bool cache_put(void *p, size_t size) {
  if (size > cache.cap_bytes) return false;
  void *evict[CACHE_SLOTS];
  int n_evict = 0;
  pthread_mutex_lock(&cache.mu);
  while (cache.n > 0 && (cache.n == CACHE_SLOTS || cache.held_bytes + size > cache.cap_bytes)) {
    evict[n_evict++] = cache.slot[0].p;
    cache.held_bytes -= cache.slot[0].size;
    cache.slot[0] = cache.slot[--cache.n];
  }
  cache.slot[cache.n].p = p;
  cache.slot[cache.n].size = size;
  cache.n++;
  cache.held_bytes += size;
  pthread_mutex_unlock(&cache.mu);
  for (int i = 0; i < n_evict; i++) free(evict[i]);
  return true;
}

/* Bytes actually requested from the heap for an nbytes block; 0 on
 * overflow. Large blocks are page-rounded so equal shapes share a size. */
static size_t block_size(size_t nbytes) {
  size_t align = nbytes >= CACHE_MIN_BYTES ? PAGE_BYTES : TF_ALLOC_ALIGN;
  size_t rounded = (nbytes + align - 1) & ~(align - 1);
  if (rounded < nbytes) return 0;
  return rounded == 0 ? TF_ALLOC_ALIGN : rounded;
}

static void *cpu_alloc(tf_allocator *a, size_t nbytes) {
  if (nbytes > max_request()) return NULL;
  size_t size = block_size(nbytes);
  if (size == 0) return NULL; /* overflow */
  pthread_once(&cache_once, cache_init);
  void *p = NULL;
  if (size >= CACHE_MIN_BYTES && cache.cap_bytes > 0) p = cache_take(size);
  if (p == NULL) p = aligned_alloc(TF_ALLOC_ALIGN, size);
  if (p != NULL) tf_allocator_note_alloc(a, nbytes);
  return p;
}

static void cpu_free(tf_allocator *a, void *p, size_t nbytes) {
  if (p == NULL) return;
  size_t size = block_size(nbytes);
  if (!(size >= CACHE_MIN_BYTES && cache.cap_bytes > 0 && cache_put(p, size))) {
    free(p);
  }
  tf_allocator_note_free(a, nbytes);
}

static tf_allocator cpu_allocator = {
    .name = "cpu", .alloc = cpu_alloc, .free = cpu_free};

tf_allocator *tf_cpu_allocator(void) { return &cpu_allocator; }
