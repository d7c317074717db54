//===- ArenaPlannerTest.cpp - offsets from buffer lifetimes ---------------===//

#include "passes/plan/ArenaPlanner.h"

#include <gtest/gtest.h>

using namespace sluice;

namespace {

/// No two buffers live at a common step may overlap.
void expectNoOverlap(const std::vector<BufferLifetime> &buffers,
                     const ArenaPlan &plan) {
  for (size_t i = 0; i < buffers.size(); ++i)
    for (size_t j = i + 1; j < buffers.size(); ++j) {
      bool liveTogether = buffers[i].firstStep <= buffers[j].lastStep &&
                          buffers[j].firstStep <= buffers[i].lastStep;
      bool overlap = plan.offsets[i] < plan.offsets[j] + buffers[j].bytes &&
                     plan.offsets[j] < plan.offsets[i] + buffers[i].bytes;
      EXPECT_FALSE(liveTogether && overlap) << "buffers " << i << " and " << j;
    }
}

TEST(ArenaPlanner, ChainPingPongs) {
  std::vector<BufferLifetime> buffers = {
      {1000, 0, 1}, {1000, 1, 2}, {1000, 2, 3}, {1000, 3, 4}};
  ArenaPlan plan = planArena(buffers);
  EXPECT_EQ(plan.offsets, (std::vector<int64_t>{0, 1024, 0, 1024}));
  EXPECT_EQ(plan.arenaBytes, 2048);
  expectNoOverlap(buffers, plan);
}

TEST(ArenaPlanner, AlignsTo64) {
  std::vector<BufferLifetime> buffers = {{1, 0, 5}, {3, 1, 5}, {65, 2, 5}};
  ArenaPlan plan = planArena(buffers);
  EXPECT_EQ(plan.offsets, (std::vector<int64_t>{0, 64, 128}));
  EXPECT_EQ(plan.arenaBytes, 256);
}

TEST(ArenaPlanner, FirstFitFillsAGap) {
  // Buffer 1 dies at step 2, leaving a 128-byte hole between 0 and 2; a
  // 100-byte buffer born at step 3 fits there, a 200-byte one would not.
  std::vector<BufferLifetime> buffers = {
      {128, 0, 9}, {128, 1, 2}, {128, 2, 9}, {100, 3, 9}, {200, 4, 9}};
  ArenaPlan plan = planArena(buffers);
  EXPECT_EQ(plan.offsets[3], 128);
  EXPECT_EQ(plan.offsets[4], 384);
  expectNoOverlap(buffers, plan);
}

TEST(ArenaPlanner, ReadBuffersAreNotOverwrittenByTheStepsWrites) {
  // Step 1 reads buffer 0 (lastStep 1) and writes buffer 1: no sharing.
  std::vector<BufferLifetime> buffers = {{64, 0, 1}, {64, 1, 1}};
  ArenaPlan plan = planArena(buffers);
  EXPECT_NE(plan.offsets[0], plan.offsets[1]);
}

TEST(ArenaPlanner, ManyRandomLifetimesNeverOverlap) {
  std::vector<BufferLifetime> buffers;
  uint64_t state = 12345;
  auto next = [&] { return state = state * 6364136223846793005ull + 1442695040888963407ull; };
  for (int i = 0; i < 300; ++i) {
    int64_t first = (int64_t)(next() >> 40) % 100;
    buffers.push_back({(int64_t)(next() >> 40) % 5000 + 1, first,
                       first + (int64_t)(next() >> 40) % 20});
  }
  ArenaPlan plan = planArena(buffers);
  expectNoOverlap(buffers, plan);
  for (int64_t offset : plan.offsets)
    EXPECT_EQ(offset % 64, 0);
}

TEST(ArenaPlanner, EmptyPlan) {
  ArenaPlan plan = planArena({});
  EXPECT_EQ(plan.arenaBytes, 0);
  EXPECT_TRUE(plan.offsets.empty());
}

} // namespace
