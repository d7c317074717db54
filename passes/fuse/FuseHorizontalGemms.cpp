//===- FuseHorizontalGemms.cpp - one GEMM for matmuls sharing their LHS ---===//
//
// LLaMA-style separate q/k/v (or gate/up) projections read one activation
// with several constant weights of the same K: one matmul on the weights
// concatenated along N computes them all in one library call, and a split
// on the last axis gives back each projection. Constant bias adds ([Ni])
// that every branch has are concatenated as well.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"
#include "passes/fuse/FusionModel.h"

#include "lib/reference/Evaluator.h"

#include "mlir/IR/Builders.h"

#include <cstring>

namespace sluice {
#define GEN_PASS_DEF_FUSEHORIZONTALGEMMSPASS
#include "passes/Passes.h.inc"
} // namespace sluice

using namespace mlir;
using namespace sluice;

namespace {

/// The unit attribute sluice-sparsify puts on 2:4 GEMMs.
constexpr llvm::StringLiteral kSparsity24 = "sluice.sparsity_2_4";

/// The 2-D constant weight of `matmul`'s RHS, or null.
ConstantOp weightOf(MatMulOp matmul) {
  auto constant = matmul.getRhs().getDefiningOp<ConstantOp>();
  auto type = dyn_cast<RankedTensorType>(matmul.getRhs().getType());
  if (!constant || !type || type.getRank() != 2 || !type.hasStaticShape())
    return nullptr;
  return constant;
}

/// The constant [N] bias added to `matmul`'s result when that add is its only
/// user, or null.
AddOp biasAddOf(MatMulOp matmul, ConstantOp &bias) {
  Value result = matmul.getResult();
  if (!result.hasOneUse())
    return nullptr;
  auto add = dyn_cast<AddOp>(*result.getUsers().begin());
  if (!add)
    return nullptr;
  Value other = add.getLhs() == result ? add.getRhs() : add.getLhs();
  if (other == result)
    return nullptr;
  bias = other.getDefiningOp<ConstantOp>();
  auto type = dyn_cast<RankedTensorType>(other.getType());
  int64_t n = cast<RankedTensorType>(matmul.getRhs().getType()).getDimSize(1);
  if (!bias || !type || type.getRank() != 1 || type.getDimSize(0) != n ||
      add.getType() != matmul.getType())
    return nullptr;
  return add;
}

/// Concatenates 2-D (or 1-D) constants along their last axis.
FailureOr<ElementsAttr> concatLast(MLIRContext *context,
                                   ArrayRef<ConstantOp> parts,
                                   RankedTensorType type) {
  SmallVector<Tensor> tensors;
  for (ConstantOp part : parts) {
    auto t = tensorFromAttr(part.getValue());
    if (failed(t))
      return failure();
    tensors.push_back(*t);
  }
  int64_t rows = type.getRank() == 2 ? type.getDimSize(0) : 1;
  int64_t total = type.getShape().back();
  Tensor out(tensors.front().dtype(), std::vector<int64_t>(type.getShape()));
  size_t elem = dtypeSize(out.dtype());
  char *dst = static_cast<char *>(out.mutableData());
  int64_t col = 0;
  for (const Tensor &t : tensors) {
    int64_t n = t.shape().back();
    const char *src = static_cast<const char *>(t.rawData());
    for (int64_t r = 0; r < rows; ++r)
      std::memcpy(dst + (r * total + col) * elem, src + r * n * elem, n * elem);
    col += n;
  }
  return attrFromTensor(context, out, type);
}

struct FuseHorizontalGemmsPass
    : public ::sluice::impl::FuseHorizontalGemmsPassBase<
          FuseHorizontalGemmsPass> {
  using FuseHorizontalGemmsPassBase::FuseHorizontalGemmsPassBase;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    // Candidate sets: float matmuls with a constant 2-D weight, by LHS.
    llvm::MapVector<Value, SmallVector<MatMulOp>> byLhs;
    func.walk([&](MatMulOp matmul) {
      if (matmul->getBlock() != &func.getBody().front() ||
          fusion::kindOf(matmul) != fusion::Kind::Gemm)
        return;
      if (!weightOf(matmul)) {
        if (isa_and_nonnull<ConstantOp>(matmul.getRhs().getDefiningOp()))
          matmul->emitRemark() << "not fused horizontally: the weight is not a "
                                  "static 2-D constant";
        return;
      }
      byLhs[matmul.getLhs()].push_back(matmul);
    });
    for (auto &[lhs, matmuls] : byLhs) {
      if (matmuls.size() < 2)
        continue;
      // One K and one element type.
      auto firstType =
          cast<RankedTensorType>(matmuls.front().getRhs().getType());
      SmallVector<MatMulOp> same;
      for (MatMulOp m : matmuls) {
        auto t = cast<RankedTensorType>(m.getRhs().getType());
        // 2:4 GEMMs (sluice-sparsify) fuse only with each other: the
        // concatenated weight stays 2:4 along K, a mixed one would not be.
        if (t.getDimSize(0) == firstType.getDimSize(0) &&
            t.getElementType() == firstType.getElementType() &&
            m->hasAttr(kSparsity24) == matmuls.front()->hasAttr(kSparsity24))
          same.push_back(m);
        else
          m->emitRemark() << "not fused horizontally with "
                          << fusion::describeOp(matmuls.front())
                          << ": its weight has another K, element type or sparsity";
      }
      if (same.size() >= 2)
        fuse(same);
    }
  }

  void fuse(SmallVector<MatMulOp> matmuls) {
    MLIRContext *context = &getContext();
    MatMulOp first = matmuls.front();
    for (MatMulOp m : matmuls)
      if (m->isBeforeInBlock(first))
        first = m;
    auto weightType = cast<RankedTensorType>(first.getRhs().getType());
    SmallVector<ConstantOp> weights, biases;
    SmallVector<AddOp> adds;
    SmallVector<int64_t> sizes;
    int64_t total = 0;
    for (MatMulOp m : matmuls) {
      weights.push_back(weightOf(m));
      int64_t n = cast<RankedTensorType>(m.getRhs().getType()).getDimSize(1);
      sizes.push_back(n);
      total += n;
      ConstantOp bias;
      if (AddOp add = biasAddOf(m, bias)) {
        adds.push_back(add);
        biases.push_back(bias);
      }
    }
    bool withBias = adds.size() == matmuls.size();
    if (!withBias && !adds.empty())
      first->emitRemark() << "biases not fused horizontally: not every branch "
                             "adds a constant [N] bias";

    auto concatType = RankedTensorType::get({weightType.getDimSize(0), total},
                                            weightType.getElementType());
    auto weight = concatLast(context, weights, concatType);
    if (failed(weight)) {
      first->emitRemark() << "not fused horizontally: cannot read the weights";
      return;
    }
    OpBuilder builder(first);
    Location loc = first.getLoc();
    Value w = ConstantOp::create(builder, loc, *weight);
    auto outType = cast<RankedTensorType>(first.getType());
    SmallVector<int64_t> outShape(outType.getShape());
    outShape.back() = total;
    auto fusedType = RankedTensorType::get(outShape, outType.getElementType());
    Value b;
    if (withBias) {
      auto biasType = RankedTensorType::get({total}, outType.getElementType());
      auto biasAttr = concatLast(context, biases, biasType);
      if (succeeded(biasAttr))
        b = ConstantOp::create(builder, loc, *biasAttr);
      else
        withBias = false;
    }
    auto sizesType =
        RankedTensorType::get({(int64_t)sizes.size()}, builder.getI64Type());
    Value sizesValue = ConstantOp::create(
        builder, loc,
        DenseIntElementsAttr::get(sizesType, ArrayRef<int64_t>(sizes)));
    auto matmul =
        MatMulOp::create(builder, loc, fusedType, first.getLhs(), w);
    if (first->hasAttr(kSparsity24))
      matmul->setAttr(kSparsity24, builder.getUnitAttr());
    Value fused = matmul.getResult();
    if (withBias) {
      // The add keeps the first branch's operand order and location.
      AddOp add = adds.front();
      bool lhsIsMatmul = add.getLhs() == first.getResult();
      fused = AddOp::create(builder, add.getLoc(), fusedType,
                            lhsIsMatmul ? fused : b, lhsIsMatmul ? b : fused);
    }
    SmallVector<Type> pieceTypes;
    for (MatMulOp m : matmuls)
      pieceTypes.push_back(m.getType());
    auto split = SplitOp::create(builder, loc, pieceTypes, fused, sizesValue,
                                 builder.getI64IntegerAttr(-1),
                                 builder.getI64IntegerAttr(sizes.size()));
    std::string names;
    for (auto [i, m] : llvm::enumerate(matmuls)) {
      names += (i ? ", " : "") + fusion::describeOp(m);
      Operation *replaced =
          withBias ? adds[i].getOperation() : m.getOperation();
      replaced->getResult(0).replaceAllUsesWith(split->getResult(i));
    }
    matmul->emitRemark() << "fused " << matmuls.size()
                         << " matmuls sharing their LHS into one GEMM"
                         << (withBias ? " with their bias adds" : "") << ": "
                         << names;
    for (auto [i, m] : llvm::enumerate(matmuls)) {
      if (withBias)
        adds[i]->erase();
      m->erase();
    }
    // The separate weights and biases, unless something else reads them.
    for (ConstantOp c : llvm::concat<ConstantOp>(weights, biases))
      if (c->use_empty())
        c->erase();
  }
};

} // namespace
