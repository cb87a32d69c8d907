// Route telemetry's kernel side: the route kernels' accumulation against a CPU oracle (the
// histogram of the top-k ids the same calls wrote), on fresh random routes with exact ties,
// through every route kernel (one-kernel route, cluster route at one token and at decode
// sizes), with out-of-range injections and saturation; and disarmed byte-identical.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/cuda_check.hpp"
#include "engine/device_allocator.hpp"
#include "engine/stream.hpp"
#include "engine/telemetry_window.hpp"
#include "kernels/moe/bf16.hpp"
#include "kernels/moe/forward_stages.hpp"
#include "kernels/moe/generate.hpp"
#include "support/gpu_test.hpp"

using namespace moe;
using namespace moe::kernels;

namespace {

constexpr std::uint8_t kPoisonByte = 0xA5;
const TelemetryIdentity kIdentity{1, 0, 0};

// One layer's routing inputs and scratch, the route stage run by itself.
struct RouteRig {
  MoeDims dims;
  int m = 0;
  ForwardPath path = ForwardPath::decode;
  DeviceAllocator allocator{DeviceAllocator::Mode::plain};
  Stream stream;
  DeviceBuffer x, router, scratch, record;
  ScratchLayout layout;
  std::mt19937_64 rng;

  RouteRig(MoeDims d, int tokens, ForwardPath p, std::uint64_t seed) : dims(d), m(tokens), path(p), rng(seed) {
    x = allocator.allocate(input_bytes(dims, m));
    router = allocator.allocate(router_bytes(dims));
    layout = scratch_layout(dims, m);
    scratch = allocator.allocate(layout.total);
    record = allocator.allocate(route_telemetry_bytes(dims.experts));
    upload_router();
  }

  // Random router rows, and every odd expert below 16 a copy of the even one before it: their
  // logits are equal bit for bit (every expert is summed the same way), a tie the index breaks.
  void upload_router() {
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    std::vector<std::uint16_t> r(static_cast<std::size_t>(dims.experts) * dims.hidden);
    for (auto& v : r) v = float_to_bf16_bits(u(rng) * 0.05f);
    for (int e = 1; e < std::min(16, dims.experts); e += 2)
      std::memcpy(&r[static_cast<std::size_t>(e) * dims.hidden], &r[static_cast<std::size_t>(e - 1) * dims.hidden],
                  2 * static_cast<std::size_t>(dims.hidden));
    MOE_CUDA_CHECK(cudaMemcpy(router.data(), r.data(), r.size() * 2, cudaMemcpyHostToDevice));
    MOE_CUDA_CHECK(cudaDeviceSynchronize());  // a pageable upload may still be in flight: rig.stream does not wait
  }

  // Fresh random activations; every fifth token all zero (every logit 0: a k-way tie).
  void new_input() {
    std::uniform_real_distribution<float> u(-1.f, 1.f);
    std::vector<std::uint16_t> h(static_cast<std::size_t>(m) * dims.hidden);
    for (int t = 0; t < m; ++t)
      for (int i = 0; i < dims.hidden; ++i)
        h[static_cast<std::size_t>(t) * dims.hidden + i] = t % 5 == 4 ? 0 : float_to_bf16_bits(u(rng));
    MOE_CUDA_CHECK(cudaMemcpy(x.data(), h.data(), h.size() * 2, cudaMemcpyHostToDevice));
    MOE_CUDA_CHECK(cudaDeviceSynchronize());
  }

  MoeForwardArgs args(const RouteTelemetry& t) const {
    MoeForwardArgs a;
    a.dims = dims;
    a.m = m;
    a.x = x.as<__nv_bfloat16>();
    a.router = router.as<__nv_bfloat16>();
    a.scratch = scratch.data();
    a.scratch_bytes = layout.total;
    a.path = path;
    a.telemetry = t;
    return a;
  }

  // Runs the route stage over poisoned scratch; returns its outputs (everything before h).
  std::vector<std::uint8_t> route(const RouteTelemetry& t) {
    MOE_CUDA_CHECK(cudaMemsetAsync(scratch.data(), kPoisonByte, layout.h, stream.handle()));
    enqueue_route(args(t), layout, stream.handle());
    stream.drain();
    std::vector<std::uint8_t> out(layout.h);
    MOE_CUDA_CHECK(cudaMemcpy(out.data(), scratch.data(), out.size(), cudaMemcpyDeviceToHost));
    return out;
  }

  std::vector<int> topk_ids(const std::vector<std::uint8_t>& outputs) const {
    std::vector<int> ids(static_cast<std::size_t>(m) * dims.top_k);
    std::memcpy(ids.data(), outputs.data() + layout.topk_ids, ids.size() * sizeof(int));
    return ids;
  }

  RouteTelemetry open_record(const std::vector<std::uint32_t>& preload = {}) {
    const auto image = TelemetryWindow::consistent(
                           kIdentity, 1,
                           preload.empty() ? std::vector<std::uint32_t>(static_cast<std::size_t>(dims.experts), 0u) : preload)
                           .to_record();
    MOE_CUDA_CHECK(cudaMemcpy(record.data(), image.data(), image.size(), cudaMemcpyHostToDevice));
    MOE_CUDA_CHECK(cudaDeviceSynchronize());
    return route_telemetry_view(record.data(), dims.experts);
  }

  TelemetryWindow read_record() const {
    std::vector<std::byte> image(route_telemetry_bytes(dims.experts));
    MOE_CUDA_CHECK(cudaMemcpy(image.data(), record.data(), image.size(), cudaMemcpyDeviceToHost));
    return TelemetryWindow::from_record(image.data(), image.size());
  }
};

struct Config {
  const char* name;
  MoeDims dims;
  int m;
  ForwardPath path;
};

MoeDims dims_of(int hidden, int experts, int shared, int top_k) {
  MoeDims d;
  d.hidden = hidden;
  d.inter = 64;
  d.experts = experts;
  d.shared = shared;
  d.top_k = top_k;
  return d;
}

// m = 1 and 5 on the decode path take the cluster route on sm_90+ (one-token and general
// kernels); tensor_core at m = 5 and every m above 8 take the one-kernel route (one tile, and
// several tiles whose last one groups).
std::vector<Config> configs() {
  std::vector<Config> c;
  for (MoeDims d : {dims_of(256, 64, 2, 6), dims_of(512, 128, 0, 8), dims_of(128, 40, 1, 4)}) {
    c.push_back({"decode m=1", d, 1, ForwardPath::decode});
    c.push_back({"decode m=5", d, 5, ForwardPath::decode});
    c.push_back({"one-kernel m=5", d, 5, ForwardPath::tensor_core});
    c.push_back({"one-kernel m=37", d, 37, ForwardPath::tensor_core});
    c.push_back({"one-kernel m=300", d, 300, ForwardPath::tensor_core});
  }
  return c;
}

std::string describe(const Config& c) {
  return std::string(c.name) + " E=" + std::to_string(c.dims.experts) + " k=" + std::to_string(c.dims.top_k);
}

constexpr int kCallsPerWindow = 4;

// The window's counts and bits equal the oracle's, expert by expert.
void check_against(const TelemetryWindow& w, const std::vector<std::uint64_t>& oracle) {
  for (int e = 0; e < w.experts(); ++e) {
    CAPTURE(e);
    CHECK(w.counts[static_cast<std::size_t>(e)] == oracle[static_cast<std::size_t>(e)]);
    CHECK(w.routed(e) == (oracle[static_cast<std::size_t>(e)] > 0));
  }
}

// Runs `body(cfg, rig)` over every configuration, each on a fresh rig and seed (printed, so a
// failure can be rerun).
template <class Body>
void for_each_rig(Body body) {
  test::test_device();
  std::uint64_t seed = std::random_device{}();
  MESSAGE("seed " << seed);
  for (const Config& cfg : configs()) {
    CAPTURE(describe(cfg));
    RouteRig rig(cfg.dims, cfg.m, cfg.path, ++seed);
    body(cfg, rig);
  }
}

}  // namespace

TEST_CASE("armed, the route kernels' window equals the CPU oracle over several calls") {
  for_each_rig([](const Config& cfg, RouteRig& rig) {
    const RouteTelemetry t = rig.open_record();
    std::vector<std::uint64_t> oracle(static_cast<std::size_t>(cfg.dims.experts), 0);
    for (int call = 0; call < kCallsPerWindow; ++call) {
      rig.new_input();
      const std::vector<int> ids = rig.topk_ids(rig.route(t));
      for (int tok = 0; tok < cfg.m; ++tok) {
        const int* row = &ids[static_cast<std::size_t>(tok) * cfg.dims.top_k];
        for (int s = 0; s < cfg.dims.top_k; ++s) {
          REQUIRE(row[s] >= 0);
          REQUIRE(row[s] < cfg.dims.experts);
          ++oracle[static_cast<std::size_t>(row[s])];
        }
        // Ties break by index: an all-zero token takes experts 0..k-1, and a copied odd row is
        // never chosen without its even twin.
        if (tok % 5 == 4)
          for (int s = 0; s < cfg.dims.top_k; ++s) CHECK(row[s] == s);
        for (int s = 0; s < cfg.dims.top_k; ++s)
          if (row[s] < 16 && row[s] % 2 == 1)
            CHECK(std::find(row, row + cfg.dims.top_k, row[s] - 1) != row + cfg.dims.top_k);
      }
    }
    const TelemetryWindow w = rig.read_record();
    CHECK(w.flags == 0);
    CHECK(w.total == static_cast<std::uint64_t>(kCallsPerWindow) * cfg.m * cfg.dims.top_k);
    check_against(w, oracle);
    CHECK(validate_window(w, kIdentity, 1).usable());
  });
}

TEST_CASE("an out-of-range id poisons the window without touching the bitmap or any count") {
  for_each_rig([](const Config& cfg, RouteRig& rig) {
    RouteTelemetry t = rig.open_record();
    std::vector<std::uint64_t> oracle(static_cast<std::size_t>(cfg.dims.experts), 0);
    // Call 0 records its pairs as routed; calls 1-3 record pair 0 as an id just past E, a
    // negative one, and one far out.
    const int injected[kCallsPerWindow] = {0, cfg.dims.experts, -3, cfg.dims.experts + 1000};
    for (int call = 0; call < kCallsPerWindow; ++call) {
      rig.new_input();
      t.inject = call > 0;
      t.inject_id = injected[call];
      const std::vector<int> ids = rig.topk_ids(rig.route(t));
      for (std::size_t i = 0; i < ids.size(); ++i)
        if (!(i == 0 && t.inject)) ++oracle[static_cast<std::size_t>(ids[i])];
    }
    const TelemetryWindow w = rig.read_record();
    CHECK(w.poisoned());
    CHECK_FALSE(w.overflowed());
    CHECK(w.total == static_cast<std::uint64_t>(kCallsPerWindow) * cfg.m * cfg.dims.top_k);
    check_against(w, oracle);
    CHECK(validate_window(w, kIdentity, 1).problem == WindowProblem::poisoned);
  });
}

TEST_CASE("counts saturate at 2^32 - 1 with the sticky overflow bit; the mutation wraps them") {
  for (bool wraps : {false, true}) {
    CAPTURE(wraps);
    for_each_rig([wraps](const Config& cfg, RouteRig& rig) {
      const std::vector<std::uint32_t> preload(static_cast<std::size_t>(cfg.dims.experts), 0xFFFFFFFEu);
      RouteTelemetry t = rig.open_record(preload);
      t.counts_wrap = wraps;
      std::vector<std::uint64_t> oracle(static_cast<std::size_t>(cfg.dims.experts), 0);
      for (int call = 0; call < kCallsPerWindow; ++call) {
        rig.new_input();
        for (int id : rig.topk_ids(rig.route(t))) ++oracle[static_cast<std::size_t>(id)];
      }
      const TelemetryWindow w = rig.read_record();
      bool any_wrap = false;
      for (int e = 0; e < cfg.dims.experts; ++e) {
        CAPTURE(e);
        const std::uint64_t exact = 0xFFFFFFFEull + oracle[static_cast<std::size_t>(e)];
        any_wrap = any_wrap || exact > 0xFFFFFFFFull;
        const std::uint64_t expected = wraps ? exact & 0xFFFFFFFFull : std::min<std::uint64_t>(exact, 0xFFFFFFFFull);
        CHECK(w.counts[static_cast<std::size_t>(e)] == expected);
      }
      // kCallsPerWindow x m x k pairs over E experts: at m >= 5 some expert always gets two.
      if (cfg.m >= 5) REQUIRE(any_wrap);
      CHECK(w.overflowed() == (any_wrap && !wraps));
      CHECK_FALSE(w.poisoned());
      if (any_wrap) CHECK_FALSE(validate_window(w, kIdentity, 1).usable());
    });
  }
}

TEST_CASE("disarmed and armed, the route writes the same bytes") {
  for_each_rig([](const Config& cfg, RouteRig& rig) {
    rig.new_input();
    const std::vector<std::uint8_t> disarmed = rig.route(RouteTelemetry{});
    const std::vector<std::uint8_t> armed = rig.route(rig.open_record());
    CHECK(disarmed == armed);
    CHECK(rig.read_record().total == static_cast<std::uint64_t>(cfg.m) * cfg.dims.top_k);
  });
}
