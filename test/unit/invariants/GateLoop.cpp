//===- GateLoop.cpp - GateLoop's invariants on the compiled kernels -------===//
//
// Part of the Recur project.
//
// One group of tests per line under "What tests must show" in
// ../shared/reference/gateloop.md (numbered 1-9 in its order), on kernels
// recurc compiled at build time (GateLoop.cmake):
//   - examples/gateloop.recur (GateLoop: gla chunked in log space, d_k = 3,
//     d_v = 4, H = 2, D = 8; GateLoopMaxHeaded: linear_scan, d_k = 1, H = D),
//     examples/custom_scan.recur (GateLoopScan: the operator (13) as a user
//     combine), examples/retnet.recur (Retention, RetentionRot),
//     examples/lru.recur (LRU);
//   - specs/gateloop_modes.recur: the recurrence (7)-(8) on raw inputs
//     q, k, v, |a| = m, arg a = p in each mode: GLRecurrent (gla recurrent),
//     GLChunked{1,3,16,64} (gla chunked, log space), GLLinearScan
//     (linear_scan over the outer-product state), GLUserScan (scan with the
//     operator (13)), GLAttention{17,64} (surrogate attention (17-21) with
//     einsum over the masked cumulative decay), GLRealDecay (real a),
//     GLOpScan (the bare operator on leaves with any init leaf) and the
//     swapped-operator variants GLUserScanSwapped / GLOpScanSwapped.
// Three executables run this file (GateLoop.cmake):
//   RecurGateLoopInvariantTests     everything in float64 (--f64); the
//                                   gateloop_modes layers at H = 2, d_k = 3,
//                                   d_v = 4 (suite GateLoop);
//   RecurGateLoopDk1InvariantTests  the tests on the gateloop_modes layers
//                                   again at H = 4, d_k = d_v = 1, the
//                                   paper's max-headed case (suite
//                                   GateLoopDk1, RECUR_GATELOOP_DK1);
//   RecurGateLoopF32InvariantTests  line 7 on the same layers compiled in
//                                   float32 (suite GateLoopF32,
//                                   RECUR_GATELOOP_F32).
// The float64 oracle (Eq. 7-8 as the O(l) loop in std::complex<double>)
// and its reverse sweep (the reference's "Backward") are written here.
//
// Reference line -> tests:
//  1 recurrent == scan == attention (f64, l <= 64, 1e-12; d_k = 1 and
//    d_k > 1, d_v != d_k)
//      GateLoop.Inv1_RecurrentEqualsScanEqualsAttention (d_k = 3, d_v = 4),
//      GateLoopDk1.Inv1_RecurrentEqualsScanEqualsAttention (d_k = d_v = 1):
//        gla recurrent, gla chunked (16, 64), linear_scan, the user-combine
//        scan and the surrogate attention (l = 17, 64), outputs and final
//        states, against each other and the oracle;
//      Inv1_ExampleLayersMatchOracle (GateLoop, GateLoopAttention (the
//        example's attention mode), GateLoopMaxHeaded == GateLoopScan, from
//        x and params)
//  2 operator: associativity, identity, non-commutativity (a swapped
//    operator must fail on time-varying a)
//      Inv2_OperatorAssociative, Inv2_OperatorIdentity,
//      Inv2_OperatorNotCommutative, Inv2_SwappedOperatorFailsOnTimeVaryingA
//  3 lengths 1, 2, primes, non-powers of two, 8k-64k vs a float64 oracle;
//    heads/batch independent
//      Inv3_ShortAndOddLengthsMatchFloat64Oracle,
//      Inv3_LongLengths8kTo64kMatchFloat64Oracle,
//      Inv3_HeadsAndBatchRowsIndependent
//  4 chunking/streaming: any chunk size or split point; prefix + carried h
//    + suffix == one pass
//      Inv4_AnyChunkSizeGivesSameResult (chunks 1, 3, 16, 64),
//      Inv4_PrefixCarriedStateSuffixEqualsOnePass (every split point),
//      Inv4_StepwiseEqualsForward
//  5 reductions to RetNet, S4D/LRU convolution, real decays
//      Inv5_ReducesToRetNet_GateLoopWithConstantDecay,
//      Inv5_ReducesToRetNet_RetentionLayer, Inv5_ReducesToRotatedRetNet,
//      Inv5_ReducesToS4DConvolution, Inv5_LRUIsConvolutionWithPowersOfLambda,
//      Inv5_RealDecaysEqualZeroPhase
//  6 reset: |a_r| = 0 cuts the dependence on inputs before r, gradients
//    exactly 0, no NaN
//      Inv6_ZeroDecayCutsDependenceOnPast, Inv6_ZeroDecayGradientsExactlyZero,
//      Inv6_SigmoidDrivenToZeroResetsExampleLayer
//  7 float32, l >= 1000, sigmoid magnitudes: no NaN/inf in scan mode;
//    log-space chunked matches float64 (RecurGateLoopF32InvariantTests)
//      Inv7_Float32ScanModeFiniteOverLongSequences,
//      Inv7_Float32LogSpaceChunkedMatchesFloat64,
//      Inv7_Float32SurrogateAttentionUnderflows (the control: the mode the
//        reference warns about does fail where log space does not)
//  8 gradients: central finite differences (f64); reverse-scan backward ==
//    autodiff of the loop
//      Inv8_BackwardMatchesFiniteDifferences_RawInputs,
//      Inv8_BackwardMatchesFiniteDifferences_ExampleParams,
//      Inv8_ReverseScanBackwardEqualsAutodiffOfLoop
//  9 tolerances: relative ~1e-5 (f32), ~1e-12 (f64), never loose absolute
//      followed by every test: f64 comparisons are normwise relative
//      (relErr) at 1e-12, f32 ones at 1e-5; structural claims (identity
//      leaves, independence, reset, zero gradients) are bitwise / exactly
//      0. The one exception is the finite-difference check (line 8), whose
//      own truncation and rounding error bound what it can show: it uses
//      Richardson-extrapolated central differences at a relative 1e-8
//      (reason at kTolFD), while the same backward kernels are held to
//      1e-12 against the reverse-sweep oracle.
//
// Not covered / partial:
//  - The language cannot mark a user combine associative or give it an
//    identity, so a compiled recur.scan runs sequentially (and on the CPU
//    so does linear_scan). The operator's associativity is shown by
//    regrouping applications of the compiled operator through the scan's
//    init leaf (GLOpScan), and by gla chunked (a re-associated evaluation:
//    chunk summaries combined across chunks) equalling the loop; no
//    tree-shaped parallel scan of the user combine is run.
//  - Gradients are checked with finite differences against real raw
//    inputs/params only (as the reference asks); the complex initial-state
//    cotangent is compared with the reverse-sweep oracle only.
//  - The surrogate attention needs the mask and hence T at compile time:
//    it is compiled at l = 17 and l = 64 only.
//
//===----------------------------------------------------------------------===//

#include "Harness.h"

#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>

#ifdef RECUR_GATELOOP_F32
#include "GLAttention64.h"
#include "GLChunked64.h"
#include "GLLinearScan.h"
#include "GLUserScan.h"
#include "GateLoop.h"
#include "GateLoopMaxHeaded.h"
#include "GateLoopScan.h"
#else
#include "GLAttention17.h"
#include "GLAttention64.h"
#include "GLChunked1.h"
#include "GLChunked16.h"
#include "GLChunked3.h"
#include "GLChunked64.h"
#include "GLLinearScan.h"
#include "GLOpScan.h"
#include "GLOpScanSwapped.h"
#include "GLRealDecay.h"
#include "GLRecurrent.h"
#include "GLUserScan.h"
#include "GLUserScanSwapped.h"
#include "GateLoop.h"
#include "GateLoopAttention.h"
#include "GateLoopMaxHeaded.h"
#include "GateLoopScan.h"
#include "LRU.h"
#include "Retention.h"
#include "RetentionRot.h"
#endif

using namespace recur::invariants;

namespace {

using cd = std::complex<double>;
constexpr double kPi = 3.14159265358979323846;

/// The compile-time dims of the gateloop_modes layers in this executable
/// (GateLoop.cmake): heads, d_k and d_v.
#ifdef RECUR_GATELOOP_DK1
constexpr int64_t kH = 4, kK = 1, kV = 1;
#define GL_SUITE GateLoopDk1
#else
constexpr int64_t kH = 2, kK = 3, kV = 4;
#ifdef RECUR_GATELOOP_F32
#define GL_SUITE GateLoopF32
#else
#define GL_SUITE GateLoop
#endif
#endif
/// The GLOpScan layers' channels.
[[maybe_unused]] constexpr int64_t kC = 4;

/// Normwise relative tolerance of a float64 comparison between two
/// evaluation orders of the same sums (rounding only; the values are O(1)
/// and the decays below 1, so the error stays a small multiple of 2^-52).
[[maybe_unused]] constexpr double kTolF64 = 1e-12;

//===----------------------------------------------------------------------===//
// Raw inputs and the float64 oracle
//===----------------------------------------------------------------------===//

/// The raw inputs of the gateloop_modes layers, float64, [B, H, T, K] (v:
/// [B, H, T, V]); the decay is a = m exp(i p).
struct Raw {
  int64_t B, H, T, K, V;
  Tensor q, k, v, m, p;
};

Raw makeRaw(int64_t B, int64_t T, Rng &rng, double mlo = 0.5,
            double mhi = 1.0) {
  const int64_t H = kH, K = kK, V = kV;
  Raw r{B,
        H,
        T,
        K,
        V,
        Tensor(RECUR_F64, {B, H, T, K}),
        Tensor(RECUR_F64, {B, H, T, K}),
        Tensor(RECUR_F64, {B, H, T, V}),
        Tensor(RECUR_F64, {B, H, T, K}),
        Tensor(RECUR_F64, {B, H, T, K})};
  fillNormal(r.q, rng);
  fillNormal(r.k, rng);
  fillNormal(r.v, rng);
  for (int64_t i = 0; i < r.m.numel(); ++i) {
    r.m.set(i, mlo + (mhi - mlo) * rng.uniform());
    r.p.set(i, kPi * (2 * rng.uniform() - 1));
  }
  return r;
}

Dims dimsOf(const Raw &r) {
  return {{"B", r.B}, {"H", r.H}, {"T", r.T}, {"K", r.K}, {"V", r.V}};
}

/// `t` converted to dtype `d` (values through double).
Tensor convert(const Tensor &t, recur_dtype d) {
  Tensor out(d, t.shape);
  for (int64_t i = 0; i < t.numel(); ++i)
    for (int c = 0; c < out.components(); ++c)
      out.set(i, c < t.components() ? t.at(i, c) : 0.0, c);
  return out;
}

/// Whether the layer has an input named `name`.
bool hasInput(const Layer &layer, const char *name) {
  const recur_layer_desc *d = layer.desc();
  for (int32_t i = 0; i < d->num_args; ++i)
    if (d->args[i].role == RECUR_ROLE_INPUT &&
        std::strcmp(d->args[i].name, name) == 0)
      return true;
  return false;
}

/// The layer's inputs holding `r` (in the layer's dtype and order).
std::vector<Tensor> feed(const Layer &layer, const Raw &r) {
  std::vector<Tensor> in = layer.inputs(dimsOf(r));
  auto put = [&](const char *name, const Tensor &t) {
    if (hasInput(layer, name)) {
      int i = layer.input(name);
      in[i] = convert(t, in[i].dtype);
    }
  };
  put("q", r.q);
  put("k", r.k);
  put("v", r.v);
  put("m", r.m);
  put("p", r.p);
  return in;
}

/// `r` as the layer sees it (rounded to its dtype), for the oracle.
[[maybe_unused]] Raw rounded(const Layer &layer, const Raw &r) {
  std::vector<Tensor> in = feed(layer, r);
  Raw out = r;
  out.q = convert(in[layer.input("q")], RECUR_F64);
  out.k = convert(in[layer.input("k")], RECUR_F64);
  out.v = convert(in[layer.input("v")], RECUR_F64);
  out.m = convert(in[layer.input("m")], RECUR_F64);
  out.p = convert(in[layer.input("p")], RECUR_F64);
  return out;
}

/// A random complex state [B, H, K, V] (c128).
[[maybe_unused]] Tensor randomState(const Raw &r, Rng &rng) {
  Tensor s(RECUR_C128, {r.B, r.H, r.K, r.V});
  fillNormal(s, rng);
  return s;
}

cd decay(const Raw &r, int64_t b, int64_t h, int64_t t, int64_t i) {
  return std::polar(r.m({b, h, t, i}), r.p({b, h, t, i}));
}

/// What the oracle computes: y [B, H, T, V] (f64) and the final state
/// [B, H, K, V] (c128), and every state S_t (for the reverse sweep).
struct Ref {
  Tensor y, S;
  std::vector<cd> all; ///< [B, H, T, K, V]
};

/// Eq. (7)-(8) as the O(l) loop in float64, from S0 (zero when null).
Ref oracle(const Raw &r, const Tensor *S0 = nullptr) {
  Ref o{Tensor(RECUR_F64, {r.B, r.H, r.T, r.V}),
        Tensor(RECUR_C128, {r.B, r.H, r.K, r.V}),
        {}};
  o.all.resize(r.B * r.H * r.T * r.K * r.V);
  for (int64_t b = 0; b < r.B; ++b)
    for (int64_t h = 0; h < r.H; ++h) {
      std::vector<cd> S(r.K * r.V);
      if (S0)
        for (int64_t i = 0; i < r.K * r.V; ++i) {
          int64_t at = S0->offset({b, h, i / r.V, i % r.V});
          S[i] = cd(S0->at(at, 0), S0->at(at, 1));
        }
      for (int64_t t = 0; t < r.T; ++t) {
        for (int64_t i = 0; i < r.K; ++i) {
          cd a = decay(r, b, h, t, i);
          for (int64_t j = 0; j < r.V; ++j)
            S[i * r.V + j] =
                a * S[i * r.V + j] + r.k({b, h, t, i}) * r.v({b, h, t, j});
        }
        for (int64_t j = 0; j < r.V; ++j) {
          double y = 0;
          for (int64_t i = 0; i < r.K; ++i)
            y += r.q({b, h, t, i}) * S[i * r.V + j].real();
          o.y.set(o.y.offset({b, h, t, j}), y);
        }
        std::copy(S.begin(), S.end(),
                  o.all.begin() + ((b * r.H + h) * r.T + t) * r.K * r.V);
      }
      for (int64_t i = 0; i < r.K * r.V; ++i) {
        int64_t at = o.S.offset({b, h, i / r.V, i % r.V});
        o.S.set(at, S[i].real(), 0);
        o.S.set(at, S[i].imag(), 1);
      }
    }
  return o;
}

/// The reference's reverse linear scan (section "Backward") in float64:
/// the gradients of L = <dy, y> + Re<dS, S_final> (PyTorch's convention
/// for the complex state) with respect to q, k, v, m, p and S0.
struct RefGrad {
  Tensor dq, dk, dv, dm, dp, dS0;
};

[[maybe_unused]] RefGrad oracleGrad(const Raw &r, const Tensor &S0,
                                    const Tensor &dy, const Tensor &dS) {
  Ref fwd = oracle(r, &S0);
  RefGrad g{Tensor(RECUR_F64, r.q.shape), Tensor(RECUR_F64, r.k.shape),
            Tensor(RECUR_F64, r.v.shape), Tensor(RECUR_F64, r.m.shape),
            Tensor(RECUR_F64, r.p.shape), Tensor(RECUR_C128, S0.shape)};
  int64_t KV = r.K * r.V;
  for (int64_t b = 0; b < r.B; ++b)
    for (int64_t h = 0; h < r.H; ++h) {
      auto state = [&](int64_t t, int64_t i) -> cd {
        if (t < 0) {
          int64_t at = S0.offset({b, h, i / r.V, i % r.V});
          return cd(S0.at(at, 0), S0.at(at, 1));
        }
        return fwd.all[((b * r.H + h) * r.T + t) * KV + i];
      };
      std::vector<cd> G(KV);
      for (int64_t i = 0; i < KV; ++i) {
        int64_t at = dS.offset({b, h, i / r.V, i % r.V});
        G[i] = cd(dS.at(at, 0), dS.at(at, 1));
      }
      for (int64_t t = r.T - 1; t >= 0; --t) {
        // G_t = q_t dy_t^T + conj(a_{t+1}) G_{t+1} (the second term was
        // applied at the end of step t + 1; dS enters at t = T - 1).
        for (int64_t i = 0; i < r.K; ++i)
          for (int64_t j = 0; j < r.V; ++j)
            G[i * r.V + j] += r.q({b, h, t, i}) * dy({b, h, t, j});
        for (int64_t i = 0; i < r.K; ++i) {
          double dq = 0, dk = 0;
          cd da = 0;
          for (int64_t j = 0; j < r.V; ++j) {
            dq += dy({b, h, t, j}) * state(t, i * r.V + j).real();
            dk += G[i * r.V + j].real() * r.v({b, h, t, j});
            da += G[i * r.V + j] * std::conj(state(t - 1, i * r.V + j));
          }
          cd a = decay(r, b, h, t, i);
          cd unit = a / std::abs(a);
          g.dq.set(g.dq.offset({b, h, t, i}), dq);
          g.dk.set(g.dk.offset({b, h, t, i}), dk);
          // a = m e^{ip}: dL/dm = Re(conj(da) e^{ip}), dL/dp = Re(conj(da) i a)
          g.dm.set(g.dm.offset({b, h, t, i}), (std::conj(da) * unit).real());
          g.dp.set(g.dp.offset({b, h, t, i}),
                   (std::conj(da) * cd(0, 1) * a).real());
        }
        for (int64_t j = 0; j < r.V; ++j) {
          double dv = 0;
          for (int64_t i = 0; i < r.K; ++i)
            dv += G[i * r.V + j].real() * r.k({b, h, t, i});
          g.dv.set(g.dv.offset({b, h, t, j}), dv);
        }
        for (int64_t i = 0; i < r.K; ++i) {
          cd ca = std::conj(decay(r, b, h, t, i));
          for (int64_t j = 0; j < r.V; ++j)
            G[i * r.V + j] *= ca;
        }
      }
      for (int64_t i = 0; i < KV; ++i) { // dS0 = conj(a_0) G_0
        int64_t at = g.dS0.offset({b, h, i / r.V, i % r.V});
        g.dS0.set(at, G[i].real(), 0);
        g.dS0.set(at, G[i].imag(), 1);
      }
    }
  return g;
}

//===----------------------------------------------------------------------===//
// The example layers (x and params -> raw inputs)
//===----------------------------------------------------------------------===//

/// The raw per-head inputs an example layer (GateLoop, GateLoopMaxHeaded,
/// GateLoopScan) derives from x [B, T, D] and its params, computed here in
/// float64: q = heads(x Wq), ..., m = sigmoid(x Wg), p = x Wth (24-25).
[[maybe_unused]] Raw project(const Layer &layer,
                             const std::vector<Tensor> &inputs,
                             const std::vector<Tensor> &params, int64_t H,
                             int64_t dk, int64_t dv) {
  const Tensor &x = inputs[layer.input("x")];
  int64_t B = x.shape[0], T = x.shape[1], D = x.shape[2];
  Raw r{B,
        H,
        T,
        dk,
        dv,
        Tensor(RECUR_F64, {B, H, T, dk}),
        Tensor(RECUR_F64, {B, H, T, dk}),
        Tensor(RECUR_F64, {B, H, T, dv}),
        Tensor(RECUR_F64, {B, H, T, dk}),
        Tensor(RECUR_F64, {B, H, T, dk})};
  auto proj = [&](const char *w, int64_t b, int64_t t, int64_t col) {
    const Tensor &W = params[layer.param(w)];
    double s = 0;
    for (int64_t d = 0; d < D; ++d)
      s += x({b, t, d}) * W({d, col});
    return s;
  };
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < T; ++t) {
        for (int64_t i = 0; i < dk; ++i) {
          int64_t c = h * dk + i, o = r.q.offset({b, h, t, i});
          r.q.set(o, proj("Wq", b, t, c));
          r.k.set(o, proj("Wk", b, t, c));
          r.m.set(o, 1 / (1 + std::exp(-proj("Wg", b, t, c))));
          r.p.set(o, proj("Wth", b, t, c));
        }
        for (int64_t j = 0; j < dv; ++j)
          r.v.set(r.v.offset({b, h, t, j}), proj("Wv", b, t, h * dv + j));
      }
  return r;
}

/// merge_heads of the oracle's y [B, H, T, dv] -> [B, T, H * dv].
[[maybe_unused]] Tensor mergeHeads(const Tensor &y) {
  int64_t B = y.shape[0], H = y.shape[1], T = y.shape[2], V = y.shape[3];
  Tensor out(RECUR_F64, {B, T, H * V});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t j = 0; j < V; ++j)
          out.set(out.offset({b, t, h * V + j}), y({b, h, t, j}));
  return out;
}

/// The example layer's state (S [B, H, dk, dv] or h [B, D] = [B, D, 1, 1])
/// as the oracle's [B, H, K, V].
[[maybe_unused]] Tensor asState(const Tensor &s, const Raw &r) {
  Tensor out(RECUR_C128, {r.B, r.H, r.K, r.V});
  for (int64_t i = 0; i < out.numel(); ++i)
    for (int c = 0; c < 2; ++c)
      out.set(i, s.at(i, c), c);
  return out;
}

/// Example-layer params at a scale that makes the sigmoid magnitudes spread
/// over (0, 1) and the phases over several radians.
[[maybe_unused]] std::vector<Tensor> exampleParams(const Layer &layer, Rng &rng,
                                                   double std) {
  std::vector<Tensor> params = layer.params(rng, std);
  return params;
}

#ifndef RECUR_GATELOOP_F32

/// The layers of one mode comparison, by name, with whether each carries a
/// state through `forward` (all do).
struct Mode {
  const char *name;
  const recur_layer_desc *desc;
};

std::vector<Mode> sequenceModes() {
  return {{"GLRecurrent", recur_GLRecurrent_layer()},
          {"GLChunked16", recur_GLChunked16_layer()},
          {"GLChunked64", recur_GLChunked64_layer()},
          {"GLLinearScan", recur_GLLinearScan_layer()},
          {"GLUserScan", recur_GLUserScan_layer()}};
}

/// Checks every mode (and the surrogate attention of length r.T when
/// `attention` is given) against the oracle from a random carried state.
void checkModes(const Raw &r, const recur_layer_desc *attention, Rng &rng) {
  Tensor S0 = randomState(r, rng);
  Ref ref = oracle(r, &S0);
  std::vector<Mode> modes = sequenceModes();
  if (attention)
    modes.push_back({"GLAttention", attention});
  Result recurrent;
  for (const Mode &mode : modes) {
    SCOPED_TRACE(mode.name);
    Layer layer(mode.desc);
    Result res = layer.forward(feed(layer, r), {}, {S0});
    EXPECT_LE(relErr(res.outputs[0], ref.y), kTolF64);
    EXPECT_LE(relErr(res.states[0], ref.S), kTolF64);
    if (recurrent.outputs.empty()) {
      recurrent = res;
    } else {
      EXPECT_LE(relErr(res.outputs[0], recurrent.outputs[0]), kTolF64);
      EXPECT_LE(relErr(res.states[0], recurrent.states[0]), kTolF64);
    }
  }
}

//===----------------------------------------------------------------------===//
// 1. recurrent == scan == attention mode
//===----------------------------------------------------------------------===//

TEST(GL_SUITE, Inv1_RecurrentEqualsScanEqualsAttention) {
  // d_k = 3 != d_v = 4 (RecurGateLoopInvariantTests) or d_k = d_v = 1, four
  // heads (RecurGateLoopDk1InvariantTests); two rows; l = 17 and l = 64.
  Rng rng(11);
  checkModes(makeRaw(2, 17, rng), recur_GLAttention17_layer(), rng);
  checkModes(makeRaw(2, 64, rng, 0.7), recur_GLAttention64_layer(), rng);
}

#ifndef RECUR_GATELOOP_DK1
/// Runs an example layer from a random carried state and compares it with
/// the oracle on the projections computed here.
void checkExample(const recur_layer_desc *desc, int64_t H, int64_t dk,
                  int64_t dv, int64_t T, Rng &rng, Result *out = nullptr) {
  Layer layer(desc);
  auto params = exampleParams(layer, rng, 0.5);
  auto inputs = layer.randomInputs({{"B", 2}, {"T", T}}, rng);
  std::vector<Tensor> states = layer.states({{"B", 2}});
  fillNormal(states[0], rng);
  Raw r = project(layer, inputs, params, H, dk, dv);
  Tensor S0 = asState(states[0], r);
  Ref ref = oracle(r, &S0);
  Result res = layer.forward(inputs, params, states);
  EXPECT_LE(relErr(res.outputs[0], mergeHeads(ref.y)), kTolF64);
  EXPECT_LE(relErr(asState(res.states[0], r), ref.S), kTolF64);
  if (out)
    *out = res;
}

TEST(GL_SUITE, Inv1_ExampleLayersMatchOracle) {
  // GateLoop: gla chunked, d_k = 3, d_v = 4 (D = 8, H = 2).
  {
    SCOPED_TRACE("GateLoop");
    Rng rng(13);
    checkExample(recur_GateLoop_layer(), 2, 3, 4, 37, rng);
  }
  // GateLoopAttention: the attention mode (17)-(21) of the same layer, at
  // its compile-time T = 37, from a random carried state.
  {
    SCOPED_TRACE("GateLoopAttention");
    Rng rng(13);
    checkExample(recur_GateLoopAttention_layer(), 2, 3, 4, 37, rng);
  }
  // The max-headed layer (linear_scan) and the user-combine scan on the
  // same x and params: both equal the oracle and each other.
  Result lin, user;
  {
    SCOPED_TRACE("GateLoopMaxHeaded");
    Rng rng(14);
    checkExample(recur_GateLoopMaxHeaded_layer(), 8, 1, 1, 37, rng, &lin);
  }
  {
    SCOPED_TRACE("GateLoopScan");
    Rng rng(14);
    checkExample(recur_GateLoopScan_layer(), 8, 1, 1, 37, rng, &user);
  }
  EXPECT_LE(relErr(user.outputs[0], lin.outputs[0]), kTolF64);
}

//===----------------------------------------------------------------------===//
// 2. The operator (13)
//===----------------------------------------------------------------------===//

/// Leaves (a, b) of GLOpScan [B = 1, T, C] and its init leaf.
struct Leaves {
  std::vector<Tensor> in;     ///< ar, ai, br, bi
  std::vector<Tensor> states; ///< A0, h0
};

Leaves randomLeaves(const Layer &layer, int64_t T, int64_t C, Rng &rng) {
  Leaves l{layer.inputs({{"B", 1}, {"T", T}, {"C", C}}),
           layer.states({{"B", 1}, {"C", C}})};
  for (Tensor &t : l.in)
    fillNormal(t, rng, 0.7);
  for (Tensor &t : l.states)
    fillNormal(t, rng, 0.7);
  return l;
}

/// The final (A, h) of a GLOpScan run: init . x_0 . x_1 ... (left fold).
std::vector<Tensor> fold(const Layer &layer, const std::vector<Tensor> &in,
                         const std::vector<Tensor> &states) {
  return layer.forward(in, {}, states).states;
}

/// The leaves `states` (A, h) as a one-step input of GLOpScan.
std::vector<Tensor> asLeaf(const Layer &layer,
                           const std::vector<Tensor> &states) {
  int64_t C = states[0].shape[1];
  std::vector<Tensor> in = layer.inputs({{"B", 1}, {"T", 1}, {"C", C}});
  for (int64_t c = 0; c < C; ++c)
    for (int part = 0; part < 2; ++part) {
      in[0 + 2 * part].set(c, states[part].at(c, 0));
      in[1 + 2 * part].set(c, states[part].at(c, 1));
    }
  return in;
}

TEST(GL_SUITE, Inv2_OperatorAssociative) {
  Layer op(recur_GLOpScan_layer());
  Rng rng(21);
  for (int64_t n : {1, 2, 5, 13}) {
    for (int64_t m : {1, 3, 8}) {
      // p . X . Y with X, Y runs of n and m leaves: as one left fold over
      // [X; Y] from p, and regrouped as (p . X) . (fold of Y from e).
      Leaves x = randomLeaves(op, n, kC, rng), y = randomLeaves(op, m, kC, rng);
      std::vector<Tensor> xy;
      for (int i = 0; i < 4; ++i)
        xy.push_back(concat({x.in[i], y.in[i]}, 1));
      std::vector<Tensor> left = fold(op, xy, x.states);
      std::vector<Tensor> pX = fold(op, x.in, x.states);
      std::vector<Tensor> Y = fold(op, y.in, {}); // from the identity (1, 0)
      std::vector<Tensor> right = fold(op, asLeaf(op, Y), pX);
      for (int s = 0; s < 2; ++s)
        EXPECT_LE(relErr(right[s], left[s]), kTolF64) << n << " " << m;
    }
  }
  // Three single elements p1, p2, p3 (random (A, h) pairs):
  // (p1 . p2) . p3 == p1 . (p2 . p3).
  Leaves a = randomLeaves(op, 1, kC, rng), b = randomLeaves(op, 1, kC, rng),
         c = randomLeaves(op, 1, kC, rng);
  const std::vector<Tensor> &p1 = a.states, &p2 = b.states, &p3 = c.states;
  std::vector<Tensor> lhs =
      fold(op, asLeaf(op, p3), fold(op, asLeaf(op, p2), p1));
  std::vector<Tensor> p23 = fold(op, asLeaf(op, p3), p2);
  std::vector<Tensor> rhs = fold(op, asLeaf(op, p23), p1);
  for (int s = 0; s < 2; ++s)
    EXPECT_LE(relErr(rhs[s], lhs[s]), kTolF64);
}

TEST(GL_SUITE, Inv2_OperatorIdentity) {
  Layer op(recur_GLOpScan_layer());
  Rng rng(22);
  Leaves x = randomLeaves(op, 9, kC, rng);
  // Left identity: e . x = x (the scan from the default init (1, 0) returns
  // the leaf itself): exact, 1 * a and a * 0 + b round to a and b.
  std::vector<Tensor> first;
  for (int i = 0; i < 4; ++i)
    first.push_back(slice(x.in[i], 1, 0, 1));
  Result fromE = op.forward(first, {});
  for (int i = 0; i < 4; ++i)
    EXPECT_TRUE(sameBits(fromE.outputs[i], slice(x.in[i], 1, 0, 1))) << i;
  // Right identity: x . e = x (the leaf (1, 0) after the init leaf x).
  std::vector<Tensor> e = op.inputs({{"B", 1}, {"T", 1}, {"C", kC}});
  e[0].fill(1.0);
  Result xe = op.forward(e, {}, x.states);
  for (int s = 0; s < 2; ++s)
    EXPECT_TRUE(sameBits(xe.states[s], x.states[s])) << s;
  // Inserting e anywhere in a sequence leaves every other output as it was
  // and repeats the previous one at its position (exact).
  Result base = op.forward(x.in, {}, x.states);
  for (int64_t at : {0, 4, 9}) {
    // x_0 .. x_{at-1}, e, x_at .. x_8
    auto withE = [&](const Tensor &t, const Tensor &leaf) {
      std::vector<Tensor> parts;
      if (at > 0)
        parts.push_back(slice(t, 1, 0, at));
      parts.push_back(leaf);
      if (at < 9)
        parts.push_back(slice(t, 1, at, 9 - at));
      return concat(parts, 1);
    };
    std::vector<Tensor> in;
    for (int i = 0; i < 4; ++i)
      in.push_back(withE(x.in[i], e[i]));
    Result ins = op.forward(in, {}, x.states);
    for (int i = 0; i < 4; ++i) {
      std::vector<Tensor> parts;
      if (at > 0)
        parts.push_back(slice(ins.outputs[i], 1, 0, at));
      if (at < 9)
        parts.push_back(slice(ins.outputs[i], 1, at + 1, 9 - at));
      EXPECT_TRUE(sameBits(concat(parts, 1), base.outputs[i])) << at << i;
      // at the identity's position: the previous prefix repeated
      Tensor prev = at > 0 ? slice(base.outputs[i], 1, at - 1, 1) : Tensor();
      if (at > 0)
        EXPECT_TRUE(sameBits(slice(ins.outputs[i], 1, at, 1), prev));
    }
    for (int s = 0; s < 2; ++s)
      EXPECT_TRUE(sameBits(ins.states[s], base.states[s])) << at;
    // Control: a leaf (1, b) with b != 0 is not an identity.
    std::vector<Tensor> notE = in;
    notE[2].set(notE[2].offset({0, at, 0}), 1e-3);
    Result bad = op.forward(notE, {}, x.states);
    EXPECT_GT(maxAbsDiff(bad.states[1], base.states[1]), 0.0) << at;
  }
}

TEST(GL_SUITE, Inv2_OperatorNotCommutative) {
  Layer op(recur_GLOpScan_layer());
  Rng rng(23);
  Leaves x = randomLeaves(op, 1, kC, rng), y = randomLeaves(op, 1, kC, rng);
  // x . y (init x, leaf y) against y . x (init y, leaf x), x and y random
  // (A, h) pairs.
  std::vector<Tensor> xy = fold(op, asLeaf(op, y.states), x.states);
  std::vector<Tensor> yx = fold(op, asLeaf(op, x.states), y.states);
  // The A component is a product, which commutes (to rounding) ...
  EXPECT_LE(relErr(xy[0], yx[0]), kTolF64);
  // ... the h component does not: A_y h_x + h_y != A_x h_y + h_x.
  EXPECT_GT(relErr(xy[1], yx[1]), 1e-2);
  // Hand-computed check of x . y = (A_x A_y, A_y h_x + h_y) per channel
  // (one complex product and sum: a few ulps).
  auto z = [](const Tensor &t, int64_t c) {
    return cd(t.at(c, 0), t.at(c, 1));
  };
  for (int64_t c = 0; c < kC; ++c) {
    cd h = z(y.states[0], c) * z(x.states[1], c) + z(y.states[1], c);
    cd A = z(x.states[0], c) * z(y.states[0], c);
    double scale = std::abs(z(y.states[0], c)) * std::abs(z(x.states[1], c)) +
                   std::abs(z(y.states[1], c));
    EXPECT_LE(std::abs(z(xy[1], c) - h), 1e-14 * scale) << c;
    EXPECT_LE(std::abs(z(xy[0], c) - A), 1e-14 * std::abs(A)) << c;
  }
  // The swapped operator is a different scan on the same leaves.
  Layer swapped(recur_GLOpScanSwapped_layer());
  Leaves seq = randomLeaves(op, 12, kC, rng);
  Result good = op.forward(seq.in, {}, seq.states);
  Result bad = swapped.forward(seq.in, {}, seq.states);
  EXPECT_GT(relErr(bad.outputs[2], good.outputs[2]), 1e-2);
}

TEST(GL_SUITE, Inv2_SwappedOperatorFailsOnTimeVaryingA) {
  Rng rng(24);
  Raw r = makeRaw(2, 24, rng);
  Ref ref = oracle(r);
  Layer good(recur_GLUserScan_layer()), bad(recur_GLUserScanSwapped_layer());
  Result g = good.forward(feed(good, r), {});
  Result s = bad.forward(feed(bad, r), {});
  // The operator (13) as written is the recurrence ...
  EXPECT_LE(relErr(g.outputs[0], ref.y), kTolF64);
  // ... the swapped one (q . p) is not, on a time-varying a.
  EXPECT_GT(relErr(s.outputs[0], ref.y), 1e-2);
  // The swapped scan computes h_n = h_{n-1} + (prod_{j<n} a_j) k_n v_n
  // (a sum weighted by the *earlier* decays): checked here by hand so the
  // difference above is the operator's order, not a broken layer.
  Ref swappedRef = ref;
  for (int64_t b = 0; b < r.B; ++b)
    for (int64_t h = 0; h < r.H; ++h)
      for (int64_t j = 0; j < r.V; ++j) {
        std::vector<cd> P(r.K, 1.0), S(r.K, 0.0);
        for (int64_t t = 0; t < r.T; ++t) {
          double y = 0;
          for (int64_t i = 0; i < r.K; ++i) {
            S[i] += P[i] * r.k({b, h, t, i}) * r.v({b, h, t, j});
            P[i] *= decay(r, b, h, t, i);
            y += r.q({b, h, t, i}) * S[i].real();
          }
          swappedRef.y.set(swappedRef.y.offset({b, h, t, j}), y);
        }
      }
  EXPECT_LE(relErr(s.outputs[0], swappedRef.y), kTolF64);
}

#endif // RECUR_GATELOOP_DK1

//===----------------------------------------------------------------------===//
// 3. Lengths; heads and batch rows independent
//===----------------------------------------------------------------------===//

TEST(GL_SUITE, Inv3_ShortAndOddLengthsMatchFloat64Oracle) {
  Rng rng(31);
  for (int64_t T :
       {1, 2, 3, 5, 7, 13, 31, 61, 63, 65, 100, 127, 129, 257, 1000}) {
    SCOPED_TRACE(T);
    Raw r = makeRaw(2, T, rng);
    Tensor S0 = randomState(r, rng);
    Ref ref = oracle(r, &S0);
    for (const Mode &mode : sequenceModes()) {
      SCOPED_TRACE(mode.name);
      Layer layer(mode.desc);
      Result res = layer.forward(feed(layer, r), {}, {S0});
      EXPECT_LE(relErr(res.outputs[0], ref.y), kTolF64);
      EXPECT_LE(relErr(res.states[0], ref.S), kTolF64);
    }
  }
}

TEST(GL_SUITE, Inv3_LongLengths8kTo64kMatchFloat64Oracle) {
  Rng rng(32);
  // 8k, a prime above 8k, a non-power of two, and 64k; decays near 1 so
  // the state remembers hundreds of steps.
  for (int64_t T : {8192, 8209, 20000, 65536}) {
    SCOPED_TRACE(T);
    Raw r = makeRaw(1, T, rng, 0.99, 1.0);
    Ref ref = oracle(r);
    for (const recur_layer_desc *d :
         {recur_GLChunked64_layer(), recur_GLRecurrent_layer(),
          recur_GLLinearScan_layer()}) {
      Layer layer(d);
      SCOPED_TRACE(d->name);
      Result res = layer.forward(feed(layer, r), {});
      EXPECT_LE(relErr(res.outputs[0], ref.y), kTolF64);
      EXPECT_LE(relErr(res.states[0], ref.S), kTolF64);
    }
  }
}

/// Slice [b, h] of a [B, H, ...] tensor.
Tensor bh(const Tensor &t, int64_t b, int64_t h) {
  return slice(slice(t, 0, b, 1), 1, h, 1);
}

TEST(GL_SUITE, Inv3_HeadsAndBatchRowsIndependent) {
  Rng rng(33);
  for (const Mode &mode : sequenceModes()) {
    SCOPED_TRACE(mode.name);
    Layer layer(mode.desc);
    Raw r = makeRaw(2, 29, rng);
    Result base = layer.forward(feed(layer, r), {});
    // Perturb every input of row 1, the last head: nothing else moves
    // (bitwise), and that slice does (the control).
    const int64_t hp = kH - 1;
    Raw pert = r;
    for (Tensor *t : {&pert.q, &pert.k, &pert.v, &pert.m, &pert.p})
      for (int64_t s = 0; s < t->shape[2] * t->shape[3]; ++s) {
        int64_t o = t->offset({1, hp, 0, 0}) + s;
        t->set(o, t->at(o) * 0.5 + 0.1);
      }
    Result moved = layer.forward(feed(layer, pert), {});
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t h = 0; h < kH; ++h) {
        Tensor a = bh(moved.outputs[0], b, h), c = bh(base.outputs[0], b, h);
        if (b == 1 && h == hp)
          EXPECT_GT(relErr(a, c), 1e-3);
        else
          EXPECT_TRUE(sameBits(a, c)) << b << " " << h;
      }
    // Each row run alone (B = 1) gives that row's outputs and final state.
    for (int64_t b = 0; b < 2; ++b) {
      Raw one{1,
              kH,
              r.T,
              kK,
              kV,
              slice(r.q, 0, b, 1),
              slice(r.k, 0, b, 1),
              slice(r.v, 0, b, 1),
              slice(r.m, 0, b, 1),
              slice(r.p, 0, b, 1)};
      Result alone = layer.forward(feed(layer, one), {});
      EXPECT_LE(relErr(alone.outputs[0], slice(base.outputs[0], 0, b, 1)),
                kTolF64);
      EXPECT_LE(relErr(alone.states[0], slice(base.states[0], 0, b, 1)),
                kTolF64);
    }
  }
}

//===----------------------------------------------------------------------===//
// 4. Chunking and streaming
//===----------------------------------------------------------------------===//

TEST(GL_SUITE, Inv4_AnyChunkSizeGivesSameResult) {
  Rng rng(41);
  // Lengths that are and are not multiples of the chunk sizes 1, 3, 16, 64.
  for (int64_t T : {1, 16, 47, 64, 67, 130}) {
    SCOPED_TRACE(T);
    Raw r = makeRaw(2, T, rng);
    Tensor S0 = randomState(r, rng);
    Layer rec(recur_GLRecurrent_layer());
    Result base = rec.forward(feed(rec, r), {}, {S0});
    Ref ref = oracle(r, &S0);
    EXPECT_LE(relErr(base.outputs[0], ref.y), kTolF64);
    for (const recur_layer_desc *d :
         {recur_GLChunked1_layer(), recur_GLChunked3_layer(),
          recur_GLChunked16_layer(), recur_GLChunked64_layer()}) {
      SCOPED_TRACE(d->name);
      Layer layer(d);
      Result res = layer.forward(feed(layer, r), {}, {S0});
      EXPECT_LE(relErr(res.outputs[0], base.outputs[0]), kTolF64);
      EXPECT_LE(relErr(res.states[0], base.states[0]), kTolF64);
    }
  }
}

/// Raw inputs at positions [start, start + count).
Raw sliceT(const Raw &r, int64_t start, int64_t count) {
  return {r.B,
          r.H,
          count,
          r.K,
          r.V,
          slice(r.q, 2, start, count),
          slice(r.k, 2, start, count),
          slice(r.v, 2, start, count),
          slice(r.m, 2, start, count),
          slice(r.p, 2, start, count)};
}

TEST(GL_SUITE, Inv4_PrefixCarriedStateSuffixEqualsOnePass) {
  Rng rng(42);
  const int64_t T = 40;
  Raw r = makeRaw(2, T, rng);
  Tensor S0 = randomState(r, rng);
  for (const Mode &mode : sequenceModes()) {
    SCOPED_TRACE(mode.name);
    Layer layer(mode.desc);
    Result whole = layer.forward(feed(layer, r), {}, {S0});
    for (int64_t split = 1; split < T; ++split) {
      Result pre = layer.forward(feed(layer, sliceT(r, 0, split)), {}, {S0});
      Result suf = layer.forward(feed(layer, sliceT(r, split, T - split)), {},
                                 pre.states);
      EXPECT_LE(
          relErr(concat({pre.outputs[0], suf.outputs[0]}, 2), whole.outputs[0]),
          kTolF64)
          << split;
      EXPECT_LE(relErr(suf.states[0], whole.states[0]), kTolF64) << split;
    }
    // Control: dropping the carried state (a fresh zero state for the
    // suffix) does change the suffix.
    Result pre = layer.forward(feed(layer, sliceT(r, 0, 20)), {}, {S0});
    Result fresh = layer.forward(feed(layer, sliceT(r, 20, 20)), {});
    EXPECT_GT(relErr(fresh.outputs[0], slice(whole.outputs[0], 2, 20, 20)),
              1e-3);
  }
  // The example layers: prefix + carried state + suffix on x.
  for (const recur_layer_desc *d :
       {recur_GateLoop_layer(), recur_GateLoopMaxHeaded_layer(),
        recur_GateLoopScan_layer()}) {
    SCOPED_TRACE(d->name);
    Layer layer(d);
    auto params = exampleParams(layer, rng, 0.5);
    auto inputs = layer.randomInputs({{"B", 2}, {"T", T}}, rng);
    Result whole = layer.forward(inputs, params);
    for (int64_t split : {1, 7, 20, 33, 39}) {
      Result pre = layer.forward({slice(inputs[0], 1, 0, split)}, params);
      Result suf = layer.forward({slice(inputs[0], 1, split, T - split)},
                                 params, pre.states);
      EXPECT_LE(
          relErr(concat({pre.outputs[0], suf.outputs[0]}, 1), whole.outputs[0]),
          kTolF64)
          << split;
      EXPECT_LE(relErr(suf.states[0], whole.states[0]), kTolF64) << split;
    }
  }
}

TEST(GL_SUITE, Inv4_StepwiseEqualsForward) {
  Rng rng(43);
  Raw r = makeRaw(2, 21, rng);
  Tensor S0 = randomState(r, rng);
  for (const Mode &mode : sequenceModes()) {
    SCOPED_TRACE(mode.name);
    Layer layer(mode.desc);
    Result whole = layer.forward(feed(layer, r), {}, {S0});
    Result steps = layer.stepwise(feed(layer, r), {}, {S0});
    EXPECT_LE(relErr(steps.outputs[0], whole.outputs[0]), kTolF64);
    EXPECT_LE(relErr(steps.states[0], whole.states[0]), kTolF64);
  }
  for (const recur_layer_desc *d :
       {recur_GateLoop_layer(), recur_GateLoopMaxHeaded_layer(),
        recur_GateLoopScan_layer()}) {
    SCOPED_TRACE(d->name);
    Layer layer(d);
    auto params = exampleParams(layer, rng, 0.5);
    auto inputs = layer.randomInputs({{"B", 2}, {"T", 21}}, rng);
    Result whole = layer.forward(inputs, params);
    Result steps = layer.stepwise(inputs, params);
    EXPECT_LE(relErr(steps.outputs[0], whole.outputs[0]), kTolF64);
    EXPECT_LE(relErr(steps.states[0], whole.states[0]), kTolF64);
  }
}

//===----------------------------------------------------------------------===//
// 5. Special cases
//===----------------------------------------------------------------------===//

/// x W for x [B, T, D] and W [D, E] in float64.
[[maybe_unused]] Tensor matmul(const Tensor &x, const Tensor &W) {
  int64_t B = x.shape[0], T = x.shape[1], D = x.shape[2], E = W.shape[1];
  Tensor out(RECUR_F64, {B, T, E});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t e = 0; e < E; ++e) {
        double s = 0;
        for (int64_t d = 0; d < D; ++d)
          s += x({b, t, d}) * W({d, e});
        out.set(out.offset({b, t, e}), s);
      }
  return out;
}

/// RetNet's parallel retention per head of r (dk = r.K, dv = r.V):
/// o_n = sum_{m<=n} gamma_h^{n-m} (q_n . k_m) v_m, gamma_h = 1 - 2^(-5-h).
Tensor retentionParallel(const Raw &r) {
  Tensor out(RECUR_F64, r.v.shape);
  for (int64_t b = 0; b < r.B; ++b)
    for (int64_t h = 0; h < r.H; ++h) {
      double gamma = 1 - std::pow(2.0, -5.0 - h);
      for (int64_t n = 0; n < r.T; ++n)
        for (int64_t j = 0; j < r.V; ++j) {
          double s = 0;
          for (int64_t m = 0; m <= n; ++m) {
            double qk = 0;
            for (int64_t i = 0; i < r.K; ++i)
              qk += r.q({b, h, n, i}) * r.k({b, h, m, i});
            s += std::pow(gamma, double(n - m)) * qk * r.v({b, h, m, j});
          }
          out.set(out.offset({b, h, n, j}), s);
        }
    }
  return out;
}

TEST(GL_SUITE, Inv5_ReducesToRetNet_GateLoopWithConstantDecay) {
  // GateLoop's kernels with the constant real decay a = gamma_h (theta = 0)
  // compute RetNet's parallel retention (Q K^T (.) D) V, D_nm = gamma^(n-m).
  Rng rng(51);
  Raw r = makeRaw(2, 45, rng);
  for (int64_t i = 0; i < r.m.numel(); ++i) {
    int64_t h = (i / (r.T * r.K)) % r.H;
    r.m.set(i, 1 - std::pow(2.0, -5.0 - h));
  }
  r.p.fill(0.0);
  Tensor parallel = retentionParallel(r);
  for (const Mode &mode : sequenceModes()) {
    SCOPED_TRACE(mode.name);
    Layer layer(mode.desc);
    EXPECT_LE(relErr(layer.forward(feed(layer, r), {}).outputs[0], parallel),
              kTolF64);
  }
  Layer real(recur_GLRealDecay_layer());
  EXPECT_LE(relErr(real.forward(feed(real, r), {}).outputs[0], parallel),
            kTolF64);
}

#ifndef RECUR_GATELOOP_DK1
TEST(GL_SUITE, Inv5_ReducesToRetNet_RetentionLayer) {
  // Retention (examples/retnet.recur, D = 8, H = 2, dk = dv = 4: gla with
  // a = gamma_h) against the parallel form on its projections, computed
  // here: q = x Wq, k = x Wk / sqrt(dk), v = x Wv per head.
  const int64_t H = 2, dk = 4, T = 45, B = 2;
  Layer ret(recur_Retention_layer());
  Rng rng(51);
  auto params = ret.params(rng, 0.5);
  auto inputs = ret.randomInputs({{"B", B}, {"T", T}}, rng);
  Result res = ret.forward(inputs, params);
  Tensor q = matmul(inputs[0], params[ret.param("Wq")]),
         k = matmul(inputs[0], params[ret.param("Wk")]),
         v = matmul(inputs[0], params[ret.param("Wv")]);
  Raw r{B,
        H,
        T,
        dk,
        dk,
        Tensor(RECUR_F64, {B, H, T, dk}),
        Tensor(RECUR_F64, {B, H, T, dk}),
        Tensor(RECUR_F64, {B, H, T, dk}),
        Tensor(RECUR_F64, {B, H, T, dk}),
        Tensor(RECUR_F64, {B, H, T, dk})};
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t i = 0; i < dk; ++i) {
          int64_t o = r.q.offset({b, h, t, i});
          r.q.set(o, q({b, t, h * dk + i}));
          r.k.set(o, k({b, t, h * dk + i}) / std::sqrt(double(dk)));
          r.v.set(o, v({b, t, h * dk + i}));
        }
  EXPECT_LE(relErr(res.outputs[0], mergeHeads(retentionParallel(r))), kTolF64);
}

TEST(GL_SUITE, Inv5_ReducesToRotatedRetNet) {
  // RetentionRot: GateLoop's recurrence with the constant complex decay
  // a_j = gamma_h e^{i theta_j}, against RetNet's parallel form with q and
  // k rotated by n theta_j in channel pairs (2j, 2j+1):
  //   o_n = sum_{m<=n} gamma^{n-m} (R(n) q_n) . (R(m) k_m) v_m.
  const int64_t D = 8, H = 2, dk = 4, J = 2, T = 33, B = 2;
  Layer ret(recur_RetentionRot_layer());
  Rng rng(52);
  auto params = ret.params(rng, 0.5);
  auto inputs = ret.randomInputs({{"B", B}, {"T", T}}, rng);
  Result res = ret.forward(inputs, params);
  Tensor q = matmul(inputs[0], params[ret.param("Wq")]),
         k = matmul(inputs[0], params[ret.param("Wk")]),
         v = matmul(inputs[0], params[ret.param("Wv")]);
  auto rot = [&](const Tensor &x, int64_t b, int64_t n, int64_t h) {
    std::vector<double> out(dk);
    for (int64_t j = 0; j < J; ++j) {
      double theta = std::pow(10000.0, -double(j) / (J - 1));
      double c = std::cos(n * theta), s = std::sin(n * theta);
      double x0 = x({b, n, h * dk + 2 * j}), x1 = x({b, n, h * dk + 2 * j + 1});
      out[2 * j] = c * x0 - s * x1;
      out[2 * j + 1] = s * x0 + c * x1;
    }
    return out;
  };
  Tensor parallel(RECUR_F64, {B, T, D});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      double gamma = 1 - std::pow(2.0, -5.0 - h);
      for (int64_t n = 0; n < T; ++n) {
        std::vector<double> qn = rot(q, b, n, h);
        for (int64_t j = 0; j < dk; ++j) {
          double s = 0;
          for (int64_t m = 0; m <= n; ++m) {
            std::vector<double> km = rot(k, b, m, h);
            double qk = 0;
            for (int64_t i = 0; i < dk; ++i)
              qk += qn[i] * km[i] / std::sqrt(double(dk));
            s += std::pow(gamma, double(n - m)) * qk * v({b, m, h * dk + j});
          }
          parallel.set(parallel.offset({b, n, h * dk + j}), s);
        }
      }
    }
  EXPECT_LE(relErr(res.outputs[0], parallel), kTolF64);
}

TEST(GL_SUITE, Inv5_LRUIsConvolutionWithPowersOfLambda) {
  // LRU (examples/lru.recur, D = 4, N = 3): y_t = Re(C h_t) + D x_t with
  // h = (gamma B x) convolved with (1, lambda, lambda^2, ...), lambda =
  // exp(-exp(nu) + i exp(theta)), computed here.
  const int64_t D = 4, N = 3, T = 50, B = 2;
  Layer lru(recur_LRU_layer());
  Rng rng(54);
  auto params = lru.params(rng, 0.3);
  auto inputs = lru.randomInputs({{"B", B}, {"T", T}}, rng);
  Result res = lru.forward(inputs, params);
  const Tensor &x = inputs[0];
  auto P = [&](const char *n) -> const Tensor & {
    return params[lru.param(n)];
  };
  Tensor expect(RECUR_F64, {B, T, D});
  for (int64_t b = 0; b < B; ++b)
    for (int64_t n = 0; n < T; ++n) {
      std::vector<cd> h(N);
      for (int64_t c = 0; c < N; ++c) {
        double nu = P("nu_log")({c}), th = P("theta_log")({c});
        cd lam = std::exp(cd(-std::exp(nu), std::exp(th)));
        double gamma = std::sqrt(1 - std::norm(lam));
        for (int64_t m = 0; m <= n; ++m) {
          cd bx = 0;
          for (int64_t d = 0; d < D; ++d)
            bx += x({b, m, d}) * cd(P("B_re")({d, c}), P("B_im")({d, c}));
          h[c] += std::pow(lam, double(n - m)) * gamma * bx;
        }
      }
      for (int64_t d = 0; d < D; ++d) {
        double y = P("D_skip")({d}) * x({b, n, d});
        for (int64_t c = 0; c < N; ++c)
          y +=
              h[c].real() * P("C_re")({c, d}) - h[c].imag() * P("C_im")({c, d});
        expect.set(expect.offset({b, n, d}), y);
      }
    }
  EXPECT_LE(relErr(res.outputs[0], expect), kTolF64);
}

#endif // RECUR_GATELOOP_DK1

TEST(GL_SUITE, Inv5_ReducesToS4DConvolution) {
  // Constant a_i (one per key index), q = k = 1: y_n[j] = Re(sum_i sum_m
  // a_i^(n-m) v_m[j]), V convolved with (1, a, a^2, ...), computed here
  // with std::pow; with d_k = d_v = 1 (RecurGateLoopDk1InvariantTests) this
  // is exactly S4D's SISO convolution.
  Rng rng(53);
  const int64_t T = 70;
  Raw r = makeRaw(2, T, rng);
  auto aOf = [](int64_t h, int64_t i) {
    return std::polar(0.8 + 0.05 * h + 0.03 * i, 0.3 + h + 0.7 * i);
  };
  for (int64_t b = 0; b < r.B; ++b)
    for (int64_t h = 0; h < r.H; ++h)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t i = 0; i < r.K; ++i) {
          int64_t o = r.q.offset({b, h, t, i});
          r.q.set(o, 1.0);
          r.k.set(o, 1.0);
          r.m.set(o, std::abs(aOf(h, i)));
          r.p.set(o, std::arg(aOf(h, i)));
        }
  Tensor conv(RECUR_F64, r.v.shape);
  for (int64_t b = 0; b < r.B; ++b)
    for (int64_t h = 0; h < r.H; ++h)
      for (int64_t n = 0; n < T; ++n)
        for (int64_t j = 0; j < r.V; ++j) {
          cd s = 0;
          for (int64_t i = 0; i < r.K; ++i)
            for (int64_t m = 0; m <= n; ++m)
              s += std::pow(aOf(h, i), double(n - m)) * r.v({b, h, m, j});
          conv.set(conv.offset({b, h, n, j}), s.real());
        }
  for (const Mode &mode : sequenceModes()) {
    SCOPED_TRACE(mode.name);
    Layer layer(mode.desc);
    EXPECT_LE(relErr(layer.forward(feed(layer, r), {}).outputs[0], conv),
              kTolF64);
  }
}

TEST(GL_SUITE, Inv5_RealDecaysEqualZeroPhase) {
  // theta = 0: the complex layer with p = 0 equals the real-decay gla
  // (GLA/Mamba style, real state) and the oracle; its state stays real.
  Rng rng(55);
  Raw r = makeRaw(2, 50, rng);
  r.p.fill(0.0);
  Ref ref = oracle(r);
  Layer real(recur_GLRealDecay_layer());
  Result rr = real.forward(feed(real, r), {});
  EXPECT_LE(relErr(rr.outputs[0], ref.y), kTolF64);
  for (const Mode &mode : sequenceModes()) {
    SCOPED_TRACE(mode.name);
    Layer layer(mode.desc);
    Result c = layer.forward(feed(layer, r), {});
    EXPECT_LE(relErr(c.outputs[0], rr.outputs[0]), kTolF64);
    EXPECT_LE(relErr(c.states[0], convert(rr.states[0], RECUR_C128)), kTolF64);
    // With a real decay, real k and v, the imaginary part is exactly zero.
    double imag = 0;
    for (int64_t i = 0; i < c.states[0].numel(); ++i)
      imag = std::max(imag, std::fabs(c.states[0].at(i, 1)));
    EXPECT_EQ(imag, 0.0);
  }
  // Control: a nonzero phase changes the result.
  Raw rot = r;
  rot.p.fill(0.3);
  Layer chunked(recur_GLChunked16_layer());
  EXPECT_GT(
      relErr(chunked.forward(feed(chunked, rot), {}).outputs[0], rr.outputs[0]),
      1e-3);
}

//===----------------------------------------------------------------------===//
// 6. Reset: |a_r| = 0
//===----------------------------------------------------------------------===//

std::vector<Mode> resetModes() {
  std::vector<Mode> modes = sequenceModes();
  modes.push_back({"GLChunked3", recur_GLChunked3_layer()});
  return modes;
}

TEST(GL_SUITE, Inv6_ZeroDecayCutsDependenceOnPast) {
  Rng rng(61);
  const int64_t T = 40;
  // r mid-chunk (21), at a chunk boundary (16, 32 of chunk 16) and the
  // first position (0: the carried state is forgotten).
  for (int64_t rpos : {0, 16, 21, 32}) {
    SCOPED_TRACE(rpos);
    Raw r = makeRaw(2, T, rng);
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t h = 0; h < kH; ++h)
        for (int64_t i = 0; i < kK; ++i)
          r.m.set(r.m.offset({b, h, rpos, i}), 0.0);
    Tensor S0 = randomState(r, rng);
    // Every input before r changed, and the carried state.
    Raw pert = r;
    for (Tensor *t : {&pert.q, &pert.k, &pert.v, &pert.m, &pert.p})
      for (int64_t b = 0; b < 2; ++b)
        for (int64_t h = 0; h < kH; ++h)
          for (int64_t s = 0; s < rpos * t->shape[3]; ++s) {
            int64_t o = t->offset({b, h, 0, 0}) + s;
            t->set(o, t->at(o) * 0.7 + 0.05);
          }
    Tensor S1 = randomState(r, rng);
    Ref ref = oracle(r, &S0);
    for (const Mode &mode : resetModes()) {
      SCOPED_TRACE(mode.name);
      Layer layer(mode.desc);
      Result base = layer.forward(feed(layer, r), {}, {S0});
      Result moved = layer.forward(feed(layer, pert), {}, {S1});
      EXPECT_FALSE(base.outputs[0].hasNonFinite());
      EXPECT_FALSE(base.states[0].hasNonFinite());
      EXPECT_LE(relErr(base.outputs[0], ref.y), kTolF64);
      // Outputs from r on and the final state: bitwise the same (the past
      // enters only through 0 * S_{r-1}, which is exactly 0).
      EXPECT_TRUE(sameBits(slice(moved.outputs[0], 2, rpos, T - rpos),
                           slice(base.outputs[0], 2, rpos, T - rpos)));
      EXPECT_TRUE(sameBits(moved.states[0], base.states[0]));
      // Control: before r they do move.
      if (rpos > 0)
        EXPECT_GT(relErr(slice(moved.outputs[0], 2, 0, rpos),
                         slice(base.outputs[0], 2, 0, rpos)),
                  1e-3);
      // Control: with |a_r| = 1e-3 instead of 0 the past still leaks in.
      Raw leak = r, leakPert = pert;
      for (Raw *x : {&leak, &leakPert})
        for (int64_t b = 0; b < 2; ++b)
          for (int64_t h = 0; h < kH; ++h)
            for (int64_t i = 0; i < kK; ++i)
              x->m.set(x->m.offset({b, h, rpos, i}), 1e-3);
      Result l0 = layer.forward(feed(layer, leak), {}, {S0});
      Result l1 = layer.forward(feed(layer, leakPert), {}, {S1});
      EXPECT_GT(maxAbsDiff(slice(l0.outputs[0], 2, rpos, T - rpos),
                           slice(l1.outputs[0], 2, rpos, T - rpos)),
                0.0);
    }
  }
}

TEST(GL_SUITE, Inv6_ZeroDecayGradientsExactlyZero) {
  Rng rng(62);
  const int64_t T = 40;
  for (int64_t rpos : {16, 21}) {
    SCOPED_TRACE(rpos);
    Raw r = makeRaw(1, T, rng);
    for (int64_t h = 0; h < kH; ++h)
      for (int64_t i = 0; i < kK; ++i)
        r.m.set(r.m.offset({0, h, rpos, i}), 0.0);
    Tensor S0 = randomState(r, rng);
    // Cotangents on outputs at r and later, and on the final state.
    Tensor dy(RECUR_F64, r.v.shape);
    fillNormal(dy, rng);
    for (int64_t h = 0; h < kH; ++h)
      for (int64_t s = 0; s < rpos * r.V; ++s)
        dy.set(dy.offset({0, h, 0, 0}) + s, 0.0);
    Tensor dS = randomState(r, rng);
    for (const Mode &mode : resetModes()) {
      SCOPED_TRACE(mode.name);
      Layer layer(mode.desc);
      Grads g = layer.backward(feed(layer, r), {}, {S0}, {dy}, {dS});
      for (size_t i = 0; i < g.inputs.size(); ++i) {
        EXPECT_FALSE(g.inputs[i].hasNonFinite()) << i;
        Tensor before = slice(g.inputs[i], 2, 0, rpos);
        EXPECT_EQ(maxAbs(before), 0.0) << i; // exactly zero
        // Control: from r on, the gradients are not zero.
        EXPECT_GT(maxAbs(slice(g.inputs[i], 2, rpos, T - rpos)), 0.0) << i;
      }
      EXPECT_FALSE(g.states[0].hasNonFinite());
      EXPECT_EQ(maxAbs(g.states[0]), 0.0);
      // The gradient of |a_r| itself is live (dL/da_r = G_r conj(S_{r-1})).
      EXPECT_GT(maxAbs(slice(g.inputs[layer.input("m")], 2, rpos, 1)), 0.0);
    }
    // Control: with cotangents before r as well, the past gets gradient.
    Tensor dyAll(RECUR_F64, r.v.shape);
    fillNormal(dyAll, rng);
    Layer layer(recur_GLChunked16_layer());
    Grads g = layer.backward(feed(layer, r), {}, {S0}, {dyAll}, {dS});
    EXPECT_GT(maxAbs(slice(g.inputs[layer.input("k")], 2, 0, rpos)), 0.0);
  }
}

#ifndef RECUR_GATELOOP_DK1
TEST(GL_SUITE, Inv6_SigmoidDrivenToZeroResetsExampleLayer) {
  // In the example layers |a| = sigmoid(x Wg); an input x_r with
  // x_r Wg = -1000 in every channel gives sigmoid = 0 exactly in float64.
  // Wg is drawn so that the solution is easy: x_r = -1000 * u where
  // u Wg = 1 (u from the normal equations, solved here).
  for (const recur_layer_desc *d :
       {recur_GateLoop_layer(), recur_GateLoopMaxHeaded_layer(),
        recur_GateLoopScan_layer()}) {
    SCOPED_TRACE(d->name);
    Layer layer(d);
    Rng rng(63);
    auto params = exampleParams(layer, rng, 0.5);
    const int64_t T = 30, rpos = 13, D = 8;
    Tensor &Wg = params[layer.param("Wg")];
    int64_t E = Wg.shape[1];
    // u = Wg (Wg^T Wg)^-1 1 when E <= D; for E == D (square) u = 1 Wg^-1.
    // Solve (Wg^T Wg) z = 1 by Gaussian elimination, u = Wg z.
    std::vector<double> M(E * E), z(E, 1.0);
    for (int64_t i = 0; i < E; ++i)
      for (int64_t j = 0; j < E; ++j)
        for (int64_t k = 0; k < D; ++k)
          M[i * E + j] += Wg({k, i}) * Wg({k, j});
    for (int64_t c = 0; c < E; ++c) {
      int64_t piv = c;
      for (int64_t i = c + 1; i < E; ++i)
        if (std::fabs(M[i * E + c]) > std::fabs(M[piv * E + c]))
          piv = i;
      for (int64_t j = 0; j < E; ++j)
        std::swap(M[c * E + j], M[piv * E + j]);
      std::swap(z[c], z[piv]);
      for (int64_t i = 0; i < E; ++i) {
        if (i == c)
          continue;
        double f = M[i * E + c] / M[c * E + c];
        for (int64_t j = 0; j < E; ++j)
          M[i * E + j] -= f * M[c * E + j];
        z[i] -= f * z[c];
      }
    }
    for (int64_t c = 0; c < E; ++c)
      z[c] /= M[c * E + c];
    auto inputs = layer.randomInputs({{"B", 2}, {"T", T}}, rng);
    Tensor &x = inputs[0];
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t k = 0; k < D; ++k) {
        double u = 0;
        for (int64_t c = 0; c < E; ++c)
          u += Wg({k, c}) * z[c];
        x.set(x.offset({b, rpos, k}), -1000 * u);
      }
    // The decay at r is exactly 0 in every channel (computed as the layer
    // does, to check the premise).
    Raw proj =
        project(layer, inputs, params, d == recur_GateLoop_layer() ? 2 : 8,
                d == recur_GateLoop_layer() ? 3 : 1,
                d == recur_GateLoop_layer() ? 4 : 1);
    EXPECT_EQ(maxAbs(slice(proj.m, 2, rpos, 1)), 0.0);
    std::vector<Tensor> states = layer.states({{"B", 2}});
    fillNormal(states[0], rng);
    Result base = layer.forward(inputs, params, states);
    auto pert = inputs;
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t t = 0; t < rpos; ++t)
        for (int64_t k = 0; k < D; ++k) {
          int64_t o = x.offset({b, t, k});
          pert[0].set(o, pert[0].at(o) * -0.5 + 0.2);
        }
    Result moved = layer.forward(pert, params, layer.states({{"B", 2}}));
    EXPECT_FALSE(base.outputs[0].hasNonFinite());
    EXPECT_TRUE(sameBits(slice(moved.outputs[0], 1, rpos, T - rpos),
                         slice(base.outputs[0], 1, rpos, T - rpos)));
    EXPECT_GT(relErr(slice(moved.outputs[0], 1, 0, rpos),
                     slice(base.outputs[0], 1, 0, rpos)),
              1e-3);
    // Gradients of outputs from r on reach no x before r (exactly 0).
    auto dy = layer.outputs({{"B", 2}, {"T", T}});
    fillNormal(dy[0], rng);
    for (int64_t b = 0; b < 2; ++b)
      for (int64_t s = 0; s < rpos * D; ++s)
        dy[0].set(dy[0].offset({b, 0, 0}) + s, 0.0);
    Grads g = layer.backward(inputs, params, states, dy);
    EXPECT_FALSE(g.inputs[0].hasNonFinite());
    for (const Tensor &p : g.params)
      EXPECT_FALSE(p.hasNonFinite());
    EXPECT_EQ(maxAbs(slice(g.inputs[0], 1, 0, rpos)), 0.0);
    EXPECT_EQ(maxAbs(g.states[0]), 0.0);
    EXPECT_GT(maxAbs(slice(g.inputs[0], 1, rpos + 1, T - rpos - 1)), 0.0);
  }
}

#endif // RECUR_GATELOOP_DK1

//===----------------------------------------------------------------------===//
// 8. Gradients
//===----------------------------------------------------------------------===//

/// <a, b> over every component.
double dot(const Tensor &a, const Tensor &b) {
  double s = 0;
  for (int64_t i = 0; i < a.numel(); ++i)
    for (int c = 0; c < a.components(); ++c)
      s += a.at(i, c) * b.at(i, c);
  return s;
}

/// Richardson-extrapolated central difference of f at step h:
/// (4 D(h/2) - D(h)) / 3 with D(h) = (f(x+h) - f(x-h)) / 2h; error
/// O(h^4 f^(5)) + O(eps |f| / h).
double richardson(const std::function<double(double)> &f, double h) {
  auto D = [&](double s) { return (f(s) - f(-s)) / (2 * s); };
  return (4 * D(h / 2) - D(h)) / 3;
}

/// Finite-difference tolerance: with h = 1e-3 and O(1) values the
/// truncation error is ~h^4 = 1e-12 times the fifth derivative and the
/// rounding error ~eps |L| / h ~ 1e-12 |L|, summed over O(10-100) terms of
/// L; 1e-8 normwise relative leaves a margin of ~100 over both and is still
/// far below any real gradient bug (a wrong term is O(1) relative).
constexpr double kTolFD = 1e-8;

/// Compares the gradient `grad` of `loss` (a function of `x`, changed in
/// place) with Richardson central differences at every `stride`-th element
/// of x (every element with stride 1), normwise relative, kTolFD.
void checkFD(Tensor &x, const Tensor &grad, const std::function<double()> &loss,
             int64_t stride, const std::string &what) {
  std::vector<int64_t> at;
  for (int64_t e = 0; e < x.numel(); e += stride)
    at.push_back(e);
  Tensor an(RECUR_F64, {int64_t(at.size())}), fd = an;
  for (size_t n = 0; n < at.size(); ++n) {
    double x0 = x.at(at[n]);
    fd.set(n, richardson(
                  [&](double s) {
                    x.set(at[n], x0 + s);
                    double l = loss();
                    x.set(at[n], x0);
                    return l;
                  },
                  1e-3));
    an.set(n, grad.at(at[n]));
  }
  EXPECT_LE(relErr(an, fd), kTolFD) << what;
  EXPECT_GT(maxAbs(fd), 0.0) << what; // not a vacuous comparison
}

TEST(GL_SUITE, Inv8_BackwardMatchesFiniteDifferences_RawInputs) {
  // The compiled backward of the chunked gla (its reverse sweep) and of the
  // user-combine scan (autodiff of the loop), L = <dy, y>, from a carried
  // state, against finite differences in every real input q, k, v, |a|,
  // arg a.
  Rng rng(81);
  Raw r = makeRaw(1, 12, rng);
  Tensor S0 = randomState(r, rng);
  Tensor dy(RECUR_F64, r.v.shape);
  fillNormal(dy, rng);
  for (const recur_layer_desc *d :
       {recur_GLChunked3_layer(), recur_GLUserScan_layer()}) {
    SCOPED_TRACE(d->name);
    Layer layer(d);
    std::vector<Tensor> in = feed(layer, r);
    Grads g = layer.backward(in, {}, {S0}, {dy});
    for (size_t i = 0; i < in.size(); ++i)
      checkFD(
          in[i], g.inputs[i],
          [&] { return dot(layer.forward(in, {}, {S0}).outputs[0], dy); }, 2,
          layer.desc()->args[i].name);
  }
}

#ifndef RECUR_GATELOOP_DK1
TEST(GL_SUITE, Inv8_BackwardMatchesFiniteDifferences_ExampleParams) {
  // The raw parameters of the example layers (W_q, W_k, W_v, W_gamma,
  // W_theta: real) and x, through sigmoid, polar and the projections.
  for (const recur_layer_desc *d :
       {recur_GateLoop_layer(), recur_GateLoopMaxHeaded_layer(),
        recur_GateLoopScan_layer()}) {
    SCOPED_TRACE(d->name);
    Layer layer(d);
    Rng rng(82);
    auto params = exampleParams(layer, rng, 0.3);
    auto inputs = layer.randomInputs({{"B", 1}, {"T", 9}}, rng);
    std::vector<Tensor> states = layer.states({{"B", 1}});
    fillNormal(states[0], rng);
    auto dy = layer.outputs({{"B", 1}, {"T", 9}});
    fillNormal(dy[0], rng);
    Grads g = layer.backward(inputs, params, states, dy);
    auto loss = [&] {
      return dot(layer.forward(inputs, params, states).outputs[0], dy[0]);
    };
    for (size_t p = 0; p < params.size(); ++p)
      checkFD(params[p], g.params[p], loss, 3,
              layer.desc()->args[layer.desc()->num_inputs + p].name);
    checkFD(inputs[0], g.inputs[0], loss, 3, "x");
  }
}
#endif // RECUR_GATELOOP_DK1

TEST(GL_SUITE, Inv8_ReverseScanBackwardEqualsAutodiffOfLoop) {
  // The compiled backward of every form (gla's reverse sweep over chunks,
  // linear_scan's reverse scan, the autodiff of the sequential user-combine
  // loop) against the reference's reverse linear scan written here
  // (G_n = q_n dy_n + conj(a_{n+1}) G_{n+1}, ...), with cotangents on the
  // outputs and on the final state, from a carried state.
  Rng rng(83);
  {
    Raw r = makeRaw(2, 45, rng);
    Tensor S0 = randomState(r, rng), dS = randomState(r, rng);
    Tensor dy(RECUR_F64, r.v.shape);
    fillNormal(dy, rng);
    RefGrad ref = oracleGrad(r, S0, dy, dS);
    std::vector<Mode> modes = resetModes();
    modes.push_back({"GLChunked1", recur_GLChunked1_layer()});
    for (const Mode &mode : modes) {
      SCOPED_TRACE(mode.name);
      Layer layer(mode.desc);
      Grads g = layer.backward(feed(layer, r), {}, {S0}, {dy}, {dS});
      EXPECT_LE(relErr(g.inputs[layer.input("q")], ref.dq), kTolF64);
      EXPECT_LE(relErr(g.inputs[layer.input("k")], ref.dk), kTolF64);
      EXPECT_LE(relErr(g.inputs[layer.input("v")], ref.dv), kTolF64);
      EXPECT_LE(relErr(g.inputs[layer.input("m")], ref.dm), kTolF64);
      EXPECT_LE(relErr(g.inputs[layer.input("p")], ref.dp), kTolF64);
      EXPECT_LE(relErr(g.states[0], ref.dS0), kTolF64);
    }
  }
}

#else // RECUR_GATELOOP_F32

//===----------------------------------------------------------------------===//
// 7. float32 over l >= 1000 with sigmoid magnitudes
//===----------------------------------------------------------------------===//

/// Normwise relative tolerance of a float32 kernel against the float64
/// oracle on the same (f32-rounded) inputs: each step rounds at 2^-24
/// ~ 6e-8 relative and the decays (< 1) make the error a weighted sum over
/// the memory of the state, not a growing one; the projections x W (D = 8
/// terms) add a few ulps. 1e-5 (the reference's f32 tolerance) is ~100
/// ulps.
constexpr double kTolF32 = 1e-5;

/// relErr of a float32 result against a float64 one (a widened first),
/// recorded as a test property (the largest seen) for the XML report.
double relErr32(const Tensor &a, const Tensor &b) {
  static double worst = 0;
  double e = relErr(convert(a, b.dtype), b);
  if (e > worst && e <= kTolF32) {
    worst = e;
    char text[32];
    std::snprintf(text, sizeof text, "%.3g", e);
    ::testing::Test::RecordProperty("worst_f32_relErr", text);
  }
  return e;
}

/// Raw f32 inputs with sigmoid magnitudes m = sigmoid(g), g ~ N(mu, s):
/// with mu < 0 the products of 64 decays underflow float32.
Raw sigmoidRaw(int64_t T, double mu, double s, Rng &rng) {
  Raw r = makeRaw(1, T, rng);
  for (int64_t i = 0; i < r.m.numel(); ++i)
    r.m.set(i, 1 / (1 + std::exp(-(mu + s * rng.normal()))));
  return r;
}

TEST(GL_SUITE, Inv7_Float32ScanModeFiniteOverLongSequences) {
  // The scan modes (linear_scan and the user-combine scan) of the example
  // layers and the raw layers, float32, l = 1000 and 4099.
  for (int64_t T : {1000, 4099}) {
    SCOPED_TRACE(T);
    Rng rng(71);
    Result lin, user;
    for (const recur_layer_desc *d :
         {recur_GateLoopMaxHeaded_layer(), recur_GateLoopScan_layer()}) {
      SCOPED_TRACE(d->name);
      Layer layer(d);
      Rng prng(72);
      // wide logits: |a| from ~0 to ~1, phases over several radians
      auto params = layer.params(prng, 1.0);
      auto inputs = layer.randomInputs({{"B", 2}, {"T", T}}, prng);
      Result res = layer.forward(inputs, params);
      EXPECT_FALSE(res.outputs[0].hasNonFinite());
      EXPECT_FALSE(res.states[0].hasNonFinite());
      // Against the float64 oracle on the same f32 inputs and params.
      std::vector<Tensor> in64{convert(inputs[0], RECUR_F64)};
      std::vector<Tensor> p64;
      for (const Tensor &p : params)
        p64.push_back(convert(p, RECUR_F64));
      Raw r = project(layer, in64, p64, 8, 1, 1);
      Ref ref = oracle(r);
      EXPECT_LE(relErr32(res.outputs[0], mergeHeads(ref.y)), kTolF32);
    }
    for (const recur_layer_desc *d :
         {recur_GLLinearScan_layer(), recur_GLUserScan_layer()}) {
      SCOPED_TRACE(d->name);
      Layer layer(d);
      Raw r = rounded(layer, sigmoidRaw(T, 2.0, 2.0, rng));
      Result res = layer.forward(feed(layer, r), {});
      EXPECT_FALSE(res.outputs[0].hasNonFinite());
      EXPECT_FALSE(res.states[0].hasNonFinite());
      EXPECT_LE(relErr32(res.outputs[0], oracle(r).y), kTolF32);
    }
  }
}

TEST(GL_SUITE, Inv7_Float32LogSpaceChunkedMatchesFloat64) {
  for (int64_t T : {1000, 4099}) {
    SCOPED_TRACE(T);
    // The example layer (gla chunked in log space, chunk 64), sigmoid
    // magnitudes from x Wg.
    {
      Layer layer(recur_GateLoop_layer());
      Rng rng(73);
      auto params = layer.params(rng, 1.0);
      auto inputs = layer.randomInputs({{"B", 2}, {"T", T}}, rng);
      Result res = layer.forward(inputs, params);
      EXPECT_FALSE(res.outputs[0].hasNonFinite());
      EXPECT_FALSE(res.states[0].hasNonFinite());
      std::vector<Tensor> in64{convert(inputs[0], RECUR_F64)};
      std::vector<Tensor> p64;
      for (const Tensor &p : params)
        p64.push_back(convert(p, RECUR_F64));
      Raw r = project(layer, in64, p64, 2, 3, 4);
      Ref ref = oracle(r);
      EXPECT_LE(relErr32(res.outputs[0], mergeHeads(ref.y)), kTolF32);
      EXPECT_LE(relErr32(res.states[0], ref.S), kTolF32);
    }
    // Raw decays, near 1 (long memory) and small (the product of a chunk's
    // 64 decays, ~0.1^64, underflows float32; log space must not care).
    Rng rng(74);
    for (double mu : {3.0, -2.0}) {
      SCOPED_TRACE(mu);
      Layer layer(recur_GLChunked64_layer());
      Raw r = rounded(layer, sigmoidRaw(T, mu, 1.5, rng));
      Result res = layer.forward(feed(layer, r), {});
      EXPECT_FALSE(res.outputs[0].hasNonFinite());
      Ref ref = oracle(r);
      EXPECT_LE(relErr32(res.outputs[0], ref.y), kTolF32);
      EXPECT_LE(relErr32(res.states[0], ref.S), kTolF32);
    }
  }
}

TEST(GL_SUITE, Inv7_Float32SurrogateAttentionUnderflows) {
  // The control for the line above: the plain surrogate attention (17-21)
  // in float32 with the same small sigmoid magnitudes over 64 steps
  // overflows 1/pi_n (pi_n underflows), while the log-space chunked path on
  // the same inputs matches float64.
  Rng rng(75);
  Layer att(recur_GLAttention64_layer()), chunked(recur_GLChunked64_layer());
  Raw r = rounded(att, sigmoidRaw(64, -2.0, 1.5, rng));
  Ref ref = oracle(r);
  Result a = att.forward(feed(att, r), {});
  Result c = chunked.forward(feed(chunked, r), {});
  EXPECT_FALSE(c.outputs[0].hasNonFinite());
  EXPECT_LE(relErr32(c.outputs[0], ref.y), kTolF32);
  double err = relErr32(a.outputs[0], ref.y);
  EXPECT_TRUE(a.outputs[0].hasNonFinite() || !(err <= kTolF32)) << err;
}

#endif // RECUR_GATELOOP_F32

} // namespace
