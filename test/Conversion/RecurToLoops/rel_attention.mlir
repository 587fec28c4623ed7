// RUN: recur-opt %s --convert-recur-to-loops --split-input-file | FileCheck %s --implicit-check-not=recur.

// The four-term scores computed directly: with M = K - L memory positions,
// query i sees the keys 0 .. M + i, and the score of key j accumulates the
// content term (q_i + u) . k_j and the position term (q_i + pos_bias) .
// r[K - 1 - (M + i - j)] side by side before the scale. The logits go into
// a scratch row of K entries once; the max and the exp passes read them.

// CHECK-LABEL: func.func @rel_attention
// CHECK-SAME: (%[[Q:[^ ]+]]: tensor<2x3x4xf32>, %[[K:[^ ]+]]: tensor<2x5x4xf32>, %[[V:[^ ]+]]: tensor<2x5x3xf32>, %[[R:[^ ]+]]: tensor<2x5x4xf32>, %[[U:[^ ]+]]: tensor<2x4xf32>, %[[PB:[^ ]+]]: tensor<2x4xf32>)
// CHECK-DAG: %[[L:[^ ]+]] = arith.constant 3 : index
// CHECK-DAG: %[[KL:[^ ]+]] = arith.constant 5 : index
// CHECK: %[[M:[^ ]+]] = arith.subi %[[KL]], %[[L]] : index
// CHECK: %[[LASTROW:[^ ]+]] = arith.subi %[[KL]], %{{.+}} : index
// CHECK: %[[SCALE:[^ ]+]] = arith.constant 5.000000e-01 : f32
// CHECK: scf.for %[[H:[^ ]+]] =
// CHECK:   scf.for %[[I:[^ ]+]] =
// CHECK:     %[[QPOS:[^ ]+]] = arith.addi %[[M]], %[[I]] : index
// CHECK:     %[[END:[^ ]+]] = arith.addi %[[QPOS]], %{{.+}} : index
// CHECK:     %[[COUNT:[^ ]+]] = arith.subi %[[END]], %{{.+}} : index
// CHECK:     %[[SCRATCH:[^ ]+]] = bufferization.alloc_tensor(%[[KL]]) : tensor<?xf32>
// CHECK:     %[[LOGITS:[^ ]+]] = scf.for %[[IDX:[^ ]+]] = %{{.+}} to %[[COUNT]] step %{{.+}} iter_args(%{{.+}} = %[[SCRATCH]])
// CHECK:       %[[J:[^ ]+]] = arith.addi %{{.+}}, %[[IDX]] : index
// CHECK:       %[[DELTA:[^ ]+]] = arith.subi %[[QPOS]], %[[J]] : index
// CHECK:       %[[ROW:[^ ]+]] = arith.subi %[[LASTROW]], %[[DELTA]] : index
// CHECK:       %[[S:[^ ]+]]:2 = scf.for %[[E:[^ ]+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[AC:[^ ]+]] = %{{.+}}, %[[BD:[^ ]+]] = %{{.+}}) -> (f32, f32)
// CHECK:         %[[QE:[^ ]+]] = tensor.extract %[[Q]][%[[H]], %[[I]], %[[E]]]
// CHECK:         %[[UE:[^ ]+]] = tensor.extract %[[U]][%[[H]], %[[E]]]
// CHECK:         %[[PE:[^ ]+]] = tensor.extract %[[PB]][%[[H]], %[[E]]]
// CHECK:         %[[KE:[^ ]+]] = tensor.extract %[[K]][%[[H]], %[[J]], %[[E]]]
// CHECK:         %[[RE:[^ ]+]] = tensor.extract %[[R]][%[[H]], %[[ROW]], %[[E]]]
// CHECK:         %[[QU:[^ ]+]] = arith.addf %[[QE]], %[[UE]] : f32
// CHECK:         %[[CONTENT:[^ ]+]] = arith.mulf %[[QU]], %[[KE]] : f32
// CHECK:         %[[QP:[^ ]+]] = arith.addf %[[QE]], %[[PE]] : f32
// CHECK:         %[[POSITION:[^ ]+]] = arith.mulf %[[QP]], %[[RE]] : f32
// CHECK:         %[[AC1:[^ ]+]] = arith.addf %[[AC]], %[[CONTENT]] : f32
// CHECK:         %[[BD1:[^ ]+]] = arith.addf %[[BD]], %[[POSITION]] : f32
// CHECK:         scf.yield %[[AC1]], %[[BD1]] : f32, f32
// CHECK:       %[[SCORE:[^ ]+]] = arith.addf %[[S]]#0, %[[S]]#1 : f32
// CHECK:       %[[LOGIT:[^ ]+]] = arith.mulf %[[SCALE]], %[[SCORE]] : f32
// CHECK:       tensor.insert %[[LOGIT]] into %{{.+}}[%[[IDX]]]
// CHECK:     scf.for %{{.+}} = %{{.+}} to %[[COUNT]] step
// CHECK:       tensor.extract %[[LOGITS]]
// CHECK:       arith.maximumf
// CHECK:     scf.for %{{.+}} = %{{.+}} to %[[COUNT]] step
// CHECK:       math.exp
func.func @rel_attention(%q: tensor<2x3x4xf32>, %k: tensor<2x5x4xf32>,
                         %v: tensor<2x5x3xf32>, %r: tensor<2x5x4xf32>,
                         %u: tensor<2x4xf32>, %pb: tensor<2x4xf32>)
    -> tensor<2x3x3xf32> {
  %o = recur.rel_attention %q, %k, %v, %r, %u, %pb
      : tensor<2x3x4xf32>, tensor<2x5x4xf32>, tensor<2x5x3xf32>,
        tensor<2x5x4xf32>, tensor<2x4xf32>, tensor<2x4xf32>
  return %o : tensor<2x3x3xf32>
}

// -----

// A dynamic number of keys (memory length known at run time) behind a batch
// dimension: K comes from tensor.dim, the heads index is the one before L.

// CHECK-LABEL: func.func @rel_attention_dynamic_memory
// CHECK-SAME: (%[[Q:[^ ]+]]: tensor<1x2x3x4xf64>, %[[K:[^ ]+]]: tensor<1x2x?x4xf64>, %[[V:[^ ]+]]: tensor<1x2x?x4xf64>, %[[R:[^ ]+]]: tensor<2x?x4xf64>
// CHECK: %[[KL:[^ ]+]] = tensor.dim %[[V]], %{{.+}} : tensor<1x2x?x4xf64>
// CHECK: %[[M:[^ ]+]] = arith.subi %[[KL]], %{{.+}} : index
// CHECK: scf.for %[[B:[^ ]+]] =
// CHECK:   scf.for %[[H:[^ ]+]] =
// CHECK:     scf.for %[[I:[^ ]+]] =
// CHECK:       %[[QPOS:[^ ]+]] = arith.addi %[[M]], %[[I]] : index
// CHECK:       scf.for %[[IDX:[^ ]+]] = %{{.+}} iter_args(%{{.+}}) -> (tensor<?xf64>)
// CHECK:         %[[J:[^ ]+]] = arith.addi %{{.+}}, %[[IDX]] : index
// CHECK:         scf.for %[[E:[^ ]+]] =
// CHECK:           tensor.extract %[[K]][%[[B]], %[[H]], %[[J]], %[[E]]]
// CHECK:           tensor.extract %[[R]][%[[H]], %{{.+}}, %[[E]]] : tensor<2x?x4xf64>
func.func @rel_attention_dynamic_memory(%q: tensor<1x2x3x4xf64>,
                                        %k: tensor<1x2x?x4xf64>,
                                        %v: tensor<1x2x?x4xf64>,
                                        %r: tensor<2x?x4xf64>,
                                        %u: tensor<2x4xf64>,
                                        %pb: tensor<2x4xf64>)
    -> tensor<1x2x3x4xf64> {
  %o = recur.rel_attention %q, %k, %v, %r, %u, %pb
      : tensor<1x2x3x4xf64>, tensor<1x2x?x4xf64>, tensor<1x2x?x4xf64>,
        tensor<2x?x4xf64>, tensor<2x4xf64>, tensor<2x4xf64>
  return %o : tensor<1x2x3x4xf64>
}
