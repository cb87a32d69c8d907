#include "probes/stages/stage_breakdown.hpp"

#include <algorithm>

namespace moe {

StageSample split_by_stage(const std::vector<measure::KernelRecord>& records, int layers) {
  std::vector<const measure::KernelRecord*> order;
  for (const measure::KernelRecord& r : records) order.push_back(&r);
  std::sort(order.begin(), order.end(), [](const auto* a, const auto* b) {
    return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a->end_ns < b->end_ns;
  });
  StageSample s;
  std::uint64_t frontier = 0;  // latest end among the kernels so far
  for (const measure::KernelRecord* r : order) {
    if (r->end_ns < r->start_ns) continue;  // an empty record adds nothing
    const auto i = static_cast<std::size_t>(kernels::stage_of_kernel(r->name));
    s.own_us[i] += static_cast<double>(r->end_ns - r->start_ns) * 1e-3;
    const std::uint64_t from = std::max(r->start_ns, frontier);
    if (r->end_ns > from) s.critical_us[i] += static_cast<double>(r->end_ns - from) * 1e-3;
    frontier = std::max(frontier, r->end_ns);
    ++s.kernels[i];
  }
  const double per = 1.0 / std::max(1, layers);
  for (std::size_t i = 0; i < kStageCount; ++i) {
    s.own_us[i] *= per;
    s.critical_us[i] *= per;
    s.busy_us += s.critical_us[i];
  }
  return s;
}

StageBytes stage_bytes(const LayerTraffic& t) {
  using kernels::Stage;
  StageBytes b;
  b.bytes[static_cast<std::size_t>(Stage::route)] = t.router + t.activations_in;
  b.bytes[static_cast<std::size_t>(Stage::gate_up)] = t.gate_up_weights + t.activations_in;
  b.bytes[static_cast<std::size_t>(Stage::down)] = t.down_weights + t.h;
  b.bytes[static_cast<std::size_t>(Stage::combine)] = t.down_out;
  return b;
}

}  // namespace moe
