#include "reports/verdict.hpp"

#include <algorithm>
#include <map>

namespace moe::report {

namespace {

bool proven(const nlohmann::json& evidence, const std::string& name) {
  if (!evidence.is_object()) return false;
  const auto it = evidence.find(name);
  return it != evidence.end() && it->is_boolean() && it->get<bool>();
}

std::string why_not(const nlohmann::json& evidence, const std::string& name) {
  if (!evidence.is_object() || !evidence.contains("why_not")) return "";
  const nlohmann::json& w = evidence.at("why_not");
  if (!w.is_object() || !w.contains(name) || !w.at(name).is_string()) return "";
  return w.at(name).get<std::string>();
}

const Check* find_check(const CaseResult& c, const std::string& name) {
  for (const Check& k : c.checks)
    if (k.name == name) return &k;
  return nullptr;
}

std::string label(const CaseResult& c) {
  return "rep " + std::to_string(repetition_of(c)) + " case " + base_name(c);
}

// The cases of repetition `rep`, or null (counted as errored, with the line) when it left none.
const std::vector<const CaseResult*>* cases_of_rep(
    const std::map<int, std::vector<const CaseResult*>>& reps_seen, int rep, RowJudgement& j) {
  const auto it = reps_seen.find(rep);
  if (it != reps_seen.end()) return &it->second;
  ++j.errored;
  j.missed.push_back("rep " + std::to_string(rep) + ": no case (the run ended early)");
  return nullptr;
}

// Cases by repetition, in report order.
std::map<int, std::vector<const CaseResult*>> by_rep(const std::vector<CaseResult>& cases) {
  std::map<int, std::vector<const CaseResult*>> out;
  for (const CaseResult& c : cases) out[repetition_of(c)].push_back(&c);
  return out;
}

}  // namespace

std::vector<std::string> unproven_evidence(const CaseResult& c) {
  std::vector<std::string> out;
  for (const std::string& name : c.required_evidence)
    if (!proven(c.evidence, name)) out.push_back(name);
  return out;
}

Decision decide(const CaseResult& c, const std::string& pass_reason) {
  if (c.verdict == Verdict::error) return {Verdict::error, c.reason};
  std::vector<const Check*> failed;
  for (const Check& k : c.checks)
    if (!k.passed) failed.push_back(&k);
  if (!failed.empty()) {
    std::string reason = "check '" + failed[0]->name + "' failed: " + failed[0]->detail;
    if (failed.size() > 1) {
      reason += " (and " + std::to_string(failed.size() - 1) + " more:";
      for (std::size_t i = 1; i < failed.size(); ++i) reason += " " + failed[i]->name;
      reason += ")";
    }
    return {Verdict::fail, reason};
  }
  if (c.checks.empty()) return {Verdict::inconclusive, "no check ran, so nothing was shown"};
  const std::vector<std::string> missing = unproven_evidence(c);
  if (!missing.empty()) {
    std::string reason = "not proven:";
    for (std::size_t i = 0; i < missing.size(); ++i) {
      const std::string why = why_not(c.evidence, missing[i]);
      reason += (i ? "; " : " ") + missing[i] +
                (why.empty() ? (c.evidence.contains(missing[i]) ? "" : " (no evidence recorded)")
                             : " (" + why + ")");
    }
    return {Verdict::inconclusive, reason + "; every check passed, but a PASS needs the hazard shown"};
  }
  return {Verdict::pass, pass_reason.empty() ? "every check passed with its evidence" : pass_reason};
}

int repetition_of(const CaseResult& c) {
  const auto hash = c.name.rfind('#');
  if (hash == std::string::npos || hash + 1 == c.name.size()) return 0;
  const std::string digits = c.name.substr(hash + 1);
  if (!std::all_of(digits.begin(), digits.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
    return 0;
  return std::stoi(digits);
}

std::string base_name(const CaseResult& c) {
  const auto hash = c.name.rfind('#');
  return hash == std::string::npos ? c.name : c.name.substr(0, hash);
}

RowJudgement judge_mutation_row(const std::vector<CaseResult>& cases, const CatchTarget& target,
                                int reps) {
  RowJudgement j;
  j.reps = reps;
  const auto reps_seen = by_rep(cases);
  for (int rep = 0; rep < reps; ++rep) {
    const auto* rep_cases = cases_of_rep(reps_seen, rep, j);
    if (!rep_cases) continue;
    int applicable = 0;
    bool caught = true, errored = false;
    for (const CaseResult* c : *rep_cases) {
      const bool applies =
          c->probe == target.probe && base_name(*c).rfind(target.case_prefix, 0) == 0;
      if (c->verdict == Verdict::error) {
        errored = true;
        caught = false;
        j.missed.push_back(label(*c) + ": ERROR: " + c->reason);
        continue;
      }
      if (!applies) {
        for (const Check& k : c->checks)
          if (!k.passed) j.collateral.push_back(label(*c) + ": check '" + k.name + "' failed");
        continue;
      }
      ++applicable;
      if (target.checks.empty() && c->verdict != Verdict::fail) {
        caught = false;
        j.missed.push_back(label(*c) + ": " + to_string(c->verdict) + " (no checks named: "
                           "the verdict must be FAIL): " + c->reason);
      }
      for (const std::string& name : target.checks) {
        const Check* k = find_check(*c, name);
        if (!k || k->passed) {
          caught = false;
          j.missed.push_back(label(*c) + ": check '" + name + "' " +
                             (k ? "passed" : "did not run") + " (verdict " +
                             to_string(c->verdict) + ": " + c->reason + ")");
        }
      }
      for (const Check& k : c->checks)
        if (!k.passed &&
            std::find(target.checks.begin(), target.checks.end(), k.name) == target.checks.end())
          j.collateral.push_back(label(*c) + ": check '" + k.name + "' failed too");
    }
    if (applicable == 0 && !errored) {
      caught = false;
      j.missed.push_back("rep " + std::to_string(rep) + ": no case of probe " + target.probe +
                         (target.case_prefix.empty() ? "" : " named " + target.case_prefix + "*") +
                         " ran");
    }
    j.errored += errored;
    j.good_reps += caught;
  }
  j.ok = j.good_reps == j.reps;
  return j;
}

RowJudgement judge_clean_row(const std::vector<CaseResult>& cases, int reps) {
  RowJudgement j;
  j.reps = reps;
  const auto reps_seen = by_rep(cases);
  for (const CaseResult& c : cases)
    for (const std::string& name : c.required_evidence) {
      nlohmann::json& e = j.evidence[name];
      if (!e.is_object()) e = {{"cases", 0}, {"proven", 0}};
      e["cases"] = e["cases"].get<int>() + 1;
      e["proven"] = e["proven"].get<int>() + (proven(c.evidence, name) ? 1 : 0);
    }
  for (int rep = 0; rep < reps; ++rep) {
    const auto* rep_cases = cases_of_rep(reps_seen, rep, j);
    if (!rep_cases) continue;
    bool clean = true, errored = false;
    for (const CaseResult* c : *rep_cases) {
      if (c->verdict == Verdict::error) errored = true;
      if (c->verdict != Verdict::pass) {
        clean = false;
        j.missed.push_back(label(*c) + ": " + to_string(c->verdict) + ": " + c->reason);
      } else if (c->required_evidence.empty()) {
        clean = false;  // a PASS that shows nothing forced is not a clean run of a probe
        j.missed.push_back(label(*c) + ": PASS without any required evidence declared");
      } else if (!unproven_evidence(*c).empty()) {
        clean = false;  // only a hand-edited report gets here: decide() never passes these
        j.missed.push_back(label(*c) + ": PASS with evidence unproven: " + unproven_evidence(*c)[0]);
      }
    }
    j.errored += errored;
    j.good_reps += clean;
  }
  j.ok = j.good_reps == j.reps;
  return j;
}

}  // namespace moe::report
