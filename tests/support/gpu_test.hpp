#pragma once
// Helpers shared by the GPU tests: the device they run on and a stream per test.
#include "engine/device.hpp"

namespace moe::test {

// The device every GPU test uses (index 0), opened once.
inline const Device& test_device() {
  static const Device device = Device::open(0);
  return device;
}

}  // namespace moe::test
