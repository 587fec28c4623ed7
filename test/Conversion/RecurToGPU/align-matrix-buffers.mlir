// RUN: recur-opt %s --recur-merge-gpu-kernels | FileCheck %s

// recur-merge-gpu-kernels gives a kernel's block buffers of rank 2 or more
// (the tiles of a warp's products, which wmma loads and stores at 256-bit
// aligned addresses) an alignment of 32 bytes; a buffer of rank 1 (a
// block form's slot or row) keeps its own.

// CHECK-LABEL: gpu.func @tiles
// CHECK-SAME: workgroup(%{{.*}} : memref<16x16xf32, #gpu.address_space<workgroup>> {llvm.align = 32 : i64}, %{{.*}} : memref<1xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<16x8xf32, #gpu.address_space<workgroup>> {llvm.align = 32 : i64})
module attributes {gpu.container_module} {
  gpu.module @tiles_module {
    gpu.func @tiles(%out: memref<16xf32>)
        workgroup(%a : memref<16x16xf32, #gpu.address_space<workgroup>>,
                  %slot : memref<1xf32, #gpu.address_space<workgroup>>,
                  %b : memref<16x8xf32, #gpu.address_space<workgroup>>)
        kernel {
      %c0 = arith.constant 0 : index
      %x = memref.load %a[%c0, %c0] : memref<16x16xf32, #gpu.address_space<workgroup>>
      %y = memref.load %slot[%c0] : memref<1xf32, #gpu.address_space<workgroup>>
      %z = memref.load %b[%c0, %c0] : memref<16x8xf32, #gpu.address_space<workgroup>>
      %s = arith.addf %x, %y : f32
      %t = arith.addf %s, %z : f32
      memref.store %t, %out[%c0] : memref<16xf32>
      gpu.return
    }
  }
}
