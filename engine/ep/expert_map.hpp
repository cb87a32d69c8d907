#pragma once
// Which rank owns which routed expert. The map is contiguous blocks in rank order: with E
// experts over P ranks, rank r owns experts [first(r), first(r) + count(r)), where the first
// E mod P ranks own ceil(E/P) experts and the others floor(E/P). So a rank count that does not
// divide the experts is handled (blocks differ by one expert); more ranks than experts is
// refused, since a rank without experts has nothing to compute. Shared experts are not in the
// map: every rank holds them and computes them for its own tokens.
#include <cstdint>
#include <string>
#include <vector>

namespace moe::ep {

class ExpertMap {
 public:
  // Throws UsageError when ranks < 1, experts < 1 or ranks > experts.
  static ExpertMap contiguous(int experts, int ranks);
  // An explicit owner table (owners[e] = rank): what a rank that disagrees would hold. Throws
  // UsageError when an owner is out of range or a rank owns nothing.
  static ExpertMap from_owners(std::vector<int> owners, int ranks);

  int experts() const { return static_cast<int>(owners_.size()); }
  int ranks() const { return ranks_; }
  int owner(int expert) const { return owners_[expert]; }
  // Position of `expert` among its owner's experts (ascending): its slot in the owner's bank.
  int local_index(int expert) const { return local_[expert]; }
  // The experts rank r owns, ascending.
  const std::vector<int>& experts_of(int rank) const { return by_rank_[rank]; }
  const std::vector<int>& owners() const { return owners_; }

  // One line, e.g. "contiguous: 64 experts over 3 ranks (22, 21, 21)".
  std::string describe() const;
  // Hash of the owner table: what ranks compare in the handshake when the layer is built.
  std::uint64_t fingerprint() const;

  bool operator==(const ExpertMap& o) const { return ranks_ == o.ranks_ && owners_ == o.owners_; }

 private:
  ExpertMap(std::vector<int> owners, int ranks, std::string kind);

  std::vector<int> owners_;               // [E]
  std::vector<int> local_;                // [E]
  std::vector<std::vector<int>> by_rank_; // [P]
  int ranks_ = 0;
  std::string kind_;
};

}  // namespace moe::ep
