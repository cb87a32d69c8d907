#pragma once
// A call into an engine adapter and what becomes of its failure: an error naming the adapter,
// the function, the status and the adapter's own message.
#include <string>
#include <string_view>

#include "common/exit_codes.hpp"
#include "moebench/engine_abi.h"

namespace moe::external {

class AdapterLibrary;

// A moebench_error to hand to a call: its size set, its message empty.
moebench_error empty_error();

// The adapter's message, bounded to its buffer and made one printable line; "(no message)"
// when it wrote none.
std::string message_of(const moebench_error& error);

// "MOEBENCH_ERROR_UNSUPPORTED", or "status 17" for a code the ABI does not define.
std::string status_name(moebench_status status);

// The exit code a failed call maps to: out of memory is the machine's (3), the rest the
// probe's (4).
ExitCode exit_code_for_status(moebench_status status);

// "adapter 'x' 0.1: create failed (MOEBENCH_ERROR_UNSUPPORTED): int4 is not implemented".
std::string describe_failure(const AdapterLibrary& adapter, std::string_view function,
                             moebench_status status, const moebench_error& error);

// Raises moe::Error (exit_code_for_status) with describe_failure's line unless `status` is
// MOEBENCH_OK.
void check_call(const AdapterLibrary& adapter, std::string_view function, moebench_status status,
                const moebench_error& error);

}  // namespace moe::external
