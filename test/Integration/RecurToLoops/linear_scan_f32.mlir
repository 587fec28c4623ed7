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

// One channel at a time with 2, 3 and 8 steps an iteration (8, 12 and 32
// bytes of f32), loads first (scan-unroll-bytes, the CUDA pipeline's): whole
// iterations, steps left over, and a length shorter than an iteration:
// RUN: recur-opt %s --convert-recur-to-loops="scan-group=1 scan-unroll-bytes=8" --recur-reference-to-llvm \
// RUN: | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN: | FileCheck %s
// RUN: recur-opt %s --convert-recur-to-loops="scan-group=1 scan-unroll-bytes=12" --recur-reference-to-llvm \
// RUN: | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN: | FileCheck %s
// RUN: recur-opt %s --convert-recur-to-loops="scan-group=1 scan-unroll-bytes=32" --recur-reference-to-llvm \
// RUN: | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN: | FileCheck %s

// Spread (scan-spread, the CUDA pipeline's for few channels): a scan of at
// most 16 / 8 = 2 channels and more than 2 steps in chunks of max(2,
// ceil(T c / 16)) steps, their carries a scan of their own, spread again
// when longer than 2 (the 2 x 4099 scan: 8 chunks of 513, their carries 4
// chunks of 2, those one at a time); the 4-channel matrix state and the
// scan of one step one channel at a time. With 64 threads every scan here
// but the one of one step is spread, with 2 steps an iteration, loads
// first (chunks of 129 for the 2 x 4099 scan, and a chunk of one step at
// the end of 5: a step left over):
// RUN: recur-opt %s --convert-recur-to-loops="scan-group=1 scan-spread=16 scan-spread-chunk=2" --recur-reference-to-llvm \
// RUN: | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN: | FileCheck %s
// RUN: recur-opt %s --convert-recur-to-loops="scan-group=1 scan-spread=64 scan-spread-chunk=2 scan-unroll-bytes=8" --recur-reference-to-llvm \
// RUN: | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN: | FileCheck %s
//
// The same by warps (scan-warps, emulated: a warp's 32 lanes side by side),
// chunks of 32 steps a round (the 2 x 4099 scan: max(2, ceil(32 * 8198 /
// 64)) = 4099 rounded up to 4128 steps, one chunk a channel, 128 whole
// rounds and 3 steps), and with scan-unroll-bytes=256 8 rounds loaded
// ahead (256 steps at a time: 16 whole iterations and 3 steps):
// RUN: recur-opt %s --convert-recur-to-loops="scan-group=1 scan-spread=64 scan-spread-chunk=2 scan-warps-emulated" --recur-reference-to-llvm \
// RUN: | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN: | FileCheck %s
// RUN: recur-opt %s --convert-recur-to-loops="scan-group=1 scan-spread=64 scan-spread-chunk=2 scan-unroll-bytes=256 scan-warps-emulated" --recur-reference-to-llvm \
// RUN: | mlir-runner -e main -entry-point-result=void -shared-libs=%mlir_runner_libs \
// RUN: | FileCheck %s

// Executes recur.linear_scan through the scalar reference lowering and checks
// the states against values worked out by hand (in the comments). Inputs are
// dyadic so every value is exact in f32.

func.func private @printMemrefF32(tensor<*xf32>)

func.func @print(%t: tensor<*xf32>) {
  call @printMemrefF32(%t) : (tensor<*xf32>) -> ()
  return
}

func.func @main() {
  // Forward with init, length 5 (a prime), two rows.
  //   row 0: h = 0.5*2+1 = 2, 0.5*2+2 = 3, 2*3+0.25 = 6.25, 1*6.25-1 = 5.25,
  //          0*5.25+3 = 3 (a = 0 resets: the last state ignores the past)
  //   row 1: a = -1, b = 1, h_{-1} = 0: 1, 0, 1, 0, 1
  %a = arith.constant dense<[[0.5, 0.5, 2.0, 1.0, 0.0],
                             [-1.0, -1.0, -1.0, -1.0, -1.0]]> : tensor<2x5xf32>
  %b = arith.constant dense<[[1.0, 2.0, 0.25, -1.0, 3.0],
                             [1.0, 1.0, 1.0, 1.0, 1.0]]> : tensor<2x5xf32>
  %h0 = arith.constant dense<[2.0, 0.0]> : tensor<2xf32>
  %h, %last = recur.linear_scan %a, %b init(%h0 : tensor<2xf32>) along 1
      : tensor<2x5xf32>, tensor<2x5xf32>
  // CHECK: sizes = [2, 5]
  // CHECK-NEXT: {{\[}}[2,   3,   6.25,   5.25,   3],
  // CHECK-NEXT: [1,   0,   1,   0,   1]]
  %hu = tensor.cast %h : tensor<2x5xf32> to tensor<*xf32>
  call @print(%hu) : (tensor<*xf32>) -> ()
  // CHECK: sizes = [2]
  // CHECK-NEXT: [3,  1]
  %lu = tensor.cast %last : tensor<2xf32> to tensor<*xf32>
  call @print(%lu) : (tensor<*xf32>) -> ()

  // Reverse, no init, row 0 only: h_t = a_t h_{t+1} + b_t from t = 4 down:
  //   h4 = 3, h3 = 3-1 = 2, h2 = 2*2+0.25 = 4.25, h1 = 0.5*4.25+2 = 4.125,
  //   h0 = 0.5*4.125+1 = 3.0625; the final state is h0.
  %ra = tensor.extract_slice %a[0, 0] [1, 5] [1, 1]
      : tensor<2x5xf32> to tensor<1x5xf32>
  %rb = tensor.extract_slice %b[0, 0] [1, 5] [1, 1]
      : tensor<2x5xf32> to tensor<1x5xf32>
  %rh, %rlast = recur.linear_scan %ra, %rb along 1 reverse
      : tensor<1x5xf32>, tensor<1x5xf32>
  // CHECK: sizes = [1, 5]
  // CHECK-NEXT: {{\[}}[3.0625,   4.125,   4.25,   2,   3]]
  %rhu = tensor.cast %rh : tensor<1x5xf32> to tensor<*xf32>
  call @print(%rhu) : (tensor<*xf32>) -> ()
  // CHECK: sizes = [1]
  // CHECK-NEXT: [3.0625]
  %rlu = tensor.cast %rlast : tensor<1xf32> to tensor<*xf32>
  call @print(%rlu) : (tensor<*xf32>) -> ()

  // Length 1: h = 7 * 4 + 0.5.
  %oa = arith.constant dense<[[7.0]]> : tensor<1x1xf32>
  %ob = arith.constant dense<[[0.5]]> : tensor<1x1xf32>
  %oh0 = arith.constant dense<[4.0]> : tensor<1xf32>
  %oh, %olast = recur.linear_scan %oa, %ob init(%oh0 : tensor<1xf32>) along 1
      : tensor<1x1xf32>, tensor<1x1xf32>
  // CHECK: sizes = [1, 1]
  // CHECK-NEXT: {{\[}}[28.5]]
  %ohu = tensor.cast %oh : tensor<1x1xf32> to tensor<*xf32>
  call @print(%ohu) : (tensor<*xf32>) -> ()

  // Outer-product matrix state [batch 1, T 3, dk 2, dv 2] with a = (0.5, 2)
  // per key index, broadcast over dv, and b = 1:
  //   i = 0: 1, 0.5+1 = 1.5, 0.75+1 = 1.75;  i = 1: 1, 2+1 = 3, 6+1 = 7.
  %ma = arith.constant dense<[[[0.5, 2.0], [0.5, 2.0], [0.5, 2.0]]]>
      : tensor<1x3x2xf32>
  %mb = arith.constant dense<1.0> : tensor<1x3x2x2xf32>
  %mh, %mlast = recur.linear_scan %ma, %mb along 1
      : tensor<1x3x2xf32>, tensor<1x3x2x2xf32>
  // CHECK: sizes = [1, 3, 2, 2]
  // CHECK-NEXT: {{\[}}[{{\[}}[1,     1],
  // CHECK-NEXT: [1,     1]],
  // CHECK-NEXT: {{\[}}[1.5,     1.5],
  // CHECK-NEXT: [3,     3]],
  // CHECK-NEXT: {{\[}}[1.75,     1.75],
  // CHECK-NEXT: [7,     7]]]]
  %mhu = tensor.cast %mh : tensor<1x3x2x2xf32> to tensor<*xf32>
  call @print(%mhu) : (tensor<*xf32>) -> ()

  // A long run: 4099 steps of h = h + 1 (exact in f32) end at 4099; a
  // decay of 0.5 over 4099 steps with b = 1 converges to exactly 2 in f32
  // with no NaN or inf.
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  %half = arith.constant 0.5 : f32
  %la = tensor.generate {
  ^bb0(%i: index, %t: index):
    %first = arith.cmpi eq, %i, %c0 : index
    %v = arith.select %first, %one, %half : f32
    tensor.yield %v : f32
  } : tensor<2x4099xf32>
  %lb = arith.constant dense<1.0> : tensor<2x4099xf32>
  %lh, %llast = recur.linear_scan %la, %lb along 1
      : tensor<2x4099xf32>, tensor<2x4099xf32>
  // CHECK: sizes = [2]
  // CHECK-NEXT: [4099,  2]
  %llu = tensor.cast %llast : tensor<2xf32> to tensor<*xf32>
  call @print(%llu) : (tensor<*xf32>) -> ()
  return
}
