//===- recur-case.cpp - check or time a compiled layer without LLVM -------===//
//
// Part of the Recur project.
//
// recur-case links with one layer's object (from recurc), a two-line shim
// naming its descriptor (`recur_case_layer`, below) and librecur_rt, and
// nothing of LLVM or MLIR, so that it runs on a machine where only the
// CUDA driver is installed (scripts/gpu-suite.sh builds one per case):
//
//   recur-case DIR [--repeat N]
//     Runs the case `recur-run --save-case=DIR` wrote: the layer on the
//     saved inputs, params and initial states, compared with the saved
//     float64 oracle results, then the saved stream plans or segments.
//     Prints what recur-run prints (`max_rel_err:`, `time_ms:`,
//     `stream_max_rel_err:`); for a case saved with --gradcheck, then the
//     backward on the saved output cotangents, each gradient against the
//     one recur-run checked (`backward_ms:`, `max_grad_rel_err:`); exit
//     status 1 when an error exceeds the case's tolerance or a call fails.
//   recur-case --bench NAME=VALUE,... [--backward] [--repeat N]
//     Times the kernel alone on device buffers of the given runtime sizes
//     (inputs uniform in [0, 0.7): decays below 1), and a device-to-device
//     copy moving the same bytes (`kernel_ms:`, `GBps:`, `copy_GBps:`);
//     with --backward, the backward kernel on random cotangents (the
//     forward it recomputes included).
//
//===----------------------------------------------------------------------===//

#include "../recur-run/CaseData.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

using namespace recur::casedata;

/// The layer this program was linked with.
extern "C" const recur_layer_desc *recur_case_layer(void);

namespace {

const recur_layer_desc *layer = nullptr;

int fail(const std::string &message) {
  std::fflush(stdout); // what was printed before it comes first in a log
  std::fprintf(stderr, "recur-case: error: %s\n", message.c_str());
  return EXIT_FAILURE;
}

int runtimeFail(const std::string &what) {
  return fail(what + ": " + recur_last_error());
}

/// One tensor of the case: its description, shape and typed bytes.
struct Tensor : TensorBytes<recur_arg_desc> {
  std::vector<Complex> values() const {
    std::vector<Complex> v(numel());
    for (int64_t i = 0; i < numel(); ++i)
      v[i] = loadElement(sig->dtype, bytes.data(), i);
    return v;
  }
};

Tensor makeTensor(const recur_arg_desc &desc,
                  const std::vector<int64_t> &dims) {
  Tensor t;
  t.sig = &desc;
  for (int32_t d = 0; d < desc.rank; ++d)
    t.shape.push_back(desc.shape[d] >= 0 ? desc.shape[d]
                                         : dims[-1 - desc.shape[d]]);
  t.bytes.assign(t.numel() * recur_dtype_size(desc.dtype), 0);
  return t;
}

bool readFile(const std::string &path, std::vector<unsigned char> &out) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return false;
  out.assign(std::istreambuf_iterator<char>(in), {});
  return true;
}

/// Reads `path` into `t`, which must have exactly its size.
bool readTensor(const std::string &path, Tensor &t, std::string &error) {
  std::vector<unsigned char> bytes;
  if (!readFile(path, bytes)) {
    error = "cannot read '" + path + "'";
    return false;
  }
  if (bytes.size() != t.bytes.size()) {
    error = "'" + path + "' has " + std::to_string(bytes.size()) +
            " bytes where '" + t.sig->name + "' needs " +
            std::to_string(t.bytes.size());
    return false;
  }
  t.bytes = std::move(bytes);
  return true;
}

/// Reads complex128 values from `path`.
bool readValues(const std::string &path, int64_t count,
                std::vector<Complex> &out, std::string &error) {
  std::vector<unsigned char> bytes;
  if (!readFile(path, bytes) ||
      bytes.size() != static_cast<size_t>(count) * sizeof(Complex)) {
    error =
        "cannot read " + std::to_string(count) + " values from '" + path + "'";
    return false;
  }
  out.resize(count);
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return true;
}

std::string shapeText(const Tensor &t) {
  std::string s = std::string(recur_dtype_name(t.sig->dtype)) + "[";
  for (size_t i = 0; i < t.shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(t.shape[i]);
  return s + "]";
}

//===----------------------------------------------------------------------===//
// A saved case
//===----------------------------------------------------------------------===//

struct Case {
  std::string dir;
  std::vector<int64_t> dims;
  double tolerance = 0.0;
  unsigned repeat = 1;
  std::vector<Tensor> inputs, params, states;
  std::vector<std::vector<Complex>> want; // per result
  struct Plan {
    bool step;
    std::vector<int64_t> pieces;
  };
  std::vector<Plan> plans;
  struct Segment {
    std::vector<Tensor> inputs;
    std::vector<std::vector<Complex>> want;
  };
  std::vector<Segment> segments;
  /// With --gradcheck: the output cotangents (d_output, d_state) and the
  /// gradients recur-run checked against central differences, each by its
  /// index.
  double gradTolerance = -1.0;
  std::vector<Tensor> dOutputs, dStates, gradInputs, gradParams, gradStates;

  std::string path(const std::string &file) const { return dir + "/" + file; }

  /// Whether `arg` is a per-row flag (only the batch dim and units).
  bool isRowFlag(const recur_arg_desc &arg) const {
    bool batch = false;
    for (int32_t d = 0; d < arg.rank; ++d) {
      if (arg.shape[d] < 0 && -1 - arg.shape[d] == layer->batch_dim)
        batch = true;
      else if (arg.shape[d] != 1)
        return false;
    }
    return batch;
  }
};

/// The argument descriptions of `role`, in order.
std::vector<const recur_arg_desc *> argsOf(recur_role role) {
  std::vector<const recur_arg_desc *> out;
  for (int32_t i = 0; i < layer->num_args; ++i)
    if (layer->args[i].role == role)
      out.push_back(&layer->args[i]);
  return out;
}

/// The result descriptions of `role`, in order.
std::vector<const recur_arg_desc *> resultsOf(recur_role role) {
  std::vector<const recur_arg_desc *> out;
  for (int32_t r = 0; r < layer->num_results; ++r)
    if (layer->results[r].role == role)
      out.push_back(&layer->results[r]);
  return out;
}

/// The gradient check's entries of a case: each key's tensors, in order,
/// and what describes them.
struct GradEntry {
  const char *key;
  std::vector<Tensor> Case::*list;
  std::vector<const recur_arg_desc *> descs;
};
std::vector<GradEntry> gradEntries() {
  return {{"d_output", &Case::dOutputs, resultsOf(RECUR_ROLE_OUTPUT)},
          {"d_state", &Case::dStates, resultsOf(RECUR_ROLE_NEXT_STATE)},
          {"grad_input", &Case::gradInputs, argsOf(RECUR_ROLE_INPUT)},
          {"grad_param", &Case::gradParams, argsOf(RECUR_ROLE_PARAM)},
          {"grad_state", &Case::gradStates, argsOf(RECUR_ROLE_STATE)}};
}

int loadCase(Case &c) {
  std::ifstream in(c.path("case.txt"));
  if (!in)
    return fail("cannot read '" + c.path("case.txt") + "'");
  std::string line, error;
  int lineNo = 0;
  std::map<int, Tensor> args;
  std::vector<GradEntry> grads = gradEntries();
  auto gradEntry = [&](const std::string &key) -> const GradEntry * {
    for (const GradEntry &e : grads)
      if (key == e.key)
        return &e;
    return nullptr;
  };
  auto bad = [&](const std::string &why) {
    return fail(c.path("case.txt") + ":" + std::to_string(lineNo) + ": " + why);
  };
  while (std::getline(in, line)) {
    ++lineNo;
    std::istringstream words(line);
    std::string key;
    words >> key;
    if (lineNo == 1) {
      int version = 0;
      words >> version;
      if (key != kMagic || version != kVersion)
        return bad("not a recur-case manifest of version " +
                   std::to_string(kVersion));
    } else if (key == "layer") {
      std::string name;
      words >> name;
      if (name != layer->name)
        return bad("the case is of layer '" + name +
                   "' but this program runs '" + layer->name + "'");
    } else if (key == "dims") {
      int64_t d;
      while (words >> d)
        c.dims.push_back(d);
      if (static_cast<int32_t>(c.dims.size()) != layer->num_runtime_dims)
        return bad("expected " + std::to_string(layer->num_runtime_dims) +
                   " runtime sizes");
    } else if (key == "tolerance") {
      words >> c.tolerance;
    } else if (key == "repeat") {
      words >> c.repeat;
    } else if (key == "arg") {
      int i = -1;
      std::string file;
      words >> i >> file;
      if (i < 0 || i >= layer->num_args || c.dims.empty())
        return bad("bad argument index, or no dims before it");
      Tensor t = makeTensor(layer->args[i], c.dims);
      if (!readTensor(c.path(file), t, error))
        return bad(error);
      args[i] = std::move(t);
    } else if (key == "want" || key == "segment_want") {
      int k = 0, r = -1;
      std::string file;
      if (key == "segment_want")
        words >> k;
      words >> r >> file;
      if (r < 0 || r >= layer->num_results || k < 0 || k > 64)
        return bad("bad result index");
      std::vector<Complex> v;
      if (!readValues(c.path(file),
                      makeTensor(layer->results[r], c.dims).numel(), v, error))
        return bad(error);
      auto &want =
          key == "want"
              ? c.want
              : (c.segments.resize(std::max<size_t>(c.segments.size(), k + 1)),
                 c.segments[k].want);
      want.resize(std::max<size_t>(want.size(), r + 1));
      want[r] = std::move(v);
    } else if (key == "segment_input") {
      int k = -1, j = -1;
      std::string file;
      words >> k >> j >> file;
      std::vector<const recur_arg_desc *> ins = argsOf(RECUR_ROLE_INPUT);
      if (k < 0 || k > 64 || j < 0 || j >= static_cast<int>(ins.size()))
        return bad("bad segment or input index");
      c.segments.resize(std::max<size_t>(c.segments.size(), k + 1));
      auto &segIn = c.segments[k].inputs;
      if (static_cast<int>(segIn.size()) != j)
        return bad("segment inputs out of order");
      Tensor t = makeTensor(*ins[j], c.dims);
      if (!readTensor(c.path(file), t, error))
        return bad(error);
      segIn.push_back(std::move(t));
    } else if (key == "grad_tolerance") {
      words >> c.gradTolerance;
    } else if (const GradEntry *entry = gradEntry(key)) {
      // A cotangent of an output or final state, or a gradient of an input,
      // param or initial state, in order.
      int i = -1;
      std::string file;
      words >> i >> file;
      std::vector<Tensor> &list = c.*(entry->list);
      if (i != static_cast<int>(list.size()) ||
          i >= static_cast<int>(entry->descs.size()) || c.dims.empty())
        return bad("bad or out-of-order " + key +
                   " index, or no dims before it");
      Tensor t = makeTensor(*entry->descs[i], c.dims);
      if (!readTensor(c.path(file), t, error))
        return bad(error);
      list.push_back(std::move(t));
    } else if (key == "plan") {
      std::string kind;
      words >> kind;
      Case::Plan plan{kind == "step", {}};
      int64_t n;
      while (words >> n)
        plan.pieces.push_back(n);
      c.plans.push_back(std::move(plan));
    } else if (!key.empty()) {
      return bad("unknown entry '" + key + "'");
    }
  }
  if (static_cast<int>(args.size()) != layer->num_args)
    return fail("the case gives " + std::to_string(args.size()) + " of " +
                std::to_string(layer->num_args) + " arguments");
  if (static_cast<int>(c.want.size()) != layer->num_results)
    return fail("the case gives the oracle's values of " +
                std::to_string(c.want.size()) + " of " +
                std::to_string(layer->num_results) + " results");
  if (c.gradTolerance >= 0.0 &&
      std::any_of(grads.begin(), grads.end(), [&](const GradEntry &e) {
        return (c.*(e.list)).size() != e.descs.size();
      }))
    return fail("the case's gradient check is incomplete: it needs a "
                "cotangent of every output and final state, and a gradient "
                "of every input, param and initial state");
  for (auto &[i, t] : args)
    (t.sig->role == RECUR_ROLE_INPUT   ? c.inputs
     : t.sig->role == RECUR_ROLE_PARAM ? c.params
                                       : c.states)
        .push_back(std::move(t));
  return EXIT_SUCCESS;
}

std::vector<recur_tensor> views(std::vector<Tensor> &ts) { return viewsOf(ts); }

/// A runtime state holding `values`.
recur_state *newState(Case &c, std::vector<Tensor> &values) {
  int64_t batch = layer->batch_dim >= 0 ? c.dims[layer->batch_dim] : 1;
  return stateHolding(layer, batch, views(c.params), values);
}

std::vector<Tensor> stateValues(Case &c, recur_state *state) {
  std::vector<Tensor> out;
  for (size_t i = 0; i < c.states.size(); ++i) {
    Tensor t = makeTensor(*c.states[i].sig, c.dims);
    readStateTensor(state, static_cast<int32_t>(i), t.bytes);
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<Tensor> makeOutputs(Case &c) {
  std::vector<Tensor> out;
  for (int32_t r = 0; r < layer->num_results; ++r)
    if (layer->results[r].role == RECUR_ROLE_OUTPUT)
      out.push_back(makeTensor(layer->results[r], c.dims));
  return out;
}

recur_status call(Case &c, bool step, std::vector<recur_tensor> &in,
                  recur_state *state, std::vector<recur_tensor> &out) {
  std::vector<recur_tensor> p = views(c.params);
  return (step ? recur_step : recur_forward)(layer, in.data(), p.data(), state,
                                             out.data());
}

/// Views of `ts` narrowed to positions [start, start + len) of the time
/// dimension; a per-row flag is zeroed after the first piece.
std::vector<recur_tensor> slices(Case &c, std::vector<Tensor> &ts,
                                 int64_t start, int64_t len,
                                 std::vector<Tensor> &zeros) {
  return pieceViews(
      ts, start, len, zeros,
      [&](const Tensor &t) {
        for (int32_t d = 0; d < t.sig->rank; ++d)
          if (t.sig->shape[d] < 0 && -1 - t.sig->shape[d] == layer->time_dim)
            return int(d);
        return -1;
      },
      [&](const Tensor &t) { return c.isRowFlag(*t.sig); },
      [&](const Tensor &t) { return makeTensor(*t.sig, c.dims); });
}

/// Runs the layer's backward on the case's cotangents and compares each
/// gradient with the one recur-run checked against central differences
/// (`max_grad_rel_err:` per tensor and overall). False when one exceeds the
/// case's gradient tolerance or the call fails.
bool checkGradients(Case &c) {
  std::vector<Tensor> grads[3];
  for (auto [from, to] : {std::pair{&c.gradInputs, &grads[0]},
                          std::pair{&c.gradParams, &grads[1]},
                          std::pair{&c.gradStates, &grads[2]}})
    for (const Tensor &t : *from)
      to->push_back(makeTensor(*t.sig, c.dims));
  std::vector<recur_tensor> in = views(c.inputs), p = views(c.params),
                            dOut = views(c.dOutputs), dSt = views(c.dStates),
                            gIn = views(grads[0]), gP = views(grads[1]),
                            gS = views(grads[2]);
  recur_state *state = newState(c, c.states);
  if (!state)
    return runtimeFail("recur_state_create"), false;
  auto start = std::chrono::steady_clock::now();
  recur_status s =
      recur_backward(layer, in.data(), p.data(), state, dOut.data(), dSt.data(),
                     gIn.data(), gP.data(), gS.data());
  auto stop = std::chrono::steady_clock::now();
  recur_state_destroy(state);
  if (s != RECUR_OK)
    return runtimeFail("recur_backward"), false;
  std::printf("backward_ms: %.3f\n",
              std::chrono::duration<double, std::milli>(stop - start).count());
  double worst = 0.0;
  bool ok = true;
  for (auto [want, got] : {std::pair{&c.gradInputs, &grads[0]},
                           std::pair{&c.gradParams, &grads[1]},
                           std::pair{&c.gradStates, &grads[2]}})
    for (size_t i = 0; i < want->size(); ++i) {
      const Tensor &w = (*want)[i], &g = (*got)[i];
      double err = maxRelErr(g.values(), w.values());
      std::printf("grad %s %s\nmax_grad_rel_err: %.3g\n", w.sig->name,
                  shapeText(w).c_str(), err);
      worst = std::max(worst, err);
      if (!(err <= c.gradTolerance)) {
        ok = false;
        std::fflush(stdout);
        std::fprintf(stderr,
                     "recur-case: error: %s: max_grad_rel_err %.3g exceeds "
                     "the tolerance %.3g\n",
                     w.sig->name, err, c.gradTolerance);
      }
    }
  std::printf("max_grad_rel_err: %.3g\n", worst);
  return ok;
}

int runCase(const std::string &dir, int repeatOverride) {
  Case c;
  c.dir = dir;
  if (int rc = loadCase(c))
    return rc;
  if (repeatOverride > 0)
    c.repeat = repeatOverride;
  std::printf("recur-case: layer %s from %s", layer->name, dir.c_str());
  for (int32_t d = 0; d < layer->num_runtime_dims; ++d)
    std::printf(", %s = %lld", layer->runtime_dim_names[d],
                static_cast<long long>(c.dims[d]));
  std::printf(", on the %s\n",
              layer->device == RECUR_DEVICE_CUDA ? "GPU" : "CPU");

  std::vector<Tensor> outputs = makeOutputs(c), finals;
  std::vector<recur_tensor> in = views(c.inputs), out = views(outputs);
  std::vector<double> times;
  for (unsigned r = 0; r < std::max(1u, c.repeat); ++r) {
    recur_state *state = newState(c, c.states);
    if (!state)
      return runtimeFail("recur_state_create");
    auto start = std::chrono::steady_clock::now();
    recur_status s = call(c, false, in, state, out);
    auto stop = std::chrono::steady_clock::now();
    if (s != RECUR_OK) {
      recur_state_destroy(state);
      return runtimeFail("recur_forward");
    }
    times.push_back(
        std::chrono::duration<double, std::milli>(stop - start).count());
    if (r == 0)
      finals = stateValues(c, state);
    recur_state_destroy(state);
  }

  bool ok = true;
  auto check = [&](const char *what, double err) {
    if (!(err <= c.tolerance)) {
      ok = false;
      std::fflush(stdout);
      std::fprintf(stderr,
                   "recur-case: error: %s %.3g exceeds the tolerance %.3g\n",
                   what, err, c.tolerance);
    }
  };
  size_t oi = 0, si = 0;
  for (int32_t r = 0; r < layer->num_results; ++r) {
    bool isOutput = layer->results[r].role == RECUR_ROLE_OUTPUT;
    Tensor &got = isOutput ? outputs[oi++] : finals[si++];
    double err = maxRelErr(got.values(), c.want[r]);
    std::printf("%s %s %s\nmax_rel_err: %.3g\n",
                isOutput ? "output" : "final state", layer->results[r].name,
                shapeText(got).c_str(), err);
    check("max_rel_err", err);
  }
  std::sort(times.begin(), times.end());
  std::printf("time_ms: %.3f\n", times[times.size() / 2]);

  if (!c.plans.empty() || !c.segments.empty()) {
    double worst = 0.0;
    for (const Case::Plan &plan : c.plans) {
      recur_state *state = newState(c, c.states);
      if (!state)
        return runtimeFail("recur_state_create");
      std::vector<Tensor> pieceOuts = makeOutputs(c);
      int64_t at = 0;
      for (int64_t len : plan.pieces) {
        std::vector<Tensor> zeros, none;
        zeros.reserve(c.inputs.size());
        std::vector<recur_tensor> pin = slices(c, c.inputs, at, len, zeros);
        std::vector<recur_tensor> pout = slices(c, pieceOuts, at, len, none);
        if (call(c, plan.step, pin, state, pout) != RECUR_OK) {
          recur_state_destroy(state);
          return runtimeFail(plan.step ? "recur_step" : "recur_forward");
        }
        at += len;
      }
      std::vector<Tensor> pieceFinals = stateValues(c, state);
      recur_state_destroy(state);
      for (size_t i = 0; i < outputs.size(); ++i)
        worst = std::max(worst,
                         maxRelErr(pieceOuts[i].values(), outputs[i].values()));
      for (size_t i = 0; i < finals.size(); ++i)
        worst = std::max(
            worst, maxRelErr(pieceFinals[i].values(), finals[i].values()));
    }
    if (!c.segments.empty()) {
      recur_state *state = newState(c, c.states);
      if (!state)
        return runtimeFail("recur_state_create");
      for (Case::Segment &seg : c.segments) {
        if (seg.inputs.size() != c.inputs.size() ||
            static_cast<int>(seg.want.size()) != layer->num_results) {
          recur_state_destroy(state);
          return fail("a segment of the case is incomplete");
        }
        std::vector<Tensor> segOut = makeOutputs(c);
        std::vector<recur_tensor> sin = views(seg.inputs), sout = views(segOut);
        if (call(c, true, sin, state, sout) != RECUR_OK) {
          recur_state_destroy(state);
          return runtimeFail("recur_step");
        }
        std::vector<Tensor> got = stateValues(c, state);
        size_t o = 0, s = 0;
        for (int32_t r = 0; r < layer->num_results; ++r) {
          const Tensor &t = layer->results[r].role == RECUR_ROLE_OUTPUT
                                ? segOut[o++]
                                : got[s++];
          worst = std::max(worst, maxRelErr(t.values(), seg.want[r]));
        }
      }
      recur_state_destroy(state);
    }
    std::printf("stream_max_rel_err: %.3g\n", worst);
    check("stream_max_rel_err", worst);
  }
  if (c.gradTolerance >= 0.0 && !checkGradients(c))
    ok = false;
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}

//===----------------------------------------------------------------------===//
// Timing the kernel alone
//===----------------------------------------------------------------------===//

/// Appends the packed descriptor of a contiguous memref.
void pushMemRef(std::vector<int64_t> &words, void *data,
                const std::vector<int64_t> &shape) {
  words.push_back(reinterpret_cast<intptr_t>(data));
  words.push_back(reinterpret_cast<intptr_t>(data));
  words.push_back(0);
  for (int64_t s : shape)
    words.push_back(s);
  int64_t stride = 1;
  std::vector<int64_t> strides(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= shape[d];
  }
  for (int64_t s : strides)
    words.push_back(s);
}

size_t wordCount(const recur_arg_desc *descs, int32_t count) {
  size_t words = 0;
  for (int32_t i = 0; i < count; ++i)
    words += 3 + 2 * static_cast<size_t>(descs[i].rank);
  return words;
}

/// Frees the buffers a kernel returned (`out`, described by `descs`), each
/// once, not the arguments.
void freeResults(const std::vector<int64_t> &out,
                 const std::vector<void *> &args, const recur_arg_desc *descs,
                 int32_t count) {
  std::vector<void *> freed;
  const int64_t *w = out.data();
  for (int32_t r = 0; r < count; ++r) {
    void *allocated = reinterpret_cast<void *>(static_cast<intptr_t>(w[0]));
    w += 3 + 2 * descs[r].rank;
    if (!allocated ||
        std::find(args.begin(), args.end(), allocated) != args.end() ||
        std::find(freed.begin(), freed.end(), allocated) != freed.end())
      continue;
    freed.push_back(allocated);
    recur_cuda_free(allocated);
  }
}

/// Elements of each benchmark input drawn at random (the rest repeat them).
constexpr int64_t kBenchDraws = 1 << 20;

int bench(const std::string &sizes, unsigned repeat, bool backward) {
  if (layer->device != RECUR_DEVICE_CUDA)
    return fail("--bench times CUDA kernels; this layer is compiled for the "
                "CPU (time it with recur-bench)");
  if (backward && !layer->backward)
    return fail("--backward: this layer was compiled without its backward "
                "(recurc --no-backward)");
  std::vector<int64_t> dims(layer->num_runtime_dims, -1);
  std::istringstream items(sizes);
  std::string item;
  while (std::getline(items, item, ',')) {
    size_t eq = item.find('=');
    int32_t d = 0;
    while (d < layer->num_runtime_dims &&
           item.substr(0, eq) != layer->runtime_dim_names[d])
      ++d;
    if (eq == std::string::npos || d == layer->num_runtime_dims ||
        std::atoll(item.c_str() + eq + 1) < 1)
      return fail("--bench expects NAME=VALUE,... naming runtime dimensions "
                  "with positive sizes, got '" +
                  item + "'");
    dims[d] = std::atoll(item.c_str() + eq + 1);
  }
  for (int32_t d = 0; d < layer->num_runtime_dims; ++d)
    if (dims[d] < 0)
      return fail(std::string("--bench: no size for dimension ") +
                  layer->runtime_dim_names[d]);

  recur_cuda_device_info info;
  if (recur_cuda_device_info_get(0, &info) != RECUR_OK)
    return runtimeFail("recur_cuda_device_info_get");
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<double> uniform(0.0, 0.7);
  std::vector<void *> buffers;
  std::vector<int64_t> in;
  size_t traffic = 0;
  // The kernel's arguments; for the backward, then a cotangent per result
  // (the backward reads them all, and writes a gradient per argument).
  std::vector<const recur_arg_desc *> inputs;
  for (int32_t i = 0; i < layer->num_args; ++i)
    inputs.push_back(&layer->args[i]);
  if (backward)
    for (int32_t r = 0; r < layer->num_results; ++r)
      inputs.push_back(&layer->results[r]);
  for (size_t i = 0; i < inputs.size(); ++i) {
    Tensor t = makeTensor(*inputs[i], dims);
    // Draws for the first elements, repeated over the rest: the values do
    // not change the time, and drawing a gigabyte would take longer than
    // the benchmark.
    int64_t drawn = std::min<int64_t>(t.numel(), kBenchDraws);
    for (int64_t e = 0; e < drawn; ++e)
      storeElement(t.sig->dtype, t.bytes.data(), e,
                   Complex(uniform(rng), uniform(rng)));
    size_t period = t.numel() > 0 ? t.bytes.size() / t.numel() * drawn : 0;
    for (size_t at = period; at < t.bytes.size(); at += period)
      std::memcpy(t.bytes.data() + at, t.bytes.data(),
                  std::min(period, t.bytes.size() - at));
    void *device = nullptr;
    if (recur_cuda_malloc(t.bytes.size(), &device) ||
        recur_cuda_memcpy_htod(device, t.bytes.data(), t.bytes.size(), nullptr))
      return runtimeFail("putting the arguments on the device");
    buffers.push_back(device);
    if (t.sig->role != RECUR_ROLE_PARAM || i >= size_t(layer->num_args))
      traffic += t.bytes.size();
    pushMemRef(in, device, t.shape);
  }
  // What the kernel writes: its results, or the backward's gradients.
  const recur_arg_desc *written = backward ? layer->args : layer->results;
  int32_t numWritten = backward ? layer->num_args : layer->num_results;
  for (int32_t r = 0; r < numWritten; ++r)
    if (!backward || written[r].role != RECUR_ROLE_PARAM)
      traffic += makeTensor(written[r], dims).bytes.size();

  std::vector<double> times;
  for (unsigned r = 0; r <= repeat; ++r) {
    std::vector<int64_t> out(wordCount(written, numWritten));
    auto start = std::chrono::steady_clock::now();
    (backward ? layer->backward : layer->kernel)(in.data(), out.data());
    recur_status synced = recur_cuda_synchronize();
    auto stop = std::chrono::steady_clock::now();
    if (recur_status s = recur_cuda_take_error())
      return fail(std::string("the kernel failed: ") + recur_last_error() +
                  " (" + recur_status_name(s) + ")");
    if (synced != RECUR_OK)
      return runtimeFail("recur_cuda_synchronize");
    freeResults(out, buffers, written, numWritten);
    if (r > 0) // the first call loads and warms up
      times.push_back(
          std::chrono::duration<double, std::milli>(stop - start).count());
  }
  std::sort(times.begin(), times.end());
  double kernelMs = times[times.size() / 2];

  // A device-to-device copy of half the bytes moves (reads and writes) as
  // many as the kernel's arguments and results.
  size_t half = traffic / 2;
  void *src = nullptr, *dst = nullptr;
  if (recur_cuda_malloc(half, &src) || recur_cuda_malloc(half, &dst))
    return runtimeFail("recur_cuda_malloc");
  std::vector<double> copies;
  for (unsigned r = 0; r <= repeat; ++r) {
    auto start = std::chrono::steady_clock::now();
    if (recur_cuda_memcpy_dtod(dst, src, half, nullptr) ||
        recur_cuda_synchronize())
      return runtimeFail("recur_cuda_memcpy_dtod");
    auto stop = std::chrono::steady_clock::now();
    if (r > 0)
      copies.push_back(
          std::chrono::duration<double, std::milli>(stop - start).count());
  }
  std::sort(copies.begin(), copies.end());
  double copyMs = copies[copies.size() / 2];
  recur_cuda_free(src);
  recur_cuda_free(dst);
  for (void *b : buffers)
    recur_cuda_free(b);

  std::printf("recur-case: layer %s%s on %s (sm_%d%d, %d SMs)", layer->name,
              backward ? " (backward)" : "", info.name, info.cc_major,
              info.cc_minor, info.multiprocessors);
  for (int32_t d = 0; d < layer->num_runtime_dims; ++d)
    std::printf(", %s = %lld", layer->runtime_dim_names[d],
                static_cast<long long>(dims[d]));
  std::printf("\nkernel_ms: %.4f\nbytes: %zu\nGBps: %.1f\n", kernelMs, traffic,
              traffic / kernelMs * 1e-6);
  std::printf("copy_ms: %.4f\ncopy_GBps: %.1f\nof_copy: %.3f\n", copyMs,
              traffic / copyMs * 1e-6, copyMs / kernelMs);
  return EXIT_SUCCESS;
}

} // namespace

int main(int argc, char **argv) {
  layer = recur_case_layer();
  std::string dir, sizes;
  int repeat = 0;
  bool backward = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::printf(
          "usage: %s DIR [--repeat N]\n"
          "       %s --bench NAME=VALUE,... [--backward] [--repeat N]\n\n"
          "Checks the case recur-run --save-case=DIR wrote against this\n"
          "program's layer (%s): its outputs and final states, the stream,\n"
          "and for a case saved with --gradcheck its backward's gradients;\n"
          "or times the kernel alone on device buffers (with --backward,\n"
          "the backward kernel on random cotangents: the forward it\n"
          "recomputes included). Exit status 1 when an error exceeds the\n"
          "tolerance or a call fails.\n",
          argv[0], argv[0], layer->name);
      return EXIT_SUCCESS;
    }
    if ((arg == "--repeat" || arg == "--bench") && i + 1 < argc) {
      if (arg == "--bench")
        sizes = argv[++i];
      else if ((repeat = std::atoi(argv[++i])) < 1)
        return fail("--repeat expects a positive count");
    } else if (arg == "--backward") {
      backward = true;
    } else if (!arg.empty() && arg[0] != '-' && dir.empty()) {
      dir = arg;
    } else {
      return fail("unexpected argument '" + arg + "' (see --help)");
    }
  }
  if (backward && sizes.empty())
    return fail("--backward times the backward with --bench (see --help)");
  if (!sizes.empty())
    return bench(sizes, repeat > 0 ? repeat : 20, backward);
  if (dir.empty())
    return fail("give the case's directory (see --help)");
  return runCase(dir, repeat);
}
