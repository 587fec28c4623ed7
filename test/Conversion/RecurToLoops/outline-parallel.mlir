// RUN: recur-opt %s --recur-outline-parallel --split-input-file | FileCheck %s

// Three regions doing the same work on the same kinds of values, two in one
// function and one in another, become one function called three times (and
// never inlined: each kernel's hand-over to the OpenMP runtime is compiled
// once);
// the values from the host are its arguments (in the order
// getUsedValuesDefinedAbove finds them), the
// constants are copied in, and the hosts keep their other code.

// CHECK-LABEL: llvm.func @forward(
// CHECK-SAME:      %[[P:.*]]: !llvm.ptr, %[[N:.*]]: i64, %[[Q:.*]]: !llvm.ptr)
// CHECK-NOT:     omp.parallel
// CHECK:         llvm.call @forward_parallel0(%[[P]], %[[N]])
// CHECK-NEXT:    llvm.store
// CHECK-NEXT:    llvm.call @forward_parallel0(%[[Q]], %[[N]])
// CHECK-NEXT:    llvm.return
// CHECK:       llvm.func internal @forward_parallel0(%[[AP:.*]]: !llvm.ptr, %[[AN:.*]]: i64)
// CHECK-SAME:      attributes {no_inline}
// CHECK-DAG:     %[[ZERO:.*]] = llvm.mlir.constant(0 : i64)
// CHECK-DAG:     %[[TWO:.*]] = llvm.mlir.constant(2.0{{.*}} : f32)
// CHECK:         omp.parallel
// CHECK:           omp.loop_nest (%[[I:.*]]) : i64 = (%[[ZERO]]) to (%[[AN]])
// CHECK:             llvm.getelementptr %[[AP]][%[[I]]]
// CHECK:             llvm.fmul %{{.*}}, %[[TWO]]
// CHECK:         llvm.return
// CHECK-NOT:   llvm.func internal @forward_parallel1
// CHECK-LABEL: llvm.func @backward(
// CHECK:         llvm.call @forward_parallel0(
// CHECK-NOT:   llvm.func internal @backward_parallel

llvm.func @forward(%p: !llvm.ptr, %n: i64, %q: !llvm.ptr) {
  %zero = llvm.mlir.constant(0 : i64) : i64
  %one = llvm.mlir.constant(1 : i64) : i64
  %two = llvm.mlir.constant(2.0 : f32) : f32
  omp.parallel {
    omp.wsloop {
      omp.loop_nest (%i) : i64 = (%zero) to (%n) step (%one) {
        %g = llvm.getelementptr %p[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
        %v = llvm.load %g : !llvm.ptr -> f32
        %w = llvm.fmul %v, %two : f32
        llvm.store %w, %g : f32, !llvm.ptr
        omp.yield
      }
    }
    omp.terminator
  }
  llvm.store %two, %q : f32, !llvm.ptr
  omp.parallel {
    omp.wsloop {
      omp.loop_nest (%i) : i64 = (%zero) to (%n) step (%one) {
        %g = llvm.getelementptr %q[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
        %v = llvm.load %g : !llvm.ptr -> f32
        %w = llvm.fmul %v, %two : f32
        llvm.store %w, %g : f32, !llvm.ptr
        omp.yield
      }
    }
    omp.terminator
  }
  llvm.return
}

llvm.func @backward(%p: !llvm.ptr, %m: i64) {
  %zero = llvm.mlir.constant(0 : i64) : i64
  %one = llvm.mlir.constant(1 : i64) : i64
  %two = llvm.mlir.constant(2.0 : f32) : f32
  omp.parallel {
    omp.wsloop {
      omp.loop_nest (%i) : i64 = (%zero) to (%m) step (%one) {
        %g = llvm.getelementptr %p[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
        %v = llvm.load %g : !llvm.ptr -> f32
        %w = llvm.fmul %v, %two : f32
        llvm.store %w, %g : f32, !llvm.ptr
        omp.yield
      }
    }
    omp.terminator
  }
  llvm.return
}

// -----

// Regions that differ in a constant (the factor), in an operation (fmul
// against fadd) or in the type of a value from the host stay apart: three
// functions. A region inside another is not outlined on its own.

// CHECK-LABEL: llvm.func @apart(
// CHECK:         llvm.call @apart_parallel0(
// CHECK:         llvm.call @apart_parallel1(
// CHECK:         llvm.call @apart_parallel2(
// CHECK:         llvm.call @apart_parallel3(
// CHECK:         llvm.return
// CHECK:       llvm.func internal @apart_parallel0(
// CHECK:         llvm.mlir.constant(2.0
// CHECK:       llvm.func internal @apart_parallel1(
// CHECK:         llvm.mlir.constant(3.0
// CHECK:       llvm.func internal @apart_parallel2(
// CHECK:         llvm.fadd
// CHECK:       llvm.func internal @apart_parallel3(%{{.*}}: i32,
// CHECK:         omp.parallel
// CHECK:           omp.parallel
// CHECK-NOT:   llvm.func internal @apart_parallel4

llvm.func @apart(%p: !llvm.ptr, %n: i64, %k: i32) {
  %zero = llvm.mlir.constant(0 : i64) : i64
  %one = llvm.mlir.constant(1 : i64) : i64
  %two = llvm.mlir.constant(2.0 : f32) : f32
  %three = llvm.mlir.constant(3.0 : f32) : f32
  omp.parallel {
    omp.wsloop {
      omp.loop_nest (%i) : i64 = (%zero) to (%n) step (%one) {
        %g = llvm.getelementptr %p[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
        %v = llvm.load %g : !llvm.ptr -> f32
        %w = llvm.fmul %v, %two : f32
        llvm.store %w, %g : f32, !llvm.ptr
        omp.yield
      }
    }
    omp.terminator
  }
  omp.parallel {
    omp.wsloop {
      omp.loop_nest (%i) : i64 = (%zero) to (%n) step (%one) {
        %g = llvm.getelementptr %p[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
        %v = llvm.load %g : !llvm.ptr -> f32
        %w = llvm.fmul %v, %three : f32
        llvm.store %w, %g : f32, !llvm.ptr
        omp.yield
      }
    }
    omp.terminator
  }
  omp.parallel {
    omp.wsloop {
      omp.loop_nest (%i) : i64 = (%zero) to (%n) step (%one) {
        %g = llvm.getelementptr %p[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
        %v = llvm.load %g : !llvm.ptr -> f32
        %w = llvm.fadd %v, %two : f32
        llvm.store %w, %g : f32, !llvm.ptr
        omp.yield
      }
    }
    omp.terminator
  }
  omp.parallel {
    %kk = llvm.sext %k : i32 to i64
    omp.parallel {
      omp.wsloop {
        omp.loop_nest (%i) : i64 = (%zero) to (%kk) step (%one) {
          %g = llvm.getelementptr %p[%i] : (!llvm.ptr, i64) -> !llvm.ptr, f32
          %v = llvm.load %g : !llvm.ptr -> f32
          %w = llvm.fmul %v, %two : f32
          llvm.store %w, %g : f32, !llvm.ptr
          omp.yield
        }
      }
      omp.terminator
    }
    omp.terminator
  }
  llvm.return
}

// -----

// Nothing to outline: the module is unchanged.

// CHECK-LABEL: llvm.func @serial(
// CHECK-NEXT:    llvm.return
// CHECK-NOT:   llvm.func internal
llvm.func @serial(%p: !llvm.ptr) {
  llvm.return
}

// -----

// Before the conversion to LLVM (where the CPU pipeline runs it), a
// func.func's regions become private func.funcs taking memrefs, marked to
// become internal LLVM functions that are never inlined; the two identical
// regions share one, the one that scales by another factor has its own.

// CHECK-LABEL: func.func @early(
// CHECK-SAME:      %[[A:.*]]: memref<?xf32>, %[[B:.*]]: memref<?xf32>, %[[N:.*]]: index)
// CHECK-NOT:     omp.parallel
// CHECK:         call @early_parallel0(%[[A]], %[[N]]) : (memref<?xf32>, index) -> ()
// CHECK-NEXT:    call @early_parallel0(%[[B]], %[[N]]) : (memref<?xf32>, index) -> ()
// CHECK-NEXT:    call @early_parallel2(%[[A]], %[[N]]) : (memref<?xf32>, index) -> ()
// CHECK-NEXT:    return
// CHECK:       func.func private @early_parallel0(%[[M:.*]]: memref<?xf32>, %[[K:.*]]: index)
// CHECK-SAME:      attributes {llvm.linkage = #llvm.linkage<internal>, passthrough = ["noinline"]}
// CHECK:         %[[TWO:.*]] = arith.constant 2.0
// CHECK:         omp.parallel
// CHECK:           omp.loop_nest ({{.*}}) : index = ({{.*}}) to (%[[K]])
// CHECK:           memref.load %[[M]]
// CHECK:           arith.mulf %{{.*}}, %[[TWO]]
// CHECK:         return
// CHECK-NOT:   func.func private @early_parallel1(
// CHECK:       func.func private @early_parallel2(
// CHECK:         arith.constant 3.0
// CHECK-NOT:   func.func private @early_parallel

func.func @early(%a: memref<?xf32>, %b: memref<?xf32>, %n: index) {
  %zero = arith.constant 0 : index
  %one = arith.constant 1 : index
  %two = arith.constant 2.0 : f32
  %three = arith.constant 3.0 : f32
  omp.parallel {
    omp.wsloop {
      omp.loop_nest (%i) : index = (%zero) to (%n) step (%one) {
        %v = memref.load %a[%i] : memref<?xf32>
        %w = arith.mulf %v, %two : f32
        memref.store %w, %a[%i] : memref<?xf32>
        omp.yield
      }
    }
    omp.terminator
  }
  omp.parallel {
    omp.wsloop {
      omp.loop_nest (%i) : index = (%zero) to (%n) step (%one) {
        %v = memref.load %b[%i] : memref<?xf32>
        %w = arith.mulf %v, %two : f32
        memref.store %w, %b[%i] : memref<?xf32>
        omp.yield
      }
    }
    omp.terminator
  }
  omp.parallel {
    omp.wsloop {
      omp.loop_nest (%i) : index = (%zero) to (%n) step (%one) {
        %v = memref.load %a[%i] : memref<?xf32>
        %w = arith.mulf %v, %three : f32
        memref.store %w, %a[%i] : memref<?xf32>
        omp.yield
      }
    }
    omp.terminator
  }
  return
}

// -----

// Only the module's own functions are hosts: a region in a nested module
// stays where it is.

// CHECK-LABEL: module @outer
// CHECK:         module @inner
// CHECK:           func.func @nested(
// CHECK-NOT:         call
// CHECK:             omp.parallel
// CHECK-NOT:     func.func private
module @outer {
  module @inner {
    func.func @nested(%a: memref<?xf32>, %n: index) {
      %zero = arith.constant 0 : index
      %one = arith.constant 1 : index
      omp.parallel {
        omp.wsloop {
          omp.loop_nest (%i) : index = (%zero) to (%n) step (%one) {
            %v = memref.load %a[%i] : memref<?xf32>
            memref.store %v, %a[%i] : memref<?xf32>
            omp.yield
          }
        }
        omp.terminator
      }
      return
    }
  }
}
