//===- Harness.h - running compiled layers in the invariant tests -*- C++
//-*-===//
//
// Part of the Recur project.
//
// The invariant tests (docs/invariants.md) check each line under "What
// tests must show" in ../shared/reference/*.md on kernels recurc compiled at
// build time (InvariantTests.cmake), called through librecur_rt's C API as a
// user's program calls them. This header owns their tensors, draws their
// inputs and params, and runs forward and backward with given initial
// states, returning the outputs and final states.
//
// Tensors are row-major and hold any dtype; values are read and written as
// double (a complex element as two components), so a test is written once
// for f32 and f64 layers.
//
//===----------------------------------------------------------------------===//

#ifndef RECUR_TEST_INVARIANTS_HARNESS_H
#define RECUR_TEST_INVARIANTS_HARNESS_H

#include "lm.h"
#include "recur/Runtime/recur_rt.h"

#include <cstdint>
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

namespace recur::invariants {

/// A row-major tensor owned here.
struct Tensor {
  recur_dtype dtype = RECUR_F64;
  std::vector<int64_t> shape;
  std::vector<unsigned char> bytes;

  Tensor() = default;
  Tensor(recur_dtype dtype, std::vector<int64_t> shape);

  int64_t numel() const;
  /// 2 for a complex dtype, else 1.
  int components() const;
  bool isComplex() const { return components() == 2; }
  /// The flat index of a multi-index (as many indices as the rank).
  int64_t offset(std::initializer_list<int64_t> index) const;
  /// Component `c` (0: real, 1: imaginary) of element `i`.
  double at(int64_t i, int c = 0) const;
  void set(int64_t i, double value, int c = 0);
  /// Element `index` (real dtypes, or the real part).
  double operator()(std::initializer_list<int64_t> index) const {
    return at(offset(index));
  }
  void fill(double value);
  /// Whether any component is NaN or infinite.
  bool hasNonFinite() const;
  recur_tensor view();
  recur_tensor view() const;
};

/// max |a - b| / max |b| over all components (the normwise relative error;
/// 0 when both are zero). The shapes must match.
double relErr(const Tensor &a, const Tensor &b);
/// max |a - b| over all components.
double maxAbsDiff(const Tensor &a, const Tensor &b);
/// max |a| over all components.
double maxAbs(const Tensor &a);
/// Whether a and b hold the same bits.
bool sameBits(const Tensor &a, const Tensor &b);

/// The training library's generator (the same numbers everywhere).
using Rng = recur::train::Rng;

/// Fills every component of `t` with normal(0, scale) draws.
void fillNormal(Tensor &t, Rng &rng, double scale = 1.0);

/// The runtime dimensions of a call, by name ("B", "T").
using Dims = std::map<std::string, int64_t>;

/// What a forward call returns.
struct Result {
  std::vector<Tensor> outputs;
  std::vector<Tensor> states; ///< the final states, per row of the batch
};

/// What a backward call returns.
struct Grads {
  std::vector<Tensor> inputs, params, states;
};

/// A compiled layer: its descriptor and tensors made to its shapes.
class Layer {
public:
  explicit Layer(const recur_layer_desc *desc);

  const recur_layer_desc *desc() const { return desc_; }

  /// Indices by name among the layer's inputs, params, states and outputs
  /// (a test fails and -1 is returned for an unknown name).
  int input(const std::string &name) const;
  int param(const std::string &name) const;
  int state(const std::string &name) const;
  int output(const std::string &name) const;

  /// Zero tensors shaped like the layer's inputs, states or outputs with
  /// runtime dimensions `dims` (states: with the batch dimension).
  std::vector<Tensor> inputs(const Dims &dims) const;
  std::vector<Tensor> states(const Dims &dims) const;
  std::vector<Tensor> outputs(const Dims &dims) const;
  /// Inputs with normal(0, scale) values (bool masks stay false, i32 zero).
  std::vector<Tensor> randomInputs(const Dims &dims, Rng &rng,
                                   double scale = 1.0) const;
  /// Params drawn by their init rules, scaled up where the rule would make
  /// a test weak: a normal(std) with std below `minStd` draws with minStd
  /// (so attention is not near uniform and gates not near 0.5); zeros and
  /// ones are kept.
  std::vector<Tensor> params(Rng &rng, double minStd = 0.0) const;

  /// The states a fresh recur_state holds for `batch` rows (the init rules).
  std::vector<Tensor> initialStates(const std::vector<Tensor> &params,
                                    int64_t batch) const;

  /// recur_forward from `states` (or the init rules when empty); the test
  /// fails with the runtime's message on an error.
  Result forward(const std::vector<Tensor> &inputs,
                 const std::vector<Tensor> &params,
                 const std::vector<Tensor> &states = {}) const;
  /// recur_step calls of step_length positions each over the time
  /// dimension, the state carried, outputs concatenated. The inputs listed
  /// in `firstOnly` (per-row start flags) are zero after the first call.
  Result stepwise(const std::vector<Tensor> &inputs,
                  const std::vector<Tensor> &params,
                  const std::vector<Tensor> &states = {},
                  const std::vector<int> &firstOnly = {}) const;
  /// recur_backward of the forward from `states` with output cotangents
  /// `dOutputs` and final-state cotangents `dStates` (empty: zero).
  Grads backward(const std::vector<Tensor> &inputs,
                 const std::vector<Tensor> &params,
                 const std::vector<Tensor> &states,
                 const std::vector<Tensor> &dOutputs,
                 const std::vector<Tensor> &dStates = {}) const;

  /// The runtime dimensions `inputs` imply.
  Dims dimsOf(const std::vector<Tensor> &inputs) const;

private:
  int find(recur_role role, const std::string &name) const;
  Tensor make(const recur_arg_desc &arg, const Dims &dims) const;
  Result call(const std::vector<Tensor> &inputs,
              const std::vector<Tensor> &params,
              const std::vector<Tensor> &states, bool step) const;
  const recur_layer_desc *desc_;
};

/// Positions [start, start + count) of axis `axis` of `t`.
Tensor slice(const Tensor &t, int axis, int64_t start, int64_t count);
/// `parts` joined along `axis`.
Tensor concat(const std::vector<Tensor> &parts, int axis);

} // namespace recur::invariants

#endif // RECUR_TEST_INVARIANTS_HARNESS_H
