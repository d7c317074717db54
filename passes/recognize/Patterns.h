//===- Patterns.h - rewrite patterns of the recognize phase ------*- C++ -*-===//
//
// Each recognizer is a set of rewrite patterns, kept apart from the pass that
// applies it, so that another pass (or a test) can combine them. The passes
// apply them with `applyRecognizePatterns`: the greedy driver, configured to
// do nothing but the patterns (see there).
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_PASSES_RECOGNIZE_PATTERNS_H
#define SLUICE_PASSES_RECOGNIZE_PATTERNS_H

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <string>

namespace sluice {

/// sluice.layer_norm and sluice.rms_norm from their reduction chains
/// (RecognizeNorms.cpp).
void populateRecognizeNormsPatterns(mlir::RewritePatternSet &patterns);

/// sluice.gelu and sluice.silu from their elementwise chains
/// (RecognizeActivations.cpp).
void populateRecognizeActivationsPatterns(mlir::RewritePatternSet &patterns);

/// sluice.attention from MatMul/scale/mask/Softmax/MatMul chains
/// (RecognizeAttention.cpp).
void populateRecognizeAttentionPatterns(mlir::RewritePatternSet &patterns);

/// sluice.moe from a learned top-k router and its experts, by structure,
/// or from expert weights gathered by a per-sample index (RecognizeMoe.cpp);
/// adds the MoE form patterns too.
void populateRecognizeMoePatterns(mlir::RewritePatternSet &patterns);

/// The rewrites that bring the written forms of a mixture-of-experts block
/// to the one the MoE matcher reads: einsum as matmul, softmax over the
/// top-k logits as normalized top-k probabilities, per-expert chains
/// stacked, dense and scatter combines as gathers (MoeForms.cpp).
void populateMoeFormPatterns(mlir::RewritePatternSet &patterns);

/// Batched Linear layers without their flatten/unflatten reshapes
/// (RecognizeLinear.cpp).
void populateRecognizeLinearPatterns(mlir::RewritePatternSet &patterns);

/// Each composite named in `ops` ("sluice.attention" ...; every composite
/// when empty) written back as primitive ops (DecomposeComposites.cpp);
/// `keepMoeKernels`: not the sluice.moe ops the MoE kernel runs.
void populateDecomposeCompositesPatterns(mlir::RewritePatternSet &patterns,
                                         llvm::ArrayRef<std::string> ops = {},
                                         bool keepMoeKernels = false);

/// Applies `patterns` to the regions of `op` with the greedy driver, top-down
/// (program order, as the passes walked before they were patterns), with
/// folding, constant CSE and region simplification off: these passes change
/// only what their patterns match, and the canonicalizer that follows them in
/// the pipeline does the rest. (The driver still erases ops it finds dead,
/// as that canonicalizer would.)
inline void applyRecognizePatterns(mlir::Operation *op,
                                   mlir::RewritePatternSet &&patterns) {
  mlir::GreedyRewriteConfig config;
  config.setUseTopDownTraversal(true)
      .enableFolding(false)
      .enableConstantCSE(false)
      .setRegionSimplificationLevel(mlir::GreedySimplifyRegionLevel::Disabled);
  // Every rewrite removes the op it started from and no chain of rewrites
  // builds that op again (the MoE forms build ops the MoE matcher starts
  // from, never the other way), so the driver converges; a failure here
  // would only say that it stopped at its iteration limit, with valid IR.
  (void)mlir::applyPatternsGreedily(op, std::move(patterns), config);
}

/// A recognize pass: applies the patterns `Populate` adds, nothing else.
/// `Base` is the pass's generated base (`impl::RecognizeNormsPassBase`).
/// Each pass is then one line:
///   struct RecognizeNormsPass : RecognizePass<RecognizeNormsPass,
///       impl::RecognizeNormsPassBase, populateRecognizeNormsPatterns> {};
template <typename Derived, template <typename> class Base,
          void (*Populate)(mlir::RewritePatternSet &)>
struct RecognizePass : public Base<Derived> {
  void runOnOperation() override {
    mlir::RewritePatternSet patterns(&this->getContext());
    Populate(patterns);
    applyRecognizePatterns(this->getOperation(), std::move(patterns));
  }
};

} // namespace sluice

#endif // SLUICE_PASSES_RECOGNIZE_PATTERNS_H
