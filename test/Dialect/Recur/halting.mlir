// RUN: recur-opt %s | recur-opt | FileCheck %s
// RUN: recur-opt %s --mlir-print-op-generic | recur-opt | FileCheck %s

// Round trip of recur.halting, recur.depth_loop and its recur.yield.

// One halting step with the default threshold (0.999, not printed).
// CHECK-LABEL: func.func @halting(
// CHECK-SAME: [[P:%.+]]: tensor<2x128xf32>, [[H:%.+]]: tensor<2x128x512xf32>, [[MASS:%.+]]: tensor<2x128xf32>, [[ACC:%.+]]: tensor<2x128x512xf32>, [[S0:%.+]]: tensor<2x128x512xf32>) -> (tensor<2x128xf32>, tensor<2x128x512xf32>, tensor<2x128xf32>, tensor<2x128x512xf32>) {
// CHECK-NEXT: [[A:%.+]], [[S:%.+]], [[MASS1:%.+]], [[ACC1:%.+]] = recur.halting [[P]], [[H]], [[MASS]], [[ACC]], [[S0]] : tensor<2x128xf32>, tensor<2x128x512xf32>
// CHECK-NEXT: return [[A]], [[S]], [[MASS1]], [[ACC1]] : tensor<2x128xf32>, tensor<2x128x512xf32>, tensor<2x128xf32>, tensor<2x128x512xf32>
// CHECK-NEXT: }
func.func @halting(%p: tensor<2x128xf32>, %h: tensor<2x128x512xf32>, %mass: tensor<2x128xf32>, %acc: tensor<2x128x512xf32>, %s0: tensor<2x128x512xf32>) -> (tensor<2x128xf32>, tensor<2x128x512xf32>, tensor<2x128xf32>, tensor<2x128x512xf32>) {
  %a, %s, %mass1, %acc1 = recur.halting %p, %h, %mass, %acc, %s0 {threshold = 0.999 : f64} : tensor<2x128xf32>, tensor<2x128x512xf32>
  return %a, %s, %mass1, %acc1 : tensor<2x128xf32>, tensor<2x128x512xf32>, tensor<2x128xf32>, tensor<2x128x512xf32>
}

// An explicit threshold of 1 (the largest), dynamic sizes, f64.
// CHECK-LABEL: func.func @halting_threshold_dynamic(
// CHECK-SAME: [[P:%.+]]: tensor<?x?xf64>, [[H:%.+]]: tensor<?x?x64xf64>, [[MASS:%.+]]: tensor<?x?xf64>, [[ACC:%.+]]: tensor<?x?x64xf64>, [[S0:%.+]]: tensor<?x?x64xf64>) -> (tensor<?x?xf64>, tensor<?x?x64xf64>, tensor<?x?xf64>, tensor<?x?x64xf64>) {
// CHECK-NEXT: [[A:%.+]], [[S:%.+]], [[MASS1:%.+]], [[ACC1:%.+]] = recur.halting [[P]], [[H]], [[MASS]], [[ACC]], [[S0]] {threshold = 1.000000e+00 : f64} : tensor<?x?xf64>, tensor<?x?x64xf64>
// CHECK-NEXT: return [[A]], [[S]], [[MASS1]], [[ACC1]] : tensor<?x?xf64>, tensor<?x?x64xf64>, tensor<?x?xf64>, tensor<?x?x64xf64>
// CHECK-NEXT: }
func.func @halting_threshold_dynamic(%p: tensor<?x?xf64>, %h: tensor<?x?x64xf64>, %mass: tensor<?x?xf64>, %acc: tensor<?x?x64xf64>, %s0: tensor<?x?x64xf64>) -> (tensor<?x?xf64>, tensor<?x?x64xf64>, tensor<?x?xf64>, tensor<?x?x64xf64>) {
  %a, %s, %mass1, %acc1 = recur.halting %p, %h, %mass, %acc, %s0 {threshold = 1.000000e+00 : f64} : tensor<?x?xf64>, tensor<?x?x64xf64>
  return %a, %s, %mass1, %acc1 : tensor<?x?xf64>, tensor<?x?x64xf64>, tensor<?x?xf64>, tensor<?x?x64xf64>
}

// A single token: p_hat is a scalar tensor and h a vector.
// CHECK-LABEL: func.func @halting_rank0(
// CHECK-SAME: [[P:%.+]]: tensor<bf16>, [[H:%.+]]: tensor<8xbf16>, [[MASS:%.+]]: tensor<bf16>, [[ACC:%.+]]: tensor<8xbf16>, [[S0:%.+]]: tensor<8xbf16>) -> (tensor<bf16>, tensor<8xbf16>, tensor<bf16>, tensor<8xbf16>) {
// CHECK-NEXT: [[A:%.+]], [[S:%.+]], [[MASS1:%.+]], [[ACC1:%.+]] = recur.halting [[P]], [[H]], [[MASS]], [[ACC]], [[S0]] {threshold = 5.000000e-01 : f64} : tensor<bf16>, tensor<8xbf16>
// CHECK-NEXT: return [[A]], [[S]], [[MASS1]], [[ACC1]] : tensor<bf16>, tensor<8xbf16>, tensor<bf16>, tensor<8xbf16>
// CHECK-NEXT: }
func.func @halting_rank0(%p: tensor<bf16>, %h: tensor<8xbf16>, %mass: tensor<bf16>, %acc: tensor<8xbf16>, %s0: tensor<8xbf16>) -> (tensor<bf16>, tensor<8xbf16>, tensor<bf16>, tensor<8xbf16>) {
  %a, %s, %mass1, %acc1 = recur.halting %p, %h, %mass, %acc, %s0 {threshold = 5.000000e-01 : f64} : tensor<bf16>, tensor<8xbf16>
  return %a, %s, %mass1, %acc1 : tensor<bf16>, tensor<8xbf16>, tensor<bf16>, tensor<8xbf16>
}

// The Sparse Universal Transformer's depth loop around a halting step.
// CHECK-LABEL: func.func @depth_loop_halting(
// CHECK-SAME: [[H0:%.+]]: tensor<2x128x512xf32>, [[M0:%.+]]: tensor<2x128xf32>, [[ACC0:%.+]]: tensor<2x128x512xf32>, [[P:%.+]]: tensor<2x128xf32>) -> (tensor<2x128x512xf32>, tensor<2x128xf32>, tensor<2x128x512xf32>) {
// CHECK-NEXT: [[H_M_ACC:%.+]]:3 = recur.depth_loop max_depth 6 init([[H0]], [[M0]], [[ACC0]] : tensor<2x128x512xf32>, tensor<2x128xf32>, tensor<2x128x512xf32>) {
// CHECK-NEXT: ^bb0([[L:%.+]]: index, [[HL:%.+]]: tensor<2x128x512xf32>, [[ML:%.+]]: tensor<2x128xf32>, [[ACCL:%.+]]: tensor<2x128x512xf32>):
// CHECK-NEXT: [[A:%.+]], [[S:%.+]], [[M1:%.+]], [[ACC1:%.+]] = recur.halting [[P]], [[HL]], [[ML]], [[ACCL]], [[HL]] : tensor<2x128xf32>, tensor<2x128x512xf32>
// CHECK-NEXT: recur.yield [[S]], [[M1]], [[ACC1]] : tensor<2x128x512xf32>, tensor<2x128xf32>, tensor<2x128x512xf32>
// CHECK-NEXT: }
// CHECK-NEXT: return [[H_M_ACC]]#0, [[H_M_ACC]]#1, [[H_M_ACC]]#2 : tensor<2x128x512xf32>, tensor<2x128xf32>, tensor<2x128x512xf32>
// CHECK-NEXT: }
func.func @depth_loop_halting(%h0: tensor<2x128x512xf32>, %m0: tensor<2x128xf32>, %acc0: tensor<2x128x512xf32>, %p: tensor<2x128xf32>) -> (tensor<2x128x512xf32>, tensor<2x128xf32>, tensor<2x128x512xf32>) {
  %h, %m, %acc = recur.depth_loop max_depth 6 init(%h0, %m0, %acc0 : tensor<2x128x512xf32>, tensor<2x128xf32>, tensor<2x128x512xf32>) {
  ^bb0(%l: index, %hl: tensor<2x128x512xf32>, %ml: tensor<2x128xf32>, %accl: tensor<2x128x512xf32>):
    %a, %s, %m1, %acc1 = recur.halting %p, %hl, %ml, %accl, %hl : tensor<2x128xf32>, tensor<2x128x512xf32>
    recur.yield %s, %m1, %acc1 : tensor<2x128x512xf32>, tensor<2x128xf32>, tensor<2x128x512xf32>
  }
  return %h, %m, %acc : tensor<2x128x512xf32>, tensor<2x128xf32>, tensor<2x128x512xf32>
}

// One step, carried values that are not tensors, an attribute dictionary.
// CHECK-LABEL: func.func @depth_loop_scalars(
// CHECK-SAME: [[X:%.+]]: f32, [[N:%.+]]: index) -> (f32, index) {
// CHECK-NEXT: [[Y_K:%.+]]:2 = recur.depth_loop max_depth 1 init([[X]], [[N]] : f32, index) attributes {note = "one step"} {
// CHECK-NEXT: ^bb0([[L:%.+]]: index, [[XL:%.+]]: f32, [[NL:%.+]]: index):
// CHECK-NEXT: [[NEXT:%.+]] = arith.addi [[NL]], [[L]] : index
// CHECK-NEXT: recur.yield [[XL]], [[NEXT]] : f32, index
// CHECK-NEXT: }
// CHECK-NEXT: return [[Y_K]]#0, [[Y_K]]#1 : f32, index
// CHECK-NEXT: }
func.func @depth_loop_scalars(%x: f32, %n: index) -> (f32, index) {
  %y, %k = recur.depth_loop max_depth 1 init(%x, %n : f32, index) attributes {note = "one step"} {
  ^bb0(%l: index, %xl: f32, %nl: index):
    %next = arith.addi %nl, %l : index
    recur.yield %xl, %next : f32, index
  }
  return %y, %k : f32, index
}
