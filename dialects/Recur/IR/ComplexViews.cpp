//===- ComplexViews.cpp - bufferization and lowering of the complex views -===//
//
// Part of the Recur project.
//
// recur.view_as_real and recur.view_as_complex bufferize to themselves on
// buffers (a view, equivalent to its source: no copy, no write; a source
// whose last stride is not known to be 1 is copied into a contiguous
// buffer first)
// and lower to the LLVM dialect as a new memref descriptor over the same
// pointers, through the dialect's ConvertToLLVMPatternInterface (so
// convert-to-llvm lowers them).
//
//===----------------------------------------------------------------------===//

#include "Recur/IR/Recur.h"

#include "mlir/Conversion/ConvertToLLVM/ToLLVMInterface.h"
#include "mlir/Conversion/LLVMCommon/MemRefBuilder.h"
#include "mlir/Conversion/LLVMCommon/Pattern.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::recur;
using namespace mlir::bufferization;

namespace {

/// `type` with the identity layout: the buffer a source whose last
/// dimension is not known to be contiguous is copied into.
MemRefType contiguous(MemRefType type) {
  return MemRefType::get(type.getShape(), type.getElementType(),
                         MemRefLayoutAttrInterface(), type.getMemorySpace());
}

/// `op`'s buffer form: the same view of its source's buffer. A buffer of
/// no view (a last stride not known to be 1: a layout bufferization made
/// fully dynamic, say, for a value carried by a loop) is copied into a
/// contiguous one first, which is viewed.
template <typename ViewOp>
LogicalResult bufferizeView(ViewOp op, RewriterBase &rewriter,
                            const BufferizationOptions &options,
                            BufferizationState &state) {
  FailureOr<Value> buffer = getBuffer(rewriter, op.getSource(), options, state);
  if (failed(buffer))
    return failure();
  Type type = ViewOp::getViewType(buffer->getType());
  auto memref = dyn_cast<MemRefType>(buffer->getType());
  if (!type && memref) {
    MemRefType dense = contiguous(memref);
    if (Type denseView = ViewOp::getViewType(dense)) {
      Location loc = op.getLoc();
      SmallVector<Value> sizes;
      for (int64_t d = 0, e = dense.getRank(); d < e; ++d)
        if (dense.isDynamicDim(d))
          sizes.push_back(memref::DimOp::create(rewriter, loc, *buffer, d));
      FailureOr<Value> copy = options.createAlloc(rewriter, loc, dense, sizes);
      if (failed(copy) ||
          failed(options.createMemCpy(rewriter, loc, *buffer, *copy)))
        return failure();
      buffer = copy;
      type = denseView;
    }
  }
  if (!type)
    return op.emitOpError("has no view of the buffer ") << buffer->getType();
  replaceOpWithNewBufferizedOp<ViewOp>(rewriter, op, type, *buffer);
  return success();
}

/// What `op`'s result aliases: its source, equivalent, where the source's
/// buffer has a view; nothing where bufferizeView copies it.
template <typename ViewOp>
AliasingValueList viewAliases(ViewOp op, const AnalysisState &state) {
  BufferizationState bufferizationState;
  FailureOr<BufferLikeType> source = bufferization::getBufferType(
      op.getSource(), state.getOptions(), bufferizationState);
  if (failed(source) || !ViewOp::getViewType(*source))
    return {};
  return {{op.getResult(), BufferRelation::Equivalent}};
}

/// The buffer type of `op`'s result: the view of its source's (or of a
/// contiguous copy of it, see bufferizeView).
template <typename ViewOp>
FailureOr<BufferLikeType> viewBufferType(ViewOp op,
                                         const BufferizationOptions &options,
                                         const BufferizationState &state,
                                         SmallVector<Value> &invocationStack) {
  FailureOr<BufferLikeType> source = bufferization::getBufferType(
      op.getSource(), options, state, invocationStack);
  if (failed(source))
    return failure();
  Type type = ViewOp::getViewType(*source);
  if (auto memref = dyn_cast<MemRefType>(Type(*source)); !type && memref)
    type = ViewOp::getViewType(contiguous(memref));
  if (!type)
    return op.emitOpError("has no view of the buffer ") << *source;
  return cast<BufferLikeType>(type);
}

/// A view of a buffer as a new descriptor: the same pointers, the offset
/// and every stride but the last scaled, the last size scaled (by 2 to the
/// parts, by 1/2 to complex elements).
template <typename ViewOp, bool toReal>
struct ComplexViewToLLVM : ConvertOpToLLVMPattern<ViewOp> {
  using ConvertOpToLLVMPattern<ViewOp>::ConvertOpToLLVMPattern;
  using OpAdaptor = typename ViewOp::Adaptor;

  LogicalResult
  matchAndRewrite(ViewOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto type = dyn_cast<MemRefType>(op.getType());
    if (!type)
      return rewriter.notifyMatchFailure(op, "a tensor view");
    Location loc = op.getLoc();
    Type descriptorType = this->getTypeConverter()->convertType(type);
    if (!descriptorType)
      return rewriter.notifyMatchFailure(op, "no descriptor type");
    Type indexType = this->getIndexType();
    Value one = LLVM::ConstantOp::create(rewriter, loc, indexType,
                                         rewriter.getIndexAttr(1));
    auto scale = [&](Value n) -> Value {
      // Halving divides exactly (arithmetically: a stride may be
      // negative): the verifier checks the static values, and the
      // dynamic ones come from view_as_real (doubled).
      if (toReal)
        return LLVM::ShlOp::create(rewriter, loc, n, one);
      return LLVM::AShrOp::create(rewriter, loc, n, one);
    };
    MemRefDescriptor source(adaptor.getSource());
    auto view = MemRefDescriptor::poison(rewriter, loc, descriptorType);
    view.setAllocatedPtr(rewriter, loc, source.allocatedPtr(rewriter, loc));
    view.setAlignedPtr(rewriter, loc, source.alignedPtr(rewriter, loc));
    view.setOffset(rewriter, loc, scale(source.offset(rewriter, loc)));
    unsigned rank = type.getRank();
    for (unsigned d = 0; d < rank; ++d) {
      Value size = source.size(rewriter, loc, d);
      Value stride = source.stride(rewriter, loc, d);
      bool last = d + 1 == rank;
      view.setSize(rewriter, loc, d, last ? scale(size) : size);
      view.setStride(rewriter, loc, d, last ? stride : scale(stride));
    }
    rewriter.replaceOp(op, {view});
    return success();
  }
};

/// Lets convert-to-llvm lower the views of buffers.
struct RecurToLLVMInterface : ConvertToLLVMPatternInterface {
  using ConvertToLLVMPatternInterface::ConvertToLLVMPatternInterface;

  void populateConvertToLLVMConversionPatterns(
      ConversionTarget &target, LLVMTypeConverter &typeConverter,
      RewritePatternSet &patterns) const final {
    patterns.add<ComplexViewToLLVM<ViewAsRealOp, true>,
                 ComplexViewToLLVM<ViewAsComplexOp, false>>(typeConverter);
  }
};

} // namespace

// The BufferizableOpInterface methods of both views, the same for each.
// The source is read where it has to be copied into a contiguous buffer
// (see bufferizeView); as tensor.collapse_shape, say so always.
#define RECUR_COMPLEX_VIEW_BUFFERIZATION(ViewOp)                               \
  bool ViewOp::bufferizesToMemoryRead(OpOperand &, const AnalysisState &) {    \
    return true;                                                               \
  }                                                                            \
  bool ViewOp::bufferizesToMemoryWrite(OpOperand &, const AnalysisState &) {   \
    return false;                                                              \
  }                                                                            \
  AliasingValueList ViewOp::getAliasingValues(OpOperand &,                     \
                                              const AnalysisState &state) {    \
    return viewAliases(*this, state);                                          \
  }                                                                            \
  LogicalResult ViewOp::bufferize(RewriterBase &rewriter,                      \
                                  const BufferizationOptions &options,         \
                                  BufferizationState &state) {                 \
    return bufferizeView(*this, rewriter, options, state);                     \
  }                                                                            \
  FailureOr<BufferLikeType> ViewOp::getBufferType(                             \
      Value, const BufferizationOptions &options,                              \
      const BufferizationState &state, SmallVector<Value> &invocationStack) {  \
    return viewBufferType(*this, options, state, invocationStack);             \
  }

RECUR_COMPLEX_VIEW_BUFFERIZATION(ViewAsRealOp)
RECUR_COMPLEX_VIEW_BUFFERIZATION(ViewAsComplexOp)

#undef RECUR_COMPLEX_VIEW_BUFFERIZATION

void mlir::recur::addRecurToLLVMInterface(RecurDialect *dialect) {
  dialect->addInterfaces<RecurToLLVMInterface>();
}
