//===- GlaTiles.cpp - the gla's chunks as a warp's matrix tiles -----------===//
//
// Part of the Recur project.
//
// The GPU's tile form of recur.gated_linear_attention (`gla-tiles`,
// recurc's --cuda-gla-tiles): real f32 decays, dk and dv static multiples
// of 16. The steps go in chunks of C = 16, and with P(s, t) = a_s ... a_t
// the decays from step s to t (a vector over the key index i; 1 when s > t),
// E_c the state entering chunk c and b its first step:
//
//   L_c[i, :] = sum_s k_s[i] P(s+1, b+15)[i] v_s        (the chunk from 0)
//   A_c[i]    = P(b, b+15)[i]
//   y_t       = sum_i q_t[i] P(b, t)[i] E_c[i, :]
//             + sum_{s <= t} (sum_i q_t[i] k_s[i] P(s+1, t)[i]) v_s
//
// every decay product a product, never a quotient (a decay of 0, a reset,
// needs nothing special). Three launches:
//  1. a block of one warp per (leading index, chunk): its threads take the
//     key rows i, each the products P(s+1, b+15) from the chunk's last step
//     back (writing A_c) and k_s[i] times them, the transposed rows K^T
//     [dk, 16]; then L_c = K^T V, [dk, 16] x [16, dv], by the warp's matrix
//     tiles (vector.contract of 16 x 8 by 8 x 16, which the CUDA pipeline
//     makes tensor-core products: wmma.mma.sync ... m16n16k8 ... tf32);
//  2. the carries E_{c+1} = A_c E_c + L_c a thread per (leading index,
//     column) (the caller's, Scans.cpp);
//  3. a block of one warp per (leading index, chunk): the queries' rows
//     q_t P(b, t) [16, dk] (a thread a key row), the chunk's scores
//     S[t, s] = sum_i q_t[i] k_s[i] P(s+1, t)[i] for s <= t, 0 above (a
//     thread a query step: 16 of the 32), then y = S V + (q P) E_c by tiles,
//     E_c 16 rows at a time.
// A tensor core multiplies tf32 values (10 bits of mantissa), so each
// operand x goes as two: hi = x with its low 13 bits cleared, lo = (x -
// hi) the same way (both exact tf32 values), and a product as three (lo hi
// + hi lo + hi hi; lo lo, below 2^-20 of it, is left out): the products are
// exact, the sums f32 (3xTF32; each product within about 2^-20 of the
// f32 product, where one tf32 product would be within 2^-10). Operands and
// results go through block buffers (shared memory); rows past the end are
// decay 1 and zeros, which change nothing, and are not written.
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"
#include "Tiles.h"
#include "Utility.h"

#include "Recur/IR/Recur.h"
#include "recur/Conversion/RecurToLoops/RecurToLoops.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::recur;
using namespace mlir::recur::loops;
using namespace mlir::recur::loops::tiles;

namespace {

/// The block buffers' bytes of launch 1 and of launch 3 (f32).
int64_t statesBytes(int64_t dk, int64_t dv) {
  return 4 * (2 * dk * kTile + 2 * kTile * dv + dk * dv);
}
int64_t outputsBytes(int64_t dk, int64_t dv) {
  return 4 * (2 * kTile * dk + kTile * (dk + 1) + 2 * kTile * dk +
              2 * kTile * kTile + 2 * kTile * dv + 2 * kTile * dv + kTile * dv);
}

/// What the two launches share: the operands, the sizes and the chunk of
/// a block.
struct TileForm {
  TileForm(OpBuilder &b, Location l, GatedLinearAttentionOp op,
           ArrayRef<Value> lead, Value steps)
      : q(op.getQ()), k(op.getK()), v(op.getV()), a(op.getA()),
        lead(lead.begin(), lead.end()), steps(steps),
        dk(cast<RankedTensorType>(q.getType()).getShape().back()),
        dv(cast<RankedTensorType>(v.getType()).getShape().back()),
        f32(b.getF32Type()),
        chunks(arith::CeilDivUIOp::create(b, l, steps, indexConst(b, l, kTile))
                   .getResult()) {}

  /// The blocks: leading indices times chunks.
  Value blocks(OpBuilder &b, Location l) const {
    return blockCount(b, l, lead, chunks);
  }

  /// Block `f`'s leading indices and chunk (the chunk fastest).
  std::pair<SmallVector<Value>, Value> decompose(OpBuilder &b, Location l,
                                                 Value f) const {
    return blockAt(b, l, f, lead, chunks);
  }

  /// Step `s` of the chunk starting at `begin` (clamped into the sequence),
  /// and whether it is in it.
  std::pair<Value, Value> step(OpBuilder &b, Location l, Value begin,
                               Value s) const {
    return rowIn(b, l, begin, s, steps);
  }

  /// The chunk's v (from `begin`) split into `into`, rows past the end 0.
  Split loadValues(OpBuilder &b, Location l, ValueRange idx, Value begin,
                   Split into) const {
    return loadSplit(b, l, into, kTile, dv,
                     [&](OpBuilder &eb, Location el, Value s, Value j) {
                       auto [t, inside] = step(eb, el, begin, s);
                       return load(eb, el, v, idx, t, inside, j, 0.0);
                     });
  }

  /// `tensor[lead, t, col]` where `inside`, `pad` otherwise.
  Value load(OpBuilder &b, Location l, Value tensor, ValueRange idx, Value t,
             Value inside, Value col, double pad) const {
    Value x = extractAt(b, l, tensor, concatIndices(idx, {t, col}));
    return arith::SelectOp::create(b, l, inside, x, floatConst(b, l, f32, pad));
  }

  Value q, k, v, a;
  SmallVector<Value> lead;
  Value steps;
  int64_t dk, dv;
  Type f32;
  Value chunks;
};

} // namespace

bool loops::glaTilesApply(GatedLinearAttentionOp op) {
  auto q = cast<RankedTensorType>(op.getQ().getType());
  auto v = cast<RankedTensorType>(op.getV().getType());
  auto a = cast<RankedTensorType>(op.getA().getType());
  auto state = cast<RankedTensorType>(op.getState().getType());
  int64_t dk = q.getShape().back(), dv = v.getShape().back();
  return q.getElementType().isF32() && a.getElementType().isF32() &&
         state.getElementType().isF32() && !ShapedType::isDynamic(dk) &&
         !ShapedType::isDynamic(dv) && dk % kTile == 0 && dv % kTile == 0 &&
         statesBytes(dk, dv) <= kSharedBytes &&
         outputsBytes(dk, dv) <= kSharedBytes;
}

int64_t loops::glaTileChunk() { return kTile; }

std::pair<Value, Value> loops::buildGlaTileStates(OpBuilder &rewriter,
                                                  Location loc,
                                                  GatedLinearAttentionOp op,
                                                  ArrayRef<Value> lead,
                                                  Value steps) {
  TileForm g(rewriter, loc, op, lead, steps);
  int64_t dk = g.dk, dv = g.dv;
  auto typeOf = [&](ArrayRef<int64_t> tail) {
    SmallVector<int64_t> shape(
        cast<RankedTensorType>(g.q.getType()).getShape().drop_back(2));
    shape.push_back(ShapedType::kDynamic);
    llvm::append_range(shape, tail);
    return RankedTensorType::get(shape, g.f32);
  };
  SmallVector<Value> sizes(lead);
  sizes.push_back(g.chunks);
  Value decaysInit =
      emptyLike(rewriter, loc, typeOf({dk}),
                concatIndices(sizes, {indexConst(rewriter, loc, dk)}));
  SmallVector<Value> localSizes(sizes);
  localSizes.push_back(indexConst(rewriter, loc, dk));
  localSizes.push_back(indexConst(rewriter, loc, dv));
  Value localInit = emptyLike(rewriter, loc, typeOf({dk, dv}), localSizes);

  SmallVector<Value> results = buildNest(
      rewriter, loc, ValueRange{g.blocks(rewriter, loc)},
      ValueRange{decaysInit, localInit},
      [&](OpBuilder &b, Location l, ValueRange f, ValueRange args) {
        std::pair<SmallVector<Value>, Value> block = g.decompose(b, l, f[0]);
        SmallVector<Value> idx = block.first;
        Value c = block.second;
        Value begin = arith::MulIOp::create(b, l, c, indexConst(b, l, kTile));
        Split kt = splitBuffers(b, l, dk, kTile);
        // Key row i a thread (i = tid + 32 r): back from the chunk's last
        // step, k_s[i] P(s+1, b+15)[i], and A_c[i].
        SmallVector<Value> rows = overRows(
            b, l, dk, ValueRange{kt.hi, kt.lo, args[0]},
            [&](OpBuilder &rb, Location rl, Value i, ValueRange out) {
              SmallVector<Value> acc(out);
              Value prod = floatConst(rb, rl, g.f32, 1.0);
              for (int64_t s = kTile - 1; s >= 0; --s) {
                auto [t, inside] = g.step(rb, rl, begin, indexConst(rb, rl, s));
                Value kv = g.load(rb, rl, g.k, idx, t, inside, i, 0.0);
                Value av = g.load(rb, rl, g.a, idx, t, inside, i, 1.0);
                auto [hi, lo] =
                    splitTf32(rb, rl, arith::MulFOp::create(rb, rl, kv, prod));
                Value sIdx = indexConst(rb, rl, s);
                acc[0] = insertAt(rb, rl, hi, acc[0], {i, sIdx});
                acc[1] = insertAt(rb, rl, lo, acc[1], {i, sIdx});
                prod = arith::MulFOp::create(rb, rl, prod, av);
              }
              acc[2] =
                  insertAt(rb, rl, prod, acc[2], concatIndices(idx, {c, i}));
              return acc;
            });
        kt = {rows[0], rows[1]};
        Split vs =
            g.loadValues(b, l, idx, begin, splitBuffers(b, l, kTile, dv));
        // L_c = K^T V by tiles, into a block buffer.
        Value staged = blockBuffer(b, l, dk, dv);
        staged = overTiles(
            b, l, dk, dv, staged,
            [&](OpBuilder &tb, Location tl, Value row, Value col, Value buf) {
              Value zero = indexConst(tb, tl, 0);
              return writeTile(tb, tl,
                               multiplyTiles(tb, tl, kt, row, zero, vs, zero,
                                             col, kTile, zeroTile(tb, tl)),
                               buf, row, col);
            });
        Value local =
            threadLoop(b, l, kWarp, ValueRange{args[1]},
                       [&](OpBuilder &tb, Location tl, ValueRange tid,
                           ValueRange out) {
                         return overElements(
                             tb, tl, tid[0], dk, dv, out,
                             [&](OpBuilder &eb, Location el, Value i, Value j,
                                 ValueRange acc) {
                               return SmallVector<Value>{insertAt(
                                   eb, el, extractAt(eb, el, staged, {i, j}),
                                   acc[0], concatIndices(idx, {c, i, j}))};
                             });
                       })
                .front();
        return SmallVector<Value>{rows[2], local};
      });
  results.front().getDefiningOp()->setAttr(kGpuBlockAttrName,
                                           rewriter.getUnitAttr());
  return {results[0], results[1]};
}

Value loops::buildGlaTileOutputs(OpBuilder &rewriter, Location loc,
                                 GatedLinearAttentionOp op,
                                 ArrayRef<Value> lead, Value steps,
                                 Value entering, Value yInit) {
  TileForm g(rewriter, loc, op, lead, steps);
  int64_t dk = g.dk, dv = g.dv;
  SmallVector<Value> results = buildNest(
      rewriter, loc, ValueRange{g.blocks(rewriter, loc)}, ValueRange{yInit},
      [&](OpBuilder &b, Location l, ValueRange f, ValueRange args) {
        std::pair<SmallVector<Value>, Value> block = g.decompose(b, l, f[0]);
        SmallVector<Value> idx = block.first;
        Value c = block.second;
        Value begin = arith::MulIOp::create(b, l, c, indexConst(b, l, kTile));
        // The chunk's a, k and q (q's rows one element longer: a thread
        // a query step reads a column of it).
        SmallVector<Value> raw = threadLoop(
            b, l, kWarp,
            ValueRange{blockBuffer(b, l, kTile, dk),
                       blockBuffer(b, l, kTile, dk),
                       blockBuffer(b, l, kTile, dk + 1)},
            [&](OpBuilder &tb, Location tl, ValueRange tid, ValueRange bufs) {
              return overElements(
                  tb, tl, tid[0], kTile, dk, bufs,
                  [&](OpBuilder &eb, Location el, Value s, Value i,
                      ValueRange acc) {
                    auto [t, inside] = g.step(eb, el, begin, s);
                    // One statement each: argument order is unspecified.
                    Value av = g.load(eb, el, g.a, idx, t, inside, i, 1.0);
                    Value kv = g.load(eb, el, g.k, idx, t, inside, i, 0.0);
                    Value qv = g.load(eb, el, g.q, idx, t, inside, i, 0.0);
                    return SmallVector<Value>{
                        insertAt(eb, el, av, acc[0], {s, i}),
                        insertAt(eb, el, kv, acc[1], {s, i}),
                        insertAt(eb, el, qv, acc[2], {s, i})};
                  });
            });
        Value as = raw[0], ks = raw[1], qs = raw[2];
        // The queries' rows q_t P(b, t), a thread a key row.
        Split qp = splitBuffers(b, l, kTile, dk);
        SmallVector<Value> qRows = overRows(
            b, l, dk, ValueRange{qp.hi, qp.lo},
            [&](OpBuilder &rb, Location rl, Value i, ValueRange out) {
              SmallVector<Value> acc(out);
              Value prod = floatConst(rb, rl, g.f32, 1.0);
              for (int64_t s = 0; s < kTile; ++s) {
                Value sIdx = indexConst(rb, rl, s);
                prod = arith::MulFOp::create(rb, rl, prod,
                                             extractAt(rb, rl, as, {sIdx, i}));
                auto [hi, lo] = splitTf32(
                    rb, rl,
                    arith::MulFOp::create(
                        rb, rl, extractAt(rb, rl, qs, {sIdx, i}), prod));
                acc[0] = insertAt(rb, rl, hi, acc[0], {sIdx, i});
                acc[1] = insertAt(rb, rl, lo, acc[1], {sIdx, i});
              }
              return acc;
            });
        qp = {qRows[0], qRows[1]};
        // The scores, a thread a query step t: S[t, s] for s <= t, the
        // products P(s+1, t) back from t, each key row's in turn.
        Split scores = splitBuffers(b, l, kTile, kTile);
        SmallVector<Value> sRows = threadLoop(
            b, l, kTile, ValueRange{scores.hi, scores.lo},
            [&](OpBuilder &tb, Location tl, ValueRange t, ValueRange bufs) {
              SmallVector<Value> zeros(kTile, floatConst(tb, tl, g.f32, 0.0));
              SmallVector<Value> sums = buildLoop(
                  tb, tl, indexConst(tb, tl, 0), indexConst(tb, tl, dk), zeros,
                  [&](OpBuilder &ib, Location il, ValueRange i,
                      ValueRange acc) {
                    Value qt = extractAt(ib, il, qs, {t[0], i[0]});
                    Value prod = floatConst(ib, il, g.f32, 1.0);
                    SmallVector<Value> next(acc);
                    for (int64_t s = kTile - 1; s >= 0; --s) {
                      Value sIdx = indexConst(ib, il, s);
                      Value seen = arith::CmpIOp::create(
                          ib, il, arith::CmpIPredicate::ule, sIdx, t[0]);
                      Value term = arith::MulFOp::create(
                          ib, il,
                          arith::MulFOp::create(
                              ib, il, qt, extractAt(ib, il, ks, {sIdx, i[0]})),
                          prod);
                      next[s] = arith::SelectOp::create(
                          ib, il, seen,
                          arith::AddFOp::create(ib, il, acc[s], term), acc[s]);
                      prod = arith::SelectOp::create(
                          ib, il, seen,
                          arith::MulFOp::create(
                              ib, il, prod,
                              extractAt(ib, il, as, {sIdx, i[0]})),
                          prod);
                    }
                    return next;
                  });
              Value hiBuf = bufs[0], loBuf = bufs[1];
              for (int64_t s = 0; s < kTile; ++s) {
                auto [hi, lo] = splitTf32(tb, tl, sums[s]);
                Value sIdx = indexConst(tb, tl, s);
                hiBuf = insertAt(tb, tl, hi, hiBuf, {t[0], sIdx});
                loBuf = insertAt(tb, tl, lo, loBuf, {t[0], sIdx});
              }
              return SmallVector<Value>{hiBuf, loBuf};
            });
        scores = {sRows[0], sRows[1]};
        Split vs =
            g.loadValues(b, l, idx, begin, splitBuffers(b, l, kTile, dv));
        // y = S V + (q P) E_c, E_c 16 rows at a time, each tile's sums
        // kept in the block buffer between them.
        Value staged = overTiles(
            b, l, kTile, dv, blockBuffer(b, l, kTile, dv),
            [&](OpBuilder &tb, Location tl, Value row, Value col, Value buf) {
              Value zero = indexConst(tb, tl, 0);
              return writeTile(tb, tl,
                               multiplyTiles(tb, tl, scores, row, zero, vs,
                                             zero, col, kTile,
                                             zeroTile(tb, tl)),
                               buf, row, col);
            });
        Split es = splitBuffers(b, l, kTile, dv);
        for (int64_t i0 = 0; i0 < dk; i0 += kTile) {
          es = loadSplit(b, l, es, kTile, dv,
                         [&](OpBuilder &eb, Location el, Value r, Value j) {
                           Value i = arith::AddIOp::create(
                               eb, el, r, indexConst(eb, el, i0));
                           return extractAt(eb, el, entering,
                                            concatIndices(idx, {c, i, j}));
                         });
          staged = overTiles(
              b, l, kTile, dv, staged,
              [&](OpBuilder &tb, Location tl, Value row, Value col, Value buf) {
                Value zero = indexConst(tb, tl, 0);
                Value sums = readTile(tb, tl, buf, row, col);
                return writeTile(tb, tl,
                                 multiplyTiles(tb, tl, qp, row,
                                               indexConst(tb, tl, i0), es, zero,
                                               col, kTile, sums),
                                 buf, row, col);
              });
        }
        // The chunk's steps in the sequence written out.
        Value y = storeRows(
            b, l, args[0], idx, kTile, dv,
            [&](OpBuilder &eb, Location el, Value s) {
              return g.step(eb, el, begin, s);
            },
            [&](OpBuilder &eb, Location el, Value s, Value j) {
              return extractAt(eb, el, staged, {s, j});
            });
        return SmallVector<Value>{y};
      });
  results.front().getDefiningOp()->setAttr(kGpuBlockAttrName,
                                           rewriter.getUnitAttr());
  return results.front();
}
