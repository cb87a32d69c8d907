#pragma once
// What load_report checks before a report is used: its size before parsing, the raw sample
// series while scanning (so a file of zeros is refused at its first sample, in constant memory),
// and every case after parsing (alignment, counts, physical ranges). Every refusal is a
// UsageError (exit 2) naming the file, the case, the field and the value. The rules are listed
// in reports/SCHEMA.md, "What the loader refuses".
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "reports/report.hpp"

namespace moe::report {

// Reports larger than this are refused before a byte is parsed: 64 MiB, several times a long
// sweep's report (the largest committed baseline is 18 MB), overridden by the environment
// variable MOEBENCH_MAX_REPORT_BYTES. Parsing holds the whole document in memory: 3.4 times the
// file's size for that baseline, about 6 for a report of many small cases.
inline constexpr std::uintmax_t kDefaultMaxReportBytes = std::uintmax_t{64} << 20;
std::uintmax_t max_report_bytes();

// Refuses a file above max_report_bytes(), naming its size and the limit. Reads only its size.
void check_report_size(const std::string& path);

// One pass over the file's text in constant memory (a SAX scan, no document built): refuses a
// raw sample of cases[i].measurements.NAME.raw.* that is not a finite number in its field's
// physical range (times positive), naming the case index, the field and the value.
void scan_raw_series(const std::string& path);

// The checks on one parsed case; `j` is the case's JSON as written (its summaries and counts),
// `index` its position in "cases". The message names the case, not the file: load_report,
// which calls it, puts "report 'PATH': " in front.
void validate_case(const CaseResult& c, const nlohmann::json& j, std::size_t index,
                   const std::string& path);

}  // namespace moe::report
