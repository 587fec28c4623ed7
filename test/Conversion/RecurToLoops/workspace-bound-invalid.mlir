// RUN: recur-opt %s --split-input-file --recur-workspace-bound --verify-diagnostics | FileCheck %s

// What cannot be bounded gives -1 (unknown) and a remark saying why.

// A size read from memory has no bound in terms of the arguments.
// CHECK-LABEL: func.func @size_from_memory_workspace
// CHECK:         %[[UNKNOWN:.*]] = arith.constant -1 : index
// CHECK-NEXT:    return %[[UNKNOWN]]
func.func @size_from_memory(%sizes: memref<1xindex>) -> memref<?xf32> {
  %c0 = arith.constant 0 : index
  %n = memref.load %sizes[%c0] : memref<1xindex>
  // expected-remark @+1 {{recur-workspace-bound: no upper bound for dimension 0 in terms of the function's arguments}}
  %y = memref.alloc(%n) : memref<?xf32>
  return %y : memref<?xf32>
}

// -----

func.func private @make() -> memref<4xf32>

// An external callee may allocate anything.
// CHECK-LABEL: func.func @calls_out_workspace
// CHECK:         arith.constant -1 : index
func.func @calls_out() -> memref<4xf32> {
  // expected-remark @+1 {{recur-workspace-bound: cannot bound the memory of 'func.call'}}
  %y = func.call @make() : () -> memref<4xf32>
  return %y : memref<4xf32>
}
