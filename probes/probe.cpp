#include "probes/probe.hpp"

#include <algorithm>

#include "common/errors.hpp"
#include "probes/evidence_rules.hpp"
#include "probes/moe_defaults.hpp"
#include "probes/sweep_plan.hpp"

namespace moe {

void ProbeState::no_device() const {
  throw Error(ExitCode::probe_error, "probe " + probe_ + " runs on the host: it has no device");
}

report::CaseResult ProbeState::new_case(std::string name) const {
  report::CaseResult c;
  c.probe = probe_;
  c.name = options_.repeat > 1 ? name + "#" + std::to_string(rep_) : std::move(name);
  c.seed = options_.seed;
  if (options_.mutation) c.mutation = std::string(info(*options_.mutation).name);
  c.required_evidence = options_.adapter ? required_evidence_through_adapter(probe_) : required_evidence(probe_);
  return c;
}

const std::vector<SweepPoint>& ProbeState::points() const {
  if (!points_) points_ = selected_points(probe_by_name(probe_), options_, rep_);
  return *points_;
}

report::CaseResult ProbeState::start_case(const SweepPoint& point) {
  const std::vector<SweepPoint>& all = points();
  const auto at = std::find_if(all.begin(), all.end(),
                               [&](const SweepPoint& p) { return p.key == point.key; });
  if (at == all.end())
    throw Error(ExitCode::probe_error, "probe " + probe_ + " started case " + point.key +
                                           ", which its sweep does not hold");
  if (start_) start_(static_cast<std::size_t>(at - all.begin()), point);
  if (point.shape)
    return moe_case(*this, point.case_name, *point.shape, *point.format, point.m, point.mode);
  report::CaseResult c = new_case(point.case_name);
  c.mode = point.mode;
  return c;
}

}  // namespace moe
