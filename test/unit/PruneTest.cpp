//===- PruneTest.cpp - structured pruning arithmetic ----------------------===//
//
// The arithmetic of sluice-prune (passes/compress/PruneGroups.h) apart from
// the IR: how many units a fraction removes, the rounding of kept counts to
// whole vectors, how a unit axis maps through a reshape (heads split out
// of a projection, merged back, channels flattened into GEMM rows), and the
// trial weight blobs the guard releases.
//
//===----------------------------------------------------------------------===//

#include "passes/compress/PruneGroups.h"

#include "dialects/sluice/SluiceOps.h"

#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"

#include <gtest/gtest.h>

using namespace sluice;
using namespace sluice::prune;

namespace {

TEST(PruneCounts, FractionsRoundToUnits) {
  EXPECT_EQ(removedAt(256, 0.5), 128);
  EXPECT_EQ(removedAt(4, 0.25), 1);
  EXPECT_EQ(removedAt(3, 0.5), 2); // 1.5 rounds up
  EXPECT_EQ(removedAt(12, 0.25), 3);
  EXPECT_EQ(removedAt(10, 0.0), 0);
}

TEST(PruneCounts, KeptRoundsUpToVectorsWhereItStillRemoves) {
  EXPECT_EQ(keptAfter(256, 128, 1), 128);
  EXPECT_EQ(keptAfter(100, 25, 1), 80); // 75 -> 80 elements
  EXPECT_EQ(keptAfter(32, 8, 1), 24);
  // 12 of 16 cannot round to 16 (nothing would go): 12 stays.
  EXPECT_EQ(keptAfter(16, 4, 1), 12);
  EXPECT_EQ(keptAfter(64, 6, 1), 58);
  // Heads of 16: every count is whole vectors.
  EXPECT_EQ(keptAfter(4, 1, 16), 3);
  // Heads of 4: 3 heads are 12 elements, 4 would be all of them.
  EXPECT_EQ(keptAfter(4, 1, 4), 3);
  EXPECT_EQ(keptAfter(6, 3, 4), 4); // 12 -> 16 elements
  // At least one unit stays, and rounding never gives back more than half
  // of what goes (1 -> 8 of 10 would).
  EXPECT_EQ(keptAfter(10, 10, 1), 1);
  EXPECT_EQ(keptAfter(10, 12, 1), 1);
  EXPECT_EQ(keptAfter(12, 11, 1), 1);
  EXPECT_EQ(keptAfter(20, 14, 1), 8); // 6 -> 8 gives back 2 of 14
}

TEST(PruneReshape, ColumnsCoarsenToHeadsThenSplit) {
  int64_t axis = -1, inner = -1, rows = -1;
  // [B, S, 64] -> [B, S, 4, 16]: single columns cannot follow; 4 heads can.
  EXPECT_FALSE(mapReshapeAxis({50, 8, 64}, {50, 8, 4, 16}, 2, 1, axis, inner, rows));
  EXPECT_EQ(rows, 4);
  ASSERT_TRUE(mapReshapeAxis({50, 8, 64}, {50, 8, 4, 16}, 2, 16, axis, inner, rows));
  EXPECT_EQ(axis, 2);
  EXPECT_EQ(inner, 1);
  // And back: one head is 16 columns of the merged axis.
  ASSERT_TRUE(mapReshapeAxis({50, 8, 4, 16}, {50, 8, 64}, 2, 1, axis, inner, rows));
  EXPECT_EQ(axis, 2);
  EXPECT_EQ(inner, 16);
}

TEST(PruneReshape, FlattenedChannelsAreRowsOfSixteen) {
  int64_t axis = -1, inner = -1, rows = -1;
  ASSERT_TRUE(mapReshapeAxis({50, 32, 4, 4}, {50, 512}, 1, 1, axis, inner, rows));
  EXPECT_EQ(axis, 1);
  EXPECT_EQ(inner, 16);
  ASSERT_TRUE(mapReshapeAxis({50, 512}, {50, 32, 4, 4}, 1, 16, axis, inner, rows));
  EXPECT_EQ(axis, 1);
  EXPECT_EQ(inner, 1);
}

TEST(PruneReshape, UnitDimsAndMixedAxes) {
  int64_t axis = -1, inner = -1, rows = -1;
  // A size-1 dim before the axis disappears.
  ASSERT_TRUE(mapReshapeAxis({2, 1, 64}, {2, 64}, 2, 1, axis, inner, rows));
  EXPECT_EQ(axis, 1);
  EXPECT_EQ(inner, 1);
  // The head dim merged behind the heads: its units interleave.
  EXPECT_FALSE(mapReshapeAxis({50, 4, 16}, {50, 64}, 2, 1, axis, inner, rows));
  EXPECT_EQ(rows, 0);
  // The batch merged into the unit axis.
  EXPECT_FALSE(mapReshapeAxis({2, 8, 64}, {16, 64}, 1, 1, axis, inner, rows));
  EXPECT_EQ(rows, 0);
}

TEST(PruneScratch, TrialBlobsAreReleased) {
  mlir::MLIRContext context;
  context.loadDialect<SluiceDialect>();
  mlir::OpBuilder b(&context);
  auto module = mlir::ModuleOp::create(b.getUnknownLoc());
  b.setInsertionPointToEnd(module.getBody());
  Tensor weight(DType::F32, {64, 64});
  weight.setDouble(5, 2.5);
  mlir::DenseResourceElementsAttr attr;
  {
    compress::ScratchBlobs scratch;
    mlir::Value c = compress::makeConstant(b, b.getUnknownLoc(), weight, &scratch);
    attr = mlir::cast<mlir::DenseResourceElementsAttr>(c.getDefiningOp<ConstantOp>().getValue());
    ASSERT_NE(attr.getRawHandle().getBlob(), nullptr);
    EXPECT_EQ(attr.getRawHandle().getBlob()->getData().size(), 64u * 64u * 4u);
    c.getDefiningOp()->erase();
  }
  EXPECT_TRUE(attr.getRawHandle().getBlob()->getData().empty());
  module->erase();
}

} // namespace
