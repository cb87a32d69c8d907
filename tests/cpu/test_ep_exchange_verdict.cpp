// Rank 0's checks over every rank's exchange findings (probes/ep_common/exchange_verdict.hpp):
// each passes only when it passed on every rank, and a failure names the rank and what it saw;
// a rank that did not report a finding fails it.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "probes/ep_common/exchange_verdict.hpp"

using namespace moe;
using namespace moe::ep;

namespace {

nlohmann::json rank_json(int rank, bool counts, bool payload, bool repeat, const std::string& detail) {
  ExchangeChecks c;
  c.counts_exact = counts;
  c.payload_intact = payload;
  c.repeatable = repeat;
  c.rows_received = 7;
  c.detail = detail;
  nlohmann::json j{{"rank", rank}};
  j.update(c.to_json());
  return j;
}

const report::Check& named(const std::vector<report::Check>& checks, const std::string& name) {
  for (const report::Check& c : checks)
    if (c.name == name) return c;
  FAIL("no check " << name);
  return checks.front();
}

}  // namespace

TEST_CASE("exchange verdict: every rank clean passes all three checks") {
  const auto checks = exchange_checks_over_ranks({rank_json(0, true, true, true, "7 rows"), rank_json(1, true, true, true, "7 rows")});
  REQUIRE(checks.size() == 3);
  for (const report::Check& c : checks) {
    CAPTURE(c.name);
    CHECK(c.passed);
    CHECK(c.detail == "every rank");
  }
  CHECK(ExchangeChecks{true, true, true, 0, ""}.passed());
  CHECK_FALSE(ExchangeChecks{true, false, true, 0, ""}.passed());
}

TEST_CASE("exchange verdict: one rank's failure fails that check alone, naming the rank and what it saw") {
  const std::string seen = "rank 1 received other counts than were sent to it: 3 rows from rank 0, expected 4";
  const auto checks = exchange_checks_over_ranks({rank_json(0, true, true, true, "ok"), rank_json(1, false, true, true, seen)});
  CHECK_FALSE(named(checks, "receive_counts_exact").passed);
  CHECK(named(checks, "receive_counts_exact").detail == "rank 1: " + seen);
  CHECK(named(checks, "payload_rank_coded").passed);
  CHECK(named(checks, "bitwise_repeatable").passed);

  const auto both = exchange_checks_over_ranks({rank_json(0, true, true, false, "a"), rank_json(1, true, true, false, "b")});
  CHECK(named(both, "bitwise_repeatable").detail == "rank 0: a; rank 1: b");
}

TEST_CASE("exchange verdict: a rank that did not report, or no rank at all, fails") {
  nlohmann::json silent{{"rank", 1}, {"passed", true}};
  const auto checks = exchange_checks_over_ranks({rank_json(0, true, true, true, "ok"), silent});
  for (const report::Check& c : checks) {
    CAPTURE(c.name);
    CHECK_FALSE(c.passed);
    CHECK(c.detail == "rank 1: did not report " + c.name);
  }
  for (const report::Check& c : exchange_checks_over_ranks({})) CHECK_FALSE(c.passed);
}
