// RUN: recur-opt %s --convert-recur-to-loops --split-input-file | FileCheck %s --implicit-check-not=recur.

// Per token: the output row is zeroed; an active token then runs each of its
// k experts: hidden[c] = gelu(x . W_in[e, :, c]) (exact erf) into a scratch
// row, then y[m] += gate * hidden . W_out[e, :, m]. An inactive token keeps
// the zero row. The scratch row is allocated in the token's iteration (an
// alloc_tensor, which CSE cannot merge with one outside), so
// tokens share nothing.

// CHECK-LABEL: func.func @moe_gelu_active
// CHECK-SAME: (%[[X:[^ ]+]]: tensor<3x4xf32>, %[[I:[^ ]+]]: tensor<3x2xi32>, %[[G:[^ ]+]]: tensor<3x2xf32>, %[[W1:[^ ]+]]: tensor<5x4x6xf32>, %[[W2:[^ ]+]]: tensor<5x6x4xf32>, %[[ACT:[^ ]+]]: tensor<3xi1>)
// CHECK: %[[Y0:[^ ]+]] = tensor.empty() : tensor<3x4xf32>
// CHECK: %[[R:[^ ]+]] = scf.for %[[T:[^ ]+]] = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%{{.+}} = %[[Y0]]) -> (tensor<3x4xf32>)
// CHECK:   %[[ZERO:[^ ]+]] = arith.constant 0.000000e+00 : f32
// CHECK:   %[[ZEROED:[^ ]+]] = scf.for
// CHECK:     tensor.insert %[[ZERO]]
// CHECK:   %[[ON:[^ ]+]] = tensor.extract %[[ACT]][%[[T]]] : tensor<3xi1>
// CHECK:   scf.if %[[ON]] -> (tensor<3x4xf32>) {
// CHECK:     %[[HID0:[^ ]+]] = bufferization.alloc_tensor() : tensor<6xf32>
// CHECK:     scf.for %[[J:[^ ]+]] = {{.*}} iter_args({{.*}}, %{{.+}} = %[[HID0]])
// CHECK:       %[[E32:[^ ]+]] = tensor.extract %[[I]][%[[T]], %[[J]]]
// CHECK:       %[[E:[^ ]+]] = arith.index_cast %[[E32]] : i32 to index
// CHECK:       %[[GATE:[^ ]+]] = tensor.extract %[[G]][%[[T]], %[[J]]]
// CHECK:       %[[H:[^ ]+]] = scf.for %[[C:[^ ]+]] =
// CHECK:         %[[S:[^ ]+]] = scf.for %[[M:[^ ]+]] =
// CHECK:           tensor.extract %[[X]][%[[T]], %[[M]]]
// CHECK:           tensor.extract %[[W1]][%[[E]], %[[M]], %[[C]]]
// CHECK:         %[[HALF:[^ ]+]] = arith.mulf %{{.+}}, %[[S]] : f32
// CHECK:         %[[SQRT2:[^ ]+]] = arith.constant 1.41421354 : f32
// CHECK:         %[[SC:[^ ]+]] = arith.divf %[[S]], %[[SQRT2]] : f32
// CHECK:         %[[ERF:[^ ]+]] = math.erf %[[SC]] : f32
// CHECK:         %[[ONEP:[^ ]+]] = arith.addf %{{.+}}, %[[ERF]] : f32
// CHECK:         %[[GELU:[^ ]+]] = arith.mulf %[[HALF]], %[[ONEP]] : f32
// CHECK:         tensor.insert %[[GELU]] into %{{.+}}[%[[C]]] : tensor<6xf32>
// CHECK:       scf.for %[[M2:[^ ]+]] =
// CHECK:         %[[OLD:[^ ]+]] = tensor.extract %{{.+}}[%[[T]], %[[M2]]]
// CHECK:         %[[DOT:[^ ]+]] = scf.for
// CHECK:           tensor.extract %[[H]]
// CHECK:           tensor.extract %[[W2]][%[[E]], %{{.+}}, %[[M2]]]
// CHECK:         %[[W:[^ ]+]] = arith.mulf %[[GATE]], %[[DOT]] : f32
// CHECK:         arith.addf %[[OLD]], %[[W]] : f32
// CHECK:   } else {
// CHECK:     scf.yield %[[ZEROED]]
// CHECK: return %[[R]]
func.func @moe_gelu_active(%x: tensor<3x4xf32>, %i: tensor<3x2xi32>,
                           %g: tensor<3x2xf32>, %w1: tensor<5x4x6xf32>,
                           %w2: tensor<5x6x4xf32>, %act: tensor<3xi1>)
    -> tensor<3x4xf32> {
  %y = recur.moe %x, %i, %g, %w1, %w2 active(%act : tensor<3xi1>)
      {activation = #recur.activation<gelu>}
      : tensor<3x4xf32>, tensor<3x2xi32>, tensor<3x2xf32>,
        tensor<5x4x6xf32>, tensor<5x6x4xf32>
  return %y : tensor<3x4xf32>
}

// -----

// relu is x > 0 ? x : 0 and silu x * sigmoid(x); without `active` every
// token runs its experts.

// CHECK-LABEL: func.func @moe_relu
// CHECK-NOT: scf.if
// CHECK: %[[S:[^ ]+]] = scf.for %{{.+}} iter_args(%{{.+}}) -> (f64)
// CHECK: %[[ZERO:[^ ]+]] = arith.constant 0.000000e+00 : f64
// CHECK: %[[POS:[^ ]+]] = arith.cmpf ogt, %[[S]], %[[ZERO]] : f64
// CHECK: arith.select %[[POS]], %[[S]], %[[ZERO]] : f64
func.func @moe_relu(%x: tensor<2x4xf64>, %i: tensor<2x1xi32>,
                    %g: tensor<2x1xf64>, %w1: tensor<3x4x5xf64>,
                    %w2: tensor<3x5x4xf64>) -> tensor<2x4xf64> {
  %y = recur.moe %x, %i, %g, %w1, %w2
      : tensor<2x4xf64>, tensor<2x1xi32>, tensor<2x1xf64>,
        tensor<3x4x5xf64>, tensor<3x5x4xf64>
  return %y : tensor<2x4xf64>
}

// -----

// CHECK-LABEL: func.func @moe_silu
// CHECK: %[[S:[^ ]+]] = scf.for %{{.+}} iter_args(%{{.+}}) -> (f32)
// CHECK: %[[NEG:[^ ]+]] = arith.negf %[[S]] : f32
// CHECK: %[[EXP:[^ ]+]] = math.exp %[[NEG]] : f32
// CHECK: %[[DEN:[^ ]+]] = arith.addf %{{.+}}, %[[EXP]] : f32
// CHECK: %[[SIG:[^ ]+]] = arith.divf %{{.+}}, %[[DEN]] : f32
// CHECK: arith.mulf %[[S]], %[[SIG]] : f32
func.func @moe_silu(%x: tensor<2x4xf32>, %i: tensor<2x1xi32>,
                    %g: tensor<2x1xf32>, %w1: tensor<3x4x5xf32>,
                    %w2: tensor<3x5x4xf32>) -> tensor<2x4xf32> {
  %y = recur.moe %x, %i, %g, %w1, %w2 {activation = #recur.activation<silu>}
      : tensor<2x4xf32>, tensor<2x1xi32>, tensor<2x1xf32>,
        tensor<3x4x5xf32>, tensor<3x5x4xf32>
  return %y : tensor<2x4xf32>
}
