//===- ResolveControlFlow.cpp - static control flow and sequences ---------===//
//
// Bundles are static tensor programs, so control flow and sequences whose
// outcome the compiler can know are resolved here, at compile time:
//
// - an `if` on a constant condition becomes its branch;
// - a `loop` whose trip count and conditions fold to constants, and a `scan`
//   (its length is a static dim), are unrolled while small (the
//   `max-unrolled-ops` budget): each iteration is a copy of the body, folded
//   and re-inferred before the next, so that iteration numbers, slice bounds
//   and conditions become constants;
// - a sequence whose elements are known becomes a `sequence_construct` of
//   them (insert, erase, split_to_sequence, sequence_map), and the ops that
//   read it are rewritten to the elements (sequence_at, sequence_length,
//   concat_from_sequence); optionals of a known value likewise.
//
// What stays (an `if` on a runtime condition, a loop with a runtime trip
// count or one over the budget) is compiled as control flow by the targets
// or refused there with a clear error; a scan over the budget becomes such
// a loop. Unrolling stops at the budget rather
// than failing: the rolled loop is still a correct program.
//
//===----------------------------------------------------------------------===//

#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"

namespace sluice {
#define GEN_PASS_DEF_RESOLVECONTROLFLOWPASS
#include "passes/Passes.h.inc"
} // namespace sluice

using namespace mlir;
using namespace sluice;

namespace {

/// The integer values of a constant, or nullopt.
std::optional<SmallVector<int64_t>> constInts(Value v) {
  Attribute attr;
  if (!v || !matchPattern(v, m_Constant(&attr)))
    return std::nullopt;
  auto dense = dyn_cast<DenseIntElementsAttr>(attr);
  if (!dense)
    return std::nullopt;
  SmallVector<int64_t> values;
  bool isBool = dense.getElementType().isInteger(1);
  for (const APInt &x : dense.getValues<APInt>())
    values.push_back(isBool ? (int64_t)x.getBoolValue() : x.getSExtValue());
  return values;
}

std::optional<int64_t> constScalar(Value v) {
  auto values = constInts(v);
  if (!values || values->size() != 1)
    return std::nullopt;
  return (*values)[0];
}

Value i64Constant(OpBuilder &b, Location loc, ArrayRef<int64_t> values, bool scalar = false) {
  SmallVector<int64_t> shape;
  if (!scalar)
    shape.push_back(values.size());
  auto type = RankedTensorType::get(shape, b.getI64Type());
  return ConstantOp::create(b, loc, DenseIntElementsAttr::get(type, values));
}

Value boolConstant(OpBuilder &b, Location loc, bool value) {
  auto type = RankedTensorType::get({}, b.getI1Type());
  return ConstantOp::create(b, loc, DenseIntElementsAttr::get(type, ArrayRef<bool>{value}));
}

std::optional<SmallVector<int64_t>> staticShape(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || !type.hasStaticShape())
    return std::nullopt;
  return SmallVector<int64_t>(type.getShape());
}

Value reshapeTo(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> shape) {
  return ReshapeOp::create(b, loc, v, i64Constant(b, loc, shape), b.getBoolAttr(true));
}

/// Element `index` of `v` along `axis`, without that axis (static shapes).
Value takeSlice(OpBuilder &b, Location loc, Value v, int64_t axis, int64_t index) {
  SmallVector<int64_t> shape = *staticShape(v);
  Value slice = SliceOp::create(b, loc, v, i64Constant(b, loc, {index}),
                                i64Constant(b, loc, {index + 1}), i64Constant(b, loc, {axis}),
                                i64Constant(b, loc, {1}));
  shape.erase(shape.begin() + axis);
  return reshapeTo(b, loc, slice, shape);
}

/// `values` (static, one shape) stacked along a new dim `axis`.
Value stack(OpBuilder &b, Location loc, ArrayRef<Value> values, int64_t axis) {
  SmallVector<Value> expanded;
  for (Value v : values) {
    SmallVector<int64_t> shape = *staticShape(v);
    shape.insert(shape.begin() + axis, 1);
    expanded.push_back(reshapeTo(b, loc, v, shape));
  }
  if (expanded.size() == 1)
    return expanded[0];
  return ConcatOp::create(b, loc, expanded, b.getI64IntegerAttr(axis));
}

/// The elements of a sequence the compiler knows, or nullopt.
std::optional<SmallVector<Value>> knownElements(Value sequence) {
  if (auto construct = sequence.getDefiningOp<SequenceConstructOp>())
    return SmallVector<Value>(construct.getInputs());
  if (sequence.getDefiningOp<SequenceEmptyOp>())
    return SmallVector<Value>();
  return std::nullopt;
}

/// A sequence value of `elements`: a construct, or an empty sequence of the
/// element type of `like` (a sequence type).
Value makeSequence(OpBuilder &b, Location loc, ArrayRef<Value> elements, Type like) {
  if (!elements.empty())
    return SequenceConstructOp::create(b, loc, elements);
  Type element = cast<SequenceType>(like).getElementType().getElementType();
  return SequenceEmptyOp::create(b, loc, TypeAttr::get(element));
}

/// Normalizes a sequence position (negative counts from the end); nullopt
/// when out of range. `inclusiveEnd`: `size` is valid (insert).
std::optional<int64_t> position(int64_t pos, int64_t size, bool inclusiveEnd) {
  if (pos < 0)
    pos += size;
  if (pos < 0 || pos > size || (!inclusiveEnd && pos == size))
    return std::nullopt;
  return pos;
}

struct Resolver {
  func::FuncOp func;
  int64_t maxElements;
  int64_t budget; // ops unrolling may still create

  /// Clones the ops of `body` (without its terminator) before `anchor`'s
  /// insertion point with `mapping`, folds and re-infers them, and returns
  /// the values the terminator yields. Folding may replace any of them;
  /// a temporary cast op holds them across it.
  SmallVector<Value> inlineBody(OpBuilder &b, Block &body, IRMapping &mapping) {
    SmallVector<Operation *> cloned;
    for (Operation &op : body.without_terminator())
      cloned.push_back(b.clone(op, mapping));
    SmallVector<Value> yielded;
    for (Value v : body.getTerminator()->getOperands())
      yielded.push_back(mapping.lookupOrDefault(v));
    auto holder = UnrealizedConversionCastOp::create(b, body.getParentOp()->getLoc(),
                                                     TypeRange{}, yielded);
    propagateOps(cloned, maxElements);
    SmallVector<Value> result(holder.getOperands());
    holder.erase();
    return result;
  }

  static int64_t sizeOf(Block &body) {
    int64_t n = 0;
    for (Operation &op : body)
      op.walk([&](Operation *) { ++n; });
    return n;
  }

  /// Erases the ops strictly between `after` (null: the block's start) and
  /// `before`, last first: a failed unrolling's partial copies.
  static void eraseBetween(Operation *after, Operation *before) {
    SmallVector<Operation *> ops;
    Block *block = before->getBlock();
    for (Operation *op = after ? after->getNextNode() : &block->front(); op != before;
         op = op->getNextNode())
      ops.push_back(op);
    for (Operation *op : llvm::reverse(ops)) {
      op->dropAllUses();
      op->erase();
    }
  }

  void replace(Operation *op, ArrayRef<Value> values) {
    for (auto [result, value] : llvm::zip(op->getResults(), values))
      result.replaceAllUsesWith(value);
    op->erase();
  }

  bool resolveIf(IfOp op) {
    auto cond = constScalar(op.getCondition());
    if (!cond)
      return false;
    Region &region = *cond ? op.getThenRegion() : op.getElseRegion();
    OpBuilder b(op);
    IRMapping mapping;
    replace(op, inlineBody(b, region.front(), mapping));
    return true;
  }

  /// An if on a runtime condition whose branches both yield known
  /// sequences of one length and element types: the if yields the elements,
  /// and the sequences are constructed after it.
  bool splitSequenceResults(IfOp op) {
    Operation *thenYield = op.getThenRegion().front().getTerminator();
    Operation *elseYield = op.getElseRegion().front().getTerminator();
    SmallVector<std::optional<SmallVector<Value>>> thenElements, elseElements;
    SmallVector<Type> types;
    bool any = false;
    for (auto [i, result] : llvm::enumerate(op.getResults())) {
      std::optional<SmallVector<Value>> a, b;
      if (isa<SequenceType>(result.getType())) {
        a = knownElements(thenYield->getOperand(i));
        b = knownElements(elseYield->getOperand(i));
        if (a && b && a->size() == b->size() && !a->empty() &&
            llvm::all_of(llvm::zip(*a, *b), [](auto pair) {
              auto [x, y] = pair;
              auto type = dyn_cast<RankedTensorType>(x.getType());
              return x.getType() == y.getType() && type && type.hasStaticShape();
            })) {
          for (Value v : *a)
            types.push_back(v.getType());
          any = true;
        } else {
          a.reset();
          b.reset();
          types.push_back(result.getType());
        }
      } else {
        types.push_back(result.getType());
      }
      thenElements.push_back(std::move(a));
      elseElements.push_back(std::move(b));
    }
    if (!any)
      return false;
    OpBuilder b(op);
    auto split = IfOp::create(b, op.getLoc(), types, op.getCondition());
    split.getThenRegion().takeBody(op.getThenRegion());
    split.getElseRegion().takeBody(op.getElseRegion());
    for (auto [yield, elements] : {std::make_pair(thenYield, &thenElements),
                                   std::make_pair(elseYield, &elseElements)}) {
      SmallVector<Value> operands;
      for (auto [i, operand] : llvm::enumerate(yield->getOperands())) {
        if ((*elements)[i])
          operands.append((*elements)[i]->begin(), (*elements)[i]->end());
        else
          operands.push_back(operand);
      }
      yield->setOperands(operands);
    }
    b.setInsertionPointAfter(split);
    SmallVector<Value> results;
    unsigned next = 0;
    for (auto [i, result] : llvm::enumerate(op.getResults())) {
      if (!thenElements[i]) {
        results.push_back(split.getResult(next++));
        continue;
      }
      size_t n = thenElements[i]->size();
      SmallVector<Value> elements(split.getResults().slice(next, n));
      next += n;
      results.push_back(makeSequence(b, op.getLoc(), elements, result.getType()));
    }
    replace(op, results);
    return true;
  }

  bool unrollLoop(LoopOp op) {
    std::optional<int64_t> tripCount;
    if (op.getMaxTripCount()) {
      tripCount = constScalar(op.getMaxTripCount());
      if (!tripCount)
        return false;
    }
    bool cond = true;
    if (op.getInitialCondition()) {
      auto c = constScalar(op.getInitialCondition());
      if (!c)
        return false;
      cond = *c != 0;
    }
    Block &body = op.getBody().front();
    int64_t bodySize = sizeOf(body);
    int64_t numCarried = op.getInitialValues().size();
    int64_t numScan = op.getNumResults() - numCarried;
    // A body that passes its condition through runs all the trip count's
    // iterations: refuse early when they exceed the budget (divided, not
    // multiplied: a hostile trip count must not overflow). A body that
    // computes its condition may stop sooner; the budget check below stops
    // the copies otherwise.
    bool passthrough = body.getTerminator()->getOperand(0) == body.getArgument(1);
    if (tripCount && *tripCount > 0 && cond && passthrough &&
        *tripCount > budget / std::max<int64_t>(bodySize, 1))
      return false;
    Operation *start = op->getPrevNode();
    OpBuilder b(op);
    Location loc = op.getLoc();
    SmallVector<Value> carried(op.getInitialValues());
    SmallVector<SmallVector<Value>> scans(numScan);
    int64_t used = 0;
    for (int64_t k = 0; (!tripCount || k < *tripCount) && cond; ++k) {
      used += bodySize;
      if (used > budget) {
        eraseBetween(start, op);
        return false;
      }
      IRMapping mapping;
      mapping.map(body.getArgument(0), i64Constant(b, loc, {k}, /*scalar=*/true));
      mapping.map(body.getArgument(1), boolConstant(b, loc, true));
      for (auto [arg, value] : llvm::zip(body.getArguments().drop_front(2), carried))
        mapping.map(arg, value);
      SmallVector<Value> yielded = inlineBody(b, body, mapping);
      auto next = constScalar(yielded[0]);
      if (!next) {
        eraseBetween(start, op);
        return false;
      }
      cond = *next != 0;
      for (int64_t i = 0; i < numCarried; ++i)
        carried[i] = yielded[1 + i];
      for (int64_t i = 0; i < numScan; ++i) {
        if (!staticShape(yielded[1 + numCarried + i])) {
          eraseBetween(start, op);
          return false;
        }
        scans[i].push_back(yielded[1 + numCarried + i]);
      }
    }
    SmallVector<Value> results(carried);
    for (int64_t i = 0; i < numScan; ++i) {
      if (scans[i].empty()) {
        // No iteration ran: an empty scan output needs its slice shape.
        eraseBetween(start, op);
        return false;
      }
      results.push_back(stack(b, loc, scans[i], 0));
    }
    budget -= used;
    replace(op, results);
    return true;
  }

  /// One scan over unbatched `inputs` (states then scan inputs); appends
  /// the final states and the stacked scan outputs to `results`.
  LogicalResult scanOnce(ScanOp op, OpBuilder &b, ArrayRef<Value> inputs, int64_t &used,
                         SmallVectorImpl<Value> &results) {
    Location loc = op.getLoc();
    int64_t numScanInputs = op.getNumScanInputs();
    int64_t numStates = inputs.size() - numScanInputs;
    int64_t numOutputs = op.getNumResults() - numStates;
    Block &body = op.getBody().front();
    int64_t length = -1;
    SmallVector<int64_t> axes;
    for (int64_t j = 0; j < numScanInputs; ++j) {
      auto shape = staticShape(inputs[numStates + j]);
      if (!shape)
        return failure();
      int64_t axis = op.getScanInputAxes()[j];
      if (axis < 0)
        axis += shape->size();
      if (axis < 0 || axis >= (int64_t)shape->size() ||
          (length >= 0 && (*shape)[axis] != length))
        return failure();
      length = (*shape)[axis];
      axes.push_back(axis);
    }
    if (length <= 0)
      return failure();
    SmallVector<Value> states(inputs.take_front(numStates));
    SmallVector<SmallVector<Value>> outputs(numOutputs);
    int64_t bodySize = sizeOf(body);
    for (int64_t t = 0; t < length; ++t) {
      used += bodySize;
      if (used > budget)
        return failure();
      IRMapping mapping;
      for (int64_t i = 0; i < numStates; ++i)
        mapping.map(body.getArgument(i), states[i]);
      for (int64_t j = 0; j < numScanInputs; ++j) {
        int64_t index = op.getScanInputDirections()[j] ? length - 1 - t : t;
        mapping.map(body.getArgument(numStates + j),
                    takeSlice(b, loc, inputs[numStates + j], axes[j], index));
      }
      SmallVector<Value> yielded = inlineBody(b, body, mapping);
      for (int64_t i = 0; i < numStates; ++i)
        states[i] = yielded[i];
      for (int64_t k = 0; k < numOutputs; ++k) {
        if (!staticShape(yielded[numStates + k]))
          return failure();
        outputs[k].push_back(yielded[numStates + k]);
      }
    }
    results.append(states);
    for (int64_t k = 0; k < numOutputs; ++k) {
      if (op.getScanOutputDirections()[k])
        std::reverse(outputs[k].begin(), outputs[k].end());
      int64_t rank = staticShape(outputs[k][0])->size();
      int64_t axis = op.getScanOutputAxes()[k];
      if (axis < 0)
        axis += rank + 1;
      if (axis < 0 || axis > rank)
        return failure();
      results.push_back(stack(b, loc, outputs[k], axis));
    }
    return success();
  }

  bool unrollScan(ScanOp op) {
    Operation *start = op->getPrevNode();
    OpBuilder b(op);
    Location loc = op.getLoc();
    SmallVector<Value> inputs(op.getInputs());
    for (Value v : inputs)
      if (!staticShape(v))
        return false;
    int64_t used = 0;
    SmallVector<Value> results;
    if (!op.getBatched()) {
      if (failed(scanOnce(op, b, inputs, used, results))) {
        eraseBetween(start, op);
        return false;
      }
    } else {
      // Scan-8: one scan per element of the batch dim 0, stacked back.
      int64_t batch = (*staticShape(inputs[0]))[0];
      SmallVector<SmallVector<Value>> perResult(op.getNumResults());
      for (int64_t n = 0; n < batch; ++n) {
        SmallVector<Value> sliced;
        for (Value v : inputs) {
          if (staticShape(v)->empty() || (*staticShape(v))[0] != batch) {
            eraseBetween(start, op);
            return false;
          }
          sliced.push_back(takeSlice(b, loc, v, 0, n));
        }
        SmallVector<Value> batchResults;
        if (failed(scanOnce(op, b, sliced, used, batchResults))) {
          eraseBetween(start, op);
          return false;
        }
        for (auto [k, v] : llvm::enumerate(batchResults))
          perResult[k].push_back(v);
      }
      if (batch <= 0) {
        eraseBetween(start, op);
        return false;
      }
      for (auto &values : perResult)
        results.push_back(stack(b, loc, values, 0));
    }
    budget -= used;
    replace(op, results);
    return true;
  }

  bool unrollSequenceMap(SequenceMapOp op) {
    SmallVector<std::optional<SmallVector<Value>>> elements;
    int64_t length = -1;
    for (Value v : op.getInputs()) {
      if (!isa<SequenceType>(v.getType())) {
        elements.push_back(std::nullopt);
        continue;
      }
      auto known = knownElements(v);
      if (!known || (length >= 0 && (int64_t)known->size() != length))
        return false;
      length = known->size();
      elements.push_back(std::move(known));
    }
    Block &body = op.getBody().front();
    int64_t bodySize = sizeOf(body);
    if (length < 0 || length > budget / std::max<int64_t>(bodySize, 1))
      return false;
    OpBuilder b(op);
    SmallVector<SmallVector<Value>> outputs(op.getNumResults());
    for (int64_t n = 0; n < length; ++n) {
      IRMapping mapping;
      for (auto [arg, input, known] : llvm::zip(body.getArguments(), op.getInputs(), elements))
        mapping.map(arg, known ? (*known)[n] : input);
      for (auto [k, v] : llvm::enumerate(inlineBody(b, body, mapping)))
        outputs[k].push_back(v);
    }
    budget -= length * bodySize;
    SmallVector<Value> results;
    for (auto [k, values] : llvm::enumerate(outputs))
      results.push_back(makeSequence(b, op.getLoc(), values, op.getResult(k).getType()));
    replace(op, results);
    return true;
  }

  /// Sequence and optional ops on known values. Returns true if rewritten.
  bool resolveSequenceOp(Operation *op) {
    if (auto insert = dyn_cast<SequenceInsertOp>(op))
      return resolveInsert(insert);
    if (auto erase = dyn_cast<SequenceEraseOp>(op))
      return resolveErase(erase);
    if (auto at = dyn_cast<SequenceAtOp>(op))
      return resolveAt(at);
    if (auto length = dyn_cast<SequenceLengthOp>(op))
      return resolveLength(length);
    if (auto concat = dyn_cast<ConcatFromSequenceOp>(op))
      return resolveConcat(concat);
    if (auto split = dyn_cast<SplitToSequenceOp>(op))
      return resolveSplit(split);
    if (auto has = dyn_cast<OptionalHasElementOp>(op))
      return resolveHasElement(has);
    if (auto get = dyn_cast<OptionalGetElementOp>(op))
      return resolveGetElement(get);
    return false;
  }

  /// sequence_insert into a known sequence at a constant position (the end
  /// when none is given).
  bool resolveInsert(SequenceInsertOp insert) {
    auto known = knownElements(insert.getInputSequence());
    if (!known)
      return false;
    int64_t size = known->size();
    std::optional<int64_t> pos = size;
    if (insert.getPosition()) {
      auto p = constScalar(insert.getPosition());
      pos = p ? position(*p, size, true) : std::nullopt;
    }
    if (!pos)
      return false;
    known->insert(known->begin() + *pos, insert.getTensor());
    OpBuilder b(insert);
    replace(insert, {makeSequence(b, insert.getLoc(), *known, insert.getType())});
    return true;
  }

  /// sequence_erase from a known sequence at a constant position (the last
  /// element when none is given).
  bool resolveErase(SequenceEraseOp erase) {
    auto known = knownElements(erase.getInputSequence());
    if (!known || known->empty())
      return false;
    int64_t size = known->size();
    std::optional<int64_t> pos = size - 1;
    if (erase.getPosition()) {
      auto p = constScalar(erase.getPosition());
      pos = p ? position(*p, size, false) : std::nullopt;
    }
    if (!pos)
      return false;
    known->erase(known->begin() + *pos);
    OpBuilder b(erase);
    replace(erase, {makeSequence(b, erase.getLoc(), *known, erase.getType())});
    return true;
  }

  /// sequence_at of a known sequence at a constant position: the element.
  bool resolveAt(SequenceAtOp at) {
    auto known = knownElements(at.getInputSequence());
    auto p = constScalar(at.getPosition());
    if (!known || !p)
      return false;
    auto pos = position(*p, known->size(), false);
    if (!pos)
      return false;
    replace(at, {(*known)[*pos]});
    return true;
  }

  /// sequence_length of a known sequence: a constant.
  bool resolveLength(SequenceLengthOp length) {
    auto known = knownElements(length.getInputSequence());
    if (!known)
      return false;
    OpBuilder b(length);
    replace(length, {i64Constant(b, length.getLoc(), {(int64_t)known->size()}, /*scalar=*/true)});
    return true;
  }

  /// concat_from_sequence of known elements of static shapes: a concat, or
  /// a stack along a new axis.
  bool resolveConcat(ConcatFromSequenceOp concat) {
    auto known = knownElements(concat.getInputSequence());
    if (!known || known->empty())
      return false;
    for (Value v : *known)
      if (!staticShape(v))
        return false;
    int64_t rank = staticShape((*known)[0])->size();
    int64_t axis = concat.getAxis();
    if (axis < 0)
      axis += rank + (concat.getNewAxis() ? 1 : 0);
    if (axis < 0 || axis > rank || (!concat.getNewAxis() && axis == rank))
      return false;
    OpBuilder b(concat);
    Location loc = concat.getLoc();
    Value result;
    if (concat.getNewAxis())
      result = stack(b, loc, *known, axis);
    else if (known->size() == 1)
      result = (*known)[0];
    else
      result = ConcatOp::create(b, loc, *known, b.getI64IntegerAttr(axis));
    replace(concat, {result});
    return true;
  }

  /// The sizes of a split_to_sequence's pieces along a dim of `dim`
  /// elements: each 1 when no split is given (then squeezed unless
  /// keepdims), equal chunks for a scalar split, else the split's values.
  /// Nullopt when they are not constant or do not cover the dim.
  static std::optional<SmallVector<int64_t>> splitSizes(SplitToSequenceOp split, int64_t dim,
                                                        bool &squeeze) {
    SmallVector<int64_t> sizes;
    squeeze = false;
    if (!split.getSplit()) {
      sizes.assign(dim, 1);
      squeeze = !split.getKeepdims();
    } else {
      auto values = constInts(split.getSplit());
      auto type = cast<ShapedType>(split.getSplit().getType());
      if (!values || !type.hasRank())
        return std::nullopt;
      if (type.getRank() == 0) {
        int64_t chunk = (*values)[0];
        if (chunk <= 0)
          return std::nullopt;
        for (int64_t at = 0; at < dim; at += chunk)
          sizes.push_back(std::min(chunk, dim - at));
      } else {
        sizes.assign(values->begin(), values->end());
      }
    }
    int64_t total = 0;
    for (int64_t s : sizes)
      total += s < 0 ? dim + 1 : s;
    if (total != dim || sizes.empty())
      return std::nullopt;
    return sizes;
  }

  /// split_to_sequence of a static shape with constant sizes: a sequence of
  /// the slices.
  bool resolveSplit(SplitToSequenceOp split) {
    auto shape = staticShape(split.getInput());
    if (!shape)
      return false;
    int64_t rank = shape->size();
    int64_t axis = split.getAxis();
    if (axis < 0)
      axis += rank;
    if (axis < 0 || axis >= rank)
      return false;
    bool squeeze = false;
    auto sizes = splitSizes(split, (*shape)[axis], squeeze);
    if (!sizes)
      return false;
    OpBuilder b(split);
    Location loc = split.getLoc();
    SmallVector<Value> pieces;
    int64_t at = 0;
    for (int64_t s : *sizes) {
      if (squeeze) {
        pieces.push_back(takeSlice(b, loc, split.getInput(), axis, at));
      } else {
        pieces.push_back(SliceOp::create(b, loc, split.getInput(), i64Constant(b, loc, {at}),
                                         i64Constant(b, loc, {at + s}), i64Constant(b, loc, {axis}),
                                         i64Constant(b, loc, {1})));
      }
      at += s;
    }
    replace(split, {makeSequence(b, loc, pieces, split.getType())});
    return true;
  }

  /// optional_has_element of a plain value or of a known optional: a
  /// constant.
  bool resolveHasElement(OptionalHasElementOp has) {
    Value input = has.getInput();
    bool present;
    if (!isa<OptionalType>(input.getType()))
      present = true; // a plain tensor or sequence
    else if (auto wrap = input.getDefiningOp<OptionalOp>())
      present = wrap.getInput() != nullptr;
    else
      return false;
    OpBuilder b(has);
    replace(has, {boolConstant(b, has.getLoc(), present)});
    return true;
  }

  /// optional_get_element of a plain value or of a known optional that
  /// holds one: that value.
  bool resolveGetElement(OptionalGetElementOp get) {
    Value input = get.getInput();
    if (!isa<OptionalType>(input.getType())) {
      replace(get, {input});
      return true;
    }
    auto wrap = input.getDefiningOp<OptionalOp>();
    if (!wrap || !wrap.getInput())
      return false;
    replace(get, {wrap.getInput()});
    return true;
  }

  /// A scan too large to unroll as a `loop` the targets run: trip count the
  /// scan length, the states carried, each iteration gathering its slices
  /// at the iteration number (from the end for a reversed input), the scan
  /// outputs stacked along dim 0 by the loop and then reversed (a gather)
  /// and moved to their axis (a transpose) where the scan says so. Not for
  /// Scan-8's batched form.
  bool scanToLoop(ScanOp op) {
    if (op.getBatched())
      return false;
    SmallVector<Value> inputs(op.getInputs());
    for (Value v : inputs)
      if (!staticShape(v))
        return false;
    int64_t numScanInputs = op.getNumScanInputs();
    int64_t numStates = inputs.size() - numScanInputs;
    int64_t numOutputs = op.getNumResults() - numStates;
    int64_t length = -1;
    SmallVector<int64_t> axes;
    for (int64_t j = 0; j < numScanInputs; ++j) {
      SmallVector<int64_t> shape = *staticShape(inputs[numStates + j]);
      int64_t axis = op.getScanInputAxes()[j];
      if (axis < 0)
        axis += shape.size();
      if (axis < 0 || axis >= (int64_t)shape.size() || (length >= 0 && shape[axis] != length))
        return false;
      length = shape[axis];
      axes.push_back(axis);
    }
    if (length <= 0)
      return false;
    Block &scanBody = op.getBody().front();
    Operation *scanYield = scanBody.getTerminator();
    OpBuilder b(op);
    Location loc = op.getLoc();
    auto i64 = RankedTensorType::get({}, b.getI64Type());
    auto i1 = RankedTensorType::get({}, b.getI1Type());
    SmallVector<Type> resultTypes;
    for (int64_t i = 0; i < numStates; ++i)
      resultTypes.push_back(inputs[i].getType());
    for (int64_t k = 0; k < numOutputs; ++k)
      resultTypes.push_back(UnrankedTensorType::get(
          getElementTypeOrSelf(scanYield->getOperand(numStates + k).getType())));
    Value trip = i64Constant(b, loc, {length}, /*scalar=*/true);
    auto loop = LoopOp::create(b, loc, resultTypes, trip, Value(),
                               ValueRange(inputs).take_front(numStates));
    Block *body = new Block();
    loop.getBody().push_back(body);
    Value iter = body->addArgument(i64, loc);
    Value cond = body->addArgument(i1, loc);
    SmallVector<Value> states;
    for (int64_t i = 0; i < numStates; ++i)
      states.push_back(body->addArgument(inputs[i].getType(), loc));
    OpBuilder bb = OpBuilder::atBlockEnd(body);
    IRMapping mapping;
    for (int64_t i = 0; i < numStates; ++i)
      mapping.map(scanBody.getArgument(i), states[i]);
    Value reversed;
    for (int64_t j = 0; j < numScanInputs; ++j) {
      Value index = iter;
      if (op.getScanInputDirections()[j]) {
        if (!reversed)
          reversed = SubOp::create(bb, loc, i64Constant(bb, loc, {length - 1}, true), iter);
        index = reversed;
      }
      mapping.map(scanBody.getArgument(numStates + j),
                  GatherOp::create(bb, loc, inputs[numStates + j], index,
                                   bb.getI64IntegerAttr(axes[j])));
    }
    for (Operation &inner : scanBody.without_terminator())
      bb.clone(inner, mapping);
    SmallVector<Value> yielded{cond};
    for (Value v : scanYield->getOperands())
      yielded.push_back(mapping.lookupOrDefault(v));
    YieldOp::create(bb, loc, yielded);
    // Types inside the new body, then the loop's own (refineTypes).
    SmallVector<Operation *> ops;
    for (Operation &inner : body->without_terminator())
      ops.push_back(&inner);
    propagateOps(ops, maxElements);
    SmallVector<Value> results(loop.getResults().take_front(numStates));
    b.setInsertionPointAfter(loop);
    for (int64_t k = 0; k < numOutputs; ++k) {
      Value stacked = loop.getResult(numStates + k);
      auto slice = dyn_cast<RankedTensorType>(yielded[1 + numStates + k].getType());
      if (!slice || !slice.hasStaticShape()) {
        // Shapes the body cannot make static: leave the scan (refused later).
        loop.erase();
        return false;
      }
      SmallVector<int64_t> shape{length};
      shape.append(slice.getShape().begin(), slice.getShape().end());
      stacked.setType(RankedTensorType::get(shape, slice.getElementType()));
      if (op.getScanOutputDirections()[k]) {
        SmallVector<int64_t> order;
        for (int64_t t = length - 1; t >= 0; --t)
          order.push_back(t);
        stacked = GatherOp::create(b, loc, stacked, i64Constant(b, loc, order),
                                   b.getI64IntegerAttr(0));
      }
      int64_t rank = shape.size();
      int64_t axis = op.getScanOutputAxes()[k];
      if (axis < 0)
        axis += rank;
      if (axis < 0 || axis >= rank) {
        loop.erase();
        return false;
      }
      if (axis != 0) {
        // Dim 0 (the iterations) moves to `axis`.
        SmallVector<int64_t> perm;
        for (int64_t d = 1; d <= axis; ++d)
          perm.push_back(d);
        perm.push_back(0);
        for (int64_t d = axis + 1; d < rank; ++d)
          perm.push_back(d);
        stacked = TransposeOp::create(b, loc, stacked, b.getDenseI64ArrayAttr(perm));
      }
      results.push_back(stacked);
    }
    replace(op, results);
    return true;
  }

  /// Static result types for the ifs and loops that stay (the importer
  /// gives them the join of what their bodies may yield): an if's where
  /// both branches yield one static type; a loop's carried values where the
  /// body, its carried arguments typed as on entry, yields those types, and
  /// its scan outputs where the trip count is a constant. Returns true if
  /// any type changed.
  bool refineTypes() {
    bool changed = false;
    auto setType = [&](Value v, Type t) {
      if (v.getType() != t) {
        v.setType(t);
        changed = true;
      }
    };
    func.walk([&](Operation *op) {
      if (auto ifOp = dyn_cast<IfOp>(op)) {
        Operation *thenYield = ifOp.getThenRegion().front().getTerminator();
        Operation *elseYield = ifOp.getElseRegion().front().getTerminator();
        for (auto [i, result] : llvm::enumerate(ifOp.getResults())) {
          Type a = thenYield->getOperand(i).getType(), b = elseYield->getOperand(i).getType();
          auto ranked = dyn_cast<RankedTensorType>(a);
          if (a == b && ranked && ranked.hasStaticShape())
            setType(result, a);
        }
        return;
      }
      auto loop = dyn_cast<LoopOp>(op);
      if (!loop)
        return;
      Block &body = loop.getBody().front();
      size_t numCarried = loop.getInitialValues().size();
      SmallVector<Type> before;
      for (BlockArgument arg : body.getArguments())
        before.push_back(arg.getType());
      for (size_t k = 0; k < numCarried; ++k) {
        auto type = dyn_cast<RankedTensorType>(loop.getInitialValues()[k].getType());
        if (type && type.hasStaticShape())
          body.getArgument(2 + k).setType(type);
      }
      SmallVector<Operation *> ops;
      for (Operation &inner : body.without_terminator())
        ops.push_back(&inner);
      propagateOps(ops, maxElements);
      Operation *yield = body.getTerminator();
      bool consistent = true;
      for (size_t k = 0; k < numCarried; ++k)
        consistent &= yield->getOperand(1 + k).getType() == body.getArgument(2 + k).getType();
      if (!consistent) {
        // The carried values change shape: keep the importer's types.
        for (auto [arg, type] : llvm::zip(body.getArguments(), before))
          arg.setType(type);
        return;
      }
      for (size_t k = 0; k < numCarried; ++k)
        setType(loop.getResult(k), body.getArgument(2 + k).getType());
      auto trip = constScalar(loop.getMaxTripCount());
      for (size_t j = numCarried; j < loop.getNumResults(); ++j) {
        auto slice = dyn_cast<RankedTensorType>(yield->getOperand(1 + j).getType());
        if (!trip || !slice || !slice.hasStaticShape())
          continue;
        SmallVector<int64_t> shape{*trip};
        shape.append(slice.getShape().begin(), slice.getShape().end());
        setType(loop.getResult(j), RankedTensorType::get(shape, slice.getElementType()));
      }
    });
    return changed;
  }

  /// One pass over the function's top-level ops; true if anything changed.
  bool step() {
    Block &block = func.getBody().front();
    SmallVector<Operation *> ops;
    for (Operation &op : block.without_terminator())
      ops.push_back(&op);
    for (Operation *op : ops) {
      bool changed = false;
      if (auto ifOp = dyn_cast<IfOp>(op))
        changed = resolveIf(ifOp) || splitSequenceResults(ifOp);
      else if (auto loop = dyn_cast<LoopOp>(op))
        changed = unrollLoop(loop);
      else if (auto scan = dyn_cast<ScanOp>(op))
        changed = unrollScan(scan);
      else if (auto map = dyn_cast<SequenceMapOp>(op))
        changed = unrollSequenceMap(map);
      else
        changed = resolveSequenceOp(op);
      // Every rewrite can fold what follows: start over from the top.
      if (changed)
        return true;
    }
    return false;
  }
};

struct ResolveControlFlowPass
    : public sluice::impl::ResolveControlFlowPassBase<ResolveControlFlowPass> {
  using ResolveControlFlowPassBase::ResolveControlFlowPassBase;

  void runOnOperation() override {
    Resolver resolver{getOperation(), maxElements, maxUnrolledOps};
    bool changed = false;
    // Rounds: rewrites until none applies, then folding over the whole
    // function (a resolved has_element makes the `not` after it a constant,
    // and the `if` it guards resolvable in the next round).
    for (int round = 0; round < 64; ++round) {
      bool any = false;
      while (resolver.step())
        any = true;
      if (!any)
        break;
      changed = true;
      if (failed(propagateShapes(getOperation(), maxElements)))
        return signalPassFailure();
    }
    // Scans too large to unroll run as loops.
    SmallVector<ScanOp> scans;
    getOperation().walk([&](ScanOp scan) { scans.push_back(scan); });
    for (ScanOp scan : scans)
      changed |= resolver.scanToLoop(scan);
    changed |= resolver.refineTypes();
    if (!changed)
      return;
    // Types of what read the rewritten values, and dead sequence ops.
    if (failed(propagateShapes(getOperation(), maxElements)))
      return signalPassFailure();
  }
};

} // namespace
