// RUN: recur-opt %s --split-input-file --recur-workspace-bound --verify-diagnostics

// A size read from memory has no bound in terms of the arguments.
func.func @size_from_memory(%sizes: memref<1xindex>) -> memref<?xf32> {
  %c0 = arith.constant 0 : index
  %n = memref.load %sizes[%c0] : memref<1xindex>
  // expected-error @+1 {{recur-workspace-bound: no upper bound for dimension 0 in terms of the function's arguments}}
  %y = memref.alloc(%n) : memref<?xf32>
  return %y : memref<?xf32>
}

// -----

func.func private @make() -> memref<4xf32>

// An external callee may allocate anything.
func.func @calls_out() -> memref<4xf32> {
  // expected-error @+1 {{recur-workspace-bound: cannot bound the memory of 'func.call'}}
  %y = func.call @make() : () -> memref<4xf32>
  return %y : memref<4xf32>
}
