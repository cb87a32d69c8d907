#include "reports/case_filter.hpp"

#include <algorithm>
#include <regex>

#include "common/errors.hpp"
#include "reports/compare.hpp"

namespace moe::report {

CaseKeyFilter::CaseKeyFilter(std::string regex) : regex_(std::move(regex)) {
  try {
    re_ = std::regex(regex_, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    throw UsageError("--filter '" + regex_ + "' is not a valid regular expression: " + e.what());
  }
}

void keep_matching_cases(Report& report, const std::string& regex, const std::string& label) {
  if (regex.empty()) return;
  const CaseKeyFilter filter(regex);
  const std::string held = probe_summary(report);
  const std::string example = report.cases.empty() ? "" : report.cases.front().key();
  std::erase_if(report.cases,
                [&](const CaseResult& c) { return !filter.matches(c.key()); });
  if (report.cases.empty())
    throw UsageError("--filter '" + regex + "' matches no case of " + label + " (it has " +
                     held + (example.empty() ? "" : "; a key looks like " + example) + ")");
}

}  // namespace moe::report
