//===- Tiles.cpp - a warp's matrix tiles for the GPU's block forms --------===//
//
// Part of the Recur project.
//
//===----------------------------------------------------------------------===//

#include "Tiles.h"

#include "recur/Conversion/RecurToLoops/RecurToLoops.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::recur;
using namespace mlir::recur::loops;
using namespace mlir::recur::loops::tiles;

Value tiles::tf32High(OpBuilder &b, Location l, Value x) {
  Type i32 = b.getI32Type();
  Value bits = arith::BitcastOp::create(b, l, i32, x);
  Value mask = arith::ConstantIntOp::create(b, l, i32, ~int64_t(0x1fff));
  return arith::BitcastOp::create(b, l, x.getType(),
                                  arith::AndIOp::create(b, l, bits, mask));
}

std::pair<Value, Value> tiles::splitTf32(OpBuilder &b, Location l, Value x) {
  Value hi = tf32High(b, l, x);
  return {hi, tf32High(b, l, arith::SubFOp::create(b, l, x, hi))};
}

SmallVector<Value> tiles::threadLoop(OpBuilder &b, Location l, int64_t n,
                                     ValueRange init, LoopBody body) {
  SmallVector<Value> results =
      buildLoop(b, l, indexConst(b, l, 0), indexConst(b, l, n), init, body);
  results.front().getDefiningOp()->setAttr(kBlockThreadsAttrName,
                                           b.getUnitAttr());
  return results;
}

SmallVector<Value> tiles::overElements(
    OpBuilder &b, Location l, Value tid, int64_t rows, int64_t cols,
    ValueRange init,
    function_ref<SmallVector<Value>(OpBuilder &, Location, Value r, Value c,
                                    ValueRange args)>
        body) {
  return buildLoop(
      b, l, indexConst(b, l, 0), indexConst(b, l, rows * cols / kWarp), init,
      [&](OpBuilder &mb, Location ml, ValueRange m, ValueRange args) {
        Value e = arith::AddIOp::create(
            mb, ml, tid,
            arith::MulIOp::create(mb, ml, m[0], indexConst(mb, ml, kWarp)));
        Value width = indexConst(mb, ml, cols);
        return body(mb, ml, arith::DivUIOp::create(mb, ml, e, width),
                    arith::RemUIOp::create(mb, ml, e, width), args);
      });
}

SmallVector<Value>
tiles::overRows(OpBuilder &b, Location l, int64_t n, ValueRange init,
                function_ref<SmallVector<Value>(OpBuilder &, Location, Value i,
                                                ValueRange args)>
                    body,
                bool rolled) {
  // Row i where it is below n (a round past a multiple of 32 is partial).
  auto guarded = [&](OpBuilder &tb, Location tl, Value i, ValueRange out,
                     bool whole) -> SmallVector<Value> {
    if (whole)
      return body(tb, tl, i, out);
    Value inRange = arith::CmpIOp::create(tb, tl, arith::CmpIPredicate::ult, i,
                                          indexConst(tb, tl, n));
    auto branch = scf::IfOp::create(tb, tl, TypeRange(out), inRange,
                                    /*withElseRegion=*/true);
    OpBuilder thenB = OpBuilder::atBlockEnd(branch.thenBlock());
    scf::YieldOp::create(thenB, tl, body(thenB, tl, i, out));
    OpBuilder elseB = OpBuilder::atBlockEnd(branch.elseBlock());
    scf::YieldOp::create(elseB, tl, out);
    return SmallVector<Value>(branch.getResults());
  };
  int64_t rounds = llvm::divideCeil(n, kWarp);
  return threadLoop(
      b, l, kWarp, init,
      [&](OpBuilder &tb, Location tl, ValueRange tid, ValueRange bufs) {
        if (rolled)
          return buildLoop(
              tb, tl, indexConst(tb, tl, 0), indexConst(tb, tl, rounds), bufs,
              [&](OpBuilder &rb, Location rl, ValueRange r, ValueRange out) {
                Value i = arith::AddIOp::create(
                    rb, rl, tid[0],
                    arith::MulIOp::create(rb, rl, r[0],
                                          indexConst(rb, rl, kWarp)));
                return guarded(rb, rl, i, out, n % kWarp == 0);
              });
        SmallVector<Value> out(bufs);
        for (int64_t r = 0; r < rounds; ++r) {
          Value i = arith::AddIOp::create(tb, tl, tid[0],
                                          indexConst(tb, tl, r * kWarp));
          out = guarded(tb, tl, i, out, (r + 1) * kWarp <= n);
        }
        return out;
      });
}

Value tiles::multiplyTiles(OpBuilder &b, Location l, Split a, Value row,
                           Value inner, Split bm, Value bRow, Value col,
                           int64_t depth, Value acc) {
  Type f32 = b.getF32Type();
  auto aType = VectorType::get({kTile, kTileInner}, f32);
  auto bType = VectorType::get({kTileInner, kTile}, f32);
  Value pad = floatConst(b, l, f32, 0.0);
  auto read = [&](Value buf, VectorType type, Value r, Value c) -> Value {
    return vector::TransferReadOp::create(b, l, type, buf, ValueRange{r, c},
                                          pad, ArrayRef<bool>{true, true});
  };
  auto plus = [&](Value x, int64_t k) -> Value {
    return k == 0 ? x
                  : arith::AddIOp::create(b, l, x, indexConst(b, l, k))
                        .getResult();
  };
  MLIRContext *ctx = b.getContext();
  AffineExpr m, n, k;
  bindDims(ctx, m, n, k);
  SmallVector<AffineMap> maps{AffineMap::get(3, 0, {m, k}, ctx),
                              AffineMap::get(3, 0, {k, n}, ctx),
                              AffineMap::get(3, 0, {m, n}, ctx)};
  auto iterators = b.getArrayAttr(
      {vector::IteratorTypeAttr::get(ctx, vector::IteratorType::parallel),
       vector::IteratorTypeAttr::get(ctx, vector::IteratorType::parallel),
       vector::IteratorTypeAttr::get(ctx, vector::IteratorType::reduction)});
  for (int64_t k0 = 0; k0 < depth; k0 += kTileInner) {
    Value aHi = read(a.hi, aType, row, plus(inner, k0));
    Value aLo = read(a.lo, aType, row, plus(inner, k0));
    Value bHi = read(bm.hi, bType, plus(bRow, k0), col);
    Value bLo = read(bm.lo, bType, plus(bRow, k0), col);
    for (auto [x, y] : {std::pair(aLo, bHi), {aHi, bLo}, {aHi, bHi}})
      acc = vector::ContractionOp::create(
          b, l, x, y, acc, b.getAffineMapArrayAttr(maps), iterators);
  }
  return acc;
}

Value tiles::overTiles(
    OpBuilder &b, Location l, int64_t rows, int64_t cols, Value buf,
    function_ref<Value(OpBuilder &, Location, Value row, Value col, Value buf)>
        body) {
  Value zero = indexConst(b, l, 0);
  Value tile = indexConst(b, l, kTile);
  auto rowLoop = scf::ForOp::create(
      b, l, zero, indexConst(b, l, rows), tile, ValueRange{buf},
      [&](OpBuilder &rb, Location rl, Value row, ValueRange rowArgs) {
        auto colLoop = scf::ForOp::create(
            rb, rl, zero, indexConst(rb, rl, cols), tile, rowArgs,
            [&](OpBuilder &cb, Location cl, Value col, ValueRange args) {
              scf::YieldOp::create(cb, cl, body(cb, cl, row, col, args[0]));
            });
        scf::YieldOp::create(rb, rl, colLoop.getResults());
      });
  return rowLoop.getResult(0);
}

Value tiles::readTile(OpBuilder &b, Location l, Value buf, Value row,
                      Value col) {
  Type f32 = b.getF32Type();
  return vector::TransferReadOp::create(
      b, l, VectorType::get({kTile, kTile}, f32), buf, ValueRange{row, col},
      floatConst(b, l, f32, 0.0), ArrayRef<bool>{true, true});
}

Value tiles::zeroTile(OpBuilder &b, Location l) {
  auto type = VectorType::get({kTile, kTile}, b.getF32Type());
  return arith::ConstantOp::create(b, l, type,
                                   DenseElementsAttr::get(type, 0.0f));
}

Value tiles::writeTile(OpBuilder &b, Location l, Value acc, Value buf,
                       Value row, Value col) {
  return vector::TransferWriteOp::create(b, l, acc, buf, ValueRange{row, col},
                                         ArrayRef<bool>{true, true})
      .getResult();
}

Value tiles::blockBuffer(OpBuilder &b, Location l, int64_t rows, int64_t cols) {
  return privateScratch(
      b, l, RankedTensorType::get({rows, cols}, b.getF32Type()), {});
}

Split tiles::splitBuffers(OpBuilder &b, Location l, int64_t rows,
                          int64_t cols) {
  return {blockBuffer(b, l, rows, cols), blockBuffer(b, l, rows, cols)};
}

Split tiles::loadSplit(
    OpBuilder &b, Location l, Split into, int64_t rows, int64_t width,
    function_ref<Value(OpBuilder &, Location, Value r, Value c)> element,
    bool transposed) {
  SmallVector<Value> out = threadLoop(
      b, l, kWarp, ValueRange{into.hi, into.lo},
      [&](OpBuilder &tb, Location tl, ValueRange tid, ValueRange bufs) {
        return overElements(
            tb, tl, tid[0], rows, width, bufs,
            [&](OpBuilder &eb, Location el, Value r, Value c, ValueRange acc) {
              auto [hi, lo] = splitTf32(eb, el, element(eb, el, r, c));
              SmallVector<Value> at{r, c};
              if (transposed)
                std::swap(at[0], at[1]);
              return SmallVector<Value>{insertAt(eb, el, hi, acc[0], at),
                                        insertAt(eb, el, lo, acc[1], at)};
            });
      });
  return {out[0], out[1]};
}

Value tiles::storeRows(
    OpBuilder &b, Location l, Value out, ValueRange lead, int64_t rows,
    int64_t width,
    function_ref<std::pair<Value, Value>(OpBuilder &, Location, Value r)>
        position,
    function_ref<Value(OpBuilder &, Location, Value r, Value c)> value) {
  return threadLoop(
             b, l, kWarp, ValueRange{out},
             [&](OpBuilder &tb, Location tl, ValueRange tid, ValueRange outs) {
               return overElements(
                   tb, tl, tid[0], rows, width, outs,
                   [&](OpBuilder &eb, Location el, Value r, Value c,
                       ValueRange acc) {
                     auto [at, inside] = position(eb, el, r);
                     auto branch =
                         scf::IfOp::create(eb, el, TypeRange{acc[0]}, inside,
                                           /*withElseRegion=*/true);
                     OpBuilder thenB =
                         OpBuilder::atBlockEnd(branch.thenBlock());
                     scf::YieldOp::create(
                         thenB, el,
                         insertAt(thenB, el, value(thenB, el, r, c), acc[0],
                                  concatIndices(lead, {at, c})));
                     OpBuilder elseB =
                         OpBuilder::atBlockEnd(branch.elseBlock());
                     scf::YieldOp::create(elseB, el, acc[0]);
                     return SmallVector<Value>(branch.getResults());
                   });
             })
      .front();
}

Value tiles::blockCount(OpBuilder &b, Location l, ArrayRef<Value> lead,
                        Value tiles) {
  Value n = tiles;
  for (Value size : lead)
    n = arith::MulIOp::create(b, l, n, size);
  return n;
}

std::pair<SmallVector<Value>, Value> tiles::blockAt(OpBuilder &b, Location l,
                                                    Value f,
                                                    ArrayRef<Value> lead,
                                                    Value tiles) {
  Value tile = arith::RemUIOp::create(b, l, f, tiles);
  Value rest = arith::DivUIOp::create(b, l, f, tiles);
  SmallVector<Value> idx(lead.size());
  for (size_t d = lead.size(); d-- > 0;) {
    idx[d] = d == 0 ? rest : arith::RemUIOp::create(b, l, rest, lead[d]);
    if (d != 0)
      rest = arith::DivUIOp::create(b, l, rest, lead[d]);
  }
  return {idx, tile};
}

std::pair<Value, Value> tiles::rowIn(OpBuilder &b, Location l, Value begin,
                                     Value r, Value length) {
  Value t = arith::AddIOp::create(b, l, begin, r);
  Value inside =
      arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult, t, length);
  Value last = arith::SubIOp::create(b, l, length, indexConst(b, l, 1));
  return {arith::MinUIOp::create(b, l, t, last), inside};
}
