#pragma once
// Routing histograms in a report: a telemetry window's per-expert counts, one series a layer,
// kept in a case's evidence under "routing_histograms" (reports/SCHEMA.md), and their views:
// a text table for the terminal and a bar chart a layer for the HTML page.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reports/report.hpp"

namespace moe::report {

struct LayerHistogram {
  int layer = 0;
  std::uint64_t total = 0;             // pairs the window recorded
  std::vector<std::uint64_t> counts;   // [E] pairs routed to each expert
};

struct RoutingHistogram {
  std::string window;    // what the window covered ("window 1: eager calls and replays")
  std::uint64_t epoch = 0;
  std::vector<LayerHistogram> layers;
};

nlohmann::json to_json(const RoutingHistogram& h);
// Raises UsageError naming the field when the evidence entry is malformed.
RoutingHistogram histogram_from_json(const nlohmann::json& j);

// Appends `h` to the case's evidence.
void add_histogram(CaseResult& c, const RoutingHistogram& h);
// The histograms a case carries (none: empty).
std::vector<RoutingHistogram> histograms_of(const CaseResult& c);

// One row a (case, window, layer): pairs, experts routed, the busiest experts with their
// share. Empty when no case carries a histogram.
std::string render_histogram_table(const Report& r);
// One bar chart (SVG) a layer of every histogram, with a heading a case; empty when none.
std::string render_histogram_html(const Report& r);

}  // namespace moe::report
