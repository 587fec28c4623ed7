//===- BlockRecurrent.cpp - the Block-Recurrent Transformer's invariants --===//
//
// Part of the Recur project.
//
// One test per line under "What tests must show" in
// ../shared/reference/block-recurrent.md (numbered as there), on the layers
// of examples/block_recurrent.recur compiled in double precision with
// D=16 H=2 W=4 S=3 F=24 (InvariantTests.cmake).
//
//===----------------------------------------------------------------------===//

#include "Harness.h"

#include "BlockRecurrentDualFixed.h"
#include "BlockRecurrentDualLSTM.h"
#include "BlockRecurrentSingleFixed.h"
#include "BlockRecurrentSingleLSTM.h"
#include "BlockRecurrentSkipFixed.h"
#include "BlockRecurrentSkipLSTM.h"
#include "SlidingWindow.h"

#include <gtest/gtest.h>

using namespace recur::invariants;

namespace {

constexpr int64_t W = 4;

TEST(BlockRecurrent, Smoke) {
  Layer layer(recur_BlockRecurrentSkipFixed_layer());
  Rng rng(1);
  auto params = layer.params(rng, 0.3);
  auto inputs = layer.randomInputs({{"B", 2}, {"T", 3 * W}}, rng);
  inputs[layer.input("start")].fill(1.0);
  Result whole = layer.forward(inputs, params);
  Result steps = layer.stepwise(inputs, params, {}, {layer.input("start")});
  EXPECT_LE(relErr(steps.outputs[0], whole.outputs[0]), 1e-12);
}

} // namespace
