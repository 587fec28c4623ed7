//===- Utility.h - helpers of the scalar reference lowering -----*- C++ -*-===//
//
// Part of the Recur project.
//
// Small builders shared by the RecurToLoops patterns: sizes and empty
// tensors, scalar constants and arithmetic over real or complex elements,
// loops that yield what their body returns, and inlining of recur regions.
//
//===----------------------------------------------------------------------===//

#ifndef RECUR_LIB_CONVERSION_RECURTOLOOPS_UTILITY_H
#define RECUR_LIB_CONVERSION_RECURTOLOOPS_UTILITY_H

#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"

#include <optional>

namespace mlir::recur::loops {

/// The body of a loop (or loop nest): given the induction variable(s) and the
/// iteration arguments, builds the iteration and returns the values to yield.
using LoopBody = function_ref<SmallVector<Value>(
    OpBuilder &, Location, ValueRange ivs, ValueRange args)>;

//===----------------------------------------------------------------------===//
// Sizes and tensors
//===----------------------------------------------------------------------===//

/// The sizes of every dimension of `tensor`, constants where static and
/// `tensor.dim` where dynamic.
SmallVector<Value> dimSizes(OpBuilder &b, Location loc, Value tensor);

/// The size of dimension `dim` of `tensor` (a constant when static).
Value dimSize(OpBuilder &b, Location loc, Value tensor, int64_t dim);

/// An uninitialized tensor of `type` whose dynamic sizes come from `sizes`
/// (one entry per dimension; none needed when `type` is static).
Value emptyLike(OpBuilder &b, Location loc, RankedTensorType type,
                ArrayRef<Value> sizes);

/// Scratch of `type` (dynamic sizes from `sizes`, one per dimension) for
/// one iteration of a loop body: unlike tensor.empty, which CSE merges with
/// an equal one outside the loop (bufferization then gives every iteration
/// the same buffer and the loop cannot run in parallel), it allocates where
/// it stands.
Value privateScratch(OpBuilder &b, Location loc, RankedTensorType type,
                     ArrayRef<Value> sizes);

/// `a` followed by `b`, as one index list.
SmallVector<Value> concatIndices(ValueRange a, ValueRange b);

/// Reads the element of `tensor` at `idx`.
Value extractAt(OpBuilder &b, Location loc, Value tensor, ValueRange idx);

/// Writes `value` into `tensor` at `idx`; returns the new tensor.
Value insertAt(OpBuilder &b, Location loc, Value value, Value tensor,
               ValueRange idx);

//===----------------------------------------------------------------------===//
// Scalars
//===----------------------------------------------------------------------===//

Value indexConst(OpBuilder &b, Location loc, int64_t value);

/// A float constant of type `elem`, rounded to it.
Value floatConst(OpBuilder &b, Location loc, Type elem, double value);

/// Zero of a float or complex type.
Value zeroOf(OpBuilder &b, Location loc, Type elem);

/// x * y and x + y over float or complex elements.
Value mul(OpBuilder &b, Location loc, Value x, Value y);
Value add(OpBuilder &b, Location loc, Value x, Value y);

/// sigmoid(x) = 1 / (1 + exp(-x)); exp overflowing to inf gives exactly 0.
Value sigmoid(OpBuilder &b, Location loc, Value x);

/// A scalar that depends on one index (an element of a row, say).
using IndexFn = function_ref<Value(OpBuilder &, Location, Value)>;

/// `sum_e x(e) * y(e)` over e in [0, n), accumulated in order from zero in
/// the float type `elem`.
Value dotProduct(OpBuilder &b, Location loc, Type elem, Value n, IndexFn x,
                 IndexFn y);

/// The index `x` as a float of type `elem` (through i64).
Value indexToFloat(OpBuilder &b, Location loc, Value x, Type elem);

/// The attention scale: the attribute when given, otherwise 1/sqrt(d) (a
/// constant when `d` is).
Value attentionScale(OpBuilder &b, Location loc, Type elem,
                     std::optional<APFloat> scale, Value d);

//===----------------------------------------------------------------------===//
// Loops and regions
//===----------------------------------------------------------------------===//

/// `scf.for %iv = lb to ub step 1 iter_args(iterArgs)` whose body is `body`
/// followed by a yield of what it returns; returns the loop's results.
SmallVector<Value> buildLoop(OpBuilder &b, Location loc, Value lb, Value ub,
                             ValueRange iterArgs, LoopBody body);

/// The body of buildBlockedLoop: the indices of one block (or of one index
/// of the rest) and the carried values.
using BlockBody = function_ref<SmallVector<Value>(
    OpBuilder &, Location, ArrayRef<Value> indices, ValueRange args)>;

/// Runs `body` over [0, n) `block` indices at a time (a loop over n / block
/// blocks, body given block * k, ..., block * k + block - 1), then one index
/// at a time over the rest, carrying `iterArgs`; returns the last results.
/// For a body that makes one pass over a row for all its indices, so that
/// the row is read and written once per block.
SmallVector<Value> buildBlockedLoop(OpBuilder &b, Location loc, Value n,
                                    int64_t block, ValueRange iterArgs,
                                    BlockBody body);

/// One register block of a product: `acc[i * cols + c] += x(k, i) * y(k,
/// c)` for k in [from, n), the rows x cols vectors carried in registers
/// (iteration arguments) through the loop over k, added with vector.fma.
using VectorFn =
    function_ref<Value(OpBuilder &, Location, Value k, int64_t index)>;
SmallVector<Value> fmaBlock(OpBuilder &b, Location loc, Value from, Value n,
                            ValueRange init, int64_t rows, int64_t cols,
                            VectorFn x, VectorFn y);
/// The same for k in [0, n).
inline SmallVector<Value> fmaBlock(OpBuilder &b, Location loc, Value n,
                                   ValueRange init, int64_t rows, int64_t cols,
                                   VectorFn x, VectorFn y) {
  return fmaBlock(b, loc, indexConst(b, loc, 0), n, init, rows, cols, x, y);
}
/// Whether `value` is computed from the induction variable of `loop` by
/// operations inside it (values reaching it only through block arguments
/// inside, such as iteration arguments, do not count).
bool dependsOnIv(Value value, scf::ForOp loop);

/// The buffer `value` is, looking through the results of scf.for loops
/// that yield their iteration argument back (loops that update a buffer in
/// place, as bufferization leaves them) and of scf.if ops whose branches
/// both yield the same buffer (a conditional in-place update), and of
/// memref.expand_shape undoing a memref.collapse_shape (a flat view and
/// back).
Value inPlaceSource(Value value);

/// Bytes of one element of `type` in the kernel's buffers (an index, int,
/// float or complex type; none for other types).
std::optional<int64_t> elementBytes(Type type);

/// The unit attribute that tags a loop of independent iterations: each one
/// reads the operands and writes only its own elements of the results.
inline constexpr llvm::StringLiteral kParallelAttrName = "recur.parallel";

/// What a matrix product's builder knows of its zeros, for
/// recur-block-contractions (discardable attributes of a linalg.generic
/// contraction): the input of this number (an integer attribute), a 2-D
/// tensor, is zero above its diagonal (x[r, s] = 0 for s > r), so the terms
/// it multiplies there need not be summed.
inline constexpr llvm::StringLiteral kLowerTriangularInputAttrName =
    "recur.lower_triangular_input";
/// A unit attribute of such a contraction: only the 2-D result's elements
/// on and below its diagonal are read after the product; the others may
/// hold anything.
inline constexpr llvm::StringLiteral kLowerTriangularResultAttrName =
    "recur.lower_triangular_result";

/// A nest of loops from 0 to each of `ubs` (outermost first) threading
/// `iterArgs`; `body` sees one induction variable per loop. With no `ubs`
/// the body is built once, in place. The iterations must be independent:
/// every loop is tagged `kParallelAttrName` (kept only when the pass runs
/// with `mark-parallel`).
SmallVector<Value> buildNest(OpBuilder &b, Location loc, ValueRange ubs,
                             ValueRange iterArgs, LoopBody body);

/// The nest of loops over every dimension of `sizes` except `axis` (all of
/// them when `axis` is negative).
SmallVector<Value> buildNestExcept(OpBuilder &b, Location loc,
                                   ArrayRef<Value> sizes, int64_t axis,
                                   ValueRange iterArgs, LoopBody body);

/// Replaces the elements [0, n) of row `prefix` of `tensor` (the indices
/// `prefix..., j`) by `update(j, old element)`; returns the new tensor.
Value updateRow(
    OpBuilder &b, Location loc, Value tensor, ValueRange prefix, Value n,
    function_ref<Value(OpBuilder &, Location, Value j, Value old)> update);

/// Writes `value(j)` to the elements [0, n) of row `prefix` of `tensor`;
/// returns the new tensor.
Value fillRow(OpBuilder &b, Location loc, Value tensor, ValueRange prefix,
              Value n, IndexFn value);

/// Clones the operations of `block` (a recur region ending in recur.yield)
/// at the builder's point with its arguments bound to `args`; returns the
/// values the yield would return.
SmallVector<Value> inlineBlock(OpBuilder &b, Block &block, ValueRange args);

} // namespace mlir::recur::loops

#endif // RECUR_LIB_CONVERSION_RECURTOLOOPS_UTILITY_H
