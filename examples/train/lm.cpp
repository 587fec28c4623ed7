//===- lm.cpp - a language model around compiled layers -------------------===//
//
// Part of the Recur project.
//
//===----------------------------------------------------------------------===//

#include "lm.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors files are little-endian; this code writes host floats"
#endif

namespace recur::train {

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

void fatal(const std::string &message) {
  std::fflush(stdout);
  std::fprintf(stderr, "error: %s\n", message.c_str());
  std::exit(1);
}

void check(recur_status status, const char *call) {
  if (status != RECUR_OK)
    fatal(std::string(call) + " failed (" + recur_status_name(status) +
          "): " + recur_last_error());
}

//===----------------------------------------------------------------------===//
// Random numbers
//===----------------------------------------------------------------------===//

namespace {

uint64_t splitmix64(uint64_t &x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

} // namespace

Rng::Rng(uint64_t seed) {
  for (uint64_t &word : s_)
    word = splitmix64(seed);
}

uint64_t Rng::next() {
  uint64_t result = rotl(s_[1] * 5, 7) * 9;
  uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Rng::uniform() { return static_cast<double>(next() >> 11) * 0x1p-53; }

uint64_t Rng::below(uint64_t n) {
  // Reject the top partial copy of [0, n) so every value is equally likely.
  uint64_t limit = std::numeric_limits<uint64_t>::max() -
                   std::numeric_limits<uint64_t>::max() % n;
  uint64_t x;
  do
    x = next();
  while (x >= limit);
  return x % n;
}

double Rng::normal() {
  if (haveSpare_) {
    haveSpare_ = false;
    return spare_;
  }
  double u1;
  do
    u1 = uniform();
  while (u1 <= 0.0);
  double u2 = uniform();
  double radius = std::sqrt(-2.0 * std::log(u1));
  double angle = 2.0 * M_PI * u2;
  spare_ = radius * std::sin(angle);
  haveSpare_ = true;
  return radius * std::cos(angle);
}

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

namespace {

/// The numbers between the parentheses of `rule(a, b)`; false when the text
/// is not `name(` numbers `)`.
bool ruleArguments(const std::string &spelling, const std::string &name,
                   size_t count, double *out) {
  if (spelling.compare(0, name.size() + 1, name + "(") != 0 ||
      spelling.back() != ')')
    return false;
  std::string inner =
      spelling.substr(name.size() + 1, spelling.size() - name.size() - 2);
  std::stringstream ss(inner);
  for (size_t i = 0; i < count; ++i) {
    std::string item;
    if (!std::getline(ss, item, ','))
      return false;
    char *end = nullptr;
    out[i] = std::strtod(item.c_str(), &end);
    while (end && *end == ' ')
      ++end;
    if (!end || *end != '\0' || item.empty())
      return false;
  }
  std::string rest;
  return !std::getline(ss, rest);
}

} // namespace

InitRule parseInitRule(const std::string &spelling, const std::string &what) {
  InitRule rule;
  double args[2] = {0.0, 0.0};
  if (spelling.empty() || spelling == "zeros")
    rule.kind = InitRule::Zeros;
  else if (spelling == "ones")
    rule.kind = InitRule::Ones;
  else if (ruleArguments(spelling, "const", 1, args))
    rule.kind = InitRule::Const;
  else if (ruleArguments(spelling, "normal", 1, args))
    rule.kind = InitRule::Normal;
  else if (ruleArguments(spelling, "truncnormal", 1, args))
    rule.kind = InitRule::TruncNormal;
  else if (ruleArguments(spelling, "uniform", 2, args))
    rule.kind = InitRule::Uniform;
  else
    fatal(what + ": unknown init rule '" + spelling + "'");
  rule.a = args[0];
  rule.b = args[1];
  return rule;
}

void initialize(const InitRule &rule, float *data, int64_t n, Rng &rng) {
  for (int64_t i = 0; i < n; ++i) {
    double value = 0.0;
    switch (rule.kind) {
    case InitRule::Zeros:
      break;
    case InitRule::Ones:
      value = 1.0;
      break;
    case InitRule::Const:
      value = rule.a;
      break;
    case InitRule::Normal:
      value = rule.a * rng.normal();
      break;
    case InitRule::TruncNormal: {
      double z;
      do
        z = rng.normal();
      while (std::fabs(z) > 2.0);
      value = rule.a * z;
      break;
    }
    case InitRule::Uniform:
      value = rule.a + (rule.b - rule.a) * rng.uniform();
      break;
    }
    data[i] = static_cast<float>(value);
  }
}

recur_tensor Param::view() {
  return recur_tensor_contiguous(value.data(), RECUR_F32,
                                 static_cast<int32_t>(shape.size()),
                                 shape.data());
}

recur_tensor Param::gradView() {
  return recur_tensor_contiguous(
      grad.data(), RECUR_F32, static_cast<int32_t>(shape.size()), shape.data());
}

namespace {

Param makeParam(std::string name, std::vector<int64_t> shape,
                const InitRule &rule, Rng &rng) {
  Param p;
  p.name = std::move(name);
  p.shape = std::move(shape);
  int64_t n = 1;
  for (int64_t s : p.shape)
    n *= s;
  p.value.assign(n, 0.0f);
  p.grad.assign(n, 0.0f);
  p.m.assign(n, 0.0f);
  p.v.assign(n, 0.0f);
  p.decay = p.shape.size() >= 2;
  initialize(rule, p.value.data(), n, rng);
  return p;
}

//===----------------------------------------------------------------------===//
// Dense kernels of the hand-written parts (row-major, f32)
//===----------------------------------------------------------------------===//

/// C[n, m] = A[n, k] B[k, m].
void matmul(const float *A, const float *B, float *C, int64_t n, int64_t k,
            int64_t m) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    float *c = C + i * m;
    std::fill(c, c + m, 0.0f);
    for (int64_t p = 0; p < k; ++p) {
      float a = A[i * k + p];
      const float *b = B + p * m;
      for (int64_t j = 0; j < m; ++j)
        c[j] += a * b[j];
    }
  }
}

/// C[k, m] = A[n, k]^T G[n, m]. Rows of C are split among threads, and each
/// row sums over n in order.
void matmulTransA(const float *A, const float *G, float *C, int64_t n,
                  int64_t k, int64_t m) {
  constexpr int64_t rowsPerTask = 16;
  int64_t tasks = (k + rowsPerTask - 1) / rowsPerTask;
#pragma omp parallel for schedule(static)
  for (int64_t task = 0; task < tasks; ++task) {
    int64_t first = task * rowsPerTask;
    int64_t last = std::min(k, first + rowsPerTask);
    std::fill(C + first * m, C + last * m, 0.0f);
    for (int64_t i = 0; i < n; ++i) {
      const float *g = G + i * m;
      for (int64_t p = first; p < last; ++p) {
        float a = A[i * k + p];
        float *c = C + p * m;
        for (int64_t j = 0; j < m; ++j)
          c[j] += a * g[j];
      }
    }
  }
}

/// C[n, k] = G[n, m] B[k, m]^T.
void matmulTransB(const float *G, const float *B, float *C, int64_t n,
                  int64_t k, int64_t m) {
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const float *g = G + i * m;
    for (int64_t p = 0; p < k; ++p) {
      const float *b = B + p * m;
      float sum = 0.0f;
      for (int64_t j = 0; j < m; ++j)
        sum += g[j] * b[j];
      C[i * k + p] = sum;
    }
  }
}

constexpr float kNormEps = 1e-5f;

/// A recur_tensor view of a [B, T, D] activation buffer.
recur_tensor activation(float *data, int64_t batch, int64_t time,
                        int64_t width) {
  int64_t shape[3] = {batch, time, width};
  return recur_tensor_contiguous(data, RECUR_F32, 3, shape);
}

std::string shapeString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

} // namespace

//===----------------------------------------------------------------------===//
// The model
//===----------------------------------------------------------------------===//

void Score::add(const Score &other) {
  lossSum += other.lossSum;
  count += other.count;
  correct += other.correct;
}

bool ModelConfig::uniform() const {
  return std::all_of(blocks.begin(), blocks.end(),
                     [&](auto *b) { return b == blocks[0]; });
}

std::string ModelConfig::describe() const {
  if (uniform() && !blocks.empty())
    return std::to_string(blocks.size()) + " x " + blocks[0]->name;
  std::string names;
  for (const recur_layer_desc *block : blocks)
    names += std::string(names.empty() ? "" : ", ") + block->name;
  return names;
}

/// Checks that `layer` is a residual block the model can stack (see
/// ModelConfig::blocks); returns the index of its input x and sets `width`
/// to its D.
static int32_t checkBlock(const recur_layer_desc *layer, int64_t &width) {
  if (!layer)
    fatal("the model has no block layer");
  std::string where = std::string("layer ") + layer->name;
  if (layer->abi_version != RECUR_ABI_VERSION)
    fatal(where + " was compiled for ABI version " +
          std::to_string(layer->abi_version) + ", this program for " +
          std::to_string(RECUR_ABI_VERSION));
  if (!layer->backward)
    fatal(where + " has no backward kernel (recurc could not derive it)");

  // The block must map x: f32[B, T, D] to y: f32[B, T, D]; its other inputs
  // are per-row flags.
  int32_t xInput = -1;
  for (int32_t i = 0; i < layer->num_args; ++i) {
    const recur_arg_desc &arg = layer->args[i];
    if (arg.role == RECUR_ROLE_INPUT && std::string(arg.name) == "x")
      xInput = arg.index;
  }
  if (xInput < 0)
    fatal(where + " has no input named 'x'");
  for (int32_t i = 0; i < layer->num_args; ++i) {
    const recur_arg_desc &arg = layer->args[i];
    if (arg.role != RECUR_ROLE_INPUT)
      continue;
    bool isX = arg.index == xInput;
    bool ok = arg.dtype == RECUR_F32 &&
              (isX ? arg.rank == 3 && arg.shape[0] < 0 && arg.shape[1] < 0 &&
                         arg.shape[2] > 0
                   : arg.rank == 1 && arg.shape[0] < 0);
    if (!ok)
      fatal(where + ": input '" + arg.name + "' is neither x: f32[B, T, D] " +
            "nor a per-row flag f32[B]");
    if (isX) {
      if (width > 0 && arg.shape[2] != width)
        fatal(where + " has width " + std::to_string(arg.shape[2]) +
              ", the blocks below it " + std::to_string(width));
      width = arg.shape[2];
    }
  }
  if (layer->num_outputs != 1)
    fatal(where + " must have exactly one output, y: f32[B, T, D]");
  return xInput;
}

Model::Model(const ModelConfig &config, uint64_t seed) : config_(config) {
  if (config.vocab <= 0 || config.blocks.empty())
    fatal("the model needs a vocabulary and at least one block");
  for (const recur_layer_desc *layer : config.blocks)
    xInput_.push_back(checkBlock(layer, width_));

  Rng rng(seed);
  InitRule small{InitRule::Normal, 0.02, 0.0};
  embed_ = params_.size();
  params_.push_back(makeParam("embed", {config.vocab, width_}, small, rng));
  for (int64_t b = 0; b < config.layers(); ++b) {
    const recur_layer_desc *layer = config.blocks[b];
    std::string where = std::string("layer ") + layer->name;
    blockFirstParam_.push_back(params_.size());
    for (int32_t i = 0; i < layer->num_args; ++i) {
      const recur_arg_desc &arg = layer->args[i];
      if (arg.role != RECUR_ROLE_PARAM)
        continue;
      std::string name = "block." + std::to_string(b) + "." + arg.name;
      if (arg.dtype != RECUR_F32)
        fatal(where + ": param '" + arg.name + "' is " +
              recur_dtype_name(arg.dtype) + "; the model trains f32 params");
      std::vector<int64_t> shape(arg.shape, arg.shape + arg.rank);
      for (int64_t s : shape)
        if (s < 0)
          fatal(where + ": param '" + arg.name + "' has a runtime dimension");
      InitRule rule = parseInitRule(arg.init_rule ? arg.init_rule : "", name);
      params_.push_back(makeParam(name, shape, rule, rng));
    }
  }
  normG_ = params_.size();
  params_.push_back(
      makeParam("norm.g", {width_}, InitRule{InitRule::Ones, 0, 0}, rng));
  normB_ = params_.size();
  params_.push_back(
      makeParam("norm.b", {width_}, InitRule{InitRule::Zeros, 0, 0}, rng));
  head_ = params_.size();
  params_.push_back(makeParam("head", {width_, config.vocab}, small, rng));
}

int64_t Model::parameterCount() const {
  int64_t n = 0;
  for (const Param &p : params_)
    n += p.numel();
  return n;
}

int64_t Model::blockParameterCount(size_t block) const {
  int64_t n = 0;
  for (int32_t i = 0; i < config_.blocks[block]->num_params; ++i)
    n += params_[blockFirstParam_[block] + i].numel();
  return n;
}

std::string Model::summary() const {
  std::string counts;
  for (int64_t b = 0; b < (config_.uniform() ? 1 : config_.layers()); ++b)
    counts += (b ? " + " : "") + std::to_string(blockParameterCount(b));
  return config_.describe() + " (width " + std::to_string(width_) +
         "), vocab " + std::to_string(config_.vocab) + ", " +
         std::to_string(parameterCount()) + " params (" + counts +
         " per block)";
}

std::vector<recur_tensor> Model::blockInputs(size_t block, float *x) {
  int32_t count = config_.blocks[block]->num_inputs;
  std::vector<recur_tensor> inputs(count);
  for (int32_t i = 0; i < count; ++i)
    inputs[i] =
        i == xInput_[block]
            ? activation(x, batch_, time_, width_)
            : recur_tensor_contiguous(flags_.data(), RECUR_F32, 1, &batch_);
  return inputs;
}

std::vector<recur_tensor> Model::blockParams(size_t block, bool gradients) {
  std::vector<recur_tensor> params;
  for (int32_t i = 0; i < config_.blocks[block]->num_params; ++i) {
    Param &p = params_[blockFirstParam_[block] + i];
    params.push_back(gradients ? p.gradView() : p.view());
  }
  return params;
}

Model::~Model() { dropStates(); }

void Model::dropStates() {
  for (recur_state *state : states_)
    recur_state_destroy(state);
  for (recur_state *state : startStates_)
    recur_state_destroy(state);
  states_.clear();
  startStates_.clear();
}

void Model::carryStates(bool carry) {
  dropStates();
  carry_ = carry;
}

Score Model::forward(const Batch &input, bool keepForBackward) {
  const int64_t batch = input.batch, time = input.time;
  const int64_t n = batch * time, D = width_, V = config_.vocab;
  const int32_t *tokens = input.tokens.data(), *targets = input.targets.data();
  if (static_cast<int64_t>(input.tokens.size()) != n ||
      static_cast<int64_t>(input.targets.size()) != n ||
      (!input.starts.empty() &&
       static_cast<int64_t>(input.starts.size()) != batch))
    fatal("a batch's tokens, targets or start flags do not match its size");
  if (carry_ && !states_.empty() && batch != batch_)
    fatal("carried states are for batches of " + std::to_string(batch_) +
          " rows, not " + std::to_string(batch));
  batch_ = batch;
  time_ = time;
  tokens_.assign(tokens, tokens + n);
  targets_.assign(targets, targets + n);
  if (input.starts.empty())
    flags_.assign(batch, 1.0f);
  else
    flags_ = input.starts;
  if (carry_ && states_.empty()) {
    states_.resize(config_.layers());
    startStates_.resize(config_.layers());
    for (int64_t b = 0; b < config_.layers(); ++b) {
      std::vector<recur_tensor> params = blockParams(b, false);
      check(recur_state_create(config_.blocks[b], batch, params.data(),
                               &states_[b]),
            "recur_state_create");
      check(recur_state_create(config_.blocks[b], batch, params.data(),
                               &startStates_[b]),
            "recur_state_create");
    }
  }
  acts_.resize(config_.layers() + 1);
  for (std::vector<float> &a : acts_)
    a.resize(n * D);

  const float *embed = params_[embed_].value.data();
  for (int64_t i = 0; i < n; ++i) {
    if (tokens[i] < 0 || tokens[i] >= V)
      fatal("token " + std::to_string(tokens[i]) + " is outside the " +
            "vocabulary of " + std::to_string(V));
    if (targets[i] < -1 || targets[i] >= V)
      fatal("target " + std::to_string(targets[i]) + " is outside the " +
            "vocabulary of " + std::to_string(V));
    std::copy(embed + tokens[i] * D, embed + (tokens[i] + 1) * D,
              acts_[0].data() + i * D);
  }
  for (int64_t b = 0; b < config_.layers(); ++b) {
    std::vector<recur_tensor> inputs = blockInputs(b, acts_[b].data());
    std::vector<recur_tensor> params = blockParams(b, false);
    recur_tensor y = activation(acts_[b + 1].data(), batch, time, D);
    recur_state *state = carry_ ? states_[b] : nullptr;
    if (state && keepForBackward) {
      // recur_forward advances the state in place; backward() needs the
      // one it started from.
      size_t bytes = 0;
      check(recur_state_save_size(state, &bytes), "recur_state_save_size");
      stateBytes_.resize(bytes);
      check(recur_state_save(state, stateBytes_.data(), bytes),
            "recur_state_save");
      check(recur_state_load(startStates_[b], stateBytes_.data(), bytes),
            "recur_state_load");
    }
    check(recur_forward(config_.blocks[b], inputs.data(), params.data(), state,
                        &y),
          "recur_forward");
  }

  // Final LayerNorm.
  normed_.resize(n * D);
  mean_.resize(n);
  rstd_.resize(n);
  const float *x = acts_.back().data();
  const float *g = params_[normG_].value.data();
  const float *beta = params_[normB_].value.data();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const float *row = x + i * D;
    double sum = 0.0, sq = 0.0;
    for (int64_t d = 0; d < D; ++d)
      sum += row[d];
    double mu = sum / D;
    for (int64_t d = 0; d < D; ++d)
      sq += (row[d] - mu) * (row[d] - mu);
    float rstd = static_cast<float>(1.0 / std::sqrt(sq / D + kNormEps));
    mean_[i] = static_cast<float>(mu);
    rstd_[i] = rstd;
    for (int64_t d = 0; d < D; ++d)
      normed_[i * D + d] = (row[d] - mean_[i]) * rstd * g[d] + beta[d];
  }

  // Head and softmax cross-entropy; probs_ keeps the softmax for backward().
  probs_.resize(n * V);
  matmul(normed_.data(), params_[head_].value.data(), probs_.data(), n, D, V);
  losses_.assign(n, 0.0);
  predictions_.resize(n);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    float *row = probs_.data() + i * V;
    int64_t best = std::max_element(row, row + V) - row;
    float top = row[best];
    double sum = 0.0;
    for (int64_t v = 0; v < V; ++v)
      sum += std::exp(static_cast<double>(row[v] - top));
    predictions_[i] = static_cast<int32_t>(best);
    if (targets[i] >= 0)
      losses_[i] = std::log(sum) - (row[targets[i]] - top);
    for (int64_t v = 0; v < V; ++v)
      row[v] =
          static_cast<float>(std::exp(static_cast<double>(row[v] - top)) / sum);
  }
  Score score;
  for (int64_t i = 0; i < n; ++i) {
    if (targets[i] < 0)
      continue;
    score.lossSum += losses_[i];
    score.correct += predictions_[i] == targets[i];
    ++score.count;
  }
  counted_ = keepForBackward ? score.count : 0;
  return score;
}

void Model::backward() {
  const int64_t n = batch_ * time_, D = width_, V = config_.vocab;
  if (n == 0 || counted_ == 0)
    fatal("backward() needs a forward() that kept its activations and "
          "counted a target");
  const float scale = 1.0f / static_cast<float>(counted_);

  // d(mean loss)/d(logits) = (softmax - onehot) / count, in place.
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    float *row = probs_.data() + i * V;
    if (targets_[i] < 0) {
      std::fill(row, row + V, 0.0f);
      continue;
    }
    row[targets_[i]] -= 1.0f;
    for (int64_t v = 0; v < V; ++v)
      row[v] *= scale;
  }
  matmulTransA(normed_.data(), probs_.data(), params_[head_].grad.data(), n, D,
               V);
  std::vector<float> dNormed(n * D), dx(n * D), dPrev(n * D);
  matmulTransB(probs_.data(), params_[head_].value.data(), dNormed.data(), n, D,
               V);

  // LayerNorm: with xhat = (x - mean) rstd and gy = dy g,
  // dx = rstd (gy - mean(gy) - xhat mean(gy xhat)).
  const float *x = acts_.back().data();
  const float *g = params_[normG_].value.data();
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    const float *dy = dNormed.data() + i * D;
    double meanGy = 0.0, meanGyXhat = 0.0;
    for (int64_t d = 0; d < D; ++d) {
      double xhat = (x[i * D + d] - mean_[i]) * rstd_[i];
      meanGy += dy[d] * g[d];
      meanGyXhat += dy[d] * g[d] * xhat;
    }
    meanGy /= D;
    meanGyXhat /= D;
    for (int64_t d = 0; d < D; ++d) {
      double xhat = (x[i * D + d] - mean_[i]) * rstd_[i];
      dx[i * D + d] = static_cast<float>(
          rstd_[i] * (dy[d] * g[d] - meanGy - xhat * meanGyXhat));
    }
  }
  float *dg = params_[normG_].grad.data();
  float *db = params_[normB_].grad.data();
#pragma omp parallel for schedule(static)
  for (int64_t d = 0; d < D; ++d) {
    double sumG = 0.0, sumB = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      double xhat = (x[i * D + d] - mean_[i]) * rstd_[i];
      sumG += dNormed[i * D + d] * xhat;
      sumB += dNormed[i * D + d];
    }
    dg[d] = static_cast<float>(sumG);
    db[d] = static_cast<float>(sumB);
  }

  // The blocks, last to first: each gives dL/dx for the block below and
  // the gradients of its own params.
  for (int64_t b = config_.layers() - 1; b >= 0; --b) {
    std::vector<recur_tensor> inputs = blockInputs(b, acts_[b].data());
    std::vector<recur_tensor> gradInputs = blockInputs(b, dPrev.data());
    for (int32_t i = 0; i < config_.blocks[b]->num_inputs; ++i)
      if (i != xInput_[b])
        gradInputs[i].data = nullptr; // a flag's gradient is not wanted
    std::vector<recur_tensor> params = blockParams(b, false);
    std::vector<recur_tensor> gradParams = blockParams(b, true);
    recur_tensor dy = activation(dx.data(), batch_, time_, D);
    const recur_state *start = carry_ ? startStates_[b] : nullptr;
    check(recur_backward(config_.blocks[b], inputs.data(), params.data(), start,
                         &dy, nullptr, gradInputs.data(), gradParams.data(),
                         nullptr),
          "recur_backward");
    std::swap(dx, dPrev);
  }

  // The embedding: rows of the tokens that occurred.
  Param &embed = params_[embed_];
  std::fill(embed.grad.begin(), embed.grad.end(), 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    float *row = embed.grad.data() + tokens_[i] * D;
    for (int64_t d = 0; d < D; ++d)
      row[d] += dx[i * D + d];
  }
  counted_ = 0;
}

//===----------------------------------------------------------------------===//
// safetensors
//===----------------------------------------------------------------------===//

namespace {

std::string jsonString(const std::string &s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

/// A JSON value, as much of JSON as a safetensors header uses.
struct Json {
  enum Kind { Null, Bool, Number, String, Array, Object } kind = Null;
  double number = 0.0;
  std::string text;
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> members;

  const Json *member(const std::string &key) const {
    for (const auto &[k, v] : members)
      if (k == key)
        return &v;
    return nullptr;
  }
};

/// A recursive-descent JSON parser that reports the first error and its
/// offset instead of trusting its input.
class JsonParser {
public:
  explicit JsonParser(const std::string &text) : text_(text) {}

  bool parse(Json &out) {
    skipSpace();
    if (!value(out, 0))
      return false;
    skipSpace();
    return pos_ == text_.size() || fail("trailing characters");
  }
  const std::string &error() const { return error_; }

private:
  bool fail(const std::string &what) {
    if (error_.empty())
      error_ = what + " at byte " + std::to_string(pos_) + " of the header";
    return false;
  }
  /// Whether the next character is one of `set`.
  bool nextIn(const char *set) const {
    return pos_ < text_.size() && text_[pos_] != '\0' &&
           std::strchr(set, text_[pos_]);
  }
  void skipSpace() {
    while (nextIn(" \t\r\n"))
      ++pos_;
  }
  bool literal(const char *word) {
    size_t n = std::strlen(word);
    if (text_.compare(pos_, n, word) != 0)
      return fail("invalid value");
    pos_ += n;
    return true;
  }

  bool value(Json &out, int depth) {
    if (depth > 32)
      return fail("nesting too deep");
    if (pos_ >= text_.size())
      return fail("unexpected end");
    char c = text_[pos_];
    if (c == '{')
      return object(out, depth);
    if (c == '[')
      return array(out, depth);
    if (c == '"') {
      out.kind = Json::String;
      return string(out.text);
    }
    if (c == 't' || c == 'f') {
      out.kind = Json::Bool;
      out.number = c == 't';
      return literal(c == 't' ? "true" : "false");
    }
    if (c == 'n')
      return literal("null");
    return number(out);
  }

  bool object(Json &out, int depth) {
    out.kind = Json::Object;
    ++pos_;
    skipSpace();
    if (pos_ < text_.size() && text_[pos_] == '}') {
      ++pos_;
      return true;
    }
    while (true) {
      skipSpace();
      std::string key;
      if (pos_ >= text_.size() || text_[pos_] != '"')
        return fail("expected a key");
      if (!string(key))
        return false;
      skipSpace();
      if (pos_ >= text_.size() || text_[pos_] != ':')
        return fail("expected ':'");
      ++pos_;
      skipSpace();
      Json item;
      if (!value(item, depth + 1))
        return false;
      out.members.emplace_back(std::move(key), std::move(item));
      skipSpace();
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < text_.size() && text_[pos_] == '}') {
        ++pos_;
        return true;
      }
      return fail("expected ',' or '}'");
    }
  }

  bool array(Json &out, int depth) {
    out.kind = Json::Array;
    ++pos_;
    skipSpace();
    if (pos_ < text_.size() && text_[pos_] == ']') {
      ++pos_;
      return true;
    }
    while (true) {
      skipSpace();
      Json item;
      if (!value(item, depth + 1))
        return false;
      out.items.push_back(std::move(item));
      skipSpace();
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < text_.size() && text_[pos_] == ']') {
        ++pos_;
        return true;
      }
      return fail("expected ',' or ']'");
    }
  }

  bool string(std::string &out) {
    ++pos_; // the opening quote
    while (pos_ < text_.size()) {
      char c = text_[pos_++];
      if (c == '"')
        return true;
      if (static_cast<unsigned char>(c) < 0x20)
        return fail("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= text_.size())
        break;
      char e = text_[pos_++];
      switch (e) {
      case '"':
      case '\\':
      case '/':
        out += e;
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        if (pos_ + 4 > text_.size())
          return fail("truncated \\u escape");
        unsigned code = 0;
        for (int i = 0; i < 4; ++i) {
          char h = text_[pos_++];
          code <<= 4;
          if (h >= '0' && h <= '9')
            code |= h - '0';
          else if (h >= 'a' && h <= 'f')
            code |= h - 'a' + 10;
          else if (h >= 'A' && h <= 'F')
            code |= h - 'A' + 10;
          else
            return fail("bad \\u escape");
        }
        // Names and metadata here are ASCII; keep others as '?'.
        out += code < 0x80 ? static_cast<char>(code) : '?';
        break;
      }
      default:
        return fail("bad escape");
      }
    }
    return fail("unterminated string");
  }

  bool number(Json &out) {
    size_t start = pos_;
    while (nextIn("+-0123456789.eE"))
      ++pos_;
    if (start == pos_)
      return fail("invalid value");
    std::string digits = text_.substr(start, pos_ - start);
    char *end = nullptr;
    out.kind = Json::Number;
    out.number = std::strtod(digits.c_str(), &end);
    if (!end || *end != '\0')
      return fail("invalid number");
    return true;
  }

  const std::string &text_;
  size_t pos_ = 0;
  std::string error_;
};

/// A non-negative integer JSON number below 2^53, or -1.
int64_t jsonIndex(const Json &j) {
  if (j.kind != Json::Number || !(j.number >= 0) || j.number > 0x1p53 ||
      j.number != std::floor(j.number))
    return -1;
  return static_cast<int64_t>(j.number);
}

} // namespace

std::map<std::string, std::string> Model::shapeMetadata() const {
  // One name and id per layer, bottom first, joined by commas.
  std::string names, ids;
  for (const recur_layer_desc *block : config_.blocks) {
    char id[32];
    std::snprintf(id, sizeof(id), "%016llx",
                  static_cast<unsigned long long>(block->id));
    names += std::string(names.empty() ? "" : ",") + block->name;
    ids += std::string(ids.empty() ? "" : ",") + id;
  }
  return {{"format", "recur-train lm"},
          {"block", names},
          {"block_id", ids},
          {"layers", std::to_string(config_.layers())},
          {"vocab", std::to_string(config_.vocab)},
          {"width", std::to_string(width_)}};
}

void Model::save(const std::string &path,
                 const std::map<std::string, std::string> &metadata) const {
  std::map<std::string, std::string> meta = shapeMetadata();
  for (const auto &[key, value] : metadata)
    meta[key] = value;
  std::string header = "{\"__metadata__\":{";
  bool first = true;
  for (const auto &[key, value] : meta) {
    header += (first ? "" : ",") + jsonString(key) + ":" + jsonString(value);
    first = false;
  }
  header += "}";
  uint64_t offset = 0;
  for (const Param &p : params_) {
    uint64_t bytes = static_cast<uint64_t>(p.numel()) * sizeof(float);
    header += "," + jsonString(p.name) + ":{\"dtype\":\"F32\",\"shape\":[";
    for (size_t i = 0; i < p.shape.size(); ++i)
      header += (i ? "," : "") + std::to_string(p.shape[i]);
    header += "],\"data_offsets\":[" + std::to_string(offset) + "," +
              std::to_string(offset + bytes) + "]}";
    offset += bytes;
  }
  header += "}";
  // The data starts 8-byte aligned; the format pads the header with spaces.
  header.append((8 - header.size() % 8) % 8, ' ');

  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    fatal("cannot write '" + path + "'");
  uint64_t length = header.size();
  out.write(reinterpret_cast<const char *>(&length), sizeof(length));
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  for (const Param &p : params_)
    out.write(reinterpret_cast<const char *>(p.value.data()),
              static_cast<std::streamsize>(p.numel() * sizeof(float)));
  out.close();
  if (!out)
    fatal("writing '" + path + "' failed");
}

void Model::load(const std::string &path,
                 const std::map<std::string, std::string> &metadata) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fatal("cannot read '" + path + "'");
  std::string file((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  auto bad = [&](const std::string &what) {
    fatal("'" + path + "' is not a weights file of this model: " + what);
  };
  if (file.size() < 8)
    bad("shorter than the 8-byte header length of the safetensors format");
  uint64_t length = 0;
  std::memcpy(&length, file.data(), sizeof(length));
  if (length > file.size() - 8)
    bad("the header length (" + std::to_string(length) +
        " bytes) runs past the end of the file (" +
        std::to_string(file.size()) + " bytes)");
  std::string header = file.substr(8, length);
  const char *data = file.data() + 8 + length;
  uint64_t dataBytes = file.size() - 8 - length;

  Json root;
  JsonParser parser(header);
  if (!parser.parse(root))
    bad("its JSON header is malformed: " + parser.error());
  if (root.kind != Json::Object)
    bad("its JSON header is not an object");

  std::map<std::string, std::string> expected = shapeMetadata();
  for (const auto &[key, value] : metadata)
    expected[key] = value;
  const Json *meta = root.member("__metadata__");
  // The depth first: another depth also lists other blocks.
  std::vector<std::pair<std::string, std::string>> checks = {
      {"layers", expected["layers"]}};
  for (const auto &entry : expected)
    if (entry.first != "layers")
      checks.push_back(entry);
  for (const auto &[key, value] : checks) {
    const Json *found = meta ? meta->member(key) : nullptr;
    if (!found || found->kind != Json::String)
      bad("its metadata lack '" + key + "' (expected '" + value + "')");
    if (found->text != value)
      bad("it was saved with " + key + " = '" + found->text +
          "', this model has '" + value + "'");
  }

  for (const auto &member : root.members) {
    const std::string &name = member.first;
    if (name == "__metadata__")
      continue;
    auto param = std::find_if(params_.begin(), params_.end(),
                              [&](const Param &p) { return p.name == name; });
    if (param == params_.end())
      bad("it has a tensor '" + name + "' the model does not");
  }
  for (Param &p : params_) {
    const Json *entry = root.member(p.name);
    if (!entry || entry->kind != Json::Object)
      bad("it lacks tensor '" + p.name + "'");
    const Json *dtype = entry->member("dtype");
    const Json *shape = entry->member("shape");
    const Json *offsets = entry->member("data_offsets");
    if (!dtype || dtype->kind != Json::String || dtype->text != "F32")
      bad("tensor '" + p.name + "' is not F32");
    std::vector<int64_t> dims;
    if (shape && shape->kind == Json::Array)
      for (const Json &d : shape->items)
        dims.push_back(jsonIndex(d));
    if (dims != p.shape)
      bad("tensor '" + p.name + "' has shape " +
          (shape && shape->kind == Json::Array ? shapeString(dims)
                                               : std::string("(none)")) +
          ", the model's is " + shapeString(p.shape));
    int64_t begin = -1, end = -1;
    if (offsets && offsets->kind == Json::Array && offsets->items.size() == 2) {
      begin = jsonIndex(offsets->items[0]);
      end = jsonIndex(offsets->items[1]);
    }
    uint64_t bytes = static_cast<uint64_t>(p.numel()) * sizeof(float);
    if (begin < 0 || end < begin || static_cast<uint64_t>(end) > dataBytes ||
        static_cast<uint64_t>(end - begin) != bytes)
      bad("tensor '" + p.name + "' has data_offsets outside the file or of " +
          "the wrong size");
    std::memcpy(p.value.data(), data + begin, bytes);
  }
}

//===----------------------------------------------------------------------===//
// Training
//===----------------------------------------------------------------------===//

double AdamW::learningRate(int64_t step) const {
  if (config_.warmup > 0 && step <= config_.warmup)
    return config_.lr * static_cast<double>(step) / config_.warmup;
  int64_t span = std::max<int64_t>(1, config_.steps - config_.warmup);
  double progress = std::min(1.0, static_cast<double>(step - config_.warmup) /
                                      static_cast<double>(span));
  double cosine = 0.5 * (1.0 + std::cos(M_PI * progress));
  return config_.lr *
         (config_.minLrRatio + (1.0 - config_.minLrRatio) * cosine);
}

double AdamW::step(std::vector<Param> &params) {
  ++t_;
  double sq = 0.0;
  for (const Param &p : params)
    for (float g : p.grad)
      sq += static_cast<double>(g) * g;
  double norm = std::sqrt(sq);
  if (!std::isfinite(norm))
    fatal("the gradient is not finite at step " + std::to_string(t_));
  double clipScale =
      config_.clip > 0 && norm > config_.clip ? config_.clip / norm : 1.0;
  double lr = learningRate(t_);
  double c1 = 1.0 - std::pow(config_.beta1, static_cast<double>(t_));
  double c2 = 1.0 - std::pow(config_.beta2, static_cast<double>(t_));
  for (Param &p : params) {
    float decay =
        p.decay ? static_cast<float>(1.0 - lr * config_.weightDecay) : 1.0f;
    const int64_t n = p.numel();
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      double g = p.grad[i] * clipScale;
      double m = config_.beta1 * p.m[i] + (1.0 - config_.beta1) * g;
      double v = config_.beta2 * p.v[i] + (1.0 - config_.beta2) * g * g;
      p.m[i] = static_cast<float>(m);
      p.v[i] = static_cast<float>(v);
      double update = (m / c1) / (std::sqrt(v / c2) + config_.eps);
      p.value[i] = static_cast<float>(p.value[i] * decay - lr * update);
    }
  }
  return norm;
}

void train(Model &model, AdamW &optimizer, int64_t steps, int64_t logEvery,
           const std::function<void(Batch &)> &next) {
  Batch batch;
  double start = now(), lossSum = 0.0;
  int64_t stepsSinceLog = 0, tokens = 0;
  for (int64_t step = 1; step <= steps; ++step) {
    next(batch);
    Score score = model.forward(batch, true);
    if (!std::isfinite(score.loss()))
      fatal("the loss is not finite at step " + std::to_string(step));
    model.backward();
    optimizer.step(model.params());
    lossSum += score.loss();
    ++stepsSinceLog;
    tokens += batch.batch * batch.time;
    if (step % logEvery == 0 || step == steps) {
      double elapsed = now() - start;
      std::printf("step %lld loss %.6f lr %.3e tokens/s %.0f\n",
                  static_cast<long long>(step), lossSum / stepsSinceLog,
                  optimizer.learningRate(step),
                  elapsed > 0 ? tokens / elapsed : 0.0);
      std::fflush(stdout);
      start = now();
      lossSum = 0.0;
      stepsSinceLog = 0;
      tokens = 0;
    }
  }
}

//===----------------------------------------------------------------------===//
// Command lines
//===----------------------------------------------------------------------===//

Options::Options(int argc, char **argv, const std::vector<std::string> &flags,
                 const std::vector<std::string> &valued) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("--", 0) != 0)
      fatal("unexpected argument '" + arg + "' (see --help)");
    std::string name = arg.substr(2), value;
    size_t eq = name.find('=');
    bool hasValue = eq != std::string::npos;
    if (hasValue) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    bool isFlag = std::find(flags.begin(), flags.end(), name) != flags.end();
    bool isValued =
        std::find(valued.begin(), valued.end(), name) != valued.end();
    if (!isFlag && !isValued)
      fatal("unknown option '--" + name + "' (see --help)");
    if (isFlag && hasValue)
      fatal("option '--" + name + "' takes no value");
    if (isValued && !hasValue) {
      if (i + 1 >= argc)
        fatal("option '--" + name + "' needs a value");
      value = argv[++i];
    }
    values_[name] = value;
  }
}

bool Options::has(const std::string &name) const {
  return values_.count(name) != 0;
}

std::string Options::get(const std::string &name,
                         const std::string &fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

int64_t Options::getInt(const std::string &name, int64_t fallback) const {
  auto it = values_.find(name);
  if (it == values_.end())
    return fallback;
  char *end = nullptr;
  long long v = std::strtoll(it->second.c_str(), &end, 10);
  if (it->second.empty() || *end != '\0')
    fatal("option '--" + name + "' needs an integer, not '" + it->second + "'");
  return v;
}

AdamWConfig adamWFromOptions(const Options &opts, double lr, int64_t warmup,
                             int64_t steps) {
  AdamWConfig adam;
  adam.lr = opts.getDouble("lr", lr);
  adam.beta1 = 0.9;
  adam.beta2 = 0.98;
  adam.weightDecay = opts.getDouble("weight-decay", 0.05);
  adam.warmup = opts.getInt("warmup", warmup);
  adam.steps = steps;
  return adam;
}

double Options::getDouble(const std::string &name, double fallback) const {
  auto it = values_.find(name);
  if (it == values_.end())
    return fallback;
  char *end = nullptr;
  double v = std::strtod(it->second.c_str(), &end);
  if (it->second.empty() || *end != '\0' || !std::isfinite(v))
    fatal("option '--" + name + "' needs a number, not '" + it->second + "'");
  return v;
}

void setThreads(int n) { recur_set_num_threads(n); }

double now() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

} // namespace recur::train
