//===- Error.cpp - status names and the thread-local last error -----------===//
//
// Part of the Recur project.
//
// Every failing call records a message here, one buffer per thread. The
// buffer is a fixed array, so recording an error never allocates.
//
//===----------------------------------------------------------------------===//

#include "Internal.h"

#include <cstdarg>
#include <cstdio>

using namespace recur::rt;

namespace {

/// The longest message kept; longer ones are cut.
constexpr size_t kMessageSize = 1024;

thread_local char lastError[kMessageSize];

/// Writes `prefix` then `format` into this thread's message buffer.
void record(const char *prefix, const char *format, va_list args) {
  int used = std::snprintf(lastError, kMessageSize, "%s", prefix);
  if (used < 0)
    used = 0;
  size_t offset = static_cast<size_t>(used) < kMessageSize
                      ? static_cast<size_t>(used)
                      : kMessageSize - 1;
  std::vsnprintf(lastError + offset, kMessageSize - offset, format, args);
}

} // namespace

recur_status recur::rt::setError(recur_status status, const char *format, ...) {
  va_list args;
  va_start(args, format);
  record("", format, args);
  va_end(args);
  return status;
}

recur_status Context::fail(recur_status status, const char *format, ...) const {
  // Only the ABI version of a descriptor of another ABI can be trusted.
  bool named = layer && layer->abi_version == RECUR_ABI_VERSION;
  char prefix[256];
  std::snprintf(prefix, sizeof(prefix), "%s(%s): ", function,
                named ? nameOr(layer->name) : "?");
  va_list args;
  va_start(args, format);
  record(prefix, format, args);
  va_end(args);
  return status;
}

extern "C" const char *recur_status_name(recur_status status) {
  switch (rawValue(status)) {
  case RECUR_OK:
    return "RECUR_OK";
  case RECUR_ERROR_NULL_POINTER:
    return "RECUR_ERROR_NULL_POINTER";
  case RECUR_ERROR_INVALID_ARGUMENT:
    return "RECUR_ERROR_INVALID_ARGUMENT";
  case RECUR_ERROR_SHAPE:
    return "RECUR_ERROR_SHAPE";
  case RECUR_ERROR_DTYPE:
    return "RECUR_ERROR_DTYPE";
  case RECUR_ERROR_STATE:
    return "RECUR_ERROR_STATE";
  case RECUR_ERROR_OUT_OF_MEMORY:
    return "RECUR_ERROR_OUT_OF_MEMORY";
  case RECUR_ERROR_FORMAT:
    return "RECUR_ERROR_FORMAT";
  case RECUR_ERROR_ABI:
    return "RECUR_ERROR_ABI";
  case RECUR_ERROR_UNSUPPORTED:
    return "RECUR_ERROR_UNSUPPORTED";
  case RECUR_ERROR_INTERNAL:
    return "RECUR_ERROR_INTERNAL";
  case RECUR_ERROR_NO_DEVICE:
    return "RECUR_ERROR_NO_DEVICE";
  case RECUR_ERROR_DEVICE:
    return "RECUR_ERROR_DEVICE";
  }
  return "RECUR_STATUS_UNKNOWN";
}

extern "C" const char *recur_last_error(void) { return lastError; }
