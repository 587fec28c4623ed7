//===- GpuOffload.cpp - bufferized layer functions onto the GPU -----------===//
//
// Part of the Recur project.
//
// recur-gpu-offload: the host keeps allocation, index arithmetic and the
// loops around parallel work; parallel loops become launches of blocks of
// `block-threads` threads over their flattened iterations, and the
// remaining code that touches memory runs in single-thread launches (see
// Passes.td).
//
//===----------------------------------------------------------------------===//

#include "recur/Conversion/RecurToGPU/RecurToGPU.h"
#include "recur/Conversion/RecurToLoops/RecurToLoops.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::recur {
#define GEN_PASS_DEF_RECURGPUOFFLOAD
#include "recur/Conversion/Passes.h.inc"
} // namespace mlir::recur

using namespace mlir;
using namespace mlir::recur;

namespace {

/// Where an op of a host block runs.
enum class Place {
  /// On the host: allocation, deallocation, index arithmetic, terminators.
  Host,
  /// A parallel loop: one launch of many threads.
  Parallel,
  /// A host-level copy: one launch of many threads.
  Copy,
  /// A loop or branch kept on the host, its body placed op by op.
  HostControl,
  /// In a single-thread launch with its neighbours.
  Device,
};

bool containsParallelWork(Operation *op) {
  return op
      ->walk([](Operation *inner) {
        return isa<scf::ParallelOp, memref::CopyOp>(inner)
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      })
      .wasInterrupted();
}

/// Types the host may carry through a loop it keeps: buffers and integers.
bool isHostCarried(Type type) {
  return isa<BaseMemRefType, IndexType, IntegerType>(type);
}

/// Builds loops copying `source` into `target` (same shape) at `b`'s
/// insertion point: one scf.parallel over all dimensions, or a nest of
/// scf.for when `parallel` is false.
Operation *buildCopyLoops(OpBuilder &b, Location loc, Value source,
                          Value target, bool parallel) {
  auto type = cast<MemRefType>(source.getType());
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  if (type.getRank() == 0) {
    Value v = memref::LoadOp::create(b, loc, source, ValueRange{});
    return memref::StoreOp::create(b, loc, v, target, ValueRange{});
  }
  SmallVector<Value> lbs, ubs, steps;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    lbs.push_back(zero);
    ubs.push_back(memref::DimOp::create(b, loc, source, d));
    steps.push_back(one);
  }
  auto body = [&](OpBuilder &nb, Location nl, ValueRange ivs) {
    Value v = memref::LoadOp::create(nb, nl, source, ivs);
    memref::StoreOp::create(nb, nl, v, target, ivs);
  };
  if (parallel)
    return scf::ParallelOp::create(b, loc, lbs, ubs, steps, body);
  scf::LoopNest nest = scf::buildLoopNest(
      b, loc, lbs, ubs, steps,
      [&](OpBuilder &nb, Location nl, ValueRange ivs) { body(nb, nl, ivs); });
  return nest.loops.front();
}

class GpuOffload : public recur::impl::RecurGpuOffloadBase<GpuOffload> {
public:
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    // Layer functions are public; private ones are the host's helpers
    // (the deallocation pipeline's dealloc_helper).
    if (func.isExternal() || func.isPrivate())
      return;
    keepHelperListsOnHost(func);
    if (failed(checkWarpShuffles(func)) || failed(checkWarpTiles(func)) ||
        failed(placeBlock(func.getBody().front())) ||
        failed(offloadBlock(func.getBody().front())))
      return signalPassFailure();
    for (gpu::LaunchOp launch : launches)
      if (failed(finishLaunch(launch)))
        return signalPassFailure();
    // The fences LLVM's NVPTX backend leaves out of acquire-release
    // atomics, where the form that made them asked (kFenceBeforeAttrName,
    // kFenceAfterAttrName), over the device's threads (fence.acq_rel.gpu:
    // the blocks of one launch).
    func.walk([](Operation *op) {
      bool before = op->hasAttr(kFenceBeforeAttrName);
      bool after = op->hasAttr(kFenceAfterAttrName);
      if (!op->getParentOfType<gpu::LaunchOp>() || (!before && !after))
        return;
      OpBuilder b(op);
      if (before)
        LLVM::FenceOp::create(b, op->getLoc(), LLVM::AtomicOrdering::acq_rel,
                              "device");
      b.setInsertionPointAfter(op);
      if (after)
        LLVM::FenceOp::create(b, op->getLoc(), LLVM::AtomicOrdering::acq_rel,
                              "device");
    });
  }

private:
  DenseMap<Operation *, Place> places;
  /// Values device code computes: the host cannot read them.
  DenseSet<Value> deviceValues;
  /// Host memory: the host's memref.alloca buffers (the deallocation
  /// pipeline's lists of buffers and ownership flags) and views of them.
  DenseSet<Value> hostBuffers;
  /// The launches made, to finish once every op is placed.
  SmallVector<gpu::LaunchOp> launches;

  bool isHostBuffer(Value v) const { return hostBuffers.contains(v); }

  /// The threads per block of the launches of parallel loops.
  int64_t threadsPerBlock() const {
    return std::clamp<int64_t>(blockThreads, 1, 1024);
  }

  /// A gpu.shuffle (the warp form of a linear scan) exchanges values
  /// between the lanes of a warp, so it must stand in an outermost
  /// scf.parallel whose last dimension is the lanes, 0 to kWarpLanes step
  /// 1: its launch makes them the lanes of one warp (the last dimension
  /// varies fastest) when a block is a whole number of warps. Anywhere else
  /// it would exchange values with threads doing other work. (That the
  /// lanes are that dimension, and not a loop run one lane after another
  /// inside it, recur-parallelize-loops makes sure; a shuffle that lands in
  /// a single-thread launch is refused there, in flushGroup.)
  LogicalResult checkWarpShuffles(func::FuncOp func) {
    WalkResult result = func.walk([&](gpu::ShuffleOp shuffle) {
      auto loop = shuffle->getParentOfType<scf::ParallelOp>();
      unsigned last = loop ? loop.getNumLoops() - 1 : 0;
      if (!loop || loop->getParentOfType<scf::ParallelOp>() ||
          !isConstantIntValue(loop.getLowerBound()[last], 0) ||
          !isConstantIntValue(loop.getStep()[last], 1) ||
          !isConstantIntValue(loop.getUpperBound()[last], kWarpLanes)) {
        shuffle.emitError("cannot run on the GPU: a warp shuffle outside the "
                          "last dimension of a parallel loop over the ")
            << kWarpLanes << " lanes of a warp";
        return WalkResult::interrupt();
      }
      if (threadsPerBlock() % kWarpLanes != 0) {
        shuffle.emitError("cannot run on the GPU: a warp shuffle in blocks of ")
            << threadsPerBlock() << " threads, not a multiple of the "
            << kWarpLanes << " lanes of a warp";
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    return failure(result.wasInterrupted());
  }

  /// The buffers of static shape that `func` allocates and passes to a
  /// private function (a host helper: the deallocation pipeline's
  /// dealloc_helper, whose lists of buffers and ownership flags decide
  /// which buffers a function frees) become host stack buffers, so that
  /// the helper, and the deallocations it decides, stay on the host: in
  /// device memory they would put the decision in device code, where a
  /// deallocation cannot be made. They are allocated once, at the top of
  /// `func` (each use fills them before the helper reads them), so that a
  /// host loop does not grow the stack.
  void keepHelperListsOnHost(func::FuncOp func) {
    auto module = func->getParentOfType<ModuleOp>();
    SmallVector<memref::AllocOp> lists;
    func.walk([&](func::CallOp call) {
      auto callee = module.lookupSymbol<func::FuncOp>(call.getCallee());
      if (!callee || !callee.isPrivate() || callee.isExternal())
        return;
      for (Value operand : call.getOperands()) {
        while (auto cast = operand.getDefiningOp<memref::CastOp>())
          operand = cast.getSource();
        auto alloc = operand.getDefiningOp<memref::AllocOp>();
        if (alloc && alloc.getType().hasStaticShape() &&
            !llvm::is_contained(lists, alloc))
          lists.push_back(alloc);
      }
    });
    for (memref::AllocOp alloc : lists) {
      for (Operation *user : llvm::make_early_inc_range(alloc->getUsers()))
        if (isa<memref::DeallocOp>(user))
          user->erase();
      OpBuilder b(&func.getBody().front(), func.getBody().front().begin());
      auto alloca = memref::AllocaOp::create(b, alloc.getLoc(), alloc.getType(),
                                             alloc.getAlignmentAttr());
      alloc.replaceAllUsesWith(alloca.getResult());
      alloc.erase();
    }
  }

  /// Whether `op` or an op nested in it reads or writes device memory
  /// (anything but host buffers; allocation and deallocation do not
  /// count). Ops that say nothing of their effects count, except calls
  /// whose buffers are all host buffers (calls of host helpers).
  bool touchesDeviceMemory(Operation *op) const {
    return op
        ->walk([&](Operation *inner) {
          if (isa<memref::AllocOp, memref::AllocaOp, memref::DeallocOp>(inner))
            return WalkResult::advance();
          if (inner->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
            return WalkResult::advance();
          if (isa<func::CallOp>(inner))
            return llvm::all_of(inner->getOperands(),
                                [&](Value v) {
                                  return !isa<BaseMemRefType>(v.getType()) ||
                                         isHostBuffer(v);
                                })
                       ? WalkResult::advance()
                       : WalkResult::interrupt();
          auto iface = dyn_cast<MemoryEffectOpInterface>(inner);
          if (!iface)
            return WalkResult::interrupt();
          SmallVector<MemoryEffects::EffectInstance> effects;
          iface.getEffects(effects);
          for (const MemoryEffects::EffectInstance &e : effects)
            if (isa<MemoryEffects::Read, MemoryEffects::Write>(e.getEffect()) &&
                !(e.getValue() && isHostBuffer(e.getValue())))
              return WalkResult::interrupt();
          return WalkResult::advance();
        })
        .wasInterrupted();
  }

  /// Decides where each op of `block` runs, recursing into host control.
  LogicalResult placeBlock(Block &block) {
    for (Operation &op : block) {
      bool deviceOperand = llvm::any_of(
          op.getOperands(), [&](Value v) { return deviceValues.contains(v); });
      Place place = placeOf(op, deviceOperand);
      if (place == Place::HostControl) {
        for (Region &region : op.getRegions())
          for (Block &inner : region)
            if (failed(placeBlock(inner)))
              return failure();
      }
      if (place != Place::Device && deviceOperand)
        return op.emitError("cannot run on the GPU: the host needs a value "
                            "that device code computes here");
      if (place == Place::Device)
        for (Value result : op.getResults())
          deviceValues.insert(result);
      // The host's allocas, and views of them, are host buffers.
      if (isa<memref::AllocaOp>(op) ||
          (isa<ViewLikeOpInterface>(op) && op.getNumOperands() > 0 &&
           isHostBuffer(op.getOperand(0))))
        for (Value result : op.getResults())
          hostBuffers.insert(result);
      places[&op] = place;
    }
    return success();
  }

  Place placeOf(Operation &op, bool deviceOperand) const {
    if (op.hasTrait<OpTrait::IsTerminator>() ||
        isa<memref::AllocOp, memref::DeallocOp>(op))
      return Place::Host;
    if (isa<memref::AllocaOp>(op))
      return Place::Host;
    if (auto loop = dyn_cast<scf::ParallelOp>(op))
      return loop.getNumResults() == 0 && !deviceOperand ? Place::Parallel
                                                         : Place::Device;
    // A copy of one element (rank 0) has no loop to spread: it joins the
    // single-thread launches.
    if (auto copy = dyn_cast<memref::CopyOp>(op))
      return copy.getSource().getType().getRank() > 0 ? Place::Copy
                                                      : Place::Device;
    if (isa<scf::ForOp, scf::IfOp>(op) && !deviceOperand &&
        (containsParallelWork(&op) || !touchesDeviceMemory(&op)) &&
        llvm::all_of(op.getResultTypes(), isHostCarried))
      return Place::HostControl;
    if (!deviceOperand && op.getNumRegions() == 0 && !touchesDeviceMemory(&op))
      return Place::Host;
    return Place::Device;
  }

  /// Replaces the ops of `block` by launches as placed.
  LogicalResult offloadBlock(Block &block) {
    SmallVector<Operation *> group;
    for (Operation &op : llvm::make_early_inc_range(block)) {
      Place place = places.lookup(&op);
      if (place == Place::Device) {
        group.push_back(&op);
        continue;
      }
      // Host ops between device ops stay before the group's launch (they
      // never use what the group computes); anything with an order to keep
      // against device work ends the group.
      bool ordered = place != Place::Host || isa<memref::DeallocOp>(op) ||
                     op.hasTrait<OpTrait::IsTerminator>();
      if (!ordered)
        continue;
      if (failed(flushGroup(group)))
        return failure();
      switch (place) {
      case Place::Parallel: {
        auto loop = cast<scf::ParallelOp>(op);
        if (failed(loop->hasAttr(kGpuBlockAttrName) ? launchBlocks(loop)
                                                    : launchParallel(loop)))
          return failure();
        break;
      }
      case Place::Copy: {
        auto copy = cast<memref::CopyOp>(op);
        OpBuilder b(copy);
        auto loop = cast<scf::ParallelOp>(buildCopyLoops(
            b, copy.getLoc(), copy.getSource(), copy.getTarget(), true));
        copy.erase();
        if (failed(launchParallel(loop)))
          return failure();
        break;
      }
      case Place::HostControl:
        for (Region &region : op.getRegions())
          for (Block &inner : region)
            if (failed(offloadBlock(inner)))
              return failure();
        break;
      default:
        break;
      }
    }
    return flushGroup(group);
  }

  /// Moves `group` (consecutive device ops) into a single-thread launch at
  /// the position of its last op. Its results used later go through
  /// one-element buffers.
  LogicalResult flushGroup(SmallVectorImpl<Operation *> &group) {
    if (group.empty())
      return success();
    for (Operation *op : group) {
      WalkResult shuffled = op->walk([](gpu::ShuffleOp shuffle) {
        shuffle.emitError("cannot run on the GPU: a warp shuffle in "
                          "single-thread device code");
        return WalkResult::interrupt();
      });
      if (shuffled.wasInterrupted())
        return failure();
    }
    Operation *last = group.back();
    Location loc = last->getLoc();
    OpBuilder b(last->getBlock(), std::next(last->getIterator()));
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    auto launch = gpu::LaunchOp::create(b, loc, one, one, one, one, one, one);
    Block &body = launch.getBody().front();
    b.setInsertionPointToEnd(&body);
    auto terminator = gpu::TerminatorOp::create(b, loc);

    DenseSet<Operation *> members(group.begin(), group.end());
    auto inGroup = [&](Operation *user) {
      for (Operation *o = user; o; o = o->getParentOp())
        if (members.contains(o))
          return true;
      return false;
    };
    for (Operation *op : group)
      op->moveBefore(terminator);
    // Spill the results used outside through one-element buffers, stored
    // at the end of the launch and loaded where they are used.
    for (Operation *op : group) {
      for (Value result : op->getResults()) {
        SmallVector<OpOperand *> outside;
        for (OpOperand &use : result.getUses())
          if (!inGroup(use.getOwner()))
            outside.push_back(&use);
        if (outside.empty())
          continue;
        if (!MemRefType::isValidElementType(result.getType()))
          return op->emitError("cannot run on the GPU: a value of type ")
                 << result.getType() << " crosses between kernels";
        auto bufferType = MemRefType::get({1}, result.getType());
        OpBuilder hb(launch);
        Value buffer = memref::AllocOp::create(hb, loc, bufferType);
        Value zero = arith::ConstantIndexOp::create(hb, loc, 0);
        OpBuilder sb(terminator);
        memref::StoreOp::create(sb, loc, result, buffer, zero);
        for (OpOperand *use : outside) {
          OpBuilder lb(use->getOwner());
          Value loaded = memref::LoadOp::create(lb, loc, buffer, zero);
          places[loaded.getDefiningOp()] = Place::Device;
          use->set(loaded);
        }
        Block *host = launch->getBlock();
        OpBuilder db(host->getTerminator());
        memref::DeallocOp::create(db, loc, buffer);
        places[buffer.getDefiningOp()] = Place::Host;
      }
    }
    launches.push_back(launch);
    group.clear();
    return success();
  }

  /// The iteration counts of each dimension of `loop` (at least `zero`)
  /// and their product, at `b`.
  static std::pair<SmallVector<Value>, Value>
  iterationCounts(OpBuilder &b, scf::ParallelOp loop, Value zero) {
    Location loc = loop.getLoc();
    Value total = arith::ConstantIndexOp::create(b, loc, 1);
    SmallVector<Value> counts;
    for (auto [lb, ub, step] : llvm::zip(
             loop.getLowerBound(), loop.getUpperBound(), loop.getStep())) {
      Value span = arith::SubIOp::create(b, loc, ub, lb);
      Value n = arith::CeilDivSIOp::create(b, loc, span, step);
      n = arith::MaxSIOp::create(b, loc, n, zero);
      counts.push_back(n);
      total = arith::MulIOp::create(b, loc, total, n);
    }
    return {counts, total};
  }

  /// Maps the induction variables of `loop` to the iteration `flat` of its
  /// flattened iterations (`counts` a dimension), at `b`. The last
  /// dimension varies fastest.
  static void mapIterations(OpBuilder &b, scf::ParallelOp loop, Value flat,
                            ArrayRef<Value> counts, IRMapping &mapping) {
    Location loc = loop.getLoc();
    Value rest = flat;
    unsigned rank = loop.getNumLoops();
    SmallVector<Value> indices(rank);
    for (unsigned k = rank; k-- > 0;) {
      Value i = k == 0 ? rest : arith::RemSIOp::create(b, loc, rest, counts[k]);
      if (k != 0)
        rest = arith::DivSIOp::create(b, loc, rest, counts[k]);
      Value scaled = arith::MulIOp::create(b, loc, i, loop.getStep()[k]);
      indices[k] =
          arith::AddIOp::create(b, loc, loop.getLowerBound()[k], scaled);
    }
    for (unsigned k = 0; k < rank; ++k)
      mapping.map(loop.getInductionVars()[k], indices[k]);
  }

  /// A launch of `grid` blocks of `threads` threads (one dimension each)
  /// under an scf.if on `total` (iterations) > `zero`, at `b`; leaves `b`
  /// before the launch body's terminator.
  static gpu::LaunchOp guardedLaunch(OpBuilder &b, Location loc, Value total,
                                     Value zero, Value grid, Value threads) {
    Value any =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sgt, total, zero);
    auto guard = scf::IfOp::create(b, loc, any, /*withElseRegion=*/false);
    b.setInsertionPointToStart(guard.thenBlock());
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    auto launch =
        gpu::LaunchOp::create(b, loc, grid, one, one, threads, one, one);
    Block &body = launch.getBody().front();
    b.setInsertionPointToEnd(&body);
    auto terminator = gpu::TerminatorOp::create(b, loc);
    b.setInsertionPoint(terminator);
    return launch;
  }

  /// Replaces `loop` by a launch over its flattened iterations.
  LogicalResult launchParallel(scf::ParallelOp loop) {
    Location loc = loop.getLoc();
    OpBuilder b(loop);
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    auto [counts, total] = iterationCounts(b, loop, zero);
    Value threads = arith::ConstantIndexOp::create(b, loc, threadsPerBlock());
    Value blocks = arith::CeilDivSIOp::create(b, loc, total, threads);
    gpu::LaunchOp launch = guardedLaunch(b, loc, total, zero, blocks, threads);
    Value flat = arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, launch.getBlockIds().x, threads),
        launch.getThreadIds().x);
    Value inRange =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, flat, total);
    auto inside = scf::IfOp::create(b, loc, inRange, false);
    b.setInsertionPointToStart(inside.thenBlock());
    // The last dimension varies fastest, so neighbouring threads touch
    // neighbouring elements of row-major buffers.
    IRMapping mapping;
    mapIterations(b, loop, flat, counts, mapping);
    for (Operation &op : loop.getBody()->without_terminator())
      b.clone(op, mapping);
    loop.erase();
    launches.push_back(launch);
    return success();
  }

  /// The threads of the blocks of `loop` (kGpuBlockAttrName): the largest
  /// trip count of its loops tagged kBlockThreadsAttrName, each from 0 to a
  /// constant with step 1, at block level (in its body or in loops and
  /// branches of it that hold such loops); none elsewhere.
  FailureOr<int64_t> threadsOfBlocks(scf::ParallelOp loop) {
    int64_t threads = 0;
    WalkResult result = loop.getBody()->walk([&](scf::ForOp inner) {
      if (!inner->hasAttr(kBlockThreadsAttrName))
        return WalkResult::advance();
      std::optional<int64_t> lb = getConstantIntValue(inner.getLowerBound());
      std::optional<int64_t> ub = getConstantIntValue(inner.getUpperBound());
      std::optional<int64_t> step = getConstantIntValue(inner.getStep());
      bool blockLevel = true;
      for (Operation *p = inner->getParentOp(); p != loop; p = p->getParentOp())
        blockLevel &=
            isa<scf::ForOp, scf::IfOp>(p) && !p->hasAttr(kBlockThreadsAttrName);
      if (!lb || *lb != 0 || !step || *step != 1 || !ub || *ub < 1 ||
          *ub > 1024 || !blockLevel) {
        inner.emitError("cannot run on the GPU: the threads of a block must "
                        "be a loop from 0 to at most 1024 step 1 at the "
                        "block's level");
        return WalkResult::interrupt();
      }
      threads = std::max(threads, *ub);
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      return failure();
    return threads;
  }

  /// Replaces `loop` (kGpuBlockAttrName) by a launch of a block per
  /// iteration (flattened, the last dimension fastest), of as many threads
  /// as its widest loop of threads (threadsOfBlocks). Its body runs in every
  /// thread (buildBlockLevel): the loops of threads become a guarded
  /// iteration a thread, between barriers; the ops that write memory run in
  /// the first thread alone, their results shared through block memory;
  /// the rest (index arithmetic, reads, the control flow around the loops
  /// of threads) in every thread alike; its buffers of static shape are
  /// block memory (workgroup attributions).
  LogicalResult launchBlocks(scf::ParallelOp loop) {
    FailureOr<int64_t> threadCount = threadsOfBlocks(loop);
    if (failed(threadCount))
      return failure();
    // A warp's tile ops (tensor-core products) take the whole warp, and
    // more warps would each do them again.
    WalkResult tiles = loop.getBody()->walk([&](Operation *op) {
      if (!isWarpTileOp(op) || *threadCount == kWarpLanes)
        return WalkResult::advance();
      op->emitError("cannot run on the GPU: a warp's matrix tiles in blocks "
                    "of ")
          << *threadCount << " threads (they take blocks of one warp, "
          << kWarpLanes << ")";
      return WalkResult::interrupt();
    });
    if (tiles.wasInterrupted())
      return failure();
    if (*threadCount == 0) {
      loop->removeAttr(kGpuBlockAttrName);
      return launchParallel(loop);
    }
    Location loc = loop.getLoc();
    OpBuilder b(loop);
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    auto [counts, total] = iterationCounts(b, loop, zero);
    Value threads = arith::ConstantIndexOp::create(b, loc, *threadCount);
    gpu::LaunchOp launch = guardedLaunch(b, loc, total, zero, total, threads);
    IRMapping mapping;
    mapIterations(b, loop, launch.getBlockIds().x, counts, mapping);
    BlockLevel level{launch, launch.getThreadIds().x, mapping};
    if (failed(buildBlockLevel(level, *loop.getBody(), b)))
      return failure();
    loop.erase();
    launches.push_back(launch);
    return success();
  }

  /// What buildBlockLevel builds into: the launch, this thread's index, the
  /// mapping of the loop's values to the launch's, and whether the last op
  /// built is a barrier.
  struct BlockLevel {
    gpu::LaunchOp launch;
    Value thread;
    IRMapping &mapping;
    bool barrier = false;
  };

  void barrier(BlockLevel &level, OpBuilder &b, Location loc) {
    if (!level.barrier)
      gpu::BarrierOp::create(b, loc);
    level.barrier = true;
  }

  /// Builds the ops of `block` (the block level of a kGpuBlockAttrName
  /// loop) at `b` for every thread of the block (see launchBlocks).
  LogicalResult buildBlockLevel(BlockLevel &level, Block &block, OpBuilder &b) {
    auto containsThreads = [](Operation *op) {
      return op
          ->walk([](scf::ForOp inner) {
            return inner->hasAttr(kBlockThreadsAttrName)
                       ? WalkResult::interrupt()
                       : WalkResult::advance();
          })
          .wasInterrupted();
    };
    size_t skip = 0;
    for (Operation &op : block.without_terminator()) {
      if (skip > 0) {
        --skip;
        continue;
      }
      Location loc = op.getLoc();
      auto loop = dyn_cast<scf::ForOp>(op);
      // The block's threads: thread i runs iteration i, between barriers.
      if (loop && loop->hasAttr(kBlockThreadsAttrName)) {
        barrier(level, b, loc);
        Value inRange = arith::CmpIOp::create(
            b, loc, arith::CmpIPredicate::ult, level.thread,
            level.mapping.lookupOrDefault(loop.getUpperBound()));
        auto inside = scf::IfOp::create(b, loc, inRange, false);
        OpBuilder tb = OpBuilder::atBlockBegin(inside.thenBlock());
        level.mapping.map(loop.getInductionVar(), level.thread);
        for (auto [arg, init] :
             llvm::zip_equal(loop.getRegionIterArgs(), loop.getInitArgs()))
          level.mapping.map(arg, level.mapping.lookupOrDefault(init));
        for (Operation &inner : loop.getBody()->without_terminator())
          tb.clone(inner, level.mapping);
        // In place (recur-parallelize-loops checked): the loop's results
        // are the buffers it was given.
        for (auto [result, init] :
             llvm::zip_equal(loop.getResults(), loop.getInitArgs()))
          level.mapping.map(result, level.mapping.lookupOrDefault(init));
        level.barrier = false;
        barrier(level, b, loc);
        continue;
      }
      // Control flow around threads: every thread takes it alike (its
      // operands are computed alike in every thread).
      if (containsThreads(&op)) {
        if (loop && loop.getNumResults() == 0) {
          auto copy = scf::ForOp::create(
              b, loc, level.mapping.lookupOrDefault(loop.getLowerBound()),
              level.mapping.lookupOrDefault(loop.getUpperBound()),
              level.mapping.lookupOrDefault(loop.getStep()));
          level.mapping.map(loop.getInductionVar(), copy.getInductionVar());
          OpBuilder inner(copy.getBody()->getTerminator());
          // The loop may run no iteration: after it, only the barriers
          // before it count.
          bool before = level.barrier;
          barrier(level, inner, loc);
          if (failed(buildBlockLevel(level, *loop.getBody(), inner)))
            return failure();
          barrier(level, inner, loc);
          level.barrier = before;
          continue;
        }
        if (auto branch = dyn_cast<scf::IfOp>(op);
            branch && branch.getNumResults() == 0) {
          auto copy = scf::IfOp::create(
              b, loc, level.mapping.lookupOrDefault(branch.getCondition()),
              /*withElseRegion=*/!branch.getElseRegion().empty());
          bool before = level.barrier;
          OpBuilder tb(copy.thenBlock()->getTerminator());
          if (failed(buildBlockLevel(level, *branch.thenBlock(), tb)))
            return failure();
          barrier(level, tb, loc);
          if (!branch.getElseRegion().empty()) {
            level.barrier = before;
            OpBuilder eb(copy.elseBlock()->getTerminator());
            if (failed(buildBlockLevel(level, *branch.elseBlock(), eb)))
              return failure();
            barrier(level, eb, loc);
          }
          level.barrier = false;
          continue;
        }
        return op.emitError("cannot run on the GPU: the threads of a block "
                            "inside a loop or branch that carries values");
      }
      // A warp's tile ops, and the loops of them: every thread, together
      // (one that writes between barriers: after the threads' last
      // writes, before anyone's reads after it).
      if (takesWholeWarp(&op)) {
        WalkResult other = op.walk([](Operation *inner) {
          return inner->getNumRegions() == 0 && writesMemory(inner) &&
                         !isWarpTileOp(inner)
                     ? WalkResult::interrupt()
                     : WalkResult::advance();
        });
        if (other.wasInterrupted())
          return op.emitError("cannot run on the GPU: a loop or branch of a "
                              "warp's matrix tiles that writes other memory");
        bool writes = writesMemory(&op);
        if (writes)
          barrier(level, b, loc);
        b.clone(op, level.mapping);
        if (!isMemoryEffectFree(&op))
          level.barrier = false;
        if (writes)
          barrier(level, b, loc);
        continue;
      }
      // The block's buffers: block memory.
      if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
        MemRefType type = alloc.getType();
        if (!type.hasStaticShape() || !type.getLayout().isIdentity())
          return alloc.emitError("cannot run on the GPU: a block's buffer ")
                 << type << " of dynamic shape";
        level.mapping.map(
            alloc.getResult(),
            level.launch.addWorkgroupAttribution(workgroupType(type), loc));
        continue;
      }
      if (auto dealloc = dyn_cast<memref::DeallocOp>(op)) {
        if (!llvm::is_contained(
                level.launch.getWorkgroupAttributions(),
                level.mapping.lookupOrDefault(dealloc.getMemref())))
          return op.emitError("cannot run on the GPU: a block frees a buffer "
                              "it did not allocate");
        continue;
      }
      if (!writesMemory(&op)) {
        b.clone(op, level.mapping);
        // A read must be over before the next writes.
        if (!isMemoryEffectFree(&op))
          level.barrier = false;
        continue;
      }
      // Writes: the first thread alone, with the ops after them that write
      // memory or touch none, their results used later shared.
      SmallVector<Operation *> run{&op};
      for (Operation *next = op.getNextNode();
           next && !next->hasTrait<OpTrait::IsTerminator>() &&
           !isa<memref::AllocOp, memref::DeallocOp>(next) &&
           !containsThreads(next) && !takesWholeWarp(next) &&
           (writesMemory(next) || isMemoryEffectFree(next));
           next = next->getNextNode())
        run.push_back(next);
      barrier(level, b, loc);
      Value zero = arith::ConstantIndexOp::create(b, loc, 0);
      Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                          level.thread, zero);
      auto single = scf::IfOp::create(b, loc, first, false);
      OpBuilder sb(single.thenBlock()->getTerminator());
      DenseSet<Operation *> members(run.begin(), run.end());
      auto inRun = [&](Operation *user) {
        for (Operation *o = user; o; o = o->getParentOp())
          if (members.contains(o))
            return true;
        return false;
      };
      SmallVector<std::pair<Value, Value>> shared;
      for (Operation *member : run)
        sb.clone(*member, level.mapping);
      for (Operation *member : run) {
        for (Value result : member->getResults()) {
          if (llvm::all_of(result.getUsers(), inRun))
            continue;
          if (!isa<IndexType, IntegerType, FloatType, ComplexType>(
                  result.getType()))
            return member->emitError("cannot run on the GPU: a value of type ")
                   << result.getType() << " shared by a block's threads";
          Value slot = level.launch.addWorkgroupAttribution(
              workgroupType(MemRefType::get({1}, result.getType())), loc);
          memref::StoreOp::create(sb, loc, level.mapping.lookup(result), slot,
                                  zero);
          shared.push_back({result, slot});
        }
      }
      level.barrier = false;
      barrier(level, b, loc);
      // Only a later run writes a slot again, after a barrier.
      for (auto [result, slot] : shared)
        level.mapping.map(result, memref::LoadOp::create(b, loc, slot, zero));
      // The loop's iterator skips the run's other ops.
      skip = run.size() - 1;
    }
    return success();
  }

  /// `type` in block (workgroup) memory.
  static MemRefType workgroupType(MemRefType type) {
    return MemRefType::get(
        type.getShape(), type.getElementType(), MemRefLayoutAttrInterface(),
        gpu::AddressSpaceAttr::get(
            type.getContext(), gpu::GPUDialect::getWorkgroupAddressSpace()));
  }

  /// A warp's tile ops run only at the level of a block form's blocks
  /// (each thread of a plain launch would take them as its own warp's),
  /// in blocks of one warp (launchBlocks).
  LogicalResult checkWarpTiles(func::FuncOp func) {
    WalkResult result = func.walk([](Operation *op) {
      // A constant (the zeros a tile's sums start from) may be hoisted
      // anywhere: the launch takes it in (gpu-launch-sink-index-computations).
      if (!isWarpTileOp(op) || op->hasTrait<OpTrait::ConstantLike>())
        return WalkResult::advance();
      Operation *parent = op->getParentOp();
      while (parent && isa<scf::ForOp, scf::IfOp>(parent) &&
             !parent->hasAttr(kBlockThreadsAttrName))
        parent = parent->getParentOp();
      auto blocks = dyn_cast_or_null<scf::ParallelOp>(parent);
      if (blocks && blocks->hasAttr(kGpuBlockAttrName))
        return WalkResult::advance();
      op->emitError("cannot run on the GPU: a matrix (a warp's tile) "
                    "outside the level of a block form's blocks");
      return WalkResult::interrupt();
    });
    return failure(result.wasInterrupted());
  }

  /// Whether `op` takes or makes a matrix (a vector of rank 2): a tile of
  /// a warp's products (vector.contract, its operands' transfer_read, its
  /// result's transfer_write), which convert-vector-to-gpu makes ops that
  /// a warp's threads run together (gpu.subgroup_mma_*).
  static bool isWarpTileOp(Operation *op) {
    auto matrix = [](Type type) {
      auto vector = dyn_cast<VectorType>(type);
      return vector && vector.getRank() == 2;
    };
    return llvm::any_of(op->getOperandTypes(), matrix) ||
           llvm::any_of(op->getResultTypes(), matrix);
  }

  /// Whether the whole warp runs `op` together: a warp's tile op, or a
  /// loop or branch holding them.
  static bool takesWholeWarp(Operation *op) {
    return op
        ->walk([](Operation *inner) {
          return isWarpTileOp(inner) ? WalkResult::interrupt()
                                     : WalkResult::advance();
        })
        .wasInterrupted();
  }

  /// Whether `op` or an op nested in it writes memory (or says nothing of
  /// its effects); allocation and deallocation inside do not count.
  static bool writesMemory(Operation *op) {
    return op
        ->walk([&](Operation *inner) {
          if (isa<memref::AllocOp, memref::AllocaOp, memref::DeallocOp>(inner))
            return WalkResult::advance();
          if (inner->hasTrait<OpTrait::HasRecursiveMemoryEffects>())
            return WalkResult::advance();
          auto iface = dyn_cast<MemoryEffectOpInterface>(inner);
          if (!iface)
            return WalkResult::interrupt();
          return iface.hasEffect<MemoryEffects::Write>()
                     ? WalkResult::interrupt()
                     : WalkResult::advance();
        })
        .wasInterrupted();
  }

  /// Makes the body of `launch` valid device code: static allocations
  /// become private buffers at its top, their deallocations go, copies
  /// become loops. A deallocation of a buffer allocated outside the launch
  /// (one decided by device code: the deallocation pipeline's ownership
  /// test of a buffer that either branch of a branch may return) is an
  /// error, not a leak.
  LogicalResult finishLaunch(gpu::LaunchOp launch) {
    Block &body = launch.getBody().front();
    // Constant buffers (memref.get_global) are read where the kernel runs:
    // each launch takes its own get_global, which kernel outlining copies
    // with its global into the GPU module.
    DenseMap<Value, Value> globals;
    launch.getBody().walk([&](Operation *op) {
      for (OpOperand &use : op->getOpOperands()) {
        auto global = use.get().getDefiningOp<memref::GetGlobalOp>();
        if (!global || launch->isAncestor(global))
          continue;
        Value &local = globals[use.get()];
        if (!local) {
          OpBuilder b(&body, body.begin());
          local = b.clone(*global)->getResult(0);
        }
        use.set(local);
      }
    });
    SmallVector<Operation *> allocs, deallocs, copies;
    launch.getBody().walk([&](Operation *op) {
      if (isa<memref::AllocOp>(op))
        allocs.push_back(op);
      else if (isa<memref::DeallocOp>(op))
        deallocs.push_back(op);
      else if (isa<memref::CopyOp>(op))
        copies.push_back(op);
    });
    for (Operation *op : deallocs) {
      Value buffer = cast<memref::DeallocOp>(op).getMemref();
      if (!launch->isAncestor(buffer.getParentRegion()->getParentOp()))
        return op->emitError("cannot run on the GPU yet: device code decides "
                             "whether to free a buffer of the host's");
      op->erase();
    }
    for (Operation *op : copies) {
      auto copy = cast<memref::CopyOp>(op);
      OpBuilder b(copy);
      buildCopyLoops(b, copy.getLoc(), copy.getSource(), copy.getTarget(),
                     /*parallel=*/false);
      copy.erase();
    }
    for (Operation *op : allocs) {
      auto alloc = cast<memref::AllocOp>(op);
      if (!alloc.getType().hasStaticShape()) {
        if (failed(poolDynamicAlloc(launch, alloc)))
          return failure();
        continue;
      }
      OpBuilder b(&body, body.begin());
      auto alloca = memref::AllocaOp::create(b, alloc.getLoc(), alloc.getType(),
                                             alloc.getAlignmentAttr());
      alloc.replaceAllUsesWith(alloca.getResult());
      alloc.erase();
    }
    return success();
  }

  /// Replaces `alloc`, of dynamic shape inside `launch`, by each thread's
  /// slice of one pool the host allocates around the launch: slices of the
  /// buffer's bytes rounded up to 64, one per thread of the grid, taken
  /// with memref.view (a row-major buffer like the alloc's). The sizes must
  /// be known to the host (defined outside the launch): a per-query row of
  /// attention logits over a runtime number of keys, say.
  LogicalResult poolDynamicAlloc(gpu::LaunchOp launch, memref::AllocOp alloc) {
    MemRefType type = alloc.getType();
    std::optional<int64_t> elementBytes = byteSize(type.getElementType());
    bool hostSizes = llvm::all_of(alloc.getDynamicSizes(), [&](Value v) {
      return !launch->isAncestor(v.getParentRegion()->getParentOp());
    });
    if (!elementBytes || !hostSizes || !alloc.getSymbolOperands().empty() ||
        !type.getLayout().isIdentity())
      return alloc.emitError("cannot run on the GPU yet: a buffer of "
                             "dynamic shape ")
             << type << " allocated inside device code";
    Location loc = alloc.getLoc();
    // Host: the slice and pool sizes in bytes, the pool around the launch.
    OpBuilder hb(launch);
    Value bytes = arith::ConstantIndexOp::create(hb, loc, *elementBytes);
    unsigned dynamic = 0;
    for (int64_t size : type.getShape()) {
      Value extent = ShapedType::isDynamic(size)
                         ? alloc.getDynamicSizes()[dynamic++]
                         : arith::ConstantIndexOp::create(hb, loc, size);
      bytes = arith::MulIOp::create(hb, loc, bytes, extent);
    }
    Value align = arith::ConstantIndexOp::create(hb, loc, 64);
    Value slice = arith::MulIOp::create(
        hb, loc, arith::CeilDivSIOp::create(hb, loc, bytes, align), align);
    Value threads = arith::MulIOp::create(hb, loc, launch.getGridSizeX(),
                                          launch.getBlockSizeX());
    Value poolBytes = arith::MulIOp::create(hb, loc, slice, threads);
    auto poolType = MemRefType::get({ShapedType::kDynamic},
                                    IntegerType::get(alloc.getContext(), 8));
    Value pool = memref::AllocOp::create(hb, loc, poolType, poolBytes,
                                         alloc.getAlignmentAttr());
    OpBuilder after(launch->getBlock(), std::next(launch->getIterator()));
    memref::DeallocOp::create(after, loc, pool);
    // Device: this thread's slice.
    OpBuilder db(alloc);
    Value thread = arith::AddIOp::create(
        db, loc,
        arith::MulIOp::create(db, loc, launch.getBlockIds().x,
                              launch.getBlockSizeX()),
        launch.getThreadIds().x);
    Value shift = arith::MulIOp::create(db, loc, thread, slice);
    Value view = memref::ViewOp::create(db, loc, type, pool, shift,
                                        alloc.getDynamicSizes());
    alloc.replaceAllUsesWith(view);
    alloc.erase();
    return success();
  }

  /// Bytes of one element of a buffer the pool holds.
  static std::optional<int64_t> byteSize(Type type) {
    if (isa<IndexType>(type))
      return 8;
    if (auto complex = dyn_cast<ComplexType>(type)) {
      std::optional<int64_t> part = byteSize(complex.getElementType());
      return part ? std::optional<int64_t>(2 * *part) : std::nullopt;
    }
    if (type.isIntOrFloat())
      return llvm::divideCeil(type.getIntOrFloatBitWidth(), 8);
    return std::nullopt;
  }
};

} // namespace
