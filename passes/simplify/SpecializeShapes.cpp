//===- SpecializeShapes.cpp - bind input shapes, make the graph static ----===//

#include "passes/Passes.h"

namespace sluice {
#define GEN_PASS_DEF_SPECIALIZESHAPESPASS
#include "passes/Passes.h.inc"
} // namespace sluice

using namespace mlir;
using namespace sluice;

FailureOr<std::vector<int64_t>> sluice::parseShape(StringRef text) {
  std::vector<int64_t> dims;
  text = text.trim();
  if (text.empty() || text == "scalar")
    return dims;
  SmallVector<StringRef> parts;
  text.split(parts, 'x');
  for (StringRef part : parts) {
    int64_t dim;
    if (part.trim().getAsInteger(10, dim) || dim < 0)
      return failure();
    dims.push_back(dim);
  }
  return dims;
}

namespace {

struct SpecializeShapesPass
    : public sluice::impl::SpecializeShapesPassBase<SpecializeShapesPass> {
  using SpecializeShapesPassBase::SpecializeShapesPassBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    auto names = func->getAttrOfType<ArrayAttr>("sluice.input_names");
    for (const std::string &spec : shapes) {
      auto [name, dimsText] = StringRef(spec).split('=');
      auto dims = parseShape(dimsText);
      if (failed(dims)) {
        func.emitError("bad shape '") << spec << "' (expected name=2x128)";
        return signalPassFailure();
      }
      std::optional<unsigned> index;
      for (unsigned i = 0; names && i < names.size(); ++i)
        if (cast<StringAttr>(names[i]).getValue() == name)
          index = i;
      if (!index) {
        func.emitError("no input named '") << name << "'";
        return signalPassFailure();
      }
      BlockArgument arg = func.getArgument(*index);
      auto type = cast<TensorType>(arg.getType());
      if (type.hasRank()) {
        if (type.getRank() != (int64_t)dims->size()) {
          func.emitError("shape for '") << name << "' has rank " << dims->size()
                                        << ", input has rank " << type.getRank();
          return signalPassFailure();
        }
        for (int64_t i = 0; i < type.getRank(); ++i)
          if (!type.isDynamicDim(i) && type.getDimSize(i) != (*dims)[i]) {
            func.emitError("shape for '") << name << "' sets dim " << i << " to "
                                          << (*dims)[i] << ", input fixes it to "
                                          << type.getDimSize(i);
            return signalPassFailure();
          }
      }
      arg.setType(RankedTensorType::get(*dims, type.getElementType()));
    }
    func.setFunctionType(FunctionType::get(
        func.getContext(), func.getBody().front().getArgumentTypes(),
        func.getResultTypes()));
    if (failed(propagateShapes(func, maxElements)))
      return signalPassFailure();
  }
};

} // namespace
