//===- sluice-run.cpp - run, check and time a model -----------------------===//
//
//   sluice-run MODEL.onnx --reference [INPUT ...] [--expect OUTPUT ...]
//              [--rtol=1e-3 --atol=1e-7] [--iters=N --warmup=W]
//              [--save-outputs=DIR] [--random-inputs] [--shape=NAME=2x128]
//
// Inputs and expected outputs are ONNX TensorProto .pb or NumPy .npy files
// (SequenceProto / OptionalProto .pb where the model takes or makes those),
// positional in the graph's order or NAME=FILE. Exits 0 only when every
// expected output matches within tolerance (|got - want| <= atol + rtol*|want|,
// the ONNX backend tests' rule), 1 on a mismatch, 2 on any other error.
//
//===----------------------------------------------------------------------===//

#include "lib/onnx/Importer.h"
#include "lib/pipeline/Pipeline.h"
#include "dialects/sluice/SluiceOps.h"
#include "lib/reference/Evaluator.h"
#include "lib/support/TensorFiles.h"
#include "tools/common/ToolSupport.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>

using namespace mlir;

namespace {

const char *kUsage = R"(usage: sluice-run MODEL.onnx --reference [INPUT ...] [options]

Runs a model on the reference evaluator, checks and times it.

  INPUT                 .pb (ONNX TensorProto) or .npy file, in the graph's
                        input order, or NAME=FILE
  --expect OUTPUT ...   expected outputs (.pb/.npy, positional or NAME=FILE);
                        exit 0 only if all match within tolerance
  --rtol=R --atol=A     tolerances (default 1e-3 and 1e-7, as the ONNX
                        backend tests): |got - want| <= A + R * |want|
  --random-inputs       generate inputs that are not given (needs static
                        shapes, see --shape)
  --shape=NAME=2x128    bind an input's shape (repeatable)
  --iters=N --warmup=W  time N runs after W warm-up runs; print median, p90
  --save-outputs=DIR    write each output as DIR/<name>.npy (a sequence as
                        DIR/<name>_0.npy, <name>_1.npy ...)
  --reference           run MODEL.onnx on the reference evaluator
  -h, --help            this help

Exit status: 0 all outputs match (or nothing to check), 1 mismatch, 2 error.
)";

struct Options {
  std::string model;
  bool reference = false;
  std::vector<std::string> inputs, expects;
  double rtol = 1e-3, atol = 1e-7;
  bool randomInputs = false;
  int iters = 0, warmup = 0;
  std::string saveOutputs;
  std::map<std::string, std::vector<int64_t>> shapes;
};

[[noreturn]] void die(const std::string &message) {
  sluice::tools::die("sluice-run", message);
}

double parseNumber(const std::string &flag, const std::string &value) {
  char *end = nullptr;
  double v = std::strtod(value.c_str(), &end);
  if (value.empty() || *end)
    die("bad value '" + value + "' for " + flag);
  return v;
}

Options parseArgs(int argc, char **argv) {
  Options o;
  bool inExpect = false;
  sluice::tools::ArgReader args("sluice-run", argc, argv);
  while (args.next()) {
    const std::string &arg = args.arg();
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (arg == "--reference") {
      o.reference = true;
    } else if (arg == "--expect") {
      inExpect = true;
    } else if (arg == "--random-inputs") {
      o.randomInputs = true;
    } else if (args.is("--rtol")) {
      o.rtol = parseNumber("--rtol", args.flagValue("--rtol"));
    } else if (args.is("--atol")) {
      o.atol = parseNumber("--atol", args.flagValue("--atol"));
    } else if (args.is("--iters")) {
      o.iters = (int)parseNumber("--iters", args.flagValue("--iters"));
    } else if (args.is("--warmup")) {
      o.warmup = (int)parseNumber("--warmup", args.flagValue("--warmup"));
    } else if (args.is("--save-outputs")) {
      o.saveOutputs = args.flagValue("--save-outputs");
    } else if (args.is("--shape")) {
      std::string error;
      if (!sluice::parseShapeOption(args.flagValue("--shape"), o.shapes, error))
        die(error);
    } else if (arg.rfind("--", 0) == 0) {
      die("unknown option '" + arg + "' (see --help)");
    } else if (o.model.empty()) {
      o.model = arg;
    } else if (inExpect) {
      o.expects.push_back(arg);
    } else {
      o.inputs.push_back(arg);
    }
  }
  if (o.model.empty())
    die("no model given (see --help)");
  if (!o.reference) {
    if (llvm::sys::path::extension(o.model) == ".onnx" ||
        llvm::sys::path::extension(o.model) == ".onnxtxt")
      die(o.model + ": ONNX models run on the reference evaluator: add --reference");
    die(o.model + ": compiled bundles are produced by sluice-compile, which "
                  "this build can only run up to the simplify phase; use "
                  "MODEL.onnx --reference");
  }
  return o;
}

/// Splits NAME=FILE (a name may not contain '/'; a path may contain '=').
std::pair<std::string, std::string> splitNamed(const std::string &arg) {
  size_t eq = arg.find('=');
  if (eq == std::string::npos || arg.find('/') < eq)
    return {"", arg};
  return {arg.substr(0, eq), arg.substr(eq + 1)};
}

/// The kind of runtime value a graph input or output of `type` carries.
sluice::RuntimeValue::Kind kindOf(Type type) {
  if (isa<sluice::SequenceType>(type))
    return sluice::RuntimeValue::Kind::Sequence;
  if (isa<sluice::OptionalType>(type))
    return sluice::RuntimeValue::Kind::Optional;
  return sluice::RuntimeValue::Kind::Tensor;
}

/// Reads values given positionally or by name into slots of `names`; each
/// file is read as the kind its slot's type says (tensor, sequence, optional).
std::vector<std::optional<sluice::RuntimeValue>>
readValues(const std::vector<std::string> &args,
           const std::vector<std::string> &names, TypeRange types,
           const char *what) {
  std::vector<std::optional<sluice::RuntimeValue>> slots(names.size());
  size_t position = 0;
  for (const std::string &arg : args) {
    auto [name, file] = splitNamed(arg);
    size_t index;
    if (name.empty()) {
      index = position++;
      if (index >= names.size())
        die(file + ": more " + what + "s given than the model has (" +
            std::to_string(names.size()) + ")");
    } else {
      auto it = std::find(names.begin(), names.end(), name);
      if (it == names.end())
        die(file + ": the model has no " + what + " named '" + name + "'");
      index = it - names.begin();
    }
    sluice::RuntimeValue value;
    std::string error;
    if (!sluice::readValueFile(file, kindOf(types[index]), value, error))
      die(error);
    slots[index] = std::move(value);
  }
  return slots;
}

/// ONNX 1.12's backend data stores bfloat16 tensors as uint16 bit patterns:
/// read those as bfloat16 where the model says bfloat16.
void reinterpretBf16(std::optional<sluice::RuntimeValue> &value, Type expected) {
  if (!value || !value->isTensor())
    return;
  sluice::Tensor &tensor = value->tensor();
  if (expected.isBF16() && tensor.dtype() == sluice::DType::U16)
    tensor = sluice::Tensor::alias(sluice::DType::BF16, tensor.shape(),
                                   tensor.rawData(),
                                   std::make_shared<sluice::Tensor>(tensor));
}

std::vector<std::string> namesOf(func::FuncOp func, const char *attr) {
  std::vector<std::string> names;
  if (auto array = func->getAttrOfType<ArrayAttr>(attr))
    for (Attribute a : array)
      names.push_back(cast<StringAttr>(a).str());
  return names;
}

sluice::Tensor randomTensor(sluice::DType dtype, const std::vector<int64_t> &shape,
                            std::mt19937 &rng) {
  sluice::Tensor t(dtype, shape);
  std::uniform_real_distribution<double> real(-1.0, 1.0);
  std::uniform_int_distribution<int> integer(0, 9);
  for (int64_t i = 0; i < t.numElements(); ++i) {
    if (sluice::isFloatDType(dtype))
      t.setDouble(i, real(rng));
    else
      t.setInt(i, dtype == sluice::DType::Bool ? integer(rng) % 2 : integer(rng));
  }
  return t;
}

/// Compares one output; prints its errors; returns true on a match.
bool compareOutput(const std::string &name, const sluice::Tensor &got,
                   const sluice::Tensor &want, double rtol, double atol) {
  if (got.shape() != want.shape() || got.dtype() != want.dtype()) {
    std::printf("output '%s': got %s, expected %s: MISMATCH\n", name.c_str(),
                got.describe().c_str(), want.describe().c_str());
    return false;
  }
  if (got.dtype() == sluice::DType::String) {
    // Text has no tolerance: elements match exactly or not at all.
    int64_t bad = 0;
    for (int64_t i = 0; i < got.numElements(); ++i)
      bad += got.getString(i) != want.getString(i);
    std::printf("output '%s' %s: %s\n", name.c_str(), got.describe().c_str(),
                bad ? "MISMATCH" : "ok");
    if (bad)
      std::printf("  %lld of %lld strings differ\n", (long long)bad,
                  (long long)got.numElements());
    return bad == 0;
  }
  double maxAbs = 0, maxRel = 0;
  int64_t bad = 0;
  for (int64_t i = 0; i < got.numElements(); ++i) {
    double g = got.getDouble(i), w = want.getDouble(i);
    if (std::isnan(g) && std::isnan(w))
      continue;
    if (std::isinf(g) && std::isinf(w) && (g > 0) == (w > 0))
      continue;
    double diff = std::fabs(g - w);
    if (std::isnan(diff))
      diff = INFINITY;
    maxAbs = std::max(maxAbs, diff);
    if (w != 0)
      maxRel = std::max(maxRel, diff / std::fabs(w));
    if (!(diff <= atol + rtol * std::fabs(w)))
      ++bad;
  }
  std::printf("output '%s' %s: max abs err %.3g, max rel err %.3g: %s\n",
              name.c_str(), got.describe().c_str(), maxAbs, maxRel,
              bad ? "MISMATCH" : "ok");
  if (bad)
    std::printf("  %lld of %lld elements outside atol %.3g + rtol %.3g\n",
                (long long)bad, (long long)got.numElements(), atol, rtol);
  return bad == 0;
}

/// Compares one output of any kind: a sequence element by element (each
/// printed as NAME[i]), an optional by presence and then its value.
bool compareValue(const std::string &name, const sluice::RuntimeValue &got,
                  const sluice::RuntimeValue &want, double rtol, double atol) {
  if (got.kind() != want.kind()) {
    std::printf("output '%s': got %s, expected %s: MISMATCH\n", name.c_str(),
                got.describe().c_str(), want.describe().c_str());
    return false;
  }
  if (got.isTensor())
    return compareOutput(name, got.tensor(), want.tensor(), rtol, atol);
  if (got.isOptional()) {
    if (got.hasValue() != want.hasValue()) {
      std::printf("output '%s': got %s, expected %s: MISMATCH\n", name.c_str(),
                  got.describe().c_str(), want.describe().c_str());
      return false;
    }
    if (!got.hasValue()) {
      std::printf("output '%s' optional(none): ok\n", name.c_str());
      return true;
    }
    return compareValue(name, got.value(), want.value(), rtol, atol);
  }
  if (got.elements().size() != want.elements().size()) {
    std::printf("output '%s': got a sequence of %zu elements, expected %zu: MISMATCH\n",
                name.c_str(), got.elements().size(), want.elements().size());
    return false;
  }
  bool match = true;
  for (size_t i = 0; i < got.elements().size(); ++i)
    match &= compareOutput(name + "[" + std::to_string(i) + "]", got.elements()[i],
                           want.elements()[i], rtol, atol);
  if (got.elements().empty())
    std::printf("output '%s' empty sequence: ok\n", name.c_str());
  return match;
}

std::string safeFileName(const std::string &name) {
  std::string s;
  for (char c : name)
    s += (std::isalnum((unsigned char)c) || c == '-' || c == '_' || c == '.') ? c : '_';
  return s.empty() ? "output" : s;
}

} // namespace

int main(int argc, char **argv) {
  Options options = parseArgs(argc, argv);
  MLIRContext context;
  context.disableMultithreading();
  sluice::CompilerOptions compilerOptions;
  compilerOptions.inputShapes = options.shapes;
  std::string error;
  auto module = sluice::compileModel(context, options.model, compilerOptions,
                                     sluice::Phase::Import, error);
  if (!module)
    die(error);
  auto func = cast<func::FuncOp>(module->getBody()->front());
  std::vector<std::string> inputNames = namesOf(func, "sluice.input_names");
  std::vector<std::string> outputNames = namesOf(func, "sluice.output_names");

  // Bind inputs: check dtypes and declared dims, then specialize shapes.
  auto given = readValues(options.inputs, inputNames,
                          func.getFunctionType().getInputs(), "input");
  std::mt19937 rng(0);
  std::vector<sluice::RuntimeValue> inputs;
  for (size_t i = 0; i < inputNames.size(); ++i) {
    Type argType = func.getArgument(i).getType();
    if (!isa<TensorType>(argType)) {
      // Sequences and optionals: no generation, no shape specialization (the
      // evaluator checks element types as it goes).
      if (!given[i])
        die(options.model + ": input '" + inputNames[i] + "' is " +
            (isa<sluice::SequenceType>(argType) ? "a sequence" : "an optional") +
            "; pass it as a .pb file (--random-inputs makes tensors only)");
      inputs.push_back(*given[i]);
      continue;
    }
    auto type = cast<TensorType>(argType);
    auto dtype = sluice::dtypeFromType(type.getElementType());
    reinterpretBf16(given[i], type.getElementType());
    if (!given[i]) {
      if (!options.randomInputs)
        die(options.model + ": input '" + inputNames[i] +
            "' not given (pass a file, or --random-inputs)");
      if (!type.hasStaticShape())
        die(options.model + ": input '" + inputNames[i] +
            "' has a dynamic shape; bind it with --shape to generate it");
      given[i] = sluice::RuntimeValue(randomTensor(
          *dtype, std::vector<int64_t>(type.getShape().begin(), type.getShape().end()),
          rng));
    }
    const sluice::Tensor &t = given[i]->tensor();
    if (t.dtype() != *dtype)
      die(options.model + ": input '" + inputNames[i] + "' expects element type " +
          sluice::dtypeName(*dtype) + ", got " + t.describe());
    if (type.hasRank()) {
      bool ok = type.getRank() == t.rank();
      for (int64_t d = 0; ok && d < type.getRank(); ++d)
        ok = type.isDynamicDim(d) || type.getDimSize(d) == t.dim(d);
      if (!ok) {
        std::string declared;
        for (int64_t d = 0; d < type.getRank(); ++d)
          declared += (d ? "x" : "") + (type.isDynamicDim(d)
                                            ? std::string("?")
                                            : std::to_string(type.getDimSize(d)));
        die(options.model + ": input '" + inputNames[i] + "' expects shape [" +
            declared + "], got " + t.describe());
      }
    }
    func.getArgument(i).setType(RankedTensorType::get(t.shape(), type.getElementType()));
    inputs.push_back(t);
  }
  func.setFunctionType(FunctionType::get(&context, func.getBody().front().getArgumentTypes(),
                                         func.getResultTypes()));
  if (failed(sluice::runPhases(*module, compilerOptions, sluice::Phase::Import,
                               sluice::Phase::Simplify, error)))
    die(error);

  // Evaluate (with diagnostics rendered against ONNX nodes).
  std::string evalError;
  ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error)
      evalError += sluice::onnx_import::describeLocation(diag.getLocation()) +
                   ": " + diag.str() + "\n";
    return success();
  });
  auto outputs = sluice::evaluate(func, inputs);
  if (failed(outputs))
    die(evalError.empty() ? options.model + ": evaluation failed" : evalError);

  if (options.iters > 0) {
    for (int i = 0; i < options.warmup; ++i)
      (void)sluice::evaluate(func, inputs);
    std::vector<double> times;
    for (int i = 0; i < options.iters; ++i) {
      auto start = std::chrono::steady_clock::now();
      (void)sluice::evaluate(func, inputs);
      times.push_back(std::chrono::duration<double, std::milli>(
                          std::chrono::steady_clock::now() - start)
                          .count());
    }
    std::sort(times.begin(), times.end());
    double median = times[times.size() / 2];
    double p90 = times[std::min(times.size() - 1, (size_t)(times.size() * 0.9))];
    std::printf("latency over %d runs (reference evaluator): median %.3f ms, p90 %.3f ms\n",
                options.iters, median, p90);
  }

  if (!options.saveOutputs.empty()) {
    if (auto ec = llvm::sys::fs::create_directories(options.saveOutputs))
      die(options.saveOutputs + ": cannot create folder: " + ec.message());
    for (size_t i = 0; i < outputs->size(); ++i) {
      std::string stem = options.saveOutputs + "/" + safeFileName(outputNames[i]);
      const sluice::RuntimeValue *value = &(*outputs)[i];
      // An optional is saved as what it holds (nothing when empty).
      if (value->isOptional()) {
        if (!value->hasValue())
          continue;
        value = &value->value();
      }
      if (value->isTensor()) {
        if (!sluice::writeNpy(stem + ".npy", value->tensor(), error))
          die(error);
        continue;
      }
      // A sequence: one file per element, NAME_0.npy, NAME_1.npy ...
      for (size_t k = 0; k < value->elements().size(); ++k)
        if (!sluice::writeNpy(stem + "_" + std::to_string(k) + ".npy",
                              value->elements()[k], error))
          die(error);
    }
  }

  auto expected = readValues(options.expects, outputNames, func.getResultTypes(),
                             "output");
  bool allMatch = true;
  for (size_t i = 0; i < outputs->size(); ++i) {
    reinterpretBf16(expected[i], getElementTypeOrSelf(func.getResultTypes()[i]));
    if (!expected[i]) {
      std::printf("output '%s' %s\n", outputNames[i].c_str(),
                  (*outputs)[i].describe().c_str());
      continue;
    }
    allMatch &= compareValue(outputNames[i], (*outputs)[i], *expected[i],
                             options.rtol, options.atol);
  }
  return allMatch ? 0 : 1;
}
