//===- RecurToLoops.h - scalar reference lowering ---------------*- C++ -*-===//
//
// Part of the Recur project.
//
//===----------------------------------------------------------------------===//

#ifndef RECUR_CONVERSION_RECURTOLOOPS_RECURTOLOOPS_H
#define RECUR_CONVERSION_RECURTOLOOPS_RECURTOLOOPS_H

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir {
class RewritePatternSet;

namespace recur {

#define GEN_PASS_DECL_CONVERTRECURTOLOOPS
#define GEN_PASS_DECL_RECURPARALLELIZELOOPS
#define GEN_PASS_DECL_RECURWORKSPACEBOUND
#define GEN_PASS_DECL_RECURDESTINATIONOUTPUTS
#define GEN_PASS_DECL_RECURSTREAMSTORES
#define GEN_PASS_DECL_RECURSTRIPFRONTENDATTRIBUTES
#define GEN_PASS_DECL_RECUROUTLINEPARALLEL
#define GEN_PASS_DECL_RECURPROMOTEACCUMULATORS
#define GEN_PASS_DECL_RECURFUSEELEMENTWISE
#define GEN_PASS_DECL_RECURINTERCHANGEREDUCTIONS
#define GEN_PASS_DECL_RECURBLOCKCONTRACTIONS
#define GEN_PASS_DECL_RECURSPLITREDUCTIONS
#include "recur/Conversion/Passes.h.inc"

/// `recur-workspace-bound` names the bound of layer function F
/// `F` + kWorkspaceSuffix.
constexpr llvm::StringLiteral kWorkspaceSuffix = "_workspace";

/// The channels one thread of a linear_scan along a dimension other than
/// the last scans together (`convert-recur-to-loops{scan-group=N}`): rows
/// of 128 suit a CPU core; a GPU wants one channel a thread.
constexpr int64_t kDefaultScanGroup = 128;
/// scan-group=0: the group chosen when the kernel runs, from the thread
/// count (the CPU pipeline's).
constexpr int64_t kScanGroupByThreads = 0;
/// The fewest steps of a chunk of the spread form
/// (`convert-recur-to-loops{scan-spread-chunk=N}`): 64 steps of f32 for each
/// of a GPU thread's 64-step loads ahead (scan-unroll-bytes=256) to repeat
/// four times.
constexpr int64_t kDefaultScanSpreadChunk = 256;

/// A unit attribute on an external function: calling it allocates no memory
/// (recur-workspace-bound takes it at its word).
constexpr llvm::StringLiteral kAllocatesNothingAttrName =
    "recur.allocates_nothing";

/// Drops the `recur.*` attributes of the LLVM dialect functions of
/// `module` (the front end's argument and result attributes, and the
/// lowering's function attributes): they have served (LayerSignature read
/// them before lowering), and LLVM has no use for them.
/// `recur-strip-front-end-attributes` as a function.
void stripFrontEndAttributes(ModuleOp module);

/// Adds the patterns that lower recur ops to scalar scf loops; `scanGroup`,
/// `scanChunk`, `streamStoreBytes`, `scanUnrollBytes`, `glaColumnThreads`,
/// `windowTiles`, `attentionProducts`, `scanSpread`, `scanSpreadChunk`,
/// `scanWarps`, `emulateWarps`, `glaProducts`, `windowOnePass`,
/// `glaColumnChunk`, `scanBlocks`, `blockAggregatesOnly`, `glaTiles` and
/// `windowWarpTiles` as the pass
/// options scan-group, scan-chunk, stream-store-bytes, scan-unroll-bytes,
/// gla-column-threads, window-tiles, attention-products, scan-spread,
/// scan-spread-chunk, scan-warps, scan-warps-emulated, gla-products,
/// window-one-pass, gla-column-chunk, scan-blocks,
/// scan-blocks-aggregates-only, gla-tiles and window-warp-tiles.
void populateRecurToLoopsPatterns(
    RewritePatternSet &patterns, int64_t scanGroup = kDefaultScanGroup,
    int64_t scanChunk = 0, int64_t streamStoreBytes = 0,
    int64_t scanUnrollBytes = 0, bool glaColumnThreads = false,
    bool windowTiles = false, bool attentionProducts = false,
    int64_t scanSpread = 0, int64_t scanSpreadChunk = kDefaultScanSpreadChunk,
    bool scanWarps = false, bool emulateWarps = false, bool glaProducts = false,
    bool windowOnePass = false, int64_t glaColumnChunk = 0,
    int64_t scanBlocks = 0, bool blockAggregatesOnly = false,
    bool glaTiles = false, bool windowWarpTiles = false);

/// The lanes of a GPU warp.
constexpr int64_t kWarpLanes = 32;

/// The unit attribute that tags the innermost loop of a nest, from 0 to
/// kWarpLanes, whose iterations are the lanes of one warp: they run
/// together and exchange values through gpu.shuffle, so the loop means
/// something only as the last dimension of a GPU launch (recur-gpu-offload
/// refuses a shuffle anywhere else). Its iterations may all write the same
/// value to one element (a warp's result); recur-parallelize-loops makes it
/// parallel whenever bufferization left it in place.
constexpr llvm::StringLiteral kWarpLanesAttrName = "recur.warp_lanes";

/// The unit attribute that tags a loop of independent iterations (it is
/// also tagged recur.parallel) each of which is one block of GPU threads
/// (linear_scan's block form, scan-blocks): in its body, the loops from 0
/// to N tagged kBlockThreadsAttrName are the block's N threads, which
/// recur-gpu-offload runs side by side with a barrier before and after
/// each; the rest of the body runs once per block (on the GPU each thread
/// computes its values, and the first thread alone writes memory, its
/// results shared); the buffers the body allocates are the block's
/// (shared memory). On the CPU the same loops run one after another.
constexpr llvm::StringLiteral kGpuBlockAttrName = "recur.gpu_block";

/// The unit attribute of a loop from 0 to N in a kGpuBlockAttrName loop:
/// its iterations are the block's threads (see there). Each iteration
/// writes only its own elements of the buffers it updates in place
/// (recur-parallelize-loops checks that), and nothing else is carried.
constexpr llvm::StringLiteral kBlockThreadsAttrName = "recur.block_threads";

/// Unit attributes of a memref.atomic_rmw that publishes a flag (before)
/// or of the loop that waits for one (after), a flag guarding values other
/// atomics write and read (the block form's statuses): memref.atomic_rmw
/// is acquire-release, but LLVM's NVPTX backend makes every atomic
/// read-modify-write relaxed, so recur-gpu-offload puts a fence (llvm.fence
/// syncscope("device") acq_rel) before or after it.
constexpr llvm::StringLiteral kFenceBeforeAttrName = "recur.fence_before";
constexpr llvm::StringLiteral kFenceAfterAttrName = "recur.fence_after";

/// The unit attribute that tags a loop over time whose stores into buffers
/// indexed by its induction variable write each element once (a scan's
/// output): recur-stream-stores makes them non-temporal.
constexpr llvm::StringLiteral kStreamStoresAttrName = "recur.stream_stores";

/// A unit attribute beside kStreamStoresAttrName: the loop reads each input
/// as one contiguous stream (linear_scan's few-channels form), which the
/// hardware prefetchers follow, so recur-stream-stores adds no prefetches.
constexpr llvm::StringLiteral kContiguousStreamAttrName =
    "recur.stream_contiguous";

/// The CPU pipeline's stream-store-bytes: 32 MiB, this machine's last-level
/// cache (docs/performance.md). A smaller output is likely read again from
/// the cache by what follows; a larger one is evicted on the way anyway.
constexpr int64_t kDefaultStreamStoreBytes = int64_t(32) << 20;

} // namespace recur
} // namespace mlir

#endif // RECUR_CONVERSION_RECURTOLOOPS_RECURTOLOOPS_H
