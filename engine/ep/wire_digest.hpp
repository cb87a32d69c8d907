#pragma once
// Bitwise repeatability, as DeepEP's tests check theirs by hashing the same dispatch and
// combine run again: a 64-bit FNV-1a digest of what a buffer means, so two runs of one step on
// the same input compare in one number per buffer. A dispatch buffer's digest covers each
// block's count and its valid records' fields (token, experts, weight bits, bf16 hidden bits),
// never the padding or the records past the count, which no one writes; an output's covers
// its values' bits.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "engine/ep/wire_layout.hpp"

namespace moe::ep {

std::uint64_t bytes_digest(const void* data, std::size_t bytes, std::uint64_t seed = 0xcbf29ce484222325ull);

// A dispatch buffer (send or receive, layout.dispatch_bytes()). A count outside 0..capacity is
// hashed as it is, with no records.
std::uint64_t dispatch_digest(const WireLayout& layout, const unsigned char* buffer);

// Empty when every run's digest equals the first's; else one line naming the first run that
// differs, e.g. "the receive buffer differed between run 1 and run 3".
std::string repeat_difference(const std::vector<std::uint64_t>& digests, const std::string& what);

}  // namespace moe::ep
