#pragma once
// What a run through an engine adapter (--engine) needs, checked before anything runs so that
// each refusal is one line and exit 2: every probe able to take an external engine, with the
// capabilities it needs, and every layer its cases build one the adapter takes.
#include <string>
#include <vector>

#include "engine/external/adapter_library.hpp"
#include "probes/probe.hpp"

namespace moe {

// Why `probe` cannot run through `adapter`, or empty when it can: it does not take an external
// engine (ExternalEngineUse::why_not), or it needs capabilities the adapter does not declare.
std::string adapter_refusal(const ProbeInfo& probe, const external::AdapterLibrary& adapter);

// Named probes (`named`) must each run through the adapter: UsageError naming the first that
// cannot, why, and the probes that can. The default suite keeps those that can and returns the
// names of those left out, each with why.
std::vector<std::string> select_probes_for_adapter(std::vector<const ProbeInfo*>& probes, bool named,
                                                   const external::AdapterLibrary& adapter);

// Each shape and weight format the run's cases would build (options.adapter's probes, after
// --filter) checked against the adapter: a format it does not take, or a layer its check_layer
// refuses, is a UsageError naming the shape, the format and the adapter's own message.
void check_adapter_takes_cases(const std::vector<const ProbeInfo*>& probes, const RunOptions& options);

}  // namespace moe
