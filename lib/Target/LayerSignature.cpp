//===- LayerSignature.cpp - a layer's interface and its C header ----------===//
//
// Part of the Recur project.
//
//===----------------------------------------------------------------------===//

#include "recur/Target/LayerSignature.h"

#include "Recur/IR/Recur.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>

using namespace mlir;
using namespace mlir::recur;

namespace {

std::optional<recur_dtype> dtypeOf(Type elem) {
  if (elem.isF16())
    return RECUR_F16;
  if (elem.isBF16())
    return RECUR_BF16;
  if (elem.isF32())
    return RECUR_F32;
  if (elem.isF64())
    return RECUR_F64;
  if (auto c = dyn_cast<ComplexType>(elem)) {
    if (c.getElementType().isF32())
      return RECUR_C64;
    if (c.getElementType().isF64())
      return RECUR_C128;
  }
  if (elem.isInteger(1))
    return RECUR_BOOL;
  if (elem.isInteger(32))
    return RECUR_I32;
  return std::nullopt;
}

recur_role roleOf(StringRef role) {
  return llvm::StringSwitch<recur_role>(role)
      .Case("input", RECUR_ROLE_INPUT)
      .Case("param", RECUR_ROLE_PARAM)
      .Case("state", RECUR_ROLE_STATE)
      .Case("output", RECUR_ROLE_OUTPUT)
      .Default(RECUR_ROLE_NEXT_STATE);
}

/// FNV-1a, 64 bits.
void hashInto(uint64_t &h, StringRef text) {
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  h ^= 0xff;
  h *= 1099511628211ull;
}

/// Reads one tensor of the signature from its attributes and type.
FailureOr<TensorSignature> readTensor(func::FuncOp func, Type type,
                                      DictionaryAttr attrs, StringRef what,
                                      llvm::StringMap<int32_t> &runtimeDims,
                                      std::vector<std::string> &dimOrder) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  auto name = attrs ? attrs.getAs<StringAttr>("recur.name") : StringAttr();
  auto role = attrs ? attrs.getAs<StringAttr>("recur.role") : StringAttr();
  auto dims = attrs ? attrs.getAs<ArrayAttr>("recur.dims") : ArrayAttr();
  if (!tensor || !name || !role || !dims ||
      dims.size() != static_cast<size_t>(tensor.getRank()))
    return func.emitError() << what
                            << " lacks the recur.name, recur.role or "
                               "recur.dims attributes of a layer compiled by "
                               "recurc";
  TensorSignature sig;
  sig.name = name.str();
  sig.role = roleOf(role.getValue());
  std::optional<recur_dtype> dtype = dtypeOf(tensor.getElementType());
  if (!dtype)
    return func.emitError()
           << what << " '" << sig.name << "' has element type "
           << tensor.getElementType() << ", which the runtime has no dtype for";
  sig.dtype = *dtype;
  if (tensor.getRank() > RECUR_MAX_RANK)
    return func.emitError()
           << what << " '" << sig.name << "' has rank " << tensor.getRank()
           << "; the runtime takes at most " << RECUR_MAX_RANK;
  for (auto [d, dimName] :
       llvm::enumerate(dims.getAsValueRange<StringAttr>())) {
    sig.dimNames.push_back(dimName.str());
    if (!tensor.isDynamicDim(d)) {
      sig.shape.push_back(tensor.getDimSize(d));
      continue;
    }
    auto [it, inserted] = runtimeDims.try_emplace(
        dimName, static_cast<int32_t>(runtimeDims.size()));
    if (inserted)
      dimOrder.push_back(dimName.str());
    sig.shape.push_back(-1 - it->second);
  }
  if (auto init = attrs.getAs<StringAttr>("recur.init"))
    sig.initSpelling = init.str();
  return sig;
}

/// The init rule of a state: zeros, ones, const(v), param(name), or a
/// random rule the runtime cannot reproduce.
void readInit(TensorSignature &state,
              const std::vector<TensorSignature> &params) {
  StringRef init = state.initSpelling;
  if (init.empty() || init == "zeros") {
    state.init = RECUR_INIT_ZEROS;
  } else if (init == "ones") {
    state.init = RECUR_INIT_ONES;
  } else if (init.consume_front("const(") && init.consume_back(")") &&
             !init.getAsDouble(state.initValue)) {
    state.init = RECUR_INIT_CONST;
  } else if (init.consume_front("param(") && init.consume_back(")")) {
    state.init = RECUR_INIT_OTHER;
    for (const TensorSignature &param : params)
      if (param.name == init) {
        state.init = RECUR_INIT_PARAM;
        state.initParam = param.index;
      }
  } else {
    state.init = RECUR_INIT_OTHER;
  }
}

} // namespace

StringRef mlir::recur::dtypeName(recur_dtype dtype) {
  switch (dtype) {
  case RECUR_F16:
    return "f16";
  case RECUR_BF16:
    return "bf16";
  case RECUR_F32:
    return "f32";
  case RECUR_F64:
    return "f64";
  case RECUR_C64:
    return "c64";
  case RECUR_C128:
    return "c128";
  case RECUR_BOOL:
    return "bool";
  case RECUR_I32:
    return "i32";
  }
  return "?";
}

std::string mlir::recur::kernelSymbol(StringRef layer) {
  return ("recur_" + layer + "_kernel").str();
}

std::string mlir::recur::backwardSymbol(StringRef layer) {
  return kernelSymbol((layer + "_backward").str());
}

std::string mlir::recur::workspaceSymbol(StringRef layer) {
  return ("recur_" + layer + "_workspace").str();
}

FailureOr<LayerSignature> mlir::recur::getLayerSignature(func::FuncOp func) {
  LayerSignature sig;
  sig.name = func.getSymName().str();
  llvm::StringMap<int32_t> runtimeDims;
  int32_t counts[5] = {0, 0, 0, 0, 0};
  FunctionType type = func.getFunctionType();
  for (unsigned i = 0; i < type.getNumInputs(); ++i) {
    FailureOr<TensorSignature> t = readTensor(
        func, type.getInput(i), func.getArgAttrDict(i),
        "argument #" + std::to_string(i), runtimeDims, sig.runtimeDims);
    if (failed(t))
      return failure();
    t->index = counts[t->role]++;
    sig.args.push_back(std::move(*t));
  }
  for (unsigned i = 0; i < type.getNumResults(); ++i) {
    FailureOr<TensorSignature> t = readTensor(
        func, type.getResult(i), func.getResultAttrDict(i),
        "result #" + std::to_string(i), runtimeDims, sig.runtimeDims);
    if (failed(t))
      return failure();
    if (t->role == RECUR_ROLE_NEXT_STATE) {
      auto state = llvm::find_if(sig.args, [&](const TensorSignature &a) {
        return a.role == RECUR_ROLE_STATE && a.name == t->name;
      });
      if (state == sig.args.end())
        return func.emitError()
               << "next state '" << t->name << "' updates no state argument";
      t->index = state->index;
    } else {
      t->index = counts[RECUR_ROLE_OUTPUT]++;
    }
    sig.results.push_back(std::move(*t));
  }
  sig.numInputs = counts[RECUR_ROLE_INPUT];
  sig.numParams = counts[RECUR_ROLE_PARAM];
  sig.numStates = counts[RECUR_ROLE_STATE];
  sig.numOutputs = counts[RECUR_ROLE_OUTPUT];

  std::vector<TensorSignature> params;
  for (const TensorSignature &a : sig.args)
    if (a.role == RECUR_ROLE_PARAM)
      params.push_back(a);
  for (TensorSignature &a : sig.args)
    if (a.role == RECUR_ROLE_STATE)
      readInit(a, params);

  // The batch: the runtime dim every state leads with, else the one the
  // first input leads with. Time: the first other runtime dim of the first
  // input.
  std::optional<int64_t> lead;
  bool statesAgree = true;
  for (const TensorSignature &a : sig.args) {
    if (a.role != RECUR_ROLE_STATE)
      continue;
    int64_t first = a.shape.empty() ? 0 : a.shape.front();
    if (first >= 0 || (lead && *lead != first))
      statesAgree = false;
    lead = first;
  }
  const TensorSignature *firstInput = nullptr;
  for (const TensorSignature &a : sig.args)
    if (a.role == RECUR_ROLE_INPUT && !firstInput)
      firstInput = &a;
  if (lead && statesAgree)
    sig.batchDim = static_cast<int32_t>(-1 - *lead);
  else if (!lead && firstInput && !firstInput->shape.empty() &&
           firstInput->shape.front() < 0)
    sig.batchDim = static_cast<int32_t>(-1 - firstInput->shape.front());
  if (firstInput)
    for (int64_t size : firstInput->shape)
      if (size < 0 && -1 - size != sig.batchDim) {
        sig.timeDim = static_cast<int32_t>(-1 - size);
        break;
      }
  // The fewest positions of a runtime dim a call may have (the front
  // end's `recur.min_sizes`: what the layer's slices read).
  sig.runtimeDimMin.assign(sig.runtimeDims.size(), 0);
  if (Attribute attr = func->getAttr("recur.min_sizes")) {
    auto mins = dyn_cast<DictionaryAttr>(attr);
    if (!mins)
      return func.emitError() << "'recur.min_sizes' must be a dictionary";
    for (NamedAttribute entry : mins) {
      auto it = runtimeDims.find(entry.getName().strref());
      auto value = dyn_cast<IntegerAttr>(entry.getValue());
      if (it == runtimeDims.end() || !value || value.getInt() < 0)
        return func.emitError()
               << "'recur.min_sizes' entry '" << entry.getName().strref()
               << "' must give a runtime dimension a size >= 0";
      sig.runtimeDimMin[it->second] = value.getInt();
    }
  }
  // A layer that runs blocks steps a block at a time.
  func.walk([&](BlockRecurrenceOp op) {
    sig.stepLength =
        std::max<int64_t>(sig.stepLength, op.getBlockSizeAttr().getInt());
  });

  uint64_t h = 14695981039346656037ull;
  hashInto(h, sig.name);
  for (const auto *list : {&sig.args, &sig.results})
    for (const TensorSignature &t : *list) {
      hashInto(h, t.name);
      hashInto(h, std::to_string(t.role) + dtypeName(t.dtype).str());
      for (int64_t s : t.shape)
        hashInto(h, std::to_string(s));
    }
  sig.id = h;
  return sig;
}

std::unique_ptr<OwnedLayerDesc>
mlir::recur::buildLayerDesc(const LayerSignature &sig, recur_kernel_fn kernel,
                            recur_workspace_fn workspace,
                            recur_kernel_fn backward) {
  auto owned = std::make_unique<OwnedLayerDesc>();
  auto convert = [](const TensorSignature &t) {
    recur_arg_desc d{};
    d.name = t.name.c_str();
    d.role = t.role;
    d.index = t.index;
    d.dtype = t.dtype;
    d.rank = static_cast<int32_t>(t.shape.size());
    for (size_t i = 0; i < t.shape.size(); ++i) {
      d.shape[i] = t.shape[i];
      d.dim_names[i] = t.dimNames[i].c_str();
    }
    d.init = t.init;
    d.init_value = t.initValue;
    d.init_param = t.initParam;
    d.init_rule = t.initSpelling.c_str();
    return d;
  };
  for (const TensorSignature &t : sig.args)
    owned->args.push_back(convert(t));
  for (const TensorSignature &t : sig.results)
    owned->results.push_back(convert(t));
  for (const std::string &d : sig.runtimeDims)
    owned->runtimeDimNames.push_back(d.c_str());
  owned->runtimeDimMin = sig.runtimeDimMin;
  recur_layer_desc &d = owned->desc;
  d.abi_version = RECUR_ABI_VERSION;
  d.device = sig.deviceKernel ? RECUR_DEVICE_CUDA : RECUR_DEVICE_CPU;
  d.name = sig.name.c_str();
  d.id = sig.id;
  d.num_runtime_dims = static_cast<int32_t>(sig.runtimeDims.size());
  d.runtime_dim_names = owned->runtimeDimNames.data();
  d.batch_dim = sig.batchDim;
  d.time_dim = sig.timeDim;
  d.step_length = sig.stepLength;
  d.num_inputs = sig.numInputs;
  d.num_params = sig.numParams;
  d.num_states = sig.numStates;
  d.num_outputs = sig.numOutputs;
  d.num_args = static_cast<int32_t>(owned->args.size());
  d.args = owned->args.data();
  d.num_results = static_cast<int32_t>(owned->results.size());
  d.results = owned->results.data();
  d.kernel = kernel;
  d.output_destinations = sig.outputDestinations() ? 1 : 0;
  d.workspace = workspace;
  d.backward = backward;
  d.runtime_dim_min =
      llvm::any_of(owned->runtimeDimMin, [](int64_t m) { return m > 0; })
          ? owned->runtimeDimMin.data()
          : nullptr;
  return owned;
}

//===----------------------------------------------------------------------===//
// The C header
//===----------------------------------------------------------------------===//

namespace {

const char *roleEnum(recur_role role) {
  switch (role) {
  case RECUR_ROLE_INPUT:
    return "RECUR_ROLE_INPUT";
  case RECUR_ROLE_PARAM:
    return "RECUR_ROLE_PARAM";
  case RECUR_ROLE_STATE:
    return "RECUR_ROLE_STATE";
  case RECUR_ROLE_OUTPUT:
    return "RECUR_ROLE_OUTPUT";
  case RECUR_ROLE_NEXT_STATE:
    return "RECUR_ROLE_NEXT_STATE";
  }
  return "RECUR_ROLE_INPUT";
}

const char *initEnum(recur_init_kind init) {
  switch (init) {
  case RECUR_INIT_NONE:
    return "RECUR_INIT_NONE";
  case RECUR_INIT_ZEROS:
    return "RECUR_INIT_ZEROS";
  case RECUR_INIT_ONES:
    return "RECUR_INIT_ONES";
  case RECUR_INIT_CONST:
    return "RECUR_INIT_CONST";
  case RECUR_INIT_PARAM:
    return "RECUR_INIT_PARAM";
  case RECUR_INIT_OTHER:
    return "RECUR_INIT_OTHER";
  }
  return "RECUR_INIT_NONE";
}

std::string upper(StringRef s) { return s.upper(); }

/// `f32[B, T, D = 256]`: the tensor's type for comments.
std::string typeComment(const TensorSignature &t) {
  std::string s = dtypeName(t.dtype).str() + "[";
  for (size_t i = 0; i < t.shape.size(); ++i) {
    if (i)
      s += ", ";
    s += t.dimNames[i];
    if (t.shape[i] >= 0 && t.dimNames[i] != std::to_string(t.shape[i]))
      s += " = " + std::to_string(t.shape[i]);
  }
  return s + "]";
}

/// The typed struct of one role's tensors: one recur_tensor per tensor, in
/// declaration order (the layout of an array of them).
void emitStruct(raw_ostream &os, const LayerSignature &sig, StringRef kind,
                ArrayRef<const TensorSignature *> tensors) {
  os << "/* The layer's " << kind << ", in declaration order. */\n";
  os << "typedef struct recur_" << sig.name << "_" << kind << " {\n";
  for (const TensorSignature *t : tensors)
    os << "  recur_tensor " << t->name << "; /* " << typeComment(*t) << " */\n";
  if (tensors.empty())
    os << "  recur_tensor none_; /* the layer has none */\n";
  os << "} recur_" << sig.name << "_" << kind << ";\n\n";
}

void emitArgTable(raw_ostream &os, const LayerSignature &sig, StringRef table,
                  ArrayRef<TensorSignature> tensors) {
  os << "static const recur_arg_desc recur_" << sig.name << "_" << table
     << "_[] = {\n";
  for (const TensorSignature &t : tensors) {
    os << "    {\"" << t.name << "\", " << roleEnum(t.role) << ", " << t.index
       << ", RECUR_" << upper(dtypeName(t.dtype)) << ", " << t.shape.size()
       << ", {";
    for (size_t i = 0; i < t.shape.size(); ++i)
      os << (i ? ", " : "") << t.shape[i];
    os << "}, {";
    for (size_t i = 0; i < t.dimNames.size(); ++i)
      os << (i ? ", " : "") << "\"" << t.dimNames[i] << "\"";
    os << "}, " << initEnum(t.init) << ", "
       << llvm::formatv("{0:e17}", t.initValue) << ", " << t.initParam << ", \""
       << t.initSpelling << "\"},\n";
  }
  if (tensors.empty())
    os << "    {0},\n";
  os << "};\n";
}

} // namespace

std::string mlir::recur::emitLayerHeader(const LayerSignature &sig,
                                         StringRef source, StringRef target) {
  std::string text;
  llvm::raw_string_ostream os(text);
  std::string L = sig.name, guard = "RECUR_LAYER_" + upper(L) + "_H";
  std::vector<const TensorSignature *> byRole[5];
  for (const auto *list : {&sig.args, &sig.results})
    for (const TensorSignature &t : *list)
      byRole[t.role].push_back(&t);

  os << "/* " << L << ".h: the C interface of layer " << L << ", compiled by "
     << "recurc from " << source << "\n * for " << target
     << ". Generated: do not edit.\n *\n";
  os << " * Link " << L << ".o with librecur_rt (and OpenMP, libm). Every "
     << "function returns a\n * recur_status; recur_last_error() says what "
     << "went wrong (see recur/Runtime/recur_rt.h).\n *\n";
  os << " * Runtime dimensions:";
  for (const std::string &d : sig.runtimeDims)
    os << " " << d;
  if (sig.runtimeDims.empty())
    os << " none";
  os << "\n";
  for (auto [role, title] : {std::pair{RECUR_ROLE_INPUT, "Inputs"},
                             {RECUR_ROLE_PARAM, "Params"},
                             {RECUR_ROLE_STATE, "States"},
                             {RECUR_ROLE_OUTPUT, "Outputs"}}) {
    os << " * " << title << ":";
    if (byRole[role].empty())
      os << " none";
    os << "\n";
    for (const TensorSignature *t : byRole[role]) {
      os << " *   " << t->name << ": " << typeComment(*t);
      if (!t->initSpelling.empty())
        os << ", init " << t->initSpelling;
      os << "\n";
    }
  }
  if (sig.batchDim >= 0)
    os << " * States are per row of " << sig.runtimeDims[sig.batchDim] << ".\n";
  if (sig.timeDim >= 0)
    os << " * recur_" << L << "_step advances " << sig.stepLength << " position"
       << (sig.stepLength == 1 ? "" : "s") << " of "
       << sig.runtimeDims[sig.timeDim] << " per call.\n";
  os << " */\n\n";
  os << "#ifndef " << guard << "\n#define " << guard << "\n\n";
  os << "#include \"recur/Runtime/recur_rt.h\"\n\n";
  os << "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n";
  if (sig.deviceKernel)
    os << "/* The kernel in " << L << ".o, for CUDA: every buffer in `in` "
       << "and `out` is\n * device memory. The functions below copy the "
       << "tensors to the device and\n * back. */\nvoid " << kernelSymbol(L)
       << "(int64_t *in, int64_t *out);\n";
  else
    os << "/* The kernel in " << L << ".o; call it through the functions "
       << "below. */\nvoid " << kernelSymbol(L)
       << "(int64_t *in, int64_t *out);\n"
       << "int64_t " << workspaceSymbol(L)
       << "(int64_t *in, int64_t threads);\n";
  if (sig.hasBackward)
    os << "void " << backwardSymbol(L) << "(int64_t *in, int64_t *out);\n";
  os << "\n";
  emitStruct(os, sig, "inputs", byRole[RECUR_ROLE_INPUT]);
  emitStruct(os, sig, "params", byRole[RECUR_ROLE_PARAM]);
  emitStruct(os, sig, "outputs", byRole[RECUR_ROLE_OUTPUT]);
  if (sig.hasBackward)
    emitStruct(os, sig, "states", byRole[RECUR_ROLE_STATE]);

  os << "static const char *const recur_" << L << "_runtime_dims_[] = {";
  for (size_t i = 0; i < sig.runtimeDims.size(); ++i)
    os << (i ? ", " : "") << "\"" << sig.runtimeDims[i] << "\"";
  if (sig.runtimeDims.empty())
    os << "0";
  os << "};\n";
  bool anyMin =
      llvm::any_of(sig.runtimeDimMin, [](int64_t m) { return m > 0; });
  if (anyMin) {
    os << "static const int64_t recur_" << L << "_runtime_dim_min_[] = {";
    for (size_t i = 0; i < sig.runtimeDimMin.size(); ++i)
      os << (i ? ", " : "") << sig.runtimeDimMin[i];
    os << "};\n";
  }
  emitArgTable(os, sig, "args", sig.args);
  emitArgTable(os, sig, "results", sig.results);
  os << "static const recur_layer_desc recur_" << L << "_layer_ = {\n"
     << "    RECUR_ABI_VERSION, \"" << L << "\", "
     << llvm::formatv("{0:x}", sig.id) << "ull, " << sig.runtimeDims.size()
     << ", recur_" << L << "_runtime_dims_, " << sig.batchDim << ", "
     << sig.timeDim << ", " << sig.stepLength << ",\n    " << sig.numInputs
     << ", " << sig.numParams << ", " << sig.numStates << ", " << sig.numOutputs
     << ", " << sig.args.size() << ", recur_" << L << "_args_, "
     << sig.results.size() << ", recur_" << L << "_results_, "
     << kernelSymbol(L) << ", "
     << (sig.deviceKernel ? std::string("0") : workspaceSymbol(L)) << ", "
     << (sig.hasBackward ? backwardSymbol(L) : std::string("0")) << ",\n    "
     << (sig.deviceKernel ? "RECUR_DEVICE_CUDA" : "RECUR_DEVICE_CPU") << ", "
     << (anyMin ? "recur_" + L + "_runtime_dim_min_" : std::string("0")) << ", "
     << (sig.outputDestinations() ? 1 : 0) << "};\n\n";

  std::string in = "const recur_" + L + "_inputs *inputs",
              params = "const recur_" + L + "_params *params",
              out = "const recur_" + L + "_outputs *outputs";
  os << "/* The descriptor, for the generic runtime calls. */\n"
     << "static inline const recur_layer_desc *recur_" << L
     << "_layer(void) { return &recur_" << L << "_layer_; }\n\n";
  os << "/* Runs a whole sequence; with a state, starts from it and leaves "
        "the final\n * state in it (NULL: start from the init rules). */\n"
     << "static inline recur_status recur_" << L << "_forward(" << in << ", "
     << params << ",\n    recur_state *state, " << out << ") {\n"
     << "  return recur_forward(&recur_" << L
     << "_layer_, (const recur_tensor *)inputs,\n"
     << "      (const recur_tensor *)params, state, (const recur_tensor "
        "*)outputs);\n}\n\n";
  os << "/* One decoding step (the state is required). */\n"
     << "static inline recur_status recur_" << L << "_step(" << in << ", "
     << params << ",\n    recur_state *state, " << out << ") {\n"
     << "  return recur_step(&recur_" << L
     << "_layer_, (const recur_tensor *)inputs,\n"
     << "      (const recur_tensor *)params, state, (const recur_tensor "
        "*)outputs);\n}\n\n";
  os << "/* A state for `batch` rows at the init rules (params: only for an "
        "init that\n * names a param; may be NULL otherwise). */\n"
     << "static inline recur_status recur_" << L
     << "_state_create(int64_t batch, " << params
     << ",\n    recur_state **out) {\n"
     << "  return recur_state_create(&recur_" << L
     << "_layer_, batch, (const recur_tensor *)params, out);\n}\n\n";
  os << "/* Resets row `row` of the state (every row when row < 0). */\n"
     << "static inline recur_status recur_" << L
     << "_state_reset(recur_state *state, int64_t row,\n    " << params
     << ") {\n"
     << "  return recur_state_reset(state, row, (const recur_tensor "
        "*)params);\n}\n\n";
  os << "/* An upper bound on the bytes one forward or step call allocates, "
        "given the\n * runtime dimensions in the order above (for a step, "
        "the time dimension\n * is the step length), at the current thread "
        "count. */\n"
     << "static inline recur_status recur_" << L
     << "_workspace_size(const int64_t *dims,\n    size_t *bytes) {\n"
     << "  return recur_workspace_size(&recur_" << L
     << "_layer_, dims, bytes);\n}\n\n";
  if (sig.hasBackward) {
    std::string states = "const recur_" + L + "_states *";
    os << "/* Gradients of a forward call from `state` (NULL: the init rules; "
          "not changed):\n * d_outputs = dL/d(outputs), d_states = "
          "dL/d(final states) or NULL (zero);\n * writes dL/d(inputs, params, "
          "initial states) into the grad_ structs (NULL, or\n * a tensor with "
          "NULL data: not wanted). */\n"
       << "static inline recur_status recur_" << L << "_backward(" << in << ", "
       << params << ",\n    const recur_state *state, "
       << "const recur_" << L << "_outputs *d_outputs,\n    " << states
       << "d_states, const recur_" << L << "_inputs *grad_inputs,\n    "
       << "const recur_" << L << "_params *grad_params, " << states
       << "grad_states) {\n"
       << "  return recur_backward(&recur_" << L
       << "_layer_, (const recur_tensor *)inputs,\n"
       << "      (const recur_tensor *)params, state, (const recur_tensor "
          "*)d_outputs,\n"
       << "      (const recur_tensor *)d_states, (const recur_tensor "
          "*)grad_inputs,\n"
       << "      (const recur_tensor *)grad_params, (const recur_tensor "
          "*)grad_states);\n}\n\n";
  }
  os << "#ifdef __cplusplus\n} /* extern \"C\" */\n#endif\n\n#endif /* "
     << guard << " */\n";
  return text;
}
