//===- Choices.cpp - the spellings of the compile options' choices --------===//

#include "tools/driver/Choices.h"

namespace sluice {

#define SLUICE_CHOICES(E, ...)                                                                     \
  template <> llvm::ArrayRef<ChoiceSpelling<E>> choiceSpellings<E>() {                             \
    static const ChoiceSpelling<E> table[] = {__VA_ARGS__};                                        \
    return table;                                                                                  \
  }

SLUICE_CHOICES(Target, {Target::Cpu, "cpu"}, {Target::Cuda, "cuda"})
SLUICE_CHOICES(Emit, {Emit::Bundle, "bundle"}, {Emit::Mlir, "mlir"}, {Emit::Kernels, "kernels"},
               {Emit::Source, "source"}, {Emit::Plan, "plan"})
SLUICE_CHOICES(Fusion, {Fusion::None, "none"}, {Fusion::Elementwise, "elementwise"},
               {Fusion::All, "all"})
// The canonical names; the CLI's aliases (float16, half, ...) go through
// parsePrecision (passes/Passes.h), which sluice-opt's pipelines use too.
SLUICE_CHOICES(Precision, {Precision::Fp32, "fp32"}, {Precision::Fp16, "fp16"},
               {Precision::Bf16, "bf16"})
SLUICE_CHOICES(Quantize, {Quantize::None, "none"}, {Quantize::Int8, "int8"}, {Quantize::Fp8, "fp8"},
               {Quantize::W8A16, "w8a16"}, {Quantize::W4A16, "w4a16"})
SLUICE_CHOICES(Sparsity, {Sparsity::None, "none"}, {Sparsity::TwoFour, "2:4"})
SLUICE_CHOICES(CalibrationMethod, {CalibrationMethod::MinMax, "minmax"},
               {CalibrationMethod::Percentile, "percentile"},
               {CalibrationMethod::Entropy, "entropy"})
SLUICE_CHOICES(AccuracyMetric, {AccuracyMetric::Auto, "auto"}, {AccuracyMetric::RelL2, "rel-l2"},
               {AccuracyMetric::Top1Agreement, "top1-agreement"})
SLUICE_CHOICES(Objective, {Objective::Latency, "latency"}, {Objective::Throughput, "throughput"})

SLUICE_CHOICES(CpuIsa, {CpuIsa::Avx512, "avx512"}, {CpuIsa::Avx2, "avx2"},
               {CpuIsa::Generic, "generic"})
SLUICE_CHOICES(CpuConv, {CpuConv::Onednn, "onednn"}, {CpuConv::OnednnNchw, "onednn-nchw"},
               {CpuConv::Im2col, "im2col"})

#undef SLUICE_CHOICES

std::string passOptionName(Quantize value) {
  return value == Quantize::None ? "" : choiceName(value);
}

std::string passOptionName(Sparsity value) {
  return value == Sparsity::None ? "" : choiceName(value);
}

} // namespace sluice
