//===- Types.cpp - types of Recur language values -------------------------===//
//
// Part of the Recur project.
//
//===----------------------------------------------------------------------===//

#include "recur/Frontend/Types.h"
#include "recur/Frontend/AST.h"

#include "llvm/ADT/StringSwitch.h"

using namespace recur::frontend;

llvm::StringRef recur::frontend::dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::F32:
    return "f32";
  case DType::F64:
    return "f64";
  case DType::C64:
    return "c64";
  case DType::C128:
    return "c128";
  case DType::Bool:
    return "bool";
  }
  return "?";
}

std::optional<DType> recur::frontend::parseDType(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<DType>>(name)
      .Case("f16", DType::F16)
      .Case("bf16", DType::BF16)
      .Case("f32", DType::F32)
      .Case("f64", DType::F64)
      .Case("c64", DType::C64)
      .Case("c128", DType::C128)
      .Case("bool", DType::Bool)
      .Default(std::nullopt);
}

bool recur::frontend::isComplex(DType dtype) {
  return dtype == DType::C64 || dtype == DType::C128;
}

DType recur::frontend::realPart(DType dtype) {
  if (dtype == DType::C64)
    return DType::F32;
  if (dtype == DType::C128)
    return DType::F64;
  return dtype;
}

std::optional<DType> recur::frontend::complexOf(DType dtype) {
  if (dtype == DType::F32 || dtype == DType::C64)
    return DType::C64;
  if (dtype == DType::F64 || dtype == DType::C128)
    return DType::C128;
  return std::nullopt;
}

std::string Dim::str() const {
  return isRuntime() ? symbol : std::to_string(size);
}

std::string SpecType::str() const {
  switch (kind) {
  case Kind::Invalid:
    return "<invalid>";
  case Kind::String:
    return "string";
  case Kind::Tuple: {
    std::string s = "(";
    for (size_t i = 0; i < elements.size(); ++i)
      s += (i ? ", " : "") + elements[i].str();
    return s + ")";
  }
  case Kind::Tensor: {
    std::string s = dtypeName(dtype).str();
    if (shape.empty())
      return s;
    s += "[";
    for (size_t i = 0; i < shape.size(); ++i)
      s += (i ? ", " : "") + shape[i].str();
    return s + "]";
  }
  }
  return "?";
}

llvm::StringRef recur::frontend::roleName(Role role) {
  switch (role) {
  case Role::Input:
    return "input";
  case Role::Param:
    return "param";
  case Role::State:
    return "state";
  case Role::Output:
    return "output";
  }
  return "?";
}
