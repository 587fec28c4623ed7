//===- RecurOps.cpp - fixture for check-verifier-coverage.py --------------===//
//
// Not compiled. A stand-in for dialects/Recur/IR/RecurOps.cpp with the forms
// the coverage check has to read, and a test directory (tests/) that leaves
// some messages without a negative test.
//
// A commented-out call is not a message: emitOpError("commented out");
//
//===----------------------------------------------------------------------===//

namespace {

/// A helper shared by several ops: covered by a test on any op.
LogicalResult verifyWidth(Operation *op, int64_t width) {
  if (width < 1)
    return op->emitOpError("'width' must be positive, got ") << width;
  return success();
}

} // namespace

LogicalResult FooOp::inferReturnTypes(
    MLIRContext *context, std::optional<Location> location, Adaptor adaptor,
    SmallVectorImpl<Type> &inferredReturnTypes) {
  if (adaptor.getAxis() < 0)
    return emitOptionalError(
        location, "'axis' ", adaptor.getAxis(), " of 'foo' is negative");
  return success();
}

LogicalResult FooOp::verify() {
  char sep = '"';
  if (getLength() % 2)
    return emitOpError("'length' (")
           << getLength() << ") must be even; the \"pairs\" layout, "
           << "split " "over literals, needs it";
  if (getName() != "x")
    return emitOpError("shares a message");
  // Covered only by a test that spells the first words of the message.
  if (getRank() > 3)
    return emitOpError("'rank' ")
           << getRank() << " is above the supported maximum of " << 3;
  return verifyWidth(*this, getWidth());
}

LogicalResult
BarOp::verify() {
  // The same text as in FooOp::verify, but only foo has a test for it.
  if (getName() != "x")
    return emitOpError("shares a message");
  if (getCount() < 0)
    return emitOpError("'count' must be non-negative, got ") << getCount();
  return success();
}
