// RUN: recur-opt %s --convert-recur-to-loops | FileCheck %s --check-prefix=CPU
// RUN: recur-opt %s --convert-recur-to-loops="scan-group=1" | FileCheck %s --check-prefix=GPU
// RUN: recur-opt %s --convert-recur-to-loops="scan-group=8" | FileCheck %s --check-prefix=EIGHT

// A scan along time of [B, T, C]: by default each thread sweeps a row of
// 128 channels at every step, their carries in a private row; with
// scan-group=1 (the CUDA pipeline's) each channel is scanned on its own
// with a scalar carry, the time loop innermost.

func.func @across_channels(%a: tensor<2x?x300xf32>, %x: tensor<2x?x300xf32>)
    -> (tensor<2x?x300xf32>, tensor<2x300xf32>) {
  %h, %last = recur.linear_scan %a, %x along 1
      : tensor<2x?x300xf32>, tensor<2x?x300xf32>
  return %h, %last : tensor<2x?x300xf32>, tensor<2x300xf32>
}

// CPU-LABEL: func.func @across_channels
// CPU: %[[G:.+]] = arith.constant 128 : index
// CPU: arith.ceildivui %{{.+}}, %[[G]] : index
// CPU: tensor<128xf32>

// GPU-LABEL: func.func @across_channels
// GPU-NOT: tensor<128xf32>
// GPU: scf.for %{{.+}} = %{{.+}} to %{{.+}} step
// GPU: scf.for %{{.+}} = %{{.+}} to %{{.+}} step
// GPU: %[[CARRY:.+]] = arith.constant 0.000000e+00 : f32
// GPU: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %{{.+}} iter_args(%{{.+}} = %{{.+}}, %[[C:.+]] = %[[CARRY]]) -> (tensor<2x?x300xf32>, f32)
// GPU: arith.mulf %{{.+}}, %[[C]] : f32

// EIGHT-LABEL: func.func @across_channels
// EIGHT: arith.constant 8 : index
// EIGHT: tensor<8xf32>
