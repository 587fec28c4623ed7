// RUN: recur-opt %s --recur-reference-to-llvm \
// RUN: | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN: | FileCheck %s

// recur.scan with user combine regions, executed through the reference
// lowering and checked against values worked out by hand.

func.func private @printMemrefF32(tensor<*xf32>)
func.func private @printMemrefF64(tensor<*xf64>)

func.func @main() {
  // GateLoop's operator (p1, p2) . (q1, q2) = (p1 q1, q1 p2 + q2) over the
  // leaves (a_t, b_t): the second component is the linear recurrence
  //   1, 0.5*1+2 = 2.5, 2*2.5+0.25 = 5.25, 5.25-1 = 4.25, 0*4.25+3 = 3
  // and the first the running product 0.5, 0.25, 0.5, 0.5, 0.
  %a = arith.constant dense<[[0.5, 0.5, 2.0, 1.0, 0.0]]> : tensor<1x5xf32>
  %b = arith.constant dense<[[1.0, 2.0, 0.25, -1.0, 3.0]]> : tensor<1x5xf32>
  %A, %H = recur.scan (%a, %b) along 1 {associative}
      : tensor<1x5xf32>, tensor<1x5xf32> {
  ^bb0(%p1: f32, %p2: f32, %q1: f32, %q2: f32):
    %m = arith.mulf %p1, %q1 : f32
    %t = arith.mulf %q1, %p2 : f32
    %s = arith.addf %t, %q2 : f32
    recur.yield %m, %s : f32, f32
  }
  // CHECK: {{\[}}[0.5,   0.25,   0.5,   0.5,   0]]
  %Au = tensor.cast %A : tensor<1x5xf32> to tensor<*xf32>
  call @printMemrefF32(%Au) : (tensor<*xf32>) -> ()
  // CHECK: {{\[}}[1,   2.5,   5.25,   4.25,   3]]
  %Hu = tensor.cast %H : tensor<1x5xf32> to tensor<*xf32>
  call @printMemrefF32(%Hu) : (tensor<*xf32>) -> ()

  // A carried state h_{-1} = 2 enters as the leaf (1, 2):
  //   h = 0.5*2+1 = 2, 0.5*2+2 = 3, 2*3+0.25 = 6.25, 5.25, 3.
  %i1 = arith.constant dense<[1.0]> : tensor<1xf32>
  %i2 = arith.constant dense<[2.0]> : tensor<1xf32>
  %IA, %IH = recur.scan (%a, %b) init(%i1, %i2 : tensor<1xf32>, tensor<1xf32>)
      along 1 {associative} : tensor<1x5xf32>, tensor<1x5xf32> {
  ^bb0(%p1: f32, %p2: f32, %q1: f32, %q2: f32):
    %m = arith.mulf %p1, %q1 : f32
    %t = arith.mulf %q1, %p2 : f32
    %s = arith.addf %t, %q2 : f32
    recur.yield %m, %s : f32, f32
  }
  // CHECK: {{\[}}[2,   3,   6.25,   5.25,   3]]
  %IHu = tensor.cast %IH : tensor<1x5xf32> to tensor<*xf32>
  call @printMemrefF32(%IHu) : (tensor<*xf32>) -> ()

  // Operand order, with a non-commutative combine c (.) x = x - c over
  // x = 1, 2, 3, 4 (f64):
  //   forward: 1, 2-1 = 1, 3-1 = 2, 4-2 = 2
  //   reverse: c3 = 4, c2 = 3-4 = -1, c1 = 2-(-1) = 3, c0 = 1-3 = -2
  %x = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf64>
  %fwd = recur.scan (%x) along 0 : tensor<4xf64> {
  ^bb0(%c: f64, %v: f64):
    %d = arith.subf %v, %c : f64
    recur.yield %d : f64
  }
  // CHECK: [1,  1,  2,  2]
  %fu = tensor.cast %fwd : tensor<4xf64> to tensor<*xf64>
  call @printMemrefF64(%fu) : (tensor<*xf64>) -> ()
  %rev = recur.scan (%x) along 0 reverse : tensor<4xf64> {
  ^bb0(%c: f64, %v: f64):
    %d = arith.subf %v, %c : f64
    recur.yield %d : f64
  }
  // CHECK: [-2,  3,  -1,  4]
  %ru = tensor.cast %rev : tensor<4xf64> to tensor<*xf64>
  call @printMemrefF64(%ru) : (tensor<*xf64>) -> ()

  // A running maximum along axis 0 of a 3x2 tensor from init (0, 10):
  //   column 0: max(0, -1) = 0, max(0, 5) = 5, max(5, 2) = 5
  //   column 1: 10, 10, 11
  %m = arith.constant dense<[[-1.0, 3.0], [5.0, 7.0], [2.0, 11.0]]>
      : tensor<3x2xf64>
  %m0 = arith.constant dense<[0.0, 10.0]> : tensor<2xf64>
  %mx = recur.scan (%m) init(%m0 : tensor<2xf64>) along 0 : tensor<3x2xf64> {
  ^bb0(%c: f64, %v: f64):
    %r = arith.maximumf %c, %v : f64
    recur.yield %r : f64
  }
  // CHECK: {{\[}}[0,   10],
  // CHECK-NEXT: [5,   10],
  // CHECK-NEXT: [5,   11]]
  %mu = tensor.cast %mx : tensor<3x2xf64> to tensor<*xf64>
  call @printMemrefF64(%mu) : (tensor<*xf64>) -> ()
  return
}
