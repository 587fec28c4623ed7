//===- SplitReductions.cpp - reductions onto few outputs in parts ---------===//
//
// Part of the Recur project.
//
//===----------------------------------------------------------------------===//
//
// recur-split-reductions (CUDA pipeline): a linalg reduction on buffers
// becomes, through convert-linalg-to-parallel-loops, a thread per output
// element summing all of its terms alone. A parameter's gradient summed
// over batch and time (a gate bias of D elements, say) then leaves the GPU
// with D threads. Where the outputs are few, this pass sums the terms in
// parts instead: a parallel loop over (part, output element) sums a part's
// contiguous run of the reduction's iterations into a partial buffer, and a
// parallel loop over the output elements adds the partials to the outputs.
//
//===----------------------------------------------------------------------===//

#include "recur/Conversion/RecurToLoops/RecurToLoops.h"

#include "Utility.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Complex/IR/Complex.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "llvm/Support/CheckedArithmetic.h"

namespace mlir::recur {
#define GEN_PASS_DEF_RECURSPLITREDUCTIONS
#include "recur/Conversion/Passes.h.inc"
} // namespace mlir::recur

using namespace mlir;
using namespace mlir::recur;

namespace {

/// What splitting `op` needs to know: its parallel and reduction loops (in
/// loop order) and how many iterations the parallel ones make.
struct SplitPlan {
  SmallVector<unsigned> parallel, reduction;
  SmallVector<int64_t> parallelSizes;
  int64_t parallelIterations = 1;
  /// The reduction loops' iterations, where they are static (or bounded).
  std::optional<int64_t> reductionBound;
};

/// Whether every output of `op` is `out + e` (arith.addf or complex.add),
/// `out` read nowhere else and the sum yielded and used nowhere else.
bool accumulatesByAdd(linalg::LinalgOp op) {
  Block *body = op.getBlock();
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  for (OpOperand &init : op.getDpsInitsMutable()) {
    BlockArgument out = op.getMatchingBlockArgument(&init);
    Value sum =
        yield.getOperand(init.getOperandNumber() - op.getNumDpsInputs());
    Operation *combiner = sum.getDefiningOp();
    if (!combiner || combiner->getBlock() != body ||
        !isa<arith::AddFOp, complex::AddOp>(combiner) || !out.hasOneUse() ||
        out.getUses().begin()->getOwner() != combiner || !sum.hasOneUse())
      return false;
  }
  return true;
}

/// Whether the ops around `op` stay on the host in the GPU pipeline
/// (recur-gpu-offload's host control): each an scf.for RecurToLoops did not
/// tag parallel or an scf.if, carrying only buffers, indices and integers,
/// its operands not loaded from memory, up to the function. Elsewhere (a
/// parallel loop, a loop carrying floats, which runs on the device) the
/// partials would be a buffer allocated in device code.
bool onHost(Operation *op) {
  for (Operation *parent = op->getParentOp();
       parent && !isa<FunctionOpInterface>(parent);
       parent = parent->getParentOp()) {
    if (!isa<scf::ForOp, scf::IfOp>(parent) ||
        parent->hasAttr(loops::kParallelAttrName))
      return false;
    if (!llvm::all_of(parent->getResultTypes(), [](Type type) {
          return isa<BaseMemRefType, IndexType, IntegerType>(type);
        }))
      return false;
    if (llvm::any_of(parent->getOperands(), [](Value v) {
          return v.getDefiningOp<memref::LoadOp>() != nullptr;
        }))
      return false;
  }
  return true;
}

/// The buffer `memref` is a view of, through view-like ops.
Value rootOf(Value memref) {
  while (auto view = memref.getDefiningOp<ViewLikeOpInterface>())
    memref = view.getViewSource();
  return memref;
}

/// The plan for splitting `op`, or nothing when it does not qualify (see
/// the pass's description).
std::optional<SplitPlan> planSplit(linalg::LinalgOp op, int64_t threads) {
  if (threads <= 0 || !op.hasPureBufferSemantics() ||
      op.getNumReductionLoops() == 0 || op.getNumDpsInits() == 0 || !onHost(op))
    return std::nullopt;
  SplitPlan plan;
  SmallVector<int64_t> sizes = op.getStaticLoopRanges();
  for (auto [d, kind] : llvm::enumerate(op.getIteratorTypesArray())) {
    if (kind == utils::IteratorType::reduction) {
      plan.reduction.push_back(d);
      continue;
    }
    if (ShapedType::isDynamic(sizes[d]))
      return std::nullopt;
    plan.parallel.push_back(d);
    plan.parallelSizes.push_back(sizes[d]);
    std::optional<int64_t> product =
        llvm::checkedMul<int64_t>(plan.parallelIterations, sizes[d]);
    if (!product)
      return std::nullopt;
    plan.parallelIterations = *product;
  }
  if (plan.parallelIterations == 0 || plan.parallelIterations > threads / 2)
    return std::nullopt;
  for (OpOperand &init : op.getDpsInitsMutable()) {
    AffineMap map = op.getMatchingIndexingMap(&init);
    if (!map.isProjectedPermutation() ||
        map.getNumResults() != plan.parallel.size() ||
        !llvm::all_of(map.getResults(), [&](AffineExpr e) {
          return llvm::is_contained(plan.parallel,
                                    cast<AffineDimExpr>(e).getPosition());
        }))
      return std::nullopt;
    // No input or other output may see the output's buffer: the parts
    // read the inputs while the outputs still hold their inits.
    Value root = rootOf(init.get());
    for (OpOperand &other : op->getOpOperands())
      if (&other != &init && isa<BaseMemRefType>(other.get().getType()) &&
          rootOf(other.get()) == root)
        return std::nullopt;
  }
  // The body's loop indices must be its own ops: they are mapped to the
  // new loops' indices as the body is cloned.
  bool nestedIndex = false;
  op.getBlock()->walk([&](linalg::IndexOp index) {
    nestedIndex |= index->getBlock() != op.getBlock();
  });
  // The body is cloned into every part: it must not write memory or call.
  bool effects =
      llvm::any_of(op.getBlock()->without_terminator(), [](Operation &inner) {
        return !isMemoryEffectFree(&inner);
      });
  if (nestedIndex || effects || !accumulatesByAdd(op))
    return std::nullopt;
  plan.reductionBound = 1;
  for (unsigned d : plan.reduction) {
    if (ShapedType::isDynamic(sizes[d]))
      plan.reductionBound = std::nullopt;
    else if (plan.reductionBound)
      plan.reductionBound =
          llvm::checkedMul<int64_t>(*plan.reductionBound, sizes[d]);
  }
  return plan;
}

/// The identity of addition in `type`, a float or a complex type: -0.0
/// (+0.0 would turn a sum of -0.0 into +0.0).
Value zeroOf(OpBuilder &b, Location loc, Type type) {
  auto negativeZero = [&](Type elem) {
    auto floatType = cast<FloatType>(elem);
    return b.getFloatAttr(floatType,
                          APFloat::getZero(floatType.getFloatSemantics(),
                                           /*Negative=*/true));
  };
  if (auto complexType = dyn_cast<ComplexType>(type)) {
    Attribute zero = negativeZero(complexType.getElementType());
    return complex::ConstantOp::create(b, loc, complexType,
                                       b.getArrayAttr({zero, zero}));
  }
  return arith::ConstantOp::create(b, loc, negativeZero(type));
}

/// The indices `map` gives for the loop indices `ivs`.
SmallVector<Value> applyMap(OpBuilder &b, Location loc, AffineMap map,
                            ValueRange ivs) {
  SmallVector<Value> indices;
  for (AffineExpr expr : map.getResults()) {
    if (auto dim = dyn_cast<AffineDimExpr>(expr))
      indices.push_back(ivs[dim.getPosition()]);
    else if (auto constant = dyn_cast<AffineConstantExpr>(expr))
      indices.push_back(
          arith::ConstantIndexOp::create(b, loc, constant.getValue()));
    else
      indices.push_back(affine::AffineApplyOp::create(
          b, loc, AffineMap::get(map.getNumDims(), map.getNumSymbols(), expr),
          ivs));
  }
  return indices;
}

/// One iteration of `op`'s body at the loop indices `ivs`, its outputs'
/// running sums `sums`: the inputs loaded, the body cloned; returns the
/// new sums.
SmallVector<Value> cloneIteration(OpBuilder &b, Location loc,
                                  linalg::LinalgOp op, ValueRange ivs,
                                  ValueRange sums) {
  IRMapping mapping;
  for (OpOperand *in : op.getDpsInputOperands()) {
    BlockArgument arg = op.getMatchingBlockArgument(in);
    if (arg.use_empty())
      continue;
    Value value = in->get();
    if (isa<MemRefType>(value.getType()))
      value = memref::LoadOp::create(
          b, loc, value, applyMap(b, loc, op.getMatchingIndexingMap(in), ivs));
    mapping.map(arg, value);
  }
  for (auto [init, sum] : llvm::zip_equal(op.getDpsInitsMutable(), sums))
    mapping.map(op.getMatchingBlockArgument(&init), sum);
  Block *body = op.getBlock();
  for (Operation &inner : body->without_terminator()) {
    if (auto index = dyn_cast<linalg::IndexOp>(inner)) {
      mapping.map(index.getResult(), ivs[index.getDim()]);
      continue;
    }
    b.clone(inner, mapping);
  }
  SmallVector<Value> next;
  for (Value yielded : body->getTerminator()->getOperands())
    next.push_back(mapping.lookupOrDefault(yielded));
  return next;
}

/// The reduction indices `r` (outermost first, sizes `n`) one iteration
/// on: the last one advances, carrying into the ones before it.
SmallVector<Value> advance(OpBuilder &b, Location loc, ValueRange r,
                           ArrayRef<Value> n) {
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  SmallVector<Value> next(r.size());
  Value carry; // null: the last index, which always advances
  for (int64_t k = static_cast<int64_t>(r.size()) - 1; k >= 0; --k) {
    Value bumped = arith::AddIOp::create(b, loc, r[k], one);
    if (k == 0) {
      next[k] =
          carry ? arith::SelectOp::create(b, loc, carry, bumped, r[k]) : bumped;
      break;
    }
    Value wraps =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, bumped, n[k]);
    if (carry) {
      wraps = arith::AndIOp::create(b, loc, carry, wraps);
      bumped = arith::SelectOp::create(b, loc, carry, bumped, r[k]);
    }
    next[k] = arith::SelectOp::create(b, loc, wraps, zero, bumped);
    carry = wraps;
  }
  return next;
}

/// `acc + value` by the kind of `combiner`, an arith.addf or a complex.add.
Value combine(OpBuilder &b, Location loc, Operation *combiner, Value acc,
              Value value) {
  if (auto add = dyn_cast<arith::AddFOp>(combiner))
    return arith::AddFOp::create(b, loc, acc, value, add.getFastmathAttr());
  auto add = cast<complex::AddOp>(combiner);
  return complex::AddOp::create(b, loc, acc, value, add.getFastmathAttr());
}

/// An element's parts are added directly, by the thread of the element,
/// where they number at most this many times min-terms.
constexpr int64_t kDirectPartsPerTerm = 4;

/// The largest min-terms (kDirectPartsPerTerm times it fits in 64 bits).
constexpr int64_t kMaxMinTerms = int64_t(1) << 32;

/// `op`'s outputs plus the sums of `partials` (one per output, [parts,
/// parallel loops in loop order]) over their parts: a linalg.generic of a
/// reduction loop (the part) and then `op`'s parallel loops, each output
/// indexed as in `op`, each summed by `op`'s combiner.
linalg::GenericOp buildPartsSum(OpBuilder &b, Location loc, linalg::LinalgOp op,
                                const SplitPlan &plan,
                                ArrayRef<Value> partials) {
  MLIRContext *context = b.getContext();
  unsigned rank = plan.parallel.size() + 1;
  SmallVector<AffineMap> maps(partials.size(),
                              AffineMap::getMultiDimIdentityMap(rank, context));
  SmallVector<Value> outputs;
  SmallVector<Operation *> combiners;
  auto yield = cast<linalg::YieldOp>(op.getBlock()->getTerminator());
  for (OpOperand &init : op.getDpsInitsMutable()) {
    SmallVector<AffineExpr> results;
    for (AffineExpr e : op.getMatchingIndexingMap(&init).getResults()) {
      unsigned d = cast<AffineDimExpr>(e).getPosition();
      results.push_back(b.getAffineDimExpr(1 + llvm::find(plan.parallel, d) -
                                           plan.parallel.begin()));
    }
    maps.push_back(AffineMap::get(rank, 0, results, context));
    outputs.push_back(init.get());
    combiners.push_back(
        yield.getOperand(init.getOperandNumber() - op.getNumDpsInputs())
            .getDefiningOp());
  }
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  iterators[0] = utils::IteratorType::reduction;
  return linalg::GenericOp::create(
      b, loc, TypeRange{}, partials, outputs, maps, iterators,
      [&](OpBuilder &nb, Location nl, ValueRange args) {
        SmallVector<Value> sums;
        for (auto [k, combiner] : llvm::enumerate(combiners))
          sums.push_back(
              combine(nb, nl, combiner, args[partials.size() + k], args[k]));
        linalg::YieldOp::create(nb, nl, sums);
      });
}

/// Replaces `op` by the split form of `plan`.
void split(RewriterBase &b, linalg::LinalgOp op, const SplitPlan &plan,
           int64_t threads, int64_t minTerms) {
  Location loc = op.getLoc();
  b.setInsertionPoint(op);
  auto index = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  Value zero = index(0), one = index(1);
  SmallVector<Value> sizes =
      llvm::map_to_vector(op.createLoopRanges(b, loc), [&](const Range &range) {
        return getValueOrCreateConstantIndexOp(b, loc, range.size);
      });

  // R iterations of the reduction loops in parts of c:
  // c = ceil(R / max(min(ceil(threads / P), floor(R / min-terms)), 1)), at
  // least min-terms where R is, and ceil(R / c) parts (none when R = 0).
  Value total = one;
  SmallVector<Value> reductionSizes;
  for (unsigned d : plan.reduction) {
    reductionSizes.push_back(sizes[d]);
    total = arith::MulIOp::create(b, loc, total, sizes[d]);
  }
  Value wanted = arith::MinUIOp::create(
      b, loc, index(llvm::divideCeilSigned(threads, plan.parallelIterations)),
      arith::DivUIOp::create(b, loc, total, index(minTerms)));
  wanted = arith::MaxUIOp::create(b, loc, wanted, one);
  Value chunk = arith::MaxUIOp::create(
      b, loc, arith::CeilDivUIOp::create(b, loc, total, wanted), one);
  Value parts = arith::CeilDivUIOp::create(b, loc, total, chunk);

  // A partial per part and output element, the parallel loops in loop
  // order after the part.
  SmallVector<Operation *> combiners;
  SmallVector<Value> partials;
  auto yield = cast<linalg::YieldOp>(op.getBlock()->getTerminator());
  SmallVector<int64_t> partialShape = {ShapedType::kDynamic};
  llvm::append_range(partialShape, plan.parallelSizes);
  for (OpOperand &init : op.getDpsInitsMutable()) {
    combiners.push_back(
        yield.getOperand(init.getOperandNumber() - op.getNumDpsInputs())
            .getDefiningOp());
    Type elem = getElementTypeOrSelf(init.get().getType());
    partials.push_back(memref::AllocOp::create(
        b, loc, MemRefType::get(partialShape, elem), ValueRange{parts}));
  }
  int64_t outputs = partials.size();

  SmallVector<Value> partLower(plan.parallel.size() + 1, zero);
  SmallVector<Value> partUpper = {parts};
  for (int64_t size : plan.parallelSizes)
    partUpper.push_back(index(size));
  SmallVector<Value> steps(partLower.size(), one);
  scf::ParallelOp::create(
      b, loc, partLower, partUpper, steps,
      [&](OpBuilder &pb, Location pl, ValueRange ivs) {
        Value start = arith::MulIOp::create(pb, pl, ivs[0], chunk);
        Value end = arith::MinUIOp::create(
            pb, pl, arith::AddIOp::create(pb, pl, start, chunk), total);
        // Each output's running sum, from zero.
        SmallVector<Value> iter;
        for (Operation *combiner : combiners)
          iter.push_back(zeroOf(pb, pl, combiner->getResult(0).getType()));
        // The reduction indices of iteration `start`, the last fastest,
        // carried from one iteration to the next (one reduction loop's
        // index is the iteration itself).
        bool carried = plan.reduction.size() > 1;
        if (carried) {
          SmallVector<Value> first(plan.reduction.size());
          Value rest = start;
          for (int64_t k = first.size() - 1; k > 0; --k) {
            first[k] = arith::RemUIOp::create(pb, pl, rest, reductionSizes[k]);
            rest = arith::DivUIOp::create(pb, pl, rest, reductionSizes[k]);
          }
          first[0] = rest;
          llvm::append_range(iter, first);
        }
        auto loop = scf::ForOp::create(
            pb, pl, start, end, one, iter,
            [&](OpBuilder &fb, Location fl, Value j, ValueRange args) {
              ValueRange r = carried ? args.drop_front(outputs) : ValueRange(j);
              SmallVector<Value> loopIvs(sizes.size());
              for (auto [k, d] : llvm::enumerate(plan.parallel))
                loopIvs[d] = ivs[k + 1];
              for (auto [k, d] : llvm::enumerate(plan.reduction))
                loopIvs[d] = r[k];
              SmallVector<Value> next =
                  cloneIteration(fb, fl, op, loopIvs, args.take_front(outputs));
              if (carried)
                llvm::append_range(next, advance(fb, fl, r, reductionSizes));
              scf::YieldOp::create(fb, fl, next);
            });
        for (auto [k, partial] : llvm::enumerate(partials))
          memref::StoreOp::create(pb, pl, loop.getResult(k), partial, ivs);
      });

  // The parts' partials added to the outputs: a thread an element where
  // an element has few parts, otherwise as a reduction of their own, split
  // in turn (a sum onto one element of R terms, say: 65536 parts, then
  // 1024, then 16, then one thread adding 16).
  int64_t partsBound = llvm::divideCeilSigned(threads, plan.parallelIterations);
  if (plan.reductionBound)
    partsBound = std::min(
        partsBound, std::max<int64_t>(*plan.reductionBound / minTerms, 1));
  if (minTerms > 1 && partsBound > kDirectPartsPerTerm * minTerms) {
    linalg::GenericOp sum = buildPartsSum(b, loc, op, plan, partials);
    SplitPlan next;
    next.reduction = {0};
    for (unsigned k = 1; k <= plan.parallelSizes.size(); ++k)
      next.parallel.push_back(k);
    next.parallelSizes = plan.parallelSizes;
    next.parallelIterations = plan.parallelIterations;
    next.reductionBound = partsBound;
    split(b, sum, next, threads, minTerms);
  } else {
    auto addParts = [&](OpBuilder &pb, Location pl, ValueRange ivs) {
      SmallVector<Value> loopIvs(sizes.size(), Value());
      for (auto [k, d] : llvm::enumerate(plan.parallel))
        loopIvs[d] = ivs[k];
      for (auto [k, init] : llvm::enumerate(op.getDpsInitsMutable())) {
        SmallVector<Value> at =
            applyMap(pb, pl, op.getMatchingIndexingMap(&init), loopIvs);
        Value acc = memref::LoadOp::create(pb, pl, init.get(), at);
        Value partial = partials[k];
        Operation *combiner = combiners[k];
        auto loop = scf::ForOp::create(
            pb, pl, zero, parts, one, ValueRange{acc},
            [&](OpBuilder &fb, Location fl, Value s, ValueRange args) {
              SmallVector<Value> from = {s};
              llvm::append_range(from, ivs);
              Value part = memref::LoadOp::create(fb, fl, partial, from);
              scf::YieldOp::create(fb, fl,
                                   combine(fb, fl, combiner, args[0], part));
            });
        memref::StoreOp::create(pb, pl, loop.getResult(0), init.get(), at);
      }
    };
    if (plan.parallel.empty()) {
      addParts(b, loc, {});
    } else {
      SmallVector<Value> outLower(plan.parallel.size(), zero);
      SmallVector<Value> outUpper(partUpper.begin() + 1, partUpper.end());
      SmallVector<Value> outSteps(outLower.size(), one);
      scf::ParallelOp::create(b, loc, outLower, outUpper, outSteps, addParts);
    }
  }
  b.eraseOp(op);
}

struct RecurSplitReductionsPass
    : recur::impl::RecurSplitReductionsBase<RecurSplitReductionsPass> {
  using Base::Base;

  void runOnOperation() override {
    if (minTerms < 1 || minTerms > kMaxMinTerms) {
      getOperation().emitError("recur-split-reductions: min-terms must be "
                               "1 to ")
          << kMaxMinTerms << ", not " << static_cast<int64_t>(minTerms);
      return signalPassFailure();
    }
    SmallVector<std::pair<linalg::LinalgOp, SplitPlan>> work;
    getOperation().walk([&](linalg::LinalgOp op) {
      if (std::optional<SplitPlan> plan = planSplit(op, threads))
        work.emplace_back(op, std::move(*plan));
    });
    IRRewriter rewriter(&getContext());
    for (auto &[op, plan] : work)
      split(rewriter, op, plan, threads, minTerms);
  }
};

} // namespace
