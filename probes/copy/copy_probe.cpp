// Probe `copy`: the memory ceilings every other figure is set against. Three cases over the
// same buffers: the read ceiling (bytes read), cudaMemcpyAsync device to device and an SM copy
// kernel (bytes read plus written). On an H200 reading alone runs ~7% faster
// than a copy, so the copy figures are reported beside the read ceiling, never instead of it.
#include <algorithm>
#include <future>

#include "common/cuda_check.hpp"
#include "engine/fault_injection.hpp"
#include "kernels/bandwidth/bandwidth_kernels.hpp"
#include "probes/copy/copy_evidence.hpp"
#include "probes/copy/read_ceiling.hpp"
#include "probes/evidence.hpp"

namespace moe {

namespace {

constexpr std::uint32_t kPatternSeed = 0x5eed;
// Bytes read plus written over the read ceiling, in percent, that a copy can reach at most.
constexpr double kMaxCopyPctOfReadCeiling = 200.0;

double gbps(std::size_t bytes, const report::Measurement& m) {
  return static_cast<double>(bytes) / (m.gpu_time().median * 1e-6) * 1e-9;
}

report::Metric metric(double v, const char* unit) { return report::Metric{v, unit}; }

// What a ceiling must show to count, measured rather than assumed: the timed kernel touched
// every byte of a buffer at least 4x the L2 (its content check, the XOR of every word read or
// every word copied, passed: a kernel that read less would not match), and the sampler's
// canary found the L2 cold after the flush before its samples; every sample has a completed
// event time (copy_evidence.hpp).
void prove_streams_defeat_l2(const ProbeState& state, report::CaseResult& c, std::size_t bytes,
                             const report::Measurement& m, const report::Check& content) {
  const CopyEvidence e = copy_evidence(bytes, state.device().l2_bytes, content.passed, m);
  c.evidence["buffer_over_l2"] = e.buffer_over_l2;
  c.evidence["samples"] = m.samples();
  c.evidence["samples_with_event_time"] = e.samples_timed;
  if (m.l2_observed) c.evidence["l2_observed_cold"] = e.l2_observed_cold;
  c.prove("buffer_defeats_l2", e.buffer_defeats_l2, e.buffer_detail);
  c.prove("samples_taken", e.samples_taken, e.samples_detail);
}

template <class T>
T read_scalar(const DeviceBuffer& buffer) {
  T value{};
  MOE_CUDA_CHECK(cudaMemcpy(&value, buffer.data(), sizeof(T), cudaMemcpyDeviceToHost));
  return value;
}

}  // namespace

std::size_t stream_buffer_bytes(const Device& device, std::size_t requested, int buffers) {
  constexpr std::size_t kDefault = std::size_t{4} << 30;
  const std::size_t min_bytes = 8 * device.l2_bytes;
  std::size_t bytes = requested ? requested : kDefault;
  // Leave a quarter of free memory for everything else in the run.
  const std::size_t budget = device.free_memory() / 4 * 3 / static_cast<std::size_t>(buffers);
  if (!requested && bytes > budget) bytes = budget;
  bytes = bytes / (std::size_t{1} << 20) * (std::size_t{1} << 20);  // whole MiB, 16-byte aligned
  if (requested && requested < min_bytes)
    throw UsageError("--copy-bytes " + std::to_string(requested) + " is below 8x the L2 of this "
                     "GPU (" + std::to_string(min_bytes) + " bytes): the ceiling would measure "
                     "the cache, not memory");
  if (bytes < min_bytes || bytes > budget)
    throw EnvironmentError("stream buffers need " + std::to_string(buffers) + " x " +
                           std::to_string(std::max(bytes, min_bytes) >> 20) + " MiB, " +
                           std::to_string(device.free_memory() >> 20) +
                           " MiB of device memory is free");
  return bytes;
}

ReadCeiling measure_read_ceiling(ProbeState& state, std::size_t bytes) {
  Stream stream;
  DeviceBuffer src = state.allocator().allocate(bytes);
  DeviceBuffer xor_out = state.allocator().allocate(sizeof(std::uint32_t));
  const std::size_t words = bytes / sizeof(std::uint32_t);
  kernels::fill_pattern(src.as<std::uint32_t>(), words, kPatternSeed, stream.handle());
  // The CPU reference runs on another thread while the GPU is timed.
  auto expected = std::async(std::launch::async, kernels::pattern_xor_reference, words,
                             kPatternSeed);
  const auto launch = kernels::StreamLaunch::for_device(state.device().sm_count);
  ReadCeiling rc;
  rc.bytes = bytes;
  rc.measurement = state.sampler().measure(stream, "copy/read", [&] {
    kernels::read_stream(src.data(), bytes, xor_out.as<std::uint32_t>(), launch, stream.handle());
  });
  const std::uint32_t got = read_scalar<std::uint32_t>(xor_out);
  const std::uint32_t want = expected.get();
  rc.check = {"read_xor_matches_cpu", got == want,
              "XOR of all words: GPU " + std::to_string(got) + ", CPU " + std::to_string(want)};
  rc.gbps = gbps(bytes, rc.measurement);
  return rc;
}

ReadCeiling checked_read_ceiling(ProbeState& state) {
  ReadCeiling rc = measure_read_ceiling(
      state, stream_buffer_bytes(state.device(), state.options().copy_bytes, 1));
  if (!rc.check.passed)
    throw Error(ExitCode::probe_error, "read ceiling kernel failed its check: " + rc.check.detail);
  return rc;
}

// No shape, format or M: three cases, each its own mode.
extern const SweepDeclaration copy_sweep;
const SweepDeclaration copy_sweep{.cases = {"read", "memcpy", "copy-kernel"},
                                  .modes = ModeAxis::case_name};

void run_copy_probe(ProbeState& state) {
  if (mutation_active(Mutation::illegal_address)) {
    // A planted fault: the process's CUDA context is unusable after this (sticky error).
    Stream stream;
    DeviceBuffer out = state.allocator().allocate(sizeof(std::uint32_t));
    const auto* wild = reinterpret_cast<const void*>(std::uintptr_t{0x10} << 40);
    kernels::read_stream(wild, std::size_t{1} << 20, out.as<std::uint32_t>(), {1, 256},
                         stream.handle());
    stream.drain();
  }
  const std::size_t bytes = stream_buffer_bytes(state.device(), state.options().copy_bytes, 2);
  const double bytes_d = static_cast<double>(bytes);

  // 1. Read ceiling: measured whether or not case read runs, the copies are divided by it.
  ReadCeiling rc = measure_read_ceiling(state, bytes);
  if (const SweepPoint* point = find_case(state.points(), "read")) {
    report::CaseResult c = state.start_case(*point);  // mode read
    c.measurements["main"] = rc.measurement;
    c.metrics["bytes"] = metric(bytes_d, "B");
    c.metrics["gbps"] = metric(rc.gbps, "GB/s");
    c.metrics["read_ceiling_gbps"] = metric(rc.gbps, "GB/s");
    c.checks.push_back(rc.check);
    c.parameters = {{"bytes", bytes}};
    prove_streams_defeat_l2(state, c, bytes, c.measurements.at("main"), rc.check);
    c.conclude("read ceiling measured" + sampling_flags(c.measurements.at("main")));
    state.add_case(std::move(c));
  }

  // 2 and 3. Copies: bytes read plus bytes written.
  Stream stream;
  DeviceBuffer src = state.allocator().allocate(bytes);
  DeviceBuffer dst = state.allocator().allocate(bytes);
  DeviceBuffer mismatches = state.allocator().allocate(sizeof(unsigned long long));
  const std::size_t words = bytes / sizeof(std::uint32_t);
  kernels::fill_pattern(src.as<std::uint32_t>(), words, kPatternSeed, stream.handle());
  const auto launch = kernels::StreamLaunch::for_device(state.device().sm_count);

  struct CopyCase {
    const char* name;
    std::function<void()> enqueue;
  };
  const CopyCase cases[] = {
      {"memcpy",
       [&] {
         MOE_CUDA_CHECK(cudaMemcpyAsync(dst.data(), src.data(), bytes, cudaMemcpyDeviceToDevice,
                                        stream.handle()));
       }},
      {"copy-kernel",
       [&] { kernels::copy_stream(dst.data(), src.data(), bytes, launch, stream.handle()); }},
  };
  for (const CopyCase& cc : cases) {
    const SweepPoint* point = find_case(state.points(), cc.name);
    if (!point) continue;  // not selected by --filter
    // Poison the destination so the check sees this copy's work, not the previous one's.
    MOE_CUDA_CHECK(cudaMemsetAsync(dst.data(), 0xff, bytes, stream.handle()));
    report::CaseResult c = state.start_case(*point);  // mode: the copy's name
    report::Measurement m = state.sampler().measure(stream, std::string("copy/") + cc.name,
                                                    cc.enqueue);
    kernels::count_mismatches(dst.as<std::uint32_t>(), src.as<std::uint32_t>(), words,
                              mismatches.as<unsigned long long>(), stream.handle());
    stream.drain();
    const auto bad = read_scalar<unsigned long long>(mismatches);
    const report::Check copied{"copy_matches_source", bad == 0,
                               std::to_string(bad) + " of " + std::to_string(words) + " words differ from the source"};
    c.checks.push_back(copied);
    const double g = gbps(2 * bytes, m);
    c.measurements["main"] = std::move(m);
    c.metrics["bytes"] = metric(2 * bytes_d, "B");
    c.metrics["gbps"] = metric(g, "GB/s");
    // A copy moves each byte twice, so it cannot reach twice the read ceiling: when it does,
    // the ceiling was not one (its read kernel was slowed, as under compute-sanitizer, which
    // instruments kernels but not the copy engines) and the percentage is not given.
    const double pct = 100.0 * g / rc.gbps;
    const bool ceiling_holds = pct <= kMaxCopyPctOfReadCeiling;
    if (ceiling_holds) c.metrics["pct_of_read_ceiling"] = metric(pct, "%");
    c.evidence["copy_gbps_over_read_ceiling_gbps"] = g / rc.gbps;
    c.parameters = {{"bytes", bytes}};
    c.prove("read_ceiling_holds", ceiling_holds,
            "the copy ran at " + std::to_string(static_cast<long long>(pct)) + "% of the read ceiling (" +
                std::to_string(static_cast<long long>(rc.gbps)) + " GB/s), above the " +
                std::to_string(static_cast<int>(kMaxCopyPctOfReadCeiling)) +
                "% a copy can reach: the ceiling's read kernel ran slowed");
    prove_streams_defeat_l2(state, c, bytes, c.measurements.at("main"), copied);
    c.conclude("bytes read + written over median GPU time" + sampling_flags(c.measurements.at("main")));
    state.add_case(std::move(c));
  }
}

}  // namespace moe
