// Entry point of every GPU test executable: skips (exit MOEBENCH_SKIP_RETURN_CODE, which CTest
// reports as skipped) with the reason when no GPU is usable, otherwise runs doctest.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <string>
#include <string_view>

#include "engine/device.hpp"
#include "test_env.hpp"

namespace {
// doctest's queries (--list-test-cases, --help, ...) run no test, so they need no GPU: the
// sanitizer script lists test cases before it sends them to a GPU machine's tools.
bool is_query(std::string_view arg) {
  const std::string_view name = arg.substr(0, arg.find('='));
  for (std::string_view q : {"-h", "-?", "--help", "-v", "--version", "-c", "--count", "-ltc",
                             "--list-test-cases", "-lts", "--list-test-suites", "-lr",
                             "--list-reporters"})
    if (name == q) return true;
  return false;
}
}  // namespace

int main(int argc, char** argv) {
  bool query = false;
  for (int i = 1; i < argc; ++i) query = query || is_query(argv[i]);
  if (!query) moe::test::check_env();  // a bad MOE_TEST_* is exit 2 here, where no GPU is too
  std::string why;
  if (!query && moe::Device::count(&why) == 0) {
    std::printf("SKIPPED: no usable CUDA GPU (%s); GPU tests run only where one exists\n",
                why.c_str());
    return MOEBENCH_SKIP_RETURN_CODE;
  }
  doctest::Context context(argc, argv);
  return context.run();
}
