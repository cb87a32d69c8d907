#include "probes/probe.hpp"

#include "probes/evidence_rules.hpp"

namespace moe {

report::CaseResult ProbeState::new_case(std::string name) const {
  report::CaseResult c;
  c.probe = probe_;
  c.name = options_.repeat > 1 ? name + "#" + std::to_string(rep_) : std::move(name);
  c.seed = options_.seed;
  if (options_.mutation) c.mutation = std::string(info(*options_.mutation).name);
  c.required_evidence = required_evidence(probe_);
  return c;
}

}  // namespace moe
