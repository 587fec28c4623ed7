//===- Blocks.cpp - reference loops of the block and memory ops -----------===//
//
// Part of the Recur project.
//
// recur.block_recurrence (a loop over blocks with the body inlined),
// recur.memory_update (slices of [memory; new]) and recur.stop_gradient.
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"
#include "Utility.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::recur;
using namespace mlir::recur::loops;

//===----------------------------------------------------------------------===//
// recur.block_recurrence
//===----------------------------------------------------------------------===//

std::string mlir::recur::loops::whyNotLowerable(BlockRecurrenceOp op) {
  int64_t axis = op.getAxisAttr().getInt();
  for (auto [i, output] : llvm::enumerate(op.getOutputs())) {
    auto type = cast<RankedTensorType>(output.getType());
    for (int64_t d = 0, e = type.getRank(); d < e; ++d)
      if (d != axis && type.isDynamicDim(d))
        return "output #" + std::to_string(i) + " has a dynamic dimension " +
               std::to_string(d) +
               " besides the axis; the reference lowering allocates the "
               "outputs before the body runs and needs its size";
  }
  return "";
}

namespace {

/// The offsets, sizes and unit strides of the positions [offset, offset +
/// length) of `tensor` along `axis` (everything along the other dimensions).
struct SliceBounds {
  SmallVector<OpFoldResult> offsets, sizes, strides;
};

SliceBounds axisSlice(OpBuilder &b, Location loc, Value tensor, int64_t axis,
                      OpFoldResult offset, OpFoldResult length) {
  auto type = cast<RankedTensorType>(tensor.getType());
  SliceBounds s;
  s.offsets.assign(type.getRank(), b.getIndexAttr(0));
  s.strides.assign(type.getRank(), b.getIndexAttr(1));
  s.offsets[axis] = offset;
  for (int64_t d = 0, e = type.getRank(); d < e; ++d) {
    if (d == axis)
      s.sizes.push_back(length);
    else if (type.isDynamicDim(d))
      s.sizes.push_back(tensor::DimOp::create(b, loc, tensor, d).getResult());
    else
      s.sizes.push_back(b.getIndexAttr(type.getDimSize(d)));
  }
  return s;
}

struct BlockRecurrenceToLoops : OpRewritePattern<BlockRecurrenceOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(BlockRecurrenceOp op,
                                PatternRewriter &rewriter) const override {
    std::string why = whyNotLowerable(op);
    if (!why.empty())
      return rewriter.notifyMatchFailure(op, why);
    Location loc = op.getLoc();
    int64_t axis = op.getAxisAttr().getInt();
    int64_t blockSize = op.getBlockSizeAttr().getInt();
    Block &body = op.getBody().front();
    size_t numOutputs = op.getOutputs().size();

    // T positions, T / block_size blocks; the outputs have T positions along
    // the axis and the static sizes of their type elsewhere.
    Value length = dimSize(rewriter, loc, op.getInputs().front(), axis);
    Value blockLen = indexConst(rewriter, loc, blockSize);
    Value numBlocks = arith::DivUIOp::create(rewriter, loc, length, blockLen);
    SmallVector<Value> iterInit;
    for (Value output : op.getOutputs()) {
      auto type = cast<RankedTensorType>(output.getType());
      SmallVector<Value> sizes;
      for (int64_t d = 0, e = type.getRank(); d < e; ++d)
        sizes.push_back(
            d == axis ? length : indexConst(rewriter, loc, type.getDimSize(d)));
      iterInit.push_back(emptyLike(rewriter, loc, type, sizes));
    }
    llvm::append_range(iterInit, op.getInits());

    Value zero = indexConst(rewriter, loc, 0);
    SmallVector<Value> results = buildLoop(
        rewriter, loc, zero, numBlocks, iterInit,
        [&](OpBuilder &b, Location l, ValueRange blk, ValueRange iter) {
          Value offset = arith::MulIOp::create(b, l, blk[0], blockLen);
          // Block t of every input, then the carried values.
          SmallVector<Value> args;
          for (auto [input, arg] :
               llvm::zip(op.getInputs(), body.getArguments())) {
            SliceBounds s =
                axisSlice(b, l, input, axis, offset, b.getIndexAttr(blockSize));
            args.push_back(tensor::ExtractSliceOp::create(
                b, l, cast<RankedTensorType>(arg.getType()), input, s.offsets,
                s.sizes, s.strides));
          }
          llvm::append_range(args, iter.drop_front(numOutputs));
          SmallVector<Value> yielded = inlineBlock(b, body, args);
          // Block t of every output goes to positions [offset, offset + B).
          SmallVector<Value> next;
          for (size_t m = 0; m < numOutputs; ++m) {
            SliceBounds s = axisSlice(b, l, iter[m], axis, offset,
                                      b.getIndexAttr(blockSize));
            next.push_back(tensor::InsertSliceOp::create(
                b, l, yielded[m], iter[m], s.offsets, s.sizes, s.strides));
          }
          llvm::append_range(next,
                             ArrayRef<Value>(yielded).drop_front(numOutputs));
          return next;
        });
    rewriter.replaceOp(op, results);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// recur.memory_update
//===----------------------------------------------------------------------===//

/// x - y and max(x, y) on sizes, folded to constants when both are.
OpFoldResult subSizes(OpBuilder &b, Location loc, OpFoldResult x,
                      OpFoldResult y) {
  std::optional<int64_t> cx = getConstantIntValue(x),
                         cy = getConstantIntValue(y);
  if (cx && cy)
    return b.getIndexAttr(*cx - *cy);
  return arith::SubIOp::create(b, loc,
                               getValueOrCreateConstantIndexOp(b, loc, x),
                               getValueOrCreateConstantIndexOp(b, loc, y))
      .getResult();
}

OpFoldResult maxSizes(OpBuilder &b, Location loc, OpFoldResult x,
                      OpFoldResult y) {
  std::optional<int64_t> cx = getConstantIntValue(x),
                         cy = getConstantIntValue(y);
  if (cx && cy)
    return b.getIndexAttr(std::max(*cx, *cy));
  return arith::MaxSIOp::create(b, loc,
                                getValueOrCreateConstantIndexOp(b, loc, x),
                                getValueOrCreateConstantIndexOp(b, loc, y))
      .getResult();
}

struct MemoryUpdateToLoops : OpRewritePattern<MemoryUpdateOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MemoryUpdateOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    int64_t axis = op.getAxisAttr().getInt();
    Value memory = op.getMemory(), fresh = op.getNewStates();
    auto type = cast<RankedTensorType>(op.getType());
    SmallVector<OpFoldResult> memSizes =
        tensor::getMixedSizes(rewriter, loc, memory);
    OpFoldResult memLen = memSizes[axis];
    OpFoldResult newLen = tensor::getMixedSizes(rewriter, loc, fresh)[axis];
    OpFoldResult size = rewriter.getIndexAttr(op.getSizeAttr().getInt());

    // The last `size` of the M + L positions of [memory; new]: the last
    // max(size - L, 0) of memory, then the last size - that of new.
    OpFoldResult fromMem =
        maxSizes(rewriter, loc, subSizes(rewriter, loc, size, newLen),
                 rewriter.getIndexAttr(0));
    OpFoldResult fromNew = subSizes(rewriter, loc, size, fromMem);
    OpFoldResult memStart = subSizes(rewriter, loc, memLen, fromMem);
    OpFoldResult newStart = subSizes(rewriter, loc, newLen, fromNew);

    SmallVector<OpFoldResult> outSizes(memSizes);
    outSizes[axis] = size;
    Value result =
        tensor::EmptyOp::create(rewriter, loc, outSizes, type.getElementType());
    // Copies positions [start, start + count) of `source` to [at, at +
    // count) of `dest`. A part known to be empty is skipped: its start may
    // equal the source's length, which extract_slice rejects.
    auto copy = [&](Value source, OpFoldResult start, OpFoldResult count,
                    OpFoldResult at, Value dest) -> Value {
      if (isZeroInteger(count))
        return dest;
      SliceBounds from = axisSlice(rewriter, loc, source, axis, start, count);
      Value part = tensor::ExtractSliceOp::create(
          rewriter, loc, source, from.offsets, from.sizes, from.strides);
      SliceBounds to = axisSlice(rewriter, loc, part, axis, at, count);
      return tensor::InsertSliceOp::create(rewriter, loc, part, dest,
                                           to.offsets, to.sizes, to.strides);
    };
    result = copy(memory, memStart, fromMem, rewriter.getIndexAttr(0), result);
    result = copy(fresh, newStart, fromNew, fromMem, result);
    if (result.getType() != type)
      result = tensor::CastOp::create(rewriter, loc, type, result);
    rewriter.replaceOp(op, result);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// recur.stop_gradient
//===----------------------------------------------------------------------===//

struct StopGradientToLoops : OpRewritePattern<StopGradientOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(StopGradientOp op,
                                PatternRewriter &rewriter) const override {
    // The forward value is the operand; the gradient rule lives in autodiff.
    rewriter.replaceOp(op, op.getInput());
    return success();
  }
};

} // namespace

void mlir::recur::loops::populateBlockPatterns(RewritePatternSet &patterns) {
  patterns
      .add<BlockRecurrenceToLoops, MemoryUpdateToLoops, StopGradientToLoops>(
          patterns.getContext());
}
