//===- CostModel.h - predicted time of ops, devices and links -*- C++ -*-===//
//
// The parallelize phase's one cost model, shared by the pipeline cut
// (stages balanced by predicted time, not by layer counts), the expert
// placement and the automatic plan (--devices --auto). An op costs its
// floating-point operations and the bytes it reads and writes (weights
// included); a device runs it in the roofline time max(flops / peak,
// bytes / bandwidth) plus a launch overhead; a link moves a message of S
// bytes in alpha + S / beta (the alpha-beta model). The defaults describe
// one H100 SXM in an 8-GPU NVLink node (docs/parallel.md gives the
// sources); a cluster file (--cluster=FILE.json) replaces them.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_PASSES_PARALLEL_COSTMODEL_H
#define SLUICE_PASSES_PARALLEL_COSTMODEL_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Operation.h"

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <vector>

namespace sluice::parallel {

/// What one op computes and moves, for one run at the compiled shapes.
struct OpCost {
  double flops = 0; ///< floating-point operations (a multiply-add is 2)
  double bytes = 0; ///< bytes read (operands, weights included) + written
  OpCost &operator+=(const OpCost &o) {
    flops += o.flops;
    bytes += o.bytes;
    return *this;
  }
};

/// One device's speeds. Defaults: H100 SXM5, dense fp16/bf16 tensor cores
/// (989 TFLOP/s; fp32 inputs run as TF32 at half that), HBM3 3.35 TB/s,
/// 80 GB.
struct DeviceModel {
  double flopsPerSecond = 989e12;
  double bytesPerSecond = 3.35e12;
  double memoryBytes = 80e9;
  /// Per-kernel launch and synchronization overhead, seconds.
  double launchSeconds = 4e-6;
};

/// A link's alpha-beta model: a message of S bytes takes alpha + S / beta.
struct LinkModel {
  double latencySeconds = 0; ///< alpha
  double bytesPerSecond = 0; ///< beta
  double seconds(double bytes) const { return latencySeconds + bytes / bytesPerSecond; }
};

/// A cluster: identical nodes of `devicesPerNode` devices. Defaults: 8x H100
/// SXM per node, NVLink 4 (450 GB/s per direction per GPU, ~3 us), and
/// 400 Gb/s InfiniBand NDR per GPU between nodes (50 GB/s, ~5 us).
struct ClusterModel {
  DeviceModel device;
  int64_t devicesPerNode = 8;
  int64_t nodes = 1;
  LinkModel intraNode{3e-6, 450e9};
  LinkModel interNode{5e-6, 50e9};
  /// The link between the ranks of a group of `groupSize` consecutive
  /// ranks: NVLink when the group fits in a node, else the network.
  const LinkModel &linkFor(int64_t groupSize) const {
    return groupSize <= devicesPerNode ? intraNode : interNode;
  }
};

/// Bytes of a ranked tensor type's elements (0 for a dynamic shape).
double tensorBytes(mlir::Type type);

/// The cost of one op at its static shapes: matmul 2*batch*M*N*K, conv 2 x
/// outputs x (C/group x kernel), attention 4*B*H*Sq*Sk*D (QK^T and PV; half
/// of it under `causal`), elementwise and normalization ops a few flops per
/// element; bytes are the op's operands plus its results. Views, constants
/// and collectives cost nothing here (collectives are costed by the links).
OpCost costOf(mlir::Operation *op);

/// The sum of costOf over the ops of `func`.
OpCost costOf(mlir::func::FuncOp func);

/// Roofline seconds of `cost` on `device` (one kernel launch included when
/// the cost is not zero). fp32 GEMMs run at half the peak (TF32):
/// `fp32Gemm` says the flops are such.
double predictedSeconds(const OpCost &cost, const DeviceModel &device, bool fp32Gemm = false);

/// Ring-algorithm seconds of a collective over `groupSize` ranks on `link`,
/// for a whole tensor of `bytes`: all_reduce 2(W-1) steps of bytes/W,
/// all_gather / reduce_scatter / all_to_all (W-1) steps of bytes/W.
/// `op` is "all_reduce", "all_gather", "reduce_scatter", "all_to_all" or
/// "send" (one message of `bytes`).
double collectiveSeconds(llvm::StringRef op, double bytes, int64_t groupSize,
                         const LinkModel &link);

/// Cuts a sequence of ops with `costs` (seconds each, in schedule order)
/// into `parts` contiguous stages whose largest total is as small as
/// possible, cutting only before an op i with `canCutBefore[i]` (empty:
/// anywhere). Returns the index of each stage's first op (the first is 0),
/// or an empty vector when fewer than `parts` non-empty stages can be made.
std::vector<size_t> balancedCut(llvm::ArrayRef<double> costs, int64_t parts,
                                llvm::ArrayRef<bool> canCutBefore = {});

} // namespace sluice::parallel

#endif // SLUICE_PASSES_PARALLEL_COSTMODEL_H
