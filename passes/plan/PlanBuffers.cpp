//===- PlanBuffers.cpp - arena offsets for every kernel result ------------===//
//
// The plan phase's memory planning: liveness over the kernel sequence, then
// first-fit placement in one arena (ArenaPlanner). Results the function
// returns are written into the caller's output buffers instead, which saves a
// copy per output.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/plan/ArenaPlanner.h"

#include "llvm/ADT/DenseMap.h"

namespace sluice {
#define GEN_PASS_DEF_PLANBUFFERSPASS
#include "passes/Passes.h.inc"
} // namespace sluice

using namespace mlir;
using namespace sluice;

namespace sluice {
int64_t storageBytes(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return -1;
  Type element = tensor.getElementType();
  int64_t width = element.isInteger(1) ? 1 : (element.getIntOrFloatBitWidth() + 7) / 8;
  return tensor.getNumElements() * width;
}
} // namespace sluice

namespace {

struct PlanBuffersPass
    : public ::sluice::impl::PlanBuffersPassBase<PlanBuffersPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    Block &block = func.getBody().front();
    auto ret = cast<func::ReturnOp>(block.getTerminator());

    // Dynamic inputs first: naming them is the useful error.
    auto inputNames = func->getAttrOfType<ArrayAttr>("sluice.input_names");
    for (BlockArgument arg : func.getArguments()) {
      auto type = dyn_cast<RankedTensorType>(arg.getType());
      if (type && type.hasStaticShape())
        continue;
      std::string name = "#" + std::to_string(arg.getArgNumber());
      if (inputNames && arg.getArgNumber() < inputNames.size())
        if (auto s = dyn_cast<StringAttr>(inputNames[arg.getArgNumber()]))
          name = s.str();
      std::string dims;
      if (type)
        for (int64_t d : type.getShape())
          dims += (dims.empty() ? "" : "x") + (ShapedType::isDynamic(d) ? std::string("?") : std::to_string(d));
      emitError(func.getLoc()) << "input '" << name << "' has dynamic dims (" << dims
                               << "): bundles need static shapes; bind them with --shape="
                               << name << "=...";
      return signalPassFailure();
    }

    llvm::DenseMap<Operation *, int64_t> step;
    SmallVector<KernelOp> kernels;
    for (Operation &op : block)
      if (auto kernel = dyn_cast<KernelOp>(op)) {
        step[kernel] = kernels.size();
        kernels.push_back(kernel);
      }

    // The first return of a kernel result writes it into that output.
    llvm::DenseMap<Value, int64_t> outputOf;
    for (auto [index, value] : llvm::enumerate(ret.getOperands()))
      if (value.getDefiningOp<KernelOp>() && !outputOf.count(value))
        outputOf[value] = index;

    std::vector<BufferLifetime> lifetimes;
    SmallVector<Value> arenaValues;
    for (KernelOp kernel : kernels)
      for (Value result : kernel.getResults()) {
        if (outputOf.count(result))
          continue;
        int64_t bytes = storageBytes(result.getType());
        if (bytes < 0) {
          kernel.emitError() << "cannot plan memory for a result of type "
                             << result.getType()
                             << ": code generation needs static shapes "
                                "(give input shapes with --shape; freeze shape-tensor inputs "
                                "with --bind)";
          return signalPassFailure();
        }
        int64_t last = step[kernel];
        for (Operation *user : result.getUsers())
          if (auto userKernel = dyn_cast<KernelOp>(user))
            last = std::max(last, step[userKernel]);
          else
            last = kernels.size(); // returned a second time: copied at the end
        lifetimes.push_back({bytes, step[kernel], last});
        arenaValues.push_back(result);
      }
    ArenaPlan plan = planArena(lifetimes);

    llvm::DenseMap<Value, int64_t> offsetOf;
    for (auto [value, offset] : llvm::zip(arenaValues, plan.offsets))
      offsetOf[value] = offset;
    OpBuilder builder(func.getContext());
    for (KernelOp kernel : kernels) {
      SmallVector<int64_t> offsets;
      for (Value result : kernel.getResults())
        offsets.push_back(outputOf.count(result) ? -(outputOf[result] + 1)
                                                 : offsetOf[result]);
      kernel.setArenaOffsetsAttr(builder.getDenseI64ArrayAttr(offsets));
    }
    func->setAttr("sluice.arena_bytes",
                  builder.getI64IntegerAttr(plan.arenaBytes));
  }
};

} // namespace
