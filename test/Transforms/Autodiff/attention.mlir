// RUN: recur-opt %s --recur-derive-backward=keep-all-states --canonicalize | FileCheck %s
// RUN: recur-opt %s --recur-derive-backward --canonicalize | FileCheck %s --check-prefix=TILES

// recur.attention differentiates through its definition: scores, the causal
// mask by index (hidden keys at -inf), the row max as a stop-gradient shift,
// exp, the row sum (a zero row when no key is seen), the probabilities and
// p v. The forward attention op is dead in the backward.

// CHECK-LABEL: func.func @causal_backward
// CHECK-NOT:     recur.attention
// CHECK:         linalg.generic
// CHECK:           arith.cmpi sle
// CHECK:           arith.select
// CHECK:         %[[MAX:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction"]
// CHECK:           arith.maximumf
// CHECK:         recur.stop_gradient %[[MAX]]
// CHECK:           math.exp
// CHECK:         return
// By default the queries go by tiles of 64 (here 2: 64 and 36 queries),
// each tile's scores recomputed and differentiated on their own; the
// causal mask sees each query's position (the tile's start added).
// TILES-LABEL: func.func @causal_backward
// TILES:         %[[LOOP:.*]]:3 = scf.for %[[T:.*]] = %c0 to %c2
// TILES:           %[[START:.*]] = affine.apply {{.*}}(%[[T]])
// TILES:           affine.min
// TILES:           tensor.extract_slice %arg0[0, %[[START]], 0]
// TILES:           linalg.generic
// TILES:             linalg.index 1
// TILES:             arith.addi {{.*}}, %[[START]]
// TILES:             arith.cmpi sle
// TILES:           tensor.insert_slice
// TILES:         return %[[LOOP]]#0, %[[LOOP]]#1, %[[LOOP]]#2
func.func @causal(%q: tensor<2x100x4xf32>, %k: tensor<2x100x4xf32>, %v: tensor<2x100x3xf32>) -> tensor<2x100x3xf32> {
  %o = recur.attention %q, %k, %v {mask = #recur.mask<causal>} : tensor<2x100x4xf32>, tensor<2x100x4xf32>, tensor<2x100x3xf32>
  return %o : tensor<2x100x3xf32>
}
