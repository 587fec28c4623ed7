//===- CpuTarget.cpp - layer functions to CPU object code -----------------===//
//
// Part of the Recur project.
//
//===----------------------------------------------------------------------===//

#include "recur/Target/CpuTarget.h"

#include "recur/Conversion/RecurToLoops/RecurToLoops.h"
#include "recur/Target/LayerSignature.h"
#include "recur/Target/Pipelines.h"
#include "recur/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Rewrite/FrozenRewritePatternSet.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/OpenMP/OpenMPToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Analysis/TargetLibraryInfo.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/xxhash.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"

#include <mutex>

using namespace mlir;
using namespace mlir::recur;

void mlir::recur::registerCpuTranslations(DialectRegistry &registry) {
  // The pipeline's passes need the dialects' external interface models
  // (bufferization, conversion to LLVM) that the upstream extensions
  // register.
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerGlueAdjointModels(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerOpenMPDialectTranslation(registry);
}

namespace {

/// Appends the leaves of `value` (a scalar, or a struct or array of them)
/// to `leaves`, in memory order.
void flattenAggregate(llvm::IRBuilder<> &b, llvm::Value *value,
                      SmallVectorImpl<llvm::Value *> &leaves) {
  llvm::Type *type = value->getType();
  unsigned count = 0;
  if (auto *s = dyn_cast<llvm::StructType>(type))
    count = s->getNumElements();
  else if (auto *a = dyn_cast<llvm::ArrayType>(type))
    count = a->getNumElements();
  else {
    leaves.push_back(value);
    return;
  }
  for (unsigned i = 0; i < count; ++i)
    flattenAggregate(b, b.CreateExtractValue(value, i), leaves);
}

/// Defines the exported function `name` of type (ptr in, <second>) ->
/// <result> and loads its first `words` parameters of `callee` from
/// consecutive 64-bit words of `in` into `args`; `b` is left in its body.
llvm::Function *defineEntry(llvm::Module &module, StringRef name,
                            llvm::Type *result, llvm::Type *second,
                            StringRef secondName, llvm::Function &callee,
                            unsigned words, llvm::IRBuilder<> &b,
                            SmallVectorImpl<llvm::Value *> &args) {
  llvm::LLVMContext &ctx = module.getContext();
  auto *ptrTy = llvm::PointerType::getUnqual(ctx);
  auto *i64 = llvm::Type::getInt64Ty(ctx);
  auto *entry = llvm::Function::Create(
      llvm::FunctionType::get(result, {ptrTy, second}, false),
      llvm::Function::ExternalLinkage, name, module);
  llvm::Value *in = entry->getArg(0);
  in->setName("in");
  entry->getArg(1)->setName(secondName);
  b.SetInsertPoint(llvm::BasicBlock::Create(ctx, "entry", entry));
  for (unsigned k = 0; k < words; ++k)
    args.push_back(b.CreateLoad(callee.getArg(k)->getType(),
                                b.CreateConstGEP1_64(i64, in, k)));
  callee.setLinkage(llvm::GlobalValue::InternalLinkage);
  return entry;
}

/// Adds `recur_<F>_kernel(ptr in, ptr out)`: argument k of F (a pointer or
/// an i64 of a flattened memref descriptor) is word k of `in`; the leaves of
/// F's result go to consecutive words of `out`.
void addPackedEntry(llvm::Module &module, llvm::Function &impl,
                    StringRef layer) {
  llvm::LLVMContext &ctx = module.getContext();
  auto *i64 = llvm::Type::getInt64Ty(ctx);
  llvm::IRBuilder<> b(ctx);
  SmallVector<llvm::Value *> args;
  llvm::Function *entry = defineEntry(
      module, kernelSymbol(layer), llvm::Type::getVoidTy(ctx),
      llvm::PointerType::getUnqual(ctx), "out", impl, impl.arg_size(), b, args);
  llvm::Value *result = b.CreateCall(&impl, args);
  if (!impl.getReturnType()->isVoidTy()) {
    SmallVector<llvm::Value *> leaves;
    flattenAggregate(b, result, leaves);
    for (auto [k, leaf] : llvm::enumerate(leaves))
      b.CreateStore(leaf, b.CreateConstGEP1_64(i64, entry->getArg(1), k));
  }
  b.CreateRetVoid();
  impl.setName("recur_" + layer + "_impl");
}

/// Adds `recur_<F>_workspace(ptr in, i64 threads) -> i64` around the
/// bound `bound` (recur-workspace-bound's F_workspace, whose arguments are
/// F's then the thread count): the same `in` words as the kernel entry.
void addPackedWorkspace(llvm::Module &module, llvm::Function &bound,
                        StringRef layer) {
  auto *i64 = llvm::Type::getInt64Ty(module.getContext());
  llvm::IRBuilder<> b(module.getContext());
  SmallVector<llvm::Value *> args;
  unsigned words = bound.arg_size() - 1;
  llvm::Function *entry = defineEntry(module, workspaceSymbol(layer), i64, i64,
                                      "threads", bound, words, b, args);
  args.push_back(b.CreateIntCast(entry->getArg(1),
                                 bound.getArg(words)->getType(),
                                 /*isSigned=*/true));
  llvm::Value *bytes = b.CreateCall(&bound, args);
  b.CreateRet(b.CreateIntCast(bytes, i64, /*isSigned=*/true));
}

} // namespace

SmallVector<std::string> mlir::recur::layerFunctionNames(ModuleOp module) {
  SmallVector<std::string> layers;
  for (auto func : module.getOps<func::FuncOp>())
    if (!func.isExternal())
      layers.push_back(func.getSymName().str());
  return layers;
}

LogicalResult mlir::recur::exportLayerEntries(ModuleOp module,
                                              llvm::Module &llvmModule,
                                              ArrayRef<std::string> layers,
                                              bool withWorkspace) {
  for (const std::string &layer : layers) {
    llvm::Function *impl = llvmModule.getFunction(layer);
    if (!impl)
      return module.emitError()
             << "layer '" << layer << "' is missing after lowering";
    addPackedEntry(llvmModule, *impl, layer);
    if (!withWorkspace)
      continue;
    llvm::Function *bound =
        llvmModule.getFunction((layer + kWorkspaceSuffix).str());
    if (!bound)
      return module.emitError() << "the workspace bound of layer '" << layer
                                << "' is missing after lowering";
    addPackedWorkspace(llvmModule, *bound, layer);
  }
  // The kernel entries are the object's only exports: helpers the lowering
  // adds (dealloc_helper, outlined OpenMP bodies, GPU module globals) and
  // constant globals stay private, so any number of layer objects link
  // into one program. LLVM's own globals (llvm.global_ctors, which loads
  // the GPU modules) keep their linkage.
  StringSet<> entries;
  for (const std::string &layer : layers) {
    entries.insert(kernelSymbol(layer));
    if (withWorkspace)
      entries.insert(workspaceSymbol(layer));
  }
  for (llvm::GlobalValue &value : llvmModule.global_values())
    if (!value.isDeclaration() && !entries.contains(value.getName()) &&
        !value.getName().starts_with("llvm."))
      value.setLinkage(llvm::GlobalValue::InternalLinkage);
  return success();
}

namespace {

/// A kernel: an internal function around an OpenMP parallel region (the
/// functions recur-outline-parallel makes; the layer functions are external
/// until their entries are exported).
bool isKernel(LLVM::LLVMFuncOp func) {
  return !func.isExternal() && func.getLinkage() == LLVM::Linkage::Internal &&
         func.walk([](omp::ParallelOp) { return WalkResult::interrupt(); })
             .wasInterrupted();
}

/// Adds to `needed` the module-level operations `root` refers to, directly
/// or through the ones it adds; fails where a reference cannot be known.
LogicalResult collectReferenced(Operation *root, SymbolTable &symbols,
                                SmallPtrSetImpl<Operation *> &needed) {
  SmallVector<Operation *> work{root};
  while (!work.empty()) {
    Operation *op = work.pop_back_val();
    // A kernel's globals are copied into each object that carries it: only
    // constants can be.
    if (auto global = dyn_cast<LLVM::GlobalOp>(op))
      if (!global.getConstant())
        return failure();
    // (Nor does it follow an operation's own references: a personality.)
    WalkResult refers = op->getAttrDictionary().walk(
        [](SymbolRefAttr) { return WalkResult::interrupt(); });
    if (refers.wasInterrupted())
      return failure();
    for (Region &region : op->getRegions()) {
      std::optional<SymbolTable::UseRange> uses =
          SymbolTable::getSymbolUses(&region);
      if (!uses)
        return failure();
      for (const SymbolTable::SymbolUse &use : *uses) {
        Operation *target =
            symbols.lookup(use.getSymbolRef().getRootReference());
        if (!target)
          return failure();
        if (needed.insert(target).second)
          work.push_back(target);
      }
    }
  }
  return success();
}

/// The name of a kernel's code: a hash of `text` (its module printed with
/// the kernel under a fixed name, and the target).
std::string kernelCodeName(StringRef text) {
  llvm::XXH128_hash_t hash =
      llvm::xxh3_128bits(llvm::arrayRefFromStringRef(text));
  std::string symbol;
  llvm::raw_string_ostream os(symbol);
  os << "__recur_kernel_" << llvm::format_hex_no_prefix(hash.high64, 16)
     << llvm::format_hex_no_prefix(hash.low64, 16);
  return symbol;
}

/// `text`, the assembly of one kernel's module, ready to join a layer
/// object's: its local labels (.L...) prefixed with `symbol` so that they
/// are its own, and no .file or .ident of its own.
std::string ownLabels(StringRef text, StringRef symbol) {
  // ($ is not one: it starts an immediate, $.LCPI0_0.)
  auto isNameChar = [](char c) {
    return llvm::isAlnum(c) || c == '_' || c == '.' || c == '@';
  };
  std::string out;
  out.reserve(text.size() + text.size() / 4);
  while (!text.empty()) {
    auto [line, rest] = text.split('\n');
    text = rest;
    StringRef directive = line.ltrim();
    if (directive.starts_with(".file") || directive.starts_with(".ident"))
      continue;
    bool quoted = false, escaped = false;
    for (size_t i = 0; i < line.size(); ++i) {
      char c = line[i];
      if (quoted && escaped)
        escaped = false;
      else if (quoted && c == '\\')
        escaped = true;
      else if (c == '"')
        quoted = !quoted;
      out += c;
      if (!quoted && c == '.' && i + 1 < line.size() && line[i + 1] == 'L' &&
          (i == 0 || !isNameChar(line[i - 1]))) {
        out += 'L';
        out += symbol;
        out += '_';
        ++i;
      }
    }
    out += '\n';
  }
  return out;
}

/// The function `call` calls by name, or null.
FlatSymbolRefAttr directCallee(CallOpInterface call) {
  return dyn_cast_if_present<FlatSymbolRefAttr>(
      dyn_cast<SymbolRefAttr>(call.getCallableForCallee()));
}

/// The kernels of `module` that nothing but calls refers to (those
/// copyCpuKernels can copy and declareCpuKernels declare apart).
SmallVector<LLVM::LLVMFuncOp> calledKernels(ModuleOp module) {
  SmallVector<LLVM::LLVMFuncOp> kernels;
  llvm::DenseSet<StringAttr> called;
  for (auto func : module.getOps<LLVM::LLVMFuncOp>())
    if (isKernel(func)) {
      kernels.push_back(func);
      called.insert(func.getSymNameAttr());
    }
  std::optional<SymbolTable::UseRange> uses =
      SymbolTable::getSymbolUses(&module.getBodyRegion());
  if (!uses)
    return {};
  for (const SymbolTable::SymbolUse &use : *uses)
    if (!isa<CallOpInterface>(use.getUser()))
      called.erase(use.getSymbolRef().getRootReference());
  llvm::erase_if(kernels, [&](LLVM::LLVMFuncOp func) {
    return !called.contains(func.getSymNameAttr());
  });
  return kernels;
}

/// A value a kernel may make itself: the result of an operation with no
/// operands, no regions and no effects (a constant, zero, undef).
Operation *constantSource(Value value) {
  Operation *def = value.getDefiningOp();
  if (def && def->getNumOperands() == 0 && def->getNumRegions() == 0 &&
      def->getNumResults() == 1 && isMemoryEffectFree(def))
    return def;
  return nullptr;
}

/// What `value` is when it is a field read back from an aggregate built of
/// insertions (a memref descriptor the host assembles for a call): the
/// value inserted there, else `value`.
Value insertedSource(Value value) {
  auto extract = value.getDefiningOp<LLVM::ExtractValueOp>();
  if (!extract)
    return value;
  ArrayRef<int64_t> position = extract.getPosition();
  Value container = extract.getContainer();
  while (auto insert = container.getDefiningOp<LLVM::InsertValueOp>()) {
    ArrayRef<int64_t> at = insert.getPosition();
    if (at == position)
      return insertedSource(insert.getValue());
    size_t common = std::min(at.size(), position.size());
    if (at.take_front(common) == position.take_front(common))
      return value;
    container = insert.getContainer();
  }
  return value;
}

/// Each kernel with the arguments that every call passes the same constant
/// made inside it instead, without the arguments it never reads (the fields
/// of a memref descriptor that its static shape makes constant, mostly),
/// its calls to match, and marked as never unwinding. LLVM does the same
/// (IPSCCP, dead argument elimination, function attributes) for a kernel it
/// sees with its callers; a kernel compiled apart is a declaration to them.
void tidyKernels(ModuleOp module) {
  SmallVector<LLVM::LLVMFuncOp> kernels = calledKernels(module);
  if (kernels.empty())
    return;
  // Their calls (a kernel called otherwise keeps its arguments).
  DenseMap<StringAttr, SmallVector<LLVM::CallOp>> calls;
  llvm::DenseSet<StringAttr> otherwise;
  for (LLVM::LLVMFuncOp func : kernels)
    calls[func.getSymNameAttr()];
  module.walk([&](CallOpInterface call) {
    FlatSymbolRefAttr callee = directCallee(call);
    if (!callee)
      return;
    auto it = calls.find(callee.getAttr());
    if (it == calls.end())
      return;
    if (auto llvmCall = dyn_cast<LLVM::CallOp>(*call))
      it->second.push_back(llvmCall);
    else
      otherwise.insert(callee.getAttr());
  });
  for (LLVM::LLVMFuncOp func : kernels) {
    func.setNoUnwind(true);
    // (A call's argument attributes would need erasing too.)
    SmallVector<LLVM::CallOp> &sites = calls[func.getSymNameAttr()];
    if (sites.empty() || otherwise.contains(func.getSymNameAttr()) ||
        llvm::any_of(sites,
                     [](LLVM::CallOp call) { return call.getArgAttrsAttr(); }))
      continue;
    OpBuilder b = OpBuilder::atBlockBegin(&func.getBody().front());
    for (BlockArgument argument : func.getArguments()) {
      if (argument.use_empty())
        continue;
      unsigned i = argument.getArgNumber();
      Operation *first =
          constantSource(insertedSource(sites.front().getArgOperands()[i]));
      if (!first || !llvm::all_of(sites, [&](LLVM::CallOp call) {
            Operation *other =
                constantSource(insertedSource(call.getArgOperands()[i]));
            return other &&
                   OperationEquivalence::isEquivalentTo(
                       first, other, OperationEquivalence::IgnoreLocations);
          }))
        continue;
      argument.replaceAllUsesWith(b.clone(*first)->getResult(0));
    }
    // Folded (a descriptor's fields read back where they were inserted)
    // and dead code gone, so that what the body never reads is unused.
    GreedyRewriteConfig config;
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    (void)applyPatternsGreedily(func.getBody(), FrozenRewritePatternSet(),
                                config);
    llvm::BitVector dead(func.getNumArguments());
    for (BlockArgument argument : func.getArguments())
      dead[argument.getArgNumber()] = argument.use_empty();
    if (dead.none())
      continue;
    LLVM::LLVMFunctionType type = func.getFunctionType();
    SmallVector<Type> kept;
    for (auto [i, param] : llvm::enumerate(type.getParams()))
      if (!dead[i])
        kept.push_back(param);
    function_interface_impl::eraseFunctionArguments(
        func, dead,
        LLVM::LLVMFunctionType::get(type.getReturnType(), kept,
                                    type.isVarArg()));
    for (LLVM::CallOp call : sites) {
      MutableOperandRange arguments = call.getCalleeOperandsMutable();
      for (int i = dead.size() - 1; i >= 0; --i)
        if (dead[i])
          arguments.erase(i);
    }
  }
}

} // namespace

LogicalResult
mlir::recur::runCpuLoweringPipeline(ModuleOp module,
                                    const CpuPipelineOptions &options) {
  PassManager pm(module->getContext());
  buildCpuLoweringPipeline(pm, options);
  if (failed(pm.run(module)))
    return failure();
  tidyKernels(module);
  return success();
}

SmallVector<CpuKernel> mlir::recur::copyCpuKernels(ModuleOp module,
                                                   StringRef salt) {
  SmallVector<CpuKernel> kernels;
  SymbolTable symbols(module);
  for (LLVM::LLVMFuncOp func : calledKernels(module)) {
    SmallPtrSet<Operation *, 8> needed;
    needed.insert(func);
    if (failed(collectReferenced(func, symbols, needed)))
      continue;
    // The kernel's module: what it needs, in the layer module's order.
    OwningOpRef<ModuleOp> own = ModuleOp::create(func.getLoc());
    (*own)->setAttrs(module->getAttrDictionary());
    OpBuilder b = OpBuilder::atBlockEnd(own->getBody());
    LLVM::LLVMFuncOp copy;
    for (Operation &op : module.getBody()->getOperations())
      if (needed.contains(&op)) {
        Operation *clone = b.clone(op);
        if (&op == func.getOperation())
          copy = cast<LLVM::LLVMFuncOp>(clone);
      }
    copy.setSymName("__recur_kernel");
    copy.setLinkage(LLVM::Linkage::External);
    copy->removeAttr(copy.getPassthroughAttrName());
    std::string text;
    {
      llvm::raw_string_ostream os(text);
      own->print(os);
      os << salt;
    }
    std::string symbol = kernelCodeName(text);
    copy.setSymName(symbol);
    kernels.push_back({func.getSymName().str(), symbol, std::move(own)});
  }
  return kernels;
}

void mlir::recur::declareCpuKernels(ModuleOp module,
                                    ArrayRef<const CpuKernel *> kernels) {
  MLIRContext *context = module.getContext();
  SymbolTable symbols(module);
  DenseMap<StringAttr, FlatSymbolRefAttr> renamed;
  for (const CpuKernel *kernel : kernels) {
    auto func = symbols.lookup<LLVM::LLVMFuncOp>(kernel->function);
    if (!func)
      continue;
    renamed[func.getSymNameAttr()] =
        FlatSymbolRefAttr::get(context, kernel->symbol);
    symbols.remove(func);
    // One declaration for equal kernels.
    if (symbols.lookup(kernel->symbol)) {
      func.erase();
      continue;
    }
    func.getBody().dropAllReferences();
    func.getBody().getBlocks().clear();
    func.setSymName(kernel->symbol);
    func.setLinkage(LLVM::Linkage::External);
    func.setVisibility_(LLVM::Visibility::Hidden);
    func->removeAttr(func.getPassthroughAttrName());
    symbols.insert(func);
  }
  if (renamed.empty())
    return;
  module.walk([&](CallOpInterface call) {
    FlatSymbolRefAttr callee = directCallee(call);
    if (!callee)
      return;
    auto it = renamed.find(callee.getAttr());
    if (it != renamed.end())
      call.setCalleeFromCallable(it->second);
  });
}

FailureOr<std::unique_ptr<llvm::Module>> mlir::recur::translateLayersToLLVMIR(
    ModuleOp module, ArrayRef<std::string> layers, llvm::LLVMContext &context) {
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, context, "recur");
  if (!llvmModule)
    return module.emitError("translation to LLVM IR failed"), failure();
  if (failed(exportLayerEntries(module, *llvmModule, layers,
                                /*withWorkspace=*/true)))
    return failure();
  return llvmModule;
}

FailureOr<std::unique_ptr<llvm::Module>>
mlir::recur::lowerToLLVMIR(ModuleOp module, llvm::LLVMContext &context,
                           const CpuPipelineOptions &options) {
  SmallVector<std::string> layers = layerFunctionNames(module);
  if (failed(runCpuLoweringPipeline(module, options)))
    return failure();
  return translateLayersToLLVMIR(module, layers, context);
}

llvm::Expected<std::string>
mlir::recur::compileCpuKernel(const CpuKernel &kernel,
                              llvm::TargetMachine &machine, unsigned optLevel) {
  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> module =
      translateModuleToLLVMIR(kernel.module.get(), context, "recur");
  if (!module)
    return llvm::createStringError("cannot translate kernel " + kernel.symbol +
                                   " to LLVM IR");
  llvm::Function *entry = module->getFunction(kernel.symbol);
  if (!entry)
    return llvm::createStringError("kernel " + kernel.symbol +
                                   " is missing after translation");
  // Weak: equal names are equal kernels, any of them will do.
  entry->setLinkage(llvm::GlobalValue::WeakODRLinkage);
  entry->setVisibility(llvm::GlobalValue::HiddenVisibility);
  // The rest is the kernel's own: local symbols, named after it where they
  // have names (a layer object has several kernels).
  for (llvm::GlobalValue &value : module->global_values()) {
    if (value.isDeclaration() || &value == entry ||
        value.getName().starts_with("llvm.") || value.hasPrivateLinkage())
      continue;
    value.setLinkage(llvm::GlobalValue::InternalLinkage);
    if (!value.getName().starts_with(kernel.symbol))
      value.setName(kernel.symbol + "." + value.getName());
  }
  optimizeModule(*module, machine, optLevel);
  SmallString<0> text;
  {
    llvm::raw_svector_ostream os(text);
    llvm::legacy::PassManager pm;
    if (machine.addPassesToEmitFile(pm, os, nullptr,
                                    llvm::CodeGenFileType::AssemblyFile))
      return llvm::createStringError("the target cannot emit assembly");
    pm.run(*module);
  }
  return ownLabels(text, kernel.symbol);
}

llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
mlir::recur::createCpuTargetMachine(const CpuTargetOptions &options) {
  // Once, whatever thread asks first (recurc makes machines on several).
  static std::once_flag initialized;
  std::call_once(initialized, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    // Layer objects take shared kernels as module-level assembly.
    llvm::InitializeNativeTargetAsmParser();
  });
  llvm::Triple triple(llvm::sys::getDefaultTargetTriple());
  std::string error;
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return llvm::createStringError(error);
  std::string cpu = options.cpu, features;
  if (cpu == "native") {
    cpu = llvm::sys::getHostCPUName().str();
    llvm::SubtargetFeatures f;
    for (const auto &[name, on] : llvm::sys::getHostCPUFeatures())
      f.AddFeature(name, on);
    features = f.getString();
  }
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, cpu, features, llvm::TargetOptions(), llvm::Reloc::PIC_,
      std::nullopt,
      options.optLevel >= 3   ? llvm::CodeGenOptLevel::Aggressive
      : options.optLevel == 0 ? llvm::CodeGenOptLevel::None
                              : llvm::CodeGenOptLevel::Default));
  if (!machine)
    return llvm::createStringError("cannot create a target machine for " +
                                   triple.str() + " cpu " + cpu);
  if (!machine->getMCSubtargetInfo()->isCPUStringValid(cpu))
    return llvm::createStringError("unknown CPU '" + cpu + "' for " +
                                   triple.str());
  return machine;
}

/// The vector forms of the math functions the kernels call, for an AVX2
/// target: librecur_rt's entry points (lib/Runtime/VectorMath.cpp, over
/// glibc's libmvec), 8 floats or 4 doubles at once, under both the libm
/// names and the LLVM intrinsics that lower to them.
static void addVectorMath(llvm::TargetLibraryInfoImpl &tlii) {
  struct Function {
    const char *f32[2], *f64[2], *vf32, *vf64;
  };
  static const Function kFunctions[] = {
      {{"expf", "llvm.exp.f32"},
       {"exp", "llvm.exp.f64"},
       "recur_rt_v8_expf",
       "recur_rt_v4_exp"},
      {{"logf", "llvm.log.f32"},
       {"log", "llvm.log.f64"},
       "recur_rt_v8_logf",
       "recur_rt_v4_log"},
      {{"sinf", "llvm.sin.f32"},
       {"sin", "llvm.sin.f64"},
       "recur_rt_v8_sinf",
       "recur_rt_v4_sin"},
      {{"cosf", "llvm.cos.f32"},
       {"cos", "llvm.cos.f64"},
       "recur_rt_v8_cosf",
       "recur_rt_v4_cos"},
      {{"tanhf", "llvm.tanh.f32"},
       {"tanh", "llvm.tanh.f64"},
       "recur_rt_v8_tanhf",
       "recur_rt_v4_tanh"},
  };
  std::vector<llvm::VecDesc> descs;
  for (const Function &f : kFunctions)
    for (int i = 0; i < 2; ++i) {
      descs.emplace_back(f.f32[i], f.vf32, llvm::ElementCount::getFixed(8),
                         /*Masked=*/false, "_ZGV_LLVM_N8v", std::nullopt);
      descs.emplace_back(f.f64[i], f.vf64, llvm::ElementCount::getFixed(4),
                         /*Masked=*/false, "_ZGV_LLVM_N4v", std::nullopt);
    }
  tlii.addVectorizableFunctions(descs);
}

void mlir::recur::optimizeModule(llvm::Module &module,
                                 llvm::TargetMachine &machine,
                                 unsigned optLevel) {
  module.setTargetTriple(machine.getTargetTriple());
  module.setDataLayout(machine.createDataLayout());
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PipelineTuningOptions tuning;
  tuning.LoopVectorization = optLevel >= 2;
  tuning.SLPVectorization = optLevel >= 2;
  // Loops that call exp & co. vectorize with librecur_rt's vector forms
  // where the chip has AVX2 (their registers); elsewhere they stay scalar.
  llvm::TargetLibraryInfoImpl tlii(machine.getTargetTriple());
  if (machine.getTargetTriple().isX86() &&
      machine.getMCSubtargetInfo()->checkFeatures("+avx2"))
    addVectorMath(tlii);
  fam.registerPass([&] { return llvm::TargetLibraryAnalysis(tlii); });
  llvm::PassBuilder pb(&machine, tuning);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::OptimizationLevel level = optLevel == 0   ? llvm::OptimizationLevel::O0
                                  : optLevel == 1 ? llvm::OptimizationLevel::O1
                                  : optLevel == 2 ? llvm::OptimizationLevel::O2
                                                  : llvm::OptimizationLevel::O3;
  llvm::ModulePassManager mpm = optLevel == 0
                                    ? pb.buildO0DefaultPipeline(level)
                                    : pb.buildPerModuleDefaultPipeline(level);
  mpm.run(module, mam);
}

llvm::Error mlir::recur::emitObjectFile(llvm::Module &module,
                                        llvm::TargetMachine &machine,
                                        llvm::raw_pwrite_stream &os) {
  llvm::legacy::PassManager pm;
  if (machine.addPassesToEmitFile(pm, os, nullptr,
                                  llvm::CodeGenFileType::ObjectFile))
    return llvm::createStringError("the target cannot emit object files");
  pm.run(module);
  return llvm::Error::success();
}
