#include "engine/ep/wire_layout.hpp"

#include "common/errors.hpp"

namespace moe::ep {

namespace {
constexpr std::size_t round16(std::size_t b) { return (b + 15) / 16 * 16; }
}  // namespace

std::size_t WireLayout::meta_bytes() const {
  return round16(4 + 8 * static_cast<std::size_t>(top_k));
}
std::size_t WireLayout::dispatch_row_bytes() const {
  return round16(meta_bytes() + 2 * static_cast<std::size_t>(hidden));
}
std::size_t WireLayout::dispatch_block_bytes() const {
  return kHeaderBytes + dispatch_row_bytes() * static_cast<std::size_t>(capacity);
}
std::size_t WireLayout::combine_row_bytes() const {
  return round16(4 * static_cast<std::size_t>(hidden));
}
std::size_t WireLayout::combine_block_bytes() const {
  return kHeaderBytes + combine_row_bytes() * static_cast<std::size_t>(capacity);
}

kernels::ep::WireGeometry WireLayout::geometry() const {
  kernels::ep::WireGeometry g;
  g.hidden = hidden;
  g.top_k = top_k;
  g.ranks = ranks;
  g.capacity = capacity;
  g.dispatch_row_bytes = dispatch_row_bytes();
  g.dispatch_block_bytes = dispatch_block_bytes();
  g.combine_row_bytes = combine_row_bytes();
  g.combine_block_bytes = combine_block_bytes();
  g.meta_bytes = meta_bytes();
  g.header_bytes = kHeaderBytes;
  return g;
}

WireLayout make_wire_layout(int hidden, int top_k, int ranks, int capacity) {
  if (hidden < 1 || top_k < 1 || ranks < 1)
    throw UsageError("wire layout: hidden, top_k and ranks must be positive");
  if (capacity < 1)
    throw UsageError("wire layout: capacity must be at least one row per destination");
  return WireLayout{hidden, top_k, ranks, capacity};
}

}  // namespace moe::ep
