// Probe `two-engine` (bug 1 of docs/bugs.md, stale resident pointers after engine teardown):
// builds, runs and destroys N engines in sequence in one process, each with its own seed, and
// forces the address reuse the bug needs: every engine's weights objects are constructed in the
// same host storage, and the run's caching allocator hands the new device buffers the freed
// addresses. PASS only when reuse happened, the resident fast path ran and every output matched its
// own seed's reference; INCONCLUSIVE when reuse or the fast path did not happen; FAIL otherwise.
#include <cstdio>

#include "engine/engine.hpp"
#include "probes/layer_check.hpp"
#include "probes/moe_defaults.hpp"

namespace moe {

namespace {
constexpr int kLayers = 2;

std::string hex(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", p);
  return buf;
}
}  // namespace

void run_two_engine_probe(ProbeState& state) {
  for (const Shape& shape : shapes_or_default(state, {"tiny"})) {
    for (kernels::WeightFormat format : formats_or_bf16(state)) {
      for (int m : ms_or_default(state, {4})) {
        report::CaseResult c = moe_case(state, "sequence", shape, format, m);
        c.parameters["engines"] = state.options().engines;
        WeightsArena arena(kLayers);
        const void* first_host = nullptr;
        bool host_reused_always = true;
        bool device_reused_always = true;
        bool fast_path_always = true;
        nlohmann::json engines = nlohmann::json::array();
        for (int i = 0; i < state.options().engines; ++i) {
          EngineConfig config = engine_config(state, shape, format, 20, kLayers);
          config.seed = derive_seed(state.options().seed, 20, static_cast<std::uint64_t>(i));
          const std::uint64_t input_seed = derive_seed(state.options().seed, 21, i);
          const std::size_t reused_before = state.allocator().stats().addresses_reused;
          Engine e(config, state.allocator(), state.device(), &arena);
          e.set_input(m, input_seed);
          e.forward();
          std::size_t uses = 0;
          for (int l = 0; l < e.layers(); ++l) uses += e.layer(l).weights().resident().uses();
          const void* host = &e.layer(0).weights();
          if (i == 0) first_host = host;
          const std::size_t device_reused = state.allocator().stats().addresses_reused - reused_before;
          const bool host_reused = i > 0 && host == first_host;
          if (i > 0) {
            host_reused_always = host_reused_always && host_reused;
            device_reused_always = device_reused_always && device_reused > 0;
          }
          fast_path_always = fast_path_always && uses >= static_cast<std::size_t>(e.layers());
          for (int l = 0; l < e.layers(); ++l) {
            const LayerCheck k = check_layer_output(e.layer(l), e.output(l), m, input_seed);
            c.checks.push_back(k.as_check("engine" + std::to_string(i) + "_layer" +
                                          std::to_string(l) + "_matches_own_seed"));
          }
          engines.push_back({{"engine", i},
                             {"seed", config.seed},
                             {"weights_host_address", hex(host)},
                             {"host_address_reused", host_reused},
                             {"device_addresses_reused", device_reused},
                             {"fast_path_uses", uses}});
        }
        c.evidence = {{"engines", engines},
                      {"host_address_reused", host_reused_always},
                      {"device_addresses_reused", device_reused_always},
                      {"fast_path_ran", fast_path_always}};
        c.conclude_from_checks();
        if (c.verdict == report::Verdict::fail) {
          c.reason = "an engine produced the wrong output after address reuse: " + c.reason;
        } else if (!host_reused_always || !device_reused_always || !fast_path_always) {
          c.verdict = report::Verdict::inconclusive;
          c.reason = !fast_path_always ? "the resident fast path did not run in every engine"
                     : !host_reused_always ? "host addresses were not reused"
                                           : "device addresses were not reused";
        } else {
          c.reason = "addresses reused, fast path ran, every output matched its own seed";
        }
        state.add_case(std::move(c));
      }
    }
  }
}

}  // namespace moe
