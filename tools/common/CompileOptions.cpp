//===- CompileOptions.cpp - options recurc and recur-run share ------------===//
//
// Part of the Recur project.
//
//===----------------------------------------------------------------------===//

#include "CompileOptions.h"

#include "recur/Conversion/RecurToLoops/RecurToLoops.h"
#include "recur/Target/CudaTarget.h"
#include "recur/Target/Pipelines.h"

#include <algorithm>

using namespace llvm;
using namespace recur::tools;

CompileOptions::CompileOptions(cl::OptionCategory &category)
    : glaAlgorithm(
          "gla-algorithm",
          cl::desc("Run every gla with this algorithm, whatever the spec "
                   "says: auto, recurrent or chunked"),
          cl::value_desc("name"), cl::cat(category)),
      glaChunk("gla-chunk",
               cl::desc("Give every gla that is not recurrent chunks of "
                        "this many steps (the chunked algorithm's, and the "
                        "backward's recomputed ones)"),
               cl::value_desc("steps"), cl::init(0), cl::cat(category)),
      backwardKeepStates(
          "backward-keep-states",
          cl::desc("Derive backward kernels that keep every intermediate "
                   "state of a gla instead of the states at chunk "
                   "boundaries (recomputing each chunk): more memory, less "
                   "compute"),
          cl::cat(category)),
      streamStoreBytes(
          "stream-store-bytes",
          cl::desc("A linear scan of f32 or f64, or of c64 or c128 with a "
                   "transition per channel, across channels whose output "
                   "holds at least this many bytes writes it with "
                   "non-temporal stores, around the cache (default "
                   "33554432, 32 MiB; 0: never; CPU only)"),
          cl::value_desc("bytes"),
          cl::init(mlir::recur::kDefaultStreamStoreBytes), cl::cat(category)),
      promoteF64("f64",
                 cl::desc("Compile every float tensor as f64 and every "
                          "complex one as c128 (the layer in double "
                          "precision)"),
                 cl::cat(category)),
      cudaBlockThreads(
          "cuda-block-threads",
          cl::desc("Threads per block of the kernels' launches over "
                   "parallel loops, 1 to 1024 (default 128; --target=cuda "
                   "only)"),
          cl::value_desc("n"), cl::init(mlir::recur::kDefaultCudaBlockThreads),
          cl::cat(category)),
      cudaScanUnrollBytes(
          "cuda-scan-unroll-bytes",
          cl::desc("Bytes of each input a GPU thread scanning a channel "
                   "loads before it updates, as that many bytes of steps "
                   "(at most 64 steps; 0: a step at a time), 0 to 16384 "
                   "(default 256; --target=cuda only)"),
          cl::value_desc("bytes"),
          cl::init(mlir::recur::kDefaultCudaScanUnrollBytes),
          cl::cat(category)),
      cudaScanSpread(
          "cuda-scan-spread",
          cl::desc("A linear scan with at most n / 8 channels and more than "
                   "256 steps when it runs (one long sequence, say) goes in "
                   "chunks of time over about n GPU threads (its chunks' "
                   "carries a scan of their own) instead of one thread a "
                   "channel; 0: never, 0 to 16777216 (default 65536; "
                   "--target=cuda only)"),
          cl::value_desc("n"), cl::init(mlir::recur::kDefaultCudaScanSpread),
          cl::cat(category)),
      cudaScanWarps(
          "cuda-scan-warps",
          cl::desc("The chunks of --cuda-scan-spread's form go by warps "
                   "instead of a thread each: a warp's 32 lanes take 32 "
                   "consecutive steps at a time (contiguous loads and "
                   "stores) and compose them by warp shuffles (nothing is "
                   "spread with --cuda-scan-spread=0); needs "
                   "--cuda-block-threads a multiple of 32 (default off: "
                   "not yet run on a GPU; --target=cuda only)"),
          cl::cat(category)),
      cudaScanBlocks(
          "cuda-scan-blocks",
          cl::desc("Where --cuda-scan-spread's form would spread a linear "
                   "scan, it goes instead in one pass over its inputs by "
                   "blocks of n threads, a block a tile of n x 64 bytes of "
                   "steps of a channel loaded into shared memory, the tiles "
                   "of a channel chained by a decoupled look-back (nothing "
                   "goes by blocks with --cuda-scan-spread=0); 0: never, or "
                   "32 to 256, a multiple of 32 (a block's buffers in the 48 "
                   "KiB of static shared memory; default 0: not yet run on "
                   "a GPU; --target=cuda only)"),
          cl::value_desc("n"), cl::init(0), cl::cat(category)),
      cudaWindowOnePass(
          "cuda-window-one-pass",
          cl::desc("Window attention whose query and value channels are "
                   "static (d + dv at most 160 values of 32 bits) goes in "
                   "one pass over each query's keys, a query a thread, its "
                   "sums in registers (an online softmax), and its backward "
                   "(2 d + dv at most 192) a thread a query or key row, a "
                   "bias's cotangent from per-query partials; =false: a "
                   "query row at a time with its logits in a scratch row, "
                   "and the backward's fused tiles, the forms before it "
                   "(default on; --target=cuda "
                   "only)"),
          cl::init(true), cl::cat(category)),
      cudaGlaColumnChunk(
          "cuda-gla-column-chunk",
          cl::desc("A recurrent gla whose state column fits in registers "
                   "keeps it there, and over fewer than 16384 output "
                   "columns (leading indices times dv) and longer than 2 n "
                   "steps goes in chunks of n steps, a thread per (chunk, "
                   "column), instead of a thread per column; its backward "
                   "(dv static too, its rows in registers and a chunk's "
                   "states of a row in 32 KiB) goes in the same chunks, a "
                   "thread per "
                   "(chunk, key row) and per (chunk, column), instead of a "
                   "thread per leading index; 0: a thread per column, the "
                   "state in memory, and the backward's reverse sweep, 0 to "
                   "65536 (default 64; --target=cuda only)"),
          cl::value_desc("n"),
          cl::init(mlir::recur::kDefaultCudaGlaColumnChunk), cl::cat(category)),
      cudaGlaTiles(
          "cuda-gla-tiles",
          cl::desc("A gla (either algorithm) whose decays are real f32 and "
                   "dk and dv static multiples of 16 (dk + dv at most 144) "
                   "goes, instead of --cuda-gla-column-chunk's chunks "
                   "(with it > 0), in chunks of 16 steps where it runs "
                   "longer than 32 over fewer than 16384 output columns, by "
                   "a warp's matrix tiles on tensor cores (wmma, tf32; each "
                   "f32 operand as "
                   "two tf32 halves, three products, for about f32's "
                   "accuracy): a block of one warp per (leading index, "
                   "chunk) for each chunk's state from zero and for its "
                   "outputs; its backward, where its block buffers fit 48 "
                   "KiB too (dk = dv = 64 do, dk = 80 with dv = 64 not), "
                   "in the same chunks by tiles at any length, dq, dk and "
                   "da a thread a key row (default off: not yet run on a "
                   "GPU; --target=cuda only)"),
          cl::cat(category)),
      cudaWindowWarpTiles(
          "cuda-window-warp-tiles",
          cl::desc("Window attention of f32 whose query and value channels "
                   "are static multiples of 16 (d = dv = 64 takes 32 KiB of "
                   "shared memory; at most 48 KiB) goes by a warp's matrix "
                   "tiles on tensor cores (wmma, tf32; each f32 operand as "
                   "two tf32 halves, three products, for about f32's "
                   "accuracy): a block of one warp per tile of 16 queries "
                   "walks the 16-row tiles of their keys, Q K^T and P V by "
                   "tiles and the online softmax a thread a query row; its "
                   "backward too where both of its launches' block buffers "
                   "fit (d = dv = 64 do): a block per tile of 16 queries for "
                   "dq and the softmax's statistics, a block per tile of 16 "
                   "key rows for dk and dv (default off: not yet run on a "
                   "GPU; --target=cuda only)"),
          cl::cat(category)),
      cudaSplitReductions(
          "cuda-split-reductions",
          cl::desc("A reduction onto at most n / 2 output elements (a "
                   "parameter's gradient summed over batch and time, say) "
                   "goes in parts: about n GPU threads each sum a "
                   "contiguous run of its terms (64 or more where it has "
                   "as many, the last run what remains) into a partial, "
                   "then a thread per output "
                   "element adds the "
                   "partials, instead of a thread per output element "
                   "summing all of its terms; 0: never, 0 to 16777216 "
                   "(default 65536; --target=cuda only)"),
          cl::value_desc("n"),
          cl::init(mlir::recur::kDefaultCudaSplitReductions),
          cl::cat(category)) {}

int64_t CompileOptions::streamStoreBytesValue() const {
  return static_cast<int64_t>(
      std::min<uint64_t>(streamStoreBytes, uint64_t(INT64_MAX)));
}

std::optional<std::string>
CompileOptions::applyCuda(mlir::recur::CudaTargetOptions *cuda) const {
  if (!cuda) {
    if (cudaBlockThreads.getNumOccurrences() ||
        cudaScanUnrollBytes.getNumOccurrences() ||
        cudaScanSpread.getNumOccurrences() ||
        cudaScanWarps.getNumOccurrences() ||
        cudaScanBlocks.getNumOccurrences() ||
        cudaWindowOnePass.getNumOccurrences() ||
        cudaGlaColumnChunk.getNumOccurrences() ||
        cudaGlaTiles.getNumOccurrences() ||
        cudaWindowWarpTiles.getNumOccurrences() ||
        cudaSplitReductions.getNumOccurrences())
      return std::string("--cuda-block-threads, --cuda-scan-unroll-bytes, "
                         "--cuda-scan-spread, --cuda-scan-warps, "
                         "--cuda-scan-blocks, --cuda-window-one-pass, "
                         "--cuda-gla-column-chunk, "
                         "--cuda-gla-tiles, --cuda-window-warp-tiles and "
                         "--cuda-split-reductions need --target=cuda");
    return std::nullopt;
  }
  if (cudaBlockThreads < 1 || cudaBlockThreads > 1024)
    return "--cuda-block-threads must be 1 to 1024, not " +
           std::to_string(cudaBlockThreads);
  if (cudaScanUnrollBytes < 0 || cudaScanUnrollBytes > 16384)
    return "--cuda-scan-unroll-bytes must be 0 to 16384, not " +
           std::to_string(cudaScanUnrollBytes);
  if (cudaScanSpread < 0 || cudaScanSpread > (int64_t(1) << 24))
    return "--cuda-scan-spread must be 0 to 16777216, not " +
           std::to_string(cudaScanSpread);
  if (cudaGlaColumnChunk < 0 || cudaGlaColumnChunk > 65536)
    return "--cuda-gla-column-chunk must be 0 to 65536, not " +
           std::to_string(cudaGlaColumnChunk);
  if (cudaSplitReductions < 0 || cudaSplitReductions > (int64_t(1) << 24))
    return "--cuda-split-reductions must be 0 to 16777216, not " +
           std::to_string(cudaSplitReductions);
  if (cudaScanBlocks != 0 &&
      (cudaScanBlocks < mlir::recur::kWarpLanes || cudaScanBlocks > 256 ||
       cudaScanBlocks % mlir::recur::kWarpLanes != 0))
    return "--cuda-scan-blocks must be 0, or 32 to 256 and a multiple of "
           "32, not " +
           std::to_string(cudaScanBlocks);
  if (cudaScanWarps && cudaBlockThreads % mlir::recur::kWarpLanes != 0)
    return "--cuda-scan-warps needs --cuda-block-threads a multiple of " +
           std::to_string(mlir::recur::kWarpLanes) + ", not " +
           std::to_string(cudaBlockThreads);
  cuda->blockThreads = cudaBlockThreads;
  cuda->scanUnrollBytes = cudaScanUnrollBytes;
  cuda->scanSpread = cudaScanSpread;
  cuda->scanWarps = cudaScanWarps;
  cuda->scanBlocks = cudaScanBlocks;
  cuda->windowOnePass = cudaWindowOnePass;
  cuda->glaColumnChunk = cudaGlaColumnChunk;
  cuda->glaTiles = cudaGlaTiles;
  cuda->windowWarpTiles = cudaWindowWarpTiles;
  cuda->splitReductions = cudaSplitReductions;
  return std::nullopt;
}
