#pragma once
// The cases of a whole run, from the probes' declared sweeps: --filter applied and each case
// numbered in the order the run makes it (probe, repetition, point), so the progress lines,
// the dry run and the filter's usage errors all count the same cases.
#include <cstddef>
#include <string>
#include <vector>

#include "probes/probe.hpp"
#include "probes/sweep.hpp"

namespace moe {

// The selected points of one probe's repetition. A probe without a declaration (its cases are
// decided as it runs) has none, and `declared` false.
struct PlannedRun {
  const ProbeInfo* probe = nullptr;
  int rep = 0;
  bool declared = false;
  std::vector<SweepPoint> points;
  std::size_t first = 0;  // how many cases of the run come before its first
};

struct SweepPlan {
  std::vector<PlannedRun> runs;  // every probe and repetition, in run order
  std::size_t total = 0;         // selected cases of the whole run
  // How many cases of the run come before `probe`'s first.
  std::size_t first_of(std::string_view probe) const;
  // Whether `probe` runs at all: it has a selected case, or decides its cases as it runs.
  bool runs_probe(std::string_view probe) const;
};

// The points of `probe`'s repetition `rep` that options.case_filter selects (all without one).
std::vector<SweepPoint> selected_points(const ProbeInfo& probe, const RunOptions& options, int rep);

// The run's plan. With a filter (options.case_filter), raises UsageError when it matches no
// declared case and every probe of the run declares its cases, naming the expression and a few
// keys it could have matched; an invalid expression is a UsageError too.
SweepPlan plan_sweeps(const std::vector<const ProbeInfo*>& probes, const RunOptions& options);

// "case 12 of 96: KEY", the line the runner writes to stderr as a case starts.
std::string progress_line(std::size_t number, std::size_t total, const std::string& key);

}  // namespace moe
