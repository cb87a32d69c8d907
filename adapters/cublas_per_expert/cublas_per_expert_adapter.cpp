// An engine adapter of another design than moebench's (include/moebench/engine_abi.h): one
// cuBLAS GEMM per expert, batched, with routing on the device (per_expert_engine.hpp). It
// declares what it has: a capture-safe forward and route counts; bf16 weights only. Its device
// memory is its own (cudaMalloc at create), so the probes that must see an engine's allocator
// are refused for it.
#include <exception>
#include <memory>
#include <new>
#include <stdexcept>

#include "adapters/abi_message.hpp"
#include "adapters/cublas_per_expert/layer_support.hpp"
#include "adapters/cublas_per_expert/per_expert_engine.hpp"

struct moebench_engine {
  cublas_adapter::PerExpertEngine engine;
};

namespace {

using moebench_adapters::fail;

// Runs `body`, turning what it raises into a status and one line: nothing crosses the C boundary.
template <class Body>
moebench_status guarded(moebench_error* error, Body&& body) {
  try {
    return body();
  } catch (const cublas_adapter::CallFailed& e) {
    return fail(error, MOEBENCH_ERROR_CUDA, "%s", e.what());
  } catch (const std::invalid_argument& e) {
    return fail(error, MOEBENCH_ERROR_INVALID_ARGUMENT, "%s", e.what());
  } catch (const std::bad_alloc&) {
    return fail(error, MOEBENCH_ERROR_OUT_OF_MEMORY, "host memory ran out");
  } catch (const std::exception& e) {
    return fail(error, MOEBENCH_ERROR_INTERNAL, "%s", e.what());
  }
}

moebench_status check_layer(const moebench_layer_desc* layer, moebench_error* error) {
  if (!layer) return fail(error, MOEBENCH_ERROR_INVALID_ARGUMENT, "no layer description");
  const std::string why = cublas_adapter::layer_not_supported(*layer);
  return why.empty() ? MOEBENCH_OK : fail(error, MOEBENCH_ERROR_UNSUPPORTED, "%s", why.c_str());
}

moebench_status create(const moebench_engine_desc* desc, moebench_engine** out, moebench_error* error) {
  return guarded(error, [&]() -> moebench_status {
    if (!desc || !out) return fail(error, MOEBENCH_ERROR_INVALID_ARGUMENT, "no description or no result");
    if (desc->layer)
      if (const moebench_status s = check_layer(desc->layer, error); s != MOEBENCH_OK) return s;
    *out = new moebench_engine{cublas_adapter::PerExpertEngine(*desc)};
    return MOEBENCH_OK;
  });
}

moebench_status forward(moebench_engine* e, const moebench_forward_args* args, moebench_error* error) {
  return guarded(error, [&]() -> moebench_status {
    if (!e || !args) return fail(error, MOEBENCH_ERROR_INVALID_ARGUMENT, "no engine or no arguments");
    e->engine.forward(*args);
    return MOEBENCH_OK;
  });
}

moebench_status destroy(moebench_engine* e, moebench_error* error) {
  if (!e) return MOEBENCH_OK;
  // Forwards still running read the engine's buffers: wait, then free (even on an error).
  const moebench_status waited = guarded(error, [&]() -> moebench_status {
    e->engine.wait_for_forwards();
    return MOEBENCH_OK;
  });
  delete e;
  return waited;
}

moebench_status read_route_counts(moebench_engine* e, moebench_route_counts* counts, moebench_stream stream,
                                  moebench_error* error) {
  return guarded(error, [&]() -> moebench_status {
    if (!e || !counts) return fail(error, MOEBENCH_ERROR_INVALID_ARGUMENT, "no engine or no counts");
    e->engine.read_route_counts(*counts, stream);
    return MOEBENCH_OK;
  });
}

moebench_status reset_route_counts(moebench_engine* e, moebench_stream stream, moebench_error* error) {
  return guarded(error, [&]() -> moebench_status {
    if (!e) return fail(error, MOEBENCH_ERROR_INVALID_ARGUMENT, "no engine");
    if (!e->engine.reset_route_counts(stream))
      return fail(error, MOEBENCH_ERROR_INVALID_ARGUMENT,
                  "reset_route_counts refused: the stream is being captured (a reset in a graph would run on "
                  "every replay)");
    return MOEBENCH_OK;
  });
}

const moebench_adapter kAdapter = {
    sizeof(moebench_adapter),
    MOEBENCH_ENGINE_ABI_MAJOR,
    MOEBENCH_ENGINE_ABI_MINOR,
    "cublas-per-expert",
    MOEBENCH_VERSION,
    MOEBENCH_CAP_CAPTURE_SAFE_FORWARD | MOEBENCH_CAP_ROUTE_COUNTS,
    1u << MOEBENCH_WEIGHTS_BF16,
    create,
    forward,
    destroy,
    check_layer,
    read_route_counts,
    reset_route_counts,
    nullptr,  // set_residency: every expert stays in device memory
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
