//===- Patterns.h - RecurToLoops patterns by op family ----------*- C++ -*-===//
//
// Part of the Recur project.
//
// One populate function per op family; each lives in the file of the same
// name and populateRecurToLoopsPatterns (RecurToLoops.cpp) calls them all.
//
//===----------------------------------------------------------------------===//

#ifndef RECUR_LIB_CONVERSION_RECURTOLOOPS_PATTERNS_H
#define RECUR_LIB_CONVERSION_RECURTOLOOPS_PATTERNS_H

#include "Recur/IR/Recur.h"

#include <string>

namespace mlir {
class RewritePatternSet;

namespace recur::loops {

/// linear_scan, scan and gated_linear_attention (Scans.cpp); a linear_scan
/// along a dimension other than the last scans `scanGroup` channels a
/// thread, or with `scanChunk` > 0 runs in chunks of that many steps (with
/// an output of at least `streamStoreBytes` > 0, in groups, its rows in
/// vectors (complex ones as vectors of their parts) and its time loop
/// tagged kStreamStoresAttrName; one channel at
/// a time, `scanUnrollBytes` of each input an iteration, loads first, and
/// with `scanSpread` > 0 and few channels, in chunks of at least
/// `scanSpreadChunk` steps over about `scanSpread` threads, each chunk
/// swept by the lanes of a GPU warp with `scanWarps`, or by the lanes side
/// by side in one iteration with `emulateWarps`; with `scanBlocks` > 0,
/// where it would spread, in one pass by blocks of that many threads
/// instead, with `blockAggregatesOnly` every look-back back to the
/// channel's first tile), and a
/// recurrent gla runs a thread per output column when `glaColumnThreads`
/// is set; a chunked gated_linear_attention and
/// gated_linear_attention_grad take their product form where it applies
/// when `glaProducts` is set; with `glaTiles` (and a gla in chunks of the
/// column form) gla-tiles' form where it applies.
void populateScanPatterns(RewritePatternSet &patterns, int64_t scanGroup,
                          int64_t scanChunk, int64_t streamStoreBytes,
                          int64_t scanUnrollBytes, bool glaColumnThreads,
                          int64_t scanSpread, int64_t scanSpreadChunk,
                          bool scanWarps, bool emulateWarps, bool glaProducts,
                          int64_t glaColumnChunk, int64_t scanBlocks,
                          bool blockAggregatesOnly, bool glaTiles);

/// The longest chunk the product forms of gated_linear_attention and its
/// grad take (GlaProducts.cpp): their decays must then be at least
/// 2^(-32 / 64).
constexpr int64_t kMaxGlaProductChunk = 64;

/// Whether a gla of queries `q` and decays `a` in chunks of `chunk` steps
/// (or its grad) has a product form: real decays of f32 or f64, chunks of
/// at most kMaxGlaProductChunk steps.
bool hasGlaProducts(Value q, Value a, int64_t chunk);

/// An i1: whether the product form applies at the leading index `lead` of
/// the decays `a` in chunks of `chunk` steps (every decay there in
/// [2^(-32 / chunk), 1]; a NaN is not).
Value glaProductsApply(OpBuilder &b, Location loc, Value a, int64_t chunk,
                       ValueRange lead);

/// The product form of the chunked `op` in chunks of `chunk` steps at the
/// leading index `lead`: (y, state) with that index's elements written,
/// `state` holding its initial state on entry (GlaProducts.cpp).
SmallVector<Value> buildGlaProducts(OpBuilder &b, Location loc,
                                    GatedLinearAttentionOp op, int64_t chunk,
                                    ValueRange lead, Value y, Value state);

/// The product form of `op` at the leading index `lead`: `results` (dq, dk,
/// dv, da, dinit) with that index's elements written (GlaProducts.cpp).
SmallVector<Value> buildGlaGradProducts(OpBuilder &b, Location loc,
                                        GatedLinearAttentionGradOp op,
                                        ValueRange lead, ValueRange results);

/// Whether gla-tiles' form (GlaTiles.cpp) applies to `op`: real f32
/// decays, dk and dv static multiples of 16, its block buffers within 48
/// KiB of shared memory (the backward's too for the grad).
bool glaTilesApply(GatedLinearAttentionOp op);
bool glaTilesApply(GatedLinearAttentionGradOp op);

/// The steps of a chunk of gla-tiles' form.
int64_t glaTileChunk();

/// The operands of gla-tiles' launches, `[lead..., T, dk]` (q, k, a) and
/// `[lead..., T, dv]` (v).
struct GlaTileOperands {
  Value q, k, v, a;
};

/// gla-tiles' first launch for the operands `ops` with leading sizes
/// `lead` and `steps` steps: each chunk's decay products A_c, `[lead...,
/// chunks, dk]`, and its state from zero L_c, `[lead..., chunks, dk, dv]`.
std::pair<Value, Value> buildGlaTileStates(OpBuilder &b, Location loc,
                                           GlaTileOperands ops,
                                           ArrayRef<Value> lead, Value steps);

/// gla-tiles' last launch: `yInit` with the outputs of every chunk written,
/// from the states entering the chunks, `entering` `[lead..., chunks, dk,
/// dv]`.
Value buildGlaTileOutputs(OpBuilder &b, Location loc, GlaTileOperands ops,
                          ArrayRef<Value> lead, Value steps, Value entering,
                          Value yInit);

/// The backward's: what each chunk's outputs send back into the state
/// entering it, M_c = sum_t P(b, t) q_t dy_t^T over the chunk's steps t
/// (P(b, t) the decay products from its first step b to t, a diagonal),
/// `[lead..., chunks, dk, dv]`, by tiles as the first launch.
Value buildGlaTileSent(OpBuilder &b, Location loc, GlaTileOperands ops,
                       Value dy, ArrayRef<Value> lead, Value steps);

/// The backward's dv, written into `dvInit`, from the cotangents of the
/// states after the chunks, `later` `[lead..., chunks, dk, dv]`.
Value buildGlaTileValueGrads(OpBuilder &b, Location loc, GlaTileOperands ops,
                             Value dy, ArrayRef<Value> lead, Value steps,
                             Value later, Value dvInit);

/// The backward's dq, dk and da, written into `inits` (in that order),
/// from the states entering the chunks and the cotangents of the states
/// after them.
SmallVector<Value> buildGlaTileRowGrads(OpBuilder &b, Location loc,
                                        GlaTileOperands ops, Value dy,
                                        ArrayRef<Value> lead, Value steps,
                                        Value entering, Value later,
                                        ValueRange inits);

/// gate (Gates.cpp).
void populateGatePatterns(RewritePatternSet &patterns);

/// window_attention, window_attention_grad, attention and rel_attention
/// (Attention.cpp). window_attention goes by tiles of queries in register
/// blocks when `windowTiles` is set (the CPU's form), otherwise a query row
/// at a time: in one pass over its keys with its sums in registers when
/// `windowOnePass` is set and its channels allow (the GPU's form, with
/// window_attention_grad a thread a query or key row).
/// attention of static sizes goes as linalg products when
/// `attentionProducts` is set (the CPU's form). With `windowWarpTiles` (and
/// not `windowTiles`), window_attention of f32 whose channels are static
/// multiples of 16 goes by a warp's matrix tiles (the GPU's tensor-core
/// form).
void populateAttentionPatterns(RewritePatternSet &patterns, bool windowTiles,
                               bool windowOnePass, bool attentionProducts,
                               bool windowWarpTiles);

/// block_recurrence, memory_update and stop_gradient (Blocks.cpp).
void populateBlockPatterns(RewritePatternSet &patterns);

/// halting and depth_loop (Depth.cpp).
void populateDepthPatterns(RewritePatternSet &patterns);

/// route_topk and moe (Experts.cpp).
void populateExpertPatterns(RewritePatternSet &patterns);

} // namespace recur::loops
} // namespace mlir

#endif // RECUR_LIB_CONVERSION_RECURTOLOOPS_PATTERNS_H
