#include "engine/ep/wire_digest.hpp"

#include <cstring>

namespace moe::ep {

std::uint64_t bytes_digest(const void* data, std::size_t bytes, std::uint64_t seed) {
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint64_t h = seed;
  for (std::size_t i = 0; i < bytes; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

std::uint64_t dispatch_digest(const WireLayout& L, const unsigned char* buffer) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (int b = 0; b < L.ranks; ++b) {
    const unsigned char* block = buffer + L.dispatch_block_bytes() * b;
    std::int32_t count = 0;
    std::memcpy(&count, block, 4);
    h = bytes_digest(&count, 4, h);
    if (count < 0 || count > L.capacity) continue;
    for (int r = 0; r < count; ++r) {
      const unsigned char* rec = block + WireLayout::kHeaderBytes + L.dispatch_row_bytes() * r;
      h = bytes_digest(rec + WireLayout::token_offset(), 4, h);
      h = bytes_digest(rec + WireLayout::experts_offset(), 4 * static_cast<std::size_t>(L.top_k), h);
      h = bytes_digest(rec + L.weights_offset(), 4 * static_cast<std::size_t>(L.top_k), h);
      h = bytes_digest(rec + L.hidden_offset(), 2 * static_cast<std::size_t>(L.hidden), h);
    }
  }
  return h;
}

std::string repeat_difference(const std::vector<std::uint64_t>& digests, const std::string& what) {
  for (std::size_t i = 1; i < digests.size(); ++i)
    if (digests[i] != digests[0])
      return what + " differed between run 1 and run " + std::to_string(i + 1) + " of the same step on the same input";
  return "";
}

}  // namespace moe::ep
