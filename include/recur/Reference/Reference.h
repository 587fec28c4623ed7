//===- Reference.h - float64 oracle of the recur ops ------------*- C++ -*-===//
//
// Part of the Recur project.
//
// Plain C++17, float64 implementations of every op of the `recur` dialect,
// written from the equations in the op descriptions (RecurOps.td) and the
// papers' reference notes, never from the compiler's lowering. Integration
// tests compare compiled kernels against these functions, so everything here
// is a straightforward loop over the equations; there is no dependency on
// LLVM or MLIR. Bad shapes and attributes throw std::invalid_argument.
//
//===----------------------------------------------------------------------===//

#ifndef RECUR_REFERENCE_REFERENCE_H
#define RECUR_REFERENCE_REFERENCE_H

#include <complex>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace recur {
namespace reference {

using Complex = std::complex<double>;

//===----------------------------------------------------------------------===//
// Dense tensors
//===----------------------------------------------------------------------===//

/// Renders a shape the way tensor types spell it: `2x3x4`, or `scalar`.
std::string shapeString(const std::vector<int64_t> &shape);

/// The number of elements of `shape`; throws on a negative dimension.
int64_t numElements(const std::vector<int64_t> &shape);

/// A dense row-major tensor. `T` is double, Complex, int32_t (indices) or bool
/// (masks). A rank-0 tensor holds one element.
template <typename T> struct Tensor {
  using Reference = typename std::vector<T>::reference;
  using ConstReference = typename std::vector<T>::const_reference;

  std::vector<int64_t> shape;
  std::vector<T> data;

  /// A scalar holding T().
  Tensor() : data(1, T()) {}
  /// A tensor of `shape` filled with `fill`.
  explicit Tensor(std::vector<int64_t> shape, T fill = T())
      : shape(std::move(shape)) {
    data.assign(static_cast<size_t>(reference::numElements(this->shape)), fill);
  }
  /// A tensor of `shape` holding `data` in row-major order.
  Tensor(std::vector<int64_t> shape, std::vector<T> data)
      : shape(std::move(shape)), data(std::move(data)) {
    int64_t n = reference::numElements(this->shape);
    if (n != static_cast<int64_t>(this->data.size()))
      throw std::invalid_argument("tensor of shape " +
                                  shapeString(this->shape) + " needs " +
                                  std::to_string(n) + " elements, got " +
                                  std::to_string(this->data.size()));
  }

  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  int64_t numElements() const { return static_cast<int64_t>(data.size()); }

  /// Dimension `i`; a negative `i` counts from the back (-1 is the last).
  int64_t dim(int64_t i) const {
    int64_t r = rank();
    if (i < -r || i >= r)
      throw std::invalid_argument("dimension " + std::to_string(i) +
                                  " is out of range for shape " +
                                  shapeString(shape));
    return shape[static_cast<size_t>(i < 0 ? i + r : i)];
  }

  /// The row-major offset of a full multi-index (bounds checked).
  int64_t offset(const std::vector<int64_t> &index) const {
    if (static_cast<int64_t>(index.size()) != rank())
      throw std::invalid_argument("index of rank " +
                                  std::to_string(index.size()) +
                                  " into shape " + shapeString(shape));
    int64_t flat = 0;
    for (size_t d = 0; d < shape.size(); ++d) {
      if (index[d] < 0 || index[d] >= shape[d])
        throw std::invalid_argument("index " + std::to_string(index[d]) +
                                    " is out of range in dimension " +
                                    std::to_string(d) + " of shape " +
                                    shapeString(shape));
      flat = flat * shape[d] + index[d];
    }
    return flat;
  }

  Reference at(const std::vector<int64_t> &index) {
    return data[static_cast<size_t>(offset(index))];
  }
  ConstReference at(const std::vector<int64_t> &index) const {
    return data[static_cast<size_t>(offset(index))];
  }
  template <typename... I> Reference operator()(I... index) {
    return at({static_cast<int64_t>(index)...});
  }
  template <typename... I> ConstReference operator()(I... index) const {
    return at({static_cast<int64_t>(index)...});
  }
};

/// `length` positions of `t` along `axis` starting at `start`.
template <typename T>
Tensor<T> slice(const Tensor<T> &t, int64_t axis, int64_t start,
                int64_t length);

/// Concatenation along `axis`; the other dimensions must agree.
template <typename T>
Tensor<T> concat(const std::vector<Tensor<T>> &parts, int64_t axis);

Tensor<Complex> toComplex(const Tensor<double> &t);
Tensor<double> realPart(const Tensor<Complex> &t);

//===----------------------------------------------------------------------===//
// Scans (Scan.cpp)
//===----------------------------------------------------------------------===//

/// Every state and the final state of a scan.
template <typename T> struct ScanResult {
  Tensor<T> h;
  Tensor<T> last;
};

/// recur.linear_scan: `h_t = a_t * h_{t-1} + b_t` along `axis` (with
/// `reverse`, `h_t = a_t * h_{t+1} + b_t` from the end), `h_{-1}` = `init` or
/// zero. `a` covers a leading prefix of `b`'s dimensions including `axis` and
/// is broadcast over the rest. `last` is `h` at the last step taken (`h_0`
/// with `reverse`); with no steps it is the initial state.
ScanResult<double> linearScan(const Tensor<double> &a, const Tensor<double> &b,
                              const std::optional<Tensor<double>> &init,
                              int64_t axis, bool reverse = false);
ScanResult<Complex> linearScan(const Tensor<Complex> &a,
                               const Tensor<Complex> &b,
                               const std::optional<Tensor<Complex>> &init,
                               int64_t axis, bool reverse = false);
/// A real decay of a complex state.
ScanResult<Complex> linearScan(const Tensor<double> &a,
                               const Tensor<Complex> &b,
                               const std::optional<Tensor<Complex>> &init,
                               int64_t axis, bool reverse = false);

/// The combine operator of recur.scan: the N accumulated elements first, then
/// the N new ones; returns the N combined elements.
template <typename T>
using CombineFn = std::function<std::vector<T>(const std::vector<T> &acc,
                                               const std::vector<T> &next)>;

/// recur.scan: inclusive scan of N same-shaped tensors along `axis`:
/// `c_0 = x_0` (or `init (.) x_0`), `c_t = c_{t-1} (.) x_t`; with `reverse`,
/// `c_{T-1} = x_{T-1}` (or `init (.) x_{T-1}`), `c_t = c_{t+1} (.) x_t`.
/// `inits` is empty or holds one tensor per input of the input shape without
/// `axis`. The op's `associative` and `identity` attributes do not change the
/// result and have no parameter here. T is double or Complex.
template <typename T>
std::vector<Tensor<T>> scan(const std::vector<Tensor<T>> &inputs,
                            const std::vector<Tensor<T>> &inits, int64_t axis,
                            bool reverse, const CombineFn<T> &combine);

//===----------------------------------------------------------------------===//
// Gated linear attention (GatedLinearAttention.cpp)
//===----------------------------------------------------------------------===//

/// Outputs `y` `[..., T, dv]` and the final state `[..., dk, dv]`.
template <typename S> struct GlaResult {
  Tensor<double> y;
  Tensor<S> state;
};

/// recur.gated_linear_attention, recurrent form (GateLoop Eq. 7-8):
///   S_t[i, j] = a_t[i] * S_{t-1}[i, j] + k_t[i] * v_t[j]
///   y_t[j]    = Re( sum_i q_t[i] * S_t[i, j] )
/// `q`, `k`, `a` are `[..., T, dk]`, `v` `[..., T, dv]`, `init` `[..., dk,
/// dv]`.
GlaResult<double>
gatedLinearAttention(const Tensor<double> &q, const Tensor<double> &k,
                     const Tensor<double> &v, const Tensor<double> &a,
                     const std::optional<Tensor<double>> &init);
GlaResult<Complex>
gatedLinearAttention(const Tensor<double> &q, const Tensor<double> &k,
                     const Tensor<double> &v, const Tensor<Complex> &a,
                     const std::optional<Tensor<Complex>> &init);

/// The chunked form, a second, independent algorithm: inside each chunk of
/// `chunk` steps the decay from step m to step n is
/// exp(sum_{j=m+1..n} (log|a_j| + i arg a_j)), taken as a difference of
/// log-space prefix sums relative to the chunk start (a zero decay is counted
/// separately, so resets give exact zeros, never NaN); between chunks the
/// state is carried by the chunk's total decay. `chunk` >= 1; it need not
/// divide T and may exceed it.
GlaResult<double>
gatedLinearAttentionChunked(const Tensor<double> &q, const Tensor<double> &k,
                            const Tensor<double> &v, const Tensor<double> &a,
                            const std::optional<Tensor<double>> &init,
                            int64_t chunk);
GlaResult<Complex>
gatedLinearAttentionChunked(const Tensor<double> &q, const Tensor<double> &k,
                            const Tensor<double> &v, const Tensor<Complex> &a,
                            const std::optional<Tensor<Complex>> &init,
                            int64_t chunk);

/// GateLoop's surrogate-attention mode (Eq. 17-21), O(T^2):
///   pi_n = prod_{j<=n} a_j,  Y = Re( ((Q * Pi) (K / Pi)^T  masked causal) V )
/// (plain transpose), plus the carried state's term Re((Q * Pi) S_init).
/// Only for short sequences: throws when some pi_n is 0 (a reset or an
/// underflow), where the division is undefined.
GlaResult<double>
gatedLinearAttentionSurrogate(const Tensor<double> &q, const Tensor<double> &k,
                              const Tensor<double> &v, const Tensor<double> &a,
                              const std::optional<Tensor<double>> &init);
GlaResult<Complex>
gatedLinearAttentionSurrogate(const Tensor<double> &q, const Tensor<double> &k,
                              const Tensor<double> &v, const Tensor<Complex> &a,
                              const std::optional<Tensor<Complex>> &init);

//===----------------------------------------------------------------------===//
// Gates (Gates.cpp)
//===----------------------------------------------------------------------===//

enum class GateKind { Fixed, Lstm, Update };

/// The logistic function, without overflow for large |x|.
double sigmoid(double x);

/// recur.gate. The gate operands are pre-activations that broadcast to the
/// state's shape (numpy rules, trailing aligned):
///   fixed  (b_g):          g = sigmoid(b_g), c' = c * g + z * (1 - g)
///   lstm   (i_pre, f_pre): i = sigmoid(i_pre + inputBias),
///                          f = sigmoid(f_pre + forgetBias), c' = c f + z i
///   update (p):            u = sigmoid(p), c' = u * z + (1 - u) * c
Tensor<double> gate(GateKind kind, const Tensor<double> &c,
                    const Tensor<double> &z,
                    const std::vector<Tensor<double>> &gates,
                    double inputBias = -1.0, double forgetBias = 1.0);

//===----------------------------------------------------------------------===//
// Attention (Attention.cpp)
//===----------------------------------------------------------------------===//

enum class BiasKind { None, T5, Alibi };
enum class MaskKind { None, Causal, Memory };

/// The unidirectional T5 relative-position bucket of `distance` (query
/// position minus key position; negative distances count as 0): the first
/// numBuckets/2 buckets hold distances 0 .. numBuckets/2 - 1 exactly, the
/// rest are log-spaced up to `maxDistance`, and every distance >= maxDistance
/// lands in the last bucket.
int64_t t5Bucket(int64_t distance, int64_t numBuckets = 32,
                 int64_t maxDistance = 128);

struct WindowAttentionAttrs {
  int64_t window = 1;
  /// 0: token band; B > 0: block band (window a multiple of B).
  int64_t block = 0;
  bool includeSelf = false;
  BiasKind biasKind = BiasKind::None;
  /// Defaults to 1/sqrt(d).
  std::optional<double> scale;
  int64_t numBuckets = 32;
  int64_t maxDistance = 128;
};

/// recur.window_attention. `q`, `k` `[..., T, d]`, `v` `[..., T, dv]`; the
/// optional cache `kCache` `[..., C, d]`, `vCache` `[..., C, dv]` sits at
/// positions -C .. -1. Query p sees key p' when delta = p - p' satisfies
///   block = 0: 1 <= delta <= window (include_self: 0 <= delta <= window - 1)
///   block = B: floor(p'/B) >= floor(p/B) - window/B and delta >= 1 (>= 0
///              with include_self); blocks are aligned at position 0 and
///              extend to the cache with floor division.
/// Logits: scale * q.k + bias, bias `[H, numBuckets]` (t5, indexed by the
/// bucket of delta) or `[H]` (alibi, -slope * delta), H = q.dim(-3). A query
/// that sees no key gets 0.
Tensor<double>
windowAttention(const Tensor<double> &q, const Tensor<double> &k,
                const Tensor<double> &v, const WindowAttentionAttrs &attrs,
                const std::optional<Tensor<double>> &bias = {},
                const std::optional<Tensor<double>> &kCache = {},
                const std::optional<Tensor<double>> &vCache = {});

struct AttentionAttrs {
  MaskKind mask = MaskKind::None;
  /// The number of memory slots of the memory mask.
  int64_t memorySlots = 0;
  /// Defaults to 1/sqrt(d).
  std::optional<double> scale;
};

/// recur.attention: softmax(scale * q k^T + mask) v, `q` `[..., Tq, d]`, `k`
/// `[..., Tk, d]`, `v` `[..., Tk, dv]`. Masks: none; causal (query i sees key
/// j iff j <= i + Tk - Tq); memory (Tq == Tk, the first memorySlots rows and
/// columns are slots: a slot row sees its own slot and every token, a token
/// row sees everything). `keyPadding` `[..., Tk]` (true = padding) hides keys
/// from every query. A query that sees no key gets 0.
Tensor<double> attention(const Tensor<double> &q, const Tensor<double> &k,
                         const Tensor<double> &v, const AttentionAttrs &attrs,
                         const std::optional<Tensor<bool>> &keyPadding = {});

/// Softmax attention with an explicit mask, the building block tests compare
/// structured masks against: `visible` and `bias` are `[..., Tq, Tk]` or
/// `[Tq, Tk]` (shared by every leading index). Logits scale * q.k + bias over
/// the visible keys; a query that sees no key gets 0.
Tensor<double> maskedAttention(const Tensor<double> &q, const Tensor<double> &k,
                               const Tensor<double> &v,
                               const Tensor<bool> &visible,
                               const std::optional<Tensor<double>> &bias,
                               std::optional<double> scale = {});

/// Transformer-XL scores S `[..., H, L, K]` computed directly:
///   S[i, j] = (q_i + u) . k_j + (q_i + posBias) . r_{row K-1-(M+i-j)}
/// for j <= M + i (M = K - L); the masked entries j > M + i are NaN.
/// `q` `[..., H, L, dh]`, `k` `[..., H, K, dh]`, `r` `[H, K, dh]` (row K-1-d
/// holds distance d), `u`, `posBias` `[H, dh]`.
Tensor<double> relAttentionScores(const Tensor<double> &q,
                                  const Tensor<double> &k,
                                  const Tensor<double> &r,
                                  const Tensor<double> &u,
                                  const Tensor<double> &posBias);

/// The same scores with the paper's rel_shift trick: BD = (q + posBias) r^T
/// as one L x K product, a zero column padded in front, the flat buffer read
/// as (K+1) x L, its first row dropped and the rest read back as L x K. The
/// entries j > M + i are whatever the shift leaves there (garbage).
Tensor<double> relAttentionScoresShifted(const Tensor<double> &q,
                                         const Tensor<double> &k,
                                         const Tensor<double> &r,
                                         const Tensor<double> &u,
                                         const Tensor<double> &posBias);

/// recur.rel_attention: softmax(scale * S + mask) v with the direct scores,
/// query i seeing key j iff j <= M + i; `scale` defaults to 1/sqrt(dh).
Tensor<double> relAttention(const Tensor<double> &q, const Tensor<double> &k,
                            const Tensor<double> &v, const Tensor<double> &r,
                            const Tensor<double> &u,
                            const Tensor<double> &posBias,
                            std::optional<double> scale = {});

/// recur.rel_attention with the shifted scores.
Tensor<double>
relAttentionShifted(const Tensor<double> &q, const Tensor<double> &k,
                    const Tensor<double> &v, const Tensor<double> &r,
                    const Tensor<double> &u, const Tensor<double> &posBias,
                    std::optional<double> scale = {});

/// Transformer-XL sinusoids: row p is [sin(x_p w_0) .. sin(x_p w_{d/2-1}),
/// cos(x_p w_0) .. cos(x_p w_{d/2-1})], w_m = 10000^(-2m/d). `d` is even.
Tensor<double> sinusoidEncoding(const std::vector<double> &positions,
                                int64_t d);

/// The relative encodings R `[klen, d]` in rel_attention's layout: row n
/// encodes distance klen - 1 - n.
Tensor<double> relativeSinusoids(int64_t klen, int64_t d);

//===----------------------------------------------------------------------===//
// Block recurrence and memory (Memory.cpp)
//===----------------------------------------------------------------------===//

/// What the body of a block recurrence yields for one block.
struct BlockStep {
  /// One block of each output (`blockSize` positions along the axis).
  std::vector<Tensor<double>> outputs;
  /// The next carried values (the shapes of the inits).
  std::vector<Tensor<double>> carried;
};

using BlockBody =
    std::function<BlockStep(const std::vector<Tensor<double>> &blocks,
                            const std::vector<Tensor<double>> &carried)>;

struct BlockRecurrenceResult {
  /// The outputs, concatenated along the axis.
  std::vector<Tensor<double>> outputs;
  /// The final carried values.
  std::vector<Tensor<double>> finals;
};

/// recur.block_recurrence: cuts every input into blocks of `blockSize` along
/// `axis` and runs `body` on the blocks in order, carrying state.
BlockRecurrenceResult blockRecurrence(const std::vector<Tensor<double>> &inputs,
                                      const std::vector<Tensor<double>> &inits,
                                      int64_t blockSize, int64_t axis,
                                      const BlockBody &body);

/// recur.memory_update: the last `size` positions of concat(memory, new)
/// along `axis`.
Tensor<double> memoryUpdate(const Tensor<double> &memory,
                            const Tensor<double> &newStates, int64_t axis,
                            int64_t size);

/// recur.stop_gradient: the identity in the forward pass.
template <typename T> Tensor<T> stopGradient(const Tensor<T> &x) { return x; }

//===----------------------------------------------------------------------===//
// Depth recurrence and halting (Depth.cpp)
//===----------------------------------------------------------------------===//

struct HaltingResult {
  Tensor<double> a;
  Tensor<double> s;
  Tensor<double> newMass;
  Tensor<double> newAcc;
};

/// recur.halting, one stick-breaking step per token. `pHat`, `mass` `[...]`;
/// `h`, `acc`, `sPrev` `[..., d]`. A token with mass < threshold is active:
///   a = pHat (1 - mass), s = (1 - mass) h + acc,
///   newAcc = acc + a h, newMass = mass + a;
/// a halted token gets a = 0 and exact copies s = sPrev, acc, mass.
HaltingResult halting(const Tensor<double> &pHat, const Tensor<double> &h,
                      const Tensor<double> &mass, const Tensor<double> &acc,
                      const Tensor<double> &sPrev, double threshold = 0.999);

using DepthBody = std::function<std::vector<Tensor<double>>(
    int64_t step, const std::vector<Tensor<double>> &carried)>;

/// recur.depth_loop: runs `body` for steps 0 .. maxDepth - 1 on the carried
/// values and returns the last ones.
std::vector<Tensor<double>> depthLoop(const std::vector<Tensor<double>> &inits,
                                      int64_t maxDepth, const DepthBody &body);

//===----------------------------------------------------------------------===//
// Experts (Experts.cpp)
//===----------------------------------------------------------------------===//

enum class Activation { Relu, Gelu, Silu };

/// relu(x) = max(x, 0); gelu(x) = x/2 (1 + erf(x / sqrt 2)) (exact, not the
/// tanh approximation); silu(x) = x sigmoid(x).
double activate(Activation activation, double x);

struct RouteResult {
  Tensor<double> gates;
  Tensor<int32_t> indices;
};

/// recur.route_topk: for `probs` `[..., E]`, the k largest (ties toward the
/// lower index) in descending order, and their gates g / (sum_topk g + eps).
RouteResult routeTopK(const Tensor<double> &probs, int64_t k,
                      double eps = 1e-6);

/// recur.moe: y = sum_j gates[j] act(x W_in[e_j]) W_out[e_j], e_j =
/// indices[j], for `x` `[..., d]`, `indices`, `gates` `[..., k]`, `wIn`
/// `[E, d, D]`, `wOut` `[E, D, d]`; a token whose `active` flag `[...]` is
/// false gets 0.
Tensor<double> moe(const Tensor<double> &x, const Tensor<int32_t> &indices,
                   const Tensor<double> &gates, const Tensor<double> &wIn,
                   const Tensor<double> &wOut,
                   const std::optional<Tensor<bool>> &active = {},
                   Activation activation = Activation::Relu);

} // namespace reference
} // namespace recur

#endif // RECUR_REFERENCE_REFERENCE_H
