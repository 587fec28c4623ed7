// RUN: recur-opt %s --convert-recur-to-loops="scan-group=1 scan-spread=64 scan-warps mark-parallel" --canonicalize | FileCheck %s
// RUN: recur-opt %s --pass-pipeline="builtin.module(convert-recur-to-loops{scan-group=1 scan-spread=64 scan-warps mark-parallel},canonicalize,cse,one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map allow-return-allocs-from-loops},func.func(recur-parallelize-loops),canonicalize)" | FileCheck %s --check-prefix=PAR
// RUN: recur-opt %s --pass-pipeline="builtin.module(convert-recur-to-loops{scan-group=1 scan-spread=64 scan-warps mark-parallel},canonicalize,cse,one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map allow-return-allocs-from-loops},func.func(recur-parallelize-loops),canonicalize)" > %t.par.mlir
// RUN: grep -c '%c32) step (%c1, %c1, %c1)' %t.par.mlir | FileCheck %s --check-prefix=MERGED
// RUN: recur-opt %t.par.mlir --pass-pipeline="builtin.module(buffer-deallocation-pipeline,convert-bufferization-to-memref,func.func(recur-gpu-offload{block-threads=128}))" | FileCheck %s --check-prefix=LAUNCH
// RUN: recur-opt %s --convert-recur-to-loops="scan-group=1 scan-spread=64 scan-warps-emulated mark-parallel" --canonicalize | FileCheck %s --check-prefix=EMU

// The warp form of the spread scan (scan-warps, recurc --cuda-scan-warps):
// chunks of max(256, ceil(32 T c / 64)) steps rounded up to a warp's 32
// steps (one round ahead of f32 without scan-unroll-bytes), and in each
// nest over the channels and chunks an innermost loop over the 32 lanes of
// a warp (tagged recur.warp_lanes). A lane's sweep goes in rounds of 32
// steps: its step composed with the lanes' below by shuffles up of 1, 2,
// 4, 8 and 16 lanes (the decay and the state), the round's decay and the
// carry from lane 31.

func.func @rows(%a: tensor<?x?xf32>, %x: tensor<?x?xf32>)
    -> (tensor<?x?xf32>, tensor<?xf32>) {
  %h, %last = recur.linear_scan %a, %x along 1
      : tensor<?x?xf32>, tensor<?x?xf32>
  return %h, %last : tensor<?x?xf32>, tensor<?xf32>
}

// CHECK-LABEL: func.func @rows
// CHECK: %[[TC:.+]] = arith.muli %{{.+}}, %{{.+}} : index
// CHECK: %[[TC32:.+]] = arith.muli %[[TC]], %c32 : index
// CHECK: %[[PER:.+]] = arith.ceildivui %[[TC32]], %c64 : index
// CHECK: %[[MIN:.+]] = arith.maxui %[[PER]], %c256 : index
// CHECK: %[[ROUNDS:.+]] = arith.ceildivui %[[MIN]], %c32 : index
// CHECK: %[[L:.+]] = arith.muli %[[ROUNDS]], %c32 : index
// CHECK: %[[K:.+]] = arith.ceildivui %{{.+}}, %[[L]] : index
// Each chunk from zero: a warp's lanes innermost.
// CHECK: scf.for %[[C:.+]] = %c0 to %{{.+}} step %c1
// CHECK: scf.for %[[KI:.+]] = %c0 to %[[K]] step %c1
// CHECK: scf.for %[[LANE:.+]] = %c0 to %c32 step %c1
// CHECK: scf.for %{{.+}} = %c0 to %{{.+}} step %c1 iter_args(%[[P:.+]] = %{{.+}}, %[[H:.+]] = %{{.+}}) -> (f32, f32)
// CHECK: %[[A0:.+]] = tensor.extract
// CHECK: %[[X0:.+]] = tensor.extract
// CHECK: gpu.shuffle  up %{{.+}}, %c1_i32, %c32_i32 : f32
// CHECK: gpu.shuffle  up %{{.+}}, %c1_i32, %c32_i32 : f32
// CHECK: arith.cmpi uge, %[[LANE]], %c1 : index
// CHECK: gpu.shuffle  up %{{.+}}, %c2_i32, %c32_i32 : f32
// CHECK: arith.cmpi uge, %[[LANE]], %c2 : index
// CHECK: gpu.shuffle  up %{{.+}}, %c4_i32, %c32_i32 : f32
// CHECK: gpu.shuffle  up %{{.+}}, %c8_i32, %c32_i32 : f32
// CHECK: gpu.shuffle  up %{{.+}}, %c16_i32, %c32_i32 : f32
// CHECK: arith.cmpi uge, %[[LANE]], %c16 : index
// CHECK: %[[DECAY:.+]], %{{.+}} = gpu.shuffle  idx %{{.+}}, %c31_i32, %c32_i32 : f32
// CHECK: arith.mulf %[[DECAY]], %[[P]] : f32
// CHECK: %[[CARRY:.+]], %{{.+}} = gpu.shuffle  idx %{{.+}}, %c31_i32, %c32_i32 : f32
// CHECK: scf.yield %{{.+}}, %[[CARRY]] : f32, f32
// Every lane writes the chunk's decay and end state.
// CHECK: tensor.insert %{{.+}} into %{{.+}}[%[[C]], %[[KI]]]
// CHECK: tensor.insert %{{.+}} into %{{.+}}[%[[C]], %[[KI]]]
// CHECK: } {recur.parallel, recur.warp_lanes}
// CHECK: } {recur.parallel}
// CHECK: } {recur.parallel}
// The carries' scan (level 1) in the same form.
// CHECK: } {recur.parallel, recur.warp_lanes}
// Each chunk again from its carry: a lane writes its step when it is one.
// CHECK: scf.for %{{.+}} = %c0 to %c32 step %c1
// CHECK: %[[IN:.+]] = arith.cmpi ult, %{{.+}}, %{{.+}} : index
// CHECK: gpu.shuffle  up
// CHECK: scf.if %[[IN]] -> (tensor<?x?xf32>)
// CHECK-NEXT: tensor.insert
// CHECK: gpu.shuffle  idx %{{.+}}, %c31_i32, %c32_i32 : f32
// CHECK: } {recur.parallel, recur.warp_lanes}

// After bufferization the lanes are the last dimension of their nest's
// parallel loop (recur-parallelize-loops lets them write the chunk's
// results alike), which recur-gpu-offload launches with the lanes of a
// warp together.
// PAR-LABEL: func.func @rows
// PAR: scf.parallel (%{{.+}}, %{{.+}}, %[[LANE:.+]]) = (%c0, %c0, %c0) to (%{{.+}}, %{{.+}}, %c32) step (%c1, %c1, %c1)
// PAR-NOT: scf.parallel
// PAR: gpu.shuffle  up
// PAR-NOT: recur.warp_lanes
// All four lane loops (each chunk from zero and from its carry, at both
// levels) merged as the last dimension of their nest (none is a
// sequential loop: parallelize-loops would have refused it), and
// recur-gpu-offload launches each with the shuffles inside.
// MERGED: {{^}}4{{$}}
// LAUNCH-LABEL: func.func @rows
// LAUNCH: gpu.launch
// LAUNCH-NOT: gpu.terminator
// LAUNCH: gpu.shuffle  up
// LAUNCH: gpu.shuffle  idx
// LAUNCH: gpu.terminator

// Emulated (scan-warps-emulated, for tests on the CPU): the same chunks,
// no lane loop and no shuffle, the 32 lanes side by side in each
// iteration.
// EMU-LABEL: func.func @rows
// EMU: arith.muli %{{.+}}, %c32 : index
// EMU: arith.ceildivui %{{.+}}, %c64 : index
// EMU-NOT: gpu.shuffle
// EMU-NOT: recur.warp_lanes
// EMU-NOT: %c0 to %c32 step %c1
