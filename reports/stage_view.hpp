#pragma once
// The stage breakdown of probe `stages` as the renderers show it: one row a case, each stage's
// own time, critical-path share and floor (per layer, medians over the samples), read from the
// case's metrics (`<stage>_us`, `<stage>_critical_us`, `<stage>_floor_us`; reports/SCHEMA.md).
#include <string>
#include <vector>

#include "reports/report.hpp"

namespace moe::report {

struct StageCell {
  std::string stage;       // route, gate_up, down, combine, other
  double own_us = 0;       // its kernels' durations (overlaps counted in each stage)
  double critical_us = 0;  // what it adds to the critical path
  double floor_us = 0;     // its bytes over the read ceiling
};

struct StageRow {
  std::string label;  // shape M format mode
  std::string format;  // the weight format alone ("" when the case has none), for its colour
  // route, gate_up, down, combine, then other only where some row has kernels outside those
  // (the same columns in every row; a stage a case lacks holds NaN, printed as "-").
  std::vector<StageCell> stages;
  double critical_path_us = 0;  // sum of the criticals: the busy time
  double gpu_us = 0;            // GPU-event time of the layer (includes launch gaps)
  double floor_us = 0;
};

// Rows for every case of probe `stages` that has stage metrics, in report order.
std::vector<StageRow> stage_rows(const Report& report);

// The terminal table of those rows ("" when there are none): per stage "own / critical
// (floor)" in microseconds.
std::string render_stage_table(const std::vector<StageRow>& rows);

}  // namespace moe::report
