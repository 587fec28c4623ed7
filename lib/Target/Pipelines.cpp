//===- Pipelines.cpp - recur pass pipelines -------------------------------===//
//
// Part of the Recur project.
//
//===----------------------------------------------------------------------===//

#include "recur/Target/Pipelines.h"

#include "recur/Conversion/Passes.h"
#include "recur/Conversion/RecurToLoops/RecurToLoops.h"
#include "recur/Transforms/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/ErrorHandling.h"

using namespace mlir;

namespace {
/// The pipelines are spelled as text, which names registered passes: a tool
/// that builds one without registering every pass itself (recurc,
/// recur-run) gets them registered here, once.
void ensurePassesRegistered() {
  static bool registered = [] {
    registerAllPasses();
    recur::registerRecurConversionPasses();
    recur::registerRecurTransformsPasses();
    return true;
  }();
  (void)registered;
}

/// The CPU and CUDA pipelines' common start: recur to loops (those of
/// independent iterations tagged; a linear scan across channels in groups
/// of `scanGroup` a thread, or in chunks of `scanChunk` steps, one with few
/// channels spread over about `scanSpread` threads in chunks (by warps with
/// `scanWarps`; in one pass by blocks of `scanBlocks` threads instead when
/// that is > 0), an output of
/// `streamStoreBytes` or more in vectors for recur-stream-stores; a recurrent
/// gla a thread per output column with `glaColumnThreads` (in chunks of
/// `glaColumnChunk` steps where the columns are few, with `glaTiles` in
/// chunks of 16 by a warp's matrix tiles where it applies); window attention
/// by tiles of queries in register blocks with `windowTiles`, or in one pass
/// over each query's keys with `windowOnePass` (by a warp's matrix tiles
/// with `windowWarpTiles` where it applies); attention of
/// static sizes as linalg products with `attentionProducts`; a chunked gla
/// (and an `auto` one of a state of 32 KiB or more) and a gla backward of
/// real decays as chunked products where they allow with `glaProducts`),
/// elementwise
/// glue fused on tensors,
/// with `interchangeReductions` contractions with their contiguous output
/// dimension innermost, after the reductions (for the CPU's vectors: a GPU
/// wants that dimension among the parallel loops, a thread an element), with
/// `blockContractions` matrix products in register blocks of vectors,
/// bufferization (with `destinations`, each output computed in a
/// destination argument of the caller's: recur-destination-outputs), with
/// `splitReductions` > 0 reductions onto few output elements summed in parts
/// over about that many parallel iterations (recur-split-reductions), the
/// tagged loops and linalg's parallel dimensions as scf.parallel, buffers
/// deallocated.
std::string bufferizedLoops(
    int64_t scanGroup, int64_t scanChunk, int64_t scanSpread, bool scanWarps,
    int64_t scanUnrollBytes, int64_t streamStoreBytes, bool glaColumnThreads,
    int64_t glaColumnChunk, bool windowTiles, bool windowOnePass,
    bool attentionProducts, bool glaProducts, bool blockContractions,
    bool interchangeReductions, bool destinations, int64_t splitReductions,
    int64_t scanBlocks, bool glaTiles, bool windowWarpTiles) {
  return "convert-recur-to-loops{mark-parallel scan-group=" +
         std::to_string(scanGroup) +
         " scan-chunk=" + std::to_string(scanChunk) +
         " scan-spread=" + std::to_string(scanSpread) +
         " scan-warps=" + (scanWarps ? "true" : "false") +
         " scan-blocks=" + std::to_string(scanBlocks) +
         " scan-unroll-bytes=" + std::to_string(scanUnrollBytes) +
         " stream-store-bytes=" + std::to_string(streamStoreBytes) +
         " gla-column-threads=" + (glaColumnThreads ? "true" : "false") +
         " gla-column-chunk=" + std::to_string(glaColumnChunk) +
         " gla-tiles=" + (glaTiles ? "true" : "false") +
         " window-warp-tiles=" + (windowWarpTiles ? "true" : "false") +
         " window-tiles=" + (windowTiles ? "true" : "false") +
         " window-one-pass=" + (windowOnePass ? "true" : "false") +
         " attention-products=" + (attentionProducts ? "true" : "false") +
         " gla-products=" + (glaProducts ? "true" : "false") +
         "},"
         "canonicalize,"
         "recur-fuse-elementwise," +
         std::string(interchangeReductions ? "recur-interchange-reductions,"
                                           : "") +
         "canonicalize,"
         "cse," +
         std::string(blockContractions ? "recur-block-contractions," : "") +
         "one-shot-bufferize{bufferize-function-boundaries "
         "function-boundary-type-conversion=identity-layout-map "
         "allow-return-allocs-from-loops}," +
         (destinations ? "recur-destination-outputs," : "") +
         (splitReductions > 0 ? "func.func(recur-split-reductions{threads=" +
                                    std::to_string(splitReductions) + "}),"
                              : std::string()) +
         "convert-linalg-to-parallel-loops,"
         "func.func(recur-parallelize-loops),"
         "canonicalize,"
         "buffer-deallocation-pipeline,"
         "convert-bufferization-to-memref,";
}

/// bufferizedLoops with the CUDA pipeline's forms under `gpu` (without its
/// scan warps when `scanWarps` is false), each output computed in a
/// destination argument with `destinations`.
std::string cudaLoops(const recur::CudaPipelineOptions &gpu, bool scanWarps,
                      bool destinations) {
  return bufferizedLoops(/*scanGroup=*/1, /*scanChunk=*/0, gpu.scanSpread,
                         scanWarps && gpu.scanWarps, gpu.scanUnrollBytes,
                         /*streamStoreBytes=*/0,
                         /*glaColumnThreads=*/true, gpu.glaColumnChunk,
                         /*windowTiles=*/false, gpu.windowOnePass,
                         /*attentionProducts=*/false,
                         /*glaProducts=*/false,
                         /*blockContractions=*/false,
                         /*interchangeReductions=*/false, destinations,
                         gpu.splitReductions, gpu.scanBlocks, gpu.glaTiles,
                         gpu.windowWarpTiles);
}

void appendPipeline(OpPassManager &pm, StringRef text, StringRef what) {
  ensurePassesRegistered();
  if (failed(parsePassPipeline(text, pm)))
    llvm::report_fatal_error(Twine("recur: malformed ") + what);
}
} // namespace

void mlir::recur::buildReferenceLoweringPipeline(OpPassManager &pm) {
  // Spelled as text so the pipeline reads the same here, in the docs and in a
  // recur-opt command line. Function boundaries get identity layouts, so a
  // caller (mlir-runner, the ExecutionEngine) passes plain row-major memrefs;
  // loops may carry freshly allocated tensors (the state of block_recurrence
  // and depth_loop); the math ops LLVM has no lowering for (math.erf) become
  // libm calls, after every other one has gone to LLVM as before; a
  // matrix's vector transfers (gla-tiles' tiles) go a row at a time, and
  // its products as outer products (a tenth of the code of the default,
  // dot products).
  static constexpr const char *kPipeline =
      "convert-recur-to-loops,"
      "canonicalize,"
      "one-shot-bufferize{bufferize-function-boundaries "
      "function-boundary-type-conversion=identity-layout-map "
      "allow-return-allocs-from-loops},"
      "buffer-deallocation-pipeline,"
      "convert-bufferization-to-memref,"
      "convert-linalg-to-loops,"
      "convert-vector-to-scf{full-unroll target-rank=1},"
      "convert-scf-to-cf,"
      "expand-strided-metadata,"
      "lower-affine,"
      "convert-complex-to-standard,"
      "convert-math-to-llvm,"
      "convert-math-to-libm,"
      "convert-vector-to-llvm{vector-contract-lowering=outerproduct},"
      "convert-to-llvm,"
      "reconcile-unrealized-casts";
  appendPipeline(pm, kPipeline, "reference lowering pipeline");
}

void mlir::recur::buildCpuLoweringPipeline(OpPassManager &pm,
                                           const CpuPipelineOptions &options) {
  // The reference lowering with the loops of independent iterations (tagged
  // by RecurToLoops, and the parallel dimensions of linalg glue) run as
  // OpenMP worksharing loops, elementwise glue fused on tensors first
  // (recur-fuse-elementwise: not producers that read their init), and
  // every buffer the kernel allocates drawn from the runtime
  // (`_mlir_memref_to_llvm_alloc` and friends, defined by librecur_rt).
  // memref.alloca_scope (from the OpenMP conversion) is lowered with the
  // rest of memref before scf becomes cf, which it needs. Vector transfers
  // (the register blocks of window_attention_grad) become plain vector
  // loads and stores (convert-vector-to-llvm) before memref goes to LLVM,
  // a matrix's (gla-tiles' with gpuForms) first a row at a time
  // (convert-vector-to-scf), its products as outer products. Once
  // every buffer is a memref.alloc, each layer F gets F_workspace, the bound on
  // what its buffers hold at once (recur_workspace_size). Outputs are written
  // into destination arguments (recur_layer_desc.output_destinations), and a
  // linear scan across channels splits each row into about a thread's share
  // (scan-group=0; a scan of few channels, or along the last dimension, goes
  // by rows instead, each row's steps side by side in vectors, and a row in
  // chunks over the threads when there are fewer rows than threads) and
  // writes an output larger than the last-level cache around it
  // (recur-stream-stores); a reduction's innermost loop carries
  // its sum as a value (recur-promote-accumulators). Once the parallel
  // loops are OpenMP regions, each region gets a function of its own,
  // identical ones shared and none inlined (recur-outline-parallel: a
  // compile-time measure, before the lowering to LLVM so that it and LLVM
  // see each kernel once).
  // With gpuForms, the CUDA pipeline's forms instead (not its scan warps),
  // run on the CPU's threads.
  std::string loops =
      options.gpuForms
          ? cudaLoops(*options.gpuForms, /*scanWarps=*/false,
                      /*destinations=*/true)
          : bufferizedLoops(kScanGroupByThreads, /*scanChunk=*/0,
                            /*scanSpread=*/0,
                            /*scanWarps=*/false, /*scanUnrollBytes=*/0,
                            options.streamStoreBytes,
                            /*glaColumnThreads=*/false, /*glaColumnChunk=*/0,
                            /*windowTiles=*/true,
                            /*windowOnePass=*/false,
                            /*attentionProducts=*/true,
                            /*glaProducts=*/true,
                            /*blockContractions=*/true,
                            /*interchangeReductions=*/true,
                            /*destinations=*/true,
                            /*splitReductions=*/0, /*scanBlocks=*/0,
                            /*glaTiles=*/false, /*windowWarpTiles=*/false);
  std::string text = loops + "recur-stream-stores,"
                             "func.func(recur-promote-accumulators),"
                             "recur-workspace-bound,"
                             "convert-scf-to-openmp,"
                             "recur-outline-parallel,"
                             "expand-strided-metadata,"
                             "convert-vector-to-scf{full-unroll "
                             "target-rank=1},"
                             "lower-affine,"
                             "convert-vector-to-llvm{"
                             "vector-contract-lowering=outerproduct},"
                             "finalize-memref-to-llvm{use-generic-functions},"
                             "convert-scf-to-cf,"
                             "convert-complex-to-standard,"
                             "convert-math-to-llvm,"
                             "convert-math-to-libm,"
                             "convert-to-llvm,"
                             "reconcile-unrealized-casts,"
                             "recur-strip-front-end-attributes";
  appendPipeline(pm, text, "CPU lowering pipeline");
}

void mlir::recur::buildCudaLoweringPipeline(
    OpPassManager &pm, const CudaPipelineOptions &options) {
  // The CPU pipeline's loops, bufferized and deallocated; then every
  // parallel loop a launch and the rest of the memory work in
  // single-thread launches (recur-gpu-offload), outlined into kernels. The
  // kernels go to NVVM (math through libdevice, linked from the toolkit)
  // before the host's math becomes libm calls, and the host code to the
  // LLVM dialect with buffers from the generic allocation functions (the
  // CUDA target points them at device memory) and launches as calls of
  // the runtime's mgpu* functions.
  // A linear scan runs one channel a thread, and a gla (recurrent, or
  // chunked with its state column in registers) one output column, or one
  // (chunk, column), a thread, its backward one (chunk, key row) or one
  // (chunk, column) a thread: neighbouring threads on neighbouring channels
  // or columns (coalesced). Window attention runs a query a thread in one pass
  // over its keys, its sums in registers (windowOnePass; the row form kept
  // its logits in a scratch row of local memory, 2 KB at a window of 512). The
  // chunked scan (scan-chunk) was slower on an H200 for 16 x 1024 channels
  // (docs/performance.md), so only a scan with at most scanSpread / 8 channels
  // when it runs goes in chunks, over about scanSpread threads (scan-spread:
  // one channel a thread left one long sequence 413 ms for 16M steps on an
  // H100). The scan's thread loads scanUnrollBytes of each input before it
  // updates (without that it waits a memory latency per step: 0.13 of a copy on
  // an H100, 0.83 with 256 bytes). A contraction keeps the loop order of its
  // iterators, so every output element of a matrix product is a thread of its
  // own, summing its terms in a register (recur-promote-accumulators); the
  // CPU's order (the output's columns innermost, after the reductions) left a
  // thread per output row: 37 ms for the custom scan at T = 1 on an H200, its
  // x @ W products over two threads. The constants a launch uses are sunk into
  // it before outlining, so a kernel's loops see their steps and strides (the
  // unrolled scan's loads then take their offsets as immediates instead of a
  // register each). Launches of the same code (the backward's recomputed
  // forward nests, a block body's repeats) share one kernel, compiled once.
  // A reduction onto few output elements (a gate bias's gradient, summed
  // over batch and time) is summed in parts over about splitReductions
  // threads, then the parts' partials a thread an element, instead of a
  // thread an element summing all its terms (D threads for a bias of D).
  // A warp's matrix tiles (gla-tiles' vector.contract of 16 x 8 by 8 x 16
  // and the transfers of their operands and results) become the warp's
  // gpu.subgroup_mma_* ops (convert-vector-to-gpu): wmma on tensor cores.
  std::string text =
      cudaLoops(options, /*scanWarps=*/true, /*destinations=*/false) +
      "func.func(recur-promote-accumulators),"
      "func.func(recur-gpu-offload{block-threads=" +
      std::to_string(options.blockThreads) +
      "}),"
      "gpu-launch-sink-index-computations,"
      "gpu-kernel-outlining,"
      "cse,"
      "recur-merge-gpu-kernels,"
      "gpu.module(convert-vector-to-gpu),";
  for (const std::string &chip : options.chips)
    text += "nvvm-attach-target{chip=" + chip +
            " O=" + std::to_string(options.optLevel) + "},";
  text += "expand-strided-metadata,"
          "lower-affine,"
          "arith-expand,"
          "convert-complex-to-standard,"
          "convert-scf-to-cf,"
          "gpu.module(convert-gpu-to-nvvm),"
          "finalize-memref-to-llvm{use-generic-functions},"
          "gpu-to-llvm,"
          "convert-math-to-llvm,"
          "convert-math-to-libm,"
          "convert-to-llvm,"
          "reconcile-unrealized-casts,"
          "gpu-module-to-binary{format=isa toolkit=" +
          options.toolkit + "}";
  appendPipeline(pm, text, "CUDA lowering pipeline");
}

LogicalResult mlir::recur::deriveBackwardFunctions(ModuleOp module,
                                                   bool keepAllStates) {
  PassManager pm(module->getContext());
  RecurDeriveBackwardOptions options;
  options.allowMissing = true;
  options.keepAllStates = keepAllStates;
  pm.addPass(createRecurDeriveBackward(options));
  return pm.run(module);
}

void mlir::recur::registerRecurPipelines() {
  PassPipelineRegistration<>(
      "recur-cpu-to-llvm",
      "Lower recur to the LLVM dialect for the CPU: parallel loops on "
      "OpenMP, buffers from librecur_rt",
      [](OpPassManager &pm) { buildCpuLoweringPipeline(pm); });
  PassPipelineRegistration<>(
      "recur-cuda-to-llvm",
      "Lower recur to the LLVM dialect for CUDA (sm_90): parallel loops as "
      "kernel launches, kernels as PTX in gpu.binary ops",
      [](OpPassManager &pm) {
        buildCudaLoweringPipeline(pm, CudaPipelineOptions());
      });
  PassPipelineRegistration<>(
      "recur-reference-to-llvm",
      "Lower recur through the scalar reference loops to the LLVM dialect",
      buildReferenceLoweringPipeline);
}
