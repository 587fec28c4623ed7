//===- Scans.cpp - reference loops of the recur scans ---------------------===//
//
// Part of the Recur project.
//
// recur.linear_scan, recur.scan and recur.gated_linear_attention as
// sequential loops over time, one element of the state at a time, or for
// gated_linear_attention's chunked algorithm over chunks of time steps.
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"
#include "Tiles.h"
#include "Utility.h"

#include "Recur/IR/Recur.h"
#include "recur/Conversion/RecurToLoops/RecurToLoops.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Complex/IR/Complex.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace mlir::recur;
using namespace mlir::recur::loops;

namespace {

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// `outer` with the time index inserted at `axis`.
SmallVector<Value> withTimeIndex(ValueRange outer, int64_t axis, Value t) {
  SmallVector<Value> idx(outer);
  idx.insert(idx.begin() + axis, t);
  return idx;
}

/// The position that step `t` of a scan of `length` steps visits.
Value stepPosition(OpBuilder &b, Location loc, Value t, Value length,
                   bool reverse) {
  if (!reverse)
    return t;
  Value one = indexConst(b, loc, 1);
  Value last = arith::SubIOp::create(b, loc, length, one);
  return arith::SubIOp::create(b, loc, last, t);
}

//===----------------------------------------------------------------------===//
// recur.linear_scan
//===----------------------------------------------------------------------===//

/// Channels of the last dimension that one thread scans together when
/// linear_scan runs along another dimension (`scanGroup`, at most
/// kMaxScanGroup): each time step then reads and writes a contiguous row of
/// them (vectorized by LLVM), the carries in a scratch row that stays in L1;
/// 128 f32 channels are 512 bytes a row. A group of 1 scans each channel on
/// its own with a scalar carry, as along the last dimension: the GPU's
/// form, one channel a thread, neighbouring threads on neighbouring
/// channels.
/// A group of 0 (kScanGroupByThreads, the CPU pipeline's) is chosen when the
/// kernel runs: the rows split into about as many groups as there are
/// threads (whole rows when the other dimensions give every thread one), in
/// multiples of kScanGroupQuantum channels, so each thread streams one long
/// contiguous stretch of every row: the hardware prefetchers follow it
/// (groups of 128 f32 reached 0.36 of a streaming copy at 1024 channels
/// and 2 threads, halves of the row about 0.8).
constexpr int64_t kMaxScanGroup = 4096;
/// The most steps an iteration of a scan one channel at a time takes
/// (scan-unroll-bytes): beyond that a GPU thread runs out of registers.
constexpr int64_t kMaxScanUnroll = 64;
constexpr int64_t kScanGroupQuantum = 16;
/// The most vectors a step of the few-channels form (buildNarrow) spans.
constexpr int64_t kNarrowVectors = 4;
/// The most chunks a row of the few-channels form splits into besides the
/// first (at most one per thread), and the fewest iterations of vectors a
/// chunk must have for the row to split. One f32 channel on 2 threads
/// (3 chunks) against one thread: chunks of 1024 iterations (8192 steps)
/// 0.020 against 0.018 ms, of 2048 0.042 against 0.035 ms (the two thread
/// forks cost more than the split saves), of 4096 0.058 against 0.068 ms.
constexpr int64_t kMaxScanChunks = 64;
constexpr int64_t kMinChunkIterations = 4096;
/// The most channels a scan of the CPU takes one at a time with a scalar
/// carry when the few-channels form does not apply (complex elements): 8M
/// steps of c64 took 70 -> 34 ms for one channel and 47 -> 24 ms for two,
/// but 28 -> 34 ms for four (each channel's loop then reads a quarter of
/// every cache line it touches), against the groups (2026-11-27).
constexpr int64_t kMaxScalarChannels = 2;

/// The spread form (scan-spread): a scan one channel a thread goes in
/// chunks of time when that gives its channels at least kSpreadFactor
/// times as many threads; its chunks' carries are a linear_scan of their
/// own, spread again up to kMaxSpreadLevels nested scans deep, the deepest
/// one a channel a thread. A nested scan carries its depth in
/// kSpreadLevelAttrName.
constexpr int64_t kSpreadFactor = 8;
constexpr int64_t kMaxSpreadLevels = 2;
constexpr StringLiteral kSpreadLevelAttrName = "recur.spread_level";

/// The block form (scan-blocks): at most 256 threads, so that a block's
/// buffers fit the 48 KiB of static shared memory a GPU block may have
/// (two tiles of 64 bytes a thread, padded, and two values a thread: 35844
/// bytes of f32 at 256 threads, 45072 of complex<f64>; 512 threads of f32
/// took 75780 bytes with four values a thread, which ptxas refuses), and
/// a block buffer padded by one element every kSharedBanks banks' worth of
/// elements (a GPU's shared memory has 32 banks of 32 bits).
constexpr int64_t kMaxBlockThreads = 256;
constexpr int64_t kSharedBanks = 32;

/// -0.0 of a float or complex type (both parts), the additive identity
/// exact for every value.
Value negativeZeroOf(OpBuilder &b, Location loc, Type elem) {
  if (auto complexType = dyn_cast<ComplexType>(elem)) {
    Value part = floatConst(b, loc, complexType.getElementType(), -0.0);
    return complex::CreateOp::create(b, loc, elem, part, part);
  }
  return floatConst(b, loc, elem, -0.0);
}

/// One of a float or complex type.
Value oneOf(OpBuilder &b, Location loc, Type elem) {
  if (auto complexType = dyn_cast<ComplexType>(elem))
    return complex::CreateOp::create(
        b, loc, elem, floatConst(b, loc, complexType.getElementType(), 1.0),
        zeroOf(b, loc, complexType.getElementType()));
  return floatConst(b, loc, elem, 1.0);
}

/// `value` from lane `offset` below this one (UP; a lane below `offset`
/// gets its own back) or from lane `offset` (IDX) of the warp; a complex
/// value part by part.
Value warpShuffle(OpBuilder &b, Location loc, Value value, int32_t offset,
                  gpu::ShuffleMode mode) {
  if (auto complexType = dyn_cast<ComplexType>(value.getType())) {
    Value re = complex::ReOp::create(b, loc, value);
    Value im = complex::ImOp::create(b, loc, value);
    return complex::CreateOp::create(b, loc, complexType,
                                     warpShuffle(b, loc, re, offset, mode),
                                     warpShuffle(b, loc, im, offset, mode));
  }
  return gpu::ShuffleOp::create(b, loc, value, offset, kWarpLanes, mode)
      .getShuffleResult();
}

/// The lanes of a warp as the warp form of a scan builds them. On the GPU,
/// one lane's values (`lane`, the innermost loop's induction variable),
/// exchanged by gpu.shuffle. Emulated (scan-warps-emulated, which tests the
/// form on the CPU), all kWarpLanes lanes' values side by side in one
/// iteration (`lane` null), a lane's value from another taken directly.
/// A value per lane is a list of count() values.
struct Warp {
  Value lane;

  int64_t count() const { return lane ? 1 : kWarpLanes; }

  /// The index of the i-th lane of the list.
  Value laneIndex(OpBuilder &b, Location loc, int64_t i) const {
    return lane ? lane : indexConst(b, loc, i);
  }

  /// Whether the i-th lane of the list is at or above `offset`.
  Value atLeast(OpBuilder &b, Location loc, int64_t i, int64_t offset) const {
    if (lane)
      return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, lane,
                                   indexConst(b, loc, offset));
    return arith::ConstantIntOp::create(b, loc, i >= offset, 1);
  }

  /// Each lane's value from the lane `offset` below it (its own below
  /// `offset`).
  SmallVector<Value> up(OpBuilder &b, Location loc, ArrayRef<Value> values,
                        int32_t offset) const {
    if (lane)
      return {warpShuffle(b, loc, values[0], offset, gpu::ShuffleMode::UP)};
    SmallVector<Value> result;
    for (int64_t i = 0; i < kWarpLanes; ++i)
      result.push_back(values[i >= offset ? i - offset : i]);
    return result;
  }

  /// The last lane's value (the same in every lane).
  Value last(OpBuilder &b, Location loc, ArrayRef<Value> values) const {
    if (lane)
      return warpShuffle(b, loc, values[0], kWarpLanes - 1,
                         gpu::ShuffleMode::IDX);
    return values.back();
  }
};

/// The inclusive scan across the lanes of a warp of their steps h -> a h +
/// x, in lane order: lane i gets (A, X) with h -> A h + X the steps of
/// lanes 0 to i composed (Hillis and Steele: five rounds of shuffles up,
/// each lane at or above the offset composing the lanes' below before its
/// own). `a` and `x` hold a value per lane (Warp); so do the results.
std::pair<SmallVector<Value>, SmallVector<Value>>
warpScan(OpBuilder &b, Location loc, const Warp &warp, SmallVector<Value> a,
         SmallVector<Value> x) {
  for (int32_t offset = 1; offset < kWarpLanes; offset *= 2) {
    SmallVector<Value> aBelow = warp.up(b, loc, a, offset);
    SmallVector<Value> xBelow = warp.up(b, loc, x, offset);
    for (int64_t i = 0; i < warp.count(); ++i) {
      Value has = warp.atLeast(b, loc, i, offset);
      Value composedX = add(b, loc, mul(b, loc, a[i], xBelow[i]), x[i]);
      Value composedA = mul(b, loc, a[i], aBelow[i]);
      x[i] = arith::SelectOp::create(b, loc, has, composedX, x[i]);
      a[i] = arith::SelectOp::create(b, loc, has, composedA, a[i]);
    }
  }
  return {std::move(a), std::move(x)};
}

/// The thread count a kernel's parallel loops run with
/// (`omp_get_max_threads`), declared in the module on first use; it
/// allocates nothing (see recur-workspace-bound).
Value maxThreads(OpBuilder &b, Location loc, Operation *inside) {
  constexpr StringLiteral name = "omp_get_max_threads";
  auto module = inside->getParentOfType<ModuleOp>();
  auto callee = module.lookupSymbol<func::FuncOp>(name);
  if (!callee) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    callee = func::FuncOp::create(b, loc, name,
                                  b.getFunctionType({}, {b.getI32Type()}));
    callee.setPrivate();
    callee->setAttr(kAllocatesNothingAttrName, b.getUnitAttr());
  }
  Value count = func::CallOp::create(b, loc, callee).getResult(0);
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), count);
}

/// The lanes of the vectors a streaming scan row goes in: 256 bits (AVX2).
int64_t streamLanes(Type elem) { return 256 / elem.getIntOrFloatBitWidth(); }

/// Whether the tensor of `sizes` with elements of `elem` holds at least
/// `bytes` bytes (an i1).
Value atLeastBytes(OpBuilder &b, Location loc, ArrayRef<Value> sizes, Type elem,
                   int64_t bytes) {
  Value count = indexConst(b, loc, 1);
  for (Value size : sizes)
    count = arith::MulIOp::create(b, loc, count, size);
  Value threshold = indexConst(
      b, loc, llvm::divideCeil(bytes, elementBytes(elem).value_or(1)));
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::uge, count,
                               threshold);
}

struct LinearScanToLoops : OpRewritePattern<LinearScanOp> {
  LinearScanToLoops(MLIRContext *context, int64_t scanGroup, int64_t scanChunk,
                    int64_t streamStoreBytes, int64_t scanUnrollBytes,
                    int64_t scanSpread, int64_t scanSpreadChunk, bool scanWarps,
                    bool emulateWarps, int64_t scanBlocks,
                    bool blockAggregatesOnly)
      : OpRewritePattern(context),
        scanGroup(scanGroup == kScanGroupByThreads
                      ? kScanGroupByThreads
                      : std::clamp<int64_t>(scanGroup, 1, kMaxScanGroup)),
        scanChunk(std::max<int64_t>(scanChunk, 0)),
        streamStoreBytes(std::max<int64_t>(streamStoreBytes, 0)),
        scanUnrollBytes(std::max<int64_t>(scanUnrollBytes, 0)),
        scanSpread(std::max<int64_t>(scanSpread, 0)),
        scanSpreadChunk(std::max<int64_t>(scanSpreadChunk, 1)),
        scanWarps(scanWarps || emulateWarps), emulateWarps(emulateWarps),
        scanBlocks(std::clamp<int64_t>(scanBlocks, 0, kMaxBlockThreads)),
        blockAggregatesOnly(blockAggregatesOnly) {
    // The spread form's carries are a linear_scan of their own, lowered by
    // this pattern again (at most kMaxSpreadLevels deep).
    setHasBoundedRewriteRecursion();
  }
  int64_t scanGroup;
  /// Steps per chunk of the chunked form (0: none).
  int64_t scanChunk;
  /// The output size from which a scan in groups writes its output around
  /// the cache (0: never).
  int64_t streamStoreBytes;
  /// Bytes of each input a scan one channel at a time loads per iteration
  /// of its time loop, all before its updates (0: a step an iteration).
  int64_t scanUnrollBytes;
  /// A scan one channel a thread with at most scanSpread / kSpreadFactor
  /// channels when it runs goes in chunks of time over about scanSpread
  /// threads (0: never; see buildSpread).
  int64_t scanSpread;
  /// The fewest steps of a chunk of the spread form.
  int64_t scanSpreadChunk;
  /// Whether the spread form sweeps each chunk with the lanes of a GPU warp
  /// (see warpSweep) instead of one thread.
  bool scanWarps;
  /// Whether the warp form keeps a warp's lanes side by side in one
  /// iteration instead of a loop of them exchanging values by gpu.shuffle:
  /// the same arithmetic, runnable on the CPU (a test of the form).
  bool emulateWarps;
  /// Threads of a block of the block form (0: none; see buildBlocks).
  int64_t scanBlocks;
  /// Whether the block form's tiles publish only aggregates but for a
  /// channel's first (for tests: each look-back then composes aggregates
  /// back to the channel's first tile).
  bool blockAggregatesOnly;

  /// The steps each thread of the block form takes: 64 bytes of the element
  /// (16 f32, 8 f64 or complex<f32>, 4 complex<f64>), so that a tile of a
  /// block of n threads is n * 64 bytes of each input.
  static int64_t blockSteps(Type elem) {
    return std::max<int64_t>(64 / elementBytes(elem).value_or(64), 1);
  }

  /// The steps an iteration of a scan one channel at a time takes: those of
  /// scanUnrollBytes of each input (at least 1, at most kMaxScanUnroll).
  int64_t unrollSteps(Type elem) const {
    std::optional<int64_t> bytes = elementBytes(elem);
    return bytes ? std::clamp<int64_t>(scanUnrollBytes / *bytes, 1,
                                       kMaxScanUnroll)
                 : 1;
  }

  /// The rounds of kWarpLanes steps each lane of the warp form loads before
  /// it scans them: an eighth of unrollSteps (so each lane has an eighth of
  /// scanUnrollBytes of each input in flight), at least 1 (at most 8, as
  /// unrollSteps is at most kMaxScanUnroll).
  int64_t warpRounds(Type elem) const {
    return std::max<int64_t>(unrollSteps(elem) / 8, 1);
  }

  /// The nesting depth of `op` in the spread form (0: not nested).
  static int64_t spreadLevel(LinearScanOp op) {
    auto level = op->getAttrOfType<IntegerAttr>(kSpreadLevelAttrName);
    return level ? level.getInt() : 0;
  }

  /// Whether `op`, scanned in groups, gets the streaming form when its
  /// output is at least streamStoreBytes: each row in vectors, the time
  /// loop tagged kStreamStoresAttrName. f32 and f64, and complex numbers of
  /// them with a transition per channel (real or complex), whose rows go
  /// as vectors of their parts (recur.view_as_real: the vector dialect has
  /// no complex vectors).
  bool streams(LinearScanOp op) const {
    if (streamStoreBytes <= 0)
      return false;
    Type elem = getElementTypeOrSelf(op.getH());
    if (elem.isF32() || elem.isF64())
      return true;
    auto complex = dyn_cast<ComplexType>(elem);
    return complex &&
           (complex.getElementType().isF32() ||
            complex.getElementType().isF64()) &&
           cast<RankedTensorType>(op.getA().getType()).getRank() ==
               cast<RankedTensorType>(op.getH().getType()).getRank();
  }

  /// The loop `build(b, streaming)` makes (results of `types`): when `op`
  /// streams, built twice under an scf.if on whether the output of `sizes`
  /// holds at least streamStoreBytes (then streaming, around the cache),
  /// otherwise once, not streaming.
  SmallVector<Value> streamedIfLarge(
      OpBuilder &b, Location loc, LinearScanOp op, ArrayRef<Value> sizes,
      TypeRange types,
      function_ref<SmallVector<Value>(OpBuilder &, bool)> build) const {
    if (!streams(op))
      return build(b, false);
    Type elem = getElementTypeOrSelf(op.getH());
    Value big = atLeastBytes(b, loc, sizes, elem, streamStoreBytes);
    auto branch =
        scf::IfOp::create(b, loc, types, big, /*withElseRegion=*/true);
    for (bool streaming : {true, false}) {
      Block &block = streaming ? branch.getThenRegion().front()
                               : branch.getElseRegion().front();
      OpBuilder ib = OpBuilder::atBlockEnd(&block);
      scf::YieldOp::create(ib, loc, build(ib, streaming));
    }
    return SmallVector<Value>(branch.getResults());
  }

  LogicalResult matchAndRewrite(LinearScanOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto hType = cast<RankedTensorType>(op.getH().getType());
    auto lastType = cast<RankedTensorType>(op.getLast().getType());
    Type elem = hType.getElementType();
    int64_t axis = op.getAxisAttr().getInt();
    int64_t rank = hType.getRank();
    int64_t aRank = cast<RankedTensorType>(op.getA().getType()).getRank();
    bool promoteA = op.getA().getType() != op.getB().getType() &&
                    isa<ComplexType>(elem) &&
                    !isa<ComplexType>(getElementTypeOrSelf(op.getA()));

    SmallVector<Value> sizes = dimSizes(rewriter, loc, op.getB());
    SmallVector<Value> lastSizes(sizes);
    lastSizes.erase(lastSizes.begin() + axis);
    Value hInit = emptyLike(rewriter, loc, hType, sizes);
    Value lastInit = emptyLike(rewriter, loc, lastType, lastSizes);
    Value length = sizes[axis];

    auto aAt = [&](OpBuilder &b, Location l, ArrayRef<Value> idx) {
      Value at = extractAt(b, l, op.getA(), idx.take_front(aRank));
      if (promoteA)
        at = complex::CreateOp::create(b, l, elem, at,
                                       zeroOf(b, l, at.getType()));
      return at;
    };
    auto carryInit = [&](OpBuilder &b, Location l, ValueRange idx) {
      return op.getInit() ? extractAt(b, l, op.getInit(), idx)
                          : zeroOf(b, l, elem);
    };

    // In chunks of time: three nests of independent iterations (see
    // buildChunked).
    if (scanChunk > 0) {
      rewriter.replaceOp(op, buildChunked(rewriter, loc, op, sizes, lastSizes,
                                          hInit, lastInit, aAt, carryInit,
                                          indexConst(rewriter, loc, scanChunk),
                                          /*nestedLevel=*/0, /*warps=*/false));
      return success();
    }

    // Few channels on the CPU: the steps of each row side by side in vectors
    // (see buildNarrow).
    if (std::optional<int64_t> width = narrowWidth(op)) {
      rewriter.replaceOp(op, buildNarrow(rewriter, loc, op, *width, sizes,
                                         hInit, lastInit, carryInit));
      return success();
    }

    // Along the last dimension, or in groups of one: one channel at a time,
    // its carry a scalar; with few channels and scan-spread, in chunks of
    // time instead (see buildSpread).
    if (axis == rank - 1 || scanGroup == 1 || fewScalarChannels(op)) {
      int64_t level = spreadLevel(op);
      rewriter.replaceOp(
          op, scanSpread > 0 && level < kMaxSpreadLevels
                  ? buildSpread(rewriter, loc, op, level, sizes, lastSizes,
                                hInit, lastInit, aAt, carryInit)
                  : buildByChannel(rewriter, loc, op, sizes, hInit, lastInit,
                                   aAt, carryInit));
      return success();
    }

    // Along another dimension: the last one goes by groups of up to
    // scanGroup channels (the last group shorter), each group's time loop
    // sweeping its channels at every step.
    Value width = sizes.back();
    Value group = scanGroup == kScanGroupByThreads
                      ? groupByThreads(rewriter, loc, op, sizes)
                      : indexConst(rewriter, loc, scanGroup);
    Value groups = arith::CeilDivUIOp::create(rewriter, loc, width, group);
    SmallVector<Value> groupSizes(sizes);
    groupSizes.back() = groups;
    auto carryType = RankedTensorType::get(
        {scanGroup == kScanGroupByThreads ? kMaxScanGroup : scanGroup}, elem);
    SmallVector<Value> results = buildNestExcept(
        rewriter, loc, groupSizes, axis, {hInit, lastInit},
        [&](OpBuilder &b, Location l, ValueRange outer, ValueRange args) {
          Value first = arith::MulIOp::create(b, l, outer.back(), group);
          Value n = arith::MinUIOp::create(
              b, l, group, arith::SubIOp::create(b, l, width, first));
          auto channel = [&](OpBuilder &cb, Location cl, Value j) {
            SmallVector<Value> idx(outer);
            idx.back() = arith::AddIOp::create(cb, cl, first, j);
            return idx;
          };
          Value carry =
              fillRow(b, l, privateScratch(b, l, carryType, {group}), {}, n,
                      [&](OpBuilder &cb, Location cl, Value j) {
                        return carryInit(cb, cl, channel(cb, cl, j));
                      });
          Value zero = indexConst(b, l, 0);
          // Channels [from, n) of the row at step `pos`, one at a time.
          auto scalarRow = [&](OpBuilder &tb, Location tl, Value pos,
                               Value from, ValueRange iter) {
            return buildLoop(
                tb, tl, from, n, iter,
                [&](OpBuilder &cb, Location cl, ValueRange j, ValueRange row) {
                  SmallVector<Value> idx =
                      withTimeIndex(channel(cb, cl, j[0]), axis, pos);
                  Value at = aAt(cb, cl, idx);
                  Value carry = extractAt(cb, cl, row[1], j);
                  Value bt = extractAt(cb, cl, op.getB(), idx);
                  Value h = add(cb, cl, mul(cb, cl, at, carry), bt);
                  return SmallVector<Value>{insertAt(cb, cl, h, row[0], idx),
                                            insertAt(cb, cl, h, row[1], j)};
                });
          };
          // Channels [0, end) of the row at step `pos` in vectors, end the
          // largest multiple of the vector's lanes up to n: the same
          // arithmetic as scalarRow, so the same bits.
          auto vectorRow = [&](OpBuilder &tb, Location tl, Value pos,
                               ValueRange iter) {
            auto vecType = VectorType::get({streamLanes(elem)}, elem);
            Value lanes = indexConst(tb, tl, streamLanes(elem));
            Value end = arith::SubIOp::create(
                tb, tl, n, arith::RemUIOp::create(tb, tl, n, lanes));
            auto loop = scf::ForOp::create(
                tb, tl, zero, end, lanes, iter,
                [&](OpBuilder &cb, Location cl, Value j, ValueRange row) {
                  SmallVector<Value> idx =
                      withTimeIndex(channel(cb, cl, j), axis, pos);
                  auto read = [&](Value tensor, ValueRange at) -> Value {
                    return vector::TransferReadOp::create(
                        cb, cl, vecType, tensor, at,
                        /*padding=*/std::nullopt, ArrayRef<bool>{true});
                  };
                  // A transition without the channel dimension is one
                  // scalar for the row.
                  Value at = aRank == rank
                                 ? read(op.getA(), idx)
                                 : vector::BroadcastOp::create(
                                       cb, cl, vecType, aAt(cb, cl, idx));
                  Value carry = read(row[1], ValueRange{j});
                  Value bt = read(op.getB(), idx);
                  Value h = arith::AddFOp::create(
                      cb, cl, arith::MulFOp::create(cb, cl, at, carry), bt);
                  auto write = [&](Value tensor, ValueRange at) -> Value {
                    return vector::TransferWriteOp::create(
                               cb, cl, h, tensor, at, ArrayRef<bool>{true})
                        .getResult();
                  };
                  scf::YieldOp::create(
                      cb, cl,
                      ValueRange{write(row[0], idx), write(row[1], {j})});
                });
            return std::make_pair(end, SmallVector<Value>(loop.getResults()));
          };
          // The streaming time loop of complex channels: the output, the
          // carry and the inputs seen as their parts (recur.view_as_real),
          // each row in vectors of parts (complexRow), the channels
          // past the last whole vector in one masked vector.
          auto complexTimeLoop = [&](OpBuilder &tb, Location tl,
                                     ValueRange init) {
            auto view = [&](Value tensor) -> Value {
              return ViewAsRealOp::create(tb, tl, tensor);
            };
            Value aParts = promoteA ? op.getA() : view(op.getA());
            Value bParts = view(op.getB());
            auto loop = scf::ForOp::create(
                tb, tl, zero, length, indexConst(tb, tl, 1),
                ValueRange{view(init[0]), view(init[1])},
                [&](OpBuilder &sb, Location sl, Value t, ValueRange iter) {
                  Value pos = stepPosition(sb, sl, t, length, op.getReverse());
                  scf::YieldOp::create(
                      sb, sl,
                      complexRow(
                          sb, sl, op, pos, aParts, bParts, n,
                          [&](OpBuilder &cb, Location cl, Value j) {
                            return withTimeIndex(channel(cb, cl, j), axis, pos);
                          },
                          iter));
                });
            loop->setAttr(kStreamStoresAttrName, tb.getUnitAttr());
            return SmallVector<Value>{
                ViewAsComplexOp::create(tb, tl, loop.getResult(0)),
                ViewAsComplexOp::create(tb, tl, loop.getResult(1))};
          };
          auto timeLoop = [&](OpBuilder &tb, Location tl, ValueRange init,
                              bool streaming) {
            if (streaming && isa<ComplexType>(elem))
              return complexTimeLoop(tb, tl, init);
            SmallVector<Value> results =
                buildLoop(tb, tl, zero, length, init,
                          [&](OpBuilder &sb, Location sl, ValueRange t,
                              ValueRange iter) -> SmallVector<Value> {
                            Value pos = stepPosition(sb, sl, t[0], length,
                                                     op.getReverse());
                            if (!streaming)
                              return scalarRow(sb, sl, pos, zero, iter);
                            auto [end, rowIter] = vectorRow(sb, sl, pos, iter);
                            return scalarRow(sb, sl, pos, end, rowIter);
                          });
            if (streaming)
              results[0].getDefiningOp()->setAttr(kStreamStoresAttrName,
                                                  tb.getUnitAttr());
            return results;
          };
          SmallVector<Value> time = streamedIfLarge(
              b, l, op, sizes, {args[0].getType(), carry.getType()},
              [&](OpBuilder &ib, bool streaming) {
                return timeLoop(ib, l, {args[0], carry}, streaming);
              });
          Value last = buildLoop(
              b, l, zero, n, args[1],
              [&](OpBuilder &cb, Location cl, ValueRange j, ValueRange acc) {
                return SmallVector<Value>{
                    insertAt(cb, cl, extractAt(cb, cl, time[1], j), acc[0],
                             channel(cb, cl, j[0]))};
              })[0];
          return SmallVector<Value>{time[0], last};
        });
    rewriter.replaceOp(op, results);
    return success();
  }

  /// One step of a streaming scan of complex channels [0, n) of a group,
  /// on their parts: `iter` holds the output and the carry as parts
  /// (recur.view_as_real; the carry's channel j at 2 j), `bParts` the
  /// inputs as parts and `aParts` the transitions as parts or, where they
  /// are real, as they are; `index(j)` is channel j's index into the
  /// complex tensors. Vectors of 256 bits hold half as many channels as
  /// parts (re, im interleaved); a * h is
  ///
  ///   re(a) h + (-1, 1, ...) im(a) swap(h)
  ///
  /// with re(a), im(a) each part repeated over its channel's two lanes and
  /// swap(h) each channel's parts exchanged: the products and sums of the
  /// scalar complex.mul in the same order, so the same bits for finite
  /// values. A real transition multiplies both parts (the scalar form
  /// multiplies by (a, 0): the same values for finite ones, but the sign
  /// of a zero). The channels past the last whole vector go in one masked
  /// vector. Returns the output and the carry.
  SmallVector<Value> complexRow(
      OpBuilder &b, Location l, LinearScanOp op, Value pos, Value aParts,
      Value bParts, Value n,
      function_ref<SmallVector<Value>(OpBuilder &, Location, Value)> index,
      ValueRange iter) const {
    auto complexType = cast<ComplexType>(getElementTypeOrSelf(op.getH()));
    Type part = complexType.getElementType();
    int64_t lanes = streamLanes(part), perVector = lanes / 2;
    auto vecType = VectorType::get({lanes}, part);
    bool realA = !isa<ComplexType>(getElementTypeOrSelf(op.getA()));
    Value two = indexConst(b, l, 2);
    // Channel j's index into the parts of a complex tensor.
    auto partsIndex = [&](OpBuilder &cb, Location cl, Value j) {
      SmallVector<Value> idx = index(cb, cl, j);
      idx.back() = arith::MulIOp::create(cb, cl, idx.back(), two);
      return idx;
    };
    SmallVector<int64_t> evens, odds, swapped, repeated;
    for (int64_t i = 0; i < lanes; ++i) {
      evens.push_back(i & ~int64_t(1));
      odds.push_back(i | 1);
      swapped.push_back(i ^ 1);
      repeated.push_back(i / 2);
    }
    SmallVector<Attribute> signs;
    for (int64_t i = 0; i < lanes; ++i)
      signs.push_back(FloatAttr::get(part, i % 2 ? 1.0 : -1.0));
    // h = a * carry + b over channels [j, j + perVector), the lanes of
    // `mask` only (all without one).
    auto update = [&](OpBuilder &cb, Location cl, Value j, ValueRange row,
                      Value mask) {
      Value pad = floatConst(cb, cl, part, 0.0);
      auto read = [&](Value tensor, ValueRange at, VectorType type,
                      Value lanesMask) -> Value {
        if (!lanesMask)
          return vector::TransferReadOp::create(cb, cl, type, tensor, at, pad,
                                                ArrayRef<bool>{true});
        auto readOp = vector::TransferReadOp::create(
            cb, cl, type, tensor, at, pad, ArrayRef<bool>{false});
        readOp.getMaskMutable().assign(lanesMask);
        return readOp;
      };
      Value carryIdx = arith::MulIOp::create(cb, cl, j, two);
      Value carry = read(row[1], {carryIdx}, vecType, mask);
      Value bt = read(bParts, partsIndex(cb, cl, j), vecType, mask);
      Value product;
      if (realA) {
        // A real transition, one per channel: each repeated over its
        // channel's two lanes.
        auto halfType = VectorType::get({perVector}, part);
        Value halfMask;
        if (mask) {
          Value count = arith::SubIOp::create(cb, cl, n, j);
          halfMask = vector::CreateMaskOp::create(
              cb, cl, VectorType::get({perVector}, cb.getI1Type()),
              ValueRange{count});
        }
        Value at = read(aParts, index(cb, cl, j), halfType, halfMask);
        Value a2 = vector::ShuffleOp::create(cb, cl, at, at, repeated);
        product = arith::MulFOp::create(cb, cl, a2, carry);
      } else {
        Value at = read(aParts, partsIndex(cb, cl, j), vecType, mask);
        Value re = vector::ShuffleOp::create(cb, cl, at, at, evens);
        Value im = vector::ShuffleOp::create(cb, cl, at, at, odds);
        Value swap = vector::ShuffleOp::create(cb, cl, carry, carry, swapped);
        Value sign = arith::ConstantOp::create(
            cb, cl, vecType, DenseElementsAttr::get(vecType, signs));
        Value cross = arith::MulFOp::create(
            cb, cl, arith::MulFOp::create(cb, cl, im, swap), sign);
        product = arith::AddFOp::create(
            cb, cl, arith::MulFOp::create(cb, cl, re, carry), cross);
      }
      Value h = arith::AddFOp::create(cb, cl, product, bt);
      auto write = [&](Value tensor, ValueRange at) -> Value {
        if (!mask)
          return vector::TransferWriteOp::create(cb, cl, h, tensor, at,
                                                 ArrayRef<bool>{true})
              .getResult();
        auto writeOp = vector::TransferWriteOp::create(cb, cl, h, tensor, at,
                                                       ArrayRef<bool>{false});
        writeOp.getMaskMutable().assign(mask);
        return writeOp.getResult();
      };
      return SmallVector<Value>{write(row[0], partsIndex(cb, cl, j)),
                                write(row[1], {carryIdx})};
    };
    Value zero = indexConst(b, l, 0);
    Value step = indexConst(b, l, perVector);
    Value end =
        arith::SubIOp::create(b, l, n, arith::RemUIOp::create(b, l, n, step));
    auto whole = scf::ForOp::create(
        b, l, zero, end, step, iter,
        [&](OpBuilder &cb, Location cl, Value j, ValueRange row) {
          scf::YieldOp::create(cb, cl, update(cb, cl, j, row, Value()));
        });
    Value rest = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult, end, n);
    auto tail = scf::IfOp::create(
        b, l, rest,
        [&](OpBuilder &cb, Location cl) {
          Value count = arith::MulIOp::create(
              cb, cl, arith::SubIOp::create(cb, cl, n, end), two);
          Value mask = vector::CreateMaskOp::create(
              cb, cl, VectorType::get({lanes}, cb.getI1Type()),
              ValueRange{count});
          scf::YieldOp::create(cb, cl,
                               update(cb, cl, end, whole.getResults(), mask));
        },
        [&](OpBuilder &cb, Location cl) {
          scf::YieldOp::create(cb, cl, whole.getResults());
        });
    return SmallVector<Value>(tail.getResults());
  }

  /// Steps [first, end) of the scan order of channel `outer` (all indices
  /// but the axis; a reverse scan's positions count from the end of
  /// `length`) from the state `h0`, unrollSteps steps an iteration: every
  /// step's loads, then the updates in order, so the loads of later steps
  /// do not wait for the stores of earlier ones (a GPU thread keeps
  /// scanUnrollBytes of each input in flight). Returns, with `hs`, `hs`
  /// with each state written into it, or without, the product of the
  /// decays, and the final state.
  template <typename AAt>
  SmallVector<Value> sweepSteps(OpBuilder &b, Location l, LinearScanOp op,
                                AAt &aAt, ValueRange outer, Value length,
                                Value first, Value end, Value h0,
                                Value hs) const {
    Type elem = cast<RankedTensorType>(op.getH().getType()).getElementType();
    int64_t axis = op.getAxisAttr().getInt();
    Value other = hs ? hs : oneOf(b, l, elem);
    // From step 0 the loop's index is the step.
    bool fromZero = getConstantIntValue(first) == 0;
    auto steps = [&](OpBuilder &tb, Location tl, ArrayRef<Value> ms,
                     ValueRange iter) {
      SmallVector<SmallVector<Value>> idx;
      SmallVector<Value> as, bs;
      for (Value m : ms) {
        Value t = fromZero ? m : arith::AddIOp::create(tb, tl, first, m);
        Value pos = stepPosition(tb, tl, t, length, op.getReverse());
        idx.push_back(withTimeIndex(outer, axis, pos));
        // One statement each: argument order is unspecified.
        as.push_back(aAt(tb, tl, idx.back()));
        bs.push_back(extractAt(tb, tl, op.getB(), idx.back()));
      }
      Value acc = iter[0], h = iter[1];
      for (auto [i, at] : llvm::enumerate(as)) {
        h = add(tb, tl, mul(tb, tl, at, h), bs[i]);
        acc = hs ? insertAt(tb, tl, h, acc, idx[i]) : mul(tb, tl, at, acc);
      }
      return SmallVector<Value>{acc, h};
    };
    SmallVector<Value> iters{other, h0};
    Value n = fromZero ? end : arith::SubIOp::create(b, l, end, first);
    int64_t unroll = unrollSteps(elem);
    if (unroll > 1)
      return buildBlockedLoop(b, l, n, unroll, iters, steps);
    return buildLoop(
        b, l, indexConst(b, l, 0), n, iters,
        [&](OpBuilder &tb, Location tl, ValueRange m, ValueRange iter) {
          return steps(tb, tl, {m[0]}, iter);
        });
  }

  /// sweepSteps by the lanes of a warp (`warp`: on the GPU the innermost
  /// loop of a kWarpLanesAttrName nest): steps [first, end) in rounds of
  /// kWarpLanes, lane i taking step first + 32 r + i of round r, so that a
  /// warp's loads and stores are contiguous. Each iteration loads
  /// warpRounds rounds (a step past `end` is the identity, a = 1 and x =
  /// 0, read from step end - 1 and not written), then for each round scans
  /// the lanes' steps (warpScan), applies them to the carry, writes h (with
  /// `hs`) and takes the carry from lane 31. Returns what sweepSteps
  /// returns, the same in every lane: {hs written, or the decay product of
  /// the steps without `hs`; the state after step end - 1}.
  template <typename AAt>
  SmallVector<Value> warpSweep(OpBuilder &b, Location l, LinearScanOp op,
                               AAt &aAt, ValueRange outer, Value length,
                               Value first, Value end, const Warp &warp,
                               Value h0, Value hs) const {
    Type elem = cast<RankedTensorType>(op.getH().getType()).getElementType();
    int64_t axis = op.getAxisAttr().getInt();
    int64_t rounds = warpRounds(elem);
    Value identity = oneOf(b, l, elem);
    Value zero = zeroOf(b, l, elem);
    Value group = indexConst(b, l, kWarpLanes * rounds);
    Value groups = arith::CeilDivUIOp::create(
        b, l, arith::SubIOp::create(b, l, end, first), group);
    Value lastStep = arith::SubIOp::create(b, l, end, indexConst(b, l, 1));
    // The indices of the element of step t.
    auto stepIndex = [&](OpBuilder &tb, Location tl, Value t) {
      return withTimeIndex(outer, axis,
                           stepPosition(tb, tl, t, length, op.getReverse()));
    };
    SmallVector<Value> iters{hs ? hs : identity, h0};
    return buildLoop(
        b, l, indexConst(b, l, 0), groups, iters,
        [&](OpBuilder &gb, Location gl, ValueRange g, ValueRange iter) {
          Value base = arith::AddIOp::create(
              gb, gl, first, arith::MulIOp::create(gb, gl, g[0], group));
          // Round r, lane i: [r][i].
          SmallVector<SmallVector<Value>> inside(rounds), as(rounds),
              xs(rounds);
          SmallVector<SmallVector<SmallVector<Value>>> idx(rounds);
          for (int64_t r = 0; r < rounds; ++r) {
            for (int64_t i = 0; i < warp.count(); ++i) {
              Value t = arith::AddIOp::create(
                  gb, gl, base,
                  arith::AddIOp::create(gb, gl, warp.laneIndex(gb, gl, i),
                                        indexConst(gb, gl, r * kWarpLanes)));
              inside[r].push_back(arith::CmpIOp::create(
                  gb, gl, arith::CmpIPredicate::ult, t, end));
              idx[r].push_back(stepIndex(
                  gb, gl, arith::MinUIOp::create(gb, gl, t, lastStep)));
              // One statement each: argument order is unspecified.
              Value at = aAt(gb, gl, idx[r].back());
              Value xt = extractAt(gb, gl, op.getB(), idx[r].back());
              as[r].push_back(arith::SelectOp::create(gb, gl, inside[r].back(),
                                                      at, identity));
              xs[r].push_back(
                  arith::SelectOp::create(gb, gl, inside[r].back(), xt, zero));
            }
          }
          Value acc = iter[0], h = iter[1];
          for (int64_t r = 0; r < rounds; ++r) {
            auto [a, x] = warpScan(gb, gl, warp, as[r], xs[r]);
            SmallVector<Value> states;
            for (int64_t i = 0; i < warp.count(); ++i)
              states.push_back(add(gb, gl, mul(gb, gl, a[i], h), x[i]));
            if (hs && warp.lane) {
              // On the GPU each lane writes its step if it is one.
              auto write = scf::IfOp::create(gb, gl, TypeRange{acc.getType()},
                                             inside[r][0],
                                             /*withElseRegion=*/true);
              OpBuilder tb =
                  OpBuilder::atBlockEnd(&write.getThenRegion().front());
              scf::YieldOp::create(tb, gl,
                                   insertAt(tb, gl, states[0], acc, idx[r][0]));
              OpBuilder eb =
                  OpBuilder::atBlockEnd(&write.getElseRegion().front());
              scf::YieldOp::create(eb, gl, acc);
              acc = write.getResult(0);
            } else if (hs) {
              // Emulated, a loop over the lanes that hold steps (the first
              // min(32, end - start) of the round: a chain of 32 branches
              // updating one tensor takes bufferization minutes).
              Value start = arith::AddIOp::create(
                  gb, gl, base, indexConst(gb, gl, r * kWarpLanes));
              Value count = arith::SubIOp::create(
                  gb, gl, arith::MaxUIOp::create(gb, gl, end, start), start);
              count = arith::MinUIOp::create(gb, gl, count,
                                             indexConst(gb, gl, kWarpLanes));
              Value row = tensor::FromElementsOp::create(gb, gl, states);
              acc = buildLoop(
                  gb, gl, indexConst(gb, gl, 0), count, acc,
                  [&](OpBuilder &jb, Location jl, ValueRange j,
                      ValueRange out) {
                    return SmallVector<Value>{insertAt(
                        jb, jl, extractAt(jb, jl, row, j), out[0],
                        stepIndex(jb, jl,
                                  arith::AddIOp::create(jb, jl, start, j[0])))};
                  })[0];
            } else {
              acc = mul(gb, gl, warp.last(gb, gl, a), acc);
            }
            h = warp.last(gb, gl, states);
          }
          return SmallVector<Value>{acc, h};
        });
  }

  /// One channel at a time (each index of the dimensions but the axis, a
  /// nest of independent iterations), its carry a scalar, unrollSteps steps
  /// an iteration with their loads first.
  template <typename AAt, typename CarryInit>
  SmallVector<Value> buildByChannel(OpBuilder &rewriter, Location loc,
                                    LinearScanOp op, ArrayRef<Value> sizes,
                                    Value hInit, Value lastInit, AAt &aAt,
                                    CarryInit &carryInit) const {
    int64_t axis = op.getAxisAttr().getInt();
    Value length = sizes[axis];
    SmallVector<Value> results = buildNestExcept(
        rewriter, loc, sizes, axis, {hInit, lastInit},
        [&](OpBuilder &b, Location l, ValueRange outer, ValueRange args) {
          SmallVector<Value> time =
              sweepSteps(b, l, op, aAt, outer, length, indexConst(b, l, 0),
                         length, carryInit(b, l, outer), args[0]);
          Value last = insertAt(b, l, time[1], args[1], outer);
          return SmallVector<Value>{time[0], last};
        });
    return results;
  }

  /// The spread form, for a GPU, where one channel a thread leaves few
  /// threads (one long sequence, say): when the scan has c <= scanSpread /
  /// kSpreadFactor channels and T > scanSpreadChunk steps at run time, the
  /// chunked form (buildChunked) with chunks of max(scanSpreadChunk,
  /// ceil(T c / scanSpread)) steps, about scanSpread threads in all, its
  /// chunks' carries a linear_scan of their own (spread again when longer
  /// than a chunk, up to kMaxSpreadLevels deep; it has the same channels);
  /// otherwise one channel a thread. The inputs are read twice, so a scan
  /// with many channels keeps the one-pass form, and one of a chunk or
  /// less (a step of streaming decode, say) is not split into launches
  /// that would do nothing.
  template <typename AAt, typename CarryInit>
  SmallVector<Value>
  buildSpread(OpBuilder &rewriter, Location loc, LinearScanOp op, int64_t level,
              ArrayRef<Value> sizes, ArrayRef<Value> lastSizes, Value hInit,
              Value lastInit, AAt &aAt, CarryInit &carryInit) const {
    int64_t axis = op.getAxisAttr().getInt();
    Value channels = indexConst(rewriter, loc, 1);
    for (Value size : lastSizes)
      channels = arith::MulIOp::create(rewriter, loc, channels, size);
    // In chunks of max(scanSpreadChunk, ceil(T c / scanSpread)) steps; by
    // warps, of max(scanSpreadChunk, ceil(32 T c / scanSpread)) rounded up
    // to a warp's loads (only a channel's last chunk then has steps past
    // its end).
    auto chunked = [&](OpBuilder &b) -> SmallVector<Value> {
      // Not the carries of a spread scan (only where blocks did not apply).
      if (scanBlocks > 0 && level == 0 && !oneStaticTile(op, sizes, lastSizes))
        return buildBlocks(b, loc, op, sizes, lastSizes, hInit, lastInit, aAt,
                           carryInit);
      Value steps = arith::MulIOp::create(b, loc, sizes[axis], channels);
      if (scanWarps)
        steps = arith::MulIOp::create(b, loc, steps,
                                      indexConst(b, loc, kWarpLanes));
      Value chunk = arith::MaxUIOp::create(
          b, loc, indexConst(b, loc, scanSpreadChunk),
          arith::CeilDivUIOp::create(b, loc, steps,
                                     indexConst(b, loc, scanSpread)));
      if (scanWarps) {
        Type elem = getElementTypeOrSelf(op.getH());
        Value group = indexConst(b, loc, kWarpLanes * warpRounds(elem));
        chunk = arith::MulIOp::create(
            b, loc, arith::CeilDivUIOp::create(b, loc, chunk, group), group);
      }
      return buildChunked(b, loc, op, sizes, lastSizes, hInit, lastInit, aAt,
                          carryInit, chunk, /*nestedLevel=*/level + 1,
                          scanWarps);
    };
    // Longer than one chunk, and (a scan not nested, whose channels are
    // its parent's) few channels.
    Value spread = arith::CmpIOp::create(
        rewriter, loc, arith::CmpIPredicate::ugt, sizes[axis],
        indexConst(rewriter, loc, scanSpreadChunk));
    if (level == 0)
      spread = arith::AndIOp::create(
          rewriter, loc, spread,
          arith::CmpIOp::create(
              rewriter, loc, arith::CmpIPredicate::ule, channels,
              indexConst(rewriter, loc,
                         std::max<int64_t>(1, scanSpread / kSpreadFactor))));
    auto choice = scf::IfOp::create(
        rewriter, loc, TypeRange{hInit.getType(), lastInit.getType()}, spread,
        /*withElseRegion=*/true);
    {
      // The rewriter's listener sees the nested linear_scan, so the
      // conversion lowers it too.
      OpBuilder tb = OpBuilder::atBlockEnd(&choice.getThenRegion().front(),
                                           rewriter.getListener());
      scf::YieldOp::create(tb, loc, chunked(tb));
    }
    {
      OpBuilder eb = OpBuilder::atBlockEnd(&choice.getElseRegion().front());
      scf::YieldOp::create(
          eb, loc,
          buildByChannel(eb, loc, op, sizes, hInit, lastInit, aAt, carryInit));
    }
    return SmallVector<Value>(choice.getResults());
  }

  /// Whether `op` of `sizes` (every dimension but the axis: `lastSizes`)
  /// is statically one tile of the block form: its loop over the tiles
  /// would fold away, and its block with it (the spread form instead).
  bool oneStaticTile(LinearScanOp op, ArrayRef<Value> sizes,
                     ArrayRef<Value> lastSizes) const {
    Type elem = getElementTypeOrSelf(op.getH());
    std::optional<int64_t> length =
        getConstantIntValue(sizes[op.getAxisAttr().getInt()]);
    if (!length)
      return false;
    int64_t channels = 1;
    for (Value size : lastSizes) {
      std::optional<int64_t> n = getConstantIntValue(size);
      if (!n)
        return false;
      channels *= *n;
    }
    return channels == 1 && *length <= scanBlocks * blockSteps(elem);
  }

  /// The block form (scan-blocks, recurc's --cuda-scan-blocks), for a GPU,
  /// in place of the spread form where that would spread: one pass over
  /// the inputs in tiles of S = n k steps of one channel (n = scanBlocks
  /// threads of a block, k = blockSteps), a block a tile, the tiles of a
  /// channel chained by a decoupled look-back (Merrill and Garland, 2016).
  /// The loop over the tiles (channel-major) is tagged kGpuBlockAttrName;
  /// in it, the loops from 0 to n tagged kBlockThreadsAttrName are the
  /// block's threads (recur-gpu-offload: a barrier between them), the rest
  /// runs once per block (on the GPU by its first thread, where it writes
  /// memory). In each tile:
  ///  - the threads load its steps' a and x, thread i steps i + n m
  ///    (neighbouring threads on neighbouring steps where time is the
  ///    innermost dimension), into block buffers (shared memory), one
  ///    element of padding every kSharedBanks banks' worth of elements (32
  ///    f32, 16 f64 or complex<f32>, 8 complex<f64>) so that the reads of
  ///    the next two loops, thread i steps i k to i k + k - 1, fall in
  ///    distinct banks; steps past the end are the identity (a = 1, x =
  ///    -0.0);
  ///  - thread i composes its k steps from the identity: (A_i, X_i);
  ///  - once per block, the exclusive prefixes of those (P_i: threads 0 to
  ///    i - 1 composed, over them) and the tile's composition (A, X);
  ///  - once per block, the state entering the tile: the channel's initial
  ///    state for its first tile; otherwise the tile publishes (A, X) with
  ///    flag 1 (an aggregate) and walks back over the tiles before it,
  ///    waiting for each one's flag, composing their aggregates until one
  ///    has published its end state (flag 2, an inclusive prefix). Every
  ///    tile then publishes its end state A h + X with flag 2. The
  ///    statuses are their values' bits, read (an or of 0) and written by
  ///    integer atomics (acquire-release; on the GPU a fence between a
  ///    tile's values and its flag, and after the loop that waits for a
  ///    flag: a GPU's f32 atomic add, say, flushes subnormals); the tiles of a
  ///    channel are consecutive blocks, and a GPU starts blocks in order, so a
  ///    block waits only on blocks already running (as CUB's scans do). On the
  ///    CPU (the parallel loop over tiles in OpenMP threads) a thread waits
  ///    only on tiles before its own, which earlier threads, or itself, run in
  ///    order;
  ///  - thread i runs its k steps again from P_i applied to that state,
  ///    writing the states over its x in the block buffer; then the
  ///    threads store them as they loaded (thread i steps i + n m).
  /// Then a nest over the channels takes each one's last state from its
  /// last tile's status. The inputs are read once and the states written once.
  template <typename AAt, typename CarryInit>
  SmallVector<Value>
  buildBlocks(OpBuilder &rewriter, Location loc, LinearScanOp op,
              ArrayRef<Value> sizes, ArrayRef<Value> lastSizes, Value hInit,
              Value lastInit, AAt &aAt, CarryInit &carryInit) const {
    int64_t axis = op.getAxisAttr().getInt();
    Type elem = cast<RankedTensorType>(op.getH().getType()).getElementType();
    auto complexType = dyn_cast<ComplexType>(elem);
    Type part = complexType ? complexType.getElementType() : elem;
    int64_t parts = complexType ? 2 : 1;
    int64_t threads = scanBlocks;
    int64_t steps = blockSteps(elem);
    int64_t tile = threads * steps;
    Value length = sizes[axis];
    OpBuilder &b = rewriter;
    Value zeroIdx = indexConst(b, loc, 0);
    Value oneIdx = indexConst(b, loc, 1);
    Value channels = oneIdx;
    for (Value size : lastSizes)
      channels = arith::MulIOp::create(b, loc, channels, size);
    Value perChannel =
        arith::CeilDivUIOp::create(b, loc, length, indexConst(b, loc, tile));
    Value tiles = arith::MulIOp::create(b, loc, channels, perChannel);

    // The tiles' statuses: a flag (0: nothing yet, 1: aggregate, 2:
    // inclusive), their aggregates (A, X) and end states H, a complex
    // value as its two parts.
    Type i32 = b.getI32Type();
    // The values as their bits: a GPU's f32 atomic add flushes subnormals.
    Type bits = b.getIntegerType(part.getIntOrFloatBitWidth());
    auto flagType = MemRefType::get({ShapedType::kDynamic}, i32);
    auto valueType = MemRefType::get({ShapedType::kDynamic}, bits);
    Value flags = memref::AllocOp::create(b, loc, flagType, tiles);
    linalg::FillOp::create(
        b, loc, ValueRange{arith::ConstantIntOp::create(b, loc, 0, 32)},
        ValueRange{flags});
    Value slots =
        arith::MulIOp::create(b, loc, tiles, indexConst(b, loc, parts));
    Value statusA = memref::AllocOp::create(b, loc, valueType, slots);
    Value statusX = memref::AllocOp::create(b, loc, valueType, slots);
    Value statusH = memref::AllocOp::create(b, loc, valueType, slots);

    // The identity step h -> 1 h + (-0.0), exact for every h (-0.0 + -0.0
    // is -0.0; +0.0 would turn a state of -0.0 into +0.0).
    Value identity = oneOf(b, loc, elem);
    Value zero = negativeZeroOf(b, loc, elem);
    // One element of padding every kSharedBanks 32-bit banks' worth of
    // elements, so that the threads' runs of `steps` elements start in
    // distinct banks.
    int64_t padEvery =
        std::max<int64_t>(kSharedBanks * 4 / elementBytes(elem).value_or(4), 1);
    auto sharedType = [&](int64_t n) {
      return RankedTensorType::get({n + n / padEvery}, elem);
    };
    // Element e of a block buffer.
    auto padded = [&](OpBuilder &pb, Location pl, Value e) -> Value {
      return arith::AddIOp::create(
          pb, pl, e,
          arith::DivUIOp::create(pb, pl, e, indexConst(pb, pl, padEvery)));
    };
    // The threads of a block: a loop from 0 to `threads` tagged
    // kBlockThreadsAttrName.
    auto threadLoop = [&](OpBuilder &tb, Location tl, ValueRange init,
                          LoopBody body) {
      return tiles::threadLoop(tb, tl, threads, init, body);
    };
    // Atomic reads (an or of 0) and writes of the statuses' bits, a
    // complex value part by part.
    auto readSlot = [&](OpBuilder &sb, Location sl, Value status, Value t) {
      Value none = arith::ConstantIntOp::create(sb, sl, bits, 0);
      SmallVector<Value> values;
      for (int64_t p = 0; p < parts; ++p) {
        Value at = arith::AddIOp::create(
            sb, sl, arith::MulIOp::create(sb, sl, t, indexConst(sb, sl, parts)),
            indexConst(sb, sl, p));
        values.push_back(arith::BitcastOp::create(
            sb, sl, part,
            memref::AtomicRMWOp::create(sb, sl, arith::AtomicRMWKind::ori, none,
                                        status, at)));
      }
      return complexType
                 ? complex::CreateOp::create(sb, sl, elem, values[0], values[1])
                       .getResult()
                 : values[0];
    };
    auto writeSlot = [&](OpBuilder &sb, Location sl, Value status, Value t,
                         Value v) {
      SmallVector<Value> values{v};
      if (complexType)
        values = {complex::ReOp::create(sb, sl, v),
                  complex::ImOp::create(sb, sl, v)};
      for (int64_t p = 0; p < parts; ++p) {
        Value at = arith::AddIOp::create(
            sb, sl, arith::MulIOp::create(sb, sl, t, indexConst(sb, sl, parts)),
            indexConst(sb, sl, p));
        memref::AtomicRMWOp::create(
            sb, sl, arith::AtomicRMWKind::assign,
            arith::BitcastOp::create(sb, sl, bits, values[p]), status, at);
      }
    };
    // The statuses' writes must be seen before their flag's, and a flag
    // read before the statuses' reads after it: the atomics are
    // acquire-release, but LLVM's NVPTX backend makes every atomic
    // read-modify-write relaxed, so recur-gpu-offload puts a fence before
    // a flag's write and after the loop that waits for a flag
    // (kFenceBeforeAttrName, kFenceAfterAttrName).
    auto setFlag = [&](OpBuilder &sb, Location sl, Value t, int64_t flag) {
      memref::AtomicRMWOp::create(
          sb, sl, arith::AtomicRMWKind::assign,
          arith::ConstantIntOp::create(sb, sl, flag, 32), flags, t)
          ->setAttr(kFenceBeforeAttrName, sb.getUnitAttr());
    };
    // (a, x) after (A, X): h -> a (A h + X) + x.
    auto compose = [&](OpBuilder &cb, Location cl, Value a, Value x, Value A,
                       Value X) {
      return std::make_pair(mul(cb, cl, a, A),
                            add(cb, cl, mul(cb, cl, a, X), x));
    };

    SmallVector<Value> results = buildNest(
        b, loc, ValueRange{tiles}, ValueRange{hInit},
        [&](OpBuilder &bb, Location l, ValueRange iv, ValueRange args) {
          Value t = iv[0];
          Value channel = arith::DivUIOp::create(bb, l, t, perChannel);
          Value j = arith::RemUIOp::create(bb, l, t, perChannel);
          Value start =
              arith::MulIOp::create(bb, l, j, indexConst(bb, l, tile));
          // The channel's indices (every dimension but the axis).
          SmallVector<Value> outer(lastSizes.size());
          Value rest = channel;
          for (size_t d = lastSizes.size(); d-- > 0;) {
            outer[d] = d == 0
                           ? rest
                           : arith::RemUIOp::create(bb, l, rest, lastSizes[d]);
            if (d != 0)
              rest = arith::DivUIOp::create(bb, l, rest, lastSizes[d]);
          }
          Value lastStep = arith::SubIOp::create(bb, l, length, oneIdx);
          auto stepIndex = [&](OpBuilder &sb, Location sl, Value s) {
            return withTimeIndex(
                outer, axis, stepPosition(sb, sl, s, length, op.getReverse()));
          };
          // Thread i's m-th load and store: step start + i + n m.
          auto strided = [&](OpBuilder &sb, Location sl, Value i, int64_t m) {
            return arith::AddIOp::create(sb, sl, i,
                                         indexConst(sb, sl, m * threads));
          };

          // The tile's a and x in block buffers.
          Value bufA = privateScratch(bb, l, sharedType(tile), {});
          Value bufX = privateScratch(bb, l, sharedType(tile), {});
          SmallVector<Value> loaded = threadLoop(
              bb, l, ValueRange{bufA, bufX},
              [&](OpBuilder &tb, Location tl, ValueRange i, ValueRange buf) {
                SmallVector<Value> as, xs, at;
                for (int64_t m = 0; m < steps; ++m) {
                  Value e = strided(tb, tl, i[0], m);
                  Value s = arith::AddIOp::create(tb, tl, start, e);
                  Value inside = arith::CmpIOp::create(
                      tb, tl, arith::CmpIPredicate::ult, s, length);
                  SmallVector<Value> idx = stepIndex(
                      tb, tl, arith::MinUIOp::create(tb, tl, s, lastStep));
                  // One statement each: argument order is unspecified.
                  Value a = aAt(tb, tl, idx);
                  Value x = extractAt(tb, tl, op.getB(), idx);
                  as.push_back(
                      arith::SelectOp::create(tb, tl, inside, a, identity));
                  xs.push_back(
                      arith::SelectOp::create(tb, tl, inside, x, zero));
                  at.push_back(padded(tb, tl, e));
                }
                Value outA = buf[0], outX = buf[1];
                for (int64_t m = 0; m < steps; ++m) {
                  outA = insertAt(tb, tl, as[m], outA, at[m]);
                  outX = insertAt(tb, tl, xs[m], outX, at[m]);
                }
                return SmallVector<Value>{outA, outX};
              });
          // Thread i's run: steps i k + m.
          auto runStep = [&](OpBuilder &sb, Location sl, Value i,
                             int64_t m) -> Value {
            return padded(
                sb, sl,
                arith::AddIOp::create(
                    sb, sl,
                    arith::MulIOp::create(sb, sl, i, indexConst(sb, sl, steps)),
                    indexConst(sb, sl, m)));
          };
          // Each thread's composition of its run.
          auto aggType = RankedTensorType::get({threads}, elem);
          SmallVector<Value> aggregates = threadLoop(
              bb, l,
              ValueRange{privateScratch(bb, l, aggType, {}),
                         privateScratch(bb, l, aggType, {})},
              [&](OpBuilder &tb, Location tl, ValueRange i, ValueRange agg) {
                Value A = identity, X = zero;
                for (int64_t m = 0; m < steps; ++m) {
                  Value at = runStep(tb, tl, i[0], m);
                  std::tie(A, X) =
                      compose(tb, tl, extractAt(tb, tl, loaded[0], at),
                              extractAt(tb, tl, loaded[1], at), A, X);
                }
                return SmallVector<Value>{insertAt(tb, tl, A, agg[0], i),
                                          insertAt(tb, tl, X, agg[1], i)};
              });
          // Once per block: the exclusive prefixes, over the threads'
          // compositions (two buffers fewer in shared memory), and the
          // tile's composition.
          SmallVector<Value> prefixes = buildLoop(
              bb, l, zeroIdx, indexConst(bb, l, threads),
              ValueRange{aggregates[0], aggregates[1], identity, zero},
              [&](OpBuilder &pb, Location pl, ValueRange i, ValueRange acc) {
                // One statement each: argument order is unspecified.
                Value a = extractAt(pb, pl, acc[0], i);
                Value x = extractAt(pb, pl, acc[1], i);
                Value preA = insertAt(pb, pl, acc[2], acc[0], i);
                Value preX = insertAt(pb, pl, acc[3], acc[1], i);
                auto [A, X] = compose(pb, pl, a, x, acc[2], acc[3]);
                return SmallVector<Value>{preA, preX, A, X};
              });
          Value tileA = prefixes[2], tileX = prefixes[3];

          // Once per block: the state entering the tile.
          Value first = arith::CmpIOp::create(bb, l, arith::CmpIPredicate::eq,
                                              j, zeroIdx);
          auto entering = scf::IfOp::create(bb, l, TypeRange{elem}, first,
                                            /*withElseRegion=*/true);
          {
            OpBuilder tb = OpBuilder::atBlockEnd(entering.thenBlock());
            scf::YieldOp::create(tb, l, carryInit(tb, l, outer));
          }
          {
            OpBuilder eb = OpBuilder::atBlockEnd(entering.elseBlock());
            writeSlot(eb, l, statusA, t, tileA);
            writeSlot(eb, l, statusX, t, tileX);
            setFlag(eb, l, t, 1);
            // Back from tile t - 1, composing aggregates, to the first
            // inclusive prefix.
            Value previous = arith::SubIOp::create(eb, l, t, oneIdx);
            auto walk = scf::WhileOp::create(
                eb, l, TypeRange{eb.getIndexType(), elem, elem},
                ValueRange{previous, identity, zero});
            {
              Block *before = eb.createBlock(
                  &walk.getBefore(), {},
                  TypeRange{eb.getIndexType(), elem, elem}, {l, l, l});
              OpBuilder wb = OpBuilder::atBlockEnd(before);
              Value p = before->getArgument(0);
              // Wait for tile p's flag.
              auto wait =
                  scf::WhileOp::create(wb, l, TypeRange{i32}, ValueRange{});
              {
                Block *poll = wb.createBlock(&wait.getBefore());
                OpBuilder pb = OpBuilder::atBlockEnd(poll);
                Value flag = memref::AtomicRMWOp::create(
                    pb, l, arith::AtomicRMWKind::ori,
                    arith::ConstantIntOp::create(pb, l, 0, 32), flags, p);
                Value none = arith::CmpIOp::create(
                    pb, l, arith::CmpIPredicate::eq, flag,
                    arith::ConstantIntOp::create(pb, l, 0, 32));
                scf::ConditionOp::create(pb, l, none, ValueRange{flag});
                Block *again =
                    wb.createBlock(&wait.getAfter(), {}, TypeRange{i32}, {l});
                OpBuilder ab = OpBuilder::atBlockEnd(again);
                scf::YieldOp::create(ab, l, ValueRange{});
              }
              wait->setAttr(kFenceAfterAttrName, wb.getUnitAttr());
              wb.setInsertionPointAfter(wait);
              Value aggregate = arith::CmpIOp::create(
                  wb, l, arith::CmpIPredicate::eq, wait.getResult(0),
                  arith::ConstantIntOp::create(wb, l, 1, 32));
              scf::ConditionOp::create(wb, l, aggregate,
                                       before->getArguments());
              Block *after = eb.createBlock(
                  &walk.getAfter(), {},
                  TypeRange{eb.getIndexType(), elem, elem}, {l, l, l});
              OpBuilder cb = OpBuilder::atBlockEnd(after);
              Value q = after->getArgument(0);
              // One statement each: argument order is unspecified.
              Value qa = readSlot(cb, l, statusA, q);
              Value qx = readSlot(cb, l, statusX, q);
              auto [A, X] = compose(cb, l, after->getArgument(1),
                                    after->getArgument(2), qa, qx);
              scf::YieldOp::create(
                  cb, l,
                  ValueRange{arith::SubIOp::create(cb, l, q, oneIdx), A, X});
            }
            eb.setInsertionPointAfter(walk);
            Value h = readSlot(eb, l, statusH, walk.getResult(0));
            Value state =
                add(eb, l, mul(eb, l, walk.getResult(1), h), walk.getResult(2));
            scf::YieldOp::create(eb, l, state);
          }
          Value hIn = entering.getResult(0);
          Value hEnd = add(bb, l, mul(bb, l, tileA, hIn), tileX);
          writeSlot(bb, l, statusH, t, hEnd);
          if (blockAggregatesOnly) {
            auto publish = scf::IfOp::create(bb, l, first);
            OpBuilder pb = OpBuilder::atBlockBegin(publish.thenBlock());
            setFlag(pb, l, t, 2);
          } else {
            setFlag(bb, l, t, 2);
          }

          // Each thread's states, over its x in the block buffer.
          Value states =
              threadLoop(
                  bb, l, ValueRange{loaded[1]},
                  [&](OpBuilder &tb, Location tl, ValueRange i,
                      ValueRange buf) {
                    Value h =
                        add(tb, tl,
                            mul(tb, tl, extractAt(tb, tl, prefixes[0], i), hIn),
                            extractAt(tb, tl, prefixes[1], i));
                    Value out = buf[0];
                    for (int64_t m = 0; m < steps; ++m) {
                      Value at = runStep(tb, tl, i[0], m);
                      h = add(tb, tl,
                              mul(tb, tl, extractAt(tb, tl, loaded[0], at), h),
                              extractAt(tb, tl, out, at));
                      out = insertAt(tb, tl, h, out, at);
                    }
                    return SmallVector<Value>{out};
                  })
                  .front();
          // Stored as loaded: thread i's steps i + n m before the end.
          Value tail = arith::SubIOp::create(bb, l, length, start);
          Value hOut =
              threadLoop(
                  bb, l, ValueRange{args[0]},
                  [&](OpBuilder &tb, Location tl, ValueRange i,
                      ValueRange out) {
                    Value left = arith::SubIOp::create(
                        tb, tl, arith::MaxUIOp::create(tb, tl, tail, i[0]),
                        i[0]);
                    Value count = arith::MinUIOp::create(
                        tb, tl,
                        arith::CeilDivUIOp::create(tb, tl, left,
                                                   indexConst(tb, tl, threads)),
                        indexConst(tb, tl, steps));
                    return buildLoop(
                        tb, tl, indexConst(tb, tl, 0), count, out,
                        [&](OpBuilder &mb, Location ml, ValueRange m,
                            ValueRange acc) {
                          Value e = arith::AddIOp::create(
                              mb, ml, i[0],
                              arith::MulIOp::create(
                                  mb, ml, m[0], indexConst(mb, ml, threads)));
                          Value h =
                              extractAt(mb, ml, states, padded(mb, ml, e));
                          return SmallVector<Value>{
                              insertAt(mb, ml, h, acc[0],
                                       stepIndex(mb, ml,
                                                 arith::AddIOp::create(
                                                     mb, ml, start, e)))};
                        });
                  })
                  .front();
          return SmallVector<Value>{hOut};
        });
    results.front().getDefiningOp()->setAttr(kGpuBlockAttrName,
                                             b.getUnitAttr());
    // Each channel's last state: its last tile's end state.
    Value last =
        buildNest(
            b, loc, lastSizes, ValueRange{lastInit},
            [&](OpBuilder &nb, Location l, ValueRange outer, ValueRange args) {
              Value channel = zeroIdx;
              for (auto [index, size] : llvm::zip_equal(outer, lastSizes))
                channel = arith::AddIOp::create(
                    nb, l, arith::MulIOp::create(nb, l, channel, size), index);
              Value t = arith::SubIOp::create(
                  nb, l,
                  arith::MulIOp::create(
                      nb, l, arith::AddIOp::create(nb, l, channel, oneIdx),
                      perChannel),
                  oneIdx);
              SmallVector<Value> values;
              for (int64_t p = 0; p < parts; ++p)
                values.push_back(arith::BitcastOp::create(
                    nb, l, part,
                    memref::LoadOp::create(
                        nb, l, statusH,
                        ValueRange{arith::AddIOp::create(
                            nb, l,
                            arith::MulIOp::create(nb, l, t,
                                                  indexConst(nb, l, parts)),
                            indexConst(nb, l, p))})));
              Value h = complexType ? complex::CreateOp::create(
                                          nb, l, elem, values[0], values[1])
                                          .getResult()
                                    : values[0];
              return SmallVector<Value>{insertAt(nb, l, h, args[0], outer)};
            })
            .front();
    return {results.front(), last};
  }

  /// Whether `op`, on the CPU and not in the few-channels form, has a static
  /// last dimension of at most kMaxScalarChannels channels scanned along
  /// the dimension before it (complex ones, say): each channel then goes on
  /// its own with a scalar carry, as along the last dimension, rather than
  /// by groups of a few elements each step.
  bool fewScalarChannels(LinearScanOp op) const {
    auto hType = cast<RankedTensorType>(op.getH().getType());
    int64_t rank = hType.getRank();
    return scanGroup == kScanGroupByThreads &&
           op.getAxisAttr().getInt() == rank - 2 &&
           !hType.isDynamicDim(rank - 1) &&
           hType.getDimSize(rank - 1) <= kMaxScalarChannels && !narrowWidth(op);
  }

  /// The channel count C of a row of `op` when it goes by buildNarrow: on the
  /// CPU (groups chosen by threads), f32 or f64 with a transition of the same
  /// shape, along the last dimension (C = 1) or the one before a static last
  /// dimension C that divides the vector's lanes or is a multiple of them up
  /// to kNarrowVectors vectors.
  std::optional<int64_t> narrowWidth(LinearScanOp op) const {
    auto hType = cast<RankedTensorType>(op.getH().getType());
    Type elem = hType.getElementType();
    int64_t rank = hType.getRank();
    int64_t axis = op.getAxisAttr().getInt();
    if (scanGroup != kScanGroupByThreads || !(elem.isF32() || elem.isF64()) ||
        op.getA().getType() != op.getB().getType())
      return std::nullopt;
    if (axis == rank - 1)
      return 1;
    if (axis != rank - 2 || hType.isDynamicDim(rank - 1))
      return std::nullopt;
    int64_t width = hType.getDimSize(rank - 1), lanes = streamLanes(elem);
    if ((width < lanes && lanes % width == 0) ||
        (width % lanes == 0 && width <= kNarrowVectors * lanes))
      return width;
    return std::nullopt;
  }

  /// The form for few channels: each row of the scan (one index of the
  /// dimensions before the axis) is its T steps of C channels, contiguous,
  /// read as one stretch of T * C elements in vectors of L lanes (f32: 8,
  /// f64: 4). The groups of the general form would leave every thread a few
  /// channels and a loop's overhead per step (108 ms for 16M steps of one
  /// channel against 22 ms for a plain loop, 2026-11-27).
  ///  - C < L (C divides L): a vector holds m = L / C consecutive steps.
  ///    Their maps h -> a h + x are composed in the register first (log2 m
  ///    levels, each combining every step with the one s steps before it:
  ///    x_i += a_i x_{i-s}, a_i *= a_{i-s}), then applied to the carry, the
  ///    last step's C channels repeated over the lanes: the dependence
  ///    from one vector to the next is one fma and one shuffle, not m fmas.
  ///    The steps left over (fewer than m) go one channel at a time.
  ///  - C = k L (k <= kNarrowVectors): a step is k vectors, their carries
  ///    in registers.
  /// A reverse scan walks the stretch from its end, composing towards the
  /// lower lanes. With fewer rows than threads, each row goes in chunks
  /// over the threads in two passes (see byChunks below). The result is the
  /// recurrence up to rounding (composing the maps regroups the products),
  /// as buildChunked's.
  template <typename CarryInit>
  SmallVector<Value> buildNarrow(OpBuilder &rewriter, Location loc,
                                 LinearScanOp op, int64_t width,
                                 ArrayRef<Value> sizes, Value hInit,
                                 Value lastInit, CarryInit &carryInit) const {
    auto hType = cast<RankedTensorType>(op.getH().getType());
    Type elem = hType.getElementType();
    int64_t rank = hType.getRank();
    int64_t axis = op.getAxisAttr().getInt();
    bool reverse = op.getReverse();
    int64_t lanes = streamLanes(elem);
    int64_t group = std::max(lanes, width); // elements per iteration
    int64_t vectors = group / lanes;
    int64_t steps = group / width; // steps per iteration
    auto vecType = VectorType::get({lanes}, elem);

    // Each row as one stretch: [outer..., T * C].
    bool collapse = axis == rank - 2;
    SmallVector<ReassociationIndices> flat;
    for (int64_t d = 0; d < axis; ++d)
      flat.push_back({d});
    flat.push_back(collapse ? ReassociationIndices{axis, axis + 1}
                            : ReassociationIndices{axis});
    auto toFlat = [&](Value tensor) -> Value {
      if (!collapse)
        return tensor;
      return tensor::CollapseShapeOp::create(rewriter, loc, tensor, flat);
    };
    Value aFlat = toFlat(op.getA()), bFlat = toFlat(op.getB());
    Value hFlat = toFlat(hInit);
    Value length = sizes[axis];
    Value n = arith::MulIOp::create(rewriter, loc, length,
                                    indexConst(rewriter, loc, width));
    Value stepsPer = indexConst(rewriter, loc, steps);
    Value whole = arith::DivUIOp::create(rewriter, loc, length, stepsPer);
    Value rest = arith::RemUIOp::create(rewriter, loc, length, stepsPer);
    SmallVector<Value> outerSizes(sizes.begin(), sizes.begin() + axis);

    // `v` moved `by` lanes towards the later steps (higher lanes forward,
    // lower in reverse), the lanes it leaves taken from the splat `fill`.
    auto moved = [&](OpBuilder &b, Location l, Value v, Value fill,
                     int64_t by) -> Value {
      SmallVector<int64_t> mask;
      for (int64_t i = 0; i < lanes; ++i) {
        int64_t from = reverse ? i + by : i - by;
        mask.push_back(from >= 0 && from < lanes ? from : lanes + i);
      }
      return vector::ShuffleOp::create(b, l, v, fill, mask);
    };
    auto splat = [&](OpBuilder &b, Location l, double value) -> Value {
      return arith::ConstantOp::create(
          b, l, vecType,
          DenseElementsAttr::get(vecType, b.getFloatAttr(elem, value)));
    };
    // Lane i of the result: the last step's channel i mod C in `v`.
    auto lastStep = [&](OpBuilder &b, Location l, Value v) -> Value {
      SmallVector<int64_t> mask;
      for (int64_t i = 0; i < lanes; ++i)
        mask.push_back((reverse ? 0 : lanes - width) + i % width);
      return vector::ShuffleOp::create(b, l, v, v, mask);
    };
    Value groupSize = indexConst(rewriter, loc, group);

    // Channel c of row `outer` in `init` and `last`.
    auto channel = [&](OpBuilder &b, Location l, ValueRange outer, int64_t c) {
      SmallVector<Value> idx(outer);
      if (collapse)
        idx.push_back(indexConst(b, l, c));
      return idx;
    };
    // The carries entering row `outer`: lane i of vector j holds channel
    // (j L + i) mod C.
    auto initialCarries = [&](OpBuilder &b, Location l, ValueRange outer) {
      SmallVector<Value> inits;
      for (int64_t c = 0; c < width; ++c)
        inits.push_back(carryInit(b, l, channel(b, l, outer, c)));
      SmallVector<Value> carries;
      for (int64_t j = 0; j < vectors; ++j) {
        SmallVector<Value> lanesOf;
        for (int64_t i = 0; i < lanes; ++i)
          lanesOf.push_back(inits[(j * lanes + i) % width]);
        carries.push_back(
            vector::FromElementsOp::create(b, l, vecType, lanesOf));
      }
      return carries;
    };

    // Iterations [from, to) of row `outer` (iteration i: the group of
    // elements at i G from the front, or from the back in reverse) from
    // `carries`. With `h`, writes each state into it; with `product`, also
    // carries the product of the transitions (per lane, of the last step's
    // channel). Returns h (when given), the carries, then the products.
    // `h` holds the row from element `shift` on (the whole row: none) at
    // indices `prefix..., element - shift` (`outer` when prefix is empty).
    auto iterate = [&](OpBuilder &b, Location l, ValueRange outer, Value from,
                       Value to, Value h, ValueRange carries, bool product,
                       bool streaming, ValueRange prefix = {},
                       Value shift = Value()) {
      Value zeroVec = splat(b, l, 0.0), oneVec = splat(b, l, 1.0);
      SmallVector<Value> init;
      if (h)
        init.push_back(h);
      init.append(carries.begin(), carries.end());
      if (product)
        init.append(vectors, oneVec);
      SmallVector<Value> r = buildLoop(
          b, l, from, to, init,
          [&](OpBuilder &tb, Location tl, ValueRange iv,
              ValueRange iter) -> SmallVector<Value> {
            Value base = arith::MulIOp::create(tb, tl, iv[0], groupSize);
            if (reverse)
              base = arith::SubIOp::create(
                  tb, tl, n, arith::AddIOp::create(tb, tl, base, groupSize));
            ValueRange carry = iter.slice(h ? 1 : 0, vectors);
            Value out = h ? iter[0] : Value();
            SmallVector<Value> hs, as;
            for (int64_t j = 0; j < vectors; ++j) {
              SmallVector<Value> idx(outer);
              idx.push_back(arith::AddIOp::create(
                  tb, tl, base, indexConst(tb, tl, j * lanes)));
              auto read = [&](Value tensor) -> Value {
                return vector::TransferReadOp::create(
                    tb, tl, vecType, tensor, idx, /*padding=*/std::nullopt,
                    ArrayRef<bool>{true});
              };
              Value at = read(aFlat), x = read(bFlat);
              for (int64_t by = width; by < lanes; by *= 2) {
                x = vector::FMAOp::create(tb, tl, at,
                                          moved(tb, tl, x, zeroVec, by), x);
                at = arith::MulFOp::create(tb, tl, at,
                                           moved(tb, tl, at, oneVec, by));
              }
              Value hv = vector::FMAOp::create(tb, tl, at, carry[j], x);
              if (out) {
                SmallVector<Value> to(prefix.empty() ? ValueRange(outer)
                                                     : prefix);
                to.push_back(
                    shift ? arith::SubIOp::create(tb, tl, idx.back(), shift)
                                .getResult()
                          : idx.back());
                out = vector::TransferWriteOp::create(tb, tl, hv, out, to,
                                                      ArrayRef<bool>{true})
                          .getResult();
              }
              hs.push_back(hv);
              as.push_back(at);
            }
            SmallVector<Value> next;
            if (out)
              next.push_back(out);
            for (int64_t j = 0; j < vectors; ++j)
              next.push_back(steps == 1 ? hs[j] : lastStep(tb, tl, hs[j]));
            if (product) {
              ValueRange prod = iter.take_back(vectors);
              for (int64_t j = 0; j < vectors; ++j)
                next.push_back(arith::MulFOp::create(
                    tb, tl, prod[j],
                    steps == 1 ? as[j] : lastStep(tb, tl, as[j])));
            }
            return next;
          });
      if (streaming) {
        r[0].getDefiningOp()->setAttr(kStreamStoresAttrName, b.getUnitAttr());
        r[0].getDefiningOp()->setAttr(kContiguousStreamAttrName,
                                      b.getUnitAttr());
      }
      return r;
    };
    // iterate writing h, around the cache when the output is at least
    // streamStoreBytes: returns h and the carries.
    auto sweep = [&](OpBuilder &b, Location l, ValueRange outer, Value from,
                     Value to, Value h, ValueRange carries,
                     ValueRange prefix = {}, Value shift = Value()) {
      SmallVector<Type> types{h.getType()};
      types.append(vectors, vecType);
      return streamedIfLarge(
          b, l, op, sizes, types, [&](OpBuilder &ib, bool streaming) {
            return iterate(ib, l, outer, from, to, h, carries, false, streaming,
                           prefix, shift);
          });
    };
    // The steps after the last whole iteration (at the back, or in reverse
    // the front ones, last first) one channel at a time from `carries`,
    // then the final state into `last`: returns h and last.
    auto finish = [&](OpBuilder &b, Location l, ValueRange outer, Value h,
                      ValueRange carries, Value last) -> SmallVector<Value> {
      if (steps == 1) {
        for (int64_t j = 0; j < vectors; ++j) {
          SmallVector<Value> idx(outer);
          idx.push_back(indexConst(b, l, j * lanes));
          last = vector::TransferWriteOp::create(b, l, carries[j], last, idx,
                                                 ArrayRef<bool>{true})
                     .getResult();
        }
        return {h, last};
      }
      SmallVector<Value> tailInit{h};
      for (int64_t c = 0; c < width; ++c)
        tailInit.push_back(vector::ExtractOp::create(b, l, carries[0], c));
      Value done = arith::MulIOp::create(b, l, whole, stepsPer);
      SmallVector<Value> tail = buildLoop(
          b, l, indexConst(b, l, 0), rest, tailInit,
          [&](OpBuilder &tb, Location tl, ValueRange s,
              ValueRange iter) -> SmallVector<Value> {
            Value t;
            if (reverse)
              t = arith::SubIOp::create(
                  tb, tl, arith::SubIOp::create(tb, tl, rest, s[0]),
                  indexConst(tb, tl, 1));
            else
              t = arith::AddIOp::create(tb, tl, done, s[0]);
            Value first =
                arith::MulIOp::create(tb, tl, t, indexConst(tb, tl, width));
            SmallVector<Value> next{iter[0]};
            for (int64_t c = 0; c < width; ++c) {
              SmallVector<Value> idx(outer);
              idx.push_back(
                  arith::AddIOp::create(tb, tl, first, indexConst(tb, tl, c)));
              Value hc = math::FmaOp::create(
                  tb, tl, extractAt(tb, tl, aFlat, idx), iter[1 + c],
                  extractAt(tb, tl, bFlat, idx));
              next[0] = insertAt(tb, tl, hc, next[0], idx);
              next.push_back(hc);
            }
            return next;
          });
      for (int64_t c = 0; c < width; ++c)
        last = insertAt(b, l, tail[1 + c], last, channel(b, l, outer, c));
      return {tail[0], last};
    };

    // By rows: each row's iterations in order on one thread.
    auto byRows = [&](OpBuilder &b, Location l) {
      return buildNest(
          b, l, outerSizes, {hFlat, lastInit},
          [&](OpBuilder &rb, Location rl, ValueRange outer, ValueRange args) {
            SmallVector<Value> r =
                sweep(rb, rl, outer, indexConst(rb, rl, 0), whole, args[0],
                      initialCarries(rb, rl, outer));
            return finish(rb, rl, outer, r[0], ValueRange(r).drop_front(),
                          args[1]);
          });
    };

    // By chunks of each row, when there are fewer rows than threads and
    // enough iterations: with P threads, the iterations split into P + 1
    // chunks of about equal length (the last P whole chunks of len, the
    // first what is left). Per row, two parallel loops over p < P:
    //  1. p = 0 sweeps chunk 0 from the row's carries, writing h; p > 0
    //     runs chunk p from zero without writing, for its end state and
    //     the product of its transitions;
    //  2. p composes the end state of chunk 0 with chunks 1 ... p into the
    //     carries entering chunk p + 1 and sweeps it, writing h.
    // Each pass costs about as much per element (the sweep is bound by its
    // arithmetic on one thread), so the row takes about 2 / (P + 1) of
    // its time on one thread.
    auto byChunks = [&](OpBuilder &b, Location l, Value parts) {
      Value one = indexConst(b, l, 1);
      Value len = arith::CeilDivUIOp::create(
          b, l, whole, arith::AddIOp::create(b, l, parts, one));
      Value first0 = arith::SubIOp::create(
          b, l, whole, arith::MulIOp::create(b, l, parts, len));
      // Chunk p's first iteration and its iteration count: chunk 0 is
      // [0, first0), chunk p >= 1 starts at first0 + (p - 1) len (as
      // arithmetic on p, later = min(p, 1), so that a chunk's slice of h is
      // visibly placed by the parallel loop's index).
      auto chunkAt = [&](OpBuilder &cb, Location cl,
                         Value p) -> std::pair<Value, Value> {
        Value later = arith::MinUIOp::create(cb, cl, p, one);
        Value start = arith::MulIOp::create(
            cb, cl, later,
            arith::AddIOp::create(
                cb, cl, first0,
                arith::MulIOp::create(
                    cb, cl, arith::SubIOp::create(cb, cl, p, one), len)));
        Value count = arith::AddIOp::create(
            cb, cl, len,
            arith::MulIOp::create(cb, cl,
                                  arith::SubIOp::create(cb, cl, one, later),
                                  arith::SubIOp::create(cb, cl, first0, len)));
        return {start, count};
      };
      // Sweeps chunk p of row `outer` from `carries` through its slice of
      // `h` (the elements of its iterations); returns h and the carries.
      auto sweepChunk = [&](OpBuilder &cb, Location cl, ValueRange outer,
                            Value p, Value h, ValueRange carries) {
        auto [start, count] = chunkAt(cb, cl, p);
        Value end = arith::AddIOp::create(cb, cl, start, count);
        Value first =
            arith::MulIOp::create(cb, cl, reverse ? end : start, groupSize);
        if (reverse)
          first = arith::SubIOp::create(cb, cl, n, first);
        Value size = arith::MulIOp::create(cb, cl, count, groupSize);
        SmallVector<OpFoldResult> offsets(outer.begin(), outer.end());
        offsets.push_back(first);
        SmallVector<OpFoldResult> sizes(outer.size(), cb.getIndexAttr(1));
        sizes.push_back(size);
        SmallVector<OpFoldResult> strides(outer.size() + 1, cb.getIndexAttr(1));
        Value slice =
            tensor::ExtractSliceOp::create(cb, cl, h, offsets, sizes, strides);
        SmallVector<Value> prefix(outer.size(), indexConst(cb, cl, 0));
        SmallVector<Value> r =
            sweep(cb, cl, outer, start, end, slice, carries, prefix, first);
        r[0] = tensor::InsertSliceOp::create(cb, cl, r[0], h, offsets, sizes,
                                             strides);
        return r;
      };
      // Per chunk: its end state (vectors of L), then its product.
      auto partsType = RankedTensorType::get({kMaxScanChunks, 2 * group}, elem);
      Value zeroIdx = indexConst(b, l, 0);
      // The rows in order (sequential: fewer than the threads).
      std::function<SmallVector<Value>(OpBuilder &, Location, size_t,
                                       SmallVector<Value>, ValueRange)>
          rows = [&](OpBuilder &rb, Location rl, size_t d,
                     SmallVector<Value> outer,
                     ValueRange args) -> SmallVector<Value> {
        if (d < outerSizes.size())
          return buildLoop(
              rb, rl, zeroIdx, outerSizes[d], args,
              [&](OpBuilder &ib, Location il, ValueRange iv, ValueRange it) {
                SmallVector<Value> deeper(outer);
                deeper.push_back(iv[0]);
                return rows(ib, il, d + 1, deeper, it);
              });
        auto readVec = [&](OpBuilder &vb, Location vl, Value tensor, Value p,
                           int64_t at) -> Value {
          return vector::TransferReadOp::create(
              vb, vl, vecType, tensor, ValueRange{p, indexConst(vb, vl, at)},
              /*padding=*/std::nullopt, ArrayRef<bool>{true});
        };
        auto writeVec = [&](OpBuilder &vb, Location vl, Value v, Value tensor,
                            Value p, int64_t at) -> Value {
          return vector::TransferWriteOp::create(
                     vb, vl, v, tensor, ValueRange{p, indexConst(vb, vl, at)},
                     ArrayRef<bool>{true})
              .getResult();
        };
        SmallVector<Value> partsSizes{indexConst(rb, rl, kMaxScanChunks),
                                      indexConst(rb, rl, 2 * group)};
        Value partsInit = privateScratch(rb, rl, partsType, partsSizes);
        // 1. Chunk 0 swept, the others run from zero.
        SmallVector<Value> pass1 = buildNest(
            rb, rl, {parts}, {args[0], partsInit},
            [&](OpBuilder &pb, Location pl, ValueRange p, ValueRange it) {
              Value isFirst =
                  arith::CmpIOp::create(pb, pl, arith::CmpIPredicate::eq, p[0],
                                        indexConst(pb, pl, 0));
              auto branch = scf::IfOp::create(
                  pb, pl, TypeRange{it[0].getType(), it[1].getType()}, isFirst,
                  /*withElseRegion=*/true);
              {
                OpBuilder tb =
                    OpBuilder::atBlockEnd(&branch.getThenRegion().front());
                SmallVector<Value> r = sweepChunk(
                    tb, pl, outer, p[0], it[0], initialCarries(tb, pl, outer));
                Value out = it[1];
                for (int64_t j = 0; j < vectors; ++j)
                  out = writeVec(tb, pl, r[1 + j], out, p[0], j * lanes);
                scf::YieldOp::create(tb, pl, ValueRange{r[0], out});
              }
              {
                OpBuilder eb =
                    OpBuilder::atBlockEnd(&branch.getElseRegion().front());
                auto [from, count] = chunkAt(eb, pl, p[0]);
                Value to = arith::AddIOp::create(eb, pl, from, count);
                SmallVector<Value> zeros(vectors, splat(eb, pl, 0.0));
                SmallVector<Value> r = iterate(eb, pl, outer, from, to, Value(),
                                               zeros, true, false);
                Value out = it[1];
                for (int64_t j = 0; j < vectors; ++j) {
                  out = writeVec(eb, pl, r[j], out, p[0], j * lanes);
                  out = writeVec(eb, pl, r[vectors + j], out, p[0],
                                 group + j * lanes);
                }
                scf::YieldOp::create(eb, pl, ValueRange{it[0], out});
              }
              return SmallVector<Value>(branch.getResults());
            });
        // 2. Chunks 1 ... P from the composed carries; the carries leaving
        // each go to a second table (row p).
        Value endsInit = privateScratch(rb, rl, partsType, partsSizes);
        SmallVector<Value> pass2 = buildNest(
            rb, rl, {parts}, {pass1[0], endsInit},
            [&](OpBuilder &pb, Location pl, ValueRange p, ValueRange it) {
              SmallVector<Value> carries;
              for (int64_t j = 0; j < vectors; ++j)
                carries.push_back(readVec(pb, pl, pass1[1],
                                          indexConst(pb, pl, 0), j * lanes));
              carries = buildLoop(
                  pb, pl, one, arith::AddIOp::create(pb, pl, p[0], one),
                  carries,
                  [&](OpBuilder &kb, Location kl, ValueRange k, ValueRange c) {
                    SmallVector<Value> next;
                    for (int64_t j = 0; j < vectors; ++j)
                      next.push_back(vector::FMAOp::create(
                          kb, kl,
                          readVec(kb, kl, pass1[1], k[0], group + j * lanes),
                          c[j], readVec(kb, kl, pass1[1], k[0], j * lanes)));
                    return next;
                  });
              SmallVector<Value> r = sweepChunk(
                  pb, pl, outer, arith::AddIOp::create(pb, pl, p[0], one),
                  it[0], carries);
              Value ends = it[1];
              for (int64_t j = 0; j < vectors; ++j)
                ends = writeVec(pb, pl, r[1 + j], ends, p[0], j * lanes);
              return SmallVector<Value>{r[0], ends};
            });
        SmallVector<Value> carries;
        Value lastPart = arith::SubIOp::create(rb, rl, parts, one);
        for (int64_t j = 0; j < vectors; ++j)
          carries.push_back(readVec(rb, rl, pass2[1], lastPart, j * lanes));
        return finish(rb, rl, outer, pass2[0], carries, args[1]);
      };
      return rows(b, l, 0, {}, ValueRange{hFlat, lastInit});
    };

    // By chunks when the rows leave threads idle and every chunk has at
    // least kMinChunkIterations iterations.
    Value rowCount = indexConst(rewriter, loc, 1);
    for (Value size : outerSizes)
      rowCount = arith::MulIOp::create(rewriter, loc, rowCount, size);
    Value parts =
        arith::MinUIOp::create(rewriter, loc, maxThreads(rewriter, loc, op),
                               indexConst(rewriter, loc, kMaxScanChunks));
    Value fewRows = arith::CmpIOp::create(
        rewriter, loc, arith::CmpIPredicate::ult, rowCount, parts);
    Value longRows = arith::CmpIOp::create(
        rewriter, loc, arith::CmpIPredicate::uge, whole,
        arith::MulIOp::create(
            rewriter, loc,
            arith::AddIOp::create(rewriter, loc, parts,
                                  indexConst(rewriter, loc, 1)),
            indexConst(rewriter, loc, kMinChunkIterations)));
    auto choice = scf::IfOp::create(
        rewriter, loc, TypeRange{hFlat.getType(), lastInit.getType()},
        arith::AndIOp::create(rewriter, loc, fewRows, longRows),
        /*withElseRegion=*/true);
    {
      OpBuilder tb = OpBuilder::atBlockEnd(&choice.getThenRegion().front());
      scf::YieldOp::create(tb, loc, byChunks(tb, loc, parts));
    }
    {
      OpBuilder eb = OpBuilder::atBlockEnd(&choice.getElseRegion().front());
      scf::YieldOp::create(eb, loc, byRows(eb, loc));
    }
    SmallVector<Value> results(choice.getResults());

    Value h = results[0];
    if (collapse)
      h = tensor::ExpandShapeOp::create(rewriter, loc, hType, h, flat,
                                        getAsOpFoldResult(sizes));
    return {h, results[1]};
  }

  /// The channels of a group when chosen at run time: the row of `width`
  /// split into ceil(threads / rows) parts, rows being the product of the
  /// sizes other than the axis and the last, rounded up to
  /// kScanGroupQuantum and at most kMaxScanGroup.
  static Value groupByThreads(OpBuilder &b, Location loc, LinearScanOp op,
                              ArrayRef<Value> sizes) {
    int64_t axis = op.getAxisAttr().getInt();
    Value rows = indexConst(b, loc, 1);
    for (auto [i, size] : llvm::enumerate(sizes.drop_back()))
      if (static_cast<int64_t>(i) != axis)
        rows = arith::MulIOp::create(b, loc, rows, size);
    Value one = indexConst(b, loc, 1);
    Value quantum = indexConst(b, loc, kScanGroupQuantum);
    Value parts = arith::MaxUIOp::create(
        b, loc, one,
        arith::CeilDivUIOp::create(b, loc, maxThreads(b, loc, op),
                                   arith::MaxUIOp::create(b, loc, one, rows)));
    Value group = arith::CeilDivUIOp::create(b, loc, sizes.back(), parts);
    group = arith::MulIOp::create(
        b, loc, arith::CeilDivUIOp::create(b, loc, group, quantum), quantum);
    return arith::MinUIOp::create(b, loc, group,
                                  indexConst(b, loc, kMaxScanGroup));
  }

  /// The chunked form, for a GPU: the steps split into K chunks of
  /// `chunk` steps (the last shorter), and for every channel (every index
  /// but the axis)
  ///  1. each chunk k on its own, from zero: its decay P_k = prod a_t and
  ///     its end state H_k, into `[channels..., K]` tensors;
  ///  2. the chunks in order: carry_k, the state entering chunk k, is the
  ///     init for k = 0 and P_{k-1} carry_{k-1} + H_{k-1} after; the last
  ///     carry is the final state. With `nestedLevel` 0 a loop over the
  ///     chunks per channel; otherwise the linear_scan of (P, H) along the
  ///     chunks from the init (tagged with that level), which the spread
  ///     form lowers again: carry_k is its state k - 1;
  ///  3. each chunk again from its carry, writing h.
  /// Steps 1 and 3 are independent over channels and chunks (a GPU thread
  /// each, or with `warps` a warp each: warpSweep, the lanes the innermost
  /// loop of the nest, tagged kWarpLanesAttrName), step 2 over channels.
  /// Each sweep of a chunk by a thread takes unrollSteps steps an
  /// iteration, their loads first. The result is the recurrence up to
  /// rounding (h_t regrouped as P carry + H).
  template <typename AAt, typename CarryInit>
  SmallVector<Value>
  buildChunked(OpBuilder &rewriter, Location loc, LinearScanOp op,
               ArrayRef<Value> sizes, ArrayRef<Value> lastSizes, Value hInit,
               Value lastInit, AAt &aAt, CarryInit &carryInit, Value chunk,
               int64_t nestedLevel, bool warps) const {
    int64_t axis = op.getAxisAttr().getInt();
    Type elem = cast<RankedTensorType>(op.getH().getType()).getElementType();
    Value length = sizes[axis];
    Value chunks = arith::CeilDivUIOp::create(rewriter, loc, length, chunk);
    SmallVector<Value> partSizes(lastSizes);
    partSizes.push_back(chunks);
    SmallVector<int64_t> partShape(partSizes.size(), ShapedType::kDynamic);
    auto partType = RankedTensorType::get(partShape, elem);

    // The steps of chunk k: [k * chunk, min(length, (k + 1) * chunk)).
    auto chunkBounds = [&](OpBuilder &b, Location l, Value k) {
      Value first = arith::MulIOp::create(b, l, k, chunk);
      Value end = arith::MinUIOp::create(
          b, l, length, arith::AddIOp::create(b, l, first, chunk));
      return std::make_pair(first, end);
    };
    // A chunk's sweep: by one thread, or by a warp.
    auto sweep = [&](OpBuilder &b, Location l, ValueRange outer, Value first,
                     Value end, std::optional<Warp> warp, Value h0, Value hs) {
      return warp
                 ? warpSweep(b, l, op, aAt, outer, length, first, end, *warp,
                             h0, hs)
                 : sweepSteps(b, l, op, aAt, outer, length, first, end, h0, hs);
    };
    // The nest over every channel and chunk, `warp` none without `warps`;
    // on the GPU over the lanes of a warp too, the innermost loop (`warp`
    // one lane); emulated, every lane in each iteration.
    using ChunkBody = function_ref<SmallVector<Value>(
        OpBuilder &, Location, ValueRange ivs, std::optional<Warp> warp,
        ValueRange args)>;
    auto chunkNest = [&](OpBuilder &b, ValueRange inits, ChunkBody body) {
      if (!warps || emulateWarps)
        return buildNest(
            b, loc, partSizes, inits,
            [&](OpBuilder &nb, Location l, ValueRange ivs, ValueRange args) {
              return body(nb, l, ivs,
                          warps ? std::optional<Warp>(Warp{Value()})
                                : std::nullopt,
                          args);
            });
      SmallVector<Value> ubs(partSizes);
      ubs.push_back(indexConst(b, loc, kWarpLanes));
      Value lane;
      SmallVector<Value> results = buildNest(
          b, loc, ubs, inits,
          [&](OpBuilder &nb, Location l, ValueRange ivs, ValueRange args) {
            lane = ivs.back();
            return body(nb, l, ivs.drop_back(), Warp{lane}, args);
          });
      cast<BlockArgument>(lane).getOwner()->getParentOp()->setAttr(
          kWarpLanesAttrName, b.getUnitAttr());
      return results;
    };

    // 1. Each chunk from zero.
    Value pInit = emptyLike(rewriter, loc, partType, partSizes);
    Value eInit = emptyLike(rewriter, loc, partType, partSizes);
    SmallVector<Value> parts = chunkNest(
        rewriter, {pInit, eInit},
        [&](OpBuilder &b, Location l, ValueRange ivs, std::optional<Warp> warp,
            ValueRange args) {
          ValueRange outer = ivs.drop_back();
          auto [first, end] = chunkBounds(b, l, ivs.back());
          SmallVector<Value> r =
              sweep(b, l, outer, first, end, warp, zeroOf(b, l, elem), Value());
          return SmallVector<Value>{insertAt(b, l, r[0], args[0], ivs),
                                    insertAt(b, l, r[1], args[1], ivs)};
        });

    // 2. The carries: a linear_scan of their own (spread again), or chunk
    // by chunk.
    if (nestedLevel > 0) {
      auto carries = LinearScanOp::create(
          rewriter, loc, parts[0], parts[1], op.getInit(),
          /*axis=*/static_cast<uint64_t>(partSizes.size() - 1),
          /*reverse=*/false);
      carries->setAttr(kSpreadLevelAttrName,
                       rewriter.getI64IntegerAttr(nestedLevel));
      Value ends = carries.getH();
      // 3. Each chunk again from its carry.
      Value h = chunkNest(
          rewriter, {hInit},
          [&](OpBuilder &b, Location l, ValueRange ivs,
              std::optional<Warp> warp, ValueRange args) {
            ValueRange outer = ivs.drop_back();
            Value k = ivs.back();
            auto [first, end] = chunkBounds(b, l, k);
            Value oneIndex = indexConst(b, l, 1);
            Value before = arith::SubIOp::create(
                b, l, arith::MaxUIOp::create(b, l, k, oneIndex), oneIndex);
            Value isFirst = arith::CmpIOp::create(
                b, l, arith::CmpIPredicate::eq, k, indexConst(b, l, 0));
            Value h0 = arith::SelectOp::create(
                b, l, isFirst, carryInit(b, l, outer),
                extractAt(b, l, ends, concatIndices(outer, before)));
            return SmallVector<Value>{
                sweep(b, l, outer, first, end, warp, h0, args[0])[0]};
          })[0];
      // The final state copied into lastInit, so that the spread form and
      // one channel a thread return their results in the same buffers (a
      // buffer that either branch of buildSpread's choice may return would
      // need a deallocation decided when it runs: on the GPU, by device
      // code).
      Value last = buildNest(
          rewriter, loc, lastSizes, {lastInit},
          [&](OpBuilder &b, Location l, ValueRange ivs, ValueRange args) {
            return SmallVector<Value>{insertAt(
                b, l, extractAt(b, l, carries.getLast(), ivs), args[0], ivs)};
          })[0];
      return {h, last};
    }
    Value cInit = emptyLike(rewriter, loc, partType, partSizes);
    SmallVector<Value> carried = buildNest(
        rewriter, loc, lastSizes, {cInit, lastInit},
        [&](OpBuilder &b, Location l, ValueRange outer, ValueRange args) {
          Value zero = indexConst(b, l, 0);
          SmallVector<Value> r = buildLoop(
              b, l, zero, chunks, ValueRange{carryInit(b, l, outer), args[0]},
              [&](OpBuilder &kb, Location kl, ValueRange k, ValueRange iter) {
                SmallVector<Value> idx = concatIndices(outer, k);
                Value next =
                    add(kb, kl,
                        mul(kb, kl, extractAt(kb, kl, parts[0], idx), iter[0]),
                        extractAt(kb, kl, parts[1], idx));
                return SmallVector<Value>{
                    next, insertAt(kb, kl, iter[0], iter[1], idx)};
              });
          return SmallVector<Value>{r[1], insertAt(b, l, r[0], args[1], outer)};
        });

    // 3. Each chunk again from its carry.
    Value h = chunkNest(rewriter, {hInit},
                        [&](OpBuilder &b, Location l, ValueRange ivs,
                            std::optional<Warp> warp, ValueRange args) {
                          auto [first, end] = chunkBounds(b, l, ivs.back());
                          Value h0 = extractAt(b, l, carried[0], ivs);
                          return SmallVector<Value>{sweep(b, l, ivs.drop_back(),
                                                          first, end, warp, h0,
                                                          args[0])[0]};
                        })[0];
    return {h, carried[1]};
  }
};

//===----------------------------------------------------------------------===//
// recur.scan
//===----------------------------------------------------------------------===//

struct ScanToLoops : OpRewritePattern<ScanOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ScanOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    size_t n = op.getInputs().size();
    int64_t axis = op.getAxisAttr().getInt();
    bool hasInit = !op.getInits().empty();
    Block &combine = op.getCombine().front();

    SmallVector<Value> sizes = dimSizes(rewriter, loc, op.getInputs().front());
    Value length = sizes[axis];
    SmallVector<Value> outInits;
    for (Value input : op.getInputs())
      outInits.push_back(emptyLike(
          rewriter, loc, cast<RankedTensorType>(input.getType()), sizes));

    // The combine region on (carry, x) at the builder's point.
    auto applyCombine = [&](OpBuilder &b, ValueRange carry, ValueRange x) {
      return inlineBlock(b, combine, concatIndices(carry, x));
    };

    SmallVector<Value> results = buildNestExcept(
        rewriter, loc, sizes, axis, outInits,
        [&](OpBuilder &b, Location l, ValueRange outer, ValueRange outs) {
          SmallVector<Value> iterInit(outs);
          for (size_t i = 0; i < n; ++i) {
            Type elem = getElementTypeOrSelf(op.getInputs()[i]);
            // Without an init the first step takes x_0 as it is, so the
            // starting carry is never read.
            iterInit.push_back(hasInit
                                   ? extractAt(b, l, op.getInits()[i], outer)
                                   : zeroOf(b, l, elem));
          }
          Value zero = indexConst(b, l, 0);
          SmallVector<Value> time = buildLoop(
              b, l, zero, length, iterInit,
              [&](OpBuilder &tb, Location tl, ValueRange t, ValueRange iter) {
                Value pos = stepPosition(tb, tl, t[0], length, op.getReverse());
                SmallVector<Value> idx = withTimeIndex(outer, axis, pos);
                SmallVector<Value> x;
                for (Value input : op.getInputs())
                  x.push_back(extractAt(tb, tl, input, idx));
                ValueRange carry = iter.drop_front(n);
                SmallVector<Value> next;
                if (hasInit) {
                  next = applyCombine(tb, carry, x);
                } else {
                  Value first = arith::CmpIOp::create(
                      tb, tl, arith::CmpIPredicate::eq, t[0], zero);
                  auto branch =
                      scf::IfOp::create(tb, tl, ValueRange(x).getTypes(), first,
                                        /*withElse=*/true);
                  OpBuilder thenB = branch.getThenBodyBuilder();
                  scf::YieldOp::create(thenB, tl, x);
                  OpBuilder elseB = branch.getElseBodyBuilder();
                  scf::YieldOp::create(elseB, tl,
                                       applyCombine(elseB, carry, x));
                  next = SmallVector<Value>(branch.getResults());
                }
                SmallVector<Value> yields;
                for (size_t i = 0; i < n; ++i)
                  yields.push_back(insertAt(tb, tl, next[i], iter[i], idx));
                llvm::append_range(yields, next);
                return yields;
              });
          return SmallVector<Value>(ArrayRef<Value>(time).take_front(n));
        });
    rewriter.replaceOp(op, results);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// recur.gated_linear_attention
//===----------------------------------------------------------------------===//

/// The sizes of a gated_linear_attention problem.
struct GlaSizes {
  SmallVector<Value> lead; // batch, heads, ...
  Value steps, dk, dv;
};

/// The chunk length of the chunked algorithm when `chunk_size` is not given.
constexpr int64_t kDefaultChunkSize = 64;

/// Whether `op` is lowered with the chunked algorithm: only when it asks for
/// it (`auto` may still take the product form, see prefersGlaProducts).
bool usesChunkedAlgorithm(GatedLinearAttentionOp op) {
  return op.getAlgorithm() == ScanAlgorithm::Chunked;
}

/// The state, in bytes per leading index, from which `auto` takes the
/// product form where it applies: a core's L1 data cache on the machines
/// measured. The recurrent form reads and writes a leading index's whole
/// state at every step, cheap while the state stays in L1; the product
/// form does about 1.5 times the arithmetic (chunks of 32) in
/// register-blocked products. On this project's machine (32 KiB L1d) the
/// recurrence was faster below 32 KiB, even at 32 KiB, and slower above
/// (bench/gla_state.recur; docs/performance.md, "What changed later on
/// 2026-11-28").
constexpr int64_t kGlaProductStateBytes = 32 * 1024;

/// The chunk length of the product form when `auto` takes it and the op
/// names none: 32 steps was as fast as or faster than 64 at every shape
/// above.
constexpr int64_t kGlaAutoProductChunk = 32;

/// Whether an `auto` gla with the product form available takes it: a
/// static state of at least kGlaProductStateBytes per leading index.
bool prefersGlaProducts(GatedLinearAttentionOp op) {
  auto stateType = cast<RankedTensorType>(op.getState().getType());
  ArrayRef<int64_t> shape = stateType.getShape();
  int64_t dk = shape[shape.size() - 2], dv = shape.back();
  std::optional<int64_t> bytes =
      loops::elementBytes(stateType.getElementType());
  return op.getAlgorithm() == ScanAlgorithm::Auto && bytes &&
         !ShapedType::isDynamic(dk) && !ShapedType::isDynamic(dv) &&
         dk * dv * *bytes >= kGlaProductStateBytes;
}

/// Writes `S_{-1}` (the `init` operand, or zero) for the leading index `lead`
/// into `state` `[..., dk, dv]`.
Value writeInitialState(OpBuilder &b, Location loc, Value state,
                        ValueRange lead, const GlaSizes &sizes, Value init) {
  Type elem = cast<RankedTensorType>(state.getType()).getElementType();
  return buildNest(
      b, loc, {sizes.dk, sizes.dv}, state,
      [&](OpBuilder &nb, Location l, ValueRange ij, ValueRange args) {
        SmallVector<Value> idx = concatIndices(lead, ij);
        Value s0 = init ? extractAt(nb, l, init, idx) : zeroOf(nb, l, elem);
        return SmallVector<Value>{insertAt(nb, l, s0, args[0], idx)};
      })[0];
}

/// The float `x` as f64 (extended when narrower).
Value toF64(OpBuilder &b, Location loc, Value x) {
  if (x.getType().isF64())
    return x;
  return arith::ExtFOp::create(b, loc, b.getF64Type(), x);
}

/// The f64 `x` rounded to the float type `elem`.
Value fromF64(OpBuilder &b, Location loc, Value x, Type elem) {
  if (elem.isF64())
    return x;
  return arith::TruncFOp::create(b, loc, elem, x);
}

/// The index `x + 1`.
Value plusOne(OpBuilder &b, Location loc, Value x) {
  return arith::AddIOp::create(b, loc, x, indexConst(b, loc, 1));
}

/// `sum_e term(e)` over e in [0, n), accumulated in order from zero in
/// `type` (a float or complex type).
Value sumOver(OpBuilder &b, Location loc, Type type, Value n, IndexFn term) {
  Value zero = indexConst(b, loc, 0);
  return buildLoop(
      b, loc, zero, n, zeroOf(b, loc, type),
      [&](OpBuilder &eb, Location l, ValueRange e, ValueRange acc) {
        return SmallVector<Value>{add(eb, l, acc[0], term(eb, l, e[0]))};
      })[0];
}

/// The real `x` times `z` (real, or complex without promoting `x`).
Value scaleBy(OpBuilder &b, Location loc, Value x, Value z) {
  auto complex = dyn_cast<ComplexType>(z.getType());
  if (!complex)
    return arith::MulFOp::create(b, loc, x, z);
  Value re = complex::ReOp::create(b, loc, z);
  Value im = complex::ImOp::create(b, loc, z);
  return complex::CreateOp::create(b, loc, complex,
                                   arith::MulFOp::create(b, loc, x, re),
                                   arith::MulFOp::create(b, loc, x, im));
}

/// Re(x * y) for two reals or two complex numbers.
Value realPartOfProduct(OpBuilder &b, Location loc, Value x, Value y) {
  if (!isa<ComplexType>(x.getType()))
    return arith::MulFOp::create(b, loc, x, y);
  Value reRe = arith::MulFOp::create(b, loc, complex::ReOp::create(b, loc, x),
                                     complex::ReOp::create(b, loc, y));
  Value imIm = arith::MulFOp::create(b, loc, complex::ImOp::create(b, loc, x),
                                     complex::ImOp::create(b, loc, y));
  return arith::SubFOp::create(b, loc, reRe, imIm);
}

/// The decays of one chunk in log space, relative to the chunk start, as
/// tensors `[len + 1, dk]` (the float64 oracle's LogPrefix): entry (m, i)
/// describes the product of key index i's decays over the chunk's first m
/// steps. Zero factors are counted instead of taking log 0, and restart the
/// other sums, so that a product spanning a zero is exactly 0 and the
/// exponent of any other product is a difference of two nearby sums that
/// never overflows.
struct DecayPrefix {
  /// f64: the sum of log|a| since the last zero factor.
  Value logMag;
  /// Complex decays: the sum of arg a since the last zero factor, in f64.
  /// Real decays: the sign (+1 or -1) of the product since the last zero
  /// factor, in the element type.
  Value angle;
  /// i64: the number of zero factors.
  Value zeros;
};

/// The chunked algorithm of gated_linear_attention for one leading index
/// `lead` (batch, heads, ...). The state S `[dk, dv]` is carried from chunk
/// to chunk in the state result; a chunk of the steps [start, start + len)
/// computes, with decay_i(from, to) the product of a[., i] over the chunk's
/// steps [from, to) taken from its DecayPrefix,
///
///   qd[m, i] = q[m, i] * decay_i(0, m + 1)
///   kd[r, i] = k[r, i] * decay_i(r + 1, len)
///   A[m, r]  = Re(sum_i q[m, i] k[r, i] decay_i(r + 1, m + 1))    (r <= m)
///   y[m, j]  = sum_{r <= m} A[m, r] v[r, j] + Re(sum_i qd[m, i] S[i, j])
///   S[i, j]  = decay_i(0, len) S[i, j] + sum_r kd[r, i] v[r, j]
///
/// in O(len^2 (dk + dv) + len dk dv) per chunk, in the element type of the
/// op (the log prefix in f64). A is only computed, and read, on and below
/// its diagonal. The scratch tensors of a chunk are created in the chunk's
/// loop body, so the iterations of the nest over the leading indices share
/// nothing.
class GlaChunks {
public:
  GlaChunks(GatedLinearAttentionOp op, const GlaSizes &sizes, ValueRange lead)
      : q(op.getQ()), k(op.getK()), v(op.getV()), a(op.getA()), sizes(sizes),
        lead(lead) {
    auto qType = cast<RankedTensorType>(q.getType());
    elem = qType.getElementType();
    stateElem = getElementTypeOrSelf(a);
    complexDecay = isa<ComplexType>(stateElem);
    chunkSize = static_cast<int64_t>(
        op.getChunkSize().value_or(static_cast<uint64_t>(kDefaultChunkSize)));
    int64_t steps = qType.getDimSize(qType.getRank() - 2);
    capacity =
        ShapedType::isDynamic(steps) ? chunkSize : std::min(chunkSize, steps);
    keyWidth = qType.getShape().back();
  }

  /// The loop over the chunks, threading `y` and `state` (which holds
  /// S_{-1} for this leading index); returns the final (y, state).
  SmallVector<Value> build(OpBuilder &b, Location loc, Value y,
                           Value state) const {
    Value zero = indexConst(b, loc, 0);
    Value step = indexConst(b, loc, chunkSize);
    auto loop = scf::ForOp::create(
        b, loc, zero, sizes.steps, step, ValueRange{y, state},
        [&](OpBuilder &cb, Location l, Value start, ValueRange args) {
          scf::YieldOp::create(cb, l,
                               buildChunk(cb, l, start, args[0], args[1]));
        });
    return SmallVector<Value>(loop.getResults());
  }

private:
  /// The chunk starting at step `start`: its outputs written into `y`, then
  /// the state it leaves in `state`; returns (y, state).
  SmallVector<Value> buildChunk(OpBuilder &b, Location loc, Value start,
                                Value y, Value state) const {
    Value rest = arith::SubIOp::create(b, loc, sizes.steps, start);
    Value len =
        arith::MinSIOp::create(b, loc, indexConst(b, loc, chunkSize), rest);
    DecayPrefix prefix = buildDecayPrefix(b, loc, start, len);
    Value qd = decayedRows(b, loc, q, prefix, start, len,
                           /*toChunkEnd=*/false);
    Value kd = decayedRows(b, loc, k, prefix, start, len,
                           /*toChunkEnd=*/true);
    Value scores = buildScores(b, loc, prefix, start, len);
    Value newY = writeOutputs(b, loc, y, state, qd, scores, start, len);
    Value newState = updateState(b, loc, state, prefix, kd, start, len);
    return {newY, newState};
  }

  /// An uninitialized `rows x cols` tensor of `type` for one chunk; `cols`
  /// is dk when not given.
  Value scratch(OpBuilder &b, Location loc, Type type, int64_t rows,
                std::optional<int64_t> cols = std::nullopt) const {
    SmallVector<Value> dynamic;
    if (!cols && ShapedType::isDynamic(keyWidth))
      dynamic.push_back(sizes.dk);
    return tensor::EmptyOp::create(
        b, loc, ArrayRef<int64_t>{rows, cols.value_or(keyWidth)}, type,
        dynamic);
  }

  /// The element of operand `x` (q, k, a or v) at step `t` and column
  /// `col`.
  Value at(OpBuilder &b, Location loc, Value x, Value t, Value col) const {
    return extractAt(b, loc, x, concatIndices(lead, ValueRange{t, col}));
  }

  /// The step `start + m`, m steps into the chunk starting at `start`.
  static Value stepAt(OpBuilder &b, Location loc, Value start, Value m) {
    return arith::AddIOp::create(b, loc, start, m);
  }

  /// The prefix of the chunk [start, start + len): for every key index, a
  /// loop over the chunk's steps accumulating the f64 sums.
  DecayPrefix buildDecayPrefix(OpBuilder &b, Location loc, Value start,
                               Value len) const {
    Type f64 = b.getF64Type(), i64 = b.getI64Type();
    Type angleType = complexDecay ? f64 : elem;
    Value tensors[] = {scratch(b, loc, f64, capacity + 1),
                       scratch(b, loc, angleType, capacity + 1),
                       scratch(b, loc, i64, capacity + 1)};
    Value zero = indexConst(b, loc, 0);
    SmallVector<Value> filled = buildLoop(
        b, loc, zero, sizes.dk, tensors,
        [&](OpBuilder &ib, Location il, ValueRange i, ValueRange ts) {
          // Entry 0: the empty product.
          SmallVector<Value> first = {
              floatConst(ib, il, f64, 0.0),
              floatConst(ib, il, angleType, complexDecay ? 0.0 : 1.0),
              arith::ConstantIntOp::create(ib, il, i64, 0)};
          SmallVector<Value> iter;
          for (auto [t, value] : llvm::zip_equal(ts, first))
            iter.push_back(insertAt(ib, il, value, t, ValueRange{zero, i[0]}));
          llvm::append_range(iter, first);
          SmallVector<Value> steps = buildLoop(
              ib, il, zero, len, iter,
              [&](OpBuilder &mb, Location ml, ValueRange m, ValueRange args) {
                Value am = at(mb, ml, a, stepAt(mb, ml, start, m[0]), i[0]);
                SmallVector<Value> next =
                    advancePrefix(mb, ml, am, args[3], args[4], args[5], first);
                SmallVector<Value> idx = {plusOne(mb, ml, m[0]), i[0]};
                SmallVector<Value> yields;
                for (auto [t, value] :
                     llvm::zip_equal(args.take_front(3), next))
                  yields.push_back(insertAt(mb, ml, value, t, idx));
                llvm::append_range(yields, next);
                return yields;
              });
          return SmallVector<Value>(ArrayRef<Value>(steps).take_front(3));
        });
    return {filled[0], filled[1], filled[2]};
  }

  /// The prefix sums (logMag, angle, zeros) after one more factor `am`; a
  /// zero factor is counted and restarts the others at `empty`, the entry of
  /// the empty product.
  SmallVector<Value> advancePrefix(OpBuilder &b, Location loc, Value am,
                                   Value logMag, Value angle, Value zeros,
                                   ArrayRef<Value> empty) const {
    Value isZero, magnitude, nextAngle;
    if (complexDecay) {
      Value re = toF64(b, loc, complex::ReOp::create(b, loc, am));
      Value im = toF64(b, loc, complex::ImOp::create(b, loc, am));
      Value zeroF = floatConst(b, loc, b.getF64Type(), 0.0);
      isZero = arith::AndIOp::create(
          b, loc,
          arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, re, zeroF),
          arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, im, zeroF));
      Value a64 = complex::CreateOp::create(
          b, loc, ComplexType::get(b.getF64Type()), re, im);
      magnitude = complex::AbsOp::create(b, loc, a64);
      Value arg = math::Atan2Op::create(b, loc, im, re);
      nextAngle = arith::AddFOp::create(b, loc, angle, arg);
    } else {
      Value zeroF = zeroOf(b, loc, elem);
      isZero =
          arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, am, zeroF);
      Value negative =
          arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, am, zeroF);
      magnitude = math::AbsFOp::create(b, loc, toF64(b, loc, am));
      Value flipped = arith::NegFOp::create(b, loc, angle);
      nextAngle = arith::SelectOp::create(b, loc, negative, flipped, angle);
    }
    Value logA = math::LogOp::create(b, loc, magnitude);
    Value nextLog = arith::AddFOp::create(b, loc, logMag, logA);
    Value counted = arith::ExtUIOp::create(b, loc, zeros.getType(), isZero);
    return {arith::SelectOp::create(b, loc, isZero, empty[0], nextLog),
            arith::SelectOp::create(b, loc, isZero, empty[1], nextAngle),
            arith::AddIOp::create(b, loc, zeros, counted)};
  }

  /// decay_i(from, to), the product of key index i's decays over the chunk
  /// steps [from, to) (from <= to): 0 when a zero factor lies among them,
  /// otherwise exp(logMag[to] - logMag[from]) times the sign or
  /// e^{i (phase[to] - phase[from])}, in the state's element type (only the
  /// real part, in the element type, with `realPart`).
  Value decay(OpBuilder &b, Location loc, const DecayPrefix &prefix, Value from,
              Value to, Value i, bool realPart = false) const {
    auto diff = [&](Value tensor) {
      Value hi = extractAt(b, loc, tensor, ValueRange{to, i});
      Value lo = extractAt(b, loc, tensor, ValueRange{from, i});
      return fromF64(b, loc, arith::SubFOp::create(b, loc, hi, lo), elem);
    };
    Value sameZeros = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::eq,
        extractAt(b, loc, prefix.zeros, ValueRange{to, i}),
        extractAt(b, loc, prefix.zeros, ValueRange{from, i}));
    Value magnitude = arith::SelectOp::create(
        b, loc, sameZeros, math::ExpOp::create(b, loc, diff(prefix.logMag)),
        zeroOf(b, loc, elem));
    if (!complexDecay) {
      Value sign = arith::MulFOp::create(
          b, loc, extractAt(b, loc, prefix.angle, ValueRange{to, i}),
          extractAt(b, loc, prefix.angle, ValueRange{from, i}));
      return arith::MulFOp::create(b, loc, sign, magnitude);
    }
    Value phase = diff(prefix.angle);
    Value re = arith::MulFOp::create(b, loc, magnitude,
                                     math::CosOp::create(b, loc, phase));
    if (realPart)
      return re;
    Value im = arith::MulFOp::create(b, loc, magnitude,
                                     math::SinOp::create(b, loc, phase));
    return complex::CreateOp::create(b, loc, stateElem, re, im);
  }

  /// The rows [0, len) of the chunk's `operand` (q or k) with each element
  /// (m, i) times decay_i(0, m + 1), the decay from the chunk start (queries),
  /// or with `toChunkEnd` times decay_i(m + 1, len), the decay to the chunk
  /// end (keys); a `[capacity, dk]` tensor of the state's element type.
  Value decayedRows(OpBuilder &b, Location loc, Value operand,
                    const DecayPrefix &prefix, Value start, Value len,
                    bool toChunkEnd) const {
    Value zero = indexConst(b, loc, 0);
    Value rows = scratch(b, loc, stateElem, capacity);
    return buildLoop(
        b, loc, zero, len, rows,
        [&](OpBuilder &mb, Location ml, ValueRange m, ValueRange iter) {
          Value t = stepAt(mb, ml, start, m[0]);
          Value next = plusOne(mb, ml, m[0]);
          Value from = toChunkEnd ? next : zero;
          Value to = toChunkEnd ? len : next;
          Value row = fillRow(
              mb, ml, iter[0], m, sizes.dk,
              [&](OpBuilder &ib, Location il, Value i) {
                Value x = at(ib, il, operand, t, i);
                return scaleBy(ib, il, x, decay(ib, il, prefix, from, to, i));
              });
          return SmallVector<Value>{row};
        })[0];
  }

  /// The intra-chunk scores A[m, r] = Re(sum_i q[m, i] k[r, i]
  /// decay_i(r + 1, m + 1)) for r <= m < len, in a `[capacity, capacity]`
  /// tensor whose entries above the diagonal are left unwritten.
  Value buildScores(OpBuilder &b, Location loc, const DecayPrefix &prefix,
                    Value start, Value len) const {
    Value zero = indexConst(b, loc, 0);
    Value scores = scratch(b, loc, elem, capacity, capacity);
    return buildLoop(
        b, loc, zero, len, scores,
        [&](OpBuilder &mb, Location ml, ValueRange m, ValueRange iter) {
          Value tq = stepAt(mb, ml, start, m[0]);
          Value to = plusOne(mb, ml, m[0]);
          Value row = fillRow(
              mb, ml, iter[0], m, to, [&](OpBuilder &rb, Location rl, Value r) {
                Value tk = stepAt(rb, rl, start, r);
                Value from = plusOne(rb, rl, r);
                return sumOver(
                    rb, rl, elem, sizes.dk,
                    [&](OpBuilder &ib, Location il, Value i) {
                      Value qk = arith::MulFOp::create(
                          ib, il, at(ib, il, q, tq, i), at(ib, il, k, tk, i));
                      Value d = decay(ib, il, prefix, from, to, i,
                                      /*realPart=*/true);
                      return arith::MulFOp::create(ib, il, qk, d).getResult();
                    });
              });
          return SmallVector<Value>{row};
        })[0];
  }

  /// Writes the outputs y[start + m, j] = sum_{r <= m} A[m, r] v[r, j] +
  /// Re(sum_i qd[m, i] S[i, j]) of the chunk into `y`, with S the state
  /// entering the chunk; returns the new y.
  Value writeOutputs(OpBuilder &b, Location loc, Value y, Value state, Value qd,
                     Value scores, Value start, Value len) const {
    Value zero = indexConst(b, loc, 0);
    return buildLoop(
        b, loc, zero, len, y,
        [&](OpBuilder &mb, Location ml, ValueRange m, ValueRange iter) {
          Value t = stepAt(mb, ml, start, m[0]);
          Value seen = plusOne(mb, ml, m[0]);
          Value row = fillRow(
              mb, ml, iter[0], concatIndices(lead, t), sizes.dv,
              [&](OpBuilder &jb, Location jl, Value j) {
                Value intra = sumOver(
                    jb, jl, elem, seen,
                    [&](OpBuilder &rb, Location rl, Value r) {
                      Value score =
                          extractAt(rb, rl, scores, ValueRange{m[0], r});
                      return arith::MulFOp::create(
                                 rb, rl, score,
                                 at(rb, rl, v, stepAt(rb, rl, start, r), j))
                          .getResult();
                    });
                Value inter = sumOver(
                    jb, jl, elem, sizes.dk,
                    [&](OpBuilder &ib, Location il, Value i) {
                      Value qdi = extractAt(ib, il, qd, ValueRange{m[0], i});
                      Value s = extractAt(
                          ib, il, state, concatIndices(lead, ValueRange{i, j}));
                      return realPartOfProduct(ib, il, qdi, s);
                    });
                return arith::AddFOp::create(jb, jl, intra, inter).getResult();
              });
          return SmallVector<Value>{row};
        })[0];
  }

  /// Updates `state` to the state leaving the chunk, S[i, j] =
  /// decay_i(0, len) S[i, j] + sum_r kd[r, i] v[r, j]; returns it.
  Value updateState(OpBuilder &b, Location loc, Value state,
                    const DecayPrefix &prefix, Value kd, Value start,
                    Value len) const {
    Value zero = indexConst(b, loc, 0);
    return buildLoop(
        b, loc, zero, sizes.dk, state,
        [&](OpBuilder &ib, Location il, ValueRange i, ValueRange iter) {
          Value total = decay(ib, il, prefix, zero, len, i[0]);
          Value rows = updateRow(
              ib, il, iter[0], concatIndices(lead, i), sizes.dv,
              [&](OpBuilder &jb, Location jl, Value j, Value old) {
                Value added = sumOver(
                    jb, jl, stateElem, len,
                    [&](OpBuilder &rb, Location rl, Value r) {
                      Value kdr = extractAt(rb, rl, kd, ValueRange{r, i[0]});
                      return scaleBy(rb, rl,
                                     at(rb, rl, v, stepAt(rb, rl, start, r), j),
                                     kdr);
                    });
                return add(jb, jl, mul(jb, jl, total, old), added);
              });
          return SmallVector<Value>{rows};
        })[0];
  }

  /// The operands.
  Value q, k, v, a;
  const GlaSizes &sizes;
  SmallVector<Value> lead;
  /// The element type of q, k, v and y, and that of a and the state.
  Type elem, stateElem;
  bool complexDecay;
  /// The chunk length, and the rows of the scratch tensors (the chunk
  /// length, or T when it is static and shorter).
  int64_t chunkSize, capacity;
  /// dk, or ShapedType::kDynamic.
  int64_t keyWidth;
};

/// State rows a step of the recurrent gla updates together (see
/// GatedLinearAttentionToLoops).
constexpr int64_t kGlaRowBlock = 4;

/// The most 32-bit registers the state column of buildRegisterColumns
/// takes (dk values, a complex one or an f64 two; a complex<f64> four), and
/// a column or row of the backward's chunked form (dk or dv values).
constexpr int64_t kGlaColumnMaxRegisters = 128;
/// The most output columns (leading indices times dv) for which the
/// chunked column form is taken: with more, a thread a column gives the
/// GPU tens of thousands of threads, and chunks would double the work.
constexpr int64_t kGlaColumnChunkMaxColumns = 16384;

/// The gla with its state a column (or a row) a thread, the column in
/// registers, in chunks of `chunk` steps (the GPU's, `gla-column-chunk`;
/// dk static): what the forward (buildRegisterColumns) and the backward
/// (GatedLinearAttentionGradToLoops' chunked form) share. With `chunk` =
/// 0 the whole sequence is one chunk.
struct GlaRegisterChunks {
  GlaRegisterChunks(OpBuilder &b, Location loc, Value q, Value k, Value v,
                    Value a, Value init, const GlaSizes &sizes, Type stateElem,
                    int64_t dk, int64_t chunk)
      : q(q), k(k), v(v), a(a), init(init), sizes(sizes),
        elem(cast<RankedTensorType>(q.getType()).getElementType()),
        stateElem(stateElem), complexState(isa<ComplexType>(stateElem)),
        leadShape(cast<RankedTensorType>(q.getType()).getShape().drop_back(2)),
        dk(dk), dvStatic(cast<RankedTensorType>(v.getType()).getShape().back()),
        chunkLen(indexConst(b, loc, chunk > 0 ? chunk : 1)),
        chunks(chunk > 0
                   ? arith::CeilDivUIOp::create(b, loc, sizes.steps, chunkLen)
                         .getResult()
                   : indexConst(b, loc, 1)) {}

  /// The tensor type `[lead..., tail...]` of state elements.
  RankedTensorType typeOf(ArrayRef<int64_t> tail) const {
    SmallVector<int64_t> shape(leadShape);
    llvm::append_range(shape, tail);
    return RankedTensorType::get(shape, stateElem);
  }
  /// The sizes `[lead..., tail...]`.
  SmallVector<Value> nestSizes(ValueRange tail) const {
    SmallVector<Value> ubs(sizes.lead);
    llvm::append_range(ubs, tail);
    return ubs;
  }
  /// The type and sizes of a state per chunk, `[lead..., chunks, dk, dv]`.
  RankedTensorType chunkStateType() const {
    return typeOf({ShapedType::kDynamic, dk, dvStatic});
  }
  SmallVector<Value> chunkStateSizes() const {
    return nestSizes({chunks, sizes.dk, sizes.dv});
  }

  /// The steps [begin, end) of chunk `c`.
  std::pair<Value, Value> chunkSteps(OpBuilder &b, Location l, Value c) const {
    Value begin = arith::MulIOp::create(b, l, c, chunkLen);
    Value end = arith::MinUIOp::create(
        b, l, arith::AddIOp::create(b, l, begin, chunkLen), sizes.steps);
    return {begin, end};
  }

  /// `x` as a state element (a complex one with imaginary part 0).
  Value toState(OpBuilder &b, Location l, Value x) const {
    return complexState ? complex::CreateOp::create(b, l, stateElem, x,
                                                    zeroOf(b, l, elem))
                              .getResult()
                        : x;
  }
  Value re(OpBuilder &b, Location l, Value x) const {
    return complexState ? complex::ReOp::create(b, l, x).getResult() : x;
  }
  Value conj(OpBuilder &b, Location l, Value x) const {
    return complexState ? complex::ConjOp::create(b, l, x).getResult() : x;
  }

  /// The state column `state` (dk values) of column j through the steps
  /// [begin, end), S_t[i] = a_t[i] S_{t-1}[i] + k_t[i] v_t[j], in the
  /// order of buildColumns; with `y`, y_t[j] = sum_i q_t[i] Re(S_t[i])
  /// written at each step. The loop runs over the offsets in the chunk,
  /// t = begin + offset, so that what a step writes is seen to depend on
  /// the chunk (recur-parallelize-loops then runs the chunks side by
  /// side). Returns the state, then y when given.
  SmallVector<Value> sweep(OpBuilder &b, Location l, ValueRange lead, Value j,
                           Value begin, Value end, ValueRange state,
                           Value y) const {
    SmallVector<Value> carried(state);
    if (y)
      carried.push_back(y);
    Value zero = indexConst(b, l, 0);
    return buildLoop(
        b, l, zero, arith::SubIOp::create(b, l, end, begin), carried,
        [&](OpBuilder &tb, Location tl, ValueRange offset, ValueRange iter) {
          Value t = arith::AddIOp::create(tb, tl, begin, offset[0]);
          Value vt = extractAt(tb, tl, v, concatIndices(lead, {t, j}));
          SmallVector<Value> next;
          Value acc = zeroOf(tb, tl, elem);
          for (int64_t i = 0; i < dk; ++i) {
            SmallVector<Value> kIdx =
                concatIndices(lead, {t, indexConst(tb, tl, i)});
            Value kv = toState(
                tb, tl,
                arith::MulFOp::create(tb, tl, extractAt(tb, tl, k, kIdx), vt));
            Value s = add(tb, tl,
                          mul(tb, tl, extractAt(tb, tl, a, kIdx), iter[i]), kv);
            next.push_back(s);
            if (!y)
              continue;
            Value sRe = re(tb, tl, s);
            acc = arith::AddFOp::create(
                tb, tl, acc,
                arith::MulFOp::create(tb, tl, extractAt(tb, tl, q, kIdx), sRe));
          }
          if (y)
            next.push_back(
                insertAt(tb, tl, acc, iter[dk], concatIndices(lead, {t, j})));
          return next;
        });
  }

  /// The reverse of sweep for the cotangents: `column` (dk values) is the
  /// cotangent of state column j after the steps [begin, end); from the
  /// last step back, G_t[i] = q_t[i] dy_t[j] + H[i] (the cotangent of S_t)
  /// and H[i] = conj(a_t[i]) G_t[i] (that of S_{t-1}); with `dv`,
  /// dv_t[j] = sum_i Re(G_t[i]) k_t[i] written at each step. Returns the
  /// cotangent of the state before the steps, then dv when given.
  SmallVector<Value> reverseSweep(OpBuilder &b, Location l, ValueRange lead,
                                  Value j, Value begin, Value end,
                                  ValueRange column, Value dy, Value dv) const {
    SmallVector<Value> carried(column);
    if (dv)
      carried.push_back(dv);
    Value zero = indexConst(b, l, 0);
    Value last = arith::SubIOp::create(b, l, end, indexConst(b, l, 1));
    return buildLoop(
        b, l, zero, arith::SubIOp::create(b, l, end, begin), carried,
        [&](OpBuilder &tb, Location tl, ValueRange offset, ValueRange iter) {
          Value t = arith::SubIOp::create(tb, tl, last, offset[0]);
          SmallVector<Value> vIdx = concatIndices(lead, {t, j});
          Value dyj = extractAt(tb, tl, dy, vIdx);
          SmallVector<Value> next;
          Value acc = zeroOf(tb, tl, elem);
          for (int64_t i = 0; i < dk; ++i) {
            SmallVector<Value> kIdx =
                concatIndices(lead, {t, indexConst(tb, tl, i)});
            Value g = add(tb, tl,
                          toState(tb, tl,
                                  arith::MulFOp::create(
                                      tb, tl, extractAt(tb, tl, q, kIdx), dyj)),
                          iter[i]);
            next.push_back(
                mul(tb, tl, conj(tb, tl, extractAt(tb, tl, a, kIdx)), g));
            if (!dv)
              continue;
            Value gRe = re(tb, tl, g);
            acc = arith::AddFOp::create(
                tb, tl, acc,
                arith::MulFOp::create(tb, tl, gRe, extractAt(tb, tl, k, kIdx)));
          }
          if (dv)
            next.push_back(insertAt(tb, tl, acc, iter[dk], vIdx));
          return next;
        });
  }

  /// Column j of `tensor` (`[lead..., (chunk,) dk, dv]`) at `prefix`
  /// (the leading indices, and the chunk), dk values; zeros without a
  /// tensor.
  SmallVector<Value> column(OpBuilder &b, Location l, Value tensor,
                            ValueRange prefix, Value j) const {
    SmallVector<Value> values;
    for (int64_t i = 0; i < dk; ++i)
      values.push_back(
          tensor ? extractAt(b, l, tensor,
                             concatIndices(prefix, {indexConst(b, l, i), j}))
                 : zeroOf(b, l, stateElem));
    return values;
  }
  Value writeColumn(OpBuilder &b, Location l, ValueRange values, Value tensor,
                    ValueRange prefix, Value j) const {
    for (auto [i, x] : llvm::enumerate(values))
      tensor = insertAt(b, l, x, tensor,
                        concatIndices(prefix, {indexConst(b, l, i), j}));
    return tensor;
  }

  /// A nest over (leading index, chunk, column j) updating `init`, each
  /// iteration's value from `body`.
  Value
  perChunkColumn(OpBuilder &rewriter, Location loc, Value init,
                 function_ref<Value(OpBuilder &, Location, ValueRange lead,
                                    Value c, Value j, Value arg)>
                     body) const {
    return buildNest(
        rewriter, loc, nestSizes({chunks, sizes.dv}), init,
        [&](OpBuilder &b, Location l, ValueRange ivs, ValueRange args) {
          return SmallVector<Value>{body(b, l, ivs.drop_back(2),
                                         ivs[ivs.size() - 2], ivs.back(),
                                         args[0])};
        })[0];
  }

  /// The chunks' decay products A_c[i] = prod_t a_t[i], `[lead..., chunks,
  /// dk]`: a thread per (leading index, chunk, key row).
  Value decayProducts(OpBuilder &rewriter, Location loc) const {
    return buildNest(
        rewriter, loc, nestSizes({chunks, sizes.dk}),
        emptyLike(rewriter, loc, typeOf({ShapedType::kDynamic, dk}),
                  nestSizes({chunks, sizes.dk})),
        [&](OpBuilder &b, Location l, ValueRange ivs, ValueRange args) {
          ValueRange lead = ivs.drop_back(2);
          Value c = ivs[ivs.size() - 2], i = ivs.back();
          auto [begin, end] = chunkSteps(b, l, c);
          Value prod = buildLoop(
              b, l, begin, end, toState(b, l, floatConst(b, l, elem, 1.0)),
              [&](OpBuilder &tb, Location tl, ValueRange t, ValueRange iter) {
                return SmallVector<Value>{
                    mul(tb, tl, iter[0],
                        extractAt(tb, tl, a, concatIndices(lead, {t[0], i})))};
              })[0];
          return SmallVector<Value>{insertAt(b, l, prod, args[0], ivs)};
        })[0];
  }

  /// Each chunk's state from zero, `[lead..., chunks, dk, dv]`: a thread per
  /// (leading index, chunk, column).
  Value localStates(OpBuilder &rewriter, Location loc) const {
    return perChunkColumn(
        rewriter, loc,
        emptyLike(rewriter, loc, chunkStateType(), chunkStateSizes()),
        [&](OpBuilder &b, Location l, ValueRange lead, Value c, Value j,
            Value out) {
          auto [begin, end] = chunkSteps(b, l, c);
          SmallVector<Value> state =
              sweep(b, l, lead, j, begin, end, column(b, l, Value(), lead, j),
                    Value());
          return writeColumn(b, l, state, out, concatIndices(lead, {c}), j);
        });
  }

  /// The states entering the chunks, E_0 = init (or 0), E_{c+1} = A_c E_c +
  /// L_c (`decays` and `local` as above), `[lead..., chunks, dk, dv]`, and
  /// the state after the last chunk written into `finalInit` (`[lead...,
  /// dk, dv]`): a thread per (leading index, column).
  std::pair<Value, Value> enteringStates(OpBuilder &rewriter, Location loc,
                                         Value decays, Value local,
                                         Value finalInit) const {
    return carryChunks(rewriter, loc, decays, local, init, finalInit,
                       /*reverse=*/false);
  }

  /// The cotangents of the states after the chunks, H_c, `[lead...,
  /// chunks, dk, dv]`, from the last chunk's `dstate` (or 0 without it) back,
  /// H_{c-1} = conj(A_c) H_c + M_c (`decays` A_c as decayProducts gives
  /// them, `sent` M_c what chunk c's own outputs send back into the state
  /// entering it), and the cotangent of the initial state, conj(A_0) H_0 +
  /// M_0, written into `dinitInit` (`[lead..., dk, dv]`): a thread per
  /// (leading index, column).
  std::pair<Value, Value> laterCotangents(OpBuilder &rewriter, Location loc,
                                          Value decays, Value sent,
                                          Value dstate, Value dinitInit) const {
    return carryChunks(rewriter, loc, decays, sent, dstate, dinitInit,
                       /*reverse=*/true);
  }

  /// What enteringStates and laterCotangents share: from `start` (`[lead...,
  /// dk, dv]`, or 0 without it) a column X through the chunks, in order or
  /// with `reverse` from the last back, each chunk's X written into the
  /// first result before X = A_c X + own_c (conj(A_c) with `reverse`), the
  /// last X into `finalInit`.
  std::pair<Value, Value> carryChunks(OpBuilder &rewriter, Location loc,
                                      Value decays, Value own, Value start,
                                      Value finalInit, bool reverse) const {
    SmallVector<Value> carried = buildNest(
        rewriter, loc, nestSizes({sizes.dv}),
        {emptyLike(rewriter, loc, chunkStateType(), chunkStateSizes()),
         finalInit},
        [&](OpBuilder &b, Location l, ValueRange ivs, ValueRange args) {
          ValueRange lead = ivs.drop_back();
          Value j = ivs.back();
          Value lastChunk =
              reverse ? arith::SubIOp::create(b, l, chunks, indexConst(b, l, 1))
                            .getResult()
                      : Value();
          SmallVector<Value> iterInit{args[0]};
          llvm::append_range(iterInit, column(b, l, start, lead, j));
          SmallVector<Value> swept = buildLoop(
              b, l, indexConst(b, l, 0), chunks, iterInit,
              [&](OpBuilder &cb, Location cl, ValueRange cc, ValueRange iter) {
                Value c = reverse
                              ? arith::SubIOp::create(cb, cl, lastChunk, cc[0])
                                    .getResult()
                              : cc[0];
                ValueRange x = iter.drop_front();
                SmallVector<Value> prefix = concatIndices(lead, {c});
                SmallVector<Value> next{
                    writeColumn(cb, cl, x, iter[0], prefix, j)};
                SmallVector<Value> chunkOwn = column(cb, cl, own, prefix, j);
                for (int64_t i = 0; i < dk; ++i) {
                  Value decay =
                      extractAt(cb, cl, decays,
                                concatIndices(prefix, {indexConst(cb, cl, i)}));
                  if (reverse)
                    decay = conj(cb, cl, decay);
                  next.push_back(
                      add(cb, cl, mul(cb, cl, decay, x[i]), chunkOwn[i]));
                }
                return next;
              });
          return SmallVector<Value>{
              swept[0], writeColumn(b, l, ArrayRef<Value>(swept).drop_front(),
                                    args[1], lead, j)};
        });
    return {carried[0], carried[1]};
  }

  Value q, k, v, a, init;
  const GlaSizes &sizes;
  Type elem, stateElem;
  bool complexState;
  SmallVector<int64_t> leadShape;
  int64_t dk, dvStatic;
  Value chunkLen, chunks;
};

struct GatedLinearAttentionToLoops : OpRewritePattern<GatedLinearAttentionOp> {
  GatedLinearAttentionToLoops(MLIRContext *context, bool columnThreads,
                              int64_t columnChunk, bool products, bool tiles)
      : OpRewritePattern(context), columnThreads(columnThreads),
        columnChunk(columnChunk), products(products), tiles(tiles) {}
  /// The recurrent form one output column a thread (the GPU's), rather
  /// than one leading index a thread sweeping the state row by row.
  bool columnThreads;
  /// With columnThreads, where the state column fits in registers: chunks
  /// of this many steps a thread per (chunk, column) where the sequence is
  /// longer than two chunks and the columns are few, otherwise a thread a
  /// column, the state in registers (buildRegisterColumns; 0: neither, the
  /// state in memory, buildColumns).
  int64_t columnChunk;
  /// The chunked algorithm of real decays (and `auto` where
  /// prefersGlaProducts) in its product form where a leading index's decays
  /// allow it (the CPU's; GlaProducts.cpp).
  bool products;
  /// Where the column form would go in chunks, gla-tiles' form where it
  /// applies instead (GlaTiles.cpp).
  bool tiles;

  // `recurrent` runs the recurrence one step at a time; `chunked` the
  // chunked algorithm, in its product form where a leading index's decays
  // allow it (with `products`) and otherwise the log-space chunks of
  // GlaChunks; `auto` the product form where prefersGlaProducts and the
  // index's decays allow it, otherwise the recurrence step by step. All
  // compute the recurrence up to rounding.
  LogicalResult matchAndRewrite(GatedLinearAttentionOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto yType = cast<RankedTensorType>(op.getY().getType());
    auto stateType = cast<RankedTensorType>(op.getState().getType());
    Type elem = yType.getElementType();
    bool complexState = isa<ComplexType>(stateType.getElementType());
    int64_t rank = yType.getRank();
    bool chunked = usesChunkedAlgorithm(op);
    // The product form: for `chunked` where it applies, for `auto` where it
    // applies and the cost model prefers it (then in chunks of
    // kGlaAutoProductChunk unless the op names its own).
    int64_t chunk =
        static_cast<int64_t>(op.getChunkSize().value_or(static_cast<uint64_t>(
            chunked ? kDefaultChunkSize : kGlaAutoProductChunk)));
    bool withProducts = products &&
                        hasGlaProducts(op.getQ(), op.getA(), chunk) &&
                        (chunked || prefersGlaProducts(op));

    SmallVector<Value> qSizes = dimSizes(rewriter, loc, op.getQ());
    SmallVector<Value> vSizes = dimSizes(rewriter, loc, op.getV());
    GlaSizes sizes{SmallVector<Value>(ArrayRef<Value>(qSizes).drop_back(2)),
                   qSizes[rank - 2], qSizes[rank - 1], vSizes[rank - 1]};
    Value yInit = emptyLike(rewriter, loc, yType, vSizes);
    Value stateInit =
        emptyLike(rewriter, loc, stateType,
                  concatIndices(sizes.lead, ValueRange{sizes.dk, sizes.dv}));

    // For one leading index and every step t, key index i by key index i
    // (the state row by row), each row over the output columns j:
    //   S_t[i, j] = a_t[i] * S_{t-1}[i, j] + k_t[i] * v_t[j]
    //   y_t[j]   += q_t[i] * Re(S_t[i, j])        (y_t = 0 before i = 0)
    // so the innermost loop runs over consecutive columns of the state, v
    // and y (it vectorizes), and y_t[j] sums over i in increasing order from
    // zero, as a dot product would. The rows go kGlaRowBlock at a time
    // (then one at a time for the rest), each column's y_t[j] read and
    // written once per block rather than once per row: the loop is bound by
    // its stores, and a block of 4 rows makes 5 of them per 4 state elements
    // instead of 8. The sums keep their order, so the result is the same to
    // the bit. The state lives in the `state` result, updated in place.
    auto rows = [&](OpBuilder &b, Location l, ValueRange lead, Value t,
                    ArrayRef<Value> is, ValueRange rowIter) {
      SmallVector<Value> at, kt, qt;
      for (Value i : is) {
        SmallVector<Value> kIdx = concatIndices(lead, ValueRange{t, i});
        at.push_back(extractAt(b, l, op.getA(), kIdx));
        kt.push_back(extractAt(b, l, op.getK(), kIdx));
        qt.push_back(extractAt(b, l, op.getQ(), kIdx));
      }
      Value zero = indexConst(b, l, 0);
      return buildLoop(
          b, l, zero, sizes.dv, rowIter,
          [&](OpBuilder &jb, Location jl, ValueRange j, ValueRange iter) {
            SmallVector<Value> vIdx = concatIndices(lead, ValueRange{t, j[0]});
            Value vt = extractAt(jb, jl, op.getV(), vIdx);
            Value acc = extractAt(jb, jl, iter[0], vIdx);
            Value state = iter[1];
            for (auto [r, i] : llvm::enumerate(is)) {
              SmallVector<Value> sIdx =
                  concatIndices(lead, ValueRange{i, j[0]});
              Value kv = arith::MulFOp::create(jb, jl, kt[r], vt);
              if (complexState)
                kv = complex::CreateOp::create(jb, jl,
                                               stateType.getElementType(), kv,
                                               zeroOf(jb, jl, elem));
              Value prev = extractAt(jb, jl, state, sIdx);
              Value s = add(jb, jl, mul(jb, jl, at[r], prev), kv);
              state = insertAt(jb, jl, s, state, sIdx);
              Value sRe = complexState ? complex::ReOp::create(jb, jl, s) : s;
              acc = arith::AddFOp::create(
                  jb, jl, acc, arith::MulFOp::create(jb, jl, qt[r], sRe));
            }
            return SmallVector<Value>{insertAt(jb, jl, acc, iter[0], vIdx),
                                      state};
          });
    };
    auto step = [&](OpBuilder &b, Location l, ValueRange lead, Value t, Value y,
                    Value state) {
      Value zero = indexConst(b, l, 0);
      Value cleared = buildLoop(
          b, l, zero, sizes.dv, ValueRange{y},
          [&](OpBuilder &jb, Location jl, ValueRange j, ValueRange iter) {
            SmallVector<Value> yIdx = concatIndices(lead, ValueRange{t, j[0]});
            return SmallVector<Value>{
                insertAt(jb, jl, zeroOf(jb, jl, elem), iter[0], yIdx)};
          })[0];
      Value block = indexConst(b, l, kGlaRowBlock);
      Value blocks = arith::DivUIOp::create(b, l, sizes.dk, block);
      SmallVector<Value> blocked = buildLoop(
          b, l, zero, blocks, ValueRange{cleared, state},
          [&](OpBuilder &ib, Location il, ValueRange k, ValueRange iter) {
            Value first = arith::MulIOp::create(ib, il, k[0], block);
            SmallVector<Value> is{first};
            for (int64_t r = 1; r < kGlaRowBlock; ++r)
              is.push_back(
                  arith::AddIOp::create(ib, il, first, indexConst(ib, il, r)));
            return rows(ib, il, lead, t, is, iter);
          });
      return buildLoop(
          b, l, arith::MulIOp::create(b, l, blocks, block), sizes.dk, blocked,
          [&](OpBuilder &ib, Location il, ValueRange i, ValueRange iter) {
            return rows(ib, il, lead, t, {i[0]}, iter);
          });
    };

    // The GPU's forms: the recurrent gla a column a thread, in chunks of
    // columnChunk steps where its state column fits in registers; the
    // chunked gla where its state column fits in registers the same way in
    // chunks of its own chunk_size (the chunks' carries, each chunk's steps
    // one after another: no exp or division of cumulative decays), and
    // otherwise by GlaChunks a leading index a thread below.
    int64_t dkStatic =
        cast<RankedTensorType>(op.getQ().getType()).getShape().back();
    int64_t registers =
        (complexState ? 2 : 1) * (elem.getIntOrFloatBitWidth() <= 32 ? 1 : 2);
    bool columnFits = !ShapedType::isDynamic(dkStatic) &&
                      dkStatic * registers <= kGlaColumnMaxRegisters;
    if (columnThreads && (!chunked || columnFits)) {
      int64_t dk = dkStatic;
      int64_t stepsPerChunk = chunked ? chunk : columnChunk;
      if (stepsPerChunk <= 0 || !columnFits) {
        rewriter.replaceOp(op, buildColumns(rewriter, loc, op, sizes, yInit,
                                            stateInit, complexState));
        return success();
      }
      // gla-tiles' form in its own chunks where it applies.
      bool withTiles = tiles && glaTilesApply(op);
      if (withTiles)
        stepsPerChunk = glaTileChunk();
      // In chunks where the sequence is longer than two and the columns are
      // few, when it runs; otherwise a thread a column.
      Value columns = sizes.dv;
      for (Value size : sizes.lead)
        columns = arith::MulIOp::create(rewriter, loc, columns, size);
      Value inChunks = arith::AndIOp::create(
          rewriter, loc,
          arith::CmpIOp::create(rewriter, loc, arith::CmpIPredicate::ugt,
                                sizes.steps,
                                indexConst(rewriter, loc, 2 * stepsPerChunk)),
          arith::CmpIOp::create(
              rewriter, loc, arith::CmpIPredicate::ult, columns,
              indexConst(rewriter, loc, kGlaColumnChunkMaxColumns)));
      auto branch = scf::IfOp::create(
          rewriter, loc, TypeRange{yInit.getType(), stateInit.getType()},
          inChunks, /*withElseRegion=*/true);
      for (auto [block, steps] :
           {std::make_pair(branch.thenBlock(), stepsPerChunk),
            std::make_pair(branch.elseBlock(), int64_t(0))}) {
        OpBuilder bb = OpBuilder::atBlockEnd(block);
        scf::YieldOp::create(
            bb, loc,
            withTiles && steps > 0
                ? buildTiles(bb, loc, op, sizes, dk, yInit, stateInit)
                : buildRegisterColumns(bb, loc, op, sizes, dk, steps, yInit,
                                       stateInit));
      }
      rewriter.replaceOp(op, branch.getResults());
      return success();
    }

    SmallVector<Value> results = buildNest(
        rewriter, loc, sizes.lead, {yInit, stateInit},
        [&](OpBuilder &b, Location l, ValueRange lead, ValueRange args) {
          Value state =
              writeInitialState(b, l, args[1], lead, sizes, op.getInit());
          // The chunks of GlaChunks, or the recurrence step by step.
          auto unfactored = [&](OpBuilder &ub) -> SmallVector<Value> {
            if (chunked)
              return GlaChunks(op, sizes, lead).build(ub, l, args[0], state);
            Value zero = indexConst(ub, l, 0);
            return buildLoop(
                ub, l, zero, sizes.steps, ValueRange{args[0], state},
                [&](OpBuilder &tb, Location tl, ValueRange t, ValueRange iter) {
                  return step(tb, tl, lead, t[0], iter[0], iter[1]);
                });
          };
          if (!withProducts)
            return unfactored(b);
          // The product form where this index's decays allow it (see
          // GlaProducts.cpp), the other form otherwise.
          Value apply = glaProductsApply(b, l, op.getA(), chunk, lead);
          auto branch = scf::IfOp::create(b, l, args.getTypes(), apply,
                                          /*withElseRegion=*/true);
          OpBuilder tb = OpBuilder::atBlockEnd(&branch.getThenRegion().front());
          scf::YieldOp::create(
              tb, l, buildGlaProducts(tb, l, op, chunk, lead, args[0], state));
          OpBuilder eb = OpBuilder::atBlockEnd(&branch.getElseRegion().front());
          scf::YieldOp::create(eb, l, unfactored(eb));
          return SmallVector<Value>(branch.getResults());
        });
    rewriter.replaceOp(op, results);
    return success();
  }

  /// gla-tiles' form (GlaTiles.cpp): each chunk's decay products and
  /// state from zero by a warp's tiles, the states entering the chunks a
  /// thread per column as in buildRegisterColumns, then each chunk's
  /// outputs by a warp's tiles.
  static SmallVector<Value> buildTiles(OpBuilder &rewriter, Location loc,
                                       GatedLinearAttentionOp op,
                                       const GlaSizes &sizes, int64_t dk,
                                       Value yInit, Value stateInit) {
    GlaRegisterChunks g(
        rewriter, loc, op.getQ(), op.getK(), op.getV(), op.getA(), op.getInit(),
        sizes, cast<RankedTensorType>(op.getState().getType()).getElementType(),
        dk, glaTileChunk());
    GlaTileOperands ops{op.getQ(), op.getK(), op.getV(), op.getA()};
    auto [decays, local] =
        buildGlaTileStates(rewriter, loc, ops, sizes.lead, sizes.steps);
    std::pair<Value, Value> carried =
        g.enteringStates(rewriter, loc, decays, local, stateInit);
    return {buildGlaTileOutputs(rewriter, loc, ops, sizes.lead, sizes.steps,
                                carried.first, yInit),
            carried.second};
  }

  /// The recurrent form with the output columns independent too: for each
  /// leading index and column j (a nest of independent iterations, so on a
  /// GPU a thread per column, neighbouring threads on neighbouring
  /// columns), the state column S[:, j] starts from the init and at every
  /// step t
  ///   S_t[i, j] = a_t[i] * S_{t-1}[i, j] + k_t[i] * v_t[j]
  ///   y_t[j]    = sum_i q_t[i] * Re(S_t[i, j])   (in increasing i, from 0)
  /// the same arithmetic in the same order as the row form, so the results
  /// are the same bits.
  static SmallVector<Value> buildColumns(OpBuilder &rewriter, Location loc,
                                         GatedLinearAttentionOp op,
                                         const GlaSizes &sizes, Value yInit,
                                         Value stateInit, bool complexState) {
    Type elem = cast<RankedTensorType>(op.getY().getType()).getElementType();
    Type stateElem =
        cast<RankedTensorType>(op.getState().getType()).getElementType();
    SmallVector<Value> nestSizes(sizes.lead);
    nestSizes.push_back(sizes.dv);
    return buildNest(
        rewriter, loc, nestSizes, {yInit, stateInit},
        [&](OpBuilder &b, Location l, ValueRange ivs, ValueRange args) {
          ValueRange lead = ivs.drop_back();
          Value j = ivs.back();
          Value zero = indexConst(b, l, 0);
          Value state = buildLoop(
              b, l, zero, sizes.dk, args[1],
              [&](OpBuilder &ib, Location il, ValueRange i, ValueRange iter) {
                SmallVector<Value> idx =
                    concatIndices(lead, ValueRange{i[0], j});
                Value s0 = op.getInit() ? extractAt(ib, il, op.getInit(), idx)
                                        : zeroOf(ib, il, stateElem);
                return SmallVector<Value>{insertAt(ib, il, s0, iter[0], idx)};
              })[0];
          return buildLoop(
              b, l, zero, sizes.steps, ValueRange{args[0], state},
              [&](OpBuilder &tb, Location tl, ValueRange t,
                  ValueRange stepIter) {
                SmallVector<Value> vIdx =
                    concatIndices(lead, ValueRange{t[0], j});
                Value vt = extractAt(tb, tl, op.getV(), vIdx);
                SmallVector<Value> swept = buildLoop(
                    tb, tl, zero, sizes.dk,
                    ValueRange{stepIter[1], zeroOf(tb, tl, elem)},
                    [&](OpBuilder &ib, Location il, ValueRange i,
                        ValueRange iter) {
                      SmallVector<Value> kIdx =
                          concatIndices(lead, ValueRange{t[0], i[0]});
                      SmallVector<Value> sIdx =
                          concatIndices(lead, ValueRange{i[0], j});
                      Value at = extractAt(ib, il, op.getA(), kIdx);
                      Value kt = extractAt(ib, il, op.getK(), kIdx);
                      Value qt = extractAt(ib, il, op.getQ(), kIdx);
                      Value kv = arith::MulFOp::create(ib, il, kt, vt);
                      if (complexState)
                        kv = complex::CreateOp::create(ib, il, stateElem, kv,
                                                       zeroOf(ib, il, elem));
                      Value prev = extractAt(ib, il, iter[0], sIdx);
                      Value s = add(ib, il, mul(ib, il, at, prev), kv);
                      Value sRe =
                          complexState ? complex::ReOp::create(ib, il, s) : s;
                      Value acc = arith::AddFOp::create(
                          ib, il, iter[1],
                          arith::MulFOp::create(ib, il, qt, sRe));
                      return SmallVector<Value>{
                          insertAt(ib, il, s, iter[0], sIdx), acc};
                    });
                return SmallVector<Value>{
                    insertAt(tb, tl, swept[1], stepIter[0], vIdx), swept[0]};
              });
        });
  }

  /// The recurrent form with its output columns independent and the state
  /// column in registers (the GPU's, `gla-column-chunk`; `dk` static). With
  /// `chunk` > 0, in c = ceil(T / chunk) chunks of `chunk` steps:
  ///   1. a thread per (leading index, chunk, key row i): the chunk's decay
  ///      product A_c[i] = prod_t a_t[i];
  ///   2. a thread per (leading index, chunk, column j): the chunk's state
  ///      from zero, L_c[:, j] (the recurrence over the chunk's steps);
  ///   3. a thread per (leading index, column j): the state entering each
  ///      chunk, E_0 = init (or 0), E_{c+1} = A_c E_c + L_c, and the final
  ///      state E_c after the last;
  ///   4. a thread per (leading index, chunk, column j): the recurrence over
  ///      the chunk's steps from E_c, writing y_t[j] = sum_i q_t[i]
  ///      Re(S_t[i, j]).
  /// Twice the recurrence's work, over (T / chunk) times as many threads;
  /// the states entering the chunks are reassociated, so results agree
  /// with buildColumns to rounding. With `chunk` = 0, 4 alone over the
  /// whole sequence from the init (the same arithmetic as buildColumns in
  /// the same order, the state in registers instead of in memory), writing
  /// the final state. (1 to 3 are GlaRegisterChunks', shared with the
  /// backward.)
  static SmallVector<Value> buildRegisterColumns(OpBuilder &rewriter,
                                                 Location loc,
                                                 GatedLinearAttentionOp op,
                                                 const GlaSizes &sizes,
                                                 int64_t dk, int64_t chunk,
                                                 Value yInit, Value stateInit) {
    GlaRegisterChunks g(
        rewriter, loc, op.getQ(), op.getK(), op.getV(), op.getA(), op.getInit(),
        sizes, cast<RankedTensorType>(op.getState().getType()).getElementType(),
        dk, chunk);
    if (chunk == 0) {
      // A thread a column, from the init over the whole sequence.
      return buildNest(
          rewriter, loc, g.nestSizes({sizes.dv}), {yInit, stateInit},
          [&](OpBuilder &b, Location l, ValueRange ivs, ValueRange args) {
            ValueRange lead = ivs.drop_back();
            Value j = ivs.back();
            SmallVector<Value> swept =
                g.sweep(b, l, lead, j, indexConst(b, l, 0), sizes.steps,
                        g.column(b, l, op.getInit(), lead, j), args[0]);
            return SmallVector<Value>{
                swept[dk],
                g.writeColumn(b, l, ArrayRef<Value>(swept).take_front(dk),
                              args[1], lead, j)};
          });
    }
    Value decays = g.decayProducts(rewriter, loc);
    Value local = g.localStates(rewriter, loc);
    std::pair<Value, Value> carried =
        g.enteringStates(rewriter, loc, decays, local, stateInit);

    // 4. Each chunk from the state entering it, writing y.
    Value y = g.perChunkColumn(
        rewriter, loc, yInit,
        [&](OpBuilder &b, Location l, ValueRange lead, Value c, Value j,
            Value out) {
          std::pair<Value, Value> steps = g.chunkSteps(b, l, c);
          return g.sweep(
              b, l, lead, j, steps.first, steps.second,
              g.column(b, l, carried.first, concatIndices(lead, {c}), j),
              out)[dk];
        });
    return {y, carried.second};
  }
};

/// State rows a step of the gla's reverse sweep goes through together (1,
/// 2 and 4 measured 235, 240 and 215 ms on gla_bwd, docs/performance.md).
constexpr int64_t kGlaGradRowBlock = 4;

/// The most bytes of the states of a chunk's row that a thread of the
/// gla backward's chunked form keeps (local memory on a GPU): 16 KiB at
/// chunks of 64 and dv = 64 in f32.
constexpr int64_t kGlaGradStashMaxBytes = 32 * 1024;

/// The reverse sweep of a gla, per leading index (independent, tagged
/// parallel), with the state kept at chunk boundaries:
///  1. the state entering each chunk of `chunk_size` steps, computed
///     forward with the forward lowering's arithmetic, into `entering`
///     `[chunks, dk, dv]`;
///  2. the chunks in reverse: the chunk's states recomputed from its
///     entering state into `states` `[chunk + 1, dk, dv]` (row m + 1 is the
///     state after the chunk's step m), then its steps in reverse, each
///     state row i by row over the columns j (consecutive in memory):
///     G = q_t[i] dy_t[j] + H[i, j] is the cotangent of S_t[i, j], H (the
///     cotangent flowing into S_{t-1}, dstate at first) becomes
///     conj(a_t[i]) G, and the row's sums dq_t[i], dk_t[i], da_t[i] and the
///     column sums dv_t[j] are accumulated; dinit is H after step 0. The
///     rows go kGlaGradRowBlock at a time, each column's dy_t[j], v_t[j]
///     and dv_t[j] read once per block.
/// The row sums are reassociable (`fastmath<reassoc>`) so that they
/// vectorize, and the products of the sweep may fuse with the sums they
/// feed (`fastmath<contract>`: FMA). With `products`, a leading index whose
/// real decays allow it takes the product form instead
/// (GlaProducts.cpp), chosen per index when the kernel runs. The GPU's
/// (gla-column-threads with gla-column-chunk) goes in chunks over threads
/// instead where its columns and rows fit in registers
/// (buildRegisterChunks).
struct GatedLinearAttentionGradToLoops
    : OpRewritePattern<GatedLinearAttentionGradOp> {
  GatedLinearAttentionGradToLoops(MLIRContext *context, bool products,
                                  bool columnThreads, int64_t columnChunk,
                                  bool tiles)
      : OpRewritePattern(context), products(products),
        columnThreads(columnThreads), columnChunk(columnChunk), tiles(tiles) {}

  /// Whether real decays take the product form where it applies.
  bool products;
  /// With columnThreads and columnChunk > 0 (the GPU's), the chunks of
  /// buildRegisterChunks where the state's rows and columns fit in
  /// registers and a chunk's states of a row in kGlaGradStashMaxBytes.
  bool columnThreads;
  int64_t columnChunk;
  /// With columnThreads, gla-tiles' form where it applies (buildTiles),
  /// before buildRegisterChunks' chunks.
  bool tiles;

  /// gla-tiles' form of the backward (GlaTiles.cpp), in its chunks of 16
  /// steps:
  ///  1-2. the chunks' decay products A_c and states from zero L_c by a
  ///       warp's tiles, then the states entering the chunks E_c a thread
  ///       per column, as the forward's;
  ///  3. what each chunk's outputs send back into the state entering it,
  ///     M_c, by tiles;
  ///  4. the cotangents of the states after the chunks H_c and dinit a
  ///     thread per column (laterCotangents, as buildRegisterChunks' 5);
  ///  5. dv by tiles, a block per (leading index, chunk);
  ///  6. dq, dk and da, a block per (leading index, chunk): the chunk's
  ///     products of v, dy, E_c and H_c by tiles, then a thread a key row.
  SmallVector<Value> buildTiles(PatternRewriter &rewriter, Location loc,
                                GatedLinearAttentionGradOp op,
                                const GlaSizes &sizes, int64_t dk,
                                ValueRange inits) const {
    auto stateType = cast<RankedTensorType>(op.getDstate().getType());
    GlaRegisterChunks g(rewriter, loc, op.getQ(), op.getK(), op.getV(),
                        op.getA(), op.getInit(), sizes,
                        stateType.getElementType(), dk, glaTileChunk());
    GlaTileOperands ops{op.getQ(), op.getK(), op.getV(), op.getA()};
    auto [decays, local] =
        buildGlaTileStates(rewriter, loc, ops, sizes.lead, sizes.steps);
    Value entering =
        g.enteringStates(rewriter, loc, decays, local,
                         emptyLike(rewriter, loc, stateType,
                                   g.nestSizes(ValueRange{sizes.dk, sizes.dv})))
            .first;
    Value sent = buildGlaTileSent(rewriter, loc, ops, op.getDy(), sizes.lead,
                                  sizes.steps);
    std::pair<Value, Value> carried = g.laterCotangents(
        rewriter, loc, decays, sent, op.getDstate(), inits[4]);
    Value dvOut =
        buildGlaTileValueGrads(rewriter, loc, ops, op.getDy(), sizes.lead,
                               sizes.steps, carried.first, inits[2]);
    SmallVector<Value> rows = buildGlaTileRowGrads(
        rewriter, loc, ops, op.getDy(), sizes.lead, sizes.steps, entering,
        carried.first, ValueRange{inits[0], inits[1], inits[3]});
    return {rows[0], rows[1], dvOut, rows[2], carried.second};
  }

  /// The GPU's form (`gla-column-threads` with `gla-column-chunk` N > 0;
  /// dk and dv static): in chunks of N steps, each piece a nest of
  /// independent threads, the state's columns and rows in registers:
  ///  1-3. the states entering the chunks E_c, as the forward's
  ///       buildRegisterColumns computes them (GlaRegisterChunks: the
  ///       chunks' decay products A_c, each chunk's state from zero, then
  ///       the carries a thread per column);
  ///  4. a thread per (leading index, chunk, column j): what the chunk's
  ///     own outputs send back into the state before it, M_c[:, j]: from
  ///     zero after the chunk's last step back to its first, G = q_t dy_t[j]
  ///     + H, then H = conj(a_t) G;
  ///  5. a thread per (leading index, column j): the cotangent H_c of the
  ///     state after chunk c from the later chunks, H_last = dstate (or 0),
  ///     H_{c-1} = conj(A_c) H_c + M_c, and dinit = conj(A_0) H_0 + M_0;
  ///  6. a thread per (leading index, chunk, key row i), the state's row in
  ///     registers: forward from E_c[i, :], each step's state before it
  ///     kept in the thread's own `[N, dv]` buffer (local memory on a GPU),
  ///     dq_t[i] = sum_j Re(S_t[i, j]) dy_t[j]; then back from H_c[i, :],
  ///     G = q_t[i] dy_t + H, dk_t[i] = sum_j Re(G_j) v_t[j], da_t[i] =
  ///     sum_j G_j conj(S_{t-1}[i, j]), H = conj(a_t[i]) G;
  ///  7. a thread per (leading index, chunk, column j): back from H_c[:, j]
  ///     the same way, dv_t[j] = sum_i Re(G_i) k_t[i].
  /// Each sum runs in increasing index from zero, as the sweep's; the
  /// carries across chunks are reassociated, so results agree with the
  /// sweep to rounding. The sweep's one thread per leading index becomes
  /// threads over chunks and rows or columns: at T = 4096, N = 64 and
  /// dk = dv = 64, 4096 per leading index in each of the widest nests.
  /// What each chunk sends back goes into the buffer of the chunks' own
  /// states, dead by then (four `[lead..., chunks, dk, dv]` buffers would
  /// otherwise be live at once).
  SmallVector<Value> buildRegisterChunks(PatternRewriter &rewriter,
                                         Location loc,
                                         GatedLinearAttentionGradOp op,
                                         const GlaSizes &sizes, int64_t dk,
                                         int64_t dv, ValueRange inits) const {
    auto stateType = cast<RankedTensorType>(op.getDstate().getType());
    Type stateElem = stateType.getElementType();
    GlaRegisterChunks g(rewriter, loc, op.getQ(), op.getK(), op.getV(),
                        op.getA(), op.getInit(), sizes, stateElem, dk,
                        columnChunk);
    Type elem = g.elem;
    Value dqInit = inits[0], dkInit = inits[1], dvInit = inits[2],
          daInit = inits[3], dinitInit = inits[4];

    // 1-3. The states entering the chunks (the final state is not needed).
    Value decays = g.decayProducts(rewriter, loc);
    Value local = g.localStates(rewriter, loc);
    Value entering =
        g.enteringStates(rewriter, loc, decays, local,
                         emptyLike(rewriter, loc, stateType,
                                   g.nestSizes(ValueRange{sizes.dk, sizes.dv})))
            .first;

    // 4. What each chunk sends back into the state before it (into
    // `local`'s buffer: every element is written).
    Value sent = g.perChunkColumn(
        rewriter, loc, local,
        [&](OpBuilder &b, Location l, ValueRange lead, Value c, Value j,
            Value out) {
          std::pair<Value, Value> steps = g.chunkSteps(b, l, c);
          SmallVector<Value> h = g.reverseSweep(
              b, l, lead, j, steps.first, steps.second,
              g.column(b, l, Value(), lead, j), op.getDy(), Value());
          return g.writeColumn(b, l, h, out, concatIndices(lead, {c}), j);
        });

    // 5. The cotangents of the states after the chunks, from the later
    // ones, and dinit.
    std::pair<Value, Value> carried = g.laterCotangents(
        rewriter, loc, decays, sent, op.getDstate(), dinitInit);
    Value later = carried.first;

    // 6. A thread per (leading index, chunk, key row): dq, dk and da.
    auto stashType = RankedTensorType::get({columnChunk, dv}, stateElem);
    SmallVector<Value> rows = buildNest(
        rewriter, loc, g.nestSizes({g.chunks, sizes.dk}),
        {dqInit, dkInit, daInit},
        [&](OpBuilder &b, Location l, ValueRange ivs, ValueRange args) {
          ValueRange lead = ivs.drop_back(2);
          Value c = ivs[ivs.size() - 2], i = ivs.back();
          std::pair<Value, Value> steps = g.chunkSteps(b, l, c);
          Value begin = steps.first;
          Value len = arith::SubIOp::create(b, l, steps.second, begin);
          Value zero = indexConst(b, l, 0);
          // Row i at chunk c of a `[lead..., chunks, dk, dv]` tensor.
          auto row = [&](Value tensor) {
            SmallVector<Value> values;
            for (int64_t j = 0; j < dv; ++j)
              values.push_back(
                  extractAt(b, l, tensor,
                            concatIndices(lead, {c, i, indexConst(b, l, j)})));
            return values;
          };
          // Forward: the states before each step into the stash, dq.
          SmallVector<Value> forwardInit{args[0],
                                         privateScratch(b, l, stashType, {})};
          llvm::append_range(forwardInit, row(entering));
          SmallVector<Value> forward = buildLoop(
              b, l, zero, len, forwardInit,
              [&](OpBuilder &tb, Location tl, ValueRange m, ValueRange iter) {
                Value t = arith::AddIOp::create(tb, tl, begin, m[0]);
                SmallVector<Value> kIdx = concatIndices(lead, {t, i});
                Value at = extractAt(tb, tl, op.getA(), kIdx);
                Value kt = extractAt(tb, tl, op.getK(), kIdx);
                Value stash = iter[1];
                Value acc = zeroOf(tb, tl, elem);
                SmallVector<Value> next(iter);
                for (int64_t j = 0; j < dv; ++j) {
                  Value jc = indexConst(tb, tl, j);
                  SmallVector<Value> vIdx = concatIndices(lead, {t, jc});
                  Value prev = iter[2 + j];
                  stash = insertAt(tb, tl, prev, stash, ValueRange{m[0], jc});
                  Value kv = g.toState(
                      tb, tl,
                      arith::MulFOp::create(
                          tb, tl, kt, extractAt(tb, tl, op.getV(), vIdx)));
                  Value s = add(tb, tl, mul(tb, tl, at, prev), kv);
                  Value sRe = g.re(tb, tl, s);
                  acc = arith::AddFOp::create(
                      tb, tl, acc,
                      arith::MulFOp::create(
                          tb, tl, sRe, extractAt(tb, tl, op.getDy(), vIdx)));
                  next[2 + j] = s;
                }
                next[0] = insertAt(tb, tl, acc, iter[0], kIdx);
                next[1] = stash;
                return next;
              });
          Value stash = forward[1];
          // Back: dk and da.
          SmallVector<Value> backInit{args[1], args[2]};
          llvm::append_range(backInit, row(later));
          Value lastOffset =
              arith::SubIOp::create(b, l, len, indexConst(b, l, 1));
          SmallVector<Value> back = buildLoop(
              b, l, zero, len, backInit,
              [&](OpBuilder &tb, Location tl, ValueRange mm, ValueRange iter) {
                Value m = arith::SubIOp::create(tb, tl, lastOffset, mm[0]);
                Value t = arith::AddIOp::create(tb, tl, begin, m);
                SmallVector<Value> kIdx = concatIndices(lead, {t, i});
                Value qt = extractAt(tb, tl, op.getQ(), kIdx);
                Value at = g.conj(tb, tl, extractAt(tb, tl, op.getA(), kIdx));
                Value dkAcc = zeroOf(tb, tl, elem);
                Value daAcc = zeroOf(tb, tl, stateElem);
                SmallVector<Value> next(iter);
                for (int64_t j = 0; j < dv; ++j) {
                  Value jc = indexConst(tb, tl, j);
                  SmallVector<Value> vIdx = concatIndices(lead, {t, jc});
                  Value grad =
                      add(tb, tl,
                          g.toState(tb, tl,
                                    arith::MulFOp::create(
                                        tb, tl, qt,
                                        extractAt(tb, tl, op.getDy(), vIdx))),
                          iter[2 + j]);
                  Value gradRe = g.re(tb, tl, grad);
                  dkAcc = arith::AddFOp::create(
                      tb, tl, dkAcc,
                      arith::MulFOp::create(
                          tb, tl, gradRe, extractAt(tb, tl, op.getV(), vIdx)));
                  Value before = extractAt(tb, tl, stash, ValueRange{m, jc});
                  daAcc = add(tb, tl, daAcc,
                              mul(tb, tl, grad, g.conj(tb, tl, before)));
                  next[2 + j] = mul(tb, tl, at, grad);
                }
                next[0] = insertAt(tb, tl, dkAcc, iter[0], kIdx);
                next[1] = insertAt(tb, tl, daAcc, iter[1], kIdx);
                return next;
              });
          return SmallVector<Value>{forward[0], back[0], back[1]};
        });

    // 7. A thread per (leading index, chunk, column): dv.
    Value dvOut = g.perChunkColumn(
        rewriter, loc, dvInit,
        [&](OpBuilder &b, Location l, ValueRange lead, Value c, Value j,
            Value out) {
          std::pair<Value, Value> steps = g.chunkSteps(b, l, c);
          return g.reverseSweep(
              b, l, lead, j, steps.first, steps.second,
              g.column(b, l, later, concatIndices(lead, {c}), j), op.getDy(),
              out)[dk];
        });
    return {rows[0], rows[1], dvOut, rows[2], carried.second};
  }

  LogicalResult matchAndRewrite(GatedLinearAttentionGradOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto qType = cast<RankedTensorType>(op.getQ().getType());
    auto vType = cast<RankedTensorType>(op.getV().getType());
    auto aType = cast<RankedTensorType>(op.getA().getType());
    auto stateType = cast<RankedTensorType>(op.getDstate().getType());
    Type elem = qType.getElementType();
    Type stateElem = stateType.getElementType();
    bool complexState = isa<ComplexType>(stateElem);
    int64_t rank = qType.getRank();
    int64_t chunk = op.getChunkSize();

    SmallVector<Value> qSizes = dimSizes(rewriter, loc, op.getQ());
    SmallVector<Value> vSizes = dimSizes(rewriter, loc, op.getV());
    SmallVector<Value> lead(ArrayRef<Value>(qSizes).drop_back(2));
    Value steps = qSizes[rank - 2], dk = qSizes[rank - 1],
          dv = vSizes[rank - 1];
    SmallVector<Value> stateSizes = concatIndices(lead, ValueRange{dk, dv});
    Value dqInit = emptyLike(rewriter, loc, qType, qSizes);
    Value dkInit = emptyLike(rewriter, loc, qType, qSizes);
    Value dvInit = emptyLike(rewriter, loc, vType, vSizes);
    Value daInit = emptyLike(rewriter, loc, aType, qSizes);
    Value dinitInit = emptyLike(rewriter, loc, stateType, stateSizes);
    int64_t dkStatic = qType.getShape().back();
    int64_t dvStatic = vType.getShape().back();
    int64_t partBytes = elem.getIntOrFloatBitWidth() <= 32 ? 4 : 8;
    int64_t elemBytes = (complexState ? 2 : 1) * partBytes;
    SmallVector<Value> inits{dqInit, dkInit, dvInit, daInit, dinitInit};
    // The GPU's forms: gla-tiles' wherever it applies (whatever the column
    // form's chunk: it has its own), otherwise the column form's chunks
    // where the state's rows and columns fit in registers.
    if (columnThreads && tiles && glaTilesApply(op)) {
      GlaSizes sizes{lead, steps, dk, dv};
      rewriter.replaceOp(op,
                         buildTiles(rewriter, loc, op, sizes, dkStatic, inits));
      return success();
    }
    if (columnThreads && columnChunk > 0 && !ShapedType::isDynamic(dkStatic) &&
        !ShapedType::isDynamic(dvStatic) &&
        dkStatic * elemBytes / 4 <= kGlaColumnMaxRegisters &&
        dvStatic * elemBytes / 4 <= kGlaColumnMaxRegisters &&
        columnChunk * dvStatic * elemBytes <= kGlaGradStashMaxBytes) {
      GlaSizes sizes{lead, steps, dk, dv};
      rewriter.replaceOp(op, buildRegisterChunks(rewriter, loc, op, sizes,
                                                 dkStatic, dvStatic, inits));
      return success();
    }
    // affine.apply, which recur-workspace-bound bounds (arith.ceildivui it
    // cannot).
    Value chunks = affine::AffineApplyOp::create(
        rewriter, loc,
        AffineMap::get(
            0, 1, getAffineSymbolExpr(0, rewriter.getContext()).ceilDiv(chunk)),
        ValueRange{steps});
    auto stackType = RankedTensorType::get(
        {ShapedType::kDynamic, ShapedType::kDynamic, ShapedType::kDynamic},
        stateElem);
    // The sums of the sweep may be reassociated (they vectorize) and their
    // products fused with them (FMA).
    auto contract = arith::FastMathFlags::contract;
    auto reassocContract = arith::FastMathFlags::reassoc | contract;
    auto multiplyAdd = [](OpBuilder &b, Location l, Value acc, Value x, Value y,
                          arith::FastMathFlags flags) -> Value {
      return arith::AddFOp::create(
          b, l, acc, arith::MulFOp::create(b, l, x, y, flags), flags);
    };

    auto re = [&](OpBuilder &b, Location l, Value x) -> Value {
      return complexState ? complex::ReOp::create(b, l, x).getResult() : x;
    };
    auto conj = [&](OpBuilder &b, Location l, Value x) -> Value {
      return complexState ? complex::ConjOp::create(b, l, x).getResult() : x;
    };
    auto toState = [&](OpBuilder &b, Location l, Value x) -> Value {
      return complexState ? complex::CreateOp::create(b, l, stateElem, x,
                                                      zeroOf(b, l, elem))
                                .getResult()
                          : x;
    };

    // The reverse sweep of one leading index `ld`: `args` (dq, dk, dv, da,
    // dinit) with its elements written.
    auto sweep = [&](OpBuilder &b, Location l, ValueRange ld,
                     ValueRange args) -> SmallVector<Value> {
      Value zero = indexConst(b, l, 0), one = indexConst(b, l, 1);
      auto idx = [&](ValueRange tail) { return concatIndices(ld, tail); };
      // Over the elements (i, j) of row `row` of `stack` `[n, dk, dv]`:
      // writes value(i, j, current stack) there. Reads of the stack go
      // through the current value, so bufferization updates it in place.
      auto rowNest =
          [&](OpBuilder &rb, Location rl, Value stack, Value row,
              function_ref<Value(OpBuilder &, Location, Value, Value, Value)>
                  value) {
            return buildLoop(
                rb, rl, zero, dk, ValueRange{stack},
                [&](OpBuilder &ib, Location il, ValueRange i, ValueRange it) {
                  return buildLoop(ib, il, zero, dv, it,
                                   [&](OpBuilder &jb, Location jl, ValueRange j,
                                       ValueRange jt) {
                                     Value x = value(jb, jl, i[0], j[0], jt[0]);
                                     return SmallVector<Value>{
                                         insertAt(jb, jl, x, jt[0],
                                                  ValueRange{row, i[0], j[0]})};
                                   });
                })[0];
          };
      // Row `row` of `stack` = a `[..., dk, dv]` operand at this leading
      // index (zeros without one).
      auto loadRow = [&](OpBuilder &cb, Location cl, Value stack, Value row,
                         Value source) {
        return rowNest(
            cb, cl, stack, row,
            [&](OpBuilder &jb, Location jl, Value i, Value j, Value) -> Value {
              if (!source)
                return zeroOf(jb, jl, stateElem);
              return extractAt(jb, jl, source, idx({i, j}));
            });
      };
      // Row `to` of `stack` = the state after step t from row `from` (the
      // forward lowering's arithmetic; `from` may equal `to`).
      auto stepRow = [&](OpBuilder &sb, Location sl, Value stack, Value from,
                         Value to, Value t) {
        return rowNest(
            sb, sl, stack, to,
            [&](OpBuilder &jb, Location jl, Value i, Value j, Value current) {
              Value at = extractAt(jb, jl, op.getA(), idx({t, i}));
              Value kt = extractAt(jb, jl, op.getK(), idx({t, i}));
              Value vt = extractAt(jb, jl, op.getV(), idx({t, j}));
              Value kv = toState(jb, jl, arith::MulFOp::create(jb, jl, kt, vt));
              Value prev = extractAt(jb, jl, current, ValueRange{from, i, j});
              return add(jb, jl, mul(jb, jl, at, prev), kv);
            });
      };
      // The first step of chunk c and its number of steps.
      auto chunkStart = [&](OpBuilder &cb, Location cl, Value c) -> Value {
        return arith::MulIOp::create(cb, cl, c, indexConst(cb, cl, chunk));
      };
      auto chunkLen = [&](OpBuilder &cb, Location cl, Value start) -> Value {
        return arith::MinSIOp::create(
            cb, cl, indexConst(cb, cl, chunk),
            arith::SubIOp::create(cb, cl, steps, start));
      };

      // 1. The state entering each chunk.
      Value entering = privateScratch(b, l, stackType, {chunks, dk, dv});
      entering = loadRow(b, l, entering, zero, op.getInit());
      Value lastChunk = arith::SubIOp::create(b, l, chunks, one);
      entering = buildLoop(
          b, l, zero, lastChunk, ValueRange{entering},
          [&](OpBuilder &cb, Location cl, ValueRange c, ValueRange it) {
            Value start = chunkStart(cb, cl, c[0]);
            Value len = chunkLen(cb, cl, start);
            // The first step reads the chunk's entering state, the
            // others the row they update.
            Value next = plusOne(cb, cl, c[0]);
            Value stack = stepRow(cb, cl, it[0], c[0], next, start);
            return buildLoop(
                cb, cl, one, len, ValueRange{stack},
                [&](OpBuilder &mb, Location ml, ValueRange m, ValueRange mit) {
                  Value t = arith::AddIOp::create(mb, ml, start, m[0]);
                  return SmallVector<Value>{
                      stepRow(mb, ml, mit[0], next, next, t)};
                });
          })[0];

      // 2. The chunks in reverse.
      Value states = privateScratch(b, l, stackType,
                                    {indexConst(b, l, chunk + 1), dk, dv});
      Value carry = privateScratch(b, l, stackType, {one, dk, dv});
      carry = loadRow(b, l, carry, zero, op.getDstate());
      SmallVector<Value> swept = buildLoop(
          b, l, zero, chunks,
          ValueRange{args[0], args[1], args[2], args[3], states, carry},
          [&](OpBuilder &cb, Location cl, ValueRange cc, ValueRange it) {
            Value c = arith::SubIOp::create(cb, cl, lastChunk, cc[0]);
            Value start = chunkStart(cb, cl, c);
            Value len = chunkLen(cb, cl, start);
            Value st = rowNest(
                cb, cl, it[4], zero,
                [&](OpBuilder &jb, Location jl, Value i, Value j, Value) {
                  return extractAt(jb, jl, entering, ValueRange{c, i, j});
                });
            st = buildLoop(
                cb, cl, zero, len, ValueRange{st},
                [&](OpBuilder &mb, Location ml, ValueRange m, ValueRange mit) {
                  Value t = arith::AddIOp::create(mb, ml, start, m[0]);
                  return SmallVector<Value>{
                      stepRow(mb, ml, mit[0], m[0], plusOne(mb, ml, m[0]), t)};
                })[0];
            Value lastStep = arith::SubIOp::create(cb, cl, len, one);
            SmallVector<Value> inner = buildLoop(
                cb, cl, zero, len,
                ValueRange{it[0], it[1], it[2], it[3], it[5]},
                [&](OpBuilder &mb, Location ml, ValueRange mm, ValueRange mit) {
                  Value m = arith::SubIOp::create(mb, ml, lastStep, mm[0]);
                  Value t = arith::AddIOp::create(mb, ml, start, m);
                  Value after = plusOne(mb, ml, m);
                  Value dvOut = fillRow(mb, ml, mit[2], idx({t}), dv,
                                        [&](OpBuilder &jb, Location jl, Value) {
                                          return zeroOf(jb, jl, elem);
                                        });
                  // Rows `is` of step t: rit and the result are (dq,
                  // dk, dv, da, carry).
                  auto sweepRows = [&](OpBuilder &ib, Location il,
                                       ArrayRef<Value> is, ValueRange rit) {
                    SmallVector<Value> qi, ki, ai;
                    SmallVector<SmallVector<Value>> ti;
                    for (Value i : is) {
                      ti.push_back(idx({t, i}));
                      qi.push_back(extractAt(ib, il, op.getQ(), ti.back()));
                      ki.push_back(extractAt(ib, il, op.getK(), ti.back()));
                      ai.push_back(conj(
                          ib, il, extractAt(ib, il, op.getA(), ti.back())));
                    }
                    // dv, carry, then dq, dk, da of each row.
                    SmallVector<Value> init{rit[2], rit[4]};
                    for (size_t r = 0; r < is.size(); ++r)
                      llvm::append_range(init,
                                         ValueRange{zeroOf(ib, il, elem),
                                                    zeroOf(ib, il, elem),
                                                    zeroOf(ib, il, stateElem)});
                    SmallVector<Value> row = buildLoop(
                        ib, il, zero, dv, init,
                        [&](OpBuilder &jb, Location jl, ValueRange j,
                            ValueRange x) {
                          SmallVector<Value> tj = idx({t, j[0]});
                          Value dyj = extractAt(jb, jl, op.getDy(), tj);
                          Value vj = extractAt(jb, jl, op.getV(), tj);
                          Value dvj = extractAt(jb, jl, x[0], tj);
                          Value carry = x[1];
                          SmallVector<Value> next;
                          for (auto [r, i] : llvm::enumerate(is)) {
                            SmallVector<Value> hIdx = {zero, i, j[0]};
                            Value h = extractAt(jb, jl, carry, hIdx);
                            Value qdy = arith::MulFOp::create(jb, jl, qi[r],
                                                              dyj, contract);
                            Value g = complexState
                                          ? add(jb, jl, toState(jb, jl, qdy), h)
                                          : arith::AddFOp::create(jb, jl, qdy,
                                                                  h, contract)
                                                .getResult();
                            Value s = extractAt(jb, jl, st,
                                                ValueRange{after, i, j[0]});
                            Value sp =
                                extractAt(jb, jl, st, ValueRange{m, i, j[0]});
                            Value gRe = re(jb, jl, g);
                            dvj =
                                multiplyAdd(jb, jl, dvj, gRe, ki[r], contract);
                            ValueRange acc = x.slice(2 + 3 * r, 3);
                            next.push_back(multiplyAdd(jb, jl, acc[0],
                                                       re(jb, jl, s), dyj,
                                                       reassocContract));
                            next.push_back(multiplyAdd(jb, jl, acc[1], gRe, vj,
                                                       reassocContract));
                            next.push_back(
                                complexState
                                    ? add(jb, jl, acc[2],
                                          mul(jb, jl, g, conj(jb, jl, sp)))
                                    : multiplyAdd(jb, jl, acc[2], g, sp,
                                                  reassocContract));
                            carry = insertAt(jb, jl, mul(jb, jl, ai[r], g),
                                             carry, hIdx);
                          }
                          SmallVector<Value> out{
                              insertAt(jb, jl, dvj, x[0], tj), carry};
                          llvm::append_range(out, next);
                          return out;
                        });
                    Value dq = rit[0], dkOut = rit[1], da = rit[3];
                    for (size_t r = 0; r < is.size(); ++r) {
                      dq = insertAt(ib, il, row[2 + 3 * r], dq, ti[r]);
                      dkOut = insertAt(ib, il, row[3 + 3 * r], dkOut, ti[r]);
                      da = insertAt(ib, il, row[4 + 3 * r], da, ti[r]);
                    }
                    return SmallVector<Value>{dq, dkOut, row[0], da, row[1]};
                  };
                  // kGlaGradRowBlock rows at a time, then one at a
                  // time: dy_t, v_t and dv_t are read and dv_t written
                  // once per block rather than once per row (dv_t[j]
                  // still sums over the rows in increasing order).
                  return buildBlockedLoop(
                      mb, ml, dk, kGlaGradRowBlock,
                      ValueRange{mit[0], mit[1], dvOut, mit[3], mit[4]},
                      sweepRows);
                });
            return SmallVector<Value>{inner[0], inner[1], inner[2],
                                      inner[3], st,       inner[4]};
          });
      // dinit at this leading index: row 0 of the carry.
      Value out = buildLoop(
          b, l, zero, dk, ValueRange{args[4]},
          [&](OpBuilder &ib, Location il, ValueRange i, ValueRange it) {
            return SmallVector<Value>{fillRow(
                ib, il, it[0], idx({i[0]}), dv,
                [&](OpBuilder &jb, Location jl, Value j) {
                  return extractAt(jb, jl, swept[5], ValueRange{zero, i[0], j});
                })};
          })[0];
      return SmallVector<Value>{swept[0], swept[1], swept[2], swept[3], out};
    };
    bool withProducts =
        products && hasGlaProducts(op.getQ(), op.getA(),
                                   static_cast<int64_t>(op.getChunkSize()));
    SmallVector<Value> results = buildNest(
        rewriter, loc, lead, {dqInit, dkInit, dvInit, daInit, dinitInit},
        [&](OpBuilder &b, Location l, ValueRange ld, ValueRange args) {
          if (!withProducts)
            return sweep(b, l, ld, args);
          // The product form where this index's decays allow it (see
          // GlaProducts.cpp), the sweep otherwise.
          Value apply = glaProductsApply(
              b, l, op.getA(), static_cast<int64_t>(op.getChunkSize()), ld);
          auto branch = scf::IfOp::create(b, l, args.getTypes(), apply,
                                          /*withElseRegion=*/true);
          OpBuilder tb = OpBuilder::atBlockEnd(&branch.getThenRegion().front());
          scf::YieldOp::create(tb, l,
                               buildGlaGradProducts(tb, l, op, ld, args));
          OpBuilder eb = OpBuilder::atBlockEnd(&branch.getElseRegion().front());
          scf::YieldOp::create(eb, l, sweep(eb, l, ld, args));
          return SmallVector<Value>(branch.getResults());
        });
    rewriter.replaceOp(op, results);
    return success();
  }
};

} // namespace

void mlir::recur::loops::populateScanPatterns(
    RewritePatternSet &patterns, int64_t scanGroup, int64_t scanChunk,
    int64_t streamStoreBytes, int64_t scanUnrollBytes, bool glaColumnThreads,
    int64_t scanSpread, int64_t scanSpreadChunk, bool scanWarps,
    bool emulateWarps, bool glaProducts, int64_t glaColumnChunk,
    int64_t scanBlocks, bool blockAggregatesOnly, bool glaTiles) {
  patterns.add<LinearScanToLoops>(patterns.getContext(), scanGroup, scanChunk,
                                  streamStoreBytes, scanUnrollBytes, scanSpread,
                                  scanSpreadChunk, scanWarps, emulateWarps,
                                  scanBlocks, blockAggregatesOnly);
  patterns.add<GatedLinearAttentionToLoops>(patterns.getContext(),
                                            glaColumnThreads, glaColumnChunk,
                                            glaProducts, glaTiles);
  patterns.add<GatedLinearAttentionGradToLoops>(patterns.getContext(),
                                                glaProducts, glaColumnThreads,
                                                glaColumnChunk, glaTiles);
  patterns.add<ScanToLoops>(patterns.getContext());
}
