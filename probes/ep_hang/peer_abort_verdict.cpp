#include "probes/ep_hang/peer_abort_verdict.hpp"

namespace moe::ep {

PeerAborts judge_peer_aborts(const std::vector<nlohmann::json>& ranks, int stuck_rank, double limit_s) {
  PeerAborts p;
  for (const nlohmann::json& r : ranks) {
    if (!r.is_object() || r.value("rank", -1) == stuck_rank) continue;
    ++p.peers;
    const int rank = r.value("rank", -1);
    const std::string err = r.value("error", std::string());
    const double s = r.value("seconds", 0.0);
    p.all_entered = p.all_entered && r.value("entered_wait", false);
    const bool ok = err.rfind("rank " + std::to_string(rank) + ": ", 0) == 0 &&
                    err.find("communicator aborted") != std::string::npos && s <= limit_s;
    p.all_aborted = p.all_aborted && ok;
    p.detail += (p.detail.empty() ? "" : "; ") + ("rank " + std::to_string(rank) + " after " +
                                                  std::to_string(s).substr(0, 5) + " s: " +
                                                  (err.empty() ? "no error" : err));
  }
  if (p.peers == 0) {
    p.all_aborted = false;
    p.all_entered = false;
    p.detail = "no peer reported";
  }
  return p;
}

void judge_silent_rank(report::CaseResult& c, const std::vector<nlohmann::json>& ranks, int world,
                       int silent, double limit_s) {
  const PeerAborts p = judge_peer_aborts(ranks, silent, limit_s);
  c.prove("silent_rank_joined", static_cast<int>(ranks.size()) == world, "the silent rank did not report");
  c.prove("peers_waited_on_it", p.all_entered, "a peer never waited on the exchange");
  c.checks.push_back({"peers_aborted_within_timeout", p.all_aborted, p.detail});
  c.evidence["per_rank"] = ranks;
  c.parameters = {{"ranks", world}, {"silent_rank", silent}};
  c.conclude("every peer aborted its communicator within --timeout, naming its rank");
}

void judge_dead_rank(report::CaseResult& c, const std::vector<nlohmann::json>& ranks, int world,
                     int dead, bool connection_closed, double limit_s) {
  c.required_evidence = {"dead_rank_joined", "first_exchange_ran", "rank_exited", "peers_waited_on_it"};
  const PeerAborts p = judge_peer_aborts(ranks, dead, limit_s);
  bool first = p.peers > 0;
  for (const nlohmann::json& r : ranks)
    if (r.is_object() && r.value("rank", -1) != dead) first = first && r.value("first_exchange_done", false);
  c.prove("dead_rank_joined", static_cast<int>(ranks.size()) == world && dead > 0 && dead < world,
          "the ranks did not all join before rank " + std::to_string(dead) + " left");
  c.prove("first_exchange_ran", first, "a peer did not finish the first exchange with the rank that died");
  c.prove("rank_exited", connection_closed,
          "rank 0 did not see rank " + std::to_string(dead) + "'s connection close: its process did not end");
  c.prove("peers_waited_on_it", p.all_entered, "a peer never waited on the second exchange");
  c.checks.push_back({"peers_aborted_within_timeout", p.all_aborted, p.detail});
  c.evidence["per_rank"] = ranks;
  c.parameters = {{"ranks", world}, {"dead_rank", dead}};
  c.conclude("rank " + std::to_string(dead) + " died after its first exchange; every peer aborted its "
             "communicator within --timeout, naming its rank");
}

}  // namespace moe::ep
