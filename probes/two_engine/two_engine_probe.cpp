// Probe `two-engine` (docs/bugs.md, bug 1, stale resident pointers after engine teardown): builds, runs
// and destroys N engines in sequence in one process, each with its own seed, and forces the
// condition under which the historic design corrupts rather than accidentally works:
//  - the key is reused: every engine's weights objects are constructed in the same host
//    storage (a WeightsArena), so engine i's weights have engine 0's addresses;
//  - the device memory is not: the engines allocate from the probe's own allocator (in the
//    run's mode, caching or plain) with poison-on-free, so each engine's freed expert buffers
//    are filled with poison and held back, and the next engine's experts lie elsewhere. A
//    stale table then reads poison (bf16 NaN) in every engine after the first, whatever the
//    allocator's layout; a role-for-role reuse cannot make it come out right by accident.
// The fast path is proven per layer by reading back the resident table the kernels were
// handed and comparing it with the layer's own expert pointers. PASS needs the key reused,
// no expert buffer reused, the freed experts poisoned, the tables read back, and every output
// right; INCONCLUSIVE when a piece of that could not be shown; FAIL on a wrong table or output.
#include <optional>
#include <unordered_set>

#include "engine/engine.hpp"
#include "engine/fault_injection.hpp"
#include "probes/evidence.hpp"
#include "probes/layer_check.hpp"
#include "probes/moe_defaults.hpp"

namespace moe {

namespace {
constexpr int kLayers = 2;
constexpr int kAllTokens = 1 << 30;

// The engines' memory: the run's allocator mode with poison-on-free. Under the historic design
// a stale table outlives the case (the process-wide cache is never evicted, and a later case's
// weights may land at the same addresses), so its poisoned blocks must stay mapped for the
// process, as the historic engines kept freed memory mapped: then the allocator is never
// destroyed. Otherwise it is the case's, and gives its memory back at the end.
DeviceAllocator& engine_memory(DeviceAllocator::Mode mode, std::optional<DeviceAllocator>& local) {
  if (mutation_active(Mutation::static_resident_cache)) {
    static auto* caching = new DeviceAllocator(DeviceAllocator::Mode::caching, DeviceAllocator::Freed::poison);
    static auto* plain = new DeviceAllocator(DeviceAllocator::Mode::plain, DeviceAllocator::Freed::poison);
    return mode == DeviceAllocator::Mode::caching ? *caching : *plain;
  }
  local.emplace(mode, DeviceAllocator::Freed::poison);
  return *local;
}

// Every expert buffer of an engine (weights and scales), by address.
std::vector<const void*> expert_blocks(Engine& e) {
  std::vector<const void*> out;
  for (int l = 0; l < e.layers(); ++l)
    for (const auto& b : e.layer(l).weights().experts())
      for (const DeviceBuffer* d : {&b.gate_up, &b.gate_up_scales, &b.down, &b.down_scales})
        if (d->data()) out.push_back(d->data());
  return out;
}
}  // namespace

extern const SweepDeclaration two_engine_sweep;
const SweepDeclaration two_engine_sweep{
    .cases = {"sequence"}, .shapes = {"tiny"}, .ms = {4}, .formats = kBf16Only};

// Through an engine adapter (--engine): two_engine_through_adapter.cpp.
void run_two_engine_through_adapter(ProbeState& state);

void run_two_engine_probe(ProbeState& state) {
  if (state.options().adapter) return run_two_engine_through_adapter(state);
  for (const SweepPoint& point : state.points()) {
    const Shape& shape = *point.shape;
    const kernels::WeightFormat format = *point.format;
    const int m = *point.m;
    report::CaseResult c = state.start_case(point);
    c.parameters["engines"] = state.options().engines;
    // Poison-on-free in the run's allocator mode: see the header comment.
    std::optional<DeviceAllocator> local;
    DeviceAllocator& memory = engine_memory(state.allocator().mode(), local);
    const std::size_t poisoned_before = memory.stats().blocks_poisoned;
    WeightsArena arena(kLayers);
    const void* first_host = nullptr;
    int later_engines = 0, key_reused = 0, expert_reuses = 0, unpoisoned = 0;
    int tables_read = 0, tables_own = 0, layers_run = 0;
    std::size_t freed_experts_total = 0;
    std::vector<const void*> previous_experts;  // all engines before this one
    std::string first_wrong_table, first_wrong_output;
    int wrong_outputs = 0;
    nlohmann::json engines = nlohmann::json::array();
    for (int i = 0; i < state.options().engines; ++i) {
      EngineConfig config = engine_config(state, shape, format, 20, kLayers);
      config.seed = derive_seed(state.options().seed, 20, static_cast<std::uint64_t>(i));
      const std::uint64_t input_seed = derive_seed(state.options().seed, 21, i);
      nlohmann::json record = {{"engine", i}, {"seed", config.seed}};
      {
        Engine e(config, memory, state.device(), &arena);
        e.set_input(m, input_seed);
        e.forward();
        e.stream().drain();
        const void* host = &e.layer(0).weights();
        if (i == 0) first_host = host;
        const std::vector<const void*> mine = expert_blocks(e);
        // The experts this engine got again from earlier engines (must be none), and the
        // earlier engines' experts that no longer hold poison (must be none).
        const std::unordered_set<const void*> mine_set(mine.begin(), mine.end());
        int reused_here = 0, unpoisoned_here = 0;
        for (const void* p : previous_experts) {
          reused_here += mine_set.count(p) != 0;
          unpoisoned_here += !memory.holds_poison(p);
        }
        if (i > 0) {
          ++later_engines;
          key_reused += host == first_host;
          expert_reuses += reused_here;
          unpoisoned += unpoisoned_here;
          freed_experts_total += previous_experts.size();
        }
        int own_tables = 0;
        for (int l = 0; l < e.layers(); ++l) {
          ++layers_run;
          const TableReadback t = read_back_resident_table(e.layer(l));
          tables_read += t.present && t.entries > 0;
          tables_own += t.matches();
          own_tables += t.matches();
          if (t.present && !t.matches() && first_wrong_table.empty())
            first_wrong_table = "engine " + std::to_string(i) + " layer " +
                                std::to_string(l) + ": " + std::to_string(t.mismatches) +
                                " of " + std::to_string(t.entries) +
                                " entries are not its own experts (" + t.first_mismatch + ")";
          const LayerCheck k = check_layer_output(e.layer(l), e.output(l), m, input_seed, kAllTokens);
          if (!k.passed) {
            ++wrong_outputs;
            if (first_wrong_output.empty())
              first_wrong_output = "engine " + std::to_string(i) + " layer " +
                                   std::to_string(l) + ": " + k.detail;
          }
        }
        record["weights_host_address"] = hex(host);
        record["weights_address_reused"] = i > 0 && host == first_host;
        record["expert_buffers"] = mine.size();
        record["earlier_expert_buffers_reused"] = reused_here;
        record["earlier_expert_buffers_not_poisoned"] = unpoisoned_here;
        record["resident_tables_own"] = own_tables;
        record["first_expert_buffer"] = mine.empty() ? "" : hex(mine.front());
        previous_experts.insert(previous_experts.end(), mine.begin(), mine.end());
      }  // the engine is destroyed here: its experts are poisoned and held back
      engines.push_back(std::move(record));
    }
    c.checks.push_back({"resident_tables_point_at_own_experts",
                        tables_read == layers_run && tables_own == tables_read,
                        std::to_string(tables_own) + " of " + std::to_string(layers_run) +
                            " layers' resident tables hold their own expert pointers" +
                            (first_wrong_table.empty() ? "" : "; first wrong: " + first_wrong_table)});
    c.checks.push_back({"outputs_match_own_seed", wrong_outputs == 0,
                        std::to_string(layers_run - wrong_outputs) + " of " +
                            std::to_string(layers_run) +
                            " layer outputs match their own seed's reference (every token)" +
                            (first_wrong_output.empty() ? "" : "; first wrong: " + first_wrong_output)});
    c.evidence["allocator"] = state.allocator().mode() == DeviceAllocator::Mode::caching ? "caching" : "plain";
    c.evidence["engines"] = engines;
    c.evidence["later_engines"] = later_engines;
    c.evidence["earlier_expert_buffers_reused"] = expert_reuses;
    c.evidence["freed_expert_buffers_checked"] = freed_experts_total;
    c.evidence["blocks_poisoned"] = memory.stats().blocks_poisoned - poisoned_before;
    c.prove("weights_address_reused", later_engines > 0 && key_reused == later_engines,
            later_engines == 0 ? "only one engine ran: nothing could reuse its address"
                               : std::to_string(later_engines - key_reused) + " of " +
                                     std::to_string(later_engines) +
                                     " later engines got other weights addresses");
    c.prove("expert_buffers_elsewhere", later_engines > 0 && expert_reuses == 0,
            std::to_string(expert_reuses) + " expert buffers of earlier engines were handed "
            "to later ones: a stale table could read right values by accident");
    c.prove("freed_experts_poisoned",
            later_engines > 0 && freed_experts_total > 0 && unpoisoned == 0,
            std::to_string(unpoisoned) + " of " + std::to_string(freed_experts_total) +
                " freed expert buffers no longer held poison when a later engine ran");
    c.prove("fast_path_tables_read_back", layers_run > 0 && tables_read == layers_run,
            std::to_string(layers_run - tables_read) + " of " + std::to_string(layers_run) +
                " layers handed the kernels no resident table");
    c.conclude("weights address reused, expert buffers elsewhere and the freed ones "
               "poisoned; every layer's resident table held its own experts and every "
               "output matched its own seed");
    state.add_case(std::move(c));
  }
}

}  // namespace moe
