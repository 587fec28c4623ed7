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
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/OpenMP/OpenMPToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Analysis/TargetLibraryInfo.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"

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

FailureOr<std::unique_ptr<llvm::Module>>
mlir::recur::lowerToLLVMIR(ModuleOp module, llvm::LLVMContext &context,
                           const CpuPipelineOptions &options) {
  SmallVector<std::string> layers = layerFunctionNames(module);
  PassManager pm(module->getContext());
  buildCpuLoweringPipeline(pm, options);
  if (failed(pm.run(module)))
    return failure();
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, context, "recur");
  if (!llvmModule)
    return module.emitError("translation to LLVM IR failed"), failure();
  if (failed(exportLayerEntries(module, *llvmModule, layers,
                                /*withWorkspace=*/true)))
    return failure();
  return llvmModule;
}

llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
mlir::recur::createCpuTargetMachine(const CpuTargetOptions &options) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
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
