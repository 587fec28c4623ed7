// RUN: recur-opt %s --recur-reference-to-llvm \
// RUN: | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN: | FileCheck %s
// The chunked form (scan-chunk, the CUDA pipeline's) gives the same
// values with chunks of 1, 2 and 3 steps (a chunk a step, and chunks that
// do not divide the length, the last one shorter):
// RUN: recur-opt %s --convert-recur-to-loops="scan-chunk=1" --recur-reference-to-llvm \
// RUN: | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN: | FileCheck %s
// RUN: recur-opt %s --convert-recur-to-loops="scan-chunk=2" --recur-reference-to-llvm \
// RUN: | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN: | FileCheck %s
// RUN: recur-opt %s --convert-recur-to-loops="scan-chunk=3" --recur-reference-to-llvm \
// RUN: | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN: | FileCheck %s

// One channel at a time with 2, 3 and 8 steps an iteration (32, 48 and 128
// bytes of complex<f64>), loads first (scan-unroll-bytes, the CUDA
// pipeline's): whole iterations, steps left over, and a length shorter than
// an iteration:
// RUN: recur-opt %s --convert-recur-to-loops="scan-group=1 scan-unroll-bytes=32" --recur-reference-to-llvm \
// RUN: | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN: | FileCheck %s
// RUN: recur-opt %s --convert-recur-to-loops="scan-group=1 scan-unroll-bytes=48" --recur-reference-to-llvm \
// RUN: | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN: | FileCheck %s
// RUN: recur-opt %s --convert-recur-to-loops="scan-group=1 scan-unroll-bytes=128" --recur-reference-to-llvm \
// RUN: | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN: | FileCheck %s

// Spread (scan-spread, the CUDA pipeline's for few channels): each scan
// here has one channel; those longer than a chunk go in chunks of 2 steps
// (their carries a scan of their own, in chunks of 2 again when longer
// than 2), and of 3 steps with 2 an iteration:
// RUN: recur-opt %s --convert-recur-to-loops="scan-group=1 scan-spread=8 scan-spread-chunk=2" --recur-reference-to-llvm \
// RUN: | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN: | FileCheck %s
// RUN: recur-opt %s --convert-recur-to-loops="scan-group=1 scan-spread=8 scan-spread-chunk=3 scan-unroll-bytes=32" --recur-reference-to-llvm \
// RUN: | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN: | FileCheck %s
// By warps (scan-warps, emulated: a warp's 32 lanes side by side), one
// partial round of 32 steps, and with 4 rounds loaded ahead
// (scan-unroll-bytes=512 of complex<f64>):
// RUN: recur-opt %s --convert-recur-to-loops="scan-group=1 scan-spread=8 scan-spread-chunk=2 scan-warps-emulated" --recur-reference-to-llvm \
// RUN: | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN: | FileCheck %s
// RUN: recur-opt %s --convert-recur-to-loops="scan-group=1 scan-spread=8 scan-spread-chunk=2 scan-unroll-bytes=512 scan-warps-emulated" --recur-reference-to-llvm \
// RUN: | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN: | FileCheck %s

// Complex recurrences (GateLoop's transitions) in f64 through the reference
// lowering, checked against values worked out by hand.

// Prints "re im" for every element of a 1-D complex tensor.
func.func @print_complex(%t: tensor<?xcomplex<f64>>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = tensor.dim %t, %c0 : tensor<?xcomplex<f64>>
  scf.for %i = %c0 to %n step %c1 {
    %z = tensor.extract %t[%i] : tensor<?xcomplex<f64>>
    %re = complex.re %z : complex<f64>
    %im = complex.im %z : complex<f64>
    vector.print %re : f64 punctuation <comma>
    vector.print %im : f64
  }
  return
}

func.func @main() {
  // A rotation: a = i, b = 1, h_{-1} = 0:
  //   h0 = 1, h1 = i*1 + 1 = 1+i, h2 = i(1+i) + 1 = i, h3 = i*i + 1 = 0.
  %a = complex.constant [0.0 : f64, 1.0 : f64] : complex<f64>
  %b = complex.constant [1.0 : f64, 0.0 : f64] : complex<f64>
  %as = tensor.splat %a : tensor<4xcomplex<f64>>
  %bs = tensor.splat %b : tensor<4xcomplex<f64>>
  %h, %last = recur.linear_scan %as, %bs along 0
      : tensor<4xcomplex<f64>>, tensor<4xcomplex<f64>>
  // CHECK: 1, 0
  // CHECK-NEXT: 1, 1
  // CHECK-NEXT: 0, 1
  // CHECK-NEXT: 0, 0
  %hd = tensor.cast %h : tensor<4xcomplex<f64>> to tensor<?xcomplex<f64>>
  call @print_complex(%hd) : (tensor<?xcomplex<f64>>) -> ()

  // A real decay 0.5 of a complex state from init 4 - 2i with b = 2i:
  //   h0 = 2 - i + 2i = 2 + i, h1 = 1 + 0.5i + 2i = 1 + 2.5i,
  //   h2 = 0.5 + 1.25i + 2i = 0.5 + 3.25i.
  %ra = arith.constant dense<0.5> : tensor<3xf64>
  %rb0 = complex.constant [0.0 : f64, 2.0 : f64] : complex<f64>
  %rb = tensor.splat %rb0 : tensor<3xcomplex<f64>>
  %init0 = complex.constant [4.0 : f64, -2.0 : f64] : complex<f64>
  %init = tensor.splat %init0 : tensor<complex<f64>>
  %rh, %rlast = recur.linear_scan %ra, %rb init(%init : tensor<complex<f64>>)
      along 0 : tensor<3xf64>, tensor<3xcomplex<f64>>
  // CHECK: 2, 1
  // CHECK-NEXT: 1, 2.5
  // CHECK-NEXT: 0.5, 3.25
  %rhd = tensor.cast %rh : tensor<3xcomplex<f64>> to tensor<?xcomplex<f64>>
  call @print_complex(%rhd) : (tensor<?xcomplex<f64>>) -> ()
  // The final state is h2.
  // CHECK-NEXT: 0.5, 3.25
  %c0 = arith.constant 0 : index
  %rl0 = tensor.extract %rlast[] : tensor<complex<f64>>
  %rl = tensor.from_elements %rl0 : tensor<1xcomplex<f64>>
  %rld = tensor.cast %rl : tensor<1xcomplex<f64>> to tensor<?xcomplex<f64>>
  call @print_complex(%rld) : (tensor<?xcomplex<f64>>) -> ()

  // Every step its own a and b (length 5, a prime), so a step that took
  // another step's input would show:
  //   a = i, 1, -1, 0.5, i;  b = 1, i, 1, 2, -i;  h_{-1} = 0:
  //   h0 = 1, h1 = 1 + i, h2 = -(1 + i) + 1 = -i, h3 = 0.5(-i) + 2 = 2 - 0.5i,
  //   h4 = i(2 - 0.5i) - i = 0.5 + i.
  %zi = complex.constant [0.0 : f64, 1.0 : f64] : complex<f64>
  %zmi = complex.constant [0.0 : f64, -1.0 : f64] : complex<f64>
  %z1 = complex.constant [1.0 : f64, 0.0 : f64] : complex<f64>
  %zm1 = complex.constant [-1.0 : f64, 0.0 : f64] : complex<f64>
  %zh = complex.constant [0.5 : f64, 0.0 : f64] : complex<f64>
  %z2 = complex.constant [2.0 : f64, 0.0 : f64] : complex<f64>
  %va = tensor.from_elements %zi, %z1, %zm1, %zh, %zi : tensor<5xcomplex<f64>>
  %vb = tensor.from_elements %z1, %zi, %z1, %z2, %zmi : tensor<5xcomplex<f64>>
  %vh, %vlast = recur.linear_scan %va, %vb along 0
      : tensor<5xcomplex<f64>>, tensor<5xcomplex<f64>>
  // CHECK-NEXT: 1, 0
  // CHECK-NEXT: 1, 1
  // CHECK-NEXT: 0, -1
  // CHECK-NEXT: 2, -0.5
  // CHECK-NEXT: 0.5, 1
  %vhd = tensor.cast %vh : tensor<5xcomplex<f64>> to tensor<?xcomplex<f64>>
  call @print_complex(%vhd) : (tensor<?xcomplex<f64>>) -> ()
  return
}
