// RUN: recur-opt %s --pass-pipeline="builtin.module(convert-recur-to-loops{gla-column-threads gla-column-chunk=4 mark-parallel},canonicalize,cse,one-shot-bufferize{bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map allow-return-allocs-from-loops},func.func(recur-parallelize-loops),canonicalize)" | FileCheck %s
// RUN: recur-opt %s --convert-recur-to-loops="gla-column-threads gla-column-chunk=4" --canonicalize | FileCheck %s --check-prefix=LOOPS
// RUN: recur-opt %s --convert-recur-to-loops="gla-column-threads" --canonicalize | FileCheck %s --check-prefix=MEMORY

// The GPU's recurrent gla (gla-column-threads) with its state column in
// registers (gla-column-chunk): where T > 2 chunks and the columns
// (leading indices times dv) are fewer than 16384, in chunks; otherwise a
// thread a column. After recur-parallelize-loops every nest runs its
// iterations side by side: the chunks' decay products over (head, chunk,
// key row), each chunk's state from zero and each chunk's outputs over
// (head, chunk, column) (their steps indexed from the chunk's start, so
// that what they write is seen to depend on the chunk), the states
// entering the chunks over (head, column); and the other branch over
// (head, column).

// CHECK-LABEL: func.func @gla_real
// CHECK: %[[T:[^ ]+]] = memref.dim %{{.+}}, %c1 : memref<2x?x3xf32>
// CHECK: %[[LONG:[^ ]+]] = arith.cmpi ugt, %[[T]], %c8 : index
// CHECK: scf.if %[[LONG]]
// CHECK:   %[[CHUNKS:[^ ]+]] = arith.ceildivui %[[T]], %c4 : index
// The decay products: (head, chunk, key row).
// CHECK:   scf.parallel (%{{.+}}, %{{.+}}, %{{.+}}) = (%c0, %c0, %c0) to (%c2, %[[CHUNKS]], %c3)
// CHECK:     memref.store {{.+}} : memref<2x?x3xf32>
// Each chunk's state from zero: (head, chunk, column), over the chunk's
// offsets.
// CHECK:   scf.parallel (%{{.+}}, %[[C:[^ ]+]], %{{.+}}) = (%c0, %c0, %c0) to (%c2, %[[CHUNKS]], %c2)
// CHECK:     %[[BEGIN:[^ ]+]] = arith.muli %[[C]], %c4 : index
// CHECK:     scf.for %[[OFF:[^ ]+]] = %c0 to %{{.+}} step %c1
// CHECK:       arith.addi %[[BEGIN]], %[[OFF]] : index
// CHECK:     memref.store {{.+}} : memref<2x?x3x2xf32>
// The states entering the chunks: (head, column), over the chunks.
// CHECK:   scf.parallel (%{{.+}}, %{{.+}}) = (%c0, %c0) to (%c2, %c2)
// CHECK:     scf.for %{{.+}} = %c0 to %[[CHUNKS]] step %c1
// Each chunk's outputs: (head, chunk, column).
// CHECK:   scf.parallel (%{{.+}}, %{{.+}}, %{{.+}}) = (%c0, %c0, %c0) to (%c2, %[[CHUNKS]], %c2)
// CHECK:     memref.store {{.+}} : memref<2x?x2xf32>
// CHECK: } else {
// CHECK:   scf.parallel (%{{.+}}, %{{.+}}) = (%c0, %c0) to (%c2, %c2)
// CHECK: }
func.func @gla_real(%q: tensor<2x?x3xf32>, %k: tensor<2x?x3xf32>, %v: tensor<2x?x2xf32>, %a: tensor<2x?x3xf32>) -> (tensor<2x?x2xf32>, tensor<2x3x2xf32>) {
  %y, %s = recur.gated_linear_attention %q, %k, %v, %a {algorithm = #recur.algorithm<recurrent>} : tensor<2x?x3xf32>, tensor<2x?x3xf32>, tensor<2x?x2xf32>, tensor<2x?x3xf32>
  return %y, %s : tensor<2x?x2xf32>, tensor<2x3x2xf32>
}

// The state column in registers: the sweep carries its dk values from step
// to step (here from the init), where gla-column-chunk=0 keeps the state
// in a tensor it updates every step.

// LOOPS-LABEL: func.func @gla_complex_init
// LOOPS: scf.if
// LOOPS: } else {
// LOOPS:   scf.for {{.+}} -> (tensor<1x?x2xf32>, tensor<1x2x2xcomplex<f32>>)
// LOOPS:     scf.for {{.+}} iter_args({{.+}}) -> (complex<f32>, complex<f32>, tensor<1x?x2xf32>)
// MEMORY-LABEL: func.func @gla_complex_init
// MEMORY-NOT: scf.if
// MEMORY: scf.for {{.+}} -> (tensor<1x?x2xf32>, tensor<1x2x2xcomplex<f32>>)
func.func @gla_complex_init(%q: tensor<1x?x2xf32>, %k: tensor<1x?x2xf32>, %v: tensor<1x?x2xf32>, %a: tensor<1x?x2xcomplex<f32>>, %s0: tensor<1x2x2xcomplex<f32>>) -> (tensor<1x?x2xf32>, tensor<1x2x2xcomplex<f32>>) {
  %y, %s = recur.gated_linear_attention %q, %k, %v, %a init(%s0 : tensor<1x2x2xcomplex<f32>>) {algorithm = #recur.algorithm<recurrent>} : tensor<1x?x2xf32>, tensor<1x?x2xf32>, tensor<1x?x2xf32>, tensor<1x?x2xcomplex<f32>>
  return %y, %s : tensor<1x?x2xf32>, tensor<1x2x2xcomplex<f32>>
}

// The backward in the same chunks (gla-column-chunk, dk and dv static):
// the states entering the chunks by the forward's three nests, then four
// more, each parallel after recur-parallelize-loops: what each chunk sends
// back into the state before it over (head, chunk, column), from the
// chunk's last step back; the cotangents entering the chunks over (head,
// column), over the chunks from the last; dq, dk and da over (head, chunk,
// key row), each iteration with its own buffer of the chunk's states of its
// row (4 steps x dv); and dv over (head, chunk, column). Without the
// chunks (gla-column-chunk=0), the reverse sweep a leading index at a
// time.

// CHECK-LABEL: func.func @gla_grad_real
// CHECK: %[[T:[^ ]+]] = memref.dim %{{.+}}, %c1 : memref<2x?x3xf32>
// CHECK: %[[CHUNKS:[^ ]+]] = arith.ceildivui %[[T]], %c4 : index
// CHECK: scf.parallel (%{{.+}}, %{{.+}}, %{{.+}}) = (%c0, %c0, %c0) to (%c2, %[[CHUNKS]], %c3)
// CHECK: scf.parallel (%{{.+}}, %{{.+}}, %{{.+}}) = (%c0, %c0, %c0) to (%c2, %[[CHUNKS]], %c2)
// CHECK: scf.parallel (%{{.+}}, %{{.+}}) = (%c0, %c0) to (%c2, %c2)
// What each chunk sends back: its steps from the last, t = end - 1 - offset.
// CHECK: scf.parallel (%{{.+}}, %[[C:[^ ]+]], %{{.+}}) = (%c0, %c0, %c0) to (%c2, %[[CHUNKS]], %c2)
// CHECK:   %[[BEGIN:[^ ]+]] = arith.muli %[[C]], %c4 : index
// CHECK:   %[[END:[^ ]+]] = arith.minui
// CHECK:   %[[LAST:[^ ]+]] = arith.subi %[[END]], %c1 : index
// CHECK:   scf.for %[[OFF:[^ ]+]] = %c0 to %{{.+}} step %c1
// CHECK:     arith.subi %[[LAST]], %[[OFF]] : index
// CHECK:   memref.store {{.+}} : memref<2x?x3x2xf32>
// The cotangents entering the chunks: (head, column), over the chunks.
// CHECK: scf.parallel (%{{.+}}, %{{.+}}) = (%c0, %c0) to (%c2, %c2)
// CHECK:   scf.for %{{.+}} = %c0 to %[[CHUNKS]] step %c1
// CHECK:     memref.store {{.+}} : memref<2x?x3x2xf32>
// CHECK:   memref.store {{.+}} : memref<2x3x2xf32>
// dq, dk and da: (head, chunk, key row), the row's states in the
// iteration's own buffer, forward and then back.
// CHECK: scf.parallel (%{{.+}}, %{{.+}}, %{{.+}}) = (%c0, %c0, %c0) to (%c2, %[[CHUNKS]], %c3)
// CHECK:   %[[STASH:[^ ]+]] = memref.alloc() {{.+}} : memref<4x2xf32>
// CHECK:   scf.for
// CHECK:     memref.store %{{.+}}, %[[STASH]][%{{.+}}, %c0] : memref<4x2xf32>
// CHECK:     memref.store %{{.+}}, %[[STASH]][%{{.+}}, %c1] : memref<4x2xf32>
// CHECK:     memref.store {{.+}} : memref<2x?x3xf32>
// CHECK:   scf.for
// CHECK:     memref.load %[[STASH]][%{{.+}}, %c0] : memref<4x2xf32>
// CHECK:     memref.load %[[STASH]][%{{.+}}, %c1] : memref<4x2xf32>
// CHECK:     memref.store {{.+}} : memref<2x?x3xf32>
// CHECK:     memref.store {{.+}} : memref<2x?x3xf32>
// dv: (head, chunk, column).
// CHECK: scf.parallel (%{{.+}}, %{{.+}}, %{{.+}}) = (%c0, %c0, %c0) to (%c2, %[[CHUNKS]], %c2)
// CHECK:   memref.store {{.+}} : memref<2x?x2xf32>
// CHECK-NOT: scf.parallel
// CHECK: return
// MEMORY-LABEL: func.func @gla_grad_real
// MEMORY-NOT: arith.ceildivui
// MEMORY: affine.apply
// MEMORY-NOT: bufferization.alloc_tensor() : tensor<4x2xf32>
// MEMORY: return
func.func @gla_grad_real(%q: tensor<2x?x3xf32>, %k: tensor<2x?x3xf32>, %v: tensor<2x?x2xf32>, %a: tensor<2x?x3xf32>, %dy: tensor<2x?x2xf32>, %ds: tensor<2x3x2xf32>) -> (tensor<2x?x3xf32>, tensor<2x?x3xf32>, tensor<2x?x2xf32>, tensor<2x?x3xf32>, tensor<2x3x2xf32>) {
  %dq, %dk, %dv, %da, %di = recur.gated_linear_attention_grad %q, %k, %v, %a, %dy, %ds chunk 4 : tensor<2x?x3xf32>, tensor<2x?x3xf32>, tensor<2x?x2xf32>, tensor<2x?x3xf32>, tensor<2x3x2xf32>
  return %dq, %dk, %dv, %da, %di : tensor<2x?x3xf32>, tensor<2x?x3xf32>, tensor<2x?x2xf32>, tensor<2x?x3xf32>, tensor<2x3x2xf32>
}

// Complex decays with an initial state: each row's buffer holds complex
// values.
// CHECK-LABEL: func.func @gla_grad_complex_init
// CHECK: scf.parallel
// CHECK:   memref.alloc() {{.+}} : memref<4x2xcomplex<f32>>
// CHECK: return
func.func @gla_grad_complex_init(%q: tensor<1x?x2xf32>, %k: tensor<1x?x2xf32>, %v: tensor<1x?x2xf32>, %a: tensor<1x?x2xcomplex<f32>>, %dy: tensor<1x?x2xf32>, %ds: tensor<1x2x2xcomplex<f32>>, %s0: tensor<1x2x2xcomplex<f32>>) -> (tensor<1x?x2xf32>, tensor<1x?x2xf32>, tensor<1x?x2xf32>, tensor<1x?x2xcomplex<f32>>, tensor<1x2x2xcomplex<f32>>) {
  %dq, %dk, %dv, %da, %di = recur.gated_linear_attention_grad %q, %k, %v, %a, %dy, %ds init(%s0 : tensor<1x2x2xcomplex<f32>>) chunk 4 : tensor<1x?x2xf32>, tensor<1x?x2xf32>, tensor<1x?x2xf32>, tensor<1x?x2xcomplex<f32>>, tensor<1x2x2xcomplex<f32>>
  return %dq, %dk, %dv, %da, %di : tensor<1x?x2xf32>, tensor<1x?x2xf32>, tensor<1x?x2xf32>, tensor<1x?x2xcomplex<f32>>, tensor<1x2x2xcomplex<f32>>
}

// A chunked gla (GateLoop's default) goes in the column form too, in
// chunks of its own chunk_size (here 3; gla-column-chunk sets the
// recurrent gla's alone), where T > 6.
// CHECK-LABEL: func.func @gla_chunked
// CHECK: %[[T:[^ ]+]] = memref.dim %{{.+}}, %c1 : memref<2x?x3xf32>
// CHECK: arith.cmpi ugt, %[[T]], %c6 : index
// CHECK: arith.ceildivui %[[T]], %c3 : index
// CHECK: scf.parallel
// CHECK: } else {
// CHECK:   scf.parallel (%{{.+}}, %{{.+}}) = (%c0, %c0) to (%c2, %c2)
// CHECK: }
func.func @gla_chunked(%q: tensor<2x?x3xf32>, %k: tensor<2x?x3xf32>, %v: tensor<2x?x2xf32>, %a: tensor<2x?x3xf32>) -> (tensor<2x?x2xf32>, tensor<2x3x2xf32>) {
  %y, %s = recur.gated_linear_attention %q, %k, %v, %a {algorithm = #recur.algorithm<chunked>, chunk_size = 3 : i64} : tensor<2x?x3xf32>, tensor<2x?x3xf32>, tensor<2x?x2xf32>, tensor<2x?x3xf32>
  return %y, %s : tensor<2x?x2xf32>, tensor<2x3x2xf32>
}
