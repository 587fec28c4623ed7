// RUN: recur-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(func.func(recur-parallelize-loops))' | FileCheck %s

// The block form (linear_scan's scan-blocks): the loop over the tiles
// (recur.gpu_block, recur.parallel) becomes an scf.parallel that keeps its
// tag; its statuses' atomics, at positions other tiles read, do not keep
// it sequential. Its threads (recur.block_threads) stay scf.for: each
// writes its own elements of the buffers it updates in place.

// CHECK-LABEL: func.func @tiles
// CHECK: scf.parallel (%[[T:.*]]) =
// CHECK: memref.atomic_rmw ori %{{.*}}, %{{.*}}[%{{.*}}]
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} iter_args
// CHECK: } {recur.block_threads}
// CHECK: } {recur.gpu_block}
func.func @tiles(%x: memref<?x32xf32>, %flags: memref<?xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %zero = arith.constant 0 : i32
  %n = memref.dim %x, %c0 : memref<?x32xf32>
  %r = scf.for %t = %c0 to %n step %c1 iter_args(%o = %x) -> (memref<?x32xf32>) {
    %p = arith.subi %t, %c1 : index
    %seen = memref.atomic_rmw ori %zero, %flags[%p] : (i32, memref<?xi32>) -> i32
    %s = scf.for %i = %c0 to %c32 step %c1 iter_args(%b = %o) -> (memref<?x32xf32>) {
      %v = memref.load %b[%t, %i] : memref<?x32xf32>
      %w = arith.addf %v, %v : f32
      memref.store %w, %b[%t, %i] : memref<?x32xf32>
      scf.yield %b : memref<?x32xf32>
    } {recur.block_threads}
    scf.yield %s : memref<?x32xf32>
  } {recur.gpu_block, recur.parallel}
  return
}

// -----

// Threads that all write one element cannot run side by side.
func.func @shared_element(%x: memref<?x32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %n = memref.dim %x, %c0 : memref<?x32xf32>
  %r = scf.for %t = %c0 to %n step %c1 iter_args(%o = %x) -> (memref<?x32xf32>) {
    // expected-error @+1 {{the threads of a block cannot run side by side: bufferization did not update their buffers in place, each thread its own elements}}
    %s = scf.for %i = %c0 to %c32 step %c1 iter_args(%b = %o) -> (memref<?x32xf32>) {
      %v = memref.load %b[%t, %i] : memref<?x32xf32>
      memref.store %v, %b[%t, %c0] : memref<?x32xf32>
      scf.yield %b : memref<?x32xf32>
    } {recur.block_threads}
    scf.yield %s : memref<?x32xf32>
  } {recur.gpu_block, recur.parallel}
  return
}

// -----

// Tiles that write a buffer at a position not placed by the tile cannot
// run in parallel: an error, not a sequential loop.
func.func @unplaced(%x: memref<?x32xf32>, %y: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  %one = arith.constant 1.0 : f32
  %n = memref.dim %x, %c0 : memref<?x32xf32>
  // expected-error @+1 {{the blocks of a block form cannot run in parallel: bufferization did not update their buffers in place}}
  scf.for %t = %c0 to %n step %c1 {
    memref.store %one, %y[%c0] : memref<4xf32>
  } {recur.gpu_block, recur.parallel}
  return
}
