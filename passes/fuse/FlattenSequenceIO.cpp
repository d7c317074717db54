//===- FlattenSequenceIO.cpp - sequence results as their element tensors --===//
//
// A bundle's inputs and outputs are tensors (the runtime's C ABI binds and
// reads flat buffers). By the fuse phase a sequence result whose length and
// element shapes are known is a sluice.sequence_construct of its elements
// (or a sluice.sequence_empty): this pass returns those elements instead,
// named NAME.0, NAME.1 ..., and records the grouping in
// `sluice.output_sequences`, which the bundle's manifest lists under
// "sequences" so that tools can give the sequence back. Sequence inputs were
// flattened in the simplify phase (sluice-specialize-shapes); one that is
// left was given no element shapes, which is the error here. A returned
// optional made by sluice.optional returns its value first (an absent one
// no output), recorded in `sluice.output_optionals`.
//
//===----------------------------------------------------------------------===//

#include "dialects/sluice/SluiceOps.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringSet.h"

namespace sluice {
#define GEN_PASS_DEF_FLATTENSEQUENCEIOPASS
#include "passes/Passes.h.inc"
} // namespace sluice

using namespace mlir;
using namespace sluice;

namespace {

/// The `i`th name of `func`'s `attr` ("output3" when absent).
std::string nameAt(func::FuncOp func, StringRef attr, unsigned i, StringRef prefix) {
  auto names = func->getAttrOfType<ArrayAttr>(attr);
  if (names && i < names.size())
    if (auto name = dyn_cast<StringAttr>(names[i]))
      return name.str();
  return (prefix + Twine(i)).str();
}

/// The element tensors of a returned sequence, when it is made in a form a
/// bundle can return: a construct of ranked tensors, or an empty sequence.
std::optional<SmallVector<Value>> elementsOf(Value sequence) {
  if (sequence.getDefiningOp<SequenceEmptyOp>())
    return SmallVector<Value>();
  auto construct = sequence.getDefiningOp<SequenceConstructOp>();
  if (!construct)
    return std::nullopt;
  for (Value element : construct.getInputs())
    if (!isa<RankedTensorType>(element.getType()))
      return std::nullopt;
  return SmallVector<Value>(construct.getInputs());
}

/// Returned optionals made by sluice.optional: a present one returns its
/// value (a tensor, or a sequence flattened below) under the optional's
/// name, an absent one no output; `sluice.output_optionals` records which.
LogicalResult unwrapOptionalOutputs(func::FuncOp func) {
  MLIRContext *context = func.getContext();
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  SmallVector<Value> results;
  SmallVector<Attribute> names, optionals;
  llvm::SetVector<Operation *> wrappers;
  for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
    std::string name = nameAt(func, "sluice.output_names", i, "output");
    auto wrap = value.getDefiningOp<OptionalOp>();
    if (!isa<OptionalType>(value.getType()) || !wrap) {
      results.push_back(value);
      names.push_back(StringAttr::get(context, name));
      continue;
    }
    wrappers.insert(wrap);
    bool present = wrap.getInput() != nullptr;
    if (present) {
      results.push_back(wrap.getInput());
      names.push_back(StringAttr::get(context, name));
    }
    optionals.push_back(DictionaryAttr::get(
        context, {NamedAttribute(StringAttr::get(context, "name"), StringAttr::get(context, name)),
                  NamedAttribute(StringAttr::get(context, "present"),
                                 BoolAttr::get(context, present))}));
  }
  if (optionals.empty())
    return success();
  ret->setOperands(results);
  for (Operation *op : wrappers)
    if (op->use_empty())
      op->erase();
  func->setAttr("sluice.output_names", ArrayAttr::get(context, names));
  func->setAttr("sluice.output_optionals", ArrayAttr::get(context, optionals));
  func.setFunctionType(
      FunctionType::get(context, func.getArgumentTypes(), ValueRange(results).getTypes()));
  return success();
}

struct FlattenSequenceIOPass
    : public sluice::impl::FlattenSequenceIOPassBase<FlattenSequenceIOPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    MLIRContext *context = func.getContext();
    for (BlockArgument arg : func.getArguments())
      if (isa<SequenceType>(arg.getType())) {
        std::string name = nameAt(func, "sluice.input_names", arg.getArgNumber(), "input");
        func.emitError("input '")
            << name
            << "' is a sequence: a bundle takes its elements as tensor inputs; give their "
               "shapes with --shape="
            << name << "=2x3,2x3 (one shape per element; " << name << "=empty for none)";
        return signalPassFailure();
      }

    for (BlockArgument arg : func.getArguments())
      if (isa<OptionalType>(arg.getType())) {
        std::string name = nameAt(func, "sluice.input_names", arg.getArgNumber(), "input");
        func.emitError("input '")
            << name << "' is optional: a bundle takes it present or absent; give --shape="
            << name << "=none (absent) or --shape=" << name << "=<the shape of its value>";
        return signalPassFailure();
      }
    if (failed(unwrapOptionalOutputs(func)))
      return signalPassFailure();
    auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
    SmallVector<Value> results;
    SmallVector<Attribute> names, sequences;
    llvm::StringSet<> taken;
    for (unsigned i = 0; i < ret.getNumOperands(); ++i)
      taken.insert(nameAt(func, "sluice.output_names", i, "output"));
    for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
      std::string name = nameAt(func, "sluice.output_names", i, "output");
      std::optional<SmallVector<Value>> elements;
      if (isa<SequenceType>(value.getType()))
        elements = elementsOf(value);
      if (!elements) {
        results.push_back(value);
        names.push_back(StringAttr::get(context, name));
        continue;
      }
      SmallVector<Attribute> elementNames;
      for (auto [k, element] : llvm::enumerate(*elements)) {
        std::string elementName = name + "." + std::to_string(k);
        if (taken.contains(elementName)) {
          func.emitError("sequence output '")
              << name << "': its element " << k << " would be output '" << elementName
              << "', which the model already has";
          return signalPassFailure();
        }
        results.push_back(element);
        elementNames.push_back(StringAttr::get(context, elementName));
      }
      names.append(elementNames.begin(), elementNames.end());
      sequences.push_back(DictionaryAttr::get(
          context,
          {NamedAttribute(StringAttr::get(context, "elements"),
                          ArrayAttr::get(context, elementNames)),
           NamedAttribute(StringAttr::get(context, "name"), StringAttr::get(context, name))}));
    }
    if (sequences.empty())
      return;

    llvm::SetVector<Operation *> makers;
    for (Value value : ret.getOperands())
      if (Operation *op = value.getDefiningOp();
          op && isa<SequenceConstructOp, SequenceEmptyOp>(op))
        makers.insert(op);
    ret->setOperands(results);
    // The constructs nothing else reads are dead now (they are pure).
    for (Operation *op : makers)
      if (op->use_empty())
        op->erase();
    func->setAttr("sluice.output_names", ArrayAttr::get(context, names));
    func->setAttr("sluice.output_sequences", ArrayAttr::get(context, sequences));
    func.setFunctionType(
        FunctionType::get(context, func.getArgumentTypes(), ValueRange(results).getTypes()));
  }
};

} // namespace
