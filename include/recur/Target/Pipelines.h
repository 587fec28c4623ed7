//===- Pipelines.h - recur pass pipelines -----------------------*- C++ -*-===//
//
// Part of the Recur project.
//
//===----------------------------------------------------------------------===//

#ifndef RECUR_TARGET_PIPELINES_H
#define RECUR_TARGET_PIPELINES_H

#include "recur/Conversion/RecurToLoops/RecurToLoops.h"

#include "mlir/Support/LLVM.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir {
class ModuleOp;
class OpPassManager;

namespace recur {

/// recur -> scalar loops (RecurToLoops) -> bufferized memrefs -> LLVM dialect.
/// The result runs under mlir-runner or the ExecutionEngine; it is the
/// correctness reference, not a fast path.
void buildReferenceLoweringPipeline(OpPassManager &pm);

/// The CUDA pipeline's threads per block (recurc --cuda-block-threads) and
/// bytes of each input a thread scanning a channel loads ahead (recurc
/// --cuda-scan-unroll-bytes), measured on an H100 (docs/performance.md),
/// and the threads a scan of few channels spreads over (recurc
/// --cuda-scan-spread; not yet measured on a GPU): 65536 is about four
/// blocks of 128 an SM on an H100's 132, and a scan of up to 8192 channels
/// is spread.
constexpr int64_t kDefaultCudaBlockThreads = 128;
constexpr int64_t kDefaultCudaScanUnrollBytes = 256;
constexpr int64_t kDefaultCudaScanSpread = 65536;
/// The steps a chunk of a recurrent gla of few columns has on the GPU
/// (convert-recur-to-loops' gla-column-chunk).
constexpr int64_t kDefaultCudaGlaColumnChunk = 64;
/// The threads a reduction onto few output elements (a parameter's
/// gradient) is split over (recur-split-reductions' threads; recurc
/// --cuda-split-reductions; not yet measured on a GPU), as many as a scan's
/// spread.
constexpr int64_t kDefaultCudaSplitReductions = 65536;

/// What the CUDA pipeline compiles the device code for.
struct CudaPipelineOptions {
  /// NVVM chips ("sm_80", "sm_90"): one PTX object per chip in each
  /// gpu.binary.
  std::vector<std::string> chips = {"sm_90"};
  /// The CUDA toolkit (its nvvm/libdevice holds the device math library).
  std::string toolkit = "/usr/local/cuda";
  /// 0 to 3, for the NVPTX backend.
  unsigned optLevel = 3;
  /// Threads per block of the launches of parallel loops
  /// (recur-gpu-offload's block-threads).
  int64_t blockThreads = kDefaultCudaBlockThreads;
  /// Bytes of each input per iteration of a linear scan's time loop, loads
  /// first (convert-recur-to-loops' scan-unroll-bytes).
  int64_t scanUnrollBytes = kDefaultCudaScanUnrollBytes;
  /// Threads a linear scan of few channels spreads over in chunks of time
  /// (convert-recur-to-loops' scan-spread; 0: none).
  int64_t scanSpread = kDefaultCudaScanSpread;
  /// Whether those chunks go by the lanes of a warp, exchanging values by
  /// shuffles (convert-recur-to-loops' scan-warps), instead of a thread
  /// each.
  bool scanWarps = false;
  /// Where those scans would spread, the threads of a block of their block
  /// form instead: one pass, a block a tile, the tiles chained by a
  /// decoupled look-back (convert-recur-to-loops' scan-blocks; 0: none).
  int64_t scanBlocks = 0;
  /// Whether window attention goes in one pass over each query's keys, its
  /// sums in registers, where its channels allow
  /// (convert-recur-to-loops' window-one-pass), instead of a row of logits
  /// in scratch.
  bool windowOnePass = true;
  /// The steps of a chunk of a recurrent gla of few output columns, a
  /// thread per (chunk, column) (convert-recur-to-loops' gla-column-chunk;
  /// 0: a thread per column).
  int64_t glaColumnChunk = kDefaultCudaGlaColumnChunk;
  /// Whether a gla that would go in those chunks goes instead, where its
  /// decays are real f32 and dk and dv static multiples of 16, in chunks of
  /// 16 by a warp's matrix tiles, on tensor cores (convert-recur-to-loops'
  /// gla-tiles).
  bool glaTiles = false;
  /// Whether window attention of f32 whose channels are static multiples
  /// of 16 goes by a warp's matrix tiles, on tensor cores
  /// (convert-recur-to-loops' window-warp-tiles).
  bool windowWarpTiles = false;
  /// The threads a reduction onto at most half as many output elements
  /// is split over, in parts summed into partials first
  /// (recur-split-reductions' threads; 0: a thread per output element).
  int64_t splitReductions = kDefaultCudaSplitReductions;
};

/// What the CPU pipeline's choices depend on.
struct CpuPipelineOptions {
  /// A linear scan (f32, f64; c64, c128 with a transition per channel)
  /// across channels whose output holds at least this many bytes writes it
  /// around the cache (0: none); recurc's and recur-run's
  /// --stream-store-bytes.
  int64_t streamStoreBytes = kDefaultStreamStoreBytes;
  /// With these, lower the recur ops and reductions in the forms the CUDA
  /// pipeline gives them with these options (its scan, gla, window and
  /// reduction forms; not scan warps, whose shuffles only a GPU runs)
  /// instead of the CPU's, so that the CPU runs, and checks, those loops
  /// (recur-run's --gpu-forms); not what recur-gpu-offload then does to
  /// them, outputs written into the caller's buffers as on the CPU, no
  /// stream stores; slower than the CPU's forms.
  std::optional<CudaPipelineOptions> gpuForms;
};

/// recur (with linalg/arith/math/complex glue) to the LLVM dialect for the
/// CPU backend: the RecurToLoops loops with independent iterations and the
/// parallel dimensions of linalg glue on OpenMP, buffers allocated through
/// librecur_rt. Registered as `recur-cpu-to-llvm` (with the default
/// options).
void buildCpuLoweringPipeline(OpPassManager &pm,
                              const CpuPipelineOptions &options = {});

/// recur to the LLVM dialect for CUDA: the CPU pipeline's loops up to
/// buffer deallocation, then `recur-gpu-offload`, kernel outlining, the
/// kernels through NVVM to PTX (one `#gpu.object` of assembly per chip in a
/// `gpu.binary`), and the host code to the LLVM dialect with launches as
/// runtime calls and buffers from the generic allocation functions.
/// Registered as `recur-cuda-to-llvm` (chip sm_90).
void buildCudaLoweringPipeline(OpPassManager &pm,
                               const CudaPipelineOptions &options);

/// Adds `F_backward` beside each layer F of `module` that can be
/// differentiated (recur-derive-backward{allow-missing}: a layer using an op
/// without an adjoint gets a remark saying so, and no backward). With
/// `keepAllStates` recurrences keep every intermediate state instead of the
/// states at chunk boundaries (the default).
LogicalResult deriveBackwardFunctions(ModuleOp module,
                                      bool keepAllStates = false);

/// Registers the pipelines above with the pass registry
/// (`--recur-reference-to-llvm`).
void registerRecurPipelines();

} // namespace recur
} // namespace mlir

#endif // RECUR_TARGET_PIPELINES_H
