#include "reports/svg_plot.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "reports/statistics.hpp"
#include "reports/table.hpp"
#include "reports/text_escape.hpp"

namespace moe::report {

namespace {

constexpr const char* kFont =
    "font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;font-size:12px";
constexpr const char* kAxisColor = "#6b7280";
constexpr const char* kGridColor = "#e5e7eb";
constexpr const char* kTextColor = "#111827";

std::string num(double v) {  // SVG coordinates: two decimals are plenty
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

std::string tick_label(double v) {
  if (v == std::round(v) && std::abs(v) < 10000) return std::to_string(static_cast<long long>(v));
  if (std::abs(v) >= 10000) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0fk", v / 1000);
    return buf;
  }
  return fmt(v);
}

std::string text(double x, double y, const std::string& s, const char* anchor = "start",
                 const char* extra = "") {
  return "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\" text-anchor=\"" + anchor +
         "\" fill=\"" + kTextColor + "\" " + extra + ">" + escape_html(s) + "</text>\n";
}

std::string line(double x1, double y1, double x2, double y2, const std::string& color,
                 double width = 1, const char* dash = nullptr) {
  std::string s = "<line x1=\"" + num(x1) + "\" y1=\"" + num(y1) + "\" x2=\"" + num(x2) +
                  "\" y2=\"" + num(y2) + "\" stroke=\"" + color + "\" stroke-width=\"" +
                  num(width) + "\"";
  if (dash) s += std::string(" stroke-dasharray=\"") + dash + "\"";
  return s + "/>\n";
}

std::string open_svg(int width, int height, const std::string& title) {
  // No xmlns: the HTML parser places inline <svg> in the SVG namespace by itself.
  return "<svg viewBox=\"0 0 " + std::to_string(width) +
         " " + std::to_string(height) + "\" width=\"" + std::to_string(width) + "\" height=\"" +
         std::to_string(height) + "\" role=\"img\" aria-label=\"" + escape_html(title) +
         "\" style=\"" + kFont + ";max-width:100%;height:auto\">\n<title>" + escape_html(title) +
         "</title>\n";
}

// Horizontal grid lines at `ticks`, labelled left of the plot area.
template <class Y>
std::string y_grid(const std::vector<double>& ticks, double left, double width, Y py) {
  std::string s;
  for (double t : ticks) {
    s += line(left, py(t), left + width, py(t), kGridColor);
    s += text(left - 6, py(t) + 4, tick_label(t), "end", "fill-opacity=\"0.7\"");
  }
  return s;
}

// The plot area's two axes, the x label under it and the y label turned along it.
std::string axes(double left, double top, double pw, double ph, int height, const std::string& x_label,
                 const std::string& y_label) {
  std::string s = line(left, top + ph, left + pw, top + ph, kAxisColor);
  s += line(left, top, left, top + ph, kAxisColor);
  s += text(left + pw / 2, height - 8, x_label, "middle");
  s += "<text transform=\"translate(14," + num(top + ph / 2) + ") rotate(-90)\" text-anchor=\"middle\" fill=\"" +
       kTextColor + "\">" + escape_html(y_label) + "</text>\n";
  return s;
}

}  // namespace

const std::string& series_color(std::size_t index) {
  static const std::string palette[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                        "#E69F00", "#56B4E9", "#000000", "#F0E442"};
  return palette[index % std::size(palette)];
}

std::vector<double> nice_ticks(double lo, double hi, int target_count) {
  if (!(hi > lo)) hi = lo + 1;
  const double raw = (hi - lo) / std::max(1, target_count);
  const double mag = std::pow(10, std::floor(std::log10(raw)));
  double step = mag;
  for (double f : {1.0, 2.0, 5.0, 10.0})
    if (f * mag >= raw) {
      step = f * mag;
      break;
    }
  std::vector<double> ticks;
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step)
    ticks.push_back(std::abs(t) < step * 1e-9 ? 0 : t);
  return ticks;
}

std::string render_line_chart(const LineChart& c) {
  const double legend_w = 170, left = 64, right = legend_w + 16, top = 36, bottom = 46;
  const double pw = c.width - left - right, ph = c.height - top - bottom;

  double xmin = INFINITY, xmax = -INFINITY, ymax = 0;
  for (const PlotSeries& s : c.series)
    for (const PlotPoint& p : s.points) {
      xmin = std::min(xmin, p.x);
      xmax = std::max(xmax, p.x);
      ymax = std::max(ymax, p.y);
    }
  for (const ReferenceLine& r : c.references) ymax = std::max(ymax, r.y);
  if (!std::isfinite(xmin)) xmin = 1, xmax = 2;
  auto xt = [&](double x) { return c.log2_x ? std::log2(std::max(x, 1e-9)) : x; };
  double x0 = xt(xmin), x1 = xt(xmax);
  if (x1 - x0 < 1e-9) x0 -= 1, x1 += 1;
  const double pad = (x1 - x0) * 0.04;
  x0 -= pad, x1 += pad;
  const std::vector<double> yticks = nice_ticks(0, ymax > 0 ? ymax * 1.08 : 1, 5);
  const double y1 = std::max(yticks.back(), ymax * 1.08 > 0 ? ymax * 1.08 : 1);
  auto px = [&](double x) { return left + (xt(x) - x0) / (x1 - x0) * pw; };
  auto py = [&](double y) { return top + ph - y / y1 * ph; };

  std::ostringstream s;
  s << open_svg(c.width, c.height, c.title);
  s << text(left, 20, c.title, "start", "font-size=\"14\" font-weight=\"600\"");
  s << y_grid(yticks, left, pw, py);  // grid and axes
  std::vector<double> xticks;
  if (c.log2_x) {
    for (double e = std::ceil(x0); e <= x1; e += 1) xticks.push_back(std::exp2(e));
    while (xticks.size() > 10) {  // keep every other power when the range is wide
      std::vector<double> half;
      for (std::size_t i = 0; i < xticks.size(); i += 2) half.push_back(xticks[i]);
      xticks = half;
    }
  } else {
    xticks = nice_ticks(x0, x1, 6);
  }
  for (double t : xticks) {
    s << line(px(t), top, px(t), top + ph, kGridColor);
    s << text(px(t), top + ph + 16, tick_label(t), "middle", "fill-opacity=\"0.7\"");
  }
  s << axes(left, top, pw, ph, c.height, c.x_label, c.y_label);

  std::vector<double> label_ys;
  for (const ReferenceLine& r : c.references) {
    s << line(left, py(r.y), left + pw, py(r.y), r.color, 1.5, r.dashed ? "6 4" : nullptr);
    // Labels of nearby lines would overprint: the next one goes below its line instead.
    double ly = py(r.y) - 5;
    for (double used : label_ys)
      if (std::abs(used - ly) < 13) ly = py(r.y) + 14;
    label_ys.push_back(ly);
    s << text(left + pw - 4, ly, r.label, "end",
              ("fill=\"" + r.color + "\" font-weight=\"600\"").c_str());
  }
  for (const PlotSeries& ser : c.series) {
    if (ser.points.empty()) continue;
    s << "<polyline fill=\"none\" stroke=\"" << ser.color << "\" stroke-width=\"2\""
      << (ser.dashed ? " stroke-dasharray=\"5 3\"" : "") << " points=\"";
    for (const PlotPoint& p : ser.points) s << num(px(p.x)) << ',' << num(py(p.y)) << ' ';
    s << "\"/>\n";
    for (const PlotPoint& p : ser.points)
      s << "<circle cx=\"" << num(px(p.x)) << "\" cy=\"" << num(py(p.y)) << "\" r=\"3.5\" fill=\""
        << (ser.dashed ? "#ffffff" : ser.color) << "\" stroke=\"" << ser.color
        << "\" stroke-width=\"1.5\"><title>" << escape_html(p.tooltip) << "</title></circle>\n";
  }
  // Legend, right of the plot.
  double ly = top + 4;
  for (const PlotSeries& ser : c.series) {
    const double lx = left + pw + 16;
    s << line(lx, ly, lx + 22, ly, ser.color, 2, ser.dashed ? "5 3" : nullptr);
    s << "<circle cx=\"" << num(lx + 11) << "\" cy=\"" << num(ly) << "\" r=\"3\" fill=\""
      << (ser.dashed ? "#ffffff" : ser.color) << "\" stroke=\"" << ser.color << "\"/>\n";
    s << text(lx + 28, ly + 4, ser.label);
    ly += 18;
  }
  s << "</svg>\n";
  return s.str();
}

std::string render_bar_chart(const BarChart& c) {
  const double left = 64, right = 16, top = 36, bottom = 46;
  const double pw = c.width - left - right, ph = c.height - top - bottom;
  double ymax = 0;
  for (const Bar& b : c.bars) ymax = std::max(ymax, b.value);
  const std::vector<double> yticks = nice_ticks(0, ymax > 0 ? ymax * 1.05 : 1, 4);
  const double y1 = std::max(yticks.back(), ymax > 0 ? ymax * 1.05 : 1);
  const double n = static_cast<double>(std::max<std::size_t>(c.bars.size(), 1));
  const double slot = pw / n, bw = std::max(1.0, slot * 0.8);
  auto py = [&](double y) { return top + ph - y / y1 * ph; };
  const std::size_t label_every = std::max<std::size_t>(1, (c.bars.size() + 31) / 32);

  std::ostringstream s;
  s << open_svg(c.width, c.height, c.title);
  s << text(left, 20, c.title, "start", "font-size=\"14\" font-weight=\"600\"");
  s << y_grid(yticks, left, pw, py);
  for (std::size_t i = 0; i < c.bars.size(); ++i) {
    const Bar& b = c.bars[i];
    const double x = left + slot * static_cast<double>(i) + (slot - bw) / 2;
    const double y = py(std::max(0.0, b.value));
    s << "<rect x=\"" << num(x) << "\" y=\"" << num(y) << "\" width=\"" << num(bw) << "\" height=\""
      << num(top + ph - y) << "\" fill=\"" << c.color << "\"><title>" << escape_html(b.tooltip)
      << "</title></rect>\n";
    if (i % label_every == 0)
      s << text(x + bw / 2, top + ph + 14, b.label, "middle", "fill-opacity=\"0.7\" font-size=\"10\"");
  }
  s << axes(left, top, pw, ph, c.height, c.x_label, c.y_label);
  s << "</svg>\n";
  return s.str();
}

std::string render_spread_chart(const SpreadChart& c) {
  const double label_w = 300, note_w = 150, top = 34, row_h = 20, axis_h = 40;
  const double left = label_w + 8, pw = c.width - left - note_w - 8;
  const double height = top + row_h * static_cast<double>(c.rows.size()) + axis_h;

  std::vector<double> pooled;
  for (const SpreadRow& r : c.rows) pooled.insert(pooled.end(), r.values.begin(), r.values.end());
  std::sort(pooled.begin(), pooled.end());
  double lo = pooled.empty() ? -1 : percentile_sorted(pooled, 0.01);
  double hi = pooled.empty() ? 1 : percentile_sorted(pooled, 0.99);
  if (c.draw_reference) lo = std::min(lo, c.reference_x), hi = std::max(hi, c.reference_x);
  // Every row's middle 80% stays in view, however few samples the row adds to the pool.
  for (const SpreadRow& r : c.rows) {
    if (r.values.empty()) continue;
    std::vector<double> v = r.values;
    std::sort(v.begin(), v.end());
    lo = std::min(lo, percentile_sorted(v, 0.10));
    hi = std::max(hi, percentile_sorted(v, 0.90));
  }
  if (hi - lo < 1e-9) lo -= 1, hi += 1;
  const double pad = (hi - lo) * 0.06;
  lo -= pad, hi += pad;
  const std::vector<double> ticks = nice_ticks(lo, hi, 8);
  auto px = [&](double x) { return left + (std::clamp(x, lo, hi) - lo) / (hi - lo) * pw; };

  std::ostringstream s;
  s << open_svg(c.width, static_cast<int>(height), c.title);
  s << text(0, 20, c.title, "start", "font-size=\"14\" font-weight=\"600\"");
  const double bottom = top + row_h * static_cast<double>(c.rows.size());
  for (double t : ticks) {
    s << line(px(t), top, px(t), bottom, kGridColor);
    s << text(px(t), bottom + 16, tick_label(t), "middle", "fill-opacity=\"0.7\"");
  }
  if (c.draw_reference) s << line(px(c.reference_x), top - 4, px(c.reference_x), bottom, kAxisColor, 1, "3 3");
  s << line(left, bottom, left + pw, bottom, kAxisColor);
  s << text(left + pw / 2, bottom + 34, c.x_label, "middle");

  for (std::size_t i = 0; i < c.rows.size(); ++i) {
    const SpreadRow& r = c.rows[i];
    const double cy = top + row_h * (static_cast<double>(i) + 0.5);
    if (r.starts_group && i > 0)
      s << line(0, cy - row_h / 2, c.width, cy - row_h / 2, kGridColor);
    // Long labels are cut with an ellipsis; the full label is in the row's tooltip.
    constexpr std::size_t kMaxLabel = 46;
    const std::string shown =
        r.label.size() > kMaxLabel ? r.label.substr(0, kMaxLabel - 1) + "…" : r.label;
    s << "<g><title>" << escape_html(r.label) << "</title>" << text(label_w, cy + 4, shown, "end")
      << "</g>\n";
    s << text(left + pw + 10, cy + 4, r.note, "start", "fill-opacity=\"0.75\"");
    if (r.values.empty()) continue;
    std::vector<double> v = r.values;
    std::sort(v.begin(), v.end());
    const double p10 = percentile_sorted(v, 0.10), p25 = percentile_sorted(v, 0.25);
    const double p50 = percentile_sorted(v, 0.50), p75 = percentile_sorted(v, 0.75);
    const double p90 = percentile_sorted(v, 0.90);
    s << "<g><title>" << escape_html(r.label) << ": n=" << v.size() << ", min " << fmt(v.front())
      << ", p10 " << fmt(p10) << ", median " << fmt(p50) << ", p90 " << fmt(p90) << ", max "
      << fmt(v.back()) << "</title>\n";
    s << line(px(p10), cy, px(p90), cy, r.color, 1.2);
    s << "<rect x=\"" << num(px(p25)) << "\" y=\"" << num(cy - 6) << "\" width=\""
      << num(std::max(1.0, px(p75) - px(p25))) << "\" height=\"12\" fill=\"" << r.color
      << "\" fill-opacity=\"0.18\" stroke=\"" << r.color << "\" rx=\"2\"/>\n";
    // Dots: deterministic jitter so equal values stay visible; at most 400 per row.
    const std::size_t stride = std::max<std::size_t>(1, r.values.size() / 400);
    for (std::size_t k = 0; k < r.values.size(); k += stride) {
      const double x = r.values[k];
      const double jitter = (static_cast<double>((k * 7919) % 11) - 5) * 0.9;
      if (x < lo || x > hi) {
        const double ex = x < lo ? left : left + pw, dir = x < lo ? 1 : -1;
        s << "<path d=\"M" << num(ex) << ',' << num(cy) << " l" << num(dir * 6) << ",-4 l0,8z\" fill=\""
          << r.color << "\"/>\n";
        continue;
      }
      s << "<circle cx=\"" << num(px(x)) << "\" cy=\"" << num(cy + jitter) << "\" r=\"1.6\" fill=\""
        << r.color << "\" fill-opacity=\"0.55\"/>\n";
    }
    s << line(px(p50), cy - 7, px(p50), cy + 7, r.color, 2.5);
    s << "</g>\n";
  }
  s << "</svg>\n";
  return s.str();
}

std::string render_stacked_bars(const StackedBarChart& c) {
  const double label_w = 300, note_w = 150, top = 58, row_h = 22, axis_h = 40;
  const double left = label_w + 8, pw = c.width - left - note_w - 8;
  const double bottom = top + row_h * static_cast<double>(c.bars.size());
  const double height = bottom + axis_h;
  double hi = 0;
  for (const StackedBar& b : c.bars) {
    double sum = 0;
    for (const BarSegment& g : b.segments) sum += std::max(0.0, g.value);
    hi = std::max({hi, sum, b.marker});
  }
  if (hi <= 0) hi = 1;
  const std::vector<double> ticks = nice_ticks(0, hi * 1.04, 8);
  hi = std::max(hi * 1.04, ticks.empty() ? hi : ticks.back());
  auto px = [&](double x) { return left + std::clamp(x, 0.0, hi) / hi * pw; };

  std::ostringstream s;
  s << open_svg(c.width, static_cast<int>(height), c.title);
  s << text(0, 20, c.title, "start", "font-size=\"14\" font-weight=\"600\"");
  // Legend: the segments of the first bar, then the marker.
  double lx = left;
  if (!c.bars.empty())
    for (const BarSegment& g : c.bars.front().segments) {
      s << "<rect x=\"" << num(lx) << "\" y=\"30\" width=\"12\" height=\"12\" fill=\"" << g.color << "\"/>\n";
      s << text(lx + 16, 40, g.label);
      lx += 24 + 7.0 * static_cast<double>(g.label.size());
    }
  if (!c.marker_label.empty()) {
    s << line(lx + 6, 29, lx + 6, 43, kTextColor, 2);
    s << text(lx + 14, 40, c.marker_label);
  }
  for (double y : {top - 4, bottom}) s << line(left, y, left + pw, y, kAxisColor);
  for (double t : ticks) {
    s << line(px(t), top - 4, px(t), bottom, kGridColor);
    s << text(px(t), bottom + 16, tick_label(t), "middle", "fill-opacity=\"0.7\"");
    s << text(px(t), top - 8, tick_label(t), "middle", "fill-opacity=\"0.7\"");
  }
  s << text(left + pw / 2, bottom + 34, c.x_label, "middle");
  for (std::size_t i = 0; i < c.bars.size(); ++i) {
    const StackedBar& b = c.bars[i];
    const double y = top + row_h * static_cast<double>(i);
    s << "<g><title>" << escape_html(b.label) << "</title>" << text(label_w, y + 15, b.label, "end") << "</g>\n";
    double x0 = 0;
    for (const BarSegment& g : b.segments) {
      const double v = std::max(0.0, g.value);
      s << "<rect x=\"" << num(px(x0)) << "\" y=\"" << num(y + 4) << "\" width=\"" << num(px(x0 + v) - px(x0))
        << "\" height=\"14\" fill=\"" << g.color << "\"><title>" << escape_html(b.label + ": " + g.label + " " + fmt(v))
        << "</title></rect>\n";
      x0 += v;
    }
    if (b.marker >= 0) s << line(px(b.marker), y + 1, px(b.marker), y + 21, kTextColor, 2);
    s << text(left + pw + 10, y + 15, b.note, "start", "fill-opacity=\"0.75\"");
  }
  s << "</svg>\n";
  return s.str();
}

}  // namespace moe::report
