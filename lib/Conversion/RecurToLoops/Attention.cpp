//===- Attention.cpp - reference loops of the recur attention ops ---------===//
//
// Part of the Recur project.
//
// recur.window_attention, recur.attention and recur.rel_attention: one
// query row at a time, a two-pass safe softmax over the keys it sees (the
// largest logit first, then exp(logit - max) and the weighted value rows),
// and a zero row for a query that sees no key.
//
// Where every candidate key is visible (no key padding or memory mask), a
// query's logits are computed once into a row of scratch. For
// window_attention and attention they are accumulated a key channel at a
// time over a transposed copy of the keys (K^T, with the cache in front),
// so that the innermost loop runs over consecutive keys and vectorizes;
// each logit still sums its channels in order, as the scalar dot product
// does, so the results are the same bits.
//
// recur.window_attention_grad, the fused backward, goes by tiles of queries
// over the union of their bands, its products (Q K^T, dY V^T, dY^T P, Q^T
// dS, dS K) in register blocks of vectors over consecutive keys.
//
// The GPU's forms (window-one-pass): window_attention a query a thread in
// one pass over its keys, an online softmax with its sums in registers; and
// window_attention_grad in passes a thread a query (the softmax's
// statistics, dq, its part of a bias's cotangent) and a thread a key row
// (dv, dk), then the bias's cotangent summed over the queries' parts.
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"
#include "Tiles.h"
#include "Utility.h"

#include "Recur/IR/Recur.h"
#include "recur/Conversion/RecurToLoops/RecurToLoops.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"

#include <array>
#include <functional>
#include <limits>
#include <optional>

using namespace mlir;
using namespace mlir::recur;
using namespace mlir::recur::loops;

namespace {

//===----------------------------------------------------------------------===//
// Softmax rows
//===----------------------------------------------------------------------===//

using KeyFn = std::function<Value(OpBuilder &, Location, Value key)>;
using ValueFn =
    std::function<Value(OpBuilder &, Location, Value key, Value column)>;

/// Writes the logits of the candidate keys [begin, end) into entries
/// [0, end - begin) of a row of scratch; returns the row.
using LogitsFn = std::function<Value(OpBuilder &, Location, Value scratch)>;

/// How one query reads its keys.
struct KeyAccess {
  /// The candidate keys are [begin, end).
  Value begin, end;
  /// Whether candidate key r is visible (i1); empty when all of them are.
  KeyFn visible;
  /// The logit of key r: scale * q . k_r plus any bias.
  KeyFn logit;
  /// Optionally, all the logits at once (the same values as `logit`).
  LogitsFn logits;
  /// Column j of key r's value row.
  ValueFn value;
  /// With no `visible`: the scratch row for the logits, `capacity` >= end -
  /// begin entries (a static bound, or a size the op's operands give).
  Value capacity;
};

/// `then()` when `cond` holds, `passthrough` otherwise (an scf.if); just
/// `then()`, built in place, when there is no condition.
SmallVector<Value>
buildIf(OpBuilder &b, Location loc, Value cond, ValueRange passthrough,
        function_ref<SmallVector<Value>(OpBuilder &, Location)> then) {
  if (!cond)
    return then(b, loc);
  auto ifOp = scf::IfOp::create(b, loc, passthrough.getTypes(), cond,
                                /*withElseRegion=*/true);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  scf::YieldOp::create(b, loc, then(b, loc));
  b.setInsertionPointToStart(ifOp.elseBlock());
  scf::YieldOp::create(b, loc, passthrough);
  return SmallVector<Value>(ifOp.getResults());
}

/// The largest logit of the visible keys (-inf when there is none).
Value maxLogit(OpBuilder &b, Location loc, Type elem, const KeyAccess &keys) {
  Value negInf =
      floatConst(b, loc, elem, -std::numeric_limits<double>::infinity());
  return buildLoop(
      b, loc, keys.begin, keys.end, negInf,
      [&](OpBuilder &rb, Location l, ValueRange r, ValueRange max) {
        Value visible = keys.visible ? keys.visible(rb, l, r[0]) : Value();
        return buildIf(rb, l, visible, max, [&](OpBuilder &vb, Location vl) {
          Value logit = keys.logit(vb, vl, r[0]);
          return SmallVector<Value>{
              arith::MaximumFOp::create(vb, vl, max[0], logit)};
        });
      })[0];
}

/// Adds `ws[n] * v_rs[n]` for each n, in order, to row `prefix` of `out`
/// (`dv` columns) in one pass over the row; returns it.
Value addWeightedValues(OpBuilder &b, Location loc, Value out,
                        ValueRange prefix, Value dv, const KeyAccess &keys,
                        ArrayRef<Value> rs, ArrayRef<Value> ws) {
  return updateRow(b, loc, out, prefix, dv,
                   [&](OpBuilder &jb, Location jl, Value j, Value old) {
                     Value sum = old;
                     for (auto [r, w] : llvm::zip(rs, ws)) {
                       Value vr = keys.value(jb, jl, r, j);
                       Value weighted = arith::MulFOp::create(jb, jl, w, vr);
                       sum = arith::AddFOp::create(jb, jl, sum, weighted);
                     }
                     return sum;
                   });
}

/// Adds `w * v_r` to row `prefix` of `out` (`dv` columns); returns it.
Value addWeightedValue(OpBuilder &b, Location loc, Value out, ValueRange prefix,
                       Value dv, const KeyAccess &keys, Value r, Value w) {
  return addWeightedValues(b, loc, out, prefix, dv, keys, {r}, {w});
}

/// Indices (keys or channels) that one pass over a softmax row goes
/// through together: the row is read and written once per four, not once
/// per index (its sums keep their order). Eight measured no faster
/// (docs/performance.md).
constexpr int64_t kIndicesPerPass = 4;

/// buildBlockedLoop by kIndicesPerPass with one carried value.
Value inPasses(
    OpBuilder &b, Location loc, Value n, Value init,
    function_ref<Value(OpBuilder &, Location, ArrayRef<Value>, Value)> pass) {
  return buildBlockedLoop(b, loc, n, kIndicesPerPass, init,
                          [&](OpBuilder &pb, Location pl,
                              ArrayRef<Value> indices, ValueRange iter) {
                            return SmallVector<Value>{
                                pass(pb, pl, indices, iter[0])};
                          })[0];
}

/// `softmax(logits) V` over the keys [begin, end), all visible, into row
/// `prefix` of `out` (zeroed): the logits once into scratch, their max, the
/// weights exp(logit - max) in place of the logits and their sum, then the
/// weighted value rows. Returns (out, sum of the weights).
SmallVector<Value> attendRowAllVisible(OpBuilder &b, Location loc, Value out,
                                       ValueRange prefix, Value dv,
                                       const KeyAccess &keys) {
  Type elem = cast<RankedTensorType>(out.getType()).getElementType();
  Value zero = indexConst(b, loc, 0);
  Value count = arith::SubIOp::create(b, loc, keys.end, keys.begin);
  auto rowType = RankedTensorType::get({ShapedType::kDynamic}, elem);
  Value row = privateScratch(b, loc, rowType, {keys.capacity});
  auto key = [&](OpBuilder &kb, Location kl, Value i) -> Value {
    return arith::AddIOp::create(kb, kl, keys.begin, i);
  };
  if (keys.logits) {
    row = keys.logits(b, loc, row);
  } else {
    row = fillRow(b, loc, row, {}, count,
                  [&](OpBuilder &kb, Location kl, Value i) {
                    return keys.logit(kb, kl, key(kb, kl, i));
                  });
  }
  Value negInf =
      floatConst(b, loc, elem, -std::numeric_limits<double>::infinity());
  Value max =
      buildLoop(b, loc, zero, count, negInf,
                [&](OpBuilder &rb, Location l, ValueRange i, ValueRange acc) {
                  Value logit = extractAt(rb, l, row, i);
                  return SmallVector<Value>{
                      arith::MaximumFOp::create(rb, l, acc[0], logit)};
                })[0];
  SmallVector<Value> weights = buildLoop(
      b, loc, zero, count, ValueRange{row, zeroOf(b, loc, elem)},
      [&](OpBuilder &rb, Location l, ValueRange i, ValueRange iter) {
        Value shifted =
            arith::SubFOp::create(rb, l, extractAt(rb, l, iter[0], i), max);
        Value w = math::ExpOp::create(rb, l, shifted);
        // The sum of the weights may be reassociated: the loop then
        // vectorizes, exp included (librecur_rt's vector forms on AVX2).
        Value sum = arith::AddFOp::create(rb, l, iter[1], w,
                                          arith::FastMathFlags::reassoc);
        return SmallVector<Value>{insertAt(rb, l, w, iter[0], i), sum};
      });
  Value weighted =
      inPasses(b, loc, count, out,
               [&](OpBuilder &rb, Location l, ArrayRef<Value> is, Value acc) {
                 SmallVector<Value> rs, ws;
                 for (Value i : is) {
                   rs.push_back(key(rb, l, i));
                   ws.push_back(extractAt(rb, l, weights[0], i));
                 }
                 return addWeightedValues(rb, l, acc, prefix, dv, keys, rs, ws);
               });
  return {weighted, weights[1]};
}

/// The softmax row of attendRow over keys some of which may be hidden: the
/// largest visible logit, then exp(logit - max) of each visible key (its
/// logit computed again) summed and times its value row. Returns (out, sum
/// of the weights).
SmallVector<Value> visibleKeysRow(OpBuilder &b, Location loc, Value out,
                                  ValueRange prefix, Value dv,
                                  const KeyAccess &keys) {
  Type elem = cast<RankedTensorType>(out.getType()).getElementType();
  Value zeroF = zeroOf(b, loc, elem);

  // Pass 1: the largest logit, so that no exp below exceeds 1.
  Value max = maxLogit(b, loc, elem, keys);

  // Pass 2: w_r = exp(logit_r - max), sum_r w_r and sum_r w_r v_r.
  return buildLoop(
      b, loc, keys.begin, keys.end, ValueRange{out, zeroF},
      [&](OpBuilder &rb, Location l, ValueRange r, ValueRange iter) {
        Value visible = keys.visible ? keys.visible(rb, l, r[0]) : Value();
        return buildIf(rb, l, visible, iter, [&](OpBuilder &vb, Location vl) {
          Value shifted =
              arith::SubFOp::create(vb, vl, keys.logit(vb, vl, r[0]), max);
          Value w = math::ExpOp::create(vb, vl, shifted);
          Value sum = arith::AddFOp::create(vb, vl, iter[1], w);
          Value row =
              addWeightedValue(vb, vl, iter[0], prefix, dv, keys, r[0], w);
          return SmallVector<Value>{row, sum};
        });
      });
}

/// Writes `softmax(logits) V` over the visible keys into row `prefix` of
/// `out` (`dv` columns); the row stays zero when no key is visible.
Value attendRow(OpBuilder &b, Location loc, Value out, ValueRange prefix,
                Value dv, const KeyAccess &keys) {
  Type elem = cast<RankedTensorType>(out.getType()).getElementType();
  Value zeroF = zeroOf(b, loc, elem);
  out = fillRow(b, loc, out, prefix, dv,
                [&](OpBuilder &, Location, Value) { return zeroF; });
  SmallVector<Value> acc =
      keys.visible ? visibleKeysRow(b, loc, out, prefix, dv, keys)
                   : attendRowAllVisible(b, loc, out, prefix, dv, keys);

  // The sum is at least 1 (the largest logit's term) when any key is
  // visible, and 0 when none is.
  Value seen =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, acc[1], zeroF);
  return buildIf(b, loc, seen, acc[0], [&](OpBuilder &nb, Location l) {
    return SmallVector<Value>{
        updateRow(nb, l, acc[0], prefix, dv,
                  [&](OpBuilder &jb, Location jl, Value, Value old) {
                    return arith::DivFOp::create(jb, jl, old, acc[1]);
                  })};
  })[0];
}

//===----------------------------------------------------------------------===//
// recur.window_attention
//===----------------------------------------------------------------------===//

/// The keys query position `p` sees, as a range [begin, end) of key indices
/// r, key r sitting at position r - C (the C cache entries come first):
///   token band: 1 <= p - pos <= window (0 <= p - pos <= window - 1 with
///               include_self);
///   block band: pos >= (p / block) * block - window (the query's block and
///               the window / block blocks before it; blocks start at
///               position 0 and continue into the cache), p - pos >= 1
///               (>= 0 with include_self).
std::pair<Value, Value> windowKeyRange(OpBuilder &b, Location loc, Value p,
                                       Value cacheLen, int64_t window,
                                       int64_t block, bool includeSelf) {
  int64_t minDelta = includeSelf ? 0 : 1;
  Value first;
  if (block == 0) {
    int64_t maxDelta = includeSelf ? window - 1 : window;
    first = arith::SubIOp::create(b, loc, p, indexConst(b, loc, maxDelta));
  } else {
    Value blockLen = indexConst(b, loc, block);
    Value blockStart = arith::MulIOp::create(
        b, loc, arith::DivUIOp::create(b, loc, p, blockLen), blockLen);
    first =
        arith::SubIOp::create(b, loc, blockStart, indexConst(b, loc, window));
  }
  Value last = arith::SubIOp::create(b, loc, p, indexConst(b, loc, minDelta));
  Value begin = arith::MaxSIOp::create(
      b, loc, arith::AddIOp::create(b, loc, first, cacheLen),
      indexConst(b, loc, 0));
  Value end = arith::AddIOp::create(
      b, loc, arith::AddIOp::create(b, loc, last, cacheLen),
      indexConst(b, loc, 1));
  return {begin, end};
}

/// Element `e` of row `r` of the keys (or values) preceded by the cache:
/// `cache[lead, r, e]` for r < C, `seq[lead, r - C, e]` after it.
Value readAfterCache(OpBuilder &b, Location loc, Value cache, Value seq,
                     ValueRange lead, Value cacheLen, Value r, Value e) {
  if (!cache)
    return extractAt(b, loc, seq, concatIndices(lead, ValueRange{r, e}));
  Value inCache =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, r, cacheLen);
  auto ifOp = scf::IfOp::create(
      b, loc, inCache,
      [&](OpBuilder &tb, Location l) {
        scf::YieldOp::create(
            tb, l, extractAt(tb, l, cache, concatIndices(lead, {r, e})));
      },
      [&](OpBuilder &eb, Location l) {
        Value pos = arith::SubIOp::create(eb, l, r, cacheLen);
        scf::YieldOp::create(
            eb, l, extractAt(eb, l, seq, concatIndices(lead, {pos, e})));
      });
  return ifOp.getResult(0);
}

/// The rows of `cache` (C of them, when given) followed by those of `seq`
/// (`[lead..., T, e]`), as one tensor `[lead..., C + T, e]`, or transposed,
/// `[lead..., e, C + T]` (keys laid out for a loop over consecutive keys).
Value rowsAfterCache(OpBuilder &b, Location loc, Value cache, Value seq,
                     Value cacheLen, bool transposed) {
  auto type = cast<RankedTensorType>(seq.getType());
  int64_t rank = type.getRank();
  SmallVector<Value> sizes = dimSizes(b, loc, seq);
  Value width = sizes[rank - 1];
  Value rows = arith::AddIOp::create(b, loc, cacheLen, sizes[rank - 2]);
  int64_t staticRows = type.getDimSize(rank - 2);
  if (cache) {
    int64_t c = cast<RankedTensorType>(cache.getType()).getDimSize(rank - 2);
    staticRows = ShapedType::isDynamic(c) || ShapedType::isDynamic(staticRows)
                     ? ShapedType::kDynamic
                     : staticRows + c;
  }
  SmallVector<int64_t> shape(type.getShape().drop_back(2));
  SmallVector<Value> outSizes(ArrayRef<Value>(sizes).drop_back(2));
  int64_t staticWidth = type.getDimSize(rank - 1);
  if (transposed) {
    llvm::append_range(shape, ArrayRef<int64_t>{staticWidth, staticRows});
    llvm::append_range(outSizes, ValueRange{width, rows});
  } else {
    llvm::append_range(shape, ArrayRef<int64_t>{staticRows, staticWidth});
    llvm::append_range(outSizes, ValueRange{rows, width});
  }
  auto outType = RankedTensorType::get(shape, type.getElementType());
  Value out = emptyLike(b, loc, outType, outSizes);
  SmallVector<Value> ubs(ArrayRef<Value>(sizes).drop_back(2));
  ubs.push_back(rows);
  return buildNest(
      b, loc, ubs, out,
      [&](OpBuilder &nb, Location l, ValueRange ivs, ValueRange args) {
        ValueRange lead = ivs.drop_back();
        Value r = ivs.back();
        Value zero = indexConst(nb, l, 0);
        return buildLoop(
            nb, l, zero, width, args[0],
            [&](OpBuilder &eb, Location el, ValueRange e, ValueRange iter) {
              Value x =
                  readAfterCache(eb, el, cache, seq, lead, cacheLen, r, e[0]);
              SmallVector<Value> at = concatIndices(
                  lead, transposed ? ValueRange{e[0], r} : ValueRange{r, e[0]});
              return SmallVector<Value>{insertAt(eb, el, x, iter[0], at)};
            });
      })[0];
}

/// The logits `scale * (q . k_r) (+ bias(r))` of the keys [begin, end) of
/// `kT` (`[lead..., d, keys]`) into entries [0, end - begin) of `row`: the
/// dot products accumulate a channel e at a time over all the keys (each in
/// the order e = 0, 1, ..., as dotProduct sums, kIndicesPerPass channels a
/// pass over the row), then scale and bias.
Value logitsOverTransposedKeys(OpBuilder &b, Location loc, Value row, Value kT,
                               ValueRange lead, Value d, IndexFn query,
                               Value scale, Value begin, Value end,
                               const KeyFn &bias) {
  Type elem = cast<RankedTensorType>(row.getType()).getElementType();
  Value count = arith::SubIOp::create(b, loc, end, begin);
  Value zeroF = zeroOf(b, loc, elem);
  row = fillRow(b, loc, row, {}, count,
                [&](OpBuilder &, Location, Value) { return zeroF; });
  // One pass over the row adds the products of `channels`, in order.
  auto pass = [&](OpBuilder &eb, Location el, Value rowIn,
                  ArrayRef<Value> channels) {
    SmallVector<Value> qs;
    for (Value e : channels)
      qs.push_back(query(eb, el, e));
    return updateRow(eb, el, rowIn, {}, count,
                     [&](OpBuilder &kb, Location kl, Value i, Value old) {
                       Value r = arith::AddIOp::create(kb, kl, begin, i);
                       Value dot = old;
                       for (auto [e, qe] : llvm::zip(channels, qs)) {
                         Value k = extractAt(
                             kb, kl, kT, concatIndices(lead, ValueRange{e, r}));
                         dot = arith::AddFOp::create(
                             kb, kl, dot, arith::MulFOp::create(kb, kl, qe, k));
                       }
                       return dot;
                     });
  };
  row = inPasses(b, loc, d, row,
                 [&](OpBuilder &eb, Location el, ArrayRef<Value> channels,
                     Value rowIn) { return pass(eb, el, rowIn, channels); });
  return updateRow(
      b, loc, row, {}, count,
      [&](OpBuilder &kb, Location kl, Value i, Value dot) -> Value {
        Value logit = arith::MulFOp::create(kb, kl, scale, dot);
        if (!bias)
          return logit;
        Value r = arith::AddIOp::create(kb, kl, begin, i);
        return arith::AddFOp::create(kb, kl, logit, bias(kb, kl, r));
      });
}

/// The position bias of `delta` for head `head`: t5 reads the bias table at
/// the delta's bucket, alibi gives -slope * delta.
template <typename OpT>
Value positionBias(OpBuilder &b, Location loc, OpT op, Value head,
                   Value delta) {
  Value bias = op.getBias();
  switch (op.getBiasKind()) {
  case BiasKind::None:
    return Value();
  case BiasKind::T5: {
    int64_t buckets = op.getNumBuckets() ? op.getNumBucketsAttr().getInt() : 32;
    int64_t maxDistance =
        op.getMaxDistance() ? op.getMaxDistanceAttr().getInt() : 128;
    Value bucket = buildT5Bucket(b, loc, delta, buckets, maxDistance);
    return extractAt(b, loc, bias, {head, bucket});
  }
  case BiasKind::Alibi: {
    Value slope = extractAt(b, loc, bias, {head});
    Value negSlope = arith::NegFOp::create(b, loc, slope);
    return arith::MulFOp::create(b, loc, negSlope,
                                 indexToFloat(b, loc, delta, slope.getType()));
  }
  }
  llvm_unreachable("unknown bias kind");
}

/// The position bias of key row `r` for query position `p` of the leading
/// index `lead`: delta = p - (r - C), the heads the dimension before T.
template <typename OpT>
Value windowBias(OpBuilder &b, Location loc, OpT op, ValueRange lead, Value p,
                 Value cacheLen, Value r) {
  Value delta = arith::SubIOp::create(
      b, loc, arith::AddIOp::create(b, loc, p, cacheLen), r);
  return positionBias(b, loc, op, lead.back(), delta);
}

struct WindowAttentionToLoops : OpRewritePattern<WindowAttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(WindowAttentionOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto outType = cast<RankedTensorType>(op.getType());
    Type elem = outType.getElementType();
    int64_t rank = outType.getRank();
    SmallVector<Value> qSizes = dimSizes(rewriter, loc, op.getQ());
    SmallVector<Value> vSizes = dimSizes(rewriter, loc, op.getV());
    Value d = qSizes[rank - 1], dv = vSizes[rank - 1];
    Value cacheLen = op.getKCache()
                         ? dimSize(rewriter, loc, op.getKCache(), rank - 2)
                         : indexConst(rewriter, loc, 0);
    Value scale = attentionScale(rewriter, loc, elem, op.getScale(), d);
    Value out = emptyLike(rewriter, loc, outType, vSizes);
    // The keys transposed and the values, each after its cache.
    Value kT = rowsAfterCache(rewriter, loc, op.getKCache(), op.getK(),
                              cacheLen, /*transposed=*/true);
    Value values =
        op.getVCache()
            ? rowsAfterCache(rewriter, loc, op.getVCache(), op.getV(), cacheLen,
                             /*transposed=*/false)
            : op.getV();
    // A query sees at most window + block keys.
    Value capacity = indexConst(rewriter, loc,
                                op.getWindowAttr().getInt() +
                                    op.getBlockAttr().getInt() + 1);

    // One query row per (leading index, position p).
    SmallVector<Value> results = buildNest(
        rewriter, loc, ArrayRef<Value>(qSizes).drop_back(), out,
        [&](OpBuilder &b, Location l, ValueRange ivs, ValueRange args) {
          ValueRange lead = ivs.drop_back();
          Value p = ivs.back();
          KeyAccess keys;
          std::tie(keys.begin, keys.end) =
              windowKeyRange(b, l, p, cacheLen, op.getWindowAttr().getInt(),
                             op.getBlockAttr().getInt(), op.getIncludeSelf());
          KeyFn bias;
          if (op.getBiasKind() != BiasKind::None)
            bias = [&](OpBuilder &kb, Location kl, Value r) {
              return windowBias(kb, kl, op, lead, p, cacheLen, r);
            };
          keys.logits = [&](OpBuilder &kb, Location kl, Value row) {
            return logitsOverTransposedKeys(
                kb, kl, row, kT, lead, d,
                [&](OpBuilder &eb, Location el, Value e) {
                  return extractAt(eb, el, op.getQ(),
                                   concatIndices(lead, ValueRange{p, e}));
                },
                scale, keys.begin, keys.end, bias);
          };
          keys.capacity = capacity;
          keys.value = [&](OpBuilder &vb, Location vl, Value r, Value j) {
            return extractAt(vb, vl, values,
                             concatIndices(lead, ValueRange{r, j}));
          };
          return SmallVector<Value>{attendRow(b, l, args[0], ivs, dv, keys)};
        });
    rewriter.replaceOp(op, results);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// recur.window_attention and recur.window_attention_grad in one pass
//===----------------------------------------------------------------------===//

/// The most values the loops of the one-pass forms carry from step to step
/// in 32-bit registers: the forward's query and output row (d + dv), the
/// backward's query or key row, its cotangent sums and the output cotangent
/// or value row (2 d + dv), an f64 value two registers. At the benchmark's
/// f32 heads of 64 and 64, 128 and 192 of the 255 registers a GPU thread
/// may have; the row a step reads comes on top (ptxas: the forward 167
/// registers, no spills; two backward kernels spill 128 and 152 bytes, the
/// cost of not falling back to the fused tiles, a thread per leading
/// index).
constexpr int64_t kOnePassMaxRegisters = 160;
constexpr int64_t kOnePassGradMaxRegisters = 192;
/// Threads that walk the union of their ranges together: kOnePassGroup
/// consecutive positions, aligned (a warp, where the launch's flattened
/// index is a multiple of 32 at each group's start: T a multiple of 32 for
/// the queries, C + T for the key rows), where a query may see
/// kOnePassGroupMinKeys keys or more: every thread of the warp then reads
/// the same row at once.
constexpr int64_t kOnePassGroup = 32;
constexpr int64_t kOnePassGroupMinKeys = 128;
/// Query positions the one-pass backward's bias cotangent sums together
/// first, a thread per run (then a thread per head and bucket sums the
/// runs).
constexpr int64_t kBiasGradRun = 64;

/// A nest of loops one after another (not independent: `body` may
/// accumulate into what it carries) from 0 to each of `ubs`.
SmallVector<Value> buildSerialNest(OpBuilder &b, Location loc, ValueRange ubs,
                                   ValueRange iterArgs, LoopBody body,
                                   SmallVector<Value> ivs = {}) {
  if (ubs.empty())
    return body(b, loc, ivs, iterArgs);
  return buildLoop(
      b, loc, indexConst(b, loc, 0), ubs.front(), iterArgs,
      [&](OpBuilder &nb, Location l, ValueRange iv, ValueRange args) {
        SmallVector<Value> inner(ivs);
        inner.push_back(iv[0]);
        return buildSerialNest(nb, l, ubs.drop_front(), args, body, inner);
      });
}

/// The `n` elements of row `row` of `tensor` (`[lead..., rows, n]`).
SmallVector<Value> rowOf(OpBuilder &b, Location l, Value tensor,
                         ValueRange lead, Value row, int64_t n) {
  SmallVector<Value> xs;
  for (int64_t e = 0; e < n; ++e)
    xs.push_back(
        extractAt(b, l, tensor,
                  concatIndices(lead, ValueRange{row, indexConst(b, l, e)})));
  return xs;
}

/// `tensor` with `xs` written as row `row` (`[lead..., rows, n]`).
Value insertRow(OpBuilder &b, Location l, ArrayRef<Value> xs, Value tensor,
                ValueRange lead, Value row) {
  for (auto [e, x] : llvm::enumerate(xs))
    tensor =
        insertAt(b, l, x, tensor,
                 concatIndices(lead, ValueRange{row, indexConst(b, l, e)}));
  return tensor;
}

/// sum_e x[e] y[e] (at least one term), in increasing e.
Value dotOf(OpBuilder &b, Location l, ArrayRef<Value> x, ArrayRef<Value> y) {
  Value sum = arith::MulFOp::create(b, l, x[0], y[0]);
  for (auto [xe, ye] : llvm::drop_begin(llvm::zip(x, y)))
    sum = arith::AddFOp::create(b, l, sum, arith::MulFOp::create(b, l, xe, ye));
  return sum;
}

/// sum * rescale + weight * term.
Value rescaled(OpBuilder &b, Location l, Value sum, Value rescale, Value weight,
               Value term) {
  return arith::AddFOp::create(b, l, arith::MulFOp::create(b, l, sum, rescale),
                               arith::MulFOp::create(b, l, weight, term));
}

/// What the one-pass forms of window_attention and window_attention_grad
/// share: sizes, attributes, the keys and values after their caches, the
/// ranges a thread walks, the logits and the online softmax's step.
struct OnePassWindow {
  template <typename OpT>
  OnePassWindow(OpBuilder &b, Location loc, OpT op)
      : elem(cast<RankedTensorType>(op.getQ().getType()).getElementType()),
        window(op.getWindowAttr().getInt()), block(op.getBlockAttr().getInt()),
        includeSelf(op.getIncludeSelf()) {
    // The most keys a query sees: the window (token band), or its block's
    // last query's (block band).
    int64_t maxKeys =
        block == 0 ? window : window + block - (includeSelf ? 0 : 1);
    grouped = maxKeys >= kOnePassGroupMinKeys;
    int64_t rank = cast<RankedTensorType>(op.getQ().getType()).getRank();
    qSizes = dimSizes(b, loc, op.getQ());
    vSizes = dimSizes(b, loc, op.getV());
    steps = qSizes[rank - 2];
    cacheLen = op.getKCache() ? dimSize(b, loc, op.getKCache(), rank - 2)
                              : indexConst(b, loc, 0);
    keyRows = arith::AddIOp::create(b, loc, cacheLen, steps);
    scale = attentionScale(b, loc, elem, op.getScale(), qSizes[rank - 1]);
    keys = op.getKCache() ? rowsAfterCache(b, loc, op.getKCache(), op.getK(),
                                           cacheLen, /*transposed=*/false)
                          : op.getK();
    values = op.getVCache() ? rowsAfterCache(b, loc, op.getVCache(), op.getV(),
                                             cacheLen, /*transposed=*/false)
                            : op.getV();
  }

  /// The positions a thread walks, [from, to), and its own, [begin, end):
  /// its own, or with `grouped` the union of the ranges of the
  /// kOnePassGroup positions of its aligned group (`range` nondecreasing in
  /// the position at both ends), cut at `limit` where given (`range` of
  /// positions past the last may end past it).
  struct Walk {
    Value from, to, begin, end;
  };
  Walk walk(OpBuilder &b, Location l, Value pos, Value limit,
            function_ref<std::pair<Value, Value>(OpBuilder &, Location, Value)>
                range) const {
    Walk w;
    std::tie(w.begin, w.end) = range(b, l, pos);
    w.from = w.begin;
    w.to = w.end;
    if (grouped) {
      Value group = indexConst(b, l, kOnePassGroup);
      Value first = arith::SubIOp::create(
          b, l, pos, arith::RemUIOp::create(b, l, pos, group));
      Value last = arith::AddIOp::create(b, l, first,
                                         indexConst(b, l, kOnePassGroup - 1));
      w.from = range(b, l, first).first;
      w.to = range(b, l, last).second;
      if (limit)
        w.to = arith::MinSIOp::create(b, l, w.to, limit);
    }
    return w;
  }

  /// The keys query position `p` walks (windowKeyRange).
  Walk keysOf(OpBuilder &b, Location l, Value p) const {
    return walk(b, l, p, keyRows, [&](OpBuilder &rb, Location rl, Value q) {
      return windowKeyRange(rb, rl, q, cacheLen, window, block, includeSelf);
    });
  }

  /// The queries that see key row `r` (its position r - C), as the range
  /// [first, end) of positions p whose windowKeyRange holds r: p - (r - C)
  /// at least the least delta (0 with include_self, else 1), and at most
  /// the largest one (token band) or the query's block starting at most
  /// `window` after the key (block band); within [0, T).
  std::pair<Value, Value> queryRange(OpBuilder &b, Location l, Value r) const {
    Value pos = arith::SubIOp::create(b, l, r, cacheLen);
    Value zero = indexConst(b, l, 0);
    Value first = arith::MaxSIOp::create(
        b, l,
        arith::AddIOp::create(b, l, pos, indexConst(b, l, includeSelf ? 0 : 1)),
        zero);
    Value end;
    if (block == 0) {
      end = arith::AddIOp::create(
          b, l, pos, indexConst(b, l, includeSelf ? window : window + 1));
    } else {
      Value blockLen = indexConst(b, l, block);
      Value lastBlock = arith::FloorDivSIOp::create(
          b, l, arith::AddIOp::create(b, l, pos, indexConst(b, l, window)),
          blockLen);
      end = arith::MulIOp::create(
          b, l, arith::AddIOp::create(b, l, lastBlock, indexConst(b, l, 1)),
          blockLen);
    }
    end = arith::MaxSIOp::create(b, l, arith::MinSIOp::create(b, l, end, steps),
                                 zero);
    return {first, end};
  }

  /// The queries key row `r` walks (queryRange, already within [0, T)).
  Walk queriesOf(OpBuilder &b, Location l, Value r) const {
    return walk(b, l, r, Value(), [&](OpBuilder &rb, Location rl, Value k) {
      return queryRange(rb, rl, k);
    });
  }

  /// Whether `i` lies in a walk's own range (null when not grouped: then
  /// it always does).
  Value inOwnRange(OpBuilder &b, Location l, const Walk &w, Value i) const {
    if (!grouped)
      return Value();
    return arith::AndIOp::create(
        b, l,
        arith::CmpIOp::create(b, l, arith::CmpIPredicate::sge, i, w.begin),
        arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, i, w.end));
  }

  /// scale (q . k) of the query channels `qs` and the key channels `ks`.
  Value logit(OpBuilder &b, Location l, ArrayRef<Value> qs,
              ArrayRef<Value> ks) const {
    return arith::MulFOp::create(b, l, scale, dotOf(b, l, qs, ks));
  }

  /// One key of logit `s` in the online softmax of running largest logit
  /// `m`: (rescale, weight, next m). exp(-|s - m|) rescales the sums when s
  /// > m (the key's weight then 1) and is the key's weight otherwise: one
  /// exp a key. A key outside the thread's own range (`visible` false), or
  /// of logit -inf (a weight of 0, as exp(s - max) gives it), rescales
  /// nothing, weighs nothing and leaves m; a NaN logit counts, so that it
  /// shows in the row.
  std::array<Value, 3> onlineStep(OpBuilder &b, Location l, Value s, Value m,
                                  Value visible) const {
    Value zeroF = zeroOf(b, l, elem);
    Value oneF = floatConst(b, l, elem, 1.0);
    Value delta = arith::SubFOp::create(b, l, s, m);
    Value rising =
        arith::CmpFOp::create(b, l, arith::CmpFPredicate::OGT, delta, zeroF);
    Value decay = math::ExpOp::create(
        b, l, arith::NegFOp::create(b, l, math::AbsFOp::create(b, l, delta)));
    Value rescale = arith::SelectOp::create(b, l, rising, decay, oneF);
    Value weight = arith::SelectOp::create(b, l, rising, oneF, decay);
    Value mNext = arith::MaximumFOp::create(b, l, m, s);
    Value counts = arith::CmpFOp::create(
        b, l, arith::CmpFPredicate::UNE, s,
        floatConst(b, l, elem, -std::numeric_limits<double>::infinity()));
    if (visible)
      counts = arith::AndIOp::create(b, l, counts, visible);
    rescale = arith::SelectOp::create(b, l, counts, rescale, oneF);
    weight = arith::SelectOp::create(b, l, counts, weight, zeroF);
    mNext = arith::SelectOp::create(b, l, counts, mNext, m);
    return {rescale, weight, mNext};
  }

  Type elem;
  int64_t window, block;
  bool includeSelf, grouped;
  SmallVector<Value> qSizes, vSizes;
  Value steps, cacheLen, keyRows, scale, keys, values;
};

/// `op`'s query and value channels (d, dv), if they are static, at least
/// 1, and `perQuery` d + dv values in 32-bit registers are at most `limit`
/// (a match failure otherwise).
template <typename OpT>
FailureOr<std::pair<int64_t, int64_t>>
onePassChannels(PatternRewriter &rewriter, OpT op, int64_t perQuery,
                int64_t limit) {
  auto qType = cast<RankedTensorType>(op.getQ().getType());
  auto vType = cast<RankedTensorType>(op.getV().getType());
  int64_t d = qType.getShape().back(), dv = vType.getShape().back();
  int64_t registers =
      qType.getElementType().getIntOrFloatBitWidth() <= 32 ? 1 : 2;
  if (ShapedType::isDynamic(d) || ShapedType::isDynamic(dv) || d < 1 ||
      dv < 1 || (perQuery * d + dv) * registers > limit)
    return rewriter.notifyMatchFailure(
        op, "channels not static, or too many to keep in registers");
  return std::make_pair(d, dv);
}

/// recur.window_attention in one pass over each query's keys (the GPU's
/// form, `window-one-pass`): a query a thread, its d query channels, the
/// running largest logit m, the running sum of weights l and its dv output
/// channels carried in registers from key to key (an online softmax,
/// OnePassWindow::onlineStep), the row written once at the end, times 1 /
/// l. Where a query may see kOnePassGroupMinKeys keys or more, the
/// kOnePassGroup queries of an aligned group each walk the union of their
/// ranges and skip the keys outside their own, so that neighbouring threads
/// read the same rows. Sums are reassociated against the row form, so
/// results agree with it to rounding. Channels that are not static, or
/// more than kOnePassMaxRegisters, leave the op to WindowAttentionToLoops.
struct WindowAttentionOnePassToLoops : OpRewritePattern<WindowAttentionOp> {
  explicit WindowAttentionOnePassToLoops(MLIRContext *context)
      : OpRewritePattern(context, /*benefit=*/2) {}

  LogicalResult matchAndRewrite(WindowAttentionOp op,
                                PatternRewriter &rewriter) const override {
    auto channels = onePassChannels(rewriter, op, 1, kOnePassMaxRegisters);
    if (failed(channels))
      return failure();
    int64_t d = channels->first, dv = channels->second;
    Location loc = op.getLoc();
    OnePassWindow w(rewriter, loc, op);
    Type elem = w.elem;
    Value out = emptyLike(rewriter, loc, cast<RankedTensorType>(op.getType()),
                          w.vSizes);

    SmallVector<Value> results = buildNest(
        rewriter, loc, ArrayRef<Value>(w.qSizes).drop_back(), out,
        [&](OpBuilder &b, Location l, ValueRange ivs, ValueRange args) {
          ValueRange lead = ivs.drop_back();
          Value p = ivs.back();
          OnePassWindow::Walk keyWalk = w.keysOf(b, l, p);
          SmallVector<Value> qs = rowOf(b, l, op.getQ(), lead, p, d);
          Value zeroF = zeroOf(b, l, elem);
          Value oneF = floatConst(b, l, elem, 1.0);
          SmallVector<Value> init = {
              floatConst(b, l, elem, -std::numeric_limits<double>::infinity()),
              zeroF};
          init.append(dv, zeroF);
          SmallVector<Value> sums = buildLoop(
              b, l, keyWalk.from, keyWalk.to, init,
              [&](OpBuilder &kb, Location kl, ValueRange r, ValueRange iter) {
                Value s =
                    w.logit(kb, kl, qs, rowOf(kb, kl, w.keys, lead, r[0], d));
                if (op.getBiasKind() != BiasKind::None)
                  s = arith::AddFOp::create(
                      kb, kl, s,
                      windowBias(kb, kl, op, lead, p, w.cacheLen, r[0]));
                auto [rescale, weight, mNext] = w.onlineStep(
                    kb, kl, s, iter[0], w.inOwnRange(kb, kl, keyWalk, r[0]));
                SmallVector<Value> next = {
                    mNext, rescaled(kb, kl, iter[1], rescale, weight, oneF)};
                SmallVector<Value> vs = rowOf(kb, kl, w.values, lead, r[0], dv);
                for (int64_t j = 0; j < dv; ++j)
                  next.push_back(
                      rescaled(kb, kl, iter[2 + j], rescale, weight, vs[j]));
                return next;
              });
          // The sum of the weights is at least 1 (the largest logit's) when
          // any key counted; the row stays zero when none did.
          Value seen = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OGT,
                                             sums[1], zeroF);
          Value invL = arith::SelectOp::create(
              b, l, seen, arith::DivFOp::create(b, l, oneF, sums[1]), zeroF);
          SmallVector<Value> row;
          for (int64_t j = 0; j < dv; ++j)
            row.push_back(arith::MulFOp::create(b, l, sums[2 + j], invL));
          return SmallVector<Value>{insertRow(b, l, row, args[0], lead, p)};
        });
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// `buf` ([16, 16]) = A B for A ([16, depth], split) and B ([depth, 16],
/// split) by the warp's tiles.
Value squareProduct(OpBuilder &b, Location l, tiles::Split a, tiles::Split bm,
                    int64_t depth, Value buf) {
  using namespace tiles;
  return overTiles(
      b, l, kTile, kTile, buf,
      [&](OpBuilder &tb, Location tl, Value row, Value col, Value into) {
        Value zero = indexConst(tb, tl, 0);
        return writeTile(tb, tl,
                         multiplyTiles(tb, tl, a, row, zero, bm, zero, col,
                                       depth, zeroTile(tb, tl)),
                         into, row, col);
      });
}

/// The channels (d, dv) of a window attention (or its grad) that its tile
/// forms take: q and v f32, d and dv static multiples of 16.
template <typename OpT>
std::optional<std::pair<int64_t, int64_t>> tileChannels(OpT op) {
  auto qType = cast<RankedTensorType>(op.getQ().getType());
  auto vType = cast<RankedTensorType>(op.getV().getType());
  int64_t d = qType.getShape().back(), dv = vType.getShape().back();
  if (!qType.getElementType().isF32() || !vType.getElementType().isF32() ||
      ShapedType::isDynamic(d) || ShapedType::isDynamic(dv) ||
      d % tiles::kTile != 0 || dv % tiles::kTile != 0 || d == 0 || dv == 0)
    return std::nullopt;
  return std::make_pair(d, dv);
}

/// What window attention's tile forms (window-warp-tiles: the forward,
/// WindowAttentionWarpTilesToLoops, and the grad,
/// WindowAttentionGradWarpTilesToLoops) share: the band (OnePassWindow),
/// the key rows and the queries that a tile of 16 meets, and the logits of
/// a tile's pairs.
template <typename OpT> struct WindowTileBand {
  WindowTileBand(OpBuilder &b, Location l, OpT op) : op(op), w(b, l, op) {}

  /// The key rows query position `p` sees, [begin, end) (windowKeyRange).
  std::pair<Value, Value> keyRange(OpBuilder &b, Location l, Value p) const {
    return windowKeyRange(b, l, p, w.cacheLen, w.window, w.block,
                          w.includeSelf);
  }

  /// Rows [from, to) and their tiles of 16 (none when to <= from).
  struct Span {
    Value from, to, tiles;
  };
  static Span span(OpBuilder &b, Location l, Value from, Value to) {
    Value n = arith::MaxSIOp::create(
        b, l, arith::SubIOp::create(b, l, to, from), indexConst(b, l, 0));
    return {
        from, to,
        arith::CeilDivUIOp::create(b, l, n, indexConst(b, l, tiles::kTile))};
  }

  /// The key rows the queries at positions p0 to p0 + 15 see: the union of
  /// their ranges (positions past the last step as the last).
  Span keySpan(OpBuilder &b, Location l, Value p0) const {
    Value from = keyRange(b, l, p0).first;
    Value lastStep = arith::SubIOp::create(b, l, w.steps, indexConst(b, l, 1));
    Value pLast = arith::MinUIOp::create(
        b, l,
        arith::AddIOp::create(b, l, p0, indexConst(b, l, tiles::kTile - 1)),
        lastStep);
    Value to =
        arith::MinSIOp::create(b, l, keyRange(b, l, pLast).second, w.keyRows);
    return span(b, l, from, to);
  }

  /// The queries that see the key rows r0 to r0 + 15: the union of their
  /// ranges (OnePassWindow::queryRange; rows past the last as the last).
  Span querySpan(OpBuilder &b, Location l, Value r0) const {
    Value rLast = arith::MinSIOp::create(
        b, l,
        arith::AddIOp::create(b, l, r0, indexConst(b, l, tiles::kTile - 1)),
        arith::SubIOp::create(b, l, w.keyRows, indexConst(b, l, 1)));
    return span(b, l, w.queryRange(b, l, r0).first,
                w.queryRange(b, l, rLast).second);
  }

  /// Key row `s` of a tile starting at `r0`: (the row clamped below the key
  /// rows' end, the row, whether it is below `to`).
  std::tuple<Value, Value, Value> keyRow(OpBuilder &b, Location l, Value r0,
                                         Value s, Value to) const {
    Value r = arith::AddIOp::create(b, l, r0, s);
    Value inside =
        arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, r, to);
    Value last = arith::SubIOp::create(b, l, w.keyRows, indexConst(b, l, 1));
    return {arith::MinSIOp::create(b, l, r, last).getResult(), r, inside};
  }

  /// The logit of query position `p` (its key range [begin, end), from
  /// keyRange) and key row `r` (unclamped) from their product `dot` = q .
  /// k: scale dot + the bias, -inf where the query does not see the key
  /// (outside its range, or `real` false); and whether it sees it. The
  /// bias of a key it does not see (dropped) is taken at delta max(p - p',
  /// 0), so that no T5 bucket is taken for a negative distance.
  std::pair<Value, Value> logit(OpBuilder &b, Location l, ValueRange idx,
                                Value p, Value begin, Value end, Value r,
                                Value real, Value dot) const {
    Value visible = arith::AndIOp::create(
        b, l, real,
        arith::AndIOp::create(
            b, l,
            arith::CmpIOp::create(b, l, arith::CmpIPredicate::sge, r, begin),
            arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, r, end)));
    Value x = arith::MulFOp::create(b, l, w.scale, dot);
    if (op.getBiasKind() != BiasKind::None) {
      Value self = arith::AddIOp::create(b, l, p, w.cacheLen);
      Value rb = arith::MinSIOp::create(b, l, r, self);
      x = arith::AddFOp::create(b, l, x,
                                windowBias(b, l, op, idx, p, w.cacheLen, rb));
    }
    x = arith::SelectOp::create(
        b, l, visible, x,
        floatConst(b, l, w.elem, -std::numeric_limits<double>::infinity()));
    return {x, visible};
  }

  // Mutable: the ops' accessors (getBiasKind) are not const.
  mutable OpT op;
  OnePassWindow w;
};

/// recur.window_attention by a warp's matrix tiles (the GPU's form with
/// `window-warp-tiles`, recurc's --cuda-window-warp-tiles; flash
/// attention's order): f32, d and dv static multiples of 16, the block
/// buffers within 48 KiB. A block of one warp per (leading index, tile of
/// 16 query positions) loads the queries split into tf32 halves, then walks
/// the 16-row tiles of the union of their queries' key ranges (the tiles
/// outside it, all masked, never visited); for each key tile:
///  - the warp's threads load the keys (transposed) and the values, split;
///  - S = Q K^T by tiles (tiles::multiplyTiles: tensor cores on a GPU);
///  - a thread a query row: the logits scale S + bias of the keys in its
///    own range, their largest m_t, the running largest m (the sums so far
///    rescaled by exp(m_old - m)), the weights P = exp(logit - m) (0 for
///    keys outside its range), l = l exp(m_old - m) + sum P;
///  - O += P V by tiles, O in a block buffer;
/// then O / l is written (a row that saw no key, l = 0, stays 0). Sums are
/// reassociated against the row form, so results agree with it to
/// rounding (and the tf32 halves' products within about 2^-20 of f32's).
/// Anything else is left to the other patterns.
struct WindowAttentionWarpTilesToLoops : OpRewritePattern<WindowAttentionOp> {
  explicit WindowAttentionWarpTilesToLoops(MLIRContext *context)
      : OpRewritePattern(context, /*benefit=*/3) {}

  /// The block buffers' bytes for channels d and dv (f32).
  static int64_t sharedBytes(int64_t d, int64_t dv) {
    using namespace tiles;
    return 4 * (4 * kTile * d + 3 * kTile * dv + 3 * kTile * kTile + 2 * kTile);
  }

  LogicalResult matchAndRewrite(WindowAttentionOp op,
                                PatternRewriter &rewriter) const override {
    using namespace tiles;
    auto channels = tileChannels(op);
    if (!channels ||
        sharedBytes(channels->first, channels->second) > kSharedBytes)
      return rewriter.notifyMatchFailure(
          op, "not f32 with static channels, multiples of 16 that fit");
    int64_t d = channels->first, dv = channels->second;
    auto qType = cast<RankedTensorType>(op.getQ().getType());
    Location loc = op.getLoc();
    WindowTileBand<WindowAttentionOp> band(rewriter, loc, op);
    const OnePassWindow &w = band.w;
    Type f32 = w.elem;
    int64_t rank = qType.getRank();
    ArrayRef<Value> lead = ArrayRef<Value>(w.qSizes).take_front(rank - 2);
    Value tile = indexConst(rewriter, loc, kTile);
    Value queryTiles = arith::CeilDivUIOp::create(rewriter, loc, w.steps, tile);
    Value blocks = blockCount(rewriter, loc, lead, queryTiles);
    Value out = emptyLike(rewriter, loc, cast<RankedTensorType>(op.getType()),
                          w.vSizes);

    SmallVector<Value> results = buildNest(
        rewriter, loc, ValueRange{blocks}, ValueRange{out},
        [&](OpBuilder &b, Location l, ValueRange f, ValueRange args) {
          // The block's leading indices and query tile (the tile fastest).
          std::pair<SmallVector<Value>, Value> at =
              blockAt(b, l, f[0], lead, queryTiles);
          SmallVector<Value> idx = at.first;
          Value p0 =
              arith::MulIOp::create(b, l, at.second, indexConst(b, l, kTile));
          // Query row t: position p0 + t (clamped into the sequence), and
          // whether it is in it.
          auto position = [&](OpBuilder &pb, Location pl, Value t) {
            return rowIn(pb, pl, p0, t, w.steps);
          };
          Split qs =
              loadSplit(b, l, splitBuffers(b, l, kTile, d), kTile, d,
                        [&](OpBuilder &eb, Location el, Value t, Value c) {
                          auto [p, inside] = position(eb, el, t);
                          Value x = extractAt(eb, el, op.getQ(),
                                              concatIndices(idx, {p, c}));
                          return arith::SelectOp::create(eb, el, inside, x,
                                                         zeroOf(eb, el, f32))
                              .getResult();
                        });
          // The key rows of the tile's queries.
          auto span = band.keySpan(b, l, p0);

          // The running largest logits, sums of weights and sums of
          // weighted values, from -inf, 0 and 0.
          Value m =
              privateScratch(b, l, RankedTensorType::get({kTile}, f32), {});
          Value sum =
              privateScratch(b, l, RankedTensorType::get({kTile}, f32), {});
          SmallVector<Value> started = threadLoop(
              b, l, kWarp, ValueRange{m, sum, blockBuffer(b, l, kTile, dv)},
              [&](OpBuilder &tb, Location tl, ValueRange tid, ValueRange bufs) {
                SmallVector<Value> acc = overElements(
                    tb, tl, tid[0], kTile, dv, ValueRange{bufs[2]},
                    [&](OpBuilder &eb, Location el, Value t, Value c,
                        ValueRange o) {
                      return SmallVector<Value>{
                          insertAt(eb, el, zeroOf(eb, el, f32), o[0], {t, c})};
                    });
                Value inRow =
                    arith::CmpIOp::create(tb, tl, arith::CmpIPredicate::ult,
                                          tid[0], indexConst(tb, tl, kTile));
                auto first = scf::IfOp::create(
                    tb, tl, TypeRange{bufs[0].getType(), bufs[1].getType()},
                    inRow, /*withElseRegion=*/true);
                OpBuilder thenB = OpBuilder::atBlockEnd(first.thenBlock());
                scf::YieldOp::create(
                    thenB, tl,
                    ValueRange{insertAt(thenB, tl, minusInfOf(thenB, tl, f32),
                                        bufs[0], {tid[0]}),
                               insertAt(thenB, tl, zeroOf(thenB, tl, f32),
                                        bufs[1], {tid[0]})});
                OpBuilder elseB = OpBuilder::atBlockEnd(first.elseBlock());
                scf::YieldOp::create(elseB, tl, ValueRange{bufs[0], bufs[1]});
                return SmallVector<Value>{first.getResult(0),
                                          first.getResult(1), acc[0]};
              });
          Split kt = splitBuffers(b, l, d, kTile);
          Split vs = splitBuffers(b, l, kTile, dv);
          Split ps = splitBuffers(b, l, kTile, kTile);
          Value scores = blockBuffer(b, l, kTile, kTile);
          SmallVector<Value> init{started[0], started[1], started[2], kt.hi,
                                  kt.lo,      vs.hi,      vs.lo,      ps.hi,
                                  ps.lo,      scores};
          SmallVector<Value> walked = buildLoop(
              b, l, indexConst(b, l, 0), span.tiles, init,
              [&](OpBuilder &jb, Location jl, ValueRange j, ValueRange it) {
                Value r0 = arith::AddIOp::create(
                    jb, jl, span.from,
                    arith::MulIOp::create(jb, jl, j[0],
                                          indexConst(jb, jl, kTile)));
                // Key row s of the tile (clamped), and whether it is one.
                auto keyRow = [&](OpBuilder &kb, Location kl, Value s) {
                  return band.keyRow(kb, kl, r0, s, span.to);
                };
                auto rowElement = [&](Value rows) {
                  return [&, rows](OpBuilder &eb, Location el, Value s,
                                   Value c) -> Value {
                    auto [r, unclamped, inside] = keyRow(eb, el, s);
                    (void)unclamped;
                    Value x =
                        extractAt(eb, el, rows, concatIndices(idx, {r, c}));
                    return arith::SelectOp::create(eb, el, inside, x,
                                                   zeroOf(eb, el, f32));
                  };
                };
                Split keys = loadSplit(jb, jl, {it[3], it[4]}, kTile, d,
                                       rowElement(w.keys),
                                       /*transposed=*/true);
                Split values = loadSplit(jb, jl, {it[5], it[6]}, kTile, dv,
                                         rowElement(w.values));
                Value s = squareProduct(jb, jl, qs, keys, d, it[9]);
                // A thread a query row: the online softmax's step over the
                // tile's keys.
                SmallVector<Value> soft = threadLoop(
                    jb, jl, kTile,
                    ValueRange{it[0], it[1], it[2], it[7], it[8]},
                    [&](OpBuilder &tb, Location tl, ValueRange t,
                        ValueRange bufs) {
                      auto [p, inside] = position(tb, tl, t[0]);
                      (void)inside;
                      auto [begin, end] = band.keyRange(tb, tl, p);
                      SmallVector<Value> logits, seen;
                      Value tileMax = minusInfOf(tb, tl, f32);
                      for (int64_t e = 0; e < kTile; ++e) {
                        Value sIdx = indexConst(tb, tl, e);
                        auto [r, unclamped, real] = keyRow(tb, tl, sIdx);
                        (void)r;
                        Value x =
                            band.logit(tb, tl, idx, p, begin, end, unclamped,
                                       real, extractAt(tb, tl, s, {t[0], sIdx}))
                                .first;
                        logits.push_back(x);
                        tileMax = arith::MaximumFOp::create(tb, tl, tileMax, x);
                      }
                      Value mOld = extractAt(tb, tl, bufs[0], {t[0]});
                      Value mNew =
                          arith::MaximumFOp::create(tb, tl, mOld, tileMax);
                      // Nothing seen yet, or now: the sums stay as they
                      // are (no exp(-inf - -inf)).
                      Value none = arith::CmpFOp::create(
                          tb, tl, arith::CmpFPredicate::OEQ, mNew,
                          minusInfOf(tb, tl, f32));
                      Value rescale = arith::SelectOp::create(
                          tb, tl, none, floatConst(tb, tl, f32, 1.0),
                          math::ExpOp::create(
                              tb, tl,
                              arith::SubFOp::create(tb, tl, mOld, mNew)));
                      Value lNew = arith::MulFOp::create(
                          tb, tl, extractAt(tb, tl, bufs[1], {t[0]}), rescale);
                      Value pHi = bufs[3], pLo = bufs[4];
                      for (int64_t e = 0; e < kTile; ++e) {
                        Value weight = arith::SelectOp::create(
                            tb, tl, none, zeroOf(tb, tl, f32),
                            math::ExpOp::create(tb, tl,
                                                arith::SubFOp::create(
                                                    tb, tl, logits[e], mNew)));
                        lNew = arith::AddFOp::create(tb, tl, lNew, weight);
                        auto [hi, lo] = splitTf32(tb, tl, weight);
                        Value sIdx = indexConst(tb, tl, e);
                        pHi = insertAt(tb, tl, hi, pHi, {t[0], sIdx});
                        pLo = insertAt(tb, tl, lo, pLo, {t[0], sIdx});
                      }
                      Value o = buildLoop(
                          tb, tl, indexConst(tb, tl, 0), indexConst(tb, tl, dv),
                          ValueRange{bufs[2]},
                          [&](OpBuilder &cb, Location cl, ValueRange c,
                              ValueRange acc) {
                            Value x = arith::MulFOp::create(
                                cb, cl, extractAt(cb, cl, acc[0], {t[0], c[0]}),
                                rescale);
                            return SmallVector<Value>{
                                insertAt(cb, cl, x, acc[0], {t[0], c[0]})};
                          })[0];
                      return SmallVector<Value>{
                          insertAt(tb, tl, mNew, bufs[0], {t[0]}),
                          insertAt(tb, tl, lNew, bufs[1], {t[0]}), o, pHi, pLo};
                    });
                Value o = overTiles(
                    jb, jl, kTile, dv, soft[2],
                    [&](OpBuilder &tb, Location tl, Value row, Value col,
                        Value buf) {
                      Value zero = indexConst(tb, tl, 0);
                      return writeTile(
                          tb, tl,
                          multiplyTiles(tb, tl, {soft[3], soft[4]}, row, zero,
                                        values, zero, col, kTile,
                                        readTile(tb, tl, buf, row, col)),
                          buf, row, col);
                    });
                return SmallVector<Value>{
                    soft[0],   soft[1],   o,       keys.hi, keys.lo,
                    values.hi, values.lo, soft[3], soft[4], s};
              });
          // O / l written out for the tile's positions in the sequence (0
          // where no key was seen).
          Value result = storeRows(
              b, l, args[0], idx, kTile, dv,
              [&](OpBuilder &eb, Location el, Value t) {
                return position(eb, el, t);
              },
              [&](OpBuilder &eb, Location el, Value t, Value c) -> Value {
                Value lt = extractAt(eb, el, walked[1], {t});
                Value seenAny = arith::CmpFOp::create(
                    eb, el, arith::CmpFPredicate::OGT, lt, zeroOf(eb, el, f32));
                Value inv = arith::SelectOp::create(
                    eb, el, seenAny,
                    arith::DivFOp::create(eb, el, floatConst(eb, el, f32, 1.0),
                                          lt),
                    zeroOf(eb, el, f32));
                return arith::MulFOp::create(
                    eb, el, extractAt(eb, el, walked[2], {t, c}), inv);
              });
          return SmallVector<Value>{result};
        });
    results.front().getDefiningOp()->setAttr(kGpuBlockAttrName,
                                             rewriter.getUnitAttr());
    rewriter.replaceOp(op, results);
    return success();
  }

  static Value minusInfOf(OpBuilder &b, Location l, Type type) {
    return floatConst(b, l, type, -std::numeric_limits<double>::infinity());
  }
};

/// recur.window_attention_grad in passes a thread a query or a key (the
/// GPU's form, `window-one-pass`), every sum in registers:
///   1. a thread a query p: over its keys, the online softmax's largest
///      logit m_p and sum of weights l_p, and D_p = sum_r P_r dP_r (dP_r =
///      dy_p . v_r) rescaled along with l_p; then over its keys again, with
///      P_r = exp(s_r - m_p) / l_p and dS_r = P_r (dP_r - D_p),
///      dq_p = scale sum_r dS_r k_r; m_p, 1 / l_p and D_p are kept for 2
///      and 3 (1 / l_p = 0 where no key counted);
///   2. a thread a key row r (cache rows first): over the queries that see
///      it (OnePassWindow::queryRange), dv_r = sum_p P_pr dy_p;
///   3. a thread a key row r: dk_r = scale sum_p dS_pr q_p.
/// The logits include the bias. Its cotangent (a t5 table's or alibi's
/// slopes) sums over every pair of a head: in 1, each query p sums its
/// keys' dS_r (times -delta for alibi) into its own element of a partial,
/// or for t5 its own row, a bucket's keys (one run of them: the buckets
/// never rise along the walk) summed in a register and written once;
/// reduceBiasGrad then sums the partial in runs of kBiasGradRun positions
/// and the runs by head (and bucket). The t5 row's writes are the loops'
/// only sums in memory, and alibi's sum one register more than 2 d + dv.
/// The loops carry at most 2 d + dv values (3's key and value rows and its
/// dk_r). Where a query may see kOnePassGroupMinKeys keys or more, the
/// threads of an aligned group of kOnePassGroup walk the union of their
/// ranges together, each skipping the positions outside its own, as in the
/// forward. Channels that are not static, or more than
/// kOnePassGradMaxRegisters, leave the op to WindowAttentionGradToLoops.
struct WindowAttentionGradOnePassToLoops
    : OpRewritePattern<WindowAttentionGradOp> {
  explicit WindowAttentionGradOnePassToLoops(MLIRContext *context)
      : OpRewritePattern(context, /*benefit=*/2) {}

  LogicalResult matchAndRewrite(WindowAttentionGradOp op,
                                PatternRewriter &rewriter) const override {
    auto channels = onePassChannels(rewriter, op, 2, kOnePassGradMaxRegisters);
    if (failed(channels))
      return failure();
    int64_t d = channels->first, dv = channels->second;
    Location loc = op.getLoc();
    OnePassWindow w(rewriter, loc, op);
    Type elem = w.elem;
    auto qType = cast<RankedTensorType>(op.getQ().getType());
    ArrayRef<Value> leadSizes = ArrayRef<Value>(w.qSizes).drop_back(2);
    SmallVector<Value> querySizes(ArrayRef<Value>(w.qSizes).drop_back());
    auto statsType = RankedTensorType::get(qType.getShape().drop_back(), elem);
    Value negInf = floatConst(rewriter, loc, elem,
                              -std::numeric_limits<double>::infinity());
    BiasKind biasKind = op.getBiasKind();
    int64_t buckets = op.getNumBuckets() ? op.getNumBucketsAttr().getInt() : 32;
    int64_t maxDistance =
        op.getMaxDistance() ? op.getMaxDistanceAttr().getInt() : 128;
    // The logit of query p and key row r: scale (q_p . k_r) + the bias.
    auto biased = [&](OpBuilder &b, Location l, Value logit, ValueRange lead,
                      Value p, Value r) -> Value {
      if (biasKind == BiasKind::None)
        return logit;
      return arith::AddFOp::create(
          b, l, logit, windowBias(b, l, op, lead, p, w.cacheLen, r));
    };
    // The bias's cotangent per query: [lead..., T, buckets] (t5) or
    // [lead..., T] (alibi), each query's row its own thread's.
    SmallVector<Value> partialSizes(querySizes);
    SmallVector<int64_t> partialShape(qType.getShape().drop_back());
    if (biasKind == BiasKind::T5) {
      partialSizes.push_back(indexConst(rewriter, loc, buckets));
      partialShape.push_back(buckets);
    }
    auto partialType = RankedTensorType::get(partialShape, elem);

    // 1. A thread a query: m_p, 1 / l_p, D_p and dq_p (and its part of the
    // bias's cotangent).
    SmallVector<Value> perQueryInit{
        emptyLike(rewriter, loc, qType, w.qSizes),
        emptyLike(rewriter, loc, statsType, querySizes),
        emptyLike(rewriter, loc, statsType, querySizes),
        emptyLike(rewriter, loc, statsType, querySizes)};
    if (biasKind != BiasKind::None)
      perQueryInit.push_back(
          emptyLike(rewriter, loc, partialType, partialSizes));
    SmallVector<Value> perQuery = buildNest(
        rewriter, loc, querySizes, perQueryInit,
        [&](OpBuilder &b, Location l, ValueRange ivs, ValueRange args) {
          ValueRange lead = ivs.drop_back();
          Value p = ivs.back();
          OnePassWindow::Walk keyWalk = w.keysOf(b, l, p);
          SmallVector<Value> qs = rowOf(b, l, op.getQ(), lead, p, d);
          SmallVector<Value> dys = rowOf(b, l, op.getDy(), lead, p, dv);
          Value zeroF = zeroOf(b, l, elem);
          Value oneF = floatConst(b, l, elem, 1.0);
          // The logit and dP of key row r.
          auto logitAndDp = [&](OpBuilder &kb, Location kl, Value r) {
            Value s = biased(
                kb, kl, w.logit(kb, kl, qs, rowOf(kb, kl, w.keys, lead, r, d)),
                lead, p, r);
            return std::make_pair(
                s, dotOf(kb, kl, dys, rowOf(kb, kl, w.values, lead, r, dv)));
          };
          SmallVector<Value> stats = buildLoop(
              b, l, keyWalk.from, keyWalk.to, ValueRange{negInf, zeroF, zeroF},
              [&](OpBuilder &kb, Location kl, ValueRange r, ValueRange iter) {
                auto [s, dp] = logitAndDp(kb, kl, r[0]);
                auto [rescale, weight, mNext] = w.onlineStep(
                    kb, kl, s, iter[0], w.inOwnRange(kb, kl, keyWalk, r[0]));
                return SmallVector<Value>{
                    mNext, rescaled(kb, kl, iter[1], rescale, weight, oneF),
                    rescaled(kb, kl, iter[2], rescale, weight, dp)};
              });
          Value seen = arith::CmpFOp::create(b, l, arith::CmpFPredicate::OGT,
                                             stats[1], zeroF);
          // m stays -inf where no key counted (their logits all -inf, or no
          // key): 0 then, so that exp(s - m) times 1 / l = 0 is 0, not NaN.
          Value m = arith::SelectOp::create(b, l, seen, stats[0], zeroF);
          Value invL = arith::SelectOp::create(
              b, l, seen, arith::DivFOp::create(b, l, oneF, stats[1]), zeroF);
          Value dSum = arith::MulFOp::create(b, l, stats[2], invL);
          SmallVector<Value> at = concatIndices(lead, ValueRange{p});
          // dq, then the bias's cotangent: for t5 this query's row of the
          // partial (zeroed here), the bucket of the keys' current run and
          // their sum of dS, written to the row when the bucket changes
          // (buckets never rise as r does, so each bucket's keys are one
          // run, written once; the first write, of bucket 0's zero, is
          // harmless); for alibi the sum of -delta dS.
          SmallVector<Value> dqInit(d, zeroF);
          if (biasKind == BiasKind::T5)
            llvm::append_values(
                dqInit,
                buildLoop(b, l, indexConst(b, l, 0), indexConst(b, l, buckets),
                          ValueRange{args[4]},
                          [&](OpBuilder &zb, Location zl, ValueRange bucket,
                              ValueRange iter) {
                            return SmallVector<Value>{insertAt(
                                zb, zl, zeroF, iter[0],
                                concatIndices(at, ValueRange{bucket[0]}))};
                          })[0],
                indexConst(b, l, 0), zeroF);
          else if (biasKind == BiasKind::Alibi)
            dqInit.push_back(zeroF);
          SmallVector<Value> dq = buildLoop(
              b, l, keyWalk.from, keyWalk.to, dqInit,
              [&](OpBuilder &kb, Location kl, ValueRange r, ValueRange iter) {
                auto [s, dp] = logitAndDp(kb, kl, r[0]);
                Value prob = arith::MulFOp::create(
                    kb, kl,
                    math::ExpOp::create(kb, kl,
                                        arith::SubFOp::create(kb, kl, s, m)),
                    invL);
                if (Value visible = w.inOwnRange(kb, kl, keyWalk, r[0]))
                  prob = arith::SelectOp::create(kb, kl, visible, prob, zeroF);
                Value dsLogit = arith::MulFOp::create(
                    kb, kl, prob, arith::SubFOp::create(kb, kl, dp, dSum));
                Value ds = arith::MulFOp::create(kb, kl, w.scale, dsLogit);
                SmallVector<Value> ks = rowOf(kb, kl, w.keys, lead, r[0], d);
                SmallVector<Value> next;
                for (int64_t e = 0; e < d; ++e)
                  next.push_back(arith::AddFOp::create(
                      kb, kl, iter[e],
                      arith::MulFOp::create(kb, kl, ds, ks[e])));
                if (biasKind == BiasKind::None)
                  return next;
                // delta = p - (r - C); a key outside the thread's own range
                // (dS = 0 there) may have one below 0, which counts as 0.
                Value delta = arith::SubIOp::create(
                    kb, kl, arith::AddIOp::create(kb, kl, p, w.cacheLen), r[0]);
                if (biasKind == BiasKind::T5) {
                  Value bucket =
                      buildT5Bucket(kb, kl, delta, buckets, maxDistance);
                  Value changed = arith::CmpIOp::create(
                      kb, kl, arith::CmpIPredicate::ne, bucket, iter[d + 1]);
                  auto flush =
                      scf::IfOp::create(kb, kl, iter[d].getType(), changed,
                                        /*withElseRegion=*/true);
                  OpBuilder tb = OpBuilder::atBlockEnd(flush.thenBlock());
                  scf::YieldOp::create(
                      tb, kl,
                      insertAt(tb, kl, iter[d + 2], iter[d],
                               concatIndices(at, ValueRange{iter[d + 1]})));
                  OpBuilder eb = OpBuilder::atBlockEnd(flush.elseBlock());
                  scf::YieldOp::create(eb, kl, iter[d]);
                  llvm::append_values(
                      next, flush.getResult(0), bucket,
                      arith::SelectOp::create(
                          kb, kl, changed, dsLogit,
                          arith::AddFOp::create(kb, kl, iter[d + 2], dsLogit)));
                } else {
                  // d(-slope delta) / d slope = -delta.
                  next.push_back(arith::AddFOp::create(
                      kb, kl, iter[d],
                      arith::MulFOp::create(
                          kb, kl, dsLogit,
                          arith::NegFOp::create(
                              kb, kl, indexToFloat(kb, kl, delta, elem)))));
                }
                return next;
              });
          SmallVector<Value> out{
              insertRow(b, l, ArrayRef<Value>(dq).take_front(d), args[0], lead,
                        p),
              insertAt(b, l, m, args[1], at), insertAt(b, l, invL, args[2], at),
              insertAt(b, l, dSum, args[3], at)};
          if (biasKind == BiasKind::T5)
            out.push_back(insertAt(b, l, dq[d + 2], dq[d],
                                   concatIndices(at, ValueRange{dq[d + 1]})));
          else if (biasKind == BiasKind::Alibi)
            out.push_back(insertAt(b, l, dq[d], args[4], at));
          return out;
        });
    Value mOf = perQuery[1], invLOf = perQuery[2], dSumOf = perQuery[3];

    // 2 and 3. A thread a key row r: its cotangent row over the queries
    // that see it, written to the cache's cotangent for r < C.
    auto keyRowsPass = [&](Value seqGrad, Value cacheGrad, int64_t width,
                           bool forKeys) -> std::pair<Value, Value> {
      SmallVector<Value> nestSizes(leadSizes);
      nestSizes.push_back(w.keyRows);
      SmallVector<Value> carried{seqGrad};
      if (cacheGrad)
        carried.push_back(cacheGrad);
      SmallVector<Value> results = buildNest(
          rewriter, loc, nestSizes, carried,
          [&](OpBuilder &b, Location l, ValueRange ivs, ValueRange args) {
            ValueRange lead = ivs.drop_back();
            Value r = ivs.back();
            OnePassWindow::Walk queryWalk = w.queriesOf(b, l, r);
            SmallVector<Value> ks = rowOf(b, l, w.keys, lead, r, d);
            SmallVector<Value> vs;
            if (forKeys)
              vs = rowOf(b, l, w.values, lead, r, dv);
            Value zeroF = zeroOf(b, l, elem);
            SmallVector<Value> sums = buildLoop(
                b, l, queryWalk.from, queryWalk.to,
                SmallVector<Value>(width, zeroF),
                [&](OpBuilder &pb, Location pl, ValueRange p, ValueRange iter) {
                  SmallVector<Value> at = concatIndices(lead, ValueRange{p[0]});
                  SmallVector<Value> qs =
                      rowOf(pb, pl, op.getQ(), lead, p[0], d);
                  Value shifted = arith::SubFOp::create(
                      pb, pl,
                      biased(pb, pl, w.logit(pb, pl, qs, ks), lead, p[0], r),
                      extractAt(pb, pl, mOf, at));
                  Value prob = arith::MulFOp::create(
                      pb, pl, math::ExpOp::create(pb, pl, shifted),
                      extractAt(pb, pl, invLOf, at));
                  if (Value visible = w.inOwnRange(pb, pl, queryWalk, p[0]))
                    prob =
                        arith::SelectOp::create(pb, pl, visible, prob, zeroF);
                  SmallVector<Value> dys =
                      rowOf(pb, pl, op.getDy(), lead, p[0], dv);
                  // dv_r += P dy_p, or dk_r += scale P (dP - D_p) q_p.
                  Value coeff = prob;
                  ArrayRef<Value> terms = dys;
                  if (forKeys) {
                    Value dp = dotOf(pb, pl, dys, vs);
                    coeff = arith::MulFOp::create(
                        pb, pl, w.scale,
                        arith::MulFOp::create(
                            pb, pl, prob,
                            arith::SubFOp::create(
                                pb, pl, dp, extractAt(pb, pl, dSumOf, at))));
                    terms = qs;
                  }
                  SmallVector<Value> next;
                  for (auto [sum, term] : llvm::zip(iter, terms))
                    next.push_back(arith::AddFOp::create(
                        pb, pl, sum,
                        arith::MulFOp::create(pb, pl, coeff, term)));
                  return next;
                });
            if (!cacheGrad)
              return SmallVector<Value>{
                  insertRow(b, l, sums, args[0], lead, r)};
            Value inCache = arith::CmpIOp::create(
                b, l, arith::CmpIPredicate::slt, r, w.cacheLen);
            auto branch = scf::IfOp::create(b, l, args.getTypes(), inCache,
                                            /*withElseRegion=*/true);
            OpBuilder tb = OpBuilder::atBlockEnd(branch.thenBlock());
            scf::YieldOp::create(
                tb, l,
                ValueRange{args[0], insertRow(tb, l, sums, args[1], lead, r)});
            OpBuilder eb = OpBuilder::atBlockEnd(branch.elseBlock());
            Value pos = arith::SubIOp::create(eb, l, r, w.cacheLen);
            scf::YieldOp::create(
                eb, l,
                ValueRange{insertRow(eb, l, sums, args[0], lead, pos),
                           args[1]});
            return SmallVector<Value>(branch.getResults());
          });
      return {results[0], cacheGrad ? results[1] : Value()};
    };
    auto empty = [&](Value like) -> Value {
      if (!like)
        return Value();
      return emptyLike(rewriter, loc, cast<RankedTensorType>(like.getType()),
                       dimSizes(rewriter, loc, like));
    };
    Value dvGrad, dvCacheGrad, dkGrad, dkCacheGrad;
    std::tie(dvGrad, dvCacheGrad) = keyRowsPass(
        empty(op.getV()), empty(op.getVCache()), dv, /*forKeys=*/false);
    std::tie(dkGrad, dkCacheGrad) = keyRowsPass(
        empty(op.getK()), empty(op.getKCache()), d, /*forKeys=*/true);
    SmallVector<Value> results{perQuery[0], dkGrad, dvGrad};
    if (biasKind != BiasKind::None)
      results.push_back(reduceBiasGrad(rewriter, loc, op, perQuery[4],
                                       partialSizes, querySizes.size() - 1));
    if (op.getKCache())
      llvm::append_values(results, dkCacheGrad, dvCacheGrad);
    rewriter.replaceOp(op, results);
    return success();
  }

  /// The bias's cotangent from the per-query `partial` (`[lead..., T,
  /// (buckets)]` of sizes `partialSizes`, `leadRank` leading dimensions, the
  /// heads the last): summed over runs of kBiasGradRun positions, a thread
  /// per (leading index, run, (bucket)), then over the other leading
  /// dimensions and the runs, a thread per (head, (bucket)).
  static Value reduceBiasGrad(OpBuilder &rewriter, Location loc,
                              WindowAttentionGradOp op, Value partial,
                              ArrayRef<Value> partialSizes, size_t leadRank) {
    auto partialType = cast<RankedTensorType>(partial.getType());
    Type elem = partialType.getElementType();
    Value steps = partialSizes[leadRank];
    Value run = indexConst(rewriter, loc, kBiasGradRun);
    Value runs = arith::CeilDivUIOp::create(rewriter, loc, steps, run);
    SmallVector<Value> runSizes(partialSizes);
    runSizes[leadRank] = runs;
    SmallVector<int64_t> runShape(partialType.getShape());
    runShape[leadRank] = ShapedType::kDynamic;
    auto runType = RankedTensorType::get(runShape, elem);
    Value perRun = buildNest(
        rewriter, loc, runSizes, emptyLike(rewriter, loc, runType, runSizes),
        [&](OpBuilder &b, Location l, ValueRange ivs, ValueRange args) {
          Value begin = arith::MulIOp::create(b, l, ivs[leadRank], run);
          Value end = arith::MinUIOp::create(
              b, l, arith::AddIOp::create(b, l, begin, run), steps);
          Value sum = buildLoop(
              b, l, begin, end, zeroOf(b, l, elem),
              [&](OpBuilder &pb, Location pl, ValueRange p, ValueRange acc) {
                SmallVector<Value> at(ivs);
                at[leadRank] = p[0];
                return SmallVector<Value>{arith::AddFOp::create(
                    pb, pl, acc[0], extractAt(pb, pl, partial, at))};
              })[0];
          return SmallVector<Value>{insertAt(b, l, sum, args[0], ivs)};
        })[0];
    // Over the leading dimensions but the heads, and the runs.
    auto biasType = cast<RankedTensorType>(op.getBias().getType());
    SmallVector<Value> summed(
        ArrayRef<Value>(runSizes).take_front(leadRank - 1));
    summed.push_back(runs);
    return buildNest(
        rewriter, loc, dimSizes(rewriter, loc, op.getBias()),
        emptyLike(rewriter, loc, biasType,
                  dimSizes(rewriter, loc, op.getBias())),
        [&](OpBuilder &b, Location l, ValueRange ivs, ValueRange args) {
          Value sum = buildSerialNest(
              b, l, summed, ValueRange{zeroOf(b, l, elem)},
              [&](OpBuilder &sb, Location sl, ValueRange outer,
                  ValueRange acc) {
                // [outer lead..., head, run, (bucket)].
                SmallVector<Value> at(outer.drop_back());
                at.push_back(ivs[0]);
                at.push_back(outer.back());
                llvm::append_range(at, ivs.drop_front());
                return SmallVector<Value>{arith::AddFOp::create(
                    sb, sl, acc[0], extractAt(sb, sl, perRun, at))};
              })[0];
          return SmallVector<Value>{insertAt(b, l, sum, args[0], ivs)};
        })[0];
  }
};

/// recur.window_attention_grad by a warp's matrix tiles (the GPU's form
/// with `window-warp-tiles`, recurc's --cuda-window-warp-tiles; flash
/// attention's backward in two launches, each cotangent summed in one
/// block, rather than one launch summing dq by atomics): f32, d and dv
/// static multiples of 16, each launch's block buffers within 48 KiB. With
/// S the logits (scale Q K^T + bias, -inf where a query does not see a
/// key), P = softmax(S) a query row at a time, dP = dY V^T, D = rowsum(P o
/// dP) and dS = P o (dP - D):
///  1. a block of one warp per (leading index, tile of 16 queries) walks
///     the tiles of 16 key rows its queries see (WindowTileBand::keySpan)
///     twice. First, S and dP by tiles (the keys and values loaded
///     transposed), then a thread a query row the online softmax's
///     largest logit m, sum of weights l and D (rescaled as l is). Then S
///     and dP again, a thread a query row P = exp(S - m) / l and scale dS,
///     written transposed (key rows by query columns) and split, and dq^T
///     += K^T dS^T by tiles. It writes dq, each query's m, 1 / l and D
///     (m and 1 / l 0 where no key counted), and its part of the bias's
///     cotangent: dS summed into its own row of a block buffer by bucket
///     (T5) or times -delta (ALiBi), then written to a per-query partial.
///  2. a block of one warp per (leading index, tile of 16 key rows, the
///     cache's first) walks the tiles of the queries that see its keys
///     (WindowTileBand::querySpan): S and dP by tiles, P and scale dS an
///     element a thread from 1's statistics, both written transposed and
///     split, then dv += P^T dY and dk += dS^T Q by tiles; its rows
///     written to dk and dv (or to the caches').
/// The per-query partial of the bias's cotangent is summed as the one-pass
/// form's (WindowAttentionGradOnePassToLoops::reduceBiasGrad). Sums are
/// reassociated against the other forms, and the products are the tf32
/// halves' (3xTF32), so results agree with them to rounding. Anything else
/// is left to the other patterns.
struct WindowAttentionGradWarpTilesToLoops
    : OpRewritePattern<WindowAttentionGradOp> {
  explicit WindowAttentionGradWarpTilesToLoops(MLIRContext *context)
      : OpRewritePattern(context, /*benefit=*/3) {}

  /// The block buffers' bytes (f32) of launch 1 for channels d and dv and
  /// `biasColumns` columns of the bias's cotangent (T5's buckets, 1 for
  /// ALiBi, 0 without a bias), and of launch 2.
  static int64_t queryBytes(int64_t d, int64_t dv, int64_t biasColumns) {
    using namespace tiles;
    return 4 * (4 * kTile * d + 4 * kTile * dv + 4 * kTile * kTile + kTile * d +
                3 * kTile + kTile * biasColumns);
  }
  static int64_t keyBytes(int64_t d, int64_t dv) {
    using namespace tiles;
    return 4 * (5 * kTile * d + 5 * kTile * dv + 6 * kTile * kTile + 3 * kTile);
  }

  /// `into` holding the split rows of `tensor` (`[lead..., rows, width]`,
  /// at `idx`) that `at(s)` gives for row s of a tile (the row, clamped,
  /// and whether it is one: 0 where not); with `transposed`, `[width,
  /// 16]`.
  static tiles::Split loadRows(
      OpBuilder &b, Location l, tiles::Split into, int64_t width, Value tensor,
      ValueRange idx,
      function_ref<std::pair<Value, Value>(OpBuilder &, Location, Value)> at,
      bool transposed = false) {
    return tiles::loadSplit(
        b, l, into, tiles::kTile, width,
        [&](OpBuilder &eb, Location el, Value s, Value c) -> Value {
          auto [r, inside] = at(eb, el, s);
          Value x = extractAt(eb, el, tensor, concatIndices(idx, {r, c}));
          return arith::SelectOp::create(eb, el, inside, x,
                                         zeroOf(eb, el, eb.getF32Type()));
        },
        transposed);
  }

  /// A [rows, cols] block buffer of zeros (rows * cols a multiple of 32).
  static Value zeroBuffer(OpBuilder &b, Location l, int64_t rows,
                          int64_t cols) {
    using namespace tiles;
    return threadLoop(b, l, kWarp, ValueRange{blockBuffer(b, l, rows, cols)},
                      [&](OpBuilder &tb, Location tl, ValueRange tid,
                          ValueRange bufs) {
                        return overElements(
                            tb, tl, tid[0], rows, cols, bufs,
                            [&](OpBuilder &eb, Location el, Value r, Value c,
                                ValueRange acc) {
                              return SmallVector<Value>{insertAt(
                                  eb, el, zeroOf(eb, el, eb.getF32Type()),
                                  acc[0], {r, c})};
                            });
                      })
        .front();
  }

  /// `acc` ([rows, 16 x n]) + A B by tiles, A = `a` ([rows, 16], split), B
  /// = `bm` ([16, cols], split).
  static Value accumulate(OpBuilder &b, Location l, tiles::Split a,
                          tiles::Split bm, int64_t rows, int64_t cols,
                          Value acc) {
    using namespace tiles;
    return overTiles(
        b, l, rows, cols, acc,
        [&](OpBuilder &tb, Location tl, Value row, Value col, Value buf) {
          Value zero = indexConst(tb, tl, 0);
          return writeTile(tb, tl,
                           multiplyTiles(tb, tl, a, row, zero, bm, zero, col,
                                         kTile,
                                         readTile(tb, tl, buf, row, col)),
                           buf, row, col);
        });
  }

  LogicalResult matchAndRewrite(WindowAttentionGradOp op,
                                PatternRewriter &rewriter) const override {
    using namespace tiles;
    auto channels = tileChannels(op);
    BiasKind biasKind = op.getBiasKind();
    int64_t buckets = op.getNumBuckets() ? op.getNumBucketsAttr().getInt() : 32;
    int64_t maxDistance =
        op.getMaxDistance() ? op.getMaxDistanceAttr().getInt() : 128;
    int64_t biasColumns = biasKind == BiasKind::T5      ? buckets
                          : biasKind == BiasKind::Alibi ? 1
                                                        : 0;
    if (!channels ||
        queryBytes(channels->first, channels->second, biasColumns) >
            kSharedBytes ||
        keyBytes(channels->first, channels->second) > kSharedBytes)
      return rewriter.notifyMatchFailure(
          op, "not f32 with static channels, multiples of 16 that fit");
    int64_t d = channels->first, dv = channels->second;
    auto qType = cast<RankedTensorType>(op.getQ().getType());
    Location loc = op.getLoc();
    WindowTileBand<WindowAttentionGradOp> band(rewriter, loc, op);
    const OnePassWindow &w = band.w;
    Type f32 = w.elem;
    int64_t rank = qType.getRank();
    ArrayRef<Value> lead = ArrayRef<Value>(w.qSizes).take_front(rank - 2);
    SmallVector<Value> querySizes(ArrayRef<Value>(w.qSizes).drop_back());
    auto statsType = RankedTensorType::get(qType.getShape().drop_back(), f32);
    Value tile = indexConst(rewriter, loc, kTile);
    Value minusInf = floatConst(rewriter, loc, f32,
                                -std::numeric_limits<double>::infinity());
    // The bias's cotangent per query: [lead..., T, buckets] (T5) or
    // [lead..., T] (ALiBi).
    SmallVector<Value> partialSizes(querySizes);
    SmallVector<int64_t> partialShape(qType.getShape().drop_back());
    if (biasKind == BiasKind::T5) {
      partialSizes.push_back(indexConst(rewriter, loc, buckets));
      partialShape.push_back(buckets);
    }
    auto partialType = RankedTensorType::get(partialShape, f32);

    // 1. A block per (leading index, tile of 16 queries): dq, the
    // statistics and the bias's partial.
    Value queryTiles = arith::CeilDivUIOp::create(rewriter, loc, w.steps, tile);
    SmallVector<Value> queryInit{
        emptyLike(rewriter, loc, qType, w.qSizes),
        emptyLike(rewriter, loc, statsType, querySizes),
        emptyLike(rewriter, loc, statsType, querySizes),
        emptyLike(rewriter, loc, statsType, querySizes)};
    if (biasKind != BiasKind::None)
      queryInit.push_back(emptyLike(rewriter, loc, partialType, partialSizes));
    SmallVector<Value> perQuery = buildNest(
        rewriter, loc, ValueRange{blockCount(rewriter, loc, lead, queryTiles)},
        queryInit,
        [&](OpBuilder &b, Location l, ValueRange f, ValueRange args) {
          std::pair<SmallVector<Value>, Value> at =
              blockAt(b, l, f[0], lead, queryTiles);
          SmallVector<Value> idx = at.first;
          Value p0 = arith::MulIOp::create(b, l, at.second, tile);
          auto position = [&](OpBuilder &pb, Location pl, Value t) {
            return rowIn(pb, pl, p0, t, w.steps);
          };
          Split qs = loadRows(b, l, splitBuffers(b, l, kTile, d), d, op.getQ(),
                              idx, position);
          Split dys = loadRows(b, l, splitBuffers(b, l, kTile, dv), dv,
                               op.getDy(), idx, position);
          auto span = band.keySpan(b, l, p0);
          // The key tile from row r0 (`bufs`: the keys' and the values'
          // split halves, transposed, then S and dP): loaded, then S = Q
          // K^T and dP = dY V^T.
          auto keyTile = [&](OpBuilder &jb, Location jl, Value r0,
                             ValueRange bufs) {
            auto keyAt = [&](OpBuilder &eb, Location el, Value s) {
              auto [r, unclamped, inside] = band.keyRow(eb, el, r0, s, span.to);
              (void)unclamped;
              return std::make_pair(r, inside);
            };
            Split kt = loadRows(jb, jl, {bufs[0], bufs[1]}, d, w.keys, idx,
                                keyAt, /*transposed=*/true);
            Split vt = loadRows(jb, jl, {bufs[2], bufs[3]}, dv, w.values, idx,
                                keyAt, /*transposed=*/true);
            return SmallVector<Value>{
                kt.hi,
                kt.lo,
                vt.hi,
                vt.lo,
                squareProduct(jb, jl, qs, kt, d, bufs[4]),
                squareProduct(jb, jl, dys, vt, dv, bufs[5])};
          };
          // Query row t's logits of the key tile from r0 (S in `s`), and
          // whether it sees each key.
          auto rowLogits = [&](OpBuilder &tb, Location tl, Value t, Value r0,
                               Value s) {
            auto [p, inside] = position(tb, tl, t);
            (void)inside;
            auto [begin, end] = band.keyRange(tb, tl, p);
            SmallVector<std::pair<Value, Value>> logits;
            for (int64_t e = 0; e < kTile; ++e) {
              Value eIdx = indexConst(tb, tl, e);
              auto [r, unclamped, real] =
                  band.keyRow(tb, tl, r0, eIdx, span.to);
              (void)r;
              logits.push_back(band.logit(tb, tl, idx, p, begin, end, unclamped,
                                          real,
                                          extractAt(tb, tl, s, {t, eIdx})));
            }
            return logits;
          };
          auto tileStart = [&](OpBuilder &jb, Location jl, Value j) -> Value {
            return arith::AddIOp::create(
                jb, jl, span.from, arith::MulIOp::create(jb, jl, j, tile));
          };

          // Pass 1: m, l and D from -inf, 0 and 0.
          auto rowType = RankedTensorType::get({kTile}, f32);
          SmallVector<Value> started = threadLoop(
              b, l, kTile,
              ValueRange{privateScratch(b, l, rowType, {}),
                         privateScratch(b, l, rowType, {}),
                         privateScratch(b, l, rowType, {})},
              [&](OpBuilder &tb, Location tl, ValueRange t, ValueRange bufs) {
                Value zero = zeroOf(tb, tl, f32);
                return SmallVector<Value>{
                    insertAt(tb, tl, minusInf, bufs[0], {t[0]}),
                    insertAt(tb, tl, zero, bufs[1], {t[0]}),
                    insertAt(tb, tl, zero, bufs[2], {t[0]})};
              });
          Split kt = splitBuffers(b, l, d, kTile);
          Split vt = splitBuffers(b, l, dv, kTile);
          SmallVector<Value> tileBufs{kt.hi,
                                      kt.lo,
                                      vt.hi,
                                      vt.lo,
                                      blockBuffer(b, l, kTile, kTile),
                                      blockBuffer(b, l, kTile, kTile)};
          SmallVector<Value> firstInit(started);
          llvm::append_range(firstInit, tileBufs);
          SmallVector<Value> first = buildLoop(
              b, l, indexConst(b, l, 0), span.tiles, firstInit,
              [&](OpBuilder &jb, Location jl, ValueRange j, ValueRange it) {
                Value r0 = tileStart(jb, jl, j[0]);
                SmallVector<Value> tileOut =
                    keyTile(jb, jl, r0, it.drop_front(3));
                Value s = tileOut[4], dp = tileOut[5];
                SmallVector<Value> rows = threadLoop(
                    jb, jl, kTile, it.take_front(3),
                    [&](OpBuilder &tb, Location tl, ValueRange t,
                        ValueRange bufs) {
                      auto logits = rowLogits(tb, tl, t[0], r0, s);
                      Value tileMax = minusInf;
                      for (auto &x : logits)
                        tileMax =
                            arith::MaximumFOp::create(tb, tl, tileMax, x.first);
                      Value mOld = extractAt(tb, tl, bufs[0], {t[0]});
                      Value mNew =
                          arith::MaximumFOp::create(tb, tl, mOld, tileMax);
                      // Nothing seen yet, or now: the sums stay as they are.
                      Value none = arith::CmpFOp::create(
                          tb, tl, arith::CmpFPredicate::OEQ, mNew, minusInf);
                      Value rescale = arith::SelectOp::create(
                          tb, tl, none, floatConst(tb, tl, f32, 1.0),
                          math::ExpOp::create(
                              tb, tl,
                              arith::SubFOp::create(tb, tl, mOld, mNew)));
                      Value lNew = arith::MulFOp::create(
                          tb, tl, extractAt(tb, tl, bufs[1], {t[0]}), rescale);
                      Value dNew = arith::MulFOp::create(
                          tb, tl, extractAt(tb, tl, bufs[2], {t[0]}), rescale);
                      for (int64_t e = 0; e < kTile; ++e) {
                        Value weight = arith::SelectOp::create(
                            tb, tl, none, zeroOf(tb, tl, f32),
                            math::ExpOp::create(
                                tb, tl,
                                arith::SubFOp::create(tb, tl, logits[e].first,
                                                      mNew)));
                        lNew = arith::AddFOp::create(tb, tl, lNew, weight);
                        dNew = arith::AddFOp::create(
                            tb, tl, dNew,
                            arith::MulFOp::create(
                                tb, tl, weight,
                                extractAt(tb, tl, dp,
                                          {t[0], indexConst(tb, tl, e)})));
                      }
                      return SmallVector<Value>{
                          insertAt(tb, tl, mNew, bufs[0], {t[0]}),
                          insertAt(tb, tl, lNew, bufs[1], {t[0]}),
                          insertAt(tb, tl, dNew, bufs[2], {t[0]})};
                    });
                llvm::append_range(rows, tileOut);
                return rows;
              });
          // The statistics in place: m (0 where no key counted, so that
          // exp(s - m) / l is 0 there, not NaN), 1 / l (0 then) and D.
          SmallVector<Value> stats = threadLoop(
              b, l, kTile, ArrayRef<Value>(first).take_front(3),
              [&](OpBuilder &tb, Location tl, ValueRange t, ValueRange bufs) {
                Value zero = zeroOf(tb, tl, f32);
                Value sum = extractAt(tb, tl, bufs[1], {t[0]});
                Value seen = arith::CmpFOp::create(
                    tb, tl, arith::CmpFPredicate::OGT, sum, zero);
                Value m = arith::SelectOp::create(
                    tb, tl, seen, extractAt(tb, tl, bufs[0], {t[0]}), zero);
                Value invL = arith::SelectOp::create(
                    tb, tl, seen,
                    arith::DivFOp::create(tb, tl, floatConst(tb, tl, f32, 1.0),
                                          sum),
                    zero);
                Value dSum = arith::MulFOp::create(
                    tb, tl, extractAt(tb, tl, bufs[2], {t[0]}), invL);
                return SmallVector<Value>{
                    insertAt(tb, tl, m, bufs[0], {t[0]}),
                    insertAt(tb, tl, invL, bufs[1], {t[0]}),
                    insertAt(tb, tl, dSum, bufs[2], {t[0]})};
              });

          // Pass 2: dq^T ([d, 16]) and the bias's sums ([16, columns]).
          Split dsT = splitBuffers(b, l, kTile, kTile);
          SmallVector<Value> secondInit{zeroBuffer(b, l, d, kTile), dsT.hi,
                                        dsT.lo};
          if (biasColumns)
            secondInit.push_back(threadLoop(
                b, l, kTile, ValueRange{blockBuffer(b, l, kTile, biasColumns)},
                [&](OpBuilder &tb, Location tl, ValueRange t, ValueRange bufs) {
                  return buildLoop(tb, tl, indexConst(tb, tl, 0),
                                   indexConst(tb, tl, biasColumns), bufs,
                                   [&](OpBuilder &cb, Location cl, ValueRange c,
                                       ValueRange acc) {
                                     return SmallVector<Value>{
                                         insertAt(cb, cl, zeroOf(cb, cl, f32),
                                                  acc[0], {t[0], c[0]})};
                                   });
                })[0]);
          size_t bufsAt = secondInit.size();
          llvm::append_range(secondInit, ArrayRef<Value>(first).drop_front(3));
          SmallVector<Value> second = buildLoop(
              b, l, indexConst(b, l, 0), span.tiles, secondInit,
              [&](OpBuilder &jb, Location jl, ValueRange j, ValueRange it) {
                Value r0 = tileStart(jb, jl, j[0]);
                SmallVector<Value> tileOut =
                    keyTile(jb, jl, r0, it.drop_front(bufsAt));
                Value s = tileOut[4], dp = tileOut[5];
                SmallVector<Value> rowInit{it[1], it[2]};
                if (biasColumns)
                  rowInit.push_back(it[3]);
                SmallVector<Value> rows = threadLoop(
                    jb, jl, kTile, rowInit,
                    [&](OpBuilder &tb, Location tl, ValueRange t,
                        ValueRange bufs) {
                      auto logits = rowLogits(tb, tl, t[0], r0, s);
                      Value m = extractAt(tb, tl, stats[0], {t[0]});
                      Value invL = extractAt(tb, tl, stats[1], {t[0]});
                      Value dSum = extractAt(tb, tl, stats[2], {t[0]});
                      auto [p, inside] = position(tb, tl, t[0]);
                      (void)inside;
                      SmallVector<Value> out(bufs);
                      for (int64_t e = 0; e < kTile; ++e) {
                        Value eIdx = indexConst(tb, tl, e);
                        auto [x, visible] = logits[e];
                        Value prob = arith::MulFOp::create(
                            tb, tl,
                            math::ExpOp::create(
                                tb, tl, arith::SubFOp::create(tb, tl, x, m)),
                            invL);
                        Value dsLogit = arith::SelectOp::create(
                            tb, tl, visible,
                            arith::MulFOp::create(
                                tb, tl, prob,
                                arith::SubFOp::create(
                                    tb, tl, extractAt(tb, tl, dp, {t[0], eIdx}),
                                    dSum)),
                            zeroOf(tb, tl, f32));
                        auto [hi, lo] = splitTf32(
                            tb, tl,
                            arith::MulFOp::create(tb, tl, w.scale, dsLogit));
                        out[0] = insertAt(tb, tl, hi, out[0], {eIdx, t[0]});
                        out[1] = insertAt(tb, tl, lo, out[1], {eIdx, t[0]});
                        if (!biasColumns)
                          continue;
                        // delta = p - (r - C), 0 at least (dS is 0 for the
                        // keys it does not see).
                        auto [rc, r, real] =
                            band.keyRow(tb, tl, r0, eIdx, span.to);
                        (void)rc;
                        (void)real;
                        Value self =
                            arith::AddIOp::create(tb, tl, p, w.cacheLen);
                        Value delta = arith::SubIOp::create(
                            tb, tl, self,
                            arith::MinSIOp::create(tb, tl, r, self));
                        Value column = indexConst(tb, tl, 0);
                        Value term = dsLogit;
                        if (biasKind == BiasKind::T5)
                          column = buildT5Bucket(tb, tl, delta, buckets,
                                                 maxDistance);
                        else // d(-slope delta) / d slope = -delta.
                          term = arith::MulFOp::create(
                              tb, tl, dsLogit,
                              arith::NegFOp::create(
                                  tb, tl, indexToFloat(tb, tl, delta, f32)));
                        out[2] = insertAt(
                            tb, tl,
                            arith::AddFOp::create(
                                tb, tl,
                                extractAt(tb, tl, out[2], {t[0], column}),
                                term),
                            out[2], {t[0], column});
                      }
                      return out;
                    });
                Value dqT = accumulate(jb, jl, {tileOut[0], tileOut[1]},
                                       {rows[0], rows[1]}, d, kTile, it[0]);
                SmallVector<Value> next{dqT, rows[0], rows[1]};
                if (biasColumns)
                  next.push_back(rows[2]);
                llvm::append_range(next, tileOut);
                return next;
              });
          // dq, the statistics and the bias's partial written out for the
          // tile's positions in the sequence.
          SmallVector<Value> out{storeRows(
              b, l, args[0], idx, kTile, d,
              [&](OpBuilder &eb, Location el, Value t) {
                return position(eb, el, t);
              },
              [&](OpBuilder &eb, Location el, Value t, Value c) -> Value {
                return extractAt(eb, el, second[0], {c, t});
              })};
          SmallVector<Value> rowsOut = threadLoop(
              b, l, kTile, args.drop_front(),
              [&](OpBuilder &tb, Location tl, ValueRange t, ValueRange outs) {
                auto [p, inside] = position(tb, tl, t[0]);
                auto branch = scf::IfOp::create(tb, tl, outs.getTypes(), inside,
                                                /*withElseRegion=*/true);
                OpBuilder thenB = OpBuilder::atBlockEnd(branch.thenBlock());
                SmallVector<Value> pos = concatIndices(idx, ValueRange{p});
                SmallVector<Value> written;
                for (int64_t n = 0; n < 3; ++n)
                  written.push_back(insertAt(
                      thenB, tl, extractAt(thenB, tl, stats[n], {t[0]}),
                      outs[n], pos));
                if (biasKind == BiasKind::Alibi)
                  written.push_back(
                      insertAt(thenB, tl,
                               extractAt(thenB, tl, second[3],
                                         {t[0], indexConst(thenB, tl, 0)}),
                               outs[3], pos));
                else if (biasKind == BiasKind::T5)
                  written.push_back(buildLoop(
                      thenB, tl, indexConst(thenB, tl, 0),
                      indexConst(thenB, tl, buckets), ValueRange{outs[3]},
                      [&](OpBuilder &cb, Location cl, ValueRange c,
                          ValueRange acc) {
                        return SmallVector<Value>{insertAt(
                            cb, cl, extractAt(cb, cl, second[3], {t[0], c[0]}),
                            acc[0], concatIndices(pos, ValueRange{c[0]}))};
                      })[0]);
                scf::YieldOp::create(thenB, tl, written);
                OpBuilder elseB = OpBuilder::atBlockEnd(branch.elseBlock());
                scf::YieldOp::create(elseB, tl, outs);
                return SmallVector<Value>(branch.getResults());
              });
          llvm::append_range(out, rowsOut);
          return out;
        });
    perQuery.front().getDefiningOp()->setAttr(kGpuBlockAttrName,
                                              rewriter.getUnitAttr());

    // 2. A block per (leading index, tile of 16 key rows): dk and dv.
    Value keyTiles = arith::CeilDivUIOp::create(rewriter, loc, w.keyRows, tile);
    auto emptyOf = [&](Value like) -> Value {
      return emptyLike(rewriter, loc, cast<RankedTensorType>(like.getType()),
                       dimSizes(rewriter, loc, like));
    };
    SmallVector<Value> keyInit{emptyOf(op.getK()), emptyOf(op.getV())};
    if (op.getKCache())
      llvm::append_values(keyInit, emptyOf(op.getKCache()),
                          emptyOf(op.getVCache()));
    SmallVector<Value> perKey = buildNest(
        rewriter, loc, ValueRange{blockCount(rewriter, loc, lead, keyTiles)},
        keyInit, [&](OpBuilder &b, Location l, ValueRange f, ValueRange args) {
          std::pair<SmallVector<Value>, Value> at =
              blockAt(b, l, f[0], lead, keyTiles);
          SmallVector<Value> idx = at.first;
          Value r0 = arith::MulIOp::create(b, l, at.second, tile);
          auto keyAt = [&](OpBuilder &eb, Location el, Value s) {
            auto [r, unclamped, inside] = band.keyRow(eb, el, r0, s, w.keyRows);
            (void)unclamped;
            return std::make_pair(r, inside);
          };
          Split kt = loadRows(b, l, splitBuffers(b, l, d, kTile), d, w.keys,
                              idx, keyAt, /*transposed=*/true);
          Split vt = loadRows(b, l, splitBuffers(b, l, dv, kTile), dv, w.values,
                              idx, keyAt, /*transposed=*/true);
          auto span = band.querySpan(b, l, r0);
          Split qs = splitBuffers(b, l, kTile, d);
          Split dys = splitBuffers(b, l, kTile, dv);
          Split pT = splitBuffers(b, l, kTile, kTile);
          Split dsT = splitBuffers(b, l, kTile, kTile);
          auto rowType = RankedTensorType::get({kTile}, f32);
          SmallVector<Value> init{zeroBuffer(b, l, kTile, d),
                                  zeroBuffer(b, l, kTile, dv),
                                  qs.hi,
                                  qs.lo,
                                  dys.hi,
                                  dys.lo,
                                  blockBuffer(b, l, kTile, kTile),
                                  blockBuffer(b, l, kTile, kTile),
                                  pT.hi,
                                  pT.lo,
                                  dsT.hi,
                                  dsT.lo,
                                  privateScratch(b, l, rowType, {}),
                                  privateScratch(b, l, rowType, {}),
                                  privateScratch(b, l, rowType, {})};
          SmallVector<Value> sums = buildLoop(
              b, l, indexConst(b, l, 0), span.tiles, init,
              [&](OpBuilder &jb, Location jl, ValueRange j, ValueRange it) {
                Value p0 = arith::AddIOp::create(
                    jb, jl, span.from,
                    arith::MulIOp::create(jb, jl, j[0], tile));
                // Query row t: its position (clamped) and whether it sees
                // any of the keys.
                auto position = [&](OpBuilder &pb, Location pl, Value t) {
                  Value p = arith::AddIOp::create(pb, pl, p0, t);
                  Value inside = arith::CmpIOp::create(
                      pb, pl, arith::CmpIPredicate::slt, p, span.to);
                  Value last = arith::SubIOp::create(pb, pl, w.steps,
                                                     indexConst(pb, pl, 1));
                  return std::make_pair(
                      arith::MinSIOp::create(pb, pl, p, last).getResult(),
                      inside);
                };
                Split q = loadRows(jb, jl, {it[2], it[3]}, d, op.getQ(), idx,
                                   position);
                Split dy = loadRows(jb, jl, {it[4], it[5]}, dv, op.getDy(), idx,
                                    position);
                SmallVector<Value> rowStats = threadLoop(
                    jb, jl, kTile, it.take_back(3),
                    [&](OpBuilder &tb, Location tl, ValueRange t,
                        ValueRange bufs) {
                      SmallVector<Value> pos = concatIndices(
                          idx, ValueRange{position(tb, tl, t[0]).first});
                      SmallVector<Value> out;
                      for (int64_t n = 0; n < 3; ++n)
                        out.push_back(insertAt(
                            tb, tl, extractAt(tb, tl, perQuery[1 + n], pos),
                            bufs[n], {t[0]}));
                      return out;
                    });
                Value s = squareProduct(jb, jl, q, kt, d, it[6]);
                Value dp = squareProduct(jb, jl, dy, vt, dv, it[7]);
                // An element a thread: P and scale dS, transposed.
                SmallVector<Value> pairs = threadLoop(
                    jb, jl, kWarp, ValueRange{it[8], it[9], it[10], it[11]},
                    [&](OpBuilder &tb, Location tl, ValueRange tid,
                        ValueRange bufs) {
                      return overElements(
                          tb, tl, tid[0], kTile, kTile, bufs,
                          [&](OpBuilder &eb, Location el, Value t, Value e,
                              ValueRange acc) {
                            auto [p, inside] = position(eb, el, t);
                            auto [begin, end] = band.keyRange(eb, el, p);
                            auto [rc, r, real] =
                                band.keyRow(eb, el, r0, e, w.keyRows);
                            (void)rc;
                            auto [x, visible] = band.logit(
                                eb, el, idx, p, begin, end, r,
                                arith::AndIOp::create(eb, el, real, inside),
                                extractAt(eb, el, s, {t, e}));
                            Value prob = arith::MulFOp::create(
                                eb, el,
                                math::ExpOp::create(
                                    eb, el,
                                    arith::SubFOp::create(
                                        eb, el, x,
                                        extractAt(eb, el, rowStats[0], {t}))),
                                extractAt(eb, el, rowStats[1], {t}));
                            Value dsLogit = arith::SelectOp::create(
                                eb, el, visible,
                                arith::MulFOp::create(
                                    eb, el, prob,
                                    arith::SubFOp::create(
                                        eb, el, extractAt(eb, el, dp, {t, e}),
                                        extractAt(eb, el, rowStats[2], {t}))),
                                zeroOf(eb, el, f32));
                            auto [pHi, pLo] = splitTf32(eb, el, prob);
                            auto [dHi, dLo] =
                                splitTf32(eb, el,
                                          arith::MulFOp::create(eb, el, w.scale,
                                                                dsLogit));
                            return SmallVector<Value>{
                                insertAt(eb, el, pHi, acc[0], {e, t}),
                                insertAt(eb, el, pLo, acc[1], {e, t}),
                                insertAt(eb, el, dHi, acc[2], {e, t}),
                                insertAt(eb, el, dLo, acc[3], {e, t})};
                          });
                    });
                Value dvAcc = accumulate(jb, jl, {pairs[0], pairs[1]}, dy,
                                         kTile, dv, it[1]);
                Value dkAcc = accumulate(jb, jl, {pairs[2], pairs[3]}, q, kTile,
                                         d, it[0]);
                SmallVector<Value> next{dkAcc, dvAcc, q.hi, q.lo,
                                        dy.hi, dy.lo, s,    dp};
                llvm::append_range(next, pairs);
                llvm::append_range(next, rowStats);
                return next;
              });
          // The tile's key rows written out: the cache's, then the
          // sequence's.
          SmallVector<Value> out;
          for (int64_t n = 0; n < 2; ++n) {
            int64_t width = n == 0 ? d : dv;
            Value acc = sums[n];
            auto value = [&](OpBuilder &eb, Location el, Value s,
                             Value c) -> Value {
              return extractAt(eb, el, acc, {s, c});
            };
            if (!op.getKCache()) {
              out.push_back(storeRows(
                  b, l, args[n], idx, kTile, width,
                  [&](OpBuilder &eb, Location el, Value s) {
                    return rowIn(eb, el, r0, s, w.steps);
                  },
                  value));
              continue;
            }
            out.push_back(storeRows(
                b, l, args[n], idx, kTile, width,
                [&](OpBuilder &eb, Location el, Value s) {
                  Value r = arith::AddIOp::create(eb, el, r0, s);
                  Value pos = arith::SubIOp::create(eb, el, r, w.cacheLen);
                  Value inSequence = arith::AndIOp::create(
                      eb, el,
                      arith::CmpIOp::create(eb, el, arith::CmpIPredicate::sge,
                                            r, w.cacheLen),
                      arith::CmpIOp::create(eb, el, arith::CmpIPredicate::slt,
                                            r, w.keyRows));
                  return std::make_pair(pos, inSequence);
                },
                value));
            out.push_back(storeRows(
                b, l, args[2 + n], idx, kTile, width,
                [&](OpBuilder &eb, Location el, Value s) {
                  return rowIn(eb, el, r0, s, w.cacheLen);
                },
                value));
          }
          if (op.getKCache())
            return SmallVector<Value>{out[0], out[2], out[1], out[3]};
          return out;
        });
    perKey.front().getDefiningOp()->setAttr(kGpuBlockAttrName,
                                            rewriter.getUnitAttr());

    SmallVector<Value> results{perQuery[0], perKey[0], perKey[1]};
    if (biasKind != BiasKind::None)
      results.push_back(WindowAttentionGradOnePassToLoops::reduceBiasGrad(
          rewriter, loc, op, perQuery[4], partialSizes, querySizes.size() - 1));
    if (op.getKCache())
      llvm::append_values(results, perKey[2], perKey[3]);
    rewriter.replaceOp(op, results);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// recur.window_attention_grad
//===----------------------------------------------------------------------===//

/// A tensor of zeros of `type` (dynamic sizes from `sizes`, one per
/// dimension), filled by a nest of independent loops.
Value zerosOf(OpBuilder &b, Location loc, RankedTensorType type,
              ArrayRef<Value> sizes) {
  Value zero = zeroOf(b, loc, type.getElementType());
  return buildNest(
      b, loc, sizes, emptyLike(b, loc, type, sizes),
      [&](OpBuilder &nb, Location l, ValueRange ivs, ValueRange args) {
        return SmallVector<Value>{insertAt(nb, l, zero, args[0], ivs)};
      })[0];
}

/// Rows of a transposition that go together: the block's source rows (or
/// destination rows) stay in the first-level cache while it sweeps the
/// columns.
constexpr int64_t kTransposeBlock = 8;

/// The index of column `col` of a transposed `[lead..., E, columns]`
/// (after `lead`, at channel `e`): `{e, col}`, or with `panelLanes` (the
/// panel layout `[lead..., columns / lanes, E, lanes]`) `{col / lanes, e,
/// col % lanes}`.
SmallVector<Value> transposedAt(OpBuilder &b, Location loc, ValueRange lead,
                                Value e, Value col, int64_t panelLanes) {
  if (!panelLanes)
    return concatIndices(lead, {e, col});
  Value lanes = indexConst(b, loc, panelLanes);
  return concatIndices(lead, {arith::DivUIOp::create(b, loc, col, lanes), e,
                              arith::RemUIOp::create(b, loc, col, lanes)});
}

/// Copies between `[lead..., R, E]` and the columns [offset, offset + R) of
/// `[lead..., E, columns]` (or of its panel layout, see transposedAt): into
/// the transposed form (`intoTransposed`, `src` the rows) or out of it
/// (not from panels), kTransposeBlock rows at a time, each block of a
/// leading index an independent iteration. Returns the new `dst`.
Value copyTransposed(OpBuilder &b, Location loc, Value src, Value dst,
                     ValueRange lead, Value rows, Value width, Value offset,
                     bool intoTransposed, int64_t panelLanes = 0) {
  assert((intoTransposed || !panelLanes) &&
         "copies out of the transposed rows, never out of panels");
  MLIRContext *ctx = b.getContext();
  Value blocks = affine::AffineApplyOp::create(
      b, loc,
      AffineMap::get(0, 1,
                     getAffineSymbolExpr(0, ctx).ceilDiv(kTransposeBlock)),
      ValueRange{rows});
  SmallVector<Value> ubs(lead);
  ubs.push_back(blocks);
  return buildNest(
      b, loc, ubs, dst,
      [&](OpBuilder &nb, Location l, ValueRange ivs, ValueRange args) {
        ValueRange at = ivs.drop_back();
        Value r0 = arith::MulIOp::create(nb, l, ivs.back(),
                                         indexConst(nb, l, kTransposeBlock));
        Value n =
            arith::MinUIOp::create(nb, l, indexConst(nb, l, kTransposeBlock),
                                   arith::SubIOp::create(nb, l, rows, r0));
        Value zero = indexConst(nb, l, 0);
        return buildLoop(
            nb, l, zero, width, args,
            [&](OpBuilder &eb, Location el, ValueRange e, ValueRange acc) {
              return buildLoop(
                  eb, el, zero, n, acc,
                  [&](OpBuilder &jb, Location jl, ValueRange j,
                      ValueRange out) {
                    Value r = arith::AddIOp::create(jb, jl, r0, j[0]);
                    Value col = arith::AddIOp::create(jb, jl, offset, r);
                    SmallVector<Value> rowAt = concatIndices(at, {r, e[0]});
                    SmallVector<Value> colAt =
                        transposedAt(jb, jl, at, e[0], col, panelLanes);
                    Value x =
                        extractAt(jb, jl, src, intoTransposed ? rowAt : colAt);
                    return SmallVector<Value>{insertAt(
                        jb, jl, x, out[0], intoTransposed ? colAt : rowAt)};
                  });
            });
      })[0];
}

/// `[lead..., T, e]` from the columns [first, first + T) of a transposed
/// accumulator `[lead..., e, columns]` of WindowAttentionGradToLoops (the
/// cache's cotangent: the first C; the sequence's: the T after them).
Value untranspose(OpBuilder &b, Location loc, Value transposed,
                  RankedTensorType type, ArrayRef<Value> sizes, Value first) {
  int64_t rank = type.getRank();
  return copyTransposed(b, loc, transposed, emptyLike(b, loc, type, sizes),
                        ArrayRef<Value>(sizes).drop_back(2), sizes[rank - 2],
                        sizes[rank - 1], first, /*intoTransposed=*/false);
}

/// The register blocks of the tiled window attention's products (forward
/// and backward): kBlockRows x kBlockCols vector accumulators.
constexpr int64_t kBlockRows = 4, kBlockCols = 3;

/// The vector lanes of `elem` in a 256-bit register.
int64_t vectorLanes(Type elem) { return 256 / elem.getIntOrFloatBitWidth(); }

/// The shape `[lead..., e, ?]` of the transposed form of `[lead..., T,
/// e]`.
SmallVector<int64_t> transposedShape(RankedTensorType type) {
  SmallVector<int64_t> shape(type.getShape().drop_back(2));
  shape.append({type.getShape().back(), ShapedType::kDynamic});
  return shape;
}

/// `[lead..., e, R]` from `seq` `[lead..., T, e]` after `cache` `[lead...,
/// C, e]` (when given), transposed, its R >= C + T columns zero past C + T;
/// with `panelLanes`, in the panel layout `[lead..., R / lanes, e, lanes]`
/// (R a multiple of lanes), where a vector of consecutive keys at each
/// channel follows the one of the channel before.
Value transposedAfterCache(OpBuilder &b, Location loc, Value cache, Value seq,
                           Value cacheLen, Value columns,
                           int64_t panelLanes = 0) {
  auto type = cast<RankedTensorType>(seq.getType());
  int64_t rank = type.getRank();
  SmallVector<Value> sizes = dimSizes(b, loc, seq);
  SmallVector<Value> lead(ArrayRef<Value>(sizes).drop_back(2));
  Value width = sizes[rank - 1];
  SmallVector<int64_t> shape(type.getShape().drop_back(2));
  SmallVector<Value> outSizes(lead);
  if (panelLanes) {
    shape.append({ShapedType::kDynamic, type.getDimSize(rank - 1), panelLanes});
    outSizes.append(
        {affine::AffineApplyOp::create(
             b, loc,
             AffineMap::get(
                 0, 1,
                 getAffineSymbolExpr(0, b.getContext()).floorDiv(panelLanes)),
             ValueRange{columns}),
         width, indexConst(b, loc, panelLanes)});
  } else {
    shape = transposedShape(type);
    outSizes.append({width, columns});
  }
  Value out = emptyLike(
      b, loc, RankedTensorType::get(shape, type.getElementType()), outSizes);
  Value zero = indexConst(b, loc, 0);
  if (cache)
    out = copyTransposed(b, loc, cache, out, lead, cacheLen, width, zero,
                         /*intoTransposed=*/true, panelLanes);
  out = copyTransposed(b, loc, seq, out, lead, sizes[rank - 2], width, cacheLen,
                       /*intoTransposed=*/true, panelLanes);
  // The padding columns.
  Value used = arith::AddIOp::create(b, loc, cacheLen, sizes[rank - 2]);
  Value zeroF = zeroOf(b, loc, type.getElementType());
  SmallVector<Value> ubs(lead);
  ubs.push_back(width);
  return buildNest(
      b, loc, ubs, out,
      [&](OpBuilder &nb, Location l, ValueRange ivs, ValueRange args) {
        return buildLoop(
            nb, l, used, columns, args,
            [&](OpBuilder &cb, Location cl, ValueRange c, ValueRange acc) {
              return SmallVector<Value>{
                  insertAt(cb, cl, zeroF, acc[0],
                           transposedAt(cb, cl, ivs.drop_back(), ivs.back(),
                                        c[0], panelLanes))};
            });
      })[0];
}

/// The body of forBlocks: the first row and column of a block, its static
/// extent, and the carried values.
using GridBody = function_ref<SmallVector<Value>(
    OpBuilder &, Location, Value row, int64_t rows, Value col, int64_t cols,
    ValueRange args)>;

/// Covers an m x n grid with blocks of kBlockRows x kBlockCols,
/// then blocks one row or one column wide over what is left. (Going down
/// the columns first, so that what a block reads of its column stays in
/// the first-level cache for the next, measured no faster.)
SmallVector<Value> forBlocks(OpBuilder &b, Location loc, Value m, Value n,
                             ValueRange iterArgs, GridBody body) {
  return buildBlockedLoop(
      b, loc, m, kBlockRows, iterArgs,
      [&](OpBuilder &rb, Location rl, ArrayRef<Value> rows, ValueRange args) {
        return buildBlockedLoop(rb, rl, n, kBlockCols, args,
                                [&](OpBuilder &cb, Location cl,
                                    ArrayRef<Value> cols, ValueRange inner) {
                                  return body(cb, cl, rows[0], rows.size(),
                                              cols[0], cols.size(), inner);
                                });
      });
}

/// What the tiled window attention (the forward on the CPU, and
/// window_attention_grad) shares over a whole op: its band, its types, and
/// the keys and values transposed, the cache first, zeros past C + T up to
/// whole vectors of keys and one more cache line: in panels
/// ([lead..., columns / lanes, e, lanes]) for the products that go over
/// the channels (Q K^T, and dY V^T in the backward), as rows ([lead..., e,
/// columns]) for those that go over the keys (P V, and G K in the
/// backward). The forward needs the keys' panels and the values' rows, the
/// backward the keys in both layouts and the values' panels.
struct WindowTiling {
  template <typename OpT>
  WindowTiling(OpBuilder &b, Location loc, OpT op, bool backward)
      : window(op.getWindowAttr().getInt()),
        blockLen(op.getBlockAttr().getInt()), includeSelf(op.getIncludeSelf()) {
    auto qType = cast<RankedTensorType>(op.getQ().getType());
    elem = qType.getElementType();
    int64_t rank = qType.getRank();
    lanes = vectorLanes(elem);
    vecType = VectorType::get({lanes}, elem);
    // The widest tile: its rows' bands (at most maxDelta + 1 keys each,
    // one more start per row) and a partial vector at each end.
    maxDelta = window + blockLen;
    tileWidth =
        llvm::divideCeil(maxDelta + kQueryTile + 2 * lanes, lanes) * lanes;
    rowType = RankedTensorType::get({ShapedType::kDynamic}, elem);
    tileType = RankedTensorType::get({kQueryTile, ShapedType::kDynamic}, elem);
    SmallVector<Value> qSizes = dimSizes(b, loc, op.getQ());
    lead.assign(qSizes.begin(), qSizes.end() - 2);
    steps = qSizes[rank - 2];
    d = qSizes[rank - 1];
    dv = dimSize(b, loc, op.getV(), rank - 1);
    cacheLen = op.getKCache() ? dimSize(b, loc, op.getKCache(), rank - 2)
                              : indexConst(b, loc, 0);
    scale = attentionScale(b, loc, elem, op.getScale(), d);
    MLIRContext *ctx = b.getContext();
    AffineExpr s0 = getAffineSymbolExpr(0, ctx),
               s1 = getAffineSymbolExpr(1, ctx);
    // The extra cache line keeps the rows of a transposed tensor from
    // starting a multiple of 4 KiB apart (C + T a multiple of 1024 f32, say):
    // the channels a product reads at one key would all fall in the same set
    // of the first-level cache.
    columns = affine::AffineApplyOp::create(
        b, loc,
        AffineMap::get(0, 2, (s0 + s1).ceilDiv(lanes) * lanes + 2 * lanes),
        ValueRange{cacheLen, steps});
    kP = transposedAfterCache(b, loc, op.getKCache(), op.getK(), cacheLen,
                              columns, lanes);
    if (backward) {
      kT = transposedAfterCache(b, loc, op.getKCache(), op.getK(), cacheLen,
                                columns);
      vP = transposedAfterCache(b, loc, op.getVCache(), op.getV(), cacheLen,
                                columns, lanes);
    } else {
      vT = transposedAfterCache(b, loc, op.getVCache(), op.getV(), cacheLen,
                                columns);
    }
    tileRows = indexConst(b, loc, kQueryTile);
    tileCols = indexConst(b, loc, tileWidth);
    deltas = indexConst(b, loc, maxDelta + 1);
    lanesV = indexConst(b, loc, lanes);
  }

  /// The tiles of a leading index: ceil(T / kQueryTile).
  Value tiles(OpBuilder &b, Location loc) const {
    return affine::AffineApplyOp::create(
        b, loc,
        AffineMap::get(
            0, 1, getAffineSymbolExpr(0, b.getContext()).ceilDiv(kQueryTile)),
        ValueRange{steps});
  }

  /// A row of scratch holding value(delta) for each delta 0 .. maxDelta
  /// (the position bias, or zeros to sum its cotangent into).
  Value perDelta(OpBuilder &b, Location loc, IndexFn value) const {
    return fillRow(b, loc, privateScratch(b, loc, rowType, {deltas}), {},
                   deltas, value);
  }

  /// Queries of a tile: its keys (the union of its rows' bands) are read,
  /// and in the backward its key and value cotangents written, once for all
  /// its rows. (32 measured no faster at W = 512, d = 64.)
  static constexpr int64_t kQueryTile = 16;

  int64_t window, blockLen, maxDelta, tileWidth, lanes;
  bool includeSelf;
  Type elem;
  VectorType vecType;
  RankedTensorType rowType, tileType;
  SmallVector<Value> lead;
  Value steps, d, dv, cacheLen, scale, columns, kP, vP, kT, vT, tileRows,
      tileCols, deltas, lanesV;
};

/// One tile of WindowTiling::kQueryTile queries of leading index `ld`: rows
/// [p0, p0 + rows) (rows < kQueryTile in the last tile) and the keys [cb,
/// ce) of the union of their bands, cut to whole vectors (`chunks` of them).
/// Its products go by register blocks of kBlockRows x kBlockCols
/// vectors (vector.fma) over consecutive keys.
class WindowTile {
public:
  WindowTile(const WindowTiling &t, OpBuilder &b, Location loc, ValueRange ld,
             Value tile)
      : t(t), b(b), loc(loc), ld(ld) {
    p0 = arith::MulIOp::create(b, loc, tile, t.tileRows);
    rows = arith::MinUIOp::create(b, loc, t.tileRows,
                                  arith::SubIOp::create(b, loc, t.steps, p0));
    Value pLast = arith::SubIOp::create(
        b, loc, arith::AddIOp::create(b, loc, p0, rows), indexConst(b, loc, 1));
    Value first = range(b, loc, p0).first;
    Value last = range(b, loc, pLast).second;
    cb = arith::MulIOp::create(
        b, loc, arith::DivUIOp::create(b, loc, first, t.lanesV), t.lanesV);
    Value ce = arith::MulIOp::create(
        b, loc,
        arith::CeilDivUIOp::create(
            b, loc, arith::MaxSIOp::create(b, loc, last, first), t.lanesV),
        t.lanesV);
    width = arith::SubIOp::create(b, loc, ce, cb);
    chunks = arith::DivUIOp::create(b, loc, width, t.lanesV);
    firstChunk = arith::DivUIOp::create(b, loc, cb, t.lanesV);
    zero = indexConst(b, loc, 0);
    zeroF = zeroOf(b, loc, t.elem);
  }

  /// `[tile, n]`: the tile's rows of `source` `[lead..., T, n]`, zeros past
  /// T.
  Value rowsOf(Value source, Value n) {
    Value out = privateScratch(b, loc, t.tileType, {t.tileRows, n});
    return buildLoop(
        b, loc, zero, t.tileRows, out,
        [&](OpBuilder &ib, Location il, ValueRange i, ValueRange acc) {
          Value inside = arith::CmpIOp::create(
              ib, il, arith::CmpIPredicate::ult, i[0], rows);
          Value p = arith::AddIOp::create(ib, il, p0, i[0]);
          return SmallVector<Value>{fillRow(
              ib, il, acc[0], {i[0]}, n,
              [&](OpBuilder &eb, Location el, Value e) -> Value {
                auto ifOp = scf::IfOp::create(
                    eb, el, inside,
                    [&](OpBuilder &xb, Location xl) {
                      scf::YieldOp::create(
                          xb, xl, extractAt(xb, xl, source, at({p, e})));
                    },
                    [&](OpBuilder &xb, Location xl) {
                      scf::YieldOp::create(xb, xl, zeroF);
                    });
                return ifOp.getResult(0);
              })};
        })[0];
  }

  /// `[tile, width]`: the rows of `x` `[tile, n]` times the tile's columns
  /// of `yP`, panels `[lead..., columns / lanes, n, lanes]`; register
  /// blocks of rows x vectors of keys, over the n channels (each vector of
  /// keys read from consecutive addresses).
  Value rowsTimesKeys(Value x, Value yP, Value n) {
    Value out = privateScratch(b, loc, t.tileType, {t.tileRows, t.tileCols});
    return forBlocks(
        b, loc, t.tileRows, chunks, out,
        [&](OpBuilder &gb, Location gl, Value i0, int64_t nr, Value c0,
            int64_t nc, ValueRange acc) {
          SmallVector<Value> init(nr * nc, splat(gb, gl, zeroF));
          SmallVector<Value> sums = fmaBlock(
              gb, gl, n, init, nr, nc,
              [&](OpBuilder &kb, Location kl, Value k, int64_t i) {
                return splat(kb, kl,
                             extractAt(kb, kl, x, {plus(kb, kl, i0, i), k}));
              },
              [&](OpBuilder &kb, Location kl, Value k, int64_t c) {
                Value chunk = arith::AddIOp::create(kb, kl, firstChunk,
                                                    plus(kb, kl, c0, c));
                return read(kb, kl, yP, at({chunk, k, zero}));
              });
          Value written = acc[0];
          for (int64_t i = 0; i < nr; ++i)
            for (int64_t c = 0; c < nc; ++c)
              written =
                  write(gb, gl, sums[i * nc + c], written,
                        {plus(gb, gl, i0, i), keyAt(gb, gl, zero, c0, c)});
          return SmallVector<Value>{written};
        })[0];
  }

  /// `[tile, n]`: out[i, e] = sum over the tile's keys of r[i, key] yT[e,
  /// key], `r` `[tile, width]`; register blocks of rows x channels, over
  /// the vectors of keys, each summed across its lanes at the end.
  Value rowsTimesColumns(Value r, Value yT, Value n) {
    Value out = privateScratch(b, loc, t.tileType, {t.tileRows, n});
    return forBlocks(
        b, loc, t.tileRows, n, out,
        [&](OpBuilder &gb, Location gl, Value i0, int64_t nr, Value e0,
            int64_t ne, ValueRange acc) {
          SmallVector<Value> init(nr * ne, splat(gb, gl, zeroF));
          SmallVector<Value> sums = fmaBlock(
              gb, gl, chunks, init, nr, ne,
              [&](OpBuilder &kb, Location kl, Value k, int64_t i) {
                return read(kb, kl, r,
                            {plus(kb, kl, i0, i), keyAt(kb, kl, zero, k, 0)});
              },
              [&](OpBuilder &kb, Location kl, Value k, int64_t e) {
                return read(kb, kl, yT,
                            at({plus(kb, kl, e0, e), keyAt(kb, kl, cb, k, 0)}));
              });
          Value written = acc[0];
          for (int64_t i = 0; i < nr; ++i)
            for (int64_t e = 0; e < ne; ++e) {
              Value sum = vector::ReductionOp::create(
                  gb, gl, vector::CombiningKind::ADD, sums[i * ne + e],
                  arith::FastMathFlags::reassoc);
              written = insertAt(gb, gl, sum, written,
                                 {plus(gb, gl, i0, i), plus(gb, gl, e0, e)});
            }
          return SmallVector<Value>{written};
        })[0];
  }

  /// accT[lead..., e, cb..ce) += x^T r: `x` `[tile, n]`, `r` `[tile,
  /// width]`; register blocks of channels x vectors of keys, over the
  /// tile's rows.
  Value addChannelsTimesRows(Value accT, Value x, Value r, Value n) {
    return forBlocks(
        b, loc, n, chunks, accT,
        [&](OpBuilder &gb, Location gl, Value e0, int64_t ne, Value c0,
            int64_t nc, ValueRange acc) {
          SmallVector<Value> init;
          for (int64_t e = 0; e < ne; ++e)
            for (int64_t c = 0; c < nc; ++c)
              init.push_back(
                  read(gb, gl, acc[0],
                       at({plus(gb, gl, e0, e), keyAt(gb, gl, cb, c0, c)})));
          SmallVector<Value> sums = fmaBlock(
              gb, gl, t.tileRows, init, ne, nc,
              [&](OpBuilder &kb, Location kl, Value k, int64_t e) {
                return splat(kb, kl,
                             extractAt(kb, kl, x, {k, plus(kb, kl, e0, e)}));
              },
              [&](OpBuilder &kb, Location kl, Value k, int64_t c) {
                return read(kb, kl, r, {k, keyAt(kb, kl, zero, c0, c)});
              });
          Value written = acc[0];
          for (int64_t e = 0; e < ne; ++e)
            for (int64_t c = 0; c < nc; ++c)
              written =
                  write(gb, gl, sums[e * nc + c], written,
                        at({plus(gb, gl, e0, e), keyAt(gb, gl, cb, c0, c)}));
          return SmallVector<Value>{written};
        })[0];
  }

  /// The softmax of each row of `logits` `[tile, width]` over its band, in
  /// place: scale times the logit plus the bias of its delta (from
  /// `biasOfDelta`, when given), the largest first, then exp(x - max)
  /// normalized; zeros outside the band, and a zero row for a row that
  /// sees no key (or lies past T).
  Value softmaxRows(Value logits, Value biasOfDelta) {
    auto reassoc = arith::FastMathFlags::reassoc;
    return buildLoop(
        b, loc, zero, t.tileRows, logits,
        [&](OpBuilder &rb, Location rl, ValueRange i, ValueRange acc) {
          Value p, lo, hi;
          std::tie(p, lo, hi) = band(rb, rl, i[0]);
          auto rowAt = [&](Value j) { return SmallVector<Value>{i[0], j}; };
          Value negInf = floatConst(rb, rl, t.elem,
                                    -std::numeric_limits<double>::infinity());
          SmallVector<Value> biased = buildLoop(
              rb, rl, lo, hi, ValueRange{acc[0], negInf},
              [&](OpBuilder &jb, Location jl, ValueRange j, ValueRange row) {
                Value x = arith::MulFOp::create(
                    jb, jl, t.scale, extractAt(jb, jl, row[0], rowAt(j[0])));
                if (biasOfDelta)
                  x = arith::AddFOp::create(
                      jb, jl, x,
                      extractAt(jb, jl, biasOfDelta,
                                {deltaAt(jb, jl, p, j[0])}));
                return SmallVector<Value>{
                    insertAt(jb, jl, x, row[0], rowAt(j[0])),
                    arith::MaximumFOp::create(jb, jl, row[1], x)};
              });
          SmallVector<Value> weights = buildLoop(
              rb, rl, lo, hi, ValueRange{biased[0], zeroF},
              [&](OpBuilder &jb, Location jl, ValueRange j, ValueRange row) {
                Value w = math::ExpOp::create(
                    jb, jl,
                    arith::SubFOp::create(
                        jb, jl, extractAt(jb, jl, row[0], rowAt(j[0])),
                        biased[1]));
                return SmallVector<Value>{
                    insertAt(jb, jl, w, row[0], rowAt(j[0])),
                    arith::AddFOp::create(jb, jl, row[1], w, reassoc)};
              });
          // An empty band sums to 0: its row is all zeros below.
          Value inv = arith::DivFOp::create(
              rb, rl, floatConst(rb, rl, t.elem, 1.0), weights[1]);
          Value row = buildLoop(
              rb, rl, lo, hi, weights[0],
              [&](OpBuilder &jb, Location jl, ValueRange j, ValueRange r) {
                Value w = arith::MulFOp::create(
                    jb, jl, extractAt(jb, jl, r[0], rowAt(j[0])), inv);
                return SmallVector<Value>{
                    insertAt(jb, jl, w, r[0], rowAt(j[0]))};
              })[0];
          auto zeroFill = [&](Value tensor, Value from, Value to) {
            return buildLoop(
                rb, rl, from, to, tensor,
                [&](OpBuilder &jb, Location jl, ValueRange j, ValueRange r) {
                  return SmallVector<Value>{
                      insertAt(jb, jl, zeroF, r[0], rowAt(j[0]))};
                })[0];
          };
          row = zeroFill(row, zero, lo);
          return SmallVector<Value>{zeroFill(row, hi, width)};
        })[0];
  }

  /// `dst[lead..., p0 + i, :n] = rowsTile[i, :n]` for the tile's rows.
  Value storeRows(Value dst, Value rowsTile, Value n) {
    return buildLoop(
        b, loc, zero, rows, dst,
        [&](OpBuilder &ib, Location il, ValueRange i, ValueRange acc) {
          Value p = arith::AddIOp::create(ib, il, p0, i[0]);
          return SmallVector<Value>{
              fillRow(ib, il, acc[0], at({p}), n,
                      [&](OpBuilder &eb, Location el, Value e) {
                        return extractAt(eb, el, rowsTile, {i[0], e});
                      })};
        })[0];
  }

  /// Row i's position p and its band [lo, hi) among the tile's keys
  /// (empty past T).
  std::tuple<Value, Value, Value> band(OpBuilder &rb, Location rl, Value i) {
    Value p = arith::AddIOp::create(rb, rl, p0, i);
    auto [begin, end] = range(rb, rl, p);
    Value inside =
        arith::CmpIOp::create(rb, rl, arith::CmpIPredicate::ult, i, rows);
    Value lo = arith::MinSIOp::create(
        rb, rl, arith::SubIOp::create(rb, rl, begin, cb), width);
    Value hi = arith::MinSIOp::create(
        rb, rl,
        arith::MaxSIOp::create(rb, rl, arith::SubIOp::create(rb, rl, end, cb),
                               lo),
        width);
    hi = arith::SelectOp::create(rb, rl, inside, hi, lo);
    return {p, lo, hi};
  }

  /// The delta p - p' of position p and the tile's key j: p + C - (cb + j).
  Value deltaAt(OpBuilder &db, Location dl, Value p, Value j) {
    return arith::SubIOp::create(db, dl,
                                 arith::AddIOp::create(db, dl, p, t.cacheLen),
                                 arith::AddIOp::create(db, dl, cb, j));
  }

  /// `ld` followed by `tail`.
  SmallVector<Value> at(ValueRange tail) { return concatIndices(ld, tail); }

  const WindowTiling &t;
  OpBuilder &b;
  Location loc;
  ValueRange ld;
  Value p0, rows, cb, width, chunks, firstChunk, zero, zeroF;

private:
  std::pair<Value, Value> range(OpBuilder &rb, Location rl, Value p) {
    return windowKeyRange(rb, rl, p, t.cacheLen, t.window, t.blockLen,
                          t.includeSelf);
  }
  Value read(OpBuilder &rb, Location rl, Value tensor, ValueRange idx) {
    return vector::TransferReadOp::create(rb, rl, t.vecType, tensor, idx,
                                          /*padding=*/std::nullopt,
                                          ArrayRef<bool>{true});
  }
  Value write(OpBuilder &wb, Location wl, Value vec, Value tensor,
              ValueRange idx) {
    return vector::TransferWriteOp::create(wb, wl, vec, tensor, idx,
                                           ArrayRef<bool>{true})
        .getResult();
  }
  Value splat(OpBuilder &sb, Location sl, Value x) {
    return vector::BroadcastOp::create(sb, sl, t.vecType, x);
  }
  static Value plus(OpBuilder &pb, Location pl, Value x, int64_t c) {
    return arith::AddIOp::create(pb, pl, x, indexConst(pb, pl, c));
  }
  /// base + (k + extra) * lanes: the first key of vector k + extra.
  Value keyAt(OpBuilder &ob, Location ol, Value base, Value k, int64_t extra) {
    return arith::AddIOp::create(
        ob, ol, base,
        arith::MulIOp::create(ob, ol, plus(ob, ol, k, extra), t.lanesV));
  }
};

/// window_attention on the CPU (the pass's window-tiles option): per
/// leading index, tiles of WindowTiling::kQueryTile queries over the union
/// of their bands: S = Q K^T in register blocks, the softmax of each row
/// over its band (the bias read per delta), then O = P V in register blocks
/// summed across lanes. Sums over channels and keys may be reassociated and
/// products fuse with them, so results agree with the row-at-a-time loops
/// to rounding.
struct WindowAttentionTiledToLoops : OpRewritePattern<WindowAttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(WindowAttentionOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto outType = cast<RankedTensorType>(op.getType());
    WindowTiling tiling(rewriter, loc, op, /*backward=*/false);
    Value out =
        emptyLike(rewriter, loc, outType, dimSizes(rewriter, loc, op.getV()));
    SmallVector<Value> results = buildNest(
        rewriter, loc, tiling.lead, out,
        [&](OpBuilder &b, Location l, ValueRange ld, ValueRange args) {
          Value bias;
          if (op.getBiasKind() != BiasKind::None)
            bias = tiling.perDelta(
                b, l, [&](OpBuilder &fb, Location fl, Value delta) {
                  return positionBias(fb, fl, op, ld.back(), delta);
                });
          return buildLoop(
              b, l, indexConst(b, l, 0), tiling.tiles(b, l), args,
              [&](OpBuilder &tb, Location tl, ValueRange tIv, ValueRange it) {
                WindowTile tile(tiling, tb, tl, ld, tIv[0]);
                Value probs = tile.softmaxRows(
                    tile.rowsTimesKeys(tile.rowsOf(op.getQ(), tiling.d),
                                       tiling.kP, tiling.d),
                    bias);
                Value o = tile.rowsTimesColumns(probs, tiling.vT, tiling.dv);
                return SmallVector<Value>{tile.storeRows(it[0], o, tiling.dv)};
              });
        });
    rewriter.replaceOp(op, results);
    return success();
  }
};

/// The fused backward of window_attention. Per leading index (batch, head)
/// the queries go by WindowTile tiles; per tile, with Q, dY its rows:
///   P = the softmax of S = Q K^T over each row's band (as the tiled
///   forward computes it);
///   G = dY V^T, then per row G = scale P (G - sum P G), and the bias's
///   cotangent dS = P (G - sum P G) summed per delta;
///   dV^T[:, cb:ce] += dY^T P,  dK^T[:, cb:ce] += Q^T G,  dq = G K.
/// The key and value cotangents accumulate transposed, like the keys. A
/// position bias depends on delta = p - p' only: per leading index it is
/// read once per delta (0 .. window + block), and its cotangent summed per
/// delta before it goes to the table's buckets (t5) or the slope (alibi).
/// Finally the cotangents are cut into the sequence's and the cache's, and
/// the bias's summed over the leading dimensions but the heads.
struct WindowAttentionGradToLoops : OpRewritePattern<WindowAttentionGradOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(WindowAttentionGradOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto qType = cast<RankedTensorType>(op.getQ().getType());
    auto kType = cast<RankedTensorType>(op.getK().getType());
    auto vType = cast<RankedTensorType>(op.getV().getType());
    WindowTiling tiling(rewriter, loc, op, /*backward=*/true);
    Type elem = tiling.elem;
    SmallVector<Value> kSizes = dimSizes(rewriter, loc, op.getK());
    SmallVector<Value> vSizes = dimSizes(rewriter, loc, op.getV());
    ArrayRef<Value> lead = tiling.lead;
    Value dkT =
        zerosOf(rewriter, loc, cast<RankedTensorType>(tiling.kT.getType()),
                dimSizes(rewriter, loc, tiling.kT));
    Value dvT = zerosOf(rewriter, loc,
                        RankedTensorType::get(transposedShape(vType), elem),
                        concatIndices(lead, {tiling.dv, tiling.columns}));
    Value dq =
        emptyLike(rewriter, loc, qType, dimSizes(rewriter, loc, op.getQ()));
    BiasKind biasKind = op.getBiasKind();
    int64_t buckets = op.getNumBuckets() ? op.getNumBucketsAttr().getInt() : 32;
    int64_t maxDistance =
        op.getMaxDistance() ? op.getMaxDistanceAttr().getInt() : 128;
    // The bias's cotangent per leading index: [lead..., buckets] (t5) or
    // [lead...] (alibi).
    SmallVector<Value> partialSizes(lead);
    SmallVector<int64_t> partialShape(qType.getShape().drop_back(2));
    if (biasKind == BiasKind::T5) {
      partialSizes.push_back(indexConst(rewriter, loc, buckets));
      partialShape.push_back(buckets);
    }
    auto partialType = RankedTensorType::get(partialShape, elem);
    SmallVector<Value> carried{dq, dkT, dvT};
    if (biasKind != BiasKind::None)
      carried.push_back(zerosOf(rewriter, loc, partialType, partialSizes));
    auto reassoc = arith::FastMathFlags::reassoc;

    SmallVector<Value> results = buildNest(
        rewriter, loc, lead, carried,
        [&](OpBuilder &b, Location l, ValueRange ld,
            ValueRange args) -> SmallVector<Value> {
          Value zero = indexConst(b, l, 0);
          Value zeroF = zeroOf(b, l, elem);
          // The bias of each delta, and its cotangent summed per delta.
          Value biasOfDelta, gradOfDelta;
          if (biasKind != BiasKind::None) {
            biasOfDelta = tiling.perDelta(
                b, l, [&](OpBuilder &fb, Location fl, Value delta) {
                  return positionBias(fb, fl, op, ld.back(), delta);
                });
            gradOfDelta = tiling.perDelta(
                b, l, [&](OpBuilder &, Location, Value) { return zeroF; });
          }
          SmallVector<Value> tileArgs(args.take_front(3));
          if (gradOfDelta)
            tileArgs.push_back(gradOfDelta);
          SmallVector<Value> swept = buildLoop(
              b, l, zero, tiling.tiles(b, l), tileArgs,
              [&](OpBuilder &tb, Location tl, ValueRange tIv,
                  ValueRange it) -> SmallVector<Value> {
                WindowTile tile(tiling, tb, tl, ld, tIv[0]);
                Value qTile = tile.rowsOf(op.getQ(), tiling.d);
                Value dyTile = tile.rowsOf(op.getDy(), tiling.dv);
                Value probs = tile.softmaxRows(
                    tile.rowsTimesKeys(qTile, tiling.kP, tiling.d),
                    biasOfDelta);
                // G = dY V^T, then G = scale P (G - sum P G) and the bias's
                // cotangent per delta.
                Value grads = tile.rowsTimesKeys(dyTile, tiling.vP, tiling.dv);
                SmallVector<Value> rowArgs{grads};
                if (gradOfDelta)
                  rowArgs.push_back(it[3]);
                SmallVector<Value> afterRows = buildLoop(
                    tb, tl, zero, tiling.tileRows, rowArgs,
                    [&](OpBuilder &rb, Location rl, ValueRange i,
                        ValueRange acc) {
                      Value p, lo, hi;
                      std::tie(p, lo, hi) = tile.band(rb, rl, i[0]);
                      auto rowAt = [&](Value j) {
                        return SmallVector<Value>{i[0], j};
                      };
                      Value pdp = buildLoop(
                          rb, rl, lo, hi, zeroF,
                          [&](OpBuilder &jb, Location jl, ValueRange j,
                              ValueRange sum) {
                            Value x = arith::MulFOp::create(
                                jb, jl, extractAt(jb, jl, probs, rowAt(j[0])),
                                extractAt(jb, jl, acc[0], rowAt(j[0])),
                                reassoc);
                            return SmallVector<Value>{arith::AddFOp::create(
                                jb, jl, sum[0], x, reassoc)};
                          })[0];
                      // dS = P (G - sum P G) over the band, by delta, read
                      // before G is scaled in place.
                      auto dSAt = [&](OpBuilder &jb, Location jl, Value g,
                                      Value j) -> Value {
                        return arith::MulFOp::create(
                            jb, jl, extractAt(jb, jl, probs, rowAt(j)),
                            arith::SubFOp::create(
                                jb, jl, extractAt(jb, jl, g, rowAt(j)), pdp));
                      };
                      Value byDelta;
                      if (gradOfDelta)
                        byDelta = buildLoop(
                            rb, rl, lo, hi, acc[1],
                            [&](OpBuilder &jb, Location jl, ValueRange j,
                                ValueRange g) {
                              Value delta = tile.deltaAt(jb, jl, p, j[0]);
                              Value sum = arith::AddFOp::create(
                                  jb, jl, extractAt(jb, jl, g[0], {delta}),
                                  dSAt(jb, jl, acc[0], j[0]));
                              return SmallVector<Value>{
                                  insertAt(jb, jl, sum, g[0], {delta})};
                            })[0];
                      // G = scale dS over the tile's keys (0 outside the
                      // band, where P is).
                      Value scaled =
                          buildLoop(rb, rl, zero, tile.width, acc[0],
                                    [&](OpBuilder &jb, Location jl,
                                        ValueRange j, ValueRange row) {
                                      Value g = arith::MulFOp::create(
                                          jb, jl, tiling.scale,
                                          dSAt(jb, jl, row[0], j[0]));
                                      return SmallVector<Value>{insertAt(
                                          jb, jl, g, row[0], rowAt(j[0]))};
                                    })[0];
                      if (!gradOfDelta)
                        return SmallVector<Value>{scaled};
                      return SmallVector<Value>{scaled, byDelta};
                    });
                grads = afterRows[0];
                Value dvAcc =
                    tile.addChannelsTimesRows(it[2], dyTile, probs, tiling.dv);
                Value dkAcc =
                    tile.addChannelsTimesRows(it[1], qTile, grads, tiling.d);
                Value dqAcc = tile.storeRows(
                    it[0], tile.rowsTimesColumns(grads, tiling.kT, tiling.d),
                    tiling.d);
                SmallVector<Value> next{dqAcc, dkAcc, dvAcc};
                if (gradOfDelta)
                  next.push_back(afterRows[1]);
                return next;
              });

          SmallVector<Value> out(ArrayRef<Value>(swept).take_front(3));
          if (biasKind == BiasKind::None)
            return out;
          // The bias's cotangent by delta to this leading index's partial.
          Value partial = buildLoop(
              b, l, zero, tiling.deltas, args[3],
              [&](OpBuilder &db, Location dl, ValueRange delta,
                  ValueRange acc) {
                Value g = extractAt(db, dl, swept[3], delta);
                SmallVector<Value> at(ld);
                Value term = g;
                if (biasKind == BiasKind::T5) {
                  at.push_back(
                      buildT5Bucket(db, dl, delta[0], buckets, maxDistance));
                } else {
                  // d(-slope delta) / d slope = -delta.
                  term = arith::MulFOp::create(
                      db, dl, g,
                      arith::NegFOp::create(
                          db, dl, indexToFloat(db, dl, delta[0], elem)));
                }
                Value sum = arith::AddFOp::create(
                    db, dl, extractAt(db, dl, acc[0], at), term);
                return SmallVector<Value>{insertAt(db, dl, sum, acc[0], at)};
              })[0];
          out.push_back(partial);
          return out;
        });

    // The cotangents in operand order: dq, dk, dv, dbias, dk_cache,
    // dv_cache.
    Value cacheLen = tiling.cacheLen;
    SmallVector<Value> grads{results[0]};
    Value zeroIdx = indexConst(rewriter, loc, 0);
    grads.push_back(
        untranspose(rewriter, loc, results[1], kType, kSizes, cacheLen));
    grads.push_back(
        untranspose(rewriter, loc, results[2], vType, vSizes, cacheLen));
    if (biasKind != BiasKind::None) {
      // Summed over the leading dimensions but the heads (the last).
      auto biasType = cast<RankedTensorType>(op.getBias().getType());
      SmallVector<Value> biasSizes = dimSizes(rewriter, loc, op.getBias());
      Value table = zerosOf(rewriter, loc, biasType, biasSizes);
      grads.push_back(buildSerialNest(
          rewriter, loc, partialSizes, table,
          [&](OpBuilder &nb, Location l, ValueRange ivs, ValueRange args) {
            SmallVector<Value> at(ivs.drop_front(lead.size() - 1));
            Value sum =
                arith::AddFOp::create(nb, l, extractAt(nb, l, args[0], at),
                                      extractAt(nb, l, results[3], ivs));
            return SmallVector<Value>{insertAt(nb, l, sum, args[0], at)};
          })[0]);
    }
    if (op.getKCache()) {
      SmallVector<Value> kcSizes = dimSizes(rewriter, loc, op.getKCache());
      SmallVector<Value> vcSizes = dimSizes(rewriter, loc, op.getVCache());
      grads.push_back(untranspose(
          rewriter, loc, results[1],
          cast<RankedTensorType>(op.getKCache().getType()), kcSizes, zeroIdx));
      grads.push_back(untranspose(
          rewriter, loc, results[2],
          cast<RankedTensorType>(op.getVCache().getType()), vcSizes, zeroIdx));
    }
    rewriter.replaceOp(op, grads);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// recur.attention
//===----------------------------------------------------------------------===//

/// The slice of the leading indices `lead` (unit sizes) followed by whole
/// dimensions of sizes `rest`.
struct LeadSlice {
  LeadSlice(OpBuilder &b, ValueRange lead, ArrayRef<OpFoldResult> rest)
      : offsets(lead.begin(), lead.end()),
        sizes(lead.size(), b.getIndexAttr(1)),
        strides(lead.size() + rest.size(), b.getIndexAttr(1)) {
    offsets.append(rest.size(), b.getIndexAttr(0));
    llvm::append_range(sizes, rest);
  }
  SmallVector<OpFoldResult> offsets, sizes, strides;
};

/// `x` `[lead..., rest...]` at the leading indices `lead`: `[rest...]`.
Value atLead(OpBuilder &b, Location loc, Value x, ValueRange lead) {
  auto type = cast<RankedTensorType>(x.getType());
  LeadSlice slice(
      b, lead,
      ArrayRef(tensor::getMixedSizes(b, loc, x)).drop_front(lead.size()));
  auto sliceType = RankedTensorType::get(
      type.getShape().drop_front(lead.size()), type.getElementType());
  return tensor::ExtractSliceOp::create(b, loc, sliceType, x, slice.offsets,
                                        slice.sizes, slice.strides);
}

/// `dst` with `src` `[rest...]` written at the leading indices `lead`.
Value intoLead(OpBuilder &b, Location loc, Value src, Value dst,
               ValueRange lead) {
  LeadSlice slice(b, lead, tensor::getMixedSizes(b, loc, src));
  return tensor::InsertSliceOp::create(b, loc, src, dst, slice.offsets,
                                       slice.sizes, slice.strides);
}

/// With `products` (the CPU pipeline's attention-products), an attention
/// that shows every key (no mask, no key padding) with static query and key
/// counts and at most kMaxProductScores scores per leading index goes as
/// the linalg ops its adjoint differentiates (decomposeAttention), per
/// leading index: its two products then run in register blocks
/// (recur-block-contractions). A mask or padding keeps the row form, which
/// never reads a hidden key: the products form would multiply a hidden
/// value by its zero weight, and a NaN or infinity there would reach the
/// output (MemBART's padded tokens must influence nothing). Otherwise, and
/// on the GPU, one query row at a time.
struct AttentionToLoops : OpRewritePattern<AttentionOp> {
  AttentionToLoops(MLIRContext *context, bool products)
      : OpRewritePattern(context), products(products) {}

  /// Scores per leading index (4 MiB of f32) the products form keeps.
  static constexpr int64_t kMaxProductScores = int64_t(1) << 20;

  bool products;

  /// Whether `op` goes as products.
  bool asProducts(AttentionOp op) const {
    if (!products || op.getMask() != MaskKind::None || op.getKeyPadding())
      return false;
    RankedTensorType qType = op.getQ().getType(), kType = op.getK().getType();
    int64_t rank = qType.getRank();
    int64_t tq = qType.getDimSize(rank - 2), tk = kType.getDimSize(rank - 2);
    return !ShapedType::isDynamic(tq) && !ShapedType::isDynamic(tk) &&
           tq * tk <= kMaxProductScores &&
           (op.getScale() || !qType.isDynamicDim(rank - 1));
  }

  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto outType = cast<RankedTensorType>(op.getType());
    Type elem = outType.getElementType();
    int64_t rank = outType.getRank();
    SmallVector<Value> qSizes = dimSizes(rewriter, loc, op.getQ());
    if (asProducts(op)) {
      SmallVector<Value> outSizes(ArrayRef<Value>(qSizes).drop_back());
      outSizes.push_back(dimSize(rewriter, loc, op.getV(), rank - 1));
      Value out = emptyLike(rewriter, loc, outType, outSizes);
      SmallVector<Value> results = buildNest(
          rewriter, loc, ArrayRef<Value>(qSizes).drop_back(2), out,
          [&](OpBuilder &b, Location l, ValueRange lead, ValueRange args) {
            FailureOr<Value> o = decomposeAttention(
                b, l, op, atLead(b, l, op.getQ(), lead),
                atLead(b, l, op.getK(), lead), atLead(b, l, op.getV(), lead),
                /*padding=*/Value(), /*leading=*/0);
            // asProducts checked what decomposeAttention needs.
            assert(succeeded(o) && "attention products with no scale");
            return SmallVector<Value>{intoLead(b, l, *o, args[0], lead)};
          });
      rewriter.replaceOp(op, results);
      return success();
    }
    SmallVector<Value> vSizes = dimSizes(rewriter, loc, op.getV());
    Value tq = qSizes[rank - 2], d = qSizes[rank - 1];
    Value tk = vSizes[rank - 2], dv = vSizes[rank - 1];
    SmallVector<Value> outSizes(ArrayRef<Value>(qSizes).drop_back());
    outSizes.push_back(dv);
    Value scale = attentionScale(rewriter, loc, elem, op.getScale(), d);
    Value out = emptyLike(rewriter, loc, outType, outSizes);
    MaskKind mask = op.getMask();
    Value padding = op.getKeyPadding();
    bool allVisible = mask != MaskKind::Memory && !padding;
    Value kT = allVisible ? rowsAfterCache(rewriter, loc, Value(), op.getK(),
                                           indexConst(rewriter, loc, 0),
                                           /*transposed=*/true)
                          : Value();

    // One query row per (leading index, query i).
    SmallVector<Value> results = buildNest(
        rewriter, loc, ArrayRef<Value>(qSizes).drop_back(), out,
        [&](OpBuilder &b, Location l, ValueRange ivs, ValueRange args) {
          ValueRange lead = ivs.drop_back();
          Value i = ivs.back();
          KeyAccess keys;
          keys.begin = indexConst(b, l, 0);
          keys.end = tk;
          if (mask == MaskKind::Causal) {
            // Query i sees the keys j <= i + (Tk - Tq).
            Value shift = arith::SubIOp::create(b, l, tk, tq);
            keys.end = arith::AddIOp::create(
                b, l, arith::AddIOp::create(b, l, i, shift),
                indexConst(b, l, 1));
          }
          if (mask == MaskKind::Memory || padding) {
            keys.visible = [&](OpBuilder &kb, Location kl, Value j) {
              Value visible;
              if (mask == MaskKind::Memory) {
                // A slot row sees its own slot and every token; a token row
                // sees everything.
                Value slots =
                    indexConst(kb, kl, op.getMemorySlotsAttr().getInt());
                auto cmp = [&](arith::CmpIPredicate pred, Value x, Value y) {
                  return arith::CmpIOp::create(kb, kl, pred, x, y);
                };
                visible = arith::OrIOp::create(
                    kb, kl, cmp(arith::CmpIPredicate::sge, i, slots),
                    arith::OrIOp::create(
                        kb, kl, cmp(arith::CmpIPredicate::eq, j, i),
                        cmp(arith::CmpIPredicate::sge, j, slots)));
              }
              if (padding) {
                Value pad = extractAt(kb, kl, padding,
                                      concatIndices(lead, ValueRange{j}));
                Value kept = arith::XOrIOp::create(
                    kb, kl, pad,
                    arith::ConstantIntOp::create(kb, kl, 1, /*width=*/1));
                visible = visible ? arith::AndIOp::create(kb, kl, visible, kept)
                                        .getResult()
                                  : kept;
              }
              return visible;
            };
          }
          auto query = [&](OpBuilder &eb, Location el, Value e) {
            return extractAt(eb, el, op.getQ(),
                             concatIndices(lead, ValueRange{i, e}));
          };
          keys.logit = [&](OpBuilder &kb, Location kl, Value j) {
            Value dot = dotProduct(kb, kl, elem, d, query,
                                   [&](OpBuilder &eb, Location el, Value e) {
                                     return extractAt(
                                         eb, el, op.getK(),
                                         concatIndices(lead, ValueRange{j, e}));
                                   });
            return arith::MulFOp::create(kb, kl, scale, dot).getResult();
          };
          if (allVisible) {
            keys.logits = [&](OpBuilder &kb, Location kl, Value row) {
              return logitsOverTransposedKeys(kb, kl, row, kT, lead, d, query,
                                              scale, keys.begin, keys.end,
                                              KeyFn());
            };
            keys.capacity = tk;
          }
          keys.value = [&](OpBuilder &vb, Location vl, Value j, Value c) {
            return extractAt(vb, vl, op.getV(),
                             concatIndices(lead, ValueRange{j, c}));
          };
          return SmallVector<Value>{attendRow(b, l, args[0], ivs, dv, keys)};
        });
    rewriter.replaceOp(op, results);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// recur.rel_attention
//===----------------------------------------------------------------------===//

struct RelAttentionToLoops : OpRewritePattern<RelAttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(RelAttentionOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto outType = cast<RankedTensorType>(op.getType());
    Type elem = outType.getElementType();
    int64_t rank = outType.getRank();
    SmallVector<Value> qSizes = dimSizes(rewriter, loc, op.getQ());
    SmallVector<Value> vSizes = dimSizes(rewriter, loc, op.getV());
    Value segment = qSizes[rank - 2], dh = qSizes[rank - 1];
    Value keyLen = vSizes[rank - 2], dv = vSizes[rank - 1];
    SmallVector<Value> outSizes(ArrayRef<Value>(qSizes).drop_back());
    outSizes.push_back(dv);
    // M = K - L memory positions precede the segment.
    Value memLen = arith::SubIOp::create(rewriter, loc, keyLen, segment);
    Value lastRow = arith::SubIOp::create(rewriter, loc, keyLen,
                                          indexConst(rewriter, loc, 1));
    Value scale = attentionScale(rewriter, loc, elem, op.getScale(), dh);
    Value out = emptyLike(rewriter, loc, outType, outSizes);

    // One query row per (leading index, segment position i).
    SmallVector<Value> results = buildNest(
        rewriter, loc, ArrayRef<Value>(qSizes).drop_back(), out,
        [&](OpBuilder &b, Location l, ValueRange ivs, ValueRange args) {
          ValueRange lead = ivs.drop_back();
          Value head = lead.back();
          Value i = ivs.back();
          // Query i sees the keys j <= M + i.
          Value queryPos = arith::AddIOp::create(b, l, memLen, i);
          KeyAccess keys;
          keys.begin = indexConst(b, l, 0);
          keys.end = arith::AddIOp::create(b, l, queryPos, indexConst(b, l, 1));
          keys.capacity = keyLen;
          keys.logit = [&](OpBuilder &kb, Location kl, Value j) {
            // S = (q_i + u) . k_j + (q_i + pos_bias) . r[K - 1 - (M + i - j)]
            Value delta = arith::SubIOp::create(kb, kl, queryPos, j);
            Value row = arith::SubIOp::create(kb, kl, lastRow, delta);
            Value zero = indexConst(kb, kl, 0);
            Value zeroF = zeroOf(kb, kl, elem);
            SmallVector<Value> terms = buildLoop(
                kb, kl, zero, dh, ValueRange{zeroF, zeroF},
                [&](OpBuilder &eb, Location el, ValueRange e, ValueRange acc) {
                  Value qe =
                      extractAt(eb, el, op.getQ(),
                                concatIndices(lead, ValueRange{i, e[0]}));
                  Value ue = extractAt(eb, el, op.getU(), {head, e[0]});
                  Value pe = extractAt(eb, el, op.getPosBias(), {head, e[0]});
                  Value ke =
                      extractAt(eb, el, op.getK(),
                                concatIndices(lead, ValueRange{j, e[0]}));
                  Value re = extractAt(eb, el, op.getR(), {head, row, e[0]});
                  Value content = arith::MulFOp::create(
                      eb, el, arith::AddFOp::create(eb, el, qe, ue), ke);
                  Value position = arith::MulFOp::create(
                      eb, el, arith::AddFOp::create(eb, el, qe, pe), re);
                  return SmallVector<Value>{
                      arith::AddFOp::create(eb, el, acc[0], content),
                      arith::AddFOp::create(eb, el, acc[1], position)};
                });
            Value score = arith::AddFOp::create(kb, kl, terms[0], terms[1]);
            return arith::MulFOp::create(kb, kl, scale, score).getResult();
          };
          keys.value = [&](OpBuilder &vb, Location vl, Value j, Value c) {
            return extractAt(vb, vl, op.getV(),
                             concatIndices(lead, ValueRange{j, c}));
          };
          return SmallVector<Value>{attendRow(b, l, args[0], ivs, dv, keys)};
        });
    rewriter.replaceOp(op, results);
    return success();
  }
};

} // namespace

void mlir::recur::loops::populateAttentionPatterns(RewritePatternSet &patterns,
                                                   bool windowTiles,
                                                   bool windowOnePass,
                                                   bool attentionProducts,
                                                   bool windowWarpTiles) {
  if (windowWarpTiles && !windowTiles)
    patterns.add<WindowAttentionWarpTilesToLoops,
                 WindowAttentionGradWarpTilesToLoops>(patterns.getContext());
  if (windowTiles) {
    patterns.add<WindowAttentionTiledToLoops>(patterns.getContext());
  } else {
    patterns.add<WindowAttentionToLoops>(patterns.getContext());
    if (windowOnePass)
      patterns.add<WindowAttentionOnePassToLoops,
                   WindowAttentionGradOnePassToLoops>(patterns.getContext());
  }
  patterns.add<AttentionToLoops>(patterns.getContext(), attentionProducts);
  patterns.add<WindowAttentionGradToLoops, RelAttentionToLoops>(
      patterns.getContext());
}
