//===- Memory.cpp - the kernels' allocator, memory stats and threads ------===//
//
// Part of the Recur project.
//
// recurc lowers memref.alloc with MLIR's `use-generic-functions`, so every
// buffer a kernel allocates (workspace and results) comes from the
// _mlir_memref_to_llvm_* functions below. They record each pointer in a
// registry, which lets recur_forward tell a result buffer the kernel made
// (which the runtime frees or adopts) from one it merely passed through (an
// argument, a constant global). State buffers and the contiguous copies of
// strided arguments come from the same allocator, so the stats cover all the
// tensor memory the runtime holds.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <omp.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <unordered_map>

using namespace recur::rt;

namespace {

/// The live tracked buffers and the counters of recur_memory_stats.
struct Registry {
  std::mutex mutex;
  std::unordered_map<const void *, size_t> sizes;
  size_t liveBytes = 0;
  size_t peakBytes = 0;
  uint64_t allocations = 0;
};

/// The registry. Never destroyed: kernels of other static objects may still
/// free buffers while the program exits.
Registry &registry() {
  static Registry *instance = new Registry;
  return *instance;
}

/// The smallest power of two >= max(alignment, kAlignment), or 0 when there
/// is none.
size_t effectiveAlignment(size_t alignment) {
  size_t result = kAlignment;
  while (result < alignment && result != 0)
    result <<= 1;
  return result;
}

/// posix_memalign that returns NULL on failure.
void *alignedMalloc(size_t alignment, size_t bytes) {
  void *ptr = nullptr;
  if (alignment == 0 ||
      posix_memalign(&ptr, alignment, std::max<size_t>(bytes, 1)) != 0)
    return nullptr;
  return ptr;
}

/// Adds `ptr` (of `bytes`) to the registry; false when the registry could
/// not grow.
bool registerBuffer(void *ptr, size_t bytes) {
  Registry &reg = registry();
  std::lock_guard<std::mutex> lock(reg.mutex);
  try {
    reg.sizes.emplace(ptr, bytes);
  } catch (...) {
    return false;
  }
  reg.liveBytes += bytes;
  reg.peakBytes = std::max(reg.peakBytes, reg.liveBytes);
  ++reg.allocations;
  return true;
}

/// Removes `ptr` from the registry; false when it is not there.
bool unregisterBuffer(const void *ptr) {
  Registry &reg = registry();
  std::lock_guard<std::mutex> lock(reg.mutex);
  auto it = reg.sizes.find(ptr);
  if (it == reg.sizes.end())
    return false;
  reg.liveBytes -= it->second;
  reg.sizes.erase(it);
  return true;
}

/// The thread count in force when the library was loaded (OMP_NUM_THREADS,
/// else the number of cores); recur_set_num_threads(n <= 0) restores it.
const int defaultThreads = omp_get_max_threads();

} // namespace

void *recur::rt::trackedAlloc(size_t alignment, size_t bytes) {
  void *ptr = alignedMalloc(effectiveAlignment(alignment), bytes);
  if (ptr && !registerBuffer(ptr, bytes)) {
    std::free(ptr);
    return nullptr;
  }
  return ptr;
}

void recur::rt::trackedFree(void *ptr) {
  if (ptr && unregisterBuffer(ptr))
    std::free(ptr);
}

bool recur::rt::isTracked(const void *ptr) {
  if (!ptr)
    return false;
  Registry &reg = registry();
  std::lock_guard<std::mutex> lock(reg.mutex);
  return reg.sizes.count(ptr) != 0;
}

BufferList::~BufferList() {
  for (void *ptr : buffers)
    trackedFree(ptr);
}

void BufferList::add(void *ptr) {
  if (ptr && !contains(ptr))
    buffers.push_back(ptr);
}

bool BufferList::contains(const void *ptr) const {
  return std::find(buffers.begin(), buffers.end(), ptr) != buffers.end();
}

void BufferList::release(const void *ptr) {
  buffers.erase(std::remove(buffers.begin(), buffers.end(), ptr),
                buffers.end());
}

//===----------------------------------------------------------------------===//
// The allocation functions of generated kernels
//===----------------------------------------------------------------------===//

extern "C" {

__attribute__((visibility("default"))) void *
_mlir_memref_to_llvm_alloc(uint64_t size) {
  return trackedAlloc(kAlignment, static_cast<size_t>(size));
}

__attribute__((visibility("default"))) void *
_mlir_memref_to_llvm_aligned_alloc(uint64_t alignment, uint64_t size) {
  return trackedAlloc(static_cast<size_t>(alignment),
                      static_cast<size_t>(size));
}

__attribute__((visibility("default"))) void
_mlir_memref_to_llvm_free(void *ptr) {
  trackedFree(ptr);
}

} // extern "C"

//===----------------------------------------------------------------------===//
// Public API
//===----------------------------------------------------------------------===//

extern "C" void *recur_alloc(size_t bytes) {
  return alignedMalloc(kAlignment, bytes);
}

extern "C" void recur_free(void *ptr) {
  // A tracked buffer handed to recur_free must leave the registry too, or a
  // later allocation at the same address would look tracked twice.
  if (!ptr)
    return;
  unregisterBuffer(ptr);
  std::free(ptr);
}

extern "C" void recur_memory_stats_get(recur_memory_stats *stats) {
  if (!stats)
    return;
  Registry &reg = registry();
  std::lock_guard<std::mutex> lock(reg.mutex);
  stats->live_bytes = reg.liveBytes;
  stats->peak_bytes = reg.peakBytes;
  stats->allocations = reg.allocations;
}

extern "C" void recur_memory_stats_reset_peak(void) {
  Registry &reg = registry();
  std::lock_guard<std::mutex> lock(reg.mutex);
  reg.peakBytes = reg.liveBytes;
}

extern "C" void recur_set_num_threads(int n) {
  omp_set_num_threads(n > 0 ? n : defaultThreads);
}

extern "C" int recur_get_num_threads(void) { return omp_get_max_threads(); }
