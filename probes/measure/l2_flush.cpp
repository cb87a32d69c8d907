#include "probes/measure/l2_flush.hpp"

#include <cstdint>
#include <cstdio>

#include "common/cuda_check.hpp"
#include "engine/fault_injection.hpp"
#include "kernels/bandwidth/l2_canary.hpp"

namespace moe::measure {

const char* to_string(L2Mode m) { return m == L2Mode::cold ? "cold" : "hot"; }

L2Flusher::L2Flusher(const Device& device, DeviceAllocator& allocator)
    : buffer_(allocator.allocate(2 * (device.l2_bytes ? device.l2_bytes : (std::size_t{64} << 20)))),
      xor_out_(allocator.allocate(sizeof(std::uint32_t))),
      canary_(allocator.allocate(kernels::kCanaryBytes)),
      flush_counter_(allocator.allocate(sizeof(unsigned))),
      readings_(allocator.allocate(kMaxObserved * sizeof(kernels::CanaryReading))),
      launch_(kernels::StreamLaunch::for_device(device.sm_count > 0 ? device.sm_count : 1)) {
  // Written once so the flush never reads uninitialised memory (compute-sanitizer's initcheck).
  MOE_CUDA_CHECK(cudaMemset(buffer_.data(), 0, buffer_.bytes()));
  MOE_CUDA_CHECK(cudaMemset(flush_counter_.data(), 0, sizeof(unsigned)));
  const std::vector<std::uint32_t> chain = kernels::canary_chain();
  MOE_CUDA_CHECK(cudaMemcpy(canary_.data(), chain.data(), chain.size() * sizeof(std::uint32_t), cudaMemcpyHostToDevice));
}

L2Flusher::~L2Flusher() {
  if (!own_stream_) return;
  try {
    own_stream_->drain();  // its flush reads buffer_, freed after this
  } catch (const std::exception& e) {
    std::fprintf(stderr, "moebench: draining the L2 flush's stream failed: %s\n", e.what());
  }
}

void L2Flusher::flush(cudaStream_t stream) {
  std::size_t bytes = buffer_.bytes();
  // The historic flushes: half the L2's size (lines read just before survive it), or on a
  // stream of its own that the sample never waits for.
  if (mutation_active(Mutation::l2_flush_half)) bytes = buffer_.bytes() / 4;
  if (mutation_active(Mutation::l2_flush_other_stream)) {
    if (!own_stream_) own_stream_ = std::make_unique<Stream>();
    stream = own_stream_->handle();
  }
  kernels::read_through_l2(buffer_.data(), bytes, xor_out_.as<std::uint32_t>(), launch_, stream);
  kernels::mark_flush_done(flush_counter_.as<unsigned>(), stream);
  ++flushes_issued_;
}

void L2Flusher::touch_canary(cudaStream_t stream) { kernels::touch_canary(canary_.as<std::uint32_t>(), stream); }

void L2Flusher::observe(cudaStream_t stream) {
  if (observations_.size() >= kMaxObserved) return;
  auto* slot = readings_.as<kernels::CanaryReading>() + observations_.size();
  kernels::observe_canary(canary_.as<std::uint32_t>(), flush_counter_.as<unsigned>(), slot, stream);
  observations_.push_back(flushes_issued_);
}

report::L2Observed L2Flusher::collect() {
  std::vector<kernels::CanaryReading> readings(observations_.size());
  if (!readings.empty())
    MOE_CUDA_CHECK(cudaMemcpy(readings.data(), readings_.data(), readings.size() * sizeof(kernels::CanaryReading),
                              cudaMemcpyDeviceToHost));
  std::vector<CanarySample> samples;
  for (std::size_t i = 0; i < readings.size(); ++i) samples.push_back({readings[i], observations_[i]});
  observations_.clear();
  return summarize_canary(samples);
}

}  // namespace moe::measure
