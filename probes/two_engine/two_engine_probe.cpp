// Probe `two-engine` (docs/bugs.md, bug 1, stale resident pointers after engine teardown): builds, runs
// and destroys N engines in sequence in one process, each with its own seed, twice over: once
// with freed device memory held back, once with it handed out again. A stale cache corrupts
// only under the condition its key is reused in, so each phase forces one:
//  - quarantine phase (a cache keyed by the weights' host address): every engine's weights
//    objects are constructed in the same host storage (a WeightsArena), so engine i's weights
//    have engine 0's addresses; the engines allocate from the probe's own allocator (in the
//    run's mode, caching or plain) with poison-on-free, so each engine's freed expert buffers
//    are filled with poison and held back, and the next engine's experts lie elsewhere. A stale
//    table then reads poison (bf16 NaN) in every engine after the first, whatever the
//    allocator's layout. No device address is seen twice here, so a cache keyed by one is
//    never hit: that is the second phase's job.
//  - reuse phase (a cache keyed by a device address): the engines allocate from a caching
//    allocator that hands freed blocks out again (last in, first out), so later engines' routers
//    and experts land at earlier engines' addresses, in other roles; a table looked up by such
//    an address names blocks that now hold other tensors.
// The evidence is measured, not assumed from the allocator's policy: addresses compared, the
// freed experts read back from the device as poison. The fast path is proven per layer by
// reading back the resident table the kernels were handed and comparing it with the layer's own
// expert pointers. PASS needs every piece of evidence and every table and output right;
// INCONCLUSIVE when a piece of evidence could not be shown; FAIL on a wrong table or output.
#include <algorithm>
#include <optional>

#include "common/cuda_check.hpp"

#include "engine/engine.hpp"
#include "engine/fault_injection.hpp"
#include "probes/evidence.hpp"
#include "probes/layer_check.hpp"
#include "probes/moe_defaults.hpp"
#include "probes/two_engine/address_reuse.hpp"

namespace moe {

namespace {
constexpr int kLayers = 2;
constexpr int kAllTokens = 1 << 30;

// A mutation that keeps a process-lifetime cache of tables: its stale tables outlive the case
// (the cache is never evicted, and a later case's engines may land at the same keys), so the
// blocks they name must stay mapped for the process, as the historic engines kept freed memory
// mapped: then the phases' allocators are never destroyed.
bool cache_outlives_case() {
  return mutation_active(Mutation::static_resident_cache) || mutation_active(Mutation::device_keyed_cache);
}

// The quarantine phase's memory: the run's allocator mode with poison-on-free.
DeviceAllocator& quarantine_memory(DeviceAllocator::Mode mode, std::optional<DeviceAllocator>& local) {
  if (cache_outlives_case()) {
    static auto* caching = new DeviceAllocator(DeviceAllocator::Mode::caching, DeviceAllocator::Freed::poison);
    static auto* plain = new DeviceAllocator(DeviceAllocator::Mode::plain, DeviceAllocator::Freed::poison);
    return mode == DeviceAllocator::Mode::caching ? *caching : *plain;
  }
  local.emplace(mode, DeviceAllocator::Freed::poison);
  return *local;
}

// The reuse phase's memory: caching, freed blocks handed out again (whatever the run's mode:
// reuse is what this phase forces, and the cache's size classes make it certain).
DeviceAllocator& reuse_memory(std::optional<DeviceAllocator>& local) {
  if (cache_outlives_case()) {
    static auto* caching = new DeviceAllocator(DeviceAllocator::Mode::caching, DeviceAllocator::Freed::reuse);
    return *caching;
  }
  local.emplace(DeviceAllocator::Mode::caching, DeviceAllocator::Freed::reuse);
  return *local;
}

struct Block {
  const void* ptr = nullptr;
  std::size_t bytes = 0;
};

// Every expert buffer of an engine (weights and scales), by address.
std::vector<Block> expert_blocks(Engine& e) {
  std::vector<Block> out;
  for (int l = 0; l < e.layers(); ++l)
    for (const auto& b : e.layer(l).weights().experts())
      for (const DeviceBuffer* d : {&b.gate_up, &b.gate_up_scales, &b.down, &b.down_scales})
        if (d->data()) out.push_back({d->data(), d->bytes()});
  return out;
}

EngineAddresses addresses_of(Engine& e, const std::vector<Block>& experts) {
  EngineAddresses a;
  for (int l = 0; l < e.layers(); ++l) a.routers.push_back(e.layer(l).weights().router());
  for (const Block& b : experts) a.experts.push_back(b.ptr);
  return a;
}

// Whether a freed block, read back from the device, holds the poison pattern in every byte (up
// to 1 MiB of it: enough to show the fill ran, bounded for a model shape). The quarantine keeps
// the block reserved, so reading it is legal.
bool reads_as_poison(const Block& b) {
  std::vector<unsigned char> bytes(std::min<std::size_t>(b.bytes, std::size_t{1} << 20));
  MOE_CUDA_CHECK(cudaMemcpy(bytes.data(), b.ptr, bytes.size(), cudaMemcpyDeviceToHost));
  return std::all_of(bytes.begin(), bytes.end(), [](unsigned char x) { return x == DeviceAllocator::kPoisonByte; });
}

// Every layer of one engine: its resident table read back and its output against its own
// seed's reference (every token).
struct LayerTally {
  int layers_run = 0;
  int tables_read = 0;
  int tables_own = 0;
  int wrong_outputs = 0;
  std::string first_wrong_table;
  std::string first_wrong_output;
};
int check_engine_layers(Engine& e, int index, int m, std::uint64_t input_seed, LayerTally& t) {
  int own_tables = 0;
  for (int l = 0; l < e.layers(); ++l) {
    ++t.layers_run;
    const TableReadback r = read_back_resident_table(e.layer(l));
    t.tables_read += r.present && r.entries > 0;
    t.tables_own += r.matches();
    own_tables += r.matches();
    if (r.present && !r.matches() && t.first_wrong_table.empty())
      t.first_wrong_table = "engine " + std::to_string(index) + " layer " + std::to_string(l) + ": " +
                            std::to_string(r.mismatches) + " of " + std::to_string(r.entries) +
                            " entries are not its own experts (" + r.first_mismatch + ")";
    const LayerCheck k = check_layer_output(e.layer(l), e.output(l), m, input_seed, kAllTokens);
    if (!k.passed) {
      ++t.wrong_outputs;
      if (t.first_wrong_output.empty())
        t.first_wrong_output = "engine " + std::to_string(index) + " layer " + std::to_string(l) + ": " + k.detail;
    }
  }
  return own_tables;
}

void push_tally_checks(report::CaseResult& c, const LayerTally& t, const std::string& tables_check,
                       const std::string& outputs_check) {
  c.checks.push_back({tables_check,
                      t.tables_read == t.layers_run && t.tables_own == t.tables_read,
                      std::to_string(t.tables_own) + " of " + std::to_string(t.layers_run) +
                          " layers' resident tables hold their own expert pointers" +
                          (t.first_wrong_table.empty() ? "" : "; first wrong: " + t.first_wrong_table)});
  c.checks.push_back({outputs_check, t.wrong_outputs == 0,
                      std::to_string(t.layers_run - t.wrong_outputs) + " of " +
                          std::to_string(t.layers_run) +
                          " layer outputs match their own seed's reference (every token)" +
                          (t.first_wrong_output.empty() ? "" : "; first wrong: " + t.first_wrong_output)});
}

// The reuse phase: N engines from a caching allocator that hands freed blocks out again.
void run_reuse_phase(ProbeState& state, report::CaseResult& c, const Shape& shape,
                     kernels::WeightFormat format, int m) {
  std::optional<DeviceAllocator> local;
  DeviceAllocator& memory = reuse_memory(local);
  LayerTally tally;
  std::vector<EngineAddresses> addresses;
  nlohmann::json engines = nlohmann::json::array();
  for (int i = 0; i < state.options().engines; ++i) {
    EngineConfig config = engine_config(state, shape, format, 22, kLayers);
    config.seed = derive_seed(state.options().seed, 22, static_cast<std::uint64_t>(i));
    const std::uint64_t input_seed = derive_seed(state.options().seed, 23, i);
    Engine e(config, memory, state.device());
    e.set_input(m, input_seed);
    e.forward();
    e.stream().drain();
    const std::vector<Block> experts = expert_blocks(e);
    addresses.push_back(addresses_of(e, experts));
    const int own = check_engine_layers(e, i, m, input_seed, tally);
    nlohmann::json routers = nlohmann::json::array();
    for (const void* r : addresses.back().routers) routers.push_back(hex(r));
    engines.push_back({{"engine", i}, {"seed", config.seed}, {"router_addresses", routers},
                       {"resident_tables_own", own}});
  }  // each engine destroyed at the end of its iteration: its blocks go back to the cache
  const AddressReuse reuse = tally_address_reuse(addresses);
  push_tally_checks(c, tally, "reuse_phase_tables_point_at_own_experts", "reuse_phase_outputs_match_own_seed");
  c.evidence["reuse_phase"] = {{"engines", engines},
                               {"later_routers", reuse.later_routers},
                               {"routers_at_earlier_router_address", reuse.routers_reused},
                               {"expert_buffers_at_earlier_address", reuse.experts_reused},
                               {"addresses_reused", memory.stats().addresses_reused}};
  c.prove("router_address_reused", reuse.later_engines > 0 && reuse.routers_reused > 0,
          "no later engine's router got an earlier engine's router address: a cache keyed by it "
          "was never looked up with a stale key");
  c.prove("expert_buffers_reused", reuse.later_engines > 0 && reuse.experts_reused > 0,
          "no earlier engine's expert buffer was handed to a later one");
  c.prove("reuse_phase_tables_read_back", tally.layers_run > 0 && tally.tables_read == tally.layers_run,
          std::to_string(tally.layers_run - tally.tables_read) + " of " + std::to_string(tally.layers_run) +
              " layers of the reuse phase handed the kernels no resident table");
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
    // Quarantine phase: poison-on-free in the run's allocator mode (see the header comment).
    std::optional<DeviceAllocator> local;
    DeviceAllocator& memory = quarantine_memory(state.allocator().mode(), local);
    const std::size_t poisoned_before = memory.stats().blocks_poisoned;
    WeightsArena arena(kLayers);
    const void* first_host = nullptr;
    int later_engines = 0, key_reused = 0, unpoisoned = 0;
    std::size_t freed_experts_total = 0;
    std::vector<Block> previous_experts;  // all engines before this one
    std::vector<EngineAddresses> addresses;
    LayerTally tally;
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
        const std::vector<Block> mine = expert_blocks(e);
        addresses.push_back(addresses_of(e, mine));
        // The earlier engines' freed experts, read back from the device: each must still hold
        // poison (none handed out again and written).
        int unpoisoned_here = 0;
        for (const Block& b : previous_experts) unpoisoned_here += !reads_as_poison(b);
        if (i > 0) {
          ++later_engines;
          key_reused += host == first_host;
          unpoisoned += unpoisoned_here;
          freed_experts_total += previous_experts.size();
        }
        EngineAddresses earlier;
        for (const Block& b : previous_experts) earlier.experts.push_back(b.ptr);
        const std::size_t reused_here = tally_address_reuse({earlier, addresses.back()}).experts_reused;
        const int own_tables = check_engine_layers(e, i, m, input_seed, tally);
        record["weights_host_address"] = hex(host);
        record["weights_address_reused"] = i > 0 && host == first_host;
        record["expert_buffers"] = mine.size();
        record["earlier_expert_buffers_reused"] = reused_here;
        record["earlier_expert_buffers_not_poisoned"] = unpoisoned_here;
        record["resident_tables_own"] = own_tables;
        record["first_expert_buffer"] = mine.empty() ? "" : hex(mine.front().ptr);
        previous_experts.insert(previous_experts.end(), mine.begin(), mine.end());
      }  // the engine is destroyed here: its experts are poisoned and held back
      engines.push_back(std::move(record));
    }
    const AddressReuse quarantine = tally_address_reuse(addresses);
    push_tally_checks(c, tally, "resident_tables_point_at_own_experts", "outputs_match_own_seed");
    c.evidence["allocator"] = state.allocator().mode() == DeviceAllocator::Mode::caching ? "caching" : "plain";
    c.evidence["engines"] = engines;
    c.evidence["later_engines"] = later_engines;
    c.evidence["earlier_expert_buffers_reused"] = quarantine.experts_reused;
    c.evidence["freed_expert_buffers_checked"] = freed_experts_total;
    c.evidence["blocks_poisoned"] = memory.stats().blocks_poisoned - poisoned_before;
    c.prove("weights_address_reused", later_engines > 0 && key_reused == later_engines,
            later_engines == 0 ? "only one engine ran: nothing could reuse its address"
                               : std::to_string(later_engines - key_reused) + " of " +
                                     std::to_string(later_engines) +
                                     " later engines got other weights addresses");
    c.prove("expert_buffers_elsewhere", later_engines > 0 && quarantine.experts_reused == 0,
            std::to_string(quarantine.experts_reused) + " expert buffers of earlier engines were "
            "handed to later ones: a stale table could read right values by accident");
    c.prove("freed_experts_poisoned",
            later_engines > 0 && freed_experts_total > 0 && unpoisoned == 0,
            std::to_string(unpoisoned) + " of " + std::to_string(freed_experts_total) +
                " freed expert buffers, read back from the device, no longer held poison when a "
                "later engine ran");
    c.prove("fast_path_tables_read_back", tally.layers_run > 0 && tally.tables_read == tally.layers_run,
            std::to_string(tally.layers_run - tally.tables_read) + " of " + std::to_string(tally.layers_run) +
                " layers handed the kernels no resident table");

    // Reuse phase: the same sequence with freed device memory handed out again.
    run_reuse_phase(state, c, shape, format, m);
    c.conclude("quarantine phase: weights address reused, expert buffers elsewhere and the "
               "freed ones read back as poison; reuse phase: routers and experts at earlier "
               "engines' addresses; in both every layer's resident table held its own experts "
               "and every output matched its own seed");
    state.add_case(std::move(c));
  }
}

}  // namespace moe
