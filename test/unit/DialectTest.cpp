//===- DialectTest.cpp - C++ API tests of the recur dialect ---------------===//
//
// Part of the Recur project.
//
// Builds recur ops through the C++ API, as the front end will, and checks the
// inferred result types and the verifier from that side.
//
//===----------------------------------------------------------------------===//

#include "Recur/IR/Recur.h"
#include "recur/Reference/Reference.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"

#include "gtest/gtest.h"

#include <cstdint>
#include <string>
#include <utility>

using namespace mlir;
using namespace mlir::recur;

namespace {

class RecurDialectTest : public ::testing::Test {
protected:
  RecurDialectTest() : builder(&context) {
    context.loadDialect<RecurDialect, func::FuncDialect>();
    loc = builder.getUnknownLoc();
    module = ModuleOp::create(builder, loc);
    builder.setInsertionPointToEnd(module->getBody());
  }

  RankedTensorType tensor(ArrayRef<int64_t> shape, Type elem = {}) {
    return RankedTensorType::get(shape, elem ? elem : builder.getF32Type());
  }

  /// A function whose arguments have `types`; the builder is left in it.
  Block *makeFunc(ArrayRef<Type> types) {
    auto fn = func::FuncOp::create(builder, loc, "f",
                                   builder.getFunctionType(types, {}));
    Block *entry = fn.addEntryBlock();
    builder.setInsertionPointToEnd(entry);
    return entry;
  }

  /// Verifies `op`, returning the first diagnostic message (empty if none).
  std::string verifyMessage(Operation *op) {
    std::string message;
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
      if (message.empty())
        message = diag.str();
      return success();
    });
    (void)mlir::verify(op);
    return message;
  }

  MLIRContext context;
  OpBuilder builder;
  Location loc = UnknownLoc::get(&context);
  OwningOpRef<ModuleOp> module;
};

TEST_F(RecurDialectTest, LinearScanInfersStateAndFinalState) {
  Type c32 = ComplexType::get(builder.getF32Type());
  Block *entry = makeFunc({tensor({2, 7, 4}), tensor({2, 7, 4, 3}, c32)});
  auto scan = LinearScanOp::create(builder, loc, entry->getArgument(0),
                                   entry->getArgument(1), Value(),
                                   /*axis=*/1, /*reverse=*/false);
  EXPECT_EQ(scan.getH().getType(), tensor({2, 7, 4, 3}, c32));
  EXPECT_EQ(scan.getLast().getType(), tensor({2, 4, 3}, c32));
  EXPECT_EQ(verifyMessage(scan), "");
}

TEST_F(RecurDialectTest, LinearScanRejectsANotLeadingB) {
  Block *entry = makeFunc({tensor({2, 7, 5}), tensor({2, 7, 4})});
  auto scan = LinearScanOp::create(builder, loc, entry->getArgument(0),
                                   entry->getArgument(1), Value(), 1, false);
  EXPECT_EQ(verifyMessage(scan),
            "'recur.linear_scan' op 'a' shape 2x7x5 is not a leading part "
            "of 'b' shape 2x7x4");
}

TEST_F(RecurDialectTest, GatedLinearAttentionStateShape) {
  Block *entry = makeFunc({tensor({4, 8, 33, 16}), tensor({4, 8, 33, 16}),
                           tensor({4, 8, 33, 24}), tensor({4, 8, 33, 16})});
  auto gla = GatedLinearAttentionOp::create(
      builder, loc, entry->getArgument(0), entry->getArgument(1),
      entry->getArgument(2), entry->getArgument(3), Value(),
      ScanAlgorithm::Auto, IntegerAttr());
  EXPECT_EQ(gla.getY().getType(), tensor({4, 8, 33, 24}));
  EXPECT_EQ(gla.getState().getType(), tensor({4, 8, 16, 24}));
  EXPECT_EQ(gla.getAlgorithm(), ScanAlgorithm::Auto);
  EXPECT_EQ(verifyMessage(gla), "");
}

TEST_F(RecurDialectTest, GateCountsItsOperandsPerKind) {
  Block *entry = makeFunc({tensor({2, 5}), tensor({5})});
  Value c = entry->getArgument(0), bias = entry->getArgument(1);
  auto fixed = GateOp::create(builder, loc, c.getType(), GateKind::Fixed, c,
                              c, ValueRange{bias}, FloatAttr(), FloatAttr());
  EXPECT_EQ(verifyMessage(fixed), "");
  auto lstm = GateOp::create(builder, loc, c.getType(), GateKind::Lstm, c, c,
                             ValueRange{bias}, FloatAttr(), FloatAttr());
  EXPECT_EQ(verifyMessage(lstm),
            "'recur.gate' op 'lstm' gate expects 2 gate operands, got 1");
  EXPECT_DOUBLE_EQ(lstm.getInputBiasOrDefault(), -1.0);
  EXPECT_DOUBLE_EQ(lstm.getForgetBiasOrDefault(), 1.0);
}

TEST_F(RecurDialectTest, RouteTopKInfersGatesAndIndices) {
  Block *entry = makeFunc({tensor({3, 11, 8})});
  auto route =
      RouteTopKOp::create(builder, loc, entry->getArgument(0),
                          builder.getI64IntegerAttr(2),
                          builder.getF64FloatAttr(1e-6));
  EXPECT_EQ(route.getGates().getType(), tensor({3, 11, 2}));
  EXPECT_EQ(route.getIndices().getType(),
            tensor({3, 11, 2}, builder.getI32Type()));
}

TEST_F(RecurDialectTest, EnumsRoundTripThroughStrings) {
  EXPECT_EQ(stringifyGateKind(GateKind::Update), "update");
  EXPECT_EQ(symbolizeBiasKind("t5"), BiasKind::T5);
  EXPECT_EQ(symbolizeMaskKind("memory"), MaskKind::Memory);
  EXPECT_FALSE(symbolizeScanAlgorithm("tree").has_value());
}

/// The kernels' T5 buckets come from thresholds the compiler finds by binary
/// search; at every distance they must equal the definition's logs (the
/// oracle's t5Bucket), including the first distance of each bucket, where
/// the f64 quotient is nearest an integer, and far beyond max_distance.
TEST(T5Buckets, ThresholdsGiveTheDefinitionsBucketAtEveryDistance) {
  const std::pair<int64_t, int64_t> tables[] = {
      {32, 128}, {2, 3},     {4, 3},      {8, 10},     {16, 40},
      {32, 17},  {32, 1000}, {64, 4096},  {128, 65},   {256, 100000},
      {6, 7},    {10, 1000}, {32, 20000}, {100, 1000}, {4, 1000000}};
  for (const auto &table : tables) {
    int64_t buckets = table.first, maxDistance = table.second;
    SCOPED_TRACE("num_buckets " + std::to_string(buckets) + ", max_distance " +
                 std::to_string(maxDistance));
    SmallVector<int64_t> thresholds = t5BucketThresholds(buckets, maxDistance);
    ASSERT_EQ(static_cast<int64_t>(thresholds.size()),
              buckets - buckets / 2 - 1);
    auto bucketOf = [&](int64_t n) {
      if (n < buckets / 2)
        return std::max<int64_t>(n, 0);
      int64_t bucket = buckets / 2;
      for (int64_t t : thresholds)
        bucket += n >= t;
      return bucket;
    };
    int64_t last = std::min<int64_t>(2 * maxDistance + 64, 400000);
    for (int64_t n = -3; n <= last; ++n)
      ASSERT_EQ(bucketOf(n),
                ::recur::reference::t5Bucket(n, buckets, maxDistance))
          << "distance " << n;
  }
}

} // namespace
