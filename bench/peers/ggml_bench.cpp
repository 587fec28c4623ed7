//===- ggml_bench.cpp - ggml CPU peers of the benchmark cases -------------===//
//
// Part of the Recur project.
//
// ggml_bench --case scan|gla|window [--tiny] [--threads N] [--runs N]
//            [--seq T]   (T of the gla and window cases: 4096, 8192)
//
// Times ggml's CPU kernels on the shapes of bench/layers.recur and prints one
// JSON object per line on stdout (see bench/peers/README.md); progress goes
// to stderr. Built by scripts/bench-peers.sh against a ggml that it builds
// outside the tree; nothing here is part of the project's build.
//
// Each op is first run at the tiny shape and compared with a float64 loop
// of the recurrence it is meant to compute ("check": max |ggml - ref| /
// max |ref|, as recur-run's max_rel_err), then timed at the requested shape:
// one warm-up, then the median of --runs graph computations. Inputs are
// seeded uniform random numbers; ggml's own layouts are used (token-major,
// heads inside tokens), which changes no operation count.
//
//===----------------------------------------------------------------------===//

#include "ggml-cpu.h"
#include "ggml.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace {

struct Options {
  std::string caseName;
  bool tiny = false;
  int64_t seq = 0; // --seq: T of the gla and window cases (0: theirs)
  int threads = 2;
  int runs = 5;
};

/// splitmix64: a fixed stream of uniform numbers, the same on every run.
class Rng {
public:
  explicit Rng(uint64_t seed) : state(seed) {}
  /// Uniform in [lo, hi).
  float uniform(float lo, float hi) {
    state += 0x9e3779b97f4a7c15ULL;
    uint64_t z = state;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    double u = static_cast<double>(z >> 11) * 0x1.0p-53;
    return static_cast<float>(lo + (hi - lo) * u);
  }

private:
  uint64_t state;
};

float *data(ggml_tensor *t) { return static_cast<float *>(t->data); }

void fill(ggml_tensor *t, Rng &rng, float lo, float hi) {
  for (int64_t i = 0, n = ggml_nelements(t); i < n; ++i)
    data(t)[i] = rng.uniform(lo, hi);
}

void fillConstant(ggml_tensor *t, float value) {
  for (int64_t i = 0, n = ggml_nelements(t); i < n; ++i)
    data(t)[i] = value;
}

/// max |got - want| / max |want| over the first want.size() values of got.
double relativeError(const float *got, const std::vector<double> &want) {
  double err = 0, scale = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    err = std::max(err, std::fabs(got[i] - want[i]));
    scale = std::max(scale, std::fabs(want[i]));
  }
  return scale > 0 ? err / scale : err;
}

/// A context big enough for the tensors of one case, freed on scope exit.
class Context {
public:
  explicit Context(size_t bytes) {
    ggml_init_params params = {bytes + (64u << 20), nullptr, false};
    ctx = ggml_init(params);
    if (!ctx) {
      std::fprintf(stderr, "ggml_bench: ggml_init failed (%zu bytes)\n", bytes);
      std::exit(1);
    }
  }
  ~Context() { ggml_free(ctx); }
  Context(const Context &) = delete;
  Context &operator=(const Context &) = delete;
  ggml_context *get() const { return ctx; }

private:
  ggml_context *ctx;
};

/// A graph computing `out` with its own work buffer, so that repeated
/// computations allocate nothing.
class Runner {
public:
  Runner(ggml_context *ctx, ggml_tensor *out, int threads) {
    graph = ggml_new_graph(ctx);
    ggml_build_forward_expand(graph, out);
    plan = ggml_graph_plan(graph, threads, nullptr);
    work.resize(plan.work_size);
    plan.work_data = work.data();
  }
  void compute() {
    if (ggml_graph_compute(graph, &plan) != GGML_STATUS_SUCCESS) {
      std::fprintf(stderr, "ggml_bench: ggml_graph_compute failed\n");
      std::exit(1);
    }
  }
  /// One warm-up, then the median of `runs` timed computations in ms.
  double medianMs(int runs) {
    compute();
    std::vector<double> ms;
    for (int r = 0; r < runs; ++r) {
      auto start = std::chrono::steady_clock::now();
      compute();
      auto stop = std::chrono::steady_clock::now();
      ms.push_back(
          std::chrono::duration<double, std::milli>(stop - start).count());
    }
    std::sort(ms.begin(), ms.end());
    size_t n = ms.size();
    return n % 2 ? ms[n / 2] : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
  }

private:
  ggml_cgraph *graph;
  ggml_cplan plan;
  std::vector<uint8_t> work;
};

/// JSON string contents: quotes and backslashes escaped.
std::string escape(const std::string &s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out;
}

void printResult(const Options &opts, const char *impl, const char *caseName,
                 const std::string &shape, double ms, double check,
                 const std::string &note) {
  std::printf("{\"peer\": \"ggml\", \"impl\": \"%s\", \"case\": \"%s\", "
              "\"shape\": \"%s\", \"threads\": %d, \"ms\": %.4f, "
              "\"runs\": %d, \"check\": %.3g, \"note\": \"%s\"}\n",
              impl, caseName, shape.c_str(), opts.threads, ms, opts.runs, check,
              escape(note).c_str());
  std::fflush(stdout);
}

//===----------------------------------------------------------------------===//
// scan_f32 through ggml_ssm_scan
//===----------------------------------------------------------------------===//

struct ScanShape {
  int64_t channels, steps;
  std::string str() const {
    return "B=1 T=" + std::to_string(steps) + " C=" + std::to_string(channels);
  }
};

/// Mamba-2's scan with one head per channel, head_dim = d_state = 1,
/// A = -1 and B = C = 1 computes s_t = exp(-softplus(dt_t)) s_{t-1} +
/// softplus(dt_t) x'_t, y_t = s_t. With dt_t = log(1/a_t - 1) (so that
/// softplus(dt_t) = -log a_t) and x'_t = x_t / -log a_t, that is
/// h_t = a_t h_{t-1} + x_t. The two inputs are transformed before timing.
struct ScanCase {
  ggml_tensor *y;
  std::vector<float> a, x; // [T, C], the untransformed inputs

  ScanCase(ggml_context *ctx, const ScanShape &s, Rng &rng) {
    int64_t n = s.channels * s.steps;
    ggml_tensor *s0 =
        ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 1, 1, s.channels, 1);
    ggml_tensor *xs =
        ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 1, s.channels, s.steps, 1);
    ggml_tensor *dt =
        ggml_new_tensor_3d(ctx, GGML_TYPE_F32, s.channels, s.steps, 1);
    ggml_tensor *A = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 1, s.channels);
    ggml_tensor *B = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 1, 1, s.steps, 1);
    ggml_tensor *C = ggml_new_tensor_4d(ctx, GGML_TYPE_F32, 1, 1, s.steps, 1);
    ggml_tensor *ids = ggml_new_tensor_1d(ctx, GGML_TYPE_I32, 1);
    fillConstant(s0, 0.0f);
    fillConstant(A, -1.0f);
    fillConstant(B, 1.0f);
    fillConstant(C, 1.0f);
    static_cast<int32_t *>(ids->data)[0] = 0;
    a.resize(n);
    x.resize(n);
    for (int64_t i = 0; i < n; ++i) {
      a[i] = rng.uniform(0.5f, 0.999f);
      x[i] = rng.uniform(-1.0f, 1.0f);
      double rate = -std::log(static_cast<double>(a[i]));
      data(dt)[i] = static_cast<float>(std::log(1.0 / a[i] - 1.0));
      data(xs)[i] = static_cast<float>(x[i] / rate);
    }
    y = ggml_ssm_scan(ctx, s0, xs, dt, A, B, C, ids, 1);
  }

  std::vector<double> reference(const ScanShape &s) const {
    std::vector<double> ref(s.channels * s.steps);
    std::vector<double> h(s.channels, 0.0);
    for (int64_t t = 0; t < s.steps; ++t)
      for (int64_t c = 0; c < s.channels; ++c) {
        int64_t i = t * s.channels + c;
        h[c] = static_cast<double>(a[i]) * h[c] + x[i];
        ref[i] = h[c];
      }
    return ref;
  }
};

/// Checks a case at its tiny shape against its float64 reference, then
/// times it at the run's shape (`full`, or `tiny` with --tiny) on fresh
/// inputs and prints its line. `build(ctx, shape, rng)` makes the inputs
/// and returns the output tensor and the reference of those inputs (a
/// callable giving the float64 result).
template <typename Shape, typename Build>
void checkAndTime(const Options &opts, const char *impl, const char *name,
                  const Shape &tiny, const Shape &full,
                  size_t (*bytes)(const Shape &), uint64_t seed, Build build,
                  const std::string &note) {
  double check;
  {
    Context ctx(bytes(tiny));
    Rng rng(seed);
    auto [out, reference] = build(ctx.get(), tiny, rng);
    Runner(ctx.get(), out, opts.threads).compute();
    check = relativeError(data(out), reference());
  }
  const Shape &shape = opts.tiny ? tiny : full;
  std::fprintf(stderr, "ggml_bench: %s %s\n", impl, shape.str().c_str());
  Context ctx(bytes(shape));
  Rng rng(seed + 1);
  auto [out, reference] = build(ctx.get(), shape, rng);
  (void)reference;
  double ms = Runner(ctx.get(), out, opts.threads).medianMs(opts.runs);
  printResult(opts, impl, name, shape.str(), ms, check, note);
}

size_t scanBytes(const ScanShape &s) {
  return 8 * s.channels * s.steps * sizeof(float);
}

void runScan(const Options &opts) {
  checkAndTime(
      opts, "ssm_scan", "scan_f32", ScanShape{64, 512}, ScanShape{1024, 16384},
      scanBytes, 1,
      [](ggml_context *ctx, const ScanShape &shape, Rng &rng) {
        auto c = std::make_shared<ScanCase>(ctx, shape, rng);
        return std::make_pair(c->y, [c, shape] { return c->reference(shape); });
      },
      "Mamba-2 ssm_scan, one head per channel, head_dim=d_state=1, "
      "A=-1, B=C=1, dt=log(1/a-1), x'=x/(-log a) (transformed before "
      "timing): h_t = exp(-softplus(dt)) h + softplus(dt) x' = a h + "
      "x; computes softplus and exp per element; reads x', dt");
}

//===----------------------------------------------------------------------===//
// gla_fwd through ggml_gated_linear_attn and ggml_rwkv_wkv6
//===----------------------------------------------------------------------===//

struct GlaShape {
  int64_t batch, heads, steps, dim;
  std::string str() const {
    return "B=" + std::to_string(batch) + " H=" + std::to_string(heads) +
           " T=" + std::to_string(steps) + " dk=" + std::to_string(dim) +
           " dv=" + std::to_string(dim);
  }
  int64_t tokens() const { return batch * steps; }
  int64_t elements() const { return tokens() * heads * dim; }
};

size_t glaBytes(const GlaShape &s) {
  return (8 * s.elements() + 2 * s.batch * s.heads * s.dim * s.dim) *
         sizeof(float);
}

/// The inputs of both ops, laid out as ggml wants them: [tokens, H, dim]
/// with the tokens of sequence b at [b*T, (b+1)*T).
struct GlaInputs {
  ggml_tensor *q, *k, *v, *gate, *state, *bonus;

  GlaInputs(ggml_context *ctx, const GlaShape &s, Rng &rng) {
    auto seq = [&] {
      return ggml_new_tensor_3d(ctx, GGML_TYPE_F32, s.dim, s.heads, s.tokens());
    };
    q = seq();
    k = seq();
    v = seq();
    gate = seq();
    fill(q, rng, -1.0f, 1.0f);
    fill(k, rng, -1.0f, 1.0f);
    fill(v, rng, -1.0f, 1.0f);
    fill(gate, rng, 0.9f, 1.0f);
    state = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, s.dim * s.dim * s.heads,
                               s.batch);
    fillConstant(state, 0.0f);
    bonus = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, s.dim, s.heads);
    fill(bonus, rng, -1.0f, 1.0f);
  }

  /// o_t = q_t S_t with S_t = diag(gate_t) S_{t-1} + k_t^T v_t (GLA), or,
  /// with `wkv6`, o_t = q_t (S_{t-1} + diag(bonus) k_t^T v_t).
  std::vector<double> reference(const GlaShape &s, bool wkv6) const {
    std::vector<double> out(s.elements());
    std::vector<double> S(s.dim * s.dim);
    int64_t d = s.dim;
    for (int64_t b = 0; b < s.batch; ++b)
      for (int64_t h = 0; h < s.heads; ++h) {
        std::fill(S.begin(), S.end(), 0.0);
        for (int64_t t = 0; t < s.steps; ++t) {
          int64_t row = ((b * s.steps + t) * s.heads + h) * d;
          for (int64_t j = 0; j < d; ++j) {
            double o = 0;
            for (int64_t i = 0; i < d; ++i) {
              double kv =
                  static_cast<double>(data(k)[row + i]) * data(v)[row + j];
              double prev = S[i * d + j];
              double next = data(gate)[row + i] * prev + kv;
              double seen = wkv6 ? prev + data(bonus)[h * d + i] * kv : next;
              o += data(q)[row + i] * seen;
              S[i * d + j] = next;
            }
            out[row + j] = o;
          }
        }
      }
    return out;
  }
};

/// Builds the op under test on fresh inputs.
using GlaOp = std::function<ggml_tensor *(ggml_context *, GlaInputs &)>;

void runGlaOp(const Options &opts, const char *impl, const GlaOp &op, bool wkv6,
              const std::string &note) {
  checkAndTime(
      opts, impl, "gla_fwd", GlaShape{1, 2, 256, 64},
      GlaShape{4, 8, opts.seq > 0 ? opts.seq : 4096, 64}, glaBytes, 3,
      [&](ggml_context *ctx, const GlaShape &shape, Rng &rng) {
        auto in = std::make_shared<GlaInputs>(ctx, shape, rng);
        return std::make_pair(op(ctx, *in), [in, shape, wkv6] {
          return in->reference(shape, wkv6);
        });
      },
      note);
}

void runGla(const Options &opts) {
  runGlaOp(
      opts, "gated_linear_attn",
      [](ggml_context *ctx, GlaInputs &in) {
        return ggml_gated_linear_attn(ctx, in.k, in.v, in.q, in.gate, in.state,
                                      1.0f);
      },
      /*wkv6=*/false,
      "ggml_gated_linear_attn(k, v, q, g=a, state=0, scale=1): the same "
      "recurrence, step by step (no chunking), heads split over threads; "
      "forward only (ggml has no backward for it); gates a in [0.9, 1)");
  runGlaOp(
      opts, "rwkv_wkv6",
      [](ggml_context *ctx, GlaInputs &in) {
        return ggml_rwkv_wkv6(ctx, in.k, in.v, in.q, in.bonus, in.gate,
                              in.state);
      },
      /*wkv6=*/true,
      "ggml_rwkv_wkv6(k, v, r=q, u, w=a, state=0): a different recurrence "
      "of the same cost, o_t = r_t (S_{t-1} + diag(u) k_t^T v_t), S_t = "
      "diag(w_t) S_{t-1} + k_t^T v_t; the kernel takes the decay w itself "
      "(llama.cpp computes exp(-exp(w)) before the call, outside the op); "
      "check is against that recurrence; forward only");
}

//===----------------------------------------------------------------------===//
// window_fwd through ggml_flash_attn_ext with a band mask
//===----------------------------------------------------------------------===//

struct WindowShape {
  int64_t heads, steps, window, dim;
  std::string str() const {
    return "B=1 H=" + std::to_string(heads) + " T=" + std::to_string(steps) +
           " W=" + std::to_string(window) + " d=" + std::to_string(dim);
  }
  int64_t elements() const { return heads * steps * dim; }
};

size_t windowBytes(const WindowShape &s) {
  return 5 * s.elements() * sizeof(float) +
         s.steps * s.steps * sizeof(ggml_fp16_t);
}

/// q, k, v as ggml's [H, T, d] (row t of head h at (h*T + t)*d), the mask
/// [T queries, T keys] in f16: 0 where t - W < t' <= t, -inf elsewhere.
struct WindowCase {
  ggml_tensor *q, *k, *v, *mask, *out;
  float scale;

  WindowCase(ggml_context *ctx, const WindowShape &s, Rng &rng) {
    auto seq = [&] {
      return ggml_new_tensor_4d(ctx, GGML_TYPE_F32, s.dim, s.steps, s.heads, 1);
    };
    q = seq();
    k = seq();
    v = seq();
    fill(q, rng, -1.0f, 1.0f);
    fill(k, rng, -1.0f, 1.0f);
    fill(v, rng, -1.0f, 1.0f);
    mask = ggml_new_tensor_4d(ctx, GGML_TYPE_F16, s.steps, s.steps, 1, 1);
    auto *m = static_cast<ggml_fp16_t *>(mask->data);
    ggml_fp16_t zero = ggml_fp32_to_fp16(0.0f);
    ggml_fp16_t blocked = ggml_fp32_to_fp16(-INFINITY);
    for (int64_t t = 0; t < s.steps; ++t)
      for (int64_t u = 0; u < s.steps; ++u)
        m[t * s.steps + u] = (u <= t && u > t - s.window) ? zero : blocked;
    scale = 1.0f / std::sqrt(static_cast<float>(s.dim));
    out = ggml_flash_attn_ext(ctx, q, k, v, mask, scale, 0.0f, 0.0f);
  }

  /// Softmax attention over the window in double; laid out as ggml's
  /// result [T, H, d].
  std::vector<double> reference(const WindowShape &s) const {
    std::vector<double> ref(s.elements());
    std::vector<double> w;
    int64_t d = s.dim;
    for (int64_t h = 0; h < s.heads; ++h)
      for (int64_t t = 0; t < s.steps; ++t) {
        int64_t first = std::max<int64_t>(0, t - s.window + 1);
        const float *qt = data(q) + (h * s.steps + t) * d;
        w.assign(t - first + 1, 0.0);
        double top = -INFINITY, sum = 0;
        for (int64_t u = first; u <= t; ++u) {
          const float *ku = data(k) + (h * s.steps + u) * d;
          double dot = 0;
          for (int64_t e = 0; e < d; ++e)
            dot += static_cast<double>(qt[e]) * ku[e];
          w[u - first] = dot * scale;
          top = std::max(top, w[u - first]);
        }
        for (double &x : w)
          sum += (x = std::exp(x - top));
        for (int64_t e = 0; e < d; ++e) {
          double o = 0;
          for (int64_t u = first; u <= t; ++u)
            o += w[u - first] * data(v)[(h * s.steps + u) * d + e];
          ref[(t * s.heads + h) * d + e] = o / sum;
        }
      }
    return ref;
  }
};

void runWindow(const Options &opts) {
  checkAndTime(
      opts, "flash_attn_ext", "window_fwd", WindowShape{2, 512, 64, 64},
      WindowShape{8, opts.seq > 0 ? opts.seq : 8192, 512, 64}, windowBytes, 5,
      [](ggml_context *ctx, const WindowShape &shape, Rng &rng) {
        auto c = std::make_shared<WindowCase>(ctx, shape, rng);
        return std::make_pair(c->out,
                              [c, shape] { return c->reference(shape); });
      },
      "ggml_flash_attn_ext, f32 q/k/v, dense f16 band mask [T, T] "
      "(0 inside the window, -inf outside; built before timing); "
      "the tiled CPU kernel skips key tiles whose mask is all -inf "
      "but reads the whole mask; forward only");
}

Options parse(int argc, char **argv) {
  Options opts;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "ggml_bench: %s needs a value\n", arg.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (arg == "--case")
      opts.caseName = value();
    else if (arg == "--tiny")
      opts.tiny = true;
    else if (arg == "--threads")
      opts.threads = std::atoi(value().c_str());
    else if (arg == "--runs")
      opts.runs = std::atoi(value().c_str());
    else if (arg == "--seq")
      opts.seq = std::atoll(value().c_str());
    else {
      std::fprintf(stderr, "ggml_bench: unknown argument %s\n", arg.c_str());
      std::exit(2);
    }
  }
  if (opts.threads < 1 || opts.runs < 1 || opts.seq < 0) {
    std::fprintf(stderr,
                 "ggml_bench: --threads and --runs must be >= 1, --seq >= 0\n");
    std::exit(2);
  }
  return opts;
}

} // namespace

int main(int argc, char **argv) {
  Options opts = parse(argc, argv);
  ggml_cpu_init();
  if (opts.caseName == "scan")
    runScan(opts);
  else if (opts.caseName == "gla")
    runGla(opts);
  else if (opts.caseName == "window")
    runWindow(opts);
  else {
    std::fprintf(stderr,
                 "ggml_bench: --case must be scan, gla or window (got '%s')\n",
                 opts.caseName.c_str());
    return 2;
  }
  return 0;
}
