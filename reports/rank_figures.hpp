#pragma once
// The per-rank figures of expert-parallel cases, for the renderers: a case whose metrics come
// as NAME_min / NAME_mean / NAME_max over ranks (probes/ep_common/ep_worker.hpp,
// add_rank_summary) and whose evidence.per_rank holds each rank's value. Such a case has no
// sampled measurement, so the main tables would show it without figures.
#include <string>
#include <vector>

#include "reports/report.hpp"

namespace moe::report {

struct RankFigure {
  std::string name;  // "step_us"
  std::string unit;
  double min = 0, mean = 0, max = 0;
};

struct RankFigures {
  const CaseResult* c = nullptr;  // into the report, which must outlive this
  std::size_t ranks = 0;          // entries of evidence.per_rank
  std::vector<RankFigure> figures;  // in the metrics' (alphabetical) order
  // The figure `name`, or null.
  const RankFigure* find(const std::string& name) const;
};

// Every case with at least one NAME_min / _mean / _max triple, in report order.
std::vector<RankFigures> rank_figures(const Report& r);

// Terminal text: one line a (case, figure), "" when no case has any.
std::string render_rank_table(const std::vector<RankFigures>& rows);
// The same as a Markdown section (heading and table), "" when none.
std::string render_rank_markdown(const std::vector<RankFigures>& rows);
// The same as an HTML section, "" when none.
std::string render_rank_html(const std::vector<RankFigures>& rows);

}  // namespace moe::report
