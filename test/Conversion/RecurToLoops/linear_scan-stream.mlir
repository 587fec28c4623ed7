// RUN: recur-opt %s --convert-recur-to-loops="scan-group=0 stream-store-bytes=1024" --canonicalize | FileCheck %s
// RUN: recur-opt %s --convert-recur-to-loops="scan-group=0" --canonicalize | FileCheck %s --check-prefix=NONE

// With stream-store-bytes, a scan across channels whose output holds at
// least that many bytes (2 x T x 300 f32 here: T >= 1 step is 2400 bytes,
// compared as 256 elements of 4 bytes) takes the streaming form: each row
// of a thread's group in vectors of 8 f32, then the channels left one at a
// time, in a time loop tagged recur.stream_stores (for recur-stream-stores);
// a smaller output keeps the scalar rows. Without the option nothing
// changes. A complex scan with a transition per channel streams as vectors
// of its parts (recur.view_as_real), its channels past the last whole
// vector in one masked vector; with a transition broadcast over the
// channels it keeps the scalar rows.

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

// Four channels (eight parts) a vector: a * h as re(a) h + (-1, 1, ...)
// im(a) swap(h), then + x; the last 300 mod 4 channels' parts masked.
// CHECK-LABEL: func.func @complex
// CHECK-DAG: %[[SIGNS:.+]] = arith.constant dense<[-1.000000e+00, 1.000000e+00, -1.000000e+00, 1.000000e+00, -1.000000e+00, 1.000000e+00, -1.000000e+00, 1.000000e+00]> : vector<8xf32>
// CHECK-DAG: %[[C4:.+]] = arith.constant 4 : index
// CHECK: scf.if
// CHECK: %[[AP:.+]] = recur.view_as_real %arg0 : tensor<2x?x300xcomplex<f32>> to tensor<2x?x600xf32>
// CHECK: %[[XP:.+]] = recur.view_as_real %arg1 : tensor<2x?x300xcomplex<f32>> to tensor<2x?x600xf32>
// CHECK: %[[HP:.+]] = recur.view_as_real %{{.+}} : tensor<2x?x300xcomplex<f32>> to tensor<2x?x600xf32>
// CHECK: %[[CP:.+]] = recur.view_as_real %{{.+}} : tensor<4096xcomplex<f32>> to tensor<8192xf32>
// CHECK: %[[TIME:.+]]:2 = scf.for %{{.+}} iter_args(%{{.+}} = %[[HP]], %{{.+}} = %[[CP]])
// CHECK: %[[REM:.+]] = arith.remui %[[N:.+]], %[[C4]]
// CHECK: %[[END:.+]] = arith.subi %[[N]], %[[REM]]
// CHECK: scf.for %{{.+}} = %c0 to %[[END]] step %[[C4]]
// CHECK: %[[CARRY:.+]] = vector.transfer_read %{{.+}} {in_bounds = [true]} : tensor<8192xf32>, vector<8xf32>
// CHECK: %[[X:.+]] = vector.transfer_read %[[XP]]{{.+}} : tensor<2x?x600xf32>, vector<8xf32>
// CHECK: %[[A:.+]] = vector.transfer_read %[[AP]]{{.+}} : tensor<2x?x600xf32>, vector<8xf32>
// CHECK: %[[RE:.+]] = vector.shuffle %[[A]], %[[A]] [0, 0, 2, 2, 4, 4, 6, 6]
// CHECK: %[[IM:.+]] = vector.shuffle %[[A]], %[[A]] [1, 1, 3, 3, 5, 5, 7, 7]
// CHECK: %[[SWAP:.+]] = vector.shuffle %[[CARRY]], %[[CARRY]] [1, 0, 3, 2, 5, 4, 7, 6]
// CHECK: %[[T:.+]] = arith.mulf %[[IM]], %[[SWAP]] : vector<8xf32>
// CHECK: %[[CROSS:.+]] = arith.mulf %[[T]], %[[SIGNS]] : vector<8xf32>
// CHECK: %[[U:.+]] = arith.mulf %[[RE]], %[[CARRY]] : vector<8xf32>
// CHECK: %[[P:.+]] = arith.addf %[[U]], %[[CROSS]] : vector<8xf32>
// CHECK: %[[H:.+]] = arith.addf %[[P]], %[[X]] : vector<8xf32>
// CHECK: vector.transfer_write %[[H]], %{{.+}} {in_bounds = [true]} : vector<8xf32>, tensor<2x?x600xf32>
// CHECK: vector.transfer_write %[[H]], %{{.+}} {in_bounds = [true]} : vector<8xf32>, tensor<8192xf32>
// CHECK: %[[MORE:.+]] = arith.cmpi ult, %[[END]], %[[N]]
// CHECK: scf.if %[[MORE]]
// CHECK: %[[LEFT:.+]] = arith.subi %[[N]], %[[END]]
// CHECK: %[[PARTS:.+]] = arith.muli %[[LEFT]], %c2
// CHECK: %[[MASK:.+]] = vector.create_mask %[[PARTS]] : vector<8xi1>
// CHECK: vector.transfer_read {{.+}}, %[[MASK]] : tensor<8192xf32>, vector<8xf32>
// CHECK: vector.transfer_write {{.+}}, %[[MASK]] : vector<8xf32>, tensor<2x?x600xf32>
// CHECK: } {recur.stream_stores}
// CHECK: recur.view_as_complex %[[TIME]]#0 : tensor<2x?x600xf32> to tensor<2x?x300xcomplex<f32>>
// CHECK: recur.view_as_complex %[[TIME]]#1 : tensor<8192xf32> to tensor<4096xcomplex<f32>>
// CHECK: } else {
// CHECK-NOT: vector.
// CHECK-NOT: recur.stream_stores
// CHECK: complex.mul
// CHECK: return

// A real transition per channel (promoted to complex): read as four reals,
// each repeated over its channel's two lanes; no cross terms.
func.func @complex_real_a(%a: tensor<2x?x300xf32>,
                          %x: tensor<2x?x300xcomplex<f32>>)
    -> (tensor<2x?x300xcomplex<f32>>, tensor<2x300xcomplex<f32>>) {
  %h, %last = recur.linear_scan %a, %x along 1
      : tensor<2x?x300xf32>, tensor<2x?x300xcomplex<f32>>
  return %h, %last : tensor<2x?x300xcomplex<f32>>, tensor<2x300xcomplex<f32>>
}

// CHECK-LABEL: func.func @complex_real_a
// CHECK-NOT: recur.view_as_real %arg0
// CHECK: scf.for
// CHECK: %[[A:.+]] = vector.transfer_read %arg0{{.+}} : tensor<2x?x300xf32>, vector<4xf32>
// CHECK: %[[A2:.+]] = vector.shuffle %[[A]], %[[A]] [0, 0, 1, 1, 2, 2, 3, 3] : vector<4xf32>, vector<4xf32>
// CHECK-NEXT: %[[U:.+]] = arith.mulf %[[A2]], %{{.+}} : vector<8xf32>
// CHECK-NEXT: arith.addf %[[U]], %{{.+}} : vector<8xf32>
// CHECK: vector.create_mask %{{.+}} : vector<4xi1>
// CHECK: } {recur.stream_stores}
// CHECK: return

// One transition per step, broadcast over the channels: the scalar rows.
func.func @complex_step_a(%a: tensor<2x?xcomplex<f32>>,
                          %x: tensor<2x?x300xcomplex<f32>>)
    -> (tensor<2x?x300xcomplex<f32>>, tensor<2x300xcomplex<f32>>) {
  %h, %last = recur.linear_scan %a, %x along 1
      : tensor<2x?xcomplex<f32>>, tensor<2x?x300xcomplex<f32>>
  return %h, %last : tensor<2x?x300xcomplex<f32>>, tensor<2x300xcomplex<f32>>
}

// CHECK-LABEL: func.func @complex_step_a
// CHECK-NOT: vector.
// CHECK-NOT: recur.stream_stores
// CHECK: return
