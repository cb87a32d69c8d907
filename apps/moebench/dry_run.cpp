// The cases of a run without a device: the probes' declared sweeps (probes/sweep.hpp)
// enumerated as the run enumerates them, --filter applied, with each case's bytes and floor.
#include "apps/moebench/dry_run.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <sstream>

#include "kernels/moe/generate.hpp"
#include "probes/sweep_plan.hpp"
#include "reports/table.hpp"
#include "reports/text_escape.hpp"

namespace moe::cli {

namespace {

std::size_t expert_bytes(const kernels::MoeDims& d) {
  std::size_t b = 0;
  for (auto kind : {kernels::TensorKind::gate_up, kernels::TensorKind::down})
    b += kernels::expert_weight_bytes(d, kind) + kernels::expert_scale_bytes(d, kind);
  return b;
}

// The engine's own layer count (engine/engine.cpp plan_layers): enough that an M = 1 step
// touches 4x the L2, at most 32, capped by --max-layers; device memory is not known here.
int layers_for(const Shape& s, kernels::WeightFormat f, const RunOptions& o, std::size_t l2) {
  const kernels::MoeDims d = s.dims(f);
  const std::size_t step = kernels::router_bytes(d) + expert_bytes(d) * (d.top_k + d.shared);
  int layers = static_cast<int>(std::clamp<std::size_t>((4 * l2 + step - 1) / step, 1, 32));
  if (o.max_layers > 0) layers = std::min(layers, o.max_layers);
  return layers;
}

// Bytes of one step: per layer the router, activations in and out, and each distinct expert
// once, the distinct count expected under uniform routing (E (1 - (1 - k/E)^M) + shared).
double step_bytes(const Shape& s, kernels::WeightFormat f, int m, int layers) {
  const kernels::MoeDims d = s.dims(f);
  const double e = d.experts, k = d.top_k;
  const double distinct = e * (1 - std::pow(1 - k / e, m)) + d.shared;
  const double per_layer = static_cast<double>(kernels::router_bytes(d)) +
                           2.0 * m * d.hidden * 2 + distinct * static_cast<double>(expert_bytes(d));
  return per_layer * layers;
}

}  // namespace

std::string render_dry_run(const std::vector<const ProbeInfo*>& probes, const RunOptions& o,
                           const DryRunOptions& dry) {
  std::vector<std::vector<std::string>> rows{{"#", "probe", "case", "shape", "M", "format",
                                              "mode", "layers", "MB/step", "floor us"}};
  std::map<std::string, Shape> shapes_used;
  std::vector<std::string> not_listed;
  const SweepPlan plan = plan_sweeps(probes, o);
  std::size_t n = 0;
  for (const PlannedRun& run : plan.runs) {
    if (!run.declared) {
      if (run.rep == 0) not_listed.emplace_back(run.probe->name);
      continue;
    }
    for (const SweepPoint& p : run.points) {
      const std::string name = o.repeat > 1 ? p.case_name + "#" + std::to_string(p.rep) : p.case_name;
      const std::string mode = p.mode.value_or("-");
      if (p.probe == "copy") {
        // A stream over --copy-bytes, read once (read) or read and written (the copies).
        const double bytes = o.copy_bytes ? static_cast<double>(o.copy_bytes) : double(4ull << 30);
        const double rw = p.case_name == "read" ? 1.0 : 2.0;
        rows.push_back({std::to_string(++n), p.probe, name, "-", "-", "-", mode, "-",
                        report::fmt(rw * bytes / 1e6, 4),
                        report::fmt(rw * bytes / (dry.ceiling_gbps * 1e3), 4)});
        continue;
      }
      if (!p.shape) {
        rows.push_back({std::to_string(++n), p.probe, name, "-", "-", "-", mode, "-", "-", "-"});
        continue;
      }
      shapes_used.emplace(p.shape->name, *p.shape);
      const int layers = layers_for(*p.shape, *p.format, o, dry.l2_bytes);
      const double bytes = p.m ? step_bytes(*p.shape, *p.format, *p.m, layers) : 0;
      rows.push_back({std::to_string(++n), p.probe, name, p.shape->name,
                      p.m ? std::to_string(*p.m) : "-", std::string(kernels::to_string(*p.format)),
                      mode, std::to_string(layers), p.m ? report::fmt(bytes / 1e6, 4) : "-",
                      p.m ? report::fmt(bytes / (dry.ceiling_gbps * 1e3), 4) : "-"});
    }
  }
  std::ostringstream out;
  out << report::format_columns(rows);
  if (!shapes_used.empty()) {
    out << "\nshapes:\n";
    for (const auto& [name, s] : shapes_used) {
      nlohmann::json j = s.to_json();
      j.erase("description");
      out << "  " << report::escape_terminal(j.dump(), report::kMaxLineChars) << "  ("
          << report::escape_terminal(s.source.empty() ? "library" : s.source, report::kMaxLineChars)
          << ", fingerprint " << s.fingerprint() << ")\n";
    }
  }
  for (const std::string& p : not_listed)
    out << "probe " << p << ": its cases are decided as it runs; not listed\n";
  if (!o.case_filter.empty())
    out << "--filter '" << report::escape_terminal(o.case_filter, report::kMaxLineChars)
        << "': only the cases whose key it matches\n";
  if (o.adapter) {
    out << "engine: " << o.adapter->label() << " (engine ABI " << o.adapter->abi_version() << ", "
        << report::escape_terminal(o.adapter->path().string(), report::kMaxLineChars) << ")\n";
    for (const std::string& left : o.left_out_for_adapter) out << "  not run through it: " << left << "\n";
  }
  if (o.peer == Peer::cublas)
    out << "probe bandwidth: cuBLAS peer timed beside each case ("
        << (o.peer_required ? "required: exit 3 without libcublas" : "where libcublas loads")
        << ")\n";
  out << "\n" << n << " cases; nothing ran (--dry-run: no GPU was touched). layers: the engine's "
      << "count for an L2 of " << (dry.l2_bytes >> 20) << " MiB (4x the L2 an M = 1 step "
      << "touches, at most 32; the GPU's own L2 and memory decide at run time). MB/step: every "
      << "layer's router, activations and distinct experts, their number expected under "
      << "uniform routing. floor us: those bytes at --ceiling-gbps " << report::fmt(dry.ceiling_gbps, 4)
      << " GB/s.\n";
  return out.str();
}

}  // namespace moe::cli
