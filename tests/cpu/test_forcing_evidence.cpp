// Forcing evidence: a PASS whose hazard was not forced becomes INCONCLUSIVE naming what is
// missing; other verdicts are left as they are.
#include <doctest/doctest.h>

#include "probes/forcing_evidence.hpp"

using namespace moe;

TEST_CASE("a PASS with unproven evidence is INCONCLUSIVE, naming the first missing proof") {
  report::CaseResult c;
  c.checks.push_back({"ok", true, ""});
  prove(c, "replays_in_window", true, "never shown");
  prove(c, "overflow_forced", false, "no expert received two pairs");
  c.conclude_from_checks();
  REQUIRE(c.verdict == report::Verdict::pass);
  demand_evidence(c);
  CHECK(c.verdict == report::Verdict::inconclusive);
  CHECK(c.reason == "not proven: overflow_forced (no expert received two pairs)");
  CHECK(c.evidence.at("replays_in_window") == true);
  CHECK_FALSE(c.evidence.at("why_not").contains("replays_in_window"));
}

TEST_CASE("proven evidence leaves a PASS, and a FAIL stays a FAIL") {
  report::CaseResult pass;
  pass.checks.push_back({"ok", true, ""});
  prove(pass, "experts_moved", true, "");
  pass.conclude_from_checks();
  demand_evidence(pass);
  CHECK(pass.verdict == report::Verdict::pass);
  report::CaseResult fail;
  fail.checks.push_back({"bad", false, "broken"});
  prove(fail, "experts_moved", false, "nothing moved");
  fail.conclude_from_checks();
  demand_evidence(fail);
  CHECK(fail.verdict == report::Verdict::fail);
}
