// The sweep each probe runs, as data, so a dry run can list the cases without a device. It
// mirrors each probe's loops (probes/*/..._probe.cpp: their default shapes, Ms, formats and
// modes, and the user's options over them); when probes declare their sweeps as axes, this
// table goes and the runner enumerates those declarations instead.
#include "apps/moebench/dry_run.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <sstream>

#include "kernels/moe/generate.hpp"
#include "probes/moe_defaults.hpp"
#include "reports/table.hpp"
#include "reports/text_escape.hpp"

namespace moe::cli {

namespace {

struct Sweep {
  const char* probe;
  std::vector<const char*> cases;        // case names, each over the whole sweep
  std::vector<const char*> shapes;       // default shapes; empty: no shape axis
  std::vector<int> ms;                   // default Ms; empty: no M axis
  bool both_formats;                     // default bf16 and int4, else bf16
  std::optional<std::string> fixed_mode; // a mode the probe always uses
  bool mode_axis;                        // eager and graph (or --mode)
};

const std::vector<const char*> kMoe(kDefaultMoeShapes.begin(), kDefaultMoeShapes.end());

const Sweep kSweeps[] = {
    {"bandwidth", {"step"}, kMoe, {1, 2, 4, 8, 16, 64}, true, std::nullopt, true},
    {"stages", {"layer"}, kMoe, {1, 8, 64}, true, std::nullopt, true},
    {"capture-replay", {"cycle"}, kMoe, {1, 8, 64}, true, "graph", false},
    {"barrier", {"loops"}, {"deepseek-v2-lite"}, {16}, false, "eager", false},
    {"host-nonblocking", {"forward"}, {"deepseek-v2-lite"}, {64}, false, "eager", false},
    {"drop-after-inflight", {"layer", "engine"}, {"tiny"}, {16}, false, std::nullopt, false},
    {"two-engine", {"sequence"}, {"tiny"}, {4}, false, std::nullopt, false},
    {"scratch-regrow", {"schedule"}, {"tiny"}, {}, false, std::nullopt, false},
};

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
  std::vector<Shape> library;
  auto library_shape = [&](const char* name) {
    if (library.empty())
      library = load_shape_library(std::filesystem::path(o.fixtures_dir) / "shapes");
    return resolve_shape(name, library);
  };
  std::size_t n = 0;
  for (const ProbeInfo* p : probes) {
    for (int rep = 0; rep < o.repeat; ++rep) {
      const std::string suffix = o.repeat > 1 ? "#" + std::to_string(rep + 1) : "";
      if (p->name == "copy") {
        const double bytes = o.copy_bytes ? static_cast<double>(o.copy_bytes) : double(4ull << 30);
        for (auto [name, rw] : {std::pair{"read", 1.0}, {"memcpy", 2.0}, {"copy-kernel", 2.0}})
          rows.push_back({std::to_string(++n), "copy", name + suffix, "-", "-", "-", name, "-",
                          report::fmt(rw * bytes / 1e6, 4),
                          report::fmt(rw * bytes / (dry.ceiling_gbps * 1e3), 4)});
        continue;
      }
      const auto sweep = std::find_if(std::begin(kSweeps), std::end(kSweeps),
                                      [&](const Sweep& s) { return p->name == s.probe; });
      if (sweep == std::end(kSweeps)) {
        if (rep == 0) not_listed.emplace_back(p->name);
        continue;
      }
      std::vector<Shape> shapes = o.shapes;
      if (!o.user_set_shapes)
        for (const char* name : sweep->shapes) shapes.push_back(library_shape(name));
      std::vector<kernels::WeightFormat> formats = o.formats;
      if (formats.empty())
        formats = sweep->both_formats
                      ? std::vector{kernels::WeightFormat::bf16, kernels::WeightFormat::int4}
                      : std::vector{kernels::WeightFormat::bf16};
      std::vector<std::optional<int>> ms;
      if (sweep->ms.empty())
        ms.push_back(std::nullopt);
      else
        for (int m : o.user_set_ms ? o.ms : sweep->ms) ms.push_back(m);
      std::vector<std::string> modes{"-"};
      if (sweep->fixed_mode)
        modes = {*sweep->fixed_mode};
      else if (sweep->mode_axis)
        modes = o.modes.empty() ? std::vector<std::string>{"eager", "graph"} : o.modes;
      for (const Shape& shape : shapes) {
        shapes_used.emplace(shape.name, shape);
        for (kernels::WeightFormat f : formats) {
          const int layers = layers_for(shape, f, o, dry.l2_bytes);
          for (const char* case_name : sweep->cases)
            for (const std::optional<int>& m : ms)
              for (const std::string& mode : modes) {
                const double bytes = m ? step_bytes(shape, f, *m, layers) : 0;
                rows.push_back({std::to_string(++n), std::string(p->name), case_name + suffix,
                                shape.name, m ? std::to_string(*m) : "-",
                                std::string(kernels::to_string(f)), mode,
                                std::to_string(layers), m ? report::fmt(bytes / 1e6, 4) : "-",
                                m ? report::fmt(bytes / (dry.ceiling_gbps * 1e3), 4) : "-"});
              }
        }
      }
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
