#pragma once
// How an adapter built on moebench's engine answers the ABI: a status with its one-line message,
// and nothing raised across the C boundary (every exception becomes a status).
#include <new>

#include "adapters/abi_message.hpp"
#include "common/cuda_check.hpp"
#include "common/errors.hpp"
#include "moebench/engine_abi.h"

namespace moe::adapter {

using moebench_adapters::fail;

// Runs `body` (which returns a status), turning what it raises into a status and a message.
template <class Body>
moebench_status guarded(moebench_error* error, Body&& body) {
  try {
    return body();
  } catch (const CudaError& e) {
    return fail(error, MOEBENCH_ERROR_CUDA, "%s", e.what());
  } catch (const EnvironmentError& e) {  // the allocator's: the device is full
    return fail(error, MOEBENCH_ERROR_OUT_OF_MEMORY, "%s", e.what());
  } catch (const std::bad_alloc&) {
    return fail(error, MOEBENCH_ERROR_OUT_OF_MEMORY, "host memory ran out");
  } catch (const std::exception& e) {
    return fail(error, MOEBENCH_ERROR_INTERNAL, "%s", e.what());
  }
}

}  // namespace moe::adapter
