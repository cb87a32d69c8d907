#pragma once
// Runs a probe through the built binary the way a user does and reads its report: the GPU
// tests of the bug probes judge their verdicts, named checks and evidence from it.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support/cli_runner.hpp"
#include "support/gpu_test.hpp"

namespace moe::test {

// `moebench run ARGS` with the quick sampling options; its report (REQUIREd to exist).
inline nlohmann::json run_probe(const std::string& tag, std::vector<std::string> args) {
  const auto dir = moe::test::scratch_dir(tag);
  const std::string report = (dir / "report.json").string();
  std::string command = moe::test::quote(moe::test::moebench_binary()) + " run";
  for (const std::string& a : args) command += " " + moe::test::quote(a);
  for (const char* a : {"--min-samples", "3", "--max-samples", "20", "--min-time", "0",
                        "--no-kernel-timing", "--quiet"})
    command += std::string(" ") + a;
  command += " -o " + moe::test::quote(report) + " --fixtures " +
             moe::test::quote(moe::test::fixtures_dir());
  const auto r = moe::test::run_shell(command);
  REQUIRE_MESSAGE(std::filesystem::exists(report), tag << " wrote no report (exit " << r.exit_code
                                                       << "): " << r.err);
  return nlohmann::json::parse(moe::test::read_text(report));
}

inline const nlohmann::json* find_check(const nlohmann::json& c, const std::string& name) {
  for (const nlohmann::json& k : c.at("checks"))
    if (k.at("name") == name) return &k;
  return nullptr;
}

// Whether case `c`'s check `name` passed; the check must be there.
inline bool check_passed(const nlohmann::json& c, const std::string& name) {
  const nlohmann::json* k = find_check(c, name);
  REQUIRE_MESSAGE(k, name);
  return k->at("passed").get<bool>();
}

// Every required piece of evidence of `c` is `true`.
inline void check_evidence_proven(const nlohmann::json& c) {
  CAPTURE(c.at("key").get<std::string>());
  CAPTURE(c.at("reason").get<std::string>());
  REQUIRE(c.contains("required_evidence"));
  CHECK_FALSE(c.at("required_evidence").empty());
  for (const nlohmann::json& name : c.at("required_evidence")) {
    CAPTURE(name.get<std::string>());
    CHECK(c.at("evidence").value(name.get<std::string>(), false) == true);
  }
}

}  // namespace moe::test
