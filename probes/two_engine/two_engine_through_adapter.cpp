// Probe two-engine through an engine adapter (--engine; include/moebench/engine_abi.h): the same
// forcing as with moebench's own engine (two_engine_probe.cpp), on an engine the probe cannot
// look inside.
//  - the key is reused: every engine is handed its layers' weights descriptors
//    (moebench_layer_weights) at the same host addresses, so a cache keyed by the weights'
//    address is hit by every engine after the first;
//  - the device memory is not: the weights come from an allocator in the run's mode with
//    poison-on-free, so an earlier engine's freed expert buffers hold poison (bf16 NaN) and are
//    held back, and a later engine's experts lie elsewhere.
// A stale table therefore reads poison. Its tables being the adapter's, the evidence is the
// outputs: every token of every layer of every engine checked against the CPU reference of its
// own seed. A cache keyed by a device pointer instead is not hit here (no device address is
// reused), which the case's evidence says.
#include <array>
#include <unordered_set>

#include "engine/external/external_engine.hpp"
#include "probes/evidence.hpp"
#include "probes/layer_check.hpp"
#include "probes/moe_defaults.hpp"

namespace moe {

namespace {
constexpr int kLayers = 2;
constexpr int kAllTokens = 1 << 30;

// The engines' memory (poison-on-free, in each allocator mode) and the descriptors' storage,
// kept for the process: an adapter with a stale cache keeps pointers into freed blocks past the
// case (its cache is never evicted), so those blocks must stay mapped and poisoned while the
// process lives, as the own engine's mutation run keeps them (two_engine_probe.cpp); and a later
// case or repetition meets the same descriptor addresses again.
struct ProcessMemory {
  DeviceAllocator caching{DeviceAllocator::Mode::caching, DeviceAllocator::Freed::poison};
  DeviceAllocator plain{DeviceAllocator::Mode::plain, DeviceAllocator::Freed::poison};
  std::array<moebench_layer_weights, kLayers> descriptors{};
};
ProcessMemory& process_memory() {
  static auto* memory = new ProcessMemory;  // never destroyed: see above
  return *memory;
}

std::vector<const void*> expert_blocks(const external::ExternalEngine& e) {
  std::vector<const void*> out;
  for (int l = 0; l < e.layers(); ++l)
    for (const auto& b : e.weights(l).experts())
      for (const DeviceBuffer* d : {&b.gate_up, &b.gate_up_scales, &b.down, &b.down_scales})
        if (d->data()) out.push_back(d->data());
  return out;
}
}  // namespace

void run_two_engine_through_adapter(ProbeState& state) {
  const auto& adapter = state.options().adapter;
  for (const SweepPoint& point : state.points()) {
    const Shape& shape = *point.shape;
    const kernels::WeightFormat format = *point.format;
    const int m = *point.m;
    report::CaseResult c = state.start_case(point);
    c.parameters["engines"] = state.options().engines;
    ProcessMemory& process = process_memory();
    DeviceAllocator& memory =
        state.allocator().mode() == DeviceAllocator::Mode::caching ? process.caching : process.plain;
    const std::size_t poisoned_before = memory.stats().blocks_poisoned;
    // The layers' descriptors, at the same addresses for every engine: the key a cache by the
    // weights' address would use.
    auto& descriptors = process.descriptors;
    int later_engines = 0, expert_reuses = 0, unpoisoned = 0, layers_run = 0, layers_checked = 0;
    std::size_t freed_experts_total = 0;
    std::vector<const void*> previous_experts;
    std::string first_wrong_output;
    int wrong_outputs = 0;
    nlohmann::json engines = nlohmann::json::array();
    for (int i = 0; i < state.options().engines; ++i) {
      EngineConfig config = engine_config(state, shape, format, 20, kLayers);
      config.seed = derive_seed(state.options().seed, 20, static_cast<std::uint64_t>(i));
      const std::uint64_t input_seed = derive_seed(state.options().seed, 21, i);
      nlohmann::json record = {{"engine", i}, {"seed", config.seed}};
      {
        external::ExternalEngine e(adapter, config, m, memory, descriptors.data());
        e.set_input(m, input_seed);
        e.forward();
        e.stream().drain();
        const std::vector<const void*> mine = expert_blocks(e);
        const std::unordered_set<const void*> mine_set(mine.begin(), mine.end());
        int reused_here = 0, unpoisoned_here = 0;
        for (const void* p : previous_experts) {
          reused_here += mine_set.count(p) != 0;
          unpoisoned_here += !memory.holds_poison(p);
        }
        if (i > 0) {
          ++later_engines;
          expert_reuses += reused_here;
          unpoisoned += unpoisoned_here;
          freed_experts_total += previous_experts.size();
        }
        for (int l = 0; l < e.layers(); ++l) {
          ++layers_run;
          const std::size_t elements = static_cast<std::size_t>(m) * static_cast<std::size_t>(shape.hidden);
          // No routing to follow (it is the adapter's): near-tie tokens are skipped, not followed.
          const LayerCheck k = check_output(LayerReference::of(e.weights(l)), copy_to_host(e.output(l), elements), m,
                                            input_seed, nullptr, kAllTokens);
          layers_checked += k.tokens_checked > 0;
          if (!k.passed) {
            ++wrong_outputs;
            if (first_wrong_output.empty())
              first_wrong_output = "engine " + std::to_string(i) + " layer " + std::to_string(l) + ": " + k.detail;
          }
        }
        e.destroy();  // its failure is this case's error
        record["weights_descriptor_address"] = hex(&descriptors[0]);
        record["expert_buffers"] = mine.size();
        record["earlier_expert_buffers_reused"] = reused_here;
        record["earlier_expert_buffers_not_poisoned"] = unpoisoned_here;
        record["first_expert_buffer"] = mine.empty() ? "" : hex(mine.front());
        previous_experts.insert(previous_experts.end(), mine.begin(), mine.end());
      }  // moebench's weights are freed here: poisoned and held back
      engines.push_back(std::move(record));
    }
    c.checks.push_back({"outputs_match_own_seed", wrong_outputs == 0,
                        std::to_string(layers_run - wrong_outputs) + " of " + std::to_string(layers_run) +
                            " layer outputs match their own seed's reference (every token but near ties)" +
                            (first_wrong_output.empty() ? "" : "; first wrong: " + first_wrong_output)});
    c.evidence["engine_adapter"] = {{"name", adapter->name()}, {"version", adapter->version()}};
    c.evidence["reuse_key"] = "the host address of each layer's moebench_layer_weights; no device address is reused";
    c.evidence["allocator"] = state.allocator().mode() == DeviceAllocator::Mode::caching ? "caching" : "plain";
    c.evidence["engines"] = engines;
    c.evidence["later_engines"] = later_engines;
    c.evidence["earlier_expert_buffers_reused"] = expert_reuses;
    c.evidence["freed_expert_buffers_checked"] = freed_experts_total;
    c.evidence["blocks_poisoned"] = memory.stats().blocks_poisoned - poisoned_before;
    // By construction here: every engine got the one descriptor array.
    c.prove("weights_address_reused", later_engines > 0,
            "only one engine ran: nothing could reuse its weights' address");
    c.prove("expert_buffers_elsewhere", later_engines > 0 && expert_reuses == 0,
            std::to_string(expert_reuses) + " expert buffers of earlier engines were handed "
            "to later ones: a stale table could read right values by accident");
    c.prove("freed_experts_poisoned", later_engines > 0 && freed_experts_total > 0 && unpoisoned == 0,
            std::to_string(unpoisoned) + " of " + std::to_string(freed_experts_total) +
                " freed expert buffers no longer held poison when a later engine ran");
    c.prove("outputs_checked", layers_run > 0 && layers_checked == layers_run,
            std::to_string(layers_run - layers_checked) + " of " + std::to_string(layers_run) +
                " layer outputs had no token outside a near tie to check");
    c.conclude("weights descriptors at the same addresses, expert buffers elsewhere and the freed "
               "ones poisoned; every output of every engine matched its own seed");
    state.add_case(std::move(c));
  }
}

}  // namespace moe
