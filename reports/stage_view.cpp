#include "reports/stage_view.hpp"

#include <cmath>
#include <sstream>

#include "reports/table.hpp"

namespace moe::report {

namespace {
constexpr const char* kStageNames[] = {"route", "gate_up", "down", "combine", "other"};

double metric_value(const CaseResult& c, const std::string& name) {
  const auto it = c.metrics.find(name);
  return it == c.metrics.end() ? std::nan("") : it->second.value;
}
}  // namespace

std::vector<StageRow> stage_rows(const Report& report) {
  std::vector<const CaseResult*> cases;
  bool other = false;
  for (const CaseResult& c : report.cases)
    if (c.probe == "stages" && c.metrics.contains("critical_path_us")) {
      cases.push_back(&c);
      other = other || c.metrics.contains("other_us");
    }
  std::vector<StageRow> rows;
  for (const CaseResult* cp : cases) {
    const CaseResult& c = *cp;
    StageRow row;
    row.label = c.shape.value_or("?") + " M=" + (c.m ? std::to_string(*c.m) : "?") + " " +
                c.format.value_or("?") + " " + c.mode.value_or("?");
    row.format = c.format.value_or("");
    for (const char* s : kStageNames) {
      const std::string name = s;
      if (name == "other" && !other) continue;
      row.stages.push_back({name, metric_value(c, name + "_us"), metric_value(c, name + "_critical_us"),
                            metric_value(c, name + "_floor_us")});
    }
    row.critical_path_us = metric_value(c, "critical_path_us");
    row.gpu_us = metric_value(c, "gpu_us_per_layer");
    row.floor_us = metric_value(c, "floor_us");
    rows.push_back(std::move(row));
  }
  return rows;
}

std::string render_stage_table(const std::vector<StageRow>& rows) {
  if (rows.empty()) return "";
  std::vector<std::string> header{"stages (us per layer)"};
  for (const StageCell& s : rows.front().stages) header.push_back(s.stage + " own/crit (floor)");
  header.insert(header.end(), {"critical path", "gpu", "floor"});
  std::vector<std::vector<std::string>> table{header};
  for (const StageRow& r : rows) {
    std::vector<std::string> line{r.label};
    for (const StageCell& c : r.stages)
      line.push_back(std::isnan(c.own_us) ? "-"
                                          : fmt(c.own_us) + "/" + fmt(c.critical_us) + " (" +
                                                fmt(c.floor_us) + ")");
    line.insert(line.end(), {fmt(r.critical_path_us), fmt(r.gpu_us), fmt(r.floor_us)});
    table.push_back(std::move(line));
  }
  std::ostringstream out;
  out << format_columns(table)
      << "own: the stage's kernel durations (they overlap under programmatic launch); crit: its "
         "share of the critical path (the crits sum to the critical path); floor: its bytes over "
         "the read ceiling\n";
  return out.str();
}

}  // namespace moe::report
