//===- SluicePipelineOps.td - pipeline stages' transfers -*- tablegen -*-===//
//
// What sluice-pipeline (passes/parallel/Pipeline.cpp) writes between the
// stages of a pipeline-parallel program: the activations one stage sends to
// a later one. Its own family (and header, SluicePipelineOps.h) so that only
// the files that handle it include it.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_PIPELINE_OPS_TD
#define SLUICE_PIPELINE_OPS_TD

include "dialects/sluice/SluiceBase.td"

def Sluice_TransferOp : Sluice_InferredOp<"transfer", [Sluice_Collective]> {
  let summary = "a pipeline stage's activation, sent to a later stage";
  let description = [{
    `input` computed by the ranks of pipeline stage `from` is sent to the
    ranks of stage `to` (> `from`), which compute with the result. Stages
    hold `stage_size` consecutive ranks each (the tensor-parallel ranks of
    one stage, docs/parallel.md "Pipeline parallelism"): rank r of stage
    `from` sends to rank r + (to - from) x stage_size. In one program (the
    evaluator, a single device) it is the identity.

    ```mlir
    %1 = sluice.transfer %0 {from = 0 : i64, stage_size = 1 : i64, to = 1 : i64}
           : (tensor<1x16x64xf32>) -> tensor<1x16x64xf32>
    ```
  }];
  let arguments = (ins Sluice_Tensor:$input, I64Attr:$from, I64Attr:$to,
                   DefaultValuedAttr<I64Attr, "1">:$stage_size);
  let results = (outs Sluice_Tensor:$output);
  let hasVerifier = 1;
}

#endif // SLUICE_PIPELINE_OPS_TD
