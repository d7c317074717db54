#!/usr/bin/env python3
"""Runs the quantized GEMM steps of a cuda bundle's generated model.cu on the host.

usage: cuda_quant_emulate.py MODEL.mlir|GENERATOR:NAME[:QUANTIZE] WORKDIR
           --compile=SLUICE_COMPILE
           --run=SLUICE_RUN --cxx=CXX --include=DIR ... --path=imma|tiles
           [--min-steps=N] [--rtol=R --atol=A]

GENERATOR:NAME (int8_modules or wonly_modules) writes module NAME of
test/codegen/Inputs/GENERATOR.py into WORKDIR and uses it; QUANTIZE
(w8a16, w4a16; w4a16,fp16 with --precision=fp16) runs sluice-opt's
compress phase with it first.

1. random inputs (numpy, fixed seed) go through the reference evaluator
   (sluice-run --reference);
2. sluice-compile --target=cuda writes model.cu (built by nvcc as usual)
   and weights.bin (the int8 weights packed for IMMA: column sums, B^T);
3. the device namespaces and step functions of the quantized GEMM groups
   (codegen/cuda/groups/QuantGemm.cpp: their generated epilogue functor and
   the sluice_int8_gemm, sluice_int8_conv or sluice_wonly_gemm call) and of
   the elementwise groups (the quantize kernels feeding them) are taken
   from model.cu as they are, launches turned into sluice_emu::launch
   (test/unit/CudaRowEmulation.h), compiled with the host compiler and run
   on the same inputs. sluice_int8_gemm is
   the stand-in below, built from the real device templates of
   sluice_gen/cuda_quant_kernels.cuh: --path=tiles runs the CUDA-core tile
   kernel; --path=imma runs the IMMA path as sluice_gen/cuda_quant.cuh
   does it (u8 A shifted to s8, the s8 x s8 product -- on the host, in
   cuBLASLt's place --, device column sums when none are given, the
   zero-point-correcting epilogue) where the wrapper would (B [N, K], K
   and N multiples of 4), the tile kernel elsewhere; sluice_int8_conv runs
   the real im2col kernel, then that GEMM per group. The weight-only GEMM
   groups' steps (their functor and the sluice_wonly_gemm call) run with a
   stand-in too: the real GEMV kernel (with its split-K reduce) for M <= 16,
   and above it the dequantize kernel and a host GEMM in cuBLASLt's place;
4. every output those steps write is compared with the evaluator's.
Exit 0 when at least --min-steps quantized GEMM steps ran and every output
matched.
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cuda_emulate_common as common  # noqa: E402

PRELUDE = [
    '#include "CudaRowEmulation.h"',
    "#define __align__(n) alignas(n)",
    '#include "sluice_gen/scalar.h"',
    '#include "sluice_gen/cuda_quant_kernels.cuh"',
    common.PRELUDE,
    "static unsigned sluice_grid(int64_t n, int block, int per = 1) {",
    "  int64_t blocks = (n + (int64_t)block * per - 1) / ((int64_t)block * per);",
    "  return (unsigned)(blocks < 1 ? 1 : blocks > 65535LL * 32 ? 65535LL * 32 : blocks);",
    "}",
    "static int32_t sluice_fail(const SluiceRunArgs *, const char *, const char *) { return 1; }",
    r'''
static bool emu_imma = false;
static int emu_imma_calls = 0, emu_tile_calls = 0;
static struct EmuReport {
  ~EmuReport() {
    if (emu_imma_calls + emu_tile_calls)
      printf("int8 GEMM calls: %d IMMA, %d tiles\n", emu_imma_calls, emu_tile_calls);
  }
} emu_report;
// sluice_gen/cuda_quant.cuh's sluice_int8_gemm, on the emulated device.
template <typename Epi>
static int32_t sluice_int8_gemm(const SluiceRunArgs *, SluiceCudaState *, const char *,
                                const SluiceInt8GemmShape &g, const void *a, const int8_t *b,
                                const int32_t *colsum, const Epi &epi, size_t, cudaStream_t) {
  const int64_t batch = g.batch < 1 ? 1 : g.batch;
  const bool nk = g.bLayout == SLUICE_INT8_B_NK;
  const int64_t sbk = nk ? 1 : g.ldb, sbn = nk ? g.ldb : 1;
  // The IMMA path where sluice_int8_imma_eligible takes it (pointer
  // alignment aside), the tile kernel elsewhere.
  const bool imma = emu_imma && nk && g.k % 4 == 0 && g.n % 4 == 0 && g.ldb % 4 == 0 &&
                    (g.aUnsigned || g.lda % 4 == 0);
  ++(imma ? emu_imma_calls : emu_tile_calls);
  if (!imma) {
    const int64_t tilesM = (g.m + 63) / 64, tilesN = (g.n + 63) / 64;
    sluice_emu::launch((unsigned)(tilesM * tilesN * batch), 256, [&] {
      const int64_t bid = sluice_emu::blockIdx.x, tileN = bid % tilesN, rest = bid / tilesN;
      if (g.aUnsigned)
        sluice_int8_tile_body((const uint8_t *)a, g.lda, g.strideA, b, sbk, sbn, g.strideB,
                              g.aZeroPoint, g.m, g.n, g.k, rest % tilesM, tileN, rest / tilesM, epi);
      else
        sluice_int8_tile_body((const int8_t *)a, g.lda, g.strideA, b, sbk, sbn, g.strideB,
                              g.aZeroPoint, g.m, g.n, g.k, rest % tilesM, tileN, rest / tilesM, epi);
    });
    return 0;
  }
  const int32_t zc = sluice_int8_zero_correction(g.aUnsigned != 0, g.aZeroPoint);
  std::vector<int8_t> shifted;
  const int8_t *as = (const int8_t *)a;
  int64_t lda = g.lda, strideA = g.strideA;
  if (g.aUnsigned) {
    shifted.resize(batch * g.m * g.k);
    sluice_emu::launch(4, 64, [&] {
      sluice_int8_shift_body((const uint8_t *)a, g.lda, g.strideA, g.m, batch * g.m, g.k,
                             shifted.data());
    });
    as = shifted.data();
    lda = g.k;
    strideA = g.m * g.k;
  }
  std::vector<int32_t> deviceColsum;
  if (zc && !colsum) {
    const int64_t rows = g.strideB ? batch : 1;
    deviceColsum.resize(rows * g.n);
    sluice_emu::launch(2, 64, [&] {
      sluice_int8_colsum_body(b, 1, g.ldb, g.strideB, rows, g.k, g.n, deviceColsum.data());
    });
    colsum = deviceColsum.data();
  }
  // cuBLASLt's part: s8 x s8 in int32, wrapping.
  std::vector<int32_t> acc(batch * g.m * g.n);
  for (int64_t bi = 0; bi < batch; ++bi)
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) {
        uint32_t s = 0;
        for (int64_t p = 0; p < g.k; ++p)
          s += (uint32_t)((int32_t)as[bi * strideA + i * lda + p] *
                          (int32_t)b[bi * g.strideB + j * g.ldb + p]);
        acc[(bi * g.m + i) * g.n + j] = (int32_t)s;
      }
  sluice_emu::launch(3, 64, [&] {
    sluice_int8_epilogue_body(acc.data(), colsum, g.strideB ? g.n : 0, zc, batch, g.m, g.n, epi);
  });
  return 0;
}

template <typename Epi> struct EmuConvGroup {
  Epi epi;
  int64_t group;
  void operator()(int64_t, int64_t i, int64_t j, int32_t acc) const { epi(group, i, j, acc); }
};
// sluice_gen/cuda_quant.cuh's sluice_int8_conv: the im2col kernel, then the
// GEMM above per group.
template <typename Epi>
static int32_t sluice_int8_conv(const SluiceRunArgs *args, SluiceCudaState *state,
                                const char *kernel, const SluiceInt8ConvShape &c, const void *x,
                                const int8_t *w, const Epi &epi, size_t, cudaStream_t stream) {
  const SluiceInt8GemmShape g = sluice_int8_conv_gemm(c);
  std::vector<uint8_t> rows(g.m * g.k);
  for (int64_t group = 0; group < c.groups; ++group) {
    sluice_emu::launch(4, 64, [&] {
      if (c.aUnsigned)
        sluice_int8_im2col_body((const uint8_t *)x, c, group, rows.data());
      else
        sluice_int8_im2col_body((const int8_t *)x, c, group, (int8_t *)rows.data());
    });
    if (sluice_int8_gemm(args, state, kernel, g, rows.data(), w + group * g.n * g.k, nullptr,
                         EmuConvGroup<Epi>{epi, group}, 0, stream))
      return 1;
  }
  return 0;
}

static int emu_gemv_calls = 0, emu_large_calls = 0;
static struct EmuWonlyReport {
  ~EmuWonlyReport() {
    if (emu_gemv_calls + emu_large_calls)
      printf("weight-only GEMM calls: %d GEMV, %d dequantize + GEMM\n", emu_gemv_calls,
             emu_large_calls);
  }
} emu_wonly_report;
template <typename Epi> struct EmuRows {
  Epi epi;
  int64_t row0;
  void operator()(int64_t i, int64_t j, float y) const { epi(i + row0, j, y); }
};
template <int BITS, int MT, typename TA, typename TS, typename Epi>
static void emu_wonly_rows(const SluiceWonlyShape &g, int64_t row0, int64_t m, const TA *a,
                           const uint8_t *b, const TS *scales, const Epi &epi) {
  // As sluice_wonly_rows on a GPU of 132 SMs with ample workspace.
  const SluiceWonlyPlan plan = sluice_wonly_plan(m, g.n, g.k, BITS, 132);
  SluiceWonlyArgs p;
  p.m = m; p.n = g.n; p.k = g.k; p.lda = g.lda; p.ldb = BITS == 8 ? g.ldb : g.n;
  p.group = g.group > 0 ? g.group : g.k; p.kPerSplit = plan.kPerSplit;
  p.zeroPoint = g.zeroPoint; p.isSigned = g.isSigned != 0;
  p.vec = (uintptr_t)b % 16 == 0 && (BITS == 8 ? g.ldb % 16 == 0 : g.n % 32 == 0);
  const EmuRows<Epi> rows{epi, row0};
  const TA *ar = a + row0 * g.lda;
  std::vector<float> partial(plan.splits > 1 ? plan.splits * m * g.n : 0);
  sluice_emu::launch((unsigned)(plan.colTiles * plan.splits), SLUICE_WONLY_THREADS, [&] {
    const int64_t bid = sluice_emu::blockIdx.x;
    sluice_wonly_block<BITS, MT>(ar, b, scales, p, plan.splits > 1 ? partial.data() : nullptr,
                                 bid % plan.colTiles, bid / plan.colTiles, rows);
  });
  if (plan.splits > 1)
    sluice_emu::launch(2, 64, [&] {
      sluice_wonly_reduce_body(partial.data(), plan.splits, m, g.n, rows);
    });
}
template <int BITS, typename TA, typename TS, typename Epi>
static int32_t emu_wonly(const SluiceWonlyShape &g, const TA *a, const uint8_t *b,
                         const TS *scales, const Epi &epi) {
  if (g.m > SLUICE_WONLY_MAX_M) {
    // The large-M path: B dequantized into scratch (A's type), the GEMM
    // (on the host, in cuBLASLt's place, f32 sums), the store kernel.
    ++emu_large_calls;
    SluiceWonlyArgs p;
    memset(&p, 0, sizeof(p));
    p.m = g.m; p.n = g.n; p.k = g.k; p.ldb = BITS == 8 ? g.ldb : g.n;
    p.group = g.group > 0 ? g.group : g.k; p.zeroPoint = g.zeroPoint; p.isSigned = g.isSigned != 0;
    std::vector<TA> w(g.k * g.n);
    sluice_emu::launch(4, 64, [&] { sluice_wonly_dequant_body<BITS>(b, scales, p, w.data()); });
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) {
        float y = 0.0f;
        for (int64_t q = 0; q < g.k; ++q)
          y += sluice_quant_load(a[i * g.lda + q]) * sluice_quant_load(w[q * g.n + j]);
        epi(i, j, y);
      }
    return 0;
  }
  ++emu_gemv_calls;
  switch (sluice_wonly_m_tile(g.m)) {
  case 1: emu_wonly_rows<BITS, 1>(g, 0, g.m, a, b, scales, epi); break;
  case 2: emu_wonly_rows<BITS, 2>(g, 0, g.m, a, b, scales, epi); break;
  case 4: emu_wonly_rows<BITS, 4>(g, 0, g.m, a, b, scales, epi); break;
  case 8: emu_wonly_rows<BITS, 8>(g, 0, g.m, a, b, scales, epi); break;
  default: emu_wonly_rows<BITS, 16>(g, 0, g.m, a, b, scales, epi); break;
  }
  return 0;
}
// sluice_gen/cuda_quant.cuh's sluice_wonly_gemm, on the emulated device.
template <typename TA, typename TS, typename Epi>
static int32_t sluice_wonly_gemm(const SluiceRunArgs *, SluiceCudaState *, const char *,
                                 const SluiceWonlyShape &g, const TA *a, const void *b,
                                 const TS *scales, const Epi &epi, size_t, cudaStream_t) {
  return g.bits == 8 ? emu_wonly<8>(g, a, (const uint8_t *)b, scales, epi)
                     : emu_wonly<4>(g, a, (const uint8_t *)b, scales, epi);
}''']


def main():
    args = common.arguments(lambda p: p.add_argument("--path", choices=["imma", "tiles"],
                                                     required=True))
    spec = args.model.split(":")
    if spec[0] in ("int8_modules", "wonly_modules"):
        generator = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "codegen",
                                 "Inputs", spec[0] + ".py")
        args.model = os.path.join(args.work, "model.mlir")
        with open(args.model, "w") as f:
            subprocess.run([sys.executable, generator, spec[1]], stdout=f, check=True)
        if len(spec) > 2:
            # The compress phase's weight-only quantization, so that the
            # evaluator runs the same Form W module the bundle computes.
            opt = os.path.join(os.path.dirname(args.compile), "sluice-opt")
            quantized = os.path.join(args.work, "quantized.mlir")
            options = spec[2].split(",")
            pipeline = "quantize=" + options[0]
            if len(options) > 1:
                pipeline += " precision=" + options[1]
            with open(quantized, "w") as f:
                subprocess.run([opt, args.model, "--sluice-compress-pipeline=" + pipeline],
                               stdout=f, check=True)
            args.model = quantized
    bundle, manifest, source = common.compile_bundle(args)
    inputs = common.reference_run(args, manifest)

    namespaces = {m.group(1): m.group(0) for m in re.finditer(
        r"namespace (k\w+)_k \{\n.*?\n\} // namespace \1_k\n", source, re.S)}
    steps, run = common.step_functions(source)
    symbols = re.findall(r"SLUICE_SYMBOL\((k\w+)_k::(\w+)\);", source)
    int8_steps = [k for k in steps if "sluice_int8_gemm(" in steps[k] or
                  "sluice_int8_conv(" in steps[k] or "sluice_wonly_gemm(" in steps[k]]
    elementwise = [k for k in steps if re.search(r"\belementwise(_vec)?<<<", steps[k])]
    kept = int8_steps + elementwise

    launch = re.compile(r"(\w+)<<<(.*?), (\d+), 0, stream>>>\((.*?)\);")
    code = list(PRELUDE)
    for k in kept:
        if k in namespaces:
            code.append(namespaces[k])
    for k in kept:
        code.append(launch.sub(r"sluice_emu::launch(\2, \3, [&] { \1(\4); });", steps[k]))
    run_code, skipped = common.run_function(run, kept)
    code.append(run_code)
    setup = ["  the_state.symbols = {%s};" % ", ".join(
        "(void *)%s_k::%s" % (k, s) if k in kept else "nullptr" for k, s in symbols),
        "  emu_imma = %s;" % ("true" if args.path == "imma" else "false")]
    code.append(common.harness_main(manifest, setup))
    out_files = common.build_and_run(args, code, bundle, manifest, inputs)
    compared, failures = common.compare(args, manifest, out_files, skipped, "an int8 GEMM group")
    print("%d quantized GEMM steps (%s path for int8) and %d elementwise steps emulated, "
          "%d outputs compared, %d mismatched" % (len(int8_steps), args.path, len(elementwise),
                                                  compared, failures))
    return 0 if failures == 0 and len(int8_steps) >= args.min_steps else 1


if __name__ == "__main__":
    sys.exit(main())
