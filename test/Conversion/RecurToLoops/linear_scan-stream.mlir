// RUN: recur-opt %s --convert-recur-to-loops="scan-group=0 stream-store-bytes=1024" --canonicalize | FileCheck %s
// RUN: recur-opt %s --convert-recur-to-loops="scan-group=0" --canonicalize | FileCheck %s --check-prefix=NONE

// With stream-store-bytes, a scan across channels whose output holds at
// least that many bytes (2 x T x 300 f32 here: T >= 1 step is 2400 bytes,
// compared as 256 elements of 4 bytes) takes the streaming form: each row
// of a thread's group in vectors of 8 f32, then the channels left one at a
// time, in a time loop tagged recur.stream_stores (for recur-stream-stores);
// a smaller output keeps the scalar rows. Without the option nothing
// changes. A complex scan has no vector form and keeps the scalar rows.

func.func @across_channels(%a: tensor<2x?x300xf32>, %x: tensor<2x?x300xf32>)
    -> (tensor<2x?x300xf32>, tensor<2x300xf32>) {
  %h, %last = recur.linear_scan %a, %x along 1
      : tensor<2x?x300xf32>, tensor<2x?x300xf32>
  return %h, %last : tensor<2x?x300xf32>, tensor<2x300xf32>
}

// CHECK-LABEL: func.func @across_channels
// CHECK-DAG: %[[C8:.+]] = arith.constant 8 : index
// CHECK-DAG: %[[C256:.+]] = arith.constant 256 : index
// CHECK-DAG: %[[C600:.+]] = arith.constant 600 : index
// CHECK: %[[T:.+]] = tensor.dim %{{.+}}, %c1
// CHECK: %[[GROUP:.+]] = arith.minui %{{.+}}, %c4096
// CHECK: %[[N:.+]] = arith.minui %[[GROUP]], %{{.+}} : index
// CHECK: %[[ELEMS:.+]] = arith.muli %[[T]], %[[C600]]
// CHECK: %[[BIG:.+]] = arith.cmpi uge, %[[ELEMS]], %[[C256]]
// CHECK: scf.if %[[BIG]]
// CHECK: scf.for
// CHECK: %[[REM:.+]] = arith.remui %[[N]], %[[C8]]
// CHECK: %[[END:.+]] = arith.subi %[[N]], %[[REM]]
// CHECK: scf.for %[[J:.+]] = %c0 to %[[END]] step %[[C8]]
// CHECK: %[[AV:.+]] = vector.transfer_read %arg0{{.+}} {in_bounds = [true]} : tensor<2x?x300xf32>, vector<8xf32>
// CHECK: %[[CV:.+]] = vector.transfer_read %{{.+}}[%[[J]]]{{.+}} : tensor<4096xf32>, vector<8xf32>
// CHECK: %[[BV:.+]] = vector.transfer_read %arg1{{.+}} : tensor<2x?x300xf32>, vector<8xf32>
// CHECK: %[[M:.+]] = arith.mulf %[[AV]], %[[CV]] : vector<8xf32>
// CHECK: %[[H:.+]] = arith.addf %[[M]], %[[BV]] : vector<8xf32>
// CHECK: vector.transfer_write %[[H]], %{{.+}} : vector<8xf32>, tensor<2x?x300xf32>
// CHECK: vector.transfer_write %[[H]], %{{.+}}[%[[J]]] {{.+}} : vector<8xf32>, tensor<4096xf32>
// CHECK: scf.for %{{.+}} = %[[END]] to %[[N]] step %c1
// CHECK: tensor.insert
// CHECK: } {recur.stream_stores}
// CHECK: } else {
// CHECK-NOT: vector.
// CHECK-NOT: recur.stream_stores
// CHECK: return

// NONE-LABEL: func.func @across_channels
// NONE-NOT: vector.
// NONE-NOT: recur.stream_stores
// NONE: return

func.func @complex(%a: tensor<2x?x300xcomplex<f32>>,
                   %x: tensor<2x?x300xcomplex<f32>>)
    -> (tensor<2x?x300xcomplex<f32>>, tensor<2x300xcomplex<f32>>) {
  %h, %last = recur.linear_scan %a, %x along 1
      : tensor<2x?x300xcomplex<f32>>, tensor<2x?x300xcomplex<f32>>
  return %h, %last : tensor<2x?x300xcomplex<f32>>, tensor<2x300xcomplex<f32>>
}

// CHECK-LABEL: func.func @complex
// CHECK-NOT: vector.
// CHECK-NOT: recur.stream_stores
// CHECK: return
