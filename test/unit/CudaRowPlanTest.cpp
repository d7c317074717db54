//===- CudaRowPlanTest.cpp - launch geometry of cuda row groups -----------===//
//
// The plan step of the cuda row emitter (codegen/cuda/groups/Row.cpp) picks
// the vector width and the team that owns a row from the row's length
// alone; these are the numbers the generated kernel is specialized on
// (team, vectors per lane in registers, block size), so they are pinned
// here case by case: sub-warp, warp, block, widened for registers,
// streamed, and reductions (always streamed).
//
//===----------------------------------------------------------------------===//

#include "codegen/cuda/CudaGroups.h"

#include <gtest/gtest.h>

using namespace sluice::codegen;

namespace {

void expectLaunch(const RowLaunch &l, int64_t team, int64_t perLane, int64_t block,
                  int64_t rowsPerBlock) {
  EXPECT_EQ(l.team, team);
  EXPECT_EQ(l.perLane, perLane);
  EXPECT_EQ(l.block, block);
  EXPECT_EQ(l.rowsPerBlock, rowsPerBlock);
}

TEST(CudaRowPlan, VectorWidthDividesTheRow) {
  EXPECT_EQ(rowVectorWidth(40, 4), 4); // f32: 16 bytes
  EXPECT_EQ(rowVectorWidth(6, 4), 2);  // halved until it divides 6
  EXPECT_EQ(rowVectorWidth(7, 2), 1);  // odd rows move element by element
  EXPECT_EQ(rowVectorWidth(64, 8), 2); // f64
  EXPECT_EQ(rowVectorWidth(64, 2), 8); // f16
}

TEST(CudaRowPlan, TeamGrowsWithTheRow) {
  // 10 vectors: a team of 4 lanes, 3 vectors each in registers, 32 rows a block.
  expectLaunch(planRowLaunch(10, 4, false, false), 4, 3, 128, 32);
  // 300 vectors: a warp.
  expectLaunch(planRowLaunch(300, 4, false, false), 32, 10, 128, 4);
  // 1000 vectors: a block of 128.
  expectLaunch(planRowLaunch(1000, 4, false, false), 128, 8, 128, 1);
}

TEST(CudaRowPlan, RegistersWidenTheTeamThenStream) {
  // f64 has half the registers: a warp would hold 64 values a lane, so the
  // team doubles to 64 (32 values a lane).
  expectLaunch(planRowLaunch(500, 4, false, true), 64, 8, 128, 2);
  // A row too long for 1024 lanes' registers streams.
  expectLaunch(planRowLaunch(100000, 4, false, false), 1024, 0, 1024, 1);
}

TEST(CudaRowPlan, ReductionsStream) {
  expectLaunch(planRowLaunch(10, 4, true, false), 4, 0, 128, 32);
  expectLaunch(planRowLaunch(500, 4, true, true), 32, 0, 128, 4);
}

} // namespace
