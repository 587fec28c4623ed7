// Host code as MLIR's gpu-to-llvm lowering (LLVM 22) emits it, built into
// RecurCudaHostCode by test/unit/CudaTests.cmake: a module constructor
// loads the kernel image, and @fill_on_device allocates device memory,
// zeroes it, launches fill_f32 on 4 x 4 threads for the first 12 elements,
// copies the result into %out and frees the buffer, through the mgpu*
// functions librecur_rt defines. The image is one of the fake driver's
// (test/unit/FakeCudaDriver.cpp); the kernel takes bare pointers.
module attributes {gpu.container_module} {
  gpu.binary @kernels [#gpu.object<#nvvm.target, "//fake-cuda: fill_f32\00">]
  func.func @fill_on_device(%out: memref<16xf32>, %value: f32) {
    %c1 = arith.constant 1 : index
    %c4 = arith.constant 4 : index
    %n = arith.constant 12 : i32
    %zero = arith.constant 0.0 : f32
    %t0 = gpu.wait async
    %buffer, %t1 = gpu.alloc async [%t0] () : memref<16xf32>
    %t2 = gpu.memset async [%t1] %buffer, %zero : memref<16xf32>, f32
    %t3 = gpu.launch_func async [%t2] @kernels::@fill_f32
        blocks in (%c4, %c1, %c1) threads in (%c4, %c1, %c1)
        args(%buffer : memref<16xf32>, %value : f32, %n : i32)
    %t4 = gpu.memcpy async [%t3] %out, %buffer : memref<16xf32>, memref<16xf32>
    %t5 = gpu.dealloc async [%t4] %buffer : memref<16xf32>
    gpu.wait [%t5]
    return
  }
}
