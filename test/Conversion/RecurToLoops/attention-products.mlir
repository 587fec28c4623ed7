// RUN: recur-opt %s --convert-recur-to-loops='attention-products mark-parallel' --split-input-file | FileCheck %s --implicit-check-not=recur.stop_gradient --implicit-check-not=recur.attention

// Every key visible, static query and key counts: per batch index (a nest
// of independent iterations), the queries, keys and values cut to that
// index, the scores 0.5 q k^T as a contraction from zero, the row max from
// -inf, exp(s - max) (0 where the max is -inf: a row that sees no key),
// the row sums, the weights divided by them, and p v as a contraction from
// zero, written back at the index. No query row loops.

// CHECK-LABEL: func.func @none
// CHECK-SAME: (%[[Q:[^:]+]]: tensor<?x8x4xf32>, %[[K:[^:]+]]: tensor<?x5x4xf32>, %[[V:[^:]+]]: tensor<?x5x2xf32>)
// CHECK: scf.for %[[B:.+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[OUT:.+]] = %{{.+}}) -> (tensor<?x8x2xf32>) {
// CHECK: %[[QB:.+]] = tensor.extract_slice %[[Q]][%[[B]], 0, 0] [1, 8, 4] [1, 1, 1] : tensor<?x8x4xf32> to tensor<8x4xf32>
// CHECK: %[[KB:.+]] = tensor.extract_slice %[[K]][%[[B]], 0, 0] [1, 5, 4] [1, 1, 1] : tensor<?x5x4xf32> to tensor<5x4xf32>
// CHECK: %[[VB:.+]] = tensor.extract_slice %[[V]][%[[B]], 0, 0] [1, 5, 2] [1, 1, 1] : tensor<?x5x2xf32> to tensor<5x2xf32>
// CHECK: %[[Z:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<8x5xf32>)
// CHECK: %[[RAW:.+]] = linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[QB]], %[[KB]] : tensor<8x4xf32>, tensor<5x4xf32>) outs(%[[Z]] : tensor<8x5xf32>)
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: %[[S:.+]] = linalg.generic {{.+}} ins(%[[RAW]] : tensor<8x5xf32>)
// CHECK: arith.constant 5.000000e-01 : f32
// CHECK: %[[NEGINF:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<8xf32>)
// CHECK: %[[MAX:.+]] = linalg.generic {{.+}} iterator_types = ["parallel", "reduction"]} ins(%{{.+}} : tensor<8x5xf32>) outs(%[[NEGINF]] : tensor<8xf32>)
// CHECK: arith.maximumf
// CHECK: %[[E:.+]] = linalg.generic {{.+}} ins(%{{.+}}, %[[MAX]] : tensor<8x5xf32>, tensor<8xf32>)
// CHECK: math.exp
// CHECK: %[[SUM:.+]] = linalg.generic {{.+}} iterator_types = ["parallel", "reduction"]} ins(%[[E]] : tensor<8x5xf32>)
// CHECK: %[[P:.+]] = linalg.generic {{.+}} ins(%[[E]], %[[SUM]] : tensor<8x5xf32>, tensor<8xf32>)
// CHECK: arith.divf
// CHECK: %[[O:.+]] = linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[P]], %[[VB]] : tensor<8x5xf32>, tensor<5x2xf32>)
// CHECK: %[[W:.+]] = tensor.insert_slice %[[O]] into %[[OUT]][%[[B]], 0, 0] [1, 8, 2] [1, 1, 1] : tensor<8x2xf32> into tensor<?x8x2xf32>
// CHECK: scf.yield %[[W]]
// CHECK: } {recur.parallel}
func.func @none(%q: tensor<?x8x4xf32>, %k: tensor<?x5x4xf32>,
                %v: tensor<?x5x2xf32>) -> tensor<?x8x2xf32> {
  %o = recur.attention %q, %k, %v {scale = 0.5 : f64}
      : tensor<?x8x4xf32>, tensor<?x5x4xf32>, tensor<?x5x2xf32>
  return %o : tensor<?x8x2xf32>
}

// -----

// A causal mask and key padding: the row form, which never reads a key the
// mask or the padding hides (the products form would multiply a hidden
// value by its zero weight, and a NaN there would reach the output).

// CHECK-LABEL: func.func @causal_padding
// CHECK-NOT: linalg.generic
// CHECK: tensor.extract
// CHECK: return
func.func @causal_padding(%q: tensor<3x4xf64>, %k: tensor<5x4xf64>,
                          %v: tensor<5x2xf64>, %pad: tensor<5xi1>)
    -> tensor<3x2xf64> {
  %o = recur.attention %q, %k, %v key_padding(%pad : tensor<5xi1>)
      {mask = #recur.mask<causal>}
      : tensor<3x4xf64>, tensor<5x4xf64>, tensor<5x2xf64>
  return %o : tensor<3x2xf64>
}

// No leading dimension, the default scale 1/sqrt(4): the products in place,
// no nest.

// CHECK-LABEL: func.func @no_lead
// CHECK-NOT: scf.for
// CHECK: arith.constant 5.000000e-01 : f64
// CHECK: linalg.generic {{.+}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%{{.+}}, %{{.+}} : tensor<3x5xf64>, tensor<5x2xf64>)
// CHECK: return
func.func @no_lead(%q: tensor<3x4xf64>, %k: tensor<5x4xf64>,
                   %v: tensor<5x2xf64>) -> tensor<3x2xf64> {
  %o = recur.attention %q, %k, %v
      : tensor<3x4xf64>, tensor<5x4xf64>, tensor<5x2xf64>
  return %o : tensor<3x2xf64>
}

// -----

// A dynamic query count, and 2^21 scores per leading index: a query row at
// a time, as without the option.

// CHECK-LABEL: func.func @dynamic_queries
// CHECK-NOT: linalg.generic
// CHECK: tensor.extract
// CHECK: return
func.func @dynamic_queries(%q: tensor<?x4xf32>, %k: tensor<5x4xf32>,
                           %v: tensor<5x2xf32>) -> tensor<?x2xf32> {
  %o = recur.attention %q, %k, %v
      : tensor<?x4xf32>, tensor<5x4xf32>, tensor<5x2xf32>
  return %o : tensor<?x2xf32>
}

// CHECK-LABEL: func.func @too_many_scores
// CHECK-NOT: linalg.generic
// CHECK: tensor.extract
// CHECK: return
func.func @too_many_scores(%q: tensor<2048x4xf32>, %k: tensor<1024x4xf32>,
                           %v: tensor<1024x2xf32>) -> tensor<2048x2xf32> {
  %o = recur.attention %q, %k, %v
      : tensor<2048x4xf32>, tensor<1024x4xf32>, tensor<1024x2xf32>
  return %o : tensor<2048x2xf32>
}
