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

/// `[lead..., T, e]` from `[lead..., e, C + T]` (rows from `C` on: the
/// sequence's) or `[lead..., C, e]` (the first `C`: the cache's), a
/// transposed accumulator of WindowAttentionGradToLoops cut back apart.
Value untranspose(OpBuilder &b, Location loc, Value transposed,
                  RankedTensorType type, ArrayRef<Value> sizes, Value first) {
  return buildNest(
      b, loc, sizes, emptyLike(b, loc, type, sizes),
      [&](OpBuilder &nb, Location l, ValueRange ivs, ValueRange args) {
        ValueRange lead = ivs.drop_back(2);
        Value row = ivs[ivs.size() - 2], e = ivs.back();
        Value key = arith::AddIOp::create(nb, l, first, row);
        Value x = extractAt(nb, l, transposed, concatIndices(lead, {e, key}));
        return SmallVector<Value>{insertAt(nb, l, x, args[0], ivs)};
      })[0];
}

/// The fused backward of window_attention, one leading index (batch, head)
/// at a time and its query rows p in order, over the keys r that row sees
/// (as the forward, [begin, end) of [k_cache; k]):
///   1. the logits into a row of scratch, as the forward computes them,
///      and their softmax P in place (the largest logit first);
///   2. a pass over each value channel e that accumulates dP_r += dy_e
///      v_r[e] into a second row and adds P_r dy_e to dv_r[e];
///   3. dS_r = P_r (dP_r - sum_r' P_r' dP_r') in place of dP, and the
///      bias's cotangent: dS_r at the bucket of p - r (t5), -(p - r) dS_r
///      (alibi), into a partial per leading index;
///   4. a pass over each key channel e that sums dq[e] = scale sum_r dS_r
///      k_r[e] and adds scale dS_r q[e] to dk_r[e].
/// Keys, values and their cotangents are held transposed ([lead..., e,
/// C + T], the cache first), so that every inner loop runs over
/// consecutive keys and vectorizes; the sums over keys are reassociable
/// and products fuse with their sums. Afterwards the cotangents are cut
/// into the sequence's and the cache's, and the bias partials summed over
/// the leading dimensions but the heads.
struct WindowAttentionGradToLoops : OpRewritePattern<WindowAttentionGradOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(WindowAttentionGradOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto qType = cast<RankedTensorType>(op.getQ().getType());
    auto kType = cast<RankedTensorType>(op.getK().getType());
    auto vType = cast<RankedTensorType>(op.getV().getType());
    Type elem = qType.getElementType();
    int64_t rank = qType.getRank();
    SmallVector<Value> qSizes = dimSizes(rewriter, loc, op.getQ());
    SmallVector<Value> kSizes = dimSizes(rewriter, loc, op.getK());
    SmallVector<Value> vSizes = dimSizes(rewriter, loc, op.getV());
    SmallVector<Value> lead(ArrayRef<Value>(qSizes).drop_back(2));
    Value steps = qSizes[rank - 2], d = qSizes[rank - 1], dv = vSizes[rank - 1];
    Value cacheLen = op.getKCache()
                         ? dimSize(rewriter, loc, op.getKCache(), rank - 2)
                         : indexConst(rewriter, loc, 0);
    Value scale = attentionScale(rewriter, loc, elem, op.getScale(), d);
    Value kT = rowsAfterCache(rewriter, loc, op.getKCache(), op.getK(),
                              cacheLen, /*transposed=*/true);
    Value vT = rowsAfterCache(rewriter, loc, op.getVCache(), op.getV(),
                              cacheLen, /*transposed=*/true);
    auto kTType = cast<RankedTensorType>(kT.getType());
    auto vTType = cast<RankedTensorType>(vT.getType());
    Value dkT = zerosOf(rewriter, loc, kTType, dimSizes(rewriter, loc, kT));
    Value dvT = zerosOf(rewriter, loc, vTType, dimSizes(rewriter, loc, vT));
    Value dq = emptyLike(rewriter, loc, qType, qSizes);
    BiasKind biasKind = op.getBiasKind();
    int64_t buckets = op.getNumBuckets() ? op.getNumBucketsAttr().getInt() : 32;
    // The bias's cotangent per leading index: [lead..., buckets] (t5) or
    // [lead...] (alibi).
    SmallVector<Value> partialSizes(lead);
    if (biasKind == BiasKind::T5)
      partialSizes.push_back(indexConst(rewriter, loc, buckets));
    SmallVector<int64_t> partialShape(qType.getShape().drop_back(2));
    if (biasKind == BiasKind::T5)
      partialShape.push_back(buckets);
    auto partialType = RankedTensorType::get(partialShape, elem);
    SmallVector<Value> carried{dq, dkT, dvT};
    if (biasKind != BiasKind::None)
      carried.push_back(zerosOf(rewriter, loc, partialType, partialSizes));
    // A query sees at most window + block keys.
    Value capacity = indexConst(rewriter, loc,
                                op.getWindowAttr().getInt() +
                                    op.getBlockAttr().getInt() + 1);
    auto rowType = RankedTensorType::get({ShapedType::kDynamic}, elem);
    auto contract = arith::FastMathFlags::contract;
    auto reassocContract = arith::FastMathFlags::reassoc | contract;
    auto multiplyAdd = [](OpBuilder &b, Location l, Value acc, Value x, Value y,
                          arith::FastMathFlags flags) -> Value {
      return arith::AddFOp::create(
          b, l, acc, arith::MulFOp::create(b, l, x, y, flags), flags);
    };

    SmallVector<Value> results = buildNest(
        rewriter, loc, lead, carried,
        [&](OpBuilder &b, Location l, ValueRange ld, ValueRange args) {
          auto idx = [&](ValueRange tail) { return concatIndices(ld, tail); };
          Value zero = indexConst(b, l, 0);
          Value zeroF = zeroOf(b, l, elem);
          return buildLoop(
              b, l, zero, steps, args,
              [&](OpBuilder &pb, Location pl, ValueRange pIv,
                  ValueRange it) -> SmallVector<Value> {
                Value p = pIv[0];
                Value begin, end;
                std::tie(begin, end) = windowKeyRange(
                    pb, pl, p, cacheLen, op.getWindowAttr().getInt(),
                    op.getBlockAttr().getInt(), op.getIncludeSelf());
                Value count = arith::SubIOp::create(pb, pl, end, begin);
                // A row that sees no key keeps a zero dq and gives nothing.
                SmallVector<Value> rowIt(it);
                rowIt[0] = fillRow(
                    pb, pl, it[0], idx({p}), d,
                    [&](OpBuilder &, Location, Value) { return zeroF; });
                Value seen = arith::CmpIOp::create(
                    pb, pl, arith::CmpIPredicate::sgt, count, zero);
                auto keyOf = [&](OpBuilder &kb, Location kl, Value i) -> Value {
                  return arith::AddIOp::create(kb, kl, begin, i);
                };
                // delta = p - (r - C) of the row's i-th key.
                auto deltaOf = [&](OpBuilder &kb, Location kl, Value i) {
                  return arith::SubIOp::create(
                      kb, kl, arith::AddIOp::create(kb, kl, p, cacheLen),
                      keyOf(kb, kl, i));
                };
                return buildIf(
                    pb, pl, seen, rowIt, [&](OpBuilder &rb, Location rl) {
                      Value dqAcc = rowIt[0], dkAcc = rowIt[1],
                            dvAcc = rowIt[2];
                      Value partial =
                          biasKind != BiasKind::None ? rowIt[3] : Value();
                      // 1. P = softmax of the logits, in scratch.
                      KeyFn bias;
                      if (biasKind != BiasKind::None)
                        bias = [&](OpBuilder &kb, Location kl, Value r) {
                          Value delta = arith::SubIOp::create(
                              kb, kl,
                              arith::AddIOp::create(kb, kl, p, cacheLen), r);
                          return positionBias(kb, kl, op, ld.back(), delta);
                        };
                      Value probs = logitsOverTransposedKeys(
                          rb, rl, privateScratch(rb, rl, rowType, {capacity}),
                          kT, ld, d,
                          [&](OpBuilder &eb, Location el, Value e) {
                            return extractAt(eb, el, op.getQ(), idx({p, e}));
                          },
                          scale, begin, end, bias);
                      Value negInf =
                          floatConst(rb, rl, elem,
                                     -std::numeric_limits<double>::infinity());
                      Value max = buildLoop(
                          rb, rl, zero, count, negInf,
                          [&](OpBuilder &ib, Location il, ValueRange i,
                              ValueRange acc) {
                            Value x = extractAt(ib, il, probs, i);
                            return SmallVector<Value>{
                                arith::MaximumFOp::create(ib, il, acc[0], x)};
                          })[0];
                      SmallVector<Value> weights = buildLoop(
                          rb, rl, zero, count, ValueRange{probs, zeroF},
                          [&](OpBuilder &ib, Location il, ValueRange i,
                              ValueRange acc) {
                            Value w = math::ExpOp::create(
                                ib, il,
                                arith::SubFOp::create(
                                    ib, il, extractAt(ib, il, acc[0], i), max));
                            Value sum = arith::AddFOp::create(
                                ib, il, acc[1], w,
                                arith::FastMathFlags::reassoc);
                            return SmallVector<Value>{
                                insertAt(ib, il, w, acc[0], i), sum};
                          });
                      Value inv = arith::DivFOp::create(
                          rb, rl, floatConst(rb, rl, elem, 1.0), weights[1]);
                      probs = updateRow(rb, rl, weights[0], {}, count,
                                        [&](OpBuilder &ib, Location il, Value,
                                            Value w) -> Value {
                                          return arith::MulFOp::create(ib, il,
                                                                       w, inv);
                                        });

                      // 2. dP_r = dy . v_r; dv_r += P_r dy.
                      Value dP = fillRow(
                          rb, rl, privateScratch(rb, rl, rowType, {capacity}),
                          {}, count,
                          [&](OpBuilder &, Location, Value) { return zeroF; });
                      SmallVector<Value> afterValues = buildLoop(
                          rb, rl, zero, dv, ValueRange{dP, dvAcc},
                          [&](OpBuilder &eb, Location el, ValueRange e,
                              ValueRange acc) {
                            Value dye =
                                extractAt(eb, el, op.getDy(), idx({p, e[0]}));
                            return buildLoop(
                                eb, el, zero, count, acc,
                                [&](OpBuilder &ib, Location il, ValueRange i,
                                    ValueRange row) {
                                  SmallVector<Value> at =
                                      idx({e[0], keyOf(ib, il, i[0])});
                                  Value v = extractAt(ib, il, vT, at);
                                  Value dPi = multiplyAdd(
                                      ib, il, extractAt(ib, il, row[0], i), dye,
                                      v, contract);
                                  Value dvOld = extractAt(ib, il, row[1], at);
                                  Value dvNew =
                                      multiplyAdd(ib, il, dvOld,
                                                  extractAt(ib, il, probs, i),
                                                  dye, contract);
                                  return SmallVector<Value>{
                                      insertAt(ib, il, dPi, row[0], i),
                                      insertAt(ib, il, dvNew, row[1], at)};
                                });
                          });
                      dP = afterValues[0];
                      dvAcc = afterValues[1];

                      // 3. dS_r = P_r (dP_r - sum P dP), in place of dP.
                      Value pdp = buildLoop(
                          rb, rl, zero, count, zeroF,
                          [&](OpBuilder &ib, Location il, ValueRange i,
                              ValueRange acc) {
                            return SmallVector<Value>{multiplyAdd(
                                ib, il, acc[0], extractAt(ib, il, probs, i),
                                extractAt(ib, il, dP, i), reassocContract)};
                          })[0];
                      Value dS = updateRow(
                          rb, rl, dP, {}, count,
                          [&](OpBuilder &ib, Location il, Value i,
                              Value dPi) -> Value {
                            return arith::MulFOp::create(
                                ib, il, extractAt(ib, il, probs, i),
                                arith::SubFOp::create(ib, il, dPi, pdp));
                          });
                      if (biasKind == BiasKind::T5) {
                        int64_t maxDistance =
                            op.getMaxDistance()
                                ? op.getMaxDistanceAttr().getInt()
                                : 128;
                        partial = buildLoop(
                            rb, rl, zero, count, partial,
                            [&](OpBuilder &ib, Location il, ValueRange i,
                                ValueRange acc) {
                              Value bucket =
                                  buildT5Bucket(ib, il, deltaOf(ib, il, i[0]),
                                                buckets, maxDistance);
                              SmallVector<Value> at = idx({bucket});
                              Value sum = arith::AddFOp::create(
                                  ib, il, extractAt(ib, il, acc[0], at),
                                  extractAt(ib, il, dS, i));
                              return SmallVector<Value>{
                                  insertAt(ib, il, sum, acc[0], at)};
                            })[0];
                      } else if (biasKind == BiasKind::Alibi) {
                        // d(-slope delta) / d slope = -delta.
                        Value sum = buildLoop(
                            rb, rl, zero, count, zeroF,
                            [&](OpBuilder &ib, Location il, ValueRange i,
                                ValueRange acc) {
                              Value delta = indexToFloat(
                                  ib, il, deltaOf(ib, il, i[0]), elem);
                              return SmallVector<Value>{multiplyAdd(
                                  ib, il, acc[0], delta,
                                  extractAt(ib, il, dS, i), reassocContract)};
                            })[0];
                        partial = insertAt(
                            rb, rl,
                            arith::SubFOp::create(
                                rb, rl, extractAt(rb, rl, partial, ld), sum),
                            partial, ld);
                      }

                      // 4. dq = scale sum_r dS_r k_r; dk_r += scale dS_r q.
                      SmallVector<Value> afterKeys = buildLoop(
                          rb, rl, zero, d, ValueRange{dqAcc, dkAcc},
                          [&](OpBuilder &eb, Location el, ValueRange e,
                              ValueRange acc) {
                            Value qe = arith::MulFOp::create(
                                eb, el, scale,
                                extractAt(eb, el, op.getQ(), idx({p, e[0]})));
                            SmallVector<Value> swept = buildLoop(
                                eb, el, zero, count, ValueRange{acc[1], zeroF},
                                [&](OpBuilder &ib, Location il, ValueRange i,
                                    ValueRange row) {
                                  SmallVector<Value> at =
                                      idx({e[0], keyOf(ib, il, i[0])});
                                  Value dSi = extractAt(ib, il, dS, i);
                                  Value sum =
                                      multiplyAdd(ib, il, row[1], dSi,
                                                  extractAt(ib, il, kT, at),
                                                  reassocContract);
                                  Value dkNew = multiplyAdd(
                                      ib, il, extractAt(ib, il, row[0], at),
                                      dSi, qe, contract);
                                  return SmallVector<Value>{
                                      insertAt(ib, il, dkNew, row[0], at), sum};
                                });
                            Value dqe =
                                arith::MulFOp::create(eb, el, scale, swept[1]);
                            return SmallVector<Value>{
                                insertAt(eb, el, dqe, acc[0], idx({p, e[0]})),
                                swept[0]};
                          });
                      SmallVector<Value> out{afterKeys[0], afterKeys[1], dvAcc};
                      if (partial)
                        out.push_back(partial);
                      return out;
                    });
              });
        });

    // The cotangents in operand order: dq, dk, dv, dbias, dk_cache,
    // dv_cache.
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
  patterns.add<WindowAttentionToLoops, WindowAttentionGradToLoops,
               AttentionToLoops, RelAttentionToLoops>(patterns.getContext());
}
