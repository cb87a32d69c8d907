#include "engine/residency_transition.hpp"

#include <cstdio>
#include <string>

namespace moe {

std::vector<ExpertMove> moves_between(const std::vector<Placement>& now, const std::vector<Placement>& target) {
  if (now.size() != target.size())
    throw Error(ExitCode::probe_error, "residency plan for " + std::to_string(target.size()) + " experts, the layer has " +
                                           std::to_string(now.size()));
  std::vector<ExpertMove> moves;
  for (std::size_t e = 0; e < now.size(); ++e)
    if (now[e] != target[e]) moves.push_back({static_cast<int>(e), target[e]});
  return moves;
}

const void* table_pointer(Placement placement, const void* device, const void* host_mapped) {
  const void* own = placement == Placement::host ? host_mapped : device;
  const void* other = placement == Placement::host ? device : host_mapped;
  return own ? own : other;
}

TransitionJournal::~TransitionJournal() {
  try {
    rollback();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "moebench: residency rollback failed: %s\n", e.what());
  }
}

std::size_t TransitionJournal::prepared(std::function<void()> undo) {
  undo_.push_back(std::move(undo));
  return undo_.size();
}

void TransitionJournal::rollback() {
  while (!undo_.empty()) {
    std::function<void()> undo = std::move(undo_.back());
    undo_.pop_back();
    undo();
  }
}

}  // namespace moe
