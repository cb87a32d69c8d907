#include "probes/sweep_plan.hpp"

#include <algorithm>
#include <optional>

#include "common/errors.hpp"
#include "reports/case_filter.hpp"

namespace moe {

std::size_t SweepPlan::first_of(std::string_view probe) const {
  for (const PlannedRun& r : runs)
    if (r.probe->name == probe) return r.first;
  return total;
}

bool SweepPlan::runs_probe(std::string_view probe) const {
  return std::any_of(runs.begin(), runs.end(), [&](const PlannedRun& r) {
    return r.probe->name == probe && (!r.declared || !r.points.empty());
  });
}

std::vector<SweepPoint> selected_points(const ProbeInfo& probe, const RunOptions& options, int rep) {
  if (!probe.sweep) return {};
  std::vector<SweepPoint> points = enumerate_sweep(probe.name, *probe.sweep, options, rep);
  if (!options.case_filter.empty()) {
    const report::CaseKeyFilter filter(options.case_filter);
    std::erase_if(points, [&](const SweepPoint& p) { return !filter.matches(p.key); });
  }
  return points;
}

SweepPlan plan_sweeps(const std::vector<const ProbeInfo*>& probes, const RunOptions& options) {
  SweepPlan plan;
  std::optional<report::CaseKeyFilter> filter;
  if (!options.case_filter.empty()) filter.emplace(options.case_filter);
  std::vector<std::string> examples;  // keys the filter could have matched
  bool all_declared = true;
  for (const ProbeInfo* p : probes)
    for (int rep = 0; rep < options.repeat; ++rep) {
      PlannedRun run{p, rep, p->sweep != nullptr, {}, plan.total};
      all_declared = all_declared && run.declared;
      if (run.declared) {
        run.points = enumerate_sweep(p->name, *p->sweep, options, rep);
        if (filter) {
          for (std::size_t i = 0; rep == 0 && i < run.points.size() && i < 2 && examples.size() < 6; ++i)
            examples.push_back(run.points[i].key);
          std::erase_if(run.points, [&](const SweepPoint& x) { return !filter->matches(x.key); });
        }
      }
      plan.total += run.points.size();
      plan.runs.push_back(std::move(run));
    }
  if (filter && plan.total == 0 && all_declared) {
    std::string keys;
    for (const std::string& k : examples) keys += (keys.empty() ? "" : ", ") + k;
    throw UsageError("--filter '" + options.case_filter + "' matches no case of this run" +
                     (keys.empty() ? std::string(" (it has none)") : "; its keys look like " + keys));
  }
  return plan;
}

std::string progress_line(std::size_t number, std::size_t total, const std::string& key) {
  return "case " + std::to_string(number) + " of " + std::to_string(total) + ": " + key;
}

}  // namespace moe
