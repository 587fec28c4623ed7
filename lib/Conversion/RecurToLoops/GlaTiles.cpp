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
// The grad (gated_linear_attention_grad of the same kind) goes in the same
// chunks, with H_c the cotangent of the state after chunk c and G_t =
// sum_{u >= t} P(t+1, u) q_u dy_u^T + P(t+1, b+15) H_c that of S_t:
//  1-2. A_c, L_c and E_c as the forward's launches 1 and 2;
//  3. M_c = sum_t P(b, t) q_t dy_t^T, what the chunk's outputs send back
//     into E_c, as launch 1 with the queries decayed from the chunk's start;
//  4. H_{c-1} = A_c H_c + M_c and dinit a thread per column (the caller's);
//  5. dv = S^T dy + (k P(s+1, b+15)) H_c, as launch 3;
//  6. M^T = v dy^T, R^T = E_c dy^T and W^T = H_c v^T by tiles, then a
//     thread a key row i carries F[u] = S_{m-1}[i, :] . dy_u and f =
//     S_{m-1}[i, :] . H_c[i, :] through the chunk's steps m: da_m =
//     G_m[i, :] . S_{m-1}[i, :], dk_m = G_m[i, :] . v_m and dq_m =
//     S_m[i, :] . dy_m from them, every decay product again a product.
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
/// The backward's: the sent-back sums as launch 1 (statesBytes), the dv
/// launch as launch 3 (outputsBytes), and the launch of dq, dk and da.
int64_t rowGradBytes(int64_t dk, int64_t dv) {
  return 4 * (3 * 2 * kTile * dv + kTile * kTile + 2 * dk * kTile +
              2 * kTile * dk + kTile * (dk + 1));
}

/// What the launches of the forward and of the backward share: the
/// operands, the sizes and the chunk of a block.
struct TileForm {
  TileForm(OpBuilder &b, Location l, GlaTileOperands ops, ArrayRef<Value> lead,
           Value steps)
      : q(ops.q), k(ops.k), v(ops.v), a(ops.a), lead(lead.begin(), lead.end()),
        steps(steps), dk(cast<RankedTensorType>(q.getType()).getShape().back()),
        dv(cast<RankedTensorType>(v.getType()).getShape().back()),
        f32(b.getF32Type()),
        chunks(arith::CeilDivUIOp::create(b, l, steps, indexConst(b, l, kTile))
                   .getResult()) {}

  /// A loop of blocks, one per (leading index, chunk), the chunk fastest,
  /// tagged kGpuBlockAttrName, threading `init`: `body` given the block's
  /// leading indices, its chunk and the chunk's first step.
  SmallVector<Value> overBlocks(
      OpBuilder &rewriter, Location loc, ValueRange init,
      function_ref<SmallVector<Value>(OpBuilder &, Location, ValueRange idx,
                                      Value c, Value begin, ValueRange args)>
          body) const {
    SmallVector<Value> results = buildNest(
        rewriter, loc, ValueRange{blockCount(rewriter, loc, lead, chunks)},
        init, [&](OpBuilder &b, Location l, ValueRange f, ValueRange args) {
          std::pair<SmallVector<Value>, Value> block =
              blockAt(b, l, f[0], lead, chunks);
          Value begin = arith::MulIOp::create(b, l, block.second,
                                              indexConst(b, l, kTile));
          return body(b, l, block.first, block.second, begin, args);
        });
    results.front().getDefiningOp()->setAttr(kGpuBlockAttrName,
                                             rewriter.getUnitAttr());
    return results;
  }

  /// Step `s` of the chunk starting at `begin` (clamped into the sequence),
  /// and whether it is in it.
  std::pair<Value, Value> step(OpBuilder &b, Location l, Value begin,
                               Value s) const {
    return rowIn(b, l, begin, s, steps);
  }

  /// The chunk's rows of `rows` (`[lead..., T, dv]`, v or dy; from
  /// `begin`) split into `into`, rows past the end 0; with `transposed`,
  /// into `[dv, 16]`.
  Split loadValues(OpBuilder &b, Location l, ValueRange idx, Value begin,
                   Split into, Value rows = Value(),
                   bool transposed = false) const {
    Value tensor = rows ? rows : v;
    return loadSplit(
        b, l, into, kTile, dv,
        [&](OpBuilder &eb, Location el, Value s, Value j) {
          auto [t, inside] = step(eb, el, begin, s);
          return load(eb, el, tensor, idx, t, inside, j, 0.0);
        },
        transposed);
  }

  /// The chunk's a, k and q into block buffers `[16, dk]` (q's rows one
  /// element longer: a thread a query step reads a column of it), a past
  /// the end 1, k and q 0.
  SmallVector<Value> loadChunk(OpBuilder &b, Location l, ValueRange idx,
                               Value begin) const {
    return threadLoop(
        b, l, kWarp,
        ValueRange{blockBuffer(b, l, kTile, dk), blockBuffer(b, l, kTile, dk),
                   blockBuffer(b, l, kTile, dk + 1)},
        [&](OpBuilder &tb, Location tl, ValueRange tid, ValueRange bufs) {
          return overElements(
              tb, tl, tid[0], kTile, dk, bufs,
              [&](OpBuilder &eb, Location el, Value s, Value i,
                  ValueRange acc) {
                auto [t, inside] = step(eb, el, begin, s);
                // One statement each: argument order is unspecified.
                Value av = load(eb, el, a, idx, t, inside, i, 1.0);
                Value kv = load(eb, el, k, idx, t, inside, i, 0.0);
                Value qv = load(eb, el, q, idx, t, inside, i, 0.0);
                return SmallVector<Value>{insertAt(eb, el, av, acc[0], {s, i}),
                                          insertAt(eb, el, kv, acc[1], {s, i}),
                                          insertAt(eb, el, qv, acc[2], {s, i})};
              });
        });
  }

  /// The chunk's scores from its a, k and q in block buffers (loadChunk),
  /// a thread a query step t: S[t, s] = sum_i q_t[i] k_s[i] P(s+1, t)[i]
  /// for s <= t, 0 above, the products P(s+1, t) back from t, each key
  /// row's in turn; split, at (t, s), or at (s, t) with `transposed`.
  Split scores(OpBuilder &b, Location l, Value as, Value ks, Value qs,
               bool transposed) const {
    Split into = splitBuffers(b, l, kTile, kTile);
    SmallVector<Value> rows = threadLoop(
        b, l, kTile, ValueRange{into.hi, into.lo},
        [&](OpBuilder &tb, Location tl, ValueRange t, ValueRange bufs) {
          SmallVector<Value> zeros(kTile, floatConst(tb, tl, f32, 0.0));
          SmallVector<Value> sums = buildLoop(
              tb, tl, indexConst(tb, tl, 0), indexConst(tb, tl, dk), zeros,
              [&](OpBuilder &ib, Location il, ValueRange i, ValueRange acc) {
                Value qt = extractAt(ib, il, qs, {t[0], i[0]});
                Value prod = floatConst(ib, il, f32, 1.0);
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
                      ib, il, seen, arith::AddFOp::create(ib, il, acc[s], term),
                      acc[s]);
                  prod = arith::SelectOp::create(
                      ib, il, seen,
                      arith::MulFOp::create(
                          ib, il, prod, extractAt(ib, il, as, {sIdx, i[0]})),
                      prod);
                }
                return next;
              });
          Value hiBuf = bufs[0], loBuf = bufs[1];
          for (int64_t s = 0; s < kTile; ++s) {
            auto [hi, lo] = splitTf32(tb, tl, sums[s]);
            Value sIdx = indexConst(tb, tl, s);
            SmallVector<Value> at{t[0], sIdx};
            if (transposed)
              std::swap(at[0], at[1]);
            hiBuf = insertAt(tb, tl, hi, hiBuf, at);
            loBuf = insertAt(tb, tl, lo, loBuf, at);
          }
          return SmallVector<Value>{hiBuf, loBuf};
        });
    return {rows[0], rows[1]};
  }

  /// `staged` (`[16, dv]`) plus rows (`[16, dk]`, split) times the state
  /// `states[lead..., c]` (`[dk, dv]`), the state 16 rows at a time, each
  /// tile's sums kept in the block buffer between them.
  Value addStateProducts(OpBuilder &b, Location l, ValueRange idx, Value c,
                         Split rows, Value states, Value staged) const {
    Split es = splitBuffers(b, l, kTile, dv);
    for (int64_t i0 = 0; i0 < dk; i0 += kTile) {
      es = loadSplit(
          b, l, es, kTile, dv,
          [&](OpBuilder &eb, Location el, Value r, Value j) {
            Value i = arith::AddIOp::create(eb, el, r, indexConst(eb, el, i0));
            return extractAt(eb, el, states, concatIndices(idx, {c, i, j}));
          });
      staged = overTiles(
          b, l, kTile, dv, staged,
          [&](OpBuilder &tb, Location tl, Value row, Value col, Value buf) {
            Value zero = indexConst(tb, tl, 0);
            Value sums = readTile(tb, tl, buf, row, col);
            return writeTile(tb, tl,
                             multiplyTiles(tb, tl, rows, row,
                                           indexConst(tb, tl, i0), es, zero,
                                           col, kTile, sums),
                             buf, row, col);
          });
    }
    return staged;
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

/// Whether block buffers of `dk` and `dv` fit every launch: the forward's
/// (statesBytes, outputsBytes) and, with `grad`, the backward's (the same
/// two and rowGradBytes).
static bool fits(Value q, Value v, Value a, Type stateElem, bool grad) {
  auto qType = cast<RankedTensorType>(q.getType());
  int64_t dk = qType.getShape().back();
  int64_t dv = cast<RankedTensorType>(v.getType()).getShape().back();
  return qType.getElementType().isF32() &&
         cast<RankedTensorType>(a.getType()).getElementType().isF32() &&
         stateElem.isF32() && !ShapedType::isDynamic(dk) &&
         !ShapedType::isDynamic(dv) && dk % kTile == 0 && dv % kTile == 0 &&
         statesBytes(dk, dv) <= kSharedBytes &&
         outputsBytes(dk, dv) <= kSharedBytes &&
         (!grad || rowGradBytes(dk, dv) <= kSharedBytes);
}

bool loops::glaTilesApply(GatedLinearAttentionOp op) {
  return fits(op.getQ(), op.getV(), op.getA(),
              cast<RankedTensorType>(op.getState().getType()).getElementType(),
              /*grad=*/false);
}

bool loops::glaTilesApply(GatedLinearAttentionGradOp op) {
  return fits(op.getQ(), op.getV(), op.getA(),
              cast<RankedTensorType>(op.getDstate().getType()).getElementType(),
              /*grad=*/true);
}

int64_t loops::glaTileChunk() { return kTile; }

/// A block of one warp per (leading index, chunk): sum_s x_s[i] D_s[i]
/// y_s[j] over the chunk's steps s, `[lead..., chunks, dk, dv]`, for the
/// rows x (`[lead..., T, dk]`) and y (`[lead..., T, dv]`), D_s the decay
/// products from the step after s to the chunk's end, P(s+1, b+15), or,
/// with `prefix`, from its start to s, P(b, s). Its threads take the key
/// rows i, each walking the chunk (back from its last step, or on from
/// its first), the products written transposed, [dk, 16]; then the sums
/// by tiles, [dk, 16] x [16, dv]. Without `prefix` the chunks' decay
/// products A_c are written too (`[lead..., chunks, dk]`, the first
/// result; null with `prefix`).
static std::pair<Value, Value> chunkProducts(OpBuilder &rewriter, Location loc,
                                             const TileForm &g, Value x,
                                             Value y, bool prefix) {
  int64_t dk = g.dk, dv = g.dv;
  auto typeOf = [&](ArrayRef<int64_t> tail) {
    SmallVector<int64_t> shape(
        cast<RankedTensorType>(g.q.getType()).getShape().drop_back(2));
    shape.push_back(ShapedType::kDynamic);
    llvm::append_range(shape, tail);
    return RankedTensorType::get(shape, g.f32);
  };
  SmallVector<Value> sizes(g.lead);
  sizes.push_back(g.chunks);
  SmallVector<Value> init;
  if (!prefix)
    init.push_back(
        emptyLike(rewriter, loc, typeOf({dk}),
                  concatIndices(sizes, {indexConst(rewriter, loc, dk)})));
  SmallVector<Value> localSizes(sizes);
  localSizes.push_back(indexConst(rewriter, loc, dk));
  localSizes.push_back(indexConst(rewriter, loc, dv));
  init.push_back(emptyLike(rewriter, loc, typeOf({dk, dv}), localSizes));

  SmallVector<Value> results = g.overBlocks(
      rewriter, loc, init,
      [&](OpBuilder &b, Location l, ValueRange idx, Value c, Value begin,
          ValueRange args) {
        Split xt = splitBuffers(b, l, dk, kTile);
        // Key row i a thread (i = tid + 32 r): x_s[i] D_s[i] (and A_c[i]).
        SmallVector<Value> rowsInit{xt.hi, xt.lo};
        if (!prefix)
          rowsInit.push_back(args[0]);
        SmallVector<Value> rows = overRows(
            b, l, dk, rowsInit,
            [&](OpBuilder &rb, Location rl, Value i, ValueRange out) {
              SmallVector<Value> acc(out);
              Value prod = floatConst(rb, rl, g.f32, 1.0);
              for (int64_t m = 0; m < kTile; ++m) {
                int64_t s = prefix ? m : kTile - 1 - m;
                auto [t, inside] = g.step(rb, rl, begin, indexConst(rb, rl, s));
                Value xv = g.load(rb, rl, x, idx, t, inside, i, 0.0);
                Value av = g.load(rb, rl, g.a, idx, t, inside, i, 1.0);
                if (prefix)
                  prod = arith::MulFOp::create(rb, rl, prod, av);
                auto [hi, lo] =
                    splitTf32(rb, rl, arith::MulFOp::create(rb, rl, xv, prod));
                Value sIdx = indexConst(rb, rl, s);
                acc[0] = insertAt(rb, rl, hi, acc[0], {i, sIdx});
                acc[1] = insertAt(rb, rl, lo, acc[1], {i, sIdx});
                if (!prefix)
                  prod = arith::MulFOp::create(rb, rl, prod, av);
              }
              if (!prefix)
                acc[2] =
                    insertAt(rb, rl, prod, acc[2], concatIndices(idx, {c, i}));
              return acc;
            });
        xt = {rows[0], rows[1]};
        Split ys =
            g.loadValues(b, l, idx, begin, splitBuffers(b, l, kTile, dv), y);
        // The sums by tiles, into a block buffer.
        Value staged = blockBuffer(b, l, dk, dv);
        staged = overTiles(
            b, l, dk, dv, staged,
            [&](OpBuilder &tb, Location tl, Value row, Value col, Value buf) {
              Value zero = indexConst(tb, tl, 0);
              return writeTile(tb, tl,
                               multiplyTiles(tb, tl, xt, row, zero, ys, zero,
                                             col, kTile, zeroTile(tb, tl)),
                               buf, row, col);
            });
        Value local =
            threadLoop(b, l, kWarp, ValueRange{args.back()},
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
        SmallVector<Value> out;
        if (!prefix)
          out.push_back(rows[2]);
        out.push_back(local);
        return out;
      });
  if (prefix)
    return {Value(), results[0]};
  return {results[0], results[1]};
}

std::pair<Value, Value> loops::buildGlaTileStates(OpBuilder &rewriter,
                                                  Location loc,
                                                  GlaTileOperands ops,
                                                  ArrayRef<Value> lead,
                                                  Value steps) {
  TileForm g(rewriter, loc, ops, lead, steps);
  return chunkProducts(rewriter, loc, g, g.k, g.v, /*prefix=*/false);
}

/// A block of one warp per (leading index, chunk) writing the chunk's rows
/// of `init` (`[lead..., T, dv]`): the forward's outputs y = S v + (q_t
/// P(b, t)) E_c (launch 3; `states` E_c), or with `grad` dv = S^T dy +
/// (k_s P(s+1, b+15)) H_c (`states` H_c, `rows` dy), S the chunk's scores,
/// the decayed rows [16, dk] a thread a key row from the chunk's a, k and q.
static Value chunkOutputs(OpBuilder &rewriter, Location loc, const TileForm &g,
                          bool grad, Value rows, Value states, Value init) {
  int64_t dk = g.dk, dv = g.dv;
  SmallVector<Value> results = g.overBlocks(
      rewriter, loc, ValueRange{init},
      [&](OpBuilder &b, Location l, ValueRange idx, Value c, Value begin,
          ValueRange args) {
        SmallVector<Value> raw = g.loadChunk(b, l, idx, begin);
        Value as = raw[0], ks = raw[1], qs = raw[2];
        // The queries' rows q_t P(b, t), on from the chunk's first step, or
        // the keys' k_s P(s+1, b+15), back from its last: a thread a key
        // row.
        Split xp = splitBuffers(b, l, kTile, dk);
        SmallVector<Value> xRows = overRows(
            b, l, dk, ValueRange{xp.hi, xp.lo},
            [&](OpBuilder &rb, Location rl, Value i, ValueRange out) {
              SmallVector<Value> acc(out);
              Value prod = floatConst(rb, rl, g.f32, 1.0);
              for (int64_t m = 0; m < kTile; ++m) {
                Value sIdx = indexConst(rb, rl, grad ? kTile - 1 - m : m);
                auto decay = [&] {
                  prod = arith::MulFOp::create(
                      rb, rl, prod, extractAt(rb, rl, as, {sIdx, i}));
                };
                if (!grad)
                  decay();
                auto [hi, lo] = splitTf32(
                    rb, rl,
                    arith::MulFOp::create(
                        rb, rl, extractAt(rb, rl, grad ? ks : qs, {sIdx, i}),
                        prod));
                acc[0] = insertAt(rb, rl, hi, acc[0], {sIdx, i});
                acc[1] = insertAt(rb, rl, lo, acc[1], {sIdx, i});
                if (grad)
                  decay();
              }
              return acc;
            });
        xp = {xRows[0], xRows[1]};
        Split scores = g.scores(b, l, as, ks, qs, /*transposed=*/grad);
        Split ys =
            g.loadValues(b, l, idx, begin, splitBuffers(b, l, kTile, dv), rows);
        // S Y (or S^T Y) + (x P) X_c.
        Value staged = overTiles(
            b, l, kTile, dv, blockBuffer(b, l, kTile, dv),
            [&](OpBuilder &tb, Location tl, Value row, Value col, Value buf) {
              Value zero = indexConst(tb, tl, 0);
              return writeTile(tb, tl,
                               multiplyTiles(tb, tl, scores, row, zero, ys,
                                             zero, col, kTile,
                                             zeroTile(tb, tl)),
                               buf, row, col);
            });
        staged = g.addStateProducts(b, l, idx, c, xp, states, staged);
        // The chunk's steps in the sequence written out.
        Value out = storeRows(
            b, l, args[0], idx, kTile, dv,
            [&](OpBuilder &eb, Location el, Value s) {
              return g.step(eb, el, begin, s);
            },
            [&](OpBuilder &eb, Location el, Value s, Value j) {
              return extractAt(eb, el, staged, {s, j});
            });
        return SmallVector<Value>{out};
      });
  return results.front();
}

Value loops::buildGlaTileOutputs(OpBuilder &rewriter, Location loc,
                                 GlaTileOperands ops, ArrayRef<Value> lead,
                                 Value steps, Value entering, Value yInit) {
  TileForm g(rewriter, loc, ops, lead, steps);
  return chunkOutputs(rewriter, loc, g, /*grad=*/false, g.v, entering, yInit);
}

Value loops::buildGlaTileSent(OpBuilder &rewriter, Location loc,
                              GlaTileOperands ops, Value dy,
                              ArrayRef<Value> lead, Value steps) {
  TileForm g(rewriter, loc, ops, lead, steps);
  return chunkProducts(rewriter, loc, g, g.q, dy, /*prefix=*/true).second;
}

Value loops::buildGlaTileValueGrads(OpBuilder &rewriter, Location loc,
                                    GlaTileOperands ops, Value dy,
                                    ArrayRef<Value> lead, Value steps,
                                    Value later, Value dvInit) {
  TileForm g(rewriter, loc, ops, lead, steps);
  return chunkOutputs(rewriter, loc, g, /*grad=*/true, dy, later, dvInit);
}

SmallVector<Value> loops::buildGlaTileRowGrads(OpBuilder &rewriter,
                                               Location loc,
                                               GlaTileOperands ops, Value dy,
                                               ArrayRef<Value> lead,
                                               Value steps, Value entering,
                                               Value later, ValueRange inits) {
  TileForm g(rewriter, loc, ops, lead, steps);
  int64_t dk = g.dk, dv = g.dv;
  SmallVector<Value> results = g.overBlocks(
      rewriter, loc, inits,
      [&](OpBuilder &b, Location l, ValueRange idx, Value c, Value begin,
          ValueRange args) {
        Value zero = indexConst(b, l, 0);
        // The A operands go through one [16, dv] pair of buffers: v, then
        // 16 rows of E_c, then of H_c, and so on.
        Split rows =
            g.loadValues(b, l, idx, begin, splitBuffers(b, l, kTile, dv));
        Split dyT =
            g.loadValues(b, l, idx, begin, splitBuffers(b, l, dv, kTile), dy,
                         /*transposed=*/true);
        Split vT = g.loadValues(b, l, idx, begin, splitBuffers(b, l, dv, kTile),
                                Value(),
                                /*transposed=*/true);
        // M^T[s, u] = v_s . dy_u.
        Value mt = overTiles(
            b, l, kTile, kTile, blockBuffer(b, l, kTile, kTile),
            [&](OpBuilder &tb, Location tl, Value row, Value col, Value buf) {
              return writeTile(tb, tl,
                               multiplyTiles(tb, tl, rows, row, zero, dyT, zero,
                                             col, dv, zeroTile(tb, tl)),
                               buf, row, col);
            });
        // R^T[i, u] = E_c[i, :] . dy_u and W^T[i, s] = H_c[i, :] . v_s, the
        // states 16 key rows at a time.
        Value rt = blockBuffer(b, l, dk, kTile);
        Value wt = blockBuffer(b, l, dk, kTile);
        for (int64_t i0 = 0; i0 < dk; i0 += kTile) {
          Value row0 = indexConst(b, l, i0);
          // E_c's rows times dy^T, then H_c's times v^T.
          for (bool cotangents : {false, true}) {
            Value states = cotangents ? later : entering;
            Split other = cotangents ? vT : dyT;
            rows = loadSplit(b, l, rows, kTile, dv,
                             [&](OpBuilder &eb, Location el, Value r, Value j) {
                               Value i = arith::AddIOp::create(eb, el, r, row0);
                               return extractAt(eb, el, states,
                                                concatIndices(idx, {c, i, j}));
                             });
            Value &out = cotangents ? wt : rt;
            out = overTiles(
                b, l, kTile, kTile, out,
                [&](OpBuilder &tb, Location tl, Value row, Value col,
                    Value buf) {
                  return writeTile(
                      tb, tl,
                      multiplyTiles(tb, tl, rows, row, zero, other, zero, col,
                                    dv, zeroTile(tb, tl)),
                      buf, arith::AddIOp::create(tb, tl, row, row0), col);
                });
          }
        }
        // The chunk's a, k and q (read by a thread a key row from shared
        // memory: from global memory each step's address would stay in
        // registers).
        SmallVector<Value> raw = g.loadChunk(b, l, idx, begin);
        Value as = raw[0], ks = raw[1], qs = raw[2];
        // A thread a key row i: the projections of the state row before
        // each step onto the chunk's dy, F[u] = S_{m-1}[i, :] . dy_u (from
        // R^T at m = 0, then F[u] = a_m F[u] + k_m M[u, m]) and onto H_c,
        // f (from E_c[i, :] . H_c[i, :], then f = a_m f + k_m W^T[i, m]);
        // the cotangent of S_m, G_m[i, :] = sum_{u >= m} q_u P(m+1, u) dy_u
        // + P(m+1, b+15) H_c[i, :], gives da_m = G_m . S_{m-1}[i, :] and
        // dk_m = G_m . v_m, and dq_m = S_m[i, :] . dy_m is F[m] after the
        // step. The steps m go in a loop, F in registers: unrolled, the
        // 136 elements of M^T it reads would all be loaded ahead of the
        // rows (loop-invariant) and spill.
        SmallVector<Value> out = overRows(
            b, l, dk, args,
            [&](OpBuilder &rb, Location rl, Value i, ValueRange outs) {
              Type f32 = g.f32;
              Value fzero = floatConst(rb, rl, f32, 0.0);
              Value dot =
                  buildLoop(rb, rl, indexConst(rb, rl, 0),
                            indexConst(rb, rl, dv), ValueRange{fzero},
                            [&](OpBuilder &jb, Location jl, ValueRange j,
                                ValueRange acc) {
                              SmallVector<Value> at =
                                  concatIndices(idx, {c, i, j[0]});
                              Value e = extractAt(jb, jl, entering, at);
                              Value h = extractAt(jb, jl, later, at);
                              return SmallVector<Value>{arith::AddFOp::create(
                                  jb, jl, acc[0],
                                  arith::MulFOp::create(jb, jl, e, h))};
                            })
                      .front();
              SmallVector<Value> qv, av;
              for (int64_t u = 0; u < kTile; ++u) {
                Value uIdx = indexConst(rb, rl, u);
                qv.push_back(extractAt(rb, rl, qs, {uIdx, i}));
                av.push_back(extractAt(rb, rl, as, {uIdx, i}));
              }
              // Carried: dq, dk, da (the outputs), F (16), f, and the
              // values last written (a step past the end is clamped to
              // the last one, which an earlier step wrote: it writes that
              // step's values again).
              SmallVector<Value> init(outs);
              for (int64_t u = 0; u < kTile; ++u)
                init.push_back(
                    extractAt(rb, rl, rt, {i, indexConst(rb, rl, u)}));
              init.push_back(dot);
              init.append(3, fzero);
              SmallVector<Value> steps = buildLoop(
                  rb, rl, indexConst(rb, rl, 0), indexConst(rb, rl, kTile),
                  init,
                  [&](OpBuilder &mb, Location ml, ValueRange m,
                      ValueRange iter) {
                    SmallVector<Value> acc(iter.take_front(3));
                    SmallVector<Value> proj(iter.slice(3, kTile));
                    Value projH = iter[3 + kTile];
                    SmallVector<Value> last(iter.take_back(3));
                    auto [t, inside] = g.step(mb, ml, begin, m[0]);
                    Value am = extractAt(mb, ml, as, {m[0], i});
                    Value km = extractAt(mb, ml, ks, {m[0], i});
                    Value wm = extractAt(mb, ml, wt, {i, m[0]});
                    Value prod = floatConst(mb, ml, f32, 1.0);
                    Value da = fzero, dkv = fzero, dq = fzero;
                    SmallVector<Value> next(proj);
                    for (int64_t u = 0; u < kTile; ++u) {
                      Value uIdx = indexConst(mb, ml, u);
                      Value mmu = extractAt(mb, ml, mt, {m[0], uIdx});
                      // P(m+1, u) and q_u P(m+1, u), 0 for u < m.
                      Value after = arith::CmpIOp::create(
                          mb, ml, arith::CmpIPredicate::ugt, uIdx, m[0]);
                      Value active = arith::CmpIOp::create(
                          mb, ml, arith::CmpIPredicate::uge, uIdx, m[0]);
                      prod = arith::SelectOp::create(
                          mb, ml, after,
                          arith::MulFOp::create(mb, ml, prod, av[u]), prod);
                      // The terms of u < m left out by selects, not
                      // multiplied by 0: an inf there stays out of them.
                      Value weight = arith::MulFOp::create(mb, ml, qv[u], prod);
                      da = arith::SelectOp::create(
                          mb, ml, active,
                          arith::AddFOp::create(
                              mb, ml, da,
                              arith::MulFOp::create(mb, ml, weight, proj[u])),
                          da);
                      dkv = arith::SelectOp::create(
                          mb, ml, active,
                          arith::AddFOp::create(
                              mb, ml, dkv,
                              arith::MulFOp::create(mb, ml, weight, mmu)),
                          dkv);
                      // F[u] after the step (for u < m never read again).
                      next[u] = arith::AddFOp::create(
                          mb, ml, arith::MulFOp::create(mb, ml, am, proj[u]),
                          arith::MulFOp::create(mb, ml, km, mmu));
                      Value here = arith::CmpIOp::create(
                          mb, ml, arith::CmpIPredicate::eq, uIdx, m[0]);
                      dq = arith::SelectOp::create(mb, ml, here, next[u], dq);
                    }
                    da = arith::AddFOp::create(
                        mb, ml, da, arith::MulFOp::create(mb, ml, prod, projH));
                    dkv = arith::AddFOp::create(
                        mb, ml, dkv, arith::MulFOp::create(mb, ml, prod, wm));
                    Value nextH = arith::AddFOp::create(
                        mb, ml, arith::MulFOp::create(mb, ml, am, projH),
                        arith::MulFOp::create(mb, ml, km, wm));
                    SmallVector<Value> values{dq, dkv, da};
                    for (auto [x, value] : llvm::enumerate(values)) {
                      last[x] = arith::SelectOp::create(mb, ml, inside, value,
                                                        last[x]);
                      acc[x] = insertAt(mb, ml, last[x], acc[x],
                                        concatIndices(idx, {t, i}));
                    }
                    SmallVector<Value> result(acc);
                    llvm::append_range(result, next);
                    result.push_back(nextH);
                    llvm::append_range(result, last);
                    return result;
                  });
              steps.resize(3);
              return steps;
            },
            /*rolled=*/true);
        return out;
      });
  return results;
}
