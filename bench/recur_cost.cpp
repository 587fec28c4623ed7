//===- recur_cost.cpp - the papers' cost claims on Recur's kernels --------===//
//
// Part of the Recur project.
//
// recur-cost [--tiny] [--repeat=N] [--threads=N]
//
// Measures, in one run, the three cost claims of issue 8 on kernels recurc
// compiled for this machine (docs/performance.md, "The papers' cost
// claims"):
//
// 1. Block-Recurrent: the recurrent layer against the same layer without
//    the state (sliding window only), B = 1, T = 2048, d = 512,
//    W = S = 512 (the layers recur-bench times). Paper: about the cost of
//    one extra layer (step time 0.99 against 13 sliding-window layers' 1.00).
// 2. MemBART: turn t with the memory carried (one call) against
//    recomputing the history (turns 1 .. t replayed from a reset memory),
//    at d = 256, 64 tokens a turn, 32 slots. Paper: cost linear in turns.
// 3. Transformer-XL: predicting one token with the memory cached (a
//    segment of L = 1 after M = A cached positions) against recomputing
//    the context (one pass over the A positions, as a vanilla model
//    evaluates), for attention lengths A = 64 .. 512, d = 256. Paper: up
//    to 1,800x faster at A = 3,800.
//
// Every figure is the median of --repeat timed calls after one warm-up
// call. Inputs are normal draws, params their init rules.
//
//===----------------------------------------------------------------------===//

#include "lm.h"

#include "BlockRecurrentSkipFixed.h"
#include "MemBART.h"
#include "SlidingWindow.h"
#include "TxlCached128.h"
#include "TxlCached256.h"
#include "TxlCached512.h"
#include "TxlCached64.h"
#include "TxlFull128.h"
#include "TxlFull256.h"
#include "TxlFull512.h"
#include "TxlFull64.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

using namespace recur::train;

namespace {

/// One layer's tensors for a call: inputs (normal draws; bool masks false),
/// params (their init rules) and outputs.
class Call {
public:
  Call(const recur_layer_desc *desc, const std::map<std::string, int64_t> &dims,
       Rng &rng)
      : desc_(desc) {
    for (int32_t i = 0; i < desc->num_args; ++i) {
      const recur_arg_desc &a = desc->args[i];
      if (a.role == RECUR_ROLE_INPUT)
        inputs_.push_back(make(a, dims, rng));
      else if (a.role == RECUR_ROLE_PARAM)
        params_.push_back(make(a, dims, rng));
    }
    for (int32_t i = 0; i < desc->num_results; ++i)
      if (desc->results[i].role == RECUR_ROLE_OUTPUT)
        outputs_.push_back(make(desc->results[i], dims, rng));
  }

  /// Sets every element of input `name` (a per-row flag) to `value`.
  void setInput(const char *name, float value) {
    for (Buffer &b : inputs_)
      if (std::strcmp(b.arg->name, name) == 0)
        std::fill(b.f32.begin(), b.f32.end(), value);
  }

  recur_state *newState(int64_t batch) {
    std::vector<recur_tensor> p = views(params_);
    recur_state *state = nullptr;
    check(recur_state_create(desc_, batch, p.data(), &state),
          "recur_state_create");
    return state;
  }

  /// One recur_forward call (from `state`, or the init rules when null), in
  /// seconds.
  double run(recur_state *state) {
    std::vector<recur_tensor> in = views(inputs_), p = views(params_),
                              out = views(outputs_);
    auto t0 = std::chrono::steady_clock::now();
    check(recur_forward(desc_, in.data(), p.data(), state, out.data()),
          "recur_forward");
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
        .count();
  }

private:
  struct Buffer {
    const recur_arg_desc *arg;
    std::vector<int64_t> shape;
    std::vector<float> f32;
    std::vector<unsigned char> mask;
  };

  static Buffer make(const recur_arg_desc &a,
                     const std::map<std::string, int64_t> &dims, Rng &rng) {
    Buffer b{&a, {}, {}, {}};
    int64_t n = 1;
    for (int32_t d = 0; d < a.rank; ++d) {
      int64_t s = a.shape[d];
      if (s < 0)
        s = dims.at(a.dim_names[d]);
      b.shape.push_back(s);
      n *= s;
    }
    if (a.dtype == RECUR_BOOL) {
      b.mask.assign(n, 0);
    } else if (a.dtype != RECUR_F32) {
      fatal(std::string("recur-cost: '") + a.name + "' is not f32");
    } else {
      b.f32.resize(n);
      if (a.role == RECUR_ROLE_PARAM)
        initialize(parseInitRule(a.init_rule, a.name), b.f32.data(), n, rng);
      else if (a.role == RECUR_ROLE_INPUT)
        for (float &x : b.f32)
          x = static_cast<float>(rng.normal());
    }
    return b;
  }

  static std::vector<recur_tensor> views(std::vector<Buffer> &bs) {
    std::vector<recur_tensor> v;
    for (Buffer &b : bs) {
      void *p = b.arg->dtype == RECUR_BOOL ? static_cast<void *>(b.mask.data())
                                           : static_cast<void *>(b.f32.data());
      v.push_back(recur_tensor_contiguous(p, b.arg->dtype,
                                          static_cast<int32_t>(b.shape.size()),
                                          b.shape.data()));
    }
    return v;
  }

  const recur_layer_desc *desc_;
  std::vector<Buffer> inputs_, params_, outputs_;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// The median of `repeat` timings of `fn` after one warm-up call.
template <typename Fn> double timeIt(int repeat, Fn fn) {
  fn();
  std::vector<double> t;
  for (int i = 0; i < repeat; ++i)
    t.push_back(fn());
  return median(t);
}

void blockRecurrent(bool tiny, int repeat) {
  int64_t T = tiny ? 512 : 2048;
  Rng rng(1);
  Call brt(recur_BlockRecurrentSkipFixed_layer(), {{"B", 1}, {"T", T}}, rng);
  Call sw(recur_SlidingWindow_layer(), {{"B", 1}, {"T", T}}, rng);
  brt.setInput("start", 1.0f);
  sw.setInput("start", 1.0f);
  double tb = timeIt(repeat, [&] { return brt.run(nullptr); });
  double ts = timeIt(repeat, [&] { return sw.run(nullptr); });
  std::printf("1. Block-Recurrent layer / sliding-window layer (B = 1, T = "
              "%lld, d = 512, W = S = 512): %.2f ms / %.2f ms = %.2fx "
              "(paper: about one extra layer)\n",
              static_cast<long long>(T), tb * 1e3, ts * 1e3, tb / ts);
}

void memBART(bool tiny, int repeat) {
  int turns = tiny ? 4 : 32;
  Rng rng(2);
  Call call(recur_MemBART_layer(), {{"B", 1}}, rng);
  std::printf("2. MemBART (d = 256, 64 tokens a turn, 32 slots), per turn t: "
              "the memory carried (one call) against recomputing the history "
              "(turns 1..t from a reset memory)\n");
  std::printf("   %6s %12s %14s %8s\n", "turn", "carried ms", "recompute ms",
              "ratio");
  // carried[t]: turn t's call with the memory of turns 0..t-1 carried.
  std::vector<std::vector<double>> carried(turns), replay(turns);
  for (int r = 0; r < repeat + 1; ++r) {
    recur_state *state = call.newState(1);
    for (int t = 0; t < turns; ++t) {
      call.setInput("r", t == 0 ? 1.0f : 0.0f);
      carried[t].push_back(call.run(state));
    }
    recur_state_destroy(state);
    for (int t = 0; t < turns; ++t) {
      state = call.newState(1);
      double sum = 0.0;
      for (int s = 0; s <= t; ++s) {
        call.setInput("r", s == 0 ? 1.0f : 0.0f);
        sum += call.run(state);
      }
      recur_state_destroy(state);
      replay[t].push_back(sum);
    }
  }
  double totalCarried = 0.0, totalReplay = 0.0;
  for (int t = 0; t < turns; ++t) {
    // Drop the warm-up round.
    carried[t].erase(carried[t].begin());
    replay[t].erase(replay[t].begin());
    double c = median(carried[t]), p = median(replay[t]);
    totalCarried += c;
    totalReplay += p;
    if ((t + 1) & t) // powers of two only
      continue;
    std::printf("   %6d %12.3f %14.3f %7.1fx\n", t + 1, c * 1e3, p * 1e3,
                p / c);
  }
  double first = median(carried[0]), last = median(carried[turns - 1]);
  std::printf("   over %d turns: carried %.2f ms in all (last turn / first "
              "turn %.2f: linear in turns), recomputing %.2f ms (%.1fx; "
              "quadratic)\n",
              turns, totalCarried * 1e3, last / first, totalReplay * 1e3,
              totalReplay / totalCarried);
}

struct TxlPair {
  int64_t length;
  const recur_layer_desc *cached, *full;
};

void transformerXL(bool tiny, int repeat) {
  std::vector<TxlPair> pairs = {
      {64, recur_TxlCached64_layer(), recur_TxlFull64_layer()},
      {128, recur_TxlCached128_layer(), recur_TxlFull128_layer()},
      {256, recur_TxlCached256_layer(), recur_TxlFull256_layer()},
      {512, recur_TxlCached512_layer(), recur_TxlFull512_layer()}};
  if (tiny)
    pairs.resize(1);
  std::printf("3. Transformer-XL (d = 256, 4 heads, FFN 1024), one token "
              "predicted with attention length A: cached (a segment of 1 "
              "after A cached positions) against recomputed (one pass over "
              "A positions)\n");
  std::printf("   %6s %11s %14s %8s\n", "A", "cached ms", "recompute ms",
              "ratio");
  for (const TxlPair &p : pairs) {
    Rng rng(3);
    Call cached(p.cached, {{"B", 1}}, rng), full(p.full, {{"B", 1}}, rng);
    recur_state *state = cached.newState(1);
    // Fill the memory with A positions first.
    for (int64_t i = 0; i < p.length; ++i)
      cached.run(state);
    double tc = timeIt(repeat, [&] { return cached.run(state); });
    recur_state_destroy(state);
    double tf = timeIt(repeat, [&] { return full.run(nullptr); });
    std::printf("   %6lld %11.3f %14.3f %7.1fx\n",
                static_cast<long long>(p.length), tc * 1e3, tf * 1e3, tf / tc);
  }
}

[[noreturn]] void usage(int status) {
  std::fprintf(status ? stderr : stdout,
               "usage: recur-cost [--tiny] [--repeat=N] [--threads=N]\n"
               "  the papers' cost claims on Recur's kernels: Block-Recurrent "
               "vs sliding window,\n"
               "  MemBART carried vs recomputed history, Transformer-XL "
               "cached vs recomputed\n");
  std::exit(status);
}

int parsePositive(const std::string &arg, const std::string &flag) {
  std::string v = arg.substr(flag.size());
  char *end = nullptr;
  long n = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end || n <= 0 || n > 1000000)
    fatal("recur-cost: " + flag.substr(0, flag.size() - 1) +
          " must be a positive integer, not '" + v + "'");
  return static_cast<int>(n);
}

} // namespace

int main(int argc, char **argv) {
  bool tiny = false;
  int repeat = 5;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h")
      usage(0);
    else if (a == "--tiny")
      tiny = true;
    else if (a.rfind("--repeat=", 0) == 0)
      repeat = parsePositive(a, "--repeat=");
    else if (a.rfind("--threads=", 0) == 0)
      recur_set_num_threads(parsePositive(a, "--threads="));
    else {
      std::fprintf(stderr, "recur-cost: unknown argument '%s'\n", a.c_str());
      usage(2);
    }
  }
  if (tiny)
    repeat = 1;
  std::printf("recur-cost: %d threads, median of %d calls%s\n",
              recur_get_num_threads(), repeat, tiny ? " (--tiny)" : "");
  blockRecurrent(tiny, repeat);
  memBART(tiny, repeat);
  transformerXL(tiny, repeat);
  return 0;
}
