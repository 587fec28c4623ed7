//===- lm.h - a language model around compiled layers -----------*- C++ -*-===//
//
// Part of the Recur project.
//
// What the training programs of examples/train/ share: a seeded random
// generator, parameters initialized from the init rules a layer's
// descriptor carries, a language model whose blocks are compiled Recur
// layers (token embedding -> blocks -> LayerNorm -> head -> softmax
// cross-entropy), AdamW with warmup, cosine decay and gradient clipping,
// the training loop with its progress lines, and weights saved and loaded
// in the safetensors format.
//
// Each block is one layer compiled by recurc: a whole residual block
// x f32[B, T, D] -> y f32[B, T, D] whose forward and backward are the
// kernels of its object (recur_forward, recur_backward). Everything around
// the blocks is written here by hand, forward and backward.
//
// Every result is a function of the seed: the hand-written loops give each
// output element to one thread, which sums in a fixed order, so a run prints
// the same numbers whatever the thread count.
//
//===----------------------------------------------------------------------===//

#ifndef RECUR_EXAMPLES_TRAIN_LM_H
#define RECUR_EXAMPLES_TRAIN_LM_H

#include "recur/Runtime/recur_rt.h"

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace recur::train {

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

/// Prints `error: <message>` to stderr and exits with status 1.
[[noreturn]] void fatal(const std::string &message);

/// Exits through fatal() with recur_last_error() when `status` is not
/// RECUR_OK; `call` names the call in the message.
void check(recur_status status, const char *call);

//===----------------------------------------------------------------------===//
// Random numbers
//===----------------------------------------------------------------------===//

/// xoshiro256** seeded through splitmix64, with Box-Muller normals: the same
/// numbers on every platform and standard library (unlike the distributions
/// of <random>, whose algorithms are left to the library).
class Rng {
public:
  explicit Rng(uint64_t seed);
  uint64_t next();
  /// Uniform in [0, 1), 53 random bits.
  double uniform();
  /// Uniform in [0, n), without modulo bias.
  uint64_t below(uint64_t n);
  /// Standard normal.
  double normal();

private:
  uint64_t s_[4];
  bool haveSpare_ = false;
  double spare_ = 0.0;
};

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

/// An init rule of the Recur language, as a descriptor's `init_rule` spells
/// it: zeros, ones, const(v), normal(std), truncnormal(std) (redrawn beyond
/// 2 std), uniform(low, high).
struct InitRule {
  enum Kind { Zeros, Ones, Const, Normal, TruncNormal, Uniform } kind = Zeros;
  double a = 0.0, b = 0.0;
};

/// Parses `spelling` ("" reads as zeros, the language's default); exits
/// through fatal() naming `what` on a rule it does not know.
InitRule parseInitRule(const std::string &spelling, const std::string &what);

/// Fills `data` with `n` draws of `rule` from `rng`.
void initialize(const InitRule &rule, float *data, int64_t n, Rng &rng);

/// A trained f32 tensor with its gradient and AdamW moments.
struct Param {
  std::string name; ///< as saved: "embed", "block.0.Wq", "norm.g", "head"
  std::vector<int64_t> shape;
  std::vector<float> value, grad, m, v;
  /// Matrices (rank >= 2) decay; gains, biases and vectors do not.
  bool decay = false;

  int64_t numel() const { return static_cast<int64_t>(value.size()); }
  recur_tensor view();
  recur_tensor gradView();
};

//===----------------------------------------------------------------------===//
// The model
//===----------------------------------------------------------------------===//

/// The shape of a model. The blocks' own sizes (width, FFN, window...) are
/// compile-time in their specs; the vocabulary and the stack are chosen here.
struct ModelConfig {
  /// The compiled residual block of each layer, bottom first: input x
  /// f32[B, T, D], output y f32[B, T, D] (the same D for all), and any
  /// other input a per-row start flag f32[B]. A layer may repeat.
  std::vector<const recur_layer_desc *> blocks;
  int64_t vocab = 0;

  int64_t layers() const { return static_cast<int64_t>(blocks.size()); }
  /// Whether every layer is the same block.
  bool uniform() const;
  /// "N x Name" for a stack of one block, else the names bottom first.
  std::string describe() const;
};

/// One batch: tokens and targets [batch, time], row-major.
struct Batch {
  int64_t batch = 0, time = 0;
  std::vector<int32_t> tokens, targets;
  /// Per row, the blocks' start flags: 1.0 where the row starts a new
  /// document, 0.0 where it goes on from the same row of the previous batch
  /// (with Model::carryStates). Empty: every row starts.
  std::vector<float> starts;
};

/// Loss and accuracy summed over the positions a batch counts.
struct Score {
  double lossSum = 0.0; ///< nats
  int64_t count = 0;    ///< positions with a target
  int64_t correct = 0;  ///< of which the argmax was right
  double loss() const { return count ? lossSum / count : 0.0; }
  double accuracy() const {
    return count ? static_cast<double>(correct) / count : 0.0;
  }
  void add(const Score &other);
};

/// Token embedding [V, D] -> `layers` compiled blocks -> LayerNorm -> head
/// [D, V] (untied, no bias) -> softmax cross-entropy against per-position
/// targets (-1: not counted).
class Model {
public:
  /// Allocates the parameters and initializes them from `seed`: the
  /// embedding and head normal(0.02), the norm's gain ones and bias zeros,
  /// each block's params by the init rules of its spec.
  Model(const ModelConfig &config, uint64_t seed);
  ~Model();
  Model(const Model &) = delete;
  Model &operator=(const Model &) = delete;

  const ModelConfig &config() const { return config_; }
  int64_t width() const { return width_; }
  std::vector<Param> &params() { return params_; }
  int64_t parameterCount() const;
  /// Parameters of block `block` (its compiled layer's params).
  int64_t blockParameterCount(size_t block) const;
  /// "2 x Name (width 64), vocab 256, 201632 params (84368 per block)"; for
  /// a stack of different blocks, their names and counts bottom first
  /// ("A, B (width 64), ..., (73000 + 84368 per block)").
  std::string summary() const;

  /// Without carried states (the default), every forward() starts the
  /// blocks from their init rules. With them, each block keeps its state
  /// (recurrent state, K/V cache) from one forward() to the next, so a
  /// batch continues the rows of the previous one, and backward() starts
  /// from the state the forward started from (gradients stop at the batch
  /// boundary: truncated backpropagation through time). Either call drops
  /// the states carried so far.
  void carryStates(bool carry);

  /// Runs the model on `batch` and scores it against its targets. With
  /// `keepForBackward`, keeps what backward() needs.
  Score forward(const Batch &batch, bool keepForBackward);
  /// The gradient of the mean loss of the last forward() over the positions
  /// it counted, into every Param::grad (overwritten).
  void backward();
  /// The most likely token at each position of the last forward() [B, T].
  const std::vector<int32_t> &predictions() const { return predictions_; }
  /// The loss in nats at each position of the last forward() [B, T]; 0
  /// where the target is -1.
  const std::vector<double> &losses() const { return losses_; }

  /// Writes the weights to `path` in the safetensors format, with the
  /// model's shape and `metadata` in the header's __metadata__.
  void save(const std::string &path,
            const std::map<std::string, std::string> &metadata) const;
  /// Reads weights written by save(); exits through fatal() with what is
  /// wrong when the file is not a safetensors file, misses a tensor, has
  /// another shape or dtype, or its metadata disagree with the model's or
  /// with `metadata`.
  void load(const std::string &path,
            const std::map<std::string, std::string> &metadata);

private:
  std::map<std::string, std::string> shapeMetadata() const;
  /// Block `block`'s inputs with `x` [B, T, D] as x and the row flags.
  std::vector<recur_tensor> blockInputs(size_t block, float *x);
  /// Views of block `block`'s params, or of their gradients.
  std::vector<recur_tensor> blockParams(size_t block, bool gradients);
  void dropStates();

  ModelConfig config_;
  int64_t width_ = 0;
  std::vector<Param> params_;
  size_t embed_ = 0, normG_ = 0, normB_ = 0, head_ = 0;
  std::vector<size_t> blockFirstParam_; // per block: its first Param
  std::vector<int32_t> xInput_;         // per block: x's index among inputs

  // The last forward: sizes, tokens, targets and activations.
  int64_t batch_ = 0, time_ = 0;
  std::vector<int32_t> tokens_, targets_, predictions_;
  std::vector<double> losses_;
  std::vector<std::vector<float>> acts_; // block inputs, then the last output
  std::vector<float> normed_, mean_, rstd_, probs_, flags_;
  int64_t counted_ = 0;

  // Carried states: per block, the state now and a copy of the one the last
  // forward() started from.
  bool carry_ = false;
  std::vector<recur_state *> states_, startStates_;
  std::vector<char> stateBytes_;
};

//===----------------------------------------------------------------------===//
// Training
//===----------------------------------------------------------------------===//

/// AdamW (decoupled weight decay on Param::decay tensors) with a learning
/// rate warmed up linearly over `warmup` steps and decayed along a cosine to
/// `minLrRatio * lr` at step `steps`, after clipping the gradients to a
/// global norm of at most `clip` (0: no clipping).
struct AdamWConfig {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.98, eps = 1e-8;
  double weightDecay = 0.05, clip = 1.0, minLrRatio = 0.1;
  int64_t warmup = 100, steps = 1000;
};

class AdamW {
public:
  explicit AdamW(const AdamWConfig &config) : config_(config) {}
  /// The learning rate of step `step` (1-based).
  double learningRate(int64_t step) const;
  /// One update of `params` from their gradients; returns the gradient
  /// norm before clipping.
  double step(std::vector<Param> &params);

private:
  AdamWConfig config_;
  int64_t t_ = 0;
};

/// Trains `model` for `optimizer`'s steps on the batches `next` makes,
/// printing `step <n> loss <x> lr <lr> tokens/s <y>` every `logEvery` steps
/// (loss: the mean over the steps since the last line).
void train(Model &model, AdamW &optimizer, int64_t steps, int64_t logEvery,
           const std::function<void(Batch &)> &next);

//===----------------------------------------------------------------------===//
// Command lines
//===----------------------------------------------------------------------===//

/// `--name=value`, `--name value` and `--flag` arguments, read against a
/// list of known options (anything else is an error).
class Options {
public:
  /// Parses argv; `flags` take no value, `valued` take one. Exits through
  /// fatal() on an unknown option or a missing value.
  Options(int argc, char **argv, const std::vector<std::string> &flags,
          const std::vector<std::string> &valued);
  bool has(const std::string &name) const;
  std::string get(const std::string &name, const std::string &fallback) const;
  int64_t getInt(const std::string &name, int64_t fallback) const;
  double getDouble(const std::string &name, double fallback) const;

private:
  std::map<std::string, std::string> values_;
};

/// The AdamW settings both programs use (betas 0.9 and 0.98), with
/// `--lr`, `--weight-decay` (default 0.05) and `--warmup` from the command
/// line over the program's defaults `lr` and `warmup`.
AdamWConfig adamWFromOptions(const Options &opts, double lr, int64_t warmup,
                             int64_t steps);

/// Sets the threads of the compiled kernels and of the loops here (n <= 0:
/// the default).
void setThreads(int n);

/// Seconds on a monotonic clock.
double now();

} // namespace recur::train

#endif // RECUR_EXAMPLES_TRAIN_LM_H
