#pragma once
// `--filter REGEX` of compare, noise and render: keeps the cases whose key the regular
// expression (ECMAScript, searched anywhere in the key) matches.
#include <regex>
#include <string>

#include "reports/report.hpp"

namespace moe::report {

// The expression of one --filter, compiled once: `moebench run` selects the cases it runs with
// it, compare, noise and render the cases they read. Raises UsageError for an invalid one.
class CaseKeyFilter {
 public:
  explicit CaseKeyFilter(std::string regex);
  const std::string& regex() const { return regex_; }
  bool matches(const std::string& key) const { return std::regex_search(key, re_); }

 private:
  std::string regex_;
  std::regex re_;
};

// Removes the cases of `report` whose CaseResult::key() `regex` does not match. Raises
// UsageError for an invalid expression, and when no case is left (naming what the report
// holds); `label` names the report in that message. An empty regex keeps everything.
void keep_matching_cases(Report& report, const std::string& regex, const std::string& label);

}  // namespace moe::report
