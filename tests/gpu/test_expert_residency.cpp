// Expert residency's device side: the checksum kernel against the CPU over device and mapped
// host memory, a transition (hot to cold and back) leaving the output bit-identical, and a
// fault at every step of a transition rolling it back with every checksum unchanged.
#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "common/cuda_check.hpp"
#include "engine/engine.hpp"
#include "engine/pinned_buffer.hpp"
#include "kernels/moe/generate.hpp"
#include "kernels/moe/weights_checksum.hpp"
#include "probes/layer_check.hpp"
#include "support/gpu_test.hpp"

using namespace moe;

namespace {

std::vector<std::uint64_t> layer_checksums(Engine& e) {
  const kernels::MoeDims& dims = e.layer(0).config().dims;
  const std::size_t n = static_cast<std::size_t>(dims.total_experts()) * kernels::kExpertTensors;
  DeviceAllocator plain(DeviceAllocator::Mode::plain);
  DeviceBuffer out = plain.allocate(n * 8);
  MOE_CUDA_CHECK(cudaMemsetAsync(out.data(), 0xA5, n * 8, e.stream().handle()));  // poisoned: every entry written
  kernels::enqueue_expert_checksums(dims, e.layer(0).weights().resident_table(e.stream()), out.as<std::uint64_t>(),
                                    e.stream().handle());
  e.stream().drain();
  std::vector<std::uint64_t> host(n);
  MOE_CUDA_CHECK(cudaMemcpy(host.data(), out.data(), n * 8, cudaMemcpyDeviceToHost));
  return host;
}

// Why layer 0's resident tables (read back from the device) do not name exactly the live copy of
// every tensor where its expert's placement says it lives, with nothing left in the other place;
// empty when they do. Checked before a forward, so a table naming a freed copy is a failed check
// here rather than an illegal address that poisons the context for every later case.
std::string tables_off_placement(Engine& e) {
  const MoeWeights& w = e.layer(0).weights();
  const kernels::MoeDims& dims = e.layer(0).config().dims;
  const std::size_t n = static_cast<std::size_t>(dims.total_experts());
  const kernels::ExpertTable table = e.layer(0).weights().resident_table(e.stream());
  e.stream().drain();
  const void* const* arrays[kernels::kExpertTensors] = {table.gate_up, table.gate_up_scales, table.down, table.down_scales};
  std::string why;
  for (int t = 0; t < kernels::kExpertTensors; ++t) {
    std::vector<const void*> got(n);
    MOE_CUDA_CHECK(cudaMemcpy(got.data(), arrays[t], n * sizeof(void*), cudaMemcpyDeviceToHost));
    for (std::size_t x = 0; x < n; ++x) {
      const auto& b = w.experts()[x];
      const PinnedBuffer& h = b.host[static_cast<std::size_t>(t)];
      const bool cold = x < w.placement().size() && w.placement()[x] == Placement::host;
      const void* want = cold ? h.device_pointer() : b.device(t).data();
      const std::string at = "expert " + std::to_string(x) + " tensor " + std::to_string(t) + (cold ? " (host)" : " (device)");
      if (got[x] != want) why += at + ": the table names another copy than the placement's; ";
      if (cold ? static_cast<bool>(b.device(t)) : static_cast<bool>(h)) why += at + ": a copy is left in the other place; ";
      const bool exists = t % 2 == 0 || dims.format == kernels::WeightFormat::int4;  // bf16 has no scales
      if (exists && !(cold ? static_cast<bool>(h) : static_cast<bool>(b.device(t)))) why += at + ": no copy where the placement says; ";
    }
  }
  return why;
}

EngineConfig tiny(kernels::WeightFormat format) {
  const auto library = load_shape_library(std::filesystem::path(test::fixtures_dir()) / "shapes");
  EngineConfig c;
  c.shape = resolve_shape("tiny", library);
  c.format = format;
  c.layers = 1;
  c.seed = std::random_device{}();
  return c;
}

std::vector<Placement> every(int experts, Placement p) { return std::vector<Placement>(static_cast<std::size_t>(experts), p); }

}  // namespace

TEST_CASE("the checksum kernel equals the CPU's over every expert tensor, device or host") {
  const Device& device = test::test_device();
  for (auto format : {kernels::WeightFormat::bf16, kernels::WeightFormat::int4}) {
    CAPTURE(kernels::to_string(format));
    DeviceAllocator allocator;
    Engine e(tiny(format), allocator, device);
    e.set_input(2, 1);
    e.forward();
    const kernels::MoeDims dims = e.layer(0).config().dims;
    std::vector<Placement> half = every(dims.experts, Placement::device);
    for (std::size_t i = 1; i < half.size(); i += 2) half[i] = Placement::host;
    e.apply_residency(0, {half, false, ""});
    const std::vector<std::uint64_t> gpu = layer_checksums(e);
    const MoeWeights& w = e.layer(0).weights();
    for (int x = 0; x < dims.total_experts(); ++x)
      for (int t = 0; t < kernels::kExpertTensors; ++t) {
        CAPTURE(x);
        CAPTURE(t);
        const auto& b = w.experts()[static_cast<std::size_t>(x)];
        const PinnedBuffer& h = b.host[static_cast<std::size_t>(t)];
        std::vector<unsigned char> bytes(h ? h.bytes() : b.device(t).bytes());
        if (h) std::memcpy(bytes.data(), h.host(), bytes.size());
        else if (!bytes.empty()) MOE_CUDA_CHECK(cudaMemcpy(bytes.data(), b.device(t).data(), bytes.size(), cudaMemcpyDeviceToHost));
        CHECK(gpu[static_cast<std::size_t>(x) * kernels::kExpertTensors + t] ==
              (bytes.empty() ? 0 : kernels::checksum_host(bytes.data(), bytes.size())));
      }
  }
}

TEST_CASE("cold experts give the all-resident output bit for bit, and the device bytes come back") {
  const Device& device = test::test_device();
  for (auto format : {kernels::WeightFormat::bf16, kernels::WeightFormat::int4}) {
    for (int m : {1, 4, 64}) {
      CAPTURE(kernels::to_string(format));
      CAPTURE(m);
      DeviceAllocator allocator;
      Engine e(tiny(format), allocator, device);
      e.set_input(m, 7);
      e.forward();
      e.stream().drain();  // the engine's stream is non-blocking: copy_to_host's cudaMemcpy does not wait for it
      const std::size_t elements = static_cast<std::size_t>(m) * e.config().shape.hidden;
      const std::vector<std::uint16_t> resident = copy_to_host(e.output(0), elements);
      const int E = e.layer(0).config().dims.experts;
      const std::size_t in_use = allocator.stats().bytes_in_use;
      e.apply_residency(0, {every(E, Placement::host), false, ""});
      CHECK(in_use - allocator.stats().bytes_in_use == static_cast<std::size_t>(E) * e.layer(0).weights().expert_bytes());
      const std::string cold_off = tables_off_placement(e);
      INFO("all cold: " << cold_off);
      REQUIRE(cold_off.empty());  // a forward over such tables may read freed memory
      MOE_CUDA_CHECK(cudaMemsetAsync(const_cast<__nv_bfloat16*>(e.output(0)), 0xFF, elements * 2,
                                     e.stream().handle()));  // poisoned
      e.forward();
      e.stream().drain();
      CHECK(count_differences(e.output(0), resident, elements) == 0);
      e.apply_residency(0, {every(E, Placement::device), false, ""});
      CHECK(allocator.stats().bytes_in_use == in_use);
      const auto& counters = e.layer(0).weights().residency_counters();
      CHECK(counters.device_bytes_released == counters.device_bytes_taken_back);
      // Back on the device: the tables name the new device copies, not the host copies just freed.
      const std::string back_off = tables_off_placement(e);
      INFO("all back: " << back_off);
      REQUIRE(back_off.empty());
      MOE_CUDA_CHECK(cudaMemsetAsync(const_cast<__nv_bfloat16*>(e.output(0)), 0xFF, elements * 2,
                                     e.stream().handle()));  // poisoned again
      e.forward();
      e.stream().drain();
      CHECK(count_differences(e.output(0), resident, elements) == 0);
    }
  }
}

TEST_CASE("a fault at any step of a transition rolls it back: checksums and placement unchanged") {
  const Device& device = test::test_device();
  DeviceAllocator allocator;
  Engine e(tiny(kernels::WeightFormat::int4), allocator, device);  // int4: four tensors an expert
  e.set_input(4, 3);
  e.forward();
  const int E = e.layer(0).config().dims.experts;
  std::vector<Placement> target = every(E, Placement::device);
  for (int x = 2; x < E; ++x) target[static_cast<std::size_t>(x)] = Placement::host;
  const std::vector<std::uint64_t> before = layer_checksums(e);
  const std::size_t steps = static_cast<std::size_t>(E - 2) * 4;
  for (std::size_t n = 1; n <= steps; ++n) {
    CAPTURE(n);
    CHECK_THROWS_AS(e.apply_residency(0, {target, false, ""}, {n}), ResidencyFault);
    CHECK(e.layer(0).weights().placement() == every(E, Placement::device));
    CHECK(layer_checksums(e) == before);
  }
  CHECK(e.layer(0).weights().residency_counters().rollbacks == steps);
  e.apply_residency(0, {target, false, ""}, {steps + 1});  // past the last step: never fires
  CHECK(e.layer(0).weights().placement() == target);
  const std::string applied_off = tables_off_placement(e);
  INFO("applied: " << applied_off);
  REQUIRE(applied_off.empty());
  CHECK(layer_checksums(e) == before);
  // And back: the tables follow the experts to their new device copies (the host ones are freed).
  e.apply_residency(0, {every(E, Placement::device), false, ""});
  CHECK(e.layer(0).weights().placement() == every(E, Placement::device));
  const std::string back_off = tables_off_placement(e);
  INFO("back: " << back_off);
  REQUIRE(back_off.empty());
  CHECK(layer_checksums(e) == before);
}

TEST_CASE("a transition is refused while a graph is captured, and allowed once it is dropped") {
  const Device& device = test::test_device();
  DeviceAllocator allocator;
  Engine e(tiny(kernels::WeightFormat::bf16), allocator, device);
  e.set_input(4, 3);
  e.forward();
  e.capture();
  const int E = e.layer(0).config().dims.experts;
  CHECK_THROWS_WITH_AS(e.apply_residency(0, {every(E, Placement::host), false, ""}),
                       doctest::Contains("captured graph(s) hold layer 0"), BoundaryRefused);
  CHECK(e.layer(0).weights().placement() == every(E, Placement::device));
  e.drop_graphs();
  e.apply_residency(0, {every(E, Placement::host), false, ""});
  CHECK(e.layer(0).weights().placement() == every(E, Placement::host));
}
