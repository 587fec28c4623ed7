//===- ScalarAdjoints.cpp - reverse mode through scalar ops ---------------===//
//
// Part of the Recur project.
//
// The derivative rules of the scalar ops inside linalg bodies (and of the
// few scalars outside them). Complex cotangents follow PyTorch: for a
// holomorphic w = f(z), dz = dw * conj(f'(z)).
//
//===----------------------------------------------------------------------===//

#include "ScalarAdjoints.h"

#include "Recur/IR/Recur.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Complex/IR/Complex.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "llvm/ADT/TypeSwitch.h"

#include <cmath>

using namespace mlir;
using namespace mlir::recur;

void ScalarCotangents::add(Value v, Value cotangent) {
  if (!cotangent || !isDifferentiableType(v.getType()))
    return;
  auto it = map.find(v);
  if (it == map.end()) {
    map[v] = cotangent;
    return;
  }
  it->second = addScalars(b, v.getLoc(), it->second, cotangent);
}

namespace {

Value constF(OpBuilder &b, Location loc, Type type, double value) {
  return arith::ConstantOp::create(b, loc, b.getFloatAttr(type, value));
}

/// Ops that pass no gradient: comparisons, conversions from integers,
/// index and integer arithmetic, constants.
bool carriesNoGradient(Operation *op) {
  return isa<arith::ConstantOp, complex::ConstantOp, arith::CmpFOp,
             arith::CmpIOp, arith::SIToFPOp, arith::UIToFPOp, arith::FPToSIOp,
             arith::FPToUIOp, arith::IndexCastOp, arith::AddIOp, arith::SubIOp,
             arith::MulIOp, arith::DivSIOp, arith::DivUIOp, arith::RemSIOp,
             arith::RemUIOp, arith::MinSIOp, arith::MaxSIOp, arith::AndIOp,
             arith::OrIOp, arith::XOrIOp, arith::ExtSIOp, arith::ExtUIOp,
             arith::TruncIOp>(op);
}

bool isRule(Operation *op) {
  return isa<arith::AddFOp, arith::SubFOp, arith::MulFOp, arith::DivFOp,
             arith::NegFOp, arith::MaximumFOp, arith::MinimumFOp,
             arith::MaxNumFOp, arith::MinNumFOp, arith::SelectOp, arith::ExtFOp,
             arith::TruncFOp, math::ExpOp, math::LogOp, math::Log1pOp,
             math::TanhOp, math::SqrtOp, math::RsqrtOp, math::SinOp,
             math::CosOp, math::ErfOp, math::AbsFOp, math::PowFOp,
             complex::CreateOp, complex::ReOp, complex::ImOp, complex::AddOp,
             complex::SubOp, complex::MulOp, complex::DivOp, complex::ConjOp,
             complex::NegOp, complex::ExpOp, complex::AbsOp>(op);
}

} // namespace

bool mlir::recur::hasScalarAdjoint(Operation *op) {
  return carriesNoGradient(op) || isRule(op);
}

LogicalResult mlir::recur::buildScalarAdjoint(OpBuilder &b, Operation *op,
                                              ScalarCotangents &cts) {
  if (carriesNoGradient(op))
    return success();
  if (op->getNumResults() != 1)
    return op->emitError("no adjoint for '") << op->getName() << "'";
  Value r = op->getResult(0);
  Value ct = cts.get(r);
  if (!ct)
    return success();
  Location loc = op->getLoc();
  Type type = r.getType();
  auto mulf = [&](Value x, Value y) {
    return arith::MulFOp::create(b, loc, x, y).getResult();
  };
  auto cmul = [&](Value x, Value y) {
    return complex::MulOp::create(b, loc, x, y).getResult();
  };
  auto conj = [&](Value x) {
    return complex::ConjOp::create(b, loc, x).getResult();
  };
  auto negf = [&](Value x) {
    return arith::NegFOp::create(b, loc, x).getResult();
  };
  auto zero = [&](Type t) { return zeroScalar(b, loc, t); };

  return llvm::TypeSwitch<Operation *, LogicalResult>(op)
      .Case<arith::AddFOp, complex::AddOp>([&](auto) {
        cts.add(op->getOperand(0), ct);
        cts.add(op->getOperand(1), ct);
        return success();
      })
      .Case<arith::SubFOp>([&](auto) {
        cts.add(op->getOperand(0), ct);
        cts.add(op->getOperand(1), negf(ct));
        return success();
      })
      .Case<complex::SubOp>([&](auto) {
        cts.add(op->getOperand(0), ct);
        cts.add(op->getOperand(1), complex::NegOp::create(b, loc, ct));
        return success();
      })
      .Case<arith::NegFOp>([&](auto) {
        cts.add(op->getOperand(0), negf(ct));
        return success();
      })
      .Case<complex::NegOp>([&](auto) {
        cts.add(op->getOperand(0), complex::NegOp::create(b, loc, ct));
        return success();
      })
      .Case<arith::MulFOp>([&](auto) {
        cts.add(op->getOperand(0), mulf(ct, op->getOperand(1)));
        cts.add(op->getOperand(1), mulf(ct, op->getOperand(0)));
        return success();
      })
      .Case<complex::MulOp>([&](auto) {
        cts.add(op->getOperand(0), cmul(ct, conj(op->getOperand(1))));
        cts.add(op->getOperand(1), cmul(ct, conj(op->getOperand(0))));
        return success();
      })
      .Case<arith::DivFOp>([&](auto) {
        Value y = op->getOperand(1);
        Value dx = arith::DivFOp::create(b, loc, ct, y);
        cts.add(op->getOperand(0), dx);
        // d/dy (x / y) = -r / y
        cts.add(y, negf(mulf(dx, r)));
        return success();
      })
      .Case<complex::DivOp>([&](auto) {
        Value y = op->getOperand(1);
        Value dx = complex::DivOp::create(b, loc, ct, conj(y));
        cts.add(op->getOperand(0), dx);
        cts.add(y, complex::NegOp::create(b, loc, cmul(dx, conj(r))));
        return success();
      })
      .Case<arith::MaximumFOp, arith::MaxNumFOp, arith::MinimumFOp,
            arith::MinNumFOp>([&](auto) {
        // The operand that was chosen gets it (the first one on a tie).
        Value x = op->getOperand(0), y = op->getOperand(1);
        Value first =
            arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, r, x);
        Value z = zero(type);
        cts.add(x, arith::SelectOp::create(b, loc, first, ct, z));
        cts.add(y, arith::SelectOp::create(b, loc, first, z, ct));
        return success();
      })
      .Case<arith::SelectOp>([&](arith::SelectOp select) {
        Value z = zero(type);
        cts.add(select.getTrueValue(),
                arith::SelectOp::create(b, loc, select.getCondition(), ct, z));
        cts.add(select.getFalseValue(),
                arith::SelectOp::create(b, loc, select.getCondition(), z, ct));
        return success();
      })
      .Case<arith::ExtFOp>([&](auto) {
        cts.add(
            op->getOperand(0),
            arith::TruncFOp::create(b, loc, op->getOperand(0).getType(), ct));
        return success();
      })
      .Case<arith::TruncFOp>([&](auto) {
        cts.add(op->getOperand(0),
                arith::ExtFOp::create(b, loc, op->getOperand(0).getType(), ct));
        return success();
      })
      .Case<math::ExpOp>([&](auto) {
        cts.add(op->getOperand(0), mulf(ct, r));
        return success();
      })
      .Case<complex::ExpOp>([&](auto) {
        cts.add(op->getOperand(0), cmul(ct, conj(r)));
        return success();
      })
      .Case<math::LogOp>([&](auto) {
        cts.add(op->getOperand(0),
                arith::DivFOp::create(b, loc, ct, op->getOperand(0)));
        return success();
      })
      .Case<math::Log1pOp>([&](auto) {
        Value x = op->getOperand(0);
        Value onePlus =
            arith::AddFOp::create(b, loc, constF(b, loc, type, 1.0), x);
        cts.add(x, arith::DivFOp::create(b, loc, ct, onePlus));
        return success();
      })
      .Case<math::TanhOp>([&](auto) {
        Value d = arith::SubFOp::create(b, loc, constF(b, loc, type, 1.0),
                                        mulf(r, r));
        cts.add(op->getOperand(0), mulf(ct, d));
        return success();
      })
      .Case<math::SqrtOp>([&](auto) {
        // 0.5 / sqrt(x)
        Value d = arith::DivFOp::create(b, loc, constF(b, loc, type, 0.5), r);
        cts.add(op->getOperand(0), mulf(ct, d));
        return success();
      })
      .Case<math::RsqrtOp>([&](auto) {
        // -0.5 x^(-3/2) = -0.5 r^3
        Value d = mulf(constF(b, loc, type, -0.5), mulf(r, mulf(r, r)));
        cts.add(op->getOperand(0), mulf(ct, d));
        return success();
      })
      .Case<math::SinOp>([&](auto) {
        cts.add(op->getOperand(0),
                mulf(ct, math::CosOp::create(b, loc, op->getOperand(0))));
        return success();
      })
      .Case<math::CosOp>([&](auto) {
        cts.add(op->getOperand(0),
                negf(mulf(ct, math::SinOp::create(b, loc, op->getOperand(0)))));
        return success();
      })
      .Case<math::ErfOp>([&](auto) {
        // 2 / sqrt(pi) exp(-x^2)
        Value x = op->getOperand(0);
        Value e = math::ExpOp::create(b, loc, negf(mulf(x, x)));
        Value d = mulf(constF(b, loc, type, 2.0 / std::sqrt(M_PI)), e);
        cts.add(x, mulf(ct, d));
        return success();
      })
      .Case<math::AbsFOp>([&](auto) {
        // sign(x), 0 at 0
        Value x = op->getOperand(0);
        Value z = zero(type);
        Value pos =
            arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, x, z);
        Value neg =
            arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, x, z);
        Value d = arith::SelectOp::create(
            b, loc, pos, constF(b, loc, type, 1.0),
            arith::SelectOp::create(b, loc, neg, constF(b, loc, type, -1.0),
                                    z));
        cts.add(x, mulf(ct, d));
        return success();
      })
      .Case<math::PowFOp>([&](auto) {
        // d/dx = y x^(y-1) = y r / x; d/dy = r log x
        Value x = op->getOperand(0), y = op->getOperand(1);
        cts.add(x, mulf(ct, arith::DivFOp::create(b, loc, mulf(y, r), x)));
        cts.add(y, mulf(ct, mulf(r, math::LogOp::create(b, loc, x))));
        return success();
      })
      .Case<complex::CreateOp>([&](complex::CreateOp create) {
        cts.add(create.getReal(), complex::ReOp::create(b, loc, ct));
        cts.add(create.getImaginary(), complex::ImOp::create(b, loc, ct));
        return success();
      })
      .Case<complex::ReOp>([&](complex::ReOp re) {
        auto complexType = cast<ComplexType>(re.getComplex().getType());
        cts.add(re.getComplex(),
                complex::CreateOp::create(b, loc, complexType, ct, zero(type)));
        return success();
      })
      .Case<complex::ImOp>([&](complex::ImOp im) {
        auto complexType = cast<ComplexType>(im.getComplex().getType());
        cts.add(im.getComplex(),
                complex::CreateOp::create(b, loc, complexType, zero(type), ct));
        return success();
      })
      .Case<complex::ConjOp>([&](auto) {
        cts.add(op->getOperand(0), conj(ct));
        return success();
      })
      .Case<complex::AbsOp>([&](complex::AbsOp abs) {
        // d|z| = Re(conj(z/|z|) dz): dz = ct z / |z| (0 at 0)
        Value z = abs.getComplex();
        auto complexType = cast<ComplexType>(z.getType());
        Value safe = arith::SelectOp::create(
            b, loc,
            arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, r,
                                  zero(type)),
            constF(b, loc, type, 1.0), r);
        Value scale = arith::DivFOp::create(b, loc, ct, safe);
        cts.add(z, cmul(complex::CreateOp::create(b, loc, complexType, scale,
                                                  zero(type)),
                        z));
        return success();
      })
      .Default([&](Operation *) {
        return op->emitError("no adjoint for '") << op->getName() << "'";
      });
}

LogicalResult mlir::recur::buildScalarAdjoints(OpBuilder &b,
                                               ArrayRef<Operation *> ops,
                                               ScalarCotangents &cts) {
  for (Operation *op : llvm::reverse(ops)) {
    if (llvm::none_of(op->getResults(), [&](Value r) { return cts.get(r); }))
      continue;
    if (failed(buildScalarAdjoint(b, op, cts)))
      return failure();
  }
  return success();
}
