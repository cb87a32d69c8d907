#pragma once
// A rank's output of a sharded step against the single-device CPU reference: a token's output
// depends only on that token, so each rank checks its own tokens alone, whatever the other
// ranks did. Relative-L2 bound 2e-2, the one the single-device layer checks use
// (probes/layer_check.hpp: the kernels meet ~5e-3; a wrong expert or row is of order 1).
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/moe/moe_types.hpp"

namespace moe::ep {

struct RankOutputCheck {
  bool passed = false;
  double rel_l2 = 0;
  double bound = 2e-2;
  int tokens_checked = 0;
  int near_ties_skipped = 0;  // routing within fp32 error of a tie: the GPU may pick either
  std::string detail;
};

// x and out are [m, H] floats (bf16 values) of this rank; up to `max_tokens` tokens spread over
// the batch are checked.
RankOutputCheck check_rank_output(const kernels::MoeDims& dims, std::uint64_t seed,
                                  const std::vector<float>& x, const std::vector<float>& out,
                                  int m, int max_tokens);

}  // namespace moe::ep
