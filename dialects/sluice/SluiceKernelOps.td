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
include "dialects/sluice/SluiceAttrs.td"

def Sluice_KernelOp : Op<Sluice_Dialect, "kernel", [IsolatedFromAbove,
    SingleBlock, RecursiveMemoryEffects]> {
  let summary = "a group of ops computed by one generated kernel or library call";
  let description = [{
    The body's block arguments are the kernel's inputs, in operand order; its
    `sluice.kernel_yield` gives the results. `sym_name` is the kernel's name
    in generated code, traces and reports.

    `form` says which emitter computes the group (docs/architecture.md,
    "Kernel forms"): `elementwise` (F1: elementwise ops and views, one
    iteration space), `gemm` (F2: a GEMM library call with its epilogue),
    `row` (F3: a row op with prologue and epilogue), `attention` (F4),
    `library` (a convolution library call), `single` (F5: one op, with
    layout-preserving views as aliases) or `view` (one data-moving view with
    layout-preserving views around it). The fuse phase records the kernel
    model's judgement (KernelForms.h); the verifier checks the body against
    it with the same judge. Hand-written IR may leave the form out: the
    parser then records the judge's form.

    `library` names the library routine that computes the group (`gemm`,
    `conv`), for the `gemm` and `library` forms. `arena_offsets` (set by the
    plan phase) gives each result's byte offset in the arena; a negative
    offset -(i+1) marks a result written straight into graph output i.

    ```mlir
    %0 = sluice.kernel @k0_add elementwise (%a, %b : tensor<4xf32>, tensor<4xf32>) -> (tensor<4xf32>) {
    ^bb0(%x: tensor<4xf32>, %y: tensor<4xf32>):
      %s = sluice.add %x, %y : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
      sluice.kernel_yield %s : tensor<4xf32>
    }
    ```
  }];
  let arguments = (ins Variadic<Sluice_AnyValue>:$inputs, SymbolNameAttr:$sym_name,
                       Sluice_KernelFormAttr:$form, OptionalAttr<StrAttr>:$library,
                       OptionalAttr<DenseI64ArrayAttr>:$arena_offsets);
  let results = (outs Variadic<Sluice_AnyValue>:$outputs);
  let regions = (region SizedRegion<1>:$body);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
}

def Sluice_KernelYieldOp : Op<Sluice_Dialect, "kernel_yield", [Pure, Terminator,
    HasParent<"KernelOp">]> {
  let summary = "returns a kernel group's results";
  let arguments = (ins Variadic<Sluice_AnyValue>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

#endif // SLUICE_KERNEL_OPS_TD
