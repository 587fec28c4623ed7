//===- Passes.td - recur -> recur transforms -------------------*- tablegen -*-===//
//
// Part of the Recur project.
//
//===----------------------------------------------------------------------===//

#ifndef RECUR_TRANSFORMS_PASSES_TD
#define RECUR_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def RecurDeriveBackward : Pass<"recur-derive-backward", "::mlir::ModuleOp"> {
  let summary = "Derive each layer's backward function by reverse-mode "
                "differentiation";
  let description = [{
    For each public layer function `@F` (front-end IR: recur ops and
    tensor-level glue) adds `@F_backward`, taking F's arguments and then one
    cotangent per result of F (`recur.role = "cotangent"`), and returning
    the cotangent of each of F's arguments (`recur.role = "grad"`; zeros for
    an argument no gradient reaches, such as an integer one).

    The body recomputes F's forward ops, then visits them last to first:
    each op with a cotangent on a result builds the cotangents of its
    operands through `AdjointOpInterface` (declared beside each recur op;
    external models for linalg.generic, linalg.fill and tensor slices), and
    a value used more than once sums the cotangents of its uses. A
    `linalg.generic` is differentiated through its scalar body (arith, math
    and complex ops, reverse mode per element), one generic per input, with
    the loops its input does not index as reductions; an accumulating output
    (`out + e`, `max(out, e)`) sends the cotangent of its result to `e`
    (through the arg max for max). Complex cotangents follow PyTorch's
    convention (dL/dx + i dL/dy).

    A layer with an op that has no adjoint is an error, unless
    `allow-missing` is set: then that layer gets no backward function and a
    remark says why.
  }];
  let options = [
    Option<"allowMissing", "allow-missing", "bool", /*default=*/"false",
           "Skip, with a remark, the layers that use an op without an "
           "adjoint instead of failing">,
    Option<"keepAllStates", "keep-all-states", "bool", /*default=*/"false",
           "Differentiate recurrences (gla) keeping every intermediate "
           "state instead of the states at chunk boundaries, recomputing "
           "inside each chunk (more memory, less compute)">
  ];
  let dependentDialects = [
    "::mlir::affine::AffineDialect",
    "::mlir::arith::ArithDialect",
    "::mlir::complex::ComplexDialect",
    "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect",
    "::mlir::tensor::TensorDialect"
  ];
}

#endif // RECUR_TRANSFORMS_PASSES_TD
