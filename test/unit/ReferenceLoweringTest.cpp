//===- ReferenceLoweringTest.cpp - reference loops against the oracle -----===//
//
// Part of the Recur project.
//
// Differential tests of the scalar reference lowering. Every recur op is
// written as a small MLIR function with static shapes, lowered by the
// reference pipeline (buildReferenceLoweringPipeline: RecurToLoops,
// bufferization with identity layouts at the function boundary, LLVM),
// JIT-compiled with mlir::ExecutionEngine and called through its C interface
// on random inputs. Its results are compared with the float64 oracle
// (lib/Reference), which shares no code with the lowering.
//
// Inputs are drawn in double and rounded to the element type before the
// oracle sees them, so only the lowering's arithmetic is measured. Errors are
// normwise, max|actual - expected| / max|expected|, per result; the worst one
// of each op and element type is printed at the end of the run.
//
//===----------------------------------------------------------------------===//

#include "Recur/IR/Recur.h"
#include "recur/Conversion/Passes.h"
#include "recur/Reference/Reference.h"
#include "recur/Target/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/ExecutionEngine/CRunnerUtils.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

using namespace recur::reference;

namespace {

//===----------------------------------------------------------------------===//
// Element types and tolerances
//===----------------------------------------------------------------------===//

enum class Dtype { F64, F32 };
const Dtype kDtypes[] = {Dtype::F64, Dtype::F32};

const char *name(Dtype dt) { return dt == Dtype::F64 ? "f64" : "f32"; }

/// float64: the lowering evaluates the oracle's sums in the oracle's order
/// with the same libm, so what differs is a handful of differently rounded
/// operations per result (the oracle's two-branch sigmoid, complex products
/// through complex-to-standard); any of those is ~1e-16 relative.
constexpr double kTolF64 = 1e-12;
/// float32: the unit roundoff is 6e-8. Every result here is a dot product
/// over d <= 8, a softmax over at most 40 keys, an expert over d x D <= 40
/// terms or a recurrence whose decays are contracting (|a| <= sigmoid(6),
/// memory of a few hundred steps even at T = 65536), so it carries at most a
/// few hundred roundings, mostly of random sign: the errors seen are 1e-7 to
/// 1e-6 normwise. 1e-5 leaves a margin of ten over the worst of them, while a
/// semantic slip (a key off the band, a wrong bias or bucket, a skipped step)
/// moves results by 1e-3 or more.
constexpr double kTolF32 = 1e-5;

double tolerance(Dtype dt) { return dt == Dtype::F64 ? kTolF64 : kTolF32; }

double roundTo(Dtype dt, double x) {
  return dt == Dtype::F64 ? x : static_cast<double>(static_cast<float>(x));
}

/// Substitutes `$NAME` placeholders (longest names first, so `$QK` is not
/// read as `$Q` followed by `K`).
std::string fill(std::string text,
                 std::vector<std::pair<std::string, std::string>> subs) {
  std::sort(subs.begin(), subs.end(), [](const auto &x, const auto &y) {
    return x.first.size() > y.first.size();
  });
  for (const auto &[key, value] : subs) {
    std::string pattern = "$" + key;
    for (size_t at = text.find(pattern); at != std::string::npos;
         at = text.find(pattern, at + value.size()))
      text.replace(at, pattern.size(), value);
  }
  return text;
}

/// `tensor<2x3xf32>`; a negative size is spelled `?`.
std::string ty(const std::vector<int64_t> &shape, const std::string &elem) {
  std::string s = "tensor<";
  for (int64_t d : shape)
    s += (d < 0 ? std::string("?") : std::to_string(d)) + "x";
  return s + elem + ">";
}

/// `shape` with the dimensions `dims` made dynamic (spelled `?` by `ty`).
std::vector<int64_t> dyn(std::vector<int64_t> shape,
                         const std::vector<size_t> &dims) {
  for (size_t d : dims)
    shape[d] = -1;
  return shape;
}

//===----------------------------------------------------------------------===//
// Worst errors
//===----------------------------------------------------------------------===//

std::map<std::string, std::map<std::string, double>> &worstErrors() {
  static std::map<std::string, std::map<std::string, double>> worst;
  return worst;
}

/// Prints the worst normwise error of each op and element type.
class WorstErrorReport : public ::testing::Environment {
public:
  void TearDown() override {
    if (worstErrors().empty())
      return;
    llvm::outs() << "worst normwise errors (max|diff| / max|ref|):\n";
    for (const auto &[op, byType] : worstErrors()) {
      llvm::outs() << "  " << op;
      for (const auto &[type, err] : byType)
        llvm::outs() << "  " << type << " " << llvm::format("%.2e", err);
      llvm::outs() << "\n";
    }
    llvm::outs().flush();
  }
};

[[maybe_unused]] ::testing::Environment *const kReport =
    ::testing::AddGlobalTestEnvironment(new WorstErrorReport);

/// Checks `actual` against `expected` normwise within the tolerance of `dt`
/// (and that every element is finite), recording the error under `op`.
template <typename T>
void expectClose(const std::string &op, Dtype dt, const Tensor<T> &actual,
                 const Tensor<T> &expected) {
  ASSERT_EQ(shapeString(actual.shape), shapeString(expected.shape)) << op;
  double diff = 0.0, scale = 0.0;
  bool finite = true;
  for (size_t n = 0; n < actual.data.size(); ++n) {
    finite &= std::isfinite(std::abs(actual.data[n]));
    diff = std::max(diff, std::abs(actual.data[n] - expected.data[n]));
    scale = std::max(scale, std::abs(expected.data[n]));
  }
  double err = !finite ? HUGE_VAL : scale > 0.0 ? diff / scale : diff;
  double &worst = worstErrors()[op][name(dt)];
  worst = std::max(worst, err);
  EXPECT_TRUE(finite) << op << " (" << name(dt) << ") has a NaN or inf";
  EXPECT_LE(err, tolerance(dt))
      << op << " (" << name(dt) << "): normwise error " << err;
}

//===----------------------------------------------------------------------===//
// Host tensors and the JIT
//===----------------------------------------------------------------------===//

/// The values of a function argument or result, whatever its element type
/// (reals, integers and booleans in the real part).
struct HostTensor {
  std::vector<int64_t> shape;
  std::vector<Complex> values;
};

HostTensor host(const Tensor<double> &t) {
  return {t.shape, std::vector<Complex>(t.data.begin(), t.data.end())};
}
HostTensor host(const Tensor<Complex> &t) { return {t.shape, t.data}; }
HostTensor host(const Tensor<int32_t> &t) {
  HostTensor h{t.shape, {}};
  for (int32_t x : t.data)
    h.values.emplace_back(static_cast<double>(x), 0.0);
  return h;
}
HostTensor host(const Tensor<bool> &t) {
  HostTensor h{t.shape, {}};
  for (bool x : t.data)
    h.values.emplace_back(x ? 1.0 : 0.0, 0.0);
  return h;
}

Tensor<double> real(const HostTensor &h) {
  Tensor<double> t(h.shape);
  for (size_t n = 0; n < h.values.size(); ++n)
    t.data[n] = h.values[n].real();
  return t;
}
Tensor<Complex> complexOf(const HostTensor &h) {
  return Tensor<Complex>(h.shape, h.values);
}
Tensor<int32_t> ints(const HostTensor &h) {
  Tensor<int32_t> t(h.shape);
  for (size_t n = 0; n < h.values.size(); ++n)
    t.data[n] = static_cast<int32_t>(h.values[n].real());
  return t;
}

enum class Elem { F32, F64, C32, C64, I32, I1 };

Elem elemOf(mlir::Type type) {
  if (type.isF32())
    return Elem::F32;
  if (type.isF64())
    return Elem::F64;
  if (type.isInteger(32))
    return Elem::I32;
  if (type.isInteger(1))
    return Elem::I1;
  auto complex = mlir::cast<mlir::ComplexType>(type);
  return complex.getElementType().isF32() ? Elem::C32 : Elem::C64;
}

size_t elemBytes(Elem elem) {
  switch (elem) {
  case Elem::F32:
  case Elem::I32:
    return 4;
  case Elem::F64:
  case Elem::C32:
    return 8;
  case Elem::C64:
    return 16;
  case Elem::I1:
    return 1;
  }
  return 0;
}

void store(Elem elem, const Complex &x, char *at) {
  switch (elem) {
  case Elem::F32: {
    float v = static_cast<float>(x.real());
    std::memcpy(at, &v, sizeof v);
    return;
  }
  case Elem::F64: {
    double v = x.real();
    std::memcpy(at, &v, sizeof v);
    return;
  }
  case Elem::C32: {
    float v[2] = {static_cast<float>(x.real()), static_cast<float>(x.imag())};
    std::memcpy(at, v, sizeof v);
    return;
  }
  case Elem::C64: {
    double v[2] = {x.real(), x.imag()};
    std::memcpy(at, v, sizeof v);
    return;
  }
  case Elem::I32: {
    int32_t v = static_cast<int32_t>(x.real());
    std::memcpy(at, &v, sizeof v);
    return;
  }
  case Elem::I1:
    *at = x.real() != 0.0 ? 1 : 0;
    return;
  }
}

Complex load(Elem elem, const char *at) {
  switch (elem) {
  case Elem::F32: {
    float v;
    std::memcpy(&v, at, sizeof v);
    return v;
  }
  case Elem::F64: {
    double v;
    std::memcpy(&v, at, sizeof v);
    return v;
  }
  case Elem::C32: {
    float v[2];
    std::memcpy(v, at, sizeof v);
    return Complex(v[0], v[1]);
  }
  case Elem::C64: {
    double v[2];
    std::memcpy(v, at, sizeof v);
    return Complex(v[0], v[1]);
  }
  case Elem::I32: {
    int32_t v;
    std::memcpy(&v, at, sizeof v);
    return static_cast<double>(v);
  }
  case Elem::I1:
    return (*at & 1) ? 1.0 : 0.0;
  }
  return 0.0;
}

/// The context every test module is parsed in: all upstream dialects,
/// extensions and passes (the pipeline is parsed from text), recur, and the
/// translations to LLVM IR that the ExecutionEngine needs.
mlir::MLIRContext &jitContext() {
  static std::unique_ptr<mlir::MLIRContext> context = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    mlir::registerAllPasses();
    mlir::recur::registerRecurConversionPasses();
    mlir::DialectRegistry registry;
    mlir::registerAllDialects(registry);
    mlir::registerAllExtensions(registry);
    mlir::registerBuiltinDialectTranslation(registry);
    mlir::registerLLVMDialectTranslation(registry);
    registry.insert<mlir::recur::RecurDialect>();
    return std::make_unique<mlir::MLIRContext>(
        registry, mlir::MLIRContext::Threading::DISABLED);
  }();
  return *context;
}

/// One row-major buffer and its memref descriptor: allocated and aligned
/// pointers, offset, sizes, strides (the layout of StridedMemRefType).
struct ArgBuffer {
  std::vector<uint64_t> storage; // 8-byte aligned elements
  std::vector<int64_t> descriptor;
};

ArgBuffer makeArg(Elem elem, const HostTensor &t) {
  ArgBuffer a;
  size_t bytes = elemBytes(elem) * t.values.size();
  a.storage.assign(std::max<size_t>(1, (bytes + 7) / 8), 0);
  char *base = reinterpret_cast<char *>(a.storage.data());
  for (size_t n = 0; n < t.values.size(); ++n)
    store(elem, t.values[n], base + n * elemBytes(elem));
  auto ptr = static_cast<int64_t>(reinterpret_cast<intptr_t>(base));
  a.descriptor = {ptr, ptr, 0};
  a.descriptor.insert(a.descriptor.end(), t.shape.begin(), t.shape.end());
  std::vector<int64_t> strides(t.shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(t.shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * t.shape[d + 1];
  a.descriptor.insert(a.descriptor.end(), strides.begin(), strides.end());
  return a;
}

/// Lowers `source`, a module whose function @f (with llvm.emit_c_interface)
/// takes and returns ranked tensors (static shapes, or dynamic ones that
/// `args` fix at run time), through the reference pipeline (after the
/// textual pipeline `before` when given), JIT-compiles it, calls @f on
/// `args` and returns its results (nothing, after a test failure, when any
/// step fails).
std::vector<HostTensor> runLowered(const std::string &source,
                                   const std::vector<HostTensor> &args,
                                   const std::string &before = "") {
  mlir::MLIRContext &context = jitContext();
  std::string diagnostics;
  llvm::raw_string_ostream diagOS(diagnostics);
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &d) {
    diagOS << d.getLocation() << ": " << d << "\n";
    return mlir::success();
  });
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(source,
                                              mlir::ParserConfig(&context));
  if (!module) {
    ADD_FAILURE() << "cannot parse:\n" << diagnostics << source;
    return {};
  }
  auto fn = module->lookupSymbol<mlir::func::FuncOp>("f");
  if (!fn) {
    ADD_FAILURE() << "no function @f in:\n" << source;
    return {};
  }
  std::vector<Elem> argElems, resultElems;
  std::vector<int64_t> resultRanks;
  for (auto [i, type] : llvm::enumerate(fn.getArgumentTypes())) {
    auto tensor = mlir::cast<mlir::RankedTensorType>(type);
    argElems.push_back(elemOf(tensor.getElementType()));
    bool matches =
        i < args.size() &&
        tensor.getRank() == static_cast<int64_t>(args[i].shape.size());
    for (int64_t d = 0; matches && d < tensor.getRank(); ++d)
      matches =
          tensor.isDynamicDim(d) || tensor.getDimSize(d) == args[i].shape[d];
    if (!matches) {
      ADD_FAILURE() << "argument #" << i << " does not match " << source;
      return {};
    }
  }
  if (args.size() != argElems.size()) {
    ADD_FAILURE() << "@f takes " << argElems.size() << " arguments, given "
                  << args.size();
    return {};
  }
  for (mlir::Type type : fn.getResultTypes()) {
    auto tensor = mlir::cast<mlir::RankedTensorType>(type);
    resultElems.push_back(elemOf(tensor.getElementType()));
    resultRanks.push_back(tensor.getRank());
  }

  mlir::PassManager pm(&context, mlir::ModuleOp::getOperationName());
  if (!before.empty() &&
      mlir::failed(mlir::parsePassPipeline(before, pm, diagOS))) {
    ADD_FAILURE() << "cannot parse the pipeline " << before << ":\n"
                  << diagnostics;
    return {};
  }
  mlir::recur::buildReferenceLoweringPipeline(pm);
  if (mlir::failed(pm.run(*module))) {
    ADD_FAILURE() << "the reference pipeline failed:\n"
                  << diagnostics << source;
    return {};
  }

  mlir::ExecutionEngineOptions options;
  // memref.copy of strided slices calls memrefCopy from the runner utils.
  llvm::SmallVector<llvm::StringRef, 1> libs = {RECUR_C_RUNNER_UTILS};
  options.sharedLibPaths = libs;
  options.enableGDBNotificationListener = false;
  options.enablePerfNotificationListener = false;
  auto engine = mlir::ExecutionEngine::create(*module, options);
  if (!engine) {
    ADD_FAILURE() << "JIT: " << llvm::toString(engine.takeError());
    return {};
  }

  // The C interface takes a pointer to the results (a struct of memref
  // descriptors) and then a pointer to each argument's descriptor.
  std::vector<ArgBuffer> buffers;
  for (size_t i = 0; i < args.size(); ++i)
    buffers.push_back(makeArg(argElems[i], args[i]));
  size_t resultWords = 0;
  for (int64_t rank : resultRanks)
    resultWords += 3 + 2 * static_cast<size_t>(rank);
  std::vector<int64_t> resultStruct(std::max<size_t>(1, resultWords), 0);
  void *resultPtr = resultStruct.data();
  std::vector<void *> descriptorPtrs;
  for (ArgBuffer &b : buffers)
    descriptorPtrs.push_back(b.descriptor.data());
  llvm::SmallVector<void *> packed = {&resultPtr};
  for (void *&p : descriptorPtrs)
    packed.push_back(&p);
  if (llvm::Error err = (*engine)->invokePacked("_mlir_ciface_f", packed)) {
    ADD_FAILURE() << "call: " << llvm::toString(std::move(err));
    return {};
  }

  // Read every result through its strides, then free what the function
  // allocated (not the arguments it may return, nor a buffer twice).
  std::set<const void *> owned;
  for (const ArgBuffer &b : buffers)
    owned.insert(b.storage.data());
  std::vector<HostTensor> results;
  size_t word = 0;
  for (size_t r = 0; r < resultRanks.size(); ++r) {
    int64_t rank = resultRanks[r];
    auto *allocated = reinterpret_cast<void *>(resultStruct[word]);
    auto *aligned = reinterpret_cast<const char *>(resultStruct[word + 1]);
    int64_t offset = resultStruct[word + 2];
    std::vector<int64_t> sizes(resultStruct.begin() + word + 3,
                               resultStruct.begin() + word + 3 + rank);
    std::vector<int64_t> strides(resultStruct.begin() + word + 3 + rank,
                                 resultStruct.begin() + word + 3 + 2 * rank);
    word += 3 + 2 * static_cast<size_t>(rank);
    HostTensor out{sizes, {}};
    int64_t count = numElements(sizes);
    std::vector<int64_t> index(rank, 0);
    for (int64_t n = 0; n < count; ++n) {
      int64_t at = offset;
      for (int64_t d = 0; d < rank; ++d)
        at += index[d] * strides[d];
      out.values.push_back(
          load(resultElems[r], aligned + at * elemBytes(resultElems[r])));
      for (int64_t d = rank - 1; d >= 0; --d) {
        if (++index[d] < sizes[d])
          break;
        index[d] = 0;
      }
    }
    results.push_back(std::move(out));
    // 0xdeadbeef marks a memref.get_global, which owns nothing.
    if (allocated && allocated != reinterpret_cast<void *>(0xdeadbeef) &&
        owned.insert(allocated).second)
      std::free(allocated);
  }
  return results;
}

//===----------------------------------------------------------------------===//
// Random inputs
//===----------------------------------------------------------------------===//

class Rng {
public:
  explicit Rng(uint64_t seed) : gen(seed) {}

  double uniform(double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(gen);
  }
  int64_t integer(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(gen);
  }

  /// Uniform in [lo, hi), rounded to `dt`.
  Tensor<double> tensor(Dtype dt, std::vector<int64_t> shape, double lo = -1.0,
                        double hi = 1.0) {
    Tensor<double> t(std::move(shape));
    for (double &x : t.data)
      x = roundTo(dt, uniform(lo, hi));
    return t;
  }

  Tensor<Complex> complexTensor(Dtype dt, std::vector<int64_t> shape) {
    Tensor<Complex> t(std::move(shape));
    for (Complex &x : t.data)
      x = Complex(roundTo(dt, uniform(-1.0, 1.0)),
                  roundTo(dt, uniform(-1.0, 1.0)));
    return t;
  }

  /// Decay magnitudes sigmoid(x), x uniform in [-3, 4], with every 7th
  /// element saturated (x = +30: 1 - 1e-13, 1 in f32), every 11th x = -30
  /// (1e-13) and every 13th a reset (exactly 0).
  double decayMagnitude(size_t n) {
    double x = uniform(-3.0, 4.0);
    if (n % 7 == 3)
      x = 30.0;
    if (n % 11 == 5)
      x = -30.0;
    return n % 13 == 8 ? 0.0 : sigmoid(x);
  }

  Tensor<double> decays(Dtype dt, std::vector<int64_t> shape) {
    Tensor<double> t(std::move(shape));
    for (size_t n = 0; n < t.data.size(); ++n)
      t.data[n] = roundTo(dt, decayMagnitude(n));
    return t;
  }

  /// GateLoop decays sigmoid(x) exp(i theta), with the saturated and reset
  /// magnitudes of `decays`.
  Tensor<Complex> complexDecays(Dtype dt, std::vector<int64_t> shape) {
    Tensor<Complex> t(std::move(shape));
    for (size_t n = 0; n < t.data.size(); ++n) {
      Complex z = std::polar(decayMagnitude(n), uniform(-3.14159, 3.14159));
      t.data[n] = Complex(roundTo(dt, z.real()), roundTo(dt, z.imag()));
    }
    return t;
  }

  /// Gate pre-activations: uniform in [-4, 4], every 5th +30 and every 7th
  /// -30 (gates at 1 and 0 to within 1e-13).
  Tensor<double> preActivations(Dtype dt, std::vector<int64_t> shape) {
    Tensor<double> t(std::move(shape));
    for (size_t n = 0; n < t.data.size(); ++n)
      t.data[n] = n % 5 == 2   ? 30.0
                  : n % 7 == 4 ? -30.0
                               : roundTo(dt, uniform(-4.0, 4.0));
    return t;
  }

  /// A mask with each element true with probability `p`.
  Tensor<bool> mask(std::vector<int64_t> shape, double p) {
    Tensor<bool> t(std::move(shape));
    for (size_t n = 0; n < t.data.size(); ++n)
      t.data[n] = uniform(0.0, 1.0) < p;
    return t;
  }

private:
  std::mt19937_64 gen;
};

std::vector<int64_t> join(std::vector<int64_t> lead,
                          const std::vector<int64_t> &tail) {
  lead.insert(lead.end(), tail.begin(), tail.end());
  return lead;
}

/// Step `l` of a tensor whose first dimension counts steps.
Tensor<double> step(const Tensor<double> &t, int64_t l) {
  Tensor<double> s = slice(t, 0, l, 1);
  return Tensor<double>(
      std::vector<int64_t>(s.shape.begin() + 1, s.shape.end()), s.data);
}

//===----------------------------------------------------------------------===//
// Scans
//===----------------------------------------------------------------------===//

enum class ScanKind { Real, Complex, RealDecayOfComplex };

struct LinearScanCase {
  int64_t steps;
  ScanKind kind;
  bool broadcastA, withInit, reverse;
};

TEST(ReferenceLowering, LinearScan) {
  const LinearScanCase cases[] = {
      {1, ScanKind::Real, false, true, false},
      {2, ScanKind::Real, false, false, true},
      {7, ScanKind::Real, true, true, false},
      {12, ScanKind::Complex, false, true, true},
      {5, ScanKind::RealDecayOfComplex, true, false, false},
      {13, ScanKind::Complex, false, false, false},
  };
  Rng rng(1);
  for (Dtype dt : kDtypes)
    for (const LinearScanCase &c : cases) {
      SCOPED_TRACE("T=" + std::to_string(c.steps) + " " + name(dt));
      std::vector<int64_t> bShape = {2, c.steps, 3}, sShape = {2, 3};
      std::vector<int64_t> aShape =
          c.broadcastA ? std::vector<int64_t>{2, c.steps} : bShape;
      std::string f = name(dt), cf = "complex<" + f + ">";
      bool complexB = c.kind != ScanKind::Real;
      std::string aElem = c.kind == ScanKind::Complex ? cf : f;
      std::string bElem = complexB ? cf : f;
      std::string src = fill(R"mlir(
func.func @f(%a: $A, %b: $B $INITARG) -> ($B, $S)
    attributes {llvm.emit_c_interface} {
  %h, %last = recur.linear_scan %a, %b $INIT along 1 $REV : $A, $B
  return %h, %last : $B, $S
})mlir",
                             {{"A", ty(aShape, aElem)},
                              {"B", ty(bShape, bElem)},
                              {"S", ty(sShape, bElem)},
                              {"INITARG", c.withInit ? ", %h0: $S" : ""},
                              {"INIT", c.withInit ? "init(%h0 : $S)" : ""},
                              {"REV", c.reverse ? "reverse" : ""}});
      src = fill(src, {{"S", ty(sShape, bElem)}});
      if (c.kind == ScanKind::Real) {
        Tensor<double> a = rng.decays(dt, aShape), b = rng.tensor(dt, bShape);
        std::optional<Tensor<double>> h0;
        std::vector<HostTensor> args = {host(a), host(b)};
        if (c.withInit) {
          h0 = rng.tensor(dt, sShape);
          args.push_back(host(*h0));
        }
        std::vector<HostTensor> out = runLowered(src, args);
        ASSERT_EQ(out.size(), 2u);
        ScanResult<double> ref = linearScan(a, b, h0, 1, c.reverse);
        expectClose("linear_scan", dt, real(out[0]), ref.h);
        expectClose("linear_scan", dt, real(out[1]), ref.last);
        continue;
      }
      Tensor<Complex> b = rng.complexTensor(dt, bShape);
      std::optional<Tensor<Complex>> h0;
      std::vector<HostTensor> args;
      ScanResult<Complex> ref;
      if (c.withInit)
        h0 = rng.complexTensor(dt, sShape);
      if (c.kind == ScanKind::Complex) {
        Tensor<Complex> a = rng.complexDecays(dt, aShape);
        args = {host(a), host(b)};
        ref = linearScan(a, b, h0, 1, c.reverse);
      } else {
        Tensor<double> a = rng.decays(dt, aShape);
        args = {host(a), host(b)};
        ref = linearScan(a, b, h0, 1, c.reverse);
      }
      if (h0)
        args.push_back(host(*h0));
      std::vector<HostTensor> out = runLowered(src, args);
      ASSERT_EQ(out.size(), 2u);
      expectClose("linear_scan (complex)", dt, complexOf(out[0]), ref.h);
      expectClose("linear_scan (complex)", dt, complexOf(out[1]), ref.last);
    }
}

TEST(ReferenceLowering, ScanGateLoopOperator) {
  // (p1, p2) . (q1, q2) = (p1 q1, q1 p2 + q2), not commutative.
  CombineFn<double> combine = [](const std::vector<double> &p,
                                 const std::vector<double> &q) {
    return std::vector<double>{p[0] * q[0], q[0] * p[1] + q[1]};
  };
  Rng rng(2);
  for (Dtype dt : kDtypes)
    for (int64_t steps : {1, 5, 11})
      for (bool withInit : {false, true})
        for (bool reverse : {false, true}) {
          SCOPED_TRACE("T=" + std::to_string(steps) + " " + name(dt));
          std::vector<int64_t> shape = {2, steps}, carry = {2};
          std::string src =
              fill(R"mlir(
func.func @f(%a: $X, %b: $X $INITARGS) -> ($X, $X)
    attributes {llvm.emit_c_interface} {
  %A, %H = recur.scan (%a, %b) $INIT along 1 $REV {associative} : $X, $X {
  ^bb0(%p1: $F, %p2: $F, %q1: $F, %q2: $F):
    %m = arith.mulf %p1, %q1 : $F
    %t = arith.mulf %q1, %p2 : $F
    %s = arith.addf %t, %q2 : $F
    recur.yield %m, %s : $F, $F
  }
  return %A, %H : $X, $X
})mlir",
                   {{"INITARGS", withInit ? ", %a0: $C, %b0: $C" : ""},
                    {"INIT", withInit ? "init(%a0, %b0 : $C, $C)" : ""},
                    {"REV", reverse ? "reverse" : ""}});
          src = fill(src, {{"X", ty(shape, name(dt))},
                           {"C", ty(carry, name(dt))},
                           {"F", name(dt)}});
          Tensor<double> a = rng.decays(dt, shape), b = rng.tensor(dt, shape);
          std::vector<Tensor<double>> inits;
          std::vector<HostTensor> args = {host(a), host(b)};
          if (withInit) {
            inits = {rng.tensor(dt, carry), rng.tensor(dt, carry)};
            args.push_back(host(inits[0]));
            args.push_back(host(inits[1]));
          }
          std::vector<HostTensor> out = runLowered(src, args);
          ASSERT_EQ(out.size(), 2u);
          std::vector<Tensor<double>> ref =
              scan<double>({a, b}, inits, 1, reverse, combine);
          expectClose("scan", dt, real(out[0]), ref[0]);
          expectClose("scan", dt, real(out[1]), ref[1]);
        }
}

//===----------------------------------------------------------------------===//
// Gated linear attention
//===----------------------------------------------------------------------===//

/// The attributes runGla gives the op unless told otherwise.
const char *const kGlaChunk4 =
    "{algorithm = #recur.algorithm<chunked>, chunk_size = 4 : i64}";

/// Runs gated_linear_attention with `attributes` on `q`, `k`, `v` and the
/// decays `a` (real or complex), returning (y, state). With `dynamicSizes`,
/// T, dk and dv are dynamic in the function's types.
template <typename S>
std::vector<HostTensor>
runGla(Dtype dt, const Tensor<double> &q, const Tensor<double> &k,
       const Tensor<double> &v, const Tensor<S> &a,
       const std::optional<Tensor<S>> &init,
       const std::string &attributes = kGlaChunk4, bool dynamicSizes = false,
       const std::string &pipeline = "", bool dynamicSteps = false) {
  std::string f = name(dt);
  std::string sElem =
      std::is_same<S, Complex>::value ? "complex<" + f + ">" : f;
  std::vector<int64_t> sShape(q.shape.begin(), q.shape.end() - 2);
  sShape.push_back(q.dim(-1));
  sShape.push_back(v.dim(-1));
  // The last two dimensions: (T, dk) or (T, dv), and (dk, dv) of the state.
  auto spell = [&](const std::vector<int64_t> &shape, const std::string &e) {
    size_t rank = shape.size();
    return ty(dynamicSizes ? dyn(shape, {rank - 2, rank - 1}) : shape, e);
  };
  // With `dynamicSteps`, T alone is dynamic (dk and dv static).
  auto spellSteps = [&](const std::vector<int64_t> &shape,
                        const std::string &e) {
    return dynamicSteps ? ty(dyn(shape, {shape.size() - 2}), e)
                        : spell(shape, e);
  };
  std::string src = fill(R"mlir(
func.func @f(%q: $Q, %k: $Q, %v: $V, %a: $A $INITARG) -> ($V, $S)
    attributes {llvm.emit_c_interface} {
  %y, %s = recur.gated_linear_attention %q, %k, %v, %a $INIT
      $ATTRS
      : $Q, $Q, $V, $A
  return %y, %s : $V, $S
})mlir",
                         {{"INITARG", init ? ", %s0: $S" : ""},
                          {"INIT", init ? "init(%s0 : $S)" : ""},
                          {"ATTRS", attributes}});
  src = fill(src, {{"Q", spellSteps(q.shape, f)},
                   {"V", spellSteps(v.shape, f)},
                   {"A", spellSteps(a.shape, sElem)},
                   {"S", spell(sShape, sElem)}});
  std::vector<HostTensor> args = {host(q), host(k), host(v), host(a)};
  if (init)
    args.push_back(host(*init));
  return runLowered(src, args, pipeline);
}

struct GlaCase {
  std::vector<int64_t> lead;
  int64_t steps;
  bool complexDecay, withInit;
};

/// Runs gated_linear_attention on each case (`attributes`, lowered after
/// `pipeline`; with `dynamicSteps` once more with T dynamic) against the
/// float64 oracle, the errors reported under `what`.
void checkGlaCases(llvm::ArrayRef<GlaCase> cases, uint64_t seed,
                   const std::string &what, const std::string &attributes,
                   const std::string &pipeline, bool dynamicSteps) {
  Rng rng(seed);
  for (Dtype dt : kDtypes)
    for (const GlaCase &c : cases) {
      SCOPED_TRACE("T=" + std::to_string(c.steps) + " " + name(dt) +
                   (c.complexDecay ? " complex" : " real"));
      int64_t dk = 3, dv = 2;
      Tensor<double> q = rng.tensor(dt, join(c.lead, {c.steps, dk}));
      Tensor<double> k = rng.tensor(dt, join(c.lead, {c.steps, dk}));
      Tensor<double> v = rng.tensor(dt, join(c.lead, {c.steps, dv}));
      std::vector<int64_t> sShape = join(c.lead, {dk, dv});
      for (bool steps : {false, true}) {
        if (steps && !dynamicSteps)
          continue;
        // The decays and initial state, real or complex; `toS` reads the
        // final state the same way.
        auto run = [&](const auto &a, const auto &s0, auto toS,
                       const std::string &op) {
          std::vector<HostTensor> out =
              runGla(dt, q, k, v, a, s0, attributes, false, pipeline, steps);
          ASSERT_EQ(out.size(), 2u);
          auto ref = gatedLinearAttention(q, k, v, a, s0);
          expectClose(op, dt, real(out[0]), ref.y);
          expectClose(op, dt, toS(out[1]), ref.state);
        };
        if (c.complexDecay) {
          Tensor<Complex> a = rng.complexDecays(dt, q.shape);
          std::optional<Tensor<Complex>> s0;
          if (c.withInit)
            s0 = rng.complexTensor(dt, sShape);
          run(
              a, s0, [](const HostTensor &h) { return complexOf(h); },
              what + " (complex)");
        } else {
          Tensor<double> a = rng.decays(dt, q.shape);
          std::optional<Tensor<double>> s0;
          if (c.withInit)
            s0 = rng.tensor(dt, sShape);
          run(a, s0, [](const HostTensor &h) { return real(h); }, what);
        }
      }
    }
}

TEST(ReferenceLowering, GatedLinearAttention) {
  const GlaCase cases[] = {
      {{2}, 1, false, false},    {{2}, 2, true, true}, {{2}, 13, false, true},
      {{1, 2}, 13, true, false}, {{2}, 6, true, true}, {{1}, 31, false, false},
  };
  checkGlaCases(cases, 3, "gated_linear_attention", kGlaChunk4, "", false);
}

/// The cases of the GPU's column forms (chunks of 4): lengths within a
/// chunk, whole chunks and parts of one, two chunks or fewer (a thread a
/// column) and more; 16384 output columns (a thread a column).
const GlaCase kGlaColumnCases[] = {
    {{2}, 1, false, false},    {{2}, 4, true, true},
    {{2}, 5, false, true},     {{1, 2}, 13, true, false},
    {{2}, 8, true, true},      {{1}, 31, false, false},
    {{3}, 17, true, true},     {{2}, 16, false, true},
    {{8192}, 13, false, true}, {{2}, 9, true, false},
};

/// The GPU's recurrent form (gla-column-threads) with its state column in
/// registers (gla-column-chunk=4), against the float64 oracle: sequences
/// longer than 8 steps in chunks of 4 (each chunk's decay products and
/// state from zero, the states entering the chunks, then each chunk from
/// its own), ending in a whole chunk or a part of one; shorter ones, and
/// 16384 output columns, a thread a column. The decays real or complex,
/// with and without an initial state; T static (the form chosen when
/// compiling) and dynamic (chosen when it runs).
TEST(ReferenceLowering, GatedLinearAttentionColumnChunks) {
  checkGlaCases(kGlaColumnCases, 11, "gated_linear_attention, column chunks",
                "{algorithm = #recur.algorithm<recurrent>}",
                "convert-recur-to-loops{gla-column-threads gla-column-chunk=4}",
                true);
}

/// The chunked gla on the GPU (gla-column-threads, here with
/// gla-column-chunk=0, which the chunked algorithm does not heed): where
/// its state column fits in registers, the column form in chunks of its own
/// chunk_size (4; a thread a column at 8 steps or fewer), against the
/// float64 oracle, with the cases of GatedLinearAttentionColumnChunks.
TEST(ReferenceLowering, GatedLinearAttentionChunkedColumns) {
  checkGlaCases(kGlaColumnCases, 14, "gated_linear_attention, chunked columns",
                kGlaChunk4, "convert-recur-to-loops{gla-column-threads}", true);
}

/// The float64 cotangents of gated_linear_attention with real (S = double)
/// or complex (S = Complex) decays, straight from the definition
/// (gated_linear_attention_grad's): every state S_t kept, then G_t from the
/// last step back; dq, dk and dv take the real parts, da_t = sum_j G_t
/// conj(S_{t-1}), and the cotangent flows back through conj(a_t).
template <typename S> struct GlaGrads {
  Tensor<double> dq, dk, dv;
  Tensor<S> da, dinit;
};
inline double conjOf(double x) { return x; }
inline Complex conjOf(Complex x) { return std::conj(x); }
template <typename S>
GlaGrads<S> glaGradReference(const Tensor<double> &q, const Tensor<double> &k,
                             const Tensor<double> &v, const Tensor<S> &a,
                             const Tensor<double> &dy, const Tensor<S> &ds,
                             const std::optional<Tensor<S>> &init) {
  int64_t steps = q.dim(-2), dk = q.dim(-1), dv = v.dim(-1);
  int64_t heads = numElements(q.shape) / (steps * dk);
  GlaGrads<S> g{Tensor<double>(q.shape), Tensor<double>(q.shape),
                Tensor<double>(v.shape), Tensor<S>(q.shape),
                Tensor<S>(ds.shape)};
  for (int64_t h = 0; h < heads; ++h) {
    auto key = [&](int64_t t, int64_t i) { return (h * steps + t) * dk + i; };
    auto val = [&](int64_t t, int64_t j) { return (h * steps + t) * dv + j; };
    auto st = [&](int64_t i, int64_t j) { return (h * dk + i) * dv + j; };
    // states[t + 1] = S_t, states[0] = S_{-1}.
    std::vector<std::vector<S>> states(steps + 1, std::vector<S>(dk * dv));
    for (int64_t i = 0; i < dk; ++i)
      for (int64_t j = 0; j < dv; ++j)
        states[0][i * dv + j] = init ? init->data[st(i, j)] : S(0.0);
    for (int64_t t = 0; t < steps; ++t)
      for (int64_t i = 0; i < dk; ++i)
        for (int64_t j = 0; j < dv; ++j)
          states[t + 1][i * dv + j] =
              a.data[key(t, i)] * states[t][i * dv + j] +
              k.data[key(t, i)] * v.data[val(t, j)];
    // G = the cotangent flowing into S_t from the later steps.
    std::vector<S> later(dk * dv);
    for (int64_t i = 0; i < dk; ++i)
      for (int64_t j = 0; j < dv; ++j)
        later[i * dv + j] = ds.data[st(i, j)];
    for (int64_t t = steps - 1; t >= 0; --t) {
      std::vector<S> gt(dk * dv);
      for (int64_t i = 0; i < dk; ++i)
        for (int64_t j = 0; j < dv; ++j)
          gt[i * dv + j] =
              q.data[key(t, i)] * dy.data[val(t, j)] + later[i * dv + j];
      for (int64_t i = 0; i < dk; ++i) {
        double dqi = 0, dki = 0;
        S dai = 0.0;
        for (int64_t j = 0; j < dv; ++j) {
          dqi += std::real(states[t + 1][i * dv + j]) * dy.data[val(t, j)];
          dki += std::real(gt[i * dv + j]) * v.data[val(t, j)];
          dai += gt[i * dv + j] * conjOf(states[t][i * dv + j]);
        }
        g.dq.data[key(t, i)] = dqi;
        g.dk.data[key(t, i)] = dki;
        g.da.data[key(t, i)] = dai;
      }
      for (int64_t j = 0; j < dv; ++j) {
        double dvj = 0;
        for (int64_t i = 0; i < dk; ++i)
          dvj += std::real(gt[i * dv + j]) * k.data[key(t, i)];
        g.dv.data[val(t, j)] = dvj;
      }
      for (int64_t i = 0; i < dk; ++i)
        for (int64_t j = 0; j < dv; ++j)
          later[i * dv + j] = conjOf(a.data[key(t, i)]) * gt[i * dv + j];
    }
    for (int64_t i = 0; i < dk; ++i)
      for (int64_t j = 0; j < dv; ++j)
        g.dinit.data[st(i, j)] = later[i * dv + j];
  }
  return g;
}

/// gated_linear_attention_grad in the GPU's chunks (gla-column-threads
/// gla-column-chunk=4: the states entering the chunks, what each chunk
/// sends back and the cotangents entering them from the later ones, then a
/// thread per (chunk, row) for dq, dk and da and one per (chunk, column)
/// for dv) against the float64 definition: real and complex decays (with
/// saturated gates and resets), with and without an initial state, T of
/// 1, within one chunk, a whole number of chunks and a part of one, a
/// prime; T static and dynamic.
TEST(ReferenceLowering, GatedLinearAttentionGradColumnChunks) {
  const GlaCase cases[] = {
      {{2}, 1, false, false},    {{2}, 4, true, true},  {{2}, 5, false, true},
      {{1, 2}, 13, true, false}, {{2}, 8, true, true},  {{1}, 31, false, false},
      {{3}, 17, true, true},     {{2}, 3, false, true}, {{2}, 9, true, false},
      {{1}, 12, false, true},
  };
  const std::string pipeline =
      "convert-recur-to-loops{gla-column-threads gla-column-chunk=4}";
  Rng rng(13);
  for (Dtype dt : kDtypes)
    for (const GlaCase &c : cases)
      for (bool dynamicSteps : {false, true}) {
        SCOPED_TRACE("T=" + std::to_string(c.steps) + " " + name(dt) +
                     (c.complexDecay ? " complex" : " real") +
                     (c.withInit ? " init" : "") +
                     (dynamicSteps ? " T dynamic" : ""));
        const int64_t dk = 3, dv = 5;
        std::vector<int64_t> keys = join(c.lead, {c.steps, dk});
        std::vector<int64_t> values = join(c.lead, {c.steps, dv});
        std::vector<int64_t> sShape = join(c.lead, {dk, dv});
        Tensor<double> q = rng.tensor(dt, keys), k = rng.tensor(dt, keys);
        Tensor<double> v = rng.tensor(dt, values), dy = rng.tensor(dt, values);
        std::string f = name(dt);
        std::string sElem = c.complexDecay ? "complex<" + f + ">" : f;
        std::string src = fill(R"mlir(
func.func @f(%q: $Q, %k: $Q, %v: $V, %a: $A, %dy: $V, %ds: $S $INITARG)
    -> ($Q, $Q, $V, $A, $S) attributes {llvm.emit_c_interface} {
  %dq, %dk, %dv, %da, %di = recur.gated_linear_attention_grad
      %q, %k, %v, %a, %dy, %ds $INIT chunk 4 : $Q, $Q, $V, $A, $S
  return %dq, %dk, %dv, %da, %di : $Q, $Q, $V, $A, $S
})mlir",
                               {{"INITARG", c.withInit ? ", %s0: $S" : ""},
                                {"INIT", c.withInit ? "init(%s0 : $S)" : ""}});
        auto spell = [&](const std::vector<int64_t> &shape,
                         const std::string &e) {
          return ty(dynamicSteps ? dyn(shape, {shape.size() - 2}) : shape, e);
        };
        src = fill(src, {{"Q", spell(keys, f)},
                         {"V", spell(values, f)},
                         {"A", spell(keys, sElem)},
                         {"S", ty(sShape, sElem)}});
        auto check = [&](const std::vector<HostTensor> &out, auto &ref,
                         auto toS) {
          ASSERT_EQ(out.size(), 5u);
          std::string op = std::string("gated_linear_attention_grad, column "
                                       "chunks") +
                           (c.complexDecay ? " (complex)" : "");
          expectClose(op, dt, real(out[0]), ref.dq);
          expectClose(op, dt, real(out[1]), ref.dk);
          expectClose(op, dt, real(out[2]), ref.dv);
          expectClose(op, dt, toS(out[3]), ref.da);
          expectClose(op, dt, toS(out[4]), ref.dinit);
        };
        // The decays a, the cotangent of the final state and the initial
        // state, real or complex; `toS` reads da and dinit the same way.
        auto run = [&](const auto &a, const auto &ds, const auto &s0,
                       auto toS) {
          std::vector<HostTensor> args = {host(q), host(k),  host(v),
                                          host(a), host(dy), host(ds)};
          if (s0)
            args.push_back(host(*s0));
          auto ref = glaGradReference(q, k, v, a, dy, ds, s0);
          check(runLowered(src, args, pipeline), ref, toS);
        };
        if (c.complexDecay) {
          Tensor<Complex> a = rng.complexDecays(dt, keys);
          Tensor<Complex> ds = rng.complexTensor(dt, sShape);
          std::optional<Tensor<Complex>> s0;
          if (c.withInit)
            s0 = rng.complexTensor(dt, sShape);
          run(a, ds, s0, [](const HostTensor &h) { return complexOf(h); });
        } else {
          Tensor<double> a = rng.decays(dt, keys);
          Tensor<double> ds = rng.tensor(dt, sShape);
          std::optional<Tensor<double>> s0;
          if (c.withInit)
            s0 = rng.tensor(dt, sShape);
          run(a, ds, s0, [](const HostTensor &h) { return real(h); });
        }
      }
}

struct GlaGradCase {
  /// dv: 12 has a partial vector; 16 makes every tile of f32 a multiple of
  /// 8 (transposed by blocks of shuffles).
  int64_t steps, chunk, dv;
  bool withInit;
  /// Head 1 gets one decay below the product form's least (that head
  /// takes the reverse sweep, head 0 the products).
  bool oneSmallDecay;
  /// T, dk and dv dynamic in the function's types (tiles of dynamic
  /// sizes, transposed element by element).
  bool dynamicSizes = false;
};

/// gated_linear_attention_grad in its product form
/// (convert-recur-to-loops{gla-products}, the products in register
/// blocks) against the float64 definition: lengths 1, a prime, whole and
/// partial chunks, decays down to the form's least 2^(-32 / chunk) and up
/// to exactly 1, and a head outside the form beside one inside.
/// The passes before the lowering of the GLA product-form tests: the
/// product forms, then their contractions in register blocks (the masked
/// ones skipping their zeros).
const char *const kGlaProductsPipeline =
    "convert-recur-to-loops{gla-products},canonicalize,cse,"
    "recur-block-contractions";

/// Decays `[heads, T, dk]` for the product forms in chunks of c.chunk:
/// in [least, 1] (least = 2^(-32 / chunk)), rounded up to the element type
/// so that none falls below; every 5th the least itself, every 9th exactly
/// 1; with c.oneSmallDecay, one decay of head 1 at a quarter of the least
/// (that head takes the other form).
Tensor<double> productFormDecays(Rng &rng, Dtype dt, const GlaGradCase &c,
                                 const std::vector<int64_t> &keys) {
  double least = std::exp2(-32.0 / static_cast<double>(c.chunk));
  double leastUp = roundTo(dt, least);
  if (leastUp < least)
    leastUp = dt == Dtype::F32 ? std::nextafter(static_cast<float>(least), 2.0f)
                               : std::nextafter(least, 2.0);
  Tensor<double> a(keys);
  for (size_t n = 0; n < a.data.size(); ++n)
    a.data[n] = n % 5 == 1   ? leastUp
                : n % 9 == 4 ? 1.0
                             : roundTo(dt, rng.uniform(leastUp, 1.0));
  if (c.oneSmallDecay)
    a.data[(c.steps + c.steps / 2) * keys.back() + 3] = roundTo(dt, least / 4);
  return a;
}

TEST(ReferenceLowering, GatedLinearAttentionGradProducts) {
  const GlaGradCase cases[] = {
      {1, 16, 12, false, false},   {7, 16, 12, true, false},
      {64, 16, 16, true, false},   {131, 8, 12, true, false},
      {131, 64, 16, false, false}, {40, 16, 12, true, true},
      {40, 8, 16, false, true},    {29, 16, 16, true, false, true},
  };
  Rng rng(11);
  for (Dtype dt : kDtypes)
    for (const GlaGradCase &c : cases) {
      SCOPED_TRACE("T=" + std::to_string(c.steps) + " chunk " +
                   std::to_string(c.chunk) + " dv " + std::to_string(c.dv) +
                   " " + name(dt) +
                   (c.oneSmallDecay ? " one small decay" : "") +
                   (c.dynamicSizes ? " dynamic" : ""));
      const int64_t heads = 2, dk = 8, dv = c.dv;
      std::vector<int64_t> keys{heads, c.steps, dk}, values{heads, c.steps, dv};
      std::vector<int64_t> sShape{heads, dk, dv};
      Tensor<double> q = rng.tensor(dt, keys), k = rng.tensor(dt, keys);
      Tensor<double> v = rng.tensor(dt, values), dy = rng.tensor(dt, values);
      Tensor<double> ds = rng.tensor(dt, sShape);
      Tensor<double> a = productFormDecays(rng, dt, c, keys);
      std::optional<Tensor<double>> s0;
      if (c.withInit)
        s0 = rng.tensor(dt, sShape);
      std::string f = name(dt);
      std::string src = fill(R"mlir(
func.func @f(%q: $Q, %k: $Q, %v: $V, %a: $Q, %dy: $V, %ds: $S $INITARG)
    -> ($Q, $Q, $V, $Q, $S) attributes {llvm.emit_c_interface} {
  %dq, %dk, %dv, %da, %di = recur.gated_linear_attention_grad
      %q, %k, %v, %a, %dy, %ds $INIT chunk $CHUNK : $Q, $Q, $V, $Q, $S
  return %dq, %dk, %dv, %da, %di : $Q, $Q, $V, $Q, $S
})mlir",
                             {{"INITARG", s0 ? ", %s0: $S" : ""},
                              {"INIT", s0 ? "init(%s0 : $S)" : ""},
                              {"CHUNK", std::to_string(c.chunk)}});
      auto spell = [&](const std::vector<int64_t> &shape) {
        return ty(c.dynamicSizes ? dyn(shape, {1, 2}) : shape, f);
      };
      src = fill(
          src,
          {{"Q", spell(keys)}, {"V", spell(values)}, {"S", spell(sShape)}});
      std::vector<HostTensor> args = {host(q), host(k),  host(v),
                                      host(a), host(dy), host(ds)};
      if (s0)
        args.push_back(host(*s0));
      std::vector<HostTensor> out = runLowered(src, args, kGlaProductsPipeline);
      ASSERT_EQ(out.size(), 5u);
      GlaGrads<double> ref = glaGradReference(q, k, v, a, dy, ds, s0);
      const char *op = "gated_linear_attention_grad (products)";
      expectClose(op, dt, real(out[0]), ref.dq);
      expectClose(op, dt, real(out[1]), ref.dk);
      expectClose(op, dt, real(out[2]), ref.dv);
      expectClose(op, dt, real(out[3]), ref.da);
      expectClose(op, dt, real(out[4]), ref.dinit);
    }
}

/// The forward's product form (convert-recur-to-loops{gla-products}, the
/// masked products skipping their zeros in recur-block-contractions)
/// against the float64 recurrence: chunked with decays at the form's least
/// and exactly 1, T of 1, a partial chunk, a multiple of the chunk and a
/// prime, dv with and without a partial vector, with and without an
/// initial state, dynamic sizes, and one head with a decay below the least
/// (that head takes the log-space chunks, the other the products); and
/// `auto` on a 96 x 96 state (past 32 KiB: products in chunks of 32, the
/// recurrence step by step for a head out of range).
TEST(ReferenceLowering, GatedLinearAttentionProducts) {
  struct Case {
    GlaGradCase shape;
    /// `auto` on a dk = dv = 96 state (shape.chunk must then be 32, shape.dv
    /// is ignored).
    bool autoWide = false;
  };
  const Case cases[] = {
      {{1, 16, 12, false, false}},       {{7, 16, 12, true, false}},
      {{64, 16, 16, true, false}},       {{131, 8, 12, true, false}},
      {{131, 64, 16, false, false}},     {{40, 16, 12, true, true}},
      {{29, 16, 16, true, false, true}}, {{40, 8, 16, false, true, true}},
      {{37, 32, 0, true, false}, true},  {{70, 32, 0, false, true}, true},
  };
  Rng rng(12);
  for (Dtype dt : kDtypes)
    for (const Case &c : cases) {
      const GlaGradCase &g = c.shape;
      SCOPED_TRACE("T=" + std::to_string(g.steps) + " chunk " +
                   std::to_string(g.chunk) + " dv " + std::to_string(g.dv) +
                   " " + name(dt) +
                   (g.oneSmallDecay ? " one small decay" : "") +
                   (g.dynamicSizes ? " dynamic" : "") +
                   (c.autoWide ? " auto 96 x 96" : ""));
      const int64_t heads = 2, dk = c.autoWide ? 96 : 8;
      const int64_t dv = c.autoWide ? 96 : g.dv;
      std::vector<int64_t> keys{heads, g.steps, dk}, values{heads, g.steps, dv};
      std::vector<int64_t> sShape{heads, dk, dv};
      Tensor<double> q = rng.tensor(dt, keys), k = rng.tensor(dt, keys);
      Tensor<double> v = rng.tensor(dt, values);
      Tensor<double> a = productFormDecays(rng, dt, g, keys);
      std::optional<Tensor<double>> s0;
      if (g.withInit)
        s0 = rng.tensor(dt, sShape);
      std::string attrs =
          c.autoWide ? ""
                     : "{algorithm = #recur.algorithm<chunked>, chunk_size = " +
                           std::to_string(g.chunk) + " : i64}";
      std::string src = fill(R"mlir(
func.func @f(%q: $Q, %k: $Q, %v: $V, %a: $Q $INITARG)
    -> ($V, $S) attributes {llvm.emit_c_interface} {
  %y, %s = recur.gated_linear_attention %q, %k, %v, %a $INIT $ATTRS
      : $Q, $Q, $V, $Q
  return %y, %s : $V, $S
})mlir",
                             {{"INITARG", s0 ? ", %s0: $S" : ""},
                              {"INIT", s0 ? "init(%s0 : $S)" : ""},
                              {"ATTRS", attrs}});
      auto spell = [&](const std::vector<int64_t> &shape) {
        return ty(g.dynamicSizes ? dyn(shape, {1, 2}) : shape, name(dt));
      };
      src = fill(
          src,
          {{"Q", spell(keys)}, {"V", spell(values)}, {"S", spell(sShape)}});
      std::vector<HostTensor> args = {host(q), host(k), host(v), host(a)};
      if (s0)
        args.push_back(host(*s0));
      std::vector<HostTensor> out = runLowered(src, args, kGlaProductsPipeline);
      ASSERT_EQ(out.size(), 2u);
      GlaResult<double> ref = gatedLinearAttention(q, k, v, a, s0);
      const char *op = "gated_linear_attention (products)";
      expectClose(op, dt, real(out[0]), ref.y);
      expectClose(op, dt, real(out[1]), ref.state);
    }
}

/// T = 65536 in f32 with decays sigmoid(x), x in [-2, 6]: no NaN or inf, and
/// the normwise error of the float64 oracle's.
TEST(ReferenceLowering, LongSequencesF32) {
  const int64_t steps = 65536;
  Rng rng(4);
  auto sigmoidDecays = [&](std::vector<int64_t> shape) {
    Tensor<double> t(std::move(shape));
    for (double &x : t.data)
      x = roundTo(Dtype::F32, sigmoid(rng.uniform(-2.0, 6.0)));
    return t;
  };
  {
    std::vector<int64_t> shape = {2, steps};
    Tensor<double> a = sigmoidDecays(shape);
    Tensor<double> b = rng.tensor(Dtype::F32, shape);
    std::string src = fill(R"mlir(
func.func @f(%a: $X, %b: $X) -> ($X, $S) attributes {llvm.emit_c_interface} {
  %h, %last = recur.linear_scan %a, %b along 1 : $X, $X
  return %h, %last : $X, $S
})mlir",
                           {{"X", ty(shape, "f32")}, {"S", ty({2}, "f32")}});
    std::vector<HostTensor> out = runLowered(src, {host(a), host(b)});
    ASSERT_EQ(out.size(), 2u);
    ScanResult<double> ref = linearScan(a, b, std::nullopt, 1);
    expectClose("linear_scan T=65536", Dtype::F32, real(out[0]), ref.h);
    expectClose("linear_scan T=65536", Dtype::F32, real(out[1]), ref.last);
  }
  Tensor<double> q = rng.tensor(Dtype::F32, {1, steps, 2});
  Tensor<double> k = rng.tensor(Dtype::F32, {1, steps, 2});
  Tensor<double> v = rng.tensor(Dtype::F32, {1, steps, 2});
  {
    Tensor<double> a = sigmoidDecays(q.shape);
    std::vector<HostTensor> out =
        runGla<double>(Dtype::F32, q, k, v, a, std::nullopt);
    ASSERT_EQ(out.size(), 2u);
    GlaResult<double> ref = gatedLinearAttention(q, k, v, a, std::nullopt);
    expectClose("gated_linear_attention T=65536", Dtype::F32, real(out[0]),
                ref.y);
    expectClose("gated_linear_attention T=65536", Dtype::F32, real(out[1]),
                ref.state);
  }
  {
    Tensor<double> mag = sigmoidDecays(q.shape);
    Tensor<Complex> a(q.shape);
    for (size_t n = 0; n < a.data.size(); ++n) {
      Complex z = std::polar(mag.data[n], rng.uniform(-3.14159, 3.14159));
      a.data[n] =
          Complex(roundTo(Dtype::F32, z.real()), roundTo(Dtype::F32, z.imag()));
    }
    std::vector<HostTensor> out =
        runGla<Complex>(Dtype::F32, q, k, v, a, std::nullopt);
    ASSERT_EQ(out.size(), 2u);
    GlaResult<Complex> ref = gatedLinearAttention(q, k, v, a, std::nullopt);
    expectClose("gated_linear_attention (complex) T=65536", Dtype::F32,
                real(out[0]), ref.y);
    expectClose("gated_linear_attention (complex) T=65536", Dtype::F32,
                complexOf(out[1]), ref.state);
  }
}

//===----------------------------------------------------------------------===//
// Gated linear attention, chunked algorithm
//===----------------------------------------------------------------------===//

/// The attributes of the chunked algorithm with chunks of `chunk` steps.
std::string chunkedGla(int64_t chunk) {
  return "{algorithm = #recur.algorithm<chunked>, chunk_size = " +
         std::to_string(chunk) + " : i64}";
}

/// The attributes of the recurrent algorithm.
const char *const kRecurrentGla = "{algorithm = #recur.algorithm<recurrent>}";

/// Decays for the chunked algorithm: Rng::decays or Rng::complexDecays
/// (resets to exactly 0 inside chunks, gates saturated to 1 in f32), with
/// every 5th element exactly 1 and every 9th exactly -1, and every 4th real
/// decay negated (the sign a log-space prefix must carry; a negated reset is
/// -0).
template <typename S>
Tensor<S> chunkedGlaDecays(Rng &rng, Dtype dt, std::vector<int64_t> shape) {
  Tensor<S> a;
  if constexpr (std::is_same<S, Complex>::value)
    a = rng.complexDecays(dt, std::move(shape));
  else
    a = rng.decays(dt, std::move(shape));
  for (size_t n = 0; n < a.data.size(); ++n) {
    if constexpr (!std::is_same<S, Complex>::value)
      if (n % 4 == 2)
        a.data[n] = -a.data[n];
    if (n % 5 == 1)
      a.data[n] = S(1.0);
    if (n % 9 == 4)
      a.data[n] = S(-1.0);
  }
  return a;
}

/// Runs `op` with the chunked algorithm (with each of `chunks`, or the
/// default attributes given in `chunkedAttributes`) and with the recurrent
/// one on the same inputs, and checks each result against the recurrent
/// float64 oracle and the chunked lowering against the recurrent lowering.
/// The tolerances are those of `dt` (kTolF64, kTolF32): a chunk only
/// reorders the sums of the recurrence and takes each decay as one exp of a
/// difference of f64 log sums, a few roundings more per term than the
/// recurrence, so both lowerings err by about 1e-15 (f64) and 4e-7 (f32)
/// normwise, far below the tolerance, and the same bound holds between them.
template <typename S>
void checkChunkedGla(const std::string &op, Dtype dt, const Tensor<double> &q,
                     const Tensor<double> &k, const Tensor<double> &v,
                     const Tensor<S> &a, const std::optional<Tensor<S>> &init,
                     const std::vector<std::string> &chunkedAttributes,
                     bool dynamicSizes = false) {
  auto state = [](const HostTensor &h) {
    if constexpr (std::is_same<S, Complex>::value)
      return complexOf(h);
    else
      return real(h);
  };
  GlaResult<S> ref = gatedLinearAttention(q, k, v, a, init);
  std::vector<HostTensor> recurrent =
      runGla(dt, q, k, v, a, init, kRecurrentGla, dynamicSizes);
  ASSERT_EQ(recurrent.size(), 2u);
  expectClose(op + " recurrent", dt, real(recurrent[0]), ref.y);
  expectClose(op + " recurrent", dt, state(recurrent[1]), ref.state);
  for (const std::string &attributes : chunkedAttributes) {
    SCOPED_TRACE(attributes);
    std::vector<HostTensor> chunked =
        runGla(dt, q, k, v, a, init, attributes, dynamicSizes);
    ASSERT_EQ(chunked.size(), 2u);
    expectClose(op, dt, real(chunked[0]), ref.y);
    expectClose(op, dt, state(chunked[1]), ref.state);
    expectClose(op + " vs recurrent", dt, real(chunked[0]), real(recurrent[0]));
    expectClose(op + " vs recurrent", dt, state(chunked[1]),
                state(recurrent[1]));
  }
}

/// Chunks of 1, 3 and 64 steps with T = 1, T shorter than the chunk, T a
/// prime (7, 13, 67) and not a multiple of the chunk, T = 12 (a multiple of
/// 3), with real and complex decays holding resets, ones and negative
/// values, with and without an init state, and T, dk and dv static or
/// dynamic.
TEST(ReferenceLowering, GatedLinearAttentionChunked) {
  struct Case {
    std::vector<int64_t> lead;
    int64_t steps;
    bool complexDecay, withInit, dynamicSizes;
  };
  const Case cases[] = {
      {{2}, 1, false, true, false},  {{2}, 1, true, false, false},
      {{2}, 2, true, true, false},   {{1, 2}, 7, false, false, false},
      {{2}, 12, true, false, false}, {{2}, 13, false, true, false},
      {{1}, 67, false, true, false}, {{1}, 67, true, true, false},
      {{2}, 13, true, true, true},   {{1, 2}, 67, false, false, true},
  };
  const std::vector<std::string> chunks = {chunkedGla(1), chunkedGla(3),
                                           chunkedGla(64)};
  Rng rng(16);
  for (Dtype dt : kDtypes)
    for (const Case &c : cases) {
      SCOPED_TRACE("T=" + std::to_string(c.steps) + " " + name(dt) +
                   (c.complexDecay ? " complex" : " real") +
                   (c.withInit ? " init" : "") +
                   (c.dynamicSizes ? " dynamic" : ""));
      int64_t dk = 3, dv = 4;
      Tensor<double> q = rng.tensor(dt, join(c.lead, {c.steps, dk}));
      Tensor<double> k = rng.tensor(dt, join(c.lead, {c.steps, dk}));
      Tensor<double> v = rng.tensor(dt, join(c.lead, {c.steps, dv}));
      std::vector<int64_t> sShape = join(c.lead, {dk, dv});
      if (c.complexDecay) {
        Tensor<Complex> a = chunkedGlaDecays<Complex>(rng, dt, q.shape);
        std::optional<Tensor<Complex>> s0;
        if (c.withInit)
          s0 = rng.complexTensor(dt, sShape);
        checkChunkedGla("gated_linear_attention chunked (complex)", dt, q, k, v,
                        a, s0, chunks, c.dynamicSizes);
      } else {
        Tensor<double> a = chunkedGlaDecays<double>(rng, dt, q.shape);
        std::optional<Tensor<double>> s0;
        if (c.withInit)
          s0 = rng.tensor(dt, sShape);
        checkChunkedGla("gated_linear_attention chunked", dt, q, k, v, a, s0,
                        chunks, c.dynamicSizes);
      }
    }
}

/// The chunked algorithm over T = 65536 in f32, with chunks of 64 steps
/// given explicitly and by default (`auto` on a matrix state): decays
/// sigmoid(x), x in [-2, 6], with resets, exact ones and gates of 1e-13
/// sprinkled in, so a chunk's log prefix falls far below the range of f32
/// exponentials while the memory spans hundreds of steps. No NaN or inf,
/// and the error of the recurrence.
TEST(ReferenceLowering, GatedLinearAttentionChunkedLongF32) {
  const int64_t steps = 65536;
  const Dtype dt = Dtype::F32;
  Rng rng(17);
  std::vector<int64_t> shape = {1, steps, 3};
  auto magnitude = [&](size_t n) {
    if (n % 97 == 5)
      return 0.0;
    if (n % 89 == 7)
      return 1.0;
    return sigmoid(n % 101 == 3 ? -30.0 : rng.uniform(-2.0, 6.0));
  };
  Tensor<double> q = rng.tensor(dt, shape), k = rng.tensor(dt, shape);
  Tensor<double> v = rng.tensor(dt, {1, steps, 2});
  const std::vector<std::string> chunks = {
      chunkedGla(64), "{algorithm = #recur.algorithm<auto>}"};
  {
    Tensor<double> a(shape);
    for (size_t n = 0; n < a.data.size(); ++n)
      a.data[n] = roundTo(dt, magnitude(n));
    checkChunkedGla<double>("gated_linear_attention chunked T=65536", dt, q, k,
                            v, a, std::nullopt, chunks);
  }
  {
    Tensor<Complex> a(shape);
    for (size_t n = 0; n < a.data.size(); ++n) {
      Complex z = std::polar(magnitude(n), rng.uniform(-3.14159, 3.14159));
      a.data[n] = Complex(roundTo(dt, z.real()), roundTo(dt, z.imag()));
    }
    std::optional<Tensor<Complex>> s0 = rng.complexTensor(dt, {1, 3, 2});
    checkChunkedGla("gated_linear_attention chunked (complex) T=65536", dt, q,
                    k, v, a, s0, chunks);
  }
}

//===----------------------------------------------------------------------===//
// Gates
//===----------------------------------------------------------------------===//

TEST(ReferenceLowering, Gate) {
  struct Case {
    GateKind kind;
    const char *spelling;
    std::vector<int64_t> gateShape;
    std::optional<double> inputBias, forgetBias;
  };
  const Case cases[] = {
      {GateKind::Fixed, "fixed", {3}, {}, {}},
      {GateKind::Lstm, "lstm", {5, 1}, {}, {}},
      {GateKind::Lstm, "lstm", {2, 5, 3}, -0.5, 2.5},
      {GateKind::Update, "update", {2, 5, 3}, {}, {}},
      {GateKind::Update, "update", {1, 3}, {}, {}},
  };
  Rng rng(5);
  for (Dtype dt : kDtypes)
    for (const Case &c : cases) {
      SCOPED_TRACE(std::string(c.spelling) + " " + name(dt));
      std::vector<int64_t> shape = {2, 5, 3};
      size_t numGates = c.kind == GateKind::Lstm ? 2 : 1;
      std::string attrs;
      if (c.inputBias)
        attrs = "{input_bias = " + std::to_string(*c.inputBias) +
                " : f64, forget_bias = " + std::to_string(*c.forgetBias) +
                " : f64}";
      std::string src = fill(R"mlir(
func.func @f(%c: $X, %z: $X, %g0: $G $G1ARG) -> $X
    attributes {llvm.emit_c_interface} {
  %r = recur.gate <$KIND> %c, %z, gates(%g0 $G1 : $G $G1TYPE) $ATTRS : $X
  return %r : $X
})mlir",
                             {{"G1ARG", numGates == 2 ? ", %g1: $G" : ""},
                              {"G1", numGates == 2 ? ", %g1" : ""},
                              {"G1TYPE", numGates == 2 ? ", $G" : ""},
                              {"KIND", c.spelling},
                              {"ATTRS", attrs}});
      src = fill(
          src, {{"X", ty(shape, name(dt))}, {"G", ty(c.gateShape, name(dt))}});
      Tensor<double> state = rng.tensor(dt, shape);
      Tensor<double> cand = rng.tensor(dt, shape);
      std::vector<Tensor<double>> gates;
      std::vector<HostTensor> args = {host(state), host(cand)};
      for (size_t g = 0; g < numGates; ++g) {
        gates.push_back(rng.preActivations(dt, c.gateShape));
        args.push_back(host(gates.back()));
      }
      std::vector<HostTensor> out = runLowered(src, args);
      ASSERT_EQ(out.size(), 1u);
      Tensor<double> ref =
          gate(c.kind, state, cand, gates, c.inputBias.value_or(-1.0),
               c.forgetBias.value_or(1.0));
      expectClose("gate", dt, real(out[0]), ref);
    }
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

struct WindowCase {
  std::string what;
  std::vector<int64_t> lead; // [..., H]
  int64_t steps, window, block;
  bool includeSelf;
  BiasKind bias;
  int64_t cache;
  std::optional<int64_t> numBuckets, maxDistance;
  std::optional<double> scale;
  // Whether the backward is checked against central differences: not with
  // logits in the hundreds, whose differences' truncation error (the
  // logits' third derivative times the step squared) exceeds the float64
  // check's 1e-8; its forms are then checked against each other.
  bool checkGrad = true;
};

TEST(ReferenceLowering, WindowAttention) {
  const std::optional<int64_t> dflt;
  const WindowCase cases[] = {
      {"token band", {2, 2}, 7, 3, 0, false, BiasKind::None, 0, dflt, dflt, {}},
      {"token band, include_self",
       {2, 2},
       7,
       3,
       0,
       true,
       BiasKind::None,
       0,
       dflt,
       dflt,
       {}},
      {"block band",
       {2, 2},
       11,
       4,
       2,
       false,
       BiasKind::None,
       0,
       dflt,
       dflt,
       {}},
      {"block band, include_self, alibi, cache",
       {2, 2},
       11,
       4,
       2,
       true,
       BiasKind::Alibi,
       3,
       dflt,
       dflt,
       {}},
      {"block band, include_self, t5 default buckets",
       {2, 2},
       13,
       6,
       3,
       true,
       BiasKind::T5,
       0,
       dflt,
       dflt,
       {}},
      {"token band, include_self, t5 log buckets, cache",
       {1, 2},
       17,
       12,
       0,
       true,
       BiasKind::T5,
       5,
       8,
       10,
       {}},
      {"token band, alibi, cache, scale",
       {2, 2},
       5,
       2,
       0,
       false,
       BiasKind::Alibi,
       2,
       dflt,
       dflt,
       0.7},
      {"one step, cache only",
       {2, 2},
       1,
       1,
       0,
       false,
       BiasKind::None,
       1,
       dflt,
       dflt,
       {}},
      {"one step, nothing visible",
       {2, 2},
       1,
       1,
       0,
       false,
       BiasKind::None,
       0,
       dflt,
       dflt,
       {}},
      {"no heads dimension",
       {},
       6,
       2,
       0,
       false,
       BiasKind::None,
       0,
       dflt,
       dflt,
       {}},
      {"window == block, blocks reach into the cache",
       {2, 2},
       9,
       4,
       4,
       false,
       BiasKind::T5,
       4,
       4,
       6,
       {}},
      {"token band, alibi, cache, five tiles",
       {1, 2},
       67,
       24,
       0,
       false,
       BiasKind::Alibi,
       9,
       dflt,
       dflt,
       {}},
      {"window of 1, include_self",
       {2, 2},
       5,
       1,
       0,
       true,
       BiasKind::Alibi,
       0,
       dflt,
       dflt,
       {}},
      // A query of these may see 128 keys or more: the one-pass forms walk
      // the union of the ranges of an aligned group of 32 queries (or, in
      // the backward, key rows), each skipping the positions outside its
      // own (groups cut by T and by the leading indices, and ranges cut at
      // position 0).
      {"token band, include_self, t5, cache, groups of queries",
       {1, 2},
       167,
       128,
       0,
       true,
       BiasKind::T5,
       5,
       dflt,
       dflt,
       {}},
      {"block band, cache, groups of queries",
       {2, 1},
       139,
       120,
       40,
       false,
       BiasKind::None,
       50,
       dflt,
       dflt,
       {}},
      {"block band, include_self, cache, groups of queries",
       {1, 2},
       150,
       96,
       32,
       true,
       BiasKind::None,
       7,
       dflt,
       dflt,
       {}},
      {"token band, groups of queries, the first sees no key",
       {2, 1},
       100,
       130,
       0,
       false,
       BiasKind::None,
       0,
       dflt,
       dflt,
       {}},
      {"block band, include_self, cache",
       {2, 2},
       13,
       4,
       2,
       true,
       BiasKind::None,
       3,
       dflt,
       dflt,
       {}},
      {"token band, window longer than the keys, groups of queries",
       {2, 2},
       70,
       200,
       0,
       false,
       BiasKind::None,
       9,
       dflt,
       dflt,
       {}},
      // Biases in the one-pass backward's other corners: ALiBi with groups
      // of queries, several runs of 64 positions and a batch, the first
      // query seeing no key; T5 with three leading dimensions over a block
      // band.
      {"token band, alibi, groups of queries, the first sees no key",
       {2, 2},
       150,
       130,
       0,
       false,
       BiasKind::Alibi,
       0,
       dflt,
       dflt,
       {}},
      {"block band, t5, three leading dimensions",
       {2, 1, 2},
       70,
       8,
       4,
       false,
       BiasKind::T5,
       0,
       6,
       12,
       {}},
      // Logits up to 240 in magnitude: exp of the largest unshifted would
      // overflow f32, and the one-pass form's rescaling of its sums by
      // exp(m - s) when a larger logit arrives can underflow to 0.
      {"token band, extreme logits",
       {2, 2},
       41,
       16,
       0,
       true,
       BiasKind::None,
       3,
       dflt,
       dflt,
       15.0,
       /*checkGrad=*/false},
      {"token band, extreme logits, groups of queries",
       {1, 2},
       160,
       130,
       0,
       true,
       BiasKind::None,
       0,
       dflt,
       dflt,
       15.0,
       /*checkGrad=*/false},
  };
  Rng rng(6);
  for (Dtype dt : kDtypes)
    for (const WindowCase &c : cases) {
      SCOPED_TRACE(c.what + " " + name(dt));
      int64_t d = 4, dv = 3;
      std::string f = name(dt);
      std::vector<int64_t> qShape = join(c.lead, {c.steps, d});
      std::vector<int64_t> vShape = join(c.lead, {c.steps, dv});
      std::vector<int64_t> kcShape = join(c.lead, {c.cache, d});
      std::vector<int64_t> vcShape = join(c.lead, {c.cache, dv});
      int64_t heads = c.lead.empty() ? 1 : c.lead.back();
      WindowAttentionAttrs attrs;
      attrs.window = c.window;
      attrs.block = c.block;
      attrs.includeSelf = c.includeSelf;
      attrs.biasKind = c.bias;
      attrs.scale = c.scale;
      attrs.numBuckets = c.numBuckets.value_or(32);
      attrs.maxDistance = c.maxDistance.value_or(128);
      std::vector<std::string> attrList;
      if (c.block)
        attrList.push_back("block = " + std::to_string(c.block) + " : i64");
      if (c.includeSelf)
        attrList.push_back("include_self");
      if (c.bias == BiasKind::T5)
        attrList.push_back("bias_kind = #recur.bias<t5>");
      if (c.bias == BiasKind::Alibi)
        attrList.push_back("bias_kind = #recur.bias<alibi>");
      if (c.numBuckets)
        attrList.push_back("num_buckets = " + std::to_string(*c.numBuckets) +
                           " : i64");
      if (c.maxDistance)
        attrList.push_back("max_distance = " + std::to_string(*c.maxDistance) +
                           " : i64");
      if (c.scale)
        attrList.push_back("scale = " + std::to_string(*c.scale) + " : f64");
      std::string attrText;
      for (const std::string &a : attrList)
        attrText += (attrText.empty() ? "{" : ", ") + a;
      if (!attrText.empty())
        attrText += "}";

      Tensor<double> q = rng.tensor(dt, qShape, -2.0, 2.0);
      Tensor<double> k = rng.tensor(dt, qShape, -2.0, 2.0);
      Tensor<double> v = rng.tensor(dt, vShape);
      std::vector<HostTensor> args = {host(q), host(k), host(v)};
      std::optional<Tensor<double>> bias, kc, vc;
      std::vector<int64_t> biasShape = {heads};
      if (c.bias == BiasKind::T5)
        biasShape.push_back(attrs.numBuckets);
      if (c.bias != BiasKind::None) {
        bias = c.bias == BiasKind::T5 ? rng.tensor(dt, biasShape, -2.0, 2.0)
                                      : rng.tensor(dt, biasShape, 0.1, 1.0);
        args.push_back(host(*bias));
      }
      if (c.cache) {
        kc = rng.tensor(dt, kcShape, -2.0, 2.0);
        vc = rng.tensor(dt, vcShape);
        args.push_back(host(*kc));
        args.push_back(host(*vc));
      }
      std::string src =
          fill(R"mlir(
func.func @f(%q: $Q, %k: $Q, %v: $V $BIASARG $CACHEARG) -> $V
    attributes {llvm.emit_c_interface} {
  %o = recur.window_attention %q, %k, %v $BIAS $CACHE window $W $ATTRS
      : $Q, $Q, $V
  return %o : $V
})mlir",
               {{"BIASARG", bias ? ", %bias: $BT" : ""},
                {"CACHEARG", c.cache ? ", %kc: $KC, %vc: $VC" : ""},
                {"BIAS", bias ? "bias(%bias : $BT)" : ""},
                {"CACHE", c.cache ? "cache(%kc, %vc : $KC, $VC)" : ""},
                {"W", std::to_string(c.window)},
                {"ATTRS", attrText}});
      src = fill(src, {{"Q", ty(qShape, f)},
                       {"V", ty(vShape, f)},
                       {"BT", ty(biasShape, f)},
                       {"KC", ty(kcShape, f)},
                       {"VC", ty(vcShape, f)}});
      Tensor<double> expected = windowAttention(q, k, v, attrs, bias, kc, vc);
      std::vector<HostTensor> out = runLowered(src, args);
      ASSERT_EQ(out.size(), 1u);
      expectClose("window_attention", dt, real(out[0]), expected);
      // The CPU pipeline's form: tiles of queries, the keys in panels.
      std::vector<HostTensor> tiled =
          runLowered(src, args, "convert-recur-to-loops{window-tiles}");
      ASSERT_EQ(tiled.size(), 1u);
      expectClose("window_attention, tiles", dt, real(tiled[0]), expected);
      // The GPU pipeline's form: one pass over each query's keys.
      std::vector<HostTensor> onePass =
          runLowered(src, args, "convert-recur-to-loops{window-one-pass}");
      ASSERT_EQ(onePass.size(), 1u);
      expectClose("window_attention, one pass", dt, real(onePass[0]), expected);

      // The fused backward (the register blocks of 8 f32 or 4 f64 lanes)
      // against central differences of the float64 oracle's forward, L =
      // sum(dy * o), one input element at a time.
      Tensor<double> dy = rng.tensor(dt, vShape);
      std::vector<HostTensor> gradArgs = {host(q), host(k), host(v), host(dy)};
      std::string results = "$Q, $Q, $V";
      std::vector<Tensor<double> *> wrt = {&q, &k, &v};
      if (bias) {
        gradArgs.push_back(host(*bias));
        results += ", $BT";
        wrt.push_back(&*bias);
      }
      if (c.cache) {
        gradArgs.push_back(host(*kc));
        gradArgs.push_back(host(*vc));
        results += ", $KC, $VC";
        wrt.push_back(&*kc);
        wrt.push_back(&*vc);
      }
      std::string gradSrc =
          fill(R"mlir(
func.func @f(%q: $Q, %k: $Q, %v: $V, %dy: $V $BIASARG $CACHEARG)
    -> ($RESULTS) attributes {llvm.emit_c_interface} {
  %g:$N = recur.window_attention_grad %q, %k, %v, %dy $BIAS $CACHE
      window $W $ATTRS : $Q, $Q, $V -> $RESULTS
  return $GS : $RESULTS
})mlir",
               {{"BIASARG", bias ? ", %bias: $BT" : ""},
                {"CACHEARG", c.cache ? ", %kc: $KC, %vc: $VC" : ""},
                {"BIAS", bias ? "bias(%bias : $BT)" : ""},
                {"CACHE", c.cache ? "cache(%kc, %vc : $KC, $VC)" : ""},
                {"W", std::to_string(c.window)},
                {"ATTRS", attrText},
                {"RESULTS", results},
                {"N", std::to_string(wrt.size())}});
      std::string returned;
      for (size_t i = 0; i < wrt.size(); ++i)
        returned += (i ? ", %g#" : "%g#") + std::to_string(i);
      gradSrc = fill(gradSrc, {{"GS", returned}});
      gradSrc = fill(gradSrc, {{"Q", ty(qShape, f)},
                               {"V", ty(vShape, f)},
                               {"BT", ty(biasShape, f)},
                               {"KC", ty(kcShape, f)},
                               {"VC", ty(vcShape, f)}});
      std::vector<HostTensor> grads = runLowered(gradSrc, gradArgs);
      ASSERT_EQ(grads.size(), wrt.size());
      // The GPU pipeline's form: passes a thread a query or a key, with a
      // bias its cotangent summed from each query's row of a partial.
      std::vector<HostTensor> onePassGrads = runLowered(
          gradSrc, gradArgs, "convert-recur-to-loops{window-one-pass}");
      ASSERT_EQ(onePassGrads.size(), wrt.size());
      if (!c.checkGrad) {
        for (size_t i = 0; i < wrt.size(); ++i)
          expectClose("window_attention_grad, one pass against tiles", dt,
                      real(onePassGrads[i]), real(grads[i]));
        continue;
      }
      auto loss = [&] {
        Tensor<double> o = windowAttention(q, k, v, attrs, bias, kc, vc);
        double sum = 0.0;
        for (size_t n = 0; n < o.data.size(); ++n)
          sum += dy.data[n] * o.data[n];
        return sum;
      };
      for (size_t i = 0; i < wrt.size(); ++i) {
        Tensor<double> &x = *wrt[i];
        Tensor<double> expected(x.shape);
        for (size_t n = 0; n < x.data.size(); ++n) {
          double saved = x.data[n], h = 1e-5 * std::max(1.0, std::abs(saved));
          x.data[n] = saved + h;
          double up = loss();
          x.data[n] = saved - h;
          double down = loss();
          x.data[n] = saved;
          expected.data[n] = (up - down) / (2.0 * h);
        }
        // The differences (steps of 1e-5) carry about 1e-10 of truncation
        // and roundoff (4e-10 measured): float64 is checked to 1e-8, float32
        // to its own tolerance (4e-7 measured).
        for (auto [form, computed] :
             {std::make_pair("window_attention_grad", &grads),
              std::make_pair("window_attention_grad, one pass",
                             &onePassGrads)}) {
          Tensor<double> actual = real((*computed)[i]);
          double diff = 0.0, scale = 0.0;
          bool finite = true;
          for (size_t n = 0; n < x.data.size(); ++n) {
            finite &= std::isfinite(actual.data[n]);
            diff = std::max(diff, std::abs(actual.data[n] - expected.data[n]));
            scale = std::max(scale, std::abs(expected.data[n]));
          }
          double err = !finite ? HUGE_VAL : scale > 0.0 ? diff / scale : diff;
          double &worst = worstErrors()[form][name(dt)];
          worst = std::max(worst, err);
          EXPECT_LE(err, dt == Dtype::F64 ? 1e-8 : kTolF32)
              << form << " result #" << i << ": normwise error " << err;
        }
      }
    }
}

/// The T5 bucket function against the oracle's at every distance up to 300,
/// for several table shapes.
TEST(ReferenceLowering, WindowAttentionT5Buckets) {
  const std::pair<int64_t, int64_t> tables[] = {
      {32, 128}, {8, 10}, {2, 3}, {16, 40}};
  for (auto [buckets, maxDistance] : tables) {
    SCOPED_TRACE("num_buckets " + std::to_string(buckets));
    // One head, T = 301 queries, q = k = 0: query p weighs keys 0 .. p by
    // exp(bias of the bucket of p - j) alone, and only key 0 has a nonzero
    // value, so a wrong bucket at any distance up to 300 (exact, log-spaced
    // or clamped at max_distance) changes the output.
    int64_t steps = 301;
    Tensor<double> q({1, steps, 1}, 0.0), k({1, steps, 1}, 0.0);
    Tensor<double> v({1, steps, 1}, 0.0);
    v.data[0] = 1.0;
    Tensor<double> bias({1, buckets});
    for (int64_t b = 0; b < buckets; ++b)
      bias.data[b] = 0.25 * static_cast<double>(b % 7) - 0.5;
    WindowAttentionAttrs attrs;
    attrs.window = steps;
    attrs.includeSelf = true;
    attrs.biasKind = BiasKind::T5;
    attrs.numBuckets = buckets;
    attrs.maxDistance = maxDistance;
    std::string src = fill(R"mlir(
func.func @f(%q: $Q, %k: $Q, %v: $Q, %bias: $BT) -> $Q
    attributes {llvm.emit_c_interface} {
  %o = recur.window_attention %q, %k, %v bias(%bias : $BT) window $W
      {include_self, bias_kind = #recur.bias<t5>, num_buckets = $NB : i64,
       max_distance = $MD : i64} : $Q, $Q, $Q
  return %o : $Q
})mlir",
                           {{"Q", ty(q.shape, "f64")},
                            {"BT", ty(bias.shape, "f64")},
                            {"W", std::to_string(steps)},
                            {"NB", std::to_string(buckets)},
                            {"MD", std::to_string(maxDistance)}});
    std::vector<HostTensor> out =
        runLowered(src, {host(q), host(k), host(v), host(bias)});
    ASSERT_EQ(out.size(), 1u);
    expectClose("window_attention t5 buckets", Dtype::F64, real(out[0]),
                windowAttention(q, k, v, attrs, bias));
  }
}

struct AttentionCase {
  std::string what;
  std::vector<int64_t> lead;
  int64_t tq, tk;
  MaskKind mask;
  int64_t slots;
  bool padding;
  std::optional<double> scale;
  double magnitude; // of q and k
};

TEST(ReferenceLowering, Attention) {
  const AttentionCase cases[] = {
      {"none", {2}, 3, 5, MaskKind::None, 0, false, {}, 1.0},
      {"none, padding", {3}, 4, 6, MaskKind::None, 0, true, {}, 1.0},
      {"causal", {2}, 6, 6, MaskKind::Causal, 0, false, {}, 1.0},
      {"causal, fewer queries, padding",
       {2, 2},
       3,
       7,
       MaskKind::Causal,
       0,
       true,
       {},
       1.0},
      {"memory", {2}, 7, 7, MaskKind::Memory, 3, false, {}, 1.0},
      {"memory, padding", {3}, 7, 7, MaskKind::Memory, 2, true, {}, 1.0},
      {"memory, all slots", {2}, 5, 5, MaskKind::Memory, 5, true, {}, 1.0},
      {"one query, one key", {2}, 1, 1, MaskKind::Causal, 0, false, {}, 1.0},
      {"scale", {2}, 5, 5, MaskKind::None, 0, false, 0.3, 1.0},
      {"large logits", {2}, 5, 11, MaskKind::Causal, 0, true, 1.0, 8.0},
  };
  Rng rng(7);
  for (Dtype dt : kDtypes)
    for (const AttentionCase &c : cases) {
      SCOPED_TRACE(c.what + " " + name(dt));
      int64_t d = 4, dv = 3;
      std::string f = name(dt);
      std::vector<int64_t> qShape = join(c.lead, {c.tq, d});
      std::vector<int64_t> kShape = join(c.lead, {c.tk, d});
      std::vector<int64_t> vShape = join(c.lead, {c.tk, dv});
      std::vector<int64_t> oShape = join(c.lead, {c.tq, dv});
      std::vector<int64_t> padShape = join(c.lead, {c.tk});
      Tensor<double> q = rng.tensor(dt, qShape, -c.magnitude, c.magnitude);
      Tensor<double> k = rng.tensor(dt, kShape, -c.magnitude, c.magnitude);
      Tensor<double> v = rng.tensor(dt, vShape);
      std::vector<HostTensor> args = {host(q), host(k), host(v)};
      std::optional<Tensor<bool>> pad;
      if (c.padding) {
        pad = rng.mask(padShape, 0.3);
        // The first leading index has every key padded: zero outputs.
        for (int64_t j = 0; j < c.tk; ++j)
          pad->data[j] = true;
        args.push_back(host(*pad));
      }
      AttentionAttrs attrs;
      attrs.mask = c.mask;
      attrs.memorySlots = c.slots;
      attrs.scale = c.scale;
      std::string attrText =
          "{mask = #recur.mask<" +
          std::string(c.mask == MaskKind::None     ? "none"
                      : c.mask == MaskKind::Causal ? "causal"
                                                   : "memory") +
          ">";
      if (c.slots)
        attrText += ", memory_slots = " + std::to_string(c.slots) + " : i64";
      if (c.scale)
        attrText += ", scale = " + std::to_string(*c.scale) + " : f64";
      attrText += "}";
      std::string src = fill(R"mlir(
func.func @f(%q: $Q, %k: $K, %v: $V $PADARG) -> $O
    attributes {llvm.emit_c_interface} {
  %o = recur.attention %q, %k, %v $PAD $ATTRS : $Q, $K, $V
  return %o : $O
})mlir",
                             {{"PADARG", pad ? ", %pad: $P" : ""},
                              {"PAD", pad ? "key_padding(%pad : $P)" : ""},
                              {"ATTRS", attrText}});
      src = fill(src, {{"Q", ty(qShape, f)},
                       {"K", ty(kShape, f)},
                       {"V", ty(vShape, f)},
                       {"O", ty(oShape, f)},
                       {"P", ty(padShape, "i1")}});
      std::vector<HostTensor> out = runLowered(src, args);
      ASSERT_EQ(out.size(), 1u);
      expectClose("attention", dt, real(out[0]),
                  attention(q, k, v, attrs, pad));
    }
}

TEST(ReferenceLowering, RelAttention) {
  struct Case {
    std::vector<int64_t> lead; // [..., H]
    int64_t memory, segment;
    std::optional<double> scale;
  };
  const Case cases[] = {
      {{2, 2}, 2, 5, {}}, // M < L
      {{2, 2}, 3, 3, {}}, // M = L
      {{1, 2}, 6, 2, {}}, // M > L
      {{2, 2}, 4, 1, {}}, // L = 1
      {{2}, 0, 3, 0.4},   // no memory, no batch dimension
      {{1, 3}, 5, 7, {}}, // primes
  };
  Rng rng(8);
  for (Dtype dt : kDtypes)
    for (const Case &c : cases) {
      SCOPED_TRACE("M=" + std::to_string(c.memory) +
                   " L=" + std::to_string(c.segment) + " " + name(dt));
      int64_t heads = c.lead.back(), dh = 4, dv = 3;
      int64_t keys = c.memory + c.segment;
      std::string f = name(dt);
      std::vector<int64_t> qShape = join(c.lead, {c.segment, dh});
      std::vector<int64_t> kShape = join(c.lead, {keys, dh});
      std::vector<int64_t> vShape = join(c.lead, {keys, dv});
      std::vector<int64_t> oShape = join(c.lead, {c.segment, dv});
      std::vector<int64_t> rShape = {heads, keys, dh}, uShape = {heads, dh};
      Tensor<double> q = rng.tensor(dt, qShape), k = rng.tensor(dt, kShape);
      Tensor<double> v = rng.tensor(dt, vShape), r = rng.tensor(dt, rShape);
      Tensor<double> u = rng.tensor(dt, uShape), pb = rng.tensor(dt, uShape);
      std::string src =
          fill(R"mlir(
func.func @f(%q: $Q, %k: $K, %v: $V, %r: $R, %u: $U, %pb: $U) -> $O
    attributes {llvm.emit_c_interface} {
  %o = recur.rel_attention %q, %k, %v, %r, %u, %pb $ATTRS
      : $Q, $K, $V, $R, $U, $U
  return %o : $O
})mlir",
               {{"Q", ty(qShape, f)},
                {"K", ty(kShape, f)},
                {"V", ty(vShape, f)},
                {"O", ty(oShape, f)},
                {"R", ty(rShape, f)},
                {"U", ty(uShape, f)},
                {"ATTRS",
                 c.scale ? "{scale = " + std::to_string(*c.scale) + " : f64}"
                         : ""}});
      std::vector<HostTensor> out = runLowered(
          src, {host(q), host(k), host(v), host(r), host(u), host(pb)});
      ASSERT_EQ(out.size(), 1u);
      expectClose("rel_attention", dt, real(out[0]),
                  relAttention(q, k, v, r, u, pb, c.scale));
    }
}

//===----------------------------------------------------------------------===//
// Blocks and memory
//===----------------------------------------------------------------------===//

/// A block body with a linear_scan and a gate carrying a [2, 3] state, and a
/// memory_update carrying the last 5 inputs:
///   h, last = linear_scan(a_blk, x_blk, init = c)
///   c'      = gate<update>(c, last, p)
///   mem'    = memory_update(mem, x_blk, keep 5)
TEST(ReferenceLowering, BlockRecurrence) {
  Rng rng(9);
  for (Dtype dt : kDtypes)
    for (auto [steps, blockSize] :
         {std::pair<int64_t, int64_t>{12, 4}, {5, 5}, {7, 1}, {6, 3}}) {
      SCOPED_TRACE("T=" + std::to_string(steps) +
                   " block=" + std::to_string(blockSize) + " " + name(dt));
      std::string f = name(dt);
      std::vector<int64_t> xShape = {2, steps, 3}, bShape = {2, blockSize, 3};
      std::vector<int64_t> cShape = {2, 3}, mShape = {2, 5, 3};
      std::string src = fill(R"mlir(
func.func @f(%x: $X, %a: $X, %c0: $C, %m0: $M, %p: $G)
    -> ($X, $C, $M) attributes {llvm.emit_c_interface} {
  %y, %c, %m = recur.block_recurrence (%x, %a : $X, $X)
      init(%c0, %m0 : $C, $M) block $BS along 1 -> $X, $C, $M {
  ^bb0(%xb: $XB, %ab: $XB, %cb: $C, %mb: $M):
    %h, %last = recur.linear_scan %ab, %xb init(%cb : $C) along 1 : $XB, $XB
    %n = recur.gate <update> %cb, %last, gates(%p : $G) : $C
    %m1 = recur.memory_update %mb, %xb along 1 keep 5 : $M, $XB
    recur.yield %h, %n, %m1 : $XB, $C, $M
  }
  return %y, %c, %m : $X, $C, $M
})mlir",
                             {{"X", ty(xShape, f)},
                              {"XB", ty(bShape, f)},
                              {"C", ty(cShape, f)},
                              {"M", ty(mShape, f)},
                              {"G", ty({3}, f)},
                              {"BS", std::to_string(blockSize)}});
      Tensor<double> x = rng.tensor(dt, xShape), a = rng.decays(dt, xShape);
      Tensor<double> c0 = rng.tensor(dt, cShape), m0 = rng.tensor(dt, mShape);
      Tensor<double> p = rng.preActivations(dt, {3});
      std::vector<HostTensor> out =
          runLowered(src, {host(x), host(a), host(c0), host(m0), host(p)});
      ASSERT_EQ(out.size(), 3u);
      BlockBody body = [&](const std::vector<Tensor<double>> &blocks,
                           const std::vector<Tensor<double>> &carried) {
        ScanResult<double> s = linearScan(blocks[1], blocks[0], carried[0], 1);
        Tensor<double> next = gate(GateKind::Update, carried[0], s.last, {p});
        Tensor<double> mem = memoryUpdate(carried[1], blocks[0], 1, 5);
        return BlockStep{{s.h}, {next, mem}};
      };
      BlockRecurrenceResult ref =
          blockRecurrence({x, a}, {c0, m0}, blockSize, 1, body);
      expectClose("block_recurrence", dt, real(out[0]), ref.outputs[0]);
      expectClose("block_recurrence", dt, real(out[1]), ref.finals[0]);
      expectClose("block_recurrence", dt, real(out[2]), ref.finals[1]);
    }
}

TEST(ReferenceLowering, MemoryUpdateAndStopGradient) {
  struct Case {
    std::vector<int64_t> memShape, newShape;
    int64_t axis, size;
  };
  const Case cases[] = {
      {{2, 5, 3}, {2, 3, 3}, 1, 4}, // L < size < M + L
      {{2, 5, 3}, {2, 3, 3}, 1, 2}, // size < L
      {{2, 4, 3}, {2, 4, 3}, 1, 8}, // everything
      {{2, 3, 3}, {2, 2, 3}, 1, 2}, // size = L
      {{2, 3, 3}, {2, 2, 3}, 1, 0}, // nothing
      {{5, 2}, {3, 2}, 0, 7},       {{2, 3, 6}, {2, 3, 1}, 2, 6},
  };
  Rng rng(10);
  for (Dtype dt : kDtypes)
    for (const Case &c : cases) {
      SCOPED_TRACE("axis " + std::to_string(c.axis) + " keep " +
                   std::to_string(c.size) + " " + name(dt));
      std::string f = name(dt);
      std::vector<int64_t> outShape = c.memShape;
      outShape[c.axis] = c.size;
      std::string src = fill(R"mlir(
func.func @f(%m: $M, %n: $N) -> ($O, $N) attributes {llvm.emit_c_interface} {
  %r = recur.memory_update %m, %n along $AXIS keep $SIZE : $M, $N
  %s = recur.stop_gradient %n : $N
  return %r, %s : $O, $N
})mlir",
                             {{"M", ty(c.memShape, f)},
                              {"N", ty(c.newShape, f)},
                              {"O", ty(outShape, f)},
                              {"AXIS", std::to_string(c.axis)},
                              {"SIZE", std::to_string(c.size)}});
      Tensor<double> mem = rng.tensor(dt, c.memShape);
      Tensor<double> fresh = rng.tensor(dt, c.newShape);
      std::vector<HostTensor> out = runLowered(src, {host(mem), host(fresh)});
      ASSERT_EQ(out.size(), 2u);
      expectClose("memory_update", dt, real(out[0]),
                  memoryUpdate(mem, fresh, c.axis, c.size));
      expectClose("stop_gradient", dt, real(out[1]), stopGradient(fresh));
    }
}

//===----------------------------------------------------------------------===//
// Depth recurrence and halting
//===----------------------------------------------------------------------===//

TEST(ReferenceLowering, Halting) {
  Rng rng(11);
  for (Dtype dt : kDtypes)
    for (std::optional<double> threshold : {std::optional<double>(), {0.8}}) {
      SCOPED_TRACE(std::string(name(dt)) +
                   (threshold ? " threshold 0.8" : " default threshold"));
      std::string f = name(dt);
      std::vector<int64_t> tok = {2, 5}, state = {2, 5, 4};
      std::string src =
          fill(R"mlir(
func.func @f(%p: $P, %h: $H, %m: $P, %acc: $H, %s: $H) -> ($P, $H, $P, $H)
    attributes {llvm.emit_c_interface} {
  %a, %s1, %m1, %acc1 = recur.halting %p, %h, %m, %acc, %s $ATTRS : $P, $H
  return %a, %s1, %m1, %acc1 : $P, $H, $P, $H
})mlir",
               {{"P", ty(tok, f)},
                {"H", ty(state, f)},
                {"ATTRS", threshold ? "{threshold = 0.8 : f64}" : ""}});
      Tensor<double> p = rng.tensor(dt, tok, 0.0, 1.0);
      Tensor<double> h = rng.tensor(dt, state);
      Tensor<double> acc = rng.tensor(dt, state);
      Tensor<double> s = rng.tensor(dt, state);
      // Masses below, at and above both thresholds.
      const double masses[] = {0.0, 0.5, 0.79, 0.8, 0.85, 0.9989, 0.999, 1.0};
      Tensor<double> mass(tok);
      for (size_t n = 0; n < mass.data.size(); ++n)
        mass.data[n] = roundTo(dt, masses[n % 8]);
      std::vector<HostTensor> out =
          runLowered(src, {host(p), host(h), host(mass), host(acc), host(s)});
      ASSERT_EQ(out.size(), 4u);
      HaltingResult ref =
          halting(p, h, mass, acc, s, threshold.value_or(0.999));
      expectClose("halting", dt, real(out[0]), ref.a);
      expectClose("halting", dt, real(out[1]), ref.s);
      expectClose("halting", dt, real(out[2]), ref.newMass);
      expectClose("halting", dt, real(out[3]), ref.newAcc);
    }
}

/// A Universal Transformer depth loop: at step l the state is gated toward
/// the candidate z[l] and a halting step with p_hat[l] accumulates it.
TEST(ReferenceLowering, HaltingThroughDepthLoop) {
  const int64_t depth = 5;
  const double threshold = 0.9;
  Rng rng(12);
  for (Dtype dt : kDtypes) {
    SCOPED_TRACE(name(dt));
    std::string f = name(dt);
    std::vector<int64_t> tok = {2, 3}, state = {2, 3, 4};
    std::string src = fill(R"mlir(
func.func @f(%h0: $H, %m0: $P, %acc0: $H, %s0: $H, %ps: $PS, %zs: $ZS,
             %bg: $G) -> ($H, $P, $H, $H) attributes {llvm.emit_c_interface} {
  %h, %m, %acc, %s = recur.depth_loop max_depth $DEPTH
      init(%h0, %m0, %acc0, %s0 : $H, $P, $H, $H) {
  ^bb0(%l: index, %hh: $H, %mm: $P, %aa: $H, %ss: $H):
    %p = tensor.extract_slice %ps[%l, 0, 0] [1, 2, 3] [1, 1, 1]
        : $PS to $P
    %z = tensor.extract_slice %zs[%l, 0, 0, 0] [1, 2, 3, 4] [1, 1, 1, 1]
        : $ZS to $H
    %h1 = recur.gate <fixed> %hh, %z, gates(%bg : $G) : $H
    %a, %s1, %m1, %acc1 = recur.halting %p, %h1, %mm, %aa, %ss
        {threshold = 0.9 : f64} : $P, $H
    recur.yield %h1, %m1, %acc1, %s1 : $H, $P, $H, $H
  }
  return %h, %m, %acc, %s : $H, $P, $H, $H
})mlir",
                           {{"H", ty(state, f)},
                            {"P", ty(tok, f)},
                            {"PS", ty(join({depth}, tok), f)},
                            {"ZS", ty(join({depth}, state), f)},
                            {"G", ty({4}, f)},
                            {"DEPTH", std::to_string(depth)}});
    Tensor<double> h0 = rng.tensor(dt, state), m0(tok, 0.0);
    Tensor<double> acc0(state, 0.0), s0(state, 0.0);
    Tensor<double> ps = rng.tensor(dt, join({depth}, tok), 0.2, 0.8);
    Tensor<double> zs = rng.tensor(dt, join({depth}, state));
    Tensor<double> bg = rng.preActivations(dt, {4});
    // The tokens halt at different steps; no mass lies so close to the
    // threshold that float32 rounding could flip a token's decision.
    double margin = 1.0;
    int64_t halted = 0;
    DepthBody body = [&](int64_t l, const std::vector<Tensor<double>> &c) {
      Tensor<double> h1 = gate(GateKind::Fixed, c[0], step(zs, l), {bg});
      HaltingResult r = halting(step(ps, l), h1, c[1], c[2], c[3], threshold);
      for (double m : c[1].data) {
        margin = std::min(margin, std::abs(m - threshold));
        halted += m >= threshold;
      }
      return std::vector<Tensor<double>>{h1, r.newMass, r.newAcc, r.s};
    };
    std::vector<Tensor<double>> ref =
        depthLoop({h0, m0, acc0, s0}, depth, body);
    ASSERT_GT(margin, 1e-4);
    ASSERT_GT(halted, 0); // some token halts before the last step
    std::vector<HostTensor> out =
        runLowered(src, {host(h0), host(m0), host(acc0), host(s0), host(ps),
                         host(zs), host(bg)});
    ASSERT_EQ(out.size(), 4u);
    const char *op = "depth_loop + halting";
    expectClose(op, dt, real(out[0]), ref[0]);
    expectClose(op, dt, real(out[1]), ref[1]);
    expectClose(op, dt, real(out[2]), ref[2]);
    expectClose(op, dt, real(out[3]), ref[3]);
  }
}

//===----------------------------------------------------------------------===//
// Experts
//===----------------------------------------------------------------------===//

TEST(ReferenceLowering, RouteTopK) {
  Rng rng(13);
  for (Dtype dt : kDtypes)
    for (int64_t k : {1, 3, 6})
      for (std::optional<double> eps : {std::optional<double>(), {0.01}}) {
        SCOPED_TRACE("k=" + std::to_string(k) + " " + name(dt));
        std::string f = name(dt);
        std::vector<int64_t> shape = {2, 3, 6}, outShape = {2, 3, k};
        // Values from a small set, so most rows have ties; one row of equal
        // probabilities.
        const double levels[] = {0.05, 0.1, 0.2, 0.3};
        Tensor<double> probs(shape);
        for (double &x : probs.data)
          x = roundTo(dt, levels[rng.integer(0, 3)]);
        for (int64_t e = 0; e < 6; ++e)
          probs.data[6 + e] = roundTo(dt, 0.1);
        std::string src = fill(R"mlir(
func.func @f(%p: $P) -> ($G, $I) attributes {llvm.emit_c_interface} {
  %g, %i = recur.route_topk %p top $K $ATTRS : $P
  return %g, %i : $G, $I
})mlir",
                               {{"P", ty(shape, f)},
                                {"G", ty(outShape, f)},
                                {"I", ty(outShape, "i32")},
                                {"K", std::to_string(k)},
                                {"ATTRS", eps ? "{eps = 0.01 : f64}" : ""}});
        std::vector<HostTensor> out = runLowered(src, {host(probs)});
        ASSERT_EQ(out.size(), 2u);
        RouteResult ref = routeTopK(probs, k, eps.value_or(1e-6));
        expectClose("route_topk", dt, real(out[0]), ref.gates);
        EXPECT_EQ(ints(out[1]).data, ref.indices.data);
      }
}

TEST(ReferenceLowering, MoE) {
  struct Case {
    Activation activation;
    const char *spelling;
    bool withActive;
    int64_t k;
  };
  const Case cases[] = {
      {Activation::Relu, "relu", false, 2},
      {Activation::Gelu, "gelu", true, 2},
      {Activation::Silu, "silu", true, 1},
      {Activation::Relu, "relu", true, 3},
      {Activation::Gelu, "gelu", false, 3},
      {Activation::Silu, "silu", false, 2},
  };
  Rng rng(14);
  for (Dtype dt : kDtypes)
    for (const Case &c : cases) {
      SCOPED_TRACE(std::string(c.spelling) + " " + name(dt));
      std::string f = name(dt);
      int64_t d = 4, hidden = 5, experts = 3;
      std::vector<int64_t> tok = {2, 3};
      std::vector<int64_t> xShape = join(tok, {d}), kShape = join(tok, {c.k});
      std::vector<int64_t> inShape = {experts, d, hidden};
      std::vector<int64_t> outShape = {experts, hidden, d};
      Tensor<double> x = rng.tensor(dt, xShape, -2.0, 2.0);
      Tensor<int32_t> idx(kShape);
      for (int32_t &e : idx.data)
        e = static_cast<int32_t>(rng.integer(0, experts - 1));
      Tensor<double> gates = rng.tensor(dt, kShape, 0.0, 1.0);
      Tensor<double> wIn = rng.tensor(dt, inShape, -2.0, 2.0);
      Tensor<double> wOut = rng.tensor(dt, outShape);
      std::vector<HostTensor> args = {host(x), host(idx), host(gates),
                                      host(wIn), host(wOut)};
      std::optional<Tensor<bool>> active;
      if (c.withActive) {
        active = Tensor<bool>(tok, true);
        active->data[1] = active->data[4] = false;
        args.push_back(host(*active));
      }
      std::string src = fill(R"mlir(
func.func @f(%x: $X, %i: $I, %g: $K, %w1: $W1, %w2: $W2 $ACTARG) -> $X
    attributes {llvm.emit_c_interface} {
  %y = recur.moe %x, %i, %g, %w1, %w2 $ACT
      {activation = #recur.activation<$FN>} : $X, $I, $K, $W1, $W2
  return %y : $X
})mlir",
                             {{"ACTARG", active ? ", %act: $A" : ""},
                              {"ACT", active ? "active(%act : $A)" : ""},
                              {"FN", c.spelling}});
      src = fill(src, {{"X", ty(xShape, f)},
                       {"I", ty(kShape, "i32")},
                       {"K", ty(kShape, f)},
                       {"W1", ty(inShape, f)},
                       {"W2", ty(outShape, f)},
                       {"A", ty(tok, "i1")}});
      std::vector<HostTensor> out = runLowered(src, args);
      ASSERT_EQ(out.size(), 1u);
      Tensor<double> ref = moe(x, idx, gates, wIn, wOut, active, c.activation);
      expectClose("moe", dt, real(out[0]), ref);
      if (active)
        for (int64_t e = 0; e < d; ++e)
          EXPECT_EQ(out[0].values[1 * d + e], Complex(0.0))
              << "an inactive token must get exactly 0";
    }
}

//===----------------------------------------------------------------------===//
// Dynamic shapes
//===----------------------------------------------------------------------===//

/// The same lowerings with sizes known only at run time (`tensor.dim`
/// instead of constants), in float64.
TEST(ReferenceLowering, DynamicShapes) {
  const Dtype dt = Dtype::F64;
  Rng rng(15);
  {
    SCOPED_TRACE("linear_scan, reverse, dynamic T");
    std::vector<int64_t> shape = {2, 9, 3};
    Tensor<double> a = rng.decays(dt, shape), b = rng.tensor(dt, shape);
    std::string src =
        fill(R"mlir(
func.func @f(%a: $X, %b: $X) -> ($X, $S) attributes {llvm.emit_c_interface} {
  %h, %last = recur.linear_scan %a, %b along 1 reverse : $X, $X
  return %h, %last : $X, $S
})mlir",
             {{"X", ty(dyn(shape, {1}), "f64")}, {"S", ty({2, 3}, "f64")}});
    std::vector<HostTensor> out = runLowered(src, {host(a), host(b)});
    ASSERT_EQ(out.size(), 2u);
    ScanResult<double> ref = linearScan(a, b, std::nullopt, 1, true);
    expectClose("dynamic shapes", dt, real(out[0]), ref.h);
    expectClose("dynamic shapes", dt, real(out[1]), ref.last);
  }
  {
    SCOPED_TRACE("gated_linear_attention, dynamic T and dv");
    Tensor<double> q = rng.tensor(dt, {2, 7, 3}), k = rng.tensor(dt, {2, 7, 3});
    Tensor<double> v = rng.tensor(dt, {2, 7, 5}), a = rng.decays(dt, {2, 7, 3});
    std::string src = fill(R"mlir(
func.func @f(%q: $Q, %k: $Q, %v: $V, %a: $Q) -> ($V, $S)
    attributes {llvm.emit_c_interface} {
  %y, %s = recur.gated_linear_attention %q, %k, %v, %a : $Q, $Q, $V, $Q
  return %y, %s : $V, $S
})mlir",
                           {{"Q", ty({2, -1, 3}, "f64")},
                            {"V", ty({2, -1, -1}, "f64")},
                            {"S", ty({2, 3, -1}, "f64")}});
    std::vector<HostTensor> out =
        runLowered(src, {host(q), host(k), host(v), host(a)});
    ASSERT_EQ(out.size(), 2u);
    GlaResult<double> ref = gatedLinearAttention(q, k, v, a, std::nullopt);
    expectClose("dynamic shapes", dt, real(out[0]), ref.y);
    expectClose("dynamic shapes", dt, real(out[1]), ref.state);
  }
  {
    SCOPED_TRACE("window_attention, t5, dynamic T and cache");
    Tensor<double> q = rng.tensor(dt, {2, 2, 9, 4}, -2.0, 2.0);
    Tensor<double> k = rng.tensor(dt, {2, 2, 9, 4}, -2.0, 2.0);
    Tensor<double> v = rng.tensor(dt, {2, 2, 9, 3});
    Tensor<double> kc = rng.tensor(dt, {2, 2, 3, 4}, -2.0, 2.0);
    Tensor<double> vc = rng.tensor(dt, {2, 2, 3, 3});
    Tensor<double> bias = rng.tensor(dt, {2, 8});
    std::string src = fill(R"mlir(
func.func @f(%q: $Q, %k: $Q, %v: $V, %bias: $B, %kc: $KC, %vc: $VC) -> $V
    attributes {llvm.emit_c_interface} {
  %o = recur.window_attention %q, %k, %v bias(%bias : $B)
      cache(%kc, %vc : $KC, $VC) window 6
      {block = 3 : i64, bias_kind = #recur.bias<t5>, num_buckets = 8 : i64,
       max_distance = 7 : i64} : $Q, $Q, $V
  return %o : $V
})mlir",
                           {{"Q", ty({2, 2, -1, -1}, "f64")},
                            {"V", ty({2, 2, -1, 3}, "f64")},
                            {"B", ty({2, 8}, "f64")},
                            {"KC", ty({2, 2, -1, -1}, "f64")},
                            {"VC", ty({2, 2, -1, 3}, "f64")}});
    std::vector<HostTensor> out = runLowered(
        src, {host(q), host(k), host(v), host(bias), host(kc), host(vc)});
    ASSERT_EQ(out.size(), 1u);
    WindowAttentionAttrs attrs;
    attrs.window = 6;
    attrs.block = 3;
    attrs.biasKind = BiasKind::T5;
    attrs.numBuckets = 8;
    attrs.maxDistance = 7;
    Tensor<double> expected = windowAttention(q, k, v, attrs, bias, kc, vc);
    expectClose("dynamic shapes", dt, real(out[0]), expected);
    // The CPU pipeline's tiles, the key panels' channel count dynamic.
    std::vector<HostTensor> tiled = runLowered(
        src, {host(q), host(k), host(v), host(bias), host(kc), host(vc)},
        "convert-recur-to-loops{window-tiles}");
    ASSERT_EQ(tiled.size(), 1u);
    expectClose("dynamic shapes", dt, real(tiled[0]), expected);
  }
  {
    SCOPED_TRACE("attention, causal, padding, dynamic Tq and Tk");
    Tensor<double> q = rng.tensor(dt, {2, 3, 4}), k = rng.tensor(dt, {2, 8, 4});
    Tensor<double> v = rng.tensor(dt, {2, 8, 2});
    Tensor<bool> pad = rng.mask({2, 8}, 0.3);
    std::string src = fill(R"mlir(
func.func @f(%q: $Q, %k: $Q, %v: $V, %pad: $P) -> $V
    attributes {llvm.emit_c_interface} {
  %o = recur.attention %q, %k, %v key_padding(%pad : $P)
      {mask = #recur.mask<causal>} : $Q, $Q, $V
  return %o : $V
})mlir",
                           {{"Q", ty({2, -1, 4}, "f64")},
                            {"V", ty({2, -1, 2}, "f64")},
                            {"P", ty({2, -1}, "i1")}});
    std::vector<HostTensor> out =
        runLowered(src, {host(q), host(k), host(v), host(pad)});
    ASSERT_EQ(out.size(), 1u);
    AttentionAttrs attrs;
    attrs.mask = MaskKind::Causal;
    expectClose("dynamic shapes", dt, real(out[0]),
                attention(q, k, v, attrs, pad));
  }
  {
    SCOPED_TRACE("rel_attention, dynamic memory");
    Tensor<double> q = rng.tensor(dt, {1, 2, 3, 4}),
                   k = rng.tensor(dt, {1, 2, 7, 4});
    Tensor<double> v = rng.tensor(dt, {1, 2, 7, 3}),
                   r = rng.tensor(dt, {2, 7, 4});
    Tensor<double> u = rng.tensor(dt, {2, 4}), pb = rng.tensor(dt, {2, 4});
    std::string src = fill(R"mlir(
func.func @f(%q: $Q, %k: $K, %v: $V, %r: $R, %u: $U, %pb: $U) -> $O
    attributes {llvm.emit_c_interface} {
  %o = recur.rel_attention %q, %k, %v, %r, %u, %pb : $Q, $K, $V, $R, $U, $U
  return %o : $O
})mlir",
                           {{"Q", ty({1, 2, -1, 4}, "f64")},
                            {"K", ty({1, 2, -1, 4}, "f64")},
                            {"V", ty({1, 2, -1, 3}, "f64")},
                            {"O", ty({1, 2, -1, 3}, "f64")},
                            {"R", ty({2, -1, 4}, "f64")},
                            {"U", ty({2, 4}, "f64")}});
    std::vector<HostTensor> out = runLowered(
        src, {host(q), host(k), host(v), host(r), host(u), host(pb)});
    ASSERT_EQ(out.size(), 1u);
    expectClose("dynamic shapes", dt, real(out[0]),
                relAttention(q, k, v, r, u, pb));
  }
  for (auto [memLen, newLen] : {std::pair<int64_t, int64_t>{4, 3}, {1, 6}}) {
    SCOPED_TRACE("memory_update keep 5, dynamic M and L");
    Tensor<double> mem = rng.tensor(dt, {memLen, 2});
    Tensor<double> fresh = rng.tensor(dt, {newLen, 2});
    std::string src =
        fill(R"mlir(
func.func @f(%m: $M, %n: $M) -> $O attributes {llvm.emit_c_interface} {
  %r = recur.memory_update %m, %n along 0 keep 5 : $M, $M
  return %r : $O
})mlir",
             {{"M", ty({-1, 2}, "f64")}, {"O", ty({5, 2}, "f64")}});
    std::vector<HostTensor> out = runLowered(src, {host(mem), host(fresh)});
    ASSERT_EQ(out.size(), 1u);
    expectClose("dynamic shapes", dt, real(out[0]),
                memoryUpdate(mem, fresh, 0, 5));
  }
  {
    SCOPED_TRACE("block_recurrence, dynamic T");
    Tensor<double> x = rng.tensor(dt, {2, 9, 3}), a = rng.decays(dt, {2, 9, 3});
    Tensor<double> c0 = rng.tensor(dt, {2, 3});
    std::string src = fill(R"mlir(
func.func @f(%x: $X, %a: $X, %c0: $C) -> ($X, $C)
    attributes {llvm.emit_c_interface} {
  %y, %c = recur.block_recurrence (%x, %a : $X, $X) init(%c0 : $C)
      block 3 along 1 -> $X, $C {
  ^bb0(%xb: $XB, %ab: $XB, %cb: $C):
    %h, %last = recur.linear_scan %ab, %xb init(%cb : $C) along 1 : $XB, $XB
    recur.yield %h, %last : $XB, $C
  }
  return %y, %c : $X, $C
})mlir",
                           {{"X", ty({2, -1, 3}, "f64")},
                            {"XB", ty({2, 3, 3}, "f64")},
                            {"C", ty({2, 3}, "f64")}});
    std::vector<HostTensor> out = runLowered(src, {host(x), host(a), host(c0)});
    ASSERT_EQ(out.size(), 2u);
    BlockRecurrenceResult ref =
        blockRecurrence({x, a}, {c0}, 3, 1,
                        [](const std::vector<Tensor<double>> &blocks,
                           const std::vector<Tensor<double>> &carried) {
                          ScanResult<double> s =
                              linearScan(blocks[1], blocks[0], carried[0], 1);
                          return BlockStep{{s.h}, {s.last}};
                        });
    expectClose("dynamic shapes", dt, real(out[0]), ref.outputs[0]);
    expectClose("dynamic shapes", dt, real(out[1]), ref.finals[0]);
  }
  {
    SCOPED_TRACE("halting, dynamic tokens and width");
    Tensor<double> p = rng.tensor(dt, {5}, 0.0, 1.0),
                   h = rng.tensor(dt, {5, 3});
    Tensor<double> mass(std::vector<int64_t>{5},
                        std::vector<double>{0.0, 0.95, 0.5, 1.0, 0.9});
    Tensor<double> acc = rng.tensor(dt, {5, 3}), s = rng.tensor(dt, {5, 3});
    std::string src =
        fill(R"mlir(
func.func @f(%p: $P, %h: $H, %m: $P, %acc: $H, %s: $H) -> ($P, $H, $P, $H)
    attributes {llvm.emit_c_interface} {
  %a, %s1, %m1, %acc1 = recur.halting %p, %h, %m, %acc, %s
      {threshold = 0.9 : f64} : $P, $H
  return %a, %s1, %m1, %acc1 : $P, $H, $P, $H
})mlir",
             {{"P", ty({-1}, "f64")}, {"H", ty({-1, -1}, "f64")}});
    std::vector<HostTensor> out =
        runLowered(src, {host(p), host(h), host(mass), host(acc), host(s)});
    ASSERT_EQ(out.size(), 4u);
    HaltingResult ref = halting(p, h, mass, acc, s, 0.9);
    expectClose("dynamic shapes", dt, real(out[0]), ref.a);
    expectClose("dynamic shapes", dt, real(out[1]), ref.s);
    expectClose("dynamic shapes", dt, real(out[2]), ref.newMass);
    expectClose("dynamic shapes", dt, real(out[3]), ref.newAcc);
  }
  {
    SCOPED_TRACE("route_topk and moe, dynamic tokens and experts");
    Tensor<double> probs = rng.tensor(dt, {4, 5}, 0.0, 1.0);
    probs.data[1] = probs.data[3]; // a tie
    std::string src = fill(R"mlir(
func.func @f(%p: $P) -> ($G, $I) attributes {llvm.emit_c_interface} {
  %g, %i = recur.route_topk %p top 2 : $P
  return %g, %i : $G, $I
})mlir",
                           {{"P", ty({-1, -1}, "f64")},
                            {"G", ty({-1, 2}, "f64")},
                            {"I", ty({-1, 2}, "i32")}});
    std::vector<HostTensor> routed = runLowered(src, {host(probs)});
    ASSERT_EQ(routed.size(), 2u);
    RouteResult route = routeTopK(probs, 2);
    expectClose("dynamic shapes", dt, real(routed[0]), route.gates);
    EXPECT_EQ(ints(routed[1]).data, route.indices.data);

    Tensor<double> x = rng.tensor(dt, {4, 3});
    Tensor<double> wIn = rng.tensor(dt, {5, 3, 6}),
                   wOut = rng.tensor(dt, {5, 6, 3});
    Tensor<bool> active(std::vector<int64_t>{4}, true);
    active.data[2] = false;
    src = fill(R"mlir(
func.func @f(%x: $X, %i: $I, %g: $G, %w1: $W1, %w2: $W2, %act: $A) -> $X
    attributes {llvm.emit_c_interface} {
  %y = recur.moe %x, %i, %g, %w1, %w2 active(%act : $A)
      {activation = #recur.activation<silu>} : $X, $I, $G, $W1, $W2
  return %y : $X
})mlir",
               {{"X", ty({-1, -1}, "f64")},
                {"I", ty({-1, -1}, "i32")},
                {"G", ty({-1, -1}, "f64")},
                {"W1", ty({-1, -1, -1}, "f64")},
                {"W2", ty({-1, -1, -1}, "f64")},
                {"A", ty({-1}, "i1")}});
    std::vector<HostTensor> out =
        runLowered(src, {host(x), host(route.indices), host(route.gates),
                         host(wIn), host(wOut), host(active)});
    ASSERT_EQ(out.size(), 1u);
    expectClose("dynamic shapes", dt, real(out[0]),
                moe(x, route.indices, route.gates, wIn, wOut, active,
                    Activation::Silu));
  }
}

//===----------------------------------------------------------------------===//
// recur-split-reductions
//===----------------------------------------------------------------------===//

/// Linalg ops with reduction loops left in `source` after `pipeline`.
int64_t reductionsLeft(const std::string &source, const std::string &pipeline) {
  mlir::MLIRContext &context = jitContext();
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(source,
                                              mlir::ParserConfig(&context));
  mlir::PassManager pm(&context, mlir::ModuleOp::getOperationName());
  if (!module || mlir::failed(mlir::parsePassPipeline(pipeline, pm)) ||
      mlir::failed(pm.run(*module)))
    return -1;
  int64_t left = 0;
  module->walk([&](mlir::linalg::LinalgOp op) {
    left += op.getNumReductionLoops() > 0;
  });
  return left;
}

/// An exact sum (in long double) and the sum of its terms' magnitudes (the
/// scale of a float sum's rounding error).
struct ExactSum {
  std::complex<long double> sum = 0;
  long double scale = 0;

  void add(std::complex<long double> term) {
    sum += term;
    scale += std::abs(term);
  }
};

/// One reduction for TEST(ReferenceLowering, SplitReductions): its @f, its
/// arguments, and for each output element its init and terms summed
/// exactly (from the arguments as the kernel sees them).
struct SplitCase {
  std::string name, source;
  std::vector<HostTensor> args;
  std::vector<std::vector<ExactSum>> exact; // per output, per element
  std::vector<int64_t> terms;               // terms per output element
};

/// Checks `c` through bufferization, recur-split-reductions{threads=64
/// min-terms=3} and the reference pipeline: the op is split, and every
/// output element within the float-summation bound (terms + 4) u sum |.|,
/// u the unit roundoff of `dt`, of its exact value.
void checkSplit(const SplitCase &c, Dtype dt) {
  SCOPED_TRACE(c.name);
  const std::string pipeline =
      "one-shot-bufferize{bufferize-function-boundaries "
      "function-boundary-type-conversion=identity-layout-map},"
      "func.func(recur-split-reductions{threads=64 min-terms=3})";
  EXPECT_EQ(reductionsLeft(c.source, pipeline), 0)
      << "recur-split-reductions left the reduction whole";
  std::vector<HostTensor> out = runLowered(c.source, c.args, pipeline);
  ASSERT_EQ(out.size(), c.exact.size());
  const long double u = dt == Dtype::F64 ? 0x1p-53L : 0x1p-24L;
  for (size_t r = 0; r < out.size(); ++r) {
    ASSERT_EQ(out[r].values.size(), c.exact[r].size());
    for (size_t n = 0; n < out[r].values.size(); ++n) {
      std::complex<long double> got(out[r].values[n].real(),
                                    out[r].values[n].imag());
      long double err = std::abs(got - c.exact[r][n].sum);
      long double bound = (c.terms[r] + 4) * u * c.exact[r][n].scale;
      EXPECT_LE(err, bound)
          << "output " << r << " element " << n << ": got " << out[r].values[n]
          << ", exact " << static_cast<double>(c.exact[r][n].sum.real())
          << (dt == Dtype::F64 ? " (f64)" : " (f32)");
    }
  }
}

/// Values in [-1, 1) rounded to `dt`, complex ones when `complexValues`.
std::vector<Complex> randomValues(Rng &rng, Dtype dt, int64_t n,
                                  bool complexValues) {
  std::vector<Complex> v;
  for (int64_t i = 0; i < n; ++i)
    v.emplace_back(roundTo(dt, rng.uniform(-1.0, 1.0)),
                   complexValues ? roundTo(dt, rng.uniform(-1.0, 1.0)) : 0.0);
  return v;
}

std::complex<long double> wide(Complex x) { return {x.real(), x.imag()}; }

/// out[d] = b[d] + sum over (i, t) of x[i, t, d] dy[i, t, d]: a bias's
/// gradient over batch and time, the parts crossing batch rows.
SplitCase biasGradCase(Rng &rng, Dtype dt, int64_t batch, int64_t steps) {
  const int64_t d = 5;
  const std::string e = dt == Dtype::F64 ? "f64" : "f32";
  SplitCase c;
  c.name = "bias gradient, B " + std::to_string(batch) + ", T " +
           std::to_string(steps) + ", " + e;
  c.source = fill(R"mlir(
#x = affine_map<(d0, d1, d2) -> (d1, d2, d0)>
#y = affine_map<(d0, d1, d2) -> (d0)>
func.func @f(%x: $X, %dy: $X, %b: $B) -> $B attributes {llvm.emit_c_interface} {
  %r = linalg.generic {indexing_maps = [#x, #x, #y],
                       iterator_types = ["parallel", "reduction", "reduction"]}
      ins(%x, %dy : $X, $X) outs(%b : $B) {
  ^bb0(%a: $E, %g: $E, %o: $E):
    %m = arith.mulf %a, %g : $E
    %s = arith.addf %o, %m : $E
    linalg.yield %s : $E
  } -> $B
  return %r : $B
})mlir",
                  {{"X", ty({-1, -1, d}, e)}, {"B", ty({d}, e)}, {"E", e}});
  int64_t n = batch * steps * d;
  HostTensor x{{batch, steps, d}, randomValues(rng, dt, n, false)};
  HostTensor dy{{batch, steps, d}, randomValues(rng, dt, n, false)};
  HostTensor b{{d}, randomValues(rng, dt, d, false)};
  c.exact.assign(1, {});
  for (int64_t j = 0; j < d; ++j) {
    ExactSum sum;
    sum.add(wide(b.values[j]));
    for (int64_t i = 0; i < batch * steps; ++i)
      sum.add(wide(x.values[i * d + j]) * wide(dy.values[i * d + j]));
    c.exact[0].push_back(sum);
  }
  c.terms = {batch * steps};
  c.args = {x, dy, b};
  return c;
}

/// out[d] = sum over (h, i, t) of x[h, i, t, d]: three reduction loops,
/// the parts starting and ending inside the middle one.
SplitCase threeLoopCase(Rng &rng, Dtype dt, int64_t h, int64_t i, int64_t t) {
  const int64_t d = 3;
  const std::string e = dt == Dtype::F64 ? "f64" : "f32";
  SplitCase c;
  c.name = "three reduction loops, " + std::to_string(h) + " x " +
           std::to_string(i) + " x " + std::to_string(t) + ", " + e;
  c.source = fill(R"mlir(
#x = affine_map<(d0, d1, d2, d3) -> (d1, d2, d3, d0)>
#y = affine_map<(d0, d1, d2, d3) -> (d0)>
func.func @f(%x: $X, %b: $B) -> $B attributes {llvm.emit_c_interface} {
  %r = linalg.generic {indexing_maps = [#x, #y],
                       iterator_types = ["parallel", "reduction", "reduction",
                                         "reduction"]}
      ins(%x : $X) outs(%b : $B) {
  ^bb0(%a: $E, %o: $E):
    %s = arith.addf %o, %a : $E
    linalg.yield %s : $E
  } -> $B
  return %r : $B
})mlir",
                  {{"X", ty({-1, i, -1, d}, e)}, {"B", ty({d}, e)}, {"E", e}});
  int64_t rows = h * i * t;
  HostTensor x{{h, i, t, d}, randomValues(rng, dt, rows * d, false)};
  HostTensor b{{d}, randomValues(rng, dt, d, false)};
  c.exact.assign(1, {});
  for (int64_t j = 0; j < d; ++j) {
    ExactSum sum;
    sum.add(wide(b.values[j]));
    for (int64_t r = 0; r < rows; ++r)
      sum.add(wide(x.values[r * d + j]));
    c.exact[0].push_back(sum);
  }
  c.terms = {rows};
  c.args = {x, b};
  return c;
}

/// out[] = b[] + sum over (i, t) of x[i, t]^2: a sum onto one element (a
/// rank-0 output), whose many parts are summed in parts again.
SplitCase scalarSumCase(Rng &rng, Dtype dt, int64_t batch, int64_t steps) {
  const std::string e = dt == Dtype::F64 ? "f64" : "f32";
  SplitCase c;
  c.name = "sum onto one element, B " + std::to_string(batch) + ", T " +
           std::to_string(steps) + ", " + e;
  c.source = fill(R"mlir(
#x = affine_map<(d0, d1) -> (d0, d1)>
#y = affine_map<(d0, d1) -> ()>
func.func @f(%x: $X, %b: $B) -> $B attributes {llvm.emit_c_interface} {
  %r = linalg.generic {indexing_maps = [#x, #y],
                       iterator_types = ["reduction", "reduction"]}
      ins(%x : $X) outs(%b : $B) {
  ^bb0(%a: $E, %o: $E):
    %m = arith.mulf %a, %a : $E
    %s = arith.addf %m, %o : $E
    linalg.yield %s : $E
  } -> $B
  return %r : $B
})mlir",
                  {{"X", ty({-1, -1}, e)}, {"B", ty({}, e)}, {"E", e}});
  HostTensor x{{batch, steps}, randomValues(rng, dt, batch * steps, false)};
  HostTensor b{{}, randomValues(rng, dt, 1, false)};
  ExactSum sum;
  sum.add(wide(b.values[0]));
  for (const Complex &v : x.values)
    sum.add(wide(v) * wide(v));
  c.exact = {{sum}};
  c.terms = {batch * steps};
  c.args = {x, b};
  return c;
}

/// Two complex outputs over the middle loop of (i, j, k), the parallel
/// loops around it: s[i, k] = z[i, k] + sum_j x[i, j, k] and
/// q[i, k] = z[i, k] + sum_j x[i, j, k]^2.
SplitCase complexPairCase(Rng &rng, Dtype dt, int64_t length) {
  const int64_t rows = 3, cols = 4;
  const std::string e = dt == Dtype::F64 ? "complex<f64>" : "complex<f32>";
  SplitCase c;
  c.name = "two complex outputs, J " + std::to_string(length) + ", " + e;
  c.source = fill(
      R"mlir(
#x = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#y = affine_map<(d0, d1, d2) -> (d0, d2)>
func.func @f(%x: $X, %z: $Z) -> ($Z, $Z) attributes {llvm.emit_c_interface} {
  %s, %q = linalg.generic {indexing_maps = [#x, #y, #y],
                           iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%x : $X) outs(%z, %z : $Z, $Z) {
  ^bb0(%a: $E, %o: $E, %p: $E):
    %sq = complex.mul %a, %a : $E
    %s1 = complex.add %o, %a : $E
    %q1 = complex.add %sq, %p : $E
    linalg.yield %s1, %q1 : $E, $E
  } -> ($Z, $Z)
  return %s, %q : $Z, $Z
})mlir",
      {{"X", ty({rows, -1, cols}, e)}, {"Z", ty({rows, cols}, e)}, {"E", e}});
  HostTensor x{{rows, length, cols},
               randomValues(rng, dt, rows * length * cols, true)};
  HostTensor z{{rows, cols}, randomValues(rng, dt, rows * cols, true)};
  c.exact.assign(2, {});
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t k = 0; k < cols; ++k) {
      ExactSum s, q;
      s.add(wide(z.values[i * cols + k]));
      q.add(wide(z.values[i * cols + k]));
      for (int64_t j = 0; j < length; ++j) {
        std::complex<long double> a =
            wide(x.values[(i * length + j) * cols + k]);
        s.add(a);
        q.add(a * a);
      }
      c.exact[0].push_back(s);
      c.exact[1].push_back(q);
    }
  c.terms = {length, length};
  c.args = {x, z};
  return c;
}

/// out[d] = sum_t x[t, d] (t + 1): the body reads the reduction loop's
/// index (linalg.index), the init a fill of zero.
SplitCase indexedCase(Rng &rng, Dtype dt, int64_t steps) {
  const int64_t d = 6;
  const std::string e = dt == Dtype::F64 ? "f64" : "f32";
  SplitCase c;
  c.name = "linalg.index, T " + std::to_string(steps) + ", " + e;
  c.source = fill(R"mlir(
#x = affine_map<(d0, d1) -> (d1, d0)>
#y = affine_map<(d0, d1) -> (d0)>
func.func @f(%x: $X) -> $B attributes {llvm.emit_c_interface} {
  %zero = arith.constant 0.0 : $E
  %empty = tensor.empty() : $B
  %init = linalg.fill ins(%zero : $E) outs(%empty : $B) -> $B
  %r = linalg.generic {indexing_maps = [#x, #y],
                       iterator_types = ["parallel", "reduction"]}
      ins(%x : $X) outs(%init : $B) {
  ^bb0(%a: $E, %o: $E):
    %t = linalg.index 1 : index
    %t1 = arith.addi %t, %c1 : index
    %ti = arith.index_cast %t1 : index to i64
    %tf = arith.sitofp %ti : i64 to $E
    %m = arith.mulf %a, %tf : $E
    %s = arith.addf %o, %m : $E
    linalg.yield %s : $E
  } -> $B
  return %r : $B
})mlir",
                  {{"X", ty({-1, d}, e)}, {"B", ty({d}, e)}, {"E", e}});
  c.source.replace(c.source.find("  %zero"), 0,
                   "  %c1 = arith.constant 1 : index\n");
  HostTensor x{{steps, d}, randomValues(rng, dt, steps * d, false)};
  c.exact.assign(1, {});
  for (int64_t j = 0; j < d; ++j) {
    ExactSum sum;
    for (int64_t t = 0; t < steps; ++t)
      sum.add(wide(x.values[t * d + j]) * static_cast<long double>(t + 1));
    c.exact[0].push_back(sum);
  }
  c.terms = {steps};
  c.args = {x};
  return c;
}

/// A named op: linalg.matmul c + a b, with a 4 x K and b K x 3.
SplitCase matmulCase(Rng &rng, Dtype dt, int64_t inner) {
  const int64_t m = 4, n = 3;
  const std::string e = dt == Dtype::F64 ? "f64" : "f32";
  SplitCase c;
  c.name = "linalg.matmul, K " + std::to_string(inner) + ", " + e;
  c.source = fill(
      R"mlir(
func.func @f(%a: $A, %b: $B, %c: $C) -> $C attributes {llvm.emit_c_interface} {
  %r = linalg.matmul ins(%a, %b : $A, $B) outs(%c : $C) -> $C
  return %r : $C
})mlir",
      {{"A", ty({m, -1}, e)}, {"B", ty({-1, n}, e)}, {"C", ty({m, n}, e)}});
  HostTensor a{{m, inner}, randomValues(rng, dt, m * inner, false)};
  HostTensor b{{inner, n}, randomValues(rng, dt, inner * n, false)};
  HostTensor cc{{m, n}, randomValues(rng, dt, m * n, false)};
  c.exact.assign(1, {});
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      ExactSum sum;
      sum.add(wide(cc.values[i * n + j]));
      for (int64_t k = 0; k < inner; ++k)
        sum.add(wide(a.values[i * inner + k]) * wide(b.values[k * n + j]));
      c.exact[0].push_back(sum);
    }
  c.terms = {inner};
  c.args = {a, b, cc};
  return c;
}

/// recur-split-reductions (the CUDA pipeline's reductions onto few output
/// elements, in parts), run on the CPU against long-double sums: parts of
/// at least 3 terms, at most ceil(64 / outputs) of them, so that lengths
/// of 1, 2, primes and 1031 give one part, uneven last parts, and parts
/// starting inside a batch row; real and complex; two outputs; a body
/// reading its loop index; three reduction loops; a named op. Where an
/// element's parts may number more than 4 x 3 (the bias gradient's 5
/// elements: up to 13 parts; the sum onto one element: up to 64), the
/// parts are summed by a reduction split in turn.
TEST(ReferenceLowering, SplitReductions) {
  Rng rng(47);
  for (Dtype dt : {Dtype::F32, Dtype::F64}) {
    for (auto [batch, steps] : std::vector<std::pair<int64_t, int64_t>>{
             {1, 1}, {1, 2}, {3, 7}, {2, 13}, {1, 1031}, {5, 64}})
      checkSplit(biasGradCase(rng, dt, batch, steps), dt);
    for (auto [h, i, t] : std::vector<std::tuple<int64_t, int64_t, int64_t>>{
             {2, 3, 5}, {1, 1, 7}, {3, 1, 4}, {2, 5, 1}, {3, 7, 11}})
      checkSplit(threeLoopCase(rng, dt, h, i, t), dt);
    for (auto [batch, steps] : std::vector<std::pair<int64_t, int64_t>>{
             {1, 1}, {1, 37}, {3, 101}, {2, 1031}})
      checkSplit(scalarSumCase(rng, dt, batch, steps), dt);
    for (int64_t length : {1, 2, 13, 1031})
      checkSplit(complexPairCase(rng, dt, length), dt);
    for (int64_t steps : {1, 5, 257})
      checkSplit(indexedCase(rng, dt, steps), dt);
    for (int64_t inner : {1, 7, 1031})
      checkSplit(matmulCase(rng, dt, inner), dt);
  }
}

} // namespace
