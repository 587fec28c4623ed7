//===- Types.h - types of Recur language values -----------------*- C++ -*-===//
//
// Part of the Recur project.
//
//===----------------------------------------------------------------------===//

#ifndef RECUR_FRONTEND_TYPES_H
#define RECUR_FRONTEND_TYPES_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace recur::frontend {

/// `bool` is for masks (key padding, active tokens): inputs only, no
/// arithmetic.
enum class DType { F16, BF16, F32, F64, C64, C128, Bool };

llvm::StringRef dtypeName(DType dtype);
std::optional<DType> parseDType(llvm::StringRef name);
bool isComplex(DType dtype);
/// The real dtype of the same precision (c64 -> f32), or `dtype` itself.
DType realPart(DType dtype);
/// The complex dtype of the same precision (f32 -> c64); f16/bf16 have none.
std::optional<DType> complexOf(DType dtype);

/// One dimension: a compile-time size, or a runtime dimension named by the
/// layer (`T`), whose size is known only when the layer runs.
struct Dim {
  int64_t size = 0;
  std::string symbol; // non-empty for a runtime dimension
  /// The declared name of a compile-time dim (`D`), kept so that `axis=D`
  /// finds it even where another dim has the same size; not part of
  /// equality, which compares sizes.
  std::string name;

  static Dim constant(int64_t size) { return Dim{size, {}, {}}; }
  static Dim runtime(std::string symbol) {
    return Dim{0, std::move(symbol), {}};
  }
  bool isRuntime() const { return !symbol.empty(); }
  bool operator==(const Dim &other) const {
    return isRuntime() ? symbol == other.symbol
                       : !other.isRuntime() && size == other.size;
  }
  bool operator!=(const Dim &other) const { return !(*this == other); }
  std::string str() const;
};

/// The type of a value in a spec: a tensor (rank 0 for scalars), a tuple of
/// values (multi-result builtins), or an invalid type after an error.
struct SpecType {
  enum class Kind { Invalid, Tensor, Tuple, String };
  Kind kind = Kind::Invalid;
  DType dtype = DType::F32;
  std::vector<Dim> shape;
  /// A number literal: a scalar that takes the dtype of what it meets.
  bool weak = false;
  std::vector<SpecType> elements;

  static SpecType tensor(DType dtype, std::vector<Dim> shape) {
    SpecType t;
    t.kind = Kind::Tensor;
    t.dtype = dtype;
    t.shape = std::move(shape);
    return t;
  }
  static SpecType tuple(std::vector<SpecType> elements) {
    SpecType t;
    t.kind = Kind::Tuple;
    t.elements = std::move(elements);
    return t;
  }
  static SpecType string() {
    SpecType t;
    t.kind = Kind::String;
    return t;
  }
  bool isValid() const { return kind != Kind::Invalid; }
  bool isTensor() const { return kind == Kind::Tensor; }
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
  bool sameShape(const SpecType &other) const { return shape == other.shape; }
  /// `f32[B, T, 64]`, `(f32[B], c64[B, 4])`.
  std::string str() const;
};

} // namespace recur::frontend

#endif // RECUR_FRONTEND_TYPES_H
