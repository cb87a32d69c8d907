#pragma once
// The bookkeeping of a residency transition, host only: which experts move, and the journal
// that makes a transition all-or-nothing. A transition first prepares every move (a new copy
// of each tensor where it is going; the source untouched), then commits them all at once; a
// fault at any prepared step rolls back every step prepared so far, newest first, so the
// layer's weights stay exactly as they were.
#include <cstddef>
#include <functional>
#include <vector>

#include "common/errors.hpp"
#include "engine/residency_policy.hpp"

namespace moe {

struct ExpertMove {
  int expert = 0;
  Placement to = Placement::device;
};

// The experts whose placement differs between `now` and `target`, in ascending id (a group a
// move: all tensors of an expert move together). Raises moe::Error when the sizes differ.
std::vector<ExpertMove> moves_between(const std::vector<Placement>& now, const std::vector<Placement>& target);

// What the pointer tables name for one tensor of an expert: `device` (its device memory) or
// `host_mapped` (the device mapping of its pinned host copy), chosen by the expert's placement,
// never by which copies exist. A commit keeps both copies of a moved tensor until the new tables
// are uploaded (the source goes only after), so "the host copy if there is one" named, for an
// expert coming back to the device, the host copy freed right after: the next forward read
// freed pinned memory (an illegal address; docs/bugs.md, bug 6). The placement's copy absent, the
// other one is named: only a group split by Mutation::residency_no_rollback gets there, each of
// its tensors in one place alone. Null when neither exists (bf16 has no scales).
const void* table_pointer(Placement placement, const void* device, const void* host_mapped);

// The named fault point of a transition: step `fail_at` (1-based; 0: never) raises
// ResidencyFault instead of being prepared. Probe expert-residency injects it.
struct ResidencyFaultPoint {
  std::size_t fail_at = 0;
  bool hits(std::size_t step) const { return fail_at != 0 && step == fail_at; }
};

class ResidencyFault : public Error {
 public:
  explicit ResidencyFault(const std::string& what) : Error(ExitCode::probe_error, what) {}
};

// Undo actions of prepared steps. rollback() runs them newest first and empties the journal;
// commit() forgets them (the prepared state is now the state). Destroyed uncommitted (an
// exception on the way out), it rolls back.
class TransitionJournal {
 public:
  TransitionJournal() = default;
  ~TransitionJournal();
  TransitionJournal(const TransitionJournal&) = delete;
  TransitionJournal& operator=(const TransitionJournal&) = delete;

  // Records a prepared step; returns its 1-based number.
  std::size_t prepared(std::function<void()> undo);
  std::size_t steps() const { return undo_.size(); }
  void rollback();
  void commit() { undo_.clear(); }

 private:
  std::vector<std::function<void()>> undo_;
};

}  // namespace moe
