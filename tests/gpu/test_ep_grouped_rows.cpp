// The expert-parallel grouped path on one GPU (kernels/ep/grouped_rows.cu): random received
// records (random counts, slots, weights and rows) through the grouping, the expert GEMM stages
// and the combine rows. The grouping must equal its host index math exactly
// (group_received_host, CPU-tested against the sharded reference), each combine row the
// sharded CPU reference's partial (expert_partials_host) within the single-device kernel
// tests' layer bounds (tests/gpu/test_moe_kernels.cu: relative L2 below 1e-2 for bf16 and
// 2e-2 for int4, max |d| at most 5e-2 max |ref|), at batch sizes that take each family
// (decode at one token and a few, tensor-core tiles, mma), both weight formats. Scratch and
// combine buffers are poisoned (0xFF) first; records past a block's count stay untouched.
// MOE_TEST_SEED replays the random inputs.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

#include "common/cuda_check.hpp"
#include "engine/device_allocator.hpp"
#include "engine/ep/expert_map.hpp"
#include "engine/ep/sharded_reference.hpp"
#include "engine/ep/wire_layout.hpp"
#include "engine/stream.hpp"
#include "kernels/ep/ep_kernels.hpp"
#include "kernels/ep/received_grouping.hpp"
#include "kernels/moe/bf16.hpp"
#include "kernels/moe/forward.hpp"
#include "kernels/moe/generate.hpp"
#include "support/device_transfer.hpp"
#include "support/gpu_test.hpp"

using namespace moe;
namespace kep = moe::kernels::ep;

namespace {

std::uint64_t test_seed() {
  static const std::uint64_t s = [] {
    const char* env = std::getenv("MOE_TEST_SEED");
    const std::uint64_t v = env ? std::strtoull(env, nullptr, 0) : std::random_device{}();
    std::printf("test_ep_grouped_rows: MOE_TEST_SEED=%llu\n", static_cast<unsigned long long>(v));
    return v;
  }();
  return s;
}

using test::download;
using test::upload;

kernels::MoeDims test_dims(kernels::WeightFormat format) {
  kernels::MoeDims d;
  d.hidden = 256;
  d.inter = 128;
  d.experts = 12;
  d.top_k = 4;
  d.format = format;
  return d;
}

// A receive buffer of rank `self` as the exchange would leave it: per source a random count
// (at least one block full), each record a random token, top-k distinct experts of which at
// least one is self's, random weights and bf16 rows. Padding and unused records are 0xAB.
std::vector<unsigned char> random_receive(const ep::WireLayout& L, const ep::ExpertMap& map, int self,
                                          std::mt19937_64& rng) {
  std::vector<unsigned char> recv(L.dispatch_bytes(), 0xAB);
  const std::vector<int>& mine = map.experts_of(self);
  const int full = static_cast<int>(rng() % L.ranks);
  for (int s = 0; s < L.ranks; ++s) {
    unsigned char* block = recv.data() + L.dispatch_block_bytes() * s;
    const std::int32_t count = s == full ? L.capacity : static_cast<std::int32_t>(rng() % (L.capacity + 1));
    std::memset(block, 0, ep::WireLayout::kHeaderBytes);
    std::memcpy(block, &count, 4);
    for (int r = 0; r < count; ++r) {
      unsigned char* rec = block + ep::WireLayout::kHeaderBytes + L.dispatch_row_bytes() * r;
      const std::int32_t token = static_cast<std::int32_t>(rng() % 1000);
      std::memcpy(rec + ep::WireLayout::token_offset(), &token, 4);
      std::vector<int> experts(map.experts());
      for (int e = 0; e < map.experts(); ++e) experts[e] = e;
      std::shuffle(experts.begin(), experts.end(), rng);
      std::vector<std::int32_t> slots(L.top_k);
      bool any = false;
      for (int k = 0; k < L.top_k; ++k) {
        slots[k] = map.owner(experts[k]) == self ? map.local_index(experts[k]) : -1;
        any = any || slots[k] >= 0;
      }
      // A record only crosses to a rank that owns one of its experts.
      if (!any) slots[rng() % L.top_k] = static_cast<std::int32_t>(rng() % mine.size());
      for (int k = 0; k < L.top_k; ++k) {
        const float w = static_cast<float>(rng() % 1000 + 1) / 1000.0f;
        std::memcpy(rec + ep::WireLayout::experts_offset() + 4 * k, &slots[k], 4);
        std::memcpy(rec + L.weights_offset() + 4 * k, &w, 4);
      }
      for (int h = 0; h < L.hidden; ++h) {
        const float v = static_cast<float>(static_cast<double>(rng() % 2001) / 1000.0 - 1.0);
        const std::uint16_t b = kernels::float_to_bf16_bits(v);
        std::memcpy(rec + L.hidden_offset() + 2 * h, &b, 2);
      }
    }
  }
  return recv;
}

// Rank self's bank of local experts (global ids), weights in the layout `options` reads.
struct Bank {
  std::vector<DeviceBuffer> buffers;
  DeviceBuffer gate_up, down, gate_up_scales, down_scales;
  kernels::ExpertTable table;

  Bank(DeviceAllocator& alloc, const kernels::MoeDims& d, std::uint64_t seed, const std::vector<int>& experts,
       const kernels::ForwardOptions& options, cudaStream_t stream) {
    std::vector<const void*> ptrs[4];  // gate_up, its scales, down, its scales
    for (int e : experts)
      for (int which = 0; which < 2; ++which) {
        const kernels::TensorKind kind = which == 0 ? kernels::TensorKind::gate_up : kernels::TensorKind::down;
        buffers.push_back(alloc.allocate(kernels::expert_weight_bytes(d, kind)));
        void* w = buffers.back().data();
        void* sc = nullptr;
        if (d.format == kernels::WeightFormat::int4) {
          buffers.push_back(alloc.allocate(kernels::expert_scale_bytes(d, kind)));
          sc = buffers.back().data();
        }
        kernels::generate_expert_tensor(d, kind, seed, e, w, sc, stream,
                                        kernels::int4_layout(options, d, kernels::current_device_sm()),
                                        kernels::bf16_layout(options, d, kernels::current_device_sm()));
        ptrs[2 * which].push_back(w);
        ptrs[2 * which + 1].push_back(sc);
      }
    gate_up = upload(alloc, ptrs[0]);
    down = upload(alloc, ptrs[2]);
    table.gate_up = gate_up.as<const void* const>();
    table.down = down.as<const void* const>();
    table.int4_layout = kernels::int4_layout(options, d, kernels::current_device_sm());
    table.bf16_layout = kernels::bf16_layout(options, d, kernels::current_device_sm());
    if (d.format == kernels::WeightFormat::int4) {
      gate_up_scales = upload(alloc, ptrs[1]);
      down_scales = upload(alloc, ptrs[3]);
      table.gate_up_scales = gate_up_scales.as<const void* const>();
      table.down_scales = down_scales.as<const void* const>();
    }
  }
};

// The device's grouping outputs equal the host index math's.
void check_grouping(const kep::GroupedRowsLayout& l, const void* scratch, const kep::ReceivedGrouping& want) {
  const kernels::ScratchLayout& f = l.forward;
  const int E = l.batch.experts;
  const std::size_t pairs = static_cast<std::size_t>(l.rows) * l.batch.top_k;
  const char* s = static_cast<const char*>(scratch);
  CHECK(download<int>(s + f.topk_ids, pairs) == want.slot_expert);
  CHECK(download<float>(s + f.topk_weights, pairs) == want.slot_weight);
  CHECK(download<int>(s + f.expert_counts, E) == want.counts);
  CHECK(download<int>(s + f.expert_offsets, E + 1) == want.offsets);
  CHECK(download<int>(s + f.num_active, 1)[0] == want.num_active);
  CHECK(download<int>(s + f.active_experts, E) == want.active);
  const int tiles = download<int>(s + f.num_tiles, 1)[0];
  REQUIRE(tiles == static_cast<int>(want.tiles.size()));
  const std::vector<int> got_tiles = download<int>(s + f.tiles, 2 * static_cast<std::size_t>(tiles));
  for (int i = 0; i < tiles; ++i) {
    CHECK(got_tiles[2 * i] == want.tiles[i][0]);
    CHECK(got_tiles[2 * i + 1] == want.tiles[i][1]);
  }
  CHECK(download<int>(s + f.sorted_pairs, pairs) == want.sorted_pairs);
  CHECK(download<int>(s + f.pair_position, pairs) == want.pair_position);
}

struct Run {
  std::vector<unsigned char> combine;  // combine_send as written
  unsigned status = 0;
};

// One grouped-rows pass over `recv` on fresh, poisoned buffers.
Run run_grouped(DeviceAllocator& alloc, Stream& stream, const kep::GroupedRowsArgs& base, const ep::WireLayout& L,
                const std::vector<unsigned char>& recv, const kep::ReceivedGrouping* grouping) {
  DeviceBuffer recv_d = upload(alloc, recv);
  DeviceBuffer combine = alloc.allocate(L.combine_bytes());
  DeviceBuffer status = alloc.allocate(sizeof(unsigned));
  const kep::GroupedRowsLayout l = kep::grouped_rows_layout(base.dims, L.geometry(), base.local_experts);
  DeviceBuffer scratch = alloc.allocate(l.total);
  MOE_CUDA_CHECK(cudaMemset(combine.data(), 0xFF, combine.bytes()));
  MOE_CUDA_CHECK(cudaMemset(scratch.data(), 0xFF, scratch.bytes()));
  MOE_CUDA_CHECK(cudaMemset(status.data(), 0, sizeof(unsigned)));
  MOE_CUDA_CHECK(cudaDeviceSynchronize());  // the legacy-stream poison lands before the stream's kernels
  kep::GroupedRowsArgs a = base;
  a.wire = L.geometry();
  a.recv = recv_d.as<unsigned char>();
  a.combine_send = combine.as<unsigned char>();
  a.status = status.as<unsigned>();
  a.scratch = scratch.data();
  a.scratch_bytes = scratch.bytes();
  kep::enqueue_grouped_rows(a, stream.handle());
  stream.drain();
  if (grouping) check_grouping(l, scratch.data(), *grouping);
  return {download<unsigned char>(combine.data(), L.combine_bytes()), download<unsigned>(status.data(), 1)[0]};
}

float combine_value(const Run& run, const ep::WireLayout& L, int s, int r, int n) {
  float v = 0;
  std::memcpy(&v, run.combine.data() + L.combine_block_bytes() * s + ep::WireLayout::kHeaderBytes +
                      L.combine_row_bytes() * r + 4 * static_cast<std::size_t>(n), 4);
  return v;
}

// Every combine row of a record equals the reference's partial within the layer bounds; past
// a block's count nothing was written.
void check_rows(const Run& run, const ep::WireLayout& L, const std::vector<ep::ReceivedRow>& rows,
                const std::vector<double>& ref, kernels::WeightFormat f) {
  double num = 0, den = 0, maxd = 0, maxr = 0;
  std::size_t nonfinite = 0;
  for (std::size_t j = 0; j < rows.size(); ++j)
    for (int n = 0; n < L.hidden; ++n) {
      const double g = combine_value(run, L, rows[j].source, rows[j].record, n), e = ref[j * L.hidden + n];
      if (!std::isfinite(g)) ++nonfinite;
      num += (g - e) * (g - e);
      den += e * e;
      maxd = std::max(maxd, std::abs(g - e));
      maxr = std::max(maxr, std::abs(e));
    }
  CHECK(nonfinite == 0);
  REQUIRE(den > 0);
  const double rel = std::sqrt(num / den);
  CHECK_MESSAGE(rel < (f == kernels::WeightFormat::bf16 ? 1e-2 : 2e-2), "relative L2 " << rel);
  CHECK_MESSAGE(maxd <= 5e-2 * maxr, "max |d| " << maxd << " vs max|ref| " << maxr);
  // Records past each block's count, and the headers, still hold the poison.
  std::vector<int> counts(L.ranks, 0);
  for (const ep::ReceivedRow& r : rows) counts[r.source] = std::max(counts[r.source], r.record + 1);
  for (int s = 0; s < L.ranks; ++s) {
    const unsigned char* block = run.combine.data() + L.combine_block_bytes() * s;
    for (std::size_t b = 0; b < ep::WireLayout::kHeaderBytes; ++b) CHECK(block[b] == 0xFF);
    for (int r = counts[s]; r < L.capacity; ++r) {
      const unsigned char* row = block + ep::WireLayout::kHeaderBytes + L.combine_row_bytes() * r;
      bool poisoned = true;
      for (std::size_t b = 0; b < L.combine_row_bytes(); ++b) poisoned = poisoned && row[b] == 0xFF;
      CHECK_MESSAGE(poisoned, "record " << r << " of block " << s << " past its count was written");
    }
  }
}

}  // namespace

TEST_CASE("grouped rows: random received records match the sharded CPU reference on every GEMM family") {
  test::test_device();
  DeviceAllocator alloc;
  Stream stream;
  std::mt19937_64 rng(test_seed());
  // (ranks, capacity): a batch of one token (decode's one-token kernels), of four (decode), of
  // 15 and 320 (the tensor-core tiles, int4's decode bound being 8; at 320 rank 4's two experts
  // of an uneven map get more than one tile of pairs each).
  const std::pair<int, int> batches[] = {{1, 1}, {2, 2}, {3, 5}, {5, 64}};
  for (kernels::WeightFormat format : {kernels::WeightFormat::bf16, kernels::WeightFormat::int4})
    for (kernels::GemmFamily family : {kernels::GemmFamily::automatic, kernels::GemmFamily::mma})
      for (const auto& [P, capacity] : batches) {
        const kernels::MoeDims d = test_dims(format);
        kernels::ForwardOptions options;
        options.gemm = family;
        const std::uint64_t seed = rng();
        const int self = P - 1;  // the last rank: the smaller block of an uneven map
        const std::string format_name(kernels::to_string(format));
        CAPTURE(format_name);
        CAPTURE(static_cast<int>(family));
        CAPTURE(P);
        CAPTURE(capacity);
        const ep::ExpertMap map = ep::ExpertMap::contiguous(d.experts, P);
        const ep::WireLayout L = ep::make_wire_layout(d.hidden, d.top_k, P, capacity);
        const int local = static_cast<int>(map.experts_of(self).size());
        const Bank bank(alloc, d, seed, map.experts_of(self), options, stream.handle());
        kep::GroupedRowsArgs a;
        a.dims = d;
        a.local_experts = local;
        a.experts = bank.table;
        a.options = options;
        const std::vector<unsigned char> recv = random_receive(L, map, self, rng);
        const kep::ReceivedGrouping want = kep::group_received_host(L.geometry(), local, recv.data());
        REQUIRE(want.status == 0u);
        const Run run = run_grouped(alloc, stream, a, L, recv, &want);
        CHECK(run.status == 0u);
        const std::vector<ep::ReceivedRow> rows = ep::unpack_received_host(L, recv.data());
        check_rows(run, L, rows, ep::expert_partials_host(d, seed, map, self, rows), format);
        // The same records again: the same bits (fixed order, no atomics in the sums).
        CHECK(run_grouped(alloc, stream, a, L, recv, nullptr).combine == run.combine);
      }
}

TEST_CASE("grouped rows: an impossible count or expert is flagged; the other blocks still match") {
  test::test_device();
  DeviceAllocator alloc;
  Stream stream;
  std::mt19937_64 rng(test_seed() + 1);
  const kernels::MoeDims d = test_dims(kernels::WeightFormat::bf16);
  const std::uint64_t seed = rng();
  const int P = 3, capacity = 6, self = 1;
  const ep::ExpertMap map = ep::ExpertMap::contiguous(d.experts, P);
  const ep::WireLayout L = ep::make_wire_layout(d.hidden, d.top_k, P, capacity);
  const int local = static_cast<int>(map.experts_of(self).size());
  const Bank bank(alloc, d, seed, map.experts_of(self), {}, stream.handle());
  kep::GroupedRowsArgs a;
  a.dims = d;
  a.local_experts = local;
  a.experts = bank.table;
  std::vector<unsigned char> recv = random_receive(L, map, self, rng);
  const std::int32_t over = capacity + 1;
  std::memcpy(recv.data() + L.dispatch_block_bytes() * 2, &over, 4);  // block 2: impossible
  const kep::ReceivedGrouping want = kep::group_received_host(L.geometry(), local, recv.data());
  REQUIRE(want.status == kep::kBadCount);
  const Run run = run_grouped(alloc, stream, a, L, recv, &want);
  CHECK(run.status == kep::kBadCount);
  // The good blocks' rows against the reference (the reference refuses the bad block: drop it).
  std::vector<unsigned char> good = recv;
  const std::int32_t none = 0;
  std::memcpy(good.data() + L.dispatch_block_bytes() * 2, &none, 4);
  const std::vector<ep::ReceivedRow> rows = ep::unpack_received_host(L, good.data());
  if (!rows.empty()) check_rows(run, L, rows, ep::expert_partials_host(d, seed, map, self, rows), d.format);

  // An expert outside the bank in a record of block 0: kBadExpert, as the per-row kernel.
  std::vector<unsigned char> bad_expert = good;
  std::int32_t count0 = 0;
  std::memcpy(&count0, bad_expert.data(), 4);
  if (count0 == 0) {
    count0 = 1;
    std::memcpy(bad_expert.data(), &count0, 4);
  }
  const std::int32_t outside = local;
  std::memcpy(bad_expert.data() + ep::WireLayout::kHeaderBytes + ep::WireLayout::experts_offset(), &outside, 4);
  const kep::ReceivedGrouping want_bad = kep::group_received_host(L.geometry(), local, bad_expert.data());
  CHECK((want_bad.status & kep::kBadExpert) != 0u);
  CHECK(run_grouped(alloc, stream, a, L, bad_expert, &want_bad).status == want_bad.status);
}
