// compare, render and repro on an expert-parallel report: cases with per-rank values
// (evidence.per_rank) and NAME_min / _mean / _max metrics, no sampled measurements, and the
// environment's `ranks` block (tests/data/reports/h200x2-ep-*.json, from generate_reports.py;
// the head's dispatch of one case is 30% slower on both ranks).
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "reports/compare.hpp"
#include "reports/rank_figures.hpp"
#include "reports/report.hpp"
#include "support/cli_runner.hpp"

using moe::test::data_file;
using moe::test::moebench;
using nlohmann::json;

namespace {

std::string ep_report(const std::string& which) { return data_file("reports/h200x2-ep-" + which + ".json"); }

const std::string kSlowKey = "ep-step/alltoall/shape=deepseek-v2-lite/m=32/format=bf16/mode=eager";

}  // namespace

TEST_CASE("compare judges expert-parallel cases on their per-rank medians and finds the slower step") {
  const auto r = moebench("compare", ep_report("base"), ep_report("head"), "--format", "json");
  CHECK(r.exit_code == 1);  // a SLOWER metric
  const json j = json::parse(r.out);
  int slower = 0, compared = 0;
  for (const json& c : j.at("cases"))
    for (const json& m : c.at("metrics")) {
      ++compared;
      CHECK(m.at("measurement") == "per_rank");
      CHECK(m.at("base_samples") == 2);
      if (m.at("change") == "SLOWER") {
        ++slower;
        CHECK(c.at("key") == kSlowKey);
      }
    }
  CHECK(compared == 12);  // every ep-step case; ep-hang and ep-drop-inflight have no figure
  CHECK(slower == 1);
  const auto same = moebench("compare", ep_report("base"), ep_report("base"));
  CHECK(same.exit_code == 0);
  CHECK(same.out.find("0 slower") != std::string::npos);
  // The exchange's GB/s and share of the link's ceiling compare the same way.
  const auto gbps = moebench("compare", ep_report("base"), ep_report("head"), "--metric", "gbps,pct");
  CHECK(gbps.exit_code == 1);
  CHECK(gbps.out.find("gbps [per_rank]") != std::string::npos);
}

TEST_CASE("the per-rank series and figures of a case") {
  const moe::report::Report base = moe::report::load_report(ep_report("base"));
  const moe::report::CaseResult& step = base.cases.front();
  REQUIRE(step.probe == "ep-step");
  const auto gpu = moe::report::per_rank_series(step, moe::report::ComparedMetric::gpu_time);
  REQUIRE(gpu.size() == 2);
  CHECK(gpu[0] == doctest::Approx(step.evidence["per_rank"][0]["step_us"].get<double>()));
  const auto pct = moe::report::per_rank_series(step, moe::report::ComparedMetric::pct_of_ceiling);
  REQUIRE(pct.size() == 2);
  CHECK(pct[1] == doctest::Approx(100 * step.evidence["per_rank"][1]["share_of_ceiling"].get<double>()));
  const auto& hang = base.cases[12];
  REQUIRE(hang.probe == "ep-hang");
  CHECK(moe::report::per_rank_series(hang, moe::report::ComparedMetric::gpu_time).empty());

  const auto rows = moe::report::rank_figures(base);
  CHECK(rows.size() == 12);
  const moe::report::RankFigure* s = rows.front().find("step_us");
  REQUIRE(s);
  CHECK(rows.front().ranks == 2);
  CHECK(s->unit == "us");
  CHECK(s->min <= s->mean);
  CHECK(s->mean <= s->max);
  CHECK(s->max == doctest::Approx(step.metrics.at("step_us_max").value));
}

TEST_CASE("render shows an expert-parallel report's figures per rank in every format") {
  const auto table = moebench("render", ep_report("base"));
  REQUIRE(table.exit_code == 0);
  CHECK(table.out.find("^ expert parallelism: the slowest rank's median step") != std::string::npos);
  CHECK(table.out.find("per rank (expert parallelism") != std::string::npos);
  CHECK(table.out.find("ep-step/alltoall/eager deepseek-v2-lite M=32") != std::string::npos);
  const auto md = moebench("render", ep_report("base"), "--format", "markdown");
  REQUIRE(md.exit_code == 0);
  CHECK(md.out.find("### Per rank (expert parallelism)") != std::string::npos);
  CHECK(md.out.find("| step_us |") != std::string::npos);
  CHECK(md.out.find("\"peer_access\"") != std::string::npos);  // the ranks block in the environment
  const auto html = moebench("render", ep_report("base"), "--format", "html");
  REQUIRE(html.exit_code == 0);
  CHECK(html.out.find("<h2>Per rank</h2>") != std::string::npos);
  for (const char* f : {"gbench", "json"}) {
    CAPTURE(f);
    const auto r = moebench("render", ep_report("base"), "--format", f);
    CHECK(r.exit_code == 0);
    CHECK(json::parse(r.out).is_object());  // parses, as an object
  }
  const auto j = json::parse(moebench("render", ep_report("base"), "--format", "json").out);
  CHECK(j.at("environment").at("ranks").at("world") == 2);
}

TEST_CASE("repro plans an expert-parallel report on the GPUs it ran on") {
  const auto r = moebench("repro", ep_report("base"), "--dry-run");
  REQUIRE(r.exit_code == 0);
  const std::string all = r.out + r.err;
  CHECK(all.find("moebench run ep-step ep-hang ep-drop-inflight") != std::string::npos);
  CHECK(all.find("--devices 0,1") != std::string::npos);
  CHECK(all.find("--timeout 5") != std::string::npos);
  CHECK(all.find(kSlowKey) != std::string::npos);
  CHECK(all.find("ep-hang/silent-rank") != std::string::npos);
}
