#pragma once
#include <string>
#include <vector>

#include "probes/run_options.hpp"

namespace moe::cli {

// `moebench run`: what the user asked for, as parsed (validated by resolve_run_options).
struct RunRequest {
  std::vector<std::string> probes;  // empty: the default suite
  std::vector<std::string> shapes;
  std::vector<int> ms;
  std::vector<std::string> weight_formats;
  std::vector<std::string> modes;
  std::string l2 = "cold";
  std::string output = "moebench-report.json";
  std::string format = "table";  // stdout: table or json
  std::string mutation;
  std::size_t min_samples = 10;
  double max_noise_pct = 0.5;
  double min_time_s = 0.5;
  double timeout_s = 15;
  std::size_t max_samples = 5000;
  int warmup = 1;
  bool no_kernel_timing = false;
  int device = 0;
  std::uint64_t seed = 1;
  std::size_t copy_bytes = 0;
  std::string fixtures;
  std::vector<std::string> argv;
};

int run_command(const RunRequest& request);
int list_command(const std::string& what, const std::string& fixtures);
int env_command(int device, const std::string& format);

// Where shapes and cases live: --fixtures, else $MOEBENCH_FIXTURES, else the source tree's.
std::string fixtures_dir(const std::string& flag);

}  // namespace moe::cli
