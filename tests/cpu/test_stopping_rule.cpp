#include <doctest/doctest.h>

#include "common/errors.hpp"
#include "probes/measure/stopping_rule.hpp"

using namespace moe::measure;

namespace {
std::vector<double> constant(std::size_t n, double v) { return std::vector<double>(n, v); }
}  // namespace

TEST_CASE("defaults are nvbench's") {
  const StoppingRule r;
  CHECK(r.min_samples == 10);
  CHECK(r.max_noise == doctest::Approx(0.005));
  CHECK(r.min_time_s == doctest::Approx(0.5));
  CHECK(r.timeout_s == doctest::Approx(15));
}

TEST_CASE("sampling goes on until samples, time and noise are all satisfied") {
  StoppingRule r;
  r.min_samples = 10;
  r.min_time_s = 0.5;
  r.max_noise = 0.01;
  CHECK_FALSE(should_stop(r, {}, 0).has_value());
  // Enough time but too few samples.
  CHECK_FALSE(should_stop(r, constant(9, 1.0), 1).has_value());
  // Enough samples but too little GPU time.
  CHECK_FALSE(should_stop(r, constant(10, 0.01), 1).has_value());
  // Enough of both, no noise.
  auto stop = should_stop(r, constant(10, 0.06), 1);
  REQUIRE(stop.has_value());
  CHECK(*stop == StopReason::converged);
}

TEST_CASE("a noisy series keeps sampling until the timeout") {
  StoppingRule r;
  r.min_samples = 4;
  r.min_time_s = 0;
  r.max_noise = 0.01;
  r.timeout_s = 2;
  const std::vector<double> noisy{1.0, 1.2, 0.8, 1.1, 0.9};
  CHECK_FALSE(should_stop(r, noisy, 1.0).has_value());
  auto stop = should_stop(r, noisy, 2.5);
  REQUIRE(stop.has_value());
  CHECK(*stop == StopReason::timeout);
}

TEST_CASE("the timeout wins even below min_samples, and max_samples caps the series") {
  StoppingRule r;
  r.min_samples = 100;
  r.timeout_s = 1;
  r.max_samples = 200;
  CHECK(should_stop(r, constant(3, 1), 1.5) == StopReason::timeout);
  CHECK(should_stop(r, constant(200, 1e-6), 0.1) == StopReason::max_samples);
}

TEST_CASE("out-of-range knobs are usage errors naming the option") {
  StoppingRule r;
  r.min_samples = 0;
  CHECK_THROWS_WITH_AS(r.validate(), doctest::Contains("--min-samples 0"), moe::UsageError);
  r = {};
  r.max_noise = -1;
  CHECK_THROWS_WITH_AS(r.validate(), doctest::Contains("--max-noise"), moe::UsageError);
  r = {};
  r.timeout_s = 0;
  CHECK_THROWS_WITH_AS(r.validate(), doctest::Contains("--timeout"), moe::UsageError);
  r = {};
  r.max_samples = 5;
  CHECK_THROWS_WITH_AS(r.validate(), doctest::Contains("--max-samples"), moe::UsageError);
  CHECK_NOTHROW(StoppingRule{}.validate());
}
