// Expert residency's host side: the policy (hot set from counts, share and budget; ties; empty
// and unusable windows fall back with their reason) and the transition's bookkeeping (moves
// grouped by expert, the journal rolling back newest first, all or nothing).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "engine/residency_policy.hpp"
#include "engine/residency_transition.hpp"
#include "kernels/moe/route_telemetry.hpp"

using namespace moe;

namespace {

const TelemetryIdentity kOwn{1, 0, 0};

TelemetryWindow window_with(const std::vector<std::uint32_t>& counts) {
  return TelemetryWindow::consistent(kOwn, 1, counts);
}

std::vector<int> hot_of(const ResidencyPlan& p) {
  std::vector<int> hot;
  for (std::size_t e = 0; e < p.placement.size(); ++e)
    if (p.placement[e] == Placement::device) hot.push_back(static_cast<int>(e));
  return hot;
}

ResidencyPlan plan(const TelemetryWindow& w, double share, std::size_t budget, std::size_t expert = 100) {
  return plan_residency(w, validate_window(w, kOwn, 1), expert, {share, budget});
}

}  // namespace

TEST_CASE("experts at or above the share are hot, the rest cold") {
  // 1000 pairs: shares 50%, 30%, 10%, 5%, 5%, 0%, ...
  const TelemetryWindow w = window_with({500, 300, 100, 50, 50, 0, 0, 0});
  CHECK(hot_of(plan(w, 0.05, 0)) == std::vector<int>{0, 1, 2, 3, 4});
  CHECK(hot_of(plan(w, 0.10, 0)) == std::vector<int>{0, 1, 2});  // a share equal to the threshold is hot
  CHECK(hot_of(plan(w, 0.51, 0)).empty());
  const ResidencyPlan p = plan(w, 0.10, 0);
  CHECK_FALSE(p.fallback);
  CHECK(p.hot() == 3);
  CHECK(p.cold() == 5);
  CHECK(p.reason.find("3 hot") != std::string::npos);
}

TEST_CASE("the budget takes the busiest first and stops where the next expert would not fit") {
  const TelemetryWindow w = window_with({100, 400, 300, 200, 0, 0});
  CHECK(hot_of(plan(w, 0.01, 200)) == std::vector<int>{1, 2});          // two experts of 100 bytes
  CHECK(hot_of(plan(w, 0.01, 299)) == std::vector<int>{1, 2});          // a third does not fit
  CHECK(hot_of(plan(w, 0.01, 100)) == std::vector<int>{1});
  CHECK(hot_of(plan(w, 0.01, 99)).empty());                             // below one expert: none
  CHECK(plan(w, 0.01, 200).reason.find("2 over the budget of 200 bytes") != std::string::npos);
}

TEST_CASE("ties break by expert id, as the route's top-k does") {
  const TelemetryWindow w = window_with({10, 30, 30, 30, 10, 0});
  CHECK(hot_of(plan(w, 0.01, 200)) == std::vector<int>{1, 2});
  CHECK(hot_of(plan(w, 0.01, 400)) == std::vector<int>{0, 1, 2, 3});
}

TEST_CASE("an empty window keeps every expert resident, and says so") {
  const ResidencyPlan p = plan(window_with(std::vector<std::uint32_t>(8, 0u)), 0.01, 0);
  CHECK(p.fallback);
  CHECK(p.hot() == 8);
  CHECK(p.reason.find("empty window") != std::string::npos);
}

TEST_CASE("an unusable window keeps every expert resident with the validator's reason") {
  TelemetryWindow poisoned = window_with({5, 0, 0, 9});
  poisoned.flags = kernels::kTelemetryPoisoned;
  TelemetryWindow foreign = window_with({5, 0, 0, 9});
  foreign.identity.engine = 2;
  TelemetryWindow stale = window_with({5, 0, 0, 9});
  stale.epoch = 7;
  TelemetryWindow overflowed = window_with({5, 0, 0, 9});
  overflowed.flags = kernels::kTelemetryOverflowed;
  const std::pair<const TelemetryWindow*, const char*> cases[] = {
      {&poisoned, "poisoned"}, {&foreign, "foreign_identity"}, {&stale, "stale_epoch"}, {&overflowed, "overflowed"}};
  for (const auto& [w, name] : cases) {
    CAPTURE(name);
    const ResidencyPlan p = plan(*w, 0.01, 0);
    CHECK(p.fallback);
    CHECK(p.cold() == 0);
    CHECK(p.reason.find(name) != std::string::npos);
    CHECK(p.reason.find("every expert stays resident") != std::string::npos);
  }
}

TEST_CASE("moves are the experts whose placement changes, in id order") {
  using P = Placement;
  const std::vector<P> now{P::device, P::device, P::host, P::host};
  const std::vector<P> target{P::device, P::host, P::device, P::host};
  const std::vector<ExpertMove> m = moves_between(now, target);
  REQUIRE(m.size() == 2);
  CHECK(m[0].expert == 1);
  CHECK(m[0].to == P::host);
  CHECK(m[1].expert == 2);
  CHECK(m[1].to == P::device);
  CHECK(moves_between(now, now).empty());
  CHECK_THROWS_WITH_AS(moves_between(now, {P::device}), doctest::Contains("plan for 1 experts, the layer has 4"), Error);
}

TEST_CASE("the journal rolls back every prepared step newest first, or commits all") {
  std::vector<int> undone;
  {
    TransitionJournal j;
    for (int i = 1; i <= 3; ++i) CHECK(j.prepared([&undone, i] { undone.push_back(i); }) == static_cast<std::size_t>(i));
    j.rollback();
    CHECK(j.steps() == 0);
  }
  CHECK(undone == std::vector<int>{3, 2, 1});
  undone.clear();
  {
    TransitionJournal j;
    j.prepared([&] { undone.push_back(1); });
    j.commit();
  }
  CHECK(undone.empty());  // committed: nothing undone, not even on destruction
  {
    TransitionJournal j;  // destroyed uncommitted (an exception on the way out): rolled back
    j.prepared([&] { undone.push_back(1); });
    j.prepared([&] { undone.push_back(2); });
  }
  CHECK(undone == std::vector<int>{2, 1});
}

TEST_CASE("the fault point fires at exactly its step") {
  const ResidencyFaultPoint off{}, second{2};
  for (std::size_t step = 1; step < 5; ++step) {
    CHECK_FALSE(off.hits(step));
    CHECK(second.hits(step) == (step == 2));
  }
}
