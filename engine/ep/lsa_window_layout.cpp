#include "engine/ep/lsa_window_layout.hpp"

#include "common/errors.hpp"

namespace moe::ep {

namespace {
std::size_t round_up(std::size_t bytes, std::size_t alignment) {
  return (bytes + alignment - 1) / alignment * alignment;
}
}  // namespace

std::size_t LsaWindowLayout::dispatch_block_offset(int source) const {
  if (source < 0 || source >= ranks)
    throw UsageError("LSA window: rank " + std::to_string(source) + " is not one of " +
                     std::to_string(ranks));
  return dispatch_offset + dispatch_block_bytes * static_cast<std::size_t>(source);
}

std::size_t LsaWindowLayout::combine_block_offset(int source) const {
  if (source < 0 || source >= ranks)
    throw UsageError("LSA window: rank " + std::to_string(source) + " is not one of " +
                     std::to_string(ranks));
  return combine_offset + combine_block_bytes * static_cast<std::size_t>(source);
}

LsaWindowLayout make_lsa_window_layout(const WireLayout& wire, std::size_t alignment) {
  if (alignment < 16 || (alignment & (alignment - 1)) != 0)
    throw UsageError("LSA window: alignment " + std::to_string(alignment) +
                     " is not a power of two of at least 16 bytes");
  if (wire.ranks < 1 || wire.capacity < 1 || wire.hidden < 1 || wire.top_k < 1)
    throw UsageError("LSA window: the wire layout has no blocks");
  LsaWindowLayout L;
  L.ranks = wire.ranks;
  L.dispatch_block_bytes = wire.dispatch_block_bytes();
  L.combine_block_bytes = wire.combine_block_bytes();
  L.dispatch_offset = 0;
  L.combine_offset = round_up(L.dispatch_offset + wire.dispatch_bytes(), alignment);
  L.status_offset = round_up(L.combine_offset + wire.combine_bytes(), alignment);
  L.window_bytes = round_up(L.status_offset + LsaWindowLayout::kStatusBytes, alignment);
  return L;
}

}  // namespace moe::ep
