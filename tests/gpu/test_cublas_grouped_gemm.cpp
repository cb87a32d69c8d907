// The cuBLAS peer of probe bandwidth on a GPU: the grouped GEMM runner on random bf16 experts
// with ragged token rows against a CPU GEMM (every output poisoned first), its enqueue under
// the sampler's held stream, and the probe's peer figures end to end. Needs libcublas
// (libcublas.so.13 or .so.12 on the loader's path); MOE_TEST_SEED replays the random inputs.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>

#include "common/cuda_check.hpp"
#include "engine/device_allocator.hpp"
#include "engine/stream.hpp"
#include "kernels/moe/bf16.hpp"
#include "kernels/peer/grouped_expert_gemm.hpp"
#include "probes/measure/sampler.hpp"
#include "probes/probe.hpp"
#include "support/gpu_test.hpp"

using namespace moe;
using kernels::bf16_bits_to_float;
using kernels::round_to_bf16;

namespace {

std::uint64_t test_seed() {
  static const std::uint64_t s = [] {
    const char* env = std::getenv("MOE_TEST_SEED");
    const std::uint64_t v = env ? std::strtoull(env, nullptr, 0) : std::random_device{}();
    std::printf("test_cublas_grouped_gemm: MOE_TEST_SEED=%llu\n", static_cast<unsigned long long>(v));
    return v;
  }();
  return s;
}

std::shared_ptr<const kernels::peer::CublasLibrary> cublas() {
  static const kernels::peer::CublasAvailability a = kernels::peer::find_cublas();
  REQUIRE_MESSAGE(a.library, a.missing_message());
  return a.library;
}

std::vector<std::uint16_t> random_bf16(std::mt19937_64& rng, std::size_t n, float scale) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<std::uint16_t> v(n);
  for (auto& b : v) b = kernels::float_to_bf16_bits(u(rng) * scale);
  return v;
}

DeviceBuffer upload(DeviceAllocator& alloc, const std::vector<std::uint16_t>& host) {
  DeviceBuffer b = alloc.allocate(host.size() * 2);
  MOE_CUDA_CHECK(cudaMemcpy(b.data(), host.data(), host.size() * 2, cudaMemcpyHostToDevice));
  return b;
}

std::vector<std::uint16_t> download(const DeviceBuffer& b) {
  std::vector<std::uint16_t> v(b.bytes() / 2);
  MOE_CUDA_CHECK(cudaMemcpy(v.data(), b.data(), b.bytes(), cudaMemcpyDeviceToHost));
  return v;
}

// Random experts (weights uniform [-1, 1) / sqrt(K), as the engine's generator draws them) and
// token rows, on the device, with the grouped GEMM's plan and pointer table.
struct GroupedProblem {
  int hidden, inter;
  std::vector<int> rows;
  std::vector<std::vector<std::uint16_t>> gate_up, down;  // per expert [2I, H], [H, I]
  std::vector<std::uint16_t> x;                           // [R, H]
  std::vector<DeviceBuffer> weights;
  DeviceBuffer dx, dgate_up, dh, dy, table;
  std::unique_ptr<kernels::peer::GroupedExpertGemm> gemm;

  GroupedProblem(DeviceAllocator& alloc, std::mt19937_64& rng, int h, int i, std::vector<int> r)
      : hidden(h), inter(i), rows(std::move(r)) {
    std::size_t total = 0;
    std::vector<kernels::peer::ExpertRows> experts;
    for (int n : rows) {
      gate_up.push_back(random_bf16(rng, 2 * std::size_t(inter) * hidden, 1 / std::sqrt(float(hidden))));
      down.push_back(random_bf16(rng, std::size_t(hidden) * inter, 1 / std::sqrt(float(inter))));
      weights.push_back(upload(alloc, gate_up.back()));
      weights.push_back(upload(alloc, down.back()));
      experts.push_back({weights[weights.size() - 2].data(), weights.back().data(), n});
      total += n;
    }
    x = random_bf16(rng, total * hidden, 1.0f);
    dx = upload(alloc, x);
    dgate_up = alloc.allocate(total * 2 * inter * 2);
    dh = alloc.allocate(total * inter * 2);
    dy = alloc.allocate(total * hidden * 2);
    for (const DeviceBuffer* b : {&dgate_up, &dh, &dy})  // NaN in bf16: an unwritten row shows
      MOE_CUDA_CHECK(cudaMemset(b->data(), 0xFF, b->bytes()));
    gemm = std::make_unique<kernels::peer::GroupedExpertGemm>(
        hidden, inter, experts,
        kernels::peer::ExpertActivations{dx.as<__nv_bfloat16>(), dgate_up.as<__nv_bfloat16>(),
                                          dh.as<__nv_bfloat16>(), dy.as<__nv_bfloat16>()});
    const auto& t = gemm->pointer_table();
    table = alloc.allocate(t.size() * sizeof(void*));
    MOE_CUDA_CHECK(cudaMemcpy(table.data(), t.data(), t.size() * sizeof(void*), cudaMemcpyHostToDevice));
    MOE_CUDA_CHECK(cudaDeviceSynchronize());  // the legacy-stream copies and poison, before any stream reads
  }
};

}  // namespace

TEST_CASE("the grouped GEMM runner matches a CPU GEMM of both projections on random bf16 experts") {
  test::test_device();  // skips without a GPU
  DeviceAllocator alloc;
  Stream stream;
  const kernels::peer::CublasHandle handle(cublas(), stream.handle());
  std::mt19937_64 rng(test_seed());
  struct Dims {
    int hidden, inter;
    std::vector<int> rows;  // per expert: groups of equal counts and singletons
  };
  for (const Dims& d : {Dims{256, 192, {1, 3, 1, 5, 2, 1, 3}}, Dims{2048, 1408, {1, 1, 1, 1, 1, 1, 1, 1}},
                        Dims{512, 384, {16, 7, 1}}}) {
    CAPTURE(d.hidden);
    CAPTURE(d.inter);
    GroupedProblem p(alloc, rng, d.hidden, d.inter, d.rows);
    p.gemm->enqueue(handle, p.table.as<void*>());
    stream.drain();
    const auto y = download(p.dy), h = download(p.dh);
    std::size_t first = 0;
    for (std::size_t e = 0; e < d.rows.size(); ++e) {
      CAPTURE(e);
      double err = 0, ref = 0, h_err = 0, h_ref = 0;
      for (int r = 0; r < d.rows[e]; ++r, ++first) {
        const std::uint16_t* x = &p.x[first * d.hidden];
        std::vector<float> hh(d.inter);
        for (int j = 0; j < d.inter; ++j) {
          double g = 0, u = 0;
          for (int k = 0; k < d.hidden; ++k) {
            g += double(bf16_bits_to_float(x[k])) * bf16_bits_to_float(p.gate_up[e][std::size_t(j) * d.hidden + k]);
            u += double(bf16_bits_to_float(x[k])) *
                 bf16_bits_to_float(p.gate_up[e][(std::size_t(d.inter) + j) * d.hidden + k]);
          }
          const float gf = round_to_bf16(float(g)), uf = round_to_bf16(float(u));  // stored bf16
          hh[j] = round_to_bf16(gf / (1.0f + std::exp(-gf)) * uf);
          const double got = bf16_bits_to_float(h[first * d.inter + j]);
          h_err += (got - hh[j]) * (got - hh[j]);
          h_ref += double(hh[j]) * hh[j];
        }
        for (int n = 0; n < d.hidden; ++n) {
          double want = 0;
          for (int j = 0; j < d.inter; ++j)
            want += double(hh[j]) * bf16_bits_to_float(p.down[e][std::size_t(n) * d.inter + j]);
          const double got = bf16_bits_to_float(y[first * d.hidden + n]);
          err += (got - want) * (got - want);
          ref += want * want;
        }
      }
      // bf16 outputs (relative rounding 2^-9) over fp32 accumulation; NaN (poison) fails.
      CHECK(std::sqrt(h_err / h_ref) <= 1e-2);
      CHECK(std::sqrt(err / ref) <= 1e-2);
    }
  }
}

TEST_CASE("the grouped GEMM enqueues under the sampler's held stream without blocking the host") {
  const Device& dev = test::test_device();
  DeviceAllocator alloc;
  Stream stream;
  const kernels::peer::CublasHandle handle(cublas(), stream.handle());
  std::mt19937_64 rng(test_seed() + 1);
  GroupedProblem p(alloc, rng, 1024, 512, {1, 1, 2, 1});
  measure::MeasureOptions o;
  o.stopping.min_samples = 5;
  o.stopping.min_time_s = 0;
  o.stopping.max_noise = 1;
  o.stopping.timeout_s = 20;
  measure::Sampler sampler(dev, alloc, o);
  // A cuBLAS call that waited for the stream would hold the host until the blocker's 10 s
  // hold ran out, and the sampler would raise.
  const report::Measurement m =
      sampler.measure(stream, "test/cublas-peer", [&] { p.gemm->enqueue(handle, p.table.as<void*>()); });
  CHECK(m.samples() >= 5);
  CHECK(m.gpu_time().median > 0);
  if (m.kernel_timing) CHECK(m.kernel_count.front() >= 3);  // two GEMMs and the SiLU-mul at least
}

TEST_CASE("probe bandwidth with --peer cublas reports the peer beside every case, checked first") {
  const Device& dev = test::test_device();
  RunOptions options;
  const auto library = load_shape_library(std::filesystem::path(test::fixtures_dir()) / "shapes");
  options.shapes = {resolve_shape("tiny", library)};
  options.user_set_shapes = true;
  options.ms = {1, 8};
  options.user_set_ms = true;
  options.modes = {"eager", "graph"};
  options.max_layers = 2;
  options.measure.stopping.min_samples = 5;
  options.measure.stopping.min_time_s = 0.01;
  options.measure.stopping.max_noise = 0.5;
  options.peer = Peer::cublas;
  options.peer_required = true;
  DeviceAllocator alloc;
  measure::Sampler sampler(dev, alloc, options.measure);
  std::vector<report::CaseResult> cases;
  ProbeState state("bandwidth", options, dev, alloc, sampler,
                   [&](report::CaseResult c) { cases.push_back(std::move(c)); });
  probe_by_name("bandwidth").run(state);
  std::size_t steps = 0;
  for (const report::CaseResult& c : cases) {
    if (c.name != "step") continue;
    ++steps;
    CAPTURE(c.key());
    CAPTURE(c.reason);
    CHECK(c.verdict == report::Verdict::pass);
    const auto check = std::find_if(c.checks.begin(), c.checks.end(), [](const report::Check& k) {
      return k.name == "cublas_peer_matches_reference";
    });
    REQUIRE(check != c.checks.end());
    CHECK(check->passed);
    const nlohmann::json& peer = c.evidence.at("peer");
    CHECK(peer.at("measured") == true);
    CHECK(c.metrics.at("cublas_gpu_us").value > 0);
    CHECK(c.metrics.at("cublas_gbps").value > 0);
    CHECK(c.metrics.at("moebench_over_cublas").value > 0);
    // The same bytes for bf16; int4 cases time bf16 copies of their experts, and say so.
    if (*c.format == "bf16")
      CHECK(c.metrics.at("cublas_gbps").value * c.metrics.at("cublas_gpu_us").value ==
            doctest::Approx(c.metrics.at("bytes_dedup").value * 1e-3));
    else
      CHECK(peer.at("weights").get<std::string>().find("bf16 copies") != std::string::npos);
  }
  CHECK(steps == 2 * 2 * 2);  // formats x M x modes
}
