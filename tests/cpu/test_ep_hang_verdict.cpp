// Probe ep-hang's judgement over fabricated ranks: peers that abort in time naming their own
// rank pass, a peer that names another rank, finished, or came late fails, and the dead-rank
// case is INCONCLUSIVE unless the rank provably left after a first exchange.
#include <doctest/doctest.h>

#include "probes/ep_hang/peer_abort_verdict.hpp"
#include "probes/evidence_rules.hpp"

using moe::report::CaseResult;
using moe::report::Verdict;
using nlohmann::json;

namespace {

json peer(int rank, double seconds = 5.1, const std::string& error = "") {
  return {{"rank", rank},
          {"entered_wait", true},
          {"first_exchange_done", true},
          {"seconds", seconds},
          {"error", error.empty() ? "rank " + std::to_string(rank) +
                                        ": an exchange with a rank that died did not finish within 5.000 s "
                                        "(a peer rank is missing or stuck); communicator aborted"
                                  : error}};
}

CaseResult dead_case(const std::vector<json>& ranks, bool closed, int world = 3) {
  CaseResult c;
  c.probe = "ep-hang";
  c.name = "dead-rank";
  c.required_evidence = moe::required_evidence("ep-hang");
  moe::ep::judge_dead_rank(c, ranks, world, world - 1, closed, 12.5);
  return c;
}

}  // namespace

TEST_CASE("peers that abort in time, each naming its rank, pass; anything else fails") {
  auto p = moe::ep::judge_peer_aborts({peer(0), peer(1), json{{"rank", 2}, {"silent", true}}}, 2, 12.5);
  CHECK(p.all_aborted);
  CHECK(p.all_entered);
  CHECK(p.peers == 2);
  CHECK(p.detail.find("rank 0 after 5.100 s: rank 0: ") == 0);
  // Another rank's name, a late abort, a wait that finished: each fails.
  CHECK_FALSE(moe::ep::judge_peer_aborts({peer(0, 5, "rank 1: x; communicator aborted")}, 2, 12.5).all_aborted);
  CHECK_FALSE(moe::ep::judge_peer_aborts({peer(0, 13.0)}, 2, 12.5).all_aborted);
  CHECK_FALSE(moe::ep::judge_peer_aborts({json{{"rank", 0}, {"entered_wait", true}, {"finished", true}}}, 2, 12.5)
                  .all_aborted);
  // A CUDA fault on the stream, named by the watchdog, counts as an abort naming the rank.
  CHECK(moe::ep::judge_peer_aborts(
            {peer(0, 1, "rank 0: an exchange with a rank that died: CUDA error cudaErrorLaunchFailure "
                        "(unspecified launch failure); communicator aborted")},
            1, 12.5)
            .all_aborted);
  CHECK_FALSE(moe::ep::judge_peer_aborts({}, 1, 12.5).all_aborted);
}

TEST_CASE("silent-rank keeps its verdict: pass with every rank answering, fail on a hung peer") {
  CaseResult c;
  c.probe = "ep-hang";
  c.name = "silent-rank";
  c.required_evidence = moe::required_evidence("ep-hang");
  moe::ep::judge_silent_rank(c, {peer(0), json{{"rank", 1}, {"silent", true}, {"entered_wait", false}}}, 2, 1, 12.5);
  CHECK(c.verdict == Verdict::pass);
  CaseResult late;
  late.probe = "ep-hang";
  late.required_evidence = moe::required_evidence("ep-hang");
  moe::ep::judge_silent_rank(late, {peer(0, 30), json{{"rank", 1}, {"silent", true}}}, 2, 1, 12.5);
  CHECK(late.verdict == Verdict::fail);
}

TEST_CASE("dead-rank passes only when the rank left after a first exchange and every peer aborted") {
  const CaseResult ok = dead_case({peer(0), peer(1), json(nullptr)}, true);
  CHECK(ok.verdict == Verdict::pass);
  CHECK(ok.required_evidence ==
        std::vector<std::string>{"dead_rank_joined", "first_exchange_ran", "rank_exited", "peers_waited_on_it"});
  CHECK(ok.parameters["dead_rank"] == 2);
  // Rank 0 never saw the connection close: the rank did not die, the case proves nothing.
  CHECK(dead_case({peer(0), peer(1), json(nullptr)}, false).verdict == Verdict::inconclusive);
  json no_first = peer(1);
  no_first["first_exchange_done"] = false;
  CHECK(dead_case({peer(0), no_first, json(nullptr)}, true).verdict == Verdict::inconclusive);
  // A peer that hung past the limit fails, naming it.
  const CaseResult hung = dead_case({peer(0), peer(1, 40), json(nullptr)}, true);
  CHECK(hung.verdict == Verdict::fail);
  CHECK(hung.checks.back().detail.find("rank 1 after 40.00 s") != std::string::npos);
}
