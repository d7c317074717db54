// Timing for the stand-alone cpu micro-benchmarks (bench/cpu/*_bench.cpp):
// repetitions doubled until one sample takes over 20 ms, then the fastest
// of nine samples, in milliseconds per call. Included by path from the
// programs beside it, so their one-line build commands need no -I.
#ifndef SLUICE_BENCH_CPU_BENCH_TIMING_H
#define SLUICE_BENCH_CPU_BENCH_TIMING_H

#include <algorithm>
#include <chrono>

template <typename F> static double best_ms(F &&f) {
  int reps = 1;
  for (;;) {
    auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r)
      f();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s > 0.02 || reps > (1 << 16))
      break;
    reps *= 2;
  }
  double best = 1e30;
  for (int i = 0; i < 9; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r)
      f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
                                  .count() * 1e3 / reps);
  }
  return best;
}

#endif // SLUICE_BENCH_CPU_BENCH_TIMING_H
