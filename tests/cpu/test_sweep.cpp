// The probes' declared sweeps (probes/sweep.hpp): the cases each enumerates by default are the
// ones its loops made before (the keys of the committed baselines), the user's axes replace the
// defaults, --filter selects and refuses, and the dry run, `list` and the progress numbering all
// read the same declarations.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "common/errors.hpp"
#include "probes/probe.hpp"
#include "probes/sweep_plan.hpp"
#include "reports/report.hpp"
#include "support/cli_runner.hpp"

namespace fs = std::filesystem;
using namespace moe;

namespace {

RunOptions defaults() {
  RunOptions o;
  o.fixtures_dir = MOEBENCH_FIXTURES_DIR;
  return o;
}

Shape library_shape(const std::string& name) {
  return resolve_shape(name, load_shape_library(fs::path(MOEBENCH_FIXTURES_DIR) / "shapes"));
}

std::vector<SweepPoint> points_of(const std::string& probe, const RunOptions& o, int rep = 0) {
  const ProbeInfo& p = probe_by_name(probe);
  REQUIRE(p.sweep != nullptr);
  return enumerate_sweep(p.name, *p.sweep, o, rep);
}

// A key without its "/dims=" fingerprint, as the tables print it.
std::string short_key(const std::string& key) { return key.substr(0, key.find("/dims=")); }

std::vector<std::string> short_keys(const std::vector<SweepPoint>& points) {
  std::vector<std::string> keys;
  for (const SweepPoint& p : points) keys.push_back(short_key(p.key));
  return keys;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The lines of `text` holding both `a` and `b`.
int lines_with(const std::string& text, const std::string& a, const std::string& b) {
  int n = 0;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    const std::string line = text.substr(start, end - start);
    n += has(line, a) && has(line, b);
    start = end + 1;
  }
  return n;
}

const std::vector<std::string> kMoeShapes{"deepseek-v2-lite", "qwen3-30b-a3b", "mixtral-8x7b",
                                          "gpt-oss-20b"};

// Shape, format, M, case, mode: the order of the loops the probes had.
std::vector<std::string> product(const std::string& probe, const std::vector<std::string>& cases,
                                 const std::vector<std::string>& shapes, const std::vector<int>& ms,
                                 const std::vector<std::string>& formats,
                                 const std::vector<std::string>& modes) {
  std::vector<std::string> keys;
  for (const std::string& s : shapes)
    for (const std::string& f : formats)
      for (int m : ms)
        for (const std::string& c : cases)
          for (const std::string& mode : modes)
            keys.push_back(probe + "/" + c + "/shape=" + s + "/m=" + std::to_string(m) +
                           "/format=" + f + (mode.empty() ? "" : "/mode=" + mode));
  return keys;
}

}  // namespace

TEST_CASE("every probe's default sweep is the one its loops ran") {
  const RunOptions o = defaults();
  const std::vector<std::string> both{"bf16", "int4"}, eager_graph{"eager", "graph"};
  // 4 shapes x 2 formats x 6 Ms x 2 modes.
  const auto bandwidth = short_keys(points_of("bandwidth", o));
  CHECK(bandwidth.size() == 96);
  CHECK(bandwidth == product("bandwidth", {"step"}, kMoeShapes, {1, 2, 4, 8, 16, 64}, both, eager_graph));
  CHECK(bandwidth.front() == "bandwidth/step/shape=deepseek-v2-lite/m=1/format=bf16/mode=eager");
  CHECK(bandwidth[1] == "bandwidth/step/shape=deepseek-v2-lite/m=1/format=bf16/mode=graph");
  CHECK(bandwidth.back() == "bandwidth/step/shape=gpt-oss-20b/m=64/format=int4/mode=graph");
  // 4 x 2 x 3 x 2.
  const auto stages = short_keys(points_of("stages", o));
  CHECK(stages.size() == 48);
  CHECK(stages == product("stages", {"layer"}, kMoeShapes, {1, 8, 64}, both, eager_graph));
  // 4 x 2 x 3, always graph.
  const auto capture = short_keys(points_of("capture-replay", o));
  CHECK(capture.size() == 24);
  CHECK(capture == product("capture-replay", {"cycle"}, kMoeShapes, {1, 8, 64}, both, {"graph"}));
  // 1 shape x bf16 x 4 Ms x cases window and overhead, graph.
  const auto telemetry = short_keys(points_of("route-telemetry", o));
  CHECK(telemetry.size() == 8);
  CHECK(telemetry == product("route-telemetry", {"window", "overhead"}, {"deepseek-v2-lite"},
                             {1, 8, 64, 512}, {"bf16"}, {"graph"}));
  CHECK(short_keys(points_of("expert-residency", o)) ==
        std::vector<std::string>{"expert-residency/transition/shape=deepseek-v2-lite/m=8/format=bf16/mode=graph"});
  CHECK(short_keys(points_of("barrier", o)) ==
        std::vector<std::string>{"barrier/loops/shape=deepseek-v2-lite/m=16/format=bf16/mode=eager"});
  CHECK(short_keys(points_of("host-nonblocking", o)) ==
        std::vector<std::string>{"host-nonblocking/forward/shape=deepseek-v2-lite/m=64/format=bf16/mode=eager"});
  CHECK(short_keys(points_of("two-engine", o)) ==
        std::vector<std::string>{"two-engine/sequence/shape=tiny/m=4/format=bf16"});
  CHECK(short_keys(points_of("drop-after-inflight", o)) ==
        std::vector<std::string>{"drop-after-inflight/layer/shape=tiny/m=16/format=bf16",
                                 "drop-after-inflight/engine/shape=tiny/m=16/format=bf16"});
  // No M axis: the schedule is one case.
  CHECK(short_keys(points_of("scratch-regrow", o)) ==
        std::vector<std::string>{"scratch-regrow/schedule/shape=tiny/format=bf16"});
  // No shape, format or M; each case its own mode.
  CHECK(short_keys(points_of("copy", o)) ==
        std::vector<std::string>{"copy/read/mode=read", "copy/memcpy/mode=memcpy",
                                 "copy/copy-kernel/mode=copy-kernel"});
  // The full key carries the shape's fingerprint, as CaseResult::key() does.
  CHECK(points_of("two-engine", o).front().key ==
        "two-engine/sequence/shape=tiny/m=4/format=bf16/dims=" + library_shape("tiny").fingerprint());
  // The expert-parallel probes decide their cases as they run: no declaration.
  for (const char* p : {"ep-ceiling", "ep-step", "ep-expert-map", "ep-hang", "ep-stale-counts"})
    CHECK_MESSAGE(probe_by_name(p).sweep == nullptr, p);
}

TEST_CASE("the committed baselines' cases are their probes' default sweeps, key for key") {
  const fs::path dir = fs::path(MOEBENCH_FIXTURES_DIR).parent_path() / "reports" / "baselines" / "h200";
  REQUIRE(fs::is_directory(dir));
  const fs::path scratch = moe::test::scratch_dir("sweep-baselines");
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    CAPTURE(entry.path().string());
    const fs::path json = scratch / entry.path().stem();  // the .json under the .gz
    REQUIRE(moe::test::run_shell("(gzip -dc " + moe::test::quote(entry.path().string()) + " > " +
                                 moe::test::quote(json.string()) + ")")
                .exit_code == 0);
    const report::Report r = report::load_report(json.string());
    REQUIRE_FALSE(r.cases.empty());
    const std::string probe = r.cases.front().probe;
    std::vector<std::string> recorded;
    for (const report::CaseResult& c : r.cases) recorded.push_back(c.key(false));
    // Recorded before keys carried the shape's fingerprint: compared without it.
    CHECK(recorded == short_keys(points_of(probe, defaults())));
    ++checked;
  }
  CHECK(checked >= 4);  // bandwidth, capture-replay, copy, stages
}

TEST_CASE("the user's shapes, Ms, formats and modes replace the defaults on the axes a probe has") {
  RunOptions o = defaults();
  o.shapes = {library_shape("tiny")};
  o.user_set_shapes = true;
  o.ms = {1, 2};
  o.user_set_ms = true;
  o.formats = {kernels::WeightFormat::int4};
  o.modes = {"graph"};
  CHECK(short_keys(points_of("bandwidth", o)) ==
        std::vector<std::string>{"bandwidth/step/shape=tiny/m=1/format=int4/mode=graph",
                                 "bandwidth/step/shape=tiny/m=2/format=int4/mode=graph"});
  // A fixed mode stays; no M axis ignores --m; no axes at all ignore everything.
  CHECK(short_keys(points_of("barrier", o)) ==
        std::vector<std::string>{"barrier/loops/shape=tiny/m=1/format=int4/mode=eager",
                                 "barrier/loops/shape=tiny/m=2/format=int4/mode=eager"});
  CHECK(short_keys(points_of("scratch-regrow", o)) ==
        std::vector<std::string>{"scratch-regrow/schedule/shape=tiny/format=int4"});
  CHECK(points_of("copy", o).size() == 3);

  // Options that choose the cases: --l2 hot names bandwidth's step-l2-hot; --telemetry.
  RunOptions hot = defaults();
  hot.measure.l2 = measure::L2Mode::hot;
  for (const SweepPoint& p : points_of("bandwidth", hot)) CHECK(p.case_name == "step-l2-hot");
  RunOptions checks = defaults();
  checks.telemetry = "checks";
  CHECK(short_keys(points_of("route-telemetry", checks)) ==
        product("route-telemetry", {"window"}, {"deepseek-v2-lite"}, {1, 8, 64, 512}, {"bf16"}, {"graph"}));
  checks.telemetry = "overhead";
  CHECK(points_of("route-telemetry", checks).front().case_name == "overhead");

  // --repeat names each repetition's cases, a run's mutation is in every key.
  RunOptions twice = defaults();
  twice.repeat = 2;
  twice.mutation = mutation_from_name("static-resident-cache");
  CHECK(short_keys(points_of("two-engine", twice, 1)) ==
        std::vector<std::string>{"two-engine/sequence#1/shape=tiny/m=4/format=bf16/mutation=static-resident-cache"});
}

TEST_CASE("runs_of cuts a sweep into the points of one engine and of one input") {
  const std::vector<SweepPoint> points = points_of("bandwidth", defaults());
  const auto engines = runs_of(points, SweepAxis::format);
  REQUIRE(engines.size() == 8);  // 4 shapes x 2 formats
  for (const auto& e : engines) {
    CHECK(e.size() == 12);
    for (const SweepPoint& p : e) {
      CHECK(p.shape->name == e.front().shape->name);
      CHECK(p.format == e.front().format);
    }
    const auto inputs = runs_of(e, SweepAxis::m);
    REQUIRE(inputs.size() == 6);
    for (const auto& in : inputs) {
      REQUIRE(in.size() == 2);
      CHECK(in[0].m == in[1].m);
      CHECK(*in[0].mode == "eager");
      CHECK(*in[1].mode == "graph");
    }
  }
  CHECK(runs_of(points, SweepAxis::shape).size() == 4);
  CHECK(runs_of(std::span<const SweepPoint>(), SweepAxis::m).empty());
}

TEST_CASE("a run's plan numbers its cases over probes and repetitions, --filter selecting") {
  const std::vector<const ProbeInfo*> probes{&probe_by_name("copy"), &probe_by_name("barrier"),
                                             &probe_by_name("ep-hang")};
  RunOptions o = defaults();
  o.repeat = 2;
  const SweepPlan plan = plan_sweeps(probes, o);
  REQUIRE(plan.runs.size() == 6);
  CHECK(plan.total == 8);  // copy 3 + 3, barrier 1 + 1, ep-hang decides as it runs
  const std::size_t firsts[] = {0, 3, 6, 7, 8, 8};
  for (std::size_t i = 0; i < plan.runs.size(); ++i) {
    CAPTURE(i);
    CHECK(plan.runs[i].first == firsts[i]);
    CHECK(plan.runs[i].rep == static_cast<int>(i % 2));
  }
  CHECK(plan.runs[1].points.front().key == "copy/read#1/mode=read");
  CHECK_FALSE(plan.runs[4].declared);
  CHECK(plan.runs_probe("ep-hang"));
  CHECK(plan.first_of("barrier") == 6);

  o.repeat = 1;
  o.case_filter = "kernel|loops";
  const SweepPlan some = plan_sweeps(probes, o);
  CHECK(some.total == 2);
  CHECK(short_key(some.runs[0].points.at(0).key) == "copy/copy-kernel/mode=copy-kernel");
  CHECK(some.runs[1].first == 1);
  CHECK(selected_points(probe_by_name("copy"), o, 0).size() == 1);

  o.case_filter = "copy/read";
  const SweepPlan read = plan_sweeps(probes, o);
  CHECK(read.runs_probe("copy"));
  CHECK_FALSE(read.runs_probe("barrier"));  // declared, nothing selected: not started

  // Over the MoE sweeps: M = 1 only (not 16 or 64).
  o.case_filter = "/m=1/";
  const SweepPlan m1 = plan_sweeps({&probe_by_name("bandwidth"), &probe_by_name("stages")}, o);
  CHECK(m1.total == 16 + 16);
  for (const PlannedRun& r : m1.runs)
    for (const SweepPoint& p : r.points) CHECK(*p.m == 1);
}

TEST_CASE("--filter refuses an expression that matches nothing, or is not one") {
  RunOptions o = defaults();
  const std::vector<const ProbeInfo*> bandwidth{&probe_by_name("bandwidth")};
  o.case_filter = "no-such-case";
  try {
    plan_sweeps(bandwidth, o);
    FAIL("no error for a filter that matches nothing");
  } catch (const UsageError& e) {
    const std::string what = e.what();
    CHECK(has(what, "--filter 'no-such-case' matches no case of this run"));
    CHECK(has(what, "bandwidth/step/shape=deepseek-v2-lite/m=1/format=bf16/mode=eager"));
  }
  o.case_filter = "(";
  CHECK_THROWS_WITH_AS(plan_sweeps(bandwidth, o),
                       doctest::Contains("--filter '(' is not a valid regular expression"), UsageError);
  // A probe that decides its cases as it runs may yet match: not refused ahead of time.
  o.case_filter = "no-such-case";
  CHECK(plan_sweeps({&probe_by_name("copy"), &probe_by_name("ep-hang")}, o).total == 0);
}

TEST_CASE("progress lines count the whole run") {
  CHECK(progress_line(12, 96, "bandwidth/step/shape=tiny/m=1/format=bf16/mode=graph") ==
        "case 12 of 96: bandwidth/step/shape=tiny/m=1/format=bf16/mode=graph");
}

TEST_CASE("moebench run --filter: exit 2 for no match and for a bad expression, before any device") {
  const auto none = moe::test::moebench("run", "bandwidth", "--filter", "no-such-case", "-o",
                                        "/tmp/moebench-filter-none.json");
  CHECK(none.exit_code == 2);
  CHECK(has(none.err, "--filter 'no-such-case' matches no case of this run"));
  CHECK(has(none.err, "bandwidth/step/shape=deepseek-v2-lite/m=1/format=bf16/mode=eager"));
  CHECK(std::count(none.err.begin(), none.err.end(), '\n') == 1);
  const auto bad = moe::test::moebench("run", "copy", "--filter", "[", "-o", "/tmp/moebench-filter-bad.json");
  CHECK(bad.exit_code == 2);
  CHECK(has(bad.err, "--filter '[' is not a valid regular expression"));
  CHECK_FALSE(fs::exists("/tmp/moebench-filter-none.json"));
  CHECK(has(moe::test::moebench("run", "--help").out, "--filter"));
}

TEST_CASE("the dry run lists the declared cases, --filter applied") {
  // The default suite: every probe in it declares its sweep.
  std::vector<const ProbeInfo*> suite;
  for (const ProbeInfo& p : all_probes())
    if (p.in_default_suite) suite.push_back(&p);
  const SweepPlan plan = plan_sweeps(suite, defaults());
  CHECK(plan.total == 3 + 96 + 24 + 8 + 1 + 1 + 2 + 1 + 1 + 1);
  const auto all = moe::test::moebench("run", "--dry-run");
  REQUIRE(all.exit_code == 0);
  CHECK(has(all.out, std::to_string(plan.total) + " cases; nothing ran"));
  CHECK_FALSE(has(all.out, "not listed"));
  CHECK(lines_with(all.out, " route-telemetry ", " overhead ") == 4);  // one per M

  const auto some = moe::test::moebench("run", "bandwidth", "stages", "--dry-run", "--filter",
                                        "/m=1/.*int4.*graph");
  REQUIRE(some.exit_code == 0);
  CHECK(has(some.out, "8 cases; nothing ran"));  // 4 shapes each
  CHECK(has(some.out, "--filter '/m=1/.*int4.*graph': only the cases whose key it matches"));
  CHECK_FALSE(has(some.out, " eager "));

  // Repetitions carry the name the report gives them; a run-time probe is said to be one.
  const auto twice = moe::test::moebench("run", "two-engine", "ep-hang", "--dry-run", "--repeat", "2");
  REQUIRE(twice.exit_code == 0);
  CHECK(has(twice.out, "sequence#0"));
  CHECK(has(twice.out, "sequence#1"));
  CHECK(has(twice.out, "2 cases; nothing ran"));
  CHECK(has(twice.out, "probe ep-hang: its cases are decided as it runs; not listed"));
}

TEST_CASE("moebench list shows each probe's sweep from its declaration") {
  const auto r = moe::test::moebench("list", "probes");
  REQUIRE(r.exit_code == 0);
  const std::string sweeps = r.out.substr(r.out.find("\nsweeps"));
  for (const ProbeInfo& p : all_probes()) {
    CAPTURE(p.name);
    const auto row = sweeps.find("\n" + std::string(p.name) + " ");
    REQUIRE(row != std::string::npos);
    const std::string line = sweeps.substr(row + 1, sweeps.find('\n', row + 1) - row - 1);
    if (!p.sweep) {
      CHECK(has(line, "decided as it runs"));
      continue;
    }
    const SweepDefaults d = describe_defaults(*p.sweep);
    for (const std::string* part : {&d.cases, &d.shapes, &d.ms, &d.formats, &d.modes})
      CHECK(has(line, *part));
  }
  CHECK(has(sweeps, "1,2,4,8,16,64"));
  CHECK(has(sweeps, "deepseek-v2-lite,qwen3-30b-a3b,mixtral-8x7b,gpt-oss-20b"));
}
