//===- recurc.cpp - the Recur compiler driver -----------------------------===//
//
// Part of the Recur project.
//
// recurc SPEC.recur [--emit=mlir] [-o FILE] [--layer NAME[,...]] [-D
// NAME=VALUE]... recurc SPEC.recur --target=cpu -o OUTDIR [--layer NAME[,...]]
// [-D ...]
//     writes OUTDIR/<layer>.o and OUTDIR/<layer>.h for every layer
// recurc SPEC.recur --target=cpu --emit=llvm|obj|header -o FILE [...]
// recurc SPEC.recur --target=cuda[:sm_80,sm_90] -o OUTDIR [...]
// recurc SPEC.recur --target=cuda[:...] --emit=ptx|llvm|obj|header -o FILE
//
// Exit status: 0 on success, 1 when the spec has errors (reported as
// file:line:col: error: with the source line and a caret), the command line
// is wrong, or lowering fails. Nothing is written unless everything
// compiled.
//
//===----------------------------------------------------------------------===//

#include "CompileOptions.h"

#include "recur/Frontend/MLIRGen.h"
#include "recur/Frontend/Parser.h"
#include "recur/Target/CpuTarget.h"
#include "recur/Target/CudaTarget.h"
#include "recur/Target/LayerSignature.h"
#include "recur/Target/Pipelines.h"
#include "recur/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/Threading.h"
#include "llvm/Support/Timer.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Target/TargetMachine.h"

#include <cstdlib>
#include <memory>
#include <optional>

using namespace llvm;
using namespace recur::frontend;

namespace {
cl::OptionCategory recurcCategory("recurc options");
// Shared with recur-run (tools/common/CompileOptions.h).
recur::tools::CompileOptions compileOptions(recurcCategory);

cl::opt<std::string> inputFile(cl::Positional, cl::desc("<spec.recur>"),
                               cl::init("-"), cl::cat(recurcCategory));

cl::opt<std::string>
    outputFile("o",
               cl::desc("Write the output to <path>: a file (default: "
                        "standard output), or with --target=cpu and no "
                        "--emit the directory that receives <layer>.o and "
                        "<layer>.h"),
               cl::value_desc("path"), cl::init("-"), cl::cat(recurcCategory));

enum class Emit { Default, MLIR, LLVM, Obj, Header, PTX };
cl::opt<Emit> emit(
    "emit", cl::desc("What to produce"), cl::init(Emit::Default),
    cl::values(
        clEnumValN(Emit::MLIR, "mlir",
                   "the recur dialect IR (the default without --target)"),
        clEnumValN(Emit::LLVM, "llvm",
                   "optimized LLVM IR of the kernels (implies --target=cpu)"),
        clEnumValN(Emit::Obj, "obj",
                   "one object file with every layer compiled (implies "
                   "--target=cpu; needs -o)"),
        clEnumValN(Emit::Header, "header",
                   "the C header of each layer (implies --target=cpu)"),
        clEnumValN(Emit::PTX, "ptx",
                   "the PTX of every kernel for every chip (implies "
                   "--target=cuda)")),
    cl::cat(recurcCategory));

cl::opt<std::string> target(
    "target",
    cl::desc("Compile for a backend: cpu (x86-64 object code), or cuda, "
             "cuda:sm_80, cuda:sm_80,sm_90 (host object code launching "
             "kernels assembled by the CUDA toolkit's ptxas for each chip, "
             "default sm_90, packed in an embedded fat binary with the PTX "
             "of the last chip). Without --emit, -o names a directory "
             "that receives <layer>.o and <layer>.h (forward, step and, "
             "where it can be derived, backward); link with librecur_rt"),
    cl::value_desc("backend"), cl::cat(recurcCategory));

cl::opt<bool> noBackward(
    "no-backward",
    cl::desc("Compile the forward only (for inference): no backward kernel, "
             "no recur_<layer>_backward in the header; a quarter to a half "
             "of the compile time of a layer with its backward"),
    cl::cat(recurcCategory));

cl::opt<std::string> cpuName(
    "cpu",
    cl::desc("The CPU the object code is for (an LLVM CPU name, or native); "
             "the default runs on any x86-64 with AVX2 and FMA"),
    cl::value_desc("name"), cl::init("x86-64-v3"), cl::cat(recurcCategory));

cl::opt<unsigned> optLevel("O", cl::Prefix,
                           cl::desc("LLVM optimization level, 0 to 3 "
                                    "(default 3)"),
                           cl::value_desc("level"), cl::init(3),
                           cl::cat(recurcCategory));

cl::opt<std::string>
    layerName("layer",
              cl::desc("Compile only the layer <name>, or the layers of a "
                       "comma-separated list (default: every layer in the "
                       "spec); each -D must name a dimension of one of them"),
              cl::value_desc("name[,name...]"), cl::cat(recurcCategory));

cl::list<std::string>
    defines("D", cl::Prefix,
            cl::desc("Set the compile-time dimension NAME to VALUE, "
                     "overriding its default (repeatable); a runtime "
                     "dimension given a value becomes compile-time"),
            cl::value_desc("NAME=VALUE"), cl::cat(recurcCategory));

cl::opt<bool> timePhases(
    "time-phases",
    cl::desc("Print how long each layer's compile phases took (lowering to "
             "LLVM IR, LLVM's optimizer, code generation), and the kernels "
             "that layers share (compiled once each), to stderr"),
    cl::cat(recurcCategory));

cl::opt<unsigned> jobs(
    "j",
    cl::desc("Compile up to <n> layers at once, each on a thread of its own "
             "(also --jobs=<n>; default 0: as many as the machine has "
             "hardware threads; 1: one after another; the CPU target only; "
             "the kernels layers share are compiled once each, on as many "
             "threads). The output is the same"),
    cl::value_desc("n"), cl::init(0), cl::Prefix, cl::cat(recurcCategory));
cl::alias jobsLong("jobs", cl::desc("Alias for -j"), cl::aliasopt(jobs),
                   cl::cat(recurcCategory));

/// Loads every dialect the CPU pipeline's passes depend on, which a pass
/// manager otherwise does when it starts: loading one while another thread
/// runs a pipeline in the same context would race.
void loadPipelineDialects(mlir::MLIRContext &context,
                          const mlir::recur::CpuPipelineOptions &options) {
  mlir::PassManager pm(&context);
  mlir::recur::buildCpuLoweringPipeline(pm, options);
  mlir::DialectRegistry registry;
  pm.getDependentDialects(registry);
  context.appendDialectRegistry(registry);
  for (StringRef name : registry.getDialectNames())
    context.getOrLoadDialect(name);
}

int fail(const Twine &message) {
  WithColor::error(errs(), "recurc") << message << "\n";
  return EXIT_FAILURE;
}

/// Writes `path` ("-": standard output) with `write`, opened only now so a
/// failed compile never clobbers it.
int writeFile(StringRef path, function_ref<void(raw_ostream &)> write) {
  std::string errorMessage;
  std::unique_ptr<ToolOutputFile> output =
      mlir::openOutputFile(path, &errorMessage);
  if (!output)
    return fail(errorMessage);
  write(output->os());
  output->keep();
  return EXIT_SUCCESS;
}

/// One layer compiled for the CPU: its signature, header and object code.
struct CompiledLayer {
  mlir::recur::LayerSignature signature;
  std::string header;
  SmallString<0> object;
};

/// The spec's name in generated comments.
std::string sourceName() {
  return inputFile == "-" ? std::string("<stdin>")
                          : sys::path::filename(inputFile).str();
}

/// Lowers every layer of `ir` for the CPU, or for CUDA when `cuda` is set,
/// and writes what --emit asks for.
int compileForTarget(mlir::ModuleOp ir, mlir::MLIRContext &context,
                     const mlir::recur::CudaTargetOptions *cuda) {
  if (emit == Emit::Obj && outputFile == "-")
    return fail("--emit=obj writes an object file: give it -o FILE");
  // Each layer's backward beside it, where it can be derived.
  if (!noBackward && failed(mlir::recur::deriveBackwardFunctions(
                         ir, compileOptions.backwardKeepStates)))
    return EXIT_FAILURE;
  if (cuda && emit == Emit::PTX) {
    llvm::LLVMContext llvmContext;
    auto lowered =
        mlir::recur::lowerToCuda(ir, llvmContext, *cuda, /*assemble=*/false);
    if (failed(lowered))
      return EXIT_FAILURE;
    return writeFile(outputFile, [&](raw_ostream &os) { os << lowered->ptx; });
  }
  std::vector<mlir::recur::LayerSignature> signatures;
  for (auto func : ir.getOps<mlir::func::FuncOp>()) {
    if (func.getSymName().ends_with(mlir::recur::kBackwardSuffix))
      continue;
    FailureOr<mlir::recur::LayerSignature> sig =
        mlir::recur::getLayerSignature(func);
    if (failed(sig))
      return EXIT_FAILURE;
    sig->deviceKernel = cuda != nullptr;
    sig->hasBackward = static_cast<bool>(ir.lookupSymbol(
        (func.getSymName() + mlir::recur::kBackwardSuffix).str()));
    signatures.push_back(std::move(*sig));
  }
  std::string targetName = "x86-64 (cpu " + cpuName + ")";
  if (cuda)
    targetName = "cuda (" + llvm::join(cuda->chips, ", ") + "; host x86-64 " +
                 cpuName + ")";
  if (emit == Emit::Header)
    return writeFile(outputFile, [&](raw_ostream &os) {
      for (const auto &sig : signatures)
        os << mlir::recur::emitLayerHeader(sig, sourceName(), targetName);
    });

  mlir::recur::CpuTargetOptions options;
  options.cpu = cpuName;
  options.optLevel = std::min(optLevel.getValue(), 3u);
  auto machine = mlir::recur::createCpuTargetMachine(options);
  if (!machine)
    return fail(toString(machine.takeError()));

  mlir::recur::CpuPipelineOptions pipelineOptions;
  pipelineOptions.streamStoreBytes = compileOptions.streamStoreBytesValue();

  // Each layer on its own, so that each gets its own object.
  bool perLayer = emit == Emit::Default;
  SmallVector<mlir::OwningOpRef<mlir::ModuleOp>> modules;
  if (perLayer) {
    for (const auto &sig : signatures) {
      mlir::OwningOpRef<mlir::ModuleOp> one(cast<mlir::ModuleOp>(ir->clone()));
      for (auto func :
           llvm::make_early_inc_range(one->getOps<mlir::func::FuncOp>()))
        if (func.getSymName() != sig.name &&
            func.getSymName() != sig.name + mlir::recur::kBackwardSuffix.str())
          func.erase();
      modules.push_back(std::move(one));
    }
  } else {
    modules.push_back(
        mlir::OwningOpRef<mlir::ModuleOp>(cast<mlir::ModuleOp>(ir->clone())));
  }

  // The phase timers, made here: a timer joins its group when made, and
  // layers may compile on several threads.
  TimerGroup phaseTimers("recurc", "recurc phases");
  std::vector<std::unique_ptr<Timer>> timers;
  for (size_t i = 0; i < modules.size(); ++i) {
    std::string what = perLayer ? signatures[i].name : std::string("module");
    for (auto [name, phase] : {std::pair{"lower", ": lowering to LLVM IR"},
                               std::pair{"opt", ": LLVM optimizer"},
                               std::pair{"codegen", ": code generation"}})
      timers.push_back(
          std::make_unique<Timer>(name, what + phase, phaseTimers));
  }
  auto timed = [&](size_t i, unsigned phase) {
    return timePhases ? timers[3 * i + phase].get() : nullptr;
  };

  // Up to `threads` tasks at once (each with its own LLVM context and
  // target machine; the MLIR context is shared, its dialects loaded first).
  // The CUDA path runs the toolkit's tools and stays sequential.
  unsigned threads = std::min<size_t>(
      jobs ? jobs.getValue()
           : llvm::hardware_concurrency().compute_thread_count(),
      std::max<size_t>(modules.size(), 1));
  if (cuda)
    threads = 1;
  else if (threads > 1)
    loadPipelineDialects(context, pipelineOptions);
  // Runs task(i) for every i < n, on up to `threads` threads, the
  // diagnostics in the order of i; true when every task succeeded.
  auto forEach = [&](size_t n, function_ref<LogicalResult(size_t)> task) {
    if (std::min<size_t>(threads, n) <= 1) {
      for (size_t i = 0; i < n; ++i)
        if (failed(task(i)))
          return false;
      return true;
    }
    std::vector<char> ok(n, 0);
    mlir::ParallelDiagnosticHandler handler(&context);
    llvm::StdThreadPool pool(
        llvm::hardware_concurrency(std::min<size_t>(threads, n)));
    for (size_t i = 0; i < n; ++i)
      pool.async([&, i] {
        handler.setOrderIDForThread(i);
        ok[i] = succeeded(task(i));
        handler.eraseOrderIDForThread();
      });
    pool.wait();
    return !llvm::is_contained(ok, 0);
  };

  // A failure of LLVM's (a message) in `errors[i]`, one of the lowering's
  // reported as a diagnostic.
  std::vector<CompiledLayer> layers(modules.size());
  std::vector<std::string> errors(modules.size());
  auto newMachine =
      [&](std::string &error) -> std::unique_ptr<llvm::TargetMachine> {
    auto one = mlir::recur::createCpuTargetMachine(options);
    if (!one) {
      error = toString(one.takeError());
      return nullptr;
    }
    return std::move(*one);
  };
  bool succeededAll;
  // After a phase: its tasks' first message of LLVM's as the failure, else
  // EXIT_FAILURE if one failed (its diagnostics reported), else 0.
  auto phaseStatus = [&](ArrayRef<std::string> messages) {
    for (const std::string &message : messages)
      if (!message.empty())
        return fail(message);
    return succeededAll ? EXIT_SUCCESS : EXIT_FAILURE;
  };
  if (perLayer && !cuda) {
    // Per-layer objects that share kernels: each layer lowered on its own;
    // the kernels that several layers have (a variant's token path, the
    // backward's recomputed forward nests) compiled once each, apart, to
    // assembly; each layer's object its host code and own kernels with
    // the assembly of the shared ones it calls.
    struct Host {
      SmallVector<std::string> layers;
      SmallVector<mlir::recur::CpuKernel> kernels;
      std::unique_ptr<llvm::LLVMContext> context;
      std::unique_ptr<llvm::Module> module;
      SmallVector<size_t> shared;
    };
    std::vector<Host> hosts(modules.size());
    // Kernels of equal names are equal kernels: their code, and the target
    // they are compiled for.
    std::string salt =
        ("recur kernel 1, LLVM " LLVM_VERSION_STRING ", " +
         (*machine)->getTargetTriple().str() + " " +
         (*machine)->getTargetCPU() + " " +
         (*machine)->getTargetFeatureString() + " -O" + Twine(options.optLevel))
            .str();
    succeededAll = forEach(modules.size(), [&](size_t i) -> LogicalResult {
      TimeRegion region(timed(i, 0));
      Host &host = hosts[i];
      host.layers = mlir::recur::layerFunctionNames(*modules[i]);
      if (failed(mlir::recur::runCpuLoweringPipeline(*modules[i],
                                                     pipelineOptions)))
        return failure();
      host.kernels = mlir::recur::copyCpuKernels(*modules[i], salt);
      return success();
    });
    if (!succeededAll)
      return EXIT_FAILURE;

    // The kernels more than one layer calls, each once.
    StringMap<unsigned> callers;
    for (Host &host : hosts) {
      StringSet<> mine;
      for (const mlir::recur::CpuKernel &kernel : host.kernels)
        if (mine.insert(kernel.symbol).second)
          ++callers[kernel.symbol];
    }
    StringMap<size_t> index;
    std::vector<const mlir::recur::CpuKernel *> distinct;
    size_t calls = 0;
    for (Host &host : hosts)
      for (const mlir::recur::CpuKernel &kernel : host.kernels) {
        // (Their assembly's local labels are ELF's.)
        if (callers[kernel.symbol] < 2 ||
            !(*machine)->getTargetTriple().isOSBinFormatELF())
          continue;
        auto [it, fresh] = index.try_emplace(kernel.symbol, distinct.size());
        if (fresh)
          distinct.push_back(&kernel);
        ++calls;
        // A layer's equal kernels (which the outlining did not merge) are
        // one.
        if (!llvm::is_contained(host.shared, it->second))
          host.shared.push_back(it->second);
      }

    succeededAll = forEach(modules.size(), [&](size_t i) -> LogicalResult {
      std::unique_ptr<llvm::TargetMachine> taskMachine = newMachine(errors[i]);
      if (!taskMachine)
        return failure();
      Host &host = hosts[i];
      host.context = std::make_unique<llvm::LLVMContext>();
      {
        TimeRegion region(timed(i, 0));
        SmallVector<const mlir::recur::CpuKernel *> apart;
        for (const mlir::recur::CpuKernel &kernel : host.kernels)
          if (index.count(kernel.symbol))
            apart.push_back(&kernel);
        mlir::recur::declareCpuKernels(*modules[i], apart);
        auto lowered = mlir::recur::translateLayersToLLVMIR(
            *modules[i], host.layers, *host.context);
        if (failed(lowered))
          return failure();
        host.module = std::move(*lowered);
      }
      TimeRegion region(timed(i, 1));
      mlir::recur::optimizeModule(*host.module, *taskMachine, options.optLevel);
      return success();
    });
    if (int status = phaseStatus(errors))
      return status;

    std::vector<std::string> assembly(distinct.size());
    std::vector<std::string> kernelErrors(distinct.size());
    {
      std::unique_ptr<Timer> timer;
      if (timePhases && !distinct.empty())
        timer = std::make_unique<Timer>(
            "kernels",
            ("kernels shared by layers (" + Twine(distinct.size()) + " for " +
             Twine(calls) + " calls): LLVM optimizer and code generation")
                .str(),
            phaseTimers);
      TimeRegion region(timer.get());
      succeededAll = forEach(distinct.size(), [&](size_t j) -> LogicalResult {
        std::unique_ptr<llvm::TargetMachine> taskMachine =
            newMachine(kernelErrors[j]);
        if (!taskMachine)
          return failure();
        auto text = mlir::recur::compileCpuKernel(*distinct[j], *taskMachine,
                                                  options.optLevel);
        if (!text) {
          kernelErrors[j] = toString(text.takeError());
          return failure();
        }
        assembly[j] = std::move(*text);
        return success();
      });
      timers.push_back(std::move(timer));
    }
    if (int status = phaseStatus(kernelErrors))
      return status;

    succeededAll = forEach(modules.size(), [&](size_t i) -> LogicalResult {
      std::unique_ptr<llvm::TargetMachine> taskMachine = newMachine(errors[i]);
      if (!taskMachine)
        return failure();
      Host &host = hosts[i];
      std::string text;
      for (size_t j : host.shared)
        text += assembly[j];
      host.module->appendModuleInlineAsm(text);
      CompiledLayer &layer = layers[i];
      TimeRegion codegen(timed(i, 2));
      raw_svector_ostream os(layer.object);
      if (Error e =
              mlir::recur::emitObjectFile(*host.module, *taskMachine, os)) {
        errors[i] = toString(std::move(e));
        return failure();
      }
      layer.signature = signatures[i];
      layer.header =
          mlir::recur::emitLayerHeader(signatures[i], sourceName(), targetName);
      return success();
    });
  } else {
    // Each module to LLVM IR, optimized, to object code (or LLVM IR text)
    // in `layers[i]`.
    succeededAll = forEach(modules.size(), [&](size_t i) -> LogicalResult {
      std::unique_ptr<llvm::TargetMachine> machine = newMachine(errors[i]);
      if (!machine)
        return failure();
      mlir::ModuleOp module = *modules[i];
      llvm::LLVMContext llvmContext;
      FailureOr<std::unique_ptr<llvm::Module>> llvmModule = failure();
      std::optional<TimeRegion> lowering(std::in_place, timed(i, 0));
      if (cuda) {
        auto lowered = mlir::recur::lowerToCuda(module, llvmContext, *cuda,
                                                /*assemble=*/true);
        if (succeeded(lowered))
          llvmModule = std::move(lowered->host);
      } else {
        llvmModule =
            mlir::recur::lowerToLLVMIR(module, llvmContext, pipelineOptions);
      }
      lowering.reset();
      if (failed(llvmModule))
        return failure();
      {
        TimeRegion region(timed(i, 1));
        mlir::recur::optimizeModule(**llvmModule, *machine, options.optLevel);
      }
      CompiledLayer &layer = layers[i];
      TimeRegion codegen(timed(i, 2));
      raw_svector_ostream os(layer.object);
      if (emit == Emit::LLVM) {
        (*llvmModule)->print(os, nullptr);
      } else if (Error e =
                     mlir::recur::emitObjectFile(**llvmModule, *machine, os)) {
        errors[i] = toString(std::move(e));
        return failure();
      }
      if (perLayer) {
        layer.signature = signatures[i];
        layer.header = mlir::recur::emitLayerHeader(signatures[i], sourceName(),
                                                    targetName);
      }
      return success();
    });
  }
  if (int status = phaseStatus(errors))
    return status;

  if (!perLayer)
    return writeFile(outputFile,
                     [&](raw_ostream &os) { os << layers.front().object; });
  if (outputFile == "-")
    return fail("--target=" + target +
                " writes <layer>.o and <layer>.h "
                "into a directory: give it -o OUTDIR");
  if (std::error_code ec = sys::fs::create_directories(outputFile))
    return fail("cannot create directory '" + outputFile +
                "': " + ec.message());
  for (const CompiledLayer &layer : layers) {
    SmallString<128> base(outputFile.getValue());
    sys::path::append(base, layer.signature.name);
    if (writeFile((base + ".o").str(),
                  [&](raw_ostream &os) { os << layer.object; }) ||
        writeFile((base + ".h").str(),
                  [&](raw_ostream &os) { os << layer.header; }))
      return EXIT_FAILURE;
  }
  return EXIT_SUCCESS;
}
} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(recurcCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "Recur compiler: compiles a layer spec written in the Recur language.\n\n"
      "  recurc SPEC.recur [--emit=mlir] [-o FILE] [--layer NAME[,...]] "
      "[-D NAME=VALUE]...\n"
      "  recurc SPEC.recur --target=cpu -o OUTDIR [--layer NAME[,...]] "
      "[-D NAME=VALUE]...\n"
      "      writes OUTDIR/<layer>.o and OUTDIR/<layer>.h (C ABI, see\n"
      "      include/recur/Runtime/recur_rt.h); link with librecur_rt, "
      "libomp, libm\n"
      "  recurc SPEC.recur --target=cpu --emit=llvm|obj|header -o FILE "
      "...\n"
      "  recurc SPEC.recur --target=cuda[:sm_80,sm_90] -o OUTDIR ...\n"
      "      the same for NVIDIA GPUs (forward, step and backward kernels;\n"
      "      the CUDA toolkit's ptxas and fatbinary are run, CUDA_PATH names\n"
      "      the toolkit)\n"
      "  recurc SPEC.recur --target=cuda[:...] --emit=ptx|llvm|obj|header "
      "-o FILE ...\n\n"
      "Errors are reported as file:line:col: error: ... with the source line "
      "and a caret;\nthe exit status is 1 when there is any.\n");

  CompileOptions options;
  options.layer = layerName;
  options.promoteToF64 = compileOptions.promoteF64;
  if (std::optional<std::string> error = recur::frontend::setGlaOverrides(
          options, compileOptions.glaAlgorithm, compileOptions.glaChunk))
    return fail(*error);
  for (const std::string &d : defines)
    if (std::optional<std::string> error = addDefine(options, d))
      return fail(*error);

  // --target: cpu, cuda[:chips], or implied by --emit.
  std::optional<mlir::recur::CudaTargetOptions> cuda;
  if (target.getNumOccurrences() && target != "cpu") {
    cuda.emplace();
    if (std::optional<std::string> error =
            mlir::recur::parseCudaTarget(target, *cuda))
      return fail(*error);
  } else if (emit == Emit::PTX) {
    if (target == "cpu")
      return fail("--emit=ptx needs --target=cuda");
    cuda.emplace();
  }
  if (cuda)
    cuda->optLevel = std::min(optLevel.getValue(), 3u);
  if (std::optional<std::string> error =
          compileOptions.applyCuda(cuda ? &*cuda : nullptr))
    return fail(*error);

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
      compileSpecFile(inputFile, context, options, ioError);
  if (!ir)
    return ioError.empty() ? EXIT_FAILURE : fail(ioError);

  if (emit == Emit::MLIR ||
      (emit == Emit::Default && !target.getNumOccurrences()))
    return writeFile(outputFile, [&](raw_ostream &os) {
      ir->print(os);
      os << "\n";
    });
  return compileForTarget(*ir, context, cuda ? &*cuda : nullptr);
}
