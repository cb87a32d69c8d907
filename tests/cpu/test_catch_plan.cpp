// The catch plan selftest judges its matrix by: every historic mutation names the checks
// that exist for it, in probes that exist, and the mutations the issue tied to capture-replay
// are caught there by the check for a sync inside a capture.
#include <doctest/doctest.h>

#include <algorithm>

#include "engine/fault_injection.hpp"
#include "probes/catch_plan.hpp"
#include "probes/probe.hpp"

using moe::report::CatchTarget;


TEST_CASE("every historic mutation names the checks that must catch it, in probes that exist") {
  for (const moe::MutationInfo& m : moe::all_mutations()) {
    if (!m.historic_bug) continue;
    CAPTURE(m.name);
    const auto targets = moe::catch_targets(m);
    REQUIRE(!targets.empty());
    CHECK(targets.front().probe == m.probe);
    for (const CatchTarget& t : targets) {
      CHECK_NOTHROW(moe::probe_by_name(t.probe));
      CHECK_FALSE(t.checks.empty());
    }
  }
  // blocking-forward is exercised by capture-replay too, by the check for a sync in capture.
  const auto blocking = moe::catch_targets(moe::info(moe::Mutation::blocking_forward));
  CHECK(std::any_of(blocking.begin(), blocking.end(), [](const CatchTarget& t) {
    return t.probe == "capture-replay" && t.checks == std::vector<std::string>{"no_sync_inside_capture"};
  }));
  CHECK(moe::catch_targets(moe::info(moe::Mutation::sync_inside_capture)).front().checks ==
        std::vector<std::string>{"no_sync_inside_capture"});
}
