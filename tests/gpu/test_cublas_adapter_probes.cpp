// Probes bandwidth, capture-replay, route-telemetry and two-engine through the cuBLAS adapter
// (adapters/cublas_per_expert/: one cuBLAS GEMM per expert, batched, routing on the device), an
// engine of another design than moebench's: every case checks its outputs against moebench's
// CPU reference and PASSes. Skipped (77) where the adapter was not built.
#include <doctest/doctest.h>

#include <cstdio>

#include "support/adapter_probe_runs.hpp"

namespace {

std::string cublas_adapter() {
  const std::string file = moe::test::adapter_file("MOEBENCH_CUBLAS_ADAPTER", MOEBENCH_CUBLAS_ADAPTER);
  if (file.empty()) {
    std::printf("SKIPPED: adapters/cublas_per_expert was not built (no cuBLAS)\n");
    std::fflush(stdout);
    std::exit(moe::test::kSkipExitCode);
  }
  return file;
}

}  // namespace

TEST_CASE("through the cuBLAS adapter each probe checks the outputs against the reference and passes") {
  moe::test::test_device();
  const std::string cublas = cublas_adapter();
  for (std::vector<std::string> args : moe::test::kAdapterProbeRuns) {
    CAPTURE(args.front());
    args.insert(args.end(), {"--engine", cublas});
    moe::test::check_passes_through(moe::test::run_probe("cublas-" + args.front(), args), "cublas-per-expert");
  }
  // A model shape: DeepSeek-V2-Lite's decode sizes, eager and replayed.
  moe::test::check_passes_through(
      moe::test::run_probe("cublas-lite", {"bandwidth", "--shape", "deepseek-v2-lite", "--m", "1,64",
                                           "--weight-format", "bf16", "--engine", cublas}),
      "cublas-per-expert");
}

TEST_CASE("two-engine through the cuBLAS adapter passes: its tables are its engine's own") {
  moe::test::test_device();
  const nlohmann::json j = moe::test::run_probe(
      "cublas-two-engine", {"two-engine", "--shape", "tiny", "--m", "4", "--engine", cublas_adapter()});
  REQUIRE(j.at("cases").size() == 1);
  const nlohmann::json& c = j.at("cases").at(0);
  CAPTURE(c.dump());
  CHECK(c.at("verdict") == "PASS");
  moe::test::check_evidence_proven(c);
}
