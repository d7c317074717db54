//===- CudaLibraryEmitTest.cpp - cuBLASLt / cuDNN group emitters ----------===//
//
// The cuda target's library forms (codegen/cuda/groups/Gemm.cpp,
// codegen/cuda/ops/Conv.cpp) on hand-written kernel groups: which epilogue
// ops cuBLASLt fuses, how row-major views become cuBLASLt's transposes,
// leading dimensions and batch strides, which groups are left to the host,
// and (where nvcc is installed) that the emitted step functions compile for
// sm_80 and sm_90. Running them needs a GPU (test/gpu covers the wrappers).
//
//===----------------------------------------------------------------------===//

#include "codegen/cuda/CudaGroups.h"

#include "codegen/common/ScalarEmitter.h"
#include "codegen/cpu/CpuEmitter.h"
#include "dialects/sluice/SluiceOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>

#include <unistd.h>

using namespace mlir;
using namespace sluice;
using namespace sluice::codegen;

namespace {

const char *kGroups = R"mlir(
module {
  func.func @main(%x: tensor<64x96xf16>, %wt: tensor<80x96xf16>, %bias: tensor<80xf16>, %res: tensor<64x80xf16>,
                  %q: tensor<2x4x16x32xbf16>, %k: tensor<2x4x24x32xbf16>,
                  %v: tensor<96xf32>, %m: tensor<96x40xf32>, %bb: tensor<40xf32>,
                  %img: tensor<2x8x16x16xf32>, %cw: tensor<16x4x3x3xf32>, %cb: tensor<16xf32>,
                  %img1: tensor<2x8x40xf16>, %cw1: tensor<8x8x5xf16>,
                  %tw: tensor<8x6x3x3xf32>, %tb: tensor<6xf32>,
                  %xf: tensor<64x96xf32>, %wf: tensor<96x80xf32>, %bf: tensor<80xf32>,
                  %xd: tensor<16x20xf64>, %wd: tensor<20x12xf64>, %bd: tensor<12xf64>,
                  %b3: tensor<2x3x8x16xf32>, %w3: tensor<3x16x12xf32>,
                  %sx: tensor<2x64x128xf32>, %sw: tensor<128x256xf32>)
      -> (tensor<64x80xf16>, tensor<64x80xf32>, tensor<2x4x16x24xbf16>, tensor<40xf32>,
          tensor<2x16x8x8xf32>, tensor<2x8x20xf16>, tensor<2x6x33x33xf32>, tensor<64x80xf32>,
          tensor<2x6x15x15xf32>, tensor<64x80xf32>, tensor<80x64xf32>, tensor<16x12xf64>,
          tensor<64x80xf32>, tensor<2x3x8x12xf32>, tensor<2x64x256xf32>) {
    // x W^T + bias + residual, tanh GELU: all in cuBLASLt; the cast in the generated kernel.
    %0:2 = sluice.kernel @k0_matmul library "gemm"(%x, %wt, %bias, %res : tensor<64x96xf16>, tensor<80x96xf16>, tensor<80xf16>, tensor<64x80xf16>) -> (tensor<64x80xf16>, tensor<64x80xf32>) {
    ^bb0(%a: tensor<64x96xf16>, %b: tensor<80x96xf16>, %c: tensor<80xf16>, %r: tensor<64x80xf16>):
      %bt = sluice.transpose %b {perm = array<i64: 1, 0>} : (tensor<80x96xf16>) -> tensor<96x80xf16>
      %mm = sluice.matmul %a, %bt : (tensor<64x96xf16>, tensor<96x80xf16>) -> tensor<64x80xf16>
      %s = sluice.add %mm, %c : (tensor<64x80xf16>, tensor<80xf16>) -> tensor<64x80xf16>
      %s2 = sluice.add %r, %s : (tensor<64x80xf16>, tensor<64x80xf16>) -> tensor<64x80xf16>
      %g = sluice.gelu %s2 {approximate = "tanh"} : (tensor<64x80xf16>) -> tensor<64x80xf16>
      %f = sluice.cast %g : tensor<64x80xf16> -> tensor<64x80xf32>
      sluice.kernel_yield %g, %f : tensor<64x80xf16>, tensor<64x80xf32>
    }
    // Attention scores Q K^T * scale: a strided batch, K transposed, alpha.
    %1 = sluice.kernel @k1_matmul library "gemm"(%q, %k : tensor<2x4x16x32xbf16>, tensor<2x4x24x32xbf16>) -> (tensor<2x4x16x24xbf16>) {
    ^bb0(%a: tensor<2x4x16x32xbf16>, %b: tensor<2x4x24x32xbf16>):
      %sc = sluice.constant dense<0.125> : tensor<bf16>
      %kt = sluice.transpose %b {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x4x24x32xbf16>) -> tensor<2x4x32x24xbf16>
      %mm = sluice.matmul %a, %kt : (tensor<2x4x16x32xbf16>, tensor<2x4x32x24xbf16>) -> tensor<2x4x16x24xbf16>
      %s = sluice.mul %mm, %sc : (tensor<2x4x16x24xbf16>, tensor<bf16>) -> tensor<2x4x16x24xbf16>
      sluice.kernel_yield %s : tensor<2x4x16x24xbf16>
    }
    // Vector x matrix: no fused epilogue; bias and SiLU in the generated kernel.
    %2 = sluice.kernel @k2_matmul library "gemm"(%v, %m, %bb : tensor<96xf32>, tensor<96x40xf32>, tensor<40xf32>) -> (tensor<40xf32>) {
    ^bb0(%a: tensor<96xf32>, %b: tensor<96x40xf32>, %c: tensor<40xf32>):
      %mm = sluice.matmul %a, %b : (tensor<96xf32>, tensor<96x40xf32>) -> tensor<40xf32>
      %s = sluice.add %mm, %c : (tensor<40xf32>, tensor<40xf32>) -> tensor<40xf32>
      %y = sluice.silu %s : (tensor<40xf32>) -> tensor<40xf32>
      sluice.kernel_yield %y : tensor<40xf32>
    }
    %3 = sluice.kernel @k3_conv library "conv"(%img, %cw, %cb : tensor<2x8x16x16xf32>, tensor<16x4x3x3xf32>, tensor<16xf32>) -> (tensor<2x16x8x8xf32>) {
    ^bb0(%a: tensor<2x8x16x16xf32>, %b: tensor<16x4x3x3xf32>, %c: tensor<16xf32>):
      %y = sluice.conv %a, %b, %c {dilations = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>, group = 2} : (tensor<2x8x16x16xf32>, tensor<16x4x3x3xf32>, tensor<16xf32>) -> tensor<2x16x8x8xf32>
      sluice.kernel_yield %y : tensor<2x16x8x8xf32>
    }
    %4 = sluice.kernel @k4_conv library "conv"(%img1, %cw1 : tensor<2x8x40xf16>, tensor<8x8x5xf16>) -> (tensor<2x8x20xf16>) {
    ^bb0(%a: tensor<2x8x40xf16>, %b: tensor<8x8x5xf16>):
      %y = sluice.conv %a, %b {dilations = array<i64: 1>, pads = array<i64: 2, 2>, strides = array<i64: 2>} : (tensor<2x8x40xf16>, tensor<8x8x5xf16>) -> tensor<2x8x20xf16>
      sluice.kernel_yield %y : tensor<2x8x20xf16>
    }
    %5 = sluice.kernel @k5_conv library "conv"(%img, %tw, %tb : tensor<2x8x16x16xf32>, tensor<8x6x3x3xf32>, tensor<6xf32>) -> (tensor<2x6x33x33xf32>) {
    ^bb0(%a: tensor<2x8x16x16xf32>, %b: tensor<8x6x3x3xf32>, %c: tensor<6xf32>):
      %y = sluice.conv_transpose %a, %b, %c {dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 2, 2>} : (tensor<2x8x16x16xf32>, tensor<8x6x3x3xf32>, tensor<6xf32>) -> tensor<2x6x33x33xf32>
      sluice.kernel_yield %y : tensor<2x6x33x33xf32>
    }
    %6 = sluice.kernel @k6_matmul library "gemm"(%xf, %wf : tensor<64x96xf32>, tensor<96x80xf32>) -> (tensor<64x80xf32>) {
    ^bb0(%a: tensor<64x96xf32>, %b: tensor<96x80xf32>):
      %mm = sluice.matmul %a, %b : (tensor<64x96xf32>, tensor<96x80xf32>) -> tensor<64x80xf32>
      sluice.kernel_yield %mm : tensor<64x80xf32>
    }
    // Asymmetric pads: cuDNN's legacy API takes one pad per dim (a crop here).
    %7 = sluice.kernel @k7_conv library "conv"(%img, %tw : tensor<2x8x16x16xf32>, tensor<8x6x3x3xf32>) -> (tensor<2x6x15x15xf32>) {
    ^bb0(%a: tensor<2x8x16x16xf32>, %b: tensor<8x6x3x3xf32>):
      %y = sluice.conv_transpose %a, %b {dilations = array<i64: 1, 1>, output_padding = array<i64: 0, 0>, pads = array<i64: 1, 1, 2, 2>, strides = array<i64: 1, 1>} : (tensor<2x8x16x16xf32>, tensor<8x6x3x3xf32>) -> tensor<2x6x15x15xf32>
      sluice.kernel_yield %y : tensor<2x6x15x15xf32>
    }
    // erf GELU is not cuBLASLt's: bias fused, GELU generated.
    %8 = sluice.kernel @k8_matmul library "gemm"(%xf, %wf, %bf : tensor<64x96xf32>, tensor<96x80xf32>, tensor<80xf32>) -> (tensor<64x80xf32>) {
    ^bb0(%a: tensor<64x96xf32>, %b: tensor<96x80xf32>, %c: tensor<80xf32>):
      %mm = sluice.matmul %a, %b : (tensor<64x96xf32>, tensor<96x80xf32>) -> tensor<64x80xf32>
      %s = sluice.add %mm, %c : (tensor<64x80xf32>, tensor<80xf32>) -> tensor<64x80xf32>
      %g = sluice.gelu %s : (tensor<64x80xf32>) -> tensor<64x80xf32>
      sluice.kernel_yield %g : tensor<64x80xf32>
    }
    // A result written through a transpose: D in workspace scratch, relu fused.
    %9 = sluice.kernel @k9_matmul library "gemm"(%xf, %wf, %bf : tensor<64x96xf32>, tensor<96x80xf32>, tensor<80xf32>) -> (tensor<80x64xf32>) {
    ^bb0(%a: tensor<64x96xf32>, %b: tensor<96x80xf32>, %c: tensor<80xf32>):
      %mm = sluice.matmul %a, %b : (tensor<64x96xf32>, tensor<96x80xf32>) -> tensor<64x80xf32>
      %s = sluice.add %mm, %c : (tensor<64x80xf32>, tensor<80xf32>) -> tensor<64x80xf32>
      %r = sluice.relu %s : (tensor<64x80xf32>) -> tensor<64x80xf32>
      %t = sluice.transpose %r {perm = array<i64: 1, 0>} : (tensor<64x80xf32>) -> tensor<80x64xf32>
      sluice.kernel_yield %t : tensor<80x64xf32>
    }
    // f64: no fused bias/activation.
    %10 = sluice.kernel @k10_matmul library "gemm"(%xd, %wd, %bd : tensor<16x20xf64>, tensor<20x12xf64>, tensor<12xf64>) -> (tensor<16x12xf64>) {
    ^bb0(%a: tensor<16x20xf64>, %b: tensor<20x12xf64>, %c: tensor<12xf64>):
      %mm = sluice.matmul %a, %b : (tensor<16x20xf64>, tensor<20x12xf64>) -> tensor<16x12xf64>
      %s = sluice.add %mm, %c : (tensor<16x12xf64>, tensor<12xf64>) -> tensor<16x12xf64>
      %r = sluice.relu %s : (tensor<16x12xf64>) -> tensor<16x12xf64>
      sluice.kernel_yield %r : tensor<16x12xf64>
    }
    // Every other column of A: no layout cuBLASLt reads.
    %11 = sluice.kernel @k11_matmul library "gemm"(%xf, %wf : tensor<64x96xf32>, tensor<96x80xf32>) -> (tensor<64x80xf32>) {
    ^bb0(%a: tensor<64x96xf32>, %b: tensor<96x80xf32>):
      %st = sluice.constant dense<[0]> : tensor<1xi64>
      %en = sluice.constant dense<[96]> : tensor<1xi64>
      %ax = sluice.constant dense<[1]> : tensor<1xi64>
      %sp = sluice.constant dense<[2]> : tensor<1xi64>
      %a2 = sluice.slice %a, %st, %en, %ax, %sp : (tensor<64x96xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<64x48xf32>
      %st2 = sluice.constant dense<[0]> : tensor<1xi64>
      %en2 = sluice.constant dense<[48]> : tensor<1xi64>
      %ax2 = sluice.constant dense<[0]> : tensor<1xi64>
      %sp2 = sluice.constant dense<[1]> : tensor<1xi64>
      %b2 = sluice.slice %b, %st2, %en2, %ax2, %sp2 : (tensor<96x80xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<48x80xf32>
      %mm = sluice.matmul %a2, %b2 : (tensor<64x48xf32>, tensor<48x80xf32>) -> tensor<64x80xf32>
      sluice.kernel_yield %mm : tensor<64x80xf32>
    }
    // B broadcast over the leading batch dim only: a loop of two strided-batch GEMMs.
    %12 = sluice.kernel @k12_matmul library "gemm"(%b3, %w3 : tensor<2x3x8x16xf32>, tensor<3x16x12xf32>) -> (tensor<2x3x8x12xf32>) {
    ^bb0(%a: tensor<2x3x8x16xf32>, %b: tensor<3x16x12xf32>):
      %mm = sluice.matmul %a, %b : (tensor<2x3x8x16xf32>, tensor<3x16x12xf32>) -> tensor<2x3x8x12xf32>
      sluice.kernel_yield %mm : tensor<2x3x8x12xf32>
    }
    // Batches of A one after the other, one B: one GEMM with M = 2 x 64.
    %13 = sluice.kernel @k13_matmul library "gemm"(%sx, %sw : tensor<2x64x128xf32>, tensor<128x256xf32>) -> (tensor<2x64x256xf32>) {
    ^bb0(%a: tensor<2x64x128xf32>, %b: tensor<128x256xf32>):
      %mm = sluice.matmul %a, %b : (tensor<2x64x128xf32>, tensor<128x256xf32>) -> tensor<2x64x256xf32>
      sluice.kernel_yield %mm : tensor<2x64x256xf32>
    }
    return %0#0, %0#1, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %6, %12, %13 : tensor<64x80xf16>, tensor<64x80xf32>, tensor<2x4x16x24xbf16>, tensor<40xf32>, tensor<2x16x8x8xf32>, tensor<2x8x20xf16>, tensor<2x6x33x33xf32>, tensor<64x80xf32>, tensor<2x6x15x15xf32>, tensor<64x80xf32>, tensor<80x64xf32>, tensor<16x12xf64>, tensor<64x80xf32>, tensor<2x3x8x12xf32>, tensor<2x64x256xf32>
  }
}
)mlir";

/// What one emitter call left.
struct Emitted {
  CudaEmit result = CudaEmit::Unsupported;
  std::string reason, kind, device, host, step;
  int64_t workspace = 0;
};

bool contains(const std::string &text, const std::string &piece) {
  return text.find(piece) != std::string::npos;
}

struct CudaLibraryEmit : ::testing::Test {
  MLIRContext context;
  OwningOpRef<ModuleOp> module;
  std::map<std::string, Emitted> kernels;
  std::set<std::string> headers;

  void SetUp() override {
    DialectRegistry registry;
    registry.insert<SluiceDialect, func::FuncDialect>();
    context.appendDialectRegistry(registry);
    context.loadAllAvailableDialects();
    module = parseSourceString<ModuleOp>(kGroups, &context);
    ASSERT_TRUE(module);
    module->walk([&](KernelOp kernel) { emit(kernel); });
  }

  /// Runs the library emitter of `kernel` with leaves named as the cuda
  /// emitter names them (in<i>, c<i>, out<i>) and wraps the result into a
  /// step function like model.cu's.
  void emit(KernelOp kernel) {
    Emitted &e = kernels[kernel.getSymName().str()];
    CudaGroupContext ctx;
    ctx.kernel = kernel;
    ctx.name = kernel.getSymName().str();
    ctx.device = &e.device;
    ctx.host = &e.host;
    ctx.headers = &headers;
    ctx.workspaceBytes = &e.workspace;
    Block &body = kernel.getBody().front();
    std::string decls;
    int slot = 0, constants = 0;
    for (BlockArgument a : body.getArguments()) {
      std::string n = "in" + std::to_string(a.getArgNumber());
      ctx.pointers[a] = n;
      decls += "  const " + typeOf(a) + " *" + n + " = (const " + typeOf(a) + " *)b[" +
               std::to_string(slot++) + "]; (void)" + n + ";\n";
    }
    for (Operation &op : body)
      if (auto c = dyn_cast<ConstantOp>(op)) {
        auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
        if (dense && dense.getNumElements() == 1) {
          ctx.literals[c.getResult()] = literal(dense, 0);
        } else {
          std::string n = "c" + std::to_string(constants++);
          ctx.pointers[c.getResult()] = n;
          decls += "  const " + typeOf(c.getResult()) + " *" + n + " = nullptr; (void)" + n + ";\n";
        }
      }
    for (auto [i, v] : llvm::enumerate(body.getTerminator()->getOperands()))
      decls += "  " + typeOf(v) + " *out" + std::to_string(i) + " = (" + typeOf(v) + " *)b[" +
               std::to_string(slot++) + "];\n";
    if (kernel.getLibrary() == "gemm") {
      e.result = emitCudaGemmGroup(ctx);
    } else {
      for (Operation &op : body)
        if (isa<ConvOp, ConvTransposeOp>(op))
          e.result = emitCudaConv(ctx, &op);
    }
    e.reason = ctx.reason;
    e.kind = ctx.kind;
    e.step = "namespace " + ctx.name + "_k {\n" + e.device +
             "int32_t step(void *const *b, const SluiceRunArgs *args) {\n"
             "  cudaStream_t stream = (cudaStream_t)args->stream; (void)stream;\n"
             "  SluiceCudaState *state = sluice_state(args); (void)state;\n" +
             decls + e.host + "  return 0;\n}\n} // namespace " + ctx.name + "_k\n";
  }

  const Emitted &at(const std::string &name) { return kernels[name]; }
};

TEST_F(CudaLibraryEmit, FusesBiasResidualAndTanhGelu) {
  const Emitted &e = at("k0_matmul");
  ASSERT_EQ(e.result, CudaEmit::Done) << e.reason;
  EXPECT_EQ(e.kind, "library");
  // f16, B is a transposed view (ldb 96), m n k = 64 80 96, ldc = ldd = 80,
  // epilogue GELU_BIAS (5) with the residual as C.
  EXPECT_TRUE(contains(e.host, "{SLUICE_GEMM_F16, 0, 1, 64LL, 80LL, 96LL, 96LL, 96LL, 80LL, "
                               "80LL, 1LL, 0LL, 0LL, 0LL, 0LL, 5, 1}"))
      << e.host;
  EXPECT_TRUE(contains(e.host, "(const void *)(in3 + c_off[o])")) << e.host;
  EXPECT_TRUE(contains(e.host, "(const void *)(in2 + 0LL), 1.0,")) << e.host;
  // D goes straight to out0; only the cast runs in the generated kernel.
  EXPECT_TRUE(contains(e.host, "(void *)(out0 + d_off[o])")) << e.host;
  EXPECT_TRUE(contains(e.device, "(float)(sluice_load(r0.v[u]))")) << e.device;
  EXPECT_FALSE(contains(e.device, "sl_gelu")) << e.device;
}

TEST_F(CudaLibraryEmit, AttentionScoresAreOneStridedBatch) {
  const Emitted &e = at("k1_matmul");
  ASSERT_EQ(e.result, CudaEmit::Done) << e.reason;
  // 8 batches (2 x 4), A stride 512, B (K^T, transposed, ldb 32) stride 768,
  // D stride 384; the scale becomes alpha and no kernel is generated.
  EXPECT_TRUE(contains(e.host, "{SLUICE_GEMM_BF16, 0, 1, 16LL, 24LL, 32LL, 32LL, 32LL, 24LL, "
                               "24LL, 8LL, 512LL, 768LL, 0LL, 384LL, 0, 0}"))
      << e.host;
  EXPECT_TRUE(contains(e.host, "0.125")) << e.host;
  EXPECT_TRUE(e.device.empty()) << e.device;
}

TEST_F(CudaLibraryEmit, VectorMatrixRunsItsEpilogueInPlace) {
  const Emitted &e = at("k2_matmul");
  ASSERT_EQ(e.result, CudaEmit::Done) << e.reason;
  EXPECT_TRUE(contains(e.host, "{SLUICE_GEMM_F32, 0, 0, 1LL, 40LL, 96LL,")) << e.host;
  EXPECT_TRUE(contains(e.device, "sl_silu")) << e.device;
  // D is out0, updated in place by the vectorized kernel.
  EXPECT_TRUE(contains(e.host, "epilogue_vec<<<")) << e.host;
  EXPECT_TRUE(contains(e.host, "(void *)(out0 + d_off[o])")) << e.host;
}

TEST_F(CudaLibraryEmit, ErfGeluIsGenerated) {
  const Emitted &e = at("k8_matmul");
  ASSERT_EQ(e.result, CudaEmit::Done) << e.reason;
  EXPECT_TRUE(contains(e.host, "0LL, 0LL, 0LL, 0LL, 1, 0}")) << e.host; // BIAS only
  EXPECT_TRUE(contains(e.device, "sl_gelu(")) << e.device;
}

TEST_F(CudaLibraryEmit, TransposedResultGoesThroughScratch) {
  const Emitted &e = at("k9_matmul");
  ASSERT_EQ(e.result, CudaEmit::Done) << e.reason;
  EXPECT_TRUE(contains(e.host, "0LL, 0LL, 0LL, 0LL, 3, 0}")) << e.host; // RELU_BIAS
  EXPECT_TRUE(contains(e.host, "state->workspace + 33554432")) << e.host;
  EXPECT_EQ(e.workspace, (32ll << 20) + 64 * 80 * 4);
  // The copy writes out0 transposed: element (i, j) at j * 64 + i.
  EXPECT_TRUE(contains(e.device, "q1 * 64")) << e.device;
}

TEST_F(CudaLibraryEmit, F64KeepsBiasAndReluOutOfCuBlasLt) {
  const Emitted &e = at("k10_matmul");
  ASSERT_EQ(e.result, CudaEmit::Done) << e.reason;
  EXPECT_TRUE(contains(e.host, "{SLUICE_GEMM_F64, 0, 0, 16LL, 12LL, 20LL,")) << e.host;
  EXPECT_TRUE(contains(e.host, "0LL, 0LL, 0LL, 0LL, 0, 0}")) << e.host;
  EXPECT_TRUE(contains(e.device, "sl_relu")) << e.device;
}

TEST_F(CudaLibraryEmit, StridedOperandIsLeftToTheHost) {
  const Emitted &e = at("k11_matmul");
  EXPECT_EQ(e.result, CudaEmit::Unsupported);
  EXPECT_TRUE(contains(e.reason, "neither row- nor column-contiguous")) << e.reason;
  EXPECT_TRUE(e.host.empty());
}

TEST_F(CudaLibraryEmit, NonCollapsingBatchDimsLoop) {
  const Emitted &e = at("k12_matmul");
  ASSERT_EQ(e.result, CudaEmit::Done) << e.reason;
  // Inner batch 3 (A 128, B 192, D 96), an outer loop of 2.
  EXPECT_TRUE(contains(e.host, "3LL, 128LL, 192LL, 0LL, 96LL, 0, 0}")) << e.host;
  EXPECT_TRUE(contains(e.host, "a_off[] = {0LL, 384LL}")) << e.host;
  EXPECT_TRUE(contains(e.host, "b_off[] = {0LL, 0LL}")) << e.host;
  EXPECT_TRUE(contains(e.host, "o < 2LL")) << e.host;
}

TEST_F(CudaLibraryEmit, StacksBatchesSharingB) {
  const Emitted &e = at("k13_matmul");
  ASSERT_EQ(e.result, CudaEmit::Done) << e.reason;
  EXPECT_TRUE(contains(e.host, "{SLUICE_GEMM_F32, 0, 0, 128LL, 256LL, 128LL, 128LL, 256LL, "
                               "256LL, 256LL, 1LL, 0LL, 0LL, 0LL, 0LL, 0, 0}"))
      << e.host;
}

TEST_F(CudaLibraryEmit, Convolutions) {
  const Emitted &grouped = at("k3_conv");
  ASSERT_EQ(grouped.result, CudaEmit::Done) << grouped.reason;
  EXPECT_EQ(grouped.kind, "library");
  EXPECT_TRUE(contains(grouped.host, "{SLUICE_CONV_F32, 0, 2, 2LL, 8LL, 16LL, 2LL, {16LL, 16LL, "
                                     "0LL}, {3LL, 3LL, 0LL}, {8LL, 8LL, 0LL}, {1LL, 1LL, 0LL}, "
                                     "{2LL, 2LL, 0LL}, {1LL, 1LL, 0LL}, {1LL, 1LL, 0LL}, "
                                     "{0LL, 0LL, 0LL}}"))
      << grouped.host;
  EXPECT_TRUE(contains(grouped.host, "(const float *)(in2 + 0LL)")) << grouped.host;
  EXPECT_EQ(grouped.workspace, 64ll << 20);
  const Emitted &oneD = at("k4_conv");
  ASSERT_EQ(oneD.result, CudaEmit::Done) << oneD.reason;
  EXPECT_TRUE(contains(oneD.host, "sluice_conv<sluice_f16>")) << oneD.host;
  EXPECT_TRUE(contains(oneD.host, "(const sluice_f16 *)nullptr")) << oneD.host;
  const Emitted &transposed = at("k5_conv");
  ASSERT_EQ(transposed.result, CudaEmit::Done) << transposed.reason;
  EXPECT_TRUE(contains(transposed.host, "{SLUICE_CONV_F32, 1, 2, 2LL, 8LL, 6LL, 1LL,"))
      << transposed.host;
  // Asymmetric pads: cuDNN computes the full 2x6x18x18 output into
  // scratch after its workspace, a crop kernel keeps [1, 16) x [1, 16).
  const Emitted &asymmetric = at("k7_conv");
  ASSERT_EQ(asymmetric.result, CudaEmit::Done) << asymmetric.reason;
  EXPECT_TRUE(contains(asymmetric.host, "{1LL, 1LL, 0LL}, {1LL, 1LL, 0LL}, {1LL, 1LL, 0LL}, "
                                        "{2LL, 2LL, 0LL}, {0LL, 0LL, 0LL}}"))
      << asymmetric.host;
  EXPECT_EQ(asymmetric.workspace, (64ll << 20) + (2 * 6 * 18 * 18 * 4 + 255) / 256 * 256);
}

#ifdef SLUICE_NVCC
/// Every emitted step compiles as model.cu would build it.
TEST_F(CudaLibraryEmit, StepsCompileWithNvcc) {
  std::string source = "#define SLUICE_WITH_CUDNN 1\n#include \"sluice_gen/cuda.h\"\n";
  for (const std::string &h : headers)
    source += "#include \"" + h + "\"\n";
  int done = 0;
  for (auto &[name, e] : kernels)
    if (e.result == CudaEmit::Done) {
      source += e.step;
      ++done;
    }
  ASSERT_GE(done, 10);
  std::string dir = ::testing::TempDir() + "/sluice_cuda_library_" + std::to_string(getpid());
  ASSERT_EQ(std::system(("mkdir -p '" + dir + "'").c_str()), 0);
  std::string path = dir + "/steps.cu";
  std::ofstream(path) << source;
  std::string command = std::string(SLUICE_NVCC) +
                        " -std=c++17 -O1 -gencode arch=compute_80,code=sm_80"
                        " -gencode arch=compute_90,code=sm_90 -Xcompiler -fPIC"
                        " --Werror all-warnings -I " SLUICE_SOURCE_DIR
                        "/codegen/include -I " SLUICE_SOURCE_DIR "/include -c " +
                        path + " -o " + dir + "/steps.o";
  EXPECT_EQ(std::system(command.c_str()), 0) << command << "\n" << source;
  std::system(("rm -rf '" + dir + "'").c_str());
}
#endif

} // namespace
