//===- SluiceKernelOps.cpp - kernel groups --------------------------------===//

#include "dialects/sluice/KernelForms.h"
#include "dialects/sluice/SluiceOps.h"

#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
using namespace sluice;

/// `@name [form] [library "x"] (inputs : types) -> (types) {body} [attrs]`.
/// Without a form (hand-written IR) the kernel model's judge supplies it.
ParseResult KernelOp::parse(OpAsmParser &parser, OperationState &result) {
  Builder &b = parser.getBuilder();
  StringAttr name;
  if (parser.parseSymbolName(name))
    return failure();
  result.addAttribute(getSymNameAttrName(result.name), name);
  // `library` is both a form and the keyword before a library name: a
  // string right after it says which.
  std::optional<KernelForm> form;
  std::string library;
  bool hasLibrary = false;
  StringRef keyword;
  SMLoc formLoc = parser.getCurrentLocation();
  if (succeeded(parser.parseOptionalKeyword(&keyword))) {
    if (keyword == "library" && succeeded(parser.parseOptionalString(&library))) {
      hasLibrary = true;
    } else {
      form = symbolizeKernelForm(keyword);
      if (!form)
        return parser.emitError(formLoc, "unknown kernel form '") << keyword << "'";
      if (succeeded(parser.parseOptionalKeyword("library"))) {
        if (parser.parseString(&library))
          return failure();
        hasLibrary = true;
      }
    }
  }
  if (hasLibrary)
    result.addAttribute(getLibraryAttrName(result.name), b.getStringAttr(library));
  SmallVector<OpAsmParser::UnresolvedOperand> inputs;
  SmallVector<Type> inputTypes, outputTypes;
  SMLoc inputsLoc = parser.getCurrentLocation();
  if (parser.parseLParen())
    return failure();
  if (failed(parser.parseOptionalRParen())) {
    if (parser.parseOperandList(inputs) || parser.parseColonTypeList(inputTypes) ||
        parser.parseRParen())
      return failure();
  }
  if (parser.resolveOperands(inputs, inputTypes, inputsLoc, result.operands) ||
      parser.parseArrow() || parser.parseLParen())
    return failure();
  if (failed(parser.parseOptionalRParen()))
    if (parser.parseTypeList(outputTypes) || parser.parseRParen())
      return failure();
  result.addTypes(outputTypes);
  Region *body = result.addRegion();
  SMLoc bodyLoc = parser.getCurrentLocation();
  if (parser.parseRegion(*body) || parser.parseOptionalAttrDict(result.attributes))
    return failure();
  if (!form) {
    if (body->empty())
      return parser.emitError(bodyLoc, "kernel body is empty");
    std::string why;
    FailureOr<KernelForm> judged = kernel::judgeForm(body->front(), why);
    if (failed(judged))
      return parser.emitError(bodyLoc, "kernel body has no form: ") << why;
    form = *judged;
  }
  result.addAttribute(getFormAttrName(result.name), KernelFormAttr::get(b.getContext(), *form));
  return success();
}

void KernelOp::print(OpAsmPrinter &p) {
  p << ' ';
  p.printSymbolName(getSymName());
  p << ' ' << stringifyKernelForm(getForm());
  if (auto library = getLibrary())
    p << " library \"" << *library << '"';
  p << '(';
  if (!getInputs().empty()) {
    p << getInputs() << " : ";
    llvm::interleaveComma(getInputs().getTypes(), p);
  }
  p << ") -> (";
  llvm::interleaveComma(getResultTypes(), p);
  p << ") ";
  p.printRegion(getBody(), /*printEntryBlockArgs=*/true);
  p.printOptionalAttrDict((*this)->getAttrs(),
                          {getSymNameAttrName(), getFormAttrName(), getLibraryAttrName()});
}

/// The body takes the inputs and yields the results, type for type (code
/// generation maps block arguments and yielded values to buffers one to
/// one), and is a group of the declared form by the kernel model's judge.
LogicalResult KernelOp::verify() {
  // The name becomes a C++ function name in the generated model.cpp: one
  // from a hand-written .mlir must not be able to inject code there.
  StringRef name = getSymName();
  auto identifierChar = [](char c) { return llvm::isAlnum(c) || c == '_'; };
  if (name.empty() || llvm::isDigit(name.front()) || !llvm::all_of(name, identifierChar) ||
      name.size() > 200)
    return emitOpError() << "name '" << name
                         << "' is not a C identifier (letters, digits and '_', not starting "
                            "with a digit, at most 200 characters)";
  Block &body = getBody().front();
  if (body.getNumArguments() != getInputs().size())
    return emitOpError() << "body has " << body.getNumArguments()
                         << " arguments, expected one per input (" << getInputs().size() << ")";
  for (auto [index, pair] :
       llvm::enumerate(llvm::zip(body.getArgumentTypes(), getInputs().getTypes())))
    if (std::get<0>(pair) != std::get<1>(pair))
      return emitOpError() << "body argument " << index << " has type " << std::get<0>(pair)
                           << ", input has " << std::get<1>(pair);
  auto yield = dyn_cast<KernelYieldOp>(body.getTerminator());
  if (!yield)
    return emitOpError("body must end in sluice.kernel_yield");
  if (yield.getValues().getTypes() != getResultTypes())
    return emitOpError("yielded types must equal the kernel's result types");
  if (auto offsets = getArenaOffsets(); offsets && offsets->size() != getNumResults())
    return emitOpError() << "has " << offsets->size() << " arena offsets for "
                         << getNumResults() << " results";

  std::string why;
  FailureOr<KernelForm> judged = kernel::judgeForm(body, why);
  if (failed(judged))
    return emitOpError() << "body is no " << stringifyKernelForm(getForm()) << " group: " << why;
  if (*judged != getForm())
    return emitOpError() << "declares form '" << stringifyKernelForm(getForm())
                         << "' but its body is a '" << stringifyKernelForm(*judged) << "' group";
  Operation *anchor = kernel::anchorOf(*this);
  StringRef library;
  if (anchor)
    if (std::optional<StringRef> call = kernel::libraryFor(anchor))
      library = *call;
  bool takesLibrary = getForm() == KernelForm::gemm || getForm() == KernelForm::library ||
                      getForm() == KernelForm::collective;
  StringAttr declared = getLibraryAttr();
  if (takesLibrary && (!declared || declared.getValue() != library))
    return emitOpError() << "a " << stringifyKernelForm(getForm()) << " group calls library \""
                         << library << "\"";
  if (!takesLibrary && declared)
    return emitOpError() << "a " << stringifyKernelForm(getForm())
                         << " group is generated code, not library \"" << declared.getValue()
                         << "\"";
  return success();
}

#define GET_OP_CLASSES
#include "dialects/sluice/SluiceKernelOps.cpp.inc"
