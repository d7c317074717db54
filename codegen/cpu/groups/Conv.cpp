//===- Conv.cpp - cpu form F2 with a float convolution anchor -------------===//
//
// A float 2-D sluice.conv followed by elementwise epilogue ops (the fuse
// phase's conv-epilogue=true, which the cpu target sets). The convolution
// runs as ops/NN.cpp emits it (one oneDNN primitive, or im2col + GEMM):
//   - when the epilogue is ReLU, an Add of a residual tensor of the
//     result's shape, or that Add then ReLU, and the group yields only its
//     last value, the epilogue is the primitive's post-ops (oneDNN sum and
//     eltwise_relu): one launch, no second pass over the output (the
//     report's "cpu_conv_post_ops" counts these groups);
//   - any other epilogue is one parallel loop over the result after the
//     convolution (rows of the output as in Gemm.cpp's epilogue), the
//     result living in an output of its type or a scratch buffer.
//
//===----------------------------------------------------------------------===//

#include "codegen/common/Epilogue.h"

#include "codegen/common/CodeWriter.h"
#include "codegen/common/Format.h"
#include "codegen/cpu/CpuEmitter.h"
#include "codegen/cpu/Groups.h"

using namespace mlir;

namespace sluice::codegen {
namespace {

/// The post-op form of a conv group: the residual (null: none) and ReLU.
struct PostOpsMatch {
  Value residual;
  /// The Add that reads it.
  Operation *add = nullptr;
  bool relu = false;
};

/// The conv group's epilogue as oneDNN post-ops, when it is one of
/// relu(conv), conv + r, r + conv, relu(conv + r) with a residual r of the
/// result's shape read from an input, and the group yields only its last
/// value (through layout-preserving views).
std::optional<PostOpsMatch> matchPostOps(KernelOp kernel, const GroupOps &parts) {
  auto conv = dyn_cast_or_null<ConvOp>(parts.anchor);
  if (!conv || parts.after.empty() || !parts.before.empty())
    return std::nullopt;
  auto yielded = KernelYieldOp(parts.yield).getValues();
  if (yielded.size() != 1)
    return std::nullopt;
  Value last = conv.getOutput();
  PostOpsMatch match;
  size_t i = 0;
  if (auto add = dyn_cast<AddOp>(parts.after[i])) {
    Value lhs = add->getOperand(0), rhs = add->getOperand(1);
    Value r = lhs == last ? rhs : rhs == last ? lhs : Value();
    if (!r || r == last || shapeOf(r) != shapeOf(last) || !elementOf(r).isF32())
      return std::nullopt;
    // An input (or a contiguous view of one), not a value of the group.
    auto view = resolveView(r);
    if (failed(view) || !view->isContiguous(shapeOf(r)) ||
        !isa<BlockArgument>(view->base))
      return std::nullopt;
    match.residual = r;
    match.add = add;
    last = add->getResult(0);
    ++i;
  }
  if (i < parts.after.size())
    if (auto relu = dyn_cast<ReluOp>(parts.after[i]); relu && relu->getOperand(0) == last) {
      match.relu = true;
      last = relu->getResult(0);
      ++i;
    }
  if (i != parts.after.size() || stripOutputViews(yielded[0]) != last)
    return std::nullopt;
  auto out = resolveOutputView(last, yielded[0]);
  if (failed(out) || !out->isContiguous(shapeOf(last)) || !elementOf(yielded[0]).isF32())
    return std::nullopt;
  return match;
}

GroupOps convParts(KernelOp kernel) {
  return splitGroupOps(kernel, [](Operation *op) { return isa<ConvOp>(op); });
}

/// The conv's operands (contiguous leaves) and output `c` in an op context.
LogicalResult convContext(GroupContext &ctx, ConvOp conv, const std::string &c,
                          CpuOpContext &octx) {
  octx.op = conv;
  octx.kernelName = ctx.name;
  octx.headers = ctx.headers;
  for (Value operand : conv->getOperands()) {
    auto view = resolveView(operand);
    if (failed(view))
      return failure();
    if (!kernel::readsContiguously(*view, operand))
      return conv.emitOpError("cpu target: a convolution in a group reads contiguous buffers");
    auto ptr = ctx.leafPointer(*view);
    if (failed(ptr))
      return failure();
    octx.in.push_back(*ptr);
  }
  octx.out.push_back(c);
  octx.outDims.push_back("");
  return success();
}

/// The post-op form of a conv group that can keep its activations in
/// oneDNN's blocked layout: an f32 2-D convolution on the oneDNN path
/// (cpuConvKeepsBlockedLayout) that reads its input straight from a kernel
/// input and writes the kernel's one output itself, through post-ops
/// (residual straight from a kernel input too) or alone.
std::optional<PostOpsMatch> blockableConv(KernelOp kernel) {
  // A conv with an epilogue is a GEMM-form group, a lone one a library call.
  KernelForm form = kernel.getForm();
  if ((form != KernelForm::gemm && form != KernelForm::library) ||
      !cpuConvKeepsBlockedLayout(cpuTargetConfig(kernel)) || kernel->getNumResults() != 1)
    return std::nullopt;
  GroupOps parts = convParts(kernel);
  auto conv = dyn_cast_or_null<ConvOp>(parts.anchor);
  if (!conv || !parts.before.empty() || !elementOf(conv.getInput()).isF32() ||
      shapeOf(conv.getInput()).size() != 4 || !isa<BlockArgument>(conv.getInput()))
    return std::nullopt;
  std::optional<PostOpsMatch> match;
  if (parts.after.empty()) {
    auto yielded = KernelYieldOp(parts.yield).getValues();
    if (yielded.size() != 1 || stripOutputViews(yielded[0]) != conv.getOutput())
      return std::nullopt;
    auto out = resolveOutputView(conv.getOutput(), yielded[0]);
    if (failed(out) || !out->isContiguous(shapeOf(conv.getOutput())))
      return std::nullopt;
    match = PostOpsMatch();
  } else {
    match = matchPostOps(kernel, parts);
  }
  if (match && match->residual && !isa<BlockArgument>(match->residual))
    return std::nullopt;
  return match;
}

/// Whether the blockable conv group `user` reads its input `operand` only
/// as the convolution's src or as the residual of its post-ops.
bool readsOnlyAsConvActivation(KernelOp user, unsigned operand) {
  auto match = blockableConv(user);
  if (!match)
    return false;
  Operation *conv = convParts(user).anchor;
  BlockArgument arg = user.getBody().front().getArgument(operand);
  for (OpOperand &use : arg.getUses()) {
    Operation *owner = use.getOwner();
    bool asSrc = owner == conv && use.getOperandNumber() == 0;
    bool asResidual = owner == match->add && match->residual == arg;
    if (!asSrc && !asResidual)
      return false;
  }
  return true;
}

/// The activations of `block` kept blocked: results of blockable conv
/// groups, 4-D f32 with channels a multiple of 16 (either oneDNN block),
/// yielded as the convolution's value itself, that only blockable conv
/// groups of the same block read, as src or residual (not the graph's
/// outputs, not views, pools or control flow).
llvm::DenseSet<Value> planBlockedActivations(Block &block) {
  llvm::DenseSet<Value> planned;
  if (!cpuConvKeepsBlockedLayout(cpuTargetConfig(block.getParentOp())))
    return planned;
  for (Operation &op : block) {
    auto producer = dyn_cast<KernelOp>(op);
    if (!producer || !blockableConv(producer))
      continue;
    Value v = producer->getResult(0);
    ArrayRef<int64_t> shape = shapeOf(v);
    auto yielded = KernelYieldOp(convParts(producer).yield).getValues();
    if (shape.size() != 4 || shape[1] % 16 != 0 || !elementOf(v).isF32() ||
        stripOutputViews(yielded[0]) != yielded[0] || v.use_empty())
      continue;
    bool onlyConvs = llvm::all_of(v.getUses(), [&](OpOperand &use) {
      auto user = dyn_cast<KernelOp>(use.getOwner());
      return user && user->getBlock() == &block &&
             readsOnlyAsConvActivation(user, use.getOperandNumber());
    });
    if (onlyConvs)
      planned.insert(v);
  }
  return planned;
}

/// The blocked activations of the cpu bundle this thread emits
/// (CpuConvLayoutScope), or null.
thread_local const llvm::DenseSet<Value> *plannedBlocked = nullptr;

/// Whether the kernel input that `arg` (a block argument of `kernel`) is
/// bound to is kept blocked.
bool isBlockedInput(KernelOp kernel, Value arg) {
  auto blockArg = dyn_cast<BlockArgument>(arg);
  return plannedBlocked && blockArg &&
         plannedBlocked->contains(kernel->getOperand(blockArg.getArgNumber()));
}

/// The SLUICE_DNNL_*_BLOCKED bits (cpu_nn_dnnl.h) of the blockable conv
/// group `kernel` with post-ops `match`.
unsigned blockedSidesOf(KernelOp kernel, const PostOpsMatch &match) {
  if (!plannedBlocked)
    return 0;
  auto conv = cast<ConvOp>(convParts(kernel).anchor);
  unsigned sides = 0;
  if (isBlockedInput(kernel, conv.getInput()))
    sides |= 1; // SLUICE_DNNL_SRC_BLOCKED
  if (plannedBlocked->contains(kernel->getResult(0)))
    sides |= 2; // SLUICE_DNNL_DST_BLOCKED
  if (match.residual && isBlockedInput(kernel, match.residual))
    sides |= 4; // SLUICE_DNNL_RESIDUAL_BLOCKED
  return sides;
}

} // namespace

CpuConvLayoutScope::CpuConvLayoutScope(Block &block)
    : values(planBlockedActivations(block)), previous(plannedBlocked) {
  plannedBlocked = &values;
}
CpuConvLayoutScope::~CpuConvLayoutScope() { plannedBlocked = previous; }

bool keepsBlockedActivations(KernelOp kernel) {
  auto match = blockableConv(kernel);
  return match && blockedSidesOf(kernel, *match) != 0;
}

bool isConvGroup(KernelOp kernel) { return isa_and_nonnull<ConvOp>(convParts(kernel).anchor); }

bool hasConvPostOps(KernelOp kernel) {
  return kernel.getForm() == KernelForm::gemm && !kernel::isLoneOp(kernel) &&
         matchPostOps(kernel, convParts(kernel)).has_value();
}

LogicalResult emitConvGroup(GroupContext &ctx) {
  KernelOp kernel = ctx.kernel;
  GroupOps parts = convParts(kernel);
  auto conv = dyn_cast_or_null<ConvOp>(parts.anchor);
  if (!conv)
    return kernel.emitOpError("cpu target: no convolution in a conv group");
  if (!parts.before.empty())
    return parts.before.front()->emitOpError(
        "cpu target: a conv group holds only the convolution and elementwise ops after it");
  for (Operation *op : parts.after)
    if (!isElementwise(op))
      return op->emitOpError("cpu target: a conv group's epilogue holds only elementwise ops");
  Value result = conv.getOutput();
  ArrayRef<int64_t> space = shapeOf(result);
  Type et = elementOf(result);
  auto yielded = KernelYieldOp(parts.yield).getValues();

  // Post-ops: the convolution writes the one output itself (in the
  // blocked layout where CpuConvLayoutScope planned it).
  std::optional<PostOpsMatch> match = blockableConv(kernel);
  unsigned blockedSides = match ? blockedSidesOf(kernel, *match) : 0;
  if (!blockedSides)
    match = matchPostOps(kernel, parts);
  if (match) {
    CpuOpContext octx;
    if (failed(convContext(ctx, conv, ctx.output(0), octx)))
      return failure();
    CpuConvPostOps post;
    post.relu = match->relu;
    post.blockedSides = blockedSides;
    if (match->residual) {
      auto ptr = ctx.leafPointer(*resolveView(match->residual));
      if (failed(ptr))
        return failure();
      post.residual = *ptr;
    }
    if (failed(emitConvWithPostOps(octx, post)))
      return failure();
    *ctx.body += octx.body;
    return success();
  }

  // Otherwise the convolution, then the epilogue as one loop over the
  // result (Gemm.cpp's planGemmResults / writeGemmEpilogue, with the
  // convolution's result as C).
  for (Operation *op : parts.after)
    if (failed(broadcastStridesTo(shapeOf(op->getResult(0)),
                                  contiguousStrides(shapeOf(op->getResult(0))), space)))
      return op->emitOpError("cpu target: an epilogue op of a conv group does not have the "
                             "convolution result's shape");
  SmallVector<Value> roots;
  std::vector<StridedView> outViews;
  for (auto [i, v] : llvm::enumerate(yielded)) {
    Value root = stripOutputViews(v);
    if (shapeOf(root) != space)
      return kernel.emitOpError("cpu target: a conv group yields a value of another shape than "
                                "the convolution result");
    if (root != result && !llvm::is_contained(parts.after, root.getDefiningOp()))
      return kernel.emitOpError("cpu target: a conv group yields a value that is not computed "
                                "from the convolution result");
    roots.push_back(root);
    auto view = resolveOutputView(root, v);
    if (failed(view))
      return kernel.emitOpError("cpu target: result ") << i << " is not a view of the conv result";
    outViews.push_back(*view);
  }
  std::optional<unsigned> cSlot;
  for (int pass = 0; pass < 2 && !cSlot; ++pass)
    for (auto [i, v] : llvm::enumerate(yielded))
      if (!cSlot && (pass == 1 || roots[i] == result) && elementOf(v) == et &&
          outViews[i].isContiguous(space))
        cSlot = i;
  CodeWriter w(1);
  std::string c = cSlot ? ctx.output(*cSlot) : "conv_c";
  if (!cSlot) {
    w.line("std::unique_ptr<{0}[]> conv_c_buf(new {0}[{1}]);", storageType(et),
           std::max<int64_t>(product(space), 1));
    w.line("{0} *conv_c = conv_c_buf.get();", storageType(et));
  }

  epilogue::Body body(ctx, space, (int64_t)space.size() - 1);
  for (Operation *op : parts.after)
    for (Value operand : op->getOperands())
      if (operand != result && failed(body.addLeaf(operand)))
        return failure();
  for (auto &[value, idx] : body.leafAccess)
    if (resolveView(value)->base == result)
      return kernel.emitOpError("cpu target: an epilogue reads the convolution result through "
                                "a view");
  unsigned cAccess = body.accesses.size();
  if (failed(body.addAccess({c, 0, contiguousStrides(space)}, "the convolution result")))
    return failure();
  std::vector<unsigned> outAccess;
  for (auto [i, view] : llvm::enumerate(outViews)) {
    outAccess.push_back(body.accesses.size());
    if (failed(body.addAccess({ctx.output(i), 0, view.strides}, "a result")))
      return failure();
  }

  CpuOpContext octx;
  if (failed(convContext(ctx, conv, c, octx)) ||
      failed(emitConvWithPostOps(octx, CpuConvPostOps())))
    return failure();
  w.raw(octx.body);

  std::vector<unsigned> stored;
  for (unsigned i = 0; i < yielded.size(); ++i)
    if (!(cSlot && i == *cSlot && roots[i] == result))
      stored.push_back(i);
  body.bindLeaves();
  body.expr[result] = "acc_";
  CodeWriter ops(3);
  int locals = 0;
  if (failed(body.emitOps(ops, parts.after, locals)))
    return failure();
  if (!stored.empty()) {
    int64_t rows = 1;
    for (int64_t d : space.drop_back())
      rows *= d;
    w.line("#pragma omp parallel for num_threads(args->num_threads)");
    auto rowLoop = w.block("for (int64_t row = 0; row < {0}; ++row)", cInt64(rows));
    body.rowBases(w, "row");
    w.line("#pragma omp simd");
    auto cols = w.block("for (int64_t j = 0; j < {0}; ++j)", cInt64(space.back()));
    w.line("const {0} acc_ = {1};", computeType(et),
           loadExpr(et, c + "[" + body.index(cAccess) + "]"));
    w.raw(ops.str());
    for (unsigned i : stored)
      w.line("{0}[{1}] = {2};", ctx.output(i), body.index(outAccess[i]),
             storeExpr(elementOf(yielded[i]), body.lookup(roots[i])));
  }
  *ctx.body += w.str();
  return success();
}

} // namespace sluice::codegen
