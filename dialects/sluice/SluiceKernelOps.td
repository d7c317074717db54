//===- SluiceKernelOps.td - kernel groups ----------------------*- tablegen -*-===//
//
// The fuse phase's output: every compute op of a function sits in exactly one
// `sluice.kernel`, a region isolated from above whose body is the group of ops
// one generated kernel (or one library call) computes. Weights enter as
// operands; small constants (scalars, shapes, axes) are cloned into the body
// so that code generation reads them as compile-time values.
//
//===----------------------------------------------------------------------===//

#ifndef SLUICE_KERNEL_OPS_TD
#define SLUICE_KERNEL_OPS_TD

include "dialects/sluice/SluiceBase.td"

def Sluice_KernelOp : Op<Sluice_Dialect, "kernel", [IsolatedFromAbove,
    SingleBlock, RecursiveMemoryEffects]> {
  let summary = "a group of ops computed by one generated kernel or library call";
  let description = [{
    The body's block arguments are the kernel's inputs, in operand order; its
    `sluice.kernel_yield` gives the results. `library` names the library
    routine that computes the group instead of generated code (`gemm`,
    `conv`); absent, the group is a generated kernel. `sym_name` is the
    kernel's name in generated code, traces and reports.

    ```mlir
    %0 = sluice.kernel @k0_add (%a, %b : tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {
    ^bb0(%x: tensor<4xf32>, %y: tensor<4xf32>):
      %s = sluice.add %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      sluice.kernel_yield %s : tensor<4xf32>
    }
    ```
  }];
  let arguments = (ins Variadic<Sluice_AnyValue>:$inputs, SymbolNameAttr:$sym_name,
                       OptionalAttr<StrAttr>:$library);
  let results = (outs Variadic<Sluice_AnyValue>:$outputs);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $sym_name (`library` $library^)? `(` ($inputs^ `:` type($inputs))? `)`
    `->` `(` type($outputs) `)` $body attr-dict
  }];
  let hasVerifier = 1;
}

def Sluice_KernelYieldOp : Op<Sluice_Dialect, "kernel_yield", [Pure, Terminator,
    HasParent<"KernelOp">]> {
  let summary = "returns a kernel group's results";
  let arguments = (ins Variadic<Sluice_AnyValue>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

#endif // SLUICE_KERNEL_OPS_TD
