// The sampler's host pass on the GPU: host enqueue times from samples with CUPTI off, the
// CUPTI-on ones kept beside the GPU samples, and kernel records still complete in every
// measurement after a pass (eager launches and graph replays).
#include <doctest/doctest.h>

#include <algorithm>

#include "engine/engine.hpp"
#include "probes/measure/sampler.hpp"
#include "support/gpu_test.hpp"

using namespace moe;

namespace {

// Checks one measurement; `host_pass` is how many host-pass samples it must have.
void check_host_pass(const report::Measurement& m, std::size_t host_pass) {
  CHECK(m.samples() >= 1);
  for (double t : m.host_time_us) CHECK(t > 0);
  if (!m.kernel_timing) {  // CUPTI taken (compute-sanitizer, Nsight): the main loop is clean
    CHECK(m.host_time_with_cupti_us.empty());
    CHECK(m.host_time_us.size() == m.samples());
    return;
  }
  CHECK(m.host_time_with_cupti_us.size() == m.samples());
  CHECK(m.host_time_us.size() == host_pass);
  CHECK_FALSE(m.host_time_includes_cupti());
  // The pass re-enabled recording: every window of every later measurement saw its kernels.
  for (double k : m.kernel_count) CHECK(k >= 1);
}

}  // namespace

TEST_CASE("host pass: CUPTI-free host times; kernel records survive it, eager and graph") {
  const Device& dev = test::test_device();
  DeviceAllocator alloc;
  measure::MeasureOptions o;
  o.l2 = measure::L2Mode::hot;
  o.stopping.min_samples = o.stopping.max_samples = 12;
  o.stopping.min_time_s = 0;
  o.stopping.max_noise = 0.5;
  o.host_samples = 8;
  measure::Sampler sampler(dev, alloc, o);

  EngineConfig c;
  c.shape = resolve_shape(
      "tiny", load_shape_library(std::filesystem::path(test::fixtures_dir()) / "shapes"));
  c.layers = 2;
  Engine e(c, alloc, dev);
  e.set_input(4, 1);
  e.forward();
  e.stream().drain();

  auto forward = [&] { e.forward(); };
  const report::Measurement eager = sampler.measure(e.stream(), "test/eager", forward);
  check_host_pass(eager, 8);

  REQUIRE_FALSE(e.capture_blocker().has_value());
  e.capture();
  auto replay = [&] { e.replay(); };
  const report::Measurement graph = sampler.measure(e.stream(), "test/graph", replay);
  check_host_pass(graph, 8);
  // A graph instantiated while CUPTI recorded, replayed after a pause and a resume: every
  // kernel node is recorded again.
  const report::Measurement graph_again = sampler.measure(e.stream(), "test/graph2", replay);
  check_host_pass(graph_again, 8);
  if (graph.kernel_timing) CHECK(graph_again.kernel_count.front() == graph.kernel_count.front());

  // Fewer main-loop samples than --host-samples: the pass takes as many as the loop did.
  measure::MeasureOverrides five;
  five.stopping = o.stopping;
  five.stopping->min_samples = five.stopping->max_samples = 5;
  const report::Measurement again = sampler.measure(e.stream(), "test/again", forward, five);
  check_host_pass(again, 5);
  if (again.kernel_timing && eager.kernel_timing)
    CHECK(again.kernel_count.front() == eager.kernel_count.front());
}
