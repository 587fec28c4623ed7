//===- ReferenceTest.cpp - tests of the float64 oracle --------------------===//
//
// Part of the Recur project.
//
// Checks the float64 oracle (lib/Reference) on hand-computed cases and on the
// properties the papers' notes ask for ("What tests must show"): independent
// algorithms agree, special cases reduce to their closed forms, masks hide
// what they must. Tolerances are relative (1e-12 in float64): a tensor is
// compared elementwise against tol * (the largest |expected| element).
//
//===----------------------------------------------------------------------===//

#include "recur/Reference/Reference.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

using namespace recur::reference;

namespace {

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

constexpr double kTol = 1e-12;
const double kPi = std::acos(-1.0);

Tensor<double> vec(std::vector<double> values) {
  int64_t n = static_cast<int64_t>(values.size());
  return Tensor<double>({n}, std::move(values));
}

Tensor<double> scalar(double x) {
  return Tensor<double>(std::vector<int64_t>{}, std::vector<double>{x});
}

/// |actual - expected| <= tol * |expected|.
testing::AssertionResult closeTo(double actual, double expected,
                                 double tol = kTol) {
  if (std::abs(actual - expected) <= tol * std::abs(expected))
    return testing::AssertionSuccess();
  return testing::AssertionFailure() << actual << " differs from " << expected
                                     << " by more than " << tol << " relative";
}

/// Same shape, and every |actual - expected| <= tol * max |expected|.
template <typename T>
testing::AssertionResult allClose(const Tensor<T> &actual,
                                  const Tensor<T> &expected,
                                  double tol = kTol) {
  if (actual.shape != expected.shape)
    return testing::AssertionFailure() << "shape " << shapeString(actual.shape)
                                       << " vs " << shapeString(expected.shape);
  double scale = 0.0;
  for (const T &e : expected.data)
    scale = std::max(scale, std::abs(e));
  for (size_t n = 0; n < actual.data.size(); ++n)
    if (!(std::abs(actual.data[n] - expected.data[n]) <= tol * scale))
      return testing::AssertionFailure()
             << "element " << n << ": " << actual.data[n] << " vs "
             << expected.data[n] << " (allowed " << tol * scale << ")";
  return testing::AssertionSuccess();
}

/// The normwise relative distance max|x - y| / max|y|.
template <typename T>
double relDistance(const Tensor<T> &x, const Tensor<T> &y) {
  double diff = 0.0, scale = 0.0;
  for (size_t n = 0; n < x.data.size(); ++n) {
    diff = std::max(diff, std::abs(x.data[n] - y.data[n]));
    scale = std::max(scale, std::abs(y.data[n]));
  }
  return diff / scale;
}

template <typename T> bool allFinite(const Tensor<T> &t) {
  for (const T &x : t.data)
    if (!std::isfinite(std::abs(x)))
      return false;
  return true;
}

class Rng {
public:
  explicit Rng(uint64_t seed) : gen(seed) {}

  double uniform(double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(gen);
  }
  Tensor<double> tensor(std::vector<int64_t> shape, double lo = -1.0,
                        double hi = 1.0) {
    Tensor<double> t(std::move(shape));
    for (double &x : t.data)
      x = uniform(lo, hi);
    return t;
  }
  Tensor<Complex> complexTensor(std::vector<int64_t> shape) {
    Tensor<Complex> t(std::move(shape));
    for (Complex &x : t.data)
      x = Complex(uniform(-1.0, 1.0), uniform(-1.0, 1.0));
    return t;
  }
  /// GateLoop decays a = sigmoid(gamma) exp(i theta) (Eq. 24-25).
  Tensor<Complex> decays(std::vector<int64_t> shape) {
    Tensor<Complex> t(std::move(shape));
    for (Complex &x : t.data)
      x = std::polar(sigmoid(uniform(0.5, 3.0)), uniform(-kPi, kPi));
    return t;
  }

private:
  std::mt19937_64 gen;
};

std::vector<int64_t> withTail(std::vector<int64_t> lead,
                              std::vector<int64_t> tail) {
  lead.insert(lead.end(), tail.begin(), tail.end());
  return lead;
}

//===----------------------------------------------------------------------===//
// Tensor
//===----------------------------------------------------------------------===//

TEST(ReferenceTensor, IndexSliceConcat) {
  Tensor<double> t({2, 3}, std::vector<double>{0, 1, 2, 3, 4, 5});
  EXPECT_EQ(t(1, 2), 5.0);
  EXPECT_EQ(t.offset({1, 0}), 3);
  EXPECT_EQ(t.dim(-1), 3);
  Tensor<double> s = slice(t, 1, 1, 2); // [[1, 2], [4, 5]]
  EXPECT_EQ(s.shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(s.data, (std::vector<double>{1, 2, 4, 5}));
  Tensor<double> c = concat<double>({s, slice(t, 1, 0, 1)}, 1);
  EXPECT_EQ(c.data, (std::vector<double>{1, 2, 0, 4, 5, 3}));
  EXPECT_THROW(t(2, 0), std::invalid_argument);
  EXPECT_THROW(Tensor<double>({2, 2}, std::vector<double>{1, 2, 3}),
               std::invalid_argument);
  EXPECT_THROW(slice(t, 1, 2, 2), std::invalid_argument);
}

//===----------------------------------------------------------------------===//
// Scans: hand-computed cases
//===----------------------------------------------------------------------===//

TEST(ReferenceLinearScan, HandComputedForwardAndReverse) {
  Tensor<double> a = vec({0.5, 2.0, -1.0}), b = vec({1.0, 1.0, 1.0});
  // h0 = 0.5 * 2 + 1 = 2, h1 = 2 * 2 + 1 = 5, h2 = -1 * 5 + 1 = -4.
  ScanResult<double> f = linearScan(a, b, scalar(2.0), 0);
  EXPECT_EQ(f.h.data, (std::vector<double>{2.0, 5.0, -4.0}));
  EXPECT_EQ(f.last.data, std::vector<double>{-4.0});
  // Reverse from zero: h2 = 1, h1 = 2 * 1 + 1 = 3, h0 = 0.5 * 3 + 1 = 2.5.
  ScanResult<double> r = linearScan(a, b, std::nullopt, 0, /*reverse=*/true);
  EXPECT_EQ(r.h.data, (std::vector<double>{2.5, 3.0, 1.0}));
  EXPECT_EQ(r.last.data, std::vector<double>{2.5});
}

TEST(ReferenceLinearScan, HandComputedBroadcastAndInnerAxis) {
  // a [2] broadcast over b [2, 2] along axis 0: a = [2, 3],
  // b = [[1, 2], [3, 4]]: h0 = [1, 2], h1 = [3*1 + 3, 3*2 + 4] = [6, 10].
  ScanResult<double> r = linearScan(
      vec({2.0, 3.0}), Tensor<double>({2, 2}, std::vector<double>{1, 2, 3, 4}),
      std::nullopt, 0);
  EXPECT_EQ(r.h.data, (std::vector<double>{1, 2, 6, 10}));
  EXPECT_EQ(r.last.data, (std::vector<double>{6, 10}));
  // Along axis 1 with init [10, 20], a = [[1, 2], [3, 4]], b = 1:
  // row 0: 1*10 + 1 = 11, 2*11 + 1 = 23; row 1: 3*20 + 1 = 61, 4*61 + 1 = 245.
  ScanResult<double> s =
      linearScan(Tensor<double>({2, 2}, std::vector<double>{1, 2, 3, 4}),
                 Tensor<double>({2, 2}, 1.0), vec({10.0, 20.0}), 1);
  EXPECT_EQ(s.h.data, (std::vector<double>{11, 23, 61, 245}));
  EXPECT_EQ(s.last.data, (std::vector<double>{23, 245}));
}

TEST(ReferenceLinearScan, HandComputedComplexAndRealDecayOfComplexState) {
  const Complex i(0.0, 1.0);
  // a = [i, i], b = [1, 1]: h0 = 1, h1 = i * 1 + 1.
  ScanResult<Complex> c = linearScan(
      Tensor<Complex>({2}, std::vector<Complex>{i, i}),
      Tensor<Complex>({2}, std::vector<Complex>{1.0, 1.0}), std::nullopt, 0);
  EXPECT_EQ(c.h.data, (std::vector<Complex>{1.0, 1.0 + i}));
  // Real a = [0.5, 0.5], b = [i, 1]: h0 = i, h1 = 0.5 i + 1.
  ScanResult<Complex> m = linearScan(
      vec({0.5, 0.5}), Tensor<Complex>({2}, std::vector<Complex>{i, 1.0}),
      std::nullopt, 0);
  EXPECT_EQ(m.h.data, (std::vector<Complex>{i, 1.0 + 0.5 * i}));
  EXPECT_EQ(m.last.data, std::vector<Complex>{1.0 + 0.5 * i});
}

TEST(ReferenceLinearScan, RejectsBadShapes) {
  Tensor<double> b({2, 3});
  EXPECT_THROW(linearScan(Tensor<double>({3}), b, std::nullopt, 0),
               std::invalid_argument); // not a prefix
  EXPECT_THROW(linearScan(Tensor<double>({2}), b, std::nullopt, 1),
               std::invalid_argument); // does not cover the axis
  EXPECT_THROW(linearScan(b, b, vec({1, 2}), 0),
               std::invalid_argument); // init of the wrong shape
  EXPECT_THROW(linearScan(b, b, std::nullopt, 2), std::invalid_argument);
}

/// GateLoop's operator (Eq. 13): (p1, p2) . (q1, q2) = (p1 q1, q1 p2 + q2).
std::vector<Complex> gateLoopOp(const std::vector<Complex> &p,
                                const std::vector<Complex> &q) {
  return {p[0] * q[0], q[0] * p[1] + q[1]};
}

/// The operator with its operands swapped (the appendix's typo direction).
std::vector<Complex> swappedOp(const std::vector<Complex> &p,
                               const std::vector<Complex> &q) {
  return gateLoopOp(q, p);
}

TEST(ReferenceScan, HandComputedSumsAndGateLoopOperator) {
  CombineFn<double> add = [](const std::vector<double> &x,
                             const std::vector<double> &y) {
    return std::vector<double>{x[0] + y[0]};
  };
  Tensor<double> x = vec({1, 2, 3});
  // [1, 1+2, 1+2+3]; with init 10: [11, 13, 16]; reversed: [6, 5, 3].
  EXPECT_EQ(scan<double>({x}, {}, 0, false, add)[0].data,
            (std::vector<double>{1, 3, 6}));
  EXPECT_EQ(scan<double>({x}, {scalar(10)}, 0, false, add)[0].data,
            (std::vector<double>{11, 13, 16}));
  EXPECT_EQ(scan<double>({x}, {}, 0, true, add)[0].data,
            (std::vector<double>{6, 5, 3}));

  // Leaves (a, b) = (2, 1), (3, 1). Forward: c0 = (2, 1),
  // c1 = (2*3, 3*1 + 1) = (6, 4). Reverse: c1 = (3, 1),
  // c0 = c1 . x0 = (3*2, 2*1 + 1) = (6, 3).
  CombineFn<Complex> op = gateLoopOp;
  Tensor<Complex> a({2}, std::vector<Complex>{2.0, 3.0});
  Tensor<Complex> b({2}, std::vector<Complex>{1.0, 1.0});
  std::vector<Tensor<Complex>> f = scan<Complex>({a, b}, {}, 0, false, op);
  EXPECT_EQ(f[0].data, (std::vector<Complex>{2.0, 6.0}));
  EXPECT_EQ(f[1].data, (std::vector<Complex>{1.0, 4.0}));
  std::vector<Tensor<Complex>> r = scan<Complex>({a, b}, {}, 0, true, op);
  EXPECT_EQ(r[0].data, (std::vector<Complex>{6.0, 3.0}));
  EXPECT_EQ(r[1].data, (std::vector<Complex>{3.0, 1.0}));
}

//===----------------------------------------------------------------------===//
// GateLoop / gated linear attention
//===----------------------------------------------------------------------===//

TEST(ReferenceGla, HandComputedScalarState) {
  // dk = dv = 1, q = [1, 2], k = [1, 1], v = [3, 4].
  Tensor<double> q({2, 1}, std::vector<double>{1, 2});
  Tensor<double> k({2, 1}, std::vector<double>{1, 1});
  Tensor<double> v({2, 1}, std::vector<double>{3, 4});
  // Real a = 0.5: S0 = 3, y0 = 3; S1 = 0.5*3 + 4 = 5.5, y1 = 2*5.5 = 11.
  Tensor<double> a({2, 1}, 0.5);
  GlaResult<double> r = gatedLinearAttention(q, k, v, a, std::nullopt);
  EXPECT_EQ(r.y.data, (std::vector<double>{3, 11}));
  EXPECT_EQ(r.state.data, std::vector<double>{5.5});
  EXPECT_TRUE(allClose(
      gatedLinearAttentionChunked(q, k, v, a, std::nullopt, 1).y, r.y));
  EXPECT_TRUE(
      allClose(gatedLinearAttentionSurrogate(q, k, v, a, std::nullopt).y, r.y));
  // Complex a = i: S0 = 3, y0 = 3; S1 = 3i + 4, y1 = Re(2 (4 + 3i)) = 8.
  Tensor<Complex> ac({2, 1}, Complex(0.0, 1.0));
  GlaResult<Complex> c = gatedLinearAttention(q, k, v, ac, std::nullopt);
  EXPECT_EQ(c.y.data, (std::vector<double>{3, 8}));
  EXPECT_EQ(c.state.data, std::vector<Complex>{Complex(4.0, 3.0)});
}

TEST(ReferenceGla, HandComputedMatrixStateWithInit) {
  // T = 1, dk = 2, dv = 1: q = [1, 1], k = [1, 2], v = [3], a = [0.5, 0.5],
  // S_init = [[1], [2]]: S = [0.5*1 + 1*3, 0.5*2 + 2*3] = [3.5, 7],
  // y = 3.5 + 7 = 10.5. The decay acts per key row, not as a Hadamard
  // product with a diagonal matrix.
  Tensor<double> q({1, 2}, std::vector<double>{1, 1});
  Tensor<double> k({1, 2}, std::vector<double>{1, 2});
  Tensor<double> v({1, 1}, std::vector<double>{3});
  Tensor<double> a({1, 2}, 0.5);
  Tensor<double> init({2, 1}, std::vector<double>{1, 2});
  GlaResult<double> r = gatedLinearAttention(q, k, v, a, init);
  EXPECT_EQ(r.y.data, std::vector<double>{10.5});
  EXPECT_EQ(r.state.data, (std::vector<double>{3.5, 7.0}));
}

struct GlaCase {
  Tensor<double> q, k, v;
  Tensor<Complex> a, init;
};

GlaCase makeGla(Rng &rng, const std::vector<int64_t> &lead, int64_t t,
                int64_t dk, int64_t dv) {
  return {
      rng.tensor(withTail(lead, {t, dk})), rng.tensor(withTail(lead, {t, dk})),
      rng.tensor(withTail(lead, {t, dv})), rng.decays(withTail(lead, {t, dk})),
      rng.complexTensor(withTail(lead, {dk, dv}))};
}

/// A third evaluation of the matrix recurrence: recur.scan with GateLoop's
/// operator on the leaves (a_t[i], k_t[i] v_t[j]) of shape [..., T, dk, dv];
/// a carried state enters as the leaf (1, h0).
GlaResult<Complex> glaByScan(const GlaCase &c, bool withInit) {
  std::vector<int64_t> lead(c.q.shape.begin(), c.q.shape.end() - 2);
  int64_t t = c.q.dim(-2), dk = c.q.dim(-1), dv = c.v.dim(-1);
  int64_t n = numElements(lead);
  Tensor<Complex> leafA(withTail(lead, {t, dk, dv}));
  Tensor<Complex> leafB(withTail(lead, {t, dk, dv}));
  for (int64_t b = 0; b < n; ++b)
    for (int64_t s = 0; s < t; ++s)
      for (int64_t i = 0; i < dk; ++i)
        for (int64_t j = 0; j < dv; ++j) {
          int64_t e = ((b * t + s) * dk + i) * dv + j;
          leafA.data[e] = c.a.data[(b * t + s) * dk + i];
          leafB.data[e] =
              c.k.data[(b * t + s) * dk + i] * c.v.data[(b * t + s) * dv + j];
        }
  std::vector<Tensor<Complex>> inits;
  if (withInit)
    inits = {Tensor<Complex>(c.init.shape, Complex(1.0, 0.0)), c.init};
  std::vector<Tensor<Complex>> h =
      scan<Complex>({leafA, leafB}, inits, static_cast<int64_t>(lead.size()),
                    false, gateLoopOp);
  GlaResult<Complex> r{Tensor<double>(c.v.shape),
                       Tensor<Complex>(c.init.shape)};
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t s = 0; s < t; ++s)
      for (int64_t j = 0; j < dv; ++j) {
        double y = 0.0;
        for (int64_t i = 0; i < dk; ++i)
          y += (c.q.data[(b * t + s) * dk + i] *
                h[1].data[((b * t + s) * dk + i) * dv + j])
                   .real();
        r.y.data[(b * t + s) * dv + j] = y;
      }
    for (int64_t e = 0; e < dk * dv; ++e)
      r.state.data[b * dk * dv + e] = h[1].data[(b * t + t - 1) * dk * dv + e];
  }
  return r;
}

TEST(ReferenceGla, RecurrentEqualsScanChunkedAndSurrogateAttention) {
  Rng rng(1);
  struct Shape {
    std::vector<int64_t> lead;
    int64_t dk, dv;
  };
  // d_k = 1 (max-headed), d_k > 1 with d_v != d_k, and no leading dims.
  std::vector<Shape> shapes = {{{2, 3}, 1, 1}, {{2}, 4, 3}, {{}, 3, 5}};
  // Lengths 1, 2, primes and non-powers of two, up to 64.
  for (int64_t t : {1, 2, 3, 7, 13, 24, 31, 48, 64})
    for (const Shape &sh : shapes)
      for (bool withInit : {false, true}) {
        SCOPED_TRACE(
            "T = " + std::to_string(t) + ", dk = " + std::to_string(sh.dk) +
            ", dv = " + std::to_string(sh.dv) + (withInit ? ", init" : ""));
        GlaCase c = makeGla(rng, sh.lead, t, sh.dk, sh.dv);
        std::optional<Tensor<Complex>> init;
        if (withInit)
          init = c.init;
        GlaResult<Complex> rec = gatedLinearAttention(c.q, c.k, c.v, c.a, init);
        GlaResult<Complex> viaScan = glaByScan(c, withInit);
        EXPECT_TRUE(allClose(viaScan.y, rec.y));
        EXPECT_TRUE(allClose(viaScan.state, rec.state));
        // Chunk sizes: 1, dividing or not, equal to T and beyond T.
        for (int64_t chunk : {int64_t(1), int64_t(3), int64_t(5), t, t + 7}) {
          SCOPED_TRACE("chunk = " + std::to_string(chunk));
          GlaResult<Complex> ch =
              gatedLinearAttentionChunked(c.q, c.k, c.v, c.a, init, chunk);
          EXPECT_TRUE(allClose(ch.y, rec.y));
          EXPECT_TRUE(allClose(ch.state, rec.state));
        }
        GlaResult<Complex> sur =
            gatedLinearAttentionSurrogate(c.q, c.k, c.v, c.a, init);
        EXPECT_TRUE(allClose(sur.y, rec.y));
        EXPECT_TRUE(allClose(sur.state, rec.state));
      }
}

TEST(ReferenceGla, LinearScanOfOuterProductStateEqualsGla) {
  // linear_scan with a [..., T, dk] broadcast over b = k (x) v
  // [..., T, dk, dv] runs GateLoop's matrix state; q reads it out.
  Rng rng(30);
  const int64_t t = 9, dk = 3, dv = 2;
  GlaCase c = makeGla(rng, {2}, t, dk, dv);
  Tensor<Complex> kv({2, t, dk, dv});
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t s = 0; s < t; ++s)
      for (int64_t i = 0; i < dk; ++i)
        for (int64_t j = 0; j < dv; ++j)
          kv(b, s, i, j) = c.k(b, s, i) * c.v(b, s, j);
  auto readOut = [&](const Tensor<Complex> &h) {
    Tensor<double> y({2, t, dv});
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t s = 0; s < t; ++s)
        for (int64_t j = 0; j < dv; ++j)
          for (int64_t i = 0; i < dk; ++i)
            y(b, s, j) += (c.q(b, s, i) * h(b, s, i, j)).real();
    return y;
  };
  ScanResult<Complex> h = linearScan(c.a, kv, c.init, 1);
  GlaResult<Complex> gla = gatedLinearAttention(c.q, c.k, c.v, c.a, c.init);
  EXPECT_TRUE(allClose(readOut(h.h), gla.y));
  EXPECT_TRUE(allClose(h.last, gla.state));
  // A real decay of the complex state.
  Tensor<double> ar = rng.tensor({2, t, dk}, 0.5, 1.0);
  ScanResult<Complex> hr = linearScan(ar, kv, c.init, 1);
  GlaResult<Complex> glar =
      gatedLinearAttention(c.q, c.k, c.v, toComplex(ar), c.init);
  EXPECT_TRUE(allClose(readOut(hr.h), glar.y));
  EXPECT_TRUE(allClose(hr.last, glar.state));
}

TEST(ReferenceGla, RealDecaysIncludingNegativeAgreeAcrossAlgorithms) {
  Rng rng(2);
  for (int64_t t : {1, 5, 17, 40}) {
    Tensor<double> q = rng.tensor({2, t, 3}), k = rng.tensor({2, t, 3});
    Tensor<double> v = rng.tensor({2, t, 2});
    Tensor<double> a = rng.tensor({2, t, 3}, 0.6, 0.99);
    for (size_t e = 0; e < a.data.size(); e += 4)
      a.data[e] = -a.data[e]; // some sign flips
    Tensor<double> init = rng.tensor({2, 3, 2});
    GlaResult<double> rec = gatedLinearAttention(q, k, v, a, init);
    for (int64_t chunk : {int64_t(1), int64_t(4), int64_t(7), t + 1}) {
      GlaResult<double> ch =
          gatedLinearAttentionChunked(q, k, v, a, init, chunk);
      EXPECT_TRUE(allClose(ch.y, rec.y));
      EXPECT_TRUE(allClose(ch.state, rec.state));
    }
    GlaResult<double> sur = gatedLinearAttentionSurrogate(q, k, v, a, init);
    EXPECT_TRUE(allClose(sur.y, rec.y));
    EXPECT_TRUE(allClose(sur.state, rec.state));
  }
}

TEST(ReferenceGla, LongSequenceChunkedMatchesRecurrent) {
  // 8k steps with sigmoid magnitudes: the log-space chunked path stays finite
  // and matches the loop.
  Rng rng(3);
  GlaCase c = makeGla(rng, {2}, 8192, 1, 1);
  GlaResult<Complex> rec = gatedLinearAttention(c.q, c.k, c.v, c.a, c.init);
  ASSERT_TRUE(allFinite(rec.y));
  for (int64_t chunk : {64, 100}) {
    GlaResult<Complex> ch =
        gatedLinearAttentionChunked(c.q, c.k, c.v, c.a, c.init, chunk);
    EXPECT_TRUE(allClose(ch.y, rec.y));
    EXPECT_TRUE(allClose(ch.state, rec.state));
  }
}

TEST(ReferenceGla, OperatorIsAssociativeWithIdentityButNotCommutative) {
  Rng rng(4);
  auto leaf = [&] {
    return std::vector<Complex>{
        std::polar(rng.uniform(0.5, 1.0), rng.uniform(-kPi, kPi)),
        Complex(rng.uniform(-1, 1), rng.uniform(-1, 1))};
  };
  for (int trial = 0; trial < 100; ++trial) {
    std::vector<Complex> x = leaf(), y = leaf(), z = leaf();
    std::vector<Complex> left = gateLoopOp(gateLoopOp(x, y), z);
    std::vector<Complex> right = gateLoopOp(x, gateLoopOp(y, z));
    for (int m = 0; m < 2; ++m)
      EXPECT_LE(std::abs(left[m] - right[m]), kTol * std::abs(right[m]));
    // The identity (1, 0) on either side, exactly.
    std::vector<Complex> e{1.0, 0.0};
    EXPECT_EQ(gateLoopOp(e, x), x);
    EXPECT_EQ(gateLoopOp(x, e), x);
  }

  // The scan with the operator reproduces the linear scan; the swapped
  // operator does not on time-varying a.
  Tensor<Complex> a = rng.decays({3, 16}), b = rng.complexTensor({3, 16});
  ScanResult<Complex> lin = linearScan(a, b, std::nullopt, 1);
  EXPECT_TRUE(
      allClose(scan<Complex>({a, b}, {}, 1, false, gateLoopOp)[1], lin.h));
  Tensor<Complex> swapped = scan<Complex>({a, b}, {}, 1, false, swappedOp)[1];
  EXPECT_GT(relDistance(swapped, lin.h), 1e-3);
}

TEST(ReferenceGla, PrefixPlusCarriedStatePlusSuffixEqualsOnePass) {
  Rng rng(5);
  const int64_t t = 23;
  GlaCase c = makeGla(rng, {2}, t, 3, 2);
  GlaResult<Complex> full = gatedLinearAttention(c.q, c.k, c.v, c.a, c.init);
  Tensor<Complex> lsInit = rng.complexTensor({2, 3});
  for (int64_t split : {1, 5, 11, 22}) {
    SCOPED_TRACE("split = " + std::to_string(split));
    auto part = [&](const auto &x, int64_t start, int64_t len) {
      return slice(x, 1, start, len);
    };
    GlaResult<Complex> first =
        gatedLinearAttention(part(c.q, 0, split), part(c.k, 0, split),
                             part(c.v, 0, split), part(c.a, 0, split), c.init);
    int64_t rest = t - split;
    GlaResult<Complex> second = gatedLinearAttentionChunked(
        part(c.q, split, rest), part(c.k, split, rest), part(c.v, split, rest),
        part(c.a, split, rest), first.state, 4);
    EXPECT_TRUE(allClose(concat<double>({first.y, second.y}, 1), full.y));
    EXPECT_TRUE(allClose(second.state, full.state));

    // The same for the vector linear scan, carrying `last`.
    ScanResult<Complex> whole = linearScan(c.a, c.a, lsInit, 1);
    ScanResult<Complex> p =
        linearScan(part(c.a, 0, split), part(c.a, 0, split), lsInit, 1);
    ScanResult<Complex> s =
        linearScan(part(c.a, split, rest), part(c.a, split, rest), p.last, 1);
    EXPECT_TRUE(allClose(concat<Complex>({p.h, s.h}, 1), whole.h));
    EXPECT_TRUE(allClose(s.last, whole.last));
  }
}

TEST(ReferenceGla, ReducesToRetNetRetention) {
  // Constant a = gamma e^{i theta} per head, gamma = 1 - 2^(-5-c):
  // y_n = sum_{m<=n} Re(gamma^{n-m} e^{i theta (n-m)}) (q_n . k_m) v_m.
  Rng rng(6);
  const int64_t heads = 4, t = 20, dk = 3, dv = 2;
  Tensor<double> q = rng.tensor({heads, t, dk}), k = rng.tensor({heads, t, dk});
  Tensor<double> v = rng.tensor({heads, t, dv});
  Tensor<Complex> a({heads, t, dk});
  std::vector<double> gamma(heads), theta(heads);
  for (int64_t h = 0; h < heads; ++h) {
    gamma[h] = 1.0 - std::pow(2.0, -5.0 - static_cast<double>(h));
    theta[h] = rng.uniform(-kPi, kPi);
    for (int64_t s = 0; s < t * dk; ++s)
      a.data[h * t * dk + s] = std::polar(gamma[h], theta[h]);
  }
  Tensor<double> expected({heads, t, dv});
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t n = 0; n < t; ++n)
      for (int64_t m = 0; m <= n; ++m) {
        double decay = std::pow(gamma[h], double(n - m)) *
                       std::cos(theta[h] * double(n - m));
        double qk = 0.0;
        for (int64_t i = 0; i < dk; ++i)
          qk += q(h, n, i) * k(h, m, i);
        for (int64_t j = 0; j < dv; ++j)
          expected(h, n, j) += decay * qk * v(h, m, j);
      }
  EXPECT_TRUE(allClose(gatedLinearAttention(q, k, v, a, std::nullopt).y,
                       expected, 1e-11));
}

TEST(ReferenceGla, ReducesToS4DAndLRUConvolution) {
  // SISO, q = k = 1, constant LRU decay a = exp(-exp(alpha) + i exp(theta)):
  // y = Re(v * (1, a, a^2, ...)).
  Rng rng(7);
  const int64_t channels = 5, t = 33;
  Tensor<double> ones({channels, t, 1}, 1.0);
  Tensor<double> v = rng.tensor({channels, t, 1});
  Tensor<Complex> a({channels, t, 1});
  std::vector<Complex> logA(channels);
  for (int64_t ch = 0; ch < channels; ++ch) {
    logA[ch] = Complex(-std::exp(rng.uniform(-3.0, 0.0)),
                       std::exp(rng.uniform(-2.0, 1.0)));
    for (int64_t s = 0; s < t; ++s)
      a(ch, s, 0) = std::exp(logA[ch]);
  }
  Tensor<double> expected({channels, t, 1});
  for (int64_t ch = 0; ch < channels; ++ch)
    for (int64_t n = 0; n < t; ++n)
      for (int64_t m = 0; m <= n; ++m)
        expected(ch, n, 0) +=
            (std::exp(double(n - m) * logA[ch]) * v(ch, m, 0)).real();
  EXPECT_TRUE(allClose(gatedLinearAttention(ones, ones, v, a, std::nullopt).y,
                       expected, 1e-11));
}

TEST(ReferenceGla, RealDecaysEqualComplexDecaysWithZeroPhase) {
  Rng rng(8);
  Tensor<double> q = rng.tensor({2, 9, 3}), k = rng.tensor({2, 9, 3});
  Tensor<double> v = rng.tensor({2, 9, 4});
  Tensor<double> a = rng.tensor({2, 9, 3}, 0.3, 0.99);
  GlaResult<double> real = gatedLinearAttention(q, k, v, a, std::nullopt);
  GlaResult<Complex> cplx =
      gatedLinearAttention(q, k, v, toComplex(a), std::nullopt);
  EXPECT_EQ(real.y.data, cplx.y.data);
  EXPECT_EQ(real.state.data, realPart(cplx.state).data);
  // Real linear scan == complex linear scan with theta = 0.
  ScanResult<double> lr = linearScan(a, q, std::nullopt, 1);
  ScanResult<Complex> lc = linearScan(a, toComplex(q), std::nullopt, 1);
  EXPECT_EQ(lr.h.data, realPart(lc.h).data);
}

TEST(ReferenceGla, ResetMakesLaterOutputsIndependentOfEarlierInputs) {
  Rng rng(9);
  const int64_t t = 20, reset = 8;
  GlaCase c = makeGla(rng, {2}, t, 3, 2);
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t i = 0; i < 3; ++i)
      c.a(b, reset, i) = 0.0;
  // Perturb every input before the reset, and the carried state.
  GlaCase d = c;
  Rng other(10);
  GlaCase noise = makeGla(other, {2}, t, 3, 2);
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t s = 0; s < reset; ++s) {
      for (int64_t i = 0; i < 3; ++i) {
        d.q(b, s, i) = noise.q(b, s, i);
        d.k(b, s, i) = noise.k(b, s, i);
        d.a(b, s, i) = noise.a(b, s, i);
      }
      for (int64_t j = 0; j < 2; ++j)
        d.v(b, s, j) = noise.v(b, s, j);
    }
  d.init = noise.init;
  auto later = [&](const Tensor<double> &y) {
    return slice(y, 1, reset, t - reset).data;
  };
  GlaResult<Complex> rc = gatedLinearAttention(c.q, c.k, c.v, c.a, c.init);
  GlaResult<Complex> rd = gatedLinearAttention(d.q, d.k, d.v, d.a, d.init);
  EXPECT_TRUE(allFinite(rc.y));
  EXPECT_EQ(later(rc.y), later(rd.y));
  EXPECT_EQ(rc.state.data, rd.state.data);
  for (int64_t chunk : {3, 8, 64}) {
    GlaResult<Complex> cc =
        gatedLinearAttentionChunked(c.q, c.k, c.v, c.a, c.init, chunk);
    GlaResult<Complex> cd =
        gatedLinearAttentionChunked(d.q, d.k, d.v, d.a, d.init, chunk);
    EXPECT_TRUE(allFinite(cc.y) && allFinite(cc.state));
    EXPECT_EQ(later(cc.y), later(cd.y));
    EXPECT_EQ(cc.state.data, cd.state.data);
    EXPECT_TRUE(allClose(cc.y, rc.y));
  }
  // The surrogate form divides by prod a and refuses a reset.
  EXPECT_THROW(gatedLinearAttentionSurrogate(c.q, c.k, c.v, c.a, c.init),
               std::invalid_argument);
}

TEST(ReferenceGla, BatchAndHeadsAreIndependent) {
  Rng rng(11);
  GlaCase c = makeGla(rng, {2, 3}, 12, 2, 2);
  GlaResult<Complex> base =
      gatedLinearAttentionChunked(c.q, c.k, c.v, c.a, c.init, 5);
  GlaCase d = c;
  for (int64_t s = 0; s < 12; ++s)
    for (int64_t j = 0; j < 2; ++j)
      d.v(0, 1, s, j) += 1.0; // only batch 0, head 1
  GlaResult<Complex> pert =
      gatedLinearAttentionChunked(d.q, d.k, d.v, d.a, d.init, 5);
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t h = 0; h < 3; ++h)
      for (int64_t s = 0; s < 12; ++s)
        for (int64_t j = 0; j < 2; ++j) {
          if (b == 0 && h == 1)
            EXPECT_NE(base.y(b, h, s, j), pert.y(b, h, s, j));
          else
            EXPECT_EQ(base.y(b, h, s, j), pert.y(b, h, s, j));
        }
}

TEST(ReferenceGla, RejectsBadShapes) {
  Tensor<double> q({4, 3}), v({4, 2});
  EXPECT_THROW(
      gatedLinearAttention(q, Tensor<double>({4, 2}), v, q, std::nullopt),
      std::invalid_argument);
  EXPECT_THROW(
      gatedLinearAttention(q, q, Tensor<double>({5, 2}), q, std::nullopt),
      std::invalid_argument);
  EXPECT_THROW(gatedLinearAttention(q, q, v, q, Tensor<double>({2, 3})),
               std::invalid_argument);
  EXPECT_THROW(gatedLinearAttentionChunked(q, q, v, q, std::nullopt, 0),
               std::invalid_argument);
}

//===----------------------------------------------------------------------===//
// Gates
//===----------------------------------------------------------------------===//

TEST(ReferenceGate, HandComputedKindsAndBroadcast) {
  Tensor<double> c = vec({2.0}), z = vec({1.0});
  // fixed, b_g = 0: g = 1/2, c' = 2 * 0.5 + 1 * 0.5 = 1.5.
  EXPECT_EQ(gate(GateKind::Fixed, c, z, {vec({0.0})}).data,
            std::vector<double>{1.5});
  // lstm, i_pre = 1, f_pre = -1 with the default biases -1 / +1:
  // i = f = sigmoid(0) = 1/2, c' = 2 * 0.5 + 1 * 0.5 = 1.5.
  EXPECT_EQ(gate(GateKind::Lstm, c, z, {vec({1.0}), vec({-1.0})}).data,
            std::vector<double>{1.5});
  // lstm with biases 0: i = sigmoid(1), f = sigmoid(-1).
  EXPECT_TRUE(closeTo(
      gate(GateKind::Lstm, c, z, {vec({1.0}), vec({-1.0})}, 0.0, 0.0).data[0],
      2.0 * sigmoid(-1.0) + sigmoid(1.0)));
  // update, p = 0: u = 1/2, c' = 0.5 * 4 + 0.5 * 2 = 3.
  EXPECT_EQ(gate(GateKind::Update, c, vec({4.0}), {vec({0.0})}).data,
            std::vector<double>{3.0});
  // Broadcast of b_g = [0, ln 3] over a [2, 2] state: g = [1/2, 3/4];
  // c = 1, z = 5: column 0: 0.5 + 2.5 = 3, column 1: 0.75 + 1.25 = 2.
  Tensor<double> out =
      gate(GateKind::Fixed, Tensor<double>({2, 2}, 1.0),
           Tensor<double>({2, 2}, 5.0), {vec({0.0, std::log(3.0)})});
  EXPECT_TRUE(
      allClose(out, Tensor<double>({2, 2}, std::vector<double>{3, 2, 3, 2})));
  EXPECT_THROW(gate(GateKind::Fixed, Tensor<double>({2, 2}),
                    Tensor<double>({2, 2}), {vec({1, 2, 3})}),
               std::invalid_argument);
  EXPECT_THROW(gate(GateKind::Lstm, c, z, {vec({0.0})}), std::invalid_argument);
}

TEST(ReferenceGate, FixedGateWithZeroCandidateDecaysGeometrically) {
  // z = 0: c_t = c_0 g^t with g = sigmoid(b_g) per feature.
  Rng rng(12);
  Tensor<double> c0 = rng.tensor({3, 4}), bg = rng.tensor({4}, -2.0, 2.0);
  Tensor<double> zero({3, 4});
  Tensor<double> c = c0;
  for (int t = 1; t <= 12; ++t) {
    c = gate(GateKind::Fixed, c, zero, {bg});
    Tensor<double> expected(c0.shape);
    for (int64_t s = 0; s < 3; ++s)
      for (int64_t f = 0; f < 4; ++f)
        expected(s, f) = c0(s, f) * std::pow(sigmoid(bg(f)), t);
    EXPECT_TRUE(allClose(c, expected));
  }
}

TEST(ReferenceGate, LstmWithZeroPreActivationsGivesSigmoidOfBiases) {
  // f = sigmoid(0 + 1), i = sigmoid(0 - 1): c = 1, z = 0 gives f; c = 0,
  // z = 1 gives i.
  const double f = 0.7310585786300049, i = 0.2689414213699951;
  Tensor<double> zero({2, 3}), one({2, 3}, 1.0);
  EXPECT_TRUE(allClose(gate(GateKind::Lstm, one, zero, {zero, zero}),
                       Tensor<double>({2, 3}, f), 1e-15));
  EXPECT_TRUE(allClose(gate(GateKind::Lstm, zero, one, {zero, zero}),
                       Tensor<double>({2, 3}, i), 1e-15));
}

TEST(ReferenceGate, UpdateGateIsConvexAndSaturates) {
  // MemBART: u in (0, 1) keeps c' between c and z; p -> -inf gives c,
  // p -> +inf gives z (exactly, once sigmoid saturates).
  Rng rng(13);
  Tensor<double> c = rng.tensor({4, 5}), z = rng.tensor({4, 5});
  Tensor<double> out = gate(GateKind::Update, c, z, {rng.tensor({5}, -3, 3)});
  for (size_t e = 0; e < c.data.size(); ++e) {
    EXPECT_LE(out.data[e], std::max(c.data[e], z.data[e]));
    EXPECT_GE(out.data[e], std::min(c.data[e], z.data[e]));
  }
  EXPECT_EQ(gate(GateKind::Update, c, z, {scalar(-1000.0)}).data, c.data);
  EXPECT_EQ(gate(GateKind::Update, c, z, {scalar(1000.0)}).data, z.data);
}

//===----------------------------------------------------------------------===//
// Window attention
//===----------------------------------------------------------------------===//

TEST(ReferenceWindowAttention, HandComputedBands) {
  // q = k = 0 (all logits equal), v = [1, 2, 4], T = 3, d = 1.
  Tensor<double> zero({3, 1}), v({3, 1}, std::vector<double>{1, 2, 4});
  WindowAttentionAttrs attrs;
  attrs.window = 1;
  // Token band, window 1, no self: query 0 sees nothing -> 0; query p sees
  // only p - 1.
  EXPECT_EQ(windowAttention(zero, zero, v, attrs).data,
            (std::vector<double>{0, 1, 2}));
  // With include_self and window 2: {0}, {0, 1}, {1, 2}.
  attrs.window = 2;
  attrs.includeSelf = true;
  EXPECT_EQ(windowAttention(zero, zero, v, attrs).data,
            (std::vector<double>{1, 1.5, 3}));
  // Logits: k = [0, ln 2, 0], q = 1, scale 1, window 2 without self: query 2
  // sees keys 0, 1 with weights 1/3, 2/3: 1/3 + 4/3 = 5/3.
  attrs.includeSelf = false;
  attrs.scale = 1.0;
  Tensor<double> k({3, 1}, std::vector<double>{0, std::log(2.0), 0});
  EXPECT_TRUE(
      closeTo(windowAttention(Tensor<double>({3, 1}, 1.0), k, v, attrs)(2, 0),
              5.0 / 3.0));
  // A cache position -1 holding v = 8: query 0 with window 1 sees it.
  attrs.window = 1;
  Tensor<double> kc({1, 1}), vc({1, 1}, 8.0);
  EXPECT_EQ(windowAttention(zero, zero, v, attrs, std::nullopt, kc, vc)(0, 0),
            8.0);
}

TEST(ReferenceWindowAttention, HandComputedBlockBand) {
  // B = 2, window 2, T = 4, no self, v = [1, 2, 4, 8]; blocks {0,1}, {2,3}.
  // Query 0: nothing; 1: {0}; 2: {0, 1}; 3: {0, 1, 2} -> 7/3.
  Tensor<double> zero({4, 1}), v({4, 1}, std::vector<double>{1, 2, 4, 8});
  WindowAttentionAttrs attrs;
  attrs.window = 2;
  attrs.block = 2;
  Tensor<double> out = windowAttention(zero, zero, v, attrs);
  EXPECT_EQ(out(0, 0), 0.0);
  EXPECT_EQ(out(1, 0), 1.0);
  EXPECT_EQ(out(2, 0), 1.5);
  EXPECT_TRUE(closeTo(out(3, 0), 7.0 / 3.0));
}

TEST(ReferenceWindowAttention, HandComputedAlibiAndT5Bias) {
  // One head, q = k = 0, v = [1, 2, 4], window 2 without self. ALiBi slope
  // ln 2: query 2 sees delta 1 (key 1, logit -ln 2) and delta 2 (key 0,
  // logit -2 ln 2): weights 2/3, 1/3 -> 2 * 2/3 + 1/3 = 5/3.
  Tensor<double> zero({1, 3, 1}), v({1, 3, 1}, std::vector<double>{1, 2, 4});
  WindowAttentionAttrs attrs;
  attrs.window = 2;
  attrs.biasKind = BiasKind::Alibi;
  EXPECT_TRUE(closeTo(
      windowAttention(zero, zero, v, attrs, vec({std::log(2.0)}))(0, 2, 0),
      5.0 / 3.0));
  // T5 with 4 buckets (2 exact), max distance 4: delta 1 -> bucket 1,
  // delta 2 -> bucket 2 + floor(log(2/2)/log(4/2) * 2) = 2. Table [0, 0,
  // ln 2, 0]: query 2 sees key 1 (logit 0) and key 0 (logit ln 2): weights
  // 1/3, 2/3 -> 2/3 + 2/3 = 4/3.
  attrs.biasKind = BiasKind::T5;
  attrs.numBuckets = 4;
  attrs.maxDistance = 4;
  Tensor<double> table({1, 4}, std::vector<double>{0, 0, std::log(2.0), 0});
  EXPECT_TRUE(closeTo(windowAttention(zero, zero, v, attrs, table)(0, 2, 0),
                      4.0 / 3.0));
}

TEST(ReferenceWindowAttention, T5BucketsExactThenLogSpacedThenLast) {
  for (int64_t n = 0; n < 16; ++n)
    EXPECT_EQ(t5Bucket(n), n);
  // 16 + floor(log(n/16) / log 8 * 16): 16 -> 16, 17 -> 16, 32 -> 21,
  // 64 -> 26, 100 -> 30, 127 -> 31.
  EXPECT_EQ(t5Bucket(16), 16);
  EXPECT_EQ(t5Bucket(17), 16);
  EXPECT_EQ(t5Bucket(32), 21);
  EXPECT_EQ(t5Bucket(64), 26);
  EXPECT_EQ(t5Bucket(100), 30);
  EXPECT_EQ(t5Bucket(127), 31);
  for (int64_t n : {128, 129, 500, 100000})
    EXPECT_EQ(t5Bucket(n), 31);
  EXPECT_EQ(t5Bucket(-5), 0);
  for (int64_t n = 1; n < 300; ++n)
    EXPECT_GE(t5Bucket(n), t5Bucket(n - 1));
  EXPECT_THROW(t5Bucket(3, 31, 128), std::invalid_argument);
  EXPECT_THROW(t5Bucket(3, 32, 16), std::invalid_argument);
}

/// The band mask [T, C + T] (key r at position r - C), built from the
/// papers' description: a token band of `window` strictly earlier keys (or
/// `window` keys ending at the query itself), or a query's own block plus
/// the window / block blocks before it.
Tensor<bool> bandMask(int64_t t, int64_t c, int64_t window, int64_t block,
                      bool includeSelf) {
  Tensor<bool> mask({t, c + t}, false);
  for (int64_t p = 0; p < t; ++p) {
    int64_t hi = includeSelf ? p : p - 1, lo;
    if (block == 0)
      lo = hi - window + 1;
    else
      lo = (p / block) * block - window; // first position of the first block
    for (int64_t pos = std::max(lo, -c); pos <= hi; ++pos)
      mask(p, pos + c) = true;
  }
  return mask;
}

TEST(ReferenceWindowAttention, EqualsDenseAttentionWithExplicitBandMask) {
  Rng rng(14);
  const int64_t batch = 2, heads = 2, t = 10, d = 3, dv = 2;
  struct Config {
    int64_t window, block;
    bool includeSelf;
    BiasKind bias;
    int64_t cache;
  };
  std::vector<Config> configs = {
      {3, 0, false, BiasKind::None, 0},  {3, 0, true, BiasKind::None, 0},
      {4, 0, false, BiasKind::T5, 5},    {1, 0, true, BiasKind::Alibi, 2},
      {4, 2, false, BiasKind::None, 0},  {4, 2, true, BiasKind::T5, 4},
      {3, 3, false, BiasKind::Alibi, 5}, {6, 2, false, BiasKind::None, 3},
      {20, 0, false, BiasKind::T5, 3}};
  for (const Config &cfg : configs) {
    SCOPED_TRACE("window " + std::to_string(cfg.window) + " block " +
                 std::to_string(cfg.block) + " cache " +
                 std::to_string(cfg.cache));
    Tensor<double> q = rng.tensor({batch, heads, t, d});
    Tensor<double> k = rng.tensor({batch, heads, t, d});
    Tensor<double> v = rng.tensor({batch, heads, t, dv});
    Tensor<double> kc = rng.tensor({batch, heads, cfg.cache, d});
    Tensor<double> vc = rng.tensor({batch, heads, cfg.cache, dv});
    WindowAttentionAttrs attrs;
    attrs.window = cfg.window;
    attrs.block = cfg.block;
    attrs.includeSelf = cfg.includeSelf;
    attrs.biasKind = cfg.bias;
    attrs.numBuckets = 8;
    attrs.maxDistance = 12;
    std::optional<Tensor<double>> table;
    if (cfg.bias == BiasKind::T5)
      table = rng.tensor({heads, 8});
    if (cfg.bias == BiasKind::Alibi)
      table = rng.tensor({heads}, 0.0, 1.0);

    // The dense reference over [cache; keys] with the bias written out.
    int64_t tk = cfg.cache + t;
    Tensor<double> bias({batch, heads, t, tk});
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t h = 0; h < heads; ++h)
        for (int64_t p = 0; p < t; ++p)
          for (int64_t r = 0; r < tk; ++r) {
            int64_t delta = p - (r - cfg.cache);
            if (cfg.bias == BiasKind::T5)
              bias(b, h, p, r) = (*table)(h, t5Bucket(delta, 8, 12));
            if (cfg.bias == BiasKind::Alibi)
              bias(b, h, p, r) = -(*table)(h) * double(delta);
          }
    Tensor<double> dense = maskedAttention(
        q, concat<double>({kc, k}, 2), concat<double>({vc, v}, 2),
        bandMask(t, cfg.cache, cfg.window, cfg.block, cfg.includeSelf), bias);
    std::optional<Tensor<double>> kcOpt, vcOpt;
    if (cfg.cache > 0) {
      kcOpt = kc;
      vcOpt = vc;
    }
    EXPECT_TRUE(
        allClose(windowAttention(q, k, v, attrs, table, kcOpt, vcOpt), dense));
  }
}

TEST(ReferenceWindowAttention, NoTokenAttendsToItselfWithoutIncludeSelf) {
  // Perturbing a token's own value never changes its output; perturbing key
  // or value j never changes an output before j.
  Rng rng(15);
  const int64_t t = 9;
  Tensor<double> q = rng.tensor({t, 3}), k = rng.tensor({t, 3});
  Tensor<double> v = rng.tensor({t, 2});
  for (int64_t block : {0, 3}) {
    WindowAttentionAttrs attrs;
    attrs.window = 3;
    attrs.block = block;
    Tensor<double> base = windowAttention(q, k, v, attrs);
    for (int64_t j = 0; j < t; ++j) {
      Tensor<double> k2 = k, v2 = v;
      k2(j, 0) += 1.0;
      v2(j, 1) += 1.0;
      Tensor<double> pert = windowAttention(q, k2, v2, attrs);
      for (int64_t p = 0; p <= j; ++p)
        for (int64_t e = 0; e < 2; ++e)
          EXPECT_EQ(pert(p, e), base(p, e)) << "p " << p << " j " << j;
    }
    // With include_self the token's own value matters.
    attrs.includeSelf = true;
    Tensor<double> v2 = v;
    v2(4, 0) += 1.0;
    EXPECT_NE(windowAttention(q, k, v2, attrs)(4, 0),
              windowAttention(q, k, v, attrs)(4, 0));
  }
}

TEST(ReferenceWindowAttention, CachedSegmentsEqualOneLongSegment) {
  // Two segments of L = 6 with the last `window` keys/values of the first
  // carried as the cache (memory_update) == the second half of one pass.
  Rng rng(16);
  const int64_t heads = 2, l = 6;
  Tensor<double> q = rng.tensor({heads, 2 * l, 4}),
                 k = rng.tensor({heads, 2 * l, 4});
  Tensor<double> v = rng.tensor({heads, 2 * l, 3});
  Tensor<double> table = rng.tensor({heads, 32});
  for (int64_t block : {0, 2}) {
    WindowAttentionAttrs attrs;
    attrs.window = 4;
    attrs.block = block;
    attrs.biasKind = BiasKind::T5;
    Tensor<double> full = windowAttention(q, k, v, attrs, table);
    Tensor<double> noCacheK({heads, 0, 4}), noCacheV({heads, 0, 3});
    Tensor<double> kc = memoryUpdate(noCacheK, slice(k, 1, 0, l), 1, 4);
    Tensor<double> vc = memoryUpdate(noCacheV, slice(v, 1, 0, l), 1, 4);
    Tensor<double> second =
        windowAttention(slice(q, 1, l, l), slice(k, 1, l, l), slice(v, 1, l, l),
                        attrs, table, kc, vc);
    EXPECT_TRUE(allClose(second, slice(full, 1, l, l)));
  }
}

TEST(ReferenceWindowAttention, RejectsBadAttributes) {
  Tensor<double> x({2, 4, 3});
  WindowAttentionAttrs attrs;
  attrs.window = 0;
  EXPECT_THROW(windowAttention(x, x, x, attrs), std::invalid_argument);
  attrs.window = 3;
  attrs.block = 2;
  EXPECT_THROW(windowAttention(x, x, x, attrs), std::invalid_argument);
  attrs.block = 0;
  attrs.biasKind = BiasKind::Alibi;
  EXPECT_THROW(windowAttention(x, x, x, attrs, vec({1, 2, 3})),
               std::invalid_argument); // [H] = [2] expected
  EXPECT_THROW(windowAttention(x, x, x, attrs), std::invalid_argument);
}

//===----------------------------------------------------------------------===//
// Dense attention (MemBART masks)
//===----------------------------------------------------------------------===//

TEST(ReferenceAttention, HandComputedMasks) {
  // q = k = 0, v = [1, 3, 5], 3 keys.
  Tensor<double> zero({3, 1}), v({3, 1}, std::vector<double>{1, 3, 5});
  AttentionAttrs attrs;
  EXPECT_EQ(attention(zero, zero, v, attrs).data,
            (std::vector<double>{3, 3, 3}));
  attrs.mask = MaskKind::Causal; // {0}, {0, 1}, {0, 1, 2}
  EXPECT_EQ(attention(zero, zero, v, attrs).data,
            (std::vector<double>{1, 2, 3}));
  // Two queries over three keys: the last two positions.
  EXPECT_EQ(attention(Tensor<double>({2, 1}), zero, v, attrs).data,
            (std::vector<double>{2, 3}));
  // Memory mask with 2 slots: slot 0 sees {0, 2} -> 3, slot 1 sees {1, 2}
  // -> 4, the token sees everything -> 3.
  attrs.mask = MaskKind::Memory;
  attrs.memorySlots = 2;
  EXPECT_EQ(attention(zero, zero, v, attrs).data,
            (std::vector<double>{3, 4, 3}));
  // Padding key 2 as well: slot 0 sees {0} -> 1, slot 1 {1} -> 3, the token
  // {0, 1} -> 2; padding keys 0 and 2 leaves slot 0 nothing -> 0.
  Tensor<bool> pad({3}, std::vector<bool>{false, false, true});
  EXPECT_EQ(attention(zero, zero, v, attrs, pad).data,
            (std::vector<double>{1, 3, 2}));
  Tensor<bool> pad2({3}, std::vector<bool>{true, false, true});
  EXPECT_EQ(attention(zero, zero, v, attrs, pad2).data,
            (std::vector<double>{0, 3, 3}));
  // Logits: q = 1, k = [0, ln 3], scale 1, v = [1, 3]: weights 1/4, 3/4
  // -> 2.5.
  AttentionAttrs plain;
  plain.scale = 1.0;
  EXPECT_TRUE(closeTo(
      attention(Tensor<double>({1, 1}, 1.0),
                Tensor<double>({2, 1}, std::vector<double>{0, std::log(3.0)}),
                Tensor<double>({2, 1}, std::vector<double>{1, 3}), plain)(0, 0),
      2.5));
}

TEST(ReferenceAttention, MemoryMaskSlotsNeverSeeOtherSlots) {
  Rng rng(17);
  const int64_t batch = 2, slots = 3, tokens = 4, t = slots + tokens;
  Tensor<double> q = rng.tensor({batch, t, 4}), k = rng.tensor({batch, t, 4});
  Tensor<double> v = rng.tensor({batch, t, 3});
  AttentionAttrs attrs;
  attrs.mask = MaskKind::Memory;
  attrs.memorySlots = slots;
  Tensor<double> base = attention(q, k, v, attrs);
  for (int64_t j = 0; j < slots; ++j) {
    Tensor<double> k2 = k, v2 = v;
    for (int64_t b = 0; b < batch; ++b) {
      k2(b, j, 0) += 2.0;
      v2(b, j, 1) += 2.0;
    }
    Tensor<double> pert = attention(q, k2, v2, attrs);
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t i = 0; i < slots; ++i)
        for (int64_t e = 0; e < 3; ++e) {
          if (i != j)
            EXPECT_EQ(pert(b, i, e), base(b, i, e));
        }
      // Token rows read every slot.
      for (int64_t i = slots; i < t; ++i)
        EXPECT_NE(pert(b, i, 1), base(b, i, 1));
    }
  }
  // The same as an explicit mask written from MemBART's code: slot rows see
  // the diagonal of the slot block and every token; token rows see all.
  Tensor<bool> mask({t, t}, false);
  for (int64_t i = 0; i < t; ++i)
    for (int64_t j = 0; j < t; ++j)
      mask(i, j) = i >= slots || j >= slots || i == j;
  EXPECT_TRUE(allClose(base, maskedAttention(q, k, v, mask, std::nullopt)));
}

TEST(ReferenceAttention, PaddedKeysChangeNothing) {
  Rng rng(18);
  const int64_t batch = 2, t = 6;
  Tensor<double> q = rng.tensor({batch, t, 4}), k = rng.tensor({batch, t, 4});
  Tensor<double> v = rng.tensor({batch, t, 3});
  Tensor<bool> pad({batch, t}, false);
  pad(0, 5) = true;
  pad(1, 2) = true;
  pad(1, 4) = true;
  for (MaskKind mask : {MaskKind::None, MaskKind::Causal, MaskKind::Memory}) {
    AttentionAttrs attrs;
    attrs.mask = mask;
    attrs.memorySlots = mask == MaskKind::Memory ? 2 : 0;
    Tensor<double> base = attention(q, k, v, attrs, pad);
    Tensor<double> k2 = k, v2 = v;
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t j = 0; j < t; ++j)
        if (pad(b, j)) {
          for (int64_t e = 0; e < 4; ++e)
            k2(b, j, e) = 1e6;
          for (int64_t e = 0; e < 3; ++e)
            v2(b, j, e) = std::numeric_limits<double>::quiet_NaN();
        }
    EXPECT_EQ(attention(q, k2, v2, attrs, pad).data, base.data);
    EXPECT_TRUE(allFinite(base));
  }
}

//===----------------------------------------------------------------------===//
// Transformer-XL relative attention
//===----------------------------------------------------------------------===//

TEST(ReferenceRelAttention, HandComputedScores) {
  // H = 1, L = 1, M = 1 (K = 2), dh = 1: q = 1, k = [1, 2], u = 0.5,
  // pos_bias = 1, r rows [distance 1, distance 0] = [3, 5].
  // S[0,0] (distance 1, row 0) = 1.5 * 1 + 2 * 3 = 7.5;
  // S[0,1] (distance 0, row 1) = 1.5 * 2 + 2 * 5 = 13.
  Tensor<double> q({1, 1, 1}, 1.0), k({1, 2, 1}, std::vector<double>{1, 2});
  Tensor<double> r({1, 2, 1}, std::vector<double>{3, 5});
  Tensor<double> u({1, 1}, 0.5), pb({1, 1}, 1.0);
  EXPECT_EQ(relAttentionScores(q, k, r, u, pb).data,
            (std::vector<double>{7.5, 13}));
  EXPECT_EQ(relAttentionScoresShifted(q, k, r, u, pb).data,
            (std::vector<double>{7.5, 13}));
  // scale 1, v = [0, 1]: out = e^13 / (e^7.5 + e^13) = 1 / (1 + e^-5.5).
  Tensor<double> v({1, 2, 1}, std::vector<double>{0, 1});
  EXPECT_TRUE(closeTo(relAttention(q, k, v, r, u, pb, 1.0)(0, 0, 0),
                      1.0 / (1.0 + std::exp(-5.5))));
}

TEST(ReferenceRelAttention, SinusoidsHandComputed) {
  // d = 4: w = [1, 0.01]; R_x = [sin x, sin 0.01x, cos x, cos 0.01x].
  Tensor<double> r = sinusoidEncoding({0.0, 2.0}, 4);
  EXPECT_EQ(r.data,
            (std::vector<double>{0, 0, 1, 1, std::sin(2.0), std::sin(0.02),
                                 std::cos(2.0), std::cos(0.02)}));
  // Relative layout: rows for distances 2, 1, 0.
  Tensor<double> rel = relativeSinusoids(3, 4);
  EXPECT_EQ(rel(0, 0), std::sin(2.0));
  EXPECT_EQ(rel(1, 0), std::sin(1.0));
  EXPECT_EQ(rel(2, 2), 1.0);
}

/// x [n, dm] times per-head weights w [H, dm, dh] -> [H, n, dh].
Tensor<double> project(const Tensor<double> &x, const Tensor<double> &w) {
  int64_t n = x.dim(0), dm = x.dim(1), heads = w.dim(0), dh = w.dim(2);
  Tensor<double> out({heads, n, dh});
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t p = 0; p < n; ++p)
      for (int64_t e = 0; e < dh; ++e)
        for (int64_t m = 0; m < dm; ++m)
          out(h, p, e) += x(p, m) * w(h, m, e);
  return out;
}

struct XlWeights {
  Tensor<double> wq, wk, wv, wr, u, pb;
};

XlWeights makeXl(Rng &rng, int64_t heads, int64_t dm, int64_t dh) {
  return {rng.tensor({heads, dm, dh}), rng.tensor({heads, dm, dh}),
          rng.tensor({heads, dm, dh}), rng.tensor({heads, dm, dh}),
          rng.tensor({heads, dh}),     rng.tensor({heads, dh})};
}

/// r = R W_{k,R} for `klen` keys: [H, klen, dh].
Tensor<double> relEncodings(const XlWeights &w, int64_t klen) {
  return project(relativeSinusoids(klen, w.wr.dim(1)), w.wr);
}

TEST(ReferenceRelAttention, DirectScoresEqualShiftedScores) {
  Rng rng(19);
  const int64_t heads = 2, dh = 3, dm = 4;
  // M < L, M = L, M > L, L = 1 (incremental decoding), M = 0.
  for (auto [m, l] : std::vector<std::pair<int64_t, int64_t>>{
           {3, 5}, {4, 4}, {7, 3}, {5, 1}, {0, 4}}) {
    SCOPED_TRACE("M = " + std::to_string(m) + ", L = " + std::to_string(l));
    XlWeights w = makeXl(rng, heads, dm, dh);
    Tensor<double> q = rng.tensor({2, heads, l, dh});
    Tensor<double> k = rng.tensor({2, heads, m + l, dh});
    Tensor<double> v = rng.tensor({2, heads, m + l, 2});
    Tensor<double> r = relEncodings(w, m + l);
    Tensor<double> direct = relAttentionScores(q, k, r, w.u, w.pb);
    Tensor<double> shifted = relAttentionScoresShifted(q, k, r, w.u, w.pb);
    // Compare only the visible entries j <= M + i; the rest of `direct` is
    // NaN by construction and that of `shifted` is garbage.
    Tensor<double> dv(direct.shape), sv(shifted.shape);
    for (size_t e = 0; e < direct.data.size(); ++e) {
      int64_t j = static_cast<int64_t>(e) % (m + l);
      int64_t i = (static_cast<int64_t>(e) / (m + l)) % l;
      if (j <= m + i) {
        dv.data[e] = direct.data[e];
        sv.data[e] = shifted.data[e];
      } else {
        EXPECT_TRUE(std::isnan(direct.data[e]));
      }
    }
    EXPECT_TRUE(allClose(sv, dv));
    Tensor<double> out = relAttention(q, k, v, r, w.u, w.pb);
    EXPECT_TRUE(allFinite(out)); // the NaN region never reaches the output
    EXPECT_TRUE(allClose(relAttentionShifted(q, k, v, r, w.u, w.pb), out));
  }
}

TEST(ReferenceRelAttention, ScoresDependOnlyOnRelativePosition) {
  // With every query equal and every key equal, S[i, j] = S[i+1, j+1].
  Rng rng(20);
  const int64_t heads = 2, l = 5, m = 3, dh = 4;
  XlWeights w = makeXl(rng, heads, 6, dh);
  Tensor<double> q1 = rng.tensor({heads, 1, dh}),
                 k1 = rng.tensor({heads, 1, dh});
  Tensor<double> q({heads, l, dh}), k({heads, m + l, dh});
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t e = 0; e < dh; ++e) {
      for (int64_t i = 0; i < l; ++i)
        q(h, i, e) = q1(h, 0, e);
      for (int64_t j = 0; j < m + l; ++j)
        k(h, j, e) = k1(h, 0, e);
    }
  Tensor<double> s =
      relAttentionScores(q, k, relEncodings(w, m + l), w.u, w.pb);
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i + 1 < l; ++i)
      for (int64_t j = 0; j <= m + i; ++j)
        EXPECT_TRUE(closeTo(s(h, i + 1, j + 1), s(h, i, j)));
}

TEST(ReferenceRelAttention, EachOfTheFourTermsAloneMatches) {
  Rng rng(21);
  const int64_t heads = 2, l = 3, m = 2, kk = m + l, dh = 3;
  Tensor<double> q = rng.tensor({heads, l, dh}),
                 k = rng.tensor({heads, kk, dh});
  Tensor<double> r = rng.tensor({heads, kk, dh}), u = rng.tensor({heads, dh});
  Tensor<double> pb = rng.tensor({heads, dh});
  Tensor<double> zq({heads, l, dh}), zk({heads, kk, dh}), zr({heads, kk, dh});
  Tensor<double> zh({heads, dh});
  auto dot = [&](const Tensor<double> &x, int64_t h, int64_t a,
                 const Tensor<double> &y, int64_t b) {
    double s = 0.0;
    for (int64_t e = 0; e < dh; ++e)
      s += (x.rank() == 3 ? x(h, a, e) : x(h, e)) *
           (y.rank() == 3 ? y(h, b, e) : y(h, e));
    return s;
  };
  // (a) q.k, (b) q.r, (c) u.k, (d) pos_bias.r, with r at row K-1-(M+i-j).
  struct Term {
    Tensor<double> q, k, r, u, pb;
    std::function<double(int64_t, int64_t, int64_t)> expected;
  };
  std::vector<Term> terms = {
      {q, k, zr, zh, zh,
       [&](int64_t h, int64_t i, int64_t j) { return dot(q, h, i, k, j); }},
      {q, zk, r, zh, zh,
       [&](int64_t h, int64_t i, int64_t j) {
         return dot(q, h, i, r, kk - 1 - (m + i - j));
       }},
      {zq, k, zr, u, zh,
       [&](int64_t h, int64_t, int64_t j) { return dot(k, h, j, u, 0); }},
      {zq, zk, r, zh, pb, [&](int64_t h, int64_t i, int64_t j) {
         return dot(r, h, kk - 1 - (m + i - j), pb, 0);
       }}};
  for (const Term &term : terms) {
    Tensor<double> s =
        relAttentionScores(term.q, term.k, term.r, term.u, term.pb);
    Tensor<double> sh =
        relAttentionScoresShifted(term.q, term.k, term.r, term.u, term.pb);
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < l; ++i)
        for (int64_t j = 0; j <= m + i; ++j) {
          EXPECT_TRUE(closeTo(s(h, i, j), term.expected(h, i, j)));
          EXPECT_TRUE(closeTo(sh(h, i, j), term.expected(h, i, j)));
        }
  }
}

TEST(ReferenceRelAttention, ZeroBiasesAndPositionWeightsGiveContentOnly) {
  // u = v = 0 and W_{k,R} = 0: causal content attention over memory + segment.
  Rng rng(22);
  const int64_t heads = 2, l = 4, m = 3, dh = 5;
  Tensor<double> q = rng.tensor({2, heads, l, dh});
  Tensor<double> k = rng.tensor({2, heads, m + l, dh});
  Tensor<double> v = rng.tensor({2, heads, m + l, 3});
  XlWeights w = makeXl(rng, heads, 6, dh);
  w.wr = Tensor<double>(w.wr.shape);
  w.u = Tensor<double>(w.u.shape);
  w.pb = Tensor<double>(w.pb.shape);
  AttentionAttrs causal;
  causal.mask = MaskKind::Causal;
  EXPECT_TRUE(allClose(relAttention(q, k, v, relEncodings(w, m + l), w.u, w.pb),
                       attention(q, k, v, causal)));
}

TEST(ReferenceRelAttention, SegmentRecurrenceEqualsOnePass) {
  // One attention layer over N positions, run segment by segment with the
  // memory kept by memory_update: with unbounded memory it equals one causal
  // pass; with M positions of memory it equals one pass whose mask lets p see
  // seg_start(p) - M <= j <= p.
  Rng rng(23);
  const int64_t n = 12, dm = 4, heads = 2, dh = 3;
  Tensor<double> x = rng.tensor({n, dm});
  XlWeights w = makeXl(rng, heads, dm, dh);
  Tensor<double> qAll = project(x, w.wq), kAll = project(x, w.wk);
  Tensor<double> vAll = project(x, w.wv);
  Tensor<double> unbounded =
      relAttention(qAll, kAll, vAll, relEncodings(w, n), w.u, w.pb);
  for (int64_t l : {1, 3, 4}) {
    for (int64_t memSize : {int64_t(2), l, int64_t(5), n}) {
      SCOPED_TRACE("L = " + std::to_string(l) +
                   ", M = " + std::to_string(memSize));
      // The one-pass reference with the segment mask; the relative terms
      // other than q.k go into an explicit bias.
      double scale = 1.0 / std::sqrt(double(dh));
      Tensor<double> rAll = relEncodings(w, n); // row n-1-d: distance d
      Tensor<bool> mask({n, n}, false);
      Tensor<double> bias({heads, n, n});
      for (int64_t p = 0; p < n; ++p)
        for (int64_t j = std::max<int64_t>(0, (p / l) * l - memSize); j <= p;
             ++j) {
          mask(p, j) = true;
          for (int64_t h = 0; h < heads; ++h) {
            double s = 0.0;
            for (int64_t e = 0; e < dh; ++e)
              s += w.u(h, e) * kAll(h, j, e) +
                   (qAll(h, p, e) + w.pb(h, e)) * rAll(h, n - 1 - (p - j), e);
            bias(h, p, j) = scale * s;
          }
        }
      Tensor<double> onePass =
          maskedAttention(qAll, kAll, vAll, mask, bias, scale);
      if (memSize == n)
        EXPECT_TRUE(allClose(onePass, unbounded));

      Tensor<double> memory({0, dm});
      std::vector<Tensor<double>> outs;
      for (int64_t start = 0; start < n; start += l) {
        int64_t len = std::min(l, n - start);
        Tensor<double> seg = slice(x, 0, start, len);
        Tensor<double> ext = concat<double>({stopGradient(memory), seg}, 0);
        outs.push_back(relAttention(project(seg, w.wq), project(ext, w.wk),
                                    project(ext, w.wv),
                                    relEncodings(w, ext.dim(0)), w.u, w.pb));
        int64_t keep = std::min(memSize, memory.dim(0) + len);
        Tensor<double> next = memoryUpdate(memory, seg, 0, keep);
        // The new memory is exactly the last positions of [mem; h].
        EXPECT_EQ(next.data, slice(ext, 0, ext.dim(0) - keep, keep).data);
        memory = next;
      }
      EXPECT_TRUE(allClose(concat(outs, 1), onePass));
    }
  }
}

//===----------------------------------------------------------------------===//
// Block recurrence and memory
//===----------------------------------------------------------------------===//

TEST(ReferenceMemory, HandComputedMemoryUpdate) {
  // [1, 2, 3] ++ [4, 5], keep 3 -> [3, 4, 5].
  EXPECT_EQ(memoryUpdate(vec({1, 2, 3}), vec({4, 5}), 0, 3).data,
            (std::vector<double>{3, 4, 5}));
  // Along axis 1 of [2, 2] ++ [2, 1], keep 2: rows [a b | c] -> [b c].
  Tensor<double> mem({2, 2}, std::vector<double>{1, 2, 3, 4});
  Tensor<double> nw({2, 1}, std::vector<double>{5, 6});
  EXPECT_EQ(memoryUpdate(mem, nw, 1, 2).data,
            (std::vector<double>{2, 5, 4, 6}));
  EXPECT_EQ(memoryUpdate(mem, nw, 1, 0).shape, (std::vector<int64_t>{2, 0}));
  EXPECT_THROW(memoryUpdate(mem, nw, 1, 4), std::invalid_argument);
  EXPECT_THROW(memoryUpdate(mem, Tensor<double>({3, 1}), 1, 2),
               std::invalid_argument);
  EXPECT_EQ(stopGradient(mem).data, mem.data);
}

TEST(ReferenceMemory, HandComputedBlockRecurrence) {
  // x = [1, 2, 3, 4], blocks of 2, carried c (init 10):
  // y = x + c, c' = c + sum x. Block 0: y = [11, 12], c = 13;
  // block 1: y = [16, 17], c = 20.
  BlockBody body = [](const std::vector<Tensor<double>> &xs,
                      const std::vector<Tensor<double>> &cs) {
    Tensor<double> y = xs[0];
    double c = cs[0].data[0], sum = 0.0;
    for (double &e : y.data) {
      sum += e;
      e += c;
    }
    return BlockStep{{y}, {scalar(c + sum)}};
  };
  BlockRecurrenceResult r =
      blockRecurrence({vec({1, 2, 3, 4})}, {scalar(10)}, 2, 0, body);
  ASSERT_EQ(r.outputs.size(), 1u);
  EXPECT_EQ(r.outputs[0].data, (std::vector<double>{11, 12, 16, 17}));
  EXPECT_EQ(r.finals[0].data, std::vector<double>{20});
  EXPECT_THROW(blockRecurrence({vec({1, 2, 3})}, {scalar(0)}, 2, 0, body),
               std::invalid_argument);
}

TEST(ReferenceMemory, BlockLoopOfScansEqualsOneScan) {
  // Streaming: a block recurrence whose body is a linear scan carrying its
  // last state equals one scan over the whole sequence.
  Rng rng(24);
  Tensor<double> a = rng.tensor({2, 12, 3}, 0.5, 1.0);
  Tensor<double> b = rng.tensor({2, 12, 3});
  Tensor<double> init = rng.tensor({2, 3});
  BlockBody body = [](const std::vector<Tensor<double>> &xs,
                      const std::vector<Tensor<double>> &cs) {
    ScanResult<double> s = linearScan(xs[0], xs[1], cs[0], 1);
    return BlockStep{{s.h}, {s.last}};
  };
  ScanResult<double> whole = linearScan(a, b, init, 1);
  for (int64_t block : {1, 3, 4, 12}) {
    BlockRecurrenceResult r = blockRecurrence({a, b}, {init}, block, 1, body);
    EXPECT_TRUE(allClose(r.outputs[0], whole.h));
    EXPECT_TRUE(allClose(r.finals[0], whole.last));
  }
}

//===----------------------------------------------------------------------===//
// Halting and depth
//===----------------------------------------------------------------------===//

TEST(ReferenceHalting, HandComputedSteps) {
  // Step 0: p = 0.5, h = [2], mass 0: a = 0.5, s = 2, mass 0.5, acc [1].
  HaltingResult s0 =
      halting(vec({0.5}), Tensor<double>({1, 1}, 2.0), vec({0.0}),
              Tensor<double>({1, 1}), Tensor<double>({1, 1}, 9.0));
  EXPECT_EQ(s0.a.data, std::vector<double>{0.5});
  EXPECT_EQ(s0.s.data, std::vector<double>{2.0});
  EXPECT_EQ(s0.newMass.data, std::vector<double>{0.5});
  EXPECT_EQ(s0.newAcc.data, std::vector<double>{1.0});
  // Step 1: p = 0.5, h = [4]: a = 0.25, s = 0.5 * 4 + 1 = 3, mass 0.75,
  // acc = 1 + 0.25 * 4 = 2.
  HaltingResult s1 = halting(vec({0.5}), Tensor<double>({1, 1}, 4.0),
                             s0.newMass, s0.newAcc, s0.s);
  EXPECT_EQ(s1.a.data, std::vector<double>{0.25});
  EXPECT_EQ(s1.s.data, std::vector<double>{3.0});
  EXPECT_EQ(s1.newMass.data, std::vector<double>{0.75});
  EXPECT_EQ(s1.newAcc.data, std::vector<double>{2.0});
  // mass 0.9995 >= 0.999: halted, exact copies.
  HaltingResult h =
      halting(vec({0.7}), Tensor<double>({1, 1}, 4.0), vec({0.9995}),
              Tensor<double>({1, 1}, 1.5), Tensor<double>({1, 1}, 9.0));
  EXPECT_EQ(h.a.data, std::vector<double>{0.0});
  EXPECT_EQ(h.s.data, std::vector<double>{9.0});
  EXPECT_EQ(h.newMass.data, std::vector<double>{0.9995});
  EXPECT_EQ(h.newAcc.data, std::vector<double>{1.5});
}

TEST(ReferenceHalting, HandComputedDepthLoop) {
  // x <- 2x + l from 1 for 3 steps: 2, 5, 12.
  DepthBody body = [](int64_t l, const std::vector<Tensor<double>> &c) {
    return std::vector<Tensor<double>>{scalar(2.0 * c[0].data[0] + double(l))};
  };
  EXPECT_EQ(depthLoop({scalar(1.0)}, 3, body)[0].data,
            std::vector<double>{12.0});
  EXPECT_THROW(depthLoop({scalar(1.0)}, 0, body), std::invalid_argument);
}

/// The carried values of a halting depth loop: h, mass, acc, s, and the
/// per-step record of a (one row per step).
struct HaltRun {
  std::vector<Tensor<double>> hs, as, ss;
  Tensor<double> mass;
};

/// Runs `depth` halting steps with halting probabilities pHat[l] and states
/// hs[l], through depthLoop.
HaltRun runHalting(const std::vector<Tensor<double>> &pHat,
                   const std::vector<Tensor<double>> &hs, double threshold) {
  HaltRun run;
  int64_t depth = static_cast<int64_t>(pHat.size());
  const Tensor<double> &h0 = hs[0];
  std::vector<int64_t> tokenShape(h0.shape.begin(), h0.shape.end() - 1);
  DepthBody body = [&](int64_t l, const std::vector<Tensor<double>> &c) {
    HaltingResult r = halting(pHat[l], hs[l], c[0], c[1], c[2], threshold);
    run.as.push_back(r.a);
    run.ss.push_back(r.s);
    return std::vector<Tensor<double>>{r.newMass, r.newAcc, r.s};
  };
  std::vector<Tensor<double>> final =
      depthLoop({Tensor<double>(tokenShape), Tensor<double>(h0.shape),
                 Tensor<double>(h0.shape)},
                depth, body);
  run.mass = final[0];
  return run;
}

TEST(ReferenceHalting, StickBreakingInvariants) {
  Rng rng(25);
  const int64_t tokens = 6, d = 3, depth = 8;
  std::vector<Tensor<double>> pHat, hs;
  for (int64_t l = 0; l < depth; ++l) {
    pHat.push_back(rng.tensor({tokens}, 0.05, 0.5));
    hs.push_back(rng.tensor({tokens, d}));
  }
  HaltRun run = runHalting(pHat, hs, 1.0); // never halts: all steps active
  std::vector<double> sumA(tokens, 0.0), prod(tokens, 1.0);
  for (int64_t l = 0; l < depth; ++l) {
    // s_l = (1 - sum_{l'<l} a_l') h_l + sum_{l'<l} a_l' h_l' (Eq. 3).
    Tensor<double> expected({tokens, d});
    for (int64_t t = 0; t < tokens; ++t)
      for (int64_t e = 0; e < d; ++e) {
        expected(t, e) = (1.0 - sumA[t]) * hs[l](t, e);
        for (int64_t m = 0; m < l; ++m)
          expected(t, e) += run.as[m](t) * hs[m](t, e);
      }
    EXPECT_TRUE(allClose(run.ss[l], expected));
    for (int64_t t = 0; t < tokens; ++t) {
      double a = run.as[l](t);
      EXPECT_GE(a, 0.0);
      EXPECT_LE(a, 1.0);
      sumA[t] += a;
      prod[t] *= 1.0 - pHat[l](t);
      // 1 - sum_{l' <= l} a_l' == prod_{l' <= l} (1 - p_hat_l').
      EXPECT_TRUE(closeTo(1.0 - sumA[t], prod[t]));
      EXPECT_LE(sumA[t], 1.0);
    }
  }
}

TEST(ReferenceHalting, EqualStatesGiveThatStateAndOneHotHaltsAtItsStep) {
  Rng rng(26);
  const int64_t tokens = 4, d = 3, depth = 6;
  // Equal h_l: the weights of s sum to 1, so s = h.
  Tensor<double> h = rng.tensor({tokens, d});
  std::vector<Tensor<double>> pHat, same(depth, h);
  for (int64_t l = 0; l < depth; ++l)
    pHat.push_back(rng.tensor({tokens}, 0.0, 1.0));
  HaltRun run = runHalting(pHat, same, 0.999);
  for (int64_t l = 0; l < depth; ++l)
    EXPECT_TRUE(allClose(run.ss[l], h));
  // One-hot p_hat at step j: s_l = h_j for all l >= j, exactly.
  const int64_t j = 2;
  std::vector<Tensor<double>> hs, oneHot;
  for (int64_t l = 0; l < depth; ++l) {
    hs.push_back(rng.tensor({tokens, d}));
    oneHot.push_back(Tensor<double>({tokens}, l == j ? 1.0 : 0.0));
  }
  HaltRun hot = runHalting(oneHot, hs, 0.999);
  for (int64_t l = j; l < depth; ++l)
    EXPECT_EQ(hot.ss[l].data, hs[j].data);
}

TEST(ReferenceHalting, HaltedTokensAreCopiedExactly) {
  Rng rng(27);
  const int64_t tokens = 8, d = 2, depth = 7;
  std::vector<Tensor<double>> pHat, hs;
  for (int64_t l = 0; l < depth; ++l) {
    pHat.push_back(rng.tensor({tokens}, 0.1, 0.9));
    hs.push_back(rng.tensor({tokens, d}));
  }
  const double threshold = 0.6;
  HaltRun run = runHalting(pHat, hs, threshold);
  double mass[tokens] = {};
  int halted = 0;
  for (int64_t l = 0; l < depth; ++l)
    for (int64_t t = 0; t < tokens; ++t) {
      if (mass[t] >= threshold) {
        ++halted;
        EXPECT_EQ(run.as[l](t), 0.0);
        for (int64_t e = 0; e < d; ++e)
          EXPECT_EQ(run.ss[l](t, e), run.ss[l - 1](t, e));
      }
      mass[t] += run.as[l](t);
    }
  EXPECT_GT(halted, 0);
  for (int64_t t = 0; t < tokens; ++t)
    EXPECT_EQ(run.mass(t), mass[t]);
}

//===----------------------------------------------------------------------===//
// Experts
//===----------------------------------------------------------------------===//

TEST(ReferenceExperts, HandComputedTopK) {
  // [0.1, 0.4, 0.2, 0.3], k = 2 -> experts 1, 3 with gates
  // 0.4 / (0.7 + 1e-6), 0.3 / (0.7 + 1e-6).
  RouteResult r = routeTopK(vec({0.1, 0.4, 0.2, 0.3}), 2);
  EXPECT_EQ(r.indices.data, (std::vector<int32_t>{1, 3}));
  EXPECT_TRUE(closeTo(r.gates.data[0], 0.4 / (0.7 + 1e-6)));
  EXPECT_TRUE(closeTo(r.gates.data[1], 0.3 / (0.7 + 1e-6)));
  // Ties go to the lower index, in descending order of probability.
  EXPECT_EQ(routeTopK(vec({0.25, 0.25, 0.25, 0.25}), 2).indices.data,
            (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(routeTopK(vec({0.2, 0.3, 0.3, 0.2}), 3).indices.data,
            (std::vector<int32_t>{1, 2, 0}));
  EXPECT_THROW(routeTopK(vec({0.5, 0.5}), 3), std::invalid_argument);
}

TEST(ReferenceExperts, HandComputedMoEAndActivations) {
  // d = 1, D = 2, E = 2. Expert 0: W_in = [1, -1], W_out = [1, 1]^T, so
  // relu gives |x|; expert 1: W_in = [2, 0], W_out = [3, 0]^T.
  // x = 3: expert 0 -> 3, expert 1 -> relu(6) * 3 = 18; gates [0.25, 0.75]
  // -> 0.75 + 13.5 = 14.25. An inactive token gets 0.
  Tensor<double> wIn({2, 1, 2}, std::vector<double>{1, -1, 2, 0});
  Tensor<double> wOut({2, 2, 1}, std::vector<double>{1, 1, 3, 0});
  Tensor<double> x({2, 1}, std::vector<double>{3, 3});
  Tensor<int32_t> idx({2, 2}, std::vector<int32_t>{0, 1, 0, 1});
  Tensor<double> g({2, 2}, std::vector<double>{0.25, 0.75, 0.25, 0.75});
  Tensor<bool> active({2}, std::vector<bool>{true, false});
  EXPECT_EQ(moe(x, idx, g, wIn, wOut, active).data,
            (std::vector<double>{14.25, 0.0}));
  // gelu(1) = (1 + erf(1/sqrt 2)) / 2, silu(1) = 1 / (1 + e^-1).
  EXPECT_TRUE(
      closeTo(activate(Activation::Gelu, 1.0), 0.8413447460685429, 1e-15));
  EXPECT_TRUE(
      closeTo(activate(Activation::Silu, 1.0), 0.7310585786300049, 1e-15));
  EXPECT_EQ(activate(Activation::Relu, -2.0), 0.0);
  Tensor<int32_t> bad({2, 2}, std::vector<int32_t>{0, 2, 0, 1});
  EXPECT_THROW(moe(x, bad, g, wIn, wOut), std::invalid_argument);
}

TEST(ReferenceExperts, TopKSelectsKDistinctExpertsWithRenormalisedGates) {
  Rng rng(28);
  const int64_t tokens = 20, experts = 8;
  Tensor<double> probs({tokens, experts});
  // Softmax rows; token 3 has a tie between experts 2 and 5.
  for (int64_t t = 0; t < tokens; ++t) {
    double sum = 0.0;
    for (int64_t e = 0; e < experts; ++e)
      sum += probs(t, e) =
          t == 3 && e == 5 ? probs(t, 2) : std::exp(rng.uniform(-3.0, 3.0));
    for (int64_t e = 0; e < experts; ++e)
      probs(t, e) /= sum;
  }
  const double eps = 1e-6;
  for (int64_t k = 1; k <= experts; ++k) {
    RouteResult r = routeTopK(probs, k, eps);
    for (int64_t t = 0; t < tokens; ++t) {
      // The dense reference: every expert sorted by (probability desc,
      // index asc).
      std::vector<int32_t> order(experts);
      for (int32_t e = 0; e < experts; ++e)
        order[e] = e;
      std::sort(order.begin(), order.end(), [&](int32_t x, int32_t y) {
        return probs(t, x) > probs(t, y) ||
               (probs(t, x) == probs(t, y) && x < y);
      });
      std::vector<int32_t> chosen(r.indices.data.begin() + t * k,
                                  r.indices.data.begin() + (t + 1) * k);
      EXPECT_EQ(chosen, std::vector<int32_t>(order.begin(), order.begin() + k));
      std::vector<int32_t> sorted = chosen;
      std::sort(sorted.begin(), sorted.end());
      EXPECT_EQ(std::unique(sorted.begin(), sorted.end()), sorted.end());
      double selected = 0.0, gateSum = 0.0;
      for (int64_t j = 0; j < k; ++j) {
        selected += probs(t, chosen[j]);
        gateSum += r.gates(t, j);
      }
      // sum g = S / (S + eps): within eps / S of 1 (1e-6 when S ~ 1).
      EXPECT_TRUE(closeTo(gateSum, selected / (selected + eps)));
      EXPECT_LE(1.0 - gateSum, eps / selected);
      if (k == experts)
        EXPECT_LE(1.0 - gateSum, 1.0001e-6);
    }
  }
}

TEST(ReferenceExperts, OneExpertTopOneEqualsDenseFFN) {
  Rng rng(29);
  const int64_t tokens = 5, d = 4, hidden = 6;
  Tensor<double> x = rng.tensor({tokens, d});
  Tensor<double> w1 = rng.tensor({1, d, hidden}),
                 w2 = rng.tensor({1, hidden, d});
  for (Activation act :
       {Activation::Relu, Activation::Gelu, Activation::Silu}) {
    Tensor<double> dense({tokens, d});
    for (int64_t t = 0; t < tokens; ++t)
      for (int64_t c = 0; c < hidden; ++c) {
        double s = 0.0;
        for (int64_t m = 0; m < d; ++m)
          s += x(t, m) * w1(0, m, c);
        for (int64_t m = 0; m < d; ++m)
          dense(t, m) += activate(act, s) * w2(0, c, m);
      }
    RouteResult route = routeTopK(Tensor<double>({tokens, 1}, 1.0), 1);
    EXPECT_EQ(route.indices.data, std::vector<int32_t>(tokens, 0));
    Tensor<double> one({tokens, 1}, 1.0);
    EXPECT_TRUE(allClose(moe(x, route.indices, one, w1, w2, {}, act), dense));
    // The routed gate is 1 / (1 + eps), not 1.
    Tensor<double> scaled = dense;
    for (double &e : scaled.data)
      e /= 1.0 + 1e-6;
    EXPECT_TRUE(
        allClose(moe(x, route.indices, route.gates, w1, w2, {}, act), scaled));
  }
}

} // namespace
