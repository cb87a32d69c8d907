// The cuBLAS peer of probe bandwidth without a GPU: its loader when the library is not there,
// the --peer option, and its report fields (terminal table, file round trip, compare).
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>

#include "kernels/peer/cublas_library.hpp"
#include "reports/compare.hpp"
#include "reports/report.hpp"
#include "reports/report_writer.hpp"
#include "reports/table.hpp"
#include "support/cli_runner.hpp"

using namespace moe;
using kernels::peer::find_cublas;

namespace {

bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

test::CliResult moebench(const std::string& args) {
  return test::run_shell(test::quote(test::moebench_binary()) + " " + args);
}

// A bandwidth case as the probe writes it, with or without the peer's figure.
report::CaseResult bandwidth_case(int m, bool with_peer) {
  report::CaseResult c;
  c.probe = "bandwidth";
  c.name = "step";
  c.shape = "tiny";
  c.m = m;
  c.format = "bf16";
  c.mode = "eager";
  c.seed = 1;
  c.verdict = report::Verdict::pass;
  c.reason = "measured";
  report::Measurement meas;
  for (int i = 0; i < 12; ++i) meas.gpu_time_us.push_back(30.0 + 0.01 * i);
  meas.host_time_us = meas.gpu_time_us;
  meas.l2_mode = "cold";
  meas.stop_reason = "converged";
  c.measurements["main"] = meas;
  c.metrics["gbps"] = {1000, "GB/s"};
  c.metrics["pct_of_read_ceiling"] = {22, "%"};
  if (with_peer) {
    c.metrics["cublas_gpu_us"] = {40, "us"};
    c.metrics["cublas_gpu_us_per_layer"] = {20, "us"};
    c.metrics["cublas_gbps"] = {750, "GB/s"};
    c.metrics["moebench_over_cublas"] = {0.75, "x"};
    c.checks.push_back({"cublas_peer_matches_reference", true, "relative L2 error 0.004"});
    c.evidence["peer"] = {{"name", "cublas"}, {"measured", true}, {"library", "libcublas.so.13"}};
  }
  return c;
}

}  // namespace

TEST_CASE("the cuBLAS loader says what it looked for and why nothing loaded") {
  const auto a = find_cublas({"libcublas-not-installed.so.99", "libcublas-neither.so.98"});
  CHECK(!a.library);
  CHECK(a.looked_for == "libcublas-not-installed.so.99, libcublas-neither.so.98");
  CHECK(has(a.why_missing, "libcublas-not-installed.so.99: "));
  CHECK(has(a.why_missing, "libcublas-neither.so.98: "));
  const std::string message = a.missing_message();
  CHECK(has(message, "looked for libcublas-not-installed.so.99, libcublas-neither.so.98"));
  CHECK(has(message, "nvidia-cublas wheel"));
  CHECK(has(message, "LD_LIBRARY_PATH"));
  CHECK(!has(message, "\n"));
}

TEST_CASE("a library without cuBLAS's entry points is refused, naming what it lacks") {
  const auto a = find_cublas({"libm.so.6"});  // loads everywhere, exports no cuBLAS
  CHECK(!a.library);
  CHECK(has(a.why_missing, "libm.so.6: lacks cublasCreate_v2"));
  CHECK(has(a.why_missing, "cublasGemmGroupedBatchedEx"));
  CHECK(has(a.why_missing, "12.5 or newer"));
}

TEST_CASE("the sonames tried are CUDA 13's cuBLAS, then CUDA 12's") {
  CHECK(kernels::peer::default_cublas_names() ==
        std::vector<std::string>{"libcublas.so.13", "libcublas.so.12"});
}

TEST_CASE("--peer: the default suite times the peer, named probes only when asked") {
  const std::string plan = "--dry-run --shape tiny --m 1";
  // The default suite times the peer where the library loads; named probes do not, unless asked.
  CHECK(has(moebench("run " + plan).out, "cuBLAS peer timed beside each case (where libcublas loads)"));
  CHECK(!has(moebench("run bandwidth " + plan).out, "cuBLAS peer"));
  CHECK(!has(moebench("run --peer none " + plan).out, "cuBLAS peer"));
  CHECK(has(moebench("run bandwidth --peer cublas " + plan).out, "(required: exit 3 without libcublas)"));
  CHECK(has(moebench("run bandwidth --peer-optional " + plan).out, "(where libcublas loads)"));

  // Invalid values and --peer without probe bandwidth: tests/cpu/test_cli.cpp (exit 2, one line).
  const test::CliResult help = moebench("run --help");
  CHECK(has(help.out, "--peer"));
  CHECK(has(help.out, "none or cublas"));
  CHECK(!has(help.out, "--peer-optional"));  // internal: the default suite's child process
}

TEST_CASE("--peer cublas without the library exits 3 in one line naming what was looked for") {
  if (find_cublas().library) {
    MESSAGE("libcublas loads here: the missing-library exit is exercised where it does not");
    return;
  }
  const test::CliResult r = moebench("run bandwidth --peer cublas -o /tmp/moebench-peer-missing.json");
  CHECK(r.exit_code == 3);
  CHECK(has(r.err, "--peer cublas: cuBLAS could not be loaded (looked for libcublas.so.13, libcublas.so.12"));
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
}

TEST_CASE("env says whether the cuBLAS peer can run here") {
  const test::CliResult r = moebench("env --format json");
  REQUIRE(r.exit_code == 0);
  const nlohmann::json peer = nlohmann::json::parse(r.out).at("peer");
  if (find_cublas().library) {
    CHECK(peer.at("cublas").get<std::string>().rfind("libcublas.so.", 0) == 0);
    CHECK(!peer.at("cublas_version").get<std::string>().empty());
  } else {
    CHECK(peer.at("cublas").is_null());
    CHECK(has(peer.at("cublas_reason").get<std::string>(), "looked for libcublas.so.13"));
  }
}

TEST_CASE("the terminal table gets cublas us and ratio columns only when a case has the peer") {
  report::Report with;
  with.cases = {bandwidth_case(1, true), bandwidth_case(8, false)};
  const std::string table = report::render_table(with);
  CHECK(has(table, "cublas us"));
  CHECK(has(table, "ratio"));
  CHECK(has(table, "40.0"));
  CHECK(has(table, "0.75"));
  CHECK(has(table, "ratio: gpu us over cublas us"));

  report::Report without;
  without.cases = {bandwidth_case(1, false)};
  CHECK(!has(report::render_table(without), "cublas"));

  // The default suite without the library: the cases say why, and so does the table.
  report::CaseResult missing = bandwidth_case(1, false);
  missing.evidence["peer"] = {{"name", "cublas"}, {"measured", false},
                              {"why_not", "cuBLAS could not be loaded (looked for libcublas.so.13)"}};
  without.cases = {missing};
  const std::string said = report::render_table(without);
  CHECK(has(said, "cuBLAS peer not measured: cuBLAS could not be loaded (looked for libcublas.so.13)"));
  CHECK(!has(said, "cublas us"));
}

TEST_CASE("reports with and without the peer load, and compare against each other") {
  const auto dir = test::scratch_dir("cublas-peer");
  report::Report base, head;
  base.cases = {bandwidth_case(1, true), bandwidth_case(8, true)};
  head.cases = {bandwidth_case(1, false), bandwidth_case(8, true)};
  for (auto* r : {&base, &head}) {
    r->tool = {{"name", "moebench"}};
    r->options = {{"peer", r == &base ? "cublas" : "none"}, {"peer_required", r == &base}};
  }
  report::ReportWriter((dir / "base.json").string()).write(base);
  report::ReportWriter((dir / "head.json").string()).write(head);
  const report::Report loaded = report::load_report((dir / "base.json").string());
  REQUIRE(loaded.cases.size() == 2);
  const report::CaseResult& c = loaded.cases[0];
  CHECK(c.metrics.at("cublas_gpu_us").value == doctest::Approx(40));
  CHECK(c.metrics.at("cublas_gpu_us").unit == "us");
  CHECK(c.metrics.at("cublas_gbps").unit == "GB/s");
  CHECK(c.metrics.at("moebench_over_cublas").value == doctest::Approx(0.75));
  CHECK(c.evidence.at("peer").at("library") == "libcublas.so.13");
  CHECK(loaded.options.at("peer") == "cublas");

  // Either way round: the peer is not a measurement of its own, so only `main` is compared.
  for (const auto& [b, h] : {std::pair{"base.json", "head.json"}, std::pair{"head.json", "base.json"}}) {
    const report::Comparison cmp = report::compare_reports(
        report::load_report((dir / b).string()), report::load_report((dir / h).string()), {});
    REQUIRE(cmp.cases.size() == 2);
    for (const report::CaseComparison& cc : cmp.cases) {
      REQUIRE(cc.metrics.size() == 1);
      CHECK(cc.metrics[0].measurement == "main");
    }
    CHECK(moebench("compare " + test::quote((dir / b).string()) + " " +
                   test::quote((dir / h).string()))
              .exit_code == 0);
  }
  std::filesystem::remove_all(dir);
}
