#===- RecurPCH.cmake - one precompiled header for the compiler's sources ---===#
#
# Most of a compiler source's build time is clang parsing the same MLIR and
# LLVM headers again (StripAttributes.cpp: 16 s, of which 15 s in the front
# end). RecurPCH precompiles the headers the passes, the dialect and the tools
# share once per build tree; recur_use_pch(TARGET) makes TARGET's sources
# include it first (clang's -include-pch). Every target of a tree compiles with
# the same flags (the sanitizer and fuzzer options are tree-wide), which
# REUSE_FROM needs. -DRECUR_USE_PCH=OFF builds without it.
#
#===-----------------------------------------------------------------------===#

option(RECUR_USE_PCH "Share one precompiled header of the MLIR/LLVM headers" ON)

if(RECUR_USE_PCH)
  add_library(RecurPCH OBJECT ${CMAKE_CURRENT_LIST_DIR}/RecurPCH.cpp)
  target_precompile_headers(RecurPCH PRIVATE
    <mlir/Dialect/Affine/IR/AffineOps.h>
    <mlir/Dialect/Arith/IR/Arith.h>
    <mlir/Dialect/Complex/IR/Complex.h>
    <mlir/Dialect/Func/IR/FuncOps.h>
    <mlir/Dialect/LLVMIR/LLVMDialect.h>
    <mlir/Dialect/Linalg/IR/Linalg.h>
    <mlir/Dialect/Math/IR/Math.h>
    <mlir/Dialect/MemRef/IR/MemRef.h>
    <mlir/Dialect/SCF/IR/SCF.h>
    <mlir/Dialect/Tensor/IR/Tensor.h>
    <mlir/Dialect/Vector/IR/VectorOps.h>
    <mlir/IR/Builders.h>
    <mlir/IR/BuiltinOps.h>
    <mlir/IR/BuiltinTypes.h>
    <mlir/IR/Diagnostics.h>
    <mlir/IR/IRMapping.h>
    <mlir/IR/MLIRContext.h>
    <mlir/IR/PatternMatch.h>
    <mlir/Interfaces/FunctionInterfaces.h>
    <mlir/Interfaces/SideEffectInterfaces.h>
    <mlir/Pass/Pass.h>
    <mlir/Pass/PassManager.h>
    <llvm/ADT/STLExtras.h>
    <llvm/ADT/SmallVector.h>
    <llvm/ADT/StringRef.h>
    <llvm/ADT/TypeSwitch.h>
    <llvm/Support/raw_ostream.h>)
endif()

function(recur_use_pch)
  if(RECUR_USE_PCH)
    foreach(target ${ARGN})
      # Optional targets (recur-fuzz) exist only in some trees.
      if(TARGET ${target})
        target_precompile_headers(${target} REUSE_FROM RecurPCH)
      endif()
    endforeach()
  endif()
endfunction()
