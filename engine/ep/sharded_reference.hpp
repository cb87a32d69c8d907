#pragma once
// The whole expert-parallel step on the CPU over P virtual ranks, through the same wire bytes
// the GPU exchanges (wire_layout.hpp): each rank routes its own tokens, plans and packs its send
// blocks, the blocks are exchanged, each rank runs its own experts on the rows it received and
// returns per-row partial sums, and each source combines them in rank order, then its shared
// experts. Float64 like kernels/moe/reference.cpp; with one rank the summation order is that
// of the single-device reference, so the two agree bit for bit.
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "engine/ep/dispatch_plan.hpp"
#include "engine/ep/expert_map.hpp"
#include "engine/ep/wire_layout.hpp"
#include "kernels/moe/moe_types.hpp"

namespace moe::ep {

struct ShardedStep {
  std::vector<std::vector<double>> out;      // per rank [m, H]
  std::vector<std::vector<int>> ids;         // per rank [m, top_k] routed experts
  std::vector<std::vector<double>> weights;  // per rank [m, top_k]
  std::vector<DispatchPlan> plans;           // per rank
  std::vector<int> received_rows;            // per rank: rows it computed
  std::size_t wire_bytes = 0;                // meaningful bytes sent, both ways, all ranks
};

// x[r] is rank r's m tokens [m, H] (bf16 values as floats). Every rank uses the weights of
// (dims, seed). Throws CapacityOverflow like plan_dispatch.
ShardedStep sharded_step_reference(const kernels::MoeDims& dims, std::uint64_t seed,
                                   const ExpertMap& map, const std::vector<std::vector<float>>& x,
                                   int m, int capacity, int threads = 0);

// Host packing of one rank's send buffer (layout.dispatch_bytes()): the GPU pack kernel's
// reference. Unused records are left as they are.
void pack_dispatch_host(const WireLayout& layout, const DispatchPlan& plan,
                        const std::vector<float>& x, const std::vector<double>& weights,
                        unsigned char* send);

// One received record, decoded.
struct ReceivedRow {
  int source = 0;
  int record = 0;               // its place in the source's block
  int token = 0;
  std::vector<int> experts;     // [top_k] local expert or -1
  std::vector<float> weights;   // [top_k]
  std::vector<float> hidden;    // [H]
};
// Decodes the valid records of every block of a receive buffer, in source-rank order. Throws
// moe::Error (probe error) when a block's count exceeds the capacity: a corrupt or stale block.
std::vector<ReceivedRow> unpack_received_host(const WireLayout& layout, const unsigned char* recv);

// A rank's grouping of its received rows: per local expert, ascending, its (row, slot) pairs,
// rows in receive order and slots in order (what the GPU's grouped path must reproduce,
// kernels/ep/received_grouping.hpp).
std::map<int, std::vector<std::pair<int, int>>> received_pairs_by_expert(const std::vector<ReceivedRow>& rows);

// Rank `self`'s expert compute over its received rows, [rows, H] float64: per row the sum over
// its slots in slot order of weight * expert(hidden), from 0; each expert runs on its rows of
// received_pairs_by_expert. Throws moe::Error (probe error) for an expert it does not own.
std::vector<double> expert_partials_host(const kernels::MoeDims& dims, std::uint64_t seed, const ExpertMap& map,
                                         int self, const std::vector<ReceivedRow>& rows, int threads = 0);

}  // namespace moe::ep
