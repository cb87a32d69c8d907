// The expert-parallel kernels on one GPU, P virtual ranks exchanging through device copies
// (tests/gpu/test_ep_exchange.cpp runs the NCCL exchange on two or more GPUs): the pack writes
// exactly the host reference's wire bytes, and a whole sharded step (route, pack, exchange,
// expert rows, shared experts, return, combine) matches the CPU reference of the sharded step,
// with the per-row kernel and with the grouped GEMM path (test_ep_grouped_rows.cpp checks that
// path's parts on its own).
// Output buffers are poisoned first; inputs are fresh random tokens each run.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "common/cuda_check.hpp"
#include "engine/device_allocator.hpp"
#include "engine/ep/dispatch_plan.hpp"
#include "engine/ep/expert_map.hpp"
#include "engine/ep/sharded_reference.hpp"
#include "engine/ep/wire_layout.hpp"
#include "engine/stream.hpp"
#include "kernels/ep/ep_kernels.hpp"
#include "kernels/moe/bf16.hpp"
#include "kernels/moe/forward.hpp"
#include "kernels/moe/forward_stages.hpp"
#include "kernels/moe/generate.hpp"
#include "support/device_transfer.hpp"
#include "support/gpu_test.hpp"

using namespace moe;
namespace kep = moe::kernels::ep;

namespace {

kernels::MoeDims test_dims(int shared) {
  kernels::MoeDims d;
  d.hidden = 256;
  d.inter = 128;
  d.experts = 10;
  d.shared = shared;
  d.top_k = 3;
  return d;
}

using test::download;
using test::upload;

// bf16 tokens [m, H] from the generator's input rows first..first+m-1 (floats and bits).
std::vector<float> tokens(const kernels::MoeDims& d, std::uint64_t seed, int first, int m) {
  std::vector<float> x(static_cast<std::size_t>(m) * d.hidden);
  for (int t = 0; t < m; ++t) kernels::input_row_host(d, seed, first + t, x.data() + static_cast<std::size_t>(t) * d.hidden);
  return x;
}
std::vector<std::uint16_t> bits(const std::vector<float>& x) {
  std::vector<std::uint16_t> b(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) b[i] = kernels::float_to_bf16_bits(x[i]);
  return b;
}

}  // namespace

TEST_CASE("pack writes the host reference's headers and records, and flags overflow") {
  test::test_device();
  DeviceAllocator alloc;
  Stream stream;
  std::mt19937 rng(std::random_device{}());
  const kernels::MoeDims d = test_dims(0);
  for (int P : {1, 2, 3, 4}) {
    const int m = 37;
    const std::uint64_t seed = rng();
    CAPTURE(P);
    CAPTURE(seed);
    const ep::ExpertMap map = ep::ExpertMap::contiguous(d.experts, P);
    std::vector<int> ids(m * d.top_k);
    std::vector<float> wf(m * d.top_k);
    std::vector<double> wd(m * d.top_k);
    for (int i = 0; i < m * d.top_k; ++i) {
      ids[i] = static_cast<int>(rng() % d.experts);
      wf[i] = static_cast<float>(rng() % 1000) / 1000.0f;
      wd[i] = wf[i];
    }
    const std::vector<float> x = tokens(d, seed, 0, m);
    const ep::DispatchPlan plan = ep::plan_dispatch(map, 0, m, d.top_k, ids, m);
    const ep::WireLayout L = ep::make_wire_layout(d.hidden, d.top_k, P, m);
    std::vector<unsigned char> expected(L.dispatch_bytes(), 0xAB);
    ep::pack_dispatch_host(L, plan, x, wd, expected.data());
    std::vector<int> local(d.experts);
    for (int e = 0; e < d.experts; ++e) local[e] = map.local_index(e);
    DeviceBuffer ids_d = upload(alloc, ids), w_d = upload(alloc, wf), owner_d = upload(alloc, map.owners()),
                 local_d = upload(alloc, local), x_d = upload(alloc, bits(x));
    DeviceBuffer send = alloc.allocate(L.dispatch_bytes()), row_of = alloc.allocate(sizeof(int) * m * P),
                 status = alloc.allocate(sizeof(unsigned));
    MOE_CUDA_CHECK(cudaMemset(send.data(), 0xAB, L.dispatch_bytes()));  // poison: as the host's
    MOE_CUDA_CHECK(cudaMemset(row_of.data(), 0x7F, sizeof(int) * m * P));
    MOE_CUDA_CHECK(cudaMemset(status.data(), 0, sizeof(unsigned)));
    MOE_CUDA_CHECK(cudaDeviceSynchronize());  // the legacy-stream poison lands before the pack writes
    kep::PackArgs a;
    a.wire = L.geometry();
    a.m = m;
    a.experts = d.experts;
    a.topk_ids = ids_d.as<int>();
    a.topk_weights = w_d.as<float>();
    a.owner = owner_d.as<int>();
    a.local_index = local_d.as<int>();
    a.x = x_d.as<__nv_bfloat16>();
    a.send = send.as<unsigned char>();
    a.row_of = row_of.as<int>();
    a.status = status.as<unsigned>();
    kep::enqueue_pack_dispatch(a, stream.handle());
    stream.drain();
    const auto got = download<unsigned char>(send, L.dispatch_bytes());
    // Headers: the count word; records: every byte (padding is 0xAB on both sides).
    for (int dst = 0; dst < P; ++dst) {
      const std::size_t at = L.dispatch_block_bytes() * dst;
      CHECK(std::memcmp(got.data() + at, expected.data() + at, 4) == 0);
      const std::size_t rec = at + ep::WireLayout::kHeaderBytes;
      const std::size_t n = L.dispatch_row_bytes() * plan.counts[dst];
      CHECK(std::memcmp(got.data() + rec, expected.data() + rec, n) == 0);
    }
    const auto rows = download<int>(row_of, m * P);
    for (int dst = 0; dst < P; ++dst)
      for (int r = 0; r < plan.counts[dst]; ++r) CHECK(rows[plan.tokens[plan.offsets[dst] + r] * P + dst] == r);
    CHECK(download<unsigned>(status, 1)[0] == 0u);

    // The same tokens with a capacity one below the busiest destination: flagged, and the
    // header never claims more than the capacity.
    int busiest = 0;
    for (int c : plan.counts) busiest = std::max(busiest, c);
    const ep::WireLayout small = ep::make_wire_layout(d.hidden, d.top_k, P, busiest - 1);
    DeviceBuffer send2 = alloc.allocate(small.dispatch_bytes());
    a.wire = small.geometry();
    a.send = send2.as<unsigned char>();
    kep::enqueue_pack_dispatch(a, stream.handle());
    stream.drain();
    CHECK((download<unsigned>(status, 1)[0] & kep::kCapacityOverflow) != 0u);
    for (int dst = 0; dst < P; ++dst) {
      int count = 0;
      MOE_CUDA_CHECK(cudaMemcpy(&count, send2.as<unsigned char>() + small.dispatch_block_bytes() * dst, 4, cudaMemcpyDeviceToHost));
      CHECK(count <= busiest - 1);
    }
  }
}

TEST_CASE("a sharded step over P virtual ranks on one GPU matches the sharded CPU reference") {
  test::test_device();
  DeviceAllocator alloc;
  Stream stream;
  std::mt19937 rng(std::random_device{}());
  for (int P : {1, 2, 3}) {
    for (int shared : {0, 1}) {
      for (bool grouped : {false, true}) {  // the per-row kernel, or the grouped GEMM path
        const kernels::MoeDims d = test_dims(shared);
        const int m = 9;
        const std::uint64_t seed = rng();
        CAPTURE(P);
        CAPTURE(shared);
        CAPTURE(grouped);
        CAPTURE(seed);
        const ep::ExpertMap map = ep::ExpertMap::contiguous(d.experts, P);
        const ep::WireLayout L = ep::make_wire_layout(d.hidden, d.top_k, P, m);
        const kep::WireGeometry g = L.geometry();
        DeviceBuffer router = alloc.allocate(kernels::router_bytes(d));
        kernels::generate_router(d, seed, router.as<__nv_bfloat16>(), stream.handle());
        std::vector<DeviceBuffer> weights;
        auto bank = [&](const std::vector<int>& experts, DeviceBuffer& gu, DeviceBuffer& dn) {
          std::vector<const void*> a, b;
          for (int e : experts) {
            weights.push_back(alloc.allocate(kernels::expert_weight_bytes(d, kernels::TensorKind::gate_up)));
            kernels::generate_expert_tensor(d, kernels::TensorKind::gate_up, seed, e, weights.back().data(), nullptr, stream.handle());
            a.push_back(weights.back().data());
            weights.push_back(alloc.allocate(kernels::expert_weight_bytes(d, kernels::TensorKind::down)));
            kernels::generate_expert_tensor(d, kernels::TensorKind::down, seed, e, weights.back().data(), nullptr, stream.handle());
            b.push_back(weights.back().data());
          }
          gu = upload(alloc, a);
          dn = upload(alloc, b);
        };
        std::vector<int> shared_ids;
        for (int s = 0; s < d.shared; ++s) shared_ids.push_back(d.experts + s);
        DeviceBuffer shared_gu, shared_dn;
        bank(shared_ids, shared_gu, shared_dn);
        std::vector<int> local(d.experts);
        for (int e = 0; e < d.experts; ++e) local[e] = map.local_index(e);
        DeviceBuffer owner_d = upload(alloc, map.owners()), local_d = upload(alloc, local);

        struct Rank {
          DeviceBuffer gu, dn, x, scratch, send, recv, csend, crecv, row_of, status, shared_out, out, grouped;
          std::vector<float> xh;
        };
        std::vector<Rank> ranks(P);
        const kernels::ScratchLayout layout = kernels::scratch_layout(d, m);
        std::vector<std::vector<float>> xs;
        for (int r = 0; r < P; ++r) {
          Rank& k = ranks[r];
          bank(map.experts_of(r), k.gu, k.dn);
          k.xh = tokens(d, seed, r * m, m);
          xs.push_back(k.xh);
          k.x = upload(alloc, bits(k.xh));
          k.scratch = alloc.allocate(layout.total);
          for (DeviceBuffer* b : {&k.send, &k.recv}) *b = alloc.allocate(L.dispatch_bytes());
          for (DeviceBuffer* b : {&k.csend, &k.crecv}) *b = alloc.allocate(L.combine_bytes());
          k.row_of = alloc.allocate(sizeof(int) * m * P);
          k.status = alloc.allocate(sizeof(unsigned));
          k.shared_out = alloc.allocate(sizeof(float) * m * d.hidden);
          k.out = alloc.allocate(kernels::input_bytes(d, m));
          if (grouped) {
            k.grouped = alloc.allocate(kep::grouped_rows_layout(d, g, static_cast<int>(map.experts_of(r).size())).total);
            MOE_CUDA_CHECK(cudaMemset(k.grouped.data(), 0xFF, k.grouped.bytes()));
          }
          for (DeviceBuffer* b : {&k.send, &k.recv, &k.csend, &k.crecv, &k.out, &k.shared_out})
            MOE_CUDA_CHECK(cudaMemset(b->data(), 0xFF, b->bytes()));  // poison (NaN patterns)
          MOE_CUDA_CHECK(cudaMemset(k.status.data(), 0, sizeof(unsigned)));
          MOE_CUDA_CHECK(cudaDeviceSynchronize());  // the legacy-stream poison before the stream's kernels
          kernels::MoeForwardArgs route;
          route.dims = d;
          route.m = m;
          route.x = k.x.as<__nv_bfloat16>();
          route.out = k.out.as<__nv_bfloat16>();
          route.router = router.as<__nv_bfloat16>();
          route.experts.gate_up = k.gu.as<const void* const>();
          route.experts.down = k.dn.as<const void* const>();
          route.scratch = k.scratch.data();
          route.scratch_bytes = layout.total;
          kernels::enqueue_route(route, layout, stream.handle());
          kep::PackArgs a;
          a.wire = g;
          a.m = m;
          a.experts = d.experts;
          a.topk_ids = layout.at<int>(k.scratch.data(), layout.topk_ids);
          a.topk_weights = layout.at<float>(k.scratch.data(), layout.topk_weights);
          a.owner = owner_d.as<int>();
          a.local_index = local_d.as<int>();
          a.x = k.x.as<__nv_bfloat16>();
          a.send = k.send.as<unsigned char>();
          a.row_of = k.row_of.as<int>();
          a.status = k.status.as<unsigned>();
          kep::enqueue_pack_dispatch(a, stream.handle());
        }
        auto exchange = [&](DeviceBuffer Rank::*from, DeviceBuffer Rank::*to, std::size_t block) {
          for (int s = 0; s < P; ++s)
            for (int t = 0; t < P; ++t)
              MOE_CUDA_CHECK(cudaMemcpyAsync((ranks[t].*to).as<unsigned char>() + block * s,
                                             (ranks[s].*from).as<unsigned char>() + block * t, block,
                                             cudaMemcpyDeviceToDevice, stream.handle()));
        };
        exchange(&Rank::send, &Rank::recv, L.dispatch_block_bytes());
        for (int r = 0; r < P; ++r) {
          Rank& k = ranks[r];
          if (grouped) {
            kep::GroupedRowsArgs e;
            e.wire = g;
            e.dims = d;
            e.local_experts = static_cast<int>(map.experts_of(r).size());
            e.experts.gate_up = k.gu.as<const void* const>();
            e.experts.down = k.dn.as<const void* const>();
            e.recv = k.recv.as<unsigned char>();
            e.combine_send = k.csend.as<unsigned char>();
            e.status = k.status.as<unsigned>();
            e.scratch = k.grouped.data();
            e.scratch_bytes = k.grouped.bytes();
            kep::enqueue_grouped_rows(e, stream.handle());
          } else {
            kep::ExpertRowsArgs e;
            e.wire = g;
            e.dims = d;
            e.local_experts = static_cast<int>(map.experts_of(r).size());
            e.gate_up = k.gu.as<const void* const>();
            e.down = k.dn.as<const void* const>();
            e.recv = k.recv.as<unsigned char>();
            e.combine_send = k.csend.as<unsigned char>();
            e.status = k.status.as<unsigned>();
            kep::enqueue_expert_rows(e, stream.handle());
          }
          kep::SharedRowsArgs s;
          s.dims = d;
          s.m = m;
          s.x = k.x.as<__nv_bfloat16>();
          s.gate_up = shared_gu.as<const void* const>();
          s.down = shared_dn.as<const void* const>();
          s.out = k.shared_out.as<float>();
          kep::enqueue_shared_rows(s, stream.handle());
        }
        exchange(&Rank::csend, &Rank::crecv, L.combine_block_bytes());
        for (int r = 0; r < P; ++r) {
          kep::CombineArgs c;
          c.wire = g;
          c.m = m;
          c.row_of = ranks[r].row_of.as<int>();
          c.combine_recv = ranks[r].crecv.as<unsigned char>();
          c.shared = d.shared ? ranks[r].shared_out.as<float>() : nullptr;
          c.out = ranks[r].out.as<__nv_bfloat16>();
          kep::enqueue_combine_returned(c, stream.handle());
        }
        stream.drain();
        const ep::ShardedStep ref = ep::sharded_step_reference(d, seed, map, xs, m, m);
        for (int r = 0; r < P; ++r) {
          CAPTURE(r);
          CHECK(download<unsigned>(ranks[r].status, 1)[0] == 0u);
          const auto out = download<std::uint16_t>(ranks[r].out, static_cast<std::size_t>(m) * d.hidden);
          double num = 0, den = 0;
          for (std::size_t i = 0; i < out.size(); ++i) {
            const double o = kernels::bf16_bits_to_float(out[i]), e = ref.out[r][i];
            num += (o - e) * (o - e);
            den += e * e;
          }
          REQUIRE(den > 0);
          // The single-device kernels' bound (probes/layer_check.hpp); fp32 routing may flip a
          // near-tie, which moves one token by O(1) and fails loudly rather than silently.
          CHECK(std::sqrt(num / den) <= 2e-2);
        }
      }
    }
  }
}
