// RUN: recur-opt %s --recur-stream-stores --split-input-file | FileCheck %s

// A time loop tagged recur.stream_stores: the transfers become plain vector
// loads and stores; the loads whose position moves with the step (the
// input row) prefetch the same position one step on (at most the last
// step), the carry row's does not; the store whose position moves with the
// step (the output) is non-temporal, aligned to 32 bytes where its address
// is, and the carry's is an ordinary store; a fence follows the loop, and
// the tag is gone.

func.func @stream(%a: memref<?x64xf32>, %out: memref<?x64xf32>,
                  %carry: memref<64xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %pad = ub.poison : f32
  scf.for %t = %c0 to %n step %c1 {
    scf.for %j = %c0 to %c64 step %c8 {
      %av = vector.transfer_read %a[%t, %j], %pad {in_bounds = [true]}
          : memref<?x64xf32>, vector<8xf32>
      %cv = vector.transfer_read %carry[%j], %pad {in_bounds = [true]}
          : memref<64xf32>, vector<8xf32>
      %h = arith.addf %av, %cv : vector<8xf32>
      vector.transfer_write %h, %out[%t, %j] {in_bounds = [true]}
          : vector<8xf32>, memref<?x64xf32>
      vector.transfer_write %h, %carry[%j] {in_bounds = [true]}
          : vector<8xf32>, memref<64xf32>
    }
  } {recur.stream_stores}
  return
}

// CHECK-LABEL: func.func @stream
// CHECK-SAME: (%[[A:.+]]: memref<?x64xf32>, %[[OUT:.+]]: memref<?x64xf32>, %[[CARRY:.+]]: memref<64xf32>, %[[N:.+]]: index)
// CHECK: scf.for %[[T:.+]] = %{{.+}} to %[[N]] step %[[ONE:[^ ]+]] {
// CHECK: %[[LAST:.+]] = arith.subi %[[N]], %[[ONE]]
// CHECK: %[[ON:.+]] = arith.addi %[[T]], %{{.+}}
// CHECK: %[[AHEAD:.+]] = arith.minsi %[[ON]], %[[LAST]]
// CHECK: scf.for %[[J:.+]] = {{.+}} {
// CHECK-NEXT: memref.prefetch %[[A]][%[[AHEAD]], %[[J]]], read, locality<3>, data
// CHECK-NEXT: %[[AV:.+]] = vector.load %[[A]][%[[T]], %[[J]]] : memref<?x64xf32>, vector<8xf32>
// CHECK-NEXT: %[[CV:.+]] = vector.load %[[CARRY]][%[[J]]] : memref<64xf32>, vector<8xf32>
// CHECK-NEXT: %[[H:.+]] = arith.addf %[[AV]], %[[CV]]
// CHECK: %[[BASE:.+]] = memref.extract_aligned_pointer_as_index %[[OUT]]
// CHECK: %[[REM:.+]] = arith.remui %{{.+}}, %c32
// CHECK: %[[ALIGNED:.+]] = arith.cmpi eq, %[[REM]], %c0
// CHECK: scf.if %[[ALIGNED]] {
// CHECK-NEXT: vector.store %[[H]], %[[OUT]][%[[T]], %[[J]]] {alignment = 32 : i64, nontemporal = true}
// CHECK-NEXT: } else {
// CHECK-NEXT: vector.store %[[H]], %[[OUT]][%[[T]], %[[J]]] {nontemporal = true}
// CHECK-NEXT: }
// CHECK-NEXT: vector.store %[[H]], %[[CARRY]][%[[J]]] : memref<64xf32>, vector<8xf32>
// CHECK: }
// CHECK-NEXT: }
// CHECK-NEXT: llvm.fence seq_cst
// CHECK-NOT: recur.stream_stores
// CHECK: return

// -----

// Untagged loops are left alone.

func.func @untagged(%a: memref<?x64xf32>, %out: memref<?x64xf32>,
                    %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %pad = ub.poison : f32
  scf.for %t = %c0 to %n step %c1 {
    %av = vector.transfer_read %a[%t, %c0], %pad {in_bounds = [true]}
        : memref<?x64xf32>, vector<8xf32>
    vector.transfer_write %av, %out[%t, %c0] {in_bounds = [true]}
        : vector<8xf32>, memref<?x64xf32>
  }
  return
}

// CHECK-LABEL: func.func @untagged
// CHECK-NOT: memref.prefetch
// CHECK: vector.transfer_read
// CHECK: vector.transfer_write
// CHECK-NOT: nontemporal
// CHECK-NOT: llvm.fence
// CHECK: return
