#include "reports/case_filter.hpp"

#include <algorithm>
#include <regex>

#include "common/errors.hpp"
#include "reports/compare.hpp"

namespace moe::report {

void keep_matching_cases(Report& report, const std::string& regex, const std::string& label) {
  if (regex.empty()) return;
  std::regex re;
  try {
    re = std::regex(regex, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    throw UsageError("--filter '" + regex + "' is not a valid regular expression: " + e.what());
  }
  const std::string held = probe_summary(report);
  const std::string example = report.cases.empty() ? "" : report.cases.front().key();
  std::erase_if(report.cases,
                [&](const CaseResult& c) { return !std::regex_search(c.key(), re); });
  if (report.cases.empty())
    throw UsageError("--filter '" + regex + "' matches no case of " + label + " (it has " +
                     held + (example.empty() ? "" : "; a key looks like " + example) + ")");
}

}  // namespace moe::report
