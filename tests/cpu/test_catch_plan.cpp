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

TEST_CASE("the variants of the capture and lifetime bugs are caught by the steps built for them") {
  using V = std::vector<std::string>;
  // A replay that does nothing passes any step whose outputs already hold the answer: only the
  // replays on new tokens over poisoned outputs may be named.
  const auto skips = moe::catch_targets(moe::info(moe::Mutation::replay_skips_work));
  REQUIRE(skips.size() == 1);
  CHECK(skips[0].probe == "capture-replay");
  CHECK(skips[0].checks == V{"repeated_replays_match_reference", "capture_cycles_correct"});
  // A raw synchronising call is the same check's FAIL as the engine's own drain.
  CHECK(moe::catch_targets(moe::info(moe::Mutation::raw_sync_inside_capture)).front().checks ==
        V{"no_sync_inside_capture"});
  CHECK(moe::catch_targets(moe::info(moe::Mutation::graphs_kept_after_regrow)).front().checks ==
        V{"freed_scratch_untouched_by_replay"});
  // A device-keyed cache is hit only where device addresses are reused: the reuse phase.
  const auto device_keyed = moe::catch_targets(moe::info(moe::Mutation::device_keyed_cache));
  REQUIRE(device_keyed.size() == 1);
  CHECK(device_keyed[0].probe == "two-engine");
  CHECK(device_keyed[0].checks ==
        V{"reuse_phase_tables_point_at_own_experts", "reuse_phase_outputs_match_own_seed"});
  for (auto m : {moe::Mutation::replay_skips_work, moe::Mutation::raw_sync_inside_capture,
                 moe::Mutation::graphs_kept_after_regrow, moe::Mutation::device_keyed_cache}) {
    CAPTURE(moe::info(m).name);
    CHECK(moe::info(m).historic_bug);
    CHECK(moe::info(moe::mutation_from_name(moe::info(m).name)).name == moe::info(m).name);
  }
}

TEST_CASE("the variants of bug 2 are caught by the checks built for them") {
  using V = std::vector<std::string>;
  // A missing drain in the scratch pool: the freed block written by another stream while the
  // call that reads it is pending, and that call's output wrong.
  const auto regrow = moe::catch_targets(moe::info(moe::Mutation::scratch_free_without_drain));
  REQUIRE(regrow.size() == 1);
  CHECK(regrow[0].probe == "scratch-regrow");
  CHECK(regrow[0].checks == V{"every_call_matches_reference", "freed_block_not_written_under_pending_call"});
  // One readback in layer 0 waits for nothing in a drained timing loop: only the forward behind
  // a hold on its stream can see it, so the ratio's check is not named for it.
  const moe::MutationInfo& readback = moe::info(moe::Mutation::one_readback_in_forward);
  CHECK(readback.name == "one-readback-in-forward");
  CHECK(readback.probe == "host-nonblocking");
  CHECK(readback.historic_bug);
  CHECK(moe::mutation_from_name("one-readback-in-forward") == moe::Mutation::one_readback_in_forward);
  const auto targets = moe::catch_targets(readback);
  REQUIRE(targets.size() == 1);
  CHECK(targets[0].probe == "host-nonblocking");
  CHECK(targets[0].case_prefix == "forward");
  CHECK(targets[0].checks == V{"forward_never_waits_for_its_stream"});
  // The forwards that block on a layer fail both host-nonblocking checks.
  for (auto m : {moe::Mutation::blocking_forward, moe::Mutation::blocking_one_layer}) {
    CAPTURE(moe::info(m).name);
    CHECK(moe::catch_targets(moe::info(m)).front().checks ==
          V{"forward_returns_before_gpu_finishes", "forward_never_waits_for_its_stream"});
  }
}

TEST_CASE("the residency and L2 flush variants are caught by measured figures, not intent flags") {
  using V = std::vector<std::string>;
  // A stale table column: the tables read back against the placement, and the freed block it
  // names poisoned, so the checksums through the tables change.
  const auto stale = moe::catch_targets(moe::info(moe::Mutation::residency_stale_column));
  REQUIRE(stale.size() == 1);
  CHECK(stale[0].probe == "expert-residency");
  CHECK(stale[0].checks == V{"tables_match_placement", "planned_output_identical"});
  // Half a flush, or a flush beside the sample: every sample still counts a flush; the canary
  // timed after it is what fails the cold figure.
  for (auto m : {moe::Mutation::l2_flush_half, moe::Mutation::l2_flush_other_stream}) {
    CAPTURE(moe::info(m).name);
    const auto t = moe::catch_targets(moe::info(m));
    REQUIRE(t.size() == 1);
    CHECK(t[0].probe == "bandwidth");
    CHECK(t[0].case_prefix == "step");
    CHECK(t[0].checks == V{"cold_figure_defeats_l2"});
  }
  for (auto m : {moe::Mutation::residency_stale_column, moe::Mutation::l2_flush_half,
                 moe::Mutation::l2_flush_other_stream}) {
    CAPTURE(moe::info(m).name);
    CHECK(moe::info(m).historic_bug);
    CHECK(moe::info(moe::mutation_from_name(moe::info(m).name)).id == m);
  }
}
