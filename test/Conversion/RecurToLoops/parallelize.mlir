// RUN: recur-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(recur-parallelize-loops))' | FileCheck %s

// A tagged nest whose iterations write their own elements in place becomes
// one two-dimensional scf.parallel; the sequential loop inside stays.

// CHECK-LABEL: func.func @in_place_nest
// CHECK-SAME:    (%[[A:.*]]: memref<4x8xf32>, %[[OUT:.*]]: memref<4x8xf32>)
// CHECK:         scf.parallel (%[[I:.*]], %[[J:.*]]) = (%{{.*}}, %{{.*}}) to (%{{.*}}, %{{.*}}) step (%{{.*}}, %{{.*}}) {
// CHECK:           %[[ACC:.*]] = scf.for {{.*}} iter_args({{.*}}) -> (f32) {
// CHECK:           memref.store %[[ACC]], %[[OUT]][%[[I]], %[[J]]]
// CHECK-NOT:     scf.for {{.*}} memref
// CHECK:         return
func.func @in_place_nest(%a: memref<4x8xf32>, %out: memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%o = %out) -> (memref<4x8xf32>) {
    %r2 = scf.for %j = %c0 to %c8 step %c1 iter_args(%o2 = %o) -> (memref<4x8xf32>) {
      %acc = scf.for %k = %c0 to %j step %c1 iter_args(%s = %zero) -> (f32) {
        %v = memref.load %a[%i, %k] : memref<4x8xf32>
        %n = arith.addf %s, %v : f32
        scf.yield %n : f32
      }
      memref.store %acc, %o2[%i, %j] : memref<4x8xf32>
      scf.yield %o2 : memref<4x8xf32>
    } {recur.parallel}
    scf.yield %r2 : memref<4x8xf32>
  } {recur.parallel}
  return
}

// -----

// A scratch row every iteration writes at the same positions would be a
// data race: the tag is dropped and the loop stays sequential.

// CHECK-LABEL: func.func @shared_scratch
// CHECK-NOT:     scf.parallel
// CHECK:         scf.for {{.*}} iter_args
// CHECK-NOT:     recur.parallel
func.func @shared_scratch(%a: memref<4x8xf32>, %out: memref<4xf32>,
                          %tmp: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %r:2 = scf.for %i = %c0 to %c4 step %c1 iter_args(%o = %out, %t = %tmp)
      -> (memref<4xf32>, memref<8xf32>) {
    %v = memref.load %a[%i, %c0] : memref<4x8xf32>
    memref.store %v, %t[%c0] : memref<8xf32>
    %w = memref.load %t[%c0] : memref<8xf32>
    memref.store %w, %o[%i] : memref<4xf32>
    scf.yield %o, %t : memref<4xf32>, memref<8xf32>
  } {recur.parallel}
  return
}

// -----

// A loop whose bufferized body yields a new buffer (a copy) is not in
// place: it stays sequential.

// CHECK-LABEL: func.func @copies
// CHECK-NOT:     scf.parallel
func.func @copies(%out: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%o = %out) -> (memref<4xf32>) {
    %n = memref.alloc() : memref<4xf32>
    memref.copy %o, %n : memref<4xf32> to memref<4xf32>
    scf.yield %n : memref<4xf32>
  } {recur.parallel}
  return
}

// -----

// One thread team per nest: a parallel loop inside another that is not
// perfectly nested in it (here after a store) goes back to scf.for.

// CHECK-LABEL: func.func @nested
// CHECK:         scf.parallel (%[[I:.*]]) =
// CHECK:           memref.store
// CHECK:           scf.for %[[J:.*]] =
// CHECK-NOT:       scf.parallel
func.func @nested(%out: memref<4x8xf32>, %row: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %one = arith.constant 1.0 : f32
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%o = %out) -> (memref<4x8xf32>) {
    memref.store %one, %row[%i] : memref<4xf32>
    scf.parallel (%j) = (%c0) to (%c8) step (%c1) {
      memref.store %one, %o[%i, %j] : memref<4x8xf32>
      scf.reduce
    }
    scf.yield %o : memref<4x8xf32>
  } {recur.parallel}
  return
}

// -----

// The same for a buffer the loop captures instead of threading it: written
// at a fixed position by every iteration, the loop stays sequential.

// CHECK-LABEL: func.func @captured_scratch
// CHECK-NOT:     scf.parallel
func.func @captured_scratch(%a: memref<4xf32>, %out: memref<4xf32>,
                            %tmp: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%o = %out) -> (memref<4xf32>) {
    %v = memref.load %a[%i] : memref<4xf32>
    memref.store %v, %tmp[%c0] : memref<8xf32>
    memref.store %v, %o[%i] : memref<4xf32>
    scf.yield %o : memref<4xf32>
  } {recur.parallel}
  return
}

// -----

// A scratch buffer from outside reached through the iteration arguments of
// a loop inside the body (what bufferization makes of a tensor.empty that
// CSE merged with an equal one outside the loop) is shared by every
// iteration: the loop stays sequential. (SparseUniversal's backward raced
// on its experts' hidden row this way.)

// CHECK-LABEL: func.func @scratch_through_inner_loop
// CHECK-NOT:     scf.parallel
// CHECK:         scf.for
func.func @scratch_through_inner_loop(%a: memref<4x8xf32>, %out: memref<4x8xf32>,
                                      %tmp: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%o = %out) -> (memref<4x8xf32>) {
    %t = scf.for %j = %c0 to %c8 step %c1 iter_args(%s = %tmp) -> (memref<8xf32>) {
      %v = memref.load %a[%i, %j] : memref<4x8xf32>
      memref.store %v, %s[%j] : memref<8xf32>
      scf.yield %s : memref<8xf32>
    }
    %o2 = scf.for %j = %c0 to %c8 step %c1 iter_args(%p = %o) -> (memref<4x8xf32>) {
      %w = memref.load %t[%j] : memref<8xf32>
      memref.store %w, %p[%i, %j] : memref<4x8xf32>
      scf.yield %p : memref<4x8xf32>
    }
    scf.yield %o2 : memref<4x8xf32>
  } {recur.parallel}
  return
}

// -----

// The same row allocated in the body is each iteration's own: parallel.

// CHECK-LABEL: func.func @scratch_in_body
// CHECK:         scf.parallel
// CHECK:           memref.alloc
func.func @scratch_in_body(%a: memref<4x8xf32>, %out: memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%o = %out) -> (memref<4x8xf32>) {
    %tmp = memref.alloc() : memref<8xf32>
    %t = scf.for %j = %c0 to %c8 step %c1 iter_args(%s = %tmp) -> (memref<8xf32>) {
      %v = memref.load %a[%i, %j] : memref<4x8xf32>
      memref.store %v, %s[%j] : memref<8xf32>
      scf.yield %s : memref<8xf32>
    }
    %o2 = scf.for %j = %c0 to %c8 step %c1 iter_args(%p = %o) -> (memref<4x8xf32>) {
      %w = memref.load %t[%j] : memref<8xf32>
      memref.store %w, %p[%i, %j] : memref<4x8xf32>
      scf.yield %p : memref<4x8xf32>
    }
    memref.dealloc %tmp : memref<8xf32>
    scf.yield %o2 : memref<4x8xf32>
  } {recur.parallel}
  return
}

// -----

// A conditional in-place update (an scf.if whose branches both yield the
// buffer, as the softmax's normalization of window attention makes) keeps
// the loop in place: parallel.

// CHECK-LABEL: func.func @conditional_update
// CHECK:         scf.parallel
// CHECK:           scf.if
func.func @conditional_update(%a: memref<4xf32>, %out: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%o = %out) -> (memref<4xf32>) {
    %v = memref.load %a[%i] : memref<4xf32>
    %pos = arith.cmpf ogt, %v, %zero : f32
    %n = scf.if %pos -> (memref<4xf32>) {
      memref.store %v, %o[%i] : memref<4xf32>
      scf.yield %o : memref<4xf32>
    } else {
      scf.yield %o : memref<4xf32>
    }
    scf.yield %n : memref<4xf32>
  } {recur.parallel}
  return
}

// -----

// Branches yielding different buffers are not an in-place update: the loop
// stays sequential.

// CHECK-LABEL: func.func @branches_differ
// CHECK-NOT:     scf.parallel
func.func @branches_differ(%a: memref<4xf32>, %out: memref<4xf32>,
                           %other: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%o = %out) -> (memref<4xf32>) {
    %v = memref.load %a[%i] : memref<4xf32>
    %pos = arith.cmpf ogt, %v, %zero : f32
    %n = scf.if %pos -> (memref<4xf32>) {
      scf.yield %o : memref<4xf32>
    } else {
      scf.yield %other : memref<4xf32>
    }
    scf.yield %n : memref<4xf32>
  } {recur.parallel}
  return
}

// -----

// Writes through a view of complex numbers as their parts
// (recur.view_as_real) count as writes into the viewed buffer: at the
// iteration's own position the loop runs in parallel (the streaming scan
// of complex channels), ...

// CHECK-LABEL: func.func @parts_own_elements
// CHECK:         scf.parallel
// CHECK:         recur.view_as_real
// CHECK:         vector.transfer_write
func.func @parts_own_elements(%out: memref<4x4xcomplex<f32>>, %v: vector<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%o = %out) -> (memref<4x4xcomplex<f32>>) {
    %p = recur.view_as_real %o : memref<4x4xcomplex<f32>> to memref<4x8xf32>
    vector.transfer_write %v, %p[%i, %c0] {in_bounds = [true]} : vector<8xf32>, memref<4x8xf32>
    %b = recur.view_as_complex %p : memref<4x8xf32> to memref<4x4xcomplex<f32>>
    scf.yield %b : memref<4x4xcomplex<f32>>
  } {recur.parallel}
  return
}

// -----

// ... and at a fixed one every iteration writes it stays sequential.

// CHECK-LABEL: func.func @parts_fixed_position
// CHECK-NOT:     scf.parallel
// CHECK:         scf.for
func.func @parts_fixed_position(%out: memref<4x4xcomplex<f32>>, %v: vector<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %r = scf.for %i = %c0 to %c4 step %c1 iter_args(%o = %out) -> (memref<4x4xcomplex<f32>>) {
    %p = recur.view_as_real %o : memref<4x4xcomplex<f32>> to memref<4x8xf32>
    vector.transfer_write %v, %p[%c0, %c0] {in_bounds = [true]} : vector<8xf32>, memref<4x8xf32>
    %b = recur.view_as_complex %p : memref<4x8xf32> to memref<4x4xcomplex<f32>>
    scf.yield %b : memref<4x4xcomplex<f32>>
  } {recur.parallel}
  return
}
