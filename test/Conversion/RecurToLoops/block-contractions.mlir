// RUN: recur-opt %s --recur-block-contractions --split-input-file | FileCheck %s
// RUN: recur-opt %s --recur-block-contractions='rows=2 cols=1' --split-input-file | FileCheck %s --check-prefix=SMALL
// RUN: not recur-opt %s --recur-block-contractions='rows=0' --split-input-file 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: rows and cols must be at least 1

// A projection y[b, t, n] += x[b, t, k] W[k, n] (loops b, t, k, n, as
// recur-interchange-reductions leaves them): blocks of 6 rows of t by 2
// vectors of 8 columns, read once, updated over k by one broadcast of x per
// row and one vector of W per column (12 vector.fma), written back once.
// 20 columns: one block of 16, then the 4 left in one masked vector (no
// in_bounds). The rows left over (T mod 6) go one at a time; both row
// nests are tagged parallel, the column and k loops are not.

#x = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#w = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
#y = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>

// Each loop over columns keeps LLVM from unrolling it (recur-strip-front-
// end-attributes hands the annotation to the loop's latch branch).
// CHECK: #[[$UNROLL:.+]] = #llvm.loop_unroll<disable = true>
// CHECK: #[[$NOUNROLL:.+]] = #llvm.loop_annotation<unroll = #[[$UNROLL]]>
// CHECK-LABEL: func.func @projection
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x?x64xf32>, %[[W:[^:]+]]: tensor<64x20xf32>, %[[INIT:[^:]+]]: tensor<?x?x20xf32>)
// CHECK-NOT: linalg.generic
// CHECK: %[[T:.+]] = tensor.dim %[[X]], %c1{{(_[0-9]+)?}}
// CHECK: %[[FULL:.+]] = arith.divui %[[T]], %c6{{(_[0-9]+)?}}
// CHECK: %[[FIRST:.+]] = arith.muli %[[FULL]], %c6{{(_[0-9]+)?}}
// CHECK: %[[LEFT:.+]] = arith.subi %[[T]], %[[FIRST]]
// CHECK: scf.for %[[B:.+]] = %c0{{(_[0-9]+)?}} to %{{.+}} step %c1{{(_[0-9]+)?}} iter_args(%[[Y0:.+]] = %[[INIT]])
// CHECK: scf.for %[[RB:.+]] = %c0{{(_[0-9]+)?}} to %[[FULL]] step %c1{{(_[0-9]+)?}} iter_args(%[[Y1:.+]] = %[[Y0]])
// CHECK: %[[ROW:.+]] = arith.muli %[[RB]], %c6{{(_[0-9]+)?}}
// CHECK: scf.for %[[COL:.+]] = %c0{{(_[0-9]+)?}} to %{{.+}} step %c16{{(_[0-9]+)?}} iter_args(%[[Y2:.+]] = %[[Y1]])
// CHECK-COUNT-12: vector.transfer_read %[[Y2]]{{.+}} {in_bounds = [true]} : tensor<?x?x20xf32>, vector<8xf32>
// CHECK: scf.for %[[K:.+]] = %c0{{(_[0-9]+)?}} to %c64{{(_[0-9]+)?}} step %c1{{(_[0-9]+)?}} iter_args({{.+}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK: tensor.extract %[[X]][%[[B]], %[[ROW]], %[[K]]]
// CHECK: vector.broadcast
// CHECK-COUNT-5: tensor.extract %[[X]]
// CHECK: vector.transfer_read %[[W]][%[[K]], %[[COL]]]{{.+}} {in_bounds = [true]}
// CHECK: vector.transfer_read %[[W]]
// CHECK-COUNT-12: vector.fma
// CHECK-NEXT: scf.yield
// CHECK-COUNT-12: vector.transfer_write {{.+}} {in_bounds = [true]} : vector<8xf32>, tensor<?x?x20xf32>
// CHECK: } {llvm.loop_annotation = #[[$NOUNROLL]]}
// No loop of single vectors (20 - 16 < 8: its bounds fold to 16 and 16,
// and an empty loop is not built), then the masked rest.
// CHECK-NOT: scf.for
// CHECK: scf.for %[[REST:.+]] = %c16{{(_[0-9]+)?}} to %c20{{(_[0-9]+)?}} step %c8{{(_[0-9]+)?}}
// CHECK: vector.transfer_read %{{.+}}[%[[B]], %[[ROW]], %[[REST]]], %{{.+}} : tensor<?x?x20xf32>, vector<8xf32>
// CHECK: vector.transfer_read %[[W]][%{{.+}}, %[[REST]]], %{{.+}} : tensor<64x20xf32>, vector<8xf32>
// CHECK: vector.transfer_write %{{.+}}, %{{.+}}[%[[B]], %[[ROW]], %[[REST]]] : vector<8xf32>, tensor<?x?x20xf32>
// CHECK: } {llvm.loop_annotation = #[[$NOUNROLL]]}
// CHECK: } {recur.parallel}
// CHECK: } {recur.parallel}
// The rows left over, one at a time after the whole blocks.
// CHECK: scf.for %{{.+}} = %c0{{(_[0-9]+)?}} to %{{.+}} step %c1{{(_[0-9]+)?}}
// CHECK: scf.for %[[R1:.+]] = %c0{{(_[0-9]+)?}} to %[[LEFT]] step %c1{{(_[0-9]+)?}}
// CHECK: %[[OFF:.+]] = arith.muli %[[R1]], %c1{{(_[0-9]+)?}}
// CHECK: arith.addi %[[FIRST]], %[[OFF]]
// CHECK-COUNT-2: vector.transfer_read %{{.+}} {in_bounds = [true]} : tensor<?x?x20xf32>, vector<8xf32>
// CHECK: } {recur.parallel}
// CHECK: } {recur.parallel}

// SMALL-LABEL: func.func @projection
// SMALL: arith.divui %{{.+}}, %c2{{(_[0-9]+)?}}
// SMALL: scf.for %{{.+}} step %c8{{(_[0-9]+)?}}
// SMALL-COUNT-2: vector.fma
// SMALL-NEXT: scf.yield
func.func @projection(%x: tensor<?x?x64xf32>, %w: tensor<64x20xf32>,
                      %init: tensor<?x?x20xf32>) -> tensor<?x?x20xf32> {
  %r = linalg.generic {indexing_maps = [#x, #w, #y],
                       iterator_types = ["parallel", "parallel", "reduction", "parallel"]}
      ins(%x, %w : tensor<?x?x64xf32>, tensor<64x20xf32>)
      outs(%init : tensor<?x?x20xf32>) {
  ^bb0(%in: f32, %in_w: f32, %out: f32):
    %m = arith.mulf %in, %in_w : f32
    %s = arith.addf %out, %m : f32
    linalg.yield %s : f32
  } -> tensor<?x?x20xf32>
  return %r : tensor<?x?x20xf32>
}

// -----

// Per head, f64 (vectors of 4): o[h, t, e] += p[h, t, s] v[h, s, e], the
// product written `x * out + ...` the other way round. The head is an outer
// parallel loop read by both operands; 8 columns are two whole vectors of
// 4, one block.

#p = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#v = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
#o = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>

// CHECK-LABEL: func.func @per_head
// CHECK-SAME: (%[[P:[^:]+]]: tensor<4x?x?xf64>, %[[V:[^:]+]]: tensor<4x?x8xf64>
// CHECK: scf.for %[[H:.+]] = %c0{{(_[0-9]+)?}} to %c4{{(_[0-9]+)?}} step %c1{{(_[0-9]+)?}}
// CHECK: scf.for %[[RB:.+]] = %c0{{(_[0-9]+)?}} to
// CHECK: scf.for %[[COL:.+]] = %c0{{(_[0-9]+)?}} to %{{.+}} step %c8{{(_[0-9]+)?}}
// CHECK: scf.for %[[S:.+]] = %c0{{(_[0-9]+)?}} to
// CHECK: tensor.extract %[[P]][%[[H]], %{{.+}}, %[[S]]]
// CHECK: vector.transfer_read %[[V]][%[[H]], %[[S]], %[[COL]]]{{.+}} : tensor<4x?x8xf64>, vector<4xf64>
// CHECK-COUNT-12: vector.fma {{.+}} : vector<4xf64>
func.func @per_head(%p: tensor<4x?x?xf64>, %v: tensor<4x?x8xf64>,
                    %init: tensor<4x?x8xf64>) -> tensor<4x?x8xf64> {
  %r = linalg.generic {indexing_maps = [#p, #v, #o],
                       iterator_types = ["parallel", "parallel", "reduction", "parallel"]}
      ins(%p, %v : tensor<4x?x?xf64>, tensor<4x?x8xf64>)
      outs(%init : tensor<4x?x8xf64>) {
  ^bb0(%a: f64, %b: f64, %out: f64):
    %m = arith.mulf %b, %a : f64
    %s = arith.addf %m, %out : f64
    linalg.yield %s : f64
  } -> tensor<4x?x8xf64>
  return %r : tensor<4x?x8xf64>
}

// -----

// y = x W^T (y[t, n] += x[t, k] W[n, k], the loops t, n, k as written:
// recur-interchange-reductions finds no input streaming n and leaves them):
// W is read through a transposed copy [k, n], then the same blocks.

#xa = affine_map<(d0, d1, d2) -> (d0, d2)>
#wt = affine_map<(d0, d1, d2) -> (d1, d2)>
#yc = affine_map<(d0, d1, d2) -> (d0, d1)>

// CHECK-LABEL: func.func @transposed
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x32xf32>, %[[W:[^:]+]]: tensor<16x32xf32>
// CHECK: %[[E:.+]] = tensor.empty() : tensor<32x16xf32>
// CHECK: %[[WT:.+]] = linalg.transpose ins(%[[W]] : tensor<16x32xf32>) outs(%[[E]] : tensor<32x16xf32>) permutation = [1, 0]
// CHECK: scf.for %[[RB:.+]] = %c0{{(_[0-9]+)?}} to
// CHECK: scf.for %[[COL:.+]] = %c0{{(_[0-9]+)?}} to %{{.+}} step %c16{{(_[0-9]+)?}}
// CHECK: scf.for %[[K:.+]] = %c0{{(_[0-9]+)?}} to %c32{{(_[0-9]+)?}}
// CHECK: tensor.extract %[[X]][%{{.+}}, %[[K]]]
// CHECK: vector.transfer_read %[[WT]][%[[K]], %[[COL]]]
// CHECK-COUNT-12: vector.fma
func.func @transposed(%x: tensor<?x32xf32>, %w: tensor<16x32xf32>,
                      %init: tensor<?x16xf32>) -> tensor<?x16xf32> {
  %r = linalg.generic {indexing_maps = [#xa, #wt, #yc],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<?x32xf32>, tensor<16x32xf32>)
      outs(%init : tensor<?x16xf32>) {
  ^bb0(%in: f32, %in_w: f32, %out: f32):
    %m = arith.mulf %in, %in_w : f32
    %s = arith.addf %out, %m : f32
    linalg.yield %s : f32
  } -> tensor<?x16xf32>
  return %r : tensor<?x16xf32>
}

// -----

// Products summed from zero, as an einsum emits them: C is a linalg.fill,
// here one fill shared by two products (as CSE leaves them). Each product's
// blocks start from the fill's value, broadcast, instead of reading C, and
// write a tensor.empty of their own of C's sizes; the fill, left with no
// use (its sizes read from its init), is erased. The masked last columns
// start from the value as well.

#xf = affine_map<(d0, d1, d2) -> (d0, d2)>
#wf = affine_map<(d0, d1, d2) -> (d2, d1)>
#yf = affine_map<(d0, d1, d2) -> (d0, d1)>

// CHECK-LABEL: func.func @filled
// CHECK-SAME: (%[[X:[^:]+]]: tensor<?x8xf32>, %[[W:[^:]+]]: tensor<8x20xf32>, %[[V:[^:]+]]: f32)
// CHECK-NOT: linalg.fill
// CHECK: %[[E0:.+]] = tensor.empty(%{{.+}}) : tensor<?x20xf32>
// CHECK-NOT: linalg.fill
// CHECK: %[[E1:.+]] = tensor.empty(%{{.+}}) : tensor<?x20xf32>
// CHECK: scf.for %{{.+}} iter_args(%[[Y1:.+]] = %[[E1]])
// CHECK: scf.for %[[COL:.+]] = %c0{{(_[0-9]+)?}} to %{{.+}} step %c16{{(_[0-9]+)?}} iter_args(%[[Y2:.+]] = %[[Y1]])
// CHECK-NOT: vector.transfer_read %[[Y2]]
// CHECK: %[[SPLAT:.+]] = vector.broadcast %[[V]] : f32 to vector<8xf32>
// CHECK: scf.for %{{.+}} iter_args(%{{.+}} = %[[SPLAT]], %{{.+}} = %[[SPLAT]], %{{.+}} = %[[SPLAT]], %{{.+}} = %[[SPLAT]], %{{.+}} = %[[SPLAT]], %{{.+}} = %[[SPLAT]], %{{.+}} = %[[SPLAT]], %{{.+}} = %[[SPLAT]], %{{.+}} = %[[SPLAT]], %{{.+}} = %[[SPLAT]], %{{.+}} = %[[SPLAT]], %{{.+}} = %[[SPLAT]])
// CHECK-COUNT-12: vector.fma
// CHECK: scf.for %[[REST:.+]] = %c16{{(_[0-9]+)?}} to %c20{{(_[0-9]+)?}} step %c8{{(_[0-9]+)?}} iter_args(%[[Y3:.+]] =
// CHECK-NOT: vector.transfer_read %[[Y3]]
// CHECK: vector.broadcast %[[V]] : f32 to vector<8xf32>
// CHECK: vector.transfer_write %{{.+}}, %[[Y3]][%{{.+}}, %[[REST]]] : vector<8xf32>, tensor<?x20xf32>
// The second product: a tensor.empty of its own.
// CHECK: %[[E2:.+]] = tensor.empty(%{{.+}}) : tensor<?x20xf32>
// CHECK: scf.for %{{.+}} iter_args(%{{.+}} = %[[E2]])
// CHECK: return
func.func @filled(%x: tensor<?x8xf32>, %w: tensor<8x20xf32>, %v: f32)
    -> (tensor<?x20xf32>, tensor<?x20xf32>) {
  %c0 = arith.constant 0 : index
  %t = tensor.dim %x, %c0 : tensor<?x8xf32>
  %e = tensor.empty(%t) : tensor<?x20xf32>
  %f = linalg.fill ins(%v : f32) outs(%e : tensor<?x20xf32>) -> tensor<?x20xf32>
  %r1 = linalg.generic {indexing_maps = [#xf, #wf, #yf],
                        iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<?x8xf32>, tensor<8x20xf32>)
      outs(%f : tensor<?x20xf32>) {
  ^bb0(%in: f32, %in_w: f32, %out: f32):
    %m = arith.mulf %in, %in_w : f32
    %s = arith.addf %out, %m : f32
    linalg.yield %s : f32
  } -> tensor<?x20xf32>
  %r2 = linalg.generic {indexing_maps = [#xf, #wf, #yf],
                        iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<?x8xf32>, tensor<8x20xf32>)
      outs(%f : tensor<?x20xf32>) {
  ^bb0(%in: f32, %in_w: f32, %out: f32):
    %m = arith.mulf %in, %in_w : f32
    %s = arith.addf %out, %m : f32
    linalg.yield %s : f32
  } -> tensor<?x20xf32>
  return %r1, %r2 : tensor<?x20xf32>, tensor<?x20xf32>
}

// -----

// Left alone: a body that is not a multiply-add (a max of products; a sum
// of exps), both inputs reading the output's last dimension (an
// elementwise product summed over k), and two reductions.

#a = affine_map<(d0, d1, d2) -> (d0, d2)>
#b = affine_map<(d0, d1, d2) -> (d2, d1)>
#c = affine_map<(d0, d1, d2) -> (d0, d1)>
#both = affine_map<(d0, d1, d2) -> (d2, d1)>
#a2 = affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>
#b2 = affine_map<(d0, d1, d2, d3) -> (d2, d3, d1)>
#c2 = affine_map<(d0, d1, d2, d3) -> (d0, d1)>

// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: vector.fma
// CHECK-COUNT-4: linalg.generic
// CHECK-NOT: vector.fma
func.func @left_alone(%x: tensor<8x16xf32>, %wt: tensor<16x8xf32>,
                      %x3: tensor<8x4x4xf32>, %w3: tensor<4x4x8xf32>,
                      %init: tensor<8x8xf32>)
    -> (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) {
  %0 = linalg.generic {indexing_maps = [#a, #b, #c],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %wt : tensor<8x16xf32>, tensor<16x8xf32>)
      outs(%init : tensor<8x8xf32>) {
  ^bb0(%in: f32, %in_w: f32, %out: f32):
    %m = arith.mulf %in, %in_w : f32
    %s = arith.maximumf %out, %m : f32
    linalg.yield %s : f32
  } -> tensor<8x8xf32>
  %1 = linalg.generic {indexing_maps = [#a, #b, #c],
                       iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%x, %wt : tensor<8x16xf32>, tensor<16x8xf32>)
      outs(%init : tensor<8x8xf32>) {
  ^bb0(%in: f32, %in_w: f32, %out: f32):
    %m = arith.mulf %in, %in_w : f32
    %e = math.exp %m : f32
    %s = arith.addf %out, %e : f32
    linalg.yield %s : f32
  } -> tensor<8x8xf32>
  %2 = linalg.generic {indexing_maps = [#both, #both, #c],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%wt, %wt : tensor<16x8xf32>, tensor<16x8xf32>)
      outs(%init : tensor<8x8xf32>) {
  ^bb0(%in: f32, %in_w: f32, %out: f32):
    %m = arith.mulf %in, %in_w : f32
    %s = arith.addf %out, %m : f32
    linalg.yield %s : f32
  } -> tensor<8x8xf32>
  %3 = linalg.generic {indexing_maps = [#a2, #b2, #c2],
                       iterator_types = ["parallel", "parallel", "reduction", "reduction"]}
      ins(%x3, %w3 : tensor<8x4x4xf32>, tensor<4x4x8xf32>)
      outs(%init : tensor<8x8xf32>) {
  ^bb0(%in: f32, %in_w: f32, %out: f32):
    %m = arith.mulf %in, %in_w : f32
    %s = arith.addf %out, %m : f32
    linalg.yield %s : f32
  } -> tensor<8x8xf32>
  return %0, %1, %2, %3 : tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>
}

// -----

// A static row count: the rows left over after the blocks of 6 (16 = 2 x 6
// + 4) go as one block of 4 rows (8 vector.fma a step) rather than one row
// at a time.

#xs = affine_map<(d0, d1, d2) -> (d0, d2)>
#ws = affine_map<(d0, d1, d2) -> (d2, d1)>
#ys = affine_map<(d0, d1, d2) -> (d0, d1)>

// CHECK-LABEL: func.func @static_rows
// CHECK: scf.for %{{.+}} = %c0{{(_[0-9]+)?}} to %c2{{(_[0-9]+)?}} step %c1{{(_[0-9]+)?}}
// CHECK: scf.for
// CHECK-COUNT-12: vector.fma
// CHECK-NEXT: scf.yield
// CHECK: } {recur.parallel}
// CHECK: scf.for %[[R:.+]] = %c0{{(_[0-9]+)?}} to %c1{{(_[0-9]+)?}} step %c1{{(_[0-9]+)?}}
// CHECK: %[[OFF:.+]] = arith.muli %[[R]], %c4{{(_[0-9]+)?}}
// CHECK: arith.addi %c12{{(_[0-9]+)?}}, %[[OFF]]
// CHECK: scf.for
// CHECK-COUNT-8: vector.fma
// CHECK-NEXT: scf.yield
// CHECK: } {recur.parallel}
// CHECK-NOT: scf.for
// CHECK: return
func.func @static_rows(%x: tensor<16x8xf32>, %w: tensor<8x16xf32>,
                       %init: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %r = linalg.generic {indexing_maps = [#xs, #ws, #ys],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<16x8xf32>, tensor<8x16xf32>)
      outs(%init : tensor<16x16xf32>) {
  ^bb0(%in: f32, %in_w: f32, %out: f32):
    %m = arith.mulf %in, %in_w : f32
    %s = arith.addf %out, %m : f32
    linalg.yield %s : f32
  } -> tensor<16x16xf32>
  return %r : tensor<16x16xf32>
}

// -----

// Products that know their zeros (attributes set by the GLA's product
// forms). A lower triangular A read as A[i, k]: a block of rows [row, row
// + 6) sums k up to row + 6 (at most K); read as A[k, i]: from row. A
// result needed only where j <= i: a block of rows computes its columns
// up to the vector holding column row + 5, rounded up to 8 (at most N).

#ik = affine_map<(d0, d1, d2) -> (d0, d2)>
#ki = affine_map<(d0, d1, d2) -> (d2, d0)>
#kj = affine_map<(d0, d1, d2) -> (d2, d1)>
#ij = affine_map<(d0, d1, d2) -> (d0, d1)>

// CHECK-LABEL: func.func @lower_a
// CHECK: scf.for %[[RB:.+]] = %c0{{(_[0-9]+)?}} to %c5{{(_[0-9]+)?}}
// CHECK: %[[ROW:.+]] = arith.muli %[[RB]], %c6{{(_[0-9]+)?}}
// CHECK: scf.for %[[COL:.+]] = %c0{{(_[0-9]+)?}} to %c32{{(_[0-9]+)?}} step %c16
// CHECK: %[[END:.+]] = arith.addi %[[ROW]], %c6{{(_[0-9]+)?}}
// CHECK: %[[TO:.+]] = arith.minui %c32{{(_[0-9]+)?}}, %[[END]]
// CHECK: scf.for %{{.+}} = %c0{{(_[0-9]+)?}} to %[[TO]] step %c1
// CHECK-COUNT-12: vector.fma
func.func @lower_a(%a: tensor<32x32xf32>, %b: tensor<32x32xf32>,
                   %c: tensor<32x32xf32>) -> tensor<32x32xf32> {
  %r = linalg.generic {indexing_maps = [#ik, #kj, #ij],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<32x32xf32>, tensor<32x32xf32>)
      outs(%c : tensor<32x32xf32>) attrs = {recur.lower_triangular_input = 0 : i64} {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<32x32xf32>
  return %r : tensor<32x32xf32>
}

// CHECK-LABEL: func.func @lower_a_transposed
// CHECK: %[[ROW:.+]] = arith.muli %{{.+}}, %c6{{(_[0-9]+)?}}
// CHECK: %[[FROM:.+]] = arith.minui %c32{{(_[0-9]+)?}}, %[[ROW]]
// CHECK: scf.for %{{.+}} = %[[FROM]] to %c32{{(_[0-9]+)?}} step %c1
// CHECK-COUNT-12: vector.fma
func.func @lower_a_transposed(%a: tensor<32x32xf32>, %b: tensor<32x32xf32>,
                              %c: tensor<32x32xf32>) -> tensor<32x32xf32> {
  %r = linalg.generic {indexing_maps = [#ki, #kj, #ij],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<32x32xf32>, tensor<32x32xf32>)
      outs(%c : tensor<32x32xf32>) attrs = {recur.lower_triangular_input = 0 : i64} {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<32x32xf32>
  return %r : tensor<32x32xf32>
}

// B lower triangular says nothing of a block's k: the whole range.
// CHECK-LABEL: func.func @lower_b
// CHECK-NOT: arith.minui
// CHECK: scf.for %{{.+}} = %c0{{(_[0-9]+)?}} to %c32{{(_[0-9]+)?}} step %c1{{(_[0-9]+)?}} iter_args({{.+}}) -> (vector<8xf32>
// CHECK-NOT: arith.minui
// CHECK: return
func.func @lower_b(%a: tensor<32x32xf32>, %b: tensor<32x32xf32>,
                   %c: tensor<32x32xf32>) -> tensor<32x32xf32> {
  %r = linalg.generic {indexing_maps = [#ik, #kj, #ij],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<32x32xf32>, tensor<32x32xf32>)
      outs(%c : tensor<32x32xf32>) attrs = {recur.lower_triangular_input = 1 : i64} {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<32x32xf32>
  return %r : tensor<32x32xf32>
}

// CHECK-LABEL: func.func @lower_result
// CHECK: %[[ROW:.+]] = arith.muli %{{.+}}, %c6{{(_[0-9]+)?}}
// CHECK: %[[LAST:.+]] = arith.addi %[[ROW]], %c6{{(_[0-9]+)?}}
// CHECK: %[[VECS:.+]] = arith.ceildivui %[[LAST]], %c8{{(_[0-9]+)?}}
// CHECK: %[[END:.+]] = arith.muli %[[VECS]], %c8{{(_[0-9]+)?}}
// CHECK: %[[N:.+]] = arith.minui %c32{{(_[0-9]+)?}}, %[[END]]
// CHECK: %[[NB:.+]] = arith.divui %[[N]], %c16{{(_[0-9]+)?}}
// CHECK: %[[WB:.+]] = arith.muli %[[NB]], %c16{{(_[0-9]+)?}}
// CHECK: scf.for %{{.+}} = %c0{{(_[0-9]+)?}} to %[[WB]] step %c16
// CHECK: scf.for %{{.+}} = %c0{{(_[0-9]+)?}} to %c32{{(_[0-9]+)?}} step %c1
// CHECK-COUNT-12: vector.fma
func.func @lower_result(%a: tensor<32x32xf32>, %b: tensor<32x32xf32>,
                        %c: tensor<32x32xf32>) -> tensor<32x32xf32> {
  %r = linalg.generic {indexing_maps = [#ik, #kj, #ij],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<32x32xf32>, tensor<32x32xf32>)
      outs(%c : tensor<32x32xf32>) attrs = {recur.lower_triangular_result} {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<32x32xf32>
  return %r : tensor<32x32xf32>
}
