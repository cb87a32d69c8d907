// The evidence each probe must prove, over fabricated results: every probe of the selftest
// matrix declares some; a result with every check passed but any one piece missing comes out
// INCONCLUSIVE, with all of it PASS. And the L2 rule of probe bandwidth.
#include <doctest/doctest.h>

#include <string>

#include "engine/fault_injection.hpp"
#include "probes/catch_plan.hpp"
#include "probes/evidence_rules.hpp"
#include "probes/probe.hpp"
#include "reports/verdict.hpp"
#include "support/l2_observed.hpp"

using moe::report::CaseResult;
using moe::report::Verdict;

namespace {

// A result of `probe` whose checks all passed and whose evidence is proven except `missing`.
CaseResult passing_except(const std::string& probe, const std::string& missing) {
  CaseResult c;
  c.probe = probe;
  c.name = "case";
  c.required_evidence = moe::required_evidence(probe);
  c.checks.push_back({"output_matches_reference", true, "ok"});
  for (const std::string& name : c.required_evidence)
    if (name != missing) c.evidence[name] = true;
  c.conclude("proven");
  return c;
}

}  // namespace

TEST_CASE("every probe of the selftest matrix declares evidence, and each piece is needed") {
  std::vector<std::string> probes = moe::clean_only_probes();
  for (const moe::MutationInfo& m : moe::all_mutations())
    if (m.historic_bug)
      for (const auto& t : moe::catch_targets(m)) probes.push_back(t.probe);
  for (const std::string& probe : probes) {
    CAPTURE(probe);
    CHECK_NOTHROW(moe::probe_by_name(probe));
    const auto& required = moe::required_evidence(probe);
    REQUIRE_FALSE(required.empty());
    CHECK(passing_except(probe, "").verdict == Verdict::pass);
    for (const std::string& name : required) {
      CAPTURE(name);
      const CaseResult c = passing_except(probe, name);
      CHECK(c.verdict == Verdict::inconclusive);
      CHECK(c.reason.find(name) != std::string::npos);
    }
  }
  CHECK(moe::required_evidence("no-such-probe").empty());
}

TEST_CASE("loophole: two-engine without the fast-path table read back is not a PASS") {
  CHECK(passing_except("two-engine", "fast_path_tables_read_back").verdict == Verdict::inconclusive);
  CHECK(passing_except("two-engine", "expert_buffers_elsewhere").verdict == Verdict::inconclusive);
  // Without a device address reused, a cache keyed by one was never looked up stale.
  CHECK(passing_except("two-engine", "router_address_reused").verdict == Verdict::inconclusive);
  CHECK(passing_except("two-engine", "expert_buffers_reused").verdict == Verdict::inconclusive);
  // Replays that were not shown new tokens over poisoned outputs prove nothing by matching.
  CHECK(passing_except("capture-replay", "replay_inputs_changed").verdict == Verdict::inconclusive);
  CHECK(passing_except("capture-replay", "outputs_poisoned_before_replays").verdict == Verdict::inconclusive);
  CHECK(passing_except("capture-replay", "freed_scratch_taken").verdict == Verdict::inconclusive);
  CHECK(passing_except("scratch-regrow", "every_regrow_under_pending_call").verdict == Verdict::inconclusive);
  CHECK(passing_except("barrier", "noop_barrier_artifact_visible").verdict == Verdict::inconclusive);
  CHECK(passing_except("host-nonblocking", "gpu_time_long_enough").verdict == Verdict::inconclusive);
  // A regrow whose freed block the pool itself got back had no other writer: not forced.
  CHECK(passing_except("scratch-regrow", "every_freed_block_taken_by_other_stream").verdict ==
        Verdict::inconclusive);
  // A forward that had nothing queued ahead could not have been seen waiting.
  CHECK(passing_except("host-nonblocking", "stream_held_when_forward_began").verdict == Verdict::inconclusive);
  // Stage times with the L2 warm, or a stage that ran no kernel, are not figures.
  CHECK(passing_except("stages", "l2_cold").verdict == Verdict::inconclusive);
  CHECK(passing_except("stages", "every_stage_has_kernels").verdict == Verdict::inconclusive);
}


TEST_CASE("L2 rule: flushed before every sample and observed cold, or a working set of 4x the L2") {
  const auto flushed = moe::l2_defeat(20, 20, 0.3, moe::test::l2_observed(1.0));
  CHECK(flushed.defeated);
  CHECK(flushed.every_sample_flushed);
  CHECK(flushed.flush_observed_cold);
  const auto big = moe::l2_defeat(0, 20, 4.0, moe::test::l2_observed(0.0));
  CHECK(big.defeated);
  CHECK_FALSE(big.every_sample_flushed);
  // --l2 hot on a small step, or a mutation that skips the flush: the cache's figure.
  const auto hot = moe::l2_defeat(0, 20, 3.99, std::nullopt);
  CHECK_FALSE(hot.defeated);
  CHECK(hot.detail.find("0 of 20 samples") != std::string::npos);
  // One sample not flushed is enough to let the cache in.
  CHECK_FALSE(moe::l2_defeat(19, 20, 0.3, moe::test::l2_observed(1.0)).defeated);
  CHECK_FALSE(moe::l2_defeat(0, 0, 0.3, moe::test::l2_observed(1.0)).defeated);  // nothing measured
}

TEST_CASE("L2 rule: a flush before every sample that the canary does not see evict is not a cold L2") {
  // Half the L2 read: most canary lines still hit. The figure is in the detail.
  const auto half = moe::l2_defeat(20, 20, 0.3, moe::test::l2_observed(0.1));
  CHECK(half.every_sample_flushed);
  CHECK_FALSE(half.flush_observed_cold);
  CHECK_FALSE(half.defeated);
  CHECK(half.detail.find("10% of 32 lines evicted") != std::string::npos);
  // A flush on another stream, unfinished when its sample began: not cold, however many lines it
  // had evicted by then.
  const auto beside = moe::l2_defeat(20, 20, 0.3, moe::test::l2_observed(1.0, 2));
  CHECK_FALSE(beside.defeated);
  CHECK(beside.detail.find("2 flushes unfinished") != std::string::npos);
  // A flush never observed proves nothing; a working set of 4x the L2 still does.
  CHECK_FALSE(moe::l2_defeat(20, 20, 0.3, std::nullopt).defeated);
  CHECK_FALSE(moe::l2_defeat(20, 20, 0.3, moe::report::L2Observed{}).defeated);
  CHECK(moe::l2_defeat(20, 20, 4.0, moe::test::l2_observed(0.1)).defeated);
}

TEST_CASE("host-nonblocking's threshold fails a forward blocking on one of two layers") {
  // Clean: 47-111 us of enqueue over ~1180 us of GPU time (`git show 825a1c6^:docs/gpu-runs.md`), at most 0.1.
  CHECK(111.0 / 1180.0 < moe::kHostOverGpuLimit);
  // Blocking on the first of two equal layers: the host waits at least half the GPU time.
  CHECK_FALSE(0.5 < moe::kHostOverGpuLimit);
}
