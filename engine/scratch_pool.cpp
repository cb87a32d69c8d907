#include "engine/scratch_pool.hpp"

#include "engine/fault_injection.hpp"
#include "engine/stream.hpp"

namespace moe {

CaptureGrowthError::CaptureGrowthError(std::size_t have, std::size_t need)
    : Error(ExitCode::probe_error,
            "scratch pool would grow during graph capture (has " + std::to_string(have) +
                " bytes, needs " + std::to_string(need) +
                "); run this M eagerly once before capturing") {}

ScratchPool::~ScratchPool() = default;

void* ScratchPool::ensure(std::size_t bytes, Stream& stream) {
  if (!would_grow(bytes)) return buffer_.data();
  if (stream.capturing() && !mutation_active(Mutation::capture_growth))
    throw CaptureGrowthError(buffer_.bytes(), bytes);
  // Grow by half again over the request, so a slowly rising M does not regrow every call.
  const std::size_t target = bytes + bytes / 2;
  if (!mutation_active(Mutation::scratch_free_without_drain) && !stream.capturing())
    stream.drain();  // in-flight kernels may still read the old buffer
  buffer_.reset();
  buffer_ = allocator_.allocate(target);
  ++regrows_;
  return buffer_.data();
}

}  // namespace moe
