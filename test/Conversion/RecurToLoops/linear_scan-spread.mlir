// RUN: recur-opt %s --convert-recur-to-loops="scan-group=1 scan-spread=64 mark-parallel" --canonicalize | FileCheck %s
// RUN: recur-opt %s --convert-recur-to-loops="scan-group=1 mark-parallel" --canonicalize | FileCheck %s --check-prefix=OFF

// The spread form (scan-spread, the CUDA pipeline's): a scan one channel a
// thread with at most 64 / 8 = 8 channels and more than 256 steps when it
// runs goes in chunks of max(256, ceil(T c / 64)) steps. Level 0: each
// chunk from zero (a nest over channels and chunks), the chunks' carries a
// linear_scan of their own, lowered again in chunks when there are more
// than 256 of them (level 1: the same nests, its carries one channel at a
// time), then each chunk from its carry (the carry of chunk k is the state
// k - 1 of the carries' scan, the init for chunk 0). More channels or
// fewer steps: one channel a thread.

func.func @rows(%a: tensor<?x?xf32>, %x: tensor<?x?xf32>)
    -> (tensor<?x?xf32>, tensor<?xf32>) {
  %h, %last = recur.linear_scan %a, %x along 1
      : tensor<?x?xf32>, tensor<?x?xf32>
  return %h, %last : tensor<?x?xf32>, tensor<?xf32>
}

// CHECK-LABEL: func.func @rows
// CHECK-NOT: recur.linear_scan
// CHECK: %[[ZERO:.+]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[C:.+]] = tensor.dim %{{.+}}, %c0
// CHECK: %[[T:.+]] = tensor.dim %{{.+}}, %c1
// CHECK: %[[LONG:.+]] = arith.cmpi ugt, %[[T]], %c256 : index
// CHECK: %[[FEW:.+]] = arith.cmpi ule, %[[C]], %c8 : index
// CHECK: %[[BOTH:.+]] = arith.andi %[[LONG]], %[[FEW]] : i1
// CHECK: scf.if %[[BOTH]]
// Level 0: the chunk length and count.
// CHECK: %[[TC:.+]] = arith.ceildivui %{{.+}}, %c64 : index
// CHECK: %[[L:.+]] = arith.maxui %[[TC]], %c256 : index
// CHECK: %[[K:.+]] = arith.ceildivui %{{.+}}, %[[L]] : index
// CHECK: scf.for %{{.+}} = %c0 to %[[C]]
// CHECK: scf.for %{{.+}} = %c0 to %[[K]]
// CHECK: } {recur.parallel}
// CHECK: } {recur.parallel}
// Level 1: the carries' scan in chunks when there are more than 256 of
// them (the channels are level 0's), one channel a thread otherwise.
// CHECK: %[[KLONG:.+]] = arith.cmpi ugt, %{{.+}}, %c256 : index
// CHECK-NEXT: scf.if %[[KLONG]]
// CHECK: arith.ceildivui %{{.+}}, %c64 : index
// CHECK: arith.maxui %{{.+}}, %c256 : index
// CHECK: } else {
// Level 0's last nest: chunk k starts from the carries' state k - 1, or
// from zero (no init) for k = 0.
// CHECK: scf.for %{{.+}} = %c0 to %[[C]]
// CHECK: scf.for %[[KI:.+]] = %c0 to %[[K]]
// CHECK: %[[KM:.+]] = arith.maxui %[[KI]], %c1 : index
// CHECK: %[[PREV:.+]] = arith.subi %[[KM]], %c1 : index
// CHECK: %[[FIRST:.+]] = arith.cmpi eq, %[[KI]], %c0 : index
// CHECK: %[[E:.+]] = tensor.extract %{{.+}}[%{{.+}}, %[[PREV]]]
// CHECK: arith.select %[[FIRST]], %[[ZERO]], %[[E]] : f32
// CHECK: } else {
// CHECK: scf.for %{{.+}} = %c0 to %[[C]]
// CHECK: } {recur.parallel}

// OFF-LABEL: func.func @rows
// OFF-NOT: scf.if
// OFF-NOT: ceildivui
