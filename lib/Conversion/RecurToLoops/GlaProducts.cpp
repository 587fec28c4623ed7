//===- GlaProducts.cpp - gla forward and backward as chunked products -----===//
//
// Part of the Recur project.
//
// The product forms of recur.gated_linear_attention (chunked) and
// recur.gated_linear_attention_grad for real decays
// (`convert-recur-to-loops{gla-products}`, the CPU's forms): one
// leading index (batch, head) at a time, its steps in chunks of C, the
// chunk-local work as linalg contractions (which recur-block-contractions
// runs in register blocks) instead of a state update per step. With
// P[c] = a[0] ... a[c] the decays of a chunk up to step c (a vector over
// the key index i) and S0 the state entering the chunk:
//
//   Q~ = q P,  K~ = k / P,  K^ = k P[C-1] / P           (elementwise)
//   A  = tril(Q~ K~^T)                                 (C x C)
//   y  = A v + Q~ S0
//   S0' = P[C-1] S0 + K^^T v                           (the next chunk's)
//
// is the forward. The backward, with G the cotangent of the state leaving
// the chunk (from the later chunks, dstate for the last):
//
//   dA = tril(dy v^T)                                  (C x C)
//   dq = (dA K~ + dy S0^T) P
//   dk = (dA^T Q~ + (v G^T) P[C-1]) / P
//   dv = A^T dy + K^ G
//
// and G' = P[C-1] G + Q~^T dy from chunk to chunk backward (dinit is the
// last of those). The decays' cotangent goes through the identity
//
//   a_t da_t = sum_{s >= t} (q_s dq_s - k_s dk_s) + sum_j G[i, j] S[i, j]
//
// (the sums within the chunk, S the state leaving it), then da_t = that /
// a_t: the log-space gradient of GLA's chunked backward.
//
// Per leading index, the forward goes over the chunks in order, the state
// carried in a tile of its own; the backward first goes forward over the
// chunks stacking the state entering each (its K^^T v a contraction), then
// runs the chunks in reverse, carrying G. Each chunk's operands are built
// as tiles (rows past T padded with decay 1 and zeros, which change
// nothing), and every tile and product lives in buffers allocated once per
// index.
//
// P and 1 / P must stay in range, and the division by a_t must not magnify
// the identity's rounding: the form applies to a leading index whose decays
// all lie in [2^(-32 / C), 1] (so P >= 2^-32), checked when it runs; any
// other (a zero, a tiny or a growing decay, a NaN) takes the chunks' loops
// in log space or the recurrence step by step (the forward) or the reverse
// sweep (the backward). The caller builds that choice (Scans.cpp).
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"
#include "Utility.h"

#include "Recur/IR/Recur.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <cmath>

using namespace mlir;
using namespace mlir::recur;
using namespace mlir::recur::loops;

namespace {

/// The smallest decay the product form takes for chunks of `chunk` steps:
/// 2^(-32 / chunk), so that a chunk's decay products stay above 2^-32.
double smallestDecay(int64_t chunk) {
  return std::exp2(-32.0 / static_cast<double>(chunk));
}

/// Vectors of 256 bits over a row's contiguous elements: whole vectors,
/// then the row's rest as one vector (out-of-bounds lanes read `pad` and
/// are not written).
class Rows {
public:
  Rows(Type elem)
      : elem(elem), lanes(256 / cast<FloatType>(elem).getWidth()),
        vecType(VectorType::get({lanes}, elem)) {}

  using Body = function_ref<SmallVector<Value>(OpBuilder &, Location, Value j,
                                               ValueRange args)>;

  /// `body` over [0, n) a vector at a time, threading `args`.
  SmallVector<Value> over(OpBuilder &b, Location loc, Value n, ValueRange args,
                          Body body) {
    Value zero = indexConst(b, loc, 0);
    Value vec = indexConst(b, loc, lanes);
    Value whole = b.createOrFold<arith::MulIOp>(
        loc, b.createOrFold<arith::DivUIOp>(loc, n, vec), vec);
    SmallVector<Value> results(args);
    for (auto [lb, ub, step, bounded] :
         {std::tuple<Value, Value, Value, bool>{zero, whole, vec, true},
          {whole, n, vec, false}}) {
      std::optional<int64_t> first = getConstantIntValue(lb);
      if (first && first == getConstantIntValue(ub))
        continue;
      inBounds = bounded;
      auto loop = scf::ForOp::create(
          b, loc, lb, ub, step, results,
          [&](OpBuilder &jb, Location jl, Value j, ValueRange it) {
            scf::YieldOp::create(jb, jl, body(jb, jl, j, it));
          });
      results.assign(loop.getResults().begin(), loop.getResults().end());
    }
    return results;
  }

  /// The vector of `tensor` at `idx` (the last index its first lane).
  Value read(OpBuilder &b, Location loc, Value tensor, ValueRange idx,
             double pad = 0.0) const {
    return vector::TransferReadOp::create(b, loc, vecType, tensor, idx,
                                          floatConst(b, loc, elem, pad),
                                          ArrayRef<bool>{inBounds});
  }
  /// `tensor` with `x` written at `idx`.
  Value write(OpBuilder &b, Location loc, Value x, Value tensor,
              ValueRange idx) const {
    return vector::TransferWriteOp::create(b, loc, x, tensor, idx,
                                           ArrayRef<bool>{inBounds})
        .getResult();
  }
  /// `x` (a scalar) in every lane.
  Value splat(OpBuilder &b, Location loc, Value x) const {
    return vector::BroadcastOp::create(b, loc, vecType, x);
  }
  Value splat(OpBuilder &b, Location loc, double x) const {
    return splat(b, loc, floatConst(b, loc, elem, x));
  }

  Type elem;
  int64_t lanes;
  VectorType vecType;

private:
  /// Whether the loop being built reads and writes whole vectors.
  bool inBounds = true;
};

/// One chunk's operands as tiles: its steps' rows (past T: decay 1,
/// zeros).
struct ChunkTiles {
  /// [C, dk]: P, q P, k / P and k P[C-1] / P; [dk]: P[C-1].
  Value prod, qt, kt, kh, last;
  /// [C, dv]: v and dy.
  Value v, dy;
};

/// The operands of a gla (forward: dy and dstate null) or of its gradient.
struct GlaOperands {
  Value q, k, v, a, init, dy, dstate;
  int64_t chunk;
};

/// The builder of one leading index's product form.
class Products {
public:
  Products(OpBuilder &b, Location loc, const GlaOperands &ops, ValueRange lead)
      : ops(ops), lead(lead), vec(getElementTypeOrSelf(ops.q.getType())) {
    auto qType = cast<RankedTensorType>(ops.q.getType());
    elem = qType.getElementType();
    int64_t rank = qType.getRank();
    chunk = ops.chunk;
    steps = dimSize(b, loc, ops.q, rank - 2);
    dk = dimSize(b, loc, ops.q, rank - 1);
    dv = dimSize(b, loc, ops.v, rank - 1);
    c = indexConst(b, loc, chunk);
    zero = indexConst(b, loc, 0);
    one = indexConst(b, loc, 1);
    chunks = affine::AffineApplyOp::create(
        b, loc,
        AffineMap::get(0, 1,
                       getAffineSymbolExpr(0, b.getContext()).ceilDiv(chunk)),
        ValueRange{steps});
  }

  /// (y, state) with this leading index's elements written: the chunks in
  /// order, the state entering each carried.
  SmallVector<Value> forward(OpBuilder &b, Location loc, Value y, Value state);

  /// (dq, dk, dv, da, dinit) with this leading index's elements written.
  SmallVector<Value> backward(OpBuilder &b, Location loc, ValueRange results);

private:
  SmallVector<Value> at(ValueRange tail) { return concatIndices(lead, tail); }

  /// Scratch of `elem` with dimensions `sizes` for one iteration.
  Value scratch(OpBuilder &b, Location loc, ArrayRef<Value> sizes) {
    SmallVector<int64_t> shape(sizes.size(), ShapedType::kDynamic);
    for (auto [d, size] : llvm::enumerate(sizes))
      if (std::optional<int64_t> n = getConstantIntValue(size))
        shape[d] = *n;
    return privateScratch(b, loc, RankedTensorType::get(shape, elem), sizes);
  }
  /// `dest` filled with zeros.
  Value zeros(OpBuilder &b, Location loc, Value dest) {
    return linalg::FillOp::create(b, loc,
                                  ValueRange{floatConst(b, loc, elem, 0.0)},
                                  ValueRange{dest})
        .getResult(0);
  }
  /// `x` `[m, n]` transposed into `dest` `[n, m]`: an f32 tile of static
  /// sizes that are multiples of 8 by blocks of 8 x 8, each eight rows of
  /// vectors shuffled into eight columns (AVX's unpack, shuffle and 128-bit
  /// permute, 24 shuffles); otherwise linalg.transpose (element by
  /// element).
  Value transposed(OpBuilder &b, Location loc, Value x, Value dest) {
    auto type = cast<RankedTensorType>(x.getType());
    if (!elem.isF32() || !type.hasStaticShape() || type.getDimSize(0) % 8 ||
        type.getDimSize(1) % 8)
      return linalg::TransposeOp::create(b, loc, x, dest,
                                         ArrayRef<int64_t>{1, 0})
          ->getResult(0);
    auto vecType = VectorType::get({8}, elem);
    Value pad = floatConst(b, loc, elem, 0.0);
    return loops(
        b, loc,
        {indexConst(b, loc, type.getDimSize(0) / 8),
         indexConst(b, loc, type.getDimSize(1) / 8)},
        {dest}, [&](OpBuilder &tb, Location tl, ValueRange ij, ValueRange it) {
          Value eight = indexConst(tb, tl, 8);
          Value r0 = arith::MulIOp::create(tb, tl, ij[0], eight);
          Value c0 = arith::MulIOp::create(tb, tl, ij[1], eight);
          auto plus = [&](Value base, int64_t k) -> Value {
            return arith::AddIOp::create(tb, tl, base, indexConst(tb, tl, k));
          };
          auto shuffle = [&](Value u, Value v, ArrayRef<int64_t> mask) {
            return vector::ShuffleOp::create(tb, tl, u, v, mask).getResult();
          };
          SmallVector<Value> rows;
          for (int64_t i = 0; i < 8; ++i)
            rows.push_back(vector::TransferReadOp::create(
                tb, tl, vecType, x, ValueRange{plus(r0, i), c0}, pad,
                ArrayRef<bool>{true}));
          const int64_t lo[] = {0, 8, 1, 9, 4, 12, 5, 13};
          const int64_t hi[] = {2, 10, 3, 11, 6, 14, 7, 15};
          const int64_t even[] = {0, 1, 8, 9, 4, 5, 12, 13};
          const int64_t odd[] = {2, 3, 10, 11, 6, 7, 14, 15};
          const int64_t low128[] = {0, 1, 2, 3, 8, 9, 10, 11};
          const int64_t high128[] = {4, 5, 6, 7, 12, 13, 14, 15};
          SmallVector<Value> t, u, cols(8);
          for (int64_t i = 0; i < 4; ++i) {
            t.push_back(shuffle(rows[2 * i], rows[2 * i + 1], lo));
            t.push_back(shuffle(rows[2 * i], rows[2 * i + 1], hi));
          }
          for (int64_t h = 0; h < 2; ++h)
            for (int64_t i = 0; i < 2; ++i) {
              u.push_back(shuffle(t[4 * h + i], t[4 * h + i + 2], even));
              u.push_back(shuffle(t[4 * h + i], t[4 * h + i + 2], odd));
            }
          for (int64_t i = 0; i < 4; ++i) {
            cols[i] = shuffle(u[i], u[i + 4], low128);
            cols[i + 4] = shuffle(u[i], u[i + 4], high128);
          }
          Value out = it[0];
          for (int64_t i = 0; i < 8; ++i)
            out = vector::TransferWriteOp::create(tb, tl, cols[i], out,
                                                  ValueRange{plus(c0, i), r0},
                                                  ArrayRef<bool>{true})
                      .getResult();
          return SmallVector<Value>{out};
        })[0];
  }

  /// What a product knows of its zeros (see recur-block-contractions).
  enum class Triangle {
    None,
    /// x is zero above its diagonal (a masked score tile).
    LowerX,
    /// Only the result's elements on and below the diagonal are read.
    LowerResult
  };

  /// `init[row, col] += sum_red x * y` over the dimensions (row, col, red),
  /// the operands' maps given as dimension lists: a contraction that
  /// recur-block-contractions runs in register blocks.
  Value product(OpBuilder &b, Location loc, Value x, ArrayRef<unsigned> xDims,
                Value y, ArrayRef<unsigned> yDims, Value init,
                Triangle triangle = Triangle::None) {
    MLIRContext *ctx = b.getContext();
    auto map = [&](ArrayRef<unsigned> dims) {
      SmallVector<AffineExpr> exprs;
      for (unsigned d : dims)
        exprs.push_back(getAffineDimExpr(d, ctx));
      return AffineMap::get(3, 0, exprs, ctx);
    };
    SmallVector<AffineMap> maps{map(xDims), map(yDims), map({0, 1})};
    SmallVector<utils::IteratorType> iters{utils::IteratorType::parallel,
                                           utils::IteratorType::parallel,
                                           utils::IteratorType::reduction};
    auto generic = linalg::GenericOp::create(
        b, loc, TypeRange{init.getType()}, ValueRange{x, y}, ValueRange{init},
        maps, iters, [](OpBuilder &gb, Location gl, ValueRange args) {
          Value p = arith::MulFOp::create(gb, gl, args[0], args[1]);
          linalg::YieldOp::create(
              gb, gl, ValueRange{arith::AddFOp::create(gb, gl, args[2], p)});
        });
    switch (triangle) {
    case Triangle::None:
      break;
    case Triangle::LowerX:
      generic->setDiscardableAttr(kLowerTriangularInputAttrName,
                                  b.getI64IntegerAttr(0));
      break;
    case Triangle::LowerResult:
      generic->setDiscardableAttr(kLowerTriangularResultAttrName,
                                  b.getUnitAttr());
      break;
    }
    return generic.getResult(0);
  }

  /// tril(x yT) over (row, col, red) for `x` `[C, d]` and `yT` `[d, C]`,
  /// written into `dest`: a chunk's scores masked to the steps they may
  /// see.
  Value maskedScores(OpBuilder &b, Location loc, Value x, Value yT,
                     Value dest) {
    return lowerTriangle(b, loc,
                         product(b, loc, x, {0, 2}, yT, {2, 1},
                                 zeros(b, loc, dest), Triangle::LowerResult));
  }

  /// `x[r, s]` zeroed above the diagonal (s > r).
  Value lowerTriangle(OpBuilder &b, Location loc, Value x) {
    MLIRContext *ctx = b.getContext();
    AffineMap id = AffineMap::getMultiDimIdentityMap(2, ctx);
    SmallVector<utils::IteratorType> iters(2, utils::IteratorType::parallel);
    return linalg::GenericOp::create(
               b, loc, TypeRange{x.getType()}, ValueRange{}, ValueRange{x},
               SmallVector<AffineMap>{id}, iters,
               [&](OpBuilder &gb, Location gl, ValueRange args) {
                 Value r = linalg::IndexOp::create(gb, gl, 0);
                 Value s = linalg::IndexOp::create(gb, gl, 1);
                 Value keep = arith::CmpIOp::create(
                     gb, gl, arith::CmpIPredicate::ule, s, r);
                 linalg::YieldOp::create(gb, gl,
                                         ValueRange{arith::SelectOp::create(
                                             gb, gl, keep, args[0],
                                             floatConst(gb, gl, elem, 0.0))});
               })
        .getResult(0);
  }

  /// `x` `[dk, dv]` with its rows scaled by `last` `[dk]` and `delta` added
  /// (P[C-1] x + delta, the update of a state or its cotangent across a
  /// chunk), in place.
  Value decayRows(OpBuilder &b, Location loc, Value last, Value x,
                  Value delta) {
    return loops(
        b, loc, {dk}, {x},
        [&](OpBuilder &ib, Location il, ValueRange i, ValueRange iit) {
          Value g = vec.splat(ib, il, extractAt(ib, il, last, i));
          return vec.over(
              ib, il, dv, iit,
              [&](OpBuilder &jb, Location jl, Value j, ValueRange jit) {
                SmallVector<Value> idx{i[0], j};
                Value next = arith::AddFOp::create(
                    jb, jl,
                    arith::MulFOp::create(jb, jl, g,
                                          vec.read(jb, jl, jit[0], idx)),
                    vec.read(jb, jl, delta, idx));
                return SmallVector<Value>{vec.write(jb, jl, next, jit[0], idx)};
              });
        })[0];
  }

  /// Row `row` of a `[?, dk, dv]` stack, as a `[dk, dv]` tensor.
  Value stackRow(OpBuilder &b, Location loc, Value stack, Value row) {
    SmallVector<OpFoldResult> offsets{row, b.getIndexAttr(0),
                                      b.getIndexAttr(0)};
    SmallVector<OpFoldResult> sizes{b.getIndexAttr(1), getAsOpFoldResult(dk),
                                    getAsOpFoldResult(dv)};
    SmallVector<OpFoldResult> strides(3, b.getIndexAttr(1));
    auto type = RankedTensorType::get(
        {getConstantIntValue(dk).value_or(ShapedType::kDynamic),
         getConstantIntValue(dv).value_or(ShapedType::kDynamic)},
        elem);
    return tensor::ExtractSliceOp::create(b, loc, type, stack, offsets, sizes,
                                          strides);
  }

  /// Nested loops (untagged: one leading index runs on one thread) over
  /// [0, ubs) threading `args`.
  SmallVector<Value> loops(OpBuilder &lb, Location ll, ArrayRef<Value> ubs,
                           ValueRange args, LoopBody body) {
    SmallVector<Value> lbs(ubs.size(), zero), strides(ubs.size(), one);
    return SmallVector<Value>(
        scf::buildLoopNest(
            lb, ll, lbs, ubs, strides, args,
            [&](OpBuilder &nb, Location nl, ValueRange ivs, ValueRange it) {
              return scf::ValueVector(body(nb, nl, ivs, it));
            })
            .results);
  }

  /// `dst[prefix..., :] = src[srcPrefix..., :]` over a row of `n`.
  Value copyRow(OpBuilder &rb, Location rl, Value src, ValueRange srcPrefix,
                Value dst, ValueRange prefix, Value n) {
    return vec.over(rb, rl, n, {dst},
                    [&](OpBuilder &jb, Location jl, Value j, ValueRange it) {
                      Value x =
                          vec.read(jb, jl, src, concatIndices(srcPrefix, j));
                      return SmallVector<Value>{vec.write(
                          jb, jl, x, it[0], concatIndices(prefix, j))};
                    })[0];
  }

  /// Scratch for a chunk's tiles (dy's with `withDy`), allocated once per
  /// leading index.
  ChunkTiles tilePool(OpBuilder &b, Location loc, bool withDy) {
    ChunkTiles pool;
    pool.prod = scratch(b, loc, {c, dk});
    pool.qt = scratch(b, loc, {c, dk});
    pool.kt = scratch(b, loc, {c, dk});
    pool.kh = scratch(b, loc, {c, dk});
    pool.last = scratch(b, loc, {dk});
    pool.v = scratch(b, loc, {c, dv});
    if (withDy)
      pool.dy = scratch(b, loc, {c, dv});
    return pool;
  }

  /// Chunk `n`'s tiles, written into `dest`'s: P, its last row, K~, K^ and
  /// v, with Q~ when `withQ` is set and dy when `withDy` is.
  ChunkTiles tiles(OpBuilder &b, Location loc, Value n, bool withQ, bool withDy,
                   const ChunkTiles &dest);

  GlaOperands ops;
  ValueRange lead;
  Rows vec;
  Type elem;
  int64_t chunk;
  Value steps, dk, dv, c, zero, one, chunks;
};

ChunkTiles Products::tiles(OpBuilder &b, Location loc, Value n, bool withQ,
                           bool withDy, const ChunkTiles &dest) {
  Value last = arith::SubIOp::create(b, loc, steps, one);
  ChunkTiles t = dest;
  if (!withQ)
    t.qt = Value();
  if (!withDy)
    t.dy = Value();
  SmallVector<Value> keyTiles{t.prod, t.kt};
  if (withQ)
    keyTiles.push_back(t.qt);
  SmallVector<Value> valueTiles{t.v};
  if (withDy)
    valueTiles.push_back(t.dy);
  SmallVector<Value> init(keyTiles);
  llvm::append_range(init, valueTiles);
  size_t numKeys = keyTiles.size();
  SmallVector<Value> rows = loops(
      b, loc, {c}, init,
      [&](OpBuilder &rb, Location rl, ValueRange r, ValueRange rit) {
        // The row's step, clamped to the last (a padding row of the last
        // chunk reads the last step, then selects its padding).
        Value step = arith::AddIOp::create(
            rb, rl, arith::MulIOp::create(rb, rl, n, c), r[0]);
        Value valid = arith::CmpIOp::create(rb, rl, arith::CmpIPredicate::ult,
                                            step, steps);
        step = arith::MinUIOp::create(rb, rl, step, last);
        Value first =
            arith::CmpIOp::create(rb, rl, arith::CmpIPredicate::eq, r[0], zero);
        Value prevRow = arith::SelectOp::create(
            rb, rl, first, zero, arith::SubIOp::create(rb, rl, r[0], one));
        auto orPad = [&](OpBuilder &ib, Location il, Value src, Value i,
                         double pad) -> Value {
          return arith::SelectOp::create(ib, il, valid,
                                         vec.read(ib, il, src, at({step, i})),
                                         vec.splat(ib, il, pad));
        };
        SmallVector<Value> byKey = vec.over(
            rb, rl, dk, rit.take_front(numKeys),
            [&](OpBuilder &ib, Location il, Value i, ValueRange iit) {
              Value a = orPad(ib, il, ops.a, i, 1.0);
              Value k = orPad(ib, il, ops.k, i, 0.0);
              Value prev = arith::SelectOp::create(
                  ib, il, first, vec.splat(ib, il, 1.0),
                  vec.read(ib, il, iit[0], ValueRange{prevRow, i}));
              Value g = arith::MulFOp::create(ib, il, prev, a);
              SmallVector<Value> idx{r[0], i};
              SmallVector<Value> out{
                  vec.write(ib, il, g, iit[0], idx),
                  vec.write(ib, il, arith::DivFOp::create(ib, il, k, g), iit[1],
                            idx)};
              if (withQ) {
                Value q = orPad(ib, il, ops.q, i, 0.0);
                out.push_back(vec.write(
                    ib, il, arith::MulFOp::create(ib, il, q, g), iit[2], idx));
              }
              return out;
            });
        SmallVector<Value> byValue = vec.over(
            rb, rl, dv, rit.drop_front(numKeys),
            [&](OpBuilder &jb, Location jl, Value j, ValueRange jit) {
              SmallVector<Value> idx{r[0], j};
              SmallVector<Value> out{
                  vec.write(jb, jl, orPad(jb, jl, ops.v, j, 0.0), jit[0], idx)};
              if (withDy)
                out.push_back(vec.write(jb, jl, orPad(jb, jl, ops.dy, j, 0.0),
                                        jit[1], idx));
              return out;
            });
        SmallVector<Value> next(byKey);
        llvm::append_range(next, byValue);
        return next;
      });
  t.prod = rows[0];
  t.kt = rows[1];
  if (withQ)
    t.qt = rows[2];
  t.v = rows[numKeys];
  if (withDy)
    t.dy = rows[numKeys + 1];
  t.last =
      copyRow(b, loc, t.prod, {indexConst(b, loc, chunk - 1)}, t.last, {}, dk);
  t.kh = loops(b, loc, {c}, {t.kh},
               [&](OpBuilder &rb, Location rl, ValueRange r, ValueRange rit) {
                 return vec.over(
                     rb, rl, dk, rit,
                     [&](OpBuilder &ib, Location il, Value i, ValueRange iit) {
                       SmallVector<Value> idx{r[0], i};
                       Value x = arith::MulFOp::create(
                           ib, il, vec.read(ib, il, t.kt, idx),
                           vec.read(ib, il, t.last, ValueRange{i}));
                       return SmallVector<Value>{
                           vec.write(ib, il, x, iit[0], idx)};
                     });
               })[0];
  return t;
}

SmallVector<Value> Products::forward(OpBuilder &b, Location loc, Value y,
                                     Value state) {
  // Every chunk's tiles and products go to these, allocated once per
  // leading index (each chunk overwrites what it reads of them: a masked
  // score tile only on and below its diagonal).
  ChunkTiles pool = tilePool(b, loc, /*withDy=*/false);
  Value ktT = scratch(b, loc, {dk, c});
  Value scoresBuf = scratch(b, loc, {c, c}), outBuf = scratch(b, loc, {c, dv});
  Value deltaBuf = scratch(b, loc, {dk, dv});

  // S, the state entering each chunk: on entry, `state`'s at this index.
  Value entering = loops(
      b, loc, {dk}, {scratch(b, loc, {dk, dv})},
      [&](OpBuilder &ib, Location il, ValueRange i, ValueRange it) {
        return SmallVector<Value>{copyRow(ib, il, state, at(i), it[0], i, dv)};
      })[0];
  SmallVector<Value> out = loops(
      b, loc, {chunks}, {y, entering},
      [&](OpBuilder &nb, Location nl, ValueRange n, ValueRange it) {
        ChunkTiles t =
            tiles(nb, nl, n[0], /*withQ=*/true, /*withDy=*/false, pool);
        Value s = it[1];
        // y = tril(Q~ K~^T) v + Q~ S and the state's increment K^^T v, over
        // (row, col, red).
        Value kTiles = transposed(nb, nl, t.kt, ktT);
        Value scores = maskedScores(nb, nl, t.qt, kTiles, scoresBuf);
        Value outs = product(nb, nl, scores, {0, 2}, t.v, {2, 1},
                             zeros(nb, nl, outBuf), Triangle::LowerX);
        outs = product(nb, nl, t.qt, {0, 2}, s, {2, 1}, outs);
        Value delta =
            product(nb, nl, t.kh, {2, 0}, t.v, {2, 1}, zeros(nb, nl, deltaBuf));

        // The chunk's rows of y (past T: none).
        Value start = arith::MulIOp::create(nb, nl, n[0], c);
        Value len = arith::MinUIOp::create(
            nb, nl, c, arith::SubIOp::create(nb, nl, steps, start));
        Value written = loops(
            nb, nl, {len}, {it[0]},
            [&](OpBuilder &rb, Location rl, ValueRange r, ValueRange rit) {
              Value step = arith::AddIOp::create(rb, rl, start, r[0]);
              return SmallVector<Value>{
                  copyRow(rb, rl, outs, {r[0]}, rit[0], at({step}), dv)};
            })[0];

        // The state leaving the chunk: P[C-1] S + K^^T v.
        Value leaving = decayRows(nb, nl, t.last, s, delta);
        return SmallVector<Value>{written, leaving};
      });

  Value last = loops(
      b, loc, {dk}, {state},
      [&](OpBuilder &ib, Location il, ValueRange i, ValueRange it) {
        return SmallVector<Value>{copyRow(ib, il, out[1], i, it[0], at(i), dv)};
      })[0];
  return {out[0], last};
}

SmallVector<Value> Products::backward(OpBuilder &b, Location loc,
                                      ValueRange results) {
  auto reassoc = arith::FastMathFlags::reassoc | arith::FastMathFlags::contract;
  // Every chunk's tiles and products go to these, allocated once per
  // leading index (each chunk overwrites what it reads of them: a masked
  // score tile only on and below its diagonal).
  ChunkTiles pool = tilePool(b, loc, /*withDy=*/true);
  Value ktT = scratch(b, loc, {dk, c}), vT = scratch(b, loc, {dv, c});
  Value enteringT = scratch(b, loc, {dv, dk}), gT = scratch(b, loc, {dv, dk});
  Value scoresBuf = scratch(b, loc, {c, c}),
        dScoresBuf = scratch(b, loc, {c, c});
  Value dqtBuf = scratch(b, loc, {c, dk}), dktBuf = scratch(b, loc, {c, dk});
  Value dkhBuf = scratch(b, loc, {c, dk}), dvcBuf = scratch(b, loc, {c, dv});
  Value deltaBuf = scratch(b, loc, {dk, dv}), endsBuf = scratch(b, loc, {dk});

  // 1. Forward: the state entering each chunk, states[n] (states[N] the
  // final state): states[n + 1] = P[C-1] states[n] + K^^T v.
  Value chunksPlusOne = arith::AddIOp::create(b, loc, chunks, one);
  Value states = scratch(b, loc, {chunksPlusOne, dk, dv});
  states =
      loops(b, loc, {dk}, {states},
            [&](OpBuilder &ib, Location il, ValueRange i, ValueRange it) {
              if (ops.init)
                return SmallVector<Value>{
                    copyRow(ib, il, ops.init, at(i), it[0], {zero, i[0]}, dv)};
              return vec.over(
                  ib, il, dv, it,
                  [&](OpBuilder &jb, Location jl, Value j, ValueRange jit) {
                    return SmallVector<Value>{
                        vec.write(jb, jl, vec.splat(jb, jl, 0.0), jit[0],
                                  ValueRange{zero, i[0], j})};
                  });
            })[0];
  states = loops(
      b, loc, {chunks}, {states},
      [&](OpBuilder &nb, Location nl, ValueRange n, ValueRange it) {
        ChunkTiles t =
            tiles(nb, nl, n[0], /*withQ=*/false, /*withDy=*/false, pool);
        Value delta =
            product(nb, nl, t.kh, {2, 0}, t.v, {2, 1}, zeros(nb, nl, deltaBuf));
        Value after = arith::AddIOp::create(nb, nl, n[0], one);
        return loops(
            nb, nl, {dk}, it,
            [&](OpBuilder &ib, Location il, ValueRange i, ValueRange iit) {
              Value g = vec.splat(ib, il, extractAt(ib, il, t.last, i));
              return vec.over(
                  ib, il, dv, iit,
                  [&](OpBuilder &jb, Location jl, Value j, ValueRange jit) {
                    Value s =
                        vec.read(jb, jl, jit[0], ValueRange{n[0], i[0], j});
                    Value d = vec.read(jb, jl, delta, ValueRange{i[0], j});
                    Value next = arith::AddFOp::create(
                        jb, jl, arith::MulFOp::create(jb, jl, g, s), d);
                    return SmallVector<Value>{vec.write(
                        jb, jl, next, jit[0], ValueRange{after, i[0], j})};
                  });
            });
      })[0];

  // 2. Backward, chunk by chunk from the last, carrying G, the cotangent
  // of the state leaving the chunk (dstate at first; dinit at the end).
  Value carried = scratch(b, loc, {dk, dv});
  carried = loops(b, loc, {dk}, {carried},
                  [&](OpBuilder &ib, Location il, ValueRange i, ValueRange it) {
                    return SmallVector<Value>{
                        copyRow(ib, il, ops.dstate, at(i), it[0], i, dv)};
                  })[0];
  Value lastChunk = arith::SubIOp::create(b, loc, chunks, one);
  SmallVector<Value> init(results.take_front(4));
  init.push_back(carried);
  SmallVector<Value> out = loops(
      b, loc, {chunks}, init,
      [&](OpBuilder &nb, Location nl, ValueRange nn, ValueRange it) {
        Value n = arith::SubIOp::create(nb, nl, lastChunk, nn[0]);
        Value after = arith::AddIOp::create(nb, nl, n, one);
        Value g = it[4];
        ChunkTiles t = tiles(nb, nl, n, /*withQ=*/true, /*withDy=*/true, pool);
        Value entering = stackRow(nb, nl, states, n);
        Value leaving = stackRow(nb, nl, states, after);

        // E[i] = sum_j G[i, j] S[i, j], S the state leaving the chunk.
        Value ends = loops(
            nb, nl, {dk}, {endsBuf},
            [&](OpBuilder &ib, Location il, ValueRange i, ValueRange iit) {
              Value sum = vec.over(
                  ib, il, dv, {vec.splat(ib, il, 0.0)},
                  [&](OpBuilder &jb, Location jl, Value j, ValueRange jit) {
                    Value h = vec.read(jb, jl, g, ValueRange{i[0], j});
                    Value s = vec.read(jb, jl, leaving, ValueRange{i[0], j});
                    return SmallVector<Value>{arith::AddFOp::create(
                        jb, jl, jit[0],
                        arith::MulFOp::create(jb, jl, h, s, reassoc), reassoc)};
                  })[0];
              Value e = vector::ReductionOp::create(
                  ib, il, vector::CombiningKind::ADD, sum, reassoc);
              return SmallVector<Value>{insertAt(ib, il, e, iit[0], i)};
            })[0];

        // The chunk's products, over (row, col, red).
        // (B operands whose columns are not contiguous are transposed
        // here, into the pool, so that recur-block-contractions reads them
        // by rows without a copy of its own.)
        Value kTiles = transposed(nb, nl, t.kt, ktT);
        Value vTiles = transposed(nb, nl, t.v, vT);
        Value sT = transposed(nb, nl, entering, enteringT);
        Value hT = transposed(nb, nl, g, gT);
        Value scores = maskedScores(nb, nl, t.qt, kTiles, scoresBuf);
        Value dScores = maskedScores(nb, nl, t.dy, vTiles, dScoresBuf);
        Value dqt = product(nb, nl, dScores, {0, 2}, t.kt, {2, 1},
                            zeros(nb, nl, dqtBuf), Triangle::LowerX);
        dqt = product(nb, nl, t.dy, {0, 2}, sT, {2, 1}, dqt);
        Value dkt = product(nb, nl, dScores, {2, 0}, t.qt, {2, 1},
                            zeros(nb, nl, dktBuf), Triangle::LowerX);
        Value dkh =
            product(nb, nl, t.v, {0, 2}, hT, {2, 1}, zeros(nb, nl, dkhBuf));
        Value dvc = product(nb, nl, scores, {2, 0}, t.dy, {2, 1},
                            zeros(nb, nl, dvcBuf), Triangle::LowerX);
        dvc = product(nb, nl, t.kh, {0, 2}, g, {2, 1}, dvc);
        Value deltaG = product(nb, nl, t.qt, {2, 0}, t.dy, {2, 1},
                               zeros(nb, nl, deltaBuf));

        // The chunk's steps in reverse (past T: none): dq, dk, da (through
        // a_t da_t, summed from the chunk's end) and dv.
        Value start = arith::MulIOp::create(nb, nl, n, c);
        Value len = arith::MinUIOp::create(
            nb, nl, c, arith::SubIOp::create(nb, nl, steps, start));
        Value lastRow = arith::SubIOp::create(nb, nl, len, one);
        SmallVector<Value> written = loops(
            nb, nl, {len}, {it[0], it[1], it[2], it[3], ends},
            [&](OpBuilder &rb, Location rl, ValueRange rr, ValueRange rit) {
              Value r = arith::SubIOp::create(rb, rl, lastRow, rr[0]);
              Value step = arith::AddIOp::create(rb, rl, start, r);
              SmallVector<Value> byKey = vec.over(
                  rb, rl, dk, {rit[0], rit[1], rit[3], rit[4]},
                  [&](OpBuilder &ib, Location il, Value i, ValueRange iit) {
                    SmallVector<Value> cidx{r, i};
                    SmallVector<Value> tidx = at({step, i});
                    Value p = vec.read(ib, il, t.prod, cidx);
                    Value dq = arith::MulFOp::create(
                        ib, il, vec.read(ib, il, dqt, cidx), p);
                    Value fromEnd = arith::MulFOp::create(
                        ib, il, vec.read(ib, il, dkh, cidx),
                        vec.read(ib, il, t.last, ValueRange{i}));
                    Value dkv = arith::DivFOp::create(
                        ib, il,
                        arith::AddFOp::create(
                            ib, il, vec.read(ib, il, dkt, cidx), fromEnd),
                        p);
                    Value q = vec.read(ib, il, ops.q, tidx);
                    Value k = vec.read(ib, il, ops.k, tidx);
                    Value a = vec.read(ib, il, ops.a, tidx, 1.0);
                    Value w = arith::SubFOp::create(
                        ib, il, arith::MulFOp::create(ib, il, q, dq),
                        arith::MulFOp::create(ib, il, k, dkv));
                    Value u = arith::AddFOp::create(
                        ib, il, vec.read(ib, il, iit[3], ValueRange{i}), w);
                    Value da = arith::DivFOp::create(ib, il, u, a);
                    return SmallVector<Value>{
                        vec.write(ib, il, dq, iit[0], tidx),
                        vec.write(ib, il, dkv, iit[1], tidx),
                        vec.write(ib, il, da, iit[2], tidx),
                        vec.write(ib, il, u, iit[3], ValueRange{i})};
                  });
              Value dvOut = copyRow(rb, rl, dvc, {r}, rit[2], at({step}), dv);
              return SmallVector<Value>{byKey[0], byKey[1], dvOut, byKey[2],
                                        byKey[3]};
            });

        // G entering the chunk: P[C-1] G + Q~^T dy.
        Value next = decayRows(nb, nl, t.last, g, deltaG);
        return SmallVector<Value>{written[0], written[1], written[2],
                                  written[3], next};
      });

  // dinit: the cotangent entering chunk 0.
  Value dinit = loops(
      b, loc, {dk}, {results[4]},
      [&](OpBuilder &ib, Location il, ValueRange i, ValueRange it) {
        return SmallVector<Value>{copyRow(ib, il, out[4], i, it[0], at(i), dv)};
      })[0];
  return {out[0], out[1], out[2], out[3], dinit};
}

} // namespace

bool loops::hasGlaProducts(Value q, Value a, int64_t chunk) {
  Type elem = getElementTypeOrSelf(q.getType());
  return (elem.isF32() || elem.isF64()) &&
         getElementTypeOrSelf(a.getType()) == elem && chunk >= 1 &&
         chunk <= kMaxGlaProductChunk;
}

Value loops::glaProductsApply(OpBuilder &b, Location loc, Value a,
                              int64_t chunk, ValueRange lead) {
  auto aType = cast<RankedTensorType>(a.getType());
  Type elem = aType.getElementType();
  int64_t rank = aType.getRank();
  Rows vec(elem);
  Value steps = dimSize(b, loc, a, rank - 2);
  Value dk = dimSize(b, loc, a, rank - 1);
  Value low = vec.splat(b, loc, smallestDecay(chunk));
  Value high = vec.splat(b, loc, 1.0);
  auto maskType = VectorType::get({vec.lanes}, b.getI1Type());
  Value all =
      arith::ConstantOp::create(b, loc, DenseElementsAttr::get(maskType, true));
  Value in = buildLoop(
      b, loc, indexConst(b, loc, 0), steps, {all},
      [&](OpBuilder &tb, Location tl, ValueRange t, ValueRange tit) {
        return vec.over(
            tb, tl, dk, tit,
            [&](OpBuilder &ib, Location il, Value i, ValueRange iit) {
              // Lanes past the row read 1; ordered comparisons: a NaN is
              // out.
              Value at = vec.read(
                  ib, il, a, concatIndices(lead, ValueRange{t[0], i}), 1.0);
              Value ok = arith::AndIOp::create(
                  ib, il,
                  arith::CmpFOp::create(ib, il, arith::CmpFPredicate::OGE, at,
                                        low),
                  arith::CmpFOp::create(ib, il, arith::CmpFPredicate::OLE, at,
                                        high));
              return SmallVector<Value>{
                  arith::AndIOp::create(ib, il, iit[0], ok)};
            });
      })[0];
  return vector::ReductionOp::create(b, loc, vector::CombiningKind::AND, in);
}

SmallVector<Value> loops::buildGlaProducts(OpBuilder &b, Location loc,
                                           GatedLinearAttentionOp op,
                                           int64_t chunk, ValueRange lead,
                                           Value y, Value state) {
  GlaOperands ops{op.getQ(),    op.getK(), op.getV(), op.getA(),
                  op.getInit(), Value(),   Value(),   chunk};
  return Products(b, loc, ops, lead).forward(b, loc, y, state);
}

SmallVector<Value> loops::buildGlaGradProducts(OpBuilder &b, Location loc,
                                               GatedLinearAttentionGradOp op,
                                               ValueRange lead,
                                               ValueRange results) {
  GlaOperands ops{op.getQ(),      op.getK(),
                  op.getV(),      op.getA(),
                  op.getInit(),   op.getDy(),
                  op.getDstate(), static_cast<int64_t>(op.getChunkSize())};
  return Products(b, loc, ops, lead).backward(b, loc, results);
}
