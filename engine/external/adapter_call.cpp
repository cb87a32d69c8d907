#include "engine/external/adapter_call.hpp"

#include <cstring>

#include "common/errors.hpp"
#include "engine/external/adapter_library.hpp"

namespace moe::external {

moebench_error empty_error() {
  moebench_error e;
  std::memset(&e, 0, sizeof e);
  e.struct_size = sizeof e;
  return e;
}

std::string message_of(const moebench_error& error) {
  // The adapter may have left it unterminated: read no further than the buffer.
  const std::size_t n = strnlen(error.message, sizeof error.message);
  std::string out;
  for (std::size_t i = 0; i < n; ++i) {
    const char c = error.message[i];
    out += c == '\n' || c == '\r' || c == '\t' ? ' ' : (c < ' ' || c == 127 ? '?' : c);
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out.empty() ? "(no message)" : out;
}

std::string status_name(moebench_status status) {
  switch (status) {
    case MOEBENCH_OK: return "MOEBENCH_OK";
    case MOEBENCH_ERROR_INVALID_ARGUMENT: return "MOEBENCH_ERROR_INVALID_ARGUMENT";
    case MOEBENCH_ERROR_UNSUPPORTED: return "MOEBENCH_ERROR_UNSUPPORTED";
    case MOEBENCH_ERROR_OUT_OF_MEMORY: return "MOEBENCH_ERROR_OUT_OF_MEMORY";
    case MOEBENCH_ERROR_CUDA: return "MOEBENCH_ERROR_CUDA";
    case MOEBENCH_ERROR_INTERNAL: return "MOEBENCH_ERROR_INTERNAL";
  }
  return "status " + std::to_string(status);
}

ExitCode exit_code_for_status(moebench_status status) {
  return status == MOEBENCH_ERROR_OUT_OF_MEMORY ? ExitCode::environment : ExitCode::probe_error;
}

std::string describe_failure(const AdapterLibrary& adapter, std::string_view function,
                             moebench_status status, const moebench_error& error) {
  return adapter.label() + ": " + std::string(function) + " failed (" + status_name(status) +
         "): " + message_of(error);
}

void check_call(const AdapterLibrary& adapter, std::string_view function, moebench_status status,
                const moebench_error& error) {
  if (status == MOEBENCH_OK) return;
  throw Error(exit_code_for_status(status), describe_failure(adapter, function, status, error));
}

}  // namespace moe::external
