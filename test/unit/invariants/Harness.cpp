//===- Harness.cpp - running compiled layers in the invariant tests -------===//
//
// Part of the Recur project.
//
//===----------------------------------------------------------------------===//

#include "Harness.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

namespace recur::invariants {

//===----------------------------------------------------------------------===//
// Tensors
//===----------------------------------------------------------------------===//

Tensor::Tensor(recur_dtype dtype, std::vector<int64_t> shape)
    : dtype(dtype), shape(std::move(shape)) {
  bytes.assign(static_cast<size_t>(numel()) * recur_dtype_size(dtype), 0);
}

int64_t Tensor::numel() const {
  int64_t n = 1;
  for (int64_t s : shape)
    n *= s;
  return n;
}

int Tensor::components() const {
  return dtype == RECUR_C64 || dtype == RECUR_C128 ? 2 : 1;
}

int64_t Tensor::offset(std::initializer_list<int64_t> index) const {
  EXPECT_EQ(index.size(), shape.size()) << "wrong number of indices";
  int64_t flat = 0;
  size_t d = 0;
  for (int64_t i : index) {
    EXPECT_TRUE(i >= 0 && i < shape[d]) << "index " << i << " of axis " << d;
    flat = flat * shape[d++] + i;
  }
  return flat;
}

double Tensor::at(int64_t i, int c) const {
  const unsigned char *p = bytes.data();
  switch (dtype) {
  case RECUR_F32:
    return reinterpret_cast<const float *>(p)[i];
  case RECUR_F64:
    return reinterpret_cast<const double *>(p)[i];
  case RECUR_C64:
    return reinterpret_cast<const float *>(p)[2 * i + c];
  case RECUR_C128:
    return reinterpret_cast<const double *>(p)[2 * i + c];
  case RECUR_BOOL:
    return p[i];
  case RECUR_I32:
    return reinterpret_cast<const int32_t *>(p)[i];
  default:
    ADD_FAILURE() << "dtype " << recur_dtype_name(dtype) << " is not handled";
    return 0.0;
  }
}

void Tensor::set(int64_t i, double value, int c) {
  unsigned char *p = bytes.data();
  switch (dtype) {
  case RECUR_F32:
    reinterpret_cast<float *>(p)[i] = static_cast<float>(value);
    return;
  case RECUR_F64:
    reinterpret_cast<double *>(p)[i] = value;
    return;
  case RECUR_C64:
    reinterpret_cast<float *>(p)[2 * i + c] = static_cast<float>(value);
    return;
  case RECUR_C128:
    reinterpret_cast<double *>(p)[2 * i + c] = value;
    return;
  case RECUR_BOOL:
    p[i] = value != 0.0;
    return;
  case RECUR_I32:
    reinterpret_cast<int32_t *>(p)[i] = static_cast<int32_t>(value);
    return;
  default:
    ADD_FAILURE() << "dtype " << recur_dtype_name(dtype) << " is not handled";
  }
}

void Tensor::fill(double value) {
  for (int64_t i = 0; i < numel(); ++i)
    for (int c = 0; c < components(); ++c)
      set(i, c == 0 ? value : 0.0, c);
}

bool Tensor::hasNonFinite() const {
  for (int64_t i = 0; i < numel(); ++i)
    for (int c = 0; c < components(); ++c)
      if (!std::isfinite(at(i, c)))
        return true;
  return false;
}

recur_tensor Tensor::view() {
  return recur_tensor_contiguous(
      bytes.data(), dtype, static_cast<int32_t>(shape.size()), shape.data());
}

recur_tensor Tensor::view() const { return const_cast<Tensor *>(this)->view(); }

namespace {

/// Copies between a contiguous tensor and a strided view of the same shape
/// and dtype (`toView`: into the view).
void copyStrided(Tensor &t, const recur_tensor &v, bool toView) {
  size_t elem = recur_dtype_size(t.dtype);
  int64_t idx[RECUR_MAX_RANK] = {};
  for (int64_t e = 0, n = t.numel(); e < n; ++e) {
    int64_t off = 0;
    for (int32_t d = 0; d < v.rank; ++d)
      off += idx[d] * v.strides[d];
    unsigned char *strided = static_cast<unsigned char *>(v.data) + off * elem;
    unsigned char *flat = t.bytes.data() + e * elem;
    if (toView)
      std::memcpy(strided, flat, elem);
    else
      std::memcpy(flat, strided, elem);
    for (int32_t d = v.rank - 1; d >= 0; --d) {
      if (++idx[d] < v.shape[d])
        break;
      idx[d] = 0;
    }
  }
}

void checkShapes(const Tensor &a, const Tensor &b) {
  EXPECT_EQ(a.shape, b.shape);
  EXPECT_EQ(a.dtype, b.dtype);
}

std::vector<recur_tensor> views(const std::vector<Tensor> &ts) {
  std::vector<recur_tensor> v;
  for (const Tensor &t : ts)
    v.push_back(t.view());
  return v;
}

/// The runtime's message when `status` is an error.
::testing::AssertionResult ok(recur_status status, const char *call) {
  if (status == RECUR_OK)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << call << ": " << recur_status_name(status) << ": "
         << recur_last_error();
}

struct StateDeleter {
  void operator()(recur_state *s) const { recur_state_destroy(s); }
};
using StatePtr = std::unique_ptr<recur_state, StateDeleter>;

} // namespace

double maxAbs(const Tensor &a) {
  double m = 0.0;
  for (int64_t i = 0; i < a.numel(); ++i)
    for (int c = 0; c < a.components(); ++c)
      m = std::max(m, std::fabs(a.at(i, c)));
  return m;
}

double maxAbsDiff(const Tensor &a, const Tensor &b) {
  checkShapes(a, b);
  double m = 0.0;
  for (int64_t i = 0; i < std::min(a.numel(), b.numel()); ++i)
    for (int c = 0; c < a.components(); ++c) {
      double d = std::fabs(a.at(i, c) - b.at(i, c));
      if (std::isnan(d))
        return d;
      m = std::max(m, d);
    }
  return m;
}

double relErr(const Tensor &a, const Tensor &b) {
  double diff = maxAbsDiff(a, b), scale = maxAbs(b);
  if (std::isnan(diff))
    return diff;
  return diff == 0.0 ? 0.0 : diff / scale;
}

bool sameBits(const Tensor &a, const Tensor &b) {
  return a.dtype == b.dtype && a.shape == b.shape && a.bytes == b.bytes;
}

void fillNormal(Tensor &t, Rng &rng, double scale) {
  for (int64_t i = 0; i < t.numel(); ++i)
    for (int c = 0; c < t.components(); ++c)
      t.set(i, scale * rng.normal(), c);
}

Tensor slice(const Tensor &t, int axis, int64_t start, int64_t count) {
  std::vector<int64_t> shape = t.shape;
  shape[axis] = count;
  Tensor out(t.dtype, shape);
  int64_t outer = 1, inner = static_cast<int64_t>(recur_dtype_size(t.dtype));
  for (int d = 0; d < axis; ++d)
    outer *= t.shape[d];
  for (size_t d = axis + 1; d < t.shape.size(); ++d)
    inner *= t.shape[d];
  if (count == 0) // nothing to copy (and memcpy takes no null pointer)
    return out;
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(out.bytes.data() + o * count * inner,
                t.bytes.data() + (o * t.shape[axis] + start) * inner,
                count * inner);
  return out;
}

Tensor concat(const std::vector<Tensor> &parts, int axis) {
  std::vector<int64_t> shape = parts.front().shape;
  shape[axis] = 0;
  for (const Tensor &p : parts)
    shape[axis] += p.shape[axis];
  Tensor out(parts.front().dtype, shape);
  int64_t outer = 1, inner = static_cast<int64_t>(recur_dtype_size(out.dtype));
  for (int d = 0; d < axis; ++d)
    outer *= shape[d];
  for (size_t d = axis + 1; d < shape.size(); ++d)
    inner *= shape[d];
  for (int64_t o = 0; o < outer; ++o) {
    int64_t at = 0;
    for (const Tensor &p : parts) {
      if (p.shape[axis] == 0 || p.bytes.empty())
        continue;
      std::memcpy(out.bytes.data() + (o * shape[axis] + at) * inner,
                  p.bytes.data() + o * p.shape[axis] * inner,
                  p.shape[axis] * inner);
      at += p.shape[axis];
    }
  }
  return out;
}

//===----------------------------------------------------------------------===//
// Layers
//===----------------------------------------------------------------------===//

Layer::Layer(const recur_layer_desc *desc) : desc_(desc) {}

int Layer::find(recur_role role, const std::string &name) const {
  for (int32_t i = 0; i < desc_->num_args; ++i)
    if (desc_->args[i].role == role && name == desc_->args[i].name)
      return desc_->args[i].index;
  for (int32_t i = 0; i < desc_->num_results; ++i)
    if (desc_->results[i].role == role && name == desc_->results[i].name)
      return desc_->results[i].index;
  ADD_FAILURE() << desc_->name << " has no tensor '" << name << "' of role "
                << role;
  return -1;
}

int Layer::input(const std::string &name) const {
  return find(RECUR_ROLE_INPUT, name);
}
int Layer::param(const std::string &name) const {
  return find(RECUR_ROLE_PARAM, name);
}
int Layer::state(const std::string &name) const {
  return find(RECUR_ROLE_STATE, name);
}
int Layer::output(const std::string &name) const {
  return find(RECUR_ROLE_OUTPUT, name);
}

Tensor Layer::make(const recur_arg_desc &arg, const Dims &dims) const {
  std::vector<int64_t> shape;
  for (int32_t d = 0; d < arg.rank; ++d) {
    int64_t s = arg.shape[d];
    if (s < 0) {
      std::string name = desc_->runtime_dim_names[-1 - s];
      auto it = dims.find(name);
      if (it == dims.end()) {
        ADD_FAILURE() << "no size given for runtime dimension " << name;
        s = 1;
      } else {
        s = it->second;
      }
    }
    shape.push_back(s);
  }
  return Tensor(arg.dtype, shape);
}

namespace {
template <typename Fn>
void forRole(const recur_layer_desc *desc, recur_role role, Fn fn) {
  bool results = role == RECUR_ROLE_OUTPUT || role == RECUR_ROLE_NEXT_STATE;
  const recur_arg_desc *args = results ? desc->results : desc->args;
  int32_t n = results ? desc->num_results : desc->num_args;
  for (int32_t i = 0; i < n; ++i)
    if (args[i].role == role)
      fn(args[i]);
}
} // namespace

std::vector<Tensor> Layer::inputs(const Dims &dims) const {
  std::vector<Tensor> ts;
  forRole(desc_, RECUR_ROLE_INPUT,
          [&](const recur_arg_desc &a) { ts.push_back(make(a, dims)); });
  return ts;
}

std::vector<Tensor> Layer::states(const Dims &dims) const {
  std::vector<Tensor> ts;
  forRole(desc_, RECUR_ROLE_STATE,
          [&](const recur_arg_desc &a) { ts.push_back(make(a, dims)); });
  return ts;
}

std::vector<Tensor> Layer::outputs(const Dims &dims) const {
  std::vector<Tensor> ts;
  forRole(desc_, RECUR_ROLE_OUTPUT,
          [&](const recur_arg_desc &a) { ts.push_back(make(a, dims)); });
  return ts;
}

std::vector<Tensor> Layer::randomInputs(const Dims &dims, Rng &rng,
                                        double scale) const {
  std::vector<Tensor> ts = inputs(dims);
  for (Tensor &t : ts)
    if (t.dtype != RECUR_BOOL && t.dtype != RECUR_I32)
      fillNormal(t, rng, scale);
  return ts;
}

std::vector<Tensor> Layer::params(Rng &rng, double minStd) const {
  std::vector<Tensor> ts;
  forRole(desc_, RECUR_ROLE_PARAM, [&](const recur_arg_desc &a) {
    Tensor t = make(a, {});
    train::InitRule rule = train::parseInitRule(a.init_rule, a.name);
    if ((rule.kind == train::InitRule::Normal ||
         rule.kind == train::InitRule::TruncNormal) &&
        rule.a < minStd)
      rule.a = minStd;
    std::vector<float> v(static_cast<size_t>(t.numel() * t.components()));
    train::initialize(rule, v.data(), static_cast<int64_t>(v.size()), rng);
    for (int64_t i = 0; i < t.numel(); ++i)
      for (int c = 0; c < t.components(); ++c)
        t.set(i, v[i * t.components() + c], c);
    ts.push_back(std::move(t));
  });
  return ts;
}

Dims Layer::dimsOf(const std::vector<Tensor> &inputs) const {
  Dims dims;
  forRole(desc_, RECUR_ROLE_INPUT, [&](const recur_arg_desc &a) {
    for (int32_t d = 0; d < a.rank; ++d)
      if (a.shape[d] < 0)
        dims[desc_->runtime_dim_names[-1 - a.shape[d]]] =
            inputs[a.index].shape[d];
  });
  return dims;
}

namespace {
int64_t batchOf(const recur_layer_desc *desc, const Dims &dims) {
  if (desc->batch_dim < 0)
    return 1;
  auto it = dims.find(desc->runtime_dim_names[desc->batch_dim]);
  return it == dims.end() ? 1 : it->second;
}

/// A recur_state for `batch` rows holding `states` (the init rules when
/// empty).
StatePtr makeState(const recur_layer_desc *desc, int64_t batch,
                   const std::vector<Tensor> &params,
                   const std::vector<Tensor> &states) {
  std::vector<recur_tensor> pv = views(params);
  recur_state *raw = nullptr;
  EXPECT_TRUE(ok(recur_state_create(desc, batch, pv.data(), &raw),
                 "recur_state_create"));
  StatePtr state(raw);
  for (size_t i = 0; raw && i < states.size(); ++i) {
    recur_tensor v;
    EXPECT_TRUE(ok(recur_state_view(raw, static_cast<int32_t>(i), &v),
                   "recur_state_view"));
    Tensor copy = states[i];
    EXPECT_EQ(std::vector<int64_t>(v.shape, v.shape + v.rank), copy.shape)
        << "state " << i;
    copyStrided(copy, v, /*toView=*/true);
  }
  return state;
}

std::vector<Tensor> readStates(const recur_state *state, int32_t count) {
  std::vector<Tensor> ts;
  for (int32_t i = 0; state && i < count; ++i) {
    recur_tensor v;
    EXPECT_TRUE(ok(recur_state_view(state, i, &v), "recur_state_view"));
    Tensor t(v.dtype, std::vector<int64_t>(v.shape, v.shape + v.rank));
    copyStrided(t, v, /*toView=*/false);
    ts.push_back(std::move(t));
  }
  return ts;
}

/// The axis of `arg` that is runtime dimension `dim`, or -1.
int axisOf(const recur_arg_desc &arg, int32_t dim) {
  for (int32_t d = 0; d < arg.rank; ++d)
    if (arg.shape[d] == -1 - dim)
      return d;
  return -1;
}
} // namespace

std::vector<Tensor> Layer::initialStates(const std::vector<Tensor> &params,
                                         int64_t batch) const {
  StatePtr state = makeState(desc_, batch, params, {});
  return readStates(state.get(), desc_->num_states);
}

Result Layer::call(const std::vector<Tensor> &inputs,
                   const std::vector<Tensor> &params,
                   const std::vector<Tensor> &states, bool step) const {
  Dims dims = dimsOf(inputs);
  Result run;
  run.outputs = outputs(dims);
  StatePtr state = makeState(desc_, batchOf(desc_, dims), params, states);
  std::vector<recur_tensor> iv = views(inputs), pv = views(params),
                            ov = views(run.outputs);
  recur_status status =
      step ? recur_step(desc_, iv.data(), pv.data(), state.get(), ov.data())
           : recur_forward(desc_, iv.data(), pv.data(), state.get(), ov.data());
  EXPECT_TRUE(ok(status, step ? "recur_step" : "recur_forward"));
  run.states = readStates(state.get(), desc_->num_states);
  return run;
}

Result Layer::forward(const std::vector<Tensor> &inputs,
                      const std::vector<Tensor> &params,
                      const std::vector<Tensor> &states) const {
  return call(inputs, params, states, /*step=*/false);
}

Result Layer::stepwise(const std::vector<Tensor> &inputs,
                       const std::vector<Tensor> &params,
                       const std::vector<Tensor> &states,
                       const std::vector<int> &firstOnly) const {
  EXPECT_GE(desc_->time_dim, 0) << desc_->name << " has no time dimension";
  if (desc_->time_dim < 0)
    return {};
  int64_t length = dimsOf(inputs)[desc_->runtime_dim_names[desc_->time_dim]];
  std::vector<int> inAxes, outAxes;
  forRole(desc_, RECUR_ROLE_INPUT, [&](const recur_arg_desc &a) {
    inAxes.push_back(axisOf(a, desc_->time_dim));
  });
  forRole(desc_, RECUR_ROLE_OUTPUT, [&](const recur_arg_desc &a) {
    outAxes.push_back(axisOf(a, desc_->time_dim));
  });
  std::vector<Tensor> carried = states;
  std::vector<std::vector<Tensor>> pieces(outAxes.size());
  Result last;
  for (int64_t t = 0; t < length; t += desc_->step_length) {
    std::vector<Tensor> in;
    for (size_t i = 0; i < inputs.size(); ++i)
      in.push_back(inAxes[i] < 0
                       ? inputs[i]
                       : slice(inputs[i], inAxes[i], t, desc_->step_length));
    if (t > 0)
      for (int i : firstOnly)
        in[i].fill(0.0);
    last = call(in, params, carried, /*step=*/true);
    carried = last.states;
    for (size_t o = 0; o < outAxes.size(); ++o)
      pieces[o].push_back(last.outputs[o]);
  }
  Result run;
  run.states = carried;
  for (size_t o = 0; o < outAxes.size(); ++o)
    run.outputs.push_back(outAxes[o] < 0 ? pieces[o].back()
                                         : concat(pieces[o], outAxes[o]));
  return run;
}

Grads Layer::backward(const std::vector<Tensor> &inputs,
                      const std::vector<Tensor> &params,
                      const std::vector<Tensor> &states,
                      const std::vector<Tensor> &dOutputs,
                      const std::vector<Tensor> &dStates) const {
  Dims dims = dimsOf(inputs);
  int64_t batch = batchOf(desc_, dims);
  Grads g;
  g.inputs = inputs;
  for (Tensor &t : g.inputs)
    t.fill(0.0);
  g.params = params;
  for (Tensor &t : g.params)
    t.fill(0.0);
  StatePtr state = makeState(desc_, batch, params, states);
  g.states = readStates(state.get(), desc_->num_states);
  for (Tensor &t : g.states)
    t.fill(0.0);
  std::vector<recur_tensor> iv = views(inputs), pv = views(params),
                            dov = views(dOutputs), dsv = views(dStates),
                            giv = views(g.inputs), gpv = views(g.params),
                            gsv = views(g.states);
  // A bool or i32 input has no gradient.
  for (size_t i = 0; i < giv.size(); ++i)
    if (inputs[i].dtype == RECUR_BOOL || inputs[i].dtype == RECUR_I32)
      giv[i].data = nullptr;
  EXPECT_TRUE(
      ok(recur_backward(desc_, iv.data(), pv.data(), state.get(), dov.data(),
                        dStates.empty() ? nullptr : dsv.data(), giv.data(),
                        gpv.data(), gsv.data()),
         "recur_backward"));
  return g;
}

} // namespace recur::invariants
