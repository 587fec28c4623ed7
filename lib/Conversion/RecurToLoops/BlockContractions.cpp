//===- BlockContractions.cpp - matrix products in register blocks ---------===//
//
// Part of the Recur project.
//
// recur-block-contractions: a linalg contraction C[.., i, .., j] +=
// A[.., i, .., k] * B[.., k, .., j] on tensors becomes loops over blocks of
// rows x cols vectors of C kept in registers through the loop over k
// (vector.fma), the CPU's micro-kernel form. Lowered to plain loops, each
// multiply-add loads and stores its output vector: about a third of the
// machine's multiply-add rate (docs/performance.md). A product into a
// fill starts its blocks from the fill's value (no pass to fill C, no
// read of it). A product whose builder marks A lower triangular sums each
// block of rows over the k where its rows of A may be nonzero; one whose
// result is needed only on and below the diagonal computes each block of
// rows up to the vector that holds its last row's diagonal element.
//
//===----------------------------------------------------------------------===//

#include "recur/Conversion/RecurToLoops/RecurToLoops.h"

#include "Utility.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"

namespace mlir::recur {
#define GEN_PASS_DEF_RECURBLOCKCONTRACTIONS
#include "recur/Conversion/Passes.h.inc"
} // namespace mlir::recur

using namespace mlir;
using namespace mlir::recur::loops;

namespace {

/// The roles of a contraction's loop dimensions and operands: C[.., i, ..,
/// j] += A[.., i, .., k] * B[.., k, .., j], `outer` the other parallel
/// dimensions (loop order).
struct Contraction {
  unsigned i, j, k;
  SmallVector<unsigned> outer;
  OpOperand *a, *b;
  FloatType elem;
};

/// The loop dimension `expr` is, if it is one.
std::optional<unsigned> dimOf(AffineExpr expr) {
  if (auto dim = dyn_cast<AffineDimExpr>(expr))
    return dim.getPosition();
  return std::nullopt;
}

/// Whether `map` reads loop dimension `d`.
bool reads(AffineMap map, unsigned d) { return map.isFunctionOfDim(d); }

/// Whether `op`'s body is `out + x * y` (or `x * y + out`) of its two
/// inputs' elements, in one float type.
bool isMultiplyAdd(linalg::GenericOp op) {
  Block &body = op.getRegion().front();
  if (body.getOperations().size() != 3)
    return false;
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto sum = yield.getValues().front().getDefiningOp<arith::AddFOp>();
  if (!sum)
    return false;
  Value out = body.getArgument(2);
  Value product = sum.getLhs() == out   ? sum.getRhs()
                  : sum.getRhs() == out ? sum.getLhs()
                                        : Value();
  auto mul = product ? product.getDefiningOp<arith::MulFOp>() : nullptr;
  if (!mul)
    return false;
  Value x = body.getArgument(0), y = body.getArgument(1);
  return (mul.getLhs() == x && mul.getRhs() == y) ||
         (mul.getLhs() == y && mul.getRhs() == x);
}

/// The roles of `op`'s dimensions and operands when it is a contraction
/// this pass blocks (see the pass description), nothing otherwise.
std::optional<Contraction> matchContraction(linalg::GenericOp op) {
  if (!op.hasPureTensorSemantics() || op.getNumDpsInputs() != 2 ||
      op.getNumDpsInits() != 1 || op.getNumReductionLoops() != 1)
    return std::nullopt;
  for (AffineMap map : op.getIndexingMapsArray())
    if (!map.isProjectedPermutation() || map.getNumResults() == 0)
      return std::nullopt;
  Type elem = getElementTypeOrSelf(op.getDpsInits()[0].getType());
  if (!elem.isF32() && !elem.isF64())
    return std::nullopt;
  for (Value in : op.getDpsInputs())
    if (getElementTypeOrSelf(in.getType()) != elem)
      return std::nullopt;
  if (!isMultiplyAdd(op))
    return std::nullopt;

  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  Contraction c;
  c.elem = cast<FloatType>(elem);
  for (auto [d, kind] : llvm::enumerate(iterators))
    if (kind == utils::IteratorType::reduction)
      c.k = d;
  // The blocks' loops are built anew, so the op's loop order does not
  // matter: j is whatever walks C's last (contiguous) dimension.
  AffineMap cMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
  c.j = *dimOf(cMap.getResults().back());
  if (iterators[c.j] != utils::IteratorType::parallel)
    return std::nullopt;
  OpOperand *in0 = op.getDpsInputOperand(0), *in1 = op.getDpsInputOperand(1);
  bool reads0 = reads(op.getMatchingIndexingMap(in0), c.j);
  bool reads1 = reads(op.getMatchingIndexingMap(in1), c.j);
  if (reads0 == reads1)
    return std::nullopt;
  c.b = reads0 ? in0 : in1;
  c.a = reads0 ? in1 : in0;
  AffineMap aMap = op.getMatchingIndexingMap(c.a);
  AffineMap bMap = op.getMatchingIndexingMap(c.b);
  if (!reads(aMap, c.k) || !reads(bMap, c.k))
    return std::nullopt;
  // The row dimension: the innermost of C's dimensions that A reads and B
  // does not (each row then reuses the same vectors of B).
  std::optional<unsigned> row;
  for (AffineExpr e : cMap.getResults()) {
    unsigned d = *dimOf(e);
    if (d != c.j && reads(aMap, d) && !reads(bMap, d))
      row = d;
  }
  if (!row)
    return std::nullopt;
  c.i = *row;
  for (auto [d, kind] : llvm::enumerate(iterators))
    if (kind == utils::IteratorType::parallel && d != c.i && d != c.j)
      c.outer.push_back(d);
  return c;
}

/// Builds the blocked loops of one contraction.
class BlockedContraction {
public:
  BlockedContraction(OpBuilder &b, Location loc, linalg::GenericOp op,
                     const Contraction &c, int64_t rows, int64_t cols)
      : op(op), c(c), rows(rows), cols(cols),
        lanes(256 / FloatType(c.elem).getWidth()),
        vecType(VectorType::get({lanes}, c.elem)) {
    for (Range range :
         cast<linalg::LinalgOp>(op.getOperation()).createLoopRanges(b, loc))
      sizes.push_back(getValueOrCreateConstantIndexOp(b, loc, range.size));
    aMap = op.getMatchingIndexingMap(c.a);
    bMap = op.getMatchingIndexingMap(c.b);
    cMap = op.getMatchingIndexingMap(op.getDpsInitOperand(0));
    // A lower triangular, read as A[i, k] (nonzero for k <= i) or A[k, i]
    // (for k >= i); C needed where j <= i.
    auto is = [](AffineMap map, unsigned d0, unsigned d1) {
      return map.getNumResults() == 2 && dimOf(map.getResult(0)) == d0 &&
             dimOf(map.getResult(1)) == d1;
    };
    if (auto tri =
            op->getAttrOfType<IntegerAttr>(kLowerTriangularInputAttrName);
        tri && tri.getInt() >= 0 && tri.getInt() < op.getNumDpsInputs() &&
        op.getDpsInputOperand(tri.getInt()) == c.a) {
      kUpToRow = is(aMap, c.i, c.k);
      kFromRow = is(aMap, c.k, c.i);
    }
    lowerResult =
        op->hasAttr(kLowerTriangularResultAttrName) && is(cMap, c.i, c.j);
    bValue = c.b->get();
    // C = A B^T: B is read through a copy with j's dimension moved last.
    if (dimOf(bMap.getResults().back()) != c.j)
      transposeB(b, loc);
    // C filled with one value (a product from zero, as every einsum's):
    // the blocks start from that value instead of reading it, and write
    // a fresh tensor of C's sizes, so the fill is left without this use.
    dest = op.getDpsInits()[0];
    if (auto fill = dest.getDefiningOp<linalg::FillOp>();
        fill && fill.hasPureTensorSemantics() &&
        fill.value().getType() == c.elem) {
      initValue = fill.value();
      dest = fill.getOutputs()[0];
      if (auto empty = dest.getDefiningOp<tensor::EmptyOp>())
        dest = b.clone(*empty)->getResult(0);
    }
  }

  /// The result: C after every block. The rows go by blocks (in
  /// parallel, with the other parallel dimensions), each block across every
  /// column, so that its rows of A stay in the first-level cache while the
  /// column blocks of B stream past; then the rows left over (fewer than a
  /// block): one block of them when their number is static, otherwise one
  /// at a time. (Tiles of 16 row blocks going column block by
  /// column block, the column blocks of B copied contiguous or not, measured
  /// 1.2x to 1.5x slower on the Block-Recurrent bench layers.)
  Value build(OpBuilder &b, Location loc) {
    Value m = sizes[c.i];
    Value blockRows = indexConst(b, loc, rows);
    // Folded where the sizes are static, so that loops they leave empty
    // are not built.
    Value full = b.createOrFold<arith::DivUIOp>(loc, m, blockRows);
    Value first = b.createOrFold<arith::MulIOp>(loc, full, blockRows);
    Value left = b.createOrFold<arith::SubIOp>(loc, m, first);
    Value result = dest;
    std::optional<int64_t> leftRows = getConstantIntValue(left);
    Value leftCount = leftRows ? indexConst(b, loc, 1) : left;
    int64_t leftHeight = leftRows ? *leftRows : 1;
    for (auto [count, height, base] :
         {std::tuple<Value, int64_t, Value>{full, rows, Value()},
          {leftRows == 0 ? left : leftCount, leftHeight, first}}) {
      if (getConstantIntValue(count) == 0)
        continue;
      SmallVector<Value> ubs;
      for (unsigned d : c.outer)
        ubs.push_back(sizes[d]);
      ubs.push_back(count);
      int64_t blockHeight = height;
      Value offset = base;
      result = buildNest(
          b, loc, ubs, result,
          [&](OpBuilder &nb, Location l, ValueRange ivs, ValueRange args) {
            Value row = arith::MulIOp::create(nb, l, ivs.back(),
                                              indexConst(nb, l, blockHeight));
            if (offset)
              row = arith::AddIOp::create(nb, l, offset, row);
            return SmallVector<Value>{
                columns(nb, l, ivs.drop_back(), row, blockHeight, args[0])};
          })[0];
    }
    return result;
  }

private:
  /// B copied with j's dimension moved last (linalg.transpose; the copy
  /// costs one pass over B, against one per block of rows reading it down
  /// its columns), and bMap to match.
  void transposeB(OpBuilder &b, Location loc) {
    ArrayRef<AffineExpr> results = bMap.getResults();
    SmallVector<int64_t> perm;
    for (auto [pos, e] : llvm::enumerate(results))
      if (*dimOf(e) != c.j)
        perm.push_back(pos);
    for (auto [pos, e] : llvm::enumerate(results))
      if (*dimOf(e) == c.j)
        perm.push_back(pos);
    auto type = cast<RankedTensorType>(bValue.getType());
    SmallVector<Value> srcSizes = dimSizes(b, loc, bValue), dstSizes;
    SmallVector<int64_t> shape;
    SmallVector<AffineExpr> permuted;
    for (int64_t pos : perm) {
      dstSizes.push_back(srcSizes[pos]);
      shape.push_back(type.getDimSize(pos));
      permuted.push_back(results[pos]);
    }
    auto dstType = RankedTensorType::get(shape, type.getElementType());
    Value init = emptyLike(b, loc, dstType, dstSizes);
    bValue =
        linalg::TransposeOp::create(b, loc, bValue, init, perm)->getResult(0);
    bMap = AffineMap::get(bMap.getNumDims(), 0, permuted, b.getContext());
  }

  /// Every column of rows [row, row + count) (with lowerResult, up to the
  /// vector holding column row + count - 1): blocks of `cols` vectors,
  /// then single vectors, then the last columns short of a vector (masked).
  Value columns(OpBuilder &b, Location loc, ValueRange outerIvs, Value row,
                int64_t count, Value acc) {
    Value n = sizes[c.j];
    Value zero = indexConst(b, loc, 0);
    Value blockWidth = indexConst(b, loc, cols * lanes);
    Value vec = indexConst(b, loc, lanes);
    if (lowerResult) {
      Value end = arith::MulIOp::create(
          b, loc,
          arith::CeilDivUIOp::create(
              b, loc,
              arith::AddIOp::create(b, loc, row, indexConst(b, loc, count)),
              vec),
          vec);
      n = arith::MinUIOp::create(b, loc, n, end);
    }
    Value wholeBlocks = b.createOrFold<arith::MulIOp>(
        loc, b.createOrFold<arith::DivUIOp>(loc, n, blockWidth), blockWidth);
    Value wholeVectors = b.createOrFold<arith::MulIOp>(
        loc, b.createOrFold<arith::DivUIOp>(loc, n, vec), vec);
    for (auto [lb, ub, step, width, inBounds] :
         {std::tuple<Value, Value, Value, int64_t, bool>{
              zero, wholeBlocks, blockWidth, cols, true},
          {wholeBlocks, wholeVectors, vec, 1, true},
          {wholeVectors, n, vec, 1, false}}) {
      // Leave out the loops a static size makes empty.
      std::optional<int64_t> first = getConstantIntValue(lb);
      if (first && first == getConstantIntValue(ub))
        continue;
      int64_t blockCols = width;
      bool whole = inBounds;
      auto loop = scf::ForOp::create(
          b, loc, lb, ub, step, acc,
          [&](OpBuilder &fb, Location l, Value col, ValueRange args) {
            scf::YieldOp::create(fb, l,
                                 block(fb, l, outerIvs, row, count, col,
                                       blockCols, whole, args[0]));
          });
      // Not unrolled by LLVM: a static width of a few blocks is otherwise
      // unrolled whole (each copy with its loop over k), for nothing
      // measurable at run time and a larger kernel to compile.
      loop->setDiscardableAttr(
          "llvm.loop_annotation",
          LLVM::LoopAnnotationAttr::get(
              b.getContext(), /*disableNonforced=*/nullptr,
              /*vectorize=*/nullptr, /*interleave=*/nullptr,
              LLVM::LoopUnrollAttr::get(b.getContext(), b.getBoolAttr(true),
                                        nullptr, nullptr, nullptr, nullptr,
                                        nullptr, nullptr),
              nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
              nullptr, nullptr, nullptr, {}));
      acc = loop.getResult(0);
    }
    return acc;
  }

  /// The indices of `map`'s operand at loop position (outer ivs, i, j, k).
  SmallVector<Value> at(AffineMap map, ValueRange outerIvs, Value i, Value j,
                        Value k) {
    SmallVector<Value> idx;
    for (AffineExpr e : map.getResults()) {
      unsigned d = *dimOf(e);
      if (d == c.i)
        idx.push_back(i);
      else if (d == c.j)
        idx.push_back(j);
      else if (d == c.k)
        idx.push_back(k);
      else
        idx.push_back(outerIvs[llvm::find(c.outer, d) - c.outer.begin()]);
    }
    return idx;
  }

  /// One block: count rows x blockCols vectors of C from `col` on, read,
  /// updated over every k and written back.
  Value block(OpBuilder &b, Location loc, ValueRange outerIvs, Value row,
              int64_t count, Value col, int64_t blockCols, bool inBounds,
              Value acc) {
    Value pad =
        arith::ConstantOp::create(b, loc, c.elem, FloatAttr::get(c.elem, 0.0));
    auto read = [&](OpBuilder &rb, Location rl, Value tensor,
                    ValueRange idx) -> Value {
      return vector::TransferReadOp::create(rb, rl, vecType, tensor, idx, pad,
                                            ArrayRef<bool>{inBounds});
    };
    // The block's rows and first columns of its vectors, once, outside the
    // loop over k.
    SmallVector<Value> rowAt{row}, colAt{col};
    for (int64_t r = 1; r < count; ++r)
      rowAt.push_back(
          arith::AddIOp::create(b, loc, row, indexConst(b, loc, r)));
    for (int64_t v = 1; v < blockCols; ++v)
      colAt.push_back(
          arith::AddIOp::create(b, loc, col, indexConst(b, loc, v * lanes)));
    SmallVector<Value> init;
    Value k0 = indexConst(b, loc, 0);
    Value filled = initValue
                       ? vector::BroadcastOp::create(b, loc, vecType, initValue)
                       : Value();
    for (int64_t r = 0; r < count; ++r)
      for (int64_t v = 0; v < blockCols; ++v)
        init.push_back(filled
                           ? filled
                           : read(b, loc, acc,
                                  at(cMap, outerIvs, rowAt[r], colAt[v], k0)));
    // The k where the block's rows of A may be nonzero.
    Value kFrom = k0, kTo = sizes[c.k];
    if (kUpToRow)
      kTo = arith::MinUIOp::create(
          b, loc, kTo,
          arith::AddIOp::create(b, loc, row, indexConst(b, loc, count)));
    if (kFromRow)
      kFrom = arith::MinUIOp::create(b, loc, kTo, row);
    SmallVector<Value> sums = fmaBlock(
        b, loc, kFrom, kTo, init, count, blockCols,
        [&](OpBuilder &kb, Location kl, Value k, int64_t r) -> Value {
          Value x = extractAt(kb, kl, c.a->get(),
                              at(aMap, outerIvs, rowAt[r], Value(), k));
          return vector::BroadcastOp::create(kb, kl, vecType, x);
        },
        [&](OpBuilder &kb, Location kl, Value k, int64_t v) {
          return read(kb, kl, bValue, at(bMap, outerIvs, Value(), colAt[v], k));
        });
    for (int64_t r = 0; r < count; ++r)
      for (int64_t v = 0; v < blockCols; ++v)
        acc = vector::TransferWriteOp::create(
                  b, loc, sums[r * blockCols + v], acc,
                  at(cMap, outerIvs, rowAt[r], colAt[v], k0),
                  ArrayRef<bool>{inBounds})
                  .getResult();
    return acc;
  }

  linalg::GenericOp op;
  const Contraction &c;
  int64_t rows, cols, lanes;
  VectorType vecType;
  SmallVector<Value> sizes;
  AffineMap aMap, bMap, cMap;
  /// What the blocks read B from: B, or its transposed copy.
  Value bValue;
  /// The tensor the blocks write: C, or where C is a fill, a tensor of its
  /// sizes that nothing reads; then `initValue` is the fill's value.
  Value dest, initValue;
  /// A lower triangular: a block of rows sums k up to its last row
  /// (kUpToRow, A read as A[i, k]) or from its first (kFromRow, A[k, i]).
  bool kUpToRow = false, kFromRow = false;
  /// Only C's elements with j <= i are needed.
  bool lowerResult = false;
};

struct RecurBlockContractionsPass
    : recur::impl::RecurBlockContractionsBase<RecurBlockContractionsPass> {
  using RecurBlockContractionsBase::RecurBlockContractionsBase;

  void runOnOperation() override {
    if (rows < 1 || cols < 1) {
      getOperation()->emitError("recur-block-contractions: rows and cols "
                                "must be at least 1");
      return signalPassFailure();
    }
    SmallVector<std::pair<linalg::GenericOp, Contraction>> found;
    getOperation()->walk([&](linalg::GenericOp op) {
      if (std::optional<Contraction> c = matchContraction(op))
        found.emplace_back(op, *c);
    });
    IRRewriter rewriter(&getContext());
    SetVector<linalg::FillOp> fills;
    for (auto &[op, c] : found) {
      if (auto fill = op.getDpsInits()[0].getDefiningOp<linalg::FillOp>())
        fills.insert(fill);
      rewriter.setInsertionPoint(op);
      BlockedContraction blocked(rewriter, op.getLoc(), op, c, rows, cols);
      Value result = blocked.build(rewriter, op.getLoc());
      rewriter.replaceOp(op, result);
    }
    // A fill the products no longer read: its sizes come from its init, and
    // with nothing else using it, it goes.
    for (linalg::FillOp fill : fills) {
      if (!fill.hasPureTensorSemantics())
        continue;
      Value filled = fill.getResult(0), init = fill.getOutputs()[0];
      for (OpOperand &use : llvm::make_early_inc_range(filled.getUses()))
        if (isa<tensor::DimOp>(use.getOwner()))
          rewriter.modifyOpInPlace(use.getOwner(), [&] { use.set(init); });
      if (filled.use_empty())
        rewriter.eraseOp(fill);
    }
  }
};

} // namespace
