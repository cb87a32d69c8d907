#pragma once
// Input rows that say where they came from, as DeepEP's tests fill theirs with the rank: every
// element of token t of rank r is a multiple of 1/64 below 4 (exact in bf16), and
//   element 4i     r / 64            (ranks below 256)
//   element 4i + 1 (t mod 256) / 64
//   element 4i + 2 (t / 256) / 64    (tokens below 65536)
//   element 4i + 3 ((37 i + 11 t + 5 r) mod 61) / 64, so that tokens route apart.
// A received row is therefore checked bit for bit against the row its block (the source rank)
// and its token field name: a row in the wrong block, under another token's index, shifted by
// a record, torn or converted on the way differs in some element.
#include <string>
#include <vector>

#include "engine/ep/sharded_reference.hpp"

namespace moe::ep {

float rank_coded_value(int rank, int token, int element);

// Rank `rank`'s m tokens [m, hidden] (bf16 values as floats). Throws UsageError for a rank or
// m the code cannot hold.
std::vector<float> rank_coded_rows(int rank, int m, int hidden);

// Empty when every received row (unpack_received_host) carries exactly the rank-coded row of
// its source and token, and every token is below `tokens_per_rank`; else one line naming the
// first few rows that do not (source, record, token, element, both values).
std::string rank_coded_mismatch(const std::vector<ReceivedRow>& rows, int tokens_per_rank);

}  // namespace moe::ep
