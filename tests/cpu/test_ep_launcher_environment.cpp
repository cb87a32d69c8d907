// What a moebench process reads from the environment it was started in, before NCCL loads:
// inside an sbatch or salloc shell it is the launcher, not rank 0 of the job's tasks; and
// NVLink multicast is off in every process, whoever started it, another value refused.
#include <doctest/doctest.h>

#include <cstdlib>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "common/errors.hpp"
#include "engine/ep/launch_env.hpp"
#include "engine/ep/nvls_setting.hpp"

using namespace moe;
using namespace moe::ep;

namespace {

EnvLookup lookup(std::vector<std::pair<const char*, const char*>> vars) {
  return [vars](const char* name) -> const char* {
    for (const auto& [k, v] : vars)
      if (std::string(k) == name) return v;
    return nullptr;
  };
}

// Sets or unsets NCCL_NVLS_ENABLE for one test and puts the old value back.
class ScopedNvls {
 public:
  explicit ScopedNvls(const char* value) {
    if (const char* old = std::getenv("NCCL_NVLS_ENABLE")) old_ = old, had_ = true;
    if (value) ::setenv("NCCL_NVLS_ENABLE", value, 1);
    else ::unsetenv("NCCL_NVLS_ENABLE");
  }
  ~ScopedNvls() {
    if (had_) ::setenv("NCCL_NVLS_ENABLE", old_.c_str(), 1);
    else ::unsetenv("NCCL_NVLS_ENABLE");
  }

 private:
  std::string old_;
  bool had_ = false;
};

}  // namespace

TEST_CASE("an sbatch shell is the launcher; an srun task is a worker") {
  // What an sbatch script's shell holds for `#SBATCH --ntasks=2`: no step of tasks.
  const std::vector<std::pair<const char*, const char*>> batch_shell{
      {"SLURM_JOB_ID", "4711"}, {"SLURM_PROCID", "0"}, {"SLURM_NTASKS", "2"}, {"SLURM_LOCALID", "0"}};
  CHECK_FALSE(launch_env_from(lookup(batch_shell)).has_value());
  CHECK(choose_device(std::nullopt, lookup(batch_shell)).source == "default");
  // The same variables in a task srun started: a step of 2 tasks.
  auto task = batch_shell;
  task.push_back({"SLURM_STEP_NUM_TASKS", "2"});
  task[1].second = "1";
  const auto env = launch_env_from(lookup(task));
  REQUIRE(env);
  CHECK(env->rank == 1);
  CHECK(env->world == 2);
  CHECK(env->convention == "SLURM_PROCID/SLURM_NTASKS");
  // torchrun inside the sbatch shell: its own variables win.
  auto torchrun = batch_shell;
  torchrun.insert(torchrun.end(), {{"RANK", "1"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "1"}});
  REQUIRE(launch_env_from(lookup(torchrun)));
  CHECK(launch_env_from(lookup(torchrun))->convention == "RANK/WORLD_SIZE");
}

TEST_CASE("NCCL_NVLS_ENABLE: unset or 0 is kept, anything else is refused by name") {
  CHECK(nvls_setting_problem(nullptr).empty());
  CHECK(nvls_setting_problem("0").empty());
  for (const char* value : {"1", "2", "", "true"}) {
    CAPTURE(value);
    const std::string p = nvls_setting_problem(value);
    CHECK(p.find("NCCL_NVLS_ENABLE='" + std::string(value) + "'") != std::string::npos);
    CHECK(p.find("valid: unset or 0") != std::string::npos);
  }
}

TEST_CASE("every process turns NVLink multicast off itself, whatever launcher started it") {
  {
    const ScopedNvls unset(nullptr);  // mpirun, srun or torchrun gave nothing
    turn_off_nvls();
    REQUIRE(std::getenv("NCCL_NVLS_ENABLE"));
    CHECK(std::string(std::getenv("NCCL_NVLS_ENABLE")) == "0");
  }
  {
    const ScopedNvls zero("0");
    CHECK_NOTHROW(turn_off_nvls());
    CHECK(std::string(std::getenv("NCCL_NVLS_ENABLE")) == "0");
  }
  {
    const ScopedNvls on("1");  // inherited from the job's environment
    CHECK_THROWS_WITH_AS(turn_off_nvls(),
                         doctest::Contains("NCCL_NVLS_ENABLE='1' in the environment"), UsageError);
    CHECK(std::string(std::getenv("NCCL_NVLS_ENABLE")) == "1");  // not silently overwritten
  }
}
