#include "engine/ep/rep_barrier.hpp"

#include "common/errors.hpp"

namespace moe::ep {

std::string rep_mark(const std::string& loop, int rep) { return loop + " rep " + std::to_string(rep); }

std::string rep_marks_disagreement(const std::vector<std::string>& marks) {
  if (marks.empty()) return "";
  std::string differing;
  for (std::size_t r = 1; r < marks.size(); ++r)
    if (marks[r] != marks[0])
      differing += (differing.empty() ? "" : ", ") + ("rank " + std::to_string(r) + " at '" + marks[r] + "'");
  if (differing.empty()) return "";
  return "ranks out of step at the barrier before a repetition: rank 0 at '" + marks[0] + "', " + differing;
}

void rep_barrier(Rendezvous& rendezvous, const std::string& loop, int rep, std::chrono::milliseconds timeout) {
  const std::string problem = rep_marks_disagreement(rendezvous.all_gather(rep_mark(loop, rep), timeout));
  if (!problem.empty())
    throw Error(ExitCode::probe_error, "rank " + std::to_string(rendezvous.rank()) + ": " + problem);
}

}  // namespace moe::ep
