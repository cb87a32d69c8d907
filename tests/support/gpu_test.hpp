#pragma once
// Helpers shared by the GPU tests: the device they run on and a stream per test.
#include <cstdlib>
#include <string>

#include "engine/device.hpp"

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

}  // namespace moe::test
