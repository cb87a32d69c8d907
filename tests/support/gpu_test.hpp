#pragma once
// Helpers shared by the GPU tests: the device they run on and a stream per test.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "engine/device.hpp"
#include "probes/probe.hpp"

namespace moe::test {

// Shapes and cases: $MOEBENCH_FIXTURES wins, so tests run from a copied build on a GPU machine.
inline std::string fixtures_dir() {
  const char* env = std::getenv("MOEBENCH_FIXTURES");
  return env ? env : MOEBENCH_FIXTURES_DIR;
}

// The device every GPU test uses (index 0), opened once.
inline const Device& test_device() {
  static const Device device = Device::open(0);
  return device;
}

// CTest's SKIP_RETURN_CODE for the GPU tests (tests/CMakeLists.txt).
constexpr int kSkipExitCode = 77;

// Ends the whole test executable as skipped, with the reason, when this build or machine cannot
// run `probe` (built without NCCL, fewer GPUs than it needs): a case that returned early would
// count as passed. For executables whose every case needs the probe.
inline void skip_unless_runnable(const ProbeInfo& probe) {
  std::string why;
  if (!probe.not_built.empty()) why = std::string(probe.not_built);
  else if (Device::count() < probe.min_gpus)
    why = "needs " + std::to_string(probe.min_gpus) + " GPUs, this machine has " + std::to_string(Device::count());
  if (why.empty()) return;
  std::printf("SKIPPED: %s: %s\n", std::string(probe.name).c_str(), why.c_str());
  std::fflush(stdout);
  std::exit(kSkipExitCode);
}

}  // namespace moe::test
