// RUN: recur-opt %s --recur-reference-to-llvm \
// RUN: | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN: | FileCheck %s

// The three gates through the reference lowering, f32 and f64, checked
// against values worked out by hand. Pre-activations are chosen so every
// sigmoid is exactly 0.5, 1 or 0; the extreme ones (+-1000) must give exact
// copies and never NaN.

func.func private @printMemrefF32(tensor<*xf32>)
func.func private @printMemrefF64(tensor<*xf64>)

func.func @main() {
  // fixed, b_g = 0 so g = 0.5: c * 0.5 + z * 0.5 = (1+3)/2, (2+0)/2.
  %c = arith.constant dense<[[1.0, 2.0]]> : tensor<1x2xf32>
  %z = arith.constant dense<[[3.0, 0.0]]> : tensor<1x2xf32>
  %bg = arith.constant dense<0.0> : tensor<2xf32>
  %fixed = recur.gate <fixed> %c, %z, gates(%bg : tensor<2xf32>)
      : tensor<1x2xf32>
  // CHECK: {{\[}}[2,   1]]
  %fu = tensor.cast %fixed : tensor<1x2xf32> to tensor<*xf32>
  call @printMemrefF32(%fu) : (tensor<*xf32>) -> ()

  // fixed with b_g = +1000 keeps c exactly (g = 1); b_g = -1000 writes z
  // exactly (g = 0, exp(1000) overflows to inf and 1/(1+inf) = 0).
  %bx = arith.constant dense<[1000.0, -1000.0]> : tensor<2xf32>
  %fx = recur.gate <fixed> %c, %z, gates(%bx : tensor<2xf32>)
      : tensor<1x2xf32>
  // CHECK: {{\[}}[1,   0]]
  %fxu = tensor.cast %fx : tensor<1x2xf32> to tensor<*xf32>
  call @printMemrefF32(%fxu) : (tensor<*xf32>) -> ()

  // lstm with default biases (input -1, forget +1), f64:
  //   column 0: i_pre = 1, f_pre = -1 -> i = f = 0.5: 4*0.5 + 2*0.5 = 3
  //   column 1: f_pre = 1000, i_pre = -1000 -> f = 1, i = 0: keeps c = 4
  //   column 2: f_pre = -1000, i_pre = 1000 -> f = 0, i = 1: writes z = 2
  %lc = arith.constant dense<4.0> : tensor<3xf64>
  %lz = arith.constant dense<2.0> : tensor<3xf64>
  %li = arith.constant dense<[1.0, -1000.0, 1000.0]> : tensor<3xf64>
  %lf = arith.constant dense<[-1.0, 1000.0, -1000.0]> : tensor<3xf64>
  %lstm = recur.gate <lstm> %lc, %lz, gates(%li, %lf : tensor<3xf64>,
                                                       tensor<3xf64>)
      : tensor<3xf64>
  // CHECK: [3,  4,  2]
  %lu = tensor.cast %lstm : tensor<3xf64> to tensor<*xf64>
  call @printMemrefF64(%lu) : (tensor<*xf64>) -> ()

  // lstm with explicit biases 0 and 0: pre-activations 0 give i = f = 0.5.
  %zero = arith.constant dense<0.0> : tensor<3xf64>
  %lstm0 = recur.gate <lstm> %lc, %lz, gates(%zero, %zero : tensor<3xf64>,
                                                            tensor<3xf64>)
      {input_bias = 0.0 : f64, forget_bias = 0.0 : f64} : tensor<3xf64>
  // CHECK: [3,  3,  3]
  %l0u = tensor.cast %lstm0 : tensor<3xf64> to tensor<*xf64>
  call @printMemrefF64(%l0u) : (tensor<*xf64>) -> ()

  // update (MemBART), one gate per slot [K=3, 1] broadcast over the width:
  //   slot 0: p = 1000 -> u = 1: takes z
  //   slot 1: p = -1000 -> u = 0: keeps c
  //   slot 2: p = 0 -> u = 0.5: (c + z) / 2
  %uc = arith.constant dense<[[1.0, 2.0], [3.0, 4.0], [1.0, -1.0]]>
      : tensor<3x2xf32>
  %uz = arith.constant dense<[[5.0, 6.0], [7.0, 8.0], [2.0, 0.0]]>
      : tensor<3x2xf32>
  %up = arith.constant dense<[[1000.0], [-1000.0], [0.0]]> : tensor<3x1xf32>
  %upd = recur.gate <update> %uc, %uz, gates(%up : tensor<3x1xf32>)
      : tensor<3x2xf32>
  // CHECK: {{\[}}[5,   6],
  // CHECK-NEXT: [3,   4],
  // CHECK-NEXT: [1.5,   -0.5]]
  %uu = tensor.cast %upd : tensor<3x2xf32> to tensor<*xf32>
  call @printMemrefF32(%uu) : (tensor<*xf32>) -> ()
  return
}
