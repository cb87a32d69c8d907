// Probe copy's evidence from measured figures (probes/copy/copy_evidence): a buffer counts as
// defeating the L2 only when the timed kernel's content check showed every byte touched, it is
// 4x the L2 or more, and the canary after the flush found the L2 cold; samples count as taken
// only when every one has a positive event time.
#include <doctest/doctest.h>

#include <limits>

#include "probes/copy/copy_evidence.hpp"

using namespace moe;

namespace {
constexpr std::size_t kL2 = std::size_t{50} << 20;

report::Measurement measured(std::vector<double> gpu_us, std::optional<double> evicted = 1.0) {
  report::Measurement m;
  m.gpu_time_us = std::move(gpu_us);
  if (evicted) {
    report::L2Observed o;
    o.samples_observed = 2;
    o.lines = 32;
    o.evicted_fraction_median = o.evicted_fraction_min = *evicted;
    m.l2_observed = o;
  }
  return m;
}
}  // namespace

TEST_CASE("a checked stream of 8x the L2, observed cold, every sample timed: both proven") {
  const CopyEvidence e = copy_evidence(8 * kL2, kL2, true, measured({300, 301, 299}));
  CHECK(e.buffer_over_l2 == doctest::Approx(8.0));
  CHECK(e.buffer_defeats_l2);
  CHECK(e.samples_timed == 3);
  CHECK(e.samples_taken);
}

TEST_CASE("the buffer proof rests on what was measured") {
  // The kernel's content check failed: nothing shows it read the whole buffer.
  CHECK_FALSE(copy_evidence(8 * kL2, kL2, false, measured({300})).buffer_defeats_l2);
  // Below 4x the L2.
  CHECK_FALSE(copy_evidence(3 * kL2, kL2, true, measured({300})).buffer_defeats_l2);
  // The flush observed leaving the L2 warm (half a flush): not proven, the figure said.
  const CopyEvidence warm = copy_evidence(8 * kL2, kL2, true, measured({300}, 0.1));
  CHECK_FALSE(warm.buffer_defeats_l2);
  CHECK(warm.buffer_detail.find("not observed cold") != std::string::npos);
  // --l2 hot: no flush, nothing observed; the size and the content check decide.
  CHECK(copy_evidence(8 * kL2, kL2, true, measured({300}, std::nullopt)).buffer_defeats_l2);
}

TEST_CASE("samples count only with a positive event time, every one") {
  CHECK_FALSE(copy_evidence(8 * kL2, kL2, true, measured({})).samples_taken);
  const CopyEvidence zero = copy_evidence(8 * kL2, kL2, true, measured({300, 0, std::numeric_limits<double>::quiet_NaN()}));
  CHECK(zero.samples_timed == 1);
  CHECK_FALSE(zero.samples_taken);
  CHECK(zero.samples_detail.find("2 of 3 samples") != std::string::npos);
}
