//===- BlockRecurrent.cpp - the Block-Recurrent Transformer's invariants --===//
//
// Part of the Recur project.
//
// One test per line under "What tests must show" in
// ../shared/reference/block-recurrent.md, named Inv<N>_..., on the layers of
// examples/block_recurrent.recur and specs/block_recurrent_forms.recur
// compiled in double precision with D=16 H=2 W=4 S=3 F=24
// (InvariantTests.cmake). The claims that hold for a stack (2, 3's cache,
// 4, 7, 9) are also checked on BlockRecurrentFeedback, the feedback
// variant's reader layer under the recurrent one:
//
//  1 tiled W x 2W == dense band mask; no self-attention
//      Inv1_TiledBandAttentionEqualsDenseBandMask
//      Inv1_NoTokenAttendsToItsOwnKey
//  2 segment-length invariance   Inv2_SegmentLengthInvariance
//  3 truncation                  Inv3_NoGradientThroughTheCarriedCache
//                                Inv3_StatePathCarriesGradientAcrossBlocks
//  4 causality                   Inv4_PerturbingTokenJChangesNothingBeforeJ
//                                Inv4_BlockTDependsOnCtNeverCtPlusOne
//                                (own key: Inv1_NoTokenAttendsToItsOwnKey)
//  5 permutations                Inv5_PermutingStateRowsIdsAndInitPermutesState
//                                Inv5_PermutingTokenKeyValueRowsKeepsState
//  6 gate algebra Inv6_FixedGateWithZeroCandidateDecaysGeometrically
//                                Inv6_LstmGateWithZeroWeightsIsSigmoidOfBiases
//  7 reset of one row            Inv7_StartFlagResetsOnlyItsRow
//  8 schedules                   Inv8_BlockLoopEqualsStepsEqualsTwoPhase
//  9 token-by-token decoding     Inv9_TokenByTokenDecodeEqualsBlockParallel
// 10 T5 buckets                  Inv10_T5BucketsExactThenLogThenLast
//
// Tolerances: f64 kernels; 1e-12 relative where the two sides compute the
// same sums in another order or with other ops (a few hundred roundings of
// 1.1e-16 each); exact bits where the arithmetic is the same.
//
//===----------------------------------------------------------------------===//

#include "Harness.h"

#include "BandDense.h"
#include "BandTiled.h"
#include "BlockRecurrentDualFixed.h"
#include "BlockRecurrentDualLSTM.h"
#include "BlockRecurrentFeedback.h"
#include "BlockRecurrentSingleFixed.h"
#include "BlockRecurrentSingleLSTM.h"
#include "BlockRecurrentSkipFixed.h"
#include "BlockRecurrentSkipFixedTwoPhase.h"
#include "BlockRecurrentSkipLSTM.h"
#include "SlidingWindow.h"
#include "T5Probe.h"
#include "T5ProbeSelf.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <numeric>

using namespace recur::invariants;

namespace {

constexpr int64_t W = 4, S = 3, D = 16, H = 2;
constexpr double kTol = 1e-12;

/// Every recurrent configuration of the example spec (one layer each).
std::vector<Layer> recurrentLayers() {
  return {Layer(recur_BlockRecurrentSkipFixed_layer()),
          Layer(recur_BlockRecurrentSkipLSTM_layer()),
          Layer(recur_BlockRecurrentSingleFixed_layer()),
          Layer(recur_BlockRecurrentSingleLSTM_layer()),
          Layer(recur_BlockRecurrentDualFixed_layer()),
          Layer(recur_BlockRecurrentDualLSTM_layer())};
}

/// The configurations and the feedback variant (a reader layer under the
/// recurrent one, both reading c_t), for the claims that hold for a stack.
std::vector<Layer> withFeedback() {
  std::vector<Layer> layers = recurrentLayers();
  layers.push_back(Layer(recur_BlockRecurrentFeedback_layer()));
  return layers;
}

/// Params drawn with normal stds of at least 0.3 (attention well away from
/// uniform) and a random T5 table.
std::vector<Tensor> drawParams(const Layer &layer, Rng &rng) {
  std::vector<Tensor> params = layer.params(rng, 0.3);
  for (int32_t i = 0; i < layer.desc()->num_args; ++i) {
    const recur_arg_desc &a = layer.desc()->args[i];
    if (a.role == RECUR_ROLE_PARAM && std::string(a.name) == "t5")
      fillNormal(params[a.index], rng, 1.0);
  }
  return params;
}

/// Inputs of `blocks` blocks for `batch` rows, every row starting.
std::vector<Tensor> drawInputs(const Layer &layer, int64_t batch,
                               int64_t blocks, Rng &rng) {
  std::vector<Tensor> in =
      layer.randomInputs({{"B", batch}, {"T", blocks * W}}, rng);
  in[layer.input("start")].fill(1.0);
  return in;
}

/// States after a random warm-up segment of two blocks (so that the state
/// and cache are not at their init).
std::vector<Tensor> warmStates(const Layer &layer,
                               const std::vector<Tensor> &params, int64_t batch,
                               Rng &rng) {
  return layer.forward(drawInputs(layer, batch, 2, rng), params).states;
}

/// The time positions [t0, t0 + n) of y [B, T, D].
Tensor positions(const Tensor &y, int64_t t0, int64_t n) {
  return slice(y, 1, t0, n);
}

//===----------------------------------------------------------------------===//
// 1. tiled W x 2W attention == dense N x (N+W) attention with the band mask;
//    no self-attention of a token.
//===----------------------------------------------------------------------===//

/// The unidirectional T5 bucket (Raffel et al.): distances below
/// num_buckets / 2 exact, then log-spaced up to max_distance, then the last.
int64_t t5Bucket(int64_t distance, int64_t buckets = 32,
                 int64_t maxDistance = 128) {
  int64_t exact = buckets / 2;
  if (distance < exact)
    return distance;
  int64_t b =
      exact + static_cast<int64_t>(std::log(double(distance) / exact) /
                                   std::log(double(maxDistance) / exact) *
                                   double(buckets - exact));
  return std::min(b, buckets - 1);
}

TEST(BlockRecurrent, Inv1_TiledBandAttentionEqualsDenseBandMask) {
  Layer tiled(recur_BandTiled_layer()), dense(recur_BandDense_layer());
  constexpr int64_t T = 12;
  Rng rng(11);
  std::vector<Tensor> params = tiled.params(rng);
  std::vector<Tensor> in = tiled.randomInputs({{"B", 2}}, rng, 2.0);
  // The dense form's additive bias: the T5 bias inside the band
  // 1 <= p - p' <= W (key p' = position in [cache; tokens] minus W), -1e300
  // (exp gives exactly 0) outside it.
  std::vector<Tensor> denseIn = in;
  Tensor bias(RECUR_F64, {H, T, W + T});
  const Tensor &t5 = params[tiled.param("t5")];
  for (int64_t h = 0; h < H; ++h)
    for (int64_t p = 0; p < T; ++p)
      for (int64_t j = 0; j < W + T; ++j) {
        int64_t delta = p - (j - W);
        bias.set(bias.offset({h, p, j}),
                 delta >= 1 && delta <= W ? t5({h, t5Bucket(delta)}) : -1e300);
      }
  denseIn.push_back(bias);
  Tensor yTiled = tiled.forward(in, params).outputs[0];
  Tensor yDense = dense.forward(denseIn, {}).outputs[0];
  EXPECT_FALSE(yTiled.hasNonFinite());
  EXPECT_LE(relErr(yTiled, yDense), kTol);
  // Control: a band of W + 1 keys (one more, as with include_self) differs.
  for (int64_t h = 0; h < H; ++h)
    for (int64_t p = 0; p < T; ++p)
      denseIn.back().set(bias.offset({h, p, p + W}), t5({h, 0}));
  EXPECT_GT(relErr(dense.forward(denseIn, {}).outputs[0], yDense), 1e-3);
}

TEST(BlockRecurrent, Inv1_NoTokenAttendsToItsOwnKey) {
  Layer tiled(recur_BandTiled_layer());
  Rng rng(12);
  std::vector<Tensor> params = tiled.params(rng);
  std::vector<Tensor> in = tiled.randomInputs({{"B", 1}}, rng);
  Tensor y = tiled.forward(in, params).outputs[0];
  for (int64_t p : {0, 3, 4, 7, 11}) {
    // Changing token p's value (and key) leaves query p's output alone...
    std::vector<Tensor> moved = in;
    for (int64_t h = 0; h < H; ++h)
      for (int64_t e = 0; e < 3; ++e) {
        moved[tiled.input("v")].set(in[2].offset({0, h, p, e}), 100.0 + e);
        moved[tiled.input("k")].set(in[1].offset({0, h, p, e}), -5.0 + e);
      }
    Tensor y2 = tiled.forward(moved, params).outputs[0];
    for (int64_t h = 0; h < H; ++h)
      for (int64_t e = 0; e < 3; ++e)
        EXPECT_EQ(y2.at(y.offset({0, h, p, e})), y.at(y.offset({0, h, p, e})))
            << "query " << p << " read its own key";
    // ...and changes the next query's (control).
    if (p + 1 < 12)
      EXPECT_NE(y2.at(y.offset({0, 0, p + 1, 0})),
                y.at(y.offset({0, 0, p + 1, 0})));
  }
}

//===----------------------------------------------------------------------===//
// 2. segment-length invariance.
//===----------------------------------------------------------------------===//

TEST(BlockRecurrent, Inv2_SegmentLengthInvariance) {
  constexpr int64_t blocks = 6;
  for (const Layer &layer : withFeedback()) {
    SCOPED_TRACE(layer.desc()->name);
    Rng rng(2);
    std::vector<Tensor> params = drawParams(layer, rng);
    std::vector<Tensor> in = drawInputs(layer, 2, blocks, rng);
    Result whole = layer.forward(in, params);
    // Segments of 1, 2 and 3 blocks, and of 1 then 5, the state carried.
    for (std::vector<int64_t> cuts : std::vector<std::vector<int64_t>>{
             {1, 1, 1, 1, 1, 1}, {2, 2, 2}, {3, 3}, {1, 5}}) {
      std::vector<Tensor> states, ys;
      int64_t t = 0;
      for (int64_t n : cuts) {
        std::vector<Tensor> part = in;
        part[layer.input("x")] = slice(in[layer.input("x")], 1, t * W, n * W);
        if (t > 0)
          part[layer.input("start")].fill(0.0);
        Result r = layer.forward(part, params, states);
        states = r.states;
        ys.push_back(r.outputs[0]);
        t += n;
      }
      EXPECT_LE(relErr(concat(ys, 1), whole.outputs[0]), kTol);
      for (size_t i = 0; i < states.size(); ++i)
        EXPECT_LE(relErr(states[i], whole.states[i]), kTol) << "state " << i;
    }
  }
}

//===----------------------------------------------------------------------===//
// 3. truncation: no gradient into the previous segment; within a segment the
//    state path carries gradient across blocks.
//===----------------------------------------------------------------------===//

TEST(BlockRecurrent, Inv3_NoGradientThroughTheCarriedCache) {
  for (const Layer &layer : withFeedback()) {
    SCOPED_TRACE(layer.desc()->name);
    Rng rng(3);
    std::vector<Tensor> params = drawParams(layer, rng);
    std::vector<Tensor> states = warmStates(layer, params, 2, rng);
    std::vector<Tensor> in = drawInputs(layer, 2, 3, rng);
    in[layer.input("start")].fill(0.0);
    Tensor dy = layer.outputs(layer.dimsOf(in))[0];
    // A cotangent on the next caches (every state but c) alone: they are
    // stored with stop_gradient, so nothing of this segment gets gradient.
    std::vector<Tensor> dStates = layer.states({{"B", 2}});
    for (size_t i = 0; i < dStates.size(); ++i)
      if (static_cast<int>(i) != layer.state("c"))
        fillNormal(dStates[i], rng);
    Grads g = layer.backward(in, params, states, {dy}, dStates);
    for (const auto &group : {g.inputs, g.params, g.states})
      for (const Tensor &t : group)
        EXPECT_EQ(maxAbs(t), 0.0);
    // Control: a cotangent on the next recurrent state c does reach the
    // segment's tokens, the params and the initial state.
    dStates = layer.states({{"B", 2}});
    fillNormal(dStates[layer.state("c")], rng);
    g = layer.backward(in, params, states, {dy}, dStates);
    EXPECT_GT(maxAbs(g.inputs[layer.input("x")]), 1e-6);
    EXPECT_GT(maxAbs(g.states[layer.state("c")]), 1e-6);
  }
}

TEST(BlockRecurrent, Inv3_StatePathCarriesGradientAcrossBlocks) {
  // y of block 2 sees the tokens of blocks 1 and 2 through attention, and
  // block 0 only through the state c_1, c_2.
  Layer sliding(recur_SlidingWindow_layer());
  for (const Layer &layer : recurrentLayers()) {
    SCOPED_TRACE(layer.desc()->name);
    Rng rng(31);
    std::vector<Tensor> params = drawParams(layer, rng);
    std::vector<Tensor> in = drawInputs(layer, 1, 3, rng);
    Tensor dy = layer.outputs(layer.dimsOf(in))[0];
    for (int64_t t = 2 * W; t < 3 * W; ++t)
      for (int64_t d = 0; d < D; ++d)
        dy.set(dy.offset({0, t, d}), rng.normal());
    Grads g = layer.backward(in, params, {}, {dy});
    const Tensor &gx = g.inputs[layer.input("x")];
    // The gradient at block 0 is not zero, and it is the derivative: a
    // central difference of <dy, y> at x[0, 1, 5].
    EXPECT_GT(maxAbs(slice(gx, 1, 0, W)), 1e-8);
    auto loss = [&](double delta) {
      std::vector<Tensor> moved = in;
      Tensor &x = moved[layer.input("x")];
      x.set(x.offset({0, 1, 5}), x.at(x.offset({0, 1, 5})) + delta);
      Tensor y = layer.forward(moved, params).outputs[0];
      double l = 0.0;
      for (int64_t i = 0; i < y.numel(); ++i)
        l += y.at(i) * dy.at(i);
      return l;
    };
    double h = 1e-5, fd = (loss(h) - loss(-h)) / (2 * h);
    double an = gx.at(gx.offset({0, 1, 5}));
    // Central differences in f64 at h = 1e-5: truncation ~h^2 |f'''| and
    // rounding ~1e-16 |f| / h, both below 1e-8 relative to these values.
    EXPECT_NEAR(an, fd, 1e-7 * std::max(1.0, std::fabs(fd)));
    EXPECT_GT(std::fabs(an), 1e-8);
  }
  // Control: the sliding-window layer has no state path; block 0 gets no
  // gradient from block 2.
  Rng rng(32);
  std::vector<Tensor> params = drawParams(sliding, rng);
  std::vector<Tensor> in = drawInputs(sliding, 1, 3, rng);
  Tensor dy = sliding.outputs(sliding.dimsOf(in))[0];
  for (int64_t t = 2 * W; t < 3 * W; ++t)
    for (int64_t d = 0; d < D; ++d)
      dy.set(dy.offset({0, t, d}), rng.normal());
  Grads g = sliding.backward(in, params, {}, {dy});
  EXPECT_EQ(maxAbs(slice(g.inputs[sliding.input("x")], 1, 0, W)), 0.0);
  EXPECT_GT(maxAbs(slice(g.inputs[sliding.input("x")], 1, W, W)), 1e-8);
}

//===----------------------------------------------------------------------===//
// 4. causality; block t depends on c_t, never c_{t+1}.
//===----------------------------------------------------------------------===//

TEST(BlockRecurrent, Inv4_PerturbingTokenJChangesNothingBeforeJ) {
  std::vector<Layer> layers = withFeedback();
  layers.push_back(Layer(recur_SlidingWindow_layer()));
  for (const Layer &layer : layers) {
    SCOPED_TRACE(layer.desc()->name);
    Rng rng(4);
    std::vector<Tensor> params = drawParams(layer, rng);
    std::vector<Tensor> states = warmStates(layer, params, 1, rng);
    std::vector<Tensor> in = drawInputs(layer, 1, 3, rng);
    in[layer.input("start")].fill(0.0);
    Result base = layer.forward(in, params, states);
    for (int64_t j : {0, 1, 3, 4, 6, 7, 8, 11}) {
      std::vector<Tensor> moved = in;
      Tensor &x = moved[layer.input("x")];
      for (int64_t d = 0; d < D; ++d)
        x.set(x.offset({0, j, d}), x.at(x.offset({0, j, d})) + 1.0);
      Tensor y = layer.forward(moved, params, states).outputs[0];
      EXPECT_TRUE(
          sameBits(positions(y, 0, j), positions(base.outputs[0], 0, j)))
          << "token " << j << " changed an earlier output";
      EXPECT_GT(
          maxAbsDiff(positions(y, j, 1), positions(base.outputs[0], j, 1)),
          1e-6)
          << "token " << j << " did not change its own output (control)";
    }
  }
}

TEST(BlockRecurrent, Inv4_BlockTDependsOnCtNeverCtPlusOne) {
  // The candidate's projection (Wo_s in skip and dual, W2_s in single) acts
  // only on c_{t+1}: changing it leaves block 0 (which reads c_0) bit for
  // bit and changes block 1 (which reads c_1).
  for (const Layer &layer : withFeedback()) {
    SCOPED_TRACE(layer.desc()->name);
    Rng rng(41);
    std::vector<Tensor> params = drawParams(layer, rng);
    std::vector<Tensor> states = warmStates(layer, params, 1, rng);
    std::vector<Tensor> in = drawInputs(layer, 1, 2, rng);
    in[layer.input("start")].fill(0.0);
    Tensor y = layer.forward(in, params, states).outputs[0];
    std::string name = layer.desc()->name;
    std::vector<Tensor> moved = params;
    fillNormal(moved[layer.param(
                   name.find("Single") != std::string::npos ? "W2_s" : "Wo_s")],
               rng);
    Tensor y2 = layer.forward(in, moved, states).outputs[0];
    EXPECT_TRUE(sameBits(positions(y2, 0, W), positions(y, 0, W)));
    EXPECT_GT(maxAbsDiff(positions(y2, W, W), positions(y, W, W)), 1e-6);
    // Block 0 does read c_0 (control).
    std::vector<Tensor> movedStates = states;
    fillNormal(movedStates[layer.state("c")], rng);
    Tensor y3 = layer.forward(in, params, movedStates).outputs[0];
    EXPECT_GT(maxAbsDiff(positions(y3, 0, W), positions(y, 0, W)), 1e-6);
  }
}

//===----------------------------------------------------------------------===//
// 5. permutations.
//===----------------------------------------------------------------------===//

/// Rows of axis `axis` of `t` reordered: row r of the result is row
/// perm[r] of t.
Tensor permuteRows(const Tensor &t, int axis,
                   const std::vector<int64_t> &perm) {
  std::vector<Tensor> rows;
  for (int64_t r : perm)
    rows.push_back(slice(t, axis, r, 1));
  return concat(rows, axis);
}

TEST(BlockRecurrent, Inv5_PermutingStateRowsIdsAndInitPermutesState) {
  const std::vector<int64_t> perm = {2, 0, 1};
  for (const Layer &layer : recurrentLayers()) {
    SCOPED_TRACE(layer.desc()->name);
    Rng rng(5);
    std::vector<Tensor> params = drawParams(layer, rng);
    std::vector<Tensor> states = warmStates(layer, params, 1, rng);
    std::vector<Tensor> in = drawInputs(layer, 1, 1, rng);
    in[layer.input("start")].fill(0.0);
    Result base = layer.forward(in, params, states);
    std::vector<Tensor> pParams = params, pStates = states;
    pParams[layer.param("P")] = permuteRows(params[layer.param("P")], 0, perm);
    pParams[layer.param("c0")] =
        permuteRows(params[layer.param("c0")], 0, perm);
    pStates[layer.state("c")] = permuteRows(states[layer.state("c")], 1, perm);
    Result moved = layer.forward(in, pParams, pStates);
    EXPECT_LE(relErr(moved.states[layer.state("c")],
                     permuteRows(base.states[layer.state("c")], 1, perm)),
              kTol);
    EXPECT_LE(relErr(moved.outputs[0], base.outputs[0]), kTol);
    // Control: the state rows alone, without their IDs, do not commute.
    pParams[layer.param("P")] = params[layer.param("P")];
    Result rowsOnly = layer.forward(in, pParams, pStates);
    EXPECT_GT(relErr(rowsOnly.states[layer.state("c")],
                     moved.states[layer.state("c")]),
              1e-6);
  }
}

TEST(BlockRecurrent, Inv5_PermutingTokenKeyValueRowsKeepsState) {
  // The 2W keys and values the state reads are the cache's W rows and the
  // block's W tokens; reorder both (the tokens by reordering x within the
  // block).
  const std::vector<int64_t> cachePerm = {3, 1, 0, 2}, tokenPerm = {1, 3, 2, 0};
  for (const Layer &layer : recurrentLayers()) {
    SCOPED_TRACE(layer.desc()->name);
    Rng rng(51);
    std::vector<Tensor> params = drawParams(layer, rng);
    std::vector<Tensor> states = warmStates(layer, params, 1, rng);
    std::vector<Tensor> in = drawInputs(layer, 1, 1, rng);
    in[layer.input("start")].fill(0.0);
    Result base = layer.forward(in, params, states);
    std::vector<Tensor> pIn = in, pStates = states;
    pIn[layer.input("x")] = permuteRows(in[layer.input("x")], 1, tokenPerm);
    for (const char *kv : {"kc", "vc"})
      pStates[layer.state(kv)] =
          permuteRows(states[layer.state(kv)], 2, cachePerm);
    Result moved = layer.forward(pIn, params, pStates);
    EXPECT_LE(
        relErr(moved.states[layer.state("c")], base.states[layer.state("c")]),
        kTol);
    // Control: the tokens' outputs do depend on the order.
    EXPECT_GT(
        relErr(moved.outputs[0], permuteRows(base.outputs[0], 1, tokenPerm)),
        1e-6);
  }
}

//===----------------------------------------------------------------------===//
// 6. gate algebra.
//===----------------------------------------------------------------------===//

TEST(BlockRecurrent, Inv6_FixedGateWithZeroCandidateDecaysGeometrically) {
  // Skip with Wo_s = 0: the candidate z = h1 Wo_s is 0, so
  // c_t = c_0 * sigmoid(b_g)^t after t blocks.
  Layer layer(recur_BlockRecurrentSkipFixed_layer());
  Rng rng(6);
  std::vector<Tensor> params = drawParams(layer, rng);
  params[layer.param("Wo_s")].fill(0.0);
  fillNormal(params[layer.param("bg")], rng, 2.0);
  std::vector<Tensor> states =
      warmStates(layer, drawParams(layer, rng), 1, rng);
  const Tensor &c0 = states[layer.state("c")];
  for (int64_t blocks : {1, 2, 5}) {
    std::vector<Tensor> in = drawInputs(layer, 1, blocks, rng);
    in[layer.input("start")].fill(0.0);
    Tensor c = layer.forward(in, params, states).states[layer.state("c")];
    Tensor expected = c0;
    for (int64_t s = 0; s < S; ++s)
      for (int64_t d = 0; d < D; ++d) {
        double g = 1.0 / (1.0 + std::exp(-params[layer.param("bg")].at(d)));
        expected.set(c0.offset({0, s, d}),
                     c0.at(c0.offset({0, s, d})) * std::pow(g, blocks));
      }
    EXPECT_LE(relErr(c, expected), kTol) << blocks << " blocks";
  }
}

/// Copies the params of `from` into those of `to` with the same name.
std::vector<Tensor> paramsByName(const Layer &from,
                                 const std::vector<Tensor> &values,
                                 const Layer &to, Rng &rng) {
  std::vector<Tensor> out = to.params(rng);
  for (int32_t i = 0; i < to.desc()->num_args; ++i) {
    const recur_arg_desc &a = to.desc()->args[i];
    if (a.role != RECUR_ROLE_PARAM)
      continue;
    bool found = false;
    for (int32_t j = 0; j < from.desc()->num_args; ++j) {
      const recur_arg_desc &b = from.desc()->args[j];
      if (b.role == RECUR_ROLE_PARAM && std::string(a.name) == b.name) {
        out[a.index] = values[b.index];
        found = true;
      }
    }
    if (!found)
      out[a.index].fill(0.0); // the lstm gates' weights and biases
  }
  return out;
}

TEST(BlockRecurrent, Inv6_LstmGateWithZeroWeightsIsSigmoidOfBiases) {
  // With zero gate weights and biases the lstm gate is
  // c * sigmoid(1) + z * sigmoid(-1): the fixed gate with b_g = 1, since
  // 1 - sigmoid(1) = sigmoid(-1). Each lstm configuration against its fixed
  // twin with the same other params.
  struct Pair {
    const recur_layer_desc *fixed, *lstm;
    std::vector<const char *> biases;
  };
  for (const Pair &pair :
       std::vector<Pair>{{recur_BlockRecurrentSkipFixed_layer(),
                          recur_BlockRecurrentSkipLSTM_layer(),
                          {"bg"}},
                         {recur_BlockRecurrentSingleFixed_layer(),
                          recur_BlockRecurrentSingleLSTM_layer(),
                          {"bg"}},
                         {recur_BlockRecurrentDualFixed_layer(),
                          recur_BlockRecurrentDualLSTM_layer(),
                          {"bg1", "bg2"}}}) {
    Layer fixed(pair.fixed), lstm(pair.lstm);
    SCOPED_TRACE(lstm.desc()->name);
    Rng rng(61);
    std::vector<Tensor> fp = drawParams(fixed, rng);
    for (const char *b : pair.biases)
      fp[fixed.param(b)].fill(1.0);
    std::vector<Tensor> lp = paramsByName(fixed, fp, lstm, rng);
    std::vector<Tensor> in = drawInputs(fixed, 2, 3, rng);
    Result a = fixed.forward(in, fp), b = lstm.forward(in, lp);
    EXPECT_LE(relErr(b.outputs[0], a.outputs[0]), kTol);
    EXPECT_LE(relErr(b.states[0], a.states[0]), kTol);
    // Control: b_g = 0.5 is another gate.
    for (const char *bias : pair.biases)
      fp[fixed.param(bias)].fill(0.5);
    EXPECT_GT(relErr(fixed.forward(in, fp).states[0], b.states[0]), 1e-6);
  }
}

//===----------------------------------------------------------------------===//
// 7. reset.
//===----------------------------------------------------------------------===//

TEST(BlockRecurrent, Inv7_StartFlagResetsOnlyItsRow) {
  std::vector<Layer> layers = withFeedback();
  layers.push_back(Layer(recur_SlidingWindow_layer()));
  for (const Layer &layer : layers) {
    SCOPED_TRACE(layer.desc()->name);
    Rng rng(7);
    std::vector<Tensor> params = drawParams(layer, rng);
    std::vector<Tensor> states = warmStates(layer, params, 3, rng);
    std::vector<Tensor> in = drawInputs(layer, 3, 2, rng);
    Tensor &start = in[layer.input("start")];
    start.fill(0.0);
    start.set(1, 1.0);
    Result mixed = layer.forward(in, params, states);
    start.fill(0.0);
    Result carried = layer.forward(in, params, states);
    start.fill(1.0);
    Result fresh = layer.forward(in, params, layer.initialStates(params, 3));
    for (int64_t row = 0; row < 3; ++row) {
      const Result &want = row == 1 ? fresh : carried;
      EXPECT_TRUE(sameBits(slice(mixed.outputs[0], 0, row, 1),
                           slice(want.outputs[0], 0, row, 1)))
          << "row " << row;
      for (size_t s = 0; s < mixed.states.size(); ++s)
        EXPECT_TRUE(sameBits(slice(mixed.states[s], 0, row, 1),
                             slice(want.states[s], 0, row, 1)))
            << "row " << row << " state " << s;
    }
    // Control: the reset row's output differs from the carried one.
    EXPECT_GT(maxAbsDiff(slice(mixed.outputs[0], 0, 1, 1),
                         slice(carried.outputs[0], 0, 1, 1)),
              1e-6);
  }
}

//===----------------------------------------------------------------------===//
// 8. schedules: the block loop in one kernel call == one block a call
//    (recur_step, the host's loop) == the two-phase schedule.
//===----------------------------------------------------------------------===//

TEST(BlockRecurrent, Inv8_BlockLoopEqualsStepsEqualsTwoPhase) {
  Layer layer(recur_BlockRecurrentSkipFixed_layer());
  Layer twoPhase(recur_BlockRecurrentSkipFixedTwoPhase_layer());
  Rng rng(8);
  std::vector<Tensor> params = drawParams(layer, rng);
  std::vector<Tensor> states = warmStates(layer, params, 2, rng);
  std::vector<Tensor> in = drawInputs(layer, 2, 5, rng);
  in[layer.input("start")].set(0, 0.0); // row 0 carries, row 1 starts
  Result loop = layer.forward(in, params, states);
  Result steps = layer.stepwise(in, params, states, {layer.input("start")});
  Result phases = twoPhase.forward(in, params, states);
  EXPECT_LE(relErr(steps.outputs[0], loop.outputs[0]), kTol);
  EXPECT_LE(relErr(phases.outputs[0], loop.outputs[0]), kTol);
  for (int s = 0; s < 3; ++s) {
    EXPECT_LE(relErr(steps.states[s], loop.states[s]), kTol);
    EXPECT_LE(relErr(phases.states[s], loop.states[s]), kTol);
  }
  // Control: the two-phase form does read the state (another c_0 changes
  // its tokens' outputs).
  std::vector<Tensor> other = states;
  fillNormal(other[layer.state("c")], rng);
  EXPECT_GT(
      relErr(twoPhase.forward(in, params, other).outputs[0], phases.outputs[0]),
      1e-6);
}

//===----------------------------------------------------------------------===//
// 9. token-by-token decoding with a state update every W tokens.
//===----------------------------------------------------------------------===//

TEST(BlockRecurrent, Inv9_TokenByTokenDecodeEqualsBlockParallel) {
  // The decoder examples/infer runs: token p of a block is answered by the
  // block's kernel from the state at the block's start, with the tokens
  // not yet seen as zeros (causality: they cannot reach position p); the
  // state and cache advance once the block's W tokens are in.
  for (const Layer &layer : withFeedback()) {
    SCOPED_TRACE(layer.desc()->name);
    Rng rng(9);
    std::vector<Tensor> params = drawParams(layer, rng);
    constexpr int64_t blocks = 3;
    std::vector<Tensor> in = drawInputs(layer, 2, blocks, rng);
    Result parallel = layer.forward(in, params);
    std::vector<Tensor> states = layer.initialStates(params, 2);
    const Tensor &x = in[layer.input("x")];
    std::vector<Tensor> ys;
    for (int64_t b = 0; b < blocks; ++b) {
      std::vector<Tensor> block = in;
      block[layer.input("x")] = slice(x, 1, b * W, W);
      if (b > 0)
        block[layer.input("start")].fill(0.0);
      for (int64_t p = 0; p < W; ++p) {
        std::vector<Tensor> partial = block;
        Tensor &xp = partial[layer.input("x")];
        for (int64_t r = 0; r < 2; ++r)
          for (int64_t q = p + 1; q < W; ++q)
            for (int64_t d = 0; d < D; ++d)
              xp.set(xp.offset({r, q, d}), 0.0);
        ys.push_back(
            positions(layer.forward(partial, params, states).outputs[0], p, 1));
      }
      states = layer.forward(block, params, states).states;
    }
    EXPECT_LE(relErr(concat(ys, 1), parallel.outputs[0]), kTol);
    for (size_t s = 0; s < states.size(); ++s)
      EXPECT_LE(relErr(states[s], parallel.states[s]), kTol);
  }
}

//===----------------------------------------------------------------------===//
// 10. T5 buckets: distances 0-15 exact, >= 128 in bucket 31.
//===----------------------------------------------------------------------===//

/// The bucket the compiled kernel gives each distance 0 .. R (-1: none
/// seen), read from the attention weights of T5Probe or T5ProbeSelf with
/// the table t5[b] = b / 8: the weight of key p' is proportional to
/// exp(bucket(p - p') / 8).
std::vector<int64_t> probeBuckets(const Layer &layer, int64_t reference) {
  constexpr int64_t R = 130, N = 130;
  Rng rng(10);
  std::vector<Tensor> params = layer.params(rng);
  for (int64_t b = 0; b < 32; ++b)
    params[0].set(b, b / 8.0);
  std::vector<Tensor> in = layer.inputs({{"B", 1}});
  Tensor &v = in[layer.input("v")], &vc = in[layer.input("vc")];
  for (int64_t j = 0; j < R; ++j)
    vc.set(vc.offset({0, 0, j, j}), 1.0);
  for (int64_t p = 0; p < N; ++p)
    v.set(v.offset({0, 0, p, R + p}), 1.0);
  Tensor y = layer.forward(in, params).outputs[0];
  std::vector<int64_t> bucket(R + 1, -1);
  // The last query sees distances up to R; its weight at the reference
  // distance (bucket `reference`) fixes the scale.
  int64_t p = N - 1;
  double ref = y.at(y.offset({0, 0, p, R + p - reference}));
  for (int64_t delta = 0; delta <= R; ++delta) {
    double w = y.at(y.offset({0, 0, p, R + p - delta}));
    if (w == 0.0)
      continue;
    double b = reference + 8.0 * std::log(w / ref);
    EXPECT_NEAR(b, std::round(b), 1e-9) << "distance " << delta;
    bucket[delta] = static_cast<int64_t>(std::round(b));
  }
  return bucket;
}

TEST(BlockRecurrent, Inv10_T5BucketsExactThenLogThenLast) {
  std::vector<int64_t> band = probeBuckets(Layer(recur_T5Probe_layer()), 1);
  std::vector<int64_t> self = probeBuckets(Layer(recur_T5ProbeSelf_layer()), 1);
  EXPECT_EQ(band[0], -1) << "distance 0 is outside the band";
  EXPECT_EQ(self[0], 0);
  EXPECT_EQ(self[130], -1) << "include_self ends at distance R - 1";
  for (int64_t d = 1; d <= 15; ++d) {
    EXPECT_EQ(band[d], d) << "distance " << d << " is not exact";
    EXPECT_EQ(self[d], d);
  }
  for (int64_t d = 128; d <= 130; ++d)
    EXPECT_EQ(band[d], 31) << "distance " << d;
  EXPECT_EQ(self[128], 31);
  EXPECT_EQ(self[129], 31);
  // In between: log-spaced, as the T5 formula, and never decreasing.
  for (int64_t d = 16; d < 128; ++d) {
    EXPECT_EQ(band[d], t5Bucket(d)) << "distance " << d;
    EXPECT_GE(band[d], band[d - 1]);
  }
  // By hand: 16 + floor(16 log(d / 16) / log 8) reaches 31 at d = 113
  // (16 * 8^(15/16) = 112.4).
  EXPECT_EQ(band[16], 16);
  EXPECT_EQ(band[32], 21);
  EXPECT_EQ(band[112], 30);
  EXPECT_EQ(band[113], 31);
}

} // namespace
