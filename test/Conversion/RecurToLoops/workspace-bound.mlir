// RUN: recur-opt %s --split-input-file --recur-workspace-bound --canonicalize --cse | FileCheck %s

// recur-workspace-bound adds @F_workspace(F's arguments, threads) -> bytes
// beside each public function: the upper bound on what F's buffers hold at
// once. The layer function itself is left as it was.

// CHECK-LABEL: func.func @plain(
// CHECK:         memref.alloc
// CHECK-LABEL: func.func @plain_workspace
// CHECK-SAME:    (%[[X:.*]]: memref<?x8xf32>, %{{.*}}: index) -> index
// CHECK-DAG:     %[[C128:.*]] = arith.constant 128 : index
// CHECK-DAG:     %[[C32:.*]] = arith.constant 32 : index
// CHECK:         %[[N:.*]] = memref.dim %[[X]], %{{.*}}
// CHECK:         %[[Y:.*]] = arith.muli %[[N]], %[[C32]]
// CHECK:         %[[SUM:.*]] = arith.addi %[[Y]], %[[C128]]
// CHECK:         return %[[SUM]]
// Static and argument-sized buffers, an aligned one.
func.func @plain(%x: memref<?x8xf32>) -> memref<?x8xf32> {
  %c0 = arith.constant 0 : index
  %n = memref.dim %x, %c0 : memref<?x8xf32>
  %y = memref.alloc(%n) : memref<?x8xf32>
  %t = memref.alloc() {alignment = 64 : i64} : memref<4xcomplex<f64>>
  memref.dealloc %t : memref<4xcomplex<f64>>
  return %y : memref<?x8xf32>
}

// -----

// CHECK-LABEL: func.func @parallel_workspace
// CHECK-SAME:    (%{{.*}}: memref<?x16xf64>, %[[THREADS:.*]]: index) -> index
// CHECK:         %[[B:.*]] = arith.muli %[[THREADS]], %c128
// CHECK:         return %[[B]]
// A per-iteration scratch buffer in a parallel loop: one per thread.
func.func @parallel(%x: memref<?x16xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?x16xf64>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %s = memref.alloc() : memref<16xf64>
    memref.dealloc %s : memref<16xf64>
    scf.reduce
  }
  return
}

// -----

// CHECK-LABEL: func.func @blocks_workspace
// CHECK:         %[[C48:.*]] = arith.constant 48 : index
// CHECK-NEXT:    return %[[C48]]
// Blocks of min(4, n - t) rows carried by a loop: two live at once, each
// at most 4 rows.
func.func @blocks(%x: memref<?xf32>) -> memref<?xf32> {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  %init = memref.alloc(%c4) : memref<?xf32>
  %r = scf.for %t = %c0 to %n step %c4 iter_args(%carry = %init) -> (memref<?xf32>) {
    %size = affine.min affine_map<(d0)[s0] -> (4, s0 - d0)>(%t)[%n]
    %blk = memref.alloc(%size) : memref<?xf32>
    scf.yield %blk : memref<?xf32>
  }
  return %r : memref<?xf32>
}

// -----

// CHECK-LABEL: func.func @copy_of_loop_result_workspace
// CHECK-SAME:    (%[[X:[^:]*]]: memref<?xf32>, %[[Y:[^:]*]]: memref<?xf32>,
// CHECK-DAG:     %[[M:.*]] = memref.dim %[[Y]]
// CHECK-DAG:     %[[N:.*]] = memref.dim %[[X]]
// CHECK-DAG:     %[[INNER:.*]] = arith.muli %[[M]], %c8
// CHECK-DAG:     %[[MAX:.*]] = arith.maxui %[[M]], %[[N]]
// CHECK:         %[[MAX2:.*]] = arith.maxui %[[N]], %[[MAX]]
// CHECK:         %[[COPY:.*]] = arith.muli %[[MAX2]], %c4
// CHECK:         %[[SUM:.*]] = arith.addi %[[INNER]], %[[COPY]]
// CHECK:         return %[[SUM]]
// A copy of a loop's result: as large as anything the loop may yield.
func.func @copy_of_loop_result(%x: memref<?xf32>, %y: memref<?xf32>, %c: i1) -> memref<?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %n = memref.dim %x, %c0 : memref<?xf32>
  %m = memref.dim %y, %c0 : memref<?xf32>
  %r = scf.for %t = %c0 to %c3 step %c1 iter_args(%carry = %x) -> (memref<?xf32>) {
    %next = scf.if %c -> (memref<?xf32>) {
      %a = memref.alloc(%m) : memref<?xf32>
      scf.yield %a : memref<?xf32>
    } else {
      scf.yield %carry : memref<?xf32>
    }
    scf.yield %next : memref<?xf32>
  }
  %d = memref.dim %r, %c0 : memref<?xf32>
  %copy = memref.alloc(%d) : memref<?xf32>
  return %copy : memref<?xf32>
}

// -----

// CHECK-LABEL: func.func @band_workspace
// CHECK-SAME:    (%[[K:.*]]: memref<?xf32>, %[[C:.*]]: memref<3xf32>, %{{.*}}: index) -> index
// CHECK:         %[[N:.*]] = memref.dim %[[K]], %{{.*}}
// CHECK:         %[[ROWS:.*]] = arith.addi %[[N]], %c3
// CHECK:         %[[BYTES:.*]] = arith.muli %[[ROWS]], %c4
// CHECK:         return %[[BYTES]]
// A tile's band of keys, as the attention backward cuts it: the rows it
// takes of a 3-row cache and of the n keys, each hi - lo with hi and lo
// clamped to the segment, then laid end to end. The value bounds alone
// find no bound for the clamped difference; the bound of a sum is the sum
// of its terms' bounds and that of an affine.min any result's: 3 + n rows.
func.func @band(%k: memref<?xf32>, %cache: memref<3xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %n = memref.dim %k, %c0 : memref<?xf32>
  %tiles = affine.apply affine_map<()[s0] -> (s0 ceildiv 64)>()[%n]
  scf.for %i = %c0 to %tiles step %c1 {
    %first = affine.max affine_map<(d0) -> (d0 * 64 - 5, 0)>(%i)
    %end = affine.min affine_map<(d0)[s0] -> (d0 * 64 + 67, s0 + 3)>(%i)[%n]
    %clo = affine.min affine_map<()[s0] -> (s0, 3)>()[%first]
    %chi = affine.min affine_map<()[s0] -> (s0, 3)>()[%end]
    %csz = affine.min affine_map<()[s0, s1] -> (s0 - s1, 3)>()[%chi, %clo]
    %klo0 = affine.max affine_map<()[s0] -> (s0 - 3, 0)>()[%first]
    %klo = affine.min affine_map<()[s0, s1] -> (s0, s1)>()[%klo0, %n]
    %khi0 = affine.max affine_map<()[s0] -> (s0 - 3, 0)>()[%end]
    %khi = affine.min affine_map<()[s0, s1] -> (s0, s1)>()[%khi0, %n]
    %ksz = affine.min affine_map<()[s0, s1, s2] -> (s2, s0 - s1)>()[%khi, %klo, %n]
    %rows = arith.addi %csz, %ksz : index
    %band = memref.alloc(%rows) : memref<?xf32>
    memref.dealloc %band : memref<?xf32>
  }
  return
}
