// MOE_TEST_PART, which splits a slow GPU test case over several sanitizer runs: the parts of
// one split together run every inner case once, and a bad value is refused by name. And
// MOE_TEST_REPEAT, which leaves the forward tests' repeat run out of such a run.
#include <doctest/doctest.h>

#include <vector>

#include "support/test_env.hpp"

using moe::test::parse_test_part;
using moe::test::parse_test_repeat;
using moe::test::TestPart;

TEST_CASE("the parts of a split run every inner case exactly once") {
  for (int n : {1, 2, 3, 7}) {
    CAPTURE(n);
    const int inner = 20;
    std::vector<int> runs(inner, 0);
    for (int k = 1; k <= n; ++k) {
      TestPart part;
      REQUIRE(parse_test_part(std::to_string(k) + "/" + std::to_string(n), part) == "");
      CHECK(part.k == k);
      CHECK(part.n == n);
      int taken = 0;
      for (int i = 0; i < inner; ++i)
        if (part.take()) {
          ++runs[static_cast<std::size_t>(i)];
          ++taken;
        }
      // Interleaved, so each part gets a share of every kind of inner case.
      CHECK(taken >= inner / n);
      CHECK(taken <= inner / n + 1);
    }
    for (int i = 0; i < inner; ++i) CHECK(runs[static_cast<std::size_t>(i)] == 1);
  }
}

TEST_CASE("no part given is every inner case") {
  TestPart part;
  part.k = 2;
  part.n = 3;
  REQUIRE(parse_test_part("", part) == "");
  CHECK(part.k == 1);
  CHECK(part.n == 1);
  for (int i = 0; i < 5; ++i) CHECK(part.take());
}

TEST_CASE("a bad part names the value and what is valid") {
  for (const char* bad : {"3", "0/2", "3/2", "1/0", "-1/2", "+1/2", "1/", "/2", "a/b", "1/2/3", "1/1001", " 1/2"}) {
    CAPTURE(bad);
    TestPart part;
    const std::string error = parse_test_part(bad, part);
    CHECK(error.find(std::string("'") + bad + "'") != std::string::npos);
    CHECK((error.find("k/n") != std::string::npos || error.find("does not exist") != std::string::npos));
    CHECK(part.n == 1);
  }
  TestPart part;
  CHECK(parse_test_part("3/2", part) == "'3/2': part 3 of 2 does not exist");
}

TEST_CASE("the repeat runs unless MOE_TEST_REPEAT is 0") {
  bool repeat = false;
  CHECK(parse_test_repeat("", repeat) == "");
  CHECK(repeat);
  repeat = false;
  CHECK(parse_test_repeat("1", repeat) == "");
  CHECK(repeat);
  CHECK(parse_test_repeat("0", repeat) == "");
  CHECK_FALSE(repeat);
  for (const char* bad : {"2", "00", "01", " 0", "0 ", "no", "false", "-1"}) {
    CAPTURE(bad);
    repeat = false;
    const std::string error = parse_test_repeat(bad, repeat);
    CHECK(error.find(std::string("'") + bad + "'") != std::string::npos);
    CHECK(error.find("0 (leave the repeat out) or 1") != std::string::npos);
    CHECK(repeat);  // a refused value leaves the default
  }
}
