//===- Passes.td - recur conversion passes ---------------------*- tablegen -*-===//
//
// Part of the Recur project.
//
//===----------------------------------------------------------------------===//

#ifndef RECUR_CONVERSION_PASSES_TD
#define RECUR_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertRecurToLoops : Pass<"convert-recur-to-loops"> {
  let summary = "Scalar reference lowering of recur ops to scf loops";
  let description = [{
    Lowers every recur op to sequential `scf.for` loop nests over tensors,
    with `tensor.extract` / `tensor.insert` on single elements (and
    `tensor.extract_slice` / `tensor.insert_slice` for whole blocks and
    memory windows) and the arithmetic in `arith`, `math` and `complex`.
    Nothing is tiled, vectorized or parallelized: this lowering fixes the
    meaning of each op and serves as the correctness reference for the
    optimized ones. Static sizes become constants, dynamic ones `tensor.dim`.

    - `linear_scan`, `scan`: a loop nest over the other dimensions around a
      sequential loop over the axis carrying the state (the combine region
      of `scan` inlined).
    - `gated_linear_attention`: per leading index (one nest of independent
      iterations) the matrix state (real or complex) is kept in the state
      result. `recurrent` and `auto` (but see `gla-products`) run the
      recurrence one step at a time,
      the state row by row (key index outer, output column inner, so the
      inner loop runs over consecutive columns), each output summed over the
      key index in order from zero. `chunked` runs
      chunks of `chunk_size` steps (64 by default): per chunk and key index,
      prefix sums of log|a| (and arg a for complex decays, the sign for real
      ones) in f64 with a count of exact zeros, so that a decay is exactly 0
      across a zero and otherwise the exp of a difference of two sums, never
      larger than the decay itself; then
      the decayed queries and keys, the intra-chunk scores (on and below the
      diagonal), the outputs from the scores and the carried state, and the
      state update, with the chunk's scratch tensors created in its loop.
      With `gla-products` and real decays, an index whose decays all lie in
      [2^(-32 / chunk), 1] goes by its product form instead: per chunk, with
      P the decays' running products, Q~ = q P, K~ = k / P and
      K^ = k P[C-1] / P, the masked scores tril(Q~ K~^T), the outputs
      scores v + Q~ S and the state's increment K^^T v as linalg
      contractions over tiles allocated once per index, then
      S = P[C-1] S + K^^T v.
    - `gated_linear_attention_grad`: per leading index, the reverse sweep
      (the states at chunk boundaries stacked going forward, then each
      chunk's states recomputed and its steps swept backwards, four state
      rows at a time). With `gla-products` and real decays, an index
      whose decays all lie in [2^(-32 / chunk), 1] goes by its product
      form instead: a forward pass over the chunks (each chunk's K^T v a
      contraction, the entering states stacked), then the chunks in
      reverse, each one's ten products (the masked scores Q~ K~^T and
      dy v^T, dq, dk, dv, the cotangent's update) as linalg contractions
      over tiles allocated once per index, and the decays' cotangents from
      `a_t da_t = sum_{s >= t} (q_s dq_s - k_s dk_s) + sum_j G S`.
    - `gate`, `halting`: one loop nest over the elements (tokens); halted
      tokens are exact copies (`arith.select`), and the halting threshold is
      compared in f64.
    - `window_attention` with `window-tiles`: as `window_attention_grad`
      below, tiles of 16 queries, Q K^T and P V in register blocks.
    - `attention` with `attention-products` (no mask or key padding, static
      query and key counts, at most 2^20 scores per leading index): per
      leading index, the scores `scale q k^T` and the readout `p v` as
      linalg contractions with a safe softmax per row between them (the ops
      its adjoint differentiates), the scores materialized.
    - `window_attention` (otherwise), `attention`, `rel_attention`: one
      query row at a time over the range of keys it may see (a band, the causal prefix, the
      memory plus the segment), with a per-key visibility test for the memory
      mask and key padding; a two-pass safe softmax (the largest logit, then
      `exp(logit - max)`, their sum and the weighted value rows), so no
      exponential exceeds 1, and a zero row for a query that sees no key.
      The T5 bucket counts how many of its log-spaced buckets' first
      distances (found at compile time with the float64 oracle's formula)
      a distance reaches.
    - `window_attention_grad`: per leading index, tiles of 16 queries over
      the union of their bands in whole vectors of keys, the keys, values
      and their cotangents transposed and zero-padded to whole vectors (and
      one more cache line); the products over the channels (Q K^T, dy V^T)
      read the keys and values in panels, each vector of keys at a channel
      after the one at the channel before, so their inner loop walks
      consecutive addresses; per tile the logits and dy V^T in register
      blocks of vectors, the softmax and dS = P (dP - sum P dP) per row over
      its band, dV^T += dy^T P, dK^T += Q^T dS and dq = dS K in register
      blocks (`vector.fma`); the position bias read and its cotangent summed
      per distance.
    - `block_recurrence`: an `scf.for` over the blocks, each input block an
      `extract_slice`, the body inlined, each output block an
      `insert_slice`, the carried values as iteration arguments.
    - `memory_update`: the kept part of `[memory; new]` as (at most) two
      slices; `stop_gradient`: its operand.
    - `depth_loop`: an `scf.for` whose induction variable is the body's step
      index, the body inlined.
    - `route_topk`: k rounds of selection per token, each taking the largest
      probability after the previous pick in the order (probability
      descending, index ascending); `moe`: each selected expert's network
      per token, with exact-erf gelu (`math.erf`).

    Recur ops nested in inlined bodies are lowered in turn. A
    `block_recurrence` output with a dynamic size besides the axis (the batch
    of a layer, say) takes it from the first block: block 0 runs before the
    loop, inside an `scf.if` on there being a block at all.

    Before:

    ```mlir
    %h, %last = recur.linear_scan %a, %b along 0 : tensor<8xf32>, tensor<8xf32>
    ```

    After (sketch):

    ```mlir
    %r:3 = scf.for %t = %c0 to %c8 step %c1
        iter_args(%hs = %empty, %carry = %zero, ...) -> (...) {
      %at = tensor.extract %a[%t] : tensor<8xf32>
      %bt = tensor.extract %b[%t] : tensor<8xf32>
      %m = arith.mulf %at, %carry : f32
      %n = arith.addf %m, %bt : f32
      %hs1 = tensor.insert %n into %hs[%t] : tensor<8xf32>
      scf.yield %hs1, %n, ...
    }
    ```
  }];
  let options = [
    Option<"markParallel", "mark-parallel", "bool", /*default=*/"false",
           "Tag the loops whose iterations are independent (the nests over "
           "batch, heads, channels, tokens and query rows) with the unit "
           "attribute `recur.parallel`, for `recur-parallelize-loops` after "
           "bufferization">,
    Option<"scanGroup", "scan-group", "int64_t", /*default=*/"128",
           "Channels of the last dimension one thread scans together in a "
           "linear_scan along another dimension (1 to 4096), or 0: chosen "
           "when the kernel runs, about a thread's share of each row (the "
           "CPU pipeline's; with 0, an f32 or f64 scan of a static channel "
           "count that divides the vector's lanes or is a multiple of them "
           "up to 4 vectors, or along the last dimension, goes by rows "
           "instead, each row's steps side by side in vectors: consecutive "
           "steps composed in the register, then applied to the carry; with "
           "fewer rows than threads, each row in chunks, two passes); 1 "
           "for a GPU (one channel a thread)">,
    Option<"scanChunk", "scan-chunk", "int64_t", /*default=*/"0",
           "Run every linear_scan in chunks of this many steps (0: not): "
           "each chunk's decay product and end state on its own, the "
           "chunks' carries in order, then each chunk again from its carry; "
           "independent iterations over channels and chunks, for a GPU "
           "where few sequences must fill it (no pipeline uses it yet: "
           "slower than a thread per channel for 16 x 1024 channels on an "
           "H200)">,
    Option<"scanUnrollBytes", "scan-unroll-bytes", "int64_t",
           /*default=*/"0",
           "Bytes of each input that an iteration of the time loop of a "
           "linear_scan one channel at a time loads (that form: along the "
           "last dimension, scan-group=1, or one or two complex channels): "
           "that many bytes over the element's steps (1 to 64 steps; 0: "
           "one step), all their loads first, then their updates and stores "
           "in order, so the loads of later steps do not wait for the stores "
           "of earlier ones and a GPU thread keeps that many bytes of loads "
           "in flight (the CUDA pipeline's: 256); the steps left over one at "
           "a time">,
    Option<"scanSpread", "scan-spread", "int64_t", /*default=*/"0",
           "A linear_scan one channel at a time (see scan-unroll-bytes) "
           "with at most N / 8 channels and more than scan-spread-chunk "
           "steps when it runs (one long sequence, say) goes in chunks of "
           "time instead, as scan-chunk's form, of max(scan-spread-chunk, "
           "ceil(T c / N)) steps for c channels: about N threads in all; "
           "its chunks' carries are a linear_scan of their own, spread "
           "again when longer than a chunk, up to two nested scans deep, "
           "the deepest one channel at a time; each chunk's sweep takes "
           "scan-unroll-bytes an iteration. More channels, or fewer steps, "
           "keep one channel at a time, which reads the inputs once (0: "
           "never spread; the CUDA pipeline's: 65536)">,
    Option<"scanSpreadChunk", "scan-spread-chunk", "int64_t",
           /*default=*/"256",
           "The fewest steps of a chunk of scan-spread's form (at least "
           "1)">,
    Option<"scanWarps", "scan-warps", "bool", /*default=*/"false",
           "scan-spread's chunks go by the lanes of a GPU warp instead of a "
           "thread each (for the GPU only: the loops exchange values with "
           "gpu.shuffle): chunks of max(scan-spread-chunk, ceil(32 T c / "
           "N)) steps rounded up to a warp's loads, about N threads in all; "
           "lane i takes step 32 r + i of each round r of 32 steps, so a "
           "warp's loads and stores are contiguous, loading an eighth of "
           "scan-unroll-bytes of each input ahead (1 to 8 rounds); each "
           "round's steps are composed across the lanes by five shuffles up "
           "(Hillis and Steele) and the carry comes from lane 31. The lanes "
           "are the innermost loop of their nest, tagged "
           "`recur.warp_lanes`">,
    Option<"scanBlocks", "scan-blocks", "int64_t", /*default=*/"0",
           "With N > 0, where scan-spread's form would spread a "
           "linear_scan, it goes instead in one pass over its inputs in "
           "tiles of N k steps of a channel (k: 64 bytes of the element), "
           "a GPU block of N threads a tile, the tiles of a channel chained "
           "by a decoupled look-back through atomically written statuses "
           "(for the GPU, where recur-gpu-offload makes the loop over the "
           "tiles, tagged `recur.gpu_block`, a launch of blocks, and its "
           "loops tagged `recur.block_threads` the block's threads with "
           "barriers between them and its buffers shared memory; the same "
           "loops run on the CPU). At most 256 (larger is taken as 256), so "
           "that a block's buffers fit 48 KiB of shared memory. 0: never">,
    Option<"scanBlocksAggregatesOnly", "scan-blocks-aggregates-only",
           "bool", /*default=*/"false",
           "scan-blocks' tiles publish their end state with flag 1 (an "
           "aggregate) but for a channel's first, so that each look-back "
           "composes every tile's aggregate back to the channel's first "
           "tile: the path a tile takes when the tiles before it are still "
           "running, taken on the CPU's sequential loops too (for tests)">,
    Option<"glaTiles", "gla-tiles", "bool", /*default=*/"false",
           "With gla-column-threads and gla-column-chunk > 0, a gla (either "
           "algorithm) of real f32 decays, dk and dv static multiples of 16 "
           "whose block buffers fit 48 KiB (dk + dv at most 144), goes "
           "instead of the column form's chunks in chunks of 16 steps where "
           "it runs longer than 32 steps over fewer than 16384 columns, as "
           "a warp's matrix tiles: a block of 32 threads per (leading "
           "index, chunk) takes the chunk's state from zero, K^T V, then, "
           "after the chunks' carries a thread per column, its outputs, S V "
           "+ (q P) E, by vector.contract of 16 x 8 by 8 x 16 tiles of "
           "f32 operands split into two tf32 halves (three products: the "
           "CUDA pipeline's tensor-core form, recurc's --cuda-gla-tiles; "
           "the same loops run on the CPU); with gla-column-threads (any "
           "gla-column-chunk) a gated_linear_attention_grad of the same "
           "kind whose block buffers fit goes in such chunks at any "
           "length: the chunks' states and "
           "carries as the forward's, then by blocks of 32 threads what "
           "each chunk's outputs send back, (q P)^T dy, the cotangents' "
           "carries a thread per column, dv = S^T dy + (k P) H, and dq, dk "
           "and da a thread a key row after v dy^T, E dy^T and H v^T by "
           "tiles">,
    Option<"windowWarpTiles", "window-warp-tiles", "bool",
           /*default=*/"false",
           "Without window-tiles, a window_attention of f32 whose channels "
           "are static multiples of 16 (its block buffers within 48 KiB: d "
           "= dv = 64 takes 32 KiB) goes by a warp's matrix tiles: a block "
           "of 32 threads per (leading index, tile of 16 queries) walks the "
           "16-row tiles of its queries' key ranges, S = Q K^T and O += P V "
           "by vector.contract of 16 x 8 by 8 x 16 tiles of f32 operands "
           "split into two tf32 halves, the online softmax a thread a query "
           "row in between; and a window_attention_grad of such channels, "
           "where both of its launches' block buffers fit (d = dv = 64 do), "
           "a block per tile of 16 queries (the softmax's statistics, then "
           "dq^T += K^T dS^T) and a block per tile of 16 key rows (dv += P^T "
           "dY, dk += dS^T Q) (the CUDA pipeline's tensor-core form, "
           "recurc's --cuda-window-warp-tiles; the same loops run on the "
           "CPU)">,
    Option<"scanWarpsEmulated", "scan-warps-emulated", "bool",
           /*default=*/"false",
           "scan-warps' form with a warp's 32 lanes side by side in each "
           "iteration of the nest (no lane loop, no gpu.shuffle: a lane's "
           "value from another is taken directly), so that the form's "
           "arithmetic runs on the CPU (for tests; implies scan-warps)">,
    Option<"streamStoreBytes", "stream-store-bytes", "int64_t",
           /*default=*/"0",
           "A linear_scan of f32 or f64 in groups (see scan-group) whose "
           "output holds at least this many bytes (0: none) sweeps each row "
           "in vectors of 256 bits (complex ones of f32 or f64 with a "
           "transition per channel as vectors of their parts, through "
           "recur.view_as_real) and tags its time loop "
           "`recur.stream_stores`, for `recur-stream-stores` to write the "
           "output around the cache; smaller outputs keep the scalar loops">,
    Option<"glaColumnThreads", "gla-column-threads", "bool",
           /*default=*/"false",
           "Lower a recurrent gla with its output columns independent too "
           "(a nest over the leading indices and the columns, each column "
           "of the state swept on its own): the GPU's form; the CPU's "
           "sweeps the state row by row over contiguous columns. A chunked "
           "gla whose state column fits in registers (see gla-column-chunk) "
           "goes the same way in chunks of its own chunk_size">,
    Option<"glaColumnChunk", "gla-column-chunk", "int64_t",
           /*default=*/"0",
           "With gla-column-threads, a recurrent gla whose state column fits "
           "in 128 32-bit registers (dk static; a complex or f64 value two, "
           "a complex<f64> four) keeps it in registers, and where it runs "
           "longer than twice this many steps over fewer than 16384 output "
           "columns (leading indices times dv), goes in chunks of this many "
           "steps: the chunks' decay products a thread per (chunk, key row), "
           "each chunk's state from zero a thread per (chunk, column), the "
           "state entering each chunk a thread per column, then each chunk "
           "again from it a thread per (chunk, column), writing the outputs "
           "(the GPU's form; 0: a thread a column, the state in memory). "
           "Its backward, where the state's rows and columns fit in 128 "
           "registers and a chunk's states of a row in 32 KiB (dv static "
           "too), goes in the same chunks: the states entering them as "
           "above, what each chunk sends back into the state before it a "
           "thread per (chunk, column), the cotangents entering the chunks a "
           "thread per column, dq, dk and da a thread per (chunk, key row), "
           "dv a thread per (chunk, column) (0: the reverse sweep a leading "
           "index at a time)">,
    Option<"windowTiles", "window-tiles", "bool", /*default=*/"false",
           "Lower window_attention as window_attention_grad is lowered: "
           "per leading index, tiles of 16 queries over the union of their "
           "bands, Q K^T and P V in register blocks of vector.fma over "
           "consecutive keys (the CPU's form; sums reassociated, so results "
           "agree with the row-at-a-time loops to rounding); otherwise a "
           "query row at a time, rows independent (the GPU's form)">,
    Option<"windowOnePass", "window-one-pass", "bool", /*default=*/"false",
           "Without window-tiles, lower a window_attention whose query and "
           "value channels are static, d + dv at most 160 values of 32 bits "
           "(an f64 two), in one pass over each query's keys: a query a "
           "thread, its query channels, running largest logit, running sum "
           "of weights and output row carried from key to key (an online "
           "softmax: one exp per key), the row written once; queries that "
           "may see 128 keys or more walk the union of the ranges of their "
           "aligned group of 32 together, each skipping the keys outside its "
           "own, so that a warp reads the same rows at once; and a "
           "window_attention_grad whose channels are static, "
           "2 d + dv at most 192 such values, in passes a thread a "
           "query (the softmax's statistics, then dq, and its row of the "
           "bias's cotangent) and a thread a key row (dv, then dk), their "
           "sums in registers (a T5 table's row in memory, a bucket's run of "
           "keys written once), the bias's cotangent then summed over runs "
           "of 64 positions and over those by head (the GPU's form; sums "
           "reassociated, so results agree with the other forms to "
           "rounding)">,
    Option<"attentionProducts", "attention-products", "bool",
           /*default=*/"false",
           "Lower an attention with no mask and no key padding whose query "
           "and key counts are static, with at most 2^20 scores per leading "
           "index, as linalg ops per leading index (a nest of independent "
           "iterations): the scores scale q k^T and p v as contractions (for "
           "recur-block-contractions) and a safe softmax per row between "
           "them, as its adjoint decomposes it (the CPU's form; results "
           "agree with the row-at-a-time loops to rounding). A masked or "
           "padded attention keeps the row form, which never reads a hidden "
           "key">,
    Option<"glaProducts", "gla-products", "bool",
           /*default=*/"false",
           "Lower a chunked gated_linear_attention and a "
           "gated_linear_attention_grad with real f32 or f64 decays and "
           "chunks of at most 64 steps, one leading index at a time, in "
           "their product form where every decay of that index lies in "
           "[2^(-32 / chunk), 1] (checked when it runs): per chunk, the "
           "products of the chunked algorithm as linalg contractions (for "
           "recur-block-contractions), the states (and cotangents) carried "
           "from chunk to chunk, and the decays' cotangents from the "
           "identity a da = sum (q dq - k dk) (the CPU's form; results "
           "agree with the chunks' loops and the reverse sweep to "
           "rounding). Other indices take the log-space chunks (chunked) "
           "or the recurrence step by step (auto) forward and the reverse "
           "sweep backward. With this option `auto` takes the product form, "
           "in chunks of 32 unless the op names its chunk, for a static "
           "state of at least 32 KiB per leading index">
  ];
  let dependentDialects = [
    "::mlir::affine::AffineDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::bufferization::BufferizationDialect",
    "::mlir::func::FuncDialect",
    "::mlir::complex::ComplexDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def RecurParallelizeLoops : Pass<"recur-parallelize-loops",
                                 "::mlir::func::FuncOp"> {
  let summary = "Turn the loops RecurToLoops marked independent into "
                "scf.parallel, one parallel nest deep";
  let description = [{
    Runs after one-shot bufferization of the output of
    `convert-recur-to-loops{mark-parallel}`. An `scf.for` tagged
    `recur.parallel` whose iteration arguments are all memrefs yielded back
    unchanged (each iteration writes its own elements of the same buffers,
    in place) becomes an `scf.parallel`; a tagged loop whose bufferized form
    copies a buffer (a yielded value that is not its own iteration
    argument) is left sequential, so the tag is a promise checked against
    what bufferization did. Perfectly nested parallel loops are merged into
    one multi-dimensional `scf.parallel`, and an `scf.parallel` nested in
    another one (from the tags or from `convert-linalg-to-parallel-loops`)
    is turned back into `scf.for` loops, so `convert-scf-to-openmp` forks
    threads once per nest and never nests thread teams.

    The lanes of a warp (a loop tagged `recur.warp_lanes` as well:
    linear_scan's warp form, `scan-warps`) may all write the same value to
    one element, so for them only the in-place yields and the writes into
    captured buffers are checked; they exchange values by `gpu.shuffle`, so
    a lane loop that cannot become parallel, or that stays nested in
    another parallel loop instead of merging into it as its last
    dimension, is an error.

    The tiles of linear_scan's block form (`scan-blocks`: a loop tagged
    `recur.gpu_block` as well) become an `scf.parallel` that keeps that
    tag, or the pass fails; inside another parallel loop the tag goes (its
    blocks and their threads then run one after another in their thread).
    Its atomic updates (`memref.atomic_rmw`, `memref.generic_atomic_rmw`:
    the tiles' statuses, which they publish and read by design) do not
    keep it sequential; in any other loop an atomic at a position not
    placed by the loop does. The block's threads
    (loops tagged `recur.block_threads`) stay `scf.for`, but must update
    their buffers in place, each thread its own elements, or the pass
    fails: `recur-gpu-offload` runs them side by side.

    Before (bufferized):

    ```mlir
    %r = scf.for %b = %c0 to %n step %c1 iter_args(%o = %out) -> (memref<?xf32>) {
      ...
      memref.store %v, %o[%b] : memref<?xf32>
      scf.yield %o : memref<?xf32>
    } {recur.parallel}
    ```

    After:

    ```mlir
    scf.parallel (%b) = (%c0) to (%n) step (%c1) {
      ...
      memref.store %v, %out[%b] : memref<?xf32>
    }
    ```
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect"];
}

def RecurFuseElementwise : Pass<"recur-fuse-elementwise"> {
  let summary = "Elementwise producer-consumer fusion of linalg ops, except "
                "producers that read their own init";
  let description = [{
    `linalg-fuse-elementwise-ops` with one restriction: a producer whose
    body reads one of its inits (an all-parallel generic computing
    `out + x * y` over a filled init, as the front end emits an einsum
    without summed labels) is not fused into its consumers. Upstream's
    fusion of such producers gave wrong results in derived backward kernels
    (a weight table computed inside a block body); they stay separate loops.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def RecurInterchangeReductions : Pass<"recur-interchange-reductions"> {
  let summary = "Move the contiguous output dimension of linalg contractions "
                "inside their reductions";
  let description = [{
    A linalg op with reduction loops whose innermost loop is a reduction (a
    matmul `y[b, t, n] += x[b, t, k] W[k, n]` in the order b, t, n, k) runs,
    once lowered to loops, one scalar dot product per output element with a
    strided walk down a column of `W`. This pass interchanges its loops so
    that the dimension indexing the last (contiguous) dimension of the
    output comes last, after the reductions (b, t, k, n): the innermost loop
    then updates a row of the output from a row of an input, which LLVM
    vectorizes. It applies when that dimension is parallel and also indexes
    the last dimension of an input (so it streams through memory there too);
    named ops with reductions are generalized first.

    Each output element still sums its terms in the same order (the
    reduction loops keep their relative order), so results are bit-for-bit
    those of the original loop order.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def RecurSplitReductions : Pass<"recur-split-reductions",
                                "::mlir::func::FuncOp"> {
  let summary = "Sum a reduction onto few output elements in parts, over "
                "many parallel iterations (GPU)";
  let description = [{
    Runs after bufferization, before linalg becomes loops (CUDA pipeline).
    A linalg reduction lowered to parallel loops is a thread per output
    element, each summing all of its terms alone: a parameter's gradient
    summed over batch and time (a gate bias of D elements, say) leaves a
    GPU with D threads. A linalg op on buffers (named ones through their
    bodies) whose outputs are each indexed by all of its parallel loops and
    nothing else, each formed as `out + e` (`arith.addf` or `complex.add`,
    `out` read nowhere else), with at most `threads` / 2 iterations of its
    parallel loops (all static, none empty), no other operand a view of
    an output's buffer, a body that neither writes memory nor reads its
    loop indices from nested regions, and around it only what stays on the
    host (`scf.for` not tagged `recur.parallel` and `scf.if`, carrying only
    buffers, indices and integers, their operands not loaded from memory:
    the partials are allocated where the op stands), instead becomes two
    parallel loops: the first over (part, parallel loops) sums a part's
    contiguous run of the reduction loops' iterations (flattened, the last
    one fastest; their indices carried from iteration to iteration, divided
    out only at the run's start) into a partial of its own, starting from
    -0.0; the second, over the parallel loops, adds the parts' partials to
    the output in order. For R reduction iterations at run time and P
    parallel ones, the runs are c = ceil(R / max(min(ceil(threads / P),
    floor(R / min-terms)), 1)) iterations and the parts ceil(R / c): about
    `threads` iterations of the first loop in all, each run at least
    `min-terms` long where R is (but the last, what remains). Where an element may have more than 4 x
    `min-terms` parts (min(ceil(threads / P), floor(R / min-terms)), R's
    static bound where it has one), the parts are summed by a reduction of
    their own, split in turn (a sum onto one element: 65536 parts, then
    1024, then 16). The terms are those of the original; their sums are
    associated differently (by parts).

    ```mlir
    linalg.generic {indexing_maps = [(d0, d1, d2) -> (d1, d2, d0),
                                     (d0, d1, d2) -> (d0)],
                    iterator_types = ["parallel", "reduction", "reduction"]}
        ins(%x : memref<?x?x16xf32>) outs(%y : memref<16xf32>) {...}
    // becomes
    %partial = memref.alloc(%parts) : memref<?x16xf32>
    scf.parallel (%s, %d) = (%c0, %c0) to (%parts, %c16) step (%c1, %c1) {
      // the iterations [s c, min(s c + c, R)) of (d1, d2), from zero
    }
    scf.parallel (%d) = (%c0) to (%c16) step (%c1) {
      // y[d] + partial[0, d] + ... + partial[parts - 1, d]
    }
    ```
  }];
  let options = [
    Option<"threads", "threads", "int64_t", /*default=*/"65536",
           "The parallel iterations (GPU threads) to aim for: a reduction "
           "onto at most half as many output elements is split (0: "
           "never)">,
    Option<"minTerms", "min-terms", "int64_t", /*default=*/"64",
           "The fewest terms a part sums, where the reduction has that "
           "many (1 to 2^32)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::complex::ComplexDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::affine::AffineDialect"];
}

def RecurBlockContractions : Pass<"recur-block-contractions"> {
  let summary = "Run linalg matrix products on tensors as loops over "
                "register blocks of vectors (CPU)";
  let description = [{
    A linalg contraction `C[..., i, ..., j] += A[..., i, ..., k] *
    B[..., k, ..., j]` on tensors, with one reduction dimension `k`, `j`
    the last dimension of `C`, read by `B` and not by `A`, a dimension `i`
    of `A` and `C` absent from `B`, and the body a multiply and an add of
    one float type, becomes loops over blocks of `rows` values of `i` by
    `cols` vectors of `j` (8 lanes of f32, 4 of f64): the block's outputs
    are read into vector registers, the loop over `k` broadcasts one element
    of `A` per row and loads one vector of `B` per column, and adds their
    products with `vector.fma`, and the block is written back once. Lowered
    to plain loops instead, each multiply-add loads and stores its output
    vector. Where `j` is not `B`'s last dimension (`C = A B^T`, as in the
    input gradients of a backward), the blocks read a copy of `B` with that
    dimension moved last (`linalg.transpose`, one pass over `B`).

    What a block does not cover goes by narrower blocks: the rows left over
    one at a time, the columns left over one vector at a time, and the last
    columns short of a vector in one vector read and written past the end
    (masked). The loops over the other parallel dimensions and over the row
    blocks are tagged `recur.parallel`. Each output element sums its terms
    in the same order as before, each step a fused multiply-add.

    Where `C` is a `linalg.fill` (a product summed from zero), the blocks
    start from the fill's value instead of reading `C`, and write a new
    tensor of `C`'s sizes: the fill's pass over memory goes with its last
    use.

    Two discardable attributes of the contraction, set by the ops that build
    it (the GLA's product forms), say what of it is known: with
    `recur.lower_triangular_input = n`, input `n` is `A`, a 2-D tensor zero
    above its diagonal, so a block of rows sums `k` only up to its last row
    (`A[i, k]`) or from its first (`A[k, i]`): the terms left out are
    products with zeros, and the sums are the same. With
    `recur.lower_triangular_result`, only `C[i, j]` with `j <= i` are read
    afterwards, so a block of rows computes its columns only up to the
    vector holding its last row's diagonal element; the others keep what
    the tensor held.
  }];
  let options = [
    Option<"rows", "rows", "int64_t", /*default=*/"6",
           "Rows of `i` per register block">,
    Option<"cols", "cols", "int64_t", /*default=*/"2",
           "Vectors of `j` per register block">,
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::vector::VectorDialect"];
}

def RecurDestinationOutputs : Pass<"recur-destination-outputs",
                                   "::mlir::ModuleOp"> {
  let summary = "Write each output of a layer function into a destination "
                "argument of the caller's instead of returning it";
  let description = [{
    Runs after bufferization and before buffer deallocation. For each
    function with results whose `recur.role` is `output` (a layer's) or
    `grad` (a derived backward's), appends one argument per such result (the result's memref type;
    `recur.role = "destination"`, the output's `recur.name`), and the
    output is written there instead of returned: where it was a
    `memref.alloc` of the function's entry block (returned directly or
    through loops and branches that update it in place), the allocation is
    replaced by the argument, so the loops computing the output write
    straight into it; any other buffer is copied into the argument before
    the return. The outputs are then dropped from the results (returning an
    argument would make the deallocation pipeline copy it). The runtime
    passes the user's output tensor there
    (`recur_layer_desc.output_destinations`), so an output crosses memory
    once instead of being written to a buffer of the kernel's and copied.

    ```mlir
    func.func @F(%x: memref<?xf32>) -> (memref<?xf32> {recur.role = "output"}) {
      %y = memref.alloc(%n) : memref<?xf32>
      ...
      return %y
    }
    // becomes
    func.func @F(%x: memref<?xf32>,
                 %d: memref<?xf32> {recur.role = "destination"}) {
      ... (the loops write %d)
      return
    }
    ```
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def RecurStreamStores : Pass<"recur-stream-stores", "::mlir::ModuleOp"> {
  let summary = "Write the output of loops tagged recur.stream_stores around "
                "the cache";
  let description = [{
    Runs after bufferization. In each `scf.for` tagged `recur.stream_stores`
    (a linear_scan's time loop whose output is larger than the last-level
    cache, see convert-recur-to-loops' stream-store-bytes), the in-bounds
    1-D `vector.transfer_read` / `vector.transfer_write` ops on memrefs
    become `vector.load` / `vector.store`, and every store whose indices
    depend on the tagged loop's induction variable (each element written
    once, the output) becomes non-temporal: it goes to memory without
    first reading the line into the cache (a third of a scan's traffic)
    and without evicting what is reused (the carry row, whose store does
    not depend on the time step). A store at an address aligned to its
    vector's size is emitted as such (`vmovntps`); one that is not keeps
    the element's alignment (LLVM writes it as 8-byte non-temporal
    stores). Non-temporal stores are weakly ordered, so a sequentially
    consistent fence follows the loop, before its thread reaches the end of
    its parallel loop. Each load whose indices depend on the induction
    variable is preceded by a prefetch of what it reads one step later (a
    thread's share of a row is often less than a 4 KiB page, where the
    hardware's prefetchers restart), unless the loop is also tagged
    `recur.stream_contiguous` (linear_scan's few-channels form: each input
    one contiguous stream, which they follow). The tags are removed.

    ```mlir
    scf.for %t = ... {                          // recur.stream_stores
      scf.for %j = %c0 to %n step %c8 {
        %h = ...
        vector.transfer_write %h, %out[%t, %j] {in_bounds = [true]}
        vector.transfer_write %h, %carry[%j] {in_bounds = [true]}
      }
    }
    // becomes
    scf.for %t = ... {
      scf.for %j = %c0 to %n step %c8 {
        scf.if %aligned {
          vector.store %h, %out[%t, %j] {alignment = 32, nontemporal = true}
        } else {
          vector.store %h, %out[%t, %j] {nontemporal = true}
        }
        vector.store %h, %carry[%j]
      }
    }
    llvm.fence seq_cst
    ```
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::vector::VectorDialect"];
}

def RecurStripFrontEndAttributes : Pass<"recur-strip-front-end-attributes",
                                        "::mlir::ModuleOp"> {
  let summary = "Drop the recur.* attributes of LLVM dialect functions";
  let description = [{
    The last step of the CPU pipeline: the front end's argument and result
    attributes (`recur.name`, `recur.role`, ...) and the lowering's function
    attributes (`recur.allocates_nothing`, `recur.min_sizes`) have served,
    and LLVM has no use for them; after it, nothing of the recur dialect is
    left in the module. A loop annotation given to an `scf.for`
    (`llvm.loop_annotation`, such as the unrolling that
    recur-block-contractions turns off), which the scf and cf lowerings
    leave on the loop's latch branch as a discardable attribute, becomes
    that `llvm.br`'s `loop_annotation`, so that it reaches LLVM IR.
  }];
}

def RecurOutlineParallel : Pass<"recur-outline-parallel",
                                "::mlir::ModuleOp"> {
  let summary = "Give each OpenMP parallel region a function of its own, "
                "identical ones one function";
  let description = [{
    In the CPU pipeline, right after `convert-scf-to-openmp` (on memrefs,
    before anything is lowered to LLVM); it works on the LLVM dialect as
    well. Each outermost `omp.parallel` in a `func.func` or an `llvm.func`
    moves into a new function of the host's kind (`<host>_parallel<N>`)
    that takes the values it uses from the host as arguments (constants and
    other operand-free pure ops are copied in instead, so shapes stay
    constants to LLVM) and is called where the region was. Then functions
    whose bodies are structurally identical (same operations, attributes,
    types and use-def structure) are merged into one: a layer's backward
    recomputes forward loop nests, and layers repeat the same nest for each
    block, so a layer has many copies of few kernels. A new `llvm.func` is
    internal and `no_inline`; a new `func.func` is private, with
    `llvm.linkage = #llvm.linkage<internal>` and `passthrough =
    ["noinline"]`, which the conversion to LLVM keeps (it drops
    `no_inline`), so it becomes an internal `llvm.func` that LLVM IR marks
    `noinline`. Only the module's own functions are hosts (not those of a
    nested module); run twice, the pass would outline each kernel's region
    again, one call deeper.

    All of it cuts compile time, not run time: translating to LLVM IR
    outlines every parallel region with a walk of its whole function
    (LLVM's `CodeExtractor`), so hundreds of regions in one function cost
    quadratically, while in a small function each costs little; the
    passes from here to LLVM IR, LLVM's optimizer and its code generator
    see each kernel once instead of once per copy; and a call that is not
    inlined leaves the code that packs a region's values for the OpenMP
    runtime (a stack slot and its lifetime markers per value) in the
    kernel's function once, not at every call site. The code each thread
    runs is the same.

    ```mlir
    llvm.func @F(%a: !llvm.ptr, %n: i64) {
      %c4 = llvm.mlir.constant(4 : i64) : i64
      omp.parallel { ... %a ... %n ... %c4 ... }
      omp.parallel { ... %a ... %n ... %c4 ... }
      llvm.return
    }
    // becomes
    llvm.func @F(%a: !llvm.ptr, %n: i64) {
      llvm.call @F_parallel0(%a, %n) : (!llvm.ptr, i64) -> ()
      llvm.call @F_parallel0(%a, %n) : (!llvm.ptr, i64) -> ()
      llvm.return
    }
    llvm.func internal @F_parallel0(%a: !llvm.ptr, %n: i64)
        attributes {no_inline} {
      %c4 = llvm.mlir.constant(4 : i64) : i64
      omp.parallel { ... %a ... %n ... %c4 ... }
      llvm.return
    }
    ```
  }];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::LLVM::LLVMDialect"];
}

def RecurPromoteAccumulators : Pass<"recur-promote-accumulators",
                                    "::mlir::func::FuncOp"> {
  let summary = "Carry a reduction's sum through its innermost loop as a "
                "value, not through memory";
  let description = [{
    Runs after bufferization (CPU pipeline). A linalg reduction lowered to
    loops loads and stores its output element on every step of its
    innermost loop; LLVM cannot keep the element in a register, because it
    cannot tell that the loop's other loads (from views of the layer's
    arguments) do not read it, so each step waits for the last step's
    store. In an innermost `scf.for` whose only memory effects are loads and
    stores, a `memref.load` / `memref.store` pair of one element at indices
    defined outside the loop, in a buffer the function allocated
    (`memref.alloc` or `memref.alloca`, through views) that no other load or
    store of the loop touches, becomes an iteration argument: loaded before
    the loop, stored after it. The arithmetic and its order are unchanged.

    ```mlir
    scf.for %k = %c0 to %c64 step %c1 {
      %a = memref.load %x[%i, %k] : memref<?x64xf32>
      %acc = memref.load %buf[%i] : memref<?xf32>
      %s = arith.addf %acc, %a : f32
      memref.store %s, %buf[%i] : memref<?xf32>
    }
    // becomes
    %init = memref.load %buf[%i] : memref<?xf32>
    %sum = scf.for %k = %c0 to %c64 step %c1 iter_args(%acc = %init) -> (f32) {
      %a = memref.load %x[%i, %k] : memref<?x64xf32>
      %s = arith.addf %acc, %a : f32
      scf.yield %s : f32
    }
    memref.store %sum, %buf[%i] : memref<?xf32>
    ```
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

def RecurWorkspaceBound : Pass<"recur-workspace-bound",
                               "::mlir::ModuleOp"> {
  let summary = "Add, beside each layer function, a function bounding the "
                "bytes its buffers hold at once";
  let description = [{
    Runs after bufferization and buffer deallocation (every buffer the
    function will ever allocate is a `memref.alloc` by then) and before the
    loops become OpenMP. For each public function `@F` it adds
    `@F_workspace`, taking F's arguments and then the thread count (index)
    and returning an upper bound, in bytes, on what F's allocations hold at
    once: the sum over its `memref.alloc` ops of the element size times an
    upper bound of each size in terms of F's arguments (from the value
    bounds of loop induction variables, `affine.min` and `memref.dim`;
    where those find none, a sum is bounded by the sum of its terms' bounds
    and an `affine.min` by any of its results that is a constant or a
    bounded operand), times the possible live copies: the threads for each enclosing
    `scf.parallel`, and two for each enclosing sequential loop that carries
    buffers (the previous iteration's and the new one; the deallocation
    pipeline frees every other buffer within its iteration). The runtime's
    `recur_workspace_size` calls it. When an allocation cannot be bounded
    this way (a size with no upper bound in terms of the arguments, a call
    to a function that allocates or is external, a realloc), `@F_workspace`
    returns -1 (unknown) and a remark on the allocation says why.

    ```mlir
    func.func @F(%x: memref<?x8xf32>) -> memref<?x8xf32> {
      %c0 = arith.constant 0 : index
      %n = memref.dim %x, %c0 : memref<?x8xf32>
      %y = memref.alloc(%n) : memref<?x8xf32>
      ...
    }
    // added:
    func.func @F_workspace(%x: memref<?x8xf32>, %threads: index) -> index {
      // dim(x, 0) * 32
    }
    ```
  }];
  let dependentDialects = [
    "::mlir::affine::AffineDialect",
    "::mlir::arith::ArithDialect"
  ];
}

def RecurGpuOffload : Pass<"recur-gpu-offload", "::mlir::func::FuncOp"> {
  let summary = "Move the work of a bufferized layer function onto the GPU "
                "as gpu.launch ops, leaving allocation and control on the "
                "host";
  let description = [{
    Runs where the CPU pipeline would convert parallel loops to OpenMP:
    after bufferization, `recur-parallelize-loops` and buffer deallocation.
    The function's memrefs are device memory (its arguments are device
    pointers, and the host's `memref.alloc` becomes a device allocation when
    the host code is lowered); the host keeps only what does not read or
    write them: allocation and deallocation, index arithmetic, and the loops
    and branches around parallel work (a block-recurrence loop, say). Each
    op of a host block is then one of:

    - an `scf.parallel` without reductions: one `gpu.launch` of
      `ceil(N / T)` blocks of T threads (the block-threads option, 256 by
      default; the CUDA pipeline's 128) over its `N` flattened
      iterations (each thread recovers its indices, the last dimension
      fastest, and skips when past the end), guarded by `N > 0`;
    - an `scf.parallel` tagged `recur.gpu_block` (linear_scan's block
      form): one `gpu.launch` of a block per iteration, of N threads, N the
      largest trip count of the loops from 0 to a constant tagged
      `recur.block_threads` at its block level (its body, and loops and
      branches there carrying nothing). Every thread runs the body: each
      such loop becomes iteration `i` in thread `i` (skipped past its
      end), with a `gpu.barrier` before and after; a run of ops that write
      memory (with the pure ops after them) runs in thread 0 alone, between
      barriers, the values it computes that later ops use shared through
      one-element block buffers; the rest (index arithmetic, reads, the
      loops and branches around the threads) runs alike in every thread.
      The body's buffers of static shape are the block's (workgroup
      attributions: shared memory) and their deallocations go. An op
      tagged `recur.fence_before` or `recur.fence_after` gets an
      `llvm.fence syncscope("device") acq_rel` before or after it (the
      NVPTX backend makes atomics relaxed);
    - a host-level `memref.copy`: the same, as a parallel copy loop;
    - an `scf.for` or `scf.if` that contains parallel loops, whose bounds
      and condition the host computes and whose carried values are buffers
      or integers: kept on the host, its body treated the same way;
    - anything else that touches memory (sequential loops, loads and
      stores), and pure ops that use what such ops compute: consecutive
      ones run together in a single-thread `gpu.launch`. A scalar one of
      them computes and later device code uses crosses through a
      one-element buffer.

    Inside launches, a `memref.alloc` of static shape becomes a
    `memref.alloca` hoisted to the top of the launch body (one private
    buffer per thread, reused by every iteration); one of dynamic shape
    whose sizes are defined outside the launch becomes the thread's slice
    (a `memref.view`) of an i8 pool the host allocates before the launch
    and frees after it, one slice of the buffer's bytes rounded up to 64 per
    thread of the grid. A constant buffer (`memref.get_global`) used in a
    launch is taken again inside it, so that `gpu-kernel-outlining` copies
    the global into the GPU module. `memref.dealloc` goes, `memref.copy`
    becomes loops,
    and nested parallel loops run sequentially in their thread. A buffer
    whose size device code computes, or host control (a loop bound, an
    allocation size) that depends on a value device code computes, is an
    error at its location. So is a `gpu.shuffle` (the lanes of a warp
    exchanging values: linear_scan's warp form) anywhere but in an
    outermost parallel loop whose last dimension runs from 0 to 32 step 1,
    launched in blocks of a multiple of 32 threads, which makes those
    iterations the lanes of one warp.

    The launches are outlined into kernels by `gpu-kernel-outlining`.
  }];
  let options = [
    Option<"blockThreads", "block-threads", "int64_t",
           /*default=*/"256",
           "Threads per block of the launches made from parallel loops (1 "
           "to 1024)">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect",
    "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect"
  ];
}

def RecurMergeGpuKernels : Pass<"recur-merge-gpu-kernels",
                                 "::mlir::ModuleOp"> {
  let summary = "Keep one GPU module of each set of identical outlined "
                "kernels";
  let description = [{
    Runs after `gpu-kernel-outlining`, which gives every launch a
    `gpu.module` of its own. Where two modules hold the same kernel (the
    same function type, attributes other than its name, and body, and the
    same other ops: the constant globals copied in), the launches of the
    second launch the first's kernel and the second module goes. A derived
    backward recomputes forward loop nests, and a block-recurrent layer
    repeats its block's, so many launches run the same code; each distinct
    kernel then goes through NVVM, `ptxas` and the module load once
    (GateLoop with its backward: 61 kernels, 23 distinct). A compile-time
    measure: what each launch computes is unchanged. First, every
    kernel's block buffers of rank 2 or more (the matrix tiles of the
    gla-tiles and window-warp-tiles forms) get an alignment of 32 bytes
    (`llvm.align`), which a warp's tile loads and stores (wmma) need;
    the others keep theirs.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

#endif // RECUR_CONVERSION_PASSES_TD
