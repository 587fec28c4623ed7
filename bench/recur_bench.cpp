//===- recur_bench.cpp - the CPU benchmarks of `make bench` ---------------===//
//
// Part of the Recur project.
//
// Google Benchmark timings of the compiled layers (bench/layers.recur and
// the Block-Recurrent pair of examples/block_recurrent.recur) and, in the
// same run and with the same threads, of what they are measured against:
// a streaming copy (the memory bandwidth limit of the scans), OpenBLAS
// sgemm (the arithmetic limit of the matrix-state and attention kernels)
// and plain C++ loops compiled with -O3 -march=native. Every benchmark
// reports what it moves or computes as counters (`bytes_per_second`,
// `flops`, a rate), so bench/run.py can print ratios; docs/performance.md
// says how the FLOPs are counted.
//
//   recur-bench [--threads=N] [--tiny] [--seq=T] [Google Benchmark options]
//
// --tiny runs every benchmark at a tiny size (CI checks that they run);
// --threads sets the threads of everything (default 2).
//
//===----------------------------------------------------------------------===//

#include "BlockRecurrentSkipFixed.h"
#include "Gla.h"
#include "GlaChunked.h"
#include "ScanC64.h"
#include "ScanF32.h"
#include "ScanF32One.h"
#include "SlidingWindow.h"
#include "Window.h"

#include <benchmark/benchmark.h>
#include <cblas.h>
#include <omp.h>
#if defined(__AVX__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <vector>

extern "C" void openblas_set_num_threads(int);

namespace {

int gThreads = 2;
bool gTiny = false;
/// --seq=N: the sequence length of the gla and window cases (0: theirs).
int64_t gSeq = 0;

//===----------------------------------------------------------------------===//
// Shapes (the CPU performance issue's; --tiny shrinks them)
//===----------------------------------------------------------------------===//

struct Shapes {
  int64_t scanT = 16384;         // ScanF32 / ScanC64: C = 1024 channels
  int64_t glaB = 4, glaT = 4096; // Gla: H = 8, dk = dv = 64
  int64_t winT = 8192;           // Window: B = 1, H = 8, d = 64, W = 512
  int64_t brtT = 2048;           // Block-Recurrent: B = 1, W = S = 512
  int64_t gemm = 1024;           // sgemm M = N = K
};

Shapes shapes() {
  Shapes s;
  if (gTiny) {
    s.scanT = 16;
    s.glaB = 1;
    s.glaT = 128;
    s.winT = 1024;
    s.brtT = 512;
    s.gemm = 64;
  }
  if (gSeq > 0)
    s.glaT = s.winT = gSeq;
  return s;
}

//===----------------------------------------------------------------------===//
// A compiled layer with random arguments
//===----------------------------------------------------------------------===//

/// A buffer of `bytes`, 64-byte aligned.
struct Buffer {
  explicit Buffer(size_t bytes) : ptr(recur_alloc(std::max<size_t>(bytes, 1))) {
    if (!ptr) {
      std::fprintf(stderr, "recur-bench: out of memory (%zu bytes)\n", bytes);
      std::exit(1);
    }
    std::memset(ptr, 0, bytes);
  }
  Buffer(const Buffer &) = delete;
  Buffer(Buffer &&other) noexcept : ptr(other.ptr) { other.ptr = nullptr; }
  ~Buffer() { recur_free(ptr); }
  void *ptr;
};

size_t elementBytes(recur_dtype dtype) {
  switch (dtype) {
  case RECUR_F64:
  case RECUR_C64:
    return 8;
  case RECUR_C128:
    return 16;
  case RECUR_F16:
  case RECUR_BF16:
    return 2;
  case RECUR_BOOL:
    return 1;
  default:
    return 4;
  }
}

/// The inputs, params, states, outputs and gradients of one layer at the
/// runtime sizes `dims`, filled with seeded random values: transitions
/// named `a` in [0.9, 0.999) (with a random phase when complex: a scan
/// stays bounded over any length), `start` flags 0, params by their init
/// rule (normal(0.02) for random rules), everything else N(0, 0.5).
class LayerCall {
public:
  LayerCall(const recur_layer_desc *desc, std::vector<int64_t> dims)
      : desc(desc), dims(std::move(dims)) {
    std::mt19937_64 rng(1);
    for (int32_t i = 0; i < desc->num_args; ++i) {
      const recur_arg_desc &arg = desc->args[i];
      recur_tensor t = make(arg);
      fill(arg, t, rng);
      (arg.role == RECUR_ROLE_INPUT   ? inputs
       : arg.role == RECUR_ROLE_PARAM ? params
                                      : states)
          .push_back(t);
    }
    for (int32_t i = 0; i < desc->num_results; ++i)
      if (desc->results[i].role == RECUR_ROLE_OUTPUT)
        outputs.push_back(make(desc->results[i]));
    check(recur_state_create(desc, batch(), params.data(), &state),
          "recur_state_create");
  }
  ~LayerCall() { recur_state_destroy(state); }

  void forward() {
    check(recur_forward(desc, inputs.data(), params.data(), state,
                        outputs.data()),
          "recur_forward");
  }

  /// Makes the cotangents (random) and the gradient buffers of backward();
  /// outside the timed loop: filling them takes longer than a call.
  void prepareBackward() {
    if (dOutputs.empty()) {
      std::mt19937_64 rng(2);
      for (int32_t i = 0; i < desc->num_results; ++i)
        if (desc->results[i].role == RECUR_ROLE_OUTPUT) {
          recur_tensor t = make(desc->results[i]);
          fill(desc->results[i], t, rng);
          dOutputs.push_back(t);
        }
      for (int32_t i = 0; i < desc->num_args; ++i)
        if (desc->args[i].role != RECUR_ROLE_STATE)
          (desc->args[i].role == RECUR_ROLE_INPUT ? gradInputs : gradParams)
              .push_back(make(desc->args[i]));
    }
  }

  /// One backward call, gradients for every input and param
  /// (prepareBackward first).
  void backward() {
    check(recur_backward(desc, inputs.data(), params.data(), state,
                         dOutputs.data(), nullptr, gradInputs.data(),
                         gradParams.data(), nullptr),
          "recur_backward");
  }

  /// Sets the first transition of every leading index of the input `a`
  /// (`a[..., 0, 0]`, an f32 `[..., T, dk]`) to `value`: a gla backward
  /// then leaves its product form for the reverse sweep everywhere (its
  /// decays must lie in [2^(-32 / chunk), 1]).
  void setFirstDecays(float value) {
    for (int32_t i = 0, in = 0; i < desc->num_args; ++i) {
      if (desc->args[i].role != RECUR_ROLE_INPUT)
        continue;
      recur_tensor &t = inputs[in++];
      if (std::string(desc->args[i].name) != "a" || t.dtype != RECUR_F32 ||
          t.rank < 2)
        continue;
      int64_t row = t.shape[t.rank - 2] * t.shape[t.rank - 1];
      auto *p = static_cast<float *>(t.data);
      for (int64_t at = 0; at < recur_tensor_numel(&t); at += row)
        p[at] = value;
    }
  }

  /// The bytes of the inputs plus the outputs: what one forward call must
  /// read and write at least.
  double ioBytes() const {
    double bytes = 0;
    for (const std::vector<recur_tensor> *set : {&inputs, &outputs})
      for (const recur_tensor &t : *set)
        bytes += double(recur_tensor_numel(&t)) * elementBytes(t.dtype);
    return bytes;
  }

private:
  int64_t batch() const {
    return desc->batch_dim >= 0 ? dims[desc->batch_dim] : 1;
  }

  recur_tensor make(const recur_arg_desc &arg) {
    int64_t shape[RECUR_MAX_RANK];
    size_t numel = 1;
    for (int32_t d = 0; d < arg.rank; ++d) {
      shape[d] = arg.shape[d] >= 0 ? arg.shape[d] : dims[-1 - arg.shape[d]];
      numel *= shape[d];
    }
    buffers.emplace_back(numel * elementBytes(arg.dtype));
    return recur_tensor_contiguous(buffers.back().ptr, arg.dtype, arg.rank,
                                   shape);
  }

  static void fill(const recur_arg_desc &arg, recur_tensor &t,
                   std::mt19937_64 &rng) {
    int64_t n = recur_tensor_numel(&t);
    std::normal_distribution<float> normal(0.0f, 0.5f);
    std::uniform_real_distribution<float> decay(0.9f, 0.999f),
        phase(-3.1f, 3.1f);
    std::string rule = arg.init_rule ? arg.init_rule : "";
    std::string name = arg.name;
    auto value = [&]() -> float {
      if (arg.role == RECUR_ROLE_PARAM) {
        if (rule == "ones")
          return 1.0f;
        if (rule == "zeros")
          return 0.0f;
        if (rule.rfind("const(", 0) == 0)
          return std::strtof(rule.c_str() + 6, nullptr);
        return 0.04f * normal(rng);
      }
      if (name == "start")
        return 0.0f;
      return normal(rng);
    };
    if (t.dtype == RECUR_F32) {
      auto *p = static_cast<float *>(t.data);
      for (int64_t i = 0; i < n; ++i)
        p[i] = name == "a" ? decay(rng) : value();
    } else if (t.dtype == RECUR_C64) {
      auto *p = static_cast<std::complex<float> *>(t.data);
      for (int64_t i = 0; i < n; ++i)
        p[i] = name == "a" ? std::polar(decay(rng), phase(rng))
                           : std::complex<float>(value(), value());
    }
  }

  static void check(recur_status status, const char *what) {
    if (status != RECUR_OK) {
      std::fprintf(stderr, "recur-bench: %s: %s\n", what, recur_last_error());
      std::exit(1);
    }
  }

  const recur_layer_desc *desc;
  std::vector<int64_t> dims;
  std::vector<Buffer> buffers;
  std::vector<recur_tensor> inputs, params, states, outputs;
  std::vector<recur_tensor> dOutputs, gradInputs, gradParams;
  recur_state *state = nullptr;
};

/// Times `call` (forward or backward) of `desc` at `dims`, reporting
/// `flops` per call as a rate and the I/O bytes of a forward call; with
/// `firstDecay`, every leading index's first transition set to it.
void runLayer(benchmark::State &st, const recur_layer_desc *desc,
              std::vector<int64_t> dims, double flops, bool backward,
              std::optional<float> firstDecay = std::nullopt) {
  recur_set_num_threads(gThreads);
  LayerCall call(desc, std::move(dims));
  if (firstDecay)
    call.setFirstDecays(*firstDecay);
  if (backward)
    call.prepareBackward();
  for (auto _ : st) {
    if (backward)
      call.backward();
    else
      call.forward();
  }
  if (flops > 0)
    st.counters["flops"] = benchmark::Counter(flops * double(st.iterations()),
                                              benchmark::Counter::kIsRate);
  if (!backward)
    st.SetBytesProcessed(int64_t(call.ioBytes() * double(st.iterations())));
}

//===----------------------------------------------------------------------===//
// Limits: streaming copy and sgemm
//===----------------------------------------------------------------------===//

/// dst = src over `bytes`, split across the threads: the streaming copy
/// a memory-bound kernel is measured against (2 x bytes moved per call).
/// Its stores go around the cache (non-temporal, as the scans' do), so it
/// moves only the bytes it counts: with cached stores each line of dst is
/// read before it is written, 3 bytes moved for 2 counted, and a kernel
/// that streams its stores could pass the copy (it did, by up to 1.2x).
void BM_Copy(benchmark::State &st) {
  int64_t n = shapes().scanT * 1024;
  Buffer src(n * 4), dst(n * 4);
  auto *s = static_cast<float *>(src.ptr);
  auto *d = static_cast<float *>(dst.ptr);
  for (int64_t i = 0; i < n; ++i)
    s[i] = float(i);
  for (auto _ : st) {
#if defined(__AVX__)
    // recur_alloc's buffers are 64-byte aligned; n is a multiple of 8.
#pragma omp parallel num_threads(gThreads)
    {
#pragma omp for schedule(static) nowait
      for (int64_t i = 0; i < n; i += 8)
        _mm256_stream_ps(d + i, _mm256_load_ps(s + i));
      _mm_sfence();
    }
#else
#pragma omp parallel for num_threads(gThreads) schedule(static)
    for (int64_t i = 0; i < n; ++i)
      d[i] = s[i];
#endif
    benchmark::DoNotOptimize(d);
  }
  st.SetBytesProcessed(
      int64_t(2.0 * 4.0 * double(n) * double(st.iterations())));
}

/// C = A B, M = N = K: OpenBLAS sgemm with the same threads.
void BM_Sgemm(benchmark::State &st) {
  int64_t n = shapes().gemm;
  openblas_set_num_threads(gThreads);
  std::vector<float> a(n * n, 0.5f), b(n * n, 0.25f), c(n * n);
  for (auto _ : st) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f,
                a.data(), n, b.data(), n, 0.0f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
  }
  st.counters["flops"] =
      benchmark::Counter(2.0 * double(n) * n * n * double(st.iterations()),
                         benchmark::Counter::kIsRate);
}

//===----------------------------------------------------------------------===//
// Plain C++ loops (-O3 -march=native), the same computations
//===----------------------------------------------------------------------===//

/// h_t = a_t h_{t-1} + x_t over 1024 channels, time outer, channels inner
/// in blocks of 64 per thread: the loop a careful programmer writes.
template <typename T> void plainScan(benchmark::State &st) {
  int64_t len = shapes().scanT, channels = 1024, n = len * channels;
  std::vector<T> a(n), x(n), y(n);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(0.9f, 0.999f);
  for (int64_t i = 0; i < n; ++i) {
    a[i] = T(u(rng));
    x[i] = T(u(rng) - 0.95f);
  }
  for (auto _ : st) {
#pragma omp parallel for num_threads(gThreads) schedule(static)
    for (int64_t c0 = 0; c0 < channels; c0 += 64) {
      T h[64] = {};
      for (int64_t t = 0; t < len; ++t) {
        const T *at = &a[t * channels + c0], *xt = &x[t * channels + c0];
        T *yt = &y[t * channels + c0];
        for (int64_t c = 0; c < 64; ++c) {
          h[c] = at[c] * h[c] + xt[c];
          yt[c] = h[c];
        }
      }
    }
    benchmark::DoNotOptimize(y.data());
  }
  st.SetBytesProcessed(
      int64_t(3.0 * sizeof(T) * double(n) * double(st.iterations())));
}
void BM_PlainScanF32(benchmark::State &st) { plainScan<float>(st); }
void BM_PlainScanC64(benchmark::State &st) {
  plainScan<std::complex<float>>(st);
}

/// h_t = a_t h_{t-1} + x_t over one channel of 1024 x scanT steps: the
/// plain loop, one thread (a single sequence gives a loop nothing to split).
void BM_PlainScanOne(benchmark::State &st) {
  int64_t n = shapes().scanT * 1024;
  std::vector<float> a(n), x(n), y(n);
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(0.9f, 0.999f);
  for (int64_t i = 0; i < n; ++i) {
    a[i] = u(rng);
    x[i] = u(rng) - 0.95f;
  }
  for (auto _ : st) {
    float h = 0;
    for (int64_t t = 0; t < n; ++t) {
      h = a[t] * h + x[t];
      y[t] = h;
    }
    benchmark::DoNotOptimize(y.data());
  }
  st.SetBytesProcessed(
      int64_t(3.0 * sizeof(float) * double(n) * double(st.iterations())));
}

/// Gated linear attention, recurrent form: per (batch, head) a dk x dv
/// state, S = diag(a_t) S + k_t^T v_t, o_t = q_t S.
void BM_PlainGla(benchmark::State &st) {
  Shapes s = shapes();
  const int64_t heads = 8, dk = 64, dv = 64, len = s.glaT,
                rows = s.glaB * heads;
  std::vector<float> q(rows * len * dk), k(q.size()), a(q.size()),
      v(rows * len * dv), o(v.size());
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 0.5f);
  std::uniform_real_distribution<float> decay(0.9f, 0.999f);
  for (size_t i = 0; i < q.size(); ++i) {
    q[i] = normal(rng);
    k[i] = normal(rng);
    a[i] = decay(rng);
  }
  for (float &x : v)
    x = normal(rng);
  for (auto _ : st) {
#pragma omp parallel for num_threads(gThreads) schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      std::vector<float> state(dk * dv, 0.0f);
      for (int64_t t = 0; t < len; ++t) {
        const float *qt = &q[(r * len + t) * dk], *kt = &k[(r * len + t) * dk],
                    *at = &a[(r * len + t) * dk], *vt = &v[(r * len + t) * dv];
        float *ot = &o[(r * len + t) * dv];
        for (int64_t j = 0; j < dv; ++j)
          ot[j] = 0.0f;
        for (int64_t i = 0; i < dk; ++i) {
          float *row = &state[i * dv];
          for (int64_t j = 0; j < dv; ++j) {
            row[j] = at[i] * row[j] + kt[i] * vt[j];
            ot[j] += qt[i] * row[j];
          }
        }
      }
    }
    benchmark::DoNotOptimize(o.data());
  }
  st.counters["flops"] = benchmark::Counter(4.0 * double(rows * len * dk * dv) *
                                                double(st.iterations()),
                                            benchmark::Counter::kIsRate);
}

/// Causal sliding-window attention, each query over itself and the W - 1
/// keys before it, exact softmax per query (two passes over its keys).
void BM_PlainWindow(benchmark::State &st) {
  const int64_t heads = 8, d = 64, window = 512, len = shapes().winT;
  std::vector<float> q(heads * len * d), k(q.size()), v(q.size()), o(q.size());
  std::mt19937 rng(1);
  std::normal_distribution<float> normal(0.0f, 0.5f);
  for (size_t i = 0; i < q.size(); ++i) {
    q[i] = normal(rng);
    k[i] = normal(rng);
    v[i] = normal(rng);
  }
  for (auto _ : st) {
#pragma omp parallel for num_threads(gThreads) schedule(static) collapse(2)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t p = 0; p < len; ++p) {
        float scores[512];
        const float *qp = &q[(h * len + p) * d];
        int64_t first = std::max<int64_t>(0, p - window + 1);
        float best = -INFINITY;
        for (int64_t j = first; j <= p; ++j) {
          const float *kj = &k[(h * len + j) * d];
          float s = 0.0f;
          for (int64_t c = 0; c < d; ++c)
            s += qp[c] * kj[c];
          s *= 0.125f;
          scores[j - first] = s;
          best = std::max(best, s);
        }
        float acc[64] = {}, sum = 0.0f;
        for (int64_t j = first; j <= p; ++j) {
          float w = std::exp(scores[j - first] - best);
          sum += w;
          const float *vj = &v[(h * len + j) * d];
          for (int64_t c = 0; c < d; ++c)
            acc[c] += w * vj[c];
        }
        float *op = &o[(h * len + p) * d];
        for (int64_t c = 0; c < d; ++c)
          op[c] = acc[c] / sum;
      }
    benchmark::DoNotOptimize(o.data());
  }
  st.counters["flops"] = benchmark::Counter(
      4.0 * double(heads * len * window * d) * double(st.iterations()),
      benchmark::Counter::kIsRate);
}

//===----------------------------------------------------------------------===//
// Recur's compiled layers
//===----------------------------------------------------------------------===//

// FLOPs: a GLA token costs 4 dk dv per head in the recurrent form (the
// state update and the output), whatever the algorithm; window attention
// 4 W d per query and head (scores and the weighted sum). Backward calls
// count twice their forward (the convention of flash-linear-attention's
// and FlashAttention's benchmarks is 2x and 2.5x; we use 2x for both).
double glaFlops() {
  Shapes s = shapes();
  return 4.0 * double(s.glaB) * 8 * double(s.glaT) * 64 * 64;
}
double windowFlops() { return 4.0 * 8 * double(shapes().winT) * 512 * 64; }

void BM_RecurScanF32(benchmark::State &st) {
  runLayer(st, recur_ScanF32_layer(), {1, shapes().scanT}, 0, false);
}
void BM_RecurScanF32One(benchmark::State &st) {
  runLayer(st, recur_ScanF32One_layer(), {1, shapes().scanT * 1024}, 0, false);
}
void BM_RecurScanC64(benchmark::State &st) {
  runLayer(st, recur_ScanC64_layer(), {1, shapes().scanT}, 0, false);
}
void BM_RecurGlaForward(benchmark::State &st) {
  runLayer(st, recur_Gla_layer(), {shapes().glaB, shapes().glaT}, glaFlops(),
           false);
}
void BM_RecurGlaChunkedForward(benchmark::State &st) {
  runLayer(st, recur_GlaChunked_layer(), {shapes().glaB, shapes().glaT},
           glaFlops(), false);
}
void BM_RecurGlaBackward(benchmark::State &st) {
  runLayer(st, recur_Gla_layer(), {shapes().glaB, shapes().glaT},
           2 * glaFlops(), true);
}
/// The same with one decay of 0.1 per batch and head, below the product
/// form's range: the reverse sweep everywhere.
void BM_RecurGlaBackwardSweep(benchmark::State &st) {
  runLayer(st, recur_Gla_layer(), {shapes().glaB, shapes().glaT},
           2 * glaFlops(), true, 0.1f);
}
void BM_RecurWindowForward(benchmark::State &st) {
  runLayer(st, recur_Window_layer(), {1, shapes().winT}, windowFlops(), false);
}
void BM_RecurWindowBackward(benchmark::State &st) {
  runLayer(st, recur_Window_layer(), {1, shapes().winT}, 2 * windowFlops(),
           true);
}
// The Block-Recurrent pair, compiled at D = 512, H = 8, W = S = 512, F =
// 2048 (bench/CMakeLists.txt), counting the matmuls and attention products
// of examples/block_recurrent.recur (2 FLOPs a multiply-add; norms, gates
// and softmax not counted). Per token, both layers: the value, key and
// query projections (2 D^2 each), the window's scores and weighted sum
// (4 W D), W_O and the relu MLP (4 D F). The recurrent layer adds per
// token a second query projection (2 D^2), the read of the S state vectors
// (4 S D) and W_O's second half (2 D^2), and per block of W tokens the
// state's work: four projections of the S state vectors (8 S D^2), their
// self-attention (4 S^2 D), their attention over the 2 W cached and current
// tokens (8 S W D) and W_O' (4 S D^2).
constexpr double kBrtD = 512, kBrtW = 512, kBrtS = 512, kBrtF = 2048;
double slidingWindowFlops() {
  double d = kBrtD, tokens = double(shapes().brtT);
  return tokens * (6 * d * d + 4 * kBrtW * d + 2 * d * d + 4 * d * kBrtF);
}
double blockRecurrentFlops() {
  double d = kBrtD, s = kBrtS, w = kBrtW, tokens = double(shapes().brtT);
  double perToken = 2 * d * d + 4 * s * d + 2 * d * d;
  double perBlock =
      8 * s * d * d + 4 * s * s * d + 8 * s * w * d + 4 * s * d * d;
  return slidingWindowFlops() + tokens * perToken + tokens / w * perBlock;
}

void BM_RecurBlockRecurrent(benchmark::State &st) {
  runLayer(st, recur_BlockRecurrentSkipFixed_layer(), {1, shapes().brtT},
           blockRecurrentFlops(), false);
}
void BM_RecurSlidingWindow(benchmark::State &st) {
  runLayer(st, recur_SlidingWindow_layer(), {1, shapes().brtT},
           slidingWindowFlops(), false);
}

void registerAll() {
  auto add = [](const char *name, void (*fn)(benchmark::State &)) {
    benchmark::internal::Benchmark *b = benchmark::RegisterBenchmark(name, fn)
                                            ->Unit(benchmark::kMillisecond)
                                            ->UseRealTime();
    if (gTiny)
      b->Iterations(1);
    else
      b->MinTime(1.0);
  };
  add("copy/stream", BM_Copy);
  add("sgemm/openblas", BM_Sgemm);
  add("scan_f32/recur", BM_RecurScanF32);
  add("scan_f32/plain_loop", BM_PlainScanF32);
  add("scan_f32_one/recur", BM_RecurScanF32One);
  add("scan_f32_one/plain_loop", BM_PlainScanOne);
  add("scan_c64/recur", BM_RecurScanC64);
  add("scan_c64/plain_loop", BM_PlainScanC64);
  add("gla_fwd/recur", BM_RecurGlaForward);
  add("gla_fwd/recur_chunked", BM_RecurGlaChunkedForward);
  add("gla_fwd/plain_loop", BM_PlainGla);
  add("gla_bwd/recur", BM_RecurGlaBackward);
  add("gla_bwd/recur_sweep", BM_RecurGlaBackwardSweep);
  add("window_fwd/recur", BM_RecurWindowForward);
  add("window_fwd/plain_loop", BM_PlainWindow);
  add("window_bwd/recur", BM_RecurWindowBackward);
  add("brt/block_recurrent", BM_RecurBlockRecurrent);
  add("brt/sliding_window", BM_RecurSlidingWindow);
}

} // namespace

int main(int argc, char **argv) {
  std::vector<char *> rest = {argv[0]};
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--tiny")
      gTiny = true;
    else if (arg.rfind("--threads=", 0) == 0)
      gThreads = std::max(1, std::atoi(arg.c_str() + 10));
    else if (arg.rfind("--seq=", 0) == 0) {
      gSeq = std::atoll(arg.c_str() + 6);
      if (gSeq < 1) {
        std::fprintf(stderr,
                     "recur-bench: --seq must be a positive length, "
                     "not '%s'\n",
                     arg.c_str() + 6);
        return 2;
      }
    } else if (arg == "--help" || arg == "-h") {
      std::printf(
          "usage: recur-bench [--threads=N] [--tiny] [--seq=T] [benchmark "
          "options]\n\n"
          "Times Recur's compiled layers against a streaming copy, OpenBLAS\n"
          "sgemm and plain C++ loops on the same threads (default 2);\n"
          "--tiny runs each once at a tiny size; --seq=T sets the sequence\n"
          "length of the gla and window cases (default 4096 and 8192).\n"
          "`make bench` (bench/run.py) adds the peers and prints the ratios;\n"
          "bench/plot.py plots throughput against T; see "
          "docs/performance.md.\n");
      return 0;
    } else
      rest.push_back(argv[i]);
  }
  int restArgc = int(rest.size());
  benchmark::Initialize(&restArgc, rest.data());
  if (benchmark::ReportUnrecognizedArguments(restArgc, rest.data()))
    return 1;
  registerAll();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
