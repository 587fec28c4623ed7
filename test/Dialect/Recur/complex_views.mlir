// RUN: recur-opt %s | recur-opt | FileCheck %s
// RUN: recur-opt %s --mlir-print-op-generic | recur-opt | FileCheck %s
// RUN: recur-opt %s --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" | FileCheck %s --check-prefix=BUF
// RUN: recur-opt %s --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=fully-dynamic-layout-map" | FileCheck %s --check-prefix=DYN
// RUN: recur-opt %s --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" --finalize-memref-to-llvm --convert-to-llvm --reconcile-unrealized-casts | FileCheck %s --check-prefix=LLVM

// recur.view_as_real and recur.view_as_complex: round trip on tensors and
// buffers (identity and strided layouts: the offset and every stride but
// the last doubled or halved), bufferization (a view of the same buffer:
// no copy, no allocation) and the lowering of a buffer's view to a memref
// descriptor over the same pointers. A buffer whose last stride is not
// known to be 1 (a fully dynamic layout) is copied into a contiguous one,
// which is viewed; the copy is not the source, so writes through its view
// leave the source as it was (the function returns the copy's view).

// CHECK-LABEL: func.func @tensors(
// CHECK: recur.view_as_real %{{.+}} : tensor<4x?x3xcomplex<f32>> to tensor<4x?x6xf32>
// CHECK: recur.view_as_complex %{{.+}} : tensor<4x?x6xf32> to tensor<4x?x3xcomplex<f32>>
// CHECK: recur.view_as_real %{{.+}} : tensor<?xcomplex<f64>> to tensor<?xf64>
func.func @tensors(%x: tensor<4x?x3xcomplex<f32>>, %y: tensor<?xcomplex<f64>>)
    -> (tensor<4x?x3xcomplex<f32>>, tensor<?xf64>) {
  %r = recur.view_as_real %x : tensor<4x?x3xcomplex<f32>> to tensor<4x?x6xf32>
  %c = recur.view_as_complex %r : tensor<4x?x6xf32> to tensor<4x?x3xcomplex<f32>>
  %s = recur.view_as_real %y : tensor<?xcomplex<f64>> to tensor<?xf64>
  return %c, %s : tensor<4x?x3xcomplex<f32>>, tensor<?xf64>
}

// BUF-LABEL: func.func @tensors(
// BUF-SAME: %[[X:.+]]: memref<4x?x3xcomplex<f32>>, %[[Y:.+]]: memref<?xcomplex<f64>>)
// BUF-NOT: memref.alloc
// BUF-NOT: memref.copy
// BUF: %[[R:.+]] = recur.view_as_real %[[X]] : memref<4x?x3xcomplex<f32>> to memref<4x?x6xf32>
// BUF: %[[C:.+]] = recur.view_as_complex %[[R]] : memref<4x?x6xf32> to memref<4x?x3xcomplex<f32>>
// BUF: %[[S:.+]] = recur.view_as_real %[[Y]] : memref<?xcomplex<f64>> to memref<?xf64>
// BUF: return %[[C]], %[[S]]

// Writes through the view land in the viewed buffer: the scan's output
// written as parts in place.
// BUF-LABEL: func.func @write_parts(
// BUF-SAME: %[[H:.+]]: memref<8xcomplex<f32>>
// BUF-NOT: memref.alloc
// BUF: %[[P:.+]] = recur.view_as_real %[[H]] : memref<8xcomplex<f32>> to memref<16xf32>
// BUF: vector.transfer_write %{{.+}}, %[[P]][%{{.+}}] {{.+}} : vector<8xf32>, memref<16xf32>
// BUF: %[[B:.+]] = recur.view_as_complex %[[P]]
// BUF: return %[[B]]
func.func @write_parts(%h: tensor<8xcomplex<f32>>, %v: vector<8xf32>) -> tensor<8xcomplex<f32>> {
  %c8 = arith.constant 8 : index
  %p = recur.view_as_real %h : tensor<8xcomplex<f32>> to tensor<16xf32>
  %w = vector.transfer_write %v, %p[%c8] {in_bounds = [true]} : vector<8xf32>, tensor<16xf32>
  %b = recur.view_as_complex %w : tensor<16xf32> to tensor<8xcomplex<f32>>
  return %b : tensor<8xcomplex<f32>>
}

// DYN-LABEL: func.func @write_parts(
// DYN-SAME: %[[H:.+]]: memref<8xcomplex<f32>, strided<[?], offset: ?>>
// DYN: %[[COPY:.+]] = memref.alloc() {{.+}} : memref<8xcomplex<f32>>
// DYN: memref.copy %[[H]], %[[COPY]]
// DYN: %[[P:.+]] = recur.view_as_real %[[COPY]] : memref<8xcomplex<f32>> to memref<16xf32>
// DYN: vector.transfer_write %{{.+}}, %[[P]]
// DYN: %[[B:.+]] = recur.view_as_complex %[[P]] : memref<16xf32> to memref<8xcomplex<f32>>
// DYN: %[[CAST:.+]] = memref.cast %[[B]]
// DYN: return %[[CAST]]

// CHECK-LABEL: func.func @buffers(
// CHECK: recur.view_as_real %{{.+}} : memref<2x5xcomplex<f32>, strided<[10, 1], offset: 3>> to memref<2x10xf32, strided<[20, 1], offset: 6>>
// CHECK: recur.view_as_real %{{.+}} : memref<?x5xcomplex<f32>, strided<[?, 1], offset: ?>> to memref<?x10xf32, strided<[?, 1], offset: ?>>
// CHECK: recur.view_as_complex %{{.+}} : memref<2x10xf32, strided<[20, 1], offset: 6>> to memref<2x5xcomplex<f32>, strided<[10, 1], offset: 3>>
func.func @buffers(%a: memref<2x5xcomplex<f32>, strided<[10, 1], offset: 3>>,
                   %b: memref<?x5xcomplex<f32>, strided<[?, 1], offset: ?>>) {
  %r = recur.view_as_real %a : memref<2x5xcomplex<f32>, strided<[10, 1], offset: 3>> to memref<2x10xf32, strided<[20, 1], offset: 6>>
  %s = recur.view_as_real %b : memref<?x5xcomplex<f32>, strided<[?, 1], offset: ?>> to memref<?x10xf32, strided<[?, 1], offset: ?>>
  %c = recur.view_as_complex %r : memref<2x10xf32, strided<[20, 1], offset: 6>> to memref<2x5xcomplex<f32>, strided<[10, 1], offset: 3>>
  return
}

// The descriptor of a view of a buffer: the same pointers; the offset and
// the strides but the last shifted left by one (doubled), the last size
// too; back to complex, shifted right arithmetically (halved).
// LLVM-LABEL: llvm.func @lowered(
// LLVM: %[[PTR:.+]] = llvm.extractvalue %[[SRC:.+]][0] : !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
// LLVM: llvm.insertvalue %[[PTR]], %{{.+}}[0]
// LLVM: %[[ALIGNED:.+]] = llvm.extractvalue %[[SRC]][1]
// LLVM: llvm.insertvalue %[[ALIGNED]], %{{.+}}[1]
// LLVM: %[[OFF:.+]] = llvm.extractvalue %[[SRC]][2]
// LLVM: %[[OFF2:.+]] = llvm.shl %[[OFF]], %[[ONE:.+]] : i64
// LLVM: llvm.insertvalue %[[OFF2]], %{{.+}}[2]
// LLVM: %[[S0:.+]] = llvm.extractvalue %[[SRC]][3, 0]
// LLVM: %[[T0:.+]] = llvm.extractvalue %[[SRC]][4, 0]
// LLVM: llvm.insertvalue %[[S0]], %{{.+}}[3, 0]
// LLVM: %[[T0X2:.+]] = llvm.shl %[[T0]], %[[ONE]] : i64
// LLVM: llvm.insertvalue %[[T0X2]], %{{.+}}[4, 0]
// LLVM: %[[S1:.+]] = llvm.extractvalue %[[SRC]][3, 1]
// LLVM: %[[T1:.+]] = llvm.extractvalue %[[SRC]][4, 1]
// LLVM: %[[S1X2:.+]] = llvm.shl %[[S1]], %[[ONE]] : i64
// LLVM: llvm.insertvalue %[[S1X2]], %{{.+}}[3, 1]
// LLVM: llvm.insertvalue %[[T1]], %{{.+}}[4, 1]
// LLVM: llvm.ashr
// LLVM-NOT: recur.view
// LLVM: llvm.return
func.func @lowered(%x: memref<?x3xcomplex<f32>, strided<[?, 1], offset: ?>>) -> f32 {
  %c0 = arith.constant 0 : index
  %c5 = arith.constant 5 : index
  %r = recur.view_as_real %x : memref<?x3xcomplex<f32>, strided<[?, 1], offset: ?>> to memref<?x6xf32, strided<[?, 1], offset: ?>>
  %c = recur.view_as_complex %r : memref<?x6xf32, strided<[?, 1], offset: ?>> to memref<?x3xcomplex<f32>, strided<[?, 1], offset: ?>>
  %im = memref.load %r[%c0, %c5] : memref<?x6xf32, strided<[?, 1], offset: ?>>
  return %im : f32
}
