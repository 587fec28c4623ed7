// RUN: recur-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(func.func(recur-gpu-offload))' \
// RUN:   | FileCheck %s
// RUN: not recur-opt %s --split-input-file \
// RUN:   --pass-pipeline='builtin.module(func.func(recur-gpu-offload{block-threads=48}))' \
// RUN:   2>&1 | FileCheck %s --check-prefix=THREADS
// RUN: not recur-opt %s --split-input-file \
// RUN:   --pass-pipeline='builtin.module(func.func(recur-gpu-offload{block-threads=0}))' \
// RUN:   2>&1 | FileCheck %s --check-prefix=THREADS0

// Warp shuffles (linear_scan's warp form, scan-warps): the lanes of a warp
// are the last dimension of a parallel loop, 0 to 32 step 1, which the
// launch's flattening (the last dimension fastest) makes the 32 lanes of
// one warp when a block is a whole number of warps.

// CHECK-LABEL: func.func @lanes
// CHECK: %[[C256:.*]] = arith.constant 256 : index
// CHECK: gpu.launch
// CHECK-SAME: threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C256]],
// CHECK: gpu.shuffle up
// CHECK: gpu.shuffle idx
// CHECK: gpu.terminator
// Block sizes out of 1 to 1024 are clamped: 0 is 1.
// THREADS0: error: cannot run on the GPU: a warp shuffle in blocks of 1 threads, not a multiple of the 32 lanes of a warp
// THREADS: error: cannot run on the GPU: a warp shuffle in blocks of 48 threads, not a multiple of the 32 lanes of a warp
func.func @lanes(%x: memref<?x32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c1_i32 = arith.constant 1 : i32
  %c31_i32 = arith.constant 31 : i32
  %c32_i32 = arith.constant 32 : i32
  %n = memref.dim %x, %c0 : memref<?x32xf32>
  scf.parallel (%i, %lane) = (%c0, %c0) to (%n, %c32) step (%c1, %c1) {
    %v = memref.load %x[%i, %lane] : memref<?x32xf32>
    %up, %valid = gpu.shuffle up %v, %c1_i32, %c32_i32 : f32
    %last, %valid2 = gpu.shuffle idx %up, %c31_i32, %c32_i32 : f32
    memref.store %last, %x[%i, %lane] : memref<?x32xf32>
    scf.reduce
  }
  return
}

// -----

// A last dimension of 16 iterations is not a warp's lanes.
func.func @sixteen(%x: memref<?x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c1_i32 = arith.constant 1 : i32
  %c32_i32 = arith.constant 32 : i32
  %n = memref.dim %x, %c0 : memref<?x16xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%n, %c16) step (%c1, %c1) {
    %v = memref.load %x[%i, %j] : memref<?x16xf32>
    // expected-error @+1 {{cannot run on the GPU: a warp shuffle outside the last dimension of a parallel loop over the 32 lanes of a warp}}
    %s, %valid = gpu.shuffle up %v, %c1_i32, %c32_i32 : f32
    memref.store %s, %x[%i, %j] : memref<?x16xf32>
    scf.reduce
  }
  return
}

// -----

// Lanes that run one after another (a sequential loop: single-thread
// device code) would shuffle with nothing.
func.func @sequential(%x: memref<32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c1_i32 = arith.constant 1 : i32
  %c32_i32 = arith.constant 32 : i32
  scf.for %lane = %c0 to %c32 step %c1 {
    %v = memref.load %x[%lane] : memref<32xf32>
    // expected-error @+1 {{cannot run on the GPU: a warp shuffle outside the last dimension of a parallel loop over the 32 lanes of a warp}}
    %s, %valid = gpu.shuffle up %v, %c1_i32, %c32_i32 : f32
    memref.store %s, %x[%lane] : memref<32xf32>
  }
  return
}

// -----

// Lanes in a parallel loop nested in another run one after another in
// their thread.
func.func @nested(%x: memref<?x32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c1_i32 = arith.constant 1 : i32
  %c32_i32 = arith.constant 32 : i32
  %n = memref.dim %x, %c0 : memref<?x32xf32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    scf.parallel (%lane) = (%c0) to (%c32) step (%c1) {
      %v = memref.load %x[%i, %lane] : memref<?x32xf32>
      // expected-error @+1 {{cannot run on the GPU: a warp shuffle outside the last dimension of a parallel loop over the 32 lanes of a warp}}
      %s, %valid = gpu.shuffle up %v, %c1_i32, %c32_i32 : f32
      memref.store %s, %x[%i, %lane] : memref<?x32xf32>
      scf.reduce
    }
    scf.reduce
  }
  return
}

// -----

// A parallel loop with a reduction runs in single-thread device code, where
// the lanes run one after another.
func.func @reduction(%x: memref<32xf32>, %out: memref<f32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %c31_i32 = arith.constant 31 : i32
  %c32_i32 = arith.constant 32 : i32
  %zero = arith.constant 0.0 : f32
  %sum = scf.parallel (%lane) = (%c0) to (%c32) step (%c1) init (%zero) -> f32 {
    %v = memref.load %x[%lane] : memref<32xf32>
    // expected-error @+1 {{cannot run on the GPU: a warp shuffle in single-thread device code}}
    %s, %valid = gpu.shuffle idx %v, %c31_i32, %c32_i32 : f32
    scf.reduce(%s : f32) {
    ^bb0(%a: f32, %b: f32):
      %r = arith.addf %a, %b : f32
      scf.reduce.return %r : f32
    }
  }
  memref.store %sum, %out[] : memref<f32>
  return
}
