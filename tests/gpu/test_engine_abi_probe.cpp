// Probe two-engine through the engine ABI (--engine) on a GPU: through moebench's own adapter it
// passes with the evidence it can prove from outside an engine, through an adapter with the
// historic resident cache (adapters/examples/stale_resident_cache_adapter.cpp) it fails on the
// outputs, under both allocators; the report records the adapter.
#include <doctest/doctest.h>

#include <cstdlib>

#include <nlohmann/json.hpp>

#include "support/cli_runner.hpp"
#include "support/gpu_test.hpp"

namespace {

// The adapters: the environment's (a bundle copied to a GPU machine, scripts/gpu-check.sh)
// win over this build's.
std::string adapter(const char* variable, const char* built) {
  const char* env = std::getenv(variable);
  return env ? env : built;
}

nlohmann::json run_two_engine(const std::string& adapter, const std::string& allocator, int expected_exit) {
  const auto dir = moe::test::scratch_dir("engine-abi-probe");
  const std::string report = (dir / ("r-" + allocator + ".json")).string();
  const auto r = moe::test::moebench("run", "two-engine", "--engine", adapter, "--allocator", allocator, "-o", report,
                                     "--fixtures", moe::test::fixtures_dir());
  CAPTURE(r.err);
  CHECK(r.exit_code == expected_exit);
  return nlohmann::json::parse(moe::test::read_text(report));
}

}  // namespace

TEST_CASE("two-engine through moebench's own adapter passes with its evidence, and records the adapter") {
  moe::test::test_device();
  for (const std::string allocator : {"caching", "plain"}) {
    CAPTURE(allocator);
    const nlohmann::json j = run_two_engine(adapter("MOEBENCH_OWN_ADAPTER", MOEBENCH_OWN_ADAPTER), allocator, 0);
    const nlohmann::json& adapter = j.at("options").at("engine_adapter");
    CHECK(adapter.at("name") == "moebench");
    CHECK(adapter.at("abi") == "1.1");
    CHECK(adapter.at("sha256").get<std::string>().size() == 64);
    REQUIRE(j.at("cases").size() == 1);
    const nlohmann::json& c = j.at("cases").at(0);
    CAPTURE(c.dump());
    CHECK(c.at("verdict") == "PASS");
    CHECK(c.at("required_evidence") ==
          nlohmann::json({"weights_address_reused", "expert_buffers_elsewhere", "freed_experts_poisoned",
                          "outputs_checked"}));
    CHECK(c.at("evidence").at("engine_adapter").at("name") == "moebench");
  }
}

TEST_CASE("two-engine through an adapter with a process-wide cache keyed by the weights' address fails") {
  moe::test::test_device();
  for (const std::string allocator : {"caching", "plain"}) {
    CAPTURE(allocator);
    const nlohmann::json j = run_two_engine(adapter("MOEBENCH_STALE_CACHE_ADAPTER", MOEBENCH_STALE_CACHE_ADAPTER), allocator, 1);
    REQUIRE(j.at("cases").size() == 1);
    const nlohmann::json& c = j.at("cases").at(0);
    CAPTURE(c.dump());
    CHECK(c.at("verdict") == "FAIL");
    bool outputs_failed = false;
    for (const auto& check : c.at("checks"))
      if (check.at("name") == "outputs_match_own_seed") outputs_failed = check.at("passed") == false;
    CHECK(outputs_failed);
    // The forcing held: the key reused, the experts elsewhere and poisoned.
    for (const char* e : {"weights_address_reused", "expert_buffers_elsewhere", "freed_experts_poisoned"})
      CHECK(c.at("evidence").at(e) == true);
  }
}
