//===- StreamStores.cpp - non-temporal stores of streamed outputs ---------===//
//
// Part of the Recur project.
//
// recur-stream-stores: the stores of a loop tagged recur.stream_stores that
// write each element once go around the cache.
//
//===----------------------------------------------------------------------===//

#include "recur/Conversion/RecurToLoops/RecurToLoops.h"

#include "Utility.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::recur {
#define GEN_PASS_DEF_RECURSTREAMSTORES
#include "recur/Conversion/Passes.h.inc"
} // namespace mlir::recur

using namespace mlir;
using namespace mlir::recur;

namespace {

/// `value` as computed from `ahead`, the value `loop`'s induction variable
/// maps to: the operations inside `loop` between them cloned at `b`'s
/// insertion point.
Value recomputeAhead(OpBuilder &b, Value value, scf::ForOp loop,
                     IRMapping &ahead) {
  if (Value mapped = ahead.lookupOrNull(value))
    return mapped;
  if (!loops::dependsOnIv(value, loop))
    return value;
  Operation *def = value.getDefiningOp();
  for (Value operand : def->getOperands())
    recomputeAhead(b, operand, loop, ahead);
  Operation *clone = b.clone(*def, ahead);
  return clone->getResult(cast<OpResult>(value).getResultNumber());
}

/// A 1-D, in-bounds, unmasked transfer on a memref along its last
/// dimension: a plain vector load or store.
template <typename TransferOp> bool isPlainTransfer(TransferOp op) {
  return isa<MemRefType>(op.getShapedType()) && !op.getMask() &&
         op.getVectorType().getRank() == 1 &&
         op.getPermutationMap().isMinorIdentity() && op.getInBoundsValues()[0];
}

/// Whether the element of `memref` at `indices` lies at a multiple of
/// `bytes` (an i1).
Value alignedAt(OpBuilder &b, Location loc, Value memref, ValueRange indices,
                int64_t bytes) {
  auto meta = memref::ExtractStridedMetadataOp::create(b, loc, memref);
  Value offset = meta.getOffset();
  for (auto [index, stride] : llvm::zip(indices, meta.getStrides()))
    offset = arith::AddIOp::create(
        b, loc, offset, arith::MulIOp::create(b, loc, index, stride));
  // The tagged loops store f32 or f64: convert-recur-to-loops streams no
  // other element type.
  int64_t width =
      *loops::elementBytes(cast<MemRefType>(memref.getType()).getElementType());
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, memref);
  Value address = arith::AddIOp::create(
      b, loc, base,
      arith::MulIOp::create(b, loc, offset,
                            arith::ConstantIndexOp::create(b, loc, width)));
  Value rem = arith::RemUIOp::create(
      b, loc, address, arith::ConstantIndexOp::create(b, loc, bytes));
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, rem,
                               arith::ConstantIndexOp::create(b, loc, 0));
}

/// Steps ahead that the loads of a tagged loop prefetch: one, as far as a
/// thread's share of a 4 KiB row goes at this machine's bandwidth (two and
/// four measured no faster, docs/performance.md).
constexpr int64_t kPrefetchSteps = 1;

void streamStores(scf::ForOp loop) {
  OpBuilder b(loop.getContext());
  SmallVector<vector::TransferReadOp> reads;
  SmallVector<vector::TransferWriteOp> writes;
  loop.getBody()->walk([&](Operation *op) {
    if (auto read = dyn_cast<vector::TransferReadOp>(op))
      if (isPlainTransfer(read))
        reads.push_back(read);
    if (auto write = dyn_cast<vector::TransferWriteOp>(op))
      if (isPlainTransfer(write))
        writes.push_back(write);
  });
  auto dependsOnTime = [&](ValueRange indices) {
    return llvm::any_of(
        indices, [&](Value index) { return loops::dependsOnIv(index, loop); });
  };

  // The induction variable kPrefetchSteps steps on, at most the last step.
  Location loc = loop.getLoc();
  b.setInsertionPointToStart(loop.getBody());
  Value last =
      arith::SubIOp::create(b, loc, loop.getUpperBound(), loop.getStep());
  Value on = arith::AddIOp::create(
      b, loc, loop.getInductionVar(),
      arith::MulIOp::create(
          b, loc, loop.getStep(),
          arith::ConstantIndexOp::create(b, loc, kPrefetchSteps)));
  IRMapping ahead;
  ahead.map(loop.getInductionVar(),
            arith::MinSIOp::create(b, loc, on, last).getResult());

  // Loads; those of the streamed inputs prefetch what they read
  // kPrefetchSteps steps later: the hardware's prefetchers restart at every
  // 4 KiB page, and a thread's share of a row is often less than one.
  bool contiguous = loop->hasAttr(kContiguousStreamAttrName);
  for (vector::TransferReadOp read : reads) {
    b.setInsertionPoint(read);
    if (!contiguous && dependsOnTime(read.getIndices())) {
      SmallVector<Value> indices;
      for (Value index : read.getIndices())
        indices.push_back(recomputeAhead(b, index, loop, ahead));
      memref::PrefetchOp::create(b, read.getLoc(), read.getBase(), indices,
                                 /*isWrite=*/false, /*localityHint=*/3,
                                 /*isDataCache=*/true);
    }
    Value load = vector::LoadOp::create(b, read.getLoc(), read.getVectorType(),
                                        read.getBase(), read.getIndices());
    read.replaceAllUsesWith(load);
    read.erase();
  }

  // Stores: non-temporal where each element is written once.
  for (vector::TransferWriteOp write : writes) {
    Location wl = write.getLoc();
    b.setInsertionPoint(write);
    if (!dependsOnTime(write.getIndices())) {
      vector::StoreOp::create(b, wl, write.getVector(), write.getBase(),
                              write.getIndices());
      write.erase();
      continue;
    }
    VectorType type = write.getVectorType();
    int64_t bytes = type.getNumElements() * type.getElementTypeBitWidth() / 8;
    Value aligned =
        alignedAt(b, wl, write.getBase(), write.getIndices(), bytes);
    scf::IfOp::create(
        b, wl, aligned,
        [&](OpBuilder &tb, Location tl) {
          vector::StoreOp::create(tb, tl, write.getVector(), write.getBase(),
                                  write.getIndices(), /*nontemporal=*/true,
                                  llvm::Align(bytes));
          scf::YieldOp::create(tb, tl);
        },
        [&](OpBuilder &eb, Location el) {
          vector::StoreOp::create(eb, el, write.getVector(), write.getBase(),
                                  write.getIndices(), /*nontemporal=*/true);
          scf::YieldOp::create(eb, el);
        });
    write.erase();
  }
  b.setInsertionPointAfter(loop);
  LLVM::FenceOp::create(b, loop.getLoc(), LLVM::AtomicOrdering::seq_cst);
  loop->removeAttr(kStreamStoresAttrName);
  loop->removeAttr(kContiguousStreamAttrName);
}

struct RecurStreamStoresPass
    : recur::impl::RecurStreamStoresBase<RecurStreamStoresPass> {
  void runOnOperation() override {
    SmallVector<scf::ForOp> tagged;
    getOperation()->walk([&](scf::ForOp loop) {
      if (loop->hasAttr(kStreamStoresAttrName))
        tagged.push_back(loop);
    });
    for (scf::ForOp loop : tagged)
      streamStores(loop);
  }
};

} // namespace
