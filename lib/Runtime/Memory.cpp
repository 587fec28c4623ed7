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
// Large buffers (1 MiB and more) that kernels free are kept for reuse, up to
// RECUR_ALLOC_CACHE_MB (default 1024; 0 turns it off), most recent first: a
// kernel called again at the same sizes then gets buffers whose pages are
// already mapped, instead of fresh ones from mmap that fault in page by page
// (a 64 MiB scan output costs tens of milliseconds that way). The stats count
// only live buffers. Sanitizer builds keep no cache, so that ASan still sees
// every use after free.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <vector>

using namespace recur::rt;

namespace {

/// A freed large buffer kept for reuse: its pointer, capacity (the bytes it
/// was allocated with) and alignment.
struct CachedBuffer {
  void *ptr;
  size_t capacity;
  size_t alignment;
};

/// The live tracked buffers (each with the bytes asked for and the
/// capacity of its allocation), the counters of recur_memory_stats, and the
/// cache of freed large buffers.
struct Registry {
  std::mutex mutex;
  std::unordered_map<const void *, std::pair<size_t, size_t>> sizes;
  size_t liveBytes = 0;
  size_t peakBytes = 0;
  uint64_t allocations = 0;
  std::vector<CachedBuffer> cache; // most recently freed last
  size_t cachedBytes = 0;
};

/// Buffers at least this large are cached when freed.
constexpr size_t kCacheMinBytes = size_t(1) << 20;

/// The most bytes the cache holds (RECUR_ALLOC_CACHE_MB, default 1 GiB; none
/// under a sanitizer).
size_t cacheLimit() {
#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer)
  return 0;
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
  return 0;
#endif
  static const size_t limit = megabytesFromEnv("RECUR_ALLOC_CACHE_MB", 1024);
  return limit;
}

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
bool registerBuffer(void *ptr, size_t bytes, size_t capacity) {
  Registry &reg = registry();
  std::lock_guard<std::mutex> lock(reg.mutex);
  try {
    reg.sizes.emplace(ptr, std::make_pair(bytes, capacity));
  } catch (...) {
    return false;
  }
  reg.liveBytes += bytes;
  reg.peakBytes = std::max(reg.peakBytes, reg.liveBytes);
  ++reg.allocations;
  return true;
}

/// Removes `ptr` from the registry; false when it is not there. Its
/// capacity goes to `capacity`.
bool unregisterBuffer(const void *ptr, size_t *capacity = nullptr) {
  Registry &reg = registry();
  std::lock_guard<std::mutex> lock(reg.mutex);
  auto it = reg.sizes.find(ptr);
  if (it == reg.sizes.end())
    return false;
  reg.liveBytes -= it->second.first;
  if (capacity)
    *capacity = it->second.second;
  reg.sizes.erase(it);
  return true;
}

/// A cached buffer of at least `bytes` (and at most 5/4 of it) aligned to
/// `alignment`, taken out of the cache; NULL when there is none.
CachedBuffer takeCached(size_t alignment, size_t bytes) {
  Registry &reg = registry();
  std::lock_guard<std::mutex> lock(reg.mutex);
  for (size_t i = reg.cache.size(); i-- > 0;) {
    CachedBuffer c = reg.cache[i];
    if (c.alignment >= alignment && c.alignment % alignment == 0 &&
        c.capacity >= bytes && c.capacity - bytes <= bytes / 4) {
      reg.cache.erase(reg.cache.begin() + i);
      reg.cachedBytes -= c.capacity;
      return c;
    }
  }
  return {nullptr, 0, 0};
}

/// Keeps a freed buffer for reuse when it is large and fits the cache
/// (dropping the oldest cached ones to make room); false when it does not,
/// and the caller frees it.
bool keepCached(void *ptr, size_t capacity, size_t alignment) {
  size_t limit = cacheLimit();
  if (capacity < kCacheMinBytes || capacity > limit)
    return false;
  std::vector<void *> dropped;
  {
    Registry &reg = registry();
    std::lock_guard<std::mutex> lock(reg.mutex);
    try {
      reg.cache.push_back({ptr, capacity, alignment});
    } catch (...) {
      return false;
    }
    reg.cachedBytes += capacity;
    size_t oldest = 0;
    while (reg.cachedBytes > limit) {
      reg.cachedBytes -= reg.cache[oldest].capacity;
      dropped.push_back(reg.cache[oldest].ptr);
      ++oldest;
    }
    reg.cache.erase(reg.cache.begin(), reg.cache.begin() + oldest);
  }
  for (void *p : dropped)
    std::free(p);
  return true;
}

/// The thread count in force when the library was loaded (OMP_NUM_THREADS,
/// else the number of cores); recur_set_num_threads(n <= 0) restores it.
const int defaultThreads = omp_get_max_threads();

} // namespace

size_t recur::rt::megabytesFromEnv(const char *name, size_t defaultMb) {
  const char *env = std::getenv(name);
  if (!env || !*env)
    return defaultMb << 20;
  char *end = nullptr;
  unsigned long long mb = std::strtoull(env, &end, 10);
  return *end ? defaultMb << 20 : size_t(mb) << 20;
}

void *recur::rt::trackedAlloc(size_t alignment, size_t bytes) {
  size_t align = effectiveAlignment(alignment);
  size_t capacity = bytes;
  void *ptr = nullptr;
  if (bytes >= kCacheMinBytes && align != 0) {
    CachedBuffer cached = takeCached(align, bytes);
    ptr = cached.ptr;
    capacity = cached.capacity;
  }
  if (!ptr) {
    ptr = alignedMalloc(align, bytes);
    capacity = bytes;
  }
  if (ptr && !registerBuffer(ptr, bytes, capacity)) {
    std::free(ptr);
    return nullptr;
  }
  return ptr;
}

void recur::rt::trackedFree(void *ptr) {
  size_t capacity = 0;
  if (!ptr || !unregisterBuffer(ptr, &capacity))
    return;
  // Its alignment: the largest power of two (up to 4 KiB) the address has.
  size_t alignment = kAlignment;
  while (alignment < 4096 &&
         reinterpret_cast<uintptr_t>(ptr) % (alignment * 2) == 0)
    alignment *= 2;
  if (!keepCached(ptr, capacity, alignment))
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
