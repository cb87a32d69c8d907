// moebench's own engine behind the engine ABI (include/moebench/engine_abi.h): the reference
// adapter, and the one docs/engine-abi.md walks through. It runs moebench's forward kernels over
// the weights moebench hands it (abi_engine.hpp). Each layer's resident table (the device arrays
// of per-expert pointers the kernels read) is a member of the engine that built it, so it dies
// with it and a later engine over other weights builds its own (docs/bugs.md, bug 1).
#include <memory>
#include <vector>

#include "adapters/moebench_engine/abi_engine.hpp"

struct moebench_engine {
  moe::adapter::AbiEngine engine;
  std::vector<moe::adapter::PointerTables> tables;  // one a layer, this engine's own
};

namespace {

using moe::adapter::fail;
using moe::adapter::guarded;

moebench_status check_layer(const moebench_layer_desc* layer, moebench_error* error) {
  moe::kernels::MoeDims dims;
  if (!layer) return fail(error, MOEBENCH_ERROR_INVALID_ARGUMENT, "no layer description");
  return moe::adapter::read_layer(*layer, dims, error) ? MOEBENCH_OK : MOEBENCH_ERROR_UNSUPPORTED;
}

moebench_status create(const moebench_engine_desc* desc, moebench_engine** out, moebench_error* error) {
  return guarded(error, [&]() -> moebench_status {
    if (!desc || !out) return fail(error, MOEBENCH_ERROR_INVALID_ARGUMENT, "no description or no result");
    auto e = std::make_unique<moebench_engine>();
    if (const moebench_status s = e->engine.read(*desc, error); s != MOEBENCH_OK) return s;
    for (auto& layer : e->engine.layers()) {
      e->tables.push_back(moe::adapter::upload_pointer_tables(*layer.weights, e->engine.allocator()));
      layer.experts = e->tables.back().table;
      layer.weights = nullptr;  // the descriptor is moebench's, valid during create only
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

moebench_status read_route_counts(moebench_engine* e, moebench_route_counts* counts, moebench_stream stream,
                                  moebench_error* error) {
  return guarded(error, [&]() -> moebench_status {
    if (!e || !counts) return fail(error, MOEBENCH_ERROR_INVALID_ARGUMENT, "no engine or no counts");
    return e->engine.route_counts().read(*counts, stream, error);
  });
}

moebench_status reset_route_counts(moebench_engine* e, moebench_stream stream, moebench_error* error) {
  return guarded(error, [&]() -> moebench_status {
    if (!e) return fail(error, MOEBENCH_ERROR_INVALID_ARGUMENT, "no engine");
    return e->engine.route_counts().reset(stream, error);
  });
}

moebench_status destroy(moebench_engine* e, moebench_error* error) {
  if (!e) return MOEBENCH_OK;
  // Forwards still running read the tables and the scratch: wait, then free (even on an error).
  const moebench_status waited = e->engine.wait_for_forwards(error);
  delete e;
  return waited;
}

const moebench_adapter kAdapter = {
    sizeof(moebench_adapter),
    MOEBENCH_ENGINE_ABI_MAJOR,
    MOEBENCH_ENGINE_ABI_MINOR,
    "moebench",
    MOEBENCH_VERSION,
    MOEBENCH_CAP_CAPTURE_SAFE_FORWARD | MOEBENCH_CAP_ROUTE_COUNTS | MOEBENCH_CAP_DEVICE_ALLOCATOR,
    (1u << MOEBENCH_WEIGHTS_BF16) | (1u << MOEBENCH_WEIGHTS_INT4),
    create,
    forward,
    destroy,
    check_layer,
    read_route_counts,  // moebench's route telemetry, one record a layer
    reset_route_counts,
    nullptr,  // set_residency: nor is its expert residency
};

}  // namespace

extern "C" MOEBENCH_ENGINE_ABI_EXPORT moebench_status moebench_engine_abi(uint32_t abi_major, uint32_t,
                                                                          const moebench_adapter** adapter,
                                                                          moebench_error* error) {
  if (abi_major != MOEBENCH_ENGINE_ABI_MAJOR)
    return fail(error, MOEBENCH_ERROR_UNSUPPORTED, "built for engine ABI major %d, asked for %u",
                MOEBENCH_ENGINE_ABI_MAJOR, abi_major);
  *adapter = &kAdapter;
  return MOEBENCH_OK;
}
