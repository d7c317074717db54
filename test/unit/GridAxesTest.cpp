//===- GridAxesTest.cpp - which ranks share a grid axis's communicator ----===//
//
// runtime/core/GridAxes.h splits a context's communicator once per grid
// axis with collectives: the ranks that differ only in that axis's
// coordinate share a color, ranked by the coordinate. Checked here on a
// communicator that records the splits (no MPI).

#include "runtime/core/GridAxes.h"

#include <gtest/gtest.h>

#include <tuple>
#include <vector>

using sluice::runtime::Manifest;
using sluice::runtime::RankComm;
using sluice::runtime::splitGridAxes;

namespace {

/// Records every splitAxis call as (axis, color, key).
class RecordingComm final : public RankComm {
public:
  const SluiceComm *comm() const override { return &table; }
  const std::string &transport() const override { return name; }
  bool splitAxis(int32_t axis, int32_t color, int32_t key, uint64_t,
                 std::string &) override {
    splits.emplace_back(axis, color, key);
    return true;
  }
  std::vector<std::tuple<int32_t, int32_t, int32_t>> splits;

private:
  SluiceComm table = {};
  std::string name = "recording";
};

Manifest gridOf(std::vector<int64_t> grid, std::vector<std::string> axes) {
  Manifest manifest;
  manifest.parallel.grid = std::move(grid);
  manifest.parallel.axes = std::move(axes);
  return manifest;
}

} // namespace

TEST(GridAxes, TensorParallelInsidePipelineStages) {
  // --tp=2 --pp=2: ranks 0, 1 are stage 0, ranks 2, 3 stage 1.
  Manifest manifest = gridOf({2, 2}, {"pp", "tp"});
  std::vector<std::tuple<int32_t, int32_t, int32_t>> expected = {
      {SLUICE_AXIS_TP, 0, 0}, {SLUICE_AXIS_TP, 0, 1}, {SLUICE_AXIS_TP, 2, 0},
      {SLUICE_AXIS_TP, 2, 1}};
  for (int32_t rank = 0; rank < 4; ++rank) {
    RecordingComm comm;
    std::string error;
    ASSERT_TRUE(splitGridAxes(manifest, rank, comm, error)) << error;
    ASSERT_EQ(comm.splits.size(), 1u) << "rank " << rank;
    EXPECT_EQ(comm.splits[0], expected[rank]) << "rank " << rank;
  }
}

TEST(GridAxes, ThreeStagesOfFour) {
  // --tp=4 --pp=3: rank 9 is stage 2, tp index 1; its group starts at 8.
  Manifest manifest = gridOf({3, 4}, {"pp", "tp"});
  RecordingComm comm;
  std::string error;
  ASSERT_TRUE(splitGridAxes(manifest, 9, comm, error)) << error;
  ASSERT_EQ(comm.splits.size(), 1u);
  EXPECT_EQ(comm.splits[0], std::make_tuple(int32_t(SLUICE_AXIS_TP), 8, 1));
}

TEST(GridAxes, OneAxisSpansEveryRank) {
  // --tp=2 alone, or --pp=2 alone: the job's communicator serves.
  for (Manifest manifest : {gridOf({2}, {"tp"}), gridOf({2}, {"pp"})}) {
    RecordingComm comm;
    std::string error;
    ASSERT_TRUE(splitGridAxes(manifest, 1, comm, error)) << error;
    EXPECT_TRUE(comm.splits.empty());
  }
}

TEST(GridAxes, TransportWithoutAxes) {
  // A transport that cannot split says which axis it could not make.
  class Plain final : public RankComm {
  public:
    const SluiceComm *comm() const override { return &table; }
    const std::string &transport() const override { return name; }
    SluiceComm table = {};
    std::string name = "plain";
  } comm;
  std::string error;
  EXPECT_FALSE(splitGridAxes(gridOf({2, 2}, {"pp", "tp"}), 0, comm, error));
  EXPECT_EQ(error, "creating the 'tp' axis communicator: grid axes are not supported by the "
                   "plain transport");
}
