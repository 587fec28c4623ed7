// RUN: recur-opt %s --pass-pipeline='builtin.module(func.func(recur-promote-accumulators))' --split-input-file | FileCheck %s

// A dot product into an element of a buffer the function allocated: the
// element is loaded before the loop, carried as an iteration argument whose
// add may be reassociated, and stored after the loop; the other loads stay.

// CHECK-LABEL: func.func @dot
// CHECK-SAME:    (%[[X:.*]]: memref<?x64xf32>, %[[Y:.*]]: memref<?x64xf32>, %[[N:.*]]: index)
// CHECK:         %[[BUF:.*]] = memref.alloc(%[[N]])
// CHECK:         scf.for %[[I:.*]] = %{{.*}} to %[[N]]
// CHECK:           %[[INIT:.*]] = memref.load %[[BUF]][%[[I]]]
// CHECK:           %[[SUM:.*]] = scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %[[INIT]]) -> (f32)
// CHECK-NEXT:        %[[A:.*]] = memref.load %[[X]][%[[I]], %[[K]]]
// CHECK-NEXT:        %[[B:.*]] = memref.load %[[Y]][%[[I]], %[[K]]]
// CHECK-NEXT:        %[[P:.*]] = arith.mulf %[[A]], %[[B]] : f32
// CHECK-NEXT:        %[[S:.*]] = arith.addf %[[ACC]], %[[P]] fastmath<reassoc> : f32
// CHECK-NEXT:        scf.yield %[[S]] : f32
// CHECK-NEXT:      }
// CHECK-NEXT:      memref.store %[[SUM]], %[[BUF]][%[[I]]]
func.func @dot(%x: memref<?x64xf32>, %y: memref<?x64xf32>, %n: index)
    -> memref<?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %buf = memref.alloc(%n) : memref<?xf32>
  scf.for %i = %c0 to %n step %c1 {
    scf.for %k = %c0 to %c64 step %c1 {
      %a = memref.load %x[%i, %k] : memref<?x64xf32>
      %b = memref.load %y[%i, %k] : memref<?x64xf32>
      %acc = memref.load %buf[%i] : memref<?xf32>
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %p : f32
      memref.store %s, %buf[%i] : memref<?xf32>
    }
  }
  return %buf : memref<?xf32>
}

// -----

// Through a view of the buffer, and a maximum: carried too, but only a float
// add is reassociated.

// CHECK-LABEL: func.func @view_max
// CHECK:         %[[V:.*]] = memref.subview
// CHECK:         %[[INIT:.*]] = memref.load %[[V]]
// CHECK:         scf.for {{.*}} iter_args(%[[M:.*]] = %[[INIT]]) -> (f32)
// CHECK:           %[[NEW:.*]] = arith.maximumf %[[M]], %{{.*}} : f32
// CHECK-NEXT:      scf.yield %[[NEW]]
// CHECK:         memref.store %{{.*}}, %[[V]]
func.func @view_max(%x: memref<64xf32>) -> memref<4x4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c64 = arith.constant 64 : index
  %buf = memref.alloca() : memref<4x4xf32>
  %v = memref.subview %buf[1, 0] [2, 4] [1, 1]
      : memref<4x4xf32> to memref<2x4xf32, strided<[4, 1], offset: 4>>
  scf.for %k = %c0 to %c64 step %c1 {
    %a = memref.load %x[%k] : memref<64xf32>
    %m = memref.load %v[%c1, %c2] : memref<2x4xf32, strided<[4, 1], offset: 4>>
    %n = arith.maximumf %m, %a : f32
    memref.store %n, %v[%c1, %c2] : memref<2x4xf32, strided<[4, 1], offset: 4>>
  }
  return %buf : memref<4x4xf32>
}

// -----

// Left alone: the sum in an argument (another argument may share its
// memory), another access to the buffer in the loop (even through another
// view), an index that moves with the loop, a call in the loop, a nested
// region.

// CHECK-LABEL: func.func @alone
// CHECK-NOT:     iter_args
// CHECK:         return
func.func private @effect()
func.func @alone(%x: memref<64xf32>, %out: memref<4xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c64 = arith.constant 64 : index
  %buf = memref.alloc() : memref<64xf32>
  %view = memref.subview %buf[0] [4] [1] : memref<64xf32> to memref<4xf32, strided<[1]>>
  // The sum in an argument.
  scf.for %k = %c0 to %c64 step %c1 {
    %a = memref.load %x[%k] : memref<64xf32>
    %o = memref.load %out[%c0] : memref<4xf32>
    %s = arith.addf %o, %a : f32
    memref.store %s, %out[%c0] : memref<4xf32>
  }
  // Another read of the buffer, through a view.
  scf.for %k = %c0 to %c64 step %c1 {
    %a = memref.load %view[%c3] : memref<4xf32, strided<[1]>>
    %o = memref.load %buf[%c0] : memref<64xf32>
    %s = arith.addf %o, %a : f32
    memref.store %s, %buf[%c0] : memref<64xf32>
  }
  // An index that moves.
  scf.for %k = %c0 to %c64 step %c1 {
    %a = memref.load %x[%k] : memref<64xf32>
    %o = memref.load %buf[%k] : memref<64xf32>
    %s = arith.addf %o, %a : f32
    memref.store %s, %buf[%k] : memref<64xf32>
  }
  // A call.
  scf.for %k = %c0 to %c64 step %c1 {
    %a = memref.load %x[%k] : memref<64xf32>
    %o = memref.load %buf[%c0] : memref<64xf32>
    %s = arith.addf %o, %a : f32
    func.call @effect() : () -> ()
    memref.store %s, %buf[%c0] : memref<64xf32>
  }
  // A nested region.
  scf.for %k = %c0 to %c64 step %c1 {
    %o = memref.load %buf[%c0] : memref<64xf32>
    %big = arith.cmpf ogt, %o, %o : f32
    %a = scf.if %big -> f32 {
      scf.yield %o : f32
    } else {
      scf.yield %o : f32
    }
    memref.store %a, %buf[%c0] : memref<64xf32>
  }
  memref.dealloc %buf : memref<64xf32>
  return
}
