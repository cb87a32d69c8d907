// The host-side plan of probe capture-replay's steps: poison counted in an output, the M whose
// eager step regrows a graph's scratch, and the CUDA errors of a synchronising call inside a
// capture that count as a FAIL of no_sync_inside_capture (not an ERROR).
#include <doctest/doctest.h>

#include <filesystem>

#include "engine/device_allocator.hpp"
#include "engine/shape.hpp"
#include "kernels/moe/forward.hpp"
#include "probes/capture_replay/capture_invalidation.hpp"
#include "probes/capture_replay/capture_replay_plan.hpp"

namespace fs = std::filesystem;

TEST_CASE("capture-replay plan: poison is the allocator's byte in every bf16, and only it counts") {
  const std::uint16_t from_bytes = static_cast<std::uint16_t>(moe::DeviceAllocator::kPoisonByte) * 0x0101u;
  CHECK(moe::kPoisonBf16 == from_bytes);
  CHECK(moe::count_poison({}) == 0);
  CHECK(moe::count_poison({0x3f80, 0xffff, 0x7fff, 0xffff, 0x0000}) == 2);  // 0x7fff: another NaN
  CHECK(moe::count_poison(std::vector<std::uint16_t>(64, 0xffff)) == 64);
}

TEST_CASE("capture-replay plan: the regrowing M is the first doubling whose scratch exceeds the pool") {
  const auto linear = [](int m) { return static_cast<std::size_t>(m) * 1000; };
  CHECK(moe::regrow_tokens(4, 12'000, linear) == 16);  // 8 needs 8000, 16 needs 16000
  CHECK(moe::regrow_tokens(4, 7'999, linear) == 8);
  CHECK(moe::regrow_tokens(1, 0, linear) == 2);        // M itself is never the answer
  CHECK(moe::regrow_tokens(4, 100'000'000, linear) == 0);  // nothing up to the limit: no regrow
  CHECK(moe::regrow_tokens(40000, 1, linear) == 0);       // 80000 is over the limit
}

TEST_CASE("capture-replay plan: on the real scratch sizes the regrow moves every block to a larger class") {
  // The probe's own sequence, as the pool and the caching allocator do it: step 2 grows the
  // pool to half again over a step at 4M + 8; the regrowing step asks for more than that
  // block's size class, and the pool takes half again over it: a larger class, so the freed
  // block cannot come straight back.
  const auto library = moe::load_shape_library(fs::path(MOEBENCH_FIXTURES_DIR) / "shapes");
  for (const char* name : {"tiny", "deepseek-v2-lite", "mixtral-8x7b"}) {
    const moe::Shape shape = moe::resolve_shape(name, library);
    for (auto format : {moe::kernels::WeightFormat::bf16, moe::kernels::WeightFormat::int4}) {
      const auto dims = shape.dims(format);
      const auto bytes = [&](int m) { return moe::kernels::forward_scratch_bytes(dims, m); };
      for (int m : {1, 4, 8, 64}) {
        CAPTURE(name);
        CAPTURE(m);
        const std::size_t pool = bytes(4 * m + 8) + bytes(4 * m + 8) / 2;
        const std::size_t held = moe::DeviceAllocator::size_class(pool);
        const int big = moe::regrow_tokens(m, held, bytes);
        REQUIRE(big > 0);
        CHECK(bytes(big) > held);
        CHECK(bytes(big / 2) <= held);
        const std::size_t grown = bytes(big) + bytes(big) / 2;
        CHECK(moe::DeviceAllocator::size_class(grown) > held);
      }
    }
  }
}

TEST_CASE("capture-replay plan: a synchronising call's capture errors are the engine's FAIL, others are not") {
  for (cudaError_t e : {cudaErrorStreamCaptureUnsupported, cudaErrorStreamCaptureInvalidated,
                        cudaErrorStreamCaptureImplicit, cudaErrorStreamCaptureUnjoined,
                        cudaErrorStreamCaptureIsolation, cudaErrorCapturedEvent})
    CHECK_MESSAGE(moe::is_capture_invalidation(e), cudaGetErrorName(e));
  // A sticky fault or a full device stays an ERROR of the probe.
  for (cudaError_t e : {cudaSuccess, cudaErrorIllegalAddress, cudaErrorMemoryAllocation,
                        cudaErrorLaunchFailure, cudaErrorInvalidValue})
    CHECK_FALSE_MESSAGE(moe::is_capture_invalidation(e), cudaGetErrorName(e));
}
