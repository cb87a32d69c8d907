#pragma once
#include <cstddef>
#include <string>

#include "reports/report.hpp"

namespace moe::report {

// The terminal view of a report: one row per case (verdict, median GPU time, host enqueue time,
// GB/s, percent of the read ceiling, samples, noise), then the failing checks in words.
std::string render_table(const Report& report);

// Terminal text from a report or a shape file is escaped (reports/text_escape.hpp) and cut:
// a table cell at kMaxCellChars characters (a case key with its fingerprint is about 90), a
// line of free text (a reason, a warning) at kMaxLineChars.
inline constexpr std::size_t kMaxCellChars = 120;
inline constexpr std::size_t kMaxLineChars = 400;

// A plain aligned text table; the first row is the header. Every cell is escaped and cut.
std::string format_columns(const std::vector<std::vector<std::string>>& rows,
                           std::size_t max_cell_chars = kMaxCellChars);

// Compact number formatting for tables: 3 significant digits, no exponent below 1e6.
std::string fmt(double v, int precision = 3);

// A p-value with two significant digits: "0.0043", "0.35", "1", "2.1e-07".
std::string format_p_value(double p);

}  // namespace moe::report
