#pragma once
// The one-line message an adapter hands back beside a failing status (engine_abi.h's
// moebench_error), shared by the adapters in this tree; it needs only the C header, so an
// adapter of another design (cublas_per_expert/) uses it without moebench's code.
#include <cstdarg>
#include <cstdio>

#include "moebench/engine_abi.h"

namespace moebench_adapters {

// Writes the message where the caller's error struct has room for it; returns `status`.
inline moebench_status fail(moebench_error* error, moebench_status status, const char* format, ...) {
  if (error && error->struct_size >= sizeof(moebench_error)) {
    va_list args;
    va_start(args, format);
    std::vsnprintf(error->message, sizeof error->message, format, args);
    va_end(args);
  }
  return status;
}

}  // namespace moebench_adapters
