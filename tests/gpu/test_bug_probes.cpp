// Every bug probe on the GPU, both ways: it passes on the engine as built and fails under the
// mutation that restores its bug (the selftest matrix, each row in its own child process).
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "engine/fault_injection.hpp"
#include "support/cli_runner.hpp"
#include "support/gpu_test.hpp"

TEST_CASE("selftest: each probe passes clean and catches each of its mutations") {
  moe::test::test_device();
  const auto dir = moe::test::scratch_dir("selftest");
  const std::string report = (dir / "selftest.json").string();
  const auto r = moe::test::moebench("selftest", "--reps", "2", "-o", report, "--fixtures",
                                     moe::test::fixtures_dir());
  MESSAGE(r.out);
  const auto j = nlohmann::json::parse(moe::test::read_text(report));
  const auto& rows = j.at("extra").at("selftest").at("rows");
  std::size_t mutated_rows = 0;
  for (const auto& row : rows) {
    CAPTURE(row.dump());
    CHECK(row.at("ok").get<bool>());
    if (!row.at("mutation").is_null()) ++mutated_rows;
  }
  std::size_t bugs = 0;
  for (const auto& m : moe::all_mutations()) bugs += m.historic_bug;
  CHECK(mutated_rows == bugs);
  CHECK(r.exit_code == 0);
}
