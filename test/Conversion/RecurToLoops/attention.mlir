// RUN: recur-opt %s --convert-recur-to-loops --split-input-file | FileCheck %s --implicit-check-not=recur.

// Causal mask with fewer queries than keys: query i sees the keys
// 0 .. i + (Tk - Tq), a loop bound; the default scale is 1/sqrt(d). Every
// key is visible, so the logits are accumulated over the transposed keys
// into a scratch row of Tk entries, then the max, exp and weighted-value
// passes run over the same range.

// CHECK-LABEL: func.func @attention_causal
// CHECK-SAME: (%[[Q:[^ ]+]]: tensor<2x3x4xf64>, %[[K:[^ ]+]]: tensor<2x5x4xf64>, %[[V:[^ ]+]]: tensor<2x5x2xf64>)
// CHECK-DAG: %[[TQ:[^ ]+]] = arith.constant 3 : index
// CHECK-DAG: %[[TK:[^ ]+]] = arith.constant 5 : index
// CHECK-DAG: %[[SCALE:[^ ]+]] = arith.constant 5.000000e-01 : f64
// CHECK: %[[KT:[^ ]+]] = scf.for %[[B0:[^ ]+]] =
// CHECK:   scf.for %[[J0:[^ ]+]] =
// CHECK:     scf.for %[[E0:[^ ]+]] =
// CHECK:       %[[KE0:[^ ]+]] = tensor.extract %[[K]][%[[B0]], %[[J0]], %[[E0]]]
// CHECK:       tensor.insert %[[KE0]] into %{{.+}}[%[[B0]], %[[E0]], %[[J0]]] : tensor<2x4x5xf64>
// CHECK: scf.for %[[B:[^ ]+]] =
// CHECK:   scf.for %[[I:[^ ]+]] =
// CHECK:     %[[ZERO:[^ ]+]] = arith.constant 0 : index
// CHECK:     %[[SHIFT:[^ ]+]] = arith.subi %[[TK]], %[[TQ]] : index
// CHECK:     %[[LASTKEY:[^ ]+]] = arith.addi %[[I]], %[[SHIFT]] : index
// CHECK:     %[[END:[^ ]+]] = arith.addi %[[LASTKEY]], %{{.+}} : index
// CHECK:     %[[COUNT:[^ ]+]] = arith.subi %[[END]], %[[ZERO]] : index
// CHECK:     bufferization.alloc_tensor(%[[TK]]) : tensor<?xf64>
// CHECK:     scf.for %[[E:[^ ]+]] =
// CHECK:       %[[QE:[^ ]+]] = tensor.extract %[[Q]][%[[B]], %[[I]], %[[E]]]
// CHECK:       scf.for %[[IDX:[^ ]+]] =
// CHECK:         %[[J:[^ ]+]] = arith.addi %[[ZERO]], %[[IDX]] : index
// CHECK:         %[[KE:[^ ]+]] = tensor.extract %[[KT]][%[[B]], %[[E]], %[[J]]]
// CHECK:         arith.mulf %[[QE]], %[[KE]] : f64
// CHECK:     %[[LOGITS:[^ ]+]] = scf.for
// CHECK:       arith.mulf %[[SCALE]], %{{.+}} : f64
// CHECK:     %[[MAX:[^ ]+]] = scf.for %{{.+}} = %{{.+}} to %[[COUNT]] step %{{.+}} iter_args(%[[M:[^ ]+]] = %{{.+}}) -> (f64)
// CHECK:       %[[LOGIT:[^ ]+]] = tensor.extract %[[LOGITS]]
// CHECK:       arith.maximumf %[[M]], %[[LOGIT]] : f64
// CHECK:     %[[WS:[^ ]+]]:2 = scf.for %{{.+}} = %{{.+}} to %[[COUNT]] step
// CHECK:       %[[SH:[^ ]+]] = arith.subf %{{.+}}, %[[MAX]] : f64
// CHECK:       math.exp %[[SH]] : f64
// CHECK:     scf.for %[[IDX2:[^ ]+]] = %{{.+}} to %[[COUNT]] step
// CHECK:       %[[J2:[^ ]+]] = arith.addi %[[ZERO]], %[[IDX2]] : index
// CHECK:         tensor.extract %[[V]][%[[B]], %[[J2]], %{{.+}}]
func.func @attention_causal(%q: tensor<2x3x4xf64>, %k: tensor<2x5x4xf64>,
                            %v: tensor<2x5x2xf64>) -> tensor<2x3x2xf64> {
  %o = recur.attention %q, %k, %v {mask = #recur.mask<causal>}
      : tensor<2x3x4xf64>, tensor<2x5x4xf64>, tensor<2x5x2xf64>
  return %o : tensor<2x3x2xf64>
}

// -----

// Memory mask with key padding: every key of the row is a candidate and a
// visibility predicate guards each of the two passes (scf.if): a slot row
// (i < 2) sees its own slot and the tokens, a token row everything, and a
// padded key nothing.

// CHECK-LABEL: func.func @attention_memory_padding
// CHECK-SAME: (%[[Q:[^ ]+]]: tensor<6x4xf32>, %[[K:[^ ]+]]: tensor<6x4xf32>, %[[V:[^ ]+]]: tensor<6x2xf32>, %[[PAD:[^ ]+]]: tensor<6xi1>)
// CHECK: scf.for %[[I:[^ ]+]] =
// CHECK:   scf.for %[[J:[^ ]+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[M:[^ ]+]] = %{{.+}}) -> (f32)
// CHECK:     %[[SLOTS:[^ ]+]] = arith.constant 2 : index
// CHECK:     %[[TOKROW:[^ ]+]] = arith.cmpi sge, %[[I]], %[[SLOTS]] : index
// CHECK:     %[[OWN:[^ ]+]] = arith.cmpi eq, %[[J]], %[[I]] : index
// CHECK:     %[[TOKCOL:[^ ]+]] = arith.cmpi sge, %[[J]], %[[SLOTS]] : index
// CHECK:     %[[SLOTROW:[^ ]+]] = arith.ori %[[OWN]], %[[TOKCOL]] : i1
// CHECK:     %[[MASKED:[^ ]+]] = arith.ori %[[TOKROW]], %[[SLOTROW]] : i1
// CHECK:     %[[P:[^ ]+]] = tensor.extract %[[PAD]][%[[J]]] : tensor<6xi1>
// CHECK:     %[[TRUE:[^ ]+]] = arith.constant true
// CHECK:     %[[KEPT:[^ ]+]] = arith.xori %[[P]], %[[TRUE]] : i1
// CHECK:     %[[VIS:[^ ]+]] = arith.andi %[[MASKED]], %[[KEPT]] : i1
// CHECK:     %[[MN:[^ ]+]] = scf.if %[[VIS]] -> (f32) {
// CHECK:       arith.maximumf %[[M]], %{{.+}} : f32
// CHECK:     } else {
// CHECK:       scf.yield %[[M]] : f32
// CHECK:     scf.yield %[[MN]] : f32
// CHECK:   scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%[[ROW:[^ ]+]] = %{{.+}}, %[[SUM:[^ ]+]] = %{{.+}}) -> (tensor<6x2xf32>, f32)
// CHECK:     %[[VIS2:[^ ]+]] = arith.andi
// CHECK:     scf.if %[[VIS2]] -> (tensor<6x2xf32>, f32) {
// CHECK:       math.exp
// CHECK:     } else {
// CHECK:       scf.yield %[[ROW]], %[[SUM]] : tensor<6x2xf32>, f32
func.func @attention_memory_padding(%q: tensor<6x4xf32>, %k: tensor<6x4xf32>,
                                    %v: tensor<6x2xf32>, %pad: tensor<6xi1>)
    -> tensor<6x2xf32> {
  %o = recur.attention %q, %k, %v key_padding(%pad : tensor<6xi1>)
      {mask = #recur.mask<memory>, memory_slots = 2 : i64}
      : tensor<6x4xf32>, tensor<6x4xf32>, tensor<6x2xf32>
  return %o : tensor<6x2xf32>
}
