#pragma once
// `--filter REGEX` of compare, noise and render: keeps the cases whose key the regular
// expression (ECMAScript, searched anywhere in the key) matches.
#include <string>

#include "reports/report.hpp"

namespace moe::report {

// Removes the cases of `report` whose CaseResult::key() `regex` does not match. Raises
// UsageError for an invalid expression, and when no case is left (naming what the report
// holds); `label` names the report in that message. An empty regex keeps everything.
void keep_matching_cases(Report& report, const std::string& regex, const std::string& label);

}  // namespace moe::report
