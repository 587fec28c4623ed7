//===- GatedLinearAttention.cpp - oracle of gated_linear_attention --------===//
//
// Part of the Recur project.
//
// Three independent evaluations of GateLoop's matrix-state recurrence
// (gateloop.md): the recurrent loop (Eq. 7-8), the chunked form with
// log-space decays relative to each chunk start, and the O(T^2) surrogate
// attention (Eq. 17-21).
//
//===----------------------------------------------------------------------===//

#include "recur/Reference/Reference.h"

#include "Util.h"

#include <algorithm>
#include <cmath>

using namespace recur::reference;
using namespace recur::reference::detail;

namespace {

/// The sizes of a gated_linear_attention problem: `n` leading indices
/// (batch, heads, ...), `t` steps, key width `dk`, value width `dv`.
struct GlaShape {
  int64_t n, t, dk, dv;
  std::vector<int64_t> lead;
};

template <typename S>
GlaShape checkGla(const Tensor<double> &q, const Tensor<double> &k,
                  const Tensor<double> &v, const Tensor<S> &a,
                  const std::optional<Tensor<S>> &init, const std::string &op) {
  requireRank(q, 2, op, "q");
  requireShape(k, q.shape, op, "k");
  requireShape(a, q.shape, op, "a");
  if (v.rank() != q.rank() || !sameExcept(v.shape, q.shape, q.rank() - 1))
    fail(op, "'v' shape " + shapeString(v.shape) + " must match 'k' shape " +
                 shapeString(k.shape) + " in all but the last dimension");
  GlaShape s;
  s.lead = leading(q.shape, 2);
  s.n = numElements(s.lead);
  s.t = q.dim(-2);
  s.dk = q.dim(-1);
  s.dv = v.dim(-1);
  if (init)
    requireShape(*init, join(s.lead, {s.dk, s.dv}), op, "init");
  return s;
}

template <typename S> S fromComplex(const Complex &z);
template <> double fromComplex<double>(const Complex &z) { return z.real(); }
template <> Complex fromComplex<Complex>(const Complex &z) { return z; }

//===----------------------------------------------------------------------===//
// Recurrent
//===----------------------------------------------------------------------===//

template <typename S>
GlaResult<S> recurrentImpl(const Tensor<double> &q, const Tensor<double> &k,
                           const Tensor<double> &v, const Tensor<S> &a,
                           const std::optional<Tensor<S>> &init) {
  GlaShape sh = checkGla(q, k, v, a, init, "gated_linear_attention");
  GlaResult<S> result{Tensor<double>(v.shape),
                      Tensor<S>(join(sh.lead, {sh.dk, sh.dv}))};
  for (int64_t n = 0; n < sh.n; ++n) {
    // S[i][j] for this leading index.
    std::vector<S> state(sh.dk * sh.dv, S(0));
    if (init)
      for (int64_t e = 0; e < sh.dk * sh.dv; ++e)
        state[e] = init->data[n * sh.dk * sh.dv + e];
    for (int64_t t = 0; t < sh.t; ++t) {
      int64_t rowK = (n * sh.t + t) * sh.dk; // q, k, a at (n, t, 0)
      int64_t rowV = (n * sh.t + t) * sh.dv; // v, y at (n, t, 0)
      for (int64_t i = 0; i < sh.dk; ++i)
        for (int64_t j = 0; j < sh.dv; ++j)
          state[i * sh.dv + j] = a.data[rowK + i] * state[i * sh.dv + j] +
                                 k.data[rowK + i] * v.data[rowV + j];
      for (int64_t j = 0; j < sh.dv; ++j) {
        double y = 0.0;
        for (int64_t i = 0; i < sh.dk; ++i)
          y += re(q.data[rowK + i] * state[i * sh.dv + j]);
        result.y.data[rowV + j] = y;
      }
    }
    for (int64_t e = 0; e < sh.dk * sh.dv; ++e)
      result.state.data[n * sh.dk * sh.dv + e] = state[e];
  }
  return result;
}

//===----------------------------------------------------------------------===//
// Chunked
//===----------------------------------------------------------------------===//

/// Log-space prefix products of the decays of one key index inside a chunk:
/// entry m (m = 0 .. len) covers the chunk's first m steps since the last
/// zero factor. Zero factors are counted instead of taking log 0, so a
/// reset gives an exact zero; two entries with the same count lie after the
/// same last zero, and their difference is the log of the product between
/// them.
struct LogPrefix {
  std::vector<double> logMag; // sum of log|a| over the nonzero factors
  std::vector<double> phase;  // sum of arg a
  std::vector<int64_t> zeros; // number of zero factors

  explicit LogPrefix(int64_t len)
      : logMag(len + 1), phase(len + 1), zeros(len + 1) {}

  /// prod a over the chunk steps [from, to) (from <= to).
  Complex decay(int64_t from, int64_t to) const {
    if (zeros[to] != zeros[from])
      return Complex(0.0, 0.0);
    double mag = std::exp(logMag[to] - logMag[from]);
    double ph = phase[to] - phase[from];
    return Complex(mag * std::cos(ph), mag * std::sin(ph));
  }
};

template <typename S>
GlaResult<S> chunkedImpl(const Tensor<double> &q, const Tensor<double> &k,
                         const Tensor<double> &v, const Tensor<S> &a,
                         const std::optional<Tensor<S>> &init, int64_t chunk) {
  const std::string op = "gated_linear_attention (chunked)";
  GlaShape sh = checkGla(q, k, v, a, init, op);
  if (chunk < 1)
    fail(op, "chunk size must be positive, got " + std::to_string(chunk));
  GlaResult<S> result{Tensor<double>(v.shape),
                      Tensor<S>(join(sh.lead, {sh.dk, sh.dv}))};
  auto qAt = [&](int64_t n, int64_t t, int64_t i) {
    return q.data[(n * sh.t + t) * sh.dk + i];
  };
  auto kAt = [&](int64_t n, int64_t t, int64_t i) {
    return k.data[(n * sh.t + t) * sh.dk + i];
  };
  auto vAt = [&](int64_t n, int64_t t, int64_t j) {
    return v.data[(n * sh.t + t) * sh.dv + j];
  };

  for (int64_t n = 0; n < sh.n; ++n) {
    // The state entering the current chunk, always complex here.
    std::vector<Complex> state(sh.dk * sh.dv, Complex(0.0, 0.0));
    if (init)
      for (int64_t e = 0; e < sh.dk * sh.dv; ++e)
        state[e] = Complex(init->data[n * sh.dk * sh.dv + e]);

    for (int64_t start = 0; start < sh.t; start += chunk) {
      int64_t len = std::min(chunk, sh.t - start);

      // Decays relative to the chunk start, per key index.
      std::vector<LogPrefix> prefix(sh.dk, LogPrefix(len));
      for (int64_t i = 0; i < sh.dk; ++i) {
        LogPrefix &p = prefix[i];
        for (int64_t m = 0; m < len; ++m) {
          Complex am(a.data[(n * sh.t + start + m) * sh.dk + i]);
          p.logMag[m + 1] = p.logMag[m];
          p.phase[m + 1] = p.phase[m];
          p.zeros[m + 1] = p.zeros[m];
          if (am == Complex(0.0, 0.0)) {
            // Every product spanning a zero is 0: count it and restart the
            // sums, so what follows a reset never reads what came before.
            ++p.zeros[m + 1];
            p.logMag[m + 1] = 0.0;
            p.phase[m + 1] = 0.0;
          } else {
            p.logMag[m + 1] += std::log(std::abs(am));
            p.phase[m + 1] += std::arg(am);
          }
        }
      }

      // Outputs: the carried state decayed to step m, plus the intra-chunk
      // contributions of steps r <= m decayed from r to m.
      for (int64_t m = 0; m < len; ++m) {
        int64_t t = start + m;
        for (int64_t j = 0; j < sh.dv; ++j) {
          double y = 0.0;
          for (int64_t i = 0; i < sh.dk; ++i) {
            Complex inter = prefix[i].decay(0, m + 1) * state[i * sh.dv + j];
            Complex intra(0.0, 0.0);
            for (int64_t r = 0; r <= m; ++r)
              intra += prefix[i].decay(r + 1, m + 1) *
                       (kAt(n, start + r, i) * vAt(n, start + r, j));
            y += (qAt(n, t, i) * (inter + intra)).real();
          }
          result.y.data[(n * sh.t + t) * sh.dv + j] = y;
        }
      }

      // The state leaving the chunk: the chunk's total decay times the
      // entering state, plus every step's contribution decayed to the end.
      std::vector<Complex> next(sh.dk * sh.dv);
      for (int64_t i = 0; i < sh.dk; ++i) {
        for (int64_t j = 0; j < sh.dv; ++j) {
          Complex s = prefix[i].decay(0, len) * state[i * sh.dv + j];
          for (int64_t r = 0; r < len; ++r)
            s += prefix[i].decay(r + 1, len) *
                 (kAt(n, start + r, i) * vAt(n, start + r, j));
          next[i * sh.dv + j] = s;
        }
      }
      state = next;
    }
    for (int64_t e = 0; e < sh.dk * sh.dv; ++e)
      result.state.data[n * sh.dk * sh.dv + e] = fromComplex<S>(state[e]);
  }
  return result;
}

//===----------------------------------------------------------------------===//
// Surrogate attention
//===----------------------------------------------------------------------===//

template <typename S>
GlaResult<S> surrogateImpl(const Tensor<double> &q, const Tensor<double> &k,
                           const Tensor<double> &v, const Tensor<S> &a,
                           const std::optional<Tensor<S>> &init) {
  const std::string op = "gated_linear_attention (surrogate)";
  GlaShape sh = checkGla(q, k, v, a, init, op);
  GlaResult<S> result{Tensor<double>(v.shape),
                      Tensor<S>(join(sh.lead, {sh.dk, sh.dv}))};
  for (int64_t n = 0; n < sh.n; ++n) {
    // Pi[t][i] = prod_{r <= t} a_r[i] (Eq. 17).
    std::vector<Complex> pi(sh.t * sh.dk);
    for (int64_t i = 0; i < sh.dk; ++i) {
      Complex p(1.0, 0.0);
      for (int64_t t = 0; t < sh.t; ++t) {
        p *= Complex(a.data[(n * sh.t + t) * sh.dk + i]);
        if (p == Complex(0.0, 0.0))
          fail(op, "the cumulative decay reaches 0 at step " +
                       std::to_string(t) +
                       "; surrogate attention needs nonzero decays");
        pi[t * sh.dk + i] = p;
      }
    }
    // Qt = Q * Pi, Kt = K / Pi (elementwise).
    std::vector<Complex> qt(sh.t * sh.dk), kt(sh.t * sh.dk);
    for (int64_t t = 0; t < sh.t; ++t)
      for (int64_t i = 0; i < sh.dk; ++i) {
        int64_t e = (n * sh.t + t) * sh.dk + i;
        qt[t * sh.dk + i] = q.data[e] * pi[t * sh.dk + i];
        kt[t * sh.dk + i] = k.data[e] / pi[t * sh.dk + i];
      }
    // P = (Qt Kt^T) with the causal mask (plain transpose, no conjugate).
    std::vector<Complex> p(sh.t * sh.t, Complex(0.0, 0.0));
    for (int64_t t = 0; t < sh.t; ++t)
      for (int64_t r = 0; r <= t; ++r) {
        Complex s(0.0, 0.0);
        for (int64_t i = 0; i < sh.dk; ++i)
          s += qt[t * sh.dk + i] * kt[r * sh.dk + i];
        p[t * sh.t + r] = s;
      }
    // Y = Re(P V + Qt S_init).
    for (int64_t t = 0; t < sh.t; ++t)
      for (int64_t j = 0; j < sh.dv; ++j) {
        Complex y(0.0, 0.0);
        for (int64_t r = 0; r <= t; ++r)
          y += p[t * sh.t + r] * v.data[(n * sh.t + r) * sh.dv + j];
        if (init)
          for (int64_t i = 0; i < sh.dk; ++i)
            y += qt[t * sh.dk + i] *
                 Complex(init->data[(n * sh.dk + i) * sh.dv + j]);
        result.y.data[(n * sh.t + t) * sh.dv + j] = y.real();
      }
    // Final state: Pi_{T-1} (S_init + sum_r Kt_r^T v_r).
    for (int64_t i = 0; i < sh.dk; ++i)
      for (int64_t j = 0; j < sh.dv; ++j) {
        Complex s(0.0, 0.0);
        if (init)
          s = Complex(init->data[(n * sh.dk + i) * sh.dv + j]);
        for (int64_t r = 0; r < sh.t; ++r)
          s += kt[r * sh.dk + i] * v.data[(n * sh.t + r) * sh.dv + j];
        if (sh.t > 0)
          s *= pi[(sh.t - 1) * sh.dk + i];
        result.state.data[(n * sh.dk + i) * sh.dv + j] = fromComplex<S>(s);
      }
  }
  return result;
}

} // namespace

GlaResult<double> recur::reference::gatedLinearAttention(
    const Tensor<double> &q, const Tensor<double> &k, const Tensor<double> &v,
    const Tensor<double> &a, const std::optional<Tensor<double>> &init) {
  return recurrentImpl(q, k, v, a, init);
}

GlaResult<Complex> recur::reference::gatedLinearAttention(
    const Tensor<double> &q, const Tensor<double> &k, const Tensor<double> &v,
    const Tensor<Complex> &a, const std::optional<Tensor<Complex>> &init) {
  return recurrentImpl(q, k, v, a, init);
}

GlaResult<double> recur::reference::gatedLinearAttentionChunked(
    const Tensor<double> &q, const Tensor<double> &k, const Tensor<double> &v,
    const Tensor<double> &a, const std::optional<Tensor<double>> &init,
    int64_t chunk) {
  return chunkedImpl(q, k, v, a, init, chunk);
}

GlaResult<Complex> recur::reference::gatedLinearAttentionChunked(
    const Tensor<double> &q, const Tensor<double> &k, const Tensor<double> &v,
    const Tensor<Complex> &a, const std::optional<Tensor<Complex>> &init,
    int64_t chunk) {
  return chunkedImpl(q, k, v, a, init, chunk);
}

GlaResult<double> recur::reference::gatedLinearAttentionSurrogate(
    const Tensor<double> &q, const Tensor<double> &k, const Tensor<double> &v,
    const Tensor<double> &a, const std::optional<Tensor<double>> &init) {
  return surrogateImpl(q, k, v, a, init);
}

GlaResult<Complex> recur::reference::gatedLinearAttentionSurrogate(
    const Tensor<double> &q, const Tensor<double> &k, const Tensor<double> &v,
    const Tensor<Complex> &a, const std::optional<Tensor<Complex>> &init) {
  return surrogateImpl(q, k, v, a, init);
}
