#pragma once
// The probes' output check for an engine built by an adapter (--engine): a layer's output of the
// last step against the CPU reference of moebench's weights. The routing is the adapter's and
// cannot be read back, so a token whose top-k is within a near tie is skipped, never followed.
#include <cstdint>
#include <string>

#include "engine/external/external_engine.hpp"
#include "probes/layer_check.hpp"

namespace moe {

// Drains the engine's stream, then checks `layer`'s output of the current input (generated from
// `input_seed`) on up to `max_tokens` tokens (0: affordable_tokens of the shape).
LayerCheck check_external_layer(external::ExternalEngine& engine, int layer, std::uint64_t input_seed,
                                int max_tokens = 0);

// Every layer's output, bit for bit, for a replay or a rerun to be compared with.
std::vector<std::vector<std::uint16_t>> copy_outputs(external::ExternalEngine& engine);
// Elements of every layer that differ from `earlier` (copy_outputs of the same input).
std::size_t count_output_differences(external::ExternalEngine& engine,
                                     const std::vector<std::vector<std::uint16_t>>& earlier);

}  // namespace moe
