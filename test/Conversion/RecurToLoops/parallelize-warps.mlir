// RUN: recur-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(func.func(recur-parallelize-loops))' | FileCheck %s

// The lanes of a warp (recur.warp_lanes, linear_scan's warp form): every
// lane writes the warp's result to one element, which a loop of its own
// elements would not be allowed; they merge into the loop around them as
// its last dimension, and the tag goes.

// CHECK-LABEL: func.func @lanes
// CHECK: scf.parallel (%[[C:.*]], %[[LANE:.*]]) = (%c0, %c0) to (%c4, %c32) step (%c1, %c1) {
// CHECK: gpu.shuffle idx
// CHECK: memref.store %{{.*}}, %{{.*}}[%[[C]]]
// CHECK-NOT: recur.warp_lanes
// CHECK: return
func.func @lanes(%x: memref<4x32xf32>, %out: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c32 = arith.constant 32 : index
  %c31_i32 = arith.constant 31 : i32
  %c32_i32 = arith.constant 32 : i32
  %r = scf.for %c = %c0 to %c4 step %c1 iter_args(%o = %out) -> (memref<4xf32>) {
    %r2 = scf.for %lane = %c0 to %c32 step %c1 iter_args(%o2 = %o) -> (memref<4xf32>) {
      %v = memref.load %x[%c, %lane] : memref<4x32xf32>
      %last, %valid = gpu.shuffle idx %v, %c31_i32, %c32_i32 : f32
      memref.store %last, %o2[%c] : memref<4xf32>
      scf.yield %o2 : memref<4xf32>
    } {recur.parallel, recur.warp_lanes}
    scf.yield %r2 : memref<4xf32>
  } {recur.parallel}
  return
}

// -----

// The same write in a loop not of lanes: its iterations would race, so it
// stays sequential.

// CHECK-LABEL: func.func @not_lanes
// CHECK: scf.parallel (%{{.*}}) = (%c0) to (%c4) step (%c1) {
// CHECK: scf.for
func.func @not_lanes(%x: memref<4x32xf32>, %out: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c32 = arith.constant 32 : index
  %r = scf.for %c = %c0 to %c4 step %c1 iter_args(%o = %out) -> (memref<4xf32>) {
    %r2 = scf.for %j = %c0 to %c32 step %c1 iter_args(%o2 = %o) -> (memref<4xf32>) {
      %v = memref.load %x[%c, %j] : memref<4x32xf32>
      memref.store %v, %o2[%c] : memref<4xf32>
      scf.yield %o2 : memref<4xf32>
    } {recur.parallel}
    scf.yield %r2 : memref<4xf32>
  } {recur.parallel}
  return
}

// -----

// Lanes whose buffer is not updated in place cannot run in parallel.
func.func @copied(%x: memref<32xf32>, %out: memref<1xf32>, %other: memref<1xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  // expected-error @+1 {{the lanes of a warp cannot run in parallel: bufferization did not update their buffers in place}}
  %r = scf.for %lane = %c0 to %c32 step %c1 iter_args(%o = %out) -> (memref<1xf32>) {
    %v = memref.load %x[%lane] : memref<32xf32>
    memref.store %v, %other[%c0] : memref<1xf32>
    scf.yield %other : memref<1xf32>
  } {recur.parallel, recur.warp_lanes}
  return
}

// -----

// Lanes that do not merge into the parallel loop around them (an op
// between the two loops) would run one after another.
func.func @unmerged(%x: memref<4x32xf32>, %out: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c32 = arith.constant 32 : index
  %c31_i32 = arith.constant 31 : i32
  %c32_i32 = arith.constant 32 : i32
  %r = scf.for %c = %c0 to %c4 step %c1 iter_args(%o = %out) -> (memref<4xf32>) {
    %zero = arith.constant 0.0 : f32
    memref.store %zero, %o[%c] : memref<4xf32>
    // expected-error @+1 {{the lanes of a warp did not merge into the parallel loop around them}}
    %r2 = scf.for %lane = %c0 to %c32 step %c1 iter_args(%o2 = %o) -> (memref<4xf32>) {
      %v = memref.load %x[%c, %lane] : memref<4x32xf32>
      %last, %valid = gpu.shuffle idx %v, %c31_i32, %c32_i32 : f32
      memref.store %last, %o2[%c] : memref<4xf32>
      scf.yield %o2 : memref<4xf32>
    } {recur.parallel, recur.warp_lanes}
    scf.yield %r2 : memref<4xf32>
  } {recur.parallel}
  return
}
