//===- Evaluator.h - float64 oracle of whole recur functions ----*- C++ -*-===//
//
// Part of the Recur project.
//
// Interprets a `func.func` in recur IR (recur ops plus the linalg, tensor,
// arith, math and complex glue the front end emits) in float64: glue ops are
// interpreted directly, one scalar at a time; every recur op is handed to the
// matching lib/Reference function, with its regions evaluated recursively by
// the evaluator through lib/Reference's callbacks. Nothing here uses the
// compiler's lowering (RecurToLoops, bufferization, LLVM), which is what the
// evaluator checks.
//
//===----------------------------------------------------------------------===//

#ifndef RECUR_ORACLE_EVALUATOR_H
#define RECUR_ORACLE_EVALUATOR_H

#include "recur/Reference/Reference.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace recur::oracle {

using reference::Complex;
using reference::Tensor;

/// A value of the evaluated program: every float dtype (f16, bf16, f32, f64)
/// widened to double; complex (c64, c128) as Complex; bool masks; i32
/// indices; `index` scalars.
using Value = std::variant<Tensor<double>, Tensor<Complex>, Tensor<bool>,
                           Tensor<int32_t>, int64_t>;

/// Evaluates `func` in float64 on `args` (one per function argument, in
/// order; their shapes must match the argument types' static sizes, and every
/// use of a dynamic size is taken from the actual tensors). Returns one Value
/// per function result, or an llvm::Error whose message names the op (with
/// its location) that could not be evaluated and why (unsupported op, shape
/// mismatch, exception from lib/Reference). Never throws.
llvm::Expected<std::vector<Value>> evaluate(mlir::func::FuncOp func,
                                            llvm::ArrayRef<Value> args);

/// The kind of `value` as a type would spell it: `tensor<2x3xf64>`,
/// `tensor<4xcomplex<f64>>`, `tensor<2xi1>`, `tensor<2xi32>` or `index`.
std::string describe(const Value &value);

/// The shape of a tensor value; empty for an `index` scalar.
std::vector<int64_t> shapeOf(const Value &value);

} // namespace recur::oracle

#endif // RECUR_ORACLE_EVALUATOR_H
