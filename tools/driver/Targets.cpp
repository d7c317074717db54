//===- Targets.cpp - the cpu and cuda backends of the compile session -----===//

#include "tools/driver/Targets.h"

#include "codegen/cpu/CpuEmitter.h"
#include "codegen/cuda/CudaEmitter.h"

#include "llvm/Support/raw_ostream.h"

namespace sluice {
namespace {

class CpuBackend final : public TargetBackend {
public:
  mlir::LogicalResult emit(mlir::ModuleOp module) override {
    auto emitted = codegen::emitCpuModel(module);
    if (mlir::failed(emitted))
      return mlir::failure();
    model = std::move(*emitted);
    return mlir::success();
  }
  std::vector<std::string> remarks() const override { return {}; }
  bool writeBundle(const codegen::BundleOptions &options, std::string &error,
                   double *seconds) override {
    return codegen::writeCpuBundle(model, options, error, seconds);
  }
  void printSource(llvm::raw_ostream &out) const override { out << model.source; }
  CompileReport::Program reportProgram() const override {
    CompileReport::Program program;
    program.kernels = model.kernels;
    program.libraryCalls = model.libraryCalls;
    program.facts = &model;
    program.steps = &model.steps;
    program.targetStrings = {{"cpu_gemm", model.gemmPath}, {"cpu_conv", model.convPath}};
    program.targetCounts = {{"cpu_conv_post_ops", model.convPostOps},
                            {"cpu_conv_blocked_activations", model.convBlockedActivations},
                            {"cpu_gemm_packed_weights", model.gemmPackedWeights}};
    return program;
  }

private:
  codegen::CpuModel model;
};

class CudaBackend final : public TargetBackend {
public:
  mlir::LogicalResult emit(mlir::ModuleOp module) override {
    auto emitted = codegen::emitCudaModel(module);
    if (mlir::failed(emitted))
      return mlir::failure();
    model = std::move(*emitted);
    return mlir::success();
  }
  std::vector<std::string> remarks() const override { return model.remarks; }
  bool writeBundle(const codegen::BundleOptions &options, std::string &error,
                   double *seconds) override {
    return codegen::writeCudaBundle(model, options, error, seconds);
  }
  void printSource(llvm::raw_ostream &out) const override {
    out << model.deviceSource;
    if (!model.hostSource.empty())
      out << "\n// ===== host.cpp =====\n" << model.hostSource;
  }
  CompileReport::Program reportProgram() const override {
    CompileReport::Program program;
    program.kernels = model.kernels;
    program.libraryCalls = model.libraryCalls;
    program.facts = &model;
    program.steps = &model.steps;
    program.targetCounts = {{"host_steps", model.hostSteps},
                            {"host_arena_bytes", model.hostArenaBytes}};
    return program;
  }
  std::string bundleNote() const override {
    if (!model.hostSteps)
      return "";
    return std::to_string(model.hostSteps) + " of " + std::to_string(model.steps.size()) +
           " steps run on the host (no cuda kernel; --report lists them under remarks)";
  }

private:
  codegen::CudaModel model;
};

} // namespace

std::unique_ptr<TargetBackend> makeTargetBackend(Target target) {
  if (target == Target::Cuda)
    return std::make_unique<CudaBackend>();
  return std::make_unique<CpuBackend>();
}

mlir::LogicalResult CpuVariantsWriter::emit(mlir::ModuleOp module, size_t index) {
  auto emitted = codegen::emitCpuModel(module, &shared, codegen::variantEntry(index));
  if (mlir::failed(emitted))
    return mlir::failure();
  models.push_back(std::move(*emitted));
  return mlir::success();
}

bool CpuVariantsWriter::writeBundle(const codegen::BundleOptions &options, std::string &error,
                                    double *seconds) {
  std::vector<const codegen::CpuModel *> pointers;
  for (const auto &m : models)
    pointers.push_back(&m);
  return codegen::writeCpuVariantsBundle(pointers, shared, options, error, seconds);
}

CompileReport::Variants CpuVariantsWriter::reportVariants() const {
  CompileReport::Variants variants;
  variants.weightsBytes = (int64_t)shared.bytes.size();
  variants.weightsBytesUnshared = shared.unsharedBytes;
  for (const auto &m : models)
    variants.variants.push_back({m.entry, m.inputs, m.kernels, m.libraryCalls, m.arenaBytes});
  return variants;
}

} // namespace sluice
