// The two tensor-core attention kernels of ../cuda-attention-half.mlir
// (f16 with D 64 and a mask, bf16 with D 128 and causal), which that test
// builds for sm_75, where sluice_attn_mma computes mma.sync with warp
// shuffles: nvcc takes minutes for each instance there, so the test builds
// these two, one per tile shape, rather than all seven kernels.
module {
  func.func @main(%q0: tensor<2x2x100x64xf16>, %k0: tensor<2x2x100x64xf16>, %v0: tensor<2x2x100x64xf16>, %mask0: tensor<2x1x1x100xf16>,
                  %q1: tensor<1x2x80x128xbf16>, %k1: tensor<1x2x80x128xbf16>, %v1: tensor<1x2x80x128xbf16>)
      -> (tensor<2x2x100x64xf16>, tensor<1x2x80x128xbf16>)
      attributes {sluice.input_names = ["q0", "k0", "v0", "mask0", "q1", "k1", "v1"],
                  sluice.output_names = ["o0", "o1"]} {
    %0 = sluice.kernel @k0_attention(%q0, %k0, %v0, %mask0 : tensor<2x2x100x64xf16>, tensor<2x2x100x64xf16>, tensor<2x2x100x64xf16>, tensor<2x1x1x100xf16>) -> (tensor<2x2x100x64xf16>) {
    ^bb0(%bq: tensor<2x2x100x64xf16>, %bk: tensor<2x2x100x64xf16>, %bv: tensor<2x2x100x64xf16>, %bm: tensor<2x1x1x100xf16>):
      %a = sluice.attention %bq, %bk, %bv mask %bm {scale = 1.250000e-01 : f32} : (tensor<2x2x100x64xf16>, tensor<2x2x100x64xf16>, tensor<2x2x100x64xf16>, tensor<2x1x1x100xf16>) -> tensor<2x2x100x64xf16>
      sluice.kernel_yield %a : tensor<2x2x100x64xf16>
    }
    %1 = sluice.kernel @k1_attention(%q1, %k1, %v1 : tensor<1x2x80x128xbf16>, tensor<1x2x80x128xbf16>, tensor<1x2x80x128xbf16>) -> (tensor<1x2x80x128xbf16>) {
    ^bb0(%bq: tensor<1x2x80x128xbf16>, %bk: tensor<1x2x80x128xbf16>, %bv: tensor<1x2x80x128xbf16>):
      %a = sluice.attention %bq, %bk, %bv {causal = true, scale = 0.0883883461 : f32} : (tensor<1x2x80x128xbf16>, tensor<1x2x80x128xbf16>, tensor<1x2x80x128xbf16>) -> tensor<1x2x80x128xbf16>
      sluice.kernel_yield %a : tensor<1x2x80x128xbf16>
    }
    return %0, %1 : tensor<2x2x100x64xf16>, tensor<1x2x80x128xbf16>
  }
}
