// RUN: recur-opt %s --recur-strip-front-end-attributes | FileCheck %s
// RUN: recur-opt %s --recur-strip-front-end-attributes | mlir-translate --mlir-to-llvmir | FileCheck %s --check-prefix=IR

// The front end's attributes go; a loop annotation that the scf and cf
// lowerings left on a latch branch as a discardable attribute becomes the
// branch's own `loop_annotation`, which reaches LLVM IR as !llvm.loop
// metadata (as a discardable attribute the translation drops it).

#unroll = #llvm.loop_unroll<disable = true>
#annotation = #llvm.loop_annotation<unroll = #unroll>

// CHECK-LABEL: llvm.func @zero
// CHECK-SAME: (%{{[^:]+}}: !llvm.ptr, %{{[^:]+}}: i64)
// CHECK-NOT: recur.
// CHECK: llvm.br ^bb1(%{{.+}} : i64) {loop_annotation = #{{.+}}}
// CHECK-NOT: llvm.loop_annotation =
// IR-LABEL: define void @zero
// IR: br label %{{.+}}, !llvm.loop ![[LOOP:[0-9]+]]
// IR: ![[LOOP]] = distinct !{![[LOOP]], ![[DISABLE:[0-9]+]]}
// IR: ![[DISABLE]] = !{!"llvm.loop.unroll.disable"}
llvm.func @zero(%p: !llvm.ptr {recur.name = "x"}, %n: i64)
    attributes {recur.allocates_nothing} {
  %c0 = llvm.mlir.constant(0 : i64) : i64
  %c1 = llvm.mlir.constant(1 : i64) : i64
  %z = llvm.mlir.constant(0.0 : f32) : f32
  llvm.br ^head(%c0 : i64)
^head(%i: i64):
  %more = llvm.icmp "slt" %i, %n : i64
  llvm.cond_br %more, ^body, ^done
^body:
  %at = llvm.getelementptr %p[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  llvm.store %z, %at : f32, !llvm.ptr
  %next = llvm.add %i, %c1 : i64
  llvm.br ^head(%next : i64) {llvm.loop_annotation = #annotation}
^done:
  llvm.return
}
