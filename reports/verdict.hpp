#pragma once
// The verdict rules, as plain host functions over results, so they are tested on the CPU over
// fabricated cases (tests/cpu/test_verdict.cpp):
//  - a case PASSes only when it has checks, every one passed, and every piece of evidence it
//    declared required is proven (`true`); a PASS is earned, never a default;
//  - selftest's catch rule: a mutation is caught when the checks named for it FAIL in every
//    case it applies to, in every repetition; a clean row passes only when every case PASSed
//    with its forcing evidence shown.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/report.hpp"

namespace moe::report {

struct Decision {
  Verdict verdict = Verdict::inconclusive;
  std::string reason;
};

// Required evidence of `c` that is absent or not `true`, in declaration order.
std::vector<std::string> unproven_evidence(const CaseResult& c);

// The verdict of a finished case, in this order: an ERROR stays an ERROR (its reason kept);
// any failed check is a FAIL naming the first one (and how many more); no checks at all, or a
// required piece of evidence unproven, is INCONCLUSIVE naming what is missing and why
// (evidence.why_not.<name>); otherwise PASS with `pass_reason`.
Decision decide(const CaseResult& c, const std::string& pass_reason);

// The repetition a case belongs to: the "#N" suffix `--repeat` gives case names, else 0.
int repetition_of(const CaseResult& c);
// The case name without that suffix.
std::string base_name(const CaseResult& c);

// What catching one mutation means in one probe: the cases it applies to (names starting with
// `case_prefix`; empty for all of the probe's cases) and the checks that exist for it. With no
// checks named, a FAIL verdict of each applicable case is enough (the fallback for mutations
// that declare none).
struct CatchTarget {
  std::string probe;
  std::string case_prefix;
  std::vector<std::string> checks;
};

// One selftest row judged: for a mutation, how many repetitions caught it; for a clean run,
// how many passed with their evidence.
struct RowJudgement {
  int reps = 0;
  int good_reps = 0;   // caught (mutation) or clean with evidence (clean row)
  int errored = 0;     // repetitions with an ERROR case or no case at all
  bool ok = false;     // good_reps == reps
  std::vector<std::string> missed;      // why a repetition was not good, one line each
  std::vector<std::string> collateral;  // failures beyond the named checks (mutation rows)
  // Clean rows: for each required evidence name, {"proven": cases, "cases": cases}.
  nlohmann::json evidence = nlohmann::json::object();
};

// `cases`: every case of the row's run (all repetitions), `reps` the repetitions asked for.
RowJudgement judge_mutation_row(const std::vector<CaseResult>& cases, const CatchTarget& target,
                                int reps);
RowJudgement judge_clean_row(const std::vector<CaseResult>& cases, int reps);

}  // namespace moe::report
