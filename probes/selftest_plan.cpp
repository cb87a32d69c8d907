#include "probes/selftest_plan.hpp"

#include <algorithm>

#include "probes/catch_plan.hpp"

namespace moe {

namespace {

// Why `probe` cannot run here, or empty.
std::string why_not_run(const ProbeInfo& probe, int gpus,
                        const std::function<std::string(const ProbeInfo&)>& adapter_refusal) {
  if (!probe.not_built.empty()) return std::string(probe.not_built);
  if (probe.min_gpus > gpus)
    return "needs " + std::to_string(probe.min_gpus) + " GPUs, this machine has " + std::to_string(gpus);
  if (adapter_refusal) return adapter_refusal(probe);
  return {};
}

}  // namespace

std::vector<SelftestRow> selftest_plan(int gpus, const std::function<std::string(const ProbeInfo&)>& adapter_refusal) {
  std::vector<std::string> probes = clean_only_probes();
  for (const MutationInfo& m : all_mutations())
    if (m.historic_bug)
      for (const report::CatchTarget& t : catch_targets(m))
        if (std::find(probes.begin(), probes.end(), t.probe) == probes.end()) probes.push_back(t.probe);
  std::vector<SelftestRow> rows;
  for (const std::string& name : probes) {
    const ProbeInfo& probe = probe_by_name(name);
    const std::string why = why_not_run(probe, gpus, adapter_refusal);
    // two-engine's catch must not rest on the allocator's layout: both modes.
    const std::vector<std::string> allocators =
        name == "two-engine" ? std::vector<std::string>{"caching", "plain"} : std::vector<std::string>{"caching"};
    for (const std::string& allocator : allocators) {
      rows.push_back({name, nullptr, {}, allocator, why});
      if (adapter_refusal) continue;
      for (const MutationInfo& m : all_mutations()) {
        if (!m.historic_bug) continue;
        for (const report::CatchTarget& t : catch_targets(m))
          if (t.probe == name) rows.push_back({name, &m, t, allocator, why});
      }
    }
  }
  return rows;
}

int rows_not_run(const std::vector<SelftestRow>& plan) {
  return static_cast<int>(std::count_if(plan.begin(), plan.end(), [](const SelftestRow& r) { return !r.not_run.empty(); }));
}

}  // namespace moe
