#pragma once
// The host-side plan of probe capture-replay's steps, as plain functions so the CPU tests
// check it (tests/cpu/test_capture_replay_plan.cpp).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace moe {

// bf16 0xffff, a NaN: what DeviceAllocator::kPoisonByte writes in every byte. A kernel never
// writes it as a result, so an output element still holding it was not written.
inline constexpr std::uint16_t kPoisonBf16 = 0xffff;

// How many elements of a host copy of an output still hold the poison.
std::size_t count_poison(const std::vector<std::uint16_t>& values);

// The M of the eager step that regrows the scratch of a graph captured at `m`: the first of
// 2m, 4m, ... whose scratch (`scratch_bytes(M)`) exceeds `capacity`. The probe passes the
// size class of the pool's block, so the pool's new block (half again over the request) is of
// a larger class and cannot be its old one handed back. 0 when none up to `limit` does (the
// probe then cannot force the regrow: INCONCLUSIVE).
int regrow_tokens(int m, std::size_t capacity, const std::function<std::size_t(int)>& scratch_bytes,
                  int limit = 65536);

}  // namespace moe
