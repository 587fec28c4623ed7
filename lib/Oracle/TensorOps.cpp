//===- TensorOps.cpp - the tensor dialect glue in the evaluator -----------===//
//
// Part of the Recur project.
//
// tensor.empty, dim, extract_slice, insert_slice, from_elements, extract,
// insert, splat, cast, collapse_shape, expand_shape and concat on row-major
// tensors. Dynamic sizes come from the actual operands; every offset, size
// and stride is checked against the tensors before any element is touched.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/SmallBitVector.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace ::recur::oracle;
using namespace ::recur::oracle::detail;

namespace {

/// The offsets, sizes and strides of a slice, resolved.
struct Slice {
  std::vector<int64_t> offsets, sizes, strides;
  /// The sizes without the dimensions the sliced tensor's type drops.
  std::vector<int64_t> keptSizes;
};

std::string shapeText(const std::vector<int64_t> &shape) {
  return reference::shapeString(shape);
}

/// The shape of `type` with its dynamic sizes taken from `dynamicSizes`, in
/// order.
std::vector<int64_t> shapeWithDynamic(RankedTensorType type,
                                      llvm::ArrayRef<int64_t> dynamicSizes,
                                      Operation *op) {
  std::vector<int64_t> shape(type.getShape());
  size_t next = 0;
  for (int64_t &size : shape) {
    if (!ShapedType::isDynamic(size))
      continue;
    if (next >= dynamicSizes.size())
      fail(op, "too few dynamic sizes");
    size = dynamicSizes[next++];
    if (size < 0)
      fail(op, "negative size " + llvm::Twine(size));
  }
  return shape;
}

/// Fails on `op` unless `slice` lies inside a tensor of `shape`.
void checkSliceBounds(const Slice &slice, const std::vector<int64_t> &shape,
                      Operation *op) {
  if (slice.offsets.size() != shape.size())
    fail(op, "a slice of rank " + llvm::Twine(slice.offsets.size()) +
                 " of a tensor of shape " + shapeText(shape));
  for (size_t d = 0; d < shape.size(); ++d) {
    if (slice.sizes[d] < 0)
      fail(op, "negative size in dimension " + llvm::Twine(d));
    if (slice.sizes[d] == 0)
      continue;
    int64_t first = slice.offsets[d];
    int64_t last = first + (slice.sizes[d] - 1) * slice.strides[d];
    if (std::min(first, last) < 0 || std::max(first, last) >= shape[d])
      fail(op, "the slice reaches positions " + llvm::Twine(first) + " .. " +
                   llvm::Twine(last) + " of dimension " + llvm::Twine(d) +
                   ", which has size " + llvm::Twine(shape[d]));
  }
}

/// Calls `fn(sourceIndex)` for every element of `slice`, in row-major order.
void forEachSliceIndex(
    const Slice &slice,
    llvm::function_ref<void(const std::vector<int64_t> &)> fn) {
  std::vector<int64_t> at(slice.sizes.size());
  forEachIndex(slice.sizes, [&](const std::vector<int64_t> &index) {
    for (size_t d = 0; d < index.size(); ++d)
      at[d] = slice.offsets[d] + index[d] * slice.strides[d];
    fn(at);
  });
}

template <typename T>
Tensor<T> extractSlice(const Tensor<T> &source, const Slice &slice) {
  Tensor<T> result(slice.keptSizes);
  int64_t next = 0;
  forEachSliceIndex(slice, [&](const std::vector<int64_t> &at) {
    result.data[next++] = source.at(at);
  });
  return result;
}

template <typename T>
Tensor<T> insertSlice(const Tensor<T> &source, Tensor<T> dest,
                      const Slice &slice) {
  int64_t next = 0;
  forEachSliceIndex(slice, [&](const std::vector<int64_t> &at) {
    dest.at(at) = source.data[next++];
  });
  return dest;
}

/// The same data read with another shape.
template <typename T>
Tensor<T> reshape(const Tensor<T> &source, std::vector<int64_t> shape,
                  Operation *op) {
  if (reference::numElements(shape) != source.numElements())
    fail(op, "cannot reshape " + shapeText(source.shape) + " to " +
                 shapeText(shape));
  return Tensor<T>(std::move(shape), source.data);
}

/// The tensor of elements `T` in `datum`, which `what` names.
template <typename T>
const Tensor<T> &sameKind(const Datum &datum, Operation *op,
                          const llvm::Twine &what) {
  if (const auto *tensor = std::get_if<Tensor<T>>(&datum))
    return *tensor;
  fail(op, what + " holds " + describe(datum) + ", expected a tensor of " +
               elementName<T>());
}

} // namespace

void Evaluator::evalTensorOp(Operation &op) {
  // Resolves static and dynamic offsets, sizes and strides.
  auto resolve = [&](llvm::ArrayRef<OpFoldResult> values) {
    std::vector<int64_t> resolved;
    for (OpFoldResult value : values) {
      if (auto attr = dyn_cast<Attribute>(value))
        resolved.push_back(cast<IntegerAttr>(attr).getInt());
      else
        resolved.push_back(getIndex(cast<mlir::Value>(value), &op));
    }
    return resolved;
  };
  auto indices = [&](ValueRange values) {
    std::vector<int64_t> resolved;
    for (mlir::Value value : values)
      resolved.push_back(getIndex(value, &op));
    return resolved;
  };
  auto sliceOf = [&](auto sliceOp) {
    Slice slice{resolve(sliceOp.getMixedOffsets()),
                resolve(sliceOp.getMixedSizes()),
                resolve(sliceOp.getMixedStrides()),
                {}};
    llvm::SmallBitVector dropped = sliceOp.getDroppedDims();
    for (size_t d = 0; d < slice.sizes.size(); ++d)
      if (!dropped.test(d))
        slice.keptSizes.push_back(slice.sizes[d]);
    return slice;
  };

  llvm::TypeSwitch<Operation *, void>(&op)
      .Case<tensor::EmptyOp>([&](tensor::EmptyOp empty) {
        RankedTensorType type = empty.getType();
        setResult(&op,
                  makeTensor(type.getElementType(),
                             shapeWithDynamic(
                                 type, indices(empty.getDynamicSizes()), &op),
                             &op));
      })
      .Case<tensor::DimOp>([&](tensor::DimOp dim) {
        const std::vector<int64_t> &shape =
            shapeOf(get(dim.getSource(), &op), &op);
        int64_t d = getIndex(dim.getIndex(), &op);
        if (d < 0 || d >= static_cast<int64_t>(shape.size()))
          fail(&op, "dimension " + llvm::Twine(d) + " of a tensor of shape " +
                        shapeText(shape));
        setResult(&op, Scalar(shape[d]));
      })
      .Case<tensor::ExtractSliceOp>([&](tensor::ExtractSliceOp extract) {
        const Datum &source = get(extract.getSource(), &op);
        Slice slice = sliceOf(extract);
        checkSliceBounds(slice, shapeOf(source, &op), &op);
        setResult(&op, withTensor(source, &op, [&](const auto &tensor) {
          return Datum(extractSlice(tensor, slice));
        }));
      })
      .Case<tensor::InsertSliceOp>([&](tensor::InsertSliceOp insert) {
        const Datum &source = get(insert.getSource(), &op);
        const Datum &dest = get(insert.getDest(), &op);
        Slice slice = sliceOf(insert);
        checkSliceBounds(slice, shapeOf(dest, &op), &op);
        if (shapeOf(source, &op) != slice.keptSizes)
          fail(&op, "the source of shape " + shapeText(shapeOf(source, &op)) +
                        " does not fill a slice of sizes " +
                        shapeText(slice.sizes));
        setResult(&op, withTensor(dest, &op, [&](const auto &tensor) {
          using T = ElementOf<decltype(tensor)>;
          const Tensor<T> &from = sameKind<T>(source, &op, "the source");
          return Datum(insertSlice(from, tensor, slice));
        }));
      })
      .Case<tensor::FromElementsOp>([&](tensor::FromElementsOp from) {
        RankedTensorType type = from.getType();
        Datum tensor = makeTensor(type.getElementType(),
                                  std::vector<int64_t>(type.getShape()), &op);
        int64_t offset = 0;
        for (mlir::Value element : from.getElements())
          writeElement(tensor, offset++, getScalar(element, &op));
        setResult(&op, std::move(tensor));
      })
      .Case<tensor::SplatOp>([&](tensor::SplatOp splat) {
        RankedTensorType type = splat.getType();
        Datum tensor = makeTensor(
            type.getElementType(),
            shapeWithDynamic(type, indices(splat.getDynamicSizes()), &op), &op);
        Scalar value = getScalar(splat.getInput(), &op);
        int64_t n = reference::numElements(shapeOf(tensor, &op));
        for (int64_t offset = 0; offset < n; ++offset)
          writeElement(tensor, offset, value);
        setResult(&op, std::move(tensor));
      })
      .Case<tensor::ExtractOp>([&](tensor::ExtractOp extract) {
        const Datum &source = get(extract.getTensor(), &op);
        std::vector<int64_t> at = indices(extract.getIndices());
        int64_t offset = withTensor(
            source, &op, [&](const auto &tensor) { return tensor.offset(at); });
        setResult(&op, readElement(source, offset));
      })
      .Case<tensor::InsertOp>([&](tensor::InsertOp insert) {
        Datum dest = get(insert.getDest(), &op);
        std::vector<int64_t> at = indices(insert.getIndices());
        int64_t offset = withTensor(
            dest, &op, [&](const auto &tensor) { return tensor.offset(at); });
        writeElement(dest, offset, getScalar(insert.getScalar(), &op));
        setResult(&op, std::move(dest));
      })
      .Case<tensor::CastOp>([&](tensor::CastOp cast) {
        setResult(&op, get(cast.getSource(), &op));
      })
      .Case<tensor::CollapseShapeOp>([&](tensor::CollapseShapeOp collapse) {
        const Datum &source = get(collapse.getSrc(), &op);
        const std::vector<int64_t> &from = shapeOf(source, &op);
        std::vector<int64_t> shape;
        for (const ReassociationIndices &group :
             collapse.getReassociationIndices()) {
          int64_t size = 1;
          for (int64_t d : group)
            size *= from.at(d);
          shape.push_back(size);
        }
        setResult(&op, withTensor(source, &op, [&](const auto &tensor) {
          return Datum(reshape(tensor, shape, &op));
        }));
      })
      .Case<tensor::ExpandShapeOp>([&](tensor::ExpandShapeOp expand) {
        const Datum &source = get(expand.getSrc(), &op);
        std::vector<int64_t> shape = resolve(expand.getMixedOutputShape());
        setResult(&op, withTensor(source, &op, [&](const auto &tensor) {
          return Datum(reshape(tensor, shape, &op));
        }));
      })
      .Case<tensor::ConcatOp>([&](tensor::ConcatOp concat) {
        const Datum &first = get(concat.getInputs().front(), &op);
        setResult(&op, withTensor(first, &op, [&](const auto &tensor) {
          using T = ElementOf<decltype(tensor)>;
          std::vector<Tensor<T>> parts;
          for (auto [i, input] : llvm::enumerate(concat.getInputs()))
            parts.push_back(
                sameKind<T>(get(input, &op), &op, "input #" + llvm::Twine(i)));
          return Datum(
              reference::concat(parts, static_cast<int64_t>(concat.getDim())));
        }));
      })
      .Default([&](Operation *) {
        fail(&op, "is not supported by the float64 evaluator");
      });
}
