//===- Moe.cpp - when sluice.moe runs as its own kernel -------------------===//

#include "lib/kernel/Moe.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;

namespace sluice::kernel {

namespace {
bool isStaticOf(Value v, bool (*element)(Type)) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type && type.hasStaticShape() && element(type.getElementType());
}
bool isF32(Type t) { return t.isF32(); }
bool isIndex(Type t) { return t.isSignlessInteger(32) || t.isSignlessInteger(64); }
} // namespace

const char *moeKernelRefusal(MoeOp op) {
  for (Value v : {op.getTokens(), op.getW1(), op.getW2(), op.getOutput()})
    if (!isStaticOf(v, isF32))
      return "the tokens, weights or result are not static f32";
  if (op.getW3() && !isStaticOf(op.getW3(), isF32))
    return "the up projection's weight (w3) is not static f32";
  for (Value v : {op.getB1(), op.getB2(), op.getB3()})
    if (v && !isStaticOf(v, isF32))
      return "a bias is not static f32";
  bool hard = op.getGating() == "hard";
  if (!isStaticOf(op.getRouter(), hard ? isIndex : isF32))
    return hard ? "the expert index is not a static i32/i64 tensor"
                : "the router logits are not static f32";
  if (hard) {
    auto tokens = cast<RankedTensorType>(op.getTokens().getType());
    int64_t samples = cast<RankedTensorType>(op.getRouter().getType()).getNumElements();
    int64_t count = tokens.getNumElements() / std::max<int64_t>(tokens.getShape().back(), 1);
    if (samples == 0 || count % samples != 0)
      return "the tokens do not split evenly into the samples of the expert index";
  }
  return nullptr;
}

int moeActivationCode(MoeOp op) {
  StringRef name = op.getActivation();
  if (name == "relu")
    return 1;
  if (name == "gelu")
    return 2;
  if (name == "gelu_tanh")
    return 3;
  if (name == "silu")
    return 4;
  return 0;
}

int64_t moeLoadOffset(MoeOp op) {
  auto func = op->getParentOfType<func::FuncOp>();
  int64_t offset = 0;
  bool found = false;
  func.walk([&](MoeOp other) {
    if (other == op)
      found = true;
    if (!found)
      offset += int64_t(other.getExperts());
  });
  return offset;
}

} // namespace sluice::kernel
