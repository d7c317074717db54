//===- SpecializeShapes.cpp - bind input shapes, make the graph static ----===//
//
// Binds the shapes given for inputs (`shapes=NAME=2x128`), then propagates
// static shapes through the function. A sequence input's shape lists its
// elements (`NAME=3x4,3x4,2x4`, `NAME=empty`): bundles are static tensor
// programs, so the sequence is replaced by one tensor argument per element,
// NAME.0, NAME.1 ..., and a sluice.sequence_construct of them (a
// sluice.sequence_empty for none) at the entry takes the old argument's
// uses. `sluice.input_sequences` records which arguments form which
// sequence, for the bundle's manifest. An optional input is given present
// (`NAME=` the shape of its value) or absent (`NAME=none`):
// `sluice.input_optionals` records which.
//
//===----------------------------------------------------------------------===//

#include "dialects/sluice/SluiceOps.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

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

FailureOr<std::vector<std::vector<int64_t>>> sluice::parseShapeList(StringRef text) {
  std::vector<std::vector<int64_t>> shapes;
  text = text.trim();
  if (text == "empty")
    return shapes;
  SmallVector<StringRef> parts;
  text.split(parts, ',');
  for (StringRef part : parts) {
    // An empty part is a typo ("3x4,,2x4"), not a rank-0 element: those are
    // spelled "scalar".
    auto dims = part.trim().empty() ? FailureOr<std::vector<int64_t>>(failure()) : parseShape(part);
    if (failed(dims))
      return failure();
    shapes.push_back(*dims);
  }
  return shapes;
}

namespace {

/// Checks `dims` against `type` (a ranked type's rank and static dims);
/// `what` names the shape in the message ("shape for 'x'").
LogicalResult checkShape(func::FuncOp func, const Twine &what, ArrayRef<int64_t> dims,
                         TensorType type) {
  if (!type.hasRank())
    return success();
  if (type.getRank() != (int64_t)dims.size())
    return func.emitError(what) << " has rank " << dims.size() << ", input has rank "
                                << type.getRank();
  for (int64_t i = 0; i < type.getRank(); ++i)
    if (!type.isDynamicDim(i) && type.getDimSize(i) != dims[i])
      return func.emitError(what) << " sets dim " << i << " to " << dims[i]
                                  << ", input fixes it to " << type.getDimSize(i);
  return success();
}

/// Replaces the sequence argument `index` of `func` (input `name`) by one
/// tensor argument per shape of `shapes` and records them in
/// `sluice.input_names` and `sluice.input_sequences`.
LogicalResult flattenSequenceInput(func::FuncOp func, unsigned index, StringRef name,
                                   const std::vector<std::vector<int64_t>> &shapes) {
  MLIRContext *context = func.getContext();
  BlockArgument arg = func.getArgument(index);
  TensorType elementType = cast<SequenceType>(arg.getType()).getElementType();
  auto names = func->getAttrOfType<ArrayAttr>("sluice.input_names");
  SmallVector<Attribute> inputNames(names.begin(), names.end());
  SmallVector<Attribute> elementNames;
  for (size_t i = 0; i < shapes.size(); ++i) {
    std::string element = (name + "." + Twine(i)).str();
    for (Attribute existing : inputNames)
      if (cast<StringAttr>(existing).getValue() == element)
        return func.emitError("sequence input '")
               << name << "': its element " << i << " would be input '" << element
               << "', which the model already has";
    if (failed(checkShape(func, "shape of element " + Twine(i) + " of sequence '" + name + "'",
                          shapes[i], elementType)))
      return failure();
    elementNames.push_back(StringAttr::get(context, element));
  }
  // The new arguments go where the sequence was, so that the inputs keep
  // the graph's order; the old one is erased last.
  SmallVector<Value> elements;
  for (size_t i = 0; i < shapes.size(); ++i) {
    auto type = RankedTensorType::get(shapes[i], elementType.getElementType());
    if (failed(func.insertArgument(index + i, type, {}, arg.getLoc())))
      return failure();
    elements.push_back(func.getArgument(index + i));
  }
  OpBuilder builder(context);
  builder.setInsertionPointToStart(&func.getBody().front());
  Value sequence = shapes.empty()
                       ? SequenceEmptyOp::create(builder, arg.getLoc(),
                                                 TypeAttr::get(elementType.getElementType()))
                             .getResult()
                       : SequenceConstructOp::create(builder, arg.getLoc(), elements).getResult();
  arg.replaceAllUsesWith(sequence);
  if (failed(func.eraseArgument(index + shapes.size())))
    return failure();

  inputNames.erase(inputNames.begin() + index);
  inputNames.insert(inputNames.begin() + index, elementNames.begin(), elementNames.end());
  func->setAttr("sluice.input_names", ArrayAttr::get(context, inputNames));
  SmallVector<Attribute> sequences;
  if (auto recorded = func->getAttrOfType<ArrayAttr>("sluice.input_sequences"))
    sequences.assign(recorded.begin(), recorded.end());
  sequences.push_back(DictionaryAttr::get(
      context,
      {NamedAttribute(StringAttr::get(context, "elements"), ArrayAttr::get(context, elementNames)),
       NamedAttribute(StringAttr::get(context, "name"), StringAttr::get(context, name))}));
  func->setAttr("sluice.input_sequences", ArrayAttr::get(context, sequences));
  return success();
}

/// Records an optional input in `sluice.input_optionals`: its name, whether
/// the bundle takes it present, and the inputs holding its value (itself,
/// or a sequence's elements).
void recordOptional(func::FuncOp func, StringRef name, bool present,
                    ArrayRef<Attribute> elements) {
  MLIRContext *context = func.getContext();
  SmallVector<Attribute> optionals;
  if (auto recorded = func->getAttrOfType<ArrayAttr>("sluice.input_optionals"))
    optionals.assign(recorded.begin(), recorded.end());
  optionals.push_back(DictionaryAttr::get(
      context,
      {NamedAttribute(StringAttr::get(context, "elements"), ArrayAttr::get(context, elements)),
       NamedAttribute(StringAttr::get(context, "name"), StringAttr::get(context, name)),
       NamedAttribute(StringAttr::get(context, "present"), BoolAttr::get(context, present))}));
  func->setAttr("sluice.input_optionals", ArrayAttr::get(context, optionals));
}

/// An optional input (`NAME=none`: absent; otherwise the shape of the value
/// it holds): bundles are static, so whether it is present is fixed at
/// compile time. Absent, the argument goes and an empty sluice.optional
/// takes its uses; present, the argument becomes the value (a tensor, or a
/// sequence flattened by the caller) wrapped by a sluice.optional.
LogicalResult specializeOptional(func::FuncOp func, unsigned index, StringRef name,
                                 StringRef dimsText) {
  BlockArgument arg = func.getArgument(index);
  Type element = cast<OptionalType>(arg.getType()).getElementType();
  OpBuilder builder(func.getContext());
  builder.setInsertionPointToStart(&func.getBody().front());
  if (dimsText.trim() == "none") {
    Value empty = OptionalOp::create(builder, arg.getLoc(), Value(), TypeAttr::get(element));
    arg.replaceAllUsesWith(empty);
    if (failed(func.eraseArgument(index)))
      return failure();
    auto names = func->getAttrOfType<ArrayAttr>("sluice.input_names");
    SmallVector<Attribute> inputNames(names.begin(), names.end());
    inputNames.erase(inputNames.begin() + index);
    func->setAttr("sluice.input_names", ArrayAttr::get(func.getContext(), inputNames));
    recordOptional(func, name, false, {});
    return success();
  }
  arg.setType(element);
  auto wrap = OptionalOp::create(builder, arg.getLoc(), arg, TypeAttr());
  arg.replaceAllUsesExcept(wrap, wrap);
  return success();
}

struct SpecializeShapesPass
    : public sluice::impl::SpecializeShapesPassBase<SpecializeShapesPass> {
  using SpecializeShapesPassBase::SpecializeShapesPassBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    auto names = func->getAttrOfType<ArrayAttr>("sluice.input_names");
    ArrayAttr graphNames = names;
    for (const std::string &spec : shapes) {
      auto [name, dimsText] = StringRef(spec).split('=');
      std::optional<unsigned> index;
      for (unsigned i = 0; names && i < names.size(); ++i)
        if (cast<StringAttr>(names[i]).getValue() == name)
          index = i;
      if (!index) {
        func.emitError("no input named '") << name << "'";
        return signalPassFailure();
      }
      BlockArgument arg = func.getArgument(*index);
      // An optional present binds its value's shape as below, then records
      // which inputs hold it.
      bool optional = isa<OptionalType>(arg.getType());
      if (optional) {
        bool present = dimsText.trim() != "none";
        if (failed(specializeOptional(func, *index, name, dimsText)))
          return signalPassFailure();
        if (!present) {
          names = func->getAttrOfType<ArrayAttr>("sluice.input_names");
          continue;
        }
        arg = func.getArgument(*index);
      }
      if (isa<SequenceType>(arg.getType())) {
        auto elementShapes = parseShapeList(dimsText);
        if (failed(elementShapes)) {
          func.emitError("bad shape '")
              << spec << "' for " << (optional ? "optional " : "") << "sequence input '" << name
              << "' (expected " << (optional ? "none, or " : "")
              << "its element shapes: name=3x4,3x4,2x4, name=scalar or name=empty)";
          return signalPassFailure();
        }
        if (failed(flattenSequenceInput(func, *index, name, *elementShapes)))
          return signalPassFailure();
        names = func->getAttrOfType<ArrayAttr>("sluice.input_names");
        if (optional)
          recordOptional(func, name, true,
                         SmallVector<Attribute>(names.getValue().slice(*index,
                                                                       elementShapes->size())));
        continue;
      }
      if (optional)
        recordOptional(func, name, true, {names[*index]});
      auto type = dyn_cast<TensorType>(arg.getType());
      if (!type) {
        func.emitError("shape for '") << name << "' does not apply: the input is " << arg.getType()
                                      << ", not a tensor or a sequence";
        return signalPassFailure();
      }
      if (dimsText.contains(',') || dimsText.trim() == "empty") {
        func.emitError("shape for '") << name << "' lists a sequence's element shapes, but input '"
                                      << name << "' is a tensor (expected name=2x128)";
        return signalPassFailure();
      }
      auto dims = parseShape(dimsText);
      if (failed(dims)) {
        func.emitError("bad shape '") << spec << "' (expected name=2x128)";
        return signalPassFailure();
      }
      if (failed(checkShape(func, "shape for '" + name + "'", *dims, type)))
        return signalPassFailure();
      arg.setType(RankedTensorType::get(*dims, type.getElementType()));
    }
    // The sequences in the graph's input order, whatever order the shapes
    // came in (the manifest lists them so).
    if (auto sequences = func->getAttrOfType<ArrayAttr>("sluice.input_sequences");
        sequences && graphNames) {
      auto position = [&](Attribute sequence) {
        Attribute name = cast<DictionaryAttr>(sequence).get("name");
        return llvm::find(graphNames, name) - graphNames.begin();
      };
      SmallVector<Attribute> ordered(sequences.begin(), sequences.end());
      llvm::stable_sort(ordered,
                        [&](Attribute a, Attribute b) { return position(a) < position(b); });
      func->setAttr("sluice.input_sequences", ArrayAttr::get(func.getContext(), ordered));
    }
    func.setFunctionType(FunctionType::get(
        func.getContext(), func.getBody().front().getArgumentTypes(),
        func.getResultTypes()));
    if (failed(propagateShapes(func, maxElements)))
      return signalPassFailure();
  }
};

} // namespace
