#include "engine/ep/rank_coded_payload.hpp"

#include <cstdint>
#include <cstring>

#include "common/errors.hpp"

namespace moe::ep {

namespace {
constexpr int kMaxRanks = 256;
constexpr int kMaxTokens = 1 << 16;
constexpr int kListed = 3;  // mismatching rows named in full
}  // namespace

float rank_coded_value(int rank, int token, int element) {
  const int i = element / 4;
  int units = 0;
  switch (element % 4) {
    case 0: units = rank; break;
    case 1: units = token % 256; break;
    case 2: units = token / 256; break;
    default: units = (37 * i + 11 * token + 5 * rank) % 61; break;
  }
  return static_cast<float>(units) / 64.0f;  // at most 255 / 64: 8 significant bits, exact in bf16
}

std::vector<float> rank_coded_rows(int rank, int m, int hidden) {
  if (rank < 0 || rank >= kMaxRanks || m < 0 || m > kMaxTokens || hidden < 4)
    throw UsageError("rank-coded rows: rank " + std::to_string(rank) + ", " + std::to_string(m) + " tokens, hidden " +
                     std::to_string(hidden) + " (the code holds ranks below 256, tokens below 65536, hidden of 4 or more)");
  std::vector<float> x(static_cast<std::size_t>(m) * hidden);
  for (int t = 0; t < m; ++t)
    for (int h = 0; h < hidden; ++h) x[static_cast<std::size_t>(t) * hidden + h] = rank_coded_value(rank, t, h);
  return x;
}

std::string rank_coded_mismatch(const std::vector<ReceivedRow>& rows, int tokens_per_rank) {
  std::string listed;
  int wrong = 0;
  for (const ReceivedRow& row : rows) {
    std::string why;
    if (row.token < 0 || row.token >= tokens_per_rank) {
      why = "token " + std::to_string(row.token) + " outside 0.." + std::to_string(tokens_per_rank - 1);
    } else {
      for (std::size_t h = 0; h < row.hidden.size(); ++h) {
        const float want = rank_coded_value(row.source, row.token, static_cast<int>(h));
        std::uint32_t a = 0, b = 0;
        std::memcpy(&a, &row.hidden[h], 4);
        std::memcpy(&b, &want, 4);
        if (a == b) continue;
        why = "token " + std::to_string(row.token) + " element " + std::to_string(h) + " is " +
              std::to_string(row.hidden[h]) + ", the code says " + std::to_string(want);
        break;
      }
    }
    if (why.empty()) continue;
    if (++wrong <= kListed)
      listed += (listed.empty() ? "" : "; ") +
                ("record " + std::to_string(row.record) + " from rank " + std::to_string(row.source) + ": " + why);
  }
  if (wrong == 0) return "";
  return std::to_string(wrong) + " of " + std::to_string(rows.size()) + " received rows are not their source's: " +
         listed + (wrong > kListed ? "; ..." : "");
}

}  // namespace moe::ep
