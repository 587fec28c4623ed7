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
//===----------------------------------------------------------------------===//

#include "Patterns.h"
#include "Utility.h"

#include "Recur/IR/Recur.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/PatternMatch.h"

#include <functional>
#include <limits>

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
Value positionBias(OpBuilder &b, Location loc, WindowAttentionOp op, Value head,
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
              // delta = p - (r - C); the heads are the dimension before T.
              Value delta = arith::SubIOp::create(
                  kb, kl, arith::AddIOp::create(kb, kl, p, cacheLen), r);
              return positionBias(kb, kl, op, lead.back(), delta);
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
// recur.attention
//===----------------------------------------------------------------------===//

struct AttentionToLoops : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto outType = cast<RankedTensorType>(op.getType());
    Type elem = outType.getElementType();
    int64_t rank = outType.getRank();
    SmallVector<Value> qSizes = dimSizes(rewriter, loc, op.getQ());
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

void mlir::recur::loops::populateAttentionPatterns(
    RewritePatternSet &patterns) {
  patterns.add<WindowAttentionToLoops, AttentionToLoops, RelAttentionToLoops>(
      patterns.getContext());
}
