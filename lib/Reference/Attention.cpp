//===- Attention.cpp - oracle of the recur attention ops ------------------===//
//
// Part of the Recur project.
//
// recur.window_attention, recur.attention and recur.rel_attention (directly
// and with Transformer-XL's rel_shift), the T5 bucket function and the
// Transformer-XL sinusoids.
//
//===----------------------------------------------------------------------===//

#include "recur/Reference/Reference.h"

#include "Util.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace recur::reference;
using namespace recur::reference::detail;

namespace {

/// out[j] = sum_r w_r value(keys[r], j), w = softmax(logits) over the visible
/// keys (max-subtracted). A query that sees no key gets zeros.
template <typename ValueFn>
void attendRow(const std::vector<double> &logits,
               const std::vector<int64_t> &keys, int64_t dv,
               const ValueFn &value, double *out) {
  for (int64_t j = 0; j < dv; ++j)
    out[j] = 0.0;
  if (keys.empty())
    return;
  double max = *std::max_element(logits.begin(), logits.end());
  std::vector<double> w(logits.size());
  double sum = 0.0;
  for (size_t r = 0; r < logits.size(); ++r) {
    w[r] = std::exp(logits[r] - max);
    sum += w[r];
  }
  for (int64_t j = 0; j < dv; ++j) {
    double acc = 0.0;
    for (size_t r = 0; r < keys.size(); ++r)
      acc += w[r] * value(keys[r], j);
    out[j] = acc / sum;
  }
}

double dot(const double *x, const double *y, int64_t d) {
  double s = 0.0;
  for (int64_t e = 0; e < d; ++e)
    s += x[e] * y[e];
  return s;
}

int64_t floorDiv(int64_t x, int64_t y) {
  int64_t q = x / y;
  if ((x % y != 0) && ((x < 0) != (y < 0)))
    --q;
  return q;
}

double resolveScale(std::optional<double> scale, int64_t d,
                    const std::string &op) {
  if (!scale)
    return 1.0 / std::sqrt(static_cast<double>(d));
  if (!(*scale > 0.0 && std::isfinite(*scale)))
    fail(op,
         "'scale' must be positive and finite, got " + std::to_string(*scale));
  return *scale;
}

/// Checks the `[..., T, d]` layout of q, k, v: one rank of at least
/// `minRank`, `k` matching `q` but for the time dimension, `v` matching `k`
/// but for the last.
void checkQKV(const Tensor<double> &q, const Tensor<double> &k,
              const Tensor<double> &v, int64_t minRank, const std::string &op) {
  requireRank(q, minRank, op, "q");
  if (k.rank() != q.rank() || !sameExcept(k.shape, q.shape, q.rank() - 2))
    fail(op, "'k' shape " + shapeString(k.shape) + " must match 'q' shape " +
                 shapeString(q.shape) + " in all but the time dimension");
  if (v.rank() != k.rank() || !sameExcept(v.shape, k.shape, k.rank() - 1))
    fail(op, "'v' shape " + shapeString(v.shape) + " must match 'k' shape " +
                 shapeString(k.shape) + " in all but the last dimension");
}

/// Dense attention of every leading index n: query i sees key j iff
/// visible(n, i, j), with logit scale * q_i . k_j + bias(n, i, j).
template <typename VisibleFn, typename BiasFn>
Tensor<double> denseAttention(const Tensor<double> &q, const Tensor<double> &k,
                              const Tensor<double> &v, double scale,
                              const VisibleFn &visible, const BiasFn &bias) {
  int64_t n = numElements(leading(q.shape, 2));
  int64_t tq = q.dim(-2), tk = k.dim(-2), d = q.dim(-1), dv = v.dim(-1);
  Tensor<double> out(join(leading(q.shape, 1), {dv}));
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t i = 0; i < tq; ++i) {
      std::vector<double> logits;
      std::vector<int64_t> keys;
      const double *qi = &q.data[(b * tq + i) * d];
      for (int64_t j = 0; j < tk; ++j) {
        if (!visible(b, i, j))
          continue;
        keys.push_back(j);
        logits.push_back(scale * dot(qi, &k.data[(b * tk + j) * d], d) +
                         bias(b, i, j));
      }
      attendRow(
          logits, keys, dv,
          [&](int64_t j, int64_t e) { return v.data[(b * tk + j) * dv + e]; },
          &out.data[(b * tq + i) * dv]);
    }
  }
  return out;
}

} // namespace

//===----------------------------------------------------------------------===//
// T5 buckets and window attention
//===----------------------------------------------------------------------===//

int64_t recur::reference::t5Bucket(int64_t distance, int64_t numBuckets,
                                   int64_t maxDistance) {
  if (numBuckets < 2 || numBuckets % 2 != 0)
    fail("t5Bucket", "num_buckets must be even and at least 2, got " +
                         std::to_string(numBuckets));
  int64_t maxExact = numBuckets / 2;
  if (maxDistance <= maxExact)
    fail("t5Bucket", "max_distance (" + std::to_string(maxDistance) +
                         ") must exceed the " + std::to_string(maxExact) +
                         " exact buckets");
  int64_t n = std::max<int64_t>(distance, 0);
  if (n < maxExact)
    return n;
  // Log-spaced from maxExact to maxDistance over the other half.
  double exact = static_cast<double>(maxExact);
  double frac = std::log(static_cast<double>(n) / exact) /
                std::log(static_cast<double>(maxDistance) / exact);
  int64_t bucket =
      maxExact +
      static_cast<int64_t>(frac * static_cast<double>(numBuckets - maxExact));
  return std::min(bucket, numBuckets - 1);
}

Tensor<double> recur::reference::windowAttention(
    const Tensor<double> &q, const Tensor<double> &k, const Tensor<double> &v,
    const WindowAttentionAttrs &attrs,
    const std::optional<Tensor<double>> &bias,
    const std::optional<Tensor<double>> &kCache,
    const std::optional<Tensor<double>> &vCache) {
  const std::string op = "window_attention";
  checkQKV(q, k, v, 2, op);
  requireShape(k, q.shape, op, "k");
  if (attrs.window < 1)
    fail(op,
         "'window' must be at least 1, got " + std::to_string(attrs.window));
  if (attrs.block < 0 || (attrs.block > 0 && attrs.window % attrs.block != 0))
    fail(op, "'block' must be 0 or divide 'window' (" +
                 std::to_string(attrs.window) + "), got " +
                 std::to_string(attrs.block));
  int64_t t = q.dim(-2), d = q.dim(-1), dv = v.dim(-1);
  int64_t n = numElements(leading(q.shape, 2));
  double scale = resolveScale(attrs.scale, d, op);

  int64_t heads = 1;
  if (attrs.biasKind == BiasKind::None) {
    if (bias)
      fail(op, "a 'bias' operand needs bias kind t5 or alibi");
  } else {
    if (!bias)
      fail(op, "bias kind t5 or alibi needs a 'bias' operand");
    requireRank(q, 3, op, "q");
    heads = q.dim(-3);
    if (attrs.biasKind == BiasKind::T5) {
      t5Bucket(0, attrs.numBuckets, attrs.maxDistance); // checks the attrs
      requireShape(*bias, {heads, attrs.numBuckets}, op, "bias");
    } else {
      requireShape(*bias, {heads}, op, "bias");
    }
  }

  if (kCache.has_value() != vCache.has_value())
    fail(op, "'k_cache' and 'v_cache' must be given together");
  int64_t c = 0;
  if (kCache) {
    requireRank(*kCache, q.rank(), op, "k_cache");
    c = kCache->dim(-2);
    std::vector<int64_t> kcShape = q.shape, vcShape = v.shape;
    kcShape[q.rank() - 2] = c;
    vcShape[v.rank() - 2] = c;
    requireShape(*kCache, kcShape, op, "k_cache");
    requireShape(*vCache, vcShape, op, "v_cache");
  }

  // Query position p sees key position pp (cache at -c .. -1).
  auto visible = [&](int64_t p, int64_t pp) {
    int64_t delta = p - pp;
    if (attrs.block == 0)
      return attrs.includeSelf ? (delta >= 0 && delta <= attrs.window - 1)
                               : (delta >= 1 && delta <= attrs.window);
    int64_t minDelta = attrs.includeSelf ? 0 : 1;
    int64_t blocksBack = attrs.window / attrs.block;
    return delta >= minDelta &&
           floorDiv(pp, attrs.block) >= floorDiv(p, attrs.block) - blocksBack;
  };
  auto positionBias = [&](int64_t head, int64_t delta) {
    switch (attrs.biasKind) {
    case BiasKind::None:
      return 0.0;
    case BiasKind::T5:
      return bias->data[head * attrs.numBuckets +
                        t5Bucket(delta, attrs.numBuckets, attrs.maxDistance)];
    case BiasKind::Alibi:
      return -bias->data[head] * static_cast<double>(delta);
    }
    return 0.0;
  };
  auto keyAt = [&](int64_t b, int64_t r) -> const double * {
    return r < c ? &kCache->data[(b * c + r) * d]
                 : &k.data[(b * t + (r - c)) * d];
  };
  auto valueAt = [&](int64_t b, int64_t r, int64_t e) {
    return r < c ? vCache->data[(b * c + r) * dv + e]
                 : v.data[(b * t + (r - c)) * dv + e];
  };

  Tensor<double> out(v.shape);
  for (int64_t b = 0; b < n; ++b) {
    int64_t head = b % heads;
    for (int64_t p = 0; p < t; ++p) {
      std::vector<double> logits;
      std::vector<int64_t> keys;
      const double *qp = &q.data[(b * t + p) * d];
      for (int64_t r = 0; r < c + t; ++r) {
        int64_t pp = r - c;
        if (!visible(p, pp))
          continue;
        keys.push_back(r);
        logits.push_back(scale * dot(qp, keyAt(b, r), d) +
                         positionBias(head, p - pp));
      }
      attendRow(
          logits, keys, dv,
          [&](int64_t r, int64_t e) { return valueAt(b, r, e); },
          &out.data[(b * t + p) * dv]);
    }
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Dense attention
//===----------------------------------------------------------------------===//

Tensor<double>
recur::reference::attention(const Tensor<double> &q, const Tensor<double> &k,
                            const Tensor<double> &v,
                            const AttentionAttrs &attrs,
                            const std::optional<Tensor<bool>> &keyPadding) {
  const std::string op = "attention";
  checkQKV(q, k, v, 2, op);
  int64_t tq = q.dim(-2), tk = k.dim(-2);
  double scale = resolveScale(attrs.scale, q.dim(-1), op);
  if (attrs.mask == MaskKind::Causal && tk < tq)
    fail(op, "causal mask needs at least as many keys as queries, got " +
                 std::to_string(tk) + " keys for " + std::to_string(tq) +
                 " queries");
  int64_t slots = attrs.memorySlots;
  if (attrs.mask == MaskKind::Memory) {
    if (tq != tk)
      fail(op, "memory mask needs as many queries as keys");
    if (slots < 1 || slots > tq)
      fail(op, "memory_slots (" + std::to_string(slots) + ") must be in [1, " +
                   std::to_string(tq) + "]");
  }
  if (keyPadding)
    requireShape(*keyPadding, leading(k.shape, 1), op, "key_padding");

  auto visible = [&](int64_t b, int64_t i, int64_t j) {
    if (keyPadding && keyPadding->data[b * tk + j])
      return false;
    switch (attrs.mask) {
    case MaskKind::None:
      return true;
    case MaskKind::Causal:
      return j <= i + (tk - tq);
    case MaskKind::Memory:
      // A slot row sees its own slot and every token; a token row sees all.
      return i >= slots || j == i || j >= slots;
    }
    return false;
  };
  return denseAttention(q, k, v, scale, visible,
                        [](int64_t, int64_t, int64_t) { return 0.0; });
}

Tensor<double> recur::reference::maskedAttention(
    const Tensor<double> &q, const Tensor<double> &k, const Tensor<double> &v,
    const Tensor<bool> &visible, const std::optional<Tensor<double>> &bias,
    std::optional<double> scale) {
  const std::string op = "maskedAttention";
  checkQKV(q, k, v, 2, op);
  int64_t tq = q.dim(-2), tk = k.dim(-2);
  std::vector<int64_t> full = join(leading(q.shape, 2), {tq, tk});
  // Offset of (b, i, j) in a [..., Tq, Tk] or a shared [Tq, Tk] operand.
  auto offsetIn = [&](const std::vector<int64_t> &shape, int64_t b, int64_t i,
                      int64_t j) {
    return shape.size() == 2 ? i * tk + j : (b * tq + i) * tk + j;
  };
  auto checkMaskShape = [&](const std::vector<int64_t> &shape,
                            const std::string &name) {
    if (shape != full && shape != std::vector<int64_t>{tq, tk})
      fail(op, "'" + name + "' has shape " + shapeString(shape) +
                   ", expected " + shapeString(full) + " or " +
                   shapeString({tq, tk}));
  };
  checkMaskShape(visible.shape, "visible");
  if (bias)
    checkMaskShape(bias->shape, "bias");
  return denseAttention(
      q, k, v, resolveScale(scale, q.dim(-1), op),
      [&](int64_t b, int64_t i, int64_t j) {
        return static_cast<bool>(
            visible.data[offsetIn(visible.shape, b, i, j)]);
      },
      [&](int64_t b, int64_t i, int64_t j) {
        return bias ? bias->data[offsetIn(bias->shape, b, i, j)] : 0.0;
      });
}

//===----------------------------------------------------------------------===//
// Relative-position attention
//===----------------------------------------------------------------------===//

namespace {

/// The sizes of a rel_attention problem.
struct RelShape {
  int64_t n, heads, l, kk, m, dh;
};

RelShape checkRel(const Tensor<double> &q, const Tensor<double> &k,
                  const Tensor<double> *v, const Tensor<double> &r,
                  const Tensor<double> &u, const Tensor<double> &posBias,
                  const std::string &op) {
  requireRank(q, 3, op, "q");
  if (k.rank() != q.rank() || !sameExcept(k.shape, q.shape, q.rank() - 2))
    fail(op, "'k' shape " + shapeString(k.shape) + " must match 'q' shape " +
                 shapeString(q.shape) + " in all but the time dimension");
  if (v &&
      (v->rank() != k.rank() || !sameExcept(v->shape, k.shape, k.rank() - 1)))
    fail(op, "'v' shape " + shapeString(v->shape) + " must match 'k' shape " +
                 shapeString(k.shape) + " in all but the last dimension");
  RelShape s;
  s.n = numElements(leading(q.shape, 2));
  s.heads = q.dim(-3);
  s.l = q.dim(-2);
  s.kk = k.dim(-2);
  s.dh = q.dim(-1);
  if (s.kk < s.l)
    fail(op, "the " + std::to_string(s.kk) + " keys must cover the " +
                 std::to_string(s.l) + " segment positions (memory first)");
  s.m = s.kk - s.l;
  requireShape(r, {s.heads, s.kk, s.dh}, op, "r");
  requireShape(u, {s.heads, s.dh}, op, "u");
  requireShape(posBias, {s.heads, s.dh}, op, "pos_bias");
  return s;
}

/// softmax(scale * S) v over the keys j <= M + i.
Tensor<double> attendScores(const Tensor<double> &scores,
                            const Tensor<double> &v, const RelShape &s,
                            double scale) {
  int64_t dv = v.dim(-1);
  Tensor<double> out(join(leading(v.shape, 2), {s.l, dv}));
  for (int64_t b = 0; b < s.n; ++b)
    for (int64_t i = 0; i < s.l; ++i) {
      std::vector<double> logits;
      std::vector<int64_t> keys;
      for (int64_t j = 0; j <= s.m + i; ++j) {
        keys.push_back(j);
        logits.push_back(scale * scores.data[(b * s.l + i) * s.kk + j]);
      }
      attendRow(
          logits, keys, dv,
          [&](int64_t j, int64_t e) { return v.data[(b * s.kk + j) * dv + e]; },
          &out.data[(b * s.l + i) * dv]);
    }
  return out;
}

} // namespace

Tensor<double> recur::reference::relAttentionScores(
    const Tensor<double> &q, const Tensor<double> &k, const Tensor<double> &r,
    const Tensor<double> &u, const Tensor<double> &posBias) {
  RelShape s = checkRel(q, k, nullptr, r, u, posBias, "rel_attention");
  Tensor<double> scores(join(leading(q.shape, 2), {s.l, s.kk}),
                        std::numeric_limits<double>::quiet_NaN());
  for (int64_t b = 0; b < s.n; ++b) {
    int64_t h = b % s.heads;
    for (int64_t i = 0; i < s.l; ++i)
      for (int64_t j = 0; j <= s.m + i; ++j) {
        int64_t delta = s.m + i - j;
        int64_t row = s.kk - 1 - delta;
        double content = 0.0, position = 0.0;
        for (int64_t e = 0; e < s.dh; ++e) {
          double qe = q.data[(b * s.l + i) * s.dh + e];
          content +=
              (qe + u.data[h * s.dh + e]) * k.data[(b * s.kk + j) * s.dh + e];
          position += (qe + posBias.data[h * s.dh + e]) *
                      r.data[(h * s.kk + row) * s.dh + e];
        }
        scores.data[(b * s.l + i) * s.kk + j] = content + position;
      }
  }
  return scores;
}

Tensor<double> recur::reference::relAttentionScoresShifted(
    const Tensor<double> &q, const Tensor<double> &k, const Tensor<double> &r,
    const Tensor<double> &u, const Tensor<double> &posBias) {
  RelShape s = checkRel(q, k, nullptr, r, u, posBias, "rel_attention");
  Tensor<double> scores(join(leading(q.shape, 2), {s.l, s.kk}));
  for (int64_t b = 0; b < s.n; ++b) {
    int64_t h = b % s.heads;
    // AC = (q + u) k^T and BD = (q + posBias) r^T, both L x K.
    std::vector<double> ac(s.l * s.kk, 0.0), bd(s.l * s.kk, 0.0);
    for (int64_t i = 0; i < s.l; ++i)
      for (int64_t j = 0; j < s.kk; ++j)
        for (int64_t e = 0; e < s.dh; ++e) {
          double qe = q.data[(b * s.l + i) * s.dh + e];
          ac[i * s.kk + j] +=
              (qe + u.data[h * s.dh + e]) * k.data[(b * s.kk + j) * s.dh + e];
          bd[i * s.kk + j] += (qe + posBias.data[h * s.dh + e]) *
                              r.data[(h * s.kk + j) * s.dh + e];
        }
    // rel_shift: pad a zero column in front (L x (K+1)), read the buffer as
    // (K+1) x L, drop its first row (the first L elements), read the rest
    // back as L x K.
    std::vector<double> padded(s.l * (s.kk + 1), 0.0);
    for (int64_t i = 0; i < s.l; ++i)
      for (int64_t j = 0; j < s.kk; ++j)
        padded[i * (s.kk + 1) + j + 1] = bd[i * s.kk + j];
    std::vector<double> shifted(padded.begin() + s.l, padded.end());
    for (int64_t i = 0; i < s.l; ++i)
      for (int64_t j = 0; j < s.kk; ++j)
        scores.data[(b * s.l + i) * s.kk + j] =
            ac[i * s.kk + j] + shifted[i * s.kk + j];
  }
  return scores;
}

Tensor<double> recur::reference::relAttention(
    const Tensor<double> &q, const Tensor<double> &k, const Tensor<double> &v,
    const Tensor<double> &r, const Tensor<double> &u,
    const Tensor<double> &posBias, std::optional<double> scale) {
  RelShape s = checkRel(q, k, &v, r, u, posBias, "rel_attention");
  return attendScores(relAttentionScores(q, k, r, u, posBias), v, s,
                      resolveScale(scale, s.dh, "rel_attention"));
}

Tensor<double> recur::reference::relAttentionShifted(
    const Tensor<double> &q, const Tensor<double> &k, const Tensor<double> &v,
    const Tensor<double> &r, const Tensor<double> &u,
    const Tensor<double> &posBias, std::optional<double> scale) {
  RelShape s = checkRel(q, k, &v, r, u, posBias, "rel_attention");
  return attendScores(relAttentionScoresShifted(q, k, r, u, posBias), v, s,
                      resolveScale(scale, s.dh, "rel_attention"));
}

//===----------------------------------------------------------------------===//
// Sinusoids
//===----------------------------------------------------------------------===//

Tensor<double>
recur::reference::sinusoidEncoding(const std::vector<double> &positions,
                                   int64_t d) {
  if (d < 2 || d % 2 != 0)
    fail("sinusoidEncoding",
         "width must be even and positive, got " + std::to_string(d));
  int64_t half = d / 2;
  int64_t count = static_cast<int64_t>(positions.size());
  Tensor<double> out({count, d});
  for (int64_t p = 0; p < count; ++p)
    for (int64_t m = 0; m < half; ++m) {
      double w = std::pow(10000.0, -2.0 * static_cast<double>(m) /
                                       static_cast<double>(d));
      out.data[p * d + m] = std::sin(positions[p] * w);
      out.data[p * d + half + m] = std::cos(positions[p] * w);
    }
  return out;
}

Tensor<double> recur::reference::relativeSinusoids(int64_t klen, int64_t d) {
  if (klen < 0)
    fail("relativeSinusoids", "negative length " + std::to_string(klen));
  std::vector<double> distances;
  for (int64_t n = 0; n < klen; ++n)
    distances.push_back(static_cast<double>(klen - 1 - n));
  return sinusoidEncoding(distances, d);
}
