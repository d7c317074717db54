//===- CudaRowEmulation.h - run cuda device code on the host ----*- C++ -*-===//
//
// Enough of CUDA's execution model to run the cuda target's row templates
// (codegen/include/sluice_gen/cuda_reduce.h) unchanged on a machine with no
// GPU: each block's threads are cooperative fibers (ucontext) on one host
// thread, scheduled round-robin; __syncthreads is a barrier over the block,
// __shfl_xor_sync / __shfl_down_sync exchange values through per-lane slots
// between two warp barriers; __shared__ variables are statics (blocks run
// one after another), dynamic shared memory (SLUICE_EXTERN_SHARED) one
// buffer per launch; atomics are plain read-modify-writes (a fiber yields
// only at a barrier or shuffle). A thread that leaves while others wait at
// a barrier (a divergent __syncthreads or shuffle, undefined on a GPU)
// fails the launch instead of hanging.
//
// Include this before any device source; launch with
// sluice_emu::launch(grid, block, [&] { kernel(args...); }), grid and block
// as counts (1-D) or dim3 (with the dynamic shared bytes).
//
//===----------------------------------------------------------------------===//
#ifndef SLUICE_TEST_UNIT_CUDAROWEMULATION_H
#define SLUICE_TEST_UNIT_CUDAROWEMULATION_H

#include <ucontext.h>

#include <array>
#include <cstddef>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#define __device__
#define __global__
#define __host__
#define __forceinline__ inline
#define __shared__ static
#define __launch_bounds__(...)

namespace sluice_emu {

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
};

/// One launch's state (blocks run one after another).
struct Machine {
  struct Fiber {
    ucontext_t context;
    std::unique_ptr<char[]> stack;
    bool done = false;
  };
  std::vector<Fiber> fibers;
  ucontext_t scheduler;
  unsigned current = 0, threads = 0, doneCount = 0;
  const std::function<void()> *body = nullptr;
  // Block barrier.
  unsigned arrived = 0, generation = 0;
  // Warp barriers and shuffle slots (64 bytes per lane).
  std::vector<unsigned> warpArrived, warpGeneration;
  std::vector<std::array<unsigned char, 64>> slots;
  // The launch's dynamic shared memory (SLUICE_EXTERN_SHARED).
  std::vector<std::max_align_t> dynamicShared;
  std::string failure;
  uint64_t barriers = 0, shuffles = 0;
  /// Arrivals at barriers and finished threads: a scheduling round without
  /// any is a deadlock.
  uint64_t progress = 0;
};

inline dim3 threadIdx, blockIdx, blockDim, gridDim;
inline Machine *machine = nullptr;

inline void yield() {
  Machine &m = *machine;
  swapcontext(&m.fibers[m.current].context, &m.scheduler);
}

[[noreturn]] inline void fail(const std::string &what) {
  machine->failure = what;
  // Leave the fiber for good: the scheduler sees the failure and stops.
  machine->fibers[machine->current].done = true;
  setcontext(&machine->scheduler);
  throw std::logic_error("unreachable");
}

inline void blockBarrier() {
  Machine &m = *machine;
  ++m.barriers;
  ++m.progress;
  unsigned generation = m.generation;
  if (++m.arrived == m.threads) {
    m.arrived = 0;
    ++m.generation;
    return;
  }
  while (m.generation == generation) {
    if (m.arrived + m.doneCount == m.threads && m.doneCount)
      fail("__syncthreads: " + std::to_string(m.doneCount) +
           " threads of the block left without reaching it");
    yield();
  }
}

inline void warpBarrier() {
  Machine &m = *machine;
  unsigned warp = m.current / 32;
  unsigned generation = m.warpGeneration[warp];
  ++m.progress;
  if (++m.warpArrived[warp] == 32) {
    m.warpArrived[warp] = 0;
    ++m.warpGeneration[warp];
    return;
  }
  while (m.warpGeneration[warp] == generation) {
    unsigned done = 0;
    for (unsigned t = warp * 32; t < warp * 32 + 32; ++t)
      done += m.fibers[t].done;
    if (done && m.warpArrived[warp] + done == 32)
      fail("warp shuffle: " + std::to_string(done) + " lanes of warp " + std::to_string(warp) +
           " left without reaching it");
    yield();
  }
}

template <typename T> T shuffle(unsigned mask, T v, unsigned source) {
  static_assert(sizeof(T) <= 64, "shuffle of a value over 64 bytes");
  if (mask != 0xffffffffu)
    fail("shuffle with a partial mask");
  Machine &m = *machine;
  ++m.shuffles;
  unsigned t = m.current, warp = t / 32;
  std::memcpy(m.slots[t].data(), &v, sizeof(T));
  warpBarrier();
  T r;
  std::memcpy(&r, m.slots[warp * 32 + source % 32].data(), sizeof(T));
  warpBarrier();
  return r;
}

inline void entry() {
  Machine &m = *machine;
  (*m.body)();
  m.fibers[m.current].done = true;
  ++m.doneCount;
  ++m.progress;
  // uc_link returns to the scheduler.
}

struct Stats {
  uint64_t barriers = 0, shuffles = 0;
};

/// Runs `kernel` (which reads threadIdx, blockIdx ...) over grid x block
/// threads (block a multiple of 32 threads in all; warps are runs of 32 in
/// x-major order), with `sharedBytes` of dynamic shared memory. Throws
/// std::runtime_error when a barrier or shuffle is reached by only part of
/// the threads.
inline Stats launch(dim3 grid, dim3 blockShape, const std::function<void()> &kernel,
                    size_t sharedBytes = 0) {
  const unsigned block = blockShape.x * blockShape.y * blockShape.z;
  if (block == 0 || block % 32 || block > 1024)
    throw std::invalid_argument("emulated blocks are 32..1024 threads, a multiple of 32");
  Machine m;
  m.threads = block;
  m.body = &kernel;
  m.fibers.resize(block);
  m.slots.resize(block);
  m.dynamicShared.resize((sharedBytes + sizeof(std::max_align_t) - 1) / sizeof(std::max_align_t));
  const size_t stackBytes = 256 * 1024;
  for (auto &f : m.fibers)
    f.stack.reset(new char[stackBytes]);
  machine = &m;
  gridDim = grid;
  blockDim = blockShape;
  for (unsigned b = 0; b < grid.x * grid.y * grid.z; ++b) {
    blockIdx = {b % grid.x, (b / grid.x) % grid.y, b / (grid.x * grid.y)};
    m.arrived = 0;
    m.doneCount = 0;
    m.warpArrived.assign(block / 32, 0);
    m.warpGeneration.assign(block / 32, 0);
    for (unsigned t = 0; t < block; ++t) {
      auto &f = m.fibers[t];
      f.done = false;
      getcontext(&f.context);
      f.context.uc_stack.ss_sp = f.stack.get();
      f.context.uc_stack.ss_size = stackBytes;
      f.context.uc_link = &m.scheduler;
      makecontext(&f.context, entry, 0);
    }
    while (m.doneCount < block && m.failure.empty()) {
      const uint64_t before = m.progress;
      for (unsigned t = 0; t < block && m.failure.empty(); ++t) {
        if (m.fibers[t].done)
          continue;
        m.current = t;
        threadIdx = {t % blockShape.x, (t / blockShape.x) % blockShape.y,
                     t / (blockShape.x * blockShape.y)};
        swapcontext(&m.scheduler, &m.fibers[t].context);
      }
      if (m.failure.empty() && m.doneCount < block && m.progress == before)
        m.failure = "deadlock: every thread waits at a barrier or shuffle that others never reach";
    }
    if (!m.failure.empty()) {
      machine = nullptr;
      throw std::runtime_error("block " + std::to_string(b) + ": " + m.failure);
    }
  }
  machine = nullptr;
  return {m.barriers, m.shuffles};
}

/// The 1-D launch: `grid` blocks of `block` threads.
inline Stats launch(unsigned grid, unsigned block, const std::function<void()> &kernel) {
  return launch(dim3{grid, 1, 1}, dim3{block, 1, 1}, kernel);
}

/// The running launch's dynamic shared memory.
template <typename T> T *dynamicShared() {
  return reinterpret_cast<T *>(machine->dynamicShared.data());
}

} // namespace sluice_emu

using sluice_emu::threadIdx;
using sluice_emu::blockIdx;
using sluice_emu::blockDim;
using sluice_emu::gridDim;

inline void __syncthreads() { sluice_emu::blockBarrier(); }
template <typename T> T atomicAdd(T *address, T value) {
  T old = *address;
  *address = old + value;
  return old;
}
inline int atomicCAS(int *address, int compare, int value) {
  int old = *address;
  if (old == compare)
    *address = value;
  return old;
}
#define SLUICE_EXTERN_SHARED(type, name) type *name = sluice_emu::dynamicShared<type>()
template <typename T> T __shfl_xor_sync(unsigned mask, T v, int lanes) {
  return sluice_emu::shuffle(mask, v, (sluice_emu::threadIdx.x % 32) ^ (unsigned)lanes);
}
template <typename T> T __shfl_down_sync(unsigned mask, T v, unsigned delta) {
  unsigned lane = sluice_emu::threadIdx.x % 32;
  return sluice_emu::shuffle(mask, v, lane + delta < 32 ? lane + delta : lane);
}

/// Vectors of N elements for 128-bit loads and stores (as sluice_gen/cuda.h).
template <typename T, int N> struct alignas(sizeof(T) * N) sluice_vec {
  T v[N];
};

#endif // SLUICE_TEST_UNIT_CUDAROWEMULATION_H
