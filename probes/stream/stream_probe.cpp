// Probe `stream`: what a streaming kernel reaches on this GPU, the figure the bandwidth probe's
// expert GEMMs are judged against (kernels/bandwidth/ring_stream.hpp). The streaming expert
// GEMM's pipeline (one block an SM, a producer warp's bulk copies into a ring of shared-memory
// stages for each of 8 consumer warps) over layer-sized byte ranges: alone (math none) and
// feeding the tensor cores as the bf16 and int4 expert GEMMs do, for several ring shapes; each
// case's GB/s over the read ceiling of the same run. A sample is a CUDA graph of back-to-back
// launches over distinct ranges that together exceed the L2 four times, as a forward's layers
// follow one another, so launch gaps count as a decode step pays them and no range is read
// from L2. Every sample starts from a flushed L2 (--l2 cold), and every word's XOR is checked
// against the CPU's before a figure counts.
#include <future>
#include <string>
#include <vector>

#include "common/cuda_check.hpp"
#include "engine/captured_graph.hpp"
#include "kernels/bandwidth/bandwidth_kernels.hpp"
#include "kernels/bandwidth/ring_stream.hpp"
#include "probes/copy/read_ceiling.hpp"
#include "probes/evidence.hpp"

namespace moe {

namespace {

constexpr std::uint32_t kPatternSeed = 0x57ea;

struct RingCase {
  kernels::RingMath math;
  std::size_t bytes;
  kernels::RingShape ring;
  std::string name;  // e.g. int4-20MB, pipeline-20MB-3x4KB
};

// Byte ranges of one layer's expert weights at decode sizes (a qwen3-30b-a3b int4 step reads
// about 5 MB a layer, a mixtral-8x7b bf16 one about 700 MB) on the expert GEMM's rings (2 slots
// of 8 KB a warp), and the pipeline alone over other rings at 20 MB. Names: MATH-SIZE, then
// -RING (slots a warp x stage) where it is not the expert GEMM's.
const std::vector<RingCase>& ring_cases() {
  static const std::vector<RingCase> cases = [] {
    using kernels::RingMath;
    const kernels::RingShape gemm_ring{8 * 1024, 2};
    std::vector<RingCase> out;
    auto add = [&](RingMath math, std::size_t mb, kernels::RingShape r, bool ring_in_name) {
      std::string name = std::string(math == RingMath::none ? "pipeline" : kernels::to_string(math)) + "-" +
                         std::to_string(mb) + "MB";
      if (ring_in_name) name += "-" + std::to_string(r.slots) + "x" + std::to_string(r.stage_bytes / 1024) + "KB";
      out.push_back({math, mb * 1000 * 1000, r, name});
    };
    for (std::size_t mb : {5, 20, 50, 200}) add(RingMath::none, mb, gemm_ring, false);
    for (kernels::RingShape r : {kernels::RingShape{8 * 1024, 3}, kernels::RingShape{4 * 1024, 3}, kernels::RingShape{2 * 1024, 3}})
      add(RingMath::none, 20, r, true);
    for (std::size_t mb : {5, 20, 200}) add(RingMath::bf16, mb, gemm_ring, false);
    for (std::size_t mb : {5, 20, 200}) add(RingMath::int4, mb, gemm_ring, false);
    return out;
  }();
  return cases;
}

std::vector<std::string> ring_case_names() {
  std::vector<std::string> names;
  for (const RingCase& c : ring_cases()) names.push_back(c.name);
  return names;
}

report::Metric metric(double v, const char* unit) { return report::Metric{v, unit}; }

// Launches a sample: enough ranges of `bytes` to cover four L2s, at least two.
std::size_t launches_for(std::size_t bytes, std::size_t l2_bytes) {
  return std::max<std::size_t>(2, (4 * l2_bytes + bytes - 1) / bytes);
}

}  // namespace

extern const SweepDeclaration stream_sweep;
const SweepDeclaration stream_sweep{.cases = ring_case_names()};

void run_stream_probe(ProbeState& state) {
  if (!kernels::ring_stream_supported())
    throw EnvironmentError("probe stream needs bulk copies (sm_90 or newer); this GPU is sm_" +
                           std::to_string(state.device().props.major) + std::to_string(state.device().props.minor));
  const std::size_t l2_bytes = static_cast<std::size_t>(state.device().props.l2CacheSize);
  std::size_t largest = 0;  // the buffer: the most bytes a sample reads
  for (const SweepPoint& p : state.points())
    for (const RingCase& c : ring_cases())
      if (c.name == p.case_name) largest = std::max(largest, c.bytes * launches_for(c.bytes, l2_bytes));
  if (largest == 0) return;  // every case filtered out
  const ReadCeiling rc = checked_read_ceiling(state);
  Stream stream;
  DeviceBuffer src = state.allocator().allocate(largest);
  DeviceBuffer xor_out = state.allocator().allocate(sizeof(std::uint32_t));
  DeviceBuffer sink = state.allocator().allocate(sizeof(float) * kernels::ring_stream_blocks());
  kernels::fill_pattern(src.as<std::uint32_t>(), largest / sizeof(std::uint32_t), kPatternSeed, stream.handle());
  for (const SweepPoint& point : state.points()) {
    const RingCase* rcase = nullptr;
    for (const RingCase& c : ring_cases())
      if (c.name == point.case_name) rcase = &c;
    if (!rcase) continue;
    const std::size_t words = rcase->bytes / sizeof(std::uint32_t);
    auto expected = std::async(std::launch::async, kernels::pattern_xor_reference, words, kPatternSeed);
    report::CaseResult c = state.start_case(point);
    auto launch = [&](std::size_t range) {
      kernels::ring_stream(src.as<unsigned char>() + range * rcase->bytes, rcase->bytes, rcase->ring, rcase->math,
                           xor_out.as<std::uint32_t>(), sink.as<float>(), stream.handle());
    };
    // The check first, on its own run: the XOR of every word the consumers read.
    MOE_CUDA_CHECK(cudaMemsetAsync(xor_out.data(), 0, sizeof(std::uint32_t), stream.handle()));
    launch(0);
    stream.drain();
    std::uint32_t got = 0;
    MOE_CUDA_CHECK(cudaMemcpy(&got, xor_out.data(), sizeof got, cudaMemcpyDeviceToHost));
    const std::uint32_t want = expected.get();
    c.checks.push_back({"every_word_read_once", got == want,
                        "XOR of the words the consumers read: GPU " + std::to_string(got) + ", CPU " +
                            std::to_string(want)});
    const std::size_t launches = launches_for(rcase->bytes, l2_bytes);
    CapturedGraph graph(stream, [&] {
      for (std::size_t i = 0; i < launches; ++i) launch(i);
    });
    report::Measurement m =
        state.sampler().measure(stream, "stream/" + rcase->name, [&] { graph.replay(stream); });
    const double read = static_cast<double>(rcase->bytes * launches);
    const double gbps = read / (m.gpu_time().median * 1e-6) * 1e-9;
    const double pct = 100.0 * gbps / rc.gbps;
    c.metrics["bytes"] = metric(static_cast<double>(rcase->bytes), "B");
    c.metrics["gbps"] = metric(gbps, "GB/s");
    c.metrics["read_ceiling_gbps"] = metric(rc.gbps, "GB/s");
    c.metrics["pct_of_read_ceiling"] = metric(pct, "%");
    c.metrics["launches_per_sample"] = metric(static_cast<double>(launches), "launches");
    c.parameters = {{"bytes", rcase->bytes},
                    {"math", kernels::to_string(rcase->math)},
                    {"stage_bytes", rcase->ring.stage_bytes},
                    {"slots_per_warp", rcase->ring.slots}};
    const std::size_t flushed = m.l2_flushes.value_or(0);
    c.evidence["l2_flushes"] = flushed;
    c.prove("l2_cold", flushed >= m.samples() && m.samples() > 0,
            std::to_string(flushed) + " of " + std::to_string(m.samples()) +
                " samples followed an L2 flush (run with --l2 cold)");
    c.checks.push_back({"within_read_ceiling", pct <= 100.0,
                        "ran at " + std::to_string(pct) + "% of the read ceiling: above 100% the byte count is wrong"});
    c.measurements["main"] = std::move(m);
    c.conclude("bytes of the sample's launches over its median GPU time" + sampling_flags(c.measurements.at("main")));
    state.add_case(std::move(c));
  }
}

}  // namespace moe
