//===- ComplexViews.cpp - bufferization and lowering of the complex views -===//
//
// Part of the Recur project.
//
// recur.view_as_real and recur.view_as_complex bufferize to themselves on
// buffers (a view, equivalent to its source: no copy, no read, no write)
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

using namespace mlir;
using namespace mlir::recur;
using namespace mlir::bufferization;

namespace {

/// `op`'s buffer form: the same view of its source's buffer.
template <typename ViewOp>
LogicalResult bufferizeView(ViewOp op, RewriterBase &rewriter,
                            const BufferizationOptions &options,
                            BufferizationState &state) {
  FailureOr<Value> buffer = getBuffer(rewriter, op.getSource(), options, state);
  if (failed(buffer))
    return failure();
  Type type = ViewOp::getViewType(buffer->getType());
  if (!type)
    return op.emitOpError("has no view of the buffer ")
           << buffer->getType()
           << " (its last dimension must have a static stride of 1)";
  replaceOpWithNewBufferizedOp<ViewOp>(rewriter, op, type, *buffer);
  return success();
}

/// The buffer type of `op`'s result: the view of its source's.
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
  if (!type)
    return op.emitOpError("has no view of the buffer ")
           << *source << " (its last dimension must have a static stride of 1)";
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
      // Halving divides exactly: the verifier and the buffers the views
      // are made of keep these even.
      if (toReal)
        return LLVM::ShlOp::create(rewriter, loc, n, one);
      return LLVM::LShrOp::create(rewriter, loc, n, one);
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

bool ViewAsRealOp::bufferizesToMemoryRead(OpOperand &, const AnalysisState &) {
  return false;
}
bool ViewAsRealOp::bufferizesToMemoryWrite(OpOperand &, const AnalysisState &) {
  return false;
}
AliasingValueList ViewAsRealOp::getAliasingValues(OpOperand &,
                                                  const AnalysisState &) {
  return {{getResult(), BufferRelation::Equivalent}};
}
LogicalResult ViewAsRealOp::bufferize(RewriterBase &rewriter,
                                      const BufferizationOptions &options,
                                      BufferizationState &state) {
  return bufferizeView(*this, rewriter, options, state);
}
FailureOr<BufferLikeType>
ViewAsRealOp::getBufferType(Value, const BufferizationOptions &options,
                            const BufferizationState &state,
                            SmallVector<Value> &invocationStack) {
  return viewBufferType(*this, options, state, invocationStack);
}

bool ViewAsComplexOp::bufferizesToMemoryRead(OpOperand &,
                                             const AnalysisState &) {
  return false;
}
bool ViewAsComplexOp::bufferizesToMemoryWrite(OpOperand &,
                                              const AnalysisState &) {
  return false;
}
AliasingValueList ViewAsComplexOp::getAliasingValues(OpOperand &,
                                                     const AnalysisState &) {
  return {{getResult(), BufferRelation::Equivalent}};
}
LogicalResult ViewAsComplexOp::bufferize(RewriterBase &rewriter,
                                         const BufferizationOptions &options,
                                         BufferizationState &state) {
  return bufferizeView(*this, rewriter, options, state);
}
FailureOr<BufferLikeType>
ViewAsComplexOp::getBufferType(Value, const BufferizationOptions &options,
                               const BufferizationState &state,
                               SmallVector<Value> &invocationStack) {
  return viewBufferType(*this, options, state, invocationStack);
}

void mlir::recur::addRecurToLLVMInterface(RecurDialect *dialect) {
  dialect->addInterfaces<RecurToLLVMInterface>();
}
