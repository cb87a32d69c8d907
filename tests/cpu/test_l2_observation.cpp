// The sampler's observation of its L2 flush, judged on the host (probes/measure/l2_observation):
// a canary line counts as evicted when its load after the flush is well over its load again (an
// L2 hit), the median sample must show most lines evicted, and a flush not finished when its
// sample began (the flush counter behind) is never a cold L2.
#include <doctest/doctest.h>

#include "probes/measure/l2_observation.hpp"

using namespace moe;
using moe::measure::CanarySample;

namespace {
// A reading whose first `evicted` lines load in `miss` cycles after the flush, the rest in the
// hit time; every line loads in `hit` cycles again.
CanarySample reading(int evicted, unsigned flushes_seen = 1, unsigned flushes_issued = 1,
                     unsigned long long hit = 280, unsigned long long miss = 620) {
  CanarySample s{};
  s.reading.flushes_seen = flushes_seen;
  s.flushes_issued = flushes_issued;
  for (int i = 0; i < kernels::kCanaryLines; ++i) {
    s.reading.cold_cycles[i] = i < evicted ? miss : hit + 4;  // a few cycles of jitter
    s.reading.hot_cycles[i] = hit;
  }
  return s;
}
}  // namespace

TEST_CASE("a flush of twice the L2: every canary line evicted, the L2 observed cold") {
  const report::L2Observed o = measure::summarize_canary({reading(32), reading(32), reading(31)});
  CHECK(o.samples_observed == 3);
  CHECK(o.lines == static_cast<std::size_t>(kernels::kCanaryLines));
  CHECK(o.evicted_fraction_median == doctest::Approx(1.0));
  CHECK(o.evicted_fraction_min == doctest::Approx(31.0 / 32));
  CHECK(o.cold_load_cycles_median == doctest::Approx(620));
  CHECK(o.hot_load_cycles_median == doctest::Approx(280));
  CHECK(o.flushes_unfinished == 0);
  CHECK(measure::observed_cold(o));
  CHECK(measure::describe(o).find("100% of 32 lines evicted") != std::string::npos);
}

TEST_CASE("a flush of half the L2: most lines still hit, not cold, the figure said") {
  // Under LRU none is evicted; under random replacement about 40%; on an H100 once 24 of 32.
  for (int evicted : {0, 13, 24, 28}) {
    CAPTURE(evicted);
    const report::L2Observed o = measure::summarize_canary({reading(evicted), reading(evicted)});
    CHECK_FALSE(measure::observed_cold(o));
    CHECK(o.evicted_fraction_median == doctest::Approx(evicted / 32.0));
  }
}

TEST_CASE("a far partition's hit is not an eviction; a miss over it is") {
  // 450 cycles again (a far L2 hit) and 460 after the flush: survived. 620 after it: evicted.
  CHECK(measure::summarize_canary({reading(0, 1, 1, 450, 620)}).evicted_fraction_median == doctest::Approx(0));
  CHECK(measure::summarize_canary({reading(32, 1, 1, 450, 620)}).evicted_fraction_median == doctest::Approx(1));
}

TEST_CASE("a flush on another stream, unfinished when its sample began, is never cold") {
  // Its lines may even be gone by then: the counter says the flush was still running.
  const report::L2Observed o = measure::summarize_canary({reading(32, 3, 4), reading(32, 4, 4)});
  CHECK(o.flushes_unfinished == 1);
  CHECK_FALSE(measure::observed_cold(o));
  CHECK(measure::describe(o).find("1 flushes unfinished") != std::string::npos);
}

TEST_CASE("nothing observed proves nothing") {
  const report::L2Observed o = measure::summarize_canary({});
  CHECK(o.samples_observed == 0);
  CHECK_FALSE(measure::observed_cold(o));
  CHECK(measure::describe(o).find("not observed") != std::string::npos);
}

TEST_CASE("the observed samples: the first, then every kObserveEvery, at most kMaxObserved") {
  CHECK(measure::observed_sample(0));
  CHECK_FALSE(measure::observed_sample(1));
  CHECK(measure::observed_sample(measure::kObserveEvery));
  CHECK_FALSE(measure::observed_sample(measure::kObserveEvery * measure::kMaxObserved));
  std::size_t observed = 0;
  for (std::size_t i = 0; i < 20; ++i) observed += measure::observed_sample(i) ? 1 : 0;
  CHECK(observed == 5);  // a case's 20 samples
}

TEST_CASE("the canary chain visits every line once, each a load that depends on the one before") {
  const std::vector<std::uint32_t> chain = kernels::canary_chain();
  const std::uint32_t per_line = kernels::kCanaryStrideBytes / sizeof(std::uint32_t);
  std::vector<bool> seen(kernels::kCanaryLines, false);
  std::uint32_t at = kernels::canary_first_word();
  for (int i = 0; i < kernels::kCanaryLines; ++i) {
    REQUIRE(at % per_line == 0);
    REQUIRE(at / per_line < static_cast<std::uint32_t>(kernels::kCanaryLines));
    CHECK_FALSE(seen[at / per_line]);
    seen[at / per_line] = true;
    at = chain[at];
  }
  CHECK(at == kernels::canary_first_word());  // a cycle: the hot pass reads the same lines in order
}
