#pragma once
#include <vector>

#include <optional>
#include <string>

#include "engine/engine.hpp"
#include "probes/probe.hpp"

namespace moe {

// Defaults of the MoE probes' sweeps (probes/sweep.hpp) when the user names no shapes or
// formats.
inline const std::vector<std::string> kDefaultMoeShapes{"deepseek-v2-lite", "qwen3-30b-a3b",
                                                        "mixtral-8x7b", "gpt-oss-20b"};
inline const std::vector<kernels::WeightFormat> kBothFormats{kernels::WeightFormat::bf16,
                                                             kernels::WeightFormat::int4};
// The bug probes default to bf16 only: their bugs live in the lifecycle, not the format.
inline const std::vector<kernels::WeightFormat> kBf16Only{kernels::WeightFormat::bf16};

// The expert-parallel probes, whose cases are decided as they run (no declared sweep): the
// user's shapes and Ms, else theirs.
std::vector<Shape> shapes_or_default(const ProbeState& state,
                                     const std::vector<const char*>& defaults);
std::vector<int> ms_or_default(const ProbeState& state, const std::vector<int>& defaults);

// A case of an MoE probe labelled with what it runs, its parameters filled for repro.
report::CaseResult moe_case(const ProbeState& state, std::string name, const Shape& shape,
                            kernels::WeightFormat format, std::optional<int> m = std::nullopt,
                            std::optional<std::string> mode = std::nullopt);

// An engine for a probe: weights seeded from --seed and `purpose` (so each probe's engines
// differ), `layers` 0 for the engine's own plan.
EngineConfig engine_config(const ProbeState& state, const Shape& shape,
                           kernels::WeightFormat format, std::uint64_t purpose, int layers = 0);

// After a teardown that may have gone wrong: a host/device round trip, and a fresh one-layer
// engine whose output matches the reference. Passes only if both do.
report::Check device_usable(ProbeState& state, const Shape& shape, kernels::WeightFormat format,
                            int m, const std::string& check_name);

// A seed for one purpose (weights, an input) derived from the run's --seed, so cases differ
// from each other but every rerun with the same --seed is identical.
std::uint64_t derive_seed(std::uint64_t run_seed, std::uint64_t purpose, std::uint64_t index = 0);

}  // namespace moe
