//===- ArenaPlanner.cpp - offsets in one arena from buffer lifetimes ------===//

#include "passes/plan/ArenaPlanner.h"

#include <algorithm>
#include <numeric>

namespace sluice {

ArenaPlan planArena(const std::vector<BufferLifetime> &buffers,
                    int64_t alignment) {
  ArenaPlan plan;
  plan.offsets.assign(buffers.size(), 0);
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return buffers[a].firstStep < buffers[b].firstStep;
  });
  auto roundUp = [&](int64_t v) {
    return (v + alignment - 1) / alignment * alignment;
  };
  // Placed buffers still live, sorted by offset.
  struct Live {
    int64_t offset, end, lastStep;
  };
  std::vector<Live> live;
  for (size_t index : order) {
    const BufferLifetime &buffer = buffers[index];
    live.erase(std::remove_if(live.begin(), live.end(),
                              [&](const Live &l) {
                                return l.lastStep < buffer.firstStep;
                              }),
               live.end());
    int64_t size = roundUp(std::max<int64_t>(buffer.bytes, 1));
    int64_t offset = 0;
    for (const Live &l : live) {
      if (l.offset - offset >= size)
        break;
      offset = std::max(offset, roundUp(l.end));
    }
    plan.offsets[index] = offset;
    Live placed{offset, offset + size, buffer.lastStep};
    live.insert(std::upper_bound(live.begin(), live.end(), placed,
                                 [](const Live &a, const Live &b) {
                                   return a.offset < b.offset;
                                 }),
                placed);
    plan.arenaBytes = std::max(plan.arenaBytes, offset + size);
  }
  return plan;
}

} // namespace sluice
