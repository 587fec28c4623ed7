// RUN: recur-opt %s --convert-recur-to-loops="scan-group=1 scan-spread=64 scan-blocks=32 mark-parallel" --canonicalize | FileCheck %s
// RUN: recur-opt %s --pass-pipeline="builtin.module(convert-recur-to-loops{scan-group=1 scan-spread=64 scan-blocks=32 mark-parallel},canonicalize,cse,one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map allow-return-allocs-from-loops},func.func(recur-parallelize-loops),canonicalize)" | FileCheck %s --check-prefix=PAR
// RUN: recur-opt %s --pass-pipeline="builtin.module(convert-recur-to-loops{scan-group=1 scan-spread=64 scan-blocks=32 mark-parallel},canonicalize,cse,one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map allow-return-allocs-from-loops},func.func(recur-parallelize-loops),canonicalize,buffer-deallocation-pipeline,convert-bufferization-to-memref,convert-linalg-to-parallel-loops,func.func(recur-gpu-offload{block-threads=128}))" | FileCheck %s --check-prefix=LAUNCH

// The block form of the spread scan (scan-blocks, recurc's
// --cuda-scan-blocks): where the scan would spread (at most 64 / 8
// channels and more than 256 steps), tiles of 32 threads x 16 f32 steps,
// a block a tile (the loop over the tiles tagged recur.gpu_block), its
// threads the loops tagged recur.block_threads: the loads into two block
// buffers of 512 steps padded to 528, each thread's aggregate, then once
// per block the prefixes and the look-back over the statuses (a flag, the
// aggregates and the end states, allocated around the loop, the flags
// zeroed), the states, the stores. Each channel's last state comes from
// its last tile's status afterwards.

func.func @rows(%a: tensor<?x?xf32>, %x: tensor<?x?xf32>)
    -> (tensor<?x?xf32>, tensor<?xf32>) {
  %h, %last = recur.linear_scan %a, %x along 1
      : tensor<?x?xf32>, tensor<?x?xf32>
  return %h, %last : tensor<?x?xf32>, tensor<?xf32>
}

// CHECK-LABEL: func.func @rows
// CHECK: %[[SPREAD:.*]] = arith.andi
// CHECK: scf.if %[[SPREAD]]
// CHECK: %[[TILES:.*]] = arith.muli %{{.*}}, %{{.*}} : index
// CHECK: %[[FLAGS:.*]] = memref.alloc(%[[TILES]]) : memref<?xi32>
// CHECK-NEXT: linalg.fill ins(%{{.*}} : i32) outs(%[[FLAGS]] : memref<?xi32>)
// CHECK-NEXT: %[[A:.*]] = memref.alloc(%[[TILES]]) : memref<?xi32>
// CHECK-NEXT: %[[X:.*]] = memref.alloc(%[[TILES]]) : memref<?xi32>
// CHECK-NEXT: %[[H:.*]] = memref.alloc(%[[TILES]]) : memref<?xi32>
// CHECK-NEXT: scf.for %[[T:.*]] = %{{.*}} to %[[TILES]]
// CHECK: bufferization.alloc_tensor() : tensor<528xf32>
// CHECK: bufferization.alloc_tensor() : tensor<528xf32>
// CHECK: scf.for %{{.*}} = %c0 to %c32 step %c1 iter_args({{.*}}) -> (tensor<528xf32>, tensor<528xf32>)
// CHECK: } {recur.block_threads}
// CHECK: scf.for %{{.*}} = %c0 to %c32 step %c1 iter_args({{.*}}) -> (tensor<32xf32>, tensor<32xf32>)
// CHECK: } {recur.block_threads}
// CHECK: %[[PRE:.*]]:4 = scf.for %{{.*}} = %c0 to %c32 step %c1 iter_args({{.*}}) -> (tensor<32xf32>, tensor<32xf32>, f32, f32)
// CHECK: %[[ABITS:.*]] = arith.bitcast %[[PRE]]#2 : f32 to i32
// CHECK-NEXT: memref.atomic_rmw assign %[[ABITS]], %[[A]][%[[T]]]
// CHECK: %[[XBITS:.*]] = arith.bitcast %[[PRE]]#3 : f32 to i32
// CHECK-NEXT: memref.atomic_rmw assign %[[XBITS]], %[[X]][%[[T]]]
// CHECK: memref.atomic_rmw assign %{{.*}}, %[[FLAGS]][%[[T]]] {recur.fence_before}
// CHECK: scf.while
// CHECK: scf.while
// CHECK: memref.atomic_rmw ori %{{.*}}, %[[FLAGS]][%{{.*}}]
// CHECK: } attributes {recur.fence_after}
// CHECK: memref.atomic_rmw ori %{{.*}}, %[[A]]
// CHECK: memref.atomic_rmw ori %{{.*}}, %[[X]]
// CHECK: memref.atomic_rmw ori %{{.*}}, %[[H]]
// CHECK: memref.atomic_rmw assign %{{.*}}, %[[H]][%[[T]]]
// CHECK-NEXT: memref.atomic_rmw assign %{{.*}}, %[[FLAGS]][%[[T]]] {recur.fence_before}
// CHECK: scf.for %{{.*}} = %c0 to %c32 step %c1 iter_args({{.*}}) -> (tensor<528xf32>)
// CHECK: } {recur.block_threads}
// CHECK: scf.for %{{.*}} = %c0 to %c32 step %c1 iter_args({{.*}}) -> (tensor<?x?xf32>)
// CHECK: } {recur.block_threads}
// CHECK-NEXT: scf.yield
// CHECK-NEXT: } {recur.gpu_block, recur.parallel}
// CHECK: scf.for
// CHECK: memref.load %[[H]]
// CHECK: } {recur.parallel}

// After bufferization the tiles are an scf.parallel that keeps its tag,
// and the threads loops without results (updating their buffers in place).
// PAR-LABEL: func.func @rows
// PAR: scf.parallel
// PAR: memref.alloc() {alignment = 64 : i64} : memref<528xf32>
// PAR: scf.for %{{.*}} = %c0 to %c32 step %c1 {
// PAR: } {recur.block_threads}
// PAR: } {recur.gpu_block}

// A launch of a block a tile, of 32 threads: six barriers around the
// threads' four loops and the run of thread 0 (the prefixes, the
// look-back, the publication), the block buffers in shared memory.
// LAUNCH-LABEL: func.func @rows
// The flags zeroed by a launch of 128-thread blocks, then the tiles:
// LAUNCH: gpu.launch {{.*}} threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c128
// LAUNCH: gpu.launch {{.*}} threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c32
// LAUNCH-SAME: workgroup(%{{.*}} : memref<528xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<528xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<32xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<32xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<1xf32, #gpu.address_space<workgroup>>)
// LAUNCH-COUNT-6: gpu.barrier
// LAUNCH-NOT: gpu.barrier
// LAUNCH: gpu.terminator

// A scan that is statically one tile (one channel of at most 32 x 16
// steps) would lose its block when the loop over its one tile folds: it
// takes the spread form (chunks of 256 steps; their carries a scan of
// their own, which takes the spread form too); two channels are two
// tiles.
func.func @one_tile(%a: tensor<300xf32>, %x: tensor<300xf32>)
    -> (tensor<300xf32>, tensor<f32>) {
  %h, %last = recur.linear_scan %a, %x along 0
      : tensor<300xf32>, tensor<300xf32>
  return %h, %last : tensor<300xf32>, tensor<f32>
}

func.func @two_tiles(%a: tensor<2x300xf32>, %x: tensor<2x300xf32>)
    -> (tensor<2x300xf32>, tensor<2xf32>) {
  %h, %last = recur.linear_scan %a, %x along 1
      : tensor<2x300xf32>, tensor<2x300xf32>
  return %h, %last : tensor<2x300xf32>, tensor<2xf32>
}

// CHECK-LABEL: func.func @one_tile
// CHECK-NOT: memref.atomic_rmw
// CHECK-NOT: recur.gpu_block
// CHECK-LABEL: func.func @two_tiles
// CHECK: recur.gpu_block
