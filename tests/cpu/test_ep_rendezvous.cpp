// The TCP rendezvous and the expert-map handshake over 127.0.0.1, each rank its own process
// (fork), as the ranks of a multi-host run would be: blobs gathered in rank order, the unique id
// broadcast, a rank that never comes and an address that does not answer time out with one
// clear line (exit 3), and ranks that disagree on the map are all refused.
#include <doctest/doctest.h>

#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "common/errors.hpp"
#include "engine/ep/launch_env.hpp"
#include "engine/ep/map_handshake.hpp"
#include "engine/ep/rendezvous.hpp"
#include "support/forked_ranks.hpp"

using namespace moe;
using namespace moe::ep;
using namespace moe::test;
using namespace std::chrono_literals;

TEST_CASE("launch environment: torch, Open MPI, MPICH and Slurm conventions") {
  auto lookup = [](std::vector<std::pair<const char*, const char*>> vars) {
    return [vars](const char* name) -> const char* {
      for (const auto& [k, v] : vars)
        if (std::string(k) == name) return v;
      return nullptr;
    };
  };
  CHECK_FALSE(launch_env_from(lookup({})).has_value());
  const auto torch = launch_env_from(lookup({{"RANK", "1"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "0"},
                                             {"MASTER_ADDR", "node7"}, {"MASTER_PORT", "1234"}}));
  REQUIRE(torch);
  CHECK(torch->rank == 1);
  CHECK(torch->world == 4);
  CHECK(torch->local_rank == 0);
  CHECK(torch->master_addr == "node7");
  CHECK(torch->master_port == 1234);
  const auto ompi = launch_env_from(lookup({{"OMPI_COMM_WORLD_RANK", "3"}, {"OMPI_COMM_WORLD_SIZE", "8"},
                                            {"OMPI_COMM_WORLD_LOCAL_RANK", "3"}}));
  REQUIRE(ompi);
  CHECK(ompi->rank == 3);
  CHECK(ompi->master_addr == "127.0.0.1");
  CHECK(ompi->master_port == 29500);
  const auto slurm = launch_env_from(
      lookup({{"SLURM_PROCID", "2"}, {"SLURM_NTASKS", "3"}, {"SLURM_STEP_NUM_TASKS", "3"}}));
  REQUIRE(slurm);
  CHECK(slurm->local_rank == 2);
  CHECK(slurm->convention == "SLURM_PROCID/SLURM_NTASKS");
  CHECK_THROWS_WITH_AS(launch_env_from(lookup({{"RANK", "4"}, {"WORLD_SIZE", "4"}})),
                       "RANK='4' is not a number in 0..3", UsageError);
  CHECK_THROWS_AS(launch_env_from(lookup({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "x"}})),
                  UsageError);
}

TEST_CASE("rendezvous over loopback: 2 to 4 processes gather in rank order and share an id") {
  for (int world : {2, 3, 4}) {
    CAPTURE(world);
    const int port = free_port();
    const auto results = run_ranks(world, all_ranks(world), [&](int rank) {
      Rendezvous rv = Rendezvous::join(env_for(rank, world, port), 10s);
      const std::vector<std::string> all = rv.all_gather("blob-of-" + std::to_string(rank));
      std::string joined;
      for (const std::string& b : all) joined += b + ",";
      // A 128-byte id with zero bytes inside, as ncclUniqueId is.
      std::string id(128, '\0');
      for (int i = 0; i < 128; i += 3) id[i] = static_cast<char>(i);
      const std::string got = rv.broadcast(rank == 0 ? id : std::string("ignored"));
      return joined + (got == id ? "id-ok" : "id-wrong");
    });
    std::string expected;
    for (int r = 0; r < world; ++r) expected += "blob-of-" + std::to_string(r) + ",";
    for (int r = 0; r < world; ++r) {
      CAPTURE(r);
      CHECK(results[r].exit_code == 0);
      CHECK(results[r].text == expected + "id-ok");
    }
  }
}

TEST_CASE("rendezvous: a rank that dies after joining is seen closed, and the others still gather") {
  const int port = free_port();
  const auto results = run_ranks(3, all_ranks(3), [&](int rank) {
    Rendezvous rv = Rendezvous::join(env_for(rank, 3, port), 10s);
    rv.all_gather("first-" + std::to_string(rank));  // every rank took part once
    if (rank == 2) ::_exit(0);                       // then it dies, no goodbye
    std::string text;
    if (rank == 0) text = rv.peer_closed(2, 5s) ? "closed;" : "open;";
    for (const std::string& b : rv.all_gather_present("after-" + std::to_string(rank), {2}))
      text += b + ",";
    if (rank == 0) {  // rank 0 cannot be absent: refused on the spot, nobody waits
      try {
        rv.all_gather_present("x", {0});
        text += ";not refused";
      } catch (const EnvironmentError&) {
        text += ";refused";
      }
    }
    return text;
  });
  CHECK(results[0].exit_code == 0);
  CHECK(results[0].text == "closed;after-0,after-1,,;refused");
  CHECK(results[1].exit_code == 0);
  CHECK(results[1].text == "after-0,after-1,,");
  CHECK(results[2].exit_code == 0);
}

TEST_CASE("rendezvous: a live peer is not reported closed; only rank 0 may ask") {
  const int port = free_port();
  const auto results = run_ranks(2, all_ranks(2), [&](int rank) {
    Rendezvous rv = Rendezvous::join(env_for(rank, 2, port), 10s);
    std::string text;
    if (rank == 0) text = rv.peer_closed(1, 200ms) ? "closed" : "open";
    else {
      try {
        rv.peer_closed(0, 10ms);
      } catch (const EnvironmentError&) {
        text = "refused";
      }
      std::this_thread::sleep_for(600ms);  // after rank 0 has looked (it drops what it reads)
    }
    rv.all_gather("done");
    return text;
  });
  CHECK(results[0].text == "open");
  CHECK(results[1].text == "refused");
}

TEST_CASE("rendezvous: a rank that never comes is a clear timeout on every rank, no hang") {
  const int port = free_port();
  const auto t0 = std::chrono::steady_clock::now();
  // World of 3, rank 2 never started.
  const auto results = run_ranks(3, {0, 1}, [&](int rank) {
    Rendezvous rv = Rendezvous::join(env_for(rank, 3, port), 1500ms);
    rv.all_gather("x");
    return std::string("joined");
  });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(seconds < 15);  // bounded by the timeout (plus process start), never the kill
  CHECK(results[0].exit_code == to_int(ExitCode::environment));
  CHECK(results[0].text == "rendezvous: rank 0 at 127.0.0.1:" + std::to_string(port) +
                               " waited 1.5 s; rank(s) 2 of 3 never joined");
  // Rank 1 joined; rank 0 gave up and closed, so rank 1's wait ends too.
  CHECK(results[1].exit_code == to_int(ExitCode::environment));
  CHECK(results[1].text.find("rendezvous: ") == 0);
  CHECK(results[1].text.find('\n') == std::string::npos);
}

TEST_CASE("rendezvous: an address that does not answer is exit 3 with one line") {
  const int port = free_port();  // nobody listens
  const auto results = run_ranks(2, {1}, [&](int rank) {
    Rendezvous::join(env_for(rank, 2, port), 700ms);
    return std::string("joined");
  });
  CHECK(results[0].exit_code == to_int(ExitCode::environment));
  CHECK(results[0].text.find("rendezvous: rank 1: no answer from rank 0 at 127.0.0.1:" +
                             std::to_string(port) + " within 0.7 s") == 0);
  CHECK(results[0].text.find('\n') == std::string::npos);
}

TEST_CASE("rendezvous: a peer with another world size is refused") {
  const int port = free_port();
  const auto results = run_ranks(2, {0, 1}, [&](int rank) {
    Rendezvous::join(env_for(rank, rank == 0 ? 2 : 3, port), 5s);
    return std::string("joined");
  });
  CHECK(results[0].exit_code == to_int(ExitCode::environment));
  CHECK(results[0].text == "rendezvous: rank 0 refused a peer: WORLD_SIZE 3, rank 0 has 2");
  CHECK(results[1].exit_code == to_int(ExitCode::environment));
  CHECK(results[1].text.find("refused rank 1: WORLD_SIZE 3, rank 0 has 2") != std::string::npos);
}

TEST_CASE("expert-map handshake: agreeing ranks build, a disagreeing rank is refused on all") {
  for (int world : {2, 3}) {
    CAPTURE(world);
    const int port = free_port();
    const auto agree = run_ranks(world, all_ranks(world), [&](int rank) {
      Rendezvous rv = Rendezvous::join(env_for(rank, world, port), 10s);
      agree_on_expert_map(rv, ExpertMap::contiguous(10, world));
      return std::string("built");
    });
    for (const auto& r : agree) CHECK(r.text == "built");

    const int port2 = free_port();
    const auto disagree = run_ranks(world, all_ranks(world), [&](int rank) {
      Rendezvous rv = Rendezvous::join(env_for(rank, world, port2), 10s);
      // The last rank holds the blocks in reverse rank order.
      std::vector<int> owners = ExpertMap::contiguous(10, world).owners();
      if (rank == world - 1)
        for (int& o : owners) o = world - 1 - o;
      agree_on_expert_map(rv, ExpertMap::from_owners(owners, world));
      return std::string("built");
    });
    for (const auto& r : disagree) {
      CHECK(r.exit_code == to_int(ExitCode::usage));
      CHECK(r.text.find("expert map handshake: ranks disagree on the expert map, refusing to "
                        "build the layer: rank 0 has 'table: 10 experts over") == 0);
      CHECK(r.text.find("rank " + std::to_string(world - 1) + " has 'table") != std::string::npos);
    }
  }
}
