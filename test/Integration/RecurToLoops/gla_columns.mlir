// RUN: recur-opt %s --recur-reference-to-llvm \
// RUN: | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN: | FileCheck %s
// RUN: recur-opt %s --convert-recur-to-loops="gla-column-threads=true" --recur-reference-to-llvm \
// RUN: | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN: | FileCheck %s

// The recurrent gla one output column a thread (gla-column-threads, the
// CUDA pipeline's form) computes what the row form computes: the same
// arithmetic in the same order, so the same numbers, for a real decay and
// for a complex one with an initial state. Inputs are dyadic; the expected
// values are the row form's (checked against the float64 oracle by
// test/Integration/CPU), and the first step is worked out by hand below.

func.func private @printMemrefF32(tensor<*xf32>)
func.func private @printMemrefF64(tensor<*xf64>)

func.func @main() {
  // Lead 1, T = 3, dk = 2, dv = 3. Step 0 from S = 0:
  //   S[i, j] = k0[i] v0[j] = [[1, 2, 3], [0.5, 1, 1.5]]
  //   y0[j] = q0 . S[:, j] = 1*S[0, j] + 2*S[1, j] = [2, 4, 6]
  // Step 1: S = diag(0.25, 1) S + k1^T v1 = [[-0.25, 1, -0.25], [1.5, 0, 3.5]]
  //   y1 = 0.5*S[0, :] - S[1, :] = [-1.625, 0.5, -3.625]
  %q = arith.constant dense<[[[1.0, 2.0], [0.5, -1.0], [2.0, 0.25]]]> : tensor<1x3x2xf32>
  %k = arith.constant dense<[[[1.0, 0.5], [-1.0, 2.0], [0.5, 0.5]]]> : tensor<1x3x2xf32>
  %v = arith.constant dense<[[[1.0, 2.0, 3.0], [0.5, -0.5, 1.0], [2.0, 0.0, -1.0]]]> : tensor<1x3x3xf32>
  %a = arith.constant dense<[[[0.5, 0.75], [0.25, 1.0], [0.5, 0.5]]]> : tensor<1x3x2xf32>
  %y, %s = recur.gated_linear_attention %q, %k, %v, %a
      {algorithm = #recur.algorithm<recurrent>}
      : tensor<1x3x2xf32>, tensor<1x3x2xf32>, tensor<1x3x3xf32>,
        tensor<1x3x2xf32>
  // CHECK: sizes = [1, 3, 3]
  // CHECK-NEXT: {{\[}}{{\[}}[2,   4,   6],
  // CHECK-NEXT: [-1.625,   0.5,   -3.625],
  // CHECK-NEXT: [2.1875,   1,   -0.9375]]]
  %yu = tensor.cast %y : tensor<1x3x3xf32> to tensor<*xf32>
  call @printMemrefF32(%yu) : (tensor<*xf32>) -> ()
  // CHECK: sizes = [1, 2, 3]
  // CHECK-NEXT: {{\[}}{{\[}}[0.875,   0.5,   -0.625],
  // CHECK-NEXT: [1.75,   0,   1.25]]]
  %su = tensor.cast %s : tensor<1x2x3xf32> to tensor<*xf32>
  call @printMemrefF32(%su) : (tensor<*xf32>) -> ()

  // A complex decay with an initial state (float64).
  %q2 = arith.constant dense<[[[1.0, -0.5], [0.25, 2.0]]]> : tensor<1x2x2xf64>
  %k2 = arith.constant dense<[[[0.5, 1.0], [1.0, -1.0]]]> : tensor<1x2x2xf64>
  %v2 = arith.constant dense<[[[2.0, 1.0], [-1.0, 0.5]]]> : tensor<1x2x2xf64>
  %a2 = arith.constant dense<[[[(0.5, 0.5), (0.0, 1.0)], [(0.25, -0.5), (1.0, 0.0)]]]> : tensor<1x2x2xcomplex<f64>>
  %s0 = arith.constant dense<[[[(1.0, 0.0), (0.0, 1.0)], [(0.5, 0.5), (-1.0, 0.0)]]]> : tensor<1x2x2xcomplex<f64>>
  %y2, %last2 = recur.gated_linear_attention %q2, %k2, %v2, %a2
      init(%s0 : tensor<1x2x2xcomplex<f64>>)
      {algorithm = #recur.algorithm<recurrent>}
      : tensor<1x2x2xf64>, tensor<1x2x2xf64>, tensor<1x2x2xf64>,
        tensor<1x2x2xcomplex<f64>>
  // CHECK: sizes = [1, 2, 2]
  // CHECK-NEXT: {{\[}}{{\[}}[0.75,   -0.5],
  // CHECK-NEXT: [4.90625,   1.1875]]]
  %y2u = tensor.cast %y2 : tensor<1x2x2xf64> to tensor<*xf64>
  call @printMemrefF64(%y2u) : (tensor<*xf64>) -> ()
  // The final state, real and imaginary parts.
  // CHECK: sizes = [1, 2, 2]
  // CHECK-NEXT: {{\[}}{{\[}}[-0.375,   0.75],
  // CHECK-NEXT: [2.5,   0.5]]]
  // CHECK: sizes = [1, 2, 2]
  // CHECK-NEXT: {{\[}}{{\[}}[-0.625,   0.125],
  // CHECK-NEXT: [0.5,   -1]]]
  %re = tensor.empty() : tensor<1x2x2xf64>
  %im = tensor.empty() : tensor<1x2x2xf64>
  %parts:2 = linalg.generic {
      indexing_maps = [affine_map<(n, i, j) -> (n, i, j)>,
                       affine_map<(n, i, j) -> (n, i, j)>,
                       affine_map<(n, i, j) -> (n, i, j)>],
      iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%last2 : tensor<1x2x2xcomplex<f64>>) outs(%re, %im : tensor<1x2x2xf64>, tensor<1x2x2xf64>) {
  ^bb0(%c: complex<f64>, %r: f64, %m: f64):
    %cr = complex.re %c : complex<f64>
    %ci = complex.im %c : complex<f64>
    linalg.yield %cr, %ci : f64, f64
  } -> (tensor<1x2x2xf64>, tensor<1x2x2xf64>)
  %reu = tensor.cast %parts#0 : tensor<1x2x2xf64> to tensor<*xf64>
  call @printMemrefF64(%reu) : (tensor<*xf64>) -> ()
  %imu = tensor.cast %parts#1 : tensor<1x2x2xf64> to tensor<*xf64>
  call @printMemrefF64(%imu) : (tensor<*xf64>) -> ()
  return
}
