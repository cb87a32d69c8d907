// The launcher's deadline for expert-parallel workers, derived from the planned work: a fixed
// multiple of --timeout kills a healthy default ep-step sweep (48 layers, float64 checks on
// the CPU) long before it ends.
#include <doctest/doctest.h>

#include <chrono>
#include <string>
#include <vector>

#include "engine/shape_library.hpp"
#include "probes/ep_common/planned_work.hpp"
#include "probes/ep_common/worker_deadline.hpp"
#include "probes/layer_check.hpp"

using namespace moe;
using namespace std::chrono_literals;

namespace {

kernels::MoeDims dims_of(const std::string& name) {
  for (const Shape& s : builtin_shapes())
    if (s.name == name) return s.dims(kernels::WeightFormat::bf16);
  FAIL("no built-in shape " << name);
  return {};
}

double seconds(std::chrono::milliseconds t) { return std::chrono::duration<double>(t).count(); }

}  // namespace

TEST_CASE("deadline: setup and spare waits, then each case's waits, host and device work") {
  ep::WorkerPlan plan;
  CHECK(seconds(ep::worker_deadline(plan, 15s)) == doctest::Approx(5 * 15.0));
  plan.cases.push_back({});
  CHECK(seconds(ep::worker_deadline(plan, 15s)) == doctest::Approx(5 * 15.0 + 1));
  plan.cases.push_back({ep::kSlowHostMacsPerSecond * 7, ep::kSlowDeviceBytesPerSecond * 3, 2});
  CHECK(seconds(ep::worker_deadline(plan, 10s)) == doctest::Approx(5 * 10.0 + 1 + (7 + 3 + 2 * 10.0 + 1)));
  const std::string d = ep::describe(plan, 10s);
  CHECK(d.find("2 cases") != std::string::npos);
  CHECK(d.find("waits of 10 s") != std::string::npos);
}

TEST_CASE("a sharded layer case grows with the shape, the tokens and the checks") {
  const kernels::MoeDims lite = dims_of("deepseek-v2-lite");
  const kernels::MoeDims v3 = dims_of("deepseek-v3");
  const ep::PlannedCase small = ep::sharded_layer_case(lite, 1, 2, 1, 1);
  CHECK(small.host_macs == doctest::Approx(affordable_tokens(lite, 1) * reference_macs_per_token(lite)));
  CHECK(ep::sharded_layer_case(lite, 128, 2, 1, 1).device_bytes > small.device_bytes);
  CHECK(ep::sharded_layer_case(lite, 1, 2, 25, 1).device_bytes > small.device_bytes);
  CHECK(ep::sharded_layer_case(v3, 1, 2, 1, 1).host_macs > small.host_macs);
  CHECK(ep::sharded_layer_case(lite, 1, 2, 1, 0).host_macs == 0);
  // More ranks: fewer local experts' weights generated on each.
  CHECK(ep::sharded_layer_case(v3, 1, 8, 0, 0).device_bytes < ep::sharded_layer_case(v3, 1, 2, 0, 0).device_bytes);
}

TEST_CASE("ep-step's default sweep gets a deadline beyond its own CPU work, not 8 x --timeout + 120 s") {
  const std::vector<kernels::MoeDims> shapes{dims_of("deepseek-v3"), dims_of("qwen3-30b-a3b"),
                                             dims_of("deepseek-v2-lite")};
  const ep::WorkerPlan plan = ep::ep_step_plan(shapes, {1, 8, 32, 128}, 2, 2, 2);
  CHECK(plan.cases.size() == 1 + 3 * 4 * 2 * 2);
  double macs = 0;
  for (const ep::PlannedCase& c : plan.cases) macs += c.host_macs;
  const double deadline = seconds(ep::worker_deadline(plan, 15s));
  // The float64 reference alone, at probes/layer_check.hpp's 1e9 multiply-adds a second.
  CHECK(deadline > 5 * macs / 1e9);
  CHECK(deadline > 8 * 15 + 120);
  // Bounded: a worker whose watchdog failed is still killed within hours, not never.
  CHECK(deadline < 6 * 3600);
  // One small case stays close to the waits alone.
  const ep::WorkerPlan one = ep::ep_step_plan({dims_of("deepseek-v2-lite")}, {1}, 1, 1, 2);
  CHECK(seconds(ep::worker_deadline(one, 15s)) < 5 * 15 + 10);
}
