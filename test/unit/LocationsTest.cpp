//===- LocationsTest.cpp - ONNX node locations in messages ----------------===//

#include "lib/support/Locations.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"

#include <gtest/gtest.h>

using namespace mlir;
using sluice::describeLocation;
using sluice::describeOp;
using sluice::nodeLocation;
using sluice::onnxNodeNames;

namespace {

TEST(LocationsTest, ImportedNode) {
  MLIRContext context;
  Location loc = nodeLocation(context, "m.onnx", "/mm", "MatMul", 13);
  EXPECT_EQ(describeLocation(loc), "m.onnx: node '/mm' (MatMul, opset 13)");
  EXPECT_EQ(onnxNodeNames(loc), std::vector<std::string>{"/mm"});
}

TEST(LocationsTest, FusedFromSeveralNodes) {
  // A recognized composite: the matched ops' locations fused, in order, one
  // node repeated.
  MLIRContext context;
  Location a = nodeLocation(context, "m.onnx", "/a", "Mul", 17);
  Location b = nodeLocation(context, "m.onnx", "/b", "Add", 17);
  Location loc = FusedLoc::get(&context, {a, b, a});
  EXPECT_EQ(describeLocation(loc), "m.onnx: node '/a' (and 1 more)");
  EXPECT_EQ(onnxNodeNames(loc), (std::vector<std::string>{"/a", "/b"}));
}

TEST(LocationsTest, OtherLocations) {
  MLIRContext context;
  EXPECT_EQ(describeLocation(FileLineColLoc::get(&context, "m.onnx", 0, 0)),
            "m.onnx");
  // Any other location (a .mlir file's, say) prints as MLIR writes it.
  EXPECT_EQ(describeLocation(FileLineColLoc::get(&context, "f.mlir", 3, 7)),
            "loc(\"f.mlir\":3:7)");
  EXPECT_EQ(describeLocation(UnknownLoc::get(&context)), "loc(unknown)");
  EXPECT_TRUE(onnxNodeNames(UnknownLoc::get(&context)).empty());
}

TEST(LocationsTest, DescribeOp) {
  MLIRContext context;
  OwningOpRef<ModuleOp> named =
      ModuleOp::create(nodeLocation(context, "m.onnx", "/x", "Relu", 14));
  EXPECT_EQ(describeOp(*named), "'builtin.module' (node '/x')");
  OwningOpRef<ModuleOp> unnamed = ModuleOp::create(UnknownLoc::get(&context));
  EXPECT_EQ(describeOp(*unnamed), "'builtin.module'");
}

} // namespace
