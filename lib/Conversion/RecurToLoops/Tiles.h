//===- Tiles.h - a warp's matrix tiles for the GPU's block forms -*- C++
//-*-===//
//
// Part of the Recur project.
//
// What the forms that compute by a warp's matrix tiles share (gla-tiles,
// GlaTiles.cpp; window-warp-tiles, Attention.cpp): a block of one warp (its
// loops tagged kBlockThreadsAttrName, threadLoop, which linear_scan's block
// form uses too) and 16 x 16 tiles of f32 products as
// vector.contract of 16 x 8 by 8 x 16 on block buffers, which the CUDA
// pipeline makes tensor-core products (wmma, tf32) and the CPU runs as
// vector ops. A tensor core multiplies tf32 values (10 bits of mantissa),
// so each f32 operand goes as two tf32 values (splitTf32) and each product
// as three (3xTF32), exact products within about 2^-20 of the f32 one.
//
//===----------------------------------------------------------------------===//

#ifndef RECUR_LIB_CONVERSION_RECURTOLOOPS_TILES_H
#define RECUR_LIB_CONVERSION_RECURTOLOOPS_TILES_H

#include "Utility.h"

namespace mlir::recur::loops::tiles {

/// A tile's rows and columns (m16n16).
constexpr int64_t kTile = 16;
/// A tf32 product's inner size (m16n16k8).
constexpr int64_t kTileInner = 8;
/// The threads of a block: one warp, which a tile's ops take together.
constexpr int64_t kWarp = 32;
/// The static shared memory of a block.
constexpr int64_t kSharedBytes = 48 * 1024;

/// A tensor's pair of block buffers (hi, lo) of splitTf32 halves.
struct Split {
  Value hi, lo;
};

/// `x` (f32) with its 13 low bits cleared: an exact tf32 value.
Value tf32High(OpBuilder &b, Location l, Value x);

/// `x` as two tf32 values (hi, lo), hi + lo within 2^-20 |x| of it.
std::pair<Value, Value> splitTf32(OpBuilder &b, Location l, Value x);

/// The loop of a block's threads from 0 to `n` (kBlockThreadsAttrName).
SmallVector<Value> threadLoop(OpBuilder &b, Location l, int64_t n,
                              ValueRange init, LoopBody body);

/// In thread `tid`, the elements e = tid + 32 m of a [rows, cols] block
/// buffer (rows * cols a multiple of 32), neighbouring threads on
/// neighbouring columns: `body` given (row, column).
SmallVector<Value>
overElements(OpBuilder &b, Location l, Value tid, int64_t rows, int64_t cols,
             ValueRange init,
             function_ref<SmallVector<Value>(OpBuilder &, Location, Value r,
                                             Value c, ValueRange args)>
                 body);

/// The warp's threads over rows 0 to `n`: thread tid takes rows i = tid +
/// 32 r below `n` (guarded where n is not a multiple of 32), `body` for
/// each, threading `init`: the rounds r one after another in the thread's
/// code, or with `rolled` in a loop (one copy of a large body, whose values
/// the rounds then cannot share: registers for one row at a time).
SmallVector<Value>
overRows(OpBuilder &b, Location l, int64_t n, ValueRange init,
         function_ref<SmallVector<Value>(OpBuilder &, Location, Value i,
                                         ValueRange args)>
             body,
         bool rolled = false);

/// `acc` + A B for the tiles A = a[row..+16, inner..+depth) and B =
/// b[bRow..+depth, col..+16), by 16 x 8 by 8 x 16 products, three a step
/// (lo hi, hi lo, hi hi).
Value multiplyTiles(OpBuilder &b, Location l, Split a, Value row, Value inner,
                    Split bm, Value bRow, Value col, int64_t depth, Value acc);

/// `buf` (a [rows, cols] block buffer) through `body` for each of its 16 x
/// 16 tiles (row, col), in a loop (the kernels stay small: the CPU runs
/// these products as vector ops, a tile's a few hundred).
Value overTiles(
    OpBuilder &b, Location l, int64_t rows, int64_t cols, Value buf,
    function_ref<Value(OpBuilder &, Location, Value row, Value col, Value buf)>
        body);

/// The 16 x 16 tile of `buf` at (row, col).
Value readTile(OpBuilder &b, Location l, Value buf, Value row, Value col);

/// A 16 x 16 tile of zeros.
Value zeroTile(OpBuilder &b, Location l);

/// `buf` with the tile `acc` written at (row, col).
Value writeTile(OpBuilder &b, Location l, Value acc, Value buf, Value row,
                Value col);

/// A [rows, cols] f32 block buffer, and a pair of them.
Value blockBuffer(OpBuilder &b, Location l, int64_t rows, int64_t cols);
Split splitBuffers(OpBuilder &b, Location l, int64_t rows, int64_t cols);

/// `into` (a [rows, width] pair of block buffers, or with `transposed`
/// [width, rows]) holding the split halves of `element(r, c)` at (r, c) (or
/// (c, r)), the warp's threads side by side on the columns c.
Split loadSplit(
    OpBuilder &b, Location l, Split into, int64_t rows, int64_t width,
    function_ref<Value(OpBuilder &, Location, Value r, Value c)> element,
    bool transposed = false);

/// The blocks of a form of `tiles` tiles a leading index over the leading
/// sizes `lead`, and block `f`'s leading indices and tile (the tile
/// fastest).
Value blockCount(OpBuilder &b, Location l, ArrayRef<Value> lead, Value tiles);
std::pair<SmallVector<Value>, Value> blockAt(OpBuilder &b, Location l, Value f,
                                             ArrayRef<Value> lead, Value tiles);

/// Row `r` of a tile starting at `begin` in a sequence of `length` rows,
/// clamped into it, and whether it is in it.
std::pair<Value, Value> rowIn(OpBuilder &b, Location l, Value begin, Value r,
                              Value length);

/// `out` (`[lead..., positions, width]`) with the `rows` rows of a tile
/// written, row r at the position `position(r)` gives where it says it is
/// in the sequence (the rows past the end not written), element c being
/// `value(r, c)`: the warp's threads side by side on the columns.
Value storeRows(
    OpBuilder &b, Location l, Value out, ValueRange lead, int64_t rows,
    int64_t width,
    function_ref<std::pair<Value, Value>(OpBuilder &, Location, Value r)>
        position,
    function_ref<Value(OpBuilder &, Location, Value r, Value c)> value);

} // namespace mlir::recur::loops::tiles

#endif // RECUR_LIB_CONVERSION_RECURTOLOOPS_TILES_H
