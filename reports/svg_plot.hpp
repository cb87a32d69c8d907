#pragma once
// Plots drawn as inline SVG, with no script and no external reference, so a page that holds them
// is one self-contained file. Two kinds: a line chart (GB/s against M, with reference lines such
// as the read ceiling) and a spread chart (each row one sample series as box and dots).
#include <string>
#include <vector>

namespace moe::report {

struct PlotPoint {
  double x = 0, y = 0;
  std::string tooltip;  // shown on hover (an SVG <title>)
};

struct PlotSeries {
  std::string label;
  std::vector<PlotPoint> points;  // drawn in the order given
  std::string color;
  bool dashed = false;
};

struct ReferenceLine {
  std::string label;  // printed above the line's right end
  double y = 0;
  std::string color;
  bool dashed = true;
};

struct LineChart {
  std::string title;
  std::string x_label, y_label;
  bool log2_x = true;  // M grows in powers of two
  std::vector<PlotSeries> series;
  std::vector<ReferenceLine> references;
  int width = 620, height = 340;
};

std::string render_line_chart(const LineChart& chart);

struct Bar {
  std::string label;    // under the bar (every few bars when there are many)
  double value = 0;
  std::string tooltip;  // shown on hover
};

struct BarChart {
  std::string title;
  std::string x_label, y_label;
  std::vector<Bar> bars;  // drawn left to right in the order given
  std::string color = "#0072B2";
  int width = 960, height = 260;
};

// Vertical bars from zero (a routing histogram: one bar an expert). Labels under the bars are
// thinned to at most about 32, so 256 experts stay legible.
std::string render_bar_chart(const BarChart& chart);

struct SpreadRow {
  std::string label;           // left of the row
  std::string note;            // right of the row (e.g. the median)
  std::vector<double> values;  // in the chart's x unit
  std::string color;
  bool starts_group = false;   // a faint separator above the row
};

struct SpreadChart {
  std::string title;
  std::string x_label;
  std::vector<SpreadRow> rows;
  double reference_x = 0;  // a vertical rule (0 = the median), when draw_reference
  bool draw_reference = true;
  int width = 960;
};

// Each row: whiskers from p10 to p90, a box from p25 to p75, the median as a bar and every
// sample as a dot. The x range covers the 1st to 99th percentile of all samples; samples
// beyond it are drawn as markers on the edge, so one outlier cannot flatten every row.
std::string render_spread_chart(const SpreadChart& chart);

struct BarSegment {
  std::string label;  // in the legend and the segment's tooltip
  double value = 0;
  std::string color;
};

struct StackedBar {
  std::string label;  // left of the bar
  std::string note;   // right of the bar
  std::vector<BarSegment> segments;  // drawn left to right
  double marker = -1;  // a vertical tick at this x (e.g. the floor); < 0: none
};

struct StackedBarChart {
  std::string title;
  std::string x_label;
  std::string marker_label;  // what the tick means, for the legend
  std::vector<StackedBar> bars;
  int width = 960;
};

// One horizontal bar a row, its segments stacked from 0, on one x axis for every row, with the
// legend of the first row's segments at the top (and the axis at top and bottom, so a long
// chart can be read without scrolling back).
std::string render_stacked_bars(const StackedBarChart& chart);

// A palette that stays distinguishable for colour-blind readers (Okabe-Ito order).
const std::string& series_color(std::size_t index);

// Round tick positions covering [lo, hi]: steps of 1, 2 or 5 times a power of ten.
std::vector<double> nice_ticks(double lo, double hi, int target_count);

}  // namespace moe::report
