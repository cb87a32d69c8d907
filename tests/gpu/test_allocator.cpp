#include <doctest/doctest.h>

#include <cuda_runtime_api.h>

#include <vector>

#include "engine/device_allocator.hpp"
#include "kernels/interference/interference_kernels.hpp"
#include "support/gpu_test.hpp"

using moe::DeviceAllocator;
using moe::DeviceBuffer;

TEST_CASE("size classes: powers of two to 2 MiB, then whole 2 MiB pages") {
  CHECK(DeviceAllocator::size_class(1) == 512);
  CHECK(DeviceAllocator::size_class(513) == 1024);
  CHECK(DeviceAllocator::size_class(1 << 20) == (1 << 20));
  CHECK(DeviceAllocator::size_class((2 << 20) + 1) == (4 << 20));
  CHECK(DeviceAllocator::size_class((6 << 20) - 7) == (6 << 20));
}

TEST_CASE("the caching allocator hands freed blocks out again, last in first out") {
  moe::test::test_device();
  DeviceAllocator alloc(DeviceAllocator::Mode::caching);
  void* a_ptr = nullptr;
  void* b_ptr = nullptr;
  {
    DeviceBuffer a = alloc.allocate(3000);
    DeviceBuffer b = alloc.allocate(3000);
    a_ptr = a.data();
    b_ptr = b.data();
    CHECK(alloc.stats().bytes_in_use == 6000);
    // b is freed after a (reverse declaration order), so it is handed out first.
  }
  CHECK(alloc.stats().bytes_in_use == 0);
  DeviceBuffer c = alloc.allocate(4000);  // same 4 KiB class
  CHECK(c.data() == a_ptr);
  DeviceBuffer d = alloc.allocate(2100);
  CHECK(d.data() == b_ptr);
  const auto s = alloc.stats();
  CHECK(s.addresses_reused == 2);
  CHECK(s.driver_allocations == 2);
  CHECK(s.allocations == 4);
  CHECK(s.peak_bytes_in_use == 6100 + 0 * 1);  // 4000 + 2100 now; earlier peak 6000
}

TEST_CASE("plain mode frees to the driver; trim returns the cache") {
  moe::test::test_device();
  DeviceAllocator plain(DeviceAllocator::Mode::plain);
  { DeviceBuffer a = plain.allocate(1 << 20); }
  CHECK(plain.stats().bytes_reserved == 0);
  DeviceAllocator caching(DeviceAllocator::Mode::caching);
  { DeviceBuffer a = caching.allocate(1 << 20); }
  CHECK(caching.stats().bytes_reserved == (1 << 20));
  caching.trim();
  CHECK(caching.stats().bytes_reserved == 0);
}

TEST_CASE("moving a buffer transfers ownership exactly once") {
  moe::test::test_device();
  DeviceAllocator alloc;
  DeviceBuffer a = alloc.allocate(100);
  DeviceBuffer b = std::move(a);
  CHECK_FALSE(a);
  CHECK(b);
  b.reset();
  CHECK(alloc.stats().bytes_in_use == 0);
}

TEST_CASE("a stream-ordered release hands nothing out before the stream's work finished") {
  moe::test::test_device();
  DeviceAllocator alloc(DeviceAllocator::Mode::caching);
  cudaStream_t stream = nullptr;
  REQUIRE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
  void* held = nullptr;
  {
    DeviceBuffer a = alloc.allocate(3000);
    held = a.data();
    moe::kernels::gpu_sleep(200'000'000, stream);  // the work that may still use it
    std::vector<DeviceBuffer> batch;
    batch.push_back(std::move(a));
    alloc.release_after(std::move(batch), stream);
  }
  CHECK(alloc.stats().bytes_pending_release == 3000);
  CHECK(alloc.stats().bytes_in_use == 3000);  // still the stream's
  {
    DeviceBuffer early = alloc.allocate(3000);
    CHECK(early.data() != held);
    CHECK(cudaStreamQuery(stream) == cudaErrorNotReady);  // it really was pending
  }
  REQUIRE(cudaStreamSynchronize(stream) == cudaSuccess);
  DeviceBuffer late = alloc.allocate(3000);  // the batch is taken back first
  CHECK(alloc.stats().bytes_pending_release == 0);
  CHECK(late.data() == held);
  late.reset();
  // A batch still pending when the allocator goes is waited for, not leaked early.
  {
    DeviceAllocator scoped(DeviceAllocator::Mode::caching);
    DeviceBuffer b = scoped.allocate(512);
    moe::kernels::gpu_sleep(50'000'000, stream);
    std::vector<DeviceBuffer> batch;
    batch.push_back(std::move(b));
    scoped.release_after(std::move(batch), stream);
  }
  CHECK(cudaStreamQuery(stream) == cudaSuccess);
  cudaStreamDestroy(stream);
}
