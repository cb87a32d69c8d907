#pragma once
// Plots drawn as inline SVG, with no script and no external reference, so a page that holds them
// is one self-contained file: a line chart (GB/s or time against M, with reference lines such as
// the read ceiling), a bar chart, a spread chart (each row one sample series as box and dots) and
// horizontal stacked bars.
//
// Every <svg> carries class "plot", data-kind and data-expect-series (the series its data holds),
// each drawn series is a <g class="series"> and each axis a <g class="axis ...">, so a check in a
// browser (scripts/check-page.sh) can confirm that what the data holds was drawn, inside the plot.
#include <string>
#include <vector>

namespace moe::report {

struct PlotPoint {
  double x = 0, y = 0;
  std::string tooltip;  // shown on hover (an SVG <title>)
};

enum class LineStyle { solid, dashed, dotted };

struct PlotSeries {
  std::string label;
  std::vector<PlotPoint> points;  // drawn in the order given
  std::string color;
  LineStyle style = LineStyle::solid;
  bool markers = true;  // a circle at each point (off for a reference curve such as a floor)
  bool hollow = false;  // markers filled white
  double opacity = 1;   // below 1: a faded series (a base report beside the head)
};

// One line of a line chart's key: a swatch drawn as the series it stands for, and its label.
struct LegendEntry {
  std::string label;
  std::string color;
  LineStyle style = LineStyle::solid;
  bool marker = true;
  bool hollow = false;
  double opacity = 1;
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
  std::vector<LegendEntry> legend;  // empty: one entry a series
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
  std::string series;          // what the row belongs to (its format): rows of one series
                               // count once in data-expect-series
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
// beyond it are drawn as markers on the edge, so one outlier cannot flatten every row. The axis
// is drawn at the top and the bottom; row labels get the margin their text needs (up to about
// 45% of the width) and wrap onto more lines beyond it, never cut.
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
  std::string label_color;  // a swatch between the label and the bar (e.g. the format); "": none
};

struct StackedBarChart {
  std::string title;
  std::string x_label;
  std::string marker_label;  // what the tick means, for the legend
  std::vector<StackedBar> bars;
  std::vector<BarSegment> legend;  // empty: the first bar's segments
  int width = 960;
};

// One horizontal bar a row, its segments stacked from 0, on one x axis for every row, with the
// legend at the top (and the axis at top and bottom, so a long chart can be read without
// scrolling back). Labels get their margin and wrap as in the spread chart.
std::string render_stacked_bars(const StackedBarChart& chart);

// A palette that stays distinguishable for colour-blind readers (Okabe-Ito order).
const std::string& series_color(std::size_t index);

// The width in pixels that `text` takes at the plots' 12 px sans-serif font (an upper estimate:
// margins sized from it hold the text whole).
double text_width(const std::string& text);

// `text` broken at spaces (or, for a word too long, anywhere) into lines of at most
// `max_width` pixels by text_width.
std::vector<std::string> wrap_text(const std::string& text, double max_width);

// Round tick positions covering [lo, hi]: steps of 1, 2 or 5 times a power of ten.
std::vector<double> nice_ticks(double lo, double hi, int target_count);

}  // namespace moe::report
