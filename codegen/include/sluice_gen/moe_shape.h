//===- sluice_gen/moe_shape.h - what a MoE kernel is told -------*- C++ -*-===//
//
// The sizes and options of one `sluice.moe` (written by the emitters,
// codegen/common/MoeShape.cpp) and its experts' activation: shared by the
// cpu kernel (cpu_moe.h) and the device kernels (cuda_moe.h).
//
//===----------------------------------------------------------------------===//
#ifndef SLUICE_GEN_MOE_SHAPE_H
#define SLUICE_GEN_MOE_SHAPE_H

#include "sluice_gen/scalar.h"

#include <math.h>

/// Compile-time facts of one moe op. `per_sample`: tokens per router entry
/// (hard gating: the sequence length; top_k: 1).
struct sluice_moe_shape {
  int64_t tokens, d, f, d_out, experts, local, top_k, per_sample;
  bool hard, normalize;
  int activation; ///< 0 none, 1 relu, 2 gelu, 3 gelu_tanh, 4 silu
};

SLUICE_HD float sluice_moe_activate(int activation, float v) {
  switch (activation) {
  case 1:
    return v > 0.0f ? v : 0.0f;
  case 2:
    return 0.5f * v * (1.0f + erff(v * 0.70710678118654752f));
  case 3:
    return 0.5f * v * (1.0f + tanhf(0.79788456080286536f * (v + 0.044715f * v * v * v)));
  case 4:
    return v / (1.0f + expf(-v));
  default:
    return v;
  }
}

#endif // SLUICE_GEN_MOE_SHAPE_H
