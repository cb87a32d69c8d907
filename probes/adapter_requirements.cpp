#include "probes/adapter_requirements.hpp"

#include <set>

#include "common/errors.hpp"
#include "engine/external/adapter_call.hpp"
#include "engine/external/capabilities.hpp"
#include "engine/external/layer_description.hpp"
#include "probes/sweep_plan.hpp"

namespace moe {

std::string adapter_refusal(const ProbeInfo& probe, const external::AdapterLibrary& adapter) {
  const ExternalEngineUse& use = probe.external;
  if (!use.runs)
    return use.why_not.empty() ? "it drives moebench's own engine only, so far" : std::string(use.why_not);
  std::string missing;
  for (const external::CapabilityInfo& c : external::all_capabilities())
    if ((use.needs & c.bit) && !adapter.has(c.bit))
      missing += (missing.empty() ? "" : ", ") + std::string(c.name) + " (" + std::string(c.macro) + ")";
  if (!missing.empty()) return "it needs " + missing + ", which " + adapter.label() + " does not declare";
  return "";
}

std::vector<std::string> select_probes_for_adapter(std::vector<const ProbeInfo*>& probes, bool named,
                                                   const external::AdapterLibrary& adapter) {
  std::vector<std::string> left_out;
  std::vector<const ProbeInfo*> kept;
  for (const ProbeInfo* p : probes) {
    const std::string why = adapter_refusal(*p, adapter);
    if (why.empty()) {
      kept.push_back(p);
      continue;
    }
    if (named) {
      std::string can;
      for (const ProbeInfo& q : all_probes())
        if (adapter_refusal(q, adapter).empty()) can += (can.empty() ? "" : ", ") + std::string(q.name);
      throw UsageError("--engine: probe " + std::string(p->name) + " cannot run through " + adapter.label() +
                       ": " + why + " (probes that can: " + (can.empty() ? "none" : can) + ")");
    }
    left_out.push_back(std::string(p->name) + " (" + why + ")");
  }
  probes = kept;
  return left_out;
}

void check_adapter_takes_cases(const std::vector<const ProbeInfo*>& probes, const RunOptions& options) {
  const external::AdapterLibrary& adapter = *options.adapter;
  std::set<std::pair<std::string, kernels::WeightFormat>> seen;  // shape fingerprint, format
  for (const ProbeInfo* p : probes)
    for (const SweepPoint& point : selected_points(*p, options, 0)) {
      if (!point.shape || !point.format) continue;
      const Shape& shape = *point.shape;
      const kernels::WeightFormat format = *point.format;
      if (!seen.insert({shape.fingerprint(), format}).second) continue;
      const std::string what = "shape " + shape.name + " (" + std::string(kernels::to_string(format)) + ")";
      if (!adapter.takes(format))
        throw UsageError("--engine: " + adapter.label() + " does not take " +
                         std::string(kernels::to_string(format)) + " weights, and probe " +
                         std::string(p->name) + " would give it " + what + " (--weight-format)");
      if (!adapter.table().check_layer) continue;
      const moebench_layer_desc desc = external::describe_layer(shape.dims(format));
      moebench_error error = external::empty_error();
      const moebench_status status = adapter.table().check_layer(&desc, &error);
      if (status != MOEBENCH_OK)
        throw UsageError("--engine: " + external::describe_failure(adapter, "check_layer", status, error) +
                         " (probe " + std::string(p->name) + ", " + what + ")");
    }
}

}  // namespace moe
