#pragma once
// Probe ep-hang's judgement as plain host code (tests/cpu/test_ep_hang_verdict.cpp). Every
// rank but the stuck one reports {rank, entered_wait, error, seconds} of its wait on an
// exchange the stuck rank never joins; a peer passes when its error names its own rank first
// ("rank 2: ..."), says the communicator was aborted, and came within `limit_s`.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/report.hpp"

namespace moe::ep {

struct PeerAborts {
  bool all_aborted = true;   // every peer aborted in time, naming its rank
  bool all_entered = true;   // every peer was in the wait (the hazard reached)
  int peers = 0;             // peers judged
  std::string detail;        // per peer: "rank 0 after 5.01 s: <error>"
};
PeerAborts judge_peer_aborts(const std::vector<nlohmann::json>& ranks, int stuck_rank, double limit_s);

// Case "silent-rank": the stuck rank joined and answered, but never took part.
void judge_silent_rank(report::CaseResult& c, const std::vector<nlohmann::json>& ranks, int world,
                       int silent, double limit_s);

// Case "dead-rank": the stuck rank's process ended after a first exchange every rank finished
// (entries: first_exchange_done). Its own required evidence: dead_rank_joined,
// first_exchange_ran, rank_exited (rank 0 saw its connection close), peers_waited_on_it.
// `ranks` has an empty entry (null) for the dead rank.
void judge_dead_rank(report::CaseResult& c, const std::vector<nlohmann::json>& ranks, int world,
                     int dead, bool connection_closed, double limit_s);

}  // namespace moe::ep
