//===- OracleTest.cpp - tests of the float64 IR evaluator -----------------===//
//
// Part of the Recur project.
//
// Checks recur::oracle::evaluate three ways: small hand-written functions
// whose results the tests compute with direct loops (glue ops, reductions,
// slices, complex arithmetic, and recur ops with regions); layers compiled
// in-process by the front end, compared with loops written from the papers'
// equations quoted in the specs (GateLoop, LRU); and every layer of every
// example and front-end test spec, which must evaluate to finite outputs of
// the declared shapes. Error paths must name the op and its location.
//
//===----------------------------------------------------------------------===//

#include "recur/Frontend/MLIRGen.h"
#include "recur/Frontend/Parser.h"
#include "recur/Oracle/Evaluator.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <set>

using namespace recur;
using namespace recur::oracle;

namespace {

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

constexpr double kTol = 1e-12;

/// Normal samples with standard deviation `scale`.
class Random {
public:
  explicit Random(uint64_t seed) : engine(seed) {}

  Tensor<double> real(std::vector<int64_t> shape, double scale = 0.5) {
    Tensor<double> t(std::move(shape));
    for (double &x : t.data)
      x = scale * normal(engine);
    return t;
  }
  Tensor<Complex> complex(std::vector<int64_t> shape, double scale = 0.5) {
    Tensor<Complex> t(std::move(shape));
    for (Complex &z : t.data)
      z = Complex(scale * normal(engine), scale * normal(engine));
    return t;
  }
  /// Uniform in [0.1, 1.1): inside the domain of log, sqrt and rsqrt.
  Tensor<double> positive(std::vector<int64_t> shape) {
    Tensor<double> t(std::move(shape));
    for (double &x : t.data)
      x = 0.1 + uniform(engine);
    return t;
  }
  Tensor<bool> mask(std::vector<int64_t> shape) {
    Tensor<bool> t(std::move(shape));
    for (size_t i = 0; i < t.data.size(); ++i)
      t.data[i] = normal(engine) > 0;
    return t;
  }

private:
  std::mt19937_64 engine;
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> uniform;
};

/// Same shape, and |actual - expected| <= tol * max |expected| everywhere.
template <typename T>
testing::AssertionResult allClose(const Tensor<T> &actual,
                                  const Tensor<T> &expected,
                                  double tol = kTol) {
  if (actual.shape != expected.shape)
    return testing::AssertionFailure()
           << "shape " << reference::shapeString(actual.shape) << " vs "
           << reference::shapeString(expected.shape);
  double scale = 0.0;
  for (const T &e : expected.data)
    scale = std::max(scale, std::abs(e));
  for (size_t i = 0; i < expected.data.size(); ++i)
    if (!(std::abs(actual.data[i] - expected.data[i]) <= tol * scale))
      return testing::AssertionFailure()
             << "element " << i << ": " << actual.data[i] << " vs "
             << expected.data[i] << " (scale " << scale << ")";
  return testing::AssertionSuccess();
}

template <typename T>
testing::AssertionResult
allClose(const Value &actual, const Tensor<T> &expected, double tol = kTol) {
  const auto *tensor = std::get_if<Tensor<T>>(&actual);
  if (!tensor)
    return testing::AssertionFailure() << "got a " << describe(actual);
  return allClose(*tensor, expected, tol);
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

/// The row-major product of `a` [M, K] and `b` [K, N], read with explicit
/// leading sizes so that batched operands can be passed flattened.
Tensor<double> matmul(const Tensor<double> &a, const Tensor<double> &b) {
  int64_t k = b.shape[0], n = b.shape[1], m = a.numElements() / k;
  std::vector<int64_t> shape = a.shape;
  shape.back() = n;
  Tensor<double> c(shape);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t l = 0; l < k; ++l)
        s += a.data[i * k + l] * b.data[l * n + j];
      c.data[i * n + j] = s;
    }
  return c;
}

/// Owns a context with the front end's dialects and the modules parsed in
/// it.
class OracleTest : public testing::Test {
protected:
  OracleTest() {
    frontend::loadFrontendDialects(context);
    context.allowUnregisteredDialects();
  }

  /// Parses `ir` (reported as oracle-test.mlir) and returns its function
  /// `name`.
  mlir::func::FuncOp parse(llvm::StringRef ir, llvm::StringRef name) {
    mlir::ParserConfig config(&context);
    modules.push_back(mlir::parseSourceString<mlir::ModuleOp>(
        ir, config, "oracle-test.mlir"));
    if (!modules.back())
      return {};
    return modules.back()->lookupSymbol<mlir::func::FuncOp>(name);
  }

  /// Compiles layer `layer` of the spec at `path` with `defines`; null (and
  /// a test failure) when the front end reports an error.
  mlir::func::FuncOp compile(const std::string &path, const std::string &layer,
                             const std::map<std::string, int64_t> &defines) {
    frontend::CompileOptions options;
    options.layer = layer;
    options.defines = defines;
    auto parsed = parseSpec(path);
    if (!parsed)
      return {};
    frontend::DiagnosticEngine diags(*parsed->sourceMgr);
    modules.push_back(
        frontend::emitModule(parsed->module, context, options, diags, path));
    EXPECT_FALSE(diags.hadError()) << path << ": " << layer;
    if (!modules.back())
      return {};
    return modules.back()->lookupSymbol<mlir::func::FuncOp>(layer);
  }

  struct ParsedSpec {
    std::unique_ptr<llvm::SourceMgr> sourceMgr;
    frontend::Module module;
  };

  /// The AST of the spec at `path`.
  std::unique_ptr<ParsedSpec> parseSpec(const std::string &path) {
    auto buffer = llvm::MemoryBuffer::getFile(path);
    if (!buffer) {
      ADD_FAILURE() << "cannot read " << path;
      return nullptr;
    }
    auto parsed = std::make_unique<ParsedSpec>();
    parsed->sourceMgr = std::make_unique<llvm::SourceMgr>();
    llvm::StringRef text = (*buffer)->getBuffer();
    parsed->sourceMgr->AddNewSourceBuffer(std::move(*buffer), llvm::SMLoc());
    frontend::DiagnosticEngine diags(*parsed->sourceMgr);
    frontend::Parser parser(text, diags);
    parsed->module = parser.parseModule();
    if (diags.hadError()) {
      ADD_FAILURE() << path << " does not parse";
      return nullptr;
    }
    return parsed;
  }

  mlir::MLIRContext context;
  std::vector<mlir::OwningOpRef<mlir::ModuleOp>> modules;
};

/// The results of `evaluate`; none, and a test failure, on an error.
std::vector<Value> run(mlir::func::FuncOp func, std::vector<Value> args) {
  auto results = evaluate(func, args);
  if (!results) {
    ADD_FAILURE() << llvm::toString(results.takeError());
    return {};
  }
  return std::move(*results);
}

/// The message of the error `evaluate` must give.
std::string errorOf(mlir::func::FuncOp func, llvm::ArrayRef<Value> args) {
  auto results = evaluate(func, args);
  if (results)
    return "";
  return llvm::toString(results.takeError());
}

std::string sourcePath(const std::string &relative) {
  return std::string(RECUR_SOURCE_DIR) + "/" + relative;
}

//===----------------------------------------------------------------------===//
// Glue ops
//===----------------------------------------------------------------------===//

const char *kMatmul = R"mlir(
#mA = affine_map<(i, j, k) -> (i, k)>
#mB = affine_map<(i, j, k) -> (k, j)>
#mC = affine_map<(i, j, k) -> (i, j)>
func.func @matmul(%a: tensor<2x3xf32>, %b: tensor<3x4xf32>)
    -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x4xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<2x4xf32>)
      -> tensor<2x4xf32>
  %r = linalg.generic {indexing_maps = [#mA, #mB, #mC],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<2x3xf32>, tensor<3x4xf32>)
      outs(%c : tensor<2x4xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<2x4xf32>
  %n = linalg.matmul ins(%a, %b : tensor<2x3xf32>, tensor<3x4xf32>)
      outs(%c : tensor<2x4xf32>) -> tensor<2x4xf32>
  return %r, %n : tensor<2x4xf32>, tensor<2x4xf32>
}
)mlir";

TEST_F(OracleTest, MatmulGenericAndNamed) {
  mlir::func::FuncOp func = parse(kMatmul, "matmul");
  ASSERT_TRUE(func);
  Random random(1);
  Tensor<double> a = random.real({2, 3}), b = random.real({3, 4});
  std::vector<Value> results = run(func, {a, b});
  ASSERT_EQ(results.size(), 2u);
  Tensor<double> expected = matmul(a, b);
  EXPECT_TRUE(allClose(results[0], expected));
  EXPECT_TRUE(allClose(results[1], expected));
}

// Products whose body is `acc + x * y` run as a plain loop nest (Linalg.cpp,
// runMultiplyAccumulate); any other body goes through the interpreter. Both
// must give the same bits: a batched product with B read transposed (the
// steps of every loop differ), odd sizes, the sum on either side and a
// squared input, against the same products written `acc - (-(x * y))`,
// which the fast path does not take and IEEE arithmetic rounds the same.
const char *kProducts = R"mlir(
#mA = affine_map<(b, i, j, k) -> (b, i, k)>
#mBt = affine_map<(b, i, j, k) -> (j, k)>
#mC = affine_map<(b, i, j, k) -> (b, i, j)>
#mSq = affine_map<(b, i, j, k) -> (b, k, j)>
func.func @products(%a: tensor<3x5x7xf64>, %bt: tensor<2x7xf64>,
                    %c0: tensor<3x5x2xf64>)
    -> (tensor<3x5x2xf64>, tensor<3x5x2xf64>, tensor<3x5x2xf64>,
        tensor<3x7x5xf64>, tensor<3x7x5xf64>) {
  %left = linalg.generic {indexing_maps = [#mA, #mBt, #mC],
      iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%a, %bt : tensor<3x5x7xf64>, tensor<2x7xf64>)
      outs(%c0 : tensor<3x5x2xf64>) {
  ^bb0(%x: f64, %y: f64, %acc: f64):
    %p = arith.mulf %x, %y : f64
    %s = arith.addf %acc, %p : f64
    linalg.yield %s : f64
  } -> tensor<3x5x2xf64>
  %right = linalg.generic {indexing_maps = [#mA, #mBt, #mC],
      iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%a, %bt : tensor<3x5x7xf64>, tensor<2x7xf64>)
      outs(%c0 : tensor<3x5x2xf64>) {
  ^bb0(%x: f64, %y: f64, %acc: f64):
    %p = arith.mulf %y, %x : f64
    %s = arith.addf %p, %acc : f64
    linalg.yield %s : f64
  } -> tensor<3x5x2xf64>
  %slow = linalg.generic {indexing_maps = [#mA, #mBt, #mC],
      iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%a, %bt : tensor<3x5x7xf64>, tensor<2x7xf64>)
      outs(%c0 : tensor<3x5x2xf64>) {
  ^bb0(%x: f64, %y: f64, %acc: f64):
    %p = arith.mulf %x, %y : f64
    %n = arith.negf %p : f64
    %s = arith.subf %acc, %n : f64
    linalg.yield %s : f64
  } -> tensor<3x5x2xf64>
  // The squares of a's elements into a transposed output (every loop
  // parallel, one input read twice).
  %e = tensor.empty() : tensor<3x7x5xf64>
  %zero = arith.constant 0.0 : f64
  %z = linalg.fill ins(%zero : f64) outs(%e : tensor<3x7x5xf64>)
      -> tensor<3x7x5xf64>
  %sq = linalg.generic {indexing_maps = [
          affine_map<(b, k, j) -> (b, j, k)>,
          affine_map<(b, k, j) -> (b, k, j)>],
      iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%a : tensor<3x5x7xf64>) outs(%z : tensor<3x7x5xf64>) {
  ^bb0(%x: f64, %acc: f64):
    %p = arith.mulf %x, %x : f64
    %s = arith.addf %acc, %p : f64
    linalg.yield %s : f64
  } -> tensor<3x7x5xf64>
  %sqSlow = linalg.generic {indexing_maps = [
          affine_map<(b, k, j) -> (b, j, k)>,
          affine_map<(b, k, j) -> (b, k, j)>],
      iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%a : tensor<3x5x7xf64>) outs(%z : tensor<3x7x5xf64>) {
  ^bb0(%x: f64, %acc: f64):
    %p = arith.mulf %x, %x : f64
    %n = arith.negf %p : f64
    %s = arith.subf %acc, %n : f64
    linalg.yield %s : f64
  } -> tensor<3x7x5xf64>
  return %left, %right, %slow, %sq, %sqSlow
      : tensor<3x5x2xf64>, tensor<3x5x2xf64>, tensor<3x5x2xf64>,
        tensor<3x7x5xf64>, tensor<3x7x5xf64>
}
)mlir";

TEST_F(OracleTest, ProductsMatchTheInterpreterBitForBit) {
  mlir::func::FuncOp func = parse(kProducts, "products");
  ASSERT_TRUE(func);
  Random random(7);
  Tensor<double> a = random.real({3, 5, 7}), bt = random.real({2, 7});
  Tensor<double> c0 = random.real({3, 5, 2});
  std::vector<Value> results = run(func, {a, bt, c0});
  ASSERT_EQ(results.size(), 5u);
  const auto &left = std::get<Tensor<double>>(results[0]);
  const auto &right = std::get<Tensor<double>>(results[1]);
  const auto &slow = std::get<Tensor<double>>(results[2]);
  EXPECT_EQ(left.data, slow.data);
  EXPECT_EQ(right.data, slow.data);
  EXPECT_EQ(std::get<Tensor<double>>(results[3]).data,
            std::get<Tensor<double>>(results[4]).data);

  // And the products themselves, against a plain loop in the same order.
  Tensor<double> expected = c0;
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t i = 0; i < 5; ++i)
      for (int64_t j = 0; j < 2; ++j)
        for (int64_t k = 0; k < 7; ++k) {
          double product = a.data[(b * 5 + i) * 7 + k] * bt.data[j * 7 + k];
          double &acc = expected.data[(b * 5 + i) * 2 + j];
          acc = acc + product;
        }
  EXPECT_EQ(left.data, expected.data);
  Tensor<double> squares({3, 7, 5});
  for (int64_t b = 0; b < 3; ++b)
    for (int64_t k = 0; k < 7; ++k)
      for (int64_t j = 0; j < 5; ++j) {
        double x = a.data[(b * 5 + j) * 7 + k];
        squares.data[(b * 7 + k) * 5 + j] = x * x;
      }
  EXPECT_EQ(std::get<Tensor<double>>(results[3]).data, squares.data);
}

const char *kBroadcast = R"mlir(
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d1)>
func.func @bcast(%x: tensor<?x3xf64>, %b: tensor<3xf64>) -> tensor<?x3xf64> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?x3xf64>
  %e = tensor.empty(%n) : tensor<?x3xf64>
  %r = linalg.generic {indexing_maps = [#id, #row, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : tensor<?x3xf64>, tensor<3xf64>)
      outs(%e : tensor<?x3xf64>) {
  ^bb0(%u: f64, %v: f64, %o: f64):
    %t = math.tanh %u : f64
    %s = arith.addf %t, %v : f64
    linalg.yield %s : f64
  } -> tensor<?x3xf64>
  return %r : tensor<?x3xf64>
}
)mlir";

TEST_F(OracleTest, BroadcastingElementwiseWithDynamicSize) {
  mlir::func::FuncOp func = parse(kBroadcast, "bcast");
  ASSERT_TRUE(func);
  Random random(2);
  Tensor<double> x = random.real({5, 3}), b = random.real({3});
  std::vector<Value> results = run(func, {x, b});
  ASSERT_EQ(results.size(), func.getNumResults());
  Tensor<double> expected({5, 3});
  for (int64_t i = 0; i < 5; ++i)
    for (int64_t j = 0; j < 3; ++j)
      expected(i, j) = std::tanh(x(i, j)) + b(j);
  EXPECT_TRUE(allClose(results[0], expected));
}

const char *kSoftmax = R"mlir(
#id = affine_map<(d0, d1) -> (d0, d1)>
#red = affine_map<(d0, d1) -> (d0)>
func.func @softmax(%x: tensor<2x5xf32>) -> (tensor<2x5xf32>, tensor<2xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<2xf32>
  %m0 = linalg.fill ins(%ninf : f32) outs(%e1 : tensor<2xf32>) -> tensor<2xf32>
  %m = linalg.generic {indexing_maps = [#id, #red],
                       iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<2x5xf32>) outs(%m0 : tensor<2xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.maximumf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<2xf32>
  %e2 = tensor.empty() : tensor<2x5xf32>
  %ex = linalg.generic {indexing_maps = [#id, #red, #id],
                        iterator_types = ["parallel", "parallel"]}
      ins(%x, %m : tensor<2x5xf32>, tensor<2xf32>)
      outs(%e2 : tensor<2x5xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    %r = math.exp %d : f32
    linalg.yield %r : f32
  } -> tensor<2x5xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<2xf32>) -> tensor<2xf32>
  %s = linalg.generic {indexing_maps = [#id, #red],
                       iterator_types = ["parallel", "reduction"]}
      ins(%ex : tensor<2x5xf32>) outs(%s0 : tensor<2xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %a, %acc : f32
    linalg.yield %r : f32
  } -> tensor<2xf32>
  %y = linalg.generic {indexing_maps = [#id, #red, #id],
                       iterator_types = ["parallel", "parallel"]}
      ins(%ex, %s : tensor<2x5xf32>, tensor<2xf32>)
      outs(%e2 : tensor<2x5xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %r = arith.divf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<2x5xf32>
  return %y, %s : tensor<2x5xf32>, tensor<2xf32>
}
)mlir";

TEST_F(OracleTest, SoftmaxGlue) {
  mlir::func::FuncOp func = parse(kSoftmax, "softmax");
  ASSERT_TRUE(func);
  Random random(3);
  Tensor<double> x = random.real({2, 5}, 2.0);
  std::vector<Value> results = run(func, {x});
  ASSERT_EQ(results.size(), func.getNumResults());
  Tensor<double> y({2, 5}), sums({2});
  for (int64_t i = 0; i < 2; ++i) {
    double m = -INFINITY;
    for (int64_t j = 0; j < 5; ++j)
      m = std::max(m, x(i, j));
    for (int64_t j = 0; j < 5; ++j)
      sums(i) += std::exp(x(i, j) - m);
    for (int64_t j = 0; j < 5; ++j)
      y(i, j) = std::exp(x(i, j) - m) / sums(i);
  }
  EXPECT_TRUE(allClose(results[0], y));
  EXPECT_TRUE(allClose(results[1], sums));
}

/// acc = acc / 2 + x over the leading (reduction) dimension: the result
/// depends on the order, which must be the iteration order.
const char *kOrderedReduction = R"mlir(
#in = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> (d1)>
func.func @ordered(%x: tensor<?x?xf64>) -> tensor<?xf64> {
  %c1 = arith.constant 1 : index
  %n = tensor.dim %x, %c1 : tensor<?x?xf64>
  %e = tensor.empty(%n) : tensor<?xf64>
  %one = arith.constant 1.0 : f64
  %init = linalg.fill ins(%one : f64) outs(%e : tensor<?xf64>) -> tensor<?xf64>
  %r = linalg.generic {indexing_maps = [#in, #out],
                       iterator_types = ["reduction", "parallel"]}
      ins(%x : tensor<?x?xf64>) outs(%init : tensor<?xf64>) {
  ^bb0(%u: f64, %acc: f64):
    %half = arith.constant 0.5 : f64
    %h = arith.mulf %acc, %half : f64
    %s = arith.addf %h, %u : f64
    linalg.yield %s : f64
  } -> tensor<?xf64>
  return %r : tensor<?xf64>
}
)mlir";

TEST_F(OracleTest, ReductionAccumulatesInIterationOrder) {
  mlir::func::FuncOp func = parse(kOrderedReduction, "ordered");
  ASSERT_TRUE(func);
  Random random(4);
  Tensor<double> x = random.real({4, 3});
  std::vector<Value> results = run(func, {x});
  ASSERT_EQ(results.size(), func.getNumResults());
  Tensor<double> expected({3}, 1.0);
  for (int64_t i = 0; i < 4; ++i)
    for (int64_t j = 0; j < 3; ++j)
      expected(j) = expected(j) * 0.5 + x(i, j);
  EXPECT_TRUE(allClose(results[0], expected));
}

const char *kSlices = R"mlir(
func.func @slices(%x: tensor<2x4xf32>, %y: tensor<2x3xf32>)
    -> (tensor<2x7xf32>, tensor<2x2xf32>, tensor<4xf32>, tensor<2xf32>) {
  %e = tensor.empty() : tensor<2x7xf32>
  %a = tensor.insert_slice %x into %e[0, 0] [2, 4] [1, 1]
      : tensor<2x4xf32> into tensor<2x7xf32>
  %b = tensor.insert_slice %y into %a[0, 4] [2, 3] [1, 1]
      : tensor<2x3xf32> into tensor<2x7xf32>
  %c1 = arith.constant 1 : index
  %s = tensor.extract_slice %b[0, %c1] [2, 2] [1, 3]
      : tensor<2x7xf32> to tensor<2x2xf32>
  %r = tensor.extract_slice %b[1, 0] [1, 4] [1, 2]
      : tensor<2x7xf32> to tensor<4xf32>
  %c0 = arith.constant 0 : index
  %c6 = arith.constant 6 : index
  %p = tensor.extract %b[%c0, %c6] : tensor<2x7xf32>
  %q = tensor.extract %b[%c1, %c1] : tensor<2x7xf32>
  %f = tensor.from_elements %p, %q : tensor<2xf32>
  return %b, %s, %r, %f
      : tensor<2x7xf32>, tensor<2x2xf32>, tensor<4xf32>, tensor<2xf32>
}
)mlir";

TEST_F(OracleTest, InsertAndExtractSlices) {
  mlir::func::FuncOp func = parse(kSlices, "slices");
  ASSERT_TRUE(func);
  Random random(5);
  Tensor<double> x = random.real({2, 4}), y = random.real({2, 3});
  std::vector<Value> results = run(func, {x, y});
  ASSERT_EQ(results.size(), func.getNumResults());
  Tensor<double> joined({2, 7});
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 7; ++j)
      joined(i, j) = j < 4 ? x(i, j) : y(i, j - 4);
  Tensor<double> strided({2, 2});
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 2; ++j)
      strided(i, j) = joined(i, 1 + 3 * j);
  Tensor<double> row({4});
  for (int64_t j = 0; j < 4; ++j)
    row(j) = joined(1, 2 * j);
  Tensor<double> picked({2}, std::vector<double>{joined(0, 6), joined(1, 1)});
  EXPECT_TRUE(allClose(results[0], joined));
  EXPECT_TRUE(allClose(results[1], strided));
  EXPECT_TRUE(allClose(results[2], row));
  EXPECT_TRUE(allClose(results[3], picked));
}

const char *kComplex = R"mlir(
#id = affine_map<(d0) -> (d0)>
func.func @cplx(%re: tensor<3xf32>, %im: tensor<3xf32>,
                %z: tensor<3xcomplex<f32>>)
    -> (tensor<3xcomplex<f32>>, tensor<3xf32>) {
  %e = tensor.empty() : tensor<3xcomplex<f32>>
  %ef = tensor.empty() : tensor<3xf32>
  %w:2 = linalg.generic {indexing_maps = [#id, #id, #id, #id, #id],
                         iterator_types = ["parallel"]}
      ins(%re, %im, %z : tensor<3xf32>, tensor<3xf32>, tensor<3xcomplex<f32>>)
      outs(%e, %ef : tensor<3xcomplex<f32>>, tensor<3xf32>) {
  ^bb0(%a: f32, %b: f32, %c: complex<f32>, %o: complex<f32>, %p: f32):
    %u = complex.create %a, %b : complex<f32>
    %k = complex.constant [0.5 : f32, -0.25 : f32] : complex<f32>
    %v = complex.mul %u, %c : complex<f32>
    %x = complex.exp %v : complex<f32>
    %y = complex.add %x, %k : complex<f32>
    %cj = complex.conj %y : complex<f32>
    %q = complex.div %cj, %c : complex<f32>
    %r = complex.abs %q : complex<f32>
    %i = complex.im %q : complex<f32>
    %s = arith.addf %r, %i : f32
    linalg.yield %q, %s : complex<f32>, f32
  } -> (tensor<3xcomplex<f32>>, tensor<3xf32>)
  return %w#0, %w#1 : tensor<3xcomplex<f32>>, tensor<3xf32>
}
)mlir";

TEST_F(OracleTest, ComplexGlue) {
  mlir::func::FuncOp func = parse(kComplex, "cplx");
  ASSERT_TRUE(func);
  Random random(6);
  Tensor<double> re = random.real({3}), im = random.real({3});
  Tensor<Complex> z = random.complex({3});
  std::vector<Value> results = run(func, {re, im, z});
  ASSERT_EQ(results.size(), func.getNumResults());
  Tensor<Complex> q({3});
  Tensor<double> s({3});
  for (int64_t i = 0; i < 3; ++i) {
    Complex u(re(i), im(i));
    Complex y = std::exp(u * z(i)) + Complex(0.5, -0.25);
    q(i) = std::conj(y) / z(i);
    s(i) = std::abs(q(i)) + q(i).imag();
  }
  EXPECT_TRUE(allClose(results[0], q));
  EXPECT_TRUE(allClose(results[1], s));
}

/// linalg.index, index casts, cmpf/select, and maps with floordiv and mod
/// (the front end's heads / merge_heads layout).
const char *kIndexMaps = R"mlir(
#split = affine_map<(d0, d1, d2) -> (d0, d1 * 3 + d2)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#merge = affine_map<(d0, d1) -> (d0, d1 floordiv 3, d1 mod 3)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @maps(%x: tensor<2x6xf32>) -> (tensor<2x2x3xf32>, tensor<2x6xf32>) {
  %e = tensor.empty() : tensor<2x2x3xf32>
  %h = linalg.generic {indexing_maps = [#split, #id3],
                       iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : tensor<2x6xf32>) outs(%e : tensor<2x2x3xf32>) {
  ^bb0(%u: f32, %o: f32):
    %i = linalg.index 2 : index
    %j = linalg.index 1 : index
    %k = arith.addi %i, %j : index
    %ki = arith.index_cast %k : index to i64
    %f = arith.sitofp %ki : i64 to f32
    %gt = arith.cmpf ogt, %u, %f : f32
    %r = arith.select %gt, %u, %f : f32
    linalg.yield %r : f32
  } -> tensor<2x2x3xf32>
  %e2 = tensor.empty() : tensor<2x6xf32>
  %m = linalg.generic {indexing_maps = [#merge, #id2],
                       iterator_types = ["parallel", "parallel"]}
      ins(%h : tensor<2x2x3xf32>) outs(%e2 : tensor<2x6xf32>) {
  ^bb0(%u: f32, %o: f32):
    linalg.yield %u : f32
  } -> tensor<2x6xf32>
  return %h, %m : tensor<2x2x3xf32>, tensor<2x6xf32>
}
)mlir";

TEST_F(OracleTest, IndexOpsAndNonLinearMaps) {
  mlir::func::FuncOp func = parse(kIndexMaps, "maps");
  ASSERT_TRUE(func);
  Random random(7);
  Tensor<double> x = random.real({2, 6}, 2.0);
  std::vector<Value> results = run(func, {x});
  ASSERT_EQ(results.size(), func.getNumResults());
  Tensor<double> h({2, 2, 3});
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t j = 0; j < 2; ++j)
      for (int64_t i = 0; i < 3; ++i)
        h(b, j, i) = std::max(x(b, j * 3 + i), double(i + j));
  EXPECT_TRUE(allClose(results[0], h));
  EXPECT_TRUE(allClose(results[1], Tensor<double>({2, 6}, h.data)));
}

//===----------------------------------------------------------------------===//
// Recur ops
//===----------------------------------------------------------------------===//

const char *kLinearScan = R"mlir(
func.func @lscan(%a: tensor<2x5x3xf64>, %b: tensor<2x5x3xf64>,
                 %h0: tensor<2x3xf64>, %bc: tensor<2x5x3xcomplex<f64>>)
    -> (tensor<2x5x3xf64>, tensor<2x3xf64>, tensor<2x5x3xcomplex<f64>>,
        tensor<2x3xcomplex<f64>>) {
  %h, %last = recur.linear_scan %a, %b init(%h0 : tensor<2x3xf64>) along 1
      : tensor<2x5x3xf64>, tensor<2x5x3xf64>
  %hc, %lastc = recur.linear_scan %a, %bc along 1 reverse
      : tensor<2x5x3xf64>, tensor<2x5x3xcomplex<f64>>
  return %h, %last, %hc, %lastc
      : tensor<2x5x3xf64>, tensor<2x3xf64>, tensor<2x5x3xcomplex<f64>>,
        tensor<2x3xcomplex<f64>>
}
)mlir";

TEST_F(OracleTest, LinearScanWithInitAndReverse) {
  mlir::func::FuncOp func = parse(kLinearScan, "lscan");
  ASSERT_TRUE(func);
  Random random(8);
  Tensor<double> a = random.real({2, 5, 3}), b = random.real({2, 5, 3});
  Tensor<double> h0 = random.real({2, 3});
  Tensor<Complex> bc = random.complex({2, 5, 3});
  std::vector<Value> results = run(func, {a, b, h0, bc});
  ASSERT_EQ(results.size(), func.getNumResults());
  Tensor<double> h({2, 5, 3}), last({2, 3});
  Tensor<Complex> hc({2, 5, 3}), lastc({2, 3});
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t d = 0; d < 3; ++d) {
      double s = h0(n, d);
      for (int64_t t = 0; t < 5; ++t)
        h(n, t, d) = s = a(n, t, d) * s + b(n, t, d);
      last(n, d) = s;
      Complex z = 0;
      for (int64_t t = 4; t >= 0; --t)
        hc(n, t, d) = z = a(n, t, d) * z + bc(n, t, d);
      lastc(n, d) = z;
    }
  EXPECT_TRUE(allClose(results[0], h));
  EXPECT_TRUE(allClose(results[1], last));
  EXPECT_TRUE(allClose(results[2], hc));
  EXPECT_TRUE(allClose(results[3], lastc));
}

const char *kScan = R"mlir(
func.func @scan(%a: tensor<2x4xf64>, %b: tensor<2x4xf64>,
                %i0: tensor<2xf64>, %i1: tensor<2xf64>,
                %bc: tensor<2x4xcomplex<f64>>)
    -> (tensor<2x4xf64>, tensor<2x4xf64>, tensor<2x4xf64>, tensor<2x4xf64>,
        tensor<2x4xcomplex<f64>>) {
  %A, %H = recur.scan (%a, %b) init(%i0, %i1 : tensor<2xf64>, tensor<2xf64>)
      along 1 : tensor<2x4xf64>, tensor<2x4xf64> {
  ^bb0(%p1: f64, %p2: f64, %q1: f64, %q2: f64):
    %m = arith.mulf %p1, %q1 : f64
    %t = arith.mulf %q1, %p2 : f64
    %s = arith.addf %t, %q2 : f64
    recur.yield %m, %s : f64, f64
  }
  %half = arith.constant 0.5 : f64
  %R = recur.scan (%b) along 1 reverse : tensor<2x4xf64> {
  ^bb0(%p: f64, %q: f64):
    %h = arith.mulf %p, %half : f64
    %s = arith.subf %h, %q : f64
    recur.yield %s : f64
  }
  %Am, %Hm = recur.scan (%a, %bc) along 1
      : tensor<2x4xf64>, tensor<2x4xcomplex<f64>> {
  ^bb0(%p1: f64, %p2: complex<f64>, %q1: f64, %q2: complex<f64>):
    %m = arith.mulf %p1, %q1 : f64
    %zero = arith.constant 0.0 : f64
    %q1c = complex.create %q1, %zero : complex<f64>
    %t = complex.mul %q1c, %p2 : complex<f64>
    %s = complex.add %t, %q2 : complex<f64>
    recur.yield %m, %s : f64, complex<f64>
  }
  return %A, %H, %R, %Am, %Hm
      : tensor<2x4xf64>, tensor<2x4xf64>, tensor<2x4xf64>, tensor<2x4xf64>,
        tensor<2x4xcomplex<f64>>
}
)mlir";

TEST_F(OracleTest, ScanWithUserCombine) {
  mlir::func::FuncOp func = parse(kScan, "scan");
  ASSERT_TRUE(func);
  Random random(9);
  Tensor<double> a = random.real({2, 4}), b = random.real({2, 4});
  Tensor<double> i0 = random.real({2}), i1 = random.real({2});
  Tensor<Complex> bc = random.complex({2, 4});
  std::vector<Value> results = run(func, {a, b, i0, i1, bc});
  ASSERT_EQ(results.size(), func.getNumResults());
  Tensor<double> A({2, 4}), H({2, 4}), R({2, 4}), Am({2, 4});
  Tensor<Complex> Hm({2, 4});
  for (int64_t n = 0; n < 2; ++n) {
    // (p1, p2) . (q1, q2) = (p1 q1, q1 p2 + q2), starting from the init.
    double p1 = i0(n), p2 = i1(n);
    for (int64_t t = 0; t < 4; ++t) {
      p2 = a(n, t) * p2 + b(n, t);
      p1 = p1 * a(n, t);
      A(n, t) = p1;
      H(n, t) = p2;
    }
    // Reverse: c_3 = x_3, c_t = c_{t+1} / 2 - x_t (the accumulated value
    // first).
    R(n, 3) = b(n, 3);
    for (int64_t t = 2; t >= 0; --t)
      R(n, t) = R(n, t + 1) * 0.5 - b(n, t);
    // A real and a complex input, without init: c_0 = x_0.
    Am(n, 0) = a(n, 0);
    Hm(n, 0) = bc(n, 0);
    for (int64_t t = 1; t < 4; ++t) {
      Am(n, t) = Am(n, t - 1) * a(n, t);
      Hm(n, t) = a(n, t) * Hm(n, t - 1) + bc(n, t);
    }
  }
  EXPECT_TRUE(allClose(results[0], A));
  EXPECT_TRUE(allClose(results[1], H));
  EXPECT_TRUE(allClose(results[2], R));
  EXPECT_TRUE(allClose(results[3], Am));
  EXPECT_TRUE(allClose(results[4], Hm));
}

/// Per block: y = x * c + x (c broadcast over the block), then
/// c <- c / 2 + x for each position of the block in order.
const char *kBlockRecurrence = R"mlir(
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#bc = affine_map<(d0, d1, d2) -> (d0, d2)>
func.func @blocks(%x: tensor<2x6x3xf64>, %c0: tensor<2x3xf64>)
    -> (tensor<2x6x3xf64>, tensor<2x3xf64>) {
  %y, %c = recur.block_recurrence (%x : tensor<2x6x3xf64>)
      init(%c0 : tensor<2x3xf64>) block 2 along 1
      -> tensor<2x6x3xf64>, tensor<2x3xf64> {
  ^bb0(%xb: tensor<2x2x3xf64>, %cb: tensor<2x3xf64>):
    %e = tensor.empty() : tensor<2x2x3xf64>
    %yb = linalg.generic {indexing_maps = [#id3, #bc, #id3],
                          iterator_types = ["parallel", "parallel", "parallel"]}
        ins(%xb, %cb : tensor<2x2x3xf64>, tensor<2x3xf64>)
        outs(%e : tensor<2x2x3xf64>) {
    ^bb0(%u: f64, %v: f64, %o: f64):
      %s = arith.mulf %u, %v : f64
      %t = arith.addf %s, %u : f64
      linalg.yield %t : f64
    } -> tensor<2x2x3xf64>
    %cn = linalg.generic {indexing_maps = [#id3, #bc],
                          iterator_types = ["parallel", "reduction", "parallel"]}
        ins(%xb : tensor<2x2x3xf64>) outs(%cb : tensor<2x3xf64>) {
    ^bb0(%u: f64, %acc: f64):
      %h = arith.constant 0.5 : f64
      %m = arith.mulf %acc, %h : f64
      %s = arith.addf %m, %u : f64
      linalg.yield %s : f64
    } -> tensor<2x3xf64>
    recur.yield %yb, %cn : tensor<2x2x3xf64>, tensor<2x3xf64>
  }
  return %y, %c : tensor<2x6x3xf64>, tensor<2x3xf64>
}
)mlir";

TEST_F(OracleTest, BlockRecurrenceWithGlueBody) {
  mlir::func::FuncOp func = parse(kBlockRecurrence, "blocks");
  ASSERT_TRUE(func);
  Random random(10);
  Tensor<double> x = random.real({2, 6, 3}), c0 = random.real({2, 3});
  std::vector<Value> results = run(func, {x, c0});
  ASSERT_EQ(results.size(), func.getNumResults());
  Tensor<double> y({2, 6, 3}), c = c0;
  for (int64_t start = 0; start < 6; start += 2)
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t d = 0; d < 3; ++d) {
        double cb = c(n, d);
        for (int64_t p = start; p < start + 2; ++p) {
          y(n, p, d) = x(n, p, d) * cb + x(n, p, d);
          c(n, d) = c(n, d) * 0.5 + x(n, p, d);
        }
      }
  EXPECT_TRUE(allClose(results[0], y));
  EXPECT_TRUE(allClose(results[1], c));
}

/// A complex carried value and the step index, through lib/Reference's
/// double-only depth loop: z <- z * z / 2 + l.
const char *kDepthLoop = R"mlir(
#id = affine_map<(d0) -> (d0)>
func.func @depth(%z: tensor<3xcomplex<f64>>) -> tensor<3xcomplex<f64>> {
  %r = recur.depth_loop max_depth 4 init(%z : tensor<3xcomplex<f64>>) {
  ^bb0(%l: index, %c: tensor<3xcomplex<f64>>):
    %i = arith.index_cast %l : index to i64
    %f = arith.sitofp %i : i64 to f64
    %e = tensor.empty() : tensor<3xcomplex<f64>>
    %n = linalg.generic {indexing_maps = [#id, #id],
                         iterator_types = ["parallel"]}
        ins(%c : tensor<3xcomplex<f64>>) outs(%e : tensor<3xcomplex<f64>>) {
    ^bb0(%u: complex<f64>, %o: complex<f64>):
      %zero = arith.constant 0.0 : f64
      %step = complex.create %f, %zero : complex<f64>
      %half = complex.constant [0.5 : f64, 0.0 : f64] : complex<f64>
      %sq = complex.mul %u, %u : complex<f64>
      %h = complex.mul %sq, %half : complex<f64>
      %s = complex.add %h, %step : complex<f64>
      linalg.yield %s : complex<f64>
    } -> tensor<3xcomplex<f64>>
    recur.yield %n : tensor<3xcomplex<f64>>
  }
  return %r : tensor<3xcomplex<f64>>
}
)mlir";

TEST_F(OracleTest, DepthLoopCarriesComplexValues) {
  mlir::func::FuncOp func = parse(kDepthLoop, "depth");
  ASSERT_TRUE(func);
  Random random(11);
  Tensor<Complex> z = random.complex({3});
  std::vector<Value> results = run(func, {z});
  ASSERT_EQ(results.size(), func.getNumResults());
  Tensor<Complex> expected = z;
  for (int64_t l = 0; l < 4; ++l)
    for (Complex &w : expected.data)
      w = w * w * 0.5 + double(l);
  EXPECT_TRUE(allClose(results[0], expected));
}

const char *kCall = R"mlir(
#id = affine_map<(d0) -> (d0)>
func.func private @twice(%x: tensor<?xf64>) -> tensor<?xf64> {
  %r = linalg.generic {indexing_maps = [#id, #id],
                       iterator_types = ["parallel"]}
      ins(%x : tensor<?xf64>) outs(%x : tensor<?xf64>) {
  ^bb0(%u: f64, %o: f64):
    %s = arith.addf %u, %u : f64
    linalg.yield %s : f64
  } -> tensor<?xf64>
  return %r : tensor<?xf64>
}
func.func @caller(%x: tensor<?xf64>) -> tensor<?xf64> {
  %y = func.call @twice(%x) : (tensor<?xf64>) -> tensor<?xf64>
  %z = func.call @twice(%y) : (tensor<?xf64>) -> tensor<?xf64>
  return %z : tensor<?xf64>
}
)mlir";

TEST_F(OracleTest, CallsAreEvaluated) {
  mlir::func::FuncOp func = parse(kCall, "caller");
  ASSERT_TRUE(func);
  Tensor<double> x({3}, std::vector<double>{1.0, -2.5, 0.25});
  std::vector<Value> results = run(func, {x});
  ASSERT_EQ(results.size(), 1u);
  EXPECT_TRUE(allClose(results[0],
                       Tensor<double>({3}, std::vector<double>{4, -10, 1})));
}

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

TEST_F(OracleTest, UnknownOpIsNamedWithItsLocation) {
  mlir::func::FuncOp func = parse(R"mlir(
func.func @unknown(%x: tensor<2xf32>) -> tensor<2xf32> {
  %y = "test.mystery"(%x) : (tensor<2xf32>) -> tensor<2xf32>
  return %y : tensor<2xf32>
}
)mlir",
                                  "unknown");
  ASSERT_TRUE(func);
  std::string message = errorOf(func, {Tensor<double>({2})});
  EXPECT_NE(message.find("'test.mystery'"), std::string::npos) << message;
  EXPECT_NE(message.find("oracle-test.mlir\":3:"), std::string::npos)
      << message;
}

TEST_F(OracleTest, UnverifiedIRIsAnError) {
  mlir::ParserConfig config(&context, /*verifyAfterParse=*/false);
  modules.push_back(mlir::parseSourceString<mlir::ModuleOp>(R"mlir(
func.func @broken(%x: tensor<2xf32>) -> tensor<2xf32> {
  return
}
)mlir",
                                                            config));
  ASSERT_TRUE(modules.back());
  auto func = modules.back()->lookupSymbol<mlir::func::FuncOp>("broken");
  ASSERT_TRUE(func);
  std::string message = errorOf(func, {Tensor<double>({2})});
  EXPECT_NE(message.find("does not verify"), std::string::npos) << message;
}

TEST_F(OracleTest, UnsupportedRegisteredOpIsNamed) {
  mlir::func::FuncOp func = parse(R"mlir(
func.func @pad(%x: tensor<2xf32>) -> tensor<4xf32> {
  %zero = arith.constant 0.0 : f32
  %y = tensor.pad %x low[1] high[1] {
  ^bb0(%i: index):
    tensor.yield %zero : f32
  } : tensor<2xf32> to tensor<4xf32>
  return %y : tensor<4xf32>
}
)mlir",
                                  "pad");
  ASSERT_TRUE(func);
  std::string message = errorOf(func, {Tensor<double>({2})});
  EXPECT_NE(message.find("'tensor.pad'"), std::string::npos) << message;
  EXPECT_NE(message.find("not supported"), std::string::npos) << message;
}

TEST_F(OracleTest, WrongArgumentsAreErrors) {
  mlir::func::FuncOp func = parse(kMatmul, "matmul");
  ASSERT_TRUE(func);
  std::string count = errorOf(func, {Tensor<double>({2, 3})});
  EXPECT_NE(count.find("takes 2 arguments, got 1"), std::string::npos) << count;
  std::string shape =
      errorOf(func, {Tensor<double>({3, 3}), Tensor<double>({3, 4})});
  EXPECT_NE(shape.find("argument #0 holds tensor<3x3xf64>"), std::string::npos)
      << shape;
  std::string kind =
      errorOf(func, {Tensor<double>({2, 3}), Tensor<Complex>({3, 4})});
  EXPECT_NE(kind.find("argument #1"), std::string::npos) << kind;
}

TEST_F(OracleTest, DynamicShapeMismatchNamesTheOp) {
  mlir::func::FuncOp func = parse(R"mlir(
#id = affine_map<(d0) -> (d0)>
func.func @add(%x: tensor<?xf32>, %y: tensor<?xf32>) -> tensor<?xf32> {
  %r = linalg.generic {indexing_maps = [#id, #id, #id],
                       iterator_types = ["parallel"]}
      ins(%x, %y : tensor<?xf32>, tensor<?xf32>) outs(%x : tensor<?xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<?xf32>
  return %r : tensor<?xf32>
}
)mlir",
                                  "add");
  ASSERT_TRUE(func);
  std::string message =
      errorOf(func, {Tensor<double>({3}), Tensor<double>({4})});
  EXPECT_NE(message.find("'linalg.generic'"), std::string::npos) << message;
  EXPECT_NE(message.find("loop d0 has size 3"), std::string::npos) << message;
}

const char *kBadBlocks = R"mlir(
func.func @blocks(%x: tensor<1x?xf64>) -> tensor<1x?xf64> {
  %y = recur.block_recurrence (%x : tensor<1x?xf64>) block 2 along 1
      -> tensor<1x?xf64> {
  ^bb0(%xb: tensor<1x2xf64>):
    %z = "test.inside"(%xb) : (tensor<1x2xf64>) -> tensor<1x2xf64>
    recur.yield %z : tensor<1x2xf64>
  }
  return %y : tensor<1x?xf64>
}
)mlir";

TEST_F(OracleTest, ReferenceExceptionsAndRegionErrorsNameTheOps) {
  mlir::func::FuncOp func = parse(kBadBlocks, "blocks");
  ASSERT_TRUE(func);
  // T = 3 is no multiple of the block size: lib/Reference throws.
  std::string reference = errorOf(func, {Tensor<double>({1, 3})});
  EXPECT_NE(reference.find("'recur.block_recurrence' at"), std::string::npos)
      << reference;
  EXPECT_NE(reference.find("not a multiple of the block size"),
            std::string::npos)
      << reference;
  // T = 4: the body runs and fails on the unknown op inside it.
  std::string inner = errorOf(func, {Tensor<double>({1, 4})});
  EXPECT_NE(inner.find("'test.inside'"), std::string::npos) << inner;
  EXPECT_NE(inner.find("in a region of 'recur.block_recurrence'"),
            std::string::npos)
      << inner;
}

//===----------------------------------------------------------------------===//
// Layers compiled by the front end
//===----------------------------------------------------------------------===//

/// The arguments of a layer, found by their `recur.name`.
std::vector<Value> argsByName(mlir::func::FuncOp func,
                              const std::map<std::string, Value> &named) {
  std::vector<Value> args;
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    auto name = func.getArgAttrOfType<mlir::StringAttr>(i, "recur.name");
    auto it = name ? named.find(name.str()) : named.end();
    EXPECT_NE(it, named.end()) << "no value for argument #" << i;
    args.push_back(it != named.end() ? it->second : Value(int64_t(0)));
  }
  return args;
}

TEST_F(OracleTest, GateLoopMaxHeadedMatchesThePaper) {
  const int64_t B = 2, T = 5, D = 8;
  mlir::func::FuncOp func = compile(sourcePath("examples/gateloop.recur"),
                                    "GateLoopMaxHeaded", {{"D", D}});
  ASSERT_TRUE(func);
  Random random(12);
  Tensor<double> x = random.real({B, T, D});
  std::map<std::string, Tensor<double>> w;
  for (const char *name : {"Wq", "Wk", "Wv", "Wg", "Wth"})
    w[name] = random.real({D, D}, 0.4);
  Tensor<Complex> h0 = random.complex({B, D});
  std::map<std::string, Value> named = {{"x", x}, {"h", h0}};
  for (auto &[name, value] : w)
    named[name] = value;
  std::vector<Value> results = run(func, argsByName(func, named));
  ASSERT_EQ(results.size(), 2u);

  // (24-25) a = sigmoid(x W_gamma) exp(i x W_theta); (7) h_n = a_n h_{n-1}
  // + k_n v_n; (8) y_n = q_n Re(h_n).
  Tensor<double> q = matmul(x, w["Wq"]), k = matmul(x, w["Wk"]);
  Tensor<double> v = matmul(x, w["Wv"]), g = matmul(x, w["Wg"]);
  Tensor<double> th = matmul(x, w["Wth"]);
  Tensor<double> y({B, T, D});
  Tensor<Complex> last({B, D});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t d = 0; d < D; ++d) {
      Complex h = h0(b, d);
      for (int64_t t = 0; t < T; ++t) {
        Complex a = sigmoid(g(b, t, d)) *
                    Complex(std::cos(th(b, t, d)), std::sin(th(b, t, d)));
        h = a * h + k(b, t, d) * v(b, t, d);
        y(b, t, d) = q(b, t, d) * h.real();
      }
      last(b, d) = h;
    }
  EXPECT_TRUE(allClose(results[0], y));
  EXPECT_TRUE(allClose(results[1], last));
}

TEST_F(OracleTest, GateLoopHeadedMatchesThePaper) {
  const int64_t B = 2, T = 5, D = 8, H = 2, dk = 3, dv = D / H;
  mlir::func::FuncOp func =
      compile(sourcePath("examples/gateloop.recur"), "GateLoop",
              {{"D", D}, {"H", H}, {"dk", dk}});
  ASSERT_TRUE(func);
  Random random(13);
  Tensor<double> x = random.real({B, T, D});
  std::map<std::string, Tensor<double>> w;
  for (const char *name : {"Wq", "Wk", "Wg", "Wth"})
    w[name] = random.real({D, H * dk}, 0.4);
  w["Wv"] = random.real({D, D}, 0.4);
  Tensor<Complex> s0 = random.complex({B, H, dk, dv});
  std::map<std::string, Value> named = {{"x", x}, {"S", s0}};
  for (auto &[name, value] : w)
    named[name] = value;
  std::vector<Value> results = run(func, argsByName(func, named));
  ASSERT_EQ(results.size(), 2u);

  // Per head h (columns h*dk .. of the projections): S_n[i, j] = a_n[i]
  // S_{n-1}[i, j] + k_n[i] v_n[j], y_n[j] = Re(sum_i q_n[i] S_n[i, j]),
  // merged back to column h*dv + j.
  Tensor<double> q = matmul(x, w["Wq"]), k = matmul(x, w["Wk"]);
  Tensor<double> v = matmul(x, w["Wv"]), g = matmul(x, w["Wg"]);
  Tensor<double> th = matmul(x, w["Wth"]);
  Tensor<double> y({B, T, D});
  Tensor<Complex> s = s0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < T; ++t) {
        for (int64_t i = 0; i < dk; ++i) {
          int64_t c = h * dk + i;
          Complex a = sigmoid(g(b, t, c)) *
                      Complex(std::cos(th(b, t, c)), std::sin(th(b, t, c)));
          for (int64_t j = 0; j < dv; ++j)
            s(b, h, i, j) =
                a * s(b, h, i, j) + k(b, t, c) * v(b, t, h * dv + j);
        }
        for (int64_t j = 0; j < dv; ++j) {
          Complex sum = 0;
          for (int64_t i = 0; i < dk; ++i)
            sum += q(b, t, h * dk + i) * s(b, h, i, j);
          y(b, t, h * dv + j) = sum.real();
        }
      }
  EXPECT_TRUE(allClose(results[0], y));
  EXPECT_TRUE(allClose(results[1], s));
}

TEST_F(OracleTest, LRUMatchesThePaper) {
  const int64_t B = 2, T = 6, D = 8, N = 4;
  mlir::func::FuncOp func =
      compile(sourcePath("examples/lru.recur"), "LRU", {{"D", D}, {"N", N}});
  ASSERT_TRUE(func);
  Random random(14);
  Tensor<double> x = random.real({B, T, D});
  Tensor<double> nu = random.real({N}, 1.0), theta = random.real({N}, 1.0);
  Tensor<double> bRe = random.real({D, N}), bIm = random.real({D, N});
  Tensor<double> cRe = random.real({N, D}), cIm = random.real({N, D});
  Tensor<double> dSkip = random.real({D});
  Tensor<Complex> h0 = random.complex({B, N});
  std::vector<Value> results = run(func, argsByName(func, {{"x", x},
                                                           {"nu_log", nu},
                                                           {"theta_log", theta},
                                                           {"B_re", bRe},
                                                           {"B_im", bIm},
                                                           {"C_re", cRe},
                                                           {"C_im", cIm},
                                                           {"D_skip", dSkip},
                                                           {"h", h0}}));
  ASSERT_EQ(results.size(), 2u);

  // lambda = exp(-exp(nu) + i exp(theta)), gamma = sqrt(1 - |lambda|^2),
  // h_t = lambda h_{t-1} + gamma (B x_t), y_t = Re(C h_t) + D x_t.
  Tensor<double> xbRe = matmul(x, bRe), xbIm = matmul(x, bIm);
  Tensor<double> hRe({B, T, N}), hIm({B, T, N});
  Tensor<Complex> last({B, N});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t n = 0; n < N; ++n) {
      Complex lambda = std::exp(Complex(-std::exp(nu(n)), std::exp(theta(n))));
      double gamma = std::sqrt(1 - std::norm(lambda));
      Complex h = h0(b, n);
      for (int64_t t = 0; t < T; ++t) {
        h = lambda * h + gamma * Complex(xbRe(b, t, n), xbIm(b, t, n));
        hRe(b, t, n) = h.real();
        hIm(b, t, n) = h.imag();
      }
      last(b, n) = h;
    }
  Tensor<double> y = matmul(hRe, cRe), yIm = matmul(hIm, cIm);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t d = 0; d < D; ++d)
        y(b, t, d) += -yIm(b, t, d) + dSkip(d) * x(b, t, d);
  EXPECT_TRUE(allClose(results[0], y, 1e-11));
  EXPECT_TRUE(allClose(results[1], last, 1e-11));
}

//===----------------------------------------------------------------------===//
// Every layer of every spec
//===----------------------------------------------------------------------===//

/// Random arguments for a function whose argument types are all static;
/// real ones `positive` or normal.
std::vector<Value> randomArgs(mlir::func::FuncOp func, Random &random,
                              bool positive) {
  std::vector<Value> args;
  for (mlir::Type type : func.getArgumentTypes()) {
    auto tensor = mlir::dyn_cast<mlir::RankedTensorType>(type);
    if (!tensor) {
      args.push_back(int64_t(1));
      continue;
    }
    EXPECT_TRUE(tensor.hasStaticShape());
    std::vector<int64_t> shape(tensor.getShape());
    mlir::Type element = tensor.getElementType();
    if (mlir::isa<mlir::ComplexType>(element))
      args.push_back(random.complex(shape));
    else if (element.isInteger(1))
      args.push_back(random.mask(shape));
    else if (element.isInteger(32))
      args.push_back(Tensor<int32_t>(shape));
    else
      args.push_back(positive ? random.positive(shape) : random.real(shape));
  }
  return args;
}

/// Fails unless `value` has `type`'s shape and element kind and every
/// element is finite.
testing::AssertionResult finiteOfType(const Value &value, mlir::Type type) {
  auto tensor = mlir::dyn_cast<mlir::RankedTensorType>(type);
  if (!tensor)
    return std::holds_alternative<int64_t>(value)
               ? testing::AssertionSuccess()
               : testing::AssertionFailure() << "expected an index";
  if (shapeOf(value) != std::vector<int64_t>(tensor.getShape()))
    return testing::AssertionFailure() << "got " << describe(value);
  mlir::Type element = tensor.getElementType();
  if (const auto *real = std::get_if<Tensor<double>>(&value)) {
    if (!mlir::isa<mlir::FloatType>(element))
      return testing::AssertionFailure() << "got " << describe(value);
    for (double x : real->data)
      if (!std::isfinite(x))
        return testing::AssertionFailure() << "non-finite element " << x;
  } else if (const auto *complex = std::get_if<Tensor<Complex>>(&value)) {
    if (!mlir::isa<mlir::ComplexType>(element))
      return testing::AssertionFailure() << "got " << describe(value);
    for (Complex z : complex->data)
      if (!std::isfinite(z.real()) || !std::isfinite(z.imag()))
        return testing::AssertionFailure() << "non-finite element";
  }
  return testing::AssertionSuccess();
}

/// Compiles every layer of the spec at `path` with every runtime dimension
/// fixed (B to 2, the others to 4) and the dims in `shrink` overridden where
/// the layer declares them, evaluates it on seeded random arguments (real
/// ones `positive` or normal) and checks the results. Returns the number of
/// layers.
class EveryLayerTest : public OracleTest {
protected:
  int checkSpec(const std::string &path,
                const std::map<std::string, int64_t> &shrink, bool positive) {
    auto parsed = parseSpec(path);
    if (!parsed)
      return 0;
    int count = 0;
    for (const frontend::LayerDecl &layer : parsed->module.layers) {
      std::map<std::string, int64_t> defines;
      for (const frontend::DimDecl &dim : layer.dims) {
        auto it = shrink.find(dim.name);
        if (it != shrink.end())
          defines[dim.name] = it->second;
        else if (!dim.value)
          defines[dim.name] = dim.name == "B" ? 2 : 4;
      }
      SCOPED_TRACE(path + ": layer " + layer.name);
      mlir::func::FuncOp func = compile(path, layer.name, defines);
      if (!func) {
        ADD_FAILURE() << "does not compile";
        continue;
      }
      Random random(100 + count);
      auto results = evaluate(func, randomArgs(func, random, positive));
      ++count;
      if (!results) {
        ADD_FAILURE() << llvm::toString(results.takeError());
        continue;
      }
      mlir::TypeRange types = func.getResultTypes();
      EXPECT_EQ(results->size(), types.size());
      for (size_t i = 0; i < std::min(results->size(), types.size()); ++i)
        EXPECT_TRUE(finiteOfType((*results)[i], types[i])) << "result #" << i;
    }
    return count;
  }
};

TEST_F(EveryLayerTest, Examples) {
  // Small dims that keep every layer's constraints (heads divide widths,
  // blocks divide the segment).
  const std::map<std::string, std::map<std::string, int64_t>> shrink = {
      {"block_recurrent",
       {{"D", 16}, {"H", 2}, {"W", 4}, {"S", 4}, {"F", 16}, {"T", 8}}},
      {"custom_scan", {{"D", 8}}},
      {"gateloop", {{"D", 8}, {"H", 2}, {"dk", 2}}},
      {"lru", {{"D", 8}, {"N", 4}}},
      {"membart", {{"N", 4}, {"K", 3}, {"D", 16}, {"NH", 2}, {"F", 16}}},
      {"retnet", {{"D", 16}, {"H", 2}}},
      {"sparse_universal",
       {{"D", 16}, {"H", 2}, {"E", 4}, {"K", 2}, {"F", 16}, {"L", 3}}},
      {"transformer_xl", {{"L", 4}, {"M", 4}, {"D", 16}, {"H", 2}, {"F", 16}}},
  };
  std::error_code ec;
  int layers = 0;
  std::set<std::string> seen;
  for (llvm::sys::fs::directory_iterator it(sourcePath("examples"), ec), end;
       it != end && !ec; it.increment(ec)) {
    llvm::StringRef path = it->path();
    if (!path.ends_with(".recur"))
      continue;
    std::string stem = llvm::sys::path::stem(path).str();
    seen.insert(stem);
    auto dims = shrink.find(stem);
    layers += checkSpec(path.str(),
                        dims == shrink.end() ? std::map<std::string, int64_t>{}
                                             : dims->second,
                        /*positive=*/false);
  }
  EXPECT_FALSE(ec) << ec.message();
  // Each spec above must still exist; the examples hold 15 layers.
  for (const auto &entry : shrink)
    EXPECT_TRUE(seen.count(entry.first)) << entry.first;
  EXPECT_GE(layers, 15);
}

TEST_F(EveryLayerTest, FrontEndTestSpecs) {
  std::error_code ec;
  int specs = 0;
  for (llvm::sys::fs::directory_iterator it(sourcePath("test/Frontend"), ec),
       end;
       it != end && !ec; it.increment(ec)) {
    llvm::StringRef path = it->path();
    if (!path.ends_with(".recur"))
      continue;
    ++specs;
    // Positive inputs: the specs apply log, sqrt and rsqrt to them.
    checkSpec(path.str(), {}, /*positive=*/true);
  }
  EXPECT_FALSE(ec) << ec.message();
  EXPECT_GE(specs, 20);
}

} // namespace
