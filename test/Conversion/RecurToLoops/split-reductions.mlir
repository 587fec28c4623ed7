// RUN: recur-opt %s --pass-pipeline='builtin.module(func.func(recur-split-reductions{threads=64 min-terms=8}),canonicalize)' --split-input-file | FileCheck %s
// RUN: recur-opt %s --pass-pipeline='builtin.module(func.func(recur-split-reductions{threads=64 min-terms=8}))' --split-input-file | FileCheck %s --check-prefix=RAW
// RUN: not recur-opt %s --pass-pipeline='builtin.module(func.func(recur-split-reductions{min-terms=0}))' --split-input-file 2>&1 | FileCheck %s --check-prefix=TERMS

// TERMS: error: recur-split-reductions: min-terms must be 1 to 4294967296, not 0

// A bias's gradient over batch and time, 16 output elements: with threads=64
// at most ceil(64 / 16) = 4 parts, each at least 8 terms where B x T
// allows (the last what remains). The first loop runs over (part,
// element), each part a contiguous run of the B x T iterations (t fastest,
// carrying into b), from -0.0 into its own row of the partials; the second
// adds the rows to the output, in order.

// CHECK-LABEL: func.func @bias_grad
// CHECK-SAME:    (%[[X:.*]]: memref<?x?x16xf32>, %[[DY:.*]]: memref<?x?x16xf32>, %[[OUT:.*]]: memref<16xf32>)
// CHECK-DAG:     %[[ZERO:.*]] = arith.constant -0.000000e+00 : f32
// CHECK-DAG:     %[[C4:.*]] = arith.constant 4 : index
// CHECK-DAG:     %[[C8:.*]] = arith.constant 8 : index
// CHECK-DAG:     %[[C16:.*]] = arith.constant 16 : index
// CHECK-DAG:     %[[B:.*]] = memref.dim %[[X]], %c0
// CHECK-DAG:     %[[T:.*]] = memref.dim %[[X]], %c1
// CHECK:         %[[R:.*]] = arith.muli %[[B]], %[[T]] : index
// CHECK:         %[[BYTERMS:.*]] = arith.divui %[[R]], %[[C8]]
// CHECK:         %[[WANTED:.*]] = arith.minui %[[BYTERMS]], %[[C4]]
// CHECK:         %[[W1:.*]] = arith.maxui %[[WANTED]], %c1
// CHECK:         %[[C:.*]] = arith.ceildivui %[[R]], %[[W1]]
// CHECK:         %[[CHUNK:.*]] = arith.maxui %[[C]], %c1
// CHECK:         %[[PARTS:.*]] = arith.ceildivui %[[R]], %[[CHUNK]]
// CHECK:         %[[PARTIAL:.*]] = memref.alloc(%[[PARTS]]) : memref<?x16xf32>
// CHECK:         scf.parallel (%[[S:.*]], %[[D:.*]]) = (%c0, %c0) to (%[[PARTS]], %[[C16]])
// CHECK:           %[[START:.*]] = arith.muli %[[S]], %[[CHUNK]]
// CHECK:           %[[NEXT:.*]] = arith.addi %[[START]], %[[CHUNK]]
// CHECK:           %[[END:.*]] = arith.minui %[[NEXT]], %[[R]]
// CHECK:           %[[T0:.*]] = arith.remui %[[START]], %[[T]]
// CHECK:           %[[B0:.*]] = arith.divui %[[START]], %[[T]]
// CHECK:           %[[SUM:.*]]:3 = scf.for %{{.*}} = %[[START]] to %[[END]] step %c1 iter_args(%[[ACC:.*]] = %[[ZERO]], %[[BI:.*]] = %[[B0]], %[[TI:.*]] = %[[T0]]) -> (f32, index, index)
// CHECK-NEXT:        %[[XV:.*]] = memref.load %[[X]][%[[BI]], %[[TI]], %[[D]]]
// CHECK-NEXT:        %[[GV:.*]] = memref.load %[[DY]][%[[BI]], %[[TI]], %[[D]]]
// CHECK-NEXT:        %[[M:.*]] = arith.mulf %[[XV]], %[[GV]] : f32
// CHECK-NEXT:        %[[ADD:.*]] = arith.addf %[[ACC]], %[[M]] fastmath<reassoc> : f32
// CHECK-NEXT:        %[[TN:.*]] = arith.addi %[[TI]], %c1
// CHECK-NEXT:        %[[WRAP:.*]] = arith.cmpi eq, %[[TN]], %[[T]]
// CHECK-NEXT:        %[[TW:.*]] = arith.select %[[WRAP]], %c0, %[[TN]]
// CHECK-NEXT:        %[[BN:.*]] = arith.addi %[[BI]], %c1
// CHECK-NEXT:        %[[BW:.*]] = arith.select %[[WRAP]], %[[BN]], %[[BI]]
// CHECK-NEXT:        scf.yield %[[ADD]], %[[BW]], %[[TW]]
// CHECK:           memref.store %[[SUM]]#0, %[[PARTIAL]][%[[S]], %[[D]]]
// CHECK:         scf.parallel (%[[E:.*]]) = (%c0) to (%[[C16]])
// CHECK:           %[[INIT:.*]] = memref.load %[[OUT]][%[[E]]]
// CHECK:           %[[TOTAL:.*]] = scf.for %[[P:.*]] = %c0 to %[[PARTS]] step %c1 iter_args(%[[A:.*]] = %[[INIT]]) -> (f32)
// CHECK-NEXT:        %[[PV:.*]] = memref.load %[[PARTIAL]][%[[P]], %[[E]]]
// CHECK-NEXT:        %[[AS:.*]] = arith.addf %[[A]], %[[PV]] fastmath<reassoc> : f32
// CHECK-NEXT:        scf.yield %[[AS]]
// CHECK:           memref.store %[[TOTAL]], %[[OUT]][%[[E]]]
// CHECK-NOT:     linalg.generic
#x = affine_map<(d0, d1, d2) -> (d1, d2, d0)>
#y = affine_map<(d0, d1, d2) -> (d0)>
func.func @bias_grad(%x: memref<?x?x16xf32>, %dy: memref<?x?x16xf32>,
                     %out: memref<16xf32>) {
  linalg.generic {indexing_maps = [#x, #x, #y],
                  iterator_types = ["parallel", "reduction", "reduction"]}
      ins(%x, %dy : memref<?x?x16xf32>, memref<?x?x16xf32>)
      outs(%out : memref<16xf32>) {
  ^bb0(%a: f32, %g: f32, %o: f32):
    %m = arith.mulf %a, %g : f32
    %s = arith.addf %o, %m fastmath<reassoc> : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Complex sums over the middle loop, the parallel loops around it: the
// partials keep the parallel loops in loop order after the part, the
// running sums start from a complex zero, and the one reduction loop's
// index is the part's loop's.

// CHECK-LABEL: func.func @complex_middle
// CHECK-DAG:     %[[CZERO:.*]] = complex.constant [-0.000000e+00 : f32, -0.000000e+00 : f32] : complex<f32>
// CHECK:         %[[PARTIAL:.*]] = memref.alloc(%{{.*}}) : memref<?x3x4xcomplex<f32>>
// CHECK:         scf.parallel (%[[S:.*]], %[[I:.*]], %[[K:.*]]) =
// CHECK:           scf.for %[[J:[a-z0-9_]+]] = %{{.*}} to %{{.*}} step %c1 iter_args(%[[ACC:.*]] = %[[CZERO]]) -> (complex<f32>)
// CHECK:             memref.load %{{.*}}[%[[I]], %[[J]], %[[K]]] : memref<3x?x4xcomplex<f32>>
// CHECK:             complex.add
// CHECK:           memref.store %{{.*}}, %[[PARTIAL]][%[[S]], %[[I]], %[[K]]]
// CHECK:         scf.parallel (%[[I2:.*]], %[[K2:.*]]) =
// CHECK:           memref.load %{{.*}}[%[[I2]], %[[K2]]] : memref<3x4xcomplex<f32>>
// CHECK:           scf.for
// CHECK:             complex.add
#xc = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#yc = affine_map<(d0, d1, d2) -> (d0, d2)>
func.func @complex_middle(%x: memref<3x?x4xcomplex<f32>>,
                          %out: memref<3x4xcomplex<f32>>) {
  linalg.generic {indexing_maps = [#xc, #yc],
                  iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%x : memref<3x?x4xcomplex<f32>>)
      outs(%out : memref<3x4xcomplex<f32>>) {
  ^bb0(%a: complex<f32>, %o: complex<f32>):
    %s = complex.add %a, %o : complex<f32>
    linalg.yield %s : complex<f32>
  }
  return
}

// -----

// A sum onto one element: up to ceil(64 / 1) = 64 parts, more than
// 4 x min-terms, so the parts are summed by a reduction split in turn (at
// most 64 / 8 = 8 parts of the parts), and those by the host's thread into
// the rank-0 output.

// CHECK-LABEL: func.func @total
// CHECK-SAME:    (%[[X:.*]]: memref<?x?xf32>, %[[OUT:.*]]: memref<f32>)
// CHECK:         %[[P1:.*]] = memref.alloc(%[[N1:.*]]) : memref<?xf32>
// CHECK:         scf.parallel (%[[S1:.*]]) = (%c0) to (%[[N1]])
// CHECK:           memref.load %[[X]]
// CHECK:           memref.store %{{.*}}, %[[P1]][%[[S1]]]
// CHECK:         %[[P2:.*]] = memref.alloc(%[[N2:.*]]) : memref<?xf32>
// CHECK:         scf.parallel (%[[S2:.*]]) = (%c0) to (%[[N2]])
// CHECK:           scf.for %[[J:[a-z0-9_]+]] =
// CHECK-NEXT:        memref.load %[[P1]][%[[J]]]
// CHECK:           memref.store %{{.*}}, %[[P2]][%[[S2]]]
// CHECK:         %[[INIT:.*]] = memref.load %[[OUT]][] : memref<f32>
// CHECK:         %[[SUM:.*]] = scf.for %[[K:[a-z0-9_]+]] = %c0 to %[[N2]] step %c1 iter_args(%[[A:.*]] = %[[INIT]])
// CHECK-NEXT:      %[[V:.*]] = memref.load %[[P2]][%[[K]]]
// CHECK-NEXT:      arith.addf %[[A]], %[[V]]
// CHECK:         memref.store %[[SUM]], %[[OUT]][] : memref<f32>
// CHECK-NOT:     linalg.generic
// CHECK:         return
func.func @total(%x: memref<?x?xf32>, %out: memref<f32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                   affine_map<(d0, d1) -> ()>],
                  iterator_types = ["reduction", "reduction"]}
      ins(%x : memref<?x?xf32>) outs(%out : memref<f32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %o, %a : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Left whole: 40 output elements, more than threads / 2; a dynamic
// parallel loop; a max reduction; an input that is the output, and one
// that is a view of it; a reduction inside a tagged loop and one inside a
// loop carrying a float (both on the device: the partials would be
// allocated there); an output the body reads twice; and a body that writes
// memory.

// CHECK-LABEL: func.func @left_whole
// CHECK-NOT:     memref.alloc
// CHECK-COUNT-9: linalg.generic
// CHECK-NOT:     memref.alloc
#x2 = affine_map<(d0, d1) -> (d1, d0)>
#y2 = affine_map<(d0, d1) -> (d0)>
func.func @left_whole(%wide: memref<?x40xf32>, %out40: memref<40xf32>,
                      %dyn: memref<?x?xf32>, %outdyn: memref<?xf32>,
                      %x: memref<?x8xf32>, %out: memref<8xf32>,
                      %sq: memref<8x8xf32>, %n: index) {
  linalg.generic {indexing_maps = [#x2, #y2],
                  iterator_types = ["parallel", "reduction"]}
      ins(%wide : memref<?x40xf32>) outs(%out40 : memref<40xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %o, %a : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#x2, #y2],
                  iterator_types = ["parallel", "reduction"]}
      ins(%dyn : memref<?x?xf32>) outs(%outdyn : memref<?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %o, %a : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [#x2, #y2],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<?x8xf32>) outs(%out : memref<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.maximumf %o, %a : f32
    linalg.yield %s : f32
  }
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1)>, #y2],
                  iterator_types = ["parallel", "reduction"]}
      ins(%out : memref<8xf32>) outs(%out : memref<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %o, %a : f32
    linalg.yield %s : f32
  }
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.for %i = %c0 to %n step %c1 {
    linalg.generic {indexing_maps = [#x2, #y2],
                    iterator_types = ["parallel", "reduction"]}
        ins(%x : memref<?x8xf32>) outs(%out : memref<8xf32>) {
    ^bb0(%a: f32, %o: f32):
      %s = arith.addf %o, %a : f32
      linalg.yield %s : f32
    }
  } {recur.parallel}
  linalg.generic {indexing_maps = [#x2, #y2],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<?x8xf32>) outs(%out : memref<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %t = arith.mulf %o, %a : f32
    %s = arith.addf %o, %t : f32
    linalg.yield %s : f32
  }
  %view = memref.subview %sq[0, 0] [8, 8] [1, 1]
      : memref<8x8xf32> to memref<8x8xf32, strided<[8, 1]>>
  %row = memref.subview %sq[0, 0] [1, 8] [1, 1]
      : memref<8x8xf32> to memref<8xf32, strided<[1]>>
  linalg.generic {indexing_maps = [#x2, #y2],
                  iterator_types = ["parallel", "reduction"]}
      ins(%view : memref<8x8xf32, strided<[8, 1]>>)
      outs(%row : memref<8xf32, strided<[1]>>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %o, %a : f32
    linalg.yield %s : f32
  }
  %zero = arith.constant 0.0 : f32
  %carried = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %zero) -> (f32) {
    linalg.generic {indexing_maps = [#x2, #y2],
                    iterator_types = ["parallel", "reduction"]}
        ins(%x : memref<?x8xf32>) outs(%out : memref<8xf32>) {
    ^bb0(%a: f32, %o: f32):
      %s = arith.addf %o, %a : f32
      linalg.yield %s : f32
    }
    %next = arith.addf %acc, %zero : f32
    scf.yield %next : f32
  }
  linalg.generic {indexing_maps = [#x2, #y2],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<?x8xf32>) outs(%out : memref<8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index 0 : index
    memref.store %a, %outdyn[%i] : memref<?xf32>
    %s = arith.addf %o, %a : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Left whole: a parallel loop of size 0 (canonicalize would erase the op:
// checked without it).

// RAW-LABEL: func.func @empty
// RAW-NOT:     memref.alloc
// RAW:         linalg.generic
// RAW-NOT:     scf.parallel
// RAW:         return
func.func @empty(%x: memref<?x0xf32>, %out: memref<0xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>,
                                   affine_map<(d0, d1) -> (d0)>],
                  iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<?x0xf32>) outs(%out : memref<0xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %o, %a : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Left whole: a reduction inside an scf.parallel.

// CHECK-LABEL: func.func @in_parallel
// CHECK:         scf.parallel
// CHECK:           linalg.generic
// CHECK-NOT:     memref.alloc
func.func @in_parallel(%x: memref<?x8xf32>, %out: memref<4x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    %row = memref.subview %out[%i, 0] [1, 8] [1, 1]
        : memref<4x8xf32> to memref<8xf32, strided<[1], offset: ?>>
    linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>,
                                     affine_map<(d0, d1) -> (d0)>],
                    iterator_types = ["parallel", "reduction"]}
        ins(%x : memref<?x8xf32>)
        outs(%row : memref<8xf32, strided<[1], offset: ?>>) {
    ^bb0(%a: f32, %o: f32):
      %s = arith.addf %o, %a : f32
      linalg.yield %s : f32
    }
    scf.reduce
  }
  return
}
