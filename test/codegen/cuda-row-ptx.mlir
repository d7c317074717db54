// REQUIRES: nvcc
// RUN: rm -rf %t && mkdir -p %t
// RUN: sluice-compile %s --target=cuda --gpu-arch=sm_90 --emit=source -o %t/model.cu
// RUN: sh -c 'nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc); "$nvcc" -std=c++17 -O3 -w --expt-relaxed-constexpr -arch=sm_90 -ptx -I%S/../../codegen/include -I%S/../../include %t/model.cu -o %t/model.ptx'
// RUN: FileCheck %s < %t/model.ptx
// RUN: FileCheck %s --check-prefix=HW < %t/model.ptx
//
// What the f16 row kernels compile to (PTX for sm_90): the register path's
// 16-byte loads of a row come with no branch between them (a lane holding
// every slot loads them with the prologue's stores unconditional; the
// others load valid addresses and drop the values), and half conversions are the hardware's
// cvt, not scalar.h's host spelling (whose f16 -> f32 rebias adds
// 0x38000000 = 939524096): that spelling, about 15 integer operations an
// element, made these kernels ALU-bound on the GPU.

// GPT-2's residual add + layer_norm, rows of 768: 3 vectors of 8 halves per
// lane from each of the two inputs.
// CHECK-LABEL: .entry {{.*}}k0_layer_norm
// CHECK: ld.global.nc.v4.u32
// CHECK-NOT: bra
// CHECK-COUNT-5: ld.global.nc.v4.u32
// CHECK: shfl.sync.bfly
// Softmax over rows of 1024: 4 vectors per lane.
// CHECK-LABEL: .entry {{.*}}k1_softmax
// CHECK: ld.global.nc.v4.u32
// CHECK-NOT: bra
// CHECK-COUNT-3: ld.global.nc.v4.u32
// CHECK: shfl.sync.bfly

// HW: cvt.f32.f16
// HW: cvt.rn.f16.f32
// HW-NOT: 939524096

module {
  func.func @main(%x: tensor<8x768xf16>, %h: tensor<8x768xf16>, %g: tensor<768xf16>, %be: tensor<768xf16>,
                  %s: tensor<2x4x1024xf16>)
      -> (tensor<8x768xf16>, tensor<8x768xf16>, tensor<2x4x1024xf16>)
      attributes {sluice.input_names = ["x", "h", "g", "be", "s"],
                  sluice.output_names = ["o0", "o1", "o2"]} {
    %0:2 = sluice.kernel @k0_layer_norm(%x, %h, %g, %be : tensor<8x768xf16>, tensor<8x768xf16>, tensor<768xf16>, tensor<768xf16>) -> (tensor<8x768xf16>, tensor<8x768xf16>) {
    ^bb0(%a: tensor<8x768xf16>, %b: tensor<8x768xf16>, %sc: tensor<768xf16>, %bi: tensor<768xf16>):
      %sum = sluice.add %a, %b : (tensor<8x768xf16>, tensor<8x768xf16>) -> tensor<8x768xf16>
      %o, %mean, %inv = sluice.layer_norm %sum, %sc, %bi {axis = -1 : i64} : (tensor<8x768xf16>, tensor<768xf16>, tensor<768xf16>) -> (tensor<8x768xf16>, tensor<8x1xf32>, tensor<8x1xf32>)
      sluice.kernel_yield %o, %sum : tensor<8x768xf16>, tensor<8x768xf16>
    }
    %1 = sluice.kernel @k1_softmax(%s : tensor<2x4x1024xf16>) -> (tensor<2x4x1024xf16>) {
    ^bb0(%a: tensor<2x4x1024xf16>):
      %y = sluice.softmax %a {axis = -1 : i64} : (tensor<2x4x1024xf16>) -> tensor<2x4x1024xf16>
      sluice.kernel_yield %y : tensor<2x4x1024xf16>
    }
    return %0#0, %0#1, %1 : tensor<8x768xf16>, tensor<8x768xf16>, tensor<2x4x1024xf16>
  }
}
