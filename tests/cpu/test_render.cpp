// `moebench render` and the renderers behind it: terminal table, Markdown, the self-contained
// HTML page (inline SVG, nothing fetched from a network) for a report and for a comparison.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <regex>
#include <set>

#include "support/cli_runner.hpp"
#include "common/errors.hpp"
#include "reports/case_summary.hpp"
#include "reports/compare.hpp"
#include "reports/comparison_table.hpp"
#include "reports/html_page.hpp"
#include "reports/markdown.hpp"
#include "reports/pivot_table.hpp"
#include "reports/svg_plot.hpp"
#include "reports/table.hpp"

using namespace moe::report;
using moe::test::data_file;
using moe::test::moebench;

namespace {

std::string report(const std::string& name) { return data_file("reports/" + name); }

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// No reference that a browser would fetch: no URL scheme, no src= or href= to anywhere.
void check_self_contained(const std::string& html) {
  CHECK(html.find("http://") == std::string::npos);
  CHECK(html.find("https://") == std::string::npos);
  CHECK(html.find("src=") == std::string::npos);
  CHECK(html.find("<link") == std::string::npos);
  CHECK(html.find("<script") == std::string::npos);
  CHECK(html.find("url(") == std::string::npos);
}

// Every element that was opened was closed (a cheap well-formedness check of the SVG).
void check_balanced(const std::string& html, const std::string& tag) {
  CAPTURE(tag);
  CHECK(count(html, "<" + tag + ">") + count(html, "<" + tag + " ") == count(html, "</" + tag + ">"));
}

// The base report's bandwidth cases in both modes: each again as an eager case.
Report with_eager_cases(const Report& r) {
  Report both = r;
  for (const CaseResult& c : r.cases)
    if (c.probe == "bandwidth") {
      CaseResult eager = c;
      eager.name = "step";
      eager.mode = "eager";
      both.cases.push_back(eager);
    }
  return both;
}

}  // namespace

TEST_CASE("HTML page of a report: plots per shape, read ceiling, spread, self-contained") {
  const Report r = load_report(report("h200-base.json"));
  const std::string html = render_html(r);
  CHECK(html.rfind("<!doctype html>", 0) == 0);
  check_self_contained(html);
  for (const char* tag : {"svg", "g", "text", "title", "table", "tr", "td", "details"})
    check_balanced(html, tag);
  // One GB/s-against-M chart per shape, plus the spread chart.
  CHECK(count(html, "<svg") == 3);
  CHECK(html.find("deepseek-v2-lite") != std::string::npos);
  CHECK(html.find("qwen3-30b-a3b") != std::string::npos);
  // One polyline per format (the reports hold graph mode only) in each chart.
  CHECK(count(html, "<polyline") == 4);
  // The read ceiling line, labelled with the measured value.
  CHECK(html.find("read ceiling") != std::string::npos);
  CHECK(html.find("stroke-dasharray=\"6 4\"") != std::string::npos);
  // The spread chart has one row per case with samples.
  CHECK(html.find("Spread of samples") != std::string::npos);
  CHECK(count(html, "<rect") == r.cases.size());
}

TEST_CASE("HTML page of a comparison: base dashed beside head, verdict changes first") {
  const Report base = load_report(report("h200-base.json"));
  const Report head = load_report(report("h200-verdict-fail.json"));
  const Comparison c = compare_reports(base, head, {}, "base.json", "head.json");
  const std::string html = render_html(c);
  check_self_contained(html);
  for (const char* tag : {"svg", "g", "text", "table", "tr"}) check_balanced(html, tag);
  CHECK(count(html, "<polyline") == 8);  // base and head, two formats, two shapes
  CHECK(html.find("base read ceiling") != std::string::npos);
  CHECK(html.find("Verdict changes") < html.find("Metrics"));
  CHECK(html.find("REGRESSION") != std::string::npos);
}

TEST_CASE("HTML escapes what it prints") {
  Report r = load_report(report("h200-copy.json"));
  r.cases[0].reason = "<script>alert(1)</script>";
  r.cases[0].verdict = Verdict::fail;
  const std::string html = render_html(r);
  CHECK(html.find("<script>") == std::string::npos);
  CHECK(html.find("&lt;script&gt;") != std::string::npos);
}

TEST_CASE("Markdown of a report and of a comparison") {
  const Report base = load_report(report("h200-base.json"));
  const std::string md = render_markdown(base);
  CHECK(md.find("## moebench report") != std::string::npos);
  CHECK(md.find("| probe | case |") != std::string::npos);
  CHECK(count(md, "\n| ") == base.cases.size() + 2);  // header, rule, one row per case

  const Report head = load_report(report("h200-verdict-fail.json"));
  const Comparison c = compare_reports(base, head, {}, "base.json", "head.json");
  const std::string cmd = render_markdown(c);
  CHECK(cmd.find("regression") != std::string::npos);
  CHECK(cmd.find("### Verdict changes") != std::string::npos);
  CHECK(cmd.find("<details>") != std::string::npos);

  const Report other = load_report(report("a100-other-gpu.json"));
  const std::string warn = render_markdown(compare_reports(base, other, {}));
  CHECK(warn.find("> [!WARNING]") != std::string::npos);
  CHECK(warn.find("NVIDIA A100-SXM4-80GB") != std::string::npos);
}

TEST_CASE("Markdown pivot: one metric as a grid of shape and format against M") {
  const Report r = load_report(report("h200-base.json"));
  const std::string md = render_markdown_pivot(r, "pct_of_read_ceiling", {std::nullopt, "graph"});
  CHECK(md.find("NVIDIA H200") != std::string::npos);
  CHECK(md.find(". 24 cases: 24 PASS.") != std::string::npos);
  CHECK(md.find("`bandwidth`: pct_of_read_ceiling (%), mode graph") != std::string::npos);
  // The copy cases ran in their own modes, so the mode filter leaves them out.
  CHECK(md.find("`copy`") == std::string::npos);
  CHECK(md.find("| shape | format | M=1 | M=2 | M=4 | M=8 | M=16 | M=32 |") != std::string::npos);
  // deepseek-v2-lite bf16 M=1 and M=2 are 72.79% and 77.36% of the read ceiling in that report.
  CHECK(md.find("| deepseek-v2-lite | bf16 | 72.8 | 77.4 |") != std::string::npos);
  CHECK(count(md, "\n| deepseek-v2-lite |") == 2);  // one row per format

  // Without a filter every probe has its grid; the copy cases (no shape, format or M) get a
  // case column and one value column.
  const std::string all = render_markdown_pivot(r, "gbps");
  CHECK(all.find("`copy`: gbps (GB/s)") != std::string::npos);
  CHECK(all.find("| case | gbps |") != std::string::npos);
  CHECK(all.find("| read | 4547 |") != std::string::npos);
  CHECK(all.find("`bandwidth`: gbps (GB/s)") != std::string::npos);
  CHECK(all.find("| shape | format | M=1 |") != std::string::npos);  // one mode: no column
  // Cases of one probe in two modes: the mode becomes a column.
  const Report both = with_eager_cases(r);
  const std::string modes = render_markdown_pivot(both, "gpu", {"bandwidth", std::nullopt});
  CHECK(modes.find("| case | shape | format | mode | M=1 |") != std::string::npos);
  CHECK(modes.find("| step | deepseek-v2-lite | bf16 | eager |") != std::string::npos);
  const std::string copy = render_markdown_pivot(r, "gbps", {"copy", std::nullopt});
  CHECK(copy.find(". 3 cases: 3 PASS.") != std::string::npos);
  CHECK(copy.find("`bandwidth`") == std::string::npos);

  // A metric no case carries names those the report has.
  try {
    render_markdown_pivot(r, "no_such_metric");
    FAIL("expected a usage error");
  } catch (const moe::UsageError& e) {
    CHECK(std::string(e.what()).find("pct_of_read_ceiling") != std::string::npos);
  }
}

TEST_CASE("moebench render --pivot: Markdown only, --mode only with it") {
  const auto md = moebench("render", report("h200-base.json"), "--format", "markdown",
                           "--pivot", "gpu", "--mode", "graph");
  CHECK(md.exit_code == 0);
  CHECK(md.out.find("`bandwidth`: gpu (us), mode graph") != std::string::npos);
  const auto table = moebench("render", report("h200-base.json"), "--pivot", "gpu");
  CHECK(table.exit_code == 2);
  CHECK(table.err.find("only with --format markdown") != std::string::npos);
  const auto mode = moebench("render", report("h200-base.json"), "--format", "markdown",
                             "--mode", "graph");
  CHECK(mode.exit_code == 2);
  CHECK(mode.err.find("only with --pivot") != std::string::npos);
  const auto probe = moebench("render", report("h200-base.json"), "--format", "markdown",
                              "--probe", "copy");
  CHECK(probe.exit_code == 2);
  const auto bad = moebench("render", report("h200-base.json"), "--format", "markdown",
                            "--pivot", "nope");
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("this report's metrics") != std::string::npos);
}

TEST_CASE("terminal table of a comparison lists the regression first") {
  const Comparison c = compare_reports(load_report(report("h200-base.json")),
                                       load_report(report("h200-slower-5pct.json")), {});
  const std::string t = render_comparison_table(c);
  const auto first_row = t.find("\nbandwidth/graph/shape=deepseek-v2-lite/m=8");
  REQUIRE(first_row != std::string::npos);
  CHECK(first_row < t.find("\ncopy/read"));
  CHECK(t.find("REGRESSION") != std::string::npos);
}

TEST_CASE("nice ticks") {
  CHECK(nice_ticks(0, 4800, 5) == std::vector<double>{0, 1000, 2000, 3000, 4000});
  CHECK(nice_ticks(-3, 3, 6) == std::vector<double>{-3, -2, -1, 0, 1, 2, 3});
}

TEST_CASE("moebench render: every format, to stdout and to a file") {
  const auto dir = moe::test::scratch_dir("render");
  const auto table = moebench("render", report("h200-base.json"));
  CHECK(table.exit_code == 0);
  CHECK(table.out.find("verdict") != std::string::npos);
  const auto md = moebench("render", report("h200-base.json"), "--format", "markdown");
  CHECK(md.exit_code == 0);
  CHECK(md.out.find("## moebench report") != std::string::npos);
  const auto html_path = (dir / "page.html").string();
  const auto html = moebench("render", report("h200-base.json"), "--format", "html", "-o", html_path);
  CHECK(html.exit_code == 0);
  CHECK(moe::test::read_text(html_path).find("<svg") != std::string::npos);
  const auto json = moebench("render", report("h200-base.json"), "--format", "json");
  CHECK(json.exit_code == 0);
  CHECK(nlohmann::json::parse(json.out).at("schema") == "moebench.report");
  const auto cmp_html = (dir / "compare.html").string();
  const auto cmp = moebench("compare", report("h200-base.json"), report("h200-faster-5pct.json"),
                            "--format", "html", "-o", cmp_html);
  CHECK(cmp.exit_code == 0);
  CHECK(moe::test::read_text(cmp_html).find("FASTER") != std::string::npos);
}

TEST_CASE("moebench render: bad input exits 2 naming it") {
  const auto missing = moebench("render", "/nonexistent/report.json");
  CHECK(missing.exit_code == 2);
  CHECK(missing.err.find("/nonexistent/report.json") != std::string::npos);
  const auto format = moebench("render", report("h200-base.json"), "--format", "pdf");
  CHECK(format.exit_code == 2);
  CHECK(format.err.find("valid: table, markdown, html, gbench, json") != std::string::npos);
  const auto not_report = moebench("render", data_file("cases/copy-read-ceiling.json"));
  CHECK(not_report.exit_code == 2);
  CHECK(not_report.err.find("not a moebench report") != std::string::npos);
}

namespace {

struct DrawnSeries {
  std::string label, color;
  bool dashed = false;
};

// Every line series of a page: its label, stroke colour and whether its line is dashed.
std::vector<DrawnSeries> line_series(const std::string& html) {
  static const std::regex re(
      R"re(<g class="series" data-label="([^"]*)"[^>]*>\n<polyline fill="none" stroke="([^"]*)" stroke-width="[^"]*"( stroke-dasharray)?)re");
  std::vector<DrawnSeries> out;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), re); it != std::sregex_iterator(); ++it)
    out.push_back({(*it)[1], (*it)[2], (*it)[3].matched});
  return out;
}

std::string first_word(const std::string& s) { return s.substr(0, s.find(' ')); }

}  // namespace

TEST_CASE("HTML page: a colour a format in every plot, eager dashed and graph solid, a key saying so") {
  const std::string html = render_html(with_eager_cases(load_report(report("h200-base.json"))));
  const std::vector<DrawnSeries> series = line_series(html);
  CHECK(series.size() == 8);  // 2 shapes x bf16, int4 x eager, graph
  std::map<std::string, std::set<std::string>> colors;
  for (const DrawnSeries& s : series) {
    CAPTURE(s.label);
    colors[first_word(s.label)].insert(s.color);
    const bool eager = s.label.find(" eager") != std::string::npos;
    CHECK(eager == s.dashed);
  }
  REQUIRE(colors.size() == 2);
  CHECK(colors["bf16"].size() == 1);
  CHECK(colors["int4"].size() == 1);
  CHECK(*colors["bf16"].begin() != *colors["int4"].begin());
  // The spread chart colours each case's row by its format too.
  static const std::regex row(R"re(<g class="series" data-label="(bf16|int4)"><title>[^<]*</title>\n<line [^>]*stroke="([^"]*)")re");
  std::size_t rows = 0;
  for (auto it = std::sregex_iterator(html.begin(), html.end(), row); it != std::sregex_iterator(); ++it, ++rows)
    CHECK(colors[(*it)[1]].count((*it)[2]) == 1);
  CHECK(rows == 48);  // 24 bandwidth cases, each in two modes
  // The key of each chart names the formats and what the dashes mean.
  for (const char* entry : {">bf16</text>", ">int4</text>", ">eager</text>", ">graph</text>"}) {
    CAPTURE(entry);
    CHECK(count(html, entry) == 2);
  }
}

TEST_CASE("HTML page: time per layer beside GB/s, with each format's floor") {
  Report r = load_report(report("h200-base.json"));
  const double ceiling = *read_ceiling_gbps(r);
  for (CaseResult& c : r.cases)
    if (c.probe == "bandwidth")  // int4 reads fewer bytes: fewer GB/s, less time per layer
      c.metrics["gpu_us_per_layer"] = {(*c.format == "int4" ? 30.0 : 40.0) * static_cast<double>(*c.m), "us"};
  const std::string html = render_html(r);
  CHECK(count(html, "data-kind=\"line\"") == 4);  // GB/s and time, 2 shapes
  CHECK(html.find("deepseek-v2-lite: µs per layer") != std::string::npos);
  CHECK(html.find("deepseek-v2-lite: µs per layer") > html.find("deepseek-v2-lite: GB/s"));
  CHECK(count(html, "data-label=\"bf16 floor\"") == 2);
  CHECK(count(html, "data-label=\"int4 floor\"") == 2);
  // The floor is the layer's bytes over the read ceiling: GB/s x time / ceiling.
  const CaseResult& c = *std::find_if(r.cases.begin(), r.cases.end(), [](const CaseResult& k) {
    return k.shape == "deepseek-v2-lite" && k.m == 1 && k.format == "bf16";
  });
  const double floor = c.metrics.at("gbps").value * 40 / ceiling;
  CHECK(html.find("bf16 floor, M=1: " + fmt(floor) + " µs per layer") != std::string::npos);
  CHECK(html.find("int4 graph, M=1: " + fmt(30) + " µs per layer") != std::string::npos);
  CHECK(html.find("floor: bytes / read ceiling") != std::string::npos);
  for (const DrawnSeries& s : line_series(html))
    if (s.label.find("floor") != std::string::npos) CHECK(s.dashed);  // dotted
}

TEST_CASE("spread chart: the axis at the top as well as the bottom") {
  SpreadChart chart;
  chart.title = "many rows";
  for (int i = 0; i < 80; ++i) chart.rows.push_back({"row " + std::to_string(i), "", "", {1, 2, 3, 4}, "#000"});
  const std::string svg = render_spread_chart(chart);
  const auto top = svg.find("<g class=\"axis x top\">");
  REQUIRE(top != std::string::npos);
  CHECK(svg.find("<g class=\"axis x bottom\">") != std::string::npos);
  CHECK(top < svg.find(">row 0<"));  // drawn above the first row
  static const std::regex tick(R"re(<text x="[0-9.]+" y="([0-9.]+)"[^>]*class="tick")re");
  std::smatch m;
  const std::string after = svg.substr(top);
  REQUIRE(std::regex_search(after, m, tick));
  CHECK(std::stod(m[1]) < 52);  // above the first row (rows start at y = 52)
}

TEST_CASE("row labels are whole: the margin fits the text, longer labels wrap") {
  const std::string label =
      "capture-replay deepseek-v2-lite M=64 bf16 graph cycle (eager) with a label much longer "
      "than any margin could hold on one line";
  SpreadChart spread;
  spread.title = "long labels";
  spread.rows.push_back({label, "12 µs · n=8", "", {1, 2, 3}, "#000"});
  spread.rows.push_back({"short", "", "", {1, 2}, "#000"});
  StackedBarChart bars;
  bars.title = "long labels";
  bars.bars.push_back({label, "note", {{"a", 1, "#000"}}, -1, ""});
  for (const std::string& svg : {render_spread_chart(spread), render_stacked_bars(bars)}) {
    CHECK(svg.find("…") == std::string::npos);
    static const std::regex span(R"re(<tspan x="([0-9.]+)" y="[0-9.]+">([^<]*)</tspan>)re");
    std::string joined;
    std::size_t lines = 0;
    for (auto it = std::sregex_iterator(svg.begin(), svg.end(), span); it != std::sregex_iterator(); ++it) {
      CAPTURE((*it)[2].str());
      CHECK(std::stod((*it)[1]) - text_width((*it)[2]) >= 0);  // right-aligned: starts inside the chart
      if ((*it)[2] != "short") joined += (joined.empty() ? "" : " ") + (*it)[2].str(), ++lines;
    }
    CHECK(joined == label);
    CHECK(lines >= 2);
  }
  CHECK(wrap_text("a b", 1000) == std::vector<std::string>{"a b"});
  CHECK(wrap_text("abcdefghij", 30).size() > 1);  // a word wider than a line is cut
}

TEST_CASE("capture-replay page: host time saved by graph replay, a bar a case") {
  Report r = load_report(report("h200-copy.json"));
  for (const char* format : {"bf16", "int4"}) {
    CaseResult c;
    c.probe = "capture-replay";
    c.name = "cycle";
    c.shape = "deepseek-v2-lite";
    c.m = 1;
    c.format = format;
    c.mode = "graph";
    c.metrics["eager_host_us"] = {52.1, "us"};
    c.metrics["replay_host_us"] = {std::string(format) == "bf16" ? 6.03 : 21.12, "us"};
    c.measurements["main"].gpu_time_us = {90, 91, 92};
    c.measurements["eager"].gpu_time_us = {90, 92, 94};
    r.cases.push_back(c);
  }
  const std::string html = render_html(r);
  CHECK(html.find("<h2>Host time saved by graph replay</h2>") != std::string::npos);
  CHECK(html.find(fmt(52.1 - 6.03) + " µs saved") != std::string::npos);
  CHECK(html.find(fmt(52.1 - 21.12) + " µs saved") != std::string::npos);
  CHECK(html.find("data-label=\"saved (bf16)\"") != std::string::npos);
  CHECK(html.find("data-label=\"saved (int4)\"") != std::string::npos);
  CHECK(html.find("data-kind=\"stacked\" data-expect-series=\"3\"") != std::string::npos);
  // The spread rows name the replays graph and the eager steps eager.
  CHECK(html.find(">capture-replay deepseek-v2-lite M=1 bf16 eager<") != std::string::npos);
  CHECK(html.find(">capture-replay deepseek-v2-lite M=1 bf16 graph<") != std::string::npos);
  CHECK(html.find("(eager)") == std::string::npos);
}

TEST_CASE("comparison page: missing cases have their own section saying they fail") {
  const Report base = load_report(report("h200-base.json"));
  Report head = base;
  const std::string gone = head.cases.back().key();
  head.cases.pop_back();
  const std::string html = render_html(compare_reports(base, head, {}, "base.json", "head.json"));
  const auto section = html.find("<section id=\"missing\"");
  REQUIRE(section != std::string::npos);
  CHECK(html.find(gone, section) < html.find("</section>", section));
  CHECK(html.find("They fail the comparison") != std::string::npos);
  CHECK(html.find("Only in base") == std::string::npos);
  CHECK(section < html.find("<h2>Metrics</h2>"));
  CompareOptions allow;
  allow.allow_missing = true;
  const std::string allowed = render_html(compare_reports(base, head, allow, "base.json", "head.json"));
  CHECK(allowed.find("Allowed by <code>--allow-missing</code>") != std::string::npos);
  CHECK(allowed.find("REGRESSION") == std::string::npos);
}
