// The rows of `moebench selftest` (probes/selftest_plan.hpp): every historic-bug mutation has a
// row on the probe that must catch it, and a row this machine cannot run stays in the plan with
// the reason, so a one-GPU matrix never reads as whole.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>

#include "probes/selftest_plan.hpp"

namespace {

bool has_row(const std::vector<moe::SelftestRow>& plan, std::string_view probe, std::string_view mutation) {
  return std::any_of(plan.begin(), plan.end(), [&](const moe::SelftestRow& r) {
    return r.probe == probe && (mutation.empty() ? r.mutation == nullptr : r.mutation && r.mutation->name == mutation);
  });
}

}  // namespace

TEST_CASE("selftest plan: every historic-bug mutation has a row, on every machine") {
  for (int gpus : {1, 2, 8}) {
    CAPTURE(gpus);
    const auto plan = moe::selftest_plan(gpus);
    for (const moe::MutationInfo& m : moe::all_mutations())
      if (m.historic_bug) CHECK_MESSAGE(has_row(plan, m.probe, m.name), m.name);
    CHECK(has_row(plan, "copy", ""));
    CHECK(has_row(plan, "bandwidth", ""));
    // two-engine under both allocator modes.
    std::set<std::string> modes;
    for (const auto& r : plan)
      if (r.probe == "two-engine" && r.mutation == nullptr) modes.insert(r.allocator);
    CHECK(modes == std::set<std::string>{"caching", "plain"});
  }
}

TEST_CASE("selftest plan: on one GPU the expert-parallel rows are listed as not run, with the reason") {
  const auto one = moe::selftest_plan(1);
  int ep_rows = 0;
  for (const auto& r : one) {
    CAPTURE(r.probe);
    const moe::ProbeInfo& p = moe::probe_by_name(r.probe);
    if (p.min_gpus > 1) {
      ++ep_rows;
      CHECK_FALSE(r.not_run.empty());
      if (p.not_built.empty()) CHECK(r.not_run == "needs 2 GPUs, this machine has 1");
    } else if (p.not_built.empty()) {
      CHECK(r.not_run.empty());
    }
  }
  CHECK(ep_rows > 0);  // ep-hang's watchdog mutation, at least
  CHECK(moe::rows_not_run(one) >= ep_rows);
  // With enough GPUs only a probe this build lacks stays out.
  for (const auto& r : moe::selftest_plan(8)) {
    CAPTURE(r.probe);
    CHECK(r.not_run == std::string(moe::probe_by_name(r.probe).not_built));
  }
}

TEST_CASE("selftest plan: through an engine adapter, clean rows only, the refused ones with the adapter's reason") {
  const auto plan = moe::selftest_plan(2, [](const moe::ProbeInfo& p) {
    return p.name == "two-engine" ? std::string() : "the adapter cannot run " + std::string(p.name);
  });
  REQUIRE_FALSE(plan.empty());
  for (const auto& r : plan) {
    CAPTURE(r.probe);
    CHECK(r.mutation == nullptr);
    const moe::ProbeInfo& p = moe::probe_by_name(r.probe);
    if (!p.not_built.empty()) continue;
    if (r.probe == "two-engine") CHECK(r.not_run.empty());
    else CHECK(r.not_run == "the adapter cannot run " + r.probe);
  }
  CHECK(has_row(plan, "two-engine", ""));
}

TEST_CASE("selftest plan: the readback in layer 0 has its host-nonblocking row, judged by the hold's check") {
  const auto plan = moe::selftest_plan(1);
  CHECK(has_row(plan, "host-nonblocking", "one-readback-in-forward"));
  CHECK(has_row(plan, "host-nonblocking", ""));
  CHECK(has_row(plan, "scratch-regrow", "scratch-free-without-drain"));
  for (const moe::SelftestRow& r : plan) {
    if (!r.mutation) continue;
    if (r.mutation->name == "one-readback-in-forward") {
      CHECK(r.target.checks == std::vector<std::string>{"forward_never_waits_for_its_stream"});
      CHECK(r.not_run.empty());
    }
    if (r.mutation->name == "scratch-free-without-drain") {
      CHECK(std::find(r.target.checks.begin(), r.target.checks.end(),
                      "freed_block_not_written_under_pending_call") != r.target.checks.end());
    }
  }
}
