// How long the report tooling takes on large inputs: loading a report of thousands of cases,
// comparing two of them, rendering, and the statistics under both. Reports are generated here,
// deterministically, so the benchmarks need no data files.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <random>

#include "reports/compare.hpp"
#include "reports/html_page.hpp"
#include "reports/rank_test.hpp"
#include "reports/report_writer.hpp"
#include "reports/statistics.hpp"

namespace {

using namespace moe::report;

std::vector<double> series(std::size_t n, double center, double rsd, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(0, rsd);
  std::vector<double> v(n);
  for (double& x : v) x = center * (1 + noise(rng));
  return v;
}

// A suite of `cases` cases of `samples` samples each, as `moebench run` would write it.
Report synthetic_report(std::size_t cases, std::size_t samples, std::uint64_t seed) {
  Report r;
  r.tool = {{"version", "0.1.0"}, {"git_commit", "0123456789ab"}};
  r.environment = {{"gpu", {{"name", "NVIDIA H200"}, {"available", true}}}};
  const char* shapes[] = {"deepseek-v2-lite", "qwen3-30b-a3b", "mixtral-8x7b", "deepseek-v3"};
  for (std::size_t i = 0; i < cases; ++i) {
    CaseResult c;
    c.probe = "bandwidth";
    c.name = "graph";
    c.shape = shapes[i % 4];
    c.m = 1 << (i / 4 % 12);
    c.format = i / 48 % 2 ? "int4" : "bf16";
    c.mode = "graph";
    c.seed = i / 96;  // keeps keys unique: seed is not in the key, so vary the mutation
    c.mutation = "variant-" + std::to_string(i / 96);
    Measurement m;
    m.gpu_time_us = series(samples, 20 + static_cast<double>(i % 97), 0.003, seed * 7919 + i);
    m.host_time_us = series(samples, 6, 0.03, seed * 104729 + i);
    m.kernel_time_us = m.gpu_time_us;
    m.kernel_count.assign(samples, 3);
    m.sm_clock_mhz.assign(samples, 1980);
    m.throttled.assign(samples, false);
    m.l2_mode = "cold";
    m.stop_reason = "converged";
    m.kernel_timing = true;
    c.measurements["main"] = std::move(m);
    c.metrics["gbps"] = {3000, "GB/s"};
    r.cases.push_back(std::move(c));
  }
  return r;
}

std::string temp_report(std::size_t cases, std::size_t samples, std::uint64_t seed) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("moebench-microbench-" + std::to_string(::getpid()) + "-" +
                     std::to_string(cases) + "-" + std::to_string(seed) + ".json");
  ReportWriter(path.string()).write(synthetic_report(cases, samples, seed));
  return path.string();
}

void BM_load_report(benchmark::State& state) {
  const std::string path = temp_report(static_cast<std::size_t>(state.range(0)), 64, 1);
  for (auto _ : state) benchmark::DoNotOptimize(load_report(path));
  state.counters["bytes"] = static_cast<double>(std::filesystem::file_size(path));
  std::filesystem::remove(path);
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_load_report)->Arg(100)->Arg(2000)->Unit(benchmark::kMillisecond);

void BM_compare_reports(benchmark::State& state) {
  const std::size_t cases = static_cast<std::size_t>(state.range(0));
  const Report base = synthetic_report(cases, 64, 1), head = synthetic_report(cases, 64, 2);
  CompareOptions o;
  o.metrics = {ComparedMetric::gpu_time, ComparedMetric::host_time, ComparedMetric::gbps};
  for (auto _ : state) benchmark::DoNotOptimize(compare_reports(base, head, o));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_compare_reports)->Arg(100)->Arg(2000)->Unit(benchmark::kMillisecond);

void BM_render_comparison_html(benchmark::State& state) {
  const std::size_t cases = static_cast<std::size_t>(state.range(0));
  const Report base = synthetic_report(cases, 64, 1), head = synthetic_report(cases, 64, 2);
  const Comparison c = compare_reports(base, head, {});
  for (auto _ : state) benchmark::DoNotOptimize(render_html(c));
}
BENCHMARK(BM_render_comparison_html)->Arg(100)->Arg(2000)->Unit(benchmark::kMillisecond);

void BM_summarize(benchmark::State& state) {
  const auto v = series(static_cast<std::size_t>(state.range(0)), 100, 0.01, 3);
  for (auto _ : state) benchmark::DoNotOptimize(summarize(v));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_summarize)->Arg(64)->Arg(5000)->Arg(100000);

void BM_rank_test(benchmark::State& state) {
  const std::size_t n = static_cast<std::size_t>(state.range(0));
  const auto a = series(n, 100, 0.01, 4), b = series(n, 101, 0.01, 5);
  for (auto _ : state) benchmark::DoNotOptimize(rank_test(a, b, 0.99));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_rank_test)->Arg(64)->Arg(5000)->Arg(100000);

}  // namespace

BENCHMARK_MAIN();
