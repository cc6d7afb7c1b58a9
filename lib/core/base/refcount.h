/* refcount.h: the one reference count of lib/ (nng's nni_refcnt, the
 * kernel's kref): a 32-bit count changed only with atomic operations and a
 * release function that the last put calls. Tensors, buffers, resources,
 * wire messages, RPC clients and retry entries, rendezvous managers, step
 * tables and waiters, queue waiters, reader requests, asynchronous kernel
 * runs, master sessions and steps, and worker graphs all count this way. A
 * count that is only changed under a lock (rendezvous tables) still uses
 * these functions, with tf__ref_drop so the release happens under that lock.
 *
 * The count is a plain int32_t so that a public struct (tf_tensor) can hold
 * one without C11 atomics in the public headers; only these functions may
 * touch it. Taking a reference from zero or dropping one below zero is a
 * bug (a use after free), and panics in release builds too. */
#ifndef TF_CORE_BASE_REFCOUNT_H
#define TF_CORE_BASE_REFCOUNT_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/core/base/util.h"

typedef int32_t tf__refcount;

/* Starts the count at n (> 0) references; no other thread may see it yet. */
static inline void tf__ref_init(tf__refcount *c, int32_t n) {
  TF_ASSERT(n > 0);
  __atomic_store_n(c, n, __ATOMIC_RELAXED);
}

/* Adds a reference; the caller already holds one. */
static inline void tf__ref_get(tf__refcount *c) {
  int32_t prev = __atomic_fetch_add(c, 1, __ATOMIC_RELAXED);
  if (prev <= 0) TF_PANIC("reference taken on a released object (count %d)", (int)prev);
}

/* Drops a reference. True when it was the last one: the caller then owns
 * the object alone and releases it (for callers that must release under a
 * lock of their own; the others use tf__ref_put). */
static inline bool tf__ref_drop(tf__refcount *c) {
  int32_t prev = __atomic_fetch_sub(c, 1, __ATOMIC_ACQ_REL);
  if (prev <= 0) TF_PANIC("reference dropped on a released object (count %d)", (int)prev);
  return prev == 1;
}

/* Drops a reference and calls release(obj) when it was the last one. */
static inline void tf__ref_put(tf__refcount *c, void (*release)(void *obj), void *obj) {
  if (tf__ref_drop(c)) release(obj);
}

/* The current count (a snapshot: exact only when no other thread holds a
 * reference, e.g. 1 means the caller's is the only one). */
static inline int32_t tf__ref_count(const tf__refcount *c) {
  return __atomic_load_n(c, __ATOMIC_ACQUIRE);
}

#endif
