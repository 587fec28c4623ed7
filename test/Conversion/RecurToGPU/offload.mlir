// RUN: recur-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(func.func(recur-gpu-offload))' \
// RUN:   | FileCheck %s

// A two-dimensional parallel loop becomes one launch of 256-thread blocks
// over its flattened iterations, guarded by there being any; each thread
// recovers its indices, the last dimension fastest, and skips past the end.

// CHECK-LABEL: func.func @parallel
// CHECK-SAME: (%[[X:.*]]: memref<?x8xf32>)
// CHECK: %[[N0:.*]] = arith.maxsi
// CHECK: %[[N1:.*]] = arith.maxsi
// CHECK: %[[TOTAL:.*]] = arith.muli %{{.*}}, %[[N1]]
// CHECK: %[[C256:.*]] = arith.constant 256 : index
// CHECK: %[[BLOCKS:.*]] = arith.ceildivsi %[[TOTAL]], %[[C256]]
// CHECK: %[[ANY:.*]] = arith.cmpi sgt, %[[TOTAL]]
// CHECK: scf.if %[[ANY]] {
// CHECK: gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[BLOCKS]], %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C256]],
// CHECK: %[[FLAT:.*]] = arith.addi
// CHECK: %[[IN:.*]] = arith.cmpi slt, %[[FLAT]], %[[TOTAL]]
// CHECK: scf.if %[[IN]] {
// CHECK: %[[J:.*]] = arith.remsi %[[FLAT]], %[[N1]]
// CHECK: %[[I:.*]] = arith.divsi %[[FLAT]], %[[N1]]
// CHECK: memref.load %[[X]]
// CHECK: arith.mulf
// CHECK: memref.store
// CHECK: gpu.terminator
// CHECK-NOT: scf.parallel
// CHECK: return
func.func @parallel(%x: memref<?x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %n = memref.dim %x, %c0 : memref<?x8xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%n, %c8) step (%c1, %c1) {
    %v = memref.load %x[%i, %j] : memref<?x8xf32>
    %w = arith.mulf %v, %v : f32
    memref.store %w, %x[%i, %j] : memref<?x8xf32>
    scf.reduce
  }
  return
}

// -----

// A sequential loop around parallel work (a block recurrence) stays on the
// host and launches once per iteration; a sequential update of the carried
// buffer runs in a single-thread launch; the host's buffers stay host
// allocations, their copies become parallel copy launches, and a buffer
// allocated in device code becomes a private one at the top of its launch.

// CHECK-LABEL: func.func @blocks
// CHECK: %[[S:.*]] = memref.alloc() : memref<16xf32>
// CHECK: scf.for %[[B:.*]] = {{.*}} {
// CHECK:   scf.if
// CHECK:     gpu.launch
// CHECK:       memref.alloca() : memref<4xf32>
// CHECK:       memref.load
// CHECK-NOT:   memref.dealloc
// CHECK:       gpu.terminator
// CHECK:   %[[ONE:.*]] = arith.constant 1 : index
// CHECK:   gpu.launch blocks({{.*}}) in ({{.*}} = %[[ONE]], {{.*}} = %[[ONE]], {{.*}} = %[[ONE]]) threads({{.*}}) in ({{.*}} = %[[ONE]], {{.*}} = %[[ONE]], {{.*}} = %[[ONE]])
// CHECK:     scf.for
// CHECK:       memref.store
// CHECK:     gpu.terminator
// CHECK: %[[COPY:.*]] = memref.alloc() : memref<16xf32>
// CHECK: gpu.launch
// CHECK:   memref.load %[[S]]
// CHECK:   memref.store %{{.*}}, %[[COPY]]
// CHECK: memref.dealloc %[[S]]
// CHECK-NOT: memref.copy
// CHECK-LABEL: func.func @scalar_copy
func.func @blocks(%x: memref<?x16xf32>) -> memref<16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  %n = memref.dim %x, %c0 : memref<?x16xf32>
  %s = memref.alloc() : memref<16xf32>
  scf.for %b = %c0 to %n step %c1 {
    scf.parallel (%j) = (%c0) to (%c16) step (%c1) {
      %t = memref.alloc() : memref<4xf32>
      %v = memref.load %x[%b, %j] : memref<?x16xf32>
      memref.store %v, %t[%c0] : memref<4xf32>
      %u = memref.load %t[%c0] : memref<4xf32>
      memref.store %u, %s[%j] : memref<16xf32>
      memref.dealloc %t : memref<4xf32>
      scf.reduce
    }
    scf.for %k = %c1 to %c16 step %c1 {
      %p = arith.subi %k, %c1 : index
      %a = memref.load %s[%p] : memref<16xf32>
      %c = memref.load %s[%k] : memref<16xf32>
      %d = arith.addf %a, %c : f32
      memref.store %d, %s[%k] : memref<16xf32>
    }
  }
  %copy = memref.alloc() : memref<16xf32>
  memref.copy %s, %copy : memref<16xf32> to memref<16xf32>
  memref.dealloc %s : memref<16xf32>
  return %copy : memref<16xf32>
}

// A copy of a rank-0 buffer (a derived backward's scalar accumulator) has
// no loop to spread over threads: it runs in a single-thread launch.
// CHECK: %[[ONE0:.*]] = arith.constant 1 : index
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %[[ONE0]], {{.*}} = %[[ONE0]], {{.*}} = %[[ONE0]]) threads({{.*}}) in ({{.*}} = %[[ONE0]], {{.*}} = %[[ONE0]], {{.*}} = %[[ONE0]])
// CHECK:   %[[V:.*]] = memref.load %{{.*}}[] : memref<f32>
// CHECK:   memref.store %[[V]], %{{.*}}[] : memref<f32>
// CHECK:   gpu.terminator
// CHECK-NOT: memref.copy
func.func @scalar_copy(%s: memref<f32>) -> memref<f32> {
  %copy = memref.alloc() : memref<f32>
  memref.copy %s, %copy : memref<f32> to memref<f32>
  return %copy : memref<f32>
}

// -----

// A scalar one single-thread launch computes and a later parallel loop
// uses crosses through a one-element buffer.

// CHECK-LABEL: func.func @spill
// CHECK: %[[BUF:.*]] = memref.alloc() : memref<1xf32>
// CHECK: gpu.launch
// CHECK:   %[[SUM:.*]] = scf.for
// CHECK:   memref.store %[[SUM]], %[[BUF]]
// CHECK:   gpu.terminator
// CHECK: gpu.launch
// CHECK:   %[[V:.*]] = memref.load %[[BUF]]
// CHECK:   memref.store %[[V]]
// CHECK: memref.dealloc %[[BUF]]
func.func @spill(%x: memref<8xf32>, %y: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %zero = arith.constant 0.0 : f32
  %sum = scf.for %i = %c0 to %c8 step %c1 iter_args(%acc = %zero) -> f32 {
    %v = memref.load %x[%i] : memref<8xf32>
    %a = arith.addf %acc, %v : f32
    scf.yield %a : f32
  }
  scf.parallel (%j) = (%c0) to (%c8) step (%c1) {
    memref.store %sum, %y[%j] : memref<8xf32>
    scf.reduce
  }
  return
}

// -----

// What the host would need from device code, and device buffers of dynamic
// shape, are errors at their place.

func.func @host_needs_device_value(%x: memref<8xindex>) {
  %c0 = arith.constant 0 : index
  %n = memref.load %x[%c0] : memref<8xindex>
  // expected-error @+1 {{cannot run on the GPU: the host needs a value that device code computes here}}
  %buf = memref.alloc(%n) : memref<?xf32>
  memref.dealloc %buf : memref<?xf32>
  return
}

// -----

func.func @size_from_device(%x: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    // expected-error @+1 {{cannot run on the GPU yet: a buffer of dynamic shape 'memref<?xf32>' allocated inside device code}}
    %t = memref.alloc(%i) : memref<?xf32>
    memref.dealloc %t : memref<?xf32>
    scf.reduce
  }
  return
}

// -----

// A buffer of dynamic shape allocated by each iteration, of a size the
// host knows (a row of attention logits over a runtime number of keys), is
// each thread's slice of one pool the host allocates around the launch:
// the row's bytes rounded up to 64, times the threads of the grid.

// CHECK-LABEL: func.func @pooled
// CHECK-SAME: (%[[X:.*]]: memref<?x?xf32>)
// CHECK: %[[N:.*]] = memref.dim %[[X]], %c0
// CHECK: %[[M:.*]] = memref.dim %[[X]], %c1
// CHECK: scf.if
// CHECK: %[[BYTES:.*]] = arith.muli %{{.*}}, %[[M]]
// CHECK: %[[SLICE:.*]] = arith.muli %{{.*}}, %[[C64:.*]] :
// CHECK: %[[THREADS:.*]] = arith.muli %[[GRID:.*]], %[[BLOCK:.*]] :
// CHECK: %[[POOLBYTES:.*]] = arith.muli %[[SLICE]], %[[THREADS]]
// CHECK: %[[POOL:.*]] = memref.alloc(%[[POOLBYTES]]) : memref<?xi8>
// CHECK: gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in ({{.*}} = %[[GRID]], {{.*}}) threads(%[[TX:.*]], %{{.*}}, %{{.*}}) in ({{.*}} = %[[BLOCK]],
// The flattened index of the loop, then the thread of the pool slice.
// CHECK: %[[ID:.*]] = arith.addi %{{.*}}, %[[TX]]
// CHECK: %[[ID2:.*]] = arith.addi %{{.*}}, %[[TX]]
// CHECK: %[[SHIFT:.*]] = arith.muli %[[ID2]], %[[SLICE]]
// CHECK: %[[ROW:.*]] = memref.view %[[POOL]][%[[SHIFT]]][%[[M]]] : memref<?xi8> to memref<?xf32>
// CHECK: memref.store %{{.*}}, %[[ROW]]
// CHECK-NOT: memref.dealloc %[[ROW]]
// CHECK: gpu.terminator
// CHECK: memref.dealloc %[[POOL]]
func.func @pooled(%x: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?x?xf32>
  %m = memref.dim %x, %c1 : memref<?x?xf32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %row = memref.alloc(%m) : memref<?xf32>
    scf.for %j = %c0 to %m step %c1 {
      %v = memref.load %x[%i, %j] : memref<?x?xf32>
      memref.store %v, %row[%j] : memref<?xf32>
    }
    scf.for %j = %c0 to %m step %c1 {
      %v = memref.load %row[%j] : memref<?xf32>
      %w = arith.addf %v, %v : f32
      memref.store %w, %x[%i, %j] : memref<?x?xf32>
    }
    memref.dealloc %row : memref<?xf32>
    scf.reduce
  }
  return
}

// -----

// A constant buffer is read where the kernel runs: the launch takes its own
// get_global (outlining then copies the global into the GPU module).

memref.global "private" constant @table : memref<4xf32> = dense<[1.0, 2.0, 3.0, 4.0]>

// CHECK-LABEL: func.func @constant
// CHECK: gpu.launch
// CHECK-NEXT: %[[T:.*]] = memref.get_global @table : memref<4xf32>
// CHECK: memref.load %[[T]]
// CHECK: gpu.terminator
func.func @constant(%y: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %t = memref.get_global @table : memref<4xf32>
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    %v = memref.load %t[%i] : memref<4xf32>
    memref.store %v, %y[%i] : memref<4xf32>
    scf.reduce
  }
  return
}

// -----

// The deallocation pipeline's ownership test (dealloc_helper, a private
// host helper) of a buffer that either branch may return: its lists of
// buffers and flags become host stack buffers at the top of the function,
// so the helper and the deallocations it decides run on the host (in device
// memory the decision would be device code's, and its deallocations lost).
// The device work stays in its launch.

// CHECK-LABEL: func.func @ownership
// CHECK-DAG: %[[PTRS:.*]] = memref.alloca() : memref<2xindex>
// CHECK-DAG: memref.alloca() : memref<2xi1>
// CHECK-DAG: memref.alloca() : memref<2xi1>
// CHECK: scf.for
// CHECK:   gpu.launch
// CHECK:     memref.store
// CHECK:     gpu.terminator
// CHECK:   memref.store %{{.*}}, %[[PTRS]]
// CHECK:   call @dealloc_helper
// CHECK:   %[[F:.*]] = memref.load %{{.*}}[%{{.*}}] : memref<2xi1>
// CHECK:   scf.if %[[F]] {
// CHECK:     memref.dealloc %{{.*}} : memref<?xf32>
// CHECK-NOT: gpu.launch
// CHECK-NOT: memref.dealloc %[[PTRS]]
// CHECK: return
func.func private @dealloc_helper(%ptrs: memref<?xindex>, %owned: memref<?xi1>,
                                  %free: memref<?xi1>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %ptrs, %c0 : memref<?xindex>
  scf.for %i = %c0 to %n step %c1 {
    %o = memref.load %owned[%i] : memref<?xi1>
    memref.store %o, %free[%i] : memref<?xi1>
  }
  return
}
func.func @ownership(%n: index, %which: i1, %times: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %true = arith.constant true
  %zero = arith.constant 0.0 : f32
  scf.for %t = %c0 to %times step %c1 {
    %a = memref.alloc(%n) : memref<?xf32>
    %b = memref.alloc(%n) : memref<?xf32>
    scf.parallel (%i) = (%c0) to (%n) step (%c1) {
      memref.store %zero, %a[%i] : memref<?xf32>
      scf.reduce
    }
    %pa = memref.extract_aligned_pointer_as_index %a : memref<?xf32> -> index
    %pb = memref.extract_aligned_pointer_as_index %b : memref<?xf32> -> index
    %ptrs = memref.alloc() : memref<2xindex>
    %owned = memref.alloc() : memref<2xi1>
    %free = memref.alloc() : memref<2xi1>
    memref.store %pa, %ptrs[%c0] : memref<2xindex>
    memref.store %pb, %ptrs[%c1] : memref<2xindex>
    memref.store %true, %owned[%c0] : memref<2xi1>
    memref.store %which, %owned[%c1] : memref<2xi1>
    %ptrsd = memref.cast %ptrs : memref<2xindex> to memref<?xindex>
    %ownedd = memref.cast %owned : memref<2xi1> to memref<?xi1>
    %freed = memref.cast %free : memref<2xi1> to memref<?xi1>
    func.call @dealloc_helper(%ptrsd, %ownedd, %freed)
        : (memref<?xindex>, memref<?xi1>, memref<?xi1>) -> ()
    %f0 = memref.load %free[%c0] : memref<2xi1>
    scf.if %f0 {
      memref.dealloc %a : memref<?xf32>
    }
    %f1 = memref.load %free[%c1] : memref<2xi1>
    scf.if %f1 {
      memref.dealloc %b : memref<?xf32>
    }
    memref.dealloc %ptrs : memref<2xindex>
    memref.dealloc %owned : memref<2xi1>
    memref.dealloc %free : memref<2xi1>
  }
  return
}

// -----

// A free that device code would decide (a branch on a value read from
// device memory) cannot be made there: an error, not a leak.

func.func @device_decides(%x: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %a = memref.alloc(%n) : memref<?xf32>
  %v = memref.load %x[%c0] : memref<?xf32>
  %positive = arith.cmpf ogt, %v, %zero : f32
  scf.if %positive {
    // expected-error @+1 {{cannot run on the GPU yet: device code decides whether to free a buffer of the host's}}
    memref.dealloc %a : memref<?xf32>
  }
  return
}
