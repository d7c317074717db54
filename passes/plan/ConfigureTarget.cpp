//===- ConfigureTarget.cpp - the cpu kernels' choices recorded in the IR --===//
//
// sluice-configure-target (Passes.td): the module attributes
// `sluice.cpu_config = {isa, conv, packed_weights}` that the cpu kernel
// emitters read (codegen/cpu/CpuEmitter.h, cpuTargetConfig) and
// `sluice.cuda_config = {cusparselt_header, cusparselt_lib_dir}` that the
// cuda 2:4 GEMMs read, instead of the environment, the file system or the
// compiling host. The driver fills the options from sluice-compile's
// --cpu-isa, --cpu-conv, --cpu-packed-weights and --cusparselt-dir.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/STLExtras.h"

namespace sluice {
#define GEN_PASS_DEF_CONFIGURETARGETPASS
#include "passes/Passes.h.inc"
} // namespace sluice

using namespace mlir;

namespace {

struct ConfigureTarget : public sluice::impl::ConfigureTargetPassBase<ConfigureTarget> {
  using ConfigureTargetPassBase::ConfigureTargetPassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    const char *isas[] = {"avx512", "avx2", "generic"};
    const char *convs[] = {"onednn", "onednn-nchw", "im2col"};
    if (!llvm::is_contained(isas, llvm::StringRef(isa))) {
      module.emitError() << "sluice-configure-target: unknown isa '" << isa
                         << "' (avx512, avx2, generic)";
      return signalPassFailure();
    }
    if (!llvm::is_contained(convs, llvm::StringRef(conv))) {
      module.emitError() << "sluice-configure-target: unknown conv '" << conv
                         << "' (onednn, onednn-nchw, im2col)";
      return signalPassFailure();
    }
    Builder b(module.getContext());
    module->setAttr(
        "sluice.cpu_config",
        b.getDictionaryAttr({b.getNamedAttr("conv", b.getStringAttr(conv)),
                             b.getNamedAttr("isa", b.getStringAttr(isa)),
                             b.getNamedAttr("packed_weights", b.getBoolAttr(packedWeights))}));
    if (!cusparseltHeader.empty())
      module->setAttr(
          "sluice.cuda_config",
          b.getDictionaryAttr(
              {b.getNamedAttr("cusparselt_header", b.getStringAttr(cusparseltHeader)),
               b.getNamedAttr("cusparselt_lib_dir", b.getStringAttr(cusparseltLibDir))}));
  }
};

} // namespace
