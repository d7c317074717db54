//===- sluice_gen/cpu_scratch.h - per-thread scratch of cpu bundles -*- C++ -*-===//
//
// The packing buffers of the GEMMs, the im2col matrices of the convolutions
// and the row buffers of fused row groups are kept per thread between runs:
// they are megabytes, and a fresh malloc of that size is a fresh mmap whose
// page faults cost as much as the work. OpenMP's worker threads live as
// long as the process, so without more they would hold that memory after
// the model is freed. Every buffer is therefore listed in one registry per
// model library, and the library exports sluice_model_release_scratch,
// which the runtime calls when the last model using the library is freed
// (no run of it can be in flight then); a thread that ends frees its own.
//
// Everything here has internal linkage on purpose: a registry shared by two
// model libraries (what an `inline` function's static would become, a
// STB_GNU_UNIQUE symbol) would let freeing one model release buffers that a
// run of the other is using.
//
//===----------------------------------------------------------------------===//
#ifndef SLUICE_GEN_CPU_SCRATCH_H
#define SLUICE_GEN_CPU_SCRATCH_H

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <mutex>

namespace {

struct sluice_scratch_buffer;

/// Every thread's scratch buffers of this library: a list under a lock.
struct sluice_scratch_registry {
  std::mutex lock;
  sluice_scratch_buffer *head = nullptr;
};

/// Never destroyed: a worker thread may end (and unlist its buffers) while
/// the process is running its static destructors.
[[maybe_unused]] sluice_scratch_registry &sluice_scratch_all() {
  static sluice_scratch_registry *all = new sluice_scratch_registry;
  return *all;
}

/// One thread's buffer for one user: 64-byte aligned, grown as needed.
/// `capacity` is atomic because sluice_scratch_release writes it from the
/// thread that frees the model; the owner reads it on every call.
struct sluice_scratch_buffer {
  void *raw = nullptr;
  std::atomic<size_t> capacity{0};
  bool listed = false;
  sluice_scratch_buffer *prev = nullptr, *next = nullptr;

  /// At least `bytes` bytes, or null when they cannot be allocated.
  void *get(size_t bytes) {
    if (bytes <= capacity.load(std::memory_order_acquire) && raw)
      return align(raw);
    // Growth is rare: under the registry's lock, like the release.
    sluice_scratch_registry &all = sluice_scratch_all();
    std::lock_guard<std::mutex> guard(all.lock);
    if (!listed) {
      next = all.head;
      if (next)
        next->prev = this;
      all.head = this;
      listed = true;
    }
    free(raw);
    raw = bytes + 64 > bytes ? malloc(bytes + 64) : nullptr;
    capacity.store(raw ? bytes : 0, std::memory_order_release);
    return raw ? align(raw) : nullptr;
  }

  /// Frees the memory (the buffer stays listed and may grow again).
  void release() {
    free(raw);
    raw = nullptr;
    capacity.store(0, std::memory_order_release);
  }

  ~sluice_scratch_buffer() {
    if (listed) {
      sluice_scratch_registry &all = sluice_scratch_all();
      std::lock_guard<std::mutex> guard(all.lock);
      (prev ? prev->next : all.head) = next;
      if (next)
        next->prev = prev;
    }
    free(raw);
  }

  static void *align(void *p) { return (void *)(((uintptr_t)p + 63) & ~(uintptr_t)63); }
};

/// Frees every thread's scratch of this library. Only while no run of it is
/// in flight (the runtime calls it when the last model of the library is
/// freed); the threads grow their buffers again at their next use.
[[maybe_unused]] void sluice_scratch_release() {
  sluice_scratch_registry &all = sluice_scratch_all();
  std::lock_guard<std::mutex> guard(all.lock);
  for (sluice_scratch_buffer *b = all.head; b; b = b->next)
    b->release();
}

/// Bytes the threads' scratch holds now (what the runtime tests check).
[[maybe_unused]] size_t sluice_scratch_bytes() {
  sluice_scratch_registry &all = sluice_scratch_all();
  std::lock_guard<std::mutex> guard(all.lock);
  size_t total = 0;
  for (sluice_scratch_buffer *b = all.head; b; b = b->next)
    total += b->capacity.load(std::memory_order_relaxed);
  return total;
}

} // namespace

/// The exports the runtime looks for (include/sluice/bundle_abi.h); a
/// bundle source defines them once, after its includes.
#define SLUICE_SCRATCH_EXPORTS                                                 \
  extern "C" void sluice_model_release_scratch(void) { sluice_scratch_release(); } \
  extern "C" size_t sluice_model_scratch_bytes(void) { return sluice_scratch_bytes(); }

#endif // SLUICE_GEN_CPU_SCRATCH_H
