//===- CompileSessionTest.cpp - the compile library in-process ------------===//
//
// sluice-compile's flag table (every bad option reported at once), the
// options' choices, and compile sessions run in-process as sluice-compile
// runs them: the listings and the report of the same model on both targets.
//
//===----------------------------------------------------------------------===//

#include "tools/driver/CompileSession.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace sluice;

namespace {

/// Parses `args` (after the tool's name) as sluice-compile does, checks
/// included when the flags parse.
std::vector<std::string> problems(std::vector<std::string> args, CompileRequest &request) {
  std::vector<char *> argv = {const_cast<char *>("sluice-compile")};
  for (std::string &arg : args)
    argv.push_back(arg.data());
  std::vector<std::string> errors;
  parseCompileFlags((int)argv.size(), argv.data(), request, errors);
  if (errors.empty())
    checkCompileRequest(request, errors);
  return errors;
}

std::vector<std::string> problems(std::vector<std::string> args) {
  CompileRequest request;
  return problems(std::move(args), request);
}

bool mentions(const std::vector<std::string> &errors, const std::string &text) {
  for (const std::string &e : errors)
    if (e.find(text) != std::string::npos)
      return true;
  return false;
}

std::string readFile(const std::string &path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  return buffer ? (*buffer)->getBuffer().str() : "";
}

const std::string kModel = std::string(SLUICE_SOURCE_DIR) + "/test/models/small_cnn/model.onnx";

} // namespace

TEST(CompileFlags, EveryBadOptionAtOnce) {
  auto errors = problems({"m.onnx", "--target=tpu", "--fusion=some", "--tp=0", "--bogus",
                          "--precision=fp12", "--emit=bundle", "--prune=heads=2"});
  ASSERT_EQ(errors.size(), 7u);
  EXPECT_TRUE(mentions(errors, "unknown target 'tpu'"));
  EXPECT_TRUE(mentions(errors, "unknown --fusion 'some'"));
  EXPECT_TRUE(mentions(errors, "bad --tp '0'"));
  EXPECT_TRUE(mentions(errors, "unknown option '--bogus'"));
  EXPECT_TRUE(mentions(errors, "unknown --precision 'fp12'"));
  EXPECT_TRUE(mentions(errors, "unknown --emit 'bundle'"));
  EXPECT_TRUE(mentions(errors, "bad --prune fraction '2' for heads"));
}

TEST(CompileFlags, EveryConflictAtOnce) {
  auto errors = problems({"m.onnx", "--quantize=int8", "--sp", "--micro-batches=2"});
  ASSERT_EQ(errors.size(), 3u);
  EXPECT_TRUE(mentions(errors, "--quantize=int8 needs --calibration=DIR"));
  EXPECT_TRUE(mentions(errors, "--sp splits the sequence"));
  EXPECT_TRUE(mentions(errors, "--micro-batches streams"));
}

TEST(CompileFlags, ValuesAndDefaults) {
  CompileRequest request;
  auto errors = problems({"m.onnx", "--target", "cuda", "--precision=half", "--quantize=w4a16",
                          "--fusion=elementwise", "-o", "out.sluice", "--gpu-arch=sm_90, sm_80",
                          "--shape=x=2x3", "--emit=kernels"},
                         request);
  EXPECT_TRUE(errors.empty()) << errors.front();
  EXPECT_EQ(request.model, "m.onnx");
  EXPECT_EQ(request.options.target, Target::Cuda);
  EXPECT_EQ(request.options.precision, Precision::Fp16);
  EXPECT_EQ(request.options.quantize, Quantize::W4A16);
  EXPECT_EQ(request.options.fusion, Fusion::Elementwise);
  EXPECT_EQ(request.bundlePath(), "out.sluice");
  EXPECT_EQ(request.gpuArchitectures, (std::vector<std::string>{"sm_90", "sm_80"}));
  EXPECT_EQ(request.options.inputShapes["x"], (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(request.stopPhase(), Phase::Plan); // --emit=kernels lists the planned groups
  EXPECT_TRUE(mentions(problems({"m.onnx", "--tp"}), "missing value for --tp"));
  EXPECT_TRUE(mentions(problems({"m.onnx", "--sp=1", "--tp=2"}), "unknown option '--sp=1'"));
  EXPECT_TRUE(mentions(problems({"a.onnx", "b.onnx"}), "more than one model given"));
  EXPECT_TRUE(mentions(problems({}), "no model given"));
  CompileRequest defaults;
  EXPECT_TRUE(problems({"dir/model.onnx"}, defaults).empty());
  EXPECT_EQ(defaults.bundlePath(), "model.sluice");
  EXPECT_EQ(defaults.stopPhase(), Phase::Emit);
}

TEST(Choices, NamesParseBack) {
  for (Target v : {Target::Cpu, Target::Cuda})
    EXPECT_EQ(parseChoice<Target>(choiceName(v)), v);
  for (Quantize v :
       {Quantize::None, Quantize::Int8, Quantize::Fp8, Quantize::W8A16, Quantize::W4A16})
    EXPECT_EQ(parseChoice<Quantize>(choiceName(v)), v);
  for (AccuracyMetric v :
       {AccuracyMetric::Auto, AccuracyMetric::RelL2, AccuracyMetric::Top1Agreement})
    EXPECT_EQ(parseChoice<AccuracyMetric>(choiceName(v)), v);
  EXPECT_EQ(passOptionName(Quantize::None), "");
  EXPECT_EQ(passOptionName(Sparsity::TwoFour), "2:4");
  EXPECT_FALSE(parseChoice<Fusion>("partial"));
}

// The same model through sessions on both targets: the generated source and
// the report's program, without the C++ compiler or nvcc.
TEST(CompileSession, SourceAndReportOnBothTargets) {
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("sluice-session", dir));
  for (const char *target : {"cpu", "cuda"}) {
    std::string source = std::string(dir) + "/" + target + ".src";
    std::string report = std::string(dir) + "/" + target + ".json";
    CompileRequest request;
    auto errors = problems({kModel, "--shape=image=2x3x16x16", std::string("--target=") + target,
                            "--emit=source", "-o", source, "--report=" + report, "--quiet"},
                           request);
    ASSERT_TRUE(errors.empty()) << errors.front();
    CompileSession session(std::move(request));
    std::string error;
    ASSERT_TRUE(session.run(error)) << error;
    const CompileReport &r = session.report();
    ASSERT_TRUE(r.program.has_value());
    EXPECT_GT(r.program->kernels + r.program->libraryCalls, 0);
    EXPECT_EQ(r.target, target);
    EXPECT_TRUE(r.bundle.empty()); // a listing writes no bundle
    std::string text = readFile(source);
    EXPECT_NE(text.find(std::string(target) == "cuda" ? "__global__" : "sluice_model_run"),
              std::string::npos);
    std::string json = readFile(report);
    EXPECT_NE(
        json.find("\"launches\": " + std::to_string(r.program->kernels + r.program->libraryCalls)),
        std::string::npos);
    EXPECT_NE(json.find("\"steps\""), std::string::npos);
  }
  // The IR after import, as --stop-after=import --emit=mlir prints it.
  std::string mlir = std::string(dir) + "/import.mlir";
  CompileRequest request;
  ASSERT_TRUE(
      problems({kModel, "--stop-after=import", "--emit=mlir", "-o", mlir}, request).empty());
  CompileSession session(std::move(request));
  std::string error;
  ASSERT_TRUE(session.run(error)) << error;
  EXPECT_FALSE(session.report().program.has_value());
  EXPECT_NE(readFile(mlir).find("func.func @main"), std::string::npos);
  llvm::sys::fs::remove_directories(dir);
}

TEST(CompileSession, ErrorsNameTheModel) {
  CompileRequest request;
  ASSERT_TRUE(problems({"/nonexistent/model.onnx", "--emit=source", "--quiet"}, request).empty());
  CompileSession session(std::move(request));
  std::string error;
  EXPECT_FALSE(session.run(error));
  EXPECT_NE(error.find("/nonexistent/model.onnx"), std::string::npos) << error;
}
