// Probes bandwidth, capture-replay, route-telemetry and drop-after-inflight through the engine
// ABI (--engine) on a GPU: through moebench's own adapter every case has the verdict the same
// probe gives moebench's engine directly (PASS), with its evidence proven. The cuBLAS adapter's
// runs: test_cublas_adapter_probes.cpp.
#include <doctest/doctest.h>

#include <cstdlib>
#include <map>

#include "support/adapter_probe_runs.hpp"

TEST_CASE("through moebench's own adapter each probe gives the verdicts it gives directly") {
  moe::test::test_device();
  const std::string own = moe::test::adapter_file("MOEBENCH_OWN_ADAPTER", MOEBENCH_OWN_ADAPTER);
  std::vector<std::vector<std::string>> runs = moe::test::kAdapterProbeRuns;
  runs.push_back({"drop-after-inflight"});  // tiny, M = 16: case engine through the adapter
  for (const auto& args : runs) {
    CAPTURE(args.front());
    const nlohmann::json direct = moe::test::run_probe("direct-" + args.front(), args);
    std::vector<std::string> through = args;
    through.insert(through.end(), {"--engine", own});
    const nlohmann::json adapted = moe::test::run_probe("own-adapter-" + args.front(), through);
    const auto direct_verdicts = moe::test::verdicts(direct);
    for (const auto& [key, verdict] : direct_verdicts) {
      CAPTURE(key);
      CHECK(verdict == "PASS");
    }
    // Every case through the adapter is one the direct run has, with the same verdict (the
    // direct run may have more: drop-after-inflight's layer case is moebench's own object).
    for (const auto& [key, verdict] : moe::test::verdicts(adapted)) {
      CAPTURE(key);
      REQUIRE(direct_verdicts.count(key) == 1);
      CHECK(verdict == direct_verdicts.at(key));
    }
    moe::test::check_passes_through(adapted, "moebench");
  }
}
