//===- Passes.td - recur conversion passes ---------------------*- tablegen -*-===//
//
// Part of the Recur project.
//
//===----------------------------------------------------------------------===//

#ifndef RECUR_CONVERSION_PASSES_TD
#define RECUR_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertRecurToLoops : Pass<"convert-recur-to-loops"> {
  let summary = "Scalar reference lowering of recur ops to scf loops";
  let description = [{
    Lowers recur ops to sequential `scf.for` loop nests over tensors, with
    `tensor.extract` / `tensor.insert` on single elements and the arithmetic
    in `arith`, `math` and `complex`. Nothing is tiled, vectorized or
    parallelized: this lowering fixes the meaning of each op and serves as the
    correctness reference for the optimized ones.

    Covered today: `recur.linear_scan`, `recur.scan`, `recur.gate` and
    `recur.stop_gradient`. The pass fails on any other recur op it meets.

    Before:

    ```mlir
    %h, %last = recur.linear_scan %a, %b along 0 : tensor<8xf32>, tensor<8xf32>
    ```

    After (sketch):

    ```mlir
    %r:3 = scf.for %t = %c0 to %c8 step %c1
        iter_args(%hs = %empty, %carry = %zero, ...) -> (...) {
      %at = tensor.extract %a[%t] : tensor<8xf32>
      %bt = tensor.extract %b[%t] : tensor<8xf32>
      %m = arith.mulf %at, %carry : f32
      %n = arith.addf %m, %bt : f32
      %hs1 = tensor.insert %n into %hs[%t] : tensor<8xf32>
      scf.yield %hs1, %n, ...
    }
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect",
    "::mlir::complex::ComplexDialect",
    "::mlir::math::MathDialect",
    "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

#endif // RECUR_CONVERSION_PASSES_TD
