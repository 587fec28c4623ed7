//===- RecurInterfaces.td - recur op interfaces ----------------*- tablegen -*-===//
//
// Part of the Recur project.
//
//===----------------------------------------------------------------------===//

#ifndef RECUR_DIALECT_RECUR_IR_RECURINTERFACES_TD
#define RECUR_DIALECT_RECUR_IR_RECURINTERFACES_TD

include "mlir/IR/OpBase.td"

def Recur_AdjointOpInterface : OpInterface<"AdjointOpInterface"> {
  let cppNamespace = "::mlir::recur";
  let description = [{
    An op that reverse-mode differentiation (`recur-derive-backward`) can go
    through: given the cotangents of its results, it builds the cotangents
    of its operands. Each recur op declares its adjoint beside its
    definition (RecurAdjoints.cpp); the upstream glue the front end emits
    (linalg.generic, linalg.fill, tensor slices) gets the same interface as
    an external model (lib/Transforms/Autodiff).

    Cotangents follow PyTorch's convention for complex values: the
    cotangent of z = x + iy is dL/dx + i dL/dy, so that for a holomorphic
    w = f(z) the cotangent of z is conj(f'(z)) times that of w.
  }];
  let methods = [
    InterfaceMethod<[{
        Builds, with `builder` (placed after everything the op's primal
        values depend on), the cotangents of the op's operands from those
        of its results (`adjoint.getCotangent(result)`, null when zero) and
        adds each to `adjoint.addCotangent(operand, value)`. Operands that
        carry no gradient (integers, flags, stop-gradient semantics) get
        nothing. Fails with an error on the op when a case is not
        differentiable.
      }],
      "::mlir::LogicalResult", "buildAdjoint",
      (ins "::mlir::OpBuilder &":$builder,
           "::mlir::recur::AdjointBuilder &":$adjoint)>
  ];
}

#endif // RECUR_DIALECT_RECUR_IR_RECURINTERFACES_TD
