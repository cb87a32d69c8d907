// Probe ep-drop-inflight's judgement over fabricated ranks: a clean run PASSes only with the
// race proven forced on every rank, the bug's signature (a receive block handed to the next
// owner while pending, its bytes overwritten) FAILs the checks the catch plan names, and a
// missed hold is INCONCLUSIVE, never PASS.
#include <doctest/doctest.h>

#include <algorithm>

#include "engine/fault_injection.hpp"
#include "probes/catch_plan.hpp"
#include "probes/ep_drop_inflight/drop_inflight_verdict.hpp"
#include "probes/evidence_rules.hpp"
#include "probes/probe.hpp"

using moe::ep::RankObservation;
using moe::report::CaseResult;
using moe::report::Verdict;

namespace {

const void* at(std::uintptr_t a) { return reinterpret_cast<const void*>(a); }

// A rank of a clean run: the successor got other blocks, its bytes stayed, the blocks came
// back to a later allocation.
RankObservation clean_rank(int rank) {
  RankObservation o;
  o.rank = rank;
  o.receive_buffers = {at(0x7000), at(0x9000)};
  o.successor_blocks = {at(0xA000), at(0xB000)};
  o.pending_at_drop = true;
  o.pending_after_successor = true;
  o.successor_bytes = 4096;
  o.successor_bytes_changed = 0;
  o.receive_blocks_reused_after_completion = 2;
  o.output_matches = true;
  o.output_detail = "relative L2 1e-3";
  return o;
}

// The bug: the receive buffers went back at once.
RankObservation freed_early(int rank) {
  RankObservation o = clean_rank(rank);
  o.successor_blocks = {at(0x9000), at(0x7000)};
  o.successor_bytes_changed = 3900;
  o.receive_blocks_reused_after_completion = 0;  // the successor holds them
  return o;
}

CaseResult judged(const std::vector<RankObservation>& ranks, int world) {
  CaseResult c;
  c.probe = "ep-drop-inflight";
  c.name = "layer";
  c.required_evidence = moe::required_evidence(c.probe);
  std::vector<nlohmann::json> j;
  for (const RankObservation& o : ranks) j.push_back(moe::ep::observation_json(o));
  moe::ep::judge_drop_inflight(c, j, world);
  return c;
}

bool check_passed(const CaseResult& c, const std::string& name) {
  for (const auto& k : c.checks)
    if (k.name == name) return k.passed;
  FAIL("no check " << name);
  return false;
}

}  // namespace

TEST_CASE("the receive blocks the successor got are found by address") {
  RankObservation o = clean_rank(0);
  CHECK(moe::ep::receive_blocks_handed_out_while_pending(o).empty());
  o.successor_blocks = {at(0xA000), at(0x9000)};
  CHECK(moe::ep::receive_blocks_handed_out_while_pending(o) == std::vector<const void*>{at(0x9000)});
  const nlohmann::json j = moe::ep::observation_json(o);
  CHECK(j["receive_blocks_handed_out_while_pending"] == nlohmann::json::array({"0x9000"}));
  CHECK(j["receive_buffers"] == nlohmann::json::array({"0x7000", "0x9000"}));
}

TEST_CASE("a clean run with the race forced on every rank passes") {
  const CaseResult c = judged({clean_rank(0), clean_rank(1)}, 2);
  CHECK(c.verdict == Verdict::pass);
  CHECK(check_passed(c, "no_receive_block_handed_out_while_pending"));
  CHECK(check_passed(c, "successor_bytes_intact"));
  CHECK(check_passed(c, "inflight_output_matches_reference"));
  CHECK(c.evidence["per_rank"].size() == 2);
}

TEST_CASE("receive buffers freed at once fail the checks the catch plan names for the mutation") {
  const CaseResult c = judged({clean_rank(0), freed_early(1)}, 2);
  CHECK(c.verdict == Verdict::fail);
  CHECK_FALSE(check_passed(c, "no_receive_block_handed_out_while_pending"));
  CHECK_FALSE(check_passed(c, "successor_bytes_intact"));
  CHECK(check_passed(c, "inflight_output_matches_reference"));
  for (const auto& k : c.checks)
    if (!k.passed) CHECK(k.detail.rfind("rank 1: ", 0) == 0);
  // Handed out early counts as handed out again: the race was forced.
  CHECK(c.evidence.value("receive_blocks_handed_out_again", false));
  const auto targets = moe::catch_targets(moe::info(moe::Mutation::ep_free_recv_early));
  REQUIRE(targets.size() == 1);
  CHECK(targets[0].probe == "ep-drop-inflight");
  CHECK(targets[0].case_prefix == "layer");
  for (const std::string& name : targets[0].checks) CHECK_FALSE(check_passed(c, name));
}

TEST_CASE("a hold that was missed or blocks never reused is inconclusive, never a pass") {
  RankObservation finished = clean_rank(1);
  finished.pending_after_successor = false;
  CHECK(judged({clean_rank(0), finished}, 2).verdict == Verdict::inconclusive);
  RankObservation done_before = clean_rank(0);
  done_before.pending_at_drop = false;
  CHECK(judged({done_before, clean_rank(1)}, 2).verdict == Verdict::inconclusive);
  RankObservation never = clean_rank(1);
  never.receive_blocks_reused_after_completion = 0;
  const CaseResult c = judged({clean_rank(0), never}, 2);
  CHECK(c.verdict == Verdict::inconclusive);
  CHECK(c.reason.find("rank 1") != std::string::npos);
  CHECK(judged({clean_rank(0)}, 2).verdict == Verdict::inconclusive);  // a rank missing
  CHECK(judged({}, 2).verdict == Verdict::inconclusive);
}

TEST_CASE("a wrong output or a successor that wrote nothing fails") {
  RankObservation wrong = clean_rank(0);
  wrong.output_matches = false;
  wrong.output_detail = "token 3: relative L2 0.9";
  const CaseResult c = judged({wrong, clean_rank(1)}, 2);
  CHECK(c.verdict == Verdict::fail);
  CHECK_FALSE(check_passed(c, "inflight_output_matches_reference"));
  RankObservation empty = clean_rank(1);
  empty.successor_bytes = 0;
  CHECK(judged({clean_rank(0), empty}, 2).verdict == Verdict::fail);
}

TEST_CASE("ep-drop-inflight is registered for two GPUs with its mutation") {
  const moe::ProbeInfo& p = moe::probe_by_name("ep-drop-inflight");
  CHECK(p.min_gpus == 2);
  const moe::Mutation m = moe::mutation_from_name("ep-free-recv-early");
  CHECK(moe::info(m).probe == "ep-drop-inflight");
  CHECK(moe::info(m).historic_bug);
}
