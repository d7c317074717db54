//===- SluiceParallelOps.td - sharded weights and collectives -*- tablegen -*-===//
//
// What the parallelize phase (passes/parallel) writes: a program that every
// rank of a 1-D device grid runs (SPMD), with the weights each rank holds and
// the collectives that connect the ranks. `group_size` is the number of
// ranks a collective spans (the grid's size). The reference evaluator runs
// one rank: it computes these ops only for a group of one.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_PARALLEL_OPS_TD
#define SLUICE_PARALLEL_OPS_TD

include "dialects/sluice/SluiceBase.td"

def Sluice_ShardConstantOp : Sluice_Op<"shard_constant",
    [DeclareOpInterfaceMethods<InferTypeOpInterface>]> {
  let summary = "this rank's block of a weight split over the ranks";
  let description = [{
    `value` is the whole tensor; rank r holds block r of `parts` equal blocks
    along `axis` of each of `groups` equal groups along that axis (a fused
    Q/K/V weight is three groups: every rank takes its heads of each). The
    result is one rank's block. The bundle writer slices it at compile time
    into each rank's weights file; it is never folded, so a value that
    differs per rank never becomes a compile-time literal.

    ```mlir
    %w = sluice.shard_constant dense_resource<qkv> {axis = 1, parts = 2, groups = 3}
           : tensor<64x192xf32> -> tensor<64x96xf32>  // the value prints its type
    ```
  }];
  let arguments = (ins ElementsAttr:$value, I64Attr:$axis, I64Attr:$parts,
                   DefaultValuedAttr<I64Attr, "1">:$groups);
  let results = (outs Sluice_Tensor:$output);
  let assemblyFormat = "$value attr-dict `->` type($output)";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The element offset ranges (in the whole tensor, along `axis`) that
    /// rank `rank` holds, one per group.
    llvm::SmallVector<std::pair<int64_t, int64_t>> blocksOf(int64_t rank);
  }];
}

class Sluice_CollectiveOp<string mnemonic, list<Trait> traits = []>
    : Sluice_InferredOp<mnemonic, !listconcat(traits, [Sluice_Collective])> {
  let results = (outs Sluice_Tensor:$output);
  let hasVerifier = 1;
}

def Sluice_AllReduceOp : Sluice_CollectiveOp<"all_reduce"> {
  let summary = "the elementwise sum of `input` over the ranks of the group";
  let arguments = (ins Sluice_Tensor:$input, I64Attr:$group_size);
}

def Sluice_AllGatherOp : Sluice_CollectiveOp<"all_gather"> {
  let summary = "every rank's `input` concatenated along `axis` in rank order";
  let arguments = (ins Sluice_Tensor:$input, I64Attr:$axis, I64Attr:$group_size);
}

def Sluice_ReduceScatterOp : Sluice_CollectiveOp<"reduce_scatter"> {
  let summary = "block `rank` along `axis` of the sum of `input` over the ranks";
  let arguments = (ins Sluice_Tensor:$input, I64Attr:$axis, I64Attr:$group_size);
}

def Sluice_AllToAllOp : Sluice_CollectiveOp<"all_to_all"> {
  let summary = "block p along axis 0 goes to rank p; result block p came from rank p";
  let arguments = (ins Sluice_Tensor:$input, I64Attr:$group_size);
}

#endif // SLUICE_PARALLEL_OPS_TD
