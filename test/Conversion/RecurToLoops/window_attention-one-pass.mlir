// RUN: recur-opt %s --convert-recur-to-loops=window-one-pass=true --canonicalize --split-input-file | FileCheck %s --implicit-check-not=recur.
// RUN: recur-opt %s --convert-recur-to-loops="window-one-pass=true window-tiles=true" --split-input-file | FileCheck %s --check-prefix=TILES

// The GPU's form (window-one-pass): per query, its channels q[p, :] read
// once, then one loop over its keys carrying the running largest logit
// (from -inf), the running sum of weights and the output row (from 0), and
// the row written once, times 1 / the sum (0 when no key counted). A key of
// logit s: delta = s - m; exp(-|delta|) rescales the sums when delta > 0
// (the key's weight then 1) and is the key's weight otherwise. A query sees
// at most 2 keys here (fewer than 128): it walks its own range, every key
// visible.

// CHECK-LABEL: func.func @window_cache
// CHECK-SAME: (%[[Q:[^ ]+]]: tensor<3x2xf32>, %[[K:[^ ]+]]: tensor<3x2xf32>, %[[V:[^ ]+]]: tensor<3x1xf32>, %[[KC:[^ ]+]]: tensor<2x2xf32>, %[[VC:[^ ]+]]: tensor<2x1xf32>)
// CHECK-DAG: %[[NEGINF:[^ ]+]] = arith.constant 0xFF800000 : f32
// CHECK-DAG: %[[ONE:[^ ]+]] = arith.constant 1.000000e+00 : f32
// CHECK-DAG: %[[ZERO:[^ ]+]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[SCALE:[^ ]+]] = arith.constant 0.707106769 : f32
// The keys, then the values, copied after their caches (rows, not
// transposed).
// CHECK: %[[KEYS:[^ ]+]] = scf.for
// CHECK:   tensor.extract %[[KC]]
// CHECK:   tensor.extract %[[K]]
// CHECK:   tensor.insert {{.+}} : tensor<5x2xf32>
// CHECK: %[[VALUES:[^ ]+]] = scf.for
// CHECK:   tensor.extract %[[VC]]
// CHECK:   tensor.extract %[[V]]
// CHECK:   tensor.insert {{.+}} : tensor<5x1xf32>
// CHECK: scf.for %[[P:[^ ]+]] = {{.+}} -> (tensor<3x1xf32>) {
// CHECK:   %[[BEGIN:[^ ]+]] = arith.maxsi %[[P]]
// CHECK:   %[[END:[^ ]+]] = arith.addi %[[P]], %{{.+}} : index
// CHECK:   %[[Q0:[^ ]+]] = tensor.extract %[[Q]][%[[P]], %{{.+}}]
// CHECK:   %[[Q1:[^ ]+]] = tensor.extract %[[Q]][%[[P]], %{{.+}}]
// CHECK:   %[[SUMS:[^ ]+]]:3 = scf.for %[[R:[^ ]+]] = %[[BEGIN]] to %[[END]] step %{{.+}} iter_args(%[[M:[^ ]+]] = %[[NEGINF]], %[[L:[^ ]+]] = %[[ZERO]], %[[ACC:[^ ]+]] = %[[ZERO]]) -> (f32, f32, f32) {
// CHECK:     %[[K0:[^ ]+]] = tensor.extract %[[KEYS]][%[[R]], %{{.+}}]
// CHECK:     %[[K1:[^ ]+]] = tensor.extract %[[KEYS]][%[[R]], %{{.+}}]
// CHECK:     %[[P0:[^ ]+]] = arith.mulf %[[Q0]], %[[K0]] : f32
// CHECK:     %[[P1:[^ ]+]] = arith.mulf %[[Q1]], %[[K1]] : f32
// CHECK:     %[[DOT:[^ ]+]] = arith.addf %[[P0]], %[[P1]] : f32
// CHECK:     %[[S:[^ ]+]] = arith.mulf %[[DOT]], %[[SCALE]] : f32
// CHECK:     %[[DELTA:[^ ]+]] = arith.subf %[[S]], %[[M]] : f32
// CHECK:     %[[RISING:[^ ]+]] = arith.cmpf ogt, %[[DELTA]], %[[ZERO]] : f32
// CHECK:     %[[ABS:[^ ]+]] = math.absf %[[DELTA]] : f32
// CHECK:     %[[NEG:[^ ]+]] = arith.negf %[[ABS]] : f32
// CHECK:     %[[DECAY:[^ ]+]] = math.exp %[[NEG]] : f32
// CHECK:     %[[RESCALE0:[^ ]+]] = arith.select %[[RISING]], %[[DECAY]], %[[ONE]] : f32
// CHECK:     %[[WEIGHT0:[^ ]+]] = arith.select %[[RISING]], %[[ONE]], %[[DECAY]] : f32
// CHECK:     %[[MAX:[^ ]+]] = arith.maximumf %[[M]], %[[S]] : f32
// A key of logit -inf does not count (a NaN one does).
// CHECK:     %[[COUNTS:[^ ]+]] = arith.cmpf une, %[[S]], %[[NEGINF]] : f32
// CHECK:     %[[RESCALE:[^ ]+]] = arith.select %[[COUNTS]], %[[RESCALE0]], %[[ONE]] : f32
// CHECK:     %[[WEIGHT:[^ ]+]] = arith.select %[[COUNTS]], %[[WEIGHT0]], %[[ZERO]] : f32
// CHECK:     %[[MNEXT:[^ ]+]] = arith.select %[[COUNTS]], %[[MAX]], %[[M]] : f32
// CHECK:     %[[LR:[^ ]+]] = arith.mulf %[[L]], %[[RESCALE]] : f32
// CHECK:     %[[LNEXT:[^ ]+]] = arith.addf %[[LR]], %[[WEIGHT]] : f32
// CHECK:     %[[V0:[^ ]+]] = tensor.extract %[[VALUES]][%[[R]], %{{.+}}]
// CHECK:     %[[AR:[^ ]+]] = arith.mulf %[[ACC]], %[[RESCALE]] : f32
// CHECK:     %[[WV:[^ ]+]] = arith.mulf %[[WEIGHT]], %[[V0]] : f32
// CHECK:     %[[ANEXT:[^ ]+]] = arith.addf %[[AR]], %[[WV]] : f32
// CHECK:     scf.yield %[[MNEXT]], %[[LNEXT]], %[[ANEXT]] : f32, f32, f32
// CHECK:   }
// The row times 1 / l (0 where no key counted).
// CHECK:   %[[SEEN:[^ ]+]] = arith.cmpf ogt, %[[SUMS]]#1, %[[ZERO]] : f32
// CHECK:   %[[RECIP:[^ ]+]] = arith.divf %[[ONE]], %[[SUMS]]#1 : f32
// CHECK:   %[[INVL:[^ ]+]] = arith.select %[[SEEN]], %[[RECIP]], %[[ZERO]] : f32
// CHECK:   %[[O:[^ ]+]] = arith.mulf %[[SUMS]]#2, %[[INVL]] : f32
// CHECK:   tensor.insert %[[O]] into %{{.+}}[%[[P]], %{{.+}}] : tensor<3x1xf32>
// CHECK-NOT: bufferization.alloc_tensor
// TILES-LABEL: func.func @window_cache
// TILES: vector.fma
func.func @window_cache(%q: tensor<3x2xf32>, %k: tensor<3x2xf32>, %v: tensor<3x1xf32>, %kc: tensor<2x2xf32>, %vc: tensor<2x1xf32>) -> tensor<3x1xf32> {
  %o = recur.window_attention %q, %k, %v cache(%kc, %vc : tensor<2x2xf32>, tensor<2x1xf32>) window 2 : tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x1xf32>
  return %o : tensor<3x1xf32>
}

// -----

// A window of 128 with include_self (the query and the 127 before it):
// the 32 queries of an aligned group walk the union of their ranges, from
// the first query's begin to the last one's end (at most the keys there
// are), each skipping the keys outside its own range: such a key (or one
// of logit -inf) rescales nothing, weighs nothing and leaves the largest
// logit as it was.

// CHECK-LABEL: func.func @window_grouped
// CHECK-SAME: (%[[Q:[^ ]+]]: tensor<2x?x2xf32>, %[[K:[^ ]+]]: tensor<2x?x2xf32>, %[[V:[^ ]+]]: tensor<2x?x2xf32>, %[[SL:[^ ]+]]: tensor<2xf32>)
// CHECK-DAG: %[[NEGINF:[^ ]+]] = arith.constant 0xFF800000 : f32
// CHECK-DAG: %[[ONE:[^ ]+]] = arith.constant 1.000000e+00 : f32
// CHECK-DAG: %[[ZERO:[^ ]+]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[C32:[^ ]+]] = arith.constant 32 : index
// CHECK-DAG: %[[C127:[^ ]+]] = arith.constant 127 : index
// CHECK-DAG: %[[T:[^ ]+]] = tensor.dim %[[Q]], %{{.+}} : tensor<2x?x2xf32>
// CHECK: scf.for %[[H:[^ ]+]] =
// CHECK:   scf.for %[[P:[^ ]+]] = %{{.+}} to %[[T]]
// CHECK:     %[[FIRST:[^ ]+]] = arith.subi %[[P]], %[[C127]] : index
// CHECK:     %[[BEGIN:[^ ]+]] = arith.maxsi %[[FIRST]], %{{.+}} : index
// CHECK:     %[[END:[^ ]+]] = arith.addi %[[P]], %{{.+}} : index
// CHECK:     %[[LANE:[^ ]+]] = arith.remui %[[P]], %[[C32]] : index
// CHECK:     %[[G0:[^ ]+]] = arith.subi %[[P]], %[[LANE]] : index
// CHECK:     %[[GFIRST:[^ ]+]] = arith.subi %[[G0]], %[[C127]] : index
// CHECK:     %[[GBEGIN:[^ ]+]] = arith.maxsi %[[GFIRST]], %{{.+}} : index
// CHECK:     %[[GLAST:[^ ]+]] = arith.addi %[[G0]], %[[C32]] : index
// CHECK:     %[[GEND:[^ ]+]] = arith.minsi %[[GLAST]], %[[T]] : index
// CHECK:     scf.for %[[R:[^ ]+]] = %[[GBEGIN]] to %[[GEND]] step %{{.+}} iter_args(%[[M:[^ ]+]] = %{{.+}}, %{{.+}} = %[[ZERO]], %{{.+}} = %[[ZERO]], %{{.+}} = %[[ZERO]]) -> (f32, f32, f32, f32) {
// The ALiBi bias -slope[h] * (p - r).
// CHECK:       %[[DIST:[^ ]+]] = arith.subi %[[P]], %[[R]] : index
// CHECK:       tensor.extract %[[SL]][%[[H]]]
// CHECK:       %[[S:[^ ]+]] = arith.addf
// CHECK:       %[[AFTER:[^ ]+]] = arith.cmpi sge, %[[R]], %[[BEGIN]] : index
// CHECK:       %[[BEFORE:[^ ]+]] = arith.cmpi slt, %[[R]], %[[END]] : index
// CHECK:       %[[VISIBLE:[^ ]+]] = arith.andi %[[AFTER]], %[[BEFORE]] : i1
// CHECK:       %[[DECAY:[^ ]+]] = math.exp
// CHECK:       %[[RESCALE:[^ ]+]] = arith.select %{{.+}}, %[[DECAY]], %[[ONE]] : f32
// CHECK:       %[[WEIGHT:[^ ]+]] = arith.select %{{.+}}, %[[ONE]], %[[DECAY]] : f32
// CHECK:       %[[MAX:[^ ]+]] = arith.maximumf %[[M]], %[[S]] : f32
// CHECK:       %[[FINITE:[^ ]+]] = arith.cmpf une, %[[S]], %[[NEGINF]] : f32
// CHECK:       %[[COUNTS:[^ ]+]] = arith.andi %[[FINITE]], %[[VISIBLE]] : i1
// CHECK:       arith.select %[[COUNTS]], %[[RESCALE]], %[[ONE]] : f32
// CHECK:       arith.select %[[COUNTS]], %[[WEIGHT]], %[[ZERO]] : f32
// CHECK:       arith.select %[[COUNTS]], %[[MAX]], %[[M]] : f32
// CHECK-NOT: bufferization.alloc_tensor
func.func @window_grouped(%q: tensor<2x?x2xf32>, %k: tensor<2x?x2xf32>, %v: tensor<2x?x2xf32>, %sl: tensor<2xf32>) -> tensor<2x?x2xf32> {
  %o = recur.window_attention %q, %k, %v bias(%sl : tensor<2xf32>) window 128 {include_self, bias_kind = #recur.bias<alibi>} : tensor<2x?x2xf32>, tensor<2x?x2xf32>, tensor<2x?x2xf32>
  return %o : tensor<2x?x2xf32>
}

// -----

// Channels that are not static (or more than 160 in all) keep the row
// form: a scratch row of logits.

// CHECK-LABEL: func.func @window_dynamic_channels
// CHECK: bufferization.alloc_tensor
// CHECK-NOT: arith.select
func.func @window_dynamic_channels(%q: tensor<?x?xf32>, %k: tensor<?x?xf32>, %v: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %o = recur.window_attention %q, %k, %v window 2 : tensor<?x?xf32>, tensor<?x?xf32>, tensor<?x?xf32>
  return %o : tensor<?x?xf32>
}

// -----

// 96 query channels and 80 value channels: 176, more than a thread keeps
// in registers.

// CHECK-LABEL: func.func @window_wide_channels
// CHECK: bufferization.alloc_tensor
func.func @window_wide_channels(%q: tensor<5x96xf32>, %k: tensor<5x96xf32>, %v: tensor<5x80xf32>) -> tensor<5x80xf32> {
  %o = recur.window_attention %q, %k, %v window 2 : tensor<5x96xf32>, tensor<5x96xf32>, tensor<5x80xf32>
  return %o : tensor<5x80xf32>
}

// -----

// The backward without a bias, with a cache: the keys and values after
// their caches, then (1) a nest over the queries: the softmax's statistics
// over the query's keys (largest logit, sum of weights and the weighted
// sum of dP = dy . v, rescaled together), 1 / l (0 where no key was seen)
// and D, then dq over the same keys again, keeping m, 1 / l and D per
// query; (2) a nest over the key rows (cache rows first) for dv and (3)
// one for dk, each over the queries that see the row (p from r - C + 1,
// the least delta, to r - C + 2, the largest, within [0, T)), reading
// those statistics, and writing the row into the cache's cotangent for
// r < C and into the sequence's otherwise.

// CHECK-LABEL: func.func @grad_cache
// CHECK-DAG: %[[NEGINF:[^ ]+]] = arith.constant 0xFF800000 : f32
// CHECK-DAG: %[[ZERO:[^ ]+]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[ONE:[^ ]+]] = arith.constant 1.000000e+00 : f32
// CHECK: %[[KEYS:[^ ]+]] = scf.for {{.+}} -> (tensor<5x2xf32>)
// CHECK: %[[VALUES:[^ ]+]] = scf.for {{.+}} -> (tensor<5x1xf32>)
// CHECK: %[[PERQ:[^ ]+]]:4 = scf.for %[[P:[^ ]+]] = {{.+}} -> (tensor<3x2xf32>, tensor<3xf32>, tensor<3xf32>, tensor<3xf32>) {
// CHECK:   %[[STATS:[^ ]+]]:3 = scf.for {{.+}} iter_args(%{{.+}} = %[[NEGINF]], %{{.+}} = %[[ZERO]], %{{.+}} = %[[ZERO]]) -> (f32, f32, f32) {
// CHECK:     math.exp
// CHECK:   }
// CHECK:   %[[SEEN:[^ ]+]] = arith.cmpf ogt, %[[STATS]]#1, %[[ZERO]] : f32
// m is 0 where no key counted (not -inf: exp(s - m) / l is then 0, not NaN).
// CHECK:   %[[M:[^ ]+]] = arith.select %[[SEEN]], %[[STATS]]#0, %[[ZERO]] : f32
// CHECK:   %[[RECIP:[^ ]+]] = arith.divf %[[ONE]], %[[STATS]]#1 : f32
// CHECK:   %[[INVL:[^ ]+]] = arith.select %[[SEEN]], %[[RECIP]], %[[ZERO]] : f32
// CHECK:   %[[D:[^ ]+]] = arith.mulf %[[STATS]]#2, %[[INVL]] : f32
// CHECK:   %[[DQ:[^ ]+]]:2 = scf.for {{.+}} iter_args(%{{.+}} = %[[ZERO]], %{{.+}} = %[[ZERO]]) -> (f32, f32) {
// CHECK:     %[[SHIFTED:[^ ]+]] = arith.subf %{{.+}}, %[[M]] : f32
// CHECK:     %[[E:[^ ]+]] = math.exp %[[SHIFTED]] : f32
// CHECK:     arith.mulf %[[E]], %[[INVL]] : f32
// CHECK:     arith.subf %{{.+}}, %[[D]] : f32
// CHECK:   }
// CHECK:   tensor.insert %[[DQ]]#0 into %{{.+}}[%[[P]], %{{.+}}] : tensor<3x2xf32>
// CHECK:   tensor.insert %[[DQ]]#1 into %{{.+}}[%[[P]], %{{.+}}] : tensor<3x2xf32>
// CHECK:   tensor.insert %[[M]] into %{{.+}}[%[[P]]] : tensor<3xf32>
// CHECK:   tensor.insert %[[INVL]] into %{{.+}}[%[[P]]] : tensor<3xf32>
// CHECK:   tensor.insert %[[D]] into %{{.+}}[%[[P]]] : tensor<3xf32>
// CHECK: %[[DV:[^ ]+]]:2 = scf.for %[[R:[^ ]+]] = {{.+}} -> (tensor<3x1xf32>, tensor<2x1xf32>) {
// CHECK:   %[[FIRST:[^ ]+]] = arith.addi %[[R]], %{{.+}} : index
// CHECK:   %[[FROM:[^ ]+]] = arith.maxsi %[[FIRST]], %{{.+}} : index
// CHECK:   %[[LAST:[^ ]+]] = arith.addi %[[R]], %{{.+}} : index
// CHECK:   %[[CUT:[^ ]+]] = arith.minsi %[[LAST]], %{{.+}} : index
// CHECK:   %[[TO:[^ ]+]] = arith.maxsi %[[CUT]], %{{.+}} : index
// CHECK:   %[[SUM:[^ ]+]] = scf.for %[[Q:[^ ]+]] = %[[FROM]] to %[[TO]] {{.+}} -> (f32) {
// CHECK:     tensor.extract %[[PERQ]]#1[%[[Q]]] : tensor<3xf32>
// CHECK:     math.exp
// CHECK:     tensor.extract %[[PERQ]]#2[%[[Q]]] : tensor<3xf32>
// CHECK:   }
// CHECK:   %[[INCACHE:[^ ]+]] = arith.cmpi slt, %[[R]], %{{.+}} : index
// CHECK:   scf.if %[[INCACHE]] -> (tensor<3x1xf32>, tensor<2x1xf32>) {
// CHECK:     tensor.insert %[[SUM]] into %{{.+}}[%[[R]], %{{.+}}] : tensor<2x1xf32>
// CHECK:   } else {
// CHECK:     %[[POS:[^ ]+]] = arith.subi %[[R]], %{{.+}} : index
// CHECK:     tensor.insert %[[SUM]] into %{{.+}}[%[[POS]], %{{.+}}] : tensor<3x1xf32>
// CHECK:   }
// CHECK: %[[DK:[^ ]+]]:2 = scf.for {{.+}} -> (tensor<3x2xf32>, tensor<2x2xf32>) {
// CHECK:   scf.for {{.+}} -> (f32, f32) {
// CHECK:     tensor.extract %[[PERQ]]#3
// CHECK:   }
// CHECK: return %[[PERQ]]#0, %[[DK]]#0, %[[DV]]#0, %[[DK]]#1, %[[DV]]#1
func.func @grad_cache(%q: tensor<3x2xf32>, %k: tensor<3x2xf32>, %v: tensor<3x1xf32>, %dy: tensor<3x1xf32>, %kc: tensor<2x2xf32>, %vc: tensor<2x1xf32>) -> (tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x1xf32>, tensor<2x2xf32>, tensor<2x1xf32>) {
  %g:5 = recur.window_attention_grad %q, %k, %v, %dy cache(%kc, %vc : tensor<2x2xf32>, tensor<2x1xf32>) window 2 : tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x1xf32> -> tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x1xf32>, tensor<2x2xf32>, tensor<2x1xf32>
  return %g#0, %g#1, %g#2, %g#3, %g#4 : tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x1xf32>, tensor<2x2xf32>, tensor<2x1xf32>
}

// -----

// With a bias the logits include it in every pass, and its cotangent (a
// sum over every pair of a head) starts as each query's own part: here
// ALiBi's, sum_r -delta_r dS_r, carried beside dq in the query's second
// walk and written once to its element of a [H, T] partial (q is [H, T,
// d]; a batch dimension would come first); then a thread per (head, run
// of 64 positions) sums a run, and a thread per head the runs.

// CHECK-LABEL: func.func @grad_bias
// The query pass: the statistics, then dq and the bias's part.
// CHECK: scf.for {{.+}} -> (f32, f32, f32)
// CHECK: scf.for {{.+}} -> (f32, f32, f32)
// CHECK:   arith.negf
// CHECK: tensor.insert %[[PART:[^ ]+]]#2 into %{{.+}}[%{{.+}}, %{{.+}}] : tensor<2x3xf32>
// The key rows' passes: dv, then dk.
// CHECK: -> (tensor<2x3x1xf32>)
// CHECK: -> (tensor<2x3x2xf32>)
// The runs, then the heads.
// CHECK: -> (tensor<2x1xf32>)
// CHECK: -> (tensor<2xf32>)
// CHECK: return
func.func @grad_bias(%q: tensor<2x3x2xf32>, %k: tensor<2x3x2xf32>, %v: tensor<2x3x1xf32>, %dy: tensor<2x3x1xf32>, %sl: tensor<2xf32>) -> (tensor<2x3x2xf32>, tensor<2x3x2xf32>, tensor<2x3x1xf32>, tensor<2xf32>) {
  %g:4 = recur.window_attention_grad %q, %k, %v, %dy bias(%sl : tensor<2xf32>) window 2 {bias_kind = #recur.bias<alibi>} : tensor<2x3x2xf32>, tensor<2x3x2xf32>, tensor<2x3x1xf32> -> tensor<2x3x2xf32>, tensor<2x3x2xf32>, tensor<2x3x1xf32>, tensor<2xf32>
  return %g#0, %g#1, %g#2, %g#3 : tensor<2x3x2xf32>, tensor<2x3x2xf32>, tensor<2x3x1xf32>, tensor<2xf32>
}

// -----

// A T5 table's cotangent: each query zeroes its row of a [B, H, T,
// buckets] partial, then sums its keys' dS a bucket at a time (the
// buckets never rise along its walk) and writes a bucket's sum when the
// bucket changes, and the last after the walk; the runs of 64 positions
// are summed by (B, head, run, bucket), then by (head, bucket).

// CHECK-LABEL: func.func @grad_t5
// CHECK: scf.for %{{.+}} = %c0 to %c8 step %c1 iter_args(%{{.+}} = %{{.+}}) -> (tensor<2x?x8xf32>)
// CHECK:   tensor.insert %cst{{.*}} into
// CHECK: %[[WALK:[^ ]+]]:5 = scf.for {{.+}} iter_args({{.+}}, %[[ROW:[^ ]+]] = %{{.+}}, %[[CUR:[^ ]+]] = %c0, %[[SUM:[^ ]+]] = %cst{{.*}}) -> (f32, f32, tensor<2x?x8xf32>, index, f32)
// CHECK:   %[[CHANGED:[^ ]+]] = arith.cmpi ne, %{{.+}}, %[[CUR]] : index
// CHECK:   scf.if %[[CHANGED]] -> (tensor<2x?x8xf32>)
// CHECK:     tensor.insert %[[SUM]] into %[[ROW]][%{{.+}}, %{{.+}}, %[[CUR]]] : tensor<2x?x8xf32>
// CHECK: tensor.insert %[[WALK]]#4 into %[[WALK]]#2[%{{.+}}, %{{.+}}, %[[WALK]]#3] : tensor<2x?x8xf32>
// CHECK: %[[RUNS:[^ ]+]] = arith.ceildivui %{{.+}}, %c64 : index
// CHECK: scf.for %{{.+}} = %c0 to %[[RUNS]] step %c1
// CHECK: -> (tensor<2x8xf32>)
// CHECK: return
func.func @grad_t5(%q: tensor<2x?x2xf32>, %k: tensor<2x?x2xf32>, %v: tensor<2x?x1xf32>, %dy: tensor<2x?x1xf32>, %t5: tensor<2x8xf32>) -> (tensor<2x?x2xf32>, tensor<2x?x2xf32>, tensor<2x?x1xf32>, tensor<2x8xf32>) {
  %g:4 = recur.window_attention_grad %q, %k, %v, %dy bias(%t5 : tensor<2x8xf32>) window 4 {bias_kind = #recur.bias<t5>, num_buckets = 8 : i64, max_distance = 10 : i64} : tensor<2x?x2xf32>, tensor<2x?x2xf32>, tensor<2x?x1xf32> -> tensor<2x?x2xf32>, tensor<2x?x2xf32>, tensor<2x?x1xf32>, tensor<2x8xf32>
  return %g#0, %g#1, %g#2, %g#3 : tensor<2x?x2xf32>, tensor<2x?x2xf32>, tensor<2x?x1xf32>, tensor<2x8xf32>
}

// -----

// The backward of a block band (window 128, blocks of 32, no cache) in
// groups: key row r is seen by the queries from r + 1 (the least delta) to
// the end of the block that starts at most 128 after it, ((r + 128) floordiv
// 32 + 1) * 32, within [0, T); the 32 key rows of an aligned group walk the
// union of those ranges, from its first row's first query to its last
// row's (r0 + 31 + 128 = r0 + 159) end, each skipping the queries outside
// its own.

// CHECK-LABEL: func.func @grad_block_grouped
// CHECK-DAG: %[[C32:[^ ]+]] = arith.constant 32 : index
// CHECK-DAG: %[[C128:[^ ]+]] = arith.constant 128 : index
// CHECK-DAG: %[[C159:[^ ]+]] = arith.constant 159 : index
// CHECK: %[[T:[^ ]+]] = tensor.dim
// CHECK: scf.for {{.+}} -> (tensor<?x2xf32>, tensor<?xf32>, tensor<?xf32>, tensor<?xf32>)
// CHECK: scf.for %[[R:[^ ]+]] = %{{.+}} to %[[T]] {{.+}} -> (tensor<?x1xf32>) {
// CHECK:   %[[FIRST0:[^ ]+]] = arith.addi %[[R]], %{{.+}} : index
// CHECK:   %[[FIRST:[^ ]+]] = arith.maxsi %[[FIRST0]], %{{.+}} : index
// CHECK:   %[[REACH:[^ ]+]] = arith.addi %[[R]], %[[C128]] : index
// CHECK:   %[[BLOCK:[^ ]+]] = arith.floordivsi %[[REACH]], %[[C32]] : index
// CHECK:   %[[NEXT:[^ ]+]] = arith.addi %[[BLOCK]], %{{.+}} : index
// CHECK:   %[[END0:[^ ]+]] = arith.muli %[[NEXT]], %[[C32]] : index
// CHECK:   %[[END1:[^ ]+]] = arith.minsi %[[END0]], %[[T]] : index
// CHECK:   %[[END:[^ ]+]] = arith.maxsi %[[END1]], %{{.+}} : index
// CHECK:   %[[LANE:[^ ]+]] = arith.remui %[[R]], %[[C32]] : index
// CHECK:   %[[R0:[^ ]+]] = arith.subi %[[R]], %[[LANE]] : index
// CHECK:   %[[GFIRST0:[^ ]+]] = arith.addi %[[R0]], %{{.+}} : index
// CHECK:   %[[GFIRST:[^ ]+]] = arith.maxsi %[[GFIRST0]], %{{.+}} : index
// CHECK:   %[[GREACH:[^ ]+]] = arith.addi %[[R0]], %[[C159]] : index
// CHECK:   arith.floordivsi %[[GREACH]], %[[C32]] : index
// CHECK:   arith.minsi %{{.+}}, %[[T]] : index
// CHECK:   %[[GEND:[^ ]+]] = arith.maxsi
// CHECK:   scf.for %[[P:[^ ]+]] = %[[GFIRST]] to %[[GEND]] {{.+}} -> (f32) {
// CHECK:     %[[AFTER:[^ ]+]] = arith.cmpi sge, %[[P]], %[[FIRST]] : index
// CHECK:     %[[BEFORE:[^ ]+]] = arith.cmpi slt, %[[P]], %[[END]] : index
// CHECK:     %[[VISIBLE:[^ ]+]] = arith.andi %[[AFTER]], %[[BEFORE]] : i1
// CHECK:     arith.select %[[VISIBLE]], %{{.+}}, %{{.+}} : f32
// CHECK: scf.for {{.+}} -> (tensor<?x2xf32>) {
// CHECK:   arith.floordivsi
func.func @grad_block_grouped(%q: tensor<?x2xf32>, %k: tensor<?x2xf32>, %v: tensor<?x1xf32>, %dy: tensor<?x1xf32>) -> (tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x1xf32>) {
  %g:3 = recur.window_attention_grad %q, %k, %v, %dy window 128 {block = 32 : i64} : tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x1xf32> -> tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x1xf32>
  return %g#0, %g#1, %g#2 : tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x1xf32>
}
