#pragma once
// The last lines of a child process's log, joined into one line for an error message.
#include <cstddef>
#include <string>

namespace moe {

// The last `n` lines of the file at `path`, joined by " | " ("" when it cannot be read).
std::string log_tail(const std::string& path, std::size_t n);

}  // namespace moe
