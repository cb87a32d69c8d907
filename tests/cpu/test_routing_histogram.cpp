// Routing histograms in reports: the evidence entry round trip, the terminal table (busiest
// experts with their share, ties by id), and the HTML page's bar chart a layer.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "common/errors.hpp"
#include "reports/html_page.hpp"
#include "reports/markdown.hpp"
#include "reports/routing_histogram.hpp"
#include "reports/svg_plot.hpp"
#include "reports/table.hpp"

using namespace moe::report;

namespace {

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

RoutingHistogram two_layers() {
  RoutingHistogram h;
  h.window = "eager calls and replays";
  h.epoch = 1;
  h.layers.push_back({0, 100, {50, 0, 25, 25, 0, 0, 0, 0}});
  h.layers.push_back({1, 10, {0, 0, 0, 0, 0, 0, 0, 10}});
  return h;
}

Report report_with(const RoutingHistogram& h) {
  Report r;
  CaseResult c;
  c.probe = "route-telemetry";
  c.name = "window";
  c.shape = "tiny";
  c.m = 4;
  add_histogram(c, h);
  r.cases.push_back(c);
  CaseResult plain;
  plain.probe = "copy";
  plain.name = "read";
  r.cases.push_back(plain);
  return r;
}

}  // namespace

TEST_CASE("a histogram survives the case's JSON round trip") {
  const Report r = report_with(two_layers());
  nlohmann::json j = r.cases[0];
  const CaseResult back = j.get<CaseResult>();
  const auto hs = histograms_of(back);
  REQUIRE(hs.size() == 1);
  CHECK(hs[0].window == "eager calls and replays");
  CHECK(hs[0].epoch == 1);
  REQUIRE(hs[0].layers.size() == 2);
  CHECK(hs[0].layers[0].counts == std::vector<std::uint64_t>{50, 0, 25, 25, 0, 0, 0, 0});
  CHECK(hs[0].layers[1].total == 10);
  CHECK(histograms_of(r.cases[1]).empty());
}

TEST_CASE("a malformed histogram entry is refused naming the field") {
  CaseResult c;
  c.evidence["routing_histograms"] = nlohmann::json::array({{{"window", "w"}, {"epoch", 1}}});
  CHECK_THROWS_WITH_AS(histograms_of(c), doctest::Contains("routing_histograms"), moe::UsageError);
}

TEST_CASE("the table lists each layer's busiest experts with their share, ties by id") {
  const std::string t = render_table(report_with(two_layers()));
  CHECK(t.find("routing histograms") != std::string::npos);
  CHECK(t.find("e0 50.0%, e2 25.0%, e3 25.0%") != std::string::npos);  // e2 before e3: equal counts
  CHECK(t.find("3/8") != std::string::npos);
  CHECK(t.find("e7 100%") != std::string::npos);
  CHECK(t.find("1/8") != std::string::npos);
  Report none;
  none.cases.push_back(report_with(two_layers()).cases[1]);
  CHECK(render_table(none).find("routing histograms") == std::string::npos);
}

TEST_CASE("the HTML page draws one bar chart a layer, a bar an expert") {
  const std::string html = render_html(report_with(two_layers()));
  CHECK(html.find("<h2>Routing histograms</h2>") != std::string::npos);
  CHECK(count(html, "pairs routed to each expert") >= 2);
  CHECK(count(html, "<rect ") == 16);  // 2 layers x 8 experts
  CHECK(html.find("expert 0: 50 pairs") != std::string::npos);
  CHECK(count(html, "<svg") == count(html, "</svg>"));
  Report none;
  none.cases.push_back(report_with(two_layers()).cases[1]);
  CHECK(render_html(none).find("Routing histograms") == std::string::npos);
}

TEST_CASE("bar heights follow the values, labels thin out past 32 bars") {
  BarChart c;
  c.title = "t";
  for (int i = 0; i < 256; ++i) c.bars.push_back({std::to_string(i), i == 3 ? 100.0 : 1.0, "b" + std::to_string(i)});
  const std::string svg = render_bar_chart(c);
  CHECK(count(svg, "<rect ") == 256);
  CHECK(count(svg, "font-size=\"10\"") == 32);  // every 8th of 256 labelled
  CHECK(svg.find("<title>b255</title>") != std::string::npos);
  BarChart empty;
  empty.title = "nothing";
  CHECK(render_bar_chart(empty).find("</svg>") != std::string::npos);
}

TEST_CASE("the Markdown summary carries the histogram table in a fold") {
  const std::string md = moe::report::render_markdown(report_with(two_layers()));
  CHECK(md.find("<summary>Routing histograms</summary>") != std::string::npos);
  CHECK(md.find("e0 50.0%, e2 25.0%, e3 25.0%") != std::string::npos);
  Report none;
  none.cases.push_back(report_with(two_layers()).cases[1]);
  CHECK(render_markdown(none).find("Routing histograms") == std::string::npos);
}
