// RUN: recur-opt %s --split-input-file --recur-destination-outputs | FileCheck %s

// An output computed in an allocation of the entry block, through a loop
// that updates it in place and a branch that yields it either way: the
// allocation becomes the destination argument, which the loop writes, and
// the output leaves the results. The next state stays a result.

// CHECK-LABEL: func.func @in_place(
// CHECK-SAME: %[[X:[^:]+]]: memref<?xf32>,
// CHECK-SAME: %[[D:[^:]+]]: memref<?xf32> {recur.name = "y", recur.role = "destination"})
// CHECK-SAME: -> (memref<4xf32> {recur.role = "next_state"})
// CHECK-NOT: memref.alloc(%
// CHECK: scf.for {{.*}} iter_args(%[[B:.+]] = %[[D]])
// CHECK: memref.store %{{.+}}, %[[B]][
// CHECK-NOT: memref.copy
// CHECK: return %{{.+}} : memref<4xf32>
func.func @in_place(%x: memref<?xf32>, %c: i1)
    -> (memref<?xf32> {recur.name = "y", recur.role = "output"},
        memref<4xf32> {recur.role = "next_state"}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  %y = memref.alloc(%n) : memref<?xf32>
  %h = memref.alloc() : memref<4xf32>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%b = %y) -> memref<?xf32> {
    %v = memref.load %x[%i] : memref<?xf32>
    memref.store %v, %b[%i] : memref<?xf32>
    scf.yield %b : memref<?xf32>
  }
  %s = scf.if %c -> memref<?xf32> {
    scf.yield %r : memref<?xf32>
  } else {
    scf.yield %r : memref<?xf32>
  }
  return %s, %h : memref<?xf32>, memref<4xf32>
}

// -----

// An output that is an argument passed through, and one returned twice:
// each is copied into its destination (the first use of the allocation
// becomes the first destination; the second output copies from it).

// CHECK-LABEL: func.func @copied(
// CHECK-SAME: %[[X:[^:]+]]: memref<8xf32>,
// CHECK-SAME: %[[D0:[^:]+]]: memref<8xf32> {recur.role = "destination"},
// CHECK-SAME: %[[D1:[^:]+]]: memref<8xf32> {recur.role = "destination"},
// CHECK-SAME: %[[D2:[^:]+]]: memref<8xf32> {recur.role = "destination"}) {
// CHECK: memref.copy %[[X]], %[[D0]]
// CHECK: memref.copy %[[D1]], %[[D2]]
// CHECK: return{{$}}
func.func @copied(%x: memref<8xf32>)
    -> (memref<8xf32> {recur.role = "output"},
        memref<8xf32> {recur.role = "output"},
        memref<8xf32> {recur.role = "output"}) {
  %y = memref.alloc() : memref<8xf32>
  return %x, %y, %y : memref<8xf32>, memref<8xf32>, memref<8xf32>
}

// -----

// A loop that yields a new buffer is not looked through: copied.

// CHECK-LABEL: func.func @fresh_in_loop(
// CHECK: scf.for
// CHECK: memref.copy %{{.+}}, %[[D:.+]] : memref<8xf32> to memref<8xf32>
// CHECK-NEXT: return{{$}}
func.func @fresh_in_loop(%n: index)
    -> (memref<8xf32> {recur.role = "output"}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %y = memref.alloc() : memref<8xf32>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%b = %y) -> memref<8xf32> {
    %z = memref.alloc() : memref<8xf32>
    scf.yield %z : memref<8xf32>
  }
  return %r : memref<8xf32>
}

// -----

// A derived backward: every gradient gets a destination.

// CHECK-LABEL: func.func @F_backward(
// CHECK-SAME: %{{[^:]+}}: memref<8xf32> {recur.role = "cotangent"},
// CHECK-SAME: %[[G:[^:]+]]: memref<8xf32> {recur.name = "x", recur.role = "destination"}) {
// CHECK: linalg.fill ins(%{{.+}} : f32) outs(%[[G]] : memref<8xf32>)
func.func @F_backward(%x: memref<8xf32>, %dy: memref<8xf32> {recur.role = "cotangent"})
    -> (memref<8xf32> {recur.name = "x", recur.role = "grad"}) {
  %cst = arith.constant 0.0 : f32
  %g = memref.alloc() : memref<8xf32>
  linalg.fill ins(%cst : f32) outs(%g : memref<8xf32>)
  return %g : memref<8xf32>
}

// -----

// An output written through a flat view of its allocation and reshaped
// back (linear_scan's few-channels form): the same buffer, so the
// allocation becomes the destination and nothing is copied. A reshape
// that does not undo the collapse is a view like any other: copied.

// CHECK-LABEL: func.func @flat_view(
// CHECK-SAME: %[[D:[^:]+]]: memref<4x?x2xf32> {recur.role = "destination"})
// CHECK-NOT: memref.alloc(
// CHECK: %[[FLAT:.+]] = memref.collapse_shape %[[D]] {{\[}}[0], [1, 2]]
// CHECK: scf.for {{.*}} iter_args(%[[B:.+]] = %[[FLAT]])
// CHECK-NOT: memref.copy
// CHECK: return{{$}}
func.func @flat_view(%n: index)
    -> (memref<4x?x2xf32> {recur.role = "output"}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %f = arith.constant 1.0 : f32
  %y = memref.alloc(%n) : memref<4x?x2xf32>
  %flat = memref.collapse_shape %y [[0], [1, 2]]
      : memref<4x?x2xf32> into memref<4x?xf32>
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%b = %flat) -> memref<4x?xf32> {
    memref.store %f, %b[%c0, %i] : memref<4x?xf32>
    scf.yield %b : memref<4x?xf32>
  }
  %back = memref.expand_shape %r [[0], [1, 2]] output_shape [4, %n, 2]
      : memref<4x?xf32> into memref<4x?x2xf32>
  return %back : memref<4x?x2xf32>
}

// CHECK-LABEL: func.func @other_reshape(
// CHECK-SAME: %[[D:[^:]+]]: memref<8x2xf32> {recur.role = "destination"})
// CHECK: %[[Y:.+]] = memref.alloc() : memref<16xf32>
// CHECK: %[[E:.+]] = memref.expand_shape %[[Y]]
// CHECK: memref.copy %[[E]], %[[D]]
func.func @other_reshape() -> (memref<8x2xf32> {recur.role = "output"}) {
  %y = memref.alloc() : memref<16xf32>
  %back = memref.expand_shape %y [[0, 1]] output_shape [8, 2]
      : memref<16xf32> into memref<8x2xf32>
  return %back : memref<8x2xf32>
}
