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

/// Whether some output has a dynamic size besides the axis, known only once
/// the body has produced a block of it.
bool hasDynamicOutputSizes(BlockRecurrenceOp op) {
  int64_t axis = op.getAxisAttr().getInt();
  return llvm::any_of(op.getOutputs(), [&](Value output) {
    auto type = cast<RankedTensorType>(output.getType());
    for (int64_t d = 0, e = type.getRank(); d < e; ++d)
      if (d != axis && type.isDynamicDim(d))
        return true;
    return false;
  });
}

struct BlockRecurrenceToLoops : OpRewritePattern<BlockRecurrenceOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(BlockRecurrenceOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    int64_t axis = op.getAxisAttr().getInt();
    int64_t blockSize = op.getBlockSizeAttr().getInt();
    Block &body = op.getBody().front();
    size_t numOutputs = op.getOutputs().size();

    // T positions, T / block_size blocks; the outputs have T positions along
    // the axis.
    Value length = dimSize(rewriter, loc, op.getInputs().front(), axis);
    Value blockLen = indexConst(rewriter, loc, blockSize);
    Value numBlocks = arith::DivUIOp::create(rewriter, loc, length, blockLen);

    // The body on the block at `offset`: slices of the inputs and the
    // carried values in, the block of every output then the next carried
    // values out.
    auto runBody = [&](OpBuilder &b, Location l, Value offset,
                       ValueRange carried) {
      SmallVector<Value> args;
      for (auto [input, arg] : llvm::zip(op.getInputs(), body.getArguments())) {
        SliceBounds s =
            axisSlice(b, l, input, axis, offset, b.getIndexAttr(blockSize));
        args.push_back(tensor::ExtractSliceOp::create(
            b, l, cast<RankedTensorType>(arg.getType()), input, s.offsets,
            s.sizes, s.strides));
      }
      llvm::append_range(args, carried);
      return inlineBlock(b, body, args);
    };
    // The block of every output goes to positions [offset, offset + W).
    auto insertBlocks = [&](OpBuilder &b, Location l, Value offset,
                            ValueRange yielded, ValueRange outputs) {
      SmallVector<Value> next;
      for (size_t m = 0; m < numOutputs; ++m) {
        SliceBounds s = axisSlice(b, l, outputs[m], axis, offset,
                                  b.getIndexAttr(blockSize));
        next.push_back(tensor::InsertSliceOp::create(
            b, l, yielded[m], outputs[m], s.offsets, s.sizes, s.strides));
      }
      llvm::append_range(next, yielded.drop_front(numOutputs));
      return next;
    };
    // The outputs, sized T along the axis; a dynamic size elsewhere comes
    // from `sizeOf(m, d)`.
    auto allocOutputs = [&](OpBuilder &b, Location l,
                            function_ref<Value(size_t, int64_t)> sizeOf) {
      SmallVector<Value> outputs;
      for (auto [m, output] : llvm::enumerate(op.getOutputs())) {
        auto type = cast<RankedTensorType>(output.getType());
        SmallVector<Value> sizes;
        for (int64_t d = 0, e = type.getRank(); d < e; ++d)
          sizes.push_back(d == axis ? length
                          : type.isDynamicDim(d)
                              ? sizeOf(m, d)
                              : indexConst(b, l, type.getDimSize(d)));
        outputs.push_back(emptyLike(b, l, type, sizes));
      }
      return outputs;
    };

    Value first = indexConst(rewriter, loc, 0);
    SmallVector<Value> iterInit;
    if (!hasDynamicOutputSizes(op)) {
      iterInit = allocOutputs(rewriter, loc, [](size_t, int64_t) -> Value {
        llvm_unreachable("static sizes");
      });
      llvm::append_range(iterInit, op.getInits());
    } else {
      // Block 0 runs first, outside the loop: its outputs give the sizes.
      // With no block at all the outputs have no positions, and 0 for the
      // sizes the body would have said.
      Value zero = indexConst(rewriter, loc, 0);
      Value any = arith::CmpIOp::create(
          rewriter, loc, arith::CmpIPredicate::ugt, numBlocks, zero);
      auto peeled = scf::IfOp::create(
          rewriter, loc, any,
          [&](OpBuilder &b, Location l) {
            SmallVector<Value> yielded = runBody(b, l, zero, op.getInits());
            SmallVector<Value> outputs =
                allocOutputs(b, l, [&](size_t m, int64_t d) -> Value {
                  return tensor::DimOp::create(b, l, yielded[m], d);
                });
            scf::YieldOp::create(b, l,
                                 insertBlocks(b, l, zero, yielded, outputs));
          },
          [&](OpBuilder &b, Location l) {
            SmallVector<Value> none = allocOutputs(
                b, l, [&](size_t, int64_t) { return indexConst(b, l, 0); });
            llvm::append_range(none, op.getInits());
            scf::YieldOp::create(b, l, none);
          });
      iterInit = peeled.getResults();
      first = indexConst(rewriter, loc, 1);
    }

    SmallVector<Value> results = buildLoop(
        rewriter, loc, first, numBlocks, iterInit,
        [&](OpBuilder &b, Location l, ValueRange blk, ValueRange iter) {
          Value offset = arith::MulIOp::create(b, l, blk[0], blockLen);
          SmallVector<Value> yielded =
              runBody(b, l, offset, iter.drop_front(numOutputs));
          return insertBlocks(b, l, offset, yielded,
                              iter.take_front(numOutputs));
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
