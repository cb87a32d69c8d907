#include "reports/svg_plot.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
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

std::string open_svg(int width, int height, const std::string& title, const char* kind,
                     std::size_t expect_series) {
  // No xmlns: the HTML parser places inline <svg> in the SVG namespace by itself.
  return "<svg class=\"plot\" data-kind=\"" + std::string(kind) + "\" data-expect-series=\"" +
         std::to_string(expect_series) + "\" viewBox=\"0 0 " + std::to_string(width) + " " +
         std::to_string(height) + "\" width=\"" + std::to_string(width) + "\" height=\"" +
         std::to_string(height) + "\" role=\"img\" aria-label=\"" + escape_html(title) +
         "\" style=\"" + kFont + ";max-width:100%;height:auto\">\n<title>" + escape_html(title) +
         "</title>\n";
}

const char* dash_of(LineStyle style) {
  switch (style) {
    case LineStyle::dashed: return "5 3";
    case LineStyle::dotted: return "1.5 3";
    case LineStyle::solid: break;
  }
  return nullptr;
}

std::string opacity_attr(double opacity) {
  return opacity < 1 ? " opacity=\"" + num(opacity) + "\"" : "";
}

// Horizontal grid lines at `ticks`, labelled left of the plot area.
template <class Y>
std::string y_grid(const std::vector<double>& ticks, double left, double width, Y py) {
  std::string s = "<g class=\"axis y\">\n";
  for (double t : ticks) {
    s += line(left, py(t), left + width, py(t), kGridColor);
    s += text(left - 6, py(t) + 4, tick_label(t), "end", "class=\"tick\" fill-opacity=\"0.7\"");
  }
  return s + "</g>\n";
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

// A horizontal axis at `y` over [left, left + pw]: the rule and the tick labels, above the rule
// (`above`) or below it.
template <class X>
std::string x_axis(const std::vector<double>& ticks, double left, double pw, double y, bool above, X px,
                   const char* where) {
  std::string s = std::string("<g class=\"axis x ") + where + "\">\n" + line(left, y, left + pw, y, kAxisColor);
  for (double t : ticks)
    s += text(px(t), above ? y - 5 : y + 16, tick_label(t), "middle", "class=\"tick\" fill-opacity=\"0.7\"");
  return s + "</g>\n";
}

// A row label right-aligned at x = `right`, its lines centred on `cy`, the full text as tooltip.
std::string row_label(const std::vector<std::string>& lines, const std::string& full, double right, double cy) {
  constexpr double kLine = 14;
  std::string s = "<g><title>" + escape_html(full) + "</title><text text-anchor=\"end\" fill=\"" + kTextColor + "\">";
  const double first = cy + 4 - kLine * static_cast<double>(lines.size() - 1) / 2;
  for (std::size_t i = 0; i < lines.size(); ++i)
    s += "<tspan x=\"" + num(right) + "\" y=\"" + num(first + kLine * static_cast<double>(i)) + "\">" +
         escape_html(lines[i]) + "</tspan>";
  return s + "</text></g>\n";
}

// The left margin for row labels: what the widest needs, within [80, 45% of the width].
double label_margin(const std::vector<std::string>& labels, int width) {
  double widest = 0;
  for (const std::string& l : labels) widest = std::max(widest, text_width(l));
  return std::clamp(widest + 6, 80.0, 0.45 * width);
}

double note_margin(const std::vector<std::string>& notes) {
  double widest = 0;
  for (const std::string& n : notes) widest = std::max(widest, text_width(n));
  return std::clamp(widest + 14, 40.0, 240.0);
}

double row_height(std::size_t lines, double minimum) {
  return std::max(minimum, 14.0 * static_cast<double>(lines) + 6);
}

// Rows one under the other from y = `top`, each as tall as its wrapped label needs.
struct RowLayout {
  std::vector<std::vector<std::string>> lines;  // each row's label, wrapped
  std::vector<double> top;                      // each row's top
  double bottom = 0;                            // under the last row
};

RowLayout layout_rows(const std::vector<std::string>& labels, double label_w, double top, double min_row_h) {
  RowLayout out;
  out.bottom = top;
  for (const std::string& l : labels) {
    out.lines.push_back(wrap_text(l, label_w));
    out.top.push_back(out.bottom);
    out.bottom += row_height(out.lines.back().size(), min_row_h);
  }
  return out;
}

}  // namespace

const std::string& series_color(std::size_t index) {
  static const std::string palette[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7",
                                        "#E69F00", "#56B4E9", "#000000", "#F0E442"};
  return palette[index % std::size(palette)];
}

double text_width(const std::string& t) {
  double w = 0;
  for (unsigned char ch : t) {
    if ((ch & 0xC0) == 0x80) continue;  // a UTF-8 continuation byte: counted with its lead
    // Widths of DejaVu Sans (the widest common default) at 12 px, rounded up by class.
    if (std::strchr(" .,:;'!|ilIjftr()[]-/", ch)) w += 4.8;
    else if (std::strchr("mwMW@%=+<>~", ch)) w += 12;
    else if (std::isupper(ch)) w += 9.4;
    else w += 7.7;
  }
  return w;
}

std::vector<std::string> wrap_text(const std::string& t, double max_width) {
  std::vector<std::string> lines;
  std::string current;
  std::istringstream words(t);
  std::string word;
  while (words >> word) {
    const std::string joined = current.empty() ? word : current + " " + word;
    if (text_width(joined) <= max_width) {
      current = joined;
      continue;
    }
    if (!current.empty()) lines.push_back(current);
    current.clear();
    // A word wider than a line on its own: cut it where it reaches the width.
    while (text_width(word) > max_width) {
      std::size_t n = 1;
      while (n < word.size() && text_width(word.substr(0, n + 1)) <= max_width) ++n;
      while (n < word.size() && (static_cast<unsigned char>(word[n]) & 0xC0) == 0x80) --n;
      if (n == 0) n = 1;
      lines.push_back(word.substr(0, n));
      word = word.substr(n);
    }
    current = word;
  }
  if (!current.empty() || lines.empty()) lines.push_back(current);
  return lines;
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
  std::vector<LegendEntry> legend = c.legend;
  if (legend.empty())
    for (const PlotSeries& ser : c.series)
      legend.push_back({ser.label, ser.color, ser.style, ser.markers, ser.hollow, ser.opacity});
  double legend_w = 60;
  for (const LegendEntry& e : legend) legend_w = std::max(legend_w, 36 + text_width(e.label));
  legend_w = std::min(legend_w, 0.4 * c.width);
  const double left = 64, right = legend_w + 16, top = 36, bottom = 46;
  const double pw = c.width - left - right, ph = c.height - top - bottom;

  double xmin = INFINITY, xmax = -INFINITY, ymax = 0;
  std::size_t drawn = 0;
  for (const PlotSeries& ser : c.series) {
    drawn += !ser.points.empty();
    for (const PlotPoint& p : ser.points) {
      xmin = std::min(xmin, p.x);
      xmax = std::max(xmax, p.x);
      ymax = std::max(ymax, p.y);
    }
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
  s << open_svg(c.width, c.height, c.title, "line", drawn);
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
  s << "<g class=\"axis x\">\n";
  for (double t : xticks) {
    s << line(px(t), top, px(t), top + ph, kGridColor);
    s << text(px(t), top + ph + 16, tick_label(t), "middle", "class=\"tick\" fill-opacity=\"0.7\"");
  }
  s << axes(left, top, pw, ph, c.height, c.x_label, c.y_label) << "</g>\n";

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
    s << "<g class=\"series\" data-label=\"" << escape_html(ser.label) << "\"" << opacity_attr(ser.opacity)
      << ">\n<polyline fill=\"none\" stroke=\"" << ser.color << "\" stroke-width=\""
      << (ser.markers ? "2" : "1.5") << "\"";
    if (const char* dash = dash_of(ser.style)) s << " stroke-dasharray=\"" << dash << "\"";
    s << " points=\"";
    for (const PlotPoint& p : ser.points) s << num(px(p.x)) << ',' << num(py(p.y)) << ' ';
    s << "\"/>\n";
    for (const PlotPoint& p : ser.points)
      s << "<circle class=\"point\" cx=\"" << num(px(p.x)) << "\" cy=\"" << num(py(p.y)) << "\" r=\""
        << (ser.markers ? "3.5" : "2") << "\" fill=\"" << (ser.hollow ? "#ffffff" : ser.color) << "\" stroke=\""
        << ser.color << "\" stroke-width=\"1.5\"" << (ser.markers ? "" : " fill-opacity=\"0.6\"")
        << "><title>" << escape_html(p.tooltip) << "</title></circle>\n";
    s << "</g>\n";
  }
  // Legend, right of the plot.
  double ly = top + 4;
  const double lx = left + pw + 16;
  s << "<g class=\"legend\">\n";
  for (const LegendEntry& e : legend) {
    s << "<g" << opacity_attr(e.opacity) << ">" << line(lx, ly, lx + 26, ly, e.color, 2, dash_of(e.style));
    if (e.marker)
      s << "<circle cx=\"" << num(lx + 13) << "\" cy=\"" << num(ly) << "\" r=\"3\" fill=\""
        << (e.hollow ? "#ffffff" : e.color) << "\" stroke=\"" << e.color << "\"/>";
    s << "</g>\n";
    const std::vector<std::string> lines = wrap_text(e.label, legend_w - 34);
    for (const std::string& l : lines) {
      s << text(lx + 32, ly + 4, l);
      ly += 15;
    }
    ly += 3;
  }
  s << "</g>\n</svg>\n";
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
  s << open_svg(c.width, c.height, c.title, "bar", c.bars.empty() ? 0 : 1);
  s << text(left, 20, c.title, "start", "font-size=\"14\" font-weight=\"600\"");
  s << y_grid(yticks, left, pw, py);
  s << "<g class=\"series\">\n";
  for (std::size_t i = 0; i < c.bars.size(); ++i) {
    const Bar& b = c.bars[i];
    const double x = left + slot * static_cast<double>(i) + (slot - bw) / 2;
    const double y = py(std::max(0.0, b.value));
    s << "<rect class=\"point\" x=\"" << num(x) << "\" y=\"" << num(y) << "\" width=\"" << num(bw) << "\" height=\""
      << num(top + ph - y) << "\" fill=\"" << c.color << "\"><title>" << escape_html(b.tooltip)
      << "</title></rect>\n";
    if (i % label_every == 0)
      s << text(x + bw / 2, top + ph + 14, b.label, "middle", "fill-opacity=\"0.7\" font-size=\"10\"");
  }
  s << "</g>\n<g class=\"axis x\">" << axes(left, top, pw, ph, c.height, c.x_label, c.y_label) << "</g>\n";
  s << "</svg>\n";
  return s.str();
}

std::string render_spread_chart(const SpreadChart& c) {
  std::vector<std::string> labels, notes;
  for (const SpreadRow& r : c.rows) labels.push_back(r.label), notes.push_back(r.note);
  const double label_w = label_margin(labels, c.width), note_w = note_margin(notes);
  const double top = 52, axis_h = 40, min_row_h = 20;
  const double left = label_w + 8, pw = c.width - left - note_w;
  const RowLayout rows = layout_rows(labels, label_w, top, min_row_h);
  const std::vector<std::vector<std::string>>& wrapped = rows.lines;
  const std::vector<double>& row_top = rows.top;
  const double bottom = rows.bottom;
  const double height = bottom + axis_h;

  std::vector<double> pooled;
  std::vector<std::string> series;
  for (const SpreadRow& r : c.rows) {
    pooled.insert(pooled.end(), r.values.begin(), r.values.end());
    const std::string name = r.series.empty() ? r.label : r.series;
    if (!r.values.empty() && std::find(series.begin(), series.end(), name) == series.end())
      series.push_back(name);
  }
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
  s << open_svg(c.width, static_cast<int>(height), c.title, "spread", series.size());
  s << text(0, 20, c.title, "start", "font-size=\"14\" font-weight=\"600\"");
  for (double t : ticks) s << line(px(t), top, px(t), bottom, kGridColor);
  if (c.draw_reference) s << line(px(c.reference_x), top, px(c.reference_x), bottom, kAxisColor, 1, "3 3");
  // The axis at the top and the bottom: a long chart is read without scrolling to its end.
  s << x_axis(ticks, left, pw, top, true, px, "top") << x_axis(ticks, left, pw, bottom, false, px, "bottom");
  s << text(left + pw / 2, bottom + 34, c.x_label, "middle");

  for (std::size_t i = 0; i < c.rows.size(); ++i) {
    const SpreadRow& r = c.rows[i];
    const double rh = row_height(wrapped[i].size(), min_row_h);
    const double cy = row_top[i] + rh / 2;
    if (r.starts_group && i > 0) s << line(0, row_top[i], c.width, row_top[i], kGridColor);
    s << row_label(wrapped[i], r.label, label_w, cy);
    s << text(left + pw + 10, cy + 4, r.note, "start", "fill-opacity=\"0.75\"");
    if (r.values.empty()) continue;
    std::vector<double> v = r.values;
    std::sort(v.begin(), v.end());
    const double p10 = percentile_sorted(v, 0.10), p25 = percentile_sorted(v, 0.25);
    const double p50 = percentile_sorted(v, 0.50), p75 = percentile_sorted(v, 0.75);
    const double p90 = percentile_sorted(v, 0.90);
    s << "<g class=\"series\" data-label=\"" << escape_html(r.series.empty() ? r.label : r.series)
      << "\"><title>" << escape_html(r.label) << ": n=" << v.size() << ", min " << fmt(v.front())
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
        s << "<path class=\"point\" d=\"M" << num(ex) << ',' << num(cy) << " l" << num(dir * 6)
          << ",-4 l0,8z\" fill=\"" << r.color << "\"/>\n";
        continue;
      }
      s << "<circle class=\"point\" cx=\"" << num(px(x)) << "\" cy=\"" << num(cy + jitter)
        << "\" r=\"1.6\" fill=\"" << r.color << "\" fill-opacity=\"0.55\"/>\n";
    }
    s << line(px(p50), cy - 7, px(p50), cy + 7, r.color, 2.5);
    s << "</g>\n";
  }
  s << "</svg>\n";
  return s.str();
}

std::string render_stacked_bars(const StackedBarChart& c) {
  std::vector<std::string> labels, notes;
  for (const StackedBar& b : c.bars) labels.push_back(b.label), notes.push_back(b.note);
  const double label_w = label_margin(labels, c.width), note_w = note_margin(notes);
  const double axis_h = 40, min_row_h = 22;
  const double left = label_w + 14, pw = c.width - left - note_w;
  const std::vector<BarSegment> legend =
      !c.legend.empty() ? c.legend : c.bars.empty() ? std::vector<BarSegment>{} : c.bars.front().segments;
  // Legend at the top, wrapping onto a new line where the next entry would pass the width.
  std::ostringstream key;
  double lx = 0, ly = 30;
  auto place = [&](double w) {
    if (lx > 0 && lx + w > c.width) lx = 0, ly += 18;
    const double at = lx;
    lx += w;
    return at;
  };
  for (const BarSegment& g : legend) {
    const double at = place(28 + text_width(g.label));
    key << "<rect x=\"" << num(at) << "\" y=\"" << num(ly) << "\" width=\"12\" height=\"12\" fill=\"" << g.color
        << "\"/>\n" << text(at + 16, ly + 10, g.label);
  }
  if (!c.marker_label.empty()) {
    const double at = place(20 + text_width(c.marker_label));
    key << line(at + 6, ly - 1, at + 6, ly + 13, kTextColor, 2) << text(at + 14, ly + 10, c.marker_label);
  }
  const double top = ly + 46;
  const RowLayout rows = layout_rows(labels, label_w, top, min_row_h);
  const std::vector<std::vector<std::string>>& wrapped = rows.lines;
  const std::vector<double>& row_top = rows.top;
  const double bottom = rows.bottom;
  const double height = bottom + axis_h;
  double hi = 0;
  std::vector<std::string> series;
  for (const StackedBar& b : c.bars) {
    double sum = 0;
    for (const BarSegment& g : b.segments) {
      sum += std::max(0.0, g.value);
      if (std::find(series.begin(), series.end(), g.label) == series.end()) series.push_back(g.label);
    }
    hi = std::max({hi, sum, b.marker});
  }
  if (hi <= 0) hi = 1;
  const std::vector<double> ticks = nice_ticks(0, hi * 1.04, 8);
  hi = std::max(hi * 1.04, ticks.empty() ? hi : ticks.back());
  auto px = [&](double x) { return left + std::clamp(x, 0.0, hi) / hi * pw; };

  std::ostringstream s;
  s << open_svg(c.width, static_cast<int>(height), c.title, "stacked", series.size());
  s << text(0, 20, c.title, "start", "font-size=\"14\" font-weight=\"600\"");
  s << "<g class=\"legend\">\n" << key.str() << "</g>\n";
  for (double t : ticks) s << line(px(t), top, px(t), bottom, kGridColor);
  s << x_axis(ticks, left, pw, top, true, px, "top") << x_axis(ticks, left, pw, bottom, false, px, "bottom");
  s << text(left + pw / 2, bottom + 34, c.x_label, "middle");
  // One group a series (a segment label), so the check counts what the legend names.
  std::vector<std::ostringstream> groups(series.size());
  for (std::size_t i = 0; i < c.bars.size(); ++i) {
    const StackedBar& b = c.bars[i];
    const double rh = row_height(wrapped[i].size(), min_row_h), y = row_top[i] + (rh - min_row_h) / 2;
    s << row_label(wrapped[i], b.label, label_w, y + 11);
    if (!b.label_color.empty())
      s << "<rect x=\"" << num(left - 6) << "\" y=\"" << num(y + 4) << "\" width=\"4\" height=\"14\" fill=\""
        << b.label_color << "\"/>\n";
    double x0 = 0;
    for (const BarSegment& g : b.segments) {
      const double v = std::max(0.0, g.value);
      const auto at = std::find(series.begin(), series.end(), g.label) - series.begin();
      groups[static_cast<std::size_t>(at)]
          << "<rect class=\"point\" x=\"" << num(px(x0)) << "\" y=\"" << num(y + 4) << "\" width=\""
          << num(px(x0 + v) - px(x0)) << "\" height=\"14\" fill=\"" << g.color
          << "\" stroke=\"#ffffff\" stroke-width=\"0.75\"><title>"
          << escape_html(b.label + ": " + g.label + " " + fmt(v)) << "</title></rect>\n";
      x0 += v;
    }
    if (b.marker >= 0) s << line(px(b.marker), y + 1, px(b.marker), y + 21, kTextColor, 2);
    s << text(left + pw + 10, y + 15, b.note, "start", "fill-opacity=\"0.75\"");
  }
  for (std::size_t k = 0; k < series.size(); ++k)
    s << "<g class=\"series\" data-label=\"" << escape_html(series[k]) << "\">\n" << groups[k].str() << "</g>\n";
  s << "</svg>\n";
  return s.str();
}

}  // namespace moe::report
