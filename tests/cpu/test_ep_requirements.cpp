// The run-wide check of the expert-parallel probes: nothing for single-GPU probes, one
// EnvironmentError line (exit 3) when a GPU of --devices is missing, NCCL is not there or the
// build has none, whatever this machine has.
#include <doctest/doctest.h>

#include "common/errors.hpp"
#include "probes/ep_common/ep_requirements.hpp"
#include "probes/run_options.hpp"

using namespace moe;

TEST_CASE("multi-GPU requirements: single-GPU probes need nothing, a missing GPU is exit 3") {
  RunOptions options;
  CHECK_NOTHROW(ep::check_multi_gpu_requirements({&probe_by_name("copy"), &probe_by_name("barrier")}, options));
  options.devices = {0, 999};
  for (const char* name : {"ep-ceiling", "ep-step", "ep-expert-map", "ep-hang"}) {
    CAPTURE(name);
    try {
      ep::check_multi_gpu_requirements({&probe_by_name("copy"), &probe_by_name(name)}, options);
      FAIL("no error for GPU 999");
    } catch (const Error& e) {
      CHECK(e.code() == ExitCode::environment);
      const std::string what = e.what();
      CHECK(what.find('\n') == std::string::npos);
      // Which of the three it is depends on the machine; each names its cause.
      CHECK((what.find("--devices names GPU") != std::string::npos || what.find("NCCL") != std::string::npos));
    }
  }
}
