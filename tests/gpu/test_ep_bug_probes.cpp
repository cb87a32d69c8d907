// The expert-parallel bug probes on two GPUs, both ways: clean with their evidence, and under
// the mutation that restores the bug its named checks fail. On fewer GPUs, or built without
// NCCL, the executable ends as skipped with the reason (not as passed).
#include <doctest/doctest.h>

#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/fault_injection.hpp"
#include "probes/catch_plan.hpp"
#include "probes/probe.hpp"
#include "support/gpu_test.hpp"
#include "support/probe_runs.hpp"

using nlohmann::json;
using moe::test::check_evidence_proven;
using moe::test::find_check;
using moe::test::run_probe;

// The cross-rank form of drop-after-inflight over two GPUs: clean, the receive blocks go to the
// next owner only after the step, with the race proven forced; under ep-free-recv-early the
// next owner gets them while the exchange is in flight and its bytes are overwritten.
TEST_CASE("ep-drop-inflight passes clean with its evidence and fails under ep-free-recv-early") {
  moe::test::test_device();
  moe::test::skip_unless_runnable(moe::probe_by_name("ep-drop-inflight"));
  const json clean = run_probe("ep-drop-inflight", {"ep-drop-inflight", "--devices", "0,1", "--timeout", "30"});
  REQUIRE(clean.at("cases").size() == 1);
  const json& c = clean.at("cases")[0];
  CAPTURE(c.at("reason").get<std::string>());
  CHECK(c.at("verdict") == "PASS");
  check_evidence_proven(c);
  CHECK(clean.at("environment").at("ranks").at("world") == 2);
  const json bug = run_probe("ep-drop-inflight-bug", {"ep-drop-inflight", "--devices", "0,1", "--timeout", "30",
                                                      "--mutation", "ep-free-recv-early"});
  REQUIRE(bug.at("cases").size() == 1);
  const json& b = bug.at("cases")[0];
  CAPTURE(b.at("reason").get<std::string>());
  CHECK(b.at("verdict") == "FAIL");
  for (const std::string& name : moe::catch_targets(moe::info(moe::Mutation::ep_free_recv_early)).front().checks) {
    CAPTURE(name);
    const json* k = find_check(b, name);
    REQUIRE(k);
    CHECK(k->at("passed") == false);
  }
  CHECK(b.at("evidence").at("exchange_pending_while_successor_wrote") == true);
}

// ep-hang's two cases over two GPUs: a silent rank and a rank whose process ends after its
// first exchange; the peers abort within --timeout either way.
TEST_CASE("ep-hang: a silent rank and a rank that dies mid-step are both aborted within the timeout") {
  moe::test::test_device();
  moe::test::skip_unless_runnable(moe::probe_by_name("ep-hang"));
  const json r = run_probe("ep-hang", {"ep-hang", "--devices", "0,1", "--timeout", "5"});
  std::set<std::string> names;
  for (const json& c : r.at("cases")) {
    CAPTURE(c.at("name").get<std::string>());
    CAPTURE(c.at("reason").get<std::string>());
    names.insert(c.at("name").get<std::string>());
    CHECK(c.at("verdict") == "PASS");
    check_evidence_proven(c);
  }
  CHECK(names == std::set<std::string>{"silent-rank", "dead-rank"});
}
