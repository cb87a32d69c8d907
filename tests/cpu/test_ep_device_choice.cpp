// The GPU a hand-started worker runs on: --device when given, else its launcher's local rank
// (torchrun, mpirun, srun), else 0; the report says which.
#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "common/errors.hpp"
#include "engine/ep/launch_env.hpp"
#include "support/cli_runner.hpp"

using moe::ep::choose_device;

namespace {

moe::ep::EnvLookup lookup(std::vector<std::pair<const char*, const char*>> vars) {
  return [vars](const char* name) -> const char* {
    for (const auto& [k, v] : vars)
      if (std::string(k) == name) return v;
    return nullptr;
  };
}

}  // namespace

TEST_CASE("--device wins over every launcher's local rank") {
  const auto c = choose_device(5, lookup({{"RANK", "1"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "1"}}));
  CHECK(c.device == 5);
  CHECK(c.source == "--device");
  CHECK(choose_device(0, lookup({})).source == "--device");
}

TEST_CASE("without --device a worker takes its local rank from its launcher") {
  struct Row {
    std::vector<std::pair<const char*, const char*>> env;
    int device;
    std::string source;
  };
  const std::vector<Row> rows{
      {{{"RANK", "9"}, {"WORLD_SIZE", "16"}, {"LOCAL_RANK", "1"}}, 1, "LOCAL_RANK"},
      {{{"OMPI_COMM_WORLD_RANK", "6"}, {"OMPI_COMM_WORLD_SIZE", "8"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "2"}},
       2, "OMPI_COMM_WORLD_LOCAL_RANK"},
      {{{"PMI_RANK", "5"}, {"PMI_SIZE", "8"}, {"MPI_LOCALRANKID", "1"}}, 1, "MPI_LOCALRANKID"},
      {{{"SLURM_PROCID", "7"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "3"}, {"SLURM_STEP_NUM_TASKS", "8"}},
       3, "SLURM_LOCALID"},
      // No local rank variable: the rank (the one-host layout).
      {{{"SLURM_PROCID", "1"}, {"SLURM_NTASKS", "2"}, {"SLURM_STEP_NUM_TASKS", "2"}}, 1, "SLURM_PROCID"},
      {{{"RANK", "1"}, {"WORLD_SIZE", "2"}}, 1, "RANK"},
      // Not a worker: a local rank alone is no launcher's convention.
      {{{"LOCAL_RANK", "3"}}, 0, "default"},
      {{}, 0, "default"},
  };
  for (const Row& r : rows) {
    const auto c = choose_device(std::nullopt, lookup(r.env));
    CAPTURE(r.source);
    CHECK(c.device == r.device);
    CHECK(c.source == r.source);
  }
}

TEST_CASE("a malformed local rank is refused, naming the variable") {
  CHECK_THROWS_WITH_AS(
      choose_device(std::nullopt, lookup({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "x"}})),
      "LOCAL_RANK='x' is not a number in 0..1048576", moe::UsageError);
}

TEST_CASE("moebench run still refuses a negative --device before touching a GPU") {
  const auto r = moe::test::moebench("run", "copy", "--device", "-1");
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--device -1 must be >= 0") != std::string::npos);
}
