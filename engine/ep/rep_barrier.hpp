#pragma once
// A barrier between the ranks before every timed repetition. Without it a rank that finished
// its previous repetition early enqueues the next one first, and its exchange time then
// includes waiting for its peers' launches, not only the exchange. Through the rendezvous (host
// TCP, rank 0 in the middle) with its deadline, after the previous repetition has finished on
// this rank's stream, so the GPUs are idle and every rank enqueues as soon as rank 0 releases
// it. Each rank says which loop and which repetition it is at: ranks that drifted apart (one
// skipped a repetition, or is in another case) are an error naming every rank's place, never a
// barrier that pairs repetition 3 of one rank with repetition 4 of another.
#include <chrono>
#include <string>
#include <vector>

#include "engine/ep/rendezvous.hpp"

namespace moe::ep {

// What a rank sends at the barrier: its loop's name and the repetition.
std::string rep_mark(const std::string& loop, int rep);

// Empty when every rank's mark (rank order) is rank 0's; else one line naming each rank whose
// mark differs and rank 0's.
std::string rep_marks_disagreement(const std::vector<std::string>& marks);

// Returns once every rank has reached the same (loop, rep). Throws moe::Error (probe error) on
// every rank when the marks differ, and EnvironmentError (exit 3) when a rank does not come
// within `timeout` (0: the rendezvous's own).
void rep_barrier(Rendezvous& rendezvous, const std::string& loop, int rep,
                 std::chrono::milliseconds timeout = std::chrono::milliseconds(0));

}  // namespace moe::ep
