//===- Choices.h - the compile options' closed choices -----------*- C++ -*-===//
//
// Each option of sluice-compile that takes one of a fixed set of names
// (--target, --emit, --fusion, --precision, --quantize, --sparsity,
// --calibration-method, --accuracy-metric, --objective, --cpu-isa,
// --cpu-conv) is an enum here, with
// one table of its spellings: the CLI, the report, the compile cache's key
// and the pass options all read the names from it, and nothing compares
// option strings by hand.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_TOOLS_DRIVER_CHOICES_H
#define SLUICE_TOOLS_DRIVER_CHOICES_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>

namespace sluice {

/// Code generation target.
enum class Target { Cpu, Cuda };
/// What a compile writes: a bundle, or one of the --emit listings.
enum class Emit { Bundle, Mlir, Kernels, Source, Plan };
/// Which kernel groups the fuse phase grows.
enum class Fusion { None, Elementwise, All };
/// Storage precision of weights and activations (`--precision`).
enum class Precision { Fp32, Fp16, Bf16 };
/// `--quantize`: none, calibrated int8 or fp8, weight-only int8 or int4.
enum class Quantize { None, Int8, Fp8, W8A16, W4A16 };
/// `--sparsity`: none, or two of every four weights along K.
enum class Sparsity { None, TwoFour };
/// How calibration turns observed activations into ranges.
enum class CalibrationMethod { MinMax, Percentile, Entropy };
/// How the accuracy guards judge outputs against the uncompressed model.
enum class AccuracyMetric { Auto, RelL2, Top1Agreement };
/// What the automatic plan minimizes.
enum class Objective { Latency, Throughput };
/// The instruction set the cpu bundle's GEMM kernels are written for
/// (`--cpu-isa`; `native` on the command line names the host's).
enum class CpuIsa { Avx512, Avx2, Generic };
/// How the cpu target runs f32 convolutions (`--cpu-conv`).
enum class CpuConv { Onednn, OnednnNchw, Im2col };

/// One spelling of a choice. A value may have several (aliases); the first
/// listed is its name.
template <typename E> struct ChoiceSpelling {
  E value;
  const char *name;
};

/// The spellings of `E`, names first (one table per enum, Choices.cpp).
template <typename E> llvm::ArrayRef<ChoiceSpelling<E>> choiceSpellings();

/// The name of `value` ("cpu", "int8", "top1-agreement" ...).
template <typename E> const char *choiceName(E value) {
  for (const auto &spelling : choiceSpellings<E>())
    if (spelling.value == value)
      return spelling.name;
  return "";
}

/// The value spelled `text` (a name or an alias), if any.
template <typename E> std::optional<E> parseChoice(llvm::StringRef text) {
  for (const auto &spelling : choiceSpellings<E>())
    if (text == spelling.name)
      return spelling.value;
  return std::nullopt;
}

/// The option-string form of `--quantize` and `--sparsity` that the passes'
/// options take: "" for none, else the name.
std::string passOptionName(Quantize value);
std::string passOptionName(Sparsity value);

} // namespace sluice

#endif // SLUICE_TOOLS_DRIVER_CHOICES_H
