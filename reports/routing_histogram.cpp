#include "reports/routing_histogram.hpp"

#include <algorithm>
#include <numeric>

#include "common/errors.hpp"
#include "reports/svg_plot.hpp"
#include "reports/table.hpp"
#include "reports/text_escape.hpp"

namespace moe::report {

namespace {
constexpr const char* kKey = "routing_histograms";
constexpr int kTopExperts = 5;

// Experts by count, descending, then id ascending (the order ties are listed in).
std::vector<int> busiest(const LayerHistogram& l, int n) {
  std::vector<int> ids(l.counts.size());
  std::iota(ids.begin(), ids.end(), 0);
  std::stable_sort(ids.begin(), ids.end(), [&](int a, int b) { return l.counts[static_cast<std::size_t>(a)] > l.counts[static_cast<std::size_t>(b)]; });
  ids.resize(std::min<std::size_t>(ids.size(), static_cast<std::size_t>(n)));
  return ids;
}
}  // namespace

nlohmann::json to_json(const RoutingHistogram& h) {
  nlohmann::json layers = nlohmann::json::array();
  for (const LayerHistogram& l : h.layers) layers.push_back({{"layer", l.layer}, {"total", l.total}, {"counts", l.counts}});
  return {{"window", h.window}, {"epoch", h.epoch}, {"layers", layers}};
}

RoutingHistogram histogram_from_json(const nlohmann::json& j) {
  try {
    RoutingHistogram h;
    h.window = j.at("window").get<std::string>();
    h.epoch = j.at("epoch").get<std::uint64_t>();
    for (const auto& l : j.at("layers"))
      h.layers.push_back({l.at("layer").get<int>(), l.at("total").get<std::uint64_t>(),
                          l.at("counts").get<std::vector<std::uint64_t>>()});
    return h;
  } catch (const nlohmann::json::exception& e) {
    throw UsageError(std::string("malformed evidence.") + kKey + " entry: " + e.what());
  }
}

void add_histogram(CaseResult& c, const RoutingHistogram& h) {
  if (!c.evidence.contains(kKey)) c.evidence[kKey] = nlohmann::json::array();
  c.evidence[kKey].push_back(to_json(h));
}

std::vector<RoutingHistogram> histograms_of(const CaseResult& c) {
  std::vector<RoutingHistogram> out;
  if (!c.evidence.is_object() || !c.evidence.contains(kKey) || !c.evidence[kKey].is_array()) return out;
  for (const auto& j : c.evidence[kKey]) out.push_back(histogram_from_json(j));
  return out;
}

std::string render_histogram_table(const Report& r) {
  std::vector<std::vector<std::string>> rows{{"case", "window", "layer", "pairs", "routed", "busiest experts (share)"}};
  for (const CaseResult& c : r.cases)
    for (const RoutingHistogram& h : histograms_of(c))
      for (const LayerHistogram& l : h.layers) {
        const auto routed = std::count_if(l.counts.begin(), l.counts.end(), [](std::uint64_t n) { return n > 0; });
        std::string top;
        for (int e : busiest(l, kTopExperts)) {
          const std::uint64_t n = l.counts[static_cast<std::size_t>(e)];
          if (n == 0) break;
          top += (top.empty() ? "" : ", ") + std::string("e") + std::to_string(e) + " " +
                 fmt(l.total ? 100.0 * static_cast<double>(n) / static_cast<double>(l.total) : 0.0) + "%";
        }
        rows.push_back({c.key(), "epoch " + std::to_string(h.epoch), std::to_string(l.layer), std::to_string(l.total),
                        std::to_string(routed) + "/" + std::to_string(l.counts.size()), top.empty() ? "-" : top});
      }
  if (rows.size() == 1) return "";
  return "routing histograms\n" + format_columns(rows);
}

std::string render_histogram_html(const Report& r) {
  std::string out;
  for (const CaseResult& c : r.cases)
    for (const RoutingHistogram& h : histograms_of(c)) {
      out += "<h3>" + escape_html(c.key()) + ": " + escape_html(h.window) + " (epoch " + std::to_string(h.epoch) +
             ")</h3>\n";
      for (const LayerHistogram& l : h.layers) {
        BarChart chart;
        chart.title = "layer " + std::to_string(l.layer) + ": pairs routed to each expert (" +
                      std::to_string(l.total) + " in all)";
        chart.x_label = "expert";
        chart.y_label = "pairs";
        for (std::size_t e = 0; e < l.counts.size(); ++e)
          chart.bars.push_back({std::to_string(e), static_cast<double>(l.counts[e]),
                                "expert " + std::to_string(e) + ": " + std::to_string(l.counts[e]) + " pairs"});
        out += render_bar_chart(chart);
      }
    }
  if (out.empty()) return "";
  return "<h2>Routing histograms</h2>\n" + out;
}

}  // namespace moe::report
