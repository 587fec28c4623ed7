//===- recurc.cpp - the Recur compiler driver -----------------------------===//
//
// Part of the Recur project.
//
// recurc SPEC.recur --emit=mlir [-o FILE] [--layer NAME] [-D NAME=VALUE]...
//
// Exit status: 0 on success, 1 when the spec has errors (reported as
// file:line:col: error: with the source line and a caret) or the command
// line is wrong.
//
//===----------------------------------------------------------------------===//

#include "recur/Frontend/MLIRGen.h"
#include "recur/Frontend/Parser.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

#include <cstdlib>

using namespace llvm;
using namespace recur::frontend;

namespace {
cl::OptionCategory recurcCategory("recurc options");

cl::opt<std::string> inputFile(cl::Positional, cl::desc("<spec.recur>"),
                               cl::init("-"), cl::cat(recurcCategory));

cl::opt<std::string> outputFile("o",
                                cl::desc("Write the output to <file> "
                                         "(default: standard output)"),
                                cl::value_desc("file"), cl::init("-"),
                                cl::cat(recurcCategory));

enum class Emit { MLIR };
cl::opt<Emit> emit("emit", cl::desc("What to produce"), cl::init(Emit::MLIR),
                   cl::values(clEnumValN(Emit::MLIR, "mlir",
                                         "the recur dialect IR (default)")),
                   cl::cat(recurcCategory));

cl::opt<std::string> layerName("layer",
                               cl::desc("Compile only the layer <name> "
                                        "(default: every layer in the spec)"),
                               cl::value_desc("name"), cl::cat(recurcCategory));

cl::list<std::string>
    defines("D", cl::Prefix,
            cl::desc("Set the compile-time dimension NAME to VALUE, "
                     "overriding its default (repeatable); a runtime "
                     "dimension given a value becomes compile-time"),
            cl::value_desc("NAME=VALUE"), cl::cat(recurcCategory));

int fail(const Twine &message) {
  WithColor::error(errs(), "recurc") << message << "\n";
  return EXIT_FAILURE;
}
} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(recurcCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "Recur compiler: compiles a layer spec written in the Recur language.\n\n"
      "  recurc SPEC.recur --emit=mlir [-o FILE] [--layer NAME] "
      "[-D NAME=VALUE]...\n\n"
      "Errors are reported as file:line:col: error: ... with the source line "
      "and a caret;\nthe exit status is 1 when there is any.\n");

  CompileOptions options;
  options.layer = layerName;
  for (const std::string &d : defines) {
    StringRef text(d);
    auto [name, value] = text.split('=');
    int64_t v = 0;
    if (name.empty() || !text.contains('=') || value.getAsInteger(10, v))
      return fail("-D expects NAME=VALUE with an integer VALUE, got '" + d +
                  "'");
    options.defines[name.str()] = v;
  }

  std::string errorMessage;
  std::unique_ptr<MemoryBuffer> buffer =
      mlir::openInputFile(inputFile, &errorMessage);
  if (!buffer)
    return fail(errorMessage);

  SourceMgr sourceMgr;
  StringRef bufferText = buffer->getBuffer();
  sourceMgr.AddNewSourceBuffer(std::move(buffer), SMLoc());
  DiagnosticEngine diags(sourceMgr);

  Parser parser(bufferText, diags);
  Module module = parser.parseModule();

  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> ir;
  if (!diags.hadError())
    ir = emitModule(module, context, options, diags,
                    inputFile == "-" ? std::string("<stdin>")
                                     : std::string(inputFile));
  if (diags.hadError() || !ir) {
    if (diags.getNumErrors() > 1)
      errs() << diags.getNumErrors() << " errors generated.\n";
    return EXIT_FAILURE;
  }

  // Open the output only now, so a failed compile never clobbers it.
  std::unique_ptr<ToolOutputFile> output =
      mlir::openOutputFile(outputFile, &errorMessage);
  if (!output)
    return fail(errorMessage);
  ir->print(output->os());
  output->os() << "\n";
  output->keep();
  return EXIT_SUCCESS;
}
