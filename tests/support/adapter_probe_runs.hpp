#pragma once
// The GPU tests of the probes through engine adapters (test_adapter_probe_verdicts,
// test_cublas_adapter_probes): the adapters' files, the probes' small runs, and what every case
// of a run through an adapter must show.
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "support/probe_runs.hpp"

namespace moe::test {

// An adapter's file: the environment's (a bundle copied to a GPU machine, scripts/gpu-check.sh)
// wins over this build's.
inline std::string adapter_file(const char* variable, const char* built) {
  const char* env = std::getenv(variable);
  return env ? env : built;
}

// The probes' runs, small: tiny shape, bf16, two M.
inline const std::vector<std::vector<std::string>> kAdapterProbeRuns = {
    {"bandwidth", "--shape", "tiny", "--m", "1,8", "--weight-format", "bf16"},
    {"capture-replay", "--shape", "tiny", "--m", "1,8", "--weight-format", "bf16"},
    {"route-telemetry", "--shape", "tiny", "--m", "1,8", "--weight-format", "bf16", "--telemetry", "checks"},
};

inline std::map<std::string, std::string> verdicts(const nlohmann::json& report) {
  std::map<std::string, std::string> out;
  for (const nlohmann::json& c : report.at("cases")) out[c.at("key")] = c.at("verdict");
  return out;
}

// Every case PASSes with each required piece of evidence proven and at least one output check
// against the reference passed, and the adapter is on record.
inline void check_passes_through(const nlohmann::json& report, const std::string& adapter_name) {
  REQUIRE_FALSE(report.at("cases").empty());
  for (const nlohmann::json& c : report.at("cases")) {
    CAPTURE(c.dump());
    CHECK(c.at("verdict") == "PASS");
    if (c.contains("required_evidence")) check_evidence_proven(c);
    CHECK(c.at("evidence").at("engine_adapter").at("name") == adapter_name);
    bool matched = false;
    for (const nlohmann::json& k : c.at("checks"))
      matched = matched || (k.at("name").get<std::string>().find("matches_reference") != std::string::npos &&
                            k.at("passed") == true);
    CHECK(matched);
  }
  CHECK(report.at("options").at("engine_adapter").at("name") == adapter_name);
}

}  // namespace moe::test
