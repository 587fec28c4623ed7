// RUN: recur-opt %s --split-input-file --verify-diagnostics \
// RUN:   --pass-pipeline='builtin.module(func.func(recur-gpu-offload{block-threads=256}))' \
// RUN:   | FileCheck %s

// A parallel loop tagged recur.gpu_block (linear_scan's block form,
// scan-blocks) is a launch of a block per iteration, of as many threads as
// its widest loop tagged recur.block_threads (64 here, whatever
// block-threads says). Each loop of threads is iteration i in thread i
// (skipped past its end), between barriers; the buffers the body
// allocates are the block's (workgroup attributions, their deallocations
// gone); a run of ops that write memory (with the pure ops after it) runs
// in thread 0 alone, between barriers, and a value it computes that later
// ops use comes to every thread through a one-element block buffer; the
// rest (index arithmetic, reads) runs alike in every thread. The ops
// tagged recur.fence_before / recur.fence_after get an llvm.fence
// syncscope("device") acq_rel before / after them.

// CHECK-LABEL: func.func @tiles
// CHECK: arith.maxsi
// CHECK-NEXT: arith.muli
// CHECK-NEXT: %[[C64:.*]] = arith.constant 64 : index
// CHECK-NEXT: arith.cmpi sgt
// CHECK-NEXT: scf.if
// CHECK-NEXT: arith.constant 1 : index
// CHECK-NEXT: gpu.launch blocks(%[[BID:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[N:[^,]*]], %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) threads(%[[T:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C64]],
// CHECK-SAME: workgroup(%[[BUF:.*]] : memref<64xf32, #gpu.address_space<workgroup>>, %[[SUM:.*]] : memref<32xf32, #gpu.address_space<workgroup>>, %[[SLOT:.*]] : memref<1xf32, #gpu.address_space<workgroup>>) {
// The block's index.
// CHECK-NEXT: %[[SCALED:.*]] = arith.muli %[[BID]], %{{.*}} : index
// CHECK-NEXT: %[[B:.*]] = arith.addi %{{.*}}, %[[SCALED]] : index
// The loads: thread i of 64.
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: %[[IN:.*]] = arith.cmpi ult, %[[T]], %{{.*}} : index
// CHECK-NEXT: scf.if %[[IN]] {
// CHECK: memref.load %{{.*}}[%[[B]], %[[T]]] : memref<?x64xf32>
// CHECK: memref.store %{{.*}}, %[[BUF]][%[[T]]] : memref<64xf32, #gpu.address_space<workgroup>>
// CHECK: }
// CHECK-NEXT: gpu.barrier
// The sums: 32 of the 64 threads.
// CHECK-NEXT: %[[IN2:.*]] = arith.cmpi ult, %[[T]], %{{.*}} : index
// CHECK-NEXT: scf.if %[[IN2]] {
// CHECK: memref.store %{{.*}}, %[[SUM]][%[[T]]]
// CHECK: }
// CHECK-NEXT: gpu.barrier
// The total, a read, in every thread (no barrier after it: nothing
// written since the last); then, in thread 0, its publication and the
// previous total, shared.
// CHECK-NEXT: %[[TOTAL:.*]] = scf.for
// CHECK: gpu.barrier
// CHECK-NEXT: %[[Z:.*]] = arith.constant 0 : index
// CHECK-NEXT: %[[FIRST:.*]] = arith.cmpi eq, %[[T]], %[[Z]] : index
// CHECK-NEXT: scf.if %[[FIRST]] {
// CHECK-NEXT: %[[OLD:.*]] = memref.atomic_rmw assign %[[TOTAL]]
// CHECK-NEXT: llvm.fence syncscope("device") acq_rel
// CHECK-NEXT: memref.atomic_rmw assign %{{.*}}, %{{.*}} {recur.fence_before}
// CHECK-NEXT: memref.atomic_rmw ori %{{.*}}, %{{.*}} {recur.fence_after}
// CHECK-NEXT: llvm.fence syncscope("device") acq_rel
// CHECK-NEXT: memref.store %[[OLD]], %[[SLOT]][%[[Z]]]
// CHECK-NEXT: }
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: %[[PREV:.*]] = memref.load %[[SLOT]][%[[Z]]]
// Every thread scales its element by the total, plus the previous one.
// CHECK-NEXT: arith.cmpi ult
// CHECK-NEXT: scf.if
// CHECK-NEXT: memref.load %[[BUF]][%[[T]]]
// CHECK-NEXT: arith.mulf %{{.*}}, %[[TOTAL]] : f32
// CHECK-NEXT: arith.addf %{{.*}}, %[[PREV]] : f32
// CHECK: memref.store %{{.*}}, %{{.*}}[%[[B]], %[[T]]] : memref<?x64xf32>
// CHECK: gpu.barrier
// CHECK-NEXT: gpu.terminator
// CHECK-NOT: memref.dealloc
// CHECK: return
func.func @tiles(%x: memref<?x64xf32>, %totals: memref<?xf32>,
                 %flags: memref<?xi32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1 : i32
  %n = memref.dim %x, %c0 : memref<?x64xf32>
  scf.parallel (%b) = (%c0) to (%n) step (%c1) {
    %buf = memref.alloc() : memref<64xf32>
    %sum = memref.alloc() : memref<32xf32>
    scf.for %t = %c0 to %c64 step %c1 {
      %v = memref.load %x[%b, %t] : memref<?x64xf32>
      memref.store %v, %buf[%t] : memref<64xf32>
    } {recur.block_threads}
    scf.for %t = %c0 to %c32 step %c1 {
      %t2 = arith.muli %t, %c2 : index
      %t3 = arith.addi %t2, %c1 : index
      %u = memref.load %buf[%t2] : memref<64xf32>
      %v = memref.load %buf[%t3] : memref<64xf32>
      %s = arith.addf %u, %v : f32
      memref.store %s, %sum[%t] : memref<32xf32>
    } {recur.block_threads}
    %total = scf.for %i = %c0 to %c32 step %c1 iter_args(%acc = %zero) -> f32 {
      %v = memref.load %sum[%i] : memref<32xf32>
      %s = arith.addf %acc, %v : f32
      scf.yield %s : f32
    }
    %old = memref.atomic_rmw assign %total, %totals[%b] : (f32, memref<?xf32>) -> f32
    %flag = memref.atomic_rmw assign %one, %flags[%b] {recur.fence_before} : (i32, memref<?xi32>) -> i32
    %seen = memref.atomic_rmw ori %one, %flags[%b] {recur.fence_after} : (i32, memref<?xi32>) -> i32
    scf.for %t = %c0 to %c64 step %c1 {
      %v = memref.load %buf[%t] : memref<64xf32>
      %w = arith.mulf %v, %total : f32
      %w2 = arith.addf %w, %old : f32
      memref.store %w2, %x[%b, %t] : memref<?x64xf32>
    } {recur.block_threads}
    memref.dealloc %buf : memref<64xf32>
    memref.dealloc %sum : memref<32xf32>
    scf.reduce
  } {recur.gpu_block}
  return
}

// -----

// The threads of a block inside a loop of the block's level: every thread
// runs the loop, a barrier at the end of each iteration. The loop may run
// no iteration (%m = 0), so the write after it, which every thread's read
// before it must precede, still gets its barrier.

// CHECK-LABEL: func.func @rounds
// CHECK: gpu.launch
// CHECK: memref.load %{{.*}} : memref<?xf32>
// CHECK-NEXT: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: arith.cmpi ult
// CHECK-NEXT: scf.if
// CHECK: gpu.barrier
// CHECK-NEXT: }
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: arith.constant 0 : index
// CHECK-NEXT: arith.cmpi eq
// CHECK-NEXT: scf.if
// CHECK-NEXT: memref.store
func.func @rounds(%x: memref<?x8x128xf32>, %y: memref<?xf32>, %m: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c128 = arith.constant 128 : index
  %one = arith.constant 1.0 : f32
  %n = memref.dim %x, %c0 : memref<?x8x128xf32>
  scf.parallel (%b) = (%c0) to (%n) step (%c1) {
    %v0 = memref.load %y[%b] : memref<?xf32>
    scf.for %r = %c0 to %m step %c1 {
      scf.for %t = %c0 to %c128 step %c1 {
        %v = memref.load %x[%b, %r, %t] : memref<?x8x128xf32>
        %w = arith.addf %v, %v0 : f32
        memref.store %w, %x[%b, %r, %t] : memref<?x8x128xf32>
      } {recur.block_threads}
    }
    memref.store %one, %y[%b] : memref<?xf32>
    scf.reduce
  } {recur.gpu_block}
  return
}

// -----

func.func @dynamic_threads(%x: memref<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %n = memref.dim %x, %c0 : memref<?x?xf32>
  %m = memref.dim %x, %c1 : memref<?x?xf32>
  scf.parallel (%b) = (%c0) to (%n) step (%c1) {
    // expected-error @+1 {{cannot run on the GPU: the threads of a block must be a loop from 0 to at most 1024 step 1 at the block's level}}
    scf.for %t = %c0 to %m step %c1 {
      %v = memref.load %x[%b, %t] : memref<?x?xf32>
      memref.store %v, %x[%b, %t] : memref<?x?xf32>
    } {recur.block_threads}
    scf.reduce
  } {recur.gpu_block}
  return
}

// -----

func.func @nested_threads(%x: memref<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c64 = arith.constant 64 : index
  %n = memref.dim %x, %c0 : memref<?x64xf32>
  scf.parallel (%b) = (%c0) to (%n) step (%c1) {
    scf.for %t = %c0 to %c64 step %c1 {
      // expected-error @+1 {{cannot run on the GPU: the threads of a block must be a loop from 0 to at most 1024 step 1 at the block's level}}
      scf.for %u = %c0 to %c2 step %c1 {
        %v = memref.load %x[%b, %t] : memref<?x64xf32>
        memref.store %v, %x[%b, %t] : memref<?x64xf32>
      } {recur.block_threads}
    } {recur.block_threads}
    scf.reduce
  } {recur.gpu_block}
  return
}

// -----

func.func @dynamic_buffer(%x: memref<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %n = memref.dim %x, %c0 : memref<?x64xf32>
  scf.parallel (%b) = (%c0) to (%n) step (%c1) {
    // expected-error @+1 {{cannot run on the GPU: a block's buffer 'memref<?xf32>' of dynamic shape}}
    %buf = memref.alloc(%n) : memref<?xf32>
    scf.for %t = %c0 to %c64 step %c1 {
      %v = memref.load %x[%b, %t] : memref<?x64xf32>
      memref.store %v, %buf[%t] : memref<?xf32>
    } {recur.block_threads}
    memref.dealloc %buf : memref<?xf32>
    scf.reduce
  } {recur.gpu_block}
  return
}

// -----

func.func @foreign_free(%x: memref<?x64xf32>, %y: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %n = memref.dim %x, %c0 : memref<?x64xf32>
  scf.parallel (%b) = (%c0) to (%n) step (%c1) {
    scf.for %t = %c0 to %c64 step %c1 {
      %v = memref.load %x[%b, %t] : memref<?x64xf32>
      memref.store %v, %x[%b, %t] : memref<?x64xf32>
    } {recur.block_threads}
    // expected-error @+1 {{cannot run on the GPU: a block frees a buffer it did not allocate}}
    memref.dealloc %y : memref<8xf32>
    scf.reduce
  } {recur.gpu_block}
  return
}

// -----

func.func @carried(%x: memref<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  %n = memref.dim %x, %c0 : memref<?x64xf32>
  scf.parallel (%b) = (%c0) to (%n) step (%c1) {
    // expected-error @+1 {{cannot run on the GPU: the threads of a block inside a loop or branch that carries values}}
    %s = scf.for %r = %c0 to %c4 step %c1 iter_args(%acc = %zero) -> f32 {
      scf.for %t = %c0 to %c64 step %c1 {
        %v = memref.load %x[%b, %t] : memref<?x64xf32>
        memref.store %v, %x[%b, %t] : memref<?x64xf32>
      } {recur.block_threads}
      scf.yield %acc : f32
    }
    scf.reduce
  } {recur.gpu_block}
  return
}

// -----

// A warp's matrix tiles (gla-tiles: vector.contract of 16 x 8 by 8 x 16,
// the transfers of its operands and result) run in every thread of a
// block of one warp, together (convert-vector-to-gpu makes them the warp's
// gpu.subgroup_mma_* ops), with a loop of them: a barrier before the
// loop, which writes a tile, after the threads' writes, and before the
// threads' reads after it; none of it in thread 0 alone.

// CHECK-LABEL: func.func @warp_tiles
// CHECK: gpu.launch
// CHECK-SAME: threads(%[[T:[^,]*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C32:[^,]*]],
// CHECK: scf.if
// CHECK: gpu.barrier
// CHECK-NEXT: scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK-NEXT: vector.transfer_read %{{.*}}[%{{.*}}, %{{.*}}]{{.*}} vector<16x8xf32>
// CHECK-NEXT: vector.transfer_read %{{.*}}[%{{.*}}, %[[J]]]{{.*}} vector<8x16xf32>
// CHECK-NEXT: vector.contract
// CHECK-NEXT: vector.transfer_write
// CHECK-NEXT: {{^ *}}}{{$}}
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: arith.cmpi ult, %[[T]]
// CHECK-NEXT: scf.if
// CHECK: gpu.terminator
func.func @warp_tiles(%x: memref<?x16x32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %pad = arith.constant 0.0 : f32
  %zeros = arith.constant dense<0.0> : vector<16x16xf32>
  %n = memref.dim %x, %c0 : memref<?x16x32xf32>
  scf.parallel (%b) = (%c0) to (%n) step (%c1) {
    %a = memref.alloc() : memref<16x8xf32>
    %w = memref.alloc() : memref<8x32xf32>
    %y = memref.alloc() : memref<16x32xf32>
    scf.for %t = %c0 to %c32 step %c1 {
      %v = memref.load %x[%b, %c0, %t] : memref<?x16x32xf32>
      memref.store %v, %w[%c0, %t] : memref<8x32xf32>
    } {recur.block_threads}
    scf.for %j = %c0 to %c32 step %c16 {
      %ta = vector.transfer_read %a[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x8xf32>, vector<16x8xf32>
      %tw = vector.transfer_read %w[%c0, %j], %pad {in_bounds = [true, true]} : memref<8x32xf32>, vector<8x16xf32>
      %p = vector.contract {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>], iterator_types = ["parallel", "parallel", "reduction"], kind = #vector.kind<add>} %ta, %tw, %zeros : vector<16x8xf32>, vector<8x16xf32> into vector<16x16xf32>
      vector.transfer_write %p, %y[%c0, %j] {in_bounds = [true, true]} : vector<16x16xf32>, memref<16x32xf32>
    }
    scf.for %t = %c0 to %c32 step %c1 {
      %v = memref.load %y[%c1, %t] : memref<16x32xf32>
      memref.store %v, %x[%b, %c1, %t] : memref<?x16x32xf32>
    } {recur.block_threads}
    memref.dealloc %a : memref<16x8xf32>
    memref.dealloc %w : memref<8x32xf32>
    memref.dealloc %y : memref<16x32xf32>
    scf.reduce
  } {recur.gpu_block}
  return
}

// -----

func.func @tiles_of_two_warps(%x: memref<?x64xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %pad = arith.constant 0.0 : f32
  %n = memref.dim %x, %c0 : memref<?x64xf32>
  scf.parallel (%b) = (%c0) to (%n) step (%c1) {
    %y = memref.alloc() : memref<16x16xf32>
    scf.for %t = %c0 to %c64 step %c1 {
      %v = memref.load %x[%b, %t] : memref<?x64xf32>
      memref.store %v, %x[%b, %t] : memref<?x64xf32>
    } {recur.block_threads}
    // expected-error @+1 {{cannot run on the GPU: a warp's matrix tiles in blocks of 64 threads (they take blocks of one warp, 32)}}
    %m = vector.transfer_read %y[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x16xf32>, vector<16x16xf32>
    vector.transfer_write %m, %y[%c0, %c0] {in_bounds = [true, true]} : vector<16x16xf32>, memref<16x16xf32>
    memref.dealloc %y : memref<16x16xf32>
    scf.reduce
  } {recur.gpu_block}
  return
}

// -----

func.func @tiles_outside_blocks(%y: memref<16x16xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %pad = arith.constant 0.0 : f32
  scf.parallel (%b) = (%c0) to (%n) step (%c1) {
    // expected-error @+1 {{cannot run on the GPU: a matrix (a warp's tile) outside the level of a block form's blocks}}
    %m = vector.transfer_read %y[%c0, %c0], %pad {in_bounds = [true, true]} : memref<16x16xf32>, vector<16x16xf32>
    vector.transfer_write %m, %y[%c0, %c0] {in_bounds = [true, true]} : vector<16x16xf32>, memref<16x16xf32>
    scf.reduce
  }
  return
}

// -----

func.func @tiles_and_stores(%x: memref<?x32xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c32 = arith.constant 32 : index
  %pad = arith.constant 0.0 : f32
  %n = memref.dim %x, %c0 : memref<?x32xf32>
  scf.parallel (%b) = (%c0) to (%n) step (%c1) {
    %y = memref.alloc() : memref<16x32xf32>
    scf.for %t = %c0 to %c32 step %c1 {
      %v = memref.load %x[%b, %t] : memref<?x32xf32>
      memref.store %v, %x[%b, %t] : memref<?x32xf32>
    } {recur.block_threads}
    // expected-error @+1 {{cannot run on the GPU: a loop or branch of a warp's matrix tiles that writes other memory}}
    scf.for %j = %c0 to %c32 step %c16 {
      %m = vector.transfer_read %y[%c0, %j], %pad {in_bounds = [true, true]} : memref<16x32xf32>, vector<16x16xf32>
      vector.transfer_write %m, %y[%c0, %j] {in_bounds = [true, true]} : vector<16x16xf32>, memref<16x32xf32>
      memref.store %pad, %x[%b, %j] : memref<?x32xf32>
    }
    memref.dealloc %y : memref<16x32xf32>
    scf.reduce
  } {recur.gpu_block}
  return
}

// -----

func.func @tiles_without_threads(%y: memref<?x16x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %pad = arith.constant 0.0 : f32
  %n = memref.dim %y, %c0 : memref<?x16x16xf32>
  scf.parallel (%b) = (%c0) to (%n) step (%c1) {
    // expected-error @+1 {{cannot run on the GPU: a warp's matrix tiles in blocks of 0 threads (they take blocks of one warp, 32)}}
    %m = vector.transfer_read %y[%b, %c0, %c0], %pad {in_bounds = [true, true]} : memref<?x16x16xf32>, vector<16x16xf32>
    vector.transfer_write %m, %y[%b, %c0, %c0] {in_bounds = [true, true]} : vector<16x16xf32>, memref<?x16x16xf32>
    scf.reduce
  } {recur.gpu_block}
  return
}
