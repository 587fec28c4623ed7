// RUN: recur-opt %s --convert-recur-to-loops | FileCheck %s --check-prefix=CPU
// RUN: recur-opt %s --convert-recur-to-loops="scan-group=1" | FileCheck %s --check-prefix=GPU
// RUN: recur-opt %s --convert-recur-to-loops="scan-group=8" | FileCheck %s --check-prefix=EIGHT
// RUN: recur-opt %s --convert-recur-to-loops="scan-group=0" --canonicalize | FileCheck %s --check-prefix=THREADS
// RUN: recur-opt %s --convert-recur-to-loops="scan-group=1 scan-unroll-bytes=8" | FileCheck %s --check-prefix=UNROLL

// A scan along time of [B, T, C]: by default each thread sweeps a row of
// 128 channels at every step, their carries in a private row; with
// scan-group=1 (the CUDA pipeline's) each channel is scanned on its own
// with a scalar carry, the time loop innermost. With scan-group=0 (the CPU
// pipeline's) the group is chosen when the kernel runs: the 300 channels of
// a row split into ceil(threads / 2) parts (2 rows: the batch), each
// rounded up to a multiple of 16 and at most 4096, so each thread streams
// one long stretch of every row.

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

// With scan-unroll-bytes=8 (two f32 steps; the CUDA pipeline's 256 bytes
// make 64) each iteration of the time loop takes two steps: the four loads
// first, then the two updates and stores in order; then the step left over.
// UNROLL-LABEL: func.func @across_channels
// UNROLL: %[[T:.+]] = tensor.dim %arg1, %c1
// UNROLL: %[[TWO:.+]] = arith.constant 2 : index
// UNROLL: %[[N:.+]] = arith.divui %[[T]], %[[TWO]] : index
// UNROLL: scf.for %[[K:.+]] = %{{.+}} to %[[N]] step %{{.+}} iter_args(%[[OUT:.+]] = %{{.+}}, %[[C:.+]] = %{{.+}}) -> (tensor<2x?x300xf32>, f32)
// UNROLL-NEXT: %[[T0:.+]] = arith.muli %[[K]], %[[TWO]] : index
// UNROLL-NEXT: %[[ONE:.+]] = arith.constant 1 : index
// UNROLL-NEXT: %[[T1:.+]] = arith.addi %[[T0]], %[[ONE]] : index
// UNROLL-NEXT: %[[A0:.+]] = tensor.extract %arg0[%{{.+}}, %[[T0]], %{{.+}}]
// UNROLL-NEXT: %[[X0:.+]] = tensor.extract %arg1[%{{.+}}, %[[T0]], %{{.+}}]
// UNROLL-NEXT: %[[A1:.+]] = tensor.extract %arg0[%{{.+}}, %[[T1]], %{{.+}}]
// UNROLL-NEXT: %[[X1:.+]] = tensor.extract %arg1[%{{.+}}, %[[T1]], %{{.+}}]
// UNROLL-NEXT: %[[M0:.+]] = arith.mulf %[[A0]], %[[C]] : f32
// UNROLL-NEXT: %[[H0:.+]] = arith.addf %[[M0]], %[[X0]] : f32
// UNROLL-NEXT: %[[O0:.+]] = tensor.insert %[[H0]] into %[[OUT]][%{{.+}}, %[[T0]], %{{.+}}]
// UNROLL-NEXT: %[[M1:.+]] = arith.mulf %[[A1]], %[[H0]] : f32
// UNROLL-NEXT: %[[H1:.+]] = arith.addf %[[M1]], %[[X1]] : f32
// UNROLL-NEXT: %[[O1:.+]] = tensor.insert %[[H1]] into %[[O0]][%{{.+}}, %[[T1]], %{{.+}}]
// UNROLL-NEXT: scf.yield %[[O1]], %[[H1]]
// UNROLL: %[[REST:.+]] = arith.muli %[[N]], %[[TWO]] : index
// UNROLL: scf.for %{{.+}} = %[[REST]] to %[[T]] step
// UNROLL-COUNT-2: tensor.extract
// UNROLL-NEXT: arith.mulf
// UNROLL-NEXT: arith.addf
// UNROLL-NEXT: tensor.insert
// UNROLL-NEXT: scf.yield

// EIGHT-LABEL: func.func @across_channels
// EIGHT: arith.constant 8 : index
// EIGHT: tensor<8xf32>

// THREADS: func.func private @omp_get_max_threads() -> i32 attributes {recur.allocates_nothing}
// THREADS-LABEL: func.func @across_channels
// THREADS-DAG: %[[C16:.+]] = arith.constant 16 : index
// THREADS-DAG: %[[C4096:.+]] = arith.constant 4096 : index
// THREADS-DAG: %[[C300:.+]] = arith.constant 300 : index
// THREADS-DAG: %[[C2:.+]] = arith.constant 2 : index
// THREADS: %[[N:.+]] = call @omp_get_max_threads() : () -> i32
// THREADS: %[[NI:.+]] = arith.index_cast %[[N]] : i32 to index
// THREADS: %[[PARTS:.+]] = arith.ceildivui %[[NI]], %[[C2]] : index
// THREADS: %[[P:.+]] = arith.maxui %[[PARTS]], %{{.+}} : index
// THREADS: %[[G0:.+]] = arith.ceildivui %[[C300]], %[[P]] : index
// THREADS: %[[Q:.+]] = arith.ceildivui %[[G0]], %[[C16]] : index
// THREADS: %[[G1:.+]] = arith.muli %[[Q]], %[[C16]] : index
// THREADS: %[[G:.+]] = arith.minui %[[G1]], %[[C4096]] : index
// THREADS: arith.ceildivui %[[C300]], %[[G]] : index
// THREADS: tensor<4096xf32>
