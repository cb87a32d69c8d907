// The engine's lifecycle objects on the GPU: layers against the reference, graphs against
// eager, capture refusals, and each fault-injection switch changing behaviour as it should.
#include <doctest/doctest.h>

#include <optional>
#include <random>

#include "common/cuda_check.hpp"
#include "engine/engine.hpp"
#include "engine/fault_injection.hpp"
#include "kernels/moe/generate.hpp"
#include "probes/layer_check.hpp"
#include "probes/measure/sampler.hpp"
#include "support/gpu_test.hpp"

using namespace moe;

namespace {

Shape tiny_shape() {
  const auto lib = load_shape_library(std::filesystem::path(test::fixtures_dir()) / "shapes");
  return resolve_shape("tiny", lib);
}

EngineConfig tiny_config(kernels::WeightFormat f, std::uint64_t seed) {
  EngineConfig c;
  c.shape = tiny_shape();
  c.format = f;
  c.layers = 2;
  c.seed = seed;
  return c;
}

std::uint64_t fresh_seed() { return std::random_device{}(); }

}  // namespace

TEST_CASE("an engine's layers match the reference; graph replay and reruns are bit-exact") {
  const Device& dev = test::test_device();
  for (auto format : {kernels::WeightFormat::bf16, kernels::WeightFormat::int4}) {
    for (int m : {1, 5, 33}) {
      const std::uint64_t seed = fresh_seed(), input = fresh_seed();
      CAPTURE(seed);
      CAPTURE(m);
      DeviceAllocator alloc;
      Engine e(tiny_config(format, seed), alloc, dev);
      e.set_input(m, input);
      e.forward();
      for (int l = 0; l < e.layers(); ++l) {
        const LayerCheck k = check_layer_output(e.layer(l), e.output(l), m, input, 64);
        CHECK_MESSAGE(k.passed, k.detail);
      }
      const auto eager = copy_to_host(e.output(1), static_cast<std::size_t>(m) * 256);
      e.forward();
      e.stream().drain();
      CHECK(count_differences(e.output(1), eager, eager.size()) == 0);
      REQUIRE_FALSE(e.capture_blocker().has_value());
      e.capture();
      e.replay();
      e.stream().drain();
      CHECK(count_differences(e.output(1), eager, eager.size()) == 0);
    }
  }
}

TEST_CASE("capture is refused before warm-up and when scratch would grow, with reasons") {
  const Device& dev = test::test_device();
  DeviceAllocator alloc;
  Engine e(tiny_config(kernels::WeightFormat::bf16, 3), alloc, dev);
  CHECK(e.capture_blocker().value().find("set_input") != std::string::npos);
  e.set_input(4, 1);
  CHECK(e.capture_blocker().value().find("not warmed up") != std::string::npos);
  CHECK_THROWS_WITH_AS(e.capture(), doctest::Contains("not warmed up"), Error);
  e.forward();
  CHECK_FALSE(e.capture_blocker().has_value());
  e.set_input(200, 1);
  CHECK(e.capture_blocker().value().find("scratch would grow") != std::string::npos);
  // Skipping the engine's check, the pool refuses by itself and the stream is usable after.
  CHECK_THROWS_AS(e.capture(false), CaptureGrowthError);
  CHECK_FALSE(e.stream().capturing());
  e.forward();
  const LayerCheck k = check_layer_output(e.layer(0), e.output(0), 200, 1);
  CHECK_MESSAGE(k.passed, k.detail);
}

TEST_CASE("a graph whose scratch an eager step regrew is captured again before it replays") {
  const Device& dev = test::test_device();
  for (const bool kept : {false, true}) {
    CAPTURE(kept);
    std::optional<ScopedMutation> mutation;
    if (kept) mutation.emplace(Mutation::graphs_kept_after_regrow);
    DeviceAllocator alloc;
    Engine e(tiny_config(kernels::WeightFormat::bf16, 5), alloc, dev);
    e.set_input(512, 1);  // activations for the larger M now, so the later step grows only scratch
    e.set_input(4, 2);
    e.forward();
    e.capture();
    e.stream().drain();
    const void* held = e.layer(0).scratch().data();
    e.set_input(512, 3);
    e.forward();  // regrows every layer's scratch, freeing the block the graph holds
    e.stream().drain();
    REQUIRE(e.layer(0).scratch().data() != held);
    e.set_input(4, 4);
    REQUIRE(e.captured());  // kept by the engine: replay() decides
    e.replay();
    e.stream().drain();
    CHECK(e.graphs_recaptured() == (kept ? 0u : 1u));
    if (!kept) {  // kept, the replay's routing lies in the freed block, not where the check reads
      const LayerCheck k = check_layer_output(e.layer(0), e.output(0), 4, 4);
      CHECK_MESSAGE(k.passed, k.detail);
    }
  }
}

TEST_CASE("the resident slot is built once, counted, and dies with its weights") {
  const Device& dev = test::test_device();
  DeviceAllocator alloc;
  Engine e(tiny_config(kernels::WeightFormat::bf16, 5), alloc, dev);
  CHECK_FALSE(e.layer(0).weights().resident().built());
  e.set_input(2, 9);
  e.forward();
  e.forward();
  CHECK(e.layer(0).weights().resident().builds() == 1);
  CHECK(e.layer(0).weights().resident().uses() == 2);
}

TEST_CASE("mutation static-resident-cache: a new engine at an old address runs on stale pointers") {
  const Device& dev = test::test_device();
  auto run_two = [&](bool mutated) {
    std::optional<ScopedMutation> on;
    if (mutated) on.emplace(Mutation::static_resident_cache);
    DeviceAllocator alloc;
    WeightsArena arena(4);
    bool second_passed = false;
    for (int i = 0; i < 2; ++i) {
      Engine e(tiny_config(kernels::WeightFormat::bf16, 100 + i), alloc, dev, &arena);
      e.set_input(8, 77);
      e.forward();
      const LayerCheck k = check_layer_output(e.layer(0), e.output(0), 8, 77);
      if (i == 0) CHECK_MESSAGE(k.passed, k.detail);
      second_passed = k.passed;
    }
    return second_passed;
  };
  CHECK(run_two(false));
  CHECK_FALSE(run_two(true));
}

TEST_CASE("mutations of the barriers: each removes exactly the drain its bug removed") {
  const Device& dev = test::test_device();
  DeviceAllocator alloc;
  Stream stream;
  LayerConfig lc;
  lc.dims = tiny_shape().dims(kernels::WeightFormat::bf16);
  DeviceBuffer x = alloc.allocate(256 * 2 * 64), out = alloc.allocate(256 * 2 * 64);
  kernels::generate_input(lc.dims, 64, 11, x.as<__nv_bfloat16>(), stream.handle());

  SUBCASE("scratch-free-without-drain: regrow without a drain") {
    auto regrow_drains = [&](bool mutated) {
      std::optional<ScopedMutation> on;
      if (mutated) on.emplace(Mutation::scratch_free_without_drain);
      MoeLayer layer(lc, alloc, stream);
      layer.forward(x.as<__nv_bfloat16>(), out.as<__nv_bfloat16>(), 1);
      const std::size_t before = stream.drains();
      layer.forward(x.as<__nv_bfloat16>(), out.as<__nv_bfloat16>(), 64);  // regrows
      return stream.drains() - before;
    };
    CHECK(regrow_drains(false) == 1);
    CHECK(regrow_drains(true) == 0);
  }
  SUBCASE("drop-without-drain: the layer is destroyed without a drain") {
    auto drop_drains = [&](bool mutated) {
      std::optional<ScopedMutation> on;
      if (mutated) on.emplace(Mutation::drop_without_drain);
      std::size_t before = 0;
      {
        MoeLayer layer(lc, alloc, stream);
        layer.forward(x.as<__nv_bfloat16>(), out.as<__nv_bfloat16>(), 4);
        before = stream.drains();
      }
      const std::size_t n = stream.drains() - before;
      stream.drain();
      return n;
    };
    CHECK(drop_drains(false) == 1);
    CHECK(drop_drains(true) == 0);
  }
  SUBCASE("blocking-forward: forward drains before returning") {
    MoeLayer layer(lc, alloc, stream);
    layer.forward(x.as<__nv_bfloat16>(), out.as<__nv_bfloat16>(), 4);
    std::size_t before = stream.drains();
    layer.forward(x.as<__nv_bfloat16>(), out.as<__nv_bfloat16>(), 4);
    CHECK(stream.drains() == before);
    ScopedMutation on(Mutation::blocking_forward);
    before = stream.drains();
    layer.forward(x.as<__nv_bfloat16>(), out.as<__nv_bfloat16>(), 4);
    CHECK(stream.drains() == before + 1);
  }
  SUBCASE("noop-timing-barrier: the sampler's barrier stops draining") {
    measure::MeasureOptions o;
    o.kernel_timing = false;
    o.l2 = measure::L2Mode::hot;
    measure::Sampler sampler(dev, alloc, o);
    std::size_t before = stream.drains();
    sampler.barrier(stream);
    CHECK(stream.drains() == before + 1);
    ScopedMutation on(Mutation::noop_timing_barrier);
    before = stream.drains();
    sampler.barrier(stream);
    CHECK(stream.drains() == before);
  }
  SUBCASE("capture-growth: the pool grows inside a capture instead of refusing") {
    ScratchPool pool(alloc);
    pool.ensure(1024, stream);
    auto grows_in_capture = [&] {
      cudaGraph_t g = nullptr;
      MOE_CUDA_CHECK(cudaStreamBeginCapture(stream.handle(), cudaStreamCaptureModeRelaxed));
      bool refused = false;
      try {
        pool.ensure(pool.capacity() * 4, stream);
      } catch (const CaptureGrowthError&) {
        refused = true;
      }
      cudaStreamEndCapture(stream.handle(), &g);
      if (g) cudaGraphDestroy(g);
      (void)cudaGetLastError();
      return !refused;
    };
    CHECK_FALSE(grows_in_capture());
    ScopedMutation on(Mutation::capture_growth);
    CHECK(grows_in_capture());
  }
}

TEST_CASE("engines built one after another reuse freed device addresses") {
  const Device& dev = test::test_device();
  DeviceAllocator alloc;
  { Engine a(tiny_config(kernels::WeightFormat::bf16, 1), alloc, dev); }
  const auto reused_before = alloc.stats().addresses_reused;
  { Engine b(tiny_config(kernels::WeightFormat::bf16, 2), alloc, dev); }
  CHECK(alloc.stats().addresses_reused > reused_before);
}
