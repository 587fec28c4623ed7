// RUN: recur-opt %s --convert-recur-to-loops="scan-group=0 stream-store-bytes=1024" --canonicalize | FileCheck %s
// RUN: recur-opt %s --convert-recur-to-loops="scan-group=128" --canonicalize | FileCheck %s --check-prefix=GROUPS

// Scans of few channels with the groups chosen by threads (the CPU
// pipeline's scan-group=0): each row (an index of the dimensions before
// the axis) is one flat stretch of T * C elements in vectors. For C below
// the lanes, each vector holds L / C steps whose maps are composed by
// shifting C, 2C, ... lanes (the lanes left filled with 0 for x, 1 for a)
// and applied to the carry: the last step's channels repeated over the
// lanes; the steps left over go one channel at a time. Other scan-group
// values (the GPU's, a fixed group) keep the general form.
//
// With fewer rows than threads (P, at most 64) and at least 4096 vector
// iterations per chunk, the rows go one after the other, each in P + 1
// chunks: a parallel loop where chunk 0 is swept through its slice of h
// and chunks 1 ... P - 1 run from zero for their end states and products
// (a 64 x 2G table), then a parallel loop where each chunk p + 1 starts
// from the carries composed over chunks 0 ... p and is swept through its
// slice. Otherwise, a parallel loop over the rows.

func.func @two_channels(%a: tensor<3x?x2xf32>, %x: tensor<3x?x2xf32>,
                        %h0: tensor<3x2xf32>)
    -> (tensor<3x?x2xf32>, tensor<3x2xf32>) {
  %h, %last = recur.linear_scan %a, %x init(%h0 : tensor<3x2xf32>) along 1
      : tensor<3x?x2xf32>, tensor<3x?x2xf32>
  return %h, %last : tensor<3x?x2xf32>, tensor<3x2xf32>
}

// CHECK-LABEL: func.func @two_channels(
// CHECK-SAME: %[[A:[^:]+]]: tensor<3x?x2xf32>, %[[X:[^:]+]]: tensor<3x?x2xf32>, %[[H0:[^:]+]]: tensor<3x2xf32>)
// CHECK-DAG: %[[ONES:.+]] = arith.constant dense<1.000000e+00> : vector<8xf32>
// CHECK-DAG: %[[ZEROS:.+]] = arith.constant dense<0.000000e+00> : vector<8xf32>
// CHECK-DAG: %[[C4:.+]] = arith.constant 4 : index
// CHECK-DAG: %[[T:.+]] = tensor.dim %[[X]], %c1
// CHECK-DAG: %[[AF:.+]] = tensor.collapse_shape %[[A]] {{\[}}[0], [1, 2]] : tensor<3x?x2xf32> into tensor<3x?xf32>
// CHECK-DAG: %[[XF:.+]] = tensor.collapse_shape %[[X]] {{\[}}[0], [1, 2]]
// CHECK-DAG: %[[WHOLE:.+]] = arith.divui %[[T]], %[[C4]] : index
// CHECK-DAG: %[[REST:.+]] = arith.remui %[[T]], %[[C4]] : index
// CHECK: %[[NT:.+]] = call @omp_get_max_threads()
// CHECK: %[[NI:.+]] = arith.index_cast %[[NT]]
// CHECK: %[[P:.+]] = arith.minui %[[NI]], %c64
// CHECK: %[[FEW:.+]] = arith.cmpi ugt, %[[P]], %c3
// CHECK: %[[P1:.+]] = arith.addi %[[P]], %c1
// CHECK: %[[ENOUGH:.+]] = arith.muli %[[P1]], %c4096
// CHECK: %[[LONG:.+]] = arith.cmpi uge, %[[WHOLE]], %[[ENOUGH]]
// CHECK: %[[BOTH:.+]] = arith.andi %[[FEW]], %[[LONG]]
// CHECK: %[[CHOICE:.+]]:2 = scf.if %[[BOTH]]
// CHECK: scf.for %[[CR:.+]] = %c0 to %c3 step %c1
// CHECK: bufferization.alloc_tensor() : tensor<64x16xf32>
// CHECK: scf.for %[[PI:.+]] = %c0 to %[[P]] step %c1
// CHECK: arith.cmpi eq, %[[PI]], %c0
// CHECK: %[[SLICE:.+]] = tensor.extract_slice %{{.+}}[%[[CR]], %[[OFF:.+]]] [1, %{{.+}}] [1, 1] : tensor<3x?xf32> to tensor<1x?xf32>
// CHECK: %[[REL:.+]] = arith.subi %{{.+}}, %[[OFF]] : index
// CHECK: vector.transfer_write %{{.+}}, %{{.+}}[%c0, %[[REL]]] {in_bounds = [true]} : vector<8xf32>, tensor<1x?xf32>
// CHECK: tensor.insert_slice %{{.+}} into %{{.+}}[%[[CR]], %[[OFF]]]
// CHECK: vector.transfer_write %{{.+}}, %{{.+}}[%[[PI]], %c0] {in_bounds = [true]} : vector<8xf32>, tensor<64x16xf32>
// CHECK: } else {
// CHECK: scf.for %{{.+}} = %{{.+}} to %{{.+}} step %c1 iter_args(%{{.+}} = %[[ZEROS]], %{{.+}} = %[[ONES]]) -> (vector<8xf32>, vector<8xf32>)
// CHECK-NOT: tensor<1x?xf32>
// CHECK: vector.transfer_write %{{.+}}, %{{.+}}[%[[PI]], %c8] {in_bounds = [true]} : vector<8xf32>, tensor<64x16xf32>
// CHECK: bufferization.alloc_tensor() : tensor<64x16xf32>
// CHECK: scf.for %[[PJ:.+]] = %c0 to %[[P]] step %c1
// CHECK: %[[E0:.+]] = vector.transfer_read %[[PARTS:.+]][%c0, %c0]
// CHECK: %[[PJ1:.+]] = arith.addi %[[PJ]], %c1
// CHECK: scf.for %[[K:.+]] = %c1 to %[[PJ1]] step %c1 iter_args(%[[CK:.+]] = %[[E0]])
// CHECK: %[[AK:.+]] = vector.transfer_read %[[PARTS]][%[[K]], %c8]
// CHECK: %[[EK:.+]] = vector.transfer_read %[[PARTS]][%[[K]], %c0]
// CHECK: vector.fma %[[AK]], %[[CK]], %[[EK]]
// CHECK: tensor.extract_slice %{{.+}}[%[[CR]], %{{.+}}] [1, %{{.+}}] [1, 1]
// CHECK: tensor.insert_slice
// CHECK: vector.transfer_write %{{.+}}, %{{.+}}[%[[PJ]], %c0]
// CHECK: %[[LASTP:.+]] = arith.subi %[[P]], %c1
// CHECK: vector.transfer_read %{{.+}}[%[[LASTP]], %c0]
// CHECK: scf.for %{{.+}} = %c0 to %[[REST]] step %c1
// CHECK: } else {
// CHECK: %[[ROWS:.+]]:2 = scf.for %[[R:.+]] = %c0 to %c3 step %c1 iter_args(%{{.+}} = %{{.+}}, %{{.+}} = %{{.+}}) -> (tensor<3x?xf32>, tensor<3x2xf32>) {
// CHECK: %[[I0:.+]] = tensor.extract %[[H0]][%[[R]], %c0]
// CHECK: %[[I1:.+]] = tensor.extract %[[H0]][%[[R]], %c1]
// CHECK: %[[CARRY:.+]] = vector.from_elements %[[I0]], %[[I1]], %[[I0]], %[[I1]], %[[I0]], %[[I1]], %[[I0]], %[[I1]] : vector<8xf32>
// CHECK: scf.if
// CHECK: scf.for %[[V:.+]] = %c0 to %[[WHOLE]] step %c1 iter_args(%[[HB:.+]] = %{{.+}}, %[[C:.+]] = %[[CARRY]])
// CHECK: %[[E:.+]] = arith.muli %[[V]], %c8
// CHECK: %[[AV:.+]] = vector.transfer_read %[[AF]][%[[R]], %[[E]]]
// CHECK: %[[XV:.+]] = vector.transfer_read %[[XF]][%[[R]], %[[E]]]
// CHECK: %[[S1:.+]] = vector.shuffle %[[XV]], %[[ZEROS]] [8, 9, 0, 1, 2, 3, 4, 5]
// CHECK: %[[X1:.+]] = vector.fma %[[AV]], %[[S1]], %[[XV]]
// CHECK: %[[SA1:.+]] = vector.shuffle %[[AV]], %[[ONES]] [8, 9, 0, 1, 2, 3, 4, 5]
// CHECK: %[[A1:.+]] = arith.mulf %[[AV]], %[[SA1]]
// CHECK: %[[S2:.+]] = vector.shuffle %[[X1]], %[[ZEROS]] [8, 9, 10, 11, 0, 1, 2, 3]
// CHECK: %[[X2:.+]] = vector.fma %[[A1]], %[[S2]], %[[X1]]
// CHECK: %[[SA2:.+]] = vector.shuffle %[[A1]], %[[ONES]] [8, 9, 10, 11, 0, 1, 2, 3]
// CHECK: %[[A2:.+]] = arith.mulf %[[A1]], %[[SA2]]
// CHECK: %[[HV:.+]] = vector.fma %[[A2]], %[[C]], %[[X2]]
// CHECK: %[[W:.+]] = vector.transfer_write %[[HV]], %[[HB]][%[[R]], %[[E]]]
// CHECK: %[[NEXT:.+]] = vector.shuffle %[[HV]], %[[HV]] [6, 7, 6, 7, 6, 7, 6, 7]
// CHECK: scf.yield %[[W]], %[[NEXT]]
// CHECK: } {recur.stream_contiguous, recur.stream_stores}
// CHECK: } else {
// CHECK-NOT: recur.stream_stores
// CHECK: vector.extract %{{.+}}[0] : f32 from vector<8xf32>
// CHECK: vector.extract %{{.+}}[1] : f32 from vector<8xf32>
// CHECK: scf.for %{{.+}} = %c0 to %[[REST]] step %c1
// CHECK-COUNT-2: math.fma %{{.+}}, %{{.+}}, %{{.+}} : f32
// CHECK: scf.yield %[[ROWS]]#0, %[[ROWS]]#1
// CHECK: tensor.expand_shape %[[CHOICE]]#0 {{\[}}[0], [1, 2]] output_shape [3, %[[T]], 2]

// GROUPS-LABEL: func.func @two_channels(
// GROUPS-NOT: tensor.collapse_shape
// GROUPS: tensor<128xf32>

// One channel along the last dimension, in reverse, in f64 (4 lanes): the
// vectors from the back, composed towards the lower lanes, the carry the
// first lane; the steps left over are the front ones, last first.

func.func @along_last_reverse(%a: tensor<?xf64>, %x: tensor<?xf64>)
    -> (tensor<?xf64>, tensor<f64>) {
  %h, %last = recur.linear_scan %a, %x along 0 reverse
      : tensor<?xf64>, tensor<?xf64>
  return %h, %last : tensor<?xf64>, tensor<f64>
}

// CHECK-LABEL: func.func @along_last_reverse(
// CHECK-NOT: tensor.collapse_shape
// CHECK: %[[T:.+]] = tensor.dim %{{.+}}, %c0 : tensor<?xf64>
// CHECK: %[[REST:.+]] = arith.remui %[[T]], %c4
// CHECK: scf.for %[[V:.+]] = %c0 to %{{.+}} step %c1 iter_args(%{{.+}} = %{{.+}}, %{{.+}} = %cst_0)
// CHECK: %[[E0:.+]] = arith.muli %[[V]], %c4
// CHECK: %[[E1:.+]] = arith.addi %[[E0]], %c4
// CHECK: %[[E:.+]] = arith.subi %[[T]], %[[E1]]
// CHECK: vector.transfer_read %{{.+}}[%[[E]]]
// CHECK: vector.shuffle %{{.+}}, %{{.+}} [1, 2, 3, 7] : vector<4xf64>, vector<4xf64>
// CHECK: vector.shuffle %{{.+}}, %{{.+}} [2, 3, 6, 7] : vector<4xf64>, vector<4xf64>
// CHECK: vector.shuffle %[[H:.+]], %[[H]] [0, 0, 0, 0]
// CHECK: scf.for %[[S:.+]] = %c0 to %[[REST]] step %c1
// CHECK: %[[BACK:.+]] = arith.subi %[[REST]], %[[S]]
// CHECK: arith.subi %[[BACK]], %c1

// Sixteen channels: a step is two vectors, each its own carry; no
// composing, no steps left over.

func.func @sixteen(%a: tensor<?x16xf32>, %x: tensor<?x16xf32>)
    -> (tensor<?x16xf32>, tensor<16xf32>) {
  %h, %last = recur.linear_scan %a, %x along 0
      : tensor<?x16xf32>, tensor<?x16xf32>
  return %h, %last : tensor<?x16xf32>, tensor<16xf32>
}

// CHECK-LABEL: func.func @sixteen(
// CHECK: tensor.collapse_shape %{{.+}} {{\[}}[0, 1]] : tensor<?x16xf32> into tensor<?xf32>
// CHECK: scf.for {{.+}} iter_args(%{{.+}} = %{{.+}}, %[[C0:.+]] = %{{.+}}, %[[C1:.+]] = %{{.+}}) -> (tensor<?xf32>, vector<8xf32>, vector<8xf32>)
// CHECK-NOT: vector.shuffle
// CHECK: vector.fma %{{.+}}, %[[C0]], %{{.+}} : vector<8xf32>
// CHECK: vector.fma %{{.+}}, %[[C1]], %{{.+}} : vector<8xf32>
// CHECK: } {recur.stream_contiguous, recur.stream_stores}
// CHECK: vector.transfer_write %{{.+}}, %{{.+}}[%c0] {in_bounds = [true]} : vector<8xf32>, tensor<16xf32>
// CHECK: vector.transfer_write %{{.+}}, %{{.+}}[%c8] {in_bounds = [true]} : vector<8xf32>, tensor<16xf32>

// Channels that neither divide the lanes nor are a multiple of them, a
// dynamic channel count, and a transition broadcast over the channels keep
// the groups.

func.func @twelve(%a: tensor<?x12xf32>, %x: tensor<?x12xf32>)
    -> (tensor<?x12xf32>, tensor<12xf32>) {
  %h, %last = recur.linear_scan %a, %x along 0
      : tensor<?x12xf32>, tensor<?x12xf32>
  return %h, %last : tensor<?x12xf32>, tensor<12xf32>
}

// CHECK-LABEL: func.func @twelve(
// CHECK-NOT: tensor.collapse_shape
// CHECK: tensor<4096xf32>

func.func @dynamic_channels(%a: tensor<?x?xf32>, %x: tensor<?x?xf32>)
    -> (tensor<?x?xf32>, tensor<?xf32>) {
  %h, %last = recur.linear_scan %a, %x along 0
      : tensor<?x?xf32>, tensor<?x?xf32>
  return %h, %last : tensor<?x?xf32>, tensor<?xf32>
}

// CHECK-LABEL: func.func @dynamic_channels(
// CHECK-NOT: tensor.collapse_shape
// CHECK: tensor<4096xf32>

func.func @step_gate(%a: tensor<?xf32>, %x: tensor<?x4xf32>)
    -> (tensor<?x4xf32>, tensor<4xf32>) {
  %h, %last = recur.linear_scan %a, %x along 0
      : tensor<?xf32>, tensor<?x4xf32>
  return %h, %last : tensor<?x4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @step_gate(
// CHECK-NOT: tensor.collapse_shape
// CHECK: tensor<4096xf32>

// Complex channels have no vector form: one or two along the dimension
// before them go one at a time with a scalar carry (the time loop
// innermost), more by groups.

func.func @complex_two(%a: tensor<?x?x2xcomplex<f32>>,
                       %x: tensor<?x?x2xcomplex<f32>>)
    -> (tensor<?x?x2xcomplex<f32>>, tensor<?x2xcomplex<f32>>) {
  %h, %last = recur.linear_scan %a, %x along 1
      : tensor<?x?x2xcomplex<f32>>, tensor<?x?x2xcomplex<f32>>
  return %h, %last : tensor<?x?x2xcomplex<f32>>, tensor<?x2xcomplex<f32>>
}

// CHECK-LABEL: func.func @complex_two(
// CHECK-NOT: tensor<4096xcomplex<f32>>
// CHECK: scf.for %[[B:.+]] = %c0 to %{{.+}} step %c1
// CHECK: scf.for %[[C:.+]] = %c0 to %c2 step %c1
// CHECK: scf.for %[[T:.+]] = %c0 to %{{.+}} step %c1 iter_args(%{{.+}} = %{{.+}}, %[[CARRY:.+]] = %{{.+}}) -> (tensor<?x?x2xcomplex<f32>>, complex<f32>)
// CHECK: complex.mul %{{.+}}, %[[CARRY]] : complex<f32>

func.func @complex_four(%a: tensor<?x?x4xcomplex<f32>>,
                        %x: tensor<?x?x4xcomplex<f32>>)
    -> (tensor<?x?x4xcomplex<f32>>, tensor<?x4xcomplex<f32>>) {
  %h, %last = recur.linear_scan %a, %x along 1
      : tensor<?x?x4xcomplex<f32>>, tensor<?x?x4xcomplex<f32>>
  return %h, %last : tensor<?x?x4xcomplex<f32>>, tensor<?x4xcomplex<f32>>
}

// CHECK-LABEL: func.func @complex_four(
// CHECK: tensor<4096xcomplex<f32>>
