//===- MoeShape.cpp - the sizes a MoE kernel is generated with ------------===//

#include "codegen/common/MoeShape.h"

#include "codegen/common/Format.h"
#include "codegen/common/ModelFacts.h"
#include "lib/kernel/Moe.h"

#include "llvm/ADT/StringExtras.h"

#include <algorithm>

using namespace mlir;

namespace sluice::codegen {

std::string moeShapeDecl(MoeOp op) {
  ArrayRef<int64_t> w1 = shapeOf(op.getW1()), w2 = shapeOf(op.getW2());
  int64_t d = w1[1], tokens = product(shapeOf(op.getTokens())) / std::max<int64_t>(d, 1);
  bool hard = op.getGating() == "hard";
  // Tokens per router entry: a sample's sequence for hard gating.
  int64_t perSample = hard ? tokens / product(shapeOf(op.getRouter())) : 1;
  return "static const sluice_moe_shape shape = {" +
         llvm::join(std::vector<std::string>{cInt64(tokens), cInt64(d), cInt64(w1[2]),
                                             cInt64(w2[2]), cInt64(op.getExperts()), cInt64(w1[0]),
                                             cInt64(op.getTopK()), cInt64(perSample),
                                             hard ? "true" : "false",
                                             op.getNormalize() ? "true" : "false",
                                             std::to_string(kernel::moeActivationCode(op))},
                    ", ") +
         "};";
}

} // namespace sluice::codegen
