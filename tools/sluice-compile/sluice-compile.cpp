//===- sluice-compile.cpp - ONNX model to optimized bundle ----------------===//
//
//   sluice-compile MODEL.onnx -o OUT.sluice [--target=cpu|cuda] [--shape=NAME=2x128 ...]
//                  [--stop-after=PHASE --emit=mlir] [--report=FILE.json]
//
// Parses the command line (tools/driver/CompileFlags.h) and runs one compile
// session (tools/driver/CompileSession.h): the phases of
// docs/architecture.md, then a bundle folder (manifest.json, model-<id>.so
// built with the system C++ compiler or nvcc, weights.bin) or a listing.
//
//===----------------------------------------------------------------------===//

#include "tools/driver/CompileSession.h"
#include "tools/driver/Installed.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

const char *kUsage = R"(usage: sluice-compile MODEL.onnx -o OUT.sluice [options]
       sluice-compile MODEL.onnx --stop-after=PHASE --emit=mlir [-o FILE] [options]

Compiles an ONNX model (binary .onnx or textual .onnxtxt) into a bundle: a
folder with manifest.json, the compiled library and weights.bin, run by
sluice-run or the runtime library (include/sluice/runtime.h).

  -o PATH               the bundle folder (default: MODEL's name + .sluice);
                        with --emit=mlir, the IR file (default: stdout)
  --target=cpu|cuda     code generation target (cpu: C++ with OpenMP and
                        OpenBLAS, the default; cuda: CUDA kernels, cuBLASLt
                        and cuDNN, built with nvcc; ops without a cuda
                        kernel run as host steps, listed in --report)
  --gpu-arch=LIST       cuda: the architectures to build, comma-separated
                        (default sm_80,sm_90,compute_90: machine code for
                        A100 and H100/H200, PTX for newer GPUs)
  --shape=NAME=2x128    bind an input's shape (repeatable); bundles need
                        static shapes. A sequence input takes its element
                        shapes, NAME=3x4,3x4,2x4 (scalar for rank 0, empty
                        for no elements): the bundle takes the elements as
                        inputs NAME.0, NAME.1 ... (manifest "sequences").
                        An optional input is compiled absent (NAME=none)
                        or present with its value's shape (manifest
                        "optionals")
  --shapes=NAME=DIMS,NAME=DIMS,...
                        shape variants (repeatable, cpu target): one bundle
                        with a program per listed shape, sharing one
                        weights.bin; the i-th shape of every input --shapes
                        lists forms variant i (each lists as many, at least
                        two), inputs given --shape are fixed across them;
                        e.g. --shapes=x=1x128,x=8x128,x=32x128. The runtime
                        runs the variant whose input shapes equal the
                        inputs' (manifest "variants", docs/runtime.md)
  --bind=NAME=FILE      freeze an input to a tensor file's value (.pb/.npy):
                        it becomes a constant and leaves the bundle's
                        inputs (for shape tensors a static bundle needs)
  --fusion=MODE         kernel groups the fuse phase grows: all (the
                        default: GEMM epilogues, row ops, attention, views,
                        horizontal GEMMs; see docs/architecture.md "fuse"),
                        elementwise (elementwise chains only) or none (one
                        op per kernel)
  --precision=P         fp32 (the default: the model's types), fp16 or bf16
                        (aliases float16, half, bfloat16): weights and
                        activations in half precision with fp32
                        accumulation, norms and softmax statistics in fp32;
                        inputs and outputs keep their dtypes
  --tp=N                split every transformer layer over N ranks
                        (Megatron tensor parallelism: attention by heads,
                        MLPs column- then row-parallel, the embedding and
                        LM head vocab-parallel); the bundle runs as N
                        ranks (sluice-run --ranks=N, or mpirun -np N);
                        needs static shapes (docs/parallel.md)
  --sp                  with --tp: sequence parallelism (norms and residual
                        adds split along the sequence; reduce_scatter and
                        all_gather instead of all_reduce)
  --pp=N                cut the model into N pipeline stages balanced by
                        predicted time; activations sent between stages;
                        the bundle runs as tp x N ranks (docs/parallel.md)
  --micro-batches=M     with --pp: split dim 0 of every input and output M
                        ways and stream the micro-batches through the stages
  --ep=N                expert parallelism: each mixture-of-experts layer
                        keeps E/N of its E experts per rank, the rest of
                        the model replicated; the bundle runs as N ranks
                        (docs/parallel.md, "Expert parallelism")
  --devices=N           plan for N devices (docs/parallel.md, "Automatic
                        plan"): each tp/sp/pp grid that fits, its memory
                        per rank and its predicted time
  --auto                with --devices: compile the chosen plan (its tp
                        and sp; world size 1 when the model fits one
                        device and splitting does not pay)
  --device-memory=BYTES memory per rank for the plan (80GB, 80GiB, 512MB or
                        bytes; default: the cluster's device memory)
  --cluster=FILE.json   the devices and links the plan predicts with
                        (default: one node of 8 H100 SXM, NVLink, IB)
  --objective=latency|throughput
                        what the plan minimizes: one run's time (the
                        default) or time per sample over all devices
  --quantize=MODE       int8: GEMMs and convolutions in int8 (weights per
                        output channel, activations per tensor from
                        --calibration, int32 accumulation, scales in the
                        epilogue); fp8: GEMMs in E4M3 (per-tensor
                        scales from --calibration; convolutions stay
                        f32; emulated on the cpu target); w8a16 / w4a16: weight-only int8 / int4
                        (groups of 128 along K, half scales) for
                        memory-bound GEMMs; see docs/quantization.md.
                        QDQ models need no flag: their QuantizeLinear /
                        DequantizeLinear pairs already say what is int8
  --prune=KIND=F[,...]  structured pruning (docs/pruning.md): remove the
                        fraction F (in [0, 1)) of each attention layer's
                        heads (heads=F), each MLP's hidden units (ffn=F)
                        or each convolution's output channels
                        (channels=F), chosen by importance measured on
                        --calibration; weights, GEMM shapes and FLOPs
                        shrink; the most sensitive layers are spared
                        until --accuracy-budget holds
  --sparsity=2:4        semi-structured sparsity: two of every four weights
                        along K of each GEMM kept by calibrated importance
                        (cuda: cuSPARSELt where it is present and faster;
                        cpu: dense on the pruned weights); needs
                        --calibration
  --calibration=DIR     sample inputs: DIR/NAME.npy per model input (one
                        set), or sub-folders of such sets, with the
                        compile shapes; int8, fp8, --prune and --sparsity
                        need it, weight-only uses it for the accuracy guard
  --calibration-method=M
                        minmax (the default, as ONNX Runtime's),
                        percentile (99.999) or entropy (KL divergence)
  --smooth-quant[=ALPHA]
                        int8: SmoothQuant, activation outliers of layer
                        norms migrated into the next GEMMs' weights
                        (ALPHA in [0, 1], default 0.5)
  --accuracy-metric=M   how the accuracy guard judges the outputs on the
                        calibration sets against the uncompressed model:
                        rel-l2 (relative L2 error), top1-agreement (the
                        share of rows whose argmax over the last axis
                        changed) or auto (the default: top1-agreement when
                        every output is rank 2 or named in the model's
                        sluice.class_outputs metadata, else rel-l2)
  --accuracy-budget=X   largest error of any output in the metric (default
                        0.05 rel-l2, 0.01 top1-agreement); the most
                        sensitive layers stay in float (or unpruned,
                        dense) until it holds, and a budget that no
                        quantized layer meets fails the compile with the
                        table
  --quantization-cache=FILE
                        the calibration table (JSON; default: beside the
                        bundle, BUNDLE.quantization.json; none: off):
                        recompiling with the same model and data does not
                        recalibrate
  --no-recognize        skip the recognize phase (no layer_norm/rms_norm/
                        gelu/silu/attention composites from op chains);
                        with --fusion=none, one kernel per ONNX-level op
  --stop-after=PHASE    import | simplify | recognize | compress |
                        parallelize | fuse | plan | emit
  --emit=mlir           print the IR after the stop phase instead of a bundle
  --emit=source         write the generated source (cpu: the C++ translation
                        unit; cuda: model.cu, then host.cpp when steps run
                        on the host) to -o or stdout, without compiling it
  --emit=plan           print the plan's table (with --devices; weights in
                        absent external data files are read as shapes)
  --emit=kernels        list the kernel groups (after plan, or --stop-after
                        fuse): the ops inside each and their ONNX nodes,
                        the launch count, and the fusion passes' remarks
                        (what did not fuse and why)
  --report=FILE.json    write kernels, library_calls, launches, arena_bytes,
                        weights_bytes, steps (each launch with its ops,
                        ONNX nodes and compute: f32, int8, int8w ...),
                        on cpu cpu_gemm and cpu_conv (the GEMM and
                        convolution paths: avx512/openblas+avx2/openblas,
                        onednn/im2col)
                        and cpu_conv_post_ops (convolutions whose ReLU /
                        residual Add run as oneDNN post-ops),
                        cpu_conv_blocked_activations (activations kept
                        in oneDNN's blocked layout between convolutions),
                        cpu_gemm_packed_weights (f32 GEMMs whose weight
                        is stored packed for the host's kernel),
                        remarks and phase timings as JSON
  --cache-dir=DIR       the compile cache (docs/tools.md, "Compile cache"):
                        a bundle compiled before from the same model bytes
                        (and external data), options, compiler and
                        toolchain is linked or copied to -o instead of
                        compiled again, with its --report (default:
                        $SLUICE_CACHE_DIR, else $XDG_CACHE_HOME/sluice,
                        else ~/.cache/sluice; bundles only, not --emit)
  --no-cache            neither read nor write the compile cache
  --elide-weights       print weight blobs as '...' instead of hex
  --quiet               no progress lines on stderr
  --jobs=N              cpu: build the library from N translation units
                        compiled at once (default: the cores, at most 8,
                        for models of 32 distinct kernels or more; one
                        otherwise)
  --cpu-isa=ISA         cpu: the instruction set the GEMM kernels are
                        written for: native (the default: this host's),
                        avx512, avx2 or generic (report: cpu_gemm)
  --cpu-conv=PATH       cpu: f32 convolutions through onednn (the default
                        where the compiler has oneDNN; activations only
                        convolutions read stay in its blocked layout),
                        onednn-nchw (each call reorders NCHW in and out) or
                        im2col (im2col + OpenBLAS)
  --cpu-packed-weights[=0|1]
                        cpu: store f32 GEMM weights packed for the
                        --cpu-isa kernel (default 0). The three are recorded
                        in the IR (sluice.cpu_config, plan phase)
  --cusparselt-dir=DIR  cuda: cuSPARSELt for --sparsity=2:4 GEMMs (DIR with
                        include/cusparseLt.h and lib/; none: 2:4 GEMMs run
                        dense; default: $SLUICE_CUSPARSELT_DIR, else the
                        nvidia-cusparselt package of $VIRTUAL_ENV or of the
                        source tree's .venv)
  --precompile-headers  build the precompiled header of generated cpu code
                        for this compiler and these flags, print its path
                        and exit (the first cpu compile builds it too;
                        docs/tools.md, "Precompiled headers")
  -h, --help            this help

Environment: SLUICE_CXX or CXX picks the C++ compiler (default c++);
SLUICE_CACHE_DIR sets the compile cache's folder (none: no cache);
SLUICE_PCH_DIR the precompiled headers' (default: the cache folder's pch/
under $XDG_CACHE_HOME/sluice or ~/.cache/sluice; none: no precompiled
header);
SLUICE_CPU_CONV and SLUICE_CPU_PACKED_WEIGHTS are the defaults of
--cpu-conv and --cpu-packed-weights.
)";

/// Prints each problem as its own `sluice-compile: error: ...` line and
/// exits 2.
[[noreturn]] void dieWith(const std::vector<std::string> &errors) {
  for (const std::string &error : errors) {
    std::string text = error;
    while (!text.empty() && text.back() == '\n')
      text.pop_back();
    std::fprintf(stderr, "sluice-compile: error: %s\n", text.c_str());
  }
  std::exit(2);
}

} // namespace

int main(int argc, char **argv) {
  // Installed (PREFIX/bin): the code generator's headers in PREFIX/include.
  sluice::useInstalledHeaders();
  sluice::CompileRequest request;
  std::vector<std::string> errors;
  sluice::parseCompileFlags(argc, argv, request, errors);
  if (request.help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  // The cross-option checks only of options that parsed.
  if (errors.empty())
    sluice::checkCompileRequest(request, errors);
  if (!errors.empty())
    dieWith(errors);
  std::string error;
  if (request.precompileHeaders) {
    std::string path;
    if (!sluice::precompileHeaders(request, path, error))
      dieWith({error});
    std::printf("%s\n", path.c_str());
    return 0;
  }
  sluice::CompileSession session(std::move(request));
  if (!session.run(error))
    dieWith({error});
  return 0;
}
