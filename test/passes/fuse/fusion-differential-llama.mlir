// A LLaMA-style block (separate q/k/v and gate/up projections, rms_norm,
// sluice.attention on head views, SiLU MLP): the fused kernels compute what
// the unfused graph does on the reference evaluator, in 7 launches.
// RUN: rm -rf %t && mkdir -p %t
// RUN: sluice-run %s --reference --random-inputs --save-outputs=%t/ref
// RUN: sluice-opt %s --sluice-fuse-horizontal-gemms --sluice-fuse-groups --sluice-form-kernels -o %t/all.mlir
// RUN: sluice-run %t/all.mlir --reference --random-inputs --expect %t/ref/out.npy --rtol=1e-5 --atol=1e-6
// RUN: sluice-opt %s --sluice-fuse-groups=mode=elementwise --sluice-form-kernels -o %t/ew.mlir
// RUN: sluice-run %t/ew.mlir --reference --random-inputs --expect %t/ref/out.npy --rtol=1e-5 --atol=1e-6
// RUN: FileCheck %s < %t/all.mlir

// CHECK: sluice.kernel @k0_rms_norm
// CHECK: sluice.kernel @k1_matmul gemm library "gemm"
// CHECK-SAME: tensor<8x24xf32>
// CHECK: sluice.kernel @k2_attention
// CHECK: sluice.split
// CHECK: sluice.attention
// CHECK: sluice.kernel @k3_matmul gemm library "gemm"
// CHECK: sluice.kernel @k4_rms_norm
// CHECK: sluice.kernel @k5_matmul gemm library "gemm"
// CHECK-SAME: tensor<8x32xf32>
// CHECK: sluice.kernel @k6_mul
// CHECK: sluice.split
// CHECK: sluice.silu
// CHECK: sluice.kernel @k7_matmul gemm library "gemm"
// CHECK-NOT: sluice.kernel @
func.func @main(%x: tensor<2x5x8xf32>, %mask: tensor<2x1x1x5xf32>) -> tensor<2x5x8xf32> attributes {sluice.input_names = ["x", "mask"], sluice.output_names = ["out"]} {
  %g1 = sluice.constant dense<[0.634, 1.347, 1.264, 0.755, 0.995, 0.949, 1.152, 1.289]> : tensor<8xf32>
  %g2 = sluice.constant dense<[0.594, 0.528, 1.336, 0.933, 1.262, 0.502, 0.945, 1.222]> : tensor<8xf32>
  %wq = sluice.constant dense<[[-0.271, 0.445, 0.401, -0.469, -0.475, 0.041, 0.439, -0.119], [-0.283, -0.078, -0.471, -0.278, -0.062, -0.004, -0.267, -0.269], [-0.281, -0.040, -0.210, -0.479, 0.338, 0.056, 0.142, -0.314], [0.493, 0.360, -0.379, -0.167, 0.221, 0.211, 0.436, -0.078], [0.330, 0.170, -0.197, 0.088, 0.382, 0.346, 0.005, 0.089], [-0.465, -0.257, 0.297, -0.086, -0.327, 0.049, 0.203, 0.174], [-0.125, -0.061, 0.008, 0.278, 0.021, -0.107, -0.010, -0.470], [-0.457, 0.203, 0.483, 0.093, -0.106, -0.330, 0.002, 0.482]]> : tensor<8x8xf32>
  %wk = sluice.constant dense<[[0.271, 0.040, 0.360, -0.268, 0.014, 0.452, 0.078, -0.041], [-0.231, 0.048, 0.457, -0.494, 0.284, 0.320, 0.386, 0.241], [0.309, 0.019, 0.061, -0.074, -0.444, 0.370, 0.070, -0.300], [0.005, -0.015, -0.143, -0.154, 0.038, 0.123, 0.112, -0.042], [-0.472, -0.270, -0.323, 0.084, 0.361, 0.298, 0.297, 0.316], [-0.245, 0.342, 0.173, -0.417, -0.483, -0.485, 0.256, -0.250], [-0.391, 0.125, -0.156, -0.430, -0.340, 0.027, -0.332, -0.227], [0.212, -0.045, -0.178, -0.026, -0.476, -0.113, -0.079, -0.312]]> : tensor<8x8xf32>
  %wv = sluice.constant dense<[[-0.391, 0.400, 0.010, -0.291, 0.106, 0.317, -0.479, -0.482], [-0.354, 0.219, -0.340, 0.205, 0.178, 0.045, -0.279, 0.476], [0.298, 0.017, -0.277, 0.149, -0.105, 0.076, -0.179, 0.131], [-0.441, -0.201, 0.468, 0.376, -0.194, 0.359, -0.190, 0.439], [0.244, -0.084, -0.248, -0.492, 0.379, -0.462, 0.319, 0.462], [0.070, -0.328, 0.368, 0.474, 0.204, 0.009, -0.122, -0.153], [-0.294, 0.174, -0.067, -0.306, -0.396, 0.166, -0.204, -0.000], [-0.175, 0.372, 0.400, -0.482, -0.299, -0.172, 0.487, 0.283]]> : tensor<8x8xf32>
  %wo = sluice.constant dense<[[-0.161, -0.287, 0.174, 0.338, 0.432, -0.156, 0.382, 0.187], [-0.016, 0.486, -0.265, 0.225, -0.415, -0.330, 0.411, -0.287], [0.259, 0.100, 0.341, -0.132, -0.160, -0.209, 0.367, 0.104], [0.454, 0.387, -0.365, 0.051, -0.396, -0.461, -0.427, 0.366], [0.288, 0.329, -0.159, 0.115, 0.282, -0.122, 0.071, -0.276], [-0.418, -0.233, 0.391, 0.064, 0.425, -0.042, -0.223, 0.287], [0.328, -0.488, 0.170, -0.408, -0.385, 0.385, -0.460, -0.260], [0.488, -0.079, -0.384, -0.333, -0.259, 0.244, -0.397, 0.411]]> : tensor<8x8xf32>
  %wg = sluice.constant dense<[[-0.122, 0.470, 0.409, -0.206, -0.247, -0.023, -0.400, 0.152, -0.460, -0.489, 0.483, -0.204, 0.097, -0.050, -0.187, -0.437], [0.413, 0.470, 0.470, -0.389, -0.285, 0.118, 0.480, 0.043, 0.188, 0.162, -0.241, 0.042, -0.193, -0.254, -0.419, -0.219], [0.483, -0.052, 0.152, 0.143, 0.441, -0.110, -0.193, -0.173, -0.183, 0.347, 0.394, -0.197, -0.166, 0.044, 0.079, 0.096], [-0.255, -0.480, -0.256, -0.428, 0.051, -0.429, -0.425, 0.135, -0.209, 0.292, -0.007, 0.363, -0.346, 0.001, 0.295, -0.423], [0.449, -0.327, 0.276, 0.485, 0.322, -0.180, -0.393, 0.014, 0.419, -0.207, 0.394, -0.358, 0.410, -0.468, -0.184, 0.403], [0.304, 0.407, 0.341, 0.246, 0.190, -0.322, -0.067, -0.342, 0.215, 0.168, -0.247, -0.436, 0.463, 0.308, 0.049, 0.041], [0.351, -0.047, -0.104, -0.161, -0.242, -0.476, 0.146, -0.083, 0.071, -0.438, -0.145, -0.362, -0.375, -0.241, 0.329, -0.102], [-0.099, 0.112, -0.266, -0.493, 0.029, 0.001, 0.149, -0.062, 0.187, 0.231, -0.262, -0.005, -0.021, -0.275, -0.088, 0.060]]> : tensor<8x16xf32>
  %wu = sluice.constant dense<[[0.407, 0.418, -0.225, 0.146, -0.452, -0.428, 0.012, 0.377, -0.341, 0.266, 0.383, -0.188, 0.193, 0.349, -0.128, 0.201], [0.236, 0.095, 0.356, 0.397, 0.460, 0.071, -0.324, -0.249, -0.282, 0.070, 0.258, -0.448, 0.182, 0.217, -0.152, 0.015], [-0.335, 0.230, -0.459, 0.481, 0.308, 0.128, -0.232, 0.413, 0.459, -0.361, 0.276, 0.342, 0.160, 0.200, -0.055, 0.424], [0.471, -0.118, 0.303, -0.067, -0.335, -0.175, -0.374, 0.409, 0.459, -0.381, 0.101, -0.092, -0.382, -0.205, -0.252, 0.250], [-0.496, -0.310, -0.061, -0.479, 0.128, 0.106, 0.335, -0.293, -0.215, 0.042, -0.227, 0.086, -0.249, 0.184, 0.291, 0.309], [0.474, 0.045, -0.009, 0.356, 0.269, 0.071, -0.117, -0.216, -0.392, 0.308, -0.382, 0.247, 0.045, 0.465, 0.261, 0.474], [-0.363, 0.000, 0.073, -0.189, 0.003, -0.143, 0.028, -0.499, -0.058, -0.050, -0.195, -0.101, 0.283, 0.183, -0.008, 0.148], [-0.122, -0.296, -0.496, -0.222, 0.098, 0.382, 0.329, 0.011, 0.487, -0.038, 0.335, -0.091, 0.245, 0.488, -0.195, -0.330]]> : tensor<8x16xf32>
  %wd = sluice.constant dense<[[0.120, 0.031, -0.141, -0.496, -0.111, -0.074, -0.095, 0.361], [0.084, 0.234, 0.398, 0.249, -0.007, 0.246, 0.140, 0.149], [0.130, -0.093, 0.129, 0.134, 0.437, 0.282, 0.346, 0.267], [0.315, 0.105, -0.151, -0.235, 0.208, 0.374, 0.044, -0.348], [0.333, -0.015, -0.033, -0.455, 0.010, 0.245, -0.077, -0.145], [0.157, -0.480, 0.007, 0.446, 0.190, -0.098, 0.189, 0.105], [-0.291, -0.292, 0.386, -0.231, -0.425, 0.331, 0.023, -0.132], [0.012, 0.237, -0.331, 0.153, 0.213, 0.315, -0.230, 0.110], [-0.268, 0.061, -0.328, 0.290, 0.367, -0.170, -0.278, 0.464], [0.207, 0.344, -0.469, 0.399, 0.122, -0.183, -0.068, 0.262], [0.285, -0.310, 0.126, -0.334, 0.473, -0.056, 0.413, 0.228], [0.106, -0.238, 0.027, -0.361, -0.362, 0.216, -0.139, 0.251], [-0.260, 0.218, 0.218, -0.195, -0.394, -0.103, -0.008, -0.400], [-0.313, -0.445, 0.098, 0.389, -0.283, -0.465, 0.204, 0.315], [0.464, 0.113, -0.158, 0.338, -0.382, 0.193, -0.405, -0.100], [-0.005, -0.122, -0.331, -0.268, 0.320, -0.037, 0.080, -0.288]]> : tensor<16x8xf32>
  %heads = sluice.constant dense<[2, 5, 2, 4]> : tensor<4xi64>
  %flat = sluice.constant dense<[2, 5, 8]> : tensor<3xi64>
  %h = sluice.rms_norm %x, %g1 {epsilon = 1.0e-5 : f32} : (tensor<2x5x8xf32>, tensor<8xf32>) -> tensor<2x5x8xf32>
  %q = sluice.matmul %h, %wq : (tensor<2x5x8xf32>, tensor<8x8xf32>) -> tensor<2x5x8xf32>
  %k = sluice.matmul %h, %wk : (tensor<2x5x8xf32>, tensor<8x8xf32>) -> tensor<2x5x8xf32>
  %v = sluice.matmul %h, %wv : (tensor<2x5x8xf32>, tensor<8x8xf32>) -> tensor<2x5x8xf32>
  %q4 = sluice.reshape %q, %heads : (tensor<2x5x8xf32>, tensor<4xi64>) -> tensor<2x5x2x4xf32>
  %k4 = sluice.reshape %k, %heads : (tensor<2x5x8xf32>, tensor<4xi64>) -> tensor<2x5x2x4xf32>
  %v4 = sluice.reshape %v, %heads : (tensor<2x5x8xf32>, tensor<4xi64>) -> tensor<2x5x2x4xf32>
  %qt = sluice.transpose %q4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x5x2x4xf32>) -> tensor<2x2x5x4xf32>
  %kt = sluice.transpose %k4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x5x2x4xf32>) -> tensor<2x2x5x4xf32>
  %vt = sluice.transpose %v4 {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x5x2x4xf32>) -> tensor<2x2x5x4xf32>
  %a = sluice.attention %qt, %kt, %vt mask %mask {scale = 0.5 : f32, causal = true} : (tensor<2x2x5x4xf32>, tensor<2x2x5x4xf32>, tensor<2x2x5x4xf32>, tensor<2x1x1x5xf32>) -> tensor<2x2x5x4xf32>
  %at = sluice.transpose %a {perm = array<i64: 0, 2, 1, 3>} : (tensor<2x2x5x4xf32>) -> tensor<2x5x2x4xf32>
  %af = sluice.reshape %at, %flat : (tensor<2x5x2x4xf32>, tensor<3xi64>) -> tensor<2x5x8xf32>
  %o = sluice.matmul %af, %wo : (tensor<2x5x8xf32>, tensor<8x8xf32>) -> tensor<2x5x8xf32>
  %r = sluice.add %x, %o : (tensor<2x5x8xf32>, tensor<2x5x8xf32>) -> tensor<2x5x8xf32>
  %h2 = sluice.rms_norm %r, %g2 {epsilon = 1.0e-5 : f32} : (tensor<2x5x8xf32>, tensor<8xf32>) -> tensor<2x5x8xf32>
  %gate = sluice.matmul %h2, %wg : (tensor<2x5x8xf32>, tensor<8x16xf32>) -> tensor<2x5x16xf32>
  %up = sluice.matmul %h2, %wu : (tensor<2x5x8xf32>, tensor<8x16xf32>) -> tensor<2x5x16xf32>
  %s = sluice.silu %gate : (tensor<2x5x16xf32>) -> tensor<2x5x16xf32>
  %p = sluice.mul %s, %up : (tensor<2x5x16xf32>, tensor<2x5x16xf32>) -> tensor<2x5x16xf32>
  %d = sluice.matmul %p, %wd : (tensor<2x5x16xf32>, tensor<16x8xf32>) -> tensor<2x5x8xf32>
  %out = sluice.add %r, %d : (tensor<2x5x8xf32>, tensor<2x5x8xf32>) -> tensor<2x5x8xf32>
  return %out : tensor<2x5x8xf32>
}
