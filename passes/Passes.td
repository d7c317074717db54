//===- Passes.td - sluice passes ---------------------------*- tablegen -*-===//
//
// Every pass of the compiler, grouped by phase (DESIGN.md), alphabetical
// within a group. Flags are prefixed `sluice-`; options live here.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_PASSES_TD
#define SLUICE_PASSES_TD

include "mlir/Pass/PassBase.td"

//===----------------------------------------------------------------------===//
// simplify
//===----------------------------------------------------------------------===//

def FoldConstantsPass : Pass<"sluice-fold-constants", "mlir::func::FuncOp"> {
  let summary = "Evaluates ops whose operands are all constants";
  let description = [{
    Runs the reference evaluator on every op whose operands are constants and
    replaces it with a `sluice.constant` (dense for small results, a
    dense_resource blob otherwise). This is what turns the
    Shape -> Gather -> Unsqueeze -> Concat -> Reshape chains of exporters into
    constants once shapes are static.
  }];
  let options = [
    Option<"maxElements", "max-elements", "int64_t", "int64_t(1) << 24",
           "Largest result (in elements) to fold">,
  ];
  let dependentDialects = ["sluice::SluiceDialect"];
}

def SpecializeShapesPass : Pass<"sluice-specialize-shapes", "mlir::func::FuncOp"> {
  let summary = "Binds input shapes and propagates static shapes through the graph";
  let description = [{
    Replaces the types of the named inputs (`shapes=name=2x128`; inputs are
    named by the function's `sluice.input_names`), then walks the function in
    order, folding all-constant ops with the evaluator and re-inferring every
    op's result types, so that shape subgraphs fold and the graph becomes
    static. The function's result types are updated to match.
  }];
  let options = [
    ListOption<"shapes", "shapes", "std::string",
               "Input shapes as name=DxDxD (rank 0: name=scalar)">,
    Option<"maxElements", "max-elements", "int64_t", "int64_t(1) << 24",
           "Largest result (in elements) to fold">,
  ];
  let dependentDialects = ["sluice::SluiceDialect"];
}

#endif // SLUICE_PASSES_TD
