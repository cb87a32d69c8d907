// The streaming kernels behind the read ceiling, against their CPU references.
#include <doctest/doctest.h>

#include <random>

#include "common/cuda_check.hpp"
#include "engine/device_allocator.hpp"
#include "engine/stream.hpp"
#include "kernels/bandwidth/bandwidth_kernels.hpp"
#include "kernels/bandwidth/ring_stream.hpp"
#include "support/gpu_test.hpp"

using namespace moe;

// read_stream (evict-first loads, the read ceiling) and read_through_l2 (the cold-sample L2
// flush) differ only in their cache policy; both must read every word.
TEST_CASE("read_stream and read_through_l2 XOR every word exactly as the CPU does, for odd sizes too") {
  const Device& dev = test::test_device();
  DeviceAllocator alloc;
  Stream stream;
  std::mt19937 rng(std::random_device{}());
  const auto launch = kernels::StreamLaunch::for_device(dev.sm_count);
  // Sizes below, at and beyond one grid-stride sweep, and not multiples of the unroll.
  for (std::size_t vecs : {std::size_t{1}, std::size_t{7}, std::size_t{4096 * 33 + 5},
                           static_cast<std::size_t>(launch.blocks) * launch.threads * 9 + 3}) {
    const std::size_t bytes = vecs * 16;
    const std::uint32_t seed = rng();
    CAPTURE(bytes);
    CAPTURE(seed);
    DeviceBuffer src = alloc.allocate(bytes);
    DeviceBuffer out = alloc.allocate(sizeof(std::uint32_t));
    kernels::fill_pattern(src.as<std::uint32_t>(), bytes / 4, seed, stream.handle());
    for (auto* read : {&kernels::read_stream, &kernels::read_through_l2}) {
      CAPTURE(read == &kernels::read_stream ? "read_stream" : "read_through_l2");
      MOE_CUDA_CHECK(cudaMemsetAsync(out.data(), 0xab, sizeof(std::uint32_t), stream.handle()));
      read(src.data(), bytes, out.as<std::uint32_t>(), launch, stream.handle());
      stream.drain();
      std::uint32_t got = 0;
      MOE_CUDA_CHECK(cudaMemcpy(&got, out.data(), 4, cudaMemcpyDeviceToHost));
      CHECK(got == kernels::pattern_xor_reference(bytes / 4, seed));
    }
  }
}

TEST_CASE("copy_stream copies every byte into a poisoned destination") {
  const Device& dev = test::test_device();
  DeviceAllocator alloc;
  Stream stream;
  const auto launch = kernels::StreamLaunch::for_device(dev.sm_count);
  const std::size_t bytes = (static_cast<std::size_t>(launch.blocks) * launch.threads * 5 + 11) * 16;
  DeviceBuffer src = alloc.allocate(bytes), dst = alloc.allocate(bytes);
  DeviceBuffer bad = alloc.allocate(sizeof(unsigned long long));
  kernels::fill_pattern(src.as<std::uint32_t>(), bytes / 4, 1234, stream.handle());
  MOE_CUDA_CHECK(cudaMemsetAsync(dst.data(), 0xff, bytes, stream.handle()));
  kernels::copy_stream(dst.data(), src.data(), bytes, launch, stream.handle());
  kernels::count_mismatches(dst.as<std::uint32_t>(), src.as<std::uint32_t>(), bytes / 4,
                            bad.as<unsigned long long>(), stream.handle());
  stream.drain();
  unsigned long long mismatches = 1;
  MOE_CUDA_CHECK(cudaMemcpy(&mismatches, bad.data(), 8, cudaMemcpyDeviceToHost));
  CHECK(mismatches == 0);
  // And the mismatch counter itself sees a difference when there is one.
  MOE_CUDA_CHECK(cudaMemsetAsync(dst.as<char>() + 4096, 0, 4, stream.handle()));
  kernels::count_mismatches(dst.as<std::uint32_t>(), src.as<std::uint32_t>(), bytes / 4,
                            bad.as<unsigned long long>(), stream.handle());
  stream.drain();
  MOE_CUDA_CHECK(cudaMemcpy(&mismatches, bad.data(), 8, cudaMemcpyDeviceToHost));
  CHECK(mismatches == 1);
}

TEST_CASE("misaligned streaming requests are refused, not run") {
  DeviceAllocator alloc;
  Stream stream;
  DeviceBuffer src = alloc.allocate(1024), out = alloc.allocate(4);
  CHECK_THROWS_AS(kernels::read_stream(src.as<char>() + 4, 512, out.as<std::uint32_t>(),
                                       {1, 32}, stream.handle()),
                  moe::Error);
  CHECK_THROWS_AS(kernels::read_stream(src.data(), 100, out.as<std::uint32_t>(), {1, 32},
                                       stream.handle()),
                  moe::Error);
}

// The pipeline of probe stream reads every word once whatever the share of a block (fewer
// stages than blocks, a partial last stage, many rounds of the ring), with and without math.
TEST_CASE("ring_stream reads every word exactly once for every math and ring shape") {
  test::test_device();
  if (!kernels::ring_stream_supported()) {
    MESSAGE("ring_stream needs sm_90; skipped");
    return;
  }
  DeviceAllocator alloc;
  Stream stream;
  std::mt19937 rng(std::random_device{}());
  DeviceBuffer out = alloc.allocate(sizeof(std::uint32_t));
  DeviceBuffer sink = alloc.allocate(sizeof(float) * kernels::ring_stream_blocks());
  for (std::size_t bytes : {std::size_t{16}, std::size_t{4096 * 3 + 48}, std::size_t{20'000'000}})
    for (kernels::RingShape ring : {kernels::RingShape{8192, 3}, kernels::RingShape{4096, 2}, kernels::RingShape{1536, 3}})
      for (kernels::RingMath math : {kernels::RingMath::none, kernels::RingMath::bf16, kernels::RingMath::int4}) {
        const std::uint32_t seed = rng();
        CAPTURE(bytes);
        CAPTURE(ring.stage_bytes);
        CAPTURE(ring.slots);
        CAPTURE(kernels::to_string(math));
        CAPTURE(seed);
        DeviceBuffer src = alloc.allocate(bytes);
        kernels::fill_pattern(src.as<std::uint32_t>(), bytes / 4, seed, stream.handle());
        MOE_CUDA_CHECK(cudaMemsetAsync(out.data(), 0, sizeof(std::uint32_t), stream.handle()));  // XORed into
        kernels::ring_stream(src.data(), bytes, ring, math, out.as<std::uint32_t>(), sink.as<float>(), stream.handle());
        stream.drain();
        std::uint32_t got = 0;
        MOE_CUDA_CHECK(cudaMemcpy(&got, out.data(), 4, cudaMemcpyDeviceToHost));
        CHECK(got == kernels::pattern_xor_reference(bytes / 4, seed));
      }
  for (kernels::RingShape bad : {kernels::RingShape{1000, 3}, kernels::RingShape{16384, 3}, kernels::RingShape{8192, 4},
                                  kernels::RingShape{8192, 1}})
    CHECK_THROWS_AS(kernels::ring_stream(nullptr, 16, bad, kernels::RingMath::none, out.as<std::uint32_t>(),
                                         sink.as<float>(), stream.handle()),
                    moe::Error);
}
