//===- recur-run.cpp - compile, run and check a layer ---------------------===//
//
// Part of the Recur project.
//
// recur-run SPEC.recur [--layer NAME] [-D NAME=VALUE]... [--stream] ...
//
// Compiles one layer for the CPU exactly as `recurc --target=cpu` does (the
// same pipeline and LLVM optimization, JIT-compiled instead of written to an
// object), or for CUDA as `recurc --target=cuda` does (the host code
// JIT-compiled, the kernels in its embedded fat binary), or with
// --gpu-forms for the CPU in the CUDA pipeline's loop forms, runs it through
// librecur_rt on seeded random inputs, and compares every output and final
// state with the float64 oracle (lib/Oracle: the layer's IR interpreted in
// double precision, each recur op by lib/Reference). Prints `max_rel_err:
// <value>` per output and final state, then `time_ms: <value>`, the peak bytes
// the call allocated and the workspace bound where there is one (which it
// must not exceed); with
// --stream, also `stream_max_rel_err: <value>`. Exit status 1 when an error
// exceeds the tolerance or anything fails. With --save-case=DIR it compiles and
// runs nothing and writes the run's data and the oracle's results for
// recur-case (tools/recur-case), which checks a kernel compiled by recurc where
// no LLVM is installed.
//
//===----------------------------------------------------------------------===//

#include "CompileOptions.h"

#include "recur/Frontend/MLIRGen.h"
#include "recur/Frontend/Parser.h"
#include "recur/Oracle/Evaluator.h"
#include "recur/Runtime/recur_rt.h"
#include "recur/Target/CpuTarget.h"
#include "recur/Target/CudaTarget.h"
#include "recur/Target/LayerSignature.h"
#include "recur/Target/Pipelines.h"
#include "recur/Transforms/Passes.h"

#include "Recur/IR/Recur.h"

#include "CaseData.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ExecutionEngine/Orc/ExecutionUtils.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Target/TargetMachine.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstring>
#include <limits>
#include <map>
#include <random>

using namespace llvm;
using mlir::recur::LayerSignature;
using mlir::recur::TensorSignature;
using recur::casedata::isComplexType;
using recur::casedata::loadElement;
using recur::casedata::maxRelErr;
using recur::casedata::storeElement;
using recur::oracle::Complex;
using recur::reference::Tensor;

namespace {
cl::OptionCategory runCategory("recur-run options");
// Shared with recurc (tools/common/CompileOptions.h): the layer is compiled
// as recurc compiles it.
recur::tools::CompileOptions compileOptions(runCategory);

cl::opt<std::string> inputFile(cl::Positional, cl::desc("<spec.recur>"),
                               cl::Required, cl::cat(runCategory));
cl::opt<std::string> layerName("layer",
                               cl::desc("The layer to run (needed when the "
                                        "spec has several)"),
                               cl::value_desc("name"), cl::cat(runCategory));
cl::list<std::string>
    defines("D", cl::Prefix,
            cl::desc("Set the compile-time dimension NAME to VALUE "
                     "(repeatable), as recurc -D"),
            cl::value_desc("NAME=VALUE"), cl::cat(runCategory));
cl::list<std::string>
    sizes("size",
          cl::desc("The size of runtime dimension NAME in this run "
                   "(repeatable; default: batch 2, time 4 steps or 64 "
                   "positions, others 8)"),
          cl::value_desc("NAME=VALUE"), cl::cat(runCategory));
cl::opt<unsigned> seed("seed", cl::desc("Seed of the random inputs"),
                       cl::init(1), cl::cat(runCategory));
cl::opt<double> inputScale(
    "input-scale",
    cl::desc("Scale of the random inputs (normal, mean 0); large values "
             "drive sigmoid gates to 0 and 1"),
    cl::init(1.0), cl::cat(runCategory));
cl::opt<bool> stream(
    "stream",
    cl::desc("Also run the layer a step at a time and split at random "
             "points, the state carried, and print stream_max_rel_err "
             "against the one-shot run (for a layer without a runtime time "
             "dimension: three segments against the oracle, chained; "
             "nothing for a layer without state)"),
    cl::cat(runCategory));
cl::opt<bool> gradcheck(
    "gradcheck",
    cl::desc("Also derive the layer's backward and compare it, in float64, "
             "with central finite differences of the forward for every "
             "input, param and initial state; print max_grad_rel_err"),
    cl::cat(runCategory));
cl::opt<double> gradTolerance(
    "grad-tolerance",
    cl::desc("The largest max_grad_rel_err accepted (default 1e-8: central "
             "differences with Richardson extrapolation in float64 agree "
             "with a right gradient to about 1e-10)"),
    cl::init(1e-8), cl::cat(runCategory));
cl::opt<unsigned> repeat("repeat",
                         cl::desc("Timed runs; time_ms is their median"),
                         cl::init(5), cl::cat(runCategory));
cl::opt<int> threads("num-threads",
                     cl::desc("Threads of the kernels' parallel loops "
                              "(default: OpenMP's)"),
                     cl::init(0), cl::cat(runCategory));
cl::opt<std::string> cpuName("cpu",
                             cl::desc("The CPU to compile for (LLVM name)"),
                             cl::init("native"), cl::cat(runCategory));
cl::opt<std::string> target(
    "target",
    cl::desc("Where the layer runs: cpu (JIT-compiled for this CPU), or "
             "cuda, cuda:sm_90, ... (compiled as recurc --target=cuda does, "
             "the host code JIT-compiled, the kernels run on CUDA device 0 "
             "through librecur_rt)"),
    cl::value_desc("cpu|cuda[:chips]"), cl::init("cpu"), cl::cat(runCategory));
cl::opt<bool> gpuForms(
    "gpu-forms",
    cl::desc("Run the layer on the CPU in the loop forms the CUDA pipeline "
             "gives it (the scans one channel a thread, spread, or by "
             "blocks with --cuda-scan-blocks, the blocks on the CPU's "
             "threads and a block's threads one after another, the gla "
             "in column chunks, window attention in one pass, the gla and "
             "window attention by a warp's matrix tiles with "
             "--cuda-gla-tiles and --cuda-window-warp-tiles, each tile "
             "product as vector ops, reductions onto few elements in "
             "parts), so that they are checked against "
             "the oracle without a GPU; not what recur-gpu-offload does "
             "next (launches, buffers hoisted, single-thread launches), "
             "outputs written into the caller's buffers as on the CPU, no "
             "stream stores; slower than the CPU's forms. The --cuda-* "
             "options choose the forms as for --target=cuda "
             "(--cuda-block-threads has no effect, --cuda-scan-warps is "
             "refused) (--target=cpu only)"),
    cl::cat(runCategory));
cl::opt<std::string> saveCase(
    "save-case",
    cl::desc("Compile and run nothing: write the run's inputs, params, "
             "initial states, stream plans and the float64 oracle's results "
             "into this directory, for recur-case to check a kernel compiled "
             "by recurc on a machine without LLVM (docs/cuda.md). With "
             "--gradcheck, run the gradient check on the CPU first and save "
             "its output cotangents and the gradients it passed; without "
             "--f64 the case is in the layer's own dtypes (f32, say) at "
             "their tolerance, the check in float64 on values rounded to "
             "them"),
    cl::value_desc("dir"), cl::cat(runCategory));
cl::opt<double> tolerance(
    "tolerance",
    cl::desc("The largest max_rel_err (and stream_max_rel_err) accepted; "
             "default 1e-4 for f32 layers, 1e-9 for f64, 5e-2 for f16/bf16"),
    cl::init(-1.0), cl::cat(runCategory));

int fail(const Twine &message) {
  WithColor::error(errs(), "recur-run") << message << "\n";
  return EXIT_FAILURE;
}

int runtimeFail(const Twine &what) {
  return fail(what + ": " + recur_last_error());
}

//===----------------------------------------------------------------------===//
// Host tensors: double or complex values, and the kernel's typed copy
//===----------------------------------------------------------------------===//

/// One tensor of the run: its values (rounded to the kernel's dtype, so the
/// kernel and the oracle read the same numbers) and the typed buffer.
struct HostTensor : recur::casedata::TensorBytes<TensorSignature> {
  std::vector<Complex> values; // real dtypes use the real part
};

/// A zero tensor of `sig`'s dtype with `shape`.
HostTensor makeTensor(const TensorSignature &sig,
                      const std::vector<int64_t> &shape) {
  HostTensor t;
  t.sig = &sig;
  t.shape = shape;
  t.values.assign(t.numel(), 0.0);
  t.bytes.assign(t.numel() * recur_dtype_size(sig.dtype), 0);
  return t;
}

/// Sets the values (rounded through the dtype) and the typed buffer.
void setValues(HostTensor &t, const std::vector<Complex> &values) {
  for (int64_t i = 0; i < t.numel(); ++i) {
    storeElement(t.sig->dtype, t.bytes.data(), i, values[i]);
    t.values[i] = loadElement(t.sig->dtype, t.bytes.data(), i);
  }
}

/// Reads the typed buffer back into the values.
void readBack(HostTensor &t) {
  for (int64_t i = 0; i < t.numel(); ++i)
    t.values[i] = loadElement(t.sig->dtype, t.bytes.data(), i);
}

recur::oracle::Value toOracle(const HostTensor &t) {
  switch (t.sig->dtype) {
  case RECUR_C64:
  case RECUR_C128:
    return Tensor<Complex>(t.shape, t.values);
  case RECUR_BOOL: {
    Tensor<bool> b(t.shape);
    for (int64_t i = 0; i < t.numel(); ++i)
      b.data[i] = t.values[i].real() != 0.0;
    return b;
  }
  case RECUR_I32: {
    Tensor<int32_t> b(t.shape);
    for (int64_t i = 0; i < t.numel(); ++i)
      b.data[i] = static_cast<int32_t>(t.values[i].real());
    return b;
  }
  default: {
    Tensor<double> b(t.shape);
    for (int64_t i = 0; i < t.numel(); ++i)
      b.data[i] = t.values[i].real();
    return b;
  }
  }
}

std::vector<Complex> fromOracle(const recur::oracle::Value &v) {
  std::vector<Complex> out;
  if (auto *d = std::get_if<Tensor<double>>(&v))
    out.assign(d->data.begin(), d->data.end());
  else if (auto *c = std::get_if<Tensor<Complex>>(&v))
    out = c->data;
  else if (auto *b = std::get_if<Tensor<bool>>(&v))
    for (bool x : b->data)
      out.push_back(x ? 1.0 : 0.0);
  else if (auto *i = std::get_if<Tensor<int32_t>>(&v))
    for (int32_t x : i->data)
      out.push_back(static_cast<double>(x));
  return out;
}

std::string shapeText(const HostTensor &t) {
  std::string s = mlir::recur::dtypeName(t.sig->dtype).str() + "[";
  for (size_t i = 0; i < t.shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(t.shape[i]);
  return s + "]";
}

//===----------------------------------------------------------------------===//
// The run
//===----------------------------------------------------------------------===//

struct Run {
  const LayerSignature &sig;
  const recur_layer_desc *desc;
  mlir::func::FuncOp func; // the unlowered layer, for the oracle
  std::vector<int64_t> dimSizes;
  std::mt19937_64 rng;
  std::vector<HostTensor> inputs, params, states;
  /// The layer's own signature where a saved case is written in its dtypes
  /// rather than sig's (--save-case with --gradcheck, which compiles in
  /// float64): every value drawn is rounded through them, so that the
  /// float64 checks see exactly the values the case holds.
  const LayerSignature *caseSig = nullptr;

  /// The dtype `t` (an argument or result of sig) is saved in.
  recur_dtype caseDtype(const TensorSignature &t) const {
    if (!caseSig)
      return t.dtype;
    for (size_t i = 0; i < sig.args.size(); ++i)
      if (&sig.args[i] == &t)
        return caseSig->args[i].dtype;
    for (size_t r = 0; r < sig.results.size(); ++r)
      if (&sig.results[r] == &t)
        return caseSig->results[r].dtype;
    return t.dtype;
  }

  /// `h`'s values rounded through the dtype it is saved in.
  void roundForCase(HostTensor &h) const {
    recur_dtype dtype = caseDtype(*h.sig);
    if (dtype == h.sig->dtype)
      return;
    std::vector<unsigned char> buffer(recur_dtype_size(dtype));
    std::vector<Complex> rounded(h.values);
    for (Complex &x : rounded) {
      storeElement(dtype, buffer.data(), 0, x);
      x = loadElement(dtype, buffer.data(), 0);
    }
    setValues(h, rounded);
  }

  /// `h`'s bytes in the dtype it is saved in.
  std::vector<unsigned char> caseBytes(const HostTensor &h) const {
    recur_dtype dtype = caseDtype(*h.sig);
    if (dtype == h.sig->dtype)
      return h.bytes;
    std::vector<unsigned char> bytes(h.numel() * recur_dtype_size(dtype));
    for (int64_t i = 0; i < h.numel(); ++i)
      storeElement(dtype, bytes.data(), i, h.values[i]);
    return bytes;
  }

  std::vector<int64_t> shapeOf(const TensorSignature &t) const {
    std::vector<int64_t> s;
    for (int64_t d : t.shape)
      s.push_back(d >= 0 ? d : dimSizes[-1 - d]);
    return s;
  }

  /// Whether `t` is a per-row flag (only the batch dim and units): its
  /// values are 0 or 1 (a reset, a dialogue start), never a time series.
  bool isRowFlag(const TensorSignature &t) const {
    bool batch = false;
    for (int64_t d : t.shape) {
      if (d < 0 && -1 - d == sig.batchDim)
        batch = true;
      else if (d != 1)
        return false;
    }
    return batch;
  }

  std::vector<Complex> randomValues(const TensorSignature &t, int64_t n,
                                    double scale) {
    std::normal_distribution<double> normal;
    std::bernoulli_distribution coin(t.dtype == RECUR_BOOL ? 0.2 : 0.5);
    std::vector<Complex> v(n);
    for (Complex &x : v) {
      if (t.dtype == RECUR_BOOL || isRowFlag(t))
        x = coin(rng) ? 1.0 : 0.0;
      else if (isComplexType(t.dtype))
        x = Complex(scale * normal(rng), scale * normal(rng));
      else
        x = scale * normal(rng);
    }
    return v;
  }

  /// A param from its init rule, perturbed so that every param matters:
  /// normal(s) as drawn, ones and consts plus 0.1 noise, zeros 0.1 noise.
  std::vector<Complex> paramValues(const TensorSignature &t, int64_t n) {
    StringRef init = t.initSpelling;
    double base = 0.0, scale = 0.1;
    if (init.consume_front("normal(") && init.consume_back(")"))
      init.getAsDouble(scale);
    else if (init == "ones")
      base = 1.0;
    else if (init.consume_front("const(") && init.consume_back(")"))
      init.getAsDouble(base);
    std::vector<Complex> v = randomValues(t, n, scale);
    for (Complex &x : v)
      x += base;
    return v;
  }

  void makeInputs(std::vector<HostTensor> &out, double scale) {
    out.clear();
    for (const TensorSignature &t : sig.args)
      if (t.role == RECUR_ROLE_INPUT) {
        HostTensor h = makeTensor(t, shapeOf(t));
        setValues(h, randomValues(t, h.numel(), scale));
        roundForCase(h);
        out.push_back(std::move(h));
      }
  }

  void makeParamsAndStates() {
    for (const TensorSignature &t : sig.args) {
      if (t.role == RECUR_ROLE_PARAM) {
        HostTensor h = makeTensor(t, shapeOf(t));
        setValues(h, paramValues(t, h.numel()));
        roundForCase(h);
        params.push_back(std::move(h));
      } else if (t.role == RECUR_ROLE_STATE) {
        // A state mid-sequence, so the carried values matter.
        HostTensor h = makeTensor(t, shapeOf(t));
        setValues(h, randomValues(t, h.numel(), 0.5));
        roundForCase(h);
        states.push_back(std::move(h));
      }
    }
  }

  std::vector<recur_tensor> views(std::vector<HostTensor> &ts) {
    return recur::casedata::viewsOf(ts);
  }

  /// A runtime state holding `values`.
  recur_state *newState(std::vector<HostTensor> &values) {
    return recur::casedata::stateHolding(
        desc, dimSizes[sig.batchDim >= 0 ? sig.batchDim : 0], views(params),
        values);
  }

  /// The state's tensors as host tensors.
  std::vector<HostTensor> stateValues(recur_state *state) {
    std::vector<HostTensor> out;
    for (size_t i = 0; i < states.size(); ++i) {
      HostTensor h = makeTensor(*states[i].sig, states[i].shape);
      recur::casedata::readStateTensor(state, static_cast<int32_t>(i), h.bytes);
      readBack(h);
      out.push_back(std::move(h));
    }
    return out;
  }

  std::vector<HostTensor> makeOutputs(int64_t timeSize = -1) {
    std::vector<HostTensor> out;
    for (const TensorSignature &t : sig.results)
      if (t.role == RECUR_ROLE_OUTPUT) {
        std::vector<int64_t> shape;
        for (int64_t d : t.shape)
          shape.push_back(d >= 0 ? d
                          : timeSize >= 0 && -1 - d == sig.timeDim
                              ? timeSize
                              : dimSizes[-1 - d]);
        out.push_back(makeTensor(t, shape));
      }
    return out;
  }

  /// The oracle on `in` from `from`: outputs then final states, in the
  /// order of the kernel's results.
  Expected<std::vector<std::vector<Complex>>>
  oracle(std::vector<HostTensor> &in, std::vector<HostTensor> &from) {
    std::vector<recur::oracle::Value> args;
    size_t ii = 0, pi = 0, si = 0;
    for (const TensorSignature &t : sig.args)
      args.push_back(toOracle(t.role == RECUR_ROLE_INPUT   ? in[ii++]
                              : t.role == RECUR_ROLE_PARAM ? params[pi++]
                                                           : from[si++]));
    auto results = recur::oracle::evaluate(func, args);
    if (!results)
      return results.takeError();
    std::vector<std::vector<Complex>> out;
    for (const recur::oracle::Value &v : *results)
      out.push_back(fromOracle(v));
    return out;
  }

  /// recur_forward (or recur_step) on `in` into `out` from `state`.
  recur_status call(bool step, std::vector<recur_tensor> &in,
                    recur_state *state, std::vector<recur_tensor> &out) {
    std::vector<recur_tensor> p = views(params);
    return (step ? recur_step : recur_forward)(desc, in.data(), p.data(), state,
                                               out.data());
  }
};

/// Views of `ts` narrowed to positions [start, start + len) of runtime
/// dimension `dim`; a per-row flag is zeroed after the first piece (it
/// marks where a sequence starts, which a continuation is not).
std::vector<recur_tensor> slices(Run &run, std::vector<HostTensor> &ts,
                                 int64_t start, int64_t len,
                                 std::vector<HostTensor> &zeros) {
  return recur::casedata::pieceViews(
      ts, start, len, zeros,
      [&](const HostTensor &t) {
        auto it = std::find(t.sig->shape.begin(), t.sig->shape.end(),
                            -1 - int64_t(run.sig.timeDim));
        return run.sig.timeDim < 0 || it == t.sig->shape.end()
                   ? -1
                   : int(it - t.sig->shape.begin());
      },
      [&](const HostTensor &t) { return run.isRowFlag(*t.sig); },
      [&](const HostTensor &t) { return makeTensor(*t.sig, t.shape); });
}

/// The largest difference between a streamed run (`outs`, `finals`) and
/// the one-shot one.
double compare(std::vector<HostTensor> &outs, std::vector<HostTensor> &finals,
               std::vector<HostTensor> &refOuts,
               std::vector<HostTensor> &refFinals) {
  double worst = 0.0;
  for (size_t i = 0; i < outs.size(); ++i) {
    readBack(outs[i]);
    worst = std::max(worst, maxRelErr(outs[i].values, refOuts[i].values));
  }
  for (size_t i = 0; i < finals.size(); ++i)
    worst = std::max(worst, maxRelErr(finals[i].values, refFinals[i].values));
  return worst;
}

/// Whether a call of one step is long enough for the layer's slices (else
/// --stream has no pieces to run).
bool streamable(const Run &run) {
  return run.sig.timeDim < 0 ||
         run.sig.runtimeDimMin[run.sig.timeDim] <= run.sig.stepLength;
}

/// The pieces --stream splits the sequence into: every step (run by
/// recur_step), then random multiples of the step (by recur_forward).
std::vector<std::vector<int64_t>> streamPlans(Run &run) {
  int64_t total = run.dimSizes[run.sig.timeDim], step = run.sig.stepLength;
  std::vector<std::vector<int64_t>> plans(2);
  for (int64_t t = 0; t < total; t += step)
    plans[0].push_back(step);
  for (int64_t left = total; left > 0;) {
    int64_t n = std::uniform_int_distribution<int64_t>(
        1, std::max<int64_t>(1, left / step / 2 + 1))(run.rng);
    n = std::min(n * step, left);
    plans[1].push_back(n);
    left -= n;
  }
  return plans;
}

//===----------------------------------------------------------------------===//
// A saved case (--save-case), checked by recur-case
//===----------------------------------------------------------------------===//

/// Writes `size` bytes at `data` to `dir`/`name`.
bool writeBytes(StringRef dir, StringRef name, const void *data, size_t size) {
  SmallString<128> path(dir);
  sys::path::append(path, name);
  std::error_code ec;
  raw_fd_ostream os(path, ec, sys::fs::OF_None);
  if (ec) {
    WithColor::error(errs(), "recur-run")
        << "cannot write '" << path << "': " << ec.message() << "\n";
    return false;
  }
  os.write(static_cast<const char *>(data), size);
  return true;
}

/// Writes values as complex128 (the oracle's results, whatever the dtype).
bool writeValues(StringRef dir, StringRef name,
                 const std::vector<Complex> &values) {
  return writeBytes(dir, name, values.data(), values.size() * sizeof(Complex));
}

/// What a passed gradient check leaves for --save-case: the cotangents of
/// the outputs and final states, and the backward's gradients of the
/// inputs, params and initial states (each by its index).
struct GradCase {
  std::vector<HostTensor> dOutputs, dStates;
  std::vector<HostTensor> gradInputs, gradParams, gradStates;
};

/// Writes the case recur-case checks (docs/cuda.md, "Running on a machine
/// without LLVM"): `case.txt` naming the layer, the runtime sizes, the
/// tolerance, the file of every argument (its bytes in the layer's dtype,
/// run.caseDtype, row-major) and of every oracle result (complex128), and
/// with --stream the plans, or for a layer without a time dimension three
/// segments, each with its inputs and the oracle's results from the one
/// before; with `grads`, the gradient tolerance (`tol` too), the output
/// cotangents (in the layer's dtype) and the gradients a gradient check
/// passed (its dtype too: a float64 check's rounded to an f32 layer's).
int saveCaseFiles(Run &run, StringRef dir, double tol,
                  GradCase *grads = nullptr) {
  if (std::error_code ec = sys::fs::create_directories(dir))
    return fail("cannot create directory '" + dir + "': " + ec.message());
  std::string text;
  raw_string_ostream m(text);
  m << recur::casedata::kMagic << " " << recur::casedata::kVersion << "\n";
  m << "layer " << run.sig.name << "\n";
  m << "dims";
  for (int64_t d : run.dimSizes)
    m << " " << d;
  m << "\n";
  m << "tolerance " << format("%.17g", tol) << "\n";
  m << "repeat " << std::max(1u, repeat.getValue()) << "\n";
  size_t ii = 0, pi = 0, si = 0;
  for (auto [i, t] : llvm::enumerate(run.sig.args)) {
    HostTensor &h = t.role == RECUR_ROLE_INPUT   ? run.inputs[ii++]
                    : t.role == RECUR_ROLE_PARAM ? run.params[pi++]
                                                 : run.states[si++];
    std::string name = "arg" + std::to_string(i) + ".bin";
    std::vector<unsigned char> bytes = run.caseBytes(h);
    if (!writeBytes(dir, name, bytes.data(), bytes.size()))
      return EXIT_FAILURE;
    m << "arg " << i << " " << name << "\n";
  }
  auto want = run.oracle(run.inputs, run.states);
  if (!want)
    return fail("the float64 oracle failed: " + toString(want.takeError()));
  for (auto [r, values] : llvm::enumerate(*want)) {
    std::string name = "want" + std::to_string(r) + ".bin";
    if (!writeValues(dir, name, values))
      return EXIT_FAILURE;
    m << "want " << r << " " << name << "\n";
  }
  if (stream && run.sig.numStates > 0 && run.sig.timeDim >= 0 &&
      streamable(run)) {
    for (auto [p, plan] : llvm::enumerate(streamPlans(run))) {
      m << "plan " << (p == 0 ? "step" : "forward");
      for (int64_t len : plan)
        m << " " << len;
      m << "\n";
    }
  } else if (stream && run.sig.numStates > 0 && run.sig.timeDim < 0) {
    std::vector<HostTensor> from = run.states;
    for (int segment = 0; segment < 3; ++segment) {
      std::vector<HostTensor> segIn;
      run.makeInputs(segIn, inputScale);
      for (auto [j, h] : llvm::enumerate(segIn)) {
        std::string name = "seg" + std::to_string(segment) + "_in" +
                           std::to_string(j) + ".bin";
        std::vector<unsigned char> bytes = run.caseBytes(h);
        if (!writeBytes(dir, name, bytes.data(), bytes.size()))
          return EXIT_FAILURE;
        m << "segment_input " << segment << " " << j << " " << name << "\n";
      }
      auto segWant = run.oracle(segIn, from);
      if (!segWant)
        return fail("the float64 oracle failed: " +
                    toString(segWant.takeError()));
      std::vector<HostTensor> next;
      size_t s = 0;
      for (auto [r, t] : llvm::enumerate(run.sig.results)) {
        std::string name = "seg" + std::to_string(segment) + "_want" +
                           std::to_string(r) + ".bin";
        if (!writeValues(dir, name, (*segWant)[r]))
          return EXIT_FAILURE;
        m << "segment_want " << segment << " " << r << " " << name << "\n";
        if (t.role != RECUR_ROLE_OUTPUT) {
          // The oracle carries its own state on.
          HostTensor h = makeTensor(*run.states[s].sig, run.states[s].shape);
          h.values = (*segWant)[r];
          next.push_back(std::move(h));
          ++s;
        }
      }
      from = std::move(next);
    }
  }
  if (grads) {
    // Another backward is compared with these gradients, not with
    // differences: the results' roundoff tolerance applies.
    m << "grad_tolerance " << format("%.17g", tol) << "\n";
    auto save = [&](StringRef what, std::vector<HostTensor> &tensors) {
      for (auto [i, h] : llvm::enumerate(tensors)) {
        std::string name = (what + Twine(i) + ".bin").str();
        std::vector<unsigned char> bytes = run.caseBytes(h);
        if (!writeBytes(dir, name, bytes.data(), bytes.size()))
          return false;
        m << what << " " << i << " " << name << "\n";
      }
      return true;
    };
    if (!save("d_output", grads->dOutputs) ||
        !save("d_state", grads->dStates) ||
        !save("grad_input", grads->gradInputs) ||
        !save("grad_param", grads->gradParams) ||
        !save("grad_state", grads->gradStates))
      return EXIT_FAILURE;
  }
  if (!writeBytes(dir, "case.txt", text.data(), text.size()))
    return EXIT_FAILURE;
  outs() << "recur-run: saved the case of layer " << run.sig.name << " in "
         << dir << "\n";
  return EXIT_SUCCESS;
}

//===----------------------------------------------------------------------===//
// Gradient check
//===----------------------------------------------------------------------===//

/// The error of a central difference is at least its roundoff,
/// about kRoundoffFactor * eps * sum |w r| / h (the loss summed in float64,
/// differences of it divided by the step). A directional derivative is
/// compared relative to the larger of its size and that roundoff divided by
/// kNoiseTolerance, so a derivative that is small or vanishes (a key bias
/// under softmax's shift invariance) is judged by what differences can
/// resolve, and any error above the roundoff still shows.
constexpr double kRoundoffFactor = 16.0;
constexpr double kNoiseTolerance = 1e-8;

/// Re <w, r>: the loss whose gradient the check compares, summed over the
/// results (outputs, then final states).
double innerProduct(const std::vector<HostTensor> &ws,
                    const std::vector<HostTensor> &rs, bool absolute = false) {
  double sum = 0.0;
  for (size_t k = 0; k < ws.size(); ++k)
    for (size_t i = 0; i < ws[k].values.size(); ++i) {
      Complex term = std::conj(ws[k].values[i]) * rs[k].values[i];
      sum += absolute ? std::abs(term) : term.real();
    }
  return sum;
}

/// The layer's results on the run's tensors: outputs then final states.
Expected<std::vector<HostTensor>> forwardResults(Run &run) {
  std::vector<HostTensor> outputs = run.makeOutputs();
  std::vector<recur_tensor> in = run.views(run.inputs),
                            out = run.views(outputs);
  recur_state *state = run.newState(run.states);
  if (!state)
    return createStringError(recur_last_error());
  recur_status status = run.call(false, in, state, out);
  std::vector<HostTensor> finals = run.stateValues(state);
  recur_state_destroy(state);
  if (status != RECUR_OK)
    return createStringError(recur_last_error());
  for (HostTensor &o : outputs)
    readBack(o);
  for (HostTensor &f : finals)
    outputs.push_back(std::move(f));
  return outputs;
}

/// The forward with the values of its stop-gradient ops (stop_gradient,
/// memory_update) held fixed: they pass no gradient, so the differences the
/// backward is compared with must not move them either. `values` computes
/// them; `frozen` is the layer with them as extra trailing arguments.
struct FrozenForward {
  recur_kernel_fn values = nullptr, frozen = nullptr;
  std::vector<std::unique_ptr<TensorSignature>> sigs;
  std::vector<HostTensor> base;
};

/// The suffixes of the two functions addFrozenForward adds.
constexpr StringLiteral kValuesSuffix = "_gradcheck_values";
constexpr StringLiteral kFrozenSuffix = "_gradcheck_frozen";

/// The runtime dtype of a tensor element type (f64 and c128 under
/// --gradcheck, which compiles in float64).
std::optional<recur_dtype> dtypeOf(mlir::Type type) {
  if (type.isF64())
    return RECUR_F64;
  if (type.isF32())
    return RECUR_F32;
  if (auto c = dyn_cast<mlir::ComplexType>(type))
    return c.getElementType().isF64() ? std::optional(RECUR_C128)
                                      : std::optional(RECUR_C64);
  return std::nullopt;
}

/// Adds, beside layer `f`, `f_gradcheck_values` (returning the results of
/// f's stop-gradient ops) and `f_gradcheck_frozen` (f with those results as
/// extra trailing arguments); the types of those values in `types`. Adds
/// nothing when f has none; fails when one sits inside a region (its value
/// changes from one iteration to the next).
LogicalResult addFrozenForward(mlir::ModuleOp module, mlir::func::FuncOp f,
                               SmallVectorImpl<mlir::Type> &types) {
  auto isStop = [](mlir::Operation *op) {
    return isa<mlir::recur::StopGradientOp, mlir::recur::MemoryUpdateOp>(op);
  };
  bool nested = false;
  f.walk([&](mlir::Operation *op) {
    if (!isStop(op))
      return;
    if (op->getParentOp() != f.getOperation())
      nested = true;
    else
      types.push_back(op->getResult(0).getType());
  });
  if (nested)
    return f.emitError("--gradcheck cannot hold a stop-gradient inside a "
                       "region fixed yet"),
           failure();
  if (types.empty())
    return success();
  mlir::OpBuilder b(module.getContext());
  b.setInsertionPointToEnd(module.getBody());
  auto stopsOf = [&](mlir::func::FuncOp fn) {
    SmallVector<mlir::Operation *> stops;
    for (mlir::Operation &op : fn.getBody().front())
      if (isStop(&op))
        stops.push_back(&op);
    return stops;
  };

  auto values = cast<mlir::func::FuncOp>(b.clone(*f));
  values.setSymName((f.getSymName() + kValuesSuffix).str());
  mlir::Operation *ret = values.getBody().front().getTerminator();
  SmallVector<mlir::Value> results;
  for (mlir::Operation *op : stopsOf(values))
    results.push_back(op->getResult(0));
  b.setInsertionPoint(ret);
  mlir::func::ReturnOp::create(b, ret->getLoc(), results);
  ret->erase();
  values.removeResAttrsAttr();
  values.setFunctionType(mlir::FunctionType::get(
      module.getContext(), values.getArgumentTypes(), types));

  b.setInsertionPointToEnd(module.getBody());
  auto frozen = cast<mlir::func::FuncOp>(b.clone(*f));
  frozen.setSymName((f.getSymName() + kFrozenSuffix).str());
  // callKernel reads every result back, outputs included: without their
  // roles the CPU pipeline leaves them results (recur-destination-outputs
  // would make them destination arguments).
  frozen.removeResAttrsAttr();
  for (mlir::Operation *op : stopsOf(frozen)) {
    unsigned pos = frozen.getNumArguments();
    if (failed(frozen.insertArgument(pos, op->getResult(0).getType(), nullptr,
                                     op->getLoc())))
      return failure();
    op->getResult(0).replaceAllUsesWith(frozen.getArgument(pos));
    op->erase();
  }
  return success();
}

/// Appends the memref descriptor of a row-major buffer at `data` with
/// `shape` to `words`.
void packRowMajor(std::vector<int64_t> &words, const void *data,
                  const std::vector<int64_t> &shape) {
  auto ptr = static_cast<int64_t>(reinterpret_cast<intptr_t>(data));
  words.insert(words.end(), {ptr, ptr, 0});
  words.insert(words.end(), shape.begin(), shape.end());
  std::vector<int64_t> strides(shape.size(), 1);
  for (int64_t d = static_cast<int64_t>(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  words.insert(words.end(), strides.begin(), strides.end());
}

/// Device buffers freed when this goes out of scope.
struct DeviceBuffers {
  std::vector<void *> buffers;
  ~DeviceBuffers() {
    for (void *b : buffers)
      recur_cuda_free(b);
  }
};

/// Calls a kernel on the layer's arguments (then `extra`), and reads its
/// results (described by `sigs`) into host tensors, freeing the buffers it
/// made for them. A CUDA layer's kernel (`run.sig.deviceKernel`) runs on
/// device copies of the arguments, and its results are copied back.
Expected<std::vector<HostTensor>>
callKernel(Run &run, recur_kernel_fn kernel, std::vector<HostTensor> &extra,
           ArrayRef<const TensorSignature *> sigs) {
  bool device = run.sig.deviceKernel;
  DeviceBuffers onDevice;
  auto deviceError = [](const Twine &what) {
    return createStringError(what + ": " + recur_last_error());
  };
  std::vector<int64_t> in;
  std::vector<const void *> args;
  auto pack = [&](HostTensor &t) -> Error {
    const void *data = t.bytes.data();
    if (device) {
      void *copy = nullptr;
      if (recur_cuda_malloc(t.bytes.size(), &copy))
        return deviceError("cannot put '" + t.sig->name + "' on the device");
      onDevice.buffers.push_back(copy);
      if (copy && recur_cuda_memcpy_htod(copy, data, t.bytes.size(), nullptr))
        return deviceError("cannot copy '" + t.sig->name + "' to the device");
      data = copy;
    }
    packRowMajor(in, data, t.shape);
    args.push_back(data);
    return Error::success();
  };
  for (const TensorSignature &a : run.sig.args)
    if (Error e = pack(a.role == RECUR_ROLE_INPUT   ? run.inputs[a.index]
                       : a.role == RECUR_ROLE_PARAM ? run.params[a.index]
                                                    : run.states[a.index]))
      return std::move(e);
  for (HostTensor &t : extra)
    if (Error e = pack(t))
      return std::move(e);
  size_t words = 0;
  for (const TensorSignature *t : sigs)
    words += 3 + 2 * t->shape.size();
  std::vector<int64_t> out(words, 0);
  kernel(in.data(), out.data());

  std::vector<HostTensor> results;
  std::vector<void *> freed;
  const int64_t *w = out.data();
  // The kernel's buffers are freed whatever happens below.
  auto freeResult = [&](void *allocated) {
    if (!allocated || llvm::is_contained(args, allocated) ||
        llvm::is_contained(freed, allocated))
      return;
    freed.push_back(allocated);
    if (device)
      recur_cuda_free(allocated);
    else
      recur_free(allocated);
  };
  std::string failed; // the first device error
  if (device && recur_cuda_take_error())
    failed = "the CUDA kernel failed: " + std::string(recur_last_error());
  for (const TensorSignature *t : sigs) {
    size_t rank = t->shape.size();
    auto *allocated = reinterpret_cast<void *>(static_cast<intptr_t>(w[0]));
    auto *aligned =
        reinterpret_cast<unsigned char *>(static_cast<intptr_t>(w[1]));
    int64_t offset = w[2];
    std::vector<int64_t> shape(w + 3, w + 3 + rank),
        strides(w + 3 + rank, w + 3 + 2 * rank);
    w += 3 + 2 * rank;
    HostTensor h = makeTensor(*t, shape);
    size_t bytes = recur_dtype_size(t->dtype);
    // The elements from the start of the buffer to the last one of the
    // result: what a copy from the device must cover.
    int64_t span = h.numel() > 0 ? offset + 1 : 0;
    for (size_t d = 0; d < rank && h.numel() > 0; ++d)
      span += (shape[d] - 1) * strides[d];
    std::vector<unsigned char> hostCopy;
    if (device && span > 0 && failed.empty()) {
      hostCopy.resize(span * bytes);
      if (recur_cuda_memcpy_dtoh(hostCopy.data(), aligned, hostCopy.size(),
                                 nullptr))
        failed = "cannot copy a result from the device: " +
                 std::string(recur_last_error());
      aligned = hostCopy.data();
    }
    if (failed.empty())
      for (int64_t i = 0; i < h.numel(); ++i) {
        int64_t at = offset, rest = i;
        for (int64_t d = static_cast<int64_t>(rank) - 1; d >= 0; --d) {
          at += (rest % shape[d]) * strides[d];
          rest /= shape[d];
        }
        std::memcpy(h.bytes.data() + i * bytes, aligned + at * bytes, bytes);
      }
    readBack(h);
    results.push_back(std::move(h));
    freeResult(allocated);
  }
  if (!failed.empty())
    return createStringError(failed);
  return results;
}

/// The layer's results (outputs, then final states) with the stop-gradient
/// values held at `frozen.base`.
Expected<std::vector<HostTensor>> frozenResults(Run &run,
                                                FrozenForward &frozen) {
  SmallVector<const TensorSignature *> sigs;
  for (const TensorSignature &r : run.sig.results)
    sigs.push_back(&r);
  Expected<std::vector<HostTensor>> called =
      callKernel(run, frozen.frozen, frozen.base, sigs);
  if (!called)
    return called.takeError();
  std::vector<HostTensor> &byResult = *called;
  // Kernel results come in declaration order; the check wants outputs,
  // then next states by their state's index.
  std::vector<HostTensor> ordered(byResult.size());
  for (auto [k, r] : llvm::enumerate(run.sig.results))
    ordered[r.role == RECUR_ROLE_OUTPUT ? r.index
                                        : run.sig.numOutputs + r.index] =
        std::move(byResult[k]);
  return ordered;
}

/// Compares recur_backward with central differences (Richardson-
/// extrapolated) of Re <w, results> along random and coordinate directions
/// of every float input, param and initial state. Returns the worst
/// relative error, or -1 after an error. Copies the cotangents and the
/// gradients into `save` when given.
double checkGradients(Run &run, double tol, FrozenForward *frozen,
                      GradCase *save) {
  // Random cotangents of the results.
  std::vector<HostTensor> ws = run.makeOutputs();
  for (HostTensor &s : run.states)
    ws.push_back(makeTensor(*s.sig, s.shape));
  for (HostTensor &w : ws) {
    setValues(w, run.randomValues(*w.sig, w.numel(), 1.0));
    run.roundForCase(w);
  }

  // The backward's gradients.
  std::vector<HostTensor> gradIn, gradParams, gradStates;
  for (HostTensor &t : run.inputs)
    gradIn.push_back(makeTensor(*t.sig, t.shape));
  for (HostTensor &t : run.params)
    gradParams.push_back(makeTensor(*t.sig, t.shape));
  for (HostTensor &t : run.states)
    gradStates.push_back(makeTensor(*t.sig, t.shape));
  std::vector<HostTensor> dOut(ws.begin(), ws.begin() + run.sig.numOutputs),
      dStates(ws.begin() + run.sig.numOutputs, ws.end());
  std::vector<recur_tensor> in = run.views(run.inputs),
                            p = run.views(run.params), dOutV = run.views(dOut),
                            dStV = run.views(dStates), gIn = run.views(gradIn),
                            gP = run.views(gradParams),
                            gS = run.views(gradStates);
  recur_state *state = run.newState(run.states);
  if (!state) {
    runtimeFail("recur_state_create");
    return -1.0;
  }
  recur_memory_stats before, after;
  recur_memory_stats_get(&before);
  recur_memory_stats_reset_peak();
  auto start = std::chrono::steady_clock::now();
  recur_status status =
      recur_backward(run.desc, in.data(), p.data(), state, dOutV.data(),
                     dStV.data(), gIn.data(), gP.data(), gS.data());
  auto stop = std::chrono::steady_clock::now();
  recur_memory_stats_get(&after);
  recur_state_destroy(state);
  if (status != RECUR_OK) {
    runtimeFail("recur_backward");
    return -1.0;
  }
  // What the backward call allocated at its peak (the memory policy's
  // measure: --backward-keep-states against the default) and took.
  outs() << "backward_ms: "
         << format(
                "%.3f",
                std::chrono::duration<double, std::milli>(stop - start).count())
         << "\n";
  outs() << "backward_peak_bytes: " << after.peak_bytes - before.live_bytes
         << "\n";

  // The same call again into fresh buffers must give the same bits: the
  // kernels' parallel loops write disjoint elements and their sums run in a
  // fixed order, so a difference is a data race.
  {
    std::vector<HostTensor> again[3];
    for (auto [from, to] :
         {std::pair{&gradIn, &again[0]}, std::pair{&gradParams, &again[1]},
          std::pair{&gradStates, &again[2]}})
      for (HostTensor &t : *from)
        to->push_back(makeTensor(*t.sig, t.shape));
    std::vector<recur_tensor> aIn = run.views(again[0]),
                              aP = run.views(again[1]),
                              aS = run.views(again[2]);
    recur_state *replay = run.newState(run.states);
    recur_status again_status =
        replay ? recur_backward(run.desc, in.data(), p.data(), replay,
                                dOutV.data(), dStV.data(), aIn.data(),
                                aP.data(), aS.data())
               : RECUR_ERROR_OUT_OF_MEMORY;
    recur_state_destroy(replay);
    if (again_status != RECUR_OK) {
      runtimeFail("recur_backward");
      return -1.0;
    }
    bool same = true;
    for (auto [first, second] :
         {std::pair{&gradIn, &again[0]}, std::pair{&gradParams, &again[1]},
          std::pair{&gradStates, &again[2]}})
      for (auto [a, b] : llvm::zip_equal(*first, *second)) {
        if (a.bytes != b.bytes) {
          same = false;
          errs() << "recur-run: error: " << a.sig->name
                 << ": a second backward call gave different gradients "
                    "(a data race in the kernels)\n";
        }
      }
    outs() << "backward_repeatable: " << (same ? "yes" : "no") << "\n";
    if (!same)
      return -1.0;
  }

  // The stop-gradient values at the point of the check, held there.
  if (frozen) {
    SmallVector<const TensorSignature *> sigs;
    for (auto &t : frozen->sigs)
      sigs.push_back(t.get());
    std::vector<HostTensor> none;
    Expected<std::vector<HostTensor>> values =
        callKernel(run, frozen->values, none, sigs);
    if (!values) {
      fail("the forward failed: " + toString(values.takeError()));
      return -1.0;
    }
    frozen->base = std::move(*values);
  }
  auto results = [&]() -> Expected<std::vector<HostTensor>> {
    if (frozen)
      return frozenResults(run, *frozen);
    return forwardResults(run);
  };
  // The scale of the loss's roundoff.
  auto baseResults = results();
  if (!baseResults) {
    fail("the forward failed: " + toString(baseResults.takeError()));
    return -1.0;
  }
  double lossScale = innerProduct(ws, *baseResults, /*absolute=*/true);

  struct Checked {
    std::vector<HostTensor> *values;
    std::vector<HostTensor> *grads;
    const char *role;
  };
  double worst = 0.0;
  std::normal_distribution<double> normal;
  for (const Checked &c : {Checked{&run.inputs, &gradIn, "input"},
                           Checked{&run.params, &gradParams, "param"},
                           Checked{&run.states, &gradStates, "initial state"}})
    for (size_t k = 0; k < c.values->size(); ++k) {
      HostTensor &t = (*c.values)[k];
      HostTensor &g = (*c.grads)[k];
      readBack(g);
      if (t.sig->dtype == RECUR_BOOL || t.sig->dtype == RECUR_I32 ||
          t.numel() == 0)
        continue;
      bool complex = isComplexType(t.sig->dtype);
      std::vector<Complex> base = t.values;
      double scale = 0.0;
      for (Complex v : base)
        scale = std::max(scale, std::abs(v));
      // Steps relative to the tensor's own scale: a weight of 0.02 moved by
      // 1e-4 would move by half a percent, too far for curved layers
      // (normalized queries).
      double h = 1e-4 * (scale > 0.0 ? scale : 1.0);
      // Three random directions and three coordinates.
      std::vector<std::vector<Complex>> dirs;
      for (int d = 0; d < 3; ++d) {
        std::vector<Complex> v(base.size());
        for (Complex &x : v)
          x = complex ? Complex(normal(run.rng), normal(run.rng))
                      : Complex(normal(run.rng), 0.0);
        dirs.push_back(std::move(v));
      }
      for (int d = 0; d < 3; ++d) {
        std::vector<Complex> v(base.size(), 0.0);
        v[std::uniform_int_distribution<size_t>(0, base.size() - 1)(run.rng)] =
            complex && d == 2 ? Complex(0.0, 1.0) : 1.0;
        dirs.push_back(std::move(v));
      }
      double err = 0.0, mag = 0.0;
      for (const std::vector<Complex> &v : dirs) {
        auto lossAt = [&](double step) -> Expected<double> {
          std::vector<Complex> moved(base);
          for (size_t i = 0; i < moved.size(); ++i)
            moved[i] += step * v[i];
          setValues(t, moved);
          auto r = results();
          setValues(t, base);
          if (!r)
            return r.takeError();
          return innerProduct(ws, *r);
        };
        auto central = [&](double step) -> Expected<double> {
          auto plus = lossAt(step), minus = lossAt(-step);
          if (!plus)
            return plus.takeError();
          if (!minus)
            return minus.takeError();
          return (*plus - *minus) / (2.0 * step);
        };
        auto d1 = central(h), d2 = central(h / 2);
        if (!d1 || !d2) {
          fail("the forward failed: " +
               toString(d1 ? d2.takeError() : d1.takeError()));
          return -1.0;
        }
        double fd = (4.0 * *d2 - *d1) / 3.0, an = 0.0;
        for (size_t i = 0; i < v.size(); ++i)
          an += (std::conj(g.values[i]) * v[i]).real();
        err = std::max(err, std::abs(fd - an));
        mag = std::max({mag, std::abs(fd), std::abs(an)});
      }
      double roundoff = kRoundoffFactor *
                        std::numeric_limits<double>::epsilon() * lossScale / h;
      double rel = err / std::max(mag, roundoff / kNoiseTolerance);
      if (std::isnan(rel))
        rel = INFINITY;
      outs() << "grad " << c.role << " " << t.sig->name << " " << shapeText(t)
             << "\n";
      outs() << "max_grad_rel_err: " << format("%.3g", rel) << "\n";
      if (!(rel <= tol))
        WithColor::error(errs(), "recur-run")
            << t.sig->name << ": max_grad_rel_err " << format("%.3g", rel)
            << " exceeds the tolerance " << format("%.3g", tol) << "\n";
      worst = std::max(worst, rel);
    }
  if (save)
    *save = {std::move(dOut), std::move(dStates), std::move(gradIn),
             std::move(gradParams), std::move(gradStates)};
  return worst;
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(runCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "recur-run: compiles a layer for the CPU (or a CUDA GPU), runs it on "
      "seeded random\ninputs through librecur_rt, and compares it with the "
      "float64 oracle.\n\n"
      "  recur-run SPEC.recur [--layer NAME] [-D NAME=VALUE]... [--stream]\n"
      "  recur-run SPEC.recur --target=cuda[:sm_90] ... [--stream]\n"
      "  recur-run SPEC.recur --gpu-forms ...   (the CUDA forms on the CPU)\n"
      "  recur-run SPEC.recur ... --save-case=DIR   (for recur-case)\n\n"
      "Prints, for every output and final state, a line naming it and\n"
      "`max_rel_err: <value>` (max |kernel - oracle| / max |oracle|), then\n"
      "`time_ms: <value>` (the median forward call), `peak_bytes: <n>`\n"
      "(what the call allocated at its peak) and `workspace_bytes: <n>`\n"
      "(recur_workspace_size's bound, which the peak must not exceed;\n"
      "`unknown` where the compiler found none, as with --gpu-forms; for\n"
      "CUDA `device_peak_bytes: <n>` instead);\n"
      "--stream adds `stream_max_rel_err: <value>`; --gradcheck adds\n"
      "`backward_ms:`, `backward_peak_bytes:` (one float64 backward call),\n"
      "`backward_repeatable: yes|no` (a second call gives the same bits;\n"
      "no is a data race and an error) and, per input, param and initial\n"
      "state, `max_grad_rel_err: <value>`. Exit status 1 when an error\n"
      "exceeds the tolerance or a step fails.\n");

  recur::frontend::CompileOptions options;
  options.layer = layerName;
  // Finite differences need float64 to mean anything.
  options.promoteToF64 = compileOptions.promoteF64 || gradcheck;
  if (std::optional<std::string> error = recur::frontend::setGlaOverrides(
          options, compileOptions.glaAlgorithm, compileOptions.glaChunk))
    return fail(*error);
  for (const std::string &d : defines)
    if (std::optional<std::string> error =
            recur::frontend::addDefine(options, d))
      return fail(*error);
  std::map<std::string, int64_t> sizeOverrides;
  for (const std::string &d : sizes) {
    StringRef text(d);
    auto [name, value] = text.split('=');
    int64_t v = 0;
    if (name.empty() || value.getAsInteger(10, v) || v < 1)
      return fail("--size expects NAME=VALUE with a positive VALUE, got '" + d +
                  "'");
    sizeOverrides[name.str()] = v;
  }

  std::optional<mlir::recur::CudaTargetOptions> cuda;
  if (StringRef(target).starts_with("cuda")) {
    cuda.emplace();
    if (std::optional<std::string> error =
            mlir::recur::parseCudaTarget(target, *cuda))
      return fail(*error);
  } else if (target != "cpu") {
    return fail("unknown --target '" + target +
                "': expected cpu, cuda or cuda:<chips> (cuda:sm_80,sm_90)");
  }
  // --gpu-forms takes the CUDA options as --target=cuda does.
  if (gpuForms && cuda)
    return fail("--gpu-forms runs the CUDA pipeline's loops on the CPU: it "
                "needs --target=cpu");
  std::optional<mlir::recur::CudaTargetOptions> forms;
  if (gpuForms)
    forms.emplace();
  if (std::optional<std::string> error =
          compileOptions.applyCuda(cuda ? &*cuda : (forms ? &*forms : nullptr)))
    return fail(*error);
  if (forms && forms->scanWarps)
    return fail("--gpu-forms cannot run --cuda-scan-warps: its shuffles run "
                "only on a GPU (test/Conversion/RecurToLoops/"
                "linear_scan-warps.mlir checks their emulation)");

  // Front end.
  mlir::DialectRegistry registry;
  mlir::recur::registerCudaTranslations(registry);
  mlir::MLIRContext context(registry);
  // The compiler's own diagnostics (errors, and the remark of a layer with
  // no backward) at their places in the spec.
  llvm::SourceMgr diagnosticSources;
  mlir::SourceMgrDiagnosticHandler diagnostics(diagnosticSources, &context);
  context.printOpOnDiagnostic(false);
  std::string ioError;
  mlir::OwningOpRef<mlir::ModuleOp> ir =
      recur::frontend::compileSpecFile(inputFile, context, options, ioError);
  if (!ir)
    return ioError.empty() ? EXIT_FAILURE : fail(ioError);
  auto funcs = ir->getOps<mlir::func::FuncOp>();
  std::vector<mlir::func::FuncOp> layers(funcs.begin(), funcs.end());
  if (layers.size() != 1) {
    std::string names;
    for (auto f : layers)
      names += " " + f.getSymName().str();
    return fail("the spec defines several layers; choose one with --layer:" +
                names);
  }
  mlir::func::FuncOp func = layers.front();
  FailureOr<LayerSignature> sig = mlir::recur::getLayerSignature(func);
  if (failed(sig))
    return EXIT_FAILURE;
  sig->deviceKernel = cuda.has_value();

  // Sizes of the runtime dims.
  Run run{*sig, nullptr, func, {}, std::mt19937_64(seed), {}, {}, {}};
  for (auto [k, name] : llvm::enumerate(sig->runtimeDims)) {
    int64_t size = static_cast<int32_t>(k) == sig->batchDim ? 2
                   : static_cast<int32_t>(k) == sig->timeDim
                       ? (sig->stepLength > 1 ? 4 * sig->stepLength : 64)
                       : 8;
    auto it = sizeOverrides.find(name);
    if (it != sizeOverrides.end()) {
      size = it->second;
      sizeOverrides.erase(it);
    }
    run.dimSizes.push_back(size);
  }
  if (!sizeOverrides.empty())
    return fail("--size " + sizeOverrides.begin()->first +
                ": the layer has no runtime dimension of that name");
  if (sig->timeDim >= 0 && run.dimSizes[sig->timeDim] % sig->stepLength)
    return fail("the layer runs blocks of " + Twine(sig->stepLength) +
                " positions: --size " + sig->runtimeDims[sig->timeDim] +
                " must be a multiple of it");

  // Unit roundoff 2^-24 (f32), 2^-53 (f64), 2^-8 (bf16) with room for
  // about 2^10 - 2^11 accumulated roundings (long sums and recurrences).
  auto toleranceOf = [&](const LayerSignature &layerSig) {
    bool anyF32 = false, anyHalf = false;
    for (const TensorSignature &t : layerSig.results) {
      anyF32 |= t.dtype == RECUR_F32 || t.dtype == RECUR_C64;
      anyHalf |= t.dtype == RECUR_F16 || t.dtype == RECUR_BF16;
    }
    return tolerance >= 0 ? tolerance.getValue()
           : anyHalf      ? 5e-2
           : anyF32       ? 1e-4
                          : 1e-9;
  };
  double tol = toleranceOf(*sig);

  if (!saveCase.empty() && cuda)
    return fail("--save-case saves a case for any target: drop --target");

  // A gradient case of a layer that is not float64 (--save-case with
  // --gradcheck, without --f64): checked here in float64 on values rounded
  // through the layer's own dtypes, and saved in them, so that recur-case
  // checks the layer's own backward (an f32 one, say) against float64
  // gradients of exactly its inputs, at its dtype's tolerance.
  FailureOr<LayerSignature> ownSig = failure();
  double caseTol = tol;
  if (!saveCase.empty() && gradcheck && !compileOptions.promoteF64) {
    recur::frontend::CompileOptions own = options;
    own.promoteToF64 = false;
    mlir::OwningOpRef<mlir::ModuleOp> ownIr =
        recur::frontend::compileSpecFile(inputFile, context, own, ioError);
    if (!ownIr)
      return ioError.empty() ? EXIT_FAILURE : fail(ioError);
    auto ownFunc = ownIr->lookupSymbol<mlir::func::FuncOp>(sig->name);
    if (!ownFunc)
      return fail("--save-case: the spec compiled without float64 has no "
                  "layer '" +
                  sig->name + "'");
    ownSig = mlir::recur::getLayerSignature(ownFunc);
    if (failed(ownSig))
      return EXIT_FAILURE;
    auto same = [](const std::vector<TensorSignature> &a,
                   const std::vector<TensorSignature> &b) {
      return a.size() == b.size() &&
             std::equal(a.begin(), a.end(), b.begin(),
                        [](const TensorSignature &x, const TensorSignature &y) {
                          return x.role == y.role && x.shape == y.shape;
                        });
    };
    if (!same(ownSig->args, sig->args) || !same(ownSig->results, sig->results))
      return fail("--save-case: layer '" + sig->name +
                  "' has another signature in float64");
    run.caseSig = &*ownSig;
    caseTol = toleranceOf(*ownSig);
  }

  if (!saveCase.empty() && !gradcheck) {
    run.makeParamsAndStates();
    run.makeInputs(run.inputs, inputScale);
    return saveCaseFiles(run, saveCase, tol);
  }

  // The kernel, compiled as recurc compiles it, then JIT-linked.
  mlir::OwningOpRef<mlir::ModuleOp> lowered(
      cast<mlir::ModuleOp>((*ir)->clone()));
  bool hasBackward = false;
  SmallVector<mlir::Type> frozenTypes;
  if (gradcheck) {
    // The remark says why when the layer has no backward yet.
    if (failed(mlir::recur::deriveBackwardFunctions(
            *lowered, compileOptions.backwardKeepStates)))
      return EXIT_FAILURE;
    hasBackward = static_cast<bool>(lowered->lookupSymbol(
        (sig->name + mlir::recur::kBackwardSuffix).str()));
    if (!hasBackward)
      return fail("--gradcheck: layer '" + sig->name +
                  "' has no backward (see the remark above)");
    if (failed(addFrozenForward(
            *lowered, lowered->lookupSymbol<mlir::func::FuncOp>(sig->name),
            frozenTypes)))
      return EXIT_FAILURE;
  }
  auto llvmContext = std::make_unique<LLVMContext>();
  FailureOr<std::unique_ptr<Module>> llvmModule = failure();
  if (cuda) {
    // The host code, with the kernels' fat binary embedded and loaded by a
    // constructor, as in the object recurc writes.
    auto gpu = mlir::recur::lowerToCuda(*lowered, *llvmContext, *cuda,
                                        /*assemble=*/true);
    if (succeeded(gpu))
      llvmModule = std::move(gpu->host);
  } else {
    mlir::recur::CpuPipelineOptions options;
    options.streamStoreBytes = compileOptions.streamStoreBytesValue();
    if (forms)
      options.gpuForms = mlir::recur::cudaPipelineOptions(*forms);
    llvmModule = mlir::recur::lowerToLLVMIR(*lowered, *llvmContext, options);
  }
  if (failed(llvmModule))
    return EXIT_FAILURE;
  mlir::recur::CpuTargetOptions cpu;
  cpu.cpu = cpuName;
  auto machine = mlir::recur::createCpuTargetMachine(cpu);
  if (!machine)
    return fail(toString(machine.takeError()));
  mlir::recur::optimizeModule(**llvmModule, **machine, cpu.optLevel);
  auto jit = orc::LLJITBuilder().create();
  if (!jit)
    return fail(toString(jit.takeError()));
  auto generator = orc::DynamicLibrarySearchGenerator::GetForCurrentProcess(
      (*jit)->getDataLayout().getGlobalPrefix());
  if (!generator)
    return fail(toString(generator.takeError()));
  (*jit)->getMainJITDylib().addGenerator(std::move(*generator));
  if (Error e = (*jit)->addIRModule(orc::ThreadSafeModule(
          std::move(*llvmModule), std::move(llvmContext))))
    return fail(toString(std::move(e)));
  // Runs the constructors: a CUDA layer's loads its kernels (keeping "no
  // CUDA device" for the first call when there is none).
  if (Error e = (*jit)->initialize((*jit)->getMainJITDylib()))
    return fail(toString(std::move(e)));
  auto symbol = (*jit)->lookup(mlir::recur::kernelSymbol(sig->name));
  if (!symbol)
    return fail(toString(symbol.takeError()));
  recur_workspace_fn boundFn = nullptr;
  if (!cuda) {
    auto bound = (*jit)->lookup(mlir::recur::workspaceSymbol(sig->name));
    if (!bound)
      return fail(toString(bound.takeError()));
    boundFn = bound->toPtr<recur_workspace_fn>();
  }
  recur_kernel_fn backwardFn = nullptr;
  if (hasBackward) {
    auto backward = (*jit)->lookup(mlir::recur::backwardSymbol(sig->name));
    if (!backward)
      return fail(toString(backward.takeError()));
    backwardFn = backward->toPtr<recur_kernel_fn>();
  }
  auto desc = mlir::recur::buildLayerDesc(
      *sig, symbol->toPtr<recur_kernel_fn>(), boundFn, backwardFn);
  FrozenForward frozen;
  if (!frozenTypes.empty()) {
    auto values = (*jit)->lookup(
        mlir::recur::kernelSymbol((sig->name + kValuesSuffix).str()));
    auto held = (*jit)->lookup(
        mlir::recur::kernelSymbol((sig->name + kFrozenSuffix).str()));
    if (!values)
      return fail(toString(values.takeError()));
    if (!held)
      return fail(toString(held.takeError()));
    frozen.values = values->toPtr<recur_kernel_fn>();
    frozen.frozen = held->toPtr<recur_kernel_fn>();
    for (auto [k, type] : llvm::enumerate(frozenTypes)) {
      auto tensorType = cast<mlir::RankedTensorType>(type);
      std::optional<recur_dtype> dtype = dtypeOf(tensorType.getElementType());
      if (!dtype)
        return fail("--gradcheck: a stop-gradient value of an unsupported "
                    "element type");
      auto t = std::make_unique<TensorSignature>();
      t->name = "stop_gradient#" + std::to_string(k);
      t->dtype = *dtype;
      t->shape.assign(tensorType.getRank(), 0);
      t->dimNames.assign(tensorType.getRank(), "");
      frozen.sigs.push_back(std::move(t));
    }
  }
  if (threads > 0)
    recur_set_num_threads(threads);

  run.desc = &desc->desc;
  run.makeParamsAndStates();
  run.makeInputs(run.inputs, inputScale);

  outs() << "recur-run: layer " << sig->name << " from " << inputFile;
  for (auto [k, name] : llvm::enumerate(sig->runtimeDims))
    outs() << ", " << name << " = " << run.dimSizes[k];
  outs() << ", seed " << seed << ", " << recur_get_num_threads()
         << " threads\n";

  // One-shot run, timed.
  std::vector<HostTensor> outputs = run.makeOutputs();
  std::vector<recur_tensor> in = run.views(run.inputs),
                            out = run.views(outputs);
  std::vector<double> times;
  std::vector<HostTensor> finals;
  size_t workspace = 0, used = 0, deviceUsed = 0;
  // The CUDA pipeline's forms may allocate what the compiler does not bound
  // (LRU's spread scan): then the workspace is unknown.
  bool bounded = !cuda;
  if (bounded &&
      recur_workspace_size(&desc->desc, run.dimSizes.data(), &workspace)) {
    if (!gpuForms)
      return runtimeFail("recur_workspace_size");
    bounded = false;
  }
  for (unsigned r = 0; r < std::max(1u, repeat.getValue()); ++r) {
    recur_state *state = run.newState(run.states);
    if (!state)
      return runtimeFail("recur_state_create");
    recur_memory_stats before, after, deviceBefore, deviceAfter;
    recur_memory_stats_get(&before);
    recur_memory_stats_reset_peak();
    recur_cuda_memory_stats_get(&deviceBefore);
    recur_cuda_memory_stats_reset_peak();
    auto start = std::chrono::steady_clock::now();
    recur_status s = run.call(false, in, state, out);
    auto stop = std::chrono::steady_clock::now();
    if (s != RECUR_OK) {
      recur_state_destroy(state);
      return runtimeFail("recur_forward");
    }
    times.push_back(
        std::chrono::duration<double, std::milli>(stop - start).count());
    recur_memory_stats_get(&after);
    used = std::max(used, after.peak_bytes - before.live_bytes);
    recur_cuda_memory_stats_get(&deviceAfter);
    deviceUsed =
        std::max(deviceUsed, deviceAfter.peak_bytes - deviceBefore.live_bytes);
    if (r == 0)
      finals = run.stateValues(state);
    recur_state_destroy(state);
  }
  for (HostTensor &o : outputs)
    readBack(o);

  auto want = run.oracle(run.inputs, run.states);
  if (!want)
    return fail("the float64 oracle failed: " + toString(want.takeError()));
  bool ok = true;
  size_t oi = 0, si = 0;
  for (auto [r, t] : llvm::enumerate(sig->results)) {
    HostTensor &got =
        t.role == RECUR_ROLE_OUTPUT ? outputs[oi++] : finals[si++];
    double err = maxRelErr(got.values, (*want)[r]);
    outs() << (t.role == RECUR_ROLE_OUTPUT ? "output " : "final state ")
           << t.name << " " << shapeText(got) << "\n";
    outs() << "max_rel_err: " << format("%.3g", err) << "\n";
    if (!(err <= tol)) {
      ok = false;
      WithColor::error(errs(), "recur-run")
          << t.name << ": max_rel_err " << format("%.3g", err)
          << " exceeds the tolerance " << format("%.3g", tol) << "\n";
    }
  }
  std::sort(times.begin(), times.end());
  outs() << "time_ms: " << format("%.3f", times[times.size() / 2]) << "\n";
  // What the call allocated at its peak against the bound the compiler
  // generated (recur_workspace_size): a bound below it is a compiler bug.
  outs() << "peak_bytes: " << used << "\n";
  if (cuda) {
    // The device buffers the call allocated (arguments, results, the
    // kernels' own), which no bound covers yet; the host's peak holds the
    // copies of the results.
    outs() << "device_peak_bytes: " << deviceUsed << "\n";
  } else if (bounded) {
    outs() << "workspace_bytes: " << workspace << "\n";
  } else {
    outs() << "workspace_bytes: unknown\n";
  }
  if (bounded && used > workspace) {
    ok = false;
    WithColor::error(errs(), "recur-run")
        << "the call allocated " << used
        << " bytes at its peak, above its workspace bound of " << workspace
        << " bytes\n";
  }

  if (stream && sig->numStates == 0) {
    // Nothing is carried from one call to the next, so pieces of a
    // sequence cannot add up to the whole (attention over the whole
    // sequence, say): there is no streaming form to check.
    outs() << "stream: not applicable, the layer carries no state\n";
  } else if (stream && !streamable(run)) {
    // Pieces shorter than what the layer slices cannot be run at all.
    outs() << "stream: not applicable, a call reads at least "
           << sig->runtimeDimMin[sig->timeDim] << " positions of "
           << sig->runtimeDims[sig->timeDim] << " (a step covers "
           << sig->stepLength << ")\n";
  } else if (stream) {
    double worst = 0.0;
    if (sig->timeDim >= 0) {
      std::vector<std::vector<int64_t>> plans = streamPlans(run);
      for (auto [p, plan] : llvm::enumerate(plans)) {
        recur_state *state = run.newState(run.states);
        if (!state)
          return runtimeFail("recur_state_create");
        std::vector<HostTensor> pieceOuts = run.makeOutputs();
        int64_t at = 0;
        for (int64_t len : plan) {
          std::vector<HostTensor> zeros;
          zeros.reserve(run.inputs.size());
          std::vector<recur_tensor> pin =
              slices(run, run.inputs, at, len, zeros);
          std::vector<HostTensor> none;
          std::vector<recur_tensor> pout =
              slices(run, pieceOuts, at, len, none);
          if (run.call(p == 0, pin, state, pout) != RECUR_OK) {
            recur_state_destroy(state);
            return runtimeFail(p == 0 ? "recur_step" : "recur_forward");
          }
          at += len;
        }
        std::vector<HostTensor> pieceFinals = run.stateValues(state);
        recur_state_destroy(state);
        worst =
            std::max(worst, compare(pieceOuts, pieceFinals, outputs, finals));
      }
    } else {
      // Segments one after another against the oracle, chained.
      recur_state *state = run.newState(run.states);
      if (!state)
        return runtimeFail("recur_state_create");
      std::vector<HostTensor> from = run.states;
      for (int segment = 0; segment < 3; ++segment) {
        std::vector<HostTensor> segIn;
        run.makeInputs(segIn, inputScale);
        std::vector<HostTensor> segOut = run.makeOutputs();
        std::vector<recur_tensor> sin = run.views(segIn),
                                  sout = run.views(segOut);
        if (run.call(true, sin, state, sout) != RECUR_OK) {
          recur_state_destroy(state);
          return runtimeFail("recur_step");
        }
        auto segWant = run.oracle(segIn, from);
        if (!segWant)
          return fail("the float64 oracle failed: " +
                      toString(segWant.takeError()));
        size_t o = 0, s = 0;
        std::vector<HostTensor> next;
        for (auto [r, t] : llvm::enumerate(sig->results)) {
          if (t.role == RECUR_ROLE_OUTPUT) {
            readBack(segOut[o]);
            worst =
                std::max(worst, maxRelErr(segOut[o++].values, (*segWant)[r]));
          } else {
            // The oracle carries its own state on.
            HostTensor h = makeTensor(*run.states[s].sig, run.states[s].shape);
            h.values = (*segWant)[r];
            next.push_back(std::move(h));
            ++s;
          }
        }
        std::vector<HostTensor> got = run.stateValues(state);
        for (size_t i = 0; i < got.size(); ++i)
          worst = std::max(worst, maxRelErr(got[i].values, next[i].values));
        from = std::move(next);
      }
      recur_state_destroy(state);
    }
    outs() << "stream_max_rel_err: " << format("%.3g", worst) << "\n";
    if (!(worst <= tol)) {
      ok = false;
      WithColor::error(errs(), "recur-run")
          << "stream_max_rel_err " << format("%.3g", worst)
          << " exceeds the tolerance " << format("%.3g", tol) << "\n";
    }
  }
  if (gradcheck) {
    GradCase saved;
    double worst = checkGradients(
        run, gradTolerance, frozenTypes.empty() ? nullptr : &frozen, &saved);
    if (worst < 0.0)
      return EXIT_FAILURE;
    outs() << "max_grad_rel_err: " << format("%.3g", worst) << "\n";
    if (!(worst <= gradTolerance)) {
      ok = false;
      WithColor::error(errs(), "recur-run")
          << "max_grad_rel_err " << format("%.3g", worst)
          << " exceeds the tolerance "
          << format("%.3g", gradTolerance.getValue()) << "\n";
    }
    if (!saveCase.empty()) {
      // The case's reference gradients are the ones just checked.
      if (!ok)
        return fail("not saving the case in '" + saveCase +
                    "': its checks failed here");
      return saveCaseFiles(run, saveCase, caseTol, &saved);
    }
  }
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
