//===- CudaTarget.cpp - layer functions to CUDA host and device code ------===//
//
// Part of the Recur project.
//
//===----------------------------------------------------------------------===//

#include "recur/Target/CudaTarget.h"

#include "recur/Conversion/RecurToLoops/RecurToLoops.h"
#include "recur/Target/CpuTarget.h"
#include "recur/Target/Pipelines.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

#include <cstdlib>

using namespace mlir;
using namespace mlir::recur;

std::string mlir::recur::findCudaToolkit() {
  if (const char *path = std::getenv("CUDA_PATH"); path && *path)
    return path;
  if (llvm::ErrorOr<std::string> ptxas = llvm::sys::findProgramByName("ptxas"))
    return llvm::sys::path::parent_path(llvm::sys::path::parent_path(*ptxas))
        .str();
  return "/usr/local/cuda";
}

std::optional<std::string>
mlir::recur::parseCudaTarget(StringRef target, CudaTargetOptions &options) {
  auto [backend, chips] = target.split(':');
  if (backend != "cuda")
    return "unknown target '" + target.str() + "' (cpu, cuda, cuda:sm_XX,...)";
  if (!target.contains(':'))
    return std::nullopt;
  options.chips.clear();
  SmallVector<StringRef> names;
  chips.split(names, ',');
  for (StringRef chip : names) {
    unsigned version;
    if (!chip.consume_front("sm_") ||
        chip.take_while(llvm::isDigit).getAsInteger(10, version) ||
        version < 50 ||
        !llvm::all_of(
            chip.drop_while(llvm::isDigit),
            [](char c) { return c == 'a' || c == 'f'; }))
      return "malformed CUDA chip in '" + target.str() +
             "': expected sm_<version> such as sm_80 or sm_90a";
    options.chips.push_back(("sm_" + chip).str());
  }
  return std::nullopt;
}

void mlir::recur::registerCudaTranslations(DialectRegistry &registry) {
  registerCpuTranslations(registry);
  registerGPUDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  // How a gpu.binary becomes a global with the fat binary and the calls
  // that load it (#gpu.select_object).
  gpu::registerOffloadingLLVMTranslationInterfaceExternalModels(registry);
}

namespace {

/// A temporary file removed when this goes out of scope.
struct TempFile {
  SmallString<128> path;
  ~TempFile() {
    if (!path.empty())
      llvm::sys::fs::remove(path);
  }
};

LogicalResult makeTemp(Operation *op, StringRef suffix, TempFile &file) {
  if (std::error_code ec =
          llvm::sys::fs::createTemporaryFile("recur-cuda", suffix, file.path))
    return op->emitError("cannot create a temporary file: ") << ec.message();
  return success();
}

/// Runs the toolkit program `name` with `args`; its messages become the
/// error on `op` when it fails.
LogicalResult runTool(Operation *op, StringRef toolkit, StringRef name,
                      ArrayRef<std::string> args) {
  SmallString<128> program(toolkit);
  llvm::sys::path::append(program, "bin", name);
  if (!llvm::sys::fs::can_execute(program))
    return op->emitError("cannot run ")
           << program << ": not found (install the CUDA toolkit or set "
           << "CUDA_PATH)";
  TempFile log;
  if (failed(makeTemp(op, "log", log)))
    return failure();
  SmallVector<StringRef> argv = {program};
  for (const std::string &a : args)
    argv.push_back(a);
  std::optional<StringRef> redirects[] = {std::nullopt, log.path.str(),
                                          log.path.str()};
  std::string error;
  int status = llvm::sys::ExecuteAndWait(program, argv, std::nullopt, redirects,
                                         0, 0, &error);
  if (status == 0)
    return success();
  std::string output;
  if (auto buffer = llvm::MemoryBuffer::getFile(log.path))
    output = (*buffer)->getBuffer().trim().str();
  return op->emitError() << name << " failed"
                         << (error.empty() ? "" : ": " + error)
                         << (output.empty() ? "" : ":\n" + output);
}

LogicalResult writeFile(Operation *op, StringRef path, StringRef data) {
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  if (ec)
    return op->emitError("cannot write ") << path << ": " << ec.message();
  os << data;
  return success();
}

/// Replaces the per-chip PTX objects of `binary` by one fat binary: a
/// cubin per chip (ptxas) and the last chip's PTX, packed by fatbinary.
LogicalResult assembleBinary(gpu::BinaryOp binary,
                             const CudaTargetOptions &options,
                             StringRef toolkit) {
  SmallVector<std::string> fatArgs = {"-64"};
  TempFile fatbin;
  if (failed(makeTemp(binary, "fatbin", fatbin)))
    return failure();
  fatArgs.push_back(("--create=" + fatbin.path).str());
  std::vector<std::unique_ptr<TempFile>> temps;
  ArrayRef<Attribute> objects = binary.getObjects().getValue();
  for (auto [i, attr] : llvm::enumerate(objects)) {
    auto object = cast<gpu::ObjectAttr>(attr);
    auto target = cast<NVVM::NVVMTargetAttr>(object.getTarget());
    StringRef chip = target.getChip();
    std::string sm = chip.drop_front(3).str();
    temps.push_back(std::make_unique<TempFile>());
    TempFile &ptx = *temps.back();
    temps.push_back(std::make_unique<TempFile>());
    TempFile &cubin = *temps.back();
    if (failed(makeTemp(binary, "ptx", ptx)) ||
        failed(makeTemp(binary, "cubin", cubin)) ||
        failed(writeFile(binary, ptx.path, object.getObject().getValue())) ||
        failed(runTool(binary, toolkit, "ptxas",
                       {"-arch=" + chip.str(), "-m64",
                        "-O" + std::to_string(options.optLevel),
                        ptx.path.str().str(), "-o", cubin.path.str().str()})))
      return failure();
    fatArgs.push_back("--image3=kind=elf,sm=" + sm +
                      ",file=" + cubin.path.str().str());
    if (i + 1 == objects.size())
      fatArgs.push_back("--image3=kind=ptx,sm=" + sm +
                        ",file=" + ptx.path.str().str());
  }
  if (failed(runTool(binary, toolkit, "fatbinary", fatArgs)))
    return failure();
  auto buffer = llvm::MemoryBuffer::getFile(fatbin.path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return binary.emitError("cannot read the fat binary: ")
           << buffer.getError().message();
  auto first = cast<gpu::ObjectAttr>(objects.front());
  MLIRContext *ctx = binary.getContext();
  auto fat = gpu::ObjectAttr::get(ctx, first.getTarget(),
                                  gpu::CompilationTarget::Fatbin,
                                  StringAttr::get(ctx, (*buffer)->getBuffer()),
                                  first.getProperties(), first.getKernels());
  binary.setObjectsAttr(ArrayAttr::get(ctx, {fat}));
  return success();
}

/// The host's buffers are device memory: the generic allocation functions
/// the memref lowering calls go to the runtime's device allocator.
void useDeviceAllocator(llvm::Module &module) {
  static constexpr std::pair<const char *, const char *> kRenames[] = {
      {"_mlir_memref_to_llvm_alloc", "recur_cuda_memref_alloc"},
      {"_mlir_memref_to_llvm_aligned_alloc", "recur_cuda_memref_aligned_alloc"},
      {"_mlir_memref_to_llvm_free", "recur_cuda_memref_free"},
  };
  for (auto [from, to] : kRenames)
    if (llvm::Function *f = module.getFunction(from))
      f->setName(to);
}

} // namespace

CudaPipelineOptions
mlir::recur::cudaPipelineOptions(const CudaTargetOptions &options) {
  CudaPipelineOptions pipeline;
  pipeline.chips = options.chips;
  if (!options.toolkit.empty())
    pipeline.toolkit = options.toolkit;
  pipeline.optLevel = options.optLevel;
  pipeline.blockThreads = options.blockThreads;
  pipeline.scanUnrollBytes = options.scanUnrollBytes;
  pipeline.scanSpread = options.scanSpread;
  pipeline.scanWarps = options.scanWarps;
  pipeline.windowOnePass = options.windowOnePass;
  pipeline.glaColumnChunk = options.glaColumnChunk;
  pipeline.glaTiles = options.glaTiles;
  pipeline.windowWarpTiles = options.windowWarpTiles;
  pipeline.splitReductions = options.splitReductions;
  pipeline.scanBlocks = options.scanBlocks;
  return pipeline;
}

FailureOr<CudaLowering>
mlir::recur::lowerToCuda(ModuleOp module, llvm::LLVMContext &context,
                         const CudaTargetOptions &options, bool assemble) {
  SmallVector<std::string> layers = layerFunctionNames(module);
  std::string toolkit =
      options.toolkit.empty() ? findCudaToolkit() : options.toolkit;
  CudaPipelineOptions pipeline = cudaPipelineOptions(options);
  pipeline.toolkit = toolkit;
  PassManager pm(module->getContext());
  buildCudaLoweringPipeline(pm, pipeline);
  if (failed(pm.run(module)))
    return failure();

  CudaLowering result;
  llvm::raw_string_ostream ptx(result.ptx);
  for (auto binary : module.getOps<gpu::BinaryOp>())
    for (Attribute attr : binary.getObjects()) {
      auto object = cast<gpu::ObjectAttr>(attr);
      ptx << "// recur: gpu module " << binary.getSymName() << ", "
          << cast<NVVM::NVVMTargetAttr>(object.getTarget()).getChip() << "\n"
          << object.getObject().getValue() << "\n";
    }
  if (!assemble)
    return result;

  for (auto binary : llvm::make_early_inc_range(module.getOps<gpu::BinaryOp>()))
    if (failed(assembleBinary(binary, options, toolkit)))
      return failure();
  stripFrontEndAttributes(module);
  result.host = translateModuleToLLVMIR(module, context, "recur");
  if (!result.host)
    return module.emitError("translation to LLVM IR failed"), failure();
  useDeviceAllocator(*result.host);
  if (failed(exportLayerEntries(module, *result.host, layers,
                                /*withWorkspace=*/false)))
    return failure();
  return result;
}
