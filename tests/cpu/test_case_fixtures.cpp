// The repro cases shipped in fixtures/cases: one per bug, each valid, each naming a probe and
// the mutation that catches its bug (or the example adapter that restores it in an engine behind
// the ABI), each expecting that probe to fail under it.
#include <doctest/doctest.h>

#include <set>

#include <nlohmann/json.hpp>

#include "engine/fault_injection.hpp"
#include "probes/probe.hpp"
#include "support/cli_runner.hpp"

namespace fs = std::filesystem;

TEST_CASE("every mutation has a case file that reruns its probe and expects FAIL") {
  std::set<std::string> covered;
  int through_adapters = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(MOEBENCH_FIXTURES_DIR) / "cases")) {
    CAPTURE(entry.path().string());
    const auto j = nlohmann::json::parse(moe::test::read_text(entry.path()));
    const std::string probe = j.at("probe");
    CHECK_NOTHROW(moe::probe_by_name(probe));
    if (j.at("run").contains("engine")) {
      // A bug restored in an engine behind the ABI: no mutation (those are moebench's own
      // engine's), a probe that runs through an adapter, and the adapter found beside moebench.
      ++through_adapters;
      CHECK_FALSE(j.at("run").contains("mutation"));
      CHECK(moe::probe_by_name(probe).external.runs);
      CHECK(j.at("expected_verdict") == "FAIL");
      const auto r = moe::test::moebench("repro", entry.path().string(), "--dry-run");
      CAPTURE(r.err);
      CHECK(r.exit_code == 0);
      CHECK((r.out + r.err).find("moebench run " + probe) != std::string::npos);
      CHECK((r.out + r.err).find("--engine " + std::string(MOEBENCH_BUILD_DIR) + "/adapters/" +
                                 j.at("run").at("engine").get<std::string>()) != std::string::npos);
      continue;
    }
    const auto& mutation = j.at("run").at("mutation");
    REQUIRE(mutation.is_string());
    const moe::Mutation m = moe::mutation_from_name(mutation.get<std::string>());
    CHECK(moe::info(m).probe == probe);
    CHECK(j.at("expected_verdict") == "FAIL");
    CHECK_FALSE(j.at("reproduces").get<std::string>().empty());
    covered.insert(mutation.get<std::string>());
    // The file is accepted by repro itself (validated, planned, nothing run).
    const auto r = moe::test::moebench("repro", entry.path().string(), "--dry-run");
    CHECK(r.exit_code == 0);
    CHECK((r.out + r.err).find("moebench run " + probe) != std::string::npos);
  }
  for (const moe::MutationInfo& m : moe::all_mutations())
    if (m.historic_bug) CHECK_MESSAGE(covered.count(std::string(m.name)), m.name);
  CHECK(through_adapters >= 1);  // stale-resident-pointers-adapter.json
}

TEST_CASE("selftest refuses bad repetition counts before touching a device") {
  const auto r = moe::test::moebench("selftest", "--reps", "0");
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--reps 0 is out of range") != std::string::npos);
  const auto big = moe::test::moebench("run", "two-engine", "--engines", "1");
  CHECK(big.exit_code == 2);
  CHECK(big.err.find("--engines 1") != std::string::npos);
  const auto rep = moe::test::moebench("run", "copy", "--repeat", "0");
  CHECK(rep.exit_code == 2);
}
