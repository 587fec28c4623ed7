// RUN: recur-opt %s --recur-merge-gpu-kernels | FileCheck %s

// Outlined modules holding the same kernel (named after their launches)
// become one: the launches of the second and fourth launch the first's
// kernel. The third scales by another constant, the fifth reads another
// global, the sixth is the first kernel with another attribute: they stay.

// CHECK-LABEL: module attributes {gpu.container_module}
// CHECK: gpu.module @f_kernel {
// CHECK: gpu.func @f_kernel(
// CHECK-NOT: gpu.module @f_kernel_0
// CHECK: gpu.module @f_kernel_1 {
// CHECK: arith.constant 3.000000e+00
// CHECK-NOT: gpu.module @f_backward_kernel
// CHECK: gpu.module @f_kernel_2 {
// CHECK: memref.global "private" constant @table : memref<2xf32> = dense<[1.000000e+00, 2.000000e+00]>
// CHECK: gpu.module @f_kernel_3 {
// CHECK: memref.global "private" constant @table : memref<2xf32> = dense<[1.000000e+00, 5.000000e+00]>
// CHECK: gpu.module @f_kernel_4 {
// CHECK: gpu.func @f_kernel_4({{.*}}) kernel attributes {known_block_size = array<i32: 128, 1, 1>}
// CHECK-LABEL: func.func @f(
// CHECK: gpu.launch_func @f_kernel::@f_kernel
// CHECK: gpu.launch_func @f_kernel::@f_kernel
// CHECK: gpu.launch_func @f_kernel_1::@f_kernel
// CHECK: gpu.launch_func @f_kernel::@f_kernel
// CHECK: gpu.launch_func @f_kernel_2::@f_kernel
// CHECK: gpu.launch_func @f_kernel_3::@f_kernel
// CHECK: gpu.launch_func @f_kernel_4::@f_kernel_4

module attributes {gpu.container_module} {
  gpu.module @f_kernel {
    gpu.func @f_kernel(%m: memref<4xf32>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %m[%i] : memref<4xf32>
      %c = arith.constant 2.0 : f32
      %w = arith.mulf %v, %c : f32
      memref.store %w, %m[%i] : memref<4xf32>
      gpu.return
    }
  }
  gpu.module @f_kernel_0 {
    gpu.func @f_kernel(%m: memref<4xf32>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %m[%i] : memref<4xf32>
      %c = arith.constant 2.0 : f32
      %w = arith.mulf %v, %c : f32
      memref.store %w, %m[%i] : memref<4xf32>
      gpu.return
    }
  }
  gpu.module @f_kernel_1 {
    gpu.func @f_kernel(%m: memref<4xf32>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %m[%i] : memref<4xf32>
      %c = arith.constant 3.0 : f32
      %w = arith.mulf %v, %c : f32
      memref.store %w, %m[%i] : memref<4xf32>
      gpu.return
    }
  }
  gpu.module @f_backward_kernel {
    gpu.func @f_backward_kernel(%m: memref<4xf32>) kernel {
      %i = gpu.thread_id x
      %v = memref.load %m[%i] : memref<4xf32>
      %c = arith.constant 2.0 : f32
      %w = arith.mulf %v, %c : f32
      memref.store %w, %m[%i] : memref<4xf32>
      gpu.return
    }
  }
  gpu.module @f_kernel_2 {
    memref.global "private" constant @table : memref<2xf32> = dense<[1.0, 2.0]>
    gpu.func @f_kernel(%m: memref<4xf32>) kernel {
      %i = gpu.thread_id x
      %t = memref.get_global @table : memref<2xf32>
      %c0 = arith.constant 0 : index
      %c = memref.load %t[%c0] : memref<2xf32>
      memref.store %c, %m[%i] : memref<4xf32>
      gpu.return
    }
  }
  gpu.module @f_kernel_3 {
    memref.global "private" constant @table : memref<2xf32> = dense<[1.0, 5.0]>
    gpu.func @f_kernel(%m: memref<4xf32>) kernel {
      %i = gpu.thread_id x
      %t = memref.get_global @table : memref<2xf32>
      %c0 = arith.constant 0 : index
      %c = memref.load %t[%c0] : memref<2xf32>
      memref.store %c, %m[%i] : memref<4xf32>
      gpu.return
    }
  }
  gpu.module @f_kernel_4 {
    gpu.func @f_kernel_4(%m: memref<4xf32>) kernel attributes {known_block_size = array<i32: 128, 1, 1>} {
      %i = gpu.thread_id x
      %v = memref.load %m[%i] : memref<4xf32>
      %c = arith.constant 2.0 : f32
      %w = arith.mulf %v, %c : f32
      memref.store %w, %m[%i] : memref<4xf32>
      gpu.return
    }
  }
  func.func @f(%m: memref<4xf32>) {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    gpu.launch_func @f_kernel::@f_kernel blocks in (%c1, %c1, %c1) threads in (%c4, %c1, %c1) args(%m : memref<4xf32>)
    gpu.launch_func @f_kernel_0::@f_kernel blocks in (%c1, %c1, %c1) threads in (%c4, %c1, %c1) args(%m : memref<4xf32>)
    gpu.launch_func @f_kernel_1::@f_kernel blocks in (%c1, %c1, %c1) threads in (%c4, %c1, %c1) args(%m : memref<4xf32>)
    gpu.launch_func @f_backward_kernel::@f_backward_kernel blocks in (%c1, %c1, %c1) threads in (%c4, %c1, %c1) args(%m : memref<4xf32>)
    gpu.launch_func @f_kernel_2::@f_kernel blocks in (%c1, %c1, %c1) threads in (%c4, %c1, %c1) args(%m : memref<4xf32>)
    gpu.launch_func @f_kernel_3::@f_kernel blocks in (%c1, %c1, %c1) threads in (%c4, %c1, %c1) args(%m : memref<4xf32>)
    gpu.launch_func @f_kernel_4::@f_kernel_4 blocks in (%c1, %c1, %c1) threads in (%c4, %c1, %c1) args(%m : memref<4xf32>)
    return
  }
}
