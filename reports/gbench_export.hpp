#pragma once
// Google Benchmark's JSON output format, so that its own tooling (tools/compare.py, shipped by
// Debian's libbenchmark-tools as /usr/share/benchmark/compare.py) reads moebench results.
#include <nlohmann/json.hpp>

#include "reports/report.hpp"

namespace moe::report {

// One benchmark per case x measurement, named by the case key (plus "[measurement]" when it is
// not "main"): real_time = median GPU-event time, cpu_time = median host enqueue time, in "us";
// iterations = the sample count. Counters carry GB/s and the percent of the read ceiling where
// the case has them. Cases without samples are left out (they have no time to compare).
nlohmann::json to_gbench_json(const Report& report);

}  // namespace moe::report
