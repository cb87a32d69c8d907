#pragma once
#include <stdexcept>
#include <string>

#include "common/exit_codes.hpp"

namespace moe {

// Base of every error moebench raises on purpose; carries the exit code the CLI should use.
class Error : public std::runtime_error {
 public:
  Error(ExitCode code, const std::string& what) : std::runtime_error(what), code_(code) {}
  ExitCode code() const { return code_; }

 private:
  ExitCode code_;
};

// Bad input from the user: a name, a number, a file. Raised before any device work.
class UsageError : public Error {
 public:
  explicit UsageError(const std::string& what) : Error(ExitCode::usage, what) {}
};

// The machine cannot run the request: no GPU, no driver, not enough memory.
class EnvironmentError : public Error {
 public:
  explicit EnvironmentError(const std::string& what) : Error(ExitCode::environment, what) {}
};

}  // namespace moe
