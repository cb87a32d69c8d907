// Entry point of every GPU test executable: skips (exit MOEBENCH_SKIP_RETURN_CODE, which CTest
// reports as skipped) with the reason when no GPU is usable, otherwise runs doctest.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <string>

#include "engine/device.hpp"

int main(int argc, char** argv) {
  std::string why;
  if (moe::Device::count(&why) == 0) {
    std::printf("SKIPPED: no usable CUDA GPU (%s); GPU tests run only where one exists\n",
                why.c_str());
    return MOEBENCH_SKIP_RETURN_CODE;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
