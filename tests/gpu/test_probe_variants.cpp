// The variants of their bugs that scratch-regrow, host-nonblocking and stages once let through,
// each probe both ways on the GPU: PASS on the engine as built, FAIL (or INCONCLUSIVE, where
// the harness and not the engine is at fault) with the variant planted.
//  * scratch-regrow at --m 2,4: the regrow stays within one size class, where a caching
//    allocator gives the pool its own block back; the probe's lent memory hands it to another
//    stream instead.
//  * host-nonblocking: one readback before layer 0's kernels waits for nothing in the timing
//    loop; behind a hold on the stream it waits for the hold.
//  * stages: --l2 hot is not a PASS.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/device_allocator.hpp"
#include "probes/probe.hpp"
#include "probes/scratch_regrow/freed_block_handoff.hpp"
#include "support/gpu_test.hpp"
#include "support/probe_runs.hpp"

using nlohmann::json;
using moe::test::check_evidence_proven;
using moe::test::check_passed;
using moe::test::run_probe;

namespace {

// A copy: callers bind it to a reference straight from run_probe's temporary report.
json only_case(const json& report) {
  REQUIRE(report.at("cases").size() == 1);
  return report.at("cases")[0];
}

}  // namespace

TEST_CASE("FreedBlockHandoff: a freed block goes to the receiver inside the free and never back to the borrower") {
  moe::test::test_device();
  moe::DeviceAllocator backing(moe::DeviceAllocator::Mode::plain);
  moe::FreedBlockHandoff handoff(backing);
  moe::DeviceAllocator lent(moe::DeviceAllocator::Mode::plain, moe::DeviceAllocator::Freed::reuse,
                            handoff.source());
  std::vector<const void*> received;
  moe::DeviceBuffer a = lent.allocate(4096);
  const void* a_address = a.data();
  moe::DeviceBuffer b;  // freed after the receiving scope, so kept, not handed over
  {
    moe::FreedBlockHandoff::Receiving receiving(
        handoff, [&](const moe::DeviceBuffer& block) { received.push_back(block.data()); });
    a.reset();
    REQUIRE(received.size() == 1);
    CHECK(received[0] == a_address);
    // The same size asked again at once: a new block, not the one just given away.
    b = lent.allocate(4096);
    CHECK(b.data() != a_address);
  }
  // Outside the scope a freed block is only kept.
  b.reset();
  moe::DeviceBuffer c = lent.allocate(4096);
  c.reset();
  CHECK(received.size() == 1);
  CHECK(handoff.receiver_error().empty());
}

TEST_CASE("scratch-regrow at --m 2,4: clean PASS with the freed block taken by another stream, FAIL without the drain") {
  moe::test::test_device();
  const json clean_report = run_probe("variants-regrow-2-4-clean", {"scratch-regrow", "--m", "2,4"});
  const json& c = only_case(clean_report);
  CAPTURE(c.at("reason").get<std::string>());
  CHECK(c.at("verdict") == "PASS");
  check_evidence_proven(c);
  CHECK(check_passed(c, "every_call_matches_reference"));
  CHECK(check_passed(c, "freed_block_not_written_under_pending_call"));
  REQUIRE(c.at("evidence").at("regrows").get<int>() >= 1);
  for (const json& r : c.at("evidence").at("regrow_log")) {
    CAPTURE(r.dump());
    CHECK(r.at("previous_call_pending") == true);
    CHECK(r.at("taken_by_other_stream") == true);
    CHECK(r.at("other_stream_received") == r.at("freed_block"));
    CHECK(r.at("pool_received") != r.at("freed_block"));
    // The pool drained: the call was done by the time its block was written.
    CHECK(r.at("previous_call_pending_at_free") == false);
    CHECK(r.at("previous_call_pending_when_written") == false);
  }

  const json bug_report = run_probe("variants-regrow-2-4-bug",
                                    {"scratch-regrow", "--m", "2,4", "--mutation", "scratch-free-without-drain"});
  const json& b = only_case(bug_report);
  CAPTURE(b.at("reason").get<std::string>());
  CHECK(b.at("verdict") == "FAIL");
  CHECK_FALSE(check_passed(b, "freed_block_not_written_under_pending_call"));
  CHECK_FALSE(check_passed(b, "every_call_matches_reference"));
  check_evidence_proven(b);  // the forcing held: the failure is the missing drain's
  for (const json& r : b.at("evidence").at("regrow_log")) {
    CAPTURE(r.dump());
    CHECK(r.at("taken_by_other_stream") == true);
    CHECK(r.at("previous_call_pending_when_written") == true);
    // Timed by events: the call went on after the other stream's write began.
    CHECK(r.at("previous_call_ended_ms_after_write_began").get<double>() > 0);
  }
}

TEST_CASE("host-nonblocking: clean PASS behind the hold; one readback in layer 0 FAILs though the ratio passes") {
  moe::test::test_device();
  const json& c = only_case(run_probe("variants-host-nonblocking-clean", {"host-nonblocking"}));
  CAPTURE(c.at("reason").get<std::string>());
  CHECK(c.at("verdict") == "PASS");
  check_evidence_proven(c);
  CHECK(check_passed(c, "forward_never_waits_for_its_stream"));
  // Enqueue alone: far under the 100 ms hold.
  CHECK(c.at("evidence").at("forward_behind_hold_host_us").get<double>() < 50'000);

  const json& b = only_case(run_probe("variants-host-nonblocking-readback",
                                      {"host-nonblocking", "--mutation", "one-readback-in-forward"}));
  CAPTURE(b.at("reason").get<std::string>());
  CHECK(b.at("verdict") == "FAIL");
  CHECK_FALSE(check_passed(b, "forward_never_waits_for_its_stream"));
  // The variant the ratio cannot see: it waits for nothing queued in the timing loop.
  CHECK(check_passed(b, "forward_returns_before_gpu_finishes"));
  CHECK(b.at("evidence").at("stream_held_when_forward_began") == true);
  CHECK(b.at("evidence").at("forward_behind_hold_host_us").get<double>() >= 90'000);

  // The blocking forwards the ratio catches fail behind the hold too.
  for (const char* mutation : {"blocking-forward", "blocking-one-layer"}) {
    CAPTURE(mutation);
    const json& m = only_case(run_probe(std::string("variants-host-nonblocking-") + mutation,
                                        {"host-nonblocking", "--mutation", mutation}));
    CHECK(m.at("verdict") == "FAIL");
    CHECK_FALSE(check_passed(m, "forward_never_waits_for_its_stream"));
    CHECK_FALSE(check_passed(m, "forward_returns_before_gpu_finishes"));
  }
}

namespace {

// One stages case (deepseek-v2-lite, M = 1, bf16, eager, kernel timing on) under `l2`.
json stages_case(const std::string& tag, const std::string& l2) {
  const auto dir = moe::test::scratch_dir(tag);
  const std::string report = (dir / "report.json").string();
  const auto r = moe::test::run_shell(
      moe::test::quote(moe::test::moebench_binary()) +
      " run stages --shape deepseek-v2-lite --m 1 --weight-format bf16 --mode eager --l2 " + l2 +
      " --max-layers 4 --min-samples 5 --max-samples 20 --min-time 0 --quiet -o " + moe::test::quote(report) +
      " --fixtures " + moe::test::quote(moe::test::fixtures_dir()));
  REQUIRE_MESSAGE(std::filesystem::exists(report), tag << " wrote no report (exit " << r.exit_code << "): " << r.err);
  return only_case(json::parse(moe::test::read_text(report)));
}

}  // namespace

TEST_CASE("stages: PASS only on a cold L2 with a kernel in every stage; --l2 hot is INCONCLUSIVE") {
  moe::test::test_device();
  const json cold = stages_case("variants-stages-cold", "cold");
  CAPTURE(cold.at("reason").get<std::string>());
  if (cold.at("evidence").value("kernel_records", false) != true) {
    // CUPTI taken (a profiler, compute-sanitizer): nothing can be timed, and the case says so.
    CHECK(cold.at("verdict") == "INCONCLUSIVE");
    MESSAGE("no kernel records here: the stage rules were not exercised");
    return;
  }
  CHECK(cold.at("verdict") == "PASS");
  check_evidence_proven(cold);
  CHECK(cold.at("evidence").at("stages_without_kernels").empty());
  CHECK(cold.at("evidence").at("l2_flushes").get<int>() > 0);
  for (const char* stage : {"route", "gate_up", "down", "combine"})
    CHECK(cold.at("metrics").at(std::string(stage) + "_us").at("value").get<double>() > 0);

  const json hot = stages_case("variants-stages-hot", "hot");
  CAPTURE(hot.at("reason").get<std::string>());
  CHECK(hot.at("verdict") == "INCONCLUSIVE");
  CHECK(hot.at("evidence").at("l2_cold") == false);
  CHECK(hot.at("evidence").at("l2_flushes") == 0);
  CHECK(hot.at("reason").get<std::string>().find("l2_cold") != std::string::npos);
}
