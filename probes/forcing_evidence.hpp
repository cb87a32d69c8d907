#pragma once
// Forcing evidence of a case: what must have happened for its PASS to mean anything (the
// hazard forced, the path reached), in the way a bug probe reports INCONCLUSIVE rather than
// PASS when its bug could not have fired. evidence.<name> holds true or false and
// evidence.why_not.<name> the reason; demand_evidence() turns a PASS with any false one into
// INCONCLUSIVE naming it.
#include <string>

#include "reports/report.hpp"

namespace moe {

inline void prove(report::CaseResult& c, const std::string& name, bool proven, const std::string& why_not) {
  c.evidence[name] = proven;
  if (!proven) c.evidence["why_not"][name] = why_not;
}

// Call after the verdict was concluded from the checks.
inline void demand_evidence(report::CaseResult& c) {
  if (c.verdict != report::Verdict::pass || !c.evidence.contains("why_not")) return;
  const auto& missing = c.evidence["why_not"];
  c.verdict = report::Verdict::inconclusive;
  c.reason = "not proven: " + missing.begin().key() + " (" + missing.begin().value().get<std::string>() + ")";
}

}  // namespace moe
