#pragma once
#include <string>

#include "reports/report.hpp"

namespace moe::report {

// The terminal view of a report: one row per case (verdict, median GPU time, host enqueue time,
// GB/s, percent of the read ceiling, samples, noise), then the failing checks in words.
std::string render_table(const Report& report);

// A plain aligned text table; the first row is the header.
std::string format_columns(const std::vector<std::vector<std::string>>& rows);

// Compact number formatting for tables: 3 significant digits, no exponent below 1e6.
std::string fmt(double v, int precision = 3);

// A p-value with two significant digits: "0.0043", "0.35", "1", "2.1e-07".
std::string format_p_value(double p);

}  // namespace moe::report
