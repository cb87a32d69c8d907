// An example adapter that restores the historic bug 1 (docs/bugs.md) on moebench's kernels: each
// layer's resident table is cached for the process, keyed by the address of its weights'
// descriptor and never evicted, as the engines that shipped the bug kept theirs. A later engine
// whose descriptor sits at an earlier one's address then runs on the earlier engine's freed
// experts. Users run it through `moebench repro fixtures/cases/stale-resident-pointers-adapter.json`
// (probe two-engine FAILs it; tests/gpu/test_engine_abi_probe.cpp too). An example of a bug, as
// the mutation static-resident-cache is: never an engine to measure.
#include <map>
#include <memory>

#include "adapters/moebench_engine/abi_engine.hpp"

struct moebench_engine {
  moe::adapter::AbiEngine engine;
};

namespace {

using moe::adapter::fail;
using moe::adapter::guarded;

// The historic cache: process-wide, keyed by the weights' address, never evicted.
struct StaleCache {
  moe::DeviceAllocator allocator;
  std::map<const moebench_layer_weights*, moe::adapter::PointerTables> tables;
};
StaleCache& stale_cache() {
  static auto* cache = new StaleCache;
  return *cache;
}

moebench_status create(const moebench_engine_desc* desc, moebench_engine** out, moebench_error* error) {
  return guarded(error, [&]() -> moebench_status {
    if (!desc || !out) return fail(error, MOEBENCH_ERROR_INVALID_ARGUMENT, "no description or no result");
    auto e = std::make_unique<moebench_engine>();
    if (const moebench_status s = e->engine.read(*desc, error); s != MOEBENCH_OK) return s;
    StaleCache& cache = stale_cache();
    for (auto& layer : e->engine.layers()) {
      auto it = cache.tables.find(layer.weights);
      if (it == cache.tables.end())
        it = cache.tables.emplace(layer.weights, moe::adapter::upload_pointer_tables(*layer.weights, cache.allocator))
                 .first;
      layer.experts = it->second.table;
    }
    *out = e.release();
    return MOEBENCH_OK;
  });
}

moebench_status forward(moebench_engine* e, const moebench_forward_args* args, moebench_error* error) {
  return guarded(error, [&]() -> moebench_status {
    if (!e || !args) return fail(error, MOEBENCH_ERROR_INVALID_ARGUMENT, "no engine or no arguments");
    return e->engine.forward(*args, error);
  });
}

moebench_status destroy(moebench_engine* e, moebench_error* error) {
  if (!e) return MOEBENCH_OK;
  const moebench_status waited = e->engine.wait_for_forwards(error);
  delete e;
  return waited;
}

const moebench_adapter kAdapter = {
    sizeof(moebench_adapter), MOEBENCH_ENGINE_ABI_MAJOR, MOEBENCH_ENGINE_ABI_MINOR, "stale-resident-cache", "1",
    0, 1u << MOEBENCH_WEIGHTS_BF16, create, forward, destroy, nullptr, nullptr, nullptr, nullptr};

}  // namespace

extern "C" MOEBENCH_ENGINE_ABI_EXPORT moebench_status moebench_engine_abi(uint32_t, uint32_t,
                                                                          const moebench_adapter** adapter,
                                                                          moebench_error*) {
  *adapter = &kAdapter;
  return MOEBENCH_OK;
}
