#include "probes/sweep_plan.hpp"

#include <algorithm>

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
  // A bad expression is a usage error before anything runs, whatever probes the run has.
  if (!options.case_filter.empty()) (void)report::CaseKeyFilter(options.case_filter);
  SweepPlan plan;
  bool all_declared = true;
  for (const ProbeInfo* p : probes)
    for (int rep = 0; rep < options.repeat; ++rep) {
      PlannedRun run{p, rep, p->sweep != nullptr, selected_points(*p, options, rep), plan.total};
      all_declared = all_declared && run.declared;
      plan.total += run.points.size();
      plan.runs.push_back(std::move(run));
    }
  if (!options.case_filter.empty() && plan.total == 0 && all_declared) {
    std::string keys;  // the first two keys of each probe, as the filter could have matched them
    int listed = 0;
    for (const ProbeInfo* p : probes) {
      const std::vector<SweepPoint> unfiltered = enumerate_sweep(p->name, *p->sweep, options, 0);
      for (std::size_t i = 0; i < unfiltered.size() && i < 2 && listed < 6; ++i, ++listed)
        keys += (keys.empty() ? "" : ", ") + unfiltered[i].key;
    }
    throw UsageError("--filter '" + options.case_filter + "' matches no case of this run" +
                     (keys.empty() ? std::string(" (it has none)") : "; its keys look like " + keys));
  }
  return plan;
}

std::string progress_line(std::size_t number, std::size_t total, const std::string& key) {
  return "case " + std::to_string(number) + " of " + std::to_string(total) + ": " + key;
}

}  // namespace moe
