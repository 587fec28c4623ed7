//===- memory_horizon.cpp - GateLoop on a memory task ---------------------===//
//
// Part of the Recur project.
//
// recur-train-horizon trains a small language model whose blocks are the
// layers of examples/train/gateloop_lm.recur on a memory-horizon task, and
// evaluates it on held-out sequences (docs/training.md).
//
// The task (ours: the GateLoop paper names its memory-horizon experiment but
// does not define the generator). Tokens are the digits 0 .. M-1 and a reset
// token R = M. A sequence starts with R; every later token is R with
// probability p, else a uniform digit. The target at a digit is the sum of
// the digits since the last R, itself included, mod M; R has no target.
// Loss and accuracy count the digit positions only. Data-controlled
// transitions can solve it exactly in one block: |a| -> 0 at R resets the
// state, and a phase of 2 pi d / M at digit d rotates it by the digit. A
// fixed transition is the same at every position and can do neither.
//
//===----------------------------------------------------------------------===//

#include "lm.h"

#include "FixedGateLoopBlock.h"
#include "GateLoopBlock.h"

#include <cstdio>
#include <limits>

using namespace recur::train;

namespace {

const char *const kUsage = R"(usage: recur-train-horizon [options]

Trains a language model whose blocks are compiled GateLoop layers on the
memory-horizon task, then prints the accuracy on held-out sequences.

  --variant=gateloop|fixed  data-controlled transitions (GateLoopBlock) or a
                            learned constant transition (FixedGateLoopBlock)
                            (default gateloop)
  --seed=N                  initialization and training data (default 1)
  --steps=N                 optimizer steps (default 200)
  --batch=N                 sequences per step (default 8)
  --seq=N                   tokens per sequence (default 256)
  --layers=N                blocks (default 2)
  --lr=X                    peak learning rate (default 2.5e-3)
  --warmup=N                warmup steps (default 50)
  --weight-decay=X          AdamW weight decay of matrices (default 0.05)
  --modulus=M               digits 0 .. M-1 (default 5)
  --reset-prob=P            probability of a reset token (default 0.05)
  --eval-sequences=N        held-out sequences (default 128)
  --log-every=N             steps per progress line (default 25)
  --threads=N               threads (default: OMP_NUM_THREADS or all cores)
  --save=FILE               write the trained weights (safetensors)
  --load=FILE               start from saved weights
  --eval-only               evaluate only (with --load)
  --help                    this text

Prints `step <n> loss <x> lr <lr> tokens/s <y>` every --log-every steps and
`eval accuracy <x> loss <y> positions <n>` at the end.
)";

struct Task {
  int32_t modulus = 5;
  double resetProb = 0.05;
};

/// One sequence: R first, then R with probability p or a uniform digit; the
/// target of a digit is the running sum mod M since the last R (-1 at R).
void makeSequence(const Task &task, Rng &rng, int64_t time, int32_t *tokens,
                  int32_t *targets) {
  const int32_t reset = task.modulus;
  int32_t sum = 0;
  for (int64_t t = 0; t < time; ++t) {
    if (t == 0 || rng.uniform() < task.resetProb) {
      tokens[t] = reset;
      targets[t] = -1;
      sum = 0;
      continue;
    }
    int32_t digit = static_cast<int32_t>(rng.below(task.modulus));
    sum = (sum + digit) % task.modulus;
    tokens[t] = digit;
    targets[t] = sum;
  }
}

void makeBatch(const Task &task, Rng &rng, int64_t batch, int64_t time,
               Batch &out) {
  out.batch = batch;
  out.time = time;
  out.tokens.resize(batch * time);
  out.targets.resize(batch * time);
  for (int64_t b = 0; b < batch; ++b)
    makeSequence(task, rng, time, out.tokens.data() + b * time,
                 out.targets.data() + b * time);
}

} // namespace

int main(int argc, char **argv) {
  Options opts(argc, argv, {"help", "eval-only"},
               {"variant", "seed", "steps", "batch", "seq", "layers", "lr",
                "warmup", "weight-decay", "modulus", "reset-prob",
                "eval-sequences", "log-every", "threads", "save", "load"});
  if (opts.has("help")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  std::string variant = opts.get("variant", "gateloop");
  const recur_layer_desc *block = nullptr;
  if (variant == "gateloop")
    block = recur_GateLoopBlock_layer();
  else if (variant == "fixed")
    block = recur_FixedGateLoopBlock_layer();
  else
    fatal("--variant must be gateloop or fixed, not '" + variant + "'");

  Task task;
  task.modulus = static_cast<int32_t>(opts.getInt("modulus", 5));
  task.resetProb = opts.getDouble("reset-prob", 0.05);
  uint64_t seed = static_cast<uint64_t>(opts.getInt("seed", 1));
  int64_t steps = opts.getInt("steps", 200);
  int64_t batch = opts.getInt("batch", 8);
  int64_t seq = opts.getInt("seq", 256);
  int64_t evalSequences = opts.getInt("eval-sequences", 128);
  int64_t logEvery = opts.getInt("log-every", 25);
  if (task.modulus < 2 || task.modulus > 1000)
    fatal("--modulus must be between 2 and 1000");
  if (!(task.resetProb >= 0 && task.resetProb < 1))
    fatal("--reset-prob must be in [0, 1)");
  if (steps < 0 || batch < 1 || seq < 2 || evalSequences < 1 || logEvery < 1)
    fatal("--steps must be >= 0, --batch, --eval-sequences and --log-every "
          ">= 1, --seq >= 2");
  setThreads(static_cast<int>(opts.getInt("threads", 0)));

  int64_t layers = opts.getInt("layers", 2);
  if (layers < 1)
    fatal("--layers must be >= 1");
  ModelConfig config;
  config.blocks.assign(layers, block);
  config.vocab = task.modulus + 1;
  Model model(config, seed ^ 0x5eedf00dull);
  std::map<std::string, std::string> metadata = {{"task", "memory-horizon"},
                                                 {"variant", variant}};
  std::printf("model: variant %s, %s\n", variant.c_str(),
              model.summary().c_str());
  std::printf("task: modulus %d, reset probability %g, %lld x %lld tokens "
              "per step\n",
              task.modulus, task.resetProb, static_cast<long long>(batch),
              static_cast<long long>(seq));
  std::fflush(stdout);

  if (opts.has("load")) {
    model.load(opts.get("load", ""), metadata);
    std::printf("loaded %s\n", opts.get("load", "").c_str());
  }
  double start = now();
  if (!opts.has("eval-only")) {
    AdamW optimizer(adamWFromOptions(opts, 2.5e-3, 50, steps));
    Rng data(seed ^ 0xda7a5eedull);
    train(model, optimizer, steps, logEvery,
          [&](Batch &b) { makeBatch(task, data, batch, seq, b); });
  }
  double trainSeconds = now() - start;
  if (opts.has("save")) {
    model.save(opts.get("save", ""), metadata);
    std::printf("saved %s\n", opts.get("save", "").c_str());
  }

  // The held-out sequences come from a fixed seed of their own.
  Rng heldOut(0xe7a1u);
  std::vector<Batch> batches;
  for (int64_t done = 0; done < evalSequences; done += batch) {
    batches.emplace_back();
    makeBatch(task, heldOut, std::min(batch, evalSequences - done), seq,
              batches.back());
  }
  // Accuracy by the number of digits since the last reset (the target's
  // horizon): a fixed transition can only look back a few positions.
  const int64_t bucketEnds[] = {2, 8, 32, std::numeric_limits<int64_t>::max()};
  const char *bucketNames[] = {"1-2", "3-8", "9-32", "33+"};
  int64_t bucketCount[4] = {0, 0, 0, 0}, bucketCorrect[4] = {0, 0, 0, 0};
  Score score;
  for (const Batch &b : batches) {
    score.add(model.forward(b, false));
    const std::vector<int32_t> &predicted = model.predictions();
    for (int64_t row = 0; row < b.batch; ++row) {
      int64_t since = 0;
      for (int64_t t = 0; t < b.time; ++t) {
        int64_t i = row * b.time + t;
        if (b.targets[i] < 0) {
          since = 0;
          continue;
        }
        ++since;
        int k = 0;
        while (since > bucketEnds[k])
          ++k;
        ++bucketCount[k];
        bucketCorrect[k] += predicted[i] == b.targets[i];
      }
    }
  }
  std::printf("train seconds %.1f\n", trainSeconds);
  std::printf("eval accuracy by digits since reset:");
  for (int k = 0; k < 4; ++k)
    std::printf(" %s %.4f (%lld)", bucketNames[k],
                bucketCount[k]
                    ? static_cast<double>(bucketCorrect[k]) / bucketCount[k]
                    : 0.0,
                static_cast<long long>(bucketCount[k]));
  std::printf("\neval accuracy %.4f loss %.4f positions %lld\n",
              score.accuracy(), score.loss(),
              static_cast<long long>(score.count));
  return 0;
}
