// Probe `copy` end to end on the GPU: every case runs, its checks pass, its figures are sane.
#include <doctest/doctest.h>

#include "engine/device_allocator.hpp"
#include "probes/probe.hpp"
#include "support/gpu_test.hpp"

using namespace moe;

TEST_CASE("probe copy measures read, memcpy and copy-kernel with passing checks") {
  const Device& dev = test::test_device();
  RunOptions options;
  options.measure.stopping.min_samples = 5;
  options.measure.stopping.min_time_s = 0.02;
  options.measure.stopping.max_noise = 0.5;
  options.copy_bytes = 8 * dev.l2_bytes;
  DeviceAllocator alloc;
  measure::Sampler sampler(dev, alloc, options.measure);
  std::vector<report::CaseResult> cases;
  ProbeState state("copy", options, dev, alloc, sampler,
                   [&](report::CaseResult c) { cases.push_back(std::move(c)); });
  probe_by_name("copy").run(state);
  REQUIRE(cases.size() == 3);
  for (const auto& c : cases) {
    CAPTURE(c.name);
    CHECK(c.verdict == report::Verdict::pass);
    CHECK(c.metrics.at("gbps").value > 0);
    const auto& m = c.measurements.at("main");
    CHECK(m.samples() >= 5);
    // Each sample's window holds the timed work: at least one kernel for read and copy-kernel
    // (kernel timing is off when another CUPTI subscriber, e.g. compute-sanitizer, is attached).
    if (m.kernel_timing && c.name != "memcpy") CHECK(m.kernel_count.front() >= 1);
    for (double host : m.host_time_us) CHECK(host > 0);
  }
  // A copy moves read + written bytes and cannot beat reading alone by a wide margin.
  CHECK(cases[1].metrics.at("pct_of_read_ceiling").value < 150);
}
