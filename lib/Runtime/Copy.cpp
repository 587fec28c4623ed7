//===- Copy.cpp - memrefCopy for generated kernels --------------------------===//
//
// Part of the Recur project.
//
// MLIR lowers a memref.copy between buffers that are not both contiguous
// (a block of a sequence, a window of a cache) to a call of `memrefCopy`,
// which upstream ships in libmlir_c_runner_utils. Kernels link librecur_rt
// instead, so the runtime defines it: the same signature and semantics, no
// LLVM dependency.
//
//===----------------------------------------------------------------------===//

#include <cstdint>
#include <cstring>

namespace {

/// An unranked memref as the LLVM lowering passes it: the rank and a
/// pointer to the ranked descriptor {allocated, aligned, offset,
/// sizes[rank], strides[rank]}.
struct UnrankedMemRef {
  int64_t rank;
  void *descriptor;
};

struct RankedView {
  char *data; // aligned pointer plus offset, in bytes
  const int64_t *sizes;
  const int64_t *strides;
};

RankedView viewOf(const UnrankedMemRef &m, int64_t elemSize) {
  auto *words = static_cast<int64_t *>(m.descriptor);
  char *aligned = reinterpret_cast<char *>(words[1]);
  return {aligned + words[2] * elemSize, words + 3, words + 3 + m.rank};
}

/// Copies dimension `d` and those after it, element by element, or as one
/// block when the innermost dimension is contiguous in both.
void copyDim(int64_t d, int64_t rank, int64_t elemSize, const RankedView &src,
             const RankedView &dst, const char *s, char *t) {
  if (d == rank) {
    std::memcpy(t, s, elemSize);
    return;
  }
  int64_t n = src.sizes[d];
  if (d == rank - 1 && src.strides[d] == 1 && dst.strides[d] == 1) {
    std::memcpy(t, s, n * elemSize);
    return;
  }
  for (int64_t i = 0; i < n; ++i)
    copyDim(d + 1, rank, elemSize, src, dst, s + i * src.strides[d] * elemSize,
            t + i * dst.strides[d] * elemSize);
}

} // namespace

extern "C" __attribute__((visibility("default"))) void
memrefCopy(int64_t elemSize, UnrankedMemRef *srcArg, UnrankedMemRef *dstArg) {
  RankedView src = viewOf(*srcArg, elemSize), dst = viewOf(*dstArg, elemSize);
  int64_t rank = srcArg->rank;
  for (int64_t d = 0; d < rank; ++d)
    if (src.sizes[d] == 0)
      return;
  copyDim(0, rank, elemSize, src, dst, src.data, dst.data);
}
