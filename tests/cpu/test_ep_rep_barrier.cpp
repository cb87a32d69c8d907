// The protocols the expert-parallel ranks run between repetitions, each rank its own process
// over the loopback rendezvous: the barrier before every repetition (nobody leaves it before
// the last rank has come; ranks out of step and a rank that stops coming are errors, not a
// hang) and the exact receive counts gathered from the senders (a receive buffer that differs
// from what was sent to it is named on its own rank only).
#include <doctest/doctest.h>

#include <chrono>
#include <initializer_list>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "common/errors.hpp"
#include "engine/ep/receive_counts.hpp"
#include "engine/ep/rendezvous.hpp"
#include "engine/ep/rep_barrier.hpp"
#include "support/forked_ranks.hpp"
#include "support/host_exchange.hpp"

using namespace moe;
using namespace moe::ep;
using namespace moe::test;
using namespace std::chrono_literals;

namespace {

// Microseconds on the monotonic clock, which every process of the host shares.
long long now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Each rank runs 4 repetitions; the last rank arrives late at repetition 2. Returns, per rank,
// "ENTER LEAVE" of repetition 2 (when it reached the barrier and when it left it).
std::vector<RankResult> late_rank_run(int world, bool barrier) {
  const int port = free_port();
  return run_ranks(world, all_ranks(world), [&](int rank) {
    Rendezvous rv = Rendezvous::join(env_for(rank, world, port), 10s);
    std::string text;
    for (int rep = 0; rep < 4; ++rep) {
      if (rep == 2 && rank == world - 1) std::this_thread::sleep_for(300ms);
      const long long enter = now_us();
      if (barrier) rep_barrier(rv, "eager deepseek-v3 m=8", rep);
      if (rep == 2) text = std::to_string(enter) + " " + std::to_string(now_us());
    }
    rv.all_gather("done");  // nobody closes its connection before the others are done
    return text;
  });
}

}  // namespace

TEST_CASE("rep barrier: marks name the loop and the repetition; ranks out of step are named") {
  CHECK(rep_mark("graph qwen m=1", 3) == "graph qwen m=1 rep 3");
  CHECK(rep_marks_disagreement({}).empty());
  CHECK(rep_marks_disagreement({"a rep 1", "a rep 1", "a rep 1"}).empty());
  CHECK(rep_marks_disagreement({"a rep 1", "a rep 2", "a rep 1", "b rep 1"}) ==
        "ranks out of step at the barrier before a repetition: rank 0 at 'a rep 1', rank 1 at 'a rep 2', "
        "rank 3 at 'b rep 1'");
}

TEST_CASE("rep barrier over loopback: no rank leaves before the last has come") {
  for (int world : {2, 3}) {
    CAPTURE(world);
    const auto with = late_rank_run(world, true);
    long long late_enter = 0;
    for (const auto& r : with) REQUIRE(r.exit_code == 0);
    late_enter = std::stoll(with[world - 1].text.substr(0, with[world - 1].text.find(' ')));
    for (int r = 0; r < world; ++r) {
      CAPTURE(r);
      const long long leave = std::stoll(with[r].text.substr(with[r].text.find(' ') + 1));
      CHECK(leave >= late_enter);
    }
    // The same measurement without the barrier: the punctual ranks leave long before the late
    // one comes, so the check above can fail.
    const auto without = late_rank_run(world, false);
    for (const auto& r : without) REQUIRE(r.exit_code == 0);
    const long long late = std::stoll(without[world - 1].text.substr(0, without[world - 1].text.find(' ')));
    CHECK(std::stoll(without[0].text.substr(without[0].text.find(' ') + 1)) < late);
  }
}

TEST_CASE("rep barrier over loopback: a rank that skipped a repetition fails every rank, naming it") {
  const int port = free_port();
  const auto results = run_ranks(3, all_ranks(3), [&](int rank) {
    Rendezvous rv = Rendezvous::join(env_for(rank, 3, port), 10s);
    for (int rep = 0; rep < 3; ++rep) {
      if (rank == 2 && rep == 1) continue;  // skipped
      rep_barrier(rv, "eager", rep);
    }
    return std::string("finished");
  });
  for (int r = 0; r < 3; ++r) {
    CAPTURE(r);
    CHECK(results[r].exit_code == to_int(ExitCode::probe_error));
    CHECK(results[r].text == "rank " + std::to_string(r) +
                                 ": ranks out of step at the barrier before a repetition: rank 0 at 'eager rep 1', "
                                 "rank 2 at 'eager rep 2'");
  }
}

TEST_CASE("rep barrier over loopback: a rank that stops coming ends the others' wait at the deadline") {
  const int port = free_port();
  const auto t0 = std::chrono::steady_clock::now();
  const auto results = run_ranks(2, all_ranks(2), [&](int rank) {
    Rendezvous rv = Rendezvous::join(env_for(rank, 2, port), 10s);
    rep_barrier(rv, "eager", 0);
    if (rank == 1) {
      std::this_thread::sleep_for(3s);  // stuck, connection open
      return std::string("stuck");
    }
    rep_barrier(rv, "eager", 1, 800ms);
    return std::string("passed");
  });
  CHECK(std::chrono::steady_clock::now() - t0 < 15s);
  CHECK(results[0].exit_code == to_int(ExitCode::environment));
  CHECK(results[0].text == "rendezvous: rank 0 waited 0.8 s for rank(s) 1 of 2 (a rank stopped answering)");
}

TEST_CASE("receive counts over loopback: every rank's received counts are exactly what was sent to it") {
  for (int world : {2, 3, 4}) {
    CAPTURE(world);
    for (bool mutate : {false, true}) {
      CAPTURE(mutate);
      const int port = free_port();
      const auto results = run_ranks(world, all_ranks(world), [&](int rank) {
        Rendezvous rv = Rendezvous::join(env_for(rank, world, port), 10s);
        // Every rank builds the same exchange (one seed) and keeps its own buffers.
        HostExchange x = host_exchange(world, 12, 4, 16, 32, 40 + world);
        std::vector<unsigned char> recv = x.recv[rank];
        if (mutate && rank == world - 1) set_count(x.layout, recv, 0, count_of(x.layout, recv, 0) + 1);
        const std::string m = check_receive_counts(rv, x.layout, x.map, x.send[rank].data(), recv.data());
        return m.empty() ? std::string("exact") : m;
      });
      for (int r = 0; r < world; ++r) {
        CAPTURE(r);
        CHECK(results[r].exit_code == 0);
        if (mutate && r == world - 1)
          CHECK(results[r].text.find("rank " + std::to_string(r) + " received other counts than were sent to it: ") == 0);
        else
          CHECK(results[r].text == "exact");
      }
    }
  }
}
