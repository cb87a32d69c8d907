#pragma once
#include <vector>

#include "probes/probe.hpp"

namespace moe {

// Defaults of the MoE probes when the user names no shapes, Ms, formats or modes.
inline const std::vector<const char*> kDefaultMoeShapes{"deepseek-v2-lite", "qwen3-30b-a3b",
                                                        "mixtral-8x7b", "gpt-oss-20b"};

std::vector<Shape> shapes_or_default(const ProbeState& state,
                                     const std::vector<const char*>& defaults);
std::vector<int> ms_or_default(const ProbeState& state, const std::vector<int>& defaults);
std::vector<kernels::WeightFormat> formats_or_default(const ProbeState& state);
// The bug probes default to bf16 only: their bugs live in the lifecycle, not the format.
std::vector<kernels::WeightFormat> formats_or_bf16(const ProbeState& state);
std::vector<std::string> modes_or_default(const ProbeState& state);

// A seed for one purpose (weights, an input) derived from the run's --seed, so cases differ
// from each other but every rerun with the same --seed is identical.
std::uint64_t derive_seed(std::uint64_t run_seed, std::uint64_t purpose, std::uint64_t index = 0);

}  // namespace moe
