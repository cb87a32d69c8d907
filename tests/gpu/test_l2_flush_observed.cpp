// The sampler's L2 flush observed, on the GPU, both ways: on the engine as built the canary
// timed after every observed flush finds the L2 cold and probes bandwidth and copy pass on it;
// a flush of half the L2, or one on a stream the sample does not wait for, leaves the canary
// warm or the flush unfinished, and bandwidth's cold figure fails with the figure shown.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "support/probe_runs.hpp"

namespace {

std::vector<std::string> bandwidth_args(const std::string& mutation) {
  std::vector<std::string> a{"bandwidth", "--shape", "tiny", "--m", "4", "--weight-format", "bf16",
                             "--mode", "eager", "--copy-bytes", "1073741824"};
  if (!mutation.empty()) a.insert(a.end(), {"--mutation", mutation});
  return a;
}

}  // namespace

TEST_CASE("bandwidth: every observed flush leaves the L2 cold, the figure measured") {
  moe::test::test_device();
  const nlohmann::json r = moe::test::run_probe("l2-observed-clean", bandwidth_args(""));
  for (const nlohmann::json& c : r.at("cases")) {
    CAPTURE(c.at("key").get<std::string>());
    CAPTURE(c.value("reason", std::string()));
    CHECK(c.at("verdict") == "PASS");
    moe::test::check_evidence_proven(c);
    const nlohmann::json& o = c.at("evidence").at("l2_observed");
    CAPTURE(o.dump());
    CHECK(o.at("samples_observed").get<int>() >= 1);
    CHECK(o.at("flushes_unfinished").get<int>() == 0);
    CHECK(o.at("evicted_fraction_median").get<double>() >= 0.75);
    CHECK(o.at("cold").get<bool>());
    // An evicted line reads from HBM: slower than the same line again, from the L2.
    CHECK(o.at("cold_load_cycles_median").get<double>() > o.at("hot_load_cycles_median").get<double>());
    CHECK(c.at("measurements").at("main").contains("l2_observed"));
  }
}

TEST_CASE("bandwidth: half a flush and a flush beside the sample fail the cold figure, observed") {
  moe::test::test_device();
  for (const char* mutation : {"l2-flush-half", "l2-flush-other-stream"}) {
    CAPTURE(mutation);
    const nlohmann::json r = moe::test::run_probe(std::string("l2-observed-") + mutation, bandwidth_args(mutation));
    for (const nlohmann::json& c : r.at("cases")) {
      CAPTURE(c.value("reason", std::string()));
      CHECK(c.at("verdict") == "FAIL");
      const nlohmann::json* cold = moe::test::find_check(c, "cold_figure_defeats_l2");
      REQUIRE(cold != nullptr);
      CHECK_FALSE(cold->at("passed").get<bool>());
      CHECK(cold->at("detail").get<std::string>().find("lines evicted") != std::string::npos);
      // Every sample still followed a flush: the old rule would have passed it.
      CHECK(c.at("evidence").at("l2_flushes") == c.at("evidence").at("samples"));
      CHECK_FALSE(c.at("evidence").at("l2_observed").at("cold").get<bool>());
    }
  }
}

TEST_CASE("copy: its evidence is measured, and a warm L2 after the flush is not proof") {
  moe::test::test_device();
  const nlohmann::json clean = moe::test::run_probe("copy-evidence-clean", {"copy", "--copy-bytes", "1073741824"});
  for (const nlohmann::json& c : clean.at("cases")) {
    CAPTURE(c.at("key").get<std::string>());
    CHECK(c.at("verdict") == "PASS");
    CHECK(c.at("evidence").at("l2_observed_cold").get<bool>());
    CHECK(c.at("evidence").at("samples_with_event_time") == c.at("evidence").at("samples"));
  }
  const nlohmann::json half =
      moe::test::run_probe("copy-evidence-half", {"copy", "--copy-bytes", "1073741824", "--mutation", "l2-flush-half"});
  for (const nlohmann::json& c : half.at("cases")) {
    CAPTURE(c.at("key").get<std::string>());
    CHECK(c.at("verdict") == "INCONCLUSIVE");
    CHECK_FALSE(c.at("evidence").at("buffer_defeats_l2").get<bool>());
  }
}
